// Array<T>: an owning, resizable buffer without value-initialisation.
// std::vector would zero every output buffer before a kernel overwrites it (and cannot hold bool by address);
// Array allocates uninitialised storage, reports allocation failure as hybla::OutOfMemory, and can adopt
// or release a std::unique_ptr<T[]> so that import/export move buffers without copying.
#pragma once
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <typeinfo>

#include "engine/error.hpp"

namespace hybla {

template <class T>
class Array {
public:
    Array() = default;
    explicit Array(std::size_t n) : p_(allocate(n)), n_(n) {}
    Array(std::size_t n, const T& value) : Array(n) { std::fill_n(p_.get(), n, value); }
    Array(std::unique_ptr<T[]> p, std::size_t n) : p_(std::move(p)), n_(n) {}
    Array(std::initializer_list<T> init) : Array(init.size()) { std::copy(init.begin(), init.end(), p_.get()); }
    explicit Array(std::span<const T> s) : Array(s.size()) { std::copy(s.begin(), s.end(), p_.get()); }
    Array(const Array& o) : Array(o.n_) { std::copy_n(o.p_.get(), o.n_, p_.get()); }
    Array(Array&& o) noexcept : p_(std::move(o.p_)), n_(o.n_) { o.n_ = 0; }
    Array& operator=(const Array& o) {
        if (this != &o) *this = Array(o);
        return *this;
    }
    Array& operator=(Array&& o) noexcept {
        p_ = std::move(o.p_);
        n_ = o.n_;
        o.n_ = 0;
        return *this;
    }

    std::size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    T* data() { return p_.get(); }
    const T* data() const { return p_.get(); }
    T& operator[](std::size_t i) { return p_[i]; }
    const T& operator[](std::size_t i) const { return p_[i]; }
    T* begin() { return p_.get(); }
    T* end() { return p_.get() + n_; }
    const T* begin() const { return p_.get(); }
    const T* end() const { return p_.get() + n_; }
    std::span<T> span() { return {p_.get(), n_}; }
    std::span<const T> span() const { return {p_.get(), n_}; }

    // Keeps the first min(n, size()) elements; new elements are uninitialised.
    void resize(std::size_t n) {
        if (n == n_) return;
        auto q = allocate(n);
        std::copy_n(p_.get(), std::min(n, n_), q.get());
        p_ = std::move(q);
        n_ = n;
    }
    void clear() {
        p_.reset();
        n_ = 0;
    }
    std::unique_ptr<T[]> release() {
        n_ = 0;
        return std::move(p_);
    }

private:
    static std::unique_ptr<T[]> allocate(std::size_t n) {
        if (n == 0) return {};
        try {
            return std::make_unique_for_overwrite<T[]>(n);
        } catch (const std::bad_alloc&) {
            throw OutOfMemory(std::string("array of ") + std::to_string(n) + " elements", n * sizeof(T));
        }
    }
    std::unique_ptr<T[]> p_;
    std::size_t n_ = 0;
};

}  // namespace hybla
