#include "io/binary.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>

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

}  // namespace

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
        if (h.names_bytes != 8 * h.nrows || h.nrows != h.ncols) fail("corrupt vertex names: wrong size");
        c.names.ids.resize(h.nrows);
        src.read(c.names.ids.data(), h.names_bytes);
    } else if (h.names_kind == names_labels) {
        Array<char> raw(h.names_bytes);
        src.read(raw.data(), h.names_bytes);
        std::size_t p = 0;
        c.names.labels.reserve(h.nrows);
        while (p < raw.size()) {
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
