// C<M, replace> accum= T as engine/cpu/mask.hpp defines it, as one pattern merge of C and T (keys::merge_plan
// with MergeRule::write_back decides each entry: mask looked up by binary search in the mask row) followed by
// the per-type value kernel.
#include <utility>

#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda {

using namespace keys;

template <class T>
void write_back(Matrix<T>& c, Matrix<T>&& t, const MaskPattern* mask, const BinaryOp* accum, bool replace) {
    if (!mask && !accum) {
        c.swap(t);  // t, a temporary of the caller's, takes C's old arrays to free (a move would queue an empty matrix)
        return;
    }
    const Context& ctx = c.context();
    MergeInput ci{c.storage_offsets().data(), c.storage_indices().data(), c.nvals()};
    MergeInput ti{t.storage_offsets().data(), t.storage_indices().data(), t.nvals()};
    // The mask may be C's own pattern: C is replaced only after everything reading it has been queued.
    MergePlan plan = merge_plan(c.nrows(), c.ncols(), ci, ti, MergeRule::write_back, ctx, mask, accum != nullptr,
                                replace);
    Array<T> vals(plan.nnz, ctx);
    merge_values(plan, c.storage_values().data(), t.storage_values().data(), c.nvals(), t.nvals(),
                 accum ? *accum : BinaryOp::second, vals.data(), ctx);
    c = Matrix<T>::adopt_csr(c.nrows(), c.ncols(), plan.nnz, std::move(plan.offsets), std::move(plan.cols),
                             std::move(vals));
}

#define HYBLA_X(T) template void write_back<T>(Matrix<T>&, Matrix<T>&&, const MaskPattern*, const BinaryOp*, bool);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
