// SDDMM, C<M> accum= op(A) ⊕.⊗ op(B) with A and B dense and the mask M sparse (the SDDMM overload of
// engine/mxm.hpp), against a brute-force host reference. Every term of a dense product exists, so T(i,j) exists
// wherever the mask allows it and K > 0; ref::write_back then applies the GraphBLAS accumulate/replace rule.
// plus_times on float and double is compared with a reference summed in double (tolerance below); every other
// semiring, and integers, exactly. The GPU kernel is rewritten separately: these cases aim at its edges (inner
// dimensions around a warp, skewed rows, empty rows and shapes, valued masks, terminal values).
#include <cmath>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>
#include <type_traits>

#include "reference.hpp"
#include "scoped_env.hpp"

using namespace hybla;
using ref::Dense;
using ref::Index;

namespace {

template <class T>
DenseMatrix<T> on_default(const DenseMatrix<T>& d) {
    return d.to(default_context());
}

std::string describe(const Descriptor& d) {
    std::ostringstream os;
    os << "tA=" << d.transpose_a << " tB=" << d.transpose_b << " comp=" << d.mask_complement
       << " struct=" << d.mask_structure << " replace=" << d.replace;
    return os.str();
}

// Operand values: reals in [-1, 1) that are not short binary fractions (float sums really round); integers up to
// 2^26 in magnitude (products beyond 32 bits, sums of 512 of them beyond double's 53 bits, none beyond int64);
// booleans mostly false (so that lor_land gives both answers).
template <class T>
T value(ref::Gen& g) {
    if constexpr (std::is_same_v<T, bool>) return g.real() < 0.15;
    else if constexpr (std::is_integral_v<T>) return T(std::int64_t(g.uniform(0, Index(1) << 27)) - (std::int64_t(1) << 26));
    else return T(g.real() * 2 - 1);
}
template <class T>
DenseMatrix<T> operand(ref::Gen& g, Index m, Index n) {
    DenseMatrix<T> d(m, n, T{}, Context::cpu());
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) d(i, j) = value<T>(g);
    return d;
}
// A starting C: random entries, inside and outside the mask alike.
template <class T>
Dense<T> start(ref::Gen& g, Index m, Index n, double density = 0.4) {
    Dense<T> c(m, n);
    for (Index x = 0; x < m * n; ++x)
        if (g.real() < density) c.a[x] = value<T>(g);
    return c;
}

// Mask values: a quarter explicit zeros for numbers, 30% false for bool; only the valued mask looks at them.
template <class M>
M mask_value(ref::Gen& g) {
    if constexpr (std::is_same_v<M, bool>) return g.real() < 0.7;
    else return M(int(g.uniform(0, 3)) - 1);
}
template <class M>
Dense<M> uniform_mask(ref::Gen& g, Index m, Index n, double density) {
    Dense<M> d(m, n);
    for (Index x = 0; x < m * n; ++x)
        if (g.real() < density) d.a[x] = mask_value<M>(g);
    return d;
}
// Skewed rows (m >= 16): rows 0-2, m/2 and the last two empty; row 3 full, row m/2+1 two thirds full, row m-3 with
// 300 entries; of the other rows most have 0 or 1 entry and one in eight has 2 to 8.
template <class M>
Dense<M> skewed_mask(ref::Gen& g, Index m, Index n) {
    Dense<M> d(m, n);
    std::vector<Index> cols(n);
    for (Index j = 0; j < n; ++j) cols[j] = j;
    for (Index i = 0; i < m; ++i) {
        Index len = g.uniform(0, 7) == 0 ? g.uniform(2, 8) : g.uniform(0, 1);
        if (i < 3 || i == m / 2 || i + 2 >= m) len = 0;
        else if (i == 3) len = n;
        else if (i == m / 2 + 1) len = 2 * n / 3;
        else if (i == m - 3) len = 300;
        len = std::min(len, n);
        if (len > 1) std::shuffle(cols.begin(), cols.end(), g.rng);
        else if (len == 1) std::swap(cols[0], cols[g.uniform(0, n - 1)]);
        for (Index p = 0; p < len; ++p) d(i, cols[p]) = mask_value<M>(g);
    }
    return d;
}

// plus_times on floating point is compared within a tolerance, everything else exactly.
template <class Sr, class T>
constexpr bool approximate = std::is_floating_point_v<T> && std::is_same_v<Sr, plus_times>;

// Relative to Σ|terms| (plus |C| when accumulating): the rounding of k terms summed in T in any order stays below
// k·u·Σ|terms|, which these bounds cover (float: u = 6e-8, double: u = 1.1e-16), growing with k beyond 64 terms.
template <class T>
double tolerance(Index k) {
    return (std::is_same_v<T, float> ? 1e-5 : 1e-12) * std::max(1.0, double(k) / 64);
}

// The first entry where got and want differ (presence, or value beyond rel * max(1, scale)), or "".
template <bool Approx, class T, class R>
std::string first_difference(const Dense<T>& got, const Dense<R>& want, const Dense<double>& scale, double rel) {
    std::ostringstream os;
    if (got.nrows != want.nrows || got.ncols != want.ncols) {
        os << "shape " << got.nrows << "x" << got.ncols << " vs expected " << want.nrows << "x" << want.ncols;
        return os.str();
    }
    for (Index x = 0; x < got.a.size(); ++x) {
        const auto &g = got.a[x], &w = want.a[x];
        bool ok = g.has_value() == w.has_value();
        if (ok && g) {
            if constexpr (Approx) ok = std::abs(double(*g) - double(*w)) <= rel * std::max(1.0, *scale.a[x]);
            else ok = *g == *w;
        }
        if (!ok) {
            os << std::setprecision(17) << "at (" << x / got.ncols << ", " << x % got.ncols << "): got ";
            if (g) os << +*g; else os << "none";
            os << ", expected ";
            if (w) os << +*w; else os << "none";
            return os.str();
        }
    }
    return {};
}

// One call: C<M> accum= op(A) ⊕.⊗ op(B) with op(A) = a0 (m x k) and op(B) = b0 (k x n) given on the host and
// passed transposed as d says; C starts as c0 (a fresh Matrix(m, n) when c0 has no entries).
template <class Sr, class T, class M, class Accum = NoAccum>
void check(const Dense<M>& m0, const DenseMatrix<T>& a0, const DenseMatrix<T>& b0, const Dense<T>& c0,
           const Descriptor& d, Accum accum = {}) {
    constexpr bool approx = approximate<Sr, T>;
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    using R = std::conditional_t<approx, double, T>;  // the reference's type
    const Index m = a0.nrows(), k = a0.ncols(), n = b0.ncols();
    // The product wherever the mask has an entry (write_back drops those it does not allow); for approximate
    // results also Σ|terms|, the scale of the rounding.
    Dense<R> t(m, n), cr(m, n);
    Dense<double> tmag(m, n), cmag(m, n);
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) {
            if (!m0(i, j) || k == 0) continue;
            if constexpr (approx) {
                double s = 0, mag = 0;
                for (Index x = 0; x < k; ++x) {
                    const double p = double(a0(i, x)) * double(b0(x, j));
                    s += p;
                    mag += std::abs(p);
                }
                t(i, j) = s;
                tmag(i, j) = mag;
            } else {
                T acc = Sr::template multiply<T>(a0(i, 0), b0(0, j));
                for (Index x = 1; x < k; ++x) acc = Sr::template add<T>(acc, Sr::template multiply<T>(a0(i, x), b0(x, j)));
                t(i, j) = acc;
                tmag(i, j) = 0;
            }
        }
    for (Index x = 0; x < m * n; ++x)
        if (c0.a[x]) {
            cr.a[x] = R(*c0.a[x]);
            cmag.a[x] = std::abs(double(*c0.a[x]));
        }
    const Dense<R> want = ref::write_back(cr, t, &m0, accum, d);
    Dense<double> scale;
    if constexpr (has_accum) scale = ref::write_back(cmag, tmag, &m0, plus_op{}, d);
    else scale = ref::write_back(cmag, tmag, &m0, no_accum, d);

    const DenseMatrix<T> a = on_default(d.transpose_a ? ref::dense_transpose(a0) : a0);
    const DenseMatrix<T> b = on_default(d.transpose_b ? ref::dense_transpose(b0) : b0);
    const Matrix<M> mask = ref::to_matrix(m0);
    Matrix<T> c = c0.nvals() ? ref::to_matrix(c0) : Matrix<T>(m, n);
    INFO(m << "x" << k << "x" << n << ", mask of " << m0.nvals() << " entries, C of " << c0.nvals()
           << " entries, accum=" << has_accum << ", " << describe(d));
    mxm(c, mask, accum, Sr{}, a, b, d);
    const std::string diff = first_difference<approx>(ref::to_dense(c), want, scale, tolerance<T>(k));
    INFO(diff);
    REQUIRE(diff.empty());
}

// Every mask and output variant of one product: structural or valued mask, replace or not, C with entries (c0) or
// fresh, no accumulator or `acc`.
template <class Sr, class T, class M, class Acc>
void check_variants(const Dense<M>& m0, const DenseMatrix<T>& a0, const DenseMatrix<T>& b0, const Dense<T>& c0,
                    bool ta, bool tb, Acc acc) {
    for (int bits = 0; bits < 8; ++bits) {
        const Descriptor d{.transpose_a = ta, .transpose_b = tb, .mask_structure = bool(bits & 1), .replace = bool(bits & 2)};
        const Dense<T> c = (bits & 4) ? Dense<T>(c0.nrows, c0.ncols) : c0;
        check<Sr>(m0, a0, b0, c, d);
        check<Sr>(m0, a0, b0, c, d, acc);
    }
}

constexpr Index inner_dims[] = {1, 3, 4, 8, 16, 32, 47, 64, 128, 256, 512};

// The GPU's two kernels (engine/cuda/sddmm): the one its rule picks for the pattern (rows of 32 or 64 entries on
// average, by K, take the rows kernel up to 32 vectors a row), then the rows kernel on every pattern
// (HYBLA_SDDMM_ROWS=1), with the rows found in the offsets as past 2^32 rows (=search) and from the row array. The
// CPU runs once.
std::vector<const char*> kernels() {
    if (!default_context().is_cuda()) return {nullptr};
    return {nullptr, "1", "search"};
}

// C<M> = X·Yᵀ (Y stored n x K, transpose_b) for one K: a uniform bool mask with every variant, and a skewed
// 601 x 1031 mask, structural into a fresh C and valued with plus into a C with entries.
template <class T>
void check_inner_dim(ref::Gen& g, Index k) {
    {
        const Dense<bool> m0 = uniform_mask<bool>(g, 37, 41, 0.3);
        check_variants<plus_times>(m0, operand<T>(g, 37, k), operand<T>(g, k, 41), start<T>(g, 37, 41), false, true,
                                   plus_op{});
    }
    const Index m = 601, n = 1031;
    const Dense<std::int32_t> m0 = skewed_mask<std::int32_t>(g, m, n);
    const DenseMatrix<T> a0 = operand<T>(g, m, k), b0 = operand<T>(g, k, n);
    check<plus_times>(m0, a0, b0, Dense<T>(m, n), Descriptor{.transpose_b = true, .mask_structure = true});
    check<plus_times>(m0, a0, b0, start<T>(g, m, n, 0.01), Descriptor{.transpose_b = true}, plus_op{});
}

}  // namespace

TEST_CASE("SDDMM: a small product by hand, with and without accumulator and replace", "[mxm][sddmm]") {
    // X Yᵀ = [[1 2 3] [3 4 7]]; the mask holds (0,0), (0,2), (1,1); C holds 10 at (0,0), 20 at (0,1), 30 at (1,2).
    DenseMatrix<double> x(2, 2, 0.0, Context::cpu()), y(3, 2, 0.0, Context::cpu());
    x(0, 0) = 1, x(0, 1) = 2, x(1, 0) = 3, x(1, 1) = 4;
    y(0, 0) = 1, y(1, 1) = 1, y(2, 0) = 1, y(2, 1) = 1;
    Dense<bool> m0(2, 3);
    m0(0, 0) = m0(0, 2) = m0(1, 1) = true;
    const Matrix<bool> mask = ref::to_matrix(m0);
    auto run = [&](bool accumulate, bool replace) {
        auto c = Matrix<double>::from_tuples(2, 3, std::vector<Index>{0, 0, 1}, std::vector<Index>{0, 1, 2},
                                             std::vector<double>{10, 20, 30});
        const Descriptor d{.transpose_b = true, .replace = replace};
        if (accumulate) mxm(c, mask, plus_op{}, plus_times{}, on_default(x), on_default(y), d);
        else mxm(c, mask, no_accum, plus_times{}, on_default(x), on_default(y), d);
        std::vector<Index> r, cc;
        std::vector<double> v;
        c.extract_tuples(r, cc, v);
        std::vector<std::tuple<Index, Index, double>> out;
        for (std::size_t p = 0; p < r.size(); ++p) out.emplace_back(r[p], cc[p], v[p]);
        std::sort(out.begin(), out.end());
        return out;
    };
    using E = std::vector<std::tuple<Index, Index, double>>;
    CHECK(run(false, false) == E{{0, 0, 1}, {0, 1, 20}, {0, 2, 3}, {1, 1, 4}, {1, 2, 30}});
    CHECK(run(false, true) == E{{0, 0, 1}, {0, 2, 3}, {1, 1, 4}});
    CHECK(run(true, false) == E{{0, 0, 11}, {0, 1, 20}, {0, 2, 3}, {1, 1, 4}, {1, 2, 30}});
    CHECK(run(true, true) == E{{0, 0, 11}, {0, 2, 3}, {1, 1, 4}});
}

TEST_CASE("SDDMM: X Y^T for every inner dimension from 1 to 512, float and double", "[mxm][sddmm]") {
    ref::Gen g(101);
    for (Index k : inner_dims)
        for (const char* rows : kernels()) {
            if (!ref::in_shard()) continue;
            const hybla_test::EnvGuard env("HYBLA_SDDMM_ROWS", rows);
            INFO("HYBLA_SDDMM_ROWS=" << (rows ? rows : "unset"));
            {
                INFO("K = " << k << ", float");
                check_inner_dim<float>(g, k);
            }
            INFO("K = " << k << ", double");
            check_inner_dim<double>(g, k);
        }
}

TEST_CASE("SDDMM: every combination of transposes of the dense operands", "[mxm][sddmm]") {
    ref::Gen g(102);
    for (Index k : {Index(1), Index(47), Index(256)})
        for (int ta = 0; ta < 2; ++ta)
            for (int tb = 0; tb < 2; ++tb) {
                if (!ref::in_shard()) continue;
                INFO("K = " << k << ", tA=" << ta << " tB=" << tb);
                const Dense<double> md = uniform_mask<double>(g, 37, 41, 0.25);
                check_variants<plus_times>(md, operand<double>(g, 37, k), operand<double>(g, k, 41),
                                           start<double>(g, 37, 41), ta, tb, plus_op{});
                const Dense<bool> mf = skewed_mask<bool>(g, 301, 333);
                check<plus_times>(mf, operand<float>(g, 301, k), operand<float>(g, k, 333), start<float>(g, 301, 333, 0.05),
                                  Descriptor{.transpose_a = bool(ta), .transpose_b = bool(tb)}, plus_op{});
            }
}

// C<M> = A·B with B not transposed: the kernel reads rows of Bᵀ, made once and cached with B (on either
// backend); a change of B (assignment, fill, a write through storage()) drops it and the next product reads the
// new values. Also C += A·Cᵀ for the SpMM, whose write of C drops the transpose it is reading.
TEST_CASE("Dense operands: the transpose a product needs is made once, cached, and dropped on change", "[mxm][sddmm]") {
    ref::Gen g(110);
    const Index m = 61, k = 40, n = 67;
    const Dense<bool> md = uniform_mask<bool>(g, m, n, 0.3);
    const Matrix<bool> mask = ref::to_matrix(md);
    const DenseMatrix<double> a0 = operand<double>(g, m, k), b0 = operand<double>(g, k, n), b1 = operand<double>(g, k, n);
    DenseMatrix<double> b2(k, n, 0.5, Context::cpu());
    const DenseMatrix<double> a = on_default(a0);
    DenseMatrix<double> b = on_default(b0);
    auto check_product = [&](const DenseMatrix<double>& bh) {
        Matrix<double> c(m, n);
        mxm(c, mask, no_accum, plus_times{}, a, b, Descriptor{.mask_structure = true});
        const Dense<double> got = ref::to_dense(c);
        REQUIRE(got.nvals() == md.nvals());
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j) {
                if (!md(i, j)) continue;
                double s = 0;
                for (Index x = 0; x < k; ++x) s += a0(i, x) * bh(x, j);
                INFO("(" << i << ", " << j << ")");
                REQUIRE(got(i, j).has_value());
                REQUIRE(std::abs(*got(i, j) - s) <= 1e-12 * (1 + std::abs(s)));
            }
    };
    CHECK_FALSE(b.has_cached_transpose());
    check_product(b0);
    REQUIRE(b.has_cached_transpose());
    CHECK_FALSE(a.has_cached_transpose());
    const DenseMatrix<double>* made = &b.transposed();
    check_product(b0);
    CHECK(&b.transposed() == made);  // made once
    CHECK(b.transposed().nrows() == n);
    b = on_default(b1);
    CHECK_FALSE(b.has_cached_transpose());
    check_product(b1);
    b.fill(0.5);
    CHECK_FALSE(b.has_cached_transpose());
    check_product(b2);
    check_product(b2);
    (void)b.storage();  // a write through storage() may follow
    CHECK_FALSE(b.has_cached_transpose());
    const DenseMatrix<double> copy = b;  // copies share the cache until either changes
    check_product(b2);
    CHECK(copy.has_cached_transpose());
    b.fill(0.5);
    CHECK(copy.has_cached_transpose());
    CHECK_FALSE(b.has_cached_transpose());
    DenseMatrix<double> moved = std::move(b);  // without a copy (std::vector moves it when it grows)
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<DenseMatrix<double>>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<DenseMatrix<double>>);
    CHECK(b.nrows() == 0);
    CHECK(b.ncols() == 0);
    CHECK_FALSE(b.has_cached_transpose());
    CHECK(b.transposed().nrows() == 0);
    b = std::move(moved);  // a moved-from matrix takes a new value
    CHECK(b.nrows() == k);
    CHECK_FALSE(b.has_cached_transpose());
    check_product(b2);
    CHECK(b.has_cached_transpose());

    // SpMM C += A·Cᵀ (C square): Cᵀ is C's cached transpose, and the product writes C.
    const Index s = 45;
    const Matrix<double> e = ref::to_matrix(uniform_mask<double>(g, s, s, 0.2));
    const DenseMatrix<double> c0 = operand<double>(g, s, s);
    DenseMatrix<double> c = on_default(c0);
    mxm(c, no_mask, plus_op{}, plus_times{}, e, c, Descriptor{.transpose_b = true});
    CHECK_FALSE(c.has_cached_transpose());  // writing C dropped the transpose it read
    const DenseMatrix<double> got = c.to(Context::cpu());
    const Dense<double> ed = ref::to_dense(e);
    for (Index i = 0; i < s; ++i)
        for (Index j = 0; j < s; ++j) {
            double want = c0(i, j);
            for (Index x = 0; x < s; ++x)
                if (ed(i, x)) want += *ed(i, x) * c0(j, x);
            INFO("C(" << i << ", " << j << ")");
            REQUIRE(std::abs(got(i, j) - want) <= 1e-12 * (1 + std::abs(want)));
        }
}

TEST_CASE("SDDMM: mask shapes and patterns (skewed, one row, one column, 1x1, empty, zero-sized)", "[mxm][sddmm]") {
    ref::Gen g(103);
    // {m, n, kind}: 0 uniform 30%, 1 skewed, 2 full, 3 no entries.
    struct Case { Index m, n; int kind; };
    for (const Case& s : {Case{1001, 1031, 1}, Case{1, 1001, 0}, Case{1, 1001, 2}, Case{1001, 1, 0}, Case{1, 1, 2},
                          Case{0, 37, 0}, Case{37, 0, 0}, Case{0, 0, 0}, Case{37, 41, 3}, Case{37, 41, 2}})
        for (Index k : {Index(0), Index(1), Index(16), Index(47)})
        for (const char* rows : kernels()) {  // (patterns of 1 to 30 entries through the rows kernel too)
            if (!ref::in_shard()) continue;
            const hybla_test::EnvGuard env("HYBLA_SDDMM_ROWS", rows);
            INFO(s.m << "x" << s.n << " mask of kind " << s.kind << ", K = " << k
                     << ", HYBLA_SDDMM_ROWS=" << (rows ? rows : "unset"));
            auto make = [&]<class M>(M) {
                if (s.kind == 1) return skewed_mask<M>(g, s.m, s.n);
                Dense<M> d = uniform_mask<M>(g, s.m, s.n, s.kind == 0 ? 0.3 : s.kind == 2 ? 1.0 : 0.0);
                return d;
            };
            const bool big = s.m * s.n > 10000;  // every variant of the small ones, a few of the large ones
            const Dense<bool> mb = make(bool{});
            const Dense<std::int64_t> mi = make(std::int64_t{});
            const DenseMatrix<double> ad = operand<double>(g, s.m, k), bd = operand<double>(g, k, s.n);
            const DenseMatrix<std::int64_t> ai = operand<std::int64_t>(g, s.m, k), bi = operand<std::int64_t>(g, k, s.n);
            if (!big) {
                check_variants<plus_times>(mb, ad, bd, start<double>(g, s.m, s.n), false, true, plus_op{});
                check_variants<plus_times>(mi, ai, bi, start<std::int64_t>(g, s.m, s.n), false, true, plus_op{});
            } else {
                for (int st = 0; st < 2; ++st) {
                    const Descriptor d{.transpose_b = true, .mask_structure = bool(st), .replace = bool(st)};
                    check<plus_times>(mb, ad, bd, Dense<double>(s.m, s.n), d);
                    check<plus_times>(mi, ai, bi, start<std::int64_t>(g, s.m, s.n, 0.02), d, plus_op{});
                }
            }
        }
}

TEST_CASE("SDDMM: a valued mask computes only its true entries and a complemented mask is refused", "[mxm][sddmm]") {
    ref::Gen g(104);
    const Index m = 37, n = 41, k = 16;
    const DenseMatrix<double> a0 = operand<double>(g, m, k), b0 = operand<double>(g, k, n);
    const Dense<std::int32_t> mi = uniform_mask<std::int32_t>(g, m, n, 0.4);  // a quarter explicit zeros
    const Dense<bool> mb = uniform_mask<bool>(g, m, n, 0.4);                  // 30% explicit false
    // Into a fresh C without accumulator, C's pattern is exactly the mask's true entries (valued) or all its entries
    // (structural): counted here independently of ref::write_back.
    Index true_entries = 0;
    for (const auto& e : mi.a) true_entries += e && *e != 0;
    REQUIRE(true_entries < mi.nvals());
    for (int st = 0; st < 2; ++st) {
        Matrix<double> c(m, n);
        mxm(c, ref::to_matrix(mi), no_accum, plus_times{}, on_default(a0), on_default(ref::dense_transpose(b0)),
            Descriptor{.transpose_b = true, .mask_structure = bool(st)});
        REQUIRE(c.nvals() == (st ? mi.nvals() : true_entries));
    }
    check_variants<plus_times>(mi, a0, b0, start<double>(g, m, n), false, true, plus_op{});
    check_variants<plus_times>(mb, a0, b0, start<double>(g, m, n), false, true, plus_op{});

    // Complemented: the result would be dense; InvalidValue, C untouched, whatever the other flags.
    const Dense<double> c0 = start<double>(g, m, n);
    for (int bits = 0; bits < 8; ++bits) {
        const Descriptor d{.transpose_b = true, .mask_complement = true, .mask_structure = bool(bits & 1),
                           .replace = bool(bits & 2)};
        INFO(describe(d) << " accum=" << (bits >> 2));
        Matrix<double> c = ref::to_matrix(c0);
        const auto a = on_default(a0), b = on_default(ref::dense_transpose(b0));
        if (bits & 4) REQUIRE_THROWS_AS(mxm(c, ref::to_matrix(mb), plus_op{}, plus_times{}, a, b, d), InvalidValue);
        else REQUIRE_THROWS_AS(mxm(c, ref::to_matrix(mb), no_accum, plus_times{}, a, b, d), InvalidValue);
        REF_REQUIRE_SAME(ref::to_dense(c), c0);
    }
}

TEST_CASE("SDDMM: semirings with terminal values (min_plus, max_plus, lor_land) and plus_times on int64",
          "[mxm][sddmm]") {
    ref::Gen g(105);
    // Infinities in A reach the terminal value of min (-inf) or max (+inf): a tenth of A's entries and all of
    // row 1 (terminal at the first term); B stays finite, so no inf - inf.
    auto with_inf = [&](auto a, auto inf) {
        for (Index i = 0; i < a.nrows(); ++i)
            for (Index x = 0; x < a.ncols(); ++x)
                if (i == 1 || g.real() < 0.1) a(i, x) = inf;
        return a;
    };
    for (Index k : {Index(1), Index(3), Index(32), Index(47), Index(128), Index(512)})
    for (const char* rows : kernels()) {
        if (!ref::in_shard()) continue;
        const hybla_test::EnvGuard env("HYBLA_SDDMM_ROWS", rows);
        INFO("K = " << k << ", HYBLA_SDDMM_ROWS=" << (rows ? rows : "unset"));
        for (int skew = 0; skew < 2; ++skew) {
            const Index m = skew ? 301 : 37, n = skew ? 333 : 41;
            INFO((skew ? "skewed" : "uniform") << " mask");
            const Dense<bool> m0 = skew ? skewed_mask<bool>(g, m, n) : uniform_mask<bool>(g, m, n, 0.3);
            {
                INFO("min_plus double");
                const auto a0 = with_inf(operand<double>(g, m, k), -std::numeric_limits<double>::infinity());
                check_variants<min_plus>(m0, a0, operand<double>(g, k, n), start<double>(g, m, n), false, true, min_op{});
            }
            {
                INFO("max_plus float");
                const auto a0 = with_inf(operand<float>(g, m, k), std::numeric_limits<float>::infinity());
                check_variants<max_plus>(m0, a0, operand<float>(g, k, n), start<float>(g, m, n), false, true, plus_op{});
            }
            {
                INFO("lor_land bool");  // true is terminal
                check_variants<lor_land>(m0, operand<bool>(g, m, k), operand<bool>(g, k, n), start<bool>(g, m, n), false,
                                         true, lor_op{});
            }
            {
                INFO("plus_times int64");  // exact: sums beyond 2^53
                check_variants<plus_times>(m0, operand<std::int64_t>(g, m, k), operand<std::int64_t>(g, k, n),
                                           start<std::int64_t>(g, m, n), false, true, plus_op{});
            }
        }
    }
}

TEST_CASE("SDDMM with any_first and any_second keeps one of the terms", "[mxm][sddmm][any]") {
    // Operand values name their term: op(A)(i,x) = 1000 x + i, op(B)(x,j) = 1000 x + j (exact in float too). The
    // result at (i,j) must be one of op(A)(i,x) (any_first) or op(B)(x,j) (any_second) over x < K.
    ref::Gen g(106);
    for (Index k : {Index(1), Index(5), Index(33), Index(64)})
        for (int skew = 0; skew < 4; ++skew) {
            if (!ref::in_shard()) continue;
            const Index m = skew % 2 ? 301 : 37, n = skew % 2 ? 333 : 41;
            const hybla_test::EnvGuard env("HYBLA_SDDMM_ROWS", skew < 2 ? nullptr : "1");
            INFO("K = " << k << ", " << m << "x" << n << (skew < 2 ? "" : ", HYBLA_SDDMM_ROWS=1"));
            const Dense<bool> m0 = skew % 2 ? skewed_mask<bool>(g, m, n) : uniform_mask<bool>(g, m, n, 0.3);
            DenseMatrix<float> a0(m, k, 0, Context::cpu()), b0(k, n, 0, Context::cpu());
            for (Index i = 0; i < m; ++i)
                for (Index x = 0; x < k; ++x) a0(i, x) = float(1000 * x + i);
            for (Index x = 0; x < k; ++x)
                for (Index j = 0; j < n; ++j) b0(x, j) = float(1000 * x + j);
            const DenseMatrix<float> a = on_default(a0), b = on_default(ref::dense_transpose(b0));
            for (int second = 0; second < 2; ++second) {
                INFO((second ? "any_second" : "any_first"));
                Matrix<float> c(m, n);
                if (second) mxm(c, ref::to_matrix(m0), no_accum, any_second{}, a, b, Descriptor{.transpose_b = true});
                else mxm(c, ref::to_matrix(m0), no_accum, any_first{}, a, b, Descriptor{.transpose_b = true});
                const Dense<float> got = ref::to_dense(c);
                for (Index i = 0; i < m; ++i)
                    for (Index j = 0; j < n; ++j) {
                        INFO("at (" << i << ", " << j << ")");
                        REQUIRE(got(i, j).has_value() == (m0(i, j) && *m0(i, j)));
                        if (!got(i, j)) continue;
                        std::set<float> terms;
                        for (Index x = 0; x < k; ++x) terms.insert(second ? b0(x, j) : a0(i, x));
                        INFO("got " << *got(i, j));
                        REQUIRE(terms.count(*got(i, j)) == 1);
                    }
            }
        }
}

TEST_CASE("SDDMM into C used as its own mask", "[mxm][sddmm]") {
    // C<C> = X·Yᵀ and C<C> times= X·Yᵀ (edge scores and edge-weighted scores of a graph): the mask is read while
    // C is written.
    ref::Gen g(107);
    for (int skew = 0; skew < 2; ++skew) {
        const Index m = skew ? 301 : 37, n = skew ? 301 : 37, k = 16;
        const Dense<double> c0 = skew ? skewed_mask<double>(g, m, n) : start<double>(g, m, n, 0.3);
        const DenseMatrix<double> a0 = operand<double>(g, m, k), b0 = operand<double>(g, k, n);
        Dense<double> t(m, n);
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j) {
                double s = 0;
                for (Index x = 0; x < k; ++x) s += a0(i, x) * b0(x, j);
                t(i, j) = s;
            }
        for (int st = 0; st < 2; ++st)
            for (int acc = 0; acc < 2; ++acc) {
                const Descriptor d{.transpose_b = true, .mask_structure = bool(st)};
                INFO((skew ? "skewed" : "uniform") << ", " << describe(d) << ", accum times=" << acc);
                Matrix<double> c = ref::to_matrix(c0);
                const auto a = on_default(a0), b = on_default(ref::dense_transpose(b0));
                if (acc) mxm(c, c, times_op{}, plus_times{}, a, b, d);
                else mxm(c, c, no_accum, plus_times{}, a, b, d);
                const Dense<double> want = acc ? ref::write_back(c0, t, &c0, times_op{}, d)
                                               : ref::write_back(c0, t, &c0, no_accum, d);
                REF_REQUIRE_SAME(ref::to_dense(c), want, 1e-12 * k);
            }
    }
}

TEST_CASE("SDDMM argument errors: dimensions and complemented masks", "[mxm][sddmm][errors]") {
    using Catch::Matchers::Contains;
    DenseMatrix<double> x34(3, 4), y64(6, 4), y63(6, 3), y46(4, 6);
    const Matrix<double> m36 = Matrix<double>::from_tuples(3, 6, std::vector<Index>{0, 2}, std::vector<Index>{1, 5},
                                                           std::vector<double>{1, 1});
    const Matrix<double> m63(6, 3), m06(0, 6), m37(3, 7);
    const Matrix<double> c0 = Matrix<double>::from_tuples(3, 6, std::vector<Index>{1}, std::vector<Index>{3},
                                                          std::vector<double>{7});
    Matrix<double> c = c0.dup(), c63(6, 3), c37(3, 7);
    const Descriptor tb{.transpose_b = true};
    // Inner dimensions: X (3x4) times (6x3)ᵀ; X times Y (6x4) without the transpose; Xᵀ (4x3) times Y (4x6).
    REQUIRE_THROWS_AS(mxm(c, m36, no_accum, plus_times{}, x34, y63, tb), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c, m36, no_accum, plus_times{}, x34, y63, tb), Contains("3x4") && Contains("3x6"));
    REQUIRE_THROWS_AS(mxm(c, m36, no_accum, plus_times{}, x34, y64), DimensionMismatch);
    REQUIRE_THROWS_AS(mxm(c, m36, plus_op{}, plus_times{}, x34, y46, Descriptor{.transpose_a = true}), DimensionMismatch);
    // C of the wrong shape: the transpose of the product, one column too many.
    REQUIRE_THROWS_AS(mxm(c63, m36, no_accum, plus_times{}, x34, y64, tb), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c37, m36, no_accum, plus_times{}, x34, y64, tb), Contains("3x7") && Contains("3x6"));
    // The mask of the wrong shape (also an empty 0x6 one).
    REQUIRE_THROWS_AS(mxm(c, m63, no_accum, plus_times{}, x34, y64, tb), DimensionMismatch);
    REQUIRE_THROWS_AS(mxm(c, m37, plus_op{}, plus_times{}, x34, y64, tb), DimensionMismatch);
    REQUIRE_THROWS_AS(mxm(c, m06, no_accum, plus_times{}, x34, y64, tb), DimensionMismatch);
    // Dimensions are checked before the complement: a complemented mask of the wrong shape is a DimensionMismatch.
    REQUIRE_THROWS_AS(mxm(c, m63, no_accum, plus_times{}, x34, y64, Descriptor{.transpose_b = true, .mask_complement = true}),
                      DimensionMismatch);
    REQUIRE_THROWS_AS(mxm(c, m36, no_accum, plus_times{}, x34, y64, Descriptor{.transpose_b = true, .mask_complement = true}),
                      InvalidValue);
    // The failed calls left C alone; the right call works.
    REF_REQUIRE_SAME(ref::to_dense(c), ref::to_dense(c0));
    REQUIRE(c63.nvals() == 0);
    REQUIRE_NOTHROW(mxm(c, m36, no_accum, plus_times{}, x34, y64, tb));
    REQUIRE(c.nvals() == 3);  // (1,3) kept, (0,1) and (2,5) computed
}

// A pattern of far fewer entries than rows: the GPU grid is sized by the entries yet copies all the offsets, and a
// group's next entry lies many rows on (found by a search, not row by row). Entries at the first and last rows,
// two in one row, and long runs of empty rows between.
TEST_CASE("SDDMM: a few entries spread over many rows", "[mxm][sddmm]") {
    const Index m = 200003, n = 7, k = 32;
    ref::Gen g(131);
    const DenseMatrix<float> x = operand<float>(g, m, k), y = operand<float>(g, n, k);
    const std::vector<Index> rows{0, 5, 5, 77777, 150000, 199999, m - 1}, cols{3, 0, 6, 2, 2, 5, 1};
    Array<bool> vals(rows.size(), true);
    const Matrix<bool> mask = Matrix<bool>::from_tuples(m, n, std::span<const Index>(rows), std::span<const Index>(cols),
                                                        vals.span(), lor_op{}, default_context());
    Matrix<float> c(m, n, default_context());
    mxm(c, mask, no_accum, plus_times{}, on_default(x), on_default(y), Descriptor{.transpose_b = true});
    const Matrix<float> h = c.to(Context::cpu());
    REQUIRE(h.nvals() == rows.size());
    for (std::size_t e = 0; e < rows.size(); ++e) {
        double want = 0, scale = 0;
        for (Index t = 0; t < k; ++t) {
            want += double(x(rows[e], t)) * double(y(cols[e], t));
            scale += std::fabs(double(x(rows[e], t)) * double(y(cols[e], t)));
        }
        const auto got = h.get(rows[e], cols[e]);
        REQUIRE(got.has_value());
        CHECK(std::fabs(double(*got) - want) <= 1e-5 * std::max(1.0, scale));
    }
}

TEST_CASE("SDDMM: rows of one entry, runs of empty rows longer than a warp, and a long row among them",
          "[mxm][sddmm]") {
    // The GPU kernel finds the rows of each step's entries in a window of 32 row ends, and searches beyond it:
    // steps of 1 to 128 entries (by K) over rows of one entry, gaps of 31 to 70 empty rows, and long rows.
    const Index m = 4099, n = 301;
    ref::Gen g(977);
    Dense<bool> m0(m, n);
    Index i = 0;
    while (i < m) {
        const Index kind = g.uniform(0, 9);
        if (kind < 6) {
            m0(i, g.uniform(0, n - 1)) = true;  // one entry
            ++i;
        } else if (kind < 8) {
            i += g.uniform(31, 70);  // empty rows
        } else {
            const Index len = g.uniform(2, 200);
            for (Index j = 0; j < len; ++j) m0(i, g.uniform(0, n - 1)) = true;
            ++i;
        }
    }
    for (const Index k : {1, 4, 8, 12, 32, 64, 128, 300}) {
        INFO("K = " << k);
        const DenseMatrix<float> af = operand<float>(g, m, k), bf = operand<float>(g, k, n);
        check<plus_times>(m0, af, bf, Dense<float>(m, n), Descriptor{.transpose_b = true, .mask_structure = true});
        const DenseMatrix<double> ad = operand<double>(g, m, k), bd = operand<double>(g, k, n);
        check<plus_times>(m0, ad, bd, Dense<double>(m, n), Descriptor{.transpose_b = true, .mask_structure = true});
        check<min_plus>(m0, ad, bd, Dense<double>(m, n), Descriptor{.transpose_b = true, .mask_structure = true});
        // Shares of many steps (a warp keeps its window and its row of A across them), by both kernels (the rows
        // kernel's shares end inside rows and cross runs of empty ones); the GPU reads the knobs.
        for (const char* share : {"64", "1000"})
            for (const char* rows : kernels()) {
                const hybla_test::EnvGuard env("HYBLA_SDDMM_SHARE", share), env_rows("HYBLA_SDDMM_ROWS", rows);
                INFO("HYBLA_SDDMM_SHARE=" << share << ", HYBLA_SDDMM_ROWS=" << (rows ? rows : "unset"));
                const Descriptor d{.transpose_b = true, .mask_structure = true};
                check<plus_times>(m0, af, bf, Dense<float>(m, n), d);
                check<plus_times>(m0, ad, bd, Dense<double>(m, n), d);
                if (rows) check<min_plus>(m0, ad, bd, Dense<double>(m, n), d);
            }
    }
}

TEST_CASE("SDDMM: bands of rows of one, two and three entries and of empty rows, at several shares",
          "[mxm][sddmm]") {
    // Bands of rows of one entry, two, three, one or two at random, and runs of empty rows: a step of the GPU's
    // shares kernel (16 entries at float K = 32, 8 at K = 64) then spans several rows, each entry's row read from
    // the mask's row array, A's row kept or reloaded as the rows change; at shares of 16, 64 and 200 entries and
    // the device's own.
    const Index m = 6007, n = 263;
    ref::Gen g(979);
    Dense<bool> m0(m, n);
    for (Index i = 0; i < m;) {
        const Index kind = g.uniform(0, 4), rows = g.uniform(20, 120);
        for (Index r = 0; r < rows && i < m; ++r, ++i) {
            const Index len = kind == 0 ? 1 : kind == 1 ? 2 : kind == 2 ? 3 : kind == 3 ? g.uniform(1, 2) : 0;
            for (Index j = 0; j < len; ++j) m0(i, g.uniform(0, n - 1)) = true;
        }
    }
    const Descriptor d{.transpose_b = true, .mask_structure = true};
    for (const Index k : {32, 64}) {
        INFO("K = " << k);
        const DenseMatrix<float> af = operand<float>(g, m, k), bf = operand<float>(g, k, n);
        const DenseMatrix<double> ad = operand<double>(g, m, k), bd = operand<double>(g, k, n);
        for (const char* share : {static_cast<const char*>(nullptr), "16", "64", "200"}) {
            const hybla_test::EnvGuard env("HYBLA_SDDMM_SHARE", share);
            INFO("HYBLA_SDDMM_SHARE=" << (share ? share : "unset"));
            check<plus_times>(m0, af, bf, Dense<float>(m, n), d);
            check<plus_times>(m0, ad, bd, Dense<double>(m, n), d);
            check<min_plus>(m0, ad, bd, start<double>(g, m, n, 0.01), Descriptor{.transpose_b = true}, min_op{});
        }
    }
}

TEST_CASE("SDDMM: long rows (the GPU's rows kernel and its shares kernel, each forced by HYBLA_SDDMM_ROWS)", "[mxm][sddmm]") {
    // Rows of 60 to 160 entries, every seventh empty, one of 1500: over 90 entries a row on average, where the
    // GPU's rule takes the kernel that walks row segments up to 32 vectors a row (it asks for up to 64 entries a
    // row); both kernels at every K and semiring; shares of 32 and 100 entries end inside rows.
    const Index m = 517, n = 2003;
    ref::Gen g(978);
    Dense<bool> m0(m, n);
    std::vector<Index> cols(n);
    for (Index j = 0; j < n; ++j) cols[j] = j;
    for (Index i = 0; i < m; ++i) {
        const Index len = i == 100 ? 1500 : i % 7 == 3 ? 0 : g.uniform(60, 160);
        std::shuffle(cols.begin(), cols.end(), g.rng);
        for (Index p = 0; p < len; ++p) m0(i, cols[p]) = true;
    }
    REQUIRE(m0.nvals() >= 80 * m);
    const Descriptor d{.transpose_b = true, .mask_structure = true};
    for (const Index k : {1, 4, 16, 32, 47, 64, 128, 256})
        for (const char* rows : {"1", "0"}) {
            if (!ref::in_shard()) continue;
            const hybla_test::EnvGuard env("HYBLA_SDDMM_ROWS", rows);
            INFO("K = " << k << ", HYBLA_SDDMM_ROWS=" << rows);
            const DenseMatrix<float> af = operand<float>(g, m, k), bf = operand<float>(g, k, n);
            const DenseMatrix<double> ad = operand<double>(g, m, k), bd = operand<double>(g, k, n);
            check<plus_times>(m0, af, bf, Dense<float>(m, n), d);
            check<plus_times>(m0, ad, bd, start<double>(g, m, n, 0.01), Descriptor{.transpose_b = true}, plus_op{});
            check<min_plus>(m0, ad, bd, Dense<double>(m, n), d);
            check<plus_times>(m0, operand<std::int64_t>(g, m, k), operand<std::int64_t>(g, k, n),
                              Dense<std::int64_t>(m, n), d);
            for (const char* share : {"32", "100"})
                for (const char* lanes : {"4", "8"}) {  // (the rows kernel's lanes an entry; its rule picks one)
                    const hybla_test::EnvGuard env_share("HYBLA_SDDMM_SHARE", share),
                        env_lanes("HYBLA_SDDMM_ROWS_LANES", lanes);
                    INFO("HYBLA_SDDMM_SHARE=" << share << ", HYBLA_SDDMM_ROWS_LANES=" << lanes);
                    check<plus_times>(m0, af, bf, Dense<float>(m, n), d);
                    check<plus_times>(m0, ad, bd, Dense<double>(m, n), d);
                }
        }
}

TEST_CASE("SDDMM: the row array kept with the mask follows the mask's changes", "[mxm][sddmm]") {
    // The GPU makes the row of each of the mask's entries at its first SDDMM and keeps it with the mask: the same
    // mask again, a copy changed after the original was used (and the original after that), a row emptied and
    // entries set must each give the product under the pattern they have then.
    ref::Gen g(981);
    const Index m = 301, n = 173, k = 32;
    Dense<bool> m0 = skewed_mask<bool>(g, m, n);
    const DenseMatrix<double> a0 = operand<double>(g, m, k), b0 = operand<double>(g, k, n);
    const auto a = on_default(a0), b = on_default(ref::dense_transpose(b0));
    const Descriptor d{.transpose_b = true, .mask_structure = true};
    const hybla_test::EnvGuard env("HYBLA_SDDMM_ROWS", "0");  // the kernel that reads the row array
    auto check_under = [&](const Matrix<bool>& mask, const Dense<bool>& pattern, const char* what) {
        INFO(what);
        Dense<double> want(m, n);
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j) {
                if (!pattern(i, j)) continue;
                double s = 0;
                for (Index x = 0; x < k; ++x) s += a0(i, x) * b0(x, j);
                want(i, j) = s;
            }
        Matrix<double> c(m, n);
        mxm(c, mask, no_accum, plus_times{}, a, b, d);
        REF_REQUIRE_SAME(ref::to_dense(c), want, 1e-12 * k);
    };
    Matrix<bool> mask = ref::to_matrix(m0);
    check_under(mask, m0, "first product");
    check_under(mask, m0, "the same mask again");
    Matrix<bool> copy = mask;
    Dense<bool> m1 = m0;
    for (Index j = 0; j < n; j += 5) {  // a row without entries (row 0) gets some
        copy.set(0, j, true);
        m1(0, j) = true;
    }
    for (Index j = 0; j < n; ++j)  // and row 3, of n entries, loses one
        if (m1(3, j)) {
            copy.remove(3, j);
            m1(3, j).reset();
            break;
        }
    check_under(copy, m1, "a copy changed after the original was used");
    check_under(mask, m0, "the original after its copy changed");
    for (Index j = 0; j < n; ++j)  // the long row in the middle emptied
        if (m0(m / 2 + 1, j)) {
            mask.remove(m / 2 + 1, j);
            m0(m / 2 + 1, j).reset();
        }
    check_under(mask, m0, "a row emptied");
    mask.set(m - 1, n - 1, true);
    m0(m - 1, n - 1) = true;
    check_under(mask, m0, "an entry set in the last row");
}
