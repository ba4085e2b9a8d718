// Internal plumbing shared by the text readers and writers: input read in windows of whole lines (gzip detected
// by its magic bytes and decompressed as it is read, so memory follows the parsed tuples, not the file), splitting
// a window at line ends into chunks that are parsed in parallel, exact line numbers across windows, tokenising,
// number parsing with std::from_chars (locale-free), and value conversion with range checks. Not part of the
// public API.
//
// Rules every text reader shares: a file starting with a UTF-8 byte-order mark is refused (line 1); a line that
// does not fit in a window (64 MiB, its '\n' included) is refused with its number, so a file of NUL bytes fails
// at once; a weight or value must be a finite number (nan, inf and infinity in any spelling are refused with
// their line; a finite number beyond the target type's range "does not fit"); gzip input is every member of the
// stream, as gzip -d reads it, and anything after the last member is refused.
#pragma once
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <tbb/parallel_for.h>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/error.hpp"
#include "io/graph.hpp"
#include "io/value_type.hpp"

namespace hybla::io::detail {

// The whole file, decompressed if it starts with the gzip magic bytes 1f 8b (whatever its name). For inputs
// that are not parsed line by line (the binary format, small side files).
Array<char> read_file(const std::string& path);

class ByteSource;

// A text file as consecutive windows of whole lines, each at most text_window_bytes() long: the buffer holds one
// window and the incomplete line after it, which begins the next window. Windows start at 1 MiB (reading a
// header stays cheap) and double up to the limit. Line numbers run on across windows.
// Throws IoError for a file that cannot be opened or is not a regular file, corrupt gzip data, trailing data
// after the gzip stream, a UTF-8 byte-order mark at the start, and a line longer than the window.
class TextInput {
public:
    explicit TextInput(const std::string& path);
    ~TextInput();
    TextInput(const TextInput&) = delete;
    TextInput& operator=(const TextInput&) = delete;

    // Moves to the next window; false at the end of the input (an empty file has no window).
    bool next();
    // The current window: whole lines, each ending in '\n' except perhaps the last line of the file.
    const char* data() const { return buf_.data(); }
    std::size_t size() const { return size_; }
    std::size_t first_line() const { return first_line_; }
    // Once next() has returned false: the number a line after the last one would have (where "file ends early"
    // errors point).
    std::size_t line_after_end() const { return next_line_; }
    const std::string& path() const { return path_; }
    // Frees the buffer and closes the file once the text is parsed (the tuples are then assembled).
    void close();

private:
    void allocate(std::size_t capacity);
    std::string path_;
    std::unique_ptr<ByteSource> src_;
    Array<char> buf_;
    std::size_t limit_ = 0;
    std::size_t filled_ = 0;  // bytes in the buffer: the window, then the start of the next one
    std::size_t size_ = 0;
    std::size_t first_line_ = 1, next_line_ = 1;
    bool eof_ = false, started_ = false;
};

// The largest window: a line must fit in it. Tests set it tiny so that small files span many windows; 0 restores
// the default (64 MiB).
void set_text_window_bytes(std::size_t bytes);
std::size_t text_window_bytes();
// The largest window buffer any TextInput has held since the last reset (tests check that memory follows the
// window, not the file).
std::size_t peak_text_window_bytes();
void reset_peak_text_window_bytes();

// Target size of one parse chunk. Tests set it tiny so that small files cross many chunk boundaries; 0 restores
// the default.
void set_parse_chunk_bytes(std::size_t bytes);
std::size_t parse_chunk_bytes();

// A run of whole lines [begin, end) of the buffer; first_line is the 1-based number of its first line.
struct Chunk {
    std::size_t begin = 0, end = 0;
    std::size_t first_line = 1;
};

// Cuts [begin, end) after line ends into chunks of about parse_chunk_bytes(); line numbers come from a
// parallel newline count and a prefix sum, so they are exact whatever the chunking.
std::vector<Chunk> split_lines(const char* data, std::size_t begin, std::size_t end, std::size_t first_line);

// A parse error inside a chunk; the readers turn the earliest one in file order into an IoError.
struct LineError {
    std::size_t line;
    std::string reason;
};

// ' ', and '\t' '\n' '\v' '\f' '\r' (codes 9..13) in one comparison; '\n' never occurs inside a line.
inline bool is_space(char c) { return c == ' ' || static_cast<unsigned char>(c - '\t') < 5; }

// Calls f(line_number, line) for every line of the chunk (without the '\n'); stops early when f returns false.
template <class F>
void for_each_line(const char* data, const Chunk& c, F&& f) {
    const char* p = data + c.begin;
    const char* const e = data + c.end;
    std::size_t line = c.first_line;
    while (p < e) {
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', std::size_t(e - p)));
        const char* le = nl ? nl : e;
        if (!f(line, std::string_view(p, std::size_t(le - p)))) return;
        ++line;
        p = nl ? nl + 1 : e;
    }
}

// The first non-space character of the line (as unsigned char), or -1 for a blank line. A NUL byte is not
// blank: garbage must fail, not vanish.
inline int first_char(std::string_view s) {
    for (char c : s)
        if (!is_space(c)) return static_cast<unsigned char>(c);
    return -1;
}

// Whole-token decimal integer with an optional sign ('+' too: C's scanf accepts it and some writers emit it).
// Hand-rolled because indices dominate the parse time and std::from_chars handles every base.
inline bool parse_int(std::string_view s, std::int64_t& v, bool* out_of_range = nullptr) {
    const char* p = s.data();
    const char* const e = p + s.size();
    if (out_of_range) *out_of_range = false;
    const bool negative = p < e && *p == '-';
    if (p < e && (*p == '-' || *p == '+')) ++p;
    if (p == e) return false;
    std::uint64_t u = 0;
    bool overflow = false;
    for (; p < e; ++p) {
        const unsigned d = static_cast<unsigned char>(*p - '0');
        if (d > 9) return false;
        overflow |= u > (std::numeric_limits<std::uint64_t>::max() - d) / 10;
        u = u * 10 + d;
    }
    const std::uint64_t limit = negative ? std::uint64_t(1) << 63 : (std::uint64_t(1) << 63) - 1;
    if (overflow || u > limit) {
        if (out_of_range) *out_of_range = true;
        return false;
    }
    v = negative ? std::int64_t(0 - u) : std::int64_t(u);
    return true;
}

// Whole-token floating-point number (decimal or scientific; also inf and nan, which ValueParser refuses); a leading
// '+' is accepted.
template <class F>
bool parse_floating(std::string_view s, F& v, bool* out_of_range = nullptr) {
    const char* b = s.data();
    const char* e = b + s.size();
    if (b < e && *b == '+' && e - b > 1 && b[1] != '-' && b[1] != '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v, std::chars_format::general);
    if (out_of_range) *out_of_range = ec == std::errc::result_out_of_range && p == e;
    return ec == std::errc() && p == e && b < e;
}
inline bool parse_double(std::string_view s, double& v, bool* out_of_range = nullptr) {
    return parse_floating(s, v, out_of_range);
}

// Splits a line into fields separated by whitespace, or (with commas) by one comma with optional whitespace
// around it, so "1, 2" and "1,2" are two fields and "1,,2" has an empty field (an error, never skipped).
class Fields {
public:
    Fields(std::string_view line, bool commas, std::size_t line_no)
        : p_(line.data()), e_(line.data() + line.size()), commas_(commas), line_(line_no) {
        skip_space();
        if (commas_ && p_ < e_ && *p_ == ',') throw LineError{line_, "empty field"};
    }
    // The next field, or false at the end of the line.
    bool next(std::string_view& tok) {
        if (p_ >= e_) return false;
        const char* b = p_;
        while (p_ < e_ && !is_delimiter(*p_)) ++p_;
        tok = std::string_view(b, std::size_t(p_ - b));
        skip_separator();
        return true;
    }
    // The next field parsed as an integer in the same pass over its characters (indices are most of a file, so
    // scanning them twice shows). ok: whether the whole field is a valid int64 (as parse_int decides).
    bool next_int(std::string_view& tok, std::int64_t& v, bool& ok, bool* out_of_range = nullptr) {
        if (p_ >= e_) return false;
        const char* b = p_;
        std::uint64_t u = 0;
        const char* q = p_;
        while (q < e_ && static_cast<unsigned char>(*q - '0') <= 9 && q - b < 18) u = u * 10 + unsigned(*q++ - '0');
        if (q > b && (q == e_ || is_delimiter(*q))) {  // up to 18 digits cannot overflow
            p_ = q;
            v = std::int64_t(u);
            ok = true;
            if (out_of_range) *out_of_range = false;
        } else {  // signs, long numbers and errors take the general route
            while (p_ < e_ && !is_delimiter(*p_)) ++p_;
            ok = parse_int(std::string_view(b, std::size_t(p_ - b)), v, out_of_range);
            q = p_;
        }
        p_ = q;
        tok = std::string_view(b, std::size_t(p_ - b));
        skip_separator();
        return true;
    }
    // The same for a floating-point field.
    template <class F>
    bool next_floating(std::string_view& tok, F& v, bool& ok, bool* out_of_range = nullptr) {
        if (p_ >= e_) return false;
        const char* b = p_;
        const char* s = b < e_ && *b == '+' && e_ - b > 1 && b[1] != '-' && b[1] != '+' ? b + 1 : b;
        auto [q, ec] = std::from_chars(s, e_, v, std::chars_format::general);
        if (ec == std::errc() && q > s && (q == e_ || is_delimiter(*q))) {
            p_ = q;
            ok = true;
            if (out_of_range) *out_of_range = false;
        } else {
            while (p_ < e_ && !is_delimiter(*p_)) ++p_;
            ok = parse_floating(std::string_view(b, std::size_t(p_ - b)), v, out_of_range);
        }
        tok = std::string_view(b, std::size_t(p_ - b));
        skip_separator();
        return true;
    }
    std::size_t count_rest() {
        std::size_t n = 0;
        std::string_view t;
        while (next(t)) ++n;
        return n;
    }
    std::size_t line() const { return line_; }

private:
    bool is_delimiter(char c) const { return is_space(c) || (commas_ && c == ','); }
    void skip_space() {
        while (p_ < e_ && is_space(*p_)) ++p_;
    }
    // After a field: whitespace, and with commas one comma that must be followed by a field.
    void skip_separator() {
        skip_space();
        if (commas_ && p_ < e_ && *p_ == ',') {
            ++p_;
            skip_space();
            if (p_ >= e_ || *p_ == ',') throw LineError{line_, "empty field"};
        }
    }
    const char* p_;
    const char* e_;
    bool commas_;
    std::size_t line_;
};

// The token in quotes for a message, shortened if long, with control and non-ASCII bytes as \xNN so that
// garbage in a file stays visible and printable.
inline std::string quoted(std::string_view s) {
    constexpr std::size_t max_shown = 40;
    std::string r(1, '\'');
    for (char c : s.substr(0, max_shown)) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) {
            r.push_back(c);
        } else {
            constexpr char hex[] = "0123456789abcdef";
            r += "\\x";
            r.push_back(hex[u >> 4]);
            r.push_back(hex[u & 15]);
        }
    }
    if (s.size() > max_shown) r.append("...");
    r.push_back('\'');
    return r;
}

// Parses value tokens for a target type: integers stay exact in int64 (for integral and bool targets; uint64_t
// values above 2^63-1 are kept as the int64 with the same bits), floating
// targets get doubles; anything the target cannot hold exactly (a fraction for an integer type, a value out of
// range) is an error naming the type, never clamped; nan and infinities are refused for every type.
class ValueParser {
public:
    explicit ValueParser(ValueType t);
    bool floating() const { return floating_; }

    // what: "value" or "weight", used in messages. integer_only: the file says the values are integers.
    // check_negation: the value will also be stored negated (skew-symmetric mirror), which must fit too.
    // Parses the next field of f; false if there is none.
    template <class Out>
    bool parse_next(Fields& f, const char* what, bool integer_only, bool check_negation, Out& out) const {
        std::string_view tok;
        if (floating_ && !integer_only) {
            // Straight to the target type, in one pass: parsing as an integer first would turn "-0" into +0,
            // and parsing a float as double first could round twice.
            bool ok = false, range = false;
            double d = 0;
            float x = 0;
            if (!(single_ ? f.next_floating(tok, x, ok, &range) : f.next_floating(tok, d, ok, &range))) return false;
            if (!ok) {
                if (range) throw LineError{f.line(), std::string(what) + " " + quoted(tok) + " does not fit " + name_};
                throw LineError{f.line(), std::string(what) + " " + quoted(tok) + " is not a number"};
            }
            if (single_) d = x;
            if (!std::isfinite(d)) throw not_finite(what, tok, f.line());
            out.reals.push_back(d);
            return true;
        }
        if (!f.next(tok)) return false;
        parse(tok, what, integer_only, check_negation, f.line(), out);
        return true;
    }

    template <class Out>
    void parse(std::string_view tok, const char* what, bool integer_only, bool check_negation, std::size_t line,
               Out& out) const {
        if (floating_ && !integer_only) {
            // Straight to the target type: parsing as an integer first would turn "-0" into +0, and parsing a
            // float as double first could round twice.
            double d = 0;
            float f = 0;
            bool range = false;
            if (!(single_ ? parse_floating(tok, f, &range) : parse_floating(tok, d, &range))) {
                if (range) throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit " + name_};
                throw LineError{line, std::string(what) + " " + quoted(tok) + " is not a number"};
            }
            if (single_) d = f;
            if (!std::isfinite(d)) throw not_finite(what, tok, line);
            out.reals.push_back(d);
            return;
        }
        std::int64_t iv = 0;
        bool iv_range = false;
        const bool is_int = parse_int(tok, iv, &iv_range);
        if (unsigned64_ && !is_int && iv_range) {
            // Above 2^63-1: only uint64_t holds it. Stored as the int64 with the same bits; the cast back to
            // uint64_t restores it.
            std::uint64_t u = 0;
            const char* b = tok.data() + (tok[0] == '+' ? 1 : 0);
            auto [p, ec] = std::from_chars(b, tok.data() + tok.size(), u);
            if (ec == std::errc() && p == tok.data() + tok.size()) {
                if (check_negation)
                    throw LineError{line, "negated " + std::string(what) + " " + quoted(tok) + " does not fit " + name_};
                out.ints.push_back(std::int64_t(u));
                return;
            }
        }
        if (integer_only && !is_int) {
            if (iv_range) throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit int64_t"};
            throw LineError{line, std::string(what) + " " + quoted(tok) + " is not an integer"};
        }
        if (floating_) {
            out.reals.push_back(double(iv));
            return;
        }
        if (!is_int) {
            double d;
            bool range = false;
            if (!parse_double(tok, d, &range)) {
                if (range) throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit " + name_};
                throw LineError{line, std::string(what) + " " + quoted(tok) + " is not a number"};
            }
            if (!std::isfinite(d)) throw not_finite(what, tok, line);
            if (boolean_) {
                out.ints.push_back(d != 0 ? 1 : 0);
                return;
            }
            // 2^63 and 2^64 are exact in double; [-2^63, 2^63) is the int64 range.
            if (unsigned64_ && d == std::trunc(d) && d >= 9223372036854775808.0 && d < 18446744073709551616.0 &&
                !check_negation) {
                out.ints.push_back(std::int64_t(std::uint64_t(d)));
                return;
            }
            if (!(d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0))
                throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit " + name_};
            iv = std::int64_t(d);
        }
        if (boolean_) {
            out.ints.push_back(iv != 0 ? 1 : 0);
            return;
        }
        if (iv < lo_ || iv > hi_) throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit " + name_};
        if (check_negation && (iv == std::numeric_limits<std::int64_t>::min() || -iv < lo_ || -iv > hi_))
            throw LineError{line, "negated " + std::string(what) + " " + quoted(tok) + " does not fit " + name_};
        out.ints.push_back(iv);
    }

private:
    // One rule for every reader: nan and infinities are refused whatever the target type (mcl reads them as 1,
    // which hides a broken file); a finite number too large for the type is "does not fit" above.
    static LineError not_finite(const char* what, std::string_view tok, std::size_t line) {
        return LineError{line, std::string(what) + " " + quoted(tok) + " is not a finite number"};
    }
    bool floating_ = false, single_ = false, boolean_ = false, unsigned64_ = false;
    std::int64_t lo_ = 0, hi_ = 0;
    const char* name_ = "";
};

// Per-chunk parse results: tuples in file order and the first error, if any.
struct ChunkTuples {
    std::vector<Index> rows, cols;
    std::vector<double> reals;
    std::vector<std::int64_t> ints;
    std::size_t entries = 0;  // entries of the file (before any mirroring)
    std::optional<LineError> error;
};

// A chunk's vectors are reserved from its size in bytes; a chunk of mostly comments gives back what it did not use,
// so that memory follows the entries, not the file.
inline void release_unused(ChunkTuples& o) {
    auto trim = [](auto& v) {
        if (v.capacity() > 2 * v.size() + 1024) v.shrink_to_fit();
    };
    trim(o.rows);
    trim(o.cols);
    trim(o.reals);
    trim(o.ints);
}

// Throws the error of the earliest chunk that has one (chunks are in file order, and each keeps its first).
template <class ChunkVec>
void throw_first_error(const std::string& path, const ChunkVec& chunks) {
    for (const auto& c : chunks)
        if (c.error) throw IoError(path, c.error->line, c.error->reason);
}

// Concatenates chunk tuples in file order into t, renaming both endpoints with rename(chunk, id) and, when
// undirected, putting (v, u) right after every (u, v) with u != v. Chunk storage is released as it is copied.
template <class Rename>
void assemble(std::vector<ChunkTuples>& out, Rename&& rename, bool undirected, bool floating, bool pattern,
              Tuples& t) {
    std::vector<std::size_t> start(out.size() + 1, 0);
    tbb::parallel_for(std::size_t(0), out.size(), [&](std::size_t k) {
        std::size_t m = out[k].rows.size();
        if (undirected)
            for (std::size_t e = 0; e < out[k].rows.size(); ++e) m += out[k].rows[e] != out[k].cols[e];
        start[k + 1] = m;
    });
    for (std::size_t k = 0; k < out.size(); ++k) start[k + 1] += start[k];
    const std::size_t m = start.back();
    t.rows.resize(m);
    t.cols.resize(m);
    if (!pattern) (floating ? t.reals.resize(m) : t.ints.resize(m));
    tbb::parallel_for(std::size_t(0), out.size(), [&](std::size_t k) {
        ChunkTuples& o = out[k];
        std::size_t w = start[k];
        for (std::size_t e = 0; e < o.rows.size(); ++e) {
            const Index r = rename(k, o.rows[e]), c = rename(k, o.cols[e]);
            const int copies = undirected && o.rows[e] != o.cols[e] ? 2 : 1;
            for (int x = 0; x < copies; ++x, ++w) {
                t.rows[w] = x ? c : r;
                t.cols[w] = x ? r : c;
                if (!pattern) {
                    if (floating) t.reals[w] = o.reals[e];
                    else t.ints[w] = o.ints[e];
                }
            }
        }
        o = ChunkTuples();
    });
}

// Output file for the writers: gzip-compressed when the name ends in ".gz".
class OutFile {
public:
    explicit OutFile(const std::string& path);
    ~OutFile();
    OutFile(const OutFile&) = delete;
    OutFile& operator=(const OutFile&) = delete;
    void write(const char* data, std::size_t n);
    void write(std::string_view s) { write(s.data(), s.size()); }
    // Flushes and closes; reports a failed write (a full disk shows up here).
    void close();

private:
    std::string path_;
    std::FILE* f_ = nullptr;
    void* gz_ = nullptr;
};

bool ends_with_gz(const std::string& path);

}  // namespace hybla::io::detail
