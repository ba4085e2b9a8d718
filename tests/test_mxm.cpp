// mxm in its three forms (SpGEMM with and without a mask, SpMM, SDDMM) against brute-force references,
// on random inputs of every shape class; the hash and dense accumulators and the dot and saxpy methods of
// masked SpGEMM; dimension errors; bit-identical results across thread counts; triangle counts of real graphs.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include <tbb/global_control.h>

#include "io/matrix_market.hpp"
#include "reference.hpp"
#include "scoped_env.hpp"

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

// Rows longer than the GPU's shares of entries (32 or more a worker) are summed share by share and the partial
// rows combined in order: rows of 31 to 1500 entries starting at different offsets of the entry array, between
// short and empty rows, and a matrix of a single long row. Both operand orders: a long row of A, and (transpose_a) a long column.
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

TEST_CASE("SpMM: rows longer than the GPU's shares are split and combined in order", "[mxm][spmm]") {
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

// ---------------------------------------------------------------------------------------------------------
// SpGEMM on randomized inputs aimed at the GPU's hash-based multi-phase form: rows grouped by their intermediate
// products (the sum over A(i,:) of |B(k,:)|, capped by ncols and by |M(i,:)| for a mask that is not
// complemented) into shared-memory hash tables for at most 16, 128, 512, 2048 and 4096 products and a
// global-memory table above; the ranged-indirect gather; unmasked hub rows by tiles of columns. Every case runs
// under each setting of the kernel's knobs (HYBLA_SPGEMM_MIN_GROUP, HYBLA_SPGEMM_RANGED with HYBLA_SPGEMM_MERGE,
// HYBLA_SPGEMM_HUB with HYBLA_SPGEMM_TILE and HYBLA_SPGEMM_CHUNK), which change nothing in results (floating sums:
// within rounding),
// and once on expand-sort-compress (HYBLA_SPGEMM=esc), on whichever backend the binary uses (the CPU backend
// ignores them), against a sparse reference.

namespace {

using hybla_test::EnvGuard;

// One setting of the SpGEMM knobs; nullptr leaves the variable unset.
struct SpgemmKnobs {
    const char* min_group;  // every non-empty row to this group or higher (5: global tables; 3, 4: block per row)
    const char* ranged;     // the ranged-indirect gather off (0) or on (1); off, each group also its own launch
    const char* hub;        // unmasked rows of more products than this go to tiles (of 100 columns when set)
};

// With a hub setting and the ranged gather on, the hub rows go in chunks of 37 entries of A (each (hub, tile)
// pair's chunks folded in order); otherwise the device's rule chunks them or not.
bool chunked(const SpgemmKnobs& k) { return k.hub && k.ranged && std::string(k.ranged) == "1"; }

std::string describe(const SpgemmKnobs& k) {
    auto s = [](const char* v) { return v ? std::string(v) : std::string("unset"); };
    return "HYBLA_SPGEMM_MIN_GROUP=" + s(k.min_group) + " HYBLA_SPGEMM_RANGED=" + s(k.ranged) +
           " HYBLA_SPGEMM_HUB=" + s(k.hub) + (k.hub ? " HYBLA_SPGEMM_TILE=100 HYBLA_SPGEMM_BATCH=5000" : "") +
           (chunked(k) ? " HYBLA_SPGEMM_CHUNK=37" : "") +
           " HYBLA_SPGEMM=hash" +
           (k.ranged && std::string(k.ranged) == "0" ? " HYBLA_SPGEMM_DOT=1 HYBLA_SPGEMM_MERGE=0" : "");
}

// MIN_GROUP unset/0/3/5 x RANGED 0/1 x HUB unset/1000 (rows above 1000 products go to tiles of 100 columns).
// Under HYBLA_TEST_QUICK four settings that still take every value.
const std::vector<SpgemmKnobs>& spgemm_knob_settings() {
    static const std::vector<SpgemmKnobs> settings = [] {
        std::vector<SpgemmKnobs> out;
        if (ref::Gen::quick()) {
            out = {{nullptr, "1", nullptr}, {"0", "0", "1000"}, {"3", "1", "1000"}, {"5", "0", nullptr}};
            return out;
        }
        for (const char* g : {(const char*)nullptr, "0", "3", "5"})
            for (const char* r : {"0", "1"})
                for (const char* b : {(const char*)nullptr, "1000"}) out.push_back({g, r, b});
        return out;
    }();
    return settings;
}

// f() under each knob setting, the environment restored after each.
template <class F>
void for_each_knob_setting(F&& f) {
    const char* names[] = {"HYBLA_SPGEMM_MIN_GROUP", "HYBLA_SPGEMM_RANGED", "HYBLA_SPGEMM_HUB",
                           "HYBLA_SPGEMM_BATCH", "HYBLA_SPGEMM", "HYBLA_SPGEMM_TILE", "HYBLA_SPGEMM_DOT",
                           "HYBLA_SPGEMM_CHUNK", "HYBLA_SPGEMM_MERGE"};
    auto current = [&] {
        std::vector<std::optional<std::string>> v;
        for (const char* name : names) {
            const char* e = std::getenv(name);
            v.push_back(e ? std::optional<std::string>(e) : std::nullopt);
        }
        return v;
    };
    const auto before = current();
    for (const SpgemmKnobs& k : spgemm_knob_settings()) {
        // The hash SpGEMM (HYBLA_SPGEMM=hash, the default); HUB=1000 also cuts the rows into
        // batches of at most 5000 products; with RANGED=0 masked A·Bᵀ takes the dot products (DOT=1), otherwise
        // the cost rule chooses, and each group of rows gets a launch of its own (MERGE=0; these products are
        // small enough that the groups otherwise share one).
        const bool dot = k.ranged && std::string(k.ranged) == "0";
        EnvGuard g(names[0], k.min_group), r(names[1], k.ranged), b(names[2], k.hub),
            bt(names[3], k.hub ? "5000" : nullptr), h(names[4], "hash"), t(names[5], k.hub ? "100" : nullptr),
            dt(names[6], dot ? "1" : nullptr), ch(names[7], chunked(k) ? "37" : nullptr),
            mg(names[8], dot ? "0" : nullptr);
        INFO(describe(k));
        f();
    }
    {
        // Expand-sort-compress (HYBLA_SPGEMM=esc, never the default), masked A·Bᵀ included (DOT=0).
        EnvGuard h(names[4], "esc"), dt(names[6], "0");
        INFO("HYBLA_SPGEMM=esc HYBLA_SPGEMM_DOT=0");
        f();
    }
    REQUIRE(current() == before);
}

// Exact for integers, bool and min/max (ref::close ignores the tolerance there); floating sums within it.
template <class T>
constexpr double hash_tol() {
    return std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, double> ? 1e-12 : 0.0;
}

// A sparsity pattern under construction: sorted distinct columns per row.
struct Pattern {
    Index nrows = 0, ncols = 0;
    std::vector<std::vector<Index>> rows;
    Pattern(Index m, Index n) : nrows(m), ncols(n), rows(m) {}
};

// The test's own CSR (sorted distinct columns per row): the inputs, the reference product and the masks, in
// arrays, because these cases are too large for the dense model and too many for maps per row.
template <class T>
struct Csr {
    Index nrows = 0, ncols = 0;
    std::vector<Index> ptr, col;
    std::vector<T> val;
    Csr(Index m, Index n) : nrows(m), ncols(n), ptr(m + 1, 0) {}
    Index nvals() const { return col.size(); }
    // The position of (i, j), or -1.
    std::ptrdiff_t find(Index i, Index j) const {
        auto b = col.begin() + ptr[i], e = col.begin() + ptr[i + 1];
        auto it = std::lower_bound(b, e, j);
        return it != e && *it == j ? it - col.begin() : -1;
    }
};

template <class T>
Matrix<T> to_matrix(const Csr<T>& s) {
    std::vector<Index> r(s.nvals());
    for (Index i = 0; i < s.nrows; ++i) std::fill(r.begin() + s.ptr[i], r.begin() + s.ptr[i + 1], i);
    return Matrix<T>::from_tuples(s.nrows, s.ncols, r, s.col, s.val);
}

template <class T>
Csr<T> transpose(const Csr<T>& s) {
    Csr<T> t(s.ncols, s.nrows);
    for (Index j : s.col) ++t.ptr[j + 1];
    for (Index j = 0; j < t.nrows; ++j) t.ptr[j + 1] += t.ptr[j];
    t.col.resize(s.nvals());
    t.val.resize(s.nvals());
    std::vector<Index> next(t.ptr.begin(), t.ptr.end() - 1);
    for (Index i = 0; i < s.nrows; ++i)
        for (Index p = s.ptr[i]; p < s.ptr[i + 1]; ++p) {
            const Index q = next[s.col[p]]++;
            t.col[q] = i;
            t.val[q] = s.val[p];
        }
    return t;
}

// The pattern with the values value(i, j).
template <class T, class V>
Csr<T> fill(const Pattern& p, V&& value) {
    Csr<T> s(p.nrows, p.ncols);
    for (Index i = 0; i < p.nrows; ++i) {
        for (Index j : p.rows[i]) {
            s.col.push_back(j);
            s.val.push_back(T(value(i, j)));
        }
        s.ptr[i + 1] = s.col.size();
    }
    return s;
}

// A ⊕.⊗ B: C(i,j) = ⊕ over the k of A(i,:) (in increasing k) that B(k,j) has of A(i,k) ⊗ B(k,j), present iff
// there is a term (the map<column, value> per row of sparse_mxm, in arrays).
template <class Sr, class T>
Csr<T> csr_mxm(const Csr<T>& a, const Csr<T>& b) {
    Csr<T> c(a.nrows, b.ncols);
    std::vector<T> acc(b.ncols);
    std::vector<char> seen(b.ncols, 0);
    std::vector<Index> touched;
    for (Index i = 0; i < a.nrows; ++i) {
        touched.clear();
        for (Index p = a.ptr[i]; p < a.ptr[i + 1]; ++p) {
            const Index k = a.col[p];
            const T x = a.val[p];
            for (Index q = b.ptr[k]; q < b.ptr[k + 1]; ++q) {
                const Index j = b.col[q];
                const T t = Sr::template multiply<T>(x, T(b.val[q]));
                if (!seen[j]) {
                    seen[j] = 1;
                    acc[j] = t;
                    touched.push_back(j);
                } else {
                    acc[j] = Sr::template add<T>(T(acc[j]), t);
                }
            }
        }
        std::sort(touched.begin(), touched.end());
        for (Index j : touched) {
            c.col.push_back(j);
            c.val.push_back(acc[j]);
            seen[j] = 0;
        }
        c.ptr[i + 1] = c.col.size();
    }
    return c;
}

// C<M, replace> = T (no accumulator), as ref::write_back words it: where the mask allows, T's entries (C's are
// dropped); elsewhere C's entries unless replace. The result as row-major tuples.
template <class T, class M>
Flat<T> csr_write_back(const Csr<T>& c, const Csr<T>& t, const Csr<M>* mask, const Descriptor& d) {
    Flat<T> out;
    for (Index i = 0; i < t.nrows; ++i) {
        Index pc = c.ptr[i], pt = t.ptr[i], pm = mask ? mask->ptr[i] : 0;
        const Index ec = c.ptr[i + 1], et = t.ptr[i + 1], em = mask ? mask->ptr[i + 1] : 0;
        while (pc < ec || pt < et) {
            const Index j = std::min(pc < ec ? c.col[pc] : t.ncols, pt < et ? t.col[pt] : t.ncols);
            bool allowed = true;
            if (mask) {
                while (pm < em && mask->col[pm] < j) ++pm;
                const bool v = pm < em && mask->col[pm] == j && (d.mask_structure || mask->val[pm] != M(0));
                allowed = v != d.mask_complement;
            }
            const bool hc = pc < ec && c.col[pc] == j, ht = pt < et && t.col[pt] == j;
            if (allowed && ht) {
                out.r.push_back(i);
                out.c.push_back(j);
                out.v.push_back(t.val[pt]);
            } else if (!allowed && !d.replace && hc) {
                out.r.push_back(i);
                out.c.push_back(j);
                out.v.push_back(c.val[pc]);
            }
            pc += hc;
            pt += ht;
        }
    }
    return out;
}

// d distinct random elements of v (d <= v.size()), in random order.
std::vector<Index> pick(ref::Gen& g, std::vector<Index> v, Index d) {
    for (Index x = 0; x < d; ++x) std::swap(v[x], v[g.uniform(x, v.size() - 1)]);
    v.resize(d);
    return v;
}

// min(d, n) distinct random columns of [0, n), sorted.
std::vector<Index> distinct_columns(ref::Gen& g, Index n, Index d) {
    d = std::min(d, n);
    std::vector<Index> out;
    if (4 * d >= n) {
        std::vector<Index> all(n);
        for (Index x = 0; x < n; ++x) all[x] = x;
        out = pick(g, std::move(all), d);
        std::sort(out.begin(), out.end());
        return out;
    }
    while (out.size() < d) {
        for (Index x = out.size(); x < d; ++x) out.push_back(g.uniform(0, n - 1));
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    return out;
}

// Rows of the given degrees (capped by n).
Pattern with_degrees(ref::Gen& g, Index n, const std::vector<Index>& degrees) {
    Pattern p(degrees.size(), n);
    for (Index i = 0; i < p.nrows; ++i) p.rows[i] = distinct_columns(g, n, degrees[i]);
    return p;
}

// m rows of degree 0 to 2 deg, a share `heavy` of them of heavy_deg (capped by n; n = 0 gives empty rows).
Pattern random_rows(ref::Gen& g, Index m, Index n, Index deg, double heavy, Index heavy_deg) {
    std::vector<Index> degrees(m);
    for (Index& d : degrees) d = g.real() < heavy ? heavy_deg : g.uniform(0, 2 * deg);
    return with_degrees(g, n, degrees);
}

// The intermediate products of each row of A·B: the sum over A(i,:) of |B(k,:)|.
std::vector<Index> products_per_row(const Pattern& a, const Pattern& b) {
    std::vector<Index> out(a.nrows, 0);
    for (Index i = 0; i < a.nrows; ++i)
        for (Index k : a.rows[i]) out[i] += b.rows[k].size();
    return out;
}

// A mask over t's shape: row i gets min(sizes[i % sizes.size()], ncols) entries, up to a share `hit` of them on
// t's pattern, the rest random; values from value() (zeros make the valued mask differ from the structural one).
template <class MT, class T, class V>
Csr<MT> mask_with_sizes(ref::Gen& g, const Csr<T>& t, const std::vector<Index>& sizes, double hit, V&& value) {
    Csr<MT> s(t.nrows, t.ncols);
    for (Index i = 0; i < t.nrows; ++i) {
        const Index size = std::min(sizes[i % sizes.size()], t.ncols);
        const std::vector<Index> on_t(t.col.begin() + t.ptr[i], t.col.begin() + t.ptr[i + 1]);
        std::vector<Index> cols = pick(g, on_t, std::min<Index>(on_t.size(), Index(hit * size)));
        std::sort(cols.begin(), cols.end());
        const Index chosen = cols.size();
        for (Index j : distinct_columns(g, t.ncols, size)) {
            if (cols.size() >= size) break;
            if (!std::binary_search(cols.begin(), cols.begin() + chosen, j)) cols.push_back(j);
        }
        std::sort(cols.begin(), cols.end());
        for (Index j : cols) {
            s.col.push_back(j);
            s.val.push_back(MT(value()));
        }
        s.ptr[i + 1] = s.col.size();
    }
    return s;
}

// For `any`, whose result may be any one of the terms: whether v is a term of C(i, j).
template <class T>
using IsTerm = std::function<bool(Index, Index, T)>;

// The pattern exactly and the values as ref::close has them (bool included), or, with is_term, each value one of
// its entry's terms.
template <class T>
std::string hash_diff(const Matrix<T>& got, const Flat<T>& want, double rel, const IsTerm<T>& is_term) {
    Flat<T> g;
    got.extract_tuples(g.r, g.c, g.v);
    std::ostringstream os;
    os.precision(std::numeric_limits<double>::max_digits10);
    for (std::size_t x = 0; x < std::min(g.r.size(), want.r.size()); ++x) {
        const T v = g.v[x], w = want.v[x];
        if (g.r[x] != want.r[x] || g.c[x] != want.c[x]) {
            os << "entry " << x << ": got (" << g.r[x] << ", " << g.c[x] << ") = " << +v << ", expected ("
               << want.r[x] << ", " << want.c[x] << ") = " << +w;
            return os.str();
        }
        if (is_term ? !is_term(g.r[x], g.c[x], v) : !ref::close(v, w, rel)) {
            os << "entry " << x << " (" << g.r[x] << ", " << g.c[x] << "): got " << +v << ", expected ";
            if (is_term) os << "one of its terms (the reference kept " << +w << ")";
            else os << +w;
            return os.str();
        }
    }
    if (g.r.size() != want.r.size()) os << "got " << g.r.size() << " entries, expected " << want.r.size();
    return os.str();
}

// One call of a case: the mask (an index into the case's masks, -1 for none) and the descriptor; with
// transpose_b, B is passed as its transpose (A·Bᵀ).
struct HashRun {
    int mask = -1;
    Descriptor d;
};

std::string describe(const HashRun& r) {
    return (r.mask < 0 ? std::string("no mask") : "mask " + std::to_string(r.mask)) + ", " + describe(r.d);
}

HashRun mask_run(int mask, bool complement, bool structure, bool transpose_b, bool replace = false) {
    HashRun r;
    r.mask = mask;
    r.d.mask_complement = complement;
    r.d.mask_structure = structure;
    r.d.transpose_b = transpose_b;
    r.d.replace = replace;
    return r;
}
HashRun plain_run(bool transpose_b) {
    HashRun r;
    r.d.transpose_b = transpose_b;
    return r;
}

// C<M> = op(A) ⊕.⊗ op(B) (C starting as c0, or empty) for each run under every knob setting, against the
// reference: the pattern exactly, values exactly or within hash_tol, or (is_term, for `any`) one of the terms.
template <class Sr, class T, class MT = T>
void check_hash(const std::string& what, const Csr<T>& a0, const Csr<T>& b0, const std::vector<Csr<MT>>& masks,
                const std::vector<HashRun>& runs, const Csr<T>* c0 = nullptr, const IsTerm<T>& is_term = {}) {
    const Csr<T> t = csr_mxm<Sr>(a0, b0);
    const Csr<T> empty(a0.nrows, b0.ncols);
    const Csr<T>& cs = c0 ? *c0 : empty;
    REQUIRE((!is_term || c0 == nullptr));  // every entry of the result is then one of T's
    std::vector<Flat<T>> want;
    for (const HashRun& r : runs) {
        REQUIRE(r.mask < int(masks.size()));
        want.push_back(csr_write_back(cs, t, r.mask < 0 ? nullptr : &masks[r.mask], r.d));
    }
    const Matrix<T> a = to_matrix(a0), b = to_matrix(b0);
    const bool transposed = std::any_of(runs.begin(), runs.end(), [](const HashRun& r) { return r.d.transpose_b; });
    const Matrix<T> bt = transposed ? to_matrix(transpose(b0)) : Matrix<T>(0, 0);
    std::vector<Matrix<MT>> mask_matrices;
    for (const auto& m : masks) mask_matrices.push_back(to_matrix(m));
    const Matrix<T> c_init = to_matrix(cs);
    for_each_knob_setting([&] {
        for (std::size_t x = 0; x < runs.size(); ++x) {
            const HashRun& r = runs[x];
            INFO(what << ": " << a0.nrows << "x" << a0.ncols << " * " << b0.nrows << "x" << b0.ncols << " ("
                      << t.nvals() << " entries in the product), " << describe(r));
            Matrix<T> c = c_init;
            const Matrix<T>& bb = r.d.transpose_b ? bt : b;
            if (r.mask < 0) mxm(c, no_mask, no_accum, Sr{}, a, bb, r.d);
            else mxm(c, mask_matrices[r.mask], no_accum, Sr{}, a, bb, r.d);
            const std::string d = hash_diff(c, want[x], hash_tol<T>(), is_term);
            INFO(d);
            REQUIRE(d.empty());
        }
    });
}

// Products per row at and around each group boundary, and above the largest.
std::vector<Index> boundary_products() {
    std::vector<Index> out = {0, 1, 2};
    for (Index e : {16, 128, 512, 2048, 4096, 8192})
        for (Index p : {e - 1, e, e + 1}) out.push_back(p);
    out.push_back(20011);
    return out;
}

// op(A) and op(B) whose rows have exactly the wanted products (want[i] for row i).
struct BoundaryCase {
    Pattern a, b;
    std::vector<Index> want;
};

// op(B) (n columns) has rows of degree 1 (9000), 7 (200), 100 (100), 0 (30) and one row of each boundary count up
// to n, in random order; op(A) has, for each count P of boundary_products(), a row of P degree-1 rows (and two
// empty ones), a row of the single degree-P row of B (and an empty one), and a mixed row of 100s, 7s and 1s;
// its rows are shuffled.
BoundaryCase boundary_case(ref::Gen& g, Index n) {
    const std::vector<Index> targets = boundary_products();
    std::vector<Index> degrees;
    std::vector<Index> ones, sevens, hundreds, zeros;
    std::map<Index, Index> single;  // degree -> row
    auto block = [&](std::vector<Index>& ids, Index count, Index deg) {
        for (Index x = 0; x < count; ++x) {
            ids.push_back(degrees.size());
            degrees.push_back(deg);
        }
    };
    block(ones, 9000, 1);
    block(sevens, 200, 7);
    block(hundreds, 100, 100);
    block(zeros, 30, 0);
    for (Index p : targets)
        if (p <= n && p > 0) {
            single[p] = degrees.size();
            degrees.push_back(p);
        }
    // Rows of B in random order, so that the kinds interleave.
    const Index k = degrees.size();
    std::vector<Index> all(k);
    for (Index x = 0; x < k; ++x) all[x] = x;
    const std::vector<Index> perm = pick(g, all, k);
    std::vector<Index> bdeg(k);
    for (Index x = 0; x < k; ++x) bdeg[perm[x]] = degrees[x];
    for (auto* ids : {&ones, &sevens, &hundreds, &zeros})
        for (Index& id : *ids) id = perm[id];
    for (auto& [p, id] : single) id = perm[id];

    BoundaryCase c{Pattern(0, k), with_degrees(g, n, bdeg), {}};
    std::vector<std::vector<Index>> rows;
    auto add = [&](std::vector<Index> cols, Index want) {
        std::sort(cols.begin(), cols.end());
        rows.push_back(std::move(cols));
        c.want.push_back(want);
    };
    auto join = [](std::vector<Index> x, const std::vector<Index>& y) {
        x.insert(x.end(), y.begin(), y.end());
        return x;
    };
    for (Index p : targets) {
        if (p <= ones.size()) add(join(pick(g, ones, p), pick(g, zeros, 2)), p);
        if (single.count(p)) add(join({single[p]}, pick(g, zeros, 1)), p);
        Index h = g.uniform(0, std::min<Index>(p / 100, hundreds.size()));
        Index s = g.uniform(0, std::min<Index>((p - 100 * h) / 7, sevens.size()));
        if (p - 100 * h - 7 * s > ones.size()) {
            h = std::min<Index>(p / 100, hundreds.size());
            s = std::min<Index>((p - 100 * h) / 7, sevens.size());
        }
        add(join(join(pick(g, hundreds, h), pick(g, sevens, s)), pick(g, ones, p - 100 * h - 7 * s)), p);
    }
    // Rows in random order.
    std::vector<Index> order(rows.size());
    for (Index x = 0; x < order.size(); ++x) order[x] = x;
    order = pick(g, order, order.size());
    c.a = Pattern(rows.size(), k);
    std::vector<Index> want(rows.size());
    for (Index x = 0; x < rows.size(); ++x) {
        c.a.rows[x] = rows[order[x]];
        want[x] = c.want[order[x]];
    }
    c.want = want;
    return c;
}

// Gen's values: quarter integers for floating types, whose sums are exact in any order at these sizes.
template <class T>
auto gen_values(ref::Gen& g) {
    return [&g](Index, Index) { return g.template value<T>(); };
}
// Uniform integers in [lo, hi].
auto ints(ref::Gen& g, std::int64_t lo, std::int64_t hi) {
    return [&g, lo, hi](Index, Index) { return lo + std::int64_t(g.uniform(0, Index(hi - lo))); };
}
// `special` for a share of the entries, else base(i, j).
template <class V>
auto with_share(ref::Gen& g, double share, std::int64_t special, V base) {
    return [&g, share, special, base](Index i, Index j) { return g.real() < share ? special : base(i, j); };
}

}  // namespace

TEST_CASE("SpGEMM hash: skewed rows of degree 0 and 1 and rows of degree 100000", "[mxm][spgemm][hash]") {
    if (!ref::in_shard()) return;
    ref::Gen g(201);
    const Index m = 41, k = 100003, n = 100019;
    // B: rows of degree 0, 1 and 2 mostly; two of 3000, one of 40000 and one of 100000.
    std::vector<Index> bdeg(k);
    for (Index& d : bdeg) {
        const Index u = g.uniform(0, 9);
        d = u < 4 ? 0 : u < 9 ? 1 : 2;
    }
    const Index b_huge = 13, b_big = 17, b_mid = 7, b_mid2 = 11, b_empty = 2, b_one = 3;
    bdeg[b_huge] = 100000;
    bdeg[b_big] = 40000;
    bdeg[b_mid] = bdeg[b_mid2] = 3000;
    bdeg[b_empty] = 0;
    bdeg[b_one] = 1;
    const Pattern bp = with_degrees(g, n, bdeg);
    // A: empty rows, rows of one entry on each kind of B row, one row of 100000 entries, one of three heavy
    // entries, the rest of degree 0 to 2.
    Pattern ap = random_rows(g, m, k, 1, 0.0, 0);
    ap.rows[0] = {};
    ap.rows[1] = {b_huge};
    ap.rows[2] = {b_empty};
    ap.rows[3] = {b_one};
    ap.rows[4] = {b_mid};
    ap.rows[5] = distinct_columns(g, k, 100000);
    ap.rows[6] = {b_mid2, b_huge, b_big};
    ap.rows[m - 1] = {};
    const std::vector<Index> products = products_per_row(ap, bp);
    REQUIRE(products[1] == 100000);
    REQUIRE(products[5] > 100000);

    {
        const auto a0 = fill<double>(ap, gen_values<double>(g)), b0 = fill<double>(bp, gen_values<double>(g));
        check_hash<plus_times, double>("plus_times double", a0, b0, {}, {plain_run(false), plain_run(true)});
    }
    {
        const auto a0 = fill<std::int64_t>(ap, ints(g, -4, 6)), b0 = fill<std::int64_t>(bp, ints(g, -4, 6));
        check_hash<plus_pair, std::int64_t>("plus_pair int64", a0, b0, {}, {plain_run(false)});
        // Masks (row i of sizes[i % 7] entries) that cap the heavy rows' products: row 1 (100000 products) to 5,
        // row 5 to 17, row 6 to 8193; full rows and others.
        const Csr<std::int64_t> t = csr_mxm<plus_pair>(a0, b0);
        const std::vector<Csr<std::int64_t>> masks = {mask_with_sizes<std::int64_t>(
            g, t, {0, 5, 100, 9000, n, 17, 8193}, 0.5, [&] { return std::int64_t(g.uniform(0, 2)); })};
        check_hash<min_plus, std::int64_t>("min_plus int64", a0, b0, masks,
                                           {mask_run(0, false, true, true), mask_run(0, true, false, false)});
    }
}

TEST_CASE("SpGEMM hash: many short rows whose products a lane counts and a few long rows", "[mxm][spgemm][hash]") {
    if (!ref::in_shard()) return;
    ref::Gen g(207);
    // At least 2^16 rows of A averaging fewer than 8 entries: the grouping counts each row's products in a lane of
    // its own; rows of more than 16 entries (17, 40 and 300 here) are counted by the whole warp. B's rows have 0
    // to 4 entries, 1% of them 500. (More than 2^16 rows also take CUB's scan of the row counts on the GPU, where
    // fewer take one block's.)
    const Index m = 70001, k = 5003, n = 9001;
    std::vector<Index> adeg(m);
    for (Index& d : adeg) d = g.uniform(0, 4);
    for (Index i = 5; i < m; i += 997) adeg[i] = (i / 997) % 3 == 0 ? 17 : (i / 997) % 3 == 1 ? 40 : 300;
    const Pattern ap = with_degrees(g, k, adeg);
    const Pattern bp = random_rows(g, k, n, 2, 0.01, 500);
    const auto a0 = fill<float>(ap, gen_values<float>(g)), b0 = fill<float>(bp, gen_values<float>(g));
    check_hash<plus_times, float>("plus_times float", a0, b0, {}, {plain_run(false)});
}

TEST_CASE("SpGEMM hash: rectangular shapes with sizes 0 and 1 and odd sizes", "[mxm][spgemm][hash]") {
    ref::Gen g(202);
    std::vector<std::tuple<Index, Index, Index>> shapes;
    for (Index m : {0, 1, 7, 33})
        for (Index k : {0, 1, 7, 33})
            for (Index n : {0, 1, 7, 33}) shapes.emplace_back(m, k, n);
    // Larger odd shapes: one row of many products into 3 columns (capped by ncols), many rows of one inner
    // entry, rows into every group.
    for (auto s : {std::tuple<Index, Index, Index>{1, 4099, 3}, {3001, 1, 17}, {129, 3, 2049}, {257, 1031, 129},
                   {65, 2049, 9001}})
        shapes.push_back(s);
    int x = 0;
    for (auto [m, k, n] : shapes) {
        ++x;
        if (!ref::in_shard()) continue;
        const Index deg_a = g.uniform(0, 3), deg_b = g.uniform(0, 4);
        const auto a0 = fill<double>(random_rows(g, m, k, deg_a, 0.1, std::min<Index>(k, 300)), gen_values<double>(g));
        const auto b0 = fill<double>(random_rows(g, k, n, deg_b, 0.05, n / 2 + 1), gen_values<double>(g));
        const Csr<double> t = csr_mxm<plus_times>(a0, b0);
        const std::vector<Csr<double>> masks = {mask_with_sizes<double>(
            g, t, {0, 1, 3, 20, n}, 0.5, [&] { return g.real() < 0.3 ? 0.0 : g.value<double>(); })};
        // Both forms of B unmasked, and one mask kind per shape in turn.
        check_hash<plus_times, double>("plus_times double", a0, b0, masks,
                                       {plain_run(false), plain_run(true), mask_run(0, x & 1, x & 2, x & 4)});
    }
}

// B(k,:) holds the columns k*c .. k*c + c - 1 (some dropped): no two products of a row share a column, so C
// has as many entries as products. Then B with one entry a row at a label of k (a contraction's Sᵀ), where the
// products of a row meet.
TEST_CASE("SpGEMM hash: products of distinct columns, and B of one entry a row", "[mxm][spgemm][hash]") {
    ref::Gen g(207);
    for (auto [m, k, c] : {std::tuple<Index, Index, Index>{1, 1, 1}, {37, 19, 3}, {300, 1200, 5}, {2, 6000, 1}}) {
        if (!ref::in_shard()) continue;
        const auto a0 = fill<double>(random_rows(g, m, k, 6, 0.1, std::min<Index>(k, 2000)), gen_values<double>(g));
        Pattern pb(k, k * c);
        for (Index r = 0; r < k; ++r)
            for (Index t = 0; t < c; ++t)
                if (c == 1 || g.uniform(0, 3) != 0) pb.rows[r].push_back(r * c + t);
        const auto b0 = fill<double>(pb, gen_values<double>(g));
        INFO(m << "x" << k << " by blocks of " << c);
        check_hash<plus_times, double>("distinct columns", a0, b0, {}, {plain_run(false), plain_run(true)});
        Pattern ps(k, k / 7 + 1);
        for (Index r = 0; r < k; ++r) ps.rows[r].push_back(g.uniform(0, k / 7));
        check_hash<plus_times, double>("one entry a row", a0, fill<double>(ps, gen_values<double>(g)), {},
                                       {plain_run(false)});
    }
}

// Hubs over several tiles of columns (40000 columns: 10 tiles of 4096) and one hub of far more products than
// the others: more (hub, tile) pairs than a GPU has multiprocessors, where the device's rule chunks only the
// giant hub's entries of A (and, with HYBLA_SPGEMM_HUB=1000, batches and tiles of 100 columns instead).
TEST_CASE("SpGEMM hash: one giant hub among many hubs over many tiles", "[mxm][spgemm][hash]") {
    ref::Gen g(211);
    const Index k = 4000, n = 40000;
    const Pattern bp = with_degrees(g, n, std::vector<Index>(k, 10));
    std::vector<Index> degrees(36, 3);
    for (Index i = 0; i < 15; ++i) degrees[2 * i] = 250;  // hubs of about 2500 products
    degrees[31] = k;                                       // every row of B: 40000 products
    const Pattern ap = with_degrees(g, k, degrees);
    REQUIRE(products_per_row(ap, bp)[31] == 10 * k);
    if (ref::in_shard())
        check_hash<plus_times, double>("plus_times double", fill<double>(ap, gen_values<double>(g)),
                                       fill<double>(bp, gen_values<double>(g)), {}, {plain_run(false)});
    if (ref::in_shard())
        check_hash<plus_times, float>("plus_times float", fill<float>(ap, gen_values<float>(g)),
                                      fill<float>(bp, gen_values<float>(g)), {}, {plain_run(false)});
    if (ref::in_shard())
        check_hash<min_plus, std::int64_t>("min_plus int64", fill<std::int64_t>(ap, ints(g, -4, 6)),
                                           fill<std::int64_t>(bp, ints(g, -4, 6)), {}, {plain_run(false)});
}

// More than 1024 hubs: with one tile (4000 columns) and a giant hub of over eight chunks' products the device's
// rule chunks them (float: the jobs' partial tiles fit 64 MB), and the hubs' jobs are placed by their own kernel
// (chunk_bounds_kernel places at most 1024 hubs' itself); with 16 tiles (61500 columns) more than 2^14 (hub,
// tile) pairs, whose places a scan of their own finds (the numeric grouping finds at most 2^14). Under the
// knobs with HYBLA_SPGEMM_HUB=1000 the batches hold a few hubs each instead.
TEST_CASE("SpGEMM hash: over 1024 hubs and over 2^14 hub-tile pairs", "[mxm][spgemm][hash]") {
    ref::Gen g(213);
    const Index k = 400;
    std::vector<Index> degrees(1100, 30);  // hubs of 2100 products (2048 and up are hubs by default)
    degrees.push_back(300);                // 21000 products: over eight chunks
    for (Index i = 0; i < 50; ++i) degrees.push_back(3);
    for (const Index n : {Index(4000), Index(61500)}) {
        if (!ref::in_shard()) continue;
        const Pattern bp = with_degrees(g, n, std::vector<Index>(k, 70));
        const Pattern ap = with_degrees(g, k, degrees);
        REQUIRE(products_per_row(ap, bp)[0] == 2100);
        INFO(n << " columns");
        check_hash<plus_times, float>("plus_times float", fill<float>(ap, gen_values<float>(g)),
                                      fill<float>(bp, gen_values<float>(g)), {}, {plain_run(false)});
    }
}

TEST_CASE("SpGEMM hash: rows with products at and around each group boundary", "[mxm][spgemm][hash]") {
    ref::Gen g(203);
    const Index n = 10007;
    const BoundaryCase bc = boundary_case(g, n);
    REQUIRE(products_per_row(bc.a, bc.b) == bc.want);
    const std::vector<HashRun> unmasked = {plain_run(false), plain_run(true)};
    // Non-complemented masks cap a row's products by |M(i,:)|: masks whose rows have boundary sizes (and more
    // than the row's products); complemented ones do not cap.
    std::vector<Index> mask_sizes = boundary_products();
    mask_sizes.push_back(n);
    const std::vector<HashRun> masked = {mask_run(0, false, true, false), mask_run(0, false, false, true),
                                         mask_run(0, true, true, true), mask_run(0, true, false, false)};
    if (ref::in_shard()) {
        const auto a0 = fill<double>(bc.a, gen_values<double>(g)), b0 = fill<double>(bc.b, gen_values<double>(g));
        const Csr<double> t = csr_mxm<plus_times>(a0, b0);
        const std::vector<Csr<double>> masks = {
            mask_with_sizes<double>(g, t, mask_sizes, 0.6, [&] { return g.real() < 0.3 ? 0.0 : 1.5; })};
        std::vector<HashRun> runs = unmasked;
        runs.insert(runs.end(), masked.begin(), masked.end());
        check_hash<plus_times, double>("plus_times double", a0, b0, masks, runs);
    }
    if (ref::in_shard()) {
        const auto a0 = fill<float>(bc.a, gen_values<float>(g)), b0 = fill<float>(bc.b, gen_values<float>(g));
        check_hash<plus_times, float>("plus_times float", a0, b0, {}, unmasked);
    }
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(bc.a, ints(g, -4, 6)), b0 = fill<std::int64_t>(bc.b, ints(g, -4, 6));
        // plus_pair counts the terms of each entry: a row's sum is its products.
        const Csr<std::int64_t> t = csr_mxm<plus_pair>(a0, b0);
        for (Index i = 0; i < t.nrows; ++i) {
            std::int64_t sum = 0;
            for (Index p = t.ptr[i]; p < t.ptr[i + 1]; ++p) sum += t.val[p];
            REQUIRE(Index(sum) == bc.want[i]);
        }
        const std::vector<Csr<std::int64_t>> masks = {
            mask_with_sizes<std::int64_t>(g, t, mask_sizes, 0.6, [&] { return std::int64_t(g.uniform(0, 2)); })};
        std::vector<HashRun> runs = unmasked;
        runs.insert(runs.end(), masked.begin(), masked.end());
        check_hash<plus_pair, std::int64_t>("plus_pair int64", a0, b0, masks, runs);
    }
    if (ref::in_shard()) {
        const auto a0 = fill<bool>(bc.a, gen_values<bool>(g)), b0 = fill<bool>(bc.b, gen_values<bool>(g));
        check_hash<lor_land, bool>("lor_land bool", a0, b0, {}, unmasked);
    }
    // Products capped by ncols: n at and just above each boundary; rows of n - 1, n, n + 1, 2n and 5n products.
    for (Index e : {16, 128, 512, 2048, 4096, 8192})
        for (Index nc : {e, e + 1}) {
            if (!ref::in_shard()) continue;
            const Index d = std::min<Index>(nc, 64);
            std::vector<Index> bdeg(700, d);
            bdeg.insert(bdeg.end(), 1000, 1);
            std::vector<Index> wide, ones;
            for (Index r = 0; r < 700; ++r) wide.push_back(r);
            for (Index r = 700; r < 1700; ++r) ones.push_back(r);
            const Pattern bp = with_degrees(g, nc, bdeg);
            Pattern ap(0, bdeg.size());
            std::vector<Index> want;
            for (Index p : {nc - 1, nc, nc + 1, 2 * nc, 5 * nc}) {
                const Index q = std::min<Index>(p / d, wide.size()), r = p - q * d;
                REQUIRE(r <= ones.size());
                std::vector<Index> cols = pick(g, wide, q);
                for (Index o : pick(g, ones, r)) cols.push_back(o);
                std::sort(cols.begin(), cols.end());
                ap.rows.push_back(cols);
                want.push_back(p);
            }
            ap.nrows = ap.rows.size();
            REQUIRE(products_per_row(ap, bp) == want);
            const auto a0 = fill<double>(ap, gen_values<double>(g)), b0 = fill<double>(bp, gen_values<double>(g));
            check_hash<plus_times, double>("plus_times double, ncols " + std::to_string(nc), a0, b0, {}, unmasked);
        }
}

TEST_CASE("SpGEMM hash: semirings with terminal values and any and plus_times on every type",
          "[mxm][spgemm][hash]") {
    ref::Gen g(204);
    // Rows into every group: most A rows of 0 to 6 entries, 5% of 400; most B rows of 0 to 6, 1% of 2000.
    const Index m = 301, k = 3001, n = 9001;
    const Pattern ap = random_rows(g, m, k, 3, 0.05, 400);
    const Pattern bp = random_rows(g, k, n, 3, 0.01, 2000);
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
    // Per semiring one unmasked call and one under a mask, with B and Bᵀ and the four mask kinds in turn (every
    // mask kind with both is in the next test case).
    int turn = 0;
    auto runs = [&] {
        ++turn;
        return std::vector<HashRun>{plain_run(turn & 1), mask_run(0, turn & 2, turn & 4, !(turn & 1))};
    };
    const std::vector<Index> mask_sizes = {0, 1, 16, 17, 200, 3000};
    auto mask_of = [&]<class MT, class T>(const Csr<T>& t, std::type_identity<MT>) {
        return std::vector<Csr<MT>>{mask_with_sizes<MT>(g, t, mask_sizes, 0.5, [&] { return MT(g.uniform(0, 2)); })};
    };
    auto int_mask = [&](const Csr<std::int64_t>& t) { return mask_of(t, std::type_identity<std::int64_t>{}); };
    // min_plus int64: -2^63 in A with B >= 0 (no overflow) reaches min's terminal value.
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(ap, with_share(g, 0.05, lo, ints(g, -4, 6)));
        const auto b0 = fill<std::int64_t>(bp, ints(g, 0, 9));
        check_hash<min_plus, std::int64_t>("min_plus int64", a0, b0, int_mask(csr_mxm<min_plus>(a0, b0)), runs());
    }
    // max_plus int64: 2^63 - 1 in A with B <= 0 reaches max's terminal value.
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(ap, with_share(g, 0.05, hi, ints(g, -6, 4)));
        const auto b0 = fill<std::int64_t>(bp, ints(g, -9, 0));
        check_hash<max_plus, std::int64_t>("max_plus int64", a0, b0, int_mask(csr_mxm<max_plus>(a0, b0)), runs());
    }
    // max_min and min_max int64: the terminal value where both entries have it.
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(ap, with_share(g, 0.15, hi, ints(g, -4, 6)));
        const auto b0 = fill<std::int64_t>(bp, with_share(g, 0.15, hi, ints(g, -4, 6)));
        check_hash<max_min, std::int64_t>("max_min int64", a0, b0, int_mask(csr_mxm<max_min>(a0, b0)), runs());
    }
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(ap, with_share(g, 0.15, lo, ints(g, -4, 6)));
        const auto b0 = fill<std::int64_t>(bp, with_share(g, 0.15, lo, ints(g, -4, 6)));
        check_hash<min_max, std::int64_t>("min_max int64", a0, b0, int_mask(csr_mxm<min_max>(a0, b0)), runs());
    }
    // min_plus double: -inf in A (B finite) is min's terminal value.
    if (ref::in_shard()) {
        const double ninf = -std::numeric_limits<double>::infinity();
        const auto a0 = fill<double>(ap, [&](Index, Index) { return g.real() < 0.05 ? ninf : g.value<double>(); });
        const auto b0 = fill<double>(bp, gen_values<double>(g));
        check_hash<min_plus, double>("min_plus double", a0, b0,
                                     mask_of(csr_mxm<min_plus>(a0, b0), std::type_identity<double>{}), runs());
    }
    // lor_land and land_lor on bool: true and false are the terminal values.
    if (ref::in_shard()) {
        const auto a0 = fill<bool>(ap, gen_values<bool>(g)), b0 = fill<bool>(bp, gen_values<bool>(g));
        check_hash<lor_land, bool>("lor_land bool", a0, b0,
                                   mask_of(csr_mxm<lor_land>(a0, b0), std::type_identity<bool>{}), runs());
    }
    if (ref::in_shard()) {
        const auto a0 = fill<bool>(ap, [&](Index, Index) { return g.real() < 0.2; });
        const auto b0 = fill<bool>(bp, [&](Index, Index) { return g.real() < 0.2; });
        check_hash<land_lor, bool>("land_lor bool", a0, b0,
                                   mask_of(csr_mxm<land_lor>(a0, b0), std::type_identity<bool>{}), runs());
    }
    // any_second: B(r, j) = r n + j + 1, distinct, so that a value names its term; any_pair: every term is 1.
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(ap, ints(g, -4, 6));
        const auto b0 = fill<std::int64_t>(bp, [&](Index r, Index j) { return std::int64_t(r * n + j + 1); });
        const IsTerm<std::int64_t> is_term = [&](Index i, Index j, std::int64_t v) {
            if (v < 1) return false;
            const Index r = Index(v - 1) / n;
            return r < k && Index(v - 1) % n == j && a0.find(i, r) >= 0 && b0.find(r, j) >= 0;
        };
        check_hash<any_second, std::int64_t>("any_second int64", a0, b0, int_mask(csr_mxm<any_second>(a0, b0)),
                                             runs(), nullptr, is_term);
        check_hash<any_pair, std::int64_t>("any_pair int64", a0, b0, int_mask(csr_mxm<any_pair>(a0, b0)), runs());
    }
    // plus_times on float, double, int32 and uint8 (products and sums wrap around modulo 256); plus_pair int64.
    if (ref::in_shard()) {
        const auto a0 = fill<float>(ap, gen_values<float>(g)), b0 = fill<float>(bp, gen_values<float>(g));
        check_hash<plus_times, float>("plus_times float", a0, b0,
                                      mask_of(csr_mxm<plus_times>(a0, b0), std::type_identity<float>{}), runs());
    }
    if (ref::in_shard()) {
        const auto a0 = fill<double>(ap, gen_values<double>(g)), b0 = fill<double>(bp, gen_values<double>(g));
        check_hash<plus_times, double>("plus_times double", a0, b0,
                                       mask_of(csr_mxm<plus_times>(a0, b0), std::type_identity<double>{}), runs());
    }
    if (ref::in_shard()) {
        const auto a0 = fill<std::int32_t>(ap, ints(g, -4, 6)), b0 = fill<std::int32_t>(bp, ints(g, -4, 6));
        check_hash<plus_times, std::int32_t>(
            "plus_times int32", a0, b0, mask_of(csr_mxm<plus_times>(a0, b0), std::type_identity<std::int32_t>{}), runs());
    }
    if (ref::in_shard()) {
        const auto a0 = fill<std::uint8_t>(ap, ints(g, 0, 255)), b0 = fill<std::uint8_t>(bp, ints(g, 0, 255));
        check_hash<plus_times, std::uint8_t>(
            "plus_times uint8", a0, b0, mask_of(csr_mxm<plus_times>(a0, b0), std::type_identity<std::uint8_t>{}), runs());
    }
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(ap, ints(g, -4, 6)), b0 = fill<std::int64_t>(bp, ints(g, -4, 6));
        check_hash<plus_pair, std::int64_t>("plus_pair int64", a0, b0, int_mask(csr_mxm<plus_pair>(a0, b0)), runs());
    }
}

TEST_CASE("SpGEMM hash: masks of every kind with A times B and A times B transposed", "[mxm][spgemm][hash]") {
    ref::Gen g(205);
    const Index m = 97, k = 2003, n = 10007;
    const Pattern ap = random_rows(g, m, k, 3, 0.08, 300);
    const Pattern bp = random_rows(g, k, n, 3, 0.01, 3000);
    // Mask rows: empty, of one entry, of each boundary size, full; half of each on the product's pattern, the
    // rest anywhere; a third of the values zero (false), so that the valued mask differs from the structural one.
    std::vector<Index> sizes = {0, 1, 5, 40};
    for (Index e : {16, 128, 512, 2048, 4096, 8192})
        for (Index p : {e, e + 1}) sizes.push_back(p);
    sizes.push_back(n);
    // Each kind (complemented or not, structural or valued) with B and with Bᵀ (transpose_b), replace on every
    // other; C starts with entries so that the mask's keep and replace rules both show.
    std::vector<HashRun> every = {plain_run(false), plain_run(true)};
    for (int kind = 0; kind < 4; ++kind)
        for (int tb = 0; tb < 2; ++tb) every.push_back(mask_run(0, kind & 1, kind & 2, tb, (kind + tb) & 1));
    std::vector<HashRun> four;  // the four kinds, B and Bᵀ in turn
    for (int kind = 0; kind < 4; ++kind) four.push_back(mask_run(0, kind & 1, kind & 2, (kind ^ (kind >> 1)) & 1));
    if (ref::in_shard()) {
        const auto a0 = fill<double>(ap, gen_values<double>(g)), b0 = fill<double>(bp, gen_values<double>(g));
        const auto c0 = fill<double>(random_rows(g, m, n, 20, 0.05, 2000), gen_values<double>(g));
        const Csr<double> t = csr_mxm<plus_times>(a0, b0);
        const std::vector<Csr<double>> masks = {
            mask_with_sizes<double>(g, t, sizes, 0.5, [&] { return g.real() < 0.33 ? 0.0 : g.value<double>(); })};
        check_hash<plus_times, double>("plus_times double, mask double", a0, b0, masks, every, &c0);
        // A mask of another type (bool: its false entries are holes of the valued mask).
        const std::vector<Csr<bool>> bool_masks = {
            mask_with_sizes<bool>(g, t, sizes, 0.5, [&] { return g.real() >= 0.33; })};
        check_hash<plus_times, double, bool>("plus_times double, mask bool", a0, b0, bool_masks, four, &c0);
    }
    if (ref::in_shard()) {
        const auto a0 = fill<std::int64_t>(ap, ints(g, -4, 6)), b0 = fill<std::int64_t>(bp, ints(g, -4, 6));
        const Csr<std::int64_t> t = csr_mxm<plus_pair>(a0, b0);
        const std::vector<Csr<std::int64_t>> masks = {
            mask_with_sizes<std::int64_t>(g, t, sizes, 0.5, [&] { return std::int64_t(g.uniform(0, 2)); })};
        check_hash<plus_pair, std::int64_t>("plus_pair int64", a0, b0, masks, four);
    }
}

TEST_CASE("SpGEMM hash: the same product twice gives bit-identical values", "[mxm][spgemm][hash][determinism]") {
    if (!ref::in_shard()) return;
    ref::Gen g(206);
    // float plus_times on values that do not add exactly, so that another order of the sums would show: rows of
    // up to 5000 entries (up to 200000 products, hundreds of terms per entry) into 257 columns.
    const Index k = 6007, n = 257;
    std::vector<Index> adeg;
    for (int rep = 0; rep < 8; ++rep)
        for (Index d : {0, 1, 30, 300, 1200, 5000}) adeg.push_back(d);
    auto real = [&](Index, Index) { return float(g.real() * 2 - 0.7); };
    const Csr<float> a0 = fill<float>(with_degrees(g, k, adeg), real);
    const Csr<float> b0 = fill<float>(random_rows(g, k, n, 40, 0.0, 0), real);
    const Index m = a0.nrows;
    // The exact sums (in double: exact for these float products at these sizes, up to rounding far below
    // float's) and the sums of the terms' magnitudes, the scale of a float sum's rounding.
    auto to_double = [](const Csr<float>& s, bool magnitude) {
        Csr<double> d(s.nrows, s.ncols);
        d.ptr = s.ptr;
        d.col = s.col;
        for (float x : s.val) d.val.push_back(magnitude ? std::abs(double(x)) : double(x));
        return d;
    };
    const Csr<double> exact = csr_mxm<plus_times>(to_double(a0, false), to_double(b0, false));
    const Csr<double> scale = csr_mxm<plus_times>(to_double(a0, true), to_double(b0, true));
    const Csr<float> mask0 = fill<float>(random_rows(g, m, n, 60, 0.1, n), [](Index, Index) { return 1.0f; });
    const Matrix<float> a = to_matrix(a0), b = to_matrix(b0), bt = to_matrix(transpose(b0)), mask = to_matrix(mask0);
    // Unmasked with B; under a complemented structural mask with Bᵀ.
    const HashRun runs[] = {plain_run(false), mask_run(0, true, true, true)};
    for_each_knob_setting([&] {
        for (const HashRun& r : runs) {
            INFO(describe(r));
            auto product = [&] {
                Matrix<float> c(m, n);
                if (r.mask < 0) mxm(c, no_mask, no_accum, plus_times{}, a, r.d.transpose_b ? bt : b, r.d);
                else mxm(c, mask, no_accum, plus_times{}, a, r.d.transpose_b ? bt : b, r.d);
                return tuples(c);
            };
            const Tuples<float> first = product(), second = product();
            REQUIRE(first.r == second.r);
            REQUIRE(first.c == second.c);
            REQUIRE(first.v.size() == second.v.size());
            REQUIRE(std::memcmp(first.v.data(), second.v.data(), first.v.size() * sizeof(float)) == 0);
            // Against the exact sums: the pattern exactly, the values within 1e-5 of their terms' magnitude.
            const Flat<double> want = csr_write_back(Csr<double>(m, n), exact, r.mask < 0 ? nullptr : &mask0, r.d);
            REQUIRE(want.v.size() > 0);
            REQUIRE(first.r == want.r);
            REQUIRE(first.c == want.c);
            for (std::size_t x = 0; x < want.v.size(); ++x) {
                const double s = scale.val[scale.find(want.r[x], want.c[x])];
                if (!(std::abs(double(first.v[x]) - want.v[x]) <= 1e-5 * std::max(1.0, s)))
                    FAIL("entry (" << want.r[x] << ", " << want.c[x] << "): got " << std::setprecision(9)
                                   << first.v[x] << ", exact " << std::setprecision(17) << want.v[x]
                                   << ", sum of magnitudes " << s);
            }
        }
    });
}
