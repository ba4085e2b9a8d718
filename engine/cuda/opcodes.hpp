// Run-time codes for the built-in operators, so that the CUDA backend is compiled once per value type
// rather than once per operator and semiring. The front end maps an operator type to its code at compile
// time (binary_code_of<Op> etc.); an operator without a code (a user's own) has no CUDA kernel in the
// library and is refused with a message. Device code turns a code back into the operator with a switch
// that is uniform across a warp.
#pragma once
#include <cstdint>
#include <type_traits>

#include "engine/config.hpp"
#include "semirings/semiring.hpp"

namespace hybla::cuda {

enum class BinaryOp : std::uint8_t { first, second, pair, plus, minus, times, div, min, max, eq, ne, lt, le, gt, ge, lor, land, lxor, absdiff };
enum class MonoidOp : std::uint8_t { plus, times, min, max, lor, land, lxor, any };
enum class UnaryOp : std::uint8_t { identity, ainv, minv, abs, lnot, one };

struct SemiringCode {
    MonoidOp add;
    BinaryOp multiply;
};

template <class Op> struct binary_code_of { static constexpr bool known = false; };
template <class Op> struct monoid_code_of { static constexpr bool known = false; };
template <class Op> struct unary_code_of { static constexpr bool known = false; };

#define HYBLA_CODE(trait, type, code)                  \
    template <> struct trait<type> {                  \
        static constexpr bool known = true;           \
        static constexpr auto value = code;           \
    };
HYBLA_CODE(binary_code_of, first_op, BinaryOp::first)
HYBLA_CODE(binary_code_of, second_op, BinaryOp::second)
HYBLA_CODE(binary_code_of, pair_op, BinaryOp::pair)
HYBLA_CODE(binary_code_of, plus_op, BinaryOp::plus)
HYBLA_CODE(binary_code_of, minus_op, BinaryOp::minus)
HYBLA_CODE(binary_code_of, times_op, BinaryOp::times)
HYBLA_CODE(binary_code_of, div_op, BinaryOp::div)
HYBLA_CODE(binary_code_of, min_op, BinaryOp::min)
HYBLA_CODE(binary_code_of, max_op, BinaryOp::max)
HYBLA_CODE(binary_code_of, eq_op, BinaryOp::eq)
HYBLA_CODE(binary_code_of, ne_op, BinaryOp::ne)
HYBLA_CODE(binary_code_of, lt_op, BinaryOp::lt)
HYBLA_CODE(binary_code_of, le_op, BinaryOp::le)
HYBLA_CODE(binary_code_of, gt_op, BinaryOp::gt)
HYBLA_CODE(binary_code_of, ge_op, BinaryOp::ge)
HYBLA_CODE(binary_code_of, lor_op, BinaryOp::lor)
HYBLA_CODE(binary_code_of, land_op, BinaryOp::land)
HYBLA_CODE(binary_code_of, lxor_op, BinaryOp::lxor)
HYBLA_CODE(binary_code_of, absdiff_op, BinaryOp::absdiff)
// A monoid used where a binary operator is expected means its operator.
HYBLA_CODE(binary_code_of, plus_monoid, BinaryOp::plus)
HYBLA_CODE(binary_code_of, times_monoid, BinaryOp::times)
HYBLA_CODE(binary_code_of, min_monoid, BinaryOp::min)
HYBLA_CODE(binary_code_of, max_monoid, BinaryOp::max)
HYBLA_CODE(binary_code_of, lor_monoid, BinaryOp::lor)
HYBLA_CODE(binary_code_of, land_monoid, BinaryOp::land)
HYBLA_CODE(binary_code_of, lxor_monoid, BinaryOp::lxor)
HYBLA_CODE(binary_code_of, any_monoid, BinaryOp::first)
HYBLA_CODE(monoid_code_of, plus_monoid, MonoidOp::plus)
HYBLA_CODE(monoid_code_of, times_monoid, MonoidOp::times)
HYBLA_CODE(monoid_code_of, min_monoid, MonoidOp::min)
HYBLA_CODE(monoid_code_of, max_monoid, MonoidOp::max)
HYBLA_CODE(monoid_code_of, lor_monoid, MonoidOp::lor)
HYBLA_CODE(monoid_code_of, land_monoid, MonoidOp::land)
HYBLA_CODE(monoid_code_of, lxor_monoid, MonoidOp::lxor)
HYBLA_CODE(monoid_code_of, any_monoid, MonoidOp::any)
HYBLA_CODE(unary_code_of, identity_op, UnaryOp::identity)
HYBLA_CODE(unary_code_of, ainv_op, UnaryOp::ainv)
HYBLA_CODE(unary_code_of, minv_op, UnaryOp::minv)
HYBLA_CODE(unary_code_of, abs_op, UnaryOp::abs)
HYBLA_CODE(unary_code_of, lnot_op, UnaryOp::lnot)
HYBLA_CODE(unary_code_of, one_op, UnaryOp::one)
#undef HYBLA_CODE

template <class Sr> struct semiring_code_of { static constexpr bool known = false; };
template <class Add, class Mul>
struct semiring_code_of<semiring<Add, Mul>> {
    static constexpr bool known = monoid_code_of<Add>::known && binary_code_of<Mul>::known;
    static constexpr SemiringCode value{monoid_code_of<Add>::value, binary_code_of<Mul>::value};
};

// --- device side: codes back to operators (host too, for tests) ---
template <class T>
HYBLA_HD inline T apply_binary(BinaryOp op, T a, T b) {
    switch (op) {
        case BinaryOp::first: return first_op{}(a, b);
        case BinaryOp::second: return second_op{}(a, b);
        case BinaryOp::pair: return pair_op{}(a, b);
        case BinaryOp::plus: return plus_op{}(a, b);
        case BinaryOp::minus: return minus_op{}(a, b);
        case BinaryOp::times: return times_op{}(a, b);
        case BinaryOp::div: return div_op{}(a, b);
        case BinaryOp::min: return min_op{}(a, b);
        case BinaryOp::max: return max_op{}(a, b);
        case BinaryOp::eq: return eq_op{}(a, b);
        case BinaryOp::ne: return ne_op{}(a, b);
        case BinaryOp::lt: return lt_op{}(a, b);
        case BinaryOp::le: return le_op{}(a, b);
        case BinaryOp::gt: return gt_op{}(a, b);
        case BinaryOp::ge: return ge_op{}(a, b);
        case BinaryOp::lor: return lor_op{}(a, b);
        case BinaryOp::land: return land_op{}(a, b);
        case BinaryOp::lxor: return lxor_op{}(a, b);
        case BinaryOp::absdiff: return absdiff_op{}(a, b);
    }
    return a;
}
template <class T>
HYBLA_HD inline T apply_monoid(MonoidOp op, T a, T b) {
    switch (op) {
        case MonoidOp::plus: return plus_op{}(a, b);
        case MonoidOp::times: return times_op{}(a, b);
        case MonoidOp::min: return min_op{}(a, b);
        case MonoidOp::max: return max_op{}(a, b);
        case MonoidOp::lor: return lor_op{}(a, b);
        case MonoidOp::land: return land_op{}(a, b);
        case MonoidOp::lxor: return lxor_op{}(a, b);
        case MonoidOp::any: return a;
    }
    return a;
}
template <class T>
HYBLA_HD inline T monoid_identity(MonoidOp op) {
    switch (op) {
        case MonoidOp::plus: return plus_monoid::identity<T>();
        case MonoidOp::times: return times_monoid::identity<T>();
        case MonoidOp::min: return min_monoid::identity<T>();
        case MonoidOp::max: return max_monoid::identity<T>();
        case MonoidOp::lor: return lor_monoid::identity<T>();
        case MonoidOp::land: return land_monoid::identity<T>();
        case MonoidOp::lxor: return lxor_monoid::identity<T>();
        case MonoidOp::any: return any_monoid::identity<T>();
    }
    return T{};
}
template <class T>
HYBLA_HD inline T apply_unary(UnaryOp op, T a) {
    switch (op) {
        case UnaryOp::identity: return identity_op{}(a);
        case UnaryOp::ainv: return ainv_op{}(a);
        case UnaryOp::minv: return minv_op{}(a);
        case UnaryOp::abs: return abs_op{}(a);
        case UnaryOp::lnot: return lnot_op{}(a);
        case UnaryOp::one: return one_op{}(a);
    }
    return a;
}

// A semiring known at run time, with the interface of semiring<> (instance calls).
struct RuntimeSemiring {
    SemiringCode code;
    template <class T> HYBLA_HD T zero() const { return monoid_identity<T>(code.add); }
    template <class T> HYBLA_HD T add(T a, T b) const { return apply_monoid(code.add, a, b); }
    template <class T> HYBLA_HD T multiply(T a, T b) const { return apply_binary(code.multiply, a, b); }
};

// plus_times with the operators known at compile time (the fast paths of float and double).
struct PlusTimes {
    template <class T> HYBLA_HD T zero() const { return T(0); }
    template <class T> HYBLA_HD T add(T a, T b) const { return a + b; }
    template <class T> HYBLA_HD T multiply(T a, T b) const { return a * b; }
};

}  // namespace hybla::cuda
