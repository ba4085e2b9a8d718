// SpMM (sparse x dense) on the GPU: HP-SpMM (spmm.cuh beside this file has the kernels, README.md the design and
// the measurements). This is the driver: the shape of the kernel from the width and the value type, the
// workers and their shares of entries from the matrix and the device, and the plan (each share's first entry and
// row) cached on the matrix (the last few splits).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/batching.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/runtime.hpp"
#include "engine/cuda/spmm/spmm.cuh"
#include "engine/dense_matrix.hpp"
#include "engine/error.hpp"
#include "engine/matrix.hpp"
#include "engine/trace.hpp"

namespace hybla::cuda {

namespace spmm_detail {
namespace {

// The number the environment variable `name` holds when it is one from lo to hi, else fallback.
std::uint64_t env_number(const char* name, std::uint64_t lo, std::uint64_t hi, std::uint64_t fallback) {
    if (const char* e = std::getenv(name); e && *e) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(e, &end, 10);
        if (*end == 0 && v >= lo && v <= hi) return v;
    }
    return fallback;
}

// The bytes of the workers' partial rows at most: HYBLA_SPMM_PARTIAL when set to a positive number, else 1 GiB.
// A fixed limit, not the free memory, so that the shares, and so the order of the sums, do not depend on it.
std::uint64_t partial_limit() {
    return env_number("HYBLA_SPMM_PARTIAL", 1, ~std::uint64_t(0), std::uint64_t(1) << 30);
}

// Blocks of the kernel a multiprocessor holds at once (its registers decide), asked of the runtime once per
// kernel and device.
template <auto Kernel>
unsigned resident_blocks(int device) {
    static std::array<std::atomic<int>, 64> known{};  // 0: not asked yet
    std::atomic<int>& slot = known[unsigned(device) % known.size()];
    int n = slot.load(std::memory_order_relaxed);
    if (n == 0) {
        checked(int(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, int(block_size), 0)), "SpMM occupancy");
        n = std::max(n, 1);
        slot.store(n, std::memory_order_relaxed);
    }
    return unsigned(n);
}

// What a row weighs in the shares against an entry's entry_weight: HYBLA_SPMM_ROW_WEIGHT when set (0 to 2^16; the
// tests vary it), else row_weight_default.
inline constexpr std::uint64_t entry_weight = 4, row_weight_default = 4;
std::uint64_t row_weight() { return env_number("HYBLA_SPMM_ROW_WEIGHT", 0, 1u << 16, row_weight_default); }

// How A's entries are shared among the workers (the paper's Dynamic Task Partition, weighed by rows as well).
// Entry j of row r costs entry_weight x j + row_weight x r: worker t takes the entries whose cost lies in
// [t quota, (t + 1) quota), so a share of many short rows (each a row switch and a store of the row) holds fewer
// entries than one inside a long row. With equal entries the multiprocessors were busy 79% of the walk on
// soc-Slashdot0902 (ncu, H200), the last shares setting its end; a row as heavy as an entry balances it.
// A row of at most `unsplit` entries is not split: a share's end that falls inside it moves to its nearer end
// (plan_kernel), so the share's cost moves by at most a sixteenth of the quota, and the row is written to C
// whole rather than as a tail and a head that combine_kernel folds (H200, against splitting every row: the road
// and mesh graphs 2-6% faster at every width, R-MAT 16 double w = 256 1% slower; rows up to a quarter of a share
// kept whole: the same; up to half: 3% slower in the mean at double w = 128-256).
struct Split {
    std::uint64_t workers = 0, quota = 1, row_weight = 0;
    std::uint64_t unsplit = 0;
    bool operator==(const Split&) const = default;
};

// The workers of one full wave (every multiprocessor holding as many blocks as its registers allow), so that
// all run at once and none waits for a second wave; at most one an 8 entries (two batches: a small graph still
// fills the device, its rows split more often), or one an entry where A has fewer entries than rows, the rows
// then unweighed (a worker's entries would lie rows apart, each found by a search: personalized PageRank's
// restart term, 64 entries over soc-Slashdot0902's 82,168 rows, made its iteration 0.246 ms, 0.214-0.224 with
// one an entry); and few enough that their partial rows fit partial_limit().
Split split_of(std::uint64_t nnz, std::uint64_t nrows, std::uint64_t w, std::size_t elem, unsigned lanes,
               unsigned blocks_per_sm, int device) {
    const std::uint64_t wave = std::uint64_t(multiprocessor_count(device)) * blocks_per_sm * (block_size / lanes);
    const std::uint64_t share = std::max<std::uint64_t>((nnz + wave - 1) / wave, nnz < nrows ? 1 : 8);
    Split sp;
    sp.workers = (nnz + share - 1) / share;
    // Workers whose partials fit, below 2^32 (a row's part count is 32-bit, Args::parts).
    sp.workers = std::min(sp.workers, std::min<std::uint64_t>(rows_within(2 * w, elem, partial_limit()), 0xffffffffu));
    if (sp.workers == 0) return sp;
    sp.row_weight = nnz < nrows ? 0 : row_weight();
    const std::uint64_t total = entry_weight * nnz + sp.row_weight * nrows;
    // The kernel counts a share's entries in 32 bits: a quota of at most 2^31 entries' cost.
    sp.workers = std::max(sp.workers, (total + (entry_weight << 31) - 1) / (entry_weight << 31));
    sp.quota = (total + sp.workers - 1) / sp.workers;
    // Rows kept whole: up to an eighth of a share's entries, or HYBLA_SPMM_UNSPLIT: the quota over it (0: none; the
    // tests vary it).
    const std::uint64_t divisor = env_number("HYBLA_SPMM_UNSPLIT", 0, 1u << 16, 8);
    sp.unsplit = divisor ? sp.quota / (entry_weight * divisor) : 0;
    return sp;
}

// The plan of a split: each worker's first entry and its row, found once (a warp's searches a worker) and cached
// on the matrix until it changes. The plans of the last few splits (widths, value types) are kept, the latest
// first, so that calls alternating between widths find theirs.
struct Plan {
    Split split;
    Array<std::uint64_t> begin, first_row;  // Args::begin, Args::first_row
    Array<std::uint32_t> parts;             // Args::parts
};
struct Plans {
    static constexpr std::size_t most = 4;
    static constexpr std::uint64_t unknown = ~std::uint64_t(0);
    std::vector<std::shared_ptr<const Plan>> kept;
    std::uint64_t longest = unknown;  // the entries of A's longest row, once a small matrix has asked
};

// Worker t's first entry: the first whose cost reaches t x quota. Row r is the last whose first entry's cost
// (entry_weight x off[r] + row_weight x r) is at most that; the entry lies in it, or is the first of the next row
// with entries (every entry of r costs less). When it lies inside a row of at most sp.unsplit entries, it moves
// to the nearer of the row's ends (the first entry, or the next row's: the shares' starts still do not
// decrease). A row that begins before worker t's first entry is split at boundary t (a longer row: no start
// moves into it, so its entry j is still worker cost(j) / quota's); t is its first boundary when its first entry
// is worker t - 1's, and its parts are the tail of worker t - 1 and the heads of workers t up to its last entry's
// (fewer than 2^32: the partial rows bound the workers).
__global__ void __launch_bounds__(block_size) plan_kernel(const Offset* off, std::uint64_t nrows, Split sp,
                                                        std::uint64_t* begin, std::uint64_t* first_row,
                                                        std::uint32_t* parts) {
    const unsigned lane = threadIdx.x % warp_size;
    const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / warp_size), nnz = off[nrows];
    const std::uint64_t a = entry_weight, b = sp.row_weight;
    for (std::uint64_t t = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / warp_size; t <= sp.workers;
         t += warps) {
        const std::uint64_t d = t * sp.quota;
        const std::uint64_t r = warp_ops::group_last<warp_size>(
            0, nrows, [&](std::uint64_t p) { return a * off[p] + b * p <= d; }, lane, 0xffffffffu);
        const std::uint64_t lo = off[r], hi = off[r + 1];
        std::uint64_t j = std::min(lo + (d - (a * lo + b * r) + a - 1) / a, hi);
        if (lo < j && j < hi && hi - lo <= sp.unsplit) j = j - lo <= hi - j ? lo : hi;
        const std::uint64_t row = j < hi    ? r
                                  : j < nnz ? warp_ops::group_row_of<warp_size>(off, r + 1, nrows, j, lane, 0xffffffffu)
                                            : nrows;
        if (lane != 0) continue;
        begin[t] = j;
        if (t == sp.workers) continue;
        first_row[t] = row;
        const std::uint64_t start = row < nrows ? off[row] : j;
        const bool first = t > 0 && start < j && (a * start + b * row) / sp.quota == t - 1;
        const std::uint64_t last = first ? std::min((a * (off[row + 1] - 1) + b * row) / sp.quota, sp.workers - 1) : 0;
        parts[t] = first ? std::uint32_t(last - t + 2) : 0u;
    }
}

unsigned blocks_for(std::uint64_t threads) {
    return unsigned(std::clamp<std::uint64_t>((threads + block_size - 1) / block_size, 1, std::uint64_t(1) << 20));
}

template <class T>
std::shared_ptr<const Plan> plan_of(const Matrix<T>& a, const Split& split) {
    const auto cached = std::static_pointer_cast<const Plans>(a.cached_spmm_plan());
    if (cached)
        for (const auto& p : cached->kept)
            if (p->split == split) return p;
    const Context& ctx = a.context();
    auto plan = std::make_shared<Plan>();
    plan->split = split;
    if (split.workers > 0) {
        plan->begin = Array<std::uint64_t>(split.workers + 1, ctx);
        plan->first_row = Array<std::uint64_t>(split.workers, ctx);
        plan->parts = Array<std::uint32_t>(split.workers, ctx);
        plan_kernel<<<blocks_for((split.workers + 1) * warp_size), block_size, 0,
                      static_cast<cudaStream_t>(ctx.stream())>>>(a.storage_offsets().data(), a.nrows(), split,
                                                                 plan->begin.data(), plan->first_row.data(),
                                                                 plan->parts.data());
        checked(int(cudaGetLastError()), "SpMM plan kernel");
    }
    auto plans = std::make_shared<Plans>();
    plans->longest = cached ? cached->longest : Plans::unknown;
    plans->kept.push_back(plan);
    if (cached)
        for (const auto& p : cached->kept)
            if (plans->kept.size() < Plans::most) plans->kept.push_back(p);
    a.cache_spmm_plan(plans);
    return plan;
}

// The entries of A's longest row: its offsets read back once (a small matrix: the driver asks only up to three
// waves of blocks' rows) and kept with the plans.
template <class T>
std::uint64_t longest_row(const Matrix<T>& a) {
    const auto cached = std::static_pointer_cast<const Plans>(a.cached_spmm_plan());
    if (cached && cached->longest != Plans::unknown) return cached->longest;
    std::vector<Offset> off(a.nrows() + 1);
    copy(off.data(), a.storage_offsets().data(), off.size() * sizeof(Offset), CopyKind::device_to_host,
         a.context().stream());
    std::uint64_t longest = 0;
    for (std::size_t r = 0; r + 1 < off.size(); ++r) longest = std::max<std::uint64_t>(longest, off[r + 1] - off[r]);
    auto plans = cached ? std::make_shared<Plans>(*cached) : std::make_shared<Plans>();
    plans->longest = longest;
    a.cache_spmm_plan(plans);
    return longest;
}

// A block a row (row_block_kernel) for a small matrix, else the shares (spmm_kernel). In batches of entries a
// worker (a batch's gathers about one trip to L2, as is a row's fixed work): the longest row takes its entries
// over the block's workers, `batch` at a time; the rows take ceil(m / wave) turns of a wave of blocks, each a mean
// row's batches plus 2. Blocks where the larger is at most 16, in at most 3 turns. H200, against the shares, both
// forced, two passes: mbeacxc (1 turn, rows of up to 484 entries) 16-49% faster at up to 16 batches (float w = 32
// 0.0154 -> 0.0078-0.0089 ms, double w = 64 0.0166 -> 0.0138), within 7% either way at 31, 65% slower at 61
// (double w = 256); email-Eu-core (2 turns) 18-40% faster at up to 7; jagmesh7 (3 turns, rows of up to 7) 19-38%
// faster at 7 of 8 widths and types; bcsstk13 (4 turns, 1-3 batches) level, 30-55% slower at 6-12; zenios (6
// turns) 10-30% slower. HYBLA_SPMM_ROWS=block or walk forces one (the tests run both).
inline constexpr std::uint64_t row_block_turns = 3, row_block_batches = 16, row_block_row_cost = 2;
template <class T>
bool row_blocks(const Matrix<T>& a, unsigned workers, unsigned batch, unsigned resident, int device) {
    if (const char* e = std::getenv("HYBLA_SPMM_ROWS"); e && *e) {
        if (std::string(e) == "block") return true;
        if (std::string(e) == "walk") return false;
    }
    const std::uint64_t wave = std::uint64_t(multiprocessor_count(device)) * resident;
    const std::uint64_t m = a.nrows(), nnz = a.nvals();
    if (nnz == 0 || m > row_block_turns * wave) return false;
    auto batches = [&](std::uint64_t entries) { return ((entries + workers - 1) / workers + batch - 1) / batch; };
    const std::uint64_t turns = (m + wave - 1) / wave, mean = (nnz + m - 1) / m;
    return std::max(batches(longest_row(a)), turns * (batches(mean) + row_block_row_cost)) <= row_block_batches;
}

template <class T, class Sr, unsigned L, unsigned V, unsigned NV, unsigned U, unsigned MB, bool LateA>
void launch_shape(const Matrix<T>& a, const DenseMatrix<T>& b, Out<T> out, const Sr& sr, const Context& ctx) {
    Args<T> x;
    x.nrows = a.nrows();
    x.nnz = a.nvals();
    x.w = b.ncols();
    x.off = a.storage_offsets().data();
    x.cols = a.storage_indices().data();
    x.vals = a.storage_values().data();
    x.b = b.storage().data();
    x.out = out;
    const auto stream = static_cast<cudaStream_t>(ctx.stream());
    // plus_times on float and double, 16-byte vectors on 8 lanes or more (w of 32 floats or 16 doubles and up):
    // a block a row where the matrix is small (the shapes built for it: the build's time).
    if constexpr (std::is_same_v<Sr, PlusTimes> && V > 1 && L >= 8) {
        constexpr unsigned RU = 4 / NV;  // entries a batch (64 registers, 4 blocks a multiprocessor)
        constexpr auto rows_kernel = row_block_kernel<T, Sr, L, V, NV, RU>;
        const unsigned resident = resident_blocks<rows_kernel>(ctx.device());
        if (row_blocks(a, block_size / L, RU, resident, ctx.device())) {
            const std::uint64_t wave = std::uint64_t(multiprocessor_count(ctx.device())) * resident;
            rows_kernel<<<unsigned(std::clamp<std::uint64_t>(x.nrows, 1, wave)), block_size, 0, stream>>>(x, sr);
            checked(int(cudaGetLastError()), "SpMM kernel (a block a row)");
            trace("cuda spmm: %llu entries, width %llu: a block a row, %u lanes a worker, %u values a load, %u "
                  "loads a lane, %u entries a batch",
                  (unsigned long long)x.nnz, (unsigned long long)x.w, L, V, NV, RU);
            return;
        }
    }
    constexpr auto kernel = spmm_kernel<T, Sr, L, V, NV, U, MB, LateA>;
    const unsigned resident = resident_blocks<kernel>(ctx.device());
    const auto plan = plan_of(a, split_of(x.nnz, x.nrows, x.w, sizeof(T), L, resident, ctx.device()));
    x.workers = plan->split.workers;
    x.begin = plan->begin.data();
    x.first_row = plan->first_row.data();
    x.parts = plan->parts.data();
    Array<T> partial(x.workers > 1 ? 2 * x.workers * x.w : 0, ctx);
    x.partial = partial.data();
    // Enough blocks for the workers, and for the empty rows' pass (a row a thread, grid-stride) when it writes.
    const std::uint64_t for_rows =
        out.skip_empty ? 0 : std::min<std::uint64_t>(x.nrows, std::uint64_t(multiprocessor_count(ctx.device())) * 2048);
    kernel<<<blocks_for(std::max(x.workers * L, for_rows)), block_size, 0, stream>>>(x, sr);
    checked(int(cudaGetLastError()), "SpMM kernel");
    if (x.workers > 1) {
        // A programmatic dependent (engine/cuda/launch.cuh): placed while spmm_kernel runs, no launch gap.
        // A group of lanes a split row: the fewest, a power of two up to a block, that hold its vectors (up to a
        // warp until 2026-11-29: H200, mbeacxc and facebook_combined 7-22% faster at double w = 128-256 and float
        // w = 256, where a lane had folded 2-4 vectors one after another; the ten graphs of the table within 1%).
        unsigned group = 1;
        while (group < block_size && group * V < x.w) group *= 2;
        launch_after_previous(combine_kernel<T, Sr, V>, blocks_for((x.workers - 1) * group), block_size, stream,
                              ctx.device(), "SpMM combine kernel", x, sr, group);
    }
    trace("cuda spmm: %llu entries, width %llu: %u lanes a worker, %u values a load, %u loads a lane, %u entries "
          "a batch, %u blocks a multiprocessor; %llu workers, each a share of cost %llu (an entry %llu, a row %llu)",
          (unsigned long long)x.nnz, (unsigned long long)x.w, L, V, NV, U, resident, (unsigned long long)x.workers,
          (unsigned long long)plan->split.quota, (unsigned long long)entry_weight,
          (unsigned long long)plan->split.row_weight);
}

// Entries a batch: 8, or 4 with 4 vectors a lane (16 loads in flight; 2 for double, whose wider registers would
// spill, 3 on a warp of 16-byte vectors: w = 129-256 doubles, 121 registers; H200, against 2 in one run, two
// passes: geometric mean over ten graphs 1.22x -> 1.27-1.28x of cuSPARSE, 0-13% faster on eight, deezer_HU and
// delaunay_n16 within 3% slower), within 128 registers a thread; wide workers (several lanes of 1 or 2 vectors) 4
// within 64 registers (85 for double or 2 vectors a lane), so that more blocks are resident. Double on a warp of
// one vector a lane (w = 64) takes 64 registers and 4 blocks too, its batch's values passed round at their folds
// (late_a). H200, against 73 registers and 3 blocks: 2-8% faster on eight of ten graphs, R-MAT 18 equal, bcsstk16
// 1-2% slower; 4 blocks without late_a (24 bytes spilled) 0-14% slower. On 8 or 16 lanes (w = 32) late_a with 4
// blocks made bcsstk16 and ca-CondMat 4-8% slower: they keep 3. Double on a warp of 2 vectors a lane (w = 65-128)
// takes 104 registers and 2 blocks.
template <class T, class Sr, unsigned L, unsigned V, unsigned NV>
void launch(const Matrix<T>& a, const DenseMatrix<T>& b, Out<T> out, const Sr& sr, const Context& ctx) {
    constexpr bool wide = L > 1 && NV < 4;
    constexpr unsigned U = wide ? 4 : NV < 4 ? 8 : sizeof(T) > 4 ? (L == warp_size && V > 1 ? 3 : 2) : 4;
    constexpr bool late_a = wide && NV == 1 && L == warp_size && sizeof(T) == 8;
    constexpr unsigned blocks =
        !wide || (NV == 2 && sizeof(T) == 8) ? 2 : NV == 1 && (sizeof(T) == 4 || late_a) ? 4 : 3;
    launch_shape<T, Sr, L, V, NV, U, blocks, late_a>(a, b, out, sr, ctx);
}

// The shape for a width of wv vectors of V values: up to 4 vectors, one lane with 1, 2 or 4 of them. Up to 32,
// while the entries gather at most 2 GiB of B (nnz x w x sizeof T), a vector a lane on the fewest lanes (a
// power of two) that hold them: 4 times the threads of 4 vectors a lane, which hide the gathers' latency; past
// that the walk is bound by the memory system and 4 vectors a lane (fewer instructions an entry) win again
// (measured: wide won 54 of 60 cases on the data graphs and R-MAT 16-18, and lost by 20-30% at 4 of 5 widths
// on R-MAT 20). Up to 64, 2 vectors a lane on a warp whatever the size: for float it beat 4 a lane on 16 lanes
// in 9 of 10 cases; for double (2 blocks, row ends in the lanes; H200, ef9387b, shares weighed by rows) 0-13%
// faster at w = 128 on every graph (before the weighed shares it lost soc-Slashdot0902). Beyond, 4 vectors a
// lane on a warp, panels of 128 vectors.
template <class T, class Sr, unsigned V>
void dispatch_lanes(const Matrix<T>& a, const DenseMatrix<T>& b, Out<T> out, const Sr& sr, const Context& ctx) {
    const std::uint64_t wv = b.ncols() / V;
    if (wv <= 1) return launch<T, Sr, 1, V, 1>(a, b, out, sr, ctx);
    if (wv <= 2) return launch<T, Sr, 1, V, 2>(a, b, out, sr, ctx);
    if (wv <= 4) return launch<T, Sr, 1, V, 4>(a, b, out, sr, ctx);
    bool wide = double(a.nvals()) * double(b.ncols()) * sizeof(T) <= double(std::uint64_t(1) << 31);
    if (const char* e = std::getenv("HYBLA_SPMM_SHAPE"); e && *e)  // narrow or wide: the tests run both
        wide = std::string(e) == "wide" ? true : std::string(e) == "narrow" ? false : wide;
    if (wv <= 8) return wide ? launch<T, Sr, 8, V, 1>(a, b, out, sr, ctx) : launch<T, Sr, 2, V, 4>(a, b, out, sr, ctx);
    if (wv <= 16) return wide ? launch<T, Sr, 16, V, 1>(a, b, out, sr, ctx) : launch<T, Sr, 4, V, 4>(a, b, out, sr, ctx);
    if (wv <= 32) return wide ? launch<T, Sr, 32, V, 1>(a, b, out, sr, ctx) : launch<T, Sr, 8, V, 4>(a, b, out, sr, ctx);
    if (wv <= 64) return launch<T, Sr, 32, V, 2>(a, b, out, sr, ctx);
    return launch<T, Sr, 32, V, 4>(a, b, out, sr, ctx);
}

// A value a load: fewer shapes (the build's time): a lane with 1 or 4 columns, 8 lanes of 4 up to 32 columns, a
// warp of 4 beyond (panels of 128 columns).
template <class T, class Sr>
void dispatch_scalar(const Matrix<T>& a, const DenseMatrix<T>& b, Out<T> out, const Sr& sr, const Context& ctx) {
    const std::uint64_t w = b.ncols();
    if (w <= 1) return launch<T, Sr, 1, 1, 1>(a, b, out, sr, ctx);
    if (w <= 4) return launch<T, Sr, 1, 1, 4>(a, b, out, sr, ctx);
    if (w <= 32) return launch<T, Sr, 8, 1, 4>(a, b, out, sr, ctx);
    return launch<T, Sr, 32, 1, 4>(a, b, out, sr, ctx);
}

// plus_times on float and double with the operators inlined, with 16-byte loads of B when its rows fill them (the
// width a multiple of 4 floats or 2 doubles: rows then start aligned); other semirings by run-time codes.
template <class T>
void run(const Matrix<T>& a, const DenseMatrix<T>& b, Out<T> out, SemiringCode sr) {
    const Context& ctx = a.context();
    // The context's device for the launches and the occupancy query (an allocation, which would set it, is
    // skipped when it is empty: C += E·D with a single worker allocates nothing).
    checked(int(cudaSetDevice(ctx.device())), "cudaSetDevice");
    // The kernel counts columns (its panels' starts included) in 32 bits, and a row's bytes.
    if (b.ncols() >= (std::uint64_t(1) << 31) || b.ncols() * sizeof(T) >= (std::uint64_t(1) << 32))
        throw InvalidValue("mxm (SpMM) on the GPU: the dense operand has " + std::to_string(b.ncols()) +
                           " columns of " + std::to_string(sizeof(T)) +
                           " bytes; at most 2^31 - 1 columns and 2^32 - 1 bytes a row are supported");
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if (sr.add == MonoidOp::plus && sr.multiply == BinaryOp::times) {
            constexpr unsigned V = 16 / sizeof(T);
            if (b.ncols() % V == 0) return dispatch_lanes<T, PlusTimes, V>(a, b, out, PlusTimes{}, ctx);
            return dispatch_scalar<T>(a, b, out, PlusTimes{}, ctx);
        }
    }
    dispatch_scalar<T>(a, b, out, RuntimeSemiring{sr}, ctx);
}

// The binary operator of a monoid (any has none of its own: first).
BinaryOp binary_of(MonoidOp m) {
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

}  // namespace
}  // namespace spmm_detail

template <class T>
DenseMatrix<T> spmm(const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr) {
    const Context& ctx = a.context();
    const std::uint64_t m = a.nrows(), w = b.ncols();
    Array<T> out(m * w, ctx);
    if (m * w > 0) spmm_detail::run<T>(a, b, spmm_detail::Out<T>{out.data(), false, false, BinaryOp::first}, sr);
    return DenseMatrix<T>::import_row_major(m, w, std::move(out));
}

template <class T>
void spmm_into(DenseMatrix<T>& c, const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr) {
    if (a.nrows() * b.ncols() == 0) return;
    spmm_detail::run<T>(a, b, spmm_detail::Out<T>{c.storage().data(), false, false, BinaryOp::first}, sr);
}

template <class T>
void spmm_accumulate(DenseMatrix<T>& c, const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr, BinaryOp accum) {
    const std::uint64_t m = a.nrows(), w = b.ncols();
    if (m * w == 0) return;
    // The identity changes nothing under the add monoid's own operator (x ⊕ 0 = x; for floating point, -0 + 0
    // is +0, equal to -0): empty rows keep C. Not for the logical monoids on non-bool types (lor(5, 0) is 1).
    const bool logical = sr.add == MonoidOp::lor || sr.add == MonoidOp::land || sr.add == MonoidOp::lxor;
    const bool neutral =
        sr.add != MonoidOp::any && accum == spmm_detail::binary_of(sr.add) && (!logical || std::is_same_v<T, bool>);
    spmm_detail::run<T>(a, b, spmm_detail::Out<T>{c.storage().data(), true, neutral, accum}, sr);
}

#define HYBLA_INSTANTIATE(T)                                                                                          \
    template DenseMatrix<T> spmm<T>(const Matrix<T>&, const DenseMatrix<T>&, SemiringCode);                          \
    template void spmm_into<T>(DenseMatrix<T>&, const Matrix<T>&, const DenseMatrix<T>&, SemiringCode);             \
    template void spmm_accumulate<T>(DenseMatrix<T>&, const Matrix<T>&, const DenseMatrix<T>&, SemiringCode, BinaryOp);
HYBLA_CUDA_VALUE_TYPES(HYBLA_INSTANTIATE)
#undef HYBLA_INSTANTIATE

}  // namespace hybla::cuda
