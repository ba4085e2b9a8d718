// Dense-accumulator SpGEMM for row batches whose product rows are nearly dense (Markov clustering's early
// iterations: on git_web_ml the second square forms 154 G products into rows that are 83% full). Private to this
// folder; pruned.cu uses it in place of the expand-sort-compress SpGEMM when a batch's products are at least a
// quarter of its rows x columns, so no product is ever written to memory or sorted.
//
// C = A B (plus_times, products and sums in double), rows of A in one batch. Columns are cut into tiles of
// kTile; a warp owns one (row, tile) job at a time with an accumulator of kTile doubles and presence bytes in
// shared memory. It walks A(i,:) in order; for each A(i,k) it reads only the part of B(k,:) inside its tile,
// located by a split table computed once per product (split[k][t] = entries of B(k,:) with column < t*kTile),
// and its lanes add a(i,k)*b(k,j) at distinct columns. So every C(i,j) is the sum over k in the order of
// A(i,:), like the CPU's Gustavson: deterministic, no atomics, no sort. Each job then writes its present
// columns, compacted in column order, to its slot of a staging area (rows x ncols); a scan of the per-job counts
// and a gather give the CSR. The split table costs nrows(B) x (ncols/kTile + 1) x 4 bytes, so the path is
// offered for ncols <= kMaxCols only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda::dense_rows {

constexpr unsigned kTile = 512;           // columns a warp accumulates (4 KB of doubles + 512 presence bytes)
constexpr unsigned kWarps = 8;            // warps per block
constexpr unsigned kGroup = 4;            // k's whose loads a warp issues together
constexpr Index kMaxCols = Index(1) << 17;  // split table <= 131072 x 257 x 4 B = 135 MB

inline std::uint64_t tiles_for(Index ncols) { return (std::uint64_t(ncols) + kTile - 1) / kTile; }

// split[k * (tiles + 1) + t] = number of entries of B(k,:) with column < t * kTile (t = 0..tiles).
__global__ void split_kernel(Index brows, std::uint64_t tiles, const Offset* bo, const ColIndex* bc, std::uint32_t* split) {
    const std::uint64_t total = std::uint64_t(brows) * (tiles + 1);
    for (std::uint64_t x = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; x < total;
         x += std::uint64_t(gridDim.x) * blockDim.x) {
        const Index k = Index(x / (tiles + 1));
        const std::uint64_t t = x % (tiles + 1), bound = t * kTile;
        Offset lo = bo[k], hi = bo[k + 1];
        const Offset b = lo;
        while (lo < hi) {
            const Offset mid = lo + (hi - lo) / 2;
            if (bc[mid] < bound) lo = mid + 1;
            else hi = mid;
        }
        split[x] = std::uint32_t(lo - b);
    }
}

// One warp per (row, tile) job, grid-stride, tile-major. Writes the job's present columns (ascending) and values
// to its staging slot (row * ncols + tile * kTile) and their number to counts[row * tiles + tile].
template <class TA, class TB>
__global__ void __launch_bounds__(kWarps * 32) accumulate_kernel(Index rows, Index ncols, std::uint64_t tiles,
                                                                 const Offset* __restrict__ ao, const ColIndex* __restrict__ ac,
                                                                 const TA* __restrict__ av, const Offset* __restrict__ bo,
                                                                 const ColIndex* __restrict__ bc, const TB* __restrict__ bv,
                                                                 const std::uint32_t* __restrict__ split, ColIndex* stage_cols,
                                                                 double* stage_vals, Offset* counts) {
    __shared__ double acc_all[kWarps][kTile];
    __shared__ std::uint8_t has_all[kWarps][kTile];
    const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
    double* acc = acc_all[w];
    std::uint8_t* has = has_all[w];
    for (unsigned c = lane; c < kTile; c += 32) {
        acc[c] = 0;
        has[c] = 0;
    }
    __syncwarp();
    const std::uint64_t jobs = std::uint64_t(rows) * tiles;
    for (std::uint64_t job = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / 32; job < jobs;
         job += std::uint64_t(gridDim.x) * blockDim.x / 32) {
        // Tile-major: the warps running at one time share a tile, so the part of B they read (B's columns
        // in that tile, about nnz(B) / tiles entries) stays in L2 instead of coming from DRAM for every row.
        const Index i = Index(job % rows);
        const std::uint64_t t = job / rows;
        const ColIndex lo = ColIndex(t * kTile);
        for (Offset base = ao[i]; base < ao[i + 1]; base += 32) {
            const Offset p = base + lane;
            ColIndex my_k = 0;
            double my_a = 0;
            if (p < ao[i + 1]) {
                my_k = ac[p];
                my_a = double(av[p]);
            }
            const unsigned n = ao[i + 1] - base < 32 ? unsigned(ao[i + 1] - base) : 32u;
            // kGroup k's at a time: their B row parts are located and their first 32 entries loaded before
            // any is added, so kGroup independent load chains are in flight instead of one per k.
            for (unsigned q0 = 0; q0 < n; q0 += kGroup) {
                Offset s[kGroup], e[kGroup];
                double a[kGroup], v[kGroup];
                unsigned c[kGroup];
#pragma unroll
                for (unsigned j = 0; j < kGroup; ++j) {
                    const unsigned q = q0 + j;
                    const ColIndex k = __shfl_sync(0xffffffffu, my_k, q & 31);
                    a[j] = __shfl_sync(0xffffffffu, my_a, q & 31);
                    s[j] = e[j] = 0;
                    if (q < n) {
                        const std::uint32_t* sp = split + std::uint64_t(k) * (tiles + 1) + t;
                        const Offset row0 = bo[k];
                        s[j] = row0 + sp[0];
                        e[j] = row0 + sp[1];
                    }
                }
#pragma unroll
                for (unsigned j = 0; j < kGroup; ++j) {
                    const Offset x = s[j] + lane;
                    c[j] = kTile;  // none
                    v[j] = 0;
                    if (x < e[j]) {
                        c[j] = bc[x] - lo;
                        v[j] = double(bv[x]);
                    }
                }
                // Columns of one B row are distinct, so the lanes never collide within one k; __syncwarp
                // orders the updates of successive k's (each sum runs in the order of A(i,:)). No fused
                // multiply-add: the CPU rounds the product too.
#pragma unroll
                for (unsigned j = 0; j < kGroup; ++j) {
                    if (c[j] < kTile) {
                        acc[c[j]] += __dmul_rn(a[j], v[j]);
                        has[c[j]] = 1;
                    }
                    for (Offset x = s[j] + 32 + lane; x < e[j]; x += 32) {
                        const unsigned cc = bc[x] - lo;
                        acc[cc] += __dmul_rn(a[j], double(bv[x]));
                        has[cc] = 1;
                    }
                    __syncwarp();
                }
            }
        }
        // Compact the present columns into the staging slot, resetting the accumulator on the way.
        const std::uint64_t slot = std::uint64_t(i) * ncols + lo;
        const unsigned width = std::uint64_t(ncols) - lo < kTile ? unsigned(ncols - lo) : kTile;
        Offset written = 0;
        for (unsigned c0 = 0; c0 < width; c0 += 32) {
            const unsigned c = c0 + lane;
            const bool present = c < width && has[c];
            const unsigned ballot = __ballot_sync(0xffffffffu, present);
            if (present) {
                const Offset at = slot + written + __popc(ballot & ((1u << lane) - 1));
                stage_cols[at] = lo + c;
                stage_vals[at] = acc[c];
            }
            acc[c] = 0;  // c < kTile: c0 < width <= kTile, a multiple of 32
            has[c] = 0;
            written += __popc(ballot);
        }
        if (lane == 0) counts[std::uint64_t(i) * tiles + t] = written;  // row-major, as the CSR wants
        __syncwarp();
    }
}

// Moves each job's compacted entries from its staging slot to its place in the CSR (a warp per job).
__global__ void gather_kernel(Index rows, Index ncols, std::uint64_t tiles, const Offset* job_start,
                              const ColIndex* stage_cols, const double* stage_vals, ColIndex* out_cols,
                              double* out_vals) {
    const std::uint64_t jobs = std::uint64_t(rows) * tiles;
    const unsigned lane = threadIdx.x % 32;
    for (std::uint64_t job = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / 32; job < jobs;
         job += std::uint64_t(gridDim.x) * blockDim.x / 32) {
        const Index i = Index(job / tiles);
        const std::uint64_t t = job % tiles;
        const std::uint64_t slot = std::uint64_t(i) * ncols + t * kTile;
        const Offset dst = job_start[job], len = job_start[job + 1] - dst;
        for (Offset x = lane; x < len; x += 32) {
            out_cols[dst + x] = stage_cols[slot + x];
            out_vals[dst + x] = stage_vals[slot + x];
        }
    }
}

// The split table of B (once per product; see split_kernel).
template <class TB>
Array<std::uint32_t> split_table(const Matrix<TB>& b) {
    const Context& ctx = b.context();
    const std::uint64_t tiles = tiles_for(b.ncols());
    Array<std::uint32_t> split(std::uint64_t(b.nrows()) * (tiles + 1), ctx);
    if (split.size() > 0) {
        split_kernel<<<keys::grid_for(split.size()), keys::block_size, 0, keys::stream_of(ctx)>>>(
            b.nrows(), tiles, b.storage_offsets().data(), b.storage_indices().data(), split.data());
        keys::check_launch("mxm_pruned (dense rows: split table)");
    }
    return split;
}

// C = A B with A's rows [r0, r1) (whole CSR of A given; rows taken in place), products and sums in double
// (B's values are read in their own type: float B moves 8 bytes a product instead of 12).
template <class TA, class TB>
Matrix<double> multiply(const Matrix<TA>& a, Index r0, Index r1, const Matrix<TB>& b,
                        const Array<std::uint32_t>& split) {
    const Context& ctx = a.context();
    const cudaStream_t s = keys::stream_of(ctx);
    const Index rows = r1 - r0, n = b.ncols();
    const std::uint64_t tiles = tiles_for(n), jobs = std::uint64_t(rows) * tiles;
    Array<ColIndex> stage_cols(std::uint64_t(rows) * n, ctx);
    Array<double> stage_vals(std::uint64_t(rows) * n, ctx);
    Array<Offset> counts(jobs + 1, ctx);
    int sms = 0;
    keys::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.device()), "cudaDeviceGetAttribute");
    int per_sm = 0;
    keys::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, accumulate_kernel<TA, TB>, kWarps * 32, 0),
                "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    const std::uint64_t job_blocks = (jobs + kWarps - 1) / kWarps;
    const unsigned blocks = unsigned(std::max<std::uint64_t>(1, std::min<std::uint64_t>(job_blocks, std::uint64_t(sms) * std::max(per_sm, 1))));
    if (jobs > 0) {
        accumulate_kernel<TA, TB><<<blocks, kWarps * 32, 0, s>>>(
            rows, n, tiles, a.storage_offsets().data() + r0, a.storage_indices().data(), a.storage_values().data(),
            b.storage_offsets().data(), b.storage_indices().data(), b.storage_values().data(), split.data(),
            stage_cols.data(), stage_vals.data(), counts.data());
        keys::check_launch("mxm_pruned (dense rows: accumulate)");
    }
    keys::exclusive_scan(counts.data(), jobs + 1, ctx);  // the trailing slot becomes the total
    Offset nnz = 0;
    copy(&nnz, counts.data() + jobs, sizeof nnz, CopyKind::device_to_host, ctx.stream());
    Array<ColIndex> cols(nnz, ctx);
    Array<double> vals(nnz, ctx);
    if (jobs > 0) {
        gather_kernel<<<unsigned(std::min<std::uint64_t>(job_blocks, std::uint64_t(sms) * 16)), kWarps * 32, 0, s>>>(
            rows, n, tiles, counts.data(), stage_cols.data(), stage_vals.data(), cols.data(), vals.data());
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
    return Matrix<double>::import_csr(rows, n, std::move(off), std::move(cols), std::move(vals), false);
}

}  // namespace hybla::cuda::dense_rows
