// Dense matrices on the GPU: the transpose (32 x 32 tiles through shared memory, so that both the reads and the
// writes are coalesced), element-wise operations, and column reductions (with an element-wise product first:
// column-wise inner products).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/launch.cuh"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/dense_matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cuda {

namespace {

using namespace keys;

constexpr unsigned tile = 32;
constexpr unsigned tile_rows = 8;  // threads per tile column: blockDim = (32, 8)

// Tiles are visited grid-stride in both dimensions, so any shape fits the grid limits.
template <class T>
__global__ void transpose_kernel(const T* a, Index m, Index n, T* t) {
    __shared__ T s[tile][tile + 1];  // + 1: column reads hit different banks
    const Index tiles_m = (m + tile - 1) / tile, tiles_n = (n + tile - 1) / tile;
    for (Index ty = blockIdx.y; ty < tiles_m; ty += gridDim.y)
        for (Index tx = blockIdx.x; tx < tiles_n; tx += gridDim.x) {
            const Index r0 = ty * tile, c0 = tx * tile;
            for (unsigned k = threadIdx.y; k < tile; k += tile_rows) {
                const Index r = r0 + k, c = c0 + threadIdx.x;
                if (r < m && c < n) s[k][threadIdx.x] = a[r * n + c];
            }
            __syncthreads();
            // t is n x m: row c0 + k, column r0 + threadIdx.x.
            for (unsigned k = threadIdx.y; k < tile; k += tile_rows) {
                const Index r = c0 + k, c = r0 + threadIdx.x;
                if (r < n && c < m) t[r * m + c] = s[threadIdx.x][k];
            }
            __syncthreads();
        }
}

// Column reductions: a block of 32 x 8 threads takes 32 columns (threadIdx.x) of a chunk of rows; row phase
// threadIdx.y folds rows y, y + 8, ... of the chunk in order, then the 8 phases are folded in order (y = 0
// first) into partial[chunk * k + column]. A second kernel folds the chunks (column_fold_kernel). The order is
// fixed by the shape, so a result is the same on every run.
constexpr unsigned col_x = 32, col_y = 8;
constexpr std::uint64_t max_chunks = 1024;

template <class T>
__global__ void column_inner_kernel(std::uint64_t n, std::uint64_t k, std::uint64_t rows_per_chunk, const T* a,
                                    const T* b, T* partial, RuntimeSemiring sr) {
    __shared__ T s[col_y][col_x];
    __shared__ bool has[col_y][col_x];
    wait_for_previous_kernel();  // both column kernels are programmatic dependents (engine/cuda/launch.cuh)
    allow_next_kernel();
    const std::uint64_t j = std::uint64_t(blockIdx.x) * col_x + threadIdx.x;
    const std::uint64_t r0 = std::uint64_t(blockIdx.y) * rows_per_chunk;
    const std::uint64_t r1 = r0 + rows_per_chunk < n ? r0 + rows_per_chunk : n;
    T acc{};
    bool any = false;
    if (j < k)
        for (std::uint64_t i = r0 + threadIdx.y; i < r1; i += col_y) {
            const T t = b ? sr.multiply<T>(a[i * k + j], b[i * k + j]) : a[i * k + j];
            acc = any ? sr.add<T>(acc, t) : t;
            any = true;
        }
    s[threadIdx.y][threadIdx.x] = acc;
    has[threadIdx.y][threadIdx.x] = any;
    __syncthreads();
    if (threadIdx.y == 0 && j < k) {
        for (unsigned y = 1; y < col_y; ++y)
            if (has[y][threadIdx.x]) {
                acc = any ? sr.add<T>(acc, s[y][threadIdx.x]) : s[y][threadIdx.x];
                any = true;
            }
        partial[std::uint64_t(blockIdx.y) * k + j] = acc;  // every chunk has a row, so any is true
    }
}

// A block per column: thread t folds chunks t, t + 256, ... in order, then the threads' results are folded by a
// tree in shared memory (t with t + 128, then t + 64, ...): the order is fixed by the chunk count. A warp per
// column (11 loads a lane in turn on musae_facebook's 351 chunks) took 7 us; a single thread walking hundreds of
// chunks took 50-70 us.
constexpr unsigned fold_threads = 256;
template <class T>
__global__ void __launch_bounds__(fold_threads) column_fold_kernel(std::uint64_t k, std::uint64_t chunks,
                                                                   const T* partial, T* out, std::uint8_t* marked,
                                                                   RuntimeSemiring sr) {
    __shared__ T acc_of[fold_threads];
    __shared__ bool has_of[fold_threads];
    wait_for_previous_kernel();
    allow_next_kernel();
    const unsigned t = threadIdx.x;
    for (std::uint64_t j = blockIdx.x; j < k; j += gridDim.x) {
        T acc{};
        bool has = false;
        for (std::uint64_t c = t; c < chunks; c += fold_threads) {
            const T v = partial[c * k + j];
            acc = has ? sr.add<T>(acc, v) : v;
            has = true;
        }
        acc_of[t] = acc;
        has_of[t] = has;
        __syncthreads();
        for (unsigned half = fold_threads / 2; half > 0; half /= 2) {
            if (t < half && has_of[t + half]) {
                acc_of[t] = has_of[t] ? sr.add<T>(acc_of[t], acc_of[t + half]) : acc_of[t + half];
                has_of[t] = true;
            }
            __syncthreads();
        }
        if (t == 0) {
            out[j] = acc_of[0];
            marked[j] = 1;  // every column has rows: the result is full
        }
        __syncthreads();  // acc_of is written again for the next column
    }
}

}  // namespace

template <class T>
DenseMatrix<T> dense_transpose(const DenseMatrix<T>& a) {
    const Context& ctx = a.context();
    const Index m = a.nrows(), n = a.ncols();
    Array<T> out(m * n, ctx);
    if (m > 0 && n > 0) {
        const Index tiles_m = (m + tile - 1) / tile, tiles_n = (n + tile - 1) / tile;
        dim3 grid(unsigned(std::min<Index>(tiles_n, 1u << 16)), unsigned(std::min<Index>(tiles_m, 65535)));
        transpose_kernel<T><<<grid, dim3(tile, tile_rows), 0, stream_of(ctx)>>>(a.storage().data(), m, n, out.data());
        check_launch("dense_transpose");
    }
    return DenseMatrix<T>::import_row_major(n, m, std::move(out));
}

template <class T>
void dense_accumulate(DenseMatrix<T>& c, const DenseMatrix<T>& t, BinaryOp accum) {
    T* cd = c.storage().data();
    const T* td = t.storage().data();
    for_each(c.storage().size(), c.context(), "dense_accumulate",
             [=] __device__(std::uint64_t x) { cd[x] = apply_binary<T>(accum, cd[x], td[x]); });
}

template <class T>
DenseMatrix<T> dense_ewise(const DenseMatrix<T>& a, const DenseMatrix<T>& b, BinaryOp op) {
    Array<T> out(a.storage().size(), a.context());
    T* od = out.data();
    const T* ad = a.storage().data();
    const T* bd = b.storage().data();
    for_each(out.size(), a.context(), "dense_ewise",
             [=] __device__(std::uint64_t x) { od[x] = apply_binary<T>(op, ad[x], bd[x]); });
    return DenseMatrix<T>::import_row_major(a.nrows(), a.ncols(), std::move(out));
}

template <class T>
Vector<T> dense_column_inner(const DenseMatrix<T>& a, const DenseMatrix<T>* b, SemiringCode sr) {
    const Context& ctx = a.context();
    const std::uint64_t n = a.nrows(), k = a.ncols();
    if (n == 0 || k == 0) return Vector<T>(k, ctx);
    // Chunks of 64 rows (8 a thread) up to max_chunks: with 256 rows a chunk, personalized PageRank's test on
    // musae_facebook (22,472 x 64 doubles) ran on 176 blocks, 15 us, its loads too few in flight.
    const std::uint64_t chunks = std::min<std::uint64_t>((n + 63) / 64, max_chunks);
    const std::uint64_t rows_per_chunk = (n + chunks - 1) / chunks;
    const std::uint64_t used = (n + rows_per_chunk - 1) / rows_per_chunk;  // every chunk has a row
    const std::uint64_t panels = (k + col_x - 1) / col_x;
    auto s = stream_of(ctx);
    Array<T> partial(used * k, ctx), out(k, ctx);
    Array<std::uint8_t> marked(k, ctx);
    // Grid x is limited to 2^31 - 1 panels, y to 65535 chunks (used <= max_chunks).
    // Programmatic dependents (engine/cuda/launch.cuh): each placed while the kernel before it runs.
    launch_after_previous(column_inner_kernel<T>, dim3(unsigned(panels), unsigned(used)), dim3(col_x, col_y), s,
                          ctx.device(), "dense column reduction", n, k, rows_per_chunk, a.storage().data(),
                          b ? b->storage().data() : static_cast<const T*>(nullptr), partial.data(), RuntimeSemiring{sr});
    launch_after_previous(column_fold_kernel<T>, unsigned(std::min<std::uint64_t>(k, 1u << 16)), fold_threads, s,
                          ctx.device(), "dense column reduction (chunks)", k, used,
                          static_cast<const T*>(partial.data()), out.data(), marked.data(), RuntimeSemiring{sr});
    // Full, its count known here: nothing is read back (import_dense would check it on the host, a wait).
    return Vector<T>::adopt(k, k, true, Array<Index>(0, ctx), std::move(out), std::move(marked));
}

#define HYBLA_X(T)                                                          \
    template DenseMatrix<T> dense_transpose<T>(const DenseMatrix<T>&);      \
    template void dense_accumulate<T>(DenseMatrix<T>&, const DenseMatrix<T>&, BinaryOp); \
    template DenseMatrix<T> dense_ewise<T>(const DenseMatrix<T>&, const DenseMatrix<T>&, BinaryOp); \
    template Vector<T> dense_column_inner<T>(const DenseMatrix<T>&, const DenseMatrix<T>*, SemiringCode);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
