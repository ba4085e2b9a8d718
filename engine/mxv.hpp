// mxv (w = A u) and vxm (wᵀ = uᵀ A) over a semiring, with dense and sparse (frontier) vectors.
#pragma once
#include <type_traits>

#include "engine/checks.hpp"
#include "engine/cpu/spmv.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/cuda/dispatch.hpp"
#include "engine/reduce.hpp"
#include "engine/scalar.hpp"
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
// mxv's shapes: u has op(A)'s column count and w its row count (which is returned).
template <class TA, class TU, class TW>
Index check_mxv_shapes(const char* op, const Matrix<TA>& a, const Descriptor& d, const Vector<TU>& u,
                       const Vector<TW>& w) {
    const Index m = rows_of(a, d.transpose_a), n = cols_of(a, d.transpose_a);
    require(u.size() == n, op, "A is " + shape(m, n) + " (after transpose) but u has size " + std::to_string(u.size()));
    require(w.size() == m, op, "w has size " + std::to_string(w.size()) + " but A has " + std::to_string(m) +
                                   " rows (after transpose)");
    return m;
}
}  // namespace detail

// w<m> accum= op(A) ⊕.⊗ u
template <class Sr, class TW, class MaskT, class Accum, class TA, class TU>
    requires detail::VectorMask<MaskT>
void mxv(Vector<TW>& w, const MaskT& mask, Accum accum, Sr, const Matrix<TA>& a, const Vector<TU>& u,
         const Descriptor& d = {}) {
    const Index m = detail::check_mxv_shapes("mxv", a, d, u, w);
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

// w = op(A) ⊕.⊗ u and s = inner(sr2, w, v) together: the same as
//     mxv(w, no_mask, no_accum, sr, a, u, d);  inner(s, sr2, w, v_before);
// where v_before is v as it was on entry (v may be w itself, or u). A hybla extension for iterations that
// step with one product and test their change with an inner product (PageRank: the L1 change of the iterate is
// inner(semiring<plus_monoid, absdiff_op>, r_next, r)). On the GPU, with plus_times on float or double, u and v
// full, and sr2 plus with absdiff or times, the inner product is computed by the SpMV's own kernels as they
// store w, so the step costs no extra launch; otherwise, and on the CPU, it is the two operations. s's result
// is queued like inner's.
template <class Sr, class Sr2, class T>
void mxv_inner(Vector<T>& w, Scalar<T>& s, Sr sr, const Matrix<T>& a, const Vector<T>& u, Sr2 sr2, const Vector<T>& v,
               const Descriptor& d = {}) {
    const Index m = detail::check_mxv_shapes("mxv_inner", a, d, u, w);
    detail::require(v.size() == m, "mxv_inner", "v has size " + std::to_string(v.size()) + " but A has " +
                                                    std::to_string(m) + " rows (after transpose)");
    detail::same_context("mxv_inner", w, a, u, v);
    detail::same_context("mxv_inner", s, w);
    if constexpr (std::is_same_v<Sr, plus_times> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
        HYBLA_ON_GPU(w) {
            auto full = [](const Vector<T>& x) { return x.is_dense() && x.nvals() == x.size(); };
            if (full(u) && full(v) && m > 0) {
                const cuda::SemiringCode code2 = cuda_dispatch::semiring_code<Sr2>("mxv_inner");
                const Matrix<T>& rows = d.transpose_a ? a.transposed() : a;
                trace("mxv_inner: pull on the GPU with the inner product in the same kernels, %zu rows", size_t(m));
                detail::to_scalar(
                    s, no_accum, w.context(),
                    [&](cuda::ScalarTarget<T> to) {
                        w = cuda::spmv_inner(rows, u, v, code2, to);
                        return cuda::monoid_identity<T>(code2.add);
                    },
                    [] { return T{}; });  // not reached: the GPU queues
                return;
            }
        }
    }
    if (&v == &w) {  // inner with v as it was
        const Vector<T> before = v;
        mxv(w, no_mask, no_accum, sr, a, u, d);
        inner(s, sr2, w, before);
    } else {
        mxv(w, no_mask, no_accum, sr, a, u, d);
        inner(s, sr2, w, v);
    }
}

}  // namespace hybla
