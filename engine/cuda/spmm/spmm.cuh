// HP-SpMM (papers/hp-spmm-sddmm.txt, Section III-A1, Algorithm 3) made semiring-generic and deterministic:
// C = A ⊕.⊗ B, or C = accum(C, A ⊕.⊗ B) in place, A sparse (CSR), B (k x w) and C (m x w) dense row-major.
// README.md beside this file has the design and the measurements.
//
// Header-visible: any semiring type with device `zero`, `add` and `multiply` (RuntimeSemiring and PlusTimes of
// engine/cuda/opcodes.hpp are two) instantiates it.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "engine/config.hpp"
#include "engine/cuda/launch.cuh"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/warp.cuh"

namespace hybla::cuda::spmm_detail {

using warp_ops::Vec;

inline constexpr unsigned warp_size = 32;
inline constexpr unsigned block_size = 256;

// Where the results go: C = R, or C = accum(C, R) in place. Rows of A without entries give the monoid's
// identity; with skip_empty (the accumulator is the add monoid's own operator, for which the identity changes
// nothing) they are not written at all.
template <class T>
struct Out {
    T* c = nullptr;
    bool accumulate = false;
    bool skip_empty = false;
    BinaryOp accum = BinaryOp::first;
    __device__ __forceinline__ void put(std::uint64_t at, T v) const {
        c[at] = accumulate ? apply_binary<T>(accum, c[at], v) : v;
    }
    // V values at once: one 16-byte store when V > 1 and not accumulating (`at` a multiple of V).
    template <unsigned V>
    __device__ __forceinline__ void put(std::uint64_t at, const Vec<T, V>& v) const {
        if (!accumulate) {
            // C is written once: evict-first, so that it does not push B's rows out of L2 (H200, against a plain
            // store: double w = 128 1-5% faster on every graph; elsewhere 4% slower to 9% faster by graph, the
            // geometric mean of each type and width within 0.3% or faster).
            if constexpr (sizeof(Vec<T, V>) == 16) warp_ops::store_stream(reinterpret_cast<Vec<T, V>*>(c + at), v);
            else *reinterpret_cast<Vec<T, V>*>(c + at) = v;
            return;
        }
#pragma unroll
        for (unsigned i = 0; i < V; ++i) c[at + i] = apply_binary<T>(accum, c[at + i], v.v[i]);
    }
};

template <class T>
struct Args {
    std::uint64_t nrows = 0, nnz = 0, w = 0;  // A is nrows x k with nnz entries; B and C have w columns
    std::uint64_t workers = 0;                // groups of L lanes, each walking its share of A's entries
    const Offset* off = nullptr;
    const ColIndex* cols = nullptr;
    const T* vals = nullptr;
    const T* b = nullptr;
    Out<T> out;
    // Two rows of w values per worker: [2 worker] its first row when that row began in an earlier share (the
    // head), [2 worker + 1] its last row when that row goes on into the next share (the tail).
    T* partial = nullptr;
    // The plan: worker t's entries are begin[t] .. begin[t + 1] - 1 (begin[workers] = nnz; a worker may have
    // none, in a run of empty rows), the first of them in row first_row[t].
    const std::uint64_t* begin = nullptr;
    const std::uint64_t* first_row = nullptr;
    // For each boundary b (between shares b - 1 and b): the parts of the row split there when b is its first
    // boundary, else 0 (the plan; combine_kernel's only read before the parts).
    const std::uint32_t* parts = nullptr;
};

// Rows of A without entries: the monoid's identity (accumulated into C), unless skip_empty; no worker writes
// these rows. A warp looks at 32 rows at once, a row a lane (grid-stride), and writes each empty one of them with
// its lanes over the columns: a thread's rows are few (rows / threads), where a row a group of L lanes had cost
// each group rows / groups dependent reads of the offsets before its share (a hundred on a million rows).
template <class T, class Sr>
__device__ __forceinline__ void empty_rows(const Args<T>& x, const Sr& sr) {
    if (x.out.skip_empty) return;
    const unsigned lane = threadIdx.x % warp_size;
    const std::uint64_t step = std::uint64_t(gridDim.x) * blockDim.x;
    for (std::uint64_t base = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x - lane; base < x.nrows;
         base += step) {
        const std::uint64_t i = base + lane;
        unsigned empty = __ballot_sync(0xffffffffu, i < x.nrows && x.off[i] == x.off[i + 1]);
        for (; empty; empty &= empty - 1) {
            const std::uint64_t r = base + unsigned(__ffs(int(empty)) - 1);
            for (std::uint64_t c = lane; c < x.w; c += warp_size) x.out.put(r * x.w + c, sr.template zero<T>());
        }
    }
}

// Pieces of a worker's walk over its run of A's entries (begin .. begin + n - 1), shared by spmm_kernel and
// row_block_kernel. The columns and values of the batch of U entries at relative entry i: lane s of the worker's
// L reads entries i + s, i + s + L, ... (E a lane), passed round by shuffle later.
template <class T, unsigned L, unsigned U, unsigned E>
__device__ __forceinline__ void read_batch(const Args<T>& x, std::uint64_t begin, unsigned n, unsigned s, unsigned i,
                                           ColIndex (&k)[E], T (&a)[E]) {
#pragma unroll
    for (unsigned e = 0; e < E; ++e) {
        const unsigned j = i + e * L + s;
        const bool in = j < n && e * L + s < U;
        k[e] = in ? warp_ops::load_ro(x.cols + begin + j) : 0;
        a[e] = in ? warp_ops::load_ro(x.vals + begin + j) : T{};
    }
}
// The batch at i taken (kq, aq) and the next one's read begun (kn, an), so that its loads are in flight while
// this batch's rows of B load.
template <class T, unsigned L, unsigned U, unsigned E>
__device__ __forceinline__ void take_batch(const Args<T>& x, std::uint64_t begin, unsigned n, unsigned s, unsigned i,
                                           ColIndex (&kn)[E], T (&an)[E], ColIndex (&kq)[E], T (&aq)[E]) {
#pragma unroll
    for (unsigned e = 0; e < E; ++e) {
        kq[e] = kn[e];
        aq[e] = an[e];
    }
    if (i + U < n) read_batch<T, L, U>(x, begin, n, s, i + U, kn, an);
}
// The rows of B of the batch's entries (those before n), all loads issued before any fold: entry u's column from
// lane u % L, and (PassA) its value; the lane's vectors t of the panel that lie inside the width (col_in).
template <class T, unsigned L, unsigned V, unsigned NV, unsigned U, unsigned E, bool PassA>
__device__ __forceinline__ void gather_batch(const char* b_bytes, unsigned row_bytes, std::uint64_t lane_bytes,
                                             unsigned mask, unsigned i, unsigned n, const bool (&col_in)[NV],
                                             const ColIndex (&kq)[E], const T (&aq)[E], Vec<T, V> (&bv)[U][NV],
                                             T (&av)[U]) {
#pragma unroll
    for (unsigned u = 0; u < U; ++u) {
        const ColIndex k = warp_ops::shfl_idx(kq[u / L], int(u % L), mask, int(L));
        if constexpr (PassA) av[u] = warp_ops::shfl_idx(aq[u / L], int(u % L), mask, int(L));
        if (i + u < n) {
            const auto* br = reinterpret_cast<const Vec<T, V>*>(b_bytes + warp_ops::mad_wide(k, row_bytes, lane_bytes));
#pragma unroll
            for (unsigned t = 0; t < NV; ++t)
                if (col_in[t]) bv[u][t] = br[t * L];
        }
    }
}
// The lane's vectors t (columns x0 + (s + t L) V) that lie inside the width, and a row's sums set to the identity.
template <unsigned L, unsigned V, unsigned NV>
__device__ __forceinline__ void lane_columns(bool (&col_in)[NV], unsigned x0, unsigned s, unsigned w) {
#pragma unroll
    for (unsigned t = 0; t < NV; ++t) col_in[t] = x0 + (s + t * L) * V < w;
}
template <class T, class Sr, unsigned V, unsigned NV>
__device__ __forceinline__ void set_identity(Vec<T, V> (&acc)[NV], const Sr& sr) {
#pragma unroll
    for (unsigned t = 0; t < NV; ++t)
#pragma unroll
        for (unsigned v = 0; v < V; ++v) acc[t].v[v] = sr.template zero<T>();
}

// Shares of A's entries of equal cost (entries and rows weighed, the plan), across row boundaries, one per group
// of L lanes (a worker; 32 / L workers a warp).
// Lane s of a worker holds, for a panel of L x NV x V columns, the vectors s, s + L, ..., s + (NV - 1) L of V
// values and folds into them one entry after another (the row's entries in order, so each lane's sums are in x
// order). Few lanes with several vectors each (NV = 4 beyond two vectors) rather than a warp with one: the
// per-entry work (the column's shuffle, the address, the row test) is paid once for NV loads, and the kernel
// is bound by instructions issued before it is bound by memory. The worker takes its entries U at a time:
// their columns and values read coalesced (E a lane, the next batch's read while this one's B rows load), passed
// round by shuffle, the B loads of all U issued before the first fold. When the row changes (the paper's
// RowSwitchFlag) the finished row goes to C; a row that began in an earlier share, or goes on into the next, goes
// to the worker's partial rows instead, and combine_kernel folds those in order. Panels past L x NV x V columns
// walk the share again. LateA: each entry's value is passed round at its fold rather than with the batch's loads
// (fewer registers live across the loads).
template <class T, class Sr, unsigned L, unsigned V, unsigned NV, unsigned U, unsigned MB, bool LateA = false>
__global__ void __launch_bounds__(block_size, MB) spmm_kernel(Args<T> x, Sr sr) {
    constexpr unsigned E = (U + L - 1) / L;  // entries a lane reads a batch
    constexpr unsigned panel = L * NV * V;
    // Row ends held in the lanes (below) for workers of 16 or 32 lanes of one vector, for the warp of 4 and for
    // the warp of 2 doubles (2 blocks): H200, against a read of the offsets at each row switch, 3-15% faster on
    // the social graphs; not on 8 lanes (soc-Slashdot0902 float w = 32 11% slower), 2 float vectors a lane
    // (spills) or 4 on 16 lanes (4-11% slower).
    constexpr bool windowed =
        (L >= 16 && NV == 1) || (L == 32 && NV == 4) || (L == 32 && NV == 2 && sizeof(T) == 8);
    // plus_times needs no flag for "no term yet": its identity starts each row.
    constexpr bool has_identity = std::is_same_v<Sr, PlusTimes>;
    const unsigned lane = threadIdx.x % warp_size, s = lane % L;
    const unsigned mask = L == warp_size ? 0xffffffffu : ((1u << L) - 1u) << (lane - s);
    allow_next_kernel();  // combine_kernel's blocks may be placed now (they wait for this kernel's results)
    empty_rows<T, Sr>(x, sr);
    const std::uint64_t worker = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / L;
    if (worker >= x.workers) return;  // the whole group: `worker` is the same on its lanes
    const std::uint64_t begin = x.begin[worker], end = x.begin[worker + 1];
    if (begin == end) return;
    // w below 2^31 and w x sizeof T below 2^32 (the driver checks): x0 + panel does not wrap.
    const unsigned w = unsigned(x.w), row_bytes = w * unsigned(sizeof(T));
    const unsigned n = unsigned(end - begin);
    const std::uint64_t row0 = x.first_row[worker];
    T* head = x.partial + 2 * worker * w;
    T* tail = head + w;
    for (unsigned x0 = 0; x0 < w; x0 += panel) {
        bool col_in[NV];
        lane_columns<L, V>(col_in, x0, s, w);
        // The lane's first vector of B's row k in this panel: k x w x sizeof T + lane_bytes bytes from B (a row's
        // bytes are below 2^32: the driver checks), one wide multiply-add and an add of B, a parameter, an entry.
        // (A 64-bit pointer of the lane's own did not stay in a register: it was made again at every entry from
        // the thread index, 9 instructions, in the double w = 64 kernel capped at 64 registers.)
        const std::uint64_t lane_bytes = std::uint64_t(x0 + s * V) * sizeof(T);
        const char* const b_bytes = reinterpret_cast<const char*>(x.b);
        Vec<T, V> acc[NV];
        set_identity(acc, sr);
        std::uint64_t row = row0;
        // The row ends of a window of rows, base .. base + L - 1, lane s holding row base + s's relative to begin,
        // n + 1 for a row that goes on into the next share (or lies past the last): a row switch finds the next
        // row among them by one vote, with no dependent read of the offsets but once every L rows.
        std::uint64_t base = row0;
        unsigned lane_end = 0;
        auto load_window = [&](std::uint64_t b) {
            base = b;
            const std::uint64_t r = b + s;
            // (Rows from row0 on end past begin: row0 holds entry begin.)
            const std::uint64_t e = r < x.nrows ? x.off[r + 1] - begin : std::uint64_t(n) + 1;
            lane_end = unsigned(e < n ? e : n + 1 - (e == n));
        };
        // The first lane of the window whose row ends past relative entry q (none: L or more).
        auto window_hit = [&](unsigned q) {
            const unsigned shift = __ffs(mask) - 1;
            return unsigned(__ffs(int((__ballot_sync(mask, lane_end > q) & mask) >> shift))) - 1;
        };
        std::uint64_t end_abs = 0;
        unsigned next = 0;  // entries of the share before the next row (relative to begin; n when the row goes on)
        bool goes_on = false;  // the row goes on into the next share
        if constexpr (windowed) {
            load_window(row0);
            const unsigned e = warp_ops::shfl_idx(lane_end, 0, mask, int(L));
            next = e < n ? e : n;
            goes_on = e > n;
        } else {
            end_abs = x.off[row0 + 1];
            next = unsigned(end_abs - begin < n ? end_abs - begin : n);
        }
        bool in_head = x.off[row0] < begin;  // the row began in an earlier share
        bool has = false;
        // The row's values of this panel: to C, or to a partial row, a vector a store (w is a multiple of V, so
        // a vector that starts inside the width ends inside it, and starts aligned).
        auto flush = [&](T* dst) {
#pragma unroll
            for (unsigned t = 0; t < NV; ++t) {
                if (!col_in[t]) continue;
                const unsigned c = x0 + (s + t * L) * V;
                if (dst) *reinterpret_cast<Vec<T, V>*>(dst + c) = acc[t];
                else x.out.put(row * w + c, acc[t]);
            }
        };
        ColIndex kn[E];
        T an[E];
        read_batch<T, L, U>(x, begin, n, s, 0, kn, an);
        for (unsigned i = 0; i < n; i += U) {
            ColIndex kq[E];
            T aq[E];
            take_batch<T, L, U>(x, begin, n, s, i, kn, an, kq, aq);
            // The B loads of the batch first.
            Vec<T, V> bv[U][NV];
            T av[U];
            gather_batch<T, L, V, NV, U, E, !LateA>(b_bytes, row_bytes, lane_bytes, mask, i, n, col_in, kq, aq, bv, av);
            // Then their folds, in order, a run of the same row at a time: one copy of the row switch's code
            // and one of the folds (each a fixed register, those outside the run skipped).
            const unsigned nu = n - i < U ? n - i : U;
            for (unsigned u = 0; u < nu;) {
                if (i + u >= next) {  // row switch: the finished row out, the next row found
                    flush(in_head ? head : nullptr);
                    in_head = false;
                    has = false;
                    set_identity(acc, sr);
                    if constexpr (windowed) {
                        const unsigned q = i + u;
                        unsigned f = window_hit(q);
                        if (f >= L) {  // past the window: the next one, else a search from there
                            load_window(base + L);
                            f = window_hit(q);
                            if (f >= L) {
                                // (Row base + L - 1 ends at or before entry begin + q: off[base + L] <= it.)
                                load_window(warp_ops::group_row_of<L>(x.off, base + L, x.nrows, begin + q, s, mask));
                                f = window_hit(q);
                            }
                        }
                        row = base + f;
                        const unsigned e = warp_ops::shfl_idx(lane_end, int(f), mask, int(L));
                        next = e < n ? e : n;
                        goes_on = e > n;
                    } else {
                        row = warp_ops::next_row_of<L>(x.off, x.nrows, row, begin + i + u, s, mask);
                        end_abs = x.off[row + 1];
                        next = unsigned(end_abs - begin < n ? end_abs - begin : n);
                    }
                }
                const unsigned stop = next - i < nu ? next - i : nu;
#pragma unroll
                for (unsigned e = 0; e < U; ++e) {
                    if (e < u || e >= stop) continue;
                    if constexpr (LateA) av[e] = warp_ops::shfl_idx(aq[e / L], int(e % L), mask, int(L));
#pragma unroll
                    for (unsigned t = 0; t < NV; ++t)
#pragma unroll
                        for (unsigned v = 0; v < V; ++v) {
                            if (!col_in[t]) continue;  // a vector past the width: not loaded
                            const T term = sr.template multiply<T>(av[e], bv[e][t].v[v]);
                            if constexpr (has_identity) acc[t].v[v] = sr.template add<T>(acc[t].v[v], term);
                            else acc[t].v[v] = has ? sr.template add<T>(acc[t].v[v], term) : term;
                        }
                    has = true;
                }
                u = stop;
            }
        }
        // The last row: whole (to C), or a part of a row that also lies in other shares.
        if constexpr (!windowed) goes_on = end_abs > end;
        flush(in_head ? head : goes_on ? tail : nullptr);
    }
}

// Small matrices of long rows (no more rows than one wave of blocks holds, the longest within a few batches a
// worker; the driver decides): a block a row, its block_size / L workers (groups of L lanes holding the row's
// vectors as spmm_kernel's do) each folding an equal run of the row's entries, read U at a time (the next batch's
// columns and values read while this one's B rows load), then the runs folded in order in shared memory and the
// row written. One kernel: no partial rows in global memory and no combine kernel, whose latency (a second
// kernel of 8-17 us on 496 rows of 100 entries, H200) set the time of such matrices. The order of the terms
// depends on the row's length and the shape alone: the same bits run after run.
template <class T, class Sr, unsigned L, unsigned V, unsigned NV, unsigned U>
__global__ void __launch_bounds__(block_size, 4) row_block_kernel(Args<T> x, Sr sr) {
    constexpr unsigned G = block_size / L;  // workers a block
    constexpr unsigned E = (U + L - 1) / L;  // entries a lane reads a batch
    constexpr unsigned panel = L * NV * V;
    constexpr bool has_identity = std::is_same_v<Sr, PlusTimes>;
    __shared__ alignas(16) unsigned char raw[G * panel * sizeof(T)];
    auto* const part = reinterpret_cast<Vec<T, V>*>(raw);  // worker g's vector c of the panel: g x (panel / V) + c
    const unsigned lane = threadIdx.x % warp_size, s = lane % L, g = threadIdx.x / L;
    const unsigned mask = L == warp_size ? 0xffffffffu : ((1u << L) - 1u) << (lane - s);
    const unsigned w = unsigned(x.w), row_bytes = w * unsigned(sizeof(T));
    const char* const b_bytes = reinterpret_cast<const char*>(x.b);
    for (std::uint64_t r = blockIdx.x; r < x.nrows; r += gridDim.x) {
        const std::uint64_t lo = x.off[r], len = x.off[r + 1] - lo;
        if (len == 0) {  // (the same on every thread of the block)
            if (!x.out.skip_empty)
                for (unsigned c = threadIdx.x; c < w; c += block_size) x.out.put(r * w + c, sr.template zero<T>());
            continue;
        }
        const std::uint64_t chunk = (len + G - 1) / G;
        const unsigned runs = unsigned((len + chunk - 1) / chunk);  // workers with entries: 0 .. runs - 1
        const std::uint64_t begin = lo + std::min<std::uint64_t>(g * chunk, len);
        const unsigned n = unsigned(std::min<std::uint64_t>(lo + len, begin + chunk) - begin);
        for (unsigned x0 = 0; x0 < w; x0 += panel) {
            bool col_in[NV];
            lane_columns<L, V>(col_in, x0, s, w);
            const std::uint64_t lane_bytes = std::uint64_t(x0 + s * V) * sizeof(T);
            Vec<T, V> acc[NV];
            set_identity(acc, sr);
            ColIndex kn[E];
            T an[E];
            if (n > 0) read_batch<T, L, U>(x, begin, n, s, 0, kn, an);
            for (unsigned i = 0; i < n; i += U) {
                ColIndex kq[E];
                T aq[E];
                take_batch<T, L, U>(x, begin, n, s, i, kn, an, kq, aq);
                Vec<T, V> bv[U][NV];
                T av[U];
                gather_batch<T, L, V, NV, U, E, true>(b_bytes, row_bytes, lane_bytes, mask, i, n, col_in, kq, aq, bv,
                                                      av);
#pragma unroll
                for (unsigned u = 0; u < U; ++u) {
                    if (i + u >= n) continue;
#pragma unroll
                    for (unsigned t = 0; t < NV; ++t)
#pragma unroll
                        for (unsigned v = 0; v < V; ++v) {
                            if (!col_in[t]) continue;
                            const T term = sr.template multiply<T>(av[u], bv[u][t].v[v]);
                            if constexpr (has_identity) acc[t].v[v] = sr.template add<T>(acc[t].v[v], term);
                            else acc[t].v[v] = i + u == 0 ? term : sr.template add<T>(acc[t].v[v], term);
                        }
                }
            }
            if (g < runs)
#pragma unroll
                for (unsigned t = 0; t < NV; ++t) part[g * (panel / V) + s + t * L] = acc[t];
            __syncthreads();
            // The runs folded in order, a thread a vector of the panel.
            for (unsigned c = threadIdx.x; c < panel / V && x0 + c * V < w; c += block_size) {
                Vec<T, V> sum = part[c];
                for (unsigned q = 1; q < runs; ++q) {
                    const Vec<T, V> p = part[q * (panel / V) + c];
#pragma unroll
                    for (unsigned v = 0; v < V; ++v) sum.v[v] = sr.template add<T>(sum.v[v], p.v[v]);
                }
                x.out.put(r * w + x0 + c * V, sum);
            }
            __syncthreads();  // the parts are read before the next panel or row writes them
        }
    }
}

// The rows split over shares. Boundary b (between shares b - 1 and b) owns the row of share b's first entry when
// that row began in share b - 1. The row's parts are the tail of share b - 1 (part 0) and the heads of shares b,
// b + 1, ... up to the share of its last entry (part j: the head of share b - 1 + j). A row of at most short_parts
// parts takes a group of G lanes (the fewest, a power of two up to the block, that hold its vectors of V values
// one a lane; block_size / G boundaries a block): each lane loads its vector of 4 parts at once, folds them in
// order, and so on to the last part, then stores the vector. A longer row (a hub over hundreds of shares) takes
// the whole block: its threads over (column, run of parts), each run folded in order, then the runs in order. The
// order depends on the part count and the width alone: the same bits run after run.
inline constexpr std::uint64_t short_parts = 32;

template <class T, class Sr, unsigned V>
__global__ void __launch_bounds__(block_size, 4) combine_kernel(Args<T> x, Sr sr, unsigned group_lanes) {
    constexpr unsigned in_flight = 4;  // parts a lane loads at once
    const unsigned G = group_lanes, per_block = block_size / G;
    __shared__ std::uint64_t owned[block_size];  // the boundaries of the block's long rows
    __shared__ unsigned n_long;
    __shared__ T run_sum[block_size];
    __shared__ bool run_has[block_size];
    const unsigned t = threadIdx.x, s = t % G, group = t / G;
    const std::uint64_t first_base = std::uint64_t(blockIdx.x) * per_block + 1;
    // The plan's entries of the first round, read before the wait: this kernel is a programmatic dependent of
    // spmm_kernel, which began after the plan kernel had finished (one dependent read fewer after the wait).
    std::uint64_t parts0 = 0, r0 = 0;
    if (first_base + group < x.workers) {
        parts0 = x.parts[first_base + group];
        r0 = x.first_row[first_base + group];
    }
    wait_for_previous_kernel();
    allow_next_kernel();
    const std::uint64_t w = x.w, wv = w / V;
    auto part = [&](std::uint64_t b, std::uint64_t j, std::uint64_t c) {  // column c of part j at boundary b
        return x.partial[(j == 0 ? 2 * (b - 1) + 1 : 2 * (b - 1 + j)) * w + c];
    };
    for (std::uint64_t base = first_base; base < x.workers; base += std::uint64_t(gridDim.x) * per_block) {
        if (t == 0) n_long = 0;
        __syncthreads();
        // A group a boundary: a short row folded at once, a long one left to the block.
        if (const std::uint64_t b = base + group; b < x.workers) {
            const bool first = base == first_base;
            const std::uint64_t parts = first ? parts0 : x.parts[b], r = first ? r0 : x.first_row[b];
            if (parts > short_parts) {
                if (s == 0) owned[atomicAdd(&n_long, 1u)] = b;
            } else if (parts > 0) {
                // Part j's row: 2 (b - 1) + 1 (j = 0), else 2 (b - 1 + j); its lane's vectors from x.partial on.
                const auto* rows = reinterpret_cast<const Vec<T, V>*>(x.partial) + (2 * b - 1) * wv;
                for (std::uint64_t c = s; c < wv; c += G) {
                    Vec<T, V> acc;
                    for (unsigned j0 = 0; j0 < unsigned(parts); j0 += in_flight) {
                        Vec<T, V> p[in_flight];
#pragma unroll
                        for (unsigned q = 0; q < in_flight; ++q) {
                            const unsigned j = j0 + q;
                            if (j < unsigned(parts)) p[q] = rows[(j == 0 ? 0 : 2 * j - 1) * wv + c];
                        }
#pragma unroll
                        for (unsigned q = 0; q < in_flight; ++q) {
                            if (j0 + q >= unsigned(parts)) continue;
                            if (j0 + q == 0) acc = p[0];
                            else
#pragma unroll
                                for (unsigned v = 0; v < V; ++v) acc.v[v] = sr.template add<T>(acc.v[v], p[q].v[v]);
                        }
                    }
                    x.out.put(r * w + c * V, acc);
                }
            }
        }
        __syncthreads();
        // Columns at once: the smallest power of two holding the width, up to the block; runs of parts: the rest.
        unsigned cols = 1;
        while (cols < w && cols < block_size) cols *= 2;
        const unsigned runs = block_size / cols, run = t / cols;
        for (unsigned i = 0; i < n_long; ++i) {
            const std::uint64_t b = owned[i], r = x.first_row[b], parts = x.parts[b];
            const std::uint64_t j0 = parts * run / runs, j1 = parts * (run + 1) / runs;
            for (std::uint64_t c0 = 0; c0 < w; c0 += cols) {
                const std::uint64_t c = c0 + t % cols;
                // A run's parts 16 loads a round: a hub over hundreds of shares makes each run a chain of
                // dependent rounds, a quarter as long as with 4.
                const bool has = c < w && j0 < j1;
                T acc = has ? part(b, j0, c) : T{};
                if (has) {
#pragma unroll 16
                    for (std::uint64_t j = j0 + 1; j < j1; ++j) acc = sr.template add<T>(acc, part(b, j, c));
                }
                run_sum[t] = acc;
                run_has[t] = has;
                __syncthreads();
                if (run == 0 && c < w) {
                    T sum = run_sum[t];  // runs may be empty (fewer parts than runs)
                    bool any = run_has[t];
                    for (unsigned q = 1; q < runs; ++q)
                        if (run_has[q * cols + t]) {
                            sum = any ? sr.template add<T>(sum, run_sum[q * cols + t]) : run_sum[q * cols + t];
                            any = true;
                        }
                    x.out.put(r * w + c, sum);
                }
                __syncthreads();
            }
        }
        __syncthreads();  // owned and the count are read before the next round resets them
    }
}

}  // namespace hybla::cuda::spmm_detail
