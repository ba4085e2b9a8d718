// libFuzzer harness of mcl's label format (read_abc as given, and undirected with max as mcl reads it; see
// harness.hpp).
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

template <class T>
void read_as(const Files& f) {
    const std::string type = io::value_type_name(io::value_type_of<T>());
    const std::string plain = "read_abc<" + type + ">", undirected = "read_abc<" + type + ">(undirected, max)";
    agree(plain, f, [&](const std::string& path) {
        const Graph<T> g = io::read_abc<T>(path);
        check_graph(plain, Reader::abc, g, false);
        return describe(g);
    });
    agree(undirected, f, [&](const std::string& path) {
        const Graph<T> g = io::read_abc<T>(path, {.undirected = true}, max_op{});
        check_graph(undirected, Reader::abc, g, true);
        return describe(g);
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > max_input_bytes) return 0;
    const Files f = write_input(data, size, "input.abc");
    read_as<double>(f);
    read_as<float>(f);
    read_as<std::int64_t>(f);
    read_as<bool>(f);
    read_as<std::uint8_t>(f);
    return 0;
}
