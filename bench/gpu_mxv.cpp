// gpu_bench: hybla's mxv (plus_times, float, through the public API in a CUDA context) against cuSPARSE's
// cusparseSpMV (CSR, CUSPARSE_SPMV_ALG_DEFAULT) on the same matrix, next to the memory-traffic floor.
//
//   gpu_bench [--data DIR] [--graphs a,b,...] [--runs N] [--quick] [--spmm w1,w2,...] [--sddmm K1,K2,...]
//             [--reorder rcm|degree]
//
// --spmm: then SpMM, C = A B with B dense of each width w (row-major, random values in [0.5, 1.5)), float and
// double, hybla's mxm against cusparseSpMM (CSR, row-major B and C, ALG_DEFAULT) on the same data, both checked
// against a double-precision CPU product (relative 1e-4 for float, 1e-9 for double); floor bytes = nnz * (4 +
// sizeof T) + (n+1)*8 + ncols*w*sizeof T (B read once) + n*w*sizeof T (C).
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
// --reorder: the SpMM and SDDMM tables also run each graph renumbered by algorithms/reorder.hpp's locality_order
// (as "<graph>+rcm" or "+degree"), after a line with the order's cost: the order on the host, then permuted() on
// the GPU. The random dense operands are not permuted (they are random either way).
// Graphs: files of the data folder (DIR/<name>/<file>, read with io::read_graph) and R-MAT graphs
// ("rmat18" .. "rmat22": Graph500 parameters a=.57 b=.19 c=.19, edge factor 16, symmetrised, scrambled ids).
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
#include <map>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "algorithms/reorder.hpp"
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
                        "                 [--sddmm K1,K2,...] [--reorder rcm|degree]\n"
                        "--spmm: also SpMM C = A B, B dense with each width w, against cusparseSpMM (float, double)\n"
                        "--sddmm: also SDDMM C<A> = X Xt, X dense n x K for each K, against cusparseSDDMM (float,\n"
                        "  double); cuSPARSE timed as the call alone and as bufferSize + cudaMalloc + call + cudaFree\n"
                        "--reorder: those tables also on each graph renumbered by rcm or degree order (with its cost)\n"
                        "graphs: data folder names (default set: ");
            for (auto& [n, f] : data_files) std::printf("%s ", n.c_str());
            std::printf(") and rmatS for R-MAT scale S\n");
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

// SpMM of A's pattern and values (as T) with a random n x w B: hybla against cusparseSpMM.
template <class T>
void run_spmm(const std::string& name, const Matrix<float>& af, Index w, int runs, double bandwidth,
              cusparseHandle_t handle, std::mt19937_64& rng) {
    const Context gpu = Context::cuda();
    const Matrix<T> a = [&] {
        Matrix<T> t(af.nrows(), af.ncols(), Context::cpu());
        apply(t, no_mask, no_accum, identity_op{}, af);
        return t;
    }();
    const Index m = a.nrows(), k = a.ncols();
    DenseMatrix<T> bh(k, w, T(0), Context::cpu());
    std::uniform_real_distribution<double> u01(0.5, 1.5);
    for (T& v : bh.data()) v = T(u01(rng));
    const DenseMatrix<T> b = bh.to(gpu);
    const Matrix<T> g = a.to(gpu);
    DenseMatrix<T> c(m, w, T(0), gpu);
    const double hybla_ms = time_ms(runs, [&] { mxm(c, no_mask, no_accum, plus_times{}, g, b); });
    const DenseMatrix<T> ch = c.to(Context::cpu());

    std::vector<std::int32_t> off32(m + 1);
    for (Index i = 0; i <= m; ++i) off32[i] = std::int32_t(a.storage_offsets()[i]);
    void* d_off = nullptr;
    T* d_c = nullptr;
    cuda_check(cudaMalloc(&d_off, off32.size() * 4), "cudaMalloc");
    cuda_check(cudaMemcpy(d_off, off32.data(), off32.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_check(cudaMalloc(&d_c, std::max<Index>(1, m * w) * sizeof(T)), "cudaMalloc");
    constexpr cudaDataType dt = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
    cusparseSpMatDescr_t mat;
    cusparseDnMatDescr_t mb, mc;
    sparse_check(cusparseCreateCsr(&mat, std::int64_t(m), std::int64_t(k), std::int64_t(a.nvals()), d_off,
                                   const_cast<ColIndex*>(g.storage_indices().data()), const_cast<T*>(g.storage_values().data()),
                                   CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, dt),
                 "cusparseCreateCsr");
    sparse_check(cusparseCreateDnMat(&mb, std::int64_t(k), std::int64_t(w), std::int64_t(w),
                                     const_cast<T*>(b.storage().data()), dt, CUSPARSE_ORDER_ROW),
                 "cusparseCreateDnMat");
    sparse_check(cusparseCreateDnMat(&mc, std::int64_t(m), std::int64_t(w), std::int64_t(w), d_c, dt, CUSPARSE_ORDER_ROW),
                 "cusparseCreateDnMat");
    const T alpha = 1, beta = 0;
    std::size_t bytes = 0;
    sparse_check(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                         mat, mb, &beta, mc, dt, CUSPARSE_SPMM_ALG_DEFAULT, &bytes),
                 "cusparseSpMM_bufferSize");
    void* buf = nullptr;
    cuda_check(cudaMalloc(&buf, std::max<std::size_t>(1, bytes)), "cudaMalloc");
    const double sparse_ms = time_ms(runs, [&] {
        sparse_check(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat,
                                  mb, &beta, mc, dt, CUSPARSE_SPMM_ALG_DEFAULT, buf),
                     "cusparseSpMM");
    });
    std::vector<T> ys(m * w);
    if (m * w > 0) cuda_check(cudaMemcpy(ys.data(), d_c, m * w * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
    cusparseDestroySpMat(mat);
    cusparseDestroyDnMat(mb);
    cusparseDestroyDnMat(mc);
    cudaFree(buf);
    cudaFree(d_c);
    cudaFree(d_off);

    // Both against a double-precision product.
    std::string why;
    const auto off = a.storage_offsets();
    const auto col = a.storage_indices();
    const auto val = a.storage_values();
    const double rel = std::is_same_v<T, float> ? 1e-4 : 1e-9;
    std::vector<double> s(w);
    for (Index i = 0; i < m && why.empty(); ++i) {
        std::fill(s.begin(), s.end(), 0.0);
        for (Offset p = off[i]; p < off[i + 1]; ++p)
            for (Index x = 0; x < w; ++x) s[x] += double(val[p]) * double(bh(col[p], x));
        for (Index x = 0; x < w && why.empty(); ++x) {
            const double tol = rel * std::max(1.0, std::fabs(s[x]));
            char msg[200];
            if (!(std::fabs(double(ch(i, x)) - s[x]) <= tol))
                std::snprintf(msg, sizeof msg, "hybla C(%zu,%zu) = %.12g, expected %.12g", size_t(i), size_t(x), double(ch(i, x)), s[x]);
            else if (!(std::fabs(double(ys[i * w + x]) - s[x]) <= tol))
                std::snprintf(msg, sizeof msg, "cuSPARSE C(%zu,%zu) = %.12g, expected %.12g", size_t(i), size_t(x), double(ys[i * w + x]), s[x]);
            else continue;
            why = msg;
        }
    }
    const double floor_bytes = double(a.nvals()) * (4 + sizeof(T)) + double(m + 1) * 8 + double(k * w) * sizeof(T) +
                               double(m * w) * sizeof(T);
    const double floor_ms = floor_bytes / bandwidth * 1e3;
    if (!why.empty()) {
        std::printf("%-18s %6s %4zu CHECK FAILED: %s\n", name.c_str(), std::is_same_v<T, float> ? "float" : "double",
                    size_t(w), why.c_str());
        spmm_failed = true;
        return;
    }
    std::printf("%-18s %6s %4zu %10.4f %12.4f %7.3f %9.4f %12.3f\n", name.c_str(), std::is_same_v<T, float> ? "float" : "double",
                size_t(w), hybla_ms, sparse_ms, hybla_ms / sparse_ms, floor_ms, hybla_ms / floor_ms);
    std::fflush(stdout);
}

bool sddmm_failed = false;

// SDDMM under A's pattern, C<A> = X Xᵀ with a random n x k X (as T): hybla against cusparseSDDMM. Returns
// cuSPARSE's call time over hybla's time, or nothing when a check failed.
template <class T>
std::optional<double> run_sddmm(const std::string& name, const Matrix<float>& af, Index k, int runs, double bandwidth,
                                cusparseHandle_t handle, std::mt19937_64& rng) {
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

    // cuSPARSE: C in CSR on A's 32-bit offsets and columns, values written by cuSPARSE. matA = X with opA = N and
    // matB = X with opB = T (op(B) = Xᵀ, k x n), both described as n x k row-major over X's memory: for CSR,
    // cuSPARSE's documentation names row-major with opA = N and row-major with opB = T its fastest layouts.
    // "call" and "sequence" write separate value arrays through separate descriptors, so that the sequence
    // runs on a pattern that never had the preprocess step and both results are checked.
    std::vector<std::int32_t> off32(n + 1);
    for (Index i = 0; i <= n; ++i) off32[i] = std::int32_t(af.storage_offsets()[i]);
    const std::size_t value_bytes = std::max<std::size_t>(1, nnz * sizeof(T));
    void* d_off = nullptr;
    T* d_call = nullptr;
    T* d_seq = nullptr;
    cuda_check(cudaMalloc(&d_off, off32.size() * 4), "cudaMalloc");
    cuda_check(cudaMemcpy(d_off, off32.data(), off32.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    cuda_check(cudaMalloc(&d_call, value_bytes), "cudaMalloc");
    cuda_check(cudaMalloc(&d_seq, value_bytes), "cudaMalloc");
    cuda_check(cudaMemset(d_call, 0, value_bytes), "cudaMemset");
    cuda_check(cudaMemset(d_seq, 0, value_bytes), "cudaMemset");
    constexpr cudaDataType dt = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
    constexpr cusparseOperation_t op_a = CUSPARSE_OPERATION_NON_TRANSPOSE, op_b = CUSPARSE_OPERATION_TRANSPOSE;
    constexpr cusparseSDDMMAlg_t alg = CUSPARSE_SDDMM_ALG_DEFAULT;
    const std::int64_t rows = std::int64_t(n), cols = std::int64_t(k);
    cusparseConstDnMatDescr_t ma, mb;
    sparse_check(cusparseCreateConstDnMat(&ma, rows, cols, cols, x.storage().data(), dt, CUSPARSE_ORDER_ROW),
                 "cusparseCreateConstDnMat");
    sparse_check(cusparseCreateConstDnMat(&mb, rows, cols, cols, x.storage().data(), dt, CUSPARSE_ORDER_ROW),
                 "cusparseCreateConstDnMat");
    auto csr_on = [&](T* values) {
        cusparseSpMatDescr_t m;
        sparse_check(cusparseCreateCsr(&m, rows, rows, std::int64_t(nnz), d_off,
                                       const_cast<ColIndex*>(mask.storage_indices().data()), values, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, dt),
                     "cusparseCreateCsr");
        return m;
    };
    cusparseSpMatDescr_t mc_call = csr_on(d_call), mc_seq = csr_on(d_seq);
    const T alpha = 1, beta = 0;
    std::size_t bytes = 0;
    sparse_check(cusparseSDDMM_bufferSize(handle, op_a, op_b, &alpha, ma, mb, &beta, mc_call, dt, alg, &bytes),
                 "cusparseSDDMM_bufferSize");
    void* buf = nullptr;
    cuda_check(cudaMalloc(&buf, std::max<std::size_t>(1, bytes)), "cudaMalloc");
    sparse_check(cusparseSDDMM_preprocess(handle, op_a, op_b, &alpha, ma, mb, &beta, mc_call, dt, alg, buf),
                 "cusparseSDDMM_preprocess");
    const double call_ms = time_ms(runs, [&] {
        sparse_check(cusparseSDDMM(handle, op_a, op_b, &alpha, ma, mb, &beta, mc_call, dt, alg, buf), "cusparseSDDMM");
    });
    const double sequence_ms = time_ms(runs, [&] {
        std::size_t seq_bytes = 0;
        sparse_check(cusparseSDDMM_bufferSize(handle, op_a, op_b, &alpha, ma, mb, &beta, mc_seq, dt, alg, &seq_bytes),
                     "cusparseSDDMM_bufferSize");
        void* seq_buf = nullptr;
        cuda_check(cudaMalloc(&seq_buf, std::max<std::size_t>(1, seq_bytes)), "cudaMalloc");
        sparse_check(cusparseSDDMM(handle, op_a, op_b, &alpha, ma, mb, &beta, mc_seq, dt, alg, seq_buf), "cusparseSDDMM");
        cuda_check(cudaFree(seq_buf), "cudaFree");
    });
    std::vector<T> ys_call(nnz), ys_seq(nnz);
    if (nnz > 0) {
        cuda_check(cudaMemcpy(ys_call.data(), d_call, nnz * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
        cuda_check(cudaMemcpy(ys_seq.data(), d_seq, nnz * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
    }
    cusparseDestroyDnMat(ma);
    cusparseDestroyDnMat(mb);
    cusparseDestroySpMat(mc_call);
    cusparseDestroySpMat(mc_seq);
    cudaFree(buf);
    cudaFree(d_seq);
    cudaFree(d_call);
    cudaFree(d_off);

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
    return call_ms / hybla_ms;
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
        std::vector<std::pair<std::string, Matrix<float>>> loaded;  // kept for the SpMM and SDDMM tables when asked for
        const bool keep = !args.spmm_widths.empty() || !args.sddmm_ks.empty();
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
            std::printf("\nSpMM plus_times: hybla mxm (public API) vs cusparseSpMM (CSR, row-major B and C, ALG_DEFAULT)\n");
            std::printf("%-18s %6s %4s %10s %12s %7s %9s %12s\n", "graph", "type", "w", "hybla ms", "cuSPARSE ms", "ratio",
                        "floor ms", "hybla/floor");
            for (const auto& [name, a] : loaded) {
                for (Index w : args.spmm_widths) {
                    run_spmm<float>(name, a, w, args.runs, bw, handle, rng);
                    run_spmm<double>(name, a, w, args.runs, bw, handle, rng);
                }
            }
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
            std::map<std::pair<std::string, Index>, std::vector<double>> call_ratios;  // by (type, K), over the graphs
            for (const auto& [name, a] : loaded) {
                if (a.nrows() != a.ncols()) {
                    std::printf("%-18s skipped: X Xt needs a square A, got %zux%zu\n", name.c_str(), size_t(a.nrows()),
                                size_t(a.ncols()));
                    continue;
                }
                for (Index k : args.sddmm_ks) {
                    if (auto r = run_sddmm<float>(name, a, k, args.runs, bw, handle, rng))
                        call_ratios[{"float", k}].push_back(*r);
                    if (auto r = run_sddmm<double>(name, a, k, args.runs, bw, handle, rng))
                        call_ratios[{"double", k}].push_back(*r);
                }
            }
            std::printf("geometric mean of call/hybla over the graphs (checked lines only):\n");
            for (Index k : args.sddmm_ks)
                for (const char* type : {"float", "double"}) {
                    const auto it = call_ratios.find({type, k});
                    if (it == call_ratios.end()) continue;
                    double log_sum = 0;
                    for (double r : it->second) log_sum += std::log(r);
                    const double mean = std::exp(log_sum / double(it->second.size()));
                    std::printf("  %-6s K=%-4zu %7.3f (%zu graphs)\n", type, size_t(k), mean, it->second.size());
                }
        }
        cusparseDestroy(handle);
        return failed || spmm_failed || sddmm_failed ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_bench: %s\n", e.what());
        return 2;
    }
}
