// Matrix Market (https://math.nist.gov/MatrixMarket/formats.html) reading and writing.
//
// Reading accepts the coordinate and array formats, fields real, integer and pattern (every entry 1), and
// symmetry general, symmetric and skew-symmetric, expanded to both triangles (skew: a(j,i) = -a(i,j); a stored
// diagonal entry is an error). complex and hermitian matrices are refused. The header is case-insensitive;
// comment lines (%) and blank lines are allowed anywhere after it; CRLF line ends and gzip input (detected by
// content, not by name) are accepted. An array file gives every entry, zeros included, as a stored entry.
// A symmetric file should store one triangle; an entry stored in both triangles becomes a duplicate.
// Duplicates are combined with dup, plus by default (as scipy and MATLAB read such files).
//
// Every malformed input is an IoError naming the file, the line and the reason (wrong header, bad size line,
// an index out of range, a token that is not a number, fewer or more entries than the size line says, a value
// the requested type cannot hold exactly, ...). A value must be a finite number: nan, inf, infinity (any case,
// any sign) are refused with their line whatever the requested type, coordinate or array, and a number beyond
// the requested type's range (1e400 for double, 1e39 for float) "does not fit". A file starting with a UTF-8 byte-order mark is refused.
// The file is read in windows of whole lines, decompressed as it is read, and each window is parsed in
// parallel chunks (see io/text.hpp), so memory follows the entries, not the file. A size line with 0 entries is
// a valid empty matrix.
//
// Writing produces the coordinate general format: field integer for integral and bool T, real for float and
// double (shortest representation that reads back to the identical value), or pattern on request. A name
// ending in ".gz" is written gzip-compressed. A NaN or infinite value is refused (InvalidValue, before the file
// is created): the reader would refuse it.
#pragma once
#include <string>

#include "engine/matrix.hpp"
#include "io/graph.hpp"
#include "io/value_type.hpp"

namespace hybla::io {

struct MatrixMarketHeader {
    enum class Format { coordinate, array };
    enum class Field { real, integer, pattern };
    enum class Symmetry { general, symmetric, skew_symmetric };
    Format format = Format::coordinate;
    Field field = Field::real;
    Symmetry symmetry = Symmetry::general;
    Index nrows = 0, ncols = 0;
    Index nentries = 0;  // entries stored in the file (coordinate) or values listed (array)
};

// Reads only the header and the size line (cheap on large files).
MatrixMarketHeader read_matrix_market_header(const std::string& path);

namespace detail {
// symmetrise: also mirror a general square matrix (for read_graph's undirected option).
Tuples parse_matrix_market(const std::string& path, ValueType type, bool symmetrise = false);

}  // namespace detail

template <class T = double, class Dup = plus_op>
Matrix<T> read_matrix_market(const std::string& path, Dup dup = {}) {
    return detail::build_from_tuples<T>(detail::parse_matrix_market(path, value_type_of<T>()), dup);
}

struct MatrixMarketWriteOptions {
    bool pattern = false;  // write the structure only (field pattern)
    std::string comment;   // written as '%' lines after the header; may contain newlines
};

namespace detail {
void write_matrix_market(const std::string& path, const CsrView& a, const MatrixMarketWriteOptions& options);
}

template <class T>
void write_matrix_market(const std::string& path, const Matrix<T>& a, const MatrixMarketWriteOptions& options = {}) {
    Matrix<T> tmp;
    detail::write_matrix_market(path, detail::csr_view(detail::host_copy(a, tmp)), options);
}

}  // namespace hybla::io
