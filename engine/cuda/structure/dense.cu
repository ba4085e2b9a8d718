// Dense-matrix helpers of the SpMM/SDDMM paths on the GPU: the transpose (32 x 32 tiles through shared memory,
// so that both the reads and the writes are coalesced) and C = accum(C, T) element by element.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/dense_matrix.hpp"

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

#define HYBLA_X(T)                                                          \
    template DenseMatrix<T> dense_transpose<T>(const DenseMatrix<T>&);      \
    template void dense_accumulate<T>(DenseMatrix<T>&, const DenseMatrix<T>&, BinaryOp);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
