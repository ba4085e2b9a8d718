// Kernel-level check of the structural CUDA operations (build, transpose, casts, vector <-> column
// conversions, element-wise union/intersection, write_back) against the CPU backend on random inputs:
// empty, 1x1, odd and skewed shapes (one row of degree ~10^5), densities 0 .. 0.5. One line per case,
// "PASS name" or "FAIL name: first difference"; exit status 1 on any failure.
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/cpu/build.hpp"
#include "engine/cpu/ewise.hpp"
#include "engine/cpu/mask.hpp"
#include "engine/cpu/vector_view.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/cuda/backend.hpp"
#include "engine/dense_matrix.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

using namespace hybla;
using cuda::BinaryOp;

namespace {

int failures = 0;
int passes = 0;

void run_case(const std::string& name, const std::function<std::string()>& body) {
    std::string err;
    try {
        err = body();
    } catch (const std::exception& e) {
        err = std::string("exception: ") + e.what();
    }
    if (err.empty()) {
        ++passes;
        std::printf("PASS %s\n", name.c_str());
    } else {
        ++failures;
        std::printf("FAIL %s: %s\n", name.c_str(), err.c_str());
    }
    std::fflush(stdout);
}

template <class T> const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
    else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
    else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
    else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
    else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else return "double";
}
template <class T> std::string str(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::to_string(double(v));
    else if constexpr (std::is_signed_v<T>) return std::to_string(std::int64_t(v));
    else return std::to_string(std::uint64_t(v));
}
template <class T> bool same_value(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return a == b || (std::isnan(a) && std::isnan(b));
    else return a == b;
}

const char* op_name(BinaryOp op) {
    static const char* names[] = {"first", "second", "pair", "plus", "minus", "times", "div", "min", "max",
                                  "eq",    "ne",     "lt",   "le",   "gt",    "ge",    "lor", "land", "lxor"};
    return names[int(op)];
}
// The CPU side of each comparison takes the operator as a run-time code too: apply_binary maps the code to the
// same operator object the front end would pass, and one CPU instantiation per type (rather than one per
// operator) keeps this file's compile time down.
struct CodeOp {
    BinaryOp code;
    template <class T> T operator()(T a, T b) const { return cuda::apply_binary<T>(code, a, b); }
};
template <class F> auto with_op(BinaryOp op, F&& f) { return f(CodeOp{op}); }

// GPU result (any context) against the CPU one: shape, valid CSR, identical arrays.
template <class T>
std::string same_matrix(const Matrix<T>& g, const Matrix<T>& c) {
    if (!g.context().is_cuda()) return "the result does not live on the GPU";
    if (g.nrows() != c.nrows() || g.ncols() != c.ncols())
        return "shape " + detail::shape(g.nrows(), g.ncols()) + " vs " + detail::shape(c.nrows(), c.ncols());
    if (g.nvals() != c.nvals()) return "nvals " + std::to_string(g.nvals()) + " vs " + std::to_string(c.nvals());
    Matrix<T> h = g.to(Context::cpu());
    auto csr = std::move(h).export_csr();
    if (csr.offsets.size() != g.nrows() + 1) return "offsets array of size " + std::to_string(csr.offsets.size());
    try {
        Matrix<T>::validate_csr(g.nrows(), g.ncols(), csr.offsets, csr.indices, csr.values, "gpu result");
    } catch (const std::exception& e) {
        return std::string("invalid CSR: ") + e.what();
    }
    auto off = c.storage_offsets();
    auto ci = c.storage_indices();
    auto cv = c.storage_values();
    for (Index i = 0; i <= c.nrows(); ++i)
        if (csr.offsets[i] != off[i])
            return "row offset " + std::to_string(i) + ": " + std::to_string(csr.offsets[i]) + " vs " +
                   std::to_string(off[i]);
    for (Index i = 0; i < c.nrows(); ++i)
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            if (csr.indices[p] != ci[p])
                return "entry " + std::to_string(p) + " of row " + std::to_string(i) + ": column " +
                       std::to_string(csr.indices[p]) + " vs " + std::to_string(ci[p]);
            if (!same_value(csr.values[p], cv[p]))
                return "value at (" + std::to_string(i) + ", " + std::to_string(ci[p]) + "): " + str(csr.values[p]) +
                       " vs " + str(cv[p]);
        }
    return {};
}

template <class T>
std::string same_vector(const Vector<T>& g, const Vector<T>& c, bool check_form) {
    if (!g.context().is_cuda()) return "the result does not live on the GPU";
    if (g.size() != c.size()) return "size " + std::to_string(g.size()) + " vs " + std::to_string(c.size());
    if (g.nvals() != c.nvals()) return "nvals " + std::to_string(g.nvals()) + " vs " + std::to_string(c.nvals());
    if (check_form && g.is_dense() != c.is_dense())
        return std::string("storage ") + (g.is_dense() ? "dense" : "sparse") + " vs " + (c.is_dense() ? "dense" : "sparse");
    Vector<T> h = g.to(Context::cpu());
    if (h.is_dense()) {
        if (h.storage_values().size() != h.size() || h.storage_bitmap().size() != h.size()) return "dense arrays of the wrong size";
        Index cnt = 0;
        for (auto b : h.storage_bitmap()) {
            if (b > 1) return "bitmap byte other than 0/1";
            cnt += b;
        }
        if (cnt != h.nvals()) return "bitmap counts " + std::to_string(cnt) + " but nvals is " + std::to_string(h.nvals());
    } else {
        if (h.storage_indices().size() != h.nvals() || h.storage_values().size() != h.nvals()) return "sparse arrays of the wrong size";
        for (std::size_t k = 1; k < h.storage_indices().size(); ++k)
            if (h.storage_indices()[k] <= h.storage_indices()[k - 1]) return "sparse indices not increasing";
    }
    std::vector<Index> gi, ci;
    std::vector<T> gv, cv;
    h.extract_tuples(gi, gv);
    c.extract_tuples(ci, cv);
    for (std::size_t k = 0; k < gi.size(); ++k) {
        if (gi[k] != ci[k]) return "entry " + std::to_string(k) + ": index " + std::to_string(gi[k]) + " vs " + std::to_string(ci[k]);
        if (!same_value(gv[k], cv[k]))
            return "value at " + std::to_string(gi[k]) + ": " + str(gv[k]) + " vs " + str(cv[k]);
    }
    return {};
}

// Small values so that every operator is exact on every type; floating types get fractions and negatives.
template <class T>
T random_value(std::mt19937_64& rng) {
    if constexpr (std::is_same_v<T, bool>) return rng() % 2;
    else if constexpr (std::is_floating_point_v<T>) return T(int(rng() % 41) - 20) / T(4);
    else if constexpr (std::is_signed_v<T>) return T(int(rng() % 21) - 10);
    else return T(rng() % 12);
}

// std::vector<bool> has no data(): values travel in host Arrays.
template <class T>
Array<T> to_array(const std::vector<T>& v) {
    Array<T> a(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) a[k] = v[k];
    return a;
}
template <class T> std::span<const T> cspan(const Array<T>& a) { return a.span(); }

struct Shape {
    const char* name;
    Index m, n;
    double density;
    Index skew = 0;  // degree of one heavy row (0: none)
};
const std::vector<Shape>& shapes() {
    static const std::vector<Shape> s = {
        {"0x0", 0, 0, 0.0},          {"0x7", 0, 7, 0.0},         {"5x0", 5, 0, 0.0},
        {"1x1 empty", 1, 1, 0.0},    {"1x1 full", 1, 1, 1.0},    {"13x29 d0.1", 13, 29, 0.1},
        {"64x64 d0.5", 64, 64, 0.5}, {"1000x1 d0.3", 1000, 1, 0.3}, {"1x3000 d0.2", 1, 3000, 0.2},
        {"777x555 d0.01", 777, 555, 0.01},
        {"skewed 3000x150000", 3000, 150000, 0.00005, 100000},
    };
    return s;
}

template <class T>
Matrix<T> random_matrix(const Shape& s, std::mt19937_64& rng) {
    std::vector<Index> r, c;
    std::vector<T> v;
    if (s.m > 0 && s.n > 0) {
        auto cnt = Index(double(s.m) * double(s.n) * s.density);
        for (Index k = 0; k < cnt; ++k) {
            r.push_back(rng() % s.m);
            c.push_back(rng() % s.n);
            v.push_back(random_value<T>(rng));
        }
        if (s.skew) {
            Index row = s.m / 2, start = rng() % s.n;
            for (Index k = 0; k < s.skew && k < s.n; ++k) {
                r.push_back(row);
                c.push_back((start + k * 7) % s.n);
                v.push_back(random_value<T>(rng));
            }
        }
    }
    Array<T> va = to_array(v);
    return cpu::build_matrix<T>(s.m, s.n, r, c, cspan(va), second_op{}, false);
}

Context gpu() { return Context::cuda(); }

// ---------------------------------------------------------------- build

template <class T>
void check_build(std::mt19937_64& rng) {
    const BinaryOp ops[] = {BinaryOp::plus, BinaryOp::minus, BinaryOp::first, BinaryOp::second,
                            BinaryOp::min,  BinaryOp::div,   BinaryOp::lt,    BinaryOp::pair};
    struct B { const char* name; Index m, n, tuples, key_range_rows, key_range_cols; };
    const B cases[] = {{"0x0 none", 0, 0, 0, 0, 0},         {"1x1 one", 1, 1, 1, 1, 1},
                       {"1x1 dups", 1, 1, 50, 1, 1},        {"17x1 dups", 17, 1, 200, 17, 1},
                       {"31x45 dups", 31, 45, 2000, 31, 45}, {"2^20 keys", 1 << 20, 1 << 12, 300000, 1 << 20, 1 << 12},
                       {"big dims", Index(1) << 24, Index(1) << 32, 20000, Index(1) << 24, Index(1) << 32},
                       {"skewed", 100, 200000, 300000, 1, 200000}};
    for (const B& b : cases) {
        std::vector<Index> r(b.tuples), c(b.tuples);
        Array<T> va(b.tuples);
        auto v = cspan(va);
        for (Index k = 0; k < b.tuples; ++k) {
            r[k] = rng() % b.key_range_rows;
            c[k] = rng() % b.key_range_cols;
            va[k] = random_value<T>(rng);
        }
        if (std::string(b.name) == "skewed")
            for (Index k = 0; k < b.tuples; k += 3) r[k] = 50;
        for (BinaryOp op : ops) {
            run_case(std::string("build ") + type_name<T>() + " " + b.name + " dup=" + op_name(op), [&] {
                Matrix<T> g = cuda::build_coded<T>(b.m, b.n, r, c, v, op, false, gpu());
                Matrix<T> h = with_op(op, [&](auto o) { return cpu::build_matrix<T>(b.m, b.n, r, c, v, o, false); });
                return same_matrix(g, h);
            });
        }
    }
    // Errors: the CPU's messages.
    auto message = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const std::exception& e) {
            return e.what();
        }
        return "no exception";
    };
    run_case(std::string("build ") + type_name<T>() + " errors", [&]() -> std::string {
        std::vector<Index> r = {3, 1, 4, 1, 5}, c = {0, 2, 2, 2, 1};
        Array<T> va(5, T(1));
        auto v = cspan(va);
        std::string g = message([&] { cuda::build_coded<T>(6, 3, r, c, v, BinaryOp::plus, true, gpu()); });
        std::string h = message([&] { cpu::build_matrix<T>(6, 3, r, c, v, first_op{}, true); });
        if (g != h || g.find("duplicate entry (1, 2)") == std::string::npos) return "duplicate: '" + g + "' vs '" + h + "'";
        r[2] = 6;
        g = message([&] { cuda::build_coded<T>(6, 3, r, c, v, BinaryOp::plus, false, gpu()); });
        h = message([&] { cpu::build_matrix<T>(6, 3, r, c, v, first_op{}, false); });
        if (g != h) return "range: '" + g + "' vs '" + h + "'";
        std::vector<Index> c2 = {0, 1};
        g = message([&] { cuda::build_coded<T>(6, 3, r, c2, v, BinaryOp::plus, false, gpu()); });
        h = message([&] { cpu::build_matrix<T>(6, 3, r, c2, v, first_op{}, false); });
        if (g != h) return "lengths: '" + g + "' vs '" + h + "'";
        // No duplicate: dup_is_error must not throw.
        std::vector<Index> r3 = {2, 0, 1}, c3 = {1, 1, 1};
        Array<T> va3(3, T(1));
        auto v3 = cspan(va3);
        Matrix<T> m = cuda::build_coded<T>(3, 2, r3, c3, v3, BinaryOp::plus, true, gpu());
        return same_matrix(m, cpu::build_matrix<T>(3, 2, r3, c3, v3, first_op{}, true));
    });
}

// ---------------------------------------------------------------- transpose, casts

template <class T>
void check_transpose(std::mt19937_64& rng) {
    for (const Shape& s : shapes()) {
        Matrix<T> a = random_matrix<T>(s, rng);
        run_case(std::string("transpose ") + type_name<T>() + " " + s.name,
                 [&] { return same_matrix(cuda::transpose(a.to(gpu())), cpu::transpose(a)); });
    }
}

template <class T>
Vector<T> random_vector(Index n, double density, bool dense, std::mt19937_64& rng) {
    std::vector<Index> idx;
    std::vector<T> v;
    for (Index i = 0; i < n; ++i)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < density) {
            idx.push_back(i);
            v.push_back(random_value<T>(rng));
        }
    Array<T> va = to_array(v);
    Vector<T> x = Vector<T>::from_tuples(n, std::span<const Index>(idx), cspan(va), plus_op{}, Context::cpu());
    if (dense) x.to_dense();
    return x;
}

template <class TC, class TA>
Vector<TC> cpu_cast(const Vector<TA>& v) {
    std::vector<Index> idx;
    std::vector<TA> a;
    v.extract_tuples(idx, a);
    Array<TC> c(a.size());
    for (std::size_t k = 0; k < a.size(); ++k) c[k] = TC(a[k]);
    Vector<TC> out = Vector<TC>::from_tuples(v.size(), std::span<const Index>(idx), cspan(c), plus_op{}, Context::cpu());
    if (v.is_dense()) out.to_dense();
    return out;
}

template <class TA>
TA non_negative(TA x) {
    if constexpr (std::is_same_v<TA, bool> || std::is_unsigned_v<TA>) return x;
    else return x < TA(0) ? TA(-x) : x;
}

template <class TC, class TA>
void check_cast_pair(std::mt19937_64& rng) {
    // Casting a negative value to an unsigned type is undefined for floats: sources stay non-negative.
    Shape s{"40x50 d0.2", 40, 50, 0.2};
    auto csr = random_matrix<TA>(s, rng).export_csr();
    Array<TC> expected(csr.values.size());
    for (std::size_t k = 0; k < csr.values.size(); ++k) {
        csr.values[k] = non_negative(csr.values[k]);
        expected[k] = TC(csr.values[k]);
    }
    Matrix<TC> h = Matrix<TC>::import_csr(csr.nrows, csr.ncols, csr.offsets, csr.indices, std::move(expected), false);
    Matrix<TA> a = Matrix<TA>::import_csr(std::move(csr), false);
    std::string pair = std::string(type_name<TA>()) + "->" + type_name<TC>();
    run_case("cast matrix " + pair, [&] { return same_matrix(cuda::cast<TC>(a.to(gpu())), h); });
    for (bool dense : {false, true}) {
        Vector<TA> v = random_vector<TA>(300, 0.3, dense, rng);
        if (v.nvals()) {
            std::vector<Index> idx;
            std::vector<TA> vals;
            v.extract_tuples(idx, vals);
            Array<TA> va = to_array(vals);
            for (auto& x : va) x = non_negative(x);
            v = Vector<TA>::from_tuples(300, std::span<const Index>(idx), cspan(va), plus_op{}, Context::cpu());
            if (dense) v.to_dense();
        }
        run_case("cast vector " + std::string(dense ? "dense " : "sparse ") + pair,
                 [&] { return same_vector(cuda::cast<TC>(v.to(gpu())), cpu_cast<TC>(v), true); });
    }
    run_case("cast dense matrix " + pair, [&]() -> std::string {
        DenseMatrix<TA> d(7, 9, TA{}, Context::cpu());
        for (Index i = 0; i < 7; ++i)
            for (Index j = 0; j < 9; ++j) d(i, j) = non_negative(random_value<TA>(rng));
        DenseMatrix<TC> g = cuda::cast<TC>(d.to(gpu())).to(Context::cpu());
        if (g.nrows() != 7 || g.ncols() != 9) return "shape";
        for (Index i = 0; i < 7; ++i)
            for (Index j = 0; j < 9; ++j)
                if (!same_value(g(i, j), TC(d(i, j))))
                    return "(" + std::to_string(i) + ", " + std::to_string(j) + "): " + str(g(i, j)) + " vs " + str(TC(d(i, j)));
        return {};
    });
}

template <class... Ts> struct Types {};
using AllTypes = Types<bool, std::uint8_t, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float, double>;
template <class TC, class... TAs> void cast_from_all(std::mt19937_64& rng, Types<TAs...>) { (check_cast_pair<TC, TAs>(rng), ...); }
template <class... TCs> void check_casts(std::mt19937_64& rng, Types<TCs...>) { (cast_from_all<TCs>(rng, AllTypes{}), ...); }

// ---------------------------------------------------------------- vectors as columns

template <class T>
void check_columns(std::mt19937_64& rng) {
    const Index sizes[] = {0, 1, 2, 100, 1000, 200000};
    const double densities[] = {0.0, 0.01, 0.0625, 0.3, 1.0};
    for (Index n : sizes)
        for (double d : densities)
            for (bool dense : {false, true}) {
                std::string tag = std::string(type_name<T>()) + " n=" + std::to_string(n) + " d=" + std::to_string(d) +
                                  (dense ? " dense" : " sparse");
                Vector<T> v = random_vector<T>(n, d, dense, rng);
                Vector<T> gv = v.to(gpu());
                run_case("as_column " + tag, [&] { return same_matrix(cuda::as_column(gv), cpu::as_column(v)); });
                run_case("from_column " + tag, [&] {
                    Matrix<T> col = cpu::as_column(v);
                    return same_vector(cuda::from_column(col.to(gpu())), cpu::from_column(col), true);
                });
                run_case("round trip " + tag, [&] {
                    return same_vector(cuda::from_column(cuda::as_column(gv)), cpu::from_column(cpu::as_column(v)), true);
                });
                run_case("densify " + tag, [&]() -> std::string {
                    Vector<T> g = cuda::densify(gv);
                    if (!g.is_dense()) return "not dense";
                    Vector<T> h = v;
                    h.to_dense();
                    return same_vector(g, h, true);
                });
            }
}

// ---------------------------------------------------------------- element-wise

template <class T>
void check_ewise(std::mt19937_64& rng) {
    const BinaryOp ops[] = {BinaryOp::plus, BinaryOp::minus, BinaryOp::first, BinaryOp::second, BinaryOp::max,
                            BinaryOp::times, BinaryOp::lt, BinaryOp::pair};
    for (const Shape& s : shapes()) {
        Matrix<T> a = random_matrix<T>(s, rng), b = random_matrix<T>(s, rng);
        Matrix<T> ga = a.to(gpu()), gb = b.to(gpu());
        Matrix<T> empty(s.m, s.n, Context::cpu());
        for (BinaryOp op : ops) {
            std::string tag = std::string(type_name<T>()) + " " + s.name + " op=" + op_name(op);
            run_case("ewise union " + tag, [&] {
                return same_matrix(cuda::ewise(ga, gb, op, true),
                                   with_op(op, [&](auto o) { return cpu::ewise_union<T>(a, b, o); }));
            });
            run_case("ewise intersection " + tag, [&] {
                return same_matrix(cuda::ewise(ga, gb, op, false),
                                   with_op(op, [&](auto o) { return cpu::ewise_intersection<T>(a, b, o); }));
            });
        }
        std::string tag = std::string(type_name<T>()) + " " + s.name;
        run_case("ewise union with itself " + tag, [&] {
            return same_matrix(cuda::ewise(ga, ga, BinaryOp::minus, true), cpu::ewise_union<T>(a, a, minus_op{}));
        });
        run_case("ewise union with empty " + tag, [&] {
            return same_matrix(cuda::ewise(empty.to(gpu()), ga, BinaryOp::plus, true), cpu::ewise_union<T>(empty, a, plus_op{}));
        });
        run_case("ewise intersection with empty " + tag, [&] {
            return same_matrix(cuda::ewise(ga, empty.to(gpu()), BinaryOp::plus, false),
                               cpu::ewise_intersection<T>(a, empty, plus_op{}));
        });
    }
}

// ---------------------------------------------------------------- write_back

enum class MaskKind { none, mask, complement };
const char* mask_name(MaskKind k) { return k == MaskKind::none ? "nomask" : k == MaskKind::mask ? "mask" : "!mask"; }

template <class T>
void check_write_back(std::mt19937_64& rng) {
    const BinaryOp* no_accum_code = nullptr;
    const BinaryOp accums[] = {BinaryOp::plus, BinaryOp::second, BinaryOp::minus};
    for (const Shape& s : shapes()) {
        Matrix<T> c = random_matrix<T>(s, rng), t = random_matrix<T>(s, rng);
        // Every value true: the GPU gets the pattern, the CPU a structural mask of the same entries.
        Matrix<bool> mask = cpu::map_values<bool>(random_matrix<bool>(s, rng), [](bool) { return true; });
        Matrix<bool> gmask = mask.to(gpu());
        for (MaskKind mk : {MaskKind::none, MaskKind::mask, MaskKind::complement})
            for (int acc = -1; acc < 3; ++acc)
                for (bool replace : {false, true}) {
                    if (mk == MaskKind::none && replace) continue;
                    std::string tag = std::string(type_name<T>()) + " " + s.name + " " + mask_name(mk) + " accum=" +
                                      (acc < 0 ? "none" : op_name(accums[acc])) + (replace ? " replace" : "");
                    run_case("write_back " + tag, [&] {
                        Descriptor d;
                        d.mask_structure = true;
                        d.mask_complement = mk == MaskKind::complement;
                        d.replace = replace;
                        cuda::MaskPattern mp{gmask.storage_offsets().data(), gmask.storage_indices().data(), d.mask_complement};
                        Matrix<T> gc = c.to(gpu());
                        cuda::write_back(gc, t.to(gpu()), mk == MaskKind::none ? nullptr : &mp,
                                         acc < 0 ? no_accum_code : &accums[acc], replace);
                        Matrix<T> hc = c;
                        auto cpu_run = [&](auto accum) {
                            if (mk == MaskKind::none) cpu::write_back(hc, Matrix<T>(t), NoMask{}, accum, d);
                            else cpu::write_back(hc, Matrix<T>(t), mask, accum, d);
                        };
                        if (acc < 0) cpu_run(NoAccum{});
                        else with_op(accums[acc], [&](auto o) { cpu_run(o); });
                        return same_matrix(gc, hc);
                    });
                }
        // The mask is C's own pattern (C<C> = ...): C must be read fully before it is replaced.
        run_case(std::string("write_back ") + type_name<T>() + " " + s.name + " mask=C accum=plus", [&] {
            Descriptor d;
            d.mask_structure = true;
            Matrix<T> gc = c.to(gpu());
            cuda::MaskPattern mp{gc.storage_offsets().data(), gc.storage_indices().data(), false};
            BinaryOp plus = BinaryOp::plus;
            cuda::write_back(gc, t.to(gpu()), &mp, &plus, false);
            Matrix<T> hc = c;
            cpu::write_back(hc, Matrix<T>(t), Matrix<T>(c), plus_op{}, d);
            return same_matrix(gc, hc);
        });
    }
    // The vector path of the front end: columns, matrix write_back, back to a vector.
    for (Index n : {Index(0), Index(1), Index(50), Index(5000)})
        for (double dens : {0.0, 0.02, 0.3, 1.0})
            for (bool complement : {false, true})
                for (bool replace : {false, true}) {
                    std::string tag = std::string(type_name<T>()) + " n=" + std::to_string(n) + " d=" + std::to_string(dens) +
                                      (complement ? " !mask" : " mask") + (replace ? " replace" : "");
                    Vector<T> w = random_vector<T>(n, dens, false, rng), t = random_vector<T>(n, 0.1, true, rng);
                    Vector<bool> m = random_vector<bool>(n, 0.5, false, rng);
                    run_case("write_back vector " + tag, [&] {
                        Descriptor d;
                        d.mask_structure = true;
                        d.mask_complement = complement;
                        d.replace = replace;
                        Matrix<bool> mc = cuda::as_column(m.to(gpu()));
                        cuda::MaskPattern mp{mc.storage_offsets().data(), mc.storage_indices().data(), complement};
                        Matrix<T> wc = cuda::as_column(w.to(gpu()));
                        BinaryOp plus = BinaryOp::plus;
                        cuda::write_back(wc, cuda::as_column(t.to(gpu())), &mp, &plus, replace);
                        Vector<T> g = cuda::from_column(wc);
                        Vector<T> h = w;
                        cpu::write_back_vector(h, Vector<T>(t), m, plus_op{}, d);
                        // For n == 0 the CPU writer keeps dense storage, from_column sparse: same meaning.
                        return same_vector(g, h, n > 0);
                    });
                }
}

template <class T>
void check_type(std::mt19937_64& rng) {
    check_build<T>(rng);
    check_transpose<T>(rng);
    check_columns<T>(rng);
    check_ewise<T>(rng);
    check_write_back<T>(rng);
}

}  // namespace

// --quick: two value types and a few casts (for runs under compute-sanitizer).
int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
    try {
        if (!cuda_usable()) {
            std::printf("FAIL setup: no usable CUDA GPU\n");
            return 1;
        }
        std::mt19937_64 rng(20240611);
        check_type<std::int32_t>(rng);
        check_type<bool>(rng);
        if (quick) {
            check_cast_pair<float, std::int32_t>(rng);
            check_cast_pair<bool, double>(rng);
            std::printf("%d passed, %d failed\n", passes, failures);
            return failures ? 1 : 0;
        }
        check_type<double>(rng);
        check_type<std::uint8_t>(rng);
        check_type<float>(rng);
        check_type<std::uint64_t>(rng);
        check_type<std::int64_t>(rng);
        check_type<std::uint32_t>(rng);
        check_casts(rng, AllTypes{});
    } catch (const std::exception& e) {
        std::printf("FAIL setup: %s\n", e.what());
        return 1;
    }
    std::printf("%d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
