// bench: hybla's CPU backend against SuiteSparse:GraphBLAS, in one process, on the same CSR data.
//
// Operations (--ops, comma-separated):
//   spgemm  C = A ⊕.⊗ A, plus_times, double                        (SpGEMM, Gustavson)
//   tc      C<L> = L ⊕.⊗ Uᵀ, plus_pair, int64, structural mask      (masked SpGEMM: Sandia triangle count)
//   mxv     y = A ⊕.⊗ x, plus_times, double, x dense and full        (SpMV)
//   spmm    C = A ⊕.⊗ B, plus_times, double, B dense with 32 columns (SpMM)
// Graphs: real graphs from the data folder (--data, default $HYBLA_DATA or /work/shared/data) and R-MAT
// graphs (names rmatS for scale S). Every graph is used as its undirected simple graph (symmetrised, no
// duplicates, no self-loops, values 1.0); L and U are its strict lower and upper triangles.
//
// Timing: one warm-up run, then --runs timed runs (default 5), each library's runs back to back (or
// alternating, --interleave); the median is printed, and min_rat compares the fastest runs. A timed run covers the
// allocation of the result and everything the library computes for it (SuiteSparse: GrB_Matrix_new, the
// operation and GrB_wait/nvals; hybla: the result object and the operation). For tc, both libraries get
// freshly imported L and U every run, so hybla cannot reuse a transpose cached on U by an earlier run
// (SuiteSparse caches nothing on its inputs). The results of the last run are compared (nvals equal,
// checksum within 1e-9 relative, triangle counts equal and equal to truth.txt) before any time is printed;
// a disagreement prints MISMATCH and makes the exit status 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/version.h>

#include "bench/rmat.hpp"
#include "engine/hybla.hpp"
#include "io/edge_list.hpp"
#include "io/matrix_market.hpp"

#ifdef HYBLA_HAVE_GRAPHBLAS
extern "C" {
#include <GraphBLAS.h>
}
#endif

namespace fs = std::filesystem;
using namespace hybla;
using Clock = std::chrono::steady_clock;

namespace {

// ---------------------------------------------------------------- options

bool interleave = false;  // alternate hybla and SuiteSparse run by run
int pause_ms = 20;        // untimed pause before each timed run when they alternate

struct Options {
    std::string data;
    std::vector<std::string> graphs;  // empty: the default list
    std::vector<std::string> ops{"spgemm", "tc", "mxv", "spmm"};
    std::vector<int> rmat_scales{16, 18};
    int edge_factor = 16;
    std::uint64_t seed = 42;
    int runs = 5;
    int threads = 0;  // 0: all hardware threads
    int spmm_cols = 32;
    double max_spgemm_flops = 3e8;  // A·A is skipped above this many multiply-adds (memory and time)
    double max_tc_flops = 1e9;      // so is L·Uᵀ above this many saxpy multiply-adds (Σ over L(i,k) of |L(k,:)|)
    bool quick = false;
    bool burble = false;  // SuiteSparse's own trace of the method it picks (GxB_BURBLE), like HYBLA_TRACE=1
};

const std::vector<std::string> default_graphs{"oregon1_010331", "ca-CondMat",       "musae_facebook",
                                              "deezer_HU",      "git_web_ml",       "delaunay_n16",
                                              "luxembourg_osm", "soc-Slashdot0902"};
const std::vector<std::string> quick_graphs{"ca-GrQc", "oregon1_010331", "facebook_combined"};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string x;
    while (std::getline(ss, x, ','))
        if (!x.empty()) out.push_back(x);
    return out;
}

[[noreturn]] void usage(int code) {
    std::printf(
        "usage: bench [--quick] [--data DIR] [--graphs g1,g2,...] [--ops spgemm,tc,mxv,spmm] [--runs N]\n"
        "             [--threads N] [--rmat-scale S1,S2,...] [--edge-factor F] [--seed X] [--spmm-cols K]\n"
        "             [--max-spgemm-flops F] [--max-tc-flops F] [--interleave [--pause-ms MS]] [--burble]\n"
        "  graphs are dataset folder names under DIR, or rmatS (an R-MAT graph of scale S); by default the\n"
        "  medium real graphs and rmat<each --rmat-scale> (default 16,18). --quick: small graphs and rmat14.\n");
    std::exit(code);
}

Options parse(int argc, char** argv) {
    Options o;
    if (const char* e = std::getenv("HYBLA_DATA")) o.data = e;
    else o.data = "/work/shared/data";
    bool scales_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench: %s needs a value\n", a.c_str());
                usage(2);
            }
            return argv[++i];
        };
        if (a == "--quick") o.quick = true;
        else if (a == "--data") o.data = next();
        else if (a == "--graphs") o.graphs = split(next());
        else if (a == "--ops") o.ops = split(next());
        else if (a == "--runs") o.runs = std::max(1, std::stoi(next()));
        else if (a == "--threads") o.threads = std::stoi(next());
        else if (a == "--rmat-scale") {
            o.rmat_scales.clear();
            for (auto& s : split(next())) o.rmat_scales.push_back(std::stoi(s));
            scales_given = true;
        } else if (a == "--edge-factor") o.edge_factor = std::stoi(next());
        else if (a == "--seed") o.seed = std::stoull(next());
        else if (a == "--pause-ms") pause_ms = std::stoi(next());
        else if (a == "--interleave") interleave = true;
        else if (a == "--burble") o.burble = true;
        else if (a == "--spmm-cols") o.spmm_cols = std::stoi(next());
        else if (a == "--max-spgemm-flops") o.max_spgemm_flops = std::stod(next());
        else if (a == "--max-tc-flops") o.max_tc_flops = std::stod(next());
        else if (a == "-h" || a == "--help") usage(0);
        else {
            std::fprintf(stderr, "bench: unknown option %s\n", a.c_str());
            usage(2);
        }
    }
    if (o.quick && !scales_given) o.rmat_scales = {14};
    if (o.graphs.empty()) {
        o.graphs = o.quick ? quick_graphs : default_graphs;
        for (int s : o.rmat_scales) o.graphs.push_back("rmat" + std::to_string(s));
    }
    for (auto& op : o.ops)
        if (op != "spgemm" && op != "tc" && op != "mxv" && op != "spmm") {
            std::fprintf(stderr, "bench: unknown operation %s\n", op.c_str());
            usage(2);
        }
    return o;
}

// ---------------------------------------------------------------- timing

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// How one library runs one operation: prepare() before each call and finish() after it are not timed.
struct Job {
    std::function<void()> prepare, run, finish;
};

// Per job: one warm-up, then `runs` timed calls; the jobs one after the other (default), or alternating
// run by run with --interleave (a pause before each run lets the other library's idle workers, TBB's and
// OpenMP's, go to sleep). Returns the median and the minimum time of each job in ms.
struct Times {
    double median, min;
};
std::vector<Times> measure(int runs, const std::vector<Job*>& jobs) {
    std::vector<std::vector<double>> t(jobs.size());
    auto one = [&](std::size_t j, int r) {
        jobs[j]->prepare();
        if (interleave) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        auto t0 = Clock::now();
        jobs[j]->run();
        double ms = ms_since(t0);
        jobs[j]->finish();
        if (r > 0) t[j].push_back(ms);
    };
    if (interleave) {
        for (int r = 0; r <= runs; ++r)
            for (std::size_t j = 0; j < jobs.size(); ++j) one(j, r);
    } else {
        for (std::size_t j = 0; j < jobs.size(); ++j)
            for (int r = 0; r <= runs; ++r) one(j, r);
    }
    std::vector<Times> out;
    for (auto& x : t) out.push_back({median(x), *std::min_element(x.begin(), x.end())});
    return out;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a.empty() ? "unknown" : a + " " + b + " " + c;
}

// Copy bandwidth of this machine: a parallel memcpy of 256 MiB, median of 7, as read + write traffic.
double copy_bandwidth_gbs(double& copied_gbs) {
    const std::size_t bytes = std::size_t(256) << 20;
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    const std::size_t chunk = std::size_t(4) << 20;
    std::vector<double> t;
    for (int r = 0; r < 8; ++r) {
        auto t0 = Clock::now();
        tbb::parallel_for(std::size_t(0), bytes / chunk, [&](std::size_t c) {
            std::memcpy(dst.data() + c * chunk, src.data() + c * chunk, chunk);
        });
        double ms = ms_since(t0);
        if (r > 0) t.push_back(ms);
    }
    const double s = median(t) * 1e-3;
    copied_gbs = bytes / s * 1e-9;
    return 2.0 * bytes / s * 1e-9;
}

// ---------------------------------------------------------------- graphs

// The graph file in a dataset folder: the first file that is not ground truth, labels or a README
// (Matrix Market preferred).
std::optional<fs::path> graph_file(const fs::path& dir) {
    if (!fs::is_directory(dir)) return std::nullopt;
    std::vector<fs::path> cand;
    for (auto& e : fs::directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        const std::string f = e.path().filename().string();
        auto has = [&](const char* s) { return f.find(s) != std::string::npos; };
        if (has("pagerank") || has("truth") || has("target") || has("README") || has("mcl_") || has("label") ||
            has("ref_") || has("published") || has(".md") || has("_node") || has(".json"))
            continue;
        cand.push_back(e.path());
    }
    std::sort(cand.begin(), cand.end(), [](const fs::path& a, const fs::path& b) {
        const bool ma = a.filename().string().find(".mtx") != std::string::npos;
        const bool mb = b.filename().string().find(".mtx") != std::string::npos;
        return ma != mb ? ma : a < b;
    });
    if (cand.empty()) return std::nullopt;
    return cand.front();
}

std::optional<std::uint64_t> truth_triangles(const fs::path& dir) {
    std::ifstream in(dir / "truth.txt");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("triangles:", 0) == 0) return std::stoull(line.substr(10));
    return std::nullopt;
}

struct Graph {
    std::string name;
    Matrix<double> a;  // undirected simple graph, values 1.0
    std::optional<std::uint64_t> triangles;
    double load_s = 0;
};

std::optional<Graph> load_graph(const Options& o, const std::string& name, std::string& why) {
    Graph g;
    g.name = name;
    auto t0 = Clock::now();
    if (name.rfind("rmat", 0) == 0) {
        bench::RmatParams p;
        p.scale = std::stoi(name.substr(4));
        p.edge_factor = o.edge_factor;
        p.seed = o.seed;
        g.a = bench::rmat(p);
    } else {
        const fs::path dir = fs::path(o.data) / name;
        auto file = graph_file(dir);
        if (!file) {
            why = "no graph file in " + dir.string();
            return std::nullopt;
        }
        const std::string f = file->filename().string();
        if (f.find(".tntp") != std::string::npos) {
            why = "TNTP format is not read by io/ (" + f + ")";
            return std::nullopt;
        }
        Matrix<double> raw = f.find(".mtx") != std::string::npos ? io::read_matrix_market<double>(file->string())
                                                                  : io::read_edge_list<double>(file->string()).matrix;
        if (raw.nrows() != raw.ncols()) {
            why = "not square (" + std::to_string(raw.nrows()) + "x" + std::to_string(raw.ncols()) + ")";
            return std::nullopt;
        }
        std::vector<std::uint64_t> keys(raw.nvals());
        auto off = raw.row_offsets();
        auto col = raw.col_indices();
        for (Index i = 0; i < raw.nrows(); ++i)
            for (Offset p = off[i]; p < off[i + 1]; ++p) keys[p] = (std::uint64_t(i) << 32) | col[p];
        g.a = bench::simple_undirected_from_keys(raw.nrows(), keys);
        g.triangles = truth_triangles(dir);
    }
    g.load_s = ms_since(t0) * 1e-3;
    return g;
}

template <class T>
Matrix<T> fresh_copy(const Matrix<T>& m) {
    return Matrix<T>::import_csr(m.nrows(), m.ncols(), Array<Offset>(m.row_offsets()),
                                 Array<ColIndex>(m.col_indices()), Array<T>(m.values()), false);
}

// ---------------------------------------------------------------- SuiteSparse:GraphBLAS side

#ifdef HYBLA_HAVE_GRAPHBLAS
void grb_check(GrB_Info info, const char* what) {
    if (info != GrB_SUCCESS) {
        std::fprintf(stderr, "bench: GraphBLAS error %d in %s\n", int(info), what);
        std::exit(3);
    }
}
#define GRBCHK(call) grb_check((call), #call)

// A GrB_Matrix (by row, sparse) holding a copy of m's CSR arrays; GraphBLAS takes 64-bit indices.
GrB_Matrix to_grb(const Matrix<double>& m) {
    const Index n = m.nrows(), nnz = m.nvals();
    auto* ap = static_cast<GrB_Index*>(std::malloc((n + 1) * sizeof(GrB_Index)));
    auto* aj = static_cast<GrB_Index*>(std::malloc(std::max<Index>(nnz, 1) * sizeof(GrB_Index)));
    auto* ax = static_cast<double*>(std::malloc(std::max<Index>(nnz, 1) * sizeof(double)));
    std::copy(m.row_offsets().begin(), m.row_offsets().end(), ap);
    std::copy(m.col_indices().begin(), m.col_indices().end(), aj);
    std::copy(m.values().begin(), m.values().end(), ax);
    GrB_Matrix a = nullptr;
    GRBCHK(GxB_Matrix_import_CSR(&a, GrB_FP64, n, m.ncols(), &ap, &aj, reinterpret_cast<void**>(&ax),
                              (n + 1) * sizeof(GrB_Index), std::max<Index>(nnz, 1) * sizeof(GrB_Index),
                              std::max<Index>(nnz, 1) * sizeof(double), false, false, nullptr));
    GRBCHK(GrB_Matrix_wait(a, GrB_MATERIALIZE));
    return a;
}
GrB_Matrix dense_to_grb(const DenseMatrix<double>& b) {
    const Index sz = b.nrows() * b.ncols();
    auto* bx = static_cast<double*>(std::malloc(std::max<Index>(sz, 1) * sizeof(double)));
    std::copy(b.data().begin(), b.data().end(), bx);
    GrB_Matrix m = nullptr;
    GRBCHK(GxB_Matrix_import_FullR(&m, GrB_FP64, b.nrows(), b.ncols(), reinterpret_cast<void**>(&bx),
                                std::max<Index>(sz, 1) * sizeof(double), false, nullptr));
    return m;
}
GrB_Vector vector_to_grb(const std::vector<double>& x) {
    auto* vx = static_cast<double*>(std::malloc(std::max<std::size_t>(x.size(), 1) * sizeof(double)));
    std::copy(x.begin(), x.end(), vx);
    GrB_Vector v = nullptr;
    GRBCHK(GxB_Vector_import_Full(&v, GrB_FP64, x.size(), reinterpret_cast<void**>(&vx),
                               std::max<std::size_t>(x.size(), 1) * sizeof(double), false, nullptr));
    return v;
}
#endif

// ---------------------------------------------------------------- results and table

struct Check {
    Index nvals = 0;
    double sum = 0;
};
bool agree(const Check& x, const Check& y, bool exact) {
    if (x.nvals != y.nvals) return false;
    if (exact) return x.sum == y.sum;
    return std::fabs(x.sum - y.sum) <= 1e-9 * std::max({1.0, std::fabs(x.sum), std::fabs(y.sum)});
}

struct Row {
    std::string graph, op;
    Index n = 0, nnz = 0;
    double hybla_ms = NAN, ss_ms = NAN;        // medians
    double hybla_min = NAN, ss_min = NAN;      // fastest runs
    std::string note;
    bool mismatch = false;
};
std::vector<Row> table;
bool any_mismatch = false;

void print_row(const Row& r, std::FILE* f) {
    char h[32], s[32], q[32], qm[32];
    if (std::isnan(r.hybla_ms)) std::snprintf(h, sizeof h, "-");
    else std::snprintf(h, sizeof h, "%.3f", r.hybla_ms);
    if (std::isnan(r.ss_ms)) std::snprintf(s, sizeof s, "-");
    else std::snprintf(s, sizeof s, "%.3f", r.ss_ms);
    if (std::isnan(r.hybla_ms) || std::isnan(r.ss_ms)) std::snprintf(q, sizeof q, "-");
    else std::snprintf(q, sizeof q, "%.2f", r.hybla_ms / r.ss_ms);
    if (std::isnan(r.hybla_min) || std::isnan(r.ss_min)) std::snprintf(qm, sizeof qm, "-");
    else std::snprintf(qm, sizeof qm, "%.2f", r.hybla_min / r.ss_min);
    std::fprintf(f, "%-17s %9llu %10llu  %-7s %11s %11s %7s %7s  %s\n", r.graph.c_str(), (unsigned long long)r.n,
                 (unsigned long long)r.nnz, r.op.c_str(), h, s, q, qm, r.note.c_str());
    std::fflush(f);
}
void print_header(std::FILE* f) {
    std::fprintf(f, "%-17s %9s %10s  %-7s %11s %11s %7s %7s  %s\n", "graph", "n", "nnz", "op", "hybla_ms", "SS_ms",
                 "ratio", "min_rat", "notes");
    std::fflush(f);
}

void mismatch(Row& r, const std::string& what) {
    r.note = (r.mismatch ? r.note + "; " : std::string("*** MISMATCH *** ")) + what;
    r.mismatch = true;
    any_mismatch = true;
    r.hybla_ms = r.ss_ms = r.hybla_min = r.ss_min = NAN;
    std::fprintf(stderr, "\n*** MISMATCH *** %s %s: %s\n\n", r.graph.c_str(), r.op.c_str(), what.c_str());
}

std::string describe(const Check& c) {
    char b[96];
    std::snprintf(b, sizeof b, "nvals %llu sum %.17g", (unsigned long long)c.nvals, c.sum);
    return b;
}

// ---------------------------------------------------------------- the operations

double copy_bw = 0;  // GB/s of read + write traffic

void bench_graph(const Options& o, const Graph& g) {
    const Matrix<double>& a = g.a;
    const Index n = a.nrows(), nnz = a.nvals();
#ifdef HYBLA_HAVE_GRAPHBLAS
    GrB_Matrix ga = to_grb(a);
#endif
    for (const std::string& op : o.ops) {
        Row r;
        r.graph = g.name;
        r.op = op;
        r.n = n;
        r.nnz = nnz;
        Check hc, sc;
        bool exact = false;
        double flops = 0;  // spgemm: Σ_k deg(k)^2; tc: the multiply-adds of L·L
        Job hj, sj;  // hybla, SuiteSparse
        std::function<void()> collect;  // fills hc and sc from the last runs and frees the results
        // Results, kept until collect() has read them.
        std::optional<Matrix<double>> hm;
        std::optional<Matrix<std::int64_t>> hm64;
        std::optional<Vector<double>> hv;
        std::optional<DenseMatrix<double>> hd;
        Matrix<double> l, u;
        std::optional<Matrix<double>> lf, uf;
        std::vector<double> xv;
        std::optional<Vector<double>> x;
        DenseMatrix<double> bm;
#ifdef HYBLA_HAVE_GRAPHBLAS
        GrB_Matrix gc = nullptr, gl = nullptr, gu = nullptr, gb = nullptr;
        GrB_Vector gx = nullptr, gy = nullptr;
        auto free_all = [&] {
            GrB_Matrix_free(&gc);
            GrB_Matrix_free(&gl);
            GrB_Matrix_free(&gu);
            GrB_Matrix_free(&gb);
            GrB_Vector_free(&gx);
            GrB_Vector_free(&gy);
        };
        auto matrix_check = [&](bool int64) {
            GrB_Index nv;
            GRBCHK(GrB_Matrix_nvals(&nv, gc));
            sc.nvals = nv;
            if (int64) {
                std::int64_t s = 0;
                GRBCHK(GrB_Matrix_reduce_INT64(&s, nullptr, GrB_PLUS_MONOID_INT64, gc, nullptr));
                sc.sum = double(s);
            } else {
                GRBCHK(GrB_Matrix_reduce_FP64(&sc.sum, nullptr, GrB_PLUS_MONOID_FP64, gc, nullptr));
            }
        };
        auto finish_matrix = [&] {
            GRBCHK(GrB_Matrix_wait(gc, GrB_MATERIALIZE));
            GrB_Index nv;
            GRBCHK(GrB_Matrix_nvals(&nv, gc));
        };
#endif
        auto nothing = [] {};

        if (op == "spgemm") {
            // Σ_k deg(k)^2 multiply-adds (A is symmetric, so |A(:,k)| = |A(k,:)|).
            for (Index k = 0; k < n; ++k) flops += double(a.row_degree(k)) * double(a.row_degree(k));
            if (flops > o.max_spgemm_flops) {
                char b[128];
                std::snprintf(b, sizeof b, "skipped: %.3g flops > --max-spgemm-flops %.3g", flops, o.max_spgemm_flops);
                r.note = b;
                table.push_back(r);
                print_row(r, stdout);
                continue;
            }
            hj = {[&] { hm.reset(); },
                  [&] {
                      hm.emplace(n, n);
                      mxm(*hm, no_mask, no_accum, plus_times{}, a, a);
                  },
                  nothing};
            exact = true;  // every value is a small integer count
            char b[96];
            std::snprintf(b, sizeof b, "flops %.3g", flops);
            r.note = b;
#ifdef HYBLA_HAVE_GRAPHBLAS
            sj = {[&] { GrB_Matrix_free(&gc); },
                  [&] {
                      GRBCHK(GrB_Matrix_new(&gc, GrB_FP64, n, n));
                      GRBCHK(GrB_mxm(gc, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP64, ga, ga, nullptr));
                      finish_matrix();
                  },
                  nothing};
#endif
            collect = [&] {
                hc.nvals = hm->nvals();
                for (double v : hm->values()) hc.sum += v;
                hm.reset();
                char b2[64];
                std::snprintf(b2, sizeof b2, ", nnz(C) %llu", (unsigned long long)hc.nvals);
                r.note += b2;
#ifdef HYBLA_HAVE_GRAPHBLAS
                matrix_check(false);
#endif
            };
        } else if (op == "tc") {
            l = Matrix<double>(n, n);
            u = Matrix<double>(n, n);
            select(l, no_mask, no_accum, tril{-1}, a);
            select(u, no_mask, no_accum, triu{1}, a);
            // The size of the masked product: the multiply-adds of L·L (= L·Uᵀ) without the mask.
            for (Index i = 0; i < n; ++i)
                for (Offset p = l.row_begin(i); p < l.row_end(i); ++p) flops += double(l.row_degree(l.col_indices()[p]));
            if (flops > o.max_tc_flops) {
                char b[128];
                std::snprintf(b, sizeof b, "skipped: %.3g flops of L*L > --max-tc-flops %.3g", flops, o.max_tc_flops);
                r.note = b;
                table.push_back(r);
                print_row(r, stdout);
                continue;
            }
            hj = {[&] {
                      hm64.reset();
                      lf.emplace(fresh_copy(l));
                      uf.emplace(fresh_copy(u));
                  },
                  [&] {
                      hm64.emplace(n, n);
                      mxm(*hm64, *lf, no_accum, plus_pair{}, *lf, *uf,
                          Descriptor{.transpose_b = true, .mask_structure = true});
                  },
                  nothing};
            exact = true;
#ifdef HYBLA_HAVE_GRAPHBLAS
            sj = {[&] {
                      GrB_Matrix_free(&gc);
                      GrB_Matrix_free(&gl);
                      GrB_Matrix_free(&gu);
                      gl = to_grb(l);
                      gu = to_grb(u);
                  },
                  [&] {
                      GRBCHK(GrB_Matrix_new(&gc, GrB_INT64, n, n));
                      GRBCHK(GrB_mxm(gc, gl, nullptr, GxB_PLUS_PAIR_INT64, gl, gu, GrB_DESC_ST1));
                      finish_matrix();
                  },
                  nothing};
#endif
            collect = [&] {
                hc.nvals = hm64->nvals();
                std::int64_t tri = 0;
                for (auto v : hm64->values()) tri += v;
                hc.sum = double(tri);
                hm64.reset();
                char b2[64];
                std::snprintf(b2, sizeof b2, "L*L flops %.3g, ", flops);
                r.note = b2 + std::string("triangles ") + std::to_string(tri);
                if (g.triangles) r.note += std::uint64_t(tri) == *g.triangles ? " (= truth.txt)" : "";
#ifdef HYBLA_HAVE_GRAPHBLAS
                matrix_check(true);
#endif
            };
        } else if (op == "mxv") {
            xv.resize(n);
            for (Index i = 0; i < n; ++i) xv[i] = 1.0 / double(1 + i % 17);
            x.emplace(Vector<double>::import_dense(n, Array<double>(std::span<const double>(xv))));
            hj = {[&] { hv.reset(); },
                  [&] {
                      hv.emplace(n);
                      mxv(*hv, no_mask, no_accum, plus_times{}, a, *x);
                  },
                  nothing};
#ifdef HYBLA_HAVE_GRAPHBLAS
            gx = vector_to_grb(xv);
            sj = {[&] { GrB_Vector_free(&gy); },
                  [&] {
                      GRBCHK(GrB_Vector_new(&gy, GrB_FP64, n));
                      GRBCHK(GrB_mxv(gy, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP64, ga, gx, nullptr));
                      GRBCHK(GrB_Vector_wait(gy, GrB_MATERIALIZE));
                      GrB_Index nv;
                      GRBCHK(GrB_Vector_nvals(&nv, gy));
                  },
                  nothing};
#endif
            collect = [&] {
                hc.nvals = hv->nvals();
                std::vector<Index> idx;
                std::vector<double> vals;
                hv->extract_tuples(idx, vals);
                for (double v : vals) hc.sum += v;
                hv.reset();
#ifdef HYBLA_HAVE_GRAPHBLAS
                GrB_Index nv;
                GRBCHK(GrB_Vector_nvals(&nv, gy));
                sc.nvals = nv;
                GRBCHK(GrB_Vector_reduce_FP64(&sc.sum, nullptr, GrB_PLUS_MONOID_FP64, gy, nullptr));
#endif
            };
        } else if (op == "spmm") {
            const Index k = Index(o.spmm_cols);
            bm = DenseMatrix<double>(n, k);
            std::mt19937_64 gen(o.seed);
            std::uniform_real_distribution<double> unif(0.0, 1.0);
            for (double& v : bm.data()) v = unif(gen);
            // The caller's result buffer is allocated outside the timed region (the API needs it sized).
            hj = {[&] { hd.emplace(n, k); }, [&] { mxm(*hd, no_mask, no_accum, plus_times{}, a, bm); }, nothing};
#ifdef HYBLA_HAVE_GRAPHBLAS
            gb = dense_to_grb(bm);
            sj = {[&] { GrB_Matrix_free(&gc); },
                  [&] {
                      GRBCHK(GrB_Matrix_new(&gc, GrB_FP64, n, k));
                      GRBCHK(GrB_mxm(gc, nullptr, nullptr, GrB_PLUS_TIMES_SEMIRING_FP64, ga, gb, nullptr));
                      finish_matrix();
                  },
                  nothing};
#endif
            collect = [&] {
                // GraphBLAS semantics: rows of A without entries give no entries in C.
                Index nonempty = 0;
                for (Index i = 0; i < n; ++i) nonempty += a.row_degree(i) > 0;
                hc.nvals = nonempty * k;
                for (double v : hd->data()) hc.sum += v;
                hd.reset();
#ifdef HYBLA_HAVE_GRAPHBLAS
                matrix_check(false);
#endif
            };
        }

#ifdef HYBLA_HAVE_GRAPHBLAS
        std::vector<Times> t = measure(o.runs, {&hj, &sj});
        r.hybla_ms = t[0].median;
        r.hybla_min = t[0].min;
        r.ss_ms = t[1].median;
        r.ss_min = t[1].min;
#else
        Times t = measure(o.runs, {&hj})[0];
        r.hybla_ms = t.median;
        r.hybla_min = t.min;
#endif
        collect();
#ifdef HYBLA_HAVE_GRAPHBLAS
        free_all();
        if (!agree(hc, sc, exact)) mismatch(r, "hybla " + describe(hc) + " vs SuiteSparse " + describe(sc));
#endif
        if (op == "tc" && g.triangles && std::uint64_t(hc.sum) != *g.triangles)
            mismatch(r, "hybla counts " + std::to_string(std::uint64_t(hc.sum)) + " triangles, truth.txt says " +
                            std::to_string(*g.triangles));
        if (op == "mxv" && !r.mismatch) {
            // The physical floor: read the CSR (indices and values, offsets), read x, write y.
            const double bytes = double(nnz) * (4 + 8) + double(n + 1) * 8 + 2.0 * double(n) * 8;
            char b[200];
            std::snprintf(b, sizeof b, "traffic %.1f MB; GB/s: hybla %.1f (%.0f%% of copy)", bytes * 1e-6,
                          bytes / (r.hybla_ms * 1e-3) * 1e-9, 100.0 * bytes / (r.hybla_ms * 1e-3) * 1e-9 / copy_bw);
            r.note = b;
            if (!std::isnan(r.ss_ms)) {
                std::snprintf(b, sizeof b, ", SS %.1f (%.0f%%)", bytes / (r.ss_ms * 1e-3) * 1e-9,
                              100.0 * bytes / (r.ss_ms * 1e-3) * 1e-9 / copy_bw);
                r.note += b;
            }
        }
        table.push_back(r);
        print_row(r, stdout);
    }
#ifdef HYBLA_HAVE_GRAPHBLAS
    GrB_Matrix_free(&ga);
#endif
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    // This benchmark is of the CPU backend (gpu_bench times the GPU): objects live on the CPU whatever
    // HYBLA_BACKEND says.
    hybla::set_default_context(hybla::Context::cpu());
    const int hw = int(std::thread::hardware_concurrency());
    const int threads = o.threads > 0 ? o.threads : std::max(1, hw);
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, std::size_t(threads));
#ifdef HYBLA_HAVE_GRAPHBLAS
    GRBCHK(GrB_init(GrB_NONBLOCKING));
    GRBCHK(GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, threads));
    if (o.burble) GRBCHK(GxB_Global_Option_set(GxB_BURBLE, true));
#endif

    std::printf("hybla bench: CPU backend (oneTBB %d.%d)", TBB_VERSION_MAJOR, TBB_VERSION_MINOR);
#ifdef HYBLA_HAVE_GRAPHBLAS
    std::printf(" vs SuiteSparse:GraphBLAS %d.%d.%d", GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR,
                GxB_IMPLEMENTATION_SUB);
#else
    std::printf(" (built without SuiteSparse:GraphBLAS: no comparison)");
#endif
    std::printf("\n%s; threads %d (hardware %d), runs %d (median, after 1 warm-up), data %s\n", cpu_model().c_str(), threads, hw, o.runs,
                o.data.c_str());
    double copied = 0;
    copy_bw = copy_bandwidth_gbs(copied);
    std::printf("memcpy 256 MiB, %d threads: %.2f GB/s copied = %.2f GB/s read+write traffic (mxv %% is of the latter)\n",
                threads, copied, copy_bw);
    std::printf("load average at start: %s\n", load_average().c_str());
    std::printf("ms = median of the timed runs; ratio = hybla / SuiteSparse of the medians (> 1: hybla slower);\n"
                "min_rat = the same of the fastest runs. %s\n\n",
                interleave ? "hybla and SuiteSparse runs alternate (--interleave)."
                           : "Each library does its warm-up and runs back to back, hybla first.");
    print_header(stdout);

    for (const std::string& name : o.graphs) {
        std::string why;
        std::optional<Graph> g;
        try {
            g = load_graph(o, name, why);
        } catch (const std::exception& e) {
            why = std::string("load failed: ") + e.what();
        }
        if (!g) {
            Row r;
            r.graph = name;
            r.op = "-";
            r.note = "skipped: " + why;
            table.push_back(r);
            print_row(r, stdout);
            continue;
        }
        bench_graph(o, *g);
    }

    std::printf("\nsummary (same rows)\n");
    print_header(stdout);
    for (const Row& r : table) print_row(r, stdout);
    std::printf("load average at end: %s\n", load_average().c_str());
    if (any_mismatch) std::printf("\n*** MISMATCH: at least one result disagrees (see above) ***\n");
#ifdef HYBLA_HAVE_GRAPHBLAS
    GrB_finalize();
#endif
    return any_mismatch ? 1 : 0;
}
