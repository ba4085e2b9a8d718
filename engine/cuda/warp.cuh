// Loads and warp shuffles for every value type (bool and uint8 travel as 32-bit words): used by the SpMV
// (spmv/spmv.cu) and the SpMM (spmm/spmm.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

namespace hybla::cuda::warp_ops {

template <class W, class T>
__device__ __forceinline__ W widen(T v) {
    W w = 0;
    memcpy(&w, &v, sizeof(T));
    return w;
}
template <class T, class W>
__device__ __forceinline__ T narrow(W w) {
    T v;
    memcpy(&v, &w, sizeof(T));
    return v;
}
template <class T>
using word_t = std::conditional_t<(sizeof(T) <= 4), unsigned, unsigned long long>;

// Entries are read once: evict-first keeps u's values in L2 while the matrix streams past.
template <class T>
__device__ __forceinline__ T load_stream(const T* p) {
    if constexpr (sizeof(T) == 1) return narrow<T>(__ldcs(reinterpret_cast<const unsigned char*>(p)));
    else if constexpr (sizeof(T) == 2) return narrow<T>(__ldcs(reinterpret_cast<const unsigned short*>(p)));
    else if constexpr (sizeof(T) == 4) return narrow<T>(__ldcs(reinterpret_cast<const unsigned*>(p)));
    else return narrow<T>(__ldcs(reinterpret_cast<const unsigned long long*>(p)));
}
template <class T>
__device__ __forceinline__ T load_ro(const T* p) {
    if constexpr (sizeof(T) == 1) return narrow<T>(__ldg(reinterpret_cast<const unsigned char*>(p)));
    else if constexpr (sizeof(T) == 2) return narrow<T>(__ldg(reinterpret_cast<const unsigned short*>(p)));
    else if constexpr (sizeof(T) == 4) return narrow<T>(__ldg(reinterpret_cast<const unsigned*>(p)));
    else return narrow<T>(__ldg(reinterpret_cast<const unsigned long long*>(p)));
}
template <class T>
__device__ __forceinline__ T shfl_up(T v, unsigned d) {
    return narrow<T>(__shfl_up_sync(0xffffffffu, widen<word_t<T>>(v), d));
}
template <class T>
__device__ __forceinline__ T shfl_down(T v, unsigned d) {
    return narrow<T>(__shfl_down_sync(0xffffffffu, widen<word_t<T>>(v), d));
}
// Lane src of the width-lane segment (of the lanes in mask) that the calling lane belongs to.
template <class T>
__device__ __forceinline__ T shfl_idx(T v, int src, unsigned mask = 0xffffffffu, int width = 32) {
    return narrow<T>(__shfl_sync(mask, widen<word_t<T>>(v), src, width));
}

}  // namespace hybla::cuda::warp_ops
