// Vertex orders that raise the locality of a graph's pattern, for the GPU's SpMM and SDDMM: each entry (i, j)
// gathers row j of a dense operand, so neighbours numbered close together share cache lines and stay in L2
// together. Explicit and optional: locality_order returns a permutation and the caller applies it (permuted),
// to the graph and to its dense operands alike, and maps results back.
//
// - rcm: reverse Cuthill-McKee on the undirected pattern (direction, weights, loops and repeated entries
//   dropped): each connected component from a pseudo-peripheral vertex (George and Liu: the BFS is restarted
//   from a vertex of least degree in the last level while the depth grows), breadth first, a vertex's new
//   neighbours by increasing degree (then vertex number); the whole order reversed. Components in order of their
//   least-degree vertex. Bandwidth and profile fall; neighbours land close together.
// - degree: vertices by decreasing degree (ties by vertex number): the rows of the hubs, gathered by most
//   entries, lie together.
//
// The order is computed on the host from the pattern (copied there from the GPU when A lives there); it is a pure
// function of the pattern, the same on both backends.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "algorithms/triangle_count.hpp"
#include "engine/hybla.hpp"

namespace hybla::algorithms {

enum class LocalityOrder { rcm, degree };

namespace detail {
// The undirected simple pattern of A on the host, as CSR arrays.
struct HostPattern {
    std::vector<Offset> off;
    std::vector<Index> adj;
    Index n = 0;
    Index degree(Index v) const { return Index(off[v + 1] - off[v]); }
};
template <class T>
HostPattern host_pattern(const Matrix<T>& a) {
    const Matrix<std::uint8_t> s = undirected_simple(a).to(Context::cpu());
    HostPattern p;
    p.n = s.nrows();
    const auto off = s.row_offsets();
    const auto cols = s.col_indices();
    p.off.assign(off.begin(), off.end());
    p.adj.assign(cols.begin(), cols.end());
    return p;
}

// Breadth-first levels from `root` over unvisited vertices (visited[v] != mark); returns the last level and
// the number of levels. Marks what it reaches with `mark`.
inline std::vector<Index> last_level(const HostPattern& p, Index root, std::vector<std::uint64_t>& seen,
                                     std::uint64_t mark, Index& depth) {
    std::vector<Index> level{root}, next;
    seen[root] = mark;
    depth = 1;
    for (;;) {
        next.clear();
        for (Index v : level)
            for (Offset e = p.off[v]; e < p.off[v + 1]; ++e)
                if (const Index w = p.adj[e]; seen[w] != mark) {
                    seen[w] = mark;
                    next.push_back(w);
                }
        if (next.empty()) return level;
        level.swap(next);
        ++depth;
    }
}

inline std::vector<Index> rcm_order(const HostPattern& p) {
    const Index n = p.n;
    // Vertices by increasing degree, then number: each component starts from its first vertex in this order.
    std::vector<Index> by_degree(n);
    std::iota(by_degree.begin(), by_degree.end(), Index(0));
    std::stable_sort(by_degree.begin(), by_degree.end(),
                     [&](Index x, Index y) { return p.degree(x) < p.degree(y); });
    auto less_degree = [&](Index x, Index y) { return p.degree(x) < p.degree(y) || (p.degree(x) == p.degree(y) && x < y); };
    std::vector<std::uint64_t> seen(n, 0);  // 1: placed; larger: a search's mark (64 bits: one a component)
    std::uint64_t mark = 1;
    std::vector<Index> order;
    order.reserve(n);
    for (Index start : by_degree) {
        if (seen[start] == 1) continue;
        // A pseudo-peripheral vertex of start's component (searches mark with fresh numbers, placing nothing).
        Index root = start, depth = 0;
        for (int round = 0; round < 8; ++round) {
            Index d = 0;
            const std::vector<Index> last = last_level(p, root, seen, ++mark, d);
            if (round > 0 && d <= depth) break;
            depth = d;
            root = *std::min_element(last.begin(), last.end(), less_degree);
        }
        // Cuthill-McKee from root.
        std::size_t head = order.size();
        order.push_back(root);
        seen[root] = 1;
        std::vector<Index> fresh;
        while (head < order.size()) {
            const Index v = order[head++];
            fresh.clear();
            for (Offset e = p.off[v]; e < p.off[v + 1]; ++e)
                if (const Index w = p.adj[e]; seen[w] != 1) {
                    seen[w] = 1;
                    fresh.push_back(w);
                }
            std::sort(fresh.begin(), fresh.end(), less_degree);
            order.insert(order.end(), fresh.begin(), fresh.end());
        }
    }
    std::reverse(order.begin(), order.end());
    return order;
}
}  // namespace detail

// A permutation of A's vertices that raises locality: order[q] is the vertex placed at position q.
template <class T>
std::vector<Index> locality_order(const Matrix<T>& a, LocalityOrder how = LocalityOrder::rcm) {
    if (a.nrows() != a.ncols())
        throw DimensionMismatch("locality_order: the adjacency matrix must be square, got " +
                                std::to_string(a.nrows()) + "x" + std::to_string(a.ncols()));
    const detail::HostPattern p = detail::host_pattern(a);
    if (how == LocalityOrder::rcm) return detail::rcm_order(p);
    std::vector<Index> order(p.n);
    std::iota(order.begin(), order.end(), Index(0));
    std::stable_sort(order.begin(), order.end(), [&](Index x, Index y) { return p.degree(x) > p.degree(y); });
    return order;
}

// A(order, order): vertex q of the result is vertex order[q] of A (its entries and values carried over), in A's
// context. order must hold each vertex exactly once (InvalidValue otherwise).
template <class T>
Matrix<T> permuted(const Matrix<T>& a, std::span<const Index> order) {
    if (a.nrows() != a.ncols())
        throw DimensionMismatch("permuted: the matrix must be square, got " + std::to_string(a.nrows()) + "x" +
                                std::to_string(a.ncols()));
    const Index n = a.nrows();
    if (order.size() != n)
        throw InvalidValue("permuted: the order has " + std::to_string(order.size()) + " vertices, the matrix " +
                           std::to_string(n));
    std::vector<bool> seen(n, false);
    for (Index v : order) {
        if (v >= n) throw InvalidValue("permuted: vertex " + std::to_string(v) + " of the order is beyond " +
                                       std::to_string(n) + " vertices");
        if (seen[v]) throw InvalidValue("permuted: vertex " + std::to_string(v) + " appears twice in the order");
        seen[v] = true;
    }
    Matrix<T> c(n, n, a.context());
    extract(c, no_mask, no_accum, a, order, order);
    return c;
}
template <class T>
Matrix<T> permuted(const Matrix<T>& a, const std::vector<Index>& order) {
    return permuted(a, std::span<const Index>(order));
}

}  // namespace hybla::algorithms
