// Graph contraction against the brute-force product S·A·Sᵀ on random graphs (empty, one vertex, odd sizes,
// skewed rows, explicit zeros, self-loops), with arbitrary integer labels (negative, extreme, few or all
// distinct), both label orderings, all three monoids, self-loops kept and dropped; label renumbering; errors.
#include <limits>
#include <set>

#include "algorithms/contract.hpp"
#include "reference.hpp"

using namespace hybla;
using algorithms::Combine;
using algorithms::LabelOrder;
using ref::Dense;
using ref::Index;

namespace {

// The compact renumbering written the slow, obvious way.
template <class L>
std::vector<L> expected_label_map(const std::vector<L>& labels, LabelOrder order) {
    if (order == LabelOrder::value) {
        std::set<L> s(labels.begin(), labels.end());
        return std::vector<L>(s.begin(), s.end());
    }
    std::vector<L> seen;
    for (L l : labels)
        if (std::find(seen.begin(), seen.end(), l) == seen.end()) seen.push_back(l);
    return seen;
}

// C(c, d) = the combination of every A(i, j) with label(i) = map[c] and label(j) = map[d].
template <class T, class L>
Dense<T> brute_contract(const Dense<T>& a, const std::vector<L>& labels, const std::vector<L>& map, Combine combine,
                        bool drop_loops) {
    auto compact = [&](L l) { return Index(std::find(map.begin(), map.end(), l) - map.begin()); };
    Dense<T> c(map.size(), map.size());
    for (Index i = 0; i < a.nrows; ++i)
        for (Index j = 0; j < a.ncols; ++j) {
            if (!a(i, j)) continue;
            const Index x = compact(labels[i]), y = compact(labels[j]);
            if (drop_loops && x == y) continue;
            const T v = *a(i, j);
            auto& e = c(x, y);
            if (!e) e = v;
            else if (combine == Combine::plus) e = *e + v;
            else if (combine == Combine::min) e = std::min(*e, v);
            else e = std::max(*e, v);
        }
    return c;
}

// Labels for n vertices drawn from `distinct` values spread over [lo, hi].
std::vector<std::int64_t> random_labels(ref::Gen& gen, Index n, Index distinct, std::int64_t lo, std::int64_t hi) {
    std::vector<std::int64_t> values;
    for (Index k = 0; k < std::max<Index>(distinct, 1); ++k)
        values.push_back(lo + std::int64_t(double(hi - lo) * gen.real() * 0.5) * 2 - (k % 2));
    std::vector<std::int64_t> labels(n);
    for (auto& l : labels) l = values[gen.uniform(0, values.size() - 1)];
    return labels;
}

const char* name(Combine c) { return c == Combine::plus ? "plus" : c == Combine::min ? "min" : "max"; }

// The labels as a Vector with every entry present, in ctx: sparse (indices 0..n-1) or dense form.
template <class L>
Vector<L> label_vector(const std::vector<L>& labels, bool dense, const Context& ctx = default_context()) {
    std::vector<Index> idx(labels.size());
    for (Index v = 0; v < idx.size(); ++v) idx[v] = v;
    Vector<L> h = Vector<L>::from_tuples(labels.size(), idx, labels, plus_op{}, Context::cpu());
    if (dense) h.to_dense();
    REQUIRE(h.nvals() == labels.size());
    return h.to(ctx);
}

template <class T>
void check_random_contractions(std::uint64_t seed) {
    ref::Gen gen(seed);
    constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
    for (Index n : {Index(0), Index(1), Index(2), Index(7), Index(13), Index(40)})
        for (bool skewed : {false, true})
            for (Index distinct : {Index(1), Index(3), n / 2, n, 2 * n}) {
                const Dense<T> d = gen.matrix<T>(n, n, skewed ? 0.1 : 0.3, skewed);
                const Matrix<T> a = ref::to_matrix(d);
                const auto labels = distinct % 2 ? random_labels(gen, n, distinct, -big, big)
                                                 : random_labels(gen, n, distinct, -5, 5);
                for (LabelOrder order : {LabelOrder::first_appearance, LabelOrder::value})
                    for (Combine combine : {Combine::plus, Combine::min, Combine::max})
                        for (bool drop : {false, true}) {
                            if (!ref::in_shard()) continue;
                            INFO("n=" << n << " skewed=" << skewed << " distinct=" << distinct << " order="
                                      << (order == LabelOrder::value ? "value" : "first") << " combine=" << name(combine)
                                      << " drop_loops=" << drop);
                            const auto got = algorithms::contract(
                                a, labels, {.combine = combine, .order = order, .drop_self_loops = drop});
                            const auto map = expected_label_map(labels, order);
                            REQUIRE(got.labels == map);
                            REQUIRE(got.matrix.nrows() == map.size());
                            REQUIRE(got.matrix.ncols() == map.size());
                            REF_REQUIRE_SAME(ref::to_dense(got.matrix), brute_contract(d, labels, map, combine, drop));
                            // The same labels in a Vector, sparse or dense, where A lives or on the host (moved).
                            const Context& at = distinct % 2 ? Context::cpu() : default_context();
                            const auto from_vector = algorithms::contract(
                                a, label_vector(labels, drop, at), {.combine = combine, .order = order, .drop_self_loops = drop});
                            REQUIRE(from_vector.labels == map);
                            REF_REQUIRE_SAME(ref::to_dense(from_vector.matrix), ref::to_dense(got.matrix));
                        }
            }
}

}  // namespace

TEST_CASE("contraction equals the brute-force S*A*S^T on random graphs (double weights)", "[contract]") {
    check_random_contractions<double>(11);
}

TEST_CASE("contraction equals the brute-force S*A*S^T on random graphs (int32 weights)", "[contract]") {
    check_random_contractions<std::int32_t>(12);
}

TEST_CASE("contraction of a small graph by hand", "[contract]") {
    // a->b 2, b->c 3, c->a 1.5, c->d 4, d->d 1 with labels a=7, b=-3, c=7, d=0.
    const std::vector<Index> r = {0, 1, 2, 2, 3}, c = {1, 2, 0, 3, 3};
    const Matrix<double> a = Matrix<double>::from_tuples(4, 4, r, c, std::vector<double>{2, 3, 1.5, 4, 1});
    const std::vector<int> labels = {7, -3, 7, 0};
    auto got = algorithms::contract(a, labels);
    CHECK(got.labels == std::vector<int>{7, -3, 0});
    Dense<double> want(3, 3);
    want(0, 0) = 1.5, want(0, 1) = 2, want(0, 2) = 4, want(1, 0) = 3, want(2, 2) = 1;
    REF_REQUIRE_SAME(ref::to_dense(got.matrix), want);

    got = algorithms::contract(a, labels, {.order = LabelOrder::value, .drop_self_loops = true});
    CHECK(got.labels == std::vector<int>{-3, 0, 7});
    Dense<double> want2(3, 3);
    want2(0, 2) = 3, want2(2, 0) = 2, want2(2, 1) = 4;
    REF_REQUIRE_SAME(ref::to_dense(got.matrix), want2);

    // Every vertex in its own cluster, numbered by value: the graph itself.
    const std::vector<std::uint64_t> own = {10, 20, 30, 40};
    REF_REQUIRE_SAME(ref::to_dense(algorithms::contract(a, own, {.order = LabelOrder::value}).matrix), ref::to_dense(a));
}

TEST_CASE("labels are renumbered compactly in either order", "[contract]") {
    const std::vector<std::int64_t> labels = {5, -2, 5, 9, -2, std::numeric_limits<std::int64_t>::min(), 9};
    const auto first = algorithms::compact_labels(std::span<const std::int64_t>(labels));
    CHECK(first.compact == std::vector<Index>{0, 1, 0, 2, 1, 3, 2});
    CHECK(first.labels == std::vector<std::int64_t>{5, -2, 9, std::numeric_limits<std::int64_t>::min()});
    const auto value = algorithms::compact_labels(std::span<const std::int64_t>(labels), LabelOrder::value);
    CHECK(value.compact == std::vector<Index>{2, 1, 2, 3, 1, 0, 3});
    CHECK(value.labels == std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), -2, 5, 9});
    const auto none = algorithms::compact_labels(std::span<const std::int64_t>());
    CHECK(none.compact.empty());
    CHECK(none.labels.empty());
}

namespace {
// compact_labels against the obvious renumbering, for labels drawn from `values`.
template <class L>
void check_compact(const std::vector<L>& values, ref::Gen& gen, Index n) {
    std::vector<L> labels(n);
    for (auto& l : labels) l = values[gen.uniform(0, values.size() - 1)];
    for (LabelOrder order : {LabelOrder::first_appearance, LabelOrder::value}) {
        const auto got = algorithms::compact_labels(std::span<const L>(labels), order);
        const auto map = expected_label_map(labels, order);
        REQUIRE(got.labels == map);
        REQUIRE(got.compact.size() == labels.size());
        for (std::size_t v = 0; v < labels.size(); ++v) REQUIRE(map[got.compact[v]] == labels[v]);
    }
}
}  // namespace

TEST_CASE("labels are renumbered by table (a compact range) and by hash or sort (a wide one), every integer type",
          "[contract]") {
    ref::Gen gen(77);
    using lim64 = std::numeric_limits<std::int64_t>;
    for (Index n : {Index(1), Index(5), Index(300)}) {
        INFO("n=" << n);
        check_compact<std::int8_t>({-128, -3, 0, 5, 127}, gen, n);                  // the whole int8 range
        check_compact<std::uint8_t>({0, 17, 255}, gen, n);
        check_compact<std::int16_t>({-32768, 32767, 0}, gen, n);                     // wide for n = 1, 5
        check_compact<std::uint32_t>({4000000000u, 4000000007u, 3999999999u}, gen, n);  // compact, far from 0
        check_compact<std::int64_t>({lim64::max(), lim64::max() - 9, lim64::max() - 4}, gen, n);
        check_compact<std::int64_t>({lim64::min(), lim64::min() + 2, lim64::min() + 1}, gen, n);
        check_compact<std::int64_t>({lim64::min(), 0, lim64::max()}, gen, n);       // the widest range
        check_compact<std::uint64_t>({~std::uint64_t(0), 0, 12345}, gen, n);
    }
}

TEST_CASE("the labels' range is found with its least and greatest label at any position", "[contract]") {
    // (The range is read in two chains, even and odd positions, and a last odd label alone.)
    for (Index n : {Index(1), Index(2), Index(3), Index(6), Index(7)})
        for (Index at_lo = 0; at_lo < n; ++at_lo)
            for (Index at_hi = 0; at_hi < n; ++at_hi) {
                if (n > 1 && at_lo == at_hi) continue;
                std::vector<std::int64_t> labels(n, 50);
                labels[at_lo] = -7;
                if (n > 1) labels[at_hi] = 90;
                INFO("n=" << n << " least at " << at_lo << ", greatest at " << at_hi);
                for (LabelOrder order : {LabelOrder::first_appearance, LabelOrder::value}) {
                    const auto got = algorithms::compact_labels(std::span<const std::int64_t>(labels), order);
                    const auto map = expected_label_map(labels, order);
                    REQUIRE(got.labels == map);
                    for (std::size_t v = 0; v < labels.size(); ++v) REQUIRE(map[got.compact[v]] == labels[v]);
                }
            }
}

namespace {
// hybla::indicator (where the default context says) against the obvious numbering: the labels of the numbers,
// Sᵀ with one entry 1 per vertex at its label's number, S listing each number's vertices in increasing order.
template <class L>
void check_indicator(const std::vector<L>& labels) {
    for (LabelOrder order : {LabelOrder::first_appearance, LabelOrder::value}) {
        INFO("n=" << labels.size() << " order=" << (order == LabelOrder::value ? "value" : "first"));
        const auto ind = indicator<double>(labels, order);
        const auto map = expected_label_map(labels, order);
        REQUIRE(ind.labels == map);
        const Index n = labels.size(), k = map.size();
        const Matrix<double> s = ind.s.to(Context::cpu()), st = ind.st.to(Context::cpu());
        REQUIRE(s.nrows() == k);
        REQUIRE(s.ncols() == n);
        REQUIRE(st.nrows() == n);
        REQUIRE(st.ncols() == k);
        REQUIRE(s.nvals() == n);
        REQUIRE(st.nvals() == n);
        std::vector<std::vector<Index>> rows(k);
        for (Index v = 0; v < n; ++v) {
            const Index c = Index(std::find(map.begin(), map.end(), labels[v]) - map.begin());
            rows[c].push_back(v);
            REQUIRE(st.row_offsets()[v] == v);
            REQUIRE(st.col_indices()[v] == c);
        }
        REQUIRE(st.row_offsets()[n] == n);
        Index p = 0;
        for (Index c = 0; c < k; ++c) {
            REQUIRE(s.row_offsets()[c] == p);
            for (Index v : rows[c]) REQUIRE(s.col_indices()[p++] == v);
        }
        REQUIRE(s.row_offsets()[k] == n);
        for (double x : s.values()) REQUIRE(x == 1.0);
        for (double x : st.values()) REQUIRE(x == 1.0);
        // The same labels in a Vector, sparse and dense, where the default context says (on the GPU read in
        // place) and on the host: the same numbering, S and Sᵀ.
        for (bool dense : {false, true})
            for (const Context& ctx : {default_context(), Context::cpu()}) {
                INFO("from a Vector, dense=" << dense << " on " << (ctx.is_cuda() ? "the GPU" : "the host"));
                const auto vind = indicator<double>(label_vector(labels, dense, ctx), order);
                REQUIRE(vind.labels == map);
                REQUIRE(vind.s.context() == ctx);
                REF_REQUIRE_SAME(ref::to_dense(vind.s), ref::to_dense(s));
                REF_REQUIRE_SAME(ref::to_dense(vind.st), ref::to_dense(st));
                REQUIRE(std::ranges::equal(vind.s.to(Context::cpu()).col_indices(), s.col_indices()));
            }
    }
}
// S's and Sᵀ's values as T: n ones each (on the GPU written with the numbering for words of 1, 2, 4 and 8
// bytes), the structure that of the double indicator.
template <class T, class L>
void check_ones(const std::vector<L>& labels) {
    INFO("n=" << labels.size() << " value bytes=" << sizeof(T));
    const auto ind = indicator<T>(labels, LabelOrder::value);
    const auto ref = indicator<double>(labels, LabelOrder::value);
    REQUIRE(ind.labels == ref.labels);
    const Matrix<T> s = ind.s.to(Context::cpu()), st = ind.st.to(Context::cpu());
    const Matrix<double> rs = ref.s.to(Context::cpu()), rst = ref.st.to(Context::cpu());
    REQUIRE(std::ranges::equal(s.col_indices(), rs.col_indices()));
    REQUIRE(std::ranges::equal(st.col_indices(), rst.col_indices()));
    REQUIRE(s.values().size() == labels.size());
    REQUIRE(st.values().size() == labels.size());
    for (T x : s.values()) REQUIRE(x == T(1));
    for (T x : st.values()) REQUIRE(x == T(1));
}
template <class L>
std::vector<L> drawn(ref::Gen& gen, Index n, const std::vector<L>& values) {
    std::vector<L> labels(n);
    for (auto& l : labels) l = values[gen.uniform(0, values.size() - 1)];
    return labels;
}
}  // namespace

TEST_CASE("the label indicator S and its transpose, every label type, compact and wide ranges", "[contract]") {
    ref::Gen gen(91);
    using lim64 = std::numeric_limits<std::int64_t>;
    using lim32 = std::numeric_limits<std::int32_t>;
    check_indicator(std::vector<std::int64_t>{});
    for (Index n : {Index(1), Index(2), Index(7), Index(300), Index(5001)}) {
        // Few, many and all-distinct labels in a compact range (a table on either backend).
        for (Index distinct : {Index(1), Index(3), n / 3 + 1, n}) {
            std::vector<std::int64_t> values;
            for (Index c = 0; c < distinct; ++c) values.push_back(std::int64_t(gen.uniform(0, 4 * n)) - std::int64_t(n));
            check_indicator(drawn(gen, n, values));
            std::vector<std::uint32_t> shuffled(n);
            for (Index v = 0; v < n; ++v) shuffled[v] = std::uint32_t((v * 7919) % n + 4000000000u);
            check_indicator(shuffled);  // each vertex its own label, far from zero
        }
        check_indicator(drawn<std::int32_t>(gen, n, {lim32::min(), lim32::min() + 5, lim32::min() + 2}));
        check_indicator(drawn<std::int32_t>(gen, n, {lim32::max(), lim32::max() - 1, -1, 0}));
        check_indicator(drawn<std::int64_t>(gen, n, {lim64::max(), lim64::max() - 9, lim64::max() - 4}));
        check_indicator(drawn<std::int64_t>(gen, n, {lim64::min(), lim64::min() + 2, lim64::min() + 1}));
        check_indicator(drawn<std::uint64_t>(gen, n, {~std::uint64_t(0), ~std::uint64_t(0) - 3}));
        // 8-byte labels go up as their low halves where the high halves agree (above; also 2^40 + a few), and
        // whole where a compact range crosses a multiple of 2^32 or zero.
        constexpr std::uint64_t two32 = std::uint64_t(1) << 32;
        check_indicator(drawn<std::uint64_t>(gen, n, {(two32 << 8) + 5, (two32 << 8) + 1, (two32 << 8) + 9}));
        check_indicator(drawn<std::uint64_t>(gen, n, {two32 - 2, two32 + 1, two32, two32 - 1}));
        check_indicator(drawn<std::int64_t>(gen, n, {-2, 3, -1, 0}));
        // Wide ranges (numbered on the host) and 1- and 2-byte labels.
        check_indicator(drawn<std::int64_t>(gen, n, {lim64::min(), 0, lim64::max(), 17}));
        check_indicator(drawn<std::uint32_t>(gen, n, {0u, 4000000000u, 12345u}));
        check_indicator(drawn<std::int8_t>(gen, n, {-128, -3, 0, 5, 127}));
        check_indicator(drawn<std::uint16_t>(gen, n, {0, 65535, 300}));
        const auto few = drawn<std::int64_t>(gen, n, {-4, 9, 2, 2, 30});
        check_ones<float>(few);
        check_ones<bool>(few);
        check_ones<std::int16_t>(few);
        check_ones<std::uint64_t>(few);
    }
}

namespace {
// The indicator where the default context says against the host's (checked against the obvious numbering
// above), for sizes where that check is too slow: labels, S and Sᵀ, from the host array and from a Vector.
template <class L>
void same_as_host(const std::vector<L>& labels) {
    for (LabelOrder order : {LabelOrder::first_appearance, LabelOrder::value}) {
        INFO("n=" << labels.size() << " order=" << (order == LabelOrder::value ? "value" : "first"));
        const auto want = indicator<double>(labels, order, Context::cpu());
        const auto from_array = indicator<double>(labels, order);
        const auto from_vector = indicator<double>(label_vector(labels, true), order);
        for (const auto* got : {&from_array, &from_vector}) {
            REQUIRE(got->labels == want.labels);
            const Matrix<double> s = got->s.to(Context::cpu()), st = got->st.to(Context::cpu());
            REQUIRE(std::ranges::equal(s.row_offsets(), want.s.row_offsets()));
            REQUIRE(std::ranges::equal(s.col_indices(), want.s.col_indices()));
            REQUIRE(std::ranges::equal(st.row_offsets(), want.st.row_offsets()));
            REQUIRE(std::ranges::equal(st.col_indices(), want.st.col_indices()));
            REQUIRE(std::ranges::equal(s.values(), want.s.values()));
        }
    }
}
}  // namespace

// On the GPU the vertices go in tiles of 256, ranked by a look-back across tiles, and a vertex whose label first
// appears in an earlier tile waits for that tile's number: many tiles, labels spanning them, and one label per
// vertex.
TEST_CASE("the label indicator over many tiles of vertices", "[contract]") {
    ref::Gen gen(17);
    for (Index n : {Index(255), Index(256), Index(257), Index(300007)}) {
        std::vector<std::int64_t> few(n), many(n), distinct(n), giant(n);
        for (Index v = 0; v < n; ++v) {
            few[v] = std::int64_t(gen.uniform(0, 6)) * 1000 - 3000;
            many[v] = std::int64_t(gen.uniform(0, n / 3 + 1));
            distinct[v] = std::int64_t((v * 7919) % n);
            giant[v] = gen.uniform(0, 9) == 0 ? std::int64_t(v) : std::int64_t(n + 5);  // one label most vertices share
        }
        same_as_host(few);
        same_as_host(many);
        same_as_host(distinct);
        same_as_host(giant);
        std::vector<std::uint32_t> narrow(many.begin(), many.end());
        same_as_host(narrow);
        // The last vertex's label alone makes a compact range cross zero (8-byte labels then go up whole, not as
        // their low halves) or makes the range too wide for a table (numbered on the host).
        std::vector<std::int64_t> crossing = many, wide = many;
        crossing.back() = -1;
        wide.back() = std::int64_t(1) << 31;
        std::vector<std::uint32_t> wide32 = narrow;
        wide32.back() = 4000000000u;
        same_as_host(crossing);
        same_as_host(wide);
        same_as_host(wide32);
    }
}

// On the GPU S's rows are placed in any order, then sorted where they lie: a warp a row of up to 32 vertices, a
// block a row of up to 256, 1024 or 4096 in shared memory (one, four or sixteen a thread), and a block a longer row
// through a bitmap of the vertices where they are at most 327,680; with more vertices, a longer row sends every row
// to one radix sort. Up to 131,072 vertices every row of over 32 goes through the bitmap (a kernel without the
// radix sorts). Rows of each size on either side of those bounds, their vertices spread over the graph.
TEST_CASE("the label indicator's rows at every size its row sorts handle", "[contract]") {
    ref::Gen gen(29);
    const std::vector<Index> sizes = {1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 9000, 40000};
    for (Index n : {Index(0), Index(131072), Index(131073), Index(262144), Index(327680), Index(327681)}) {
        std::vector<std::int64_t> labels;
        for (std::size_t i = 0; i < sizes.size(); ++i)
            for (int copies = 0; copies < (sizes[i] > 4096 ? 1 : 3); ++copies)
                labels.insert(labels.end(), sizes[i], std::int64_t(10 * i + copies));
        while (labels.size() < n) labels.push_back(-1 - std::int64_t(labels.size() % 100000));  // (rows of 2 to 4)
        for (std::size_t v = labels.size(); v > 1; --v) std::swap(labels[v - 1], labels[gen.uniform(0, v - 1)]);
        // The last of 2^18 vertices has every bit of the block sort's keys set, as its padding has: in a row of 33-34.
        if (n == 262144) labels.back() = 10 * 4;
        same_as_host(labels);
    }
    // One label over more vertices than the bitmap holds: the radix sort with one row.
    same_as_host(std::vector<std::int64_t>(327681, 5));
}

TEST_CASE("contraction refuses a non-square graph and a label vector of the wrong length", "[contract]") {
    const Matrix<double> rect(3, 4), sq(5, 5);
    CHECK_THROWS_AS(algorithms::contract(rect, std::vector<int>{1, 2, 3}), DimensionMismatch);
    CHECK_THROWS_WITH(algorithms::contract(rect, std::vector<int>{1, 2, 3}), Catch::Contains("must be square, got 3x4"));
    CHECK_THROWS_AS(algorithms::contract(sq, std::vector<int>{1, 2, 3, 4}), InvalidValue);
    CHECK_THROWS_WITH(algorithms::contract(sq, std::vector<int>{1, 2, 3, 4}),
                      Catch::Contains("expected one label per vertex, 5 in all, got 4 labels"));
    CHECK_THROWS_AS(algorithms::contract(sq, std::vector<long>(6, 0)), InvalidValue);
    CHECK_THROWS_AS(algorithms::contract(Matrix<double>(0, 0), std::vector<int>{1}), InvalidValue);
    // Labels in a Vector: its size, and every entry present.
    CHECK_THROWS_WITH(algorithms::contract(sq, label_vector(std::vector<int>{1, 2, 3, 4}, false)),
                      Catch::Contains("expected one label per vertex, 5 in all, got 4 labels"));
    Vector<int> holes = label_vector(std::vector<int>{1, 2, 3, 4, 5}, false, Context::cpu());
    holes.remove(2);
    CHECK_THROWS_AS(algorithms::contract(sq, holes.to(default_context())), InvalidValue);
    CHECK_THROWS_WITH(algorithms::contract(sq, holes.to(default_context())),
                      Catch::Contains("every vertex needs a label; the label vector of size 5 has 4 entries"));
    CHECK_THROWS_WITH(indicator<float>(holes), Catch::Contains("every vertex needs a label; the vector of size 5 has 4"));
}
