// reduce: a matrix to a vector (rows; columns with transpose_a), or a matrix or vector to a scalar.
#pragma once
#include <type_traits>

#include "engine/checks.hpp"
#include "engine/cpu/reduce.hpp"
#include "engine/cpu/vector_write.hpp"
#include "engine/cuda/dispatch.hpp"
#include "engine/ewise.hpp"

namespace hybla {

// w<m> accum= ⊕_j op(A)(:, j): by rows, or by columns of A with transpose_a.
template <class TW, class MaskT, class Accum, class Monoid, class TA>
    requires detail::VectorMask<MaskT>
void reduce(Vector<TW>& w, const MaskT& mask, Accum accum, Monoid, const Matrix<TA>& a, const Descriptor& d = {}) {
    const Index m = detail::rows_of(a, d.transpose_a);
    detail::require(w.size() == m, "reduce", "w has size " + std::to_string(w.size()) + " but A has " +
                                                 std::to_string(m) + " rows (after transpose)");
    detail::check_vector_mask(mask, m, "reduce");
    detail::same_context("reduce", w, mask, a);
    HYBLA_ON_GPU(w) {
        using namespace cuda_dispatch;
        auto code = monoid_code<Monoid>("reduce");
        auto at = as_type<TW>(d.transpose_a ? a.transposed() : a);
        write_back(w, cuda::reduce_rows(at.get(), code), mask, accum, d, "reduce");
        return;
    }
    cpu::write_back_vector(w, cpu::reduce_rows<Monoid, TW>(d.transpose_a ? a.transposed() : a), mask, accum, d);
}

// ⊕ of all entries (the monoid's identity when there are none).
template <class Monoid, class TA>
TA reduce(Monoid, const Matrix<TA>& a) {
    HYBLA_ON_GPU(a) return cuda::reduce_all(a, cuda_dispatch::monoid_code<Monoid>("reduce"));
    return cpu::reduce_values<Monoid, TA>(a.values().data(), nullptr, a.nvals());
}
template <class Monoid, class TU>
TU reduce(Monoid, const Vector<TU>& u) {
    HYBLA_ON_GPU(u) return cuda::reduce_all(u, cuda_dispatch::monoid_code<Monoid>("reduce"));
    return cpu::reduce_values<Monoid, TU>(u.values().data(), u.is_dense() ? u.bitmap().data() : nullptr,
                                          u.is_dense() ? u.size() : u.nvals());
}
// The inner product of u and v under a semiring (python-graphblas's u.inner(v)): ⊕ over the positions where
// both have an entry of u(i) ⊗ v(i), or the monoid's identity where they share none. One pass over dense
// operands of one type (a PageRank iteration's sink mass, or its L1 change with semiring<plus_monoid,
// absdiff_op>); otherwise the element-wise product, then its reduction. Terms are combined in ranges fixed by
// the size, so a result is the same on every run; the backends' ranges differ, so floating-point results may
// differ between the CPU and the GPU in the last bits.
template <class Sr, class TU, class TV>
TU inner(Sr, const Vector<TU>& u, const Vector<TV>& v) {
    detail::require(u.size() == v.size(), "inner", "u has size " + std::to_string(u.size()) + " but v has size " +
                                                       std::to_string(v.size()));
    detail::same_context("inner", u, v);
    if constexpr (std::is_same_v<TU, TV>) {
        if (u.is_dense() && v.is_dense()) {
            HYBLA_ON_GPU(u) return cuda::inner(u, v, cuda_dispatch::semiring_code<Sr>("inner"));
            auto present = [](const Vector<TU>& x) { return x.nvals() == x.size() ? nullptr : x.bitmap().data(); };
            return cpu::inner_values<Sr, TU>(u.values().data(), present(u), v.values().data(), present(v), u.size());
        }
    }
    Vector<TU> t(u.size(), u.context());
    eWiseMult(t, no_mask, no_accum, typename Sr::multiply_op{}, u, v);
    return reduce(typename Sr::add_monoid{}, t);
}

// s accum= ⊕ of all entries.
template <class TS, class Accum, class Monoid, class Obj>
    requires(detail::is_matrix<Obj>::value || detail::is_vector<Obj>::value)
void reduce(TS& s, Accum accum, Monoid mon, const Obj& a) {
    TS r = TS(reduce(mon, a));
    if constexpr (std::is_same_v<Accum, NoAccum>) s = r;
    else s = accum(s, r);
}

}  // namespace hybla
