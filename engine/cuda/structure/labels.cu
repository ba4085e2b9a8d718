// Labels numbered compactly on the GPU, and the label indicator's rows (engine/labels.hpp, hybla::indicator).
//
// The labels are uploaded as they are (one copy; 8-byte labels whose high halves agree as their low halves). A
// table of 4n + 1024 slots (the widest range numbered by a table) is cleared while the labels' range is reduced;
// the kernels after read the range where the reduction left it, so the host does not wait for it. Over the
// range, the table holds each label's first vertex (atomicMin). In order of first appearance one kernel numbers
// the labels (a decoupled look-back over tiles of vertices ranks the first vertices) and each vertex reads its
// number from its label's slot; in value order an exclusive scan of "x is a label" numbers the slots and a
// kernel reads each vertex's. That kernel writes Sᵀ's columns and offsets, the ones of S and Sᵀ, the label of
// each number (by the label's first vertex) and the count k (both also straight into page-locked host memory),
// and counts each number's vertices, giving each vertex a place in its row (an atomic, so not in vertex order).
// Queued next, reading k where that kernel left it: S's offsets (a one-launch scan of the counts), the vertices
// placed in their rows, and each row sorted where it lies, by a warp, or a block (a radix sort in shared memory,
// or a bitmap of the vertices). Then the host waits once, for that kernel: k (none where the range was too wide
// for the table, which sends the labels to the host, the kernels having done nothing) and the labels of the
// numbers are then in host memory, with no copy queued on the stream in between; a row too long
// for a block (over 4096 vertices where n exceeds the bitmap's 327,680) sends all of them to a stable radix sort
// of the vertices by number (CUB), queued after the wait. The temporaries share one allocation. The copies go
// through page-locked memory kept per thread (up to 96 MiB): copies through pageable memory took 9-24 us each
// on an H100's host.
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>

#include "engine/cuda/carve.hpp"
#include "engine/cuda/labels.hpp"
#include "engine/cuda/look_back.cuh"
#include "engine/cuda/structure/keys.cuh"

namespace hybla::cuda {

namespace {

using namespace keys;
constexpr std::uint32_t empty = ~std::uint32_t(0);

// Where the range reduction leaves the least word (as the greatest complement) and the greatest, the count of
// labels, the tiles the numbering and offsets kernels have handed out, whether a row of S is longer than a block
// sorts, the rows of S the offsets kernel lists for a block's sort (those over shared_row_most vertices first) and how
// many of them the row sort has taken; cleared before the range.
struct Header {
    unsigned long long range[2];
    unsigned long long tiles_taken;
    unsigned long long count_tiles_taken;
    unsigned long long rows_taken;
    std::uint32_t k;
    std::uint32_t too_long;
    std::uint32_t long_rows;
    std::uint32_t shared_rows;
};
// S's rows: up to 32 vertices are sorted by a warp, up to shared_row_most by a block's radix sort in shared memory,
// longer ones by a block through a bitmap of the vertices in shared memory where n is at most bitmap_vertices;
// otherwise a longer row sends all of S's rows to a radix sort of the vertices by number. Up to bitmap_cheap
// vertices (16 words of the bitmap a thread) every row of over 32 goes through the bitmap.
constexpr std::uint32_t shared_row_most = 4096, bitmap_vertices = 10240 * 32, bitmap_cheap = 16 * 32 * 256;
// What the host reads after the numbering, written by the kernels straight into the page-locked staging buffer:
// the count k (`empty` where the labels' range was too wide for the table: the kernels did nothing; the host sets
// it so before the launches) and whether a row of S is too long for a block's sort.
struct Seen {
    std::uint32_t k;
    std::uint32_t too_long;
};
// The staging buffer of n labels: the labels on their way up at 0 (n words of 4 or 8 bytes), the labels of the
// numbers from words_at (k <= n words of `word` bytes, at least as wide as those that went up), then Seen (set by
// the host while the labels may still be on their way up, so past them).
constexpr std::size_t words_at = 64;
inline std::size_t seen_at(std::uint64_t n, std::size_t word) { return words_at + word * n; }
inline std::size_t staging_bytes(std::uint64_t n, std::size_t word) { return seen_at(n, word) + sizeof(Seen); }

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
// greatest of complements (both start at zero). The table's slots are cleared in the same pass, and for the
// numbering kernel (first appearance) the slots' numbers and the tiles' look-back states zeroed.
template <class W>
__global__ void range_kernel(const W* w, std::uint64_t n, W flip, Header* out, std::uint32_t* table,
                             std::uint64_t slots, std::uint32_t* numbers, unsigned long long* states,
                             std::uint64_t tiles, std::uint32_t* counts, unsigned long long* count_states) {
    W lo = ~W(0), hi = 0;
    const std::uint64_t items = n > slots ? n : slots;
    for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < items;
         i += std::uint64_t(gridDim.x) * blockDim.x) {
        if (i < slots) table[i] = empty;
        if (numbers && i < slots) numbers[i] = 0;
        if (i < tiles) states[i] = 0;
        if (i < n) counts[i] = 0;
        if (i < (n + block_size - 1) / block_size) count_states[i] = 0;
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

// 1 where slot x holds a label (value order's scan).
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

// What the numbering kernel writes for each vertex v of number c: Sᵀ's column and offset, the ones, and v's
// place among the vertices of number c (taken from c's count, one atomic a number a warp; not in vertex order,
// which the row sort restores). The vertex that makes a row longer than a block sorts says so in the header
// (and to the host, through seen); the last vertex writes k to both.
struct VertexOut {
    Offset* st_offsets;
    ColIndex* st_cols;
    std::uint32_t* counts;
    std::uint32_t* ranks;
    Header* header;
    Seen* seen;               // page-locked host memory; none without the staging buffer
    std::uint32_t long_rank;  // a row with a vertex of this rank is too long for a block's sort
    Ones ones;
    __device__ void count(std::uint32_t k) const {
        header->k = k;
        if (seen) seen->k = k;
    }
    __device__ void write(std::uint64_t v, ColIndex c) const {
        st_cols[v] = c;
        st_offsets[v] = v;
        write_one(ones, v);
        const unsigned lane = threadIdx.x % 32, peers = __match_any_sync(__activemask(), c);
        const unsigned leader = unsigned(__ffs(peers)) - 1;
        std::uint32_t first = 0;
        if (lane == leader) first = atomicAdd(counts + c, std::uint32_t(__popc(peers)));
        const std::uint32_t rank = __shfl_sync(peers, first, int(leader)) + __popc(peers & ((1u << lane) - 1));
        ranks[v] = rank;
        if (rank == long_rank) {
            header->too_long = 1;
            if (seen) seen->too_long = 1;
        }
    }
};

// Where the numbering writes the label of each number (by the label's first vertex): words of W, or of 8 bytes
// with `high` in the upper half (8-byte labels numbered as their low halves: widened here, not on the host).
template <class W>
struct WordsOut {
    void* p;
    bool wide;
    std::uint64_t high;
    __device__ void write(std::uint64_t c, W x) const {
        if (wide) static_cast<std::uint64_t*>(p)[c] = high | std::uint64_t(x);
        else static_cast<W*>(p)[c] = x;
    }
};

// The block's next tile (or row), taken in order from a counter by its first thread.
__device__ inline std::uint64_t take_tile(unsigned long long* counter) {
    __shared__ std::uint64_t id;
    __syncthreads();  // the last tile's shared values are read
    if (threadIdx.x == 0) id = atomicAdd(counter, 1ull);
    __syncthreads();
    return id;
}

// First appearance in one launch: the vertices go in tiles of block_size, taken in order from a counter; a tile
// ranks its vertices that are first of their label (a ballot a warp and a decoupled look-back over the tiles),
// and each such vertex writes its label's number (plus one) in its slot and the label of that number; then
// every vertex reads its label's number from the slot, waiting where the label's first vertex lies in an earlier
// tile that has not written it yet (a running block, which waits only on tiles before its own).
template <class W>
__global__ void __launch_bounds__(block_size)
    number_kernel(const W* w, std::uint64_t n, W flip, Range<W> rg, const std::uint32_t* first,
                  std::uint32_t* numbers, unsigned long long* states, Header* header, WordsOut<W> words,
                  VertexOut out) {
    constexpr unsigned full = 0xFFFFFFFFu;
    __shared__ Offset warp_heads[block_size / 32], tile_before, tile_heads;
    W base;
    if (!rg.read(base)) return;  // (the same for every thread)
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (;;) {
        const std::uint64_t tile = take_tile(&header->tiles_taken), v = tile * block_size + threadIdx.x;
        if (tile * block_size >= n) break;
        const bool in = v < n;
        const W x = in ? W((w[v] ^ flip) - base) : W(0);
        const bool head = in && first[x] == std::uint32_t(v);
        const unsigned heads = __ballot_sync(full, head);
        if (lane == 0) warp_heads[warp] = __popc(heads);
        __syncthreads();
        if (warp == 0) {
            Offset agg = lane < block_size / 32 ? warp_heads[lane] : 0;
            for (unsigned d = 16; d > 0; d >>= 1) agg += __shfl_xor_sync(full, agg, d);
            const Offset before = look_back::exclusive(states, tile, agg);
            if (lane == 0) {
                tile_before = before;
                tile_heads = agg;
            }
        }
        __syncthreads();
        Offset c = tile_before + __popc(heads & ((1u << lane) - 1));
        for (unsigned u = 0; u < warp; ++u) c += warp_heads[u];
        volatile std::uint32_t* const slot = numbers;
        if (head) {
            words.write(c, w[v]);
            slot[x] = std::uint32_t(c) + 1;
        }
        __syncthreads();  // the tile's own heads are seen without waiting
        if (!in) continue;
        if (!head) {
            std::uint32_t got;
            do got = slot[x];
            while (got == 0);
            c = got - 1;
        }
        out.write(v, ColIndex(c));
        if (v == n - 1) {
            out.st_offsets[n] = n;
            out.count(std::uint32_t(tile_before + tile_heads));
        }
    }
}

// S's row offsets in one launch: tiles of block_size numbers taken in order from a counter, each summed by a
// block scan and placed by a decoupled look-back over the tiles. Rows of over 32 vertices are listed
// for a block's sort (those over shared_row_most from the front, the others from the back; in any order).
// k is read where the numbering left it (0 where the range was too wide: nothing to do).
__global__ void __launch_bounds__(block_size)
    offsets_kernel(const std::uint32_t* counts, std::uint64_t n, unsigned long long* states, Header* header,
                   Offset* offsets, std::uint32_t* block_rows, std::uint32_t listed_most) {
    using Scan = cub::BlockScan<Offset, block_size>;
    __shared__ typename Scan::TempStorage scan;
    __shared__ Offset tile_before;
    const Index k = header->k;
    for (;;) {
        const std::uint64_t tile = take_tile(&header->count_tiles_taken), c = tile * block_size + threadIdx.x;
        if (tile * block_size >= k) break;
        const std::uint32_t m = c < k ? counts[c] : 0;
        Offset at, agg;
        Scan(scan).ExclusiveSum(Offset(m), at, agg);
        if (threadIdx.x < 32) {
            const Offset before = look_back::exclusive(states, tile, agg);
            if (threadIdx.x == 0) tile_before = before;
        }
        __syncthreads();
        if (c >= k) continue;
        offsets[c] = tile_before + at;
        if (c == k - 1) offsets[k] = n;
        if (m > shared_row_most) block_rows[atomicAdd(&header->long_rows, 1u)] = std::uint32_t(c);
        else if (m > 32 && m <= shared_row_most)
            block_rows[listed_most - 1 - atomicAdd(&header->shared_rows, 1u)] = std::uint32_t(c);
    }
}

// One row of up to block_size * Items vertices sorted by a block (a radix sort over the bits of the vertex
// numbers; the padding, all ones, stays behind the row's vertices, the sort being stable).
template <int Items, class Storage>
__device__ void sort_row(ColIndex* row, Offset m, int bits, Storage& storage) {
    using Sort = cub::BlockRadixSort<ColIndex, block_size, Items>;
    ColIndex keys[Items];
    for (int i = 0; i < Items; ++i) {
        const Offset p = Offset(threadIdx.x) * Items + i;
        keys[i] = p < m ? row[p] : ~ColIndex(0);
    }
    Sort(reinterpret_cast<typename Sort::TempStorage&>(storage)).Sort(keys, 0, bits);
    for (int i = 0; i < Items; ++i) {
        const Offset p = Offset(threadIdx.x) * Items + i;
        if (p < m) row[p] = keys[i];
    }
}

// One row of S sorted by a block through a bitmap of the n vertices in shared memory: each of the row's vertices
// sets its bit, then each thread writes the set bits of its share of the words in order, behind the bits of the
// shares before it (a block scan of their counts).
template <class Storage>
__device__ void bitmap_row(ColIndex* row, Offset m, std::uint64_t n, std::uint32_t* bitmap, Storage& storage) {
    using Scan = cub::BlockScan<std::uint32_t, block_size>;
    const unsigned t = threadIdx.x;
    const std::uint32_t words = std::uint32_t((n + 31) / 32), share = (words + block_size - 1) / block_size;
    for (std::uint32_t i = t; i < words; i += block_size) bitmap[i] = 0;
    __syncthreads();
    for (Offset start = 0; start < m; start += 16 * block_size) {  // (16 loads in flight a thread)
        ColIndex v[16];
        for (int i = 0; i < 16; ++i) {
            const Offset p = start + Offset(i) * block_size + t;
            v[i] = p < m ? row[p] : empty;
        }
        for (int i = 0; i < 16; ++i)
            if (v[i] != empty) atomicOr(&bitmap[v[i] / 32], 1u << (v[i] % 32));
    }
    __syncthreads();
    const std::uint32_t begin = std::min(words, t * share), end = std::min(words, begin + share);
    std::uint32_t mine = 0, at;
    for (std::uint32_t i = begin; i < end; ++i) mine += std::uint32_t(__popc(bitmap[i]));
    Scan(storage).ExclusiveSum(mine, at);
    for (std::uint32_t i = begin; i < end; ++i)
        for (std::uint32_t bits = bitmap[i]; bits != 0; bits &= bits - 1)
            row[at++] = ColIndex(i * 32 + std::uint32_t(__ffs(bits)) - 1);
}

// A block's storage for sorting a row of S. Up to bitmap_cheap vertices every row goes through the bitmap, and
// the kernel (rows_kernel<false>: no radix sorts, 31 registers against 128) is given only the bitmap's words.
using Sort1 = cub::BlockRadixSort<ColIndex, block_size, 1>;
using Sort4 = cub::BlockRadixSort<ColIndex, block_size, 4>;
using Sort16 = cub::BlockRadixSort<ColIndex, block_size, 16>;
static_assert(block_size * 16 == shared_row_most);
union RowStorage {
    typename Sort1::TempStorage one;
    typename Sort4::TempStorage four;
    typename Sort16::TempStorage sixteen;
    std::uint32_t bitmap[bitmap_vertices / 32];
};
std::size_t row_storage_bytes(std::uint64_t n) {
    return n <= bitmap_cheap ? std::max<std::size_t>((n + 31) / 32, 1) * 4 : sizeof(RowStorage);
}

// S's rows sorted where they lie: each block takes listed rows from a counter (the longest first) and sorts them
// whole, then a warp takes each row of 2 to 32 vertices (each vertex's place is the count of smaller ones).
// k is read where the numbering left it; nothing is done where a row is too long for a block (sort_by_number
// then sorts them all). Sorts: n exceeds bitmap_cheap. Dynamic shared memory: row_storage_bytes(n).
template <bool Sorts>
__global__ void __launch_bounds__(block_size)
    rows_kernel(const Offset* offsets, std::uint64_t n, ColIndex* cols, const std::uint32_t* block_rows,
                std::uint32_t listed_most, Header* header, int bits) {
    if (header->too_long) return;  // (the same for every thread)
    const Index k = header->k;
    constexpr unsigned full = 0xFFFFFFFFu;
    extern __shared__ __align__(16) unsigned char row_shared[];
    RowStorage& storage = *reinterpret_cast<RowStorage*>(row_shared);
    __shared__ typename cub::BlockScan<std::uint32_t, block_size>::TempStorage scan;
    const std::uint32_t long_rows = header->long_rows, listed = long_rows + header->shared_rows;
    for (;;) {
        const std::uint64_t taken = take_tile(&header->rows_taken);  // (and the last row's storage is read)
        if (taken >= listed) break;
        const std::uint32_t c = block_rows[taken < long_rows ? taken : listed_most - 1 - (taken - long_rows)];
        const Offset b = offsets[c], m = offsets[c + 1] - b;
        if (!Sorts || m > shared_row_most) bitmap_row(cols + b, m, n, storage.bitmap, scan);
        else if constexpr (Sorts) {
            if (m <= block_size) sort_row<1>(cols + b, m, bits, storage.one);
            else if (m <= 4 * block_size) sort_row<4>(cols + b, m, bits, storage.four);
            else sort_row<16>(cols + b, m, bits, storage.sixteen);
        }
    }
    const unsigned lane = threadIdx.x % 32, warps = block_size / 32;
    for (std::uint64_t c = std::uint64_t(blockIdx.x) * warps + threadIdx.x / 32; c < k;
         c += std::uint64_t(gridDim.x) * warps) {
        const Offset b = offsets[c], m = offsets[c + 1] - b;
        if (m < 2 || m > 32) continue;  // (the same for the whole warp)
        const ColIndex x = lane < m ? cols[b + lane] : ~ColIndex(0);
        unsigned place = 0;
        for (unsigned j = 0; j < m; ++j) place += __shfl_sync(full, x, int(j)) < x;
        if (lane < m) cols[b + place] = x;
    }
}

// Page-locked host memory kept per thread for the labels' way up and the results' way back (nullptr beyond
// 96 MiB: such calls copy through pageable memory).
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
    if (bytes > (std::size_t(96) << 20)) return nullptr;
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

// S's columns where a row is longer than a block sorts: the vertices sorted stably by number (CUB's radix sort
// over the bits of k).
void sort_by_number(LabelNumbering& r, Index n, Index k, const Context& ctx) {
    ColIndex* const vertices = r.s_cols.data();
    const int bits = bits_for(k);
    if (bits == 0) {  // (one label: its row is the vertices in order)
        for_each(n, ctx, "indicator (one row)", [=] __device__(std::uint64_t v) { vertices[v] = ColIndex(v); });
        return;
    }
    ColIndex *keys, *keys2, *vertices2;
    std::uint8_t* temp;
    cub::DoubleBuffer<ColIndex> kb, vb;
    std::size_t bytes = 0;
    check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, kb, vb, static_cast<std::int64_t>(n), 0, bits,
                                          stream_of(ctx)),
          "DeviceRadixSort (labels)");
    Carve carve(ctx, "indicator: the rows' sort");
    carve.take(keys, n);
    carve.take(keys2, n);
    carve.take(vertices2, n);
    carve.take(temp, bytes);
    carve.allocate();
    const ColIndex* const numbers = r.st_cols.data();
    for_each(n, ctx, "indicator (sort keys)", [=] __device__(std::uint64_t v) {
        keys[v] = numbers[v];
        vertices[v] = ColIndex(v);
    });
    kb = cub::DoubleBuffer<ColIndex>(keys, keys2);
    vb = cub::DoubleBuffer<ColIndex>(vertices, vertices2);
    check(cub::DeviceRadixSort::SortPairs(temp, bytes, kb, vb, static_cast<std::int64_t>(n), 0, bits,
                                          stream_of(ctx)),
          "DeviceRadixSort (labels)");
    if (vb.Current() != vertices) copy(vertices, vb.Current(), n * sizeof(ColIndex), CopyKind::device_to_device,
                                       ctx.stream());
}

// high: labels of 8 bytes numbered as their low halves (W of 4 bytes), their high half; the labels of the numbers
// are then written as 8 bytes.
template <class W>
LabelNumbering number(const W* labels, bool on_device, Index n, W flip, bool value_order, Ones ones,
                      const Context& ctx, std::optional<std::uint64_t> high = std::nullopt) {
    LabelNumbering r;
    if (n >= empty) return r;  // vertex numbers would meet the table's empty mark
    const std::uint64_t slots = 4 * std::uint64_t(n) + 1024;  // the widest range a table numbers, plus one
    // First appearance: the numbering kernel's tiles (a look-back state each) and each slot's number. Value
    // order: an exclusive scan of the occupied slots (CUB), slot x's label numbered rank[x].
    const std::uint64_t tiles = value_order ? 0 : (n + block_size - 1) / block_size;

    // The temporaries in one allocation (CUB aligns its storage itself), the outputs in their own.
    Header* header;
    std::uint32_t *f, *rk = nullptr, *numbers = nullptr, *counts, *ranks, *block_rows;
    unsigned long long *states = nullptr, *count_states;
    W *lw = nullptr, *uploaded = nullptr;
    std::uint8_t* scan_temp = nullptr;
    const std::size_t scan_bytes = value_order ? exclusive_flag_scan(nullptr, 0, Occupied{nullptr}, nullptr, slots, ctx) : 0;
    // The page-locked buffer takes the labels on their way up, then the labels of the numbers, k and the too-long
    // flag on their way back (staging_bytes); without it (beyond its 96 MiB) the header comes back by a copy and
    // the labels of the numbers wait on the GPU in lw.
    const bool wide = sizeof(W) == 8 || high;  // (the labels of the numbers in 8 bytes)
    const std::size_t word = wide ? 8 : sizeof(W);
    void* stage = staging(staging_bytes(n, word));
    Carve carve(ctx, "indicator: temporaries");
    carve.take(header, 1);
    carve.take(f, slots);
    if (value_order) {
        carve.take(rk, slots);
        carve.take(scan_temp, scan_bytes);
    } else {
        carve.take(numbers, slots);
        carve.take(states, tiles);
    }
    if (!stage) carve.take(lw, n);
    if (!on_device) carve.take(uploaded, n);
    carve.take(counts, n);
    carve.take(ranks, n);
    const std::uint32_t listed_most = std::uint32_t(n / 33 + 1);  // (rows of over 32 vertices)
    carve.take(block_rows, listed_most);
    carve.take(count_states, (n + block_size - 1) / block_size);
    Offset* s_off;  // S's row offsets, k + 1 of them, before k is known
    carve.take(s_off, n + 1);
    carve.allocate();
    const cudaEvent_t counted = stage ? static_cast<cudaEvent_t>(thread_event(ctx.device(), 1)) : nullptr;
    r.st_offsets = Array<Offset>(n + 1, ctx);
    r.st_cols = Array<ColIndex>(n, ctx);
    r.s_cols = Array<ColIndex>(n, ctx);
    const Range<W> rg{header, slots};

    // The upload of host labels (labels on the device are read where they are), then the range with the table
    // cleared, and each label's first vertex.
    const DrainOnThrow drain{stream_of(ctx)};
    check(cudaMemsetAsync(header, 0, sizeof(Header), stream_of(ctx)), "cudaMemsetAsync (labels)");
    const W* w = on_device ? labels : uploaded;
    // The label of each number goes straight to the page-locked buffer (k <= n words fit), written by the kernel
    // that numbers the vertices, as are k and whether a row is too long for a block: the one wait for the count
    // brings them all.
    void* const words_p = stage ? static_cast<char*>(stage) + words_at : static_cast<void*>(lw);
    const WordsOut<W> words{words_p, wide, high.value_or(0)};
    Seen* const seen = stage ? reinterpret_cast<Seen*>(static_cast<char*>(stage) + seen_at(n, word)) : nullptr;
    if (seen) *seen = Seen{empty, 0};
    if (on_device) {
        // (read in place)
    } else if (stage) {
        if (labels != stage) std::memcpy(stage, labels, n * sizeof(W));  // (else staged by the caller)
        check(cudaMemcpyAsync(uploaded, stage, n * sizeof(W), cudaMemcpyHostToDevice, stream_of(ctx)),
              "cudaMemcpyAsync (labels)");
    } else {
        copy(uploaded, labels, n * sizeof(W), CopyKind::host_to_device, ctx.stream());
    }
    range_kernel<W><<<std::min(grid_for(std::max<std::uint64_t>(n, slots)), 2048u), block_size, 0,
                      stream_of(ctx)>>>(w, n, flip, header, f, slots, numbers, states, tiles, counts, count_states);
    check_launch("indicator (range)");
    // (One atomic a label a warp, by the first lane of its vertices there, with their least.)
    for_each(n, ctx, "indicator (first vertices)", [=] __device__(std::uint64_t v) {
        W base;
        if (!rg.read(base)) return;
        const W x = (w[v] ^ flip) - base;
        const unsigned peers = __match_any_sync(__activemask(), x);
        const std::uint32_t least = __reduce_min_sync(peers, std::uint32_t(v));
        if (threadIdx.x % 32 == unsigned(__ffs(peers)) - 1) atomicMin(f + x, least);
    });

    // Each vertex's number: Sᵀ (its offsets, columns and ones), S's ones, the count of each number and each
    // vertex's place among its number's; the first vertex of each label writes the label of its number, the last
    // vertex k.
    const std::uint32_t long_rank = n <= bitmap_vertices ? empty : shared_row_most;
    const VertexOut out{r.st_offsets.data(), r.st_cols.data(), counts, ranks, header, seen, long_rank, ones};
    if (value_order) {
        exclusive_flag_scan(scan_temp, scan_bytes, Occupied{f}, rk, slots, ctx);
        for_each(n, ctx, "indicator (numbers by value)", [=] __device__(std::uint64_t v) {
            W base;
            if (!rg.read(base)) return;
            const W x = (w[v] ^ flip) - base;
            const ColIndex c = rk[x];
            if (f[x] == std::uint32_t(v)) words.write(c, w[v]);
            out.write(v, c);
            if (v == n - 1) {
                out.st_offsets[n] = n;
                out.count(rk[slots - 1] + (f[slots - 1] != empty));
            }
        });
    } else {
        const unsigned grid = unsigned(std::min<std::uint64_t>(tiles, 2048));
        number_kernel<W><<<grid, block_size, 0, stream_of(ctx)>>>(w, n, flip, rg, f, numbers, states, header,
                                                                  words, out);
        check_launch("indicator (numbers)");
    }

    // The count comes back while the GPU goes on: S's row offsets (a one-launch scan of the counts, into a
    // temporary of n + 1), the vertices placed in their rows, and each row sorted where it lies (a warp or a block
    // a row) are queued before the host knows k, their kernels reading it (and whether a row is too long for a
    // block, or the range too wide: then they do nothing) where the numbering left it. (Waiting first left the GPU
    // idle for 15-17 us on soc-Slashdot0902, H200.) With a row too long for a block, all of S's rows are sorted
    // stably by number afterwards.
    Offset* const o = s_off;
    const Header* const hd = header;
    Header got;
    if (stage) check(cudaEventRecord(counted, stream_of(ctx)), "cudaEventRecord (labels)");
    else to_host(&got, header, sizeof got, nullptr, ctx);
    offsets_kernel<<<unsigned(std::min<std::uint64_t>((n + block_size - 1) / block_size, 2048)), block_size, 0,
                     stream_of(ctx)>>>(counts, n, count_states, header, o, block_rows, listed_most);
    check_launch("indicator (row offsets)");
    ColIndex* const s_cols = r.s_cols.data();
    const ColIndex* const st_cols = r.st_cols.data();
    for_each(n, ctx, "indicator (rows)", [=] __device__(std::uint64_t v) {
        if (hd->k != 0 && !hd->too_long) s_cols[o[st_cols[v]] + ranks[v]] = ColIndex(v);
    });
    // A warp a row, and enough blocks for the rows that blocks sort (at most n / 33 of them), but no more than
    // run at once (blocks take rows from a counter, warps stride over the rows).
    const std::uint64_t blocks = std::min<std::uint64_t>(
        std::max<std::uint64_t>((n + 7) / 8, n / 33),
        std::uint64_t(multiprocessor_count(ctx.device())) * (2048 / block_size));
    const auto rows = n <= bitmap_cheap ? rows_kernel<false> : rows_kernel<true>;
    rows<<<unsigned(std::max<std::uint64_t>(blocks, 1)), block_size, row_storage_bytes(n), stream_of(ctx)>>>(
        o, n, s_cols, block_rows, listed_most, header, bits_for(n));
    check_launch("indicator (row sorts)");
    if (stage) {
        check(cudaEventSynchronize(counted), "waiting for the labels' count");
        const volatile Seen* const s = seen;  // (written by the GPU)
        got.k = s->k;
        got.too_long = s->too_long;
        if (got.k == empty) return LabelNumbering{};  // (the range too wide)
    } else {
        const W base = W(~got.range[0]), span = W(W(got.range[1]) - base);
        if (!detail::table_range(span, n)) return LabelNumbering{};
    }
    const Index k = got.k;
    r.k = k;
    r.s_offsets = Array<Offset>(k + 1, ctx);
    copy(r.s_offsets.data(), o, (k + 1) * sizeof(Offset), CopyKind::device_to_device, ctx.stream());
    if (got.too_long) sort_by_number(r, n, k, ctx);

    // Without a staging buffer (labels beyond its 96 MiB) the labels of the numbers come back now; otherwise the
    // rows are left queued: the temporaries go back to the stream's pool behind them.
    if (stage) {
        r.words = words_p;  // (written there before the wait)
    } else {
        r.own.resize(k * sizeof(W));
        to_host(r.own.data(), lw, k * sizeof(W), nullptr, ctx);
        r.words = r.own.data();
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
    if (word_bytes != 8)
        throw InvalidValue("indicator: labels of 4 or 8 bytes on the GPU, got " + std::to_string(word_bytes));
    const auto* in = static_cast<const std::uint64_t*>(labels);
    if (!on_device && n > 0 && n < empty) {
        // Host labels of 8 bytes whose high halves are all equal (a range within 2^32 of small or of negative
        // labels) go up as their low halves, half the bytes, numbered as words of 4 bytes without a flip: with
        // the high halves equal, the low halves order and differ as the flipped labels do. The numbering writes
        // the labels of the numbers back whole, the high half put back on the GPU (widened on the host, the k
        // words took 13-15 us of a 120 us call on soc-Slashdot0902's clusters).
        if (void* stage = staging(staging_bytes(n, 8))) {  // (as number() asks: the same buffer)
            auto* low = static_cast<std::uint32_t*>(stage);
            std::uint64_t all = ~std::uint64_t(0), any = 0;
            for (Index v = 0; v < n; ++v) {
                const std::uint64_t x = in[v];
                all &= x;
                any |= x;
                low[v] = std::uint32_t(x);
            }
            if ((all >> 32) == (any >> 32))
                return number(low, false, n, std::uint32_t(0), value_order, ones, ctx,
                              all & ~std::uint64_t(0xffffffff));
        }
    }
    return number(in, on_device, n, flip, value_order, ones, ctx);
}

}  // namespace hybla::cuda
