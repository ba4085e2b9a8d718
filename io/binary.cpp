#include "io/binary.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include <sys/stat.h>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "io/text.hpp"

namespace hybla::io::detail {

namespace {

constexpr char file_magic[8] = {'H', 'Y', 'B', 'L', 'A', 'C', 'S', 'R'};
constexpr std::uint32_t file_version = 1;
constexpr std::uint32_t byte_order_mark = 0x01020304;
constexpr std::uint32_t names_ids = 1, names_labels = 2;  // 0: no names
constexpr std::uint32_t flag_undirected = 1;

struct RawHeader {
    char magic[8];
    std::uint32_t version;
    std::uint32_t byte_order;
    std::uint32_t value_type;
    std::uint32_t value_size;
    std::uint64_t nrows, ncols, nvals;
    std::uint32_t flags;
    std::uint32_t names_kind;
    std::uint64_t names_bytes;
};
static_assert(sizeof(RawHeader) == 64, "the header is 64 bytes on disk");
static_assert(sizeof(bool) == 1, "bool values are stored as one byte");

std::size_t value_size(ValueType t) {
    switch (t) {
        case ValueType::boolean:
        case ValueType::int8:
        case ValueType::uint8: return 1;
        case ValueType::int16:
        case ValueType::uint16: return 2;
        case ValueType::int32:
        case ValueType::uint32:
        case ValueType::float32: return 4;
        case ValueType::int64:
        case ValueType::uint64:
        case ValueType::float64: return 8;
    }
    return 0;
}

// A plain file read in place, or a gzip file decompressed into memory first.
class Source {
public:
    explicit Source(const std::string& path) : path_(path) {
        f_ = std::fopen(path.c_str(), "rb");
        if (!f_) throw IoError(path, 0, std::string("cannot open: ") + std::strerror(errno));
        struct stat st;
        if (fstat(fileno(f_), &st) != 0 || !S_ISREG(st.st_mode)) {
            std::fclose(f_);
            throw IoError(path, 0, "cannot open: not a regular file");
        }
        size_ = std::size_t(st.st_size);
        unsigned char m[2] = {0, 0};
        const bool gz = std::fread(m, 1, 2, f_) == 2 && m[0] == 0x1f && m[1] == 0x8b;
        std::fclose(f_);
        f_ = nullptr;
        if (gz) {
            mem_ = read_file(path);
            size_ = mem_.size();
            return;
        }
        f_ = std::fopen(path.c_str(), "rb");
        if (!f_) throw IoError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    }
    ~Source() {
        if (f_) std::fclose(f_);
    }
    Source(const Source&) = delete;
    Source& operator=(const Source&) = delete;

    std::size_t size() const { return size_; }
    // Exactly n bytes; the caller has checked the size, so a short read means the file changed or failed.
    void read(void* dst, std::size_t n) {
        if (n == 0) return;
        if (!f_) {
            std::memcpy(dst, mem_.data() + pos_, n);
            pos_ += n;
            return;
        }
        if (std::fread(dst, 1, n, f_) != n)
            throw IoError(path_, 0, std::string("read error: ") + (std::ferror(f_) ? std::strerror(errno) : "file shrank"));
    }

private:
    std::string path_;
    std::FILE* f_ = nullptr;
    Array<char> mem_;
    std::size_t size_ = 0, pos_ = 0;
};

bool valid_type_tag(std::uint32_t t) {
    return t >= std::uint32_t(ValueType::boolean) && t <= std::uint32_t(ValueType::float64);
}

// What the reader refuses in the names of an n-vertex graph (their number is checked where they are read),
// or empty. Output names vertices by these, one per line or per tab-separated field, and maps names back
// to vertices (contract's clusters, pagerank's seeds): a name must be one token and name one vertex.
std::string names_problem(const VertexNames& names) {
    const auto& ids = names.ids;
    for (std::size_t v = 0; v < ids.size(); ++v) {
        if (ids[v] < 0) return "vertex " + std::to_string(v) + " has the negative id " + std::to_string(ids[v]);
        if (v > 0 && ids[v] <= ids[v - 1])
            return "vertex ids must increase, but vertex " + std::to_string(v) + " has id " + std::to_string(ids[v]) +
                   " after " + std::to_string(ids[v - 1]);
    }
    std::unordered_map<std::string_view, std::size_t> seen;
    seen.reserve(names.labels.size());
    for (std::size_t v = 0; v < names.labels.size(); ++v) {
        const std::string& l = names.labels[v];
        if (l.empty()) return "the label of vertex " + std::to_string(v) + " is empty";
        if (std::any_of(l.begin(), l.end(), is_space))
            return "the label of vertex " + std::to_string(v) + " holds whitespace: " + quoted(l);
        const auto [at, fresh] = seen.emplace(l, v);
        if (!fresh)
            return "vertices " + std::to_string(at->second) + " and " + std::to_string(v) + " have the same label " +
                   quoted(l);
    }
    return {};
}

// The problem of row i (a value that is not finite, then an entry without its mirror under the undirected
// flag), or empty.
template <class T>
std::string row_problem(const CsrView& a, bool undirected, Index i) {
    const T* const v = static_cast<const T*>(a.values);
    const auto at = [](Index r, Index c) {
        std::string s(1, '(');
        s.append(std::to_string(r)).append(", ").append(std::to_string(c)).push_back(')');
        return s;
    };
    if constexpr (std::is_floating_point_v<T>)
        for (Offset p = a.offsets[i]; p < a.offsets[i + 1]; ++p)
            if (!std::isfinite(v[p]))
                return "entry " + std::to_string(p) + " " + at(i, a.indices[p]) + " is " +
                       (std::isnan(v[p]) ? "NaN" : v[p] > 0 ? "inf" : "-inf");
    if (!undirected) return {};
    for (Offset p = a.offsets[i]; p < a.offsets[i + 1]; ++p) {
        const Index j = a.indices[p];
        const ColIndex* const b = a.indices + a.offsets[j];
        const ColIndex* const e = a.indices + a.offsets[j + 1];
        const ColIndex* const m = std::lower_bound(b, e, ColIndex(i));
        if (m == e || *m != i) return "flagged undirected but entry " + at(i, j) + " has no mirror " + at(j, i);
        if (!(v[p] == v[m - a.indices]))
            return "flagged undirected but the entries " + at(i, j) + " and " + at(j, i) + " differ";
    }
    return {};
}

// The problem of the first row that has one (rows checked in parallel: this runs on every load of a graph).
template <class T>
std::string value_problem_of(const CsrView& a, bool undirected) {
    if (undirected && a.nrows != a.ncols)
        return "flagged undirected but the matrix is " + std::to_string(a.nrows) + "x" + std::to_string(a.ncols);
    if (!std::is_floating_point_v<T> && !undirected) return {};
    std::atomic<Index> first(a.nrows);
    tbb::parallel_for(tbb::blocked_range<Index>(0, a.nrows, 1024), [&](const tbb::blocked_range<Index>& r) {
        for (Index i = r.begin(); i < r.end() && i < first.load(std::memory_order_relaxed); ++i)
            if (!row_problem<T>(a, undirected, i).empty()) {
                Index f = first.load();
                while (i < f && !first.compare_exchange_weak(f, i)) {
                }
                return;
            }
    });
    return first < a.nrows ? row_problem<T>(a, undirected, first) : std::string();
}

}  // namespace

std::string value_problem(const CsrView& a, bool undirected) {
    switch (a.type) {
        case ValueType::boolean: return value_problem_of<bool>(a, undirected);
        case ValueType::int8: return value_problem_of<std::int8_t>(a, undirected);
        case ValueType::uint8: return value_problem_of<std::uint8_t>(a, undirected);
        case ValueType::int16: return value_problem_of<std::int16_t>(a, undirected);
        case ValueType::uint16: return value_problem_of<std::uint16_t>(a, undirected);
        case ValueType::int32: return value_problem_of<std::int32_t>(a, undirected);
        case ValueType::uint32: return value_problem_of<std::uint32_t>(a, undirected);
        case ValueType::int64: return value_problem_of<std::int64_t>(a, undirected);
        case ValueType::uint64: return value_problem_of<std::uint64_t>(a, undirected);
        case ValueType::float32: return value_problem_of<float>(a, undirected);
        case ValueType::float64: return value_problem_of<double>(a, undirected);
    }
    return {};
}

BinaryContents read_binary(const std::string& path, ValueType type, const std::function<void*(std::size_t)>& alloc_values) {
    Source src(path);
    auto fail = [&](const std::string& reason) { throw IoError(path, 0, reason); };
    RawHeader h;
    std::memset(&h, 0, sizeof h);
    const std::size_t head = std::min(src.size(), sizeof h);
    src.read(&h, head);
    if (head < sizeof h.magic || std::memcmp(h.magic, file_magic, sizeof file_magic) != 0)
        fail("not a hybla binary matrix (bad magic)");
    if (head < sizeof h) fail("truncated file: incomplete header");
    if (h.byte_order != byte_order_mark) fail("written on a machine with the other byte order");
    if (h.version != file_version)
        fail("unsupported version " + std::to_string(h.version) + " (this build reads version " +
             std::to_string(file_version) + ")");
    if (!valid_type_tag(h.value_type)) fail("corrupt header: unknown value type tag " + std::to_string(h.value_type));
    if (h.value_type != std::uint32_t(type))
        fail(std::string("stored values are ") + value_type_name(ValueType(h.value_type)) + ", requested " +
             value_type_name(type));
    const std::size_t vsize = value_size(type);
    if (h.value_size != vsize) fail("corrupt header: value size " + std::to_string(h.value_size));
    if (h.nrows > max_dimension || h.ncols > max_dimension)
        fail("corrupt header: dimensions " + std::to_string(h.nrows) + "x" + std::to_string(h.ncols));
    if (h.flags & ~std::uint32_t(flag_undirected)) fail("corrupt header: unknown flags " + std::to_string(h.flags));
    if (h.names_kind > names_labels) fail("corrupt header: unknown vertex-name kind " + std::to_string(h.names_kind));
    const unsigned __int128 expected = (unsigned __int128)sizeof h + (unsigned __int128)8 * (h.nrows + 1) +
                                       (unsigned __int128)(4 + vsize) * h.nvals + h.names_bytes;
    auto text = [](unsigned __int128 v) {
        if (v > std::uint64_t(-1)) return std::string("more than 2^64");
        return std::to_string(std::uint64_t(v));
    };
    if (src.size() < expected)
        fail("truncated file: expected " + text(expected) + " bytes, found " + std::to_string(src.size()));
    if (src.size() > expected)
        fail("unexpected data after the matrix: expected " + text(expected) + " bytes, found " + std::to_string(src.size()));

    BinaryContents c;
    c.nrows = h.nrows;
    c.ncols = h.ncols;
    c.undirected = (h.flags & flag_undirected) != 0;
    c.offsets = Array<Offset>(h.nrows + 1);
    src.read(c.offsets.data(), 8 * (h.nrows + 1));
    c.indices = Array<ColIndex>(h.nvals);
    src.read(c.indices.data(), 4 * h.nvals);
    void* vals = alloc_values(h.nvals);
    if (type == ValueType::boolean) {
        // Any byte other than 0 or 1 read as bool is undefined behaviour: check the bytes first.
        Array<unsigned char> bytes(h.nvals);
        src.read(bytes.data(), h.nvals);
        for (std::size_t k = 0; k < h.nvals; ++k)
            if (bytes[k] > 1) fail("corrupt matrix data: bool value " + std::to_string(bytes[k]));
        if (h.nvals) std::memcpy(vals, bytes.data(), h.nvals);
    } else {
        src.read(vals, vsize * h.nvals);
    }

    if (h.names_kind == names_ids) {
        if (h.nrows != h.ncols)
            fail("corrupt vertex names: names for a " + std::to_string(h.nrows) + "x" + std::to_string(h.ncols) +
                 " matrix");
        if (h.names_bytes != 8 * h.nrows)
            fail("corrupt vertex names: " + std::to_string(h.names_bytes) + " bytes of ids for " +
                 std::to_string(h.nrows) + " vertices (8 bytes an id)");
        c.names.ids.resize(h.nrows);
        src.read(c.names.ids.data(), h.names_bytes);
    } else if (h.names_kind == names_labels) {
        Array<char> raw(h.names_bytes);
        src.read(raw.data(), h.names_bytes);
        std::size_t p = 0;
        c.names.labels.reserve(h.nrows);
        while (p < raw.size()) {
            if (c.names.labels.size() == h.nrows)  // before a file of empty labels fills memory
                fail("corrupt vertex names: more labels than the " + std::to_string(h.nrows) + " vertices");
            std::uint32_t len;
            if (raw.size() - p < sizeof len) fail("corrupt vertex names: truncated label");
            std::memcpy(&len, raw.data() + p, sizeof len);
            p += sizeof len;
            if (raw.size() - p < len) fail("corrupt vertex names: truncated label");
            c.names.labels.emplace_back(raw.data() + p, len);
            p += len;
        }
        if (c.names.labels.size() != h.nrows || h.nrows != h.ncols)
            fail("corrupt vertex names: " + std::to_string(c.names.labels.size()) + " labels for " +
                 std::to_string(h.nrows) + " vertices");
    } else if (h.names_bytes != 0) {
        fail("corrupt header: vertex names without a kind");
    }
    if (const std::string problem = names_problem(c.names); !problem.empty()) fail("corrupt vertex names: " + problem);
    return c;
}

void write_binary(const std::string& path, const CsrView& a, const VertexNames* names, bool undirected) {
    RawHeader h;
    std::memset(&h, 0, sizeof h);
    std::memcpy(h.magic, file_magic, sizeof file_magic);
    h.version = file_version;
    h.byte_order = byte_order_mark;
    h.value_type = std::uint32_t(a.type);
    h.value_size = std::uint32_t(value_size(a.type));
    h.nrows = a.nrows;
    h.ncols = a.ncols;
    h.nvals = a.offsets[a.nrows];
    h.flags = undirected ? flag_undirected : 0;
    if (const std::string problem = value_problem(a, undirected); !problem.empty())
        throw InvalidValue("write_binary: " + problem);
    if (names)
        if (const std::string problem = names_problem(*names); !problem.empty())
            throw InvalidValue("write_binary: " + problem);
    std::string label_bytes;
    if (names && names->has_labels()) {
        if (names->labels.size() != a.nrows || a.nrows != a.ncols)
            throw InvalidValue("write_binary: " + std::to_string(names->labels.size()) + " labels for a " +
                               std::to_string(a.nrows) + "x" + std::to_string(a.ncols) + " matrix");
        for (const std::string& s : names->labels) {
            if (s.size() > UINT32_MAX) throw InvalidValue("write_binary: a label longer than 2^32 bytes");
            const std::uint32_t len = std::uint32_t(s.size());
            label_bytes.append(reinterpret_cast<const char*>(&len), sizeof len);
            label_bytes += s;
        }
        h.names_kind = names_labels;
        h.names_bytes = label_bytes.size();
    } else if (names && names->has_ids()) {
        if (names->ids.size() != a.nrows || a.nrows != a.ncols)
            throw InvalidValue("write_binary: " + std::to_string(names->ids.size()) + " vertex ids for a " +
                               std::to_string(a.nrows) + "x" + std::to_string(a.ncols) + " matrix");
        h.names_kind = names_ids;
        h.names_bytes = 8 * names->ids.size();
    }
    OutFile out(path);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(a.offsets), 8 * (a.nrows + 1));
    out.write(reinterpret_cast<const char*>(a.indices), 4 * h.nvals);
    out.write(static_cast<const char*>(a.values), h.value_size * h.nvals);
    if (h.names_kind == names_labels) out.write(label_bytes);
    if (h.names_kind == names_ids) out.write(reinterpret_cast<const char*>(names->ids.data()), h.names_bytes);
    out.close();
}

}  // namespace hybla::io::detail
