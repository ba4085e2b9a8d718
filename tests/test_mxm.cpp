// mxm in its three forms (SpGEMM with and without a mask, SpMM, SDDMM) against brute-force references,
// on random inputs of every shape class; the hash and dense accumulators and the dot and saxpy methods of
// masked SpGEMM; dimension errors; bit-identical results across thread counts; triangle counts of real graphs.
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <tbb/global_control.h>

#include "io/matrix_market.hpp"
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
    os << "tA=" << d.transpose_a << " tB=" << d.transpose_b << " comp=" << d.mask_complement
       << " struct=" << d.mask_structure << " replace=" << d.replace;
    return os.str();
}

// The eight mask descriptors (complement x structure x replace) on top of the given transposes.
std::vector<Descriptor> mask_descriptors(bool ta, bool tb) {
    std::vector<Descriptor> out;
    for (int bits = 0; bits < 8; ++bits) {
        Descriptor d;
        d.transpose_a = ta;
        d.transpose_b = tb;
        d.mask_complement = bits & 1;
        d.mask_structure = bits & 2;
        d.replace = bits & 4;
        out.push_back(d);
    }
    return out;
}

// A ⊕.⊗ B (no transposes: the caller passes op(A), op(B)): C(i,j) = ⊕ over k with both A(i,k) and B(k,j) of
// A(i,k) ⊗ B(k,j), in increasing k, in C's type; present iff at least one term.
template <class Sr, class TC, class TA, class TB>
Dense<TC> ref_mxm(const Dense<TA>& a, const Dense<TB>& b) {
    Dense<TC> c(a.nrows, b.ncols);
    for (Index i = 0; i < a.nrows; ++i)
        for (Index j = 0; j < b.ncols; ++j) {
            std::optional<TC> acc;
            for (Index k = 0; k < a.ncols; ++k)
                if (a(i, k) && b(k, j)) {
                    TC t = Sr::template multiply<TC>(TC(*a(i, k)), TC(*b(k, j)));
                    acc = acc ? Sr::template add<TC>(*acc, t) : t;
                }
            c(i, j) = acc;
        }
    return c;
}

// Random operand densities: empty, very sparse, moderate, half full.
constexpr double densities[] = {0.0, 0.05, 0.2, 0.5};
// Mask densities: very sparse (dot method) to full (saxpy method).
constexpr double mask_densities[] = {0.01, 0.04, 0.2, 1.0};
// Inner dimensions: empty, one, odd, larger than most outer ones.
constexpr Index inner_dims[] = {0, 1, 5, 23};

// C<M> accum= op(A) ⊕.⊗ op(B) over every shape class, transpose combination and mask descriptor, with and
// without a mask; C starts non-empty so that accumulation and the mask's keep/replace rule both matter.
// Unmasked = false skips the calls without a mask (one instantiation of the SpGEMM stack less: the semiring
// code is the same, and a complemented empty mask still runs the unrestricted saxpy rows).
template <class Sr, class TC, class Accum = NoAccum, class MT = TC, bool Unmasked = true>
void check_mxm_random(std::uint64_t seed, Accum accum = {}) {
    ref::Gen g(seed);
    for (auto [m, n] : g.shapes())
        for (Index k : inner_dims) {
            const double da = densities[g.uniform(0, 3)], db = densities[g.uniform(0, 3)];
            const double dm = mask_densities[g.uniform(0, 3)];
            const bool skew = g.uniform(0, 1);
            const Dense<TC> a0 = g.template matrix<TC>(m, k, da, skew);  // op(A)
            const Dense<TC> b0 = g.template matrix<TC>(k, n, db, skew);  // op(B)
            const Dense<TC> c0 = g.template matrix<TC>(m, n, 0.3);
            const Dense<MT> m0 = g.template matrix<MT>(m, n, dm, skew);
            const Dense<TC> t = ref_mxm<Sr, TC>(a0, b0);
            const Matrix<MT> mask = ref::to_matrix(m0);
            for (int ta = 0; ta < 2; ++ta)
                for (int tb = 0; tb < 2; ++tb) {
                    const Matrix<TC> a = ref::to_matrix(ta ? ref::transpose(a0) : a0);
                    const Matrix<TC> b = ref::to_matrix(tb ? ref::transpose(b0) : b0);
                    INFO("seed " << seed << ", op(A) " << m << "x" << k << " density " << da << ", op(B) " << k << "x"
                                 << n << " density " << db << ", mask density " << dm);
                    if constexpr (Unmasked) {
                        Descriptor d;
                        d.transpose_a = ta;
                        d.transpose_b = tb;
                        INFO("no mask, " << describe(d));
                        Matrix<TC> c = ref::to_matrix(c0);
                        mxm(c, no_mask, accum, Sr{}, a, b, d);
                        REF_REQUIRE_SAME(ref::to_dense(c), ref::write_back(c0, t, (const Dense<MT>*)nullptr, accum, d),
                                         tol<TC>());
                    }
                    for (const Descriptor& d : mask_descriptors(ta, tb)) {
                        INFO("mask, " << describe(d));
                        Matrix<TC> c = ref::to_matrix(c0);
                        mxm(c, mask, accum, Sr{}, a, b, d);
                        REF_REQUIRE_SAME(ref::to_dense(c), ref::write_back(c0, t, &m0, accum, d), tol<TC>());
                    }
                }
        }
}

// ---------------------------------------------------------------------------------------------------------
// A sparse reference for matrices too wide for the dense model: rows as ordered maps.

template <class T>
struct Sparse {
    Index nrows = 0, ncols = 0;
    std::vector<std::map<Index, T>> rows;
    Sparse(Index m, Index n) : nrows(m), ncols(n), rows(m) {}
    Index nvals() const {
        Index s = 0;
        for (auto& r : rows) s += r.size();
        return s;
    }
};

template <class T>
Matrix<T> to_matrix(const Sparse<T>& s) {
    std::vector<Index> r, c;
    std::vector<T> v;
    for (Index i = 0; i < s.nrows; ++i)
        for (auto [j, x] : s.rows[i]) {
            r.push_back(i);
            c.push_back(j);
            v.push_back(x);
        }
    return Matrix<T>::from_tuples(s.nrows, s.ncols, r, c, v);
}
template <class T>
Sparse<T> transpose(const Sparse<T>& s) {
    Sparse<T> t(s.ncols, s.nrows);
    for (Index i = 0; i < s.nrows; ++i)
        for (auto [j, x] : s.rows[i]) t.rows[j].emplace(i, x);
    return t;
}
template <class Sr, class T>
Sparse<T> sparse_mxm(const Sparse<T>& a, const Sparse<T>& b) {
    Sparse<T> c(a.nrows, b.ncols);
    for (Index i = 0; i < a.nrows; ++i) {
        auto& row = c.rows[i];
        for (auto [k, x] : a.rows[i])  // increasing k: the reference evaluation order
            for (auto [j, y] : b.rows[k]) {
                T t = Sr::template multiply<T>(x, y);
                auto it = row.find(j);
                if (it == row.end()) row.emplace(j, t);
                else it->second = Sr::template add<T>(it->second, t);
            }
    }
    return c;
}
// C<M, replace> accum= T on the sparse model, as ref::write_back does on the dense one.
template <class T, class M, class Accum>
Sparse<T> sparse_write_back(const Sparse<T>& c, const Sparse<T>& t, const Sparse<M>* mask, Accum accum,
                            const Descriptor& d) {
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    Sparse<T> out(c.nrows, c.ncols);
    for (Index i = 0; i < c.nrows; ++i) {
        std::set<Index> cols;
        for (auto& e : c.rows[i]) cols.insert(e.first);
        for (auto& e : t.rows[i]) cols.insert(e.first);
        for (Index j : cols) {
            auto ci = c.rows[i].find(j);
            auto ti = t.rows[i].find(j);
            const bool hc = ci != c.rows[i].end(), ht = ti != t.rows[i].end();
            bool allowed = true;
            if (mask) {
                auto mi = mask->rows[i].find(j);
                bool v = mi != mask->rows[i].end() && (d.mask_structure || mi->second != M(0));
                allowed = v != d.mask_complement;
            }
            if (allowed) {
                if constexpr (has_accum) {
                    if (hc && ht) out.rows[i].emplace(j, accum(ci->second, ti->second));
                    else if (hc) out.rows[i].emplace(j, ci->second);
                    else out.rows[i].emplace(j, ti->second);
                } else if (ht) {
                    out.rows[i].emplace(j, ti->second);
                }
            } else if (!d.replace && hc) {
                out.rows[i].emplace(j, ci->second);
            }
        }
    }
    return out;
}
// The expected result as row-major tuples, compared against a Matrix without building maps per call.
template <class T>
struct Flat {
    std::vector<Index> r, c;
    std::vector<T> v;
};
template <class T>
Flat<T> flatten(const Sparse<T>& s) {
    Flat<T> f;
    for (Index i = 0; i < s.nrows; ++i)
        for (auto [j, x] : s.rows[i]) {
            f.r.push_back(i);
            f.c.push_back(j);
            f.v.push_back(x);
        }
    return f;
}
template <class T>
std::string flat_diff(const Matrix<T>& got, const Flat<T>& want, double rel) {
    Flat<T> g;
    got.extract_tuples(g.r, g.c, g.v);
    const std::size_t n = std::min(g.r.size(), want.r.size());
    std::ostringstream os;
    for (std::size_t x = 0; x < n; ++x)
        if (g.r[x] != want.r[x] || g.c[x] != want.c[x] || !ref::close(g.v[x], want.v[x], rel)) {
            os << "entry " << x << ": got (" << g.r[x] << ", " << g.c[x] << ") = " << +g.v[x] << ", expected ("
               << want.r[x] << ", " << want.c[x] << ") = " << +want.v[x];
            return os.str();
        }
    if (g.r.size() != want.r.size()) os << "got " << g.r.size() << " entries, expected " << want.r.size();
    return os.str();
}
#define FLAT_REQUIRE_SAME(got, want, rel)      \
    do {                                       \
        auto _d = flat_diff(got, want, rel);   \
        INFO(_d);                              \
        REQUIRE(_d.empty());                   \
    } while (0)

// A random m x n matrix with `deg` entries in most rows and `heavy_deg` in a fraction `heavy` of them.
template <class T>
Sparse<T> random_sparse(ref::Gen& g, Index m, Index n, Index deg, double heavy, Index heavy_deg) {
    Sparse<T> s(m, n);
    for (Index i = 0; i < m; ++i) {
        Index d = g.real() < heavy ? heavy_deg : g.uniform(0, 2 * deg);
        for (Index x = 0; x < d; ++x) s.rows[i].emplace(g.uniform(0, n - 1), g.template value<T>());
    }
    return s;
}

// A mask that hits the product: a random part of t's pattern plus random columns; a fraction of rows is heavy.
template <class MT, class T>
Sparse<MT> mask_over(ref::Gen& g, const Sparse<T>& t, double keep, Index noise, double heavy, Index heavy_deg) {
    Sparse<MT> s(t.nrows, t.ncols);
    for (Index i = 0; i < t.nrows; ++i) {
        for (auto& e : t.rows[i])
            if (g.real() < keep) s.rows[i].emplace(e.first, g.template value<MT>());
        Index extra = g.real() < heavy ? heavy_deg : g.uniform(0, noise);
        for (Index x = 0; x < extra; ++x) s.rows[i].emplace(g.uniform(0, t.ncols - 1), g.template value<MT>());
    }
    return s;
}

// Wide products (ncols > 4096) so that light rows take the hash accumulator and heavy rows the dense one,
// with masks that are very sparse (dot method, hash in allow mode) or mixed (saxpy; forbid mode when
// complemented).
template <class Sr, class T, class Accum = NoAccum>
void check_mxm_wide(std::uint64_t seed, Index m, Index k, Index n, Accum accum = {}) {
    ref::Gen g(seed);
    const Sparse<T> a0 = random_sparse<T>(g, m, k, 3, 0.02, 400);
    const Sparse<T> b0 = random_sparse<T>(g, k, n, 4, 0.01, 2000);
    const Sparse<T> c0 = random_sparse<T>(g, m, n, 3, 0.05, 1500);
    const Sparse<T> t = sparse_mxm<Sr>(a0, b0);
    REQUIRE(t.nvals() > 0);
    // A very sparse mask (a few product entries: dot method) and a mixed one (saxpy; heavy rows take the dense
    // accumulator, light ones the hash table).
    const Sparse<T> masks[] = {mask_over<T>(g, t, 0.05, 1, 0.0, 0), mask_over<T>(g, t, 0.5, 20, 0.1, 3000)};
    const Matrix<T> mask_matrices[] = {to_matrix(masks[0]), to_matrix(masks[1])};
    // The expected results do not depend on the transposes: computed once per mask and descriptor.
    const Flat<T> want_unmasked = flatten(sparse_write_back(c0, t, (const Sparse<T>*)nullptr, accum, Descriptor{}));
    std::vector<Flat<T>> want_masked[2];
    for (int which = 0; which < 2; ++which)
        for (const Descriptor& d : mask_descriptors(false, false))
            want_masked[which].push_back(flatten(sparse_write_back(c0, t, &masks[which], accum, d)));
    const Matrix<T> c_init = to_matrix(c0);
    for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb) {
            const Matrix<T> a = to_matrix(ta ? transpose(a0) : a0);
            const Matrix<T> b = to_matrix(tb ? transpose(b0) : b0);
            INFO("seed " << seed << ", " << m << "x" << k << " * " << k << "x" << n);
            {
                Descriptor d;
                d.transpose_a = ta;
                d.transpose_b = tb;
                INFO("no mask, " << describe(d));
                Matrix<T> c = c_init;
                mxm(c, no_mask, accum, Sr{}, a, b, d);
                FLAT_REQUIRE_SAME(c, want_unmasked, tol<T>());
            }
            for (int which = 0; which < 2; ++which) {
                const auto descs = mask_descriptors(ta, tb);
                for (std::size_t x = 0; x < descs.size(); ++x) {
                    INFO((which ? "mixed" : "sparse") << " mask, " << describe(descs[x]));
                    Matrix<T> c = c_init;
                    mxm(c, mask_matrices[which], accum, Sr{}, a, b, descs[x]);
                    FLAT_REQUIRE_SAME(c, want_masked[which][x], tol<T>());
                }
            }
        }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// SpGEMM, random inputs.

// Each (semiring, type, mask type) instantiates the whole SpGEMM stack, so the combinations are few and
// spread: every listed semiring once, every type several times, the accumulators on the pairs that the
// algorithms use; the rarer ones run masked only (their complemented calls cover unrestricted saxpy rows).
TEST_CASE("mxm plus_times against the reference", "[mxm][spgemm]") {
    for (std::uint64_t seed : {1, 2, 3}) {
        check_mxm_random<plus_times, double>(seed);
        check_mxm_random<plus_times, std::int64_t, NoAccum, std::int64_t, false>(seed + 10);
        check_mxm_random<plus_times, float, NoAccum, float, false>(seed + 30);
    }
}

TEST_CASE("mxm with accumulators", "[mxm][spgemm][accum]") {
    for (std::uint64_t seed : {4, 5}) {
        check_mxm_random<plus_times, double>(seed, plus_op{});
        check_mxm_random<plus_times, double, second_op, double, false>(seed + 10);
        check_mxm_random<min_plus, std::int64_t>(seed + 20, min_op{});
    }
}

TEST_CASE("mxm min_plus, max_plus, max_times, min_times, max_min against the reference", "[mxm][spgemm]") {
    for (std::uint64_t seed : {6, 7, 8}) {
        check_mxm_random<min_plus, std::int64_t>(seed);
        check_mxm_random<max_plus, double, NoAccum, double, false>(seed + 10);
        check_mxm_random<max_times, std::int32_t, NoAccum, bool, false>(seed + 20);  // a mask of another type
        check_mxm_random<min_times, double, NoAccum, double, false>(seed + 30);
        check_mxm_random<max_min, std::int64_t, NoAccum, std::int64_t, false>(seed + 40);
    }
}

TEST_CASE("mxm lor_land on bool against the reference", "[mxm][spgemm]") {
    for (std::uint64_t seed : {11, 12, 13}) check_mxm_random<lor_land, bool>(seed);
}

TEST_CASE("mxm pair, first and second semirings against the reference", "[mxm][spgemm]") {
    for (std::uint64_t seed : {14, 15}) {
        check_mxm_random<plus_pair, std::int64_t>(seed);
        check_mxm_random<plus_first, double, NoAccum, double, false>(seed + 20);
        check_mxm_random<plus_second, std::int64_t, NoAccum, std::int64_t, false>(seed + 30);
        check_mxm_random<min_first, std::int32_t, NoAccum, std::int32_t, false>(seed + 40);
        check_mxm_random<min_second, double, NoAccum, double, false>(seed + 50);
        // any_pair: every term is 1, so the result is 1 wherever a term exists whichever term is kept.
        check_mxm_random<any_pair, std::int64_t>(seed + 60);
    }
}

TEST_CASE("mxm any_second keeps one of the terms", "[mxm][spgemm][any]") {
    // Terms of C(i,j) are B(k,j) for the k that A(i,:) and B(:,j) share; make every B value distinct per column
    // so that membership says something.
    for (std::uint64_t seed : {16, 17, 18}) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes())
            for (Index k : inner_dims) {
                Dense<std::int64_t> a0 = g.matrix<std::int64_t>(m, k, densities[g.uniform(1, 3)], true);
                Dense<std::int64_t> b0 = g.matrix<std::int64_t>(k, n, densities[g.uniform(1, 3)], true);
                for (Index x = 0; x < k; ++x)
                    for (Index j = 0; j < n; ++j)
                        if (b0(x, j)) b0(x, j) = std::int64_t(1000 * x + j);
                const Dense<std::int64_t> m0 = g.matrix<std::int64_t>(m, n, mask_densities[g.uniform(0, 3)]);
                const Matrix<std::int64_t> mask = ref::to_matrix(m0);
                for (int tb = 0; tb < 2; ++tb)
                    for (int masked = 0; masked < 2; ++masked) {
                        INFO("seed " << seed << " " << m << "x" << k << "x" << n << " tB=" << tb << " masked=" << masked);
                        Descriptor d;
                        d.transpose_b = tb;
                        const Matrix<std::int64_t> a = ref::to_matrix(a0);
                        const Matrix<std::int64_t> b = ref::to_matrix(tb ? ref::transpose(b0) : b0);
                        Matrix<std::int64_t> c(m, n);
                        // Unmasked: a complemented empty mask (one instantiation of the SpGEMM stack less).
                        if (masked) {
                            mxm(c, mask, no_accum, any_second{}, a, b, d);
                        } else {
                            d.mask_complement = true;
                            mxm(c, Matrix<std::int64_t>(m, n), no_accum, any_second{}, a, b, d);
                        }
                        const Dense<std::int64_t> got = ref::to_dense(c);
                        for (Index i = 0; i < m; ++i)
                            for (Index j = 0; j < n; ++j) {
                                std::set<std::int64_t> terms;
                                for (Index x = 0; x < k; ++x)
                                    if (a0(i, x) && b0(x, j)) terms.insert(*b0(x, j));
                                const bool allowed = !masked || (m0(i, j) && *m0(i, j) != 0);
                                INFO("at (" << i << ", " << j << ")");
                                REQUIRE(got(i, j).has_value() == (allowed && !terms.empty()));
                                if (got(i, j)) REQUIRE(terms.count(*got(i, j)) == 1);
                            }
                    }
            }
    }
}

TEST_CASE("mxm with operands of other types casts them to C's type", "[mxm][spgemm]") {
    ref::Gen g(19);
    for (auto [m, n] : g.shapes())
        for (Index k : inner_dims) {
            const Dense<std::int32_t> a0 = g.matrix<std::int32_t>(m, k, 0.3, true);
            const Dense<float> b0 = g.matrix<float>(k, n, 0.3);
            const Dense<double> c0 = g.matrix<double>(m, n, 0.2);
            Matrix<double> c = ref::to_matrix(c0);
            mxm(c, no_mask, no_accum, plus_times{}, ref::to_matrix(a0), ref::to_matrix(b0));
            REF_REQUIRE_SAME(ref::to_dense(c), (ref_mxm<plus_times, double>(a0, b0)));
        }
}

TEST_CASE("mxm C = A*A in place of an operand", "[mxm][spgemm]") {
    // The output aliases both inputs: the product must be formed before C is overwritten.
    ref::Gen g(21);
    const Dense<double> a0 = g.matrix<double>(30, 30, 0.2);
    Matrix<double> a = ref::to_matrix(a0);
    mxm(a, no_mask, no_accum, plus_times{}, a, a);
    REF_REQUIRE_SAME(ref::to_dense(a), (ref_mxm<plus_times, double>(a0, a0)));
    Matrix<double> b = ref::to_matrix(a0);
    mxm(b, b, plus_op{}, plus_times{}, b, b, Descriptor{.transpose_b = true});
    const Dense<double> t = ref_mxm<plus_times, double>(a0, ref::transpose(a0));
    REF_REQUIRE_SAME(ref::to_dense(b), ref::write_back(a0, t, &a0, plus_op{}, Descriptor{.transpose_b = true}));
}

// ---------------------------------------------------------------------------------------------------------
// SpGEMM, wide matrices: the hash accumulator.

TEST_CASE("mxm on wide matrices (hash accumulator) against a sparse reference", "[mxm][spgemm][hash]") {
    check_mxm_wide<plus_times, double>(31, 300, 3000, 20000);
    check_mxm_wide<plus_times, double>(32, 200, 2000, 50000, plus_op{});
    check_mxm_wide<min_plus, std::int64_t>(33, 250, 1500, 12000);
    check_mxm_wide<plus_pair, std::int64_t>(34, 150, 1000, 10000);
}

// ---------------------------------------------------------------------------------------------------------
// SpMM: DenseMatrix C accum= op(A) ⊕.⊗ op(B), B dense.

namespace {

// Dense test matrices live in host memory (filled and read there); operations get a copy in the default
// context (on_default) and results are copied back (ref::to_dense, on_host).
template <class T>
DenseMatrix<T> on_default(const DenseMatrix<T>& d) {
    return d.to(default_context());
}
template <class T>
DenseMatrix<T> on_host(const DenseMatrix<T>& d) {
    return d.to(Context::cpu());
}
using ref::dense_transpose;
using ref::random_dense;

// C accum= A ⊕.⊗ B by definition: rows without entries give the identity; others fold the identity with the
// terms in increasing k.
template <class Sr, class T, class Accum>
Dense<T> spmm_reference(const Dense<T>& a0, const DenseMatrix<T>& b0, const DenseMatrix<T>& c0, Accum accum) {
    Dense<T> want(a0.nrows, b0.ncols());
    for (Index i = 0; i < a0.nrows; ++i)
        for (Index j = 0; j < b0.ncols(); ++j) {
            T acc = Sr::template zero<T>();
            for (Index x = 0; x < a0.ncols; ++x)
                if (a0(i, x)) acc = Sr::template add<T>(acc, Sr::template multiply<T>(*a0(i, x), b0(x, j)));
            if constexpr (std::is_same_v<Accum, NoAccum>) want(i, j) = acc;
            else want(i, j) = accum(c0(i, j), acc);
        }
    return want;
}

template <class Sr, class T, class Accum = NoAccum>
void check_spmm(std::uint64_t seed, Accum accum = {}) {
    ref::Gen g(seed);
    for (auto [m, k] : g.shapes())
        // Widths around the GPU's forms: 8 lanes per row up to 8 columns, a warp with 1, 2 or 4 columns per lane
        // above, panels of 128 columns beyond; plus_times from 64 columns with vector loads when the width allows
        // (16 lanes for 64 floats, panels of 128 or 256).
        for (Index n : {Index(0), Index(1), Index(3), Index(8), Index(9), Index(33), Index(64), Index(65), Index(130),
                        Index(132), Index(264)}) {
            const double da = densities[g.uniform(0, 3)];
            const Dense<T> a0 = g.template matrix<T>(m, k, da, true);  // op(A), with empty rows
            const DenseMatrix<T> b0 = random_dense<T>(g, k, n);          // op(B)
            const DenseMatrix<T> c0 = random_dense<T>(g, m, n);
            const Dense<T> want = spmm_reference<Sr>(a0, b0, c0, accum);
            for (int ta = 0; ta < 2; ++ta)
                for (int tb = 0; tb < 2; ++tb) {
                    INFO("seed " << seed << ", op(A) " << m << "x" << k << " density " << da << ", width " << n
                                 << ", tA=" << ta << " tB=" << tb);
                    const Matrix<T> a = ref::to_matrix(ta ? ref::transpose(a0) : a0);
                    const DenseMatrix<T> b = on_default(tb ? dense_transpose(b0) : b0);
                    DenseMatrix<T> c = on_default(c0);
                    Descriptor d;
                    d.transpose_a = ta;
                    d.transpose_b = tb;
                    mxm(c, no_mask, accum, Sr{}, a, b, d);
                    REF_REQUIRE_SAME(ref::to_dense(c), want, tol<T>());
                }
        }
}

// SDDMM: C<M> accum= op(A) ⊕.⊗ op(B), A and B dense: every term exists, so T(i,j) exists iff k > 0.
template <class Sr, class T, class MT, class Accum = NoAccum>
void check_sddmm(std::uint64_t seed, Accum accum = {}) {
    ref::Gen g(seed);
    for (auto [m, n] : g.shapes())
        for (Index k : {Index(0), Index(1), Index(4), Index(17)}) {
            const DenseMatrix<T> a0 = random_dense<T>(g, m, k);  // op(A)
            const DenseMatrix<T> b0 = random_dense<T>(g, k, n);  // op(B)
            const double dm = mask_densities[g.uniform(0, 3)];
            const Dense<MT> m0 = g.template matrix<MT>(m, n, dm, true);
            const Dense<T> c0 = g.template matrix<T>(m, n, 0.3);
            Dense<T> t(m, n);
            if (k > 0)
                for (Index i = 0; i < m; ++i)
                    for (Index j = 0; j < n; ++j) {
                        T acc = Sr::template multiply<T>(a0(i, 0), b0(0, j));
                        for (Index x = 1; x < k; ++x)
                            acc = Sr::template add<T>(acc, Sr::template multiply<T>(a0(i, x), b0(x, j)));
                        t(i, j) = acc;
                    }
            const Matrix<MT> mask = ref::to_matrix(m0);
            for (int ta = 0; ta < 2; ++ta)
                for (int tb = 0; tb < 2; ++tb) {
                    const DenseMatrix<T> a = on_default(ta ? dense_transpose(a0) : a0);
                    const DenseMatrix<T> b = on_default(tb ? dense_transpose(b0) : b0);
                    for (const Descriptor& d : mask_descriptors(ta, tb)) {
                        INFO("seed " << seed << ", " << m << "x" << k << "x" << n << ", mask density " << dm << ", "
                                     << describe(d));
                        Matrix<T> c = ref::to_matrix(c0);
                        if (d.mask_complement) {
                            REQUIRE_THROWS_AS(mxm(c, mask, accum, Sr{}, a, b, d), InvalidValue);
                            continue;
                        }
                        mxm(c, mask, accum, Sr{}, a, b, d);
                        REF_REQUIRE_SAME(ref::to_dense(c), ref::write_back(c0, t, &m0, accum, d), tol<T>());
                    }
                }
        }
}

// Rows longer than the GPU kernel's pieces of 32 entries are summed piece by piece and combined in order (by eight
// runs of pieces): rows of 31 to 1500 entries (1 to 47 pieces) starting at different offsets of the entry array,
// between short and empty rows, and a matrix of a single long row. Both operand orders: a long row of A, and (transpose_a) a long column.
template <class Sr, class T, class Accum = NoAccum>
void check_spmm_long_rows(std::uint64_t seed, Accum accum = {}) {
    ref::Gen g(seed);
    std::mt19937_64 rng(seed);
    const Index k = 1600;
    std::vector<Index> all(k);
    for (Index x = 0; x < k; ++x) all[x] = x;
    for (const std::vector<Index>& lengths :
         {std::vector<Index>{1500}, std::vector<Index>{3, 255, 0, 256, 257, 7, 600, 0, 1, 1500, 2, 513, 1024, 31, 32, 33, 64, 65, 200, 288}}) {
        const Index m = lengths.size();
        Dense<T> a0(m, k);
        for (Index i = 0; i < m; ++i) {
            std::shuffle(all.begin(), all.end(), rng);
            for (Index p = 0; p < lengths[i]; ++p) a0(i, all[p]) = g.template value<T>();
        }
        for (Index n : {Index(1), Index(3), Index(33), Index(64), Index(130), Index(132)}) {
            const DenseMatrix<T> b0 = random_dense<T>(g, k, n);
            const DenseMatrix<T> c0 = random_dense<T>(g, m, n);
            const Dense<T> want = spmm_reference<Sr>(a0, b0, c0, accum);
            for (int ta = 0; ta < 2; ++ta) {
                INFO("seed " << seed << ", " << m << " rows of up to 1500 entries, width " << n << ", tA=" << ta);
                DenseMatrix<T> c = on_default(c0);
                mxm(c, no_mask, accum, Sr{}, ref::to_matrix(ta ? ref::transpose(a0) : a0), on_default(b0),
                    Descriptor{.transpose_a = bool(ta)});
                REF_REQUIRE_SAME(ref::to_dense(c), want, tol<T>());
            }
        }
    }
}

}  // namespace

TEST_CASE("SpMM: rows longer than the GPU's pieces are split and combined in order", "[mxm][spmm]") {
    check_spmm_long_rows<plus_times, double>(61);
    check_spmm_long_rows<plus_times, std::int64_t>(62, plus_op{});
    check_spmm_long_rows<min_plus, std::int64_t>(63);
    check_spmm_long_rows<max_times, float>(64);
    check_spmm_long_rows<plus_times, float>(65, plus_op{});
    check_spmm_long_rows<plus_times, double>(66, times_op{});
}

TEST_CASE("SpMM: sparse times dense against the reference", "[mxm][spmm]") {
    for (std::uint64_t seed : {41, 42}) {
        check_spmm<plus_times, double>(seed);
        check_spmm<plus_times, double>(seed + 10, plus_op{});
        check_spmm<plus_times, float>(seed + 20);
        check_spmm<min_plus, std::int64_t>(seed + 40);
        check_spmm<min_plus, std::int64_t>(seed + 50, min_op{});
    }
}

// With an accumulator the GPU computes in place; rows of A without entries are then skipped only where the
// identity changes nothing (x ⊕ 0 = x): the add monoid's own operator, and for lor/land/lxor only on bool.
TEST_CASE("SpMM with accumulators: the identity of empty rows is accumulated unless it changes nothing",
          "[mxm][spmm][accumulate]") {
    check_spmm<plus_times, double>(71, times_op{});   // c * 0 where A's row is empty
    check_spmm<plus_times, float>(72, minus_op{});
    check_spmm<max_times, double>(73, max_op{});
    check_spmm<lor_land, bool>(74, lor_op{});
    check_spmm<lor_land, std::int32_t>(75, lor_op{});  // lor(5, 0) is 1: not skipped
    check_spmm<min_plus, std::int32_t>(76, max_op{});
}

TEST_CASE("SpMM accumulating into its own dense operand reads B before C changes", "[mxm][spmm][accumulate]") {
    ref::Gen g(77);
    for (Index n : {Index(1), Index(8), Index(40), Index(64), Index(100)}) {
        const Dense<double> a0 = g.matrix<double>(n, n, 0.3, true);
        const DenseMatrix<double> c0 = random_dense<double>(g, n, n);
        const Dense<double> want = spmm_reference<plus_times>(a0, c0, c0, plus_op{});
        DenseMatrix<double> c = on_default(c0);
        mxm(c, no_mask, plus_op{}, plus_times{}, ref::to_matrix(a0), c);
        INFO("n = " << n);
        REF_REQUIRE_SAME(ref::to_dense(c), want, tol<double>());
    }
}

TEST_CASE("SpMM: an empty row of A gives the monoid's identity", "[mxm][spmm]") {
    Matrix<double> a(3, 2);
    a.set(1, 0, 2.0);
    DenseMatrix<double> b(2, 2, 1.5), c(3, 2, -7.0);
    mxm(c, no_mask, no_accum, min_plus{}, a, b);
    CHECK(on_host(c)(0, 0) == std::numeric_limits<double>::infinity());
    CHECK(on_host(c)(1, 1) == 3.5);
    CHECK(on_host(c)(2, 1) == std::numeric_limits<double>::infinity());
    mxm(c, no_mask, no_accum, plus_times{}, a, b);
    CHECK(on_host(c)(0, 0) == 0.0);
    CHECK(on_host(c)(1, 0) == 3.0);
    CHECK(on_host(c)(2, 1) == 0.0);
}

TEST_CASE("SpMM with any_second keeps one of the terms", "[mxm][spmm][any]") {
    ref::Gen g(43);
    for (auto [m, k] : g.shapes()) {
        const Dense<std::int64_t> a0 = g.matrix<std::int64_t>(m, k, 0.3, true);
        DenseMatrix<std::int64_t> b(k, 4, 0, Context::cpu());
        for (Index x = 0; x < k; ++x)
            for (Index j = 0; j < 4; ++j) b(x, j) = std::int64_t(1 + 10 * x + j);  // distinct, non-zero
        DenseMatrix<std::int64_t> cd(m, 4, -1);
        mxm(cd, no_mask, no_accum, any_second{}, ref::to_matrix(a0), on_default(b));
        const DenseMatrix<std::int64_t> c = on_host(cd);
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < 4; ++j) {
                std::set<std::int64_t> terms;
                for (Index x = 0; x < k; ++x)
                    if (a0(i, x)) terms.insert(b(x, j));
                INFO(m << "x" << k << " at (" << i << ", " << j << ")");
                if (terms.empty()) REQUIRE(c(i, j) == any_monoid::identity<std::int64_t>());
                else REQUIRE(terms.count(c(i, j)) == 1);
            }
    }
}

TEST_CASE("SDDMM: dense times dense under a sparse mask against the reference", "[mxm][sddmm]") {
    for (std::uint64_t seed : {51, 52}) {
        check_sddmm<plus_times, double, double>(seed);
        check_sddmm<plus_times, float, bool>(seed + 10, plus_op{});
        check_sddmm<min_plus, std::int64_t, std::int64_t>(seed + 30, min_op{});
    }
}

// ---------------------------------------------------------------------------------------------------------
// Dimension errors: DimensionMismatch naming the shapes.

TEST_CASE("mxm dimension mismatches throw DimensionMismatch naming the shapes", "[mxm][errors]") {
    using Catch::Matchers::Contains;
    Matrix<double> a(3, 4), b(5, 6), b46(4, 6), c36(3, 6), c22(2, 2), m22(2, 2);
    REQUIRE_THROWS_AS(mxm(c36, no_mask, no_accum, plus_times{}, a, b), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c36, no_mask, no_accum, plus_times{}, a, b), Contains("3x4") && Contains("5x6"));
    REQUIRE_THROWS_WITH(mxm(c22, no_mask, no_accum, plus_times{}, a, b46), Contains("2x2") && Contains("3x6"));
    REQUIRE_THROWS_AS(mxm(c22, no_mask, no_accum, plus_times{}, a, b46), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c36, m22, no_accum, plus_times{}, a, b46), Contains("2x2") && Contains("3x6"));
    REQUIRE_THROWS_AS(mxm(c36, m22, no_accum, plus_times{}, a, b46), DimensionMismatch);
    // Transposes are taken into account: Aᵀ is 4x3, which does not fit B (4x6) ...
    REQUIRE_THROWS_AS(mxm(c36, no_mask, no_accum, plus_times{}, a, b46, Descriptor{.transpose_a = true}),
                      DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c36, no_mask, no_accum, plus_times{}, a, b46, Descriptor{.transpose_a = true}),
                        Contains("4x3"));
    // ... and Bᵀ (6x4) does not fit A (3x4), while (5x6)ᵀ with a 4x... no: 3x4 * (6x4)ᵀ = 3x6 fits.
    Matrix<double> b64(6, 4);
    REQUIRE_NOTHROW(mxm(c36, no_mask, no_accum, plus_times{}, a, b64, Descriptor{.transpose_b = true}));
    REQUIRE_THROWS_AS(mxm(c36, no_mask, no_accum, plus_times{}, a, b46, Descriptor{.transpose_b = true}),
                      DimensionMismatch);
    // The failed calls left C alone.
    REQUIRE(c22.nrows() == 2);
    REQUIRE(c22.ncols() == 2);

    // SpMM
    DenseMatrix<double> d46(4, 6), d56(5, 6), e36(3, 6), e22(2, 2);
    REQUIRE_THROWS_AS(mxm(e36, no_mask, no_accum, plus_times{}, a, d56), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(e36, no_mask, no_accum, plus_times{}, a, d56), Contains("3x4") && Contains("5x6"));
    REQUIRE_THROWS_AS(mxm(e22, no_mask, no_accum, plus_times{}, a, d46), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(e22, no_mask, no_accum, plus_times{}, a, d46), Contains("2x2") && Contains("3x6"));
    REQUIRE_NOTHROW(mxm(e36, no_mask, no_accum, plus_times{}, a, d46));

    // SDDMM
    DenseMatrix<double> x34(3, 4);
    Matrix<double> mask36(3, 6), mask22(2, 2);
    REQUIRE_THROWS_AS(mxm(c36, mask36, no_accum, plus_times{}, x34, d56), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c36, mask36, no_accum, plus_times{}, x34, d56), Contains("3x4") && Contains("5x6"));
    REQUIRE_THROWS_AS(mxm(c22, mask36, no_accum, plus_times{}, x34, d46), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c22, mask36, no_accum, plus_times{}, x34, d46), Contains("2x2") && Contains("3x6"));
    REQUIRE_THROWS_AS(mxm(c36, mask22, no_accum, plus_times{}, x34, d46), DimensionMismatch);
    REQUIRE_THROWS_WITH(mxm(c36, mask22, no_accum, plus_times{}, x34, d46), Contains("2x2") && Contains("3x6"));
    REQUIRE_NOTHROW(mxm(c36, mask36, no_accum, plus_times{}, x34, d46));
}

// ---------------------------------------------------------------------------------------------------------
// Determinism: bit-identical results with one thread and with all threads.

namespace {
template <class T>
struct Tuples {
    std::vector<Index> r, c;
    std::vector<T> v;
    bool operator==(const Tuples&) const = default;
};
template <class T>
Tuples<T> tuples(const Matrix<T>& m) {
    Tuples<T> t;
    m.extract_tuples(t.r, t.c, t.v);
    return t;
}
// Values that do not add exactly, so that a different summation order would show.
Matrix<double> random_real_matrix(std::uint64_t seed, Index m, Index n, Index deg) {
    ref::Gen g(seed);
    std::vector<Index> r, c;
    std::vector<double> v;
    for (Index i = 0; i < m; ++i) {
        Index d = g.uniform(0, 7) == 0 ? 10 * deg : g.uniform(0, 2 * deg);
        for (Index x = 0; x < d; ++x) {
            r.push_back(i);
            c.push_back(g.uniform(0, n - 1));
            v.push_back(g.real() * 2 - 0.7);
        }
    }
    return Matrix<double>::from_tuples(m, n, r, c, v);
}
}  // namespace

TEST_CASE("SpGEMM gives bit-identical results with one thread and with all threads", "[mxm][determinism]") {
    const Matrix<double> a = random_real_matrix(61, 3000, 3000, 12);
    const Matrix<double> b = random_real_matrix(62, 3000, 9000, 12);
    const Matrix<double> sparse_mask = random_real_matrix(63, 3000, 9000, 2);
    const Matrix<double> dense_mask = random_real_matrix(64, 3000, 9000, 300);
    auto run = [&] {
        std::vector<Tuples<double>> out;
        Matrix<double> c(3000, 9000);
        mxm(c, no_mask, no_accum, plus_times{}, a, b);
        out.push_back(tuples(c));
        mxm(c, sparse_mask, no_accum, plus_times{}, a, b, Descriptor{.mask_structure = true});  // dot
        out.push_back(tuples(c));
        mxm(c, dense_mask, plus_op{}, plus_times{}, a, b);  // saxpy, masked
        out.push_back(tuples(c));
        Matrix<double> bt = b.transposed();
        Matrix<double> c2(3000, 9000);
        mxm(c2, no_mask, no_accum, plus_times{}, a, bt, Descriptor{.transpose_b = true});
        out.push_back(tuples(c2));
        DenseMatrix<double> x(9000, 5, 0.0, Context::cpu());
        for (Index i = 0; i < 9000; ++i)
            for (Index j = 0; j < 5; ++j) x(i, j) = double(i % 97) / 7.0 - double(j) / 3.0;
        DenseMatrix<double> y(3000, 5);
        mxm(y, no_mask, no_accum, plus_times{}, b, on_default(x));
        Tuples<double> yt;
        const DenseMatrix<double> yh = on_host(y);
        yt.v.assign(yh.data().begin(), yh.data().end());
        out.push_back(yt);
        return out;
    };
    std::vector<Tuples<double>> one;
    {
        tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 1);
        one = run();
    }
    const auto all = run();
    REQUIRE(one.size() == all.size());
    for (std::size_t x = 0; x < one.size(); ++x) {
        INFO("product " << x);
        REQUIRE(one[x].v.size() > 0);
        REQUIRE(one[x] == all[x]);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Known answers on real graphs: triangle counting with masked SpGEMM over plus_pair.

namespace {

// The folder of a dataset: the repository's data/ when it has the file, else the shared data folder.
std::string dataset_file(const std::string& name, const std::string& file) {
    for (std::string dir : {std::string(HYBLA_SOURCE_DIR) + "/data/", std::string(HYBLA_SHARED_DATA_DIR) + "/"}) {
        std::string p = dir + name + "/" + file;
        if (std::ifstream(p).good() && std::ifstream(dir + name + "/truth.txt").good()) return dir + name;
    }
    return {};
}

// The value of "key: value" (or "key=value") in truth.txt, thousands separators removed; -1 if absent.
long long truth_value(const std::string& dir, const std::string& key) {
    std::ifstream in(dir + "/truth.txt");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) != 0 || line.size() <= key.size()) continue;
        char sep = line[key.size()];
        if (sep != ':' && sep != '=') continue;
        std::string v;
        for (char ch : line.substr(key.size() + 1))
            if (ch != ',' && ch != ' ' && ch != '\t' && ch != '\r') v += ch;
        return std::stoll(v);
    }
    return -1;
}

// The strict lower triangle L of the undirected simple graph of a matrix (pattern only: symmetrised, self
// loops and duplicates dropped), as int64 ones.
Matrix<std::int64_t> lower_triangle(const Matrix<double>& a) {
    std::vector<Index> r, c, rr, cc;
    std::vector<double> v;
    a.extract_tuples(r, c, v);
    for (std::size_t x = 0; x < r.size(); ++x)
        if (r[x] != c[x]) {
            rr.push_back(std::max(r[x], c[x]));
            cc.push_back(std::min(r[x], c[x]));
        }
    std::vector<std::int64_t> ones(rr.size(), 1);
    return Matrix<std::int64_t>::from_tuples(a.nrows(), a.ncols(), rr, cc, ones, first_op{});
}

}  // namespace

TEST_CASE("triangle counts of real graphs match their truth files", "[mxm][triangles][data]") {
    const std::pair<const char*, const char*> graphs[] = {
        {"karate", "karate.mtx"},       {"dolphins", "dolphins.mtx"},       {"polbooks", "polbooks.mtx"},
        {"jagmesh7", "jagmesh7.mtx"},   {"west0067", "west0067.mtx"},       {"fs_183_1", "fs_183_1.mtx"},
        {"netscience", "netscience.mtx"}, {"zenios", "zenios.mtx"},         {"mcl_proteins", "proteins.mtx"},
        {"bcsstk13", "bcsstk13.mtx.gz"}, {"cryg2500", "cryg2500.mtx.gz"},
        {"oregon1_010331", "oregon1_010331.mtx.gz"},  // power law: a hub of degree 2312, over 4096 columns
    };
    int checked = 0;
    for (auto [name, file] : graphs) {
        const std::string dir = dataset_file(name, file);
        if (dir.empty()) {
            WARN("dataset " << name << "/" << file << " not found: skipped");
            continue;
        }
        const long long want = truth_value(dir, "triangles");
        INFO(name << ": expected " << want << " triangles");
        REQUIRE(want >= 0);
        const Matrix<double> raw = io::read_matrix_market<double>(dir + "/" + file);
        REQUIRE(raw.nrows() == raw.ncols());
        const Matrix<std::int64_t> l = lower_triangle(raw);
        const Index n = l.nrows();
        std::int64_t total = 0;

        // Sandia: C<L> = L ⊕.⊗ L.
        Matrix<std::int64_t> c(n, n);
        mxm(c, l, no_accum, plus_pair{}, l, l, Descriptor{.mask_structure = true});
        reduce(total, no_accum, plus_monoid{}, c);
        CHECK(total == want);

        // The dot form: C<L> = L ⊕.⊗ Uᵀ with U = Lᵀ given as such and transpose_b.
        const Matrix<std::int64_t> u = l.transposed();
        mxm(c, l, no_accum, plus_pair{}, l, u, Descriptor{.transpose_b = true});
        CHECK(reduce(plus_monoid{}, c) == want);

        // Burkhardt: C<A> = A ⊕.⊗ A on the symmetric A = L + Lᵀ counts every triangle six times.
        Matrix<std::int64_t> a = l;
        {
            std::vector<Index> r, cc, r2, c2;
            std::vector<std::int64_t> v, v2;
            l.extract_tuples(r, cc, v);
            r2 = r;
            r2.insert(r2.end(), cc.begin(), cc.end());
            c2 = cc;
            c2.insert(c2.end(), r.begin(), r.end());
            v2.assign(r2.size(), 1);
            a = Matrix<std::int64_t>::from_tuples(n, n, r2, c2, v2);
        }
        Matrix<std::int64_t> c6(n, n);
        mxm(c6, a, no_accum, plus_pair{}, a, a);
        CHECK(reduce(plus_monoid{}, c6) == 6 * want);
        ++checked;
    }
    REQUIRE(checked > 0);
}
