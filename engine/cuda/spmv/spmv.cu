// mxv / vxm on the GPU: w(i) = ⊕_k M(i,k) ⊗ u(k) over a dense u (values + bitmap), result dense.
//
// Load balance is by merge path (Merrill & Garland's merge-based CSR SpMV), the equal-share idea of HP-SpMM
// (papers/hp-spmm-sddmm.txt, section III-A) with row ends counted as work too: the merge of the n row ends
// and the nnz entries is cut into tiles of kTile items, so every block gets the same work however the
// degrees are spread, a row of degree 10^6 is shared by ~1100 blocks, and a run of empty rows costs one
// item each. See engine/cuda/spmv/README.md for the design, the floor and the measured times.
//
// Three launches:
//   prepare  one pass over the row offsets: the first row of each tile (each row writes the tile starts
//            that fall inside its stretch of the merge path) and, when presence follows from the pattern
//            (u full, no mask), the number of non-empty rows, posted to mapped host memory: spmv returns
//            with nvals as soon as this kernel is done, while the other two run on.
//   tiles    one block per tile: entries loaded coalesced (evict-first, so that u's values keep the
//            caches), products with u gathered into shared memory, each thread walks kItems items of the
//            tile's merge path, a block-wide segmented scan joins rows split between threads, and the rows
//            the tile ends are written with coalesced stores; the part of the tile's last row it holds
//            goes to a carry slot.
//   fixup    adds the carries of the tiles before a row's last tile, in order (a warp splits long runs).
// The tile and fixup kernels are launched as programmatic dependents (Hopper), so that their launch
// latency hides behind the kernel before them. A matrix's plan (tile starts, count, carries) is cached on it,
// so a repeated call launches the tile and fixup kernels only and allocates nothing but its result.
// spmv_inner: the same kernels also sum (M u)(i) ⊗ v(i) into a Scalar's cell (PageRank's L1 change, ⊗ known
// at compile time) as they store M u: the tile kernel per warp, the fixup kernel for the rows spanning tiles
// and, in its last block, over everything. Launches cost the host 4.4-5.4 us each on the GPU machine, more
// than a small graph's SpMV kernels run, so one launch less per iteration is what counts there.
// Sums run in increasing k inside a thread and combine in increasing k across threads and tiles, so the
// any monoid keeps the first term, as on the CPU; floating sums differ from the CPU only by rounding.
// No floating atomics: the result is the same on every run.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/launch.cuh"
#include "engine/cuda/parts.cuh"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/cuda/warp.cuh"
#include "engine/matrix.hpp"
#include "engine/trace.hpp"
#include "engine/vector.hpp"

namespace hybla::cuda {
namespace spmv_detail {

// Threads per block and merge items per thread (odd, so that threads walking neighbouring stretches of
// shared memory fall in different banks); a tile is what one block takes at a time.
template <int Block, int Items, int MinBlocks = 1>
struct TileShape {
    static constexpr int block = Block, items = Items, tile = Block * Items, min_blocks = MinBlocks;
};
// Eight blocks per SM: every tile kernel fits in 64 registers without spilling (it took 72, 96 with the fused
// inner product's code in the same instantiation, which left 5 blocks per SM).
using DefaultShape = TileShape<128, 7, 8>;
constexpr int kPrepareBlock = 256;
constexpr int kFixupBlock = 256;
constexpr std::uint64_t kMaxPrepareBlocks = 2048;

inline void check(cudaError_t e, const char* what) { checked(int(e), what); }

// Declarations, not a directive: the Carry overloads of shfl_up/shfl_down below join these.
using warp_ops::load_ro;
using warp_ops::load_stream;
using warp_ops::narrow;
using warp_ops::shfl_down;
using warp_ops::shfl_idx;
using warp_ops::shfl_up;
using warp_ops::widen;
using warp_ops::word_t;

// A partial row: key is the row (tile-relative; -1 for none), has whether any term was seen.
template <class T>
struct Carry {
    int key;
    int has;
    T val;
};
// x comes before y in k order; a segmented combine (y starts a new row unless the keys agree).
template <class T, class Sr>
__device__ __forceinline__ Carry<T> combine(const Sr& sr, const Carry<T>& x, Carry<T> y) {
    if (x.key != y.key || !x.has) return y;
    y.val = y.has ? sr.add(x.val, y.val) : x.val;
    y.has = 1;
    return y;
}
template <class T>
__device__ __forceinline__ Carry<T> shfl_up(const Carry<T>& c, unsigned d) {
    return {__shfl_up_sync(0xffffffffu, c.key, d), __shfl_up_sync(0xffffffffu, c.has, d), shfl_up(c.val, d)};
}
template <class T>
__device__ __forceinline__ Carry<T> shfl_down(const Carry<T>& c, unsigned d) {
    return {__shfl_down_sync(0xffffffffu, c.key, d), __shfl_down_sync(0xffffffffu, c.has, d), shfl_down(c.val, d)};
}

__device__ __forceinline__ bool row_allowed(const MaskPattern& mask, Index r) {
    if (!mask.offsets) return true;
    return (mask.offsets[r + 1] > mask.offsets[r]) != mask.complement;
}

// Row i owns the merge-path diagonals [i + off[i], i + off[i+1]] (its entries, then its end), so the tiles
// starting there begin at row i. Most rows own no tile start; a row owning many (a hub) is written by its
// whole warp. Four rows per thread, their offsets read with two 16-byte loads.
template <int kTile>
__global__ void __launch_bounds__(kPrepareBlock)
    spmv_prepare(const Offset* __restrict__ off, Index n, std::uint64_t ntiles, Index* __restrict__ tile_row,
                 volatile unsigned long long* mailbox, unsigned long long epoch) {
    const unsigned lane = threadIdx.x & 31;
    allow_next_kernel();  // the tile kernel may start; it waits for this one's results anyway
    if (blockIdx.x == 0 && threadIdx.x == 0) tile_row[ntiles] = n;
    unsigned long long nonempty = 0;
    const std::uint64_t groups = (n + 3) / 4;
    const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
    for (std::uint64_t base = std::uint64_t(blockIdx.x) * blockDim.x; base < groups; base += stride) {
        const std::uint64_t g = base + threadIdx.x;
        const Index i0 = g * 4;
        Offset o[5] = {0, 0, 0, 0, 0};
        if (g < groups) {
            if (i0 + 4 <= n) {
                const ulonglong2 p0 = *reinterpret_cast<const ulonglong2*>(off + i0);
                const ulonglong2 p1 = *reinterpret_cast<const ulonglong2*>(off + i0 + 2);
                o[0] = p0.x;
                o[1] = p0.y;
                o[2] = p1.x;
                o[3] = p1.y;
                o[4] = off[i0 + 4];
            } else {
                for (int q = 0; q < 5; ++q)
                    if (i0 + q <= n) o[q] = off[i0 + q];
            }
        }
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const Index i = i0 + q;
            std::uint64_t first = 0, count = 0;
            if (g < groups && i < n) {
                nonempty += o[q + 1] != o[q];
                const std::uint64_t lo = i + o[q], hi = i + o[q + 1];
                first = (lo + kTile - 1) / kTile;
                const std::uint64_t last = hi / kTile;
                count = last >= first ? last - first + 1 : 0;
                if (count <= 32)
                    for (std::uint64_t k = 0; k < count; ++k) tile_row[first + k] = i;
            }
            unsigned many = __ballot_sync(0xffffffffu, count > 32);
            while (many) {
                const int src = __ffs(many) - 1;
                many &= many - 1;
                const Index row = __shfl_sync(0xffffffffu, i, src);
                const std::uint64_t f = __shfl_sync(0xffffffffu, first, src);
                const std::uint64_t c = __shfl_sync(0xffffffffu, count, src);
                for (std::uint64_t k = lane; k < c; k += 32) tile_row[f + k] = row;
            }
        }
    }
    if (mailbox) {
        __shared__ unsigned long long s_sum[kPrepareBlock / 32];
        for (int d = 16; d > 0; d >>= 1) nonempty += __shfl_down_sync(0xffffffffu, nonempty, d);
        if (lane == 0) s_sum[threadIdx.x / 32] = nonempty;
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long sum = 0;
            for (int w = 0; w < kPrepareBlock / 32; ++w) sum += s_sum[w];
            volatile unsigned long long* slot = mailbox + 2 * blockIdx.x;
            slot[1] = sum;
            __threadfence_system();
            slot[0] = epoch;
        }
    }
}

// The fused inner product (spmv_inner): s = + over the present rows of y(r) ⊗ v(r), with ⊗ known at compile
// time (Inner), so that the plain SpMV's kernels carry none of it (with runtime operator codes in the same
// instantiation, the plain tile kernel needed 96 registers). The tile kernel leaves the sum of the rows it
// completes in tile_part (one per warp); the fixup adds the rows it completes (those spanning tiles), sums per block, and its last block
// writes the Scalar's cell. The sums run in a fixed order (rows in a thread, then fixed trees), so the result is
// the same on every run; plus has an identity, so a part without terms is simply 0.
struct NoInner {
    static constexpr bool on = false;
};
template <BinaryOp kMultiply>
struct PlusInner {
    static constexpr bool on = true;
    template <class T>
    __device__ __forceinline__ T term(T y, T v) const {
        return apply_binary<T>(kMultiply, y, v);
    }
};
template <class T>
struct ChangeArgs {
    const T* v = nullptr;
    T* tile_part = nullptr;                 // DefaultShape::block / 32 per tile (one per warp of the tile kernel)
    parts::Part<T>* block_part = nullptr;   // one per fixup block (the Scalar's scratch)
    unsigned* ticket = nullptr;             // the Scalar's scratch, zero between uses
    parts::Part<T>* out = nullptr;          // the Scalar's cell
};

// Row r gets the carries of the tiles that hold its beginning but not its end; its last tile wrote the rest.
template <class T, class Sr, bool kGeneral>
__device__ void apply_carry(Index r, const Carry<T>& c, T* y, std::uint8_t* ybm, const Sr& sr,
                            const MaskPattern& mask, unsigned long long* counter, const T* w_in) {
    if (!c.has) return;
    if constexpr (kGeneral) {
        if (!row_allowed(mask, r)) return;
    } else {
        if (w_in) {  // accumulating: the row's last tile left its own part only (see spmv_tiles)
            y[r] = sr.add(w_in[r], sr.add(c.val, y[r]));
            return;
        }
    }
    if (ybm[r]) {
        y[r] = sr.add(c.val, y[r]);
    } else {
        y[r] = c.val;
        ybm[r] = 1;
        if (kGeneral && counter) atomicAdd(counter, 1ull);
    }
}

// One tile of the merge path per block (grid-stride when there are more tiles than blocks).
// kGeneral: u may have a bitmap (xbm), rows may be masked, and present rows are counted into counter
// (when counter is given); without it every entry is a term and no row is masked.
// Everything, even the matrix, is read after the wait for the previous kernel. Loading the tile's entries
// before the wait (tried, spmv/README.md v8) made PageRank's ranks wrong in most runs on the graphs of more
// than one wave of tiles. The likely cause: u is gathered with ld.global.nc (__ldg), which is only defined for
// data that does not change while the kernel runs, and which the compiler may move above griddepcontrol.wait
// once the addresses are known; with the entries loaded after the wait, the gathers depend on it.
template <class T, class Sr, bool kGeneral, class Shape, class Inner>
__global__ void __launch_bounds__(Shape::block, Shape::min_blocks)
    spmv_tiles(const Offset* __restrict__ off, const ColIndex* __restrict__ col, const T* __restrict__ val,
               const T* __restrict__ x, const std::uint8_t* __restrict__ xbm, Index n, Offset nnz,
               std::uint64_t ntiles, const Index* __restrict__ tile_row, T* __restrict__ y,
               std::uint8_t* __restrict__ ybm, T* __restrict__ carry_val, std::uint8_t* __restrict__ carry_has,
               Sr sr, bool flip, MaskPattern mask, unsigned long long* __restrict__ counter,
               const T* __restrict__ w_in, ChangeArgs<T> ch) {
    static_assert(!(kGeneral && Inner::on));
    constexpr int kBlock = Shape::block, kItems = Shape::items, kTile = Shape::tile;
    __shared__ std::uint32_t s_end[kTile + 1];  // row ends, relative to the tile's first entry
    __shared__ T s_prod[kTile];
    __shared__ std::uint8_t s_has[kGeneral ? kTile : 1];
    __shared__ T s_y[kTile];  // the rows the tile ends, staged for coalesced stores
    __shared__ std::uint8_t s_yb[kTile];
    __shared__ Carry<T> s_warp[kBlock / 32];

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const std::uint64_t total = n + nnz;
    wait_for_previous_kernel();  // tile_row comes from spmv_prepare, u from the kernels before
    for (std::uint64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const std::uint64_t d0 = t * kTile;
        const std::uint64_t d1 = d0 + kTile < total ? d0 + kTile : total;
        const Index r0 = tile_row[t], r1 = tile_row[t + 1];
        const Offset k0 = d0 - r0, k1 = d1 - r1;
        const int nr = int(r1 - r0), nk = int(k1 - k0);

        for (int j = threadIdx.x; j < nr; j += kBlock) s_end[j] = std::uint32_t(off[r0 + 1 + j] - k0);
        if (threadIdx.x == 0) s_end[nr] = 0xffffffffu;  // the tile's last row does not end here

        ColIndex c[kItems];
        T v[kItems];
#pragma unroll
        for (int q = 0; q < kItems; ++q) {
            const int j = q * kBlock + threadIdx.x;
            if (j < nk) {
                c[q] = load_stream(col + k0 + j);
                v[q] = load_stream(val + k0 + j);
            }
        }
#pragma unroll
        for (int q = 0; q < kItems; ++q) {
            const int j = q * kBlock + threadIdx.x;
            if (j < nk) {
                if constexpr (kGeneral) {
                    const bool present = !xbm || xbm[c[q]];
                    T p{};
                    if (present) {
                        const T xv = load_ro(x + c[q]);
                        p = flip ? sr.multiply(xv, v[q]) : sr.multiply(v[q], xv);
                    }
                    s_prod[j] = p;
                    s_has[j] = present;
                } else {
                    s_prod[j] = sr.multiply(v[q], load_ro(x + c[q]));
                }
            }
        }
        __syncthreads();

        // This thread's kItems items: find where its diagonal crosses the tile's merge path.
        const int items = nr + nk;
        const int diag = min(int(threadIdx.x) * kItems, items);
        const int diag_end = min(diag + kItems, items);
        int lo = max(0, diag - nk), hi = min(diag, nr);
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (s_end[mid] <= unsigned(diag - 1 - mid)) lo = mid + 1;
            else hi = mid;
        }
        int a = lo, b = diag - lo;
        const int a_first = a;

        auto emit = [&](int ra, T value, bool has) {
            s_y[ra] = value;
            s_yb[ra] = has;
        };

        T acc{};
        bool has = false, emitted = false, first_has = false;
        T first_val{};
#pragma unroll
        for (int q = 0; q < kItems; ++q) {
            if (a + b < diag_end) {
                if (unsigned(b) < s_end[a]) {
                    if constexpr (kGeneral) {
                        if (s_has[b]) {
                            acc = has ? sr.add(acc, s_prod[b]) : s_prod[b];
                            has = true;
                        }
                    } else {
                        acc = sr.add(acc, s_prod[b]);
                        has = true;
                    }
                    ++b;
                } else {
                    // The first row this thread ends may have begun in earlier threads: held for the scan.
                    if (!emitted) {
                        first_val = acc;
                        first_has = has;
                        emitted = true;
                    } else {
                        emit(a, acc, has);
                    }
                    acc = T{};
                    has = false;
                    ++a;
                }
            }
        }

        // Segmented exclusive scan of the threads' trailing partial rows (keys never decrease).
        Carry<T> inc{a, has, acc};
#pragma unroll
        for (unsigned d = 1; d < 32; d <<= 1) {
            const Carry<T> o = shfl_up(inc, d);
            if (lane >= int(d)) inc = combine(sr, o, inc);
        }
        const Carry<T> prev = shfl_up(inc, 1);
        if (lane == 31) s_warp[warp] = inc;
        __syncthreads();
        Carry<T> pre{-1, 0, T{}};
        for (int w = 0; w < warp; ++w) pre = combine(sr, pre, s_warp[w]);
        const Carry<T> excl = lane == 0 ? pre : combine(sr, pre, prev);
        if (emitted) {
            const Carry<T> whole = combine(sr, excl, Carry<T>{a_first, first_has, first_val});
            emit(a_first, whole.val, whole.has);
        }
        if (threadIdx.x == kBlock - 1) {
            const Carry<T> tile_carry = combine(sr, pre, inc);
            carry_val[t] = tile_carry.val;
            carry_has[t] = tile_carry.has;
        }
        __syncthreads();
        unsigned long long present_rows = 0;
        T term{};  // the inner product's terms of the rows completed here
        for (int j = threadIdx.x; j < nr; j += kBlock) {
            const Index row = r0 + j;
            bool present = s_yb[j];
            if constexpr (kGeneral) {
                present = present && row_allowed(mask, row);
                present_rows += present;
            } else {
                if (w_in) {
                    // y = w + (the row's sum); a row with entries in earlier tiles gets w and those tiles'
                    // carries from the fixup, so this tile leaves only its own part (every entry is a term
                    // here, so such a row always has a carry).
                    const bool continued = j == 0 && off[row] < k0;
                    y[row] = continued ? (present ? s_y[j] : T{}) : present ? sr.add(w_in[row], s_y[j]) : w_in[row];
                    ybm[row] = 1;
                    continue;
                }
            }
            y[row] = present ? s_y[j] : T{};
            ybm[row] = present;
            if constexpr (Inner::on) {
                // A row with entries in earlier tiles is completed by the fixup, which adds its term.
                if (present && !(j == 0 && off[row] < k0)) term += Inner{}.term(s_y[j], ch.v[row]);
            }
        }
        if constexpr (Inner::on) {
            // One part per warp (no block-wide step): the fixup sums a tile's kBlock / 32 parts.
            for (unsigned d = 16; d > 0; d /= 2) term += shfl_down(term, d);
            if (lane == 0) ch.tile_part[t * (kBlock / 32) + warp] = term;
        }
        if constexpr (kGeneral) {
            if (counter) {
                for (int d = 16; d > 0; d >>= 1) present_rows += __shfl_down_sync(0xffffffffu, present_rows, d);
                if (lane == 0 && present_rows) atomicAdd(counter, present_rows);
            }
        }
        __syncthreads();  // shared arrays are reused by the next tile
    }
    allow_next_kernel();
}

// The end of the run of tiles whose carries belong to row r, tile_row[t + 1] = r (a nondecreasing array):
// the first q >= t + 2 with tile_row[q] != r, found by galloping from t + 2 (most runs are short).
__device__ __forceinline__ std::uint64_t run_end(const Index* __restrict__ tile_row, std::uint64_t t,
                                                 std::uint64_t ntiles, Index r) {
    std::uint64_t lo = t + 2, step = 1;  // tile_row[lo - 1] == r
    std::uint64_t hi = lo;
    while (hi < ntiles && tile_row[hi] == r) {
        lo = hi + 1;
        hi = lo + step;
        step *= 2;
    }
    hi = hi < ntiles ? hi : ntiles;
    while (lo < hi) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (tile_row[mid] == r) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// One thread per tile.
template <class T, class Sr, bool kGeneral, class Inner>
__global__ void __launch_bounds__(kFixupBlock)
    spmv_fixup(Index n, std::uint64_t ntiles, const Index* __restrict__ tile_row, const T* __restrict__ carry_val,
               const std::uint8_t* __restrict__ carry_has, T* __restrict__ y, std::uint8_t* __restrict__ ybm, Sr sr,
               MaskPattern mask, unsigned long long* __restrict__ counter, const T* __restrict__ w_in,
               ChangeArgs<T> ch) {
    wait_for_previous_kernel();  // the carries come from spmv_tiles
    allow_next_kernel();         // the next kernel may be scheduled; it waits for this one's results
    T acc{};  // this thread's part of the fused inner product
    const int lane = threadIdx.x & 31;
    // The inner product's term of a row completed here (its final value was just written by this thread). The
    // fixup completes exactly the rows whose carries hold terms, i.e. (every entry being a term where the inner
    // product is fused) the rows with entries before their last tile, which is the row the tile kernel skips;
    // a run of carries without terms (a row starting exactly at a tile's start) leaves the row to its tile.
    auto add_term = [&](Index r) {
        if constexpr (Inner::on) acc += Inner{}.term(y[r], ch.v[r]);
    };
    const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
    for (std::uint64_t base = std::uint64_t(blockIdx.x) * blockDim.x; base < ntiles; base += stride) {
        const std::uint64_t t = base + threadIdx.x;
        bool is_long = false;
        std::uint64_t len = 0;
        Index r = 0;
        // Tile t's carry belongs to row tile_row[t+1]; the first tile carrying a row sums the whole run.
        if (t < ntiles) {
            r = tile_row[t + 1];
            // Row r ends in a later tile, so t + 2 <= ntiles.
            if (r < n && (t == 0 || tile_row[t] != r)) len = run_end(tile_row, t, ntiles, r) - 1 - t;
        }
        if (t < ntiles) {
            if constexpr (Inner::on) {
                constexpr int kParts = DefaultShape::block / 32;
                for (int q = 0; q < kParts; ++q) acc += ch.tile_part[t * kParts + q];
            }
            if (len > 0) {
                if (len <= 32) {
                    Carry<T> c{0, 0, T{}};
                    for (std::uint64_t q = t; q < t + len; ++q)
                        c = combine(sr, c, Carry<T>{0, carry_has[q], carry_val[q]});
                    apply_carry<T, Sr, kGeneral>(r, c, y, ybm, sr, mask, counter, w_in);
                    if (c.has) add_term(r);
                } else {
                    is_long = true;
                }
            }
        }
        // Long runs (rows spanning more than 32 tiles): the warp takes one at a time, each lane a contiguous
        // stretch, then an ordered tree.
        unsigned many = __ballot_sync(0xffffffffu, is_long);
        while (many) {
            const int src = __ffs(many) - 1;
            many &= many - 1;
            const std::uint64_t t0 = __shfl_sync(0xffffffffu, t, src);
            const std::uint64_t l0 = __shfl_sync(0xffffffffu, len, src);
            const Index row = __shfl_sync(0xffffffffu, r, src);
            const std::uint64_t per = (l0 + 31) / 32;
            const std::uint64_t beg = t0 + std::min<std::uint64_t>(l0, lane * per);
            const std::uint64_t end = t0 + std::min<std::uint64_t>(l0, (lane + 1) * per);
            Carry<T> c{0, 0, T{}};
            for (std::uint64_t q = beg; q < end; ++q)
                c = combine(sr, c, Carry<T>{0, carry_has[q], carry_val[q]});
#pragma unroll
            for (int d = 1; d < 32; d <<= 1) {
                const Carry<T> o = shfl_down(c, d);
                if ((lane & (2 * d - 1)) == 0) c = combine(sr, c, o);
            }
            if (lane == 0) {
                apply_carry<T, Sr, kGeneral>(row, c, y, ybm, sr, mask, counter, w_in);
                if (c.has) add_term(row);
            }
        }
    }
    if constexpr (Inner::on) {
        const parts::Part<T> b = parts::block_combine<kFixupBlock>(MonoidOp::plus, parts::Part<T>{0, acc});
        parts::finish_by_last_block<kFixupBlock>(MonoidOp::plus, b, ch.block_part, ch.ticket, ch.out);
    }
}

inline int sm_count(int device) { return multiprocessor_count(device); }

// Mapped host memory, per host thread, where the kernel leaves its counts: slot s is (epoch, count), the
// count valid once the epoch is this call's. Kept for the thread's life on purpose (32 KB).
struct Mailbox {
    volatile unsigned long long* host = nullptr;
    volatile unsigned long long* dev = nullptr;
};
inline Mailbox& mailbox() {
    static thread_local Mailbox mb;
    if (!mb.host) {
        const std::size_t bytes = 2 * kMaxPrepareBlocks * sizeof(unsigned long long);
        void* h = nullptr;
        check(cudaHostAlloc(&h, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc (spmv mailbox)");
        std::memset(h, 0, bytes);
        void* d = nullptr;
        check(cudaHostGetDevicePointer(&d, h, 0), "cudaHostGetDevicePointer (spmv mailbox)");
        mb.host = static_cast<volatile unsigned long long*>(h);
        mb.dev = static_cast<volatile unsigned long long*>(d);
    }
    return mb;
}

// Sums the slots' counts as they arrive, spinning on host memory and checking the stream now and then,
// so that a failed kernel becomes an exception instead of a hang.
inline unsigned long long wait_counts(const Mailbox& mb, std::uint64_t slots, unsigned long long epoch,
                                      cudaStream_t stream) {
    unsigned long long sum = 0;
    unsigned spins = 0;
    for (std::uint64_t s = 0; s < slots; ++s) {
        while (mb.host[2 * s] != epoch) {
            if (++spins % 1024 == 0) {
                const cudaError_t e = cudaStreamQuery(stream);
                if (e != cudaSuccess && e != cudaErrorNotReady) fail(int(e), "spmv kernel");
                if (e == cudaSuccess && mb.host[2 * s] != epoch)
                    throw Error("cuda::spmv: the kernel ended without posting its count");
            }
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        sum += mb.host[2 * s + 1];
    }
    return sum;
}

// Epochs tag the tiles' flags, so the scratch needs no clearing: a fresh 61-bit value per call, starting
// from a random one, so that leftovers in pool memory (older calls, other data) never look current.
inline unsigned long long next_epoch() {
    static std::atomic<unsigned long long> epochs{[] {
        std::uint64_t x = std::uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^ 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ull;
        return ((x ^ (x >> 29)) >> 4) | (1ull << 58);
    }()};
    return epochs.fetch_add(1, std::memory_order_relaxed) & ((1ull << 61) - 1);
}

// What spmv_prepare finds from a matrix's pattern alone: the tile starts and the number of non-empty rows. Kept
// on the matrix (Matrix::cache_plan) once a full-vector, unmasked call has waited for them, so later calls skip
// the prepare kernel and know their result's nvals without waiting, as cuSPARSE's calls do. The plan also
// holds the calls' carries (a matrix's calls are ordered on its context's stream), so that a
// call needs no scratch allocation.
struct TilePlan {
    int tile = 0;
    Array<Index> tile_row;
    Index nonempty_rows = 0;
    Array<unsigned char> work;
};

// Scratch layout for ntiles tiles after `start` bytes: carry values, carry flags, the present-row counter, the
// tiles' parts of a fused inner product.
template <class T>
struct WorkLayout {
    std::size_t carry_at, has_at, counter_at, part_at, bytes;
    WorkLayout(std::size_t start, std::uint64_t ntiles, unsigned parts_per_tile)
        : carry_at((start + 15) / 16 * 16),
          has_at(carry_at + ntiles * sizeof(T)),
          counter_at((has_at + ntiles + 7) / 8 * 8),
          part_at((counter_at + sizeof(unsigned long long) + 15) / 16 * 16),
          bytes(part_at + ntiles * parts_per_tile * sizeof(T)) {}
};

// w: accumulate (y = w + M u, w full, u full, no mask, kGeneral false only), or nullptr.
// change: the fused inner product (Inner; u full, no mask, kGeneral false only), or nullptr.
template <class T, class Sr, bool kGeneral, class Inner = NoInner, class Shape = DefaultShape>
Vector<T> run(const Matrix<T>& m, const Vector<T>& u, Sr sr, bool flip, const MaskPattern* mask, const char* path,
              const Vector<T>* w = nullptr, const ChangeArgs<T>* change = nullptr) {
    constexpr int kTile = Shape::tile;
    const Context ctx = m.context();
    const auto stream = static_cast<cudaStream_t>(ctx.stream());
    check(cudaSetDevice(ctx.device()), "cudaSetDevice");
    const Index n = m.nrows();
    const Offset nnz = m.nvals();
    Array<T> y(n, ctx);
    Array<std::uint8_t> ybm(n, ctx);
    if (n == 0) return Vector<T>::adopt(0, 0, true, Array<Index>(0, ctx), std::move(y), std::move(ybm));
    const T* w_in = w ? w->storage_values().data() : nullptr;

    const bool u_full = u.nvals() == u.size();
    // Presence follows from the pattern alone: a row is present iff it has an entry.
    const bool count_from_pattern = u_full && !mask;
    const std::uint64_t total = n + nnz;
    const std::uint64_t ntiles = (total + kTile - 1) / kTile;
    std::shared_ptr<const TilePlan> plan = std::static_pointer_cast<const TilePlan>(m.cached_plan());
    if (plan && plan->tile != kTile) plan.reset();
    // A new plan is made when this call waits for the prepare kernel anyway (for the count).
    std::shared_ptr<TilePlan> new_plan;
    const WorkLayout<T> at(0, ntiles, Shape::block / 32);
    if (!plan && count_from_pattern) {
        new_plan = std::make_shared<TilePlan>();
        new_plan->tile = kTile;
        new_plan->tile_row = Array<Index>(ntiles + 1, ctx);
        new_plan->work = Array<unsigned char>(at.bytes, ctx);
    }
    // Without a plan, one scratch allocation: the tiles' first rows, the carries and the counter.
    const bool own_tiles = !plan && !new_plan;
    const WorkLayout<T> own(own_tiles ? (ntiles + 1) * sizeof(Index) : 0, ntiles, Shape::block / 32);
    Array<unsigned char> scratch(own_tiles ? own.bytes : 0, ctx);
    unsigned char* work = plan       ? const_cast<unsigned char*>(plan->work.data())
                          : new_plan ? new_plan->work.data()
                                     : scratch.data();
    const WorkLayout<T>& lay = own_tiles ? own : at;
    // Written only by the prepare kernel, which does not run when the plan is cached.
    Index* tile_row = plan       ? const_cast<Index*>(plan->tile_row.data())
                      : new_plan ? new_plan->tile_row.data()
                                 : reinterpret_cast<Index*>(scratch.data());
    static_assert(Shape::block == DefaultShape::block);  // the fixup's parts per tile
    if (Inner::on != (change != nullptr)) throw InvalidValue("cuda::spmv: inner product arguments do not match");
    ChangeArgs<T> ch = change ? *change : ChangeArgs<T>{};
    if (change) ch.tile_part = reinterpret_cast<T*>(work + lay.part_at);
    T* carry_val = reinterpret_cast<T*>(work + lay.carry_at);
    std::uint8_t* carry_has = work + lay.has_at;
    unsigned long long* counter = nullptr;
    if (!count_from_pattern) {
        counter = reinterpret_cast<unsigned long long*>(work + lay.counter_at);
        check(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), stream), "cudaMemsetAsync (spmv count)");
    }
    trace("mxv (GPU): %s, %zu rows, %zu entries, %zu tiles of %d items", path, size_t(n), size_t(nnz),
          size_t(ntiles), kTile);

    const int sms = sm_count(ctx.device());
    const Offset* off = m.storage_offsets().data();
    const MaskPattern mp = mask ? *mask : MaskPattern{};
    const std::uint64_t groups = (n + 3) / 4;
    const std::uint64_t prepare_blocks = std::clamp<std::uint64_t>(
        (groups + kPrepareBlock - 1) / kPrepareBlock, 1, std::min<std::uint64_t>(std::uint64_t(sms) * 8, kMaxPrepareBlocks));
    Mailbox* mb = new_plan ? &mailbox() : nullptr;
    const unsigned long long epoch = next_epoch();
    if (!plan) {
        spmv_prepare<kTile><<<unsigned(prepare_blocks), kPrepareBlock, 0, stream>>>(off, n, ntiles, tile_row,
                                                                                     mb ? mb->dev : nullptr, epoch);
        check(cudaGetLastError(), "spmv prepare kernel launch");
    }
    const unsigned tile_blocks = unsigned(std::min<std::uint64_t>(ntiles, 0x7fffffffu));
    launch_after_previous(spmv_tiles<T, Sr, kGeneral, Shape, Inner>, tile_blocks, Shape::block, stream, ctx.device(),
                          "spmv tile kernel launch",
                          off, m.storage_indices().data(), m.storage_values().data(), u.storage_values().data(),
                          u_full ? nullptr : u.storage_bitmap().data(), n, nnz, ntiles, (const Index*)tile_row, y.data(),
                          ybm.data(), carry_val, carry_has, sr, flip, mp, counter, w_in, ch);
    const unsigned fixup_blocks = unsigned(
        std::max<std::uint64_t>(1, std::min<std::uint64_t>((ntiles + kFixupBlock - 1) / kFixupBlock, std::uint64_t(sms) * 16)));
    launch_after_previous(spmv_fixup<T, Sr, kGeneral, Inner>, fixup_blocks, kFixupBlock, stream, ctx.device(),
                          "spmv fixup kernel launch", n, ntiles, (const Index*)tile_row, (const T*)carry_val,
                          (const std::uint8_t*)carry_has, y.data(), ybm.data(), sr, mp, counter, w_in, ch);

    Index nvals = 0;
    if (count_from_pattern && plan) {
        nvals = plan->nonempty_rows;
    } else if (new_plan) {
        // Only the prepare kernel is waited for: the tile and fixup kernels stay queued, and the scratch
        // is freed in stream order behind them.
        nvals = new_plan->nonempty_rows = wait_counts(*mb, prepare_blocks, epoch, stream);
        m.cache_plan(std::move(new_plan));
    } else {
        unsigned long long c = 0;
        copy(&c, counter, sizeof c, CopyKind::device_to_host, ctx.stream());
        nvals = c;
    }
    return Vector<T>::adopt(n, w ? n : nvals, true, Array<Index>(0, ctx), std::move(y), std::move(ybm));
}

}  // namespace spmv_detail

template <class T>
Vector<T> spmv(const Matrix<T>& m, const Vector<T>& u, SemiringCode sr, bool flip, const MaskPattern* mask) {
    using namespace spmv_detail;
    if (!u.is_dense()) throw InvalidValue("cuda::spmv: u must be in dense storage");
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (sr.add == MonoidOp::plus && sr.multiply == BinaryOp::times) {
            if (!mask && u.nvals() == u.size())
                return run<T, PlusTimes, false>(m, u, PlusTimes{}, flip, mask, "plus_times, merge path");
            return run<T, PlusTimes, true>(m, u, PlusTimes{}, flip, mask, "plus_times (bitmap/mask), merge path");
        }
    }
    return run<T, RuntimeSemiring, true>(m, u, RuntimeSemiring{sr}, flip, mask, "semiring by code, merge path");
}

template <class T>
Vector<T> spmv_plus_accumulate(const Matrix<T>& m, const Vector<T>& u, const Vector<T>& w) {
    using namespace spmv_detail;
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    if (u.nvals() != u.size() || !u.is_dense() || w.nvals() != w.size() || !w.is_dense() || w.size() != m.nrows())
        throw InvalidValue("cuda::spmv_plus_accumulate: u and w must be full and w must have a row's size");
    return run<T, PlusTimes, false>(m, u, PlusTimes{}, false, nullptr, "plus_times accumulating into w, merge path", &w);
}

template <class T>
Vector<T> spmv_inner(const Matrix<T>& m, const Vector<T>& u, const Vector<T>& v, SemiringCode sr2, ScalarTarget<T> to) {
    using namespace spmv_detail;
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    if (u.nvals() != u.size() || !u.is_dense() || v.nvals() != v.size() || !v.is_dense() || v.size() != m.nrows() ||
        m.nrows() == 0)
        throw InvalidValue("cuda::spmv_inner: u and v must be full, v must have a row's size, and M rows");
    // The fused kernels know the inner product's semiring at compile time: plus with absdiff (PageRank's L1
    // change) or times (a dot product). Any other runs apart.
    if (sr2.add != MonoidOp::plus || (sr2.multiply != BinaryOp::absdiff && sr2.multiply != BinaryOp::times)) {
        Vector<T> w = spmv(m, u, SemiringCode{MonoidOp::plus, BinaryOp::times}, false, nullptr);
        inner(w, v, sr2, to);
        return w;
    }
    const int sms = sm_count(m.context().device());
    // One part per fixup block in the Scalar's scratch (at most sms * 16 blocks, see run).
    if (std::uint64_t(sms) * 16 * sizeof(parts::Part<T>) + reduce_scratch_parts_at > reduce_scratch_bytes)
        throw InvalidValue("cuda::spmv_inner: too many multiprocessors for a Scalar's scratch");
    ChangeArgs<T> ch;
    ch.v = v.storage_values().data();
    ch.block_part = reinterpret_cast<parts::Part<T>*>(static_cast<char*>(to.scratch) + reduce_scratch_parts_at);
    ch.ticket = static_cast<unsigned*>(to.scratch);
    ch.out = to.cell;
    const char* path = "plus_times and an inner product of the result, merge path";
    if (sr2.multiply == BinaryOp::absdiff)
        return run<T, PlusTimes, false, PlusInner<BinaryOp::absdiff>>(m, u, PlusTimes{}, false, nullptr, path, nullptr, &ch);
    return run<T, PlusTimes, false, PlusInner<BinaryOp::times>>(m, u, PlusTimes{}, false, nullptr, path, nullptr, &ch);
}
template Vector<float> spmv_inner<float>(const Matrix<float>&, const Vector<float>&, const Vector<float>&, SemiringCode,
                                         ScalarTarget<float>);
template Vector<double> spmv_inner<double>(const Matrix<double>&, const Vector<double>&, const Vector<double>&,
                                           SemiringCode, ScalarTarget<double>);

#define HYBLA_SPMV_INSTANTIATE(T) \
    template Vector<T> spmv<T>(const Matrix<T>&, const Vector<T>&, SemiringCode, bool, const MaskPattern*);
HYBLA_CUDA_VALUE_TYPES(HYBLA_SPMV_INSTANTIATE)
#undef HYBLA_SPMV_INSTANTIATE
template Vector<float> spmv_plus_accumulate<float>(const Matrix<float>&, const Vector<float>&, const Vector<float>&);
template Vector<double> spmv_plus_accumulate<double>(const Matrix<double>&, const Vector<double>&, const Vector<double>&);

}  // namespace hybla::cuda
