// The objects: Matrix (tuples, element access, resize, import/export, the cached transpose), Vector (both
// storage forms), DenseMatrix, Array, the dimension limit and the error classes. Checked against the dense
// reference on random inputs.
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "reference.hpp"

using namespace hybla;
using Catch::Contains;
using ref::Index;

namespace {

// Random tuples with many duplicates, in random order.
struct Tuples {
    std::vector<Index> r, c;
    std::vector<int> v;
};
Tuples random_tuples(ref::Gen& g, Index m, Index n, std::size_t count) {
    Tuples t;
    if (m == 0 || n == 0) return t;
    for (std::size_t k = 0; k < count; ++k) {
        t.r.push_back(g.uniform(0, m - 1));
        t.c.push_back(g.uniform(0, n - 1));
        t.v.push_back(int(g.uniform(0, 20)) - 10);
    }
    return t;
}
// The reference build: duplicates combined left to right in input order.
template <class Dup>
ref::Dense<int> brute_build(Index m, Index n, const Tuples& t, Dup dup) {
    ref::Dense<int> d(m, n);
    for (std::size_t k = 0; k < t.r.size(); ++k) {
        auto& e = d(t.r[k], t.c[k]);
        e = e ? dup(*e, t.v[k]) : t.v[k];
    }
    return d;
}

// CSR invariants: offsets start at 0 and do not decrease, columns strictly increase within each row.
template <class T>
void check_csr_invariants(const Matrix<T>& ga) {
    const Matrix<T> a = ga.to(Context::cpu());
    auto off = a.row_offsets();
    REQUIRE(off.size() == a.nrows() + 1);
    REQUIRE(off[0] == 0);
    REQUIRE(off[a.nrows()] == a.nvals());
    REQUIRE(a.col_indices().size() == a.nvals());
    REQUIRE(a.values().size() == a.nvals());
    for (Index i = 0; i < a.nrows(); ++i) {
        REQUIRE(off[i] <= off[i + 1]);
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            REQUIRE(a.col_indices()[p] < a.ncols());
            if (p > off[i]) REQUIRE(a.col_indices()[p - 1] < a.col_indices()[p]);
        }
    }
}

CsrArrays<int> csr_of(const ref::Dense<int>& d) {
    CsrArrays<int> out;
    out.nrows = d.nrows;
    out.ncols = d.ncols;
    std::vector<Offset> off{0};
    std::vector<ColIndex> idx;
    std::vector<int> val;
    for (Index i = 0; i < d.nrows; ++i) {
        for (Index j = 0; j < d.ncols; ++j)
            if (d(i, j)) {
                idx.push_back(ColIndex(j));
                val.push_back(*d(i, j));
            }
        off.push_back(idx.size());
    }
    out.offsets = Array<Offset>(std::span<const Offset>(off));
    out.indices = Array<ColIndex>(std::span<const ColIndex>(idx));
    out.values = Array<int>(std::span<const int>(val));
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------- Matrix

TEST_CASE("Matrix::from_tuples combines duplicates in input order", "[objects][matrix][cpu-only]") {
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            INFO("seed " << seed << " shape " << m << "x" << n);
            auto t = random_tuples(g, m, n, std::size_t(g.uniform(0, 3 * (m * n) / 2 + 2)));
            auto a = Matrix<int>::from_tuples(m, n, t.r, t.c, t.v);  // default: plus
            check_csr_invariants(a);
            REF_REQUIRE_SAME(ref::to_dense(a), brute_build(m, n, t, std::plus<int>()));
            auto b = Matrix<int>::from_tuples(m, n, t.r, t.c, t.v, second_op{});
            REF_REQUIRE_SAME(ref::to_dense(b), brute_build(m, n, t, [](int, int y) { return y; }));
            auto c = Matrix<int>::from_tuples(m, n, t.r, t.c, t.v, first_op{});
            REF_REQUIRE_SAME(ref::to_dense(c), brute_build(m, n, t, [](int x, int) { return x; }));
            auto d = Matrix<int>::from_tuples(m, n, t.r, t.c, t.v, min_op{});
            REF_REQUIRE_SAME(ref::to_dense(d), brute_build(m, n, t, [](int x, int y) { return std::min(x, y); }));
            // minus is not commutative nor associative: ((v1 - v2) - v3) pins the order down.
            auto e = Matrix<int>::from_tuples(m, n, t.r, t.c, t.v, minus_op{});
            REF_REQUIRE_SAME(ref::to_dense(e), brute_build(m, n, t, [](int x, int y) { return x - y; }));
            // A user lambda as dup, through the span overload.
            auto f = Matrix<int>::from_tuples(m, n, std::span<const Index>(t.r), std::span<const Index>(t.c),
                                              std::span<const int>(t.v), [](int x, int y) { return 2 * x + y; });
            REF_REQUIRE_SAME(ref::to_dense(f), brute_build(m, n, t, [](int x, int y) { return 2 * x + y; }));
            REQUIRE(a.nvals() == ref::to_dense(a).nvals());
        }
    }
}

TEST_CASE("Matrix::from_tuples on large inputs (parallel build) and its transpose", "[objects][matrix][large]") {
    ref::Gen g(99);
    const Index m = 3000, n = 97;
    auto t = random_tuples(g, m, n, 150000);  // about half the positions, many duplicates
    auto a = Matrix<int>::from_tuples(m, n, t.r, t.c, t.v, minus_op{});
    check_csr_invariants(a);
    const auto want = brute_build(m, n, t, [](int x, int y) { return x - y; });
    REF_REQUIRE_SAME(ref::to_dense(a), want);
    REF_REQUIRE_SAME(ref::to_dense(a.transposed()), ref::transpose(want));
    auto csc = a.export_csc();
    auto b = Matrix<int>::import_csc(m, n, std::move(csc.offsets), std::move(csc.indices), std::move(csc.values));
    REF_REQUIRE_SAME(ref::to_dense(b), want);
    // Without duplicates, through import_coo.
    std::vector<Index> r, c;
    std::vector<int> v;
    a.extract_tuples(r, c, v);
    std::vector<std::size_t> perm(r.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), g.rng);
    std::vector<Index> rs, cs;
    std::vector<int> vs;
    for (auto p : perm) {
        rs.push_back(r[p]);
        cs.push_back(c[p]);
        vs.push_back(v[p]);
    }
    REF_REQUIRE_SAME(ref::to_dense(Matrix<int>::import_coo(m, n, rs, cs, std::span<const int>(vs))), want);
    // A large vector through both storage forms.
    const Index len = 70001;
    auto ud = g.vector<int>(len, 0.3);
    auto u = ref::to_vector(ud);
    u.to_dense();
    REF_REQUIRE_SAME(ref::to_dense(u), ud);
    u.to_sparse();
    REF_REQUIRE_SAME(ref::to_dense(u), ud);
}

TEST_CASE("Matrix::from_tuples and build reject bad input", "[objects][matrix][errors]") {
    std::vector<Index> r{0, 1}, c{0, 1}, c_short{0};
    std::vector<int> v{1, 2};
    CHECK_THROWS_AS(Matrix<int>::from_tuples(2, 2, r, c_short, v), InvalidValue);
    std::vector<int> v_long{1, 2, 3};
    CHECK_THROWS_AS(Matrix<int>::from_tuples(2, 2, r, c, v_long), InvalidValue);
    std::vector<Index> r_bad{0, 2};
    CHECK_THROWS_AS(Matrix<int>::from_tuples(2, 2, r_bad, c, v), InvalidIndex);
    CHECK_THROWS_WITH(Matrix<int>::from_tuples(2, 2, r_bad, c, v), Contains("2"));
    std::vector<Index> c_bad{0, 7};
    CHECK_THROWS_AS(Matrix<int>::from_tuples(2, 2, r, c_bad, v), InvalidIndex);
    CHECK_THROWS_WITH(Matrix<int>::from_tuples(2, 2, r, c_bad, v), Contains("7"));
    Matrix<int> a(2, 2);
    a.set(1, 1, 9);
    CHECK_THROWS_AS(a.build(std::span<const Index>(r_bad), std::span<const Index>(c), std::span<const int>(v)),
                    InvalidIndex);
    CHECK(a.nvals() == 1);  // a failed build leaves the matrix alone
    CHECK(a.get(1, 1) == 9);
}

TEST_CASE("Matrix::build replaces the contents and keeps the dimensions", "[objects][matrix]") {
    ref::Gen g(42);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        auto d0 = g.matrix<int>(m, n, 0.3);
        auto a = ref::to_matrix(d0);
        (void)a.transposed();
        auto t = random_tuples(g, m, n, std::size_t(m * n / 2 + 1));
        a.build(std::span<const Index>(t.r), std::span<const Index>(t.c), std::span<const int>(t.v), max_op{});
        REQUIRE(a.nrows() == m);
        REQUIRE(a.ncols() == n);
        REF_REQUIRE_SAME(ref::to_dense(a), brute_build(m, n, t, [](int x, int y) { return std::max(x, y); }));
        REF_REQUIRE_SAME(ref::to_dense(a.transposed()), ref::transpose(ref::to_dense(a)));
    }
}

TEST_CASE("Matrix::extract_tuples is row-major with sorted columns", "[objects][matrix]") {
    ref::Gen g(7);
    for (auto [m, n] : g.shapes()) {
        auto d = g.matrix<double>(m, n, 0.4, true);
        auto a = ref::to_matrix(d);
        std::vector<Index> r, c, r2, c2;
        std::vector<double> v, v2;
        a.extract_tuples(r, c, v);
        REQUIRE(r.size() == a.nvals());
        std::size_t k = 0;
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j)
                if (d(i, j)) {
                    REQUIRE(k < r.size());
                    CHECK(r[k] == i);
                    CHECK(c[k] == j);
                    CHECK(v[k] == *d(i, j));
                    ++k;
                }
        REQUIRE(k == r.size());
        // export_coo gives the same tuples; extract_tuples overwrites non-empty outputs.
        r2 = {9, 9, 9};
        c2 = {9};
        a.export_coo(r2, c2, v2);
        CHECK(r2 == r);
        CHECK(c2 == c);
        CHECK(v2 == v);
    }
}

TEST_CASE("Matrix get, set, remove and contains against the reference", "[objects][matrix]") {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            if (m == 0 || n == 0) continue;
            INFO("seed " << seed << " shape " << m << "x" << n);
            auto d = g.matrix<int>(m, n, 0.2);
            auto a = ref::to_matrix(d);
            for (int step = 0; step < 200; ++step) {
                Index i = g.uniform(0, m - 1), j = g.uniform(0, n - 1);
                switch (g.uniform(0, 3)) {
                    case 0: {
                        int v = int(g.uniform(0, 100));
                        a.set(i, j, v);
                        d(i, j) = v;
                        break;
                    }
                    case 1:
                        a.remove(i, j);
                        d(i, j).reset();
                        break;
                    default:
                        REQUIRE(a.get(i, j) == d(i, j));
                        REQUIRE(a.contains(i, j) == d(i, j).has_value());
                }
                REQUIRE(a.nvals() == d.nvals());
            }
            check_csr_invariants(a);
            REF_REQUIRE_SAME(ref::to_dense(a), d);
        }
    }
}

TEST_CASE("Matrix element access out of range throws InvalidIndex naming the index", "[objects][matrix][errors]") {
    Matrix<int> a(3, 5);
    a.set(2, 4, 1);
    CHECK_THROWS_AS(a.get(3, 0), InvalidIndex);
    CHECK_THROWS_WITH(a.get(3, 0), Contains("(3, 0)"));
    CHECK_THROWS_AS(a.get(0, 5), InvalidIndex);
    CHECK_THROWS_WITH(a.set(0, 17, 1), Contains("17"));
    CHECK_THROWS_AS(a.set(0, 17, 1), InvalidIndex);
    CHECK_THROWS_AS(a.remove(12345, 0), InvalidIndex);
    CHECK_THROWS_WITH(a.remove(12345, 0), Contains("12345"));
    CHECK_THROWS_AS(a.contains(3, 5), InvalidIndex);
    CHECK(a.nvals() == 1);
    Matrix<int> e;
    CHECK(e.nrows() == 0);
    CHECK(e.ncols() == 0);
    CHECK(e.nvals() == 0);
    CHECK_THROWS_AS(e.get(0, 0), InvalidIndex);
}

TEST_CASE("Matrix::dup is an independent copy", "[objects][matrix]") {
    ref::Gen g(3);
    auto d = g.matrix<int>(9, 11, 0.3);
    auto a = ref::to_matrix(d);
    auto b = a.dup();
    REF_REQUIRE_SAME(ref::to_dense(b), d);
    b.set(0, 0, 99);
    b.remove(8, 10);
    REF_REQUIRE_SAME(ref::to_dense(a), d);
    a.set(1, 1, -5);
    CHECK(b.get(1, 1) == d(1, 1));
    Matrix<int> c = a;  // copy construction is a deep copy too
    c.set(2, 2, 77);
    CHECK(a.get(2, 2) == d(2, 2));
}

TEST_CASE("Matrix::resize drops entries outside and grows empty", "[objects][matrix]") {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        ref::Gen g(seed);
        for (auto [m, n] : g.shapes()) {
            auto d = g.matrix<int>(m, n, 0.4);
            auto a = ref::to_matrix(d);
            for (int step = 0; step < 6; ++step) {
                Index m2 = g.uniform(0, m + 5), n2 = g.uniform(0, n + 5);
                INFO("seed " << seed << " " << d.nrows << "x" << d.ncols << " -> " << m2 << "x" << n2);
                (void)a.transposed();
                a.resize(m2, n2);
                ref::Dense<int> e(m2, n2);
                for (Index i = 0; i < std::min(m2, d.nrows); ++i)
                    for (Index j = 0; j < std::min(n2, d.ncols); ++j) e(i, j) = d(i, j);
                d = e;
                REQUIRE(a.nrows() == m2);
                REQUIRE(a.ncols() == n2);
                check_csr_invariants(a);
                REF_REQUIRE_SAME(ref::to_dense(a), d);
                REF_REQUIRE_SAME(ref::to_dense(a.transposed()), ref::transpose(d));
                if (m2 && n2) {  // still usable
                    a.set(m2 - 1, n2 - 1, 5);
                    d(m2 - 1, n2 - 1) = 5;
                }
            }
        }
    }
}

TEST_CASE("Matrix::clear keeps the dimensions and drops every entry", "[objects][matrix]") {
    ref::Gen g(5);
    auto a = ref::to_matrix(g.matrix<float>(13, 7, 0.5));
    REQUIRE(a.nvals() > 0);
    a.clear();
    CHECK(a.nrows() == 13);
    CHECK(a.ncols() == 7);
    CHECK(a.nvals() == 0);
    check_csr_invariants(a);
    CHECK(a.transposed().nvals() == 0);
    CHECK(a.transposed().nrows() == 7);
}

TEST_CASE("Matrix::import_csr takes the arrays without copying", "[objects][matrix][import]") {
    ref::Gen g(11);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        auto d = g.matrix<int>(m, n, 0.3);
        auto csr = csr_of(d);
        const int* vals_before = csr.values.data();
        const ColIndex* idx_before = csr.indices.data();
        const Offset* off_before = csr.offsets.data();
        auto a = Matrix<int>::import_csr(m, n, std::move(csr.offsets), std::move(csr.indices), std::move(csr.values));
        CHECK(a.storage_values().data() == vals_before);
        CHECK(a.storage_indices().data() == idx_before);
        CHECK(a.storage_offsets().data() == off_before);
        REF_REQUIRE_SAME(ref::to_dense(a), d);

        // The CsrArrays overload, and export_csr && moving them out again.
        auto csr2 = csr_of(d);
        const int* v2 = csr2.values.data();
        auto b = Matrix<int>::import_csr(std::move(csr2));
        CHECK(b.storage_values().data() == v2);
        auto out = std::move(b).export_csr();
        CHECK(out.values.data() == v2);
        CHECK(out.nrows == m);
        CHECK(out.ncols == n);
        CHECK(b.nrows() == m);  // left empty with the same dimensions
        CHECK(b.ncols() == n);
        CHECK(b.nvals() == 0);
        check_csr_invariants(b);
        auto c = Matrix<int>::import_csr(std::move(out));
        REF_REQUIRE_SAME(ref::to_dense(c), d);

        // adopt_csr: the same arrays, nvals given, nothing copied.
        auto csr3 = csr_of(d);
        const Offset nnz = csr3.offsets[m];
        const int* v3 = csr3.values.data();
        auto e = Matrix<int>::adopt_csr(m, n, nnz, std::move(csr3.offsets), std::move(csr3.indices),
                                        std::move(csr3.values));
        CHECK(e.storage_values().data() == v3);
        CHECK(e.nvals() == nnz);
        check_csr_invariants(e);
        REF_REQUIRE_SAME(ref::to_dense(e), d);
    }
}

TEST_CASE("Matrix::import_csr with check rejects broken arrays", "[objects][matrix][import][errors]") {
    auto make = [](std::vector<Offset> off, std::vector<ColIndex> idx, std::vector<int> val, Index m, Index n,
                   bool check = true) {
        return Matrix<int>::import_csr(m, n, Array<Offset>(std::span<const Offset>(off)),
                                       Array<ColIndex>(std::span<const ColIndex>(idx)),
                                       Array<int>(std::span<const int>(val)), check);
    };
    // A good one, for contrast.
    CHECK_NOTHROW(make({0, 2, 2, 3}, {0, 3, 1}, {1, 2, 3}, 3, 4));
    // Wrong number of offsets.
    CHECK_THROWS_AS(make({0, 2, 3}, {0, 3, 1}, {1, 2, 3}, 3, 4), InvalidValue);
    CHECK_THROWS_AS(make({}, {}, {}, 0, 4), InvalidValue);
    // First offset not 0.
    CHECK_THROWS_AS(make({1, 2, 2, 3}, {0, 3, 1}, {1, 2, 3}, 3, 4), InvalidValue);
    // Decreasing offsets.
    CHECK_THROWS_AS(make({0, 2, 1, 3}, {0, 3, 1}, {1, 2, 3}, 3, 4), InvalidValue);
    // Last offset disagrees with the arrays.
    CHECK_THROWS_AS(make({0, 2, 2, 4}, {0, 3, 1}, {1, 2, 3}, 3, 4), InvalidValue);
    CHECK_THROWS_AS(make({0, 2, 2, 3}, {0, 3, 1}, {1, 2}, 3, 4), InvalidValue);
    // Unsorted columns within a row.
    CHECK_THROWS_AS(make({0, 2, 2, 3}, {3, 0, 1}, {1, 2, 3}, 3, 4), InvalidValue);
    // Duplicate column within a row.
    CHECK_THROWS_AS(make({0, 2, 2, 3}, {3, 3, 1}, {1, 2, 3}, 3, 4), InvalidValue);
    // Column out of range: InvalidIndex naming the index.
    CHECK_THROWS_AS(make({0, 2, 2, 3}, {0, 3, 4}, {1, 2, 3}, 3, 4), InvalidIndex);
    CHECK_THROWS_WITH(make({0, 2, 2, 3}, {0, 3, 9}, {1, 2, 3}, 3, 4), Contains("9"));
    // Columns that only look sorted across a row boundary are fine.
    CHECK_NOTHROW(make({0, 1, 2}, {3, 0}, {1, 2}, 2, 4));
    // Dimension limit.
    CHECK_THROWS_AS(make({0}, {}, {}, 0, max_dimension + 1), InvalidValue);
    // check = false trusts the caller.
    CHECK_NOTHROW(make({0, 2, 2, 3}, {0, 3, 1}, {1, 2, 3}, 3, 4, false));
}

TEST_CASE("Matrix::import_csc and export_csc", "[objects][matrix][import]") {
    ref::Gen g(13);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        auto d = g.matrix<int>(m, n, 0.35, true);
        auto csc = csr_of(ref::transpose(d));  // CSC of d is the CSR of dᵀ
        auto a = Matrix<int>::import_csc(m, n, std::move(csc.offsets), std::move(csc.indices), std::move(csc.values));
        REQUIRE(a.nrows() == m);
        REQUIRE(a.ncols() == n);
        check_csr_invariants(a);
        REF_REQUIRE_SAME(ref::to_dense(a), d);

        auto out = a.export_csc();
        CHECK(out.nrows == m);
        CHECK(out.ncols == n);
        REQUIRE(out.offsets.size() == n + 1);
        auto want = csr_of(ref::transpose(d));
        CHECK(std::equal(out.offsets.begin(), out.offsets.end(), want.offsets.begin(), want.offsets.end()));
        CHECK(std::equal(out.indices.begin(), out.indices.end(), want.indices.begin(), want.indices.end()));
        CHECK(std::equal(out.values.begin(), out.values.end(), want.values.begin(), want.values.end()));
        REF_REQUIRE_SAME(ref::to_dense(a), d);  // export_csc leaves A alone
    }
    // Checked like import_csr: a row index out of range is an InvalidIndex.
    CHECK_THROWS_AS(Matrix<int>::import_csc(2, 3, Array<Offset>{0, 1, 1, 2}, Array<ColIndex>{0, 2}, Array<int>{1, 2}),
                    InvalidIndex);
    CHECK_THROWS_AS(Matrix<int>::import_csc(2, 3, Array<Offset>{0, 1, 2}, Array<ColIndex>{0, 1}, Array<int>{1, 2}),
                    InvalidValue);
}

TEST_CASE("Matrix::import_coo takes tuples in any order and rejects duplicates", "[objects][matrix][import]") {
    ref::Gen g(17);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        auto d = g.matrix<int>(m, n, 0.3);
        std::vector<Index> r, c;
        std::vector<int> v;
        for (Index i = 0; i < m; ++i)
            for (Index j = 0; j < n; ++j)
                if (d(i, j)) {
                    r.push_back(i);
                    c.push_back(j);
                    v.push_back(*d(i, j));
                }
        // Shuffle the tuples.
        std::vector<std::size_t> perm(r.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), g.rng);
        std::vector<Index> rs, cs;
        std::vector<int> vs;
        for (auto p : perm) {
            rs.push_back(r[p]);
            cs.push_back(c[p]);
            vs.push_back(v[p]);
        }
        auto a = Matrix<int>::import_coo(m, n, rs, cs, std::span<const int>(vs));
        check_csr_invariants(a);
        REF_REQUIRE_SAME(ref::to_dense(a), d);
        if (!rs.empty()) {
            rs.push_back(rs[0]);
            cs.push_back(cs[0]);
            vs.push_back(vs[0]);  // same value: still a duplicate
            CHECK_THROWS_AS(Matrix<int>::import_coo(m, n, rs, cs, std::span<const int>(vs)), InvalidValue);
        }
    }
    std::vector<Index> r{0}, c{3};
    std::vector<int> v{1};
    CHECK_THROWS_AS(Matrix<int>::import_coo(2, 3, r, c, std::span<const int>(v)), InvalidIndex);
}

TEST_CASE("Matrix::export_csr: && moves out, const& copies", "[objects][matrix][export]") {
    ref::Gen g(19);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        auto d = g.matrix<double>(m, n, 0.3);
        auto a = ref::to_matrix(d);
        const auto& ca = a;
        auto copy = ca.export_csr();
        REF_REQUIRE_SAME(ref::to_dense(a), d);  // untouched
        if (a.nvals()) CHECK(copy.values.data() != a.storage_values().data());
        auto want = ref::to_dense(a);
        const double* before = a.storage_values().data();
        auto moved = std::move(a).export_csr();
        if (moved.values.size()) CHECK(moved.values.data() == before);
        CHECK(a.nvals() == 0);
        CHECK(a.nrows() == m);
        CHECK(a.ncols() == n);
        // Both describe d.
        for (auto* arr : {&copy, &moved}) {
            REQUIRE(arr->offsets.size() == m + 1);
            auto back = Matrix<double>::import_csr(m, n, Array<Offset>(arr->offsets), Array<ColIndex>(arr->indices),
                                                   Array<double>(arr->values));
            REF_REQUIRE_SAME(ref::to_dense(back), want);
        }
    }
}

TEST_CASE("Matrix::transposed is cached and dropped on change", "[objects][matrix][transpose]") {
    ref::Gen g(23);
    for (auto [m, n] : g.shapes()) {
        INFO(m << "x" << n);
        auto d = g.matrix<int>(m, n, 0.3);
        auto a = ref::to_matrix(d);
        CHECK_FALSE(a.has_cached_transpose());
        const Matrix<int>& t1 = a.transposed();
        CHECK(a.has_cached_transpose());
        CHECK(&a.transposed() == &t1);  // cached: same object
        check_csr_invariants(t1);
        REF_REQUIRE_SAME(ref::to_dense(t1), ref::transpose(d));
        if (m == 0 || n == 0) continue;

        // set on a new entry, on an existing entry, remove: each drops the cache and the next transposed() sees it.
        Index i = g.uniform(0, m - 1), j = g.uniform(0, n - 1);
        a.set(i, j, 1000);
        d(i, j) = 1000;
        CHECK_FALSE(a.has_cached_transpose());
        REF_REQUIRE_SAME(ref::to_dense(a.transposed()), ref::transpose(d));
        a.set(i, j, 2000);
        d(i, j) = 2000;
        CHECK_FALSE(a.has_cached_transpose());
        CHECK(a.transposed().get(j, i) == 2000);
        a.remove(i, j);
        d(i, j).reset();
        CHECK_FALSE(a.has_cached_transpose());
        REF_REQUIRE_SAME(ref::to_dense(a.transposed()), ref::transpose(d));
        // Writing through the backend accessors drops it too.
        if (a.nvals()) {
            (void)a.transposed();
            const int x = -77;  // copy_from: the array may live on the GPU
            a.values_mut().copy_from(&x, Context::cpu(), 1);
            CHECK_FALSE(a.has_cached_transpose());
            REF_REQUIRE_SAME(ref::to_dense(a.transposed()), ref::transpose(ref::to_dense(a)));
        }
        // clear
        (void)a.transposed();
        a.clear();
        CHECK(a.transposed().nvals() == 0);
        // A copy made while cached does not see the original's later changes.
        auto b = ref::to_matrix(d);
        (void)b.transposed();
        auto b2 = b.dup();
        b.set(i, j, 5);
        CHECK(b.transposed().get(j, i) == 5);
        CHECK(b2.transposed().get(j, i) == d(i, j));
    }
}

TEST_CASE("Matrix dimensions are limited to 2^32", "[objects][matrix][errors]") {
    CHECK_THROWS_AS(Matrix<int>(max_dimension + 1, 1), InvalidValue);
    CHECK_THROWS_AS(Matrix<int>(1, max_dimension + 1), InvalidValue);
    CHECK_THROWS_WITH(Matrix<int>(1, max_dimension + 1), Contains("2^32"));
    CHECK_NOTHROW(Matrix<int>(1, max_dimension));  // exactly 2^32 columns is allowed
    std::vector<Index> e;
    std::vector<int> ev;
    CHECK_THROWS_AS(Matrix<int>::from_tuples(max_dimension + 1, 1, e, e, ev), InvalidValue);
    CHECK_THROWS_AS(Matrix<int>::import_coo(1, max_dimension + 1, e, e, std::span<const int>(ev)), InvalidValue);
    Matrix<int> a(2, 2);
    CHECK_THROWS_AS(a.resize(2, max_dimension + 1), InvalidValue);
    CHECK(a.ncols() == 2);
    CHECK_THROWS_AS(Vector<int>(max_dimension + 1), InvalidValue);
    CHECK_NOTHROW(Vector<int>(max_dimension));
    CHECK_THROWS_AS(Vector<int>::from_tuples(max_dimension + 1, e, ev), InvalidValue);
    Vector<int> u(3);
    CHECK_THROWS_AS(u.resize(max_dimension + 1), InvalidValue);
    CHECK_THROWS_AS(DenseMatrix<int>(max_dimension + 1, 0), InvalidValue);
    // An entry in the last column of a 2^32-column matrix: the column index fits 32 bits.
    Matrix<int> wide(1, max_dimension);
    wide.set(0, max_dimension - 1, 4);
    CHECK(wide.get(0, max_dimension - 1) == 4);
    CHECK_THROWS_AS(wide.get(0, max_dimension), InvalidIndex);
}

// Moved-from objects stay valid (they may be reassigned, destroyed or queried): their arrays must still
// agree with their dimensions and entry count.
TEST_CASE("moved-from Matrix and Vector keep their invariants", "[objects][move]") {
    ref::Gen g(29);
    auto a = ref::to_matrix(g.matrix<int>(5, 4, 0.5));
    Matrix<int> b = std::move(a);
    CHECK(b.nrows() == 5);
    CHECK(a.storage_offsets().size() == a.nrows() + 1);
    a = Matrix<int>(2, 2);  // reassigning works whatever the state
    CHECK(a.nvals() == 0);

    auto u = ref::to_vector(g.vector<int>(20, 0.5));
    REQUIRE(u.nvals() > 0);
    Vector<int> w = std::move(u);
    CHECK(w.size() == 20);
    CHECK(u.nvals() <= (u.is_dense() ? u.storage_bitmap().size() : u.storage_indices().size()));
}

TEST_CASE("An empty matrix: offsets written when first read, whatever reads them", "[objects][matrix]") {
    const auto zero_offsets = [](const Matrix<float>& m, Index rows) {
        const Matrix<float> h = m.to(Context::cpu());
        REQUIRE(h.nrows() == rows);
        REQUIRE(h.nvals() == 0);
        REQUIRE(h.row_offsets().size() == rows + 1);
        for (Offset o : h.row_offsets()) REQUIRE(o == 0);
    };
    zero_offsets(Matrix<float>(7, 5), 7);  // copied out before anything read them
    Matrix<float> a(9, 4);
    REQUIRE(a.storage_offsets().size() == 10);
    check_csr_invariants(a);
    zero_offsets(a, 9);
    Matrix<float> grown(6, 3);
    grown.resize(11, 3);
    check_csr_invariants(grown);
    zero_offsets(grown, 11);
    Matrix<float> copied(5, 5);
    const Matrix<float> copy = copied;
    check_csr_invariants(copy);
    check_csr_invariants(copied);
    CsrArrays<float> out = Matrix<float>(4, 2).export_csr();
    REQUIRE(out.offsets.size() == 5);
    REQUIRE(out.offsets.to(Context::cpu())[4] == 0);
    Matrix<float> set(3, 3);
    set.set(2, 1, 4.5f);
    REQUIRE(set.nvals() == 1);
    REQUIRE(set.get(2, 1).value() == 4.5f);
    REQUIRE(set.storage_offsets().size() == 4);
    const Matrix<float> t = Matrix<float>(8, 3).transposed_copy();
    CHECK(t.nrows() == 3);
    zero_offsets(t, 3);
    std::vector<Index> r, c;
    std::vector<float> v;
    Matrix<float>(6, 6).extract_tuples(r, c, v);
    CHECK(r.empty());
    Matrix<float> moved_to = std::move(a);  // a moved-from matrix: 0 x 0, its one offset written when read
    CHECK(moved_to.nrows() == 9);
    CHECK(a.nrows() == 0);
    CHECK(a.storage_offsets().size() == 1);
    zero_offsets(a, 0);
    // Threads reading one matrix's offsets for the first time all see the same array; threads copying it meanwhile
    // get a valid copy either way.
    const Matrix<float> shared(1000, 10);
    std::vector<const Offset*> seen(8, nullptr);
    std::vector<Matrix<float>> copies(8);
    {
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < seen.size(); ++i) {
            threads.emplace_back([&, i] { seen[i] = shared.storage_offsets().data(); });
            threads.emplace_back([&, i] { copies[i] = shared; });
        }
        for (auto& th : threads) th.join();
    }
    for (const Offset* p : seen) CHECK(p == seen[0]);
    check_csr_invariants(shared);
    for (const Matrix<float>& c : copies) zero_offsets(c, 1000);
    const Matrix<float> unread(5, 5);
    Matrix<float> assigned(2, 2);
    assigned = unread;  // copy assignment of a matrix whose offsets are not written yet
    zero_offsets(assigned, 5);
    zero_offsets(unread, 5);
    Matrix<float> move_assigned(3, 3);
    move_assigned = Matrix<float>(4, 4);
    zero_offsets(move_assigned, 4);
    Matrix<float> resized(20, 20);
    resized.resize(3, 30);  // an unread matrix shrinks and grows without its offsets
    zero_offsets(resized, 3);
    CHECK(resized.ncols() == 30);
}

// ---------------------------------------------------------------------------------------------- Vector

TEST_CASE("Vector::from_tuples combines duplicates in input order", "[objects][vector]") {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        ref::Gen g(seed);
        for (Index n : {Index(0), Index(1), Index(2), Index(7), Index(31), Index(200)}) {
            INFO("seed " << seed << " n " << n);
            auto t = random_tuples(g, 1, n, std::size_t(g.uniform(0, 2 * n)));
            auto brute = brute_build(1, n, t, [](int x, int y) { return x - y; });
            auto u = Vector<int>::from_tuples(n, t.c, t.v, minus_op{});
            REQUIRE(u.size() == n);
            REF_REQUIRE_SAME(ref::to_dense(u), ref::transpose(brute));
            auto s = Vector<int>::from_tuples(n, t.c, t.v);
            REF_REQUIRE_SAME(ref::to_dense(s), ref::transpose(brute_build(1, n, t, std::plus<int>())));
            std::vector<Index> idx;
            std::vector<int> val;
            s.extract_tuples(idx, val);
            CHECK(std::is_sorted(idx.begin(), idx.end()));
            CHECK(std::adjacent_find(idx.begin(), idx.end()) == idx.end());
            CHECK(idx.size() == s.nvals());
            Vector<int> b(n);
            b.build(std::span<const Index>(t.c), std::span<const int>(t.v), second_op{});
            REF_REQUIRE_SAME(ref::to_dense(b), ref::transpose(brute_build(1, n, t, [](int, int y) { return y; })));
        }
    }
    std::vector<Index> idx{0, 5};
    std::vector<int> val{1, 2}, val1{1};
    CHECK_THROWS_AS(Vector<int>::from_tuples(5, idx, val), InvalidIndex);
    CHECK_THROWS_WITH(Vector<int>::from_tuples(5, idx, val), Contains("5"));
    CHECK_THROWS_AS(Vector<int>::from_tuples(6, idx, val1), InvalidValue);
}

TEST_CASE("Vector::from_tuples with more indices than values, or fewer, names both counts",
          "[objects][vector][errors]") {
    std::vector<Index> idx{0, 3, 4};
    std::vector<double> two{1, 2}, four{1, 2, 3, 4};
    CHECK_THROWS_AS(Vector<double>::from_tuples(5, idx, two), InvalidValue);
    CHECK_THROWS_WITH(Vector<double>::from_tuples(5, idx, two),
                      Contains("3 indices and 2 values") && !Contains("row") && !Contains("column"));
    CHECK_THROWS_WITH(Vector<double>::from_tuples(5, idx, four),
                      Contains("3 indices and 4 values") && !Contains("row") && !Contains("column"));
    Vector<double> v(5);
    v.set(1, 7.0);
    CHECK_THROWS_WITH(v.build(std::span<const Index>(idx), std::span<const double>(two)),
                      Contains("3 indices and 2 values"));
    CHECK(v.get(1) == 7.0);  // a failed build leaves the vector alone
}

TEST_CASE("Vector::full, get, set, remove and the two storage forms", "[objects][vector]") {
    auto f = Vector<double>::full(6, 2.5);
    CHECK(f.size() == 6);
    CHECK(f.nvals() == 6);
    for (Index i = 0; i < 6; ++i) CHECK(f.get(i) == 2.5);
    CHECK(Vector<int>::full(0, 1).nvals() == 0);

    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        ref::Gen g(seed);
        for (Index n : {Index(1), Index(2), Index(9), Index(64), Index(300)}) {
            INFO("seed " << seed << " n " << n);
            auto d = g.vector<int>(n, g.real() * 0.5);
            auto u = ref::to_vector(d);
            for (int step = 0; step < 150; ++step) {
                Index i = g.uniform(0, n - 1);
                switch (g.uniform(0, 5)) {
                    case 0: {
                        int v = int(g.uniform(0, 50));
                        u.set(i, v);
                        d(i, 0) = v;
                        break;
                    }
                    case 1:
                        u.remove(i);
                        d(i, 0).reset();
                        break;
                    case 2:
                        u.to_dense();
                        CHECK(u.is_dense());
                        break;
                    case 3:
                        u.to_sparse();
                        CHECK_FALSE(u.is_dense());
                        break;
                    default:
                        REQUIRE(u.get(i) == d(i, 0));
                        REQUIRE(u.contains(i) == d(i, 0).has_value());
                }
                REQUIRE(u.nvals() == d.nvals());
            }
            REF_REQUIRE_SAME(ref::to_dense(u), d);
            // Storage conversions keep the meaning, both ways, and are idempotent.
            auto v = u.dup();
            v.to_dense();
            v.to_dense();
            REF_REQUIRE_SAME(ref::to_dense(v), d);
            CHECK(v.nvals() == d.nvals());
            v.to_sparse();
            v.to_sparse();
            REF_REQUIRE_SAME(ref::to_dense(v), d);
            CHECK(v.nvals() == d.nvals());
            CHECK(v.storage_indices().size() == d.nvals());
            // dup is independent.
            v.set(0, 12345);
            REF_REQUIRE_SAME(ref::to_dense(u), d);
            // clear keeps the size.
            v.clear();
            CHECK(v.size() == n);
            CHECK(v.nvals() == 0);
        }
    }
    Vector<int> w(4);
    CHECK_THROWS_AS(w.get(4), InvalidIndex);
    CHECK_THROWS_WITH(w.get(4), Contains("4"));
    CHECK_THROWS_AS(w.set(99, 1), InvalidIndex);
    CHECK_THROWS_WITH(w.set(99, 1), Contains("99"));
    CHECK_THROWS_AS(w.remove(4), InvalidIndex);
    CHECK_THROWS_AS(w.contains(10), InvalidIndex);
    CHECK(w.nvals() == 0);
}

TEST_CASE("get(i).value() on a missing entry throws NoValue naming the entry", "[objects][errors]") {
    Vector<int> u(9);
    u.set(2, 5);
    for (bool dense : {false, true}) {
        INFO((dense ? "dense" : "sparse") << " storage");
        if (dense) u.to_dense();
        CHECK(u.get(2).value() == 5);
        CHECK_THROWS_AS(u.get(5).value(), NoValue);
        CHECK_THROWS_WITH(u.get(5).value(), "the vector has no entry at index 5");
    }
    Matrix<double> a(3, 4);
    a.set(1, 1, 2.5);
    CHECK(a.get(1, 1).value() == 2.5);
    CHECK_THROWS_AS(a.get(2, 3).value(), NoValue);
    CHECK_THROWS_WITH(a.get(2, 3).value(), "the matrix has no entry at (2, 3)");
    CHECK_THROWS_AS(a.get(2, 3).value(), Error);
    Scalar<double> s;
    CHECK_THROWS_AS(s.value(), NoValue);

    // The optional's interface stays: tests, dereference, value_or, comparisons, conversion.
    const auto none = a.get(2, 3), some = a.get(1, 1);
    CHECK(!none);
    CHECK_FALSE(none.has_value());
    CHECK(none.value_or(-1.0) == -1.0);
    CHECK(none == std::nullopt);
    CHECK(some);
    CHECK(*some == 2.5);
    CHECK(some.value_or(-1.0) == 2.5);
    CHECK(some == 2.5);
    CHECK(some != 3.0);
    const std::optional<double> empty, held(2.5);
    CHECK(none == empty);
    CHECK(empty == none);
    CHECK(some == held);
    CHECK(held == some);
    CHECK(some != empty);
    CHECK(none == a.get(0, 0));
    CHECK(some != none);
    const std::optional<int> copied = u.get(2);
    CHECK(copied == 5);
}

TEST_CASE("Vector::resize drops entries beyond the new size and grows empty", "[objects][vector]") {
    ref::Gen g(31);
    for (Index n : {Index(0), Index(1), Index(10), Index(100)}) {
        for (bool dense : {false, true})
        for (double density : {0.5, 1.0}) {  // dense with every entry present: the GPU resizes it in place
            auto d = g.vector<int>(n, density);
            auto u = ref::to_vector(d);
            if (dense) u.to_dense();
            for (int step = 0; step < 5; ++step) {
                Index n2 = g.uniform(0, n + 20);
                INFO(d.nrows << " -> " << n2 << (dense ? " dense" : " sparse") << ", " << u.nvals() << " present");
                u.resize(n2);
                ref::Dense<int> e(n2, 1);
                for (Index i = 0; i < std::min(n2, d.nrows); ++i) e(i, 0) = d(i, 0);
                d = e;
                REQUIRE(u.size() == n2);
                REQUIRE(u.nvals() == d.nvals());
                REF_REQUIRE_SAME(ref::to_dense(u), d);
                if (n2) {
                    u.set(n2 - 1, 3);
                    d(n2 - 1, 0) = 3;
                }
            }
        }
    }
}

TEST_CASE("Vector::import_sparse and import_dense", "[objects][vector][import]") {
    // Sparse, zero-copy.
    Array<Index> idx{1, 4, 6};
    Array<double> val{1.5, -2, 3};
    const double* p = val.data();
    auto u = Vector<double>::import_sparse(8, std::move(idx), std::move(val));
    CHECK_FALSE(u.is_dense());
    CHECK(u.storage_values().data() == p);
    CHECK(u.nvals() == 3);
    CHECK(u.get(4) == -2.0);
    CHECK_FALSE(u.get(5).has_value());
    // Checks.
    CHECK_THROWS_AS(Vector<int>::import_sparse(8, Array<Index>{1, 4}, Array<int>{1}), InvalidValue);
    CHECK_THROWS_AS(Vector<int>::import_sparse(8, Array<Index>{1, 8}, Array<int>{1, 2}), InvalidIndex);
    CHECK_THROWS_WITH(Vector<int>::import_sparse(8, Array<Index>{1, 80}, Array<int>{1, 2}), Contains("80"));
    CHECK_THROWS_AS(Vector<int>::import_sparse(8, Array<Index>{4, 1}, Array<int>{1, 2}), InvalidValue);
    CHECK_THROWS_AS(Vector<int>::import_sparse(8, Array<Index>{4, 4}, Array<int>{1, 2}), InvalidValue);
    CHECK_NOTHROW(Vector<int>::import_sparse(0, Array<Index>{}, Array<int>{}));

    // Dense, zero-copy, with and without a bitmap; a nonzero bitmap byte means present.
    Array<int> dv{5, 6, 7, 8};
    const int* dp = dv.data();
    auto w = Vector<int>::import_dense(4, std::move(dv), Array<std::uint8_t>{1, 0, 2, 0});
    CHECK(w.is_dense());
    CHECK(w.storage_values().data() == dp);
    CHECK(w.nvals() == 2);
    CHECK(w.get(0) == 5);
    CHECK_FALSE(w.get(1).has_value());
    CHECK(w.get(2) == 7);
    std::vector<Index> ti;
    std::vector<int> tv;
    w.extract_tuples(ti, tv);
    CHECK(ti == std::vector<Index>{0, 2});
    CHECK(tv == std::vector<int>{5, 7});
    w.to_sparse();
    CHECK(w.storage_indices().size() == 2);
    CHECK(w.get(2) == 7);
    auto full = Vector<int>::import_dense(3, Array<int>{1, 2, 3});
    CHECK(full.nvals() == 3);
    CHECK(full.get(1) == 2);
    CHECK_THROWS_AS(Vector<int>::import_dense(4, Array<int>{1, 2, 3}), InvalidValue);
    CHECK_THROWS_AS(Vector<int>::import_dense(3, Array<int>{1, 2, 3}, Array<std::uint8_t>{1, 1}), InvalidValue);
    CHECK_NOTHROW(Vector<int>::import_dense(0, Array<int>{}));
}

// ---------------------------------------------------------------------------------------------- DenseMatrix

// On the CUDA backend the host views of a GPU object refuse (reading device memory on the host would crash);
// copying the object to the CPU first works. On the CPU backend the views are plain host memory.
TEST_CASE("host views of a GPU object are refused with a message", "[objects]") {
    using Catch::Matchers::Contains;
    Matrix<int> a = Matrix<int>::from_tuples(2, 3, std::vector<Index>{0, 1}, std::vector<Index>{2, 0},
                                             std::vector<int>{5, 6});
    Vector<int> u = Vector<int>::from_tuples(4, std::vector<Index>{1}, std::vector<int>{9});
    DenseMatrix<int> x(2, 2, 3);
    if (!a.context().is_cuda()) {
        CHECK(a.values().size() == 2);
        CHECK(u.indices().size() == 1);
        CHECK(x(1, 1) == 3);
        return;
    }
    CHECK_THROWS_WITH(a.row_offsets(), Contains("Matrix::row_offsets") && Contains("lives on the GPU"));
    CHECK_THROWS_AS(a.col_indices(), InvalidValue);
    CHECK_THROWS_AS(a.values(), InvalidValue);
    CHECK_THROWS_AS(u.indices(), InvalidValue);
    CHECK_THROWS_AS(u.values(), InvalidValue);
    CHECK_THROWS_WITH(x(0, 0), Contains("DenseMatrix::operator()"));
    CHECK_THROWS_AS(x.data(), InvalidValue);
    CHECK_THROWS_AS(x.row(1), InvalidValue);
    const Matrix<int> ah = a.to(Context::cpu());
    CHECK(ah.values()[0] == 5);
    CHECK(u.to(Context::cpu()).values()[0] == 9);
    CHECK(x.to(Context::cpu())(1, 0) == 3);
}

TEST_CASE("DenseMatrix construction, access and import_row_major", "[objects][dense]") {
    DenseMatrix<float> a(3, 4, 1.5f, Context::cpu());
    CHECK(a.nrows() == 3);
    CHECK(a.ncols() == 4);
    CHECK(a.data().size() == 12);
    CHECK(a(2, 3) == 1.5f);
    a(1, 2) = 7;
    CHECK(a.row(1)[2] == 7);
    CHECK(a.data()[1 * 4 + 2] == 7);
    a.fill(-1);
    CHECK(a(1, 2) == -1);

    Array<int> data{1, 2, 3, 4, 5, 6};
    const int* p = data.data();
    auto b = DenseMatrix<int>::import_row_major(2, 3, std::move(data));
    CHECK(b.data().data() == p);  // no copy
    CHECK(b(0, 2) == 3);
    CHECK(b(1, 0) == 4);
    auto back = std::move(b).release();
    CHECK(back.data() == p);
    CHECK(back.size() == 6);
    CHECK(b.nrows() == 0);
    CHECK_THROWS_AS(DenseMatrix<int>::import_row_major(2, 3, Array<int>{1, 2, 3, 4, 5}), InvalidValue);
    CHECK_THROWS_AS(DenseMatrix<int>::import_row_major(2, 3, Array<int>{1, 2, 3, 4, 5, 6, 7}), InvalidValue);
    CHECK_NOTHROW(DenseMatrix<int>::import_row_major(0, 5, Array<int>{}));
    DenseMatrix<int> e;
    CHECK(e.nrows() == 0);
    CHECK(e.data().empty());
}

// ---------------------------------------------------------------------------------------------- Array

#if !defined(__SANITIZE_ADDRESS__)
namespace {
char* volatile allocation_sink = nullptr;
}
#endif

TEST_CASE("Array basics", "[objects][array]") {
    Array<int> e;
    CHECK(e.empty());
    CHECK(e.size() == 0);
    Array<int> a(5, 3);
    CHECK(a.size() == 5);
    CHECK(std::all_of(a.begin(), a.end(), [](int x) { return x == 3; }));
    Array<int> b{1, 2, 3, 4};
    CHECK(b[2] == 3);
    CHECK(b.span().size() == 4);
    Array<int> c = b;  // deep copy
    c[0] = 100;
    CHECK(b[0] == 1);
    CHECK(c.data() != b.data());
    const int* p = c.data();
    Array<int> d = std::move(c);
    CHECK(d.data() == p);
    CHECK(c.size() == 0);
    CHECK(c.empty());
    d = b;  // copy assignment
    CHECK(d[0] == 1);
    d = d;  // self-assignment
    CHECK(d.size() == 4);
    CHECK(d[3] == 4);
    d.resize(2);  // keeps the prefix
    CHECK(d.size() == 2);
    CHECK(d[1] == 2);
    d.resize(6);
    CHECK(d.size() == 6);
    CHECK(d[0] == 1);
    CHECK(d[1] == 2);
    auto up = d.release();
    CHECK(d.size() == 0);
    Array<int> f(std::move(up), 6);
    CHECK(f[1] == 2);
    f.clear();
    CHECK(f.empty());
    std::vector<double> src{0.5, 1.5};
    Array<double> g{std::span<const double>(src)};
    CHECK(g.size() == 2);
    CHECK(g[1] == 1.5);
    const Array<std::uint32_t> seq = Array<std::uint32_t>::iota(5);
    CHECK(std::vector<std::uint32_t>(seq.begin(), seq.end()) == std::vector<std::uint32_t>{0, 1, 2, 3, 4});
    CHECK(Array<int>::iota(0).empty());
    // In the default context (the GPU's on the CUDA backend), 0..n-1 for 4- and 8-byte integers.
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(70001)}) {
        const Array<std::uint64_t> wide = Array<std::uint64_t>::iota(n, default_context()).to(Context::cpu());
        const Array<std::int32_t> narrow = Array<std::int32_t>::iota(n, default_context()).to(Context::cpu());
        REQUIRE(wide.size() == n);
        REQUIRE(narrow.size() == n);
        for (std::size_t i = 0; i < n; ++i) {
            REQUIRE(wide[i] == i);
            REQUIRE(narrow[i] == std::int32_t(i));
        }
    }
    Array<bool> bits(3, true);  // bool by address works (std::vector<bool> could not)
    bool* bp = bits.data();
    bp[1] = false;
    CHECK(bits[0]);
    CHECK_FALSE(bits[1]);
    // An impossible allocation is an OutOfMemory, which says how much was asked for. (AddressSanitizer aborts
    // on such a request instead of failing it, so the check is left out of sanitizer builds.)
#if !defined(__SANITIZE_ADDRESS__)
    try {
        Array<char> huge(std::size_t(1) << 60);
        allocation_sink = huge.data();  // keeps the compiler from eliding the allocation
        FAIL("allocation of 2^60 bytes succeeded");
    } catch (const OutOfMemory& ex) {
        CHECK(ex.bytes() == (std::size_t(1) << 60));
        CHECK_THAT(std::string(ex.what()), Contains("out of memory"));
    }
#endif
}

// ---------------------------------------------------------------------------------------------- errors

TEST_CASE("error classes derive from hybla::Error", "[objects][errors]") {
    STATIC_REQUIRE(std::is_base_of_v<Error, DimensionMismatch>);
    STATIC_REQUIRE(std::is_base_of_v<Error, InvalidIndex>);
    STATIC_REQUIRE(std::is_base_of_v<Error, InvalidValue>);
    STATIC_REQUIRE(std::is_base_of_v<Error, NoValue>);
    STATIC_REQUIRE(std::is_base_of_v<Error, OutOfMemory>);
    STATIC_REQUIRE(std::is_base_of_v<Error, IoError>);
    STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, Error>);
    // Caught through the base class.
    Matrix<int> a(2, 2);
    CHECK_THROWS_AS(a.get(5, 5), Error);
    CHECK_THROWS_AS(Matrix<int>(max_dimension + 1, 0), Error);

    IoError io("graph.mtx", 17, "expected 3 fields");
    CHECK(io.file() == "graph.mtx");
    CHECK(io.line() == 17);
    CHECK(io.reason() == "expected 3 fields");
    CHECK(std::string(io.what()) == "graph.mtx:17: expected 3 fields");
    IoError no_line("missing.bin", 0, "cannot open");
    CHECK(no_line.line() == 0);
    CHECK(std::string(no_line.what()) == "missing.bin: cannot open");
    try {
        throw IoError("f", 2, "r");
    } catch (const Error& e) {
        CHECK(std::string(e.what()) == "f:2: r");
    }
    OutOfMemory oom("buffer", 1024);
    CHECK(oom.bytes() == 1024);
    CHECK_THAT(std::string(oom.what()), Contains("1024"));
    CHECK_THAT(std::string(oom.what()), Contains("buffer"));
}
