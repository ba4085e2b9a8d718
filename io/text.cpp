#include "io/text.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <sys/stat.h>
#include <tbb/parallel_for.h>
#include <zlib.h>

namespace hybla::io {

const char* value_type_name(ValueType t) {
    switch (t) {
        case ValueType::boolean: return "bool";
        case ValueType::int8: return "int8_t";
        case ValueType::int16: return "int16_t";
        case ValueType::int32: return "int32_t";
        case ValueType::int64: return "int64_t";
        case ValueType::uint8: return "uint8_t";
        case ValueType::uint16: return "uint16_t";
        case ValueType::uint32: return "uint32_t";
        case ValueType::uint64: return "uint64_t";
        case ValueType::float32: return "float";
        case ValueType::float64: return "double";
    }
    return "unknown";
}

namespace detail {

namespace {

std::atomic<std::size_t> chunk_bytes_setting{0};
constexpr std::size_t default_chunk_bytes = std::size_t(1) << 20;

std::string errno_text(int e) { return std::strerror(e); }

// A gzip stream: gzread decompresses concatenated members too (as gzip -d does).
Array<char> read_gzip(const std::string& path, std::size_t compressed_size) {
    gzFile g = gzopen(path.c_str(), "rb");
    if (!g) throw IoError(path, 0, "cannot open: " + errno_text(errno));
    gzbuffer(g, 1u << 20);
    std::size_t cap = std::clamp<std::size_t>(compressed_size * 4, std::size_t(1) << 20, std::size_t(1) << 30);
    Array<char> buf(cap);
    std::size_t n = 0;
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf.resize(cap);
        }
        const unsigned ask = unsigned(std::min<std::size_t>(cap - n, std::size_t(1) << 30));
        const int got = gzread(g, buf.data() + n, ask);
        if (got < 0) break;
        n += std::size_t(got);
        if (got == 0) break;
    }
    int err = Z_OK;
    const char* msg = gzerror(g, &err);
    std::string why = msg ? msg : "";
    gzclose(g);
    if (err != Z_OK && err != Z_STREAM_END) throw IoError(path, 0, "corrupt or truncated gzip data (" + why + ")");
    buf.resize(n);
    return buf;
}

}  // namespace

void set_parse_chunk_bytes(std::size_t bytes) { chunk_bytes_setting.store(bytes); }

std::size_t parse_chunk_bytes() {
    std::size_t b = chunk_bytes_setting.load();
    return b ? b : default_chunk_bytes;
}

Array<char> read_file(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw IoError(path, 0, "cannot open: " + errno_text(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        std::fclose(f);
        throw IoError(path, 0, "cannot open: not a regular file");
    }
    const std::size_t size = std::size_t(st.st_size);
    unsigned char magic[2] = {0, 0};
    const std::size_t m = std::fread(magic, 1, 2, f);
    if (m == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        std::fclose(f);
        return read_gzip(path, size);
    }
    Array<char> buf(size);
    if (m > 0 && size > 0) std::memcpy(buf.data(), magic, std::min<std::size_t>(m, size));
    std::size_t n = m;
    while (n < size) {
        const std::size_t got = std::fread(buf.data() + n, 1, size - n, f);
        if (got == 0) break;
        n += got;
    }
    const bool failed = std::ferror(f) != 0;
    const int e = errno;
    std::fclose(f);
    if (failed) throw IoError(path, 0, "read error: " + errno_text(e));
    buf.resize(n);  // the file shrank while being read
    return buf;
}

std::vector<Chunk> split_lines(const char* data, std::size_t begin, std::size_t end, std::size_t first_line) {
    const std::size_t target = parse_chunk_bytes();
    std::vector<std::size_t> cuts{begin};
    for (std::size_t p = begin + target; p < end;) {
        const void* nl = std::memchr(data + p, '\n', end - p);
        if (!nl) break;
        const std::size_t c = std::size_t(static_cast<const char*>(nl) - data) + 1;
        if (c >= end) break;
        cuts.push_back(c);
        p = c + target;
    }
    cuts.push_back(end);
    const std::size_t n = cuts.size() - 1;
    std::vector<std::size_t> newlines(n);
    tbb::parallel_for(std::size_t(0), n, [&](std::size_t k) {
        std::size_t count = 0;
        const char* p = data + cuts[k];
        const char* e = data + cuts[k + 1];
        while (p < e) {
            const void* nl = std::memchr(p, '\n', std::size_t(e - p));
            if (!nl) break;
            ++count;
            p = static_cast<const char*>(nl) + 1;
        }
        newlines[k] = count;
    });
    std::vector<Chunk> chunks(n);
    std::size_t line = first_line;
    for (std::size_t k = 0; k < n; ++k) {
        chunks[k] = Chunk{cuts[k], cuts[k + 1], line};
        line += newlines[k];
    }
    return chunks;
}

std::size_t line_after_end(const char* data, std::size_t begin, std::size_t end, std::size_t first_line) {
    std::size_t line = first_line;
    for (std::size_t p = begin; p < end; ++p)
        if (data[p] == '\n') ++line;
    if (end > begin && data[end - 1] != '\n') ++line;
    return line;
}

ValueParser::ValueParser(ValueType t) : name_(value_type_name(t)) {
    switch (t) {
        case ValueType::boolean: boolean_ = true; break;
        case ValueType::int8: lo_ = INT8_MIN; hi_ = INT8_MAX; break;
        case ValueType::int16: lo_ = INT16_MIN; hi_ = INT16_MAX; break;
        case ValueType::int32: lo_ = INT32_MIN; hi_ = INT32_MAX; break;
        case ValueType::int64: lo_ = INT64_MIN; hi_ = INT64_MAX; break;
        case ValueType::uint8: lo_ = 0; hi_ = UINT8_MAX; break;
        case ValueType::uint16: lo_ = 0; hi_ = UINT16_MAX; break;
        case ValueType::uint32: lo_ = 0; hi_ = UINT32_MAX; break;
        case ValueType::uint64: lo_ = 0; hi_ = INT64_MAX; unsigned64_ = true; break;  // and the bit-cast range above
        case ValueType::float32: floating_ = true; single_ = true; break;
        case ValueType::float64: floating_ = true; break;
    }
}

bool ends_with_gz(const std::string& path) {
    return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

OutFile::OutFile(const std::string& path) : path_(path) {
    if (ends_with_gz(path)) {
        gzFile g = gzopen(path.c_str(), "wb6");
        if (!g) throw IoError(path, 0, "cannot open for writing: " + errno_text(errno));
        gzbuffer(g, 1u << 20);
        gz_ = g;
    } else {
        f_ = std::fopen(path.c_str(), "wb");
        if (!f_) throw IoError(path, 0, "cannot open for writing: " + errno_text(errno));
    }
}

OutFile::~OutFile() {
    if (f_) std::fclose(f_);
    if (gz_) gzclose(static_cast<gzFile>(gz_));
}

void OutFile::write(const char* data, std::size_t n) {
    if (n == 0) return;  // data may be null then (an empty Array)
    if (f_) {
        if (std::fwrite(data, 1, n, f_) != n) throw IoError(path_, 0, "write error: " + errno_text(errno));
        return;
    }
    while (n > 0) {
        const unsigned piece = unsigned(std::min<std::size_t>(n, std::size_t(1) << 30));
        const int put = gzwrite(static_cast<gzFile>(gz_), data, piece);
        if (put <= 0) {
            int err = Z_OK;
            const char* msg = gzerror(static_cast<gzFile>(gz_), &err);
            throw IoError(path_, 0, std::string("write error: ") + (msg ? msg : "gzip"));
        }
        data += put;
        n -= std::size_t(put);
    }
}

void OutFile::close() {
    if (f_) {
        const bool bad = std::ferror(f_) != 0;
        const int r = std::fclose(f_);
        f_ = nullptr;
        if (bad || r != 0) throw IoError(path_, 0, "write error: " + errno_text(errno));
    }
    if (gz_) {
        const int r = gzclose(static_cast<gzFile>(gz_));
        gz_ = nullptr;
        if (r != Z_OK) throw IoError(path_, 0, "write error: cannot finish the gzip stream");
    }
}

}  // namespace detail
}  // namespace hybla::io
