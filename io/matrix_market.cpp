#include "io/matrix_market.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "io/text.hpp"

namespace hybla::io {

namespace {

using detail::Chunk;
using detail::ChunkTuples;
using detail::Fields;
using detail::LineError;
using detail::quoted;
using Header = MatrixMarketHeader;

std::string lower(std::string_view s) {
    std::string r(s);
    for (char& c : r) c = char(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

// Reads the banner, the comments and the size line, one line at a time (they may span windows).
class HeaderReader {
public:
    explicit HeaderReader(const std::string& path) : path_(path) {}

    // Takes the next line of the file; true when it was the size line, which completes the header.
    bool feed(std::size_t line, std::string_view s) {
        if (!banner_) {
            banner_ = true;
            parse_banner(s);
            return false;
        }
        const int c = detail::first_char(s);
        if (c < 0 || c == '%') return false;
        parse_size(line, s);
        return true;
    }
    // The input ended before the size line; line_after_end: the number a further line would have.
    [[noreturn]] void fail_at_end(std::size_t line_after_end) const {
        if (!banner_) fail(1, "missing %%MatrixMarket header");
        fail(line_after_end, "missing size line");
    }
    const Header& header() const { return h_; }

private:
    [[noreturn]] void fail(std::size_t at, const std::string& reason) const { throw IoError(path_, at, reason); }

    void parse_banner(std::string_view s) {
        Header& h = h_;
        const char* banner_syntax = "expected '%%MatrixMarket matrix <format> <field> <symmetry>'";
        Fields f(s, false, 1);
        std::string_view tok;
        if (!f.next(tok) || lower(tok) != "%%matrixmarket") fail(1, "missing %%MatrixMarket header");
        std::string_view t[4];
        for (auto& x : t)
            if (!f.next(x)) fail(1, std::string("incomplete header: ") + banner_syntax);
        if (lower(t[0]) != "matrix") fail(1, "unsupported object " + quoted(t[0]) + " (only 'matrix' is supported)");
        const std::string fmt = lower(t[1]), field = lower(t[2]), sym = lower(t[3]);
        if (fmt == "coordinate") h.format = Header::Format::coordinate;
        else if (fmt == "array") h.format = Header::Format::array;
        else fail(1, "unknown format " + quoted(t[1]));
        if (field == "real" || field == "double") h.field = Header::Field::real;
        else if (field == "integer") h.field = Header::Field::integer;
        else if (field == "pattern") h.field = Header::Field::pattern;
        else if (field == "complex") fail(1, "complex matrices are not supported");
        else fail(1, "unknown field " + quoted(t[2]));
        if (sym == "general") h.symmetry = Header::Symmetry::general;
        else if (sym == "symmetric") h.symmetry = Header::Symmetry::symmetric;
        else if (sym == "skew-symmetric") h.symmetry = Header::Symmetry::skew_symmetric;
        else if (sym == "hermitian") fail(1, "hermitian matrices are not supported");
        else fail(1, "unknown symmetry " + quoted(t[3]));
        if (f.next(tok)) fail(1, "unexpected " + quoted(tok) + " after the header");
        if (h.format == Header::Format::array && h.field == Header::Field::pattern)
            fail(1, "the array format cannot be pattern");
        if (h.symmetry == Header::Symmetry::skew_symmetric && h.field == Header::Field::pattern)
            fail(1, "a pattern matrix cannot be skew-symmetric");
    }

    void parse_size(std::size_t line, std::string_view s) {
        Header& h = h_;
        const bool coord = h.format == Header::Format::coordinate;
        const std::string expected = coord ? "invalid size line: expected 'rows columns entries'"
                                           : "invalid size line: expected 'rows columns'";
        Fields f(s, false, line);
        std::int64_t v[3] = {0, 0, 0};
        const int want = coord ? 3 : 2;
        std::string_view tok;
        for (int k = 0; k < want; ++k)
            if (!f.next(tok) || !detail::parse_int(tok, v[k]) || v[k] < 0) fail(line, expected);
        if (f.next(tok)) fail(line, expected);
        h.nrows = Index(v[0]);
        h.ncols = Index(v[1]);
        if (h.nrows > max_dimension) fail(line, "number of rows " + std::to_string(h.nrows) + " exceeds 2^32");
        if (h.ncols > max_dimension) fail(line, "number of columns " + std::to_string(h.ncols) + " exceeds 2^32");
        if (h.symmetry != Header::Symmetry::general && h.nrows != h.ncols)
            fail(line, std::string(h.symmetry == Header::Symmetry::symmetric ? "symmetric" : "skew-symmetric") +
                           " matrix must be square, got " + std::to_string(h.nrows) + "x" + std::to_string(h.ncols));
        if (coord) {
            h.nentries = Index(v[2]);
        } else {
            const unsigned __int128 n = h.nrows;
            unsigned __int128 count = h.symmetry == Header::Symmetry::general ? n * h.ncols
                                      : h.symmetry == Header::Symmetry::symmetric ? n * (n + 1) / 2
                                      : (n == 0 ? 0 : n * (n - 1) / 2);
            if (count > (unsigned __int128)(std::uint64_t(1) << 62))
                fail(line, "array matrix " + std::to_string(h.nrows) + "x" + std::to_string(h.ncols) + " is too large");
            h.nentries = Index(count);
        }
    }

    std::string path_;
    Header h_;
    bool banner_ = false;
};

// Reads windows up to the size line. The current window of in then holds the body from offset begin, whose first
// line is body_line.
Header read_header(detail::TextInput& in, std::size_t& begin, std::size_t& body_line) {
    HeaderReader hr(in.path());
    while (in.next()) {
        bool done = false;
        const Chunk all{0, in.size(), in.first_line()};
        detail::for_each_line(in.data(), all, [&](std::size_t line, std::string_view s) {
            if (!hr.feed(line, s)) return true;
            begin = std::min(in.size(), std::size_t(s.data() + s.size() - in.data()) + 1);
            body_line = line + 1;
            done = true;
            return false;
        });
        if (done) return hr.header();
    }
    hr.fail_at_end(in.line_after_end());
}

// The line of the k-th entry (1-based) of a chunk.
std::size_t line_of_entry(const char* d, const Chunk& c, std::size_t k) {
    std::size_t found = 0, at = 0;
    detail::for_each_line(d, c, [&](std::size_t line, std::string_view s) {
        const int ch = detail::first_char(s);
        if (ch < 0 || ch == '%') return true;
        if (++found == k) {
            at = line;
            return false;
        }
        return true;
    });
    return at;
}

}  // namespace

namespace detail {

Tuples parse_matrix_market(const std::string& path, ValueType type, bool symmetrise) {
    TextInput in(path);
    std::size_t begin = 0, body_line = 1;
    const Header h = read_header(in, begin, body_line);
    const bool coord = h.format == Header::Format::coordinate;
    const bool pattern = h.field == Header::Field::pattern;
    const bool integer_only = h.field == Header::Field::integer;
    const bool skew = h.symmetry == Header::Symmetry::skew_symmetric;
    if (symmetrise && h.nrows != h.ncols)
        throw IoError(path, body_line - 1, "an undirected graph needs a square matrix, got " + std::to_string(h.nrows) +
                                          "x" + std::to_string(h.ncols));
    const bool mirror = h.symmetry != Header::Symmetry::general || symmetrise;
    const ValueParser vp(type);

    std::vector<ChunkTuples> out;
    std::size_t total = 0;  // entries of the windows before
    for (;;) {
        const char* d = in.data();
        const std::vector<Chunk> chunks = split_lines(d, begin, in.size(), body_line);
        const std::size_t first = out.size();
        out.resize(first + chunks.size());
        tbb::parallel_for(std::size_t(0), chunks.size(), [&](std::size_t k) {
            ChunkTuples& o = out[first + k];
            // Entry lines are rarely shorter than 16 bytes; reserving avoids regrowing four vectors per chunk.
            const std::size_t guess = (chunks[k].end - chunks[k].begin) / 16 * (mirror ? 2 : 1);
            if (coord) {
                o.rows.reserve(guess);
                o.cols.reserve(guess);
            }
            if (!pattern) (vp.floating() ? o.reals.reserve(guess) : o.ints.reserve(guess));
            try {
                for_each_line(d, chunks[k], [&](std::size_t line, std::string_view s) {
                    const int c = first_char(s);
                    if (c < 0 || c == '%') return true;
                    Fields f(s, false, line);
                    std::string_view tok;
                    if (!coord) {
                        vp.parse_next(f, "value", integer_only, skew, o);
                        if (f.next(tok)) throw LineError{line, "unexpected extra field " + quoted(tok)};
                        ++o.entries;
                        return true;
                    }
                    std::int64_t i = 0, j = 0;
                    bool ok = false, range = false;
                    auto bad_index = [&](const char* which) {
                        return LineError{line, std::string(which) + " index " + quoted(tok) +
                                                   (range ? " does not fit int64_t" : " is not an integer")};
                    };
                    f.next_int(tok, i, ok, &range);
                    if (!ok) throw bad_index("row");
                    if (i < 1 || Index(i) > h.nrows)
                        throw LineError{line, "row index " + std::to_string(i) + " is out of range 1.." +
                                                  std::to_string(h.nrows)};
                    if (!f.next_int(tok, j, ok, &range)) throw LineError{line, "missing column index"};
                    if (!ok) throw bad_index("column");
                    if (j < 1 || Index(j) > h.ncols)
                        throw LineError{line, "column index " + std::to_string(j) + " is out of range 1.." +
                                                  std::to_string(h.ncols)};
                    if (skew && i == j) throw LineError{line, "diagonal entry in a skew-symmetric matrix"};
                    if (!pattern && !vp.parse_next(f, "value", integer_only, skew, o))
                        throw LineError{line, "missing value"};
                    if (f.next(tok)) throw LineError{line, "unexpected extra field " + quoted(tok)};
                    o.rows.push_back(Index(i - 1));
                    o.cols.push_back(Index(j - 1));
                    ++o.entries;
                    if (mirror && i != j) {
                        o.rows.push_back(Index(j - 1));
                        o.cols.push_back(Index(i - 1));
                        if (!pattern) {
                            if (vp.floating()) o.reals.push_back(skew ? -o.reals.back() : o.reals.back());
                            else o.ints.push_back(skew ? -o.ints.back() : o.ints.back());
                        }
                    }
                    return true;
                });
            } catch (LineError& e) {
                o.error = std::move(e);
            }
            release_unused(o);
        });

        // The entry count is checked in file order: a chunk's count is complete up to its first error, so the
        // first chunk that either overflows the declared count or has an error decides which error comes first.
        for (std::size_t k = 0; k < chunks.size(); ++k) {
            const ChunkTuples& o = out[first + k];
            // A line with an error is a data line too: if it lies beyond the declared count, that comes first.
            if (total + o.entries + (o.error ? 1 : 0) > h.nentries) {
                const std::size_t at = line_of_entry(d, chunks[k], h.nentries - total + 1);
                if (!o.error || at <= o.error->line)
                    throw IoError(path, at, "more entries than the " + std::to_string(h.nentries) +
                                                " declared in the size line");
            }
            if (o.error) throw IoError(path, o.error->line, o.error->reason);
            total += o.entries;
        }
        if (!in.next()) break;
        begin = 0;
        body_line = in.first_line();
    }
    if (total < h.nentries)
        throw IoError(path, in.line_after_end(),
                      "file ends after " + std::to_string(total) + " of " + std::to_string(h.nentries) + " entries");
    in.close();

    Tuples t;
    t.nrows = h.nrows;
    t.ncols = h.ncols;
    t.pattern = pattern;
    t.symmetric = h.symmetry == Header::Symmetry::symmetric || symmetrise;  // skew: a(j,i) = -a(i,j), not a graph's
    if (coord) {
        std::vector<std::size_t> start(out.size() + 1, 0);
        for (std::size_t k = 0; k < out.size(); ++k) start[k + 1] = start[k] + out[k].rows.size();
        const std::size_t m = start.back();
        t.rows.resize(m);
        t.cols.resize(m);
        if (!pattern) (vp.floating() ? t.reals.resize(m) : t.ints.resize(m));
        tbb::parallel_for(std::size_t(0), out.size(), [&](std::size_t k) {
            ChunkTuples& o = out[k];
            std::copy(o.rows.begin(), o.rows.end(), t.rows.begin() + std::ptrdiff_t(start[k]));
            std::copy(o.cols.begin(), o.cols.end(), t.cols.begin() + std::ptrdiff_t(start[k]));
            // Only the value array in use: offsetting the empty one's null begin() is undefined.
            if (!o.reals.empty()) std::copy(o.reals.begin(), o.reals.end(), t.reals.begin() + std::ptrdiff_t(start[k]));
            if (!o.ints.empty()) std::copy(o.ints.begin(), o.ints.end(), t.ints.begin() + std::ptrdiff_t(start[k]));
            o = ChunkTuples();
        });
        return t;
    }

    // Array format: values in column-major order (symmetric: the lower triangle with the diagonal; skew: the
    // strict lower triangle); positions follow from the value's rank, so they are assigned after concatenation.
    std::vector<double> reals;
    std::vector<std::int64_t> ints;
    for (ChunkTuples& o : out) {
        reals.insert(reals.end(), o.reals.begin(), o.reals.end());
        ints.insert(ints.end(), o.ints.begin(), o.ints.end());
        o = ChunkTuples();
    }
    std::size_t k = 0;
    auto emit = [&](Index i, Index j, bool negate) {
        t.rows.push_back(i);
        t.cols.push_back(j);
        if (vp.floating()) t.reals.push_back(negate ? -reals[k] : reals[k]);
        else t.ints.push_back(negate ? -ints[k] : ints[k]);
    };
    for (Index j = 0; j < h.ncols; ++j) {
        const Index first = h.symmetry == Header::Symmetry::general ? 0
                            : h.symmetry == Header::Symmetry::symmetric ? j
                                                                        : j + 1;
        for (Index i = first; i < h.nrows; ++i, ++k) {
            emit(i, j, false);
            if (mirror && i != j) emit(j, i, skew);
        }
    }
    return t;
}

}  // namespace detail

MatrixMarketHeader read_matrix_market_header(const std::string& path) {
    detail::TextInput in(path);
    std::size_t begin = 0, line = 1;
    return read_header(in, begin, line);
}

namespace detail {

namespace {

template <class T>
char* format_value(char* p, char* e, T v) {
    if constexpr (std::is_same_v<T, bool>) {
        *p = v ? '1' : '0';
        return p + 1;
    } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
        return std::to_chars(p, e, int(v)).ptr;
    } else {
        return std::to_chars(p, e, v).ptr;  // floating point: the shortest text that reads back identically
    }
}

template <class T>
void write_entries(OutFile& out, const CsrView& a, bool pattern) {
    const Index nnz = a.offsets[a.nrows];
    const T* vals = static_cast<const T*>(a.values);
    // Row blocks of about equal numbers of entries, formatted in parallel and written in order, a batch at a
    // time so that the text of a huge matrix never sits in memory whole.
    constexpr Offset block_entries = Offset(1) << 17;
    std::vector<Index> cuts{0};
    for (Offset target = block_entries; target < nnz; target += block_entries) {
        const Index r = Index(std::upper_bound(a.offsets, a.offsets + a.nrows + 1, target) - a.offsets) - 1;
        if (r > cuts.back()) cuts.push_back(r);
    }
    cuts.push_back(a.nrows);
    const std::size_t nblocks = cuts.size() - 1;
    const std::size_t batch = std::size_t(std::max(1, tbb::this_task_arena::max_concurrency())) * 4;
    std::vector<std::string> text(std::min(batch, nblocks));
    for (std::size_t b0 = 0; b0 < nblocks; b0 += batch) {
        const std::size_t b1 = std::min(nblocks, b0 + batch);
        tbb::parallel_for(b0, b1, [&](std::size_t b) {
            std::string& s = text[b - b0];
            s.clear();
            // Every to_chars gets the same limit well inside the buffer: a line needs at most 20 + 1 + 10 + 1 +
            // 24 + 1 characters, and the compiler can see that no write passes the end.
            char line[128];
            char* const lim = line + 96;
            for (Index i = cuts[b]; i < cuts[b + 1]; ++i)
                for (Offset p = a.offsets[i]; p < a.offsets[i + 1]; ++p) {
                    char* q = std::to_chars(line, lim, i + 1).ptr;
                    *q++ = ' ';
                    q = std::to_chars(q, lim, Index(a.indices[p]) + 1).ptr;
                    if (!pattern) {
                        *q++ = ' ';
                        q = format_value(q, lim, vals[p]);
                    }
                    *q++ = '\n';
                    s.append(line, std::size_t(q - line));
                }
        });
        for (std::size_t b = b0; b < b1; ++b) out.write(text[b - b0]);
    }
}

template <class T>
void check_finite(const CsrView& a) {
    const T* vals = static_cast<const T*>(a.values);
    for (Index i = 0; i < a.nrows; ++i)
        for (Offset p = a.offsets[i]; p < a.offsets[i + 1]; ++p)
            if (!std::isfinite(vals[p]))
                throw InvalidValue("write_matrix_market: entry " + std::to_string(p) + " (" + std::to_string(i) + ", " +
                                   std::to_string(a.indices[p]) + ") is " +
                                   (std::isnan(vals[p]) ? "NaN" : vals[p] > 0 ? "inf" : "-inf"));
}

}  // namespace

void write_matrix_market(const std::string& path, const CsrView& a, const MatrixMarketWriteOptions& options) {
    // What no reader accepts is refused before the file is created.
    if (!options.pattern && a.type == ValueType::float32) check_finite<float>(a);
    if (!options.pattern && a.type == ValueType::float64) check_finite<double>(a);
    OutFile out(path);
    const char* field = options.pattern ? "pattern" : is_floating(a.type) ? "real" : "integer";
    std::string head = std::string("%%MatrixMarket matrix coordinate ") + field + " general\n";
    if (!options.comment.empty()) {
        std::size_t b = 0;
        for (;;) {
            const std::size_t e = options.comment.find('\n', b);
            const std::string text = options.comment.substr(b, e == std::string::npos ? std::string::npos : e - b);
            head += (text.empty() ? "%" : "% " + text) + "\n";
            if (e == std::string::npos) break;
            b = e + 1;
        }
    }
    head += std::to_string(a.nrows) + " " + std::to_string(a.ncols) + " " + std::to_string(a.offsets[a.nrows]) + "\n";
    out.write(head);
    switch (a.type) {
        case ValueType::boolean: write_entries<bool>(out, a, options.pattern); break;
        case ValueType::int8: write_entries<std::int8_t>(out, a, options.pattern); break;
        case ValueType::int16: write_entries<std::int16_t>(out, a, options.pattern); break;
        case ValueType::int32: write_entries<std::int32_t>(out, a, options.pattern); break;
        case ValueType::int64: write_entries<std::int64_t>(out, a, options.pattern); break;
        case ValueType::uint8: write_entries<std::uint8_t>(out, a, options.pattern); break;
        case ValueType::uint16: write_entries<std::uint16_t>(out, a, options.pattern); break;
        case ValueType::uint32: write_entries<std::uint32_t>(out, a, options.pattern); break;
        case ValueType::uint64: write_entries<std::uint64_t>(out, a, options.pattern); break;
        case ValueType::float32: write_entries<float>(out, a, options.pattern); break;
        case ValueType::float64: write_entries<double>(out, a, options.pattern); break;
    }
    out.close();
}

}  // namespace detail
}  // namespace hybla::io
