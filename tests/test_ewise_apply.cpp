// eWiseAdd, eWiseMult, apply, select and transpose on matrices and vectors, against the brute-force reference
// on random inputs, for every mask variant (none, value, structure, complement, replace) and accumulator
// (none, plus, second, min), with transposed operands and mixed value types.
//
// The binary, unary and select operators' own values are checked in test_semirings.cpp; here the reference
// applies the same operator to the same operands, so what is checked is which entries are combined, how, and
// how the result is written back. To keep compile time down, most calls pass a run-time dispatching operator
// (DynOp and friends); a few call sites pass the library's operator types directly.
#include <optional>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace hybla;
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

// Reference eWiseAdd (union) and eWiseMult (intersection), computed in the output type.
template <class TC, class TA, class TB, class Op>
ref::Dense<TC> brute_ewise(bool add, const ref::Dense<TA>& a, const ref::Dense<TB>& b, Op op) {
    ref::Dense<TC> c(a.nrows, a.ncols);
    for (std::size_t x = 0; x < a.a.size(); ++x) {
        const auto &ea = a.a[x], &eb = b.a[x];
        if (ea && eb) c.a[x] = op(TC(*ea), TC(*eb));
        else if (add && ea) c.a[x] = TC(*ea);
        else if (add && eb) c.a[x] = TC(*eb);
    }
    return c;
}

// All binary operators behind one type, chosen at run time.
constexpr const char* op_names[] = {"plus", "times", "min", "max", "minus", "first", "second", "div", "eq", "ne",
                                    "lt",   "le",    "gt",  "ge",  "lor",   "land",  "lxor",   "pair"};
constexpr int n_ops = int(std::size(op_names));
struct DynOp {
    int k = 0;
    template <class T> T operator()(T a, T b) const {
        switch (k) {
            case 0: return plus_op{}(a, b);
            case 1: return times_op{}(a, b);
            case 2: return min_op{}(a, b);
            case 3: return max_op{}(a, b);
            case 4: return minus_op{}(a, b);
            case 5: return first_op{}(a, b);
            case 6: return second_op{}(a, b);
            case 7: return div_op{}(a, b);
            case 8: return eq_op{}(a, b);
            case 9: return ne_op{}(a, b);
            case 10: return lt_op{}(a, b);
            case 11: return le_op{}(a, b);
            case 12: return gt_op{}(a, b);
            case 13: return ge_op{}(a, b);
            case 14: return lor_op{}(a, b);
            case 15: return land_op{}(a, b);
            case 16: return lxor_op{}(a, b);
            default: return pair_op{}(a, b);
        }
    }
    // The same operator as the GPU knows it (engine/cuda/dispatch.hpp: binary_code).
    cuda::BinaryOp cuda_code() const {
        using B = cuda::BinaryOp;
        constexpr B codes[] = {B::plus, B::times, B::min, B::max, B::minus, B::first, B::second, B::div, B::eq,
                               B::ne,   B::lt,    B::le,  B::gt,  B::ge,    B::lor,   B::land,   B::lxor, B::pair};
        return codes[k < n_ops ? k : n_ops - 1];
    }
};

// The write-back variants: mask kind x replace x accumulator.
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
// The accumulators: ref::DynAccum (plus, second, min behind one type); the accumulator types themselves are
// passed directly in a few calls below.

// For every variant: C = c0; run(C, mask, accum, desc); compare with C<M, replace> accum= t.
// run is called with NoMask or the Matrix mask, each accumulator type and a descriptor carrying the mask flags.
template <class TC, class M, class Run>
void check_matrix_variants(const ref::Dense<TC>& c0, const ref::Dense<TC>& t, const ref::Dense<M>& maskd, Run&& run,
                           double rel = 0) {
    const Matrix<M> mask = ref::to_matrix(maskd);
    for (const Variant& v : all_variants()) {
        INFO(v.str());
        const Descriptor d = v.desc();
        with_accum(v.accum, [&](auto accum) {
            Matrix<TC> c = ref::to_matrix(c0);
            if (v.mask == no_mask_kind) run(c, no_mask, accum, d);
            else run(c, mask, accum, d);
            const auto want = ref::write_back(c0, t, v.mask == no_mask_kind ? nullptr : &maskd, accum, d);
            REF_REQUIRE_SAME(ref::to_dense(c), want, rel);
        });
    }
}

// The same for vectors; w and the mask alternate between sparse and dense storage.
template <class TC, class M, class Run>
void check_vector_variants(ref::Gen& g, const ref::Dense<TC>& w0, const ref::Dense<TC>& t, const ref::Dense<M>& maskd,
                           Run&& run, double rel = 0) {
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
            REQUIRE(w.size() == w0.nrows);
            const auto want = ref::write_back(w0, t, v.mask == no_mask_kind ? nullptr : &maskd, accum, d);
            REF_REQUIRE_SAME(ref::to_dense(w), want, rel);
            REQUIRE(w.nvals() == want.nvals());
        });
    }
}

template <class T>
Vector<T> vector_in_storage(const ref::Dense<T>& d, bool dense) {
    auto v = ref::to_vector(d);
    if (dense) v.to_dense();
    return v;
}

// The library calls as named function objects (rather than lambdas at each call site), so that tests of
// the same operation share one instantiation of the checking code: this keeps compile time down.
// Each is called as call(C, mask, accum, desc) with C a Matrix or a Vector.
template <class A, class B, class Op>
struct EwiseCall {
    bool add;
    Op op;
    const A& a;
    const B& b;
    bool ta = false, tb = false;
    template <class C, class Mk, class Acc>
    void operator()(C& c, const Mk& mk, Acc accum, Descriptor d) const {
        d.transpose_a = ta;
        d.transpose_b = tb;
        if (add) eWiseAdd(c, mk, accum, op, a, b, d);
        else eWiseMult(c, mk, accum, op, a, b, d);
    }
};
template <class A, class B, class Op>
EwiseCall<A, B, Op> ewise_call(bool add, Op op, const A& a, const B& b, bool ta = false, bool tb = false) {
    return {add, op, a, b, ta, tb};
}
template <class A, class F>
struct ApplyCall {
    F f;
    const A& a;
    bool ta = false;
    template <class C, class Mk, class Acc>
    void operator()(C& c, const Mk& mk, Acc accum, Descriptor d) const {
        d.transpose_a = ta;
        apply(c, mk, accum, f, a, d);
    }
};
template <class A, class F>
ApplyCall<A, F> apply_call(F f, const A& a, bool ta = false) { return {f, a, ta}; }
// apply with a bound scalar: op(A, s), or op(s, A) when scalar_first.
template <class A, class Op, class S>
struct BindCall {
    Op op;
    const A& a;
    S s;
    bool scalar_first;
    bool ta = false;
    template <class C, class Mk, class Acc>
    void operator()(C& c, const Mk& mk, Acc accum, Descriptor d) const {
        d.transpose_a = ta;
        if (scalar_first) apply(c, mk, accum, op, s, a, d);
        else apply(c, mk, accum, op, a, s, d);
    }
};
template <class A, class Op, class S>
BindCall<A, Op, S> bind_call(Op op, const A& a, S s, bool scalar_first, bool ta = false) {
    return {op, a, s, scalar_first, ta};
}
template <class A, class Sel>
struct SelectCall {
    Sel sel;
    const A& a;
    bool ta = false;
    template <class C, class Mk, class Acc>
    void operator()(C& c, const Mk& mk, Acc accum, Descriptor d) const {
        d.transpose_a = ta;
        select(c, mk, accum, sel, a, d);
    }
};
template <class A, class Sel>
SelectCall<A, Sel> select_call(Sel sel, const A& a, bool ta = false) { return {sel, a, ta}; }
template <class A>
struct TransposeCall {
    const A& a;
    bool ta = false;
    template <class C, class Mk, class Acc>
    void operator()(C& c, const Mk& mk, Acc accum, Descriptor d) const {
        d.transpose_a = ta;
        transpose(c, mk, accum, a, d);
    }
};

}  // namespace

// ------------------------------------------------------------------------------------------- eWise

TEST_CASE("eWiseAdd and eWiseMult on matrices: every op, transposes, masks and accumulators", "[ewise][matrix]") {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            for (int k = 0; k < n_ops; ++k) {
                const bool ta = g.uniform(0, 1), tb = g.uniform(0, 1), skew = g.uniform(0, 1);
                const double da = g.real() * 0.5, db = g.real() * 0.5;
                INFO("seed " << seed << ", C " << m << "x" << n << ", op " << op_names[k] << (ta ? ", A transposed" : "")
                             << (tb ? ", B transposed" : "") << ", densities " << da << " " << db);
                // Stored as given; used as op(A) and op(B).
                const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, da, skew);
                const auto b_st = g.matrix<int>(tb ? n : m, tb ? m : n, db);
                const auto a = ta ? ref::transpose(a_st) : a_st;
                const auto b = tb ? ref::transpose(b_st) : b_st;
                const Matrix<int> A = ref::to_matrix(a_st), B = ref::to_matrix(b_st);
                const auto c0 = g.matrix<int>(m, n, 0.3);
                const auto maskd = g.matrix<int>(m, n, 0.4);
                const DynOp op{k};
                for (bool add : {true, false}) {
                    INFO((add ? "eWiseAdd" : "eWiseMult"));
                    const auto t = brute_ewise<int>(add, a, b, op);
                    check_matrix_variants(c0, t, maskd, ewise_call(add, op, A, B, ta, tb));
                }
            }
        }
    }
}

TEST_CASE("eWiseAdd and eWiseMult with mixed value types: int A, double B, double C", "[ewise][matrix][mixed][cpu-only]") {
    for (std::uint64_t seed = 11; seed <= 13; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            for (int k : {0, 1, 2, 4, 7, 10, 6}) {
                const bool ta = g.uniform(0, 1);
                INFO("seed " << seed << ", C " << m << "x" << n << ", op " << op_names[k] << (ta ? ", A transposed" : ""));
                const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, g.real() * 0.5);
                const auto b = g.matrix<double>(m, n, g.real() * 0.5, true);
                const auto a = ta ? ref::transpose(a_st) : a_st;
                const Matrix<int> A = ref::to_matrix(a_st);
                const Matrix<double> B = ref::to_matrix(b);
                const auto c0 = g.matrix<double>(m, n, 0.3);
                const auto maskd = g.matrix<bool>(m, n, 0.5);  // a bool mask with false entries
                const DynOp op{k};
                for (bool add : {true, false}) {
                    INFO((add ? "eWiseAdd" : "eWiseMult"));
                    const auto t = brute_ewise<double>(add, a, b, op);
                    check_matrix_variants(c0, t, maskd, ewise_call(add, op, A, B, ta));
                }
            }
        }
    }
}

TEST_CASE("eWiseAdd and eWiseMult on vectors, sparse and dense storage", "[ewise][vector]") {
    for (std::uint64_t seed = 21; seed <= 24; ++seed) {
        for (Index n : {Index(0), Index(1), Index(2), Index(7), Index(33), Index(100), Index(257)}) {
            // Each (seed, size) is a unit of its own generator, so HYBLA_TEST_SHARD can spread this case
            // (slow under compute-sanitizer) over several processes.
            if (!ref::in_shard()) continue;
            ref::Gen g(seed * 1000 + n);
            for (int k = 0; k < n_ops; ++k) {
                const bool u_dense = g.uniform(0, 1), v_dense = g.uniform(0, 1);
                const double du = g.real() * 0.5, dv = g.real() * 0.5;
                INFO("seed " << seed << ", n " << n << ", op " << op_names[k] << (u_dense ? ", u dense" : ", u sparse")
                             << (v_dense ? ", v dense" : ", v sparse") << ", densities " << du << " " << dv);
                const auto u = g.vector<int>(n, du), v = g.vector<int>(n, dv);
                const auto U = vector_in_storage(u, u_dense), V = vector_in_storage(v, v_dense);
                const auto w0 = g.vector<int>(n, 0.3);
                const auto maskd = g.vector<int>(n, 0.5);
                const DynOp op{k};
                for (bool add : {true, false}) {
                    INFO((add ? "eWiseAdd" : "eWiseMult"));
                    const auto t = brute_ewise<int>(add, u, v, op);
                    check_vector_variants(g, w0, t, maskd, ewise_call(add, op, U, V));
                }
            }
        }
    }
}

TEST_CASE("eWise on vectors with mixed value types: int u, double v, double w", "[ewise][vector][mixed][cpu-only]") {
    ref::Gen g(31);
    for (Index n : {Index(0), Index(1), Index(5), Index(64), Index(200)}) {
        for (int k : {0, 1, 3, 7, 11}) {
            INFO("n " << n << ", op " << op_names[k]);
            const auto u = g.vector<int>(n, 0.4);
            const auto v = g.vector<double>(n, 0.2);
            const auto U = vector_in_storage(u, g.uniform(0, 1));
            const auto V = vector_in_storage(v, g.uniform(0, 1));
            const auto w0 = g.vector<double>(n, 0.3);
            const auto maskd = g.vector<double>(n, 0.5);
            for (bool add : {true, false}) {
                const auto t = brute_ewise<double>(add, u, v, DynOp{k});
                check_vector_variants(g, w0, t, maskd, ewise_call(add, DynOp{k}, U, V));
            }
        }
    }
}

namespace {
// eWiseAdd/eWiseMult with the library's own op, monoid or semiring type (no mask): add uses add_op, mult mult_op.
template <class T, class Op, class AddRef, class MultRef>
void check_op_type(Op op, AddRef add_ref, MultRef mult_ref, std::uint64_t seed) {
    ref::Gen g(seed);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        const auto a = g.template matrix<T>(m, n, 0.4), b = g.template matrix<T>(m, n, 0.4);
        const Matrix<T> A = ref::to_matrix(a), B = ref::to_matrix(b);
        Matrix<T> c(m, n);
        eWiseAdd(c, no_mask, no_accum, op, A, B);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_ewise<T>(true, a, b, add_ref));
        eWiseMult(c, no_mask, no_accum, op, A, B);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_ewise<T>(false, a, b, mult_ref));
        if constexpr (requires { typename Op::add_monoid; }) {  // vectors: semirings only, to save compile time
            const auto u = g.template vector<T>(m, 0.4), v = g.template vector<T>(m, 0.4);
            Vector<T> w(m);
            eWiseAdd(w, no_mask, no_accum, op, ref::to_vector(u), ref::to_vector(v));
            REF_REQUIRE_SAME(ref::to_dense(w), brute_ewise<T>(true, u, v, add_ref));
            eWiseMult(w, no_mask, no_accum, op, ref::to_vector(u), ref::to_vector(v));
            REF_REQUIRE_SAME(ref::to_dense(w), brute_ewise<T>(false, u, v, mult_ref));
        }
    }
}
}  // namespace

TEST_CASE("eWise with a binary op, a monoid or a semiring as the operator", "[ewise][semiring][cpu-only]") {
    auto plus = [](auto x, auto y) { return decltype(x)(x + y); };
    auto times = [](auto x, auto y) { return decltype(x)(x * y); };
    auto mn = [](auto x, auto y) { return x < y ? x : y; };
    SECTION("binary ops") {
        check_op_type<int>(minus_op{}, [](int x, int y) { return x - y; }, [](int x, int y) { return x - y; }, 1);
        check_op_type<int>(div_op{}, div_op{}, div_op{}, 2);  // includes division by zero
        check_op_type<double>(div_op{}, [](double x, double y) { return x / y; }, [](double x, double y) { return x / y; }, 3);
        check_op_type<int>(lt_op{}, [](int x, int y) { return int(x < y); }, [](int x, int y) { return int(x < y); }, 4);
    }
    SECTION("monoids") {
        check_op_type<int>(plus_monoid{}, plus, plus, 7);
        check_op_type<double>(min_monoid{}, mn, mn, 8);
        check_op_type<bool>(lor_monoid{}, [](bool x, bool y) { return x || y; }, [](bool x, bool y) { return x || y; }, 10);
    }
    SECTION("semirings: eWiseAdd uses the add monoid, eWiseMult the multiply op") {
        check_op_type<int>(plus_times{}, plus, times, 11);
        check_op_type<double>(min_plus{}, mn, plus, 12);
        check_op_type<bool>(lor_land{}, [](bool x, bool y) { return x || y; }, [](bool x, bool y) { return x && y; }, 14);
        check_op_type<double>(plus_first{}, plus, [](double x, double) { return x; }, 15);
    }
}

TEST_CASE("eWise: output aliased with the inputs and the mask", "[ewise][alias]") {
    ref::Gen g(41);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        const auto a = g.matrix<int>(m, n, 0.4);
        Matrix<int> A = ref::to_matrix(a);
        // A<A> += A + A
        eWiseAdd(A, A, plus_op{}, plus_op{}, A, A);
        const auto t = brute_ewise<int>(true, a, a, plus_op{});
        REF_REQUIRE_SAME(ref::to_dense(A), ref::write_back(a, t, &a, plus_op{}, Descriptor{}));
        // B<!B, replace> = B .* C with B transposed (square only)
        if (m == n) {
            const auto b = g.matrix<int>(m, n, 0.4), c = g.matrix<int>(m, n, 0.4);
            Matrix<int> B = ref::to_matrix(b);
            Descriptor d;
            d.mask_complement = true;
            d.replace = true;
            d.transpose_a = true;
            eWiseMult(B, B, no_accum, times_op{}, B, ref::to_matrix(c), d);
            const auto tt = brute_ewise<int>(false, ref::transpose(b), c, times_op{});
            REF_REQUIRE_SAME(ref::to_dense(B), ref::write_back(b, tt, &b, NoAccum{}, d));
        }
        const auto u = g.vector<int>(m, 0.5);
        Vector<int> U = ref::to_vector(u);
        eWiseMult(U, U, minus_op{}, times_op{}, U, U);
        const auto tu = brute_ewise<int>(false, u, u, times_op{});
        REF_REQUIRE_SAME(ref::to_dense(U), ref::write_back(u, tu, &u, minus_op{}, Descriptor{}));
    }
}

TEST_CASE("eWise: dimension mismatches throw DimensionMismatch", "[ewise][errors]") {
    Matrix<int> a(3, 4), b(3, 4), bt(4, 3), c(3, 4), c_bad(4, 4);
    Matrix<bool> mask_bad(3, 3);
    CHECK_THROWS_AS(eWiseAdd(c, no_mask, no_accum, plus_op{}, a, bt), DimensionMismatch);
    CHECK_THROWS_AS(eWiseMult(c_bad, no_mask, no_accum, plus_op{}, a, b), DimensionMismatch);
    CHECK_THROWS_AS(eWiseAdd(c, mask_bad, no_accum, plus_op{}, a, b), DimensionMismatch);
    Descriptor d;
    d.transpose_b = true;
    CHECK_NOTHROW(eWiseAdd(c, no_mask, no_accum, plus_op{}, a, bt, d));
    CHECK_THROWS_AS(eWiseAdd(c, no_mask, no_accum, plus_op{}, a, b, d), DimensionMismatch);
    Vector<int> u(5), v(6), w(5);
    Vector<int> vm(4);
    CHECK_THROWS_AS(eWiseAdd(w, no_mask, no_accum, plus_op{}, u, v), DimensionMismatch);
    CHECK_THROWS_AS(eWiseMult(w, vm, no_accum, plus_op{}, u, u), DimensionMismatch);
    CHECK_THROWS_AS(eWiseMult(v, no_mask, no_accum, plus_op{}, u, u), DimensionMismatch);
}

// ------------------------------------------------------------------------------------------- apply

namespace {
constexpr const char* unary_names[] = {"identity", "ainv", "minv", "abs", "lnot", "one"};
struct DynUnary {
    int k = 0;
    template <class T> T operator()(T x) const {
        switch (k) {
            case 0: return identity_op{}(x);
            case 1: return ainv_op{}(x);
            case 2: return minv_op{}(x);
            case 3: return abs_op{}(x);
            case 4: return lnot_op{}(x);
            default: return one_op{}(x);
        }
    }
};
template <class TC, class TA, class F>
ref::Dense<TC> brute_map(const ref::Dense<TA>& a, F f) {
    ref::Dense<TC> c(a.nrows, a.ncols);
    for (Index i = 0; i < a.nrows; ++i)
        for (Index j = 0; j < a.ncols; ++j)
            if (a(i, j)) c(i, j) = TC(f(i, j, *a(i, j)));
    return c;
}
}  // namespace

// Vectors with every entry present (the GPU's one-kernel path when the operands are full, and w too for an
// accumulator), against the same reference and every mask/accumulator variant, which also take the general path.
TEST_CASE("eWise and apply on full vectors, accumulated into full and partial vectors", "[ewise][apply][vector][full]") {
    for (std::uint64_t seed = 25; seed <= 26; ++seed) {
        ref::Gen g(seed);
        for (Index n : {Index(0), Index(1), Index(7), Index(300)}) {
            const auto u = g.vector<double>(n, 1.0), v = g.vector<double>(n, 1.0);
            const Vector<double> U = vector_in_storage(u, true), V = vector_in_storage(v, true);
            const auto w_full = g.vector<double>(n, 1.0), w_part = g.vector<double>(n, 0.4);
            const auto maskd = g.vector<double>(n, 0.5);
            for (int k : {0, 1, 2, 4}) {  // plus, times, min, minus
                const DynOp op{k};
                INFO("seed " << seed << ", n " << n << ", op " << op_names[k]);
                for (bool add : {true, false}) {
                    const auto t = brute_ewise<double>(add, u, v, op);
                    check_vector_variants(g, w_full, t, maskd, ewise_call(add, op, U, V));
                    check_vector_variants(g, w_part, t, maskd, ewise_call(add, op, U, V));
                }
                const auto bound = brute_map<double>(u, [&](Index, Index, double x) { return op(x, 2.5); });
                const auto bound_first = brute_map<double>(u, [&](Index, Index, double x) { return op(-1.5, x); });
                check_vector_variants(g, w_full, bound, maskd, bind_call(op, U, 2.5, false));
                check_vector_variants(g, w_part, bound_first, maskd, bind_call(op, U, -1.5, true));
            }
            const auto absolute = brute_map<double>(u, [](Index, Index, double x) { return std::abs(x); });
            check_vector_variants(g, w_full, absolute, maskd, apply_call(abs_op{}, U));
            check_vector_variants(g, w_part, absolute, maskd, apply_call(abs_op{}, U));
        }
    }
}

TEST_CASE("apply: unary ops on matrices, with transposes, masks and accumulators", "[apply][matrix][cpu-only]") {
    for (std::uint64_t seed = 51; seed <= 53; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            for (int k = 0; k < 6; ++k) {
                const bool ta = g.uniform(0, 1);
                INFO("seed " << seed << ", C " << m << "x" << n << ", " << unary_names[k] << (ta ? ", A transposed" : ""));
                const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, g.real() * 0.5, true);
                const auto a = ta ? ref::transpose(a_st) : a_st;
                const Matrix<int> A = ref::to_matrix(a_st);
                const auto c0 = g.matrix<int>(m, n, 0.3);
                const auto maskd = g.matrix<int>(m, n, 0.4);
                const DynUnary f{k};
                const auto t = brute_map<int>(a, [&](Index, Index, int x) { return f(x); });
                check_matrix_variants(c0, t, maskd, apply_call(f, A, ta));
                // double in, double out (minv of 0 is inf), under a mask with an accumulator
                const auto ad = g.matrix<double>(m, n, 0.3);
                const auto cd0 = g.matrix<double>(m, n, 0.3);
                const auto td = brute_map<double>(ad, [&](Index, Index, double x) { return f(x); });
                Matrix<double> cd = ref::to_matrix(cd0);
                apply(cd, ref::to_matrix(maskd), max_op{}, f, ref::to_matrix(ad), Descriptor{.replace = true});
                REF_REQUIRE_SAME(ref::to_dense(cd), ref::write_back(cd0, td, &maskd, max_op{}, Descriptor{.replace = true}));
            }
        }
    }
}

TEST_CASE("apply: the library's unary op types, several value types", "[apply][types][cpu-only]") {
    ref::Gen g(55);
    auto run = [&](auto op, auto tag) {
        using T = decltype(tag);
        for (auto [m, n] : g.shapes()) {
            const auto a = g.matrix<T>(m, n, 0.5);
            Matrix<T> c(m, n);
            apply(c, no_mask, no_accum, op, ref::to_matrix(a));
            REF_REQUIRE_SAME(ref::to_dense(c), brute_map<T>(a, [&](Index, Index, T x) { return op(x); }));
            if constexpr (std::is_same_v<T, int>) {  // vectors for one type only, to save compile time
                const auto u = g.vector<T>(m, 0.5);
                Vector<T> w(m);
                apply(w, no_mask, no_accum, op, ref::to_vector(u));
                REF_REQUIRE_SAME(ref::to_dense(w), brute_map<T>(u, [&](Index, Index, T x) { return op(x); }));
            }
        }
    };
    run(ainv_op{}, int());
    run(ainv_op{}, std::uint8_t());  // wraps
    run(minv_op{}, int());           // 1/0 is INT_MAX
    run(minv_op{}, double());
    run(abs_op{}, double());
    run(lnot_op{}, bool());
    run(one_op{}, std::int64_t());
    // A unary op into another type: int A, double C.
    for (auto [m, n] : g.shapes()) {
        const auto a = g.matrix<int>(m, n, 0.5);
        Matrix<double> c(m, n);
        apply(c, no_mask, no_accum, [](int x) { return x / 2.0; }, ref::to_matrix(a));
        REF_REQUIRE_SAME(ref::to_dense(c), brute_map<double>(a, [](Index, Index, int x) { return x / 2.0; }));
    }
}

TEST_CASE("apply: index-unary f(i, j, x) on matrices and vectors", "[apply][index][cpu-only]") {
    for (std::uint64_t seed = 61; seed <= 63; ++seed) {
        ref::Gen g(seed);
        auto f = [](Index i, Index j, int x) { return int(3 * i) - int(j) + x; };
        for (auto [m, n] : g.shapes()) {
            const bool ta = g.uniform(0, 1);
            INFO("seed " << seed << ", C " << m << "x" << n << (ta ? ", A transposed" : ""));
            const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, 0.4);
            const auto a = ta ? ref::transpose(a_st) : a_st;
            const Matrix<int> A = ref::to_matrix(a_st);
            const auto c0 = g.matrix<int>(m, n, 0.3);
            const auto maskd = g.matrix<int>(m, n, 0.4);
            // i and j are those of the (transposed) operand, i.e. of C.
            check_matrix_variants(c0, brute_map<int>(a, f), maskd, apply_call(f, A, ta));
            // A generic lambda, into double.
            Matrix<double> cd(m, n);
            auto gf = [](auto i, auto j, auto x) { return double(x) + 0.5 * double(i == j); };
            apply(cd, no_mask, no_accum, gf, A, Descriptor{.transpose_a = ta});
            REF_REQUIRE_SAME(ref::to_dense(cd), brute_map<double>(a, gf));
            // Vectors: j is 0.
            const auto u = g.vector<int>(m, 0.4);
            const auto w0 = g.vector<int>(m, 0.3), wm = g.vector<int>(m, 0.5);
            const auto U = vector_in_storage(u, g.uniform(0, 1));
            check_vector_variants(g, w0, brute_map<int>(u, f), wm, apply_call(f, U));
        }
    }
}

TEST_CASE("apply: binary op with a bound scalar on either side", "[apply][bind][cpu-only]") {
    for (std::uint64_t seed = 71; seed <= 72; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            for (int k = 0; k < n_ops; ++k) {
                const bool ta = g.uniform(0, 1);
                const int s = int(g.uniform(0, 6)) - 3;  // includes 0: division by a bound zero
                INFO("seed " << seed << ", C " << m << "x" << n << ", op " << op_names[k] << ", s = " << s
                             << (ta ? ", A transposed" : ""));
                const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, 0.4);
                const auto a = ta ? ref::transpose(a_st) : a_st;
                const Matrix<int> A = ref::to_matrix(a_st);
                const auto c0 = g.matrix<int>(m, n, 0.3);
                const auto maskd = g.matrix<int>(m, n, 0.4);
                const DynOp op{k};
                check_matrix_variants(c0, brute_map<int>(a, [&](Index, Index, int x) { return op(x, s); }), maskd,
                                      bind_call(op, A, s, false, ta));
                check_matrix_variants(c0, brute_map<int>(a, [&](Index, Index, int x) { return op(s, x); }), maskd,
                                      bind_call(op, A, s, true, ta));
                // Vectors.
                const auto u = g.vector<int>(m, 0.4), w0 = g.vector<int>(m, 0.3), wm = g.vector<int>(m, 0.5);
                const auto U = vector_in_storage(u, g.uniform(0, 1));
                // Vectors: two variants each (every variant instantiates the bound-scalar closure anew).
                Vector<int> w = ref::to_vector(w0);
                apply(w, no_mask, no_accum, op, U, s);
                REF_REQUIRE_SAME(ref::to_dense(w), brute_map<int>(u, [&](Index, Index, int x) { return op(x, s); }));
                w = ref::to_vector(w0);
                const Descriptor dc{.mask_complement = true, .replace = true};
                apply(w, ref::to_vector(wm), DynAccum{1}, op, s, U, dc);
                REF_REQUIRE_SAME(ref::to_dense(w),
                                 ref::write_back(w0, brute_map<int>(u, [&](Index, Index, int x) { return op(s, x); }),
                                                 &wm, DynAccum{1}, dc));
            }
        }
    }
    // Mixed: int A, double scalar, double C; the op is computed in C's type.
    ref::Gen g(73);
    for (auto [m, n] : g.shapes()) {
        const auto a = g.matrix<int>(m, n, 0.5);
        const Matrix<int> A = ref::to_matrix(a);
        Matrix<double> c(m, n);
        apply(c, no_mask, no_accum, div_op{}, A, 2.5);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_map<double>(a, [](Index, Index, int x) { return x / 2.5; }));
        apply(c, no_mask, no_accum, minus_op{}, 0.25, A);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_map<double>(a, [](Index, Index, int x) { return 0.25 - x; }));
        apply(c, no_mask, no_accum, gt_op{}, A, 1);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_map<double>(a, [](Index, Index, int x) { return x > 1 ? 1.0 : 0.0; }));
        const auto u = g.vector<int>(m, 0.5);
        Vector<double> w(m);
        apply(w, no_mask, no_accum, times_op{}, 1.5, ref::to_vector(u));
        REF_REQUIRE_SAME(ref::to_dense(w), brute_map<double>(u, [](Index, Index, int x) { return 1.5 * x; }));
    }
}

TEST_CASE("apply: dimension mismatches throw", "[apply][errors][cpu-only]") {
    Matrix<int> a(3, 4), c(4, 3);
    Matrix<int> mask(3, 4);
    CHECK_THROWS_AS(apply(c, no_mask, no_accum, identity_op{}, a), DimensionMismatch);
    CHECK_NOTHROW(apply(c, no_mask, no_accum, identity_op{}, a, Descriptor{.transpose_a = true}));
    CHECK_THROWS_AS(apply(c, mask, no_accum, identity_op{}, a, Descriptor{.transpose_a = true}), DimensionMismatch);
    CHECK_THROWS_AS(apply(c, no_mask, no_accum, plus_op{}, a, 1), DimensionMismatch);
    Vector<int> u(3), w(4);
    CHECK_THROWS_AS(apply(w, no_mask, no_accum, identity_op{}, u), DimensionMismatch);
    CHECK_THROWS_AS(apply(w, no_mask, no_accum, plus_op{}, 1, u), DimensionMismatch);
}

// ------------------------------------------------------------------------------------------- select

namespace {
enum SelKind { k_tril, k_triu, k_diag, k_offdiag, k_eq, k_ne, k_lt, k_le, k_gt, k_ge, k_nonzero, k_user, n_sel };
constexpr const char* sel_names[] = {"tril", "triu", "diag", "offdiag", "value_eq", "value_ne",
                                     "value_lt", "value_le", "value_gt", "value_ge", "nonzero", "user"};
// Calls the library's selector of the given kind.
template <class S>
struct DynSelect {
    int kind;
    std::int64_t k;
    S thunk;
    template <class T> bool operator()(Index i, Index j, T v) const {
        switch (kind) {
            case k_tril: return tril{k}(i, j, v);
            case k_triu: return triu{k}(i, j, v);
            case k_diag: return diag{k}(i, j, v);
            case k_offdiag: return offdiag{k}(i, j, v);
            case k_eq: return value_eq{thunk}(i, j, v);
            case k_ne: return value_ne{thunk}(i, j, v);
            case k_lt: return value_lt{thunk}(i, j, v);
            case k_le: return value_le{thunk}(i, j, v);
            case k_gt: return value_gt{thunk}(i, j, v);
            case k_ge: return value_ge{thunk}(i, j, v);
            case k_nonzero: return nonzero{}(i, j, v);
            default: return (i + 2 * j) % 3 != 1 && v > thunk - 2;
        }
    }
    // The built-in selector it is, for the GPU (none for k_user: that one stays on the CPU).
    std::optional<cuda::SelectCode> cuda_select_code() const {
        switch (kind) {
            case k_tril: return hybla::detail::select_code(tril{k});
            case k_triu: return hybla::detail::select_code(triu{k});
            case k_diag: return hybla::detail::select_code(diag{k});
            case k_offdiag: return hybla::detail::select_code(offdiag{k});
            case k_eq: return hybla::detail::select_code(value_eq{thunk});
            case k_ne: return hybla::detail::select_code(value_ne{thunk});
            case k_lt: return hybla::detail::select_code(value_lt{thunk});
            case k_le: return hybla::detail::select_code(value_le{thunk});
            case k_gt: return hybla::detail::select_code(value_gt{thunk});
            case k_ge: return hybla::detail::select_code(value_ge{thunk});
            case k_nonzero: return hybla::detail::select_code(nonzero{});
            default: return std::nullopt;
        }
    }
};
// The same predicates written out independently.
template <class S, class T>
bool expected_keep(int kind, std::int64_t k, S s, Index i, Index j, T v) {
    const std::int64_t ii = std::int64_t(i), jj = std::int64_t(j);
    switch (kind) {
        case k_tril: return jj - ii <= k;
        case k_triu: return jj - ii >= k;
        case k_diag: return jj - ii == k;
        case k_offdiag: return jj - ii != k;
        case k_eq: return v == s;
        case k_ne: return !(v == s);
        case k_lt: return v < s;
        case k_le: return !(s < v);
        case k_gt: return s < v;
        case k_ge: return !(v < s);
        case k_nonzero: return v != T(0);
        default: return (i + 2 * j) % 3 != 1 && v > s - 2;
    }
}
template <class TC, class TA, class S>
ref::Dense<TC> brute_select(const ref::Dense<TA>& a, int kind, std::int64_t k, S s) {
    ref::Dense<TC> c(a.nrows, a.ncols);
    for (Index i = 0; i < a.nrows; ++i)
        for (Index j = 0; j < a.ncols; ++j)
            if (a(i, j) && expected_keep(kind, k, s, i, j, *a(i, j))) c(i, j) = TC(*a(i, j));
    return c;
}
}  // namespace

TEST_CASE("select: tril, triu, diag, offdiag, value comparisons, nonzero and lambdas", "[select][matrix]") {
    for (std::uint64_t seed = 81; seed <= 82; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            for (int kind = 0; kind < n_sel; ++kind) {
                if (kind == k_user && default_context().is_cuda()) continue;  // a predicate: CPU only
                for (std::int64_t k : {-2, -1, 0, 1, 3}) {
                    if (kind >= k_eq && k != 0) continue;  // k only matters for the structural selectors
                    const bool ta = g.uniform(0, 1);
                    const int s = int(g.uniform(0, 4)) - 1;
                    INFO("seed " << seed << ", C " << m << "x" << n << ", " << sel_names[kind] << " k=" << k
                                 << " thunk=" << s << (ta ? ", A transposed" : ""));
                    const auto a_st = g.matrix<int>(ta ? n : m, ta ? m : n, g.real() * 0.6, true);
                    const auto a = ta ? ref::transpose(a_st) : a_st;
                    const Matrix<int> A = ref::to_matrix(a_st);
                    const auto c0 = g.matrix<int>(m, n, 0.3);
                    const auto maskd = g.matrix<int>(m, n, 0.4);
                    const DynSelect<int> sel{kind, k, s};
                    check_matrix_variants(c0, brute_select<int>(a, kind, k, s), maskd, select_call(sel, A, ta));
                    // double values, double thunk, into a double C
                    const auto ad = g.matrix<double>(m, n, 0.5);
                    const double sd = double(s) + 0.25 * double(g.uniform(0, 1));
                    Matrix<double> cd(m, n);
                    select(cd, no_mask, no_accum, DynSelect<double>{kind, k, sd}, ref::to_matrix(ad));
                    REF_REQUIRE_SAME(ref::to_dense(cd), brute_select<double>(ad, kind, k, sd));
                }
            }
        }
    }
}

TEST_CASE("select: the selector types directly, and into another value type", "[select][types][cpu-only]") {
    ref::Gen g(85);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        const auto a = g.matrix<int>(m, n, 0.5);
        const Matrix<int> A = ref::to_matrix(a);
        Matrix<int> c(m, n);
        select(c, no_mask, no_accum, tril{-1}, A);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_select<int>(a, k_tril, -1, 0));
        select(c, no_mask, no_accum, triu{3}, A);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_select<int>(a, k_triu, 3, 0));
        select(c, no_mask, no_accum, diag{}, A);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_select<int>(a, k_diag, 0, 0));
        select(c, no_mask, no_accum, offdiag{1}, A);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_select<int>(a, k_offdiag, 1, 0));
        select(c, no_mask, no_accum, value_gt{2}, A);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_select<int>(a, k_gt, 0, 2));
        select(c, no_mask, no_accum, value_le{0.5}, A);  // a double thunk on int values
        REF_REQUIRE_SAME(ref::to_dense(c), brute_select<int>(a, k_le, 0, 0.5));
        select(c, no_mask, no_accum, nonzero{}, A);
        REF_REQUIRE_SAME(ref::to_dense(c), brute_select<int>(a, k_nonzero, 0, 0));
        Matrix<double> cd(m, n);
        select(cd, no_mask, no_accum, [](Index i, Index j, int v) { return i != j && v % 2 == 0; }, A);
        ref::Dense<double> want(m, n);
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j)
                if (a(i, j) && i != j && *a(i, j) % 2 == 0) want(i, j) = *a(i, j);
        REF_REQUIRE_SAME(ref::to_dense(cd), want);
    }
}

TEST_CASE("select on vectors: j is 0", "[select][vector]") {
    for (std::uint64_t seed = 91; seed <= 93; ++seed) {
        ref::Gen g(seed);
        for (Index n : {Index(0), Index(1), Index(3), Index(40), Index(150)}) {
            for (int kind = 0; kind < n_sel; ++kind) {
                if (kind == k_user && default_context().is_cuda()) continue;  // a predicate: CPU only
                for (std::int64_t k : {-2, -1, 0, 1, 3}) {
                    if (kind >= k_eq && k != 0) continue;
                    const int s = int(g.uniform(0, 4)) - 1;
                    INFO("seed " << seed << ", n " << n << ", " << sel_names[kind] << " k=" << k << " thunk=" << s);
                    const auto u = g.vector<int>(n, g.real() * 0.6);
                    const auto U = vector_in_storage(u, g.uniform(0, 1));
                    const auto w0 = g.vector<int>(n, 0.3), wm = g.vector<int>(n, 0.5);
                    const DynSelect<int> sel{kind, k, s};
                    check_vector_variants(g, w0, brute_select<int>(u, kind, k, s), wm, select_call(sel, U));
                }
            }
        }
    }
}

// ------------------------------------------------------------------------------------------- transpose

TEST_CASE("transpose with masks and accumulators: transpose_a gives C = A", "[transpose]") {
    for (std::uint64_t seed = 101; seed <= 105; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            for (bool ta : {false, true}) {
                INFO("seed " << seed << ", C " << m << "x" << n << (ta ? ", transpose_a" : ""));
                // C is m x n; A is n x m (plain) or m x n (transpose_a).
                const auto a = g.matrix<int>(ta ? m : n, ta ? n : m, g.real() * 0.5, true);
                const Matrix<int> A = ref::to_matrix(a);
                const auto t = ta ? a : ref::transpose(a);
                const auto c0 = g.matrix<int>(m, n, 0.3);
                const auto maskd = g.matrix<int>(m, n, 0.4);
                check_matrix_variants(c0, t, maskd, TransposeCall<Matrix<int>>{A, ta});
                // Into another type: int A, double C, with a complemented structural mask and accum minus.
                const auto cd0 = g.matrix<double>(m, n, 0.3);
                Matrix<double> cd = ref::to_matrix(cd0);
                const Descriptor dd{.transpose_a = ta, .mask_complement = true, .mask_structure = true};
                transpose(cd, ref::to_matrix(maskd), minus_op{}, A, dd);
                REF_REQUIRE_SAME(ref::to_dense(cd), ref::write_back(cd0, cast<double>(t), &maskd, minus_op{}, dd));
            }
        }
    }
    // In place: A = Aᵀ (square), and dimension checks.
    ref::Gen g(106);
    const auto a = g.matrix<int>(9, 9, 0.4);
    Matrix<int> A = ref::to_matrix(a);
    transpose(A, no_mask, no_accum, A);
    REF_REQUIRE_SAME(ref::to_dense(A), ref::transpose(a));
    Matrix<int> c(3, 4), b(3, 4);
    CHECK_THROWS_AS(transpose(c, no_mask, no_accum, b), DimensionMismatch);
    CHECK_NOTHROW(transpose(c, no_mask, no_accum, b, Descriptor{.transpose_a = true}));
}

// ------------------------------------------------------------------------------------------- large inputs

// Inputs big enough for the parallel paths: more than 512 rows (parallel_for_each), more than 4096 entries
// (parallel_rows_by_work splits rows by work), vectors above 2^16 (parallel prefix sums, dense loops).
#ifndef NO_LARGE
TEST_CASE("large inputs: the parallel paths agree with the reference", "[ewise][apply][select][large][cpu-only]") {
    ref::Gen g(201);
    const Index m = 2300, n = 140;
    const auto a = g.matrix<int>(m, n, 0.06, true), b = g.matrix<int>(m, n, 0.04, true);
    const auto bt_st = ref::transpose(b);
    const Matrix<int> A = ref::to_matrix(a), B = ref::to_matrix(b), Bt = ref::to_matrix(bt_st);
    const auto c0 = g.matrix<int>(m, n, 0.05);
    const auto maskd = g.matrix<int>(m, n, 0.3, true);
    {
        INFO("eWiseAdd minus, B transposed");
        const auto t = brute_ewise<int>(true, a, b, DynOp{4});
        check_matrix_variants(c0, t, maskd, ewise_call(true, DynOp{4}, A, Bt, false, true));
    }
    {
        INFO("eWiseMult times");
        const auto t = brute_ewise<int>(false, a, b, DynOp{1});
        check_matrix_variants(c0, t, maskd, ewise_call(false, DynOp{1}, A, B));
    }
    {
        INFO("apply ainv");
        const auto t = brute_map<int>(a, [](Index, Index, int x) { return -x; });
        check_matrix_variants(c0, t, maskd, apply_call(DynUnary{1}, A));
    }
    {
        INFO("select tril 1");
        check_matrix_variants(c0, brute_select<int>(a, k_tril, 1, 0), maskd,
                              select_call(DynSelect<int>{k_tril, 1, 0}, A));
    }
    {
        INFO("transpose");
        const auto ct0 = g.matrix<int>(n, m, 0.05), mt = g.matrix<int>(n, m, 0.3);
        check_matrix_variants(ct0, ref::transpose(a), mt, TransposeCall<Matrix<int>>{A});
    }
    const Index len = 70001;
    for (double density : {0.01, 0.4}) {
        INFO("vectors of " << len << ", density " << density);
        const auto u = g.vector<int>(len, density), v = g.vector<int>(len, 0.2);
        const auto U = vector_in_storage(u, density > 0.1), V = vector_in_storage(v, density < 0.1);
        const auto w0 = g.vector<int>(len, 0.1), wm = g.vector<int>(len, 0.5);
        check_vector_variants(g, w0, brute_ewise<int>(true, u, v, DynOp{0}), wm, ewise_call(true, DynOp{0}, U, V));
        check_vector_variants(g, w0, brute_ewise<int>(false, u, v, DynOp{3}), wm, ewise_call(false, DynOp{3}, U, V));
        check_vector_variants(g, w0, brute_select<int>(u, k_gt, 0, 1), wm, select_call(DynSelect<int>{k_gt, 0, 1}, U));
    }
}

#endif
// ------------------------------------------------------------------------------------------- operand domains

// With mixed types the operator must see the operands' values, as a GraphBLAS operator sees its inputs cast
// to its own domain (GrB_LT_INT32 into a bool C compares ints): a comparison of int operands into a bool C
// compares the ints, and the sum of two doubles into an int C is the rounded-down sum, not the sum of the
// rounded-down operands. Casting each operand to C's type first gives lt(true, true) = false for 1 < 2.
// hybla's documented rule (README, "Semantics worth knowing"): operands are cast to the output's type and the
// operator computes in that type, on every backend alike. These cases pin the rule down.
TEST_CASE("mixed types: operands are cast to C's type before the operator", "[ewise][apply][mixed]") {
    Matrix<int> A(1, 1), B(1, 1);
    A.set(0, 0, 1);
    B.set(0, 0, 2);
    Matrix<bool> C(1, 1);
    eWiseMult(C, no_mask, no_accum, lt_op{}, A, B);
    CHECK(C.get(0, 0).value_or(true) == false);  // lt(bool(1), bool(2)) = lt(true, true)
    eWiseAdd(C, no_mask, no_accum, lt_op{}, A, B);
    CHECK(C.get(0, 0).value_or(true) == false);
    A.set(0, 0, 5);
    apply(C, no_mask, no_accum, gt_op{}, A, 2);  // gt(true, true)
    CHECK(C.get(0, 0).value_or(true) == false);
    apply(C, no_mask, no_accum, lt_op{}, 0, A);  // lt(false, true)
    CHECK(C.get(0, 0).value_or(false) == true);

    Matrix<double> X(1, 1), Y(1, 1);
    X.set(0, 0, 0.5);
    Y.set(0, 0, 1.5);
    Matrix<int> Ci(1, 1);
    eWiseAdd(Ci, no_mask, no_accum, plus_op{}, X, Y);  // int(0.5) + int(1.5)
    CHECK(Ci.get(0, 0).value_or(-1) == 1);

    Vector<int> u(2), v(2);
    u.set(1, 3);
    v.set(1, 0);
    Vector<bool> w(2);
    eWiseMult(w, no_mask, no_accum, lt_op{}, u, v);  // lt(true, false)
    CHECK(w.get(1).value_or(true) == false);
}

// ------------------------------------------------------------------------------------------ dense matrices
namespace {
// C accum= op(op(A), op(B)) on dense matrices for every transpose, against the element-wise definition.
template <class T, class Op, class Accum = NoAccum>
void check_dense_ewise(std::uint64_t seed, Op op, Accum accum = {}) {
    ref::Gen g(seed);
    for (auto [m, n] : g.shapes()) {
        const DenseMatrix<T> a0 = ref::random_dense<T>(g, m, n), b0 = ref::random_dense<T>(g, m, n),
                             c0 = ref::random_dense<T>(g, m, n);
        ref::Dense<T> want(m, n);
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j) {
                const T t = op(a0(i, j), b0(i, j));
                if constexpr (std::is_same_v<Accum, NoAccum>) want(i, j) = t;
                else want(i, j) = accum(c0(i, j), t);
            }
        for (int ta = 0; ta < 2; ++ta)
            for (int tb = 0; tb < 2; ++tb)
                for (int mult = 0; mult < 2; ++mult) {
                    INFO("seed " << seed << ", " << m << "x" << n << ", tA=" << ta << " tB=" << tb << " mult=" << mult);
                    const DenseMatrix<T> a = (ta ? ref::dense_transpose(a0) : a0).to(default_context());
                    const DenseMatrix<T> b = (tb ? ref::dense_transpose(b0) : b0).to(default_context());
                    DenseMatrix<T> c = c0.to(default_context());
                    const Descriptor d{.transpose_a = bool(ta), .transpose_b = bool(tb)};
                    if (mult) eWiseMult(c, no_mask, accum, op, a, b, d);
                    else eWiseAdd(c, no_mask, accum, op, a, b, d);
                    REF_REQUIRE_SAME(ref::to_dense(c), want, 0.0);  // one operation per element: exact
                }
    }
}
}  // namespace

TEST_CASE("eWiseAdd and eWiseMult on dense matrices: transposes and accumulators", "[ewise][dense]") {
    check_dense_ewise<double>(91, minus_op{});
    check_dense_ewise<double>(92, absdiff_op{}, plus_op{});
    check_dense_ewise<float>(93, times_op{}, max_op{});
    check_dense_ewise<std::int64_t>(94, min_op{}, times_op{});
    check_dense_ewise<bool>(95, lxor_op{}, lor_op{});
    // A monoid or a semiring as the operator: eWiseAdd takes its add, eWiseMult its multiply.
    DenseMatrix<double> a(2, 3, 2.0), b(2, 3, 5.0), c(2, 3, 0.0);
    eWiseAdd(c, no_mask, no_accum, plus_times{}, a, b);
    CHECK(ref::to_dense(c)(1, 2) == 7.0);
    eWiseMult(c, no_mask, no_accum, plus_times{}, a, b);
    CHECK(ref::to_dense(c)(1, 2) == 10.0);
}

TEST_CASE("eWise on dense matrices: shapes that do not fit throw DimensionMismatch", "[ewise][dense][errors]") {
    using Catch::Matchers::Contains;
    DenseMatrix<double> a(2, 3), b(3, 2), c(2, 3, 4.0);
    REQUIRE_THROWS_AS(eWiseAdd(c, no_mask, no_accum, plus_op{}, a, b), DimensionMismatch);
    REQUIRE_THROWS_WITH(eWiseMult(c, no_mask, no_accum, plus_op{}, a, b), Contains("2x3") && Contains("3x2"));
    DenseMatrix<double> c32(3, 2);
    REQUIRE_THROWS_WITH(eWiseAdd(c32, no_mask, no_accum, plus_op{}, a, b, Descriptor{.transpose_b = true}),
                        Contains("C is 3x2"));
    eWiseAdd(c, no_mask, no_accum, plus_op{}, a, b, Descriptor{.transpose_b = true});  // fits
    CHECK(ref::to_dense(c)(0, 0) == 0.0);
}
