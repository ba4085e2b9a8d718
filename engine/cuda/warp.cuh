// Loads and warp shuffles for every value type (bool and uint8 travel as 32-bit words), vectors of values, and
// the row of an entry in CSR offsets: used by the SpMV (spmv/), the SpMM (spmm/) and the SDDMM (sddmm/).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/config.hpp"

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

// a x b in 64 bits: one wide multiply of the 32-bit values (the compiler multiplies in 64 bits, three
// instructions, when a 32-bit value came from a 64-bit one).
__device__ __forceinline__ std::uint64_t mul_wide(unsigned a, unsigned b) {
    std::uint64_t r;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(r) : "r"(a), "r"(b));
    return r;
}

// a x b + c in one wide multiply-add (a and b 32-bit, c and the result 64-bit).
__device__ __forceinline__ std::uint64_t mad_wide(unsigned a, unsigned b, std::uint64_t c) {
    std::uint64_t r;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(c));
    return r;
}

// A vector of V values of T, loaded in one instruction when V x sizeof(T) is 8 or 16 bytes.
template <class T, unsigned V>
struct alignas(sizeof(T) * V) Vec {
    T v[V];
};

// A 16-byte vector stored evict-first (st.global.cs): output written once, which should not push out of L2 the
// lines that are read again.
template <class T, unsigned V>
__device__ __forceinline__ void store_stream(Vec<T, V>* p, const Vec<T, V>& v) {
    static_assert(sizeof(Vec<T, V>) == 16);
    uint4 u;
    memcpy(&u, &v, 16);
    __stcs(reinterpret_cast<uint4*>(p), u);
}

// The last r in [lo, hi) for which below(r) holds (below true at lo, and true on a prefix of [lo, hi): below(r)
// implies below(r') for every r' < r), by a group of L lanes (L a power of two, lane s of the group, mask the
// group's lanes): each round the L lanes probe L points of (lo, hi), so a million rows take four rounds of one
// load each for a warp, seven for 8 lanes. Every lane of the group calls it with the same arguments and gets r.
template <unsigned L, class Below>
__device__ __forceinline__ std::uint64_t group_last(std::uint64_t lo, std::uint64_t hi, Below below, unsigned s,
                                                    unsigned mask) {
    if constexpr (L == 1) {
        while (hi - lo > 1) {
            const std::uint64_t mid = lo + (hi - lo) / 2;
            if (below(mid)) lo = mid;
            else hi = mid;
        }
    } else {
        const unsigned shift = __ffs(mask) - 1;  // the group's first lane in the warp
        while (hi - lo > 1) {
            // Probes increase with s, within lo + 1 .. hi - 1: the lanes whose probe holds are a prefix of the group.
            const std::uint64_t probe = lo + 1 + (hi - lo - 1) * s / L;
            const unsigned yes = (__ballot_sync(mask, below(probe)) & mask) >> shift;
            const unsigned no = ~yes & (L == 32 ? 0xffffffffu : (1u << L) - 1u);
            const std::uint64_t new_lo = yes ? __shfl_sync(mask, probe, 31 - __clz(yes), L) : lo;
            const std::uint64_t new_hi = no ? __shfl_sync(mask, probe, __ffs(no) - 1, L) : hi;
            lo = new_lo;
            hi = new_hi;
        }
    }
    return lo;
}

// The row of entry p (the last r in [lo, hi) with off[r] <= p; off[lo] <= p < off[hi]): off does not decrease.
template <unsigned L>
__device__ __forceinline__ std::uint64_t group_row_of(const hybla::Offset* off, std::uint64_t lo, std::uint64_t hi,
                                                      std::uint64_t p, unsigned s, unsigned mask) {
    return group_last<L>(lo, hi, [&](std::uint64_t r) { return off[r] <= p; }, s, mask);
}

// The row of entry p when it lies past `row` (off[row + 1] <= p < off[nrows]): up to four rows on by steps (the
// common case: the next row), farther by a search of the group.
template <unsigned L>
__device__ __forceinline__ std::uint64_t next_row_of(const hybla::Offset* off, std::uint64_t nrows, std::uint64_t row,
                                                     std::uint64_t p, unsigned s, unsigned mask) {
    unsigned walked = 0;
    do ++row;
    while (off[row + 1] <= p && ++walked < 4);
    return off[row + 1] <= p ? group_row_of<L>(off, row + 1, nrows, p, s, mask) : row;
}

}  // namespace hybla::cuda::warp_ops
