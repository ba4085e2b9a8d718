// A number the GPU writes into page-locked host memory behind a result it leaves there, and the host's wait for
// it: the host polls that memory and sees the number about as soon as it lands, where a wait for the stream
// returned 6-7 us after the GPU was done (an H200's host), the GPU idle meanwhile. The caller numbers its waits
// (per host thread); the stream is asked every 2^14 polls whether it failed (the error is thrown) or finished.
// Used by the hash SpGEMM's row counts (spgemm.cu, read_groups).
#pragma once
#include <cuda_runtime.h>

#include <atomic>

#include "engine/cuda/runtime.hpp"

namespace hybla::cuda {

// By the one thread that publishes, after the result's stores (its own, or the block's behind a barrier, each
// thread having fenced its stores at system scope).
__device__ inline void publish_mark(unsigned long long* mark, unsigned long long number) {
    __threadfence_system();
    *static_cast<volatile unsigned long long*>(mark) = number;
}

// Returns once *mark holds `number` (the result's stores then visible to this thread).
inline void wait_for_mark(const unsigned long long* mark, unsigned long long number, cudaStream_t stream,
                          const char* what) {
    const volatile unsigned long long* const m = mark;
    for (unsigned poll = 1; *m != number; ++poll) {
        if (poll % (1u << 14) != 0) continue;
        const cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaErrorNotReady) continue;
        checked(int(e), what);
        break;
    }
    std::atomic_thread_fence(std::memory_order_acquire);
}

}  // namespace hybla::cuda
