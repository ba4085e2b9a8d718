// cuSPARSE's SpGEMM as the GPU benchmarks call it (gpu_spgemm, gpu_contract): float CSR operands with 32-bit
// indices in device memory, and C = A·B with every buffer allocated in the call. Failures throw
// CompetitorFailure (gpu_common.hpp), with what was allocated freed.
#pragma once
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "bench/gpu_common.hpp"
#include "engine/hybla.hpp"

namespace hybla::bench {

inline constexpr std::int64_t cusparse_int32_max = std::numeric_limits<std::int32_t>::max();

// A CSR matrix with 32-bit offsets and columns in device memory, as cuSPARSE's SpGEMM takes it. It owns its
// arrays and descriptor, so that a cuSPARSE failure half-way through a sequence frees what was allocated.
struct DeviceCsr {
    std::int64_t m = 0, n = 0, nnz = 0;
    int* off = nullptr;
    int* col = nullptr;
    float* val = nullptr;
    cusparseSpMatDescr_t descr = nullptr;

    DeviceCsr() = default;
    DeviceCsr(const DeviceCsr&) = delete;
    DeviceCsr& operator=(const DeviceCsr&) = delete;
    DeviceCsr(DeviceCsr&& o) noexcept { swap(o); }
    DeviceCsr& operator=(DeviceCsr&& o) noexcept {
        DeviceCsr t(std::move(o));
        swap(t);
        return *this;
    }
    ~DeviceCsr() {
        if (descr) cusparseDestroySpMat(descr);
        cudaFree(off);
        cudaFree(col);
        cudaFree(val);
    }
    void swap(DeviceCsr& o) noexcept {
        std::swap(m, o.m);
        std::swap(n, o.n);
        std::swap(nnz, o.nnz);
        std::swap(off, o.off);
        std::swap(col, o.col);
        std::swap(val, o.val);
        std::swap(descr, o.descr);
    }
};

// A CPU matrix on the GPU for cuSPARSE; one past its 32-bit indices is a CompetitorFailure, as is a failed
// allocation.
inline DeviceCsr upload(const Matrix<float>& h, const std::string& name) {
    if (h.nrows() > Index(cusparse_int32_max) || h.ncols() > Index(cusparse_int32_max) || h.nvals() > Index(cusparse_int32_max))
        throw CompetitorFailure(name + " is " + std::to_string(h.nrows()) + "x" + std::to_string(h.ncols()) +
                                " with " + std::to_string(h.nvals()) + " entries, past cuSPARSE's 32-bit indices");
    DeviceCsr d;
    d.m = std::int64_t(h.nrows());
    d.n = std::int64_t(h.ncols());
    d.nnz = std::int64_t(h.nvals());
    const std::vector<int> off(h.row_offsets().begin(), h.row_offsets().end());
    const std::vector<int> col(h.col_indices().begin(), h.col_indices().end());
    const std::size_t entries = std::max<std::size_t>(1, col.size());
    cuda_try(cudaMalloc(&d.off, off.size() * sizeof(int)), "cudaMalloc (operand offsets)");
    cuda_try(cudaMalloc(&d.col, entries * sizeof(int)), "cudaMalloc (operand columns)");
    cuda_try(cudaMalloc(&d.val, entries * sizeof(float)), "cudaMalloc (operand values)");
    cuda_try(cudaMemcpy(d.off, off.data(), off.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_try(cudaMemcpy(d.col, col.data(), col.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_try(cudaMemcpy(d.val, h.values().data(), col.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    sparse_try(cusparseCreateCsr(&d.descr, d.m, d.n, d.nnz, d.off, d.col, d.val, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
               "cusparseCreateCsr");
    return d;
}

// C = A·B with cusparseSpGEMM as a user calls it: every buffer allocated in the call and freed before it
// returns. Any failure is a CompetitorFailure, with what was allocated freed.
inline DeviceCsr spgemm(cusparseHandle_t h, const DeviceCsr& a, const DeviceCsr& b) {
    DeviceCsr c;
    c.m = a.m;
    c.n = b.n;
    cuda_try(cudaMalloc(&c.off, (c.m + 1) * sizeof(int)), "cudaMalloc (C's offsets)");
    sparse_try(cusparseCreateCsr(&c.descr, c.m, c.n, 0, c.off, nullptr, nullptr, CUSPARSE_INDEX_32I,
                                 CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
               "cusparseCreateCsr (C)");
    // The SpGEMM descriptor and the two buffers, released on every way out.
    struct Work {
        cusparseSpGEMMDescr_t desc = nullptr;
        void* buf1 = nullptr;
        void* buf2 = nullptr;
        ~Work() {
            cudaFree(buf1);
            cudaFree(buf2);
            if (desc) cusparseSpGEMM_destroyDescr(desc);
        }
    } w;
    const float alpha = 1, beta = 0;
    const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    const auto alg = CUSPARSE_SPGEMM_DEFAULT;
    sparse_try(cusparseSpGEMM_createDescr(&w.desc), "cusparseSpGEMM_createDescr");
    std::size_t size1 = 0, size2 = 0;
    sparse_try(cusparseSpGEMM_workEstimation(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F, alg,
                                             w.desc, &size1, nullptr),
               "cusparseSpGEMM_workEstimation (size)");
    cuda_try(cudaMalloc(&w.buf1, std::max<std::size_t>(1, size1)), "cudaMalloc (SpGEMM buffer 1)");
    sparse_try(cusparseSpGEMM_workEstimation(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F, alg,
                                             w.desc, &size1, w.buf1),
               "cusparseSpGEMM_workEstimation");
    sparse_try(cusparseSpGEMM_compute(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F, alg, w.desc,
                                      &size2, nullptr),
               "cusparseSpGEMM_compute (size)");
    cuda_try(cudaMalloc(&w.buf2, std::max<std::size_t>(1, size2)), "cudaMalloc (SpGEMM buffer 2)");
    sparse_try(cusparseSpGEMM_compute(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F, alg, w.desc,
                                      &size2, w.buf2),
               "cusparseSpGEMM_compute");
    std::int64_t rows = 0, cols = 0, nnz = 0;
    sparse_try(cusparseSpMatGetSize(c.descr, &rows, &cols, &nnz), "cusparseSpMatGetSize");
    if (nnz > cusparse_int32_max)
        throw CompetitorFailure("C has " + std::to_string(nnz) + " entries, past cuSPARSE's 32-bit indices");
    c.nnz = nnz;
    cuda_try(cudaMalloc(&c.col, std::max<std::int64_t>(1, nnz) * sizeof(int)), "cudaMalloc (C's columns)");
    cuda_try(cudaMalloc(&c.val, std::max<std::int64_t>(1, nnz) * sizeof(float)), "cudaMalloc (C's values)");
    sparse_try(cusparseCsrSetPointers(c.descr, c.off, c.col, c.val), "cusparseCsrSetPointers");
    sparse_try(cusparseSpGEMM_copy(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F, alg, w.desc),
               "cusparseSpGEMM_copy");
    return c;
}

}  // namespace hybla::bench
