// What the CUDA runtime sees: the first piece of the CUDA backend (the backend itself comes with its own issue).
#include <cuda_runtime.h>

#include <string>

namespace hybla::cuda {

// Number of usable CUDA devices; 0 when there is no driver or no GPU (the CPU backend is then the only one).
int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" error
        return 0;
    }
    return n;
}

std::string device_name(int device) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
    return prop.name;
}

}  // namespace hybla::cuda
