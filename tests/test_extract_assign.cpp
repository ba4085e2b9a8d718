// extract (C = A(I, J), w = u(I), w = A(I, j)), assign (C(I, J) = A or a scalar, w(I) = u or a scalar, with
// GrB_assign's rule: the mask has C's shape and applies to all of C) and kronecker, against the brute-force
// reference on random inputs, for every mask variant and accumulator, with index sets given as all, strided
// ranges and lists (unsorted and repeated for extract).
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace hybla;
using Catch::Contains;
using ref::Index;

namespace {

using ref::DynAccum;
using ref::with_accum;

// ------------------------------------------------------------------------------------------- helpers

template <class TC, class TA>
ref::Dense<TC> cast(const ref::Dense<TA>& a) {
    ref::Dense<TC> c(a.nrows, a.ncols);
    for (std::size_t x = 0; x < a.a.size(); ++x)
        if (a.a[x]) c.a[x] = TC(*a.a[x]);
    return c;
}

// Mask kind x replace x accumulator.
enum MaskKind { no_mask_kind, value_mask, structural_mask, complement_value_mask, complement_structural_mask };
constexpr const char* mask_names[] = {"no mask", "value mask", "structural mask", "complemented value mask",
                                      "complemented structural mask"};
constexpr const char* accum_names[] = {"no accum", "accum plus", "accum second", "accum min"};
struct Variant {
    int mask = 0;
    bool replace = false;
    int accum = 0;
    std::string str() const {
        return std::string(mask_names[mask]) + (replace ? ", replace, " : ", ") + accum_names[accum];
    }
    Descriptor desc(Descriptor base = {}) const {
        base.mask_complement = mask >= complement_value_mask;
        base.mask_structure = mask == structural_mask || mask == complement_structural_mask;
        base.replace = replace;
        return base;
    }
};
std::vector<Variant> all_variants() {
    std::vector<Variant> v;
    for (int m = 0; m < 5; ++m)
        for (bool r : {false, true})
            for (int a = 0; a < 4; ++a) v.push_back({m, r, a});
    return v;
}
// For every variant: C = c0; run(C, mask, accum, desc); compare with want(accum, desc, mask or nullptr).
template <class TC, class M, class Run, class Want>
void check_matrix_variants(const ref::Dense<TC>& c0, const ref::Dense<M>& maskd, Run&& run, Want&& want) {
    const Matrix<M> mask = ref::to_matrix(maskd);
    for (const Variant& v : all_variants()) {
        INFO(v.str());
        const Descriptor d = v.desc();
        with_accum(v.accum, [&](auto accum) {
            Matrix<TC> c = ref::to_matrix(c0);
            if (v.mask == no_mask_kind) run(c, no_mask, accum, d);
            else run(c, mask, accum, d);
            REF_REQUIRE_SAME(ref::to_dense(c), want(accum, d, v.mask == no_mask_kind ? nullptr : &maskd));
        });
    }
}
// The same for vectors; w and the mask alternate between sparse and dense storage.
template <class TC, class M, class Run, class Want>
void check_vector_variants(ref::Gen& g, const ref::Dense<TC>& w0, const ref::Dense<M>& maskd, Run&& run, Want&& want) {
    Vector<M> mask = ref::to_vector(maskd);
    for (const Variant& v : all_variants()) {
        const bool w_dense = g.uniform(0, 1) == 1, m_dense = g.uniform(0, 1) == 1;
        INFO(v.str() << (w_dense ? ", w dense" : ", w sparse") << (m_dense ? ", mask dense" : ", mask sparse"));
        if (m_dense) mask.to_dense();
        else mask.to_sparse();
        const Descriptor d = v.desc();
        with_accum(v.accum, [&](auto accum) {
            Vector<TC> w = ref::to_vector(w0);
            if (w_dense) w.to_dense();
            if (v.mask == no_mask_kind) run(w, no_mask, accum, d);
            else run(w, mask, accum, d);
            const auto expected = want(accum, d, v.mask == no_mask_kind ? nullptr : &maskd);
            REF_REQUIRE_SAME(ref::to_dense(w), expected);
            REQUIRE(w.nvals() == expected.nvals());
        });
    }
}
// The usual rule for operations other than assign: C<M, replace> accum= t.
template <class TC>
auto write_back_of(const ref::Dense<TC>& c0, const ref::Dense<TC>& t) {
    return [&c0, &t](auto accum, const Descriptor& d, const auto* mask) { return ref::write_back(c0, t, mask, accum, d); };
}

template <class T>
Vector<T> vector_in_storage(const ref::Dense<T>& d, bool dense) {
    auto v = ref::to_vector(d);
    if (dense) v.to_dense();
    return v;
}

// A random index set over a dimension, kept alive with its list; indices() is what it stands for.
struct Indices {
    enum Kind { all_kind, range_kind, list_kind } kind = all_kind;
    IndexRange range{};
    std::vector<Index> list;
    Index dim = 0;
    IndexSet set() const {
        if (kind == all_kind) return IndexSet(all);
        if (kind == range_kind) return IndexSet(range);
        return IndexSet(list);
    }
    std::vector<Index> indices() const {
        std::vector<Index> out;
        if (kind == all_kind)
            for (Index i = 0; i < dim; ++i) out.push_back(i);
        else if (kind == range_kind)
            for (Index i = range.begin; i < range.end; i += range.stride) out.push_back(i);
        else out = list;
        return out;
    }
    std::string str() const {
        std::ostringstream os;
        if (kind == all_kind) os << "all";
        else if (kind == range_kind) os << "range{" << range.begin << ", " << range.end << ", " << range.stride << "}";
        else {
            os << "list{";
            for (Index i : list) os << i << " ";
            os << "}";
        }
        return os.str();
    }
};
// For extract: lists may be unsorted and repeat indices, and may be longer than the dimension.
Indices extract_indices(ref::Gen& g, Index dim) {
    Indices s;
    s.dim = dim;
    const Index kind = g.uniform(0, 3);
    if (kind == 0) return s;
    if (kind == 1) {
        s.kind = Indices::range_kind;
        Index b = g.uniform(0, dim), e = g.uniform(b, dim);
        s.range = {b, e, g.uniform(1, 3)};
        return s;
    }
    s.kind = Indices::list_kind;
    if (dim == 0) return s;
    const Index len = g.uniform(0, dim + 3);
    for (Index k = 0; k < len; ++k) s.list.push_back(g.uniform(0, dim - 1));
    return s;
}
// For assign: distinct indices (a list in random order).
Indices assign_indices(ref::Gen& g, Index dim) {
    Indices s;
    s.dim = dim;
    const Index kind = g.uniform(0, 3);
    if (kind == 0) return s;
    if (kind == 1) {
        s.kind = Indices::range_kind;
        Index b = g.uniform(0, dim), e = g.uniform(b, dim);
        s.range = {b, e, g.uniform(1, 4)};
        return s;
    }
    s.kind = Indices::list_kind;
    std::vector<Index> perm(dim);
    std::iota(perm.begin(), perm.end(), Index(0));
    std::shuffle(perm.begin(), perm.end(), g.rng);
    perm.resize(g.uniform(0, dim));
    s.list = perm;
    return s;
}

// Brute-force extract: C(r, c) = A(I[r], J[c]).
template <class TC, class TA>
ref::Dense<TC> brute_extract(const ref::Dense<TA>& a, const std::vector<Index>& I, const std::vector<Index>& J) {
    ref::Dense<TC> c(I.size(), J.size());
    for (Index r = 0; r < I.size(); ++r)
        for (Index k = 0; k < J.size(); ++k)
            if (a(I[r], J[k])) c(r, k) = TC(*a(I[r], J[k]));
    return c;
}
// Brute-force GrB_assign: Z = C with the region I x J replaced by A (accum(C, A) where both exist; without
// an accumulator the region's entries where A has none are deleted), then C<M, replace> = Z.
template <class TC, class TA, class Accum, class M>
ref::Dense<TC> brute_assign(const ref::Dense<TC>& c, const ref::Dense<TA>& a, const std::vector<Index>& I,
                            const std::vector<Index>& J, Accum accum, const Descriptor& d, const ref::Dense<M>* mask) {
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    ref::Dense<TC> z = c;
    for (Index r = 0; r < I.size(); ++r)
        for (Index k = 0; k < J.size(); ++k) {
            auto& e = z(I[r], J[k]);
            const auto& s = a(r, k);
            if constexpr (has_accum) {
                if (s) e = e ? accum(*e, TC(*s)) : TC(*s);
            } else {
                if (s) e = TC(*s);
                else e.reset();
            }
        }
    return ref::write_back(c, z, mask, NoAccum{}, d);
}

// The library calls as named function objects, so that the small and the large tests share one
// instantiation of the checking code (compile time). Called as call(C, mask, accum, desc).
template <class TA>
struct ExtractCall {
    const Matrix<TA>& a;
    const Indices& rows;
    const Indices& cols;
    bool ta = false;
    template <class C, class Mk, class Acc>
    void operator()(C& c, const Mk& mk, Acc accum, Descriptor d) const {
        d.transpose_a = ta;
        extract(c, mk, accum, a, rows.set(), cols.set(), d);
    }
};
template <class TA>
struct AssignCall {
    const Matrix<TA>& a;
    const Indices& rows;
    const Indices& cols;
    bool ta = false;
    template <class C, class Mk, class Acc>
    void operator()(C& c, const Mk& mk, Acc accum, Descriptor d) const {
        d.transpose_a = ta;
        assign(c, mk, accum, a, rows.set(), cols.set(), d);
    }
};
// w(I) = u
template <class TU>
struct VectorAssignCall {
    const Vector<TU>& u;
    const Indices& idx;
    template <class W, class Mk, class Acc>
    void operator()(W& w, const Mk& mk, Acc accum, Descriptor d) const {
        assign(w, mk, accum, u, idx.set(), d);
    }
};
// The GrB_assign reference as a want(accum, desc, mask) callback.
template <class TC, class TA>
auto assign_reference(const ref::Dense<TC>& c0, const ref::Dense<TA>& a, const std::vector<Index>& iv,
                      const std::vector<Index>& jv) {
    return [&c0, &a, &iv, &jv](auto accum, const Descriptor& d, const auto* mask) {
        return brute_assign(c0, a, iv, jv, accum, d, mask);
    };
}

}  // namespace

// ------------------------------------------------------------------------------------------- extract

TEST_CASE("extract C = A(I, J): all, ranges, unsorted and repeated lists, transposed A", "[extract][matrix]") {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            const bool ta = g.uniform(0, 1);
            // op(A) is m x n; A is stored transposed when ta.
            const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, g.real() * 0.5, true);
            const auto a = ta ? ref::transpose(a_st) : a_st;
            const Matrix<int> A = ref::to_matrix(a_st);
            const Indices I = extract_indices(g, m), J = extract_indices(g, n);
            INFO("seed " << seed << ", op(A) " << m << "x" << n << (ta ? " (transposed)" : "") << ", I " << I.str()
                         << ", J " << J.str());
            const auto iv = I.indices(), jv = J.indices();
            const auto t = brute_extract<int>(a, iv, jv);
            const auto c0 = g.matrix<int>(iv.size(), jv.size(), 0.3);
            const auto maskd = g.matrix<int>(iv.size(), jv.size(), 0.4);
            check_matrix_variants(c0, maskd, ExtractCall<int>{A, I, J, ta}, write_back_of(c0, t));
            // Into another type, without mask.
            Matrix<double> cd(iv.size(), jv.size());
            extract(cd, no_mask, no_accum, A, I.set(), J.set(), Descriptor{.transpose_a = ta});
            REF_REQUIRE_SAME(ref::to_dense(cd), cast<double>(t));
        }
    }
}

TEST_CASE("extract w = u(I) from sparse and dense vectors", "[extract][vector]") {
    for (std::uint64_t seed = 11; seed <= 20; ++seed) {
        ref::Gen g(seed);
        for (Index n : {Index(0), Index(1), Index(2), Index(9), Index(50), Index(130)}) {
            const auto u = g.vector<int>(n, g.real() * 0.6);
            const bool u_dense = g.uniform(0, 1);
            const Vector<int> U = vector_in_storage(u, u_dense);
            const Indices I = extract_indices(g, n);
            INFO("seed " << seed << ", n " << n << (u_dense ? ", u dense" : ", u sparse") << ", I " << I.str());
            const auto iv = I.indices();
            const auto t = brute_extract<int>(u, iv, {0});
            const auto w0 = g.vector<int>(iv.size(), 0.3), wm = g.vector<int>(iv.size(), 0.5);
            check_vector_variants(
                g, w0, wm,
                [&](Vector<int>& w, const auto& mk, auto accum, Descriptor d) { extract(w, mk, accum, U, I.set(), d); },
                write_back_of(w0, t));
        }
    }
}

TEST_CASE("extract w = A(I, j), and a row with transpose_a", "[extract][column]") {
    for (std::uint64_t seed = 21; seed <= 26; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            if (n == 0) continue;
            const bool ta = g.uniform(0, 1);
            const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, g.real() * 0.6);
            const auto a = ta ? ref::transpose(a_st) : a_st;  // op(A): m x n
            const Matrix<int> A = ref::to_matrix(a_st);
            const Index j = g.uniform(0, n - 1);
            const Indices I = extract_indices(g, m);
            INFO("seed " << seed << ", op(A) " << m << "x" << n << (ta ? " (A transposed: a row)" : "") << ", j " << j
                         << ", I " << I.str());
            const auto iv = I.indices();
            const auto t = brute_extract<int>(a, iv, {j});
            const auto w0 = g.vector<int>(iv.size(), 0.3), wm = g.vector<int>(iv.size(), 0.5);
            check_vector_variants(
                g, w0, wm,
                [&](Vector<int>& w, const auto& mk, auto accum, Descriptor d) {
                    d.transpose_a = ta;
                    extract(w, mk, accum, A, I.set(), j, d);
                },
                write_back_of(w0, t));
        }
    }
}

TEST_CASE("extract: out-of-range indices and shape mismatches", "[extract][errors]") {
    Matrix<int> a(4, 6);
    a.set(1, 2, 3);
    std::vector<Index> bad{0, 4, 1};
    Matrix<int> c(3, 6);
    CHECK_THROWS_AS(extract(c, no_mask, no_accum, a, bad, all), InvalidIndex);
    CHECK_THROWS_WITH(extract(c, no_mask, no_accum, a, bad, all), Contains("4"));
    Matrix<int> c2(4, 3);
    CHECK_THROWS_AS(extract(c2, no_mask, no_accum, a, all, std::vector<Index>{0, 6, 1}), InvalidIndex);
    CHECK_THROWS_AS(extract(c2, no_mask, no_accum, a, all, IndexRange{4, 7, 1}), InvalidIndex);
    CHECK_NOTHROW(extract(c2, no_mask, no_accum, a, all, IndexRange{3, 6, 1}));
    CHECK_NOTHROW(extract(c2, no_mask, no_accum, a, all, IndexRange{0, 6, 2}));
    // Shape of C must be |I| x |J|; the mask has C's shape.
    CHECK_THROWS_AS(extract(c2, no_mask, no_accum, a, all, IndexRange{0, 6, 1}), DimensionMismatch);
    Matrix<int> mask_bad(3, 3);
    CHECK_THROWS_AS(extract(c2, mask_bad, no_accum, a, all, IndexRange{3, 6, 1}), DimensionMismatch);
    // A stride of 0 is an InvalidValue.
    CHECK_THROWS_AS(IndexSet(IndexRange{0, 4, 0}), InvalidValue);
    // Column extract: the column must exist.
    Vector<int> w(4);
    CHECK_THROWS_AS(extract(w, no_mask, no_accum, a, all, 6), InvalidIndex);
    CHECK_THROWS_WITH(extract(w, no_mask, no_accum, a, all, 6), Contains("6"));
    CHECK_NOTHROW(extract(w, no_mask, no_accum, a, all, 5));
    Vector<int> w6(6);
    CHECK_THROWS_AS(extract(w6, no_mask, no_accum, a, all, 4, Descriptor{.transpose_a = true}), InvalidIndex);
    CHECK_NOTHROW(extract(w6, no_mask, no_accum, a, all, 3, Descriptor{.transpose_a = true}));
    CHECK(w6.get(2) == std::optional<int>());
    extract(w6, no_mask, no_accum, a, all, 1, Descriptor{.transpose_a = true});
    CHECK(w6.get(2) == 3);
    CHECK(w6.nvals() == 1);
    // Vector extract.
    Vector<int> u(5), w2(2);
    CHECK_THROWS_AS(extract(w2, no_mask, no_accum, u, std::vector<Index>{0, 5}), InvalidIndex);
    CHECK_THROWS_AS(extract(w2, no_mask, no_accum, u, std::vector<Index>{0, 1, 2}), DimensionMismatch);
}

// ------------------------------------------------------------------------------------------- assign

TEST_CASE("assign C(I, J) = A: the mask covers all of C, without accum the region is replaced", "[assign][matrix]") {
    for (std::uint64_t seed = 31; seed <= 40; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            const Indices I = assign_indices(g, m), J = assign_indices(g, n);
            const auto iv = I.indices(), jv = J.indices();
            const bool ta = g.uniform(0, 1);
            INFO("seed " << seed << ", C " << m << "x" << n << ", I " << I.str() << ", J " << J.str()
                         << (ta ? ", A transposed" : ""));
            const auto a = g.matrix<int>(iv.size(), jv.size(), g.real() * 0.6);  // op(A)
            const Matrix<int> A = ref::to_matrix(ta ? ref::transpose(a) : a);
            const auto c0 = g.matrix<int>(m, n, 0.4);
            const auto maskd = g.matrix<int>(m, n, 0.5);
            check_matrix_variants(c0, maskd, AssignCall<int>{A, I, J, ta}, assign_reference(c0, a, iv, jv));
            // Mixed: double A into an int C (values truncate toward zero).
            const auto ad = g.matrix<double>(iv.size(), jv.size(), 0.5);
            Matrix<int> ci = ref::to_matrix(c0);
            assign(ci, no_mask, no_accum, ref::to_matrix(ad), I.set(), J.set());
            REF_REQUIRE_SAME(ref::to_dense(ci), brute_assign(c0, ad, iv, jv, NoAccum{}, Descriptor{},
                                                             static_cast<const ref::Dense<int>*>(nullptr)));
        }
    }
}

TEST_CASE("assign C(I, J) = s: scalar assign", "[assign][scalar]") {
    for (std::uint64_t seed = 41; seed <= 48; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            const Indices I = assign_indices(g, m), J = assign_indices(g, n);
            const auto iv = I.indices(), jv = J.indices();
            const int s = int(g.uniform(0, 6)) - 2;
            INFO("seed " << seed << ", C " << m << "x" << n << ", I " << I.str() << ", J " << J.str() << ", s " << s);
            ref::Dense<int> full(iv.size(), jv.size());
            for (auto& e : full.a) e = s;
            const auto c0 = g.matrix<int>(m, n, 0.4);
            const auto maskd = g.matrix<int>(m, n, 0.5);
            check_matrix_variants(
                c0, maskd,
                [&](Matrix<int>& c, const auto& mk, auto accum, Descriptor d) {
                    assign(c, mk, accum, s, I.set(), J.set(), d);
                },
                [&](auto accum, const Descriptor& d, const auto* mask) {
                    return brute_assign(c0, full, iv, jv, accum, d, mask);
                });
            // A double scalar into a double C.
            const auto cd0 = g.matrix<double>(m, n, 0.4);
            Matrix<double> cd = ref::to_matrix(cd0);
            assign(cd, no_mask, plus_op{}, 0.5, I.set(), J.set());
            ref::Dense<double> halfs(iv.size(), jv.size());
            for (auto& e : halfs.a) e = 0.5;
            REF_REQUIRE_SAME(ref::to_dense(cd), brute_assign(cd0, halfs, iv, jv, plus_op{}, Descriptor{},
                                                             static_cast<const ref::Dense<int>*>(nullptr)));
        }
    }
}

TEST_CASE("assign w(I) = u and w(I) = s on vectors", "[assign][vector]") {
    for (std::uint64_t seed = 51; seed <= 60; ++seed) {
        ref::Gen g(seed);
        for (Index n : {Index(0), Index(1), Index(2), Index(9), Index(50), Index(130)}) {
            const Indices I = assign_indices(g, n);
            const auto iv = I.indices();
            const auto u = g.vector<int>(iv.size(), g.real() * 0.7);
            const bool u_dense = g.uniform(0, 1);
            const Vector<int> U = vector_in_storage(u, u_dense);
            const int s = int(g.uniform(0, 6)) - 2;
            INFO("seed " << seed << ", n " << n << ", I " << I.str() << (u_dense ? ", u dense" : ", u sparse") << ", s "
                         << s);
            const auto w0 = g.vector<int>(n, 0.4), wm = g.vector<int>(n, 0.5);
            const std::vector<Index> zero{0};
            check_vector_variants(g, w0, wm, VectorAssignCall<int>{U, I}, assign_reference(w0, u, iv, zero));
            ref::Dense<int> full(iv.size(), 1);
            for (auto& e : full.a) e = s;
            check_vector_variants(
                g, w0, wm,
                [&](Vector<int>& w, const auto& mk, auto accum, Descriptor d) { assign(w, mk, accum, s, I.set(), d); },
                [&](auto accum, const Descriptor& d, const auto* mask) {
                    return brute_assign(w0, full, iv, zero, accum, d, mask);
                });
        }
    }
}

TEST_CASE("assign: the library's accumulator types directly, and aliasing", "[assign][alias]") {
    ref::Gen g(61);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        const Indices I = assign_indices(g, m), J = assign_indices(g, n);
        const auto iv = I.indices(), jv = J.indices();
        const auto a = g.matrix<int>(iv.size(), jv.size(), 0.5);
        const auto c0 = g.matrix<int>(m, n, 0.4);
        Matrix<int> c = ref::to_matrix(c0);
        assign(c, no_mask, minus_op{}, ref::to_matrix(a), I.set(), J.set());
        REF_REQUIRE_SAME(ref::to_dense(c), brute_assign(c0, a, iv, jv, minus_op{}, Descriptor{},
                                                        static_cast<const ref::Dense<int>*>(nullptr)));
        c = ref::to_matrix(c0);
        assign(c, no_mask, second_op{}, ref::to_matrix(a), I.set(), J.set());
        REF_REQUIRE_SAME(ref::to_dense(c), brute_assign(c0, a, iv, jv, second_op{}, Descriptor{},
                                                        static_cast<const ref::Dense<int>*>(nullptr)));
        // C<C> = C(:, :) = C with itself as mask and as A (I = J = all).
        c = ref::to_matrix(c0);
        std::vector<Index> allr(m), allc(n);
        std::iota(allr.begin(), allr.end(), Index(0));
        std::iota(allc.begin(), allc.end(), Index(0));
        assign(c, c, plus_op{}, c, all, all);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_assign(c0, c0, allr, allc, plus_op{}, Descriptor{}, &c0));
        // w<w, replace> (I) = s
        const auto w0 = g.vector<int>(m, 0.5);
        Vector<int> w = ref::to_vector(w0);
        assign(w, w, no_accum, 7, I.set(), Descriptor{.replace = true});
        ref::Dense<int> sev(iv.size(), 1);
        for (auto& e : sev.a) e = 7;
        REF_REQUIRE_SAME(ref::to_dense(w),
                         brute_assign(w0, sev, iv, std::vector<Index>{0}, NoAccum{}, Descriptor{.replace = true}, &w0));
    }
}

TEST_CASE("assign: duplicated and out-of-range indices throw InvalidIndex", "[assign][errors]") {
    Matrix<int> c(4, 5), a22(2, 2), a23(2, 3);
    const auto before = ref::to_dense(c);
    std::vector<Index> dup{1, 1}, ok{0, 3}, ok3{0, 2, 4}, out{0, 4};
    CHECK_THROWS_AS(assign(c, no_mask, no_accum, a22, dup, ok), InvalidIndex);
    CHECK_THROWS_WITH(assign(c, no_mask, no_accum, a22, dup, ok), Contains("1"));
    CHECK_THROWS_AS(assign(c, no_mask, no_accum, a22, ok, dup), InvalidIndex);
    CHECK_THROWS_AS(assign(c, no_mask, plus_op{}, a22, ok, dup), InvalidIndex);
    CHECK_THROWS_AS(assign(c, no_mask, no_accum, 3, dup, ok), InvalidIndex);
    CHECK_THROWS_AS(assign(c, no_mask, no_accum, a22, out, ok), InvalidIndex);  // row 4 of 4 rows
    CHECK_THROWS_WITH(assign(c, no_mask, no_accum, a22, out, ok), Contains("4"));
    CHECK_THROWS_AS(assign(c, no_mask, no_accum, a23, ok, std::vector<Index>{0, 5, 1}), InvalidIndex);
    CHECK_THROWS_AS(assign(c, no_mask, no_accum, 1, IndexRange{2, 5, 1}, all), InvalidIndex);
    CHECK_NOTHROW(assign(c, no_mask, no_accum, a23, ok, ok3));
    CHECK_THROWS_AS(assign(c, no_mask, no_accum, a22, ok, ok3), DimensionMismatch);  // A is not |I| x |J|
    Matrix<int> mask_region(2, 3);                                                  // the mask has C's shape
    CHECK_THROWS_AS(assign(c, mask_region, no_accum, a23, ok, ok3), DimensionMismatch);
    REF_REQUIRE_SAME(ref::to_dense(c), before);  // failed calls leave C alone

    Vector<int> w(5), u2(2);
    CHECK_THROWS_AS(assign(w, no_mask, no_accum, u2, std::vector<Index>{3, 3}), InvalidIndex);
    CHECK_THROWS_AS(assign(w, no_mask, no_accum, 1, std::vector<Index>{2, 0, 2}), InvalidIndex);
    CHECK_THROWS_AS(assign(w, no_mask, no_accum, u2, std::vector<Index>{3, 5}), InvalidIndex);
    CHECK_THROWS_AS(assign(w, no_mask, no_accum, 1, std::vector<Index>{7}), InvalidIndex);
    CHECK_THROWS_AS(assign(w, no_mask, no_accum, u2, std::vector<Index>{1, 2, 3}), DimensionMismatch);
    Vector<int> m2(2);
    CHECK_THROWS_AS(assign(w, m2, no_accum, u2, std::vector<Index>{1, 2}), DimensionMismatch);
    CHECK(w.nvals() == 0);
}

// ------------------------------------------------------------------------------------------- kronecker

namespace {
template <class TC, class TA, class TB, class Op>
ref::Dense<TC> brute_kron(const ref::Dense<TA>& a, const ref::Dense<TB>& b, Op op) {
    ref::Dense<TC> c(a.nrows * b.nrows, a.ncols * b.ncols);
    for (Index ia = 0; ia < a.nrows; ++ia)
        for (Index ja = 0; ja < a.ncols; ++ja)
            for (Index ib = 0; ib < b.nrows; ++ib)
                for (Index jb = 0; jb < b.ncols; ++jb)
                    if (a(ia, ja) && b(ib, jb))
                        c(ia * b.nrows + ib, ja * b.ncols + jb) = op(TC(*a(ia, ja)), TC(*b(ib, jb)));
    return c;
}
// times, plus and first behind one type.
struct KronOp {
    int k = 0;
    template <class T> T operator()(T a, T b) const {
        return k == 0 ? times_op{}(a, b) : k == 1 ? plus_op{}(a, b) : first_op{}(a, b);
    }
    cuda::BinaryOp cuda_code() const {
        return k == 0 ? cuda::BinaryOp::times : k == 1 ? cuda::BinaryOp::plus : cuda::BinaryOp::first;
    }
};
constexpr const char* kron_names[] = {"times", "plus", "first"};
}  // namespace

TEST_CASE("kronecker with times, plus and first, masks, accumulators and transposes", "[kronecker]") {
    for (std::uint64_t seed = 71; seed <= 74; ++seed) {
        ref::Gen g(seed);
        const std::vector<std::pair<Index, Index>> shapes{{0, 0}, {1, 1}, {0, 3}, {2, 0}, {1, 4}, {3, 1}, {3, 5}, {6, 4}};
        for (auto [ma, na] : shapes)
            for (auto [mb, nb] : shapes) {
                if (g.uniform(0, 2) != 0) continue;  // a random third of the pairs
                const bool ta = g.uniform(0, 1), tb = g.uniform(0, 1);
                const int k = int(g.uniform(0, 2));
                INFO("seed " << seed << ", A " << ma << "x" << na << ", B " << mb << "x" << nb << ", "
                             << kron_names[k] << (ta ? ", A transposed" : "") << (tb ? ", B transposed" : ""));
                const auto a = g.matrix<int>(ma, na, g.real() * 0.7), b = g.matrix<int>(mb, nb, g.real() * 0.7);
                const Matrix<int> A = ref::to_matrix(ta ? ref::transpose(a) : a);
                const Matrix<int> B = ref::to_matrix(tb ? ref::transpose(b) : b);
                const auto t = brute_kron<int>(a, b, KronOp{k});
                const auto c0 = g.matrix<int>(ma * mb, na * nb, 0.3);
                const auto maskd = g.matrix<int>(ma * mb, na * nb, 0.5);
                check_matrix_variants(
                    c0, maskd,
                    [&](Matrix<int>& c, const auto& mk, auto accum, Descriptor d) {
                        d.transpose_a = ta;
                        d.transpose_b = tb;
                        kronecker(c, mk, accum, KronOp{k}, A, B, d);
                    },
                    write_back_of(c0, t));
            }
    }
}

TEST_CASE("kronecker with the library's op types and mixed value types", "[kronecker][types]") {
    ref::Gen g(81);
    for (int rep = 0; rep < 20; ++rep) {
        const Index ma = g.uniform(0, 5), na = g.uniform(0, 5), mb = g.uniform(0, 5), nb = g.uniform(0, 5);
        INFO(ma << "x" << na << " kron " << mb << "x" << nb);
        const auto a = g.matrix<int>(ma, na, 0.5);
        const auto b = g.matrix<double>(mb, nb, 0.5);
        const Matrix<int> A = ref::to_matrix(a);
        const Matrix<double> B = ref::to_matrix(b);
        Matrix<double> c(ma * mb, na * nb);
        kronecker(c, no_mask, no_accum, times_op{}, A, B);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_kron<double>(a, b, times_op{}));
        kronecker(c, no_mask, no_accum, plus_op{}, A, B);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_kron<double>(a, b, plus_op{}));
        kronecker(c, no_mask, no_accum, first_op{}, A, B);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_kron<double>(a, b, first_op{}));
        // C<M> += kron(A, B)
        const auto c0 = g.matrix<double>(ma * mb, na * nb, 0.3);
        const auto maskd = g.matrix<double>(ma * mb, na * nb, 0.5);
        Matrix<double> c2 = ref::to_matrix(c0);
        kronecker(c2, ref::to_matrix(maskd), plus_op{}, times_op{}, A, B);
        REF_REQUIRE_SAME(ref::to_dense(c2),
                         ref::write_back(c0, brute_kron<double>(a, b, times_op{}), &maskd, plus_op{}, Descriptor{}));
    }
    Matrix<int> a(2, 3), b(4, 5), c_bad(8, 14);
    CHECK_THROWS_AS(kronecker(c_bad, no_mask, no_accum, times_op{}, a, b), DimensionMismatch);
    Matrix<int> c(8, 15), m_bad(8, 14);
    CHECK_NOTHROW(kronecker(c, no_mask, no_accum, times_op{}, a, b));
    CHECK_THROWS_AS(kronecker(c, m_bad, no_accum, times_op{}, a, b), DimensionMismatch);
}

// ------------------------------------------------------------------------------------------- large inputs

// Big enough for the parallel paths (more than 512 rows, more than 4096 entries, vectors above 2^16).
TEST_CASE("large inputs: extract and assign on the parallel paths", "[extract][assign][large]") {
    ref::Gen g(301);
    const Index m = 2600, n = 150;
    const auto a = g.matrix<int>(m, n, 0.05, true);
    const Matrix<int> A = ref::to_matrix(a);
    {
        // Rows: a long unsorted list with repeats; columns: a strided range.
        Indices I, J;
        I.kind = Indices::list_kind;
        I.dim = m;
        for (int k = 0; k < 3000; ++k) I.list.push_back(g.uniform(0, m - 1));
        J.kind = Indices::range_kind;
        J.dim = n;
        J.range = {3, n, 2};
        const auto iv = I.indices(), jv = J.indices();
        INFO("extract " << iv.size() << "x" << jv.size());
        const auto t = brute_extract<int>(a, iv, jv);
        const auto c0 = g.matrix<int>(iv.size(), jv.size(), 0.05);
        const auto maskd = g.matrix<int>(iv.size(), jv.size(), 0.3, true);
        check_matrix_variants(c0, maskd, ExtractCall<int>{A, I, J, false}, write_back_of(c0, t));
    }
    {
        // Assign a 1500 x 100 block at shuffled rows and all-but-some columns of a 2600 x 150 C.
        Indices I, J;
        I.kind = J.kind = Indices::list_kind;
        I.dim = m;
        J.dim = n;
        std::vector<Index> rows(m), cols(n);
        std::iota(rows.begin(), rows.end(), Index(0));
        std::iota(cols.begin(), cols.end(), Index(0));
        std::shuffle(rows.begin(), rows.end(), g.rng);
        std::shuffle(cols.begin(), cols.end(), g.rng);
        I.list.assign(rows.begin(), rows.begin() + 1500);
        J.list.assign(cols.begin(), cols.begin() + 100);
        const auto iv = I.indices(), jv = J.indices();
        const auto blk = g.matrix<int>(iv.size(), jv.size(), 0.05, true);
        const Matrix<int> B = ref::to_matrix(blk);
        const auto c0 = g.matrix<int>(m, n, 0.05);
        const auto maskd = g.matrix<int>(m, n, 0.3, true);
        INFO("assign " << iv.size() << "x" << jv.size());
        check_matrix_variants(c0, maskd, AssignCall<int>{B, I, J, false}, assign_reference(c0, blk, iv, jv));
    }
    {
        const Index len = 70001;
        Indices I;
        I.kind = Indices::range_kind;
        I.dim = len;
        I.range = {7, len, 3};
        const auto iv = I.indices();
        const auto u = g.vector<int>(iv.size(), 0.3);
        const Vector<int> U = vector_in_storage(u, true);
        const auto w0 = g.vector<int>(len, 0.2), wm = g.vector<int>(len, 0.5);
        INFO("vector assign of " << iv.size() << " into " << len);
        const std::vector<Index> zero{0};
        check_vector_variants(g, w0, wm, VectorAssignCall<int>{U, I}, assign_reference(w0, u, iv, zero));
    }
}

// ------------------------------------------------------------------------------------------- index ranges

// A half-open strided range stands for begin, begin + stride, ... below end. Its end may exceed the
// dimension when every index it stands for is inside (as Python's range(0, 12, 3) on 10 elements gives
// 0, 3, 6, 9): only the indices themselves must be in range.
TEST_CASE("IndexRange: only the indices a range stands for must be inside the dimension", "[extract][range]") {
    Matrix<int> a(3, 10);
    a.set(1, 9, 5);
    Matrix<int> c(3, 4);
    CHECK_NOTHROW(extract(c, no_mask, no_accum, a, all, IndexRange{0, 12, 3}));  // 0, 3, 6, 9
    CHECK(c.get(1, 3).value_or(0) == 5);
    CHECK_THROWS_AS(extract(c, no_mask, no_accum, a, all, IndexRange{1, 12, 3}), InvalidIndex);  // 1, 4, 7, 10
    CHECK_NOTHROW(extract(c, no_mask, no_accum, a, all, IndexRange{0, 10, 3}));
}
