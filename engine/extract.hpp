// extract (C = A(I, J), w = u(I), w = A(I, j)) and assign (C(I, J) = A or a scalar, w(I) = u or a scalar).
// assign's mask has C's shape and applies to all of C, as GrB_assign's does; an index listed twice in an
// assign is an InvalidIndex (the result would depend on order).
#pragma once
#include "engine/checks.hpp"
#include "engine/cpu/extract_assign.hpp"
#include "engine/cpu/vector_view.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/index_set.hpp"

namespace hybla {

// C<M> accum= op(A)(I, J)
template <class TC, class MaskT, class Accum, class TA>
    requires detail::MatrixMask<MaskT>
void extract(Matrix<TC>& c, const MaskT& mask, Accum accum, const Matrix<TA>& a, const IndexSet& rows,
             const IndexSet& cols, const Descriptor& d = {}) {
    const Matrix<TA>& aa = d.transpose_a ? a.transposed() : a;
    const Index nr = rows.resolve(aa.nrows(), "extract (rows)"), nc = cols.resolve(aa.ncols(), "extract (columns)");
    detail::require(c.nrows() == nr && c.ncols() == nc, "extract",
                    "C is " + detail::shape(c.nrows(), c.ncols()) + " but A(I, J) is " + detail::shape(nr, nc));
    detail::check_mask(mask, nr, nc, "extract");
    cpu::write_back(c, cpu::extract<TC>(aa, rows, nr, cols, nc), mask, accum, d);
}
// w<m> accum= u(I)
template <class TW, class MaskT, class Accum, class TU>
    requires detail::VectorMask<MaskT>
void extract(Vector<TW>& w, const MaskT& mask, Accum accum, const Vector<TU>& u, const IndexSet& idx,
             const Descriptor& d = {}) {
    const Index n = idx.resolve(u.size(), "extract");
    detail::require(w.size() == n, "extract",
                    "w has size " + std::to_string(w.size()) + " but u(I) has size " + std::to_string(n));
    detail::check_vector_mask(mask, n, "extract");
    auto t = cpu::extract<TW>(cpu::as_column(u), idx, n, IndexSet(all), 1);
    cpu::write_back_vector(w, cpu::from_column(t), mask, accum, d);
}
// w<m> accum= op(A)(I, j): a column (a row with transpose_a).
template <class TW, class MaskT, class Accum, class TA>
    requires detail::VectorMask<MaskT>
void extract(Vector<TW>& w, const MaskT& mask, Accum accum, const Matrix<TA>& a, const IndexSet& rows, Index col,
             const Descriptor& d = {}) {
    const Matrix<TA>& aa = d.transpose_a ? a.transposed() : a;
    if (col >= aa.ncols())
        throw InvalidIndex("extract: column " + std::to_string(col) + " is outside " +
                           detail::shape(aa.nrows(), aa.ncols()));
    const Index nr = rows.resolve(aa.nrows(), "extract (rows)");
    detail::require(w.size() == nr, "extract",
                    "w has size " + std::to_string(w.size()) + " but A(I, j) has size " + std::to_string(nr));
    detail::check_vector_mask(mask, nr, "extract");
    std::vector<Index> one{col};
    auto t = cpu::extract<TW>(aa, rows, nr, IndexSet(one), 1);
    cpu::write_back_vector(w, cpu::from_column(t), mask, accum, d);
}

// C<M> accum(I, J)= op(A)
template <class TC, class MaskT, class Accum, class TA>
    requires detail::MatrixMask<MaskT>
void assign(Matrix<TC>& c, const MaskT& mask, Accum accum, const Matrix<TA>& a, const IndexSet& rows,
            const IndexSet& cols, const Descriptor& d = {}) {
    const Matrix<TA>& aa = d.transpose_a ? a.transposed() : a;
    const Index nr = rows.resolve(c.nrows(), "assign (rows)"), nc = cols.resolve(c.ncols(), "assign (columns)");
    detail::require(aa.nrows() == nr && aa.ncols() == nc, "assign",
                    "A is " + detail::shape(aa.nrows(), aa.ncols()) + " but C(I, J) is " + detail::shape(nr, nc));
    detail::check_mask(mask, c.nrows(), c.ncols(), "assign");
    const auto ac = aa.col_indices().data();
    const auto av = aa.values().data();
    cpu::assign_region(c, mask, accum, rows, nr, cols, nc, [&](Index r, auto&& emit) {
        for (Offset p = aa.row_begin(r); p < aa.row_end(r); ++p) emit(Index(ac[p]), TC(av[p]));
    }, d);
}
// C<M> accum(I, J)= s
template <class TC, class MaskT, class Accum, class S>
    requires detail::MatrixMask<MaskT> && std::is_arithmetic_v<S>
void assign(Matrix<TC>& c, const MaskT& mask, Accum accum, S s, const IndexSet& rows, const IndexSet& cols,
            const Descriptor& d = {}) {
    const Index nr = rows.resolve(c.nrows(), "assign (rows)"), nc = cols.resolve(c.ncols(), "assign (columns)");
    detail::check_mask(mask, c.nrows(), c.ncols(), "assign");
    cpu::assign_region(c, mask, accum, rows, nr, cols, nc, [&](Index, auto&& emit) {
        for (Index x = 0; x < nc; ++x) emit(x, TC(s));
    }, d);
}
// w<m> accum(I)= u
template <class TW, class MaskT, class Accum, class TU>
    requires detail::VectorMask<MaskT>
void assign(Vector<TW>& w, const MaskT& mask, Accum accum, const Vector<TU>& u, const IndexSet& idx,
            const Descriptor& d = {}) {
    const Index n = idx.resolve(w.size(), "assign");
    detail::require(u.size() == n, "assign",
                    "u has size " + std::to_string(u.size()) + " but w(I) has size " + std::to_string(n));
    detail::check_vector_mask(mask, w.size(), "assign");
    Matrix<TW> wc = cpu::as_column(w);
    auto uc = cpu::as_column(u);
    cpu::assign_region(wc, NoMask{}, accum, idx, n, IndexSet(all), 1, [&](Index r, auto&& emit) {
        if (uc.row_degree(r)) emit(Index(0), TW(uc.values()[uc.row_begin(r)]));
    }, Descriptor{});
    cpu::write_back_vector(w, cpu::from_column(wc), mask, no_accum, d);
}
// w<m> accum(I)= s
template <class TW, class MaskT, class Accum, class S>
    requires detail::VectorMask<MaskT> && std::is_arithmetic_v<S>
void assign(Vector<TW>& w, const MaskT& mask, Accum accum, S s, const IndexSet& idx, const Descriptor& d = {}) {
    const Index n = idx.resolve(w.size(), "assign");
    detail::check_vector_mask(mask, w.size(), "assign");
    Matrix<TW> wc = cpu::as_column(w);
    cpu::assign_region(wc, NoMask{}, accum, idx, n, IndexSet(all), 1,
                       [&](Index, auto&& emit) { emit(Index(0), TW(s)); }, Descriptor{});
    cpu::write_back_vector(w, cpu::from_column(wc), mask, no_accum, d);
}

}  // namespace hybla
