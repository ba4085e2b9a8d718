// C = A ⊕.⊗ B (optionally only where a mask allows) on the GPU: the hash SpGEMM of papers/aia-hash-spgemm.txt.
// Rows are grouped by their intermediate products (Algorithm 1), a symbolic phase counts each row's distinct
// columns in hash tables, one scan places the rows and C is allocated exactly once, a numeric phase combines
// the values in the tables and writes each row sorted by column. No product is written to global memory.
// The kernels are in hash.cuh; README.md beside this file has the design, the floor and the measurements.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/batching.hpp"
#include "engine/cuda/host_mark.cuh"
#include "engine/cuda/look_back.cuh"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/cuda/spgemm/hash.cuh"
#include "engine/cuda/spgemm/scratch.cuh"
#include "engine/cuda/spgemm/select.hpp"
#include "engine/matrix.hpp"
#include "engine/memory.hpp"
#include "engine/trace.hpp"

namespace hybla::cuda {
namespace hash {
namespace {

cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }
void check(cudaError_t e, const char* what, std::size_t bytes = 0) { checked(int(e), what, bytes); }
void check_launch(const char* what) { check(cudaGetLastError(), what); }

constexpr unsigned block_size = 256;
unsigned grid_for(std::uint64_t n, std::uint64_t per_block = block_size) {
    return unsigned(std::clamp<std::uint64_t>((n + per_block - 1) / per_block, 1, std::uint64_t(1) << 20));
}
__device__ inline std::uint64_t thread_index() { return blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; }
__device__ inline std::uint64_t thread_count() { return std::uint64_t(gridDim.x) * blockDim.x; }

// The symbolic phase has no values: its kernels are instantiated once, with this in place of a semiring.
struct NoValues {
    template <class T> __device__ T add(T a, T) const { return a; }
    template <class T> __device__ T multiply(T a, T) const { return a; }
};
using NoValue = std::uint8_t;

// ------------------------------------------------------------------ row analysis and grouping

// Σ over A(i,:) of |B(k,:)|, A(i,:) = entries pb .. pe - 1: row i's intermediate products, in every lane of the
// warp that calls it. A row of at most 32 entries takes one load a lane (most rows: the unrolled steps below cost
// 150-odd instructions a row wherever the row has fewer entries than a step); longer ones take U x 32 entries a
// step, their loads at once (R-MAT 16's contraction's count 43 us under ncu, 40 with U = 8). The lanes' sums add
// in 32 bits when they are small enough (one instruction for ten shuffles).
__device__ inline Offset warp_row_products(Offset pb, Offset pe, const ColIndex* a_cols, const Offset* b_off) {
    constexpr unsigned U = 8;
    const unsigned lane = threadIdx.x & 31;
    Offset sum = 0;
    if (pe - pb <= 32) {
        if (pb + lane < pe) {
            const ColIndex k = a_cols[pb + lane];
            sum = b_off[k + 1] - b_off[k];
        }
    } else {
        for (Offset p = pb + lane; p < pe; p += 32 * U) {
            ColIndex k[U];
#pragma unroll
            for (unsigned u = 0; u < U; ++u) k[u] = p + 32 * u < pe ? a_cols[p + 32 * u] : 0;
#pragma unroll
            for (unsigned u = 0; u < U; ++u)
                if (p + 32 * u < pe) sum += b_off[k[u] + 1] - b_off[k[u]];
        }
    }
    if (__all_sync(full_mask, sum < (Offset(1) << 27))) return __reduce_add_sync(full_mask, unsigned(sum));
    for (unsigned d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(full_mask, sum, d);
    return sum;
}

// What a grouping counts, in device memory (zeroed before it): rows per group, the largest size of the global
// group (its tables are sized by it), the cursor each group's rows are placed with, and the total of the rows'
// products (symbolic) or entries (numeric).
struct GroupStats {
    unsigned long long counts[group_count], global_max, cursor[group_count], total;
    unsigned long long hub_products, hub_max_products;  // the hub rows' products: all, the most of one
    unsigned long long tiles_taken;  // the numeric grouping's tiles of rows handed out (look_back::exclusive)
    unsigned long long ready;        // the host's copy: the number of the grouping whose counts it holds
};

struct GroupArgs {
    Index m, n;
    bool lane_rows;  // products counted by a lane per row (short rows of A), else by a warp per row
    const Offset* a_off;
    const ColIndex* a_cols;  // with b_off: products counted here (products is written), when count_products
    const Offset* b_off;
    Offset* products;
    const Offset* nnz;  // null: the symbolic phase's grouping
    const Offset* m_off;
    bool complement;
    unsigned shared_enabled;  // groups 0 .. shared_enabled - 1 fit the device's shared memory
    unsigned min_group;
    Offset tile_products;  // an unmasked row of more products goes to tiles (0: none does)
    Offset* size;
    std::uint8_t* key;
    GroupStats* stats;
    Offset* row_nnz;  // symbolic: where rows of one entry get their count
    // Numeric grouping: block 0 also writes the exclusive sum of scan_n counts (at most small_sum_max; the hub
    // pairs' places: a launch less).
    const Offset* scan_in = nullptr;
    Offset* scan_out = nullptr;
    std::uint64_t scan_n = 0;
    // Numeric grouping: the exclusive sum of nnz, rows 0 .. m, also written (C's row offsets), with a state
    // word per tile of block_size rows (zeroed) for look_back::exclusive.
    Offset* row_off = nullptr;
    unsigned long long* row_state = nullptr;
    // With row_off: rows are not grouped, only summed (scan_only), and the total is also written to total_out
    // (page-locked host memory), if not null.
    bool scan_only = false;
    unsigned long long* total_out = nullptr;
};

// Row i's size (what bounds its distinct columns) and group, given its products.
__device__ inline std::uint8_t group_of(const GroupArgs& x, std::uint64_t i, Offset prod, Offset& s) {
    const Offset mask_len = x.m_off ? x.m_off[i + 1] - x.m_off[i] : 0;
    const bool masked = x.m_off && !x.complement;
    if (!x.nnz) {
        s = prod < x.n ? prod : x.n;
        if (masked && mask_len < s) s = mask_len;
    } else {
        s = x.nnz[i] == 0 ? 0 : (masked && mask_len <= prod ? mask_len : x.nnz[i]);
    }
    if (s == 0) return no_group;
    if (!x.m_off && x.a_off[i + 1] - x.a_off[i] == 1) return std::uint8_t(single_group);
    if (x.tile_products && !x.m_off && prod > x.tile_products) return std::uint8_t(tiled_group);
    // The first shared group that holds the row's columns and whose threads do its work in at most max_steps
    // steps, the last group that holds the columns when none is that wide: a row with few columns but many
    // products or entries of A would otherwise hold up a whole launch (its threads take one product each per
    // step, and each tile of entries of A costs about step_entries steps: two dependent loads and a scan).
    const Offset work = prod + step_entries * (x.a_off[i + 1] - x.a_off[i]);
    unsigned fit = global_group;
    for (unsigned k = x.min_group; k < x.shared_enabled; ++k)
        if (s <= group_limit(k)) {
            if (fit == global_group) fit = k;
            if (work <= max_steps * group_threads(k)) return std::uint8_t(k);
        }
    if (fit == global_group) return std::uint8_t(global_group);
    while (fit + 1 < x.shared_enabled && group_threads(fit) < group_threads(fit + 1)) ++fit;
    return std::uint8_t(fit);
}

// group_of, and in the symbolic phase the row's count where no symbolic kernel writes it: a row of one entry's
// is its B row's length, a row without products has none, a hub row's tiles add theirs to 0.
__device__ inline std::uint8_t classify_row(const GroupArgs& x, std::uint64_t i, Offset prod, Offset& s) {
    const std::uint8_t g = group_of(x, i, prod, s);
    if (!x.nnz && (g == single_group || g == no_group || g == tiled_group))
        x.row_nnz[i] = g == single_group ? prod : 0;
    return g;
}

// Each row's size and group (no_group: nothing to do), each group's row count, the global group's largest size
// and the total. A warp takes 32 consecutive rows, a row a lane; the warp's counts are added once per group.
// With CountProducts each row's products are counted first (by its lane when A(i,:) is short, by the whole
// warp otherwise, by the whole block after the warps' rows when it is longer than long_entries) and written.
// (A warp reads a row 32 entries at a time, each step two dependent loads: 90 µs for a hub of 9000 entries on
// an H100, the whole launch waiting for that one warp.) Counting, the loads' latency is the cost: a bound of
// count_blocks blocks a multiprocessor (without one under half the warps were resident: the contractions'
// counts 8-29% slower under ncu; at 8 blocks, 32 registers, spills), and a grid of as many.
inline constexpr Offset long_entries = 1024;
inline constexpr unsigned count_blocks = 6;  // blocks a multiprocessor counting products (the grid's too)
template <bool CountProducts>
__global__ void __launch_bounds__(block_size, CountProducts ? count_blocks : 1) group_kernel(GroupArgs x) {
    constexpr unsigned max_queued = 16;
    __shared__ unsigned long long hist[group_count], sum;
    __shared__ std::uint64_t queued[max_queued];  // long rows left to the whole block
    __shared__ unsigned n_queued;
    __shared__ Offset part[block_size / 32];
    if (threadIdx.x < group_count) hist[threadIdx.x] = 0;
    if (threadIdx.x == 0) {
        sum = 0;
        n_queued = 0;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {  // the ends the exclusive sums read
        if (!x.nnz) x.row_nnz[x.m] = 0;
        if (CountProducts) x.products[x.m] = 0;
    }
    __syncthreads();
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned long long mine = 0;  // this lane's part of the total
    // A hub row's products (hub_chunk cuts hubs into chunks by them).
    auto hub_products = [&](Offset prod) {
        atomicAdd(&x.stats->hub_products, (unsigned long long)prod);
        atomicMax(&x.stats->hub_max_products, (unsigned long long)prod);
    };
    // Row i of each lane where `row` (its products prod known), a whole warp at once: its size, group and
    // counts (the group counts added once per group a warp).
    auto classify_lanes = [&](bool row, std::uint64_t i, Offset prod) {
        Offset s = 0;
        const unsigned g = row ? classify_row(x, i, prod, s) : no_group;
        if (row) {
            x.size[i] = s;
            x.key[i] = std::uint8_t(g);
            mine += x.nnz ? x.nnz[i] : prod;
            if (g == tiled_group && !x.nnz) hub_products(prod);  // rare
        }
        const unsigned peers = __match_any_sync(full_mask, g);
        if (g != no_group && lane == unsigned(__ffs(peers) - 1)) atomicAdd(&hist[g], (unsigned long long)__popc(peers));
        if (g == global_group) atomicMax(&x.stats->global_max, (unsigned long long)s);  // rare
    };
    // Whether the warp leaves row i (its entries known to be more than long_entries) to the block.
    auto queue = [&](std::uint64_t i) {
        unsigned slot = 0;
        if (lane == 0) slot = atomicAdd(&n_queued, 1u);
        slot = __shfl_sync(full_mask, slot, 0);
        if (slot >= max_queued) return false;
        if (lane == 0) queued[slot] = i;
        return true;
    };
    // Rows w .. w + 31, a lane each (a whole warp calls it).
    auto warp_rows = [&](std::uint64_t w) {
        const std::uint64_t i = w + lane;
        bool row = i < x.m;
        Offset prod = 0;
        if constexpr (CountProducts) {
            constexpr Offset short_row = 16;
            const Offset pa = row ? x.a_off[i] : 0, pe = row ? x.a_off[i + 1] : 0;
            if (pe - pa <= short_row)
                for (Offset p = pa; p < pe; ++p) {
                    const ColIndex k = x.a_cols[p];
                    prod += x.b_off[k + 1] - x.b_off[k];
                }
            for (unsigned longs = __ballot_sync(full_mask, pe - pa > short_row); longs; longs &= longs - 1) {
                const unsigned r = __ffs(longs) - 1;
                const Offset deg = __shfl_sync(full_mask, pe - pa, r);
                if (deg > long_entries && queue(w + r)) {
                    if (lane == r) row = false;  // the block finishes it
                    continue;
                }
                const Offset total = warp_row_products(x.a_off[w + r], x.a_off[w + r + 1], x.a_cols, x.b_off);
                if (lane == r) prod = total;
            }
            if (row) x.products[i] = prod;
        } else {
            prod = row ? x.products[i] : 0;
        }
        classify_lanes(row, i, prod);
    };
    if (CountProducts && !x.lane_rows) {
        // A warp per row: rows of A too long for a lane each, or too few rows to keep lanes of their own busy.
        // Consecutive rows go to different blocks: a block finishes the long rows its warps leave one after
        // another, and hubs often come together (R-MAT's are its first rows). With 8 entries of a long row a
        // thread at once: git_web_ml's contraction's counts 40 and 29 -> 31 and 18 us under ncu.
        // Lane h keeps the warp's h-th row and its count; each 32 are classified at once (by one lane each, a
        // lane a row: the 250-odd instructions of a row's classification took slashdot's count to 0.69 issued a
        // cycle at 9 active lanes a warp).
        std::uint64_t held_row = 0;
        Offset held_prod = 0;
        unsigned held = 0;
        for (std::uint64_t i = blockIdx.x + std::uint64_t(gridDim.x) * warp; i < x.m; i += thread_count() / 32) {
            const Offset pb = x.a_off[i], pe = x.a_off[i + 1];
            if (pe - pb > long_entries && queue(i)) continue;
            const Offset prod = warp_row_products(pb, pe, x.a_cols, x.b_off);
            if (lane == held) {
                held_row = i;
                held_prod = prod;
            }
            if (++held == 32) {
                x.products[held_row] = held_prod;
                classify_lanes(true, held_row, held_prod);
                held = 0;
            }
        }
        if (lane < held) x.products[held_row] = held_prod;
        classify_lanes(lane < held, held_row, held_prod);
    } else if (!CountProducts && x.row_off) {
        // The numeric grouping also writes the rows' exclusive sum (C's row offsets): blocks take tiles of
        // block_size rows in order from a counter, and each tile adds the sums its predecessors have published
        // (decoupled look-back: a tile's own sum is published at once, its prefix once known). Two launches
        // less than a scan of its own, and no wait between the scan and the grouping.
        __shared__ std::uint64_t tile_id;
        __shared__ Offset warp_total[block_size / 32], tile_prefix;
        for (;;) {
            __syncthreads();  // tile_id, warp_total and tile_prefix of the last tile are read
            if (threadIdx.x == 0) tile_id = atomicAdd(&x.stats->tiles_taken, 1ull);
            __syncthreads();
            const std::uint64_t tile = tile_id;
            if (tile * block_size > x.m) break;  // (the offsets run to row m: the total)
            const std::uint64_t w = tile * block_size + warp * 32, i = w + lane;
            if (!x.scan_only) warp_rows(w);
            const Offset cnt = i < x.m ? x.nnz[i] : 0;
            Offset incl = cnt;
            for (unsigned d = 1; d < 32; d <<= 1) {
                const Offset t = __shfl_up_sync(full_mask, incl, d);
                if (lane >= d) incl += t;
            }
            if (lane == 31) warp_total[warp] = incl;
            __syncthreads();
            if (warp == 0) {
                Offset agg = lane < block_size / 32 ? warp_total[lane] : 0;
                for (unsigned d = 16; d > 0; d >>= 1) agg += __shfl_xor_sync(full_mask, agg, d);
                const Offset before = look_back::exclusive(x.row_state, tile, agg);
                if (lane == 0) tile_prefix = before;
            }
            __syncthreads();
            Offset carry = tile_prefix;
            for (unsigned v = 0; v < warp; ++v) carry += warp_total[v];
            if (i <= x.m) x.row_off[i] = carry + incl - cnt;
            if (i == x.m && x.total_out) {
                *x.total_out = carry + incl - cnt;
                __threadfence_system();
            }
        }
    } else {
        for (std::uint64_t w = thread_index() / 32 * 32; w < x.m; w += thread_count()) warp_rows(w);
    }
    if constexpr (CountProducts) {
        // The long rows the warps left, each counted by the whole block.
        __syncthreads();
        const unsigned nq = n_queued < max_queued ? n_queued : max_queued;
        for (unsigned q = 0; q < nq; ++q) {
            const std::uint64_t i = queued[q];
            const Offset pe = x.a_off[i + 1];
            Offset prod = 0;
            constexpr unsigned E = 8;  // entries a thread, their loads at once
            for (Offset p = x.a_off[i] + threadIdx.x * E; p < pe; p += block_size * E) {
                ColIndex k[E];
#pragma unroll
                for (unsigned u = 0; u < E; ++u) k[u] = p + u < pe ? x.a_cols[p + u] : 0;
#pragma unroll
                for (unsigned u = 0; u < E; ++u)
                    if (p + u < pe) prod += x.b_off[k[u] + 1] - x.b_off[k[u]];
            }
            for (unsigned d = 16; d > 0; d >>= 1) prod += __shfl_xor_sync(full_mask, prod, d);
            if (lane == 0) part[warp] = prod;
            __syncthreads();
            if (warp == 0) {  // (classified by its first lane)
                prod = 0;
                for (unsigned w = 0; w < block_size / 32; ++w) prod += part[w];
                if (lane == 0) x.products[i] = prod;
                classify_lanes(lane == 0, i, prod);
            }
            __syncthreads();
        }
    }
    for (unsigned d = 16; d > 0; d >>= 1) mine += __shfl_xor_sync(full_mask, mine, d);
    if (lane == 0 && mine) atomicAdd(&sum, mine);
    __syncthreads();
    if (threadIdx.x < group_count && hist[threadIdx.x]) atomicAdd(&x.stats->counts[threadIdx.x], hist[threadIdx.x]);
    if (threadIdx.x == 0 && sum) atomicAdd(&x.stats->total, sum);
    if (x.scan_n && blockIdx.x == 0) spgemm_detail::block_exclusive_sum<block_size>(x.scan_in, x.scan_out, x.scan_n);
}

// The rows listed group by group (where each group starts: the counts before it). A block takes block_size
// consecutive rows at a time and reserves room for each group's rows among them with one atomic, so a group's
// rows come in runs of ascending rows; the runs' order is whatever the blocks' order was (it changes no result).
// Block 0 first copies the grouping's counts (final once group_kernel has run) to `host`, page-locked host memory,
// then the grouping's number `seq` behind them: the host reads the counts once it sees that number, while the
// rows are still being listed (no copy to queue and wait for: 4-7 us of host time a grouping; no wait for the
// stream: it returned 6-7 us after the GPU was done, on an H200's host, the GPU idle meanwhile).
__global__ void __launch_bounds__(block_size) place_kernel(Index m, const std::uint8_t* key, GroupStats* stats,
                                                           std::uint32_t* rows, GroupStats* host,
                                                           unsigned long long seq) {
    constexpr unsigned warps = block_size / 32;
    __shared__ unsigned long long start[group_count], base[group_count];
    __shared__ unsigned count[warps][group_count + 1];  // the warps' rows per group, then their offsets
    if (blockIdx.x == 0) {
        if (threadIdx.x < group_count) host->counts[threadIdx.x] = stats->counts[threadIdx.x];
        if (threadIdx.x == 32) {
            host->global_max = stats->global_max;
            host->total = stats->total;
            host->hub_products = stats->hub_products;
            host->hub_max_products = stats->hub_max_products;
        }
        __threadfence_system();
        __syncthreads();
        if (threadIdx.x == 0) publish_mark(&host->ready, seq);
    }
    if (threadIdx.x == 0) {
        unsigned long long at = 0;
        for (unsigned g = 0; g < group_count; ++g) {
            start[g] = at;
            at += stats->counts[g];
        }
    }
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (std::uint64_t b0 = std::uint64_t(blockIdx.x) * block_size; b0 < m; b0 += std::uint64_t(gridDim.x) * block_size) {
        const std::uint64_t i = b0 + threadIdx.x;
        const unsigned g = i < m ? key[i] : no_group;
        if (lane < group_count) count[warp][lane] = 0;
        __syncwarp();
        const unsigned peers = __match_any_sync(full_mask, g);
        if (lane == unsigned(__ffs(peers) - 1)) count[warp][g] = __popc(peers);  // no_group: the spare column
        __syncthreads();
        if (threadIdx.x < group_count) {
            unsigned at = 0;
            for (unsigned w = 0; w < warps; ++w) {
                const unsigned c = count[w][threadIdx.x];
                count[w][threadIdx.x] = at;
                at += c;
            }
            base[threadIdx.x] = at ? start[threadIdx.x] + atomicAdd(&stats->cursor[threadIdx.x], (unsigned long long)at) : 0;
        }
        __syncthreads();
        if (g != no_group) rows[base[g] + count[warp][g] + __popc(peers & ((1u << lane) - 1))] = std::uint32_t(i);
        __syncthreads();
    }
}

// C's n entries copied (one launch: two copies cost 4-10 us of host time each).
template <class T>
__global__ void copy_entries_kernel(std::uint64_t n, const ColIndex* cols, const T* vals, ColIndex* out_cols,
                                    T* out_vals) {
    for (std::uint64_t i = thread_index(); i < n; i += thread_count()) {
        out_cols[i] = cols[i];
        out_vals[i] = vals[i];
    }
}

// out[r] = values[rows[r]] for the rows of one group.
__global__ void gather_kernel(std::uint64_t n, const std::uint32_t* rows, const Offset* values, Offset* out) {
    for (std::uint64_t r = thread_index(); r < n; r += thread_count()) out[r] = values[rows[r]];
}

// Rows of one entry A(i,k): C(i,:) = A(i,k) ⊗ B(k,:), in B's column order (a warp per row: warp w of warps).
template <class T, class Sr>
__device__ __forceinline__ void single_rows(const RowArgs& x, const Sr& sr, std::uint64_t w, std::uint64_t warps) {
    const unsigned lane = threadIdx.x & 31;
    const T* const a_vals = static_cast<const T*>(x.a_vals);
    const T* const b_vals = static_cast<const T*>(x.b_vals);
    T* const c_vals = static_cast<T*>(x.c_vals);
    for (std::uint64_t r = w; r < x.nrows; r += warps) {
        const std::uint32_t row = x.rows[r];
        const Offset p = x.a_off[row], c0 = x.c_off[row];
        const ColIndex k = x.a_cols[p];
        const T a = a_vals[p];
        const Offset qb = x.b_off[k], qe = x.b_off[k + 1];
        for (Offset q = qb + lane; q < qe; q += 32) {
            x.c_cols[c0 + (q - qb)] = x.b_cols[q];
            c_vals[c0 + (q - qb)] = sr.template multiply<T>(a, b_vals[q]);
        }
    }
}

// A phase's light rows in one launch (a launch costs about 4 us of host time on an H100's host, about what these
// rows take on the GPU in a small product): groups 0 and 1 and (numeric phase) the rows of one entry, a warp
// each. In a small product (the launches would cost more than the heavy rows' blocks lose by sharing one shape)
// also the groups 2 .. Merged - 1, a block a row (group 2 by 256 threads, not its own launch's 128), heaviest
// first. part[g]: group g's rows (shared_groups: the rows of one entry); end[k]: where the blocks of groups 4,
// 3, 2, 1, 0 end, in this order, the rest the rows of one entry. Shared memory: the largest layout launched.
// Six blocks a multiprocessor (the numeric kernel took 48 registers, five blocks: its launch 5-10% slower under
// ncu, the contractions' light rows at 45% occupancy against 54%).
struct LightArgs {
    RowArgs part[shared_groups + 1];
    unsigned end[shared_groups] = {};
};
inline constexpr GroupShape light_shape(unsigned g) {
    return g == 2 ? GroupShape{group_shapes[2].limit, block_size, block_size, group_shapes[2].slots} : group_shapes[g];
}
template <class T, class Sr, bool Values, unsigned Merged>
__global__ void __launch_bounds__(block_size, 6) light_rows_kernel(const LightArgs l, const Sr sr) {
    constexpr GroupShape s0 = light_shape(0), s1 = light_shape(1), s2 = light_shape(2), s3 = light_shape(3),
                         s4 = light_shape(4);
    static_assert(s0.block == block_size && s1.block == block_size && s3.block == block_size &&
                  s4.block == block_size);
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned b = blockIdx.x;
    if constexpr (Merged > 4)
        if (b < l.end[0]) return rows_body<T, Sr, Values, s4.g, s4.block, s4.slots>(l.part[4], sr, b, l.end[0], smem);
    if constexpr (Merged > 3)
        if (b < l.end[1])
            return rows_body<T, Sr, Values, s3.g, s3.block, s3.slots>(l.part[3], sr, b - l.end[0], l.end[1] - l.end[0],
                                                                     smem);
    if constexpr (Merged > 2)
        if (b < l.end[2])
            return rows_body<T, Sr, Values, s2.g, s2.block, s2.slots>(l.part[2], sr, b - l.end[1], l.end[2] - l.end[1],
                                                                     smem);
    if (b < l.end[3]) {
        rows_body<T, Sr, Values, s1.g, s1.block, s1.slots>(l.part[1], sr, b - l.end[2], l.end[3] - l.end[2], smem);
    } else if (b < l.end[4]) {
        rows_body<T, Sr, Values, s0.g, s0.block, s0.slots>(l.part[0], sr, b - l.end[3], l.end[4] - l.end[3], smem);
    } else if constexpr (Values) {
        constexpr unsigned warps = block_size / 32;
        const std::uint64_t first = std::uint64_t(b - l.end[4]) * warps + threadIdx.x / 32;
        single_rows<T, Sr>(l.part[shared_groups], sr, first, std::uint64_t(gridDim.x - l.end[4]) * warps);
    }
}

// The rows being sorted copied out of C, one after another (a block per row): cols, values and positions.
template <class T>
__global__ void stage_rows_kernel(std::uint64_t nrows, const std::uint32_t* rows, const Offset* pos, Offset base,
                                  const Offset* c_off, const ColIndex* c_cols, const T* c_vals, ColIndex* s_cols,
                                  T* s_vals, std::uint32_t* s_idx) {
    for (std::uint64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const Offset b = pos[r] - base, e = pos[r + 1] - base, c0 = c_off[rows[r]];
        for (Offset t = b + threadIdx.x; t < e; t += blockDim.x) {
            s_cols[t] = c_cols[c0 + (t - b)];
            s_vals[t] = c_vals[c0 + (t - b)];
            s_idx[t] = std::uint32_t(t);
        }
    }
}

// The sorted rows back into C.
template <class T>
__global__ void place_sorted_kernel(std::uint64_t nrows, const std::uint32_t* rows, const Offset* pos, Offset base,
                                    const ColIndex* sorted_cols, const std::uint32_t* perm, const T* s_vals,
                                    const Offset* c_off, ColIndex* c_cols, T* c_vals) {
    for (std::uint64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const Offset b = pos[r] - base, e = pos[r + 1] - base, c0 = c_off[rows[r]];
        for (Offset t = b + threadIdx.x; t < e; t += blockDim.x) {
            c_cols[c0 + (t - b)] = sorted_cols[t];
            c_vals[c0 + (t - b)] = s_vals[perm[t]];
        }
    }
}

// ------------------------------------------------------------------ host side

using spgemm_detail::exclusive_sum;
using spgemm_detail::Scratch;

unsigned env_unsigned(const char* name, unsigned fallback) {
    if (const char* e = std::getenv(name); e && *e) {
        char* end = nullptr;
        const unsigned long v = std::strtoul(e, &end, 10);
        if (end != e && *end == '\0') return unsigned(v);
    }
    return fallback;
}

int optin_shared_bytes(int device) {
    int v = 0;
    check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "cudaDeviceGetAttribute");
    return v;
}

// Shared memory of a block of group k (a shared-memory group).
template <bool Values, std::size_t VSIZE>
std::size_t group_bytes(unsigned k) {
    constexpr auto& s = group_shapes;
    switch (k) {
        case 0: return group_layout<Values, VSIZE, s[0].g, s[0].block, s[0].slots>().bytes;
        case 1: return group_layout<Values, VSIZE, s[1].g, s[1].block, s[1].slots>().bytes;
        case 2: return group_layout<Values, VSIZE, s[2].g, s[2].block, s[2].slots>().bytes;
        case 3: return group_layout<Values, VSIZE, s[3].g, s[3].block, s[3].slots>().bytes;
        default: return group_layout<Values, VSIZE, s[4].g, s[4].block, s[4].slots>().bytes;
    }
}

// The number of leading shared-memory groups whose blocks fit the device.
template <bool Values, std::size_t VSIZE>
unsigned shared_groups_enabled(int device) {
    const std::size_t optin = std::size_t(optin_shared_bytes(device));
    unsigned g = 0;
    while (g < shared_groups && group_bytes<Values, VSIZE>(g) <= optin) ++g;
    return g;
}

// Lets Kernel take `bytes` of dynamic shared memory: set once per device (devices under 64; a call costs about
// 1 us of host time, a product launches a dozen kernels).
template <auto Kernel>
void allow_shared(std::size_t bytes) {
    if (bytes <= 48 * 1024) return;
    static std::atomic<std::uint64_t> done{0};
    int device = 0;
    check(cudaGetDevice(&device), "SpGEMM: cudaGetDevice");
    const std::uint64_t bit = device < 64 ? std::uint64_t(1) << device : 0;
    if (done.load(std::memory_order_relaxed) & bit) return;
    check(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
          "SpGEMM: cudaFuncSetAttribute");
    done.fetch_or(bit, std::memory_order_relaxed);
}

template <class T, class Sr, bool Values, unsigned G, unsigned BLOCK, unsigned S>
void launch_rows(const RowArgs& x, const Sr& sr, std::uint64_t blocks, cudaStream_t stream) {
    constexpr std::size_t bytes = group_layout<Values, sizeof(T), G, BLOCK, S>().bytes;
    constexpr auto kernel = rows_kernel<T, Sr, Values, G, BLOCK, S>;
    allow_shared<kernel>(bytes);
    kernel<<<unsigned(std::min<std::uint64_t>(blocks, 0x7FFFFFFF)), BLOCK, bytes, stream>>>(x, sr);
    check_launch(Values ? "SpGEMM: numeric kernel" : "SpGEMM: symbolic kernel");
}

// Group g of 2 and up (groups 0 and 1: launch_light); global_group and up: the global tables.
template <class T, class Sr, bool Values>
void launch_group(unsigned g, const RowArgs& x, const Sr& sr, std::uint64_t blocks, cudaStream_t stream) {
    constexpr auto& s = group_shapes;
    switch (g) {
        case 2: return launch_rows<T, Sr, Values, s[2].g, s[2].block, s[2].slots>(x, sr, blocks, stream);
        case 3: return launch_rows<T, Sr, Values, s[3].g, s[3].block, s[3].slots>(x, sr, blocks, stream);
        case 4: return launch_rows<T, Sr, Values, s[4].g, s[4].block, s[4].slots>(x, sr, blocks, stream);
        default: return launch_rows<T, Sr, Values, global_block, global_block, 0>(x, sr, blocks, stream);
    }
}

// Launches light_rows_kernel over groups 0 and 1 of gr (and its rows of one entry, in the numeric phase), x
// the phase's arguments; nothing when they have no rows.
struct Grouping {
    void reserve(Index rows_, Carve& carve) {
        m = rows_;
        carve.take(size, m);
        carve.take(rows, m);
        carve.take(keys, m);
    }
    Index m = 0;
    GroupStats* stats = nullptr;
    Offset* size = nullptr;
    std::uint32_t* rows = nullptr;  // filled by place_rows
    std::uint8_t* keys = nullptr;   // each row's group
    std::array<unsigned long long, group_count> counts{}, start{};
    unsigned long long global_max = 0;  // the largest size in the global group
    unsigned long long total = 0;  // products (symbolic) or entries (numeric) of all rows
    unsigned long long hub_products = 0, hub_max_products = 0;  // as in GroupStats
};

// Products up to which a product's heavier groups of few rows join the light rows' launch (HashProduct::merged):
// HYBLA_SPGEMM_MERGE when set (tests), else 2^23. Below, a launch's 4 us of host time is more than such rows lose
// by a shape not their own (group 2) and the light rows by the largest group's shared memory.
std::uint64_t merge_products() {
    if (const char* e = std::getenv("HYBLA_SPGEMM_MERGE"); e && *e) return std::strtoull(e, nullptr, 10);
    return std::uint64_t(1) << 23;
}

// Shared memory of the light rows' layout of group g.
template <bool Values, std::size_t VSIZE, unsigned g>
constexpr std::size_t light_bytes() {
    constexpr GroupShape s = light_shape(g);
    return group_layout<Values, VSIZE, s.g, s.block, s.slots>().bytes;
}

// The shared-memory groups a small product's phase launches with its light rows: the symbolic phase all (40
// registers a thread), the numeric one groups 0 to 2 (at most 64 registers; the kernel takes those of its
// heaviest group's sort: with group 3, 118 for floats of a built-in semiring, 2 blocks a multiprocessor for
// the light rows where 5 fit).
template <bool Values>
constexpr unsigned merged_groups() {
    return Values ? 3 : shared_groups;
}

// The light rows of grouping gr in one launch, with the groups of bit mask `merged` too (groups 0 and 1 always,
// others below merged_groups<Values>()). Returns whether it launched.
template <class T, class Sr, bool Values>
bool launch_light(const RowArgs& x, const Grouping& gr, unsigned merged, const Sr& sr, int device,
                  cudaStream_t stream) {
    constexpr std::array<std::size_t, shared_groups> bytes_of = {
        light_bytes<Values, sizeof(T), 0>(), light_bytes<Values, sizeof(T), 1>(), light_bytes<Values, sizeof(T), 2>(),
        light_bytes<Values, sizeof(T), 3>(), light_bytes<Values, sizeof(T), 4>()};
    LightArgs l;
    std::uint64_t blocks[shared_groups] = {}, all = 0;
    std::size_t bytes = 0;
    for (unsigned g = 0; g <= shared_groups; ++g) {
        const unsigned group = g < shared_groups ? g : single_group;
        l.part[g] = x;
        l.part[g].rows = gr.rows + gr.start[group];
        l.part[g].nrows = (merged >> g & 1) || (Values && g == shared_groups) ? gr.counts[group] : 0;
        if (g < shared_groups && l.part[g].nrows) {
            const GroupShape s = light_shape(g);
            blocks[g] = (l.part[g].nrows + s.block / s.g - 1) / (s.block / s.g);
            bytes = std::max(bytes, bytes_of[g]);
        }
    }
    for (unsigned k = 0; k < shared_groups; ++k) {  // groups 4, 3, 2, 1, 0
        all += blocks[shared_groups - 1 - k];
        l.end[k] = unsigned(std::min<std::uint64_t>(all, 0x7FFFFFFF));
    }
    all += (l.part[shared_groups].nrows + block_size / 32 - 1) / (block_size / 32);
    if (all == 0) return false;
    const unsigned grid = unsigned(std::min<std::uint64_t>(all, 0x7FFFFFFF));
    if (merged > 3) {
        // (The attribute is set once: for the largest layout of a merged group the device holds.)
        constexpr unsigned M = merged_groups<Values>();
        std::size_t most = 0;
        const unsigned enabled = std::min(M, shared_groups_enabled<Values, sizeof(T)>(device));
        for (unsigned g = 0; g < enabled; ++g) most = std::max(most, bytes_of[g]);
        constexpr auto kernel = light_rows_kernel<T, Sr, Values, M>;
        allow_shared<kernel>(most);
        kernel<<<grid, block_size, bytes, stream>>>(l, sr);
    } else {
        constexpr auto kernel = light_rows_kernel<T, Sr, Values, 2>;
        allow_shared<kernel>(std::max(bytes_of[0], bytes_of[1]));
        kernel<<<grid, block_size, bytes, stream>>>(l, sr);
    }
    check_launch(Values ? "SpGEMM: numeric kernel (light rows)" : "SpGEMM: symbolic kernel (light rows)");
    return true;
}

__global__ void split_kernel(const SplitArgs s) { s.run(thread_index(), thread_count()); }

template <class T, class Sr, bool Values>
void launch_tiles(const RowArgs& x, const TileArgs& t, const Sr& sr, int device, cudaStream_t stream) {
    constexpr std::size_t bytes = tile_bytes<Values, sizeof(T)>();
    constexpr auto kernel = tile_rows_kernel<T, Sr, Values>;
    allow_shared<kernel>(bytes);
    const std::uint64_t blocks = std::min<std::uint64_t>(t.jobs, 8 * std::uint64_t(multiprocessor_count(device)));
    kernel<<<unsigned(blocks), tile_block, bytes, stream>>>(x, t, sr);
    check_launch(Values ? "SpGEMM: numeric tile kernel" : "SpGEMM: symbolic tile kernel");
}

// Products per row (HYBLA_SPGEMM_HUB, default half a tile's columns) above which an unmasked row is a hub,
// multiplied by tiles of columns. A block per row takes 2048-4096 products in 8-16 steps of 8 barriers each,
// alone on its multiprocessor, and its launch lasts as long as its heaviest row; the tiles' jobs (chunks of the
// row where the hubs are few) spread such rows over the device. At 1024 a hub's job is mostly its tile's fixed
// cost (R-MAT 16's contraction four times slower).
Offset tile_products() {
    if (const char* e = std::getenv("HYBLA_SPGEMM_HUB"); e && *e) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(e, &end, 10);
        if (end != e && *end == '\0' && v > 0) return v;
    }
    return max_tile / 2;
}

// Columns of a tile of the hub rows: HYBLA_SPGEMM_TILE (tests), at most max_tile.
unsigned tile_width() {
    const unsigned w = env_unsigned("HYBLA_SPGEMM_TILE", max_tile);
    return std::clamp(w, 1u, max_tile);
}

// Rows listed by group, and where each group starts. The device arrays are the caller's (reserve; stats set
// and zeroed by the caller before launch_grouping).

// Blocks of the grouping kernels: at most a few per SM (as many as fit at once, where they count products), as
// each block adds its counts to the same few words.
unsigned grouping_blocks(std::uint64_t threads, const Context& ctx, unsigned per_sm = 8) {
    return std::min<unsigned>(grid_for(threads), per_sm * multiprocessor_count(ctx.device()));
}

// The page-locked host memory place_kernel copies a grouping's counts to: one per host thread, as a thread reads
// each grouping's counts before it launches the next.
GroupStats* host_stats(int device) {
    struct Cell {
        HostCell cell;
        ~Cell() { host_cell_destroy(cell); }
    };
    thread_local Cell c;
    if (!c.cell.data) c.cell = host_cell_create(sizeof(GroupStats), device);
    return static_cast<GroupStats*>(c.cell.data);
}

// The number of the host thread's last grouping (place_kernel writes it behind the counts).
unsigned long long& grouping_seq() {
    thread_local unsigned long long seq = 0;
    return seq;
}

// The event the host waits on behind the rows' sum of a small product (HashProduct::finish).
cudaEvent_t summed_event(int device) { return static_cast<cudaEvent_t>(thread_event(device, 0)); }

// Lists the rows group by group (rows), after launch_grouping.
void place_rows(Grouping& grp, const Context& ctx) {
    const Index m = grp.m;
    place_kernel<<<grouping_blocks(m, ctx), block_size, 0, stream_of(ctx)>>>(m, grp.keys, grp.stats, grp.rows,
                                                                            host_stats(ctx.device()),
                                                                            ++grouping_seq());
    check_launch("SpGEMM: place kernel");
}

// Groups the rows (group_kernel) into out (reserved, its stats zeroed) and lists them by group (place_rows);
// read_groups brings the counts to the host.
void launch_grouping(const GroupArgs& proto, bool count_products, Grouping& out, const Context& ctx) {
    const cudaStream_t stream = stream_of(ctx);
    GroupArgs x = proto;
    x.size = out.size;
    x.key = out.keys;
    x.stats = out.stats;
    const unsigned blocks = grouping_blocks(count_products && !proto.lane_rows ? proto.m * 32 : proto.m, ctx,
                                            count_products ? count_blocks : 8);
    if (count_products) group_kernel<true><<<blocks, block_size, 0, stream>>>(x);
    else group_kernel<false><<<blocks, block_size, 0, stream>>>(x);
    check_launch("SpGEMM: group kernel");
    place_rows(out, ctx);
}

// The counts of launch_grouping on the host, once place_kernel has copied them there (engine/cuda/host_mark.cuh).
void read_groups(Grouping& out, const Context& ctx) {
    const GroupStats& host = *host_stats(ctx.device());
    wait_for_mark(&host.ready, grouping_seq(), stream_of(ctx), "SpGEMM: waiting for the row counts");
    unsigned long long at = 0;
    for (unsigned g = 0; g < group_count; ++g) {
        out.counts[g] = host.counts[g];
        out.start[g] = at;
        at += host.counts[g];
    }
    out.global_max = host.global_max;
    out.total = host.total;
    out.hub_products = host.hub_products;
    out.hub_max_products = host.hub_max_products;
}

// The device memory free at a call, asked for once and only when needed: asking costs about 10 us of host time
// (cudaMemGetInfo), as much as a small product's kernels. What needs at most `small` bytes is allocated without
// asking (an allocation that still fails throws OutOfMemory).
class FreeMemory {
public:
    static constexpr std::uint64_t small = std::uint64_t(64) << 20;
    explicit FreeMemory(int device) : device_(device) {}
    std::uint64_t bytes() {
        if (!known_) {
            bytes_ = available_device_bytes(device_);
            known_ = true;
        }
        return bytes_;
    }

private:
    int device_;
    bool known_ = false;
    std::uint64_t bytes_ = 0;
};

// Chunks of the hub rows' entries of A, so that no hub holds up the tile launch: the products a chunk should
// hold such that all the chunks' jobs about fill the tile kernel's blocks (8 a multiprocessor; at least
// min_chunk_products; a hub has at most max_chunks chunks and one per entry). 0: no hub is chunked. With fewer
// (hub, tile) pairs than multiprocessors (some would have no job) a hub of more products than a chunk is
// chunked; with more, only a hub of more than imbalance chunks, and only while the jobs' partial tiles take
// at most FreeMemory::small bytes (R-MAT 16's contraction by mcl's clusters with hubs of over 1536 products:
// 246 pairs, one of them the giant cluster's, its numeric tiles 1.7 ms unchunked). Otherwise the chunks'
// partials and fold cost more than they even out (musae_facebook's 378 pairs, symbolic tiles 55 -> 77 us).
// HYBLA_SPGEMM_CHUNK sets the products per chunk (tests; 0: none).
inline constexpr unsigned max_chunks = 64;
inline constexpr Offset min_chunk_products = 2048;
inline constexpr Offset imbalance = 8;
Offset hub_chunk(const Grouping& g, std::uint64_t tiles, std::size_t value_bytes, int device) {
    const std::uint64_t hubs = g.counts[tiled_group];
    if (hubs == 0) return 0;
    if (std::getenv("HYBLA_SPGEMM_CHUNK")) return env_unsigned("HYBLA_SPGEMM_CHUNK", 0);
    const std::uint64_t sms = multiprocessor_count(device), blocks = 8 * sms;
    const Offset chunk = std::max<Offset>(min_chunk_products, (g.hub_products * tiles + blocks - 1) / blocks);
    if (hubs * tiles < sms) return chunk < g.hub_max_products ? chunk : 0;
    const std::uint64_t jobs = tiles * (hubs + g.hub_products / chunk);  // as TileArgs::jobs bounds them
    const bool small = jobs <= FreeMemory::small / (max_tile * (value_bytes + 1));
    return small && g.hub_max_products > imbalance * chunk ? chunk : 0;
}

std::uint64_t pow2_at_least(std::uint64_t v) {
    std::uint64_t s = 32;
    while (s < v) s <<= 1;
    return s;
}

// Global tables for the rows of the global group: blocks x slots, as many blocks (up to two per SM) as a
// quarter of the free memory holds. Fails naming the bytes when not even one fits.
struct GlobalTables {
    std::uint64_t blocks = 0, slots = 0;
};
GlobalTables plan_global(const Grouping& grp, std::size_t bytes_per_slot, const Context& ctx) {
    GlobalTables t;
    const std::uint64_t rows = grp.counts[global_group];
    if (rows == 0) return t;
    t.slots = pow2_at_least(2 * grp.global_max);
    const std::uint64_t per_block = t.slots * bytes_per_slot;
    if (t.slots > (std::uint64_t(1) << 31))
        throw OutOfMemory("SpGEMM: a row of " + std::to_string(grp.global_max) +
                              " columns needs a hash table of " + std::to_string(per_block) + " bytes",
                          per_block);
    const std::uint64_t free_bytes = available_device_bytes(ctx.device());
    const std::uint64_t fit = free_bytes / 4 / per_block;
    if (fit == 0 && per_block > free_bytes)
        throw OutOfMemory("SpGEMM: a row's hash table needs " + std::to_string(per_block) + " bytes, " +
                              std::to_string(free_bytes) + " are free",
                          per_block);
    t.blocks = std::clamp<std::uint64_t>(std::min<std::uint64_t>(fit, 2 * std::uint64_t(multiprocessor_count(ctx.device()))), 1,
                                         rows);
    return t;
}

// Sorts the rows rows[0, nrows) of C by column, stably (entries of one column keep their order), in batches of
// at most 2^27 entries: each batch is copied out, sorted as segments (CUB, keys and positions only) and put back.
template <class T>
void sort_rows(const std::uint32_t* rows, std::uint64_t nrows, const Offset* row_nnz, const Offset* c_off,
               ColIndex* c_cols, T* c_vals, Scratch& scratch, const Context& ctx) {
    if (nrows == 0) return;
    const cudaStream_t stream = stream_of(ctx);
    Array<Offset> len(nrows + 1, ctx), pos_dev(nrows + 1, ctx);
    gather_kernel<<<grid_for(nrows), block_size, 0, stream>>>(nrows, rows, row_nnz, len.data());
    check_launch("SpGEMM: gather kernel");
    check(cudaMemsetAsync(len.data() + nrows, 0, sizeof(Offset), stream), "SpGEMM: memset");
    exclusive_sum(len.data(), pos_dev.data(), nrows + 1, scratch, ctx);
    std::vector<Offset> pos(nrows + 1);
    cuda::copy(pos.data(), pos_dev.data(), (nrows + 1) * sizeof(Offset), CopyKind::device_to_host, ctx.stream());
    Offset biggest = 0;
    for (std::uint64_t r = 0; r < nrows; ++r) biggest = std::max(biggest, pos[r + 1] - pos[r]);
    if (biggest > max_sort_items)
        throw InvalidValue("SpGEMM: a row of " + std::to_string(biggest) + " entries, more than the " +
                           std::to_string(max_sort_items) + " one sort can take");
    const std::uint64_t batch_items = std::max<std::uint64_t>(std::uint64_t(1) << 27, biggest);
    const std::uint64_t most = std::min<std::uint64_t>(pos[nrows], batch_items);
    Array<ColIndex> s_cols(most, ctx), sorted(most, ctx);
    Array<T> s_vals(most, ctx);
    Array<std::uint32_t> idx(most, ctx), perm(most, ctx);
    for (const RowRange& part : row_batches(pos, batch_items, max_sort_rows,
                                            "SpGEMM: sorting a row")) {
        const Offset base = pos[part.begin], items = pos[part.end] - base;
        const std::uint64_t segs = part.end - part.begin;
        if (items > s_cols.size()) {
            s_cols = Array<ColIndex>(items, ctx);
            sorted = Array<ColIndex>(items, ctx);
            s_vals = Array<T>(items, ctx);
            idx = Array<std::uint32_t>(items, ctx);
            perm = Array<std::uint32_t>(items, ctx);
        }
        const unsigned blocks = unsigned(std::min<std::uint64_t>(segs, 65535));
        stage_rows_kernel<T><<<blocks, block_size, 0, stream>>>(segs, rows + part.begin, pos_dev.data() + part.begin,
                                                                base, c_off, c_cols, c_vals, s_cols.data(),
                                                                s_vals.data(), idx.data());
        check_launch("SpGEMM: staging rows to sort");
        auto rel = [base] __host__ __device__(Offset o) { return o - base; };
        auto begins = thrust::make_transform_iterator(pos_dev.data() + part.begin, rel);
        auto ends = thrust::make_transform_iterator(pos_dev.data() + part.begin + 1, rel);
        std::size_t bytes = 0;
        check(cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, s_cols.data(), sorted.data(), idx.data(), perm.data(),
                                                  std::int64_t(items), std::int64_t(segs), begins, ends, stream),
              "SpGEMM: sort size");
        check(cub::DeviceSegmentedSort::StableSortPairs(scratch.get(bytes), bytes, s_cols.data(), sorted.data(), idx.data(),
                                                  perm.data(), std::int64_t(items), std::int64_t(segs), begins, ends,
                                                  stream),
              "SpGEMM: sorting rows by column");
        place_sorted_kernel<T><<<blocks, block_size, 0, stream>>>(segs, rows + part.begin, pos_dev.data() + part.begin,
                                                                  base, sorted.data(), perm.data(), s_vals.data(), c_off,
                                                                  c_cols, c_vals);
        check_launch("SpGEMM: placing sorted rows");
    }
}

// HYBLA_TRACE: milliseconds since the last mark, the stream waited for (tracing only).
// The launches of one phase side by side. Each group's launch (and the hub tiles') writes rows no other launch
// writes, so they need not wait for one another: the first goes on the call's stream, the others on side
// streams that wait for what the call's stream had queued before them, and join() makes the call's stream wait
// for them all. Anything a side stream reads or writes must be allocated before the fork and freed after the
// join (the memory is stream-ordered on the call's stream). Off (every launch on the call's stream) when the
// trace times each launch. The side streams and events are kept per host thread and device.
class Fork {
public:
    static constexpr unsigned side_count = group_count - 1;
    Fork(cudaStream_t main, int device, bool on) : main_(main), device_(device), on_(on) {}
    Fork(const Fork&) = delete;
    Fork& operator=(const Fork&) = delete;
    ~Fork() {
        // After an exception the call's frees must still follow the launches; a destructor does not throw.
        if (used_) join_streams(false);
    }
    // The stream for the next launch.
    cudaStream_t next() {
        if (!on_ || launches_ == 0) {
            if (on_) check(cudaEventRecord(sides().forked, main_), "SpGEMM: cudaEventRecord");
            ++launches_;
            return main_;
        }
        Sides& sd = sides();
        const unsigned k = (launches_++ - 1) % side_count;
        if (!(used_ & (1u << k))) {
            check(cudaStreamWaitEvent(sd.stream[k], sd.forked, 0), "SpGEMM: cudaStreamWaitEvent");
            used_ |= 1u << k;
        }
        return sd.stream[k];
    }
    void join() {
        join_streams(true);
        launches_ = 0;
    }

private:
    struct Sides {
        std::array<cudaStream_t, side_count> stream{};
        std::array<cudaEvent_t, side_count> done{};
        cudaEvent_t forked = nullptr;
    };
    Sides& sides() {
        thread_local std::vector<Sides> per_device;
        if (per_device.size() <= std::size_t(device_)) per_device.resize(device_ + 1);
        Sides& sd = per_device[device_];
        if (!sd.forked) {
            for (unsigned k = 0; k < side_count; ++k) {
                check(cudaStreamCreateWithFlags(&sd.stream[k], cudaStreamNonBlocking), "SpGEMM: cudaStreamCreate");
                check(cudaEventCreateWithFlags(&sd.done[k], cudaEventDisableTiming), "SpGEMM: cudaEventCreate");
            }
            check(cudaEventCreateWithFlags(&sd.forked, cudaEventDisableTiming), "SpGEMM: cudaEventCreate");
        }
        return sd;
    }
    // The call's stream waits for every side stream used (the sides exist once one is used). report: an error
    // is thrown, else left to the next check.
    void join_streams(bool report) {
        if (!used_) return;
        Sides& sd = sides();
        cudaError_t e = cudaSuccess;
        for (unsigned k = 0; k < side_count; ++k)
            if (used_ & (1u << k)) {
                if (e == cudaSuccess) e = cudaEventRecord(sd.done[k], sd.stream[k]);
                if (e == cudaSuccess) e = cudaStreamWaitEvent(main_, sd.done[k], 0);
            }
        used_ = 0;
        if (report) check(e, "SpGEMM: joining the side streams");
    }

    cudaStream_t main_;
    int device_;
    bool on_;
    unsigned launches_ = 0, used_ = 0;
};

class PhaseClock {
public:
    explicit PhaseClock(cudaStream_t s) : stream_(s) { mark(); }
    double mark() {
        if (!trace_enabled()) return 0;
        check(cudaStreamSynchronize(stream_), "SpGEMM: timing");
        const auto now = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
        last_ = now;
        return ms;
    }

private:
    cudaStream_t stream_;
    std::chrono::steady_clock::time_point last_;
};

// A CSR operand (device arrays) and a CSR result.
template <class T>
struct Csr {
    Index rows = 0, cols = 0;
    const Offset* off = nullptr;
    const ColIndex* idx = nullptr;
    const T* vals = nullptr;
    Offset nnz = 0;
};
template <class T>
struct CsrResult {
    Offset nnz = 0;  // 0: the product is empty (the arrays are unset)
    Array<Offset> off;
    Array<ColIndex> cols;
    Array<T> vals;
};

template <class T>
Csr<T> csr_of(const Matrix<T>& a) {
    return {a.nrows(), a.ncols(), a.storage_offsets().data(), a.storage_indices().data(), a.storage_values().data(),
            a.nvals()};
}

// The symbolic and numeric phases for C = A ⊕.⊗ B (under the mask), in two steps: group() counts each row's
// products (unless the caller has them) and groups the rows for the symbolic phase, the first wait for the
// stream, after which the caller may decide not to go on (ESC, batches); finish() runs the symbolic kernels,
// groups the rows again by their exact counts (the second wait: the entries of C), allocates C once and runs the
// numeric kernels. Nothing else waits for the GPU, except for rows in global tables (sorted afterwards).
template <class T, class Sr>
class HashProduct {
public:
    // products: each row's intermediate products when the caller has them, else where they are written (with
    // products[rows] = 0, ready for an exclusive sum). free: the device memory free at the call.
    HashProduct(const Csr<T>& a, const Csr<T>& b, const Sr& sr, const MaskPattern* mask, Offset* products,
                bool products_given, FreeMemory& free, const Context& ctx)
        : a_(a), b_(b), sr_(sr), ctx_(ctx), products_given_(products_given), clock_(stream_of(ctx)),
          c_off_(a.rows + 1, ctx), scratch_(ctx), rows_carve_(ctx, "SpGEMM: temporaries") {
        const Index m = a.rows, n = b.cols;
        // Each row's count and both groupings in one allocation.
        rows_carve_.take(row_nnz_, m + 1);
        rows_carve_.take(stats_, 2);
        rows_carve_.take(row_state_, m / block_size + 1);
        sym_.reserve(m, rows_carve_);
        num_.reserve(m, rows_carve_);
        rows_carve_.allocate();
        sym_.stats = stats_;
        num_.stats = stats_ + 1;
        const unsigned min_group = std::min(env_unsigned("HYBLA_SPGEMM_MIN_GROUP", 0), global_group);
        x_.a_off = a.off;
        x_.a_cols = a.idx;
        x_.a_vals = a.vals;
        x_.b_off = b.off;
        x_.b_cols = b.idx;
        x_.b_vals = b.vals;
        x_.m_off = mask ? mask->offsets : nullptr;
        x_.m_cols = mask ? mask->cols : nullptr;
        x_.complement = mask && mask->complement;
        x_.ranged = env_unsigned("HYBLA_SPGEMM_RANGED", 1) != 0;
        x_.col_bits = unsigned(std::bit_width(std::uint64_t(n)));
        x_.products = products;  // (products[m] and row_nnz_ are set by the symbolic grouping)
        // Unmasked hub rows go to tiles when B's split table fits an eighth of the free memory.
        width_ = tile_width();
        tiles_ = (n + width_ - 1) / width_;
        const std::uint64_t split_bytes = b.rows * (tiles_ + 1) * sizeof(Offset);
        const bool tiling = !mask && (split_bytes <= FreeMemory::small / 8 || split_bytes <= free.bytes() / 8);
        // A lane counts a row's products where rows are many and short (road networks), a warp elsewhere.
        const bool lane_rows = m >= (Index(1) << 16) && a.nnz <= 8 * std::uint64_t(m);
        gp_ = GroupArgs{m,         n,        lane_rows,     a.off, a.idx, b.off, products, nullptr,
                        x_.m_off, x_.complement, shared_groups_enabled<false, sizeof(NoValue)>(ctx.device()),
                        min_group, tiling ? tile_products() : 0};
        gp_.row_nnz = row_nnz_;
    }

    // Groups the rows for the symbolic phase and lists them by group (launched before the wait, while the host
    // would only wait); returns the product's intermediate products (all rows').
    Offset group() {
        // (Both groupings' counts and the numeric one's scan states, one after the other.)
        const auto zero = reinterpret_cast<const char*>(row_state_ + a_.rows / block_size + 1) -
                          reinterpret_cast<const char*>(stats_);
        check(cudaMemsetAsync(stats_, 0, std::size_t(zero), stream_of(ctx_)), "SpGEMM: memset");
        launch_grouping(gp_, !products_given_, sym_, ctx_);
        read_groups(sym_, ctx_);
        chunk_ = hub_chunk(sym_, tiles_, sizeof(T), ctx_.device());
        merge_ = sym_.total <= merge_products();
        setup_ms_ += clock_.mark();
        return sym_.total;
    }
    CsrResult<T> finish() {
        const Index m = a_.rows, n = b_.cols;
        const cudaStream_t stream = stream_of(ctx_);
        CsrResult<T> out{0, Array<Offset>(0, ctx_), Array<ColIndex>(0, ctx_), Array<T>(0, ctx_)};
        std::array<double, group_count> sym_ms{}, num_ms{};
        RowArgs x = x_;

        // Symbolic phase: each row's distinct columns, grouped by an upper bound of them.
        x.size = sym_.size;
        x.row_nnz = row_nnz_;
        // The symbolic phase's temporaries (and the tiles' that the numeric phase reads) in one allocation.
        Carve sym_carve(ctx_, "SpGEMM: temporaries");
        Offset* job_words = nullptr;  // each pair's count, a zero for the sum, the tile kernels' next jobs (2)
        Offset *split = nullptr, *chunk_bounds = nullptr, *job_off = nullptr;
        std::uint64_t* job_start = nullptr;
        TileArgs tx;
        tx.tiles = unsigned(tiles_);
        tx.width = width_;
        const bool side_by_side = !trace_enabled();
        // A phase's launches: its tile launch, if any, one for its light rows (launch_row_groups) and one per
        // other group of rows (side streams pay only for two or more).
        auto launches = [&](const Grouping& gr, bool numeric) {
            unsigned k = tx.jobs ? 1 : 0;
            k += light_launch(gr, numeric) + own_launches(gr, numeric);
            return k;
        };
        if (const std::uint64_t hubs = sym_.counts[tiled_group]) {
            // The hub rows keep this order in the numeric phase (jobs are numbered by it).
            tx.pairs = hubs * tiles_;
            tx.jobs = tx.pairs;
            tx.rows = sym_.rows + sym_.start[tiled_group];
            if (tiles_ > 1) sym_carve.take(split, b_.rows * (tiles_ + 1));
            sym_carve.take(job_words, tx.pairs + 3);
            sym_carve.take(job_off, tx.pairs + 1);
            if (chunk_) {
                // At most tiles x (hubs + products / chunk) jobs, as a hub has at most 1 + its products / chunk.
                tx.jobs = std::min<std::uint64_t>(tiles_ * (hubs + sym_.hub_products / chunk_), tx.pairs * max_chunks);
                tx.hubs = std::uint32_t(hubs);
                sym_carve.take(job_start, hubs + 1);
                sym_carve.take(chunk_bounds, hubs * (max_chunks + 1));
                sym_carve.take(tx.pair_bits, tx.pairs * (max_tile / 32));
                sym_carve.take(tx.pair_done, tx.pairs);
            }
        }
        sym_carve.allocate();
        // A small product's numeric phase runs on the symbolic grouping (rows grouped by their products, not by
        // their entries) and is queued before the wait for nnz(C), its entries written to temporaries of one
        // entry per product and copied out once nnz(C) is known: the GPU does not wait for the host between the
        // phases, and the numeric grouping is not run (git_web_ml's contraction products 0.36-0.41 -> 0.30-0.32
        // ms, R-MAT 16's 0.53-0.59 -> 0.52-0.54, H100). Otherwise the rows are grouped again by their exact
        // counts, whose total is nnz(C).
        const bool direct = merge_ && sym_.total * (sizeof(ColIndex) + sizeof(T)) <= FreeMemory::small;
        Grouping& grp = direct ? sym_ : num_;
        {
            // Global tables, freed before the numeric phase's.
            const GlobalTables gt = plan_global(sym_, 4 + 1, ctx_);
            Carve tables(ctx_, "SpGEMM: temporaries");
            std::uint32_t *t_keys = nullptr, *t_hits = nullptr;
            tables.take(t_keys, gt.blocks * gt.slots);
            tables.take(t_hits, gt.blocks * gt.slots / 32);
            tables.allocate();
            if (tx.jobs) {
                tx.split = tiles_ > 1 ? split : b_.off;
                tx.split_stride = tiles_ > 1 ? tiles_ + 1 : 1;
                tx.job_nnz = job_words;
                tx.next_job = reinterpret_cast<unsigned long long*>(job_words + tx.pairs + 1);
                if (chunk_) {  // (the kernels zero the counters and the pairs' bitmaps)
                    constexpr unsigned cb_block = 1024;
                    const HubJobs hj{tx.rows,  a_.off,   x_.products, chunk_, max_chunks,
                                     tx.tiles, job_start, job_words + tx.pairs};
                    if (tx.hubs > cb_block) {  // (else chunk_bounds_kernel places the jobs itself)
                        hub_jobs_kernel<block_size><<<1, block_size, 0, stream>>>(tx.hubs, hj);
                        check_launch("SpGEMM: hub jobs kernel");
                    }
                    tx.job_start = job_start;
                    const SplitArgs sa = split_args(split);  // (its blocks after the hubs')
                    const std::uint64_t split_blocks = std::min<std::uint64_t>(
                        (sa.size() + cb_block - 1) / cb_block, 2 * multiprocessor_count(ctx_.device()));
                    chunk_bounds_kernel<cb_block, 4>
                        <<<unsigned(tx.hubs + split_blocks), cb_block, 0, stream>>>(x_, tx, chunk_bounds, hj, sa);
                    check_launch("SpGEMM: chunk bounds kernel");
                    tx.chunk_bounds = chunk_bounds;
                } else {
                    check(cudaMemsetAsync(job_words + tx.pairs, 0, 3 * sizeof(Offset), stream), "SpGEMM: memset");
                }
            }
            {
                Fork fork(stream, ctx_.device(), side_by_side && launches(sym_, false) > 1);
                if (tx.jobs) {  // first: the longest launch, as a rule
                    const cudaStream_t s = fork.next();
                    if (tiles_ > 1 && !chunk_) {  // (with chunks, chunk_bounds_kernel wrote it)
                        const SplitArgs sa = split_args(split);
                        split_kernel<<<grid_for(sa.size()), block_size, 0, s>>>(sa);
                        check_launch("SpGEMM: split kernel");
                    }
                    launch_tiles<NoValue, NoValues, false>(x, tx, NoValues{}, ctx_.device(), s);
                    sym_ms[tiled_group] = clock_.mark();
                }
                RowArgs xs = x;
                xs.t_keys = t_keys;
                xs.t_hits = t_hits;
                xs.t_slots = gt.slots;
                launch_row_groups<NoValue, NoValues, false>(xs, sym_, NoValues{}, gt, fork, sym_ms);
                fork.join();
            }
            GroupArgs gn = gp_;
            // The pairs' places (before the wait, as the rows' below), few of them by the grouping kernel.
            if (tx.jobs && tx.pairs + 1 <= spgemm_detail::small_sum_max) {
                gn.scan_in = tx.job_nnz;
                gn.scan_out = job_off;
                gn.scan_n = tx.pairs + 1;
            } else if (tx.jobs) {
                exclusive_sum(tx.job_nnz, job_off, tx.pairs + 1, scratch_, ctx_);
            }
            gn.nnz = row_nnz_;
            gn.row_off = c_off_.data();
            gn.row_state = row_state_;
            gn.shared_enabled = shared_groups_enabled<true, sizeof(T)>(ctx_.device());
            if (direct) {  // C's row offsets and nnz(C) only, the latter also to the host
                gn.scan_only = true;
                gn.total_out = &host_stats(ctx_.device())->total;
                gn.stats = num_.stats;
                group_kernel<false><<<grouping_blocks(m, ctx_), block_size, 0, stream>>>(gn);
                check_launch("SpGEMM: row sum kernel");
                check(cudaEventRecord(summed_event(ctx_.device()), stream), "SpGEMM: cudaEventRecord");
            } else {
                launch_grouping(gn, false, grp, ctx_);
            }
        }
        Offset nnz = 0;
        auto symbolic_done = [&] {
            setup_ms_ += clock_.mark();
            trace("cuda spgemm: hash %llu x %llu, symbolic rows per group %llu %llu %llu %llu %llu %llu (global) "
                  "%llu (one entry) %llu (tiles of %u columns), %llu entries; ms %.3f %.3f %.3f %.3f %.3f %.3f %.3f",
                  (unsigned long long)m, (unsigned long long)n, sym_.counts[0], sym_.counts[1], sym_.counts[2],
                  sym_.counts[3], sym_.counts[4], sym_.counts[5], sym_.counts[6], sym_.counts[7], width_,
                  (unsigned long long)nnz, sym_ms[0], sym_ms[1], sym_ms[2], sym_ms[3], sym_ms[4], sym_ms[5],
                  sym_ms[7]);
        };
        Array<ColIndex> c_cols(0, ctx_);
        Array<T> c_vals(0, ctx_);
        if (!direct) {
            read_groups(grp, ctx_);
            nnz = grp.total;
            symbolic_done();
            if (nnz == 0) return out;
            // C allocated once, exactly.
            const std::size_t c_bytes = std::size_t(nnz) * (sizeof(ColIndex) + sizeof(T));
            // (Asking the device costs a few microseconds: small products just allocate, which also fails with
            // OutOfMemory.)
            if (c_bytes > (std::size_t(1) << 30) && c_bytes > available_device_bytes(ctx_.device()))
                throw OutOfMemory("SpGEMM: the product has " + std::to_string(nnz) + " entries, " +
                                      std::to_string(c_bytes) + " bytes, more than the device has free",
                                  c_bytes);
            c_cols = Array<ColIndex>(nnz, ctx_);
            c_vals = Array<T>(nnz, ctx_);
        }

        // Numeric phase.
        x.size = grp.size;
        x.row_nnz = nullptr;
        x.c_off = c_off_.data();
        const GlobalTables gt = plan_global(grp, 4 + 1 + sizeof(T), ctx_);
        Carve num_carve(ctx_, "SpGEMM: temporaries");
        std::uint32_t* t_keys = nullptr;
        T* t_vals = nullptr;
        std::uint8_t* t_flags = nullptr;
        num_carve.take(t_keys, gt.blocks * gt.slots);
        num_carve.take(t_vals, gt.blocks * gt.slots);
        num_carve.take(t_flags, gt.blocks * gt.slots);
        T* partial = nullptr;
        if (tx.jobs && chunk_) {  // (pair_bits, the symbolic bitmaps, place the folded entries)
            num_carve.take(partial, tx.jobs * max_tile);
            num_carve.take(tx.partial_bits, tx.jobs * (max_tile / 32));
        }
        ColIndex* bound_cols = nullptr;  // direct: C's entries, at most one a product
        T* bound_vals = nullptr;
        if (direct) {
            num_carve.take(bound_cols, sym_.total);
            num_carve.take(bound_vals, sym_.total);
        }
        num_carve.allocate();
        x.c_cols = direct ? bound_cols : c_cols.data();
        x.c_vals = direct ? static_cast<void*>(bound_vals) : static_cast<void*>(c_vals.data());
        tx.partial = partial;
        if (tx.jobs) {
            tx.job_off = job_off;
            ++tx.next_job;
        }
        {
            Fork fork(stream, ctx_.device(), side_by_side && launches(grp, true) > 1);
            if (tx.jobs) {
                const cudaStream_t s = fork.next();
                launch_tiles<T, Sr, true>(x, tx, sr_, ctx_.device(), s);
                if (chunk_) {
                    pair_fold_kernel<T, Sr, tile_block>
                        <<<pair_blocks(tx.pairs * (max_tile / tile_block)), tile_block, 0, s>>>(x, tx, sr_);
                    check_launch("SpGEMM: pair fold kernel");
                }
                num_ms[tiled_group] = clock_.mark();
            }
            RowArgs xn = x;
            xn.t_keys = t_keys;
            xn.t_vals = t_vals;
            xn.t_flags = t_flags;
            xn.t_slots = gt.slots;
            launch_row_groups<T, Sr, true>(xn, grp, sr_, gt, fork, num_ms);
            fork.join();
        }
        // Rows in global tables were written unsorted.
        sort_rows<T>(grp.rows + grp.start[global_group], grp.counts[global_group], row_nnz_, c_off_.data(),
                     x.c_cols, static_cast<T*>(x.c_vals), scratch_, ctx_);
        const double sort_ms = clock_.mark();
        if (direct) {
            // nnz(C) (the GPU goes on with the numeric phase meanwhile), then C's entries copied out of the
            // temporaries after it.
            check(cudaEventSynchronize(summed_event(ctx_.device())), "SpGEMM: waiting for the rows' sum");
            nnz = host_stats(ctx_.device())->total;
            symbolic_done();
            if (nnz == 0) return out;
            c_cols = Array<ColIndex>(nnz, ctx_);
            c_vals = Array<T>(nnz, ctx_);
            copy_entries_kernel<T><<<grid_for(nnz), block_size, 0, stream>>>(nnz, bound_cols, bound_vals,
                                                                         c_cols.data(), c_vals.data());
            check_launch("SpGEMM: copying the entries");
        }
        trace("cuda spgemm: hash, numeric rows per group %llu %llu %llu %llu %llu %llu (global) %llu (one entry) "
              "%llu (tiles), ranged gather %s; ms %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f, global rows sorted %.3f, "
              "setup %.3f",
              grp.counts[0], grp.counts[1], grp.counts[2], grp.counts[3], grp.counts[4], grp.counts[5],
              grp.counts[6], grp.counts[7], x.ranged ? "on" : "off", num_ms[0], num_ms[1], num_ms[2], num_ms[3],
              num_ms[4], num_ms[5], num_ms[6], num_ms[7], sort_ms, setup_ms_);
        out.nnz = nnz;
        out.off = std::move(c_off_);
        out.cols = std::move(c_cols);
        out.vals = std::move(c_vals);
        return out;
    }

private:
    // The shared-memory groups a phase launches with its light rows, as a bit mask: groups 0 and 1, and in a
    // small product (merge_) each heavier one that merged_groups allows whose rows would not fill the device's
    // multiprocessors with a launch of their own (a block a row).
    unsigned merged(const Grouping& gr, bool numeric) const {
        unsigned mask = 3;
        const unsigned most = numeric ? merged_groups<true>() : merged_groups<false>();
        for (unsigned g = 2; merge_ && g < most; ++g)
            if (gr.counts[g] <= std::uint64_t(multiprocessor_count(ctx_.device()))) mask |= 1u << g;
        return mask;
    }
    // Whether a phase has light rows to launch (those groups, the rows of one entry in the numeric phase).
    bool light_launch(const Grouping& gr, bool numeric) const {
        const unsigned mask = merged(gr, numeric);
        bool any = numeric && gr.counts[single_group];
        for (unsigned g = 0; g < shared_groups; ++g) any = any || ((mask >> g & 1) && gr.counts[g]);
        return any;
    }
    // The groups a phase launches on their own.
    unsigned own_launches(const Grouping& gr, bool numeric) const {
        const unsigned mask = merged(gr, numeric);
        unsigned k = 0;
        for (unsigned g = 2; g <= global_group; ++g) k += gr.counts[g] && !(mask >> g & 1);
        return k;
    }
    // A phase's row launches after its tiles': the light rows in one launch, each other group in one of its own.
    // In a small product the heaviest go first (its time is that of its heaviest rows, whose few blocks then take
    // multiprocessors before the light rows' many: contraction products 5-8% faster); otherwise the light rows
    // (git_web_ml's A·A 5% slower heaviest first). x carries the phase's global tables (gt).
    template <class U, class S, bool Values>
    void launch_row_groups(const RowArgs& x, const Grouping& gr, const S& sr, const GlobalTables& gt, Fork& fork,
                           std::array<double, group_count>& ms) {
        const unsigned mask = merged(gr, Values);
        auto light = [&] {
            if (!light_launch(gr, Values)) return;
            launch_light<U, S, Values>(x, gr, mask, sr, ctx_.device(), fork.next());
            ms[0] = clock_.mark();
        };
        if (!merge_) light();
        for (unsigned k = 2; k <= global_group; ++k) {
            const unsigned g = merge_ ? global_group + 2 - k : k;
            if (gr.counts[g] == 0 || (mask >> g & 1)) continue;
            RowArgs xg = x;
            xg.rows = gr.rows + gr.start[g];
            xg.nrows = gr.counts[g];
            launch_group<U, S, Values>(g, xg, sr, g == global_group ? gt.blocks : group_blocks(g, xg.nrows),
                                       fork.next());
            ms[g] = clock_.mark();
        }
        if (merge_) light();
    }
    // B's split table for the hub tiles (null with one tile: none to write).
    SplitArgs split_args(Offset* split) const {
        return SplitArgs{b_.rows, b_.off, b_.idx, unsigned(tiles_), width_, tiles_ > 1 ? split : nullptr};
    }
    // Blocks of a launch of a block per unit (a (hub, tile) pair, or a part of one): at most 8 a multiprocessor,
    // each taking several.
    unsigned pair_blocks(std::uint64_t units) const {
        return unsigned(std::min<std::uint64_t>(units, 8 * std::uint64_t(multiprocessor_count(ctx_.device()))));
    }
    // Blocks of a launch of shared-memory group g over its rows.
    static std::uint64_t group_blocks(unsigned g, std::uint64_t rows) {
        const std::uint64_t rpb = group_shapes[g].block / group_shapes[g].g;
        return (rows + rpb - 1) / rpb;
    }

    Csr<T> a_, b_;
    Sr sr_;
    Context ctx_;
    bool products_given_;
    PhaseClock clock_;
    Array<Offset> c_off_;
    Scratch scratch_;
    Carve rows_carve_;
    Offset* row_nnz_ = nullptr;
    GroupStats* stats_ = nullptr;  // the two groupings'
    unsigned long long* row_state_ = nullptr;  // GroupArgs::row_state
    Grouping sym_, num_;
    double setup_ms_ = 0;
    RowArgs x_;
    GroupArgs gp_{};
    unsigned width_ = max_tile;
    std::uint64_t tiles_ = 1;
    Offset chunk_ = 0;  // hub_chunk
    bool merge_ = false;  // a small product: heavier groups launched with the light rows (merge_products)
};

// out[i] = in[i] + base for i < n.
__global__ void shift_offsets_kernel(std::uint64_t n, const Offset* in, Offset base, Offset* out) {
    for (std::uint64_t i = thread_index(); i < n; i += thread_count()) out[i] = in[i] + base;
}

// Products per batch of rows: HYBLA_SPGEMM_BATCH when set (tests), else what a third of the free memory holds
// at two entries of C per product (the batch's and its copy when batches are joined; entries never outnumber
// products).
// A product of `all` products whose batch would need at most FreeMemory::small bytes is one batch without asking.
template <class T>
std::uint64_t batch_products(std::uint64_t all, FreeMemory& free) {
    if (const char* e = std::getenv("HYBLA_SPGEMM_BATCH"); e && *e) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(e, &end, 10);
        if (end != e && *end == '\0' && v > 0) return v;
    }
    constexpr std::uint64_t per_product = 3 * 2 * (sizeof(ColIndex) + sizeof(T));
    if (all <= FreeMemory::small / per_product) return std::max<std::uint64_t>(all, 1);
    return std::max<std::uint64_t>(std::uint64_t(1) << 20, free.bytes() / per_product);
}

// C = A ⊕.⊗ B in batches of rows whose products fit the memory (one batch when all do, at most budget_cap
// products a batch when it is not 0); the batches' results are joined at the end, each passed first through
// the epilogue when there is one. The grouping of all rows for the symbolic phase also counts the products, so
// that one wait for the GPU decides between one batch and several.
template <class T, class Sr, class U = T>
Matrix<U> multiply(const Matrix<T>& a, const Matrix<T>& b, const Sr& sr, const MaskPattern* mask,
                   const RowEpilogue<T, U>* epilogue = nullptr, std::uint64_t budget_cap = 0) {
    const Context& ctx = a.context();
    const Index m = a.nrows(), n = b.ncols();
    if (m >= empty_key || n >= empty_key)
        throw InvalidValue("SpGEMM on the GPU: the product is " + std::to_string(m) + " x " + std::to_string(n) +
                           "; rows and columns must number fewer than 2^32 - 1");
    // A batch of rows [r0, r0 + rows.nrows()) as it is stored: through the epilogue when there is one. (Made by
    // make(), so that without an epilogue the matrix is returned as made, not moved: a move of a GPU matrix
    // queues the empty matrix it leaves.)
    auto store = [&](Index r0, auto&& make) -> Matrix<U> {
        if (epilogue) return (*epilogue)(r0, make());
        if constexpr (std::is_same_v<T, U>) return make();
        else throw InvalidValue("SpGEMM: a product of another type needs an epilogue");
    };
    if (m == 0 || n == 0 || a.nvals() == 0 || b.nvals() == 0)
        return store(0, [&] { return Matrix<T>(m, n, ctx); });
    check(cudaSetDevice(ctx.device()), "cudaSetDevice");
    const Csr<T> ca = csr_of(a), cb = csr_of(b);
    FreeMemory free(ctx.device());
    auto as_matrix = [&](Index rows, CsrResult<T>&& r) {
        if (r.nnz == 0) return Matrix<T>(rows, n, ctx);
        return Matrix<T>::adopt_csr(rows, n, r.nnz, std::move(r.off), std::move(r.cols), std::move(r.vals));
    };
    Array<Offset> products(m + 1, ctx);
    std::uint64_t budget = 0;
    {
        HashProduct<T, Sr> whole(ca, cb, sr, mask, products.data(), false, free, ctx);
        const Offset all = whole.group();
        budget = batch_products<T>(all, free);
        if (budget_cap) budget = std::min(budget, budget_cap);
        if (all <= budget) return store(0, [&] { return as_matrix(m, whole.finish()); });
    }
    // Each row's first product: where the batches cut.
    std::vector<Offset> prefix(m + 1);
    {
        Array<Offset> first(m + 1, ctx);
        Scratch scratch(ctx);
        exclusive_sum(products.data(), first.data(), m + 1, scratch, ctx);
        cuda::copy(prefix.data(), first.data(), (m + 1) * sizeof(Offset), CopyKind::device_to_host, ctx.stream());
    }
    Offset biggest = 0;
    for (Index i = 0; i < m; ++i) biggest = std::max(biggest, prefix[i + 1] - prefix[i]);
    const std::vector<RowRange> batches =
        row_batches(prefix, std::max<std::uint64_t>(budget, biggest), empty_key - 1, "SpGEMM");
    trace("cuda spgemm: %zu batches of rows", batches.size());
    std::vector<Matrix<U>> parts;
    for (const RowRange& r : batches) {
        Offset ends[2];
        cuda::copy(&ends[0], ca.off + r.begin, sizeof(Offset), CopyKind::device_to_host, ctx.stream());
        cuda::copy(&ends[1], ca.off + r.end, sizeof(Offset), CopyKind::device_to_host, ctx.stream());
        const Csr<T> slice{r.end - r.begin, ca.cols, ca.off + r.begin, ca.idx, ca.vals, ends[1] - ends[0]};
        MaskPattern mslice;
        if (mask) mslice = MaskPattern{mask->offsets + r.begin, mask->cols, mask->complement};
        FreeMemory batch_free(ctx.device());
        HashProduct<T, Sr> part(slice, cb, sr, mask ? &mslice : nullptr, products.data() + r.begin, true, batch_free,
                                ctx);
        part.group();
        parts.push_back(store(r.begin, [&] { return as_matrix(r.end - r.begin, part.finish()); }));
    }
    return stack_rows(parts, n, ctx);
}

}  // namespace
}  // namespace hash

template <class T>
Matrix<T> hash_spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask) {
    if constexpr (std::is_floating_point_v<T>) {
        if (sr.add == MonoidOp::plus && sr.multiply == BinaryOp::times)
            return hash::multiply(a, b, PlusTimes{}, mask);
    }
    return hash::multiply(a, b, RuntimeSemiring{sr}, mask);
}

template <class T, class U>
Matrix<U> hash_spgemm_rows(const Matrix<T>& a, const Matrix<T>& b, std::uint64_t budget,
                           const RowEpilogue<T, U>& epilogue) {
    if constexpr (std::is_floating_point_v<T>)
        return hash::multiply(a, b, PlusTimes{}, nullptr, &epilogue, budget);
    else
        return hash::multiply(a, b, RuntimeSemiring{SemiringCode{MonoidOp::plus, BinaryOp::times}}, nullptr,
                              &epilogue, budget);
}

template <class T>
Matrix<T> stack_rows(std::vector<Matrix<T>>& parts, Index ncols, const Context& ctx) {
    if (parts.size() == 1) return std::move(parts[0]);
    Index m = 0;
    Offset total = 0;
    for (const Matrix<T>& p : parts) {
        m += p.nrows();
        total += p.nvals();
    }
    if (total == 0) return Matrix<T>(m, ncols, ctx);
    const cudaStream_t stream = hash::stream_of(ctx);
    Array<Offset> c_off(m + 1, ctx);
    Array<ColIndex> c_cols(total, ctx);
    Array<T> c_vals(total, ctx);
    Index row = 0;
    Offset at = 0;
    for (Matrix<T>& p : parts) {
        const Index rows = p.nrows();
        hash::shift_offsets_kernel<<<hash::grid_for(rows), hash::block_size, 0, stream>>>(
            rows, p.storage_offsets().data(), at, c_off.data() + row);
        hash::check_launch("SpGEMM: shift offsets kernel");
        c_cols.copy_from(p.storage_indices().data(), ctx, p.nvals(), at);
        c_vals.copy_from(p.storage_values().data(), ctx, p.nvals(), at);
        row += rows;
        at += p.nvals();
        p = Matrix<T>(0, ncols, ctx);  // freed (in stream order)
    }
    hash::check(cudaMemcpyAsync(c_off.data() + m, &at, sizeof(Offset), cudaMemcpyHostToDevice, stream),
                "SpGEMM: copy");
    hash::check(cudaStreamSynchronize(stream), "SpGEMM: joining batches");
    return Matrix<T>::adopt_csr(m, ncols, total, std::move(c_off), std::move(c_cols), std::move(c_vals));
}

template <class T>
Matrix<T> spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask) {
    if (esc_chosen()) return esc_spgemm(a, b, sr, mask);
    return hash_spgemm(a, b, sr, mask);
}

#define HYBLA_SPGEMM_INSTANTIATE(T)                                                                          \
    template Matrix<T> spgemm<T>(const Matrix<T>&, const Matrix<T>&, SemiringCode, const MaskPattern*); \
    template Matrix<T> stack_rows<T>(std::vector<Matrix<T>>&, Index, const Context&);
HYBLA_CUDA_VALUE_TYPES(HYBLA_SPGEMM_INSTANTIATE)
#undef HYBLA_SPGEMM_INSTANTIATE
// What mxm_pruned uses (pruned.cu): products in double, rows stored in float or double.
template Matrix<float> hash_spgemm_rows<double, float>(const Matrix<double>&, const Matrix<double>&, std::uint64_t,
                                                       const RowEpilogue<double, float>&);
template Matrix<double> hash_spgemm_rows<double, double>(const Matrix<double>&, const Matrix<double>&, std::uint64_t,
                                                         const RowEpilogue<double, double>&);

}  // namespace hybla::cuda
