// The CUDA backend's entry points, as the front end calls them: every operand is a GPU object of one value
// type T (the front end casts first), operators come as run-time codes (engine/cuda/opcodes.hpp) and masks
// as the pattern of their true entries. Defined in engine/cuda/**/*.cu for every type of
// HYBLA_CUDA_VALUE_TYPES; declared for every compiler, so code built without nvcc calls them too.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/config.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/descriptor.hpp"
#include "engine/prune_rule.hpp"

namespace hybla {
template <class T> class Matrix;
template <class T> class Vector;
template <class T> class DenseMatrix;
template <class T> class Array;
class Context;
}  // namespace hybla

namespace hybla::cuda {

// Where a mask is true: the CSR pattern (device pointers) of its true entries, or everywhere but there.
struct MaskPattern {
    const Offset* offsets = nullptr;
    const ColIndex* cols = nullptr;
    bool complement = false;
    const std::uint32_t* rows = nullptr;  // the row of each entry, where the operation asked for it (SDDMM)
};

enum class SelectKind : std::uint8_t { tril, triu, diag, offdiag, value_eq, value_ne, value_lt, value_le, value_gt, value_ge, nonzero };
// A selector as data: k for the index selectors; the thunk for value selectors, kept in the domain
// (floating, signed or unsigned) its type had.
struct SelectCode {
    SelectKind kind = SelectKind::nonzero;
    std::int64_t k = 0;
    enum class Domain : std::uint8_t { floating, signed_int, unsigned_int } domain = Domain::floating;
    double f = 0;
    std::int64_t i = 0;
    std::uint64_t u = 0;
};

// Construction and shape.
template <class T>
Matrix<T> build_coded(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                      std::span<const T> vals, BinaryOp dup, bool dup_is_error, const Context& ctx);
template <class T> Matrix<T> transpose(const Matrix<T>& a);
template <class TC, class TA> Matrix<TC> cast(const Matrix<TA>& a);
template <class TC, class TA> Vector<TC> cast(const Vector<TA>& a);
template <class TC, class TA> DenseMatrix<TC> cast(const DenseMatrix<TA>& a);

// Vectors as n x 1 matrices and back (dense storage when at least 1/16 is present).
template <class T> Matrix<T> as_column(const Vector<T>& v);
template <class T> Vector<T> from_column(const Matrix<T>& m);
// The same vector in dense storage.
template <class T> Vector<T> densify(const Vector<T>& v);

// Element-wise.
template <class T> Matrix<T> ewise(const Matrix<T>& a, const Matrix<T>& b, BinaryOp op, bool union_pattern);
template <class T> Matrix<T> apply_unary(const Matrix<T>& a, UnaryOp op);
template <class T> Matrix<T> apply_bound(const Matrix<T>& a, BinaryOp op, T scalar, bool scalar_first);
template <class T> Matrix<T> select(const Matrix<T>& a, const SelectCode& sel);
// C<M, replace> accum= T; mask nullptr: no mask; accum nullptr: no accumulator.
template <class T>
void write_back(Matrix<T>& c, Matrix<T>&& t, const MaskPattern* mask, const BinaryOp* accum, bool replace);

// Full vectors (dense storage, every entry present): element by element, one kernel, nothing waited for; the
// result is full. accumulate_full gives accum(w, t) where t (dense storage, any presence) has an entry, w elsewhere.
template <class T> Vector<T> full_ewise(const Vector<T>& a, const Vector<T>& b, BinaryOp op);
template <class T> Vector<T> full_unary(const Vector<T>& a, UnaryOp op);
template <class T> Vector<T> full_bound(const Vector<T>& a, BinaryOp op, T scalar, bool scalar_first);
template <class T> Vector<T> accumulate_full(const Vector<T>& w, const Vector<T>& t, BinaryOp accum);

// Reductions.
template <class T> Vector<T> reduce_rows(const Matrix<T>& a, MonoidOp op);
template <class T> T reduce_all(const Matrix<T>& a, MonoidOp op);
template <class T> T reduce_all(const Vector<T>& a, MonoidOp op);
// ⊕ over the positions present in both of u(i) ⊗ v(i); u and v dense (values + bitmap), the same size.
template <class T> T inner(const Vector<T>& u, const Vector<T>& v, SemiringCode sr);
// The same three reductions left in a Scalar's cell (host memory the kernels can write: its HostCell) in stream
// order, nothing waited for, in one launch: pos is the position of the first term, ~0 when there is none.
// scratch: device memory the Scalar keeps for its results (reduce_scratch_bytes, the first 4 bytes zero before
// its first use; every use leaves them zero again).
template <class T>
struct ReduceCell {
    Offset pos;
    T val;
};
inline constexpr std::size_t reduce_scratch_bytes = 256 + 4096 * 16;
inline constexpr std::size_t reduce_scratch_parts_at = 256;  // block partials from here, the ticket at 0
template <class T>
struct ScalarTarget {
    ReduceCell<T>* cell;
    void* scratch;
};
template <class T> void reduce_all(const Matrix<T>& a, MonoidOp op, ScalarTarget<T> to);
template <class T> void reduce_all(const Vector<T>& a, MonoidOp op, ScalarTarget<T> to);
template <class T> void inner(const Vector<T>& u, const Vector<T>& v, SemiringCode sr, ScalarTarget<T> to);

// Sub-matrices: rows and cols list the indices (host lists, already checked).
template <class T>
Matrix<T> extract(const Matrix<T>& a, const std::vector<Index>& rows, const std::vector<Index>& cols);
// C(I, J) = A (accum: combined with C's entries there; else C's region is replaced), no mask.
template <class T>
void assign(Matrix<T>& c, const Matrix<T>& a, const std::vector<Index>& rows, const std::vector<Index>& cols,
            const BinaryOp* accum);
template <class T> Matrix<T> kronecker(const Matrix<T>& a, const Matrix<T>& b, BinaryOp op);

// Products.
// C = A ⊕.⊗ B, only where mask (if given) is true.
template <class T>
Matrix<T> spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask);
// C<M> = A ⊕.⊗ op(B) by a sparse dot product per entry of a mask that is not complemented, where bt holds op(B)ᵀ
// as CSR (B itself for A·Bᵀ); spgemm_dot_preferred is the cost rule (the dot work against 8 x the products;
// HYBLA_SPGEMM_DOT=0|1 forces it). engine/cuda/spgemm/dot.cu.
template <class T>
bool spgemm_dot_preferred(const Matrix<T>& a, const Matrix<T>& bt, const MaskPattern& mask);
template <class T>
Matrix<T> spgemm_dot(const Matrix<T>& a, const Matrix<T>& bt, SemiringCode sr, const MaskPattern& mask);
// w(i) = ⊕_k M(i,k) ⊗ u(k) (flip: u(k) ⊗ M(i,k)) over present u(k); u dense; rows where mask (an n x 1
// pattern, if given) is false are skipped.
template <class T>
Vector<T> spmv(const Matrix<T>& m, const Vector<T>& u, SemiringCode sr, bool flip, const MaskPattern* mask);
// w + M u over plus_times in one pass (the SpMV's stores add w): u and w full; float and double only.
template <class T>
Vector<T> spmv_plus_accumulate(const Matrix<T>& m, const Vector<T>& u, const Vector<T>& w);
// M u over plus_times and, queued into `to`, ⊕ over i of (M u)(i) ⊗ v(i) under sr2 (the rows of M u that are
// present): u and v full, v of M's row count, M with at least one row; float and double. Computed by the SpMV's
// own kernels when sr2 is plus with absdiff or times, by a reduction after them otherwise.
template <class T>
Vector<T> spmv_inner(const Matrix<T>& m, const Vector<T>& u, const Vector<T>& v, SemiringCode sr2, ScalarTarget<T> to);
template <class T> DenseMatrix<T> spmm(const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr);
// C = A ⊕.⊗ B into C's storage (C of A's rows and B's columns; C must not share storage with B).
template <class T> void spmm_into(DenseMatrix<T>& c, const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr);
// C = accum(C, A ⊕.⊗ B) in place (C of A's rows and B's columns; C must not share storage with B).
template <class T>
void spmm_accumulate(DenseMatrix<T>& c, const Matrix<T>& a, const DenseMatrix<T>& b, SemiringCode sr, BinaryOp accum);
// C(i,j) = accum(C(i,j), ⊕_u A(i,u) ⊗ B(u,j)) at the mask's nnz entries only (not complemented; accum null: C(i,j)
// = the sum); B may be C (every value is computed before any is stored). spmm/masked.cu.
template <class T>
void spmm_masked(DenseMatrix<T>& c, const MaskPattern& mask, Offset nnz, const Matrix<T>& a, const DenseMatrix<T>& b,
                 SemiringCode sr, const BinaryOp* accum);
// C's values at the mask's nnz entries, in the mask's order; and those values put back (a complemented mask).
template <class T> Array<T> dense_entries(const DenseMatrix<T>& c, const MaskPattern& mask, Offset nnz);
template <class T> void set_dense_entries(DenseMatrix<T>& c, const MaskPattern& mask, Offset nnz, const Array<T>& vals);
// The row of each entry of a pattern of fewer than 2^32 rows (the shares kernel of SDDMM reads it).
Array<std::uint32_t> entry_rows(const Offset* offsets, Index nrows, Offset nnz, const Context& ctx);
// T(i,j) = ⊕_x A(i,x) ⊗ Bt(j,x) over the mask's pattern; without its row array, the rows kernel.
template <class T>
Matrix<T> sddmm(const MaskPattern& mask, Offset nnz, Index nrows, Index ncols, const DenseMatrix<T>& a,
                const DenseMatrix<T>& bt, SemiringCode sr);
// mxm_pruned and inflate_rows of engine/prune.hpp (float and double only).
template <class T> Matrix<T> mxm_pruned(const Matrix<T>& a, const Matrix<T>& b, const PruneRule& rule, PruneStats& stats);
template <class T> void inflate_rows(Matrix<T>& a, double power);
template <class T> DenseMatrix<T> dense_transpose(const DenseMatrix<T>& a);
// C = accum(C, T) element by element.
template <class T> void dense_accumulate(DenseMatrix<T>& c, const DenseMatrix<T>& t, BinaryOp accum);
// op(A, B) element by element (A and B of one shape).
template <class T> DenseMatrix<T> dense_ewise(const DenseMatrix<T>& a, const DenseMatrix<T>& b, BinaryOp op);
// w(j) = ⊕_i A(i,j) ⊗ B(i,j) over the rows i, or ⊕_i A(i,j) when b is null: a full vector of A's column count,
// with no entries when A has no rows. Terms are combined in an order fixed by the shape.
template <class T> Vector<T> dense_column_inner(const DenseMatrix<T>& a, const DenseMatrix<T>* b, SemiringCode sr);

}  // namespace hybla::cuda
