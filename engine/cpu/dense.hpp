// Dense matrices on the CPU: the transpose, element-wise operations and reductions of lines (rows or columns),
// each line folded in order.
#pragma once
#include <algorithm>
#include <span>

#include "engine/cpu/parallel.hpp"
#include "engine/dense_matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cpu {

template <class T>
DenseMatrix<T> dense_transpose(const DenseMatrix<T>& a) {
    DenseMatrix<T> t(a.ncols(), a.nrows(), T{}, Context::cpu());
    const std::span<T> out = t.data();  // taken once: the threads write through it, not through t's accessors
    const Index m = a.nrows();
    parallel_for_each(a.ncols(), [&](Index j) {
        for (Index i = 0; i < m; ++i) out[j * m + i] = a(i, j);
    }, 64);
    return t;
}

// op(A, B) element by element (A and B of one shape).
template <class TC, class Op, class TA, class TB>
DenseMatrix<TC> dense_ewise(const DenseMatrix<TA>& a, const DenseMatrix<TB>& b, Op op) {
    Array<TC> out(a.nrows() * a.ncols());
    const auto ad = a.data();
    const auto bd = b.data();
    parallel_for_each(out.size(), [&](Index x) { out[x] = op(TC(ad[x]), TC(bd[x])); }, 1 << 14);
    return DenseMatrix<TC>::import_row_major(a.nrows(), a.ncols(), std::move(out));
}

// C = accum(C, T) element by element.
template <class TC, class Accum>
void dense_accumulate(DenseMatrix<TC>& c, const DenseMatrix<TC>& t, Accum accum) {
    auto cd = c.data();
    const auto td = t.data();
    parallel_for_each(cd.size(), [&](Index x) { cd[x] = accum(cd[x], td[x]); }, 1 << 14);
}

// w(o) = ⊕ of term(o, x) over x in [0, len), folded in increasing x, for every o in [0, count): a full vector,
// or one without entries when len is 0 (nothing to reduce).
template <class Monoid, class TW, class Term>
Vector<TW> fold_lines(Index count, Index len, Term term) {
    if (len == 0) return Vector<TW>(count, Context::cpu());
    Array<TW> out(count);
    Monoid op;
    parallel_for_each(count, [&](Index o) {
        TW acc = term(o, 0);
        for (Index x = 1; x < len; ++x) acc = op(acc, term(o, x));
        out[o] = acc;
    }, std::max<Index>(1, (Index(1) << 14) / len));
    return Vector<TW>::import_dense(count, std::move(out));
}

}  // namespace hybla::cpu
