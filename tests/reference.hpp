// The brute-force reference the tests compare against: a dense matrix of optional entries, the GraphBLAS
// mask/accumulate/replace rule written the obvious way, and random sparse inputs (empty, 1x1, odd and
// skewed shapes, duplicates, power-law rows).
#pragma once
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "engine/hybla.hpp"

namespace ref {

using hybla::Index;

template <class T>
struct Dense {
    Index nrows = 0, ncols = 0;
    std::vector<std::optional<T>> a;
    Dense() = default;
    Dense(Index m, Index n) : nrows(m), ncols(n), a(m * n) {}
    std::optional<T>& operator()(Index i, Index j) { return a[i * ncols + j]; }
    const std::optional<T>& operator()(Index i, Index j) const { return a[i * ncols + j]; }
    Index nvals() const { return Index(std::count_if(a.begin(), a.end(), [](auto& x) { return x.has_value(); })); }
};

template <class T>
Dense<T> to_dense(const hybla::Matrix<T>& m) {
    Dense<T> d(m.nrows(), m.ncols());
    std::vector<Index> r, c;
    std::vector<T> v;
    m.extract_tuples(r, c, v);
    for (std::size_t k = 0; k < r.size(); ++k) d(r[k], c[k]) = v[k];
    return d;
}
// A vector as an n x 1 dense reference.
template <class T>
Dense<T> to_dense(const hybla::Vector<T>& u) {
    Dense<T> d(u.size(), 1);
    std::vector<Index> idx;
    std::vector<T> v;
    u.extract_tuples(idx, v);
    for (std::size_t k = 0; k < idx.size(); ++k) d(idx[k], 0) = v[k];
    return d;
}
template <class T>
Dense<T> to_dense(const hybla::DenseMatrix<T>& dm) {
    const hybla::DenseMatrix<T> m = dm.to(hybla::Context::cpu());
    Dense<T> d(m.nrows(), m.ncols());
    for (Index i = 0; i < m.nrows(); ++i)
        for (Index j = 0; j < m.ncols(); ++j) d(i, j) = m(i, j);
    return d;
}
// A dense matrix in host memory with random values (Gen::value).
template <class T, class G>
hybla::DenseMatrix<T> random_dense(G& g, Index m, Index n) {
    hybla::DenseMatrix<T> d(m, n, T{}, hybla::Context::cpu());
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) d(i, j) = g.template value<T>();
    return d;
}
template <class T>
hybla::DenseMatrix<T> dense_transpose(const hybla::DenseMatrix<T>& a) {
    hybla::DenseMatrix<T> t(a.ncols(), a.nrows(), T{}, hybla::Context::cpu());
    for (Index i = 0; i < a.nrows(); ++i)
        for (Index j = 0; j < a.ncols(); ++j) t(j, i) = a(i, j);
    return t;
}
// Values as a contiguous array (std::vector<bool> has no data(), so the std::vector overloads of from_tuples
// do not compile for bool; the span overloads do).
template <class T>
std::unique_ptr<T[]> contiguous(const std::vector<T>& v) {
    std::unique_ptr<T[]> p(new T[v.size() + 1]);
    std::copy(v.begin(), v.end(), p.get());
    return p;
}
template <class T>
hybla::Matrix<T> to_matrix(const Dense<T>& d) {
    std::vector<Index> r, c;
    std::vector<T> v;
    for (Index i = 0; i < d.nrows; ++i)
        for (Index j = 0; j < d.ncols; ++j)
            if (d(i, j)) {
                r.push_back(i);
                c.push_back(j);
                v.push_back(*d(i, j));
            }
    auto buf = contiguous(v);
    return hybla::Matrix<T>::from_tuples(d.nrows, d.ncols, std::span<const Index>(r), std::span<const Index>(c),
                                         std::span<const T>(buf.get(), v.size()));
}
template <class T>
hybla::Vector<T> to_vector(const Dense<T>& d) {
    std::vector<Index> idx;
    std::vector<T> v;
    for (Index i = 0; i < d.nrows; ++i)
        if (d(i, 0)) {
            idx.push_back(i);
            v.push_back(*d(i, 0));
        }
    auto buf = contiguous(v);
    return hybla::Vector<T>::from_tuples(d.nrows, std::span<const Index>(idx), std::span<const T>(buf.get(), v.size()));
}
template <class T>
Dense<T> transpose(const Dense<T>& d) {
    Dense<T> t(d.ncols, d.nrows);
    for (Index i = 0; i < d.nrows; ++i)
        for (Index j = 0; j < d.ncols; ++j) t(j, i) = d(i, j);
    return t;
}

// The mask as a dense boolean array (nullptr mask: everywhere true).
template <class M>
std::vector<char> mask_bits(const Dense<M>* mask, Index m, Index n, const hybla::Descriptor& d) {
    std::vector<char> bits(m * n, 1);
    if (!mask) return bits;
    for (Index x = 0; x < m * n; ++x) {
        const auto& e = mask->a[x];
        bool v = e.has_value() && (d.mask_structure || *e != M(0));
        bits[x] = v != d.mask_complement;
    }
    return bits;
}

// C<M, replace> accum= T, literally as the GraphBLAS C API specification words it.
template <class T, class M, class Accum>
Dense<T> write_back(const Dense<T>& c, const Dense<T>& t, const Dense<M>* mask, Accum accum, const hybla::Descriptor& d) {
    constexpr bool has_accum = !std::is_same_v<Accum, hybla::NoAccum>;
    Dense<T> z(c.nrows, c.ncols);
    for (Index x = 0; x < c.a.size(); ++x) {
        if constexpr (has_accum) {
            if (c.a[x] && t.a[x]) z.a[x] = accum(*c.a[x], *t.a[x]);
            else if (c.a[x]) z.a[x] = c.a[x];
            else z.a[x] = t.a[x];
        } else {
            z.a[x] = t.a[x];
        }
    }
    auto bits = mask_bits(mask, c.nrows, c.ncols, d);
    Dense<T> out(c.nrows, c.ncols);
    for (Index x = 0; x < c.a.size(); ++x) {
        if (bits[x]) out.a[x] = z.a[x];
        else if (!d.replace) out.a[x] = c.a[x];
    }
    return out;
}

// Equality: exact for integers, booleans and min/max results; relative tolerance for floating-point sums.
template <class T>
bool close(T x, T y, double rel) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
        if (std::isinf(x) || std::isinf(y)) return x == y;
        return std::abs(double(x) - double(y)) <= rel * std::max({1.0, std::abs(double(x)), std::abs(double(y))});
    } else {
        return x == y;
    }
}
template <class T>
std::string diff(const Dense<T>& got, const Dense<T>& want, double rel = 1e-9) {
    std::ostringstream os;
    if (got.nrows != want.nrows || got.ncols != want.ncols) {
        os << "shape " << got.nrows << "x" << got.ncols << " vs expected " << want.nrows << "x" << want.ncols;
        return os.str();
    }
    for (Index i = 0; i < got.nrows; ++i)
        for (Index j = 0; j < got.ncols; ++j) {
            const auto &g = got(i, j), &w = want(i, j);
            if (g.has_value() != w.has_value() || (g && !close(*g, *w, rel))) {
                os << "at (" << i << ", " << j << "): got ";
                if (g) os << +*g; else os << "none";
                os << ", expected ";
                if (w) os << +*w; else os << "none";
                return os.str();
            }
        }
    return {};
}
// REQUIRE(ref::same(got, want)) prints the first difference on failure.
#define REF_REQUIRE_SAME(got, want, ...)                              \
    do {                                                             \
        auto _d = ::ref::diff(got, want __VA_OPT__(, ) __VA_ARGS__); \
        INFO(_d);                                                    \
        REQUIRE(_d.empty());                                         \
    } while (0)

// HYBLA_TEST_SHARD=k/N (0 <= k < N; set by scripts/memcheck-cases to spread one slow test case over N processes
// under compute-sanitizer): the units of work a test asks about in turn (its shapes, graph sizes) are dealt out
// round-robin, and this process runs only units k, k+N, k+2N, ... The N shards together run every unit. Unset,
// every unit runs. A malformed value throws, so a sharded run cannot silently test nothing.
inline bool in_shard() {
    static const std::pair<unsigned long, unsigned long> shard = [] {
        const char* e = std::getenv("HYBLA_TEST_SHARD");
        if (!e || !*e) return std::pair<unsigned long, unsigned long>{0, 1};
        unsigned long k = 0, n = 0;
        char slash = 0, extra = 0;
        if (std::sscanf(e, "%lu %c %lu %c", &k, &slash, &n, &extra) != 3 || slash != '/' || n == 0 || k >= n)
            throw std::runtime_error(std::string("HYBLA_TEST_SHARD must be k/N with 0 <= k < N, not '") + e + "'");
        return std::pair<unsigned long, unsigned long>{k, n};
    }();
    static unsigned long next = 0;
    return next++ % shard.second == shard.first;
}

// Random inputs. Shapes include 0, 1 and odd sizes; density varies; some rows are heavy (power law).
struct Gen {
    std::mt19937_64 rng;
    explicit Gen(std::uint64_t seed) : rng(seed) {}
    Index uniform(Index lo, Index hi) { return std::uniform_int_distribution<Index>(lo, hi)(rng); }
    double real() { return std::uniform_real_distribution<double>(0, 1)(rng); }

    template <class T>
    T value() {
        if constexpr (std::is_same_v<T, bool>) return real() < 0.7;
        else if constexpr (std::is_floating_point_v<T>) return T(std::round((real() * 8 - 3) * 4) / 4);
        else if constexpr (std::is_unsigned_v<T>) return T(uniform(0, 6));
        else return T(std::int64_t(uniform(0, 10)) - 4);
    }

    // A random sparse matrix with explicit zeros possible, heavy rows when skewed.
    template <class T>
    Dense<T> matrix(Index m, Index n, double density, bool skewed = false) {
        Dense<T> d(m, n);
        for (Index i = 0; i < m; ++i) {
            double p = density;
            if (skewed && m > 0 && uniform(0, 7) == 0) p = std::min(1.0, density * 8);
            for (Index j = 0; j < n; ++j)
                if (real() < p) d(i, j) = value<T>();
        }
        return d;
    }
    template <class T>
    Dense<T> vector(Index n, double density) { return matrix<T>(n, 1, density); }

    // Shapes covering the edge cases.
    // HYBLA_TEST_QUICK=1 (set by scripts/gpu-check for the runs under compute-sanitizer, which is slow on many
    // small launches) keeps one shape of each kind: empty, one row, odd square, rectangular.
    // Under HYBLA_TEST_SHARD (see in_shard) each shape is one unit of work.
    static bool quick() {
        static const bool q = [] {
            const char* e = std::getenv("HYBLA_TEST_QUICK");
            return e && *e && *e != '0';
        }();
        return q;
    }
    std::vector<std::pair<Index, Index>> shapes() {
        const std::vector<std::pair<Index, Index>> all =
            quick() ? std::vector<std::pair<Index, Index>>{{0, 0}, {1, 7}, {13, 13}, {9, 23}}
                  : std::vector<std::pair<Index, Index>>{{0, 0}, {1, 1}, {0, 5}, {5, 0}, {1, 7},
                                                         {7, 1}, {13, 13}, {17, 9}, {9, 23}, {40, 40}};
        std::vector<std::pair<Index, Index>> out;
        for (const auto& s : all)
            if (in_shard()) out.push_back(s);
        return out;
    }
};


// The accumulators plus (wrapping for signed integers), second and min behind one type chosen at run time: the
// library's write-back code is the same for any accumulator type, and one type instead of three keeps the
// instantiations down. cuda_code() names the built-in operator, so the GPU runs it too (plus wraps there).
struct DynAccum {
    int k = 1;
    template <class T> T operator()(T a, T b) const {
        switch (k) {
            case 1: return wrapping_plus(a, b);
            case 2: return hybla::second_op{}(a, b);
            default: return hybla::min_op{}(a, b);
        }
    }
    hybla::cuda::BinaryOp cuda_code() const {
        return k == 1 ? hybla::cuda::BinaryOp::plus : k == 2 ? hybla::cuda::BinaryOp::second : hybla::cuda::BinaryOp::min;
    }
    // plus, wrapping around for signed integers: results of x/0 (INT_MAX, INT_MIN) are accumulated too, and
    // signed overflow would be undefined behaviour in the test and its reference alike.
    template <class T> static T wrapping_plus(T a, T b) {
        if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
            return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
        else return hybla::plus_op{}(a, b);
    }
};
// f(no_accum) for 0, else f(DynAccum{which}).
template <class F>
void with_accum(int which, F&& f) {
    if (which == 0) f(hybla::no_accum);
    else f(DynAccum{which});
}


// The "key: value" lines of a data/<graph>/truth.txt (comment lines starting with # skipped).
inline std::map<std::string, std::string> read_truth(const std::string& file) {
    std::map<std::string, std::string> kv;
    std::ifstream f(file);
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto colon = line.find(": ");
        if (colon != std::string::npos) kv[line.substr(0, colon)] = line.substr(colon + 2);
    }
    return kv;
}

// Random weights in 1/16 steps from 1/16 to 6/16, some rows denser (as mcl's matrices): small values, so that
// products and short sums are exact in float and double, both backends and the reference agree bit for bit, and
// ties (the hard part of mcl's pruning rules) are frequent.
inline hybla::Matrix<float> random_weights(Gen& g, hybla::Index m, hybla::Index n, double density) {
    std::vector<hybla::Index> r, c;
    std::vector<float> v;
    for (hybla::Index i = 0; i < m; ++i) {
        const double p = g.uniform(0, 5) == 0 ? std::min(1.0, density * 6) : density;
        for (hybla::Index j = 0; j < n; ++j)
            if (g.real() < p) {
                r.push_back(i);
                c.push_back(j);
                v.push_back(float(g.uniform(1, 6)) / 16.0f);
            }
    }
    return hybla::Matrix<float>::from_tuples(m, n, r, c, v);
}

}  // namespace ref
