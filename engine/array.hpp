// Array<T>: an owning, resizable buffer without value-initialisation, in host or in GPU memory.
// std::vector would zero every output buffer before a kernel overwrites it (and cannot hold bool by address);
// Array allocates uninitialised storage, reports allocation failure as hybla::OutOfMemory, can adopt or
// release a std::unique_ptr<T[]> so that import/export move host buffers without copying, and lives where its
// Context says: element access through operator[] and spans is for host arrays only.
#pragma once
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <type_traits>

#include "engine/context.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/error.hpp"

namespace hybla {

namespace detail {
// Host views of an object's storage are refused for a GPU object: reading device memory from the host would
// crash or read garbage. Copy the object with to(Context::cpu()) first; backends use the storage_*() views.
inline void host_only(const Context& ctx, const char* what) {
    if (ctx.is_cuda())
        throw InvalidValue(std::string(what) +
                           ": the object lives on the GPU; copy it with to(Context::cpu()) to read it on the host");
}
}  // namespace detail

template <class T>
class Array {
    static_assert(std::is_trivially_copyable_v<T>, "Array holds trivially copyable values only");

public:
    Array() = default;
    explicit Array(std::size_t n) : Array(n, Context::cpu()) {}
    Array(std::size_t n, const Context& ctx) : n_(n), ctx_(ctx) { p_ = allocate(n, ctx); }
    Array(std::size_t n, const T& value, const Context& ctx = Context::cpu()) : Array(n, ctx) { fill(value); }
    Array(std::unique_ptr<T[]> p, std::size_t n) : p_(p.release()), n_(n) {}
    Array(std::initializer_list<T> init) : Array(init.size()) { std::copy(init.begin(), init.end(), p_); }
    explicit Array(std::span<const T> s) : Array(s.size()) { std::copy(s.begin(), s.end(), p_); }
    Array(const Array& o) : Array(o.n_, o.ctx_) { copy_from(o.p_, o.ctx_, o.n_); }
    Array(Array&& o) noexcept : p_(o.p_), n_(o.n_), ctx_(o.ctx_) {
        o.p_ = nullptr;
        o.n_ = 0;
    }
    Array& operator=(const Array& o) {
        if (this != &o) *this = Array(o);
        return *this;
    }
    Array& operator=(Array&& o) noexcept {
        if (this != &o) {
            reset();
            p_ = o.p_;
            n_ = o.n_;
            ctx_ = o.ctx_;
            o.p_ = nullptr;
            o.n_ = 0;
        }
        return *this;
    }
    ~Array() { reset(); }

    std::size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const Context& context() const { return ctx_; }
    bool on_device() const { return ctx_.is_cuda(); }
    T* data() { return p_; }
    const T* data() const { return p_; }
    T& operator[](std::size_t i) { return p_[i]; }
    const T& operator[](std::size_t i) const { return p_[i]; }
    T* begin() { return p_; }
    T* end() { return p_ + n_; }
    const T* begin() const { return p_; }
    const T* end() const { return p_ + n_; }
    std::span<T> span() { return {p_, n_}; }
    std::span<const T> span() const { return {p_, n_}; }

    // Keeps the first min(n, size()) elements; new elements are uninitialised.
    void resize(std::size_t n) {
        if (n == n_) return;
        Array q(n, ctx_);
        q.copy_from(p_, ctx_, std::min(n, n_));
        *this = std::move(q);
    }
    void clear() { *this = Array(0, ctx_); }
    // Host arrays only.
    std::unique_ptr<T[]> release() {
        if (on_device()) throw InvalidValue("Array::release: the array lives on the GPU");
        std::unique_ptr<T[]> out(p_);
        p_ = nullptr;
        n_ = 0;
        return out;
    }
    // 0, 1, ..., n - 1 in ctx (an integer type; 4 or 8 bytes on the GPU, where no host array is made).
    static Array iota(std::size_t n, const Context& ctx = Context::cpu()) {
        static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "Array::iota: an integer type");
        Array out(n, ctx);
        if (!out.on_device()) {
            for (std::size_t i = 0; i < n; ++i) out.p_[i] = T(i);
        } else {
            if constexpr (sizeof(T) != 4 && sizeof(T) != 8)
                throw InvalidValue("Array::iota on the GPU: 4- or 8-byte integers only");
            cuda::iota(out.p_, n, sizeof(T), ctx.stream());
        }
        return out;
    }
    void fill(const T& v) {
        if (!on_device()) std::fill_n(p_, n_, v);
        else cuda::fill(p_, n_, &v, sizeof(T), ctx_.stream());
    }
    // A copy in another context.
    Array to(const Context& ctx) const {
        Array out(n_, ctx);
        out.copy_from(p_, ctx_, n_);
        return out;
    }
    // The value at i, wherever the array lives (one small copy for device arrays).
    T get(std::size_t i) const {
        if (!on_device()) return p_[i];
        T v;
        cuda::copy(&v, p_ + i, sizeof(T), cuda::CopyKind::device_to_host, ctx_.stream());
        return v;
    }

    // Copies n elements from src (living in src_ctx) to this array, starting at element `at`.
    void copy_from(const T* src, const Context& src_ctx, std::size_t n, std::size_t at = 0) {
        if (n == 0) return;
        if (!on_device() && !src_ctx.is_cuda()) {
            std::copy_n(src, n, p_ + at);
            return;
        }
        auto kind = !src_ctx.is_cuda() ? cuda::CopyKind::host_to_device
                    : on_device()      ? cuda::CopyKind::device_to_device
                                       : cuda::CopyKind::device_to_host;
        // From another stream (or device): the copy waits for the work queued there, which may still write src,
        // and the host for the copy (src's owner may free it on its own stream). On one stream a device copy is
        // only queued: what follows on the stream, src's release included, comes after it.
        const bool other_stream = kind == cuda::CopyKind::device_to_device && !(src_ctx == ctx_);
        if (other_stream) cuda::stream_wait(ctx_.stream(), ctx_.device(), src_ctx.stream(), src_ctx.device());
        cuda::copy(p_ + at, src, n * sizeof(T), kind, on_device() ? ctx_.stream() : src_ctx.stream());
        if (other_stream) cuda::synchronize(ctx_.stream());
    }

private:
    static T* allocate(std::size_t n, const Context& ctx) {
        if (n == 0) return nullptr;
        if (n > std::size_t(-1) / sizeof(T)) throw OutOfMemory("an array of " + std::to_string(n) + " elements", std::size_t(-1));
        if (ctx.is_cuda())
            return static_cast<T*>(cuda::allocate(n * sizeof(T), ctx.device(), ctx.stream(), "array"));
        try {
            return new T[n];
        } catch (const std::bad_alloc&) {
            throw OutOfMemory("an array of " + std::to_string(n) + " elements", n * sizeof(T));
        }
    }
    void reset() noexcept {
        if (!p_) return;
        if (ctx_.is_cuda()) cuda::release(p_, n_ * sizeof(T), ctx_.device(), ctx_.stream());
        else delete[] p_;
        p_ = nullptr;
    }

    T* p_ = nullptr;
    std::size_t n_ = 0;
    Context ctx_;
};

}  // namespace hybla
