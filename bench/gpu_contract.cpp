// gpu_contract: hybla's graph contraction (algorithms/contract.hpp, plus, float, on the GPU) against the same
// contraction as two cuSPARSE SpGEMMs (cusparseSpGEMM, CUSPARSE_SPGEMM_DEFAULT): C = (S·A)·Sᵀ with S the
// k x n label indicator, in the same run on the same GPU.
//
//   gpu_contract GRAPH CLUSTERS [--runs N]
//
// CLUSTERS: mcl's output for GRAPH (one cluster per line, vertex names as GRAPH names them); a vertex in no
// cluster gets a label of its own. Times are medians of --runs repetitions between CUDA events, each
// including the allocations of the call. Two hybla times: the whole `contract` call as a user makes it (labels
// renumbered on the host, Sᵀ written as CSR and uploaded, S·A with S formed from it on the GPU, then (S·A)·Sᵀ),
// and its two products alone with S and Sᵀ already on the GPU, which is what the cuSPARSE time covers (S and Sᵀ
// are built and uploaded outside its timing). The results are compared (entries, and values to 1e-4 relative)
// before the line is printed; a mismatch makes the exit status 1.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/contract.hpp"
#include "engine/hybla.hpp"
#include "bench/gpu_common.hpp"
#include "io/read_graph.hpp"

namespace {

using namespace hybla;
using namespace hybla::bench;


// A CSR matrix with 32-bit offsets in device memory, as cuSPARSE takes it.
struct DeviceCsr {
    int m = 0, n = 0;
    std::int64_t nnz = 0;
    int* off = nullptr;
    int* col = nullptr;
    float* val = nullptr;
    cusparseSpMatDescr_t descr = nullptr;
    void release() {
        if (descr) cusparseDestroySpMat(descr);
        cudaFree(off);
        cudaFree(col);
        cudaFree(val);
        *this = DeviceCsr{};
    }
};
DeviceCsr upload(const Matrix<float>& host) {
    const Matrix<float> h = host.to(Context::cpu());
    DeviceCsr d;
    d.m = int(h.nrows());
    d.n = int(h.ncols());
    d.nnz = std::int64_t(h.nvals());
    std::vector<int> off(h.row_offsets().begin(), h.row_offsets().end());
    std::vector<int> col(h.col_indices().begin(), h.col_indices().end());
    cuda_check(cudaMalloc(&d.off, off.size() * sizeof(int)), "cudaMalloc");
    cuda_check(cudaMalloc(&d.col, std::max<std::size_t>(1, col.size()) * sizeof(int)), "cudaMalloc");
    cuda_check(cudaMalloc(&d.val, std::max<std::size_t>(1, col.size()) * sizeof(float)), "cudaMalloc");
    cuda_check(cudaMemcpy(d.off, off.data(), off.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_check(cudaMemcpy(d.col, col.data(), col.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_check(cudaMemcpy(d.val, h.values().data(), col.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    sparse_check(cusparseCreateCsr(&d.descr, d.m, d.n, d.nnz, d.off, d.col, d.val, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 "cusparseCreateCsr");
    return d;
}

// C = A·B with cusparseSpGEMM (work estimation, compute, copy), every buffer allocated in the call.
DeviceCsr spgemm(cusparseHandle_t h, const DeviceCsr& a, const DeviceCsr& b) {
    DeviceCsr c;
    c.m = a.m;
    c.n = b.n;
    cuda_check(cudaMalloc(&c.off, (c.m + 1) * sizeof(int)), "cudaMalloc");
    sparse_check(cusparseCreateCsr(&c.descr, c.m, c.n, 0, c.off, nullptr, nullptr, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 "cusparseCreateCsr (C)");
    const float alpha = 1, beta = 0;
    const auto op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    cusparseSpGEMMDescr_t desc;
    sparse_check(cusparseSpGEMM_createDescr(&desc), "cusparseSpGEMM_createDescr");
    std::size_t size1 = 0, size2 = 0;
    void *buf1 = nullptr, *buf2 = nullptr;
    sparse_check(cusparseSpGEMM_workEstimation(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F,
                                               CUSPARSE_SPGEMM_DEFAULT, desc, &size1, nullptr),
                 "cusparseSpGEMM_workEstimation");
    cuda_check(cudaMalloc(&buf1, std::max<std::size_t>(1, size1)), "cudaMalloc (SpGEMM buffer 1)");
    sparse_check(cusparseSpGEMM_workEstimation(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F,
                                               CUSPARSE_SPGEMM_DEFAULT, desc, &size1, buf1),
                 "cusparseSpGEMM_workEstimation");
    sparse_check(cusparseSpGEMM_compute(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F,
                                        CUSPARSE_SPGEMM_DEFAULT, desc, &size2, nullptr),
                 "cusparseSpGEMM_compute");
    cuda_check(cudaMalloc(&buf2, std::max<std::size_t>(1, size2)), "cudaMalloc (SpGEMM buffer 2)");
    sparse_check(cusparseSpGEMM_compute(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F,
                                        CUSPARSE_SPGEMM_DEFAULT, desc, &size2, buf2),
                 "cusparseSpGEMM_compute");
    std::int64_t rows = 0, cols = 0, nnz = 0;
    sparse_check(cusparseSpMatGetSize(c.descr, &rows, &cols, &nnz), "cusparseSpMatGetSize");
    c.nnz = nnz;
    cuda_check(cudaMalloc(&c.col, std::max<std::int64_t>(1, nnz) * sizeof(int)), "cudaMalloc");
    cuda_check(cudaMalloc(&c.val, std::max<std::int64_t>(1, nnz) * sizeof(float)), "cudaMalloc");
    sparse_check(cusparseCsrSetPointers(c.descr, c.off, c.col, c.val), "cusparseCsrSetPointers");
    sparse_check(cusparseSpGEMM_copy(h, op, op, &alpha, a.descr, b.descr, &beta, c.descr, CUDA_R_32F,
                                     CUSPARSE_SPGEMM_DEFAULT, desc),
                 "cusparseSpGEMM_copy");
    cusparseSpGEMM_destroyDescr(desc);
    cudaFree(buf1);
    cudaFree(buf2);
    return c;
}

std::vector<std::int64_t> read_labels(const std::string& path, const io::VertexNames& names, Index n) {
    std::unordered_map<std::string, Index> id;
    for (Index v = 0; v < n; ++v) id.emplace(names.name(v), v);
    std::vector<std::int64_t> label(n, -1);
    std::ifstream f(path);
    if (!f) {
        std::fprintf(stderr, "gpu_contract: cannot open %s\n", path.c_str());
        std::exit(2);
    }
    std::string line;
    std::int64_t k = 0;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        bool any = false;
        for (std::string w; in >> w;) {
            const auto it = id.find(w);
            if (it == id.end()) {
                std::fprintf(stderr, "gpu_contract: %s: '%s' is not a vertex of the graph\n", path.c_str(), w.c_str());
                std::exit(2);
            }
            label[it->second] = k;
            any = true;
        }
        k += any;
    }
    for (auto& l : label)
        if (l < 0) l = k++;
    return label;
}

template <class F>
double median_ms(int runs, F&& f) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    f();  // warm-up
    for (int r = 0; r < runs; ++r) {
        cudaEventRecord(a);
        f();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    program = "gpu_contract";
    if (argc < 3 || std::string(argv[1]) == "-h") {
        std::fprintf(stderr, "usage: gpu_contract GRAPH CLUSTERS [--runs N]\n");
        return argc < 3 ? 2 : 0;
    }
    int runs = 20;
    for (int k = 3; k + 1 < argc; k += 2)
        if (std::string(argv[k]) == "--runs") runs = std::max(1, std::atoi(argv[k + 1]));
    try {
        const Context gpu = Context::cuda();
        // An .abc graph as the contract program reads it: mirrored, repeated pairs at their largest weight.
        const std::string path = argv[1];
        io::Graph<float> g = io::graph_format_of(path) == io::GraphFormat::abc
                                 ? io::read_abc<float>(path, {.undirected = true}, max_op{})
                                 : io::read_graph<float>(path);
        const Index n = g.matrix.nrows();
        const std::vector<std::int64_t> labels = read_labels(argv[2], g.names, n);
        const Matrix<float> a = g.matrix.to(gpu);
        algorithms::Contracted<float, std::int64_t> ours;
        const double hybla_ms = median_ms(runs, [&] {
            ours = algorithms::contract(a, labels);
            cuda::synchronize(gpu.stream());
        });
        // The same product with cuSPARSE, S in the renumbering contract used.
        const auto cl = algorithms::compact_labels(std::span<const std::int64_t>(labels));
        const Index k = cl.labels.size();
        std::vector<Index> vs(n);
        for (Index v = 0; v < n; ++v) vs[v] = v;
        const std::vector<float> ones(n, 1.0f);
        const Matrix<float> s = Matrix<float>::from_tuples(k, n, std::span<const Index>(cl.compact),
                                                           std::span<const Index>(vs), std::span<const float>(ones),
                                                           first_op{}, Context::cpu());
        // hybla's two products alone, Sᵀ on the GPU with its transpose (S) kept on it by the warm-up call.
        const Matrix<float> st_gpu = s.transposed().to(gpu);
        Matrix<float> products;
        const double products_ms = median_ms(runs, [&] {
            products = algorithms::detail::coarsen<plus_monoid>(st_gpu, a);
            cuda::synchronize(gpu.stream());
        });
        DeviceCsr ds = upload(s), dst = upload(s.transposed()), da = upload(g.matrix);
        cusparseHandle_t h;
        sparse_check(cusparseCreate(&h), "cusparseCreate");
        DeviceCsr theirs;
        const double cusparse_ms = median_ms(runs, [&] {
            theirs.release();
            DeviceCsr sa = spgemm(h, ds, da);
            theirs = spgemm(h, sa, dst);
            sa.release();
        });
        // Compare.
        const Matrix<float> mine = ours.matrix.to(Context::cpu());
        std::vector<int> off(theirs.m + 1), col(theirs.nnz);
        std::vector<float> val(theirs.nnz);
        cuda_check(cudaMemcpy(off.data(), theirs.off, off.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy");
        cuda_check(cudaMemcpy(col.data(), theirs.col, col.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy");
        cuda_check(cudaMemcpy(val.data(), theirs.val, val.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy");
        bool same = Offset(theirs.nnz) == mine.nvals();
        for (Index i = 0; same && i < k; ++i)
            for (int p = off[i]; same && p < off[i + 1]; ++p) {
                const auto x = mine.get(i, Index(col[p]));
                same = x && std::fabs(*x - val[p]) <= 1e-4f * std::max(1.0f, std::fabs(val[p]));
            }
        std::printf("gpu_contract on %s: %s (%llu vertices, %llu entries) by %s: %llu labels, result %llu entries\n",
                    cuda::device_name(gpu.device()).c_str(), argv[1], (unsigned long long)n,
                    (unsigned long long)g.matrix.nvals(), argv[2], (unsigned long long)k,
                    (unsigned long long)mine.nvals());
        same = same && products.nvals() == mine.nvals();
        std::printf("hybla contract %.3f ms, cuSPARSE two SpGEMMs %.3f ms, ratio %.2f, results %s\n", hybla_ms,
                    cusparse_ms, hybla_ms / cusparse_ms, same ? "agree" : "DIFFER");
        std::printf("hybla's two products alone (S, Sᵀ on the GPU) %.3f ms, ratio %.2f to cuSPARSE's\n", products_ms,
                    products_ms / cusparse_ms);
        theirs.release();
        ds.release();
        dst.release();
        da.release();
        cusparseDestroy(h);
        return same ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_contract: %s\n", e.what());
        return 2;
    }
}
