// mxm_pruned and inflate_rows (engine/prune.hpp) on the GPU.
//
// mxm_pruned: rows of A are taken in windows (dense_batch_rows); a window whose products are at least a quarter
// of its rows x columns goes through the dense-row accumulator (dense_rows.cuh), and the rows between such
// windows through the hash SpGEMM of this folder in double (plus_times), in batches of at most a budget of
// products (a quarter of the free device memory at 60 bytes a product, or HYBLA_PRUNE_BATCH products when set:
// tests force many batches with it), each batch pruned as the product's per-row epilogue (hash_spgemm_rows,
// select.hpp) as soon as it is made. So only pruned rows are kept: the unpruned square never exists whole. Every
// value is read as mcl stores it, rounded to T (the dense-row path rounds each sum as it stores it, so float
// windows move 8 bytes an entry, not 12). Pruning a batch: per row, only the entries its rule can look at (all
// >= cutoff, and at least the `recover` largest: a level below the cutoff found by counting, see level_kernel)
// are sorted (CUB segmented sort, descending), which on dense rows is a few percent of the row; a warp per row
// reads the rule's threshold t off that sorted prefix (every rule of engine/prune_rule.hpp is "keep the entries
// >= t"), and a second warp per row compacts the kept entries in column order and rescales them by their sum.
// The sort takes whole rows in calls of fewer than 2^31 candidates and rows (engine/cuda/batching.hpp;
// HYBLA_PRUNE_SORT caps both lower, for the tests); a single row of 2^31 candidates or more is refused with its
// number.
// Differences from the CPU backend (documented in engine/prune_rule.hpp): products are formed in double
// always, and sums are taken in a different order, so a value may differ in its last bit.
#include <cub/device/device_segmented_sort.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "engine/cuda/batching.hpp"
#include "engine/cuda/spgemm/dense_rows.cuh"
#include "engine/cuda/spgemm/select.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"
#include "engine/memory.hpp"
#include "engine/trace.hpp"

namespace hybla::cuda {

namespace {

using keys::check;
using keys::check_launch;
using keys::stream_of;

constexpr unsigned warp = 32;
constexpr unsigned warps_per_block = 8;

unsigned warp_blocks(std::uint64_t rows) {
    return unsigned(std::clamp<std::uint64_t>((rows + warps_per_block - 1) / warps_per_block, 1, 1u << 20));
}

__device__ inline double warp_sum(double x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    return __shfl_sync(0xffffffffu, x, 0);
}
__device__ inline unsigned long long warp_sum(unsigned long long x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    return __shfl_sync(0xffffffffu, x, 0);
}

// Products of each row: flops[i] = sum over A(i,k) of |B(k,:)|; flops has m + 1 entries (the last is set to 0
// so that an exclusive scan gives prefix sums).
__global__ void row_flops_kernel(Index m, const Offset* ao, const ColIndex* ac, const Offset* bo, Offset* flops) {
    for (Index i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i <= m; i += std::uint64_t(gridDim.x) * blockDim.x) {
        Offset f = 0;
        if (i < m)
            for (Offset p = ao[i]; p < ao[i + 1]; ++p) f += bo[ac[p] + 1] - bo[ac[p]];
        flops[i] = f;
    }
}

struct RowRule {
    double cutoff, pct;
    Offset select, recover;
};

// Levels of the candidate filter (see level_kernel): level j is the double whose bits are cutoff's minus
// j * kLevelStep (positive doubles order as their bits), so levels are half a binade apart (two of them are
// cutoff * 2^-j exactly) and kLevels of them reach 2^-15.5 below the cutoff; then everything.
constexpr int kLevels = 32;
constexpr unsigned long long kLevelStep = 1ull << 51;

// Per row of the batch (values as stored, T): the sum of squares, and the level that keeps the fewest entries
// while keeping every entry the row's rule can look at: all entries >= cutoff (the rule's thresholds are never
// below the cutoff unless it recovers dropped entries) and at least the row's `recover` largest (recovery
// reads the recover-th largest; with recover = 0, the largest, for the emergency measure). level[i] is the
// filter's bound (-inf: the whole row, also for a row holding a NaN) and cand[i] how many entries pass it.
// Counting: each entry x falls in bucket j = the first level it reaches (from the distance of its bits to
// cutoff's, exact; 0 for x >= cutoff or NaN, none below the last level), counted per lane in shared memory
// (kLevels x 32 counters a warp, lane-private: no atomics, no bank conflicts); the count of level j is the
// sum of buckets 0..j. `levels` (host): cutoff in (0, inf) with every level a normal double (else every row
// is whole).
__device__ inline int level_bucket(double x, double cutoff) {
    if (!(x < cutoff)) return 0;  // also NaN
    if (!(x > 0)) return kLevels;  // zero or negative: below every level
    const auto bits = [](double v) { return (unsigned long long)__double_as_longlong(v); };
    const unsigned long long below = bits(cutoff) - bits(x);
    const unsigned long long j = (below + kLevelStep - 1) / kLevelStep;  // x >= level j iff j * step >= below
    return j < kLevels ? int(j) : kLevels;
}

// A value of the expanded rows (V: as summed) as mcl stores it (T), read as a double.
template <class T, class V>
__device__ inline double stored(V v) {
    return double(T(v));
}

template <class T, class V>
__global__ void level_kernel(Index rows, const Offset* off, const V* ev, RowRule r, bool levels, double* sumsq,
                             double* level, Offset* cand) {
    __shared__ unsigned buckets[warps_per_block][kLevels][warp];
    const unsigned lane = threadIdx.x % warp, w = (threadIdx.x / warp) % warps_per_block;
    unsigned (*mine)[warp] = buckets[w];
#pragma unroll
    for (int j = 0; j < kLevels; ++j) mine[j][lane] = 0;
    for (Index i = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / warp; i < rows;
         i += std::uint64_t(gridDim.x) * blockDim.x / warp) {
        const Offset b = off[i], len = off[i + 1] - b;
        double sq = 0;
        bool nan = false;  // a NaN sorts apart from the values (CUB puts one with the sign bit last): whole row
        for (Offset p = b + lane; p < b + len; p += warp) {
            const double x = stored<T>(ev[p]);
            nan |= isnan(x);
            sq += x * x;
            if (levels) {
                const int j = level_bucket(x, r.cutoff);
                if (j < kLevels) ++mine[j][lane];
            }
        }
        sq = warp_sum(sq);
        const bool levels_here = levels && !__any_sync(0xffffffffu, nan);
        const Offset need = len == 0 ? 0 : r.recover > 0 ? (len < r.recover ? len : r.recover) : 1;
        double bound = -INFINITY;
        Offset count = len;
        if (levels) {
            double f = r.cutoff;
            unsigned long long below = 0;  // this lane's entries reaching level j
#pragma unroll
            for (int j = 0; j < kLevels; ++j, f = __longlong_as_double(__double_as_longlong(f) - kLevelStep)) {
                below += mine[j][lane];
                mine[j][lane] = 0;
                const Offset cj = warp_sum(below);
                if (levels_here && bound == -INFINITY && cj >= need && cj < count) {
                    bound = f;
                    count = cj;
                }
            }
        }
        if (lane == 0) {
            sumsq[i] = sq;
            level[i] = bound;
            cand[i] = count;
        }
    }
}

// The entries of each row that pass its level (as stored, T), in any order, at cand_off[i] (a warp per row).
template <class T, class V>
__global__ void filter_kernel(Index rows, const Offset* off, const V* ev, const double* level,
                              const Offset* cand_off, T* out) {
    const unsigned lane = threadIdx.x % warp;
    for (Index i = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / warp; i < rows;
         i += std::uint64_t(gridDim.x) * blockDim.x / warp) {
        const double bound = level[i];
        Offset w = cand_off[i];
        for (Offset base = off[i]; base < off[i + 1]; base += warp) {
            const Offset p = base + lane;
            T x{};
            bool keep = false;
            if (p < off[i + 1]) {
                x = T(ev[p]);
                keep = !(double(x) < bound);
            }
            const unsigned ballot = __ballot_sync(0xffffffffu, keep);
            if (keep) out[w + __popc(ballot & ((1u << lane) - 1))] = x;
            w += __popc(ballot);
        }
    }
}

// Per row of the batch: the threshold, the kept count and mass, and the row's chaos. sorted holds, at
// cand_off[i], the row's candidates (level_kernel) in descending order: a prefix of the whole row sorted, long
// enough for every position and count the rule reads, so the result is the same as from the whole row sorted.
// off gives the whole row's length; sumsq its sum of squares. Values are read as double(T) = as stored.
template <class T>
__global__ void threshold_kernel(Index rows, Index row0, Index ncols, const Offset* off, const Offset* cand_off,
                                 const T* sorted, const double* row_sumsq, RowRule r, double* thr,
                                 double* kept_mass, Offset* kept, double* chaos, double* raw_mass,
                                 std::uint8_t* mode) {
    const unsigned lane = threadIdx.x % warp;
    for (Index i = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / warp; i < rows;
         i += std::uint64_t(gridDim.x) * blockDim.x / warp) {
        const Offset len = off[i + 1] - off[i];
        const Offset clen = cand_off[i + 1] - cand_off[i];
        const T* v = sorted + cand_off[i];
        if (len == 0) {
            if (lane == 0) {
                kept[i] = 0;
                mode[i] = 0;
            }
            continue;
        }
        // Count and mass of the entries >= cutoff (all among the candidates).
        double mass = 0;
        unsigned long long n = 0;
        for (Offset p = lane; p < clen; p += warp) {
            const double x = double(v[p]);
            if (x >= r.cutoff) {
                mass += x;
                ++n;
            }
        }
        const double sumsq = row_sumsq[i];
        mass = warp_sum(mass);
        n = warp_sum(n);
        const double mx = double(v[0]);
        // The first position holding a value < x (sorted descending).
        auto count_ge = [&](double x) {
            Offset lo = 0, hi = clen;
            while (lo < hi) {
                Offset mid = lo + (hi - lo) / 2;
                if (double(v[mid]) >= x) lo = mid + 1;
                else hi = mid;
            }
            return lo;
        };
        auto top_mass = [&](Offset k) {
            double s = 0;
            for (Offset p = lane; p < k; p += warp) s += double(v[p]);
            return warp_sum(s);
        };
        double t = r.cutoff;
        if (r.recover > 0 && n < r.recover && mass < r.pct) {
            t = len <= r.recover ? -INFINITY : double(v[r.recover - 1]);
        } else if (r.select > 0 && n > r.select) {
            const double bar = double(v[r.select - 1]);
            const Offset n2 = count_ge(bar);
            const double mass2 = top_mass(n2);
            t = bar;
            if (r.recover > 0 && n2 < r.recover && mass2 < r.pct) t = n <= r.recover ? r.cutoff : double(v[r.recover - 1]);
        }
        Offset k = count_ge(t);
        double km = top_mass(k);
        std::uint8_t md = 1;  // keep entries >= t
        const double pruned_mass = km;  // before the emergency measure (0 when nothing survived)
        if (k == 0) {
            if (row0 + i < ncols) {  // mcl's emergency measure: the unit loop
                md = 2;
                k = 1;
                km = 1;
            } else {  // past the last column: the largest entries
                t = mx;
                k = count_ge(mx);
                km = top_mass(k);
            }
        }
        if (lane == 0) {
            thr[i] = t;
            kept[i] = k;
            kept_mass[i] = km;
            raw_mass[i] = pruned_mass;
            chaos[i] = (mx - sumsq) * double(k);
            mode[i] = md;
        }
    }
}

// Writes the kept entries of each row in column order, divided by the kept mass (a warp per row; ballots
// give each kept entry its position).
template <class T, class V>
__global__ void compact_kernel(Index rows, Index row0, const Offset* off, const ColIndex* cols, const V* vals,
                               const double* thr, const double* kept_mass, const std::uint8_t* mode,
                               const Offset* out_off, ColIndex* out_cols, T* out_vals) {
    const unsigned lane = threadIdx.x % warp;
    for (Index i = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / warp; i < rows;
         i += std::uint64_t(gridDim.x) * blockDim.x / warp) {
        Offset w = out_off[i];
        if (mode[i] == 2) {
            if (lane == 0) {
                out_cols[w] = ColIndex(row0 + i);
                out_vals[w] = T(1);
            }
            continue;
        }
        if (mode[i] == 0) continue;
        const double t = thr[i], mass = kept_mass[i];
        for (Offset base = off[i]; base < off[i + 1]; base += warp) {
            const Offset p = base + lane;
            double x = 0;
            bool keep = false;
            if (p < off[i + 1]) {
                x = stored<T>(vals[p]);
                keep = x >= t;
            }
            const unsigned ballot = __ballot_sync(0xffffffffu, keep);
            if (keep) {
                const Offset at = w + __popc(ballot & ((1u << lane) - 1));
                out_cols[at] = cols[p];
                out_vals[at] = T(x / mass);
            }
            w += __popc(ballot);
        }
    }
}

template <class T>
__global__ void inflate_kernel(Index rows, const Offset* off, T* v, double power) {
    const unsigned lane = threadIdx.x % warp;
    for (Index i = (blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x) / warp; i < rows;
         i += std::uint64_t(gridDim.x) * blockDim.x / warp) {
        double s = 0;
        for (Offset p = off[i] + lane; p < off[i + 1]; p += warp) {
            v[p] = T(pow(double(v[p]), power));
            s += double(v[p]);
        }
        s = warp_sum(s);
        if (s > 0)
            for (Offset p = off[i] + lane; p < off[i + 1]; p += warp) v[p] = T(double(v[p]) / s);
    }
}

// A positive integer from the environment, or 0 when unset or not one.
std::uint64_t env_count(const char* name) {
    if (const char* e = std::getenv(name); e && *e) {
        char* end = nullptr;
        unsigned long long v = std::strtoull(e, &end, 10);
        if (end != e && *end == 0) return v;
    }
    return 0;
}

std::uint64_t free_device_bytes() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    return available_device_bytes(device);
}

std::uint64_t prune_batch_budget() {
    if (const std::uint64_t v = env_count("HYBLA_PRUNE_BATCH")) return v;
    // A batch's unpruned product costs about 60 bytes an entry here (columns, double values, sorted copy,
    // CUB scratch) plus the SpGEMM's own batches; a quarter of the free memory, below CUB's int limit.
    return std::clamp<std::uint64_t>(free_device_bytes() / 4 / 60, std::uint64_t(1) << 20, std::uint64_t(1) << 30);
}

// Rows per batch on the dense-row path: staging and the expanded batch (4 + sizeof(T) B per row x column
// each) plus the candidates and their sorted copy (at most 2 sizeof(T) B per row x column) in a quarter of the
// free memory, and at most 2^31 - 1 slots. HYBLA_PRUNE_BATCH (products) bounds it too, so tests get many batches.
template <class T>
std::uint64_t dense_batch_rows(Index ncols, std::uint64_t products_budget) {
    const std::uint64_t per_row = std::max<std::uint64_t>(1, std::uint64_t(ncols) * (2 * (4 + sizeof(T)) + 2 * sizeof(T)));
    std::uint64_t rows = free_device_bytes() / 4 / per_row;
    rows = std::min<std::uint64_t>(rows, ((std::uint64_t(1) << 31) - 1) / std::max<Index>(ncols, 1));
    if (env_count("HYBLA_PRUNE_BATCH")) rows = std::min<std::uint64_t>(rows, products_budget / std::max<Index>(ncols, 1));
    return std::max<std::uint64_t>(rows, 1);
}

// HYBLA_PRUNE_DENSE: 0 never takes the dense-row path, 1 takes it for every batch it can serve (tests use
// both), unset or anything else: batches whose products are at least a quarter of their rows x columns.
int prune_dense_mode() {
    const char* e = std::getenv("HYBLA_PRUNE_DENSE");
    if (e && std::string_view(e) == "0") return 0;
    if (e && std::string_view(e) == "1") return 1;
    return -1;
}

// An offset less `base`: the offsets of a range of rows as the sort of that range alone sees them.
struct Rebase {
    Offset base;
    __host__ __device__ Offset operator()(Offset o) const { return o - base; }
};

// Sorts each row's candidates cand[off[i] .. off[i + 1]) descending into sorted (the same positions), rows
// [0, rows) with ncand candidates in all, in calls of whole rows within the segmented sort's counts.
template <class T>
void sort_candidates(const T* cand, T* sorted, const Offset* off, Index rows, Offset ncand, Index row0,
                     const Context& ctx) {
    const std::uint64_t cap = env_count("HYBLA_PRUNE_SORT");
    const std::uint64_t max_items = cap ? std::min(cap, max_sort_items) : max_sort_items;
    const std::uint64_t max_rows = cap ? std::min(cap, max_sort_rows) : max_sort_rows;
    auto sort = [&](Index b, Index e, Offset base, Offset items) {
        if (items == 0) return;
        const auto begin = thrust::make_transform_iterator(off + b, Rebase{base});
        std::size_t tmp_bytes = 0;
        check(cub::DeviceSegmentedSort::SortKeysDescending(nullptr, tmp_bytes, cand + base, sorted + base,
                                                           std::int64_t(items), std::int64_t(e - b), begin, begin + 1,
                                                           stream_of(ctx)),
              "mxm_pruned (segmented sort)");
        Array<std::uint8_t> tmp(tmp_bytes, ctx);
        check(cub::DeviceSegmentedSort::SortKeysDescending(tmp.data(), tmp_bytes, cand + base, sorted + base,
                                                           std::int64_t(items), std::int64_t(e - b), begin, begin + 1,
                                                           stream_of(ctx)),
              "mxm_pruned (segmented sort)");
    };
    if (ncand <= max_items && rows <= max_rows) return sort(0, rows, 0, ncand);
    Array<Offset> host(rows + 1);
    host.copy_from(off, ctx, rows + 1);
    for (const RowRange& r : row_batches(host.span(), max_items, max_rows, "mxm_pruned (sorting candidates)", row0))
        sort(r.begin, r.end, host[r.begin], host[r.end] - host[r.begin]);
}

// Rows [r0, r1) of A as a matrix of their own (a copy of that slice of the arrays).
template <class T>
Matrix<T> row_slice(const Matrix<T>& a, Index r0, Index r1, Offset b, Offset e) {
    const Context& ctx = a.context();
    Array<Offset> off(r1 - r0 + 1, ctx);
    const Offset* src = a.storage_offsets().data() + r0;
    Offset* dst = off.data();
    keys::for_each(r1 - r0 + 1, ctx, "mxm_pruned (row slice)", [=] __device__(std::uint64_t i) { dst[i] = src[i] - b; });
    Array<ColIndex> cols(e - b, ctx);
    cols.copy_from(a.storage_indices().data() + b, ctx, e - b);
    Array<T> vals(e - b, ctx);
    vals.copy_from(a.storage_values().data() + b, ctx, e - b);
    return Matrix<T>::adopt_csr(r1 - r0, a.ncols(), e - b, std::move(off), std::move(cols), std::move(vals));
}

// With HYBLA_TRACE=1 each phase of mxm_pruned is timed (the stream is synchronised between phases, for the
// trace only).
class PhaseTimes {
public:
    explicit PhaseTimes(cudaStream_t s) : s_(s), on_(trace_enabled()) {
        double before = 0;  // what was queued before the call
        lap(before);
    }
    // Adds the time since the last lap to `into`.
    void lap(double& into) {
        if (!on_) return;
        check(cudaStreamSynchronize(s_), "mxm_pruned (trace timing)");
        const auto now = std::chrono::steady_clock::now();
        into += std::chrono::duration<double>(now - t_).count() * 1e3;
        t_ = now;
    }
    double expand = 0, round = 0, sort = 0, threshold = 0, compact = 0;  // ms; round: levels and candidates

private:
    cudaStream_t s_;
    bool on_;
    std::chrono::steady_clock::time_point t_ = std::chrono::steady_clock::now();
};

// Prunes rows [row0, row0 + e.nrows()) of the product, e: the unpruned rows, each value as summed (V); the rule
// reads each as stored in T. Returns the kept rows (T) and adds what it saw to stats.
template <class T, class V>
Matrix<T> prune_rows(const Matrix<V>& e, Index row0, const RowRule& rr, bool levels, PruneStats& stats,
                     PhaseTimes& times) {
    const Context& ctx = e.context();
    const cudaStream_t s = stream_of(ctx);
    const Index rows = e.nrows(), n = e.ncols();
    const Offset nnz = e.nvals();
    times.lap(times.expand);
    // Each row's candidates (the entries its rule can look at: level_kernel), as stored (T), sorted descending
    // within the row. On dense rows they are a few percent of the row.
    const Offset* eo = e.storage_offsets().data();
    const V* ev = e.storage_values().data();
    Array<double> sumsq(rows, ctx), level(rows, ctx);
    Array<Offset> cand_off(rows + 1, ctx);
    level_kernel<T, V><<<warp_blocks(rows), warps_per_block * warp, 0, s>>>(rows, eo, ev, rr, levels, sumsq.data(),
                                                                          level.data(), cand_off.data());
    check_launch("mxm_pruned (levels)");
    keys::exclusive_scan(cand_off.data(), std::uint64_t(rows) + 1, ctx);  // the trailing slot becomes the total
    Offset ncand = 0;
    copy(&ncand, cand_off.data() + rows, sizeof ncand, CopyKind::device_to_host, ctx.stream());
    Array<T> cand(ncand, ctx), sorted(ncand, ctx);
    filter_kernel<T, V><<<warp_blocks(rows), warps_per_block * warp, 0, s>>>(rows, eo, ev, level.data(),
                                                                           cand_off.data(), cand.data());
    check_launch("mxm_pruned (candidates)");
    times.lap(times.round);
    if (ncand > 0) sort_candidates<T>(cand.data(), sorted.data(), cand_off.data(), rows, ncand, row0, ctx);
    times.lap(times.sort);
    Array<double> thr(rows, ctx), kept_mass(rows, ctx), chaos(rows, ctx), raw_mass(rows, ctx);
    Array<Offset> kept(rows + 1, ctx);
    Array<std::uint8_t> mode(rows, ctx);
    threshold_kernel<T><<<warp_blocks(rows), warps_per_block * warp, 0, s>>>(
        rows, row0, n, eo, cand_off.data(), sorted.data(), sumsq.data(), rr, thr.data(), kept_mass.data(),
        kept.data(), chaos.data(), raw_mass.data(), mode.data());
    check_launch("mxm_pruned (thresholds)");
    // Statistics (small per-row arrays) on the host; the output offsets from the kept counts.
    const Array<Offset> hk = kept.to(Context::cpu());
    const Array<double> hc = chaos.to(Context::cpu()), hm = raw_mass.to(Context::cpu());
    const Array<std::uint8_t> hmode = mode.to(Context::cpu());
    Array<Offset> out_off_h(rows + 1);
    Offset total = 0;
    for (Index i = 0; i < rows; ++i) {
        out_off_h[i] = total;
        if (hmode[i] == 0) continue;
        total += hk[i];
        stats.chaos = std::max(stats.chaos, hc[i]);
        stats.min_mass = std::min(stats.min_mass, hm[i]);
    }
    out_off_h[rows] = total;
    stats.expanded += nnz;
    stats.kept += total;
    times.lap(times.threshold);
    Array<Offset> out_off = out_off_h.to(ctx);
    Array<ColIndex> out_cols(total, ctx);
    Array<T> out_vals(total, ctx);
    compact_kernel<T, V><<<warp_blocks(rows), warps_per_block * warp, 0, s>>>(
        rows, row0, eo, e.storage_indices().data(), ev, thr.data(), kept_mass.data(), mode.data(), out_off.data(),
        out_cols.data(), out_vals.data());
    check_launch("mxm_pruned (compact)");
    times.lap(times.compact);
    return Matrix<T>::adopt_csr(rows, n, total, std::move(out_off), std::move(out_cols), std::move(out_vals));
}

}  // namespace

template <class T>
Matrix<T> mxm_pruned(const Matrix<T>& a, const Matrix<T>& b, const PruneRule& rule, PruneStats& stats) {
    const Context& ctx = a.context();
    const cudaStream_t s = stream_of(ctx);
    const Index m = a.nrows(), n = b.ncols();
    stats = PruneStats{};
    // Products per row, and their prefix on the host to cut batches.
    Array<Offset> flops(m + 1, ctx);
    row_flops_kernel<<<keys::grid_for(m + 1), keys::block_size, 0, s>>>(m, a.storage_offsets().data(),
                                                                       a.storage_indices().data(),
                                                                       b.storage_offsets().data(), flops.data());
    check_launch("mxm_pruned (row products)");
    const Array<Offset> hf = flops.to(Context::cpu());
    Array<Offset> a_off(m + 1);
    a_off.copy_from(a.storage_offsets().data(), ctx, m + 1);
    const std::uint64_t budget = prune_batch_budget();
    const RowRule rr{rule.cutoff, rule.pct, Offset(rule.select), Offset(rule.recover)};
    // The candidate levels (level_kernel) must all be normal doubles.
    const bool levels = rule.cutoff > 0 && std::isfinite(rule.cutoff) &&
                        std::bit_cast<unsigned long long>(rule.cutoff) >=
                            std::bit_cast<unsigned long long>(std::numeric_limits<double>::min()) + (kLevels - 1) * kLevelStep;
    PhaseTimes times(s);
    std::uint64_t products = 0;
    for (Index i = 0; i < m; ++i) products += hf[i];

    const int dense_mode = prune_dense_mode();
    // The split table (4 bytes per B row and tile) and B's interleaved entries must also fit: B may have far
    // more rows than columns.
    const unsigned tile = dense_rows::tile_width(ctx.device());
    const bool dense_ok = dense_mode != 0 && n <= dense_rows::kMaxCols && n > 0 && b.nvals() <= dense_rows::kMaxEntries &&
                          dense_rows::split_bytes(b, tile) <= free_device_bytes() / 8;
    const std::uint64_t dense_rows_max = dense_ok ? dense_batch_rows<T>(n, budget) : 0;
    std::optional<dense_rows::Split<T>> split;  // built when a batch first takes the dense-row path
    bool a_sign_free = false;                    // found with it
    std::optional<Matrix<double>> bd;  // B in double for the hash path, cast when rows first take it
    std::size_t batches = 0, dense_batches = 0;

    std::vector<Matrix<T>> parts;
    // Rows [r0, r1) by the hash SpGEMM in double, each of its batches (at most `budget` products) pruned as the
    // product's per-row epilogue, its values read as stored in T.
    auto hash_rows = [&](Index r0, Index r1) {
        if (r0 == r1) return;
        const Matrix<double> ad = r0 == 0 && r1 == m ? cast<double, T>(a)
                                                     : cast<double, T>(row_slice(a, r0, r1, a_off[r0], a_off[r1]));
        if (!bd) bd = cast<double, T>(b);
        const RowEpilogue<double, T> prune = [&](Index first, Matrix<double>&& e) {
            ++batches;
            return prune_rows<T, double>(e, r0 + first, rr, levels, stats, times);
        };
        parts.push_back(hash_spgemm_rows<double, T>(ad, *bd, budget, prune));
    };
    // Windows of dense_rows_max rows take the dense-row path when their products are at least a quarter of
    // their rows x columns; the rows between them go to the hash SpGEMM together.
    Index sparse_from = 0;
    for (Index r0 = 0; dense_ok && r0 < m;) {
        const Index r1 = Index(std::min<std::uint64_t>(m, r0 + dense_rows_max));
        std::uint64_t work = 0;
        for (Index i = r0; i < r1; ++i) work += hf[i];
        if (dense_mode == 1 || work >= std::uint64_t(r1 - r0) * n / 4) {
            hash_rows(sparse_from, r0);
            if (!split) {
                split = dense_rows::split_table(b, tile);
                a_sign_free = &a == &b ? split->sign_free : dense_rows::sign_free(a.storage_values().data(), a.nvals(), ctx);
            }
            // The unpruned rows of this window, summed in double and stored as T.
            const Matrix<T> e = dense_rows::multiply<T>(a, r0, r1, b, *split, a_sign_free);
            parts.push_back(prune_rows<T, T>(e, r0, rr, levels, stats, times));
            ++batches;
            ++dense_batches;
            sparse_from = r1;
        }
        r0 = r1;
    }
    hash_rows(sparse_from, m);
    trace("mxm_pruned (GPU): %llu products, %llu entries expanded, %llu kept, %zu batch%s (%zu on dense rows); expand "
          "%.1f ms, prune %.1f ms (candidates %.1f, sort %.1f, threshold %.1f, compact %.1f)",
          (unsigned long long)products, (unsigned long long)stats.expanded, (unsigned long long)stats.kept, batches,
          batches == 1 ? "" : "es", dense_batches, times.expand, times.round + times.sort + times.threshold + times.compact,
          times.round, times.sort, times.threshold, times.compact);
    if (parts.empty()) return Matrix<T>(m, n, ctx);
    return stack_rows(parts, n, ctx);
}

// In place: the pattern and so the entry count stay, and the matrix is remade without reading its last offset
// back (import_csr would, waiting for the kernel and all the work queued before it).
template <class T>
void inflate_rows(Matrix<T>& a, double power) {
    const Context ctx = a.context();
    const Offset nvals = a.nvals();
    CsrArrays<T> csr = std::move(a).export_csr();
    if (csr.nrows > 0) {
        inflate_kernel<T><<<warp_blocks(csr.nrows), warps_per_block * warp, 0, stream_of(ctx)>>>(
            csr.nrows, csr.offsets.data(), csr.values.data(), power);
        check_launch("inflate_rows");
    }
    a = Matrix<T>::adopt_csr(csr.nrows, csr.ncols, nvals, std::move(csr.offsets), std::move(csr.indices),
                             std::move(csr.values));
}

#define HYBLA_INSTANTIATE(T)                                                                                \
    template Matrix<T> mxm_pruned<T>(const Matrix<T>&, const Matrix<T>&, const PruneRule&, PruneStats&); \
    template void inflate_rows<T>(Matrix<T>&, double);
HYBLA_INSTANTIATE(float)
HYBLA_INSTANTIATE(double)
#undef HYBLA_INSTANTIATE

}  // namespace hybla::cuda
