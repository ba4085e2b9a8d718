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

std::atomic<std::size_t> window_bytes_setting{0};
std::atomic<std::size_t> peak_window_bytes{0};
constexpr std::size_t default_window_bytes = std::size_t(64) << 20;
// Windows start at this size and double up to the limit, so that reading a header costs little.
constexpr std::size_t first_window_bytes = std::size_t(1) << 20;
constexpr std::size_t input_buffer_bytes = std::size_t(1) << 18;

std::string errno_text(int e) { return std::strerror(e); }

std::string size_text(std::size_t bytes) {
    if (bytes % (std::size_t(1) << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
    if (bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
    return std::to_string(bytes) + " bytes";
}

std::size_t count_newlines(const char* p, std::size_t n) {
    constexpr std::size_t block = std::size_t(1) << 20;
    if (n <= block) return std::size_t(std::count(p, p + n, '\n'));
    std::vector<std::size_t> counts((n + block - 1) / block);
    tbb::parallel_for(std::size_t(0), counts.size(), [&](std::size_t k) {
        const char* b = p + k * block;
        counts[k] = std::size_t(std::count(b, b + std::min(block, n - k * block), '\n'));
    });
    std::size_t total = 0;
    for (std::size_t c : counts) total += c;
    return total;
}

}  // namespace

// A file's bytes, gunzipped when it starts with the gzip magic bytes. zlib's gzread stops without a word at data
// after a member that is not another member, so the stream is inflated here directly: every member is read, as
// gzip -d does, and anything else after the last one is an error.
class ByteSource {
public:
    explicit ByteSource(const std::string& path) : path_(path), in_(new unsigned char[input_buffer_bytes]) {
        f_ = std::fopen(path.c_str(), "rb");
        if (!f_) throw IoError(path, 0, "cannot open: " + errno_text(errno));
        struct stat st;
        if (fstat(fileno(f_), &st) != 0 || !S_ISREG(st.st_mode)) {
            std::fclose(f_);
            throw IoError(path, 0, "cannot open: not a regular file");
        }
        file_size_ = std::size_t(st.st_size);
        try {
            while (in_end_ < 2 && fill() > 0) {
            }
        } catch (...) {
            std::fclose(f_);
            throw;
        }
        gzip_ = in_end_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
        if (gzip_ && inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
            std::fclose(f_);
            throw OutOfMemory("the gzip decompressor", sizeof(z_stream));
        }
    }
    ~ByteSource() {
        if (gzip_) inflateEnd(&zs_);
        std::fclose(f_);
    }
    ByteSource(const ByteSource&) = delete;
    ByteSource& operator=(const ByteSource&) = delete;

    bool gzip() const { return gzip_; }
    std::size_t file_size() const { return file_size_; }

    // Up to n bytes of the content (decompressed); fewer only at its end.
    std::size_t read(char* dst, std::size_t n) { return gzip_ ? inflate_into(dst, n) : copy_into(dst, n); }

private:
    // Moves the unread input to the front of the buffer and reads more; returns the number of bytes added.
    std::size_t fill() {
        if (in_begin_ > 0) {
            std::memmove(in_.get(), in_.get() + in_begin_, in_end_ - in_begin_);
            consumed_ += in_begin_;
            in_end_ -= in_begin_;
            in_begin_ = 0;
        }
        if (file_end_ || in_end_ == input_buffer_bytes) return 0;
        const std::size_t got = std::fread(in_.get() + in_end_, 1, input_buffer_bytes - in_end_, f_);
        if (got == 0) {
            if (std::ferror(f_)) throw IoError(path_, 0, "read error: " + errno_text(errno));
            file_end_ = true;
        }
        in_end_ += got;
        return got;
    }

    std::size_t copy_into(char* dst, std::size_t n) {
        std::size_t total = std::min(n, in_end_ - in_begin_);
        std::memcpy(dst, in_.get() + in_begin_, total);
        in_begin_ += total;
        while (total < n && !file_end_) {
            const std::size_t got = std::fread(dst + total, 1, n - total, f_);
            if (got == 0) {
                if (std::ferror(f_)) throw IoError(path_, 0, "read error: " + errno_text(errno));
                file_end_ = true;
            }
            total += got;
        }
        return total;
    }

    std::size_t inflate_into(char* dst, std::size_t n) {
        std::size_t total = 0;
        while (total < n && !finished_) {
            if (in_begin_ == in_end_ && fill() == 0)
                throw IoError(path_, 0, "corrupt or truncated gzip data (unexpected end of file)");
            const std::size_t ask = std::min<std::size_t>(n - total, std::size_t(1) << 30);
            zs_.next_in = in_.get() + in_begin_;
            zs_.avail_in = uInt(in_end_ - in_begin_);
            zs_.next_out = reinterpret_cast<Bytef*>(dst + total);
            zs_.avail_out = uInt(ask);
            const int r = inflate(&zs_, Z_NO_FLUSH);
            in_begin_ = std::size_t(zs_.next_in - in_.get());
            total += ask - zs_.avail_out;
            if (r == Z_STREAM_END) {
                next_member();
            } else if (r != Z_OK && r != Z_BUF_ERROR) {  // Z_BUF_ERROR: no progress until more input comes
                const std::string why = zs_.msg ? zs_.msg : "zlib error " + std::to_string(r);
                throw IoError(path_, 0, "corrupt or truncated gzip data (" + why + ")");
            }
        }
        return total;
    }

    // After the end of a member: another member, the end of the file, or data that is not gzip.
    void next_member() {
        while (in_end_ - in_begin_ < 2 && fill() > 0) {
        }
        const std::size_t left = in_end_ - in_begin_;
        if (left == 0) {
            finished_ = true;
        } else if (left >= 2 && in_[in_begin_] == 0x1f && in_[in_begin_ + 1] == 0x8b) {
            inflateReset(&zs_);
        } else {
            throw IoError(path_, 0,
                          "trailing data after the gzip stream at byte " + std::to_string(consumed_ + in_begin_));
        }
    }

    std::string path_;
    std::FILE* f_ = nullptr;
    std::size_t file_size_ = 0;
    std::unique_ptr<unsigned char[]> in_;
    std::size_t in_begin_ = 0, in_end_ = 0;  // the unread input in in_
    std::size_t consumed_ = 0;               // bytes of the file before in_[0]
    bool gzip_ = false, file_end_ = false, finished_ = false;
    z_stream zs_{};
};

void set_parse_chunk_bytes(std::size_t bytes) { chunk_bytes_setting.store(bytes); }

std::size_t parse_chunk_bytes() {
    std::size_t b = chunk_bytes_setting.load();
    return b ? b : default_chunk_bytes;
}

void set_text_window_bytes(std::size_t bytes) { window_bytes_setting.store(bytes); }

std::size_t text_window_bytes() {
    std::size_t b = window_bytes_setting.load();
    return b ? b : default_window_bytes;
}

std::size_t peak_text_window_bytes() { return peak_window_bytes.load(); }
void reset_peak_text_window_bytes() { peak_window_bytes.store(0); }

Array<char> read_file(const std::string& path) {
    ByteSource src(path);
    const std::size_t mib = std::size_t(1) << 20;
    std::size_t cap = src.gzip() ? std::clamp<std::size_t>(src.file_size() * 4, mib, 1024 * mib)
                                 : src.file_size() + 1;  // + 1: the read that finds the end needs room
    Array<char> buf(cap);
    std::size_t n = 0;
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf.resize(cap);
        }
        const std::size_t got = src.read(buf.data() + n, cap - n);
        n += got;
        if (n < cap) break;
    }
    buf.resize(n);
    return buf;
}

TextInput::TextInput(const std::string& path)
    : path_(path), src_(std::make_unique<ByteSource>(path)), limit_(text_window_bytes()) {}

TextInput::~TextInput() = default;

void TextInput::close() {
    buf_ = Array<char>();
    filled_ = size_ = 0;
    eof_ = true;
    src_.reset();
}

void TextInput::allocate(std::size_t capacity) {
    Array<char> b(capacity);
    if (filled_) std::memcpy(b.data(), buf_.data(), filled_);
    buf_ = std::move(b);
    std::size_t peak = peak_window_bytes.load();
    while (capacity > peak && !peak_window_bytes.compare_exchange_weak(peak, capacity)) {
    }
}

bool TextInput::next() {
    const std::size_t carry = filled_ - size_;
    if (carry && size_) std::memmove(buf_.data(), buf_.data() + size_, carry);
    filled_ = carry;
    size_ = 0;
    first_line_ = next_line_;
    if (eof_) return false;  // at the end the last window took everything
    std::size_t want = started_ ? std::min(limit_, 2 * buf_.size()) : std::min(limit_, first_window_bytes);
    if (!started_ && !src_->gzip()) want = std::min(want, src_->file_size() + 1);
    started_ = true;
    if (want > buf_.size()) allocate(want);
    const char* last_nl = nullptr;
    for (;;) {
        if (filled_ < buf_.size()) {
            const std::size_t got = src_->read(buf_.data() + filled_, buf_.size() - filled_);
            filled_ += got;
            if (filled_ < buf_.size()) {
                eof_ = true;
                break;
            }
        }
        last_nl = static_cast<const char*>(memrchr(buf_.data(), '\n', filled_));
        if (last_nl) break;
        if (buf_.size() < limit_) {
            allocate(std::min(limit_, 2 * buf_.size()));
            continue;
        }
        char extra;
        if (src_->read(&extra, 1) == 0) {  // the last line, exactly as long as the window
            eof_ = true;
            break;
        }
        throw IoError(path_, first_line_,
                      "line " + std::to_string(first_line_) + " is longer than " + size_text(limit_));
    }
    size_ = eof_ ? filled_ : std::size_t(last_nl - buf_.data()) + 1;
    const char* d = buf_.data();
    if (first_line_ == 1 && size_ >= 3 && std::memcmp(d, "\xef\xbb\xbf", 3) == 0)
        throw IoError(path_, 1, "the file starts with a UTF-8 byte-order mark (bytes EF BB BF); save it without one");
    next_line_ = first_line_ + count_newlines(d, size_);
    if (eof_ && size_ > 0 && d[size_ - 1] != '\n') ++next_line_;
    return size_ > 0;
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
