// Monoids: an associative, commutative binary operator with an identity and, where one exists, a terminal
// value (once reached, further terms cannot change the result, so reductions may stop early).
#pragma once
#include <limits>
#include <type_traits>

#include "engine/config.hpp"
#include "semirings/binary_ops.hpp"

namespace hybla {

namespace detail {
template <class T> HYBLA_HD constexpr T lowest_value() {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
}
template <class T> HYBLA_HD constexpr T highest_value() {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
}
}  // namespace detail

struct plus_monoid : plus_op {
    template <class T> HYBLA_HD static constexpr T identity() { return T(0); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T) { return false; }
};
struct times_monoid : times_op {
    template <class T> HYBLA_HD static constexpr T identity() { return T(1); }
    // 0 is terminal for integers only: for floating point 0 * inf is NaN.
    template <class T> HYBLA_HD static constexpr bool is_terminal(T x) {
        if constexpr (std::is_integral_v<T>) return x == T(0);
        else return false;
    }
};
struct min_monoid : min_op {
    template <class T> HYBLA_HD static constexpr T identity() { return detail::highest_value<T>(); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T x) { return x == detail::lowest_value<T>(); }
};
struct max_monoid : max_op {
    template <class T> HYBLA_HD static constexpr T identity() { return detail::lowest_value<T>(); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T x) { return x == detail::highest_value<T>(); }
};
struct lor_monoid : lor_op {
    template <class T> HYBLA_HD static constexpr T identity() { return T(0); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T x) { return x != T(0); }
};
struct land_monoid : land_op {
    template <class T> HYBLA_HD static constexpr T identity() { return T(1); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T x) { return x == T(0); }
};
struct lxor_monoid : lxor_op {
    template <class T> HYBLA_HD static constexpr T identity() { return T(0); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T) { return false; }
};
// any: the result is one of the terms, whichever; hybla keeps the first in its evaluation order, which is
// deterministic on each backend but may differ between backends.
struct any_monoid : first_op {
    template <class T> HYBLA_HD static constexpr T identity() { return T(0); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T) { return true; }
};

// A user monoid: derive from a binary op and give identity (and is_terminal, or inherit no_terminal).
struct no_terminal {
    template <class T> HYBLA_HD static constexpr bool is_terminal(T) { return false; }
};

}  // namespace hybla
