// SpMM (sparse x dense) on the GPU: the CUDA-core version (SDDMM is engine/cuda/sddmm/). SpMM (v5): a group of lanes
// per row (8 for at most 8 columns, 16 for 64 floats, else a warp), each lane holding up to C columns (or 16-byte
// vectors) of a panel of the dense operand, the row's entries read by the group coalesced and passed round by
// shuffle; rows longer than 32 entries split into pieces of 32 (a plan cached on the matrix), combined in order.
// plus_times on float and double has the operators inlined; other semirings go through run-time codes. The pieces'
// partial results (a row of the output's width each) are taken in batches of at most 1 GiB (HYBLA_SPMM_PARTIAL bytes
// when set: the tests force small batches), a row whose pieces fall into two batches carried from one to the next;
// the limit is fixed, not taken from the free memory, so that the order of the sums, and so the result, does not
// depend on it. The papers' kernels (HC-SpMM / DTC-SpMM) replace these behind the same functions. Notes and
// measurements: README.md beside this file.
#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <type_traits>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/batching.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/cuda/warp.cuh"
#include "engine/dense_matrix.hpp"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace {

using namespace warp_ops;

constexpr int warp = 32;
constexpr unsigned block_threads = 256;

inline void check(cudaError_t e, const char* what) { checked(int(e), what); }
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }
inline unsigned blocks_for(std::uint64_t threads, unsigned block) {
    std::uint64_t b = (threads + block - 1) / block;
    return unsigned(b < 1 ? 1 : (b > (1u << 20) ? (1u << 20) : b));
}

// Rows longer than this many entries are split into pieces of this many (the last shorter): a group per piece
// (spmm_piece_kernel), whose results are combined in order per row (spmm_combine_kernel), so that no group
// walks more than `piece` entries one after another and a row of degree 10^6 does not stall the others.
constexpr Offset piece = 32;

// The rows a matrix's SpMM splits, derived from its pattern once and cached on it (Matrix::cache_spmm_plan):
// split row t is rows[t]; its pieces are first[t] .. first[t + 1] - 1, and piece q belongs to split row of[q].
struct SpmmPlan {
    std::uint64_t nsplit = 0, npieces = 0;
    Array<std::uint64_t> rows;
    Array<Offset> first;
    Array<std::uint32_t> of;
};

__global__ void plan_count_kernel(std::uint64_t nsplit, const std::uint64_t* rows, const Offset* off, Offset* count) {
    for (std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < nsplit;
         t += std::uint64_t(gridDim.x) * blockDim.x) {
        const Offset len = off[rows[t] + 1] - off[rows[t]];
        count[t] = (len + piece - 1) / piece;
    }
}
__global__ void plan_owner_kernel(std::uint64_t nsplit, const Offset* first, std::uint32_t* of) {
    for (std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < nsplit;
         t += std::uint64_t(gridDim.x) * blockDim.x)
        for (Offset q = first[t]; q < first[t + 1]; ++q) of[q] = std::uint32_t(t);
}
struct IsSplit {
    const Offset* off;
    __device__ bool operator()(std::uint64_t i) const { return off[i + 1] - off[i] > piece; }
};

template <class T>
std::shared_ptr<const SpmmPlan> spmm_plan(const Matrix<T>& a) {
    if (auto p = std::static_pointer_cast<const SpmmPlan>(a.cached_spmm_plan())) return p;
    const Context& ctx = a.context();
    auto s = static_cast<cudaStream_t>(ctx.stream());
    const std::uint64_t m = a.nrows();
    const Offset* off = a.storage_offsets().data();
    auto plan = std::make_shared<SpmmPlan>();
    Array<std::uint64_t> rows(m, ctx);
    Array<std::uint64_t> count(1, ctx);
    std::size_t bytes = 0;
    const thrust::counting_iterator<std::uint64_t> all(0);
    check(cub::DeviceSelect::If(nullptr, bytes, all, rows.data(), count.data(), std::int64_t(m), IsSplit{off}, s),
            "SpMM plan: select (size)");
    Array<unsigned char> temp(bytes, ctx);
    check(cub::DeviceSelect::If(temp.data(), bytes, all, rows.data(), count.data(), std::int64_t(m), IsSplit{off}, s),
            "SpMM plan: select");
    plan->nsplit = count.get(0);  // waits: once per matrix
    if (plan->nsplit > 0) {
        const std::uint64_t ns = plan->nsplit;
        plan->rows = Array<std::uint64_t>(ns, ctx);
        plan->rows.copy_from(rows.data(), ctx, ns);
        plan->first = Array<Offset>(ns + 1, ctx);
        Offset* first = plan->first.data();
        plan_count_kernel<<<blocks_for(ns, block_threads), block_threads, 0, s>>>(ns, plan->rows.data(), off, first);
        check_launch("SpMM plan: pieces");
        check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, first, first, ns + 1, s), "SpMM plan: scan (size)");
        Array<unsigned char> temp2(bytes, ctx);
        check(cub::DeviceScan::ExclusiveSum(temp2.data(), bytes, first, first, ns + 1, s), "SpMM plan: scan");
        plan->npieces = plan->first.get(ns);
        plan->of = Array<std::uint32_t>(plan->npieces, ctx);
        plan_owner_kernel<<<blocks_for(ns, block_threads), block_threads, 0, s>>>(ns, first, plan->of.data());
        check_launch("SpMM plan: owners");
    }
    a.cache_spmm_plan(plan);
    return plan;
}

// Where the results go: C = R, or C = accum(C, R) in place. Rows of A without entries give the monoid's
// identity; with skip_empty (the accumulator is the add monoid's own operator, for which the identity changes
// nothing) they are not written at all.
template <class T>
struct Out {
    T* c;
    bool accumulate;
    bool skip_empty;
    BinaryOp accum;
    __device__ __forceinline__ void put(std::uint64_t at, T v) const {
        c[at] = accumulate ? apply_binary<T>(accum, c[at], v) : v;
    }
};

// The binary operator of a monoid (any has none of its own: first).
inline BinaryOp binary_of(MonoidOp m) {
    switch (m) {
        case MonoidOp::plus: return BinaryOp::plus;
        case MonoidOp::times: return BinaryOp::times;
        case MonoidOp::min: return BinaryOp::min;
        case MonoidOp::max: return BinaryOp::max;
        case MonoidOp::lor: return BinaryOp::lor;
        case MonoidOp::land: return BinaryOp::land;
        case MonoidOp::lxor: return BinaryOp::lxor;
        case MonoidOp::any: break;
    }
    return BinaryOp::first;
}

// The lanes of a group: G consecutive lanes of a warp, lane g of the group.
template <int G>
struct Group {
    unsigned mask;
    int g;
    __device__ __forceinline__ Group() {
        const unsigned lane = threadIdx.x % warp;
        g = int(lane % G);
        mask = G == warp ? 0xffffffffu : (((1u << G) - 1u) << (lane - lane % G));
    }
};

// V consecutive values of a B row, in one load (16 bytes for float x 4 and double x 2).
template <class T, int V>
__device__ __forceinline__ void load_values(const T* p, T (&out)[V]) {
    if constexpr (V == 1) {
        out[0] = load_ro(p);
    } else if constexpr (std::is_same_v<T, double> && V == 2) {
        const double2 v = __ldg(reinterpret_cast<const double2*>(p));
        out[0] = v.x;
        out[1] = v.y;
    } else {
        static_assert(std::is_same_v<T, float> && V == 4, "vector loads: float x 4 or double x 2");
        const float4 v = __ldg(reinterpret_cast<const float4*>(p));
        out[0] = v.x;
        out[1] = v.y;
        out[2] = v.z;
        out[3] = v.w;
    }
}

// A lane's share of a panel of G·C·V columns starting at x0: columns x0 + (g + G·c)·V + v (c < C, v < V), so each
// of its C loads per entry (V consecutive values; V > 1 needs w a multiple of V) is coalesced across the group.
template <class T, class Sr, int G, int C, int V>
struct Panel {
    static constexpr std::uint64_t width = std::uint64_t(G) * C * V;
    std::uint64_t x;  // the lane's first column
    T acc[C][V];
    __device__ __forceinline__ Panel(std::uint64_t x0, int g) : x(x0 + std::uint64_t(g) * V) {}
    __device__ __forceinline__ std::uint64_t col(int c) const { return x + std::uint64_t(c) * G * V; }

    // The terms of entries [p0, p1), left to right (the first term starts each sum: `any` has no true identity;
    // no entries: the monoid's identity). The group reads G entries at a time, coalesced, and passes each round
    // by shuffle.
    __device__ __forceinline__ void fold(const Group<G>& grp, Offset p0, Offset p1, std::uint64_t w, const ColIndex* ci,
                                         const T* av, const T* b, const Sr& sr) {
#pragma unroll
        for (int c = 0; c < C; ++c)
#pragma unroll
            for (int v = 0; v < V; ++v) acc[c][v] = sr.template zero<T>();
        bool first = true;
        for (Offset q = p0; q < p1; q += G) {
            const int nq = p1 - q < Offset(G) ? int(p1 - q) : G;
            const ColIndex my_k = grp.g < nq ? load_ro(ci + q + grp.g) : 0;
            const T my_a = grp.g < nq ? load_ro(av + q + grp.g) : T{};
#pragma unroll 4
            for (int j = 0; j < nq; ++j) {
                const std::uint64_t k = shfl_idx(my_k, j, grp.mask, G);
                const T a = shfl_idx(my_a, j, grp.mask, G);
                const T* brow = b + k * w;
#pragma unroll
                for (int c = 0; c < C; ++c)
                    if (col(c) < w) {
                        T bv[V];
                        load_values<T, V>(brow + col(c), bv);
#pragma unroll
                        for (int v = 0; v < V; ++v) {
                            const T t = sr.multiply(a, bv[v]);
                            acc[c][v] = first ? t : sr.add(acc[c][v], t);
                        }
                    }
                first = false;
            }
        }
    }
    // put(column, value) for each of the lane's columns inside the width.
    template <class Put>
    __device__ __forceinline__ void store(std::uint64_t w, Put&& put) const {
#pragma unroll
        for (int c = 0; c < C; ++c)
            if (col(c) < w)
#pragma unroll
                for (int v = 0; v < V; ++v) put(col(c) + v, acc[c][v]);
    }
};

// A group per row of at most `piece` entries (longer ones are split), a panel at a time.
template <class T, class Sr, int G, int C, int V>
__global__ void __launch_bounds__(block_threads) spmm_kernel(std::uint64_t m, std::uint64_t w, const Offset* off,
                                                             const ColIndex* ci, const T* av, const T* b, Out<T> out,
                                                             Sr sr) {
    using P = Panel<T, Sr, G, C, V>;
    const Group<G> grp;
    const std::uint64_t groups = (std::uint64_t(gridDim.x) * blockDim.x) / G;
    for (std::uint64_t i = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / G; i < m; i += groups) {
        const Offset begin = off[i], end = off[i + 1];
        if (end - begin > piece || (begin == end && out.skip_empty)) continue;
        for (std::uint64_t x0 = 0; x0 < w; x0 += P::width) {
            P panel(x0, grp.g);
            panel.fold(grp, begin, end, w, ci, av, b, sr);
            panel.store(w, [&](std::uint64_t x, T v) { out.put(i * w + x, v); });
        }
    }
}

// A group per piece q in [q0, q1) of the split rows: its terms folded into partial[(q - q0) * w ...].
template <class T, class Sr, int G, int C, int V>
__global__ void __launch_bounds__(block_threads) spmm_piece_kernel(std::uint64_t q0, std::uint64_t q1, std::uint64_t w,
                                                                   const std::uint32_t* of, const Offset* first,
                                                                   const std::uint64_t* rows, const Offset* off,
                                                                   const ColIndex* ci, const T* av, const T* b,
                                                                   T* partial, Sr sr) {
    using P = Panel<T, Sr, G, C, V>;
    const Group<G> grp;
    const std::uint64_t groups = (std::uint64_t(gridDim.x) * blockDim.x) / G;
    for (std::uint64_t q = q0 + (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / G; q < q1; q += groups) {
        const std::uint32_t t = of[q];
        const std::uint64_t i = rows[t];
        const Offset p0 = off[i] + (q - first[t]) * piece, end = off[i + 1];
        const Offset p1 = p0 + piece < end ? p0 + piece : end;
        T* dst = partial + (q - q0) * w;
        for (std::uint64_t x0 = 0; x0 < w; x0 += P::width) {
            P panel(x0, grp.g);
            panel.fold(grp, p0, p1, w, ci, av, b, sr);
            panel.store(w, [&](std::uint64_t x, T v) { dst[x] = v; });
        }
    }
}

// A block per split row with pieces in the batch [q0, q1): warp y folds the y-th of eight consecutive runs of the
// row's pieces in the batch, in order, then warp 0 folds the eight results in order (runs may be empty when the
// row has fewer than eight pieces there). A row whose pieces began in an earlier batch starts from carry_in; one
// whose pieces go on in the next batch leaves its sum in carry_out (two buffers of w values, swapped per batch:
// the batch's first row may read one while its last row writes the other).
constexpr int combine_warps = block_threads / warp;
template <class T, class Sr>
__global__ void __launch_bounds__(block_threads) spmm_combine_kernel(std::uint64_t q0, std::uint64_t q1, std::uint64_t w,
                                                                     const std::uint32_t* of,
                                                                     const std::uint64_t* rows, const Offset* first,
                                                                     const T* partial, const T* carry_in, T* carry_out,
                                                                     Out<T> out, Sr sr) {
    __shared__ T part[combine_warps][warp];
    const unsigned y = threadIdx.x / warp, lane = threadIdx.x % warp;
    const std::uint64_t t1 = std::uint64_t(of[q1 - 1]) + 1;
    for (std::uint64_t t = of[q0] + std::uint64_t(blockIdx.x); t < t1; t += gridDim.x) {
        const Offset f0 = first[t], f1 = first[t + 1];
        const Offset b0 = f0 > q0 ? f0 : q0, np = (f1 < q1 ? f1 : q1) - b0;
        const bool from_carry = f0 < q0, to_carry = f1 > q1;
        auto run_begin = [&](unsigned r) { return b0 - q0 + np * r / combine_warps; };
        const Offset a = run_begin(y), e = run_begin(y + 1);
        for (std::uint64_t x0 = 0; x0 < w; x0 += warp) {
            const std::uint64_t x = x0 + lane;
            if (x < w && a < e) {
                T acc = partial[a * w + x];
                for (Offset q = a + 1; q < e; ++q) acc = sr.add(acc, partial[q * w + x]);
                part[y][lane] = acc;
            }
            __syncthreads();
            if (y == 0 && x < w) {
                T acc{};
                bool has = false;  // some run has pieces: the row has at least one in the batch
                if (from_carry) {
                    acc = carry_in[x];
                    has = true;
                }
                for (unsigned r = 0; r < combine_warps; ++r)
                    if (run_begin(r) < run_begin(r + 1)) {
                        acc = has ? sr.add(acc, part[r][lane]) : part[r][lane];
                        has = true;
                    }
                if (to_carry) carry_out[x] = acc;
                else out.put(rows[t] * w + x, acc);
            }
            __syncthreads();
        }
    }
}

// The bytes of partial results per SpMM batch: HYBLA_SPMM_PARTIAL when set to a positive number, else 1 GiB.
std::uint64_t partial_limit() {
    if (const char* e = std::getenv("HYBLA_SPMM_PARTIAL"); e && *e) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(e, &end, 10);
        if (*end == 0 && v > 0) return v;
    }
    return std::uint64_t(1) << 30;
}

template <class T, class Sr, int G, int C, int V = 1>
void spmm_launch(const Matrix<T>& a, const DenseMatrix<T>& b, Out<T> out, Sr sr, const Context& ctx) {
    const std::uint64_t m = a.nrows(), w = b.ncols();
    auto s = static_cast<cudaStream_t>(ctx.stream());
    const Offset* off = a.storage_offsets().data();
    const ColIndex* ci = a.storage_indices().data();
    const T* av = a.storage_values().data();
    const T* bv = b.storage().data();
    const std::shared_ptr<const SpmmPlan> plan = spmm_plan(a);
    spmm_kernel<T, Sr, G, C, V><<<blocks_for(m * G, block_threads), block_threads, 0, s>>>(m, w, off, ci, av, bv, out, sr);
    check_launch("SpMM kernel");
    if (plan->nsplit > 0) {
        const std::uint64_t np = plan->npieces, per = std::min(np, pieces_per_batch(w, sizeof(T), partial_limit()));
        Array<T> partial(per * w, ctx);
        Array<T> carry(per < np ? 2 * w : 0, ctx);
        for (std::uint64_t q0 = 0, k = 0; q0 < np; q0 += per, ++k) {
            const std::uint64_t q1 = q0 + std::min(per, np - q0);
            T* carry_in = per < np ? carry.data() + (k % 2) * w : nullptr;
            T* carry_out = per < np ? carry.data() + (k + 1) % 2 * w : nullptr;
            spmm_piece_kernel<T, Sr, G, C, V><<<blocks_for((q1 - q0) * G, block_threads), block_threads, 0, s>>>(
                q0, q1, w, plan->of.data(), plan->first.data(), plan->rows.data(), off, ci, av, bv, partial.data(), sr);
            check_launch("SpMM piece kernel");
            const std::uint64_t blocks = std::min<std::uint64_t>(std::min(plan->nsplit, q1 - q0), 1u << 20);
            spmm_combine_kernel<T, Sr><<<unsigned(blocks), block_threads, 0, s>>>(
                q0, q1, w, plan->of.data(), plan->rows.data(), plan->first.data(), partial.data(), carry_in, carry_out,
                out, sr);
            check_launch("SpMM combine kernel");
        }
    }
}

// Lanes per row and columns per lane by the width: 8 lanes for at most 8 columns (4 rows per warp), else a warp
// with 1, 2 (plus_times only) or 4 columns per lane; plus_times from 64 columns, when the width is a multiple of
// the vector (4 floats, 2 doubles), with 16-byte loads, 16 or 32 lanes taking 1 or 2 vectors each.
template <class T>
void spmm_run(const Matrix<T>& a, const DenseMatrix<T>& b, Out<T> out, SemiringCode sr, const Context& ctx) {
    const std::uint64_t w = b.ncols();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (sr.add == MonoidOp::plus && sr.multiply == BinaryOp::times) {
            constexpr int V = std::is_same_v<T, float> ? 4 : 2;
            if (w >= 64 && w % V == 0) {  // a panel of 64 floats is 16 lanes (two rows per warp)
                if (w <= std::uint64_t(16 * V)) spmm_launch<T, PlusTimes, 16, 1, V>(a, b, out, PlusTimes{}, ctx);
                else if (w <= std::uint64_t(32 * V)) spmm_launch<T, PlusTimes, 32, 1, V>(a, b, out, PlusTimes{}, ctx);
                else spmm_launch<T, PlusTimes, 32, 2, V>(a, b, out, PlusTimes{}, ctx);
            } else if (w <= 8) spmm_launch<T, PlusTimes, 8, 1>(a, b, out, PlusTimes{}, ctx);
            else if (w <= 32) spmm_launch<T, PlusTimes, 32, 1>(a, b, out, PlusTimes{}, ctx);
            else if (w <= 64) spmm_launch<T, PlusTimes, 32, 2>(a, b, out, PlusTimes{}, ctx);
            else spmm_launch<T, PlusTimes, 32, 4>(a, b, out, PlusTimes{}, ctx);
            return;
        }
    }
    const RuntimeSemiring rs{sr};
    if (w <= 8) spmm_launch<T, RuntimeSemiring, 8, 1>(a, b, out, rs, ctx);
    else if (w <= 32) spmm_launch<T, RuntimeSemiring, 32, 1>(a, b, out, rs, ctx);
    else spmm_launch<T, RuntimeSemiring, 32, 4>(a, b, out, rs, ctx);
}

}  // namespace

template <class T>
DenseMatrix<T> spmm(const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr) {
    const Context& ctx = a.context();
    const std::uint64_t m = a.nrows(), w = b.ncols();
    Array<T> out(m * w, ctx);
    if (m * w > 0) spmm_run<T>(a, b, Out<T>{out.data(), false, false, BinaryOp::first}, sr, ctx);
    return DenseMatrix<T>::import_row_major(m, w, std::move(out));
}

template <class T>
void spmm_accumulate(DenseMatrix<T>& c, const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr, BinaryOp accum) {
    const std::uint64_t m = a.nrows(), w = b.ncols();
    if (m * w == 0) return;
    // The identity changes nothing under the add monoid's own operator (x ⊕ 0 = x; for floating point, -0 + 0
    // is +0, equal to -0): empty rows keep C. Not for the logical monoids on non-bool types (lor(5, 0) is 1).
    const bool logical = sr.add == MonoidOp::lor || sr.add == MonoidOp::land || sr.add == MonoidOp::lxor;
    const bool neutral = sr.add != MonoidOp::any && accum == binary_of(sr.add) && (!logical || std::is_same_v<T, bool>);
    spmm_run<T>(a, b, Out<T>{c.storage().data(), true, neutral, accum}, sr, a.context());
}

#define HYBLA_INSTANTIATE(T)                                                                                          \
    template DenseMatrix<T> spmm<T>(const Matrix<T>&, const DenseMatrix<T>&, SemiringCode);                          \
    template void spmm_accumulate<T>(DenseMatrix<T>&, const Matrix<T>&, const DenseMatrix<T>&, SemiringCode, BinaryOp);
HYBLA_CUDA_VALUE_TYPES(HYBLA_INSTANTIATE)
#undef HYBLA_INSTANTIATE

}  // namespace hybla::cuda
