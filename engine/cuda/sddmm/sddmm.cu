// The SDDMM driver: the kernel's shape chosen from K and the value type, each warp's share from the entries and
// the device (sddmm.cuh has the kernel, README.md beside it the design).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/cuda/sddmm/sddmm.cuh"
#include "engine/dense_matrix.hpp"
#include "engine/matrix.hpp"
#include "engine/trace.hpp"

namespace hybla::cuda {

namespace sddmm_detail {
namespace {

// Entries per warp: an equal share of the entries over about four warps a multiprocessor's scheduler slot
// (132 x 32 warps on an H100), at least two rounds of the warp's groups so that a row's A stays in registers
// over several entries, at most 2^31; a multiple of the entries the warp takes at once.
// HYBLA_SDDMM_SHARE (tests) sets the share, so that small patterns give a warp many steps.
std::uint64_t per_warp(std::uint64_t nnz, unsigned at_once, int device) {
    const std::uint64_t warps = std::uint64_t(multiprocessor_count(device)) * 32;
    std::uint64_t share = std::max<std::uint64_t>((nnz + warps - 1) / warps, 2 * at_once);
    if (const char* e = std::getenv("HYBLA_SDDMM_SHARE"); e && *e) share = std::strtoull(e, nullptr, 10);
    share = std::clamp<std::uint64_t>(share, at_once, std::uint64_t(1) << 31);  // (32-bit positions in a share)
    return (share + at_once - 1) / at_once * at_once;
}

// The blocks for x with its share set for a warp that takes at_once entries at a time: enough for the entries,
// and for the copy of the offsets at 16 a thread (a pattern of few entries and many rows).
template <class T>
unsigned blocks_for(Args<T>& x, unsigned at_once, int device) {
    x.per_warp = per_warp(x.nnz, at_once, device);
    const std::uint64_t warps = (x.nnz + x.per_warp - 1) / x.per_warp;
    return unsigned(std::max((warps * warp_size + block_size - 1) / block_size,
                             (x.nrows + 1 + 16 * block_size - 1) / (16 * block_size)));
}

// Entries a group takes a step: 4 with one vector of A kept a lane, 2 with two, else 1 (the registers).
template <class T, class Sr, unsigned L, unsigned V, unsigned NV>
void launch(const Args<T>& x, const Sr& sr, int device, cudaStream_t stream) {
    constexpr unsigned U = NV == 1 ? 4 : NV == 2 ? 2 : 1;
    Args<T> a = x;
    const unsigned blocks = blocks_for(a, 32 / L * U, device);
    sddmm_kernel<T, Sr, L, V, NV, U><<<blocks, block_size, 0, stream>>>(a, sr);
    checked(int(cudaGetLastError()), "SDDMM kernel");
    trace("cuda sddmm: %llu entries, k %llu: shares, %u lanes an entry, %u values a load, %u loads of A kept a "
          "lane, %u entries a group a step, %llu entries a warp",
          (unsigned long long)x.nnz, (unsigned long long)x.k, L, V, NV, U, (unsigned long long)a.per_warp);
}

// The rows kernel's lanes an entry, or 0 for the shares kernel. plus_times takes 8 lanes (a 128-byte line of each
// row a load, steps of 16 entries) from 16 vectors a row on, else 4 (steps of 32 entries). The rows kernel when the
// pattern's rows hold two steps' entries on average (32 or 64). H200, with the shares kernel reading the row
// array, each kernel on every graph: R-MAT 16-18 (28 entries a row) 7-12% faster with shares at float K = 64 and
// double K = 32, where one step had been the rule; bcsstk16 (60 a row) 14% faster with shares at float K = 32 (4
// lanes: 64 asked), 5-14% slower with them at double K = 32-64 and float K = 64-128 (8 lanes: 32 asked), 8%
// faster at double K = 128; every other graph within 2%. HYBLA_SDDMM_ROWS=1 takes it always, 0 never, search
// always without the row array; HYBLA_SDDMM_ROWS_LANES=4 or 8 sets its lanes (tests, benchmarks). (Its rows of
// vectors are counted in 32 bits. The 8 lanes were measured with 16-byte vectors.) A pattern without its row array
// (2^32 rows or more) always takes it.
template <class Sr>
unsigned rows_lanes(std::uint64_t nnz, std::uint64_t nrows, std::uint64_t kv, bool entry_rows) {
    unsigned lanes = std::is_same_v<Sr, PlusTimes> && kv >= 16 ? 8 : 4;
    if (const char* e = std::getenv("HYBLA_SDDMM_ROWS_LANES"); e && *e && std::is_same_v<Sr, PlusTimes>)
        lanes = std::string(e) == "8" ? 8 : 4;
    if (!entry_rows) return lanes;
    if (kv >> 31) return 0;
    if (const char* e = std::getenv("HYBLA_SDDMM_ROWS"); e && *e) return std::string(e) == "1" ? lanes : 0;
    // Over 32 vectors the shares kernel gives an entry the whole warp: no step crosses rows for several entries,
    // which is what the rows kernel saves (H200, double K = 128, three passes: bcsstk13 0.86-0.93x -> 1.05-1.07x
    // of cuSPARSE, mbeacxc 0.91-0.94x -> 1.09-1.43x, bcsstk16 0.89x either way).
    if (kv > warp_size) return 0;
    const std::uint64_t step = warp_size / lanes * 4;
    return nnz >= 2 * step * nrows ? lanes : 0;
}

template <class T, class Sr, unsigned L, unsigned V>
void launch_rows(const Args<T>& x, const Sr& sr, int device, cudaStream_t stream) {
    Args<T> a = x;
    const unsigned blocks = blocks_for(a, warp_size / L * 4, device);
    sddmm_rows_kernel<T, Sr, L, V><<<blocks, block_size, 0, stream>>>(a, sr);
    checked(int(cudaGetLastError()), "SDDMM kernel");
    trace("cuda sddmm: %llu entries, k %llu: row segments, %u lanes an entry, %u values a load, %llu entries a warp",
          (unsigned long long)x.nnz, (unsigned long long)x.k, L, V, (unsigned long long)a.per_warp);
}

// Long rows (rows_lanes): the rows kernel. Otherwise the shape for K = kv vectors of V values: up to 32 vectors,
// one a lane on the fewest lanes (a power of two) that hold them; up to 256, a whole warp with 2, 4 or 8 kept a
// lane; beyond, a warp streaming both rows.
template <class T, class Sr, unsigned V>
void dispatch_lanes(const Args<T>& x, const Sr& sr, int device, cudaStream_t stream) {
    const std::uint64_t kv = x.k / V;
    if (const unsigned lanes = rows_lanes<Sr>(x.nnz, x.nrows, kv, x.rows != nullptr)) {
        if constexpr (std::is_same_v<Sr, PlusTimes>)
            if (lanes == 8) return launch_rows<T, Sr, 8, V>(x, sr, device, stream);
        return launch_rows<T, Sr, 4, V>(x, sr, device, stream);
    }
    if (kv <= 1) return launch<T, Sr, 1, V, 1>(x, sr, device, stream);
    if (kv <= 2) return launch<T, Sr, 2, V, 1>(x, sr, device, stream);
    if (kv <= 4) return launch<T, Sr, 4, V, 1>(x, sr, device, stream);
    if (kv <= 8) return launch<T, Sr, 8, V, 1>(x, sr, device, stream);
    if (kv <= 16) return launch<T, Sr, 16, V, 1>(x, sr, device, stream);
    if (kv <= 32) return launch<T, Sr, 32, V, 1>(x, sr, device, stream);
    if (kv <= 64) return launch<T, Sr, 32, V, 2>(x, sr, device, stream);
    if (kv <= 128) return launch<T, Sr, 32, V, 4>(x, sr, device, stream);
    if (kv <= 256) return launch<T, Sr, 32, V, 8>(x, sr, device, stream);
    return launch<T, Sr, 32, V, 0>(x, sr, device, stream);
}

// 16-byte loads when K fills them (rows start 16-byte aligned: the arrays are the pool's, K x sizeof(T) a
// multiple of 16), else one value a load. Only float and double take vectors (the types of the GNN workloads;
// the others keep the library's build short).
template <class T, class Sr>
void dispatch(const Args<T>& x, const Sr& sr, int device, cudaStream_t stream) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        constexpr unsigned V = 16 / sizeof(T);
        if (x.k % V == 0) return dispatch_lanes<T, Sr, V>(x, sr, device, stream);
    }
    dispatch_lanes<T, Sr, 1>(x, sr, device, stream);
}

// The row of each entry: a warp a row (grid-stride), its lanes over the row's entries.
__global__ void __launch_bounds__(block_size) entry_rows_kernel(const Offset* off, std::uint64_t nrows,
                                                                std::uint32_t* rows) {
    const unsigned lane = threadIdx.x % warp_size;
    const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / warp_size);
    for (std::uint64_t r = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size; r < nrows; r += warps)
        for (Offset p = off[r] + lane; p < off[r + 1]; p += warp_size) rows[p] = std::uint32_t(r);
}

}  // namespace
}  // namespace sddmm_detail

Array<std::uint32_t> entry_rows(const Offset* offsets, Index nrows, Offset nnz, const Context& ctx) {
    if (nrows > 0xffffffffull)
        throw InvalidValue("entry_rows: " + std::to_string(nrows) + " rows do not fit 32-bit row numbers");
    Array<std::uint32_t> rows(nnz, ctx);
    if (nnz == 0) return rows;
    const std::uint64_t warps = std::min<std::uint64_t>(nrows, std::uint64_t(1) << 22);
    sddmm_detail::entry_rows_kernel<<<unsigned((warps + 7) / 8), sddmm_detail::block_size, 0,
                                      static_cast<cudaStream_t>(ctx.stream())>>>(offsets, nrows, rows.data());
    checked(int(cudaGetLastError()), "SDDMM row array kernel");
    return rows;
}

template <class T>
Matrix<T> sddmm(const MaskPattern& mask, Offset nnz, Index nrows, Index ncols, const DenseMatrix<T>& a,
                const DenseMatrix<T>& bt, SemiringCode sr) {
    const Context& ctx = a.context();
    const std::uint64_t k = a.ncols();
    if (k == 0 || nnz == 0) return Matrix<T>(nrows, ncols, ctx);  // no terms, or no entries: nothing
    const auto stream = static_cast<cudaStream_t>(ctx.stream());
    Array<Offset> off(nrows + 1, ctx);
    Array<ColIndex> cols(nnz, ctx);
    Array<T> vals(nnz, ctx);
    sddmm_detail::Args<T> x;
    x.nrows = nrows;
    x.nnz = nnz;
    x.k = k;
    x.off = mask.offsets;
    x.cols = mask.cols;
    x.rows = mask.rows;
    // HYBLA_SDDMM_ROWS=search (tests): the rows kernel without the row array, finding rows in the offsets as it
    // does past 2^32 rows.
    if (const char* e = std::getenv("HYBLA_SDDMM_ROWS"); e && std::string(e) == "search") x.rows = nullptr;
    // Without the row array (2^32 rows or more) the rows kernel runs, its rows of vectors counted in 32 bits.
    if (!x.rows && k >> 31)
        throw InvalidValue("mxm (SDDMM) on the GPU: a mask of " + std::to_string(nrows) + " rows with K = " +
                           std::to_string(k) + " is not supported (at most 2^31 - 1 values a row past 2^32 rows)");
    x.a = a.storage().data();
    x.bt = bt.storage().data();
    x.out_off = off.data();
    x.out_cols = cols.data();
    x.out = vals.data();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (sr.add == MonoidOp::plus && sr.multiply == BinaryOp::times) {
            sddmm_detail::dispatch<T>(x, PlusTimes{}, ctx.device(), stream);
            return Matrix<T>::adopt_csr(nrows, ncols, nnz, std::move(off), std::move(cols), std::move(vals));
        }
    }
    sddmm_detail::dispatch<T>(x, RuntimeSemiring{sr}, ctx.device(), stream);
    return Matrix<T>::adopt_csr(nrows, ncols, nnz, std::move(off), std::move(cols), std::move(vals));
}

#define HYBLA_INSTANTIATE(T)                                                                                  \
    template Matrix<T> sddmm<T>(const MaskPattern&, Offset, Index, Index, const DenseMatrix<T>&,              \
                                const DenseMatrix<T>&, SemiringCode);
HYBLA_CUDA_VALUE_TYPES(HYBLA_INSTANTIATE)
#undef HYBLA_INSTANTIATE

}  // namespace hybla::cuda
