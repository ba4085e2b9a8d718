// Pruned products for Markov clustering: C = A·B computed row by row with every row pruned as it is produced
// (so the unpruned product is never stored whole), and row-wise inflation. The pruning follows van Dongen's
// mcl 22-282 column pruning (../shared/mcl-reference.md §1.3), applied to rows: hybla clusters on the
// row-stochastic transpose, so mcl's column j is hybla's row j.
#pragma once
#include <cmath>
#include <string>

#include "engine/checks.hpp"
#include "engine/cpu/prune.hpp"
#include "engine/prune_rule.hpp"
#include "engine/cuda/backend.hpp"
#include "engine/matrix.hpp"

namespace hybla {

namespace detail {
inline void check_prune_rule(const PruneRule& r) {
    if (!(r.cutoff >= 0) || !std::isfinite(r.cutoff))
        throw InvalidValue("mxm_pruned: the cutoff must be a finite number >= 0, got " + std::to_string(r.cutoff));
    if (!(r.pct >= 0 && r.pct <= 1))
        throw InvalidValue("mxm_pruned: pct must be in [0, 1], got " + std::to_string(r.pct));
}
}  // namespace detail

// C = A·B over plus_times (products and sums in double, each entry then rounded to T), every row pruned by
// `rule` and rescaled to sum 1. A and B hold non-negative values. On the GPU rows are processed in batches
// that fit the memory the device has free, so the unpruned product need not fit.
template <class T>
PruneStats mxm_pruned(Matrix<T>& c, const Matrix<T>& a, const Matrix<T>& b, const PruneRule& rule = {}) {
    static_assert(std::is_floating_point_v<T>, "mxm_pruned works on float or double matrices");
    detail::require(a.ncols() == b.nrows(), "mxm_pruned",
                    "A is " + detail::shape(a.nrows(), a.ncols()) + " but B is " + detail::shape(b.nrows(), b.ncols()));
    detail::check_prune_rule(rule);
    detail::same_context("mxm_pruned", c, a, b);
    PruneStats stats;
    HYBLA_ON_GPU(a) {
        c = cuda::mxm_pruned(a, b, rule, stats);
        return stats;
    }
    c = cpu::mxm_pruned(a, b, rule, stats);
    return stats;
}

// Each row v of A becomes v^power / sum(v^power) (power applied in double and stored as T, the sum in double).
// Empty rows stay empty; power must be > 0.
template <class T>
void inflate_rows(Matrix<T>& a, double power) {
    static_assert(std::is_floating_point_v<T>, "inflate_rows works on float or double matrices");
    if (!(power > 0) || !std::isfinite(power))
        throw InvalidValue("inflate_rows: the power must be a finite number > 0, got " + std::to_string(power));
    HYBLA_ON_GPU(a) {
        cuda::inflate_rows(a, power);
        return;
    }
    cpu::inflate_rows(a, power);
}

}  // namespace hybla
