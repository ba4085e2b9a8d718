// Binary ops, unary ops, monoids and the named semirings, checked value by value against expressions
// written independently here, for int32, int64, uint8, float, double and bool; plus a user-defined semiring
// used in mxm against the brute-force reference.
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "reference.hpp"

using namespace hybla;
using ref::Index;

namespace {

template <class T> using lim = std::numeric_limits<T>;

template <class T> std::string type_name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
    else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
    else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else return "double";
}

// Sample operand values: small ones, zero, negative ones (signed types) and the extremes.
template <class T> std::vector<T> samples() {
    if constexpr (std::is_same_v<T, bool>) return {false, true};
    else if constexpr (std::is_unsigned_v<T>) return {0, 1, 2, 3, 7, 100, 200, lim<T>::max()};
    else if constexpr (std::is_integral_v<T>) return {0, 1, 2, 3, 7, -1, -2, -7, 100, lim<T>::max(), lim<T>::min()};
    else return {T(0), T(1), T(2), T(0.5), T(-1), T(-2.25), T(7), T(-7), T(1e6), lim<T>::infinity(), -lim<T>::infinity()};
}
// Values where the operations are exact (no overflow, no rounding): for algebraic laws.
template <class T> std::vector<T> small_samples() {
    if constexpr (std::is_same_v<T, bool>) return {false, true};
    else if constexpr (std::is_unsigned_v<T>) return {0, 1, 2, 3, 5, 9};
    else return {T(0), T(1), T(2), T(3), T(-1), T(-2), T(-5), T(9)};
}

template <class T> bool same(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
        return x == y;
    } else {
        return x == y;
    }
}

#define CHECK_VALUE(got, want)                                                                    \
    do {                                                                                          \
        auto _g = (got);                                                                          \
        auto _w = (want);                                                                         \
        INFO(type_name<T>() << " " #got " with a=" << +a << " b=" << +b << ": got " << +_g << ", expected " \
                            << +_w);                                                              \
        CHECK(same<T>(_g, _w));                                                                   \
    } while (0)

// Integer division with SuiteSparse's rule for zero divisors, written out independently.
template <class T> T expected_div(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) return a;
    else if constexpr (std::is_integral_v<T>) {
        if (b == 0) return a == 0 ? T(0) : a > 0 ? lim<T>::max() : lim<T>::min();
        if constexpr (std::is_signed_v<T>)
            if (b == -1) return a == lim<T>::min() ? lim<T>::min() : T(-a);  // wraps, does not trap
        return T(a / b);
    } else return a / b;
}

template <class T> void check_binary_ops() {
    for (T a : samples<T>())
        for (T b : samples<T>()) {
            CHECK_VALUE(first_op{}(a, b), a);
            CHECK_VALUE(second_op{}(a, b), b);
            CHECK_VALUE(pair_op{}(a, b), T(1));
            if constexpr (std::is_same_v<T, bool>) {
                CHECK_VALUE(plus_op{}(a, b), bool(a || b));
                CHECK_VALUE(minus_op{}(a, b), bool(a != b));
                CHECK_VALUE(times_op{}(a, b), bool(a && b));
            } else if constexpr (std::is_integral_v<T>) {
                // Wrap-around arithmetic, computed in unsigned to stay defined.
                // uint8 wraps; for signed types only operands without overflow (overflow is undefined).
                using U = std::make_unsigned_t<T>;
                const bool no_overflow = std::abs(double(a)) < 1e4 && std::abs(double(b)) < 1e4;
                if (std::is_unsigned_v<T> || no_overflow) {
                    CHECK_VALUE(plus_op{}(a, b), T(U(U(a) + U(b))));
                    CHECK_VALUE(minus_op{}(a, b), T(U(U(a) - U(b))));
                    CHECK_VALUE(times_op{}(a, b), T(U(U(a) * U(b))));
                }
            } else {
                CHECK_VALUE(plus_op{}(a, b), T(a + b));
                CHECK_VALUE(minus_op{}(a, b), T(a - b));
                CHECK_VALUE(times_op{}(a, b), T(a * b));
            }
            // min / -1 has its own test case below (it is undefined behaviour in the current div_op, which
            // would abort a sanitizer build here and hide the other checks).
            bool min_by_minus_one = false;
            if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) min_by_minus_one = a == lim<T>::min() && b == T(-1);
            if (!min_by_minus_one) CHECK_VALUE(div_op{}(a, b), expected_div(a, b));
            CHECK_VALUE(min_op{}(a, b), a < b ? a : b);
            CHECK_VALUE(max_op{}(a, b), a < b ? b : a);
            CHECK_VALUE(eq_op{}(a, b), T(a == b ? 1 : 0));
            CHECK_VALUE(ne_op{}(a, b), T(a != b ? 1 : 0));
            CHECK_VALUE(lt_op{}(a, b), T(a < b ? 1 : 0));
            CHECK_VALUE(le_op{}(a, b), T(a <= b ? 1 : 0));
            CHECK_VALUE(gt_op{}(a, b), T(a > b ? 1 : 0));
            CHECK_VALUE(ge_op{}(a, b), T(a >= b ? 1 : 0));
            const bool x = a != T(0), y = b != T(0);
            CHECK_VALUE(lor_op{}(a, b), T((x || y) ? 1 : 0));
            CHECK_VALUE(land_op{}(a, b), T((x && y) ? 1 : 0));
            CHECK_VALUE(lxor_op{}(a, b), T((x != y) ? 1 : 0));
            if constexpr (std::is_same_v<T, bool>) CHECK_VALUE(absdiff_op{}(a, b), T(a != b));
            else if constexpr (std::is_integral_v<T>) {
                // The exact |a - b|, then as T (modulo 2^bits where it does not fit a signed T).
                const __int128 d = __int128(a) - __int128(b);
                CHECK_VALUE(absdiff_op{}(a, b), T(std::make_unsigned_t<T>(d < 0 ? -d : d)));
            } else CHECK_VALUE(absdiff_op{}(a, b), std::isnan(a) || std::isnan(b) ? a - b : std::abs(a - b));
        }
}

template <class T> void check_unary_ops() {
    const T b = T(0);  // for CHECK_VALUE's message
    for (T a : samples<T>()) {
        CHECK_VALUE(identity_op{}(a), a);
        if constexpr (std::is_same_v<T, bool>) {
            CHECK_VALUE(ainv_op{}(a), a);
            CHECK_VALUE(abs_op{}(a), a);
            CHECK_VALUE(minv_op{}(a), true);  // 1/x on bool is div's first operand: true
        } else if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            if (std::is_unsigned_v<T> || a != lim<T>::min()) CHECK_VALUE(ainv_op{}(a), T(U(U(0) - U(a))));
            if (std::is_unsigned_v<T> || a != lim<T>::min()) CHECK_VALUE(abs_op{}(a), a < T(0) ? T(-a) : a);
            CHECK_VALUE(minv_op{}(a), expected_div(T(1), a));
        } else {
            CHECK_VALUE(ainv_op{}(a), T(-a));
            CHECK_VALUE(abs_op{}(a), T(std::fabs(a)));
            CHECK_VALUE(minv_op{}(a), T(T(1) / a));
        }
        CHECK_VALUE(lnot_op{}(a), T(a == T(0) ? 1 : 0));
        CHECK_VALUE(one_op{}(a), T(1));
    }
}

// Identity, terminal value, associativity and commutativity of a monoid on the given values.
template <class T, class Mon>
void check_monoid(const char* name, const std::vector<T>& vals, const std::vector<T>& terminals,
                  bool commutative = true) {
    INFO(type_name<T>() << " " << name);
    const Mon mon{};
    const T id = Mon::template identity<T>();
    for (T x : vals) {
        INFO("x = " << +x << ", identity = " << +id);
        CHECK(same<T>(mon(id, x), x));
        CHECK(same<T>(mon(x, id), x));
        CHECK(Mon::template is_terminal<T>(x) == (std::find(terminals.begin(), terminals.end(), x) != terminals.end()));
        if (Mon::template is_terminal<T>(x))
            for (T y : vals) {
                INFO("terminal " << +x << " with " << +y);
                CHECK(same<T>(mon(x, y), x));
                CHECK(same<T>(mon(y, x), x));
            }
        for (T y : vals) {
            if (commutative) CHECK(same<T>(mon(x, y), mon(y, x)));
            for (T z : vals) {
                INFO("associativity on " << +x << ", " << +y << ", " << +z);
                CHECK(same<T>(mon(mon(x, y), z), mon(x, mon(y, z))));
            }
        }
    }
}

template <class T> void check_monoids() {
    std::vector<T> vals = small_samples<T>();
    std::vector<T> wide = samples<T>();
    check_monoid<T, plus_monoid>("plus", vals, {});
    if constexpr (std::is_integral_v<T>) check_monoid<T, times_monoid>("times", vals, {T(0)});
    else check_monoid<T, times_monoid>("times", vals, {});
    std::vector<T> with_ends = wide;
    if constexpr (!std::is_floating_point_v<T>) {
        check_monoid<T, min_monoid>("min", with_ends, {lim<T>::lowest()});
        check_monoid<T, max_monoid>("max", with_ends, {lim<T>::max()});
        if constexpr (!std::is_same_v<T, bool>) {
            CHECK(min_monoid::identity<T>() == lim<T>::max());
            CHECK(max_monoid::identity<T>() == lim<T>::lowest());
        } else {
            CHECK(min_monoid::identity<bool>() == true);
            CHECK(max_monoid::identity<bool>() == false);
        }
    } else {
        with_ends.push_back(lim<T>::max());
        with_ends.push_back(lim<T>::lowest());
        check_monoid<T, min_monoid>("min", with_ends, {-lim<T>::infinity()});
        check_monoid<T, max_monoid>("max", with_ends, {lim<T>::infinity()});
        CHECK(min_monoid::identity<T>() == lim<T>::infinity());
        CHECK(max_monoid::identity<T>() == -lim<T>::infinity());
    }
    // The logical monoids are monoids over {0, 1}.
    std::vector<T> bits{T(0), T(1)};
    check_monoid<T, lor_monoid>("lor", bits, {T(1)});
    check_monoid<T, land_monoid>("land", bits, {T(0)});
    check_monoid<T, lxor_monoid>("lxor", bits, {});
    // Logical ops on other values treat any nonzero as true.
    if constexpr (!std::is_same_v<T, bool>) {
        CHECK(lor_monoid::is_terminal<T>(T(3)));
        CHECK(lor_op{}(T(0), T(3)) == T(1));
        CHECK(land_op{}(T(2), T(3)) == T(1));
        CHECK(lxor_op{}(T(2), T(3)) == T(0));
    }
    // any: every value is terminal and the result is one of the operands.
    for (T x : vals)
        for (T y : vals) {
            CHECK(any_monoid::is_terminal<T>(x));
            T r = any_monoid{}(x, y);
            CHECK((same<T>(r, x) || same<T>(r, y)));
        }
}

// The named semirings: zero is the add monoid's identity, add and multiply are the named ops.
template <class T, class Sr, class Add, class Mul>
void check_semiring(const char* name, bool zero_annihilates) {
    INFO(type_name<T>() << " " << name);
    static_assert(std::is_same_v<typename Sr::add_monoid, Add>);
    static_assert(std::is_same_v<typename Sr::multiply_op, Mul>);
    CHECK(same<T>(Sr::template zero<T>(), Add::template identity<T>()));
    for (T a : small_samples<T>()) {
        CHECK(Sr::template is_terminal<T>(a) == Add::template is_terminal<T>(a));
        for (T b : small_samples<T>()) {
            INFO(+a << ", " << +b);
            CHECK(same<T>(Sr::template add<T>(a, b), Add{}(a, b)));
            CHECK(same<T>(Sr::template multiply<T>(a, b), Mul{}(a, b)));
        }
        if (zero_annihilates) {
            INFO("zero annihilates " << +a);
            CHECK(same<T>(Sr::template multiply<T>(Sr::template zero<T>(), a), Sr::template zero<T>()));
            CHECK(same<T>(Sr::template multiply<T>(a, Sr::template zero<T>()), Sr::template zero<T>()));
        }
    }
}

template <class T> void check_semirings() {
    const bool fp = std::is_floating_point_v<T>;
    check_semiring<T, plus_times, plus_monoid, times_op>("plus_times", true);
    check_semiring<T, min_plus, min_monoid, plus_op>("min_plus", fp);
    check_semiring<T, max_plus, max_monoid, plus_op>("max_plus", fp);
    check_semiring<T, max_times, max_monoid, times_op>("max_times", false);
    check_semiring<T, min_times, min_monoid, times_op>("min_times", false);
    check_semiring<T, max_min, max_monoid, min_op>("max_min", true);
    check_semiring<T, min_max, min_monoid, max_op>("min_max", true);
    check_semiring<T, lor_land, lor_monoid, land_op>("lor_land", true);
    check_semiring<T, land_lor, land_monoid, lor_op>("land_lor", true);
    check_semiring<T, lxor_land, lxor_monoid, land_op>("lxor_land", true);
    check_semiring<T, plus_pair, plus_monoid, pair_op>("plus_pair", false);
    check_semiring<T, plus_first, plus_monoid, first_op>("plus_first", false);
    check_semiring<T, plus_second, plus_monoid, second_op>("plus_second", false);
    check_semiring<T, plus_min, plus_monoid, min_op>("plus_min", false);
    check_semiring<T, min_first, min_monoid, first_op>("min_first", false);
    check_semiring<T, min_second, min_monoid, second_op>("min_second", false);
    check_semiring<T, max_first, max_monoid, first_op>("max_first", false);
    check_semiring<T, max_second, max_monoid, second_op>("max_second", false);
    check_semiring<T, any_pair, any_monoid, pair_op>("any_pair", false);
    check_semiring<T, any_first, any_monoid, first_op>("any_first", false);
    check_semiring<T, any_second, any_monoid, second_op>("any_second", false);
}

template <class T> void check_all_for_type() {
    check_binary_ops<T>();
    check_unary_ops<T>();
    check_monoids<T>();
    check_semirings<T>();
}

// Whether a constexpr call can be evaluated at compile time (undefined behaviour makes it not a constant).
template <auto V> struct Constant {};
template <class F> constexpr bool is_constant_expression() { return requires { typename Constant<F{}()>; }; }

}  // namespace

TEST_CASE("binary ops, unary ops, monoids and semirings: int32", "[semirings]") { check_all_for_type<std::int32_t>(); }
TEST_CASE("binary ops, unary ops, monoids and semirings: int64", "[semirings]") { check_all_for_type<std::int64_t>(); }
TEST_CASE("binary ops, unary ops, monoids and semirings: uint8", "[semirings]") { check_all_for_type<std::uint8_t>(); }
TEST_CASE("binary ops, unary ops, monoids and semirings: float", "[semirings]") { check_all_for_type<float>(); }
TEST_CASE("binary ops, unary ops, monoids and semirings: double", "[semirings]") { check_all_for_type<double>(); }
TEST_CASE("binary ops, unary ops, monoids and semirings: bool", "[semirings]") { check_all_for_type<bool>(); }

TEST_CASE("integer division by zero does not trap", "[semirings]") {
    CHECK(div_op{}(7, 0) == INT_MAX);
    CHECK(div_op{}(-7, 0) == INT_MIN);
    CHECK(div_op{}(0, 0) == 0);
    CHECK(div_op{}(std::int64_t(5), std::int64_t(0)) == lim<std::int64_t>::max());
    CHECK(div_op{}(std::int64_t(-5), std::int64_t(0)) == lim<std::int64_t>::min());
    CHECK(div_op{}(std::uint8_t(5), std::uint8_t(0)) == 255);
    CHECK(div_op{}(std::uint8_t(0), std::uint8_t(0)) == 0);
    CHECK(div_op{}(-7, 2) == -3);  // truncation toward zero
    CHECK(div_op{}(7, -2) == -3);
    CHECK(div_op{}(std::int8_t(-128), std::int8_t(-1)) == -128);
    CHECK(minv_op{}(0) == INT_MAX);
    CHECK(minv_op{}(-1) == -1);
    CHECK(minv_op{}(2) == 0);
    // Floating point follows IEEE.
    CHECK(div_op{}(1.0, 0.0) == lim<double>::infinity());
    CHECK(div_op{}(-1.0f, 0.0f) == -lim<float>::infinity());
    CHECK(std::isnan(div_op{}(0.0, 0.0)));
    CHECK(minv_op{}(0.0) == lim<double>::infinity());
}

// min / -1 must neither trap nor be undefined behaviour (the div_op comment says it avoids the trap); the
// expected result is min (two's complement wrap of -min). Evaluating the call at compile time
// fails exactly when it has undefined behaviour, so this detects it without executing it.
namespace {
struct div_int_min_by_minus_one {
    constexpr int operator()() const { return div_op{}(INT_MIN, -1); }
};
struct div_int64_min_by_minus_one {
    constexpr std::int64_t operator()() const { return div_op{}(lim<std::int64_t>::min(), std::int64_t(-1)); }
};
struct div_seven_by_minus_one {
    constexpr int operator()() const { return div_op{}(7, -1); }
};
}  // namespace
TEST_CASE("integer division of the minimum by -1 is defined", "[semirings]") {
    STATIC_REQUIRE(is_constant_expression<div_seven_by_minus_one>());
    STATIC_REQUIRE(div_seven_by_minus_one{}() == -7);
    CHECK(is_constant_expression<div_int_min_by_minus_one>());
    CHECK(is_constant_expression<div_int64_min_by_minus_one>());
}

TEST_CASE("ops, monoids and semirings are constexpr", "[semirings][cpu-only]") {
    static_assert(plus_op{}(2, 3) == 5);
    static_assert(times_op{}(2.5, 2.0) == 5.0);
    static_assert(minus_op{}(true, true) == false);
    static_assert(div_op{}(7, 0) == INT_MAX);
    static_assert(div_op{}(-7, 0) == INT_MIN);
    static_assert(div_op{}(std::uint8_t(9), std::uint8_t(0)) == 255);
    static_assert(min_op{}(3, -4) == -4 && max_op{}(3, -4) == 3);
    static_assert(gt_op{}(3, 2) == 1 && ge_op{}(2, 3) == 0 && lt_op{}(2.0, 3.0) == 1.0);
    static_assert(lxor_op{}(5, 0) == 1);
    static_assert(ainv_op{}(4) == -4 && abs_op{}(-4) == 4 && lnot_op{}(0) == 1 && one_op{}(9) == 1);
    static_assert(minv_op{}(4.0) == 0.25);
    static_assert(plus_monoid::identity<int>() == 0 && times_monoid::identity<double>() == 1.0);
    static_assert(min_monoid::identity<float>() == lim<float>::infinity());
    static_assert(max_monoid::identity<std::int64_t>() == lim<std::int64_t>::min());
    static_assert(times_monoid::is_terminal(0) && !times_monoid::is_terminal(0.0));
    static_assert(plus_times::zero<int>() == 0 && plus_times::add(2, 3) == 5 && plus_times::multiply(2, 3) == 6);
    static_assert(min_plus::zero<double>() == lim<double>::infinity() && min_plus::add(2.0, 1.0) == 1.0);
    static_assert(max_min::multiply(2, 5) == 2 && lor_land::add(false, true));
    static_assert(plus_pair::multiply(7, 9) == 1);
    static_assert(min_plus::is_terminal(-lim<double>::infinity()) && !plus_times::is_terminal(0));
    SUCCEED();
}

// A user-defined semiring in a few lines, compiled in this translation unit.
namespace {
struct scaled_min_op {  // min(a, 2b)
    template <class T> constexpr T operator()(T a, T b) const { return a < T(2 * b) ? a : T(2 * b); }
};
struct absmax_monoid : no_terminal {  // max(|a|, |b|), identity 0
    template <class T> static constexpr T identity() { return T(0); }
    template <class T> constexpr T operator()(T a, T b) const {
        T x = a < T(0) ? T(-a) : a, y = b < T(0) ? T(-b) : b;
        return x < y ? y : x;
    }
};
using absmax_scaled_min = semiring<absmax_monoid, scaled_min_op>;
static_assert(absmax_scaled_min::multiply(5, 2) == 4 && absmax_scaled_min::add(-7, 3) == 7);

// Plain struct semiring, not built from hybla::semiring: only the static interface the kernels use.
struct max_plus_plain {
    template <class T> static constexpr T zero() { return std::numeric_limits<T>::lowest(); }
    template <class T> static constexpr T add(T a, T b) { return a < b ? b : a; }
    template <class T> static constexpr T multiply(T a, T b) { return T(a + b); }
    template <class T> static constexpr bool is_terminal(T) { return false; }
};

template <class T, class Add, class Mul>
ref::Dense<T> brute_mxm(const ref::Dense<T>& a, const ref::Dense<T>& b, Add add, Mul mul) {
    ref::Dense<T> c(a.nrows, b.ncols);
    for (Index i = 0; i < a.nrows; ++i)
        for (Index j = 0; j < b.ncols; ++j)
            for (Index k = 0; k < a.ncols; ++k)
                if (a(i, k) && b(k, j)) {
                    T t = mul(*a(i, k), *b(k, j));
                    c(i, j) = c(i, j) ? add(*c(i, j), t) : t;
                }
    return c;
}
}  // namespace

TEST_CASE("a user-defined semiring in mxm matches the brute-force product", "[semirings][mxm][cpu-only]") {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            const Index k = g.uniform(0, 12);
            const double density = g.real() * 0.5;
            INFO("seed " << seed << " shape " << m << "x" << k << " * " << k << "x" << n << " density " << density);
            auto a = g.matrix<int>(m, k, density, seed % 2 == 0);
            auto b = g.matrix<int>(k, n, density);
            auto want = brute_mxm(a, b, absmax_monoid{}, scaled_min_op{});
            Matrix<int> c(m, n);
            mxm(c, no_mask, no_accum, absmax_scaled_min{}, ref::to_matrix(a), ref::to_matrix(b));
            REF_REQUIRE_SAME(ref::to_dense(c), want);

            // Same with a mask and an accumulator: C<M> += A*B.
            auto c0 = g.matrix<int>(m, n, 0.3);
            auto mask = g.matrix<int>(m, n, 0.5);
            Matrix<int> c2 = ref::to_matrix(c0);
            Matrix<int> mk = ref::to_matrix(mask);
            mxm(c2, mk, plus_op{}, absmax_scaled_min{}, ref::to_matrix(a), ref::to_matrix(b));
            REF_REQUIRE_SAME(ref::to_dense(c2), ref::write_back(c0, want, &mask, plus_op{}, Descriptor{}));

            auto ad = g.matrix<double>(m, k, density);
            auto bd = g.matrix<double>(k, n, density);
            auto wantd = brute_mxm(ad, bd, [](double x, double y) { return x < y ? y : x; },
                                   [](double x, double y) { return x + y; });
            Matrix<double> cd(m, n);
            mxm(cd, no_mask, no_accum, max_plus_plain{}, ref::to_matrix(ad), ref::to_matrix(bd));
            REF_REQUIRE_SAME(ref::to_dense(cd), wantd);
        }
    }
}

TEST_CASE("absdiff_op gives +0 for equal operands, signed zeros included", "[semirings]") {
    CHECK_FALSE(std::signbit(absdiff_op{}(-0.0, 0.0)));
    CHECK_FALSE(std::signbit(absdiff_op{}(0.0f, -0.0f)));
    CHECK_FALSE(std::signbit(absdiff_op{}(-0.0, -0.0)));
    CHECK(absdiff_op{}(-1.5, 2.0) == 3.5);
    CHECK(absdiff_op{}(std::uint8_t(3), std::uint8_t(250)) == 247);
    static_assert(absdiff_op{}(4, 9) == 5);
}
