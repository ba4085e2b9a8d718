// SpMM under a mask, into a dense C: C(i,j) accum= ⊕_u A(i,u) ⊗ B(u,j) at the mask's entries only, and the two
// helpers of the complemented mask (the values of C at the mask's entries saved, and put back). A thread per mask
// entry, its row read from the mask's row array (a binary search of its offsets without one), its dot product a
// loop over A's row: the path
// for masks with few entries (personalized PageRank's restart terms: one entry per seed) and rows of A of a few
// entries; README.md beside this file says where it stands.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/launch.cuh"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/dense_matrix.hpp"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace masked_detail {
namespace {

constexpr unsigned block = 256;
constexpr Offset one_block_most = 1024;  // entries one block computes before any is written

struct Entries {
    const Offset* off;
    const ColIndex* cols;
    const std::uint32_t* rows;  // the mask's row array where it has one, else null
    Index nrows;
    Offset nnz;
    // The row of entry e: from the row array, else the last i with off[i] <= e (rows without entries share their
    // offset with the next), by a binary search.
    __device__ Index row_of(Offset e) const {
        if (rows) return rows[e];
        Index lo = 0, hi = nrows;  // off[lo] <= e < off[hi]
        while (hi - lo > 1) {
            const Index mid = lo + (hi - lo) / 2;
            if (off[mid] <= e) lo = mid;
            else hi = mid;
        }
        return lo;
    }
};

template <class T>
struct Product {
    const Offset* aoff;
    const ColIndex* acols;
    const T* avals;
    const T* b;
    std::uint64_t w;
    SemiringCode sr;
    // ⊕ over row i of A of A(i,u) ⊗ B(u,j); the first term starts the sum (`any` has no true identity), an empty
    // row gives the identity.
    __device__ T at(Index i, ColIndex j) const {
        Offset p = aoff[i];
        const Offset e = aoff[i + 1];
        if (p == e) return monoid_identity<T>(sr.add);
        T s = apply_binary<T>(sr.multiply, avals[p], b[std::uint64_t(acols[p]) * w + j]);
        for (++p; p < e; ++p) s = apply_monoid<T>(sr.add, s, apply_binary<T>(sr.multiply, avals[p], b[std::uint64_t(acols[p]) * w + j]));
        return s;
    }
};

template <class T>
struct Store {
    T* c;
    std::uint64_t w;
    bool accumulate;
    BinaryOp accum;
    __device__ void put(Index i, ColIndex j, T v) const {
        T& x = c[std::uint64_t(i) * w + j];
        x = accumulate ? apply_binary<T>(accum, x, v) : v;
    }
};

// Every kernel here is launched as a programmatic dependent (engine/cuda/launch.cuh): it starts by waiting for
// the kernel before. Each entry computed and stored (B is not C).
template <class T>
__global__ void __launch_bounds__(block) direct_kernel(Entries m, Product<T> p, Store<T> out) {
    wait_for_previous_kernel();
    allow_next_kernel();
    for (Offset e = Offset(blockIdx.x) * block + threadIdx.x; e < m.nnz; e += Offset(gridDim.x) * block) {
        const Index i = m.row_of(e);
        out.put(i, m.cols[e], p.at(i, m.cols[e]));
    }
}

// B is C, at most one_block_most entries: one block computes every entry, then stores them.
template <class T>
__global__ void __launch_bounds__(one_block_most) one_block_kernel(Entries m, Product<T> p, Store<T> out) {
    wait_for_previous_kernel();
    allow_next_kernel();
    const Offset e = threadIdx.x;
    Index i = 0;
    T v{};
    if (e < m.nnz) {
        i = m.row_of(e);
        v = p.at(i, m.cols[e]);
    }
    __syncthreads();
    if (e < m.nnz) out.put(i, m.cols[e], v);
}

// B is C, more entries: the values into a buffer, stored by scatter_kernel after.
template <class T>
__global__ void __launch_bounds__(block) values_kernel(Entries m, Product<T> p, T* vals) {
    wait_for_previous_kernel();
    allow_next_kernel();
    for (Offset e = Offset(blockIdx.x) * block + threadIdx.x; e < m.nnz; e += Offset(gridDim.x) * block)
        vals[e] = p.at(m.row_of(e), m.cols[e]);
}

template <class T>
__global__ void __launch_bounds__(block) scatter_kernel(Entries m, const T* vals, Store<T> out) {
    wait_for_previous_kernel();
    allow_next_kernel();
    for (Offset e = Offset(blockIdx.x) * block + threadIdx.x; e < m.nnz; e += Offset(gridDim.x) * block)
        out.put(m.row_of(e), m.cols[e], vals[e]);
}

template <class T>
__global__ void __launch_bounds__(block) gather_kernel(Entries m, const T* c, std::uint64_t w, T* vals) {
    wait_for_previous_kernel();
    allow_next_kernel();
    for (Offset e = Offset(blockIdx.x) * block + threadIdx.x; e < m.nnz; e += Offset(gridDim.x) * block)
        vals[e] = c[std::uint64_t(m.row_of(e)) * w + m.cols[e]];
}

unsigned grid_for(Offset n) {
    return unsigned(std::clamp<Offset>((n + block - 1) / block, 1, Offset(1) << 16));
}

Entries entries_of(const MaskPattern& mask, Offset nnz, Index nrows) {
    return Entries{mask.offsets, mask.cols, mask.rows, nrows, nnz};
}

}  // namespace
}  // namespace masked_detail

template <class T>
void spmm_masked(DenseMatrix<T>& c, const MaskPattern& mask, Offset nnz, const Matrix<T>& a, const DenseMatrix<T>& b,
                 SemiringCode sr, const BinaryOp* accum) {
    using namespace masked_detail;
    if (nnz == 0) return;
    const Context& ctx = c.context();
    checked(int(cudaSetDevice(ctx.device())), "cudaSetDevice");
    const auto stream = static_cast<cudaStream_t>(ctx.stream());
    const Entries m = entries_of(mask, nnz, c.nrows());
    const Product<T> p{a.storage_offsets().data(), a.storage_indices().data(), a.storage_values().data(),
                       b.storage().data(), b.ncols(), sr};
    const Store<T> out{c.storage().data(), c.ncols(), accum != nullptr, accum ? *accum : BinaryOp::first};
    if (b.storage().data() != std::as_const(c).storage().data()) {
        launch_after_previous(direct_kernel<T>, grid_for(nnz), block, stream, ctx.device(), "masked SpMM kernel", m, p,
                              out);
    } else if (nnz <= one_block_most) {
        launch_after_previous(one_block_kernel<T>, 1, unsigned(nnz), stream, ctx.device(), "masked SpMM kernel", m, p,
                              out);
    } else {
        Array<T> vals(nnz, ctx);
        launch_after_previous(values_kernel<T>, grid_for(nnz), block, stream, ctx.device(), "masked SpMM kernel", m, p,
                              vals.data());
        launch_after_previous(scatter_kernel<T>, grid_for(nnz), block, stream, ctx.device(), "masked SpMM kernel", m,
                              static_cast<const T*>(vals.data()), out);
    }
}

template <class T>
Array<T> dense_entries(const DenseMatrix<T>& c, const MaskPattern& mask, Offset nnz) {
    using namespace masked_detail;
    const Context& ctx = c.context();
    Array<T> vals(nnz, ctx);
    if (nnz == 0) return vals;
    checked(int(cudaSetDevice(ctx.device())), "cudaSetDevice");
    launch_after_previous(gather_kernel<T>, grid_for(nnz), block, static_cast<cudaStream_t>(ctx.stream()), ctx.device(),
                          "dense gather kernel", entries_of(mask, nnz, c.nrows()), c.storage().data(), c.ncols(),
                          vals.data());
    return vals;
}

template <class T>
void set_dense_entries(DenseMatrix<T>& c, const MaskPattern& mask, Offset nnz, const Array<T>& vals) {
    using namespace masked_detail;
    if (nnz == 0) return;
    const Context& ctx = c.context();
    checked(int(cudaSetDevice(ctx.device())), "cudaSetDevice");
    launch_after_previous(scatter_kernel<T>, grid_for(nnz), block, static_cast<cudaStream_t>(ctx.stream()),
                          ctx.device(), "dense scatter kernel", entries_of(mask, nnz, c.nrows()), vals.data(),
                          Store<T>{c.storage().data(), c.ncols(), false, BinaryOp::first});
}

#define HYBLA_INSTANTIATE(T)                                                                                          \
    template void spmm_masked<T>(DenseMatrix<T>&, const MaskPattern&, Offset, const Matrix<T>&, const DenseMatrix<T>&, \
                                 SemiringCode, const BinaryOp*);                                                      \
    template Array<T> dense_entries<T>(const DenseMatrix<T>&, const MaskPattern&, Offset);                           \
    template void set_dense_entries<T>(DenseMatrix<T>&, const MaskPattern&, Offset, const Array<T>&);
HYBLA_CUDA_VALUE_TYPES(HYBLA_INSTANTIATE)
#undef HYBLA_INSTANTIATE

}  // namespace hybla::cuda
