// Shared device helpers of the structural CUDA operations (build, transpose, conversions, element-wise
// merges, write_back, and the structural part 2: apply/select/reduce/extract/assign/kronecker).
//
// The idea throughout: do the heavy, type-independent work once on COO keys (key = row << 32 | col, so that
// key order is row-major order) or on CSR patterns with uint64 positions/permutations, then move the values
// with a small per-type kernel. The CUB-heavy pieces (radix sort, scan) are compiled once, in
// engine/cuda/structure/build.cu; everything else here is inline and cheap to instantiate.
//
// Conventions: every function takes the Context whose stream it runs on; kernels are launched
// asynchronously on that stream (stream order keeps temporaries alive: Array frees with cudaFreeAsync on the
// same stream); n == 0 launches nothing. Positions/counts are 64-bit everywhere.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/context.hpp"
#include "engine/cuda/backend.hpp"
#include "engine/cuda/runtime.hpp"

namespace hybla::cuda::keys {

using Key = std::uint64_t;
inline constexpr Offset none = ~Offset(0);

// ---------------------------------------------------------------- launching

inline cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }

// Throws the hybla exception for a failed CUDA call (with HYBLA_DEBUG_SYNC, also for a fault of its work).
inline void check(cudaError_t e, const char* what) { checked(int(e), what); }
// After a kernel launch: a bad configuration or a sticky error becomes an exception.
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

inline constexpr unsigned block_size = 256;
// Blocks for n items, grid-stride loops cover the rest (2^20 blocks keep every SM busy).
inline unsigned grid_for(std::uint64_t n) {
    return unsigned(std::min<std::uint64_t>((n + block_size - 1) / block_size, std::uint64_t(1) << 20));
}

template <class F>
__global__ void for_each_kernel(std::uint64_t n, F f) {
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x)
        f(i);
}
// Calls f(i) on the device for i in [0, n) (f: a __device__ lambda or functor taking std::uint64_t).
template <class F>
void for_each(std::uint64_t n, const Context& ctx, const char* what, F f) {
    if (n == 0) return;
    for_each_kernel<<<grid_for(n), block_size, 0, stream_of(ctx)>>>(n, f);
    check_launch(what);
}

// ---------------------------------------------------------------- keys and searches (device)

HYBLA_HD inline Key make_key(Index row, Index col) { return (Key(row) << 32) | Key(col); }
HYBLA_HD inline Index key_row(Key k) { return Index(k >> 32); }
HYBLA_HD inline ColIndex key_col(Key k) { return ColIndex(k & 0xffffffffu); }

// Bits needed for the values 0 .. n-1 (0 for n <= 1).
inline int bits_for(Index n) { return n <= 1 ? 0 : int(std::bit_width(n - 1)); }

// First position p in [b, e) with a[p] >= x (e if none).
template <class A, class X>
HYBLA_HD inline std::uint64_t lower_bound(const A* a, std::uint64_t b, std::uint64_t e, X x) {
    while (b < e) {
        std::uint64_t m = b + (e - b) / 2;
        if (a[m] < x) b = m + 1;
        else e = m;
    }
    return b;
}
// First position p in [b, e) with a[p] > x (e if none).
template <class A, class X>
HYBLA_HD inline std::uint64_t upper_bound(const A* a, std::uint64_t b, std::uint64_t e, X x) {
    while (b < e) {
        std::uint64_t m = b + (e - b) / 2;
        if (x < a[m]) e = m;
        else b = m + 1;
    }
    return b;
}
// The row holding entry p of a CSR with nrows rows (p < offsets[nrows]); a search, not a per-row loop, so that
// one huge row spreads over many threads.
HYBLA_HD inline Index row_of(const Offset* offsets, Index nrows, Offset p) {
    return Index(upper_bound(offsets, 0, nrows + 1, p) - 1);
}
// Position of column j in row i of a CSR pattern, or `none`.
HYBLA_HD inline Offset find_in_row(const Offset* offsets, const ColIndex* cols, Index i, ColIndex j) {
    Offset b = offsets[i], e = offsets[i + 1];
    Offset p = lower_bound(cols, b, e, j);
    return p < e && cols[p] == j ? p : none;
}
// Is the mask true at (i, j)? (Pass the pattern by value into kernels: the MaskPattern the front end hands
// over lives in host memory, only its arrays are on the device.)
HYBLA_HD inline bool mask_at(const MaskPattern& m, Index i, ColIndex j) {
    bool present = find_in_row(m.offsets, m.cols, i, j) != none;
    return present != m.complement;
}

// A value array mapped through an operator: out[p] = op(x[p]), or op(s, x[p]) / op(x[p], s) with a bound scalar.
// With `mark`, the same kernel also sets mark[p] = 1 (the bitmap of a full vector: no second launch to fill it).
template <class T>
Array<T> unary_values(const T* x, std::uint64_t n, UnaryOp op, const Context& ctx, std::uint8_t* mark = nullptr) {
    Array<T> out(n, ctx);
    T* o = out.data();
    for_each(n, ctx, "apply (unary)", [=] __device__(std::uint64_t p) {
        o[p] = cuda::apply_unary<T>(op, x[p]);
        if (mark) mark[p] = 1;
    });
    return out;
}
template <class T>
Array<T> bound_values(const T* x, std::uint64_t n, BinaryOp op, T s, bool scalar_first, const Context& ctx,
                      std::uint8_t* mark = nullptr) {
    Array<T> out(n, ctx);
    T* o = out.data();
    for_each(n, ctx, "apply (bound scalar)", [=] __device__(std::uint64_t p) {
        o[p] = scalar_first ? apply_binary<T>(op, s, x[p]) : apply_binary<T>(op, x[p], s);
        if (mark) mark[p] = 1;
    });
    return out;
}

// ---------------------------------------------------------------- CUB-heavy helpers (build.cu, compiled once)

// In place exclusive prefix sum of data[0, n): data[k] becomes the sum of the old data[0, k). For CSR-style
// offsets allocate n + 1 counts with a trailing slot (any value): afterwards data[n] is the total.
void exclusive_scan(Offset* data, std::uint64_t n, const Context& ctx);

// Sorts keys[0, n) in place, STABLY (equal keys keep their input order), and returns the permutation:
// perm[p] = the input position of the key now at p. row_bits/col_bits: bits_for(nrows)/bits_for(ncols) of the
// key space (only those bits take radix passes). by_row_only: order by row alone, keeping input order within
// a row (e.g. a transpose whose input is already ordered by the new column).
Array<Offset> sort_keys(Array<Key>& keys, int row_bits, int col_bits, bool by_row_only, const Context& ctx);

// ---------------------------------------------------------------- conversions (inline, cheap)

// keys[p] = (row of p) << 32 | cols[p] for the nnz entries of a CSR; transposed: cols[p] << 32 | row.
inline void csr_to_keys(const Offset* offsets, const ColIndex* cols, Index nrows, Offset nnz, Key* keys,
                        const Context& ctx, bool transposed = false) {
    for_each(nnz, ctx, "csr_to_keys", [=] __device__(std::uint64_t p) {
        Index r = row_of(offsets, nrows, p);
        keys[p] = transposed ? make_key(cols[p], r) : make_key(r, cols[p]);
    });
}
// rows[p] = the row of entry p (CSR row ids expanded to COO).
inline void expand_rows(const Offset* offsets, Index nrows, Offset nnz, Index* rows, const Context& ctx) {
    for_each(nnz, ctx, "expand_rows", [=] __device__(std::uint64_t p) { rows[p] = row_of(offsets, nrows, p); });
}
// CSR row offsets (nrows + 1, in ctx) of nnz keys sorted by row: offsets[i] = number of keys with row < i.
inline Array<Offset> keys_to_offsets(const Key* keys, Offset nnz, Index nrows, const Context& ctx) {
    Array<Offset> off(nrows + 1, ctx);
    Offset* o = off.data();
    for_each(nrows + 1, ctx, "keys_to_offsets", [=] __device__(std::uint64_t i) {
        o[i] = i == nrows ? nnz : lower_bound(keys, 0, nnz, make_key(i, 0));
    });
    return off;
}
// cols[p] = the column of keys[p].
inline void keys_to_cols(const Key* keys, Offset nnz, ColIndex* cols, const Context& ctx) {
    for_each(nnz, ctx, "keys_to_cols", [=] __device__(std::uint64_t p) { cols[p] = key_col(keys[p]); });
}
// dst[p] = src[perm[p]]: values follow a sort (the small per-type part).
template <class T>
void gather(const T* src, const Offset* perm, std::uint64_t n, T* dst, const Context& ctx) {
    for_each(n, ctx, "gather", [=] __device__(std::uint64_t p) { dst[p] = src[perm[p]]; });
}
// Stream-ordered device-to-device copy of n elements (no host wait).
template <class T>
void copy_device(T* dst, const T* src, std::uint64_t n, const Context& ctx) {
    if (n == 0) return;
    check(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, stream_of(ctx)), "cudaMemcpyAsync");
}
// A device copy (in ctx) of n device elements.
template <class T>
Array<T> clone(const T* src, std::uint64_t n, const Context& ctx) {
    Array<T> out(n, ctx);
    copy_device(out.data(), src, n, ctx);
    return out;
}
// iota: a[p] = p.
inline void iota(Offset* a, std::uint64_t n, const Context& ctx) {
    for_each(n, ctx, "iota", [=] __device__(std::uint64_t p) { a[p] = p; });
}

// ---------------------------------------------------------------- merging two CSR patterns (ewise.cu)

// Entry-wise merge of two patterns A and B of one shape, without sorting: every entry finds its partner (same
// (i, j)) or its insertion point in the other operand's row by binary search, a rule decides per entry what
// the output keeps, and two prefix sums give every kept entry its output position (its position in the
// row-major merge, less the dropped entries before it). Pattern-only; values are moved by merge_values.
enum class MergeRule : std::uint8_t {
    union_,        // A's entries, then B's entries without partner (eWiseAdd)
    intersection,  // A's entries with a partner (eWiseMult)
    write_back,    // C<M, replace> accum= T with A = C, B = T (see engine/cpu/mask.hpp)
};
// What an A entry contributes: nothing, its own value, its partner's value, or op(a, b).
enum class Take : std::uint8_t { drop = 0, a = 1, b = 2, both = 3 };

struct MergePlan {
    Index nrows = 0, ncols = 0;
    Offset nnz = 0;             // output entries
    Array<Offset> offsets;      // output row offsets (nrows + 1)
    Array<ColIndex> cols;       // output columns (nnz), already written
    Array<std::uint8_t> take_a; // per A entry, a Take
    Array<Offset> a_other;      // per A entry: its partner's position in B, or its insertion point there
    Array<Offset> a_rank;       // per A entry: kept A entries before it (exclusive scan), + 1 slot
    Array<Offset> b_other;      // per B entry: its insertion point (or partner) in A
    Array<Offset> b_rank;       // per B entry: kept B entries before it (B entries are kept alone: value b)
};
struct MergeInput {
    const Offset* offsets;
    const ColIndex* cols;
    Offset nnz;
};
// accum/replace/mask only matter for MergeRule::write_back.
MergePlan merge_plan(Index nrows, Index ncols, MergeInput a, MergeInput b, MergeRule rule, const Context& ctx,
                     const MaskPattern* mask = nullptr, bool accum = false, bool replace = false);

// out[dest] = the value each kept entry contributes (op: the BinaryOp for Take::both, op(a, b)).
template <class T>
void merge_values(const MergePlan& plan, const T* av, const T* bv, Offset na, Offset nb, BinaryOp op, T* out,
                  const Context& ctx) {
    const std::uint8_t* take = plan.take_a.data();
    const Offset* a_other = plan.a_other.data();
    const Offset* a_rank = plan.a_rank.data();
    const Offset* b_other = plan.b_other.data();
    const Offset* b_rank = plan.b_rank.data();
    for_each(na, ctx, "merge_values(a)", [=] __device__(std::uint64_t p) {
        auto t = Take(take[p]);
        if (t == Take::drop) return;
        Offset q = a_other[p];
        Offset dest = a_rank[p] + b_rank[q];
        out[dest] = t == Take::a ? av[p] : t == Take::b ? bv[q] : apply_binary<T>(op, av[p], bv[q]);
    });
    for_each(nb, ctx, "merge_values(b)", [=] __device__(std::uint64_t q) {
        if (b_rank[q + 1] == b_rank[q]) return;
        out[a_rank[b_other[q]] + b_rank[q]] = bv[q];
    });
}

}  // namespace hybla::cuda::keys
