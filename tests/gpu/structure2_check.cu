// structure2_check: the CUDA backend's apply_unary, apply_bound, select, reduce_rows, reduce_all (matrix,
// sparse and dense vector), extract, assign, kronecker, dense_transpose and dense_accumulate against the CPU
// backend, for every value type, on empty, 1x1, odd, random and skewed matrices (rows of degree 10^5 and
// 10^6, rows just around the reduction's long-row threshold, long runs of empty rows). One line per case,
// "PASS name" or "FAIL name: first difference"; exit status 1 on any failure. --small shrinks the big cases
// (for compute-sanitizer). Patterns must match exactly, and so must values, except floating sums and
// products of reductions (relative 1e-9 double, 1e-4 float: the GPU groups the terms differently).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "engine/hybla.hpp"

using namespace hybla;

namespace {

bool small = false;
int failures = 0;
int passes = 0;
std::mt19937_64 rng(20241123);

void report(const std::string& name, const std::string& why) {
    if (why.empty()) {
        ++passes;
        std::printf("PASS %s\n", name.c_str());
    } else {
        ++failures;
        std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
    }
    std::fflush(stdout);
}
// Runs body (returning "" or the first difference), turning exceptions into failures.
template <class F>
void run_case(const std::string& name, F&& body) {
    try {
        report(name, body());
    } catch (const std::exception& e) {
        report(name, std::string("exception: ") + e.what());
    }
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

template <class T>
std::string show(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::to_string(double(v));
    else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_signed_v<T>) return std::to_string(std::int64_t(v));
    else return std::to_string(std::uint64_t(v));
}

// Exact, or (loose: sums and products of reductions) within the relative tolerance; magnitudes deep in the
// subnormal range count as equal, since a product's grouping decides how much of them survives.
template <class T>
bool same_value(T g, T c, bool loose) {
    if constexpr (std::is_floating_point_v<T>) {
        if (g == c) return true;
        if (std::isnan(c) || std::isnan(g)) return std::isnan(c) && std::isnan(g);
        if (!loose) return false;
        const double tiny = std::is_same_v<T, float> ? 1e-30 : 1e-290;
        if (std::fabs(double(g)) < tiny && std::fabs(double(c)) < tiny) return true;
        const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-9;
        return std::fabs(double(g) - double(c)) <= tol * std::max(1.0, std::fabs(double(c)));
    } else {
        return g == c;
    }
}

// ------------------------------------------------------------------------------------------------ inputs

std::vector<ColIndex> sample_cols(Index n, Index d) {
    d = std::min(d, n);
    std::vector<ColIndex> out;
    out.reserve(d);
    if (d * 4 >= n) {
        Index need = d;
        for (Index j = 0; j < n && need > 0; ++j)
            if (rng() % (n - j) < need) {
                out.push_back(ColIndex(j));
                --need;
            }
    } else {
        std::unordered_set<ColIndex> seen;
        while (out.size() < d) {
            ColIndex j = ColIndex(rng() % n);
            if (seen.insert(j).second) out.push_back(j);
        }
        std::sort(out.begin(), out.end());
    }
    return out;
}

template <class T>
T random_value() {
    if constexpr (std::is_same_v<T, bool>) return rng() % 4 != 0;
    else if constexpr (std::is_floating_point_v<T>) {
        if (rng() % 16 == 0) return T(0);
        return T(0.5 + double(rng() % 1000000) / 1000000.0) * (rng() % 4 == 0 ? T(-1) : T(1));
    } else if constexpr (std::is_signed_v<T>) return T(int(rng() % 41) - 20);
    else return T(rng() % 256);
}

struct Shape {
    std::string name;
    Index nrows = 0, ncols = 0;
    std::vector<Index> degree;
};

Shape random_shape(std::string name, Index m, Index n, double density) {
    Shape s{std::move(name), m, n, std::vector<Index>(m)};
    if (n > 0 && density > 0) {
        std::binomial_distribution<Index> deg(n, density);
        for (auto& d : s.degree) d = deg(rng);
    }
    return s;
}
// A few huge rows (10^6 and 10^5; a tenth with --small), rows just around 8192 entries, long runs of empty
// rows, the rest short.
Shape skewed_shape() {
    const Index big = small ? 100000 : 1000000;
    Shape s{"skewed", 3000, big + 200000, std::vector<Index>(3000)};
    std::poisson_distribution<Index> deg(3.0);
    for (Index i = 0; i < s.nrows; ++i) s.degree[i] = (i >= 1000 && i < 1800) ? 0 : deg(rng);
    s.degree[0] = big;
    s.degree[5] = big / 10;
    s.degree[8] = 8191;
    s.degree[9] = 8192;
    s.degree[10] = 8193;
    s.degree[11] = 16385;
    s.degree[2999] = 20000;
    return s;
}

std::vector<Shape> shapes() {
    std::vector<Shape> s;
    s.push_back(random_shape("0x0", 0, 0, 0));
    s.push_back(random_shape("0x7", 0, 7, 0));
    s.push_back(random_shape("7x0", 7, 0, 0));
    s.push_back(random_shape("1x1 empty", 1, 1, 0));
    s.push_back(random_shape("1x1", 1, 1, 1));
    s.push_back(random_shape("37x53 empty", 37, 53, 0));
    s.push_back(random_shape("37x53 d=0.1", 37, 53, 0.1));
    s.push_back(random_shape("37x53 d=0.5", 37, 53, 0.5));
    s.push_back(random_shape("1000x700 d=0.01", 1000, 700, 0.01));
    s.push_back(random_shape("300x5000 d=0.3", 300, 5000, 0.3));
    s.push_back(skewed_shape());
    return s;
}

template <class T>
Matrix<T> build(const Shape& s) {
    Array<Offset> off(s.nrows + 1);
    off[0] = 0;
    for (Index i = 0; i < s.nrows; ++i) off[i + 1] = off[i] + std::min(s.degree[i], s.ncols);
    Array<ColIndex> cols(off[s.nrows]);
    Array<T> vals(off[s.nrows]);
    for (Index i = 0; i < s.nrows; ++i) {
        auto c = sample_cols(s.ncols, s.degree[i]);
        for (std::size_t q = 0; q < c.size(); ++q) {
            cols[off[i] + q] = c[q];
            vals[off[i] + q] = random_value<T>();
        }
    }
    return Matrix<T>::import_csr(s.nrows, s.ncols, std::move(off), std::move(cols), std::move(vals), true);
}

// Fills a stretch of the device pool with junk and frees it, so that unwritten outputs show up.
void poison(const Context& ctx) {
    Array<std::uint8_t> junk(std::size_t(64) << 20, ctx);
    junk.fill(std::uint8_t(0xA7));
}

// ------------------------------------------------------------------------------------------------ comparing

template <class T>
std::string diff_matrix(const Matrix<T>& ref, const Matrix<T>& gpu, bool loose = false) {
    Matrix<T> g = gpu.to(Context::cpu());
    if (g.nrows() != ref.nrows() || g.ncols() != ref.ncols())
        return "shape " + std::to_string(g.nrows()) + "x" + std::to_string(g.ncols()) + ", expected " +
               std::to_string(ref.nrows()) + "x" + std::to_string(ref.ncols());
    if (g.nvals() != ref.nvals())
        return "nvals " + std::to_string(g.nvals()) + ", expected " + std::to_string(ref.nvals());
    if (g.storage_offsets().size() != ref.nrows() + 1 || g.storage_indices().size() != ref.nvals() ||
        g.storage_values().size() != ref.nvals())
        return "array sizes do not match nrows/nvals";
    for (Index i = 0; i <= ref.nrows(); ++i)
        if (g.storage_offsets()[i] != ref.storage_offsets()[i])
            return "row offset " + std::to_string(i) + ": " + std::to_string(g.storage_offsets()[i]) + ", expected " +
                   std::to_string(ref.storage_offsets()[i]);
    for (Index p = 0; p < ref.nvals(); ++p)
        if (g.storage_indices()[p] != ref.storage_indices()[p])
            return "column at position " + std::to_string(p) + ": " + std::to_string(g.storage_indices()[p]) +
                   ", expected " + std::to_string(ref.storage_indices()[p]);
    for (Index p = 0; p < ref.nvals(); ++p)
        if (!same_value(g.storage_values()[p], ref.storage_values()[p], loose))
            return "value at position " + std::to_string(p) + " (column " + std::to_string(ref.storage_indices()[p]) +
                   "): " + show(g.storage_values()[p]) + ", expected " + show(ref.storage_values()[p]);
    return "";
}

template <class T>
std::string diff_vector(const Vector<T>& ref, const Vector<T>& gpu, bool loose) {
    std::vector<Index> ri, gi;
    std::vector<T> rv, gv;
    ref.extract_tuples(ri, rv);
    gpu.extract_tuples(gi, gv);
    if (gpu.size() != ref.size()) return "size " + std::to_string(gpu.size()) + ", expected " + std::to_string(ref.size());
    if (gpu.nvals() != gi.size())
        return "nvals says " + std::to_string(gpu.nvals()) + " but " + std::to_string(gi.size()) + " entries are present";
    if (gi.size() != ri.size()) return "nvals " + std::to_string(gi.size()) + ", expected " + std::to_string(ri.size());
    for (std::size_t k = 0; k < ri.size(); ++k) {
        if (gi[k] != ri[k]) return "entry " + std::to_string(k) + " at " + std::to_string(gi[k]) + ", expected " + std::to_string(ri[k]);
        if (!same_value(gv[k], rv[k], loose))
            return "value at " + std::to_string(ri[k]) + ": " + show(gv[k]) + ", expected " + show(rv[k]);
    }
    return "";
}

template <class T>
std::string diff_dense(const DenseMatrix<T>& ref, const DenseMatrix<T>& gpu) {
    DenseMatrix<T> g = gpu.to(Context::cpu());
    if (g.nrows() != ref.nrows() || g.ncols() != ref.ncols()) return "shape differs";
    for (Index x = 0; x < ref.nrows() * ref.ncols(); ++x)
        if (!same_value(g.data()[x], ref.data()[x], false))
            return "element " + std::to_string(x) + ": " + show(g.data()[x]) + ", expected " + show(ref.data()[x]);
    return "";
}

// ------------------------------------------------------------------------------------------------ operators

template <class F> void each_unary(F&& f) {
    f(identity_op{}, "identity");
    f(ainv_op{}, "ainv");
    f(minv_op{}, "minv");
    f(abs_op{}, "abs");
    f(lnot_op{}, "lnot");
    f(one_op{}, "one");
}
template <class F> void each_binary(F&& f) {
    f(first_op{}, "first");
    f(second_op{}, "second");
    f(pair_op{}, "pair");
    f(plus_op{}, "plus");
    f(minus_op{}, "minus");
    f(times_op{}, "times");
    f(div_op{}, "div");
    f(min_op{}, "min");
    f(max_op{}, "max");
    f(eq_op{}, "eq");
    f(ne_op{}, "ne");
    f(lt_op{}, "lt");
    f(le_op{}, "le");
    f(gt_op{}, "gt");
    f(ge_op{}, "ge");
    f(lor_op{}, "lor");
    f(land_op{}, "land");
    f(lxor_op{}, "lxor");
}
template <class F> void each_monoid(F&& f) {
    f(plus_monoid{}, "plus");
    f(times_monoid{}, "times");
    f(min_monoid{}, "min");
    f(max_monoid{}, "max");
    f(lor_monoid{}, "lor");
    f(land_monoid{}, "land");
    f(lxor_monoid{}, "lxor");
    f(any_monoid{}, "any");
}

// ------------------------------------------------------------------------------------------------ references
// Plain sequential references that follow the CPU backend's definitions line by line (engine/cpu/ewise.hpp's
// map_values and select_entries, engine/cpu/extract_assign.hpp's kronecker): the CPU backend's own templates
// are called where the semantics are intricate (reduce_rows, extract, assign); for the simple element-wise
// ones a loop keeps this program's build time reasonable (hundreds of operator/type combinations).

// The entries (i, j, v) of a for which keep(i, j, v) holds, with values f(v).
template <class T, class Keep, class F>
Matrix<T> filter_map(const Matrix<T>& a, Keep keep, F f) {
    Array<Offset> off(a.nrows() + 1);
    std::vector<ColIndex> cols;
    std::vector<T> vals;
    off[0] = 0;
    for (Index i = 0; i < a.nrows(); ++i) {
        for (Offset p = a.row_begin(i); p < a.row_end(i); ++p)
            if (keep(i, Index(a.storage_indices()[p]), a.storage_values()[p])) {
                cols.push_back(a.storage_indices()[p]);
                vals.push_back(T(f(a.storage_values()[p])));
            }
        off[i + 1] = cols.size();
    }
    Array<ColIndex> c(cols.size());
    Array<T> v(vals.size());
    std::copy(cols.begin(), cols.end(), c.begin());
    std::copy(vals.begin(), vals.end(), v.begin());
    return Matrix<T>::import_csr(a.nrows(), a.ncols(), std::move(off), std::move(c), std::move(v), true);
}
struct keep_all {
    template <class T> bool operator()(Index, Index, T) const { return true; }
};
struct same_value_fn {
    template <class T> T operator()(T v) const { return v; }
};

template <class T, class Op>
Matrix<T> kronecker_reference(const Matrix<T>& a, const Matrix<T>& b, Op op) {
    const Index mb = b.nrows(), nb = b.ncols();
    Array<Offset> off(a.nrows() * mb + 1);
    std::vector<ColIndex> cols;
    std::vector<T> vals;
    off[0] = 0;
    for (Index i = 0; i < a.nrows() * mb; ++i) {
        const Index ia = i / mb, ib = i % mb;
        for (Offset p = a.row_begin(ia); p < a.row_end(ia); ++p)
            for (Offset q = b.row_begin(ib); q < b.row_end(ib); ++q) {
                cols.push_back(ColIndex(Index(a.storage_indices()[p]) * nb + b.storage_indices()[q]));
                vals.push_back(op(a.storage_values()[p], b.storage_values()[q]));
            }
        off[i + 1] = cols.size();
    }
    Array<ColIndex> c(cols.size());
    Array<T> v(vals.size());
    std::copy(cols.begin(), cols.end(), c.begin());
    std::copy(vals.begin(), vals.end(), v.begin());
    return Matrix<T>::import_csr(a.nrows() * mb, a.ncols() * nb, std::move(off), std::move(c), std::move(v), true);
}

// The monoid over present values in order, starting from the first (engine/cpu/reduce.hpp's reduce_values
// without the parallel split, which only regroups floating sums).
template <class M, class T>
T reduce_reference(const T* vals, const std::uint8_t* present, Index n) {
    bool found = false;
    T acc = M::template identity<T>();
    for (Index i = 0; i < n; ++i)
        if (!present || present[i]) {
            acc = found ? M{}(acc, vals[i]) : vals[i];
            found = true;
        }
    return acc;
}

// ------------------------------------------------------------------------------------------------ cases

template <class T>
void check_apply(const std::string& sn, const Matrix<T>& a, const Matrix<T>& ga) {
    each_unary([&](auto op, const char* on) {
        using Op = decltype(op);
        run_case(std::string("apply_unary ") + on + " " + type_name<T>() + " " + sn, [&] {
            Matrix<T> ref = filter_map(a, keep_all{}, [](T x) { return Op{}(x); });
            return diff_matrix(ref, cuda::apply_unary(ga, cuda::unary_code_of<Op>::value));
        });
    });
    each_binary([&](auto op, const char* on) {
        using Op = decltype(op);
        for (bool first : {false, true}) {
            const T s = std::is_same_v<T, bool> ? T(1) : T(3);
            for (T scalar : {s, T(0)}) {
                run_case(std::string("apply_bound ") + on + (first ? " (s, A) " : " (A, s) ") + show(scalar) + " " +
                             type_name<T>() + " " + sn,
                         [&] {
                             Matrix<T> ref = filter_map(
                                 a, keep_all{}, [=](T x) { return first ? Op{}(scalar, x) : Op{}(x, scalar); });
                             return diff_matrix(ref, cuda::apply_bound(ga, cuda::binary_code_of<Op>::value, scalar, first));
                         });
            }
        }
    });
}

template <class T, class Keep>
void select_case(const std::string& what, const std::string& sn, const Matrix<T>& a, const Matrix<T>& ga, Keep keep) {
    run_case("select " + what + " " + type_name<T>() + " " + sn, [&] {
        Matrix<T> ref = filter_map(a, keep, same_value_fn{});
        auto code = detail::select_code(keep);
        if (!code) return std::string("no select code");
        return diff_matrix(ref, cuda::select(ga, *code));
    });
}

template <class T>
void check_select(const std::string& sn, const Matrix<T>& a, const Matrix<T>& ga) {
    for (std::int64_t k : {-2, 0, 3}) {
        const std::string ks = "k=" + std::to_string(k);
        select_case("tril " + ks, sn, a, ga, tril{k});
        select_case("triu " + ks, sn, a, ga, triu{k});
        select_case("diag " + ks, sn, a, ga, diag{k});
        select_case("offdiag " + ks, sn, a, ga, offdiag{k});
    }
    select_case("nonzero", sn, a, ga, nonzero{});
    // Thunks of T's own type, int (also negative), unsigned int and double: the cases the CUDA backend
    // reproduces exactly (see value_keep in engine/cuda/structure/apply_select.cu).
    auto with_thunk = [&](auto thunk, const std::string& tn) {
        select_case("== " + tn, sn, a, ga, value_eq{thunk});
        select_case("!= " + tn, sn, a, ga, value_ne{thunk});
        select_case("< " + tn, sn, a, ga, value_lt{thunk});
        select_case("<= " + tn, sn, a, ga, value_le{thunk});
        select_case("> " + tn, sn, a, ga, value_gt{thunk});
        select_case(">= " + tn, sn, a, ga, value_ge{thunk});
    };
    with_thunk(std::is_same_v<T, bool> ? T(1) : T(5), std::string("T(5)"));
    with_thunk(int(3), "int 3");
    with_thunk(int(-3), "int -3");
    with_thunk(3u, "unsigned 3");
    with_thunk(0.75, "double 0.75");
    with_thunk(-0.75, "double -0.75");
    with_thunk(4.0f, "float 4");
}

template <class T>
void check_reduce(const std::string& sn, const Matrix<T>& a, const Matrix<T>& ga) {
    each_monoid([&](auto mon, const char* mn) {
        using M = decltype(mon);
        const bool loose = std::is_floating_point_v<T> &&
                           (std::is_same_v<M, plus_monoid> || std::is_same_v<M, times_monoid>);
        const auto code = cuda::monoid_code_of<M>::value;
        run_case(std::string("reduce_rows ") + mn + " " + type_name<T>() + " " + sn, [&] {
            Vector<T> ref = cpu::reduce_rows<M, T>(a);
            Vector<T> g = cuda::reduce_rows(ga, code);
            if (!g.is_dense()) return std::string("result is not dense");
            return diff_vector(ref, g, loose);
        });
        run_case(std::string("reduce_all matrix ") + mn + " " + type_name<T>() + " " + sn, [&] {
            T ref = reduce_reference<M, T>(a.storage_values().data(), nullptr, a.nvals());
            T g = cuda::reduce_all(ga, code);
            return same_value(g, ref, loose) ? std::string() : show(g) + ", expected " + show(ref);
        });
    });
}

template <class T>
void check_reduce_vectors() {
    const Index big = small ? 300000 : 3000000;
    for (Index n : {Index(0), Index(1), Index(7), Index(8192), Index(8193), Index(100003), big}) {
        for (int kind = 0; kind < 4; ++kind) {  // sparse, dense full, dense half, dense none
            Array<T> vals(n);
            Array<std::uint8_t> bm(n);
            for (Index i = 0; i < n; ++i) {
                vals[i] = random_value<T>();
                bm[i] = kind == 1 ? 1 : kind == 2 ? rng() % 2 : 0;
            }
            Vector<T> u = kind == 0 ? Vector<T>::import_sparse(n, [&] {
                Array<Index> idx(n);
                std::iota(idx.begin(), idx.end(), Index(0));
                return idx;
            }(), vals, true) : Vector<T>::import_dense(n, vals, bm);
            const char* kn[] = {"sparse", "dense full", "dense half", "dense none"};
            Vector<T> gu = u.to(Context::cuda());
            each_monoid([&](auto mon, const char* mn) {
                using M = decltype(mon);
                const bool loose = std::is_floating_point_v<T> &&
                                   (std::is_same_v<M, plus_monoid> || std::is_same_v<M, times_monoid>);
                run_case(std::string("reduce_all vector ") + mn + " " + type_name<T>() + " " + kn[kind] + " n=" +
                             std::to_string(n),
                         [&] {
                             T ref = reduce_reference<M, T>(u.storage_values().data(), u.is_dense() ? u.storage_bitmap().data() : nullptr,
                                                            u.is_dense() ? u.size() : u.nvals());
                             T g = cuda::reduce_all(gu, cuda::monoid_code_of<M>::value);
                             return same_value(g, ref, loose) ? std::string() : show(g) + ", expected " + show(ref);
                         });
            });
        }
    }
}

// Index lists over a dimension n: every kind extract and assign must handle.
std::vector<std::pair<std::string, std::vector<Index>>> index_lists(Index n, bool allow_repeats, Index limit) {
    std::vector<std::pair<std::string, std::vector<Index>>> out;
    std::vector<Index> all(n);
    std::iota(all.begin(), all.end(), Index(0));
    out.push_back({"all", all});
    out.push_back({"none", {}});
    if (n == 0) return out;
    std::vector<Index> rev(all.rbegin(), all.rend());
    out.push_back({"reversed", rev});
    std::vector<Index> perm = all;
    std::shuffle(perm.begin(), perm.end(), rng);
    out.push_back({"permuted", perm});
    std::vector<Index> sub;
    for (Index i = 0; i < n; ++i)
        if (rng() % 3 == 0) sub.push_back(i);
    out.push_back({"sorted subset", sub});
    std::vector<Index> sh = sub;
    std::shuffle(sh.begin(), sh.end(), rng);
    out.push_back({"unsorted subset", sh});
    out.push_back({"one", {n / 2}});
    if (allow_repeats) {
        std::vector<Index> rep;
        for (Index k = 0; k < std::min<Index>(n + 3, limit); ++k) rep.push_back(rng() % n);
        std::vector<Index> srt = rep;
        std::sort(srt.begin(), srt.end());
        out.push_back({"random with repeats", rep});
        out.push_back({"sorted with repeats", srt});
        out.push_back({"same index x5", std::vector<Index>(5, n - 1)});
    }
    for (auto& [name, v] : out)
        if (v.size() > limit) v.resize(limit);
    return out;
}

template <class T>
void check_extract(const std::string& sn, const Matrix<T>& a, const Matrix<T>& ga, bool big) {
    auto rows = index_lists(a.nrows(), true, big ? 8 : Index(-1));
    auto cols = index_lists(a.ncols(), true, Index(-1));
    if (big) {  // the huge rows, twice, and a few others
        rows = {{"hubs", {0, 0, 5, 11, 1500, 2999}}};
        cols.erase(std::remove_if(cols.begin(), cols.end(), [](auto& c) { return c.first == "random with repeats"; }),
                   cols.end());
    }
    for (auto& [rn, r] : rows)
        for (auto& [cn, c] : cols) {
            run_case("extract rows " + rn + ", cols " + cn + " " + type_name<T>() + " " + sn, [&] {
                Matrix<T> ref = cpu::extract<T>(a, IndexSet(r), r.size(), IndexSet(c), c.size());
                return diff_matrix(ref, cuda::extract(ga, r, c));
            });
        }
}

template <class T>
void check_assign(const std::string& sn, const Matrix<T>& c0, const Matrix<T>& gc0) {
    auto rows = index_lists(c0.nrows(), false, Index(-1));
    auto cols = index_lists(c0.ncols(), false, Index(-1));
    // Keep the number of combinations moderate: a few row lists against every column list and back.
    for (std::size_t x = 0; x < rows.size(); ++x)
        for (std::size_t y = 0; y < cols.size(); ++y) {
            if (x != 0 && y != 0 && (x + y) % 3 != 0) continue;
            const auto& [rn, r] = rows[x];
            const auto& [cn, c] = cols[y];
            for (double density : {0.0, 0.3, 1.0}) {
                Matrix<T> a = build<T>(random_shape("", r.size(), c.size(), density));
                Matrix<T> ga = a.to(Context::cuda());
                auto one = [&](auto accum, const char* an, const cuda::BinaryOp* code) {
                    run_case("assign rows " + rn + ", cols " + cn + ", A d=" + std::to_string(density).substr(0, 3) +
                                 ", accum " + an + " " + type_name<T>() + " " + sn,
                             [&] {
                                 Matrix<T> ref = c0;
                                 cpu::assign_region(ref, NoMask{}, accum, IndexSet(r), r.size(), IndexSet(c), c.size(),
                                                    [&](Index i, auto&& emit) {
                                                        for (Offset p = a.row_begin(i); p < a.row_end(i); ++p)
                                                            emit(Index(a.storage_indices()[p]), a.storage_values()[p]);
                                                    },
                                                    Descriptor{});
                                 Matrix<T> g = gc0;
                                 cuda::assign(g, ga, r, c, code);
                                 return diff_matrix(ref, g);
                             });
                };
                const cuda::BinaryOp plus = cuda::BinaryOp::plus, mn = cuda::BinaryOp::min,
                                     second = cuda::BinaryOp::second;
                one(NoAccum{}, "none", nullptr);
                one(plus_op{}, "plus", &plus);
                one(min_op{}, "min", &mn);
                one(second_op{}, "second", &second);
            }
        }
}

template <class T>
void check_kronecker(const std::string& an, const Matrix<T>& a, const std::string& bn, const Matrix<T>& b) {
    Matrix<T> ga = a.to(Context::cuda()), gb = b.to(Context::cuda());
    each_binary([&](auto op, const char* on) {
        using Op = decltype(op);
        if (!(std::is_same_v<Op, times_op> || std::is_same_v<Op, plus_op> || std::is_same_v<Op, first_op> ||
              std::is_same_v<Op, second_op> || std::is_same_v<Op, div_op> || std::is_same_v<Op, lt_op>))
            return;
        run_case(std::string("kronecker ") + on + " " + type_name<T>() + " " + an + " (x) " + bn, [&] {
            Matrix<T> ref = kronecker_reference(a, b, Op{});
            return diff_matrix(ref, cuda::kronecker(ga, gb, cuda::binary_code_of<Op>::value));
        });
    });
}

template <class T>
void check_dense() {
    for (auto [m, n] : std::vector<std::pair<Index, Index>>{{0, 0}, {0, 5}, {5, 0}, {1, 1}, {33, 65}, {1000, 3}, {3, 1000}, {1025, 1027}, {70000, 2}}) {
        Array<T> d(m * n), e(m * n);
        for (Index x = 0; x < m * n; ++x) d[x] = random_value<T>(), e[x] = random_value<T>();
        DenseMatrix<T> a = DenseMatrix<T>::import_row_major(m, n, d);
        DenseMatrix<T> b = DenseMatrix<T>::import_row_major(m, n, e);
        const std::string sn = std::to_string(m) + "x" + std::to_string(n);
        run_case(std::string("dense_transpose ") + type_name<T>() + " " + sn,
                 [&] { return diff_dense(cpu::dense_transpose(a), cuda::dense_transpose(a.to(Context::cuda()))); });
        each_binary([&](auto op, const char* on) {
            using Op = decltype(op);
            run_case(std::string("dense_accumulate ") + on + " " + type_name<T>() + " " + sn, [&] {
                DenseMatrix<T> ref = a.to(Context::cpu());
                for (Index x = 0; x < m * n; ++x) ref.data()[x] = Op{}(a.data()[x], b.data()[x]);
                DenseMatrix<T> g = a.to(Context::cuda());
                cuda::dense_accumulate(g, b.to(Context::cuda()), cuda::binary_code_of<Op>::value);
                return diff_dense(ref, g);
            });
        });
    }
}

template <class T>
void check_type(const std::vector<Shape>& all_shapes) {
    const Context gpu = Context::cuda();
    for (const Shape& s : all_shapes) {
        Matrix<T> a = build<T>(s);
        poison(gpu);
        Matrix<T> ga = a.to(gpu);
        const bool big = s.name == "skewed";
        check_apply(s.name, a, ga);
        check_select(s.name, a, ga);
        check_reduce(s.name, a, ga);
        check_extract(s.name, a, ga, big);
        if (!big && s.nrows * s.ncols <= 1000000) check_assign(s.name, a, ga);
    }
    // Assign into the skewed matrix: a region through the huge row, and one beside it.
    {
        Shape s = skewed_shape();
        Matrix<T> c = build<T>(s);
        Matrix<T> gc = c.to(gpu);
        for (auto [rn, r, cn, cl] : std::vector<std::tuple<std::string, std::vector<Index>, std::string, std::vector<Index>>>{
                 {"hub rows", {5, 0, 11}, "every 7th column", {}}, {"quiet rows", {1200, 1100}, "first 1000", {}}}) {
            if (cn == "every 7th column")
                for (Index j = 0; j < s.ncols; j += 7) cl.push_back(j);
            else
                for (Index j = 0; j < 1000; ++j) cl.push_back(999 - j);
            Matrix<T> a = build<T>(random_shape("", r.size(), cl.size(), 0.2));
            Matrix<T> ga = a.to(gpu);
            for (bool acc : {false, true}) {
                run_case("assign " + rn + ", " + cn + (acc ? ", accum plus " : ", no accum ") + type_name<T>() + " skewed", [&] {
                    Matrix<T> ref = c;
                    auto src = [&](Index i, auto&& emit) {
                        for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) emit(Index(a.storage_indices()[p]), a.storage_values()[p]);
                    };
                    if (acc) cpu::assign_region(ref, NoMask{}, plus_op{}, IndexSet(r), r.size(), IndexSet(cl), cl.size(), src, Descriptor{});
                    else cpu::assign_region(ref, NoMask{}, NoAccum{}, IndexSet(r), r.size(), IndexSet(cl), cl.size(), src, Descriptor{});
                    Matrix<T> g = gc;
                    const cuda::BinaryOp plus = cuda::BinaryOp::plus;
                    cuda::assign(g, ga, r, cl, acc ? &plus : nullptr);
                    return diff_matrix(ref, g);
                });
            }
        }
    }
    // Kronecker: small operands, and one with a row of 10^5 (10^4 with --small) entries.
    {
        Matrix<T> a = build<T>(random_shape("", 30, 20, 0.2));
        Matrix<T> b = build<T>(random_shape("", 15, 25, 0.3));
        Matrix<T> e = build<T>(random_shape("", 4, 6, 0.0));
        Matrix<T> one = build<T>(random_shape("", 1, 1, 1.0));
        Shape hs{"", 3, Index(small ? 20000 : 200000), {Index(small ? 10000 : 100000), 0, 7}};
        Matrix<T> h = build<T>(hs);
        Matrix<T> z = build<T>(random_shape("", 0, 3, 0));
        Matrix<T> sp = build<T>(random_shape("", 500, 40, 0.002));  // mostly empty rows: long empty runs in C
        run_case(std::string("kronecker reference = cpu::kronecker ") + type_name<T>(),
                 [&] { return diff_matrix(cpu::kronecker<T>(a, b, times_op{}), kronecker_reference(a, b, times_op{})); });
        check_kronecker<T>("30x20", a, "15x25", b);
        check_kronecker<T>("15x25", b, "30x20", a);
        check_kronecker<T>("30x20", a, "empty 4x6", e);
        check_kronecker<T>("1x1", one, "30x20", a);
        check_kronecker<T>("3x3", build<T>(random_shape("", 3, 3, 0.7)), "hub 3x" + std::to_string(hs.ncols), h);
        check_kronecker<T>("0x3", z, "15x25", b);
        check_kronecker<T>("sparse 500x40", sp, "sparse 500x40", sp);
    }
    check_reduce_vectors<T>();
    check_dense<T>();
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--small") == 0) small = true;
    if (!cuda_usable()) {
        std::printf("FAIL setup: no usable CUDA GPU\n");
        return 1;
    }
    try {
        const auto all_shapes = shapes();
        check_type<bool>(all_shapes);
        check_type<std::uint8_t>(all_shapes);
        check_type<std::int32_t>(all_shapes);
        check_type<std::uint32_t>(all_shapes);
        check_type<std::int64_t>(all_shapes);
        check_type<std::uint64_t>(all_shapes);
        check_type<float>(all_shapes);
        check_type<double>(all_shapes);
    } catch (const std::exception& e) {
        std::printf("FAIL setup: %s\n", e.what());
        return 1;
    }
    std::printf("%d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
