// reduce: a matrix or a dense matrix to a vector (rows; columns with transpose_a), or a matrix or vector to a
// scalar; inner products of vectors, and of the rows or columns of two dense matrices.
//
// Every result is computed in its own type: each input value is cast to the output's type before the monoid
// (or the multiply) sees it, and the monoid combines in that type. So 300 entries of 1 in a Matrix<uint8_t>
// reduced with plus into a std::uint64_t give 300, not 300 mod 256. This is GraphBLAS's rule for GrB_reduce,
// whose monoid has a type of its own to which A's values are typecast (SuiteSparse casts each entry to the
// monoid's type as it folds it); hybla's monoids take the output's type. The value of inner(sr, u, v) has u's
// type; into a Scalar<T> or a Vector<T>, T is the type. On the GPU, an operand of another type is cast on the
// GPU first; where an operand's or the result's type is one its kernels are not built for (int8_t, long long),
// the reduction runs on the CPU from a host copy.
#pragma once
#include <optional>
#include <span>
#include <type_traits>

#include "engine/checks.hpp"
#include "engine/cpu/dense.hpp"
#include "engine/cpu/ewise.hpp"
#include "engine/cpu/reduce.hpp"
#include "engine/cpu/vector_view.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/cuda/dispatch.hpp"
#include "engine/ewise.hpp"
#include "engine/scalar.hpp"

namespace hybla {

namespace detail {
// Whether the GPU's kernels compute in TS from values of the types TA: they are built for all of them.
template <class TS, class... TA>
inline constexpr bool gpu_reducible = cuda::is_value_type<TS>::value && (cuda::is_value_type<TA>::value && ...);

// op(A) of a matrix in host memory, kept in hold where it is made here. transposed() caches the transpose, but
// for a type the GPU's kernels are not built for it names a GPU transpose that a CUDA build lacks.
template <class TA>
const Matrix<TA>& host_op(const Matrix<TA>& a, bool transpose, std::optional<Matrix<TA>>& hold) {
    if (!transpose) return a;
    if constexpr (cuda::is_value_type<TA>::value || !cuda_compiled) return a.transposed();
    else return hold.emplace(cpu::transpose(a));
}
}  // namespace detail

// w<m> accum= ⊕_j op(A)(:, j): by rows, or by columns of A with transpose_a.
template <class TW, class MaskT, class Accum, class Monoid, class TA>
    requires detail::VectorMask<MaskT>
void reduce(Vector<TW>& w, const MaskT& mask, Accum accum, Monoid, const Matrix<TA>& a, const Descriptor& d = {}) {
    const Index m = detail::rows_of(a, d.transpose_a);
    detail::require(w.size() == m, "reduce", "w has size " + std::to_string(w.size()) + " but A has " +
                                                 std::to_string(m) + " rows (after transpose)");
    detail::check_vector_mask(mask, m, "reduce");
    detail::same_context("reduce", w, mask, a);
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        if constexpr (detail::gpu_reducible<TW, TA>) {
            auto code = monoid_code<Monoid>("reduce");
            auto at = as_type<TW>(d.transpose_a ? a.transposed() : a);
            write_back(w, cuda::reduce_rows(at.get(), code), mask, accum, d, "reduce");
        } else {
            const Matrix<TA> h = a.to(Context::cpu());
            std::optional<Matrix<TA>> ht;
            Vector<TW> t = cpu::reduce_rows<Monoid, TW>(detail::host_op(h, d.transpose_a, ht));
            write_back(w, t.to(w.context()), mask, accum, d, "reduce");
        }
        return;
    }
    std::optional<Matrix<TA>> at;
    cpu::write_back_vector(w, cpu::reduce_rows<Monoid, TW>(detail::host_op(a, d.transpose_a, at)), mask, accum, d);
}

namespace detail {
// ⊕ over each row of dense A (each column with by_columns) of A(i,j), or of A(i,j) ⊗ B(i,j) (Mul the multiply
// operator; void: A alone), in TW, on the CPU.
template <class Monoid, class Mul, class TW, class TA, class TB>
Vector<TW> fold_dense_lines(const DenseMatrix<TA>& a, const DenseMatrix<TB>* b, bool by_columns) {
    const Index m = by_columns ? a.ncols() : a.nrows(), len = by_columns ? a.nrows() : a.ncols();
    const Index k = a.ncols();
    const auto ad = a.data();
    const std::span<const TB> bd = b ? b->data() : std::span<const TB>{};
    auto term = [&](Index o, Index x) {
        const Index at = by_columns ? x * k + o : o * k + x;
        if constexpr (std::is_void_v<Mul>) return TW(ad[at]);
        else return TW(Mul{}(TW(ad[at]), TW(bd[at])));
    };
    return cpu::fold_lines<Monoid, TW>(m, len, term);
}

// w<m> accum= ⊕ over each row of dense A (each column with transpose_a) of A(i,j), or of A(i,j) ⊗ B(i,j)
// (Mul the multiply operator; void: A alone).
template <class Monoid, class Mul, class TW, class MaskT, class Accum, class TA, class TB>
void dense_lines(Vector<TW>& w, const MaskT& mask, Accum accum, const DenseMatrix<TA>& a, const DenseMatrix<TB>* b,
                 const Descriptor& d, const char* name) {
    const bool by_columns = d.transpose_a;
    const Index m = by_columns ? a.ncols() : a.nrows();
    if (b)
        require(b->nrows() == a.nrows() && b->ncols() == a.ncols(), name,
                "A is " + shape(a.nrows(), a.ncols()) + " but B is " + shape(b->nrows(), b->ncols()));
    require(w.size() == m, name, "w has size " + std::to_string(w.size()) + " but A has " + std::to_string(m) +
                                     (by_columns ? " columns" : " rows"));
    check_vector_mask(mask, m, name);
    same_context(name, w, mask, a);
    if (b) same_context(name, w, *b);
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        if constexpr (gpu_reducible<TW, TA, TB>) {
            const cuda::SemiringCode code{monoid_code<Monoid>(name),
                                          std::is_void_v<Mul> ? cuda::BinaryOp::first : binary_code<Mul>(name)};
            auto at = as_type<TW>(a);
            std::optional<decltype(as_type<TW>(*b))> bt;
            if (b) bt.emplace(as_type<TW>(*b));
            // The kernel reduces columns: rows are the columns of the transpose.
            std::optional<DenseMatrix<TW>> ha, hb;
            const DenseMatrix<TW>& ao = dense_op(at.get(), !by_columns, ha);
            const DenseMatrix<TW>* bo = b ? &dense_op(bt->get(), !by_columns, hb) : nullptr;
            write_back(w, cuda::dense_column_inner(ao, bo, code), mask, accum, d, name);
        } else {
            std::optional<DenseMatrix<TB>> hb;
            if (b) hb.emplace(b->to(Context::cpu()));
            Vector<TW> t = fold_dense_lines<Monoid, Mul, TW>(a.to(Context::cpu()), b ? &*hb : nullptr, by_columns);
            write_back(w, t.to(w.context()), mask, accum, d, name);
        }
        return;
    }
    cpu::write_back_vector(w, fold_dense_lines<Monoid, Mul, TW>(a, b, by_columns), mask, accum, d);
}
}  // namespace detail

// Dense A: w<m> accum= ⊕_j A(i, j) per row i, or per column with transpose_a. A full vector; without entries
// when there is nothing to reduce (A has no columns, or no rows with transpose_a).
template <class TW, class MaskT, class Accum, class Monoid, class TA>
    requires detail::VectorMask<MaskT>
void reduce(Vector<TW>& w, const MaskT& mask, Accum accum, Monoid, const DenseMatrix<TA>& a, const Descriptor& d = {}) {
    detail::dense_lines<Monoid, void>(w, mask, accum, a, static_cast<const DenseMatrix<TA>*>(nullptr), d, "reduce");
}

// Dense A and B of one shape: w<m> accum= ⊕_j A(i,j) ⊗ B(i,j) per row i, or per column with transpose_a (the
// inner products of their rows or columns: per column under semiring<plus_monoid, absdiff_op>, the L1 distances
// of many PageRank vectors at once). A full vector; without entries when there is nothing to reduce.
template <class Sr, class TW, class MaskT, class Accum, class TA, class TB>
    requires detail::VectorMask<MaskT>
void inner(Vector<TW>& w, const MaskT& mask, Accum accum, Sr, const DenseMatrix<TA>& a, const DenseMatrix<TB>& b,
           const Descriptor& d = {}) {
    detail::dense_lines<typename Sr::add_monoid, typename Sr::multiply_op>(w, mask, accum, a, &b, d, "inner");
}

namespace detail {
// ⊕ of all entries of a matrix or vector, computed in TS (the monoid's identity when there are none).
template <class TS, class Monoid, class Obj>
TS reduce_in(Monoid, const Obj& a) {
    using TA = typename Obj::value_type;
    HYBLA_ON_GPU(a) {
        if constexpr (gpu_reducible<TS, TA>)
            return cuda::reduce_all(cuda_dispatch::as_type<TS>(a).get(), cuda_dispatch::monoid_code<Monoid>("reduce"));
        else
            return reduce_in<TS>(Monoid{}, a.to(Context::cpu()));
    }
    if constexpr (is_matrix<Obj>::value)
        return cpu::reduce_values<Monoid, TS>(a.values().data(), nullptr, a.nvals());
    else
        return cpu::reduce_values<Monoid, TS>(a.values().data(), a.is_dense() ? a.bitmap().data() : nullptr,
                                              a.is_dense() ? a.size() : a.nvals());
}

// The inner product of u and v under Sr, computed in TS (u and v cast to TS before the multiply).
template <class TS, class Sr, class TU, class TV>
TS inner_in(Sr, const Vector<TU>& u, const Vector<TV>& v) {
    const bool dense = u.is_dense() && v.is_dense();
    HYBLA_ON_GPU(u) {
        using namespace cuda_dispatch;
        if constexpr (gpu_reducible<TS, TU, TV>) {
            if (dense) return cuda::inner(as_type<TS>(u).get(), as_type<TS>(v).get(), semiring_code<Sr>("inner"));
            Vector<TS> t(u.size(), u.context());
            eWiseMult(t, no_mask, no_accum, typename Sr::multiply_op{}, u, v);
            return reduce_in<TS>(typename Sr::add_monoid{}, t);
        } else {
            return inner_in<TS>(Sr{}, u.to(Context::cpu()), v.to(Context::cpu()));
        }
    }
    if (dense) {
        auto present = [](const auto& x) { return x.nvals() == x.size() ? nullptr : x.bitmap().data(); };
        return cpu::inner_values<Sr, TS>(u.values().data(), present(u), v.values().data(), present(v), u.size());
    }
    // The element-wise product, then its reduction (as eWiseMult and reduce would compute them).
    const Vector<TS> t = cpu::from_column(
        cpu::ewise_intersection<TS>(cpu::as_column(u), cpu::as_column(v), typename Sr::multiply_op{}));
    return reduce_in<TS>(typename Sr::add_monoid{}, t);
}

inline void check_inner_sizes(Index u, Index v) {
    require(u == v, "inner", "u has size " + std::to_string(u) + " but v has size " + std::to_string(v));
}
}  // namespace detail

// ⊕ of all entries (the monoid's identity when there are none), in A's type.
template <class Monoid, class TA>
TA reduce(Monoid mon, const Matrix<TA>& a) {
    return detail::reduce_in<TA>(mon, a);
}
template <class Monoid, class TU>
TU reduce(Monoid mon, const Vector<TU>& u) {
    return detail::reduce_in<TU>(mon, u);
}
// The inner product of u and v under a semiring (python-graphblas's u.inner(v)): ⊕ over the positions where
// both have an entry of u(i) ⊗ v(i), or the monoid's identity where they share none, computed in u's type (v
// is cast to it). One pass over dense operands (a PageRank iteration's sink mass, or its L1 change with
// semiring<plus_monoid, absdiff_op>); otherwise the element-wise product, then its reduction. Terms are
// combined in ranges fixed by the size, so a result is the same on every run; the backends' ranges differ, so
// floating-point results may differ between the CPU and the GPU in the last bits.
template <class Sr, class TU, class TV>
TU inner(Sr sr, const Vector<TU>& u, const Vector<TV>& v) {
    detail::check_inner_sizes(u.size(), v.size());
    detail::same_context("inner", u, v);
    return detail::inner_in<TU>(sr, u, v);
}

// Into a Scalar: queued like any operation, s.get() waits for the result (engine/scalar.hpp). Without an
// accumulator nothing is waited for here; with one, the result and s's value are combined at once.
namespace detail {
// queue(target) queues the GPU's result into the scalar's target and returns the value of a result with no term;
// it is called only where Queue is true (the GPU's kernels take the types).
template <bool Queue = true, class T, class Accum, class QueueF, class Compute>
void to_scalar(Scalar<T>& s, Accum accum, const Context& ctx, QueueF&& queue, Compute&& compute) {
    if constexpr (std::is_same_v<Accum, NoAccum>) {
        if constexpr (Queue) {
            HYBLA_ON_GPU(ctx) {
                void* stream = ctx.stream();
                const T identity = queue(s.result_target(stream));
                s.result_queued(stream, identity);
                return;
            }
        }
        s.set(compute());
    } else {
        const T r = compute();
        const std::optional<T> old = s.get();
        s.set(old ? T(accum(*old, r)) : r);
    }
}
}  // namespace detail

// s accum= ⊕ of all entries of a, computed in T (the monoid's identity when there are none).
template <class T, class Accum, class Monoid, class Obj>
    requires(detail::is_matrix<Obj>::value || detail::is_vector<Obj>::value)
void reduce(Scalar<T>& s, Accum accum, Monoid mon, const Obj& a) {
    detail::same_context("reduce", s, a);
    constexpr bool gpu = detail::gpu_reducible<T, typename Obj::value_type>;
    detail::to_scalar<gpu>(
        s, accum, a.context(),
        [&](cuda::ScalarTarget<T> to) {
            const cuda::MonoidOp op = cuda_dispatch::monoid_code<Monoid>("reduce");
            if constexpr (gpu) cuda::reduce_all(cuda_dispatch::as_type<T>(a).get(), op, to);
            return cuda::monoid_identity<T>(op);
        },
        [&] { return detail::reduce_in<T>(mon, a); });
}
// s = inner(Sr, u, v) computed in T, queued.
template <class Sr, class T, class TU, class TV>
void inner(Scalar<T>& s, Sr sr, const Vector<TU>& u, const Vector<TV>& v) {
    detail::check_inner_sizes(u.size(), v.size());
    detail::same_context("inner", s, u, v);
    constexpr bool gpu = detail::gpu_reducible<T, TU, TV>;
    if constexpr (gpu) {
        if (!(u.is_dense() && v.is_dense())) {
            Vector<T> t(u.size(), u.context());
            eWiseMult(t, no_mask, no_accum, typename Sr::multiply_op{}, u, v);
            reduce(s, no_accum, typename Sr::add_monoid{}, t);
            return;
        }
    }
    detail::to_scalar<gpu>(
        s, no_accum, u.context(),
        [&](cuda::ScalarTarget<T> to) {
            const cuda::SemiringCode code = cuda_dispatch::semiring_code<Sr>("inner");
            using cuda_dispatch::as_type;
            if constexpr (gpu) cuda::inner(as_type<T>(u).get(), as_type<T>(v).get(), code, to);
            return cuda::monoid_identity<T>(code.add);
        },
        [&] { return detail::inner_in<T>(sr, u, v); });
}

// s accum= ⊕ of all entries, computed in TS.
template <class TS, class Accum, class Monoid, class Obj>
    requires(detail::is_matrix<Obj>::value || detail::is_vector<Obj>::value)
void reduce(TS& s, Accum accum, Monoid mon, const Obj& a) {
    const TS r = detail::reduce_in<TS>(mon, a);
    if constexpr (std::is_same_v<Accum, NoAccum>) s = r;
    else s = accum(s, r);
}

}  // namespace hybla
