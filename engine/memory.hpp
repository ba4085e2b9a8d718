// Device memory: how much of the GPU's memory pool hybla's operations held at most, and starting the GPU early.
// The pool is the device's: contexts on different streams of one device share it (and its peak).
#pragma once
#include <cstddef>

#include "engine/context.hpp"

namespace hybla {
namespace cuda {
std::size_t pool_peak_bytes(int device);  // the high-water mark of the device's default memory pool
void pool_reset_peak(int device);
void warm_up(int device);                     // creates the device's context and sets up its memory pool
std::size_t available_device_bytes(int device);  // free memory, the pool's idle memory included
void release_kept_blocks(int device);            // the kept blocks of every stream back to the pool; waits
}  // namespace cuda

// Starts ctx's GPU now (its context and memory pool) rather than at the first operation, so that a program
// can do it while it reads its input; nothing for the CPU.
inline void warm_up(const Context& ctx) {
    if constexpr (cuda_compiled)
        if (ctx.is_cuda()) cuda::warm_up(ctx.device());
}

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
// Hands back to the device's memory pool the freed blocks that hybla keeps for the next allocation of their size
// on a stream (up to 8 MiB each), and waits for ctx's GPU; nothing for the CPU. After it, the peak counts every
// array an operation asks for, none served from kept blocks.
inline void release_kept_device_memory(const Context& ctx) {
    if constexpr (cuda_compiled)
        if (ctx.is_cuda()) cuda::release_kept_blocks(ctx.device());
}

}  // namespace hybla
