// A libFuzzer harness without libFuzzer: calls LLVMFuzzerTestOneInput on every file of the directories (or on
// the files) named on the command line, in name order, so that ctest replays the corpus of each harness with
// the normal compiler. A finding aborts, as under libFuzzer; the last file named on stdout is the culprit.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/context.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char* argv[]) {
    namespace fs = std::filesystem;
    const char* backend = std::getenv("HYBLA_BACKEND");
    if (backend && std::string(backend) == "cuda" && !hybla::cuda_usable()) {
        std::printf("SKIPPED: %s\n", hybla::cuda_built() ? "no usable CUDA GPU on this machine (HYBLA_BACKEND=cuda)"
                                                         : "hybla was built without nvcc (HYBLA_BACKEND=cuda)");
        return 77;
    }
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
        return 2;
    }
    std::vector<fs::path> inputs;
    for (int k = 1; k < argc; ++k) {
        const fs::path p = argv[k];
        std::error_code ec;
        if (fs::is_directory(p, ec)) {
            std::vector<fs::path> files;
            for (const fs::directory_entry& e : fs::directory_iterator(p))
                if (e.is_regular_file()) files.push_back(e.path());
            // An empty corpus would make the test pass without testing anything.
            if (files.empty()) {
                std::fprintf(stderr, "%s: no inputs in %s\n", argv[0], argv[k]);
                return 2;
            }
            std::sort(files.begin(), files.end());
            inputs.insert(inputs.end(), files.begin(), files.end());
        } else if (fs::is_regular_file(p, ec)) {
            inputs.push_back(p);
        } else {
            std::fprintf(stderr, "%s: %s is neither a directory nor a file\n", argv[0], argv[k]);
            return 2;
        }
    }
    for (const fs::path& p : inputs) {
        std::printf("%s\n", p.c_str());
        std::fflush(stdout);
        std::ifstream in(p, std::ios::binary);
        const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        if (!in.eof() && in.fail()) {
            std::fprintf(stderr, "%s: cannot read %s\n", argv[0], p.c_str());
            return 2;
        }
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("replayed %zu inputs: no finding\n", inputs.size());
    return 0;
}
