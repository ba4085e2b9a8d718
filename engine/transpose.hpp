// transpose: C<M> accum= Aᵀ (with transpose_a, C<M> accum= A, as the GraphBLAS C API defines it).
#pragma once
#include "engine/checks.hpp"
#include "engine/cpu/build.hpp"
#include "engine/cpu/ewise.hpp"
#include "engine/cpu/mask.hpp"
#include "engine/cuda/dispatch.hpp"

namespace hybla {

template <class TC, class MaskT, class Accum, class TA>
    requires detail::MatrixMask<MaskT>
void transpose(Matrix<TC>& c, const MaskT& mask, Accum accum, const Matrix<TA>& a, const Descriptor& d = {}) {
    const Index m = detail::rows_of(a, !d.transpose_a), n = detail::cols_of(a, !d.transpose_a);
    detail::require(c.nrows() == m && c.ncols() == n, "transpose",
                    "C is " + detail::shape(c.nrows(), c.ncols()) + " but the result is " + detail::shape(m, n));
    detail::check_mask(mask, m, n, "transpose");
    detail::same_context("transpose", c, mask, a);
    HYBLA_ON_GPU(c) {
        auto t = cuda_dispatch::as_type<TC>(d.transpose_a ? a : a.transposed());
        cuda_dispatch::write_back(c, Matrix<TC>(t.get()), mask, accum, d, "transpose");
        return;
    }
    cpu::write_back(c, cpu::cast<TC>(d.transpose_a ? a : a.transposed()), mask, accum, d);
}

}  // namespace hybla
