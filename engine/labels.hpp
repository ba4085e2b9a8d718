// Labels (one integer per vertex: cluster numbers, community ids, any integer) numbered compactly 0..k-1, and
// the label indicator S (k x n, S(c, v) = 1 iff vertex v has compact label c) with its transpose, which graph
// contraction (S·A·Sᵀ) and pooling multiply by.
//
//   auto ind = hybla::indicator<float>(labels);                // where the default context says
//   auto ind = hybla::indicator<float>(label_vector);          // a full Vector<L>: where it lives
//   ind.s (k x n), ind.st (n x k), ind.labels[c] = the label numbered c
//
// On the GPU the labels are uploaded (8-byte ones as their low halves where the high halves agree; a Vector's are
// read in place) and numbered there (engine/cuda/structure/labels.cu): a table of first vertices over the labels'
// range, a ranking of those vertices, and S's rows from each label's count, each row sorted where it lies. The
// host only copies; labels spread over more than 4n + 1024 values are numbered on the host.
#pragma once
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/context.hpp"
#include "engine/cuda/labels.hpp"
#include "engine/error.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla {

// How labels are numbered: in order of first appearance in vertex order (vertex 0's label becomes 0), or in
// increasing order of label value.
enum class LabelOrder { first_appearance, value };

// A label type: any integer type but bool.
template <class L>
concept Label = std::integral<L> && !std::same_as<L, bool>;

template <class T, Label L>
struct Indicator {
    Matrix<T> s;            // k x n: S(c, v) = 1 iff vertex v has compact label c; row c lists its vertices in order
    Matrix<T> st;           // n x k: Sᵀ, one entry per row
    std::vector<L> labels;  // labels[c]: the label numbered c (k entries)
};

namespace detail {
// The least and greatest label (n > 0), read without branches on the data, in two chains: with the numbering
// loop, 0.45 -> 0.2 ms on 82,000 labels of 20,000 clusters; two chains instead of one, 0.7-0.9x the time of the
// renumbering of mcl's clusters of the four bench graphs on an x86-64 host.
template <Label L>
std::pair<L, L> label_range(std::span<const L> labels) {
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
    return {lo1 < lo ? lo1 : lo, hi1 > hi ? hi1 : hi};
}

// The compact numbering on the host: emit(v, c) for each vertex v, c its compact label; returns the original
// label of each compact label. Differences are taken as unsigned.
template <Label L, class Emit>
std::vector<L> renumber(std::span<const L> labels, LabelOrder order, Emit&& emit) {
    std::vector<L> out;
    if (labels.empty()) return out;
    using U = std::make_unsigned_t<L>;
    const auto [lo, hi] = label_range(labels);
    const U base = U(lo);
    const std::uint64_t span = std::uint64_t(U(U(hi) - base));
    if (table_range(span, labels.size())) {
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

// S's rows on the host from Sᵀ's columns (k labels): a counting sort of the vertices by compact label, stable.
inline void indicator_rows(std::span<const ColIndex> st_cols, Index k, Offset* s_offsets, ColIndex* s_cols) {
    std::fill(s_offsets, s_offsets + k + 1, Offset(0));
    for (ColIndex c : st_cols) ++s_offsets[c + 1];
    for (Index c = 0; c < k; ++c) s_offsets[c + 1] += s_offsets[c];
    // Each label's next slot, starting at its row's offset; afterwards s_offsets is put back.
    for (std::size_t v = 0; v < st_cols.size(); ++v) s_cols[s_offsets[st_cols[v]]++] = ColIndex(v);
    for (Index c = k; c > 0; --c) s_offsets[c] = s_offsets[c - 1];
    s_offsets[0] = 0;
}
}  // namespace detail

namespace detail {
// The indicator of n vertices from its arrays and the label of each of its k numbers.
template <class T, Label L>
Indicator<T, L> indicator_of(Index n, Array<Offset> st_offsets, Array<ColIndex> st_cols, Array<T> st_values,
                             Array<Offset> s_offsets, Array<ColIndex> s_cols, Array<T> s_values,
                             std::vector<L> labels) {
    const Index k = labels.size();
    Indicator<T, L> out;
    out.st = Matrix<T>::adopt_csr(n, k, n, std::move(st_offsets), std::move(st_cols), std::move(st_values));
    out.s = Matrix<T>::adopt_csr(k, n, n, std::move(s_offsets), std::move(s_cols), std::move(s_values));
    out.labels = std::move(labels);
    return out;
}

// The numbering on the GPU of ctx, of n labels in host memory or (on_device) in ctx's device memory; nothing
// when the labels' range is too wide for a table (the caller numbers them on the host).
template <class T, Label L>
std::optional<Indicator<T, L>> indicator_on_gpu(const L* labels, bool on_device, Index n, LabelOrder order,
                                                const Context& ctx) {
    if constexpr (cuda_compiled && (sizeof(L) == 4 || sizeof(L) == 8)) {
        // Signed labels with the sign bit flipped order as unsigned words do. S's and Sᵀ's values are written
        // with the numbering where T is a word of 1, 2, 4 or 8 bytes (no launch of their own).
        const std::uint64_t flip = std::is_signed_v<L> ? std::uint64_t(1) << (8 * sizeof(L) - 1) : 0;
        constexpr bool word = std::is_trivially_copyable_v<T> && (sizeof(T) & (sizeof(T) - 1)) == 0 && sizeof(T) <= 8;
        Array<T> st_values(n, ctx), s_values(n, ctx);
        cuda::Ones one;
        if constexpr (word) {
            const T v(1);
            std::uint64_t bits = 0;
            std::memcpy(&bits, &v, sizeof(T));
            one = {st_values.data(), s_values.data(), sizeof(T), bits};
        }
        cuda::LabelNumbering r =
            cuda::number_labels(labels, on_device, sizeof(L), n, flip, order == LabelOrder::value, one, ctx);
        if (!r.numbered) return std::nullopt;
        if constexpr (!word) {
            st_values.fill(T(1));
            s_values.fill(T(1));
        }
        // (A word and its label have the same size and bits. Copied, not zeroed first: 6-8 us of a 120 us call on
        // soc-Slashdot0902's clusters.)
        const L* const got = static_cast<const L*>(r.words);
        std::vector<L> words(got, got + r.k);
        return indicator_of<T>(n, std::move(r.st_offsets), std::move(r.st_cols), std::move(st_values),
                               std::move(r.s_offsets), std::move(r.s_cols), std::move(s_values), std::move(words));
    } else {
        return std::nullopt;
    }
}
}  // namespace detail

// S and Sᵀ of the labels (one per vertex, n in all), in ctx, with the label of each compact number.
template <class T, Label L>
Indicator<T, L> indicator(std::span<const L> labels, LabelOrder order = LabelOrder::first_appearance,
                          const Context& ctx = default_context()) {
    const Index n = labels.size();
    if (n > max_dimension)
        throw InvalidValue("indicator: at most 2^32 labels, got " + std::to_string(n));
    auto ones = [&] { return Array<T>(n, T(1), ctx); };
    if (n == 0)
        return detail::indicator_of<T, L>(0, Array<Offset>(1, Offset(0), ctx), Array<ColIndex>(0, ctx), ones(),
                                          Array<Offset>(1, Offset(0), ctx), Array<ColIndex>(0, ctx), ones(), {});
    if (ctx.is_cuda())
        if (auto got = detail::indicator_on_gpu<T>(labels.data(), false, n, order, ctx)) return std::move(*got);
    // On the host (and a wide range on the GPU): Sᵀ's columns as numbered, S's rows by a counting sort.
    Array<ColIndex> st_cols(n);
    std::vector<L> words = detail::renumber(labels, order, [&](std::size_t v, Index c) { st_cols[v] = ColIndex(c); });
    const Index k = words.size();
    Array<Offset> s_offsets(k + 1);
    Array<ColIndex> s_cols(n);
    detail::indicator_rows(st_cols.span(), k, s_offsets.data(), s_cols.data());
    if (ctx.is_cuda()) {
        st_cols = st_cols.to(ctx);
        s_offsets = s_offsets.to(ctx);
        s_cols = s_cols.to(ctx);
    }
    return detail::indicator_of<T>(n, Array<Offset>::iota(n + 1, ctx), std::move(st_cols), ones(), std::move(s_offsets),
                                   std::move(s_cols), ones(), std::move(words));
}
template <class T, Label L>
Indicator<T, L> indicator(const std::vector<L>& labels, LabelOrder order = LabelOrder::first_appearance,
                          const Context& ctx = default_context()) {
    return indicator<T>(std::span<const L>(labels.data(), labels.size()), order, ctx);
}
// The labels of a Vector, every entry present (one per vertex), in the vector's context: on the GPU they are
// numbered where they are, without a copy to or from the host (but the k labels' values coming back).
template <class T, Label L>
Indicator<T, L> indicator(const Vector<L>& labels, LabelOrder order = LabelOrder::first_appearance) {
    const Index n = labels.size();
    if (labels.nvals() != n)
        throw InvalidValue("indicator: every vertex needs a label; the vector of size " + std::to_string(n) + " has " +
                           std::to_string(labels.nvals()) + " entries");
    const Context& ctx = labels.context();
    if (!ctx.is_cuda()) return indicator<T>(labels.storage_values(), order, ctx);
    if (n > 0 && n <= max_dimension)
        if (auto got = detail::indicator_on_gpu<T>(labels.storage_values().data(), true, n, order, ctx))
            return std::move(*got);
    const Vector<L> host = labels.to(Context::cpu());  // (labels of 1 or 2 bytes, or a range too wide)
    return indicator<T>(host.storage_values(), order, ctx);
}

}  // namespace hybla
