// What the GPU benchmarks share: error checks that end the program (exit code 2), medians and event timing,
// and the graphs (files of the data folder, or R-MAT "rmatS").
#pragma once
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/rmat.hpp"
#include "engine/hybla.hpp"
#include "io/read_graph.hpp"

namespace hybla::bench {

// The program's name in its messages; each benchmark sets it first.
inline const char* program = "gpu bench";

inline void cuda_check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorString(e));
        std::exit(2);
    }
}
inline void sparse_check(cusparseStatus_t s, const char* what) {
    if (s != CUSPARSE_STATUS_SUCCESS) {
        std::fprintf(stderr, "%s: %s: %s\n", program, what, cusparseGetErrorString(s));
        std::exit(2);
    }
}

// Non-exiting checks, for a competitor whose failure is a result to report rather than the end of the run
// (cuSPARSE out of memory, or past its 32-bit indices): they throw CompetitorFailure naming the call and the
// reason, after clearing CUDA's last-error state so that the next checked call does not inherit the error.
struct CompetitorFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
inline void sparse_try(cusparseStatus_t s, const char* what) {
    if (s != CUSPARSE_STATUS_SUCCESS) {
        (void)cudaGetLastError();
        throw CompetitorFailure(std::string(what) + ": " + cusparseGetErrorString(s));
    }
}
inline void cuda_try(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw CompetitorFailure(std::string(what) + ": " + cudaGetErrorString(e));
    }
}

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// Median time of f over runs repetitions (each between two events on the default stream), after warm-up.
template <class F>
double time_ms(int runs, F&& f) {
    for (int w = 0; w < 3; ++w) f();
    cuda_check(cudaDeviceSynchronize(), "warm-up");
    std::vector<cudaEvent_t> ev(2 * runs);
    for (auto& e : ev) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    for (int r = 0; r < runs; ++r) {
        cuda_check(cudaEventRecord(ev[2 * r]), "cudaEventRecord");
        f();
        cuda_check(cudaEventRecord(ev[2 * r + 1]), "cudaEventRecord");
    }
    cuda_check(cudaDeviceSynchronize(), "timed runs");
    std::vector<double> ms(runs);
    for (int r = 0; r < runs; ++r) {
        float t = 0;
        cuda_check(cudaEventElapsedTime(&t, ev[2 * r], ev[2 * r + 1]), "cudaEventElapsedTime");
        ms[r] = t;
    }
    for (auto& e : ev) cudaEventDestroy(e);
    return median(ms);
}

// Data graphs used by default: the larger files of shared/data.
inline const std::vector<std::pair<std::string, std::string>> data_files = {
    {"soc-Slashdot0902", "soc-Slashdot0902/soc-Slashdot0902.txt.gz"},
    {"git_web_ml", "git_web_ml/git_edges.csv.gz"},
    {"deezer_HU", "deezer_HU/HU_edges.csv.gz"},
    {"musae_facebook", "musae_facebook/musae_facebook_edges.csv.gz"},
    {"delaunay_n16", "delaunay_n16/delaunay_n16.mtx.gz"},
    {"luxembourg_osm", "luxembourg_osm/luxembourg_osm.mtx.gz"},
    {"bcsstk16", "bcsstk16/bcsstk16.mtx.gz"},
    {"ca-CondMat", "ca-CondMat/ca-CondMat.csv.gz"},
};

inline std::string default_data_dir() {
    namespace fs = std::filesystem;
    std::vector<std::string> tries;
    if (const char* e = std::getenv("HYBLA_DATA")) tries.push_back(e);
    if (const char* e = std::getenv("HYBLA_SOURCE_DIR")) tries.push_back(std::string(e) + "/../shared/data");
#ifdef HYBLA_SOURCE_DIR
    tries.push_back(std::string(HYBLA_SOURCE_DIR) + "/../shared/data");
#endif
    tries.push_back("../shared/data");
    tries.push_back("shared/data");
    tries.push_back("data");
    for (const auto& t : tries)
        if (fs::is_directory(t)) return t;
    return "../shared/data";
}

// An R-MAT graph with values of type T, on the CPU.
template <class T>
hybla::Matrix<T> rmat_as(const RmatParams& p) {
    hybla::Matrix<double> r = rmat(p);
    if constexpr (std::is_same_v<T, double>) return r;
    else {
        hybla::Matrix<T> c(r.nrows(), r.ncols(), hybla::Context::cpu());
        hybla::apply(c, hybla::no_mask, hybla::no_accum, hybla::identity_op{}, r);
        return c;
    }
}

// The graph called name, on the CPU: "rmatS" is R-MAT scale S (edge factor 16, undirected simple, values 1);
// otherwise a graph of the data folder (a name of data_files, a file, or a folder holding one graph file).
template <class T>
hybla::Matrix<T> load_graph(const std::string& name, const std::string& data) {
    if (name.rfind("rmat", 0) == 0) {
        RmatParams p;
        p.scale = std::atoi(name.c_str() + 4);
        p.edge_factor = 16;
        if (p.scale < 1 || p.scale > 30) throw hybla::InvalidValue("bad R-MAT scale in " + name);
        return rmat_as<T>(p);
    }
    std::string file;
    for (auto& [n, f] : data_files)
        if (n == name) file = f;
    std::string path = data + "/" + (file.empty() ? name : file);
    if (file.empty() && std::filesystem::is_directory(path)) {
        for (auto& e : std::filesystem::directory_iterator(path)) {
            const std::string fn = e.path().filename().string();
            if (fn.find("truth") == std::string::npos && fn.find("pagerank") == std::string::npos &&
                fn.find("mcl") == std::string::npos && fn.find("README") == std::string::npos) {
                path = e.path().string();
                break;
            }
        }
    }
    return hybla::io::read_graph<T>(path).matrix;
}

// The R-MAT graph a name asks for: "rmatS" (scale S, edge factor 16, as load_graph reads it) or "rmatS:EF"
// (edge factor EF); false when the name is not of that form.
inline bool rmat_params_of(const std::string& name, RmatParams& p) {
    if (name.rfind("rmat", 0) != 0) return false;
    char* end = nullptr;
    const long scale = std::strtol(name.c_str() + 4, &end, 10);
    if (end == name.c_str() + 4) return false;
    long edge_factor = 16;
    if (*end == ':') {
        const char* ef = end + 1;
        edge_factor = std::strtol(ef, &end, 10);
        if (end == ef) return false;
    }
    if (*end != '\0') return false;
    if (scale < 1 || scale > 30) throw hybla::InvalidValue("bad R-MAT scale in " + name);
    if (edge_factor < 1 || edge_factor > 1024) throw hybla::InvalidValue("bad R-MAT edge factor in " + name);
    p = RmatParams{};
    p.scale = int(scale);
    p.edge_factor = int(edge_factor);
    return true;
}

// A graph named on a command line, on the CPU: "rmatS" or "rmatS:EF" (see rmat_params_of), a file that exists
// (read with io::read_graph), or else what load_graph finds under that name in the data folder.
template <class T>
hybla::Matrix<T> resolve_graph(const std::string& name, const std::string& data) {
    RmatParams p;
    if (rmat_params_of(name, p)) {
        return rmat_as<T>(p);
    }
    if (std::filesystem::is_regular_file(name)) return hybla::io::read_graph<T>(name).matrix;
    return load_graph<T>(name, data);
}

// "a,b,c" as a list.
inline std::vector<std::string> split_list(const std::string& list) {
    std::vector<std::string> out;
    std::size_t p = 0;
    while (p <= list.size()) {
        std::size_t q = list.find(',', p);
        if (q == std::string::npos) q = list.size();
        if (q > p) out.push_back(list.substr(p, q - p));
        p = q + 1;
    }
    return out;
}

// The labels of mcl's output for a graph (a cluster a line, vertices as the graph names them): the line number of
// each vertex's cluster; a vertex in no cluster gets a label of its own, after them.
inline std::vector<std::int64_t> read_cluster_labels(const std::string& path, const io::VertexNames& names,
                                                     Index n) {
    std::unordered_map<std::string, Index> id;
    for (Index v = 0; v < n; ++v) id.emplace(names.name(v), v);
    std::vector<std::int64_t> label(n, -1);
    std::ifstream f(path);
    if (!f) {
        std::fprintf(stderr, "%s: cannot open %s\n", program, path.c_str());
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
                std::fprintf(stderr, "%s: %s: '%s' is not a vertex of the graph\n", program, path.c_str(),
                             w.c_str());
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

}  // namespace hybla::bench
