// What the libFuzzer harnesses of tests/fuzz share (one harness per reader: fuzz_<reader>.cpp).
//
// A harness writes the input to a scratch file (one directory per process, under $TMPDIR), reads it with its
// reader for several value types, with and without the undirected option, and reads a gzip-compressed copy the
// same way. A hybla::Error is the expected answer to bad input; anything else is a finding and ends the process:
// a crash, a sanitizer report, an exception of another type, a read whose result or message differs between the
// plain file and its gzip copy, or a result that breaks the invariants of a matrix or a graph (fail() aborts).
// Which inputs a reader should refuse is left to the readers' own tests: a harness never asserts a refusal.
//
// The gzip copy is also read with tiny parse chunks (io/text.hpp), so that nearly every line boundary is a chunk
// boundary: results and messages must not depend on the chunking either.
//
// The same sources build two ways: with clang and -fsanitize=fuzzer (cmake -DHYBLA_FUZZ=ON; scripts/fuzz runs
// them), and with the normal compiler and replay_main.cpp, which ctest runs over tests/fuzz/corpus/<reader>/.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <unistd.h>
#include <zlib.h>

#include "io/io.hpp"
#include "io/text.hpp"

namespace hybla::fuzz {

using io::Graph;
using io::VertexNames;

// Larger inputs are skipped: they find nothing the small ones do not, and slow the search down.
inline constexpr std::size_t max_input_bytes = std::size_t(1) << 20;
// The chunk size of the second read: shorter than most lines, so that most chunks hold a single line.
inline constexpr std::size_t tiny_chunk_bytes = 7;

[[noreturn]] inline void fail(const std::string& what) {
    std::fprintf(stderr, "hybla fuzz: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

// s with control and non-ASCII bytes escaped, cut after max bytes: outcomes in a failure message.
inline std::string printable(std::string_view s, std::size_t max = 300) {
    std::string r;
    for (std::size_t k = 0; k < s.size() && k < max; ++k) {
        const unsigned char c = static_cast<unsigned char>(s[k]);
        if (c >= 32 && c < 127 && c != '\\') {
            r += char(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            r += buf;
        }
    }
    if (s.size() > max) r += "...";
    return r;
}

// The process's scratch directory; removed at exit (a crash leaves it: scripts/fuzz points TMPDIR at a folder of
// its own).
class Scratch {
public:
    static Scratch& get() {
        static Scratch s;
        return s;
    }
    // dir/name, removed at exit.
    std::string path(const std::string& name) {
        const std::string p = dir_ + "/" + name;
        if (std::find(files_.begin(), files_.end(), p) == files_.end()) files_.push_back(p);
        return p;
    }
    ~Scratch() {
        for (const std::string& f : files_) ::unlink(f.c_str());
        ::rmdir(dir_.c_str());
    }

private:
    Scratch() {
        const char* t = std::getenv("TMPDIR");
        std::string tmpl = std::string(t && *t ? t : "/tmp") + "/hybla-fuzz-XXXXXX";
        if (!::mkdtemp(tmpl.data())) fail("cannot create a scratch directory from " + tmpl);
        dir_ = tmpl;
    }
    std::string dir_;
    std::vector<std::string> files_;
};

inline void write_file(const std::string& path, const void* data, std::size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) fail("cannot write " + path);
}

inline bool has_gzip_magic(const std::uint8_t* data, std::size_t size) {
    return size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

// One gzip member holding the bytes.
inline std::string gzip(const std::uint8_t* data, std::size_t size) {
    z_stream z{};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) fail("deflateInit2 failed");
    std::string out(deflateBound(&z, uLong(size)), '\0');
    z.next_in = const_cast<Bytef*>(data);
    z.avail_in = uInt(size);
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) fail("deflate failed");
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// What gzip -d accepts: one or more whole members and nothing after the last. False for anything else, or when
// the output would pass max_out bytes.
inline bool gunzip_strict(const std::uint8_t* data, std::size_t size, std::size_t max_out, std::string& out) {
    out.clear();
    if (!has_gzip_magic(data, size)) return false;
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK) fail("inflateInit2 failed");
    z.next_in = const_cast<Bytef*>(data);
    z.avail_in = uInt(size);
    char buf[1 << 14];
    bool ok = false;
    for (;;) {
        z.next_out = reinterpret_cast<Bytef*>(buf);
        z.avail_out = sizeof buf;
        const int r = inflate(&z, Z_NO_FLUSH);
        out.append(buf, sizeof buf - z.avail_out);
        if (out.size() > max_out) break;
        if (r == Z_STREAM_END) {
            if (z.avail_in == 0) {
                ok = true;
                break;
            }
            if (!has_gzip_magic(z.next_in, z.avail_in) || inflateReset(&z) != Z_OK) break;
            continue;
        }
        if (r != Z_OK) break;  // corrupt, or truncated (Z_BUF_ERROR: no progress possible)
    }
    inflateEnd(&z);
    return ok;
}

// ---- invariants of a result ----

enum class Reader { matrix_market, edge_list, abc, binary };

template <class T>
const Matrix<T>& on_host(const Matrix<T>& a, Matrix<T>& tmp) {
    if (a.context().is_cpu()) return a;
    tmp = a.to(Context::cpu());
    return tmp;
}

// CSR as DESIGN.md defines it: offsets from 0 to nvals, non-decreasing; columns in range, strictly increasing
// within a row (sorted, no duplicates); bool values are 0 or 1.
template <class T>
void check_matrix(const std::string& what, const Matrix<T>& m) {
    Matrix<T> tmp;
    const Matrix<T>& a = on_host(m, tmp);
    auto bad = [&](const std::string& why) { fail(what + ": broken result: " + why); };
    if (a.nrows() > max_dimension || a.ncols() > max_dimension)
        bad("dimensions " + std::to_string(a.nrows()) + "x" + std::to_string(a.ncols()));
    const auto off = a.row_offsets();
    const auto ci = a.col_indices();
    const auto v = a.values();
    if (off.size() != a.nrows() + 1)
        bad(std::to_string(off.size()) + " row offsets for " + std::to_string(a.nrows()) + " rows");
    if (off[0] != 0 || off[a.nrows()] != a.nvals() || ci.size() != a.nvals() || v.size() != a.nvals())
        bad("offsets, indices and values disagree on the number of entries");
    for (Index i = 0; i < a.nrows(); ++i) {
        if (off[i] > off[i + 1]) bad("row offsets decrease at row " + std::to_string(i));
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            if (ci[p] >= a.ncols())
                bad("column " + std::to_string(ci[p]) + " out of range in row " + std::to_string(i));
            if (p > off[i] && ci[p - 1] >= ci[p]) bad("columns unsorted or repeated in row " + std::to_string(i));
        }
    }
    if constexpr (std::is_same_v<T, bool>) {
        for (std::size_t k = 0; k < v.size(); ++k) {
            unsigned char byte;
            std::memcpy(&byte, &v[k], 1);
            if (byte > 1) bad("a bool value stored as " + std::to_string(byte));
        }
    }
}

// Every stored (i, j) has a stored (j, i); with same_values also the same value, bit for bit.
template <class T>
void check_symmetric(const std::string& what, const Matrix<T>& a, bool same_values) {
    if (a.nrows() != a.ncols()) fail(what + ": broken result: an undirected graph that is not square");
    const auto off = a.row_offsets();
    const auto ci = a.col_indices();
    const auto v = a.values();
    for (Index i = 0; i < a.nrows(); ++i)
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            const Index j = ci[p];
            const auto b = ci.begin() + std::ptrdiff_t(off[j]), e = ci.begin() + std::ptrdiff_t(off[j + 1]);
            const auto q = std::lower_bound(b, e, ColIndex(i));
            if (q == e || *q != i)
                fail(what + ": broken result: undirected, but (" + std::to_string(i) + ", " +
                     std::to_string(j) + ") has no mirror");
            if (same_values && std::memcmp(&v[p], &v[std::size_t(q - ci.begin())], sizeof(T)) != 0)
                fail(what + ": broken result: undirected, but (" + std::to_string(i) + ", " +
                     std::to_string(j) + ") and its mirror differ");
        }
}

// undirected_option: the read asked for an undirected graph.
template <class T>
void check_graph(const std::string& what, Reader reader, const Graph<T>& g, bool undirected_option) {
    Matrix<T> tmp;
    const Matrix<T>& a = on_host(g.matrix, tmp);
    check_matrix(what, a);
    auto bad = [&](const std::string& why) { fail(what + ": broken result: " + why); };
    const VertexNames& nm = g.names;
    if (nm.has_ids() && nm.has_labels()) bad("both vertex ids and labels");
    if ((nm.has_ids() || nm.has_labels()) && a.nrows() != a.ncols()) bad("vertex names for a non-square matrix");
    if (nm.has_ids() && nm.ids.size() != a.nrows())
        bad(std::to_string(nm.ids.size()) + " vertex ids for " + std::to_string(a.nrows()) + " vertices");
    if (nm.has_labels() && nm.labels.size() != a.nrows())
        bad(std::to_string(nm.labels.size()) + " labels for " + std::to_string(a.nrows()) + " vertices");
    if (undirected_option && !g.undirected) bad("read as undirected, but not flagged undirected");
    switch (reader) {
        case Reader::matrix_market:
            if (nm.has_ids() || nm.has_labels()) bad("vertex names from a Matrix Market file");
            if (g.undirected) check_symmetric(what, a, false);  // skew-symmetric files negate the mirror
            break;
        case Reader::edge_list:
            if (nm.has_labels() || nm.ids.size() != a.nrows() || a.nrows() != a.ncols())
                bad("an edge list's vertices are not named by their ids");
            for (std::size_t k = 0; k < nm.ids.size(); ++k)
                if (nm.ids[k] < 0 || (k > 0 && nm.ids[k - 1] >= nm.ids[k]))
                    bad("vertex ids not increasing at vertex " + std::to_string(k));
            if (g.undirected) check_symmetric(what, a, true);
            break;
        case Reader::abc: {
            if (nm.has_ids() || nm.labels.size() != a.nrows() || a.nrows() != a.ncols())
                bad("an .abc file's vertices are not named by their labels");
            std::unordered_set<std::string_view> seen;
            for (const std::string& s : nm.labels) {
                if (s.empty() || std::any_of(s.begin(), s.end(), io::detail::is_space))
                    bad("label \"" + printable(s) + "\" is empty or holds white space");
                if (!seen.insert(s).second) bad("label \"" + printable(s) + "\" names two vertices");
            }
            if (g.undirected) check_symmetric(what, a, true);
            break;
        }
        case Reader::binary:
            // The names and the undirected flag come from the file: their contents are the reader's business.
            break;
    }
}

// ---- outcomes: a result or an error, as a string that two reads can compare ----

// A one-line summary of the matrix, names and flag, with hashes of their bytes (a copy of the arrays would double
// the memory of a matrix with many empty rows).
template <class T>
std::string describe(const Matrix<T>& m, const VertexNames* names, bool undirected) {
    Matrix<T> tmp;
    const Matrix<T>& a = on_host(m, tmp);
    std::string s = std::to_string(a.nrows()) + "x" + std::to_string(a.ncols()) + ", " + std::to_string(a.nvals()) +
                    " entries" + (undirected ? ", undirected" : "") + "; hashes";
    auto hash = [&](const void* p, std::size_t bytes) {
        s += " " + std::to_string(std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(p), bytes)));
    };
    hash(a.row_offsets().data(), a.row_offsets().size_bytes());
    hash(a.col_indices().data(), a.col_indices().size_bytes());
    hash(a.values().data(), a.values().size_bytes());
    if (names) {
        hash(names->ids.data(), names->ids.size() * sizeof(std::int64_t));
        std::string labels;
        for (const std::string& l : names->labels) labels += std::to_string(l.size()) + ":" + l;
        hash(labels.data(), labels.size());
    }
    return s;
}

template <class T>
std::string describe(const Graph<T>& g) {
    return describe(g.matrix, &g.names, g.undirected);
}

// read(path) returns describe() of its result; a hybla::Error becomes its message with the path replaced.
template <class Read>
std::string outcome(const std::string& path, Read&& read) {
    try {
        return read(path);
    } catch (const Error& e) {
        std::string m = e.what();
        for (std::size_t p; (p = m.find(path)) != std::string::npos;) m.replace(p, path.size(), "FILE");
        return "error: " + m;
    }
}

// The input under both names: plain, and its gzip copy ("" when the input is itself gzip data, which the
// readers decompress: a copy would be read as the compressed bytes).
struct Files {
    std::string plain, gz;
};

inline Files write_input(const std::uint8_t* data, std::size_t size, const std::string& name) {
    Scratch& s = Scratch::get();
    Files f{s.path(name), ""};
    write_file(f.plain, data, size);
    if (!has_gzip_magic(data, size)) {
        f.gz = s.path(name + ".gz");
        const std::string z = gzip(data, size);
        write_file(f.gz, z.data(), z.size());
    }
    return f;
}

// Reads the plain file (default chunks) and the gzip copy (tiny chunks); they must agree.
template <class Read>
void agree(const std::string& what, const Files& f, Read&& read) {
    io::detail::set_parse_chunk_bytes(0);
    const std::string a = outcome(f.plain, read);
    if (f.gz.empty()) return;
    io::detail::set_parse_chunk_bytes(tiny_chunk_bytes);
    const std::string b = outcome(f.gz, read);
    if (a == b) {
        io::detail::set_parse_chunk_bytes(0);
        return;
    }
    const std::string c = outcome(f.plain, read);  // still tiny chunks: which of the two made the difference?
    io::detail::set_parse_chunk_bytes(0);
    if (c != a)
        fail(what + ": the result depends on the parse chunk size\n  default chunks: " + printable(a) +
             "\n  tiny chunks:    " + printable(c));
    fail(what + ": the gzip copy reads differently\n  plain: " + printable(a) + "\n  gzip:  " + printable(b));
}

// A graph read (read(path) gives a Graph<T>) checked and described, plain and gzipped (agree).
template <class T, class Read>
void agree_graph(const std::string& what, const Files& f, Reader reader, bool undirected_option, Read&& read) {
    agree(what, f, [&](const std::string& path) {
        const Graph<T> g = read(path);
        check_graph(what, reader, g, undirected_option);
        return describe(g);
    });
}

// The body of a harness's LLVMFuzzerTestOneInput: the input written as `name` (and its gzip copy), then
// Reads::run<T>(files) for each value type the readers are fuzzed with.
template <class Reads>
int test_one_input(const std::uint8_t* data, std::size_t size, const std::string& name) {
    if (size > max_input_bytes) return 0;
    const Files f = write_input(data, size, name);
    Reads::template run<double>(f);
    Reads::template run<float>(f);
    Reads::template run<std::int64_t>(f);
    Reads::template run<bool>(f);
    Reads::template run<std::uint8_t>(f);
    return 0;
}

}  // namespace hybla::fuzz
