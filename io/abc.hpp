// mcl's label format (--abc): one edge "label1 label2 [weight]" per line, fields separated by tabs or spaces.
//
// Labels are arbitrary strings without whitespace; vertices are numbered in order of first appearance (the
// first label of line 1 is vertex 0), and Graph::names.labels maps them back for output. A line without a
// weight has weight 1. As in mcl 22-282, a line whose first character other than white space is '#' is a
// comment ("  # note" too; a label may still hold '#' elsewhere, as "a#1" or a second field "#x"). Blank lines
// and CRLF line ends are allowed; gzip input is detected by content. A weight must be a finite number: nan,
// inf and infinity are refused with their line (mcl reads them as 1), a number beyond the type's range "does
// not fit". A file without edges (empty, or only comments and blank lines) is refused, as is a file starting
// with a UTF-8 byte-order mark (mcl would make it part of the first label).
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
