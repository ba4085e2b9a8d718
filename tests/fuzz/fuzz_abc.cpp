// libFuzzer harness of mcl's label format (read_abc as given, and undirected with max as mcl reads it; see
// harness.hpp).
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

struct Reads {
    template <class T>
    static void run(const Files& f) {
        const std::string type = io::value_type_name(io::value_type_of<T>());
        const std::string plain = "read_abc<" + type + ">", undirected = "read_abc<" + type + ">(undirected, max)";
        agree_graph<T>(plain, f, Reader::abc, false, [](const std::string& path) { return io::read_abc<T>(path); });
        agree_graph<T>(undirected, f, Reader::abc, true, [](const std::string& path) {
            return io::read_abc<T>(path, {.undirected = true}, max_op{});
        });
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return test_one_input<Reads>(data, size, "input.abc");
}
