// Device temporaries in one allocation (engine/cuda/spgemm, engine/cuda/structure/labels.cu). Host code only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/context.hpp"
#include "engine/error.hpp"

namespace hybla::cuda {

// Device temporaries of one step carved out of one allocation: an allocation and its free cost 2-3 us of host
// time, and a small product or the label indicator, bound by its host time, needs a dozen temporaries. take()
// each, then allocate(), after which the pointers taken (which must live until then) point into the allocation
// (16-byte aligned; nullptr for none). Freed with the Carve, in stream order.
class Carve {
public:
    // what: named in the error for an impossible size ("SpGEMM: temporaries" of n items).
    explicit Carve(const Context& ctx, const char* what) : storage_(0, ctx), ctx_(ctx), what_(what) {}
    template <class U>
    void take(U*& p, std::uint64_t n) {
        p = nullptr;
        if (n == 0) return;
        if (n > (std::uint64_t(1) << 60) / sizeof(U))
            throw OutOfMemory(std::string(what_) + " of " + std::to_string(n) + " items", std::size_t(-1));
        parts_.push_back({bytes_, &p, [](void* target, unsigned char* at) {
                              *static_cast<U**>(target) = reinterpret_cast<U*>(at);
                          }});
        bytes_ += (n * sizeof(U) + 15) / 16 * 16;
    }
    void allocate() {
        storage_ = Array<std::uint64_t>((bytes_ + 7) / 8, ctx_);
        unsigned char* base = reinterpret_cast<unsigned char*>(storage_.data());
        for (const Part& part : parts_) part.set(part.target, base + part.at);
        parts_.clear();
    }

private:
    struct Part {
        std::uint64_t at;
        void* target;
        void (*set)(void*, unsigned char*);
    };
    Array<std::uint64_t> storage_;
    Context ctx_;
    const char* what_;
    std::uint64_t bytes_ = 0;
    std::vector<Part> parts_;
};

}  // namespace hybla::cuda
