// mcl INPUT: Markov clustering with van Dongen's mcl's options, defaults and output (algorithms/mcl.hpp).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <vector>
#include <string>

#include "algorithms/mcl.hpp"
#include "apps/common.hpp"
#include "engine/memory.hpp"
#include "io/abc.hpp"
#include "io/read_graph.hpp"

using namespace hybla;

namespace {

const char* usage =
    "usage: mcl INPUT [--abc] [-I f] [-P n] [-S n] [-R n] [-pct n] [-scheme k] [-te n] [-L n] [-o FILE] [options]\n"
    "Markov clustering, as van Dongen's mcl 22-282 computes it (same defaults, pruning, convergence and cluster\n"
    "order). The graph is symmetrised with max (as mcl --abc does), self-loops replaced by mcl's loops.\n"
    "  INPUT        with --abc (or a .abc name): mcl label format 'a b [w]'; else Matrix Market, hybla binary or\n"
    "               edge list by extension (.gz accepted); '-' is not accepted. Weights must be >= 0; a graph\n"
    "               without edges is bad input\n"
    "  -I f         inflation, in (0, 30] (default 2.0)\n"
    "  -P n         cutoff 1/n (0: no cutoff)       -S n  selection number       -R n  recovery number\n"
    "  -pct n       recovery percentage (0..100)    -scheme k  resource scheme 1..7 (default 6: P 10000 S 1100\n"
    "               R 1400 pct 90); -P/-S/-R/-pct override it\n"
    "  -te n        threads (as --threads)          -L n  at most n iterations (default 10000)\n"
    "  -o FILE      output file ('-' = stdout); default out.<INPUT name>.I<10*I>\n"
    "  --compare F  also print the split/join distance to the clustering in F (mcl --abc output format)\n"
    "With --validate, the CPU backend's clustering is computed too; a split/join distance above 0.1% of the\n"
    "vertices between the two is a mismatch.\n"
    "Output: one cluster per line, vertex names separated by tabs (labels for --abc, ids for edge lists,\n"
    "1..n for Matrix Market), largest cluster first, as mcl --abc writes it.\n"
    "Common options:\n";

struct Options {
    std::string input, output, compare;
    bool abc = false;
    double inflation = 2.0;
    int scheme = 6;
    long long P = -1, S = -1, R = -1, pct = -1, max_iterations = 10000;
};

PruneRule rule_of(const Options& o) {
    PruneRule r = algorithms::mcl_scheme(o.scheme);
    if (o.P >= 0) r.cutoff = o.P == 0 ? 0.0 : 0.99999 / double(o.P);
    if (o.S >= 0) r.select = Index(o.S);
    if (o.R >= 0) r.recover = Index(o.R);
    if (o.pct >= 0) r.pct = double(o.pct) / 100.0;
    return r;
}

// The shortest text that reads back as the same double.
using app::number;

// The graph mcl clusters; a negative weight is bad input, named here rather than by the algorithm.
io::Graph<double> read_input(const Options& o) {
    io::Graph<double> g = app::read_input(o.input, {.abc = o.abc, .undirected = true});
    const auto off = g.matrix.row_offsets();
    const auto ci = g.matrix.col_indices();
    const auto v = g.matrix.values();
    for (Index i = 0; i < g.matrix.nrows(); ++i)
        for (Offset p = off[i]; p < off[i + 1]; ++p)
            if (v[p] < 0)
                throw app::UsageError(o.input + ": the edge " + g.names.name(i) + " " + g.names.name(ci[p]) +
                                      " has the negative weight " + number(v[p]) + " (mcl needs weights >= 0)");
    return g;
}

// A clustering in mcl's output format (one cluster per line, vertex names separated by tabs).
std::vector<std::vector<Index>> read_clusters(const std::string& path, const io::VertexNames& names, Index n) {
    std::unordered_map<std::string, Index> id;
    for (Index v = 0; v < n; ++v) id.emplace(names.name(v), v);
    std::ifstream f(path);
    if (!f) throw app::UsageError("cannot open " + path);
    std::vector<std::vector<Index>> out;
    std::vector<char> seen(n, 0);
    std::string line;
    for (std::size_t number = 1; std::getline(f, line); ++number) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        out.emplace_back();
        std::size_t b = 0;
        while (b <= line.size()) {
            std::size_t e = line.find('\t', b);
            if (e == std::string::npos) e = line.size();
            const std::string name = line.substr(b, e - b);
            const auto it = id.find(name);
            if (it == id.end())
                throw app::UsageError(path + ":" + std::to_string(number) + ": '" + name + "' is not a vertex of the graph");
            if (seen[it->second]++)
                throw app::UsageError(path + ":" + std::to_string(number) + ": vertex '" + name + "' appears twice");
            out.back().push_back(it->second);
            b = e + 1;
        }
    }
    return out;
}

algorithms::MclResult cluster(const Matrix<double>& a, const Options& o, const app::Log* log) {
    algorithms::MclOptions m;
    m.inflation = o.inflation;
    m.prune = rule_of(o);
    m.max_iterations = Index(o.max_iterations);
    if (log && !log->quiet())
        m.progress = [log](const algorithms::MclIteration& s) {
            (*log)("[mcl] ite %3llu  chaos %10.4f  expanded %12llu  kept %12llu  min mass %.3f  %.3f s\n",
                   (unsigned long long)s.iteration, s.chaos, (unsigned long long)s.expanded,
                   (unsigned long long)s.kept, s.min_mass, s.seconds);
        };
    return algorithms::mcl(a, m);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    return app::run(
        "mcl", argc, argv,
        [&](app::Args& args, app::CommonOptions& common) {
            while (!args.done()) {
                if (args.help(usage)) return false;
                if (args.common(common)) continue;
                if (args.is("--abc")) o.abc = true;
                else if (args.is("-I")) {
                    o.inflation = args.real("-I");
                    if (!(o.inflation > 0 && o.inflation <= 30))
                        throw app::UsageError("-I must be in (0, 30], got " + std::to_string(o.inflation));
                } else if (args.is("-P")) o.P = args.integer("-P", 0, 1LL << 40);
                else if (args.is("-S")) o.S = args.integer("-S", 0, 1LL << 32);
                else if (args.is("-R")) o.R = args.integer("-R", 0, 1LL << 32);
                else if (args.is("-pct")) o.pct = args.integer("-pct", 0, 100);
                else if (args.is("-scheme")) o.scheme = int(args.integer("-scheme", 1, 7));
                else if (args.is("-te")) common.threads = int(args.integer("-te", 1, 1 << 16));
                else if (args.is("-L")) o.max_iterations = args.integer("-L", 1, 1LL << 40);
                else if (args.is("-o")) o.output = args.file("-o");
                else if (args.is("--compare")) o.compare = args.file("--compare");
                else if (args.positional() && args.peek() != "-") {
                    if (!o.input.empty())
                        throw app::UsageError("more than one INPUT given: " + o.input + " and " + args.peek());
                    o.input = args.next();
                } else throw app::UsageError("unknown option " + args.peek() + " (mcl -h for usage)");
            }
            if (o.input.empty()) throw app::UsageError("no INPUT given (mcl -h for usage)");
            if (o.output.empty()) {
                const long tenths = std::lround(o.inflation * 10);
                o.output = "out." + std::filesystem::path(o.input).filename().string() + ".I" + std::to_string(tenths);
            }
            return true;
        },
        [&](const app::CommonOptions& common) {
            const app::Log log(common);
            app::BackendStart start(common);
            app::Output out(o.output);  // opened before the work so a bad path fails early
            io::Graph<double> g = [&] {
                const ScopedContext on_cpu(Context::cpu());
                return read_input(o);
            }();
            std::vector<std::vector<Index>> compare;
            if (!o.compare.empty()) compare = read_clusters(o.compare, g.names, g.matrix.nrows());
            log.accept();
            log("[mcl] %s: %llu vertices, %llu entries (symmetrised), read in %.3f s\n", o.input.c_str(),
                (unsigned long long)g.matrix.nrows(), (unsigned long long)g.matrix.nvals(), log.seconds());
            const Context ctx = start.context();
            const ScopedContext scope(ctx);
            if (ctx.is_cuda()) log("[mcl] backend %s, GPU ready after %.3f s\n", ctx.name().c_str(), log.seconds());
            else log("[mcl] backend cpu\n");
            const double t0 = log.seconds();
            const algorithms::MclResult res = cluster(g.matrix.to(ctx), o, &log);
            log("[mcl] %zu clusters found in %llu iterations, %.3f s\n", res.clusters.size(),
                (unsigned long long)res.iterations, log.seconds() - t0);
            if (ctx.is_cuda())
                log("[mcl] peak GPU memory of the pool: %.1f MiB\n", double(peak_device_memory(ctx)) / (1 << 20));
            if (res.overlap_cut) log("[mcl] cut %llu instances of overlap\n", (unsigned long long)res.overlap_cut);
            if (common.validate && ctx.is_cuda()) {
                const algorithms::MclResult ref = cluster(g.matrix, o, nullptr);
                const Index d = algorithms::split_join_distance(res.clusters, ref.clusters, g.matrix.nrows());
                log("[mcl] validate: split/join distance to the CPU backend %llu\n", (unsigned long long)d);
                // Tolerance: the issue's bound for different implementations, 0.1% of the vertices.
                if (double(d) > 0.001 * double(g.matrix.nrows()))
                    throw app::ValidationError("split/join distance " + std::to_string(d) +
                                               " to the CPU backend's clustering exceeds 0.1% of the vertices");
            }
            if (!o.compare.empty()) {
                const Index d = algorithms::split_join_distance(res.clusters, compare, g.matrix.nrows());
                std::fprintf(stderr, "[mcl] split/join distance to %s: %llu (%zu vs %zu clusters)%s\n",
                             o.compare.c_str(), (unsigned long long)d, res.clusters.size(), compare.size(),
                             d == 0 ? ": the same partition" : "");
            }
            std::ostream& os = out.stream();
            for (const auto& c : res.clusters) {
                for (std::size_t k = 0; k < c.size(); ++k) {
                    if (k) os << '\t';
                    os << g.names.name(c[k]);
                }
                os << '\n';
            }
            out.commit();
            if (o.output != "-") log("[mcl] output is in %s (%.3f s in all)\n", o.output.c_str(), log.seconds());
            return 0;
        });
}
