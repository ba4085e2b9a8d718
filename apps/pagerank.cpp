// pagerank GRAPH: PageRank, its LDBC Graphalytics variant, or personalized PageRank for many seeds at once
// (see algorithms/pagerank.hpp for the definitions).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>  // before apps/common.hpp, which uses std::cout without including it
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/pagerank.hpp"
#include "apps/common.hpp"
#include "io/read_graph.hpp"

using namespace hybla;

namespace {

const char* usage =
    "usage: pagerank GRAPH [--damping d] [--tol t] [--max-iter n] [--ldbc] [--iterations n] [--seeds FILE]\n"
    "                [--undirected] [-o FILE] [options]\n"
    "Ranks the vertices of GRAPH by PageRank and writes 'vertex value' per line, each vertex named as GRAPH names\n"
    "it (1..n for Matrix Market, the ids of an edge list, the labels of an .abc file).\n"
    "  r(v) = (1-d)/N + d * sum_{u->v} r(u)/outdeg(u) + d/N * (rank of the sinks), from r = 1/N: sinks (vertices\n"
    "  without out-edges) spread their rank over all vertices; the ranks sum to 1. Edge weights are ignored and a\n"
    "  self-loop counts as an out-edge.\n"
    "GRAPH: Matrix Market (.mtx; symmetric files are undirected), edge list (.txt, .csv, ...; directed unless\n"
    "--undirected), mcl labels (.abc: undirected unless --directed, the graph mcl sees) or hybla binary (as\n"
    "written); .gz accepted. A graph without edges is bad input.\n"
    "  --damping d               damping factor in [0, 1] (default 0.85)\n"
    "  --tol t                   stop once an iteration changes the ranks by less than t in L1 norm (default 1e-9)\n"
    "  --max-iter n              stop after n iterations if not converged, with a warning (default 1000)\n"
    "  --ldbc                    LDBC Graphalytics PageRank: exactly --iterations iterations, no convergence test\n"
    "  --iterations n            the number of iterations for --ldbc (default 10); implies --ldbc\n"
    "  --seeds FILE              personalized PageRank, one output column per seed: FILE holds one vertex name\n"
    "                            per line (blank lines and lines starting with # are skipped); each walk restarts\n"
    "                            at its seed, with probability 1-d and from the sinks; a header line '# vertex\n"
    "                            SEED...' names the columns. The stopping rule applies to every column\n"
    "  --undirected              the edge list stores each undirected edge once: add the reverse arcs\n"
    "  --directed                an .abc GRAPH's edges are arcs, one way as stored (by default each line is an\n"
    "                            undirected edge, as mcl reads it)\n"
    "  -o FILE                   where to write the ranks (default -: stdout)\n"
    "  With --validate, a value that differs from the CPU's by more than 1e-12 + 10*t (1e-12 with --ldbc) is a\n"
    "  mismatch.\n";

struct Options {
    std::string graph, output = "-", seeds;
    bool undirected = false, directed = false, tol_given = false, max_iter_given = false;
    algorithms::PageRankOptions pagerank;
};

// The seeds' vertex numbers, from their names in FILE.
std::vector<Index> read_seeds(const std::string& path, const std::string& graph, const io::VertexNames& names, Index n) {
    std::ifstream in(path);
    if (!in) throw app::UsageError("cannot open the seeds file " + path);
    std::unordered_map<std::string, Index> index;
    for (Index v = 0; v < n; ++v) index.emplace(names.name(v), v);
    std::vector<Index> seeds;
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        const auto b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#') continue;
        const std::string name = line.substr(b, line.find_last_not_of(" \t\r") + 1 - b);
        const auto it = index.find(name);
        if (it == index.end())
            throw app::UsageError(path + " line " + std::to_string(number) + ": no vertex named '" + name + "' in " +
                                  graph);
        seeds.push_back(it->second);
    }
    if (in.bad()) throw app::UsageError("cannot read the seeds file " + path);
    if (seeds.empty()) throw app::UsageError("the seeds file " + path + " names no vertex");
    return seeds;
}

// The shortest text that reads back as the same double.
using app::number;

// Host values, row-major N x columns.
std::vector<double> host_values(const Vector<double>& r) {
    std::vector<double> out(r.size(), 0.0);
    std::vector<Index> idx;
    std::vector<double> vals;
    r.extract_tuples(idx, vals);
    for (std::size_t k = 0; k < idx.size(); ++k) out[idx[k]] = vals[k];
    return out;
}
std::vector<double> host_values(const DenseMatrix<double>& r) {
    const DenseMatrix<double> h = r.to(Context::cpu());
    return std::vector<double>(h.data().begin(), h.data().end());
}

void compare(const std::vector<double>& got, const std::vector<double>& cpu, double tol) {
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
        const double diff = std::abs(got[k] - cpu[k]);
        if (!(diff <= worst)) {  // NaN counts as the worst
            worst = diff;
            at = k;
        }
    }
    if (!(worst <= tol))
        throw app::ValidationError("value " + std::to_string(at) + " differs from the CPU backend's by " +
                                   number(worst) + " (tolerance " + number(tol) + ")");
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    auto parse = [&](app::Args& args, app::CommonOptions& common) {
        std::vector<std::string> positional;
        while (!args.done()) {
            if (args.help(usage)) {
                return false;
            } else if (args.common(common)) {
            } else if (args.is("-o")) {
                o.output = args.file("-o");
            } else if (args.is("--damping")) {
                o.pagerank.damping = args.real("--damping");
                if (o.pagerank.damping < 0 || o.pagerank.damping > 1)
                    throw app::UsageError("--damping must be in [0, 1], got " + number(o.pagerank.damping));
            } else if (args.is("--tol")) {
                o.pagerank.tolerance = args.real("--tol");
                o.tol_given = true;
                if (o.pagerank.tolerance < 0)
                    throw app::UsageError("--tol must be >= 0, got " + number(o.pagerank.tolerance));
            } else if (args.is("--max-iter")) {
                o.pagerank.max_iterations = std::size_t(args.integer("--max-iter", 0, 1000000000));
                o.max_iter_given = true;
            } else if (args.is("--ldbc")) {
                o.pagerank.ldbc = true;
            } else if (args.is("--iterations")) {
                o.pagerank.iterations = std::size_t(args.integer("--iterations", 0, 1000000000));
                o.pagerank.ldbc = true;
            } else if (args.is("--seeds")) {
                o.seeds = args.file("--seeds");
            } else if (args.is("--undirected")) {
                o.undirected = true;
            } else if (args.is("--directed")) {
                o.directed = true;
            } else if (args.positional()) {
                positional.push_back(args.next());
            } else {
                throw app::UsageError("unknown option " + args.peek() + " (pagerank -h for usage)");
            }
        }
        if (positional.empty()) throw app::UsageError("no GRAPH given (pagerank -h for usage)");
        if (positional.size() > 1) throw app::UsageError("unexpected argument " + positional[1] + " after GRAPH");
        o.graph = positional[0];
        if (o.directed && o.undirected) throw app::UsageError("--directed and --undirected exclude each other");
        if (o.pagerank.ldbc && (o.tol_given || o.max_iter_given))
            throw app::UsageError("--tol and --max-iter do not apply to --ldbc / --iterations (no convergence test)");
        return true;
    };
    auto body = [&](const app::CommonOptions& common) {
        app::BackendStart start(common);
        std::optional<ScopedContext> scope(std::in_place, Context::cpu());  // read on the CPU while the GPU starts
        const app::Log log(common);
        app::Output out(o.output);

        const io::Graph<double> g = app::read_input(o.graph, {.directed = o.directed, .undirected = o.undirected});
        const Index n = g.matrix.nrows();
        const std::vector<Index> seeds = o.seeds.empty() ? std::vector<Index>{} : read_seeds(o.seeds, o.graph, g.names, n);
        log.accept();
        const Context ctx = start.context();
        scope.emplace(ctx);
        const Matrix<double> a = g.matrix.to(ctx);
        log("graph: %s (%llu vertices, %llu stored entries), read in %.3f s\n", o.graph.c_str(), (unsigned long long)n,
            (unsigned long long)a.nvals(), log.seconds());

        algorithms::PageRankOptions po = o.pagerank;
        if (!log.quiet()) po.progress = [&](std::size_t it, double change) {
            log("iteration %zu: L1 change %.3e\n", it, change);
        };
        // The ranks row-major (N x columns) on the host, with how the run went.
        struct Run {
            std::vector<double> values;
            std::size_t iterations;
            double change;
            bool converged;
        };
        auto compute = [&](const Matrix<double>& m, const algorithms::PageRankOptions& opt) -> Run {
            if (o.seeds.empty()) {
                auto r = algorithms::pagerank(m, opt);
                return {host_values(r.rank), r.iterations, r.l1_change, r.converged};
            }
            auto r = algorithms::personalized_pagerank(m, seeds, opt);
            return {host_values(r.rank), r.iterations, r.l1_change, r.converged};
        };
        const double t0 = log.seconds();
        const Run run = compute(a, po);
        log("%s on %s: %zu iterations in %.3f s\n", o.seeds.empty() ? "pagerank" : "personalized pagerank",
            ctx.name().c_str(), run.iterations, log.seconds() - t0);
        if (!po.ldbc && !run.converged && n > 0)
            std::fprintf(stderr, "pagerank: warning: not converged after %zu iterations (L1 change %.3e, --tol %.3e)\n",
                         run.iterations, run.change, po.tolerance);
        if (common.validate) {
            algorithms::PageRankOptions cpu_opt = o.pagerank;  // quietly
            compare(run.values, compute(a.to(Context::cpu()), cpu_opt).values,
                    po.ldbc ? 1e-12 : 1e-12 + 10 * po.tolerance);
            log("validated against the CPU backend\n");
        }

        std::ostream& os = out.stream();
        const std::size_t columns = o.seeds.empty() ? 1 : seeds.size();
        if (!o.seeds.empty()) {
            os << "# vertex";
            for (Index s : seeds) os << ' ' << g.names.name(s);
            os << '\n';
        }
        std::string line;
        for (Index v = 0; v < n; ++v) {
            line = g.names.name(v);
            for (std::size_t j = 0; j < columns; ++j) line += ' ' + number(run.values[v * columns + j]);
            line += '\n';
            os << line;
        }
        out.commit();
        return 0;
    };
    return app::run("pagerank", argc, argv, parse, body);
}
