// Construction from tuples into a GPU context: on the GPU for the built-in duplicate operators and the
// kernels' value types, on the CPU (then copied up) otherwise.
#pragma once
#include <span>

#include "engine/cpu/build.hpp"
#include "engine/cuda/backend.hpp"
#include "engine/cuda/opcodes.hpp"
#include "engine/matrix.hpp"

namespace hybla::cuda {

template <class T, class Dup>
Matrix<T> build_matrix(Index nrows, Index ncols, std::span<const Index> rows, std::span<const Index> cols,
                       std::span<const T> vals, Dup dup, bool dup_is_error, const Context& ctx) {
    if constexpr (binary_code_of<Dup>::known && is_value_type<T>::value)
        return build_coded<T>(nrows, ncols, rows, cols, vals, binary_code_of<Dup>::value, dup_is_error, ctx);
    else
        return cpu::build_matrix<T>(nrows, ncols, rows, cols, vals, dup, dup_is_error).to(ctx);
}

}  // namespace hybla::cuda
