// mxm: the one entry point for products with a matrix result. What it is given picks the kernel:
//   Matrix x Matrix                     -> SpGEMM (masked SpGEMM when a mask is given)
//   Matrix x DenseMatrix -> DenseMatrix -> SpMM (masked SpMM when a mask is given)
//   DenseMatrix x DenseMatrix under a sparse mask -> SDDMM
#pragma once
#include <utility>

#include "engine/checks.hpp"
#include "engine/cpu/dense.hpp"
#include "engine/cpu/mask.hpp"
#include "engine/cpu/spgemm.hpp"
#include "engine/cpu/spmm.hpp"
#include "engine/cuda/dispatch.hpp"
#include "engine/ewise.hpp"
#include "engine/trace.hpp"

namespace hybla {

namespace detail {
// op(A) and op(B) of C = op(A) ⊕.⊗ op(B): their inner dimensions agree and C has the product's shape, or a
// DimensionMismatch naming `op`. Returns the product's m, inner k and n.
struct ProductShape {
    Index m, k, n;
};
template <class TCm, class TAm, class TBm>
ProductShape check_product(const char* op, const TCm& c, const TAm& a, const TBm& b, const Descriptor& d) {
    const Index m = rows_of(a, d.transpose_a), k = cols_of(a, d.transpose_a);
    const Index kb = rows_of(b, d.transpose_b), n = cols_of(b, d.transpose_b);
    require(k == kb, op, "inner dimensions differ: A is " + shape(m, k) + " and B is " + shape(kb, n) +
                             " (after transposes)");
    require(c.nrows() == m && c.ncols() == n, op, "C is " + shape(c.nrows(), c.ncols()) + " but A*B is " + shape(m, n));
    return {m, k, n};
}
}  // namespace detail

// C<M> accum= op(A) ⊕.⊗ op(B)
template <class Sr, class TC, class MaskT, class Accum, class TA, class TB>
    requires detail::MatrixMask<MaskT>
void mxm(Matrix<TC>& c, const MaskT& mask, Accum accum, Sr, const Matrix<TA>& a, const Matrix<TB>& b,
         const Descriptor& d = {}) {
    const auto [m, k, n] = detail::check_product("mxm", c, a, b, d);
    detail::check_mask(mask, m, n, "mxm");
    detail::same_context("mxm", c, mask, a, b);
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        auto code = semiring_code<Sr>("mxm");
        auto aa = as_type<TC>(d.transpose_a ? a.transposed() : a);
        MaskHolder mh(mask, d);
        if (mh.get() && !mh.get()->complement && d.transpose_b) {
            // op(B)'s columns are B's rows: a dot product per mask entry when that is the cheaper.
            auto bt = as_type<TC>(b);
            if (cuda::spgemm_dot_preferred(aa.get(), bt.get(), *mh.get())) {
                trace("mxm: masked SpGEMM on the GPU, a dot product per mask entry");
                write_back(c, cuda::spgemm_dot(aa.get(), bt.get(), code, *mh.get()), mask, accum, d, "mxm");
                return;
            }
        }
        auto bb = as_type<TC>(d.transpose_b ? b.transposed() : b);
        trace("mxm: %sSpGEMM on the GPU", mh.get() ? "masked " : "");
        write_back(c, cuda::spgemm(aa.get(), bb.get(), code, mh.get()), mask, accum, d, "mxm");
        return;
    }
    cpu::mxm<Sr>(c, mask, accum, a, b, d);
}

// SpMM: C accum= op(A) ⊕.⊗ op(B) with B and C dense. Rows of A without entries give the monoid's identity.
template <class Sr, class TC, class Accum, class TA, class TB>
void mxm(DenseMatrix<TC>& c, NoMask, Accum accum, Sr, const Matrix<TA>& a, const DenseMatrix<TB>& b,
         const Descriptor& d = {}) {
    const auto [m, k, n] = detail::check_product("mxm (SpMM)", c, a, b, d);
    detail::same_context("mxm (SpMM)", c, a, b);
    trace("mxm: SpMM %zux%zu * dense %zux%zu", size_t(m), size_t(k), size_t(k), size_t(n));
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        auto code = semiring_code<Sr>("mxm (SpMM)");
        auto aa = as_type<TC>(d.transpose_a ? a.transposed() : a);
        auto bb = as_type<TC>(b);
        // Bᵀ made once and cached with B; held here, as C += A·Cᵀ drops C's cache when it writes C.
        const auto bt = d.transpose_b ? bb.get().transposed_ptr() : nullptr;
        const DenseMatrix<TC>& bop = bt ? *bt : bb.get();
        const bool b_is_c = bop.storage().data() == std::as_const(c).storage().data();
        if constexpr (std::is_same_v<Accum, NoAccum>) {
            // Into C's own storage (its shape is the product's): no allocation; a new C when B is C.
            if (!b_is_c) cuda::spmm_into(c, aa.get(), bop, code);
            else c = cuda::spmm(aa.get(), bop, code);
        } else if (!b_is_c) {
            cuda::spmm_accumulate(c, aa.get(), bop, code, binary_code(accum, "mxm (SpMM)"));  // in place
        } else {  // B is C: the product first
            cuda::dense_accumulate(c, cuda::spmm(aa.get(), bop, code), binary_code(accum, "mxm (SpMM)"));
        }
        return;
    }
    DenseMatrix<TC> t = cpu::spmm<Sr, TC>(d.transpose_a ? a.transposed() : a, d.transpose_b ? b.transposed() : b);
    if constexpr (std::is_same_v<Accum, NoAccum>) c = std::move(t);
    else cpu::dense_accumulate(c, t, accum);
}

// Masked SpMM: C<M> accum= op(A) ⊕.⊗ op(B) with B and C dense: each entry the mask allows (its true values, or
// its pattern with mask_structure; where it has none with mask_complement) as in the SpMM above, the others kept.
// B may be C (the values computed from B as it was). A dense C keeps every entry, so `replace` is refused. On the
// GPU a thread per mask entry (engine/cuda/spmm/masked.cu), for masks of few entries; a complemented mask is the
// SpMM above with the mask's entries saved and put back.
template <class Sr, class TC, class M, class Accum, class TA, class TB>
void mxm(DenseMatrix<TC>& c, const Matrix<M>& mask, Accum accum, Sr, const Matrix<TA>& a, const DenseMatrix<TB>& b,
         const Descriptor& d = {}) {
    const auto [m, k, n] = detail::check_product("mxm (masked SpMM)", c, a, b, d);
    detail::check_mask(mask, m, n, "mxm (masked SpMM)");
    if (d.replace)
        throw InvalidValue("mxm (masked SpMM): a dense C keeps every entry, so replace has nothing to clear; "
                           "fill C first instead");
    detail::same_context("mxm (masked SpMM)", c, mask, a, b);
    trace("mxm: masked SpMM %zux%zu * dense %zux%zu under a %smask of %zu entries", size_t(m), size_t(k), size_t(k),
          size_t(n), d.mask_complement ? "complemented " : "", size_t(mask.nvals()));
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        MaskHolder mh(mask, d);
        if (d.mask_complement) {  // the product everywhere, the mask's entries as they were
            const Array<TC> kept = cuda::dense_entries(c, *mh.get(), mh.nvals());
            Descriptor plain = d;
            plain.mask_complement = plain.mask_structure = false;
            mxm(c, no_mask, accum, Sr{}, a, b, plain);
            cuda::set_dense_entries(c, *mh.get(), mh.nvals(), kept);
            return;
        }
        mh.add_entry_rows();  // each entry's row (cached with the mask) instead of a search
        auto code = semiring_code<Sr>("mxm (masked SpMM)");
        auto aa = as_type<TC>(d.transpose_a ? a.transposed() : a);
        auto bb = as_type<TC>(b);
        const auto bt = d.transpose_b ? bb.get().transposed_ptr() : nullptr;  // held: writing C drops C's cache
        const auto acc = accum_code(accum, "mxm (masked SpMM)");
        cuda::spmm_masked(c, *mh.get(), mh.nvals(), aa.get(), bt ? *bt : bb.get(), code, acc ? &*acc : nullptr);
        return;
    }
    const auto bt = d.transpose_b ? b.transposed_ptr() : nullptr;  // held: writing C drops C's cache
    cpu::spmm_masked<Sr>(c, mask, d.mask_structure, d.mask_complement, accum, d.transpose_a ? a.transposed() : a,
                         bt ? *bt : b);
}

// SDDMM: C<M> accum= op(A) ⊕.⊗ op(B) with A and B dense, computed only where the (non-complemented) mask is.
template <class Sr, class TC, class M, class Accum, class TA, class TB>
void mxm(Matrix<TC>& c, const Matrix<M>& mask, Accum accum, Sr, const DenseMatrix<TA>& a, const DenseMatrix<TB>& b,
         const Descriptor& d = {}) {
    const auto [m, k, n] = detail::check_product("mxm (SDDMM)", c, a, b, d);
    detail::check_mask(mask, m, n, "mxm (SDDMM)");
    if (d.mask_complement)
        throw InvalidValue("mxm (SDDMM): a dense x dense product needs a mask that is not complemented "
                           "(the result would be dense); use DenseMatrix arithmetic instead");
    detail::same_context("mxm (SDDMM)", c, mask, a, b);
    trace("mxm: SDDMM %zux%zu * %zux%zu under a mask of %zu entries", size_t(m), size_t(k), size_t(k), size_t(n),
          size_t(mask.nvals()));
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        auto code = semiring_code<Sr>("mxm (SDDMM)");
        auto aa = as_type<TC>(a);
        auto bb = as_type<TC>(b);
        MaskHolder mh(mask, d);
        mh.add_entry_rows();
        // The kernel reads rows of A and of Bᵀ: A as it is unless transposed, B transposed unless it was (each
        // transpose made once and cached with its matrix).
        const DenseMatrix<TC>& ar = d.transpose_a ? aa.get().transposed() : aa.get();
        const DenseMatrix<TC>& btr = d.transpose_b ? bb.get() : bb.get().transposed();
        Matrix<TC> t = cuda::sddmm(*mh.get(), mh.nvals(), m, n, ar, btr, code);
        // T holds only entries the mask allows: into a C without entries and without an accumulator it goes as
        // it is, whatever the descriptor (nothing outside the mask to keep or drop).
        if constexpr (std::is_same_v<Accum, NoAccum>) {
            if (c.nvals() == 0) {
                c.swap(t);  // (t frees C's old arrays; a move would queue an empty matrix for t)
                return;
            }
        }
        write_back(c, std::move(t), mask, accum, d, "mxm (SDDMM)");
        return;
    }
    // Row-major rows of A and of Bᵀ make every sampled entry a contiguous dot product.
    auto run = [&](const DenseMatrix<TA>& ar, const DenseMatrix<TB>& btr) {
        cpu::write_back(c, cpu::sddmm<Sr, TC>(mask, d.mask_structure, ar, btr), mask, accum, d);
    };
    run(d.transpose_a ? a.transposed() : a, d.transpose_b ? b : b.transposed());
}

}  // namespace hybla
