// apply (unary, index-unary f(i, j, x), or binary with a bound scalar) and select (keep entries for which a
// predicate on (i, j, value) holds), on matrices and vectors. For vectors, j is always 0.
#pragma once
#include <cstdint>
#include <type_traits>

#include "engine/checks.hpp"
#include "engine/cpu/ewise.hpp"
#include "engine/cpu/mask.hpp"
#include "engine/cpu/vector_view.hpp"
#include "engine/cpu/vector_write.hpp"

namespace hybla {

// Predefined selectors. tril{k}: j <= i + k; triu{k}: j >= i + k; diag{k}: j == i + k; offdiag{k}: j != i + k.
struct tril {
    std::int64_t k = 0;
    template <class T> bool operator()(Index i, Index j, T) const { return std::int64_t(j) <= std::int64_t(i) + k; }
};
struct triu {
    std::int64_t k = 0;
    template <class T> bool operator()(Index i, Index j, T) const { return std::int64_t(j) >= std::int64_t(i) + k; }
};
struct diag {
    std::int64_t k = 0;
    template <class T> bool operator()(Index i, Index j, T) const { return std::int64_t(j) == std::int64_t(i) + k; }
};
struct offdiag {
    std::int64_t k = 0;
    template <class T> bool operator()(Index i, Index j, T) const { return std::int64_t(j) != std::int64_t(i) + k; }
};
#define HYBLA_VALUE_SELECTOR(name, expr)                                       \
    template <class S> struct name {                                          \
        S thunk;                                                              \
        template <class T> bool operator()(Index, Index, T v) const { return expr; } \
    };                                                                        \
    template <class S> name(S) -> name<S>;
HYBLA_VALUE_SELECTOR(value_eq, v == thunk)
HYBLA_VALUE_SELECTOR(value_ne, v != thunk)
HYBLA_VALUE_SELECTOR(value_lt, v < thunk)
HYBLA_VALUE_SELECTOR(value_le, v <= thunk)
HYBLA_VALUE_SELECTOR(value_gt, v > thunk)
HYBLA_VALUE_SELECTOR(value_ge, v >= thunk)
#undef HYBLA_VALUE_SELECTOR
struct nonzero {
    template <class T> bool operator()(Index, Index, T v) const { return v != T(0); }
};

namespace detail {
template <class TC, class MaskT, class Accum, class TA>
void check_unary(const Matrix<TC>& c, const MaskT& mask, const Matrix<TA>& a, const Descriptor& d, const char* name) {
    const Index m = rows_of(a, d.transpose_a), n = cols_of(a, d.transpose_a);
    require(c.nrows() == m && c.ncols() == n, name, "C is " + shape(c.nrows(), c.ncols()) + " but A is " + shape(m, n));
    check_mask(mask, m, n, name);
}
template <class TW, class MaskT, class TU>
void check_unary(const Vector<TW>& w, const MaskT& mask, const Vector<TU>& u, const char* name) {
    require(w.size() == u.size(), name,
            "w has size " + std::to_string(w.size()) + " but u has size " + std::to_string(u.size()));
    check_vector_mask(mask, w.size(), name);
}
}  // namespace detail

// C<M> accum= f(op(A)); f takes the value, or (i, j, value).
template <class TC, class MaskT, class Accum, class F, class TA>
    requires detail::MatrixMask<MaskT>
void apply(Matrix<TC>& c, const MaskT& mask, Accum accum, F f, const Matrix<TA>& a, const Descriptor& d = {}) {
    detail::check_unary<TC, MaskT, Accum>(c, mask, a, d, "apply");
    cpu::write_back(c, cpu::map_values<TC>(d.transpose_a ? a.transposed() : a, f), mask, accum, d);
}
// C<M> accum= op(A, s)
template <class TC, class MaskT, class Accum, class Op, class TA, class S>
    requires detail::MatrixMask<MaskT> && std::is_arithmetic_v<S>
void apply(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, const Matrix<TA>& a, S s, const Descriptor& d = {}) {
    apply(c, mask, accum, [=](TA x) { return op(TC(x), TC(s)); }, a, d);
}
// C<M> accum= op(s, A)
template <class TC, class MaskT, class Accum, class Op, class TA, class S>
    requires detail::MatrixMask<MaskT> && std::is_arithmetic_v<S>
void apply(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, S s, const Matrix<TA>& a, const Descriptor& d = {}) {
    apply(c, mask, accum, [=](TA x) { return op(TC(s), TC(x)); }, a, d);
}

template <class TW, class MaskT, class Accum, class F, class TU>
    requires detail::VectorMask<MaskT>
void apply(Vector<TW>& w, const MaskT& mask, Accum accum, F f, const Vector<TU>& u, const Descriptor& d = {}) {
    detail::check_unary(w, mask, u, "apply");
    cpu::write_back_vector(w, cpu::from_column(cpu::map_values<TW>(cpu::as_column(u), f)), mask, accum, d);
}
template <class TW, class MaskT, class Accum, class Op, class TU, class S>
    requires detail::VectorMask<MaskT> && std::is_arithmetic_v<S>
void apply(Vector<TW>& w, const MaskT& mask, Accum accum, Op op, const Vector<TU>& u, S s, const Descriptor& d = {}) {
    apply(w, mask, accum, [=](TU x) { return op(TW(x), TW(s)); }, u, d);
}
template <class TW, class MaskT, class Accum, class Op, class TU, class S>
    requires detail::VectorMask<MaskT> && std::is_arithmetic_v<S>
void apply(Vector<TW>& w, const MaskT& mask, Accum accum, Op op, S s, const Vector<TU>& u, const Descriptor& d = {}) {
    apply(w, mask, accum, [=](TU x) { return op(TW(s), TW(x)); }, u, d);
}

// C<M> accum= the entries (i, j, x) of op(A) for which keep(i, j, x).
template <class TC, class MaskT, class Accum, class Keep, class TA>
    requires detail::MatrixMask<MaskT>
void select(Matrix<TC>& c, const MaskT& mask, Accum accum, Keep keep, const Matrix<TA>& a, const Descriptor& d = {}) {
    detail::check_unary<TC, MaskT, Accum>(c, mask, a, d, "select");
    cpu::write_back(c, cpu::select_entries<TC>(d.transpose_a ? a.transposed() : a, keep), mask, accum, d);
}
template <class TW, class MaskT, class Accum, class Keep, class TU>
    requires detail::VectorMask<MaskT>
void select(Vector<TW>& w, const MaskT& mask, Accum accum, Keep keep, const Vector<TU>& u, const Descriptor& d = {}) {
    detail::check_unary(w, mask, u, "select");
    cpu::write_back_vector(w, cpu::from_column(cpu::select_entries<TW>(cpu::as_column(u), keep)), mask, accum, d);
}

}  // namespace hybla
