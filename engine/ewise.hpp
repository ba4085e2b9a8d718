// eWiseAdd (union of patterns) and eWiseMult (intersection) on matrices and vectors.
// op is a binary operator, a monoid, or a semiring (eWiseAdd then uses its add, eWiseMult its multiply).
#pragma once
#include "engine/checks.hpp"
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

template <bool Union, class TC, class MaskT, class Accum, class Op, class TA, class TB>
void ewise_matrix(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, const Matrix<TA>& a, const Matrix<TB>& b,
                  const Descriptor& d, const char* name) {
    const Index m = rows_of(a, d.transpose_a), n = cols_of(a, d.transpose_a);
    require(rows_of(b, d.transpose_b) == m && cols_of(b, d.transpose_b) == n, name,
            "A is " + shape(m, n) + " but B is " + shape(rows_of(b, d.transpose_b), cols_of(b, d.transpose_b)));
    require(c.nrows() == m && c.ncols() == n, name, "C is " + shape(c.nrows(), c.ncols()) + " but A is " + shape(m, n));
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

}  // namespace hybla
