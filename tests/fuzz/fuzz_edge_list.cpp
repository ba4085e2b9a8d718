// libFuzzer harness of the edge-list reader (read_edge_list, directed and undirected; see harness.hpp).
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

template <class T>
void read_as(const Files& f) {
    const std::string type = io::value_type_name(io::value_type_of<T>());
    for (const bool undirected : {false, true}) {
        const std::string what = "read_edge_list<" + type + ">" + (undirected ? "(undirected)" : "");
        agree(what, f, [&](const std::string& path) {
            const Graph<T> g = io::read_edge_list<T>(path, {.undirected = undirected});
            check_graph(what, Reader::edge_list, g, undirected);
            return describe(g);
        });
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > max_input_bytes) return 0;
    const Files f = write_input(data, size, "input.txt");
    read_as<double>(f);
    read_as<float>(f);
    read_as<std::int64_t>(f);
    read_as<bool>(f);
    read_as<std::uint8_t>(f);
    return 0;
}
