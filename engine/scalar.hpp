// Scalar<T>: one value or none (GraphBLAS's GrB_Scalar), living in a context like a Vector. A reduction or an
// inner product into a Scalar (engine/reduce.hpp) is queued like any other operation: on the GPU the result is
// left in page-locked host memory behind an event, and only get()/value() wait, and only for that result, not
// for the work queued after it. A loop can so queue its next step before it reads this step's scalar
// (PageRank reads an iteration's L1 change while the next iteration runs).
#pragma once
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
                                  pending_(std::exchange(o.pending_, false)), identity_(o.identity_) {}
    Scalar& operator=(Scalar&& o) noexcept {
        if (this != &o) {
            release();
            ctx_ = o.ctx_;
            value_ = o.value_;
            cell_ = std::exchange(o.cell_, {});
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
    // The value; an InvalidValue when there is none.
    T value() const {
        std::optional<T> v = get();
        if (!v) throw InvalidValue("Scalar::value: the scalar holds no value");
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

    // For the backends. A GPU result: the cell the kernels write into (valid until the next call), for a
    // write queued on `stream`, after which the scalar reads the cell; `identity` is the value of a reduction
    // with no term. Must be followed by result_queued(stream) once the write is queued.
    cuda::ReduceCell<T>* result_cell(void* stream) {
        if (!cell_.data) cell_ = cuda::host_cell_create(sizeof(cuda::ReduceCell<T>), ctx_.device());
        else if (pending_ && cell_.stream != stream) cuda::host_cell_wait(cell_);  // keep the writes in order
        return static_cast<cuda::ReduceCell<T>*>(cell_.data);
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
        if constexpr (cuda_compiled)
            if (cell_.data) cuda::host_cell_destroy(cell_);
        pending_ = false;
    }

    Context ctx_;
    mutable std::optional<T> value_;
    cuda::HostCell cell_;
    mutable bool pending_ = false;
    T identity_{};
};

}  // namespace hybla
