// gpu_algos: the algorithms of algorithms/ on the GPU against their competitors, in the same run on the same GPU.
//
//   gpu_algos [--data DIR] [--graphs a,b,...] [--runs N] [--probe] [--repeat-check N]
//
// (--probe: where a PageRank iteration's time goes, see probe_graph; --repeat-check N: PageRank on the GPU N
// times against the CPU, see repeat_check.)
// pagerank   time per iteration on the CUDA backend, taken as the difference between runs of 45 and 5
//            iterations (tolerance 0, so every iteration runs with its convergence test) divided by 40: the
//            one-off setup (out-degrees, the transition matrix) drops out. Against one cusparseSpMV (CSR,
//            double, ALG_DEFAULT) on a matrix of the same pattern as the transition matrix Pᵀ. Also the LDBC
//            mode's time per iteration (the same product, no L1 change computed or read).
// personalized pagerank, 64 seeds (vertices k·n/64): time per iteration likewise (43 and 3 iterations; with 13
//            the 2 ms of the call's setup left 5-30% noise on 0.03-0.06 ms iterations), against 64
//            cusparseSpMV, one cusparseSpMM (CSR x dense n x 64, row-major, double), and one cusparseSpMM plus
//            one cusparseSpMV (issue 20's target: at most that).
// tc         triangles with degree ordering on the CUDA backend against the CPU backend (all threads); the
//            GPU time is the median of --runs calls, the CPU time one call; triangles per second.
//
// Before a line is printed its results are checked: the GPU PageRank of 20 iterations against the CPU backend's
// (largest difference <= 1e-12), personalized PageRank of 3 iterations likewise, and the two triangle counts
// equal; a failed check prints CHECK FAILED and makes the exit status 1. Graphs: names of the data folder, or
// rmatS (R-MAT scale S, edge factor 16, undirected simple).
#include <cuda_runtime.h>
#include <cusparse.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <execinfo.h>
#include <sys/time.h>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "algorithms/pagerank.hpp"
#include "algorithms/triangle_count.hpp"
#include "bench/gpu_common.hpp"

namespace {

using namespace hybla;
using namespace hybla::bench;

double seconds_of(auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A CSR copy for cuSPARSE (32-bit offsets and columns, double values in [0.5, 1.5)) of the transpose of a's
// pattern, i.e. the pattern of PageRank's transition matrix Pᵀ.
struct DeviceCsr {
    std::int64_t n = 0, nnz = 0;
    int *off = nullptr, *col = nullptr;
    double* val = nullptr;
    cusparseSpMatDescr_t mat{};
    explicit DeviceCsr(const Matrix<double>& a) : n(a.nrows()), nnz(a.nvals()) {
        Matrix<double> t(a.ncols(), a.nrows(), Context::cpu());
        transpose(t, no_mask, no_accum, a);
        std::vector<int> o(n + 1), c(t.storage_indices().begin(), t.storage_indices().end());
        for (std::int64_t i = 0; i <= n; ++i) o[i] = int(t.storage_offsets()[i]);
        std::vector<double> v(nnz);
        std::mt19937_64 rng(7);
        std::uniform_real_distribution<double> u(0.5, 1.5);
        for (auto& x : v) x = u(rng);
        cuda_check(cudaMalloc(&off, o.size() * sizeof(int)), "cudaMalloc");
        cuda_check(cudaMalloc(&col, std::max<std::size_t>(1, c.size()) * sizeof(int)), "cudaMalloc");
        cuda_check(cudaMalloc(&val, std::max<std::size_t>(1, v.size()) * sizeof(double)), "cudaMalloc");
        cuda_check(cudaMemcpy(off, o.data(), o.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
        cuda_check(cudaMemcpy(col, c.data(), c.size() * sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy");
        cuda_check(cudaMemcpy(val, v.data(), v.size() * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
        sparse_check(cusparseCreateCsr(&mat, n, n, nnz, off, col, val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
                     "cusparseCreateCsr");
    }
    ~DeviceCsr() {
        cusparseDestroySpMat(mat);
        cudaFree(off);
        cudaFree(col);
        cudaFree(val);
    }
};

// Median time of one cusparseSpMV (y = Pᵀ x) and of one cusparseSpMM with k columns (Y = Pᵀ X), in ms.
std::pair<double, double> cusparse_times(cusparseHandle_t h, const DeviceCsr& p, int k, int runs) {
    const std::int64_t n = p.n;
    double *x = nullptr, *y = nullptr;
    cuda_check(cudaMalloc(&x, std::max<std::int64_t>(1, n * k) * sizeof(double)), "cudaMalloc");
    cuda_check(cudaMalloc(&y, std::max<std::int64_t>(1, n * k) * sizeof(double)), "cudaMalloc");
    cuda_check(cudaMemset(x, 0, std::max<std::int64_t>(1, n * k) * sizeof(double)), "cudaMemset");
    const double alpha = 1, beta = 0;
    cusparseDnVecDescr_t vx, vy;
    sparse_check(cusparseCreateDnVec(&vx, n, x, CUDA_R_64F), "cusparseCreateDnVec");
    sparse_check(cusparseCreateDnVec(&vy, n, y, CUDA_R_64F), "cusparseCreateDnVec");
    std::size_t bytes = 0;
    sparse_check(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.mat, vx, &beta, vy, CUDA_R_64F,
                                         CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
                 "cusparseSpMV_bufferSize");
    void* buf = nullptr;
    cuda_check(cudaMalloc(&buf, std::max<std::size_t>(1, bytes)), "cudaMalloc");
    const double spmv = time_ms(runs, [&] {
        sparse_check(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.mat, vx, &beta, vy, CUDA_R_64F,
                                  CUSPARSE_SPMV_ALG_DEFAULT, buf),
                     "cusparseSpMV");
    });
    cudaFree(buf);
    cusparseDestroyDnVec(vx);
    cusparseDestroyDnVec(vy);
    cusparseDnMatDescr_t mx, my;
    sparse_check(cusparseCreateDnMat(&mx, n, k, k, x, CUDA_R_64F, CUSPARSE_ORDER_ROW), "cusparseCreateDnMat");
    sparse_check(cusparseCreateDnMat(&my, n, k, k, y, CUDA_R_64F, CUSPARSE_ORDER_ROW), "cusparseCreateDnMat");
    sparse_check(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                         p.mat, mx, &beta, my, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, &bytes),
                 "cusparseSpMM_bufferSize");
    cuda_check(cudaMalloc(&buf, std::max<std::size_t>(1, bytes)), "cudaMalloc");
    const double spmm = time_ms(runs, [&] {
        sparse_check(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, p.mat,
                                  mx, &beta, my, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, buf),
                     "cusparseSpMM");
    });
    cudaFree(buf);
    cusparseDestroyDnMat(mx);
    cusparseDestroyDnMat(my);
    cudaFree(x);
    cudaFree(y);
    return {spmv, spmm};
}

double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double m = a.size() == b.size() ? 0 : INFINITY;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}
std::vector<double> values_of(const Vector<double>& v) {
    const Vector<double> h = v.to(Context::cpu());
    return {h.values().begin(), h.values().end()};
}
std::vector<double> values_of(const DenseMatrix<double>& d) {
    const DenseMatrix<double> h = d.to(Context::cpu());
    return {h.data().begin(), h.data().end()};
}

algorithms::PageRankOptions fixed(std::size_t iterations) {
    algorithms::PageRankOptions o;
    o.tolerance = 0;  // never converged: exactly `iterations` iterations, each with its L1 change
    o.max_iterations = iterations;
    return o;
}

// Per-iteration time in ms of run(iterations): the median over runs of (T(hi) - T(lo)) / (hi - lo).
template <class Run>
double per_iteration_ms(int runs, std::size_t lo, std::size_t hi, Run&& run) {
    run(lo);  // warm-up
    std::vector<double> d;
    for (int r = 0; r < runs; ++r) {
        const double a = seconds_of([&] { run(lo); }), b = seconds_of([&] { run(hi); });
        d.push_back((b - a) * 1e3 / double(hi - lo));
    }
    return median(d);
}



// A sampling profiler for --probe (the GPU machine has no perf): SIGPROF every millisecond of CPU time
// records the call stack; the stacks are written as module+offset for symbolisation elsewhere.
struct Sampler {
    static constexpr int depth = 40, max_samples = 20000;
    static inline void* frames[max_samples][depth];
    static inline int sizes[max_samples];
    static inline std::atomic<int> count{0};
    static void on_signal(int) {
        const int k = count.fetch_add(1);
        if (k < max_samples) sizes[k] = backtrace(frames[k], depth);
    }
    static void start() {
        void* warm[4];
        (void)backtrace(warm, 4);  // the first call may allocate: not in the handler
        count = 0;
        signal(SIGPROF, on_signal);
        itimerval t{{0, 1000}, {0, 1000}};
        setitimer(ITIMER_PROF, &t, nullptr);
    }
    static void stop(const char* path) {
        itimerval t{};
        setitimer(ITIMER_PROF, &t, nullptr);
        std::FILE* f = std::fopen(path, "w");
        if (!f) return;
        const int n = std::min<int>(count, max_samples);
        for (int k = 0; k < n; ++k) {
            for (int j = 0; j < sizes[k]; ++j) {
                Dl_info info{};
                if (dladdr(frames[k][j], &info) && info.dli_fname)
                    std::fprintf(f, " %s+0x%lx%s%s", std::strrchr(info.dli_fname, '/') ? std::strrchr(info.dli_fname, '/') + 1 : info.dli_fname,
                                 (unsigned long)((char*)frames[k][j] - (char*)info.dli_fbase), info.dli_sname ? ":" : "",
                                 info.dli_sname ? info.dli_sname : "");
                else std::fprintf(f, " ?+%p", frames[k][j]);
            }
            std::fprintf(f, "\n");
        }
        std::fclose(f);
    }
};

// --probe: where a PageRank iteration's time goes on the GPU. Loops over the stepper's matrix (as pagerank
// runs them): A the mxv alone; B mxv + inner product into a Scalar, read only at the end; C as B, each change
// read two iterations late; D the two fused (mxv_inner), read as in C (what pagerank does). Per iteration as in per_iteration_ms; "queue" is the host's
// time to queue the loop (before the final wait), per iteration.
void probe_graph(const std::string& name, const Matrix<double>& a, int runs) {
    const Context gpu = Context::cuda();
    const Matrix<double> g = a.to(gpu);
    const Index n = a.nrows();
    const algorithms::pagerank_detail::Stepper st = algorithms::pagerank_detail::stepper(g, 0.85);
    auto loop = [&](int mode, std::size_t k, double* queue_s) {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<Vector<double>> u;
        std::vector<Scalar<double>> ch;
        for (int q = 0; q < 3; ++q) {
            u.emplace_back(0, gpu);
            ch.emplace_back(gpu);
        }
        double sink = 0;
        for (std::size_t i = 0; i < k; ++i) {
            const Vector<double>& from = i == 0 ? st.start : u[(i - 1) % 3];
            Vector<double> next(n + 2, gpu);
            if (mode == 3) mxv_inner(next, ch[i % 3], plus_times{}, st.m, from, semiring<plus_monoid, absdiff_op>{}, from);
            else mxv(next, no_mask, no_accum, plus_times{}, st.m, from);
            if (mode == 1 || mode == 2) inner(ch[i % 3], semiring<plus_monoid, absdiff_op>{}, next, from);
            if (mode >= 2 && i >= 2) sink += ch[(i - 2) % 3].value();
            u[i % 3] = std::move(next);
        }
        if (queue_s) *queue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return sink;
    };
    const char* names[] = {"A mxv", "B mxv+inner", "C mxv+inner+read", "D mxv_inner+read"};
    std::printf("%-18s probe n=%zu\n", name.c_str(), size_t(n));
    for (int mode = 0; mode < 4; ++mode) {
        (void)loop(mode, 5, nullptr);
        std::vector<double> d, q;
        for (int r = 0; r < runs; ++r) {
            double qa = 0, qb = 0;
            const double ta = seconds_of([&] { (void)loop(mode, 5, &qa); });
            const double tb = seconds_of([&] { (void)loop(mode, 45, &qb); });
            d.push_back((tb - ta) * 1e3 / 40);
            q.push_back((qb - qa) * 1e3 / 40);
        }
        std::printf("  %-18s %.4f ms/iteration, queue %.4f ms/iteration\n", names[mode], median(d), median(q));
    }

    // Host cost per call of the CUDA calls an iteration makes, and of the hybla calls (queue time, then a wait).
    const auto stream = static_cast<cudaStream_t>(gpu.stream());
    auto per_call_us = [&](int calls, auto&& f) {
        cuda_check(cudaDeviceSynchronize(), "sync");
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) f();
        const double q = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        cuda_check(cudaDeviceSynchronize(), "sync");
        return q * 1e6 / calls;
    };
    void* buf = nullptr;
    cuda_check(cudaMalloc(&buf, 1 << 20), "cudaMalloc");
    cudaEvent_t ev;
    cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "event");
    std::printf("  host us/call: mallocAsync+freeAsync %.2f, memsetAsync %.2f, eventRecord %.2f, setDevice %.2f, "
                "getLastError %.2f, streamQuery %.2f\n",
                per_call_us(1000, [&] {
                    void* p = nullptr;
                    cudaMallocAsync(&p, 300000, stream);
                    cudaFreeAsync(p, stream);
                }),
                per_call_us(1000, [&] { cudaMemsetAsync(buf, 0, 8, stream); }),
                per_call_us(1000, [&] { cudaEventRecord(ev, stream); }),
                per_call_us(1000, [&] { cudaSetDevice(0); }),
                per_call_us(1000, [&] { (void)cudaGetLastError(); }),
                per_call_us(1000, [&] { (void)cudaStreamQuery(stream); }));
    cudaEventDestroy(ev);
    cudaFree(buf);
    if (const char* dir = std::getenv("PROBE_STACKS")) {
        for (int mode = 0; mode < 3; mode += 2) {
            Sampler::start();
            for (int r = 0; r < 600; ++r) (void)loop(mode, 100, nullptr);
            cuda_check(cudaDeviceSynchronize(), "sync");
            Sampler::stop((std::string(dir) + "/" + name + (mode ? ".pagerank" : ".mxv") + ".stacks").c_str());
        }
    }
    Vector<double> x = st.start, y(n + 2, gpu);
    Scalar<double> s(gpu);
    std::printf("  host us/call: Vector(n) %.2f, mxv %.2f, inner %.2f, inner+value %.2f, Vector copy %.2f\n",
                per_call_us(1000, [&] { Vector<double> v(n + 2, gpu); }),
                per_call_us(200, [&] { mxv(y, no_mask, no_accum, plus_times{}, st.m, x); }),
                per_call_us(200, [&] { inner(s, semiring<plus_monoid, absdiff_op>{}, y, x); }),
                per_call_us(200, [&] {
                    inner(s, semiring<plus_monoid, absdiff_op>{}, y, x);
                    (void)s.value();
                }),
                per_call_us(200, [&] { Vector<double> c = x; }));
    std::fflush(stdout);
}

// --repeat-check N: PageRank (20 iterations) on the GPU N times against the CPU backend, each a fresh run (its
// matrices, plans and scratch new), for races between the kernels that one run may not show.
bool repeat_check(const std::string& name, const Matrix<double>& a, int times) {
    const Context gpu = Context::cuda();
    const Matrix<double> g = a.to(gpu);
    const std::vector<double> want = values_of(algorithms::pagerank(a, fixed(20)).rank);
    int bad = 0;
    double worst = 0;
    for (int r = 0; r < times; ++r) {
        const double gap = largest_difference(values_of(algorithms::pagerank(g, fixed(20)).rank), want);
        if (!(gap <= 1e-12)) ++bad;
        worst = std::isnan(gap) || gap > worst ? gap : worst;
    }
    std::printf("%-18s repeat-check: %d of %d PageRank runs differ from the CPU's (largest difference %.3g)\n",
                name.c_str(), bad, times, worst);
    std::fflush(stdout);
    return bad == 0;
}

bool bench_graph(const std::string& name, const Matrix<double>& a, int runs, cusparseHandle_t handle) {
    const Context gpu = Context::cuda();
    const Matrix<double> g = a.to(gpu);
    const Index n = a.nrows();
    std::printf("%-18s n=%zu nnz=%zu\n", name.c_str(), size_t(n), size_t(a.nvals()));
    bool ok = true;

    // PageRank.
    const double gap = largest_difference(values_of(algorithms::pagerank(g, fixed(20)).rank),
                                          values_of(algorithms::pagerank(a, fixed(20)).rank));
    const DeviceCsr p(a);
    const auto [spmv_ms, spmm_ms] = cusparse_times(handle, p, 64, std::max(runs, 20));
    if (!(gap <= 1e-12)) {
        std::printf("  pagerank CHECK FAILED: GPU and CPU ranks differ by %.3g\n", gap);
        ok = false;
    } else {
        const double it = per_iteration_ms(runs, 5, 45, [&](std::size_t k) { (void)algorithms::pagerank(g, fixed(k)); });
        // LDBC mode computes no L1 change: its iterations are the product alone.
        const double it_ldbc = per_iteration_ms(runs, 5, 45, [&](std::size_t k) {
            algorithms::PageRankOptions o;
            o.ldbc = true;
            o.iterations = k;
            (void)algorithms::pagerank(g, o);
        });
        std::printf("  pagerank: %.4f ms/iteration (%.4f in LDBC mode, no convergence test); one cusparseSpMV (double) "
                    "%.4f ms; ratio %.2f (LDBC mode %.2f)\n",
                    it, it_ldbc, spmv_ms, it / spmv_ms, it_ldbc / spmv_ms);
    }

    // Personalized PageRank, 64 seeds.
    std::vector<Index> seeds;
    for (Index k = 0; k < 64 && n > 0; ++k) seeds.push_back(Index(std::uint64_t(k) * n / 64));
    const double pgap = largest_difference(values_of(algorithms::personalized_pagerank(g, seeds, fixed(3)).rank),
                                           values_of(algorithms::personalized_pagerank(a, seeds, fixed(3)).rank));
    if (!(pgap <= 1e-12)) {
        std::printf("  personalized pagerank CHECK FAILED: GPU and CPU ranks differ by %.3g\n", pgap);
        ok = false;
    } else {
        const double it = per_iteration_ms(runs, 3, 43, [&](std::size_t k) {
            (void)algorithms::personalized_pagerank(g, seeds, fixed(k));
        });
        std::printf("  personalized pagerank, 64 seeds: %.4f ms/iteration; 64 cusparseSpMV %.4f ms (ratio %.2f); "
                    "one cusparseSpMM, 64 columns %.4f ms (ratio %.2f); one cusparseSpMM + one cusparseSpMV %.4f ms "
                    "(ratio %.2f)\n",
                    it, 64 * spmv_ms, it / (64 * spmv_ms), spmm_ms, it / spmm_ms, spmm_ms + spmv_ms,
                    it / (spmm_ms + spmv_ms));
    }

    // Triangles.
    algorithms::TriangleOptions to;
    to.degree_order = true;
    std::uint64_t tri_gpu = 0, tri_cpu = 0;
    std::vector<double> tg;
    (void)algorithms::triangle_count(g, to);  // warm-up
    for (int r = 0; r < std::max(1, std::min(runs, 5)); ++r)
        tg.push_back(seconds_of([&] { tri_gpu = algorithms::triangle_count(g, to); }));
    const double tc_cpu = seconds_of([&] { tri_cpu = algorithms::triangle_count(a, to); });
    if (tri_gpu != tri_cpu) {
        std::printf("  tc CHECK FAILED: GPU %llu triangles, CPU %llu\n", (unsigned long long)tri_gpu,
                    (unsigned long long)tri_cpu);
        ok = false;
    } else {
        const double t = median(tg);
        std::printf("  tc: %llu triangles; GPU %.4f s (%.3g triangles/s); CPU backend %.4f s; speed-up %.1fx\n",
                    (unsigned long long)tri_gpu, t, double(tri_gpu) / t, tc_cpu, tc_cpu / t);
    }
    std::fflush(stdout);
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    program = "gpu_algos";
    std::string data;
    std::vector<std::string> graphs;
    int runs = 5;
    bool probe = false;
    int repeat = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        if ((s == "--data" || s == "--graphs" || s == "--runs" || s == "--repeat-check") && i + 1 >= argc) {
            std::fprintf(stderr, "gpu_algos: %s needs a value\n", s.c_str());
            return 2;
        }
        if (s == "--data") data = argv[++i];
        else if (s == "--graphs") graphs = split_list(argv[++i]);
        else if (s == "--runs") runs = std::max(1, std::atoi(argv[++i]));
        else if (s == "--probe") probe = true;
        else if (s == "--repeat-check") repeat = std::max(1, std::atoi(argv[++i]));
        else if (s == "-h" || s == "--help") {
            std::printf("usage: gpu_algos [--data DIR] [--graphs a,b,...] [--runs N] [--probe] [--repeat-check N]\n");
            return 0;
        } else {
            std::fprintf(stderr, "gpu_algos: unknown argument %s (try --help)\n", s.c_str());
            return 2;
        }
    }
    if (data.empty()) data = default_data_dir();
    if (graphs.empty())
        graphs = {"soc-Slashdot0902", "git_web_ml", "musae_facebook", "deezer_HU", "luxembourg_osm", "rmat18", "rmat20", "rmat21"};
    try {
        set_default_context(Context::cpu());
        if (!cuda_usable()) {
            std::fprintf(stderr, "gpu_algos: no usable CUDA GPU\n");
            return 2;
        }
        cudaDeviceProp prop{};
        cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
        std::printf("gpu_algos on %s; data: %s\n", prop.name, data.c_str());
        cusparseHandle_t handle;
        sparse_check(cusparseCreate(&handle), "cusparseCreate");
        bool ok = true;
        for (const std::string& name : graphs) {
            Matrix<double> a;
            try {
                a = load_graph<double>(name, data);
            } catch (const std::exception& e) {
                std::printf("%-18s skipped: %s\n", name.c_str(), e.what());
                continue;
            }
            if (probe) probe_graph(name, a, runs);
            else if (repeat) ok = repeat_check(name, a, repeat) && ok;
            else ok = bench_graph(name, a, runs, handle) && ok;
        }
        cusparseDestroy(handle);
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_algos: %s\n", e.what());
        return 2;
    }
}
