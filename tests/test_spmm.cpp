// SpMM, C accum= op(A) ⊕.⊗ op(B) with A sparse and B, C dense (the SpMM overload of engine/mxm.hpp), against a
// host reference computed row by row (in double for float and double, in the value type for the others). Rows of
// A without entries give the add monoid's identity.
//
// The cases aim at the edges of the GPU kernel HP-SpMM (engine/cuda/spmm/): every group of lanes gets an equal
// share of A's entries across row boundaries (a hub row is split over many shares whose partial results a second
// kernel combines in order; a share holds the end of one row, whole rows and the start of the next, or only part
// of one row), the lanes per entry are sized to the width K (1 to 32 lanes; 16-byte vector loads for float and
// double when K is a multiple of 4 floats or 2 doubles; up to 4 vectors a lane, then panels of columns), and the
// identity of empty rows is written by a separate pass that is skipped when the accumulator is the add monoid's own
// operator (x ⊕ 0 = x). Shapes: hub rows of 20,000 to 100,000 entries among power-law rows, rows of lengths around
// powers of two at several alignments, uniform rows, a few entries over 200,003 rows, matrices without entries,
// 0 rows, 0 inner dimension, K = 0, 1x1.
//
// Values (hashed from the position, so that operands of millions of entries cost little): float operands are
// quarters in [-4, 4], so every partial sum these tests form is exact in float in any order and the float
// tolerance (1e-4 relative) covers only the reference's double; double operands are reals in [-1, 1) with full
// mantissas (a double product summed in float would miss the 1e-10 tolerance); integers and booleans, and every
// monoid other than plus on float and double, are compared exactly. Each check also requires the reference to
// differ from what empty rows give and from C's starting values somewhere, so that no case passes on a kernel
// that writes only identities or nothing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "reference.hpp"
#include "scoped_env.hpp"

using namespace hybla;
using hybla_test::EnvGuard;
using ref::Index;

namespace {

// ---------------------------------------------------------------------------------------------------------
// Values

constexpr std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
constexpr std::uint64_t hash3(std::uint64_t s, std::uint64_t i, std::uint64_t j) { return mix(mix(mix(s) ^ i) ^ j); }

// See the file's comment. Explicit zeros included (one in 33 floats, 41 doubles, 9 integers).
template <class T>
T plain(std::uint64_t h) {
    if constexpr (std::is_same_v<T, bool>) return h % 10 < 7;
    else if constexpr (std::is_same_v<T, float>) return float(int(h % 33) - 16) / 4;
    else if constexpr (std::is_same_v<T, double>) return h % 41 == 0 ? 0.0 : double(h >> 11) * 0x1p-52 - 1.0;
    else if constexpr (std::is_signed_v<T>) return T(int(h % 9) - 4);
    else return T(h % 9);
}

// The value at (row, column) of an operand.
template <class T>
using Fill = std::function<T(Index, Index)>;

template <class T>
Fill<T> plain_fill(std::uint64_t seed) {
    return [seed](Index i, Index j) { return plain<T>(hash3(seed, i, j)); };
}
// One of the given values.
template <class T>
Fill<T> pick_fill(std::uint64_t seed, std::vector<T> choices) {
    return [seed, choices](Index i, Index j) { return T(choices[hash3(seed, i, j) % choices.size()]); };
}
// plain values without zeros (0 becomes 1): for products with infinities (0 * inf is NaN).
template <class T>
Fill<T> nonzero_fill(std::uint64_t seed) {
    return [seed](Index i, Index j) {
        const T v = plain<T>(hash3(seed, i, j));
        return v == T(0) ? T(1) : v;
    };
}
// `special` at about one position in one_in, base elsewhere.
template <class T>
Fill<T> rare_fill(Fill<T> base, T special, std::uint64_t seed, std::uint64_t one_in) {
    return [=](Index i, Index j) { return hash3(seed ^ 0x5bd1e995, i, j) % one_in == 0 ? special : base(i, j); };
}
// B for the terminal-value cases (n rows): `terminal` in the columns j % 3 == 0 of about one row in 600 (several of
// a hub row's shares meet it, and some short rows), in the columns j % 3 == 1 only in B's last 8 rows (a hub row's
// last entries: only its last share reaches it); base elsewhere (columns j % 3 == 2 never reach it).
template <class T>
Fill<T> terminal_fill(Index n, T terminal, Fill<T> base, std::uint64_t seed) {
    return [=](Index x, Index j) {
        if (j % 3 == 0 && mix(seed ^ x) % 600 == 0) return terminal;
        if (j % 3 == 1 && x + 8 >= n) return terminal;
        return base(x, j);
    };
}

template <class T>
std::string type_name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, double>) return "double";
    else return (std::is_signed_v<T> ? "int" : "uint") + std::to_string(8 * sizeof(T));
}

// ---------------------------------------------------------------------------------------------------------
// Operands

// op(A) in CSR, each row's columns increasing: what the reference reads. The Matrix handed to mxm is built from
// it (transposed, with transpose_a, when the case asks).
template <class T>
struct Sparse {
    Index m = 0, n = 0;
    std::vector<std::size_t> ptr{0};
    std::vector<Index> col;
    std::vector<T> val;
    Index nnz() const { return col.size(); }
    Index length(Index i) const { return ptr[i + 1] - ptr[i]; }
    Index longest() const {
        Index l = 0;
        for (Index i = 0; i < m; ++i) l = std::max(l, length(i));
        return l;
    }
    Index empty_rows() const {
        Index e = 0;
        for (Index i = 0; i < m; ++i) e += length(i) == 0;
        return e;
    }
};

// Rows of the given lengths (at most n each) over n columns, the columns of each row chosen at random (Floyd's
// sampling, of the complement for rows over half full).
template <class T>
Sparse<T> sparse(Index n, const std::vector<Index>& lengths, std::uint64_t seed, const Fill<T>& fill) {
    Sparse<T> a;
    a.m = lengths.size();
    a.n = n;
    std::mt19937_64 rng(seed);
    std::unordered_set<Index> pick;
    std::vector<Index> cols;
    auto floyd = [&](Index count) {
        pick.clear();
        for (Index j = n - count; j < n; ++j) {
            const Index t = std::uniform_int_distribution<Index>(0, j)(rng);
            if (!pick.insert(t).second) pick.insert(j);
        }
    };
    for (Index i = 0; i < a.m; ++i) {
        const Index len = std::min(lengths[i], n);  // (longest() checks what the cases need)
        cols.clear();
        if (2 * len <= n) {
            floyd(len);
            cols.assign(pick.begin(), pick.end());
            std::sort(cols.begin(), cols.end());
        } else {
            floyd(n - len);
            for (Index j = 0; j < n; ++j)
                if (!pick.count(j)) cols.push_back(j);
        }
        for (Index c : cols) {
            a.col.push_back(c);
            a.val.push_back(fill(i, c));
        }
        a.ptr.push_back(a.col.size());
    }
    return a;
}

// The entries at the given (row, column) positions (no duplicates).
template <class T>
Sparse<T> at_positions(Index m, Index n, std::vector<std::pair<Index, Index>> at, const Fill<T>& fill) {
    std::sort(at.begin(), at.end());
    Sparse<T> a;
    a.m = m;
    a.n = n;
    a.ptr.assign(m + 1, 0);
    for (auto [i, j] : at) {
        if (i >= m || j >= n) FAIL("position (" << i << ", " << j << ") outside " << m << "x" << n);
        ++a.ptr[i + 1];
        a.col.push_back(j);
        a.val.push_back(fill(i, j));
    }
    for (Index i = 0; i < m; ++i) a.ptr[i + 1] += a.ptr[i];
    return a;
}

template <class T>
Matrix<T> to_matrix(const Sparse<T>& a, bool transposed) {
    std::vector<Index> r, c;
    r.reserve(a.nnz());
    c.reserve(a.nnz());
    for (Index i = 0; i < a.m; ++i)
        for (std::size_t p = a.ptr[i]; p < a.ptr[i + 1]; ++p) {
            r.push_back(i);
            c.push_back(a.col[p]);
        }
    Matrix<T> out = transposed ? Matrix<T>::from_tuples(a.n, a.m, c, r, a.val) : Matrix<T>::from_tuples(a.m, a.n, r, c, a.val);
    REQUIRE(out.nvals() == a.nnz());
    return out;
}

// A dense matrix in host memory.
template <class T>
DenseMatrix<T> dense(Index m, Index n, const Fill<T>& fill) {
    DenseMatrix<T> d(m, n, T{}, Context::cpu());
    if (m * n == 0) return d;
    T* p = d.data().data();
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) p[i * n + j] = fill(i, j);
    return d;
}
template <class T>
DenseMatrix<T> transposed(const DenseMatrix<T>& d) {
    const Index m = d.nrows(), n = d.ncols();
    DenseMatrix<T> t(n, m, T{}, Context::cpu());
    if (m * n == 0) return t;
    const T* s = d.data().data();
    T* p = t.data().data();
    for (Index i = 0; i < m; ++i)
        for (Index j = 0; j < n; ++j) p[j * m + i] = s[i * n + j];
    return t;
}

// ---------------------------------------------------------------------------------------------------------
// Row patterns (lengths per row)

// Power-law lengths: P(length >= x) = (x + 1)^-1.2, so 56% of the rows are empty and a few have hundreds of
// entries; at most cap.
std::vector<Index> power_law(Index m, Index cap, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0, 1);
    std::vector<Index> len(m);
    for (Index i = 0; i < m; ++i) {
        const double x = std::pow(1 - u(rng), -1 / 1.2);
        len[i] = Index(std::min(x, double(cap) + 1)) - 1;
    }
    return len;
}

// Skewed rows (m >= 16): power-law rows (at most 300 entries), a run of m/5 empty rows from m/2 + 3, the first and
// last rows empty, two adjacent long rows (4097 and 2500 entries: a row boundary inside a share of a long stretch)
// a third of the rows after the hub, and the hub: `hub` entries at hub_row (which may be the first or last row,
// or inside the run of empty rows). Lengths are capped at n.
std::vector<Index> skewed(Index m, Index n, Index hub, Index hub_row, std::uint64_t seed) {
    std::vector<Index> len = power_law(m, std::min<Index>(n, 300), seed);
    for (Index i = m / 2 + 3; i < std::min(m, m / 2 + 3 + m / 5); ++i) len[i] = 0;
    len[0] = len[m - 1] = 0;
    Index r = (hub_row + m / 3) % (m - 2) + 1;
    if (r == hub_row || r + 1 == hub_row) r = (r + 5) % (m - 2) + 1;
    len[r] = std::min<Index>(n, 4097);
    len[r + 1] = std::min<Index>(n, 2500);
    len[hub_row] = std::min(n, hub);
    return len;
}

std::vector<Index> uniform_lengths(Index m, Index lo, Index hi, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Index> len(m);
    for (Index i = 0; i < m; ++i) len[i] = std::uniform_int_distribution<Index>(lo, hi)(rng);
    return len;
}

// Where the hub row goes for the k-th width: first row, inside the run of empty rows, last row.
Index hub_row_for(Index m, std::size_t k) {
    const Index at[] = {0, m / 2 + 5, m - 1};
    return at[k % 3];
}

// The widths the issue names: 1 lane per entry, odd widths below a vector, a vector's multiples, one and several
// panels.
constexpr Index widths[] = {1, 3, 16, 32, 47, 64, 128, 256, 512};

// ---------------------------------------------------------------------------------------------------------
// Reference and comparison

template <class T>
constexpr double tol() {
    return std::is_same_v<T, float> ? 1e-4 : std::is_same_v<T, double> ? 1e-10 : 0.0;
}
template <class T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// Floating-point sums (the plus monoid, or an arithmetic accumulator) within tol<T>(); everything else exactly.
template <class Sr, class T, class Accum>
constexpr double tolerance() {
    if constexpr (!std::is_floating_point_v<T>) {
        return 0.0;
    } else {
        constexpr bool sums = std::is_same_v<typename Sr::add_monoid, plus_monoid> || std::is_same_v<Accum, plus_op> ||
                              std::is_same_v<Accum, minus_op> || std::is_same_v<Accum, times_op>;
        return sums ? tol<T>() : 0.0;
    }
}

template <class W>
bool same(W got, W want, double rel, double scale) {
    if constexpr (std::is_floating_point_v<W>) {
        if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
        if (std::isinf(got) || std::isinf(want)) return got == want;
        return std::abs(got - want) <= rel * std::max({1.0, std::abs(got), std::abs(want), scale});
    } else {
        return got == want;
    }
}

struct Outcome {
    std::size_t bad = 0;          // entries that differ from the reference
    std::string first;            // the first of them
    std::size_t informative = 0;  // entries where the reference differs from what an empty row gives
    std::size_t changed = 0;      // entries where the reference differs from C's starting value
};

// got = accum(c0, op(A) ⊕.⊗ op(B)), with a = op(A) and b = op(B) (host). The reference folds a row's terms in
// increasing column order starting with the first term (`any` has no true identity: there got must be one of the
// terms, accumulated). scale_by_terms: the tolerance is relative to Σ|terms| too (for operands whose float sums
// round).
template <class Sr, class T, class Accum>
Outcome compare(const Sparse<T>& a, const DenseMatrix<T>& b, const DenseMatrix<T>& c0, const DenseMatrix<T>& got,
                Accum accum, double rel, bool scale_by_terms = false) {
    using W = Wide<T>;
    constexpr bool any = std::is_same_v<typename Sr::add_monoid, any_monoid>;
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    const Index K = b.ncols();
    Outcome o;
    if (a.m * K == 0) return o;
    auto finish = [&](W c, W t) -> W {
        if constexpr (has_accum) return accum(c, t);
        else return t;
    };
    const T* bd = b.data().data();
    const T* cd = c0.data().data();
    const T* gd = got.data().data();
    std::vector<W> acc(K);
    std::vector<double> scale(K);
    const W none = Sr::template zero<W>();
    for (Index i = 0; i < a.m; ++i) {
        const std::size_t p0 = a.ptr[i], p1 = a.ptr[i + 1];
        if (!any) {
            std::fill(scale.begin(), scale.end(), 0.0);
            if (p0 == p1) std::fill(acc.begin(), acc.end(), none);
            for (std::size_t p = p0; p < p1; ++p) {
                const W s = W(a.val[p]);
                const T* brow = bd + a.col[p] * K;
                if (p == p0)
                    for (Index j = 0; j < K; ++j) acc[j] = Sr::template multiply<W>(s, W(brow[j]));
                else
                    for (Index j = 0; j < K; ++j)
                        acc[j] = Sr::template add<W>(acc[j], Sr::template multiply<W>(s, W(brow[j])));
                if (scale_by_terms)
                    for (Index j = 0; j < K; ++j) scale[j] += std::abs(double(Sr::template multiply<W>(s, W(brow[j]))));
            }
        }
        for (Index j = 0; j < K; ++j) {
            const W c = W(cd[i * K + j]), g = W(gd[i * K + j]);
            const W empty = finish(c, none);
            W want;
            bool ok;
            if (any && p0 != p1) {
                want = finish(c, Sr::template multiply<W>(W(a.val[p0]), W(bd[a.col[p0] * K + j])));
                ok = false;
                for (std::size_t p = p0; p < p1 && !ok; ++p)
                    ok = same(g, finish(c, Sr::template multiply<W>(W(a.val[p]), W(bd[a.col[p] * K + j]))), 0.0, 0.0);
            } else {
                want = p0 == p1 ? empty : finish(c, acc[j]);
                ok = same(g, want, rel, scale[j]);
            }
            o.informative += !same(want, empty, 0.0, 0.0);
            o.changed += !same(want, c, 0.0, 0.0);
            if (!ok && o.bad++ == 0) {
                std::ostringstream os;
                os << std::setprecision(17) << "first difference at (" << i << ", " << j << ") of " << a.m << "x" << K
                   << ": got " << +g << ", expected " << (any && p0 != p1 ? "one of the terms, e.g. " : "") << +want
                   << " (C started as " << +c << "; the row has " << (p1 - p0) << " entries)";
                o.first = os.str();
            }
        }
    }
    if (o.bad > 1) o.first += "; " + std::to_string(o.bad) + " entries differ";
    return o;
}

struct Opts {
    bool ta = false, tb = false;
    bool scale_by_terms = false;  // see compare
    bool expect_informative = true, expect_changed = true;
    double rel = -1;  // < 0: tolerance<Sr, T, Accum>()
};

// One product: C (starting as c0) accum= op(A) ⊕.⊗ op(B), with A stored transposed when o.ta and B when o.tb;
// the result checked against the reference. Returns the result (host).
template <class Sr, class T, class Accum = NoAccum>
DenseMatrix<T> check(const Sparse<T>& a, const DenseMatrix<T>& b, const DenseMatrix<T>& c0, Accum accum = {},
                     Opts o = {}) {
    INFO(type_name<T>() << ": op(A) " << a.m << "x" << a.n << " with " << a.nnz() << " entries (longest row "
                        << a.longest() << ", " << a.empty_rows() << " empty rows), width " << b.ncols()
                        << ", tA=" << o.ta << " tB=" << o.tb);
    REQUIRE(b.nrows() == a.n);
    REQUIRE((c0.nrows() == a.m && c0.ncols() == b.ncols()));
    const Matrix<T> am = to_matrix(a, o.ta);
    const DenseMatrix<T> bm = (o.tb ? transposed(b) : b).to(default_context());
    DenseMatrix<T> c = c0.to(default_context());
    mxm(c, no_mask, accum, Sr{}, am, bm, Descriptor{.transpose_a = o.ta, .transpose_b = o.tb});
    DenseMatrix<T> got = c.to(Context::cpu());
    REQUIRE(got.nrows() == a.m);
    REQUIRE(got.ncols() == b.ncols());
    const Outcome r =
        compare<Sr>(a, b, c0, got, accum, o.rel >= 0 ? o.rel : tolerance<Sr, T, Accum>(), o.scale_by_terms);
    INFO(r.first);
    REQUIRE(r.bad == 0);
    if (o.expect_informative && a.nnz() > 0 && b.ncols() > 0) REQUIRE(r.informative > 0);
    if (o.expect_changed && a.m * b.ncols() > 0) REQUIRE(r.changed > 0);
    return got;
}

// The k-th of the four transpose combinations.
Opts transposes(std::size_t k) { return Opts{.ta = bool(k & 1), .tb = bool(k & 2)}; }

// ---------------------------------------------------------------------------------------------------------
// Drivers shared by several cases

// plus_times over every width on a hub row (100,000 entries up to width 16, 20,000 above: B has as many rows)
// among 3001 skewed rows; the hub moves between the first row, the run of empty rows and the last row, and the
// transposes rotate (rot shifts them per type).
template <class T>
void hub_every_width(std::uint64_t seed, std::size_t rot) {
    for (std::size_t k = 0; k < std::size(widths); ++k) {
        if (!ref::in_shard()) continue;
        const Index K = widths[k];
        const Index hub = K <= 16 ? 100000 : 20000, m = 3001, n = hub + 17, hub_row = hub_row_for(m, k);
        const Sparse<T> a = sparse<T>(n, skewed(m, n, hub, hub_row, seed + K), seed + K, plain_fill<T>(seed + K));
        REQUIRE(a.longest() == hub);
        REQUIRE(a.length(hub_row) == hub);
        REQUIRE(a.empty_rows() > m / 2);
        check<plus_times>(a, dense<T>(n, K, plain_fill<T>(seed + 1)), dense<T>(m, K, plain_fill<T>(seed + 2)),
                          no_accum, transposes(k + rot));
    }
}

// Sr on 2000 skewed rows with a hub of 6000 entries (of 6007 columns), over widths from 1 lane to two panels, the
// hub moving and the transposes rotating.
template <class Sr, class T>
void semiring_on_skewed(std::uint64_t seed, const Fill<T>& afill, const Fill<T>& bfill) {
    const Index m = 2000, hub = 6000, n = 6007;
    const Index ks[] = {1, 3, 32, 47, 128, 512};
    for (std::size_t k = 0; k < std::size(ks); ++k) {
        if (!ref::in_shard()) continue;
        const Index K = ks[k], hub_row = hub_row_for(m, k);
        const Sparse<T> a = sparse<T>(n, skewed(m, n, hub, hub_row, seed), seed, afill);
        REQUIRE(a.longest() == hub);
        check<Sr>(a, dense<T>(n, K, bfill), dense<T>(m, K, plain_fill<T>(seed + 5)), no_accum, transposes(k + seed));
    }
}

// C accum= A ⊕.⊗ B on 6000 skewed rows with a hub of 20,000 entries (first row, inside the run of empty rows,
// last row), the transposes rotating; cfill gives C's starting values.
template <class Sr, class T, class Accum>
void accumulate_on_skewed(std::uint64_t seed, Accum accum, const Fill<T>& afill, const Fill<T>& bfill,
                          const Fill<T>& cfill) {
    const Index m = 6000, hub = 20000, n = 20011;
    const Index ks[] = {1, 3, 16, 47, 64, 256};
    for (std::size_t k = 0; k < std::size(ks); ++k) {
        if (!ref::in_shard()) continue;
        const Index K = ks[k], hub_row = hub_row_for(m, k);
        const Sparse<T> a = sparse<T>(n, skewed(m, n, hub, hub_row, seed), seed, afill);
        REQUIRE(a.longest() == hub);
        REQUIRE(a.empty_rows() > m / 2);
        check<Sr>(a, dense<T>(n, K, bfill), dense<T>(m, K, cfill), accum, transposes(k + seed));
    }
}
template <class Sr, class T, class Accum>
void accumulate_on_skewed(std::uint64_t seed, Accum accum) {
    accumulate_on_skewed<Sr, T>(seed, accum, plain_fill<T>(seed + 1), plain_fill<T>(seed + 2), plain_fill<T>(seed + 3));
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------

// Known answers, independent of the reference: a row of 50,000 entries (20,000 at width 512) split over many shares;
// the sum of ones is the row length, the minimum and maximum sit in the row's last entry (its last share), and the
// empty rows around it give the identity.
TEST_CASE("SpMM: known answers on a split hub row", "[mxm][spmm]") {
    for (Index K : {Index(1), Index(16), Index(47), Index(128), Index(512)}) {
        if (!ref::in_shard()) continue;
        const Index len = K < 512 ? 50000 : 20000;
        INFO("width " << K << ", hub of " << len);
        // Rows 0 and 2 empty, row 1 the hub with ones in columns 0..len-1.
        std::vector<Index> rows(len, 1), cols(len);
        for (Index x = 0; x < len; ++x) cols[x] = x;
        const Matrix<float> a = Matrix<float>::from_tuples(3, len, rows, cols, std::vector<float>(len, 1.0f));
        REQUIRE(a.nvals() == len);
        DenseMatrix<float> ones(len, K, 1.0f, Context::cpu()), ramp(len, K, 0.0f, Context::cpu());
        for (Index x = 0; x < len; ++x)
            for (Index j = 0; j < K; ++j) ramp(x, j) = float(len - x) + float(j);  // smallest in the last row
        DenseMatrix<float> c(3, K, -5.0f);
        mxm(c, no_mask, no_accum, plus_times{}, a, ones.to(default_context()));
        DenseMatrix<float> h = c.to(Context::cpu());
        for (Index j = 0; j < K; ++j) {
            INFO("column " << j);
            REQUIRE(h(0, j) == 0.0f);
            REQUIRE(h(1, j) == float(len));
            REQUIRE(h(2, j) == 0.0f);
        }
        mxm(c, no_mask, no_accum, min_plus{}, a, ramp.to(default_context()));
        h = c.to(Context::cpu());
        for (Index j = 0; j < K; ++j) {
            INFO("column " << j);
            REQUIRE(h(0, j) == std::numeric_limits<float>::infinity());
            REQUIRE(h(1, j) == float(2 + j));
            REQUIRE(h(2, j) == std::numeric_limits<float>::infinity());
        }
        for (Index x = 0; x < len; ++x)
            for (Index j = 0; j < K; ++j) ramp(x, j) = float(x) - float(j);  // largest in the last row
        mxm(c, no_mask, no_accum, max_times{}, a, ramp.to(default_context()));
        h = c.to(Context::cpu());
        for (Index j = 0; j < K; ++j) {
            INFO("column " << j);
            REQUIRE(h(0, j) == -std::numeric_limits<float>::infinity());
            REQUIRE(h(1, j) == float(len - 1) - float(j));
            REQUIRE(h(2, j) == -std::numeric_limits<float>::infinity());
        }
        // C += A B: the empty rows keep C (the add monoid's own operator), the hub row adds its length.
        c = DenseMatrix<float>(3, K, -5.0f);
        mxm(c, no_mask, plus_op{}, plus_times{}, a, ones.to(default_context()));
        h = c.to(Context::cpu());
        for (Index j = 0; j < K; ++j) {
            INFO("column " << j);
            REQUIRE(h(0, j) == -5.0f);
            REQUIRE(h(1, j) == float(len) - 5.0f);
            REQUIRE(h(2, j) == -5.0f);
        }
    }
}

// Skewed graph: one hub row of 100,000 entries (up to width 16) or 20,000 (above), spanning many equal shares,
// among power-law rows and a run of empty rows; every width of the issue on float (vector loads from 16 columns),
// double (vector loads at even widths) and int64 (no vector loads), transposes rotating.
TEST_CASE("SpMM: a hub row spanning many shares among power-law rows at every width", "[mxm][spmm]") {
    hub_every_width<float>(101, 0);
    hub_every_width<double>(102, 1);
    hub_every_width<std::int64_t>(103, 2);
}

// Power-law rows without a planted hub (longest rows of about a thousand entries, 56% empty rows): shares that
// hold the end of one row, many whole short rows and the start of the next.
TEST_CASE("SpMM: power-law rows at every width", "[mxm][spmm]") {
    const Index m = 6000, n = 5000;
    auto run = [&]<class T>(std::uint64_t seed, std::size_t rot) {
        const Sparse<T> a = sparse<T>(n, power_law(m, n, seed), seed, plain_fill<T>(seed));
        REQUIRE(a.longest() > 300);
        REQUIRE(a.empty_rows() > m / 3);
        for (std::size_t k = 0; k < std::size(widths); ++k) {
            if (!ref::in_shard()) continue;
            const Index K = widths[k];
            check<plus_times>(a, dense<T>(n, K, plain_fill<T>(seed + K)), dense<T>(m, K, plain_fill<T>(seed - K)),
                              no_accum, transposes(k + rot));
        }
    };
    run.operator()<float>(111, 0);
    run.operator()<double>(112, 1);
    run.operator()<std::int64_t>(113, 2);
}

// Uniform rows (4 to 12 entries, no empty rows; shares cut rows at arbitrary places) with every combination of
// transposes at every width; rows of exactly one entry (a share spans hundreds of rows); rows of 300 entries each.
TEST_CASE("SpMM: uniform rows at every width and every transpose", "[mxm][spmm]") {
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index m = 2500, n = 3000;
        const Sparse<T> a = sparse<T>(n, uniform_lengths(m, 4, 12, seed), seed, plain_fill<T>(seed));
        REQUIRE(a.empty_rows() == 0);
        for (Index K : widths) {
            if (!ref::in_shard()) continue;
            const DenseMatrix<T> b = dense<T>(n, K, plain_fill<T>(seed + K)), c0 = dense<T>(m, K, plain_fill<T>(seed - K));
            for (std::size_t t = 0; t < 4; ++t) check<plus_times>(a, b, c0, no_accum, transposes(t));
        }
    };
    run.operator()<float>(121);
    run.operator()<double>(122);
    {
        const Index m = 20000, n = 2000;
        const Sparse<double> a = sparse<double>(n, std::vector<Index>(m, 1), 123, plain_fill<double>(123));
        for (Index K : {Index(1), Index(3), Index(16), Index(32), Index(47), Index(64), Index(128)}) {
            if (!ref::in_shard()) continue;
            check<plus_times>(a, dense<double>(n, K, plain_fill<double>(K)), dense<double>(m, K, plain_fill<double>(K + 1)),
                              no_accum, transposes(K));
        }
    }
    {
        const Index m = 300, n = 400;
        const Sparse<float> a = sparse<float>(n, std::vector<Index>(m, 300), 124, plain_fill<float>(124));
        for (std::size_t k = 0; k < std::size(widths); ++k) {
            if (!ref::in_shard()) continue;
            const Index K = widths[k];
            check<plus_times>(a, dense<float>(n, K, plain_fill<float>(K)), dense<float>(m, K, plain_fill<float>(K + 1)),
                              no_accum, transposes(k));
        }
    }
}

// Every width from 1 to 40 (lanes per entry 1 to 32, widths just off a vector) and around the vector and panel
// boundaries: with 4 values or vectors a lane over 32 lanes, one panel covers 128 scalar columns (int32, or widths
// that are no multiple of a vector), 512 floats or 256 doubles with 16-byte loads; the widths around those and
// their multiples: 255/256/257/260, 511/512/513/514/516, 1023/1024/1028/1030.
TEST_CASE("SpMM: every width from 1 to 40 and widths around the vector and panel boundaries", "[mxm][spmm]") {
    std::vector<Index> ks;
    for (Index K = 1; K <= 40; ++K) ks.push_back(K);
    for (Index K : {47, 48, 63, 64, 65, 96, 127, 128, 129, 255, 256, 257, 260, 384, 511, 512, 513, 514, 516, 1023, 1024,
                    1028, 1030})
        ks.push_back(K);
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index m = 700, n = 1100;
        for (std::size_t k = 0; k < ks.size(); ++k) {
            if (!ref::in_shard()) continue;
            const Index K = ks[k];
            // Three full rows (the hub and the two adjacent long rows, capped at n) among skewed rows.
            const Sparse<T> a = sparse<T>(n, skewed(m, n, n, hub_row_for(m, k), seed + k), seed + k, plain_fill<T>(seed + k));
            REQUIRE(a.longest() == n);
            check<plus_times>(a, dense<T>(n, K, plain_fill<T>(seed + K)), dense<T>(m, K, plain_fill<T>(seed - K)),
                              no_accum, transposes(k / 3));
        }
    };
    run.operator()<float>(131);
    run.operator()<double>(132);
    run.operator()<std::int32_t>(133);
}

// The two shapes of widths from 5 to 32 vectors (engine/cuda/spmm/spmm.cu): wide workers (a vector a lane) and
// narrow ones (4 vectors a lane), forced by HYBLA_SPMM_SHAPE whatever the size decides, on a skewed matrix with
// a hub and on rows of one entry each (a share across many rows).
TEST_CASE("SpMM: wide and narrow workers at the widths that have both", "[mxm][spmm]") {
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index m = 900, n = 1000;
        const Sparse<T> hub = sparse<T>(n, skewed(m, n, n, hub_row_for(m, 1), seed), seed, plain_fill<T>(seed));
        const Sparse<T> ones = sparse<T>(n, std::vector<Index>(m, 1), seed + 1, plain_fill<T>(seed + 1));
        std::size_t k = 0;
        for (const char* shape : {"wide", "narrow"}) {
            const EnvGuard env("HYBLA_SPMM_SHAPE", shape);
            for (Index K : {Index(12), Index(16), Index(20), Index(32), Index(36), Index(64), Index(100), Index(128)}) {
                for (const Sparse<T>* a : {&hub, &ones}) {
                    ++k;
                    if (!ref::in_shard()) continue;
                    check<plus_times>(*a, dense<T>(n, K, plain_fill<T>(seed + K)), dense<T>(m, K, plain_fill<T>(seed - K)),
                                      no_accum, transposes(k / 2));
                }
            }
        }
    };
    run.operator()<float>(141);
    run.operator()<double>(142);
}

// Small matrices take a block a row where the rule's cost in batches allows (engine/cuda/spmm/spmm.cu, plus_times
// on float and double at widths of 16-byte vectors on 8 lanes or more; HYBLA_SPMM_ROWS=block forces it on any
// matrix, walk forces the shares): both paths and the rule, on rows of lengths around a block's workers and their
// multiples between empty rows (1000 entries: 32 a worker at w = 32 floats), skewed rows with two rows of 1200
// and a hub, and 200 rows of 40 to 160 entries (the rule's block path on a GPU); with accumulators, at widths with
// and without 16-byte vectors, over one and several panels; and the same bits twice on values that round.
TEST_CASE("SpMM: a block a row on small matrices forced and by the rule", "[mxm][spmm]") {
    const std::vector<Index> ladder{0, 1, 7, 8, 9, 31, 32, 33, 0, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 0, 2};
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index n = 1200;
        const Sparse<T> mats[] = {
            sparse<T>(n, ladder, seed, plain_fill<T>(seed)),
            sparse<T>(n, skewed(400, n, 1100, hub_row_for(400, 1), seed + 1), seed + 1, plain_fill<T>(seed + 1)),
            sparse<T>(n, uniform_lengths(200, 40, 160, seed + 2), seed + 2, plain_fill<T>(seed + 2))};
        std::size_t k = 0;
        for (const char* mode : {static_cast<const char*>(nullptr), "block", "walk"}) {
            if (mode && !default_context().is_cuda()) continue;  // (on the CPU the setting changes nothing)
            const EnvGuard env("HYBLA_SPMM_ROWS", mode);
            for (const Sparse<T>& a : mats)
                for (Index K : {Index(16), Index(32), Index(47), Index(64), Index(128), Index(256), Index(260),
                                Index(512), Index(516)}) {
                    ++k;
                    if (!ref::in_shard()) continue;
                    INFO("HYBLA_SPMM_ROWS=" << (mode ? mode : "(the rule)"));
                    const DenseMatrix<T> b = dense<T>(n, K, plain_fill<T>(seed + K));
                    const DenseMatrix<T> c0 = dense<T>(a.m, K, plain_fill<T>(seed - K));
                    check<plus_times>(a, b, c0, no_accum, transposes(k));
                    check<plus_times>(a, b, c0, plus_op{}, transposes(k + 1));
                    check<plus_times>(a, b, c0, times_op{}, transposes(k + 2));
                }
        }
    };
    run.operator()<float>(181);
    run.operator()<double>(182);
    // Values that round (24 significant bits): a block's runs are folded in a fixed order, the same bits twice.
    if (!default_context().is_cuda()) return;
    const Fill<float> rough = [](Index i, Index j) { return float(double(hash3(183, i, j) >> 40) * 0x1p-23 - 1.0); };
    const Index n = 1200, K = 64;
    const Sparse<float> a = sparse<float>(n, uniform_lengths(200, 40, 1000, 184), 184, rough);
    const DenseMatrix<float> b = dense<float>(n, K, rough), c0 = dense<float>(a.m, K, rough);
    const Opts o{.scale_by_terms = true, .rel = 1e-6};
    const EnvGuard env("HYBLA_SPMM_ROWS", "block");
    const DenseMatrix<float> first = check<plus_times>(a, b, c0, no_accum, o);
    const DenseMatrix<float> second = check<plus_times>(a, b, c0, no_accum, o);
    REQUIRE(std::memcmp(first.data().data(), second.data().data(), a.m * K * sizeof(float)) == 0);
}

// Rows of lengths around powers of two (0..3, 7..9, ..., 4095..4097) separated by empty rows, after a first row
// of s entries that shifts where every later row starts relative to any share size: rows that end exactly at a
// share boundary, cross it by one entry, or fill whole shares.
TEST_CASE("SpMM: rows of lengths around powers of two at several alignments", "[mxm][spmm]") {
    std::vector<Index> ladder;
    for (Index p = 1; p <= 4096; p *= 2)
        for (Index d : {Index(0), Index(1), Index(2)})
            if (p + d >= 1) {
                ladder.push_back(p - 1 + d);
                if (p % 8 == 0) ladder.push_back(0);
            }
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index n = 4100;
        std::size_t k = 0;
        for (Index s : {Index(0), Index(1), Index(5), Index(31), Index(100)}) {
            std::vector<Index> lengths{s};
            lengths.insert(lengths.end(), ladder.begin(), ladder.end());
            lengths.insert(lengths.end(), ladder.rbegin(), ladder.rend());
            const Index m = lengths.size();
            const Sparse<T> a = sparse<T>(n, lengths, seed + s, plain_fill<T>(seed + s));
            REQUIRE(a.longest() == 4097);
            for (Index K : {Index(1), Index(3), Index(16), Index(47), Index(128)}) {
                if (!ref::in_shard()) continue;
                check<plus_times>(a, dense<T>(n, K, plain_fill<T>(seed + K)), dense<T>(m, K, plain_fill<T>(seed - K)),
                                  no_accum, transposes(k++));
            }
        }
    };
    run.operator()<float>(141);
    run.operator()<double>(142);
    run.operator()<std::int64_t>(143);
}

// Runs of many thousands of empty rows: 7 entries over 200,003 rows (widths 1 to 16), 20,011 rows (32 to 128) and
// 4001 rows (256, 512); once with the first and last rows holding entries, once with 32% of the rows empty before
// the first entry and 15% after the last. The separate identity pass must write every empty row: plus_times
// (0), min_plus (+inf), C += A B (the add monoid's own operator: empty rows keep C) and C *= A B (C * 0).
TEST_CASE("SpMM: 7 entries over 200003 rows leave runs of many thousands of empty rows", "[mxm][spmm]") {
    struct Scale {
        Index m;
        std::vector<Index> ks;
    };
    const Scale scales[] = {{200003, {1, 3, 16}}, {20011, {32, 47, 64, 128}}, {4001, {256, 512}}};
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index n = 11;
        for (const Scale& sc : scales) {
            const Index m = sc.m;
            const std::vector<std::pair<Index, Index>> layouts[] = {
                {{0, 2}, {1, 0}, {m / 2 - 2, 1}, {m / 2 - 2, 7}, {m * 655 / 1000, 3}, {m - 2, 10}, {m - 1, 5}},
                {{m * 32 / 100, 4}, {m * 32 / 100 + 1, 4}, {m / 2, 0}, {m / 2, 5}, {m / 2, 9}, {m * 3 / 4, 2},
                 {m * 85 / 100, 6}}};
            for (const auto& at : layouts) {
                const Sparse<T> a = at_positions<T>(m, n, at, nonzero_fill<T>(seed));
                REQUIRE(a.nnz() == 7);
                REQUIRE(a.empty_rows() >= m - 6);
                for (Index K : sc.ks) {
                    if (!ref::in_shard()) continue;
                    const DenseMatrix<T> b = dense<T>(n, K, nonzero_fill<T>(seed + K));
                    const DenseMatrix<T> c0 = dense<T>(m, K, nonzero_fill<T>(seed - K));
                    check<plus_times>(a, b, c0, no_accum, transposes(K));
                    check<min_plus>(a, b, c0, no_accum, transposes(K + 1));
                    check<plus_times>(a, b, c0, plus_op{}, transposes(K + 2));
                    check<plus_times>(a, b, c0, times_op{}, transposes(K + 3));
                }
            }
        }
    };
    run.operator()<double>(151);
    run.operator()<float>(152);
}

// Runs of empty rows inside the shares: rows of 1-3 entries with 0 to 300 empty rows between them, and three
// rows of 3000 entries so that A has more entries than rows (shares of several entries, each crossing runs of
// empty rows). A worker of 16 or 32 lanes finds the next row among the row ends its lanes hold, in the next
// window of rows, or by a search past it: runs shorter than, equal to and longer than one and two windows.
TEST_CASE("SpMM: runs of empty rows inside shares around the size of a worker window", "[mxm][spmm]") {
    std::vector<Index> lengths;
    const Index gaps[] = {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 300};
    for (int rep = 0; rep < 3; ++rep) {
        for (Index g : gaps)
            for (Index len : {Index(1), Index(2), Index(3)}) {
                lengths.insert(lengths.end(), g, Index(0));
                lengths.push_back(len);
            }
        lengths.push_back(3000);
    }
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index n = 3001, m = lengths.size();
        const Sparse<T> a = sparse<T>(n, lengths, seed, plain_fill<T>(seed));
        REQUIRE(a.nnz() > m);
        std::size_t k = 0;
        for (Index K : {Index(32), Index(47), Index(64), Index(128), Index(256)}) {
            if (!ref::in_shard()) continue;
            const DenseMatrix<T> b = dense<T>(n, K, plain_fill<T>(seed + K));
            const DenseMatrix<T> c0 = dense<T>(m, K, plain_fill<T>(seed - K));
            check<plus_times>(a, b, c0, no_accum, transposes(k++));
            check<min_plus>(a, b, c0, no_accum, transposes(k++));
            check<plus_times>(a, b, c0, plus_op{}, transposes(k++));
        }
    };
    run.operator()<float>(161);
    run.operator()<double>(162);
}

// The shares weigh rows as well as entries (engine/cuda/spmm/spmm.cu, HYBLA_SPMM_ROW_WEIGHT in quarters of an
// entry): from 0 (equal entries) through the default to rows that outweigh thousands of entries, so that shares
// end inside a hub, at row starts, and hold no entry at all (in runs of empty rows), on a skewed matrix, on rows
// of 1-3 entries between runs of 0 to 300 empty rows, and on rows of one entry, at widths from 1 to 256. Rows
// short against a share are not split (HYBLA_SPMM_UNSPLIT, the share's cost over it): never (0), up to a
// whole share (1), or by default; at 1 a share's end moves by up to half a share.
TEST_CASE("SpMM: shares weighed by rows at row weights from 0 to 65536, short rows kept whole", "[mxm][spmm]") {
    std::vector<Index> gapped;
    for (Index g : {0, 1, 5, 16, 33, 64, 300})
        for (Index len : {Index(1), Index(2), Index(3)}) {
            gapped.insert(gapped.end(), g, Index(0));
            gapped.push_back(len);
        }
    gapped.push_back(2000);
    gapped.insert(gapped.end(), 500, Index(0));
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index n = 5003, m = 3000;
        const Sparse<T> mats[] = {sparse<T>(n, skewed(m, n, 5000, hub_row_for(m, 2), seed), seed, plain_fill<T>(seed)),
                                  sparse<T>(n, gapped, seed + 1, plain_fill<T>(seed + 1)),
                                  sparse<T>(n, std::vector<Index>(m, 1), seed + 2, plain_fill<T>(seed + 2))};
        std::size_t k = 0;
        // (row weight, unsplit)
        const std::pair<const char*, const char*> settings[] = {
            {"0", "8"}, {"1", "8"}, {"4", "8"}, {"37", "8"}, {"4096", "8"}, {"65536", "8"},
            {"4", "0"}, {"37", "0"}, {"4", "1"}, {"0", "1"}, {"4096", "1"}};
        for (const auto& [weight, unsplit] : settings) {
            const EnvGuard env("HYBLA_SPMM_ROW_WEIGHT", weight);
            const EnvGuard env_unsplit("HYBLA_SPMM_UNSPLIT", unsplit);
            for (const Sparse<T>& a : mats)
                for (Index K : {Index(1), Index(16), Index(47), Index(64), Index(128), Index(256)}) {
                    ++k;
                    if (!ref::in_shard()) continue;
                    INFO("row weight " << weight << ", unsplit " << unsplit);
                    const DenseMatrix<T> b = dense<T>(n, K, plain_fill<T>(seed + K));
                    const DenseMatrix<T> c0 = dense<T>(a.m, K, plain_fill<T>(seed - K));
                    check<plus_times>(a, b, c0, no_accum, transposes(k));
                    check<min_plus>(a, b, c0, plus_op{}, transposes(k + 1));
                }
        }
    };
    run.operator()<float>(171);
    run.operator()<double>(172);
}

// Degenerate shapes: no entries at all (every row empty), 0 rows, an inner dimension of 0, width 0, 1x1 with and
// without its entry, a single row of 30,000 entries (every share inside one row), a single column.
TEST_CASE("SpMM: matrices without entries and degenerate shapes", "[mxm][spmm]") {
    const Opts empty_ok{.expect_informative = false};
    auto run = [&]<class T>(std::uint64_t seed) {
        const Fill<T> v = plain_fill<T>(seed);
        std::vector<Index> ks(std::begin(widths), std::end(widths));
        ks.insert(ks.begin(), 0);
        for (Index K : ks) {
            if (!ref::in_shard()) continue;
            INFO("width " << K);
            // 1000 x 37 without entries: the identity (or C accum= identity) everywhere.
            {
                const Sparse<T> a = at_positions<T>(1000, 37, {}, v);
                const DenseMatrix<T> b = dense<T>(37, K, v), c0 = dense<T>(1000, K, nonzero_fill<T>(seed + K));
                check<plus_times>(a, b, c0, no_accum, empty_ok);
                check<min_plus>(a, b, c0, no_accum, empty_ok);
                check<plus_times>(a, b, c0, times_op{}, empty_ok);
                check<plus_times>(a, b, c0, plus_op{}, Opts{.expect_informative = false, .expect_changed = false});
                check<plus_times>(a, b, c0, no_accum, Opts{.ta = true, .tb = true, .expect_informative = false});
            }
            // 0 rows; an inner dimension of 0 (A 5x0, B 0xK: every row empty).
            check<plus_times>(at_positions<T>(0, 5, {}, v), dense<T>(5, K, v), dense<T>(0, K, v), no_accum, empty_ok);
            check<plus_times>(at_positions<T>(0, 5, {}, v), dense<T>(5, K, v), dense<T>(0, K, v), no_accum,
                              Opts{.ta = true, .tb = true});
            check<min_plus>(at_positions<T>(5, 0, {}, v), dense<T>(0, K, v), dense<T>(5, K, nonzero_fill<T>(seed)),
                            no_accum, empty_ok);
            check<plus_times>(at_positions<T>(5, 0, {}, v), dense<T>(0, K, v), dense<T>(5, K, nonzero_fill<T>(seed)),
                              times_op{}, Opts{.ta = true, .tb = true, .expect_informative = false});
            // 1x1 with its entry (non-zero, so the product differs from the identity) and without.
            const Fill<T> nz = nonzero_fill<T>(seed + 7);
            check<plus_times>(at_positions<T>(1, 1, {{0, 0}}, nz), dense<T>(1, K, nz), dense<T>(1, K, v), no_accum);
            check<min_plus>(at_positions<T>(1, 1, {{0, 0}}, nz), dense<T>(1, K, nz), dense<T>(1, K, v), no_accum,
                            Opts{.ta = true, .tb = true});
            check<plus_times>(at_positions<T>(1, 1, {{0, 0}}, nz), dense<T>(1, K, nz), dense<T>(1, K, nz), minus_op{});
            check<plus_times>(at_positions<T>(1, 1, {}, nz), dense<T>(1, K, nz), dense<T>(1, K, nz), no_accum, empty_ok);
            check<plus_times>(at_positions<T>(1, 1, {}, nz), dense<T>(1, K, nz), dense<T>(1, K, nz), times_op{}, empty_ok);
        }
        // One row of 30,000 entries; one column of 30,000 rows, every other one holding an entry.
        for (Index K : {Index(1), Index(16), Index(47), Index(128)}) {
            if (!ref::in_shard()) continue;
            const Sparse<T> row = sparse<T>(30000, {30000}, seed, v);
            check<plus_times>(row, dense<T>(30000, K, v), dense<T>(1, K, v), no_accum, transposes(K));
            check<max_plus>(row, dense<T>(30000, K, v), dense<T>(1, K, v), no_accum, transposes(K + 1));
            std::vector<Index> alternate(30000);
            for (Index i = 0; i < 30000; ++i) alternate[i] = i % 2;
            const Sparse<T> column = sparse<T>(1, alternate, seed, nonzero_fill<T>(seed));
            check<plus_times>(column, dense<T>(1, K, nonzero_fill<T>(seed + 1)), dense<T>(30000, K, v), no_accum,
                              transposes(K));
            check<plus_times>(column, dense<T>(1, K, nonzero_fill<T>(seed)), dense<T>(30000, K, v), times_op{},
                              transposes(K + 1));
        }
    };
    run.operator()<double>(161);
    run.operator()<float>(162);
    run.operator()<std::int32_t>(163);
}

// Every built-in semiring whose monoid has a terminal value, with that value in B (or A) where it is reached in
// the middle of the hub row, only in its last share, in some short rows, and never in a third of the columns: a
// kernel (or the combining pass) that stops early or lets a terminal partial stand for the row must still give
// the row's result. Float and double for the arithmetic semirings; int, uint8 and uint32 too, and bool for the
// logical ones. Infinities only where no product or sum of them is NaN (no +inf with -inf, no 0 * inf); integer
// terminals only where no term overflows.
TEST_CASE("SpMM: semirings with terminal values on a skewed graph", "[mxm][spmm]") {
    constexpr double inf = std::numeric_limits<double>::infinity();
    constexpr float finf = std::numeric_limits<float>::infinity();
    const Index n = 6007;  // semiring_on_skewed's columns: B's rows
    using i32 = std::int32_t;
    using i64 = std::int64_t;
    using u8 = std::uint8_t;
    using u32 = std::uint32_t;
    SECTION("min_plus max_plus min_times max_times") {
        semiring_on_skewed<min_plus, float>(201, rare_fill(plain_fill<float>(1), -finf, 1, 500),
                                            terminal_fill(n, -finf, plain_fill<float>(2), 3));
        semiring_on_skewed<min_plus, double>(202, rare_fill(plain_fill<double>(1), -inf, 1, 500),
                                             terminal_fill(n, -inf, plain_fill<double>(2), 3));
        // Integers: A >= 0 so that INT_MIN + a does not overflow.
        semiring_on_skewed<min_plus, i32>(203, pick_fill<i32>(1, {0, 1, 2, 5, 8}),
                                          terminal_fill(n, std::numeric_limits<i32>::min(), plain_fill<i32>(2), 3));
        semiring_on_skewed<min_plus, i64>(204, pick_fill<i64>(1, {0, 1, 3, 7}),
                                          terminal_fill(n, std::numeric_limits<i64>::min(), plain_fill<i64>(2), 3));
        semiring_on_skewed<max_plus, double>(205, rare_fill(plain_fill<double>(1), inf, 1, 500),
                                             terminal_fill(n, inf, plain_fill<double>(2), 3));
        semiring_on_skewed<max_plus, i64>(206, pick_fill<i64>(1, {0, -1, -3, -8}),
                                          terminal_fill(n, std::numeric_limits<i64>::max(), plain_fill<i64>(2), 3));
        semiring_on_skewed<max_times, float>(207, nonzero_fill<float>(1), terminal_fill(n, finf, nonzero_fill<float>(2), 3));
        semiring_on_skewed<max_times, double>(208, nonzero_fill<double>(1), terminal_fill(n, inf, nonzero_fill<double>(2), 3));
        // a in {-1, 0, 1}: a * INT_MAX does not overflow.
        semiring_on_skewed<max_times, i32>(209, pick_fill<i32>(1, {-1, 0, 1, 1}),
                                           terminal_fill(n, std::numeric_limits<i32>::max(), plain_fill<i32>(2), 3));
        semiring_on_skewed<min_times, double>(210, nonzero_fill<double>(1), terminal_fill(n, -inf, nonzero_fill<double>(2), 3));
        semiring_on_skewed<min_times, float>(211, nonzero_fill<float>(1), terminal_fill(n, -finf, nonzero_fill<float>(2), 3));
    }
    SECTION("max_min min_max and the first and second semirings") {
        semiring_on_skewed<max_min, float>(221, rare_fill(plain_fill<float>(1), finf, 1, 50),
                                           terminal_fill(n, finf, plain_fill<float>(2), 3));
        semiring_on_skewed<max_min, u8>(222, rare_fill(plain_fill<u8>(1), u8(255), 1, 50),
                                        terminal_fill(n, u8(255), plain_fill<u8>(2), 3));
        semiring_on_skewed<min_max, double>(223, rare_fill(plain_fill<double>(1), -inf, 1, 50),
                                            terminal_fill(n, -inf, plain_fill<double>(2), 3));
        // uint32: the terminal is 0, reached only where A and B are both 0.
        semiring_on_skewed<min_max, u32>(224, rare_fill(pick_fill<u32>(1, {1, 2, 3, 9}), u32(0), 1, 50),
                                         terminal_fill(n, u32(0), pick_fill<u32>(2, {1, 4, 6}), 3));
        semiring_on_skewed<max_first, double>(225, rare_fill(plain_fill<double>(1), inf, 1, 500), plain_fill<double>(2));
        semiring_on_skewed<max_second, float>(226, plain_fill<float>(1), terminal_fill(n, finf, plain_fill<float>(2), 3));
        semiring_on_skewed<min_first, i64>(227, rare_fill(plain_fill<i64>(1), std::numeric_limits<i64>::min(), 1, 500),
                                           plain_fill<i64>(2));
        semiring_on_skewed<min_second, double>(228, plain_fill<double>(1), terminal_fill(n, -inf, plain_fill<double>(2), 3));
        semiring_on_skewed<min_second, i32>(229, plain_fill<i32>(1),
                                            terminal_fill(n, std::numeric_limits<i32>::min(), plain_fill<i32>(2), 3));
    }
    SECTION("lor_land and land_lor on bool and int32") {
        // lor_land: B false except at the terminal places, so rows without them give false.
        semiring_on_skewed<lor_land, bool>(231, pick_fill<bool>(1, {false, true}),
                                           terminal_fill(n, true, pick_fill<bool>(2, {false}), 3));
        semiring_on_skewed<lor_land, i32>(232, pick_fill<i32>(1, {0, 3, -2}), terminal_fill(n, 7, pick_fill<i32>(2, {0}), 3));
        semiring_on_skewed<land_lor, bool>(233, pick_fill<bool>(1, {false, true}),
                                           terminal_fill(n, false, pick_fill<bool>(2, {true}), 3));
        semiring_on_skewed<land_lor, i32>(234, pick_fill<i32>(1, {0, 5}), terminal_fill(n, 0, nonzero_fill<i32>(2), 3));
    }
    SECTION("any: the result is one of the terms") {
        semiring_on_skewed<any_second, float>(241, plain_fill<float>(1), plain_fill<float>(2));
        semiring_on_skewed<any_second, double>(242, plain_fill<double>(1), plain_fill<double>(2));
        semiring_on_skewed<any_second, i64>(243, plain_fill<i64>(1), plain_fill<i64>(2));
        semiring_on_skewed<any_first, i64>(244, plain_fill<i64>(1), plain_fill<i64>(2));
        semiring_on_skewed<any_first, float>(245, plain_fill<float>(1), plain_fill<float>(2));
        semiring_on_skewed<any_pair, double>(246, plain_fill<double>(1), plain_fill<double>(2));
        semiring_on_skewed<any_pair, bool>(247, plain_fill<bool>(1), plain_fill<bool>(2));
    }
}

// The semirings without a terminal value on the same skewed graphs (plus_pair counts each row's entries exactly,
// the hub's 6000 included).
TEST_CASE("SpMM: semirings without a terminal value on a skewed graph", "[mxm][spmm]") {
    using i32 = std::int32_t;
    using i64 = std::int64_t;
    semiring_on_skewed<plus_pair, i64>(251, plain_fill<i64>(1), plain_fill<i64>(2));
    semiring_on_skewed<plus_pair, float>(252, plain_fill<float>(1), plain_fill<float>(2));
    semiring_on_skewed<plus_first, double>(253, plain_fill<double>(1), plain_fill<double>(2));
    semiring_on_skewed<plus_second, float>(254, plain_fill<float>(1), plain_fill<float>(2));
    semiring_on_skewed<plus_min, i32>(255, plain_fill<i32>(1), plain_fill<i32>(2));
    semiring_on_skewed<plus_times, std::uint8_t>(256, plain_fill<std::uint8_t>(1), plain_fill<std::uint8_t>(2));
    semiring_on_skewed<plus_times, std::uint64_t>(257, plain_fill<std::uint64_t>(1), plain_fill<std::uint64_t>(2));
    semiring_on_skewed<lxor_land, bool>(258, plain_fill<bool>(1), pick_fill<bool>(2, {false, false, true}));
    semiring_on_skewed<lxor_land, i32>(259, plain_fill<i32>(1), pick_fill<i32>(2, {0, 0, 3}));
}

// Accumulators on a hub row split over many shares (C accum= the combined row, not per partial) among runs of
// empty rows. Where the accumulator is the add monoid's own operator (plus with plus_times, max with max_times,
// min with min_plus, lor/land/lxor with lor_land/land_lor/lxor_land on bool) empty rows keep C; everywhere else
// they get accum(C, identity), which changes C: C * 0, C - 0 (= C, but computed), max(C, 0), min(C, 0),
// lor(5, 0) = 1 on int32, land(5, 1) = 1, lxor(5, 0) = 1, second(C, 0) = 0 with any_second (any is never skipped).
TEST_CASE("SpMM accumulators on a split hub row and empty rows", "[mxm][spmm][accumulate]") {
    using i32 = std::int32_t;
    using i64 = std::int64_t;
    SECTION("plus_times with arithmetic accumulators") {
        accumulate_on_skewed<plus_times, double>(301, plus_op{});
        accumulate_on_skewed<plus_times, double>(302, times_op{});
        accumulate_on_skewed<plus_times, double>(303, minus_op{});
        accumulate_on_skewed<plus_times, double>(304, max_op{});
        accumulate_on_skewed<plus_times, double>(305, min_op{});
        accumulate_on_skewed<plus_times, double>(306, second_op{});
        accumulate_on_skewed<plus_times, float>(307, plus_op{});
        accumulate_on_skewed<plus_times, float>(308, times_op{});
        accumulate_on_skewed<plus_times, float>(309, minus_op{});
        accumulate_on_skewed<plus_times, float>(310, max_op{});
        accumulate_on_skewed<plus_times, i32>(311, plus_op{});
        accumulate_on_skewed<plus_times, i32>(312, times_op{});
        accumulate_on_skewed<plus_times, i64>(313, min_op{});
    }
    SECTION("min and max semirings") {
        accumulate_on_skewed<max_times, double>(321, max_op{});
        accumulate_on_skewed<max_times, float>(322, min_op{});
        accumulate_on_skewed<min_plus, i32>(323, min_op{});
        accumulate_on_skewed<min_plus, i64>(324, max_op{});
        accumulate_on_skewed<min_plus, double>(325, min_op{});
        accumulate_on_skewed<max_plus, float>(326, max_op{});
    }
    SECTION("logical semirings on bool and int32") {
        // C's int32 values include 5 and -3: lor(5, 0) is 1, not 5.
        const Fill<i32> c5 = pick_fill<i32>(9, {0, 5, 1, -3});
        accumulate_on_skewed<lor_land, i32>(331, lor_op{}, pick_fill<i32>(1, {0, 2, 0, 0}), pick_fill<i32>(2, {0, 0, 0, 6}), c5);
        accumulate_on_skewed<lor_land, bool>(332, lor_op{}, pick_fill<bool>(1, {false, true}),
                                             pick_fill<bool>(2, {false, false, false, true}), pick_fill<bool>(3, {false, true}));
        accumulate_on_skewed<land_lor, i32>(333, land_op{}, pick_fill<i32>(1, {0, 2, 0, 0}), pick_fill<i32>(2, {0, 0, 0, 6}), c5);
        accumulate_on_skewed<land_lor, bool>(334, land_op{}, pick_fill<bool>(1, {false, true}),
                                             pick_fill<bool>(2, {false, false, false, true}), pick_fill<bool>(3, {false, true}));
        accumulate_on_skewed<lxor_land, i32>(335, lxor_op{}, pick_fill<i32>(1, {0, 2}), pick_fill<i32>(2, {0, 6}), c5);
        accumulate_on_skewed<lxor_land, bool>(336, lxor_op{});
    }
    SECTION("any_second with second_op and plus_op") {
        accumulate_on_skewed<any_second, i64>(341, second_op{});
        accumulate_on_skewed<any_second, double>(342, plus_op{});
    }
}

// C accum= A ⊕.⊗ C: B is C itself (square A of 20,011 rows with a hub of 20,000 entries), so every share must read
// C's rows before any of them changes; without an accumulator, with the add monoid's own operator and with others;
// transpose_a too. Then op(B) = Cᵀ (transpose_b, C square: K = n).
TEST_CASE("SpMM accumulating into its own dense operand (B is C)", "[mxm][spmm][accumulate]") {
    auto run = [&]<class Sr, class T, class Accum>(std::uint64_t seed, Accum accum) {
        const Index n = 20011, hub = 20000;
        std::size_t k = 0;
        for (Index K : {Index(1), Index(3), Index(16), Index(47), Index(64), Index(128)}) {
            if (!ref::in_shard()) continue;
            const Sparse<T> a = sparse<T>(n, skewed(n, n, hub, hub_row_for(n, k), seed + K), seed + K, plain_fill<T>(seed + K));
            REQUIRE(a.longest() == hub);
            const DenseMatrix<T> c0 = dense<T>(n, K, plain_fill<T>(seed - K));
            const bool ta = k++ % 2;
            INFO(type_name<T>() << ": B is C, " << n << "x" << K << ", " << a.nnz() << " entries, tA=" << ta);
            DenseMatrix<T> c = c0.to(default_context());
            mxm(c, no_mask, accum, Sr{}, to_matrix(a, ta), c, Descriptor{.transpose_a = ta});
            const Outcome r = compare<Sr>(a, c0, c0, c.to(Context::cpu()), accum, tolerance<Sr, T, Accum>());
            INFO(r.first);
            REQUIRE(r.bad == 0);
            REQUIRE(r.informative > 0);
            REQUIRE(r.changed > 0);
        }
        for (Index K : {Index(47), Index(64), Index(130)}) {
            if (!ref::in_shard()) continue;
            std::vector<Index> lengths = power_law(K, K, seed);
            lengths[K / 2] = K;  // a full row
            const Sparse<T> a = sparse<T>(K, lengths, seed, plain_fill<T>(seed));
            const DenseMatrix<T> c0 = dense<T>(K, K, plain_fill<T>(seed + K));
            INFO(type_name<T>() << ": B is C transposed, " << K << "x" << K);
            DenseMatrix<T> c = c0.to(default_context());
            mxm(c, no_mask, accum, Sr{}, to_matrix(a, false), c, Descriptor{.transpose_b = true});
            const Outcome r = compare<Sr>(a, transposed(c0), c0, c.to(Context::cpu()), accum, tolerance<Sr, T, Accum>());
            INFO(r.first);
            REQUIRE(r.bad == 0);
            REQUIRE(r.changed > 0);
        }
    };
    run.operator()<plus_times, double>(401, no_accum);
    run.operator()<plus_times, double>(402, plus_op{});
    run.operator()<plus_times, float>(403, times_op{});
    run.operator()<plus_times, float>(404, minus_op{});
    run.operator()<min_plus, std::int64_t>(405, min_op{});
    run.operator()<max_times, double>(406, plus_op{});
}

// Partial sums of a split row are combined in a fixed order: with float and double values that really round (full
// mantissas), two runs of the same product are bit-identical, and both are within a tolerance relative to the sum
// of the terms' magnitudes (1e-6 for float, 1e-12 for double) of the reference.
TEST_CASE("SpMM results are bit-identical from run to run", "[mxm][spmm]") {
    auto run = [&]<class T, class Accum>(std::uint64_t seed, Accum accum, double rel) {
        const Fill<T> rough = [seed](Index i, Index j) {
            return T(double(hash3(seed, i, j) >> 40) * 0x1p-23 - 1.0);  // 24 significant bits in [-1, 1)
        };
        std::size_t k = 0;
        for (Index K : {Index(1), Index(16), Index(47), Index(64), Index(128)}) {
            if (!ref::in_shard()) continue;
            const Index hub = K <= 16 ? 100000 : 20000, m = 3001, n = hub + 17;
            const Sparse<T> a = sparse<T>(n, skewed(m, n, hub, hub_row_for(m, k), seed + K), seed + K, rough);
            const DenseMatrix<T> b = dense<T>(n, K, rough), c0 = dense<T>(m, K, rough);
            const Opts o{.ta = false, .tb = false, .scale_by_terms = true, .rel = rel};
            const DenseMatrix<T> first = check<plus_times>(a, b, c0, accum, o);
            const DenseMatrix<T> second = check<plus_times>(a, b, c0, accum, o);
            INFO(type_name<T>() << ", width " << K << ", hub of " << hub);
            REQUIRE(std::memcmp(first.data().data(), second.data().data(), m * K * sizeof(T)) == 0);
            ++k;
        }
    };
    run.operator()<float>(501, no_accum, 1e-6);
    run.operator()<float>(502, plus_op{}, 1e-6);
    run.operator()<double>(503, no_accum, 1e-12);
}

// One matrix multiplied at alternating widths: each width has its own share of entries, and so its own plan
// (each share's first row) cached on the matrix; the last few are kept, so a width that comes back finds its own
// plan and no other. 500,000 entries: shares of different sizes at narrow and wide widths on a GPU.
TEST_CASE("SpMM: one matrix at alternating widths keeps a plan per width", "[mxm][spmm]") {
    auto run = [&]<class T>(std::uint64_t seed) {
        const Index m = 20000, n = 5000;
        const Sparse<T> a = sparse<T>(n, uniform_lengths(m, 10, 40, seed), seed, plain_fill<T>(seed));
        const Matrix<T> am = to_matrix(a, false);
        std::size_t step = 0;
        for (Index K : {Index(32), Index(3), Index(256), Index(32), Index(64), Index(16), Index(3), Index(256),
                        Index(1), Index(32)}) {
            if (!ref::in_shard()) continue;
            INFO(type_name<T>() << ", step " << step++ << ", width " << K);
            const DenseMatrix<T> b = dense<T>(n, K, plain_fill<T>(seed + K)), c0(m, K, T(0), Context::cpu());
            DenseMatrix<T> c = c0.to(default_context());
            mxm(c, no_mask, no_accum, plus_times{}, am, b.to(default_context()));
            const Outcome r = compare<plus_times>(a, b, c0, c.to(Context::cpu()), no_accum,
                                                  tolerance<plus_times, T, NoAccum>());
            INFO(r.first);
            REQUIRE(r.bad == 0);
            REQUIRE(r.informative > 0);
        }
    };
    run.operator()<float>(601);
    run.operator()<double>(602);
}

// One matrix multiplied from four host threads at once, each with its own B, at widths 64 and 32 (two plans), a
// hub row split over many shares: the calls share the plans cached on the matrix and must not disturb each
// other's partial rows.
TEST_CASE("SpMM: one matrix from several host threads at once", "[mxm][spmm]") {
    using T = float;
    const Index m = 3001, hub = 20000, n = hub + 17;
    const Sparse<T> a = sparse<T>(n, skewed(m, n, hub, hub_row_for(m, 1), 701), 701, plain_fill<T>(701));
    const Matrix<T> am = to_matrix(a, false);
    constexpr int threads = 4, rounds = 6;
    std::vector<DenseMatrix<T>> b, b_here, got(threads * rounds);
    for (int t = 0; t < threads; ++t) {
        b.push_back(dense<T>(n, t % 2 ? 32 : 64, plain_fill<T>(710 + t)));
        b_here.push_back(b.back().to(default_context()));
    }
    std::vector<std::exception_ptr> failed(threads);  // a thread's exception, rethrown here
    {
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                try {
                    for (int r = 0; r < rounds; ++r) {
                        DenseMatrix<T> c(m, b[t].ncols(), T(0), default_context());
                        mxm(c, no_mask, no_accum, plus_times{}, am, b_here[t]);
                        got[t * rounds + r] = c.to(Context::cpu());
                    }
                } catch (...) {
                    failed[t] = std::current_exception();
                }
            });
        for (auto& th : pool) th.join();
    }
    for (const auto& e : failed)
        if (e) std::rethrow_exception(e);
    for (int t = 0; t < threads; ++t)
        for (int r = 0; r < rounds; ++r) {
            INFO("thread " << t << ", call " << r);
            const DenseMatrix<T> c0(m, b[t].ncols(), T(0), Context::cpu());
            const Outcome o = compare<plus_times>(a, b[t], c0, got[t * rounds + r], no_accum,
                                                  tolerance<plus_times, T, NoAccum>());
            INFO(o.first);
            REQUIRE(o.bad == 0);
            REQUIRE(o.informative > 0);
        }
}

// ---------------------------------------------------------------------------------------------------------
// Masked SpMM: C<M> accum= op(A) ⊕.⊗ op(B) into a dense C, only where the mask allows (the overload of
// engine/mxm.hpp taking a Matrix mask and a DenseMatrix C); every other entry of C keeps its value. On the GPU a
// thread per mask entry (engine/cuda/spmm/masked.cu), with B = C computed in one block (at most 1024 entries) or
// through a buffer (more); a complemented mask saves the mask's entries, runs the SpMM, puts them back.

// Where the mask allows: its pattern (structural), or its entries that are not 0; the complement of that.
template <class M>
std::vector<char> allowed_by(const Sparse<M>& mask, Index width, bool structure, bool complement) {
    std::vector<char> ok(mask.m * width, complement);
    for (Index i = 0; i < mask.m; ++i)
        for (std::size_t p = mask.ptr[i]; p < mask.ptr[i + 1]; ++p)
            if (structure || mask.val[p] != M(0)) ok[i * width + mask.col[p]] = !complement;
    return ok;
}

// got(i,j) against accum(c0, (op(A) ⊕.⊗ op(B))(i,j)) where allowed (a row's terms folded in increasing column
// order from the first; an empty row gives the identity), and against c0 elsewhere (exactly).
template <class Sr, class T, class Accum>
Outcome compare_masked(const Sparse<T>& a, const DenseMatrix<T>& b, const DenseMatrix<T>& c0, const DenseMatrix<T>& got,
                       const std::vector<char>& allowed, Accum accum) {
    using W = Wide<T>;
    const Index K = b.ncols();
    const double rel = tolerance<Sr, T, Accum>();
    Outcome o;
    const T* bd = b.data().data();
    const T* cd = c0.data().data();
    const T* gd = got.data().data();
    for (Index i = 0; i < a.m; ++i)
        for (Index j = 0; j < K; ++j) {
            const W c = W(cd[i * K + j]), g = W(gd[i * K + j]);
            W want = c;
            if (allowed[i * K + j]) {
                W s = Sr::template zero<W>();
                for (std::size_t p = a.ptr[i]; p < a.ptr[i + 1]; ++p) {
                    const W t = Sr::template multiply<W>(W(a.val[p]), W(bd[a.col[p] * K + j]));
                    s = p == a.ptr[i] ? t : Sr::template add<W>(s, t);
                }
                if constexpr (std::is_same_v<Accum, NoAccum>) want = s;
                else want = accum(c, s);
                o.informative += !same(want, c, 0.0, 0.0);
            }
            if (!same(g, want, allowed[i * K + j] ? rel : 0.0, 0.0) && o.bad++ == 0) {
                std::ostringstream os;
                os << std::setprecision(17) << "first difference at (" << i << ", " << j << ") of " << a.m << "x" << K
                   << (allowed[i * K + j] ? " (allowed)" : " (not allowed)") << ": got " << +g << ", expected "
                   << +want << " (C started as " << +c << ")";
                o.first = os.str();
            }
            o.changed += !allowed[i * K + j];  // entries that must have kept their value
        }
    if (o.bad > 1) o.first += "; " + std::to_string(o.bad) + " entries differ";
    return o;
}

TEST_CASE("masked SpMM against brute force: shapes, widths, masks, accumulators, transposes, B is C",
          "[mxm][spmm][masked]") {
    auto run = [&]<class Sr, class T, class Accum>(std::uint64_t seed, Accum accum) {
        struct Shape {
            Index m, n;
            std::vector<Index> lengths;
        };
        std::vector<Shape> shapes{{0, 5, {}}, {1, 1, {1}}, {37, 29, uniform_lengths(37, 0, 6, seed)},
                                  {2003, 2003, skewed(2003, 2003, 1500, 7, seed)}};
        std::size_t step = 0;
        for (const Shape& s : shapes)
            for (Index K : {Index(1), Index(3), Index(47), Index(64)}) {
                if (!ref::in_shard()) continue;
                const std::size_t v = step++;
                const bool ta = v % 2, tb = v % 3 == 1, structure = v % 4 < 2, complement = v % 5 == 3;
                const Sparse<T> a = sparse<T>(s.n, s.lengths, seed + v, plain_fill<T>(seed + v));
                const DenseMatrix<T> b = dense<T>(s.n, K, plain_fill<T>(seed + 7 * v));
                const DenseMatrix<T> c0 = dense<T>(s.m, K, plain_fill<T>(seed + 11 * v));
                // Masks of about 2 entries a row, some with value 0 (false unless structural); larger for the wide
                // shapes, so that the mask has more than 1024 entries there.
                const Sparse<double> mk = sparse<double>(K, uniform_lengths(s.m, 0, std::min<Index>(K, 4), seed + v),
                                                         seed + 13 * v, pick_fill<double>(seed + v, {0.0, 1.0, 2.5}));
                const std::vector<char> ok = allowed_by(mk, K, structure, complement);
                INFO(type_name<T>() << ": " << s.m << "x" << s.n << " with " << a.nnz() << " entries, width " << K
                                    << ", mask of " << mk.nnz() << " entries, structure=" << structure
                                    << " complement=" << complement << " tA=" << ta << " tB=" << tb);
                DenseMatrix<T> c = c0.to(default_context());
                mxm(c, to_matrix(mk, false), accum, Sr{}, to_matrix(a, ta), (tb ? transposed(b) : b).to(default_context()),
                    Descriptor{.transpose_a = ta, .transpose_b = tb, .mask_complement = complement,
                               .mask_structure = structure});
                const Outcome r = compare_masked<Sr>(a, b, c0, c.to(Context::cpu()), ok, accum);
                INFO(r.first);
                REQUIRE(r.bad == 0);
                if (s.m >= 37) REQUIRE(r.informative > 0);
            }
        // B is C: A square, the values read from C as it was, for masks of at most and of more than 1024 entries.
        for (Index per_row : {Index(1), Index(3)}) {
            if (!ref::in_shard()) continue;
            const Index m = 503, K = 16;
            const Sparse<T> a = sparse<T>(m, skewed(m, m, 400, 5, seed + per_row), seed, plain_fill<T>(seed));
            const DenseMatrix<T> c0 = dense<T>(m, K, plain_fill<T>(seed + 3));
            const Sparse<double> mk = sparse<double>(K, uniform_lengths(m, per_row, per_row, seed), seed + 5,
                                                     plain_fill<double>(seed + 9));
            REQUIRE((per_row == 1 ? mk.nnz() <= 1024 : mk.nnz() > 1024));
            const std::vector<char> ok = allowed_by(mk, K, true, false);
            INFO(type_name<T>() << ": B is C, " << m << "x" << K << ", mask of " << mk.nnz() << " entries");
            DenseMatrix<T> c = c0.to(default_context());
            mxm(c, to_matrix(mk, false), accum, Sr{}, to_matrix(a, false), c, Descriptor{.mask_structure = true});
            const Outcome r = compare_masked<Sr>(a, c0, c0, c.to(Context::cpu()), ok, accum);
            INFO(r.first);
            REQUIRE(r.bad == 0);
            REQUIRE(r.informative > 0);
            REQUIRE(r.changed > 0);
        }
    };
    run.operator()<plus_times, double>(701, no_accum);
    run.operator()<plus_times, double>(702, plus_op{});
    run.operator()<plus_times, float>(703, no_accum);
    run.operator()<plus_times, float>(704, times_op{});
    run.operator()<min_plus, std::int64_t>(705, min_op{});
    run.operator()<max_times, double>(706, no_accum);
    run.operator()<plus_times, std::int32_t>(707, minus_op{});
}

TEST_CASE("masked SpMM refuses replace and a mask of another shape", "[mxm][spmm][masked]") {
    const Matrix<double> a = Matrix<double>::from_tuples(3, 4, {0, 2}, {1, 3}, {1.0, 2.0});
    const DenseMatrix<double> b(4, 2, 1.0);
    DenseMatrix<double> c(3, 2, 0.0);
    const Matrix<bool> mask = Matrix<bool>::from_tuples(3, 2, {0}, {1}, {true});
    CHECK_THROWS_WITH(mxm(c, mask, no_accum, plus_times{}, a, b, Descriptor{.replace = true}),
                      "mxm (masked SpMM): a dense C keeps every entry, so replace has nothing to clear; fill C first "
                      "instead");
    CHECK_THROWS_AS(mxm(c, Matrix<bool>(2, 2), no_accum, plus_times{}, a, b), DimensionMismatch);
    CHECK_THROWS_AS(mxm(c, mask, no_accum, plus_times{}, a, DenseMatrix<double>(3, 2)), DimensionMismatch);
    mxm(c, mask, no_accum, plus_times{}, a, b);
    const DenseMatrix<double> h = c.to(Context::cpu());
    CHECK(h(0, 1) == 1.0);
    CHECK(h(0, 0) == 0.0);
    CHECK(h(2, 1) == 0.0);
}
