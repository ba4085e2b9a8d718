// mxv / vxm on the CPU. Pull: one dot product per output row over a dense view of u, rows split by nnz so a
// heavy row does not stall the others. Push: for a sparse u (a frontier), scatter the rows of the matrix
// that u selects through a hash accumulator. Both sum in increasing order of the inner index, so they give
// bit-identical results.
#pragma once
#include <type_traits>

#include <tbb/parallel_reduce.h>

#include "engine/cpu/accumulator.hpp"
#include "engine/cpu/parallel.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cpu {

// out(i) = ⊕_k M(i,k) ⊗ u(k) (Flip: u(k) ⊗ M(i,k)) over present u(k); rows with allowed[i] == 0 are skipped.
template <class Sr, class TW, bool Flip, class TA, class TU>
Vector<TW> spmv_pull(const Matrix<TA>& m, const Vector<TU>& u, const std::uint8_t* allowed) {
    const Index n = m.nrows();
    const TU* uv = u.values().data();
    const std::uint8_t* ubm = u.nvals() == u.size() ? nullptr : u.bitmap().data();
    const auto mc = m.col_indices().data();
    const auto mv = m.values().data();
    const auto mo = m.row_offsets().data();
    Array<TW> out(n);
    Array<std::uint8_t> bm(n);
    auto row = [&](Index i) {
        bool found = false;
        TW acc{};
        if (!allowed || allowed[i]) {
            for (Offset p = mo[i]; p < mo[i + 1]; ++p) {
                const ColIndex k = mc[p];
                if (ubm && !ubm[k]) continue;
                const TW t = Flip ? Sr::template multiply<TW>(TW(uv[k]), TW(mv[p]))
                                  : Sr::template multiply<TW>(TW(mv[p]), TW(uv[k]));
                acc = found ? Sr::template add<TW>(acc, t) : t;
                found = true;
                if (Sr::template is_terminal<TW>(acc)) break;
            }
        }
        out[i] = acc;
        bm[i] = found;
    };
    // Rows split by their entries (row offsets are the work prefix), so a heavy row does not stall a thread.
    if (n < 4096) for (Index i = 0; i < n; ++i) row(i);
    else parallel_rows_by_work(mo, n, row);
    const Index nvals = tbb::parallel_reduce(
        tbb::blocked_range<Index>(0, n, 1 << 14), Index(0),
        [&](const tbb::blocked_range<Index>& r, Index s) {
            for (Index i = r.begin(); i != r.end(); ++i) s += bm[i];
            return s;
        },
        [](Index x, Index y) { return x + y; });
    return Vector<TW>::adopt(n, nvals, true, Array<Index>(), std::move(out), std::move(bm));
}

// out(j) = ⊕_{k ∈ u} N(k,j) ⊗ u(k) (Flip: u(k) ⊗ N(k,j)), u sparse; sequential, for small frontiers.
template <class Sr, class TW, bool Flip, class TA, class TU>
Vector<TW> spmv_push(const Matrix<TA>& nm, const Vector<TU>& u, const std::uint8_t* allowed) {
    const auto ui = u.indices();
    const auto uv = u.values();
    const auto nc = nm.col_indices().data();
    const auto nv = nm.values().data();
    Offset work = 0;
    for (Index k : ui) work += nm.row_degree(k);
    HashAccumulator<TW> acc;
    acc.begin_row(std::min<Offset>(work, nm.ncols()));
    auto add_op = [](TW x, TW y) { return Sr::template add<TW>(x, y); };
    for (std::size_t q = 0; q < ui.size(); ++q) {
        const Index k = ui[q];
        for (Offset p = nm.row_begin(k); p < nm.row_end(k); ++p) {
            const ColIndex j = nc[p];
            if (allowed && !allowed[j]) continue;
            const TW t = Flip ? Sr::template multiply<TW>(TW(uv[q]), TW(nv[p]))
                              : Sr::template multiply<TW>(TW(nv[p]), TW(uv[q]));
            acc.template add<MaskMode::none>(j, t, add_op);
        }
    }
    Array<ColIndex> cols(acc.size());
    Array<TW> vals(acc.size());
    acc.gather(cols.data(), vals.data());
    Array<Index> idx(cols.size());
    std::copy(cols.begin(), cols.end(), idx.begin());
    return Vector<TW>::import_sparse(nm.ncols(), std::move(idx), std::move(vals), false);
}

}  // namespace hybla::cpu
