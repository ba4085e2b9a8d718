// mxv (w = A u) and vxm (wᵀ = uᵀ A) over a semiring, with dense and sparse (frontier) vectors.
#pragma once
#include <type_traits>

#include "engine/checks.hpp"
#include "engine/cpu/spmv.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/cuda/dispatch.hpp"
#include "engine/trace.hpp"

namespace hybla {

namespace detail {
// w<m> accum= (Flip ? uᵀ·M' : M·u), where M is the matrix whose rows give w's entries.
// rows_form() gives the matrix whose rows are w's entries (may be a transpose, made only when pulled).
template <class Sr, bool Flip, class TW, class MaskT, class Accum, class RowsForm, class TA, class TU>
void spmv(Vector<TW>& w, const MaskT& mask, Accum accum, RowsForm&& rows_form, const Matrix<TA>* scatter_form,
          const Vector<TU>& u, const Descriptor& d) {
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        auto code = semiring_code<Sr>(Flip ? "vxm" : "mxv");
        auto mm = as_type<TW>(rows_form());
        auto uu = as_type<TW>(u);
        if constexpr (std::is_same_v<MaskT, NoMask> && std::is_same_v<Accum, plus_op> && std::is_same_v<Sr, plus_times> &&
                      (std::is_same_v<TW, float> || std::is_same_v<TW, double>)) {
            // w += A u with w and u full: the SpMV adds w as it stores (one pass instead of two).
            if (w.is_dense() && w.nvals() == w.size() && uu.get().is_dense() && uu.get().nvals() == u.size()) {
                trace("%s: pull on the GPU, %zu rows, accumulating into w", Flip ? "vxm" : "mxv", size_t(mm.get().nrows()));
                w = cuda::spmv_plus_accumulate(mm.get(), uu.get(), w);
                return;
            }
        }
        MaskHolder mh(mask, d);
        trace("%s: pull on the GPU, %zu rows", Flip ? "vxm" : "mxv", size_t(mm.get().nrows()));
        Vector<TW> t = uu.get().is_dense() ? cuda::spmv(mm.get(), uu.get(), code, Flip, mh.get())
                                           : cuda::spmv(mm.get(), cuda::densify(uu.get()), code, Flip, mh.get());
        write_back(w, std::move(t), mask, accum, d, Flip ? "vxm" : "mxv");
        return;
    }
    Array<std::uint8_t> allowed = cpu::allowed_positions(mask, w.size(), d);
    const std::uint8_t* al = allowed.empty() ? nullptr : allowed.data();
    // Push when u is a small frontier and the scatter form is at hand: work ~ the frontier's edges.
    if (scatter_form && !u.is_dense()) {
        Offset work = 0;
        for (Index k : u.indices()) work += scatter_form->row_degree(k);
        if (work * 16 < scatter_form->nvals() + w.size()) {
            trace("%s: push over a frontier of %zu entries", Flip ? "vxm" : "mxv", size_t(u.nvals()));
            cpu::write_back_vector(w, cpu::spmv_push<Sr, TW, Flip>(*scatter_form, u, al), mask, accum, d);
            return;
        }
    }
    const Matrix<TA>& rf = rows_form();
    trace("%s: pull, %zu rows, %zu entries", Flip ? "vxm" : "mxv", size_t(rf.nrows()), size_t(rf.nvals()));
    if (u.is_dense()) {
        cpu::write_back_vector(w, cpu::spmv_pull<Sr, TW, Flip>(rf, u, al), mask, accum, d);
    } else {
        Vector<TU> ud = u;
        ud.to_dense();
        cpu::write_back_vector(w, cpu::spmv_pull<Sr, TW, Flip>(rf, ud, al), mask, accum, d);
    }
}
}  // namespace detail

// w<m> accum= op(A) ⊕.⊗ u
template <class Sr, class TW, class MaskT, class Accum, class TA, class TU>
    requires detail::VectorMask<MaskT>
void mxv(Vector<TW>& w, const MaskT& mask, Accum accum, Sr, const Matrix<TA>& a, const Vector<TU>& u,
         const Descriptor& d = {}) {
    const Index m = detail::rows_of(a, d.transpose_a), n = detail::cols_of(a, d.transpose_a);
    detail::require(u.size() == n, "mxv", "A is " + detail::shape(m, n) + " (after transpose) but u has size " +
                                              std::to_string(u.size()));
    detail::require(w.size() == m, "mxv", "w has size " + std::to_string(w.size()) + " but A has " +
                                              std::to_string(m) + " rows (after transpose)");
    detail::check_vector_mask(mask, m, "mxv");
    detail::same_context("mxv", w, mask, a, u);
    // Rows of op(A) give w; rows of op(A)ᵀ scatter u. With transpose, A's own rows scatter (no copy).
    if (d.transpose_a)
        detail::spmv<Sr, false>(w, mask, accum, [&]() -> const Matrix<TA>& { return a.transposed(); }, &a, u, d);
    else
        detail::spmv<Sr, false>(w, mask, accum, [&]() -> const Matrix<TA>& { return a; },
                                a.has_cached_transpose() ? &a.transposed() : nullptr, u, d);
}

// wᵀ<mᵀ> accum= uᵀ ⊕.⊗ op(A)
template <class Sr, class TW, class MaskT, class Accum, class TU, class TA>
    requires detail::VectorMask<MaskT>
void vxm(Vector<TW>& w, const MaskT& mask, Accum accum, Sr, const Vector<TU>& u, const Matrix<TA>& a,
         const Descriptor& d = {}) {
    const Index m = detail::rows_of(a, d.transpose_a), n = detail::cols_of(a, d.transpose_a);
    detail::require(u.size() == m, "vxm", "A is " + detail::shape(m, n) + " (after transpose) but u has size " +
                                              std::to_string(u.size()));
    detail::require(w.size() == n, "vxm", "w has size " + std::to_string(w.size()) + " but A has " +
                                              std::to_string(n) + " columns (after transpose)");
    detail::check_vector_mask(mask, n, "vxm");
    detail::same_context("vxm", w, mask, a, u);
    if (d.transpose_a)
        detail::spmv<Sr, true>(w, mask, accum, [&]() -> const Matrix<TA>& { return a; },
                               a.has_cached_transpose() ? &a.transposed() : nullptr, u, d);
    else
        detail::spmv<Sr, true>(w, mask, accum, [&]() -> const Matrix<TA>& { return a.transposed(); }, &a, u, d);
}

}  // namespace hybla
