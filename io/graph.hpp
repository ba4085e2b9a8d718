// What the graph readers return: the matrix and how to name its vertices in output, plus the tuple hand-over
// between the non-template parsers (io/*.cpp) and the thin templates that build Matrix<T>.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/cpu/build.hpp"
#include "engine/matrix.hpp"
#include "io/value_type.hpp"

namespace hybla::io {

// How vertex v (row/column v of the matrix) is called in the input, so that output can use the same names.
// Edge lists: original integer ids; mcl --abc files: labels; Matrix Market and binary files: v + 1.
struct VertexNames {
    std::vector<std::int64_t> ids;    // edge lists: ids[v], increasing
    std::vector<std::string> labels;  // abc: labels[v], in order of first appearance

    bool has_ids() const { return !ids.empty(); }
    bool has_labels() const { return !labels.empty(); }
    std::string name(Index v) const {
        if (!labels.empty()) return labels[v];
        if (!ids.empty()) return std::to_string(ids[v]);
        return std::to_string(v + 1);
    }
};

template <class T>
struct Graph {
    Matrix<T> matrix;
    VertexNames names;
    // The file declared the graph symmetric (Matrix Market symmetric, not skew-symmetric) or it was symmetrised
    // on request (GraphReadOptions::undirected).
    bool undirected = false;
};

struct GraphReadOptions {
    // Also store (v, u) for every edge (u, v): the graph is undirected. The two directions of a pair (and
    // repeated lines) are then duplicates, combined by the reader's dup operator; with the default first_op
    // the first line that names the pair, in either direction, sets the weight of both directions.
    bool undirected = false;
};

namespace detail {

// Tuples as the parsers produce them: 0-based, in file order, mirrored entries right after their original
// (so an order-sensitive dup such as first_op treats both directions alike). Values are exact: int64 for
// integral and bool targets (already range-checked for the target), double for float targets.
struct Tuples {
    Index nrows = 0, ncols = 0;
    std::vector<Index> rows, cols;
    std::vector<double> reals;
    std::vector<std::int64_t> ints;
    bool pattern = false;  // no values: every entry is 1
    bool symmetric = false;
};

// A matrix's CSR arrays with the value type as a tag, for the non-template writers.
struct CsrView {
    Index nrows = 0, ncols = 0;
    const Offset* offsets = nullptr;
    const ColIndex* indices = nullptr;
    const void* values = nullptr;
    ValueType type = ValueType::float64;
};
// a must be a CPU matrix (writers copy a GPU matrix down first: see host_copy).
template <class T>
CsrView csr_view(const Matrix<T>& a) {
    return CsrView{a.nrows(), a.ncols(), a.row_offsets().data(), a.col_indices().data(), a.values().data(),
                   value_type_of<T>()};
}

// The matrix itself when it lives on the CPU, else a host copy held in tmp.
template <class T>
const Matrix<T>& host_copy(const Matrix<T>& a, Matrix<T>& tmp) {
    if (a.context().is_cpu()) return a;
    tmp = a.to(Context::cpu());
    return tmp;
}

template <class T, class Dup>
Matrix<T> build_from_tuples(Tuples&& t, Dup dup) {
    const std::size_t n = t.rows.size();
    Array<T> vals(n);
    if (t.pattern) {
        for (std::size_t k = 0; k < n; ++k) vals[k] = T(1);
    } else if constexpr (std::is_floating_point_v<T>) {
        for (std::size_t k = 0; k < n; ++k) vals[k] = static_cast<T>(t.reals[k]);
    } else {
        for (std::size_t k = 0; k < n; ++k) vals[k] = static_cast<T>(t.ints[k]);
    }
    std::vector<double>().swap(t.reals);
    std::vector<std::int64_t>().swap(t.ints);
    return Matrix<T>::from_tuples(t.nrows, t.ncols, std::span<const Index>(t.rows), std::span<const Index>(t.cols),
                                  std::span<const T>(vals.data(), n), dup);
}

}  // namespace detail
}  // namespace hybla::io
