// Dense-accumulator SpGEMM for row batches whose product rows are nearly dense (Markov clustering's early
// iterations: on git_web_ml the second square forms 154 G products into rows that are 83% full). Private to this
// folder; pruned.cu uses it in place of the hash SpGEMM when a window of rows has products at least a
// quarter of its rows x columns, so no product is ever written to memory or sorted.
//
// C = A B (plus_times, products and sums in double, each sum stored in C's type), rows of A in one batch.
// Columns are cut into tiles of `tile` (1024 unless HYBLA_PRUNE_TILE says otherwise); a warp owns one
// (row, tile) job at a time with an accumulator of `tile` doubles and presence bytes in shared memory (no
// presence bytes when no value of A or B has its sign bit set, as in mcl: a slot no product reached is then
// still -0.0). It walks A(i,:) in chunks of 32 entries: each lane looks up, for its own k, where the part of
// B(k,:) inside the tile starts and ends (a split table of absolute positions, computed once per product),
// then the warp takes the chunk's k's in groups of kGroup, 32 entries of each k per round (B's columns and
// values interleaved, one load a product), its lanes adding a(i,k)*b(k,j) at distinct columns, k after k. So
// every C(i,j) is summed in an order fixed by the data and the tile width (deterministic; no atomics, no
// sort), though not always the order of A(i,:) that the CPU's Gustavson uses: a value may differ from the
// CPU's in its last bit, as on the hash path. Each job then writes its present columns, compacted in column
// order, to its slot of a staging area (rows x ncols); a scan of the per-job counts and a gather give the CSR.
// The split table costs nrows(B) x (ncols/tile + 1) x 4 bytes and the interleaved copy of B nvals(B) x 8 bytes
// (float), so the path is offered for ncols <= kMaxCols and nvals(B) <= kMaxEntries only, when they fit.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda::dense_rows {

constexpr unsigned kDefaultTile = 1024;   // columns a warp accumulates (see slots and shared_bytes)
constexpr unsigned kWarps = 8;            // warps per block
constexpr unsigned kGroup = 8;            // k's whose loads a warp issues together
static_assert(32 % kGroup == 0, "a group of k's must not straddle two 32-entry chunks of A(i,:)");
constexpr unsigned kMinBlocks = 4;        // blocks per SM the registers must allow (64 per thread; at tile 1024
                                          // shared memory allows 3)
constexpr Index kMaxCols = Index(1) << 17;  // split table <= 131072 x 129 x 4 B = 68 MB at the default tile
// Split positions are absolute 32-bit positions in B's arrays.
constexpr Offset kMaxEntries = (Offset(1) << 32) - 1;

inline std::uint64_t tiles_for(Index ncols, unsigned tile) { return (std::uint64_t(ncols) + tile - 1) / tile; }
// A warp's accumulator has `tile` slots and 32 more, one per lane, where a lane with no entry in a round adds
// (so the update needs no branch); those are never read.
__host__ __device__ inline std::size_t slots(unsigned tile) { return std::size_t(tile) + 32; }
// kSignFree: no presence bytes (see accumulate_kernel).
template <bool kSignFree = false>
inline std::size_t shared_bytes(unsigned tile) {
    return std::size_t(kWarps) * slots(tile) * (sizeof(double) + (kSignFree ? 0 : 1));
}

// The tile width: HYBLA_PRUNE_TILE (a multiple of 32 from 64 to 1024: tests and the bench compare them), else
// kDefaultTile; halved while a block's shared memory would exceed what the device allows one block (GPUs
// before sm_80).
inline unsigned tile_width(int device) {
    unsigned tile = kDefaultTile;
    if (const char* e = std::getenv("HYBLA_PRUNE_TILE"); e && *e) {
        char* end = nullptr;
        const unsigned long v = std::strtoul(e, &end, 10);
        if (*end == 0 && v >= 64 && v <= 1024 && v % 32 == 0) tile = unsigned(v);
    }
    int optin = 0;
    keys::check(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                "cudaDeviceGetAttribute (shared memory per block)");
    while (tile > 64 && shared_bytes<false>(tile) > std::size_t(optin)) tile = (tile / 2 + 31) / 32 * 32;
    return tile;
}

// An entry of B, column and value side by side so that a product needs one load (8 bytes for float B).
template <class TB>
struct alignas(sizeof(TB) >= 8 ? 16 : 8) Entry {
    ColIndex col;
    TB val;
};

template <class TB>
__global__ void interleave_kernel(std::uint64_t nnz, const ColIndex* bc, const TB* bv, Entry<TB>* out) {
    for (std::uint64_t x = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; x < nnz;
         x += std::uint64_t(gridDim.x) * blockDim.x)
        out[x] = Entry<TB>{bc[x], bv[x]};
}

// split[k * (tiles + 1) + t] = position in B's arrays of the first entry of B(k,:) with column >= t * tile
// (t = 0..tiles; t = tiles gives the row's end).
__global__ void split_kernel(Index brows, unsigned tile, std::uint64_t tiles, const Offset* bo, const ColIndex* bc,
                             std::uint32_t* split) {
    const std::uint64_t total = std::uint64_t(brows) * (tiles + 1);
    for (std::uint64_t x = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; x < total;
         x += std::uint64_t(gridDim.x) * blockDim.x) {
        const Index k = Index(x / (tiles + 1));
        const std::uint64_t t = x % (tiles + 1), bound = t * tile;
        Offset lo = bo[k], hi = bo[k + 1];
        while (lo < hi) {
            const Offset mid = lo + (hi - lo) / 2;
            if (bc[mid] < bound) lo = mid + 1;
            else hi = mid;
        }
        split[x] = std::uint32_t(lo);
    }
}

// -0.0 as bits: an accumulator slot that no product reached, when kSignFree.
constexpr unsigned long long kNegativeZero = 0x8000000000000000ull;

// One warp per (row, tile) job, grid-stride, tile-major. Writes the job's present columns (ascending) and values
// to its staging slot (row * ncols + tile * width) and their number to counts[row * tiles + tile].
// Shared memory (dynamic, shared_bytes<kSignFree>(tile)): kWarps accumulators of slots(tile) doubles, then
// (unless kSignFree) their presence bytes. kSignFree: no value of A or B has its sign bit set (mcl's matrices),
// so every product is +0 or more and -0.0 + x = x for all of them (also for x = +0): the accumulators start at
// -0.0, and a slot is present iff it is no longer -0.0, with no presence byte to store per product.
template <class TA, class TB, class TC, bool kSignFree>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks)
    accumulate_kernel(Index rows, Index ncols, unsigned tile, std::uint64_t tiles, const Offset* __restrict__ ao,
                      const ColIndex* __restrict__ ac, const TA* __restrict__ av, const Entry<TB>* __restrict__ bent,
                      const std::uint32_t* __restrict__ split, ColIndex* stage_cols,
                      TC* stage_vals, Offset* counts) {
    extern __shared__ double smem[];
    const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
    const std::size_t width_all = slots(tile);
    double* acc = smem + w * width_all;
    std::uint8_t* has = kSignFree ? nullptr : reinterpret_cast<std::uint8_t*>(smem + kWarps * width_all) + w * width_all;
    const double empty = kSignFree ? __longlong_as_double(kNegativeZero) : 0.0;
    for (unsigned c = lane; c < width_all; c += 32) {
        acc[c] = empty;
        if constexpr (!kSignFree) has[c] = 0;
    }
    __syncwarp();
    const std::uint64_t jobs = std::uint64_t(rows) * tiles;
    // Jobs are handed out in order by a counter (counts[jobs], zero at the launch): a warp that finishes takes
    // the next one, so the warps end together however uneven the jobs.
    auto next_job = [&] {
        unsigned long long j = 0;
        if (lane == 0) j = atomicAdd(reinterpret_cast<unsigned long long*>(counts + jobs), 1ull);
        return std::uint64_t(__shfl_sync(0xffffffffu, j, 0));
    };
    for (std::uint64_t job = next_job(); job < jobs; job = next_job()) {
        // Tile-major: the warps running at one time share a tile, so the part of B they read (B's columns
        // in that tile, about nnz(B) / tiles entries) can stay in L2.
        const Index i = Index(job % rows);
        const std::uint64_t t = job / rows;
        const ColIndex lo = ColIndex(t * tile);
        const Offset a1 = ao[i + 1];
        for (Offset base = ao[i]; base < a1; base += 32) {
            // Each lane locates the part of B(k,:) inside the tile for its own k of this chunk of A(i,:), so the
            // 32 split lookups are issued together; lanes past the row's end get an empty range.
            const unsigned n = a1 - base < 32 ? unsigned(a1 - base) : 32u;
            std::uint32_t my_s = 0, my_e = 0;
            double my_a = 0;
            if (lane < n) {
                const std::uint32_t* sp = split + std::uint64_t(ac[base + lane]) * (tiles + 1) + t;
                my_s = sp[0];
                my_e = sp[1];
                my_a = double(av[base + lane]);
            }
            // kGroup k's at a time, in rounds of 32 entries of each: a round loads entry r + lane of every k
            // of the group (kGroup loads in flight), then adds them k after k. Columns of one B row are
            // distinct, so the lanes never collide within one k; __syncwarp orders the updates of successive
            // k's. A column's sum therefore runs in an order fixed by the data and the tile width (round by
            // round, k by k within a round): deterministic, though not always the order of A(i,:). No fused
            // multiply-add.
            for (unsigned q0 = 0; q0 < n; q0 += kGroup) {
                std::uint32_t s[kGroup], len[kGroup];  // len: so that s + r never passes B's end (no wrap)
                double a[kGroup];
                std::uint32_t longest = 0;
#pragma unroll
                for (unsigned j = 0; j < kGroup; ++j) {
                    s[j] = __shfl_sync(0xffffffffu, my_s, q0 + j);
                    len[j] = __shfl_sync(0xffffffffu, my_e, q0 + j) - s[j];
                    a[j] = __shfl_sync(0xffffffffu, my_a, q0 + j);
                    longest = max(longest, len[j]);
                }
                for (std::uint32_t r = lane; r < longest + lane; r += 32) {  // warp-uniform trip count
                    Entry<TB> b[kGroup];
#pragma unroll
                    for (unsigned j = 0; j < kGroup; ++j) {
                        b[j] = Entry<TB>{lo + tile + lane, TB(0)};  // none: the lane's own spare slot
                        if (r < len[j]) b[j] = bent[s[j] + r];
                    }
#pragma unroll
                    for (unsigned j = 0; j < kGroup; ++j) {
                        const unsigned c = b[j].col - lo;
                        acc[c] += __dmul_rn(a[j], double(b[j].val));
                        if constexpr (!kSignFree) has[c] = 1;
                        __syncwarp();
                    }
                }
            }
        }
        // Compact the present columns into the staging slot, resetting the accumulator on the way.
        const std::uint64_t slot = std::uint64_t(i) * ncols + lo;
        const unsigned width = std::uint64_t(ncols) - lo < tile ? unsigned(ncols - lo) : tile;
        Offset written = 0;
        for (unsigned c0 = 0; c0 < width; c0 += 32) {
            const unsigned c = c0 + lane;
            bool present = false;
            if (c < width) {
                if constexpr (kSignFree) present = (unsigned long long)__double_as_longlong(acc[c]) != kNegativeZero;
                else present = has[c];
            }
            const unsigned ballot = __ballot_sync(0xffffffffu, present);
            if (present) {
                const Offset at = slot + written + __popc(ballot & ((1u << lane) - 1));
                stage_cols[at] = lo + c;
                stage_vals[at] = TC(acc[c]);  // summed in double, stored as TC
            }
            acc[c] = empty;  // c < tile: c0 < width <= tile, a multiple of 32
            if constexpr (!kSignFree) has[c] = 0;
            written += __popc(ballot);
        }
        if (lane == 0) counts[std::uint64_t(i) * tiles + t] = written;  // row-major, as the CSR wants
        __syncwarp();
    }
}

// Moves each job's compacted entries from its staging slot to its place in the CSR (a warp per job).
template <class TC>
__global__ void gather_kernel(Index rows, Index ncols, unsigned tile, std::uint64_t tiles, const Offset* job_start,
                              const ColIndex* stage_cols, const TC* stage_vals, ColIndex* out_cols, TC* out_vals) {
    const std::uint64_t jobs = std::uint64_t(rows) * tiles;
    const unsigned lane = threadIdx.x % 32;
    for (std::uint64_t job = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / 32; job < jobs;
         job += std::uint64_t(gridDim.x) * blockDim.x / 32) {
        const Index i = Index(job / tiles);
        const std::uint64_t t = job % tiles;
        const std::uint64_t slot = std::uint64_t(i) * ncols + t * tile;
        const Offset dst = job_start[job], len = job_start[job + 1] - dst;
        for (Offset x = lane; x < len; x += 32) {
            out_cols[dst + x] = stage_cols[slot + x];
            out_vals[dst + x] = stage_vals[slot + x];
        }
    }
}

// The split table of B for tiles of `tile` columns (once per product; see split_kernel). Needs
// nvals(B) <= kMaxEntries (the positions are 32-bit).
// B's entries interleaved go with it (nvals(B) x 8 bytes for float).
template <class TB>
struct Split {
    unsigned tile = kDefaultTile;
    Array<std::uint32_t> table;
    Array<Entry<TB>> entries;
    bool sign_free = false;  // no value of B has its sign bit set
};

// Whether no value of v[0, n) has its sign bit set (negative numbers, -0.0, NaNs with the bit): one pass.
template <class T>
bool sign_free(const T* v, std::uint64_t n, const Context& ctx) {
    if (n == 0) return true;
    Array<unsigned> flag(1, 0u, ctx);
    unsigned* f = flag.data();
    keys::for_each(n, ctx, "mxm_pruned (dense rows: signs)", [=] __device__(std::uint64_t p) {
        if (signbit(v[p])) *f = 1u;
    });
    unsigned h = 0;
    copy(&h, f, sizeof h, CopyKind::device_to_host, ctx.stream());
    return h == 0;
}
template <class TB>
std::uint64_t split_bytes(const Matrix<TB>& b, unsigned tile) {
    return std::uint64_t(b.nrows()) * (tiles_for(b.ncols(), tile) + 1) * 4 + std::uint64_t(b.nvals()) * sizeof(Entry<TB>);
}
template <class TB>
Split<TB> split_table(const Matrix<TB>& b, unsigned tile) {
    const Context& ctx = b.context();
    const std::uint64_t tiles = tiles_for(b.ncols(), tile);
    Split<TB> sp{tile, Array<std::uint32_t>(std::uint64_t(b.nrows()) * (tiles + 1), ctx), Array<Entry<TB>>(b.nvals(), ctx),
                 sign_free(b.storage_values().data(), b.nvals(), ctx)};
    const cudaStream_t s = keys::stream_of(ctx);
    if (sp.table.size() > 0) {
        split_kernel<<<keys::grid_for(sp.table.size()), keys::block_size, 0, s>>>(
            b.nrows(), tile, tiles, b.storage_offsets().data(), b.storage_indices().data(), sp.table.data());
        keys::check_launch("mxm_pruned (dense rows: split table)");
    }
    if (b.nvals() > 0) {
        interleave_kernel<TB><<<keys::grid_for(b.nvals()), keys::block_size, 0, s>>>(
            b.nvals(), b.storage_indices().data(), b.storage_values().data(), sp.entries.data());
        keys::check_launch("mxm_pruned (dense rows: interleave)");
    }
    return sp;
}

// C = A B with A's rows [r0, r1) (whole CSR of A given; rows taken in place), products and sums in double,
// each sum rounded to TC once, when it is stored (B's values are read in their own type: float B moves 8 bytes
// a product instead of 12; float C moves 8 bytes an entry through the staging and the gather instead of 12).
// a_sign_free: no value of A has its sign bit set (with split.sign_free, the accumulators need no presence
// bytes).
template <class TC, class TA, class TB>
Matrix<TC> multiply(const Matrix<TA>& a, Index r0, Index r1, const Matrix<TB>& b, const Split<TB>& split,
                        bool a_sign_free) {
    const Context& ctx = a.context();
    const cudaStream_t s = keys::stream_of(ctx);
    const unsigned tile = split.tile;
    const Index rows = r1 - r0, n = b.ncols();
    const std::uint64_t tiles = tiles_for(n, tile), jobs = std::uint64_t(rows) * tiles;
    Array<ColIndex> stage_cols(std::uint64_t(rows) * n, ctx);
    Array<TC> stage_vals(std::uint64_t(rows) * n, ctx);
    Array<Offset> counts(jobs + 1, ctx);
    int sms = 0;
    keys::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device()), "cudaDeviceGetAttribute");
    const std::uint64_t job_blocks = (jobs + kWarps - 1) / kWarps;
    keys::check(cudaMemsetAsync(counts.data() + jobs, 0, sizeof(Offset), s), "mxm_pruned (dense rows: memset)");
    auto launch = [&](auto kernel, std::size_t smem) {
        keys::check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                    "cudaFuncSetAttribute (dense rows)");
        int per_sm = 0;
        keys::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWarps * 32, smem),
                    "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        const unsigned blocks = unsigned(std::max<std::uint64_t>(1, std::min<std::uint64_t>(job_blocks, std::uint64_t(sms) * std::max(per_sm, 1))));
        kernel<<<blocks, kWarps * 32, smem, s>>>(rows, n, tile, tiles, a.storage_offsets().data() + r0,
                                                 a.storage_indices().data(), a.storage_values().data(),
                                                 split.entries.data(), split.table.data(), stage_cols.data(),
                                                 stage_vals.data(), counts.data());
        keys::check_launch("mxm_pruned (dense rows: accumulate)");
    };
    if (jobs > 0) {
        if (a_sign_free && split.sign_free) launch(accumulate_kernel<TA, TB, TC, true>, shared_bytes<true>(tile));
        else launch(accumulate_kernel<TA, TB, TC, false>, shared_bytes<false>(tile));
    }
    keys::exclusive_scan(counts.data(), jobs + 1, ctx);  // the trailing slot becomes the total
    Offset nnz = 0;
    copy(&nnz, counts.data() + jobs, sizeof nnz, CopyKind::device_to_host, ctx.stream());
    Array<ColIndex> cols(nnz, ctx);
    Array<TC> vals(nnz, ctx);
    if (jobs > 0) {
        gather_kernel<TC><<<unsigned(std::min<std::uint64_t>(job_blocks, std::uint64_t(sms) * 16)), kWarps * 32, 0, s>>>(
            rows, n, tile, tiles, counts.data(), stage_cols.data(), stage_vals.data(), cols.data(), vals.data());
        keys::check_launch("mxm_pruned (dense rows: gather)");
    }
    // Row offsets: the start of each row's first job.
    Array<Offset> off(std::uint64_t(rows) + 1, ctx);
    {
        Offset* o = off.data();
        const Offset* cs = counts.data();
        keys::for_each(std::uint64_t(rows) + 1, ctx, "mxm_pruned (dense rows: offsets)",
                       [=] __device__(std::uint64_t r) { o[r] = cs[r * tiles]; });
    }
    return Matrix<TC>::adopt_csr(rows, n, nnz, std::move(off), std::move(cols), std::move(vals));
}

}  // namespace hybla::cuda::dense_rows
