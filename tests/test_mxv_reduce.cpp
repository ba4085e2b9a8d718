// mxv / vxm (pull over a dense view, push over a sparse frontier) and reduce (rows, columns, scalar) against
// brute-force references; push and pull agree bit for bit; dimension errors; thread-count determinism.
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include <tbb/global_control.h>

#include "reference.hpp"

using namespace hybla;
using ref::Dense;
using ref::Index;

namespace {

template <class T>
constexpr double tol() {
    return std::is_same_v<T, float> ? 1e-4 : 1e-9;
}

std::string describe(const Descriptor& d) {
    std::ostringstream os;
    os << "tA=" << d.transpose_a << " comp=" << d.mask_complement << " struct=" << d.mask_structure
       << " replace=" << d.replace;
    return os.str();
}

std::vector<Descriptor> mask_descriptors(bool ta) {
    std::vector<Descriptor> out;
    for (int bits = 0; bits < 8; ++bits) {
        Descriptor d;
        d.transpose_a = ta;
        d.mask_complement = bits & 1;
        d.mask_structure = bits & 2;
        d.replace = bits & 4;
        out.push_back(d);
    }
    return out;
}

// w(i) = ⊕_k A(i,k) ⊗ u(k) (mxv) or w(j) = ⊕_k u(k) ⊗ A(k,j) (vxm), terms in increasing k, in w's type;
// A is op(A), vectors are n x 1.
template <class Sr, class TW, class TA, class TU>
Dense<TW> ref_mxv(const Dense<TA>& a, const Dense<TU>& u) {
    Dense<TW> w(a.nrows, 1);
    for (Index i = 0; i < a.nrows; ++i) {
        std::optional<TW> acc;
        for (Index k = 0; k < a.ncols; ++k)
            if (a(i, k) && u(k, 0)) {
                TW t = Sr::template multiply<TW>(TW(*a(i, k)), TW(*u(k, 0)));
                acc = acc ? Sr::template add<TW>(*acc, t) : t;
            }
        w(i, 0) = acc;
    }
    return w;
}
template <class Sr, class TW, class TA, class TU>
Dense<TW> ref_vxm(const Dense<TU>& u, const Dense<TA>& a) {
    Dense<TW> w(a.ncols, 1);
    for (Index j = 0; j < a.ncols; ++j) {
        std::optional<TW> acc;
        for (Index k = 0; k < a.nrows; ++k)
            if (a(k, j) && u(k, 0)) {
                TW t = Sr::template multiply<TW>(TW(*u(k, 0)), TW(*a(k, j)));
                acc = acc ? Sr::template add<TW>(*acc, t) : t;
            }
        w(j, 0) = acc;
    }
    return w;
}

template <class T>
Vector<T> stored(const Dense<T>& d, bool dense) {
    Vector<T> v = ref::to_vector(d);
    if (dense) v.to_dense();
    else v.to_sparse();
    return v;
}

constexpr double densities[] = {0.0, 0.05, 0.2, 0.5};
constexpr double vector_densities[] = {0.0, 0.1, 0.4, 1.0};

// w<m> accum= op(A) ⊕.⊗ u and wᵀ<mᵀ> accum= uᵀ ⊕.⊗ op(A) over every shape class, transpose, vector storage
// (sparse and dense for u, the mask and w), mask descriptor, with and without a cached transpose of A.
template <class Sr, class T, class Accum = NoAccum, class MT = T>
void check_mxv_random(std::uint64_t seed, Accum accum = {}) {
    ref::Gen g(seed);
    for (auto [m, n] : g.shapes())
        for (int rep = 0; rep < 2; ++rep) {
            const double da = densities[g.uniform(0, 3)];
            const Dense<T> a0 = g.template matrix<T>(m, n, da, g.uniform(0, 1));  // op(A)
            for (int flip = 0; flip < 2; ++flip) {
                // mxv: u has n entries, w m; vxm: u has m, w n.
                const Index nu = flip ? m : n, nw = flip ? n : m;
                const double du = vector_densities[g.uniform(0, 3)], dm = vector_densities[g.uniform(0, 3)];
                const Dense<T> u0 = g.template vector<T>(nu, du);
                // The second repetition starts from a w with every entry (the GPU accumulates into it in place).
                const Dense<T> w0 = g.template vector<T>(nw, rep ? 1.0 : 0.3);
                const Dense<MT> m0 = g.template vector<MT>(nw, dm);
                const Dense<T> t = flip ? ref_vxm<Sr, T>(u0, a0) : ref_mxv<Sr, T>(a0, u0);
                for (int ta = 0; ta < 2; ++ta)
                    for (int cached = 0; cached < 2; ++cached)
                        for (int storage = 0; storage < 2; ++storage) {
                            const Matrix<T> a = ref::to_matrix(ta ? ref::transpose(a0) : a0);
                            if (cached) (void)a.transposed();
                            const Vector<T> u = stored(u0, storage & 1);
                            const Vector<MT> mask = stored(m0, !(storage & 1));
                            INFO("seed " << seed << (flip ? " vxm" : " mxv") << ", op(A) " << m << "x" << n
                                         << " density " << da << ", u density " << du << (storage ? " dense" : " sparse")
                                         << ", mask density " << dm << ", cached transpose " << cached);
                            auto call = [&](Vector<T>& w, const auto& msk, const Descriptor& d) {
                                if (flip) vxm(w, msk, accum, Sr{}, u, a, d);
                                else mxv(w, msk, accum, Sr{}, a, u, d);
                            };
                            {
                                Descriptor d;
                                d.transpose_a = ta;
                                INFO("no mask, " << describe(d));
                                Vector<T> w = stored(w0, storage);
                                call(w, no_mask, d);
                                REF_REQUIRE_SAME(ref::to_dense(w),
                                                 ref::write_back(w0, t, (const Dense<MT>*)nullptr, accum, d), tol<T>());
                            }
                            for (const Descriptor& d : mask_descriptors(ta)) {
                                INFO("mask, " << describe(d));
                                Vector<T> w = stored(w0, !storage);
                                call(w, mask, d);
                                REF_REQUIRE_SAME(ref::to_dense(w), ref::write_back(w0, t, &m0, accum, d), tol<T>());
                            }
                        }
            }
        }
}

}  // namespace

TEST_CASE("mxv and vxm plus_times against the reference", "[mxv]") {
    for (std::uint64_t seed : {1, 2, 3}) {
        check_mxv_random<plus_times, double>(seed);
        check_mxv_random<plus_times, double>(seed + 10, plus_op{});
        check_mxv_random<plus_times, float>(seed + 20);
    }
}

TEST_CASE("mxv and vxm min_plus against the reference", "[mxv]") {
    for (std::uint64_t seed : {4, 5, 6}) {
        check_mxv_random<min_plus, std::int64_t>(seed);
        check_mxv_random<min_plus, std::int64_t>(seed + 10, min_op{});
    }
}

TEST_CASE("mxv and vxm lor_land, any_pair, plus_second against the reference", "[mxv]") {
    for (std::uint64_t seed : {7, 8, 9}) {
        check_mxv_random<lor_land, bool>(seed);
        check_mxv_random<any_pair, std::int64_t, NoAccum, bool>(seed + 10);  // any_pair: all terms are 1
        check_mxv_random<plus_second, std::int64_t>(seed + 20);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Push (scatter a sparse frontier) and pull (dot products over a dense view) give identical results.

namespace {

// A random matrix with real values (sums that depend on their order) given as tuples.
Matrix<double> random_real_matrix(ref::Gen& g, Index m, Index n, double density) {
    std::vector<Index> r, c;
    std::vector<double> v;
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j)
            if (g.real() < density) {
                r.push_back(i);
                c.push_back(j);
                v.push_back(g.real() * 2 - 0.6);
            }
    return Matrix<double>::from_tuples(m, n, r, c, v);
}
Vector<double> random_real_vector(ref::Gen& g, Index n, Index nvals) {
    std::map<Index, double> e;
    while (e.size() < std::min(nvals, n)) e.emplace(g.uniform(0, n - 1), g.real() * 3 - 1);
    std::vector<Index> idx;
    std::vector<double> v;
    for (auto [i, x] : e) {
        idx.push_back(i);
        v.push_back(x);
    }
    return Vector<double>::from_tuples(n, idx, v);
}
template <class T>
bool identical(const Vector<T>& x, const Vector<T>& y) {
    std::vector<Index> ix, iy;
    std::vector<T> vx, vy;
    x.extract_tuples(ix, vx);
    y.extract_tuples(iy, vy);
    return x.size() == y.size() && ix == iy && vx == vy;
}
// The same matrix without a cached transpose.
Matrix<double> fresh(const Matrix<double>& a) {
    std::vector<Index> r, c;
    std::vector<double> v;
    a.extract_tuples(r, c, v);
    return Matrix<double>::from_tuples(a.nrows(), a.ncols(), r, c, v);
}

}  // namespace

namespace {
// w += A u (and vxm) with w and u full, where the GPU adds w inside the SpMV's stores: empty rows keep w, and
// rows long enough to span several of the GPU's tiles (896 items) get w once.
template <class T>
void check_accumulate_full(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (Index n : {Index(0), Index(1), Index(7), Index(1000), Index(6001)}) {
        std::vector<Index> rows, cols;
        std::vector<T> vals;
        for (Index i = 0; i < n; ++i) {
            // Mostly short rows, some empty, one row in 500 of degree n (several tiles).
            const Index deg = i % 500 == 3 ? n : rng() % 4 == 0 ? 0 : Index(rng() % 6);
            for (Index k = 0; k < deg; ++k) {
                rows.push_back(i);
                cols.push_back(deg == n ? k : Index(rng() % n));
                vals.push_back(T(double(rng() % 17) / 8 - 1));
            }
        }
        const Matrix<T> a = Matrix<T>::from_tuples(n, n, rows, cols, vals, plus_op{});
        std::vector<T> u0(n), w0(n);
        for (Index i = 0; i < n; ++i) {
            u0[i] = T(double(rng() % 9) / 4 - 1);
            w0[i] = T(double(rng() % 33) / 16);
        }
        // The reference: w(i) + the sum of A(i,k) u(k) (or of u(k) A(k,i) for vxm), in double.
        std::vector<double> want_mxv(w0.begin(), w0.end()), want_vxm(w0.begin(), w0.end());
        for (std::size_t e = 0; e < rows.size(); ++e) {
            want_mxv[rows[e]] += double(vals[e]) * double(u0[cols[e]]);
            want_vxm[cols[e]] += double(u0[rows[e]]) * double(vals[e]);
        }
        std::vector<Index> all(n);
        for (Index i = 0; i < n; ++i) all[i] = i;
        const Vector<T> u = Vector<T>::from_tuples(n, all, u0);
        for (int flip = 0; flip < 2; ++flip) {
            Vector<T> w = Vector<T>::from_tuples(n, all, w0);
            w.to_dense();
            if (flip) vxm(w, no_mask, plus_op{}, plus_times{}, u, a);
            else mxv(w, no_mask, plus_op{}, plus_times{}, a, u);
            const Vector<T> h = w.to(Context::cpu());
            INFO("seed " << seed << " n=" << n << (flip ? " vxm" : " mxv"));
            REQUIRE(h.nvals() == n);
            const std::vector<double>& want = flip ? want_vxm : want_mxv;
            for (Index i = 0; i < n; ++i) {
                INFO("w(" << i << ")");
                REQUIRE(ref::close(h.get(i).value(), T(want[i]), tol<T>() * 10));
            }
        }
    }
}
}  // namespace

TEST_CASE("mxv and vxm accumulating into a full vector against the reference", "[mxv][accumulate]") {
    check_accumulate_full<double>(71);
    check_accumulate_full<float>(72);
}

namespace {
// mxv_inner: w = A u and s = inner(sr2, w, v) in one call (on the GPU, with plus_times and u, v full, in the
// SpMV's own kernels). Against brute force, and against mxv followed by inner: sizes 0, 1, odd, rows long
// enough to span several of the GPU's tiles, empty rows; u and v full or with holes; A transposed or not; v
// being w itself or u.
template <class T, class Sr2>
void check_mxv_inner(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    // 40000: one row of 40000 entries, more than 32 tiles (the fixup's warp-wide path). Under compute-sanitizer
    // (HYBLA_TEST_QUICK) the sizes up to 6001.
    const char* quick = std::getenv("HYBLA_TEST_QUICK");
    const bool all = !(quick && *quick && *quick != '0');
    for (Index n : {Index(0), Index(1), Index(7), Index(1000), Index(6001), Index(40000)}) {
        if (n > 6001 && !all) continue;
        std::vector<Index> rows, cols;
        std::vector<T> vals;
        for (Index i = 0; i < n; ++i) {
            const bool hub = n > 10000 ? i == 3 : i % 500 == 3;
            const Index deg = hub ? n : rng() % 4 == 0 ? 0 : Index(rng() % 6);
            for (Index k = 0; k < deg; ++k) {
                rows.push_back(i);
                cols.push_back(hub ? k : Index(rng() % n));
                vals.push_back(T(double(rng() % 17) / 8 - 1));
            }
        }
        const Matrix<T> a = Matrix<T>::from_tuples(n, n, rows, cols, vals, plus_op{});
        for (int form = 0; form < 16; ++form) {
            const bool u_full = form & 1, v_full = form & 2, transposed = form & 4, alias = form & 8;
            std::vector<std::optional<T>> u0(n), v0(n);
            for (Index i = 0; i < n; ++i) {
                if (u_full || rng() % 3) u0[i] = T(double(rng() % 9) / 4 - 1);
                if (v_full || rng() % 3) v0[i] = T(double(rng() % 33) / 16);
            }
            auto to_vec = [&](const std::vector<std::optional<T>>& x) {
                std::vector<Index> idx;
                std::vector<T> val;
                for (Index i = 0; i < n; ++i)
                    if (x[i]) {
                        idx.push_back(i);
                        val.push_back(*x[i]);
                    }
                Vector<T> r = Vector<T>::from_tuples(n, idx, val);
                r.to_dense();
                return r;
            };
            // The reference, in double: w(i) present where a term exists; s over the rows present in w and v.
            std::vector<std::optional<double>> want_w(n);
            for (std::size_t e = 0; e < rows.size(); ++e) {
                const Index i = transposed ? cols[e] : rows[e], k = transposed ? rows[e] : cols[e];
                if (u0[k]) want_w[i] = want_w[i].value_or(0) + double(vals[e]) * double(*u0[k]);
            }
            // alias: v is w itself (w holds v's values on entry).
            const std::vector<std::optional<T>>& vin = v0;
            std::optional<T> want_s;
            for (Index i = 0; i < n; ++i)
                if (want_w[i] && vin[i]) {
                    const T t = Sr2::template multiply<T>(T(*want_w[i]), *vin[i]);
                    want_s = want_s ? Sr2::template add<T>(*want_s, t) : t;
                }
            const Vector<T> u = to_vec(u0);
            Vector<T> v = to_vec(v0);
            Vector<T> w(n);
            Scalar<T> s(T(5));  // overwritten
            const Descriptor d{.transpose_a = transposed};
            if (alias) mxv_inner(v, s, plus_times{}, a, u, Sr2{}, v, d);
            else mxv_inner(w, s, plus_times{}, a, u, Sr2{}, v, d);
            const Vector<T>& got = alias ? v : w;
            INFO("seed " << seed << " n=" << n << " u full " << u_full << " v full " << v_full << " transposed "
                         << transposed << " v is w " << alias);
            const Vector<T> h = got.to(Context::cpu());
            for (Index i = 0; i < n; ++i) {
                INFO("w(" << i << ")");
                REQUIRE(h.get(i).has_value() == want_w[i].has_value());
                if (want_w[i]) REQUIRE(ref::close(*h.get(i), T(*want_w[i]), tol<T>() * 10));
            }
            REQUIRE(s.nvals() == 1);
            const T identity = Sr2::add_monoid::template identity<T>();
            REQUIRE(ref::close(s.value(), want_s.value_or(identity), tol<T>() * 10));
            // The two operations apart give the same w and, up to rounding, the same s.
            Vector<T> w2(n);
            mxv(w2, no_mask, no_accum, plus_times{}, a, u, d);
            Scalar<T> s2;
            inner(s2, Sr2{}, w2, to_vec(v0));
            REQUIRE(identical(w2.to(Context::cpu()), h));
            REQUIRE(ref::close(s.value(), s2.value(), tol<T>()));
            if constexpr (std::is_same_v<Sr2, any_first>) REQUIRE(s.value() == s2.value());  // the first row's
        }
    }
}
}  // namespace

TEST_CASE("mxv_inner equals mxv then inner and the reference", "[mxv][inner]") {
    check_mxv_inner<double, semiring<plus_monoid, absdiff_op>>(81);
    check_mxv_inner<float, semiring<plus_monoid, absdiff_op>>(82);
    check_mxv_inner<double, plus_times>(83);
    check_mxv_inner<double, semiring<max_monoid, absdiff_op>>(84);
    check_mxv_inner<double, any_first>(85);
}

TEST_CASE("mxv_inner: operands of the wrong size throw DimensionMismatch naming them", "[mxv][inner][errors]") {
    using Catch::Matchers::Contains;
    const Matrix<double> a(3, 4);
    const Vector<double> u4 = Vector<double>::full(4, 1.0), v3 = Vector<double>::full(3, 1.0), v4 = u4;
    Vector<double> w3(3), w4(4);
    Scalar<double> s(2.0);
    REQUIRE_THROWS_WITH(mxv_inner(w3, s, plus_times{}, a, u4, plus_times{}, v4),
                        Contains("mxv_inner") && Contains("v has size 4") && Contains("3 rows"));
    REQUIRE_THROWS_WITH(mxv_inner(w4, s, plus_times{}, a, u4, plus_times{}, v3),
                        Contains("mxv_inner") && Contains("w has size 4"));
    REQUIRE_THROWS_WITH(mxv_inner(w3, s, plus_times{}, a, v3, plus_times{}, v3),
                        Contains("mxv_inner") && Contains("u has size 3"));
    CHECK(s.value() == 2.0);  // untouched
}

TEST_CASE("mxv and vxm: push over a small frontier equals pull and the reference", "[mxv][push]") {
    ref::Gen g(21);
    const Index m = 1500, n = 1100;
    const Matrix<double> a = random_real_matrix(g, m, n, 0.006);
    (void)a.transposed();  // the cached transpose lets mxv push
    const Matrix<double> a_plain = fresh(a);
    REQUIRE(!a_plain.has_cached_transpose());
    const Dense<double> ad = ref::to_dense(a);
    for (Index nvals : {Index(0), Index(1), Index(2), Index(5)}) {
        for (int flip = 0; flip < 2; ++flip)
            for (int ta = 0; ta < 2; ++ta) {
                // op(A) is m x n (ta = 0) or n x m (ta = 1); u goes with its columns (mxv) or rows (vxm).
                const Index rows = ta ? n : m, cols = ta ? m : n;
                const Index nu = flip ? rows : cols, nw = flip ? cols : rows;
                const Vector<double> u = random_real_vector(g, nu, nvals);
                Vector<double> ud = u;
                ud.to_dense();
                const Dense<double> opa = ta ? ref::transpose(ad) : ad;
                const Dense<double> t =
                    flip ? ref_vxm<plus_times, double>(ref::to_dense(u), opa) : ref_mxv<plus_times, double>(opa, ref::to_dense(u));
                const Dense<double> w0 = ref::to_dense(random_real_vector(g, nw, nw / 3));
                const Dense<double> m0 = ref::to_dense(random_real_vector(g, nw, nw / 2));
                const Vector<double> mask = ref::to_vector(m0);
                Descriptor d;
                d.transpose_a = ta;
                INFO("frontier of " << nvals << (flip ? ", vxm" : ", mxv") << ", tA=" << ta);
                auto call = [&](Vector<double>& w, const Matrix<double>& mat, const Vector<double>& x, auto msk,
                                auto acc, const Descriptor& dd) {
                    if (flip) vxm(w, msk, acc, plus_times{}, x, mat, dd);
                    else mxv(w, msk, acc, plus_times{}, mat, x, dd);
                };
                // Sparse u (push where a scatter form exists), dense u (always pull), and a matrix without a
                // cached transpose (pull where the scatter form would be the transpose).
                Vector<double> w_push(nw), w_pull(nw), w_plain(nw);
                call(w_push, a, u, no_mask, no_accum, d);
                call(w_pull, a, ud, no_mask, no_accum, d);
                call(w_plain, a_plain, u, no_mask, no_accum, d);
                REF_REQUIRE_SAME(ref::to_dense(w_push), t);
                REQUIRE(identical(w_push, w_pull));
                REQUIRE(identical(w_push, w_plain));
                // With a mask (complemented and not) and an accumulator.
                for (const Descriptor& dm : mask_descriptors(ta)) {
                    INFO(describe(dm));
                    Vector<double> x = ref::to_vector(w0), y = ref::to_vector(w0);
                    call(x, a, u, mask, plus_op{}, dm);
                    call(y, a, ud, mask, plus_op{}, dm);
                    REF_REQUIRE_SAME(ref::to_dense(x), ref::write_back(w0, t, &m0, plus_op{}, dm));
                    REQUIRE(identical(x, y));
                }
            }
    }
}

TEST_CASE("mxv push with min_plus, lor_land, any_pair and plus_second equals pull", "[mxv][push]") {
    ref::Gen g(22);
    const Index m = 900, n = 1300;
    const Dense<std::int64_t> a0 = g.matrix<std::int64_t>(m, n, 0.005);
    const Dense<bool> b0 = g.matrix<bool>(m, n, 0.005);
    const Matrix<std::int64_t> a = ref::to_matrix(a0);
    const Matrix<bool> b = ref::to_matrix(b0);
    (void)a.transposed();
    (void)b.transposed();
    for (std::uint64_t rep = 0; rep < 6; ++rep) {
        const Dense<std::int64_t> u0 = g.vector<std::int64_t>(n, 0.002 * double(rep));
        const Dense<std::int64_t> v0 = g.vector<std::int64_t>(m, 0.002 * double(rep));
        const Dense<bool> ub0 = g.vector<bool>(n, 0.002 * double(rep));
        const Dense<bool> vb0 = g.vector<bool>(m, 0.002 * double(rep));
        INFO("rep " << rep << ", frontier " << u0.nvals());
        auto both = [&](auto sr, const auto& mat, const auto& mat0, const auto& x0, const auto& y0) {
            using S = decltype(sr);
            using V = typename std::decay_t<decltype(mat)>::value_type;
            for (int dense = 0; dense < 2; ++dense) {
                Vector<V> w(mat.nrows()), z(mat.ncols());
                mxv(w, no_mask, no_accum, S{}, mat, stored(x0, dense));  // x0: n entries
                vxm(z, no_mask, no_accum, S{}, stored(y0, dense), mat);  // y0: m entries
                REF_REQUIRE_SAME(ref::to_dense(w), (ref_mxv<S, V>(mat0, x0)));
                REF_REQUIRE_SAME(ref::to_dense(z), (ref_vxm<S, V>(y0, mat0)));
            }
        };
        both(min_plus{}, a, a0, u0, v0);
        both(plus_second{}, a, a0, u0, v0);
        both(any_pair{}, a, a0, u0, v0);
        both(lor_land{}, b, b0, ub0, vb0);
    }
}

TEST_CASE("mxv does not push through a transpose cached before the matrix changed", "[mxv][push]") {
    Matrix<double> a(50, 40);
    for (Index i = 0; i < 50; ++i) a.set(i, (i * 7) % 40, double(i + 1));
    (void)a.transposed();
    a.set(3, 5, 100.0);  // drops the cached transpose
    a.remove(10, (10 * 7) % 40);
    Vector<double> u(40);
    u.set(5, 2.0);
    u.set(30, 1.0);
    u.to_sparse();
    Vector<double> w(50);
    mxv(w, no_mask, no_accum, plus_times{}, a, u);
    REF_REQUIRE_SAME(ref::to_dense(w), (ref_mxv<plus_times, double>(ref::to_dense(a), ref::to_dense(u))));
    REQUIRE(w.get(3) == 200.0);
}

TEST_CASE("mxv counts the present rows again after the matrix changed", "[mxv]") {
    // The GPU backend remembers a matrix's non-empty row count from its first mxv; a change must drop it.
    Matrix<double> a(40, 30);
    for (Index i = 0; i < 40; i += 3) a.set(i, (i * 5) % 30, double(i + 1));
    const Vector<double> u = Vector<double>::full(30, 2.0);
    for (int round = 0; round < 4; ++round) {
        Vector<double> w(40);
        mxv(w, no_mask, no_accum, plus_times{}, a, u);
        const auto want = ref_mxv<plus_times, double>(ref::to_dense(a), ref::to_dense(u));
        REF_REQUIRE_SAME(ref::to_dense(w), want);
        REQUIRE(w.nvals() == want.nvals());  // the count itself, not only the bitmap
        Vector<double> again(40);
        mxv(again, no_mask, no_accum, plus_times{}, a, u);  // the count now comes from the cache
        REQUIRE(again.nvals() == w.nvals());
        REF_REQUIRE_SAME(ref::to_dense(again), ref::to_dense(w));
        if (round == 0) a.set(1, 4, 7.0);       // fills an empty row
        if (round == 1) a.remove(0, 0);         // empties a row
        if (round == 2) a = Matrix<double>(40, 30, a.context());  // no entries at all
    }
}

// ---------------------------------------------------------------------------------------------------------
// reduce

namespace {

// w(i) = ⊕ of row i of op(A) in increasing column order; present iff the row has entries.
template <class Monoid, class TW, class TA>
Dense<TW> ref_reduce_rows(const Dense<TA>& a) {
    Dense<TW> w(a.nrows, 1);
    for (Index i = 0; i < a.nrows; ++i) {
        std::optional<TW> acc;
        for (Index j = 0; j < a.ncols; ++j)
            if (a(i, j)) acc = acc ? Monoid{}(*acc, TW(*a(i, j))) : TW(*a(i, j));
        w(i, 0) = acc;
    }
    return w;
}
template <class Monoid, class T>
T ref_reduce_all(const Dense<T>& a) {
    T acc = Monoid::template identity<T>();
    for (auto& x : a.a)
        if (x) acc = Monoid{}(acc, *x);
    return acc;
}

template <class Monoid, class T, class Accum = NoAccum, class MT = T>
void check_reduce_random(std::uint64_t seed, Accum accum = {}) {
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    ref::Gen g(seed);
    for (auto [m, n] : g.shapes())
        for (double da : densities) {
            Dense<T> a0 = g.template matrix<T>(m, n, da, true);
            if constexpr (std::is_same_v<Monoid, times_monoid>) {
                // Factors whose products neither overflow nor round: mostly ±1, a few 2s, rare zeros.
                for (auto& x : a0.a)
                    if (x) {
                        const Index r = g.uniform(0, 59);
                        x = r == 0 ? T(0) : r <= 2 ? T(2) : r % 2 ? T(1) : T(-1);
                    }
            }
            const Matrix<T> a = ref::to_matrix(a0);
            // Scalar: matrix, and the matrix's rows flattened into a vector (sparse and dense storage).
            {
                const T want = ref_reduce_all<Monoid>(a0);
                INFO("seed " << seed << ", " << m << "x" << n << " density " << da);
                REQUIRE(ref::close(reduce(Monoid{}, a), want, tol<T>()));
                Dense<T> flat(m * n, 1);
                flat.a = a0.a;
                for (int dense = 0; dense < 2; ++dense) {
                    Vector<T> v = ref::to_vector(flat);
                    if (dense) v.to_dense();
                    REQUIRE(ref::close(reduce(Monoid{}, v), want, tol<T>()));
                    T s = g.template value<T>();
                    const T s0 = s;
                    reduce(s, accum, Monoid{}, v);
                    if constexpr (has_accum) REQUIRE(ref::close(s, T(accum(s0, want)), tol<T>()));
                    else REQUIRE(ref::close(s, want, tol<T>()));
                    // Into a Scalar: empty (accumulating into nothing gives the result) and holding s0.
                    Scalar<T> fresh, held(s0);
                    reduce(fresh, accum, Monoid{}, v);
                    reduce(held, accum, Monoid{}, v);
                    REQUIRE(ref::close(fresh.value(), want, tol<T>()));
                    if constexpr (has_accum) REQUIRE(ref::close(held.value(), T(accum(s0, want)), tol<T>()));
                    else REQUIRE(ref::close(held.value(), want, tol<T>()));
                }
                Scalar<T> of_matrix;
                reduce(of_matrix, no_accum, Monoid{}, a);
                REQUIRE(ref::close(of_matrix.value(), want, tol<T>()));
            }
            // Rows and columns.
            for (int ta = 0; ta < 2; ++ta) {
                const Dense<T> opa = ta ? ref::transpose(a0) : a0;
                const Dense<T> t = ref_reduce_rows<Monoid, T>(opa);
                const Dense<T> w0 = g.template vector<T>(opa.nrows, 0.4);
                const Dense<MT> m0 = g.template vector<MT>(opa.nrows, vector_densities[g.uniform(0, 3)]);
                const Vector<MT> mask = ref::to_vector(m0);
                INFO("seed " << seed << ", " << m << "x" << n << " density " << da << ", tA=" << ta);
                {
                    Descriptor d;
                    d.transpose_a = ta;
                    Vector<T> w = ref::to_vector(w0);
                    reduce(w, no_mask, accum, Monoid{}, a, d);
                    REF_REQUIRE_SAME(ref::to_dense(w), ref::write_back(w0, t, (const Dense<MT>*)nullptr, accum, d),
                                     tol<T>());
                }
                for (const Descriptor& d : mask_descriptors(ta)) {
                    INFO(describe(d));
                    Vector<T> w = ref::to_vector(w0);
                    reduce(w, mask, accum, Monoid{}, a, d);
                    REF_REQUIRE_SAME(ref::to_dense(w), ref::write_back(w0, t, &m0, accum, d), tol<T>());
                }
            }
        }
}

}  // namespace

TEST_CASE("reduce with plus, times, min, max against the reference", "[reduce]") {
    for (std::uint64_t seed : {31, 32}) {
        check_reduce_random<plus_monoid, double>(seed);
        check_reduce_random<plus_monoid, std::int64_t>(seed + 10, plus_op{});
        check_reduce_random<plus_monoid, float>(seed + 20);
        check_reduce_random<times_monoid, std::int64_t>(seed + 30);  // 0 is terminal
        check_reduce_random<times_monoid, double>(seed + 40);
        check_reduce_random<min_monoid, double>(seed + 50, min_op{});
        check_reduce_random<min_monoid, std::int32_t>(seed + 60);
        check_reduce_random<max_monoid, std::int64_t, NoAccum, bool>(seed + 70);
        check_reduce_random<max_monoid, double>(seed + 80, second_op{});
    }
}

TEST_CASE("reduce with lor and land on bool against the reference", "[reduce]") {
    for (std::uint64_t seed : {41, 42, 43}) {
        check_reduce_random<lor_monoid, bool>(seed);
        check_reduce_random<land_monoid, bool>(seed + 10);
    }
}

TEST_CASE("reduce of empty objects gives the monoid's identity", "[reduce]") {
    const Matrix<double> e00(0, 0), e35(3, 5);
    const Vector<double> v0(0), v7(7);
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(reduce(plus_monoid{}, e00) == 0.0);
    CHECK(reduce(times_monoid{}, e35) == 1.0);
    CHECK(reduce(min_monoid{}, e35) == inf);
    CHECK(reduce(max_monoid{}, e00) == -inf);
    CHECK(reduce(plus_monoid{}, v0) == 0.0);
    CHECK(reduce(min_monoid{}, v7) == inf);
    CHECK(reduce(min_monoid{}, Matrix<std::int64_t>(4, 4)) == std::numeric_limits<std::int64_t>::max());
    CHECK(reduce(max_monoid{}, Matrix<std::int64_t>(4, 4)) == std::numeric_limits<std::int64_t>::lowest());
    CHECK(reduce(lor_monoid{}, Matrix<bool>(2, 2)) == false);
    CHECK(reduce(land_monoid{}, Matrix<bool>(2, 2)) == true);
    Vector<double> dense7 = v7;
    dense7.to_dense();
    CHECK(reduce(times_monoid{}, dense7) == 1.0);
    // Rows of an empty matrix: no entries at all (not the identity), so w keeps its entries where accumulating.
    Vector<double> w(3);
    w.set(1, 4.0);
    reduce(w, no_mask, plus_op{}, plus_monoid{}, e35);
    CHECK(w.nvals() == 1);
    CHECK(w.get(1) == 4.0);
    reduce(w, no_mask, no_accum, plus_monoid{}, e35);
    CHECK(w.nvals() == 0);
    double s = 2.5;
    reduce(s, plus_op{}, plus_monoid{}, e35);
    CHECK(s == 2.5);
    reduce(s, no_accum, min_monoid{}, e35);
    CHECK(s == inf);
}

// ------------------------------------------------------------------------------ reductions in the result's type
namespace {

// Values of TA whose sum, and sum of squares, in TA differ from those in a wider type: random bytes for uint8
// and int8 (negatives included), 2^24 followed by ones for float (float holds 2^24 + 1 as 2^24), and true or
// false for bool (whose plus is or).
template <class TA>
std::vector<TA> wide_values(ref::Gen& g, Index n) {
    std::vector<TA> v(n);
    for (Index k = 0; k < n; ++k) {
        if constexpr (std::is_same_v<TA, float>) v[k] = k == 0 ? 16777216.0f : 1.0f;
        else if constexpr (std::is_same_v<TA, bool>) v[k] = g.uniform(0, 2) != 0;
        else v[k] = TA(std::int64_t(g.uniform(0, 255)) + std::int64_t(std::numeric_limits<TA>::lowest()));
    }
    return v;
}

// One entry equal to want, or none when there was nothing to reduce.
template <class T>
void check_one(const Vector<T>& w, T want, bool any) {
    REQUIRE(w.size() == 1);
    if (any) CHECK(w.get(0) == want);
    else CHECK(w.nvals() == 0);
}

// Every reduction and inner product of values of TA into TS computes in TS: each value is cast to TS before
// plus (or times) sees it. The values lie in a 1 x n and an n x 1 matrix, a sparse vector (entries at even
// positions) and the same in dense storage, and a 1 x n and an n x 1 dense matrix; sizes cross the GPU's
// ranges, blocks and long-row chunks. Sums of integral values are exact in any order: compared with ==.
template <class TS, class TA>
void check_result_type(std::uint64_t seed) {
    ref::Gen g(seed);
    const Context& ctx = default_context();
    for (Index n : {Index(0), Index(1), Index(7), Index(300), Index(2049), Index(20001)}) {
        INFO("seed " << seed << ", n=" << n);
        const std::vector<TA> vals = wide_values<TA>(g, n);
        TS sum = 0, squares = 0;
        for (TA x : vals) {
            sum = plus_op{}(sum, TS(x));
            squares = plus_op{}(squares, times_op{}(TS(x), TS(x)));
        }
        std::vector<Index> zeros(n, 0), seq(n), even(n);
        std::iota(seq.begin(), seq.end(), Index(0));
        for (Index k = 0; k < n; ++k) even[k] = 2 * k;
        auto buf = ref::contiguous(vals);
        const std::span<const TA> vs(buf.get(), n);
        const Matrix<TA> row = Matrix<TA>::from_tuples(1, n, zeros, seq, vs);
        const Matrix<TA> col = Matrix<TA>::from_tuples(n, 1, seq, zeros, vs);
        const Vector<TA> u = Vector<TA>::from_tuples(2 * n + 1, even, vs);
        Vector<TA> ud = u.dup();
        ud.to_dense();
        DenseMatrix<TA> hrow(1, n, TA{}, Context::cpu()), hcol(n, 1, TA{}, Context::cpu());
        for (Index k = 0; k < n; ++k) hrow(0, k) = hcol(k, 0) = vals[k];
        const DenseMatrix<TA> drow = hrow.to(ctx), dcol = hcol.to(ctx);

        // To a scalar, plain and Scalar<TS>, with and without an accumulator.
        auto to_scalars = [&](const auto& obj, const char* what) {
            INFO(what);
            TS s = TS(3), t = TS(3);
            reduce(s, no_accum, plus_monoid{}, obj);
            CHECK(s == sum);
            reduce(t, plus_op{}, plus_monoid{}, obj);
            CHECK(t == plus_op{}(TS(3), sum));
            Scalar<TS> fresh, held(TS(3));
            reduce(fresh, no_accum, plus_monoid{}, obj);
            reduce(held, plus_op{}, plus_monoid{}, obj);
            CHECK(fresh.value() == sum);
            CHECK(held.value() == plus_op{}(TS(3), sum));
        };
        to_scalars(row, "1 x n matrix");
        to_scalars(col, "n x 1 matrix");
        to_scalars(u, "sparse vector");
        to_scalars(ud, "dense vector");

        // To a vector: the row of a 1 x n matrix, the column of an n x 1 one; the same of dense matrices, and
        // the inner products of their line with itself.
        Vector<TS> w(1);
        reduce(w, no_mask, no_accum, plus_monoid{}, row);
        check_one(w, sum, n > 0);
        reduce(w, no_mask, no_accum, plus_monoid{}, col, Descriptor{.transpose_a = true});
        check_one(w, sum, n > 0);
        reduce(w, no_mask, no_accum, plus_monoid{}, drow);
        check_one(w, sum, n > 0);
        reduce(w, no_mask, no_accum, plus_monoid{}, dcol, Descriptor{.transpose_a = true});
        check_one(w, sum, n > 0);
        inner(w, no_mask, no_accum, plus_times{}, drow, drow);
        check_one(w, squares, n > 0);
        inner(w, no_mask, no_accum, plus_times{}, dcol, dcol, Descriptor{.transpose_a = true});
        check_one(w, squares, n > 0);

        // Inner products of vectors: into a Scalar<TS>, and as the value of inner(ones, u), which has the
        // type of its first operand (TS), in every storage form.
        const Vector<TS> ones = Vector<TS>::full(2 * n + 1, TS(1));
        Vector<TS> ones_sparse = ones.dup();
        ones_sparse.to_sparse();
        for (int form = 0; form < 4; ++form) {
            INFO("dense a/b " << (form & 1) << "/" << (form >> 1));
            const Vector<TA>& a = form & 1 ? ud : u;
            const Vector<TA>& b = form & 2 ? ud : u;
            Scalar<TS> s(TS(3));
            inner(s, plus_times{}, a, b);
            CHECK(s.value() == squares);
            CHECK(inner(plus_times{}, form & 1 ? ones : ones_sparse, b) == sum);
        }
    }
}

}  // namespace

TEST_CASE("reductions and inner products compute in the result's type", "[reduce][inner][types]") {
    // The sum of 300 ones of a Matrix<uint8_t> is 300 in a uint64; in the matrix's own type it wraps to 44.
    std::vector<Index> r, c;
    for (Index i = 0; i < 20; ++i)
        for (Index j = 0; j < 15; ++j) {
            r.push_back(i);
            c.push_back(j);
        }
    const auto a = Matrix<std::uint8_t>::from_tuples(20, 15, r, c, std::vector<std::uint8_t>(300, 1));
    std::uint64_t total = 0;
    reduce(total, no_accum, plus_monoid{}, a);
    CHECK(total == 300);
    Scalar<std::uint64_t> s;
    reduce(s, no_accum, plus_monoid{}, a);
    CHECK(s.value() == 300);
    CHECK(reduce(plus_monoid{}, a) == 44);

    check_result_type<std::uint64_t, std::uint8_t>(91);
    check_result_type<std::int32_t, std::int8_t>(92);  // int8_t: on the GPU, computed from a host copy
    check_result_type<double, float>(93);
    check_result_type<std::int32_t, bool>(94);
}

namespace {
// ⊕ over the positions where both have an entry of u(i) ⊗ v(i), in increasing i; the identity when none.
template <class Sr, class T>
T ref_inner(const Dense<T>& u, const Dense<T>& v) {
    T acc = Sr::add_monoid::template identity<T>();
    bool any = false;
    for (Index i = 0; i < u.nrows; ++i)
        if (u(i, 0) && v(i, 0)) {
            const T t = Sr::template multiply<T>(*u(i, 0), *v(i, 0));
            acc = any ? Sr::template add<T>(acc, t) : t;
            any = true;
        }
    return acc;
}

// Sizes 0, 1, odd, and past the GPU's 2048-entry ranges (several partial sums); each operand sparse or dense,
// the dense one full or with holes.
template <class Sr, class T>
void check_inner_random(std::uint64_t seed) {
    ref::Gen g(seed);
    for (Index n : {Index(0), Index(1), Index(2), Index(7), Index(33), Index(2049), Index(20001)})
        for (double du : vector_densities)
            for (double dv : {1.0, 0.3}) {
                const Dense<T> u0 = g.template vector<T>(n, du), v0 = g.template vector<T>(n, dv);
                const T want = ref_inner<Sr>(u0, v0);
                for (int form = 0; form < 4; ++form) {
                    Vector<T> u = ref::to_vector(u0), v = ref::to_vector(v0);
                    if (form & 1) u.to_dense();
                    if (form & 2) v.to_dense();
                    INFO("seed " << seed << " n=" << n << " densities " << du << ", " << dv << " dense u/v " << (form & 1)
                                 << "/" << (form >> 1));
                    REQUIRE(ref::close(inner(Sr{}, u, v), want, tol<T>()));
                    Scalar<T> s(T(1));  // overwritten
                    inner(s, Sr{}, u, v);
                    REQUIRE(s.nvals() == 1);
                    REQUIRE(ref::close(s.value(), want, tol<T>()));
                }
            }
}
}  // namespace

TEST_CASE("inner products under several semirings against the reference", "[reduce][inner]") {
    check_inner_random<plus_times, double>(61);
    check_inner_random<plus_times, float>(62);
    check_inner_random<plus_times, std::int64_t>(63);
    check_inner_random<semiring<plus_monoid, absdiff_op>, double>(64);
    check_inner_random<semiring<plus_monoid, absdiff_op>, std::uint32_t>(65);
    check_inner_random<min_plus, std::int32_t>(66);
    check_inner_random<max_times, double>(67);
    check_inner_random<lor_land, bool>(68);
    // Mixed types: v is cast to u's type.
    Vector<double> u = Vector<double>::full(5, 0.5);
    Vector<std::int32_t> v(5);
    v.set(1, 3);
    v.set(4, -2);
    CHECK(inner(plus_times{}, u, v) == 0.5);
}

TEST_CASE("inner of vectors of different sizes throws DimensionMismatch naming both", "[reduce][inner][errors]") {
    const Vector<double> a(3), b(4);
    using Catch::Matchers::Contains;
    REQUIRE_THROWS_AS(inner(plus_times{}, a, b), DimensionMismatch);
    REQUIRE_THROWS_WITH(inner(plus_times{}, a, b), Contains("inner") && Contains("size 3") && Contains("size 4"));
    Scalar<double> s(2.0);
    REQUIRE_THROWS_AS(inner(s, plus_times{}, a, b), DimensionMismatch);
    CHECK(s.value() == 2.0);  // untouched
}

TEST_CASE("Scalar: empty, set, cleared, copied, and results queued before they are read", "[reduce][scalar]") {
    using Catch::Matchers::Contains;
    Scalar<double> e;
    CHECK(e.nvals() == 0);
    CHECK(!e.get());
    REQUIRE_THROWS_AS(e.value(), NoValue);
    REQUIRE_THROWS_WITH(e.value(), Contains("no value"));
    e.set(1.5);
    CHECK(e.value() == 1.5);
    e.clear();
    CHECK(e.nvals() == 0);
    // Many results queued at once, on the same scalars again and again, read in another order; copies and
    // moves of a scalar whose result is still on its way.
    ref::Gen g(71);
    const Index n = 30011;
    std::vector<Dense<double>> d;
    std::vector<Vector<double>> v;
    for (int k = 0; k < 4; ++k) {
        d.push_back(g.vector<double>(n, k % 2 ? 1.0 : 0.4));
        v.push_back(ref::to_vector(d.back()));
        v.back().to_dense();
    }
    for (int round = 0; round < 3; ++round) {
        std::vector<Scalar<double>> s(6);
        for (int k = 0; k < 4; ++k) inner(s[k], plus_times{}, v[k], v[(k + round + 1) % 4]);
        reduce(s[4], no_accum, plus_monoid{}, v[round]);
        reduce(s[5], no_accum, max_monoid{}, v[round + 1]);
        inner(s[0], plus_times{}, v[0], v[0]);  // queued again before the first was read: the last one counts
        Scalar<double> copied = s[1];
        Scalar<double> moved = std::move(s[2]);
        CHECK(ref::close(s[5].value(), ref_reduce_all<max_monoid>(d[round + 1]), 1e-12));
        CHECK(ref::close(s[4].value(), ref_reduce_all<plus_monoid>(d[round]), 1e-9));
        CHECK(ref::close(s[3].value(), ref_inner<plus_times>(d[3], d[(3 + round + 1) % 4]), 1e-9));
        CHECK(ref::close(moved.value(), ref_inner<plus_times>(d[2], d[(2 + round + 1) % 4]), 1e-9));
        CHECK(ref::close(copied.value(), ref_inner<plus_times>(d[1], d[(1 + round + 1) % 4]), 1e-9));
        CHECK(ref::close(s[0].value(), ref_inner<plus_times>(d[0], d[0]), 1e-9));
        s[0].set(-1);  // a set value wins over an earlier result
        CHECK(s[0].value() == -1);
    }
    // Empty operands: the identity, also on the GPU where the result comes from a kernel.
    Scalar<double> m;
    reduce(m, no_accum, min_monoid{}, Vector<double>(0));
    CHECK(m.value() == std::numeric_limits<double>::infinity());
    inner(m, plus_times{}, Vector<double>::full(0, 1.0), Vector<double>::full(0, 1.0));
    CHECK(m.value() == 0.0);
}

TEST_CASE("reduce with the any monoid gives one of the entries", "[reduce][any]") {
    // Values are all non-zero, so the monoid's identity (0) is never a correct answer for a non-empty row.
    ref::Gen g(51);
    for (auto [m, n] : g.shapes()) {
        Dense<std::int64_t> a0 = g.matrix<std::int64_t>(m, n, 0.3, true);
        for (auto& x : a0.a)
            if (x) x = 100 + std::int64_t(g.uniform(0, 50));
        const Matrix<std::int64_t> a = ref::to_matrix(a0);
        INFO(m << "x" << n);
        for (int ta = 0; ta < 2; ++ta) {
            const Dense<std::int64_t> opa = ta ? ref::transpose(a0) : a0;
            Vector<std::int64_t> w(opa.nrows);
            reduce(w, no_mask, no_accum, any_monoid{}, a, Descriptor{.transpose_a = bool(ta)});
            for (Index i = 0; i < opa.nrows; ++i) {
                std::set<std::int64_t> row;
                for (Index j = 0; j < opa.ncols; ++j)
                    if (opa(i, j)) row.insert(*opa(i, j));
                INFO("row " << i << " of op(A), tA=" << ta);
                REQUIRE(w.contains(i) == !row.empty());
                if (w.contains(i)) REQUIRE(row.count(*w.get(i)) == 1);
            }
        }
        if (a0.nvals() > 0) {
            std::set<std::int64_t> all;
            for (auto& x : a0.a)
                if (x) all.insert(*x);
            CHECK(all.count(reduce(any_monoid{}, a)) == 1);
            Dense<std::int64_t> flat(m * n, 1);
            flat.a = a0.a;
            Vector<std::int64_t> v = ref::to_vector(flat);
            CHECK(all.count(reduce(any_monoid{}, v)) == 1);
            v.to_dense();
            CHECK(all.count(reduce(any_monoid{}, v)) == 1);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Dimension errors.

TEST_CASE("mxv, vxm and reduce dimension mismatches throw DimensionMismatch naming the sizes", "[mxv][reduce][errors]") {
    using Catch::Matchers::Contains;
    const Matrix<double> a(3, 4);
    Vector<double> u4(4), u3(3), u5(5), w3(3), w4(4), w2(2), m2(2);
    REQUIRE_THROWS_AS(mxv(w3, no_mask, no_accum, plus_times{}, a, u5), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxv(w3, no_mask, no_accum, plus_times{}, a, u5), Contains("3x4") && Contains("5"));
    REQUIRE_THROWS_AS(mxv(w2, no_mask, no_accum, plus_times{}, a, u4), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxv(w2, no_mask, no_accum, plus_times{}, a, u4), Contains("2") && Contains("3"));
    REQUIRE_THROWS_AS(mxv(w3, m2, no_accum, plus_times{}, a, u4), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxv(w3, m2, no_accum, plus_times{}, a, u4), Contains("mask has size 2"));
    REQUIRE_THROWS_AS(mxv(w3, no_mask, no_accum, plus_times{}, a, u4, Descriptor{.transpose_a = true}),
                      DimensionMismatch);
    REQUIRE_THROWS_WITH(mxv(w3, no_mask, no_accum, plus_times{}, a, u4, Descriptor{.transpose_a = true}),
                        Contains("4x3"));
    REQUIRE_NOTHROW(mxv(w4, no_mask, no_accum, plus_times{}, a, u3, Descriptor{.transpose_a = true}));
    REQUIRE_NOTHROW(mxv(w3, no_mask, no_accum, plus_times{}, a, u4));

    REQUIRE_THROWS_AS(vxm(w4, no_mask, no_accum, plus_times{}, u4, a), DimensionMismatch);
    REQUIRE_THROWS_WITH(vxm(w4, no_mask, no_accum, plus_times{}, u4, a), Contains("3x4") && Contains("4"));
    REQUIRE_THROWS_AS(vxm(w3, no_mask, no_accum, plus_times{}, u3, a), DimensionMismatch);
    REQUIRE_THROWS_AS(vxm(w4, m2, no_accum, plus_times{}, u3, a), DimensionMismatch);
    REQUIRE_THROWS_WITH(vxm(w4, m2, no_accum, plus_times{}, u3, a), Contains("mask has size 2"));
    REQUIRE_NOTHROW(vxm(w4, no_mask, no_accum, plus_times{}, u3, a));
    REQUIRE_NOTHROW(vxm(w3, no_mask, no_accum, plus_times{}, u4, a, Descriptor{.transpose_a = true}));

    REQUIRE_THROWS_AS(reduce(w4, no_mask, no_accum, plus_monoid{}, a), DimensionMismatch);
    REQUIRE_THROWS_WITH(reduce(w4, no_mask, no_accum, plus_monoid{}, a), Contains("4") && Contains("3"));
    REQUIRE_THROWS_AS(reduce(w3, no_mask, no_accum, plus_monoid{}, a, Descriptor{.transpose_a = true}),
                      DimensionMismatch);
    REQUIRE_THROWS_AS(reduce(w3, m2, no_accum, plus_monoid{}, a), DimensionMismatch);
    REQUIRE_THROWS_WITH(reduce(w3, m2, no_accum, plus_monoid{}, a), Contains("mask has size 2"));
    REQUIRE_NOTHROW(reduce(w4, no_mask, no_accum, plus_monoid{}, a, Descriptor{.transpose_a = true}));
}

// ---------------------------------------------------------------------------------------------------------
// Determinism across thread counts.

TEST_CASE("mxv, vxm and reduce give bit-identical results with one thread and with all threads",
          "[mxv][reduce][determinism]") {
    ref::Gen g(61);
    const Index m = 60000, n = 50000;
    std::vector<Index> r, c;
    std::vector<double> v;
    for (Index i = 0; i < m; ++i) {
        Index d = g.uniform(0, 15) == 0 ? 200 : g.uniform(0, 8);
        for (Index x = 0; x < d; ++x) {
            r.push_back(i);
            c.push_back(g.uniform(0, n - 1));
            v.push_back(g.real() - 0.3);
        }
    }
    const Matrix<double> a = Matrix<double>::from_tuples(m, n, r, c, v);
    const Vector<double> ud = random_real_vector(g, n, n / 2);
    const Vector<double> vd = random_real_vector(g, m, m / 2);
    const Vector<double> frontier = random_real_vector(g, m, 20);
    auto run = [&] {
        std::vector<Vector<double>> out(5);
        out[0] = Vector<double>(m);
        mxv(out[0], no_mask, no_accum, plus_times{}, a, ud);
        out[1] = Vector<double>(n);
        vxm(out[1], no_mask, no_accum, plus_times{}, vd, a);
        out[2] = Vector<double>(n);
        vxm(out[2], no_mask, no_accum, plus_times{}, frontier, a);  // push
        out[3] = Vector<double>(m);
        reduce(out[3], no_mask, no_accum, plus_monoid{}, a);
        out[4] = Vector<double>(n);
        reduce(out[4], no_mask, no_accum, plus_monoid{}, a, Descriptor{.transpose_a = true});
        std::vector<double> scalars{reduce(plus_monoid{}, a), reduce(plus_monoid{}, ud), reduce(plus_monoid{}, vd)};
        Vector<double> dense = ud;
        dense.to_dense();
        scalars.push_back(reduce(plus_monoid{}, dense));
        return std::make_pair(out, scalars);
    };
    decltype(run()) one;
    {
        tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 1);
        one = run();
    }
    const auto all = run();
    for (std::size_t x = 0; x < one.first.size(); ++x) {
        INFO("vector result " << x);
        REQUIRE(one.first[x].nvals() > 0);
        REQUIRE(identical(one.first[x], all.first[x]));
    }
    for (std::size_t x = 0; x < one.second.size(); ++x) {
        INFO("scalar result " << x);
        REQUIRE(one.second[x] == all.second[x]);
    }
}

// ------------------------------------------------------------------------------------------ dense matrices
namespace {

// Each line (row, or column with transpose_a) of dense A (and B) folded in order: ⊕ of A(i,j), or of
// A(i,j) ⊗ B(i,j); no entry where the line is empty.
template <class Sr, bool Inner, class T>
Dense<T> ref_dense_lines(const DenseMatrix<T>& a, const DenseMatrix<T>& b, bool by_columns) {
    const Index lines = by_columns ? a.ncols() : a.nrows(), len = by_columns ? a.nrows() : a.ncols();
    Dense<T> w(lines, 1);
    for (Index o = 0; o < lines; ++o)
        for (Index x = 0; x < len; ++x) {
            const Index i = by_columns ? x : o, j = by_columns ? o : x;
            const T t = Inner ? Sr::template multiply<T>(a(i, j), b(i, j)) : a(i, j);
            w(o, 0) = w(o, 0) ? Sr::template add<T>(*w(o, 0), t) : t;
        }
    return w;
}

// reduce and inner on dense matrices, by rows and by columns, with every mask form and an accumulator:
// shapes without rows or columns (nothing to reduce: w gets no entries), 1, odd, and past the GPU's chunks of
// rows (several partial results per column; beyond 65536 rows chunks of more than 64 rows, and more chunks than
// the fold's 256 threads).
template <class Sr, class T, class Accum = NoAccum>
void check_dense_lines(std::uint64_t seed, Accum accum = {}) {
    ref::Gen g(seed);
    auto shapes = g.shapes();
    for (std::pair<Index, Index> big : {std::pair<Index, Index>{3001, 5}, {700, 64}, {3, 300}, {270001, 2}})
        if ((!ref::Gen::quick() || big.first < 1000) && ref::in_shard()) shapes.push_back(big);  // quick: sanitizers
    for (auto [m, n] : shapes) {
        const DenseMatrix<T> a0 = ref::random_dense<T>(g, m, n), b0 = ref::random_dense<T>(g, m, n);
        const DenseMatrix<T> a = a0.to(default_context()), b = b0.to(default_context());
        for (int ta = 0; ta < 2; ++ta) {
            const Index lines = ta ? n : m;
            const Dense<T> w0 = g.template vector<T>(lines, 0.4);
            const Dense<bool> m0 = g.template vector<bool>(lines, vector_densities[g.uniform(0, 3)]);
            const Vector<bool> mask = ref::to_vector(m0);
            for (int form = 0; form < 2; ++form) {
                const Dense<T> t = form ? ref_dense_lines<Sr, true>(a0, b0, ta) : ref_dense_lines<Sr, false>(a0, b0, ta);
                auto run = [&](Vector<T>& w, const auto& mk, const Descriptor& d) {
                    if (form) inner(w, mk, accum, Sr{}, a, b, d);
                    else reduce(w, mk, accum, typename Sr::add_monoid{}, a, d);
                };
                INFO("seed " << seed << ", " << m << "x" << n << (form ? " inner" : " reduce") << ", tA=" << ta);
                Descriptor d;
                d.transpose_a = ta;
                Vector<T> w = ref::to_vector(w0);
                run(w, no_mask, d);
                REF_REQUIRE_SAME(ref::to_dense(w), ref::write_back(w0, t, (const Dense<bool>*)nullptr, accum, d), tol<T>());
                for (const Descriptor& dm : mask_descriptors(ta)) {
                    INFO(describe(dm));
                    Vector<T> wm = ref::to_vector(w0);
                    run(wm, mask, dm);
                    REF_REQUIRE_SAME(ref::to_dense(wm), ref::write_back(w0, t, &m0, accum, dm), tol<T>());
                }
            }
        }
    }
}

}  // namespace

TEST_CASE("reduce and inner on dense matrices, by rows and by columns, against the fold of each line",
          "[reduce][inner][dense]") {
    check_dense_lines<plus_times, double>(81);
    check_dense_lines<semiring<plus_monoid, absdiff_op>, double>(82, plus_op{});
    check_dense_lines<plus_times, float>(83);
    check_dense_lines<min_plus, std::int64_t>(84, min_op{});
    check_dense_lines<max_times, std::int32_t>(85);
    check_dense_lines<lor_land, bool>(86);
}

TEST_CASE("reduce and inner on dense matrices: shapes that do not fit throw DimensionMismatch",
          "[reduce][inner][dense][errors]") {
    using Catch::Matchers::Contains;
    const DenseMatrix<double> a(4, 3, 1.0), b(4, 2, 1.0);
    Vector<double> w4(4), w3(3);
    REQUIRE_THROWS_AS(reduce(w3, no_mask, no_accum, plus_monoid{}, a), DimensionMismatch);
    REQUIRE_THROWS_WITH(reduce(w3, no_mask, no_accum, plus_monoid{}, a), Contains("size 3") && Contains("4 rows"));
    REQUIRE_THROWS_WITH(reduce(w4, no_mask, no_accum, plus_monoid{}, a, Descriptor{.transpose_a = true}),
                        Contains("size 4") && Contains("3 columns"));
    REQUIRE_THROWS_AS(inner(w4, no_mask, no_accum, plus_times{}, a, b), DimensionMismatch);
    REQUIRE_THROWS_WITH(inner(w4, no_mask, no_accum, plus_times{}, a, b), Contains("4x3") && Contains("4x2"));
    CHECK(w4.nvals() == 0);
    reduce(w4, no_mask, no_accum, plus_monoid{}, a);
    CHECK(ref::to_dense(w4).nvals() == 4);
    CHECK(w4.get(2) == 3.0);
}
