// extract (C = A(I, J), w = u(I), w = A(I, j)) and assign (C(I, J) = A or a scalar, w(I) = u or a scalar).
// assign's mask has C's shape and applies to all of C, as GrB_assign's does; an index listed twice in an
// assign is an InvalidIndex (the result would depend on order).
#pragma once
#include "engine/checks.hpp"
#include "engine/cpu/extract_assign.hpp"
#include "engine/cpu/vector_view.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/index_set.hpp"
#include "engine/cuda/dispatch.hpp"

namespace hybla {

namespace detail {
// C<M> accum(I, J)= A on the GPU: Z = C with the region assigned, then C<M> = Z.
template <class TC, class MaskT, class Accum>
void cuda_assign(Matrix<TC>& c, const MaskT& mask, Accum accum, const Matrix<TC>& a, const IndexSet& rows, Index nr,
                 const IndexSet& cols, Index nc, const Descriptor& d) {
    using namespace cuda_dispatch;
    cpu::positions(rows, nr, c.nrows(), "assign (rows)");  // an index listed twice is an error
    cpu::positions(cols, nc, c.ncols(), "assign (columns)");
    auto acc = accum_code(accum, "assign");
    Matrix<TC> z = c;
    cuda::assign(z, a, list_of(rows, nr), list_of(cols, nc), acc ? &*acc : nullptr);
    write_back(c, std::move(z), mask, no_accum, d, "assign");
}
// An nr x nc matrix with every entry s, in ctx.
template <class T>
Matrix<T> filled(Index nr, Index nc, T s, const Context& ctx) {
    Array<Offset> off(nr + 1);
    for (Index r = 0; r <= nr; ++r) off[r] = r * nc;
    Array<ColIndex> ci(nr * nc);
    for (Index x = 0; x < nr * nc; ++x) ci[x] = ColIndex(x % nc);
    return Matrix<T>::import_csr(nr, nc, std::move(off), std::move(ci), Array<T>(nr * nc, s), false).to(ctx);
}
}  // namespace detail

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
    detail::same_context("extract", c, mask, a);
    HYBLA_ON_GPU(c) {
        using namespace cuda_dispatch;
        auto at = as_type<TC>(aa);
        write_back(c, cuda::extract(at.get(), list_of(rows, nr), list_of(cols, nc)), mask, accum, d, "extract");
        return;
    }
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
    detail::same_context("extract", w, mask, u);
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        auto ut = as_type<TW>(u);
        auto t = cuda::extract(cuda::as_column(ut.get()), list_of(idx, n), std::vector<Index>{0});
        write_back(w, cuda::from_column(t), mask, accum, d, "extract");
        return;
    }
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
    detail::same_context("extract", w, mask, a);
    std::vector<Index> one{col};
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        auto at = as_type<TW>(aa);
        auto t = cuda::extract(at.get(), list_of(rows, nr), one);
        write_back(w, cuda::from_column(t), mask, accum, d, "extract");
        return;
    }
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
    detail::same_context("assign", c, mask, a);
    HYBLA_ON_GPU(c) {
        auto at = cuda_dispatch::as_type<TC>(aa);
        return detail::cuda_assign(c, mask, accum, at.get(), rows, nr, cols, nc, d);
    }
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
    detail::same_context("assign", c, mask);
    HYBLA_ON_GPU(c)
        return detail::cuda_assign(c, mask, accum, detail::filled(nr, nc, TC(s), c.context()), rows, nr, cols, nc, d);
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
    detail::same_context("assign", w, mask, u);
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        auto ut = as_type<TW>(u);
        Matrix<TW> wc = cuda::as_column(w);
        detail::cuda_assign(wc, NoMask{}, accum, cuda::as_column(ut.get()), idx, n, IndexSet(all), 1, Descriptor{});
        write_back(w, cuda::from_column(wc), mask, no_accum, d, "assign");
        return;
    }
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
    detail::same_context("assign", w, mask);
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        Matrix<TW> wc = cuda::as_column(w);
        detail::cuda_assign(wc, NoMask{}, accum, detail::filled(n, 1, TW(s), w.context()), idx, n, IndexSet(all), 1,
                            Descriptor{});
        write_back(w, cuda::from_column(wc), mask, no_accum, d, "assign");
        return;
    }
    Matrix<TW> wc = cpu::as_column(w);
    cpu::assign_region(wc, NoMask{}, accum, idx, n, IndexSet(all), 1,
                       [&](Index, auto&& emit) { emit(Index(0), TW(s)); }, Descriptor{});
    cpu::write_back_vector(w, cpu::from_column(wc), mask, no_accum, d);
}

}  // namespace hybla
