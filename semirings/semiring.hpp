// semiring<AddMonoid, MultiplyOp>: how mxm/mxv combine entries. Kernels are templates on it, so a
// user-defined semiring is compiled in the user's translation unit:
//
//   struct plus_min_scaled { template <class T> HYBLA_HD constexpr T operator()(T a, T b) const { return a < 2*b ? a : 2*b; } };
//   using my_semiring = hybla::semiring<hybla::plus_monoid, plus_min_scaled>;
#pragma once
#include "semirings/binary_ops.hpp"
#include "semirings/monoids.hpp"
#include "semirings/unary_ops.hpp"

namespace hybla {

template <class AddMonoid, class MultiplyOp>
struct semiring {
    using add_monoid = AddMonoid;
    using multiply_op = MultiplyOp;
    template <class T> HYBLA_HD static constexpr T zero() { return AddMonoid::template identity<T>(); }
    template <class T> HYBLA_HD static constexpr T add(T a, T b) { return AddMonoid{}(a, b); }
    template <class T> HYBLA_HD static constexpr T multiply(T a, T b) { return MultiplyOp{}(a, b); }
    template <class T> HYBLA_HD static constexpr bool is_terminal(T a) { return AddMonoid::is_terminal(a); }
};

using plus_times = semiring<plus_monoid, times_op>;
using min_plus = semiring<min_monoid, plus_op>;
using max_plus = semiring<max_monoid, plus_op>;
using max_times = semiring<max_monoid, times_op>;
using min_times = semiring<min_monoid, times_op>;
using max_min = semiring<max_monoid, min_op>;
using min_max = semiring<min_monoid, max_op>;
using lor_land = semiring<lor_monoid, land_op>;
using land_lor = semiring<land_monoid, lor_op>;
using lxor_land = semiring<lxor_monoid, land_op>;
using plus_pair = semiring<plus_monoid, pair_op>;
using plus_first = semiring<plus_monoid, first_op>;
using plus_second = semiring<plus_monoid, second_op>;
using plus_min = semiring<plus_monoid, min_op>;
using min_first = semiring<min_monoid, first_op>;
using min_second = semiring<min_monoid, second_op>;
using max_first = semiring<max_monoid, first_op>;
using max_second = semiring<max_monoid, second_op>;
using any_pair = semiring<any_monoid, pair_op>;
using any_first = semiring<any_monoid, first_op>;
using any_second = semiring<any_monoid, second_op>;

}  // namespace hybla
