// w<m, replace> accum= t for vectors, computed over a dense view (vectors here are mostly dense: PageRank,
// frontiers that grow), row-parallel; the result is stored sparse again when it is sparse.
#pragma once
#include <type_traits>

#include "engine/cpu/parallel.hpp"
#include "engine/descriptor.hpp"
#include "engine/vector.hpp"

namespace hybla::cpu {

// allowed[i] = whether the mask lets position i be written (empty array: no mask).
template <class MaskT>
Array<std::uint8_t> allowed_positions(const MaskT& mask, Index n, const Descriptor& d) {
    if constexpr (std::is_same_v<MaskT, NoMask>) {
        return {};
    } else {
        using M = typename MaskT::value_type;
        Array<std::uint8_t> al(n, std::uint8_t(d.mask_complement));
        const std::uint8_t on = !d.mask_complement;
        if (mask.is_dense()) {
            const auto bm = mask.bitmap();
            const auto mv = mask.values();
            parallel_for_each(n, [&](Index i) {
                if (bm[i] && (d.mask_structure || mv[i] != M(0))) al[i] = on;
            }, 1 << 14);
        } else {
            const auto mi = mask.indices();
            const auto mv = mask.values();
            for (std::size_t k = 0; k < mi.size(); ++k)
                if (d.mask_structure || mv[k] != M(0)) al[mi[k]] = on;
        }
        return al;
    }
}

template <class T>
Vector<T> dense_copy(const Vector<T>& v) {
    Vector<T> x = v;
    x.to_dense();
    return x;
}

template <class TW, class MaskT, class Accum>
void write_back_vector(Vector<TW>& w, Vector<TW>&& t, const MaskT& mask, Accum accum, const Descriptor& d) {
    constexpr bool has_mask = !std::is_same_v<MaskT, NoMask>;
    constexpr bool has_accum = !std::is_same_v<Accum, NoAccum>;
    if constexpr (!has_mask && !has_accum) {
        w = std::move(t);
        if (w.is_dense() && w.nvals() * 16 < w.size()) w.to_sparse();
    } else {
        const Index n = w.size();
        Array<std::uint8_t> al = allowed_positions(mask, n, d);
        Vector<TW> wd = dense_copy(w), td = dense_copy(t);
        const auto wb = wd.bitmap().data(), tb = td.bitmap().data();
        const auto wv = wd.values().data(), tv = td.values().data();
        Array<TW> out(n);
        Array<std::uint8_t> ob(n);
        parallel_for_each(n, [&](Index i) {
            const bool m = !has_mask || al[i];
            bool present = false;
            TW v{};
            if (m) {
                if (tb[i]) {
                    present = true;
                    if constexpr (has_accum) v = wb[i] ? accum(wv[i], tv[i]) : tv[i];
                    else v = tv[i];
                } else if (has_accum && wb[i]) {
                    present = true;
                    v = wv[i];
                }
            } else if (!d.replace && wb[i]) {
                present = true;
                v = wv[i];
            }
            out[i] = v;
            ob[i] = present;
        }, 1 << 14);
        w = Vector<TW>::import_dense(n, std::move(out), std::move(ob));
        if (w.nvals() * 16 < n) w.to_sparse();
    }
}

}  // namespace hybla::cpu
