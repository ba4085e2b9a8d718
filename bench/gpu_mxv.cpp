// gpu_bench: hybla's mxv (plus_times, float, through the public API in a CUDA context) against cuSPARSE's
// cusparseSpMV (CSR, CUSPARSE_SPMV_ALG_DEFAULT) on the same matrix, next to the memory-traffic floor.
//
//   gpu_bench [--data DIR] [--graphs a,b,...] [--runs N] [--quick] [--spmm w1,w2,...] [--sddmm K1,K2,...]
//             [--gnn K1,K2,...] [--reorder rcm|degree]
//
// --spmm: then SpMM, C = A B with B dense of each width w (row-major, random values in [0.5, 1.5)), float and
// double: hybla's mxm against cusparseSpMM (CSR with 32-bit offsets and columns, row-major B and C) with
// CUSPARSE_SPMM_ALG_DEFAULT and with CUSPARSE_SPMM_CSR_ALG2, each timed two ways: "call" (cusparseSpMM alone, its
// buffer allocated beforehand) and "seq" (bufferSize, cudaMalloc, cusparseSpMM, cudaFree: what a call costs a user
// who keeps nothing). cusparseSpMM_preprocess runs before ALG_DEFAULT's call and inside its sequence, never for
// CSR_ALG2: cuSPARSE documents it as helping CSR_ALG1 and CSR_ALG3 only, without effect for other algorithms.
// Columns: hybla ms; dflt call, dflt seq, alg2 call, alg2 seq (ms); best call = the faster of the two calls;
// ratio = best call / hybla (above 1: hybla is faster); GFLOP/s = 2*nnz*w / hybla time; floor ms; hybla/floor.
// Then the geometric mean of the ratio per type and w over the graphs, and the smallest ratio with its graph. All
// five results are checked against a double-precision CPU product (relative 1e-4 for float, 1e-9 for double, of
// max(1, |value|)); floor bytes = nnz * (4 + sizeof T) + (n+1)*8 + ncols*w*sizeof T (B read once) + n*w*sizeof T (C).
// --sddmm: then SDDMM, C<A> = X Xᵀ under A's structure with X dense n x K for each K (row-major, random values in
// [0.5, 1.5)), float and double: hybla's mxm (transpose_b, mask_structure; the result made inside the timed call)
// against cusparseSDDMM (CSR C holding A's pattern with 32-bit offsets and columns; matA = X with opA = N and
// matB = X with opB = T, both n x K row-major, the layout cuSPARSE documents as its fastest for CSR; ALG_DEFAULT),
// timed two ways: "call" (cusparseSDDMM alone, buffer allocated and cusparseSDDMM_preprocess run beforehand) and
// "sequence" (bufferSize, cudaMalloc, cusparseSDDMM, cudaFree: what a call costs a user who keeps nothing). Ratios
// are cuSPARSE time / hybla time (above 1: hybla is faster), with their geometric mean per type and K at the end.
// Checked against double-precision dot products (every entry below 2 million entries, else an odd stride over
// all rows, at least 100000 entries; relative 1e-4 for float, 1e-9 for double), hybla's pattern against A's;
// GFLOP/s = 2*nnz*K / hybla time; floor bytes = nnz * (4 + sizeof T) + (n+1)*8 + 2*n*K*sizeof T (X read once
// as the row operand and once as the column operand).
// --gnn: then two steps of graph neural networks, float, for each K, on the square graphs, each end to end as a
// user of the library calls it; every result checked against a double-precision CPU computation (relative 1e-4)
// before the line is printed:
//   gcn: H' = Â H, Â = D^-1/2 (A + I) D^-1/2 on A's pattern (D: the row counts of A + I; built once on the host,
//   outside the timing, as frameworks cache it), H n x K with random values in [0.5, 1.5): hybla's mxm against
//   the faster cusparseSpMM call of ALG_DEFAULT and CSR_ALG2 (as --spmm times them).
//   gat: S = A ∘ (X Xᵀ) on A's pattern, P = the softmax of each row of S (exp(s - row max) / row sum), H' = P X,
//   the three steps timed together; X n x K with random values in [0.5, 1.5) / sqrt(K), so that the scores are of
//   order 1 as scaled dot-product attention keeps them. hybla: mxm (SDDMM, as --sddmm calls it), then
//   exp(s - row max) by bench/gnn_softmax.cu on S's CSR arrays taken out with export_csr and put back with
//   adopt_csr (hybla has no exponential among its operators: a user writes this step), inflate_rows(S, 1) (the
//   division by the row sums), mxm (SpMM, H' made in the call). cuSPARSE: cusparseSDDMM, the softmax kernel of
//   bench/gnn_softmax.cu in place, cusparseSpMM, with their buffers sized, allocated and preprocessed once before
//   the timing (a layer calls them on the same pattern and shapes every time, so a framework keeps them); the
//   sequence is timed with each SpMM algorithm and the faster counts.
//   Columns: hybla ms, cuSPARSE ms, alg (the cusparseSpMM algorithm of the faster time), ratio = cuSPARSE / hybla
//   (above 1: hybla is faster); then the geometric mean of the ratio per step and K, and the smallest.
// --reorder: the SpMM, SDDMM and GNN tables also run each graph renumbered by algorithms/reorder.hpp's
// locality_order (as "<graph>+rcm" or "+degree"), after a line with the order's cost: the order on the host, then
// permuted() on the GPU. The random dense operands are not permuted (they are random either way).
// Graphs: files of the data folder (DIR/<name>/<file>, read with io::read_graph) and R-MAT graphs "rmatS" of any
// scale S from 1 to 30 (the default set has rmat18 .. rmat22; Graph500 parameters a=.57 b=.19 c=.19, edge factor
// 16, symmetrised, scrambled ids).
// Every matrix gets random values in [0.5, 1.5) and u random values, all present. Each time is the median of
// --runs repetitions, each between two CUDA events, after warm-up. Both results are checked against a
// double-precision CPU product (relative 1e-4) before a line is printed; a failed check is reported and
// makes the exit status 1.
//
// floor = bytes / the device-to-device copy bandwidth measured at start (cudaMemcpy of 1 GiB, bytes read
// plus written, median of 9), with bytes = nnz * (4 column + 4 value) + (n + 1) * 8 row offsets + ncols * 4
// (u) + n * 4 (w values) + n * 1 (w bitmap): hybla's 64-bit offsets and its result bitmap are counted, which
// cuSPARSE (32-bit offsets here, no bitmap) does not move.
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "algorithms/reorder.hpp"
#include "bench/gnn_softmax.hpp"
#include "bench/gpu_common.hpp"
#include "engine/hybla.hpp"
#include "io/read_graph.hpp"

namespace {

using namespace hybla;
using namespace hybla::bench;

struct Args {
    std::string data;
    std::vector<std::string> graphs;
    int runs = 50;
    bool quick = false;
    std::vector<Index> spmm_widths;  // --spmm: also SpMM against cusparseSpMM for these widths
    std::vector<Index> sddmm_ks;     // --sddmm: also SDDMM against cusparseSDDMM for these inner dimensions
    std::vector<Index> gnn_ks;       // --gnn: also a GCN and a GAT step against cuSPARSE for these feature widths
    std::optional<algorithms::LocalityOrder> reorder;  // --reorder: those tables also on the renumbered graph
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "gpu_bench: %s needs a value\n", s.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (s == "--data") a.data = value();
        else if (s == "--runs") a.runs = std::max(1, std::atoi(value().c_str()));
        else if (s == "--quick") a.quick = true;
        else if (s == "--graphs") a.graphs = split_list(value());
        else if (s == "--spmm")
            for (const std::string& w : split_list(value())) a.spmm_widths.push_back(Index(std::max(1, std::atoi(w.c_str()))));
        else if (s == "--sddmm")
            for (const std::string& k : split_list(value()))
                a.sddmm_ks.push_back(Index(std::max(1, std::atoi(k.c_str()))));
        else if (s == "--gnn")
            for (const std::string& k : split_list(value())) a.gnn_ks.push_back(Index(std::max(1, std::atoi(k.c_str()))));
        else if (s == "--reorder") {
            const std::string how = value();
            if (how == "rcm") a.reorder = algorithms::LocalityOrder::rcm;
            else if (how == "degree") a.reorder = algorithms::LocalityOrder::degree;
            else {
                std::fprintf(stderr, "gpu_bench: --reorder takes rcm or degree, not %s\n", how.c_str());
                std::exit(2);
            }
        } else if (s == "--help" || s == "-h") {
            std::printf("usage: gpu_bench [--data DIR] [--graphs a,b,...] [--runs N] [--quick] [--spmm w1,w2,...]\n"
                        "                 [--sddmm K1,K2,...] [--gnn K1,K2,...] [--reorder rcm|degree]\n"
                        "--spmm: also SpMM C = A B, B dense with each width w, against cusparseSpMM ALG_DEFAULT and\n"
                        "  CSR_ALG2 (float, double), each timed as the call alone and as bufferSize + cudaMalloc +\n"
                        "  call + cudaFree\n"
                        "--sddmm: also SDDMM C<A> = X Xt, X dense n x K for each K, against cusparseSDDMM (float,\n"
                        "  double); cuSPARSE timed as the call alone and as bufferSize + cudaMalloc + call + cudaFree\n"
                        "--gnn: also two GNN steps with n x K features for each K, float, end to end against cuSPARSE:\n"
                        "  gcn (normalised adjacency times H) and gat (SDDMM, row softmax, SpMM)\n"
                        "--reorder: those tables also on each graph renumbered by rcm or degree order (with its cost)\n"
                        "graphs: data folder names (default set: ");
            for (auto& [n, f] : data_files) std::printf("%s ", n.c_str());
            std::printf(") and rmatS for R-MAT scale S (1 to 30)\n");
            std::exit(0);
        } else {
            std::fprintf(stderr, "gpu_bench: unknown argument %s (try --help)\n", s.c_str());
            std::exit(2);
        }
    }
    if (a.data.empty()) a.data = default_data_dir();
    if (a.graphs.empty()) {
        if (a.quick) a.graphs = {"soc-Slashdot0902", "git_web_ml", "delaunay_n16", "rmat18", "rmat20"};
        else {
            for (auto& [n, f] : data_files) a.graphs.push_back(n);
            for (int s = 18; s <= 22; ++s) a.graphs.push_back("rmat" + std::to_string(s));
        }
        if (a.quick) a.runs = std::min(a.runs, 20);
    }
    return a;
}

// The pattern of m with random values in [0.5, 1.5), as float.
template <class T>
Matrix<float> with_random_values(const Matrix<T>& m, std::mt19937_64& rng) {
    const Index n = m.nrows();
    Array<Offset> off(n + 1);
    std::copy(m.storage_offsets().begin(), m.storage_offsets().end(), off.begin());
    Array<ColIndex> col(m.nvals());
    std::copy(m.storage_indices().begin(), m.storage_indices().end(), col.begin());
    Array<float> val(m.nvals());
    std::uniform_real_distribution<float> u(0.5f, 1.5f);
    for (auto& v : val) v = u(rng);
    return Matrix<float>::import_csr(n, m.ncols(), std::move(off), std::move(col), std::move(val), false);
}

// Device-to-device copy bandwidth, bytes read plus written per second.
double copy_bandwidth() {
    const std::size_t bytes = std::size_t(1) << 30;
    void *a = nullptr, *b = nullptr;
    cuda_check(cudaMalloc(&a, bytes), "cudaMalloc (copy test)");
    cuda_check(cudaMalloc(&b, bytes), "cudaMalloc (copy test)");
    cuda_check(cudaMemset(a, 0x5a, bytes), "cudaMemset");
    cudaEvent_t e0, e1;
    cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
    cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
    std::vector<double> ms;
    for (int r = 0; r < 11; ++r) {
        cuda_check(cudaEventRecord(e0), "cudaEventRecord");
        cuda_check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
        cuda_check(cudaEventRecord(e1), "cudaEventRecord");
        cuda_check(cudaEventSynchronize(e1), "cudaEventSynchronize");
        float t = 0;
        cuda_check(cudaEventElapsedTime(&t, e0, e1), "cudaEventElapsedTime");
        if (r >= 2) ms.push_back(t);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    return 2.0 * double(bytes) / (median(ms) * 1e-3);
}

bool spmm_failed = false;

struct Outcome {
    bool ok = true;
    std::string why;
};

// Both results against a double-precision product on the CPU.
Outcome check(const Matrix<float>& a, const std::vector<float>& x, const std::vector<float>& y_hybla,
              const std::vector<std::uint8_t>& bm_hybla, Index nvals_hybla, const std::vector<float>& y_sparse) {
    const auto off = a.storage_offsets();
    const auto col = a.storage_indices();
    const auto val = a.storage_values();
    Index nonempty = 0;
    for (Index i = 0; i < a.nrows(); ++i) {
        double s = 0;
        for (Offset p = off[i]; p < off[i + 1]; ++p) s += double(val[p]) * double(x[col[p]]);
        const bool present = off[i + 1] > off[i];
        nonempty += present;
        char buf[256];
        if (bm_hybla[i] != present) {
            std::snprintf(buf, sizeof buf, "hybla w(%zu) present %d, expected %d", size_t(i), int(bm_hybla[i]), int(present));
            return {false, buf};
        }
        const double tol = 1e-4 * std::max(1.0, std::fabs(s));
        if (present && !(std::fabs(double(y_hybla[i]) - s) <= tol)) {
            std::snprintf(buf, sizeof buf, "hybla w(%zu) = %.9g, expected %.9g", size_t(i), double(y_hybla[i]), s);
            return {false, buf};
        }
        if (!(std::fabs(double(y_sparse[i]) - s) <= tol)) {
            std::snprintf(buf, sizeof buf, "cuSPARSE y(%zu) = %.9g, expected %.9g", size_t(i), double(y_sparse[i]), s);
            return {false, buf};
        }
    }
    if (nvals_hybla != nonempty)
        return {false, "hybla nvals " + std::to_string(nvals_hybla) + ", expected " + std::to_string(nonempty)};
    return {};
}

struct Row {
    std::string name;
    Index n = 0, ncols = 0;
    Offset nnz = 0;
    double hybla_ms = 0, sparse_ms = 0, floor_ms = 0;
    bool beyond_l2 = false;
    Outcome outcome;
};

void print_header() {
    std::printf("%-18s %10s %12s %10s %12s %7s %9s %12s %4s\n", "graph", "n", "nnz", "hybla ms", "cuSPARSE ms",
                "ratio", "floor ms", "hybla/floor", ">L2");
}
void print_row(const Row& r) {
    if (!r.outcome.ok) {
        std::printf("%-18s %10zu %12zu CHECK FAILED: %s\n", r.name.c_str(), size_t(r.n), size_t(r.nnz), r.outcome.why.c_str());
        return;
    }
    std::printf("%-18s %10zu %12zu %10.4f %12.4f %7.3f %9.4f %12.3f %4s\n", r.name.c_str(), size_t(r.n), size_t(r.nnz),
                r.hybla_ms, r.sparse_ms, r.hybla_ms / r.sparse_ms, r.floor_ms, r.hybla_ms / r.floor_ms,
                r.beyond_l2 ? "yes" : "no");
    std::fflush(stdout);
}

Row run_graph(const std::string& name, const Matrix<float>& a, int runs, double bandwidth, double l2_bytes,
              cusparseHandle_t handle, std::mt19937_64& rng) {
    Row row;
    row.name = name;
    row.n = a.nrows();
    row.ncols = a.ncols();
    row.nnz = a.nvals();
    const Context gpu = Context::cuda();

    std::vector<float> x(a.ncols());
    std::uniform_real_distribution<float> u01(0.5f, 1.5f);
    for (auto& v : x) v = u01(rng);
    Array<float> xa(a.ncols());
    std::copy(x.begin(), x.end(), xa.begin());
    const Vector<float> u = Vector<float>::import_dense(a.ncols(), std::move(xa)).to(gpu);
    const Matrix<float> g = a.to(gpu);

    // hybla through the public API.
    Vector<float> w(a.nrows(), gpu);
    row.hybla_ms = time_ms(runs, [&] { mxv(w, no_mask, no_accum, plus_times{}, g, u); });
    const Vector<float> wh = w.to(Context::cpu());
    std::vector<float> y_hybla(wh.storage_values().begin(), wh.storage_values().end());
    std::vector<std::uint8_t> bm_hybla(wh.storage_bitmap().begin(), wh.storage_bitmap().end());

    // cuSPARSE on the same columns and values, with 32-bit row offsets (64-bit indices when nnz needs them).
    const bool wide = a.nvals() >= (Offset(1) << 31) || a.ncols() >= (Index(1) << 31);
    void* d_off = nullptr;
    void* d_col64 = nullptr;
    if (!wide) {
        std::vector<std::int32_t> off32(a.nrows() + 1);
        for (Index i = 0; i <= a.nrows(); ++i) off32[i] = std::int32_t(a.storage_offsets()[i]);
        cuda_check(cudaMalloc(&d_off, off32.size() * 4), "cudaMalloc");
        cuda_check(cudaMemcpy(d_off, off32.data(), off32.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    } else {
        std::vector<std::int64_t> col64(a.storage_indices().begin(), a.storage_indices().end());
        cuda_check(cudaMalloc(&d_col64, col64.size() * 8), "cudaMalloc");
        cuda_check(cudaMemcpy(d_col64, col64.data(), col64.size() * 8, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    float* d_y = nullptr;
    cuda_check(cudaMalloc(&d_y, std::max<Index>(1, a.nrows()) * sizeof(float)), "cudaMalloc");
    cusparseSpMatDescr_t mat;
    cusparseDnVecDescr_t vx, vy;
    sparse_check(cusparseCreateCsr(&mat, std::int64_t(a.nrows()), std::int64_t(a.ncols()), std::int64_t(a.nvals()),
                                   wide ? const_cast<Offset*>(g.storage_offsets().data()) : d_off,
                                   wide ? d_col64 : const_cast<ColIndex*>(g.storage_indices().data()),
                                   const_cast<float*>(g.storage_values().data()), wide ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I,
                                   wide ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 "cusparseCreateCsr");
    sparse_check(cusparseCreateDnVec(&vx, std::int64_t(a.ncols()), const_cast<float*>(u.storage_values().data()), CUDA_R_32F),
                 "cusparseCreateDnVec");
    sparse_check(cusparseCreateDnVec(&vy, std::int64_t(a.nrows()), d_y, CUDA_R_32F), "cusparseCreateDnVec");
    const float alpha = 1.0f, beta = 0.0f;
    std::size_t buffer_bytes = 0;
    sparse_check(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vx, &beta, vy,
                                         CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &buffer_bytes),
                 "cusparseSpMV_bufferSize");
    void* buffer = nullptr;
    cuda_check(cudaMalloc(&buffer, std::max<std::size_t>(buffer_bytes, 1)), "cudaMalloc");
    row.sparse_ms = time_ms(runs, [&] {
        sparse_check(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vx, &beta, vy, CUDA_R_32F,
                                  CUSPARSE_SPMV_ALG_DEFAULT, buffer),
                     "cusparseSpMV");
    });
    std::vector<float> y_sparse(a.nrows());
    if (a.nrows())
        cuda_check(cudaMemcpy(y_sparse.data(), d_y, a.nrows() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    cusparseDestroySpMat(mat);
    cusparseDestroyDnVec(vx);
    cusparseDestroyDnVec(vy);
    cudaFree(buffer);
    cudaFree(d_y);
    cudaFree(d_off);
    cudaFree(d_col64);

    row.outcome = check(a, x, y_hybla, bm_hybla, wh.nvals(), y_sparse);
    const double bytes = double(a.nvals()) * 8 + double(a.nrows() + 1) * 8 + double(a.ncols()) * 4 +
                         double(a.nrows()) * 5;
    row.floor_ms = bytes / bandwidth * 1e3;
    row.beyond_l2 = bytes > l2_bytes;
    return row;
}

// Device memory from cudaMalloc (a byte at least), freed with its owner.
struct CudaFree {
    void operator()(void* p) const { cudaFree(p); }
};
using DeviceMemory = std::unique_ptr<void, CudaFree>;

DeviceMemory device_alloc(std::size_t bytes) {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, std::max<std::size_t>(1, bytes)), "cudaMalloc");
    return DeviceMemory(p);
}
template <class T>
T* typed(const DeviceMemory& d) {
    return static_cast<T*>(d.get());
}

// The row offsets of A (on the host) as 32-bit integers in device memory, as cuSPARSE gets them here.
template <class T>
DeviceMemory offsets32(const Matrix<T>& a) {
    std::vector<std::int32_t> off(a.nrows() + 1);
    for (Index i = 0; i <= a.nrows(); ++i) off[i] = std::int32_t(a.storage_offsets()[i]);
    DeviceMemory d = device_alloc(off.size() * 4);
    cuda_check(cudaMemcpy(d.get(), off.data(), off.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    return d;
}

template <class T>
constexpr cudaDataType cuda_type = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;

// The cusparseSpMM algorithms compared, and their names.
constexpr cusparseSpMMAlg_t spmm_algs[2] = {CUSPARSE_SPMM_ALG_DEFAULT, CUSPARSE_SPMM_CSR_ALG2};
const char* const spmm_alg_names[2] = {"ALG_DEFAULT", "CSR_ALG2"};
const char* const spmm_alg_short[2] = {"dflt", "alg2"};

// cusparseSpMM by one algorithm, C = A B with A in CSR (32-bit offsets and columns), B (k x w) and C (m x w)
// row-major, all in device memory. Made with prepare, call() is the product alone, its buffer sized, allocated and
// preprocessed here; sequence() pays everything itself: bufferSize, cudaMalloc, preprocess, cusparseSpMM, cudaFree.
// The preprocess step runs for ALG_DEFAULT only: cuSPARSE documents it as speeding up CSR_ALG1 and CSR_ALG3 (which
// ALG_DEFAULT may pick) and as without effect for other algorithms.
template <class T>
class SparseSpmm {
public:
    SparseSpmm(cusparseHandle_t handle, cusparseSpMMAlg_t alg, Index m, Index k, Offset nnz, const std::int32_t* off,
               const ColIndex* col, const T* val, Index w, const T* b, T* c, bool prepare)
        : handle_(handle), alg_(alg) {
        sparse_check(cusparseCreateConstCsr(&a_, std::int64_t(m), std::int64_t(k), std::int64_t(nnz), off, col, val,
                                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, cuda_type<T>),
                     "cusparseCreateConstCsr");
        sparse_check(cusparseCreateConstDnMat(&b_, std::int64_t(k), std::int64_t(w), std::int64_t(w), b, cuda_type<T>,
                                              CUSPARSE_ORDER_ROW),
                     "cusparseCreateConstDnMat");
        sparse_check(cusparseCreateDnMat(&c_, std::int64_t(m), std::int64_t(w), std::int64_t(w), c, cuda_type<T>,
                                         CUSPARSE_ORDER_ROW),
                     "cusparseCreateDnMat");
        if (prepare) {
            buffer_ = device_alloc(buffer_size());
            preprocess(buffer_.get());
        }
    }
    SparseSpmm(const SparseSpmm&) = delete;
    SparseSpmm& operator=(const SparseSpmm&) = delete;
    ~SparseSpmm() {
        cusparseDestroySpMat(a_);
        cusparseDestroyDnMat(b_);
        cusparseDestroyDnMat(c_);
    }

    void call() const { multiply(buffer_.get()); }
    void sequence() const {
        void* buffer = nullptr;
        cuda_check(cudaMalloc(&buffer, std::max<std::size_t>(1, buffer_size())), "cudaMalloc");
        preprocess(buffer);
        multiply(buffer);
        cuda_check(cudaFree(buffer), "cudaFree");
    }

private:
    static constexpr cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
    static constexpr T one = 1, zero = 0;

    std::size_t buffer_size() const {
        std::size_t bytes = 0;
        sparse_check(cusparseSpMM_bufferSize(handle_, op, op, &one, a_, b_, &zero, c_, cuda_type<T>, alg_, &bytes),
                     "cusparseSpMM_bufferSize");
        return bytes;
    }
    void preprocess(void* buffer) const {
        if (alg_ == CUSPARSE_SPMM_ALG_DEFAULT)
            sparse_check(cusparseSpMM_preprocess(handle_, op, op, &one, a_, b_, &zero, c_, cuda_type<T>, alg_, buffer),
                         "cusparseSpMM_preprocess");
    }
    void multiply(void* buffer) const {
        sparse_check(cusparseSpMM(handle_, op, op, &one, a_, b_, &zero, c_, cuda_type<T>, alg_, buffer), "cusparseSpMM");
    }

    cusparseHandle_t handle_;
    cusparseSpMMAlg_t alg_;
    cusparseConstSpMatDescr_t a_;
    cusparseConstDnMatDescr_t b_;
    cusparseDnMatDescr_t c_;
    DeviceMemory buffer_;
};

// A dense m x w row-major result in device memory, and whose it is.
template <class T>
struct DeviceResult {
    std::string who;
    const T* data;
};

// The first entry of the results that differs from the double-precision reference by more than
// rel * max(scale, |reference|), as "<who> C(i,x) = v, expected r"; empty when none does. reference(i, s) writes
// row i of the reference into s (w values). The results come to the host a block of rows at a time.
template <class T, class Reference>
std::string dense_mismatch(Index m, Index w, double rel, double scale, Reference&& reference,
                           const std::vector<DeviceResult<T>>& results) {
    const Index block = std::max<Index>(1, (Index(1) << 22) / w);
    std::vector<std::vector<T>> host(results.size());
    std::vector<double> s(w);
    for (Index r0 = 0; r0 < m; r0 += block) {
        const Index r1 = std::min(m, r0 + block);
        for (std::size_t q = 0; q < results.size(); ++q) {
            host[q].resize((r1 - r0) * w);
            cuda_check(cudaMemcpy(host[q].data(), results[q].data + r0 * w, (r1 - r0) * w * sizeof(T),
                                  cudaMemcpyDeviceToHost),
                       "cudaMemcpy");
        }
        for (Index i = r0; i < r1; ++i) {
            reference(i, s);
            for (Index x = 0; x < w; ++x) {
                const double tol = rel * std::max(scale, std::fabs(s[x]));
                for (std::size_t q = 0; q < results.size(); ++q) {
                    const double got = double(host[q][(i - r0) * w + x]);
                    if (!(std::fabs(got - s[x]) <= tol)) {
                        char msg[200];
                        std::snprintf(msg, sizeof msg, "%s C(%zu,%zu) = %.12g, expected %.12g", results[q].who.c_str(),
                                      size_t(i), size_t(x), got, s[x]);
                        return msg;
                    }
                }
            }
        }
    }
    return {};
}

// Row i of A B in double precision, A and B on the host.
template <class T>
void product_row(const Matrix<T>& a, const DenseMatrix<T>& b, Index i, std::vector<double>& s) {
    std::fill(s.begin(), s.end(), 0.0);
    const auto off = a.storage_offsets();
    const auto col = a.storage_indices();
    const auto val = a.storage_values();
    for (Offset p = off[i]; p < off[i + 1]; ++p) {
        const T* b_row = b.row(col[p]);
        for (Index x = 0; x < b.ncols(); ++x) s[x] += double(val[p]) * double(b_row[x]);
    }
}

// Times of one SpMM: hybla's mxm, and cusparseSpMM's call and sequence for each of spmm_algs.
struct SpmmTimes {
    double hybla_ms = 0, call_ms[2] = {}, seq_ms[2] = {};
    std::string why;  // the first failed check, or empty
    int best() const { return call_ms[1] < call_ms[0] ? 1 : 0; }  // the algorithm of the faster call
    double best_call_ms() const { return call_ms[best()]; }
};

// C = A B on the GPU, with A and B given on the host: hybla's mxm against cusparseSpMM with both algorithms, each
// called alone and as a whole sequence, the five results checked against a double-precision product.
template <class T>
SpmmTimes spmm_versus_cusparse(const Matrix<T>& a, const DenseMatrix<T>& bh, int runs, cusparseHandle_t handle) {
    const Context gpu = Context::cuda();
    const Index m = a.nrows(), k = a.ncols(), w = bh.ncols();
    const DenseMatrix<T> b = bh.to(gpu);
    const Matrix<T> g = a.to(gpu);
    SpmmTimes t;
    DenseMatrix<T> c(m, w, T(0), gpu);
    t.hybla_ms = time_ms(runs, [&] { mxm(c, no_mask, no_accum, plus_times{}, g, b); });

    const DeviceMemory off = offsets32(a);
    DeviceMemory out[2][2];  // by algorithm: the call's C, the sequence's C
    for (int alg = 0; alg < 2; ++alg) {
        // Separate descriptors, so that the sequence runs on a matrix that never had the preprocess step.
        auto spmm = [&](T* result, bool prepare) {
            return SparseSpmm<T>(handle, spmm_algs[alg], m, k, a.nvals(), typed<std::int32_t>(off),
                                 g.storage_indices().data(), g.storage_values().data(), w, b.storage().data(), result,
                                 prepare);
        };
        for (DeviceMemory& o : out[alg]) o = device_alloc(m * w * sizeof(T));
        const SparseSpmm<T> call = spmm(typed<T>(out[alg][0]), true);
        const SparseSpmm<T> sequence = spmm(typed<T>(out[alg][1]), false);
        t.call_ms[alg] = time_ms(runs, [&] { call.call(); });
        t.seq_ms[alg] = time_ms(runs, [&] { sequence.sequence(); });
    }
    std::vector<DeviceResult<T>> results{{"hybla", c.storage().data()}};
    for (int alg = 0; alg < 2; ++alg) {
        results.push_back({std::string("cuSPARSE ") + spmm_alg_names[alg] + " call", typed<T>(out[alg][0])});
        results.push_back({std::string("cuSPARSE ") + spmm_alg_names[alg] + " sequence", typed<T>(out[alg][1])});
    }
    t.why = dense_mismatch<T>(m, w, std::is_same_v<T, float> ? 1e-4 : 1e-9, 1.0,
                              [&](Index i, std::vector<double>& s) { product_row(a, bh, i, s); }, results);
    return t;
}

// Ratios of a table by key (type and width), over the graphs: their geometric mean, and the smallest with its graph.
class RatioSummary {
public:
    void add(const std::string& key, const std::string& graph, double ratio) {
        auto it = std::find_if(keys_.begin(), keys_.end(), [&](const Key& k) { return k.key == key; });
        if (it == keys_.end()) {
            keys_.emplace_back();
            keys_.back().key = key;
            it = keys_.end() - 1;
        }
        it->log_sum += std::log(ratio);
        ++it->count;
        if (ratio < it->smallest) {
            it->smallest = ratio;
            it->smallest_graph = graph;
        }
    }
    void print(const char* what) const {
        std::printf("geometric mean of %s over the graphs (checked lines only), and the smallest:\n", what);
        for (const Key& k : keys_)
            std::printf("  %-14s %7.3f (%zu graphs); smallest %7.3f (%s)\n", k.key.c_str(),
                        std::exp(k.log_sum / double(k.count)), k.count, k.smallest, k.smallest_graph.c_str());
    }

private:
    struct Key {
        std::string key;
        double log_sum = 0;
        std::size_t count = 0;
        double smallest = HUGE_VAL;
        std::string smallest_graph;
    };
    std::vector<Key> keys_;
};

// The ratios of a table against cuSPARSE's call and against its whole sequence (a checked line's pair of them).
struct CallAndSequence {
    RatioSummary call, sequence;
    void add(const std::string& key, const std::string& graph, const std::optional<std::pair<double, double>>& r) {
        if (!r) return;  // (a failed check)
        call.add(key, graph, r->first);
        sequence.add(key, graph, r->second);
    }
    void print(const char* call_what, const char* sequence_what) const {
        call.print(call_what);
        sequence.print(sequence_what);
    }
};

// One line of the SpMM table: A's pattern and values (as T) times a random ncols x w B. Returns the faster call's
// and the faster sequence's time over hybla's, or nothing when a check failed.
template <class T>
std::optional<std::pair<double, double>> run_spmm(const std::string& name, const Matrix<float>& af, Index w, int runs,
                                                  double bandwidth, cusparseHandle_t handle, std::mt19937_64& rng) {
    const char* type = std::is_same_v<T, float> ? "float" : "double";
    const Matrix<T> a = [&] {
        Matrix<T> t(af.nrows(), af.ncols(), Context::cpu());
        apply(t, no_mask, no_accum, identity_op{}, af);
        return t;
    }();
    const Index m = a.nrows(), k = a.ncols();
    DenseMatrix<T> bh(k, w, T(0), Context::cpu());
    std::uniform_real_distribution<double> u01(0.5, 1.5);
    for (T& v : bh.data()) v = T(u01(rng));
    const SpmmTimes t = spmm_versus_cusparse(a, bh, runs, handle);
    if (!t.why.empty()) {
        std::printf("%-18s %6s %4zu CHECK FAILED: %s\n", name.c_str(), type, size_t(w), t.why.c_str());
        std::fflush(stdout);
        spmm_failed = true;
        return std::nullopt;
    }
    const double floor_bytes = double(a.nvals()) * (4 + sizeof(T)) + double(m + 1) * 8 + double(k * w) * sizeof(T) +
                               double(m * w) * sizeof(T);
    const double floor_ms = floor_bytes / bandwidth * 1e3;
    const double gflops = 2.0 * double(a.nvals()) * double(w) / (t.hybla_ms * 1e6);
    const double ratio = t.best_call_ms() / t.hybla_ms;
    std::printf("%-18s %6s %4zu %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %7.3f %8.1f %9.4f %8.3f\n", name.c_str(), type,
                size_t(w), t.hybla_ms, t.call_ms[0], t.seq_ms[0], t.call_ms[1], t.seq_ms[1], t.best_call_ms(), ratio,
                gflops, floor_ms, t.hybla_ms / floor_ms);
    std::fflush(stdout);
    return std::pair{ratio, std::min(t.seq_ms[0], t.seq_ms[1]) / t.hybla_ms};
}

bool sddmm_failed = false;

// cusparseSDDMM, C<A> = X Xᵀ into values on A's pattern (32-bit offsets and columns), X n x k row-major in device
// memory: matA = X with opA = N and matB = X with opB = T (op(B) = Xᵀ, k x n), both described as n x k row-major
// over X's memory (for CSR, cuSPARSE's documentation names row-major with opA = N and row-major with opB = T its
// fastest layouts); ALG_DEFAULT. Made with prepare, call() is cusparseSDDMM alone, its buffer sized, allocated and
// preprocessed here; sequence() pays bufferSize, cudaMalloc, cusparseSDDMM and cudaFree itself.
template <class T>
class SparseSddmm {
public:
    SparseSddmm(cusparseHandle_t handle, Index n, Index k, Offset nnz, std::int32_t* off, const ColIndex* col,
                T* values, const T* x, bool prepare)
        : handle_(handle) {
        const std::int64_t rows = std::int64_t(n), cols = std::int64_t(k);
        sparse_check(cusparseCreateConstDnMat(&xa_, rows, cols, cols, x, cuda_type<T>, CUSPARSE_ORDER_ROW),
                     "cusparseCreateConstDnMat");
        sparse_check(cusparseCreateConstDnMat(&xb_, rows, cols, cols, x, cuda_type<T>, CUSPARSE_ORDER_ROW),
                     "cusparseCreateConstDnMat");
        sparse_check(cusparseCreateCsr(&c_, rows, rows, std::int64_t(nnz), off, const_cast<ColIndex*>(col), values,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, cuda_type<T>),
                     "cusparseCreateCsr");
        if (prepare) {
            buffer_ = device_alloc(buffer_size());
            sparse_check(cusparseSDDMM_preprocess(handle_, op_a, op_b, &one, xa_, xb_, &zero, c_, cuda_type<T>, alg,
                                                  buffer_.get()),
                         "cusparseSDDMM_preprocess");
        }
    }
    SparseSddmm(const SparseSddmm&) = delete;
    SparseSddmm& operator=(const SparseSddmm&) = delete;
    ~SparseSddmm() {
        cusparseDestroyDnMat(xa_);
        cusparseDestroyDnMat(xb_);
        cusparseDestroySpMat(c_);
    }

    void call() const { multiply(buffer_.get()); }
    void sequence() const {
        void* buffer = nullptr;
        cuda_check(cudaMalloc(&buffer, std::max<std::size_t>(1, buffer_size())), "cudaMalloc");
        multiply(buffer);
        cuda_check(cudaFree(buffer), "cudaFree");
    }

private:
    static constexpr cusparseOperation_t op_a = CUSPARSE_OPERATION_NON_TRANSPOSE, op_b = CUSPARSE_OPERATION_TRANSPOSE;
    static constexpr cusparseSDDMMAlg_t alg = CUSPARSE_SDDMM_ALG_DEFAULT;
    static constexpr T one = 1, zero = 0;

    std::size_t buffer_size() const {
        std::size_t bytes = 0;
        sparse_check(cusparseSDDMM_bufferSize(handle_, op_a, op_b, &one, xa_, xb_, &zero, c_, cuda_type<T>, alg, &bytes),
                     "cusparseSDDMM_bufferSize");
        return bytes;
    }
    void multiply(void* buffer) const {
        sparse_check(cusparseSDDMM(handle_, op_a, op_b, &one, xa_, xb_, &zero, c_, cuda_type<T>, alg, buffer),
                     "cusparseSDDMM");
    }

    cusparseHandle_t handle_;
    cusparseConstDnMatDescr_t xa_, xb_;
    cusparseSpMatDescr_t c_;
    DeviceMemory buffer_;
};

// SDDMM under A's pattern, C<A> = X Xᵀ with a random n x k X (as T): hybla against cusparseSDDMM. Returns
// cuSPARSE's call time and its sequence's time over hybla's time, or nothing when a check failed.
template <class T>
std::optional<std::pair<double, double>> run_sddmm(const std::string& name, const Matrix<float>& af, Index k, int runs,
                                                   double bandwidth, cusparseHandle_t handle, std::mt19937_64& rng) {
    const Context gpu = Context::cuda();
    const char* type = std::is_same_v<T, float> ? "float" : "double";
    const Index n = af.nrows();
    const Offset nnz = af.nvals();
    DenseMatrix<T> xh(n, k, T(0), Context::cpu());
    std::uniform_real_distribution<double> u01(0.5, 1.5);
    for (T& v : xh.data()) v = T(u01(rng));
    const DenseMatrix<T> x = xh.to(gpu);
    const Matrix<float> mask = af.to(gpu);  // its structure only: A's values do not enter the product

    // hybla through the public API; the result matrix is made inside the timed call, as a user's call makes it.
    const Descriptor desc{.transpose_b = true, .mask_structure = true};
    Matrix<T> c;
    const double hybla_ms = time_ms(runs, [&] {
        c = Matrix<T>(n, n, gpu);
        mxm(c, mask, no_accum, plus_times{}, x, x, desc);
    });
    const Matrix<T> ch = c.to(Context::cpu());

    // cuSPARSE: C in CSR on A's 32-bit offsets and columns, values written by cuSPARSE. "call" and "sequence"
    // write separate value arrays through separate descriptors, so that the sequence runs on a pattern that never
    // had the preprocess step and both results are checked.
    const std::size_t value_bytes = nnz * sizeof(T);
    const DeviceMemory d_off = offsets32(af), d_call = device_alloc(value_bytes), d_seq = device_alloc(value_bytes);
    cuda_check(cudaMemset(d_call.get(), 0, value_bytes), "cudaMemset");
    cuda_check(cudaMemset(d_seq.get(), 0, value_bytes), "cudaMemset");
    auto sddmm = [&](const DeviceMemory& values, bool prepare) {
        return SparseSddmm<T>(handle, n, k, nnz, typed<std::int32_t>(d_off), mask.storage_indices().data(),
                              typed<T>(values), x.storage().data(), prepare);
    };
    const SparseSddmm<T> call = sddmm(d_call, true);
    const SparseSddmm<T> sequence = sddmm(d_seq, false);
    const double call_ms = time_ms(runs, [&] { call.call(); });
    const double sequence_ms = time_ms(runs, [&] { sequence.sequence(); });
    std::vector<T> ys_call(nnz), ys_seq(nnz);
    if (nnz > 0) {
        cuda_check(cudaMemcpy(ys_call.data(), d_call.get(), value_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
        cuda_check(cudaMemcpy(ys_seq.data(), d_seq.get(), value_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    }

    // hybla's pattern against A's (both CSR with sorted rows), then the values of all three against a
    // double-precision dot product: every entry below 2 million entries, else every stride-th (at least 100000
    // entries, over all rows; the stride odd, so that rows of one length are not all sampled at one position).
    std::string why;
    const auto off = af.storage_offsets();
    const auto col = af.storage_indices();
    const auto c_off = ch.storage_offsets();
    const auto c_col = ch.storage_indices();
    const auto c_val = ch.storage_values();
    if (ch.nvals() != nnz) why = "hybla nvals " + std::to_string(ch.nvals()) + ", expected " + std::to_string(nnz);
    for (Index i = 0; i < n && why.empty(); ++i)
        if (c_off[i + 1] != off[i + 1] ||
            !std::equal(col.begin() + off[i], col.begin() + off[i + 1], c_col.begin() + off[i]))
            why = "hybla C's row " + std::to_string(i) + " has not A's pattern";
    Offset stride = nnz < 2000000 ? 1 : nnz / 100000;
    if (stride % 2 == 0) --stride;
    const double rel = std::is_same_v<T, float> ? 1e-4 : 1e-9;
    for (Index i = 0; i < n && why.empty(); ++i) {
        const T* xi = xh.row(i);
        for (Offset p = (off[i] + stride - 1) / stride * stride; p < off[i + 1] && why.empty(); p += stride) {
            const Index j = col[p];
            const T* xj = xh.row(j);
            double s = 0;
            for (Index q = 0; q < k; ++q) s += double(xi[q]) * double(xj[q]);
            const double tol = rel * std::max(1.0, std::fabs(s));
            const double got[3] = {double(c_val[p]), double(ys_call[p]), double(ys_seq[p])};
            const char* const who[3] = {"hybla", "cuSPARSE", "cuSPARSE (sequence)"};
            for (int r = 0; r < 3 && why.empty(); ++r)
                if (!(std::fabs(got[r] - s) <= tol)) {
                    char msg[200];
                    std::snprintf(msg, sizeof msg, "%s C(%zu,%zu) = %.12g, expected %.12g", who[r], size_t(i), size_t(j),
                                  got[r], s);
                    why = msg;
                }
        }
    }
    if (!why.empty()) {
        std::printf("%-18s %6s %4zu CHECK FAILED: %s\n", name.c_str(), type, size_t(k), why.c_str());
        std::fflush(stdout);
        sddmm_failed = true;
        return std::nullopt;
    }
    const double floor_bytes = double(nnz) * (4 + sizeof(T)) + double(n + 1) * 8 + 2.0 * double(n * k) * sizeof(T);
    const double floor_ms = floor_bytes / bandwidth * 1e3;
    const double gflops = 2.0 * double(nnz) * double(k) / (hybla_ms * 1e6);
    std::printf("%-18s %6s %4zu %10.4f %10.4f %10.4f %10.3f %10.3f %9.1f %9.4f\n", name.c_str(), type, size_t(k), hybla_ms,
                call_ms, sequence_ms, call_ms / hybla_ms, sequence_ms / hybla_ms, gflops, floor_ms);
    std::fflush(stdout);
    return std::pair{call_ms / hybla_ms, sequence_ms / hybla_ms};
}

bool gnn_failed = false;

// Â = D^-1/2 (A + I) D^-1/2 on A's pattern (A's values do not enter), D the row counts of A + I: the normalised
// adjacency of a GCN layer, float, on the host.
Matrix<float> gcn_adjacency(const Matrix<float>& a) {
    const Index n = a.nrows();
    const auto off = a.storage_offsets();
    const auto col = a.storage_indices();
    Array<Offset> o(n + 1);
    o[0] = 0;
    for (Index i = 0; i < n; ++i) {
        const bool loop = std::binary_search(col.begin() + off[i], col.begin() + off[i + 1], ColIndex(i));
        o[i + 1] = o[i] + (off[i + 1] - off[i]) + (loop ? 0 : 1);
    }
    Array<ColIndex> c(o[n]);
    for (Index i = 0; i < n; ++i) {
        Offset q = o[i];
        bool placed = false;  // (i, i), kept in column order
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            if (!placed && col[p] >= i) {
                if (col[p] != i) c[q++] = ColIndex(i);
                placed = true;
            }
            c[q++] = col[p];
        }
        if (!placed) c[q++] = ColIndex(i);
    }
    Array<float> v(o[n]);
    for (Index i = 0; i < n; ++i)
        for (Offset p = o[i]; p < o[i + 1]; ++p)
            v[p] = float(1.0 / std::sqrt(double(o[i + 1] - o[i]) * double(o[Index(c[p]) + 1] - o[c[p]])));
    return Matrix<float>::import_csr(n, n, std::move(o), std::move(c), std::move(v), false);
}

// One line of the GNN table, or its failed check. Returns cuSPARSE's time over hybla's, or nothing when a check
// failed.
std::optional<double> gnn_line(const std::string& name, const char* step, Index k, double hybla_ms, double sparse_ms,
                               int alg, const std::string& why) {
    if (!why.empty()) {
        std::printf("%-18s %4s %4zu CHECK FAILED: %s\n", name.c_str(), step, size_t(k), why.c_str());
        std::fflush(stdout);
        gnn_failed = true;
        return std::nullopt;
    }
    std::printf("%-18s %4s %4zu %10.4f %12.4f %5s %7.3f\n", name.c_str(), step, size_t(k), hybla_ms, sparse_ms,
                spmm_alg_short[alg], sparse_ms / hybla_ms);
    std::fflush(stdout);
    return sparse_ms / hybla_ms;
}

// GCN aggregation, H' = Â H with Â from gcn_adjacency and a random n x k H: hybla's mxm against the faster
// cusparseSpMM call.
std::optional<double> run_gcn(const std::string& name, const Matrix<float>& a_hat, Index k, int runs,
                              cusparseHandle_t handle, std::mt19937_64& rng) {
    DenseMatrix<float> hh(a_hat.ncols(), k, 0.0f, Context::cpu());
    std::uniform_real_distribution<float> u01(0.5f, 1.5f);
    for (float& v : hh.data()) v = u01(rng);
    const SpmmTimes t = spmm_versus_cusparse(a_hat, hh, runs, handle);
    return gnn_line(name, "gcn", k, t.hybla_ms, t.best_call_ms(), t.best(), t.why);
}

// GAT's attention step end to end: S = A ∘ (X Xᵀ) on A's pattern, P = the softmax of each row of S, H' = P X, with a
// random n x k X of values in [0.5, 1.5) / sqrt(k): hybla's public API (and the exponential it lacks) against
// cusparseSDDMM, a softmax kernel and cusparseSpMM, the latter timed with each algorithm (the faster counts).
std::optional<double> run_gat(const std::string& name, const Matrix<float>& a, Index k, int runs,
                              cusparseHandle_t handle, std::mt19937_64& rng) {
    const Context gpu = Context::cuda();
    const Index n = a.nrows();
    const Offset nnz = a.nvals();
    DenseMatrix<float> xh(n, k, 0.0f, Context::cpu());
    std::uniform_real_distribution<double> u01(0.5, 1.5);
    const double scale = 1.0 / std::sqrt(double(k));
    for (float& v : xh.data()) v = float(u01(rng) * scale);
    const DenseMatrix<float> x = xh.to(gpu);
    const Matrix<float> mask = a.to(gpu);  // its structure only: A's values do not enter

    // hybla: S and H' made inside the timed calls, as a user's calls make them. exp(s - row max) is a kernel of
    // this program on S's arrays, moved out of S and back without a copy.
    const Descriptor sddmm{.transpose_b = true, .mask_structure = true};
    const cudaStream_t stream = static_cast<cudaStream_t>(gpu.stream());
    DenseMatrix<float> h(n, k, 0.0f, gpu);
    const double hybla_ms = time_ms(runs, [&] {
        Matrix<float> s(n, n, gpu);
        mxm(s, mask, no_accum, plus_times{}, x, x, sddmm);
        const Offset entries = s.nvals();
        CsrArrays<float> csr = std::move(s).export_csr();
        cuda_check(exp_minus_row_max(std::int64_t(n), csr.offsets.data(), csr.values.data(), stream), "exp_minus_row_max");
        s = Matrix<float>::adopt_csr(n, n, entries, std::move(csr.offsets), std::move(csr.indices), std::move(csr.values));
        inflate_rows(s, 1.0);
        mxm(h, no_mask, no_accum, plus_times{}, s, x);
    });

    // cuSPARSE: S's values on A's 32-bit offsets and columns, overwritten by P's; buffers sized, allocated and
    // preprocessed once, as a framework keeps them for a layer's pattern and shapes.
    const DeviceMemory off = offsets32(a), sv = device_alloc(nnz * sizeof(float));
    cuda_check(cudaMemset(sv.get(), 0, nnz * sizeof(float)), "cudaMemset");
    const ColIndex* col = mask.storage_indices().data();
    const SparseSddmm<float> scores(handle, n, k, nnz, typed<std::int32_t>(off), col, typed<float>(sv),
                                    x.storage().data(), true);
    DeviceMemory out[2];
    double sparse_ms[2];
    for (int alg = 0; alg < 2; ++alg) {
        out[alg] = device_alloc(n * k * sizeof(float));
        const SparseSpmm<float> aggregate(handle, spmm_algs[alg], n, n, nnz, typed<std::int32_t>(off), col,
                                          typed<float>(sv), k, x.storage().data(), typed<float>(out[alg]), true);
        sparse_ms[alg] = time_ms(runs, [&] {
            scores.call();
            cuda_check(softmax_rows(std::int64_t(n), typed<std::int32_t>(off), typed<float>(sv), nullptr), "softmax_rows");
            aggregate.call();
        });
    }

    // Against the same steps in double precision, a row at a time.
    const auto a_off = a.storage_offsets();
    const auto a_col = a.storage_indices();
    std::vector<double> p;
    auto reference = [&](Index i, std::vector<double>& s) {
        const Offset begin = a_off[i], end = a_off[i + 1];
        const float* xi = xh.row(i);
        p.resize(end - begin);
        double row_max = -HUGE_VAL;
        for (Offset q = begin; q < end; ++q) {
            const float* xj = xh.row(a_col[q]);
            double d = 0;
            for (Index y = 0; y < k; ++y) d += double(xi[y]) * double(xj[y]);
            p[q - begin] = d;
            row_max = std::max(row_max, d);
        }
        double sum = 0;
        for (double& e : p) sum += e = std::exp(e - row_max);
        std::fill(s.begin(), s.end(), 0.0);
        for (Offset q = begin; q < end; ++q) {
            const float* xj = xh.row(a_col[q]);
            for (Index y = 0; y < k; ++y) s[y] += p[q - begin] / sum * double(xj[y]);
        }
    };
    const std::string why = dense_mismatch<float>(n, k, 1e-4, 0.01, reference,
                                                  {{"hybla", h.storage().data()},
                                                   {"cuSPARSE (ALG_DEFAULT)", typed<float>(out[0])},
                                                   {"cuSPARSE (CSR_ALG2)", typed<float>(out[1])}});
    const int best = sparse_ms[1] < sparse_ms[0] ? 1 : 0;
    return gnn_line(name, "gat", k, hybla_ms, sparse_ms[best], best, why);
}

}  // namespace

int main(int argc, char** argv) {
    program = "gpu_bench";
    const Args args = parse(argc, argv);
    try {
        // Readers and generators build on the CPU; only the timed objects move to the GPU.
        set_default_context(Context::cpu());
        if (!cuda_usable()) {
            std::fprintf(stderr, "gpu_bench: no usable CUDA GPU\n");
            return 2;
        }
        int dev = 0;
        cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
        cudaDeviceProp prop{};
        cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
        const double bw = copy_bandwidth();
        int cusparse_version = 0;
        cusparseHandle_t handle;
        sparse_check(cusparseCreate(&handle), "cusparseCreate");
        cusparseGetVersion(handle, &cusparse_version);
        std::printf("gpu_bench: mxv plus_times float (hybla, public API) vs cusparseSpMV (CSR, ALG_DEFAULT, 32-bit\n"
                    "  offsets and columns, no preprocess step; cuSPARSE %d); median of %d runs after warm-up\n",
                    cusparse_version, args.runs);
        std::printf("device: %s, %d SMs, L2 %.1f MB; device-to-device copy %.0f GB/s (read + write, 1 GiB)\n",
                    prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1e6, bw / 1e9);
        std::printf("floor = (nnz*8 + (n+1)*8 [64-bit offsets] + ncols*4 + n*4 + n*1 [result bitmap]) bytes / copy "
                    "bandwidth; data: %s\n\n",
                    args.data.c_str());
        print_header();

        std::mt19937_64 rng(12345);
        bool failed = false;
        std::vector<std::pair<std::string, Matrix<float>>> loaded;  // kept for the SpMM, SDDMM and GNN tables
        const bool keep = !args.spmm_widths.empty() || !args.sddmm_ks.empty() || !args.gnn_ks.empty();
        for (const std::string& name : args.graphs) {
            Matrix<float> a;
            const auto t0 = std::chrono::steady_clock::now();
            try {
                a = with_random_values(load_graph<double>(name, args.data), rng);
            } catch (const std::exception& e) {
                std::printf("%-18s skipped: %s\n", name.c_str(), e.what());
                continue;
            }
            const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            Row r = run_graph(name, a, args.runs, bw, double(prop.l2CacheSize), handle, rng);
            print_row(r);
            if (!r.outcome.ok) failed = true;
            std::fprintf(stderr, "  (%s: built in %.1f s)\n", name.c_str(), load_s);
            if (keep && args.reorder) {
                // The order's cost as a user pays it: the order (on the host), then the renumbered matrix on the GPU.
                const Matrix<float> g = a.to(Context::cuda());
                const auto t1 = std::chrono::steady_clock::now();
                const std::vector<Index> order = algorithms::locality_order(g, *args.reorder);
                const auto t2 = std::chrono::steady_clock::now();
                Matrix<float> p = algorithms::permuted(g, order);
                cuda::synchronize(p.context().stream());
                const auto t3 = std::chrono::steady_clock::now();
                const char* how = *args.reorder == algorithms::LocalityOrder::rcm ? "rcm" : "degree";
                std::printf("%-18s reordered by %s: order %.1f ms (host), permuted %.1f ms (GPU)\n", name.c_str(), how,
                            std::chrono::duration<double, std::milli>(t2 - t1).count(),
                            std::chrono::duration<double, std::milli>(t3 - t2).count());
                loaded.emplace_back(name, std::move(a));
                loaded.emplace_back(name + "+" + how, p.to(Context::cpu()));
            } else if (keep) {
                loaded.emplace_back(name, std::move(a));
            }
        }
        if (!args.spmm_widths.empty()) {
            std::printf("\nSpMM plus_times, C = A B with B dense ncols x w (row-major): hybla mxm (public API) vs\n"
                        "  cusparseSpMM (CSR with 32-bit offsets and columns, row-major B and C) with ALG_DEFAULT (dflt)\n"
                        "  and CSR_ALG2 (alg2). call: cusparseSpMM alone, buffer allocated beforehand (and preprocessed,\n"
                        "  ALG_DEFAULT only); seq: bufferSize + cudaMalloc (+ preprocess) + cusparseSpMM + cudaFree.\n"
                        "  best call: the faster call; ratio: best call / hybla (above 1: hybla faster). GFLOP/s:\n"
                        "  2*nnz*w / hybla time. floor = (nnz*(4 + sizeof T) + (n+1)*8 + (ncols + n)*w*sizeof T) bytes /\n"
                        "  copy bandwidth\n");
            std::printf("%-18s %6s %4s %9s %9s %9s %9s %9s %9s %7s %8s %9s %8s\n", "graph", "type", "w", "hybla ms",
                        "dflt call", "dflt seq", "alg2 call", "alg2 seq", "best call", "ratio", "GFLOP/s", "floor ms",
                        "h/floor");
            CallAndSequence ratios;
            for (const auto& [name, a] : loaded) {
                for (Index w : args.spmm_widths) {
                    ratios.add("float w=" + std::to_string(w), name,
                               run_spmm<float>(name, a, w, args.runs, bw, handle, rng));
                    ratios.add("double w=" + std::to_string(w), name,
                               run_spmm<double>(name, a, w, args.runs, bw, handle, rng));
                }
            }
            ratios.print("best call/hybla", "best seq/hybla");
        }
        if (!args.sddmm_ks.empty()) {
            std::printf("\nSDDMM plus_times, C<A> = X Xt with X dense n x K (row-major): hybla mxm (public API, A's\n"
                        "  structure as the mask, C made inside the call) vs cusparseSDDMM (CSR C on A's pattern, 32-bit\n"
                        "  offsets and columns; matA = X with opA = N, matB = X with opB = T, both row-major; ALG_DEFAULT).\n"
                        "  call: cusparseSDDMM alone, buffer allocated and preprocessed beforehand; sequence: bufferSize +\n"
                        "  cudaMalloc + cusparseSDDMM + cudaFree. Ratios: cuSPARSE time / hybla time (above 1: hybla\n"
                        "  faster). GFLOP/s: 2*nnz*K / hybla time. floor = (nnz*(4 + sizeof T) + (n+1)*8 + 2*n*K*sizeof T)\n"
                        "  bytes / copy bandwidth\n");
            std::printf("%-18s %6s %4s %10s %10s %10s %10s %10s %9s %9s\n", "graph", "type", "K", "hybla ms", "call ms",
                        "seq ms", "call/hybla", "seq/hybla", "GFLOP/s", "floor ms");
            CallAndSequence ratios;
            for (const auto& [name, a] : loaded) {
                if (a.nrows() != a.ncols()) {
                    std::printf("%-18s skipped: X Xt needs a square A, got %zux%zu\n", name.c_str(), size_t(a.nrows()),
                                size_t(a.ncols()));
                    continue;
                }
                for (Index k : args.sddmm_ks) {
                    ratios.add("float K=" + std::to_string(k), name,
                               run_sddmm<float>(name, a, k, args.runs, bw, handle, rng));
                    ratios.add("double K=" + std::to_string(k), name,
                               run_sddmm<double>(name, a, k, args.runs, bw, handle, rng));
                }
            }
            ratios.print("call/hybla", "seq/hybla");
        }
        if (!args.gnn_ks.empty()) {
            std::printf("\nGNN steps, float, end to end; every result checked against the same steps in double on the CPU:\n"
                        "  gcn: H' = Ahat H, Ahat = D^-1/2 (A + I) D^-1/2 built once outside the timing, H n x K; hybla mxm\n"
                        "       vs the faster cusparseSpMM call (buffer allocated beforehand)\n"
                        "  gat: S = A o (X Xt) on A's pattern, P = softmax of each row of S, H' = P X, timed together; X n x K\n"
                        "       in [0.5, 1.5)/sqrt(K). hybla: mxm (SDDMM), exp(s - row max) by this program's kernel on S's\n"
                        "       exported CSR (hybla has no exp), inflate_rows(S, 1), mxm (SpMM). cuSPARSE: cusparseSDDMM, this\n"
                        "       program's softmax kernel, cusparseSpMM; buffers allocated and preprocessed beforehand\n"
                        "  alg: the cusparseSpMM algorithm of the faster cuSPARSE time; ratio: cuSPARSE ms / hybla ms (above\n"
                        "  1: hybla faster)\n");
            std::printf("%-18s %4s %4s %10s %12s %5s %7s\n", "graph", "step", "K", "hybla ms", "cuSPARSE ms", "alg",
                        "ratio");
            RatioSummary ratios;
            for (const auto& [name, a] : loaded) {
                if (a.nrows() != a.ncols()) {
                    std::printf("%-18s skipped: a GNN step needs a square A, got %zux%zu\n", name.c_str(),
                                size_t(a.nrows()), size_t(a.ncols()));
                    continue;
                }
                const Matrix<float> a_hat = gcn_adjacency(a);
                for (Index k : args.gnn_ks) {
                    if (auto r = run_gcn(name, a_hat, k, args.runs, handle, rng))
                        ratios.add("gcn K=" + std::to_string(k), name, *r);
                    if (auto r = run_gat(name, a, k, args.runs, handle, rng))
                        ratios.add("gat K=" + std::to_string(k), name, *r);
                }
            }
            ratios.print("cuSPARSE/hybla");
        }
        cusparseDestroy(handle);
        return failed || spmm_failed || sddmm_failed || gnn_failed ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_bench: %s\n", e.what());
        return 2;
    }
}
