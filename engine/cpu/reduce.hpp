// Reductions with a monoid: rows of a matrix to a vector, and a matrix or vector to a scalar, each computed in
// the result's type TW or TS (every value cast to it before the monoid combines it). The scalar reduction
// splits work at fixed boundaries (parallel_deterministic_reduce), so floating-point sums are bit-identical
// across runs and thread counts.
#pragma once
#include <utility>

#include <tbb/parallel_reduce.h>

#include "engine/cpu/parallel.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cpu {

template <class Monoid, class TW, class TA>
Vector<TW> reduce_rows(const Matrix<TA>& a) {
    const Index n = a.nrows();
    Array<TW> out(n);
    Array<std::uint8_t> bm(n);
    const auto av = a.values().data();
    Monoid op;
    parallel_for_each(n, [&](Index i) {
        Offset p = a.row_begin(i), e = a.row_end(i);
        bm[i] = p < e;
        // Start from the first entry, not the identity: `any` has no true identity.
        TW acc = p < e ? TW(av[p++]) : Monoid::template identity<TW>();
        // Combine, then test: the first entry alone is not a combined result (lor of {70, 3} is 1, not 70).
        for (; p < e; ++p) {
            acc = op(acc, TW(av[p]));
            if (Monoid::template is_terminal<TW>(acc)) break;
        }
        out[i] = acc;
    }, 1024);
    return Vector<TW>::import_dense(n, std::move(out), std::move(bm));
}

// ⊕ of term(i) over the i in [0, n) with has(i), split at fixed boundaries; the monoid's identity when none.
template <class Monoid, class TS, class Has, class Term>
TS reduce_terms(Index n, Has has, Term term) {
    Monoid op;
    // (found, value): partial results without entries must not take part, since `any` has no true identity.
    using Partial = std::pair<bool, TS>;
    auto combine = [&](Partial x, Partial y) {
        if (!x.first) return y;
        if (!y.first) return x;
        return Partial{true, op(x.second, y.second)};
    };
    Partial r = tbb::parallel_deterministic_reduce(
        tbb::blocked_range<Index>(0, n, 1 << 13), Partial{false, TS{}},
        [&](const tbb::blocked_range<Index>& r, Partial acc) {
            for (Index i = r.begin(); i != r.end(); ++i)
                if (has(i)) acc = combine(acc, Partial{true, term(i)});
            return acc;
        },
        combine);
    return r.first ? r.second : Monoid::template identity<TS>();
}

// ⊕ of values[0..n) (entries with present[i] == 0 skipped when present is given).
template <class Monoid, class TS, class TA>
TS reduce_values(const TA* values, const std::uint8_t* present, Index n) {
    return reduce_terms<Monoid, TS>(n, [=](Index i) { return !present || present[i]; },
                                    [=](Index i) { return TS(values[i]); });
}

// ⊕ over the i in [0, n) present in both of u[i] ⊗ v[i] (bitmaps nullptr: all present), computed in TS: an
// inner product.
template <class Sr, class TS, class TU, class TV>
TS inner_values(const TU* u, const std::uint8_t* u_present, const TV* v, const std::uint8_t* v_present, Index n) {
    return reduce_terms<typename Sr::add_monoid, TS>(
        n, [=](Index i) { return (!u_present || u_present[i]) && (!v_present || v_present[i]); },
        [=](Index i) { return Sr::template multiply<TS>(TS(u[i]), TS(v[i])); });
}

}  // namespace hybla::cpu
