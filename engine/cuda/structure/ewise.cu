// Element-wise union and intersection, and the pattern merge (keys::merge_plan) they share with write_back.
//
// The merge needs no sort: every entry of A finds, by binary search in the same row of B, its partner or the
// position where it would be inserted (and B's entries likewise in A). An entry's position in the row-major
// merge of A and B is then its own position plus the other operand's insertion position; dropping entries
// (intersection, masks) only subtracts the dropped ones before it, which two exclusive scans of keep flags
// count. All of this is type-independent; the per-type part is one small value kernel (merge_values).
#include <utility>

#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace keys {

MergePlan merge_plan(Index nrows, Index ncols, MergeInput a, MergeInput b, MergeRule rule, const Context& ctx,
                     const MaskPattern* mask, bool accum, bool replace) {
    MergePlan plan;
    plan.nrows = nrows;
    plan.ncols = ncols;
    plan.take_a = Array<std::uint8_t>(a.nnz, ctx);
    plan.a_other = Array<Offset>(a.nnz, ctx);
    plan.a_rank = Array<Offset>(a.nnz + 1, ctx);
    plan.b_other = Array<Offset>(b.nnz, ctx);
    plan.b_rank = Array<Offset>(b.nnz + 1, ctx);
    const bool has_mask = mask != nullptr;
    const MaskPattern mk = has_mask ? *mask : MaskPattern{};
    {
        std::uint8_t* take = plan.take_a.data();
        Offset* other = plan.a_other.data();
        Offset* rank = plan.a_rank.data();
        for_each(a.nnz, ctx, "merge_plan(a)", [=] __device__(std::uint64_t p) {
            const Index r = row_of(a.offsets, nrows, p);
            const ColIndex j = a.cols[p];
            const Offset e = b.offsets[r + 1];
            const Offset q = lower_bound(b.cols, b.offsets[r], e, j);
            const bool matched = q < e && b.cols[q] == j;
            Take t;
            if (rule == MergeRule::union_) {
                t = matched ? Take::both : Take::a;
            } else if (rule == MergeRule::intersection) {
                t = matched ? Take::both : Take::drop;
            } else {  // A = C, B = T: engine/cpu/mask.hpp's write_back, entry by entry
                const bool m = !has_mask || mask_at(mk, r, j);
                if (m) t = matched ? (accum ? Take::both : Take::b) : (accum ? Take::a : Take::drop);
                else t = replace ? Take::drop : Take::a;
            }
            take[p] = std::uint8_t(t);
            other[p] = q;
            rank[p] = t != Take::drop;
        });
    }
    {
        Offset* other = plan.b_other.data();
        Offset* rank = plan.b_rank.data();
        for_each(b.nnz, ctx, "merge_plan(b)", [=] __device__(std::uint64_t q) {
            const Index r = row_of(b.offsets, nrows, q);
            const ColIndex j = b.cols[q];
            const Offset e = a.offsets[r + 1];
            const Offset p = lower_bound(a.cols, a.offsets[r], e, j);
            const bool matched = p < e && a.cols[p] == j;
            // Entries with a partner are carried by the A side; lone B entries keep their own value.
            bool keep = false;
            if (!matched) {
                if (rule == MergeRule::union_) keep = true;
                else if (rule == MergeRule::write_back) keep = !has_mask || mask_at(mk, r, j);
            }
            other[q] = p;
            rank[q] = keep;
        });
    }
    exclusive_scan(plan.a_rank.data(), a.nnz + 1, ctx);
    exclusive_scan(plan.b_rank.data(), b.nnz + 1, ctx);

    plan.offsets = Array<Offset>(nrows + 1, ctx);
    {
        Offset* off = plan.offsets.data();
        const Offset* ar = plan.a_rank.data();
        const Offset* br = plan.b_rank.data();
        for_each(nrows + 1, ctx, "merge_plan(offsets)",
                 [=] __device__(std::uint64_t r) { off[r] = ar[a.offsets[r]] + br[b.offsets[r]]; });
    }
    plan.nnz = plan.offsets.get(nrows);
    plan.cols = Array<ColIndex>(plan.nnz, ctx);
    {
        ColIndex* out = plan.cols.data();
        const std::uint8_t* take = plan.take_a.data();
        const Offset* ao = plan.a_other.data();
        const Offset* ar = plan.a_rank.data();
        const Offset* bo = plan.b_other.data();
        const Offset* br = plan.b_rank.data();
        for_each(a.nnz, ctx, "merge_plan(cols a)", [=] __device__(std::uint64_t p) {
            if (take[p] != std::uint8_t(Take::drop)) out[ar[p] + br[ao[p]]] = a.cols[p];
        });
        for_each(b.nnz, ctx, "merge_plan(cols b)", [=] __device__(std::uint64_t q) {
            if (br[q + 1] != br[q]) out[ar[bo[q]] + br[q]] = b.cols[q];
        });
    }
    return plan;
}

}  // namespace keys

using namespace keys;

template <class T>
Matrix<T> ewise(const Matrix<T>& a, const Matrix<T>& b, BinaryOp op, bool union_pattern) {
    const Context& ctx = a.context();
    MergeInput ai{a.storage_offsets().data(), a.storage_indices().data(), a.nvals()};
    MergeInput bi{b.storage_offsets().data(), b.storage_indices().data(), b.nvals()};
    MergePlan plan = merge_plan(a.nrows(), a.ncols(), ai, bi,
                                union_pattern ? MergeRule::union_ : MergeRule::intersection, ctx);
    Array<T> vals(plan.nnz, ctx);
    merge_values(plan, a.storage_values().data(), b.storage_values().data(), a.nvals(), b.nvals(), op, vals.data(), ctx);
    return Matrix<T>::adopt_csr(a.nrows(), a.ncols(), plan.nnz, std::move(plan.offsets), std::move(plan.cols),
                                std::move(vals));
}

#define HYBLA_X(T) template Matrix<T> ewise<T>(const Matrix<T>&, const Matrix<T>&, BinaryOp, bool);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
