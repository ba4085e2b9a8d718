// Programmatic dependent launch (Hopper): a kernel launched with launch_after_previous is started while the
// stream's previous kernel still runs, and waits in wait_for_previous_kernel until that kernel has finished
// and its writes are visible. The launch latency hides behind the kernel before, and on the host such a
// launch is cheaper too (H100 under the GPU machine's VM: 4.4 us against 5.1-5.4 us for a plain launch).
// Every kernel launched this way must call wait_for_previous_kernel before it touches memory that earlier
// work writes or reads. Without the launch attribute (before sm_90) both device calls are no-ops.
#pragma once
#include <cuda_runtime.h>

#include "engine/cuda/runtime.hpp"

namespace hybla::cuda {

__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Lets the next kernel be scheduled now (it still waits for this one's results in wait_for_previous_kernel).
__device__ __forceinline__ void allow_next_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Programmatic dependent launch needs compute capability 9.0.
inline bool dependent_launch(int device) { return compute_capability_major(device) >= 9; }

// Launches kernel as a programmatic dependent of the stream's previous kernel (see wait_for_previous_kernel).
template <class... Params, class... Args>
void launch_after_previous(void (*kernel)(Params...), dim3 blocks, dim3 threads, cudaStream_t stream, int device,
                           const char* what, Args... args) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = blocks;
    cfg.blockDim = threads;
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = dependent_launch(device) ? 1 : 0;
    checked(int(cudaLaunchKernelEx(&cfg, kernel, Params(args)...)), what);
}

}  // namespace hybla::cuda
