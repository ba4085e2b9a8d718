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
#include "engine/cuda/dispatch.hpp"

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
// A selector as data for the CUDA backend (nullopt: a user's own predicate).
// A selector of one's own may name the built-in selector it computes with a member
// `std::optional<cuda::SelectCode> cuda_select_code() const` (nullopt: none) and so run on the GPU too.
template <class Keep>
std::optional<cuda::SelectCode> select_code(const Keep& keep) {
    if constexpr (requires { { keep.cuda_select_code() } -> std::convertible_to<std::optional<cuda::SelectCode>>; })
        return keep.cuda_select_code();
    using cuda::SelectKind;
    cuda::SelectCode c;
    auto thunk = [&c](auto t) {
        using S = decltype(t);
        if constexpr (std::is_floating_point_v<S>) { c.domain = cuda::SelectCode::Domain::floating; c.f = double(t); }
        else if constexpr (std::is_signed_v<S>) { c.domain = cuda::SelectCode::Domain::signed_int; c.i = std::int64_t(t); }
        else { c.domain = cuda::SelectCode::Domain::unsigned_int; c.u = std::uint64_t(t); }
    };
    if constexpr (std::is_same_v<Keep, tril>) { c.kind = SelectKind::tril; c.k = keep.k; }
    else if constexpr (std::is_same_v<Keep, triu>) { c.kind = SelectKind::triu; c.k = keep.k; }
    else if constexpr (std::is_same_v<Keep, diag>) { c.kind = SelectKind::diag; c.k = keep.k; }
    else if constexpr (std::is_same_v<Keep, offdiag>) { c.kind = SelectKind::offdiag; c.k = keep.k; }
    else if constexpr (std::is_same_v<Keep, nonzero>) { c.kind = SelectKind::nonzero; }
    else if constexpr (requires { keep.thunk; }) {
        using K = std::decay_t<Keep>;
        using S = decltype(keep.thunk);
        if constexpr (std::is_same_v<K, value_eq<S>>) c.kind = SelectKind::value_eq;
        else if constexpr (std::is_same_v<K, value_ne<S>>) c.kind = SelectKind::value_ne;
        else if constexpr (std::is_same_v<K, value_lt<S>>) c.kind = SelectKind::value_lt;
        else if constexpr (std::is_same_v<K, value_le<S>>) c.kind = SelectKind::value_le;
        else if constexpr (std::is_same_v<K, value_gt<S>>) c.kind = SelectKind::value_gt;
        else if constexpr (std::is_same_v<K, value_ge<S>>) c.kind = SelectKind::value_ge;
        else return std::nullopt;
        thunk(keep.thunk);
    } else {
        return std::nullopt;
    }
    return c;
}
template <class Keep>
cuda::SelectCode require_select_code(const Keep& keep, const char* op) {
    auto c = select_code(keep);
    if (!c) throw InvalidValue(cuda_dispatch::no_kernel(op, "the selector", typeid(Keep).name()));
    return *c;
}
template <class F>
cuda::UnaryOp require_unary_code(const char* op) {
    if constexpr (cuda::unary_code_of<F>::known) return cuda::unary_code_of<F>::value;
    else throw InvalidValue(cuda_dispatch::no_kernel(op, "the function", typeid(F).name()));
}

template <class TC, class MaskT, class Accum, class TA>
void check_unary(const Matrix<TC>& c, const MaskT& mask, const Matrix<TA>& a, const Descriptor& d, const char* name) {
    const Index m = rows_of(a, d.transpose_a), n = cols_of(a, d.transpose_a);
    require(c.nrows() == m && c.ncols() == n, name, "C is " + shape(c.nrows(), c.ncols()) + " but A is " + shape(m, n));
    check_mask(mask, m, n, name);
    same_context(name, c, mask, a);
}
template <class TW, class MaskT, class TU>
void check_unary(const Vector<TW>& w, const MaskT& mask, const Vector<TU>& u, const char* name) {
    require(w.size() == u.size(), name,
            "w has size " + std::to_string(w.size()) + " but u has size " + std::to_string(u.size()));
    check_vector_mask(mask, w.size(), name);
    same_context(name, w, mask, u);
}

// On the GPU: t = run(A) written back. CastFirst: A is cast to C's type before run (binary operators with a
// bound scalar compute in C's type); otherwise run sees A's own type and its result is cast (unary operators
// and selectors see A's values, as on the CPU).
template <bool CastFirst, class TC, class MaskT, class Accum, template <class> class O, class TA, class Run>
void cuda_map(O<TC>& c, const MaskT& mask, Accum accum, const O<TA>& a, const Descriptor& d, const char* name, Run&& run) {
    using namespace cuda_dispatch;
    auto once = [&](const auto& x) {
        if constexpr (CastFirst) return run(as_type<TC>(x).get());
        else {
            auto r = run(x);
            if constexpr (std::is_same_v<decltype(r), Matrix<TC>>) return r;
            else return cuda::cast<TC>(r);
        }
    };
    if constexpr (std::is_same_v<O<TC>, Matrix<TC>>) write_back(c, once(d.transpose_a ? a.transposed() : a), mask, accum, d, name);
    else write_back(c, cuda::from_column(once(cuda::as_column(a))), mask, accum, d, name);
}
}  // namespace detail

// C<M> accum= f(op(A)); f takes the value, or (i, j, value).
template <class TC, class MaskT, class Accum, class F, class TA>
    requires detail::MatrixMask<MaskT>
void apply(Matrix<TC>& c, const MaskT& mask, Accum accum, F f, const Matrix<TA>& a, const Descriptor& d = {}) {
    detail::check_unary<TC, MaskT, Accum>(c, mask, a, d, "apply");
    HYBLA_ON_GPU(c) {
        auto code = detail::require_unary_code<F>("apply");
        return detail::cuda_map<false>(c, mask, accum, a, d, "apply", [&](const auto& x) { return cuda::apply_unary(x, code); });
    }
    cpu::write_back(c, cpu::map_values<TC>(d.transpose_a ? a.transposed() : a, f), mask, accum, d);
}
// C<M> accum= op(A, s)
template <class TC, class MaskT, class Accum, class Op, class TA, class S>
    requires detail::MatrixMask<MaskT> && std::is_arithmetic_v<S>
void apply(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, const Matrix<TA>& a, S s, const Descriptor& d = {}) {
    HYBLA_ON_GPU(c) {
        detail::check_unary<TC, MaskT, Accum>(c, mask, a, d, "apply");
        auto code = cuda_dispatch::binary_code(op, "apply");
        return detail::cuda_map<true>(c, mask, accum, a, d, "apply", [&](const Matrix<TC>& x) { return cuda::apply_bound(x, code, TC(s), false); });
    }
    apply(c, mask, accum, [=](TA x) { return op(TC(x), TC(s)); }, a, d);
}
// C<M> accum= op(s, A)
template <class TC, class MaskT, class Accum, class Op, class TA, class S>
    requires detail::MatrixMask<MaskT> && std::is_arithmetic_v<S>
void apply(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, S s, const Matrix<TA>& a, const Descriptor& d = {}) {
    HYBLA_ON_GPU(c) {
        detail::check_unary<TC, MaskT, Accum>(c, mask, a, d, "apply");
        auto code = cuda_dispatch::binary_code(op, "apply");
        return detail::cuda_map<true>(c, mask, accum, a, d, "apply", [&](const Matrix<TC>& x) { return cuda::apply_bound(x, code, TC(s), true); });
    }
    apply(c, mask, accum, [=](TA x) { return op(TC(s), TC(x)); }, a, d);
}

template <class TW, class MaskT, class Accum, class F, class TU>
    requires detail::VectorMask<MaskT>
void apply(Vector<TW>& w, const MaskT& mask, Accum accum, F f, const Vector<TU>& u, const Descriptor& d = {}) {
    detail::check_unary(w, mask, u, "apply");
    HYBLA_ON_GPU(w) {
        auto code = detail::require_unary_code<F>("apply");
        if constexpr (std::is_same_v<TW, TU>)
            if (cuda_dispatch::is_full(u))
                return cuda_dispatch::write_back(w, cuda::full_unary(u, code), mask, accum, d, "apply");
        return detail::cuda_map<false>(w, mask, accum, u, d, "apply", [&](const auto& x) { return cuda::apply_unary(x, code); });
    }
    cpu::write_back_vector(w, cpu::from_column(cpu::map_values<TW>(cpu::as_column(u), f)), mask, accum, d);
}
template <class TW, class MaskT, class Accum, class Op, class TU, class S>
    requires detail::VectorMask<MaskT> && std::is_arithmetic_v<S>
void apply(Vector<TW>& w, const MaskT& mask, Accum accum, Op op, const Vector<TU>& u, S s, const Descriptor& d = {}) {
    HYBLA_ON_GPU(w) {
        detail::check_unary(w, mask, u, "apply");
        auto code = cuda_dispatch::binary_code(op, "apply");
        if (auto ut = cuda_dispatch::as_type<TW>(u); cuda_dispatch::is_full(ut.get()))
            return cuda_dispatch::write_back(w, cuda::full_bound(ut.get(), code, TW(s), false), mask, accum, d, "apply");
        return detail::cuda_map<true>(w, mask, accum, u, d, "apply", [&](const Matrix<TW>& x) { return cuda::apply_bound(x, code, TW(s), false); });
    }
    apply(w, mask, accum, [=](TU x) { return op(TW(x), TW(s)); }, u, d);
}
template <class TW, class MaskT, class Accum, class Op, class TU, class S>
    requires detail::VectorMask<MaskT> && std::is_arithmetic_v<S>
void apply(Vector<TW>& w, const MaskT& mask, Accum accum, Op op, S s, const Vector<TU>& u, const Descriptor& d = {}) {
    HYBLA_ON_GPU(w) {
        detail::check_unary(w, mask, u, "apply");
        auto code = cuda_dispatch::binary_code(op, "apply");
        if (auto ut = cuda_dispatch::as_type<TW>(u); cuda_dispatch::is_full(ut.get()))
            return cuda_dispatch::write_back(w, cuda::full_bound(ut.get(), code, TW(s), true), mask, accum, d, "apply");
        return detail::cuda_map<true>(w, mask, accum, u, d, "apply", [&](const Matrix<TW>& x) { return cuda::apply_bound(x, code, TW(s), true); });
    }
    apply(w, mask, accum, [=](TU x) { return op(TW(s), TW(x)); }, u, d);
}

// C<M> accum= the entries (i, j, x) of op(A) for which keep(i, j, x).
template <class TC, class MaskT, class Accum, class Keep, class TA>
    requires detail::MatrixMask<MaskT>
void select(Matrix<TC>& c, const MaskT& mask, Accum accum, Keep keep, const Matrix<TA>& a, const Descriptor& d = {}) {
    detail::check_unary<TC, MaskT, Accum>(c, mask, a, d, "select");
    HYBLA_ON_GPU(c) {
        auto code = detail::require_select_code(keep, "select");
        return detail::cuda_map<false>(c, mask, accum, a, d, "select", [&](const auto& x) { return cuda::select(x, code); });
    }
    cpu::write_back(c, cpu::select_entries<TC>(d.transpose_a ? a.transposed() : a, keep), mask, accum, d);
}
template <class TW, class MaskT, class Accum, class Keep, class TU>
    requires detail::VectorMask<MaskT>
void select(Vector<TW>& w, const MaskT& mask, Accum accum, Keep keep, const Vector<TU>& u, const Descriptor& d = {}) {
    detail::check_unary(w, mask, u, "select");
    HYBLA_ON_GPU(w) {
        auto code = detail::require_select_code(keep, "select");
        return detail::cuda_map<false>(w, mask, accum, u, d, "select", [&](const auto& x) { return cuda::select(x, code); });
    }
    cpu::write_back_vector(w, cpu::from_column(cpu::select_entries<TW>(cpu::as_column(u), keep)), mask, accum, d);
}

}  // namespace hybla
