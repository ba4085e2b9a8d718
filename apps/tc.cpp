// tc GRAPH: counts the triangles of a graph; the total is printed alone on the last line of stdout.
#include <cinttypes>
#include <iostream>  // before apps/common.hpp, which uses std::cout without including it
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/triangle_count.hpp"
#include "apps/common.hpp"
#include "io/read_graph.hpp"

using namespace hybla;

namespace {

const char* usage =
    "usage: tc GRAPH [--per-vertex FILE] [--degree-order] [options]\n"
    "Counts the triangles of the undirected simple graph of GRAPH (direction, duplicate edges, weights and\n"
    "self-loops ignored) and prints the total, alone on the last line of stdout.\n"
    "GRAPH: Matrix Market (.mtx), edge list (.txt, .csv, ...), mcl labels (.abc: the undirected graph mcl\n"
    "sees) or hybla binary; .gz accepted. A graph without edges is bad input.\n"
    "  --per-vertex FILE         also write 'vertex<TAB>triangles' lines, one per vertex in vertex order, with\n"
    "                            the vertices named as GRAPH names them (- for stdout, before the total)\n"
    "  --degree-order            renumber the vertices by increasing degree first (same counts; faster on\n"
    "                            power-law graphs)\n";

struct Options {
    std::string graph;
    std::string per_vertex;  // empty: not asked for
    bool degree_order = false;
};

struct Counts {
    std::uint64_t total = 0;
    std::vector<std::uint64_t> per_vertex;  // empty unless asked for
};

Counts count(const Matrix<double>& a, const Options& o) {
    const algorithms::TriangleOptions t{.degree_order = o.degree_order};
    Counts c;
    if (o.per_vertex.empty()) {
        c.total = algorithms::triangle_count(a, t);
        return c;
    }
    const Vector<std::uint64_t> v = algorithms::triangles_per_vertex(a, t);
    std::vector<Index> idx;
    v.extract_tuples(idx, c.per_vertex);  // every vertex has an entry
    std::uint64_t sum = 0;
    for (std::uint64_t x : c.per_vertex) sum += x;
    c.total = sum / 3;
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    auto parse = [&](app::Args& args, app::CommonOptions& common) {
        while (!args.done()) {
            if (args.help(usage)) {
                return false;
            } else if (args.common(common)) {
            } else if (args.is("--per-vertex")) {
                o.per_vertex = args.file("--per-vertex");
            } else if (args.is("--degree-order")) {
                o.degree_order = true;
            } else if (args.positional()) {
                if (!o.graph.empty()) throw app::UsageError("more than one GRAPH given: " + o.graph + " and " + args.peek());
                o.graph = args.next();
            } else {
                throw app::UsageError("unknown option " + args.peek() + " (tc -h for usage)");
            }
        }
        if (o.graph.empty()) throw app::UsageError("no GRAPH given (tc -h for usage)");
        return true;
    };
    auto body = [&](const app::CommonOptions& common) {
        app::BackendStart start(common);
        std::optional<ScopedContext> scope(std::in_place, Context::cpu());  // read on the CPU while the GPU starts
        const app::Log log(common);
        std::unique_ptr<app::Output> out;
        if (!o.per_vertex.empty()) out = std::make_unique<app::Output>(o.per_vertex);

        const io::Graph<double> g = app::read_input(o.graph);
        log.accept();
        const Context ctx = start.context();
        scope.emplace(ctx);
        const Matrix<double> a = g.matrix.to(ctx);
        log("graph: %s (%" PRIu64 " vertices, %" PRIu64 " stored entries), read in %.3f s\n", o.graph.c_str(),
            std::uint64_t(a.nrows()), std::uint64_t(a.nvals()), log.seconds());
        const double t0 = log.seconds();
        const Counts c = count(a, o);
        log("counted on %s%s in %.3f s\n", ctx.name().c_str(), o.degree_order ? " (degree order)" : "",
            log.seconds() - t0);

        if (common.validate) {
            const Counts want = count(a.to(Context::cpu()), o);
            if (want.total != c.total)
                throw app::ValidationError("the total is " + std::to_string(c.total) + " but the CPU backend counts " +
                                           std::to_string(want.total));
            for (std::size_t v = 0; v < c.per_vertex.size(); ++v)
                if (c.per_vertex[v] != want.per_vertex[v])
                    throw app::ValidationError("vertex " + g.names.name(Index(v)) + " is in " +
                                               std::to_string(c.per_vertex[v]) + " triangles but the CPU backend counts " +
                                               std::to_string(want.per_vertex[v]));
            log("validated against the CPU backend: identical\n");
        }
        if (out) {
            std::ostream& s = out->stream();
            for (std::size_t v = 0; v < c.per_vertex.size(); ++v)
                s << g.names.name(Index(v)) << '\t' << c.per_vertex[v] << '\n';
            out->commit();
        }
        std::printf("%" PRIu64 "\n", c.total);
        return 0;
    };
    return app::run("tc", argc, argv, parse, body);
}
