// Partial results of a reduction: (position of the first term, value), `none` when they hold no term. Two
// are combined earlier-first, so `any` (which has no true identity) keeps the first term in storage order,
// as the CPU does, and every result is independent of scheduling. Used by the reductions
// (structure/reduce.cu) and by the SpMV's fused inner product (spmv/spmv.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"

namespace hybla::cuda::parts {

inline constexpr Offset none = ~Offset(0);

template <class T>
using Part = ReduceCell<T>;

template <class T>
HYBLA_HD inline Part<T> combine(MonoidOp op, Part<T> a, Part<T> b) {
    if (a.pos == none) return b;
    if (b.pos == none) return a;
    if (b.pos < a.pos) {
        Part<T> t = a;
        a = b;
        b = t;
    }
    return {a.pos, apply_monoid<T>(op, a.val, b.val)};
}

// __shfl_down_sync by bit pattern, so that every value type (bool and uint8 included) travels.
template <class T>
__device__ inline T shfl_down(T v, unsigned d) {
    if constexpr (sizeof(T) == 8) {
        unsigned long long b;
        memcpy(&b, &v, 8);
        b = __shfl_down_sync(0xffffffffu, b, d);
        memcpy(&v, &b, 8);
        return v;
    } else if constexpr (sizeof(T) == 4) {
        unsigned b;
        memcpy(&b, &v, 4);
        b = __shfl_down_sync(0xffffffffu, b, d);
        memcpy(&v, &b, 4);
        return v;
    } else {
        unsigned b = unsigned(v);
        return T(__shfl_down_sync(0xffffffffu, b, d));
    }
}

// Lane 0 gets the combination of the warp's parts (all 32 lanes must call).
template <class T>
__device__ inline Part<T> warp_combine(MonoidOp op, Part<T> x) {
    for (unsigned d = 16; d > 0; d /= 2) {
        Part<T> o{shfl_down(x.pos, d), shfl_down(x.val, d)};
        if ((threadIdx.x % 32) + d < 32) x = combine(op, x, o);
    }
    return x;
}

// Thread 0 gets the combination of the block's parts (all kThreads threads of the block must call).
template <unsigned kThreads, class T>
__device__ inline Part<T> block_combine(MonoidOp op, Part<T> x) {
    static_assert(kThreads % 32 == 0 && kThreads <= 1024);
    __shared__ Offset s_pos[kThreads / 32];
    __shared__ T s_val[kThreads / 32];
    const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
    x = warp_combine(op, x);
    __syncthreads();  // the shared slots may still be read by a previous call
    if (lane == 0) {
        s_pos[w] = x.pos;
        s_val[w] = x.val;
    }
    __syncthreads();
    if (w == 0) {
        x = lane < kThreads / 32 ? Part<T>{s_pos[lane], s_val[lane]} : Part<T>{none, T{}};
        x = warp_combine(op, x);
    }
    return x;
}

// Ends a one-launch reduction: every block calls it with its part (thread 0's); the last block to count itself
// in on `ticket` combines the blocks' parts in position order into *out and sets the ticket back to zero. All
// threads must call; block_part matters in thread 0 only.
template <unsigned kThreads, class T>
__device__ inline void finish_by_last_block(MonoidOp op, Part<T> block_part, Part<T>* block_parts, unsigned* ticket,
                                            Part<T>* out) {
    __shared__ bool last;
    if (threadIdx.x == 0) {
        block_parts[blockIdx.x] = block_part;
        __threadfence();  // the part before the count
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    const volatile Part<T>* vp = block_parts;  // written by other blocks: past this SM's L1
    Part<T> acc{none, T{}};
    for (unsigned p = threadIdx.x; p < gridDim.x; p += kThreads) acc = combine(op, acc, Part<T>{vp[p].pos, vp[p].val});
    acc = block_combine<kThreads>(op, acc);
    if (threadIdx.x == 0) {
        *out = acc;
        *ticket = 0;  // ready for the next use
    }
}

}  // namespace hybla::cuda::parts
