// spmv_check: cuda::spmv (mxv / vxm on the GPU) against the CPU backend's spmv_pull on empty, tiny, odd,
// random, power-law and skewed matrices (rows of degree 10^5 and 10^6, long runs of empty rows), with u full,
// partly present or empty, with and without a mask (and its complement), for the semirings and value types
// the algorithms use, flipped and not. One line per case, "PASS name" or "FAIL name: first difference";
// exit status 1 on any failure. --small shrinks the big cases (for compute-sanitizer). Presence must match
// exactly, and so must integer, bool, min/max and `any` values; floating sums within a relative 1e-9
// (double) or 1e-4 (float), since the GPU adds a row's terms in a different grouping.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

// matrix.hpp first: it pulls in the CPU builders in the order they need.
#include "engine/matrix.hpp"
#include "engine/cpu/spmv.hpp"
#include "engine/cuda/backend.hpp"
#include "engine/vector.hpp"
#include "semirings/semiring.hpp"

using namespace hybla;

namespace {

bool small = false;
int failures = 0;
int passes = 0;
std::mt19937_64 rng(20241122);

std::vector<ColIndex> sample_cols(Index n, Index d) {
    d = std::min(d, n);
    std::vector<ColIndex> out;
    out.reserve(d);
    if (d * 4 >= n) {
        Index need = d;
        for (Index j = 0; j < n && need > 0; ++j)
            if (rng() % (n - j) < need) {
                out.push_back(ColIndex(j));
                --need;
            }
    } else {
        std::unordered_set<ColIndex> seen;
        while (out.size() < d) {
            ColIndex j = ColIndex(rng() % n);
            if (seen.insert(j).second) out.push_back(j);
        }
        std::sort(out.begin(), out.end());
    }
    return out;
}

template <class T>
T random_value() {
    if constexpr (std::is_same_v<T, bool>) return rng() % 4 != 0;
    else if constexpr (std::is_floating_point_v<T>) return T(0.5 + double(rng() % 1000000) / 1000000.0);
    else if constexpr (std::is_signed_v<T>) return T(int(rng() % 41) - 20);
    else return T(rng() % 256);
}

// The shape of a test matrix: degrees per row (host), built per value type with the same pattern.
struct Shape {
    std::string name;
    Index nrows = 0, ncols = 0;
    std::vector<Index> degree;
};

Shape random_shape(std::string name, Index m, Index n, double density) {
    Shape s{std::move(name), m, n, std::vector<Index>(m)};
    std::binomial_distribution<Index> deg(n, density);
    for (auto& d : s.degree) d = n ? deg(rng) : 0;
    return s;
}
// Degrees from a Pareto tail: most rows short, a few hubs.
Shape power_law_shape(std::string name, Index m, Index n, double avg) {
    Shape s{std::move(name), m, n, std::vector<Index>(m)};
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto& d : s.degree) {
        double x = avg * 0.4 / std::pow(1.0 - u(rng) * 0.999999, 1.0 / 1.6);
        d = std::min<Index>(n, Index(x));
    }
    return s;
}

template <class T>
Matrix<T> build(const Shape& s) {
    Array<Offset> off(s.nrows + 1);
    off[0] = 0;
    for (Index i = 0; i < s.nrows; ++i) off[i + 1] = off[i] + std::min(s.degree[i], s.ncols);
    Array<ColIndex> cols(off[s.nrows]);
    Array<T> vals(off[s.nrows]);
    for (Index i = 0; i < s.nrows; ++i) {
        auto c = sample_cols(s.ncols, s.degree[i]);
        for (std::size_t q = 0; q < c.size(); ++q) {
            cols[off[i] + q] = c[q];
            vals[off[i] + q] = random_value<T>();
        }
    }
    return Matrix<T>::import_csr(s.nrows, s.ncols, std::move(off), std::move(cols), std::move(vals), true);
}

enum class UKind { full, half, sparse, none };
const char* ukind_name(UKind k) {
    switch (k) {
        case UKind::full: return "u full";
        case UKind::half: return "u half";
        case UKind::sparse: return "u 5%";
        case UKind::none: return "u empty";
    }
    return "?";
}
// A dense u; absent entries hold junk, which must not leak into the result.
template <class T>
Vector<T> make_u(Index n, UKind kind) {
    Array<T> vals(n);
    Array<std::uint8_t> bm(n);
    for (Index i = 0; i < n; ++i) {
        vals[i] = random_value<T>();
        switch (kind) {
            case UKind::full: bm[i] = 1; break;
            case UKind::half: bm[i] = rng() % 2; break;
            case UKind::sparse: bm[i] = rng() % 20 == 0; break;
            case UKind::none: bm[i] = 0; break;
        }
    }
    return Vector<T>::import_dense(n, std::move(vals), std::move(bm));
}

enum class MaskKind { none, mask, complement };
const char* mask_name(MaskKind k) { return k == MaskKind::none ? "no mask" : k == MaskKind::mask ? "mask" : "!mask"; }

// An n x 1 mask pattern on the device and the CPU's view of it (allowed rows).
struct MaskData {
    Array<Offset> off;
    Array<ColIndex> cols;
    cuda::MaskPattern pattern;
    std::vector<std::uint8_t> allowed;
    bool used = false;
};
MaskData make_mask(Index n, MaskKind kind, const Context& ctx) {
    MaskData md;
    if (kind == MaskKind::none) return md;
    Array<Offset> off(n + 1);
    off[0] = 0;
    md.allowed.resize(n);
    for (Index i = 0; i < n; ++i) {
        const bool in = rng() % 3 != 0;
        off[i + 1] = off[i] + in;
        md.allowed[i] = in != (kind == MaskKind::complement);
    }
    Array<ColIndex> cols(off[n], ColIndex(0));
    md.off = off.to(ctx);
    md.cols = cols.to(ctx);
    md.pattern = {md.off.data(), md.cols.data(), kind == MaskKind::complement};
    md.used = true;
    return md;
}

// Fills a large stretch of the device pool with junk and frees it, so unwritten outputs show up.
void poison(const Context& ctx, std::size_t bytes) {
    Array<std::uint8_t> junk(bytes, ctx);
    junk.fill(std::uint8_t(0xA7));
}

template <class T>
bool close(T g, T c) {
    if constexpr (std::is_floating_point_v<T>) {
        if (g == c) return true;  // infinities too
        if (std::isnan(c) || std::isnan(g)) return std::isnan(c) && std::isnan(g);
        const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-9;
        return std::fabs(double(g) - double(c)) <= tol * std::max(1.0, std::fabs(double(c)));
    } else {
        return g == c;
    }
}

template <class T>
std::string show(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::to_string(double(v));
    else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
    else if constexpr (std::is_signed_v<T>) return std::to_string(std::int64_t(v));
    else return std::to_string(std::uint64_t(v));
}

// Runs one case: body returns what failed ("" when it passed) or throws; prints PASS/FAIL and counts.
template <class F>
void run_case(const std::string& full, F body) {
    try {
        const std::string failed = body();
        if (!failed.empty()) {
            std::printf("FAIL %s: %s\n", full.c_str(), failed.c_str());
            ++failures;
            return;
        }
        std::printf("PASS %s\n", full.c_str());
        ++passes;
    } catch (const std::exception& e) {
        std::printf("FAIL %s: exception: %s\n", full.c_str(), e.what());
        ++failures;
    }
}

template <class... A>
std::string say(const char* fmt, A... args) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

template <class Sr, class T, bool Flip>
void check_case(const std::string& name, const Matrix<T>& a, const Matrix<T>& ga, UKind uk, MaskKind mk,
                const Context& ctx) {
    const std::string full = name + " [" + ukind_name(uk) + ", " + mask_name(mk) + (Flip ? ", flip" : "") + "]";
    run_case(full, [&]() -> std::string {
        Vector<T> u = make_u<T>(a.ncols(), uk);
        MaskData md = make_mask(a.nrows(), mk, ctx);
        Vector<T> ref = cpu::spmv_pull<Sr, T, Flip>(a, u, md.used ? md.allowed.data() : nullptr);
        Vector<T> gu = u.to(ctx);
        poison(ctx, std::size_t(a.nrows()) * (sizeof(T) + 1) * 2 + (std::size_t(1) << 20));
        Vector<T> got = cuda::spmv<T>(ga, gu, cuda::semiring_code_of<Sr>::value, Flip, md.used ? &md.pattern : nullptr);
        Vector<T> h = got.to(Context::cpu());
        if (h.size() != ref.size() || !h.is_dense())
            return say("size %zu dense %d, expected size %zu", size_t(h.size()), int(h.is_dense()), size_t(ref.size()));
        const auto hb = h.storage_bitmap(), rb = ref.storage_bitmap();
        const auto hv = h.storage_values(), rv = ref.storage_values();
        Index count = 0;
        for (Index i = 0; i < h.size(); ++i) {
            if (hb[i] > 1) return say("bitmap(%zu) = %d, not 0 or 1", size_t(i), int(hb[i]));
            count += hb[i];
            if (hb[i] != rb[i]) return say("w(%zu) present %d, expected %d", size_t(i), int(hb[i]), int(rb[i]));
            if (rb[i] && !close(hv[i], rv[i]))
                return say("w(%zu) = %s, expected %s", size_t(i), show(hv[i]).c_str(), show(rv[i]).c_str());
        }
        if (h.nvals() != count || ref.nvals() != count)
            return say("nvals %zu, bitmap holds %zu, expected %zu", size_t(h.nvals()), size_t(count), size_t(ref.nvals()));
        return "";
    });
}

// cuda::spmv_plus_accumulate (w + A u, u and w full) against w + the CPU's spmv_pull: every row present, rows
// spanning tiles included (their w is added once, by the fixup).
template <class T>
void check_accumulate(const std::string& name, const Matrix<T>& a, const Matrix<T>& ga, const Context& ctx) {
    run_case(name + " [u full, accumulating into a full w]", [&]() -> std::string {
        const Vector<T> u = make_u<T>(a.ncols(), UKind::full), w = make_u<T>(a.nrows(), UKind::full);
        const Vector<T> t = cpu::spmv_pull<plus_times, T, false>(a, u, nullptr);
        poison(ctx, std::size_t(a.nrows()) * (sizeof(T) + 1) * 2 + (std::size_t(1) << 20));
        const Vector<T> h = cuda::spmv_plus_accumulate<T>(ga, u.to(ctx), w.to(ctx)).to(Context::cpu());
        if (h.size() != a.nrows() || !h.is_dense() || h.nvals() != a.nrows())
            return say("size %zu nvals %zu dense %d, expected a full vector of %zu", size_t(h.size()),
                       size_t(h.nvals()), int(h.is_dense()), size_t(a.nrows()));
        const auto hb = h.storage_bitmap(), tb = t.storage_bitmap();
        const auto hv = h.storage_values(), tv = t.storage_values(), wv = w.storage_values();
        for (Index i = 0; i < h.size(); ++i) {
            const T want = tb[i] ? T(wv[i] + tv[i]) : wv[i];
            if (hb[i] != 1 || !close(hv[i], want))
                return say("w(%zu) = %s (present %d), expected %s", size_t(i), show(hv[i]).c_str(), int(hb[i]),
                           show(want).c_str());
        }
        return "";
    });
}

template <class Sr, class T>
void both_flips(const std::string& name, const Matrix<T>& a, const Matrix<T>& ga, UKind uk, MaskKind mk,
                const Context& ctx) {
    check_case<Sr, T, false>(name, a, ga, uk, mk, ctx);
    check_case<Sr, T, true>(name, a, ga, uk, mk, ctx);
}

template <class T>
const char* tname() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
    else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
    else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
    else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
    else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else return "double";
}

// Every u and mask variant for plus_times on T (the fast path for float and double, the general kernel
// for the rest and for masked or partly present u).
template <class T>
void plus_times_all(const Shape& s, const Context& ctx, bool all_variants) {
    Matrix<T> a = build<T>(s);
    Matrix<T> ga = a.to(ctx);
    const std::string name = s.name + " plus_times " + tname<T>();
    const UKind uks[] = {UKind::full, UKind::half, UKind::sparse, UKind::none};
    const MaskKind mks[] = {MaskKind::none, MaskKind::mask, MaskKind::complement};
    for (UKind uk : uks)
        for (MaskKind mk : mks) {
            if (!all_variants && !(uk == UKind::full && mk == MaskKind::none) && !(uk == UKind::half && mk == MaskKind::mask))
                continue;
            check_case<plus_times, T, false>(name, a, ga, uk, mk, ctx);
        }
    if constexpr (std::is_floating_point_v<T>) check_accumulate<T>(name, a, ga, ctx);
}

// Other semirings, one u/mask variant each (rotating), both flips where the multiply is not symmetric.
template <class T>
void semirings_on(const Shape& s, const Context& ctx, int& rot) {
    Matrix<T> a = build<T>(s);
    Matrix<T> ga = a.to(ctx);
    const std::string base = s.name + " " + tname<T>() + " ";
    const UKind uks[] = {UKind::full, UKind::half, UKind::sparse, UKind::full};
    const MaskKind mks[] = {MaskKind::none, MaskKind::none, MaskKind::mask, MaskKind::complement};
    auto next = [&](UKind& uk, MaskKind& mk) {
        uk = uks[rot % 4];
        mk = mks[(rot / 4 + rot) % 4];
        ++rot;
    };
    UKind uk;
    MaskKind mk;
    next(uk, mk);
    check_case<plus_times, T, false>(base + "plus_times", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<min_plus, T, false>(base + "min_plus", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<max_times, T, false>(base + "max_times", a, ga, uk, mk, ctx);
    next(uk, mk);
    both_flips<plus_first, T>(base + "plus_first", a, ga, uk, mk, ctx);
    next(uk, mk);
    both_flips<min_second, T>(base + "min_second", a, ga, uk, mk, ctx);
    next(uk, mk);
    both_flips<any_first, T>(base + "any_first", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<any_pair, T, false>(base + "any_pair", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<plus_pair, T, false>(base + "plus_pair", a, ga, uk, mk, ctx);
    next(uk, mk);
    both_flips<semiring<plus_monoid, minus_op>, T>(base + "plus_minus", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<semiring<times_monoid, plus_op>, T, false>(base + "times_plus", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<lor_land, T, false>(base + "lor_land", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<lxor_land, T, false>(base + "lxor_land", a, ga, uk, mk, ctx);
    next(uk, mk);
    check_case<max_min, T, false>(base + "max_min", a, ga, uk, mk, ctx);
    if constexpr (std::is_floating_point_v<T>) check_accumulate<T>(base + "plus_times", a, ga, ctx);
}

void all_types(const Shape& s, const Context& ctx, int& rot) {
    semirings_on<bool>(s, ctx, rot);
    semirings_on<std::uint8_t>(s, ctx, rot);
    semirings_on<std::int32_t>(s, ctx, rot);
    semirings_on<std::uint32_t>(s, ctx, rot);
    semirings_on<std::int64_t>(s, ctx, rot);
    semirings_on<std::uint64_t>(s, ctx, rot);
    semirings_on<float>(s, ctx, rot);
    semirings_on<double>(s, ctx, rot);
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--small") == 0) small = true;
    if (!cuda_usable()) {
        std::printf("FAIL setup: no usable CUDA GPU\n");
        return 1;
    }
    const Context ctx = Context::cuda();
    int rot = 0;

    // Degenerate and tiny shapes, every type and semiring.
    std::vector<Shape> tiny = {
        random_shape("0x0", 0, 0, 0.0),     random_shape("0x5", 0, 5, 0.0),     random_shape("5x0", 5, 0, 0.0),
        random_shape("1x1 empty", 1, 1, 0.0), random_shape("1x1", 1, 1, 1.0), random_shape("7x13 d0.3", 7, 13, 0.3),
        random_shape("50x50 d0.5", 50, 50, 0.5), random_shape("300x1 d0.5", 300, 1, 0.5),
    };
    for (const auto& s : tiny) all_types(s, ctx, rot);

    // Medium shapes: every type on a random and a power-law matrix.
    const Index med = small ? 2000 : 20000;
    all_types(random_shape("odd " + std::to_string(med + 1) + "x" + std::to_string(med - 3) + " d0.002", med + 1,
                           med - 3, 0.002),
              ctx, rot);
    all_types(power_law_shape("power-law " + std::to_string(med), med, med, 8.0), ctx, rot);

    // Shapes aimed at the load balance, plus_times on float and double with every u/mask variant.
    std::vector<Shape> balance;
    balance.push_back(random_shape("3000x3000 empty", 3000, 3000, 0.0));
    balance.push_back(random_shape("1000x997 d0.01", 1000, 997, 0.01));
    {
        // Rows that span a few tiles each (short runs of carries).
        Shape s = random_shape("300 rows of ~5000", 300, 20000, 0.0);
        for (auto& d : s.degree) d = 4000 + rng() % 2000;
        balance.push_back(s);
    }
    {
        // A hub of degree 10^5 among short rows: a run of carries longer than a warp.
        Shape s = random_shape("skewed 2000x200000", 2000, 200000, 0.0);
        for (auto& d : s.degree) d = rng() % 5;
        s.degree[17] = 100000;
        s.degree[1999] = 150000;
        s.degree[18] = 40000;
        balance.push_back(s);
    }
    {
        // Long runs of empty rows between the few non-empty ones.
        const Index m = small ? 20000 : 200000;
        Shape s = random_shape("mostly empty rows " + std::to_string(m), m, 1000, 0.0);
        for (auto& d : s.degree) d = rng() % 100 == 0 ? 1 + rng() % 50 : 0;
        balance.push_back(s);
    }
    if (!small) {
        Shape s = random_shape("row of degree 10^6", 5, 1200000, 0.0);
        s.degree = {3, 1000000, 0, 70000, 1};
        balance.push_back(s);
        balance.push_back(power_law_shape("power-law 300000", 300000, 300000, 16.0));
    }
    for (const auto& s : balance) {
        plus_times_all<float>(s, ctx, true);
        plus_times_all<double>(s, ctx, true);
        plus_times_all<std::int64_t>(s, ctx, false);
        plus_times_all<bool>(s, ctx, false);
        int r = rot;
        Matrix<float> a = build<float>(s);
        Matrix<float> ga = a.to(ctx);
        check_case<min_plus, float, false>(s.name + " min_plus float", a, ga, UKind::half, MaskKind::none, ctx);
        check_case<any_first, float, true>(s.name + " any_first float", a, ga, UKind::full, MaskKind::complement, ctx);
        rot = r + 1;
    }

    // A context on its own stream: the fast path returns before its last two kernels finish.
    {
        cudaStream_t st = nullptr;
        if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess) {
            std::printf("FAIL stream: cudaStreamCreate\n");
            ++failures;
        } else {
            const Context sctx = Context::cuda(0, st);
            Shape s = power_law_shape("own stream power-law", small ? 5000 : 100000, small ? 5000 : 100000, 12.0);
            Matrix<float> a = build<float>(s);
            Matrix<float> ga = a.to(sctx);
            for (int k = 0; k < 3; ++k)
                check_case<plus_times, float, false>(s.name + " #" + std::to_string(k), a, ga, UKind::full, MaskKind::none, sctx);
            cudaStreamSynchronize(st);
            // The arrays above are freed in stream order before the stream goes away.
        }
    }

    std::printf("%s: %d passed, %d failed\n", failures ? "FAILED" : "ALL PASSED", passes, failures);
    return failures ? 1 : 0;
}
