// R-MAT graphs (Chakrabarti, Zhan & Faloutsos 2004) with the Graph500 parameters, for the benchmark.
//
// scale s gives n = 2^s vertices and edge_factor * n generated edges. Each edge picks one quadrant of the
// adjacency matrix per bit level with probabilities a, b, c, d (Graph500: 0.57, 0.19, 0.19, 0.05); vertex ids
// are then scrambled by a random permutation, as Graph500 does, so that the hubs are not all at low ids
// (which would flatter any kernel through cache locality). The result is the undirected simple graph:
// symmetrised, duplicates and self-loops removed, every value 1.0 — so it has fewer than 2 * edge_factor * n
// entries.
//
// Deterministic for a seed whatever the number of threads: edges are generated in fixed blocks, each with its
// own std::mt19937_64 seeded from (seed, block).
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include "engine/hybla.hpp"

namespace hybla::bench {

struct RmatParams {
    int scale = 16;
    int edge_factor = 16;
    double a = 0.57, b = 0.19, c = 0.19;  // d = 1 - a - b - c = 0.05
    std::uint64_t seed = 42;
};

// splitmix64: turns (seed, block) into well-spread seeds for the per-block generators.
inline std::uint64_t mix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The undirected simple graph of the given arcs (both directions stored, no self-loops, no duplicates,
// values 1.0) as a CSR matrix. keys are (u << 32 | v) and are consumed.
inline Matrix<double> simple_undirected_from_keys(Index n, std::vector<std::uint64_t>& keys) {
    const std::size_t m = keys.size();
    keys.resize(2 * m);
    tbb::parallel_for(std::size_t(0), m, [&](std::size_t k) {
        const std::uint64_t x = keys[k];
        keys[m + k] = (x << 32) | (x >> 32);
    });
    keys.erase(std::remove_if(keys.begin(), keys.end(), [](std::uint64_t x) { return (x >> 32) == (x & 0xFFFFFFFFu); }),
               keys.end());
    tbb::parallel_sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    const std::size_t nnz = keys.size();
    Array<Offset> off(n + 1, Offset(0));
    Array<ColIndex> col(nnz);
    Array<double> val(nnz, 1.0);
    for (std::size_t k = 0; k < nnz; ++k) {
        ++off[(keys[k] >> 32) + 1];
        col[k] = ColIndex(keys[k] & 0xFFFFFFFFu);
    }
    for (Index i = 0; i < n; ++i) off[i + 1] += off[i];
    std::vector<std::uint64_t>().swap(keys);
    return Matrix<double>::import_csr(n, n, std::move(off), std::move(col), std::move(val), false);
}

inline Matrix<double> rmat(const RmatParams& p) {
    const Index n = Index(1) << p.scale;
    const std::size_t m = std::size_t(p.edge_factor) * n;
    constexpr std::size_t block = std::size_t(1) << 16;
    const std::size_t nblocks = (m + block - 1) / block;
    const double ab = p.a + p.b;
    const double a_in_top = p.a / ab;                 // P(left | top half)
    const double c_in_bottom = p.c / (1.0 - ab);      // P(left | bottom half)

    // The vertex scramble: a Fisher-Yates permutation from the seed.
    std::vector<std::uint32_t> perm(n);
    std::iota(perm.begin(), perm.end(), 0u);
    {
        std::mt19937_64 g(mix64(p.seed ^ 0x5EED5EEDull));
        for (Index i = n - 1; i > 0; --i) {
            std::uniform_int_distribution<Index> pick(0, i);
            std::swap(perm[i], perm[pick(g)]);
        }
    }

    std::vector<std::uint64_t> keys(m);
    tbb::parallel_for(std::size_t(0), nblocks, [&](std::size_t blk) {
        std::mt19937_64 g(mix64(p.seed * 0x100000001B3ull + blk));
        std::uniform_real_distribution<double> unif(0.0, 1.0);
        const std::size_t e = std::min(m, (blk + 1) * block);
        for (std::size_t k = blk * block; k < e; ++k) {
            std::uint64_t u = 0, v = 0;
            for (int level = 0; level < p.scale; ++level) {
                const double r = unif(g);
                const double s = unif(g);
                // Row bit: bottom half with probability c + d; column bit given the row half.
                const bool down = r >= ab;
                const bool right = down ? s >= c_in_bottom : s >= a_in_top;
                u = (u << 1) | std::uint64_t(down);
                v = (v << 1) | std::uint64_t(right);
            }
            keys[k] = (std::uint64_t(perm[u]) << 32) | perm[v];
        }
    });
    return simple_undirected_from_keys(n, keys);
}

}  // namespace hybla::bench
