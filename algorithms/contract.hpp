// Graph contraction with cuGraph's coarsen_graph semantics: every vertex carries a label (any integer); the
// labels are renumbered compactly 0..k-1 and the graph A (n x n) becomes the k x k graph S·A·Sᵀ, where S is the
// k x n label indicator (S(c, v) present iff vertex v has compact label c). Entry (c, d) of the result combines
// the weights of all edges from a vertex of cluster c to a vertex of cluster d with a monoid (plus, min or
// max); edges inside a cluster become the self-loop (c, c), kept unless asked otherwise. The products carry
// A's weights through unchanged: A·Sᵀ with semiring<Combine, first> (the value comes from A), then S·(A·Sᵀ)
// with semiring<Combine, second> (the value comes from A·Sᵀ), so the indicator's own values never matter.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "engine/hybla.hpp"

namespace hybla::algorithms {

// How labels are renumbered (engine/labels.hpp): in order of first appearance in vertex order (vertex 0's label
// becomes 0), or in increasing order of label value.
using hybla::Label;
using hybla::LabelOrder;
enum class Combine { plus, min, max };

template <Label L>
struct CompactLabels {
    std::vector<Index> compact;  // compact[v]: the compact label of vertex v, in 0..k-1
    std::vector<L> labels;       // labels[c]: the original label of compact label c (k entries)
};

template <Label L>
CompactLabels<L> compact_labels(std::span<const L> labels, LabelOrder order = LabelOrder::first_appearance) {
    CompactLabels<L> r;
    r.compact.resize(labels.size());
    r.labels = hybla::detail::renumber(labels, order, [&](std::size_t v, Index c) { r.compact[v] = c; });
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
// S·(A·Sᵀ), given S (k x n) and Sᵀ. A·Sᵀ first: a cluster's row then spans k columns, not n, and A·Sᵀ has fewer
// entries than S·A (a vertex's neighbours mostly share a few clusters), so both products are smaller than in
// (S·A)·Sᵀ.
template <class Monoid, class T>
Matrix<T> coarsen(const Matrix<T>& s, const Matrix<T>& st, const Matrix<T>& a) {
    Matrix<T> as(a.nrows(), st.ncols(), a.context());
    mxm(as, no_mask, no_accum, semiring<Monoid, first_op>{}, a, st);
    Matrix<T> c(s.nrows(), s.nrows(), a.context());
    mxm(c, no_mask, no_accum, semiring<Monoid, second_op>{}, s, as);
    return c;
}
}  // namespace detail

namespace detail {
// The contraction by the indicator of the labels.
template <class T, Label L>
Contracted<T, L> contract_by(const Matrix<T>& a, Indicator<T, L> ind, const ContractOptions& options) {
    const Index k = ind.labels.size();
    Matrix<T> c = [&] {
        switch (options.combine) {
            case Combine::min: return coarsen<min_monoid>(ind.s, ind.st, a);
            case Combine::max: return coarsen<max_monoid>(ind.s, ind.st, a);
            case Combine::plus: break;
        }
        return coarsen<plus_monoid>(ind.s, ind.st, a);
    }();
    if (options.drop_self_loops) {
        Matrix<T> off(k, k, a.context());
        select(off, no_mask, no_accum, offdiag{}, c);
        c = std::move(off);
    }
    return {std::move(c), std::move(ind.labels)};
}

template <class T>
void check_contract(const Matrix<T>& a, Index nlabels) {
    if (a.nrows() != a.ncols())
        throw DimensionMismatch("contract: the adjacency matrix must be square, got " +
                                hybla::detail::shape(a.nrows(), a.ncols()));
    if (nlabels != a.nrows())
        throw InvalidValue("contract: expected one label per vertex, " + std::to_string(a.nrows()) +
                           " in all, got " + std::to_string(nlabels) + " labels");
}
}  // namespace detail

// The contraction of the graph A by the labels (one per vertex). Runs where A lives: on the GPU the labels are
// uploaded and numbered there, with S and Sᵀ (hybla::indicator).
template <class T, Label L>
Contracted<T, L> contract(const Matrix<T>& a, std::span<const L> labels, const ContractOptions& options = {}) {
    detail::check_contract(a, labels.size());
    return detail::contract_by(a, indicator<T>(labels, options.order, a.context()), options);
}
template <class T, Label L>
Contracted<T, L> contract(const Matrix<T>& a, const std::vector<L>& labels, const ContractOptions& options = {}) {
    return contract(a, std::span<const L>(labels.data(), labels.size()), options);
}
// Labels in a Vector (every entry present), as a GPU computation leaves them: numbered where they are when the
// vector lives where A does (else moved there first), without a trip through the host.
template <class T, Label L>
Contracted<T, L> contract(const Matrix<T>& a, const Vector<L>& labels, const ContractOptions& options = {}) {
    detail::check_contract(a, labels.size());
    if (labels.nvals() != labels.size())
        throw InvalidValue("contract: every vertex needs a label; the label vector of size " +
                           std::to_string(labels.size()) + " has " + std::to_string(labels.nvals()) + " entries");
    if (!(labels.context() == a.context())) return contract(a, labels.to(a.context()), options);
    return detail::contract_by(a, indicator<T>(labels, options.order), options);
}

}  // namespace hybla::algorithms
