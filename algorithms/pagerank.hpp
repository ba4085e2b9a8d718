// PageRank on the public API: power iteration with one mxv per step, and personalized PageRank for many seeds at
// once with one SpMM per step (a DenseMatrix with a column per seed). Everything runs in the input matrix's
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
    bool has_sinks = false;  // false for most undirected graphs: the iteration then skips the sink mass
};

template <class T>
Transition transition(const Matrix<T>& a, double damping) {
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
    Transition t{Matrix<double>(n, n, ctx), Vector<double>(n, ctx)};
    mxm(t.pt, no_mask, no_accum, plus_times{}, pattern, diag_scale, Descriptor{.transpose_a = true});
    t.sinks = Vector<double>::full(n, 1.0, ctx);
    apply(t.sinks, degree, no_accum, times_op{}, t.sinks, 0.0);  // 0 where there are out-arcs
    t.has_sinks = reduce(plus_monoid{}, t.sinks) > 0;
    return t;
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

// The largest column L1 distance of two N x k dense matrices, computed in their context: the difference and
// |x| = max(x, -x) through SpMM accumulators with I and -I, then the column sums with a row of ones.
class ColumnL1 {
public:
    ColumnL1(Index n, const Context& ctx)
        : eye_(sparse(n, n, iota(n), iota(n), 1.0, ctx)),
          neg_eye_(sparse(n, n, iota(n), iota(n), -1.0, ctx)),
          ones_(sparse(1, n, std::vector<Index>(n, 0), iota(n), 1.0, ctx)) {}
    double largest(const DenseMatrix<double>& a, const DenseMatrix<double>& b) const {
        DenseMatrix<double> diff = a;
        mxm(diff, no_mask, minus_op{}, plus_times{}, eye_, b);
        DenseMatrix<double> dist = diff;
        mxm(dist, no_mask, max_op{}, plus_times{}, neg_eye_, diff);
        DenseMatrix<double> sums(1, a.ncols(), 0.0, a.context());
        mxm(sums, no_mask, no_accum, plus_times{}, ones_, dist);
        const DenseMatrix<double> host = sums.to(Context::cpu());
        double m = 0;
        for (double x : host.data()) m = std::isnan(x) || x > m ? x : m;  // a NaN never passes the test
        return m;
    }

private:
    Matrix<double> eye_, neg_eye_, ones_;
};

}  // namespace pagerank_detail

// PageRank of the graph whose arcs are the entries of the square matrix a (see the top of this file).
template <class T>
PageRankResult pagerank(const Matrix<T>& a, const PageRankOptions& o = {}) {
    pagerank_detail::check(a, o, "pagerank");
    const Context& ctx = a.context();
    const Index n = a.nrows();
    const double d = o.damping;
    PageRankResult res{Vector<double>::full(n, n ? 1.0 / double(n) : 0.0, ctx)};
    if (n == 0) return res;
    const pagerank_detail::Transition t = pagerank_detail::transition(a, d);
    const std::size_t cap = o.ldbc ? o.iterations : o.max_iterations;
    while (res.iterations < cap) {
        Vector<double>& r = res.rank;
        const double sink_mass = t.has_sinks ? inner(plus_times{}, r, t.sinks) : 0.0;
        Vector<double> next = Vector<double>::full(n, ((1 - d) + d * sink_mass) / double(n), ctx);
        mxv(next, no_mask, plus_op{}, plus_times{}, t.pt, r);  // += d * sum_{u->v} r(u)/outdeg(u)
        res.l1_change = inner(semiring<plus_monoid, absdiff_op>{}, next, r);  // ||next - r||_1
        res.rank = std::move(next);
        ++res.iterations;
        if (o.progress) o.progress(res.iterations, res.l1_change);
        if (!o.ldbc && res.l1_change < o.tolerance) {
            res.converged = true;
            break;
        }
    }
    return res;
}

// Personalized PageRank for every seed at once (see the top of this file): column j of the result is the
// PageRank with restarts at seeds[j]. Seeds may repeat. Per iteration, one SpMM over the graph plus work
// proportional to seeds² (the restart terms) and, for the convergence test, to N x seeds.
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
    PersonalizedPageRankResult res{DenseMatrix<double>(n, k, 0.0, ctx)};
    if (n == 0 || k == 0) return res;
    const double d = o.damping;
    const pagerank_detail::Transition t = pagerank_detail::transition(a, d);

    const std::vector<Index> seed_list(seeds.begin(), seeds.end()), cols_k = iota(k), zeros_k(k, 0);
    const Matrix<double> at_seed = sparse(n, k, seed_list, cols_k, 1.0, ctx);  // E(seeds[j], j) = 1
    const Matrix<double> ones_k = sparse(k, 1, cols_k, zeros_k, 1.0, ctx);
    DenseMatrix<double> eye_host(k, k, 0.0, Context::cpu());
    for (Index j = 0; j < k; ++j) eye_host(j, j) = 1;
    const DenseMatrix<double> eye_k = eye_host.to(ctx);
    // d at the sinks, as a 1 x N row: (d * sinks) R is d times each column's sink mass.
    std::vector<Index> all_idx, sink_idx;
    std::vector<double> sink_vals;
    t.sinks.extract_tuples(all_idx, sink_vals);
    for (std::size_t k = 0; k < all_idx.size(); ++k)
        if (sink_vals[k] != 0) sink_idx.push_back(all_idx[k]);
    const Matrix<double> sink_row = sparse(1, n, std::vector<Index>(sink_idx.size(), 0), sink_idx, d, ctx);
    std::optional<pagerank_detail::ColumnL1> l1;  // built only when the change is wanted
    if (!o.ldbc || o.progress) l1.emplace(n, ctx);

    DenseMatrix<double>& r = res.rank;
    mxm(r, no_mask, no_accum, plus_times{}, at_seed, eye_k);  // r_0 = E
    const std::size_t cap = o.ldbc ? o.iterations : o.max_iterations;
    while (res.iterations < cap) {
        // restart(j) = (1-d) + d * (rank of the sinks in column j), added at seeds[j] as E * diag(restart).
        DenseMatrix<double> restart(1, k, 1 - d, ctx);
        if (!sink_idx.empty()) mxm(restart, no_mask, plus_op{}, plus_times{}, sink_row, r);
        DenseMatrix<double> diag_restart = eye_k;
        mxm(diag_restart, no_mask, times_op{}, plus_times{}, ones_k, restart);
        DenseMatrix<double> next(n, k, 0.0, ctx);
        mxm(next, no_mask, no_accum, plus_times{}, t.pt, r);  // d * sum_{u->v} r(u)/outdeg(u), every seed
        mxm(next, no_mask, plus_op{}, plus_times{}, at_seed, diag_restart);
        if (l1) res.l1_change = l1->largest(next, r);
        r = std::move(next);
        ++res.iterations;
        if (o.progress) o.progress(res.iterations, res.l1_change);
        if (!o.ldbc && res.l1_change < o.tolerance) {
            res.converged = true;
            break;
        }
    }
    return res;
}

}  // namespace hybla::algorithms
