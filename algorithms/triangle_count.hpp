// Triangle counting on the public API, on the undirected simple graph of A (direction, duplicate entries,
// weights and self-loops dropped: see undirected_simple).
//
// Total: Sandia's masked product C<L> = L ⊕.⊗ Uᵀ with plus_pair, where L and U are the strict lower and upper
// triangles: C(i, j) counts the k with j < k < i adjacent to both, so every triangle is counted exactly once.
// Per vertex: C<S> = S ⊕.⊗ U with plus_pair on the whole symmetric pattern S: C(i, j) counts the common
// neighbours k < j of the adjacent i and j, so row i of C counts every triangle {i, j, k} through i exactly
// once (at j, the larger of its other two vertices), and a row sum gives the triangles through i.
//
// Degree ordering relabels the vertices by increasing degree (ties by vertex number) before the split into
// L and U, so that the high-degree vertices come last and their rows of U are short: the same counts, much
// less work on power-law graphs.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/hybla.hpp"

namespace hybla::algorithms {

struct TriangleOptions {
    bool degree_order = false;  // relabel by increasing degree first (the results are identical)
};

// The symmetric pattern of A with the diagonal removed: entry (i, j) iff A(i, j) or A(j, i), i != j.
template <class T>
Matrix<std::uint8_t> undirected_simple(const Matrix<T>& a) {
    if (a.nrows() != a.ncols())
        throw DimensionMismatch("undirected_simple: the adjacency matrix must be square, got " +
                                std::to_string(a.nrows()) + "x" + std::to_string(a.ncols()));
    Matrix<std::uint8_t> p(a.nrows(), a.ncols(), a.context());
    apply(p, no_mask, no_accum, one_op{}, a);
    Matrix<std::uint8_t> s(a.nrows(), a.ncols(), a.context());
    eWiseAdd(s, no_mask, no_accum, lor_op{}, p, p, Descriptor{.transpose_b = true});
    select(p, no_mask, no_accum, offdiag{}, s);
    return p;
}

// A symmetric pattern with its vertices renumbered by increasing degree: matrix = S(order, order), so vertex q
// of matrix is vertex order[q] of S.
struct DegreeOrdered {
    Matrix<std::uint8_t> matrix;
    std::vector<Index> order;
};
inline DegreeOrdered degree_ordered(const Matrix<std::uint8_t>& s) {
    const Index n = s.nrows();
    Vector<std::uint64_t> deg(n, s.context());
    reduce(deg, no_mask, no_accum, plus_monoid{}, s);  // the entries of s are all 1
    std::vector<Index> idx;
    std::vector<std::uint64_t> d;
    deg.extract_tuples(idx, d);  // rows without entries are absent: degree 0
    std::vector<std::uint64_t> degree(n, 0);
    for (std::size_t x = 0; x < idx.size(); ++x) degree[idx[x]] = d[x];
    DegreeOrdered r{Matrix<std::uint8_t>(n, n, s.context()), std::vector<Index>(n)};
    // A counting sort by degree (below n: s has no diagonal): stable, so ties keep the vertex order.
    std::vector<Index> first(n + 1, 0);
    for (Index v = 0; v < n; ++v) ++first[degree[v] + 1];
    for (Index d = 1; d <= n; ++d) first[d] += first[d - 1];
    for (Index v = 0; v < n; ++v) r.order[first[degree[v]]++] = v;
    extract(r.matrix, no_mask, no_accum, s, r.order, r.order);
    return r;
}

// Number of triangles of the undirected simple graph of A.
template <class T>
std::uint64_t triangle_count(const Matrix<T>& a, const TriangleOptions& options = {}) {
    Matrix<std::uint8_t> s = undirected_simple(a);
    if (options.degree_order) s = degree_ordered(s).matrix;
    const Index n = s.nrows();
    Matrix<std::uint8_t> l(n, n, s.context()), u(n, n, s.context());
    select(l, no_mask, no_accum, tril{-1}, s);
    select(u, no_mask, no_accum, triu{1}, s);
    Matrix<std::uint64_t> c(n, n, s.context());
    mxm(c, l, no_accum, plus_pair{}, l, u, Descriptor{.transpose_b = true, .mask_structure = true});
    return reduce(plus_monoid{}, c);
}

// The number of triangles through each vertex of the undirected simple graph of A: a vector of size n, in A's
// context, with an entry (possibly 0) for every vertex. Its sum is 3 x triangle_count(A).
template <class T>
Vector<std::uint64_t> triangles_per_vertex(const Matrix<T>& a, const TriangleOptions& options = {}) {
    Matrix<std::uint8_t> s = undirected_simple(a);
    const Index n = s.nrows();
    const Context ctx = s.context();
    std::vector<Index> order;
    if (options.degree_order) {
        DegreeOrdered p = degree_ordered(s);
        s = std::move(p.matrix);
        order = std::move(p.order);
    }
    Matrix<std::uint8_t> u(n, n, ctx);
    select(u, no_mask, no_accum, triu{1}, s);
    Matrix<std::uint64_t> c(n, n, ctx);
    mxm(c, s, no_accum, plus_pair{}, s, u, Descriptor{.mask_structure = true});
    Vector<std::uint64_t> t = Vector<std::uint64_t>::full(n, 0, ctx);
    reduce(t, no_mask, plus_op{}, plus_monoid{}, c);
    if (!options.degree_order) return t;
    // Back to A's numbering: vertex v of A is vertex position[v] of the ordered graph.
    std::vector<Index> position(n);
    for (Index q = 0; q < n; ++q) position[order[q]] = q;
    Vector<std::uint64_t> back(n, ctx);
    extract(back, no_mask, no_accum, t, position);
    return back;
}

}  // namespace hybla::algorithms
