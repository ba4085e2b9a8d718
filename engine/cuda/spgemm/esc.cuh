// Expand-sort-compress SpGEMM: the pieces shared by the type-independent driver and the per-type value
// kernels of engine/cuda/spgemm/esc.cu. Nothing outside this folder includes it: the backend's only SpGEMM
// entry point is cuda::spgemm<T> (engine/cuda/backend.hpp), which chooses between it and the hash SpGEMM.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/context.hpp"
#include "engine/cuda/backend.hpp"
#include "engine/cuda/runtime.hpp"

namespace hybla::cuda::esc {

// (row - first row of the batch) << colbits | column: sorting keys sorts products row-major.
using Key = std::uint64_t;
// A product's number within its batch, in expansion order (row, position in A's row, position in B's
// row). A stable sort keeps equal keys in this order, which is the CPU's order of accumulation.
using Slot = std::uint32_t;

inline cudaStream_t stream_of(const Context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }
inline void check(cudaError_t e, const char* what, std::size_t bytes = 0) { checked(int(e), what, bytes); }
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

inline constexpr unsigned block_size = 256;
// Grid-stride loops cover what a capped grid does not.
inline unsigned grid_for(std::uint64_t n, std::uint64_t per_block = block_size) {
    return unsigned(std::clamp<std::uint64_t>((n + per_block - 1) / per_block, 1, std::uint64_t(1) << 20));
}
inline int bits_for(std::uint64_t n) { return n <= 1 ? 0 : int(std::bit_width(n - 1)); }

// The largest p in [b, e) with e_prefix[p] <= g, given e_prefix[b] <= g < e_prefix[e]. A(i,:) entries whose
// B row is empty have e_prefix[p] == e_prefix[p+1] and are never returned.
HYBLA_HD inline Offset entry_of(const Offset* e_prefix, Offset b, Offset e, Offset g) {
    while (e - b > 1) {
        Offset m = b + (e - b) / 2;
        if (e_prefix[m] <= g) b = m;
        else e = m;
    }
    return b;
}

// One batch after expansion, filtering, sorting and run detection: runs[r] is the r-th distinct
// (row, column) of the batch, its products are sorted slots [run_start[r], run_start[r+1] or n).
struct BatchRuns {
    const Key* run_keys;     // runs
    const Slot* slots;       // n, sorted by key, equal keys in expansion order
    const Slot* run_start;   // runs
    std::uint64_t runs = 0, n = 0;
    const Offset* e_prefix;  // over A's entries: products before entry p (global numbering)
    Offset g0 = 0;           // global number of the batch's first product
    Index r0 = 0;            // the batch's first row
    int colbits = 0;
    const Offset* a_offsets;
    const ColIndex* a_cols;
    const Offset* b_offsets;
    Slot* long_runs;         // runs longer than long_run, listed by the short-run kernel
    unsigned* long_count;    // zero on entry
};

// Runs longer than this are combined by a block each (a skewed output entry must not serialise a thread).
inline constexpr std::uint64_t long_run = 128;

// Receives each batch's runs and turns them into values (the typed part of the product).
class RunSink {
public:
    virtual void combine(const BatchRuns& batch, const Context& ctx) = 0;

protected:
    ~RunSink() = default;
};

// The pattern of C = A·B (under the mask), all values left to the sink, batch by batch in row order.
struct Operands {
    Index m = 0, n = 0;
    const Offset* a_offsets = nullptr;
    const ColIndex* a_cols = nullptr;
    Offset a_nnz = 0;
    const Offset* b_offsets = nullptr;
    const ColIndex* b_cols = nullptr;
    Offset b_nnz = 0;
};
struct PatternResult {
    bool empty = true;  // no entries: the caller returns an empty matrix (offsets unset)
    Offset nnz = 0;
    Array<Offset> offsets;
    Array<ColIndex> cols;
};
PatternResult expand_sort_compress(const Operands& x, const MaskPattern* mask, const Context& ctx, RunSink& sink);

// Joins per-batch pieces into one array (moves the single piece when there is one).
template <class T>
Array<T> concatenate(std::vector<Array<T>>& parts, std::size_t total, const Context& ctx) {
    if (parts.size() == 1 && parts[0].size() == total) return std::move(parts[0]);
    Array<T> out(total, ctx);
    std::size_t at = 0;
    for (auto& p : parts) {
        if (!p.empty())
            check(cudaMemcpyAsync(out.data() + at, p.data(), p.size() * sizeof(T), cudaMemcpyDeviceToDevice,
                                  stream_of(ctx)),
                  "SpGEMM: joining batches");
        at += p.size();
        p = Array<T>(0, ctx);
    }
    return out;
}

}  // namespace hybla::cuda::esc
