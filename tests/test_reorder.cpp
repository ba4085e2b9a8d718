// Locality orders (reverse Cuthill-McKee, decreasing degree) and permuted: every order a permutation on edge-case
// graphs (empty, one vertex, odd sizes, a star, components and isolated vertices, one-way entries, loops,
// repeated and weighted entries, random graphs); RCM's bandwidth against Boost.Graph's cuthill_mckee_ordering on
// scrambled paths, grids and random graphs with several components; the degree order's rule; permuted against
// a brute-force A(order, order); the same orders from the default context and the CPU; errors.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/cuthill_mckee_ordering.hpp>

#include "algorithms/reorder.hpp"
#include "reference.hpp"

using namespace hybla;
using algorithms::locality_order;
using algorithms::LocalityOrder;
using algorithms::permuted;
using Catch::Contains;
using ref::Dense;
using ref::Index;

namespace {

using Edges = std::vector<std::pair<Index, Index>>;

// The undirected simple pattern of a (direction, loops, values and repeats dropped), neighbours sorted.
template <class T>
std::vector<std::vector<Index>> neighbours(const Matrix<T>& a) {
    std::vector<Index> r, c;
    std::vector<T> v;
    a.extract_tuples(r, c, v);
    std::vector<std::vector<Index>> adj(a.nrows());
    for (std::size_t k = 0; k < r.size(); ++k)
        if (r[k] != c[k]) adj[r[k]].push_back(c[k]), adj[c[k]].push_back(r[k]);
    for (auto& l : adj) {
        std::sort(l.begin(), l.end());
        l.erase(std::unique(l.begin(), l.end()), l.end());
    }
    return adj;
}

bool is_permutation_of(std::vector<Index> order, Index n) {
    std::sort(order.begin(), order.end());
    for (Index q = 0; q < order.size(); ++q)
        if (order[q] != q) return false;
    return order.size() == n;
}

// The bandwidth (max |q - r| over the entries (q, r)) and the profile (the sum over rows q of q - the least
// column r <= q with an entry in row q: the envelope's size) of a symmetric pattern.
struct Spread {
    Index bandwidth = 0, profile = 0;
};
template <class T>
Spread spread(const Matrix<T>& m) {
    std::vector<Index> r, c;
    std::vector<T> v;
    m.extract_tuples(r, c, v);
    std::vector<Index> first(m.nrows());
    std::iota(first.begin(), first.end(), Index(0));
    Spread s;
    for (std::size_t k = 0; k < r.size(); ++k) {
        s.bandwidth = std::max(s.bandwidth, r[k] > c[k] ? r[k] - c[k] : c[k] - r[k]);
        first[r[k]] = std::min(first[r[k]], c[k]);
    }
    for (Index q = 0; q < first.size(); ++q) s.profile += q - first[q];
    return s;
}
template <class T>
Index bandwidth(const Matrix<T>& m) { return spread(m).bandwidth; }

// The undirected simple pattern of a as a Boost graph.
using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                         boost::property<boost::vertex_color_t, boost::default_color_type,
                                                         boost::property<boost::vertex_degree_t, int>>>;
template <class T>
BoostGraph boost_graph(const Matrix<T>& a) {
    const auto adj = neighbours(a);
    BoostGraph g(a.nrows());
    for (Index i = 0; i < adj.size(); ++i)
        for (Index j : adj[i])
            if (i < j) boost::add_edge(i, j, g);
    return g;
}

// Boost's reverse Cuthill-McKee (pseudo-peripheral start per component): order[q] = the vertex placed at q.
template <class T>
std::vector<Index> boost_rcm(const Matrix<T>& a) {
    BoostGraph g = boost_graph(a);
    std::vector<BoostGraph::vertex_descriptor> inv(a.nrows());
    boost::cuthill_mckee_ordering(g, inv.rbegin(), boost::get(boost::vertex_color, g), boost::make_degree_map(g));
    return std::vector<Index>(inv.begin(), inv.end());
}

// A graph from edges (one way unless both_ways) with values 1, 2, 3, ..., vertices renamed by `name`.
Matrix<double> graph(Index n, const Edges& edges, const std::vector<Index>& name = {}, bool both_ways = true) {
    std::vector<Index> r, c;
    std::vector<double> v;
    for (auto [i, j] : edges) {
        const Index x = name.empty() ? i : name[i], y = name.empty() ? j : name[j];
        r.push_back(x), c.push_back(y), v.push_back(double(v.size() + 1));
        if (both_ways) r.push_back(y), c.push_back(x), v.push_back(double(v.size() + 1));
    }
    return Matrix<double>::from_tuples(n, n, r, c, v);
}

std::vector<Index> shuffled(Index n, std::mt19937_64& rng) {
    std::vector<Index> p(n);
    std::iota(p.begin(), p.end(), Index(0));
    std::shuffle(p.begin(), p.end(), rng);
    return p;
}

// Several random components of 10 to 150 vertices (each possibly split further) and isolated vertices, renamed
// at random.
Matrix<double> random_components(ref::Gen& gen, int components, Index isolated) {
    Edges e;
    Index n = 0;
    for (int k = 0; k < components; ++k) {
        const Index m = gen.uniform(10, 150);
        const Dense<double> d = gen.matrix<double>(m, m, 3.0 / double(m), k % 2 == 1);
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < m; ++j)
                if (d(i, j)) e.push_back({n + i, n + j});
        n += m;
    }
    n += isolated;
    return graph(n, e, shuffled(n, gen.rng), false);
}

// The edge cases every order must handle, all in the default context.
std::vector<std::pair<std::string, Matrix<double>>> corpus() {
    std::vector<std::pair<std::string, Matrix<double>>> out;
    out.emplace_back("empty", Matrix<double>(0, 0));
    out.emplace_back("one vertex", Matrix<double>(1, 1));
    out.emplace_back("one vertex with a loop", graph(1, {{0, 0}}));
    ref::Gen gen(20240720);
    out.emplace_back("random n=37", ref::to_matrix(gen.matrix<double>(37, 37, 0.08)));
    out.emplace_back("random n=1001", ref::to_matrix(gen.matrix<double>(1001, 1001, 0.003, true)));
    Edges star;
    for (Index v = 0; v < 50; ++v)
        if (v != 17) star.push_back({17, v});
    out.emplace_back("star, hub 17, one way", graph(50, star, {}, false));
    // A triangle, a path of 4 and an edge, interleaved with isolated vertices 0, 5, 9, 12.
    out.emplace_back("components and isolated vertices",
                     graph(13, {{1, 7}, {7, 3}, {3, 1}, {2, 10}, {10, 4}, {4, 11}, {6, 8}}));
    // A directed cycle and a one-way fan.
    const Edges directed = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {4, 6}, {4, 7}, {5, 8}, {8, 9}, {10, 9}};
    out.emplace_back("directed", graph(11, directed, {}, false));
    const std::vector<Index> r = {0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 5, 6}, c = {0, 1, 0, 2, 3, 3, 4, 4, 4, 6, 6, 5};
    const std::vector<double> v = {5, -1, 0, 2.5, 1, -1, 3, 4, 0, 1e9, -7, 0.25};
    out.emplace_back("loops, repeats, zeros and weights", Matrix<double>::from_tuples(7, 7, r, c, v));
    for (Index n : {Index(2), Index(3), Index(13), Index(40), Index(61)})
        for (double density : {0.04, 0.3})
            out.emplace_back("gen n=" + std::to_string(n) + " density=" + std::to_string(density),
                             ref::to_matrix(gen.matrix<double>(n, n, density, n % 2 == 1)));
    out.emplace_back("random components", random_components(gen, 5, 7));
    return out;
}

}  // namespace

TEST_CASE("both locality orders are permutations; RCM keeps each component together", "[reorder]") {
    for (const auto& [name, a] : corpus()) {
        INFO(name);
        const Index n = a.nrows();
        const std::vector<Index> rcm = locality_order(a, LocalityOrder::rcm);
        const std::vector<Index> deg = locality_order(a, LocalityOrder::degree);
        CHECK(is_permutation_of(rcm, n));
        CHECK(is_permutation_of(deg, n));
        CHECK(locality_order(a) == rcm);  // rcm is the default
        if (!is_permutation_of(rcm, n)) continue;
        // Along the RCM order a connected component, once left, never comes back.
        std::vector<int> comp(n);
        boost::connected_components(boost_graph(a), comp.data());
        std::vector<char> done(n, 0);
        for (Index q = 0; q < n; ++q) {
            if (q > 0 && comp[rcm[q]] != comp[rcm[q - 1]]) done[comp[rcm[q - 1]]] = 1;
            INFO("position " << q << ", vertex " << rcm[q]);
            CHECK_FALSE(done[comp[rcm[q]]]);
        }
    }
}

TEST_CASE("RCM's bandwidth: 1 on a scrambled path, within 1.25x+1 of Boost's on grids and random graphs", "[reorder]") {
    std::mt19937_64 rng(99);
    Edges path;
    for (Index k = 0; k + 1 < 1000; ++k) path.push_back({k, k + 1});
    const Matrix<double> p = graph(1000, path, shuffled(1000, rng));
    REQUIRE(bandwidth(p) > 100);
    CHECK(bandwidth(permuted(p, locality_order(p))) == 1);

    const Index rows = 30, cols = 40;
    Edges grid;
    for (Index x = 0; x < rows; ++x)
        for (Index y = 0; y < cols; ++y) {
            if (y + 1 < cols) grid.push_back({x * cols + y, x * cols + y + 1});
            if (x + 1 < rows) grid.push_back({x * cols + y, (x + 1) * cols + y});
        }
    const Matrix<double> g = graph(rows * cols, grid, shuffled(rows * cols, rng));
    const Index scrambled = bandwidth(g), ours = bandwidth(permuted(g, locality_order(g)));
    const Index boost = bandwidth(permuted(g, boost_rcm(g)));
    INFO("grid: scrambled " << scrambled << ", ours " << ours << ", Boost " << boost);
    CHECK(ours <= rows + 1);  // level sets of a corner's BFS are the grid's anti-diagonals, at most 30 long
    CHECK(double(ours) <= 1.25 * double(boost) + 1);
    CHECK(ours * 20 < scrambled);

    ref::Gen gen(4242);
    for (int trial = 0; trial < 6; ++trial) {
        const Matrix<double> a = random_components(gen, 3 + trial, Index(trial));
        const std::vector<Index> o = locality_order(a);
        REQUIRE(is_permutation_of(o, a.nrows()));
        const Index before = bandwidth(a), mine = bandwidth(permuted(a, o));
        const Index theirs = bandwidth(permuted(a, boost_rcm(a)));
        INFO("trial " << trial << " n=" << a.nrows() << ": scrambled " << before << ", ours " << mine << ", Boost "
                      << theirs);
        CHECK(double(mine) <= 1.25 * double(theirs) + 1);
        CHECK(mine * 2 < before);
        // Reversing Cuthill-McKee never enlarges the envelope (Liu and Sherman); here it shrinks it.
        const Index env = spread(permuted(a, o)).profile;
        const Index env_cm = spread(permuted(a, std::vector<Index>(o.rbegin(), o.rend()))).profile;
        INFO("profile: ours " << env << ", unreversed " << env_cm);
        CHECK(env < env_cm);
    }
}

TEST_CASE("RCM follows its documented rules on small graphs worked by hand", "[reorder]") {
    // Components started from their least-degree vertex (0, 5, 9, 12, then 2, 6, 1), each from a vertex of least
    // degree in its start's last BFS level (11 for 2's path, 8 for 6's edge, 3 for 1's triangle), ties by number.
    const Matrix<double> a = graph(13, {{1, 7}, {7, 3}, {3, 1}, {2, 10}, {10, 4}, {4, 11}, {6, 8}});
    CHECK(locality_order(a) == std::vector<Index>{7, 1, 3, 6, 8, 2, 10, 4, 11, 12, 9, 5, 0});
    // From 0 the last level is {5}; from 5 no deeper: root 5. Vertex 2's new neighbours 1 (degree 3) and 4
    // (degree 1) are taken 4 first. Cuthill-McKee 5 3 2 4 1 0 6, reversed.
    const Matrix<double> b = graph(7, {{0, 1}, {1, 2}, {1, 6}, {2, 3}, {2, 4}, {3, 5}}, {}, false);
    CHECK(locality_order(b) == std::vector<Index>{6, 0, 1, 4, 2, 3, 5});
    // A path 1..7 with the leaf 0 on 4: from 0 the depth is 5, last level {1, 7}; from 1 it grows to 7 (last
    // level {7}); from 7 it does not grow: root 7. Cuthill-McKee 7 6 5 4 0 3 2 1, reversed.
    const Matrix<double> c = graph(8, {{1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {4, 0}}, {}, false);
    CHECK(locality_order(c) == std::vector<Index>{1, 2, 3, 0, 4, 5, 6, 7});
}

TEST_CASE("the orders are deterministic and depend only on the undirected pattern", "[reorder]") {
    ref::Gen gen(31337);
    for (Index n : {Index(1), Index(9), Index(40), Index(150)})
        for (double density : {0.03, 0.2}) {
            INFO("n=" << n << " density=" << density);
            const Dense<double> d = gen.matrix<double>(n, n, density, true);
            const Matrix<double> a = ref::to_matrix(d);
            // The same undirected pattern as int32: each entry given both ways, some twice (values summed by
            // from_tuples), other values, loops everywhere.
            std::vector<Index> r, c;
            std::vector<std::int32_t> v;
            for (Index i = 0; i < n; ++i) {
                r.push_back(i), c.push_back(i), v.push_back(std::int32_t(i) - 3);
                for (Index j = 0; j < n; ++j)
                    if (d(i, j))
                        for (int k = 0; k < 1 + int(gen.uniform(0, 2)); ++k) {
                            r.push_back(j), c.push_back(i), v.push_back(gen.value<std::int32_t>());
                            if (k == 0) r.push_back(i), c.push_back(j), v.push_back(7);
                        }
            }
            const Matrix<std::int32_t> b = Matrix<std::int32_t>::from_tuples(n, n, r, c, v);
            REQUIRE(b.nvals() >= a.nvals());
            for (LocalityOrder how : {LocalityOrder::rcm, LocalityOrder::degree}) {
                const std::vector<Index> o = locality_order(a, how);
                CHECK(locality_order(a, how) == o);
                CHECK(locality_order(b, how) == o);
            }
        }
}

TEST_CASE("degree order: non-increasing degree, ties by increasing vertex number", "[reorder]") {
    for (const auto& [name, a] : corpus()) {
        INFO(name);
        const Dense<double> d = ref::to_dense(a);
        const Index n = d.nrows;
        std::vector<Index> deg(n, 0);  // |{j != i : A(i, j) or A(j, i)}|, written independently of neighbours()
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < n; ++j) deg[i] += j != i && (d(i, j) || d(j, i));
        const std::vector<Index> o = locality_order(a, LocalityOrder::degree);
        REQUIRE(is_permutation_of(o, n));
        for (Index q = 0; q + 1 < n; ++q) {
            INFO("positions " << q << " and " << q + 1 << ": vertices " << o[q] << " (degree " << deg[o[q]] << ") and "
                              << o[q + 1] << " (degree " << deg[o[q + 1]] << ")");
            CHECK((deg[o[q]] > deg[o[q + 1]] || (deg[o[q]] == deg[o[q + 1]] && o[q] < o[q + 1])));
        }
    }
    // The star's hub first, then the leaves in vertex order.
    Edges star;
    for (Index v = 0; v < 6; ++v)
        if (v != 4) star.push_back({v, 4});
    CHECK(locality_order(graph(6, star, {}, false), LocalityOrder::degree) == std::vector<Index>{4, 0, 1, 2, 3, 5});
}

namespace {
template <class T>
void check_permuted(std::uint64_t seed) {
    ref::Gen gen(seed);
    for (Index n : {Index(0), Index(1), Index(2), Index(7), Index(13), Index(40), Index(61)})
        for (double density : {0.05, 0.3})
            for (bool use_rcm : {false, true}) {
                INFO("n=" << n << " density=" << density << " order=" << (use_rcm ? "rcm" : "random"));
                const Dense<T> d = gen.matrix<T>(n, n, density, true);
                const Matrix<T> a = ref::to_matrix(d);
                const std::vector<Index> o = use_rcm ? locality_order(a) : shuffled(n, gen.rng);
                REQUIRE(is_permutation_of(o, n));
                Dense<T> want(n, n);
                for (Index q = 0; q < n; ++q)
                    for (Index r = 0; r < n; ++r) want(q, r) = d(o[q], o[r]);
                const Matrix<T> c = permuted(a, o);
                CHECK(c.context() == a.context());
                REF_REQUIRE_SAME(ref::to_dense(c), want);
                const std::span<const Index> s(o);  // the span overload too
                REF_REQUIRE_SAME(ref::to_dense(permuted(a, s)), want);
            }
}
}  // namespace

TEST_CASE("permuted(A, order) is A(order, order) with the values carried over (double)", "[reorder]") {
    check_permuted<double>(5);
}

TEST_CASE("permuted(A, order) is A(order, order) with the values carried over (int32)", "[reorder]") {
    check_permuted<std::int32_t>(6);
}

TEST_CASE("the orders of a matrix in the default context equal those of its CPU copy", "[reorder]") {
    for (const auto& [name, a] : corpus()) {
        INFO(name);
        REQUIRE(a.context() == default_context());
        const Matrix<double> h = a.to(Context::cpu());
        for (LocalityOrder how : {LocalityOrder::rcm, LocalityOrder::degree}) {
            const std::vector<Index> o = locality_order(a, how);
            CHECK(o == locality_order(h, how));
            REF_REQUIRE_SAME(ref::to_dense(permuted(a, o)), ref::to_dense(permuted(h, o)));
        }
    }
}

TEST_CASE("locality_order and permuted refuse bad arguments", "[reorder]") {
    const Matrix<double> wide(3, 4);
    CHECK_THROWS_AS(locality_order(wide, LocalityOrder::rcm), DimensionMismatch);
    CHECK_THROWS_AS(locality_order(wide, LocalityOrder::degree), DimensionMismatch);
    CHECK_THROWS_WITH(locality_order(wide), Contains("locality_order") && Contains("must be square, got 3x4"));
    CHECK_THROWS_AS(permuted(wide, std::vector<Index>{0, 1, 2}), DimensionMismatch);
    CHECK_THROWS_WITH(permuted(wide, std::vector<Index>{0, 1, 2, 3}),
                      Contains("permuted") && Contains("must be square, got 3x4"));

    const Matrix<double> a = graph(4, {{0, 1}, {1, 2}, {2, 3}});
    CHECK_THROWS_AS(permuted(a, std::vector<Index>{0, 1, 2}), InvalidValue);
    CHECK_THROWS_WITH(permuted(a, std::vector<Index>{0, 1, 2}), Contains("has 3 vertices, the matrix 4"));
    CHECK_THROWS_WITH(permuted(a, std::vector<Index>{0, 1, 2, 3, 0}), Contains("has 5 vertices"));
    CHECK_THROWS_AS(permuted(a, std::vector<Index>{0, 1, 4, 3}), InvalidValue);
    CHECK_THROWS_WITH(permuted(a, std::vector<Index>{0, 1, 4, 3}), Contains("vertex 4") && Contains("beyond 4"));
    CHECK_THROWS_WITH(permuted(a, std::vector<Index>{~Index(0), 1, 2, 3}), Contains("beyond 4"));
    CHECK_THROWS_AS(permuted(a, std::vector<Index>{0, 2, 2, 3}), InvalidValue);
    CHECK_THROWS_WITH(permuted(a, std::vector<Index>{0, 2, 2, 3}), Contains("vertex 2 appears twice"));
    CHECK_NOTHROW(permuted(Matrix<double>(0, 0), std::vector<Index>{}));
}
