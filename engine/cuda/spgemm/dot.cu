// C<M> = A ⊕.⊗ op(B) by one sparse dot product per entry of the mask (SuiteSparse:GraphBLAS's dot3), for a mask
// that is not complemented and an op(B) whose columns are at hand as the rows of a CSR matrix bt (B itself when
// the product is A·Bᵀ: triangle counting's C<L> = L·Uᵀ). The work is proportional to the mask, not to the
// products. The cost rule is the CPU backend's (engine/cpu/spgemm.hpp): dot work Σ over the mask of
// min(|A(i,:)| + |bt(j,:)|, 8·min + 8) against 8 x the products.
//
// A thread per mask entry walks the shorter of A(i,:) and bt(j,:) and finds each column in the longer one by a
// binary search from where the last one was found; terms fold in k order, the CPU's merge order, so floating sums
// are bit for bit the CPU's. Entries with no common k are dropped; a second pass compacts the rest in mask order
// (columns sorted).
#include <cuda_runtime.h>

#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cstdint>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/cuda/spgemm/scratch.cuh"
#include "engine/matrix.hpp"
#include "engine/trace.hpp"

namespace hybla::cuda {
namespace dot {
namespace {

using spgemm_detail::exclusive_sum;
using spgemm_detail::Scratch;

constexpr unsigned block_size = 256;
constexpr unsigned full_mask = 0xFFFFFFFFu;
cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }
void check(cudaError_t e, const char* what) { checked(int(e), what); }
void check_launch(const char* what) { check(cudaGetLastError(), what); }
unsigned grid_for(std::uint64_t n) {
    return unsigned(std::clamp<std::uint64_t>((n + block_size - 1) / block_size, 1, std::uint64_t(1) << 20));
}
__device__ inline std::uint64_t thread_index() { return blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; }
__device__ inline std::uint64_t thread_count() { return std::uint64_t(gridDim.x) * blockDim.x; }

// The row holding entry p of a CSR pattern with rows + 1 offsets.
__device__ inline std::uint64_t row_of(const Offset* off, std::uint64_t rows, std::uint64_t p) {
    std::uint64_t lo = 0, hi = rows;  // off[lo] <= p < off[hi]
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        if (off[mid] <= p) lo = mid;
        else hi = mid;
    }
    return lo;
}

// The first position in [b, e) whose column is at least j.
__device__ inline Offset lower_bound(const ColIndex* cols, Offset b, Offset e, ColIndex j) {
    while (b < e) {
        const Offset mid = b + (e - b) / 2;
        if (cols[mid] < j) b = mid + 1;
        else e = mid;
    }
    return b;
}

// Column degrees of bt (op(B)'s row lengths).
__global__ void col_degree_kernel(Offset nnz, const ColIndex* cols, Offset* deg) {
    for (std::uint64_t p = thread_index(); p < nnz; p += thread_count())
        atomicAdd(reinterpret_cast<unsigned long long*>(deg + cols[p]), 1ull);
}

// work[0] += the dot work of each mask entry; work[1] += op(B)'s row length of each entry of A (the products).
__global__ void work_kernel(Index m, const Offset* m_off, const ColIndex* m_cols, const Offset* a_off,
                            const ColIndex* a_cols, const Offset* bt_off, const Offset* b_deg,
                            unsigned long long* work) {
    unsigned long long dot = 0, saxpy = 0;
    for (std::uint64_t p = thread_index(); p < m_off[m]; p += thread_count()) {
        const std::uint64_t i = row_of(m_off, m, p);
        const ColIndex j = m_cols[p];
        const Offset la = a_off[i + 1] - a_off[i], lb = bt_off[j + 1] - bt_off[j];
        dot += std::min<Offset>(la + lb, 8 * std::min(la, lb) + 8);
    }
    for (std::uint64_t p = thread_index(); p < a_off[m]; p += thread_count()) saxpy += b_deg[a_cols[p]];
    for (unsigned d = 16; d > 0; d >>= 1) {
        dot += __shfl_down_sync(full_mask, dot, d);
        saxpy += __shfl_down_sync(full_mask, saxpy, d);
    }
    if ((threadIdx.x & 31) == 0) {
        if (dot) atomicAdd(work, dot);
        if (saxpy) atomicAdd(work + 1, saxpy);
    }
}

// vals[p], present[p] for each mask entry p: ⊕ over the k of both A(i,:) and bt(j,:) of A(i,k) ⊗ bt(j,k).
template <class T, class Sr>
__global__ void dot_kernel(Index m, const Offset* m_off, const ColIndex* m_cols, const Offset* a_off,
                           const ColIndex* a_cols, const T* a_vals, const Offset* bt_off, const ColIndex* bt_cols,
                           const T* bt_vals, T* vals, std::uint8_t* present, Sr sr) {
    const Offset total = m_off[m];
    for (std::uint64_t p = thread_index(); p < total; p += thread_count()) {
        const std::uint64_t i = row_of(m_off, m, p);
        const ColIndex j = m_cols[p];
        const Offset ab = a_off[i], ae = a_off[i + 1], bb = bt_off[j], be = bt_off[j + 1];
        bool found = false;
        T acc{};
        auto term = [&](T x, T y) {
            const T t = sr.template multiply<T>(x, y);
            acc = found ? sr.template add<T>(acc, t) : t;
            found = true;
        };
        if (ae - ab <= be - bb) {
            Offset q = bb;
            for (Offset x = ab; x < ae && q < be; ++x) {
                q = lower_bound(bt_cols, q, be, a_cols[x]);
                if (q < be && bt_cols[q] == a_cols[x]) term(a_vals[x], bt_vals[q++]);
            }
        } else {
            Offset x = ab;
            for (Offset q = bb; q < be && x < ae; ++q) {
                x = lower_bound(a_cols, x, ae, bt_cols[q]);
                if (x < ae && a_cols[x] == bt_cols[q]) term(a_vals[x++], bt_vals[q]);
            }
        }
        vals[p] = acc;
        present[p] = found;
    }
}

// count[i] = present entries of mask row i (a warp per row); count[m] = 0.
__global__ void count_kernel(Index m, const Offset* m_off, const std::uint8_t* present, Offset* count) {
    const unsigned lane = threadIdx.x & 31;
    for (std::uint64_t i = thread_index() / 32; i <= m; i += thread_count() / 32) {
        if (i == m) {
            if (lane == 0) count[m] = 0;
            continue;
        }
        Offset c = 0;
        for (Offset p = m_off[i] + lane; p < m_off[i + 1]; p += 32) c += present[p];
        for (unsigned d = 16; d > 0; d >>= 1) c += __shfl_down_sync(full_mask, c, d);
        if (lane == 0) count[i] = c;
    }
}

// The present entries of each row, in mask order (a warp per row).
template <class T>
__global__ void compact_kernel(Index m, const Offset* m_off, const ColIndex* m_cols, const std::uint8_t* present,
                               const T* vals, const Offset* c_off, ColIndex* c_cols, T* c_vals) {
    const unsigned lane = threadIdx.x & 31;
    for (std::uint64_t i = thread_index() / 32; i < m; i += thread_count() / 32) {
        Offset at = c_off[i];
        for (Offset p0 = m_off[i]; p0 < m_off[i + 1]; p0 += 32) {
            const Offset p = p0 + lane;
            const bool keep = p < m_off[i + 1] && present[p];
            const unsigned ballot = __ballot_sync(full_mask, keep);
            if (keep) {
                const Offset out = at + __popc(ballot & ((1u << lane) - 1));
                c_cols[out] = m_cols[p];
                c_vals[out] = vals[p];
            }
            at += __popc(ballot);
        }
    }
}

template <class T, class Sr>
Matrix<T> multiply(const Matrix<T>& a, const Matrix<T>& bt, const Sr& sr, const MaskPattern& mask) {
    const Context& ctx = a.context();
    const Index m = a.nrows(), n = bt.nrows();
    const cudaStream_t stream = stream_of(ctx);
    Offset total = 0;
    cuda::copy(&total, mask.offsets + m, sizeof(Offset), CopyKind::device_to_host, ctx.stream());
    if (m == 0 || n == 0 || total == 0 || a.nvals() == 0 || bt.nvals() == 0) return Matrix<T>(m, n, ctx);
    Array<T> vals(total, ctx);
    Array<std::uint8_t> present(total, ctx);
    dot_kernel<T, Sr><<<grid_for(total), block_size, 0, stream>>>(
        m, mask.offsets, mask.cols, a.storage_offsets().data(), a.storage_indices().data(), a.storage_values().data(),
        bt.storage_offsets().data(), bt.storage_indices().data(), bt.storage_values().data(), vals.data(),
        present.data(), sr);
    check_launch("SpGEMM (dot): dot kernel");
    Scratch scratch(ctx);
    Array<Offset> count(m + 1, ctx), c_off(m + 1, ctx);
    count_kernel<<<grid_for((m + 1) * 32), block_size, 0, stream>>>(m, mask.offsets, present.data(), count.data());
    check_launch("SpGEMM (dot): count kernel");
    exclusive_sum(count.data(), c_off.data(), m + 1, scratch, ctx);
    const Offset nnz = c_off.get(m);
    if (nnz == 0) return Matrix<T>(m, n, ctx);
    Array<ColIndex> c_cols(nnz, ctx);
    Array<T> c_vals(nnz, ctx);
    compact_kernel<T><<<grid_for(m * 32), block_size, 0, stream>>>(m, mask.offsets, mask.cols, present.data(),
                                                                  vals.data(), c_off.data(), c_cols.data(),
                                                                  c_vals.data());
    check_launch("SpGEMM (dot): compact kernel");
    return Matrix<T>::adopt_csr(m, n, nnz, std::move(c_off), std::move(c_cols), std::move(c_vals));
}

}  // namespace
}  // namespace dot

template <class T>
bool spgemm_dot_preferred(const Matrix<T>& a, const Matrix<T>& bt, const MaskPattern& mask) {
    if (const char* e = std::getenv("HYBLA_SPGEMM_DOT"); e && (*e == '0' || *e == '1')) return *e == '1';
    const Context& ctx = a.context();
    const Index m = a.nrows();
    if (m == 0 || a.nvals() == 0 || bt.nvals() == 0) return false;
    const cudaStream_t stream = dot::stream_of(ctx);
    Array<Offset> deg(a.ncols(), ctx);
    Array<unsigned long long> work(2, ctx);
    dot::check(cudaMemsetAsync(deg.data(), 0, deg.size() * sizeof(Offset), stream), "SpGEMM (dot): memset");
    dot::check(cudaMemsetAsync(work.data(), 0, 2 * sizeof(unsigned long long), stream), "SpGEMM (dot): memset");
    dot::col_degree_kernel<<<dot::grid_for(bt.nvals()), dot::block_size, 0, stream>>>(
        bt.nvals(), bt.storage_indices().data(), deg.data());
    dot::check_launch("SpGEMM (dot): column degree kernel");
    dot::work_kernel<<<dot::grid_for(std::max<Offset>(a.nvals(), 1)), dot::block_size, 0, stream>>>(
        m, mask.offsets, mask.cols, a.storage_offsets().data(), a.storage_indices().data(),
        bt.storage_offsets().data(), deg.data(), work.data());
    dot::check_launch("SpGEMM (dot): work kernel");
    unsigned long long w[2];
    cuda::copy(w, work.data(), sizeof w, CopyKind::device_to_host, ctx.stream());
    const bool dot = w[0] < 8 * w[1];
    trace("cuda spgemm: masked, dot work %llu %s saxpy work %llu", w[0], dot ? "<" : ">=", 8 * w[1]);
    return dot;
}

template <class T>
Matrix<T> spgemm_dot(const Matrix<T>& a, const Matrix<T>& bt, SemiringCode sr, const MaskPattern& mask) {
    if (a.ncols() != bt.ncols())
        throw DimensionMismatch("SpGEMM (dot): A has " + std::to_string(a.ncols()) + " columns, Bᵀ " +
                                std::to_string(bt.ncols()));
    if constexpr (std::is_floating_point_v<T>) {
        if (sr.add == MonoidOp::plus && sr.multiply == BinaryOp::times) return dot::multiply(a, bt, PlusTimes{}, mask);
    }
    return dot::multiply(a, bt, RuntimeSemiring{sr}, mask);
}

#define HYBLA_SPGEMM_DOT_INSTANTIATE(T)                                                                        \
    template bool spgemm_dot_preferred<T>(const Matrix<T>&, const Matrix<T>&, const MaskPattern&);             \
    template Matrix<T> spgemm_dot<T>(const Matrix<T>&, const Matrix<T>&, SemiringCode, const MaskPattern&);
HYBLA_CUDA_VALUE_TYPES(HYBLA_SPGEMM_DOT_INSTANTIATE)
#undef HYBLA_SPGEMM_DOT_INSTANTIATE

}  // namespace hybla::cuda
