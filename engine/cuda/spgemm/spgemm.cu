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
#include <bit>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/batching.hpp"
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

// products[i] = Σ over A(i,:) of |B(k,:)| (a warp per row).
__global__ void row_products_kernel(Index m, const Offset* a_off, const ColIndex* a_cols, const Offset* b_off,
                                    Offset* products) {
    const unsigned lane = threadIdx.x & 31;
    const std::uint64_t warps = thread_count() / 32;
    for (std::uint64_t i = thread_index() / 32; i < m; i += warps) {
        Offset sum = 0;
        for (Offset p = a_off[i] + lane; p < a_off[i + 1]; p += 32) {
            const ColIndex k = a_cols[p];
            sum += b_off[k + 1] - b_off[k];
        }
        for (unsigned d = 16; d > 0; d >>= 1) sum += __shfl_down_sync(full_mask, sum, d);
        if (lane == 0) products[i] = sum;
    }
}

struct GroupArgs {
    Index m, n;
    const Offset* a_off;
    const Offset* products;
    const Offset* nnz;  // null: the symbolic phase's grouping
    const Offset* m_off;
    bool complement;
    unsigned shared_enabled;  // groups 0 .. shared_enabled - 1 fit the device's shared memory
    unsigned min_group;
    Offset tile_products;  // an unmasked row of more products goes to tiles (0: none does)
    Offset* size;
    std::uint8_t* key;
    std::uint32_t* rows;
    unsigned long long* counts;  // group_count each
    unsigned long long* max_size;
    Offset* row_nnz;  // symbolic: where rows of one entry get their count
};

// Each row's size and group (no_group: nothing to do), the rows numbered for the sort by group, and each
// group's row count and largest size.
__global__ void group_kernel(GroupArgs x) {
    __shared__ unsigned long long hist[group_count], big[group_count];
    if (threadIdx.x < group_count) hist[threadIdx.x] = big[threadIdx.x] = 0;
    __syncthreads();
    for (std::uint64_t i = thread_index(); i < x.m; i += thread_count()) {
        const Offset prod = x.products[i];
        const Offset mask_len = x.m_off ? x.m_off[i + 1] - x.m_off[i] : 0;
        const bool masked = x.m_off && !x.complement;
        Offset s;
        if (!x.nnz) {
            s = prod < x.n ? prod : x.n;
            if (masked && mask_len < s) s = mask_len;
        } else {
            s = x.nnz[i] == 0 ? 0 : (masked && mask_len <= prod ? mask_len : x.nnz[i]);
        }
        std::uint8_t g = no_group;
        const bool single = !x.m_off && x.a_off[i + 1] - x.a_off[i] == 1;
        if (single && s > 0) {
            g = std::uint8_t(single_group);  // its count is its B row's length
            if (!x.nnz) x.row_nnz[i] = prod;
            atomicAdd(&hist[g], 1ull);
        } else if (s > 0 && x.tile_products && !x.m_off && prod > x.tile_products) {
            g = std::uint8_t(tiled_group);
            atomicAdd(&hist[g], 1ull);
        } else if (s > 0) {
            g = std::uint8_t(global_group);
            for (unsigned k = x.min_group; k < x.shared_enabled; ++k)
                if (s <= group_limit(k)) {
                    g = std::uint8_t(k);
                    break;
                }
            atomicAdd(&hist[g], 1ull);
            atomicMax(&big[g], (unsigned long long)s);
        }
        x.size[i] = s;
        x.key[i] = g;
        x.rows[i] = std::uint32_t(i);
    }
    __syncthreads();
    if (threadIdx.x < group_count && hist[threadIdx.x]) {
        atomicAdd(&x.counts[threadIdx.x], hist[threadIdx.x]);
        atomicMax(&x.max_size[threadIdx.x], big[threadIdx.x]);
    }
}

// out[r] = values[rows[r]] for the rows of one group.
__global__ void gather_kernel(std::uint64_t n, const std::uint32_t* rows, const Offset* values, Offset* out) {
    for (std::uint64_t r = thread_index(); r < n; r += thread_count()) out[r] = values[rows[r]];
}

// Rows of one entry A(i,k): C(i,:) = A(i,k) ⊗ B(k,:), in B's column order (a warp per row).
template <class T, class Sr>
__global__ void single_rows_kernel(std::uint64_t nrows, const std::uint32_t* rows, RowArgs x, Sr sr) {
    const unsigned lane = threadIdx.x & 31;
    const T* const a_vals = static_cast<const T*>(x.a_vals);
    const T* const b_vals = static_cast<const T*>(x.b_vals);
    T* const c_vals = static_cast<T*>(x.c_vals);
    for (std::uint64_t r = thread_index() / 32; r < nrows; r += thread_count() / 32) {
        const std::uint32_t row = rows[r];
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

template <class T, class Sr, bool Values, unsigned G, unsigned BLOCK, unsigned S>
void launch_rows(const RowArgs& x, const Sr& sr, std::uint64_t blocks, cudaStream_t stream) {
    constexpr std::size_t bytes = group_layout<Values, sizeof(T), G, BLOCK, S>().bytes;
    auto kernel = rows_kernel<T, Sr, Values, G, BLOCK, S>;
    if (bytes > 48 * 1024)
        check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
              "SpGEMM: cudaFuncSetAttribute");
    kernel<<<unsigned(std::min<std::uint64_t>(blocks, 0x7FFFFFFF)), BLOCK, bytes, stream>>>(x, sr);
    check_launch(Values ? "SpGEMM: numeric kernel" : "SpGEMM: symbolic kernel");
}

template <class T, class Sr, bool Values>
void launch_group(unsigned g, const RowArgs& x, const Sr& sr, std::uint64_t blocks, cudaStream_t stream) {
    constexpr auto& s = group_shapes;
    switch (g) {
        case 0: return launch_rows<T, Sr, Values, s[0].g, s[0].block, s[0].slots>(x, sr, blocks, stream);
        case 1: return launch_rows<T, Sr, Values, s[1].g, s[1].block, s[1].slots>(x, sr, blocks, stream);
        case 2: return launch_rows<T, Sr, Values, s[2].g, s[2].block, s[2].slots>(x, sr, blocks, stream);
        case 3: return launch_rows<T, Sr, Values, s[3].g, s[3].block, s[3].slots>(x, sr, blocks, stream);
        case 4: return launch_rows<T, Sr, Values, s[4].g, s[4].block, s[4].slots>(x, sr, blocks, stream);
        default: return launch_rows<T, Sr, Values, global_block, global_block, 0>(x, sr, blocks, stream);
    }
}

// split[k * (tiles + 1) + t] = the first entry of B(k,:) with a column of at least t * width (a thread each).
__global__ void split_kernel(Index rows, const Offset* b_off, const ColIndex* b_cols, unsigned tiles, unsigned width,
                             Offset* split) {
    const std::uint64_t per = std::uint64_t(tiles) + 1;
    for (std::uint64_t i = thread_index(); i < rows * per; i += thread_count()) {
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

template <class T, class Sr, bool Values>
void launch_tiles(const RowArgs& x, const TileArgs& t, const Sr& sr, const Context& ctx) {
    constexpr std::size_t bytes = tile_bytes<Values, sizeof(T)>();
    auto kernel = tile_rows_kernel<T, Sr, Values>;
    if (bytes > 48 * 1024)
        check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
              "SpGEMM: cudaFuncSetAttribute");
    const std::uint64_t blocks = std::min<std::uint64_t>(t.jobs, 8 * std::uint64_t(multiprocessor_count(ctx.device())));
    kernel<<<unsigned(blocks), tile_block, bytes, stream_of(ctx)>>>(x, t, sr);
    check_launch(Values ? "SpGEMM: numeric tile kernel" : "SpGEMM: symbolic tile kernel");
}

// Products per row (HYBLA_SPGEMM_HUB, default the largest shared-memory group's limit) above which an unmasked
// row is a hub, multiplied by tiles of columns.
Offset tile_products() {
    if (const char* e = std::getenv("HYBLA_SPGEMM_HUB"); e && *e) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(e, &end, 10);
        if (end != e && *end == '\0' && v > 0) return v;
    }
    return group_shapes[shared_groups - 1].limit;
}

// Columns of a tile of the hub rows: HYBLA_SPGEMM_TILE (tests), at most max_tile.
unsigned tile_width() {
    const unsigned w = env_unsigned("HYBLA_SPGEMM_TILE", max_tile);
    return std::clamp(w, 1u, max_tile);
}

// Rows sorted by group, and where each group starts.
struct Grouping {
    Array<Offset> size;
    Array<std::uint32_t> rows;
    std::array<unsigned long long, group_count> counts{}, max_size{}, start{};
};

Grouping group_rows(const GroupArgs& proto, const Context& ctx, Scratch& scratch) {
    const cudaStream_t stream = stream_of(ctx);
    Grouping out{Array<Offset>(proto.m, ctx), Array<std::uint32_t>(proto.m, ctx)};
    Array<std::uint8_t> keys(proto.m, ctx), keys_sorted(proto.m, ctx);
    Array<std::uint32_t> rows_in(proto.m, ctx);
    Array<unsigned long long> stats(2 * group_count, ctx);
    check(cudaMemsetAsync(stats.data(), 0, stats.size() * sizeof(unsigned long long), stream), "SpGEMM: memset");
    GroupArgs x = proto;
    x.size = out.size.data();
    x.key = keys.data();
    x.rows = rows_in.data();
    x.counts = stats.data();
    x.max_size = stats.data() + group_count;
    group_kernel<<<grid_for(proto.m), block_size, 0, stream>>>(x);
    check_launch("SpGEMM: group kernel");
    std::size_t bytes = 0;
    check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), keys_sorted.data(), rows_in.data(),
                                          out.rows.data(), std::int64_t(proto.m), 0, 4, stream),
          "SpGEMM: sort size");
    check(cub::DeviceRadixSort::SortPairs(scratch.get(bytes), bytes, keys.data(), keys_sorted.data(), rows_in.data(),
                                          out.rows.data(), std::int64_t(proto.m), 0, 4, stream),
          "SpGEMM: sorting rows by group");
    unsigned long long host[2 * group_count];
    cuda::copy(host, stats.data(), sizeof host, CopyKind::device_to_host, ctx.stream());
    unsigned long long at = 0;
    for (unsigned g = 0; g < group_count; ++g) {
        out.counts[g] = host[g];
        out.max_size[g] = host[group_count + g];
        out.start[g] = at;
        at += host[g];
    }
    return out;
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
    t.slots = pow2_at_least(2 * grp.max_size[global_group]);
    const std::uint64_t per_block = t.slots * bytes_per_slot;
    if (t.slots > (std::uint64_t(1) << 31))
        throw OutOfMemory("SpGEMM: a row of " + std::to_string(grp.max_size[global_group]) +
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

// products[i] for every row of a, and products[rows] = 0 (ready for an exclusive sum).
template <class T>
Array<Offset> row_products(const Csr<T>& a, const Csr<T>& b, const Context& ctx) {
    Array<Offset> products(a.rows + 1, ctx);
    check(cudaMemsetAsync(products.data() + a.rows, 0, sizeof(Offset), stream_of(ctx)), "SpGEMM: memset");
    row_products_kernel<<<grid_for(a.rows * 32), block_size, 0, stream_of(ctx)>>>(a.rows, a.off, a.idx, b.off,
                                                                                 products.data());
    check_launch("SpGEMM: row products kernel");
    return products;
}

// The symbolic and numeric phases for C = A ⊕.⊗ B (under the mask).
// products: each row's intermediate products when the caller has them (null: counted here).
template <class T, class Sr>
CsrResult<T> core(const Csr<T>& a, const Csr<T>& b, const Sr& sr, const MaskPattern* mask, const Context& ctx,
                  const Offset* row_products_given = nullptr) {
    const Index m = a.rows, n = b.cols;
    CsrResult<T> out{0, Array<Offset>(0, ctx), Array<ColIndex>(0, ctx), Array<T>(0, ctx)};
    if (m == 0 || n == 0 || a.nnz == 0 || b.nnz == 0) return out;
    const cudaStream_t stream = stream_of(ctx);
    Scratch scratch(ctx);
    const unsigned min_group = std::min(env_unsigned("HYBLA_SPGEMM_MIN_GROUP", 0), global_group);
    const bool ranged = env_unsigned("HYBLA_SPGEMM_RANGED", 1) != 0;

    RowArgs x;
    x.a_off = a.off;
    x.a_cols = a.idx;
    x.a_vals = a.vals;
    x.b_off = b.off;
    x.b_cols = b.idx;
    x.b_vals = b.vals;
    x.m_off = mask ? mask->offsets : nullptr;
    x.m_cols = mask ? mask->cols : nullptr;
    x.complement = mask && mask->complement;
    x.ranged = ranged;
    x.col_bits = unsigned(std::bit_width(std::uint64_t(n)));

    PhaseClock clock(stream);
    std::array<double, group_count> sym_ms{}, num_ms{};
    double setup_ms = 0, sort_ms = 0;
    Array<Offset> products = row_products_given ? Array<Offset>(0, ctx) : row_products(a, b, ctx);
    x.products = row_products_given ? row_products_given : products.data();

    // Symbolic phase: each row's distinct columns, grouped by an upper bound of them.
    Array<Offset> row_nnz(m + 1, ctx), c_off(m + 1, ctx);
    check(cudaMemsetAsync(row_nnz.data(), 0, (m + 1) * sizeof(Offset), stream), "SpGEMM: memset");
    // Unmasked hub rows go to tiles when B's split table fits an eighth of the free memory.
    const unsigned width = tile_width();
    const std::uint64_t tiles = (n + width - 1) / width;
    const bool tiling = !mask && b.rows * (tiles + 1) * sizeof(Offset) <= available_device_bytes(ctx.device()) / 8;
    GroupArgs gp{m, n, a.off, x.products, nullptr, x.m_off, x.complement,
                 shared_groups_enabled<false, sizeof(NoValue)>(ctx.device()), min_group,
                 tiling ? tile_products() : 0};
    gp.row_nnz = row_nnz.data();
    std::array<unsigned long long, group_count> sym_counts{};
    Array<Offset> split_table(0, ctx), job_nnz(0, ctx);
    TileArgs tx;
    tx.tiles = unsigned(tiles);
    tx.width = width;
    {
        Grouping grp = group_rows(gp, ctx, scratch);
        setup_ms += clock.mark();
        sym_counts = grp.counts;
        x.size = grp.size.data();
        x.row_nnz = row_nnz.data();
        const GlobalTables gt = plan_global(grp, 4 + 1, ctx);
        Array<std::uint32_t> t_keys(gt.blocks * gt.slots, ctx), t_hits(gt.blocks * gt.slots / 32, ctx);
        for (unsigned g = 0; g <= global_group; ++g) {
            if (grp.counts[g] == 0) continue;
            x.rows = grp.rows.data() + grp.start[g];
            x.nrows = grp.counts[g];
            std::uint64_t blocks;
            if (g == global_group) {
                x.t_keys = t_keys.data();
                x.t_hits = t_hits.data();
                x.t_slots = gt.slots;
                blocks = gt.blocks;
            } else {
                const std::uint64_t rpb = group_shapes[g].block / group_shapes[g].g;
                blocks = (x.nrows + rpb - 1) / rpb;
            }
            launch_group<NoValue, NoValues, false>(g, x, NoValues{}, blocks, stream);
            sym_ms[g] = clock.mark();
        }
        if (grp.counts[tiled_group]) {
            tx.jobs = grp.counts[tiled_group] * tiles;
            split_table = Array<Offset>(b.rows * (tiles + 1), ctx);
            split_kernel<<<grid_for(b.rows * (tiles + 1)), block_size, 0, stream>>>(b.rows, b.off, b.idx, tx.tiles,
                                                                                    width, split_table.data());
            check_launch("SpGEMM: split kernel");
            job_nnz = Array<Offset>(tx.jobs + 1, ctx);
            check(cudaMemsetAsync(job_nnz.data() + tx.jobs, 0, sizeof(Offset), stream), "SpGEMM: memset");
            tx.split = split_table.data();
            tx.job_nnz = job_nnz.data();
            tx.rows = grp.rows.data() + grp.start[tiled_group];
            launch_tiles<NoValue, NoValues, false>(x, tx, NoValues{}, ctx);
            sym_ms[tiled_group] = clock.mark();
        }
    }
    exclusive_sum(row_nnz.data(), c_off.data(), m + 1, scratch, ctx);
    Offset nnz = 0;
    cuda::copy(&nnz, c_off.data() + m, sizeof(Offset), CopyKind::device_to_host, ctx.stream());
    trace("cuda spgemm: hash %llu x %llu, symbolic rows per group %llu %llu %llu %llu %llu %llu (global) %llu "
          "(one entry) %llu (tiles of %u columns), %llu entries; ms %.3f %.3f %.3f %.3f %.3f %.3f %.3f",
          (unsigned long long)m, (unsigned long long)n, sym_counts[0], sym_counts[1], sym_counts[2], sym_counts[3],
          sym_counts[4], sym_counts[5], sym_counts[6], sym_counts[7], width, (unsigned long long)nnz, sym_ms[0],
          sym_ms[1], sym_ms[2], sym_ms[3], sym_ms[4], sym_ms[5], sym_ms[7]);
    if (nnz == 0) return out;

    // C allocated once, exactly.
    const std::size_t c_bytes = std::size_t(nnz) * (sizeof(ColIndex) + sizeof(T));
    if (c_bytes > available_device_bytes(ctx.device()))
        throw OutOfMemory("SpGEMM: the product has " + std::to_string(nnz) + " entries, " + std::to_string(c_bytes) +
                              " bytes, more than the device has free",
                          c_bytes);
    Array<ColIndex> c_cols(nnz, ctx);
    Array<T> c_vals(nnz, ctx);

    // Numeric phase, grouped by each row's exact count.
    {
        GroupArgs gn = gp;
        gn.nnz = row_nnz.data();
        gn.shared_enabled = shared_groups_enabled<true, sizeof(T)>(ctx.device());
        Grouping grp = group_rows(gn, ctx, scratch);
        setup_ms += clock.mark();
        x.size = grp.size.data();
        x.row_nnz = nullptr;
        x.c_off = c_off.data();
        x.c_cols = c_cols.data();
        x.c_vals = c_vals.data();
        const GlobalTables gt = plan_global(grp, 4 + 1 + sizeof(T), ctx);
        Array<std::uint32_t> t_keys(gt.blocks * gt.slots, ctx);
        Array<T> t_vals(gt.blocks * gt.slots, ctx);
        Array<std::uint8_t> t_flags(gt.blocks * gt.slots, ctx);
        for (unsigned g = 0; g < group_count; ++g) {
            if (grp.counts[g] == 0 || g == tiled_group) continue;
            x.rows = grp.rows.data() + grp.start[g];
            x.nrows = grp.counts[g];
            if (g == single_group) {
                single_rows_kernel<T, Sr><<<grid_for(x.nrows * 32), block_size, 0, stream>>>(x.nrows, x.rows, x, sr);
                check_launch("SpGEMM: rows of one entry");
                num_ms[g] = clock.mark();
                continue;
            }
            std::uint64_t blocks;
            if (g == global_group) {
                x.t_keys = t_keys.data();
                x.t_vals = t_vals.data();
                x.t_flags = t_flags.data();
                x.t_slots = gt.slots;
                blocks = gt.blocks;
            } else {
                const std::uint64_t rpb = group_shapes[g].block / group_shapes[g].g;
                blocks = (x.nrows + rpb - 1) / rpb;
            }
            launch_group<T, Sr, true>(g, x, sr, blocks, stream);
            num_ms[g] = clock.mark();
        }
        if (grp.counts[tiled_group]) {
            Array<Offset> job_off(tx.jobs + 1, ctx);
            exclusive_sum(job_nnz.data(), job_off.data(), tx.jobs + 1, scratch, ctx);
            tx.job_off = job_off.data();
            tx.rows = grp.rows.data() + grp.start[tiled_group];
            launch_tiles<T, Sr, true>(x, tx, sr, ctx);
            num_ms[tiled_group] = clock.mark();
        }
        // Rows in global tables were written unsorted.
        sort_rows<T>(grp.rows.data() + grp.start[global_group], grp.counts[global_group], row_nnz.data(),
                     c_off.data(), c_cols.data(), c_vals.data(), scratch, ctx);
        sort_ms = clock.mark();
        trace("cuda spgemm: hash, numeric rows per group %llu %llu %llu %llu %llu %llu (global) %llu (one entry) "
              "%llu (tiles), ranged gather %s; ms %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f, global rows sorted %.3f, "
              "setup %.3f",
              grp.counts[0], grp.counts[1], grp.counts[2], grp.counts[3], grp.counts[4], grp.counts[5],
              grp.counts[6], grp.counts[7], ranged ? "on" : "off", num_ms[0], num_ms[1], num_ms[2], num_ms[3],
              num_ms[4], num_ms[5], num_ms[6], num_ms[7], sort_ms, setup_ms);
    }
    out.nnz = nnz;
    out.off = std::move(c_off);
    out.cols = std::move(c_cols);
    out.vals = std::move(c_vals);
    return out;
}

// out[i] = in[i] + base for i < n.
__global__ void shift_offsets_kernel(std::uint64_t n, const Offset* in, Offset base, Offset* out) {
    for (std::uint64_t i = thread_index(); i < n; i += thread_count()) out[i] = in[i] + base;
}

// Products per batch of rows: HYBLA_SPGEMM_BATCH when set (tests), else what a third of the free memory holds
// at two entries of C per product (the batch's and its copy when batches are joined; entries never outnumber
// products).
template <class T>
std::uint64_t batch_products(const Context& ctx) {
    if (const char* e = std::getenv("HYBLA_SPGEMM_BATCH"); e && *e) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(e, &end, 10);
        if (end != e && *end == '\0' && v > 0) return v;
    }
    const std::uint64_t free_bytes = available_device_bytes(ctx.device());
    return std::max<std::uint64_t>(std::uint64_t(1) << 20, free_bytes / 3 / (2 * (sizeof(ColIndex) + sizeof(T))));
}

// C = A ⊕.⊗ B in batches of rows whose products fit the memory (one batch when all do); the batches' results
// are joined at the end. A product of fewer than esc_under products goes to ESC (its products are counted first).
template <class T, class Sr>
Matrix<T> multiply(const Matrix<T>& a, const Matrix<T>& b, const Sr& sr, const MaskPattern* mask, SemiringCode code,
                   Offset esc_under) {
    const Context& ctx = a.context();
    const Index m = a.nrows(), n = b.ncols();
    if (m >= empty_key || n >= empty_key)
        throw InvalidValue("SpGEMM on the GPU: the product is " + std::to_string(m) + " x " + std::to_string(n) +
                           "; rows and columns must number fewer than 2^32 - 1");
    if (m == 0 || n == 0 || a.nvals() == 0 || b.nvals() == 0) return Matrix<T>(m, n, ctx);
    check(cudaSetDevice(ctx.device()), "cudaSetDevice");
    const cudaStream_t stream = stream_of(ctx);
    const Csr<T> ca = csr_of(a), cb = csr_of(b);
    // Each row's first product: where the batches cut (copied to the host only when there is more than one).
    const Array<Offset> products = row_products(ca, cb, ctx);
    Array<Offset> first(m + 1, ctx);
    {
        Scratch scratch(ctx);
        exclusive_sum(products.data(), first.data(), m + 1, scratch, ctx);
    }
    const std::uint64_t budget = batch_products<T>(ctx);
    auto as_matrix = [&](CsrResult<T>&& r) {
        if (r.nnz == 0) return Matrix<T>(m, n, ctx);
        return Matrix<T>::import_csr(m, n, std::move(r.off), std::move(r.cols), std::move(r.vals), false);
    };
    const Offset all = first.get(m);
    if (all < esc_under) {
        trace("cuda spgemm: %llu products, fewer than %llu: expand-sort-compress", (unsigned long long)all,
              (unsigned long long)esc_under);
        return esc_spgemm(a, b, code, mask);
    }
    if (all <= budget) return as_matrix(core(ca, cb, sr, mask, ctx, products.data()));
    std::vector<Offset> prefix(m + 1);
    cuda::copy(prefix.data(), first.data(), (m + 1) * sizeof(Offset), CopyKind::device_to_host, ctx.stream());
    first = Array<Offset>(0, ctx);
    Offset biggest = 0;
    for (Index i = 0; i < m; ++i) biggest = std::max(biggest, prefix[i + 1] - prefix[i]);
    const std::vector<RowRange> batches =
        row_batches(prefix, std::max<std::uint64_t>(budget, biggest), empty_key - 1, "SpGEMM");
    trace("cuda spgemm: %zu batches of rows", batches.size());
    std::vector<CsrResult<T>> parts;
    Offset total = 0;
    for (const RowRange& r : batches) {
        Offset ends[2];
        cuda::copy(&ends[0], ca.off + r.begin, sizeof(Offset), CopyKind::device_to_host, ctx.stream());
        cuda::copy(&ends[1], ca.off + r.end, sizeof(Offset), CopyKind::device_to_host, ctx.stream());
        const Csr<T> slice{r.end - r.begin, ca.cols, ca.off + r.begin, ca.idx, ca.vals, ends[1] - ends[0]};
        MaskPattern mslice;
        if (mask) mslice = MaskPattern{mask->offsets + r.begin, mask->cols, mask->complement};
        parts.push_back(core(slice, cb, sr, mask ? &mslice : nullptr, ctx, products.data() + r.begin));
        total += parts.back().nnz;
    }
    if (total == 0) return Matrix<T>(m, n, ctx);
    Array<Offset> c_off(m + 1, ctx);
    Array<ColIndex> c_cols(total, ctx);
    Array<T> c_vals(total, ctx);
    Offset at = 0;
    for (std::size_t k = 0; k < batches.size(); ++k) {
        const RowRange& r = batches[k];
        CsrResult<T>& p = parts[k];
        const Index rows = r.end - r.begin;
        if (p.nnz == 0) {
            check(cudaMemsetAsync(c_off.data() + r.begin, 0, rows * sizeof(Offset), stream), "SpGEMM: memset");
            shift_offsets_kernel<<<grid_for(rows), block_size, 0, stream>>>(rows, c_off.data() + r.begin, at,
                                                                            c_off.data() + r.begin);
        } else {
            shift_offsets_kernel<<<grid_for(rows), block_size, 0, stream>>>(rows, p.off.data(), at,
                                                                            c_off.data() + r.begin);
            check(cudaMemcpyAsync(c_cols.data() + at, p.cols.data(), p.nnz * sizeof(ColIndex),
                                  cudaMemcpyDeviceToDevice, stream),
                  "SpGEMM: joining batches");
            check(cudaMemcpyAsync(c_vals.data() + at, p.vals.data(), p.nnz * sizeof(T), cudaMemcpyDeviceToDevice,
                                  stream),
                  "SpGEMM: joining batches");
        }
        check_launch("SpGEMM: shift offsets kernel");
        at += p.nnz;
        p = CsrResult<T>{0, Array<Offset>(0, ctx), Array<ColIndex>(0, ctx), Array<T>(0, ctx)};
    }
    check(cudaMemcpyAsync(c_off.data() + m, &at, sizeof(Offset), cudaMemcpyHostToDevice, stream), "SpGEMM: copy");
    check(cudaStreamSynchronize(stream), "SpGEMM: joining batches");
    return Matrix<T>::import_csr(m, n, std::move(c_off), std::move(c_cols), std::move(c_vals), false);
}

}  // namespace
}  // namespace hash

// The hash SpGEMM; a product of fewer than esc_under intermediate products goes to ESC instead.
template <class T>
Matrix<T> hash_spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask,
                      Offset esc_under) {
    if constexpr (std::is_floating_point_v<T>) {
        if (sr.add == MonoidOp::plus && sr.multiply == BinaryOp::times)
            return hash::multiply(a, b, PlusTimes{}, mask, sr, esc_under);
    }
    return hash::multiply(a, b, RuntimeSemiring{sr}, mask, sr, esc_under);
}

template <class T>
Matrix<T> spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask) {
    switch (spgemm_choice()) {
        case SpgemmChoice::esc: return esc_spgemm(a, b, sr, mask);
        case SpgemmChoice::hash: return hash_spgemm(a, b, sr, mask, 0);
        default: return hash_spgemm(a, b, sr, mask, esc_below);
    }
}

#define HYBLA_SPGEMM_INSTANTIATE(T)                                                                          \
    template Matrix<T> spgemm<T>(const Matrix<T>&, const Matrix<T>&, SemiringCode, const MaskPattern*);
HYBLA_CUDA_VALUE_TYPES(HYBLA_SPGEMM_INSTANTIATE)
#undef HYBLA_SPGEMM_INSTANTIATE

}  // namespace hybla::cuda
