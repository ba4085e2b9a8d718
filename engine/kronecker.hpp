// kronecker: C<M> accum= kron(op(A), op(B)), C(ia*mb + ib, ja*nb + jb) = op(A(ia, ja), B(ib, jb)).
#pragma once
#include "engine/checks.hpp"
#include "engine/cpu/extract_assign.hpp"
#include "engine/cpu/mask.hpp"
#include "engine/cuda/dispatch.hpp"

namespace hybla {

template <class TC, class MaskT, class Accum, class Op, class TA, class TB>
    requires detail::MatrixMask<MaskT>
void kronecker(Matrix<TC>& c, const MaskT& mask, Accum accum, Op op, const Matrix<TA>& a, const Matrix<TB>& b,
               const Descriptor& d = {}) {
    const Matrix<TA>& aa = d.transpose_a ? a.transposed() : a;
    const Matrix<TB>& bb = d.transpose_b ? b.transposed() : b;
    const Index m = aa.nrows() * bb.nrows(), n = aa.ncols() * bb.ncols();
    detail::require(c.nrows() == m && c.ncols() == n, "kronecker",
                    "C is " + detail::shape(c.nrows(), c.ncols()) + " but kron(A, B) is " + detail::shape(m, n));
    detail::check_mask(mask, m, n, "kronecker");
    detail::same_context("kronecker", c, mask, a, b);
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        auto code = binary_code(op, "kronecker");
        auto at = as_type<TC>(aa);
        auto bt = as_type<TC>(bb);
        write_back(c, cuda::kronecker(at.get(), bt.get(), code), mask, accum, d, "kronecker");
        return;
    }
    cpu::write_back(c, cpu::kronecker<TC>(aa, bb, op), mask, accum, d);
}

}  // namespace hybla
