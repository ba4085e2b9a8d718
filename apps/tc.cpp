// tc GRAPH: counts the triangles of a graph (Matrix Market, edge list, --abc labels or hybla binary; .gz ok).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include <tbb/global_control.h>

#include "algorithms/triangle_count.hpp"
#include "io/read_graph.hpp"

namespace {
const char* usage =
    "usage: tc GRAPH [--threads n] [--quiet]\n"
    "Counts the triangles of the undirected simple graph of GRAPH (direction, duplicate edges, weights and\n"
    "self-loops ignored) and prints the total, alone on the last line of stdout.\n"
    "GRAPH: Matrix Market (.mtx), edge list (.txt, .csv, ...), mcl labels (.abc) or hybla binary; .gz accepted.\n";
}

int main(int argc, char** argv) {
    std::string path;
    int threads = 0;
    bool quiet = false;
    try {
        for (int k = 1; k < argc; ++k) {
            std::string a = argv[k];
            if (a == "-h" || a == "--help") {
                std::fputs(usage, stdout);
                return 0;
            } else if (a == "--threads" && k + 1 < argc) {
                threads = std::stoi(argv[++k]);
                if (threads < 1) throw std::invalid_argument("--threads needs a positive number");
            } else if (a == "--quiet") {
                quiet = true;
            } else if (!a.empty() && a[0] == '-') {
                throw std::invalid_argument("unknown option " + a);
            } else if (path.empty()) {
                path = a;
            } else {
                throw std::invalid_argument("more than one GRAPH given: " + path + " and " + a);
            }
        }
        if (path.empty()) throw std::invalid_argument("no GRAPH given (tc -h for usage)");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tc: %s\n", e.what());
        return 2;
    }
    std::unique_ptr<tbb::global_control> limit;
    if (threads) limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
    try {
        auto t0 = std::chrono::steady_clock::now();
        auto g = hybla::io::read_graph<double>(path);
        auto t1 = std::chrono::steady_clock::now();
        std::uint64_t triangles = hybla::algorithms::triangle_count(g.matrix);
        auto t2 = std::chrono::steady_clock::now();
        if (!quiet)
            std::printf("graph: %s (%llu vertices, %llu stored entries)\nread: %.3f s, count: %.3f s\n", path.c_str(),
                        (unsigned long long)g.matrix.nrows(), (unsigned long long)g.matrix.nvals(),
                        std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
        std::printf("%llu\n", (unsigned long long)triangles);
    } catch (const hybla::Error& e) {
        std::fprintf(stderr, "tc: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tc: %s\n", e.what());
        return 2;
    }
    return 0;
}
