// How the CUDA backend cuts a large call into pieces that a library's count type or a fixed buffer allows: plain
// host arithmetic, apart from the kernels, so that the tests check its boundaries with synthetic shapes, without
// a GPU and without allocating 2^31 of anything.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/error.hpp"

namespace hybla::cuda {

// CUB's segmented sort counted its items and its segments in int (CCCL 3 takes 64-bit counts, older CUB does
// not): each call stays within both.
inline constexpr std::uint64_t max_sort_items = (std::uint64_t(1) << 31) - 1;
inline constexpr std::uint64_t max_sort_rows = (std::uint64_t(1) << 31) - 1;

struct RowRange {
    Index begin, end;
    bool operator==(const RowRange&) const = default;
};

// Consecutive ranges of whole rows covering rows 0 .. offsets.size() - 2, where row i holds offsets[i + 1] -
// offsets[i] items (offsets: prefix sums, nondecreasing), each range of at most max_items items and max_rows
// rows (max_rows >= 1). A row of more than max_items items fits no range: an InvalidValue naming `what`, the
// row (numbered from first_row) and its count.
inline std::vector<RowRange> row_batches(std::span<const Offset> offsets, std::uint64_t max_items,
                                         std::uint64_t max_rows, const std::string& what, Index first_row = 0) {
    std::vector<RowRange> out;
    if (offsets.size() < 2) return out;
    const Index rows = offsets.size() - 1;
    for (Index b = 0; b < rows;) {
        // The last end e with offsets[e] - offsets[b] <= max_items (a binary search: offsets never decrease).
        const Offset limit = offsets[b] + std::min<Offset>(max_items, std::numeric_limits<Offset>::max() - offsets[b]);
        Index e = Index(std::upper_bound(offsets.begin() + b + 1, offsets.end(), limit) - offsets.begin()) - 1;
        e = std::min<Index>(e, b + std::min<std::uint64_t>(max_rows, rows - b));
        if (e == b)
            throw InvalidValue(what + ": row " + std::to_string(first_row + b) + " holds " +
                               std::to_string(offsets[b + 1] - offsets[b]) + " entries, more than the " +
                               std::to_string(max_items) + " one call can take");
        out.push_back({b, e});
        b = e;
    }
    return out;
}

// How many rows of `width` values of elem_bytes fit max_bytes: at least one, whatever its size; no limit for
// width 0. The SpMM's workers leave up to two partial rows each: it takes no more workers than fit its limit.
inline std::uint64_t rows_within(std::uint64_t width, std::size_t elem_bytes, std::uint64_t max_bytes) {
    if (width == 0 || elem_bytes == 0) return std::numeric_limits<std::uint64_t>::max();
    if (width > max_bytes / elem_bytes) return 1;
    return std::max<std::uint64_t>(1, max_bytes / (width * elem_bytes));
}

}  // namespace hybla::cuda
