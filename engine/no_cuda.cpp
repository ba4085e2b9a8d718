// The CUDA runtime functions for builds without nvcc: there is no GPU to reach, and Context::cuda() already
// refuses, so these are never called with a GPU context; they answer as an absent GPU would.
#include "engine/cuda/runtime.hpp"
#include "engine/memory.hpp"
#include "engine/error.hpp"

namespace hybla::cuda {

static const char* no_cuda = "hybla was built without the CUDA backend (no nvcc was found)";

int device_count() { return 0; }
std::string device_name(int) { return {}; }
int compute_capability_major(int) { throw InvalidValue(no_cuda); }
int multiprocessor_count(int) { throw InvalidValue(no_cuda); }
void* stream_create(int) { throw InvalidValue(no_cuda); }
void stream_destroy(void*, int) noexcept {}
void stream_wait(void*, int, void*, int) { throw InvalidValue(no_cuda); }
void debug_wait(const char*) {}
std::uint64_t debug_waits() { return 0; }
void* allocate(std::size_t, int, void*, const char*) { throw InvalidValue(no_cuda); }
void release(void*, std::size_t, int, void*) noexcept {}
void copy(void*, const void*, std::size_t, CopyKind, void*) { throw InvalidValue(no_cuda); }
void synchronize(void*) {}
std::size_t pool_peak_bytes(int) { return 0; }
void pool_reset_peak(int) {}
void warm_up(int) { throw InvalidValue(no_cuda); }
std::size_t available_device_bytes(int) { return 0; }
void release_kept_blocks(int) {}
void fill(void*, std::size_t, const void*, std::size_t, void*) { throw InvalidValue(no_cuda); }
void iota(void*, std::size_t, std::size_t, void*) { throw InvalidValue(no_cuda); }
void fail(int, const char*, std::size_t) { throw InvalidValue(no_cuda); }
HostCell host_cell_create(std::size_t, int) { throw InvalidValue(no_cuda); }
void host_cell_destroy(HostCell&) noexcept {}
void host_cell_written(HostCell&, void*) { throw InvalidValue(no_cuda); }
void host_cell_wait(const HostCell&) {}

}  // namespace hybla::cuda
