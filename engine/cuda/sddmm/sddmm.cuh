// HP-SDDMM (papers/hp-spmm-sddmm.txt, Section III-A2, Algorithm 4) made semiring-generic: T(i,j) = ⊕_x A(i,x) ⊗
// Bt(j,x) for each entry (i, j) of a sparse pattern, A (m x K) and Bt (n x K) dense row-major. README.md beside
// this file has the design and the measurements.
//
// Header-visible: any semiring type with device `add` and `multiply` (RuntimeSemiring and PlusTimes of
// engine/cuda/opcodes.hpp are two) instantiates it.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "engine/config.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/warp.cuh"

namespace hybla::cuda::sddmm_detail {

using warp_ops::Vec;

inline constexpr unsigned warp_size = 32;
inline constexpr unsigned block_size = 256;

template <class T>
struct Args {
    std::uint64_t nrows = 0, nnz = 0, k = 0;
    std::uint64_t per_warp = 0;   // entries of each warp's share (a multiple of the entries a warp takes at once)
    const Offset* off = nullptr;  // the pattern (m + 1 offsets, nnz columns)
    const ColIndex* cols = nullptr;
    const std::uint32_t* rows = nullptr;  // the row of each entry (the shares kernel)
    const T* a = nullptr;   // m x k
    const T* bt = nullptr;  // n x k
    Offset* out_off = nullptr;     // the pattern's offsets copied here (m + 1)
    ColIndex* out_cols = nullptr;  // and its columns
    T* out = nullptr;              // nnz values
};

// A kernel's start: the pattern's offsets copied into C's by every thread of the grid (not a copy of their own:
// one call less to queue), then the calling warp's share of the entries, [begin, end); false if it has none.
template <class T>
__device__ __forceinline__ bool start_warp(const Args<T>& x, std::uint64_t& begin, std::uint64_t& end) {
    for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i <= x.nrows;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        x.out_off[i] = x.off[i];
    begin = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size * x.per_warp;
    end = begin + x.per_warp < x.nnz ? begin + x.per_warp : x.nnz;
    return begin < x.nnz;
}

// plus_times' fold by halving, H times (H <= log2 L and U): lane s keeps the half of its n values that bit d of s
// selects (d = L / 2, L / 4, ...) and adds its partner's copy of that half, one shuffle a value kept. Returns the
// entry of acc[0] in this lane; acc[0 .. U >> H) hold sums over 2^H lanes. (+ is commutative: the same bits run
// after run.)
template <unsigned L, unsigned U, unsigned H, class T>
__device__ __forceinline__ unsigned halve(T (&acc)[U], unsigned s) {
    unsigned first = 0;
    if constexpr (H > 0) {
#pragma unroll
        for (unsigned h = 0, d = L / 2, n = U; h < H; ++h, d /= 2, n /= 2) {
            const bool upper = s & d;
#pragma unroll
            for (unsigned i = 0; i < n / 2; ++i) {
                const T send = upper ? acc[i] : acc[i + n / 2];
                const T keep = upper ? acc[i + n / 2] : acc[i];
                acc[i] = keep + __shfl_xor_sync(0xffffffffu, send, d, L);
            }
            if (upper) first += n / 2;
        }
    }
    return first;
}

// Folds U values over the L lanes of each group, lower lane first, carrying a "has a term" flag (no identity
// assumed): lane 0 of the group ends with the results. Every lane of the warp calls it (width L keeps the shuffles
// within each group).
template <unsigned L, unsigned U, class T, class Sr>
__device__ __forceinline__ void fold_flagged(T (&acc)[U], bool (&has)[U], unsigned s, const Sr& sr) {
#pragma unroll
    for (unsigned d = 1; d < L; d *= 2) {
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
            const T other = __shfl_down_sync(0xffffffffu, acc[u], d, L);
            const bool other_has = __shfl_down_sync(0xffffffffu, has[u], d, L);
            if (s % (2 * d) == 0 && other_has) {
                acc[u] = has[u] ? sr.template add<T>(acc[u], other) : other;
                has[u] = true;
            }
        }
    }
}

// Each warp takes an equal share of the entries, across row boundaries. A group of L lanes computes an entry
// (32 / L entries at once; L sized to K, so no lane idles at small K), U of them a step: the step's columns and
// rows read and the U rows of Bt gathered before the first product, so U gathers are in flight, not one. Lane s of
// the group holds the vectors s, s + L, ..., s + (NV - 1) L of V values of A's row, kept in registers while the
// group's next entry is in the same row, and loads the same vectors of Bt's row j. Each lane folds its terms in x
// order, then the group folds the lanes' results in a fixed order (the same bits run after run; below).
// NV = 0: K is too long for registers; the group walks A's row and Bt's row together, L x V values at a time.
// The row of each entry comes from the pattern's row array (x.rows, built once and cached on the mask), read
// like the columns: no step searches the offsets, and rows of one entry or empty ones cost nothing more.
// Four blocks a multiprocessor (64 registers a thread): the 32 warps a multiprocessor that per_warp (sddmm.cu)
// counts on are resident at once, one wave. Two with 8 vectors of A kept a lane (K over 512 floats), which would
// spill.
template <class T, class Sr, unsigned L, unsigned V, unsigned NV, unsigned U>
__global__ void __launch_bounds__(block_size, NV > 4 ? 2 : 4) sddmm_kernel(Args<T> x, Sr sr) {
    constexpr unsigned E = warp_size / L;  // entries at once per warp, U times a step
    constexpr unsigned NB = NV > 0 ? NV : 1;
    const unsigned lane = threadIdx.x % warp_size, group = lane / L, s = lane % L;
    std::uint64_t begin = 0, end = 0;
    if (!start_warp(x, begin, end)) return;
    const std::uint64_t k = x.k, kv = k / V;  // vectors per row
    // Positions below are relative to begin and 32-bit (a share is at most 2^31 entries): half the instructions
    // of 64-bit ones for the step's bookkeeping.
    const unsigned count = unsigned(end - begin);
    const ColIndex* const cols = x.cols + begin;
    const std::uint32_t* const rows = x.rows + begin;
    ColIndex* const out_cols = x.out_cols + begin;
    T* const out = x.out + begin;
    // Where a step takes at most 32 entries, its columns and rows come from a window of the warp's next 32 (lane t
    // holding those of entry begin + 32 w + t) by shuffles, the window after it read a window ahead: a step's
    // gathers then wait for no read. The window also writes C's columns, one coalesced store a window.
    constexpr bool col_window = E * U <= warp_size;
    constexpr unsigned window_steps = col_window ? warp_size / (E * U) : 1;
    ColIndex cw = 0, cw_next = 0;
    std::uint32_t rw = 0, rw_next = 0;
    auto read_window = [&](unsigned first, ColIndex& c, std::uint32_t& r) {
        const unsigned q = first + lane;
        c = q < count ? cols[q] : ColIndex(0);
        r = q < count ? rows[q] : 0u;
    };
    if constexpr (col_window) {
        read_window(0, cw, rw);
        read_window(warp_size, cw_next, rw_next);
        if (lane < count) out_cols[lane] = cw;
    }
    // Without the column window, plus_times on groups of several lanes writes the step's columns after the
    // fold, its lanes sharing the stores (one instruction a warp for K = 32 floats, not four); others as each
    // entry is read (j[] would live through their longer fold and spill).
    constexpr bool late_cols = L > 1 && std::is_same_v<Sr, PlusTimes>;
    bool loaded = false;  // a_reg holds A's row held_row
    std::uint32_t held_row = 0;
    Vec<T, V> a_reg[NB];
    // Every lane of the warp runs the same number of steps (the groups' entries differ only by `group`).
    const unsigned steps = (count + E * U - 1) / (E * U);
    unsigned p = group;
    for (unsigned step = 0; step < steps; ++step, p += E * U) {
        ColIndex j[U];
        std::uint32_t ri[U];  // their rows
        if constexpr (col_window) {
            const unsigned in_window = unsigned(step % window_steps) * E * U;
            if (step > 0 && in_window == 0) {
                const unsigned first = (step / window_steps) * warp_size;
                cw = cw_next;
                rw = rw_next;
                if (first + lane < count) out_cols[first + lane] = cw;
                read_window(first + warp_size, cw_next, rw_next);
            }
#pragma unroll
            for (unsigned u = 0; u < U; ++u) {
                j[u] = __shfl_sync(0xffffffffu, cw, in_window + group + u * E);
                ri[u] = __shfl_sync(0xffffffffu, rw, in_window + group + u * E);
            }
        } else {
#pragma unroll
            for (unsigned u = 0; u < U; ++u) {
                j[u] = p + u * E < count ? cols[p + u * E] : 0;
                ri[u] = p + u * E < count ? rows[p + u * E] : 0u;
            }
        }
        Vec<T, V> b[U][NB];
        if constexpr (NV > 0) {
#pragma unroll
            for (unsigned u = 0; u < U; ++u) {
                const Vec<T, V>* br = reinterpret_cast<const Vec<T, V>*>(x.bt + std::uint64_t(j[u]) * k);
#pragma unroll
                for (unsigned t = 0; t < NV; ++t)
                    if (p + u * E < count && s + t * L < kv) b[u][t] = br[s + t * L];
            }
        }
        T acc[U];
        bool has[U];
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
            const unsigned q = p + u * E;
            acc[u] = T{};
            has[u] = false;
            if (q >= count) continue;
            if (ri[u] != held_row) loaded = false;
            held_row = ri[u];
            const std::uint64_t r = ri[u];
            if constexpr (!late_cols && !col_window)
                if (s == 0) out_cols[q] = j[u];
            if constexpr (NV > 0) {
                if (!loaded) {
                    const Vec<T, V>* ar = reinterpret_cast<const Vec<T, V>*>(x.a + r * k);
#pragma unroll
                    for (unsigned t = 0; t < NV; ++t)
                        if (s + t * L < kv) a_reg[t] = ar[s + t * L];
                    loaded = true;
                }
#pragma unroll
                for (unsigned t = 0; t < NV; ++t) {
                    if (s + t * L < kv) {
#pragma unroll
                        for (unsigned v = 0; v < V; ++v) {
                            const T term = sr.template multiply<T>(a_reg[t].v[v], b[u][t].v[v]);
                            if constexpr (std::is_same_v<Sr, PlusTimes>) {
                                acc[u] += term;  // from +0 (the fold below assumes it too)
                            } else {
                                acc[u] = has[u] ? sr.template add<T>(acc[u], term) : term;
                                has[u] = true;
                            }
                        }
                    }
                }
            } else {
                const Vec<T, V>* ar = reinterpret_cast<const Vec<T, V>*>(x.a + r * k);
                const Vec<T, V>* br = reinterpret_cast<const Vec<T, V>*>(x.bt + std::uint64_t(j[u]) * k);
                for (std::uint64_t c = s; c < kv; c += L) {
                    const Vec<T, V> av = ar[c], bv = br[c];
#pragma unroll
                    for (unsigned v = 0; v < V; ++v) {
                        const T term = sr.template multiply<T>(av.v[v], bv.v[v]);
                        acc[u] = has[u] ? sr.template add<T>(acc[u], term) : term;
                        has[u] = true;
                    }
                }
            }
        }
        // The group's lanes. plus_times: a butterfly of one shuffle and one add a step (a lane without terms
        // holds +0, so a sum of -0 terms comes out +0; + is commutative, so the same bits run after run), for
        // double first halving the values a lane holds while there are several (lane s keeps the half its bit d
        // selects and adds its partner's copy of that half: one shuffle a value kept, not one a value; a
        // double's shuffle is two). Measured: double K = 64 8-15% faster, float within 4% either way, so float
        // keeps the plain butterfly. Other semirings: lower lane first with a "has a term" flag (no identity
        // assumed).
        if constexpr (std::is_same_v<Sr, PlusTimes>) {
            constexpr unsigned both = U < L ? U : L;
            constexpr unsigned halvings = sizeof(T) < 8 ? 0 : both == 4 ? 2 : both == 2 ? 1 : 0;
            const unsigned first = halve<L, U, halvings>(acc, s);  // the entry of acc[0] in this lane
            constexpr unsigned held = U >> halvings, spread = L >> halvings;  // values a lane, lanes a value
#pragma unroll
            for (unsigned d = 1; d < spread; d *= 2)
#pragma unroll
                for (unsigned i = 0; i < held; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], d, L);
            // The spread lanes that hold the same values write them, lane c of them values c, c + spread, ...:
            // one store instruction for a warp's entries where a lane held them all (K = 32 floats: 16 values).
            const unsigned c = s % spread;
#pragma unroll
            for (unsigned r = 0; r < held; r += spread) {
                T v = acc[r];
#pragma unroll
                for (unsigned i = r + 1; i < held && i < r + spread; ++i)
                    if (c == i - r) v = acc[i];
                const unsigned q = p + (first + r + c) * E;
                if (r + c < held && q < count) out[q] = v;
            }
        } else {
            fold_flagged<L, U>(acc, has, s, sr);
#pragma unroll
            for (unsigned u = 0; u < U; ++u)
                if (p + u * E < count && s == 0) out[p + u * E] = acc[u];
        }
        // The step's columns into C, lane s of each group those of entries s, s + L, ... (as the values). (One
        // helper for this selection and the values' compiled to other selects: 1% slower at K = 64-128, H100.)
        if constexpr (late_cols && !col_window) {
#pragma unroll
            for (unsigned r = 0; r < U; r += L) {
                ColIndex v = j[r];
#pragma unroll
                for (unsigned u = r + 1; u < U && u < r + L; ++u)
                    if (s == u - r) v = j[u];
                const unsigned q = p + (r + s) * E;
                if (r + s < U && q < count) out_cols[q] = v;
            }
        }
    }
}

// The rows kernel, for long rows (sddmm.cu's rows_lanes chooses it from the rows' mean length and K): each warp
// takes an equal share of the entries as above, but walks it row segment by row segment (a row's entries inside
// the share), a step taking S = 32 / L x 4 entries of one segment, so that no step looks for rows. A group of L
// lanes (4, or 8 for 128-byte lines of long rows) takes an entry, each lane U = 4 of them (entries g, g + G,
// g + 2G, g + 3G of the step for group g of G): lane s reads vectors s, s + L, ... of A's row (one load serving
// its four entries, from L1 after the first step of a row) and of the four rows of Bt, so K is walked in chunks of
// L vectors and the fold is over L lanes only. plus_times folds by halving (two shuffles, then one; L = 8 one more
// butterfly step), ending with one entry's sum a lane (two lanes for L = 8), written at once by the warp. Other
// semirings fold each entry with the "has a term" flag and lane 0 of the group writes. A step's columns are one
// coalesced load, read a step ahead, handed to the groups by shuffles and written to C by the lanes that read
// them. Why (ncu, bcsstk16, 60 entries a row, against the shares kernel above): at K = 32 floats a quarter of its
// steps crossed a row and searched the window for each entry (828,000 of 5.6 million instructions), and a step's
// row tests and 64-bit addresses made 190 instructions for 16 entries; at K = 128 the 32-lane fold took 40 of a
// step's 168 instructions for 4 entries.
template <class T, class Sr, unsigned L, unsigned V>
__global__ void __launch_bounds__(block_size, 4) sddmm_rows_kernel(Args<T> x, Sr sr) {
    constexpr unsigned G = warp_size / L, U = 4, S = G * U;  // groups, entries a lane, entries a step
    static_assert((L == 4 || L == 8) && S <= warp_size, "a step's columns are one load of the warp");
    const unsigned lane = threadIdx.x % warp_size, g = lane / L, s = lane % L;
    std::uint64_t begin = 0, end = 0;
    if (!start_warp(x, begin, end)) return;
    const unsigned count = unsigned(end - begin);  // positions relative to begin (a share is under 2^31)
    const ColIndex* const cols = x.cols + begin;
    ColIndex* const out_cols = x.out_cols + begin;
    T* const out = x.out + begin;
    const unsigned kv = unsigned(x.k / V);  // vectors a row
    const Vec<T, V>* const bt = reinterpret_cast<const Vec<T, V>*>(x.bt);
    auto end_of = [&](std::uint64_t r) -> unsigned {  // off[r + 1], relative (clamped)
        const std::uint64_t o = x.off[r + 1];
        return o - begin > 0xffffffffull ? 0xffffffffu : unsigned(o - begin);
    };
    // The share's first row: from the row array when the pattern has one (one load, where the warp's 32-way search
    // of the offsets was a chain of dependent rounds before any step), else by that search.
    std::uint64_t row =
        x.rows ? x.rows[begin] : warp_ops::group_row_of<warp_size>(x.off, 0, x.nrows, begin, lane, 0xffffffffu);
    unsigned row_end = end_of(row), pos = 0;
    // A step's columns are read a step ahead: the entries are contiguous, so the next step's start where this one
    // ends (S on, or at the segment's end), whatever its row.
    auto read_cols = [&](unsigned at) -> ColIndex {
        return (S == warp_size || lane < S) && at + lane < count ? cols[at + lane] : ColIndex(0);
    };
    ColIndex col_next = read_cols(0);
    for (;;) {
        const unsigned seg_end = row_end < count ? row_end : count;
        const unsigned next_end = row_end < count ? end_of(row + 1) : 0;  // (read ahead: the next row's end)
        const Vec<T, V>* const ar = reinterpret_cast<const Vec<T, V>*>(x.a) + row * kv;
        for (; pos < seg_end; pos += S) {
            const unsigned q = pos + lane;
            const bool mine = (S == warp_size || lane < S) && q < seg_end;
            const ColIndex col = mine ? col_next : ColIndex(0);
            col_next = read_cols(pos + S < seg_end ? pos + S : seg_end);
            if (mine) out_cols[q] = col;
            // (Entries past the segment read row 0 of Bt, column 0 above: no test in the loop below.) The lane's
            // vectors are walked by pointers advanced L vectors a chunk: indexed by a 32-bit c, each load had
            // cost four instructions of 64-bit address (c may wrap, so the compiler cannot step a pointer).
            const Vec<T, V>* pa = ar + s;
            const Vec<T, V>* pb[U];
#pragma unroll
            for (unsigned u = 0; u < U; ++u)
                pb[u] = bt + warp_ops::mul_wide(__shfl_sync(0xffffffffu, col, g + u * G), kv) + s;
            T acc[U];
            bool has[U];
#pragma unroll
            for (unsigned u = 0; u < U; ++u) {
                acc[u] = T{};
                has[u] = false;
            }
#pragma unroll 2
            for (unsigned c = s; c < kv; c += L) {
                const Vec<T, V> av = *pa;
                pa += L;
                Vec<T, V> b[U];
#pragma unroll
                for (unsigned u = 0; u < U; ++u) {
                    b[u] = *pb[u];
                    pb[u] += L;
                }
#pragma unroll
                for (unsigned u = 0; u < U; ++u) {
#pragma unroll
                    for (unsigned v = 0; v < V; ++v) {
                        const T term = sr.template multiply<T>(av.v[v], b[u].v[v]);
                        if constexpr (std::is_same_v<Sr, PlusTimes>) {
                            acc[u] += term;  // (from +0)
                        } else {
                            acc[u] = has[u] ? sr.template add<T>(acc[u], term) : term;
                            has[u] = true;
                        }
                    }
                }
            }
            if constexpr (std::is_same_v<Sr, PlusTimes>) {
                // Halved twice, each sum is over 4 lanes and held by L / 4 of them: one more butterfly step for
                // L = 8 (lanes s and s ^ 1 then hold entry s / 2 of the group), and the first of them writes.
                const unsigned e = pos + g + halve<L, U, 2>(acc, s) * G;
                constexpr unsigned spread = L / 4;
#pragma unroll
                for (unsigned d = 1; d < spread; d *= 2) acc[0] += __shfl_xor_sync(0xffffffffu, acc[0], d, L);
                if (s % spread == 0 && e < seg_end) out[e] = acc[0];
            } else {
                fold_flagged<L, U>(acc, has, s, sr);
#pragma unroll
                for (unsigned u = 0; u < U; ++u)
                    if (s == 0 && pos + g + u * G < seg_end) out[pos + g + u * G] = acc[u];
            }
        }
        pos = seg_end;
        if (pos >= count) return;
        // The next row with entries: usually the next row (its end read ahead); past empty ones, from the row
        // array, or without one a few by steps and farther by a search of the warp.
        if (next_end > pos) {
            ++row;
            row_end = next_end;
        } else {
            row = x.rows ? x.rows[begin + pos]
                         : warp_ops::next_row_of<warp_size>(x.off, x.nrows, row + 1, begin + pos, lane, 0xffffffffu);
            row_end = end_of(row);
        }
    }
}

}  // namespace hybla::cuda::sddmm_detail
