// Kronecker product on the GPU: C(ia*mb + ib, ja*nb + jb) = op(A(ia, ja), B(ib, jb)).
// Row ia*mb + ib of C holds deg_A(ia) * deg_B(ib) entries, in the order (A entry, then B entry), which is
// already column order since B's columns are < nb. One prefix sum over those counts gives the row offsets;
// then every warp takes a contiguous run of output entries, each lane finds the row of its first by binary
// search and walks on from there, so huge rows spread evenly and the search cost is paid once per run.
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace {

using namespace keys;

constexpr unsigned warp_size = 32;
constexpr std::uint64_t run_length = 8;  // output entries per lane: a warp covers 32 * 8 consecutive entries

// Row offsets of kron(A, B) (pattern only, compiled once).
Array<Offset> kronecker_offsets(const Offset* aoff, Index ma, const Offset* boff, Index mb, const Context& ctx) {
    const Index m = ma * mb;
    Array<Offset> off(m + 1, ctx);
    Offset* o = off.data();
    for_each(m, ctx, "kronecker (counts)", [=] __device__(std::uint64_t i) {
        const Index ia = i / mb, ib = i % mb;
        o[i] = (aoff[ia + 1] - aoff[ia]) * (boff[ib + 1] - boff[ib]);
    });
    exclusive_scan(o, m + 1, ctx);
    return off;
}

// Each warp takes 256 consecutive output entries, lane l the entries l, l + 32, ... of them (coalesced
// stores). A lane searches the row of its first entry once and then walks forward: a few steps over rows,
// or a fresh search when many empty rows lie between.
template <class T>
__global__ void kronecker_kernel(Offset nnz, const Offset* off, Index m, Index mb, Index nb, const Offset* aoff,
                                 const ColIndex* ac, const T* av, const Offset* boff, const ColIndex* bc,
                                 const T* bv, BinaryOp op, ColIndex* oc, T* ov) {
    const std::uint64_t span = warp_size * run_length;
    const std::uint64_t lane = threadIdx.x % warp_size;
    const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / warp_size);
    for (std::uint64_t base = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / warp_size * span; base < nnz;
         base += warps * span) {
        Offset x = base + lane;
        if (x >= nnz) continue;
        const Offset last = base + span < nnz ? base + span : nnz;
        Index i = row_of(off, m, x);
        for (; x < last; x += warp_size) {
            if (x >= off[i + 1]) {
                int steps = 0;
                while (x >= off[i + 1] && steps < 4) ++i, ++steps;
                if (x >= off[i + 1]) i = Index(upper_bound(off, i + 1, m + 1, x) - 1);
            }
            const Index ia = i / mb, ib = i % mb;
            const Offset db = boff[ib + 1] - boff[ib];
            const Offset k = x - off[i];
            const Offset p = aoff[ia] + k / db, q = boff[ib] + k % db;
            oc[x] = ColIndex(Index(ac[p]) * nb + bc[q]);
            ov[x] = apply_binary<T>(op, av[p], bv[q]);
        }
    }
}

}  // namespace

template <class T>
Matrix<T> kronecker(const Matrix<T>& a, const Matrix<T>& b, BinaryOp op) {
    const Context& ctx = a.context();
    const Index ma = a.nrows(), mb = b.nrows(), nb = b.ncols();
    const Index m = ma * mb, n = a.ncols() * nb;
    if (m == 0 || a.nvals() == 0 || b.nvals() == 0) return Matrix<T>(m, n, ctx);
    Array<Offset> off = kronecker_offsets(a.storage_offsets().data(), ma, b.storage_offsets().data(), mb, ctx);
    Offset nnz = 0;
    check(cudaMemcpyAsync(&nnz, off.data() + m, sizeof(Offset), cudaMemcpyDeviceToHost, stream_of(ctx)),
          "cudaMemcpyAsync (kronecker count)");
    check(cudaStreamSynchronize(stream_of(ctx)), "cudaStreamSynchronize (kronecker count)");
    Array<ColIndex> cols(nnz, ctx);
    Array<T> vals(nnz, ctx);
    const std::uint64_t threads = (nnz + run_length - 1) / run_length;
    kronecker_kernel<T><<<grid_for(threads), block_size, 0, stream_of(ctx)>>>(
        nnz, off.data(), m, mb, nb, a.storage_offsets().data(), a.storage_indices().data(), a.storage_values().data(),
        b.storage_offsets().data(), b.storage_indices().data(), b.storage_values().data(), op, cols.data(), vals.data());
    check_launch("kronecker");
    return Matrix<T>::adopt_csr(m, n, nnz, std::move(off), std::move(cols), std::move(vals));
}

#define HYBLA_X(T) template Matrix<T> kronecker<T>(const Matrix<T>&, const Matrix<T>&, BinaryOp);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
