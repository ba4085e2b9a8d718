// Construction from tuples and transposition on the GPU, both as a stable radix sort of COO keys carrying a
// permutation; values follow the permutation with a small per-type kernel. Also home of the CUB-heavy helpers
// of keys.cuh (sort, scan), so that they are compiled once for the whole backend.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <string>
#include <utility>

#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace keys {

void exclusive_scan(Offset* data, std::uint64_t n, const Context& ctx) {
    if (n == 0) return;
    std::size_t bytes = 0;
    check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, data, data, n, stream_of(ctx)), "DeviceScan (size)");
    // A zero-sized buffer would be a null pointer, which CUB reads as another size query.
    Array<std::uint8_t> temp(std::max<std::size_t>(bytes, 1), ctx);
    check(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, data, data, n, stream_of(ctx)), "DeviceScan");
}

Array<Offset> sort_keys(Array<Key>& keys, int row_bits, int col_bits, bool by_row_only, const Context& ctx) {
    const std::uint64_t n = keys.size();
    Array<Offset> perm(n, ctx);
    iota(perm.data(), n, ctx);
    const int begin = by_row_only ? col_bits : 0, end = row_bits + col_bits;
    if (n <= 1 || end <= begin) return perm;
    // Pack the key to row << col_bits | col so that the radix passes skip the unused column bits.
    Key* k = keys.data();
    const bool pack = col_bits < 32;
    if (pack)
        for_each(n, ctx, "sort_keys(pack)",
                 [=] __device__(std::uint64_t p) { k[p] = (Key(key_row(k[p])) << col_bits) | key_col(k[p]); });
    Array<Key> k2(n, ctx);
    Array<Offset> p2(n, ctx);
    cub::DoubleBuffer<Key> kb(keys.data(), k2.data());
    cub::DoubleBuffer<Offset> vb(perm.data(), p2.data());
    std::size_t bytes = 0;
    check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kb, vb, n, begin, end, stream_of(ctx)),
          "DeviceRadixSort (size)");
    Array<std::uint8_t> temp(std::max<std::size_t>(bytes, 1), ctx);
    check(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, kb, vb, n, begin, end, stream_of(ctx)),
          "DeviceRadixSort");
    if (kb.Current() != keys.data()) std::swap(keys, k2);
    if (vb.Current() != perm.data()) std::swap(perm, p2);
    if (pack) {
        Key* s = keys.data();
        const Key col_mask = col_bits == 0 ? 0 : (Key(1) << col_bits) - 1;
        for_each(n, ctx, "sort_keys(unpack)",
                 [=] __device__(std::uint64_t p) { s[p] = make_key(s[p] >> col_bits, s[p] & col_mask); });
    }
    return perm;
}

}  // namespace keys

using namespace keys;

template <class T>
Matrix<T> build_coded(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                      std::span<const T> vals, BinaryOp dup, bool dup_is_error, const Context& ctx) {
    // The same checks and messages as the CPU builder (engine/cpu/build.hpp), on the host before the upload.
    const std::size_t n = rows.size();
    if (cols.size() != n || vals.size() != n)
        throw InvalidValue("build: got " + std::to_string(rows.size()) + " row indices, " +
                           std::to_string(cols.size()) + " column indices and " + std::to_string(vals.size()) +
                           " values; the three must be equally long");
    for (std::size_t k = 0; k < n; ++k)
        if (rows[k] >= nrows || cols[k] >= ncols)
            throw InvalidIndex("build: tuple " + std::to_string(k) + " is (" + std::to_string(rows[k]) + ", " +
                               std::to_string(cols[k]) + "), outside a " + detail::shape(nrows, ncols) + " matrix");
    if (n == 0) return Matrix<T>(nrows, ncols, ctx);

    Array<Key> keys(n, ctx);
    {
        Array<Index> dr(n, ctx), dc(n, ctx);
        dr.copy_from(rows.data(), Context::cpu(), n);
        dc.copy_from(cols.data(), Context::cpu(), n);
        const Index* r = dr.data();
        const Index* c = dc.data();
        Key* k = keys.data();
        for_each(n, ctx, "build(keys)", [=] __device__(std::uint64_t p) { k[p] = make_key(r[p], c[p]); });
    }
    Array<T> dv(n, ctx);
    dv.copy_from(vals.data(), Context::cpu(), n);
    // Stable: duplicates stay in input order, so the left-to-right fold below matches the CPU.
    Array<Offset> perm = sort_keys(keys, bits_for(nrows), bits_for(ncols), false, ctx);

    const Key* k = keys.data();
    if (dup_is_error) {
        Array<Offset> first(1, Offset(n), ctx);
        Offset* f = first.data();
        for_each(n - 1, ctx, "build(duplicates)", [=] __device__(std::uint64_t p) {
            if (k[p + 1] == k[p]) atomicMin(reinterpret_cast<unsigned long long*>(f), (unsigned long long)(p));
        });
        Offset p = first.get(0);
        if (p != n) {
            Key dk = keys.get(p);
            throw InvalidValue("import_coo: duplicate entry (" + std::to_string(key_row(dk)) + ", " +
                               std::to_string(key_col(dk)) + ")");
        }
    }

    // head[p] = 1 where a run of equal keys starts; its exclusive scan numbers the runs.
    Array<Offset> head(n + 1, ctx);
    Offset* h = head.data();
    for_each(n, ctx, "build(heads)", [=] __device__(std::uint64_t p) { h[p] = p == 0 || k[p] != k[p - 1]; });
    exclusive_scan(h, n + 1, ctx);
    const Offset u = head.get(n);

    Array<Key> ukeys(u, ctx);
    Array<Offset> start(u + 1, ctx);
    {
        Key* uk = ukeys.data();
        Offset* st = start.data();
        for_each(n, ctx, "build(runs)", [=] __device__(std::uint64_t p) {
            if (h[p + 1] != h[p]) {
                uk[h[p]] = k[p];
                st[h[p]] = p;
            }
            if (p == n - 1) st[u] = n;
        });
    }
    // One thread folds one run left to right: exact for every operator, associative or not (minus, div,
    // comparisons); runs are duplicates of one (i, j), short in any sensible input.
    Array<T> uv(u, ctx);
    {
        const T* v = dv.data();
        const Offset* pm = perm.data();
        const Offset* st = start.data();
        T* out = uv.data();
        for_each(u, ctx, "build(combine)", [=] __device__(std::uint64_t s) {
            Offset b = st[s], e = st[s + 1];
            T acc = v[pm[b]];
            for (Offset p = b + 1; p < e; ++p) acc = apply_binary<T>(dup, acc, v[pm[p]]);
            out[s] = acc;
        });
    }
    Array<Offset> offsets = keys_to_offsets(ukeys.data(), u, nrows, ctx);
    Array<ColIndex> ci(u, ctx);
    keys_to_cols(ukeys.data(), u, ci.data(), ctx);
    return Matrix<T>::adopt_csr(nrows, ncols, u, std::move(offsets), std::move(ci), std::move(uv));
}

// Aᵀ: keys (col, row) sorted by col alone; A's row-major order already orders each new row by its column.
template <class T>
Matrix<T> transpose(const Matrix<T>& a) {
    const Context& ctx = a.context();
    const Index m = a.nrows(), n = a.ncols();
    const Offset nnz = a.nvals();
    if (nnz == 0) return Matrix<T>(n, m, ctx);
    Array<Key> keys(nnz, ctx);
    csr_to_keys(a.storage_offsets().data(), a.storage_indices().data(), m, nnz, keys.data(), ctx, true);
    Array<Offset> perm = sort_keys(keys, bits_for(n), bits_for(m), true, ctx);
    Array<T> vals(nnz, ctx);
    gather(a.storage_values().data(), perm.data(), nnz, vals.data(), ctx);
    Array<Offset> offsets = keys_to_offsets(keys.data(), nnz, n, ctx);
    Array<ColIndex> ci(nnz, ctx);
    keys_to_cols(keys.data(), nnz, ci.data(), ctx);
    return Matrix<T>::adopt_csr(n, m, nnz, std::move(offsets), std::move(ci), std::move(vals));
}

#define HYBLA_X(T)                                                                                              \
    template Matrix<T> build_coded<T>(Index, Index, std::span<const Index>, std::span<const Index>,            \
                                      std::span<const T>, BinaryOp, bool, const Context&);                     \
    template Matrix<T> transpose<T>(const Matrix<T>&);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
