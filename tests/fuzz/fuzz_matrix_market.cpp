// libFuzzer harness of the Matrix Market reader: read_matrix_market, and read_graph's undirected reading of a
// .mtx file (see harness.hpp).
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

template <class T>
void read_as(const Files& f) {
    const std::string type = io::value_type_name(io::value_type_of<T>());
    const std::string plain = "read_matrix_market<" + type + ">", undirected = "read_graph<" + type + ">(undirected)";
    agree(plain, f, [&](const std::string& path) {
        const Matrix<T> a = io::read_matrix_market<T>(path);
        check_matrix(plain, a);
        return describe(a, nullptr, false);
    });
    agree(undirected, f, [&](const std::string& path) {
        const Graph<T> g = io::read_graph<T>(path, {.undirected = true});
        check_graph(undirected, Reader::matrix_market, g, true);
        return describe(g);
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > max_input_bytes) return 0;
    const Files f = write_input(data, size, "input.mtx");
    read_as<double>(f);
    read_as<float>(f);
    read_as<std::int64_t>(f);
    read_as<bool>(f);
    read_as<std::uint8_t>(f);
    return 0;
}
