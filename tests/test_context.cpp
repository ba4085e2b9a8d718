// Contexts (backend, device, stream): equality, refused devices, objects on two streams; the limits a large graph
// meets on the GPU (the segmented sort's counts, the SpMM's partial results), their arithmetic checked with
// synthetic shapes on the host and their batches forced small on the GPU; HYBLA_DEBUG_SYNC.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/batching.hpp"
#include "engine/hybla.hpp"
#include "engine/memory.hpp"
#include "reference.hpp"
#include "scoped_env.hpp"

using namespace hybla;
using Catch::Matchers::Contains;
using ref::Dense;

namespace {

// A stream of its own on the device for the test's life (non-blocking: not ordered with the default stream).
// Declared before the objects that use it, so that it ends after them.
class TestStream {
public:
    explicit TestStream(int device) : device_(device), stream_(cuda::stream_create(device)) {}
    ~TestStream() { cuda::stream_destroy(stream_, device_); }
    TestStream(const TestStream&) = delete;
    TestStream& operator=(const TestStream&) = delete;
    void* get() const { return stream_; }

private:
    int device_;
    void* stream_;
};

using hybla_test::EnvGuard;

constexpr std::uint64_t two31 = std::uint64_t(1) << 31;

// The ranges must be consecutive, cover every row, and keep within both limits.
void check_cover(const std::vector<Offset>& off, const std::vector<cuda::RowRange>& ranges, std::uint64_t max_items,
                 std::uint64_t max_rows) {
    Index at = 0;
    for (const cuda::RowRange& r : ranges) {
        CHECK(r.begin == at);
        CHECK(r.end > r.begin);
        CHECK(r.end - r.begin <= max_rows);
        CHECK(off[r.end] - off[r.begin] <= max_items);
        at = r.end;
    }
    CHECK(at == off.size() - 1);
}

// A random m x n matrix (values as ref::Gen gives them) built on the host and moved to ctx, without a dense
// reference (too large for one).
Matrix<double> random_sparse(ref::Gen& g, Index m, Index n, Index per_row, const Context& ctx) {
    std::vector<Index> r, c;
    std::vector<double> v;
    for (Index i = 0; i < m; ++i)
        for (Index p = 0; p < per_row; ++p) {
            r.push_back(i);
            c.push_back(g.uniform(0, n - 1));
            v.push_back(g.value<double>());
        }
    return Matrix<double>::from_tuples(m, n, r, c, v, plus_op{}, Context::cpu()).to(ctx);
}

template <class T>
std::vector<T> host_values(const DenseMatrix<T>& d) {
    const DenseMatrix<T> h = d.to(Context::cpu());
    return std::vector<T>(h.data().begin(), h.data().end());
}
// The first difference of two value lists ("" when equal), so that a failure prints one value, not millions.
template <class T>
std::string first_difference(const std::vector<T>& got, const std::vector<T>& want) {
    if (got.size() != want.size()) return std::to_string(got.size()) + " values, expected " + std::to_string(want.size());
    const auto p = std::mismatch(got.begin(), got.end(), want.begin());
    if (p.first == got.end()) return {};
    return "at " + std::to_string(p.first - got.begin()) + ": " + std::to_string(*p.first) + ", expected " +
           std::to_string(*p.second);
}
#define CHECK_SAME_VALUES(got, want)                         \
    do {                                                     \
        const std::string _d = first_difference(got, want); \
        INFO(_d);                                            \
        CHECK(_d.empty());                                   \
    } while (0)

}  // namespace

// ------------------------------------------------------------------------------------------------ contexts

TEST_CASE("contexts compare by backend, device and stream", "[context]") {
    CHECK(Context::cpu() == Context::cpu());
    CHECK(Context() == Context::cpu());
    CHECK(Context::parse("cpu") == Context::cpu());
    CHECK(Context::cpu().name() == "cpu");
    if (!default_context().is_cuda()) return;
    const int dev = default_context().device();
    TestStream s2(dev), s3(dev);
    const Context c0 = Context::cuda(dev), c2 = Context::cuda(dev, s2.get()), c3 = Context::cuda(dev, s3.get());
    CHECK(c0 == Context::cuda(dev));
    CHECK(c2 == Context::cuda(dev, s2.get()));
    CHECK_FALSE(c0 == c2);
    CHECK_FALSE(c2 == c3);
    CHECK_FALSE(c0 == Context::cpu());
    CHECK(c0.name() == "cuda:" + std::to_string(dev));
    CHECK_THAT(c2.name(), Contains("cuda:" + std::to_string(dev) + " stream 0x"));
    CHECK(c2.name() != c3.name());
}

TEST_CASE("Context::cuda refuses a device that does not exist, naming it and the device count", "[context][errors]") {
    CHECK_THROWS_AS(Context::cuda(-1), InvalidValue);
    CHECK_THROWS_WITH(Context::cuda(-1), Contains("CUDA device -1 does not exist"));
    CHECK_THROWS_AS(Context::cuda(1000), InvalidValue);
    if (!cuda_usable()) return;  // then "no usable CUDA GPU"
    const int count = cuda_device_count();
    CHECK_THROWS_WITH(Context::cuda(1000), Contains("CUDA device 1000 does not exist") &&
                                               Contains("this machine has " + std::to_string(count) + " CUDA device"));
    CHECK_THROWS_WITH(Context::cuda(count), Contains("CUDA device " + std::to_string(count) + " does not exist"));
    CHECK_NOTHROW(Context::cuda(count - 1));
    CHECK_THROWS_AS(cuda::multiprocessor_count(count), InvalidValue);
    CHECK(cuda::multiprocessor_count(0) > 0);
}

TEST_CASE("objects on two streams of one device: mixing them is refused, to() moves them after their work",
          "[context][streams]") {
    if (!default_context().is_cuda()) return;  // streams are the GPU's
    const int dev = default_context().device();
    TestStream s2(dev);
    const Context c1 = Context::cuda(dev), c2 = Context::cuda(dev, s2.get());
    ref::Gen g(7);
    const Index n = 300;
    const Dense<double> a0 = g.matrix<double>(n, n, 0.05, true);
    const Matrix<double> a1 = ref::to_matrix(a0).to(c1);
    const Matrix<double> a2 = a1.to(c2);
    REQUIRE(a2.context() == c2);
    REF_REQUIRE_SAME(ref::to_dense(a2), a0);

    // Operands of both streams in one operation: refused, the message naming both streams.
    Matrix<double> p1(n, n, c1), p2(n, n, c2);
    CHECK_THROWS_WITH(mxm(p1, no_mask, no_accum, plus_times{}, a1, a2),
                      Contains("different contexts") && Contains("cuda:" + std::to_string(dev) + " default stream") &&
                          Contains(c2.name()));
    CHECK_THROWS_AS(eWiseAdd(p2, no_mask, no_accum, plus_op{}, a2, a1), InvalidValue);
    Vector<double> u1 = Vector<double>::full(n, 1.0, c1), w2(n, c2);
    CHECK_THROWS_AS(mxv(w2, no_mask, no_accum, plus_times{}, a2, u1), InvalidValue);
    Scalar<double> s1(c1);
    CHECK_THROWS_AS(reduce(s1, no_accum, plus_monoid{}, a2), InvalidValue);

    // The same operations entirely on stream 2 and on the default stream give the same results.
    struct Results {
        Dense<double> product, mv;
        std::vector<double> spmm;
        double sum;
    };
    auto run = [&](const Matrix<double>& a) {
        const Context& c = a.context();
        Matrix<double> p(n, n, c);
        mxm(p, no_mask, no_accum, plus_times{}, a, a);
        Vector<double> u = Vector<double>::full(n, 0.5, c), w(n, c);
        mxv(w, no_mask, no_accum, plus_times{}, p, u);
        DenseMatrix<double> x(n, 40, 0.25, c), y(n, 40, 0.0, c);
        mxm(y, no_mask, no_accum, plus_times{}, a, x);
        Scalar<double> s(c);
        reduce(s, no_accum, plus_monoid{}, w);
        return Results{ref::to_dense(p), ref::to_dense(w), host_values(y), s.value()};
    };
    const Results r1 = run(a1), r2 = run(a2);
    REF_REQUIRE_SAME(r2.product, r1.product);
    REF_REQUIRE_SAME(r2.mv, r1.mv);
    CHECK_SAME_VALUES(r2.spmm, r1.spmm);
    CHECK(r2.sum == r1.sum);

    // to() orders its copy after the work queued on the source's stream: SpMMs queued on stream 2 (nothing
    // waited for once the matrix's plan is made), the result moved to the default stream at once.
    const Index big = 20000, width = 128;
    const Matrix<double> b1 = random_sparse(g, big, big, 40, c1);
    const Matrix<double> b2 = b1.to(c2);
    auto chain = [&](const Matrix<double>& b) {
        DenseMatrix<double> y(big, width, 0.25, b.context());
        for (int it = 0; it < 4; ++it) {
            DenseMatrix<double> z(big, width, 0.0, b.context());
            mxm(z, no_mask, no_accum, plus_times{}, b, y);
            y = std::move(z);
        }
        return y;
    };
    const std::vector<double> want = host_values(chain(b1));
    const DenseMatrix<double> moved = chain(b2).to(c1);
    CHECK(moved.context() == c1);
    CHECK_SAME_VALUES(host_values(moved), want);
    const Matrix<double> back = a2.to(c1);
    REF_REQUIRE_SAME(ref::to_dense(back), a0);
}

TEST_CASE("device arrays: small blocks kept per stream are handed out once, on their own stream, at any size",
          "[context][memory]") {
    if (!default_context().is_cuda()) return;  // the block cache is the GPU's
    const int dev = default_context().device();
    TestStream s2(dev);
    const Context contexts[2] = {Context::cuda(dev), Context::cuda(dev, s2.get())};
    std::mt19937_64 rng(5);
    // Sizes around the classes' edges (1 element, 2^k - 1, 2^k, 2^k + 1 bytes' worth; beyond 1 MiB the classes
    // of a quarter octave: 1.25 MiB, 2.5 MiB and their neighbours) and beyond the largest kept block (8 MiB), on
    // both streams; each live array holds its own number, checked after every round of frees and allocations (a
    // block handed out twice would hold another array's number).
    std::vector<std::size_t> sizes = {1,      2,      3,      63,     64,     65,     255,     256,     257,
                                      4095,   4096,   4097,   262143, 262144, 262145, 327679,  327680,  327681,
                                      600000, 655360, 655361, 900000, 2097151, 2097152, 2097153};
    struct Live {
        Array<std::uint32_t> a;
        std::uint32_t tag;
    };
    std::vector<Live> live;  // (declared after the streams: the arrays go before their stream ends)
    std::uint32_t next = 1;
    auto check_all = [](const std::vector<Live>& arrays) {
        for (const Live& l : arrays) {
            const Array<std::uint32_t> h = l.a.to(Context::cpu());
            REQUIRE(std::all_of(h.begin(), h.end(), [&](std::uint32_t v) { return v == l.tag; }));
        }
    };
    for (int round = 0; round < 6; ++round) {
        for (int i = 0; i < 40; ++i) {
            const Context& c = contexts[rng() % 2];
            const std::size_t n = sizes[rng() % sizes.size()];
            live.push_back(Live{Array<std::uint32_t>(n, next, c), next});
            ++next;
        }
        check_all(live);
        std::shuffle(live.begin(), live.end(), rng);
        live.resize(live.size() / 3);  // two thirds freed, their blocks kept or handed back
        check_all(live);
    }
    live.clear();
    {
        // A stream that ends hands its kept blocks back; arrays made on a new stream after it are sound.
        TestStream s3(dev);
        const Context c3 = Context::cuda(dev, s3.get());
        for (std::size_t n : sizes) Array<std::uint32_t>(n, 7u, c3);
    }
    TestStream s4(dev);
    const Context c4 = Context::cuda(dev, s4.get());
    std::vector<Live> on_s4;
    for (std::size_t n : sizes) on_s4.push_back(Live{Array<std::uint32_t>(n, std::uint32_t(n), c4), std::uint32_t(n)});
    check_all(on_s4);
}

// ------------------------------------------------------------------------------------------------ limits

TEST_CASE("row_batches: whole rows, each call below 2^31 entries and rows", "[context][limits]") {
    using cuda::max_sort_items;
    using cuda::max_sort_rows;
    using cuda::row_batches;
    using V = std::vector<Offset>;
    using R = std::vector<cuda::RowRange>;
    CHECK(max_sort_items == two31 - 1);
    CHECK(max_sort_rows == two31 - 1);
    CHECK(row_batches(V{}, max_sort_items, max_sort_rows, "sort").empty());
    CHECK(row_batches(V{0}, max_sort_items, max_sort_rows, "sort").empty());
    CHECK(row_batches(V{0, 0, 0}, max_sort_items, max_sort_rows, "sort") == R{{0, 2}});
    // Two rows whose entries sum to just below, exactly at and just above 2^31.
    CHECK(row_batches(V{0, two31 / 2, two31 - 1}, max_sort_items, max_sort_rows, "sort") == R{{0, 2}});
    CHECK(row_batches(V{0, two31 / 2, two31}, max_sort_items, max_sort_rows, "sort") == R{{0, 1}, {1, 2}});
    CHECK(row_batches(V{0, two31 / 2, two31 + 1}, max_sort_items, max_sort_rows, "sort") == R{{0, 1}, {1, 2}});
    // A row of 2^31 - 1 entries alone; empty rows join their neighbours.
    const V one_full{0, 0, 5, 5, 5 + max_sort_items, 5 + max_sort_items, 6 + max_sort_items};
    CHECK(row_batches(one_full, max_sort_items, max_sort_rows, "sort") == R{{0, 3}, {3, 5}, {5, 6}});
    // Many rows: 5 * 2^30 entries in 10 rows of 2^29.
    V many{0};
    for (int i = 0; i < 10; ++i) many.push_back(many.back() + two31 / 4);
    const R cut = row_batches(many, max_sort_items, max_sort_rows, "sort");
    CHECK(cut == R{{0, 3}, {3, 6}, {6, 9}, {9, 10}});
    check_cover(many, cut, max_sort_items, max_sort_rows);
    // Offsets near the top of 64 bits do not wrap.
    const Offset top = std::numeric_limits<Offset>::max() - 10;
    CHECK(row_batches(V{top, top + 3, top + 10}, max_sort_items, max_sort_rows, "sort") == R{{0, 2}});
    // The row limit, small here (2^31 rows are too many to list).
    const V empties(11, 0);
    const R by_rows = row_batches(empties, max_sort_items, 3, "sort");
    CHECK(by_rows == R{{0, 3}, {3, 6}, {6, 9}, {9, 10}});
    check_cover(empties, by_rows, max_sort_items, 3);
    // Random rows against small limits.
    std::mt19937_64 rng(5);
    for (int trial = 0; trial < 200; ++trial) {
        V off{0};
        const std::uint64_t rows = rng() % 60, max_items = 1 + rng() % 40, max_rows = 1 + rng() % 9;
        for (std::uint64_t i = 0; i < rows; ++i) off.push_back(off.back() + rng() % (max_items + 1));
        check_cover(off, row_batches(off, max_items, max_rows, "sort"), max_items, max_rows);
    }
}

TEST_CASE("row_batches: a single row over the limit is refused, named with its count", "[context][limits][errors]") {
    using cuda::max_sort_items;
    using cuda::max_sort_rows;
    using V = std::vector<Offset>;
    CHECK_THROWS_AS(cuda::row_batches(V{0, two31}, max_sort_items, max_sort_rows, "sort"), InvalidValue);
    CHECK_THROWS_WITH(cuda::row_batches(V{0, 5, 5 + two31, 10 + two31}, max_sort_items, max_sort_rows,
                                        "mxm_pruned (sorting candidates)", 1000),
                      Contains("mxm_pruned (sorting candidates): row 1001 holds 2147483648 entries") &&
                          Contains("2147483647"));
    CHECK_THROWS_WITH(cuda::row_batches(V{0, 3, 3, 20}, 16, 4, "sort"), Contains("row 2 holds 17 entries"));
    CHECK_NOTHROW(cuda::row_batches(V{0, 3, 3, 19}, 16, 4, "sort"));
}

TEST_CASE("rows_within: the SpMM's partial rows within a fixed size", "[context][limits]") {
    using cuda::rows_within;
    const std::uint64_t gib = std::uint64_t(1) << 30;
    // 1024 doubles a row: 8 KiB, 2^17 rows in 1 GiB; 2^27 such rows fill it 2^10 times.
    const std::uint64_t per = rows_within(1024, sizeof(double), gib);
    CHECK(per == std::uint64_t(1) << 17);
    CHECK(per * 1024 * sizeof(double) <= gib);
    CHECK(((std::uint64_t(1) << 27) + per - 1) / per == 1024);
    // Just below, at and above one piece's size.
    CHECK(rows_within(64, sizeof(float), 64 * sizeof(float) - 1) == 1);
    CHECK(rows_within(64, sizeof(float), 64 * sizeof(float)) == 1);
    CHECK(rows_within(64, sizeof(float), 2 * 64 * sizeof(float) - 1) == 1);
    CHECK(rows_within(64, sizeof(float), 2 * 64 * sizeof(float)) == 2);
    // Widths whose piece alone passes the limit, or whose size in bytes passes 64 bits: one piece a batch.
    CHECK(rows_within(gib, sizeof(double), gib) == 1);
    CHECK(rows_within(std::uint64_t(1) << 62, sizeof(double), gib) == 1);
    CHECK(rows_within(0, sizeof(double), gib) == std::numeric_limits<std::uint64_t>::max());
    for (std::uint64_t w : {1, 3, 33, 64, 130, 1000, 4096})
        for (std::size_t e : {1, 4, 8})
            for (std::uint64_t limit : {std::uint64_t(1), std::uint64_t(4096), std::uint64_t(1) << 20, gib}) {
                const std::uint64_t p = rows_within(w, e, limit);
                CHECK(p >= 1);
                if (w * e <= limit) {
                    CHECK(p * w * e <= limit);
                    CHECK((p + 1) * w * e > limit);
                }
            }
}

namespace {

// C = A ⊕.⊗ B (+ accum with C) by definition, as the SpMM test of test_mxm.cpp.
template <class Sr, class T, class Accum>
std::vector<T> spmm_reference(const Dense<T>& a, const DenseMatrix<T>& b, const DenseMatrix<T>& c0, Accum accum) {
    std::vector<T> out(a.nrows * b.ncols());
    for (Index i = 0; i < a.nrows; ++i)
        for (Index j = 0; j < b.ncols(); ++j) {
            T acc = Sr::template zero<T>();
            for (Index x = 0; x < a.ncols; ++x)
                if (a(i, x)) acc = Sr::template add<T>(acc, Sr::template multiply<T>(*a(i, x), b(x, j)));
            if constexpr (std::is_same_v<Accum, NoAccum>) out[i * b.ncols() + j] = acc;
            else out[i * b.ncols() + j] = accum(c0(i, j), acc);
        }
    return out;
}

// Rows of 0 to 1500 entries with the SpMM's workers' partial rows held to 1, 2, 3, 7 and 50 workers' worth
// (HYBLA_SPMM_PARTIAL): a single worker walking the whole matrix, and a few long shares each holding the ends of
// several rows. The CPU backend ignores the variable.
template <class Sr, class T, class Accum = NoAccum>
void check_spmm_batches(std::uint64_t seed, Accum accum = {}) {
    ref::Gen g(seed);
    std::mt19937_64 rng(seed);
    const Index k = 1600;
    std::vector<Index> all(k);
    for (Index x = 0; x < k; ++x) all[x] = x;
    const std::vector<Index> lengths{3, 255, 0, 256, 257, 7, 600, 0, 1, 1500, 2, 513, 1024, 31, 32, 33, 64, 65, 200, 288};
    const Index m = lengths.size();
    Dense<T> a0(m, k);
    for (Index i = 0; i < m; ++i) {
        std::shuffle(all.begin(), all.end(), rng);
        for (Index p = 0; p < lengths[i]; ++p) a0(i, all[p]) = g.template value<T>();
    }
    const Matrix<T> a = ref::to_matrix(a0);
    for (Index w : {Index(1), Index(3), Index(33), Index(64), Index(130)}) {
        const DenseMatrix<T> b0 = ref::random_dense<T>(g, k, w);
        const DenseMatrix<T> c0 = ref::random_dense<T>(g, m, w);
        const std::vector<T> want = spmm_reference<Sr>(a0, b0, c0, accum);
        const DenseMatrix<T> b = b0.to(default_context());
        for (std::uint64_t per : {1, 2, 3, 7, 50}) {
            INFO("seed " << seed << ", width " << w << ", at most " << per << " workers");
            const EnvGuard limit("HYBLA_SPMM_PARTIAL", std::to_string(per * 2 * w * sizeof(T)));
            DenseMatrix<T> c = c0.to(default_context());
            mxm(c, no_mask, accum, Sr{}, a, b);
            CHECK_SAME_VALUES(host_values(c), want);
        }
    }
}

}  // namespace

TEST_CASE("SpMM: few long shares under a small partial limit give the same result", "[context][limits][spmm]") {
    check_spmm_batches<plus_times, double>(81);
    check_spmm_batches<plus_times, double>(82, plus_op{});
    check_spmm_batches<plus_times, float>(83, plus_op{});
    check_spmm_batches<min_plus, std::int64_t>(84);
    check_spmm_batches<max_times, std::int32_t>(85, max_op{});
}

TEST_CASE("SpMM: the workers' partial rows stay within HYBLA_SPMM_PARTIAL", "[context][limits][spmm]") {
    // 32 rows of 40000 entries, 128 doubles wide: each share's split rows leave two partial rows of 1 KiB, a few
    // MB over a GPU's default shares (thousands of workers); with HYBLA_SPMM_PARTIAL at 1 MiB the call holds
    // at most that besides its output and its plan (a row number a share), with the same result.
    ref::Gen g(91);
    const Context ctx = default_context();
    const Index m = 32, k = 40000, w = 128;
    std::vector<Index> r, c;
    std::vector<double> v;
    for (Index i = 0; i < m; ++i)
        for (Index x = 0; x < k; ++x) {
            r.push_back(i);
            c.push_back(x);
            v.push_back(g.value<double>());
        }
    const Matrix<double> a = Matrix<double>::from_tuples(m, k, r, c, v, plus_op{}, Context::cpu()).to(ctx);
    const DenseMatrix<double> b = ref::random_dense<double>(g, k, w).to(ctx);
    DenseMatrix<double> y0(m, w, 0.0, ctx);
    mxm(y0, no_mask, no_accum, plus_times{}, a, b);  // makes the matrix's plan
    auto held = [&](DenseMatrix<double>& y) {  // the most the call held beyond what was held before it
        release_kept_device_memory(ctx);  // (else the partial rows come from the block kept by the last call)
        reset_peak_device_memory(ctx);
        const std::size_t before = peak_device_memory(ctx);
        mxm(y, no_mask, no_accum, plus_times{}, a, b);
        return peak_device_memory(ctx) - before;
    };
    DenseMatrix<double> y1(m, w, 0.0, ctx), y2(m, w, 0.0, ctx);
    const std::size_t whole = held(y1);
    const std::size_t limit = 1 << 20;
    std::size_t limited = 0;
    {
        const EnvGuard env("HYBLA_SPMM_PARTIAL", std::to_string(limit));
        limited = held(y2);
    }
    CHECK_SAME_VALUES(host_values(y2), host_values(y1));
    CHECK_SAME_VALUES(host_values(y1), host_values(y0));
    if (ctx.is_cuda()) {
        // The output, a plan of a row number a share (shares of at least 8 entries), the pool's rounding.
        const std::size_t output = m * w * sizeof(double), plan = (m * k / 8) * sizeof(std::uint64_t);
        INFO("held " << whole << " B by default, " << limited << " B within " << limit << " B of partial rows");
        CHECK(limited <= limit + output + plan + (1 << 20));
        CHECK(whole > limited);
    }
}

TEST_CASE("mxm_pruned: candidates sorted in many calls of whole rows, a row over a call's limit named",
          "[context][limits][prune]") {
    // A cutoff below every value makes each row's candidates the whole row, so the longest row of A·A is the
    // largest count one sort call must take. HYBLA_PRUNE_SORT caps a call's entries and rows (the CPU backend
    // ignores it).
    ref::Gen g(23);
    const Index n = 300;
    const Matrix<float> a = ref::random_weights(g, n, n, 0.05);
    Matrix<float> full(n, n);
    mxm(full, no_mask, no_accum, plus_times{}, a, a);
    const Matrix<float> fh = full.to(Context::cpu());
    Offset longest = 0;
    for (Index i = 0; i < n; ++i) longest = std::max(longest, fh.row_offsets()[i + 1] - fh.row_offsets()[i]);
    REQUIRE(longest > 20);
    PruneRule rule;
    rule.cutoff = 1e-6, rule.select = 6, rule.recover = 9, rule.pct = 0.6, rule.mcl_float_products = false;
    for (const char* path : {"0", "1"}) {  // the sorted and the dense-row paths of the GPU
        INFO("HYBLA_PRUNE_DENSE=" << path);
        const EnvGuard dense("HYBLA_PRUNE_DENSE", path);
        Matrix<float> whole(n, n), capped(n, n);
        const PruneStats s1 = mxm_pruned(whole, a, a, rule);
        PruneStats s2;
        {
            const EnvGuard cap("HYBLA_PRUNE_SORT", std::to_string(longest));
            s2 = mxm_pruned(capped, a, a, rule);
        }
        REF_REQUIRE_SAME(ref::to_dense(capped), ref::to_dense(whole));
        CHECK(s2.kept == s1.kept);
        CHECK(s2.chaos == s1.chaos);
        CHECK(s2.kept < s2.expanded);
        const EnvGuard cap("HYBLA_PRUNE_SORT", std::to_string(longest - 1));
        Matrix<float> over(n, n);
        if (default_context().is_cuda())
            CHECK_THROWS_WITH(mxm_pruned(over, a, a, rule),
                              Contains("mxm_pruned (sorting candidates): row ") &&
                                  Contains(" holds " + std::to_string(longest) + " entries"));
        else
            CHECK_NOTHROW(mxm_pruned(over, a, a, rule));
    }
}

// ------------------------------------------------------------------------------------------------ HYBLA_DEBUG_SYNC

// ctest runs this case again with HYBLA_DEBUG_SYNC=1 in the environment (tests/CMakeLists.txt): the setting is
// read once, at the first use; with it every launch waits for the device, and the results stay the same.
TEST_CASE("HYBLA_DEBUG_SYNC: read once, a wait after each launch, the same results", "[context][debug-sync]") {
    const char* e = std::getenv("HYBLA_DEBUG_SYNC");
    const bool on = e && *e && *e != '0';
    CHECK(cuda::debug_sync() == on);
    const bool gpu = default_context().is_cuda();
    const std::uint64_t waits = cuda::debug_waits();

    ref::Gen g(11);
    const Index n = 200;
    const Dense<double> a0 = g.matrix<double>(n, n, 0.05, true);  // heavy rows: the SpMM splits some
    const Matrix<double> a = ref::to_matrix(a0), ah = a.to(Context::cpu());
    Matrix<double> p(n, n), ph(n, n, Context::cpu());
    mxm(p, no_mask, no_accum, plus_times{}, a, a);
    mxm(ph, no_mask, no_accum, plus_times{}, ah, ah);
    REF_REQUIRE_SAME(ref::to_dense(p), ref::to_dense(ph));
    Vector<double> u = Vector<double>::full(n, 0.5), w(n);
    Vector<double> uh = Vector<double>::full(n, 0.5, Context::cpu()), wh(n, Context::cpu());
    mxv(w, no_mask, no_accum, plus_times{}, p, u);
    mxv(wh, no_mask, no_accum, plus_times{}, ph, uh);
    REF_REQUIRE_SAME(ref::to_dense(w), ref::to_dense(wh));
    DenseMatrix<double> x(n, 24, 0.25), y(n, 24), xh(n, 24, 0.25, Context::cpu()), yh(n, 24, 0.0, Context::cpu());
    mxm(y, no_mask, no_accum, plus_times{}, a, x);
    mxm(yh, no_mask, no_accum, plus_times{}, ah, xh);
    CHECK_SAME_VALUES(host_values(y), host_values(yh));
    Scalar<double> s, sh(Context::cpu());
    reduce(s, no_accum, plus_monoid{}, w);
    reduce(sh, no_accum, plus_monoid{}, wh);
    CHECK(s.value() == sh.value());
    const Matrix<float> f = ref::random_weights(g, n, n, 0.05), fh = f.to(Context::cpu());
    PruneRule rule;
    rule.cutoff = 0.01, rule.select = 6, rule.recover = 9, rule.pct = 0.6, rule.mcl_float_products = false;
    Matrix<float> c(n, n), ch(n, n, Context::cpu());
    mxm_pruned(c, f, f, rule);
    mxm_pruned(ch, fh, fh, rule);
    REF_REQUIRE_SAME(ref::to_dense(c), ref::to_dense(ch), 1e-6);

    if (gpu && on) CHECK(cuda::debug_waits() > waits);
    else CHECK(cuda::debug_waits() == waits);
}
