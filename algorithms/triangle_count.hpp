// Triangle counting on the public API: the undirected simple graph (direction, duplicates, weights and
// self-loops dropped), then Sandia's masked product C<L> = L ⊕.⊗ Uᵀ with plus_pair, where L and U are its
// strict lower and upper triangles: C(i, j) counts the k with j < k < i adjacent to both, so every triangle
// is counted exactly once.
#pragma once
#include <cstdint>

#include "engine/hybla.hpp"

namespace hybla::algorithms {

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

// Number of triangles of the undirected simple graph of A.
template <class T>
std::uint64_t triangle_count(const Matrix<T>& a) {
    Matrix<std::uint8_t> s = undirected_simple(a);
    const Index n = s.nrows();
    Matrix<std::uint8_t> l(n, n, s.context()), u(n, n, s.context());
    select(l, no_mask, no_accum, tril{-1}, s);
    select(u, no_mask, no_accum, triu{1}, s);
    Matrix<std::uint64_t> c(n, n, s.context());
    mxm(c, l, no_accum, plus_pair{}, l, u, Descriptor{.transpose_b = true, .mask_structure = true});
    return reduce(plus_monoid{}, c);
}

}  // namespace hybla::algorithms
