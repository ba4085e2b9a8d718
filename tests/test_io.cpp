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

namespace fs = std::filesystem;
using namespace hybla;
using namespace hybla::io;

namespace {

const fs::path source_dir = HYBLA_SOURCE_DIR;
const fs::path malformed_dir = source_dir / "tests" / "data" / "malformed";
const fs::path data_dir = source_dir / "data";

// A fresh directory per test case, removed afterwards.
struct TempDir {
    fs::path path;
    TempDir() {
        static int counter = 0;
        path = fs::temp_directory_path() /
               ("hybla_test_io_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

// Parses with a given chunk size (0: the default) for the lifetime of the guard.
struct ChunkBytes {
    explicit ChunkBytes(std::size_t b) { io::detail::set_parse_chunk_bytes(b); }
    ~ChunkBytes() { io::detail::set_parse_chunk_bytes(0); }
};

// Chunk sizes to parse with: the default, and sizes so small that chunks cut through almost every line.
const std::vector<std::size_t> chunk_sizes = {0, 1, 3, 16, 100};

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
                    std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), std::numeric_limits<T>::infinity(),
                    -std::numeric_limits<T>::infinity(), T(123456789.123456789), T(-2.5e-7)};
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
    {"mm_as_int64_nan.mtx", "int64", 3, "value 'nan' does not fit int64_t"},
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
    ChunkBytes guard(chunk);
    const std::string path = (malformed_dir / m.file).string();
    INFO(m.file << " read as " << m.type << ", chunk bytes " << chunk);
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

TEST_CASE("edge list: empty files and files with only comments or a header", "[io][edges]") {
    TempDir tmp;
    for (const std::string text : {"", "# nothing\n", "\n\n", "node_1,node_2\n", "% c\r\n"}) {
        const std::string path = tmp.file("e.csv");
        write_text(path, text);
        const Graph<double> g = read_edge_list<double>(path);
        CHECK(g.matrix.nrows() == 0);
        CHECK(g.matrix.nvals() == 0);
        CHECK(g.names.ids.empty());
    }
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
