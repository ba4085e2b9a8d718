// What both SpGEMMs of this folder (esc.cu, spgemm.cu) take from CUB: device scratch that only grows, and an
// exclusive sum of 64-bit counts (one block of ours for short ones). (Carve, temporaries in one allocation, is
// engine/cuda/carve.hpp.)
#pragma once
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/context.hpp"
#include "engine/cuda/carve.hpp"
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

// The exclusive sum of at most small_sum_max counts by one block of BLOCK / 32 warps: warp w owns a run of
// consecutive counts (a multiple of 32), sums it with U loads of 32 counts in flight, the warps' sums are
// scanned, and each warp walks its run again, U x 32 counts a step, each 32 a warp scan carried from the last
// (in may be out: a warp writes only its own run, after reading it). One launch, where CUB's scan makes two
// and asks the device for its occupancy (about 10 us more host time, which small products wait for). One
// multiprocessor reads and writes about 100 GB/s: over 2^14 counts CUB's scan, spread over the device, ends
// first (git_web_ml's 37,701 counts under ncu: 22.5 us here, tiles of the whole block one after another 32,
// CUB's 2.5 + 5.8; the contraction's products 0.50-0.52 -> 0.43-0.48 ms on an H100).
inline constexpr unsigned small_sum_block = 1024;
inline constexpr std::uint64_t small_sum_max = std::uint64_t(1) << 14;
// (By every thread of a block of BLOCK threads; also the tail of the SpGEMM's numeric grouping kernel.)
template <unsigned BLOCK>
__device__ __forceinline__ void block_exclusive_sum(const Offset* in, Offset* out, std::uint64_t n) {
    constexpr unsigned warps = BLOCK / 32, U = 8;
    constexpr unsigned full = 0xFFFFFFFFu;
    __shared__ Offset warp_sum[warps];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const std::uint64_t run = (n + 32 * warps - 1) / (32 * warps) * 32;
    const std::uint64_t b = n < warp * run ? n : warp * run, e = n - b < run ? n : b + run;
    Offset sum = 0;
    for (std::uint64_t p = b + lane; p < e; p += 32 * U) {
        Offset v[U];
#pragma unroll
        for (unsigned u = 0; u < U; ++u) v[u] = p + 32 * u < e ? in[p + 32 * u] : 0;
#pragma unroll
        for (unsigned u = 0; u < U; ++u) sum += v[u];
    }
    for (unsigned d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(full, sum, d);
    if (lane == 0) warp_sum[warp] = sum;
    __syncthreads();
    Offset carry = 0;
    for (unsigned w = 0; w < warp; ++w) carry += warp_sum[w];
    for (std::uint64_t p = b + lane; p - lane < e; p += 32 * U) {
        Offset v[U];
#pragma unroll
        for (unsigned u = 0; u < U; ++u) v[u] = p + 32 * u < e ? in[p + 32 * u] : 0;
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
            Offset incl = v[u];
#pragma unroll
            for (unsigned d = 1; d < 32; d <<= 1) {
                const Offset t = __shfl_up_sync(full, incl, d);
                if (lane >= d) incl += t;
            }
            if (p + 32 * u < e) out[p + 32 * u] = carry + incl - v[u];
            carry += __shfl_sync(full, incl, 31);
        }
    }
}
template <unsigned BLOCK>
__global__ void __launch_bounds__(BLOCK) small_exclusive_sum_kernel(const Offset* in, Offset* out, std::uint64_t n) {
    block_exclusive_sum<BLOCK>(in, out, n);
}

inline void exclusive_sum(const Offset* in, Offset* out, std::uint64_t n, Scratch& scratch, const Context& ctx) {
    const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream());
    if (n == 0) return;
    if (n <= small_sum_max) {
        small_exclusive_sum_kernel<small_sum_block><<<1, small_sum_block, 0, stream>>>(in, out, n);
        checked(int(cudaGetLastError()), "SpGEMM: scan");
        return;
    }
    std::size_t bytes = 0;
    checked(int(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream)), "SpGEMM: scan size");
    checked(int(cub::DeviceScan::ExclusiveSum(scratch.get(bytes), bytes, in, out, n, stream)), "SpGEMM: scan");
}

}  // namespace hybla::cuda::spgemm_detail
