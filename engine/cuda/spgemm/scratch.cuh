// What both SpGEMMs of this folder (esc.cu, spgemm.cu) take from CUB: device scratch that only grows, and an
// exclusive sum of 64-bit counts.
#pragma once
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/context.hpp"
#include "engine/cuda/runtime.hpp"

namespace hybla::cuda::spgemm_detail {

// Device scratch for CUB that only grows (stream-ordered, so reuse between calls is safe).
class Scratch {
public:
    explicit Scratch(const Context& ctx) : buf_(0, ctx), ctx_(ctx) {}
    void* get(std::size_t bytes) {
        bytes = std::max<std::size_t>(bytes, 16);  // CUB takes a null pointer for a size query
        if (buf_.size() < bytes) buf_ = Array<std::uint8_t>(bytes, ctx_);
        return buf_.data();
    }

private:
    Array<std::uint8_t> buf_;
    Context ctx_;
};

inline void exclusive_sum(const Offset* in, Offset* out, std::uint64_t n, Scratch& scratch, const Context& ctx) {
    const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream());
    std::size_t bytes = 0;
    checked(int(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream)), "SpGEMM: scan size");
    checked(int(cub::DeviceScan::ExclusiveSum(scratch.get(bytes), bytes, in, out, n, stream)), "SpGEMM: scan");
}

}  // namespace hybla::cuda::spgemm_detail
