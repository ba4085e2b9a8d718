// Construction from tuples and transposition: counting sorts by row, stable, so duplicates are combined in input order.
#pragma once
#include <algorithm>
#include <numeric>
#include <span>
#include <string>

#include "engine/cpu/parallel.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cpu {

template <class T, class Dup>
Matrix<T> build_matrix(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                       std::span<const T> vals, Dup dup, bool dup_is_error) {
    const std::size_t n = rows.size();
    if (cols.size() != n || vals.size() != n)
        throw InvalidValue("build: got " + std::to_string(rows.size()) + " row indices, " +
                           std::to_string(cols.size()) + " column indices and " + std::to_string(vals.size()) +
                           " values; the three must be equally long");
    for (std::size_t k = 0; k < n; ++k)
        if (rows[k] >= nrows || cols[k] >= ncols)
            throw InvalidIndex("build: tuple " + std::to_string(k) + " is (" + std::to_string(rows[k]) + ", " +
                               std::to_string(cols[k]) + "), outside a " + detail::shape(nrows, ncols) + " matrix");
    // Counting sort by row keeps input order within a row.
    Array<Offset> counts(nrows + 1, Offset(0));
    for (std::size_t k = 0; k < n; ++k) ++counts[rows[k]];
    Array<Offset> start(nrows + 1);
    prefix_sum(counts.data(), start.data(), nrows);
    Array<Offset> cursor(start);
    Array<ColIndex> c1(n);
    Array<T> v1(n);
    for (std::size_t k = 0; k < n; ++k) {
        Offset p = cursor[rows[k]]++;
        c1[p] = ColIndex(cols[k]);
        v1[p] = vals[k];
    }
    // Per row: stable sort by column, then combine duplicates left to right.
    Array<Offset> kept(nrows + 1);
    parallel_rows_by_work(start.data(), nrows, [&](Index i) {
        Offset b = start[i], e = start[i + 1];
        if (e - b > 1) {
            bool sorted = true;
            for (Offset p = b + 1; p < e && sorted; ++p) sorted = c1[p - 1] < c1[p];
            if (!sorted) {
                std::vector<Offset> perm(e - b);
                std::iota(perm.begin(), perm.end(), b);
                std::stable_sort(perm.begin(), perm.end(), [&](Offset x, Offset y) { return c1[x] < c1[y]; });
                std::vector<ColIndex> cs(e - b);
                std::vector<T> vs;
                vs.reserve(e - b);
                for (Offset q = 0; q < e - b; ++q) {
                    cs[q] = c1[perm[q]];
                    vs.push_back(v1[perm[q]]);
                }
                std::copy(cs.begin(), cs.end(), c1.begin() + b);
                std::copy(vs.begin(), vs.end(), v1.begin() + b);
            }
        }
        Offset w = b;
        for (Offset p = b; p < e; ++p) {
            if (w > b && c1[w - 1] == c1[p]) {
                if (dup_is_error)
                    throw InvalidValue("import_coo: duplicate entry (" + std::to_string(i) + ", " +
                                       std::to_string(c1[p]) + ")");
                v1[w - 1] = dup(v1[w - 1], v1[p]);
            } else {
                c1[w] = c1[p];
                v1[w] = v1[p];
                ++w;
            }
        }
        kept[i] = w - b;
    });
    Array<Offset> offsets(nrows + 1);
    prefix_sum(kept.data(), offsets.data(), nrows);
    if (offsets[nrows] == n)
        return Matrix<T>::import_csr(nrows, ncols, std::move(offsets), std::move(c1), std::move(v1), false);
    Array<ColIndex> c2(offsets[nrows]);
    Array<T> v2(offsets[nrows]);
    parallel_for_each(nrows, [&](Index i) {
        std::copy_n(c1.begin() + start[i], kept[i], c2.begin() + offsets[i]);
        std::copy_n(v1.begin() + start[i], kept[i], v2.begin() + offsets[i]);
    });
    return Matrix<T>::import_csr(nrows, ncols, std::move(offsets), std::move(c2), std::move(v2), false);
}

template <class T, class Dup>
Vector<T> build_vector(Index n, std::span<const Index> idx, std::span<const T> vals, Dup dup, bool dup_is_error) {
    std::vector<Index> zeros(idx.size(), 0);
    for (std::size_t k = 0; k < idx.size(); ++k)
        if (idx[k] >= n)
            throw InvalidIndex("build: index " + std::to_string(idx[k]) + " (tuple " + std::to_string(k) +
                               ") is outside a vector of size " + std::to_string(n));
    Matrix<T> col = build_matrix<T>(1, n, std::span<const Index>(zeros), idx, vals, dup, dup_is_error);
    auto csr = std::move(col).export_csr();
    Array<Index> ind(csr.indices.size());
    std::copy(csr.indices.begin(), csr.indices.end(), ind.begin());
    return Vector<T>::import_sparse(n, std::move(ind), std::move(csr.values), false);
}

// Aᵀ by a counting sort on columns: rows of the result come out sorted because A's rows are scanned in order.
template <class T>
Matrix<T> transpose(const Matrix<T>& a) {
    const Index m = a.nrows(), n = a.ncols();
    const auto off = a.row_offsets();
    const auto ci = a.col_indices();
    const auto v = a.values();
    Array<Offset> counts(n + 1, Offset(0));
    for (ColIndex j : ci) ++counts[j];
    Array<Offset> offsets(n + 1);
    prefix_sum(counts.data(), offsets.data(), n);
    Array<Offset> cursor(offsets);
    Array<ColIndex> rc(ci.size());
    Array<T> rv(ci.size());
    for (Index i = 0; i < m; ++i)
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            Offset q = cursor[ci[p]]++;
            rc[q] = ColIndex(i);
            rv[q] = v[p];
        }
    return Matrix<T>::import_csr(n, m, std::move(offsets), std::move(rc), std::move(rv), false);
}

}  // namespace hybla::cpu
