// Value-type casts and the vector <-> n x 1 matrix conversions. The structure is copied or derived with
// type-independent kernels (searches, one scan); only the value moves are per type.
#include <type_traits>
#include <utility>

#include "engine/cuda/structure/keys.cuh"
#include "engine/dense_matrix.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cuda {

using namespace keys;

namespace convert_detail {

// static_cast as on the CPU (TC(x)); bool gets x != 0 from the conversion itself.
template <class TC, class TA>
Array<TC> cast_values(const TA* src, std::uint64_t n, const Context& ctx) {
    Array<TC> out(n, ctx);
    TC* o = out.data();
    for_each(n, ctx, "cast", [=] __device__(std::uint64_t p) { o[p] = static_cast<TC>(src[p]); });
    return out;
}

}  // namespace convert_detail

template <class TC, class TA>
Matrix<TC> cast(const Matrix<TA>& a) {
    const Context& ctx = a.context();
    const Offset nnz = a.nvals();
    return Matrix<TC>::adopt_csr(a.nrows(), a.ncols(), nnz, clone(a.storage_offsets().data(), a.nrows() + 1, ctx),
                                 clone(a.storage_indices().data(), nnz, ctx),
                                 convert_detail::cast_values<TC>(a.storage_values().data(), nnz, ctx));
}

template <class TC, class TA>
Vector<TC> cast(const Vector<TA>& v) {
    const Context& ctx = v.context();
    if (v.is_dense())
        return Vector<TC>::adopt(v.size(), v.nvals(), true, Array<Index>(0, ctx),
                                 convert_detail::cast_values<TC>(v.storage_values().data(), v.size(), ctx),
                                 clone(v.storage_bitmap().data(), v.size(), ctx));
    return Vector<TC>::adopt(v.size(), v.nvals(), false, clone(v.storage_indices().data(), v.nvals(), ctx),
                             convert_detail::cast_values<TC>(v.storage_values().data(), v.nvals(), ctx), Array<std::uint8_t>(0, ctx));
}

template <class TC, class TA>
DenseMatrix<TC> cast(const DenseMatrix<TA>& a) {
    const Context& ctx = a.context();
    return DenseMatrix<TC>::import_row_major(a.nrows(), a.ncols(),
                                            convert_detail::cast_values<TC>(a.storage().data(), a.nrows() * a.ncols(), ctx));
}

template <class T>
Matrix<T> as_column(const Vector<T>& v) {
    const Context& ctx = v.context();
    const Index n = v.size();
    const Offset nv = v.nvals();
    Array<Offset> offsets(n + 1, ctx);
    Offset* off = offsets.data();
    Array<T> vals(nv, ctx);
    if (v.is_dense()) {
        const std::uint8_t* bm = v.storage_bitmap().data();
        for_each(n, ctx, "as_column(count)", [=] __device__(std::uint64_t i) { off[i] = bm[i] != 0; });
        exclusive_scan(off, n + 1, ctx);
        const T* src = v.storage_values().data();
        T* dst = vals.data();
        for_each(n, ctx, "as_column(values)", [=] __device__(std::uint64_t i) {
            if (bm[i]) dst[off[i]] = src[i];
        });
    } else {
        // offsets[i] = how many stored indices are below i: a search per row keeps the work even.
        const Index* idx = v.storage_indices().data();
        for_each(n + 1, ctx, "as_column(offsets)",
                 [=] __device__(std::uint64_t i) { off[i] = lower_bound(idx, 0, nv, i); });
        copy_device(vals.data(), v.storage_values().data(), nv, ctx);
    }
    return Matrix<T>::adopt_csr(n, 1, nv, std::move(offsets), Array<ColIndex>(nv, ColIndex(0), ctx), std::move(vals));
}

// Dense storage when at least 1/16 of the entries are present (engine/cpu/vector_view.hpp), else sparse.
template <class T>
Vector<T> from_column(const Matrix<T>& m) {
    const Context& ctx = m.context();
    const Index n = m.nrows();
    const Offset nv = m.nvals();
    const Offset* off = m.storage_offsets().data();
    const T* src = m.storage_values().data();
    if (nv * 16 >= n && n > 0) {
        Array<T> dv(n, ctx);
        Array<std::uint8_t> bm(n, ctx);
        T* d = dv.data();
        std::uint8_t* b = bm.data();
        for_each(n, ctx, "from_column(dense)", [=] __device__(std::uint64_t i) {
            bool present = off[i + 1] > off[i];
            b[i] = present;
            d[i] = present ? src[off[i]] : T{};
        });
        return Vector<T>::adopt(n, nv, true, Array<Index>(0, ctx), std::move(dv), std::move(bm));
    }
    Array<Index> idx(nv, ctx);
    Index* ix = idx.data();
    for_each(n, ctx, "from_column(sparse)", [=] __device__(std::uint64_t i) {
        if (off[i + 1] > off[i]) ix[off[i]] = i;
    });
    return Vector<T>::adopt(n, nv, false, std::move(idx), clone(src, nv, ctx), Array<std::uint8_t>(0, ctx));
}

template <class T>
Vector<T> densify(const Vector<T>& v) {
    if (v.is_dense()) return v;
    const Context& ctx = v.context();
    const Index n = v.size();
    const Offset nv = v.nvals();
    Array<T> dv(n, T{}, ctx);
    Array<std::uint8_t> bm(n, std::uint8_t(0), ctx);
    T* d = dv.data();
    std::uint8_t* b = bm.data();
    const Index* idx = v.storage_indices().data();
    const T* src = v.storage_values().data();
    for_each(nv, ctx, "densify", [=] __device__(std::uint64_t k) {
        d[idx[k]] = src[k];
        b[idx[k]] = 1;
    });
    return Vector<T>::adopt(n, nv, true, Array<Index>(0, ctx), std::move(dv), std::move(bm));
}

#define HYBLA_X_PAIR(TC, TA)                                             \
    template Matrix<TC> cast<TC, TA>(const Matrix<TA>&);                 \
    template Vector<TC> cast<TC, TA>(const Vector<TA>&);                 \
    template DenseMatrix<TC> cast<TC, TA>(const DenseMatrix<TA>&);
#define HYBLA_X_FROM_BOOL(TC) HYBLA_X_PAIR(TC, bool)
#define HYBLA_X_FROM_U8(TC) HYBLA_X_PAIR(TC, std::uint8_t)
#define HYBLA_X_FROM_I32(TC) HYBLA_X_PAIR(TC, std::int32_t)
#define HYBLA_X_FROM_U32(TC) HYBLA_X_PAIR(TC, std::uint32_t)
#define HYBLA_X_FROM_I64(TC) HYBLA_X_PAIR(TC, std::int64_t)
#define HYBLA_X_FROM_U64(TC) HYBLA_X_PAIR(TC, std::uint64_t)
#define HYBLA_X_FROM_F32(TC) HYBLA_X_PAIR(TC, float)
#define HYBLA_X_FROM_F64(TC) HYBLA_X_PAIR(TC, double)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_BOOL)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_U8)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_I32)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_U32)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_I64)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_U64)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_F32)
HYBLA_CUDA_VALUE_TYPES(HYBLA_X_FROM_F64)

#define HYBLA_X(T)                                          \
    template Matrix<T> as_column<T>(const Vector<T>&);      \
    template Vector<T> from_column<T>(const Matrix<T>&);    \
    template Vector<T> densify<T>(const Vector<T>&);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
