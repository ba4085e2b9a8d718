// CPU backend of engine/prune.hpp: Gustavson rows with a dense double accumulator per thread; each row is
// pruned as soon as it is complete, so only the pruned product is stored.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include <tbb/enumerable_thread_specific.h>

#include "engine/cpu/parallel.hpp"
#include "engine/matrix.hpp"
#include "engine/prune_rule.hpp"

namespace hybla::cpu {

// The threshold t of engine/prune.hpp's rules for one row: keep the entries >= t. vals holds the row's values
// (any order); scratch is reused. Returns -infinity to keep everything.
inline double prune_threshold(const std::vector<double>& vals, double cutoff, Index select, Index recover, double pct,
                              std::vector<double>& scratch) {
    constexpr double all = -std::numeric_limits<double>::infinity();
    Index n = 0;
    double mass = 0;
    for (double v : vals)
        if (v >= cutoff) {
            ++n;
            mass += v;
        }
    const auto desc = std::greater<double>();
    // The k-th largest (k >= 1) of scratch.
    auto kth_largest = [&](Index k) {
        std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), desc);
        return scratch[k - 1];
    };
    if (recover > 0 && n < recover && mass < pct) {
        if (vals.size() <= recover) return all;
        scratch.clear();
        for (double v : vals)
            if (v < cutoff) scratch.push_back(v);
        return kth_largest(recover - n);  // recover - n <= scratch.size() since vals.size() > recover
    }
    if (select > 0 && n > select) {
        scratch.clear();
        for (double v : vals)
            if (v >= cutoff) scratch.push_back(v);
        const double bar = kth_largest(select);
        Index n2 = 0;
        double mass2 = 0;
        for (double v : vals)
            if (v >= bar) {
                ++n2;
                mass2 += v;
            }
        if (recover > 0 && n2 < recover && mass2 < pct) {
            if (n <= recover) return cutoff;
            // The survivors of the cutoff, largest first: the first n2 are >= bar, the recover-th is the new bar.
            return kth_largest(recover);
        }
        return bar;
    }
    return cutoff;
}

namespace detail {
struct PruneRowState {
    std::vector<double> acc;
    std::vector<Index> stamp;
    std::vector<ColIndex> touched;
    std::vector<double> vals, scratch;
};
struct PruneRowResult {
    std::vector<ColIndex> cols;
    std::vector<double> vals;  // kept values before rounding to T
    double chaos = 0, mass = 1;
    Offset expanded = 0;
    bool nonempty = false;
};
}  // namespace detail

template <class T>
Matrix<T> mxm_pruned(const Matrix<T>& a, const Matrix<T>& b, const PruneRule& rule, PruneStats& stats) {
    const Index m = a.nrows(), n = b.ncols();
    const auto ao = a.row_offsets();
    const auto ac = a.col_indices();
    const auto av = a.values();
    const auto bo = b.row_offsets();
    const auto bc = b.col_indices();
    const auto bv = b.values();
    tbb::enumerable_thread_specific<detail::PruneRowState> states([&] {
        detail::PruneRowState s;
        s.acc.assign(n, 0.0);
        s.stamp.assign(n, std::numeric_limits<Index>::max());
        return s;
    });
    std::vector<detail::PruneRowResult> rows(m);
    Array<Offset> work(m + 1);
    {
        Array<Offset> flops(m + 1);
        parallel_for_each(m, [&](Index i) {
            Offset f = 0;
            for (Offset p = ao[i]; p < ao[i + 1]; ++p) f += bo[ac[p] + 1] - bo[ac[p]];
            flops[i] = f + 1;
        });
        prefix_sum(flops.data(), work.data(), m);
    }
    parallel_rows_by_work(work.data(), m, [&](Index i) {
        detail::PruneRowState& s = states.local();
        detail::PruneRowResult& r = rows[i];
        s.touched.clear();
        const Offset flops = work[i + 1] - work[i] - 1;
        const bool float_products = rule.mcl_float_products && flops * 10 >= n;
        for (Offset p = ao[i]; p < ao[i + 1]; ++p) {
            const ColIndex k = ac[p];
            const double x = double(av[p]);
            for (Offset q = bo[k]; q < bo[k + 1]; ++q) {
                const ColIndex j = bc[q];
                const double prod = float_products ? double(float(av[p]) * float(bv[q])) : x * double(bv[q]);
                if (s.stamp[j] != i) {
                    s.stamp[j] = i;
                    s.acc[j] = prod;
                    s.touched.push_back(j);
                } else {
                    s.acc[j] += prod;
                }
            }
        }
        if (s.touched.empty()) return;
        std::sort(s.touched.begin(), s.touched.end());
        s.vals.resize(s.touched.size());
        double mx = 0, sumsq = 0;
        for (std::size_t x = 0; x < s.touched.size(); ++x) {
            const double v = double(T(s.acc[s.touched[x]]));  // the expanded entry as stored (mcl: float32)
            s.vals[x] = v;
            mx = std::max(mx, v);
            sumsq += v * v;
        }
        const double t = prune_threshold(s.vals, rule.cutoff, rule.select, rule.recover, rule.pct, s.scratch);
        double mass = 0;
        for (std::size_t x = 0; x < s.touched.size(); ++x)
            if (s.vals[x] >= t) {
                r.cols.push_back(s.touched[x]);
                r.vals.push_back(s.vals[x]);
                mass += s.vals[x];
            }
        r.nonempty = true;
        r.expanded = s.touched.size();
        r.mass = mass;
        if (r.cols.empty()) {  // mcl's emergency measure: the unit loop (the largest entries past the last column)
            if (i < n) {
                r.cols.push_back(ColIndex(i));
                r.vals.push_back(1.0);
                mass = 1.0;
            } else {
                for (std::size_t x = 0; x < s.touched.size(); ++x)
                    if (s.vals[x] == mx) {
                        r.cols.push_back(s.touched[x]);
                        r.vals.push_back(mx);
                        mass += mx;
                    }
            }
        }
        for (double& v : r.vals) v = double(T(v / mass));
        r.chaos = (mx - sumsq) * double(r.cols.size());
    });
    stats = PruneStats{};
    for (const auto& r : rows)
        if (r.nonempty) {
            stats.chaos = std::max(stats.chaos, r.chaos);
            stats.expanded += r.expanded;
            stats.kept += r.cols.size();
            stats.min_mass = std::min(stats.min_mass, r.mass);
        }
    return build_rows<T>(m, n, [&](Index i) { return Offset(rows[i].cols.size()); },
                         [&](Index i, ColIndex* cols, T* vals) {
                             const auto& r = rows[i];
                             std::copy(r.cols.begin(), r.cols.end(), cols);
                             for (std::size_t x = 0; x < r.vals.size(); ++x) vals[x] = T(r.vals[x]);
                         });
}

// v <- v^power / sum(v^power): the powers are stored as T, summed in double, and each divided by the sum.
template <class T>
void inflate_rows(Matrix<T>& a, double power) {
    CsrArrays<T> csr = std::move(a).export_csr();
    const Offset* off = csr.offsets.data();
    T* v = csr.values.data();
    parallel_rows_by_work(off, csr.nrows, [&](Index i) {
        double sum = 0;
        for (Offset p = off[i]; p < off[i + 1]; ++p) {
            v[p] = T(std::pow(double(v[p]), power));
            sum += double(v[p]);
        }
        if (sum > 0)
            for (Offset p = off[i]; p < off[i + 1]; ++p) v[p] = T(double(v[p]) / sum);
    });
    a = Matrix<T>::import_csr(std::move(csr), false);
}

}  // namespace hybla::cpu
