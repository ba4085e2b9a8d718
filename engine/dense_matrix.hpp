// DenseMatrix<T>: row-major, every entry present. The dense operand and result of SpMM and the dense
// operands of SDDMM (node features, one column per PageRank seed).
#pragma once
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/error.hpp"
#include "engine/matrix.hpp"

namespace hybla {

template <class T> class DenseMatrix;
namespace cpu {
template <class T> DenseMatrix<T> dense_transpose(const DenseMatrix<T>& a);
}  // namespace cpu
namespace cuda {
template <class T> DenseMatrix<T> dense_transpose(const DenseMatrix<T>& a);
}  // namespace cuda

template <class T>
class DenseMatrix {
public:
    using value_type = T;
    DenseMatrix() = default;
    DenseMatrix(const DenseMatrix&) = default;
    DenseMatrix& operator=(const DenseMatrix&) = default;
    // A moved-from matrix is left 0 x 0 without values (and without a cache), still valid.
    DenseMatrix(DenseMatrix&& o) noexcept
        : nrows_(o.nrows_), ncols_(o.ncols_), data_(std::move(o.data_)), cache_(std::move(o.cache_)) {
        o.nrows_ = o.ncols_ = 0;
    }
    DenseMatrix& operator=(DenseMatrix&& o) noexcept {
        if (this != &o) {
            nrows_ = o.nrows_;
            ncols_ = o.ncols_;
            data_ = std::move(o.data_);
            cache_ = std::move(o.cache_);
            o.nrows_ = o.ncols_ = 0;
        }
        return *this;
    }
    DenseMatrix(Index nrows, Index ncols, T value = T{}, const Context& ctx = default_context())
        : nrows_(nrows), ncols_(ncols) {
        detail::check_dimension(nrows, "number of rows");
        detail::check_dimension(ncols, "number of columns");
        data_ = Array<T>(nrows * ncols, value, ctx);
    }
    // Takes row-major data without copying.
    static DenseMatrix import_row_major(Index nrows, Index ncols, Array<T> data) {
        if (data.size() != nrows * ncols)
            throw InvalidValue("DenseMatrix::import_row_major: expected " + std::to_string(nrows * ncols) +
                               " values for " + detail::shape(nrows, ncols) + ", got " + std::to_string(data.size()));
        DenseMatrix m;
        m.nrows_ = nrows;
        m.ncols_ = ncols;
        m.data_ = std::move(data);
        return m;
    }

    Index nrows() const { return nrows_; }
    Index ncols() const { return ncols_; }
    const Context& context() const { return data_.context(); }
    DenseMatrix to(const Context& ctx) const { return import_row_major(nrows_, ncols_, data_.to(ctx)); }
    // Element access through operator(), row() and data() is for host (CPU) matrices; a GPU matrix is refused
    // with InvalidValue (copy it with to(Context::cpu()) first). The non-const accessors drop the cached
    // transpose (below): write through a reference, pointer or span taken after the last call that read the
    // matrix, not one kept from before it.
    T& operator()(Index i, Index j) { return host_mut("DenseMatrix::operator()")[i * ncols_ + j]; }
    const T& operator()(Index i, Index j) const { return host("DenseMatrix::operator()")[i * ncols_ + j]; }
    T* row(Index i) { return host_mut("DenseMatrix::row") + i * ncols_; }
    const T* row(Index i) const { return host("DenseMatrix::row") + i * ncols_; }
    std::span<T> data() { return {host_mut("DenseMatrix::data"), data_.size()}; }
    std::span<const T> data() const { return {host("DenseMatrix::data"), data_.size()}; }
    // The row-major values wherever they live (device memory for a GPU matrix): for backends.
    std::span<T> storage() {
        invalidate();
        return data_.span();
    }
    std::span<const T> storage() const { return data_.span(); }
    void fill(T v) {
        invalidate();
        data_.fill(v);
    }
    Array<T> release() && {
        invalidate();
        nrows_ = ncols_ = 0;
        return std::move(data_);
    }

    // The transpose, made once (on the matrix's backend) and cached until this matrix changes: the SDDMM reads
    // rows of Bᵀ, the SpMM rows of B. It lives as long as the matrix does unchanged (a second copy of it in the
    // matrix's memory). Safe to call from several threads on one matrix (not on one just moved from).
    const DenseMatrix& transposed() const { return *transposed_ptr(); }
    // The same, shared: it outlives a change of this matrix (a product that writes the matrix it reads).
    std::shared_ptr<const DenseMatrix> transposed_ptr() const {
        if (!cache_) cache_ = std::make_shared<Cache>();  // moved from
        std::lock_guard<std::mutex> lock(cache_->mutex);
        if (!cache_->transpose) cache_->transpose = std::make_shared<const DenseMatrix>(transposed_copy());
        return cache_->transpose;
    }
    DenseMatrix transposed_copy() const {
        HYBLA_ON_GPU(*this) return cuda::dense_transpose(*this);
        return cpu::dense_transpose(*this);
    }
    bool has_cached_transpose() const {
        if (!cache_) return false;
        std::lock_guard<std::mutex> lock(cache_->mutex);
        return bool(cache_->transpose);
    }

private:
    T* host_mut(const char* what) {
        detail::host_only(data_.context(), what);
        invalidate();
        return data_.data();
    }
    const T* host(const char* what) const {
        detail::host_only(data_.context(), what);
        return data_.data();
    }
    void invalidate() {
        if (!cache_ || cache_.use_count() != 1 || cache_->transpose) cache_ = std::make_shared<Cache>();
    }

    Index nrows_ = 0, ncols_ = 0;
    Array<T> data_;
    // Derived forms; copies share them until either changes (then it gets a fresh cache). Null only in a
    // matrix moved from, until it is used again.
    struct Cache {
        std::mutex mutex;
        std::shared_ptr<const DenseMatrix> transpose;
    };
    mutable std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

}  // namespace hybla
