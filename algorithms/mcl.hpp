// Markov clustering as van Dongen's mcl 22-282 does it (../shared/mcl-reference.md), on the public API.
//
// hybla computes on the row-stochastic transpose R = Mᵀ of mcl's column-stochastic matrix M, so mcl's column j
// is row j here and every step is a row operation on CSR:
//   start   R = A without self-loops, plus a loop of weight max(row) on each vertex (1 when the row is empty),
//           values as float32, rows scaled to sum 1;
//   iterate R ← inflate(prune(R·R)): the expansion with mcl's pruning fused into the product (mxm_pruned: the
//           unpruned square is never stored whole), chaos measured on the expanded rows before inflation;
//           inflation raised ×1.001 per iteration after the 40th, as mcl does; stop when chaos < 1e-4;
//   interpret the limit into clusters through attractors (mcl's DAG rule), overlap resolved by mcl's default
//           `cut` (a vertex stays in the lowest-numbered cluster), clusters sorted as mcl's `-sort revsize`.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "engine/hybla.hpp"

namespace hybla::algorithms {

struct MclIteration {
    Index iteration = 0;     // 1-based, as mcl's log
    double chaos = 0;        // mcl's chaos of this iteration
    Offset expanded = 0;     // entries of the unpruned square
    Offset kept = 0;         // entries after pruning
    double min_mass = 1;     // smallest kept mass of a row before rescaling
    double inflation = 2;    // the inflation used
    double seconds = 0;      // wall time of the iteration
};

struct MclOptions {
    double inflation = 2.0;          // mcl -I, in (0, 30]
    PruneRule prune{};               // mcl -P/-S/-R/-pct (scheme 6 by default)
    Index max_iterations = 10000;    // mcl -L
    double chaos_limit = 1e-4;       // mcl's hard-coded convergence limit
    std::function<void(const MclIteration&)> progress;  // called after each iteration
};

struct MclResult {
    std::vector<std::vector<Index>> clusters;  // vertex ids, increasing within a cluster, clusters in mcl's order
    Index iterations = 0;
    Index overlap_cut = 0;  // instances of overlap removed by `cut`
    std::vector<MclIteration> log;
};

// mcl's resource schemes 1..7: P, S, R, pct.
inline PruneRule mcl_scheme(int k) {
    static const int table[7][4] = {{3000, 400, 500, 90},   {4000, 500, 600, 90},    {5000, 600, 700, 90},
                                    {6000, 700, 800, 90},   {7000, 800, 900, 90},    {10000, 1100, 1400, 90},
                                    {10000, 1200, 1600, 90}};
    if (k < 1 || k > 7) throw InvalidValue("mcl: -scheme must be 1..7, got " + std::to_string(k));
    PruneRule r;
    r.cutoff = 0.99999 / table[k - 1][0];
    r.select = Index(table[k - 1][1]);
    r.recover = Index(table[k - 1][2]);
    r.pct = table[k - 1][3] / 100.0;
    return r;
}

// The start matrix: loops as mcl adds them, float32 values, rows scaled to sum 1. A must be square with
// non-negative weights (mcl symmetrises its --abc input; pass the symmetric graph for the same result).
template <class T>
Matrix<float> mcl_start(const Matrix<T>& a) {
    if (a.nrows() != a.ncols())
        throw DimensionMismatch("mcl: the graph must be square, got " + std::to_string(a.nrows()) + "x" +
                                std::to_string(a.ncols()));
    const Index n = a.nrows();
    const Context ctx = a.context();
    Matrix<float> w(n, n, ctx);
    apply(w, no_mask, no_accum, identity_op{}, a);  // float32 values, as mcl stores them
    if (reduce(min_monoid{}, w) < 0) throw InvalidValue("mcl: edge weights must be >= 0");
    Matrix<float> off(n, n, ctx);
    select(off, no_mask, no_accum, offdiag{}, w);
    // Zero weights are not edges for mcl.
    select(w, no_mask, no_accum, value_gt{0.0f}, off);
    Vector<float> rmax(n, ctx);
    reduce(rmax, no_mask, no_accum, max_monoid{}, w);
    Vector<float> loops = Vector<float>::full(n, 1.0f, ctx);
    assign(loops, rmax, no_accum, rmax, IndexSet(all));  // row max where the row has entries, else 1
    std::vector<Index> idx;
    std::vector<float> val;
    loops.extract_tuples(idx, val);
    Matrix<float> d = Matrix<float>::from_tuples(n, n, idx, idx, val).to(ctx);
    Matrix<float> r(n, n, ctx);
    eWiseAdd(r, no_mask, no_accum, plus_op{}, w, d);
    inflate_rows(r, 1.0);  // v / sum(v) with the sum in double, stored as float
    return r;
}

namespace detail {
// Disjoint sets over vertex ids (attractor systems).
struct DisjointSets {
    std::vector<Index> parent;
    explicit DisjointSets(Index n) : parent(n) { std::iota(parent.begin(), parent.end(), Index(0)); }
    Index find(Index x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    }
    void unite(Index a, Index b) {
        a = find(a);
        b = find(b);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the root is the smallest id
    }
};
}  // namespace detail

// Clusters of a limit matrix L (row j = mcl's column j), by mcl's interpretation with overlap `cut`.
inline MclResult mcl_interpret(const Matrix<float>& limit) {
    const Matrix<float> l = limit.to(Context::cpu());
    const Index n = l.nrows();
    const auto off = l.row_offsets();
    const auto col = l.col_indices();
    const auto val = l.values();
    // The DAG: in row j keep L(j,i) >= bar, then rescale and keep those >= 1/(count + 1).
    std::vector<std::vector<Index>> dag(n);
    std::vector<char> attractor(n, 0);
    for (Index j = 0; j < n; ++j) {
        double diag = 0, mx = 0;
        for (Offset p = off[j]; p < off[j + 1]; ++p) {
            mx = std::max(mx, double(val[p]));
            if (col[p] == j) diag = val[p];
        }
        const double bar = diag < mx ? 0.999 * diag + 0.001 * mx : diag / 1.01;
        double sum = 0;
        Index cnt = 0;
        for (Offset p = off[j]; p < off[j + 1]; ++p)
            if (double(val[p]) >= bar) {
                sum += val[p];
                ++cnt;
            }
        for (Offset p = off[j]; p < off[j + 1]; ++p)
            if (double(val[p]) >= bar && double(val[p]) / sum >= 1.0 / double(cnt + 1)) {
                dag[j].push_back(col[p]);
                if (col[p] == j) attractor[j] = 1;
            }
    }
    // Attractor systems: connected components of the DAG restricted to attractors, numbered by smallest id.
    detail::DisjointSets sets(n);
    for (Index j = 0; j < n; ++j)
        if (attractor[j])
            for (Index i : dag[j])
                if (attractor[i]) sets.unite(i, j);
    std::vector<Index> number(n, Index(-1));  // cluster number of each attractor system root
    Index nclusters = 0;
    for (Index j = 0; j < n; ++j)
        if (attractor[j] && sets.find(j) == j) number[j] = nclusters++;
    // Every vertex belongs to the clusters of the attractors it reaches in the DAG (memoised depth-first).
    std::vector<std::vector<Index>> reach(n);
    std::vector<char> state(n, 0);  // 0 new, 1 on the stack, 2 done
    for (Index s = 0; s < n; ++s) {
        if (state[s]) continue;
        std::vector<std::pair<Index, std::size_t>> stack{{s, 0}};
        state[s] = 1;
        while (!stack.empty()) {
            auto& [v, k] = stack.back();
            if (k < dag[v].size()) {
                const Index u = dag[v][k++];
                if (!state[u]) {
                    state[u] = 1;
                    stack.push_back({u, 0});
                }
                continue;
            }
            std::vector<Index>& r = reach[v];
            if (attractor[v]) {
                r.push_back(number[sets.find(v)]);
            } else {
                for (Index u : dag[v])
                    if (state[u] == 2) r.insert(r.end(), reach[u].begin(), reach[u].end());
                std::sort(r.begin(), r.end());
                r.erase(std::unique(r.begin(), r.end()), r.end());
            }
            state[v] = 2;
            stack.pop_back();
        }
    }
    MclResult out;
    std::vector<std::vector<Index>> clusters(nclusters + 1);
    for (Index v = 0; v < n; ++v) {
        if (reach[v].empty()) {
            clusters[nclusters].push_back(v);  // in no cluster: one extra cluster
            continue;
        }
        out.overlap_cut += reach[v].size() - 1;
        clusters[reach[v][0]].push_back(v);  // overlap `cut`: the lowest-numbered cluster
    }
    std::erase_if(clusters, [](const auto& c) { return c.empty(); });
    std::sort(clusters.begin(), clusters.end(), [](const auto& x, const auto& y) {
        return x.size() != y.size() ? x.size() > y.size() : x < y;
    });
    out.clusters = std::move(clusters);
    return out;
}

// Split/join distance between two clusterings of the vertices 0..n-1 (each vertex in at most one cluster of
// each; vertices missing from one side count as singletons there): the number of vertices to move to turn one
// into the other's refinement, summed both ways (van Dongen; clm dist -mode sj). 0 iff the partitions agree.
inline Index split_join_distance(const std::vector<std::vector<Index>>& x, const std::vector<std::vector<Index>>& y,
                                 Index n) {
    auto labels = [n](const std::vector<std::vector<Index>>& c) {
        std::vector<Index> l(n, Index(-1));
        Index next = c.size();
        for (Index k = 0; k < c.size(); ++k)
            for (Index v : c[k]) {
                if (v >= n) throw InvalidIndex("split_join_distance: vertex " + std::to_string(v) + " >= " + std::to_string(n));
                l[v] = k;
            }
        for (Index& v : l)
            if (v == Index(-1)) v = next++;
        return l;
    };
    const std::vector<Index> lx = labels(x), ly = labels(y);
    auto one_way = [n](const std::vector<Index>& a, const std::vector<Index>& b) {
        std::vector<std::pair<Index, Index>> pairs(n);
        for (Index v = 0; v < n; ++v) pairs[v] = {a[v], b[v]};
        std::sort(pairs.begin(), pairs.end());
        Index best_sum = 0;
        for (Index i = 0; i < n;) {  // for each cluster of a: its largest overlap with one cluster of b
            Index best = 0;
            Index j = i;
            while (j < n && pairs[j].first == pairs[i].first) {
                Index k = j;
                while (k < n && pairs[k] == pairs[j]) ++k;
                best = std::max(best, k - j);
                j = k;
            }
            best_sum += best;
            i = j;
        }
        return n - best_sum;
    };
    return one_way(lx, ly) + one_way(ly, lx);
}

// Markov clustering of A (square, non-negative weights; symmetrise first for mcl --abc's behaviour).
template <class T>
MclResult mcl(const Matrix<T>& a, const MclOptions& options = {}) {
    if (!(options.inflation > 0 && options.inflation <= 30))
        throw InvalidValue("mcl: the inflation must be in (0, 30], got " + std::to_string(options.inflation));
    Matrix<float> r = mcl_start(a);
    std::vector<MclIteration> log;
    double inflation = options.inflation;
    Index it = 0;
    while (it < options.max_iterations) {
        const auto t0 = std::chrono::steady_clock::now();
        ++it;
        if (it > 40) inflation *= 1.001;
        Matrix<float> e(r.nrows(), r.ncols(), r.context());
        const PruneStats s = mxm_pruned(e, r, r, options.prune);
        inflate_rows(e, inflation);
        r = std::move(e);
        MclIteration step{it, s.chaos, s.expanded, s.kept, s.min_mass, inflation,
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
        log.push_back(step);
        if (options.progress) options.progress(step);
        if (s.chaos < options.chaos_limit) break;
    }
    MclResult res = mcl_interpret(r);
    res.iterations = it;
    res.log = std::move(log);
    return res;
}

}  // namespace hybla::algorithms
