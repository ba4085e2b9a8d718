// Matrix<T>: a sparse matrix in CSR with 64-bit row offsets, 32-bit column indices sorted within each row,
// and no explicit duplicates. Derived forms (the transpose) are cached on the object and dropped on any change.
#pragma once
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/context.hpp"
#include "engine/entry.hpp"
#include "engine/error.hpp"
#include "semirings/binary_ops.hpp"

namespace hybla {

template <class T> class Matrix;
namespace cpu {
template <class T, class Dup>
Matrix<T> build_matrix(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                       std::span<const T> vals, Dup dup, bool dup_is_error);
template <class T> Matrix<T> transpose(const Matrix<T>& a);
}  // namespace cpu
namespace cuda {
template <class T, class Dup>
Matrix<T> build_matrix(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                       std::span<const T> vals, Dup dup, bool dup_is_error, const Context& ctx);
template <class T> Matrix<T> transpose(const Matrix<T>& a);
}  // namespace cuda

namespace detail {
inline void check_dimension(Index n, const char* what) {
    if (n > max_dimension)
        throw InvalidValue(std::string(what) + " must be at most 2^32, got " + std::to_string(n));
}
inline std::string shape(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }
}  // namespace detail

template <class T>
struct CsrArrays {
    Index nrows = 0, ncols = 0;
    Array<Offset> offsets;      // nrows + 1
    Array<ColIndex> indices;    // nvals
    Array<T> values;            // nvals
};

template <class T>
class Matrix {
public:
    using value_type = T;

    Matrix() : Matrix(0, 0) {}
    // A copy shares the cache; the offsets are copied under its lock (another thread may be writing them).
    Matrix(const Matrix& o)
        : nrows_(o.nrows_), ncols_(o.ncols_), nvals_(o.nvals_), ctx_(o.ctx_), indices_(o.indices_),
          values_(o.values_), cache_(o.cache_) {
        std::lock_guard<std::mutex> lock(o.cache_->offsets_mutex);
        offsets_ = o.offsets_;
    }
    Matrix& operator=(const Matrix& o) {
        if (this != &o) {
            Matrix tmp(o);
            swap(tmp);
        }
        return *this;
    }
    // A moved-from matrix is left empty and 0 x 0, still valid; a move allocates nothing on the device.
    Matrix(Matrix&& o) : Matrix(Unfilled{}, 0, 0, o.ctx_) {
        // A CPU matrix always has its offsets (allocated before anything moves); a GPU one writes them when read.
        Array<Offset> none = o.ctx_.is_cuda() ? Array<Offset>() : Array<Offset>(1, Offset(0), o.ctx_);
        swap(o);
        o.offsets_ = std::move(none);
    }
    Matrix& operator=(Matrix&& o) {
        if (this != &o) {
            Matrix tmp(std::move(o));
            swap(tmp);
        }
        return *this;
    }
    void swap(Matrix& o) noexcept {
        std::swap(nrows_, o.nrows_);
        std::swap(ncols_, o.ncols_);
        std::swap(nvals_, o.nvals_);
        std::swap(ctx_, o.ctx_);
        std::swap(offsets_, o.offsets_);
        std::swap(indices_, o.indices_);
        std::swap(values_, o.values_);
        std::swap(cache_, o.cache_);
    }
    // An empty matrix in ctx (the default context unless given). On a GPU its row offsets are written when first
    // read: a matrix that only receives a result costs no device work.
    Matrix(Index nrows, Index ncols, const Context& ctx = default_context()) : nrows_(nrows), ncols_(ncols), ctx_(ctx) {
        detail::check_dimension(nrows, "number of rows");
        detail::check_dimension(ncols, "number of columns");
        if (!ctx.is_cuda()) offsets_ = Array<Offset>(nrows + 1, Offset(0), ctx);
        indices_ = Array<ColIndex>(0, ctx);
        values_ = Array<T>(0, ctx);
    }

    // Builds from (row, column, value) tuples; duplicates are combined with dup (plus by default), in input order.
    template <class Dup = plus_op>
    static Matrix from_tuples(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                              std::span<const T> vals, Dup dup = {}, const Context& ctx = default_context()) {
        detail::check_dimension(nrows, "number of rows");
        detail::check_dimension(ncols, "number of columns");
        HYBLA_ON_GPU(ctx) return cuda::build_matrix<T>(nrows, ncols, rows, cols, vals, dup, false, ctx);
        return cpu::build_matrix<T>(nrows, ncols, rows, cols, vals, dup, false);
    }
    template <class Dup = plus_op>
    static Matrix from_tuples(Index nrows, Index ncols, const std::vector<Index>& rows,
                              const std::vector<Index>& cols, const std::vector<T>& vals, Dup dup = {},
                              const Context& ctx = default_context()) {
        if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
            Array<bool> buf(vals.size());
            std::copy(vals.begin(), vals.end(), buf.begin());
            return from_tuples(nrows, ncols, std::span<const Index>(rows), std::span<const Index>(cols), buf.span(), dup, ctx);
        } else {
            return from_tuples(nrows, ncols, std::span<const Index>(rows), std::span<const Index>(cols),
                               std::span<const T>(vals.data(), vals.size()), dup, ctx);
        }
    }
    // Replaces the contents with the given tuples (dimensions unchanged).
    template <class Dup = plus_op>
    void build(std::span<const Index> rows, std::span<const Index> cols, std::span<const T> vals, Dup dup = {}) {
        *this = from_tuples(nrows_, ncols_, rows, cols, vals, dup, ctx_);
    }

    Index nrows() const { return nrows_; }
    Index ncols() const { return ncols_; }
    Index nvals() const { return nvals_; }
    const Context& context() const { return ctx_; }

    // A copy in another context (the only way a matrix changes place).
    Matrix to(const Context& ctx) const& {
        if (ctx == ctx_) return *this;
        if (!has_offsets()) return Matrix(nrows_, ncols_, ctx);  // no entries
        Matrix m(Unfilled{}, nrows_, ncols_, ctx);
        m.offsets_ = offsets_.to(ctx);
        m.indices_ = indices_.to(ctx);
        m.values_ = values_.to(ctx);
        m.nvals_ = nvals_;
        return m;
    }
    // A temporary already in ctx is moved, not copied.
    Matrix to(const Context& ctx) && {
        if (ctx == ctx_) return std::move(*this);
        return static_cast<const Matrix&>(*this).to(ctx);
    }

    // Tuples in row-major order (copied to the host for a GPU matrix).
    void extract_tuples(std::vector<Index>& rows, std::vector<Index>& cols, std::vector<T>& vals) const {
        if (ctx_.is_cuda()) return to(Context::cpu()).extract_tuples(rows, cols, vals);
        rows.resize(nvals());
        cols.assign(indices_.begin(), indices_.end());
        vals.assign(values_.begin(), values_.end());
        for (Index i = 0; i < nrows_; ++i)
            std::fill(rows.begin() + offsets_[i], rows.begin() + offsets_[i + 1], i);
    }

    // The entry at (i, j), or none (its value() then throws NoValue naming (i, j)).
    Entry<T> get(Index i, Index j) const {
        check_index(i, j);
        if (ctx_.is_cuda()) return to(Context::cpu()).get(i, j);
        auto p = find(i, j);
        if (!p.second) return {std::nullopt, i, j};
        return {values_[p.first], i, j};
    }
    bool contains(Index i, Index j) const { return get(i, j).has_value(); }

    // Sets one entry (O(nvals): use build or an operation for many entries).
    void set(Index i, Index j, T v) {
        check_index(i, j);
        if (ctx_.is_cuda()) return on_host([&](Matrix& h) { h.set(i, j, v); });
        auto [pos, found] = find(i, j);
        if (found) {
            values_[pos] = v;
            invalidate();
            return;
        }
        Index n = nvals();
        Array<ColIndex> ci(n + 1);
        Array<T> vv(n + 1);
        std::copy_n(indices_.begin(), pos, ci.begin());
        std::copy_n(values_.begin(), pos, vv.begin());
        ci[pos] = ColIndex(j);
        vv[pos] = v;
        std::copy(indices_.begin() + pos, indices_.end(), ci.begin() + pos + 1);
        std::copy(values_.begin() + pos, values_.end(), vv.begin() + pos + 1);
        for (Index r = i + 1; r <= nrows_; ++r) ++offsets_[r];
        ++nvals_;
        indices_ = std::move(ci);
        values_ = std::move(vv);
        invalidate();
    }
    // Removes one entry if present.
    void remove(Index i, Index j) {
        check_index(i, j);
        if (ctx_.is_cuda()) return on_host([&](Matrix& h) { h.remove(i, j); });
        auto [pos, found] = find(i, j);
        if (!found) return;
        std::copy(indices_.begin() + pos + 1, indices_.end(), indices_.begin() + pos);
        std::copy(values_.begin() + pos + 1, values_.end(), values_.begin() + pos);
        indices_.resize(indices_.size() - 1);
        values_.resize(values_.size() - 1);
        for (Index r = i + 1; r <= nrows_; ++r) --offsets_[r];
        --nvals_;
        invalidate();
    }

    Matrix dup() const { return *this; }

    // Changes the dimensions; entries outside the new dimensions are dropped.
    void resize(Index nrows, Index ncols) {
        detail::check_dimension(nrows, "number of rows");
        detail::check_dimension(ncols, "number of columns");
        if (ctx_.is_cuda()) {
            if (!has_offsets()) {  // no entries: nothing to keep or drop, the offsets still unwritten
                nrows_ = nrows;
                ncols_ = ncols;
                invalidate();
                return;
            }
            if (nrows < nrows_ || ncols < ncols_) return on_host([&](Matrix& h) { h.resize(nrows, ncols); });
            // Growing keeps every entry where it is: only the new rows' offsets are written, on the device.
            offsets_.resize(nrows + 1);
            const Offset end = nvals_;
            if (nrows > nrows_) cuda::fill(offsets_.data() + nrows_ + 1, nrows - nrows_, &end, sizeof(Offset), ctx_.stream());
            nrows_ = nrows;
            ncols_ = ncols;
            invalidate();
            return;
        }
        Array<Offset> off(nrows + 1);
        off[0] = 0;
        Index keep_rows = std::min(nrows, nrows_);
        Offset n = 0;
        for (Index i = 0; i < keep_rows; ++i) {
            for (Offset p = offsets_[i]; p < offsets_[i + 1]; ++p)
                if (indices_[p] < ncols) {
                    indices_[n] = indices_[p];
                    values_[n] = values_[p];
                    ++n;
                }
            off[i + 1] = n;
        }
        for (Index i = keep_rows; i < nrows; ++i) off[i + 1] = n;
        indices_.resize(n);
        values_.resize(n);
        offsets_ = std::move(off);
        nrows_ = nrows;
        ncols_ = ncols;
        nvals_ = n;
        invalidate();
    }
    void clear() { *this = Matrix(nrows_, ncols_, ctx_); }

    // CSR views in host memory: CPU matrices only (a GPU matrix is refused with InvalidValue).
    std::span<const Offset> row_offsets() const {
        detail::host_only(ctx_, "Matrix::row_offsets");
        return storage_offsets();
    }
    std::span<const ColIndex> col_indices() const {
        detail::host_only(ctx_, "Matrix::col_indices");
        return indices_.span();
    }
    std::span<const T> values() const {
        detail::host_only(ctx_, "Matrix::values");
        return values_.span();
    }
    // The CSR arrays wherever they live (device memory for a GPU matrix): for backends.
    std::span<const Offset> storage_offsets() const {
        write_offsets();
        return offsets_.span();
    }
    std::span<const ColIndex> storage_indices() const { return indices_.span(); }
    std::span<const T> storage_values() const { return values_.span(); }
    Offset row_begin(Index i) const { return offsets_[i]; }  // CPU matrices
    Offset row_end(Index i) const { return offsets_[i + 1]; }
    Index row_degree(Index i) const { return offsets_[i + 1] - offsets_[i]; }

    // Takes the arrays without copying. With check, verifies the CSR invariants (InvalidValue/InvalidIndex).
    // The matrix lives where the arrays do (all three must live in one context).
    static Matrix import_csr(Index nrows, Index ncols, Array<Offset> offsets, Array<ColIndex> indices,
                             Array<T> values, bool check = true) {
        const Context ctx = offsets.context();
        if (!(indices.context() == ctx) || !(values.context() == ctx))
            throw InvalidValue("import_csr: the offsets, indices and values live in different contexts");
        if (check) {
            if (ctx.is_cuda())
                validate_csr(nrows, ncols, offsets.to(Context::cpu()), indices.to(Context::cpu()),
                             values.to(Context::cpu()), "import_csr");
            else
                validate_csr(nrows, ncols, offsets, indices, values, "import_csr");
        }
        detail::check_dimension(nrows, "number of rows");
        detail::check_dimension(ncols, "number of columns");
        Matrix m(Unfilled{}, nrows, ncols, ctx);
        m.nvals_ = offsets.empty() ? 0 : offsets.get(nrows);
        m.offsets_ = std::move(offsets);
        m.indices_ = std::move(indices);
        m.values_ = std::move(values);
        return m;
    }
    // Takes CSR arrays known to be valid, unchecked, with nvals = offsets[nrows] given: for backends and callers
    // that built the arrays themselves (a GPU matrix is then made without reading its last offset back, which
    // would wait for the work writing it).
    static Matrix adopt_csr(Index nrows, Index ncols, Offset nvals, Array<Offset> offsets, Array<ColIndex> indices,
                            Array<T> values) {
        Matrix m(Unfilled{}, nrows, ncols, offsets.context());
        m.nvals_ = nvals;
        m.offsets_ = std::move(offsets);
        m.indices_ = std::move(indices);
        m.values_ = std::move(values);
        return m;
    }
    static Matrix import_csr(CsrArrays<T> csr, bool check = true) {
        return import_csr(csr.nrows, csr.ncols, std::move(csr.offsets), std::move(csr.indices),
                          std::move(csr.values), check);
    }
    // CSC is the CSR of the transpose: imported as such (no copy) and transposed once.
    static Matrix import_csc(Index nrows, Index ncols, Array<Offset> col_offsets, Array<ColIndex> row_indices,
                             Array<T> values, bool check = true) {
        Matrix t = Matrix::import_csr(ncols, nrows, std::move(col_offsets), std::move(row_indices),
                                      std::move(values), check);
        return t.transposed_copy();
    }
    // COO tuples without duplicates (a duplicate is an InvalidValue); any order.
    static Matrix import_coo(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                             std::span<const T> vals) {
        detail::check_dimension(nrows, "number of rows");
        detail::check_dimension(ncols, "number of columns");
        if (default_context().is_cuda())
            return cpu::build_matrix<T>(nrows, ncols, rows, cols, vals, first_op{}, true).to(default_context());
        return cpu::build_matrix<T>(nrows, ncols, rows, cols, vals, first_op{}, true);
    }

    // Moves the arrays out, leaving an empty matrix of the same dimensions.
    CsrArrays<T> export_csr() && {
        write_offsets();
        CsrArrays<T> out{nrows_, ncols_, std::move(offsets_), std::move(indices_), std::move(values_)};
        *this = Matrix(out.nrows, out.ncols, ctx_);
        return out;
    }
    CsrArrays<T> export_csr() const& { return Matrix(*this).export_csr(); }
    // CSC arrays (column offsets, row indices): the CSR of the transpose.
    CsrArrays<T> export_csc() const {
        CsrArrays<T> t = transposed_copy().export_csr();
        std::swap(t.nrows, t.ncols);
        return t;
    }
    void export_coo(std::vector<Index>& rows, std::vector<Index>& cols, std::vector<T>& vals) const {
        extract_tuples(rows, cols, vals);
    }

    // The transpose, computed once and cached until this matrix changes.
    // Safe to call from several threads on one matrix.
    const Matrix& transposed() const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        if (!cache_->transpose) cache_->transpose = std::make_shared<const Matrix>(transposed_copy());
        return *cache_->transpose;
    }
    Matrix transposed_copy() const {
        HYBLA_ON_GPU(*this) return cuda::transpose(*this);
        return cpu::transpose(*this);
    }

    bool has_cached_transpose() const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        return bool(cache_->transpose);
    }

    // For the GPU mxv (its only user, so the slot needs no type tag): an opaque plan derived from the pattern
    // (tile starts, non-empty row count), dropped with the other derived forms on any change.
    std::shared_ptr<const void> cached_plan() const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        return cache_->plan;
    }
    void cache_plan(std::shared_ptr<const void> plan) const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        cache_->plan = std::move(plan);
    }
    // Likewise for the GPU SpMM (its only user): the first row of each share of entries (engine/cuda/spmm).
    std::shared_ptr<const void> cached_spmm_plan() const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        return cache_->spmm_plan;
    }
    void cache_spmm_plan(std::shared_ptr<const void> plan) const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        cache_->spmm_plan = std::move(plan);
    }
    // Likewise for the GPU SDDMM with this matrix as its mask: the row of each entry (engine/cuda/sddmm).
    std::shared_ptr<const void> cached_entry_rows() const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        return cache_->entry_rows;
    }
    void cache_entry_rows(std::shared_ptr<const void> rows) const {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        cache_->entry_rows = std::move(rows);
    }

    // For backends: direct access to the CSR arrays. Callers must keep the invariants.
    Array<Offset>& offsets_mut() {
        write_offsets();
        invalidate();
        return offsets_;
    }
    void set_nvals(Index n) { nvals_ = n; }
    Array<ColIndex>& indices_mut() { invalidate(); return indices_; }
    Array<T>& values_mut() { invalidate(); return values_; }

    static void validate_csr(Index nrows, Index ncols, const Array<Offset>& off, const Array<ColIndex>& idx,
                             const Array<T>& val, const char* who) {
        if (off.size() != nrows + 1)
            throw InvalidValue(std::string(who) + ": expected " + std::to_string(nrows + 1) +
                               " row offsets, got " + std::to_string(off.size()));
        if (off[0] != 0) throw InvalidValue(std::string(who) + ": first row offset must be 0");
        for (Index i = 0; i < nrows; ++i)
            if (off[i + 1] < off[i])
                throw InvalidValue(std::string(who) + ": row offsets decrease at row " + std::to_string(i));
        if (idx.size() != off[nrows] || val.size() != off[nrows])
            throw InvalidValue(std::string(who) + ": offsets end at " + std::to_string(off[nrows]) + " but got " +
                               std::to_string(idx.size()) + " indices and " + std::to_string(val.size()) + " values");
        for (Index i = 0; i < nrows; ++i)
            for (Offset p = off[i]; p < off[i + 1]; ++p) {
                if (idx[p] >= ncols)
                    throw InvalidIndex(std::string(who) + ": column index " + std::to_string(idx[p]) + " in row " +
                                       std::to_string(i) + " is out of range for " + std::to_string(ncols) +
                                       " columns");
                if (p > off[i] && idx[p] <= idx[p - 1])
                    throw InvalidValue(std::string(who) + ": column indices of row " + std::to_string(i) +
                                       " are not strictly increasing");
            }
    }

private:
    // A matrix whose arrays the caller sets at once. (An empty nrows x ncols matrix writes nrows + 1 offsets only
    // for them to be dropped: on the host for every result a GPU operation imports, 0.2 ms for 82,000 rows.)
    struct Unfilled {};
    Matrix(Unfilled, Index nrows, Index ncols, const Context& ctx) : nrows_(nrows), ncols_(ncols), ctx_(ctx) {}

    void check_index(Index i, Index j) const {
        if (i >= nrows_ || j >= ncols_)
            throw InvalidIndex("index (" + std::to_string(i) + ", " + std::to_string(j) + ") is outside a " +
                               detail::shape(nrows_, ncols_) + " matrix");
    }
    // Position of (i, j) or of where it would be inserted.
    std::pair<Offset, bool> find(Index i, Index j) const {
        auto b = indices_.begin() + offsets_[i], e = indices_.begin() + offsets_[i + 1];
        auto it = std::lower_bound(b, e, ColIndex(j));
        return {Offset(it - indices_.begin()), it != e && *it == j};
    }
    void invalidate() { cache_ = std::make_shared<Cache>(); }
    // Writes the offsets of a GPU matrix made without them (empty, or moved from): all zero. A CPU matrix always
    // has them (its row accessors read them unchecked).
    void write_offsets() const {
        if (!ctx_.is_cuda()) return;
        std::lock_guard<std::mutex> lock(cache_->offsets_mutex);
        if (offsets_.empty()) offsets_ = Array<Offset>(nrows_ + 1, Offset(0), ctx_);  // (never entries then)
    }
    bool has_offsets() const {
        if (!ctx_.is_cuda()) return true;
        std::lock_guard<std::mutex> lock(cache_->offsets_mutex);
        return !offsets_.empty();
    }
    // Runs a host-side edit on a GPU matrix: down, edit, up.
    template <class F>
    void on_host(F&& edit) {
        Matrix h = to(Context::cpu());
        edit(h);
        *this = h.to(ctx_);
    }

    Index nrows_ = 0, ncols_ = 0, nvals_ = 0;
    Context ctx_;
    // nrows + 1 offsets, or on a GPU none while the matrix has no entries and no one has read them.
    mutable Array<Offset> offsets_;
    Array<ColIndex> indices_;
    Array<T> values_;
    // Derived forms; copies share them until either changes (then it gets a fresh cache).
    struct Cache {
        std::mutex mutex;
        std::mutex offsets_mutex;  // write_offsets (taken while `mutex` may be held by transposed())
        std::shared_ptr<const Matrix> transpose;
        std::shared_ptr<const void> plan;
        std::shared_ptr<const void> spmm_plan;
        std::shared_ptr<const void> entry_rows;
    };
    std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

}  // namespace hybla

// The builders Matrix::from_tuples calls (they need the complete Matrix).
#include "engine/cpu/build.hpp"
#include "engine/cuda/build.hpp"
