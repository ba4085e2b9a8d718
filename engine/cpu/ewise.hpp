// eWiseAdd (union), eWiseMult (intersection), apply and select: row-parallel merges and maps.
#pragma once
#include "engine/cpu/mask.hpp"
#include "engine/cpu/parallel.hpp"

namespace hybla::cpu {

template <class TC, class TA, class TB, class Op>
Matrix<TC> ewise_intersection(const Matrix<TA>& a, const Matrix<TB>& b, Op op) {
    const auto ac = a.col_indices().data();
    const auto bc = b.col_indices().data();
    const auto av = a.values().data();
    const auto bv = b.values().data();
    auto row = [&](Index i, auto&& emit) {
        Offset pa = a.row_begin(i), ea = a.row_end(i), pb = b.row_begin(i), eb = b.row_end(i);
        while (pa < ea && pb < eb) {
            if (ac[pa] < bc[pb]) ++pa;
            else if (bc[pb] < ac[pa]) ++pb;
            else {
                emit(ac[pa], pa, pb);
                ++pa;
                ++pb;
            }
        }
    };
    return build_rows<TC>(
        a.nrows(), a.ncols(),
        [&](Index i) {
            Offset n = 0;
            row(i, [&](ColIndex, Offset, Offset) { ++n; });
            return n;
        },
        [&](Index i, ColIndex* oc, TC* ov) {
            row(i, [&](ColIndex j, Offset pa, Offset pb) {
                *oc++ = j;
                *ov++ = op(TC(av[pa]), TC(bv[pb]));
            });
        });
}

// Same pattern as A, values f(a) (f gets i, j and the value when it takes three arguments).
template <class TC, class TA, class F>
Matrix<TC> map_values(const Matrix<TA>& a, F f) {
    Array<TC> vals(a.nvals());
    const auto av = a.values().data();
    const auto ac = a.col_indices().data();
    parallel_rows_by_work(a.row_offsets().data(), a.nrows(), [&](Index i) {
        for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) {
            if constexpr (std::is_invocable_v<F, Index, Index, TA>) vals[p] = TC(f(i, Index(ac[p]), av[p]));
            else vals[p] = TC(f(av[p]));
        }
    });
    return Matrix<TC>::import_csr(a.nrows(), a.ncols(), Array<Offset>(a.row_offsets()),
                                  Array<ColIndex>(a.col_indices()), std::move(vals), false);
}

// Entries of A for which keep(i, j, a) holds.
template <class TC, class TA, class Keep>
Matrix<TC> select_entries(const Matrix<TA>& a, Keep keep) {
    const auto ac = a.col_indices().data();
    const auto av = a.values().data();
    return build_rows<TC>(
        a.nrows(), a.ncols(),
        [&](Index i) {
            Offset n = 0;
            for (Offset p = a.row_begin(i); p < a.row_end(i); ++p) n += bool(keep(i, Index(ac[p]), av[p]));
            return n;
        },
        [&](Index i, ColIndex* oc, TC* ov) {
            for (Offset p = a.row_begin(i); p < a.row_end(i); ++p)
                if (keep(i, Index(ac[p]), av[p])) {
                    *oc++ = ac[p];
                    *ov++ = TC(av[p]);
                }
        });
}

// Casts a matrix to another value type (same pattern).
template <class TC, class TA>
Matrix<TC> cast(const Matrix<TA>& a) {
    if constexpr (std::is_same_v<TC, TA>) return a;
    else return map_values<TC>(a, [](TA x) { return TC(x); });
}

}  // namespace hybla::cpu
