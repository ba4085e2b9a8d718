// Scalar<T>: one value or none (GraphBLAS's GrB_Scalar), living in a context like a Vector. A reduction or an
// inner product into a Scalar (engine/reduce.hpp) is queued like any other operation: on the GPU the result is
// left in page-locked host memory behind an event, and only get()/value() wait, and only for that result, not
// for the work queued after it. A loop can so queue its next step before it reads this step's scalar
// (PageRank reads an iteration's L1 change while the next iteration runs).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "engine/context.hpp"
#include "engine/cuda/backend.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/error.hpp"

namespace hybla {

template <class T>
class Scalar {
public:
    using value_type = T;

    explicit Scalar(const Context& ctx = default_context()) : ctx_(ctx) {}
    explicit Scalar(T value, const Context& ctx = default_context()) : ctx_(ctx), value_(value) {}
    // A copy holds the value (waiting for a pending one), not the pending result.
    Scalar(const Scalar& o) : ctx_(o.ctx_), value_(o.get()) {}
    Scalar& operator=(const Scalar& o) {
        if (this != &o) {
            std::optional<T> v = o.get();
            release();
            ctx_ = o.ctx_;
            value_ = v;
        }
        return *this;
    }
    Scalar(Scalar&& o) noexcept : ctx_(o.ctx_), value_(o.value_), cell_(std::exchange(o.cell_, {})),
                                  scratch_(std::exchange(o.scratch_, nullptr)),
                                  pending_(std::exchange(o.pending_, false)), identity_(o.identity_) {}
    Scalar& operator=(Scalar&& o) noexcept {
        if (this != &o) {
            release();
            ctx_ = o.ctx_;
            value_ = o.value_;
            cell_ = std::exchange(o.cell_, {});
            scratch_ = std::exchange(o.scratch_, nullptr);
            pending_ = std::exchange(o.pending_, false);
            identity_ = o.identity_;
        }
        return *this;
    }
    ~Scalar() { release(); }

    const Context& context() const { return ctx_; }

    // The value, or none; waits for a result still being computed.
    std::optional<T> get() const {
        if (pending_) {
            cuda::host_cell_wait(cell_);
            const auto* r = static_cast<const cuda::ReduceCell<T>*>(cell_.data);
            value_ = r->pos == ~Offset(0) ? identity_ : r->val;
            pending_ = false;
        }
        return value_;
    }
    // The value; a NoValue when there is none (as for a missing entry of a Matrix or Vector).
    T value() const {
        std::optional<T> v = get();
        if (!v) throw NoValue("Scalar::value: the scalar holds no value");
        return *v;
    }
    Index nvals() const { return get() ? 1 : 0; }
    void set(T v) {
        settle();
        value_ = v;
    }
    void clear() {
        settle();
        value_.reset();
    }

    // For the backends. A GPU result: the cell the kernels write into and the device scratch they may use, for
    // a write queued on `stream`, after which the scalar reads the cell. Must be followed by
    // result_queued(stream, identity) once the write is queued (identity: the value of a reduction with no term).
    cuda::ScalarTarget<T> result_target(void* stream) {
        if (!cell_.data) {
            cell_ = cuda::host_cell_create(sizeof(cuda::ReduceCell<T>), ctx_.device());
        } else if (cell_.stream != stream) {
            cuda::host_cell_wait(cell_);  // the last write, on another stream, lands first (cell and scratch)
        }
        if (!scratch_) {
            scratch_ = cuda::allocate(cuda::reduce_scratch_bytes, ctx_.device(), stream, "a scalar's scratch");
            const std::uint32_t zero = 0;
            cuda::fill(scratch_, 1, &zero, sizeof zero, stream);
        }
        return {static_cast<cuda::ReduceCell<T>*>(cell_.data), scratch_};
    }
    void result_queued(void* stream, T identity) {
        cuda::host_cell_written(cell_, stream);
        identity_ = identity;
        pending_ = true;
    }

private:
    // No result on its way any more (a kernel may still write the cell: reads of it follow the next write).
    void settle() { pending_ = false; }
    void release() noexcept {
        if constexpr (cuda_compiled) {
            if (cell_.data) cuda::host_cell_destroy(cell_);  // waits for the last write (which used the scratch)
            if (scratch_) cuda::release(scratch_, cuda::reduce_scratch_bytes, ctx_.device(), ctx_.stream());
        }
        scratch_ = nullptr;
        pending_ = false;
    }

    Context ctx_;
    mutable std::optional<T> value_;
    cuda::HostCell cell_;
    void* scratch_ = nullptr;  // device memory of cuda::reduce_scratch_bytes
    mutable bool pending_ = false;
    T identity_{};
};

}  // namespace hybla
