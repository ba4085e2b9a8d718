// Vectors as n x 1 matrices: the CPU backend runs eWise, apply, select, extract and assign on vectors
// through the matrix code (one row per index, so they stay row-parallel), and converts back.
#pragma once
#include "engine/cpu/parallel.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cpu {

template <class T>
Matrix<T> as_column(const Vector<T>& v) {
    const Index n = v.size();
    Array<Offset> counts(n + 1);
    Array<Offset> offsets(n + 1);
    if (v.is_dense()) {
        const auto bm = v.bitmap();
        parallel_for_each(n, [&](Index i) { counts[i] = bm[i]; }, 1 << 14);
        prefix_sum(counts.data(), offsets.data(), n);
        Array<T> vals(offsets[n]);
        const auto vv = v.values();
        parallel_for_each(n, [&](Index i) { if (bm[i]) vals[offsets[i]] = vv[i]; }, 1 << 14);
        const Offset nvals = offsets[n];  // read before offsets is moved into the call
        return Matrix<T>::import_csr(n, 1, std::move(offsets), Array<ColIndex>(nvals, ColIndex(0)), std::move(vals),
                                     false);
    }
    std::fill(counts.begin(), counts.end(), Offset(0));
    for (Index k : v.indices()) counts[k] = 1;
    prefix_sum(counts.data(), offsets.data(), n);
    return Matrix<T>::import_csr(n, 1, std::move(offsets), Array<ColIndex>(v.nvals(), ColIndex(0)),
                                 Array<T>(v.values()), false);
}

// Dense storage when at least 1/16 of the entries are present, else sparse.
template <class T>
Vector<T> from_column(const Matrix<T>& m) {
    const Index n = m.nrows();
    const auto off = m.row_offsets();
    const auto vals = m.values();
    if (m.nvals() * 16 >= n && n > 0) {
        Array<T> dv(n);
        Array<std::uint8_t> bm(n);
        parallel_for_each(n, [&](Index i) {
            bm[i] = off[i + 1] > off[i];
            dv[i] = bm[i] ? vals[off[i]] : T{};
        }, 1 << 14);
        return Vector<T>::import_dense(n, std::move(dv), std::move(bm));
    }
    Array<Index> idx(m.nvals());
    for (Index i = 0; i < n; ++i)
        if (off[i + 1] > off[i]) idx[off[i]] = i;
    return Vector<T>::import_sparse(n, std::move(idx), Array<T>(vals), false);
}

// A Vector mask seen as an n x 1 matrix mask.
template <class M>
Matrix<M> mask_as_column(const Vector<M>& v) { return as_column(v); }
inline NoMask mask_as_column(NoMask) { return {}; }

}  // namespace hybla::cpu
