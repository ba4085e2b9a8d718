// apply (a unary operator, or a binary operator with a bound scalar) and select on the GPU.
// apply keeps the pattern: one thread per value. select decides per entry (a search finds the row of an entry,
// so a huge row spreads over many threads), then one prefix sum over the 0/1 flags gives every kept entry its
// output position and the new row offsets are the scan read at the old ones. Only the flag and value kernels
// depend on the value type; the compaction of the pattern is compiled once (compact_pattern, also used by
// assign in extract_assign.cu).
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace structure2 {

using namespace keys;

// The pattern of the entries whose flag is set, into offsets (nrows + 1) and cols; returns their number.
// flags: nnz + 1 slots holding 0 or 1 per entry (the last slot any value); on return they hold the exclusive
// scan (flags[p]: kept entries before p; flags[nnz]: the total), which the per-type value compaction reads.
// (Declared again in extract_assign.cu, which uses it for assign.)
Offset compact_pattern(const Offset* offsets, const ColIndex* cols, Index nrows, Offset nnz, Offset* flags,
                       Array<Offset>& out_offsets, Array<ColIndex>& out_cols, const Context& ctx) {
    exclusive_scan(flags, nnz + 1, ctx);
    Offset total = 0;
    check(cudaMemcpyAsync(&total, flags + nnz, sizeof(Offset), cudaMemcpyDeviceToHost, stream_of(ctx)),
          "cudaMemcpyAsync (compaction count)");
    check(cudaStreamSynchronize(stream_of(ctx)), "cudaStreamSynchronize (compaction count)");
    out_offsets = Array<Offset>(nrows + 1, ctx);
    Offset* o = out_offsets.data();
    const Offset* f = flags;
    for_each(nrows + 1, ctx, "compact_pattern (offsets)", [=] __device__(std::uint64_t i) { o[i] = f[offsets[i]]; });
    out_cols = Array<ColIndex>(total, ctx);
    ColIndex* oc = out_cols.data();
    if (total > 0)
        for_each(nnz, ctx, "compact_pattern (columns)", [=] __device__(std::uint64_t p) {
            if (f[p + 1] != f[p]) oc[f[p]] = cols[p];
        });
    return total;
}

}  // namespace structure2

namespace {

using namespace keys;

template <class T>
Matrix<T> with_values(const Matrix<T>& a, Array<T> vals) {
    const Context& ctx = a.context();
    return Matrix<T>::adopt_csr(a.nrows(), a.ncols(), a.nvals(), clone(a.storage_offsets().data(), a.nrows() + 1, ctx),
                                clone(a.storage_indices().data(), a.nvals(), ctx), std::move(vals));
}

template <class X>
HYBLA_HD inline bool compare(SelectKind k, X a, X b) {
    switch (k) {
        case SelectKind::value_eq: return a == b;
        case SelectKind::value_ne: return a != b;
        case SelectKind::value_lt: return a < b;
        case SelectKind::value_le: return a <= b;
        case SelectKind::value_gt: return a > b;
        case SelectKind::value_ge: return a >= b;
        default: return false;
    }
}

// v (of type T) against the thunk as the CPU's `v OP thunk` does with C++'s usual arithmetic conversions.
// The code keeps only the thunk's domain, not its width, so where the width matters a likely one is assumed:
//  - floating thunk, integer T: compared in double (a float thunk would round large integer values to float
//    first on the CPU; values beyond 2^24 may then compare differently);
//  - signed thunk, T = uint32: a thunk in int's range is taken as an int (compared as uint32, so -1 is
//    4294967295), a wider one as int64 (compared as int64);
//  - unsigned thunk, T = int32: a thunk that fits 32 bits is taken as unsigned int (compared as uint32; a
//    uint8/uint16/bool thunk would be promoted to int instead, which differs for negative values), a wider one
//    as uint64;
//  - unsigned thunk, T = int64: a thunk that fits 32 bits is taken as at most unsigned int (compared as
//    int64; a small uint64 thunk would make negative values compare as huge unsigned ones), a wider one as
//    uint64.
// Everything else is exact.
template <class T>
HYBLA_HD inline bool value_keep(const SelectCode& s, T v) {
    using D = SelectCode::Domain;
    if (s.domain == D::floating) {
        return compare(s.kind, double(v), s.f);
    } else if (s.domain == D::signed_int) {
        if constexpr (std::is_floating_point_v<T>) return compare(s.kind, v, T(s.i));
        else if constexpr (std::is_same_v<T, std::uint64_t>) return compare(s.kind, v, std::uint64_t(s.i));
        else if constexpr (std::is_same_v<T, std::uint32_t>) {
            if (s.i >= std::numeric_limits<std::int32_t>::min() && s.i <= std::numeric_limits<std::int32_t>::max())
                return compare(s.kind, v, std::uint32_t(s.i));
            return compare(s.kind, std::int64_t(v), s.i);
        } else return compare(s.kind, std::int64_t(v), s.i);
    } else {
        if constexpr (std::is_floating_point_v<T>) return compare(s.kind, v, T(s.u));
        else if constexpr (std::is_same_v<T, std::int32_t>) {
            if (s.u <= std::numeric_limits<std::uint32_t>::max()) return compare(s.kind, std::uint32_t(v), std::uint32_t(s.u));
            return compare(s.kind, std::uint64_t(std::int64_t(v)), s.u);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
            if (s.u <= std::numeric_limits<std::uint32_t>::max()) return compare(s.kind, v, std::int64_t(s.u));
            return compare(s.kind, std::uint64_t(v), s.u);
        } else return compare(s.kind, std::uint64_t(v), s.u);
    }
}

}  // namespace

template <class T>
Matrix<T> apply_unary(const Matrix<T>& a, UnaryOp op) {
    return with_values(a, unary_values(a.storage_values().data(), a.nvals(), op, a.context()));
}

template <class T>
Matrix<T> apply_bound(const Matrix<T>& a, BinaryOp op, T scalar, bool scalar_first) {
    return with_values(a, bound_values(a.storage_values().data(), a.nvals(), op, scalar, scalar_first, a.context()));
}

template <class T>
Matrix<T> select(const Matrix<T>& a, const SelectCode& sel) {
    const Context& ctx = a.context();
    const Index nrows = a.nrows();
    const Offset n = a.nvals();
    const Offset* off = a.storage_offsets().data();
    const ColIndex* ac = a.storage_indices().data();
    const T* av = a.storage_values().data();
    if (n == 0) return Matrix<T>(nrows, a.ncols(), ctx);

    Array<Offset> flags(n + 1, ctx);
    Offset* f = flags.data();
    const SelectCode s = sel;
    switch (s.kind) {
        case SelectKind::tril:
        case SelectKind::triu:
        case SelectKind::diag:
        case SelectKind::offdiag:
            for_each(n, ctx, "select (index)", [=] __device__(std::uint64_t p) {
                const std::int64_t j = std::int64_t(ac[p]);
                const std::int64_t ik = std::int64_t(row_of(off, nrows, p)) + s.k;
                bool keep = s.kind == SelectKind::tril   ? j <= ik
                            : s.kind == SelectKind::triu ? j >= ik
                            : s.kind == SelectKind::diag ? j == ik
                                                         : j != ik;
                f[p] = keep;
            });
            break;
        case SelectKind::nonzero:
            for_each(n, ctx, "select (nonzero)", [=] __device__(std::uint64_t p) { f[p] = av[p] != T(0); });
            break;
        default:
            for_each(n, ctx, "select (value)", [=] __device__(std::uint64_t p) { f[p] = value_keep<T>(s, av[p]); });
            break;
    }
    Array<Offset> offsets;
    Array<ColIndex> cols;
    const Offset kept = structure2::compact_pattern(off, ac, nrows, n, f, offsets, cols, ctx);
    Array<T> vals(kept, ctx);
    T* o = vals.data();
    if (kept > 0)
        for_each(n, ctx, "select (values)", [=] __device__(std::uint64_t p) {
            if (f[p + 1] != f[p]) o[f[p]] = av[p];
        });
    return Matrix<T>::adopt_csr(nrows, a.ncols(), kept, std::move(offsets), std::move(cols), std::move(vals));
}

#define HYBLA_X(T)                                                                 \
    template Matrix<T> apply_unary<T>(const Matrix<T>&, UnaryOp);                  \
    template Matrix<T> apply_bound<T>(const Matrix<T>&, BinaryOp, T, bool);        \
    template Matrix<T> select<T>(const Matrix<T>&, const SelectCode&);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
