// Device memory statistics: how much of the GPU's memory pool hybla's operations held at most.
#pragma once
#include <cstddef>

#include "engine/context.hpp"

namespace hybla {
namespace cuda {
std::size_t pool_peak_bytes(int device);  // the high-water mark of the device's default memory pool
void pool_reset_peak(int device);
}  // namespace cuda

// The most device memory held at once since the start (or the last reset) on ctx's GPU; 0 for the CPU.
inline std::size_t peak_device_memory(const Context& ctx) {
    if constexpr (cuda_compiled)
        if (ctx.is_cuda()) return cuda::pool_peak_bytes(ctx.device());
    return 0;
}
inline void reset_peak_device_memory(const Context& ctx) {
    if constexpr (cuda_compiled)
        if (ctx.is_cuda()) cuda::pool_reset_peak(ctx.device());
}

}  // namespace hybla
