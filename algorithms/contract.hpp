// Graph contraction with cuGraph's coarsen_graph semantics: every vertex carries a label (any integer); the
// labels are renumbered compactly 0..k-1 and the graph A (n x n) becomes the k x k graph S·A·Sᵀ, where S is the
// k x n label indicator (S(c, v) present iff vertex v has compact label c). Entry (c, d) of the result combines
// the weights of all edges from a vertex of cluster c to a vertex of cluster d with a monoid (plus, min or
// max); edges inside a cluster become the self-loop (c, c), kept unless asked otherwise. The products carry
// A's weights through unchanged: A·Sᵀ with semiring<Combine, first> (the value comes from A), then S·(A·Sᵀ)
// with semiring<Combine, second> (the value comes from A·Sᵀ), so the indicator's own values never matter.
#pragma once
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "engine/hybla.hpp"

namespace hybla::algorithms {

// How labels are renumbered: in order of first appearance in vertex order (vertex 0's label becomes 0), or
// in increasing order of label value.
enum class LabelOrder { first_appearance, value };
enum class Combine { plus, min, max };

// A label type: any integer type but bool.
template <class L>
concept Label = std::integral<L> && !std::same_as<L, bool>;

template <Label L>
struct CompactLabels {
    std::vector<Index> compact;  // compact[v]: the compact label of vertex v, in 0..k-1
    std::vector<L> labels;       // labels[c]: the original label of compact label c (k entries)
};

namespace detail {
// The compact renumbering: emit(v, c) for each vertex v, c its compact label; returns the original label of each
// compact label. Labels within a range of at most 4n + 1024 values (cluster numbers, vertex ids) are numbered
// through a table indexed by label - min; others through a hash map or a sort. Differences are taken as unsigned.
template <Label L, class Emit>
std::vector<L> renumber(std::span<const L> labels, LabelOrder order, Emit&& emit) {
    std::vector<L> out;
    if (labels.empty()) return out;
    using U = std::make_unsigned_t<L>;
    // (The range without branches on the data, in two chains: with the numbering loop, 0.45 -> 0.2 ms on 82,000
    // labels of 20,000 clusters; two chains instead of one, 0.7-0.9x the time of the renumbering of mcl's
    // clusters of the four bench graphs on an x86-64 host.)
    L lo = labels[0], hi = labels[0], lo1 = lo, hi1 = hi;
    std::size_t i = 0;
    for (; i + 2 <= labels.size(); i += 2) {
        const L l0 = labels[i], l1 = labels[i + 1];
        lo = l0 < lo ? l0 : lo;
        hi = l0 > hi ? l0 : hi;
        lo1 = l1 < lo1 ? l1 : lo1;
        hi1 = l1 > hi1 ? l1 : hi1;
    }
    if (i < labels.size()) {
        lo = labels[i] < lo ? labels[i] : lo;
        hi = labels[i] > hi ? labels[i] : hi;
    }
    lo = lo1 < lo ? lo1 : lo;
    hi = hi1 > hi ? hi1 : hi;
    const U base = U(lo);
    const std::uint64_t span = std::uint64_t(U(U(hi) - base));
    if (span < 4 * std::uint64_t(labels.size()) + 1024) {
        constexpr Index none = std::numeric_limits<Index>::max();
        // (Up to 2^20 labels' span kept per thread: a fresh table costs a page fault per 4 KB on every call,
        // most of the time on a host where faults are slow.)
        thread_local std::vector<Index> kept;
        std::vector<Index> fresh;
        std::vector<Index>& id = span < (std::uint64_t(1) << 20) ? kept : fresh;
        id.assign(span + 1, none);
        auto slot = [&](L l) -> Index& { return id[std::size_t(U(U(l) - base))]; };
        if (order == LabelOrder::value) {
            for (L l : labels) slot(l) = 0;
            for (std::uint64_t x = 0; x <= span; ++x)
                if (id[x] != none) {
                    id[x] = Index(out.size());
                    out.push_back(L(U(base + U(x))));
                }
            for (std::size_t v = 0; v < labels.size(); ++v) emit(v, slot(labels[v]));
        } else {
            // (A label's slot is written only when it is new. Written every time, the next vertex of the same label
            // waits for that store: the renumbering of mcl's clusters of the four bench graphs took 1.1-1.5x as
            // long, on an x86-64 host.)
            Index k = 0;
            for (std::size_t v = 0; v < labels.size(); ++v) {
                Index& c = slot(labels[v]);
                if (c == none) c = k++;
                emit(v, c);
            }
            out.resize(k);
            for (std::uint64_t x = 0; x <= span; ++x)
                if (id[x] != none) out[id[x]] = L(U(base + U(x)));
        }
        return out;
    }
    if (order == LabelOrder::value) {
        out.assign(labels.begin(), labels.end());
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        for (std::size_t v = 0; v < labels.size(); ++v)
            emit(v, Index(std::lower_bound(out.begin(), out.end(), labels[v]) - out.begin()));
        return out;
    }
    std::unordered_map<L, Index> id;
    id.reserve(labels.size());
    for (std::size_t v = 0; v < labels.size(); ++v) {
        auto [it, fresh] = id.try_emplace(labels[v], Index(out.size()));
        if (fresh) out.push_back(labels[v]);
        emit(v, it->second);
    }
    return out;
}
}  // namespace detail

template <Label L>
CompactLabels<L> compact_labels(std::span<const L> labels, LabelOrder order = LabelOrder::first_appearance) {
    CompactLabels<L> r;
    r.compact.resize(labels.size());
    r.labels = detail::renumber(labels, order, [&](std::size_t v, Index c) { r.compact[v] = c; });
    return r;
}

struct ContractOptions {
    Combine combine = Combine::plus;                     // how parallel edges between two clusters combine
    LabelOrder order = LabelOrder::first_appearance;     // how labels are renumbered
    bool drop_self_loops = false;                        // drop (c, c): the edges inside each cluster
};

template <class T, Label L>
struct Contracted {
    Matrix<T> matrix;       // k x k, in A's context; row/column c is the cluster labels[c]
    std::vector<L> labels;  // compact label -> original label
};

namespace detail {
// Sᵀ (n x k), one entry per row at columns[v] (each below k, a host array), in ctx: only the columns are copied
// there, the offsets 0..n and the values are written where Sᵀ lives (S itself is formed from it where A lives;
// writing both on the host and uploading them measured no faster).
template <class T>
Matrix<T> indicator_transposed(Array<ColIndex> columns, Index k, const Context& ctx) {
    const Index n = columns.size();
    Array<ColIndex> cols = columns.context() == ctx ? std::move(columns) : columns.to(ctx);
    return Matrix<T>::adopt_csr(n, k, n, Array<Offset>::iota(n + 1, ctx), std::move(cols), Array<T>(n, T(1), ctx));
}

// S·(A·Sᵀ) from st = Sᵀ (n x k, one entry per row). A·Sᵀ first: a cluster's row then spans k columns, not n,
// and A·Sᵀ has fewer entries than S·A (a vertex's neighbours mostly share a few clusters), so both products are
// smaller than in (S·A)·Sᵀ. S is read as st transposed (formed, and kept on st, where A lives).
template <class Monoid, class T>
Matrix<T> coarsen(const Matrix<T>& st, const Matrix<T>& a) {
    const Index k = st.ncols();
    Matrix<T> as(a.nrows(), k, a.context());
    mxm(as, no_mask, no_accum, semiring<Monoid, first_op>{}, a, st);
    Matrix<T> c(k, k, a.context());
    mxm(c, no_mask, no_accum, semiring<Monoid, second_op>{}, st, as, Descriptor{.transpose_a = true});
    return c;
}
}  // namespace detail

// The contraction of the graph A by the labels (one per vertex). Runs where A lives; only the labels are
// handled on the host.
template <class T, Label L>
Contracted<T, L> contract(const Matrix<T>& a, std::span<const L> labels, const ContractOptions& options = {}) {
    if (a.nrows() != a.ncols())
        throw DimensionMismatch("contract: the adjacency matrix must be square, got " +
                                hybla::detail::shape(a.nrows(), a.ncols()));
    const Index n = a.nrows();
    if (labels.size() != n)
        throw InvalidValue("contract: expected one label per vertex, " + std::to_string(n) + " in all, got " +
                           std::to_string(labels.size()) + " labels");
    // The compact labels go into Sᵀ's column indices, through a host buffer kept per thread up to 2^22 vertices
    // (a fresh one costs a page fault per 4 KB on every call: soc-Slashdot0902's 82,000 labels took 0.43 ms on
    // an H100's host).
    thread_local std::vector<ColIndex> kept;
    std::vector<ColIndex> fresh;
    std::vector<ColIndex>& host_columns = n <= (Index(1) << 22) ? kept : fresh;
    if (host_columns.size() < n) host_columns.resize(n);
    std::vector<L> original =
        detail::renumber(labels, options.order, [&](std::size_t v, Index c) { host_columns[v] = ColIndex(c); });
    const Index k = original.size();
    Array<ColIndex> columns(n, a.context());
    columns.copy_from(host_columns.data(), Context::cpu(), n);

    const Matrix<T> st = detail::indicator_transposed<T>(std::move(columns), k, a.context());
    Matrix<T> c = [&] {
        switch (options.combine) {
            case Combine::min: return detail::coarsen<min_monoid>(st, a);
            case Combine::max: return detail::coarsen<max_monoid>(st, a);
            case Combine::plus: break;
        }
        return detail::coarsen<plus_monoid>(st, a);
    }();
    if (options.drop_self_loops) {
        Matrix<T> off(k, k, a.context());
        select(off, no_mask, no_accum, offdiag{}, c);
        c = std::move(off);
    }
    return {std::move(c), std::move(original)};
}
template <class T, Label L>
Contracted<T, L> contract(const Matrix<T>& a, const std::vector<L>& labels, const ContractOptions& options = {}) {
    return contract(a, std::span<const L>(labels.data(), labels.size()), options);
}

}  // namespace hybla::algorithms
