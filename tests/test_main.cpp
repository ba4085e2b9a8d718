// One suite, two backends: ctest runs every test once as is (the CPU backend) and once with
// HYBLA_BACKEND=cuda; without a usable GPU the CUDA runs report themselves skipped, with the reason.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/context.hpp"

int main(int argc, char* argv[]) {
    const char* backend = std::getenv("HYBLA_BACKEND");
    if (backend && std::string(backend) == "cuda" && !hybla::cuda_usable()) {
        std::printf("SKIPPED: %s\n", hybla::cuda_built() ? "no usable CUDA GPU on this machine (HYBLA_BACKEND=cuda)"
                                                         : "hybla was built without nvcc (HYBLA_BACKEND=cuda)");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
