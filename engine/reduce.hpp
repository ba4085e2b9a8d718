// reduce: a matrix or a dense matrix to a vector (rows; columns with transpose_a), or a matrix or vector to a
// scalar; inner products of vectors, and of the rows or columns of two dense matrices.
#pragma once
#include <optional>
#include <type_traits>

#include "engine/checks.hpp"
#include "engine/cpu/dense.hpp"
#include "engine/cpu/reduce.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/cuda/dispatch.hpp"
#include "engine/ewise.hpp"
#include "engine/scalar.hpp"

namespace hybla {

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
        auto code = monoid_code<Monoid>("reduce");
        auto at = as_type<TW>(d.transpose_a ? a.transposed() : a);
        write_back(w, cuda::reduce_rows(at.get(), code), mask, accum, d, "reduce");
        return;
    }
    cpu::write_back_vector(w, cpu::reduce_rows<Monoid, TW>(d.transpose_a ? a.transposed() : a), mask, accum, d);
}

namespace detail {
// w<m> accum= ⊕ over each row of dense A (each column with transpose_a) of A(i,j), or of A(i,j) ⊗ B(i,j)
// (Mul the multiply operator; void: A alone).
template <class Monoid, class Mul, class TW, class MaskT, class Accum, class TA, class TB>
void dense_lines(Vector<TW>& w, const MaskT& mask, Accum accum, const DenseMatrix<TA>& a, const DenseMatrix<TB>* b,
                 const Descriptor& d, const char* name) {
    const bool by_columns = d.transpose_a;
    const Index m = by_columns ? a.ncols() : a.nrows(), len = by_columns ? a.nrows() : a.ncols();
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
        return;
    }
    const Index k = a.ncols();
    const auto ad = a.data();
    const std::span<const TB> bd = b ? b->data() : std::span<const TB>{};
    auto term = [&](Index o, Index x) {
        const Index at = by_columns ? x * k + o : o * k + x;
        if constexpr (std::is_void_v<Mul>) return TW(ad[at]);
        else return TW(Mul{}(TW(ad[at]), TW(bd[at])));
    };
    cpu::write_back_vector(w, cpu::fold_lines<Monoid, TW>(m, len, term), mask, accum, d);
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

// ⊕ of all entries (the monoid's identity when there are none).
template <class Monoid, class TA>
TA reduce(Monoid, const Matrix<TA>& a) {
    HYBLA_ON_GPU(a) return cuda::reduce_all(a, cuda_dispatch::monoid_code<Monoid>("reduce"));
    return cpu::reduce_values<Monoid, TA>(a.values().data(), nullptr, a.nvals());
}
template <class Monoid, class TU>
TU reduce(Monoid, const Vector<TU>& u) {
    HYBLA_ON_GPU(u) return cuda::reduce_all(u, cuda_dispatch::monoid_code<Monoid>("reduce"));
    return cpu::reduce_values<Monoid, TU>(u.values().data(), u.is_dense() ? u.bitmap().data() : nullptr,
                                          u.is_dense() ? u.size() : u.nvals());
}
// The inner product of u and v under a semiring (python-graphblas's u.inner(v)): ⊕ over the positions where
// both have an entry of u(i) ⊗ v(i), or the monoid's identity where they share none. One pass over dense
// operands of one type (a PageRank iteration's sink mass, or its L1 change with semiring<plus_monoid,
// absdiff_op>); otherwise the element-wise product, then its reduction. Terms are combined in ranges fixed by
// the size, so a result is the same on every run; the backends' ranges differ, so floating-point results may
// differ between the CPU and the GPU in the last bits.
template <class Sr, class TU, class TV>
TU inner(Sr, const Vector<TU>& u, const Vector<TV>& v) {
    detail::require(u.size() == v.size(), "inner", "u has size " + std::to_string(u.size()) + " but v has size " +
                                                       std::to_string(v.size()));
    detail::same_context("inner", u, v);
    if constexpr (std::is_same_v<TU, TV>) {
        if (u.is_dense() && v.is_dense()) {
            HYBLA_ON_GPU(u) return cuda::inner(u, v, cuda_dispatch::semiring_code<Sr>("inner"));
            auto present = [](const Vector<TU>& x) { return x.nvals() == x.size() ? nullptr : x.bitmap().data(); };
            return cpu::inner_values<Sr, TU>(u.values().data(), present(u), v.values().data(), present(v), u.size());
        }
    }
    Vector<TU> t(u.size(), u.context());
    eWiseMult(t, no_mask, no_accum, typename Sr::multiply_op{}, u, v);
    return reduce(typename Sr::add_monoid{}, t);
}

// Into a Scalar: queued like any operation, s.get() waits for the result (engine/scalar.hpp). Without an
// accumulator nothing is waited for here; with one, the result and s's value are combined at once.
namespace detail {
// queue(target) queues the GPU's result into the scalar's target and returns the value of a result with no term.
template <class T, class Accum, class Queue, class Compute>
void to_scalar(Scalar<T>& s, Accum accum, const Context& ctx, Queue&& queue, Compute&& compute) {
    if constexpr (std::is_same_v<Accum, NoAccum>) {
        HYBLA_ON_GPU(ctx) {
            void* stream = ctx.stream();
            const T identity = queue(s.result_target(stream));
            s.result_queued(stream, identity);
            return;
        }
        s.set(compute());
    } else {
        const T r = compute();
        const std::optional<T> old = s.get();
        s.set(old ? T(accum(*old, r)) : r);
    }
}
}  // namespace detail

// s accum= ⊕ of all entries of a (the monoid's identity when there are none).
template <class T, class Accum, class Monoid, class Obj>
    requires((detail::is_matrix<Obj>::value || detail::is_vector<Obj>::value) &&
             std::is_same_v<typename Obj::value_type, T>)
void reduce(Scalar<T>& s, Accum accum, Monoid mon, const Obj& a) {
    detail::same_context("reduce", s, a);
    detail::to_scalar(
        s, accum, a.context(),
        [&](cuda::ScalarTarget<T> to) {
            const cuda::MonoidOp op = cuda_dispatch::monoid_code<Monoid>("reduce");
            cuda::reduce_all(a, op, to);
            return cuda::monoid_identity<T>(op);
        },
        [&] { return reduce(mon, a); });
}
// s = inner(Sr, u, v), queued.
template <class Sr, class T>
void inner(Scalar<T>& s, Sr sr, const Vector<T>& u, const Vector<T>& v) {
    detail::require(u.size() == v.size(), "inner", "u has size " + std::to_string(u.size()) + " but v has size " +
                                                       std::to_string(v.size()));
    detail::same_context("inner", s, u, v);
    if (u.is_dense() && v.is_dense()) {
        detail::to_scalar(
            s, no_accum, u.context(),
            [&](cuda::ScalarTarget<T> to) {
                const cuda::SemiringCode code = cuda_dispatch::semiring_code<Sr>("inner");
                cuda::inner(u, v, code, to);
                return cuda::monoid_identity<T>(code.add);
            },
            [&] { return inner(sr, u, v); });
        return;
    }
    Vector<T> t(u.size(), u.context());
    eWiseMult(t, no_mask, no_accum, typename Sr::multiply_op{}, u, v);
    reduce(s, no_accum, typename Sr::add_monoid{}, t);
}

// s accum= ⊕ of all entries.
template <class TS, class Accum, class Monoid, class Obj>
    requires(detail::is_matrix<Obj>::value || detail::is_vector<Obj>::value)
void reduce(TS& s, Accum accum, Monoid mon, const Obj& a) {
    TS r = TS(reduce(mon, a));
    if constexpr (std::is_same_v<Accum, NoAccum>) s = r;
    else s = accum(s, r);
}

}  // namespace hybla
