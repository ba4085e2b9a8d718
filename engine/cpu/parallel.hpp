// Row-parallel building blocks of the CPU backend. Every output row is computed by one task from its inputs
// alone, so results do not depend on the number of threads or on scheduling.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_scan.h>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/matrix.hpp"

namespace hybla::cpu {

// Calls body(i) for i in [0, n) in parallel.
template <class F>
void parallel_for_each(Index n, F&& body, Index grain = 512) {
    if (n == 0) return;
    if (n <= grain) {
        for (Index i = 0; i < n; ++i) body(i);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<Index>(0, n, grain), [&](const tbb::blocked_range<Index>& r) {
        for (Index i = r.begin(); i != r.end(); ++i) body(i);
    });
}

// Exclusive prefix sum of counts[0..n) into offsets[0..n] (offsets[n] = total).
inline void prefix_sum(const Offset* counts, Offset* offsets, Index n) {
    if (n < (Index(1) << 16)) {
        Offset s = 0;
        for (Index i = 0; i < n; ++i) {
            offsets[i] = s;
            s += counts[i];
        }
        offsets[n] = s;
        return;
    }
    Offset total = tbb::parallel_scan(
        tbb::blocked_range<Index>(0, n, 1 << 14), Offset(0),
        [&](const tbb::blocked_range<Index>& r, Offset s, bool final) {
            for (Index i = r.begin(); i != r.end(); ++i) {
                if (final) offsets[i] = s;
                s += counts[i];
            }
            return s;
        },
        [](Offset a, Offset b) { return a + b; });
    offsets[n] = total;
}

// Splits rows [0, n) into chunks of about equal work, given work prefix sums (work[i] = work of rows < i),
// so that one heavy row does not stall a thread while others idle. Boundaries depend only on the input.
inline std::vector<Index> balanced_boundaries(const Offset* work_prefix, Index n, Index chunks) {
    std::vector<Index> b{0};
    Offset total = work_prefix[n];
    for (Index c = 1; c < chunks; ++c) {
        Offset target = total / chunks * c + (total % chunks) * c / chunks;
        Index r = Index(std::lower_bound(work_prefix, work_prefix + n + 1, target) - work_prefix);
        r = std::min(r, n);
        if (r > b.back()) b.push_back(r);
    }
    if (b.back() != n) b.push_back(n);
    return b;
}

// Calls body(i) for every row, in chunks of about equal work (work_prefix as above).
template <class F>
void parallel_rows_by_work(const Offset* work_prefix, Index n, F&& body) {
    if (n == 0) return;
    Offset total = work_prefix[n];
    if (total < 4096) {
        for (Index i = 0; i < n; ++i) body(i);
        return;
    }
    Index chunks = std::min<Index>(n, std::max<Index>(1, std::min<Offset>(total / 2048, 4096)));
    auto b = balanced_boundaries(work_prefix, n, chunks);
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, b.size() - 1, 1), [&](const tbb::blocked_range<std::size_t>& r) {
        for (std::size_t c = r.begin(); c != r.end(); ++c)
            for (Index i = b[c]; i < b[c + 1]; ++i) body(i);
    });
}

// Builds a CSR matrix row by row in two passes: count(i) gives row i's number of entries, then
// fill(i, cols, vals) writes exactly that many, columns strictly increasing.
template <class T, class Count, class Fill>
Matrix<T> build_rows(Index nrows, Index ncols, Count&& count, Fill&& fill) {
    Array<Offset> counts(nrows + 1);
    parallel_for_each(nrows, [&](Index i) { counts[i] = count(i); });
    Array<Offset> offsets(nrows + 1);
    prefix_sum(counts.data(), offsets.data(), nrows);
    Array<ColIndex> cols(offsets[nrows]);
    Array<T> vals(offsets[nrows]);
    parallel_rows_by_work(offsets.data(), nrows, [&](Index i) { fill(i, cols.data() + offsets[i], vals.data() + offsets[i]); });
    return Matrix<T>::import_csr(nrows, ncols, std::move(offsets), std::move(cols), std::move(vals), false);
}

}  // namespace hybla::cpu
