// DenseMatrix<T>: row-major, every entry present. The dense operand and result of SpMM and the dense
// operands of SDDMM (node features, one column per PageRank seed).
#pragma once
#include <span>
#include <string>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/error.hpp"
#include "engine/matrix.hpp"

namespace hybla {

template <class T>
class DenseMatrix {
public:
    using value_type = T;
    DenseMatrix() = default;
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
    // with InvalidValue (copy it with to(Context::cpu()) first).
    T& operator()(Index i, Index j) { return host("DenseMatrix::operator()")[i * ncols_ + j]; }
    const T& operator()(Index i, Index j) const { return host("DenseMatrix::operator()")[i * ncols_ + j]; }
    T* row(Index i) { return host("DenseMatrix::row") + i * ncols_; }
    const T* row(Index i) const { return host("DenseMatrix::row") + i * ncols_; }
    std::span<T> data() { return {host("DenseMatrix::data"), data_.size()}; }
    std::span<const T> data() const { return {host("DenseMatrix::data"), data_.size()}; }
    // The row-major values wherever they live (device memory for a GPU matrix): for backends.
    std::span<T> storage() { return data_.span(); }
    std::span<const T> storage() const { return data_.span(); }
    void fill(T v) { data_.fill(v); }
    Array<T> release() && {
        nrows_ = ncols_ = 0;
        return std::move(data_);
    }

private:
    T* host(const char* what) {
        detail::host_only(data_.context(), what);
        return data_.data();
    }
    const T* host(const char* what) const {
        detail::host_only(data_.context(), what);
        return data_.data();
    }
    Index nrows_ = 0, ncols_ = 0;
    Array<T> data_;
};

}  // namespace hybla
