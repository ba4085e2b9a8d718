// libFuzzer harness of the edge-list reader (read_edge_list, directed and undirected; see harness.hpp).
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

struct Reads {
    template <class T>
    static void run(const Files& f) {
        const std::string type = io::value_type_name(io::value_type_of<T>());
        for (const bool undirected : {false, true})
            agree_graph<T>("read_edge_list<" + type + ">" + (undirected ? "(undirected)" : ""), f, Reader::edge_list,
                           undirected, [&](const std::string& path) {
                               return io::read_edge_list<T>(path, {.undirected = undirected});
                           });
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return test_one_input<Reads>(data, size, "input.txt");
}
