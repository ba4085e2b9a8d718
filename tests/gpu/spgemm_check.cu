// spgemm_check: cuda::spgemm against the CPU backend's SpGEMM on random, empty, tiny, rectangular, skewed
// and masked products, for the semirings the algorithms use. One line per case, "PASS name" or
// "FAIL name: first difference"; exit status 1 on any failure. --small shrinks the big cases (for
// compute-sanitizer). Integer, bool, min/max and `any` results must match exactly; floating sums within
// a relative 1e-9 (double) or 1e-4 (float), since long runs are combined in blocks.
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
#include "engine/cpu/spgemm.hpp"
#include "engine/cuda/backend.hpp"
#include "semirings/semiring.hpp"

using namespace hybla;

namespace {

bool small = false;
int failures = 0;
std::mt19937_64 rng(20240611);

// d distinct sorted columns out of n.
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
    if constexpr (std::is_same_v<T, bool>) return rng() % 4 != 0;  // some explicit false entries too
    else if constexpr (std::is_floating_point_v<T>) return T(0.5 + double(rng() % 1000000) / 1000000.0);
    else if constexpr (std::is_signed_v<T>) return T(int(rng() % 41) - 20);
    else return T(rng() % 256);
}

template <class T>
Matrix<T> from_degrees(Index m, Index n, const std::vector<Index>& degree) {
    Array<Offset> off(m + 1);
    off[0] = 0;
    for (Index i = 0; i < m; ++i) off[i + 1] = off[i] + std::min(degree[i], n);
    Array<ColIndex> cols(off[m]);
    Array<T> vals(off[m]);
    for (Index i = 0; i < m; ++i) {
        auto c = sample_cols(n, degree[i]);
        for (std::size_t q = 0; q < c.size(); ++q) {
            cols[off[i] + q] = c[q];
            vals[off[i] + q] = random_value<T>();
        }
    }
    return Matrix<T>::import_csr(m, n, std::move(off), std::move(cols), std::move(vals), true);
}

// Random degrees around density * n; skew: {row, degree} pairs that override.
template <class T>
Matrix<T> random_matrix(Index m, Index n, double density, std::vector<std::pair<Index, Index>> skew = {}) {
    std::vector<Index> degree(m, 0);
    if (n > 0 && density > 0) {
        std::binomial_distribution<Index> bin(n, std::min(1.0, density));
        for (auto& d : degree) d = bin(rng);
    }
    for (auto [i, d] : skew)
        if (i < m) degree[i] = d;
    return from_degrees<T>(m, n, degree);
}

template <class T>
bool close(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
        const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-9;
        const double dx = double(x), dy = double(y);
        return std::fabs(dx - dy) <= tol * std::max({1.0, std::fabs(dx), std::fabs(dy)});
    } else {
        return x == y;
    }
}

template <class T>
std::string show(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::to_string(double(v));
    else if constexpr (std::is_signed_v<T>) return std::to_string(static_cast<long long>(v));
    else return std::to_string(static_cast<unsigned long long>(v));
}

// The first difference between two host matrices, or "" when they agree.
template <class T>
std::string first_difference(const Matrix<T>& got, const Matrix<T>& want) {
    if (got.nrows() != want.nrows() || got.ncols() != want.ncols())
        return "shape " + detail::shape(got.nrows(), got.ncols()) + ", expected " +
               detail::shape(want.nrows(), want.ncols());
    const auto go = got.storage_offsets(), wo = want.storage_offsets();
    const auto gc = got.storage_indices(), wc = want.storage_indices();
    const auto gv = got.storage_values(), wv = want.storage_values();
    if (go.size() != wo.size()) return "offsets array of " + std::to_string(go.size()) + " entries";
    for (Index i = 0; i < want.nrows(); ++i) {
        Offset pg = go[i], pw = wo[i];
        while (pg < go[i + 1] || pw < wo[i + 1]) {
            if (pg == go[i + 1])
                return "row " + std::to_string(i) + ": missing (" + std::to_string(i) + "," + std::to_string(wc[pw]) + ")";
            if (pw == wo[i + 1])
                return "row " + std::to_string(i) + ": extra (" + std::to_string(i) + "," + std::to_string(gc[pg]) + ")";
            if (gc[pg] != wc[pw])
                return "row " + std::to_string(i) + ": column " + std::to_string(gc[pg]) + ", expected " +
                       std::to_string(wc[pw]);
            if (!close(gv[pg], wv[pw]))
                return "(" + std::to_string(i) + "," + std::to_string(gc[pg]) + ") = " + show(gv[pg]) + ", expected " +
                       show(wv[pw]);
            ++pg;
            ++pw;
        }
    }
    if (got.nvals() != want.nvals())
        return "nvals " + std::to_string(got.nvals()) + ", expected " + std::to_string(want.nvals());
    if (go[want.nrows()] != got.nvals()) return "last offset differs from nvals";
    return "";
}

void report(const std::string& name, const std::string& diff) {
    if (diff.empty()) {
        std::printf("PASS %s\n", name.c_str());
    } else {
        std::printf("FAIL %s: %s\n", name.c_str(), diff.c_str());
        ++failures;
    }
    std::fflush(stdout);
}

// Runs C = A ⊕.⊗ B (under mask, complemented or not) on the GPU and on the CPU (Gustavson) and compares.
// bt, when given, is Bᵀ as CSR: the CPU's dot method is checked too (masked, non-complemented).
template <class Sr, class T>
void check(const std::string& name, const Matrix<T>& a, const Matrix<T>& b, const Matrix<bool>* mask = nullptr,
           bool complement = false, const Matrix<T>* bt = nullptr) {
    try {
        Descriptor d;
        d.mask_structure = true;
        d.mask_complement = complement;
        Matrix<T> want = mask ? cpu::spgemm_saxpy<Sr, T>(a, b, *mask, d) : cpu::spgemm_saxpy<Sr, T>(a, b, NoMask{}, d);

        const Context gpu = Context::cuda();
        Matrix<T> ag = a.to(gpu), bg = b.to(gpu);
        Matrix<bool> mg = mask ? mask->to(gpu) : Matrix<bool>(0, 0, gpu);
        cuda::MaskPattern mp{mg.storage_offsets().data(), mg.storage_indices().data(), complement};
        Matrix<T> got = cuda::spgemm<T>(ag, bg, cuda::semiring_code_of<Sr>::value, mask ? &mp : nullptr);
        if (!got.context().is_cuda()) {
            report(name, "the result does not live on the GPU");
            return;
        }
        Matrix<T> host = got.to(Context::cpu());
        std::string diff = first_difference(host, want);
        if (diff.empty() && bt && mask && !complement) {
            Matrix<T> dot = cpu::spgemm_dot<Sr, T>(a, *bt, *mask, d);
            diff = first_difference(host, dot);
            if (!diff.empty()) diff = "against the CPU dot method: " + diff;
        }
        report(name, diff);
    } catch (const std::exception& e) {
        report(name, std::string("exception: ") + e.what());
    }
}

Matrix<bool> pattern_of_random(Index m, Index n, double density) { return random_matrix<bool>(m, n, density); }

// Lower triangle (strict) of a random symmetric graph with a hub vertex: C<L> = L·Uᵀ = L·L (Uᵀ = L).
Matrix<std::int64_t> lower_triangle_graph(Index n, double density, Index hub) {
    std::vector<std::vector<ColIndex>> rows(n);
    std::bernoulli_distribution edge(density);
    for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < i; ++j)
            if (edge(rng) || i == hub || j == hub) rows[i].push_back(ColIndex(j));
    Array<Offset> off(n + 1);
    off[0] = 0;
    for (Index i = 0; i < n; ++i) off[i + 1] = off[i] + rows[i].size();
    Array<ColIndex> cols(off[n]);
    Array<std::int64_t> vals(off[n]);
    for (Index i = 0; i < n; ++i)
        for (std::size_t q = 0; q < rows[i].size(); ++q) {
            cols[off[i] + q] = rows[i][q];
            vals[off[i] + q] = 1;
        }
    return Matrix<std::int64_t>::import_csr(n, n, std::move(off), std::move(cols), std::move(vals), true);
}

template <class T>
Matrix<bool> as_pattern(const Matrix<T>& a) {
    Array<Offset> off(a.storage_offsets().size());
    std::copy(a.storage_offsets().begin(), a.storage_offsets().end(), off.begin());
    Array<ColIndex> cols(a.nvals());
    std::copy(a.storage_indices().begin(), a.storage_indices().end(), cols.begin());
    return Matrix<bool>::import_csr(a.nrows(), a.ncols(), std::move(off), std::move(cols), Array<bool>(a.nvals(), true),
                                    false);
}

// For a scope: batches of rows of at most v products (HYBLA_SPGEMM_BATCH, both SpGEMMs) and, in the hash SpGEMM,
// unmasked rows of more than v products by tiles of 300 columns (HYBLA_SPGEMM_HUB, HYBLA_SPGEMM_TILE).
struct Budget {
    explicit Budget(const char* v) {
        setenv("HYBLA_SPGEMM_BATCH", v, 1);
        setenv("HYBLA_SPGEMM_HUB", v, 1);
        setenv("HYBLA_SPGEMM_TILE", "300", 1);
    }
    ~Budget() {
        unsetenv("HYBLA_SPGEMM_BATCH");
        unsetenv("HYBLA_SPGEMM_HUB");
        unsetenv("HYBLA_SPGEMM_TILE");
    }
};

template <class T>
void all_types_case(const char* tname) {
    auto a = random_matrix<T>(61, 47, 0.1);
    auto b = random_matrix<T>(47, 53, 0.1);
    check<plus_times, T>(std::string("plus_times ") + tname + " 61x47*47x53", a, b);
    check<min_plus, T>(std::string("min_plus ") + tname, a, b);
    check<max_times, T>(std::string("max_times ") + tname, a, b);
    check<any_second, T>(std::string("any_second ") + tname, a, b);
    auto mask = pattern_of_random(61, 53, 0.3);
    check<plus_times, T>(std::string("plus_times ") + tname + " masked", a, b, &mask, false);
    check<plus_times, T>(std::string("plus_times ") + tname + " complemented mask", a, b, &mask, true);
}

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--small") == 0) small = true;
    try {
        (void)Context::cuda();
    } catch (const std::exception& e) {
        std::printf("FAIL setup: %s\n", e.what());
        return 1;
    }
    const Index s = small ? 10 : 1;  // shrink factor for the big cases

    // Empty operands and products without any term.
    {
        using M = Matrix<double>;
        check<plus_times, double>("empty 0x0*0x0", M(0, 0, Context::cpu()), M(0, 0, Context::cpu()));
        check<plus_times, double>("empty 0x5*5x3", M(0, 5, Context::cpu()), random_matrix<double>(5, 3, 0.5));
        check<plus_times, double>("empty 5x0*0x3", M(5, 0, Context::cpu()), M(0, 3, Context::cpu()));
        check<plus_times, double>("empty 4x6*6x0", random_matrix<double>(4, 6, 0.5), M(6, 0, Context::cpu()));
        check<plus_times, double>("no entries in A", M(5, 3, Context::cpu()), random_matrix<double>(3, 4, 0.5));
        check<plus_times, double>("no entries in B", random_matrix<double>(5, 3, 0.5), M(3, 4, Context::cpu()));
        // A's entries only hit empty rows of B.
        auto a = from_degrees<double>(3, 4, {0, 0, 0});
        std::vector<Index> bdeg = {0, 0, 3, 0};
        auto b = from_degrees<double>(4, 5, bdeg);
        auto a2 = from_degrees<double>(3, 4, {2, 1, 0});  // columns drawn at random: may or may not hit row 2
        check<plus_times, double>("A hits empty rows of B", a, b);
        check<plus_times, double>("A partly hits empty rows of B", a2, b);
        auto mask = Matrix<bool>(5, 3, Context::cpu());
        auto full = random_matrix<double>(5, 7, 0.6);
        auto bb = random_matrix<double>(7, 3, 0.6);
        check<plus_times, double>("mask without entries", full, bb, &mask, false);
        check<plus_times, double>("complement of a mask without entries", full, bb, &mask, true);
    }
    // 1x1.
    {
        Array<Offset> o1 = {0, 1};
        Array<ColIndex> c1 = {0};
        Array<double> va = {2.0}, vb = {3.0};
        auto a = Matrix<double>::import_csr(1, 1, o1, c1, va);
        auto b = Matrix<double>::import_csr(1, 1, o1, c1, vb);
        auto mask = Matrix<bool>::import_csr(1, 1, o1, c1, Array<bool>{true});
        check<plus_times, double>("1x1", a, b);
        check<plus_times, double>("1x1 masked", a, b, &mask, false);
        check<plus_times, double>("1x1 complemented mask", a, b, &mask, true);
        check<min_plus, double>("1x1 min_plus", a, b);
    }
    // Every value type.
    all_types_case<bool>("bool");
    all_types_case<std::uint8_t>("uint8");
    all_types_case<std::int32_t>("int32");
    all_types_case<std::uint32_t>("uint32");
    all_types_case<std::int64_t>("int64");
    all_types_case<std::uint64_t>("uint64");
    all_types_case<float>("float");
    all_types_case<double>("double");

    // Semirings on random and rectangular shapes.
    for (auto [m, k, n, dens] : std::vector<std::tuple<Index, Index, Index, double>>{
             {200, 150, 170, 0.05}, {37, 91, 13, 0.2}, {1, 1000, 1, 0.5}, {1000 / s, 1, 1000 / s, 0.9}, {300, 300, 300, 0.0},
             {513, 257, 129, 0.5}, {2000 / s, 1500 / s, 1700 / s, 0.003}}) {
        const std::string shape = " " + std::to_string(m) + "x" + std::to_string(k) + "*" + std::to_string(k) + "x" +
                                  std::to_string(n) + " d=" + std::to_string(dens).substr(0, 5);
        auto ad = random_matrix<double>(m, k, dens), bd = random_matrix<double>(k, n, dens);
        auto af = random_matrix<float>(m, k, dens), bf = random_matrix<float>(k, n, dens);
        auto ai = random_matrix<std::int64_t>(m, k, dens), bi = random_matrix<std::int64_t>(k, n, dens);
        auto ab = random_matrix<bool>(m, k, dens), bbool = random_matrix<bool>(k, n, dens);
        check<plus_times, double>("plus_times double" + shape, ad, bd);
        check<plus_times, float>("plus_times float" + shape, af, bf);
        check<min_plus, std::int64_t>("min_plus int64" + shape, ai, bi);
        check<lor_land, bool>("lor_land bool" + shape, ab, bbool);
        check<lxor_land, bool>("lxor_land bool" + shape, ab, bbool);
        check<land_lor, bool>("land_lor bool" + shape, ab, bbool);
        check<plus_pair, std::int64_t>("plus_pair int64" + shape, ai, bi);
        check<any_pair, std::int64_t>("any_pair int64" + shape, ai, bi);
        check<any_first, std::int64_t>("any_first int64" + shape, ai, bi);
        check<any_second, double>("any_second double" + shape, ad, bd);
        check<max_min, std::int64_t>("max_min int64" + shape, ai, bi);
        check<max_min, double>("max_min double" + shape, ad, bd);
        check<min_first, std::int64_t>("min_first int64" + shape, ai, bi);
        check<plus_second, std::int64_t>("plus_second int64" + shape, ai, bi);
        auto mask = pattern_of_random(m, n, 0.3);
        check<plus_times, double>("plus_times double masked" + shape, ad, bd, &mask, false);
        check<plus_times, double>("plus_times double complemented" + shape, ad, bd, &mask, true);
        check<min_plus, std::int64_t>("min_plus int64 masked" + shape, ai, bi, &mask, false);
        check<min_plus, std::int64_t>("min_plus int64 complemented" + shape, ai, bi, &mask, true);
        check<any_second, double>("any_second double masked" + shape, ad, bd, &mask, false);
        check<lor_land, bool>("lor_land bool complemented" + shape, ab, bbool, &mask, true);
    }

    // Triangle counting: C<L> = L·Uᵀ with plus_pair (B = Uᵀ = L), also against the CPU's dot method.
    for (auto [n, dens] : std::vector<std::pair<Index, double>>{{300, 0.05}, {1000 / s, 0.02}, {50, 0.5}}) {
        auto l = lower_triangle_graph(n, dens, n / 2);
        auto u = cpu::transpose(l);
        auto mask = as_pattern(l);
        const std::string tag = " n=" + std::to_string(n);
        check<plus_pair, std::int64_t>("triangles plus_pair C<L>=L*U'" + tag, l, l, &mask, false, &u);
        check<plus_times, std::int64_t>("triangles plus_times C<L>=L*U'" + tag, l, l, &mask, false, &u);
        check<any_pair, std::int64_t>("triangles any_pair C<L>=L*U'" + tag, l, l, &mask, false, &u);
        check<plus_pair, std::int64_t>("triangles plus_pair C<!L>" + tag, l, l, &mask, true);
        Budget budget("500");
        check<plus_pair, std::int64_t>("triangles plus_pair C<L> budget 500" + tag, l, l, &mask, false, &u);
    }

    // Skewed: a row of degree 3000 hitting rows of B of degree 1000 (3e6 products in one row, output entries
    // of hundreds of terms), with a small budget so that the big row is a batch of its own.
    {
        const Index big = 3000 / s, bdeg = 1000 / s;
        auto a = random_matrix<double>(50, 5000 / s, 0.002, {{7, big}, {8, big / 3}});
        auto b = random_matrix<double>(5000 / s, 4000 / s, double(bdeg) / double(4000 / s));
        auto ai = random_matrix<std::int64_t>(50, 5000 / s, 0.002, {{7, big}, {8, big / 3}});
        auto bi = random_matrix<std::int64_t>(5000 / s, 4000 / s, double(bdeg) / double(4000 / s));
        auto mask = pattern_of_random(50, 4000 / s, 0.3);
        check<plus_times, double>("big row plus_times double", a, b);
        check<min_plus, std::int64_t>("big row min_plus int64", ai, bi);
        check<any_second, std::int64_t>("big row any_second int64", ai, bi);
        {
            Budget budget("100000");
            check<plus_times, double>("big row plus_times double, budget 1e5", a, b);
            check<plus_pair, std::int64_t>("big row plus_pair int64, budget 1e5", ai, bi);
            check<min_plus, std::int64_t>("big row min_plus int64 masked, budget 1e5", ai, bi, &mask, false);
            check<plus_times, double>("big row plus_times double complemented, budget 1e5", a, b, &mask, true);
            check<any_first, std::int64_t>("big row any_first int64, budget 1e5", ai, bi);
        }
        {
            Budget budget("1");  // every row its own batch
            check<plus_times, double>("big row plus_times double, a batch per row", a, b);
            check<max_min, std::int64_t>("big row max_min int64 masked, a batch per row", ai, bi, &mask, false);
        }
    }
    // A row of degree 1e5 hitting rows of degree 10 in 50 columns: output entries of ~2e4 terms each.
    {
        const Index deg = 100000 / s;
        auto a = random_matrix<float>(100, 200000 / s, 0.00001, {{3, deg}});
        auto b = random_matrix<float>(200000 / s, 50, 0.2);
        auto ai = random_matrix<std::int64_t>(100, 200000 / s, 0.00001, {{3, deg}});
        auto bi = random_matrix<std::int64_t>(200000 / s, 50, 0.2);
        check<plus_times, float>("row of degree 1e5 plus_times float", a, b);
        check<plus_times, std::int64_t>("row of degree 1e5 plus_times int64", ai, bi);
        check<plus_pair, std::int64_t>("row of degree 1e5 plus_pair int64", ai, bi);
        check<any_second, float>("row of degree 1e5 any_second float", a, b);
        check<max_min, float>("row of degree 1e5 max_min float", a, b);
        Budget budget("4096");
        check<plus_times, std::int64_t>("row of degree 1e5 plus_times int64, batches of 4096", ai, bi);
    }
    // Many small batches over many rows, with a mask.
    {
        auto a = random_matrix<double>(3000 / s, 800, 0.01), b = random_matrix<double>(800, 900, 0.01);
        auto mask = pattern_of_random(3000 / s, 900, 0.1);
        Budget budget("2000");
        check<plus_times, double>("budget 2000 plus_times double", a, b);
        check<plus_times, double>("budget 2000 plus_times double masked", a, b, &mask, false);
        check<plus_times, double>("budget 2000 plus_times double complemented", a, b, &mask, true);
    }

    std::printf("%s: %d failure%s\n", failures ? "FAIL" : "PASS", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
