// The pruning rule and statistics of mxm_pruned (engine/prune.hpp), shared by the front end and the backends.
#pragma once
#include "engine/config.hpp"

namespace hybla {

// mcl's pruning of one expanded row e (all values positive). Defaults = mcl's scheme 6 (-P 10000 -S 1100
// -R 1400 -pct 90). Every rule below ends in one threshold t per row: the row keeps the entries >= t.
//  1. cutoff: keep e_i >= cutoff (mcl: 0.99999/P; 0 = keep all); n, mass = count and sum of those.
//  2. recovery: if recover > 0, n < recover and mass < pct, keep also the (recover - n) largest entries below the
//     cutoff (all entries equal to the last one kept; everything when e has at most `recover` entries);
//  3. else selection: if select > 0 and n > select, keep the select largest (all entries equal to the select-th
//     kept), and if then fewer than `recover` remain with mass < pct, also the next largest cutoff survivors up
//     to `recover` in all.
//  4. A non-empty row i where nothing survives (only possible with recover = 0) becomes the unit entry (i, i)
//     (past the last column of a rectangular product: its largest entries).
//  5. The kept entries are divided by their sum.
struct PruneRule {
    double cutoff = 0.99999 / 10000;
    Index select = 1100;
    Index recover = 1400;
    double pct = 0.90;
    // mcl's dense expansion kernel rounds each product to float before the double sum when
    // 10 * (products of the row) >= ncols; with this flag the CPU backend does the same (bit-compatible with
    // mcl). The GPU forms products in double always.
    bool mcl_float_products = true;
};

// What pruning saw, summed over the rows.
struct PruneStats {
    double chaos = 0;       // max over rows of (max e_i - sum e_i^2) * (entries kept): mcl's chaos
    Offset expanded = 0;    // entries of the unpruned product
    Offset kept = 0;        // entries kept
    double min_mass = 1;    // smallest kept mass (before rescaling) over non-empty rows: mcl's jury marks
};

}  // namespace hybla
