// SpGEMM on the CPU: Gustavson's row-wise method (saxpy), symbolic then numeric phase, with a per-row
// accumulator chosen by the row's work (dense array or hash table), optionally restricted by a mask; and a
// dot-product method for masked products whose mask is sparser than the work of the saxpy method
// (C<L> = L·Uᵀ in triangle counting, SDDMM-like patterns).
#pragma once
#include <type_traits>
#include <vector>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_reduce.h>

#include "engine/cpu/accumulator.hpp"
#include "engine/cpu/mask.hpp"
#include "engine/cpu/parallel.hpp"
#include "engine/descriptor.hpp"
#include "engine/matrix.hpp"
#include "engine/trace.hpp"

namespace hybla::cpu {

// flops[i] = Σ_{k ∈ A(i,:)} |B(k,:)| as prefix sums (size nrows + 1).
template <class TA, class TB>
Array<Offset> row_flops_prefix(const Matrix<TA>& a, const Matrix<TB>& b) {
    Array<Offset> f(a.nrows() + 1);
    const auto ac = a.col_indices().data();
    parallel_rows_by_work(a.row_offsets().data(), a.nrows(), [&](Index i) {
        Offset s = 0;
        for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) s += b.row_degree(ac[p]);
        f[i] = s;
    });
    Array<Offset> prefix(a.nrows() + 1);
    prefix_sum(f.data(), prefix.data(), a.nrows());
    return prefix;
}

template <class TC>
struct SpgemmWorkspace {
    DenseAccumulator<TC> dense;
    HashAccumulator<TC> hash;
};

// C = A ⊕.⊗ B, optionally only where the mask allows (mask rows are read as allowed or forbidden columns).
template <class Sr, class TC, class TA, class TB, class MaskT>
Matrix<TC> spgemm_saxpy(const Matrix<TA>& a, const Matrix<TB>& b, const MaskT& mask, const Descriptor& d) {
    constexpr bool masked = !std::is_same_v<MaskT, NoMask>;
    const Index m = a.nrows(), n = b.ncols();
    Array<Offset> flops = row_flops_prefix(a, b);
    const auto ac = a.col_indices().data();
    const auto av = a.values().data();
    const auto bc = b.col_indices().data();
    const auto bv = b.values().data();
    tbb::enumerable_thread_specific<SpgemmWorkspace<TC>> workspaces;
    auto add_op = [](TC x, TC y) { return Sr::template add<TC>(x, y); };

    // Runs row i through an accumulator; with numeric, writes the row to cols/vals; returns its size.
    auto compute_row = [&]<MaskMode mode, class Acc>(Index i, Acc& acc, bool numeric, ColIndex* cols, TC* vals) {
        for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) {
            const ColIndex k = ac[p];
            const TC x = TC(av[p]);
            for (Offset q = b.row_begin(k); q < b.row_end(k); ++q)
                acc.template add<mode>(bc[q], numeric ? Sr::template multiply<TC>(x, TC(bv[q])) : TC{}, add_op);
        }
        if (numeric) acc.gather(cols, vals);
        return Offset(acc.size());
    };
    auto run_row = [&](Index i, bool numeric, ColIndex* cols, TC* vals) -> Offset {
        const Offset work = flops[i + 1] - flops[i];
        if (work == 0) return 0;
        auto& ws = workspaces.local();
        MaskMode mode = MaskMode::none;
        std::size_t marks = 0;
        const ColIndex* mc = nullptr;
        Offset mb = 0, me = 0;
        if constexpr (masked) {
            mode = d.mask_complement ? MaskMode::forbid : MaskMode::allow;
            mc = mask.col_indices().data();
            mb = mask.row_begin(i);
            me = mask.row_end(i);
            marks = me - mb;
            if (mode == MaskMode::allow && marks == 0) return 0;
        }
        auto with = [&](auto& acc) -> Offset {
            if constexpr (masked) {
                const auto mv = mask.values().data();
                for (Offset p = mb; p < me; ++p)
                    if (d.mask_structure || mv[p] != typename MaskT::value_type(0)) acc.mark(mc[p]);
                if (mode == MaskMode::allow) return compute_row.template operator()<MaskMode::allow>(i, acc, numeric, cols, vals);
                return compute_row.template operator()<MaskMode::forbid>(i, acc, numeric, cols, vals);
            } else {
                return compute_row.template operator()<MaskMode::none>(i, acc, numeric, cols, vals);
            }
        };
        const Offset bound = std::min<Offset>(work, n);
        const bool dense = n <= 4096 || (mode == MaskMode::allow ? marks : bound) * 16 > n;
        if (dense) {
            ws.dense.begin_row(n);
            return with(ws.dense);
        }
        ws.hash.begin_row(mode == MaskMode::allow ? marks : bound + marks);
        return with(ws.hash);
    };

    Array<Offset> counts(m + 1);
    parallel_rows_by_work(flops.data(), m, [&](Index i) { counts[i] = run_row(i, false, nullptr, nullptr); });
    Array<Offset> offsets(m + 1);
    prefix_sum(counts.data(), offsets.data(), m);
    Array<ColIndex> cols(offsets[m]);
    Array<TC> vals(offsets[m]);
    parallel_rows_by_work(flops.data(), m, [&](Index i) {
        run_row(i, true, cols.data() + offsets[i], vals.data() + offsets[i]);
    });
    return Matrix<TC>::import_csr(m, n, std::move(offsets), std::move(cols), std::move(vals), false);
}

// ⊕ over the common columns of two sorted rows, or nothing if they share none. Gallops when one row is
// much shorter than the other.
template <class Sr, class TC, class TA, class TB>
bool sparse_dot(const ColIndex* ac, const TA* av, Offset pa, Offset ea, const ColIndex* bc, const TB* bv, Offset pb,
                Offset eb, TC& out) {
    bool found = false;
    TC acc{};
    auto take = [&](Offset x, Offset y) {
        TC t = Sr::template multiply<TC>(TC(av[x]), TC(bv[y]));
        acc = found ? Sr::template add<TC>(acc, t) : t;
        found = true;
        return Sr::template is_terminal<TC>(acc);
    };
    const Offset la = ea - pa, lb = eb - pb;
    if (la * 16 < lb) {
        for (; pa < ea; ++pa) {
            pb = Offset(std::lower_bound(bc + pb, bc + eb, ac[pa]) - bc);
            if (pb == eb) break;
            if (bc[pb] == ac[pa] && take(pa, pb)) break;
        }
    } else if (lb * 16 < la) {
        for (; pb < eb; ++pb) {
            pa = Offset(std::lower_bound(ac + pa, ac + ea, bc[pb]) - ac);
            if (pa == ea) break;
            if (ac[pa] == bc[pb] && take(pa, pb)) break;
        }
    } else {
        while (pa < ea && pb < eb) {
            if (ac[pa] < bc[pb]) ++pa;
            else if (bc[pb] < ac[pa]) ++pb;
            else {
                if (take(pa, pb)) break;
                ++pa;
                ++pb;
            }
        }
    }
    if (found) out = acc;
    return found;
}

// C<M> = A ⊕.⊗ Btᵀ computed entry by entry over the mask's true entries (bt holds Bᵀ as CSR).
template <class Sr, class TC, class TA, class TB, class M>
Matrix<TC> spgemm_dot(const Matrix<TA>& a, const Matrix<TB>& bt, const Matrix<M>& mask, const Descriptor& d) {
    const Index m = a.nrows();
    const auto mo = mask.row_offsets().data();
    const auto mc = mask.col_indices().data();
    const auto mv = mask.values().data();
    Array<TC> vals(mask.nvals());
    Array<std::uint8_t> present(mask.nvals());
    const auto ac = a.col_indices().data();
    const auto av = a.values().data();
    const auto bc = bt.col_indices().data();
    const auto bv = bt.values().data();
    parallel_rows_by_work(mo, m, [&](Index i) {
        for (Offset p = mo[i]; p < mo[i + 1]; ++p) {
            const ColIndex j = mc[p];
            present[p] = (d.mask_structure || mv[p] != M(0)) &&
                         sparse_dot<Sr, TC>(ac, av, a.row_begin(i), a.row_end(i), bc, bv, bt.row_begin(j),
                                            bt.row_end(j), vals[p]);
        }
    });
    return build_rows<TC>(
        m, bt.nrows(),
        [&](Index i) {
            Offset c = 0;
            for (Offset p = mo[i]; p < mo[i + 1]; ++p) c += present[p];
            return c;
        },
        [&](Index i, ColIndex* oc, TC* ov) {
            for (Offset p = mo[i]; p < mo[i + 1]; ++p)
                if (present[p]) {
                    *oc++ = mc[p];
                    *ov++ = vals[p];
                }
        });
}

// C<M> accum= op(A) ⊕.⊗ op(B): picks the method and accumulator by estimated work.
template <class Sr, class TC, class MaskT, class Accum, class TA, class TB>
void mxm(Matrix<TC>& c, const MaskT& mask, Accum accum, const Matrix<TA>& a_in, const Matrix<TB>& b_in,
         const Descriptor& d) {
    const Matrix<TA>& a = d.transpose_a ? a_in.transposed() : a_in;
    if constexpr (!std::is_same_v<MaskT, NoMask>) {
        if (!d.mask_complement) {
            // Dot work: a merge of A(i,:) and B(:,j) for each mask entry; saxpy work: the flops, each costing
            // about 8 merge steps (measured: two passes through an accumulator). The degrees of B's rows and
            // columns come from its pattern, so no transpose is made for a method that is not taken.
            const auto mo = mask.row_offsets().data();
            const auto mc = mask.col_indices().data();
            std::vector<Offset> col_deg(b_in.ncols(), 0);
            for (ColIndex j : b_in.col_indices()) ++col_deg[j];
            auto row_deg = [&](Index k) { return Offset(b_in.row_degree(k)); };
            auto col_degree = [&](Index k) { return col_deg[k]; };
            auto bt_deg = [&](Index j) { return d.transpose_b ? row_deg(j) : col_degree(j); };
            auto b_deg = [&](Index k) { return d.transpose_b ? col_degree(k) : row_deg(k); };
            const auto ac = a.col_indices().data();
            auto sum_rows = [&](Index n, auto&& f) {
                return tbb::parallel_reduce(
                    tbb::blocked_range<Index>(0, n, 1024), Offset(0),
                    [&](const tbb::blocked_range<Index>& r, Offset s) {
                        for (Index i = r.begin(); i != r.end(); ++i) s += f(i);
                        return s;
                    },
                    [](Offset x, Offset y) { return x + y; });
            };
            const Offset dot_work = sum_rows(mask.nrows(), [&](Index i) {
                const Offset la = a.row_degree(i);
                Offset s = 0;
                for (Offset p = mo[i]; p < mo[i + 1]; ++p) {
                    const Offset lb = bt_deg(mc[p]);
                    s += std::min<Offset>(la + lb, 8 * std::min(la, lb) + 8);  // merge, or binary searches
                }
                return s;
            });
            const Offset saxpy_work = 8 * sum_rows(a.nrows(), [&](Index i) {
                Offset s = 0;
                for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) s += b_deg(ac[p]);
                return s;
            });
            if (dot_work < saxpy_work) {
                const Matrix<TB>& bt = d.transpose_b ? b_in : b_in.transposed();
                trace("mxm: masked SpGEMM, dot method (dot work %llu < saxpy work %llu)",
                      (unsigned long long)dot_work, (unsigned long long)saxpy_work);
                write_back(c, spgemm_dot<Sr, TC>(a, bt, mask, d), mask, accum, d);
                return;
            }
        }
    }
    const Matrix<TB>& b = d.transpose_b ? b_in.transposed() : b_in;
    trace("mxm: %sSpGEMM, Gustavson saxpy %zux%zu * %zux%zu", std::is_same_v<MaskT, NoMask> ? "" : "masked ",
          size_t(a.nrows()), size_t(a.ncols()), size_t(b.nrows()), size_t(b.ncols()));
    write_back(c, spgemm_saxpy<Sr, TC>(a, b, mask, d), mask, accum, d);
}

}  // namespace hybla::cpu
