// Vector<T>: sparse (sorted indices + values) or dense (values + presence bitmap). Every operation accepts
// either form; the form is storage, not meaning: two vectors with the same entries are equal whatever their form.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/entry.hpp"
#include "engine/error.hpp"
#include "engine/matrix.hpp"

namespace hybla {

template <class T> class Vector;
namespace cpu {
template <class T, class Dup>
Vector<T> build_vector(Index n, std::span<const Index> idx, std::span<const T> vals, Dup dup, bool dup_is_error);
}

template <class T>
class Vector {
public:
    using value_type = T;

    explicit Vector(Index n = 0, const Context& ctx = default_context()) : n_(n), ctx_(ctx) {
        detail::check_dimension(n, "vector size");
        indices_ = Array<Index>(0, ctx);
        values_ = Array<T>(0, ctx);
        bitmap_ = Array<std::uint8_t>(0, ctx);
    }

    Vector(const Vector&) = default;
    Vector& operator=(const Vector&) = default;
    // A moved-from vector is left empty, of size 0, still valid.
    Vector(Vector&& o) : Vector(0, o.ctx_) { swap(o); }
    Vector& operator=(Vector&& o) {
        if (this != &o) {
            Vector tmp(0, o.ctx_);
            tmp.swap(o);
            swap(tmp);
        }
        return *this;
    }
    void swap(Vector& o) noexcept {
        std::swap(n_, o.n_);
        std::swap(nvals_, o.nvals_);
        std::swap(dense_, o.dense_);
        std::swap(ctx_, o.ctx_);
        std::swap(indices_, o.indices_);
        std::swap(values_, o.values_);
        std::swap(bitmap_, o.bitmap_);
    }

    // A dense vector with every entry present and equal to value.
    static Vector full(Index n, T value, const Context& ctx = default_context()) {
        Vector v(n, ctx);
        v.dense_ = true;
        v.values_ = Array<T>(n, value, ctx);
        v.bitmap_ = Array<std::uint8_t>(n, std::uint8_t(1), ctx);
        v.nvals_ = n;
        return v;
    }
    template <class Dup = plus_op>
    static Vector from_tuples(Index n, std::span<const Index> idx, std::span<const T> vals, Dup dup = {},
                              const Context& ctx = default_context()) {
        detail::check_dimension(n, "vector size");
        if (idx.size() != vals.size())
            throw InvalidValue("build: got " + std::to_string(idx.size()) + " indices and " +
                               std::to_string(vals.size()) + " values; the two must be equally long");
        Vector v = cpu::build_vector<T>(n, idx, vals, dup, false);
        return ctx.is_cuda() ? v.to(ctx) : v;
    }
    template <class Dup = plus_op>
    static Vector from_tuples(Index n, const std::vector<Index>& idx, const std::vector<T>& vals, Dup dup = {},
                              const Context& ctx = default_context()) {
        if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
            Array<bool> buf(vals.size());
            std::copy(vals.begin(), vals.end(), buf.begin());
            return from_tuples(n, std::span<const Index>(idx), buf.span(), dup, ctx);
        } else {
            return from_tuples(n, std::span<const Index>(idx), std::span<const T>(vals.data(), vals.size()), dup, ctx);
        }
    }
    template <class Dup = plus_op>
    void build(std::span<const Index> idx, std::span<const T> vals, Dup dup = {}) {
        *this = from_tuples(n_, idx, vals, dup, ctx_);
    }
    // Sparse form from sorted, duplicate-free indices (checked), without copying; lives where the arrays do.
    static Vector import_sparse(Index n, Array<Index> idx, Array<T> vals, bool check = true) {
        const Context ctx = idx.context();
        if (!(vals.context() == ctx)) throw InvalidValue("import_sparse: indices and values live in different contexts");
        if (check && ctx.is_cuda()) {
            import_sparse(n, idx.to(Context::cpu()), vals.to(Context::cpu()), true);
            check = false;
        }
        Vector v(n, ctx);
        if (check) {
            if (idx.size() != vals.size())
                throw InvalidValue("import_sparse: " + std::to_string(idx.size()) + " indices but " +
                                   std::to_string(vals.size()) + " values");
            for (std::size_t k = 0; k < idx.size(); ++k) {
                if (idx[k] >= n)
                    throw InvalidIndex("import_sparse: index " + std::to_string(idx[k]) + " is out of range for size " +
                                       std::to_string(n));
                if (k && idx[k] <= idx[k - 1])
                    throw InvalidValue("import_sparse: indices are not strictly increasing at position " +
                                       std::to_string(k));
            }
        }
        v.nvals_ = idx.size();
        v.indices_ = std::move(idx);
        v.values_ = std::move(vals);
        return v;
    }
    // Dense form from values and a presence bitmap (nullptr-sized bitmap = all present), without copying.
    static Vector import_dense(Index n, Array<T> vals, Array<std::uint8_t> bitmap = {}) {
        const Context ctx = vals.context();
        if (ctx.is_cuda()) {  // checked and counted on the host
            Vector h = import_dense(n, vals.to(Context::cpu()),
                                    bitmap.empty() ? Array<std::uint8_t>() : bitmap.to(Context::cpu()));
            return h.to(ctx);
        }
        Vector v(n, ctx);
        if (vals.size() != n)
            throw InvalidValue("import_dense: expected " + std::to_string(n) + " values, got " +
                               std::to_string(vals.size()));
        if (bitmap.empty()) bitmap = Array<std::uint8_t>(n, std::uint8_t(1));
        if (bitmap.size() != n)
            throw InvalidValue("import_dense: expected a bitmap of " + std::to_string(n) + " entries, got " +
                               std::to_string(bitmap.size()));
        Index cnt = 0;
        for (Index i = 0; i < n; ++i) {
            bitmap[i] = bitmap[i] ? 1 : 0;
            cnt += bitmap[i];
        }
        v.dense_ = true;
        v.values_ = std::move(vals);
        v.bitmap_ = std::move(bitmap);
        v.nvals_ = cnt;
        return v;
    }

    Index size() const { return n_; }
    Index nvals() const { return nvals_; }
    bool is_dense() const { return dense_; }
    const Context& context() const { return ctx_; }

    // A copy in another context.
    Vector to(const Context& ctx) const {
        if (ctx == ctx_) return *this;
        Vector v(n_, ctx);
        v.nvals_ = nvals_;
        v.dense_ = dense_;
        v.indices_ = indices_.to(ctx);
        v.values_ = values_.to(ctx);
        v.bitmap_ = bitmap_.to(ctx);
        return v;
    }
    // For backends that build a vector in place: (dense: values + bitmap; sparse: indices + values).
    static Vector adopt(Index n, Index nvals, bool dense, Array<Index> idx, Array<T> vals, Array<std::uint8_t> bm) {
        Vector v(n, vals.context());
        v.nvals_ = nvals;
        v.dense_ = dense;
        v.indices_ = std::move(idx);
        v.values_ = std::move(vals);
        v.bitmap_ = std::move(bm);
        return v;
    }

    void extract_tuples(std::vector<Index>& idx, std::vector<T>& vals) const {
        if (ctx_.is_cuda()) return to(Context::cpu()).extract_tuples(idx, vals);
        idx.clear();
        vals.clear();
        idx.reserve(nvals_);
        vals.reserve(nvals_);
        if (dense_) {
            for (Index i = 0; i < n_; ++i)
                if (bitmap_[i]) {
                    idx.push_back(i);
                    vals.push_back(values_[i]);
                }
        } else {
            idx.assign(indices_.begin(), indices_.end());
            vals.assign(values_.begin(), values_.end());
        }
    }

    // The entry at i, or none (its value() then throws NoValue naming i).
    Entry<T> get(Index i) const {
        check_index(i);
        if (ctx_.is_cuda()) return to(Context::cpu()).get(i);
        if (dense_) return {bitmap_[i] ? std::optional<T>(values_[i]) : std::nullopt, i};
        auto it = std::lower_bound(indices_.begin(), indices_.end(), i);
        if (it == indices_.end() || *it != i) return {std::nullopt, i};
        return {values_[it - indices_.begin()], i};
    }
    bool contains(Index i) const { return get(i).has_value(); }

    void set(Index i, T v) {
        check_index(i);
        if (ctx_.is_cuda()) return on_host([&](Vector& h) { h.set(i, v); });
        if (!dense_) to_dense();
        nvals_ += !bitmap_[i];
        bitmap_[i] = 1;
        values_[i] = v;
    }
    void remove(Index i) {
        check_index(i);
        if (ctx_.is_cuda()) return on_host([&](Vector& h) { h.remove(i); });
        if (!dense_) to_dense();
        nvals_ -= bitmap_[i];
        bitmap_[i] = 0;
    }
    void clear() { *this = Vector(n_, ctx_); }
    Vector dup() const { return *this; }
    void resize(Index n) {
        detail::check_dimension(n, "vector size");
        if (n == n_) return;
        if (ctx_.is_cuda()) {
            // Dense storage growing, or shrinking with every entry present, stays on the device.
            const bool all = nvals_ == n_, no_bitmap = bitmap_.size() != n_;
            if (!dense_ || (n < n_ && !all)) return on_host([&](Vector& h) { h.resize(n); });
            if (n > n_ && no_bitmap) bitmap_ = Array<std::uint8_t>(n_, std::uint8_t(1), ctx_);
            values_.resize(n);
            if (!no_bitmap || n > n_) bitmap_.resize(n);
            if (n > n_) {
                const T zero{};
                const std::uint8_t absent = 0;
                cuda::fill(values_.data() + n_, n - n_, &zero, sizeof(T), ctx_.stream());
                cuda::fill(bitmap_.data() + n_, n - n_, &absent, 1, ctx_.stream());
            } else {
                nvals_ = n;
            }
            n_ = n;
            return;
        }
        to_sparse();
        auto keep = Index(std::lower_bound(indices_.begin(), indices_.end(), n) - indices_.begin());
        indices_.resize(keep);
        values_.resize(keep);
        nvals_ = keep;
        n_ = n;
    }

    // Storage conversions (meaning unchanged).
    void to_dense() {
        if (dense_) return;
        if (ctx_.is_cuda()) return on_host([&](Vector& h) { h.to_dense(); });
        Array<T> vals(n_, T{});
        Array<std::uint8_t> bm(n_, std::uint8_t(0));
        for (Index k = 0; k < nvals_; ++k) {
            vals[indices_[k]] = values_[k];
            bm[indices_[k]] = 1;
        }
        values_ = std::move(vals);
        bitmap_ = std::move(bm);
        indices_.clear();
        dense_ = true;
    }
    void to_sparse() {
        if (!dense_) return;
        if (ctx_.is_cuda()) return on_host([&](Vector& h) { h.to_sparse(); });
        Array<Index> idx(nvals_);
        Array<T> vals(nvals_);
        Index k = 0;
        for (Index i = 0; i < n_; ++i)
            if (bitmap_[i]) {
                idx[k] = i;
                vals[k++] = values_[i];
            }
        indices_ = std::move(idx);
        values_ = std::move(vals);
        bitmap_.clear();
        dense_ = false;
    }

    // Host views, CPU vectors only (a GPU vector is refused with InvalidValue).
    // Sparse views (valid when !is_dense()).
    std::span<const Index> indices() const {
        detail::host_only(ctx_, "Vector::indices");
        return indices_.span();
    }
    // Values: nvals() of them when sparse, size() (meaningful where the bitmap is set) when dense.
    std::span<const T> values() const {
        detail::host_only(ctx_, "Vector::values");
        return values_.span();
    }
    // Dense view (valid when is_dense()).
    std::span<const std::uint8_t> bitmap() const {
        detail::host_only(ctx_, "Vector::bitmap");
        return bitmap_.span();
    }
    // The same arrays wherever they live (device memory for a GPU vector): for backends.
    std::span<const Index> storage_indices() const { return indices_.span(); }
    std::span<const T> storage_values() const { return values_.span(); }
    std::span<const std::uint8_t> storage_bitmap() const { return bitmap_.span(); }

private:
    template <class F>
    void on_host(F&& edit) {
        Vector h = to(Context::cpu());
        edit(h);
        *this = h.to(ctx_);
    }
    void check_index(Index i) const {
        if (i >= n_)
            throw InvalidIndex("index " + std::to_string(i) + " is outside a vector of size " + std::to_string(n_));
    }

    Index n_ = 0;
    Index nvals_ = 0;
    bool dense_ = false;
    Context ctx_;
    Array<Index> indices_;
    Array<T> values_;
    Array<std::uint8_t> bitmap_;
};

}  // namespace hybla
