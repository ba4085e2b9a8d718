// Masks and the final write of every operation: C<M, replace> accum= T, as the GraphBLAS C API defines it.
// Every operation computes its result T first (pruned by the mask where that saves work), then calls write_back.
#pragma once
#include <type_traits>

#include "engine/cpu/parallel.hpp"
#include "engine/descriptor.hpp"
#include "engine/matrix.hpp"

namespace hybla::cpu {

// Walks a sorted mask row and answers "is the mask true at column j?" for increasing j.
template <class M>
class MaskRowCursor {
public:
    MaskRowCursor(const Matrix<M>& m, Index i, bool structure, bool complement)
        : ci_(m.col_indices().data()), v_(m.values().data()), p_(m.row_begin(i)), e_(m.row_end(i)),
          structure_(structure), complement_(complement) {}
    bool operator()(Index j) {
        while (p_ < e_ && ci_[p_] < j) ++p_;
        bool present = p_ < e_ && ci_[p_] == j && (structure_ || v_[p_] != M(0));
        return present != complement_;
    }

private:
    const ColIndex* ci_;
    const M* v_;
    Offset p_, e_;
    bool structure_, complement_;
};

// Calls f(j, pa, pb) over the union of two sorted rows, pa/pb the positions or -1 when absent.
template <class F>
inline void merge_union(const ColIndex* ac, Offset pa, Offset ea, const ColIndex* bc, Offset pb, Offset eb, F&& f) {
    constexpr Offset none = ~Offset(0);
    while (pa < ea || pb < eb) {
        if (pb >= eb || (pa < ea && ac[pa] < bc[pb])) {
            f(ac[pa], pa, none);
            ++pa;
        } else if (pa >= ea || bc[pb] < ac[pa]) {
            f(bc[pb], none, pb);
            ++pb;
        } else {
            f(ac[pa], pa, pb);
            ++pa;
            ++pb;
        }
    }
}
inline constexpr Offset absent = ~Offset(0);

// union(A, B) with op where both exist (eWiseAdd, and accumulation without a mask).
template <class TC, class TA, class TB, class Op>
Matrix<TC> ewise_union(const Matrix<TA>& a, const Matrix<TB>& b, Op op) {
    const auto ac = a.col_indices().data();
    const auto bc = b.col_indices().data();
    const auto av = a.values().data();
    const auto bv = b.values().data();
    return build_rows<TC>(
        a.nrows(), a.ncols(),
        [&](Index i) {
            Offset n = 0;
            merge_union(ac, a.row_begin(i), a.row_end(i), bc, b.row_begin(i), b.row_end(i),
                        [&](Index, Offset, Offset) { ++n; });
            return n;
        },
        [&](Index i, ColIndex* oc, TC* ov) {
            merge_union(ac, a.row_begin(i), a.row_end(i), bc, b.row_begin(i), b.row_end(i),
                        [&](Index j, Offset pa, Offset pb) {
                            *oc++ = ColIndex(j);
                            if (pa != absent && pb != absent) *ov++ = op(TC(av[pa]), TC(bv[pb]));
                            else if (pa != absent) *ov++ = TC(av[pa]);
                            else *ov++ = TC(bv[pb]);
                        });
        });
}

// C<M, replace> accum= T. With NoMask as M the mask is everywhere true.
template <class TC, class MaskT, class Accum>
void write_back(Matrix<TC>& c, Matrix<TC>&& t, const MaskT& mask, Accum accum, const Descriptor& d) {
    constexpr bool has_mask = !std::is_same_v<MaskT, NoMask>;
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    if constexpr (!has_mask) {
        if constexpr (!has_accum) c = std::move(t);
        else c = ewise_union<TC>(c, t, accum);
    } else {
        const auto cc = c.col_indices().data();
        const auto cv = c.values().data();
        const auto tc = t.col_indices().data();
        const auto tv = t.values().data();
        // Calls emit(j, value) for each entry of the new row i.
        auto row = [&](Index i, auto&& emit) {
            MaskRowCursor<typename MaskT::value_type> m(mask, i, d.mask_structure, d.mask_complement);
            merge_union(cc, c.row_begin(i), c.row_end(i), tc, t.row_begin(i), t.row_end(i),
                        [&](Index j, Offset pc, Offset pt) {
                            if (m(j)) {
                                if (pt != absent) {
                                    if constexpr (has_accum) emit(j, pc != absent ? accum(cv[pc], tv[pt]) : tv[pt]);
                                    else emit(j, tv[pt]);
                                } else if (has_accum && pc != absent) {
                                    emit(j, cv[pc]);
                                }
                            } else if (!d.replace && pc != absent) {
                                emit(j, cv[pc]);
                            }
                        });
        };
        Matrix<TC> z = build_rows<TC>(
            c.nrows(), c.ncols(),
            [&](Index i) {
                Offset n = 0;
                row(i, [&](Index, TC) { ++n; });
                return n;
            },
            [&](Index i, ColIndex* oc, TC* ov) {
                row(i, [&](Index j, TC v) {
                    *oc++ = ColIndex(j);
                    *ov++ = v;
                });
            });
        c = std::move(z);
    }
}

}  // namespace hybla::cpu
