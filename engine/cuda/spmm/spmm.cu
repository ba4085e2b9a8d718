// SpMM (sparse x dense) and SDDMM (dense x dense sampled by a sparse pattern) on the GPU: the straightforward
// versions. SpMM: one warp per row, lanes across the dense columns (coalesced reads of B's rows). SDDMM: one
// warp per sampled entry, lanes across the inner dimension, a shuffle reduction. Semiring-generic through
// run-time codes. The papers' kernels (HC-SpMM / DTC-SpMM, HP-SDDMM) replace these behind the same functions.
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/dense_matrix.hpp"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace {

constexpr int warp = 32;

inline void check_launch(const char* what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail(int(e), what);
}
inline unsigned blocks_for(std::uint64_t threads, unsigned block) {
    std::uint64_t b = (threads + block - 1) / block;
    return unsigned(b < 1 ? 1 : (b > (1u << 20) ? (1u << 20) : b));
}

// Rows longer than this many entries are split: each chunk of the entry array gets a warp (spmm_partial_kernel)
// and the chunks are combined in order (spmm_combine_kernel), so that a row of degree 10^6 is not summed by one
// warp while the others idle.
constexpr Offset long_row = 256;

// Row of entry p: the last row whose offset is <= p.
__device__ inline std::uint64_t row_of(const Offset* off, std::uint64_t nrows, Offset p) {
    std::uint64_t lo = 0, hi = nrows;
    while (hi - lo > 1) {
        std::uint64_t mid = (lo + hi) / 2;
        if (off[mid] <= p) lo = mid;
        else hi = mid;
    }
    return lo;
}

// ⊕ over entries [begin, end) (not empty) of the products A(i, k) ⊗ B(k, x), left to right; the first term
// starts the sum (`any` has no true identity).
template <class T>
__device__ inline T row_sum(Offset begin, Offset end, std::uint64_t w, std::uint64_t x, const ColIndex* ci, const T* av,
                            const T* b, const RuntimeSemiring& sr) {
    T acc = sr.multiply<T>(av[begin], b[std::uint64_t(ci[begin]) * w + x]);
    for (Offset p = begin + 1; p < end; ++p) acc = sr.add<T>(acc, sr.multiply<T>(av[p], b[std::uint64_t(ci[p]) * w + x]));
    return acc;
}

// A warp per row of at most long_row entries, lanes across the columns of B.
template <class T>
__global__ void spmm_kernel(std::uint64_t m, std::uint64_t w, const Offset* off, const ColIndex* ci, const T* av,
                            const T* b, T* c, RuntimeSemiring sr) {
    const std::uint64_t lane = threadIdx.x % warp;
    const std::uint64_t warps = (std::uint64_t(gridDim.x) * blockDim.x) / warp;
    for (std::uint64_t i = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp; i < m; i += warps) {
        const Offset begin = off[i], end = off[i + 1];
        if (end - begin > long_row) continue;
        T* crow = c + i * w;
        for (std::uint64_t x = lane; x < w; x += warp)
            crow[x] = begin == end ? sr.zero<T>() : row_sum(begin, end, w, x, ci, av, b, sr);
    }
}

// A warp per chunk u of the entry array, [u * long_row, (u + 1) * long_row). A long row cannot lie strictly
// inside one chunk, so its part of a chunk holds the chunk's first entry (slot 0) or its last (slot 1); the
// chunk writes its sums of those parts to partial[(2u + slot) * w ...]. Parts of short rows are skipped.
template <class T>
__global__ void spmm_partial_kernel(std::uint64_t m, std::uint64_t w, Offset nnz, const Offset* off, const ColIndex* ci,
                                    const T* av, const T* b, T* partial, RuntimeSemiring sr) {
    const std::uint64_t lane = threadIdx.x % warp;
    const std::uint64_t warps = (std::uint64_t(gridDim.x) * blockDim.x) / warp;
    const std::uint64_t chunks = (nnz + long_row - 1) / long_row;
    for (std::uint64_t u = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp; u < chunks; u += warps) {
        const Offset p0 = u * long_row, p1 = p0 + long_row < nnz ? p0 + long_row : nnz;
        const std::uint64_t first = row_of(off, m, p0), last = row_of(off, m, p1 - 1);
        if (off[first + 1] - off[first] > long_row) {
            const Offset e = off[first + 1] < p1 ? off[first + 1] : p1;
            for (std::uint64_t x = lane; x < w; x += warp) partial[2 * u * w + x] = row_sum(p0, e, w, x, ci, av, b, sr);
        }
        if (last != first && off[last + 1] - off[last] > long_row)
            for (std::uint64_t x = lane; x < w; x += warp)
                partial[(2 * u + 1) * w + x] = row_sum(off[last], p1, w, x, ci, av, b, sr);
    }
}

// A warp per long row: its chunks' partial sums combined in chunk order.
template <class T>
__global__ void spmm_combine_kernel(std::uint64_t m, std::uint64_t w, const Offset* off, const T* partial, T* c,
                                    RuntimeSemiring sr) {
    const std::uint64_t lane = threadIdx.x % warp;
    const std::uint64_t warps = (std::uint64_t(gridDim.x) * blockDim.x) / warp;
    for (std::uint64_t i = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp; i < m; i += warps) {
        const Offset begin = off[i], end = off[i + 1];
        if (end - begin <= long_row) continue;
        const std::uint64_t u0 = begin / long_row, u1 = (end - 1) / long_row;
        for (std::uint64_t x = lane; x < w; x += warp) {
            // Chunk u0 holds the row's first entry as its first entry only when the row starts the chunk.
            T acc = partial[(2 * u0 + (begin == u0 * long_row ? 0 : 1)) * w + x];
            for (std::uint64_t u = u0 + 1; u <= u1; ++u) acc = sr.add<T>(acc, partial[2 * u * w + x]);
            c[i * w + x] = acc;
        }
    }
}

template <class T>
__global__ void sddmm_kernel(std::uint64_t nrows, std::uint64_t nnz, std::uint64_t k, const Offset* off,
                             const ColIndex* ci, const T* a, const T* bt, T* out, RuntimeSemiring sr) {
    const unsigned lane = threadIdx.x % warp;
    const std::uint64_t warps = (std::uint64_t(gridDim.x) * blockDim.x) / warp;
    for (std::uint64_t p = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp; p < nnz; p += warps) {
        const std::uint64_t i = row_of(off, nrows, p), j = ci[p];
        const T* arow = a + i * k;
        const T* brow = bt + j * k;
        bool has = false;
        T acc{};
        for (std::uint64_t x = lane; x < k; x += warp) {
            T t = sr.multiply<T>(arow[x], brow[x]);
            acc = has ? sr.add<T>(acc, t) : t;
            has = true;
        }
        // Tree reduction; lanes without terms (k < 32) take no part. Lower lanes come first, so `any` keeps x = 0.
        for (int d = 1; d < warp; d *= 2) {
            T other = __shfl_down_sync(0xffffffffu, acc, d);
            bool other_has = __shfl_down_sync(0xffffffffu, has, d);
            if ((lane % (2 * d)) == 0 && other_has) {
                acc = has ? sr.add<T>(acc, other) : other;
                has = true;
            }
        }
        if (lane == 0) out[p] = acc;
    }
}

}  // namespace

template <class T>
DenseMatrix<T> spmm(const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr) {
    const Context& ctx = a.context();
    const std::uint64_t m = a.nrows(), w = b.ncols();
    Array<T> out(m * w, ctx);
    if (m * w > 0) {
        auto s = static_cast<cudaStream_t>(ctx.stream());
        const Offset* off = a.storage_offsets().data();
        const ColIndex* ci = a.storage_indices().data();
        const T* av = a.storage_values().data();
        const T* bv = b.storage().data();
        const RuntimeSemiring rs{sr};
        spmm_kernel<T><<<blocks_for(m * warp, 256), 256, 0, s>>>(m, w, off, ci, av, bv, out.data(), rs);
        check_launch("SpMM kernel");
        const Offset nnz = a.nvals();
        if (nnz > long_row) {  // there may be long rows: two partial sums per chunk, combined per row
            const std::uint64_t chunks = (nnz + long_row - 1) / long_row;
            Array<T> partial(2 * chunks * w, ctx);
            spmm_partial_kernel<T><<<blocks_for(chunks * warp, 256), 256, 0, s>>>(m, w, nnz, off, ci, av, bv,
                                                                                   partial.data(), rs);
            check_launch("SpMM long-row kernel");
            spmm_combine_kernel<T><<<blocks_for(m * warp, 256), 256, 0, s>>>(m, w, off, partial.data(), out.data(), rs);
            check_launch("SpMM long-row combine kernel");
        }
    }
    return DenseMatrix<T>::import_row_major(m, w, std::move(out));
}

template <class T>
Matrix<T> sddmm(const MaskPattern& mask, Index nrows, Index ncols, const DenseMatrix<T>& a, const DenseMatrix<T>& bt,
                SemiringCode sr) {
    const Context& ctx = a.context();
    Array<Offset> off(nrows + 1, ctx);
    off.copy_from(mask.offsets, ctx, nrows + 1);
    const std::uint64_t k = a.ncols();
    const Offset nnz = k == 0 ? 0 : off.get(nrows);
    if (k == 0) off.fill(0);  // no inner terms: no entries
    Array<ColIndex> ci(nnz, ctx);
    ci.copy_from(mask.cols, ctx, nnz);
    Array<T> vals(nnz, ctx);
    if (nnz > 0) {
        auto s = static_cast<cudaStream_t>(ctx.stream());
        sddmm_kernel<T><<<blocks_for(nnz * warp, 256), 256, 0, s>>>(nrows, nnz, k, off.data(), ci.data(), a.storage().data(),
                                                                     bt.storage().data(), vals.data(), RuntimeSemiring{sr});
        check_launch("SDDMM kernel");
    }
    return Matrix<T>::import_csr(nrows, ncols, std::move(off), std::move(ci), std::move(vals), false);
}

#define HYBLA_INSTANTIATE(T)                                                                                          \
    template DenseMatrix<T> spmm<T>(const Matrix<T>&, const DenseMatrix<T>&, SemiringCode);                          \
    template Matrix<T> sddmm<T>(const MaskPattern&, Index, Index, const DenseMatrix<T>&, const DenseMatrix<T>&,     \
                                SemiringCode);
HYBLA_CUDA_VALUE_TYPES(HYBLA_INSTANTIATE)
#undef HYBLA_INSTANTIATE

}  // namespace hybla::cuda
