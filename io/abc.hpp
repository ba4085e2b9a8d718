// mcl's label format (--abc): one edge "label1 label2 [weight]" per line, fields separated by tabs or spaces.
//
// Labels are arbitrary strings without whitespace; vertices are numbered in order of first appearance (the
// first label of line 1 is vertex 0), and Graph::names.labels maps them back for output. A line without a
// weight has weight 1. Blank lines and CRLF line ends are allowed; there are no comment lines (a label may
// start with '#'). gzip input is detected by content.
//
// Repeated edges (and, with options.undirected, the two directions of a pair) are combined with dup; the
// default first_op keeps the weight of the first line that names the edge. mcl itself symmetrises with max:
// read_abc<double>(path, {.undirected = true}, max_op{}) gives the matrix mcl clusters.
#pragma once
#include <string>
#include <vector>

#include "io/graph.hpp"

namespace hybla::io {

namespace detail {
Tuples parse_abc(const std::string& path, ValueType type, bool undirected, std::vector<std::string>& labels);
}

template <class T = double, class Dup = first_op>
Graph<T> read_abc(const std::string& path, const GraphReadOptions& options = {}, Dup dup = {}) {
    Graph<T> g;
    g.matrix = detail::build_from_tuples<T>(
        detail::parse_abc(path, value_type_of<T>(), options.undirected, g.names.labels), dup);
    g.undirected = options.undirected;
    return g;
}

}  // namespace hybla::io
