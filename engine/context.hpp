// Context: where objects live and operations run. A matrix or vector belongs to one context and moves only
// when asked (to(ctx)). The default context comes from HYBLA_BACKEND (cpu, cuda or auto; auto when unset):
// auto picks CUDA when a usable GPU is present, else the CPU.
// A CUDA context is a device and a stream: two contexts on one device with different streams differ, so that
// objects of both never meet in one operation (nothing would order the two streams' work); to(ctx) moves an
// object to another stream, its copy queued after the work already queued on the source's stream. Memory pools
// are per device and serve every stream on it.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "engine/error.hpp"

namespace hybla {

enum class Backend { cpu, cuda };

namespace cuda {
// Defined by the CUDA backend when it is built; 0 otherwise.
int device_count();
}

#if defined(HYBLA_HAVE_CUDA)
inline constexpr bool cuda_compiled = true;
#else
inline constexpr bool cuda_compiled = false;
#endif
inline bool cuda_built() { return cuda_compiled; }

// Opens the GPU branch of an operation: `HYBLA_ON_GPU(c) { ... return; }`. Without the CUDA backend the
// branch is discarded at compile time, so builds without nvcc never reference its functions.
#define HYBLA_ON_GPU(obj) if constexpr (::hybla::cuda_compiled) if ((obj).context().is_cuda())

// The number of CUDA devices (0 without the CUDA backend), found once.
inline int cuda_device_count() {
#if defined(HYBLA_HAVE_CUDA)
    static const int count = cuda::device_count();
    return count;
#else
    return 0;
#endif
}
inline bool cuda_usable() { return cuda_device_count() > 0; }

class Context {
public:
    Context() = default;
    static Context cpu() { return Context(Backend::cpu, 0, nullptr); }
    // stream: a cudaStream_t of that device, or nullptr for the default stream. A device that does not exist
    // is an InvalidValue naming it and the number of devices.
    static Context cuda(int device = 0, void* stream = nullptr) {
        if (device < 0)
            throw InvalidValue("CUDA device " + std::to_string(device) + " does not exist: device ids start at 0");
        if (!cuda_built()) throw InvalidValue("the CUDA backend was asked for, but hybla was built without nvcc");
        if (!cuda_usable()) throw InvalidValue("the CUDA backend was asked for, but no usable CUDA GPU is present");
        const int count = cuda_device_count();
        if (device >= count)
            throw InvalidValue("CUDA device " + std::to_string(device) + " does not exist: this machine has " +
                               std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") + " (0 to " +
                               std::to_string(count - 1) + ")");
        return Context(Backend::cuda, device, stream);
    }
    static Context automatic() { return cuda_usable() ? cuda() : cpu(); }
    // "cpu", "cuda" or "auto"; anything else is an InvalidValue naming what came.
    static Context parse(const std::string& name) {
        if (name == "cpu") return cpu();
        if (name == "cuda") return cuda();
        if (name == "auto" || name.empty()) return automatic();
        throw InvalidValue("unknown backend '" + name + "': expected cpu, cuda or auto");
    }

    Backend backend() const { return backend_; }
    bool is_cuda() const { return backend_ == Backend::cuda; }
    bool is_cpu() const { return backend_ == Backend::cpu; }
    int device() const { return device_; }
    void* stream() const { return stream_; }
    // "cpu", "cuda:0" (the default stream) or "cuda:0 stream 0x..." (another stream).
    std::string name() const {
        if (is_cpu()) return "cpu";
        std::string n = "cuda:" + std::to_string(device_);
        if (stream_) {
            char s[40];
            std::snprintf(s, sizeof s, " stream %p", stream_);
            n += s;
        }
        return n;
    }
    const Context& context() const { return *this; }
    bool operator==(const Context& o) const {
        return backend_ == o.backend_ && (backend_ == Backend::cpu || (device_ == o.device_ && stream_ == o.stream_));
    }

private:
    Context(Backend b, int device, void* stream) : backend_(b), device_(device), stream_(stream) {}
    Backend backend_ = Backend::cpu;
    int device_ = 0;
    void* stream_ = nullptr;
};

namespace detail {
// The context HYBLA_BACKEND names, resolved at its first use only (auto initialises CUDA to look for a GPU,
// about 0.1 s, which a program starting its GPU on another thread should not wait for on this one).
inline const Context& environment_context() {
    static const Context ctx = [] {
        const char* e = std::getenv("HYBLA_BACKEND");
        return Context::parse(e ? e : "auto");
    }();
    return ctx;
}
// What set_default_context or a ScopedContext set; empty: the environment's.
inline std::optional<Context>& default_context_slot() {
    static std::optional<Context> ctx;
    return ctx;
}
}  // namespace detail

// The context new objects are created in (a copy: a ScopedContext may end while the caller holds it).
inline Context default_context() {
    const std::optional<Context>& set = detail::default_context_slot();
    return set ? *set : detail::environment_context();
}
inline void set_default_context(const Context& ctx) { detail::default_context_slot() = ctx; }

// Sets the default context for a scope (tests run one body on each backend this way).
class ScopedContext {
public:
    explicit ScopedContext(const Context& ctx) : saved_(detail::default_context_slot()) { set_default_context(ctx); }
    ~ScopedContext() { detail::default_context_slot() = saved_; }
    ScopedContext(const ScopedContext&) = delete;
    ScopedContext& operator=(const ScopedContext&) = delete;

private:
    std::optional<Context> saved_;
};

}  // namespace hybla
