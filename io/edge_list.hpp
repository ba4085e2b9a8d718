// Edge lists in the style of SNAP and of CSV exports: one edge "u v" or "u v weight" per line.
//
// Fields are separated by whitespace or by a comma (with optional whitespace around it); lines starting with
// '#' or '%' are comments; blank lines and CRLF line ends are allowed; gzip input is detected by content.
// An optional header line (the first non-comment line when none of its fields is a number, e.g. "node_1,node_2")
// is skipped. The first edge line fixes the number of fields (2, or 3 with a weight); every edge line must have
// that many. Vertex ids are non-negative integers (up to 2^63-1).
//
// The vertices are the ids that occur, numbered 0..n-1 in increasing order of id (ids that are skipped in the
// file take no row); Graph::names.ids gives the original id of every vertex, so results can be written with
// the file's own ids. Without a weight column every edge has weight 1.
//
// Repeated edges (and, with options.undirected, the two directions of a pair) are combined with dup; the
// default first_op keeps the weight of the first line that names the edge, so repeated lines never add up.
// Pass plus_op to sum them or max_op to keep the largest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/graph.hpp"

namespace hybla::io {

namespace detail {
Tuples parse_edge_list(const std::string& path, ValueType type, bool undirected, std::vector<std::int64_t>& ids);
}

template <class T = double, class Dup = first_op>
Graph<T> read_edge_list(const std::string& path, const GraphReadOptions& options = {}, Dup dup = {}) {
    Graph<T> g;
    g.matrix = detail::build_from_tuples<T>(
        detail::parse_edge_list(path, value_type_of<T>(), options.undirected, g.names.ids), dup);
    g.undirected = options.undirected;
    return g;
}

}  // namespace hybla::io
