// Labels numbered compactly on the GPU, and the label indicator's rows (engine/labels.hpp, hybla::indicator).
//
// The labels are uploaded as they are (one copy). A table of 4n + 1024 slots (the widest range numbered by a
// table) is cleared while the labels' range is reduced; the kernels after read the range where the reduction
// left it, so the host does not wait for it. Over the range, the table holds each label's first vertex
// (atomicMin); an exclusive scan of "v is its label's first vertex" (first appearance) or of "x is a label"
// (value order) numbers the labels; each vertex then reads its number (Sᵀ's column), and Sᵀ's offsets and the
// ones of S and Sᵀ are written in the same pass. The host waits twice: for the count k and the range (a range
// too wide for the table sends the labels to the host, the kernels having done nothing), and for the labels of
// the numbers at the end. S's rows are a stable radix sort of the vertices by number (CUB, only the bits of k),
// its offsets a search per row. The temporaries share one allocation. The copies go through page-locked memory
// kept per thread (up to 64 MiB): copies through pageable memory took 9-24 us each on an H100's host.
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "engine/cuda/carve.hpp"
#include "engine/cuda/labels.hpp"
#include "engine/cuda/structure/keys.cuh"

namespace hybla::cuda {

namespace {

using namespace keys;
constexpr std::uint32_t empty = ~std::uint32_t(0);

// Where the range reduction leaves the least word (as the greatest complement) and the greatest, and the count
// of labels; cleared before it.
struct Header {
    unsigned long long range[2];
    std::uint32_t k;
};
// Where the labels of the numbers go in the staging buffer (past the header's copy).
constexpr std::size_t words_at = 64;

// The labels' range as the kernels after the reduction read it: false where it is too wide for the table of
// `slots` slots (those kernels then do nothing).
template <class W>
struct Range {
    const Header* h;
    std::uint64_t slots;
    __device__ bool read(W& base) const {
        base = W(~h->range[0]);
        return std::uint64_t(W(W(h->range[1]) - base)) < slots;
    }
};

// The least and greatest word (after XOR with flip): a block's, then one atomic each, the least as the
// greatest of complements (both start at zero). The table's slots are cleared in the same pass.
template <class W>
__global__ void range_kernel(const W* w, std::uint64_t n, W flip, Header* out, std::uint32_t* table,
                             std::uint64_t slots) {
    W lo = ~W(0), hi = 0;
    const std::uint64_t items = n > slots ? n : slots;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < items;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        if (i < slots) table[i] = empty;
        if (i >= n) continue;
        const W x = w[i] ^ flip;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
    }
    using Reduce = cub::BlockReduce<W, block_size>;
    __shared__ typename Reduce::TempStorage lo_tmp, hi_tmp;
    const W block_lo = Reduce(lo_tmp).Reduce(lo, [](W a, W b) { return a < b ? a : b; });
    const W block_hi = Reduce(hi_tmp).Reduce(hi, [](W a, W b) { return a > b ? a : b; });
    if (threadIdx.x == 0) {
        atomicMax(&out->range[0], ~static_cast<unsigned long long>(block_lo));
        atomicMax(&out->range[1], static_cast<unsigned long long>(block_hi));
    }
}

// 1 where vertex v is the first of its label (first appearance), or where slot x holds a label (value order).
template <class W>
struct FirstOfLabel {
    const W* w;
    W flip;
    Range<W> range;
    const std::uint32_t* first;
    __device__ std::uint32_t operator()(std::uint64_t v) const {
        W base;
        return range.read(base) && first[(w[v] ^ flip) - base] == std::uint32_t(v);
    }
};
struct Occupied {
    const std::uint32_t* first;
    __device__ std::uint32_t operator()(std::uint64_t x) const { return first[x] != empty; }
};

// Writes the value one (its low `bytes` bytes of bits) at a[v] and b[v].
__device__ inline void write_one(const Ones& o, std::uint64_t v) {
    switch (o.bytes) {
    case 1:
        static_cast<std::uint8_t*>(o.a)[v] = std::uint8_t(o.bits);
        static_cast<std::uint8_t*>(o.b)[v] = std::uint8_t(o.bits);
        break;
    case 2:
        static_cast<std::uint16_t*>(o.a)[v] = std::uint16_t(o.bits);
        static_cast<std::uint16_t*>(o.b)[v] = std::uint16_t(o.bits);
        break;
    case 4:
        static_cast<std::uint32_t*>(o.a)[v] = std::uint32_t(o.bits);
        static_cast<std::uint32_t*>(o.b)[v] = std::uint32_t(o.bits);
        break;
    case 8:
        static_cast<std::uint64_t*>(o.a)[v] = o.bits;
        static_cast<std::uint64_t*>(o.b)[v] = o.bits;
        break;
    default:
        break;
    }
}

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
    if (dst != stage) std::memcpy(dst, stage, bytes);
}
// Waits for the stream where a call unwinds: an upload still reading the staging buffer would race with the
// thread's next call.
struct DrainOnThrow {
    cudaStream_t s;
    int unwinding = std::uncaught_exceptions();
    ~DrainOnThrow() {
        if (std::uncaught_exceptions() > unwinding) cudaStreamSynchronize(s);
    }
};

// The scan of flag(0 .. n-1) into out: its temporary storage's bytes (temp null), or the scan.
template <class Flag>
std::size_t exclusive_flag_scan(void* temp, std::size_t bytes, Flag flag, std::uint32_t* out, std::uint64_t n,
                                const Context& ctx) {
    auto in = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), flag);
    check(cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, static_cast<std::int64_t>(n), stream_of(ctx)),
          "DeviceScan (labels)");
    return bytes;
}

// The stable radix sort of S's rows (keys: each vertex's number, of `bits` bits; values: the vertex): its
// temporary storage's bytes (temp null), or the sort.
std::size_t sort_rows(void* temp, std::size_t bytes, cub::DoubleBuffer<ColIndex>& keys,
                      cub::DoubleBuffer<ColIndex>& vals, Index n, int bits, const Context& ctx) {
    check(cub::DeviceRadixSort::SortPairs(temp, bytes, keys, vals, static_cast<std::int64_t>(n), 0, bits,
                                          stream_of(ctx)),
          "DeviceRadixSort (labels)");
    return bytes;
}

template <class W>
LabelNumbering number(const W* labels, bool on_device, Index n, W flip, bool value_order, Ones ones,
                      const Context& ctx) {
    LabelNumbering r;
    if (n >= empty) return r;  // vertex numbers would meet the table's empty mark
    const std::uint64_t slots = 4 * std::uint64_t(n) + 1024;  // the widest range a table numbers, plus one
    const std::uint64_t items = value_order ? slots : n;     // what the scan runs over

    // The temporaries in one allocation (CUB aligns its storage itself), the outputs in their own.
    Header* header;
    std::uint32_t *f, *rk;
    W *lw, *uploaded = nullptr;
    ColIndex *kk, *kk2;
    std::uint8_t *scan_temp, *sort_temp;
    const Range<W> range{nullptr, slots};
    const std::size_t scan_bytes =
        value_order ? exclusive_flag_scan(nullptr, 0, Occupied{nullptr}, nullptr, items, ctx)
                    : exclusive_flag_scan(nullptr, 0, FirstOfLabel<W>{nullptr, flip, range, nullptr}, nullptr, items, ctx);
    cub::DoubleBuffer<ColIndex> kb, vb;
    const int most_bits = bits_for(n);
    const std::size_t sort_bytes = most_bits > 0 ? sort_rows(nullptr, 0, kb, vb, n, most_bits, ctx) : 0;
    Carve carve(ctx, "indicator: temporaries");
    carve.take(header, 1);
    carve.take(f, slots);
    carve.take(rk, items);
    carve.take(lw, n);
    if (!on_device) carve.take(uploaded, n);
    carve.take(kk, n);
    carve.take(kk2, n);
    carve.take(scan_temp, scan_bytes);
    carve.take(sort_temp, sort_bytes);
    carve.allocate();
    r.st_offsets = Array<Offset>(n + 1, ctx);
    r.st_cols = Array<ColIndex>(n, ctx);
    r.s_cols = Array<ColIndex>(n, ctx);
    Array<ColIndex> vals2(n, ctx);
    const Range<W> rg{header, slots};

    // The upload of host labels (through page-locked memory, which also takes the header and the labels on their
    // way back; labels on the device are read where they are), then the range with the table cleared, and each
    // label's first vertex.
    void* stage = staging(words_at + n * sizeof(W));
    const DrainOnThrow drain{stream_of(ctx)};
    check(cudaMemsetAsync(header, 0, sizeof(Header), stream_of(ctx)), "cudaMemsetAsync (labels)");
    const W* w = on_device ? labels : uploaded;
    // The label of each number goes straight to the page-locked buffer past the header's slot (k <= n words fit),
    // written by the kernel that finds it, so that the one wait for the count and the range brings them too.
    static_assert(sizeof(Header) <= words_at);
    W* words = stage ? reinterpret_cast<W*>(static_cast<char*>(stage) + words_at) : lw;
    if (on_device) {
        // (read in place)
    } else if (stage) {
        std::memcpy(stage, labels, n * sizeof(W));
        check(cudaMemcpyAsync(uploaded, stage, n * sizeof(W), cudaMemcpyHostToDevice, stream_of(ctx)),
              "cudaMemcpyAsync (labels)");
    } else {
        copy(uploaded, labels, n * sizeof(W), CopyKind::host_to_device, ctx.stream());
    }
    range_kernel<W><<<std::min(grid_for(std::max<std::uint64_t>(n, slots)), 2048u), block_size, 0,
                      stream_of(ctx)>>>(w, n, flip, header, f, slots);
    check_launch("indicator (range)");
    for_each(n, ctx, "indicator (first vertices)", [=] __device__(std::uint64_t v) {
        W base;
        if (rg.read(base)) atomicMin(f + ((w[v] ^ flip) - base), std::uint32_t(v));
    });

    // The numbers, an exclusive scan: of the occupied slots (value order: slot x's label is numbered rank[x]),
    // or of the vertices first of their label (vertex v's label is numbered rank[first[x]]). Then the label of
    // each number, and k.
    if (value_order) {
        exclusive_flag_scan(scan_temp, scan_bytes, Occupied{f}, rk, items, ctx);
        for_each(items, ctx, "indicator (labels by value)", [=] __device__(std::uint64_t x) {
            const bool label = f[x] != empty;
            if (label) {
                W base;
                rg.read(base);
                words[rk[x]] = W(x + base) ^ flip;
            }
            if (x == items - 1) header->k = rk[x] + label;
        });
    } else {
        exclusive_flag_scan(scan_temp, scan_bytes, FirstOfLabel<W>{w, flip, rg, f}, rk, items, ctx);
        for_each(n, ctx, "indicator (labels by first vertex)", [=] __device__(std::uint64_t v) {
            W base;
            const bool head = rg.read(base) && f[(w[v] ^ flip) - base] == std::uint32_t(v);
            if (head) words[rk[v]] = w[v];
            if (v == n - 1) header->k = rk[v] + head;
        });
    }

    // Sᵀ (its offsets, columns and ones), S's ones, and the keys and vertices S's rows are sorted from.
    Offset* so = r.st_offsets.data();
    ColIndex* sc = r.st_cols.data();
    ColIndex* vv = r.s_cols.data();
    for_each(n, ctx, "indicator (columns)", [=] __device__(std::uint64_t v) {
        W base;
        if (!rg.read(base)) return;
        const W x = (w[v] ^ flip) - base;
        const ColIndex c = value_order ? rk[x] : rk[f[x]];
        sc[v] = c;
        kk[v] = c;
        vv[v] = ColIndex(v);
        so[v] = v;
        if (v == n - 1) so[n] = n;
        write_one(ones, v);
    });

    // The count and the range; a range too wide goes to the host.
    Header got;
    to_host(&got, header, sizeof got, stage, ctx);
    const W base = W(~got.range[0]), span = W(W(got.range[1]) - base);
    if (!detail::table_range(span, n)) return LabelNumbering{};
    const Index k = got.k;
    // The labels of the numbers, widened as they come out of the staging buffer (written there before the wait).
    r.words.resize(k);
    if (stage) {
        const W* got_words = reinterpret_cast<const W*>(static_cast<const char*>(stage) + words_at);
        for (Index c = 0; c < k; ++c) r.words[c] = got_words[c];
    }

    // S's rows: the vertices sorted stably by number, the offsets a search per row.
    const int bits = bits_for(k);
    if (bits > 0) {
        kb = cub::DoubleBuffer<ColIndex>(kk, kk2);
        vb = cub::DoubleBuffer<ColIndex>(vv, vals2.data());
        std::size_t bytes = sort_rows(nullptr, 0, kb, vb, n, bits, ctx);
        Array<std::uint8_t> more;  // (were fewer bits to need more storage than the most)
        void* temp = sort_temp;
        if (bytes > sort_bytes) {
            more = Array<std::uint8_t>(bytes, ctx);
            temp = more.data();
        }
        sort_rows(temp, bytes, kb, vb, n, bits, ctx);
        kk = kb.Current();
        if (vb.Current() != r.s_cols.data()) std::swap(r.s_cols, vals2);
    }
    r.s_offsets = Array<Offset>(k + 1, ctx);
    Offset* o = r.s_offsets.data();
    const ColIndex* sorted = kk;
    for_each(k + 1, ctx, "indicator (row offsets)", [=] __device__(std::uint64_t c) {
        o[c] = c == k ? Offset(n) : Offset(lower_bound(sorted, 0, n, ColIndex(c)));
    });

    // Without a staging buffer (labels beyond its 64 MiB) the labels of the numbers come back now; otherwise the
    // sort and the offsets are left queued: the temporaries go back to the stream's pool behind them.
    if (!stage) {
        std::vector<W> labels(k);
        to_host(labels.data(), lw, k * sizeof(W), nullptr, ctx);
        r.words.assign(labels.begin(), labels.end());
    }
    r.numbered = true;
    return r;
}

}  // namespace

LabelNumbering number_labels(const void* labels, bool on_device, std::size_t word_bytes, Index n,
                             std::uint64_t flip, bool value_order, Ones ones, const Context& ctx) {
    if (word_bytes == 4)
        return number(static_cast<const std::uint32_t*>(labels), on_device, n, std::uint32_t(flip), value_order,
                      ones, ctx);
    if (word_bytes == 8)
        return number(static_cast<const std::uint64_t*>(labels), on_device, n, flip, value_order, ones, ctx);
    throw InvalidValue("indicator: labels of 4 or 8 bytes on the GPU, got " + std::to_string(word_bytes));
}

}  // namespace hybla::cuda
