// C = A ⊕.⊗ B (optionally only where a mask allows) on the GPU by expand-sort-compress (the default SpGEMM
// until the hash SpGEMM of spgemm.cu overtakes it; README.md has the measurements), in row batches of
// bounded size: every intermediate product A(i,k)·B(k,j) becomes a key (i, j) with its product number,
// products the mask forbids are dropped before the sort, a stable radix sort groups equal keys in
// expansion order, and each run of equal keys is combined in that order by the add monoid. See README.md
// beside this file.
//
// Build-time rule: the CUB algorithms (scan, select, radix sort) run on keys and product numbers only and
// are compiled once; the per-type code is the two small combining kernels.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/spgemm/esc.cuh"
#include "engine/cuda/spgemm/scratch.cuh"
#include "engine/cuda/spgemm/select.hpp"
#include "engine/matrix.hpp"
#include "engine/memory.hpp"
#include "engine/trace.hpp"

namespace hybla::cuda {
namespace esc {
namespace {

// ------------------------------------------------------------------ device helpers

// Whether the sorted c[b, e) holds j.
HYBLA_HD inline bool contains_sorted(const ColIndex* c, Offset b, Offset e, ColIndex j) {
    const Offset end = e;
    while (b < e) {
        Offset m = b + (e - b) / 2;
        if (c[m] < j) b = m + 1;
        else e = m;
    }
    return b < end && c[b] == j;
}

// First r in [0, n) with k[r] >= x (n if none).
HYBLA_HD inline std::uint64_t lower_bound_key(const Key* k, std::uint64_t n, Key x) {
    std::uint64_t b = 0, e = n;
    while (b < e) {
        std::uint64_t m = b + (e - b) / 2;
        if (k[m] < x) b = m + 1;
        else e = m;
    }
    return b;
}

__device__ inline std::uint64_t thread_index() { return blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; }
__device__ inline std::uint64_t thread_count() { return std::uint64_t(gridDim.x) * blockDim.x; }

// ------------------------------------------------------------------ type-independent kernels

// work[p] = |B(A.col[p], :)| for each entry of A, and work[nnz] = 0, so that an exclusive sum gives each
// entry's first product number and the total.
__global__ void entry_work_kernel(Offset a_nnz, const ColIndex* a_cols, const Offset* b_offsets, Offset* work) {
    for (std::uint64_t p = thread_index(); p <= a_nnz; p += thread_count()) {
        Offset w = 0;
        if (p < a_nnz) {
            const ColIndex k = a_cols[p];
            w = b_offsets[k + 1] - b_offsets[k];
        }
        work[p] = w;
    }
}

// The row of each entry of A; a warp per row so that a row of 10^6 entries is 32-wide stores.
__global__ void entry_rows_kernel(Index m, const Offset* a_offsets, std::uint32_t* rows) {
    const unsigned lane = threadIdx.x & 31;
    const std::uint64_t warps = thread_count() / 32;
    for (std::uint64_t i = thread_index() / 32; i < m; i += warps)
        for (Offset p = a_offsets[i] + lane; p < a_offsets[i + 1]; p += 32) rows[p] = std::uint32_t(i);
}

// The end of the batch starting at row r0: as many rows as fit in budget products, at least one.
// out = {r1, first entry, end entry, first product, end product}.
__global__ void batch_end_kernel(const Offset* e_prefix, const Offset* a_offsets, Index m, Index r0, Offset budget,
                                 Offset* out) {
    const Offset base = e_prefix[a_offsets[r0]];
    auto work_to = [&](Index r) { return e_prefix[a_offsets[r]] - base; };
    Index lo = r0 + 1, hi = m;
    if (work_to(lo) <= budget) {
        while (lo < hi) {  // the largest r in [lo, hi] with work_to(r) <= budget
            Index mid = lo + (hi - lo + 1) / 2;
            if (work_to(mid) <= budget) lo = mid;
            else hi = mid - 1;
        }
    }
    out[0] = lo;
    out[1] = a_offsets[r0];
    out[2] = a_offsets[lo];
    out[3] = base;
    out[4] = e_prefix[a_offsets[lo]];
}

struct ExpandArgs {
    const Offset* e_prefix;
    Offset p0, p1;  // the batch's entries of A
    Offset g0;      // global number of its first product
    std::uint64_t nprod;
    const ColIndex* a_cols;
    const std::uint32_t* a_rows;
    const Offset* b_offsets;
    const ColIndex* b_cols;
    Index r0;
    int colbits;
    const Offset* mask_offsets;  // null: no mask
    const ColIndex* mask_cols;
    bool complement;
    Key* keys;        // nprod
    Slot* slots;      // nprod, unmasked only (the identity: masked batches select theirs)
    std::uint8_t* keep;  // nprod, masked only
};

inline constexpr unsigned expand_items = 4;  // products per thread and tile

// One thread per product. Each block takes tiles of consecutive products and first finds the span of A
// entries the tile covers, so that each thread's search for its entry is short however skewed the rows.
__global__ void __launch_bounds__(block_size) expand_kernel(ExpandArgs x) {
    __shared__ Offset span[2];
    const std::uint64_t tile = std::uint64_t(blockDim.x) * expand_items;
    for (std::uint64_t t0 = blockIdx.x * tile; t0 < x.nprod; t0 += std::uint64_t(gridDim.x) * tile) {
        const std::uint64_t t1 = t0 + tile < x.nprod ? t0 + tile : x.nprod;
        if (threadIdx.x == 0) {
            span[0] = entry_of(x.e_prefix, x.p0, x.p1, x.g0 + t0);
            span[1] = entry_of(x.e_prefix, x.p0, x.p1, x.g0 + t1 - 1) + 1;
        }
        __syncthreads();
        const Offset lo = span[0], hi = span[1];
        for (std::uint64_t t = t0 + threadIdx.x; t < t1; t += blockDim.x) {
            const Offset g = x.g0 + t;
            const Offset p = entry_of(x.e_prefix, lo, hi, g);
            const Index row = x.a_rows[p];
            const ColIndex k = x.a_cols[p];
            const ColIndex j = x.b_cols[x.b_offsets[k] + (g - x.e_prefix[p])];
            x.keys[t] = (Key(row - x.r0) << x.colbits) | Key(j);
            if (x.mask_offsets) {
                const bool in = contains_sorted(x.mask_cols, x.mask_offsets[row], x.mask_offsets[row + 1], j);
                x.keep[t] = in != x.complement;
            } else {
                x.slots[t] = Slot(t);
            }
        }
        __syncthreads();  // span is rewritten by the next tile
    }
}

__global__ void gather_keys_kernel(std::uint64_t n, const Slot* slots, const Key* from, Key* to) {
    for (std::uint64_t s = thread_index(); s < n; s += thread_count()) to[s] = from[slots[s]];
}

__global__ void run_heads_kernel(std::uint64_t n, const Key* keys, std::uint8_t* head) {
    for (std::uint64_t s = thread_index(); s < n; s += thread_count()) head[s] = s == 0 || keys[s] != keys[s - 1];
}

__global__ void decode_runs_kernel(std::uint64_t runs, const Slot* run_start, const Key* keys, Key colmask,
                                   Key* run_keys, ColIndex* cols) {
    for (std::uint64_t r = thread_index(); r < runs; r += thread_count()) {
        const Key k = keys[run_start[r]];
        run_keys[r] = k;
        cols[r] = ColIndex(k & colmask);
    }
}

// offsets[r0 + lr] for lr in [0, nb]: the batch's entries before local row lr, after base earlier entries.
__global__ void row_offsets_kernel(Index r0, Index nb, const Key* run_keys, std::uint64_t runs, int colbits, Offset base,
                                   Offset* offsets) {
    for (std::uint64_t lr = thread_index(); lr <= nb; lr += thread_count())
        offsets[r0 + lr] = base + (lr == nb ? runs : lower_bound_key(run_keys, runs, Key(lr) << colbits));
}

// ------------------------------------------------------------------ CUB, compiled once

using spgemm_detail::exclusive_sum;
using spgemm_detail::Scratch;

// out = the positions s < n with flags[s] set, in increasing order; returns their number.
std::uint64_t select_positions(const std::uint8_t* flags, std::uint64_t n, Slot* out, Offset* d_count,
                               Scratch& scratch, const Context& ctx) {
    thrust::counting_iterator<Slot> first(0);
    std::size_t bytes = 0;
    check(cub::DeviceSelect::Flagged(nullptr, bytes, first, flags, out, d_count, std::int64_t(n), stream_of(ctx)),
          "SpGEMM: select size");
    check(cub::DeviceSelect::Flagged(scratch.get(bytes), bytes, first, flags, out, d_count, std::int64_t(n),
                                     stream_of(ctx)),
          "SpGEMM: select");
    Offset count = 0;
    cuda::copy(&count, d_count, sizeof(Offset), CopyKind::device_to_host, ctx.stream());
    return count;
}

void sort_pairs(cub::DoubleBuffer<Key>& keys, cub::DoubleBuffer<Slot>& slots, std::uint32_t n, int end_bit,
                Scratch& scratch, const Context& ctx) {
    std::size_t bytes = 0;
    check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, slots, n, 0, end_bit, stream_of(ctx)),
          "SpGEMM: sort size");
    check(cub::DeviceRadixSort::SortPairs(scratch.get(bytes), bytes, keys, slots, n, 0, end_bit, stream_of(ctx)),
          "SpGEMM: sort");
}

// ------------------------------------------------------------------ batching

// Products per batch: HYBLA_SPGEMM_BATCH when set (tests force many batches with it), else what fits in a
// quarter of the free device memory at about 26 bytes a product, within [2^20, 2^28].
std::uint64_t batch_budget() {
    if (const char* e = std::getenv("HYBLA_SPGEMM_BATCH"); e && *e) {
        char* end = nullptr;
        unsigned long long v = std::strtoull(e, &end, 10);
        if (end != e && v > 0) return v;
    }
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    const std::uint64_t free_bytes = available_device_bytes(device);
    return std::clamp<std::uint64_t>(free_bytes / 4 / 26, std::uint64_t(1) << 20, std::uint64_t(1) << 28);
}

}  // namespace

PatternResult expand_sort_compress(const Operands& x, const MaskPattern* mask, const Context& ctx, RunSink& sink) {
    PatternResult result;
    if (x.m == 0 || x.n == 0 || x.a_nnz == 0 || x.b_nnz == 0) return result;
    check(cudaSetDevice(ctx.device()), "cudaSetDevice");
    const cudaStream_t stream = stream_of(ctx);
    Scratch scratch(ctx);

    // Every entry's first product number: the product index space the batches cut.
    Array<Offset> e_prefix(x.a_nnz + 1, ctx);
    {
        Array<Offset> work(x.a_nnz + 1, ctx);
        entry_work_kernel<<<grid_for(x.a_nnz + 1), block_size, 0, stream>>>(x.a_nnz, x.a_cols, x.b_offsets,
                                                                          work.data());
        check_launch("SpGEMM: entry work kernel");
        exclusive_sum(work.data(), e_prefix.data(), x.a_nnz + 1, scratch, ctx);
    }
    const Offset total = e_prefix.get(x.a_nnz);
    if (total == 0) return result;
    Array<std::uint32_t> a_rows(x.a_nnz, ctx);
    entry_rows_kernel<<<grid_for(x.m * 32), block_size, 0, stream>>>(x.m, x.a_offsets, a_rows.data());
    check_launch("SpGEMM: entry rows kernel");

    const std::uint64_t budget = batch_budget();
    const int colbits = bits_for(x.n);
    const Key colmask = (Key(1) << colbits) - 1;
    Array<Offset> offsets(x.m + 1, ctx);
    Array<Offset> scalars(5, ctx);
    std::vector<Array<ColIndex>> col_parts;
    Offset nnz = 0;
    std::size_t batches = 0;
    std::uint64_t kept_products = 0;

    for (Index r0 = 0; r0 < x.m;) {
        Offset bounds[5] = {x.m, 0, x.a_nnz, 0, total};
        if (!(r0 == 0 && total <= budget)) {
            batch_end_kernel<<<1, 1, 0, stream>>>(e_prefix.data(), x.a_offsets, x.m, r0, budget, scalars.data());
            check_launch("SpGEMM: batch end kernel");
            cuda::copy(bounds, scalars.data(), sizeof bounds, CopyKind::device_to_host, ctx.stream());
        }
        const Index r1 = bounds[0], nb = r1 - r0;
        const std::uint64_t nprod = bounds[4] - bounds[3];
        if (nprod > std::numeric_limits<Slot>::max())
            throw OutOfMemory("SpGEMM: row " + std::to_string(r0) + " has " + std::to_string(nprod) +
                                  " intermediate products (the sort-based SpGEMM takes fewer than 2^32 per row)",
                              std::size_t(nprod) * 26);
        ++batches;
        std::uint64_t n = 0, runs = 0;
        Array<ColIndex> cols(0, ctx);
        if (nprod > 0) {
            const int end_bit = std::max(1, colbits + bits_for(nb));
            Array<Key> keys_a(nprod, ctx), keys_b(0, ctx);
            Array<Slot> slots_a(nprod, ctx), slots_b(0, ctx);
            Array<std::uint8_t> flags(nprod, ctx);
            ExpandArgs ex{e_prefix.data(), bounds[1], bounds[2], bounds[3], nprod, x.a_cols, a_rows.data(),
                          x.b_offsets, x.b_cols, r0, colbits,
                          mask ? mask->offsets : nullptr, mask ? mask->cols : nullptr, mask && mask->complement,
                          keys_a.data(), slots_a.data(), flags.data()};
            expand_kernel<<<grid_for(nprod, std::uint64_t(block_size) * expand_items), block_size, 0, stream>>>(ex);
            check_launch("SpGEMM: expand kernel");
            // Sort input in (keys_a, slots_a) or, masked, in (keys_b, slots_a) after the selection.
            Key* sort_keys = keys_a.data();
            Key* spare_keys = nullptr;
            if (mask) {
                n = select_positions(flags.data(), nprod, slots_a.data(), scalars.data(), scratch, ctx);
                keys_b = Array<Key>(n, ctx);
                if (n > 0) {
                    gather_keys_kernel<<<grid_for(n), block_size, 0, stream>>>(n, slots_a.data(), keys_a.data(),
                                                                           keys_b.data());
                    check_launch("SpGEMM: gather keys kernel");
                }
                sort_keys = keys_b.data();
                spare_keys = keys_a.data();
            } else {
                n = nprod;
                keys_b = Array<Key>(n, ctx);
                spare_keys = keys_b.data();
            }
            kept_products += n;
            if (n > 0) {
                slots_b = Array<Slot>(n, ctx);
                cub::DoubleBuffer<Key> dk(sort_keys, spare_keys);
                cub::DoubleBuffer<Slot> ds(slots_a.data(), slots_b.data());
                sort_pairs(dk, ds, std::uint32_t(n), end_bit, scratch, ctx);
                const Key* sorted_keys = dk.Current();
                const Slot* sorted_slots = ds.Current();
                Slot* run_start = ds.Alternate();
                Key* run_keys = dk.Alternate();
                run_heads_kernel<<<grid_for(n), block_size, 0, stream>>>(n, sorted_keys, flags.data());
                check_launch("SpGEMM: run heads kernel");
                runs = select_positions(flags.data(), n, run_start, scalars.data(), scratch, ctx);
                cols = Array<ColIndex>(runs, ctx);
                decode_runs_kernel<<<grid_for(runs), block_size, 0, stream>>>(runs, run_start, sorted_keys, colmask,
                                                                          run_keys, cols.data());
                check_launch("SpGEMM: decode runs kernel");
                row_offsets_kernel<<<grid_for(nb + 1), block_size, 0, stream>>>(r0, nb, run_keys, runs, colbits, nnz,
                                                                            offsets.data());
                check_launch("SpGEMM: row offsets kernel");
                Array<Slot> long_runs(std::max<std::uint64_t>(1, n / (long_run + 1)), ctx);
                Array<unsigned> long_count(1, ctx);
                check(cudaMemsetAsync(long_count.data(), 0, sizeof(unsigned), stream), "SpGEMM: clearing a count");
                BatchRuns br{run_keys, sorted_slots, run_start, runs, n, e_prefix.data(), bounds[3], r0, colbits,
                             x.a_offsets, x.a_cols, x.b_offsets, long_runs.data(), long_count.data()};
                sink.combine(br, ctx);
            }
        }
        if (runs == 0) {
            row_offsets_kernel<<<grid_for(nb + 1), block_size, 0, stream>>>(r0, nb, nullptr, 0, colbits, nnz,
                                                                        offsets.data());
            check_launch("SpGEMM: row offsets kernel");
        } else {
            col_parts.push_back(std::move(cols));
        }
        nnz += runs;
        r0 = r1;
    }
    trace("cuda spgemm: expand-sort-compress, %llu products (%llu kept by the mask), %zu batch%s of at most %llu, "
          "%llu entries",
          (unsigned long long)total, (unsigned long long)kept_products, batches, batches == 1 ? "" : "es",
          (unsigned long long)budget, (unsigned long long)nnz);
    if (nnz == 0) return result;
    result.empty = false;
    result.nnz = nnz;
    result.cols = concatenate(col_parts, nnz, ctx);
    result.offsets = std::move(offsets);
    return result;
}

namespace {

// ------------------------------------------------------------------ per-type combining

template <class T>
struct Products {
    const T* a_vals;
    const T* b_vals;
    BinaryOp multiply;
    MonoidOp add;

    // The value of product number t (within the batch) of the given row.
    __device__ T operator()(const BatchRuns& x, Slot t, Offset row_begin, Offset row_end) const {
        const Offset g = x.g0 + t;
        const Offset p = entry_of(x.e_prefix, row_begin, row_end, g);
        const ColIndex k = x.a_cols[p];
        return apply_binary(multiply, a_vals[p], b_vals[x.b_offsets[k] + (g - x.e_prefix[p])]);
    }
};

__device__ inline void run_bounds(const BatchRuns& x, std::uint64_t r, std::uint64_t& s0, std::uint64_t& s1,
                                  Offset& row_begin, Offset& row_end) {
    s0 = x.run_start[r];
    s1 = r + 1 < x.runs ? x.run_start[r + 1] : x.n;
    const Index row = x.r0 + Index(x.run_keys[r] >> x.colbits);
    row_begin = x.a_offsets[row];
    row_end = x.a_offsets[row + 1];
}

// A thread per run, products combined left to right as the CPU does; long runs are left to the block kernel.
template <class T>
__global__ void combine_short_kernel(BatchRuns x, Products<T> prod, T* vals) {
    for (std::uint64_t r = thread_index(); r < x.runs; r += thread_count()) {
        std::uint64_t s0, s1;
        Offset rb, re;
        run_bounds(x, r, s0, s1, rb, re);
        if (prod.add == MonoidOp::any) {  // the first term wins
            vals[r] = prod(x, x.slots[s0], rb, re);
            continue;
        }
        if (s1 - s0 > long_run) {
            x.long_runs[atomicAdd(x.long_count, 1u)] = Slot(r);
            continue;
        }
        T acc = prod(x, x.slots[s0], rb, re);
        for (std::uint64_t s = s0 + 1; s < s1; ++s) acc = apply_monoid(prod.add, acc, prod(x, x.slots[s], rb, re));
        vals[r] = acc;
    }
}

// A block per long run: each thread combines a contiguous chunk in order, then thread 0 combines the
// chunks in thread order, so the result keeps the left-to-right order (grouped differently from the CPU:
// floating sums agree within rounding).
template <class T>
__global__ void __launch_bounds__(block_size) combine_long_kernel(BatchRuns x, Products<T> prod, T* vals) {
    __shared__ T partial[block_size];
    __shared__ bool has[block_size];
    const unsigned count = *x.long_count;
    for (unsigned li = blockIdx.x; li < count; li += gridDim.x) {
        const std::uint64_t r = x.long_runs[li];
        std::uint64_t s0, s1;
        Offset rb, re;
        run_bounds(x, r, s0, s1, rb, re);
        const std::uint64_t chunk = (s1 - s0 + blockDim.x - 1) / blockDim.x;
        const std::uint64_t b = s0 + threadIdx.x * chunk;
        const std::uint64_t e = b + chunk < s1 ? b + chunk : s1;
        T acc{};
        if (b < e) {
            acc = prod(x, x.slots[b], rb, re);
            for (std::uint64_t s = b + 1; s < e; ++s) acc = apply_monoid(prod.add, acc, prod(x, x.slots[s], rb, re));
        }
        partial[threadIdx.x] = acc;
        has[threadIdx.x] = b < e;
        __syncthreads();
        if (threadIdx.x == 0) {
            T total = partial[0];  // thread 0's chunk is never empty
            for (unsigned w = 1; w < blockDim.x; ++w)
                if (has[w]) total = apply_monoid(prod.add, total, partial[w]);
            vals[r] = total;
        }
        __syncthreads();
    }
}

template <class T>
class ValueSink final : public RunSink {
public:
    explicit ValueSink(Products<T> prod) : prod_(prod) {}
    void combine(const BatchRuns& batch, const Context& ctx) override {
        Array<T> vals(batch.runs, ctx);
        const cudaStream_t stream = stream_of(ctx);
        combine_short_kernel<T><<<grid_for(batch.runs), block_size, 0, stream>>>(batch, prod_, vals.data());
        check_launch("SpGEMM: combine kernel");
        if (batch.n > long_run && prod_.add != MonoidOp::any) {
            const unsigned blocks = unsigned(std::min<std::uint64_t>(batch.n / (long_run + 1), 4096));
            combine_long_kernel<T><<<blocks, block_size, 0, stream>>>(batch, prod_, vals.data());
            check_launch("SpGEMM: combine long runs kernel");
        }
        parts_.push_back(std::move(vals));
    }
    Array<T> values(std::size_t total, const Context& ctx) { return concatenate(parts_, total, ctx); }

private:
    Products<T> prod_;
    std::vector<Array<T>> parts_;
};

}  // namespace
}  // namespace esc

template <class T>
Matrix<T> esc_spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask) {
    const Context& ctx = a.context();
    const Index m = a.nrows(), n = b.ncols();
    esc::Operands x{m,
                    n,
                    a.storage_offsets().data(),
                    a.storage_indices().data(),
                    a.nvals(),
                    b.storage_offsets().data(),
                    b.storage_indices().data(),
                    b.nvals()};
    esc::ValueSink<T> sink(esc::Products<T>{a.storage_values().data(), b.storage_values().data(), sr.multiply, sr.add});
    esc::PatternResult pattern = esc::expand_sort_compress(x, mask, ctx, sink);
    if (pattern.empty) return Matrix<T>(m, n, ctx);
    Array<T> vals = sink.values(pattern.nnz, ctx);
    return Matrix<T>::adopt_csr(m, n, pattern.nnz, std::move(pattern.offsets), std::move(pattern.cols), std::move(vals));
}

#define HYBLA_SPGEMM_INSTANTIATE(T) \
    template Matrix<T> esc_spgemm<T>(const Matrix<T>&, const Matrix<T>&, SemiringCode, const MaskPattern*);
HYBLA_CUDA_VALUE_TYPES(HYBLA_SPGEMM_INSTANTIATE)
#undef HYBLA_SPGEMM_INSTANTIATE

}  // namespace hybla::cuda
