// Labels numbered compactly on the GPU, and the label indicator's rows (engine/labels.hpp, hybla::indicator).
//
// The labels are uploaded as they are (one copy) and their range read back (16 bytes). Within a range of at
// most 4n + 1024 values: a table over the range holds each label's first vertex (atomicMin); an exclusive scan
// of "v is its label's first vertex" (first appearance) or of "x is a label" (value order) numbers the labels;
// each vertex then reads its number (Sᵀ's column). S's rows are a stable radix sort of the vertices by number
// (CUB, only the bits of k), its offsets a search per row. The host waits three times: the upload, the range,
// the count k; the labels of the numbers come back at the end. The copies go through page-locked memory kept
// per thread (up to 64 MiB): copies through pageable memory took 9-24 us each on an H100's host (2026-11-27).
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstring>

#include "engine/cuda/labels.hpp"
#include "engine/cuda/structure/keys.cuh"

namespace hybla::cuda {

namespace {

using namespace keys;
constexpr std::uint32_t empty = ~std::uint32_t(0);

// The least and greatest word (after XOR with flip): a block's, then one atomic each, the least as the
// greatest of complements (both start at zero).
template <class W>
__global__ void range_kernel(const W* w, std::uint64_t n, W flip, unsigned long long* out) {
    W lo = ~W(0), hi = 0;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        const W x = w[i] ^ flip;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    using Reduce = cub::BlockReduce<W, block_size>;
    __shared__ typename Reduce::TempStorage lo_tmp, hi_tmp;
    const W block_lo = Reduce(lo_tmp).Reduce(lo, [](W a, W b) { return a < b ? a : b; });
    const W block_hi = Reduce(hi_tmp).Reduce(hi, [](W a, W b) { return a > b ? a : b; });
    if (threadIdx.x == 0) {
        atomicMax(out, ~static_cast<unsigned long long>(block_lo));
        atomicMax(out + 1, static_cast<unsigned long long>(block_hi));
    }
}

// 1 where vertex v is the first of its label (first appearance), or where slot x holds a label (value order).
template <class W>
struct FirstOfLabel {
    const W* w;
    W flip, base;
    const std::uint32_t* first;
    __device__ std::uint32_t operator()(std::uint64_t v) const {
        return first[(w[v] ^ flip) - base] == std::uint32_t(v);
    }
};
struct Occupied {
    const std::uint32_t* first;
    __device__ std::uint32_t operator()(std::uint64_t x) const { return first[x] != empty; }
};

// Page-locked host memory kept per thread for the labels' way up and the results' way back (nullptr beyond
// 64 MiB: such calls copy through pageable memory).
struct Staging {
    void* p = nullptr;
    std::size_t bytes = 0;
    Staging() = default;
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;
    ~Staging() {
        if (p) cudaFreeHost(p);
    }
};
void* staging(std::size_t bytes) {
    if (bytes > (std::size_t(64) << 20)) return nullptr;
    thread_local Staging s;
    if (s.bytes < bytes) {
        if (s.p) cudaFreeHost(s.p);
        s.p = nullptr;
        s.bytes = 0;
        const std::size_t want = std::max(bytes, std::size_t(1) << 20);
        check(cudaHostAlloc(&s.p, want, cudaHostAllocPortable), "cudaHostAlloc (label staging)");
        s.bytes = want;
    }
    return s.p;
}
// Copies bytes of device memory to host memory through `stage` (page-locked; none: straight, pageable).
void to_host(void* dst, const void* src, std::size_t bytes, void* stage, const Context& ctx) {
    if (bytes == 0) return;
    if (!stage) {
        copy(dst, src, bytes, CopyKind::device_to_host, ctx.stream());
        return;
    }
    check(cudaMemcpyAsync(stage, src, bytes, cudaMemcpyDeviceToHost, stream_of(ctx)), "cudaMemcpyAsync (labels)");
    check(cudaStreamSynchronize(stream_of(ctx)), "cudaStreamSynchronize (labels)");
    std::memcpy(dst, stage, bytes);
}

template <class Flag>
void exclusive_flag_scan(Flag flag, std::uint32_t* out, std::uint64_t n, const Context& ctx) {
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), flag);
    const auto items = static_cast<std::int64_t>(n);
    std::size_t bytes = 0;
    check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, items, stream_of(ctx)), "DeviceScan (size)");
    Array<std::uint8_t> temp(std::max<std::size_t>(bytes, 1), ctx);
    check(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, in, out, items, stream_of(ctx)), "DeviceScan (labels)");
}

// S's rows from Sᵀ's columns: keys = each vertex's number, vals = the vertex; sorted stably by key.
void indicator_rows(Array<ColIndex>& keys, Array<ColIndex>& vals, Index n, Index k, LabelNumbering& r,
                    const Context& ctx) {
    const int bits = bits_for(k);
    if (bits > 0) {
        Array<ColIndex> k2(n, ctx), v2(n, ctx);
        cub::DoubleBuffer<ColIndex> kb(keys.data(), k2.data()), vb(vals.data(), v2.data());
        const auto items = static_cast<std::int64_t>(n);
        std::size_t bytes = 0;
        check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kb, vb, items, 0, bits, stream_of(ctx)),
              "DeviceRadixSort (size)");
        Array<std::uint8_t> temp(std::max<std::size_t>(bytes, 1), ctx);
        check(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, kb, vb, items, 0, bits, stream_of(ctx)),
              "DeviceRadixSort (labels)");
        if (kb.Current() != keys.data()) std::swap(keys, k2);
        if (vb.Current() != vals.data()) std::swap(vals, v2);
    }
    r.s_offsets = Array<Offset>(k + 1, ctx);
    Offset* o = r.s_offsets.data();
    const ColIndex* sorted = keys.data();
    for_each(k + 1, ctx, "indicator (row offsets)", [=] __device__(std::uint64_t c) {
        o[c] = c == k ? Offset(n) : Offset(lower_bound(sorted, 0, n, ColIndex(c)));
    });
    r.s_cols = std::move(vals);
}

template <class W>
LabelNumbering number(const W* host, Index n, W flip, bool value_order, const Context& ctx) {
    LabelNumbering r;
    if (n >= empty) return r;  // vertex numbers would meet the table's empty mark
    // The upload, and the way back of up to n words, through one page-locked buffer.
    void* stage = staging(2 * n * sizeof(W) + 64);
    void* back = stage ? static_cast<char*>(stage) + n * sizeof(W) : nullptr;
    Array<W> words(n, ctx);
    Array<unsigned long long> range(2, 0ull, ctx);  // (made before the upload: nothing throws while it reads stage)
    if (stage) {
        std::memcpy(stage, host, n * sizeof(W));
        check(cudaMemcpyAsync(words.data(), stage, n * sizeof(W), cudaMemcpyHostToDevice, stream_of(ctx)),
              "cudaMemcpyAsync (labels)");
    } else {
        words.copy_from(host, Context::cpu(), n);
    }
    const W* w = words.data();
    range_kernel<W><<<std::min(grid_for(n), 2048u), block_size, 0, stream_of(ctx)>>>(w, n, flip, range.data());
    check_launch("indicator (range)");
    unsigned long long got[2];
    to_host(got, range.data(), sizeof got, back, ctx);
    const W base = W(~got[0]), span = W(W(got[1]) - base);
    if (!detail::table_range(span, n)) return r;

    // Each label's first vertex, in a table over the range.
    Array<std::uint32_t> first(std::uint64_t(span) + 1, empty, ctx);
    std::uint32_t* f = first.data();
    for_each(n, ctx, "indicator (first vertices)",
             [=] __device__(std::uint64_t v) { atomicMin(f + ((w[v] ^ flip) - base), std::uint32_t(v)); });

    // The numbers, an exclusive scan: of the occupied slots (value order: slot x's label is numbered rank[x]),
    // or of the vertices first of their label (vertex v's label is numbered rank[first[x]]). Then the label of
    // each number, and k.
    const std::uint64_t slots = std::uint64_t(span) + 1;
    Array<std::uint32_t> rank(value_order ? slots : n, ctx), count(1, ctx);
    Array<W> numbered(std::min<std::uint64_t>(n, slots), ctx);
    std::uint32_t* rk = rank.data();
    std::uint32_t* kc = count.data();
    W* lw = numbered.data();
    if (value_order) {
        exclusive_flag_scan(Occupied{f}, rk, slots, ctx);
        for_each(slots, ctx, "indicator (labels by value)", [=] __device__(std::uint64_t x) {
            if (f[x] != empty) lw[rk[x]] = W(x + base) ^ flip;
            if (x == slots - 1) *kc = rk[x] + 1;  // the greatest label is at the last slot
        });
    } else {
        exclusive_flag_scan(FirstOfLabel<W>{w, flip, base, f}, rk, n, ctx);
        for_each(n, ctx, "indicator (labels by first vertex)", [=] __device__(std::uint64_t v) {
            const bool head = f[(w[v] ^ flip) - base] == std::uint32_t(v);
            if (head) lw[rk[v]] = w[v];
            if (v == n - 1) *kc = rk[v] + head;
        });
    }
    std::uint32_t k32 = 0;
    to_host(&k32, count.data(), sizeof k32, back, ctx);
    const Index k = k32;

    // Sᵀ's columns, and the keys and vertices S's rows are sorted from.
    r.st_cols = Array<ColIndex>(n, ctx);
    Array<ColIndex> keys(n, ctx), vals(n, ctx);
    ColIndex* sc = r.st_cols.data();
    ColIndex* kk = keys.data();
    ColIndex* vv = vals.data();
    for_each(n, ctx, "indicator (columns)", [=] __device__(std::uint64_t v) {
        const W x = (w[v] ^ flip) - base;
        const ColIndex c = value_order ? rk[x] : rk[f[x]];
        sc[v] = c;
        kk[v] = c;
        vv[v] = ColIndex(v);
    });
    indicator_rows(keys, vals, n, k, r, ctx);

    std::vector<W> labels(k);
    to_host(labels.data(), numbered.data(), k * sizeof(W), back, ctx);
    r.words.assign(labels.begin(), labels.end());
    r.numbered = true;
    return r;
}

}  // namespace

LabelNumbering number_labels(const void* labels, std::size_t word_bytes, Index n, std::uint64_t flip,
                             bool value_order, const Context& ctx) {
    if (word_bytes == 4)
        return number(static_cast<const std::uint32_t*>(labels), n, std::uint32_t(flip), value_order, ctx);
    if (word_bytes == 8) return number(static_cast<const std::uint64_t*>(labels), n, flip, value_order, ctx);
    throw InvalidValue("indicator: labels of 4 or 8 bytes on the GPU, got " + std::to_string(word_bytes));
}

}  // namespace hybla::cuda
