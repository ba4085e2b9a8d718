// extract (C = A(I, J)) and assign (C(I, J) = A, with C's mask over the whole of C), and kronecker.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "engine/cpu/mask.hpp"
#include "engine/cpu/parallel.hpp"
#include "engine/index_set.hpp"

namespace hybla::cpu {

// For each source column j, the output positions c with J[c] == j, ascending (J may repeat indices).
struct InverseIndex {
    std::vector<Offset> start;
    std::vector<ColIndex> pos;
    InverseIndex(const IndexSet& j, Index nj, Index dim) : start(dim + 2, 0), pos(nj) {
        for (Index c = 0; c < nj; ++c) ++start[j[c] + 2];
        for (Index x = 2; x < dim + 2; ++x) start[x] += start[x - 1];
        for (Index c = 0; c < nj; ++c) pos[start[j[c] + 1]++] = ColIndex(c);
    }
    std::pair<Offset, Offset> of(Index j) const { return {start[j], start[j + 1]}; }
};

template <class TC, class TA>
Matrix<TC> extract(const Matrix<TA>& a, const IndexSet& rows, Index nr, const IndexSet& cols, Index nc) {
    InverseIndex inv(cols, nc, a.ncols());
    const auto ac = a.col_indices().data();
    const auto av = a.values().data();
    return build_rows<TC>(
        nr, nc,
        [&](Index r) {
            Index i = rows[r];
            Offset n = 0;
            for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) {
                auto [b, e] = inv.of(ac[p]);
                n += e - b;
            }
            return n;
        },
        [&](Index r, ColIndex* oc, TC* ov) {
            Index i = rows[r];
            std::vector<std::pair<ColIndex, TC>> row;
            for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) {
                auto [b, e] = inv.of(ac[p]);
                for (Offset q = b; q < e; ++q) row.emplace_back(inv.pos[q], TC(av[p]));
            }
            std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
            for (auto& [c, v] : row) {
                *oc++ = c;
                *ov++ = v;
            }
        });
}

// Position of each index of C in the list (or -1); an index listed twice is an error.
inline std::vector<std::int64_t> positions(const IndexSet& s, Index n, Index dim, const char* what) {
    std::vector<std::int64_t> pos(dim, -1);
    for (Index k = 0; k < n; ++k) {
        if (pos[s[k]] >= 0)
            throw InvalidIndex(std::string(what) + ": index " + std::to_string(s[k]) + " is listed twice");
        pos[s[k]] = std::int64_t(k);
    }
    return pos;
}

// Z = C with the region I x J replaced by A (or by accum(C, A) where both exist), then C<M> = Z.
// src_row(r, emit) calls emit(c, value) for the entries of the region's row r, in any column order.
template <class TC, class MaskT, class Accum, class SrcRow>
void assign_region(Matrix<TC>& c, const MaskT& mask, Accum accum, const IndexSet& rows, Index nr,
                   const IndexSet& cols, Index nc, SrcRow&& src_row, const Descriptor& d) {
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    auto rpos = positions(rows, nr, c.nrows(), "assign (rows)");
    auto cpos = positions(cols, nc, c.ncols(), "assign (columns)");
    const auto cc = c.col_indices().data();
    const auto cv = c.values().data();
    auto row = [&](Index i, auto&& emit) {
        if (rpos[i] < 0) {
            for (Offset p = c.row_begin(i); p < c.row_end(i); ++p) emit(cc[p], cv[p]);
            return;
        }
        std::vector<std::pair<ColIndex, TC>> s;
        src_row(Index(rpos[i]), [&](Index col, TC v) { s.emplace_back(ColIndex(cols[col]), v); });
        std::sort(s.begin(), s.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        Offset p = c.row_begin(i), e = c.row_end(i);
        std::size_t q = 0;
        while (p < e || q < s.size()) {
            if (q >= s.size() || (p < e && cc[p] < s[q].first)) {
                if (!has_accum && cpos[cc[p]] >= 0) { ++p; continue; }  // replaced region: old entry goes
                emit(cc[p], cv[p]);
                ++p;
            } else if (p >= e || s[q].first < cc[p]) {
                emit(s[q].first, s[q].second);
                ++q;
            } else {
                if constexpr (has_accum) emit(cc[p], accum(cv[p], s[q].second));
                else emit(s[q].first, s[q].second);
                ++p;
                ++q;
            }
        }
    };
    Matrix<TC> z = build_rows<TC>(
        c.nrows(), c.ncols(),
        [&](Index i) {
            Offset n = 0;
            row(i, [&](ColIndex, TC) { ++n; });
            return n;
        },
        [&](Index i, ColIndex* oc, TC* ov) {
            row(i, [&](ColIndex j, TC v) {
                *oc++ = j;
                *ov++ = v;
            });
        });
    write_back(c, std::move(z), mask, no_accum, d);
}

template <class TC, class TA, class TB, class Op>
Matrix<TC> kronecker(const Matrix<TA>& a, const Matrix<TB>& b, Op op) {
    const Index mb = b.nrows(), nb = b.ncols();
    const auto ac = a.col_indices().data();
    const auto av = a.values().data();
    const auto bc = b.col_indices().data();
    const auto bv = b.values().data();
    return build_rows<TC>(
        a.nrows() * mb, a.ncols() * nb,
        [&](Index i) { return Offset(a.row_degree(i / mb) * b.row_degree(i % mb)); },
        [&](Index i, ColIndex* oc, TC* ov) {
            const Index ia = i / mb, ib = i % mb;
            for (Offset p = a.row_begin(ia); p < a.row_end(ia); ++p)
                for (Offset q = b.row_begin(ib); q < b.row_end(ib); ++q) {
                    *oc++ = ColIndex(Index(ac[p]) * nb + bc[q]);
                    *ov++ = op(TC(av[p]), TC(bv[q]));
                }
        });
}

}  // namespace hybla::cpu
