// Binary operators: the multiply half of a semiring, eWise operators, accumulators and apply-with-scalar.
// Each is a stateless function object, constexpr, callable on host and device. Results are of the operand
// type T (comparisons give T(0) or T(1)), so a semiring over T stays closed over T.
#pragma once
#include <limits>
#include <type_traits>

#include "engine/config.hpp"

namespace hybla {

struct first_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T) const { return a; }
};
struct second_op {
    template <class T> HYBLA_HD constexpr T operator()(T, T b) const { return b; }
};
struct pair_op {  // 1 wherever both entries exist: counts structure (plus_pair counts common neighbours)
    template <class T> HYBLA_HD constexpr T operator()(T, T) const { return T(1); }
};
struct plus_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const {
        if constexpr (std::is_same_v<T, bool>) return a || b;
        else return T(a + b);
    }
};
struct minus_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const {
        if constexpr (std::is_same_v<T, bool>) return a != b;
        else return T(a - b);
    }
};
struct times_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const {
        if constexpr (std::is_same_v<T, bool>) return a && b;
        else return T(a * b);
    }
};
// Integer division by zero does not trap: x/0 is 0 for x == 0, the type's maximum for x > 0 and its
// minimum for x < 0 (SuiteSparse:GraphBLAS's rule). Floating point follows IEEE.
struct div_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const {
        if constexpr (std::is_same_v<T, bool>) return a;
        else if constexpr (std::is_integral_v<T>) {
            if (b == T(0))
                return a == T(0) ? T(0) : (a > T(0) ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min());
            if constexpr (std::is_signed_v<T>)
                if (b == T(-1)) {  // min / -1 traps, and -min overflows: negate modulo 2^bits instead
                    using U = std::make_unsigned_t<T>;
                    return T(U(U(0) - U(a)));
                }
            return T(a / b);
        } else return a / b;
    }
};
struct min_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return b < a ? b : a; }
};
struct max_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return a < b ? b : a; }
};
struct eq_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T(a == b); }
};
struct ne_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T(a != b); }
};
struct lt_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T(a < b); }
};
struct le_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T(a <= b); }
};
struct gt_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T(b < a); }
};
struct ge_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T(b <= a); }
};
struct lor_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T((a != T(0)) || (b != T(0))); }
};
struct land_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T((a != T(0)) && (b != T(0))); }
};
struct lxor_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return T((a != T(0)) != (b != T(0))); }
};
// |a - b|: the larger minus the smaller, so unsigned types do not wrap; integers subtract as unsigned, so a
// difference past T's range (only for signed T) wraps instead of overflowing; for bool, a != b. With the plus
// monoid it gives the L1 distance of two vectors (inner(semiring<plus_monoid, absdiff_op>{}, u, v)).
struct absdiff_op {
    template <class T> HYBLA_HD constexpr T operator()(T a, T b) const {
        if constexpr (std::is_same_v<T, bool>) return a != b;
        else if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return a < b ? T(U(U(b) - U(a))) : T(U(U(a) - U(b)));
        } else {
            const T d = a < b ? T(b - a) : T(a - b);
            return d == T(0) ? T(0) : d;  // +0 for equal operands, -0.0 and +0.0 included
        }
    }
};

}  // namespace hybla
