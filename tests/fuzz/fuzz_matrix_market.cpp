// libFuzzer harness of the Matrix Market reader: read_matrix_market, and read_graph's undirected reading of a
// .mtx file (see harness.hpp).
#include "tests/fuzz/harness.hpp"

namespace {

using namespace hybla;
using namespace hybla::fuzz;

struct Reads {
    template <class T>
    static void run(const Files& f) {
        const std::string type = io::value_type_name(io::value_type_of<T>());
        const std::string plain = "read_matrix_market<" + type + ">",
                          undirected = "read_graph<" + type + ">(undirected)";
        agree(plain, f, [&](const std::string& path) {
            const Matrix<T> a = io::read_matrix_market<T>(path);
            check_matrix(plain, a);
            return describe(a, nullptr, false);
        });
        agree_graph<T>(undirected, f, Reader::matrix_market, true,
                       [](const std::string& path) { return io::read_graph<T>(path, {.undirected = true}); });
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return test_one_input<Reads>(data, size, "input.mtx");
}
