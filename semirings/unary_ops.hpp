// Unary operators for apply(). Each is a stateless function object usable on host and device.
#pragma once
#include <type_traits>

#include "engine/config.hpp"
#include "semirings/binary_ops.hpp"

namespace hybla {

struct identity_op {
    template <class T> HYBLA_HD constexpr T operator()(T a) const { return a; }
};
struct ainv_op {  // additive inverse
    template <class T> HYBLA_HD constexpr T operator()(T a) const {
        if constexpr (std::is_same_v<T, bool>) return a;
        else return T(-a);
    }
};
struct minv_op {  // multiplicative inverse; integer 1/0 follows div_op's rule
    template <class T> HYBLA_HD constexpr T operator()(T a) const { return div_op{}(T(1), a); }
};
struct abs_op {
    template <class T> HYBLA_HD constexpr T operator()(T a) const {
        if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return a;
        else return a < T(0) ? T(-a) : a;
    }
};
struct lnot_op {
    template <class T> HYBLA_HD constexpr T operator()(T a) const { return T(!(a != T(0))); }
};
struct one_op {
    template <class T> HYBLA_HD constexpr T operator()(T) const { return T(1); }
};

}  // namespace hybla
