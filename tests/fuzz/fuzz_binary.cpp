// libFuzzer harness of hybla's binary format: read_binary_graph, and read_graph's undirected reading of a .bin
// file (see harness.hpp). A file holds one value type, so all but one of the reads stop at the header.
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

struct Reads {
    template <class T>
    static void run(const Files& f) {
        const std::string type = io::value_type_name(io::value_type_of<T>());
        const std::string plain = "read_binary_graph<" + type + ">",
                          undirected = "read_graph<" + type + ">(undirected)";
        agree_graph<T>(plain, f, Reader::binary, false,
                       [](const std::string& path) { return io::read_binary_graph<T>(path); });
        agree_graph<T>(undirected, f, Reader::binary, true,
                       [](const std::string& path) { return io::read_graph<T>(path, {.undirected = true}); });
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return test_one_input<Reads>(data, size, "input.bin");
}
