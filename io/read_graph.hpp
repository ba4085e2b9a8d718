// read_graph: one entry point for every input format, chosen by the file name (a final ".gz" is ignored):
//   .mtx, .mm           Matrix Market          names: none (vertex v is v + 1)
//   .abc                mcl labels             names: labels
//   .bin, .hyb          hybla binary           names: as written
//   anything else       edge list (SNAP, CSV)  names: original ids
// Duplicates (in any format, and the two directions of a pair under options.undirected) are combined with dup,
// first_op by default: the first occurrence sets the weight. For Matrix Market files this differs from
// read_matrix_market, whose default sums duplicates as numerical readers do; graph files rarely have any.
#pragma once
#include <string>

#include "io/abc.hpp"
#include "io/binary.hpp"
#include "io/edge_list.hpp"
#include "io/graph.hpp"
#include "io/matrix_market.hpp"

namespace hybla::io {

enum class GraphFormat { matrix_market, edge_list, abc, binary };

GraphFormat graph_format_of(const std::string& path);

namespace detail {
// Adds (j, i) after every stored (i, j), i != j, in row order, and combines duplicates with dup.
template <class T, class Dup>
Matrix<T> symmetrise(const std::string& path, const Matrix<T>& a, Dup dup) {
    if (a.nrows() != a.ncols())
        throw IoError(path, 0, "an undirected graph needs a square matrix, got " + std::to_string(a.nrows()) + "x" +
                                   std::to_string(a.ncols()));
    const auto off = a.row_offsets();
    const auto ci = a.col_indices();
    const auto v = a.values();
    std::size_t m = 0;
    for (Index i = 0; i < a.nrows(); ++i)
        for (Offset p = off[i]; p < off[i + 1]; ++p) m += ci[p] != i ? 2 : 1;
    std::vector<Index> rows(m), cols(m);
    Array<T> vals(m);
    std::size_t w = 0;
    for (Index i = 0; i < a.nrows(); ++i)
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            rows[w] = i;
            cols[w] = ci[p];
            vals[w++] = v[p];
            if (ci[p] != i) {
                rows[w] = ci[p];
                cols[w] = i;
                vals[w++] = v[p];
            }
        }
    return Matrix<T>::from_tuples(a.nrows(), a.ncols(), std::span<const Index>(rows), std::span<const Index>(cols),
                                  std::span<const T>(vals.data(), m), dup);
}
}  // namespace detail

template <class T = double, class Dup = first_op>
Graph<T> read_graph(const std::string& path, const GraphReadOptions& options = {}, Dup dup = {}) {
    switch (graph_format_of(path)) {
        case GraphFormat::matrix_market: {
            detail::Tuples t = detail::parse_matrix_market(path, value_type_of<T>(), options.undirected);
            Graph<T> g;
            g.undirected = t.symmetric;
            g.matrix = detail::build_from_tuples<T>(std::move(t), dup);
            return g;
        }
        case GraphFormat::abc: return read_abc<T>(path, options, dup);
        case GraphFormat::binary: {
            Graph<T> g = read_binary_graph<T>(path);
            if (options.undirected && !g.undirected) {
                g.matrix = detail::symmetrise(path, g.matrix.to(Context::cpu()), dup);
                g.undirected = true;
            }
            return g;
        }
        case GraphFormat::edge_list: break;
    }
    return read_edge_list<T>(path, options, dup);
}

}  // namespace hybla::io
