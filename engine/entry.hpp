// Entry<T>: what Matrix::get and Vector::get return, a std::optional<T> (has_value, operator bool, operator*,
// value_or) whose value() throws NoValue naming the missing entry ("the matrix has no entry at (2, 3)"),
// GraphBLAS's GrB_NO_VALUE, where std::optional would throw a std::bad_optional_access that says nothing.
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "engine/config.hpp"
#include "engine/error.hpp"

namespace hybla {

template <class T>
class Entry : public std::optional<T> {
public:
    using std::optional<T>::operator=;

    // The entry of a vector at i.
    Entry(std::optional<T> v, Index i) : std::optional<T>(std::move(v)), i_(i), j_(no_column) {}
    // The entry of a matrix at (i, j).
    Entry(std::optional<T> v, Index i, Index j) : std::optional<T>(std::move(v)), i_(i), j_(j) {}

    T& value() & {
        check();
        return **this;
    }
    const T& value() const& {
        check();
        return **this;
    }
    T&& value() && {
        check();
        return std::move(**this);
    }
    const T&& value() const&& {
        check();
        return std::move(**this);
    }

    // std::optional's == (and so !=), declared here: the standard's templates are ambiguous between two objects of
    // a class derived from std::optional, and with a std::optional on one side they compare the derived object as
    // a plain value (two empty ones would differ).
    friend bool operator==(const Entry& a, const Entry& b) { return base(a) == base(b); }
    template <class U>
    friend bool operator==(const Entry& a, const std::optional<U>& b) {
        return base(a) == b;
    }
    template <class U>
    friend bool operator==(const std::optional<U>& a, const Entry& b) {
        return a == base(b);
    }

private:
    static constexpr Index no_column = ~Index(0);
    static const std::optional<T>& base(const Entry& e) { return e; }
    void check() const {
        if (this->has_value()) return;
        if (j_ == no_column) throw NoValue("the vector has no entry at index " + std::to_string(i_));
        throw NoValue("the matrix has no entry at (" + std::to_string(i_) + ", " + std::to_string(j_) + ")");
    }

    Index i_, j_;
};

}  // namespace hybla
