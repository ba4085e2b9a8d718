// gpu_hostprof: where a GPU call's host time goes. Every CUDA runtime call the library makes is timed and counted
// per call of the measured operation: this program defines the runtime's functions itself, and its definitions
// take precedence over libcudart's (they call the real ones, found with dlvsym). A small product is bound by
// these calls when its wall time equals its host time (engine/cuda/spgemm/README.md).
//
//   gpu_hostprof GRAPH [CLUSTERS] [--runs N] [--stacks] [--timeline]
//
// Operations, on GRAPH's matrix A (float, on the GPU): A·A (plus_times); C<A> = X·Xᵀ with X dense n x 32
// (SDDMM); A·X with X dense n x 32 and n x 128 (SpMM, into a C made before the call); personalized PageRank with
// 64 seeds (vertices k·n/64), 3 and 13 iterations each with its convergence test; with CLUSTERS (mcl's output for GRAPH, as gpu_contract reads it) `contract`, its
// indicator (hybla::indicator) and its two products.
// For each: wall time and host time until the call returns (microseconds per call, mean of --runs, default 20,
// after one warm-up call), then each runtime function's calls and microseconds per call of the operation, split
// into waits (synchronisations, blocking copies) and the rest. The wrappers' own cost (two clock reads a call)
// is included. --stacks: also the call sites of one more call, as offsets into this program and its
// libraries, for `addr2line -f -C -e gpu_hostprof` (build with symbols). --timeline: also one more call's
// runtime calls in order, each with its start and length on the host, and for a kernel launch when the GPU ran
// it (events recorded before and after it in its stream; microseconds from the call's start).
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "algorithms/contract.hpp"
#include "algorithms/pagerank.hpp"
#include "bench/gpu_common.hpp"
#include "engine/hybla.hpp"
#include "io/read_graph.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
bool timing = false, stacks = false, timeline = false;
clock_type::time_point timeline_t0;

// One runtime call of the timeline; a kernel's events bracket it in its stream.
struct Step {
    std::string name;
    double start = 0, us = 0;
    cudaEvent_t before = nullptr, after = nullptr;
};
std::vector<Step>& steps() {
    static std::vector<Step> s;
    return s;
}
template <class F>
F real(const char* name);
struct Stat {
    double us = 0;
    long calls = 0;
};
std::map<std::string, Stat>& stats() {
    static std::map<std::string, Stat> s;
    return s;
}
std::map<std::string, long>& sites() {
    static std::map<std::string, long> s;
    return s;
}

// The call site of a runtime call: up to eight frames as object+offset.
void record_site(const char* name) {
    void* frames[10];
    const int n = backtrace(frames, 10);
    std::string key = name;
    for (int i = 2; i < n; ++i) {
        Dl_info info;
        char text[96];
        if (dladdr(frames[i], &info) && info.dli_fbase) {
            const char* base = info.dli_fname ? std::strrchr(info.dli_fname, '/') : nullptr;
            std::snprintf(text, sizeof text, " %s+0x%lx", base ? base + 1 : "?",
                          static_cast<unsigned long>(static_cast<char*>(frames[i]) - static_cast<char*>(info.dli_fbase)));
        } else {
            std::snprintf(text, sizeof text, " %p", frames[i]);
        }
        key += text;
    }
    ++sites()[key];
}

struct Timed {
    const char* name;
    clock_type::time_point t0 = clock_type::now();
    explicit Timed(const char* n) : name(n) {}
    ~Timed() {
        if (stacks) record_site(name);
        if (timeline) {
            using us = std::chrono::duration<double, std::micro>;
            steps().push_back(Step{name, us(t0 - timeline_t0).count(), us(clock_type::now() - t0).count()});
        }
        if (!timing) return;
        Stat& s = stats()[name];
        s.us += std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
        ++s.calls;
    }
};

template <class F>
F real(const char* name) {  // (declared above)
    void* p = dlvsym(RTLD_NEXT, name, "libcudart.so.13");
    if (!p) p = dlsym(RTLD_NEXT, name);
    if (!p) {
        std::fprintf(stderr, "gpu_hostprof: the CUDA runtime has no %s\n", name);
        std::exit(2);
    }
    return reinterpret_cast<F>(p);
}

}  // namespace

#define HYBLA_WRAP(ret, name, params, args)        \
    extern "C" ret name params {                   \
        static const auto f = real<ret(*) params>(#name); \
        Timed timed(#name);                        \
        return f args;                             \
    }
namespace {
// A launch on the timeline: events before and after it in its stream, the kernel's name.
template <class Launch>
cudaError_t timed_launch(const char* name, cudaStream_t s, Launch&& launch) {
    if (!timeline) {
        Timed timed(name);
        return launch();
    }
    static const auto record = real<cudaError_t (*)(cudaEvent_t, cudaStream_t)>("cudaEventRecord");
    cudaEvent_t before, after;
    cudaEventCreate(&before);
    cudaEventCreate(&after);
    record(before, s);
    cudaError_t e;
    {
        Timed timed(name);
        e = launch();
    }
    record(after, s);
    steps().back().before = before;
    steps().back().after = after;
    return e;
}
}  // namespace
extern "C" cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t sm, cudaStream_t s) {
    static const auto f = real<cudaError_t (*)(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t)>(
        "__cudaLaunchKernel");
    const char* name = "kernel";
    if (timeline) cuKernelGetName(&name, reinterpret_cast<CUkernel>(k));
    return timed_launch(name, s, [&] { return f(k, g, b, a, sm, s); });
}
extern "C" cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* f2, void** a) {
    static const auto f = real<cudaError_t (*)(const cudaLaunchConfig_t*, const void*, void**)>(
        "cudaLaunchKernelExC");
    const char* name = "kernel";
    if (timeline) cudaFuncGetName(&name, f2);
    return timed_launch(name, c->stream, [&] { return f(c, f2, a); });
}
HYBLA_WRAP(cudaError_t, cudaMallocAsync, (void** p, size_t n, cudaStream_t s), (p, n, s))
HYBLA_WRAP(cudaError_t, cudaFreeAsync, (void* p, cudaStream_t s), (p, s))
HYBLA_WRAP(cudaError_t, cudaMemcpyAsync, (void* d, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s),
           (d, src, n, k, s))
HYBLA_WRAP(cudaError_t, cudaMemcpy, (void* d, const void* src, size_t n, cudaMemcpyKind k), (d, src, n, k))
HYBLA_WRAP(cudaError_t, cudaMemsetAsync, (void* d, int v, size_t n, cudaStream_t s), (d, v, n, s))
HYBLA_WRAP(cudaError_t, cudaStreamSynchronize, (cudaStream_t s), (s))
HYBLA_WRAP(cudaError_t, cudaEventSynchronize, (cudaEvent_t e), (e))
HYBLA_WRAP(cudaError_t, cudaEventRecord, (cudaEvent_t e, cudaStream_t s), (e, s))
HYBLA_WRAP(cudaError_t, cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t e, unsigned flags), (s, e, flags))
HYBLA_WRAP(cudaError_t, cudaMemGetInfo, (size_t* free_bytes, size_t* total), (free_bytes, total))
HYBLA_WRAP(cudaError_t, cudaMemPoolGetAttribute, (cudaMemPool_t p, cudaMemPoolAttr a, void* v), (p, a, v))
HYBLA_WRAP(cudaError_t, cudaDeviceGetAttribute, (int* v, cudaDeviceAttr a, int d), (v, a, d))
HYBLA_WRAP(cudaError_t, cudaSetDevice, (int d), (d))
HYBLA_WRAP(cudaError_t, cudaGetDevice, (int* d), (d))
HYBLA_WRAP(cudaError_t, cudaFuncGetAttributes, (cudaFuncAttributes* a, const void* f2), (a, f2))
HYBLA_WRAP(cudaError_t, cudaFuncSetAttribute, (const void* f2, cudaFuncAttribute a, int v), (f2, a, v))
HYBLA_WRAP(cudaError_t, cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
           (int* n, const void* f2, int b, size_t sm, unsigned flags), (n, f2, b, sm, flags))
HYBLA_WRAP(cudaError_t, cudaPeekAtLastError, (), ())
HYBLA_WRAP(cudaError_t, cudaGetLastError, (), ())
HYBLA_WRAP(cudaError_t, cudaDeviceGetDefaultMemPool, (cudaMemPool_t* p, int d), (p, d))
#undef HYBLA_WRAP

namespace {

using namespace hybla;

template <class F>
void profile(const char* what, int runs, bool with_sites, bool with_timeline, const Context& gpu, F&& f) {
    const auto stream = static_cast<cudaStream_t>(gpu.stream());
    f();  // warm-up
    cudaStreamSynchronize(stream);
    stats().clear();
    double wall = 0, host = 0;
    for (int r = 0; r < runs; ++r) {
        timing = true;
        const auto t0 = clock_type::now();
        f();
        const auto t1 = clock_type::now();
        cudaStreamSynchronize(stream);
        const auto t2 = clock_type::now();
        timing = false;
        host += std::chrono::duration<double, std::micro>(t1 - t0).count();
        wall += std::chrono::duration<double, std::micro>(t2 - t0).count();
    }
    std::printf("%s: wall %.1f us a call, host until it returns %.1f us\n", what, wall / runs, host / runs);
    double api = 0, waits = 0;
    for (const auto& [name, s] : stats()) {
        std::printf("  %-56s %7.2f calls %8.1f us (%.2f us each)\n", name.c_str(), double(s.calls) / runs,
                    s.us / runs, s.us / double(s.calls));
        const bool wait = name == "cudaStreamSynchronize" || name == "cudaEventSynchronize" || name == "cudaMemcpy";
        (wait ? waits : api) += s.us;
    }
    std::printf("  runtime calls %.1f us, waits %.1f us, the rest (host code) %.1f us, a call\n", api / runs,
                waits / runs, (wall - api - waits) / runs);
    if (with_sites) {
        sites().clear();
        stacks = true;
        f();
        cudaStreamSynchronize(stream);
        stacks = false;
        for (const auto& [site, n] : sites())
            if (site.rfind("cudaGetLastError", 0) && site.rfind("cudaPeekAtLastError", 0) &&
                site.rfind("cudaGetDevice", 0))
                std::printf("  site %ld x %s\n", n, site.c_str());
    }
    if (with_timeline) {
        steps().clear();
        cudaEvent_t start;
        cudaEventCreate(&start);
        cudaEventRecord(start, stream);
        timeline_t0 = clock_type::now();
        timeline = true;
        f();
        timeline = false;
        cudaStreamSynchronize(stream);
        cudaDeviceSynchronize();
        std::printf("  timeline (us from the call's start): host start, host length; GPU start, end\n");
        for (const Step& st : steps()) {
            if (st.name == "cudaGetLastError" || st.name == "cudaPeekAtLastError" || st.name == "cudaGetDevice")
                continue;
            std::printf("  %9.1f %7.1f", st.start, st.us);
            if (st.before) {
                float b = 0, e = 0;
                cudaEventElapsedTime(&b, start, st.before);
                cudaEventElapsedTime(&e, start, st.after);
                std::printf("  gpu %9.1f %9.1f (%6.1f)", 1e3 * b, 1e3 * e, 1e3 * (e - b));
                cudaEventDestroy(st.before);
                cudaEventDestroy(st.after);
            } else {
                std::printf("  %-32s", "");
            }
            std::printf("  %.90s\n", st.name.c_str());
        }
        cudaEventDestroy(start);
    }
}

}  // namespace

int main(int argc, char** argv) {
    bench::program = "gpu_hostprof";
    std::vector<std::string> pos;
    int runs = 20;
    bool want_stacks = false, want_timeline = false;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        if (s == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else if (s == "--stacks") want_stacks = true;
        else if (s == "--timeline") want_timeline = true;
        else if (s == "-h" || s == "--help") {
            std::printf("usage: gpu_hostprof GRAPH [CLUSTERS] [--runs N] [--stacks] [--timeline]\n");
            return 0;
        } else pos.push_back(s);
    }
    if (pos.empty() || pos.size() > 2) {
        std::fprintf(stderr, "usage: gpu_hostprof GRAPH [CLUSTERS] [--runs N] [--stacks] [--timeline]\n");
        return 2;
    }
    try {
        const Context gpu = Context::cuda();
        io::Graph<float> g = io::graph_format_of(pos[0]) == io::GraphFormat::abc
                                 ? io::read_abc<float>(pos[0], {.undirected = true}, max_op{})
                                 : io::read_graph<float>(pos[0]);
        const Index n = g.matrix.nrows();
        const Matrix<float> a = g.matrix.to(gpu);
        auto run = [&](const char* what, auto&& f) { profile(what, runs, want_stacks, want_timeline, gpu, f); };
        run("A·A", [&] {
            Matrix<float> c(n, n, gpu);
            mxm(c, no_mask, no_accum, plus_times{}, a, a);
        });
        const DenseMatrix<float> x = DenseMatrix<float>(n, 32, 1.0f, Context::cpu()).to(gpu);
        run("SDDMM C<A> = X·Xᵀ, K = 32", [&] {
            Matrix<float> c(n, n, gpu);
            mxm(c, a, no_accum, plus_times{}, x, x, Descriptor{.transpose_b = true, .mask_structure = true});
        });
        DenseMatrix<float> y(n, 32, 0.0f, gpu);
        run("SpMM A·X, X n x 32", [&] { mxm(y, no_mask, no_accum, plus_times{}, a, x); });
        const DenseMatrix<float> x128 = DenseMatrix<float>(n, 128, 1.0f, Context::cpu()).to(gpu);
        DenseMatrix<float> y128(n, 128, 0.0f, gpu);
        run("SpMM A·X, X n x 128", [&] { mxm(y128, no_mask, no_accum, plus_times{}, a, x128); });
        std::vector<Index> seeds;
        for (Index k = 0; k < 64 && n > 0; ++k) seeds.push_back(Index(std::uint64_t(k) * n / 64));
        algorithms::PageRankOptions three;
        three.tolerance = 0;  // never converged: exactly three iterations
        three.max_iterations = 3;
        run("personalized PageRank, 64 seeds, 3 iterations",
            [&] { (void)algorithms::personalized_pagerank(a, seeds, three); });
        algorithms::PageRankOptions thirteen = three;
        thirteen.max_iterations = 13;
        run("personalized PageRank, 64 seeds, 13 iterations (less the line above: ten iterations)",
            [&] { (void)algorithms::personalized_pagerank(a, seeds, thirteen); });
        if (pos.size() == 2) {
            const std::vector<std::int64_t> labels = bench::read_cluster_labels(pos[1], g.names, n);
            run("contract (the whole call)", [&] { (void)algorithms::contract(a, labels); });
            const auto ind = indicator<float>(labels, LabelOrder::first_appearance, gpu);
            run("the indicator alone (hybla::indicator)",
                [&] { (void)indicator<float>(labels, LabelOrder::first_appearance, gpu); });
            run("contract's two products", [&] { (void)algorithms::detail::coarsen<plus_monoid>(ind.s, ind.st, a); });
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_hostprof: %s\n", e.what());
        return 2;
    }
}
