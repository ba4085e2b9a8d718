// Markov clustering: the pruned product and inflation against brute force, the interpretation on hand-made
// limits, and the whole algorithm against van Dongen's mcl: the clusterings mcl 22-282 wrote for the bundled
// graphs (data/*/mcl_I2.0.clusters.txt), and, when the `mcl` program is installed, mcl's own output files for
// generated graphs at -I 1.4, 2 and 4 (compared byte for byte).
#include <algorithm>
#include <cmath>
#include <tuple>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "algorithms/mcl.hpp"
#include "io/abc.hpp"
#include "io/read_graph.hpp"
#include "reference.hpp"

using namespace hybla;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------------------
// Brute-force pruning: the rules of engine/prune_rule.hpp spelled out on a fully sorted row.
std::vector<char> brute_keep(const std::vector<double>& e, const PruneRule& r) {
    const std::size_t n = e.size();
    std::vector<char> keep(n, 0);
    if (n == 0) return keep;
    std::vector<double> above, below;
    for (double v : e) (v >= r.cutoff ? above : below).push_back(v);
    std::sort(above.rbegin(), above.rend());
    std::sort(below.rbegin(), below.rend());
    double mass = 0;
    for (double v : above) mass += v;
    double t = r.cutoff;
    if (r.recover > 0 && above.size() < r.recover && mass < r.pct) {
        t = n <= r.recover ? -1.0 : below[r.recover - above.size() - 1];
    } else if (r.select > 0 && above.size() > r.select) {
        t = above[r.select - 1];
        std::size_t n2 = 0;
        double m2 = 0;
        for (double v : above)
            if (v >= t) {
                ++n2;
                m2 += v;
            }
        if (r.recover > 0 && n2 < r.recover && m2 < r.pct) t = above.size() <= r.recover ? r.cutoff : above[r.recover - 1];
    }
    for (std::size_t i = 0; i < n; ++i) keep[i] = e[i] >= t;
    return keep;
}

struct RefPruned {
    ref::Dense<float> c;
    PruneStats stats;
};
RefPruned brute_pruned(const Matrix<float>& ga, const Matrix<float>& gb, const PruneRule& rule) {
    const auto a = ref::to_dense(ga), b = ref::to_dense(gb);
    RefPruned out{ref::Dense<float>(a.nrows, b.ncols), PruneStats{}};
    for (Index i = 0; i < a.nrows; ++i) {
        std::vector<double> e;
        std::vector<Index> cols;
        for (Index j = 0; j < b.ncols; ++j) {
            bool any = false;
            double s = 0;
            for (Index k = 0; k < a.ncols; ++k)
                if (a(i, k) && b(k, j)) {
                    any = true;
                    s += double(*a(i, k)) * double(*b(k, j));
                }
            if (any) {
                e.push_back(double(float(s)));
                cols.push_back(j);
            }
        }
        if (e.empty()) continue;
        double mx = 0, sq = 0;
        for (double v : e) {
            mx = std::max(mx, v);
            sq += v * v;
        }
        auto keep = brute_keep(e, rule);
        double mass = 0;
        std::size_t kept = 0;
        for (std::size_t x = 0; x < e.size(); ++x)
            if (keep[x]) {
                mass += e[x];
                ++kept;
            }
        out.stats.expanded += e.size();
        out.stats.min_mass = std::min(out.stats.min_mass, mass);
        if (kept == 0 && i < b.ncols) {
            out.c(i, i) = 1.0f;
            kept = 1;
        } else {
            if (kept == 0) {
                mass = 0;
                for (std::size_t x = 0; x < e.size(); ++x) {
                    keep[x] = e[x] == mx;
                    mass += keep[x] ? e[x] : 0;
                    kept += keep[x];
                }
            }
            for (std::size_t x = 0; x < e.size(); ++x)
                if (keep[x]) out.c(i, cols[x]) = float(e[x] / mass);
        }
        out.stats.kept += kept;
        out.stats.chaos = std::max(out.stats.chaos, (mx - sq) * double(kept));
    }
    return out;
}

// ---------------------------------------------------------------------------------------------------------
// Clusterings as sets of names, and mcl's output format.
using Clusters = std::vector<std::vector<std::string>>;

Clusters named(const algorithms::MclResult& r, const io::VertexNames& names) {
    Clusters out;
    for (const auto& c : r.clusters) {
        out.emplace_back();
        for (Index v : c) out.back().push_back(names.name(v));
    }
    return out;
}
std::string as_text(const Clusters& cs) {
    std::string s;
    for (const auto& c : cs) {
        for (std::size_t k = 0; k < c.size(); ++k) s += (k ? "\t" : "") + c[k];
        s += '\n';
    }
    return s;
}
Clusters read_clusters(const fs::path& file) {
    std::ifstream f(file);
    REQUIRE(f.good());
    Clusters out;
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty()) continue;
        std::istringstream in(line);
        out.emplace_back();
        for (std::string w; in >> w;) out.back().push_back(w);
    }
    return out;
}
// The partition as a canonical set of sorted name lists (cluster order and order within clusters ignored).
std::vector<std::vector<std::string>> canonical(Clusters cs) {
    for (auto& c : cs) std::sort(c.begin(), c.end());
    std::sort(cs.begin(), cs.end());
    return cs;
}

bool have_mcl() { return std::system("mcl --version > /dev/null 2>&1") == 0; }

std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// mxm_pruned with HYBLA_PRUNE_DENSE = path ("1": the GPU's dense-row path, "0": its hash path; the CPU
// backend ignores it).
PruneStats pruned_on_path(Matrix<float>& c, const Matrix<float>& a, const Matrix<float>& b, const PruneRule& rule,
                          const char* path) {
    ::setenv("HYBLA_PRUNE_DENSE", path, 1);
    const PruneStats s = mxm_pruned(c, a, b, rule);
    ::unsetenv("HYBLA_PRUNE_DENSE");
    return s;
}
void require_same_pruned(const Matrix<float>& x, const PruneStats& sx, const Matrix<float>& y, const PruneStats& sy) {
    REF_REQUIRE_SAME(ref::to_dense(x), ref::to_dense(y));
    CHECK(sx.expanded == sy.expanded);
    CHECK(sx.kept == sy.kept);
    CHECK(sx.chaos == sy.chaos);
}

struct TempDir {
    fs::path path;
    TempDir() {
        path = fs::temp_directory_path() / ("hybla_mcl_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand()));
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------

TEST_CASE("prune_threshold follows mcl's cutoff, recovery and selection rules, ties included", "[mcl][prune]") {
    ref::Gen g(7);
    std::vector<double> scratch;
    for (int trial = 0; trial < 3000; ++trial) {
        const Index n = g.uniform(0, 40);
        std::vector<double> e(n);
        for (double& v : e) v = double(g.uniform(1, 12)) / 64.0;  // many ties
        PruneRule r;
        r.cutoff = double(g.uniform(0, 8)) / 64.0;
        r.select = g.uniform(0, 12);
        r.recover = g.uniform(0, 16);
        r.pct = double(g.uniform(0, 10)) / 10.0;
        const double t = cpu::prune_threshold(e, r.cutoff, r.select, r.recover, r.pct, scratch);
        const auto want = brute_keep(e, r);
        for (Index x = 0; x < n; ++x) {
            INFO("trial " << trial << " n " << n << " cutoff " << r.cutoff << " S " << r.select << " R " << r.recover
                          << " pct " << r.pct << " at " << x);
            REQUIRE((e[x] >= t) == bool(want[x]));
        }
    }
}

TEST_CASE("mxm_pruned against the brute-force product and pruning", "[mcl][prune]") {
    ref::Gen g(11);
    std::vector<PruneRule> rules(4);
    rules[0].cutoff = 0.05, rules[0].select = 3, rules[0].recover = 5, rules[0].pct = 0.5;
    rules[1].cutoff = 0.2, rules[1].select = 0, rules[1].recover = 0, rules[1].pct = 0.9;  // cutoff alone
    rules[2].cutoff = 0, rules[2].select = 2, rules[2].recover = 4, rules[2].pct = 1.0;
    rules[3] = PruneRule{};  // mcl's defaults
    for (auto& r : rules) r.mcl_float_products = false;
    for (auto [m, k] : g.shapes())
        for (const PruneRule& rule : rules) {
            const Index n = g.uniform(0, 3) == 0 ? m : g.uniform(1, 40);
            const Matrix<float> a = ref::random_weights(g, m, k, 0.3);
            const Matrix<float> b = ref::random_weights(g, k, n, 0.3);
            INFO(m << "x" << k << "x" << n << " cutoff " << rule.cutoff << " S " << rule.select << " R " << rule.recover);
            Matrix<float> c(m, n);
            const PruneStats s = mxm_pruned(c, a, b, rule);
            const RefPruned want = brute_pruned(a, b, rule);
            REF_REQUIRE_SAME(ref::to_dense(c), want.c);
            CHECK(s.expanded == want.stats.expanded);
            CHECK(s.kept == want.stats.kept);
            CHECK(s.chaos == Approx(want.stats.chaos).margin(1e-12));
            CHECK(s.min_mass == Approx(want.stats.min_mass).margin(1e-12));
        }
}

TEST_CASE("mxm_pruned: rows whose values span many binades below the cutoff (recovery reaching far down)",
          "[mcl][prune]") {
    // The GPU sorts only each row's candidates: every entry >= cutoff and at least the `recover` largest, found
    // by counting entries >= cutoff * 2^-j for j < 16 (else the whole row). Row i of B holds 3 entries at each
    // of cutoff * 2^-j, j = 0..24, scaled by (i + 1) / 8 (so rows reach different levels), plus a few large
    // entries and ties; A is the identity, so C = B before pruning.
    const double cutoff = 1.0 / 64;
    const Index m = 9, n = 3 * 25 + 4;
    std::vector<Index> r, c, ar;
    std::vector<float> v;
    for (Index i = 0; i < m; ++i) {
        Index col = 0;
        for (int j = 0; j <= 24; ++j)
            for (int t = 0; t < 3; ++t) r.push_back(i), c.push_back(col++), v.push_back(float(cutoff * std::ldexp(1.0, -j) * double(i + 1) / 8));
        for (int t = 0; t < int(i % 5); ++t) r.push_back(i), c.push_back(col++), v.push_back(0.25f);
        ar.push_back(i);
    }
    const Matrix<float> b = Matrix<float>::from_tuples(m, n, r, c, v, plus_op{});
    const Matrix<float> a = Matrix<float>::from_tuples(m, m, ar, ar, std::vector<float>(m, 1.0f), plus_op{});
    for (Index recover : {Index(0), Index(1), Index(3), Index(4), Index(10), Index(40), Index(50), Index(70), Index(200)})
        for (Index select : {Index(0), Index(2), Index(5)})
            for (double pct : {0.3, 0.99, 1.0}) {
                PruneRule rule;
                rule.cutoff = cutoff, rule.select = select, rule.recover = recover, rule.pct = pct;
                rule.mcl_float_products = false;
                INFO("S " << select << " R " << recover << " pct " << pct);
                Matrix<float> out(m, n);
                const PruneStats st = mxm_pruned(out, a, b, rule);
                const RefPruned want = brute_pruned(a, b, rule);
                REF_REQUIRE_SAME(ref::to_dense(out), want.c);
                CHECK(st.kept == want.stats.kept);
                CHECK(st.chaos == Approx(want.stats.chaos).margin(1e-12));
                CHECK(st.min_mass == Approx(want.stats.min_mass).margin(1e-12));
            }
}

TEST_CASE("mxm_pruned gives the same rows when the GPU takes them in many small batches", "[mcl][prune]") {
    // HYBLA_PRUNE_BATCH caps the products per batch of the CUDA backend (the CPU backend works row by row).
    ref::Gen g(23);
    const Matrix<float> a = ref::random_weights(g, 300, 300, 0.05);
    PruneRule rule;
    rule.cutoff = 0.01, rule.select = 6, rule.recover = 9, rule.pct = 0.6, rule.mcl_float_products = false;
    Matrix<float> whole(300, 300), batched(300, 300);
    const PruneStats s1 = mxm_pruned(whole, a, a, rule);
    ::setenv("HYBLA_PRUNE_BATCH", "97", 1);
    const PruneStats s2 = mxm_pruned(batched, a, a, rule);
    ::unsetenv("HYBLA_PRUNE_BATCH");
    require_same_pruned(batched, s2, whole, s1);
    REF_REQUIRE_SAME(ref::to_dense(whole), brute_pruned(a, a, rule).c);
}

TEST_CASE("mxm_pruned gives the same rows on the GPU's dense-row path and its hash path", "[mcl][prune]") {
    // HYBLA_PRUNE_DENSE=1 sends every batch the CUDA backend can serve through the dense-row accumulator,
    // =0 through the hash SpGEMM with the pruning as its epilogue (the CPU backend ignores both). Column counts past one
    // accumulator tile (1024; 256 and 512 too) and a last partial tile, empty rows, many batches, skewed rows.
    ref::Gen g(31);
    PruneRule rule;
    rule.cutoff = 0.01, rule.select = 7, rule.recover = 11, rule.pct = 0.7, rule.mcl_float_products = false;
    struct Shape { Index m, k, n; double density; };
    std::vector<Shape> shapes = {{0, 5, 7, 0.5}, {1, 1, 1, 1.0}, {1, 40, 1300, 0.2}, {70, 50, 1300, 0.1},
                                 {257, 257, 257, 0.06}, {33, 600, 1025, 0.02}};
    for (auto [m, k] : g.shapes()) shapes.push_back({m, k, Index(g.uniform(1, 700)), 0.3});
    for (const Shape& sh : shapes)
        for (const char* batch : {"", "150"}) {
            INFO(sh.m << "x" << sh.k << "x" << sh.n << " density " << sh.density << " batch '" << batch << "'");
            Matrix<float> a = ref::random_weights(g, sh.m, sh.k, sh.density);
            if (sh.m > 3 && sh.k > 1) a.set(0, 0, 5.0f), a.set(1, Index(sh.k - 1), 2.0f);  // a heavier first row
            const Matrix<float> b = ref::random_weights(g, sh.k, sh.n, sh.density);
            Matrix<float> dense(sh.m, sh.n), sorted(sh.m, sh.n);
            if (*batch) ::setenv("HYBLA_PRUNE_BATCH", batch, 1);
            const PruneStats sd = pruned_on_path(dense, a, b, rule, "1");
            const PruneStats ss = pruned_on_path(sorted, a, b, rule, "0");
            ::unsetenv("HYBLA_PRUNE_BATCH");
            const RefPruned want = brute_pruned(a, b, rule);
            REF_REQUIRE_SAME(ref::to_dense(dense), want.c);
            REF_REQUIRE_SAME(ref::to_dense(sorted), want.c);
            // The other accumulator tile widths (HYBLA_PRUNE_TILE) give the same rows.
            for (const char* tile : {"256", "512", "768"}) {
                INFO("tile " << tile);
                ::setenv("HYBLA_PRUNE_TILE", tile, 1);
                if (*batch) ::setenv("HYBLA_PRUNE_BATCH", batch, 1);
                Matrix<float> other(sh.m, sh.n);
                const PruneStats so = pruned_on_path(other, a, b, rule, "1");
                ::unsetenv("HYBLA_PRUNE_BATCH");
                ::unsetenv("HYBLA_PRUNE_TILE");
                require_same_pruned(other, so, dense, sd);
            }
            CHECK(sd.expanded == want.stats.expanded);
            CHECK(sd.kept == ss.kept);
            CHECK(sd.chaos == Approx(ss.chaos).margin(1e-12));
            CHECK(sd.min_mass == Approx(ss.min_mass).margin(1e-12));
        }
}

TEST_CASE("mxm_pruned: the dense-row path with more row tiles than warps, and empty rows", "[mcl][prune]") {
    // 6000 rows x 2 tiles of 1024 columns: every GPU warp takes several (row, tile) jobs in turn, so the accumulator must be
    // reset between them; every 7th row of A is empty. Compared with the hash path (a brute force of this
    // size would be slow on the CPU).
    ref::Gen g(37);
    PruneRule rule;
    rule.cutoff = 0.001, rule.select = 50, rule.recover = 60, rule.pct = 0.9, rule.mcl_float_products = false;
    std::vector<Index> r, c;
    std::vector<float> v;
    for (Index i = 0; i < 6000; ++i)
        if (i % 7 != 0)
            for (int e = 0; e < 3; ++e) r.push_back(i), c.push_back(Index(g.uniform(0, 199))), v.push_back(float(g.uniform(1, 6)) / 16.0f);
    const Matrix<float> a = Matrix<float>::from_tuples(6000, 200, r, c, v, plus_op{});
    const Matrix<float> b = ref::random_weights(g, 200, 1100, 0.05);
    Matrix<float> dense(6000, 1100), sorted(6000, 1100);
    const PruneStats sd = pruned_on_path(dense, a, b, rule, "1");
    const PruneStats ss = pruned_on_path(sorted, a, b, rule, "0");
    require_same_pruned(dense, sd, sorted, ss);
    const Matrix<float> host = dense.to(Context::cpu());
    for (Index i = 0; i < 6000; i += 7) REQUIRE(host.row_degree(i) == 0);
}

TEST_CASE("mxm_pruned: windows of dense rows between stretches of sparse rows, each batch pruned as it is made",
          "[mcl][prune]") {
    // By default the GPU sends a window of rows through the dense-row accumulator when its products are at least
    // a quarter of its rows x columns, and the rows between such windows through the hash SpGEMM, whose batches
    // are pruned as its epilogue. HYBLA_PRUNE_BATCH=3000 makes windows of 10 rows here (3000 / 300 columns) and
    // hash batches of at most 3000 products. Blocks of heavy rows (about 100 entries of A, 600 products) alternate
    // with blocks of light ones (0 to 3 entries, at most 18 products), their edges inside windows too.
    ref::Gen g(43);
    PruneRule rule;
    rule.cutoff = 0.01, rule.select = 8, rule.recover = 12, rule.pct = 0.7, rule.mcl_float_products = false;
    const Index m = 203, k = 200, n = 300;
    std::vector<Index> r, c;
    std::vector<float> v;
    for (Index i = 0; i < m; ++i) {
        const bool heavy = (i / 37) % 2 == 0;
        const int entries = heavy ? 100 : int(g.uniform(0, 3));
        for (int e = 0; e < entries; ++e)
            r.push_back(i), c.push_back(Index(g.uniform(0, k - 1))), v.push_back(float(g.uniform(1, 8)) / 16.0f);
    }
    const Matrix<float> a = Matrix<float>::from_tuples(m, k, r, c, v, plus_op{});
    const Matrix<float> b = ref::random_weights(g, k, n, 0.02);
    const RefPruned want = brute_pruned(a, b, rule);
    for (const char* batch : {"", "3000"}) {
        INFO("batch '" << batch << "'");
        if (*batch) ::setenv("HYBLA_PRUNE_BATCH", batch, 1);
        Matrix<float> out(m, n);
        const PruneStats s = mxm_pruned(out, a, b, rule);
        ::unsetenv("HYBLA_PRUNE_BATCH");
        REF_REQUIRE_SAME(ref::to_dense(out), want.c);
        CHECK(s.expanded == want.stats.expanded);
        CHECK(s.kept == want.stats.kept);
        CHECK(s.chaos == Approx(want.stats.chaos).margin(1e-12));
        CHECK(s.min_mass == Approx(want.stats.min_mass).margin(1e-12));
    }
}

TEST_CASE("mxm_pruned: the dense-row path keeps products that sum to zero, with and without negative values",
          "[mcl][prune]") {
    // With no sign bit set in A and B the GPU's dense-row accumulators mark absence by -0.0, so an explicit
    // zero product (+0) must still be an entry; with negative values (or -0.0) it keeps presence bytes, and
    // sums that cancel to 0 are entries too. Each is compared with the hash path and the CPU backend.
    ref::Gen g(41);
    PruneRule rule;
    rule.cutoff = 0.01, rule.select = 9, rule.recover = 14, rule.pct = 0.8, rule.mcl_float_products = false;
    const std::vector<float> nonneg = {0.0f, 0.0f, 0.125f, 0.25f, 0.375f};
    const std::vector<float> signed_ = {-0.5f, -0.0f, 0.0f, 0.125f, 0.25f, 0.5f};
    for (const auto* values : {&nonneg, &signed_})
        for (auto [m, k, n] : {std::tuple<Index, Index, Index>{40, 30, 1100}, {7, 5, 33}, {1, 3, 2000}}) {
            INFO(m << "x" << k << "x" << n << (values == &nonneg ? " values >= +0" : " signed values"));
            auto make = [&](Index rows, Index cols, double density) {
                std::vector<Index> r, c;
                std::vector<float> v;
                for (Index i = 0; i < rows; ++i)
                    for (Index j = 0; j < cols; ++j)
                        if (g.real() < density)
                            r.push_back(i), c.push_back(j), v.push_back((*values)[g.uniform(0, values->size() - 1)]);
                return Matrix<float>::from_tuples(rows, cols, r, c, v, first_op{});
            };
            const Matrix<float> a = make(m, k, 0.6), b = make(k, n, 0.4);
            Matrix<float> dense(m, n), sorted(m, n), cpu(m, n, Context::cpu());
            const PruneStats sd = pruned_on_path(dense, a, b, rule, "1");
            const PruneStats ss = pruned_on_path(sorted, a, b, rule, "0");
            require_same_pruned(dense, sd, sorted, ss);
            const PruneStats sc = mxm_pruned(cpu, a.to(Context::cpu()), b.to(Context::cpu()), rule);
            REF_REQUIRE_SAME(ref::to_dense(dense), ref::to_dense(cpu), 1e-6);
            CHECK(sd.expanded == sc.expanded);
            CHECK(sd.kept == sc.kept);
            if (values == &nonneg) REF_REQUIRE_SAME(ref::to_dense(dense), brute_pruned(a, b, rule).c);
        }
}

TEST_CASE("mxm_pruned: float products as mcl's dense kernel, and the argument checks", "[mcl][prune][cpu-only]") {
    // 0.1f * 0.3f rounds differently in float and in double: the flag picks mcl's float products on the CPU.
    Matrix<float> a = Matrix<float>::from_tuples(1, 1, std::vector<Index>{0}, std::vector<Index>{0},
                                                 std::vector<float>{0.1f});
    Matrix<float> b = Matrix<float>::from_tuples(1, 1, std::vector<Index>{0}, std::vector<Index>{0},
                                                 std::vector<float>{0.3f});
    Matrix<float> c(1, 1);
    PruneRule r;
    const PruneStats s = mxm_pruned(c, a, b, r);
    const double e = double(0.1f * 0.3f);
    CHECK(s.chaos == Approx((e - e * e) * 1));
    CHECK(c.get(0, 0) == 1.0f);
    Matrix<float> wrong(2, 2);
    CHECK_THROWS_AS(mxm_pruned(c, a, wrong, r), DimensionMismatch);
    r.pct = 2;
    CHECK_THROWS_WITH(mxm_pruned(c, a, b, r), Catch::Matchers::Contains("pct"));
    CHECK_THROWS_AS(inflate_rows(c, 0.0), InvalidValue);
    CHECK_THROWS_AS(inflate_rows(c, std::nan("")), InvalidValue);
}

TEST_CASE("inflate_rows raises to a power and rescales every row", "[mcl][inflate]") {
    ref::Gen g(13);
    for (auto [m, n] : g.shapes())
        for (double power : {1.0, 1.4, 2.0, 4.0}) {
            Matrix<float> a = ref::random_weights(g, m, n, 0.4);
            const auto d = ref::to_dense(a);
            inflate_rows(a, power);
            const auto got = ref::to_dense(a);
            for (Index i = 0; i < m; ++i) {
                double sum = 0;
                for (Index j = 0; j < n; ++j)
                    if (d(i, j)) sum += double(float(std::pow(double(*d(i, j)), power)));
                for (Index j = 0; j < n; ++j) {
                    REQUIRE(bool(d(i, j)) == bool(got(i, j)));
                    if (d(i, j))
                        REQUIRE(*got(i, j) == Approx(double(float(std::pow(double(*d(i, j)), power))) / sum).epsilon(1e-6));
                }
            }
        }
}

TEST_CASE("mcl_interpret: attractor systems, reachability, overlap cut and mcl's cluster order", "[mcl][interpret]") {
    // Limit on 6 vertices: attractors 0 and 4 (systems {0} and {4, 5}: 5 is an attractor joined to 4);
    // 1 and 2 flow to 0; 3 flows to both 0 and 4 (overlap: cut keeps the lower cluster, 0's).
    std::vector<Index> r{0, 1, 2, 3, 3, 4, 4, 5, 5};
    std::vector<Index> c{0, 0, 0, 0, 4, 4, 5, 4, 5};
    std::vector<float> v{1, 1, 1, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
    const auto res = algorithms::mcl_interpret(Matrix<float>::from_tuples(6, 6, r, c, v));
    REQUIRE(res.clusters.size() == 2);
    CHECK(res.clusters[0] == std::vector<Index>{0, 1, 2, 3});
    CHECK(res.clusters[1] == std::vector<Index>{4, 5});
    CHECK(res.overlap_cut == 1);
    // Equal sizes: lexicographic by members. Vertex 2 reaches no attractor: the extra cluster.
    const auto res2 = algorithms::mcl_interpret(Matrix<float>::from_tuples(
        4, 4, std::vector<Index>{0, 1, 2, 3}, std::vector<Index>{3, 1, 2, 3}, std::vector<float>{1, 1, 0, 1}));
    // Row 2 holds only a zero: bar = 0/1.01 = 0 keeps it, 2 is its own attractor.
    REQUIRE(res2.clusters.size() == 3);
    CHECK(res2.clusters[0] == std::vector<Index>{0, 3});
}

TEST_CASE("split_join_distance", "[mcl]") {
    using C = std::vector<std::vector<Index>>;
    CHECK(algorithms::split_join_distance(C{{0, 1}, {2, 3}}, C{{2, 3}, {1, 0}}, 4) == 0);
    CHECK(algorithms::split_join_distance(C{{0, 1, 2, 3}}, C{{0, 1}, {2, 3}}, 4) == 2);
    CHECK(algorithms::split_join_distance(C{{0, 1, 2}}, C{{0, 1}}, 3) == 1 + 1 - 1 + 0);
    CHECK_THROWS_AS(algorithms::split_join_distance(C{{5}}, C{}, 3), InvalidIndex);
}

TEST_CASE("mcl on the bundled graphs gives mcl 22-282's clusterings", "[mcl][data]") {
    struct Case {
        const char* file;
        bool weighted;  // the truth used the weights
    };
    const Case cases[] = {{"karate/karate.mtx", false},           {"dolphins/dolphins.mtx", false},
                          {"polbooks/polbooks.mtx", false},       {"mcl_proteins/proteins.mtx", true},
                          {"netscience/netscience.mtx", false},   {"email-Eu-core/email-Eu-core.txt.gz", false},
                          {"ppi_dip_yeast/ppi.dip.cleaned.txt", false}, {"facebook_combined/facebook_combined.txt.gz", false}};
    for (const Case& k : cases) {
        const fs::path path = fs::path(HYBLA_SOURCE_DIR) / "data" / k.file;
        INFO(path);
        io::Graph<double> g = std::string(k.file).starts_with("ppi")
                                  ? io::read_abc<double>(path.string(), {.undirected = true}, max_op{})
                                  : io::read_graph<double>(path.string(), {.undirected = true}, max_op{});
        Matrix<double> a = std::move(g.matrix);
        if (!k.weighted) {
            Matrix<double> p(a.nrows(), a.ncols());
            apply(p, no_mask, no_accum, one_op{}, a);
            a = std::move(p);
        }
        Matrix<double> off(a.nrows(), a.ncols());
        select(off, no_mask, no_accum, offdiag{}, a);
        Vector<double> degree(a.nrows());
        reduce(degree, no_mask, no_accum, plus_monoid{}, off);
        const auto res = algorithms::mcl(off);
        // mcl never saw the vertices without edges: drop their singleton clusters.
        const Clusters all = named(res, g.names);
        Clusters got;
        for (std::size_t x = 0; x < all.size(); ++x)
            if (!(res.clusters[x].size() == 1 && !degree.get(res.clusters[x][0]))) got.push_back(all[x]);
        const Clusters want = read_clusters(path.parent_path() / "mcl_I2.0.clusters.txt");
        CHECK(got.size() == want.size());
        CHECK(canonical(got) == canonical(want));
        // mcl's order: by decreasing size.
        for (std::size_t x = 1; x < got.size(); ++x) CHECK(got[x - 1].size() >= got[x].size());
    }
}

TEST_CASE("mcl writes the same file as Debian's mcl on generated graphs at -I 1.4, 2 and 4", "[mcl][equivalence]") {
    if (!have_mcl()) {
        WARN("mcl (Debian package mcl) is not installed: equivalence with mcl not checked");
        return;
    }
    TempDir tmp;
    ref::Gen g(17);
    int compared = 0;
    for (int graph = 0; graph < 6; ++graph) {
        // Planted clusters with noise edges, integer weights 1..3, labels as words.
        const Index n = 20 + g.uniform(0, 300), groups = 1 + g.uniform(0, 12);
        const fs::path abc = tmp.path / ("g" + std::to_string(graph) + ".abc");
        {
            std::ofstream f(abc);
            for (Index e = 0; e < n * 4; ++e) {
                const Index u = g.uniform(0, n - 1);
                Index v = g.real() < 0.85 ? (u / (n / groups + 1)) * (n / groups + 1) + g.uniform(0, n / groups) : g.uniform(0, n - 1);
                v = std::min(v, n - 1);
                // mcl reads a line with a TAB as TAB-separated fields (labels may then hold spaces): use one
                // separator per line.
                const char* sep = g.real() < 0.5 ? "\t" : " ";
                f << "v" << u << sep << "v" << v;
                if (g.real() < 0.7) f << sep << g.uniform(1, 3);
                f << "\n";
            }
        }
        for (double inflation : {1.4, 2.0, 4.0}) {
            INFO("graph " << graph << " (" << n << " vertices, " << groups << " groups), -I " << inflation);
            const fs::path out = tmp.path / "mcl.out";
            const std::string cmd = "mcl " + abc.string() + " --abc -I " + std::to_string(inflation) + " -o " +
                                    out.string() + " -q x -V all > /dev/null 2>&1";
            REQUIRE(std::system(cmd.c_str()) == 0);
            io::Graph<double> gr = io::read_abc<double>(abc.string(), {.undirected = true}, max_op{});
            algorithms::MclOptions o;
            o.inflation = inflation;
            const auto res = algorithms::mcl(gr.matrix, o);
            const std::string want = slurp(out);
            const std::string got = as_text(named(res, gr.names));
            CHECK(canonical(read_clusters(out)) == canonical(named(res, gr.names)));
            CHECK(got == want);
            ++compared;
        }
    }
    CHECK(compared == 18);
}

TEST_CASE("mcl writes the same file as Debian's mcl on bundled graphs at -I 1.4 and 4", "[mcl][equivalence][data]") {
    if (!have_mcl()) {
        WARN("mcl (Debian package mcl) is not installed: equivalence with mcl not checked");
        return;
    }
    TempDir tmp;
    const char* files[] = {"karate/karate.mtx", "dolphins/dolphins.mtx", "polbooks/polbooks.mtx",
                           "mcl_proteins/proteins.mtx", "netscience/netscience.mtx"};
    for (const char* file : files) {
        const fs::path path = fs::path(HYBLA_SOURCE_DIR) / "data" / file;
        // The graph as an mcl label file: every stored entry once, weights as read.
        const io::Graph<double> g = io::read_graph<double>(path.string());
        const fs::path abc = tmp.path / "g.abc";
        {
            std::vector<Index> r, c;
            std::vector<double> v;
            g.matrix.extract_tuples(r, c, v);
            std::ofstream f(abc);
            for (std::size_t k = 0; k < r.size(); ++k)
                if (r[k] != c[k]) f << g.names.name(r[k]) << '\t' << g.names.name(c[k]) << '\t' << v[k] << '\n';
        }
        for (double inflation : {1.4, 4.0}) {
            INFO(path << ", -I " << inflation);
            const fs::path out = tmp.path / "mcl.out";
            const std::string cmd = "mcl " + abc.string() + " --abc -I " + std::to_string(inflation) + " -o " +
                                    out.string() + " -q x -V all > /dev/null 2>&1";
            REQUIRE(std::system(cmd.c_str()) == 0);
            const io::Graph<double> gr = io::read_abc<double>(abc.string(), {.undirected = true}, max_op{});
            algorithms::MclOptions o;
            o.inflation = inflation;
            const auto res = algorithms::mcl(gr.matrix, o);
            CHECK(as_text(named(res, gr.names)) == slurp(out));
        }
    }
}
