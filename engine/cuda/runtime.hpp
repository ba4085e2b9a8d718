// The CUDA runtime as the rest of hybla sees it: plain functions on raw pointers, declared for every compiler
// and defined in engine/cuda/runtime.cu when the CUDA backend is built. Errors become hybla exceptions:
// failed allocations an OutOfMemory naming what was being allocated and its size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace hybla::cuda {

// Device value types the backend is compiled for (X-macro: X(type)).
#define HYBLA_CUDA_VALUE_TYPES(X) \
    X(bool)                       \
    X(std::uint8_t)               \
    X(std::int32_t)               \
    X(std::uint32_t)              \
    X(std::int64_t)               \
    X(std::uint64_t)              \
    X(float)                      \
    X(double)

// Whether T is one of the value types the CUDA kernels are compiled for.
template <class T> struct is_value_type { static constexpr bool value = false; };
#define HYBLA_CUDA_IS_VALUE_TYPE(T) \
    template <> struct is_value_type<T> { static constexpr bool value = true; };
HYBLA_CUDA_VALUE_TYPES(HYBLA_CUDA_IS_VALUE_TYPE)
#undef HYBLA_CUDA_IS_VALUE_TYPE

int device_count();
std::string device_name(int device);
// Attributes of a device, found once per device (a device id out of range is an InvalidValue).
int compute_capability_major(int device);
int multiprocessor_count(int device);

// A stream of its own on the device (non-blocking: not ordered with the default stream), for
// Context::cuda(device, stream); and its end (once the objects on it are gone).
void* stream_create(int device);
void stream_destroy(void* stream, int device) noexcept;
// Queues on `stream` (of `device`) a wait for the work queued so far on `after` (of `after_device`): a copy
// from an object on another stream is then ordered after that object's last write.
void stream_wait(void* stream, int device, void* after, int after_device);

// Stream-ordered allocation from the device's memory pool; release takes the bytes allocated (small blocks are
// kept per stream for the next allocation of their size, runtime.cu).
void* allocate(std::size_t bytes, int device, void* stream, const char* what);
void release(void* p, std::size_t bytes, int device, void* stream) noexcept;

enum class CopyKind { host_to_device, device_to_host, device_to_device };
// Copies; to or from the host it waits for the copy (the host may read dst or reuse src at once), device to
// device it is only queued on `stream` (dst's later users on that stream come after it; a copy from an object
// of another stream waits for it, Array::copy_from).
void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, void* stream);
void synchronize(void* stream);
// Sets count elements of p (of elem_bytes each, 1, 2, 4 or 8) to the bit pattern of *value.
void fill(void* p, std::size_t count, const void* value, std::size_t elem_bytes, void* stream);
// Sets the count unsigned integers of p (of elem_bytes each, 4 or 8) to 0, 1, ..., count - 1.
void iota(void* p, std::size_t count, std::size_t elem_bytes, void* stream);

// A result the GPU leaves in host memory in stream order (a reduction to a Scalar): page-locked memory that
// kernels write directly, and an event recorded behind the write, so that the host waits for that result
// only, not for the work queued after it.
struct HostCell {
    void* data = nullptr;   // `bytes` of page-locked host memory, at the same address on the device
    void* event = nullptr;  // a cudaEvent_t
    void* stream = nullptr; // where the last write was queued
};
HostCell host_cell_create(std::size_t bytes, int device);
void host_cell_destroy(HostCell& cell) noexcept;  // waits for a write still on its way first
void host_cell_written(HostCell& cell, void* stream);  // marks the write just queued on stream
void host_cell_wait(const HostCell& cell);          // returns once that write has landed

// An event (a cudaEvent_t, no timing) per host thread, device and use (slot < 4), made at its first use: for the
// host to wait on one point of a stream while later work stays queued behind it.
void* thread_event(int device, unsigned slot);

// Throws the hybla exception for a CUDA error code (OutOfMemory for cudaErrorMemoryAllocation).
[[noreturn]] void fail(int code, const char* what, std::size_t bytes = 0);

// HYBLA_DEBUG_SYNC=1 (read at the first use): every kernel launch and CUB call is followed by a synchronisation
// of the device, so that a fault of the kernel (an illegal address, say), which would otherwise surface at the
// next synchronising call as an error of that call, is reported naming the kernel or call. Slow; for debugging.
inline bool debug_sync() {
    static const bool on = [] {
        const char* e = std::getenv("HYBLA_DEBUG_SYNC");
        return e && *e && *e != '0';
    }();
    return on;
}
// With HYBLA_DEBUG_SYNC: waits for the device and throws for a fault of the work queued so far, naming `what`.
void debug_wait(const char* what);
// How many times debug_wait has waited (the tests check that HYBLA_DEBUG_SYNC takes effect).
std::uint64_t debug_waits();
// The result `code` of a kernel launch (cudaGetLastError() after it), a CUB call or another CUDA call: a failure
// throws; with HYBLA_DEBUG_SYNC the work it queued is waited for.
inline void checked(int code, const char* what, std::size_t bytes = 0) {
    if (code != 0) fail(code, what, bytes);
    if (debug_sync()) debug_wait(what);
}

}  // namespace hybla::cuda
