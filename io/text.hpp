// Internal plumbing shared by the text readers and writers: whole-file reading (gzip detected by its magic bytes),
// splitting at line ends into chunks that are parsed in parallel, exact line numbers, tokenising, number parsing
// with std::from_chars (locale-free), and value conversion with range checks. Not part of the public API.
#pragma once
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/error.hpp"
#include "io/value_type.hpp"

namespace hybla::io::detail {

// The whole file, decompressed if it starts with the gzip magic bytes 1f 8b (whatever its name).
Array<char> read_file(const std::string& path);

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

// The number that a line after the last one would have: where "file ends early" errors point.
std::size_t line_after_end(const char* data, std::size_t begin, std::size_t end, std::size_t first_line);

// A parse error inside a chunk; the readers turn the earliest one in file order into an IoError.
struct LineError {
    std::size_t line;
    std::string reason;
};

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

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

// The first non-space character of the line, or 0 for a blank line.
inline char first_char(std::string_view s) {
    for (char c : s)
        if (!is_space(c)) return c;
    return 0;
}

// Splits a line into fields separated by whitespace, or (with commas) by one comma with optional whitespace
// around it, so "1, 2" and "1,2" are two fields and "1,,2" has an empty field (an error, never skipped).
class Fields {
public:
    Fields(std::string_view line, bool commas, std::size_t line_no) : p_(line.data()), e_(line.data() + line.size()), commas_(commas), line_(line_no) {
        skip_space();
        if (commas_ && p_ < e_ && *p_ == ',') throw LineError{line_, "empty field"};
    }
    // The next field, or false at the end of the line.
    bool next(std::string_view& tok) {
        if (p_ >= e_) return false;
        const char* b = p_;
        while (p_ < e_ && !is_space(*p_) && !(commas_ && *p_ == ',')) ++p_;
        tok = std::string_view(b, std::size_t(p_ - b));
        skip_space();
        if (commas_ && p_ < e_ && *p_ == ',') {
            ++p_;
            skip_space();
            if (p_ >= e_ || *p_ == ',') throw LineError{line_, "empty field"};
        }
        return true;
    }
    std::size_t count_rest() {
        std::size_t n = 0;
        std::string_view t;
        while (next(t)) ++n;
        return n;
    }

private:
    void skip_space() {
        while (p_ < e_ && is_space(*p_)) ++p_;
    }
    const char* p_;
    const char* e_;
    bool commas_;
    std::size_t line_;
};

// Whole-token integer; a leading '+' is accepted (C's scanf accepts it and some writers emit it).
inline bool parse_int(std::string_view s, std::int64_t& v, bool* out_of_range = nullptr) {
    const char* b = s.data();
    const char* e = b + s.size();
    if (b < e && *b == '+' && e - b > 1 && b[1] >= '0' && b[1] <= '9') ++b;
    auto [p, ec] = std::from_chars(b, e, v);
    if (out_of_range) *out_of_range = ec == std::errc::result_out_of_range && p == e;
    return ec == std::errc() && p == e && b < e;
}

// Whole-token floating-point number (decimal or scientific, inf, nan); a leading '+' is accepted.
inline bool parse_double(std::string_view s, double& v, bool* out_of_range = nullptr) {
    const char* b = s.data();
    const char* e = b + s.size();
    if (b < e && *b == '+' && e - b > 1 && b[1] != '-' && b[1] != '+') ++b;
    auto [p, ec] = std::from_chars(b, e, v, std::chars_format::general);
    if (out_of_range) *out_of_range = ec == std::errc::result_out_of_range && p == e;
    return ec == std::errc() && p == e && b < e;
}

inline std::string quoted(std::string_view s) {
    constexpr std::size_t max_shown = 40;
    if (s.size() > max_shown) return "'" + std::string(s.substr(0, max_shown)) + "...'";
    return "'" + std::string(s) + "'";
}

// Parses value tokens for a target type: integers stay exact in int64 (for integral and bool targets), floating
// targets get doubles; anything the target cannot hold exactly (a fraction for an integer type, a value out of
// range) is an error naming the type, never clamped.
class ValueParser {
public:
    explicit ValueParser(ValueType t);
    bool floating() const { return floating_; }

    // what: "value" or "weight", used in messages. integer_only: the file says the values are integers.
    // check_negation: the value will also be stored negated (skew-symmetric mirror), which must fit too.
    template <class Out>
    void parse(std::string_view tok, const char* what, bool integer_only, bool check_negation, std::size_t line,
               Out& out) const {
        std::int64_t iv;
        bool iv_range = false;
        const bool is_int = parse_int(tok, iv, &iv_range);
        if (integer_only && !is_int) {
            if (iv_range) throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit int64_t"};
            throw LineError{line, std::string(what) + " " + quoted(tok) + " is not an integer"};
        }
        if (floating_) {
            double d;
            if (is_int) d = double(iv);
            else {
                bool range = false;
                if (!parse_double(tok, d, &range)) {
                    if (range) throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit " + name_};
                    throw LineError{line, std::string(what) + " " + quoted(tok) + " is not a number"};
                }
            }
            if (single_ && std::isfinite(d) && std::fabs(d) > double(std::numeric_limits<float>::max()))
                throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit " + name_};
            out.reals.push_back(d);
            return;
        }
        if (!is_int) {
            double d;
            bool range = false;
            if (!parse_double(tok, d, &range)) {
                if (range) throw LineError{line, std::string(what) + " " + quoted(tok) + " does not fit " + name_};
                throw LineError{line, std::string(what) + " " + quoted(tok) + " is not a number"};
            }
            if (boolean_) {
                out.ints.push_back(d != 0 ? 1 : 0);
                return;
            }
            // 2^63 is exact in double; [-2^63, 2^63) is the int64 range.
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
    bool floating_ = false, single_ = false, boolean_ = false;
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

// Throws the error of the earliest chunk that has one (chunks are in file order, and each keeps its first).
template <class ChunkVec>
void throw_first_error(const std::string& path, const ChunkVec& chunks) {
    for (const auto& c : chunks)
        if (c.error) throw IoError(path, c.error->line, c.error->reason);
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
