// The softmax steps of gpu_bench --gnn (bench/gnn_softmax.cu), on CSR values in device memory: cuSPARSE has no
// softmax, and hybla has no exponential among its operators. One warp per row; each launch returns
// cudaGetLastError().
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace hybla::bench {

// Each row v of a CSR matrix (32-bit offsets, as cuSPARSE gets them) becomes exp(v - max v) / sum exp(v - max v).
cudaError_t softmax_rows(std::int64_t rows, const std::int32_t* offsets, float* values, cudaStream_t stream);

// Each value v of row i becomes exp(v - max of row i) (64-bit offsets, as hybla stores them): the step of the
// softmax that hybla's operations lack (inflate_rows(a, 1) then divides by the row sums).
cudaError_t exp_minus_row_max(std::int64_t rows, const std::uint64_t* offsets, float* values, cudaStream_t stream);

}  // namespace hybla::bench
