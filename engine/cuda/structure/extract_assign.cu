// extract (C = A(I, J)) and assign (C(I, J) = A, no mask) on the GPU.
//
// extract: the column list is inverted as sorted keys (j << 32 | c), so that the output positions c of a
// column j are one range found by binary search (J may repeat and be unsorted). The entries of the selected
// rows are numbered contiguously ("virtual entries", a prefix sum over the selected rows' degrees); each gets
// its multiplicity in J, a second prefix sum gives every output entry its place, and each output entry finds
// its virtual entry by binary search, so neither a heavy row nor a heavily repeated column serialises. When J
// is non-decreasing the output is already ordered within rows; otherwise one key sort orders it. All of that
// is pattern work compiled once (extract_plan); the value type only enters in the final gather.
//
// assign: A's entries are mapped to C's coordinates as keys (sorted unless I and J are both increasing) and
// turned into a CSR in C's shape; without accum, C's entries inside the region are first dropped (the
// compaction of select); then the union merge of engine/cuda/structure/keys.cuh (accum(c, a) where both exist;
// the operands are disjoint without accum) gives Z.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/cuda/structure/keys.cuh"
#include "engine/matrix.hpp"

namespace hybla::cuda {

namespace structure2 {
// Defined in apply_select.cu.
Offset compact_pattern(const Offset* offsets, const ColIndex* cols, Index nrows, Offset nnz, Offset* flags,
                       Array<Offset>& out_offsets, Array<ColIndex>& out_cols, const Context& ctx);
}  // namespace structure2

namespace {

using namespace keys;

template <class T>
Offset read_one(const T* p, const Context& ctx) {
    T v{};
    check(cudaMemcpyAsync(&v, p, sizeof(T), cudaMemcpyDeviceToHost, stream_of(ctx)), "cudaMemcpyAsync (read)");
    check(cudaStreamSynchronize(stream_of(ctx)), "cudaStreamSynchronize (read)");
    return Offset(v);
}

template <class T>
Array<T> upload(const std::vector<T>& h, const Context& ctx) {
    return Array<T>(std::span<const T>(h)).to(ctx);
}

std::vector<ColIndex> narrow(const std::vector<Index>& v) {
    std::vector<ColIndex> out(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) out[k] = ColIndex(v[k]);
    return out;
}

Array<Offset> zeros(std::uint64_t n, const Context& ctx) {
    Array<Offset> z(n, ctx);
    if (n) check(cudaMemsetAsync(z.data(), 0, n * sizeof(Offset), stream_of(ctx)), "cudaMemsetAsync");
    return z;
}

// The pattern of A(rows, cols) and, per output entry, the position in A of its value.
struct ExtractPlan {
    Array<Offset> offsets;
    Array<ColIndex> cols;
    Array<Offset> src;
    Offset nnz = 0;
};

ExtractPlan extract_plan(const Offset* aoff, const ColIndex* acol, Index ancols, const std::vector<Index>& rows,
                         const std::vector<Index>& cols, const Context& ctx) {
    ExtractPlan plan;
    const Index nr = rows.size(), nc = cols.size();
    if (nr == 0 || nc == 0) {
        plan.offsets = zeros(nr + 1, ctx);
        plan.cols = Array<ColIndex>(0, ctx);
        plan.src = Array<Offset>(0, ctx);
        return plan;
    }
    bool identity = nc == ancols, sorted = true;
    std::vector<Key> h_keys(nc);
    for (Index c = 0; c < nc; ++c) {
        identity = identity && cols[c] == c;
        sorted = sorted && (c == 0 || cols[c - 1] <= cols[c]);
        h_keys[c] = make_key(cols[c], c);
    }

    Array<ColIndex> d_rows = upload(narrow(rows), ctx);
    const ColIndex* rl = d_rows.data();
    // S[r]: entries of the selected rows before row r.
    Array<Offset> starts(nr + 1, ctx);
    Offset* s = starts.data();
    for_each(nr, ctx, "extract (degrees)", [=] __device__(std::uint64_t r) { s[r] = aoff[rl[r] + 1] - aoff[rl[r]]; });
    exclusive_scan(s, nr + 1, ctx);
    const Offset ne = read_one(s + nr, ctx);
    if (ne == 0) {
        plan.offsets = zeros(nr + 1, ctx);
        plan.cols = Array<ColIndex>(0, ctx);
        plan.src = Array<Offset>(0, ctx);
        return plan;
    }
    // P[e]: A's position of virtual entry e.
    Array<Offset> pos(ne, ctx);
    Offset* pp = pos.data();
    for_each(ne, ctx, "extract (positions)", [=] __device__(std::uint64_t e) {
        Index r = row_of(s, nr, e);
        pp[e] = aoff[rl[r]] + (e - s[r]);
    });

    if (identity) {  // every column once, in place: the selected rows as they are
        plan.nnz = ne;
        plan.offsets = std::move(starts);
        plan.cols = Array<ColIndex>(ne, ctx);
        ColIndex* oc = plan.cols.data();
        for_each(ne, ctx, "extract (columns)", [=] __device__(std::uint64_t e) { oc[e] = acol[pp[e]]; });
        plan.src = std::move(pos);
        return plan;
    }

    Array<Key> d_inv = upload(h_keys, ctx);
    if (!sorted) sort_keys(d_inv, bits_for(ancols), bits_for(nc), false, ctx);
    const Key* inv = d_inv.data();
    // Multiplicities of the virtual entries' columns, then their output positions O.
    Array<Offset> outpos(ne + 1, ctx);
    Offset* op = outpos.data();
    for_each(ne, ctx, "extract (multiplicities)", [=] __device__(std::uint64_t e) {
        const ColIndex j = acol[pp[e]];
        op[e] = upper_bound(inv, 0, nc, make_key(j, 0xffffffffu)) - lower_bound(inv, 0, nc, make_key(j, 0));
    });
    exclusive_scan(op, ne + 1, ctx);
    plan.nnz = read_one(op + ne, ctx);
    plan.offsets = Array<Offset>(nr + 1, ctx);
    Offset* off = plan.offsets.data();
    for_each(nr + 1, ctx, "extract (offsets)", [=] __device__(std::uint64_t r) { off[r] = op[s[r]]; });
    const Offset nnz = plan.nnz;
    plan.src = Array<Offset>(nnz, ctx);
    plan.cols = Array<ColIndex>(nnz, ctx);
    if (nnz == 0) return plan;
    Offset* src = plan.src.data();
    if (sorted) {
        ColIndex* oc = plan.cols.data();
        for_each(nnz, ctx, "extract (entries)", [=] __device__(std::uint64_t x) {
            const Index e = row_of(op, ne, x);
            const Offset p = pp[e];
            src[x] = p;
            oc[x] = key_col(inv[lower_bound(inv, 0, nc, make_key(acol[p], 0)) + (x - op[e])]);
        });
        return plan;
    }
    Array<Key> out_keys(nnz, ctx);
    Key* ok = out_keys.data();
    for_each(nnz, ctx, "extract (entries)", [=] __device__(std::uint64_t x) {
        const Index e = row_of(op, ne, x);
        const Offset p = pp[e];
        src[x] = p;
        const ColIndex c = key_col(inv[lower_bound(inv, 0, nc, make_key(acol[p], 0)) + (x - op[e])]);
        ok[x] = make_key(row_of(off, nr, x), c);
    });
    Array<Offset> perm = sort_keys(out_keys, bits_for(nr), bits_for(nc), false, ctx);
    keys_to_cols(out_keys.data(), nnz, plan.cols.data(), ctx);
    Array<Offset> sorted_src(nnz, ctx);
    gather(src, perm.data(), nnz, sorted_src.data(), ctx);
    plan.src = std::move(sorted_src);
    return plan;
}

// The pattern side of assign.
struct AssignPlan {
    // C's entries that take part (all of C with accum; those outside the region without).
    bool filtered = false;
    Array<Offset> kept_scan;  // filtered: the compaction scan over C's entries
    Array<Offset> kept_offsets;
    Array<ColIndex> kept_cols;
    Offset kept_nnz = 0;
    // A in C's coordinates, as a CSR in C's shape; a_perm: A's position of each (when A's order changed).
    Array<Offset> a_offsets;
    Array<ColIndex> a_cols;
    Array<Offset> a_perm;
    bool a_permuted = false;
    MergePlan merge;
};

AssignPlan assign_plan(Index cnrows, Index cncols, const Offset* coff, const ColIndex* ccol, Offset cnnz,
                       const Offset* aoff, const ColIndex* acol, Offset annz, const std::vector<Index>& rows,
                       const std::vector<Index>& cols, bool accum, const Context& ctx) {
    AssignPlan plan;
    const Index nr = rows.size(), nc = cols.size();
    bool increasing = true;
    for (Index r = 1; r < nr; ++r) increasing = increasing && rows[r - 1] < rows[r];
    for (Index c = 1; c < nc; ++c) increasing = increasing && cols[c - 1] < cols[c];
    Array<ColIndex> d_rows = upload(narrow(rows), ctx);
    Array<ColIndex> d_cols = upload(narrow(cols), ctx);
    const ColIndex* rl = d_rows.data();
    const ColIndex* cl = d_cols.data();

    if (!accum && cnnz > 0) {
        Array<std::uint8_t> in_rows(cnrows, ctx), in_cols(cncols, ctx);
        check(cudaMemsetAsync(in_rows.data(), 0, cnrows, stream_of(ctx)), "cudaMemsetAsync");
        check(cudaMemsetAsync(in_cols.data(), 0, cncols, stream_of(ctx)), "cudaMemsetAsync");
        std::uint8_t* ir = in_rows.data();
        std::uint8_t* ic = in_cols.data();
        for_each(nr, ctx, "assign (rows)", [=] __device__(std::uint64_t r) { ir[rl[r]] = 1; });
        for_each(nc, ctx, "assign (columns)", [=] __device__(std::uint64_t c) { ic[cl[c]] = 1; });
        plan.kept_scan = Array<Offset>(cnnz + 1, ctx);
        Offset* f = plan.kept_scan.data();
        for_each(cnnz, ctx, "assign (outside the region)", [=] __device__(std::uint64_t p) {
            f[p] = !(ir[row_of(coff, cnrows, p)] && ic[ccol[p]]);
        });
        plan.filtered = true;
        plan.kept_nnz = structure2::compact_pattern(coff, ccol, cnrows, cnnz, f, plan.kept_offsets, plan.kept_cols, ctx);
    } else {
        plan.kept_nnz = cnnz;
    }

    Array<Key> a_keys(annz, ctx);
    Key* ak = a_keys.data();
    for_each(annz, ctx, "assign (keys)", [=] __device__(std::uint64_t p) {
        ak[p] = make_key(rl[row_of(aoff, nr, p)], cl[acol[p]]);
    });
    if (!increasing && annz > 0) {
        plan.a_perm = sort_keys(a_keys, bits_for(cnrows), bits_for(cncols), false, ctx);
        plan.a_permuted = true;
    }
    plan.a_offsets = keys_to_offsets(a_keys.data(), annz, cnrows, ctx);
    plan.a_cols = Array<ColIndex>(annz, ctx);
    keys_to_cols(a_keys.data(), annz, plan.a_cols.data(), ctx);

    MergeInput left{plan.filtered ? plan.kept_offsets.data() : coff, plan.filtered ? plan.kept_cols.data() : ccol,
                    plan.kept_nnz};
    MergeInput right{plan.a_offsets.data(), plan.a_cols.data(), annz};
    plan.merge = merge_plan(cnrows, cncols, left, right, MergeRule::union_, ctx);
    return plan;
}

}  // namespace

template <class T>
Matrix<T> extract(const Matrix<T>& a, const std::vector<Index>& rows, const std::vector<Index>& cols) {
    const Context& ctx = a.context();
    ExtractPlan plan = extract_plan(a.storage_offsets().data(), a.storage_indices().data(), a.ncols(), rows, cols, ctx);
    Array<T> vals(plan.nnz, ctx);
    gather(a.storage_values().data(), plan.src.data(), plan.nnz, vals.data(), ctx);
    return Matrix<T>::adopt_csr(rows.size(), cols.size(), plan.nnz, std::move(plan.offsets), std::move(plan.cols),
                                std::move(vals));
}

template <class T>
void assign(Matrix<T>& c, const Matrix<T>& a, const std::vector<Index>& rows, const std::vector<Index>& cols,
            const BinaryOp* accum) {
    const Context& ctx = c.context();
    if (rows.empty() || cols.empty()) return;       // an empty region
    if (accum && a.nvals() == 0) return;            // nothing to combine
    if (!accum && a.nvals() == 0 && c.nvals() == 0) return;
    AssignPlan plan = assign_plan(c.nrows(), c.ncols(), c.storage_offsets().data(), c.storage_indices().data(), c.nvals(),
                                  a.storage_offsets().data(), a.storage_indices().data(), a.nvals(), rows, cols,
                                  accum != nullptr, ctx);
    // C's values that take part.
    Array<T> kept_vals;
    const T* cv = c.storage_values().data();
    if (plan.filtered) {
        kept_vals = Array<T>(plan.kept_nnz, ctx);
        T* kv = kept_vals.data();
        const Offset* f = plan.kept_scan.data();
        if (plan.kept_nnz > 0)
            for_each(c.nvals(), ctx, "assign (kept values)", [=] __device__(std::uint64_t p) {
                if (f[p + 1] != f[p]) kv[f[p]] = cv[p];
            });
        cv = kv;
    }
    // A's values in key order.
    Array<T> a_sorted;
    const T* av = a.storage_values().data();
    if (plan.a_permuted) {
        a_sorted = Array<T>(a.nvals(), ctx);
        gather(av, plan.a_perm.data(), a.nvals(), a_sorted.data(), ctx);
        av = a_sorted.data();
    }
    Array<T> vals(plan.merge.nnz, ctx);
    merge_values(plan.merge, cv, av, plan.kept_nnz, a.nvals(), accum ? *accum : BinaryOp::second, vals.data(), ctx);
    c = Matrix<T>::adopt_csr(c.nrows(), c.ncols(), plan.merge.nnz, std::move(plan.merge.offsets),
                             std::move(plan.merge.cols), std::move(vals));
}

#define HYBLA_X(T)                                                                                          \
    template Matrix<T> extract<T>(const Matrix<T>&, const std::vector<Index>&, const std::vector<Index>&);   \
    template void assign<T>(Matrix<T>&, const Matrix<T>&, const std::vector<Index>&, const std::vector<Index>&, \
                            const BinaryOp*);
HYBLA_CUDA_VALUE_TYPES(HYBLA_X)
#undef HYBLA_X

}  // namespace hybla::cuda
