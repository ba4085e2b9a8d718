// Triangle counting: totals and per-vertex counts against a brute-force triple loop on random graphs (loops,
// one-way edges and explicit zeros included), with and without degree ordering; the degree ordering itself;
// totals of real graphs against their truth files.
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "algorithms/triangle_count.hpp"
#include "io/read_graph.hpp"
#include "reference.hpp"

using namespace hybla;
using ref::Dense;
using ref::Index;

namespace {

// Triangles through each vertex of the undirected simple graph of d, by a triple loop over i < j < k.
std::vector<std::uint64_t> brute_per_vertex(const Dense<double>& d) {
    const Index n = d.nrows;
    auto adj = [&](Index i, Index j) { return i != j && (d(i, j).has_value() || d(j, i).has_value()); };
    std::vector<std::uint64_t> t(n, 0);
    for (Index i = 0; i < n; ++i)
        for (Index j = i + 1; j < n; ++j)
            if (adj(i, j))
                for (Index k = j + 1; k < n; ++k)
                    if (adj(i, k) && adj(j, k)) ++t[i], ++t[j], ++t[k];
    return t;
}

std::vector<std::uint64_t> host(const Vector<std::uint64_t>& v) {
    std::vector<Index> idx;
    std::vector<std::uint64_t> val;
    v.extract_tuples(idx, val);
    std::vector<std::uint64_t> out(v.size(), ~std::uint64_t(0));  // an absent entry shows as 2^64-1
    for (std::size_t x = 0; x < idx.size(); ++x) out[idx[x]] = val[x];
    return out;
}

}  // namespace

TEST_CASE("triangles per vertex and in total match a triple loop on random graphs", "[tc]") {
    ref::Gen gen(20240611);
    const std::vector<Index> sizes = {0, 1, 2, 3, 4, 13, 17, 40, 61};
    for (Index n : sizes)
        for (double density : {0.05, 0.3, 0.8})
            for (bool skewed : {false, true}) {
                const Dense<double> d = gen.matrix<double>(n, n, density, skewed);
                const Matrix<double> a = ref::to_matrix(d);
                const std::vector<std::uint64_t> want = brute_per_vertex(d);
                const std::uint64_t want_total = std::accumulate(want.begin(), want.end(), std::uint64_t(0)) / 3;
                for (bool degree_order : {false, true}) {
                    INFO("n=" << n << " density=" << density << " skewed=" << skewed << " degree_order=" << degree_order);
                    const algorithms::TriangleOptions o{.degree_order = degree_order};
                    const Vector<std::uint64_t> t = algorithms::triangles_per_vertex(a, o);
                    REQUIRE(t.size() == n);
                    CHECK(t.nvals() == n);  // every vertex has an entry, zero or not
                    CHECK(host(t) == want);
                    CHECK(algorithms::triangle_count(a, o) == want_total);
                    CHECK(reduce(plus_monoid{}, t) == 3 * want_total);
                }
            }
}

TEST_CASE("triangle counting ignores direction, duplicates, weights and self-loops", "[tc]") {
    // One triangle 0-1-2 given one way round with a loop, a zero weight and a repeated edge; vertex 3 hangs off 0.
    const std::vector<Index> r = {0, 1, 2, 2, 0, 1, 3}, c = {1, 2, 0, 2, 3, 2, 0};
    const std::vector<double> v = {1, 0, -2, 5, 1, 7, 1};
    const Matrix<double> a = Matrix<double>::from_tuples(4, 4, r, c, v);
    for (bool degree_order : {false, true}) {
        const algorithms::TriangleOptions o{.degree_order = degree_order};
        CHECK(algorithms::triangle_count(a, o) == 1);
        CHECK(host(algorithms::triangles_per_vertex(a, o)) == std::vector<std::uint64_t>{1, 1, 1, 0});
    }
    // The complete graph K_n: n choose 3 triangles, (n-1 choose 2) through each vertex.
    const Index n = 9;
    std::vector<Index> rr, cc;
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < n; ++j) rr.push_back(i), cc.push_back(j);
    const Matrix<double> k = Matrix<double>::from_tuples(n, n, rr, cc, std::vector<double>(rr.size(), 1.0));
    CHECK(algorithms::triangle_count(k) == 84);
    CHECK(host(algorithms::triangles_per_vertex(k, {.degree_order = true})) == std::vector<std::uint64_t>(n, 28));
}

TEST_CASE("triangle counting refuses a non-square matrix", "[tc]") {
    const Matrix<double> a(3, 4);
    CHECK_THROWS_AS(algorithms::triangle_count(a), DimensionMismatch);
    CHECK_THROWS_AS(algorithms::triangles_per_vertex(a, {.degree_order = true}), DimensionMismatch);
    CHECK_THROWS_WITH(algorithms::triangle_count(a), Catch::Contains("must be square, got 3x4"));
}

TEST_CASE("degree ordering is a permutation by increasing degree", "[tc]") {
    ref::Gen gen(7);
    for (Index n : {Index(0), Index(1), Index(23), Index(50)}) {
        const Matrix<std::uint8_t> s = algorithms::undirected_simple(ref::to_matrix(gen.matrix<double>(n, n, 0.2, true)));
        const algorithms::DegreeOrdered p = algorithms::degree_ordered(s);
        REQUIRE(p.order.size() == n);
        std::vector<Index> sorted = p.order;
        std::sort(sorted.begin(), sorted.end());
        std::vector<Index> iota(n);
        std::iota(iota.begin(), iota.end(), Index(0));
        CHECK(sorted == iota);
        const Dense<std::uint8_t> ds = ref::to_dense(s), dp = ref::to_dense(p.matrix);
        std::vector<Index> deg(n, 0);
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < n; ++j) deg[i] += ds(i, j).has_value();
        for (Index q = 0; q + 1 < n; ++q) CHECK(deg[p.order[q]] <= deg[p.order[q + 1]]);
        for (Index q = 0; q < n; ++q)
            for (Index r = 0; r < n; ++r) CHECK(dp(q, r) == ds(p.order[q], p.order[r]));
    }
}

TEST_CASE("triangle counts of bundled graphs match their truth files, with and without degree ordering", "[tc][data]") {
    namespace fs = std::filesystem;
    const fs::path data = fs::path(HYBLA_SOURCE_DIR) / "data";
    // Matrix Market, SNAP edge lists (one directed, gzipped), CSV; oregon1 is power law (a hub of degree 2312).
    const char* names[] = {"karate",         "dolphins",      "polbooks",  "netscience",   "west0067",
                           "oregon1_010331", "email-Eu-core", "ca-GrQc",   "USPowerGrid",  "p2p-Gnutella08"};
    int checked = 0;
    for (const char* name : names) {
        const fs::path truth_file = data / name / "truth.txt";
        if (!fs::exists(truth_file)) {
            WARN("dataset " << name << " not found: skipped");
            continue;
        }
        const auto truth = ref::read_truth(truth_file.string());
        REQUIRE(truth.count("triangles") == 1);
        const std::uint64_t want = std::stoull(truth.at("triangles"));
        fs::path file = data / name / truth.at("graph_file");
        if (!fs::exists(file)) file += ".gz";  // large files were gzipped after the truth was computed
        INFO(file.string() << ": expected " << want << " triangles");
        const Matrix<double> a = io::read_graph<double>(file.string()).matrix;
        CHECK(algorithms::triangle_count(a) == want);
        CHECK(algorithms::triangle_count(a, {.degree_order = true}) == want);
        const Vector<std::uint64_t> t = algorithms::triangles_per_vertex(a);
        CHECK(reduce(plus_monoid{}, t) == 3 * want);
        CHECK(host(algorithms::triangles_per_vertex(a, {.degree_order = true})) == host(t));
        ++checked;
    }
    CHECK(checked >= 8);
}
