// eWiseAdd (union of patterns) and eWiseMult (intersection) on matrices and vectors, and both on dense
// matrices (where every entry is present, so they agree). op is a binary operator, a monoid, or a semiring
// (eWiseAdd then uses its add, eWiseMult its multiply).
#pragma once
#include <optional>
#include <utility>

#include "engine/checks.hpp"
#include "engine/cpu/dense.hpp"
#include "engine/cpu/ewise.hpp"
#include "engine/cpu/mask.hpp"
#include "engine/cpu/vector_view.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/cuda/dispatch.hpp"

namespace hybla {

namespace detail {
template <class Op> auto add_op_of(Op op) {
    if constexpr (requires { typename Op::add_monoid; }) return typename Op::add_monoid{};
    else return op;
}
template <class Op> auto mult_op_of(Op op) {
    if constexpr (requires { typename Op::multiply_op; }) return typename Op::multiply_op{};
    else return op;
}

// op(A) and op(B) of one shape, and C of it (matrices or dense matrices); returns op(A)'s shape.
template <class C, class A, class B>
std::pair<Index, Index> check_ewise_shapes(const C& c, const A& a, const B& b, const Descriptor& d, const char* name) {
    const Index m = rows_of(a, d.transpose_a), n = cols_of(a, d.transpose_a);
    require(rows_of(b, d.transpose_b) == m && cols_of(b, d.transpose_b) == n, name,
            "A is " + shape(m, n) + " but B is " + shape(rows_of(b, d.transpose_b), cols_of(b, d.transpose_b)));
    require(c.nrows() == m && c.ncols() == n, name, "C is " + shape(c.nrows(), c.ncols()) + " but A is " + shape(m, n));
    return {m, n};
}

template <bool Union, class TC, class MaskT, class Accum, class Op, class TA, class TB>
void ewise_matrix(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, const Matrix<TA>& a, const Matrix<TB>& b,
                  const Descriptor& d, const char* name) {
    const auto [m, n] = check_ewise_shapes(c, a, b, d, name);
    check_mask(mask, m, n, name);
    same_context(name, c, mask, a, b);
    const Matrix<TA>& aa = d.transpose_a ? a.transposed() : a;
    const Matrix<TB>& bb = d.transpose_b ? b.transposed() : b;
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        auto code = binary_code(op, name);
        auto at = as_type<TC>(aa);
        auto bt = as_type<TC>(bb);
        write_back(c, cuda::ewise(at.get(), bt.get(), code, Union), mask, accum, d, name);
        return;
    }
    if constexpr (Union) cpu::write_back(c, cpu::ewise_union<TC>(aa, bb, op), mask, accum, d);
    else cpu::write_back(c, cpu::ewise_intersection<TC>(aa, bb, op), mask, accum, d);
}

template <bool Union, class TW, class MaskT, class Accum, class Op, class TU, class TV>
void ewise_vector(Vector<TW>& w, const MaskT& mask, Accum accum, Op op, const Vector<TU>& u, const Vector<TV>& v,
                  const Descriptor& d, const char* name) {
    require(u.size() == v.size() && w.size() == u.size(), name,
            "sizes differ: w " + std::to_string(w.size()) + ", u " + std::to_string(u.size()) + ", v " +
                std::to_string(v.size()));
    check_vector_mask(mask, w.size(), name);
    same_context(name, w, mask, u, v);
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        auto code = binary_code(op, name);
        auto ut = as_type<TW>(u);
        auto vt = as_type<TW>(v);
        if (is_full(ut.get()) && is_full(vt.get())) {  // union and intersection are both everything
            write_back(w, cuda::full_ewise(ut.get(), vt.get(), code), mask, accum, d, name);
            return;
        }
        Matrix<TW> t = cuda::ewise(cuda::as_column(ut.get()), cuda::as_column(vt.get()), code, Union);
        write_back(w, cuda::from_column(t), mask, accum, d, name);
        return;
    }
    auto uc = cpu::as_column(u);
    auto vc = cpu::as_column(v);
    Matrix<TW> t = Union ? cpu::ewise_union<TW>(uc, vc, op) : cpu::ewise_intersection<TW>(uc, vc, op);
    cpu::write_back_vector(w, cpu::from_column(t), mask, accum, d);
}

// op(A) of a dense matrix: A itself, or its transpose (on A's backend), kept in hold.
template <class T>
const DenseMatrix<T>& dense_op(const DenseMatrix<T>& a, bool transpose, std::optional<DenseMatrix<T>>& hold) {
    if (!transpose) return a;
    HYBLA_ON_GPU(a) return hold.emplace(cuda::dense_transpose(a));
    return hold.emplace(cpu::dense_transpose(a));
}

// C accum= op(op(A), op(B)) on dense matrices.
template <class TC, class Accum, class Op, class TA, class TB>
void ewise_dense(DenseMatrix<TC>& c, Accum accum, Op op, const DenseMatrix<TA>& a, const DenseMatrix<TB>& b,
                 const Descriptor& d, const char* name) {
    check_ewise_shapes(c, a, b, d, name);
    same_context(name, c, a, b);
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        auto at = as_type<TC>(a);
        auto bt = as_type<TC>(b);
        std::optional<DenseMatrix<TC>> ha, hb;
        DenseMatrix<TC> t = cuda::dense_ewise(dense_op(at.get(), d.transpose_a, ha), dense_op(bt.get(), d.transpose_b, hb),
                                              binary_code(op, name));
        if constexpr (std::is_same_v<Accum, NoAccum>) c = std::move(t);
        else cuda::dense_accumulate(c, t, binary_code(accum, name));
        return;
    }
    std::optional<DenseMatrix<TA>> ha;
    std::optional<DenseMatrix<TB>> hb;
    DenseMatrix<TC> t = cpu::dense_ewise<TC>(dense_op(a, d.transpose_a, ha), dense_op(b, d.transpose_b, hb), op);
    if constexpr (std::is_same_v<Accum, NoAccum>) c = std::move(t);
    else cpu::dense_accumulate(c, t, accum);
}
}  // namespace detail

template <class TC, class MaskT, class Accum, class Op, class TA, class TB>
    requires detail::MatrixMask<MaskT>
void eWiseAdd(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, const Matrix<TA>& a, const Matrix<TB>& b,
              const Descriptor& d = {}) {
    detail::ewise_matrix<true>(c, mask, accum, detail::add_op_of(op), a, b, d, "eWiseAdd");
}
template <class TC, class MaskT, class Accum, class Op, class TA, class TB>
    requires detail::MatrixMask<MaskT>
void eWiseMult(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, const Matrix<TA>& a, const Matrix<TB>& b,
               const Descriptor& d = {}) {
    detail::ewise_matrix<false>(c, mask, accum, detail::mult_op_of(op), a, b, d, "eWiseMult");
}
template <class TW, class MaskT, class Accum, class Op, class TU, class TV>
    requires detail::VectorMask<MaskT>
void eWiseAdd(Vector<TW>& w, const MaskT& mask, Accum accum, Op op, const Vector<TU>& u, const Vector<TV>& v,
              const Descriptor& d = {}) {
    detail::ewise_vector<true>(w, mask, accum, detail::add_op_of(op), u, v, d, "eWiseAdd");
}
template <class TW, class MaskT, class Accum, class Op, class TU, class TV>
    requires detail::VectorMask<MaskT>
void eWiseMult(Vector<TW>& w, const MaskT& mask, Accum accum, Op op, const Vector<TU>& u, const Vector<TV>& v,
               const Descriptor& d = {}) {
    detail::ewise_vector<false>(w, mask, accum, detail::mult_op_of(op), u, v, d, "eWiseMult");
}

// Dense matrices: C accum= op(op(A), op(B)) element by element (no mask: every entry of C is written).
template <class TC, class Accum, class Op, class TA, class TB>
void eWiseAdd(DenseMatrix<TC>& c, NoMask, Accum accum, Op op, const DenseMatrix<TA>& a, const DenseMatrix<TB>& b,
              const Descriptor& d = {}) {
    detail::ewise_dense(c, accum, detail::add_op_of(op), a, b, d, "eWiseAdd");
}
template <class TC, class Accum, class Op, class TA, class TB>
void eWiseMult(DenseMatrix<TC>& c, NoMask, Accum accum, Op op, const DenseMatrix<TA>& a, const DenseMatrix<TB>& b,
               const Descriptor& d = {}) {
    detail::ewise_dense(c, accum, detail::mult_op_of(op), a, b, d, "eWiseMult");
}

}  // namespace hybla
