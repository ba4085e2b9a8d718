// PageRank on the public API: power iteration with one mxv per step (the teleport and sink terms ride along as
// two extra entries of the iterate, see pagerank_detail::stepper) and, fused with it, one inner product into a
// Scalar for the convergence test, read two steps late; and personalized PageRank for many seeds at once with one
// SpMM and one masked SpMM per step (a DenseMatrix with a column per seed). Everything runs in the input matrix's
// context, so the same code runs on the CPU and the CUDA backend.
//
// The graph is the pattern of A: an entry A(u, v), whatever its value (weights are ignored, explicit zeros
// count), is an arc u -> v; a self-loop is an arc and counts in the out-degree (as MATLAB and LAGraph do; an
// undirected graph is stored with both directions). With N vertices, damping d and r_0 = 1/N,
//
//     r_{t+1}(v) = (1-d)/N + d * sum_{u->v} r_t(u)/outdeg(u) + (d/N) * sum_{w: outdeg(w) = 0} r_t(w)
//
// i.e. sinks (vertices without out-arcs) spread their rank uniformly over all vertices, so the ranks keep
// summing to 1. By default the iteration stops at the first t with ||r_{t+1} - r_t||_1 < tolerance (1e-9), or
// after max_iterations (1000). The LDBC Graphalytics variant (options.ldbc) uses the same formula -- it is
// LDBC's, sink rule included -- for exactly options.iterations iterations, with no convergence test.
//
// Personalized PageRank, for seed s: teleport to s instead of uniformly, and the rank of the sinks goes back
// to s as well (the walk restarts at its seed), starting from r_0 = e_s:
//
//     r_{t+1}(v) = d * sum_{u->v} r_t(u)/outdeg(u) + [v = s] * ((1-d) + d * sum_{w: outdeg(w) = 0} r_t(w))
//
// Each column sums to 1. The stopping rule is the same, on the largest L1 change over the seeds.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/hybla.hpp"

namespace hybla::algorithms {

struct PageRankOptions {
    double damping = 0.85;              // in [0, 1]
    double tolerance = 1e-9;            // stop once the L1 change of one iteration is below this (>= 0)
    std::size_t max_iterations = 1000;  // stop after this many iterations if not converged by then
    // LDBC Graphalytics PageRank: exactly `iterations` iterations, no convergence test (tolerance and
    // max_iterations are then unused).
    bool ldbc = false;
    std::size_t iterations = 10;
    // Called after every iteration with its number (from 1) and its L1 change (personalized: the largest
    // over the seeds; in LDBC mode computed only when this is set).
    std::function<void(std::size_t iteration, double l1_change)> progress;
};

struct PageRankResult {
    Vector<double> rank;        // dense, every vertex present, in the input's context; sums to 1
    std::size_t iterations = 0;
    double l1_change = 0;       // of the last iteration (0 when none ran)
    bool converged = false;     // stopped by the tolerance (never in LDBC mode)
};

struct PersonalizedPageRankResult {
    DenseMatrix<double> rank;   // N x seeds: column j is the PageRank personalized to seeds[j]
    std::size_t iterations = 0;
    double l1_change = 0;       // the largest over the seeds, of the last iteration
    bool converged = false;
};

namespace pagerank_detail {

template <class T>
void check(const Matrix<T>& a, const PageRankOptions& o, const char* who) {
    if (a.nrows() != a.ncols())
        throw DimensionMismatch(std::string(who) + ": the adjacency matrix must be square, got " +
                                std::to_string(a.nrows()) + "x" + std::to_string(a.ncols()));
    if (!(o.damping >= 0 && o.damping <= 1))
        throw InvalidValue(std::string(who) + ": damping must be in [0, 1], got " + std::to_string(o.damping));
    if (!(o.tolerance >= 0))
        throw InvalidValue(std::string(who) + ": tolerance must be a number >= 0, got " + std::to_string(o.tolerance));
}

// What every iteration needs: Pᵀ with P(u, v) = d / outdeg(u) for each arc u -> v, and the sinks as a full
// vector, 1 at a sink and 0 elsewhere. Every vector of the iteration is full (all entries present), which lets
// the GPU do each element-wise step as one kernel.
struct Transition {
    Matrix<double> pt;
    Vector<double> sinks;
    Index nsinks = 0;        // 0 for most undirected graphs
    // With feed_sinks: feed(u) = sum over u's arcs u -> w into a sink w of d / outdeg(u), i.e. the rank that
    // u hands to sinks per unit of its own (present where that is not 0).
    Vector<double> feed;
};

template <class T>
Transition transition(const Matrix<T>& a, double damping, bool feed_sinks = false) {
    const Context& ctx = a.context();
    const Index n = a.nrows();
    Matrix<double> pattern(n, n, ctx);
    apply(pattern, no_mask, no_accum, one_op{}, a);
    Vector<double> degree(n, ctx);
    reduce(degree, no_mask, no_accum, plus_monoid{}, pattern);
    Vector<double> scale(n, ctx);
    apply(scale, degree, no_accum, div_op{}, damping, degree);  // d / outdeg(u), where outdeg(u) > 0
    // diag(scale), assembled on the host once (n values).
    std::vector<Index> idx;
    std::vector<double> vals;
    scale.extract_tuples(idx, vals);
    const Matrix<double> diag_scale = Matrix<double>::from_tuples(n, n, idx, idx, vals, plus_op{}, ctx);
    Transition t{Matrix<double>(n, n, ctx), Vector<double>(n, ctx), 0, Vector<double>(n, ctx)};
    mxm(t.pt, no_mask, no_accum, plus_times{}, pattern, diag_scale, Descriptor{.transpose_a = true});
    t.sinks = Vector<double>::full(n, 1.0, ctx);
    apply(t.sinks, degree, no_accum, times_op{}, t.sinks, 0.0);  // 0 where there are out-arcs
    t.nsinks = Index(reduce(plus_monoid{}, t.sinks));
    if (feed_sinks && t.nsinks > 0) {
        Vector<double> into_sinks(n, ctx);
        mxv(into_sinks, no_mask, no_accum, plus_times{}, pattern, t.sinks);  // arcs into sinks, per vertex
        Vector<double> feed(n, ctx);
        eWiseMult(feed, no_mask, no_accum, times_op{}, into_sinks, scale);
        select(t.feed, no_mask, no_accum, nonzero{}, feed);
    }
    return t;
}

// PageRank's iteration as one product. With c_t = (1-d)/N + (d/N) * (rank of the sinks at step t), the
// iteration is r_{t+1} = Pᵀ r_t + c_t, and c_{t+1} is itself linear in (r_t, c_t, 1):
//
//     c_{t+1} = (1-d)/N + (d/N) * sinksᵀ (Pᵀ r_t + c_t 1) = (1-d)/N + (d/N) * (feedᵀ r_t + nsinks * c_t).
//
// So u_t = [r_t; c_t / 2^40; 1] (N + 2 entries) steps as u_{t+1} = M u_t with
//
//     M = [ Pᵀ                2^40 (column)              0           ]   rows 0..N-1
//         [ d feedᵀ/(N 2^40)  d nsinks / N               (1-d)/(N 2^40) ]   row N
//         [ 0                 0                          1           ]   row N+1
//
// one SpMV per iteration and nothing else, no scalar read back. The 2^40 is exact (a power of two), so M u
// gives the same r_{t+1} as adding c_t; it keeps c's own change out of the L1 change of u, which is then that of
// r plus |c_{t+1} - c_t| / 2^40 <= 2^-40 (d/N) ||r_{t+1} - r_t||_1, far below the rounding of the sum itself.
inline constexpr double c_scale = 1099511627776.0;  // 2^40

struct Stepper {
    Matrix<double> m;      // M above, (N+2) x (N+2)
    Vector<double> start;  // u_0 = [1/N ...; c_0 / 2^40; 1]
};

template <class T>
Stepper stepper(const Matrix<T>& a, double d) {
    const Context& ctx = a.context();
    const Index n = a.nrows();
    if (n > max_dimension - 2)
        throw InvalidValue("pagerank: graphs of more than " + std::to_string(max_dimension - 2) +
                           " vertices are not supported, got " + std::to_string(n));
    Transition t = transition(a, d, true);
    const double nd = double(n);
    std::vector<Index> rows, cols;
    std::vector<double> vals;
    rows.reserve(2 * n + 3);  // column N, row N (at most n feeders), three more
    cols.reserve(2 * n + 3);
    vals.reserve(2 * n + 3);
    auto add = [&](Index i, Index j, double v) {
        rows.push_back(i);
        cols.push_back(j);
        vals.push_back(v);
    };
    for (Index v = 0; v < n; ++v) add(v, n, c_scale);
    std::vector<Index> fi;
    std::vector<double> fv;
    t.feed.extract_tuples(fi, fv);
    for (std::size_t k = 0; k < fi.size(); ++k) add(n, fi[k], d * fv[k] / (nd * c_scale));
    add(n, n, d * double(t.nsinks) / nd);  // explicit zeros keep rows N and N+1 present in every product
    add(n, n + 1, (1 - d) / (nd * c_scale));
    add(n + 1, n + 1, 1.0);
    const Matrix<double> extra = Matrix<double>::from_tuples(n + 2, n + 2, rows, cols, vals, plus_op{}, ctx);
    t.pt.resize(n + 2, n + 2);
    Stepper s{Matrix<double>(n + 2, n + 2, ctx), Vector<double>(n + 2, ctx)};
    eWiseAdd(s.m, no_mask, no_accum, plus_op{}, t.pt, extra);
    Array<double> u0(n + 2, 1 / nd);
    u0[n] = ((1 - d) / nd + d * double(t.nsinks) / (nd * nd)) / c_scale;
    u0[n + 1] = 1;
    s.start = Vector<double>::import_dense(n + 2, std::move(u0)).to(ctx);
    return s;
}

// A sparse matrix from host tuples, built in ctx.
inline Matrix<double> sparse(Index m, Index n, const std::vector<Index>& rows, const std::vector<Index>& cols,
                             double value, const Context& ctx) {
    return Matrix<double>::from_tuples(m, n, rows, cols, std::vector<double>(rows.size(), value), plus_op{}, ctx);
}
inline std::vector<Index> iota(Index n) {
    std::vector<Index> v(n);
    for (Index i = 0; i < n; ++i) v[i] = i;
    return v;
}

}  // namespace pagerank_detail

// PageRank of the graph whose arcs are the entries of the square matrix a (see the top of this file).
// One mxv per iteration (pagerank_detail::stepper) and, when the L1 change is wanted, one inner product into a
// Scalar, fused with the mxv (mxv_inner: on the GPU the SpMV's kernels compute it as they store). Iterations t+1 and t+2 are queued before iteration t's change is read, so the GPU never waits for
// the host (measured: with one iteration queued ahead the GPU still idled while the host woke up and queued
// the next); when t converges, the iterations queued after it are dropped.
template <class T>
PageRankResult pagerank(const Matrix<T>& a, const PageRankOptions& o = {}) {
    pagerank_detail::check(a, o, "pagerank");
    const Context& ctx = a.context();
    const Index n = a.nrows();
    PageRankResult res{Vector<double>::full(n, n ? 1.0 / double(n) : 0.0, ctx)};
    const std::size_t cap = o.ldbc ? o.iterations : o.max_iterations;
    if (n == 0 || cap == 0) return res;
    const pagerank_detail::Stepper st = pagerank_detail::stepper(a, o.damping);
    const bool watch = !o.ldbc || bool(o.progress);  // the L1 change is computed
    struct Step {
        Vector<double> u;
        Scalar<double> change;  // ||r_{t+1} - r_t||_1 when watched
    };
    // Iteration i (from 1) lives in ring[(i - 1) % depth] until iteration i + depth is queued there.
    const std::size_t depth = 3;
    std::vector<Step> ring;
    for (std::size_t k = 0; k < depth; ++k) ring.push_back(Step{Vector<double>(0, ctx), Scalar<double>(ctx)});
    auto slot = [&](std::size_t i) -> Step& { return ring[(i - 1) % depth]; };
    std::size_t queued = 0;
    for (std::size_t t = 1;; ++t) {
        for (; queued < cap && queued < t + depth - 1; ++queued) {  // iterations up to t + 2
            const Vector<double>& from = queued == 0 ? st.start : slot(queued).u;
            Step& to = slot(queued + 1);
            Vector<double> next(n + 2, ctx);
            if (watch) mxv_inner(next, to.change, plus_times{}, st.m, from, semiring<plus_monoid, absdiff_op>{}, from);
            else mxv(next, no_mask, no_accum, plus_times{}, st.m, from);
            to.u = std::move(next);
        }
        res.iterations = t;
        if (watch) {
            res.l1_change = slot(t).change.value();
            if (o.progress) o.progress(t, res.l1_change);
            if (!o.ldbc && res.l1_change < o.tolerance) {
                res.converged = true;
                break;
            }
        }
        if (t == cap) break;
    }
    Vector<double> last = std::move(slot(res.iterations).u);
    last.resize(n);  // drop c and the 1
    last.to_dense();
    res.rank = std::move(last);
    return res;
}

// Personalized PageRank for every seed at once (see the top of this file): column j of the result is the
// PageRank with restarts at seeds[j]. Seeds may repeat.
//
// The iterate is Y_t, (N+2) x seeds: the ranks r_t in rows 0..N-1, in row N each column's restart term of the
// step before, c_j = (1-d) + d * (rank of the sinks in column j), scaled by 2^-60, and 1 in row N+1. A step is
//
//     Y_{t+1} = M Y_t            M = Pᵀ, with row N: d 2^-60 at the sinks and (1-d) 2^-60 in column N+1, and
//                                M(N+1, N+1) = 1, so that row N of Y_{t+1} is c(r_t) 2^-60;
//     Y_{t+1}<E> += F Y_{t+1}    E: the entries (seeds[j], j); F(s, N) = 2^60 for each seed s: c_j at (seeds[j], j)
//
// an SpMM and a masked SpMM of one entry a seed, and, for the convergence test, one column-wise inner product of
// Y_{t+1} and Y_t under semiring<plus_monoid, absdiff_op> and its largest value. The powers of two are exact; the
// L1 change of Y is that of r plus |c(r_t) - c(r_{t-1})| 2^-60 <= 2^-59, below the rounding of the sum itself.
template <class T>
PersonalizedPageRankResult personalized_pagerank(const Matrix<T>& a, std::span<const Index> seeds,
                                                 const PageRankOptions& o = {}) {
    using pagerank_detail::iota;
    using pagerank_detail::sparse;
    pagerank_detail::check(a, o, "personalized_pagerank");
    const Context& ctx = a.context();
    const Index n = a.nrows(), k = seeds.size();
    for (std::size_t j = 0; j < seeds.size(); ++j)
        if (seeds[j] >= n)
            throw InvalidIndex("personalized_pagerank: seed " + std::to_string(seeds[j]) + " (number " +
                               std::to_string(j + 1) + ") is outside a graph of " + std::to_string(n) + " vertices");
    if (n > max_dimension - 2)
        throw InvalidValue("personalized_pagerank: graphs of more than " + std::to_string(max_dimension - 2) +
                           " vertices are not supported, got " + std::to_string(n));
    PersonalizedPageRankResult res{DenseMatrix<double>(n, k, 0.0, ctx)};
    if (n == 0 || k == 0) return res;
    const double d = o.damping, down = 0x1p-60, up = 0x1p60;
    const Index rows = n + 2, cn = n, one = n + 1;
    pagerank_detail::Transition t = pagerank_detail::transition(a, d);
    std::vector<Index> all_idx, sink_idx;
    std::vector<double> sink_vals;
    t.sinks.extract_tuples(all_idx, sink_vals);
    std::vector<char> is_sink(n, 0);
    for (std::size_t x = 0; x < all_idx.size(); ++x)
        if (sink_vals[x] != 0) {
            sink_idx.push_back(all_idx[x]);
            is_sink[all_idx[x]] = 1;
        }
    std::vector<Index> er, ec;
    std::vector<double> ev;
    auto add = [&](Index i, Index j, double v) {
        er.push_back(i);
        ec.push_back(j);
        ev.push_back(v);
    };
    for (Index s : sink_idx) add(cn, s, d * down);
    add(cn, one, (1 - d) * down);  // an explicit zero when d = 1 keeps row N present
    add(one, one, 1.0);
    t.pt.resize(rows, rows);
    Matrix<double> m(rows, rows, ctx);
    eWiseAdd(m, no_mask, no_accum, plus_op{}, t.pt,
             Matrix<double>::from_tuples(rows, rows, er, ec, ev, plus_op{}, ctx));
    std::vector<Index> distinct(seeds.begin(), seeds.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    const Matrix<double> f = sparse(rows, rows, distinct, std::vector<Index>(distinct.size(), cn), up, ctx);
    const std::vector<Index> seed_list(seeds.begin(), seeds.end()), cols_k = iota(k);
    const Matrix<double> at_seed = sparse(rows, k, seed_list, cols_k, 1.0, ctx);
    // Y_0 = G I: e_{seeds[j]} in column j, c(e_{seeds[j]}) 2^-60 in row N, 1 in row N+1.
    er.clear();
    ec.clear();
    ev.clear();
    for (Index j = 0; j < k; ++j) {
        add(seeds[j], j, 1.0);
        add(cn, j, ((1 - d) + (is_sink[seeds[j]] ? d : 0.0)) * down);
        add(one, j, 1.0);
    }
    const Matrix<double> g = Matrix<double>::from_tuples(rows, k, er, ec, ev, plus_op{}, ctx);
    DenseMatrix<double> eye_host(k, k, 0.0, Context::cpu());
    for (Index j = 0; j < k; ++j) eye_host(j, j) = 1;
    const DenseMatrix<double> eye_k = eye_host.to(ctx);
    // The ranks: Y's first N rows.
    const Matrix<double> first_rows = sparse(n, rows, iota(n), iota(n), 1.0, ctx);
    auto ranks_of = [&](const DenseMatrix<double>& y) {
        mxm(res.rank, no_mask, no_accum, plus_times{}, first_rows, y);
    };
    const bool watch = !o.ldbc || bool(o.progress);  // the L1 change is computed
    const std::size_t cap = o.ldbc ? o.iterations : o.max_iterations;
    // As pagerank(): iterations t + 1 and t + 2 are queued before iteration t's change is read, each change a
    // Scalar queued on the GPU (the largest column L1 distance; a NaN is looked for once, after the last).
    struct Step {
        DenseMatrix<double> y;
        Vector<double> l1;
        Scalar<double> largest;
    };
    const std::size_t depth = 3;
    std::vector<Step> ring;
    for (std::size_t j = 0; j < depth; ++j)
        ring.push_back(Step{DenseMatrix<double>(rows, k, 0.0, ctx), Vector<double>(k, ctx), Scalar<double>(ctx)});
    auto slot = [&](std::size_t i) -> Step& { return ring[i % depth]; };  // iteration i, from 0
    mxm(slot(0).y, no_mask, no_accum, plus_times{}, g, eye_k);
    if (cap == 0) {
        ranks_of(slot(0).y);
        return res;
    }
    std::size_t queued = 0;
    for (std::size_t i = 1;; ++i) {
        for (; queued < cap && queued < i + depth - 1; ++queued) {  // iterations up to i + 2
            const DenseMatrix<double>& y = slot(queued).y;
            Step& to = slot(queued + 1);
            mxm(to.y, no_mask, no_accum, plus_times{}, m, y);
            mxm(to.y, at_seed, plus_op{}, plus_times{}, f, to.y, Descriptor{.mask_structure = true});
            if (watch) {
                inner(to.l1, no_mask, no_accum, semiring<plus_monoid, absdiff_op>{}, to.y, y,
                      Descriptor{.transpose_a = true});
                reduce(to.largest, no_accum, max_monoid{}, to.l1);
            }
        }
        res.iterations = i;
        if (watch) {
            res.l1_change = slot(i).largest.value();
            if (o.progress) o.progress(i, res.l1_change);
            if (!o.ldbc && res.l1_change < o.tolerance) {
                res.converged = true;
                break;
            }
        }
        if (i == cap) break;
    }
    if (watch) {  // a NaN in any column (max passes over it) never converges
        const double sum = reduce(plus_monoid{}, slot(res.iterations).l1);
        if (std::isnan(sum)) {
            res.l1_change = sum;
            res.converged = false;
        }
    }
    ranks_of(slot(res.iterations).y);
    return res;
}

}  // namespace hybla::algorithms
