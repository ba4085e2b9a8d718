// Argument checks of the front end: done once, before a backend is called; kernels assume valid input.
#pragma once
#include <string>
#include <type_traits>

#include "engine/dense_matrix.hpp"
#include "engine/descriptor.hpp"
#include "engine/error.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::detail {

template <class M> Index rows_of(const M& m, bool t) { return t ? m.ncols() : m.nrows(); }
template <class M> Index cols_of(const M& m, bool t) { return t ? m.nrows() : m.ncols(); }

inline void require(bool ok, const std::string& op, const std::string& what) {
    if (!ok) throw DimensionMismatch(op + ": " + what);
}

template <class MaskT>
void check_mask(const MaskT& mask, Index nrows, Index ncols, const std::string& op) {
    if constexpr (!std::is_same_v<MaskT, NoMask>)
        require(mask.nrows() == nrows && mask.ncols() == ncols, op,
                "mask is " + shape(mask.nrows(), mask.ncols()) + " but the output is " + shape(nrows, ncols));
}
template <class MaskT>
void check_vector_mask(const MaskT& mask, Index n, const std::string& op) {
    if constexpr (!std::is_same_v<MaskT, NoMask>)
        require(mask.size() == n, op,
                "mask has size " + std::to_string(mask.size()) + " but the output has size " + std::to_string(n));
}

// A context as the message of a mismatch names it: with its stream where the other is on the same device.
inline std::string context_name(const Context& c, const Context& other) {
    const bool same_device = c.is_cuda() && other.is_cuda() && c.device() == other.device();
    return c.name() + (same_device && !c.stream() ? " default stream" : "");
}

// Every operand must live in the output's context (device and stream): nothing moves silently, and no operation
// reads objects that another stream may still be writing.
template <class Out, class... Objs>
void same_context(const std::string& op, const Out& out, const Objs&... objs) {
    auto one = [&](const auto& o) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(o)>, NoMask>)
            if (!(o.context() == out.context()))
                throw InvalidValue(op + ": operands live in different contexts (the output on " +
                                   context_name(out.context(), o.context()) + ", an input on " +
                                   context_name(o.context(), out.context()) + "); move them with to(context)");
    };
    (one(objs), ...);
}

template <class T> struct is_matrix : std::false_type {};
template <class T> struct is_matrix<Matrix<T>> : std::true_type {};
template <class T> struct is_vector : std::false_type {};
template <class T> struct is_vector<Vector<T>> : std::true_type {};

template <class MaskT>
concept MatrixMask = std::is_same_v<MaskT, NoMask> || is_matrix<MaskT>::value;
template <class MaskT>
concept VectorMask = std::is_same_v<MaskT, NoMask> || is_vector<MaskT>::value;

}  // namespace hybla::detail
