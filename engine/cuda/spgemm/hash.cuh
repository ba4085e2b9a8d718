// The hash SpGEMM's kernels (papers/aia-hash-spgemm.txt, Sections III and IV), as templates on the value type
// and the semiring so that a semiring known only to its user can instantiate them: a semiring is any type with
// `template <class T> T add(T, T)` and `template <class T> T multiply(T, T)` callable on the device
// (RuntimeSemiring and PlusTimes of engine/cuda/opcodes.hpp are two). README.md beside this file has the design.
//
// One kernel template serves both phases and every group of rows:
//   Values = false: the symbolic (allocation) phase: each row's distinct columns are counted in a hash table;
//   Values = true:  the numeric (accumulation) phase: values are combined in the table, the row sorted by column
//                   and written where the symbolic counts put it.
//   G threads per row (G <= 32: partial warp per row, BLOCK / G rows per block; G == BLOCK: a block per row),
//   S table slots per row in shared memory, or S == 0: tables in global memory, a slice per block.
// Products are read either as the paper's kernels read them (each thread or warp walks whole B rows), or as a
// ranged-indirect gather done in software: the ranges of a tile of G entries of A(i,:) are fetched with
// coalesced loads and scanned, and the concatenated B segments are walked as one flat stream, G products per step.
//
// Order of ⊕: in a step each thread holds at most one product. Threads holding the same column are found with a
// warp match, and the lowest of them (the earliest product) folds their products in thread order. Where a warp
// or part of one takes a row, it folds them onto the table's value: the row's products are folded left to right
// in the order of the steps, which for the ranged gather is A(i,:)'s order then B(k,:)'s, the CPU's order (sums
// bit for bit the CPU's). Where a block takes a row, the warps fold side by side and add their folds to the
// table one after another in warp order (fold_peers). The paper's reading order is deterministic too (fixed by
// the data), but a different order. Rows in global tables fold each step in a shared step table first and add
// that to the row's table: deterministic, grouped by step.
#pragma once
#include <cuda_runtime.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/config.hpp"

#if defined(__CUDACC__)
#include <cub/block/block_radix_sort.cuh>
#endif

namespace hybla::cuda::hash {

inline constexpr std::uint32_t empty_key = 0xFFFFFFFFu;  // no column: matrices have fewer than 2^32 - 1 columns
inline constexpr unsigned full_mask = 0xFFFFFFFFu;

// The groups of rows. A row goes to the first group whose limit holds its size (an upper bound of its distinct
// columns in the symbolic phase, its exact count in the numeric one); tables hold twice the limit.
struct GroupShape {
    std::uint64_t limit;
    unsigned g, block, slots;
};
inline constexpr unsigned shared_groups = 5;
inline constexpr GroupShape group_shapes[shared_groups] = {
    {16, 8, 256, 32},            // partial warp per row, 32 rows a block
    {128, 32, 256, 256},         // a warp per row
    {512, 128, 128, 1024},       // a block per row from here
    {2048, 256, 256, 4096},
    {4096, 256, 256, 8192},
};
// group_shapes[k].limit, for device code.
HYBLA_HD constexpr std::uint64_t group_limit(unsigned k) {
    switch (k) {
        case 0: return group_shapes[0].limit;
        case 1: return group_shapes[1].limit;
        case 2: return group_shapes[2].limit;
        case 3: return group_shapes[3].limit;
        default: return group_shapes[4].limit;
    }
}
// group_shapes[k].g, for device code.
HYBLA_HD constexpr unsigned group_threads(unsigned k) {
    switch (k) {
        case 0: return group_shapes[0].g;
        case 1: return group_shapes[1].g;
        case 2: return group_shapes[2].g;
        case 3: return group_shapes[3].g;
        default: return group_shapes[4].g;
    }
}
// A row goes to a group whose threads take its products in at most this many steps, where one holds it; a
// tile of entries of A counts as this many steps.
inline constexpr std::uint64_t max_steps = 16;
inline constexpr std::uint64_t step_entries = 4;
inline constexpr unsigned global_group = shared_groups;  // tables in global memory
inline constexpr unsigned global_block = 512;
// Rows with one entry of A and no mask: a scaled copy of one row of B, no table.
inline constexpr unsigned single_group = shared_groups + 1;
// Hub rows (more products than a part of a shared table holds, no mask): a block per (row, tile of columns),
// a dense accumulator over the tile in shared memory.
inline constexpr unsigned tiled_group = shared_groups + 2;
inline constexpr unsigned group_count = shared_groups + 3;
inline constexpr std::uint8_t no_group = group_count;  // rows without products
inline constexpr unsigned tile_block = 256;
inline constexpr unsigned max_tile = 4096;  // columns of a tile, at most (HYBLA_SPGEMM_TILE: fewer, in tests)

// Shared memory of a block, in bytes from its start. sort_bytes: the block sort's scratch (block groups,
// numeric phase), which takes the table's keys once the row's entries are compacted.
struct Layout {
    std::size_t keys = 0, hits = 0, vals = 0, flags = 0, ends = 0, bstart = 0, avals = 0, stage = 0, compact = 0,
                compact_slots = 0, scan = 0, bytes = 0;
};
HYBLA_HD constexpr std::size_t align16(std::size_t x) { return (x + 15) & ~std::size_t(15); }
HYBLA_HD constexpr Layout layout(bool values, std::size_t vsize, unsigned g, unsigned block, unsigned slots,
                                 std::size_t sort_bytes = 0) {
    Layout l{};
    // Global tables (slots == 0): the numeric phase folds each step in a shared table of 2 x block slots first.
    const std::size_t rows = block / g, s = slots ? slots : (values ? 2 * std::size_t(block) : 0);
    std::size_t at = 0;
    l.keys = at;
    at = align16(at + (rows * s * 4 > sort_bytes ? rows * s * 4 : sort_bytes));
    if (values) {
        l.vals = at;
        at = align16(at + rows * s * vsize);
        l.flags = at;
        at = align16(at + rows * s);
    } else {
        l.hits = at;
        at = align16(at + rows * ((s + 31) / 32) * 4);
    }
    l.ends = at;
    at = align16(at + std::size_t(block) * 8);
    l.bstart = at;
    at = align16(at + std::size_t(block) * 8);
    if (values) {
        l.avals = at;
        at = align16(at + std::size_t(block) * vsize);
        l.stage = at;
        at = align16(at + std::size_t(block) * vsize);
        if (slots) {  // a row's entries compacted before they are placed in column order: at most slots / 2
            l.compact = at;
            at = align16(at + rows * (slots / 2) * 4);
            l.compact_slots = at;
            at = align16(at + rows * (slots / 2) * 2);
        }
    }
    l.scan = at;
    at = align16(at + 33 * 8);
    l.bytes = at;
    return l;
}

// What a launch works on. Values are untyped here; the kernel casts them to its T.
struct RowArgs {
    const std::uint32_t* rows = nullptr;  // the group's rows
    std::uint64_t nrows = 0;
    const Offset* a_off = nullptr;
    const ColIndex* a_cols = nullptr;
    const void* a_vals = nullptr;
    const Offset* b_off = nullptr;
    const ColIndex* b_cols = nullptr;
    const void* b_vals = nullptr;
    const Offset* m_off = nullptr;  // the mask's pattern, or null
    const ColIndex* m_cols = nullptr;
    bool complement = false;
    const Offset* products = nullptr;  // per row: intermediate products (a mask is prefilled when not more)
    const Offset* size = nullptr;      // per row: what it was grouped by (sizes the global tables)
    bool ranged = true;
    Offset* row_nnz = nullptr;  // symbolic: each row's distinct columns
    const Offset* c_off = nullptr;  // numeric: where each row goes
    ColIndex* c_cols = nullptr;
    void* c_vals = nullptr;
    std::uint32_t* t_keys = nullptr;  // global tables: t_slots slots per block
    std::uint32_t* t_hits = nullptr;
    void* t_vals = nullptr;
    std::uint8_t* t_flags = nullptr;
    std::uint64_t t_slots = 0;
    unsigned col_bits = 32;  // bit_width(ncols of C): the bits a column sort looks at
};

#if defined(__CUDACC__)

__device__ __forceinline__ std::uint32_t hash_slot(std::uint32_t j, unsigned shift) {
    return (j * 2654435761u) >> shift;
}

// The slot of column j, inserted if absent (fresh tells which). The table has room: it holds at least twice
// the row's distinct columns.
__device__ __forceinline__ std::uint32_t insert_key(std::uint32_t* keys, std::uint32_t mask, unsigned shift,
                                                    std::uint32_t j, bool& fresh) {
    std::uint32_t s = hash_slot(j, shift);
    for (;;) {
        const std::uint32_t k = *reinterpret_cast<volatile std::uint32_t*>(keys + s);
        if (k == j) break;
        if (k == empty_key) {
            const std::uint32_t old = atomicCAS(keys + s, empty_key, j);
            if (old == empty_key) {
                fresh = true;
                return s;
            }
            if (old == j) break;
        }
        s = (s + 1) & mask;
    }
    fresh = false;
    return s;
}

// The slot of column j, or empty_key (no insertion; the keys no longer change).
__device__ __forceinline__ std::uint32_t find_key(const std::uint32_t* keys, std::uint32_t mask, unsigned shift,
                                                  std::uint32_t j) {
    std::uint32_t s = hash_slot(j, shift);
    for (;;) {
        const std::uint32_t k = keys[s];
        if (k == j) return s;
        if (k == empty_key) return empty_key;
        s = (s + 1) & mask;
    }
}

__device__ __forceinline__ bool contains_sorted(const ColIndex* c, Offset b, Offset e, ColIndex j) {
    const Offset end = e;
    while (b < e) {
        const Offset m = b + (e - b) / 2;
        if (c[m] < j) b = m + 1;
        else e = m;
    }
    return b < end && c[b] == j;
}

// Collectives of a row's threads: a warp's (G <= 32: every row of the warp takes part) or the block's.
template <unsigned G>
__device__ __forceinline__ bool coop_any(bool p) {
    if constexpr (G <= 32) return __any_sync(full_mask, p);
    else return __syncthreads_or(p);
}
template <unsigned G>
__device__ __forceinline__ void coop_sync() {
    if constexpr (G <= 32) __syncwarp();
    else __syncthreads();
}

// Inclusive sum over a row's G threads (tid = the thread's rank in its row). scan: 33 words of shared memory.
template <unsigned G>
__device__ __forceinline__ std::uint64_t group_scan(std::uint64_t v, std::uint64_t* scan) {
    constexpr unsigned width = G < 32 ? G : 32;
    const unsigned lane = threadIdx.x & 31;
#pragma unroll
    for (unsigned d = 1; d < width; d <<= 1) {
        const std::uint64_t u = __shfl_up_sync(full_mask, v, d, width);
        if ((lane % width) >= d) v += u;
    }
    if constexpr (G > 32) {
        constexpr unsigned warps = G / 32;
        const unsigned w = threadIdx.x >> 5;
        if (lane == 31) scan[w] = v;
        __syncthreads();
        if (w == 0) {
            std::uint64_t t = lane < warps ? scan[lane] : 0;
#pragma unroll
            for (unsigned d = 1; d < 32; d <<= 1) {
                const std::uint64_t u = __shfl_up_sync(full_mask, t, d);
                if (lane >= d) t += u;
            }
            if (lane < warps) scan[lane] = t;
        }
        __syncthreads();
        if (w > 0) v += scan[w - 1];
    }
    return v;
}

// Sum over a row's G threads, in thread 0 of the row (scan as above).
template <unsigned G>
__device__ __forceinline__ std::uint64_t group_sum(std::uint64_t v, std::uint64_t* scan) {
    constexpr unsigned width = G < 32 ? G : 32;
#pragma unroll
    for (unsigned d = width / 2; d > 0; d >>= 1) v += __shfl_down_sync(full_mask, v, d, width);
    if constexpr (G > 32) {
        const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
        __syncthreads();
        if (lane == 0) scan[w] = v;
        __syncthreads();
        if (threadIdx.x == 0)
            for (unsigned i = 1; i < G / 32; ++i) v += scan[i];
    }
    return v;
}

// Product `at` of a ranged stream over N segments of B (ends: inclusive sums of their lengths, bstart: where
// each starts in B): its position in B, and in seg the segment (the entry of A) it comes from.
template <unsigned N>
__device__ __forceinline__ Offset stream_position(const std::uint64_t* ends, const Offset* bstart, std::uint64_t at,
                                                  unsigned& seg) {
    unsigned lo = 0, hi = N - 1;  // the first segment that ends after `at`
    while (lo < hi) {
        const unsigned mid = (lo + hi) / 2;
        if (ends[mid] > at) hi = mid;
        else lo = mid + 1;
    }
    seg = lo;
    return bstart[lo] + (at - (lo ? ends[lo - 1] : 0));
}

template <class T>
__device__ __forceinline__ T read_volatile(const T* p) {
    return *reinterpret_cast<const volatile T*>(p);
}

// v from lane src of the warp, for any value type of at most 8 bytes (collective over the warp).
template <class T>
__device__ __forceinline__ T shuffle_value(T v, unsigned src) {
    static_assert(sizeof(T) <= 8);
    using Word = std::conditional_t<(sizeof(T) > 4), unsigned long long, unsigned>;
    Word w = 0;
    std::memcpy(&w, &v, sizeof(T));
    w = __shfl_sync(full_mask, w, src);
    std::memcpy(&v, &w, sizeof(T));
    return v;
}

// A step's products of one column in one warp (peers: their lanes; v: this lane's value, also in stage[lane],
// written before a __syncwarp), folded in lane order by the lowest lane, the leader, whose result this is
// (collective over the warp). Where a block takes a row, the warps fold side by side and then add their results
// to the table one warp after another (in warp order: deterministic). Folding in turn, a warp whose lanes all
// hit one column (a contraction's A·Sᵀ, most of a vertex's neighbours in one cluster) kept the others waiting
// through 31 dependent additions each step. Where a leader has more than 4 peers the values come by shuffles,
// so that only the additions wait on one another (the same order, the same sums).
template <class T, class Sr>
__device__ __forceinline__ T fold_peers(const T* stage, T v, unsigned lane, unsigned peers, bool leader, const Sr& sr) {
    T acc = v;
    if (__any_sync(full_mask, leader && __popc(peers) > 4)) {
        for (unsigned j = 1; j < 32; ++j) {
            const T other = shuffle_value(v, j);
            if (leader && j > lane && (peers >> j & 1)) acc = sr.template add<T>(acc, other);
        }
    } else if (leader) {
        for (unsigned rest = peers & (peers - 1); rest; rest &= rest - 1)
            acc = sr.template add<T>(acc, read_volatile(stage + (__ffs(rest) - 1)));
    }
    return acc;
}

// Hub rows by tiles of columns. B's rows are cut by tile in advance: split[k * split_stride + t] is the first
// entry of B(k,:) in tile t (its last + 1 at t = tiles; split_stride = tiles + 1, or with one tile B's row
// offsets themselves, split_stride 1). A block per job (hub h, tile t, chunk c) walks the
// segments in tile t of the chunk's entries of A(h,:) as one stream (the ranged gather), into a bitmap of the
// tile's columns (symbolic) or a dense accumulator (numeric: values folded in stream order as in rows_kernel).
// Without chunks (job_start null) jobs are numbered h * tiles + t and each writes its (hub, tile) pair's count
// (symbolic) or entries in column order where the pairs' exclusive sum of counts puts them (numeric). With
// chunks, hub h has chunks_h = (job_start[h + 1] - job_start[h]) / tiles chunks of its entries of A, of about
// equal products (chunk_bounds_kernel), its jobs numbered job_start[h] + t * chunks_h + c. A pair of one chunk is
// done as without; otherwise each job ORs its bitmap into the pair's and the pair's last job to finish counts
// its bits (symbolic), or each writes its accumulator to its own partial slot and a kernel after folds the
// partials in chunk order (deterministic) and writes the pair's entries (numeric, pair_fold_kernel).
struct TileArgs {
    const std::uint32_t* rows = nullptr;  // the hub rows
    std::uint64_t jobs = 0;               // without chunks the jobs, with them a bound (job_start[hubs] is exact)
    std::uint64_t pairs = 0;              // hubs x tiles
    unsigned tiles = 1, width = max_tile;
    const Offset* split = nullptr;
    std::uint64_t split_stride = 2;
    Offset* job_nnz = nullptr;        // symbolic: per pair
    const Offset* job_off = nullptr;  // numeric: exclusive sum of job_nnz
    unsigned long long* next_job = nullptr;  // the next job to hand out (0 at the launch)
    // Chunks of the hubs' entries of A (null: none).
    const std::uint64_t* job_start = nullptr;  // hubs + 1
    std::uint32_t hubs = 0;
    const Offset* chunk_bounds = nullptr;  // chunk_bounds_kernel
    std::uint32_t* pair_bits = nullptr;    // a bitmap of max_tile bits per pair, zeroed, set by the symbolic jobs
    unsigned* pair_done = nullptr;         // symbolic: each pair's chunks done, zeroed
    void* partial = nullptr;               // numeric: max_tile values per job
    std::uint32_t* partial_bits = nullptr;  // numeric: max_tile bits per job
};

// B's split table for the hub tiles: split[k * (tiles + 1) + t] = the first entry of B(k,:) with a column of at
// least t * width, a thread an entry (split_kernel, or chunk_bounds_kernel's blocks after its hubs').
struct SplitArgs {
    Index rows = 0;
    const Offset* b_off = nullptr;
    const ColIndex* b_cols = nullptr;
    unsigned tiles = 1, width = max_tile;
    Offset* split = nullptr;  // null: none to write
#if defined(__CUDACC__)
    std::uint64_t size() const { return split ? rows * (std::uint64_t(tiles) + 1) : 0; }
    __device__ void run(std::uint64_t first, std::uint64_t stride) const {
        const std::uint64_t per = std::uint64_t(tiles) + 1;
        for (std::uint64_t i = first; i < rows * per; i += stride) {
            const std::uint64_t k = i / per, t = i % per, c = t * width;
            Offset b = b_off[k], e = b_off[k + 1];
            if (t == tiles) b = e;
            while (b < e) {
                const Offset mid = b + (e - b) / 2;
                if (b_cols[mid] < c) b = mid + 1;
                else e = mid;
            }
            split[i] = b;
        }
    }
#endif
};

// Hub h's jobs: tiles x its chunks, ceil(products of A(h,:) / chunk), at least 1, at most max_chunks and at
// most |A(h,:)|. job_start: each hub's first job, then all jobs (hubs + 1, written); zero: the tile kernels'
// three counters, zeroed with it (a launch less than a memset).
struct HubJobs {
    const std::uint32_t* rows = nullptr;
    const Offset* a_off = nullptr;
    const Offset* products = nullptr;
    Offset chunk = 1;
    unsigned max_chunks = 1, tiles = 1;
    std::uint64_t* job_start = nullptr;
    Offset* zero = nullptr;
#if defined(__CUDACC__)
    __device__ std::uint64_t jobs(std::uint64_t h) const {
        const Offset deg = a_off[rows[h] + 1] - a_off[rows[h]];
        Offset c = (products[rows[h]] + chunk - 1) / chunk;
        c = c < max_chunks ? c : max_chunks;
        c = c < deg ? c : deg;
        return std::uint64_t(tiles) * (c < 1 ? 1 : c);
    }
#endif
};

// job_start and zero of j for any number of hubs. One block.
template <unsigned B>
__global__ void __launch_bounds__(B) hub_jobs_kernel(std::uint32_t hubs, const HubJobs j) {
    __shared__ std::uint64_t scan[33];
    if (threadIdx.x < 3) j.zero[threadIdx.x] = 0;
    std::uint64_t carry = 0;
    for (std::uint64_t h0 = 0; h0 < hubs; h0 += B) {
        const std::uint64_t h = h0 + threadIdx.x;
        const std::uint64_t jobs = h < hubs ? j.jobs(h) : 0;
        const std::uint64_t end = group_scan<B>(jobs, scan);
        if (h < hubs) j.job_start[h] = carry + end - jobs;
        carry += scan[B / 32 - 1];  // the block's total (group_scan leaves the warps' inclusive sums)
        __syncthreads();
    }
    if (threadIdx.x == 0) j.job_start[hubs] = carry;
}

// Where hub h's chunks begin among its entries of A, so that each holds about as many products as the others
// (a hub's first entries may carry most of its products: chunks of equal entries left one job with six times the
// products of the average, and the launch waited for it): bounds[job_start[h] / tiles + h + c] for chunk c, its
// chunks_h + 1 bounds running from 0 to |A(h,:)|. Chunk c - 1 ends after the entry whose products reach
// ceil(c x products / chunks_h). A block per hub, E consecutive entries a thread (their loads side by side: a
// hub's entries are read in a few steps of two dependent loads each). Also zeroes the hub's pairs' bitmaps. With
// at most B hubs each block scans their jobs itself and block 0 writes j's job_start and zero (hub_jobs_kernel
// not launched: one launch less); otherwise t.job_start is hub_jobs_kernel's. The blocks after the hubs' write
// B's split table (a launch less; s.split null: none).
template <unsigned B, unsigned E>
__global__ void __launch_bounds__(B) chunk_bounds_kernel(const RowArgs x, const TileArgs t, Offset* bounds,
                                                         const HubJobs j, const SplitArgs s) {
    if (blockIdx.x >= t.hubs) {
        s.run((blockIdx.x - t.hubs) * std::uint64_t(B) + threadIdx.x, std::uint64_t(gridDim.x - t.hubs) * B);
        return;
    }
    __shared__ std::uint64_t scan[33], starts[B + 1];
    const bool own = t.hubs <= B;
    if (own) {
        const std::uint64_t jobs = threadIdx.x < t.hubs ? j.jobs(threadIdx.x) : 0;
        const std::uint64_t end = group_scan<B>(jobs, scan);
        if (threadIdx.x < t.hubs) starts[threadIdx.x] = end - jobs;
        if (threadIdx.x + 1 == t.hubs) starts[t.hubs] = end;
        __syncthreads();
        if (blockIdx.x == 0) {
            for (unsigned h = threadIdx.x; h <= t.hubs; h += B) j.job_start[h] = starts[h];
            if (threadIdx.x < 3) j.zero[threadIdx.x] = 0;
        }
    }
    auto start = [&](std::uint64_t h) { return own ? starts[h] : t.job_start[h]; };
    const std::uint64_t h = blockIdx.x;
    for (std::uint64_t w = threadIdx.x; w < std::uint64_t(t.tiles) * (max_tile / 32); w += B)
        t.pair_bits[h * t.tiles * (max_tile / 32) + w] = 0;
    for (std::uint64_t p = threadIdx.x; p < t.tiles; p += B) t.pair_done[h * t.tiles + p] = 0;
    const std::uint32_t row = t.rows[h];
    const Offset ra = x.a_off[row], deg = x.a_off[row + 1] - ra, total = x.products[row];
    const std::uint64_t chunks = (start(h + 1) - start(h)) / t.tiles;
    Offset* const b = bounds + start(h) / t.tiles + h;
    if (threadIdx.x == 0) {
        b[0] = 0;
        b[chunks] = deg;
    }
    if (chunks == 1) return;
    Offset carry = 0;
    for (Offset e0 = 0; e0 < deg; e0 += B * E) {
        const Offset first = e0 + threadIdx.x * E;
        ColIndex k[E];
#pragma unroll
        for (unsigned u = 0; u < E; ++u) k[u] = first + u < deg ? x.a_cols[ra + first + u] : 0;
        Offset len[E], mine = 0;
#pragma unroll
        for (unsigned u = 0; u < E; ++u) {
            len[u] = first + u < deg ? x.b_off[k[u] + 1] - x.b_off[k[u]] : 0;
            mine += len[u];
        }
        Offset after = carry + group_scan<B>(mine, scan) - mine;  // products before this thread's entries
#pragma unroll
        for (unsigned u = 0; u < E; ++u) {
            after += len[u];  // products up to and including entry first + u
            // Targets ceil(c x total / chunks) in (after - len, after]: c in (f(after - len), f(after)].
            const std::uint64_t lo = (after - len[u]) * chunks / total, hi = after * chunks / total;
            for (std::uint64_t c = lo + 1; c <= hi && c < chunks; ++c) b[c] = first + u + 1;
        }
        carry += scan[B / 32 - 1];
        __syncthreads();
    }
}

template <bool Values, std::size_t VSIZE>
HYBLA_HD constexpr std::size_t tile_bytes() {
    std::size_t at = Values ? align16(max_tile * VSIZE) + align16(max_tile) : max_tile / 8;
    at += 2 * tile_block * 8;                       // ends, bstart
    if (Values) at += 2 * align16(tile_block * VSIZE);  // avals, stage
    return at + 33 * 8;                             // scan
}

// The end of a (hub, tile) pair. Symbolic: the bits of its tile's columns counted, the pair's count written and
// added to the row's. Numeric: its entries (flags/vals: the tile's accumulator) written in column order where the
// pairs' exclusive sum of counts puts them, thread tid owning columns [tid * C, tid * C + C).
// (L2: bits are the pair's bitmap in global memory, set by other blocks' atomics, read from L2.)
template <unsigned B, bool L2 = false>
__device__ void write_tile_count(const RowArgs& x, const TileArgs& t, std::uint64_t pair, std::uint32_t row,
                                 const std::uint32_t* bits, std::uint64_t* scan) {
    std::uint64_t cnt = 0;
    for (unsigned w = threadIdx.x; w < max_tile / 32; w += B) {
        if constexpr (L2) cnt += __popc(__ldcg(bits + w));
        else cnt += __popc(bits[w]);
    }
    cnt = group_sum<B>(cnt, scan);
    if (threadIdx.x == 0) {
        t.job_nnz[pair] = cnt;
        if (cnt) atomicAdd(reinterpret_cast<unsigned long long*>(x.row_nnz + row), (unsigned long long)cnt);
    }
}
template <class T, unsigned B>
__device__ void write_tile_entries(const RowArgs& x, const TileArgs& t, std::uint64_t pair, std::uint64_t h,
                                   std::uint32_t row, std::uint32_t lo, const std::uint8_t* flags, const T* vals,
                                   std::uint64_t* scan) {
    constexpr unsigned C = max_tile / B;
    const unsigned tid = threadIdx.x;
    unsigned cnt = 0;
#pragma unroll
    for (unsigned c = 0; c < C; ++c) cnt += flags[tid * C + c];
    const Offset base = x.c_off[row] + (t.job_off[pair] - t.job_off[h * t.tiles]);
    Offset out = base + (group_scan<B>(cnt, scan) - cnt);
    T* const c_vals = static_cast<T*>(x.c_vals);
#pragma unroll
    for (unsigned c = 0; c < C; ++c)
        if (flags[tid * C + c]) {
            x.c_cols[out] = lo + tid * C + c;
            c_vals[out] = vals[tid * C + c];
            ++out;
        }
}

template <class T, class Sr, bool Values>
__global__ void __launch_bounds__(tile_block, 8) tile_rows_kernel(const RowArgs x, const TileArgs t, const Sr sr) {
    constexpr unsigned B = tile_block;
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    [[maybe_unused]] T* const vals = reinterpret_cast<T*>(smem);
    [[maybe_unused]] std::uint8_t* const flags = smem + align16(max_tile * sizeof(T));
    [[maybe_unused]] std::uint32_t* const bits = reinterpret_cast<std::uint32_t*>(smem);
    std::size_t at = Values ? align16(max_tile * sizeof(T)) + align16(max_tile) : max_tile / 8;
    std::uint64_t* const ends = reinterpret_cast<std::uint64_t*>(smem + at);
    Offset* const bstart = reinterpret_cast<Offset*>(smem + at + B * 8);
    at += 2 * B * 8;
    [[maybe_unused]] T* const avals = reinterpret_cast<T*>(smem + at);
    [[maybe_unused]] T* const stage = reinterpret_cast<T*>(smem + at + align16(B * sizeof(T))) + warp * 32;
    if constexpr (Values) at += 2 * align16(B * sizeof(T));
    std::uint64_t* const scan = reinterpret_cast<std::uint64_t*>(smem + at);
    const T* const a_vals = static_cast<const T*>(x.a_vals);
    const T* const b_vals = static_cast<const T*>(x.b_vals);

    // Jobs are handed out in order by a counter: a block that finishes takes the next one, so the blocks end
    // together however uneven the jobs (hubs differ widely).
    __shared__ std::uint64_t taken;
    auto next_job = [&] {
        __syncthreads();  // every thread has read the last job
        if (tid == 0) taken = atomicAdd(t.next_job, 1ull);
        __syncthreads();
        return taken;
    };
    const std::uint64_t jobs = t.job_start ? t.job_start[t.hubs] : t.jobs;
    for (std::uint64_t job = next_job(); job < jobs; job = next_job()) {
        std::uint64_t h, chunks = 1, chunk = 0;
        unsigned tile;
        if (t.job_start) {
            std::uint32_t lo = 0, hi = t.hubs;  // the hub h with job_start[h] <= job < job_start[h + 1]
            while (hi - lo > 1) {
                const std::uint32_t mid = (lo + hi) / 2;
                if (t.job_start[mid] <= job) lo = mid;
                else hi = mid;
            }
            h = lo;
            chunks = (t.job_start[h + 1] - t.job_start[h]) / t.tiles;
            const std::uint64_t local = job - t.job_start[h];
            tile = unsigned(local / chunks);
            chunk = local % chunks;
        } else {
            h = job / t.tiles;
            tile = unsigned(job % t.tiles);
        }
        const std::uint64_t pair = h * t.tiles + tile;
        const std::uint32_t row = t.rows[h];
        Offset pa = x.a_off[row], pe = x.a_off[row + 1];
        if (chunks > 1) {
            const Offset* const b = t.chunk_bounds + t.job_start[h] / t.tiles + h + chunk;
            pe = pa + b[1];
            pa += b[0];
        }
        const std::uint32_t lo = tile * t.width;
        if constexpr (Values)
            for (unsigned c = tid; c < max_tile; c += B) flags[c] = 0;
        else
            for (unsigned w = tid; w < max_tile / 32; w += B) bits[w] = 0;
        __syncthreads();
        for (Offset t0 = pa; t0 < pe; t0 += B) {
            const Offset p = t0 + tid;
            std::uint64_t len = 0;
            Offset qb = 0;
            T a{};
            if (p < pe) {
                const Offset* const sp = t.split + std::uint64_t(x.a_cols[p]) * t.split_stride + tile;
                qb = sp[0];
                len = sp[1] - qb;
                if constexpr (Values) a = a_vals[p];
            }
            const std::uint64_t end = group_scan<B>(len, scan);
            ends[tid] = end;
            bstart[tid] = qb;
            if constexpr (Values) avals[tid] = a;
            __syncthreads();
            const std::uint64_t total = ends[B - 1];
            // As in rows_kernel: each product's column and value are loaded one step ahead of their use.
            auto fetch = [&](std::uint64_t pos, std::uint32_t& j, T& bv, T& av) {
                unsigned l;
                const Offset q = stream_position<B>(ends, bstart, pos, l);
                j = x.b_cols[q] - lo;
                if constexpr (Values) {
                    bv = b_vals[q];
                    av = avals[l];
                }
            };
            bool next_valid = tid < total;
            std::uint32_t nj = 0;
            T nbv{}, nav{};
            if (next_valid) fetch(tid, nj, nbv, nav);
            for (std::uint64_t c0 = 0; c0 < total; c0 += B) {
                const bool valid = next_valid;
                const std::uint32_t j = nj;
                T v{};
                if constexpr (Values)
                    if (valid) v = sr.template multiply<T>(nav, nbv);
                const std::uint64_t pos = c0 + B + tid;
                next_valid = pos < total;
                if (next_valid) fetch(pos, nj, nbv, nav);
                if constexpr (!Values) {
                    // (Read first: where many products hit one column, their atomics on one word would queue.)
                    if (valid && !(bits[j >> 5] >> (j & 31) & 1)) atomicOr(bits + (j >> 5), 1u << (j & 31));
                } else {
                    // Products of one column in this step: each warp folds its own in lane order, then the warps add
                    // theirs in turn.
                    const unsigned peers = __match_any_sync(full_mask, valid ? j : (0xFFFF0000u | lane));
                    stage[lane] = v;
                    __syncwarp();
                    const bool leader = valid && unsigned(__ffs(peers) - 1) == lane;
                    const T part = fold_peers(stage, v, lane, peers, leader, sr);
                    for (unsigned w = 0; w < B / 32; ++w) {
                        if (warp == w && leader) {
                            vals[j] = flags[j] ? sr.template add<T>(vals[j], part) : part;
                            flags[j] = 1;
                        }
                        __syncthreads();
                    }
                }
            }
            __syncthreads();
        }
        // A chunk of a pair of several: its part goes to the pair's bitmap, which the pair's last job to finish
        // counts (the other jobs' atomics seen through the fences around the count of jobs done), or to its
        // partial slot, for pair_fold_kernel.
        if (chunks > 1) {
            if constexpr (!Values) {
                std::uint32_t* const pb = t.pair_bits + pair * (max_tile / 32);
                for (unsigned w = tid; w < max_tile / 32; w += B)
                    if (bits[w]) atomicOr(pb + w, bits[w]);
                __threadfence();
                __syncthreads();
                __shared__ bool last;
                if (tid == 0) last = atomicAdd(t.pair_done + pair, 1u) + 1 == chunks;
                __syncthreads();
                if (last) {
                    __threadfence();
                    write_tile_count<B, true>(x, t, pair, row, pb, scan);
                }
            } else {
                T* const partial = static_cast<T*>(t.partial);
                for (unsigned c = tid; c < max_tile; c += B) {
                    const unsigned word = __ballot_sync(full_mask, flags[c] != 0);
                    if (flags[c]) partial[job * max_tile + c] = vals[c];
                    if (lane == 0) t.partial_bits[job * (max_tile / 32) + c / 32] = word;
                }
            }
            continue;
        }
        if constexpr (!Values) write_tile_count<B>(x, t, pair, row, bits, scan);
        else write_tile_entries<T, B>(x, t, pair, h, row, lo, flags, vals, scan);
    }
}

// A chunked hub's pair (h, tile) and its chunks (0: the pair is not chunked, or no pair).
struct ChunkedPair {
    std::uint64_t h = 0, chunks = 0;
};
__device__ inline ChunkedPair chunked_pair(const TileArgs& t, std::uint64_t pair) {
    if (pair >= t.pairs) return {};
    const std::uint64_t h = pair / t.tiles, chunks = (t.job_start[h + 1] - t.job_start[h]) / t.tiles;
    return {h, chunks > 1 ? chunks : 0};
}

// Numeric, chunked hubs: a block per B columns of a (hub, tile) pair, a thread per column, folds the column's
// values in its chunks' partials in chunk order and writes the entry where the pair's symbolic bitmap (the
// union of its chunks' bits: the same products) puts it. The chunks' loads are issued four at a time. (A block
// per pair, each thread folding max_tile / B columns, took 80-110 µs for a few pairs of 20 chunks: four
// multiprocessors waited on one chunk after another.)
template <class T, class Sr, unsigned B>
__global__ void __launch_bounds__(B) pair_fold_kernel(const RowArgs x, const TileArgs t, const Sr sr) {
    static_assert(max_tile % B == 0 && B % 32 == 0 && max_tile / 32 <= 4 * 32);
    constexpr unsigned segs = max_tile / B, words = max_tile / 32, U = 4;
    __shared__ unsigned ones[words];  // bits set in each word of the pair's bitmap
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const T* const partial = static_cast<const T*>(t.partial);
    T* const c_vals = static_cast<T*>(x.c_vals);
    for (std::uint64_t unit = blockIdx.x; unit < t.pairs * segs; unit += gridDim.x) {
        const std::uint64_t pair = unit / segs;
        const ChunkedPair p = chunked_pair(t, pair);
        if (!p.chunks) continue;  // the same for the whole block
        const unsigned seg = unsigned(unit % segs), tile = unsigned(pair % t.tiles);
        const std::uint32_t* const bits = t.pair_bits + pair * words;
        for (unsigned w = threadIdx.x; w < words; w += B) ones[w] = __popc(bits[w]);
        __syncthreads();
        // Entries of the pair before this warp's word.
        const unsigned word = seg * (B / 32) + warp;
        unsigned before = 0;
        for (unsigned w = lane; w < word; w += 32) before += ones[w];
        for (unsigned d = 16; d > 0; d >>= 1) before += __shfl_xor_sync(full_mask, before, d);
        const std::uint32_t mine = bits[word];
        if (mine >> lane & 1) {
            const unsigned c = word * 32 + lane;
            const std::uint64_t first = t.job_start[p.h] + std::uint64_t(tile) * p.chunks;
            T acc{};
            bool has = false;
            for (std::uint64_t k = 0; k < p.chunks; k += U) {
                std::uint32_t in[U];
                T v[U];
#pragma unroll
                for (unsigned u = 0; u < U; ++u)
                    in[u] = k + u < p.chunks ? t.partial_bits[(first + k + u) * words + word] >> lane & 1 : 0;
#pragma unroll
                for (unsigned u = 0; u < U; ++u)
                    if (in[u]) v[u] = partial[(first + k + u) * max_tile + c];
#pragma unroll
                for (unsigned u = 0; u < U; ++u)
                    if (in[u]) {
                        acc = has ? sr.template add<T>(acc, v[u]) : v[u];
                        has = true;
                    }
            }
            const Offset out = x.c_off[t.rows[p.h]] + (t.job_off[pair] - t.job_off[p.h * t.tiles]) + before +
                               __popc(mine & ((1u << lane) - 1));
            x.c_cols[out] = tile * t.width + c;
            c_vals[out] = acc;
        }
        __syncthreads();  // ones is read before the next unit writes it
    }
}

// The block sort that orders a block row's entries by column (numeric phase, shared tables): a row of the group
// holds at most S / 2 entries, S / 2 / BLOCK a thread; keys are columns, values table slots.
template <bool Values, unsigned G, unsigned BLOCK, unsigned S>
struct RowSort {
    static constexpr bool used = Values && G > 32 && S > 0;
    static constexpr unsigned items = used ? S / 2 / BLOCK : 1;
    using Sort = cub::BlockRadixSort<std::uint32_t, BLOCK, items, std::uint32_t>;
    static constexpr std::size_t bytes = used ? sizeof(typename Sort::TempStorage) : 0;
};
template <bool Values, std::size_t VSIZE, unsigned G, unsigned BLOCK, unsigned S>
HYBLA_HD constexpr Layout group_layout() {
    return layout(Values, VSIZE, G, BLOCK, S, RowSort<Values, G, BLOCK, S>::bytes);
}

// A group's rows (see the top of this file), as block `block` of `blocks` that take them (a kernel's blocks, or
// a share of a launch of several groups: rows_kernel, light_rows_kernel in spgemm.cu), in smem laid out by
// group_layout.
template <class T, class Sr, bool Values, unsigned G, unsigned BLOCK, unsigned S>
__device__ __forceinline__ void rows_body(const RowArgs& x, const Sr& sr, unsigned block, unsigned blocks,
                                          unsigned char* smem) {
    static_assert(G <= 32 ? (32 % G == 0 && BLOCK % 32 == 0) : G == BLOCK, "a row is part of a warp or a block");
    constexpr bool global = S == 0;
    static_assert(!global || G == BLOCK, "global tables take a block per row");
    constexpr unsigned RPB = BLOCK / G;
    constexpr Layout L = group_layout<Values, sizeof(T), G, BLOCK, S>();

    const unsigned rg = threadIdx.x / G, tid = threadIdx.x % G, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    std::uint64_t* const ends = reinterpret_cast<std::uint64_t*>(smem + L.ends) + rg * G;
    Offset* const bstart = reinterpret_cast<Offset*>(smem + L.bstart) + rg * G;
    std::uint64_t* const scan = reinterpret_cast<std::uint64_t*>(smem + L.scan);
    [[maybe_unused]] T* const avals = reinterpret_cast<T*>(smem + L.avals) + rg * G;
    [[maybe_unused]] T* const stage = reinterpret_cast<T*>(smem + L.stage) + warp * 32;
    const T* const a_vals = static_cast<const T*>(x.a_vals);
    const T* const b_vals = static_cast<const T*>(x.b_vals);

    for (std::uint64_t base = std::uint64_t(block) * RPB; base < x.nrows; base += std::uint64_t(blocks) * RPB) {
        const std::uint64_t r = base + rg;
        const bool active = r < x.nrows;
        const std::uint32_t row = active ? x.rows[r] : 0;
        const Offset pa = active ? x.a_off[row] : 0, pe = active ? x.a_off[row + 1] : 0;

        // The row's table.
        std::uint32_t slots = S;
        std::uint32_t* keys;
        [[maybe_unused]] std::uint32_t* hits = nullptr;
        [[maybe_unused]] T* vals = nullptr;
        [[maybe_unused]] std::uint8_t* flags = nullptr;
        if constexpr (global) {
            const std::uint64_t want = 2 * (active ? x.size[row] : 1);
            std::uint64_t s = 32;
            while (s < want) s <<= 1;
            slots = std::uint32_t(s < x.t_slots ? s : x.t_slots);
            keys = x.t_keys + std::uint64_t(block) * x.t_slots;
            if constexpr (Values) {
                vals = static_cast<T*>(x.t_vals) + std::uint64_t(block) * x.t_slots;
                flags = x.t_flags + std::uint64_t(block) * x.t_slots;
            } else {
                hits = x.t_hits + std::uint64_t(block) * (x.t_slots / 32);
            }
        } else {
            keys = reinterpret_cast<std::uint32_t*>(smem + L.keys) + rg * S;
            if constexpr (Values) {
                vals = reinterpret_cast<T*>(smem + L.vals) + rg * S;
                flags = smem + L.flags + rg * S;
            } else {
                hits = reinterpret_cast<std::uint32_t*>(smem + L.hits) + rg * ((S + 31) / 32);
            }
        }
        const std::uint32_t mask = slots - 1;
        const unsigned shift = 32 - (31 - __clz(slots));
        // Global tables: the step's shared table (numeric phase).
        constexpr std::uint32_t step_slots = 2 * BLOCK;
        [[maybe_unused]] std::uint32_t* const st_keys = reinterpret_cast<std::uint32_t*>(smem + L.keys);
        [[maybe_unused]] T* const st_vals = reinterpret_cast<T*>(smem + L.vals);
        [[maybe_unused]] std::uint8_t* const st_flags = smem + L.flags;
        [[maybe_unused]] constexpr unsigned st_shift = 33 - std::bit_width(step_slots);
        if constexpr (global && Values)
            for (std::uint32_t e = tid; e < step_slots; e += G) {
                st_keys[e] = empty_key;
                st_flags[e] = 0;
            }
        for (std::uint32_t s = tid; s < slots; s += G) {
            keys[s] = empty_key;
            if constexpr (Values) flags[s] = 0;
        }
        if constexpr (!Values)
            for (std::uint32_t w = tid; w < (slots + 31) / 32; w += G) hits[w] = 0;

        // A non-complemented mask with no more entries than the row has products is put in the table first:
        // products then only look up. Otherwise each product's column is searched for in the mask's row.
        const Offset mb = active && x.m_off ? x.m_off[row] : 0, me = active && x.m_off ? x.m_off[row + 1] : 0;
        const bool prefill = active && x.m_off && !x.complement && me - mb <= x.products[row];
        coop_sync<G>();
        if (prefill) {
            for (Offset p = mb + tid; p < me; p += G) {
                bool fresh;
                insert_key(keys, mask, shift, x.m_cols[p], fresh);
            }
        }
        coop_sync<G>();

        std::uint64_t count = 0;  // symbolic: new columns this thread found
        // Takes this thread's product of the step (valid: it has one): collective over the row's threads.
        auto consume = [&](bool valid, std::uint32_t j, T v) {
            if (valid && x.m_off && !prefill) valid = contains_sorted(x.m_cols, mb, me, j) != x.complement;
            if constexpr (!Values) {
                if (valid) {
                    if (prefill) {
                        const std::uint32_t s = find_key(keys, mask, shift, j);
                        if (s != empty_key) {
                            const std::uint32_t bit = 1u << (s & 31);
                            if (!(atomicOr(hits + (s >> 5), bit) & bit)) ++count;
                        }
                    } else {
                        bool fresh;
                        insert_key(keys, mask, shift, j, fresh);
                        count += fresh;
                    }
                }
            } else {
                std::uint32_t s = empty_key;
                if (valid) {
                    if (prefill) {
                        s = find_key(keys, mask, shift, j);
                        valid = s != empty_key;
                    } else {
                        bool fresh;
                        s = insert_key(keys, mask, shift, j, fresh);
                    }
                }
                // Where this step's fold goes: the row's table, or for global tables the step's shared table.
                std::uint32_t u = s;
                T* tv = vals;
                std::uint8_t* tf = flags;
                if constexpr (global) {
                    tv = st_vals;
                    tf = st_flags;
                    if (valid) {
                        bool fresh;
                        u = insert_key(st_keys, step_slots - 1, st_shift, s, fresh);
                    }
                }
                // (32-bit keys: a slot is under 2^16, a row of the block under 2^15; a lane without a product
                // is alone under a key of its own.)
                static_assert(S < (1u << 16) && 2 * BLOCK <= (1u << 16) && BLOCK / G < (1u << 15));
                const std::uint32_t key = valid ? (std::uint32_t(rg) << 16 | u) : (0xFFFF0000u | lane);
                const unsigned peers = __match_any_sync(full_mask, key);
                stage[lane] = v;
                __syncwarp();
                const bool leader = valid && unsigned(__ffs(peers) - 1) == lane;
                if constexpr (G <= 32) {
                    if (leader) {
                        T acc = tf[u] ? sr.template add<T>(tv[u], read_volatile(stage + lane)) : read_volatile(stage + lane);
                        for (unsigned rest = peers & (peers - 1); rest; rest &= rest - 1)
                            acc = sr.template add<T>(acc, read_volatile(stage + (__ffs(rest) - 1)));
                        tv[u] = acc;
                        tf[u] = 1;
                    }
                    __syncwarp();
                } else {
                    // The warps' folds side by side, then their results into the table warp by warp.
                    const T part = fold_peers(stage, v, lane, peers, leader, sr);
                    for (unsigned w = 0; w < BLOCK / 32; ++w) {
                        if (warp == w && leader) {
                            tv[u] = tf[u] ? sr.template add<T>(tv[u], part) : part;
                            tf[u] = 1;
                        }
                        __syncthreads();
                    }
                }
                if constexpr (global) {
                    // The step's folds go to the row's table in one parallel pass (distinct slots).
                    for (std::uint32_t e = tid; e < step_slots; e += G) {
                        if (st_flags[e]) {
                            const std::uint32_t gs = st_keys[e];
                            vals[gs] = flags[gs] ? sr.template add<T>(vals[gs], st_vals[e]) : st_vals[e];
                            flags[gs] = 1;
                            st_flags[e] = 0;
                        }
                        st_keys[e] = empty_key;
                    }
                    __syncthreads();
                }
            }
        };

        // One step of the paper's reading: product B(k, q) of this thread's entry, scaled by a.
        [[maybe_unused]] auto walk_step = [&](bool valid, Offset q, T a) {
            std::uint32_t j = 0;
            T v{};
            if (valid) {
                j = x.b_cols[q];
                if constexpr (Values) v = sr.template multiply<T>(a, b_vals[q]);
            }
            consume(valid, j, v);
        };
        if (x.ranged) {
            // Ranged-indirect gather: tiles of G entries of A(i,:), their B ranges scanned into one stream.
            for (Offset t0 = pa; coop_any<G>(t0 < pe); t0 += G) {
                const Offset p = t0 + tid;
                std::uint64_t len = 0;
                Offset qb = 0;
                T a{};
                if (p < pe) {
                    const ColIndex k = x.a_cols[p];
                    qb = x.b_off[k];
                    len = x.b_off[k + 1] - qb;
                    if constexpr (Values) a = a_vals[p];
                }
                const std::uint64_t end = group_scan<G>(len, scan);
                ends[tid] = end;
                bstart[tid] = qb;
                if constexpr (Values) avals[tid] = a;
                coop_sync<G>();
                const std::uint64_t total = ends[G - 1];
                // Product `at` of the stream: its column and value are loaded one step ahead of their use, so
                // that the loads are in flight while the previous step is folded.
                auto fetch = [&](std::uint64_t at, std::uint32_t& j, T& bv, T& av) {
                    unsigned lo;
                    const Offset q = stream_position<G>(ends, bstart, at, lo);
                    j = x.b_cols[q];
                    if constexpr (Values) {
                        bv = b_vals[q];
                        av = avals[lo];
                    }
                };
                bool valid = tid < total;
                std::uint32_t j = 0;
                T bv{}, av{};
                if (valid) fetch(tid, j, bv, av);
                for (std::uint64_t c0 = 0; coop_any<G>(c0 < total); c0 += G) {
                    const std::uint64_t next = c0 + G + tid;
                    const bool next_valid = next < total;
                    std::uint32_t nj = 0;
                    T nbv{}, nav{};
                    if (next_valid) fetch(next, nj, nbv, nav);
                    T v{};
                    if constexpr (Values)
                        if (valid) v = sr.template multiply<T>(av, bv);
                    consume(valid, j, v);
                    valid = next_valid;
                    j = nj;
                    bv = nbv;
                    av = nav;
                }
                coop_sync<G>();
            }
        } else if constexpr (G <= 32) {
            // The paper's partial warp per row: each thread walks whole B rows of every G-th entry.
            Offset p = pa + tid, q = 0, qe = 0;
            T a{};
            auto next_entry = [&] {
                while (p < pe) {
                    const ColIndex k = x.a_cols[p];
                    q = x.b_off[k];
                    qe = x.b_off[k + 1];
                    if constexpr (Values) a = a_vals[p];
                    p += G;
                    if (q < qe) return;
                }
                q = qe = 0;
            };
            next_entry();
            while (coop_any<G>(q < qe)) {
                const bool valid = q < qe;
                walk_step(valid, q, a);
                if (valid && ++q == qe) next_entry();
            }
        } else {
            // The paper's block per row: each warp takes every W-th entry, its lanes walk the B row.
            constexpr unsigned W = BLOCK / 32;
            Offset p = pa + warp, q = 0, qe = 0;
            T a{};
            auto next_entry = [&] {
                while (p < pe) {
                    const ColIndex k = x.a_cols[p];
                    const Offset qb = x.b_off[k];
                    qe = x.b_off[k + 1];
                    if constexpr (Values) a = a_vals[p];
                    p += W;
                    if (qb < qe) {
                        q = qb + lane;
                        return;
                    }
                }
                q = qe = 0;
            };
            next_entry();
            while (coop_any<G>(q < qe)) {
                const bool valid = q < qe;
                walk_step(valid, q, a);
                q += 32;
                if (__all_sync(full_mask, q >= qe)) next_entry();
            }
        }

        if constexpr (!Values) {
            const std::uint64_t total = group_sum<G>(count, scan);
            if (active && tid == 0) x.row_nnz[row] = total;
            coop_sync<G>();
        } else {
            coop_sync<G>();
            T* const c_vals = static_cast<T*>(x.c_vals);
            const Offset c0 = active ? x.c_off[row] : 0;
            if constexpr (global) {
                // Global tables go to their place in C unsorted, in slot order; they are sorted by column
                // afterwards (a segmented sort over the group's rows).
                unsigned* const next = reinterpret_cast<unsigned*>(scan);
                if (threadIdx.x == 0) *next = 0;
                __syncthreads();
                if (active)
                    for (std::uint32_t s = tid; s < slots; s += G)
                        if (flags[s]) {
                            const Offset at = c0 + atomicAdd(next, 1u);
                            x.c_cols[at] = keys[s];
                            c_vals[at] = vals[s];
                        }
                __syncthreads();
            } else {
                // The row's entries are compacted (columns and slots), then placed in column order.
                std::uint32_t* const ck = reinterpret_cast<std::uint32_t*>(smem + L.compact) + rg * (S / 2);
                std::uint16_t* const cs = reinterpret_cast<std::uint16_t*>(smem + L.compact_slots) + rg * (S / 2);
                if constexpr (G <= 32) {
                    // Partial warps: compacted by ballots; each entry's place is the number of smaller columns.
                    constexpr unsigned E = S / 2 / G;  // entries a thread places
                    const unsigned first = lane & ~(G - 1);
                    const unsigned sub = G == 32 ? full_mask : (1u << G) - 1;
                    unsigned n = 0;
                    for (unsigned i = 0; i < S / G; ++i) {
                        const unsigned s = tid + G * i;
                        const bool f = flags[s] != 0;
                        const unsigned b = (__ballot_sync(full_mask, f) >> first) & sub;
                        if (f) {
                            const unsigned at = n + __popc(b & ((1u << tid) - 1));
                            ck[at] = keys[s];
                            cs[at] = std::uint16_t(s);
                        }
                        n += __popc(b);
                    }
                    __syncwarp();
                    std::uint32_t mine[E];
                    unsigned rank[E];
#pragma unroll
                    for (unsigned e = 0; e < E; ++e) {
                        const unsigned idx = tid + G * e;
                        mine[e] = idx < n ? ck[idx] : empty_key;
                        rank[e] = 0;
                    }
                    for (unsigned t = 0; t < n; ++t) {
                        const std::uint32_t k = ck[t];
#pragma unroll
                        for (unsigned e = 0; e < E; ++e) rank[e] += k < mine[e];
                    }
#pragma unroll
                    for (unsigned e = 0; e < E; ++e)
                        if (tid + G * e < n) {
                            x.c_cols[c0 + rank[e]] = mine[e];
                            c_vals[c0 + rank[e]] = vals[cs[tid + G * e]];
                        }
                    __syncwarp();
                } else {
                    // A block row: each thread compacts a run of slots (a block scan places the runs), then one
                    // block radix sort over the columns' bits; the table's keys are dead by then and hold its
                    // scratch.
                    using RS = RowSort<Values, G, BLOCK, S>;
                    constexpr unsigned C = S / BLOCK, I = RS::items;
                    unsigned cnt = 0;
#pragma unroll
                    for (unsigned c = 0; c < C; ++c) cnt += flags[tid * C + c] != 0;
                    unsigned at = unsigned(group_scan<G>(cnt, scan)) - cnt;
#pragma unroll
                    for (unsigned c = 0; c < C; ++c) {
                        const unsigned s = tid * C + c;
                        if (flags[s]) {
                            ck[at] = keys[s];
                            cs[at] = std::uint16_t(s);
                            ++at;
                        }
                    }
                    __syncthreads();
                    const unsigned n = active ? unsigned(x.c_off[row + 1] - c0) : 0;
                    std::uint32_t k[I], v[I];
#pragma unroll
                    for (unsigned i = 0; i < I; ++i) {
                        const unsigned idx = tid * I + i;
                        k[i] = idx < n ? ck[idx] : empty_key;
                        v[i] = idx < n ? cs[idx] : 0;
                    }
                    __syncthreads();
                    typename RS::Sort(*reinterpret_cast<typename RS::Sort::TempStorage*>(smem + L.keys))
                        .SortBlockedToStriped(k, v, 0, int(x.col_bits));
#pragma unroll
                    for (unsigned i = 0; i < I; ++i) {
                        const unsigned r = tid + i * BLOCK;
                        if (r < n) {
                            x.c_cols[c0 + r] = k[i];
                            c_vals[c0 + r] = vals[v[i]];
                        }
                    }
                    __syncthreads();
                }
            }
        }
    }
}

// One launch of a group.
template <class T, class Sr, bool Values, unsigned G, unsigned BLOCK, unsigned S>
__global__ void __launch_bounds__(BLOCK) rows_kernel(const RowArgs x, const Sr sr) {
    extern __shared__ __align__(16) unsigned char smem[];
    rows_body<T, Sr, Values, G, BLOCK, S>(x, sr, blockIdx.x, gridDim.x, smem);
}

#endif  // __CUDACC__

}  // namespace hybla::cuda::hash
