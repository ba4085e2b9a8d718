// The softmax steps of gpu_bench --gnn (bench/gnn_softmax.hpp).
#include "bench/gnn_softmax.hpp"

#include <algorithm>
#include <cmath>

namespace hybla::bench {

namespace {

constexpr int warp = 32;
constexpr int block = 256;

// One warp per row (grid-stride over the rows): each value v becomes exp(v - the row's max), and with Normalise is
// then divided by the row's sum of those. Every lane of a warp works on the same row, so the shuffles see all 32.
template <bool Normalise, class O>
__global__ void rows_kernel(std::int64_t rows, const O* offsets, float* values) {
    const int lane = threadIdx.x % warp;
    const std::int64_t stride = std::int64_t(gridDim.x) * (blockDim.x / warp);
    for (std::int64_t i = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp; i < rows; i += stride) {
        const std::int64_t begin = std::int64_t(offsets[i]), end = std::int64_t(offsets[i + 1]);
        float m = -INFINITY;
        for (std::int64_t p = begin + lane; p < end; p += warp) m = fmaxf(m, values[p]);
        for (int d = warp / 2; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
        float sum = 0;
        for (std::int64_t p = begin + lane; p < end; p += warp) {
            const float e = expf(values[p] - m);
            values[p] = e;
            sum += e;
        }
        if constexpr (Normalise) {
            for (int d = warp / 2; d > 0; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
            for (std::int64_t p = begin + lane; p < end; p += warp) values[p] /= sum;
        }
    }
}

template <bool Normalise, class O>
cudaError_t launch(std::int64_t rows, const O* offsets, float* values, cudaStream_t stream) {
    if (rows <= 0) return cudaSuccess;
    const std::int64_t warps_per_block = block / warp;
    const std::int64_t blocks = std::min<std::int64_t>((rows + warps_per_block - 1) / warps_per_block, 1 << 16);
    rows_kernel<Normalise><<<unsigned(blocks), block, 0, stream>>>(rows, offsets, values);
    return cudaGetLastError();
}

}  // namespace

cudaError_t softmax_rows(std::int64_t rows, const std::int32_t* offsets, float* values, cudaStream_t stream) {
    return launch<true>(rows, offsets, values, stream);
}

cudaError_t exp_minus_row_max(std::int64_t rows, const std::uint64_t* offsets, float* values, cudaStream_t stream) {
    return launch<false>(rows, offsets, values, stream);
}

}  // namespace hybla::bench
