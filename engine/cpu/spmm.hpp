// SpMM (sparse x dense) and SDDMM (dense x dense sampled by a sparse mask) on the CPU, row-parallel with
// rows split by nnz for power-law graphs.
#pragma once
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/cpu/parallel.hpp"
#include "engine/descriptor.hpp"
#include "engine/dense_matrix.hpp"
#include "engine/matrix.hpp"

namespace hybla::cpu {

// C(i,:) = ⊕_k A(i,k) ⊗ B(k,:). A row without entries gives the add monoid's identity.
template <class Sr, class TC, class TA, class TB>
DenseMatrix<TC> spmm(const Matrix<TA>& a, const DenseMatrix<TB>& b) {
    const Index m = a.nrows(), w = b.ncols();
    Array<TC> out(m * w);  // every entry is written below
    TC* cd = out.data();
    const auto ac = a.col_indices().data();
    const auto av = a.values().data();
    Array<Offset> work(m + 1);
    parallel_for_each(m + 1, [&](Index i) { work[i] = (a.row_offsets()[i] + i) * w; }, 1 << 14);
    parallel_rows_by_work(work.data(), m, [&](Index i) {
        TC* crow = cd + i * w;
        Offset p = a.row_begin(i);
        if (p == a.row_end(i)) {
            for (Index x = 0; x < w; ++x) crow[x] = Sr::template zero<TC>();
            return;
        }
        {  // the first term initialises the row: `any` has no true identity
            const TC s = TC(av[p]);
            const TB* brow = b.row(ac[p]);
            for (Index x = 0; x < w; ++x) crow[x] = Sr::template multiply<TC>(s, TC(brow[x]));
        }
        for (++p; p < a.row_end(i); ++p) {
            const TC s = TC(av[p]);
            const TB* brow = b.row(ac[p]);
            for (Index x = 0; x < w; ++x) crow[x] = Sr::template add<TC>(crow[x], Sr::template multiply<TC>(s, TC(brow[x])));
        }
    });
    return DenseMatrix<TC>::import_row_major(m, w, std::move(out));
}

// C(i,j) accum= ⊕_u A(i,u) ⊗ B(u,j) where the mask allows (its pattern, or its true values; where it does not
// with complement), each entry as in spmm (an empty row of A gives the identity); C's other entries stay. B may
// be C: every value is computed from B as it was.
template <class Sr, class TC, class M, class Accum, class TA, class TB>
void spmm_masked(DenseMatrix<TC>& c, const Matrix<M>& mask, bool structure, bool complement, Accum accum,
                 const Matrix<TA>& a, const DenseMatrix<TB>& b) {
    const Index m = c.nrows(), w = c.ncols();
    const auto mc = mask.col_indices().data();
    const auto mv = mask.values().data();
    const auto ac = a.col_indices().data();
    const auto av = a.values().data();
    const auto bd = b.data();
    auto cd = c.data();
    auto dot = [&](Index i, Index j) {
        Offset p = a.row_begin(i);
        if (p == a.row_end(i)) return Sr::template zero<TC>();
        TC s = Sr::template multiply<TC>(TC(av[p]), TC(bd[Index(ac[p]) * w + j]));
        for (++p; p < a.row_end(i); ++p)
            s = Sr::template add<TC>(s, Sr::template multiply<TC>(TC(av[p]), TC(bd[Index(ac[p]) * w + j])));
        return s;
    };
    auto put = [&](TC& x, TC v) {
        if constexpr (std::is_same_v<Accum, NoAccum>) x = v;
        else x = TC(accum(x, v));
    };
    auto named = [&](Offset p) { return structure || mv[p] != M(0); };
    // The values first (B may be C), then stored: at the mask's entries, one value a mask entry; with the
    // complement, per row the columns the mask does not name.
    if (!complement) {
        Array<TC> vals(mask.nvals());  // (not std::vector: vector<bool>'s bits are not separate objects for threads)
        parallel_for_each(m, [&](Index i) {
            for (Offset p = mask.row_begin(i); p < mask.row_end(i); ++p)
                if (named(p)) vals[p] = dot(i, mc[p]);
        }, 64);
        parallel_for_each(m, [&](Index i) {
            for (Offset p = mask.row_begin(i); p < mask.row_end(i); ++p)
                if (named(p)) put(cd[i * w + mc[p]], vals[p]);
        }, 64);
        return;
    }
    std::vector<std::vector<std::pair<Index, TC>>> rows(m);
    parallel_for_each(m, [&](Index i) {
        std::vector<bool> in(w, false);
        for (Offset p = mask.row_begin(i); p < mask.row_end(i); ++p)
            if (named(p)) in[mc[p]] = true;
        for (Index j = 0; j < w; ++j)
            if (!in[j]) rows[i].emplace_back(j, dot(i, j));
    }, 64);
    parallel_for_each(m, [&](Index i) {
        for (auto [j, v] : rows[i]) put(cd[i * w + j], v);
    }, 64);
}

// T(i,j) = ⊕_x A(i,x) ⊗ Bt(j,x) for every (i,j) where the mask is true (the pattern, or true values).
template <class Sr, class TC, class M, class TA, class TB>
Matrix<TC> sddmm(const Matrix<M>& mask, bool structure, const DenseMatrix<TA>& a, const DenseMatrix<TB>& bt) {
    const Index k = a.ncols();
    const auto mc = mask.col_indices().data();
    const auto mv = mask.values().data();
    auto keep = [&](Offset p) { return k > 0 && (structure || mv[p] != M(0)); };
    return build_rows<TC>(
        mask.nrows(), mask.ncols(),
        [&](Index i) {
            Offset n = 0;
            for (Offset p = mask.row_begin(i); p < mask.row_end(i); ++p) n += keep(p);
            return n;
        },
        [&](Index i, ColIndex* oc, TC* ov) {
            const TA* arow = a.row(i);
            for (Offset p = mask.row_begin(i); p < mask.row_end(i); ++p) {
                if (!keep(p)) continue;
                const TB* brow = bt.row(mc[p]);
                TC acc = Sr::template multiply<TC>(TC(arow[0]), TC(brow[0]));
                for (Index x = 1; x < k && !Sr::template is_terminal<TC>(acc); ++x)
                    acc = Sr::template add<TC>(acc, Sr::template multiply<TC>(TC(arow[x]), TC(brow[x])));
                *oc++ = mc[p];
                *ov++ = acc;
            }
        });
}

}  // namespace hybla::cpu
