// contract GRAPH LABELS: contracts a graph by vertex labels (cuGraph's coarsen_graph; see algorithms/contract.hpp).
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>  // before apps/common.hpp, which uses std::cout without including it
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "algorithms/contract.hpp"
#include "apps/common.hpp"
#include "io/read_graph.hpp"
#include "io/text.hpp"

using namespace hybla;

namespace {

const char* usage =
    "usage: contract GRAPH LABELS [-o FILE] [--combine plus|min|max] [--drop-loops] [--abc] [--order first|value]\n"
    "                [--directed] [options]\n"
    "Contracts GRAPH by the labels of its vertices: every label becomes one vertex, and the edges between two\n"
    "labels (in either direction as stored) become one edge whose weight combines theirs (S*A*S^T with S the\n"
    "label indicator). Edges inside a label become its self-loop unless --drop-loops.\n"
    "GRAPH: Matrix Market (.mtx; symmetric files hold both directions), edge list (.txt, .csv, ...; as stored),\n"
    "mcl labels (.abc) or hybla binary (as written); .gz accepted. An .abc file is the graph mcl clusters: each\n"
    "line is an undirected edge (both directions), and a pair named more than once weighs the largest of its\n"
    "weights, so that contracting by mcl's clusters gives mcl's cluster graph. A graph without edges is bad input.\n"
    "LABELS (.gz accepted), recognised by its first non-blank line:\n"
    "  a single integer: one integer per line, one line per vertex in GRAPH's vertex order, the label of each\n"
    "  vertex;\n"
    "  otherwise mcl's cluster output: one cluster per line, its vertices' names (as GRAPH names them: 1..n for\n"
    "  Matrix Market, the ids of an edge list, the labels of an .abc file) separated by tabs or spaces; every\n"
    "  vertex in exactly one cluster; the cluster on the i-th line (from 0) has label i.\n"
    "  Blank lines are ignored.\n"
    "  -o FILE                   where to write the contracted graph (default -: stdout); .gz compresses\n"
    "  --combine plus|min|max    how parallel edges combine (default plus)\n"
    "  --drop-loops              drop the self-loops of the contracted graph\n"
    "  --abc                     write 'label<TAB>label<TAB>weight' lines instead of Matrix Market, whose row\n"
    "                            and column i are the i-th label (listed in its comment lines)\n"
    "  --order first|value       number the labels in order of first appearance in vertex order (default), or\n"
    "                            of increasing value\n"
    "  --directed                an .abc GRAPH's edges one way, as stored (a repeated edge: its first weight)\n";

struct Options {
    std::string graph, labels, output = "-";
    algorithms::ContractOptions contract;
    bool abc = false, directed = false;
};

// The label of every vertex, from either LABELS format (see usage); bad input is a UsageError naming the line.
std::vector<std::int64_t> read_labels(const std::string& path, const io::VertexNames& names, Index n) {
    const Array<char> text = io::detail::read_file(path);
    struct Line {
        std::size_t number;
        std::vector<std::string_view> fields;
    };
    std::vector<Line> lines;
    {
        const std::string_view all(text.data(), text.size());
        std::size_t number = 0;
        for (std::size_t b = 0; b < all.size();) {
            std::size_t e = all.find('\n', b);
            if (e == std::string_view::npos) e = all.size();
            const std::string_view line = all.substr(b, e - b);
            b = e + 1;
            ++number;
            Line l{number, {}};
            for (std::size_t p = 0; p < line.size();) {
                while (p < line.size() && io::detail::is_space(line[p])) ++p;
                std::size_t q = p;
                while (q < line.size() && !io::detail::is_space(line[q])) ++q;
                if (q > p) l.fields.push_back(line.substr(p, q - p));
                p = q;
            }
            if (!l.fields.empty()) lines.push_back(std::move(l));
        }
    }
    auto where = [&](const char* format, std::size_t line) {
        return path + " (" + format + ") line " + std::to_string(line) + ": ";
    };

    // One integer per line: the label of each vertex in turn. The first line decides, so that a bad line further
    // down is reported as what it is, not as a cluster file that names no vertex on line 1.
    std::vector<std::int64_t> labels;
    std::int64_t first = 0;
    if (!lines.empty() && lines[0].fields.size() == 1 && io::detail::parse_int(lines[0].fields[0], first)) {
        for (const Line& l : lines) {
            std::int64_t v = 0;
            if (l.fields.size() != 1)
                throw app::UsageError(where("one label per line", l.number) + "expected one integer label, found " +
                                      std::to_string(l.fields.size()) + " fields");
            bool range = false;
            if (!io::detail::parse_int(l.fields[0], v, &range))
                throw app::UsageError(where("one label per line", l.number) + io::detail::quoted(l.fields[0]) +
                                      (range ? " does not fit int64_t" : " is not an integer label"));
            labels.push_back(v);
        }
        if (labels.size() != n)
            throw app::UsageError(path + " (one label per line) has " + std::to_string(labels.size()) +
                                  " labels but the graph has " + std::to_string(n) + " vertices");
        return labels;
    }

    // mcl clusters: vertex names, one cluster per line.
    std::unordered_map<std::string, Index> vertex;
    vertex.reserve(n);
    for (Index v = 0; v < n; ++v) vertex.emplace(names.name(v), v);
    std::vector<std::size_t> line_of(n, 0);  // 0: in no cluster yet
    labels.assign(n, 0);
    for (std::size_t c = 0; c < lines.size(); ++c)
        for (std::string_view name : lines[c].fields) {
            const auto it = vertex.find(std::string(name));
            if (it == vertex.end())
                throw app::UsageError(where("clusters", lines[c].number) + io::detail::quoted(name) +
                                      " is not a vertex of the graph");
            const Index v = it->second;
            if (line_of[v])
                throw app::UsageError(where("clusters", lines[c].number) + "vertex " + io::detail::quoted(name) +
                                      " is already in the cluster of line " + std::to_string(line_of[v]));
            line_of[v] = lines[c].number;
            labels[v] = std::int64_t(c);
        }
    for (Index v = 0; v < n; ++v)
        if (!line_of[v])
            throw app::UsageError(path + " (clusters): vertex '" + names.name(v) + "' is in no cluster");
    return labels;
}

algorithms::Contracted<double, std::int64_t> run_contract(const Matrix<double>& a, const std::vector<std::int64_t>& labels,
                                                      const Options& o) {
    return algorithms::contract(a, labels, o.contract);
}

// Exact for min and max (NaN equals NaN); relative 1e-9 for sums, whose order of addition may differ.
void compare(const Matrix<double>& got, const Matrix<double>& want, algorithms::Combine combine) {
    std::vector<Index> gr, gc, wr, wc;
    std::vector<double> gv, wv;
    got.extract_tuples(gr, gc, gv);
    want.extract_tuples(wr, wc, wv);
    if (gr.size() != wr.size())
        throw app::ValidationError(std::to_string(gr.size()) + " entries but the CPU backend gives " +
                                   std::to_string(wr.size()));
    const double rel = combine == algorithms::Combine::plus ? 1e-9 : 0;
    for (std::size_t x = 0; x < gr.size(); ++x) {
        if (gr[x] != wr[x] || gc[x] != wc[x])
            throw app::ValidationError("entry " + std::to_string(x) + " is (" + std::to_string(gr[x] + 1) + ", " +
                                       std::to_string(gc[x] + 1) + ") but the CPU backend gives (" +
                                       std::to_string(wr[x] + 1) + ", " + std::to_string(wc[x] + 1) + ")");
        const double g = gv[x], w = wv[x];
        const bool same = (std::isnan(g) && std::isnan(w)) || g == w ||
                          std::abs(g - w) <= rel * std::max({1.0, std::abs(g), std::abs(w)});
        if (!same)
            throw app::ValidationError("entry (" + std::to_string(gr[x] + 1) + ", " + std::to_string(gc[x] + 1) +
                                       ") is " + std::to_string(g) + " but the CPU backend gives " + std::to_string(w));
    }
}

// The shortest text that reads back as the same double.
using app::number;

void write_abc(std::ostream& s, const Matrix<double>& c, const std::vector<std::int64_t>& labels) {
    std::vector<Index> r, cc;
    std::vector<double> v;
    c.extract_tuples(r, cc, v);
    for (std::size_t x = 0; x < r.size(); ++x)
        s << labels[r[x]] << '\t' << labels[cc[x]] << '\t' << number(v[x]) << '\n';
}

// Matrix Market through io's writer: into a temporary file (compressed when the output's name ends in .gz),
// then copied into the output, which appears only on commit.
void write_mtx(app::Output& out, const std::string& out_name, const Matrix<double>& c,
               const std::vector<std::int64_t>& labels) {
    const bool gz = io::detail::ends_with_gz(out_name);
    std::string tmp = (std::filesystem::temp_directory_path() / "hybla-contract-XXXXXX").string() + (gz ? ".gz" : "");
    const int fd = app::TempFiles::create(tmp, gz ? 3 : 0);
    if (fd < 0) throw app::UsageError("cannot create a temporary file in " + std::filesystem::temp_directory_path().string());
    ::close(fd);
    struct Remove {
        std::string path;
        ~Remove() { app::TempFiles::remove(path); }
    } remove{tmp};
    std::string comment = "contracted by hybla contract: row and column i are the label below ('i label')";
    for (std::size_t i = 0; i < labels.size(); ++i) {
        comment += '\n';
        comment += std::to_string(i + 1);
        comment += ' ';
        comment += std::to_string(labels[i]);
    }
    io::write_matrix_market(tmp, c, {.comment = comment});
    std::ifstream in(tmp, std::ios::binary);
    if (!(out.stream() << in.rdbuf())) throw app::UsageError("cannot copy the temporary file " + tmp + " to the output");
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
            } else if (args.is("--combine")) {
                const std::string c = args.value("--combine");
                if (c == "plus") o.contract.combine = algorithms::Combine::plus;
                else if (c == "min") o.contract.combine = algorithms::Combine::min;
                else if (c == "max") o.contract.combine = algorithms::Combine::max;
                else throw app::UsageError("--combine must be plus, min or max, got '" + c + "'");
            } else if (args.is("--order")) {
                const std::string c = args.value("--order");
                if (c == "first") o.contract.order = algorithms::LabelOrder::first_appearance;
                else if (c == "value") o.contract.order = algorithms::LabelOrder::value;
                else throw app::UsageError("--order must be first or value, got '" + c + "'");
            } else if (args.is("--drop-loops")) {
                o.contract.drop_self_loops = true;
            } else if (args.is("--abc")) {
                o.abc = true;
            } else if (args.is("--directed")) {
                o.directed = true;
            } else if (args.positional()) {
                positional.push_back(args.next());
            } else {
                throw app::UsageError("unknown option " + args.peek() + " (contract -h for usage)");
            }
        }
        if (positional.size() < 2) throw app::UsageError("expected GRAPH and LABELS (contract -h for usage)");
        if (positional.size() > 2) throw app::UsageError("unexpected argument " + positional[2] + " after GRAPH and LABELS");
        o.graph = positional[0];
        o.labels = positional[1];
        if (o.abc && io::detail::ends_with_gz(o.output))
            throw app::UsageError("--abc output is plain text; " + o.output + " ends in .gz");
        return true;
    };
    auto body = [&](const app::CommonOptions& common) {
        app::BackendStart start(common);
        std::optional<ScopedContext> scope(std::in_place, Context::cpu());  // read on the CPU while the GPU starts
        const app::Log log(common);
        app::Output out(o.output);

        const io::Graph<double> g = app::read_input(o.graph, {.directed = o.directed});
        const std::vector<std::int64_t> labels = read_labels(o.labels, g.names, g.matrix.nrows());
        log.accept();
        const Context ctx = start.context();
        scope.emplace(ctx);
        const Matrix<double> a = g.matrix.to(ctx);
        log("graph: %s (%llu vertices, %llu stored entries), labels read in %.3f s\n", o.graph.c_str(),
            (unsigned long long)a.nrows(), (unsigned long long)a.nvals(), log.seconds());
        const double t0 = log.seconds();
        const auto result = run_contract(a, labels, o);
        log("contracted on %s into %llu vertices and %llu stored entries in %.3f s\n", ctx.name().c_str(),
            (unsigned long long)result.matrix.nrows(), (unsigned long long)result.matrix.nvals(), log.seconds() - t0);
        if (common.validate) {
            compare(result.matrix, run_contract(a.to(Context::cpu()), labels, o).matrix, o.contract.combine);
            log("validated against the CPU backend\n");
        }
        if (o.abc) write_abc(out.stream(), result.matrix, result.labels);
        else write_mtx(out, o.output, result.matrix, result.labels);
        out.commit();
        return 0;
    };
    return app::run("contract", argc, argv, parse, body);
}
