// Edge lists in the style of SNAP and of CSV exports: one edge "u v" or "u v weight" per line.
//
// Fields are separated by whitespace or by a comma (with optional whitespace around it); lines starting with
// '#' or '%' (after any white space) are comments; blank lines and CRLF line ends are allowed; gzip input is
// detected by content. The first non-comment line is skipped as a header only when it looks like one: every
// field is a word (an ASCII letter or '_', then letters, digits, '_', '-' or '.', as in "node_1,node_2" or
// "source target weight") and the first data line after it has as many fields (2 or 3). Any other line is an
// edge, so a damaged first edge fails with its line number instead of vanishing. The first edge line fixes the
// number of fields (2, or 3 with a weight); every edge line must have that many. Vertex ids are non-negative
// integers (up to 2^63-1). A weight must be a finite number: nan, inf and infinity are refused with their line,
// a number beyond the type's range "does not fit". A file without edges (empty, only comments and blank lines,
// or only a header) is refused, as is a file starting with a UTF-8 byte-order mark.
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
