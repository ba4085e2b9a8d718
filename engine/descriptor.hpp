// Descriptor: only what changes the result of an operation (GraphBLAS's GrB_Descriptor).
// Tuning hints (kernel variant, memory budget) never go here.
#pragma once

namespace hybla {

struct Descriptor {
    bool transpose_a = false;      // use Aᵀ (first matrix operand)
    bool transpose_b = false;      // use Bᵀ (second matrix operand)
    bool mask_complement = false;  // write where the mask is false
    bool mask_structure = false;   // the mask's pattern counts, not its values
    bool replace = false;          // clear C outside the mask before writing
};

// Tags for "no mask" and "no accumulator", so that calls read like the GraphBLAS C API:
//   mxm(C, no_mask, no_accum, plus_times{}, A, B);
struct NoMask {};
struct NoAccum {};
inline constexpr NoMask no_mask{};
inline constexpr NoAccum no_accum{};

}  // namespace hybla
