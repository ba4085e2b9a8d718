// Reductions with a monoid: rows of a matrix to a vector, and a matrix or vector to a scalar. The scalar
// reduction splits work at fixed boundaries (parallel_deterministic_reduce), so floating-point sums are
// bit-identical across runs and thread counts.
#pragma once
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
        TW acc = Monoid::template identity<TW>();
        for (; p < e && !Monoid::template is_terminal<TW>(acc); ++p) acc = op(acc, TW(av[p]));
        out[i] = acc;
    }, 1024);
    return Vector<TW>::import_dense(n, std::move(out), std::move(bm));
}

// ⊕ of values[0..n) (entries with present[i] == 0 skipped when present is given).
template <class Monoid, class TS, class TA>
TS reduce_values(const TA* values, const std::uint8_t* present, Index n) {
    Monoid op;
    return tbb::parallel_deterministic_reduce(
        tbb::blocked_range<Index>(0, n, 1 << 13), Monoid::template identity<TS>(),
        [&](const tbb::blocked_range<Index>& r, TS acc) {
            for (Index i = r.begin(); i != r.end(); ++i)
                if (!present || present[i]) acc = op(acc, TS(values[i]));
            return acc;
        },
        [&](TS x, TS y) { return op(x, y); });
}

}  // namespace hybla::cpu
