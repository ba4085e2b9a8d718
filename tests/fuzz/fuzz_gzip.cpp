// libFuzzer harness of gzip input: the bytes are the compressed file (mutated gzip streams, concatenated
// members, data after the last member), read by every reader. When the bytes are what gzip -d accepts (whole
// members, nothing after them), each reader must give the same result, or the same message, as for the
// decompressed bytes in a plain file. Otherwise only the usual rules hold: a hybla::Error or a sound result.
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

// A gzip member expands at most about 1032 times; larger inputs would only test the memory of the machine.
constexpr std::size_t max_gzip_input_bytes = std::size_t(64) << 10;

template <class Read>
void compare(const std::string& what, const std::string& raw, const std::string& plain, Read&& read) {
    const std::string a = outcome(raw, read);
    if (plain.empty()) return;
    const std::string b = outcome(plain, read);
    if (a != b)
        fail(what + ": a well-formed gzip file reads differently from its contents\n  gzip:  " + printable(a) +
             "\n  plain: " + printable(b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > max_gzip_input_bytes) return 0;
    Scratch& s = Scratch::get();
    const std::string raw = s.path("input.gz");
    write_file(raw, data, size);
    std::string contents, plain;
    // Contents that are gzip data again would be decompressed a second time from the plain file.
    if (gunzip_strict(data, size, std::size_t(1) << 28, contents) &&
        !has_gzip_magic(reinterpret_cast<const std::uint8_t*>(contents.data()), contents.size())) {
        plain = s.path("input");
        write_file(plain, contents.data(), contents.size());
    }
    compare("read_matrix_market<double>", raw, plain, [](const std::string& path) {
        const Matrix<double> a = io::read_matrix_market<double>(path);
        check_matrix("read_matrix_market<double>", a);
        return describe(a, nullptr, false);
    });
    compare("read_edge_list<double>", raw, plain, [](const std::string& path) {
        const Graph<double> g = io::read_edge_list<double>(path);
        check_graph("read_edge_list<double>", Reader::edge_list, g, false);
        return describe(g);
    });
    compare("read_abc<double>", raw, plain, [](const std::string& path) {
        const Graph<double> g = io::read_abc<double>(path);
        check_graph("read_abc<double>", Reader::abc, g, false);
        return describe(g);
    });
    compare("read_binary_graph<double>", raw, plain, [](const std::string& path) {
        const Graph<double> g = io::read_binary_graph<double>(path);
        check_graph("read_binary_graph<double>", Reader::binary, g, false);
        return describe(g);
    });
    return 0;
}
