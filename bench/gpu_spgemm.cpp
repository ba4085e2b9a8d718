// gpu_spgemm: hybla's sparse x sparse mxm on the GPU (float, a Context::cuda() matrix) against cuSPARSE's SpGEMM
// (cusparseSpGEMM, CUSPARSE_SPGEMM_DEFAULT, float, 32-bit indices), in the same run on the same GPU.
//
//   gpu_spgemm [--runs N] [--hash-only] [--products A,AAt,tri,contract] GRAPH...
//
// --hash-only: the hash SpGEMM's default run alone (no ranged on/off, no ESC: for products ESC cannot hold).
//
// GRAPH: a graph file io::read_graph reads, a graph of the data folder as load_graph finds it (gpu_common.hpp;
// the folder is $HYBLA_DATA or ../shared/data), or rmatS / rmatS:EF (R-MAT scale S, edge factor EF, 16 when
// absent: the undirected simple graph, values 1). A is the graph's matrix (n x n, its values as read). Products
// (all four unless --products names some):
//   A         C = A·A, plus_times.
//   AAt       C = A·Aᵀ, plus_times: hybla with Descriptor{.transpose_b = true} (A's transpose is computed by the
//             warm-up call and stays cached on A, as for a user who repeats the call). cuSPARSE's SpGEMM supports
//             non-transposed operands only, so it is given an explicit transposed copy of A, made and uploaded
//             outside its timing.
//   tri       triangle counting's masked product as algorithms/triangle_count.hpp calls it: C<L> = L ⊕.⊗ Uᵀ with
//             plus_pair, Descriptor{.transpose_b = true, .mask_structure = true}, L and U the strict lower and
//             upper triangles of A's symmetrised pattern (values 1). cuSPARSE has no masked SpGEMM: its time is
//             that of the UNMASKED product L·L (Uᵀ = L) and nothing else, and the line says so. The check is the
//             triangle count: the sum of hybla's C equals the sum of cuSPARSE's L·L over L's entries.
//   contract  S·A·Sᵀ with S the k x n indicator of the labels v / 16 (a fixed coarsening, k = ceil(n / 16)):
//             hybla's two mxm calls exactly as gpu_contract's "products alone" (algorithms::detail::coarsen, A·Sᵀ
//             then S·(A·Sᵀ), with S and Sᵀ on the GPU); cuSPARSE's
//             two SpGEMMs in both orders ((S·A)·Sᵀ and S·(A·Sᵀ)), S and Sᵀ uploaded outside its timing, the
//             faster order compared (both times are printed, and their results checked against each other).
//
// Times are medians of --runs (default 5) calls after one warm-up call, each between two CUDA events on the
// default stream around the whole call, the previous call's result freed before the first event. hybla: the
// result matrix created, the mxm call(s), then a host synchronisation of the stream. cuSPARSE: the whole
// sequence a user pays for (C's offsets allocated and its descriptor made, cusparseSpGEMM_createDescr,
// workEstimation twice with the cudaMalloc of buffer 1 between, compute twice with the cudaMalloc of buffer 2
// between, cudaMalloc of C's columns and values, cusparseSpGEMM_copy, then the frees of the buffers and the
// descriptor). Operands are uploaded outside both timings. hybla's memory pool keeps what it frees, so it is
// trimmed (and hybla's GPU operands freed) before cuSPARSE runs: cuSPARSE has the GPU's memory too.
//
// Before a line is printed the results are checked; a mismatch prints what differs and ends the program with
// exit status 1. hybla's C against cuSPARSE's: the same row offsets and columns exactly (cuSPARSE's rows sorted by
// column on the host first) and values within 1e-4 relative (to max(1, |cuSPARSE's value|), as gpu_contract);
// for tri the triangle counts. If cuSPARSE fails (an error status, a failed cudaMalloc, an operand or result
// past its 32-bit indices) the program prints "cuSPARSE fails: <reason>", still times hybla and checks hybla's
// entries per row against the CPU backend's product when that fits in half the host's memory (else the line
// says "unchecked").
//
// One line per graph and product: the graph, its rows, nnz(A), the product, `products` (multiplications of the
// unmasked product(s), computed on the host as the sum over A's entries (i, k) of |B(k, :)|; for tri with B =
// Uᵀ = L, for contract hybla's two products together, nnz(A) + nnz(A·Sᵀ)), nnz(C) (hybla's), hybla's ms, GFLOP/s
// (2 x products / hybla's time), cuSPARSE's ms or "fails", ratio = cuSPARSE / hybla (above 1: hybla faster),
// peak MiB = the high-water mark of hybla's device memory pool during one more call (peak_device_memory,
// engine/memory.hpp), with in brackets the part above what the pool held just before it (the operands and
// their cached transposes), ranged = hybla's time with HYBLA_SPGEMM_RANGED=0 over its time with =1 (set before
// the calls; the library reads it at each call; both results are checked against the default run's), and the
// check made. At the end: the geometric mean of the A·A ratios over the graphs where cuSPARSE ran.
// hybla ms is the hash SpGEMM (HYBLA_SPGEMM=hash, engine/cuda/spgemm/spgemm.cu); esc ms the expand-sort-compress
// SpGEMM (HYBLA_SPGEMM=esc), timed the same way with its result
// checked against hash's. Masked L·Uᵀ takes the dot path (engine/cuda/spgemm/dot.cu) under both.
// Values are taken as magnitudes (absolute_values below).
#include <cuda_runtime.h>
#include <cusparse.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "algorithms/contract.hpp"
#include "algorithms/triangle_count.hpp"
#include "bench/cusparse_spgemm.hpp"
#include "bench/gpu_common.hpp"
#include "engine/hybla.hpp"
#include "engine/memory.hpp"

namespace {

using namespace hybla;
using namespace hybla::bench;

const char* const ranged_env = "HYBLA_SPGEMM_RANGED";

// ------------------------------------------------------------------ cuSPARSE

// ------------------------------------------------------------------ results on the host

// A result on the host, whoever computed it: CSR with rows sorted by column.
struct HostCsr {
    Index m = 0, n = 0;
    std::vector<std::int64_t> off;
    std::vector<std::uint32_t> col;
    std::vector<float> val;
    std::size_t nnz() const { return col.size(); }
};

HostCsr host_of(const Matrix<float>& a) {
    const Matrix<float> h = a.to(Context::cpu());
    HostCsr r;
    r.m = h.nrows();
    r.n = h.ncols();
    r.off.assign(h.row_offsets().begin(), h.row_offsets().end());
    r.col.assign(h.col_indices().begin(), h.col_indices().end());
    r.val.assign(h.values().begin(), h.values().end());
    return r;
}

// cuSPARSE's result; its rows are sorted here (outside any timing) in case its column order is not.
HostCsr host_of(const DeviceCsr& d) {
    HostCsr r;
    r.m = Index(d.m);
    r.n = Index(d.n);
    std::vector<int> off(d.m + 1), col(d.nnz);
    r.val.resize(d.nnz);
    cuda_try(cudaMemcpy(off.data(), d.off, off.size() * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy (C)");
    cuda_try(cudaMemcpy(col.data(), d.col, col.size() * sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy (C)");
    cuda_try(cudaMemcpy(r.val.data(), d.val, r.val.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy (C)");
    r.off.assign(off.begin(), off.end());
    r.col.assign(col.begin(), col.end());
    std::vector<std::size_t> perm;
    std::vector<std::uint32_t> c2;
    std::vector<float> v2;
    for (Index i = 0; i < r.m; ++i) {
        const auto b = r.col.begin() + r.off[i], e = r.col.begin() + r.off[i + 1];
        if (std::is_sorted(b, e)) continue;
        const std::size_t len = std::size_t(e - b);
        perm.resize(len);
        std::iota(perm.begin(), perm.end(), std::size_t(0));
        std::sort(perm.begin(), perm.end(), [&](std::size_t x, std::size_t y) { return b[x] < b[y]; });
        c2.resize(len);
        v2.resize(len);
        for (std::size_t q = 0; q < len; ++q) {
            c2[q] = b[perm[q]];
            v2[q] = r.val[r.off[i] + perm[q]];
        }
        std::copy(c2.begin(), c2.end(), r.col.begin() + r.off[i]);
        std::copy(v2.begin(), v2.end(), r.val.begin() + r.off[i]);
    }
    return r;
}

// What differs between hybla's result and a reference: how many differences, and the first few in words.
struct Differences {
    std::size_t count = 0;
    std::vector<std::string> first;
    void add(std::string what) {
        if (first.size() < 10) first.push_back(std::move(what));
        ++count;
    }
};

bool values_close(float ours, float ref) {
    const double d = std::fabs(double(ours) - double(ref));
    return d <= 1e-4 * std::max(1.0, std::fabs(double(ref)));  // false for a NaN
}

// The same row offsets and columns exactly, values within 1e-4 relative; with pattern_only, entries per row only.
Differences differences(const HostCsr& ours, const HostCsr& ref, bool pattern_only = false) {
    Differences d;
    if (ours.m != ref.m || ours.n != ref.n) {
        d.add("dimensions: " + std::to_string(ours.m) + "x" + std::to_string(ours.n) + " against " +
              std::to_string(ref.m) + "x" + std::to_string(ref.n));
        return d;
    }
    if (ours.nnz() != ref.nnz())
        d.add("entries: " + std::to_string(ours.nnz()) + " against " + std::to_string(ref.nnz()));
    for (Index i = 0; i < ours.m; ++i) {
        const std::int64_t a = ours.off[i], na = ours.off[i + 1] - a;
        const std::int64_t b = ref.off[i], nb = ref.off[i + 1] - b;
        if (na != nb) {
            d.add("row " + std::to_string(i) + ": " + std::to_string(na) + " entries against " + std::to_string(nb));
            continue;
        }
        if (pattern_only) continue;
        for (std::int64_t q = 0; q < na; ++q) {
            if (ours.col[a + q] != ref.col[b + q]) {
                d.add("row " + std::to_string(i) + ", entry " + std::to_string(q) + ": column " +
                      std::to_string(ours.col[a + q]) + " against " + std::to_string(ref.col[b + q]));
                break;
            }
            if (!values_close(ours.val[a + q], ref.val[b + q])) {
                char s[160];
                std::snprintf(s, sizeof s, "(%llu, %u): value %.9g against %.9g", (unsigned long long)i,
                              ours.col[a + q], double(ours.val[a + q]), double(ref.val[b + q]));
                d.add(s);
            }
        }
    }
    return d;
}

// A failed check: what differs, then the end of the program (exit status 1).
[[noreturn]] void mismatch(const std::string& graph, const char* product, const std::string& against,
                           const Differences& d) {
    std::printf("%s %s: hybla's result DIFFERS from %s (%zu differences)\n", graph.c_str(), product,
                against.c_str(), d.count);
    for (const auto& s : d.first) std::printf("  %s\n", s.c_str());
    if (d.count > d.first.size()) std::printf("  ...\n");
    std::fflush(stdout);
    std::exit(1);
}

// ------------------------------------------------------------------ counts on the host

// Multiplications of A·B (unmasked): the sum over A's entries (i, k) of |B(k, :)|.
std::uint64_t products_of(const Matrix<float>& a, const Matrix<float>& b) {
    const auto ac = a.col_indices();
    const auto bo = b.row_offsets();
    std::uint64_t p = 0;
    for (const ColIndex k : ac) p += bo[k + 1] - bo[k];
    return p;
}

// Whether the CPU backend's product fits: at most 16 bytes per multiplication (its result and accumulators,
// generously) in half the host's memory.
bool cpu_product_fits(std::uint64_t products) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return false;
    return double(products) * 16 <= 0.5 * double(pages) * double(page);
}

// The CPU check when cuSPARSE failed: hybla's entries per row against the CPU backend's product.
// The distinct columns of each row of A·A, counted on the host by all threads (a marker array each): the check
// of a square too large for the CPU backend's product.
std::vector<std::int64_t> distinct_per_row_of_square(const HostCsr& a) {
    std::vector<std::int64_t> count(a.m, 0);
    std::atomic<Index> next{0};
    auto work = [&] {
        std::vector<std::uint32_t> mark(a.n, std::numeric_limits<std::uint32_t>::max());
        for (;;) {
            const Index i0 = next.fetch_add(64);
            if (i0 >= a.m) return;
            for (Index i = i0; i < std::min<Index>(i0 + 64, a.m); ++i) {
                std::int64_t c = 0;
                for (std::int64_t p = a.off[i]; p < a.off[i + 1]; ++p) {
                    const std::uint32_t k = a.col[p];
                    for (std::int64_t q = a.off[k]; q < a.off[k + 1]; ++q)
                        if (mark[a.col[q]] != std::uint32_t(i)) {
                            mark[a.col[q]] = std::uint32_t(i);
                            ++c;
                        }
                }
                count[i] = c;
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
    return count;
}

std::string check_rows_on_cpu(const std::string& graph, const char* product, const HostCsr& ours,
                              std::uint64_t products, const std::function<Matrix<float>()>& cpu_product,
                              const HostCsr* square_of = nullptr) {
    if (!cpu_product_fits(products) && square_of) {
        const std::vector<std::int64_t> want = distinct_per_row_of_square(*square_of);
        Differences d;
        for (Index i = 0; i < ours.m; ++i)
            if (ours.off[i + 1] - ours.off[i] != want[i])
                d.add("row " + std::to_string(i) + ": " + std::to_string(ours.off[i + 1] - ours.off[i]) +
                      " entries against " + std::to_string(want[i]));
        if (d.count) mismatch(graph, product, "a count of each row's distinct columns on the host", d);
        return "rows=host count";
    }
    if (!cpu_product_fits(products)) return "unchecked";
    const Differences d = differences(ours, host_of(cpu_product()), true);
    if (d.count) mismatch(graph, product, "the CPU backend's product (entries per row)", d);
    return "rows=CPU";
}

// ------------------------------------------------------------------ timing

// Median of `runs` timed calls of f after one warm-up call, each between two events on the default stream with
// a wait for the second; prepare runs before each call, outside the timing (it frees the previous result).
template <class P, class F>
double median_ms(int runs, P&& prepare, F&& f) {
    struct Events {
        cudaEvent_t a = nullptr, b = nullptr;
        ~Events() {
            if (a) cudaEventDestroy(a);
            if (b) cudaEventDestroy(b);
        }
    } ev;
    cuda_check(cudaEventCreate(&ev.a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&ev.b), "cudaEventCreate");
    prepare();
    f();  // warm-up
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
        prepare();
        cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        cuda_check(cudaEventRecord(ev.a), "cudaEventRecord");
        f();
        cuda_check(cudaEventRecord(ev.b), "cudaEventRecord");
        cuda_check(cudaEventSynchronize(ev.b), "cudaEventSynchronize");
        float ms = 0;
        cuda_check(cudaEventElapsedTime(&ms, ev.a, ev.b), "cudaEventElapsedTime");
        t.push_back(ms);
    }
    return median(t);
}

// The device memory pool's bytes in use now (hybla allocates from it).
std::size_t pool_in_use(int device) {
    cudaMemPool_t pool;
    cuda_check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    std::uint64_t used = 0;
    cuda_check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), "cudaMemPoolGetAttribute");
    return std::size_t(used);
}

// A with |value| for each value: a graph's weights as magnitudes, so that float sums have no cancellation and
// two summation orders agree within 1e-4 (bcsstk16's signed stiffness values cancel to noise in float).
Matrix<float> absolute_values(const Matrix<float>& a) {
    Matrix<float> h = a.to(Context::cpu());
    std::vector<Index> r, c;
    std::vector<float> v;
    h.extract_tuples(r, c, v);
    for (float& x : v) x = std::fabs(x);
    Matrix<float> out(a.nrows(), a.ncols(), Context::cpu());
    out.build(r, c, v);
    return out.to(a.context());
}

// Gives the pool's idle memory back to the device, so that cuSPARSE's cudaMalloc can have it.
void trim_pool(int device) {
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cudaMemPool_t pool;
    cuda_check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    cuda_check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
}

struct HyblaRun {
    double ms = 0, off_ms = 0, on_ms = 0;  // default, HYBLA_SPGEMM_RANGED=0, =1 (HYBLA_SPGEMM=hash)
    double esc_ms = 0;                      // HYBLA_SPGEMM=esc: the expand-sort-compress SpGEMM
    std::size_t peak = 0, above = 0;      // pool high-water mark during one call, and its part above the inputs
    HostCsr c;
};

// hybla's product: call(c) makes the result in c (created in the call, as a user does). Timed as it comes, then
// once more for its memory (its result is the one kept), then with the ranged gather off and on, each result
// checked against the kept one.
bool hash_only = false;  // --hash-only

HyblaRun time_hybla(const std::string& graph, const char* product, const Context& gpu, int runs,
                    const std::function<void(std::optional<Matrix<float>>&)>& call) {
    HyblaRun r;
    setenv("HYBLA_SPGEMM", "hash", 1);
    std::optional<Matrix<float>> c;
    auto drop = [&] { c.reset(); };
    auto once = [&] {
        call(c);
        cuda::synchronize(gpu.stream());
    };
    r.ms = median_ms(runs, drop, once);

    drop();
    cuda::synchronize(gpu.stream());
    const std::size_t before = pool_in_use(gpu.device());
    reset_peak_device_memory(gpu);
    once();
    r.peak = std::max(peak_device_memory(gpu), before);
    r.above = r.peak - before;
    r.c = host_of(*c);
    drop();

    if (hash_only) return r;
    const char* was = std::getenv(ranged_env);
    const std::optional<std::string> saved = was ? std::optional<std::string>(was) : std::nullopt;
    for (const char* v : {"0", "1"}) {
        setenv(ranged_env, v, 1);
        const double t = median_ms(runs, drop, once);
        const Differences d = differences(host_of(*c), r.c);
        if (d.count) mismatch(graph, product, std::string("itself with ") + ranged_env + "=" + v + " (against the default run)", d);
        (*v == '0' ? r.off_ms : r.on_ms) = t;
        drop();
    }
    if (saved) setenv(ranged_env, saved->c_str(), 1);
    else unsetenv(ranged_env);
    setenv("HYBLA_SPGEMM", "esc", 1);
    r.esc_ms = median_ms(runs, drop, once);
    if (const Differences d = differences(host_of(*c), r.c); d.count)
        mismatch(graph, product, "the expand-sort-compress SpGEMM (HYBLA_SPGEMM=esc)", d);
    drop();
    setenv("HYBLA_SPGEMM", "hash", 1);
    return r;
}

struct CusparseRun {
    bool ran = false;
    std::string reason;  // why not, when it failed
    double ms = 0;
    HostCsr c;
};

// cuSPARSE's product: the operands uploaded (outside the timing), then product(d) timed as a whole. A failure
// anywhere, the upload included, is reported in the result rather than ending the program.
CusparseRun time_cusparse(const Context& gpu, int runs,
                          const std::vector<std::pair<const Matrix<float>*, std::string>>& operands,
                          const std::function<DeviceCsr(std::vector<DeviceCsr>&)>& product) {
    trim_pool(gpu.device());
    CusparseRun r;
    try {
        std::vector<DeviceCsr> d;
        for (const auto& [m, name] : operands) d.push_back(upload(*m, name));
        std::optional<DeviceCsr> c;
        r.ms = median_ms(runs, [&] { c.reset(); }, [&] { c.emplace(product(d)); });
        r.c = host_of(*c);
        r.ran = true;
    } catch (const CompetitorFailure& e) {
        r.reason = e.what();
    }
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after cuSPARSE");
    return r;
}

// ------------------------------------------------------------------ the lines

void print_header() {
    std::printf("%-18s %10s %11s %-8s %14s %12s %10s %8s %11s %7s %20s %7s %9s  %s\n", "graph", "rows", "nnz(A)",
                "product", "products", "nnz(C)", "hybla ms", "GFLOP/s", "cuSPARSE ms", "ratio", "peak MiB (+call)",
                "ranged", "esc ms", "check");
}

void print_line(const std::string& graph, const Matrix<float>& a, const char* product, std::uint64_t products,
                const HyblaRun& hy, const CusparseRun& cs, const std::string& check) {
    if (!cs.ran) std::printf("%s %s: cuSPARSE fails: %s\n", graph.c_str(), product, cs.reason.c_str());
    char theirs[32], ratio[32], memory[48];
    if (cs.ran) {
        std::snprintf(theirs, sizeof theirs, "%.3f", cs.ms);
        std::snprintf(ratio, sizeof ratio, "%.2f", cs.ms / hy.ms);
    } else {
        std::snprintf(theirs, sizeof theirs, "fails");
        std::snprintf(ratio, sizeof ratio, "-");
    }
    std::snprintf(memory, sizeof memory, "%.1f (+%.1f)", double(hy.peak) / (1 << 20), double(hy.above) / (1 << 20));
    std::printf("%-18s %10llu %11llu %-8s %14llu %12zu %10.3f %8.2f %11s %7s %20s %7.2f %9.3f  %s\n", graph.c_str(),
                (unsigned long long)a.nrows(), (unsigned long long)a.nvals(), product, (unsigned long long)products,
                hy.c.nnz(), hy.ms, 2.0 * double(products) / (hy.ms * 1e6), theirs, ratio, memory, hy.off_ms / hy.on_ms,
                hy.esc_ms, check.c_str());
    std::fflush(stdout);
}

// The check of a plain product: against cuSPARSE when it ran, else entries per row against the CPU backend.
std::string check_product(const std::string& graph, const char* product, const HyblaRun& hy, const CusparseRun& cs,
                          std::uint64_t products, const std::function<Matrix<float>()>& cpu_product,
                          const HostCsr* square_of = nullptr) {
    if (!cs.ran) return check_rows_on_cpu(graph, product, hy.c, products, cpu_product, square_of);
    const Differences d = differences(hy.c, cs.c);
    if (d.count) mismatch(graph, product, "cuSPARSE's", d);
    return "=cuSPARSE";
}

// The sum of b's values at a's entries (b's rows sorted): the triangles of L·L counted at L's entries.
double sum_at(const HostCsr& a, const HostCsr& b) {
    double s = 0;
    for (Index i = 0; i < a.m; ++i) {
        std::int64_t q = b.off[i];
        const std::int64_t qe = b.off[i + 1];
        for (std::int64_t p = a.off[i]; p < a.off[i + 1]; ++p) {
            while (q < qe && b.col[q] < a.col[p]) ++q;
            if (q < qe && b.col[q] == a.col[p]) s += double(b.val[q]);
        }
    }
    return s;
}

// One graph: every product asked for, one line each. Returns cuSPARSE / hybla for A·A when cuSPARSE ran it.
std::optional<double> bench_graph(const std::string& graph, const Matrix<float>& a,
                                  const std::vector<std::string>& products, int runs, cusparseHandle_t handle,
                                  const Context& gpu) {
    const Context cpu = Context::cpu();
    const Index n = a.nrows();
    auto wanted = [&](const char* p) { return std::find(products.begin(), products.end(), p) != products.end(); };
    std::optional<double> ratio;

    if (wanted("A")) {
        const std::uint64_t prods = products_of(a, a);
        HyblaRun hy;
        {
            const Matrix<float> ag = a.to(gpu);
            hy = time_hybla(graph, "A", gpu, runs, [&](std::optional<Matrix<float>>& c) {
                c.emplace(n, n, gpu);
                mxm(*c, no_mask, no_accum, plus_times{}, ag, ag);
            });
        }
        const CusparseRun cs = time_cusparse(gpu, runs, {{&a, "A"}}, [&](std::vector<DeviceCsr>& d) {
            return spgemm(handle, d[0], d[0]);
        });
        const HostCsr ha = host_of(a);
        const std::string check = check_product(
            graph, "A", hy, cs, prods,
            [&] {
                Matrix<float> c(n, n, cpu);
                mxm(c, no_mask, no_accum, plus_times{}, a, a);
                return c;
            },
            &ha);
        print_line(graph, a, "A", prods, hy, cs, check);
        if (cs.ran) ratio = cs.ms / hy.ms;
    }

    if (wanted("AAt")) {
        const Matrix<float> at = a.transposed_copy();  // cuSPARSE's operand, and B for the count
        const std::uint64_t prods = products_of(a, at);
        HyblaRun hy;
        {
            const Matrix<float> ag = a.to(gpu);
            hy = time_hybla(graph, "AAt", gpu, runs, [&](std::optional<Matrix<float>>& c) {
                c.emplace(n, n, gpu);
                mxm(*c, no_mask, no_accum, plus_times{}, ag, ag, Descriptor{.transpose_b = true});
            });
        }
        const CusparseRun cs = time_cusparse(gpu, runs, {{&a, "A"}, {&at, "A transposed"}},
                                             [&](std::vector<DeviceCsr>& d) { return spgemm(handle, d[0], d[1]); });
        const std::string check = check_product(graph, "AAt", hy, cs, prods, [&] {
            Matrix<float> c(n, n, cpu);
            mxm(c, no_mask, no_accum, plus_times{}, a, a, Descriptor{.transpose_b = true});
            return c;
        });
        print_line(graph, a, "AAt", prods, hy, cs, check);
    }

    if (wanted("tri")) {
        // L and U of the symmetrised pattern, values 1, as triangle_count forms them (without degree ordering).
        const Matrix<std::uint8_t> s8 = algorithms::undirected_simple(a);
        Matrix<float> s(n, n, cpu), l(n, n, cpu), u(n, n, cpu);
        apply(s, no_mask, no_accum, one_op{}, s8);
        select(l, no_mask, no_accum, tril{-1}, s);
        select(u, no_mask, no_accum, triu{1}, s);
        const Descriptor desc{.transpose_b = true, .mask_structure = true};
        const std::uint64_t prods = products_of(l, l);  // B = Uᵀ = L
        HyblaRun hy;
        {
            const Matrix<float> lg = l.to(gpu), ug = u.to(gpu);
            hy = time_hybla(graph, "tri", gpu, runs, [&](std::optional<Matrix<float>>& c) {
                c.emplace(n, n, gpu);
                mxm(*c, lg, no_accum, plus_pair{}, lg, ug, desc);
            });
        }
        const CusparseRun cs = time_cusparse(gpu, runs, {{&l, "L"}}, [&](std::vector<DeviceCsr>& d) {
            return spgemm(handle, d[0], d[0]);
        });
        std::string check;
        if (cs.ran) {
            // hybla's C counts each triangle once at its L entry; cuSPARSE's unmasked L·L holds the same counts there.
            double ours = 0;
            for (const float v : hy.c.val) ours += double(v);
            const double theirs = sum_at(host_of(l), cs.c);
            if (ours != theirs) {
                Differences d;
                char w[160];
                std::snprintf(w, sizeof w, "triangles: %.0f (sum of C<L>) against %.0f (L·L summed over L's entries)",
                              ours, theirs);
                d.add(w);
                mismatch(graph, "tri", "cuSPARSE's", d);
            }
            char w[200];
            std::snprintf(w, sizeof w, "triangles=%.0f; cuSPARSE's time is the UNMASKED L·L (%zu entries)", ours,
                          cs.c.nnz());
            check = w;
        } else {
            check = check_rows_on_cpu(graph, "tri", hy.c, prods, [&] {
                Matrix<float> c(n, n, cpu);
                mxm(c, l, no_accum, plus_pair{}, l, u, desc);
                return c;
            });
        }
        print_line(graph, a, "tri", prods, hy, cs, check);
    }

    if (wanted("contract")) {
        // Sᵀ (n x k): vertex v in cluster v / 16, written as contract writes it; S is its transpose.
        const Index k = (n + 15) / 16;
        Array<Offset> offsets(n + 1, cpu);
        Array<ColIndex> columns(n, cpu);
        for (Index v = 0; v < n; ++v) {
            offsets[v] = v;
            columns[v] = ColIndex(v / 16);
        }
        offsets[n] = n;
        const Matrix<float> st =
            Matrix<float>::import_csr(n, k, std::move(offsets), std::move(columns), Array<float>(n, 1.0f, cpu));
        const Matrix<float> sm = st.transposed_copy();
        // Multiplications of hybla's order S·(A·Sᵀ): A·Sᵀ has nnz(A) (one cluster per vertex), S·(A·Sᵀ) one per
        // entry of A·Sᵀ (one per column of S), so count A·Sᵀ's entries: distinct clusters over each row's columns.
        std::uint64_t as_entries = 0;
        {
            const auto off = a.row_offsets();
            const auto col = a.col_indices();
            std::vector<Index> seen(k, std::numeric_limits<Index>::max());
            for (Index v = 0; v < n; ++v)
                for (Offset p = off[v]; p < off[v + 1]; ++p)
                    if (seen[col[p] / 16] != v) {
                        seen[col[p] / 16] = v;
                        ++as_entries;
                    }
        }
        const std::uint64_t prods = std::uint64_t(a.nvals()) + as_entries;
        HyblaRun hy;
        {
            const Matrix<float> sg = sm.to(gpu), stg = st.to(gpu), ag = a.to(gpu);
            hy = time_hybla(graph, "contract", gpu, runs, [&](std::optional<Matrix<float>>& c) {
                c.emplace(algorithms::detail::coarsen<plus_monoid>(sg, stg, ag));
            });
        }
        // cuSPARSE in both orders; the faster is the one compared.
        const std::vector<std::pair<const Matrix<float>*, std::string>> ops = {
            {&sm, "S"}, {&a, "A"}, {&st, "S transposed"}};
        const CusparseRun left = time_cusparse(gpu, runs, ops, [&](std::vector<DeviceCsr>& d) {
            const DeviceCsr sa = spgemm(handle, d[0], d[1]);
            return spgemm(handle, sa, d[2]);
        });
        const CusparseRun right = time_cusparse(gpu, runs, ops, [&](std::vector<DeviceCsr>& d) {
            const DeviceCsr as = spgemm(handle, d[1], d[2]);
            return spgemm(handle, d[0], as);
        });
        const bool right_faster = right.ran && (!left.ran || right.ms < left.ms);
        const CusparseRun& cs = right_faster ? right : left;
        const std::string check = check_product(graph, "contract", hy, cs, prods, [&] {
            return algorithms::detail::coarsen<plus_monoid>(sm, st, a);
        });
        if (left.ran && right.ran) {
            const Differences d = differences(left.c, right.c);
            if (d.count) mismatch(graph, "contract", "cuSPARSE's other order", d);
        }
        char orders[96] = "";
        if (left.ran && right.ran)
            std::snprintf(orders, sizeof orders, ", cuSPARSE (S·A)·Sᵀ %.3f ms, S·(A·Sᵀ) %.3f ms", left.ms, right.ms);
        print_line(graph, a, "contract", prods, hy, cs, check + " (" + std::to_string(k) + " clusters" + orders + ")");
    }
    return ratio;
}

}  // namespace

int main(int argc, char** argv) {
    program = "gpu_spgemm";
    const std::vector<std::string> all = {"A", "AAt", "tri", "contract"};
    int runs = 5;
    std::vector<std::string> products = all, graphs;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        if ((s == "--runs" || s == "--products") && i + 1 >= argc) {
            std::fprintf(stderr, "gpu_spgemm: %s needs a value\n", s.c_str());
            return 2;
        }
        if (s == "--runs") runs = std::max(1, std::atoi(argv[++i]));
        else if (s == "--hash-only") hash_only = true;
        else if (s == "--products") products = split_list(argv[++i]);
        else if (s == "-h" || s == "--help") {
            std::printf("usage: gpu_spgemm [--runs N] [--hash-only] [--products A,AAt,tri,contract] GRAPH...\n"
                        "GRAPH: a graph file, a graph of the data folder, or rmatS / rmatS:EF (R-MAT)\n");
            return 0;
        } else if (s.rfind("--", 0) == 0) {
            std::fprintf(stderr, "gpu_spgemm: unknown option %s (try --help)\n", s.c_str());
            return 2;
        } else graphs.push_back(s);
    }
    for (const auto& p : products)
        if (std::find(all.begin(), all.end(), p) == all.end()) {
            std::fprintf(stderr, "gpu_spgemm: unknown product '%s' (A, AAt, tri or contract)\n", p.c_str());
            return 2;
        }
    if (graphs.empty() || products.empty()) {
        std::fprintf(stderr, "usage: gpu_spgemm [--runs N] [--hash-only] [--products A,AAt,tri,contract] GRAPH...\n");
        return 2;
    }
    try {
        set_default_context(Context::cpu());
        if (!cuda_usable()) {
            std::fprintf(stderr, "gpu_spgemm: no usable CUDA GPU\n");
            return 2;
        }
        const Context gpu = Context::cuda();
        warm_up(gpu);
        cusparseHandle_t handle;
        sparse_check(cusparseCreate(&handle), "cusparseCreate");
        const std::string data = default_data_dir();
        std::printf("gpu_spgemm on %s: hybla mxm (float) against cusparseSpGEMM (CUSPARSE_SPGEMM_DEFAULT, float); "
                    "median of %d runs after a warm-up\n",
                    cuda::device_name(gpu.device()).c_str(), runs);
        print_header();
        std::vector<double> ratios;
        bool all_loaded = true;
        for (const std::string& name : graphs) {
            Matrix<float> a;
            try {
                a = resolve_graph<float>(name, data);
                a = absolute_values(a);
            } catch (const std::exception& e) {
                std::printf("%s: skipped: %s\n", name.c_str(), e.what());
                all_loaded = false;
                continue;
            }
            if (a.nrows() != a.ncols()) {
                std::printf("%s: skipped: the matrix is %llux%llu, not square\n", name.c_str(),
                            (unsigned long long)a.nrows(), (unsigned long long)a.ncols());
                all_loaded = false;
                continue;
            }
            if (const auto r = bench_graph(name, a, products, runs, handle, gpu)) ratios.push_back(*r);
        }
        if (ratios.empty()) std::printf("A·A: no graph where cuSPARSE ran\n");
        else {
            double log_sum = 0;
            for (const double r : ratios) log_sum += std::log(r);
            std::printf("A·A: geometric mean of cuSPARSE / hybla over %zu graph%s: %.3f\n", ratios.size(),
                        ratios.size() == 1 ? "" : "s", std::exp(log_sum / double(ratios.size())));
        }
        cusparseDestroy(handle);
        return all_loaded ? 0 : 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpu_spgemm: %s\n", e.what());
        return 2;
    }
}
