#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/cuda/runtime.hpp"
#include "engine/memory.hpp"
#include "engine/error.hpp"

namespace hybla::cuda {

void fail(int code, const char* what, std::size_t bytes) {
    auto e = static_cast<cudaError_t>(code);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw OutOfMemory(std::string(what) + " on the GPU", bytes);
    }
    throw Error(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

static inline void check(cudaError_t e, const char* what, std::size_t bytes = 0) {
    if (e != cudaSuccess) fail(int(e), what, bytes);
}
static inline cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

int device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();  // clear the "no device" error
        return 0;
    }
    return n;
}

std::string device_name(int device) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
    return prop.name;
}

// What is found or set up once per device, in a table as long as the device count (fixed for the process).
struct DeviceState {
    std::once_flag pool_setup;
    std::atomic<int> major{0}, sms{0};
};
static DeviceState& device_state(int device) {
    static const int count = device_count();
    static const std::unique_ptr<DeviceState[]> table(new DeviceState[count > 0 ? count : 1]);
    if (device < 0 || device >= count)
        throw InvalidValue("CUDA device " + std::to_string(device) + " does not exist: this machine has " +
                           std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s"));
    return table[device];
}
static int device_attribute(std::atomic<int>& slot, cudaDeviceAttr attr, int device) {
    int v = slot.load(std::memory_order_relaxed);
    if (v == 0) {
        check(cudaDeviceGetAttribute(&v, attr, device), "cudaDeviceGetAttribute");
        v = v > 0 ? v : 1;
        slot.store(v, std::memory_order_relaxed);
    }
    return v;
}
int compute_capability_major(int device) {
    return device_attribute(device_state(device).major, cudaDevAttrComputeCapabilityMajor, device);
}
int multiprocessor_count(int device) {
    return device_attribute(device_state(device).sms, cudaDevAttrMultiProcessorCount, device);
}

// Once per device (its pool serves every stream on it): the default memory pool keeps the memory it has been
// given (release threshold: no limit) instead of handing freed memory back to the driver at every
// synchronisation, which made the next allocation map it again (an iteration of PageRank or of mcl allocates
// and frees its temporaries each time). available_device_bytes counts the pool's idle memory as available.
static void setup_device(int device) {
    std::call_once(device_state(device).pool_setup, [device] {
        cudaMemPool_t pool;
        check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
        std::uint64_t keep = ~std::uint64_t(0);
        check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    });
}

// Small blocks freed on a stream are kept for the next allocation of their size class on that stream (stream
// order makes the reuse safe: what the block's last user queued runs before what its next user queues), so that
// neither the allocation nor the free calls the runtime: a small product or a PageRank iteration allocates and
// frees 3 to 30 temporaries, each allocation and each free 1.2-2.7 us of host time on an H100's host. Classes
// are powers of two from 256 bytes to 1 MiB, at most 16 blocks of a class on a stream and 64 MiB in all, then
// four an octave up to 8 MiB (1.25, 1.5, 1.75, 2, 2.5, ... MiB: a block at most a quarter larger than asked; the
// outputs of products on graphs of a few hundred thousand entries), at most 4 a class and 64 MiB in all of their
// own (kept large blocks had filled a shared limit and left the small ones to the runtime); a
// stream's blocks go back to the pool when it ends, all of them when an allocation fails. Only the default
// stream and streams of stream_create keep blocks; small allocations are rounded up to their class on every
// stream (a kept block always fills its class). HYBLA_BLOCK_CACHE=0 turns it off (compute-sanitizer then
// sees each array's exact bounds).
namespace {
constexpr unsigned smallest_class = 8, largest_power = 20, largest_class = largest_power + 12;
constexpr std::size_t cache_most_bytes = std::size_t(64) << 20;  // each of the two tiers
struct BlockCache {
    struct Key {
        int device;
        void* stream;
        unsigned size_class;
        bool operator==(const Key&) const = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const {
            return std::hash<void*>()(k.stream) ^ (std::size_t(k.device) << 6) ^ (std::size_t(k.size_class) << 12);
        }
    };
    std::mutex m;
    std::unordered_map<Key, std::vector<void*>, KeyHash> blocks;
    std::size_t bytes[2] = {0, 0};  // kept, up to 1 MiB and beyond
    // Streams whose end hybla sees (stream_create's; and the default stream): a stream of the caller's could
    // end, and its handle come back for another, while the blocks freed on it are still in use.
    std::unordered_set<void*> own_streams;
};
// Never destroyed: blocks still held at exit go with the CUDA context.
BlockCache& block_cache() {
    static BlockCache* cache = new BlockCache;
    return *cache;
}
bool block_cache_on() {
    static const bool on = [] {
        const char* e = std::getenv("HYBLA_BLOCK_CACHE");
        return !(e && std::string(e) == "0");
    }();
    return on;
}
// The bytes of a block of a size class: 2^class up to 1 MiB, then (5, 6, 7, 8) / 4 of 1, 2 and 4 MiB.
std::size_t class_bytes(unsigned cls) {
    if (cls <= largest_power) return std::size_t(1) << cls;
    const unsigned i = cls - largest_power - 1;
    return (std::size_t(1) << (largest_power + i / 4)) / 4 * (5 + i % 4);
}
// The size class of a block of `bytes` bytes (the smallest that holds them), or 0 where such blocks are not kept.
unsigned size_class(std::size_t bytes) {
    if (bytes > class_bytes(largest_class) || !block_cache_on()) return 0;
    if (bytes <= class_bytes(largest_power)) return std::max(smallest_class, unsigned(std::bit_width(bytes - 1)));
    unsigned cls = largest_power + 1;
    while (class_bytes(cls) < bytes) ++cls;
    return cls;
}
// Hands the kept blocks of one stream (or of all, stream null and every true) back to the pool.
void drop_blocks(void* stream, bool every) noexcept {
    BlockCache& c = block_cache();
    std::lock_guard lock(c.m);
    for (auto it = c.blocks.begin(); it != c.blocks.end();) {
        if (!every && it->first.stream != stream) {
            ++it;
            continue;
        }
        for (void* p : it->second) {
            cudaSetDevice(it->first.device);
            cudaFreeAsync(p, as_stream(it->first.stream));
            c.bytes[it->first.size_class > largest_power] -= class_bytes(it->first.size_class);
        }
        it = c.blocks.erase(it);
    }
}
}  // namespace

void* stream_create(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    if (block_cache_on()) {
        BlockCache& c = block_cache();
        std::lock_guard lock(c.m);
        c.own_streams.insert(s);
    }
    return s;
}
void stream_destroy(void* stream, int device) noexcept {
    if (!stream) return;
    drop_blocks(stream, false);
    {
        BlockCache& c = block_cache();
        std::lock_guard lock(c.m);
        c.own_streams.erase(stream);
    }
    cudaSetDevice(device);
    cudaStreamDestroy(as_stream(stream));
}
void stream_wait(void* stream, int device, void* after, int after_device) {
    check(cudaSetDevice(after_device), "cudaSetDevice");
    cudaEvent_t ev = nullptr;
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags (stream order)");
    cudaError_t e = cudaEventRecord(ev, as_stream(after));
    if (e == cudaSuccess) e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(as_stream(stream), ev, 0);
    cudaEventDestroy(ev);  // released once the wait is done
    check(e, "ordering a copy after another stream's work");
}

static std::atomic<std::uint64_t> debug_wait_count{0};
void debug_wait(const char* what) {
    if (!debug_sync()) return;
    debug_wait_count.fetch_add(1, std::memory_order_relaxed);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) fail(int(e), (std::string(what) + " (found by HYBLA_DEBUG_SYNC's synchronisation after it)").c_str());
}
std::uint64_t debug_waits() { return debug_wait_count.load(std::memory_order_relaxed); }

void warm_up(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaFree(nullptr), "creating the CUDA context");
    setup_device(device);
}

std::size_t available_device_bytes(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
        cudaGetLastError();
        return std::size_t(1) << 30;
    }
    cudaMemPool_t pool;
    std::uint64_t reserved = 0, used = 0;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved), "cudaMemPoolGetAttribute");
    check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), "cudaMemPoolGetAttribute");
    if (reserved > used) free_bytes += std::size_t(reserved - used);
    return free_bytes;
}

// Makes device current; asking first is cheaper than setting (an allocation and a free a product make dozens).
static cudaError_t use_device(int device) {
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == device) return cudaSuccess;
    return cudaSetDevice(device);
}

void* allocate(std::size_t bytes, int device, void* stream, const char* what) {
    if (bytes == 0) return nullptr;
    check(use_device(device), "cudaSetDevice");
    const unsigned cls = size_class(bytes);
    if (cls) {
        BlockCache& c = block_cache();
        std::lock_guard lock(c.m);
        auto it = c.blocks.find({device, stream, cls});
        if (it != c.blocks.end() && !it->second.empty()) {
            void* p = it->second.back();
            it->second.pop_back();
            c.bytes[cls > largest_power] -= class_bytes(cls);
            return p;
        }
        bytes = class_bytes(cls);
    }
    setup_device(device);
    void* p = nullptr;
    cudaError_t e = cudaMallocAsync(&p, bytes, as_stream(stream));
    if (e == cudaErrorMemoryAllocation) {
        // The pool keeps freed memory; its idle pieces may be too small for this request. Hand the kept blocks
        // back, wait for the frees queued on the stream, return the idle memory to the driver and try once more.
        cudaGetLastError();
        drop_blocks(nullptr, true);
        check(use_device(device), "cudaSetDevice");
        cudaMemPool_t pool;
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (allocation retry)");
        check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
        check(cudaMemPoolTrimTo(pool, 0), "cudaMemPoolTrimTo");
        e = cudaMallocAsync(&p, bytes, as_stream(stream));
    }
    if (e != cudaSuccess) fail(int(e), what, bytes);
    return p;
}

void release(void* p, std::size_t bytes, int device, void* stream) noexcept {
    if (!p) return;
    if (const unsigned cls = size_class(bytes)) {
        BlockCache& c = block_cache();
        std::lock_guard lock(c.m);
        const std::size_t block = class_bytes(cls);
        const bool large = cls > largest_power;
        if (c.bytes[large] + block <= cache_most_bytes && (!stream || c.own_streams.count(stream))) {
            try {
                std::vector<void*>& kept = c.blocks[{device, stream, cls}];
                if (kept.size() < (large ? 4u : 16u)) {
                    kept.push_back(p);
                    c.bytes[large] += block;
                    return;
                }
            } catch (...) {  // (no memory for the list: the block goes back to the pool)
            }
        }
    }
    use_device(device);
    cudaFreeAsync(p, as_stream(stream));
}

void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind, void* stream) {
    if (bytes == 0) return;
    cudaMemcpyKind k = kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
                       : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                                          : cudaMemcpyDeviceToDevice;
    check(cudaMemcpyAsync(dst, src, bytes, k, as_stream(stream)), "cudaMemcpyAsync", bytes);
    if (kind != CopyKind::device_to_device)
        check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize after a copy");
}

std::size_t pool_peak_bytes(int device) {
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    std::uint64_t high = 0;
    check(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high), "cudaMemPoolGetAttribute");
    return std::size_t(high);
}
void pool_reset_peak(int device) {
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    std::uint64_t zero = 0;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero), "cudaMemPoolSetAttribute");
}

void release_kept_blocks(int device) {
    drop_blocks(nullptr, true);
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize (kept blocks released)");
}

void synchronize(void* stream) { check(cudaStreamSynchronize(as_stream(stream)), "cudaStreamSynchronize"); }

template <class W>
__global__ void fill_kernel(W* p, std::size_t n, W v) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        p[i] = v;
}

void fill(void* p, std::size_t count, const void* value, std::size_t elem_bytes, void* stream) {
    if (count == 0) return;
    auto s = as_stream(stream);
    // All bytes zero (offsets of an empty matrix, counters): a memset, cheaper to queue than a kernel.
    const auto* bytes = static_cast<const unsigned char*>(value);
    if (std::all_of(bytes, bytes + elem_bytes, [](unsigned char b) { return b == 0; })) {
        check(cudaMemsetAsync(p, 0, count * elem_bytes, s), "cudaMemsetAsync (fill)");
        return;
    }
    unsigned blocks = unsigned(std::min<std::size_t>((count + 255) / 256, 65535));
    switch (elem_bytes) {
        case 1: fill_kernel<<<blocks, 256, 0, s>>>(static_cast<std::uint8_t*>(p), count, *static_cast<const std::uint8_t*>(value)); break;
        case 2: fill_kernel<<<blocks, 256, 0, s>>>(static_cast<std::uint16_t*>(p), count, *static_cast<const std::uint16_t*>(value)); break;
        case 4: fill_kernel<<<blocks, 256, 0, s>>>(static_cast<std::uint32_t*>(p), count, *static_cast<const std::uint32_t*>(value)); break;
        case 8: fill_kernel<<<blocks, 256, 0, s>>>(static_cast<std::uint64_t*>(p), count, *static_cast<const std::uint64_t*>(value)); break;
        default: throw InvalidValue("cuda::fill: element size " + std::to_string(elem_bytes) + " is not 1, 2, 4 or 8");
    }
    checked(int(cudaGetLastError()), "fill kernel");
}

template <class W>
__global__ void iota_kernel(W* p, std::size_t n) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        p[i] = W(i);
}

void iota(void* p, std::size_t count, std::size_t elem_bytes, void* stream) {
    if (count == 0) return;
    const unsigned blocks = unsigned(std::min<std::size_t>((count + 255) / 256, 65535));
    auto s = as_stream(stream);
    switch (elem_bytes) {
        case 4: iota_kernel<<<blocks, 256, 0, s>>>(static_cast<std::uint32_t*>(p), count); break;
        case 8: iota_kernel<<<blocks, 256, 0, s>>>(static_cast<std::uint64_t*>(p), count); break;
        default: throw InvalidValue("cuda::iota: element size " + std::to_string(elem_bytes) + " is not 4 or 8");
    }
    checked(int(cudaGetLastError()), "iota kernel");
}

HostCell host_cell_create(std::size_t bytes, int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    HostCell c;
    check(cudaHostAlloc(&c.data, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc (scalar)", bytes);
    void* dev = nullptr;
    cudaError_t e = cudaHostGetDevicePointer(&dev, c.data, 0);
    if (e == cudaSuccess && dev != c.data) e = cudaErrorInvalidValue;  // kernels are handed the host address
    cudaEvent_t ev = nullptr;
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        cudaFreeHost(c.data);
        fail(int(e), "setting up a scalar's host memory");
    }
    c.event = ev;
    return c;
}

void host_cell_destroy(HostCell& c) noexcept {
    if (c.event) {
        cudaEventSynchronize(static_cast<cudaEvent_t>(c.event));  // a kernel may still write the memory
        cudaEventDestroy(static_cast<cudaEvent_t>(c.event));
    }
    if (c.data) cudaFreeHost(c.data);
    c = HostCell{};
}

void* thread_event(int device, unsigned slot) {
    constexpr unsigned slots = 4;
    if (slot >= slots) throw InvalidValue("cuda::thread_event: slot " + std::to_string(slot) + " of 4");
    struct Events {
        std::vector<cudaEvent_t> e;  // slots a device
        ~Events() {
            for (cudaEvent_t x : e)
                if (x) cudaEventDestroy(x);
        }
    };
    thread_local Events ev;
    if (ev.e.size() <= std::size_t(device) * slots + slot) ev.e.resize((std::size_t(device) + 1) * slots, nullptr);
    cudaEvent_t& e = ev.e[std::size_t(device) * slots + slot];
    if (!e) {
        check(use_device(device), "cudaSetDevice");
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    }
    return e;
}

void host_cell_written(HostCell& c, void* stream) {
    check(cudaEventRecord(static_cast<cudaEvent_t>(c.event), as_stream(stream)), "cudaEventRecord (scalar)");
    c.stream = stream;
}

void host_cell_wait(const HostCell& c) {
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(c.event)), "waiting for a scalar's result");
}

}  // namespace hybla::cuda
