// Element-wise work on full vectors (dense storage, all n entries present) as one kernel each, with nothing
// to wait for. The general vector paths treat a vector as an n x 1 matrix (merge plans, scans, a count of the
// result read back to the host), which is right for sparse vectors but costs a dozen launches and a
// synchronisation per call; iterative algorithms on dense vectors (PageRank) pay that every iteration. The
// front end knows from nvals, kept on the host, when its operands are full and takes these paths.
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/vector.hpp"

namespace hybla::cuda {

using namespace keys;

namespace {
// A full vector of n values taken from vals, with the bitmap the kernel that wrote vals set to all ones (each
// kernel here marks as it writes: a separate fill would be a second launch per call).
template <class T>
Vector<T> full_of(Index n, Array<T> vals, Array<std::uint8_t> marked, const Context& ctx) {
    return Vector<T>::adopt(n, n, true, Array<Index>(0, ctx), std::move(vals), std::move(marked));
}
}  // namespace

template <class T>
Vector<T> full_ewise(const Vector<T>& a, const Vector<T>& b, BinaryOp op) {
    const Context& ctx = a.context();
    const Index n = a.size();
    Array<T> out(n, ctx);
    Array<std::uint8_t> bm(n, ctx);
    const T* x = a.storage_values().data();
    const T* y = b.storage_values().data();
    T* o = out.data();
    std::uint8_t* m = bm.data();
    for_each(n, ctx, "eWise on full vectors", [=] __device__(std::uint64_t i) {
        o[i] = apply_binary<T>(op, x[i], y[i]);
        m[i] = 1;
    });
    return full_of(n, std::move(out), std::move(bm), ctx);
}

template <class T>
Vector<T> full_unary(const Vector<T>& a, UnaryOp op) {
    Array<std::uint8_t> bm(a.size(), a.context());
    Array<T> out = unary_values(a.storage_values().data(), a.size(), op, a.context(), bm.data());
    return full_of(a.size(), std::move(out), std::move(bm), a.context());
}

template <class T>
Vector<T> full_bound(const Vector<T>& a, BinaryOp op, T s, bool scalar_first) {
    Array<std::uint8_t> bm(a.size(), a.context());
    Array<T> out = bound_values(a.storage_values().data(), a.size(), op, s, scalar_first, a.context(), bm.data());
    return full_of(a.size(), std::move(out), std::move(bm), a.context());
}

template <class T>
Vector<T> accumulate_full(const Vector<T>& w, const Vector<T>& t, BinaryOp accum) {
    const Context& ctx = w.context();
    const Index n = w.size();
    Array<T> out(n, ctx);
    Array<std::uint8_t> bm(n, ctx);
    const T* x = w.storage_values().data();
    const T* y = t.storage_values().data();
    const std::uint8_t* present = t.nvals() == n ? nullptr : t.storage_bitmap().data();
    T* o = out.data();
    std::uint8_t* m = bm.data();
    for_each(n, ctx, "accumulate into a full vector", [=] __device__(std::uint64_t i) {
        o[i] = present && !present[i] ? x[i] : apply_binary<T>(accum, x[i], y[i]);
        m[i] = 1;
    });
    return full_of(n, std::move(out), std::move(bm), ctx);
}

#define HYBLA_X(T)                                                                           \
    template Vector<T> full_ewise<T>(const Vector<T>&, const Vector<T>&, BinaryOp);         \
    template Vector<T> full_unary<T>(const Vector<T>&, UnaryOp);                            \
    template Vector<T> full_bound<T>(const Vector<T>&, BinaryOp, T, bool);                  \
    template Vector<T> accumulate_full<T>(const Vector<T>&, const Vector<T>&, BinaryOp);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
