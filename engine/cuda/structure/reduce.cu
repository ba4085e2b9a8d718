// Reductions with a monoid on the GPU: rows of a matrix to a dense vector, and a matrix or vector to a scalar.
//
// Partial results are (position of their first term, value) pairs, `none` when they hold no term, and two are
// combined earlier-first. That keeps `any` (which has no true identity) equal to the CPU's choice, the first
// term in storage order, and keeps every result independent of scheduling.
//
// reduce_rows: one warp per row of up to long_row entries (grid-stride over rows); longer rows are listed by
// that kernel and reduced afterwards in chunks of `chunk` entries, one block per chunk, then one block per
// long row over its chunks' partials, so that a row of 10^6 entries spreads over the GPU.
// reduce_all: a fixed number of blocks over equal contiguous ranges, then one block over their partials.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/launch.cuh"
#include "engine/cuda/parts.cuh"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cuda {

namespace {

using namespace keys;

constexpr unsigned warp_size = 32;
constexpr unsigned threads = 256;  // per block: 8 warps
constexpr Offset long_row = 8192;
constexpr Offset chunk = 8192;
// reduce_all: ranges of `threads` entries (one per thread) or more, at most max_parts of them. Enough blocks to
// fill the GPU and few dependent loads per thread: with ranges of 8192 and at most 1024 blocks, a reduction of
// 10^6 doubles took 32 us (32 dependent loads per thread on one block per SM), a PageRank iteration paid that
// twice; with ranges of 2048 (8 loads per thread), an inner product of 2.2 * 10^4 doubles took 18 us (ncu).
constexpr Offset max_parts = 4096;

using parts::block_combine;
using parts::combine;
using parts::Part;
using parts::warp_combine;

struct OffsetPair {
    Offset b, e;
};

// What one pass of reduce_ranges_kernel reads and writes (one kernel per type serves every pass).
template <class T>
struct RangePass {
    Offset nranges = 0;
    const OffsetPair* table = nullptr;  // the ranges; nullptr: [0, n) split into nranges equal ranges
    Offset n = 0;
    const Part<T>* parts_in = nullptr;   // the terms: earlier partials, or else values (where present)
    const T* vals = nullptr;
    const std::uint8_t* present = nullptr;
    const T* vals2 = nullptr;                // inner products: the term is vals[p] (x) vals2[p] where both are present
    const std::uint8_t* present2 = nullptr;
    BinaryOp multiply = BinaryOp::times;
    const Index* rows = nullptr;         // the results: out[rows[k]] (value only), or else parts_out[k]
    T* out = nullptr;
    Part<T>* parts_out = nullptr;
    // One pass (ticket given, one block per range): the last block to finish combines parts_out into *final_out.
    unsigned* ticket = nullptr;
    Part<T>* final_out = nullptr;
};

// One block per range.
template <class T>
__global__ void __launch_bounds__(threads) reduce_ranges_kernel(RangePass<T> a, MonoidOp op) {
    wait_for_previous_kernel();  // launched as a programmatic dependent
    allow_next_kernel();
    Part<T> mine{none, T{}};  // thread 0: the block's last part (its only one in a ticketed pass)
    for (Offset k = blockIdx.x; k < a.nranges; k += gridDim.x) {
        // n * k fits easily: n < 2^48 for any array a GPU holds, and k < max_parts = 2^12 there.
        const OffsetPair r = a.table ? a.table[k] : OffsetPair{a.n * k / a.nranges, a.n * (k + 1) / a.nranges};
        Part<T> acc{none, T{}};
        if (a.parts_in) {
#pragma unroll 4
            for (Offset p = r.b + threadIdx.x; p < r.e; p += blockDim.x) acc = combine(op, acc, a.parts_in[p]);
        } else {
            if (a.vals2) {
#pragma unroll 4
                for (Offset p = r.b + threadIdx.x; p < r.e; p += blockDim.x)
                    if ((!a.present || a.present[p]) && (!a.present2 || a.present2[p]))
                        acc = combine(op, acc, Part<T>{p, apply_binary<T>(a.multiply, a.vals[p], a.vals2[p])});
            } else {
#pragma unroll 4
                for (Offset p = r.b + threadIdx.x; p < r.e; p += blockDim.x)
                    if (!a.present || a.present[p]) acc = combine(op, acc, Part<T>{p, a.vals[p]});
            }
        }
        acc = block_combine<threads>(op, acc);
        if (threadIdx.x == 0) {
            if (a.rows) a.out[a.rows[k]] = acc.val;
            else a.parts_out[k] = acc;
            mine = acc;
        }
    }
    // One pass with one block per range: the last block combines the parts.
    if (a.ticket) parts::finish_by_last_block<threads>(op, mine, a.parts_out, a.ticket, a.final_out);
}
template <class T>
void reduce_ranges(const RangePass<T>& pass, MonoidOp op, const Context& ctx) {
    if (pass.nranges == 0) return;
    unsigned blocks = unsigned(std::min<Offset>(pass.nranges, Offset(1) << 20));
    // A programmatic dependent (engine/cuda/launch.cuh): an inner product after an SpMV, PageRank's
    // convergence test, starts without a launch gap and costs the host less.
    launch_after_previous(reduce_ranges_kernel<T>, blocks, threads, stream_of(ctx), ctx.device(), "reduce_ranges", pass,
                          op);
}

// Rows of at most long_row entries, one warp each; longer rows go to long_rows (their results come later).
// counters[0] += non-empty rows (long ones included), counters[1] = number of long rows.
template <class T>
__global__ void __launch_bounds__(threads) reduce_rows_kernel(const Offset* off, const T* av, Index n, MonoidOp op,
                                                              T* out, std::uint8_t* bm,
                                                              unsigned long long* counters, Index* long_rows) {
    __shared__ unsigned long long block_nonempty;
    if (threadIdx.x == 0) block_nonempty = 0;
    __syncthreads();
    const unsigned lane = threadIdx.x % warp_size;
    const Index warps = Index(gridDim.x) * (blockDim.x / warp_size);
    unsigned long long nonempty = 0;  // counted by lane 0
    const T identity = monoid_identity<T>(op);
    for (Index i = Index(blockIdx.x) * (blockDim.x / warp_size) + threadIdx.x / warp_size; i < n; i += warps) {
        const Offset b = off[i], e = off[i + 1];
        if (e - b > long_row) {
            if (lane == 0) {
                long_rows[atomicAdd(&counters[1], 1ull)] = i;
                bm[i] = 1;
                ++nonempty;
            }
            continue;
        }
        if (op == MonoidOp::any) {  // the first entry, as on the CPU
            if (lane == 0) {
                out[i] = b < e ? av[b] : identity;
                bm[i] = b < e;
                nonempty += b < e;
            }
            continue;
        }
        // Each lane starts from its own first term; lanes hold increasing positions, so position = lane order.
        Part<T> acc{none, T{}};
        for (Offset p = b + lane; p < e; p += warp_size)
            acc = acc.pos == none ? Part<T>{p, av[p]} : Part<T>{acc.pos, apply_monoid<T>(op, acc.val, av[p])};
        acc = warp_combine(op, acc);
        if (lane == 0) {
            out[i] = acc.pos == none ? identity : acc.val;
            bm[i] = acc.pos != none;
            nonempty += acc.pos != none;
        }
    }
    if (lane == 0 && nonempty) atomicAdd(&block_nonempty, nonempty);
    __syncthreads();
    if (threadIdx.x == 0 && block_nonempty) atomicAdd(&counters[0], block_nonempty);
}

template <class T>
void copy_to_host(T* dst, const T* src, std::size_t n, const Context& ctx) {
    if (n == 0) return;
    check(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToHost, stream_of(ctx)), "cudaMemcpyAsync (reduce)");
    check(cudaStreamSynchronize(stream_of(ctx)), "cudaStreamSynchronize (reduce)");
}

// The chunks of the long rows (at most `chunk` entries each) and, per long row, its run of chunk partials.
// Built on the host: there are at most nnz / long_row long rows.
void long_row_tables(const Offset* off, const Index* long_rows, Offset nlong, Array<OffsetPair>& d_chunks,
                     Array<OffsetPair>& d_runs, const Context& ctx) {
    Array<OffsetPair> ext(nlong, ctx);
    OffsetPair* ep = ext.data();
    for_each(nlong, ctx, "reduce_rows (long rows)",
             [=] __device__(std::uint64_t k) { ep[k] = OffsetPair{off[long_rows[k]], off[long_rows[k] + 1]}; });
    std::vector<OffsetPair> h_ext(nlong);
    copy_to_host(h_ext.data(), ep, nlong, ctx);
    std::vector<OffsetPair> chunks, runs(nlong);
    for (Offset k = 0; k < nlong; ++k) {
        runs[k].b = chunks.size();
        for (Offset b = h_ext[k].b; b < h_ext[k].e; b += chunk) chunks.push_back({b, std::min(b + chunk, h_ext[k].e)});
        runs[k].e = chunks.size();
    }
    d_chunks = Array<OffsetPair>(std::span<const OffsetPair>(chunks)).to(ctx);
    d_runs = Array<OffsetPair>(std::span<const OffsetPair>(runs)).to(ctx);
}

// The second factor of an inner product's terms.
template <class T>
struct Factor {
    const T* vals;
    const std::uint8_t* present;
    BinaryOp multiply;
};
// ⊕ of vals[0, n) (entries with present[p] == 0 skipped when present is given); with second given, of
// vals[p] (x) second->vals[p] where both are present (an inner product). The identity when there is no term.
// With `to` given, the result is left in its cell in one launch (in stream order, not waited for) and the
// return value means nothing.
// A Scalar's scratch: the counter at its start, the partials from reduce_scratch_parts_at.
static_assert(max_parts * sizeof(Part<double>) + reduce_scratch_parts_at <= reduce_scratch_bytes);
template <class T>
T reduce_values(const T* vals, const std::uint8_t* present, Offset n, MonoidOp op, const Context& ctx,
                const Factor<T>* second = nullptr, const ScalarTarget<T>* to = nullptr) {
    static_assert(sizeof(Part<T>) <= sizeof(Part<double>));
    if (n == 0) {
        if (to) {  // no term: the pass over no parts leaves `none`, after any earlier write to the cell
            RangePass<T> empty;
            empty.nranges = 1;
            empty.parts_out = to->cell;
            reduce_ranges(empty, op, ctx);
        }
        return monoid_identity<T>(op);
    }
    // Ranges of at least `threads` entries and at most max_parts of them: one term per thread up to 10^6 terms.
    const Offset range = std::max<Offset>(threads, (n + max_parts - 1) / max_parts);
    const Offset nparts = (n + range - 1) / range;
    Array<Part<T>> parts(to ? 0 : nparts + 1, ctx);  // + the final result
    Part<T>* pp = to ? reinterpret_cast<Part<T>*>(static_cast<char*>(to->scratch) + reduce_scratch_parts_at) : parts.data();
    RangePass<T> first;
    first.nranges = nparts;
    first.n = n;
    first.vals = vals;
    first.present = present;
    if (second) {
        first.vals2 = second->vals;
        first.present2 = second->present;
        first.multiply = second->multiply;
    }
    first.parts_out = pp;
    if (to) {
        if (nparts == 1) {
            // One block: its part is the result, written to the cell with no ticket, whose two fences and atomic
            // each call had paid (H200: personalized PageRank's largest change over 64 seeds, an iteration
            // 2.5-4 us shorter on five of six graphs, deezer_HU 0.059 -> 0.056 ms; R-MAT 18 equal).
            first.parts_out = to->cell;
        } else {
            first.ticket = static_cast<unsigned*>(to->scratch);
            first.final_out = to->cell;
        }
        reduce_ranges(first, op, ctx);  // nparts <= max_parts blocks: one per range
        return T{};
    }
    reduce_ranges(first, op, ctx);
    RangePass<T> last;
    last.nranges = 1;
    last.n = nparts;
    last.parts_in = pp;
    last.parts_out = pp + nparts;
    reduce_ranges(last, op, ctx);
    Part<T> r;
    copy_to_host(&r, pp + nparts, 1, ctx);
    return r.pos == none ? monoid_identity<T>(op) : r.val;
}

}  // namespace

template <class T>
Vector<T> reduce_rows(const Matrix<T>& a, MonoidOp op) {
    const Context& ctx = a.context();
    const Index n = a.nrows();
    const Offset* off = a.storage_offsets().data();
    const T* av = a.storage_values().data();
    Array<T> out(n, ctx);
    Array<std::uint8_t> bm(n, ctx);
    if (n == 0) return Vector<T>::adopt(0, 0, true, Array<Index>(0, ctx), std::move(out), std::move(bm));

    // At most nnz / (long_row + 1) rows are long.
    const Offset max_long = a.nvals() / (long_row + 1) + 1;
    Array<unsigned long long> counters(2, ctx);
    check(cudaMemsetAsync(counters.data(), 0, 2 * sizeof(unsigned long long), stream_of(ctx)), "cudaMemsetAsync");
    Array<Index> long_rows(max_long, ctx);
    {
        const Index blocks = std::min<Index>((n + threads / warp_size - 1) / (threads / warp_size), Index(1) << 20);
        reduce_rows_kernel<T><<<unsigned(blocks), threads, 0, stream_of(ctx)>>>(
            off, av, n, op, out.data(), bm.data(), counters.data(), long_rows.data());
        check_launch("reduce_rows");
    }
    unsigned long long cnt[2];
    copy_to_host(cnt, counters.data(), 2, ctx);
    const Offset nlong = cnt[1];

    if (nlong > 0) {
        Array<OffsetPair> d_chunks, d_runs;
        long_row_tables(off, long_rows.data(), nlong, d_chunks, d_runs, ctx);
        Array<Part<T>> parts(d_chunks.size(), ctx);
        RangePass<T> first;
        first.nranges = d_chunks.size();
        first.table = d_chunks.data();
        first.vals = av;
        first.parts_out = parts.data();
        reduce_ranges(first, op, ctx);
        RangePass<T> last;
        last.nranges = nlong;
        last.table = d_runs.data();
        last.parts_in = parts.data();
        last.rows = long_rows.data();
        last.out = out.data();
        reduce_ranges(last, op, ctx);
    }
    return Vector<T>::adopt(n, cnt[0], true, Array<Index>(0, ctx), std::move(out), std::move(bm));
}

namespace {
// With `to` given, the result goes to its cell and the value returned means nothing (reduce_values).
// A dense vector's presence bytes, or nullptr when it has none (every entry present).
template <class T>
const std::uint8_t* present_of(const Vector<T>& x) {
    return x.storage_bitmap().size() == x.size() ? x.storage_bitmap().data() : nullptr;
}
template <class T>
T vector_values(const Vector<T>& a, MonoidOp op, const Factor<T>* second, const ScalarTarget<T>* to) {
    if (a.is_dense())
        return reduce_values<T>(a.storage_values().data(), present_of(a), a.size(), op, a.context(), second, to);
    return reduce_values<T>(a.storage_values().data(), nullptr, a.nvals(), op, a.context(), second, to);
}
template <class T>
Factor<T> second_factor(const Vector<T>& v, SemiringCode sr) {
    return {v.storage_values().data(), present_of(v), sr.multiply};
}
}  // namespace

template <class T>
T reduce_all(const Matrix<T>& a, MonoidOp op) {
    return reduce_values<T>(a.storage_values().data(), nullptr, a.nvals(), op, a.context());
}
template <class T>
void reduce_all(const Matrix<T>& a, MonoidOp op, ScalarTarget<T> to) {
    reduce_values<T>(a.storage_values().data(), nullptr, a.nvals(), op, a.context(), nullptr, &to);
}
template <class T>
T reduce_all(const Vector<T>& a, MonoidOp op) {
    return vector_values<T>(a, op, nullptr, nullptr);
}
template <class T>
void reduce_all(const Vector<T>& a, MonoidOp op, ScalarTarget<T> to) {
    vector_values<T>(a, op, nullptr, &to);
}
// u and v are dense (the front end's condition).
template <class T>
T inner(const Vector<T>& u, const Vector<T>& v, SemiringCode sr) {
    const Factor<T> second = second_factor(v, sr);
    return vector_values<T>(u, sr.add, &second, nullptr);
}
template <class T>
void inner(const Vector<T>& u, const Vector<T>& v, SemiringCode sr, ScalarTarget<T> to) {
    const Factor<T> second = second_factor(v, sr);
    vector_values<T>(u, sr.add, &second, &to);
}

#define HYBLA_X(T)                                                                           \
    template Vector<T> reduce_rows<T>(const Matrix<T>&, MonoidOp);                           \
    template T reduce_all<T>(const Matrix<T>&, MonoidOp);                                    \
    template T reduce_all<T>(const Vector<T>&, MonoidOp);                                    \
    template T inner<T>(const Vector<T>&, const Vector<T>&, SemiringCode);                   \
    template void reduce_all<T>(const Matrix<T>&, MonoidOp, ScalarTarget<T>);                \
    template void reduce_all<T>(const Vector<T>&, MonoidOp, ScalarTarget<T>);                \
    template void inner<T>(const Vector<T>&, const Vector<T>&, SemiringCode, ScalarTarget<T>);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
