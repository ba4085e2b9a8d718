// Decoupled look-back for one-launch exclusive sums over tiles (the hash SpGEMM's row offsets, the label
// numbering's ranks): each tile publishes its own sum at once and its inclusive prefix once known, and a later
// tile adds the published sums of the tiles before it back to the first that has published its prefix.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/config.hpp"

namespace hybla::cuda::look_back {

// A state word per tile, zeroed before the launch; its top two bits say what the rest holds (own: the tile's own
// sum; prefix: its inclusive prefix).
inline constexpr unsigned long long own = 1ull << 62, prefix = 2ull << 62, value = own - 1;

// By a whole warp, for tile `tile` whose own sum is agg: publishes agg at once, then adds the earlier tiles'
// published sums, 32 at a time, back to the first that publishes its inclusive prefix; publishes its own and
// returns the sum of all earlier tiles. Tiles must be taken in order (each earlier one by a running block, which
// publishes without waiting).
__device__ inline Offset exclusive(unsigned long long* state, std::uint64_t tile, Offset agg) {
    constexpr unsigned full = 0xFFFFFFFFu;
    const unsigned lane = threadIdx.x & 31;
    volatile unsigned long long* const st = state;
    if (tile == 0) {
        if (lane == 0) st[0] = prefix | agg;
        return 0;
    }
    if (lane == 0) st[tile] = own | agg;
    Offset before = 0;
    for (std::int64_t p = std::int64_t(tile) - 1;; p -= 32) {
        const std::int64_t q = p - std::int64_t(lane);
        unsigned long long v = 0;
        if (q >= 0)
            do v = st[q];
            while (v == 0);
        const unsigned done = __ballot_sync(full, (v & prefix) != 0);
        Offset mine = Offset(v & value);
        if (done && lane > unsigned(__ffs(done) - 1)) mine = 0;
        for (unsigned d = 16; d > 0; d >>= 1) mine += __shfl_xor_sync(full, mine, d);
        before += mine;
        if (done) break;
    }
    if (lane == 0) st[tile] = prefix | (before + agg);
    return before;
}

}  // namespace hybla::cuda::look_back
