// I/O: Matrix Market, edge lists, mcl --abc labels, gzip, the binary format and read_graph; the malformed-file
// corpus in tests/data/malformed (exact line and reason for each file); the bundled graphs in data/ against
// the counts in their truth.txt.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "io/io.hpp"
#include "io/text.hpp"
#include "reference.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace hybla;
using namespace hybla::io;

namespace {

const fs::path source_dir = HYBLA_SOURCE_DIR;
const fs::path malformed_dir = source_dir / "tests" / "data" / "malformed";
const fs::path data_dir = source_dir / "data";

using hybla_test::TempDir;

// Parses with a given chunk size (0: the default) for the lifetime of the guard.
struct ChunkBytes {
    explicit ChunkBytes(std::size_t b) { io::detail::set_parse_chunk_bytes(b); }
    ~ChunkBytes() { io::detail::set_parse_chunk_bytes(0); }
};

// Chunk sizes to parse with: the default, and sizes so small that chunks cut through almost every line.
const std::vector<std::size_t> chunk_sizes = {0, 1, 3, 16, 100};

// Reads text in windows of at most b bytes (0: the default) for the lifetime of the guard.
struct WindowBytes {
    explicit WindowBytes(std::size_t b) { io::detail::set_text_window_bytes(b); }
    ~WindowBytes() { io::detail::set_text_window_bytes(0); }
};

void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
}

std::string read_bytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

void write_gz(const std::string& path, const std::string& text) {
    gzFile g = gzopen(path.c_str(), "wb");
    REQUIRE(g != nullptr);
    REQUIRE(gzwrite(g, text.data(), unsigned(text.size())) == int(text.size()));
    REQUIRE(gzclose(g) == Z_OK);
}

template <class T>
std::map<std::pair<Index, Index>, T> entries(const Matrix<T>& ga) {
    const Matrix<T> a = ga.to(Context::cpu());
    std::map<std::pair<Index, Index>, T> m;
    const auto off = a.row_offsets();
    const auto ci = a.col_indices();
    const auto v = a.values();
    for (Index i = 0; i < a.nrows(); ++i)
        for (Offset p = off[i]; p < off[i + 1]; ++p) m[{i, Index(ci[p])}] = v[p];
    return m;
}

using Entries = std::map<std::pair<Index, Index>, double>;

// Same shape, structure and values, bit for bit for floating point (so -0.0 and 0.0 differ).
template <class T>
void require_identical(const Matrix<T>& ga, const Matrix<T>& gb) {
    const Matrix<T> a = ga.to(Context::cpu()), b = gb.to(Context::cpu());
    REQUIRE(a.nrows() == b.nrows());
    REQUIRE(a.ncols() == b.ncols());
    REQUIRE(a.nvals() == b.nvals());
    const auto ao = a.row_offsets(), bo = b.row_offsets();
    REQUIRE(std::equal(ao.begin(), ao.end(), bo.begin()));
    const auto ac = a.col_indices(), bc = b.col_indices();
    REQUIRE(std::equal(ac.begin(), ac.end(), bc.begin()));
    const auto av = a.values(), bv = b.values();
    for (std::size_t k = 0; k < av.size(); ++k) {
        if constexpr (std::is_same_v<T, double>) REQUIRE(std::bit_cast<std::uint64_t>(av[k]) == std::bit_cast<std::uint64_t>(bv[k]));
        else if constexpr (std::is_same_v<T, float>) REQUIRE(std::bit_cast<std::uint32_t>(av[k]) == std::bit_cast<std::uint32_t>(bv[k]));
        else REQUIRE(av[k] == bv[k]);
    }
}

// A random matrix with distinct positions and awkward values for T.
template <class T>
Matrix<T> random_matrix(Index nrows, Index ncols, std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::set<std::pair<Index, Index>> pos;
    while (pos.size() < n) pos.insert({rng() % nrows, rng() % ncols});
    std::vector<T> specials;
    if constexpr (std::is_same_v<T, bool>) specials = {true, false};
    else if constexpr (std::is_floating_point_v<T>)
        specials = {T(0.1), T(1) / T(3), T(-0.0), T(0), std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::min(),
                    std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), T(123456789.123456789),
                    T(-2.5e-7)};
    else specials = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(0), T(1), T(42)};
    std::vector<Index> rows, cols;
    Array<T> vals(n);
    std::size_t k = 0;
    for (auto [i, j] : pos) {
        rows.push_back(i);
        cols.push_back(j);
        if (k < specials.size()) vals[k] = specials[k];
        else if constexpr (std::is_same_v<T, bool>) vals[k] = (rng() & 1) != 0;
        else if constexpr (std::is_floating_point_v<T>) vals[k] = T(std::ldexp(double(rng() % 2000001) - 1e6, int(rng() % 80) - 40));
        else vals[k] = T(rng());
        ++k;
    }
    return Matrix<T>::from_tuples(nrows, ncols, std::span<const Index>(rows), std::span<const Index>(cols),
                                  std::span<const T>(vals.data(), n));
}

// Every spelling of NaN and infinity that std::from_chars accepts; the readers refuse them all.
const std::vector<std::string> non_finite = {"nan", "NaN", "-nan", "+nan", "nan(0x1)", "inf",
                                             "-inf", "+inf", "INF", "infinity", "-Infinity"};

// Reads a file by its extension as a T, the way the corpus table says.
template <class T>
void read_as(const std::string& path) {
    const std::string ext = fs::path(path).extension().string();
    if (ext == ".mtx") read_matrix_market<T>(path);
    else if (ext == ".abc") read_abc<T>(path);
    else if (ext == ".bin") read_binary<T>(path);
    else read_edge_list<T>(path);
}

void read_as(const std::string& path, const std::string& type) {
    if (type == "double") read_as<double>(path);
    else if (type == "float") read_as<float>(path);
    else if (type == "int32") read_as<std::int32_t>(path);
    else if (type == "int64") read_as<std::int64_t>(path);
    else if (type == "uint8") read_as<std::uint8_t>(path);
    else FAIL("unknown type " << type);
}

struct Malformed {
    std::string file, type;
    std::size_t line;
    std::string reason;
};

const std::vector<Malformed> malformed_corpus = {
    {"mm_empty.mtx", "double", 1, "missing %%MatrixMarket header"},
    {"mm_no_header.mtx", "double", 1, "missing %%MatrixMarket header"},
    {"mm_binary_garbage.mtx", "double", 1, "missing %%MatrixMarket header"},
    {"mm_banner_not_first.mtx", "double", 1, "missing %%MatrixMarket header"},
    {"mm_incomplete_header.mtx", "double", 1,
     "incomplete header: expected '%%MatrixMarket matrix <format> <field> <symmetry>'"},
    {"mm_vector.mtx", "double", 1, "unsupported object 'vector' (only 'matrix' is supported)"},
    {"mm_unknown_format.mtx", "double", 1, "unknown format 'sparse'"},
    {"mm_complex.mtx", "double", 1, "complex matrices are not supported"},
    {"mm_hermitian.mtx", "double", 1, "hermitian matrices are not supported"},
    {"mm_unknown_field.mtx", "double", 1, "unknown field 'float'"},
    {"mm_unknown_symmetry.mtx", "double", 1, "unknown symmetry 'upper'"},
    {"mm_header_extra.mtx", "double", 1, "unexpected 'extra' after the header"},
    {"mm_array_pattern.mtx", "double", 1, "the array format cannot be pattern"},
    {"mm_pattern_skew.mtx", "double", 1, "a pattern matrix cannot be skew-symmetric"},
    {"mm_missing_size.mtx", "double", 5, "missing size line"},
    {"mm_size_two_numbers.mtx", "double", 3, "invalid size line: expected 'rows columns entries'"},
    {"mm_size_negative.mtx", "double", 2, "invalid size line: expected 'rows columns entries'"},
    {"mm_size_not_number.mtx", "double", 2, "invalid size line: expected 'rows columns entries'"},
    {"mm_size_extra.mtx", "double", 2, "invalid size line: expected 'rows columns entries'"},
    {"mm_array_size_three.mtx", "double", 2, "invalid size line: expected 'rows columns'"},
    {"mm_too_many_rows.mtx", "double", 2, "number of rows 4294967297 exceeds 2^32"},
    {"mm_symmetric_not_square.mtx", "double", 2, "symmetric matrix must be square, got 3x4"},
    {"mm_skew_not_square.mtx", "double", 2, "skew-symmetric matrix must be square, got 4x3"},
    {"mm_row_zero.mtx", "double", 4, "row index 0 is out of range 1..3"},
    {"mm_column_too_large.mtx", "double", 4, "column index 4 is out of range 1..3"},
    {"mm_negative_index.mtx", "double", 3, "row index -1 is out of range 1..3"},
    {"mm_row_not_integer.mtx", "double", 3, "row index 'a' is not an integer"},
    {"mm_column_not_integer.mtx", "double", 3, "column index '2.5' is not an integer"},
    {"mm_row_float.mtx", "double", 3, "row index '1.0' is not an integer"},
    {"mm_missing_column.mtx", "double", 4, "missing column index"},
    {"mm_missing_value.mtx", "double", 3, "missing value"},
    {"mm_value_not_number.mtx", "double", 3, "value 'abc' is not a number"},
    {"mm_value_trailing_garbage.mtx", "double", 3, "value '1.5x' is not a number"},
    {"mm_integer_field_fraction.mtx", "double", 4, "value '1.5' is not an integer"},
    {"mm_integer_field_too_large.mtx", "double", 3, "value '99999999999999999999' does not fit int64_t"},
    {"mm_extra_field.mtx", "double", 3, "unexpected extra field '4'"},
    {"mm_pattern_with_value.mtx", "double", 4, "unexpected extra field '5'"},
    {"mm_fewer_entries.mtx", "double", 6, "file ends after 3 of 4 entries"},
    {"mm_fewer_entries_no_newline.mtx", "double", 6, "file ends after 3 of 4 entries"},
    {"mm_more_entries.mtx", "double", 7, "more entries than the 2 declared in the size line"},
    {"mm_truncated_line.mtx", "double", 5, "missing column index"},
    {"mm_skew_diagonal.mtx", "double", 4, "diagonal entry in a skew-symmetric matrix"},
    {"mm_value_overflow.mtx", "double", 3, "value '1e400' does not fit double"},
    {"mm_crlf_error.mtx", "double", 5, "value 'x' is not a number"},
    {"mm_comments_between_entries.mtx", "double", 10, "unexpected extra field '%c'"},
    {"mm_array_fewer_values.mtx", "double", 6, "file ends after 3 of 4 entries"},
    {"mm_array_more_values.mtx", "double", 6, "more entries than the 3 declared in the size line"},
    {"mm_array_two_values_on_line.mtx", "double", 3, "unexpected extra field '2'"},
    {"mm_nul_line.mtx", "double", 4, "row index '\\x00\\x00' is not an integer"},
    {"mm_as_int32_fraction.mtx", "int32", 4, "value '2.5' does not fit int32_t"},
    {"mm_as_int32_out_of_range.mtx", "int32", 3, "value '2147483648' does not fit int32_t"},
    {"mm_as_uint8_out_of_range.mtx", "uint8", 3, "value '300' does not fit uint8_t"},
    {"mm_as_uint8_negative.mtx", "uint8", 3, "value '-1' does not fit uint8_t"},
    {"mm_as_uint8_skew.mtx", "uint8", 3, "negated value '3' does not fit uint8_t"},
    {"mm_as_float_out_of_range.mtx", "float", 3, "value '1e39' does not fit float"},
    {"mm_as_int64_nan.mtx", "int64", 3, "value 'nan' is not a finite number"},
    {"el_one_field.txt", "double", 2, "expected 2 fields, found 1"},
    {"el_four_fields.txt", "double", 2, "expected 2 or 3 fields, found 4"},
    {"el_field_count_change.txt", "double", 3, "expected 3 fields, found 2"},
    {"el_not_integer.txt", "double", 2, "vertex id 'x' is not an integer"},
    {"el_float_id.txt", "double", 1, "vertex id '1.5' is not an integer"},
    {"el_negative_id.txt", "double", 2, "negative vertex id '-1'"},
    {"el_id_too_large.txt", "double", 1, "vertex id '99999999999999999999' does not fit int64_t"},
    {"el_sentinel.txt", "double", 3, "negative vertex id '-1'"},
    {"el_bad_weight.csv", "double", 2, "weight 'abc' is not a number"},
    {"el_empty_field.csv", "double", 2, "empty field"},
    {"el_leading_comma.csv", "double", 2, "empty field"},
    {"el_trailing_comma.csv", "double", 2, "empty field"},
    {"el_second_header.csv", "double", 3, "vertex id 'node_1' is not an integer"},
    {"el_crlf_error.txt", "double", 6, "vertex id '?' is not an integer"},
    {"el_nul_line.txt", "double", 2, "vertex id '\\x00' is not an integer"},
    {"el_as_int32_weight.txt", "int32", 2, "weight '1.5' does not fit int32_t"},
    {"abc_one_field.abc", "double", 2, "expected 2 or 3 fields, found 1"},
    {"abc_four_fields.abc", "double", 2, "expected 2 or 3 fields, found 4"},
    {"abc_bad_weight.abc", "double", 2, "weight 'heavy' is not a number"},
    {"bin_text.bin", "double", 0, "not a hybla binary matrix (bad magic)"},
    {"bin_short.bin", "double", 0, "not a hybla binary matrix (bad magic)"},
};


// read must throw an IoError with this line and reason.
template <class F>
void require_io_error(F&& read, std::size_t line, const std::string& reason) {
    try {
        read();
        FAIL("no IoError");
    } catch (const IoError& e) {
        CHECK(e.line() == line);
        CHECK(e.reason() == reason);
    }
}

// The first column of a per-vertex truth file ("id<TAB>value"), gzip or not.
std::vector<std::string> first_column(const fs::path& file) {
    Array<char> text = io::detail::read_file(file.string());
    std::istringstream in(std::string(text.data(), text.size()));
    std::vector<std::string> ids;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string id;
        if (ls >> id) ids.push_back(id);
    }
    return ids;
}

}  // namespace

// ------------------------------------------------------------------------------------------------------------
// The malformed corpus

TEST_CASE("malformed corpus: every file fails with its exact line and reason", "[io][malformed]") {
    const Malformed m = GENERATE(from_range(malformed_corpus));
    const std::size_t chunk = GENERATE(from_range(chunk_sizes));
    // 56: the longest line of the corpus with its '\n', so windows end after almost every line.
    const std::size_t window = GENERATE(std::size_t(0), std::size_t(56));
    ChunkBytes guard(chunk);
    WindowBytes window_guard(window);
    const std::string path = (malformed_dir / m.file).string();
    INFO(m.file << " read as " << m.type << ", chunk bytes " << chunk << ", window bytes " << window);
    REQUIRE(fs::exists(path));
    try {
        read_as(path, m.type);
        FAIL("no IoError");
    } catch (const IoError& e) {
        CHECK(e.file() == path);
        CHECK(e.reason() == m.reason);
        CHECK(e.line() == m.line);
    }
}

TEST_CASE("malformed corpus: every file in the folder has an expectation", "[io][malformed]") {
    std::set<std::string> listed;
    for (const Malformed& m : malformed_corpus) listed.insert(m.file);
    CHECK(listed.size() == malformed_corpus.size());
    for (const auto& entry : fs::directory_iterator(malformed_dir)) {
        INFO(entry.path().filename().string());
        CHECK(listed.count(entry.path().filename().string()) == 1);
    }
}

TEST_CASE("IoError message names file, line and reason", "[io]") {
    const std::string path = (malformed_dir / "mm_row_zero.mtx").string();
    try {
        read_matrix_market<double>(path);
        FAIL("no IoError");
    } catch (const IoError& e) {
        CHECK(std::string(e.what()) == path + ":4: row index 0 is out of range 1..3");
    }
}

TEST_CASE("missing files and directories cannot be opened", "[io]") {
    TempDir tmp;
    const std::string missing = tmp.file("no_such_file.mtx");
    auto check = [&](auto&& read, const std::string& path, const std::string& reason_start) {
        try {
            read(path);
            FAIL("no IoError");
        } catch (const IoError& e) {
            CHECK(e.file() == path);
            CHECK(e.line() == 0);
            CHECK_THAT(e.reason(), Catch::StartsWith(reason_start));
        }
    };
    for (const std::string& path : {missing, tmp.path.string()}) {
        const std::string reason = path == missing ? "cannot open: " : "cannot open: not a regular file";
        check([](const std::string& p) { read_matrix_market<double>(p); }, path, reason);
        check([](const std::string& p) { read_edge_list<double>(p); }, path, reason);
        check([](const std::string& p) { read_abc<double>(p); }, path, reason);
        check([](const std::string& p) { read_binary<double>(p); }, path, reason);
        check([](const std::string& p) { read_graph<double>(p); }, path, reason);
    }
    check([](const std::string& p) { read_matrix_market_header(p); }, missing, "cannot open: ");
    check([](const std::string& p) { read_matrix_market_header(p); }, tmp.path.string(), "cannot open: not a regular file");
    check([](const std::string& p) { write_matrix_market(p, Matrix<double>(2, 2)); }, tmp.file("no_dir/x.mtx"),
          "cannot open for writing: ");
}

// ------------------------------------------------------------------------------------------------------------
// Matrix Market

TEMPLATE_TEST_CASE("Matrix Market write then read gives the identical matrix", "[io][mtx]", double, float, std::int8_t,
                   std::int32_t, std::int64_t, std::uint8_t, std::uint64_t, bool) {
    TempDir tmp;
    const Matrix<TestType> a = random_matrix<TestType>(57, 31, 400, 7);
    for (const std::string name : {"a.mtx", "a.mtx.gz"}) {
        const std::string path = tmp.file(name);
        MatrixMarketWriteOptions options;
        options.comment = "random test matrix\nsecond line";
        write_matrix_market(path, a, options);
        for (std::size_t chunk : chunk_sizes) {
            ChunkBytes guard(chunk);
            INFO(name << ", chunk bytes " << chunk);
            require_identical(read_matrix_market<TestType>(path), a);
        }
        const MatrixMarketHeader h = read_matrix_market_header(path);
        CHECK(h.format == MatrixMarketHeader::Format::coordinate);
        CHECK(h.field == (std::is_floating_point_v<TestType> ? MatrixMarketHeader::Field::real
                                                              : MatrixMarketHeader::Field::integer));
        CHECK(h.symmetry == MatrixMarketHeader::Symmetry::general);
        CHECK(h.nrows == 57);
        CHECK(h.ncols == 31);
        CHECK(h.nentries == 400);
    }
    // The structure alone: every value reads back as 1.
    const std::string path = tmp.file("p.mtx");
    MatrixMarketWriteOptions pattern;
    pattern.pattern = true;
    write_matrix_market(path, a, pattern);
    CHECK(read_matrix_market_header(path).field == MatrixMarketHeader::Field::pattern);
    const Matrix<TestType> p = read_matrix_market<TestType>(path).to(Context::cpu());
    REQUIRE(p.nvals() == a.nvals());
    const Matrix<TestType> ah = a.to(Context::cpu());
    CHECK(std::equal(p.col_indices().begin(), p.col_indices().end(), ah.col_indices().begin()));
    for (TestType v : p.values()) CHECK(v == TestType(1));
}

TEST_CASE("Matrix Market writes readable text", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("a.mtx");
    std::vector<Index> r = {0, 1, 1}, c = {1, 0, 2};
    std::vector<double> v = {0.1, -2, 1e-300};
    MatrixMarketWriteOptions options;
    options.comment = "hello";
    write_matrix_market(path, Matrix<double>::from_tuples(2, 3, r, c, v), options);
    CHECK(read_bytes(path) ==
          "%%MatrixMarket matrix coordinate real general\n% hello\n2 3 3\n1 2 0.1\n2 1 -2\n2 3 1e-300\n");
    std::vector<std::int32_t> vi = {7, -8, 9};
    write_matrix_market(path, Matrix<std::int32_t>::from_tuples(2, 3, r, c, vi));
    CHECK(read_bytes(path) == "%%MatrixMarket matrix coordinate integer general\n2 3 3\n1 2 7\n2 1 -8\n2 3 9\n");
    write_matrix_market(path, Matrix<std::int32_t>(0, 0));
    CHECK(read_bytes(path) == "%%MatrixMarket matrix coordinate integer general\n0 0 0\n");
    CHECK(read_matrix_market<double>(path).nrows() == 0);
}

TEST_CASE("Matrix Market symmetry kinds expand to both triangles", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("s.mtx");
    for (std::size_t chunk : chunk_sizes) {
        ChunkBytes guard(chunk);
        INFO("chunk bytes " << chunk);
        write_text(path, "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1.5\n2 1 -2\n3 2 4e-3\n");
        CHECK(entries(read_matrix_market<double>(path)) ==
              Entries{{{0, 0}, 1.5}, {{1, 0}, -2}, {{0, 1}, -2}, {{2, 1}, 4e-3}, {{1, 2}, 4e-3}});
        write_text(path, "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 3\n3 1 -1\n");
        CHECK(entries(read_matrix_market<double>(path)) == Entries{{{1, 0}, 3}, {{0, 1}, -3}, {{2, 0}, -1}, {{0, 2}, 1}});
        write_text(path, "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 1\n3 2 -7\n");
        CHECK(entries(read_matrix_market<std::int8_t>(path)) ==
              std::map<std::pair<Index, Index>, std::int8_t>{{{2, 1}, -7}, {{1, 2}, 7}});
        write_text(path, "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n3 1\n3 2\n");
        CHECK(entries(read_matrix_market<float>(path)) ==
              std::map<std::pair<Index, Index>, float>{{{0, 0}, 1}, {{2, 0}, 1}, {{0, 2}, 1}, {{2, 1}, 1}, {{1, 2}, 1}});
        write_text(path, "%%MatrixMarket matrix coordinate integer symmetric\n2 2 2\n1 1 4\n2 1 -5\n");
        CHECK(entries(read_matrix_market<std::int32_t>(path)) ==
              std::map<std::pair<Index, Index>, std::int32_t>{{{0, 0}, 4}, {{1, 0}, -5}, {{0, 1}, -5}});
        const MatrixMarketHeader h = read_matrix_market_header(path);
        CHECK(h.field == MatrixMarketHeader::Field::integer);
        CHECK(h.symmetry == MatrixMarketHeader::Symmetry::symmetric);
    }
}

TEST_CASE("Matrix Market array format", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("a.mtx");
    for (std::size_t chunk : chunk_sizes) {
        ChunkBytes guard(chunk);
        INFO("chunk bytes " << chunk);
        // Column-major; every listed value is an entry, zeros included.
        write_text(path, "%%MatrixMarket matrix array real general\n% comment\n2 3\n1\n2\n0\n4\n5\n6.5\n");
        CHECK(entries(read_matrix_market<double>(path)) ==
              Entries{{{0, 0}, 1}, {{1, 0}, 2}, {{0, 1}, 0}, {{1, 1}, 4}, {{0, 2}, 5}, {{1, 2}, 6.5}});
        write_text(path, "%%MatrixMarket matrix array integer symmetric\n3 3\n1\n2\n3\n4\n5\n6\n");
        CHECK(entries(read_matrix_market<double>(path)) ==
              Entries{{{0, 0}, 1}, {{1, 0}, 2}, {{0, 1}, 2}, {{2, 0}, 3}, {{0, 2}, 3}, {{1, 1}, 4}, {{2, 1}, 5}, {{1, 2}, 5}, {{2, 2}, 6}});
        write_text(path, "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n");
        CHECK(entries(read_matrix_market<double>(path)) ==
              Entries{{{1, 0}, 1}, {{0, 1}, -1}, {{2, 0}, 2}, {{0, 2}, -2}, {{2, 1}, 3}, {{1, 2}, -3}});
        write_text(path, "%%MatrixMarket matrix array real general\n0 0\n");
        CHECK(read_matrix_market<double>(path).nvals() == 0);
        CHECK(read_matrix_market_header(path).format == MatrixMarketHeader::Format::array);
    }
}

TEST_CASE("Matrix Market tolerates case, comments, blank lines, CRLF, tabs and a plus sign", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("a.mtx");
    write_text(path,
               "%%matrixmarket MATRIX Coordinate REAL General\r\n%comment\r\n\r\n  % indented comment\r\n"
               "2 2 3\r\n\r\n1\t1\t+1.5\r\n  2 1 -0\r\n% between\r\n2   2   2E3");
    const Matrix<double> a = read_matrix_market<double>(path);
    CHECK(entries(a) == Entries{{{0, 0}, 1.5}, {{1, 0}, 0.0}, {{1, 1}, 2000}});
    CHECK(std::signbit(*a.get(1, 0)));
}

TEST_CASE("Matrix Market duplicates are summed by default, or combined with the given operator", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("d.mtx");
    write_text(path, "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 2 1.5\n2 2 1\n1 2 4\n");
    CHECK(entries(read_matrix_market<double>(path)) == Entries{{{0, 1}, 5.5}, {{1, 1}, 1}});
    CHECK(entries(read_matrix_market<double>(path, first_op{})) == Entries{{{0, 1}, 1.5}, {{1, 1}, 1}});
    CHECK(entries(read_matrix_market<double>(path, max_op{})) == Entries{{{0, 1}, 4}, {{1, 1}, 1}});
}

TEST_CASE("Matrix Market converts values to the requested type exactly", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("v.mtx");
    write_text(path, "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 3.0\n1 2 -2e2\n2 2 0\n");
    CHECK(entries(read_matrix_market<std::int16_t>(path)) ==
          std::map<std::pair<Index, Index>, std::int16_t>{{{0, 0}, 3}, {{0, 1}, -200}, {{1, 1}, 0}});
    CHECK(entries(read_matrix_market<bool>(path)) ==
          std::map<std::pair<Index, Index>, bool>{{{0, 0}, true}, {{0, 1}, true}, {{1, 1}, false}});
    // Integers above 2^53 stay exact for int64.
    write_text(path, "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 9007199254740993\n");
    CHECK(*read_matrix_market<std::int64_t>(path).get(0, 0) == 9007199254740993LL);
}

TEST_CASE("Matrix Market parsing is the same for every chunking of a larger file", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("big.mtx");
    std::mt19937_64 rng(3);
    std::string text = "%%MatrixMarket matrix coordinate real general\n% generated\n";
    const int n = 60000;
    text += "5000 4000 " + std::to_string(n) + "\n";
    for (int k = 0; k < n; ++k) {
        if (k % 1000 == 0) text += "% comment\n\n";
        text += std::to_string(rng() % 5000 + 1) + " " + std::to_string(rng() % 4000 + 1) + " " +
                std::to_string(double(rng() % 100000) / 7) + (k % 3 ? "\n" : "\r\n");
    }
    write_text(path, text);
    const Matrix<double> ref = read_matrix_market<double>(path);
    CHECK(ref.nrows() == 5000);
    for (std::size_t chunk : {std::size_t(1), std::size_t(1000), std::size_t(65536)}) {
        ChunkBytes guard(chunk);
        require_identical(read_matrix_market<double>(path), ref);
    }
    // An error far into the file keeps its exact line number.
    text += "1 1 oops\n";
    write_text(path, text);
    for (std::size_t chunk : {std::size_t(0), std::size_t(1000)}) {
        ChunkBytes guard(chunk);
        try {
            read_matrix_market<double>(path);
            FAIL("no IoError");
        } catch (const IoError& e) {
            CHECK(e.line() == std::size_t(std::count(text.begin(), text.end(), '\n')));
            CHECK(e.reason() == "more entries than the 60000 declared in the size line");
        }
    }
}

TEST_CASE("Matrix Market refuses NaN and infinite values with their line", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("v.mtx");
    for (const std::string& v : non_finite) {
        INFO(v);
        const std::string reason = "value '" + v + "' is not a finite number";
        write_text(path, "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 -2\n2 2 " + v + "\n");
        require_io_error([&] { read_matrix_market<double>(path); }, 4, reason);
        require_io_error([&] { read_matrix_market<float>(path); }, 4, reason);
        require_io_error([&] { read_matrix_market<std::int32_t>(path); }, 4, reason);
        require_io_error([&] { read_matrix_market<bool>(path); }, 4, reason);
        write_text(path, "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 " + v + "\n");
        require_io_error([&] { read_matrix_market<double>(path); }, 3, reason);
        write_text(path, "%%MatrixMarket matrix array real general\n2 1\n0\n" + v + "\n");
        require_io_error([&] { read_matrix_market<double>(path); }, 4, reason);
        require_io_error([&] { read_matrix_market<std::int64_t>(path); }, 4, reason);
    }
    // A finite number beyond the type's range does not fit it; the largest finite ones are read.
    write_text(path, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1e400\n");
    require_io_error([&] { read_matrix_market<double>(path); }, 3, "value '1e400' does not fit double");
    write_text(path, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1e40\n");
    require_io_error([&] { read_matrix_market<float>(path); }, 3, "value '1e40' does not fit float");
    write_text(path, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 -1.7976931348623157e308\n");
    CHECK(*read_matrix_market<double>(path).get(0, 0) == std::numeric_limits<double>::lowest());
    write_text(path, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 3.4028234e38\n");
    CHECK(*read_matrix_market<float>(path).get(0, 0) == std::numeric_limits<float>::max());
}

TEST_CASE("Matrix Market: an index beyond int64 does not fit int64_t, as in edge lists", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("i.mtx");
    write_text(path, "%%MatrixMarket matrix coordinate real general\n3 3 1\n99999999999999999999 1 1\n");
    require_io_error([&] { read_matrix_market<double>(path); }, 3,
                     "row index '99999999999999999999' does not fit int64_t");
    write_text(path, "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 1\n2 -9223372036854775809\n");
    require_io_error([&] { read_matrix_market<double>(path); }, 4,
                     "column index '-9223372036854775809' does not fit int64_t");
    // In range for int64 but not for the matrix, and not a number at all: as before.
    write_text(path, "%%MatrixMarket matrix coordinate real general\n3 3 1\n9223372036854775807 1 1\n");
    require_io_error([&] { read_matrix_market<double>(path); }, 3,
                     "row index 9223372036854775807 is out of range 1..3");
    write_text(path, "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1e3 1\n");
    require_io_error([&] { read_matrix_market<double>(path); }, 3, "column index '1e3' is not an integer");
}

TEST_CASE("Matrix Market writing refuses NaN and infinite values before creating the file", "[io][mtx]") {
    TempDir tmp;
    const std::string path = tmp.file("w.mtx");
    std::vector<Index> r = {0, 1}, c = {1, 0};
    std::vector<double> v = {1.5, std::numeric_limits<double>::infinity()};
    const Matrix<double> a = Matrix<double>::from_tuples(2, 2, r, c, v);
    try {
        write_matrix_market(path, a);
        FAIL("no InvalidValue");
    } catch (const InvalidValue& e) {
        CHECK(std::string(e.what()).find("write_matrix_market: entry 1 (1, 0) is inf") != std::string::npos);
    }
    CHECK_FALSE(fs::exists(path));
    std::vector<float> f = {std::numeric_limits<float>::quiet_NaN(), 2};
    CHECK_THROWS_AS(write_matrix_market(path, Matrix<float>::from_tuples(2, 2, r, c, f)), InvalidValue);
    CHECK_FALSE(fs::exists(path));
    // The structure alone has no values to refuse.
    MatrixMarketWriteOptions pattern;
    pattern.pattern = true;
    write_matrix_market(path, a, pattern);
    CHECK(read_matrix_market<double>(path).nvals() == 2);
}

// ------------------------------------------------------------------------------------------------------------
// Edge lists

TEST_CASE("edge list: SNAP style with comments, tabs and CRLF", "[io][edges]") {
    TempDir tmp;
    const std::string path = tmp.file("g.txt");
    write_text(path, "# Directed graph\r\n# FromNodeId\tToNodeId\r\n0\t1\r\n1\t2\r\n\r\n2\t0\r\n");
    for (std::size_t chunk : chunk_sizes) {
        ChunkBytes guard(chunk);
        const Graph<double> g = read_edge_list<double>(path);
        CHECK(g.names.ids == std::vector<std::int64_t>{0, 1, 2});
        CHECK(entries(g.matrix) == Entries{{{0, 1}, 1}, {{1, 2}, 1}, {{2, 0}, 1}});
        CHECK_FALSE(g.undirected);
    }
}

TEST_CASE("edge list: CSV with a header line and spaces after commas", "[io][edges]") {
    TempDir tmp;
    const std::string path = tmp.file("g.csv");
    write_text(path, "node_1,node_2\n10,20\n20, 30\n30 ,10\n");
    for (std::size_t chunk : chunk_sizes) {
        ChunkBytes guard(chunk);
        const Graph<float> g = read_edge_list<float>(path);
        CHECK(g.names.ids == std::vector<std::int64_t>{10, 20, 30});
        CHECK(entries(g.matrix) == std::map<std::pair<Index, Index>, float>{{{0, 1}, 1}, {{1, 2}, 1}, {{2, 0}, 1}});
    }
    write_text(path, "source target weight\n1 2 0.5\n2 3 -1e-3\n");
    CHECK(entries(read_edge_list<double>(path).matrix) == Entries{{{0, 1}, 0.5}, {{1, 2}, -1e-3}});
}

TEST_CASE("edge list: ids that skip numbers are numbered compactly and kept", "[io][edges]") {
    TempDir tmp;
    const std::string dense = tmp.file("dense.txt"), sparse = tmp.file("sparse.txt");
    // The same graph with small ids (direct lookup table) and with huge ids (sorted search).
    write_text(dense, "7 1000\n1000 5\n5 7\n7 7\n");
    write_text(sparse, "7 1000000000000000\n1000000000000000 5\n5 7\n7 7\n");
    for (std::size_t chunk : chunk_sizes) {
        ChunkBytes guard(chunk);
        const Graph<double> a = read_edge_list<double>(dense), b = read_edge_list<double>(sparse);
        CHECK(a.names.ids == std::vector<std::int64_t>{5, 7, 1000});
        CHECK(b.names.ids == std::vector<std::int64_t>{5, 7, 1000000000000000});
        const Entries expected{{{1, 2}, 1}, {{2, 0}, 1}, {{0, 1}, 1}, {{1, 1}, 1}};
        CHECK(entries(a.matrix) == expected);
        CHECK(entries(b.matrix) == expected);
        CHECK(a.names.name(2) == "1000");
        CHECK(b.names.name(2) == "1000000000000000");
    }
}

TEST_CASE("edge list: weights, duplicates and undirected reading", "[io][edges]") {
    TempDir tmp;
    const std::string path = tmp.file("w.txt");
    write_text(path, "0 1 2.0\n1 0 5.0\n2 2 1.5\n0 1 3.0\n");
    for (std::size_t chunk : chunk_sizes) {
        ChunkBytes guard(chunk);
        // Directed: repeated (0,1) keeps its first weight by default.
        CHECK(entries(read_edge_list<double>(path).matrix) == Entries{{{0, 1}, 2}, {{1, 0}, 5}, {{2, 2}, 1.5}});
        CHECK(entries(read_edge_list<double>(path, {}, plus_op{}).matrix) == Entries{{{0, 1}, 5}, {{1, 0}, 5}, {{2, 2}, 1.5}});
        // Undirected: the first line naming the pair, in either direction, sets both directions.
        const Graph<double> u = read_edge_list<double>(path, {.undirected = true});
        CHECK(u.undirected);
        CHECK(entries(u.matrix) == Entries{{{0, 1}, 2}, {{1, 0}, 2}, {{2, 2}, 1.5}});
        CHECK(entries(read_edge_list<double>(path, {.undirected = true}, max_op{}).matrix) ==
              Entries{{{0, 1}, 5}, {{1, 0}, 5}, {{2, 2}, 1.5}});
        write_text(tmp.file("i.txt"), "0 1 -7\n1 0 5\n");
        CHECK(entries(read_edge_list<std::int32_t>(tmp.file("i.txt"), {.undirected = true}, min_op{}).matrix) ==
              std::map<std::pair<Index, Index>, std::int32_t>{{{0, 1}, -7}, {{1, 0}, -7}});
    }
}

TEST_CASE("edge list and abc: files without edges are refused", "[io][edges][abc]") {
    TempDir tmp;
    const std::string path = tmp.file("e.txt");
    for (const std::string text : {"", "# nothing\n", "\n\n", "% c\r\n", "  # c\n\t\n"}) {
        INFO('"' << text << '"');
        write_text(path, text);
        const std::string reason = "no edges: the file is empty or holds only comments";
        require_io_error([&] { read_edge_list<double>(path); }, 0, reason);
        // '%' starts no comment in mcl's format.
        if (text.find('%') == std::string::npos)
            require_io_error([&] { read_abc<double>(path); }, 0, reason);
    }
    for (const std::string text : {"node_1,node_2\n", "# c\nsource target weight\n\n"}) {
        write_text(path, text);
        require_io_error([&] { read_edge_list<double>(path); }, 0, "no edges: the file holds only a header line");
    }
    // A Matrix Market file with 0 entries is a valid empty matrix.
    write_text(path, "%%MatrixMarket matrix coordinate real general\n3 3 0\n");
    CHECK(read_matrix_market<double>(path).nvals() == 0);
}

TEST_CASE("edge list: a header is skipped only when it looks like one", "[io][edges]") {
    TempDir tmp;
    const std::string path = tmp.file("h.csv");
    // A damaged first edge (a no-break space, bytes C2 A0, between the ids) is an edge that fails, not a header.
    write_text(path, "1\xc2\xa0" "2\n2 3\n3 1\n");
    require_io_error([&] { read_edge_list<double>(path); }, 1, "vertex id '1\\xc2\\xa02' is not an integer");
    // Words, as many fields as the first edge line: a header, after comments and blank lines too.
    for (std::size_t window : {std::size_t(0), std::size_t(32)}) {
        WindowBytes guard(window);
        INFO("window bytes " << window);
        write_text(path, "# c\n\nnode_1,node_2\n% c\n\n10,20\n20,30\n");
        CHECK(read_edge_list<double>(path).names.ids == std::vector<std::int64_t>{10, 20, 30});
        write_text(path, "Source-id\ttarget.v weight_1\n1 2 0.5\n");
        CHECK(entries(read_edge_list<double>(path).matrix) == Entries{{{0, 1}, 0.5}});
        // The data line that confirms the header may come many windows later.
        std::string text = "_from _to\n";
        for (int k = 0; k < 200; ++k) text += "# comment " + std::to_string(k) + "\n";
        write_text(path, text + "5 6\n");
        CHECK(read_edge_list<double>(path).names.ids == std::vector<std::int64_t>{5, 6});
        // Not as many fields as the first data line after it: the line is the first edge, and fails as one.
        write_text(path, text + "1 2 0.5\n");
        require_io_error([&] { read_edge_list<double>(path); }, 1, "vertex id '_from' is not an integer");
    }
    write_text(path, "source target weight\n1 2\n");
    require_io_error([&] { read_edge_list<double>(path); }, 1, "vertex id 'source' is not an integer");
    // Fields that are not words: quoted, starting with a digit, or not ASCII.
    write_text(path, "\"src\",\"dst\"\n1,2\n");
    require_io_error([&] { read_edge_list<double>(path); }, 1, "vertex id '\"src\"' is not an integer");
    write_text(path, "1a b\n1 2\n");
    require_io_error([&] { read_edge_list<double>(path); }, 1, "vertex id '1a' is not an integer");
    write_text(path, "\xc3\xa9t\xc3\xa9 b\n1 2\n");
    require_io_error([&] { read_edge_list<double>(path); }, 1, "vertex id '\\xc3\\xa9t\\xc3\\xa9' is not an integer");
    // Four words are not a header either.
    write_text(path, "a b c d\n1 2 3 4\n");
    require_io_error([&] { read_edge_list<double>(path); }, 1, "expected 2 or 3 fields, found 4");
}

TEST_CASE("edge list: NaN and infinite weights are refused with their line", "[io][edges]") {
    TempDir tmp;
    const std::string path = tmp.file("w.txt");
    for (const std::string& v : non_finite) {
        INFO(v);
        const std::string reason = "weight '" + v + "' is not a finite number";
        write_text(path, "0 1 2\n1 2 " + v + "\n");
        require_io_error([&] { read_edge_list<double>(path); }, 2, reason);
        require_io_error([&] { read_edge_list<float>(path); }, 2, reason);
        require_io_error([&] { read_edge_list<std::int32_t>(path); }, 2, reason);
        write_text(path, "a,b,w\n0,1," + v + "\n");
        require_io_error([&] { read_edge_list<double>(path); }, 2, reason);
    }
    write_text(path, "0 1 1e400\n");
    require_io_error([&] { read_edge_list<double>(path); }, 1, "weight '1e400' does not fit double");
}

// ------------------------------------------------------------------------------------------------------------
// mcl --abc labels

TEST_CASE("abc: labels in order of first appearance, missing weight 1", "[io][abc]") {
    TempDir tmp;
    const std::string path = tmp.file("g.abc");
    write_text(path, "beta alpha 2\nalpha\tgamma\r\n\ngamma  beta 0.5\ndelta delta\n");
    for (std::size_t chunk : chunk_sizes) {
        ChunkBytes guard(chunk);
        INFO("chunk bytes " << chunk);
        const Graph<double> g = read_abc<double>(path);
        CHECK(g.names.labels == std::vector<std::string>{"beta", "alpha", "gamma", "delta"});
        CHECK(entries(g.matrix) == Entries{{{0, 1}, 2}, {{1, 2}, 1}, {{2, 0}, 0.5}, {{3, 3}, 1}});
        CHECK(g.names.name(2) == "gamma");
        const Graph<double> u = read_abc<double>(path, {.undirected = true}, max_op{});
        CHECK(entries(u.matrix) == Entries{{{0, 1}, 2}, {{1, 0}, 2}, {{1, 2}, 1}, {{2, 1}, 1}, {{2, 0}, 0.5}, {{0, 2}, 0.5}, {{3, 3}, 1}});
    }
}

TEST_CASE("abc: first appearance order holds across many chunks", "[io][abc]") {
    TempDir tmp;
    const std::string path = tmp.file("g.abc");
    std::string text;
    std::vector<std::string> expected;
    for (int k = 0; k < 3000; ++k) {
        const std::string a = "v" + std::to_string((k * 7919) % 2000), b = "w" + std::to_string(k % 101);
        text += a + "\t" + b + "\n";
        for (const std::string& s : {a, b})
            if (std::find(expected.begin(), expected.end(), s) == expected.end()) expected.push_back(s);
    }
    write_text(path, text);
    for (std::size_t chunk : {std::size_t(0), std::size_t(1), std::size_t(50), std::size_t(999)}) {
        ChunkBytes guard(chunk);
        const Graph<float> g = read_abc<float>(path);
        CHECK(g.names.labels == expected);
        CHECK(g.matrix.nvals() == 3000);
    }
}

TEST_CASE("abc: lines whose first character other than white space is '#' are comments, as in mcl", "[io][abc]") {
    TempDir tmp;
    const std::string path = tmp.file("c.abc");
    // mcl 22-282 skips "  # x y" and "\t#p q" too, and keeps the labels "b#" and "#d" (checked with mcl --abc).
    write_text(path, "# from to weight\n# some words\n  # indented\n\t#tab\na b 2\nb# c\n#x y\nc #d 0.5\r\n# last");
    for (std::size_t chunk : chunk_sizes)
        for (std::size_t window : {std::size_t(0), std::size_t(20)}) {
            ChunkBytes guard(chunk);
            WindowBytes window_guard(window);
            INFO("chunk bytes " << chunk << ", window bytes " << window);
            const Graph<double> g = read_abc<double>(path);
            CHECK(g.names.labels == std::vector<std::string>{"a", "b", "b#", "c", "#d"});
            CHECK(entries(g.matrix) == Entries{{{0, 1}, 2}, {{2, 3}, 1}, {{3, 4}, 0.5}});
        }
    // Line numbers count the comment lines.
    write_text(path, "# c\n  # c\na b\nc\n");
    require_io_error([&] { read_abc<double>(path); }, 4, "expected 2 or 3 fields, found 1");
}

TEST_CASE("abc: NaN and infinite weights are refused with their line", "[io][abc]") {
    TempDir tmp;
    const std::string path = tmp.file("w.abc");
    for (const std::string& v : non_finite) {
        INFO(v);
        const std::string reason = "weight '" + v + "' is not a finite number";
        write_text(path, "a b 1\nd e " + v + "\n");
        require_io_error([&] { read_abc<double>(path); }, 2, reason);
        require_io_error([&] { read_abc<float>(path); }, 2, reason);
        require_io_error([&] { read_abc<std::uint8_t>(path); }, 2, reason);
    }
    write_text(path, "a b 1e40\n");
    require_io_error([&] { read_abc<float>(path); }, 1, "weight '1e40' does not fit float");
}

TEST_CASE("a UTF-8 byte-order mark is refused by every text reader with the same message", "[io]") {
    TempDir tmp;
    const std::string bom = "\xef\xbb\xbf";
    const std::string reason = "the file starts with a UTF-8 byte-order mark (bytes EF BB BF); save it without one";
    const std::string mm = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n";
    write_text(tmp.file("g.mtx"), bom + mm);
    write_text(tmp.file("g.txt"), bom + "1 2\n2 3\n3 1\n");
    write_text(tmp.file("g.abc"), bom + "a b\nb c\nc a\n");
    write_gz(tmp.file("z.abc"), bom + "a b\n");
    for (const std::string name : {"g.mtx", "g.txt", "g.abc", "z.abc"}) {
        INFO(name);
        require_io_error([&] { read_graph<double>(tmp.file(name)); }, 1, reason);
    }
    require_io_error([&] { read_matrix_market<double>(tmp.file("g.mtx")); }, 1, reason);
    require_io_error([&] { read_matrix_market_header(tmp.file("g.mtx")); }, 1, reason);
    require_io_error([&] { read_edge_list<double>(tmp.file("g.txt")); }, 1, reason);
    require_io_error([&] { read_abc<double>(tmp.file("g.abc")); }, 1, reason);
    // The same bytes later in a file are data: part of a label.
    write_text(tmp.file("l.abc"), "a b\nb x" + bom + "\n");
    CHECK(read_abc<double>(tmp.file("l.abc")).names.labels == std::vector<std::string>{"a", "b", "x" + bom});
}

// ------------------------------------------------------------------------------------------------------------
// gzip

TEST_CASE("gzip input is detected by content, not by name", "[io][gz]") {
    TempDir tmp;
    const std::string mm = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 1 -3\n";
    write_gz(tmp.file("a.mtx.gz"), mm);
    write_gz(tmp.file("b.mtx"), mm);  // compressed under a plain name
    write_text(tmp.file("c.mtx.gz"), mm);  // plain under a compressed name
    for (const std::string name : {"a.mtx.gz", "b.mtx", "c.mtx.gz"}) {
        INFO(name);
        CHECK(entries(read_matrix_market<double>(tmp.file(name))) == Entries{{{0, 0}, 1.5}, {{1, 0}, -3}});
        CHECK(read_matrix_market_header(tmp.file(name)).nentries == 2);
        CHECK(entries(read_graph<double>(tmp.file(name)).matrix) == Entries{{{0, 0}, 1.5}, {{1, 0}, -3}});
    }
    write_gz(tmp.file("e.txt.gz"), "# c\n3 4\n4 5\n");
    CHECK(read_edge_list<double>(tmp.file("e.txt.gz")).names.ids == std::vector<std::int64_t>{3, 4, 5});
    write_gz(tmp.file("l.abc.gz"), "x y 2\n");
    CHECK(read_abc<double>(tmp.file("l.abc.gz")).names.labels == std::vector<std::string>{"x", "y"});
    // Two gzip members one after the other read as one stream, as gzip -d does.
    const std::string g1 = tmp.file("p1.gz"), g2 = tmp.file("p2.gz");
    write_gz(g1, mm.substr(0, 50));
    write_gz(g2, mm.substr(50));
    write_text(tmp.file("cat.mtx.gz"), read_bytes(g1) + read_bytes(g2));
    CHECK(entries(read_matrix_market<double>(tmp.file("cat.mtx.gz"))) == Entries{{{0, 0}, 1.5}, {{1, 0}, -3}});
}

TEST_CASE("truncated or corrupt gzip input is an error", "[io][gz]") {
    TempDir tmp;
    std::string big = "%%MatrixMarket matrix coordinate real general\n1000 1000 5000\n";
    for (int k = 0; k < 5000; ++k) big += std::to_string(k % 1000 + 1) + " " + std::to_string(k * 7 % 1000 + 1) + " " + std::to_string(k) + "\n";
    write_gz(tmp.file("full.mtx.gz"), big);
    const std::string bytes = read_bytes(tmp.file("full.mtx.gz"));
    write_text(tmp.file("cut.mtx.gz"), bytes.substr(0, bytes.size() / 2));
    std::string flipped = bytes;
    flipped[flipped.size() / 2] = char(flipped[flipped.size() / 2] ^ 0x55);
    write_text(tmp.file("flip.mtx.gz"), flipped);
    for (const std::string name : {"cut.mtx.gz", "flip.mtx.gz"}) {
        INFO(name);
        try {
            read_matrix_market<double>(tmp.file(name));
            FAIL("no IoError");
        } catch (const IoError& e) {
            CHECK(e.line() == 0);
            CHECK_THAT(e.reason(), Catch::StartsWith("corrupt or truncated gzip data"));
        }
    }
}

TEST_CASE("gzip: concatenated members are read as gzip -d reads them", "[io][gz]") {
    TempDir tmp;
    std::string text;
    for (int k = 0; k < 2000; ++k)
        text += std::to_string(k) + " " + std::to_string((k * 7) % 2000) + " " + std::to_string(k % 13) + "\n";
    write_text(tmp.file("plain.txt"), text);
    const Graph<double> expected = read_edge_list<double>(tmp.file("plain.txt"));
    // Members cut in the middle of lines, one of them empty.
    const std::vector<std::size_t> cuts = {0, 7, 7, text.size() / 2 + 3, text.size()};
    std::string bytes;
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
        write_gz(tmp.file("m.gz"), text.substr(cuts[k], cuts[k + 1] - cuts[k]));
        bytes += read_bytes(tmp.file("m.gz"));
    }
    write_text(tmp.file("cat.txt.gz"), bytes);
    for (std::size_t window : {std::size_t(0), std::size_t(64), std::size_t(1000)}) {
        WindowBytes guard(window);
        INFO("window bytes " << window);
        const Graph<double> g = read_edge_list<double>(tmp.file("cat.txt.gz"));
        require_identical(g.matrix, expected.matrix);
        CHECK(g.names.ids == expected.names.ids);
    }
    const Array<char> all = io::detail::read_file(tmp.file("cat.txt.gz"));
    CHECK(std::string(all.data(), all.size()) == text);
}

TEST_CASE("gzip: data after the last member is an error", "[io][gz]") {
    TempDir tmp;
    const std::string mm = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 1 -3\n";
    write_gz(tmp.file("a.gz"), mm.substr(0, 50));
    write_gz(tmp.file("b.gz"), mm.substr(50));
    const std::string one = read_bytes(tmp.file("a.gz")), two = read_bytes(tmp.file("b.gz"));
    write_gz(tmp.file("whole.gz"), mm);
    const std::string whole = read_bytes(tmp.file("whole.gz"));
    const std::string path = tmp.file("g.mtx.gz");
    for (const std::string garbage :
         {std::string("garbage\n"), std::string("\x1f"), std::string(4, '\0'), std::string("\x1f\x8c")}) {
        INFO("garbage of " << garbage.size() << " bytes");
        for (const std::string& stream : {whole, one + two}) {
            write_text(path, stream + garbage);
            const std::string reason = "trailing data after the gzip stream at byte " + std::to_string(stream.size());
            require_io_error([&] { read_matrix_market<double>(path); }, 0, reason);
            require_io_error([&] { io::detail::read_file(path); }, 0, reason);
        }
    }
    write_gz(tmp.file("e.gz"), "1 2\n2 3\n");
    const std::string edges = read_bytes(tmp.file("e.gz"));
    write_text(path, edges + "x");
    require_io_error([&] { read_edge_list<double>(path); }, 0,
                     "trailing data after the gzip stream at byte " + std::to_string(edges.size()));
    write_gz(tmp.file("l.gz"), "a b\n");
    write_text(path, read_bytes(tmp.file("l.gz")) + "\n");
    CHECK_THROWS_AS(read_abc<double>(path), IoError);
    // A second member that is cut short, or the magic bytes followed by no gzip member, is corrupt.
    for (const std::string& stream : {one + two.substr(0, two.size() - 5), one + "\x1f\x8b\x08garbage"}) {
        write_text(path, stream);
        try {
            read_matrix_market<double>(path);
            FAIL("no IoError");
        } catch (const IoError& e) {
            CHECK(e.line() == 0);
            CHECK_THAT(e.reason(), Catch::StartsWith("corrupt or truncated gzip data"));
        }
    }
}

// ------------------------------------------------------------------------------------------------------------
// Reading in windows of whole lines

TEST_CASE("every bundled graph reads the same in small windows", "[io][window][data]") {
    std::size_t checked = 0;
    for (const auto& dir : fs::directory_iterator(data_dir)) {
        const fs::path truth_file = dir.path() / "truth.txt";
        if (!fs::exists(truth_file)) continue;
        const auto truth = ref::read_truth(truth_file.string());
        fs::path file = dir.path() / truth.at("graph_file");
        if (!fs::exists(file)) file += ".gz";
        INFO(file.string());
        const bool labels = truth.at("vertex_ids").find("names") != std::string::npos;
        auto read = [&] { return labels ? read_abc<double>(file.string()) : read_graph<double>(file.string()); };
        const Graph<double> expected = read();
        for (std::size_t window : {std::size_t(1000), std::size_t(4096)}) {
            WindowBytes guard(window);
            INFO("window bytes " << window);
            const Graph<double> g = read();
            require_identical(g.matrix, expected.matrix);
            CHECK(g.names.ids == expected.names.ids);
            CHECK(g.names.labels == expected.names.labels);
        }
        ++checked;
    }
    CHECK(checked >= 20);
}

TEST_CASE("text read in small windows gives the same graphs, and errors keep their exact line numbers", "[io][window]") {
    TempDir tmp;
    std::mt19937_64 rng(5);
    const int n = 20000;
    // The header spans windows; comments, blank lines and CRLF lie among the entries.
    std::string head = "%%MatrixMarket matrix coordinate real general\n";
    for (int k = 0; k < 300; ++k) head += "% comment " + std::to_string(k) + "\n";
    std::string mm, el, abc;
    for (int k = 0; k < n; ++k) {
        if (k % 997 == 0) mm += "% c\n\n", el += "# c\n\n", abc += "# c\n\n";
        const std::string i = std::to_string(rng() % 3000 + 1), j = std::to_string(rng() % 3000 + 1);
        const std::string end = k % 3 ? "\n" : "\r\n";
        mm += i + " " + j + " " + std::to_string(k) + end;
        el += i + "\t" + j + end;
        abc += "v" + i + " v" + j + " 0.5" + end;
    }
    auto lines = [](const std::string& s) { return std::size_t(std::count(s.begin(), s.end(), '\n')); };
    auto size_line = [&](int entries) { return "3000 3000 " + std::to_string(entries) + "\n"; };
    const std::string mm_path = tmp.file("big.mtx"), el_path = tmp.file("big.txt"), abc_path = tmp.file("big.abc");
    write_text(mm_path, head + size_line(n) + mm);
    write_text(el_path, el);
    write_text(abc_path, abc);
    const Matrix<double> mm_expected = read_matrix_market<double>(mm_path);
    const Graph<double> el_expected = read_edge_list<double>(el_path), abc_expected = read_abc<double>(abc_path);
    for (std::size_t window : {std::size_t(64), std::size_t(1000)})
        for (std::size_t chunk : {std::size_t(0), std::size_t(16)}) {
            WindowBytes window_guard(window);
            ChunkBytes guard(chunk);
            INFO("window bytes " << window << ", chunk bytes " << chunk);
            require_identical(read_matrix_market<double>(mm_path), mm_expected);
            const Graph<double> e = read_edge_list<double>(el_path), a = read_abc<double>(abc_path);
            require_identical(e.matrix, el_expected.matrix);
            CHECK(e.names.ids == el_expected.names.ids);
            require_identical(a.matrix, abc_expected.matrix);
            CHECK(a.names.labels == abc_expected.names.labels);
        }
    for (std::size_t window : {std::size_t(0), std::size_t(64), std::size_t(1000)})
        for (std::size_t chunk : {std::size_t(0), std::size_t(16)}) {
            WindowBytes window_guard(window);
            ChunkBytes guard(chunk);
            INFO("window bytes " << window << ", chunk bytes " << chunk);
            std::string text = head + size_line(n + 1) + mm + "1 1 oops\n";
            write_text(mm_path, text);
            require_io_error([&] { read_matrix_market<double>(mm_path); }, lines(text), "value 'oops' is not a number");
            text = head + size_line(n + 2) + mm + "% no newline after this comment";
            write_text(mm_path, text);
            require_io_error([&] { read_matrix_market<double>(mm_path); }, lines(text) + 2,
                             "file ends after " + std::to_string(n) + " of " + std::to_string(n + 2) + " entries");
            text = head + size_line(n - 1) + mm;
            write_text(mm_path, text);
            require_io_error([&] { read_matrix_market<double>(mm_path); }, lines(text),
                             "more entries than the " + std::to_string(n - 1) + " declared in the size line");
            write_text(el_path, el + "5 x\n");
            require_io_error([&] { read_edge_list<double>(el_path); }, lines(el) + 1,
                             "vertex id 'x' is not an integer");
            write_text(abc_path, abc + "a b inf\n");
            require_io_error([&] { read_abc<double>(abc_path); }, lines(abc) + 1,
                             "weight 'inf' is not a finite number");
        }
}

TEST_CASE("a gzip file of 48 MiB of comments is parsed holding one window at a time", "[io][window][gz]") {
    TempDir tmp;
    const std::size_t mib = std::size_t(1) << 20;
    auto comments = [&](char mark) {
        const std::string line = mark + (" " + std::string(70, 'c')) + "\n";
        std::string s;
        s.reserve(48 * mib + line.size());
        while (s.size() < 48 * mib) s += line;
        return s;
    };
    const std::string hashes = comments('#');
    const std::size_t n = std::size_t(std::count(hashes.begin(), hashes.end(), '\n'));
    write_gz(tmp.file("e.txt.gz"), hashes + "1 2\n2 3\n3 1\n");
    write_gz(tmp.file("l.abc.gz"), hashes + "a b\nb c\n");
    write_gz(tmp.file("m.mtx.gz"),
             "%%MatrixMarket matrix coordinate real general\n" + comments('%') + "3 3 2\n1 2 0.5\n3 3 1\n");
    write_gz(tmp.file("bad.txt.gz"), hashes + "1 2\n2 x\n");
    WindowBytes guard(mib);
    io::detail::reset_peak_text_window_bytes();
    CHECK(read_edge_list<double>(tmp.file("e.txt.gz")).names.ids == std::vector<std::int64_t>{1, 2, 3});
    CHECK(read_abc<double>(tmp.file("l.abc.gz")).names.labels == std::vector<std::string>{"a", "b", "c"});
    CHECK(entries(read_matrix_market<double>(tmp.file("m.mtx.gz"))) == Entries{{{0, 1}, 0.5}, {{2, 2}, 1}});
    CHECK(read_matrix_market_header(tmp.file("m.mtx.gz")).nentries == 2);
    require_io_error([&] { read_edge_list<double>(tmp.file("bad.txt.gz")); }, n + 2, "vertex id 'x' is not an integer");
    CHECK(io::detail::peak_text_window_bytes() > 0);
    CHECK(io::detail::peak_text_window_bytes() <= mib);
}

TEST_CASE("a line longer than the window is an error naming the line", "[io][window]") {
    TempDir tmp;
    const std::size_t mib = std::size_t(1) << 20;
    WindowBytes guard(mib);
    write_text(tmp.file("long.txt"), "1 2\n# c\n" + std::string(2 * mib, '7') + " 1\n3 4\n");
    require_io_error([&] { read_edge_list<double>(tmp.file("long.txt")); }, 3, "line 3 is longer than 1 MiB");
    // A file of NUL bytes (no line end at all) fails at once in every reader, compressed or not.
    const std::string nul(4 * mib, '\0');
    write_text(tmp.file("nul.txt"), nul);
    write_gz(tmp.file("nul.gz"), nul);
    for (const std::string name : {"nul.txt", "nul.gz"}) {
        INFO(name);
        require_io_error([&] { read_edge_list<double>(tmp.file(name)); }, 1, "line 1 is longer than 1 MiB");
        require_io_error([&] { read_abc<double>(tmp.file(name)); }, 1, "line 1 is longer than 1 MiB");
        require_io_error([&] { read_matrix_market<double>(tmp.file(name)); }, 1, "line 1 is longer than 1 MiB");
    }
    // A line fits when it and its line end fit; the last line needs no line end.
    WindowBytes tiny(16);
    write_text(tmp.file("fit.txt"), "1 2\n12345 6789012345");
    CHECK(read_edge_list<double>(tmp.file("fit.txt")).names.ids == std::vector<std::int64_t>{1, 2, 12345, 6789012345});
    write_text(tmp.file("fit.txt"), "1 2\n12345 6789012345\n");
    require_io_error([&] { read_edge_list<double>(tmp.file("fit.txt")); }, 2, "line 2 is longer than 16 bytes");
}

// ------------------------------------------------------------------------------------------------------------
// Binary format

TEMPLATE_TEST_CASE("binary write then read gives the identical matrix", "[io][binary]", double, float, std::int32_t,
                   std::int64_t, std::uint8_t, bool) {
    TempDir tmp;
    const Matrix<TestType> a = random_matrix<TestType>(80, 45, 700, 11);
    for (const std::string name : {"a.bin", "a.hyb.gz"}) {
        write_binary(tmp.file(name), a);
        require_identical(read_binary<TestType>(tmp.file(name)), a);
        const Graph<TestType> g = read_graph<TestType>(tmp.file(name));
        require_identical(g.matrix, a);
        CHECK_FALSE(g.names.has_ids());
        CHECK_FALSE(g.names.has_labels());
    }
    write_binary(tmp.file("empty.bin"), Matrix<TestType>(0, 0));
    CHECK(read_binary<TestType>(tmp.file("empty.bin")).nrows() == 0);
    write_binary(tmp.file("rect.bin"), Matrix<TestType>(3, 0));
    CHECK(read_binary<TestType>(tmp.file("rect.bin")).nrows() == 3);
}

TEST_CASE("binary graphs keep their vertex names and direction", "[io][binary]") {
    TempDir tmp;
    write_text(tmp.file("g.txt"), "10 20 1.5\n20 30 2\n");
    const Graph<double> g = read_edge_list<double>(tmp.file("g.txt"), {.undirected = true});
    write_binary(tmp.file("g.bin"), g);
    const Graph<double> h = read_binary_graph<double>(tmp.file("g.bin"));
    require_identical(h.matrix, g.matrix);
    CHECK(h.names.ids == g.names.ids);
    CHECK(h.undirected);

    write_text(tmp.file("l.abc"), "x y\ny \xc3\xa9t\xc3\xa9 3\n");
    const Graph<float> l = read_abc<float>(tmp.file("l.abc"));
    write_binary(tmp.file("l.hyb"), l);
    const Graph<float> m = read_graph<float>(tmp.file("l.hyb"));
    require_identical(m.matrix, l.matrix);
    CHECK(m.names.labels == std::vector<std::string>{"x", "y", "\xc3\xa9t\xc3\xa9"});
    CHECK_FALSE(m.undirected);
    // Symmetrised on request after loading.
    const Graph<float> mu = read_graph<float>(tmp.file("l.hyb"), {.undirected = true});
    CHECK(mu.matrix.nvals() == 4);
    CHECK(mu.undirected);
}

TEST_CASE("corrupt, truncated and mistyped binary files are refused", "[io][binary]") {
    TempDir tmp;
    const Matrix<double> a = random_matrix<double>(20, 20, 50, 5);
    const std::string good = tmp.file("good.bin");
    write_binary(good, a);
    const std::string bytes = read_bytes(good);
    REQUIRE(bytes.size() == 64 + 8 * 21 + 12 * 50);
    auto expect = [&](const std::string& content, const std::string& reason, bool prefix = false) {
        const std::string path = tmp.file("bad.bin");
        write_text(path, content);
        INFO(reason);
        try {
            read_binary<double>(path);
            FAIL("no IoError");
        } catch (const IoError& e) {
            CHECK(e.file() == path);
            CHECK(e.line() == 0);
            if (prefix) CHECK_THAT(e.reason(), Catch::StartsWith(reason));
            else CHECK(e.reason() == reason);
        }
    };
    auto patched = [&](std::size_t at, std::uint32_t value) {
        std::string s = bytes;
        std::memcpy(s.data() + at, &value, 4);
        return s;
    };
    std::string s = bytes;
    s[0] = 'X';
    expect(s, "not a hybla binary matrix (bad magic)");
    expect("", "not a hybla binary matrix (bad magic)");
    expect(bytes.substr(0, 40), "truncated file: incomplete header");
    expect(patched(8, 2), "unsupported version 2 (this build reads version 1)");
    expect(patched(12, 0x04030201), "written on a machine with the other byte order");
    expect(patched(16, 99), "corrupt header: unknown value type tag 99");
    expect(patched(16, std::uint32_t(ValueType::float32)), "stored values are float, requested double");
    expect(bytes.substr(0, bytes.size() - 1), "truncated file: expected 832 bytes, found 831");
    expect(bytes + "x", "unexpected data after the matrix: expected 832 bytes, found 833");
    // A column index out of range.
    expect(patched(64 + 8 * 21, 1000), "corrupt matrix data: ", true);
    // Row offsets that decrease.
    std::string off = bytes;
    const std::uint64_t big = 49;
    std::memcpy(off.data() + 64 + 8, &big, 8);
    expect(off, "corrupt matrix data: ", true);
    // A gzip-compressed file that is truncated.
    write_binary(tmp.file("good.bin.gz"), a);
    const std::string gz = read_bytes(tmp.file("good.bin.gz"));
    expect(gz.substr(0, gz.size() - 10), "corrupt or truncated gzip data", true);

    try {
        read_binary<float>(good);
        FAIL("no IoError");
    } catch (const IoError& e) {
        CHECK(e.reason() == "stored values are double, requested float");
    }
    // Bool values must be 0 or 1.
    const Matrix<bool> b = random_matrix<bool>(4, 4, 3, 1);
    write_binary(tmp.file("b.bin"), b);
    std::string bb = read_bytes(tmp.file("b.bin"));
    bb[bb.size() - 1] = 2;
    write_text(tmp.file("b.bin"), bb);
    try {
        read_binary<bool>(tmp.file("b.bin"));
        FAIL("no IoError");
    } catch (const IoError& e) {
        CHECK(e.reason() == "corrupt matrix data: bool value 2");
    }
}

// ------------------------------------------------------------------------------------------------------------
// read_graph

TEST_CASE("read_graph picks the format by extension", "[io][read_graph]") {
    CHECK(graph_format_of("a/b/karate.mtx") == GraphFormat::matrix_market);
    CHECK(graph_format_of("x.MTX.gz") == GraphFormat::matrix_market);
    CHECK(graph_format_of("x.mm") == GraphFormat::matrix_market);
    CHECK(graph_format_of("x.abc") == GraphFormat::abc);
    CHECK(graph_format_of("x.abc.gz") == GraphFormat::abc);
    CHECK(graph_format_of("x.bin") == GraphFormat::binary);
    CHECK(graph_format_of("x.hyb.gz") == GraphFormat::binary);
    CHECK(graph_format_of("x.txt") == GraphFormat::edge_list);
    CHECK(graph_format_of("x.csv.gz") == GraphFormat::edge_list);
    CHECK(graph_format_of("mtx") == GraphFormat::edge_list);
    CHECK(graph_format_of("dir.mtx/edges") == GraphFormat::edge_list);

    TempDir tmp;
    write_text(tmp.file("g.mtx"), "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 1\n");
    const Graph<double> m = read_graph<double>(tmp.file("g.mtx"));
    CHECK(m.matrix.nvals() == 2);
    CHECK_FALSE(m.undirected);
    CHECK(m.names.name(0) == "1");
    CHECK(m.names.name(2) == "3");
    // Undirected on a general file: both directions were stored, so nothing changes but the flag.
    const Graph<double> mu = read_graph<double>(tmp.file("g.mtx"), {.undirected = true});
    CHECK(entries(mu.matrix) == Entries{{{0, 1}, 1}, {{1, 0}, 1}});
    CHECK(mu.undirected);
    write_text(tmp.file("r.mtx"), "%%MatrixMarket matrix coordinate pattern general\n2 3 1\n1 2\n");
    try {
        read_graph<double>(tmp.file("r.mtx"), {.undirected = true});
        FAIL("no IoError");
    } catch (const IoError& e) {
        CHECK(e.line() == 2);
        CHECK(e.reason() == "an undirected graph needs a square matrix, got 2x3");
    }
    write_text(tmp.file("s.mtx"), "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n2 1 4\n");
    CHECK(read_graph<double>(tmp.file("s.mtx")).undirected);
    write_text(tmp.file("g.txt"), "5 6\n");
    CHECK(read_graph<double>(tmp.file("g.txt")).names.ids == std::vector<std::int64_t>{5, 6});
    write_text(tmp.file("g.abc"), "p q\n");
    CHECK(read_graph<double>(tmp.file("g.abc")).names.labels == std::vector<std::string>{"p", "q"});
}

// ------------------------------------------------------------------------------------------------------------
// The bundled graphs against their truth files

TEST_CASE("bundled graphs in data/ have the vertex and edge counts of their truth files", "[io][data]") {
    std::size_t checked = 0;
    for (const auto& dir : fs::directory_iterator(data_dir)) {
        const fs::path truth_file = dir.path() / "truth.txt";
        if (!fs::exists(truth_file)) continue;
        const auto truth = ref::read_truth(truth_file.string());
        auto num = [&](const std::string& key) -> std::uint64_t {
            INFO("truth key " << key);
            REQUIRE(truth.count(key) == 1);
            return std::stoull(truth.at(key));
        };
        fs::path file = dir.path() / truth.at("graph_file");
        if (!fs::exists(file)) file += ".gz";  // large files were gzipped after the truth was computed
        INFO(file.string());
        REQUIRE(fs::exists(file));
        const bool is_mtx = graph_format_of(file.string()) == GraphFormat::matrix_market;
        const bool labels = truth.at("vertex_ids").find("names") != std::string::npos;
        auto read = [&](bool undirected) {
            return labels ? read_abc<double>(file.string(), {.undirected = undirected})
                          : read_graph<double>(file.string(), {.undirected = undirected});
        };
        if (truth.count("nnz")) {  // rectangular
            const Graph<double> g = read(false);
            CHECK(g.matrix.nrows() == num("rows"));
            CHECK(g.matrix.ncols() == num("cols"));
            CHECK(g.matrix.nvals() == num("nnz"));
            ++checked;
            continue;
        }
        const std::uint64_t loops = num("self_loops");
        const Graph<double> u = read(true);
        CHECK(u.matrix.nrows() == num("vertices"));
        CHECK(u.matrix.ncols() == num("vertices"));
        CHECK(u.matrix.nvals() == 2 * num("undirected_edges_excl_loops") + loops);
        if (truth.at("directed") == "True") {
            const Graph<double> d = read(false);
            CHECK(d.matrix.nvals() == num("arcs_excl_loops") + loops);
        }
        if (is_mtx) {
            CHECK(u.matrix.nrows() == num("rows"));
            CHECK(u.matrix.ncols() == num("cols"));
        }
        // The per-vertex truth lists every vertex by its name, in vertex order (labels: sorted by name).
        fs::path pr = dir.path() / "pagerank.txt";
        if (!fs::exists(pr)) pr += ".gz";
        if (fs::exists(pr)) {
            std::vector<std::string> names;
            for (Index v = 0; v < u.matrix.nrows(); ++v) names.push_back(u.names.name(v));
            std::vector<std::string> expected = first_column(pr);
            if (labels) {
                CHECK(u.names.has_labels());
                std::sort(names.begin(), names.end());
            } else if (!is_mtx) {
                CHECK(u.names.has_ids());
            }
            CHECK(names == expected);
        }
        ++checked;
    }
    CHECK(checked >= 20);
}

TEST_CASE("LDBC example edge files", "[io][data]") {
    const fs::path dir = data_dir / "ldbc_examples" / "example";
    for (const std::string name : {"example-directed", "example-undirected"}) {
        const Graph<double> g = read_edge_list<double>((dir / (name + ".e")).string());
        std::set<std::string> vertices;
        for (const std::string& v : first_column(dir / (name + ".v"))) vertices.insert(v);
        CHECK(g.matrix.nvals() == first_column(dir / (name + ".e")).size());
        for (std::int64_t id : g.names.ids) CHECK(vertices.count(std::to_string(id)) == 1);
    }
    const Graph<double> m = read_graph<double>((data_dir / "ldbc_examples" / "lagraph_mtx" / "ldbc-directed-example.mtx").string());
    CHECK(m.matrix.nrows() == 10);
    CHECK(m.matrix.nvals() == 17);
}

// ------------------------------------------------------------------------------------------------------------
// Binary format: what the reader checks beyond the CSR arrays (names, the undirected flag, finite values)

namespace {

// The triangle 0-1-2 with the edge 2-3, both directions stored, as a graph named by ids or labels.
Graph<double> named_graph() {
    const std::vector<Index> r = {0, 1, 0, 2, 1, 2, 2, 3}, c = {1, 0, 2, 0, 2, 1, 3, 2};
    const std::vector<double> v = {1, 1, 2, 2, 3, 3, 4, 4};
    Graph<double> g;
    g.matrix = Matrix<double>::from_tuples(4, 4, r, c, v);
    g.undirected = true;
    return g;
}

// Where the parts of a binary file of T values start (the layout in io/binary.hpp).
constexpr std::size_t binary_flags_at = 48;
template <class T>
std::size_t binary_values_at(std::size_t nrows, std::size_t nvals) {
    return 64 + 8 * (nrows + 1) + 4 * nvals;
}
template <class T>
std::size_t binary_names_at(std::size_t nrows, std::size_t nvals) {
    return binary_values_at<T>(nrows, nvals) + sizeof(T) * nvals;
}

// The reason read_binary_graph<T> gives for the file, or "" when it reads.
template <class T>
std::string binary_refusal(const std::string& path) {
    try {
        read_binary_graph<T>(path);
    } catch (const IoError& e) {
        CHECK(e.file() == path);
        CHECK(e.line() == 0);
        return e.reason();
    }
    return "";
}

template <class T>
std::string patched(std::string bytes, std::size_t at, const T& value) {
    std::memcpy(bytes.data() + at, &value, sizeof value);
    return bytes;
}

}  // namespace

TEST_CASE("binary files: vertex ids must be non-negative and increasing", "[io][binary]") {
    TempDir tmp;
    Graph<double> g = named_graph();
    g.names.ids = {3, 10, 11, 40};
    write_binary(tmp.file("g.bin"), g);
    const std::string bytes = read_bytes(tmp.file("g.bin"));
    const std::size_t ids = binary_names_at<double>(4, 8);
    REQUIRE(bytes.size() == ids + 4 * 8);
    const std::string path = tmp.file("bad.bin");
    auto reason = [&](std::size_t vertex, std::int64_t id) {
        write_text(path, patched(bytes, ids + 8 * vertex, id));
        return binary_refusal<double>(path);
    };
    CHECK(binary_refusal<double>(tmp.file("g.bin")).empty());
    CHECK(reason(0, -1) == "corrupt vertex names: vertex 0 has the negative id -1");
    CHECK(reason(2, 10) == "corrupt vertex names: vertex ids must increase, but vertex 2 has id 10 after 10");
    CHECK(reason(3, 5) == "corrupt vertex names: vertex ids must increase, but vertex 3 has id 5 after 11");
    CHECK(reason(3, 41).empty());
    // Fewer ids than vertices.
    write_text(path, patched(bytes.substr(0, bytes.size() - 8), 56, std::uint64_t(3 * 8)));
    CHECK(binary_refusal<double>(path) == "corrupt vertex names: 24 bytes of ids for 4 vertices (8 bytes an id)");

    // The writer refuses the same names, before it creates the file.
    for (const std::vector<std::int64_t>& bad : {std::vector<std::int64_t>{-3, 1, 2, 3}, {1, 2, 2, 3}, {4, 3, 2, 1}}) {
        g.names.ids = bad;
        CHECK_THROWS_AS(write_binary(tmp.file("w.bin"), g), InvalidValue);
        CHECK_FALSE(fs::exists(tmp.file("w.bin")));
    }
}

TEST_CASE("binary files: labels must be non-empty, distinct and hold no whitespace", "[io][binary]") {
    TempDir tmp;
    Graph<double> g = named_graph();
    g.names.labels = {"aa", "bb", "cc", "dd"};
    write_binary(tmp.file("g.bin"), g);
    const std::string bytes = read_bytes(tmp.file("g.bin"));
    const std::size_t labels = binary_names_at<double>(4, 8);
    REQUIRE(bytes.size() == labels + 4 * (4 + 2));
    CHECK(binary_refusal<double>(tmp.file("g.bin")).empty());
    const std::string path = tmp.file("bad.bin");
    // Vertex 2's label (two bytes after its length) replaced.
    auto reason = [&](const std::string& label) {
        std::string s = bytes;
        s.replace(labels + 2 * 6 + 4, 2, label);
        write_text(path, s);
        return binary_refusal<double>(path);
    };
    CHECK(reason("c ") == "corrupt vertex names: the label of vertex 2 holds whitespace: 'c '");
    CHECK(reason("c\n") == "corrupt vertex names: the label of vertex 2 holds whitespace: 'c\\x0a'");
    CHECK(reason("\tc") == "corrupt vertex names: the label of vertex 2 holds whitespace: '\\x09c'");
    CHECK(reason("c\r") == "corrupt vertex names: the label of vertex 2 holds whitespace: 'c\\x0d'");
    CHECK(reason("bb") == "corrupt vertex names: vertices 1 and 2 have the same label 'bb'");
    CHECK(reason("c\xc3").empty());  // bytes are bytes: only whitespace and repeats are refused
    // An empty label: vertex 3's length set to 0 and its two bytes dropped.
    std::string empty = patched(bytes.substr(0, bytes.size() - 2), labels + 3 * 6, std::uint32_t(0));
    write_text(path, patched(empty, 56, std::uint64_t(4 * 6 - 2)));
    CHECK(binary_refusal<double>(path) == "corrupt vertex names: the label of vertex 3 is empty");
    // Fewer labels than vertices.
    std::string three = bytes.substr(0, bytes.size() - 6);
    three = patched(three, 56, std::uint64_t(3 * 6));
    write_text(path, three);
    CHECK(binary_refusal<double>(path) == "corrupt vertex names: 3 labels for 4 vertices");
    // More.
    const std::string more = bytes + patched(std::string(4, '\0'), 0, std::uint32_t(2)) + "ee";
    write_text(path, patched(more, 56, std::uint64_t(5 * 6)));
    CHECK(binary_refusal<double>(path) == "corrupt vertex names: more labels than the 4 vertices");

    for (const std::vector<std::string>& bad : {std::vector<std::string>{"a", "", "c", "d"},
                                                {"a", "b c", "d", "e"},
                                                {"a", "b\n", "c", "d"},
                                                {"a", "b", "a", "d"},
                                                {"a", "b", "c"}}) {
        g.names.labels = bad;
        CHECK_THROWS_AS(write_binary(tmp.file("w.bin"), g), InvalidValue);
        CHECK_FALSE(fs::exists(tmp.file("w.bin")));
    }
}

TEST_CASE("binary files: the undirected flag must match a symmetric matrix", "[io][binary]") {
    TempDir tmp;
    const std::string path = tmp.file("bad.bin");
    // A directed graph with the flag set afterwards: the arc 0 -> 1 has no mirror.
    const std::vector<Index> r = {0, 1, 2, 1}, c = {1, 2, 1, 3};
    const std::vector<double> v = {1, 2, 2, 5};
    const Matrix<double> arcs = Matrix<double>::from_tuples(4, 4, r, c, v);
    write_binary(tmp.file("d.bin"), arcs);
    const std::string d = read_bytes(tmp.file("d.bin"));
    CHECK(binary_refusal<double>(tmp.file("d.bin")).empty());
    write_text(path, patched(d, binary_flags_at, std::uint32_t(1)));
    CHECK(binary_refusal<double>(path) == "corrupt matrix data: flagged undirected but entry (0, 1) has no mirror (1, 0)");
    CHECK_THROWS_AS(read_graph<double>(path), IoError);  // not symmetrised in silence

    // Mirrored structure, different values.
    write_binary(tmp.file("u.bin"), named_graph());
    const std::string u = read_bytes(tmp.file("u.bin"));
    CHECK(binary_refusal<double>(tmp.file("u.bin")).empty());
    write_text(path, patched(u, binary_values_at<double>(4, 8) + 8 * 7, 4.5));  // the entry (3, 2)
    CHECK(binary_refusal<double>(path) == "corrupt matrix data: flagged undirected but the entries (2, 3) and (3, 2) differ");
    // A rectangular matrix cannot be undirected.
    write_binary(tmp.file("rect.bin"), Matrix<double>::from_tuples(2, 3, std::vector<Index>{0}, std::vector<Index>{2},
                                                                   std::vector<double>{1}));
    write_text(path, patched(read_bytes(tmp.file("rect.bin")), binary_flags_at, std::uint32_t(1)));
    CHECK(binary_refusal<double>(path) == "corrupt matrix data: flagged undirected but the matrix is 2x3");

    // The writer does not flag what the reader would refuse.
    Graph<double> g;
    g.matrix = arcs;
    g.undirected = true;
    CHECK_THROWS_AS(write_binary(tmp.file("w.bin"), g), InvalidValue);
    CHECK_FALSE(fs::exists(tmp.file("w.bin")));
}

TEMPLATE_TEST_CASE("binary files: NaN and infinite values are refused", "[io][binary]", double, float) {
    TempDir tmp;
    const std::string path = tmp.file("bad.bin");
    const std::vector<Index> r = {0, 1, 1, 2}, c = {1, 0, 2, 2};
    const std::vector<TestType> v = {1, 2, 3, 4};
    const Matrix<TestType> a = Matrix<TestType>::from_tuples(3, 3, r, c, v);
    write_binary(tmp.file("a.bin"), a);
    const std::string bytes = read_bytes(tmp.file("a.bin"));
    const std::size_t at = binary_values_at<TestType>(3, 4) + 2 * sizeof(TestType);  // the entry (1, 2)
    using limits = std::numeric_limits<TestType>;
    const std::pair<TestType, std::string> cases[] = {
        {limits::quiet_NaN(), "NaN"}, {limits::infinity(), "inf"}, {-limits::infinity(), "-inf"}};
    for (const auto& [x, name] : cases) {
        write_text(path, patched(bytes, at, x));
        CHECK(binary_refusal<TestType>(path) == "corrupt matrix data: entry 2 (1, 2) is " + name);
        CHECK_THROWS_AS(read_binary<TestType>(path), IoError);

        std::vector<TestType> w = v;
        w[3] = x;
        CHECK_THROWS_AS(write_binary(tmp.file("w.bin"), Matrix<TestType>::from_tuples(3, 3, r, c, w)), InvalidValue);
        CHECK_FALSE(fs::exists(tmp.file("w.bin")));
    }
}

TEST_CASE("a skew-symmetric Matrix Market file is not an undirected graph and round-trips through binary", "[io]") {
    TempDir tmp;
    const std::string mtx = tmp.file("skew.mtx"), sym = tmp.file("sym.mtx"), bin = tmp.file("g.bin");
    {
        std::ofstream(mtx) << "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 2 -2\n";
        std::ofstream(sym) << "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 1.5\n3 2 -2\n";
    }
    const io::Graph<double> g = io::read_graph<double>(mtx);
    CHECK_FALSE(g.undirected);  // a(1,2) = -a(2,1): the mirror differs
    CHECK(io::read_graph<double>(sym).undirected);
    io::write_binary(bin, g);
    const io::Graph<double> back = io::read_binary_graph<double>(bin);
    CHECK_FALSE(back.undirected);
    CHECK(back.matrix.nvals() == 4);
    CHECK(back.matrix.to(Context::cpu()).get(0, 1).value() == -1.5);
}
