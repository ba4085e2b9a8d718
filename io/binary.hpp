// hybla's binary matrix format, for reloading large graphs without parsing text: a 64-byte header
// (magic "HYBLACSR", version, byte-order mark, value type tag and size, dimensions, number of entries, flags,
// vertex-name kind and size), then the CSR arrays as stored in memory (row offsets uint64, column indices
// uint32, values), then optionally the vertex names of a Graph (int64 ids, or labels as uint32 length + bytes).
// Files are in the writer's byte order, which the mark checks. A name ending in ".gz" is written gzip-compressed;
// reading detects gzip by content.
//
// Reading refuses, with an IoError naming the file, a wrong magic, another version, another byte order, a value
// type other than the requested T (no conversion), a truncated file or trailing bytes, and arrays that break
// the CSR invariants (bad offsets, unsorted or out-of-range columns). It trusts nothing else either, so that a
// damaged or hand-made file cannot give wrong output without a word (positions count from 0):
//   - a NaN or infinite value (as the text readers refuse them);
//   - the undirected flag on a matrix that is not symmetric in structure and values: the flag is checked, not
//     acted on (nothing is symmetrised), since it is a promise that programs rely on;
//   - vertex names that are not one per vertex; ids that are negative or not strictly increasing (so no
//     duplicates); labels that are empty, hold whitespace (space, tab, CR, LF, VT, FF) or repeat.
// write_binary refuses (InvalidValue, before creating the file) what the reader would refuse.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/matrix.hpp"
#include "io/graph.hpp"

namespace hybla::io {

namespace detail {
struct BinaryContents {
    Index nrows = 0, ncols = 0;
    Array<Offset> offsets;
    Array<ColIndex> indices;
    VertexNames names;
    bool undirected = false;
};
// The values go to the buffer that alloc_values(nvals) returns (sized for nvals values of type).
BinaryContents read_binary(const std::string& path, ValueType type, const std::function<void*(std::size_t)>& alloc_values);
void write_binary(const std::string& path, const CsrView& a, const VertexNames* names, bool undirected);
// What the reader refuses in valid CSR arrays (a value that is not finite, an undirected flag that the matrix
// does not bear out), or empty.
std::string value_problem(const CsrView& a, bool undirected);

template <class T>
Graph<T> read_binary_graph(const std::string& path) {
    Array<T> vals;
    BinaryContents c = read_binary(path, value_type_of<T>(), [&](std::size_t n) -> void* {
        vals = Array<T>(n);
        return vals.data();
    });
    Graph<T> g;
    try {
        g.matrix =
            Matrix<T>::import_csr(c.nrows, c.ncols, std::move(c.offsets), std::move(c.indices), std::move(vals), true);
    } catch (const Error& e) {
        throw IoError(path, 0, std::string("corrupt matrix data: ") + e.what());
    }
    if (const std::string problem = value_problem(csr_view(g.matrix), c.undirected); !problem.empty())
        throw IoError(path, 0, "corrupt matrix data: " + problem);
    if (!(g.matrix.context() == default_context())) g.matrix = g.matrix.to(default_context());
    g.names = std::move(c.names);
    g.undirected = c.undirected;
    return g;
}
}  // namespace detail

template <class T>
Matrix<T> read_binary(const std::string& path) {
    return std::move(detail::read_binary_graph<T>(path).matrix);
}

// The matrix with the vertex names and the undirected flag, as written by write_binary(path, graph).
template <class T>
Graph<T> read_binary_graph(const std::string& path) {
    return detail::read_binary_graph<T>(path);
}

template <class T>
void write_binary(const std::string& path, const Matrix<T>& a) {
    Matrix<T> tmp;
    detail::write_binary(path, detail::csr_view(detail::host_copy(a, tmp)), nullptr, false);
}

template <class T>
void write_binary(const std::string& path, const Graph<T>& g) {
    Matrix<T> tmp;
    detail::write_binary(path, detail::csr_view(detail::host_copy(g.matrix, tmp)), &g.names, g.undirected);
}

}  // namespace hybla::io
