// What both SpGEMMs of this folder (esc.cu, spgemm.cu) take from CUB: device scratch that only grows, and an
// exclusive sum of 64-bit counts (one block of ours for short ones). And Carve: temporaries in one allocation.
#pragma once
#include <cuda_runtime.h>

#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

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

// Device temporaries of one step carved out of one allocation: an allocation and its free cost 2-3 us of host
// time, and a small product, bound by its host time, needs a dozen temporaries. take() each, then allocate(),
// after which the pointers taken (which must live until then) point into the allocation (16-byte aligned;
// nullptr for none). Freed with the Carve, in stream order.
class Carve {
public:
    explicit Carve(const Context& ctx) : storage_(0, ctx), ctx_(ctx) {}
    template <class U>
    void take(U*& p, std::uint64_t n) {
        p = nullptr;
        if (n == 0) return;
        if (n > (std::uint64_t(1) << 60) / sizeof(U))
            throw OutOfMemory("SpGEMM: temporaries of " + std::to_string(n) + " items", std::size_t(-1));
        parts_.push_back(
            {bytes_, &p, [](void* target, unsigned char* at) { *static_cast<U**>(target) = reinterpret_cast<U*>(at); }});
        bytes_ += (n * sizeof(U) + 15) / 16 * 16;
    }
    void allocate() {
        storage_ = Array<std::uint64_t>((bytes_ + 7) / 8, ctx_);
        unsigned char* base = reinterpret_cast<unsigned char*>(storage_.data());
        for (const Part& part : parts_) part.set(part.target, base + part.at);
        parts_.clear();
    }

private:
    struct Part {
        std::uint64_t at;
        void* target;
        void (*set)(void*, unsigned char*);
    };
    Array<std::uint64_t> storage_;
    Context ctx_;
    std::uint64_t bytes_ = 0;
    std::vector<Part> parts_;
};

// The exclusive sum of at most small_sum_max counts by one block: tiles of BLOCK x ITEMS counts loaded
// coalesced (through shared memory into runs of ITEMS a thread), scanned, offset by the tiles before and
// stored (in may be out). One launch, where CUB's scan makes two and asks the device for its occupancy: about
// 10 us less host time, which small products wait for. (Each thread summing its own run of n / BLOCK counts
// read them 37 apart across a warp: 72 us for git_web_ml's 37,701 counts under ncu.)
inline constexpr unsigned small_sum_block = 1024, small_sum_items = 4;
inline constexpr std::uint64_t small_sum_max = std::uint64_t(1) << 16;
template <unsigned BLOCK, unsigned ITEMS>
__global__ void __launch_bounds__(BLOCK) small_exclusive_sum_kernel(const Offset* in, Offset* out, std::uint64_t n) {
    using Load = cub::BlockLoad<Offset, BLOCK, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Store = cub::BlockStore<Offset, BLOCK, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<Offset, BLOCK>;
    __shared__ union {
        typename Load::TempStorage load;
        typename Store::TempStorage store;
        typename Scan::TempStorage scan;
    } tmp;
    constexpr std::uint64_t tile = std::uint64_t(BLOCK) * ITEMS;
    Offset carry = 0;
    for (std::uint64_t base = 0; base < n; base += tile) {
        const int valid = int(n - base < tile ? n - base : tile);
        Offset v[ITEMS];
        Load(tmp.load).Load(in + base, v, valid, Offset(0));
        __syncthreads();
        Offset total;
        Scan(tmp.scan).ExclusiveSum(v, v, total);
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) v[i] += carry;
        Store(tmp.store).Store(out + base, v, valid);
        __syncthreads();
        carry += total;
    }
}

inline void exclusive_sum(const Offset* in, Offset* out, std::uint64_t n, Scratch& scratch, const Context& ctx) {
    const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream());
    if (n == 0) return;
    if (n <= small_sum_max) {
        small_exclusive_sum_kernel<small_sum_block, small_sum_items><<<1, small_sum_block, 0, stream>>>(in, out, n);
        checked(int(cudaGetLastError()), "SpGEMM: scan");
        return;
    }
    std::size_t bytes = 0;
    checked(int(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream)), "SpGEMM: scan size");
    checked(int(cub::DeviceScan::ExclusiveSum(scratch.get(bytes), bytes, in, out, n, stream)), "SpGEMM: scan");
}

}  // namespace hybla::cuda::spgemm_detail
