// Graph contraction with cuGraph's coarsen_graph semantics: every vertex carries a label (any integer); the
// labels are renumbered compactly 0..k-1 and the graph A (n x n) becomes the k x k graph S·A·Sᵀ, where S is the
// k x n label indicator (S(c, v) present iff vertex v has compact label c). Entry (c, d) of the result combines
// the weights of all edges from a vertex of cluster c to a vertex of cluster d with a monoid (plus, min or
// max); edges inside a cluster become the self-loop (c, c), kept unless asked otherwise. The products carry
// A's weights through unchanged: S·A with semiring<Combine, second> (the value comes from A), then (S·A)·Sᵀ
// with semiring<Combine, first> (the value comes from S·A), so the indicator's own values never matter.
#pragma once
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
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

template <Label L>
CompactLabels<L> compact_labels(std::span<const L> labels, LabelOrder order = LabelOrder::first_appearance) {
    CompactLabels<L> r;
    r.compact.resize(labels.size());
    if (order == LabelOrder::value) {
        r.labels.assign(labels.begin(), labels.end());
        std::sort(r.labels.begin(), r.labels.end());
        r.labels.erase(std::unique(r.labels.begin(), r.labels.end()), r.labels.end());
        for (std::size_t v = 0; v < labels.size(); ++v)
            r.compact[v] = Index(std::lower_bound(r.labels.begin(), r.labels.end(), labels[v]) - r.labels.begin());
        return r;
    }
    std::unordered_map<L, Index> id;
    id.reserve(labels.size());
    for (std::size_t v = 0; v < labels.size(); ++v) {
        auto [it, fresh] = id.try_emplace(labels[v], Index(r.labels.size()));
        if (fresh) r.labels.push_back(labels[v]);
        r.compact[v] = it->second;
    }
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
template <class Monoid, class T>
Matrix<T> coarsen(const Matrix<T>& s, const Matrix<T>& a) {
    const Index k = s.nrows();
    Matrix<T> sa(k, a.ncols(), a.context());
    mxm(sa, no_mask, no_accum, semiring<Monoid, second_op>{}, s, a);
    Matrix<T> c(k, k, a.context());
    mxm(c, no_mask, no_accum, semiring<Monoid, first_op>{}, sa, s, Descriptor{.transpose_b = true});
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
    CompactLabels<L> cl = compact_labels(labels, options.order);
    const Index k = cl.labels.size();

    std::vector<Index> vertices(n);
    std::iota(vertices.begin(), vertices.end(), Index(0));
    const Array<T> ones(n, T(1));
    const Matrix<T> s = Matrix<T>::from_tuples(k, n, std::span<const Index>(cl.compact),
                                               std::span<const Index>(vertices), ones.span(), first_op{},
                                               a.context());
    Matrix<T> c = [&] {
        switch (options.combine) {
            case Combine::min: return detail::coarsen<min_monoid>(s, a);
            case Combine::max: return detail::coarsen<max_monoid>(s, a);
            case Combine::plus: break;
        }
        return detail::coarsen<plus_monoid>(s, a);
    }();
    if (options.drop_self_loops) {
        Matrix<T> off(k, k, a.context());
        select(off, no_mask, no_accum, offdiag{}, c);
        c = std::move(off);
    }
    return {std::move(c), std::move(cl.labels)};
}
template <class T, Label L>
Contracted<T, L> contract(const Matrix<T>& a, const std::vector<L>& labels, const ContractOptions& options = {}) {
    return contract(a, std::span<const L>(labels.data(), labels.size()), options);
}

}  // namespace hybla::algorithms
