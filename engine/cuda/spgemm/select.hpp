// The two SpGEMMs behind cuda::spgemm<T> (engine/cuda/backend.hpp), private to this folder: expand-sort-compress
// (esc.cu) and the hash SpGEMM (spgemm.cu). HYBLA_SPGEMM=hash|esc picks one (read at every call); by default
// esc_preferred below decides, once the hash SpGEMM has counted the product's intermediate products.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/matrix.hpp"

namespace hybla::cuda {

template <class T>
Matrix<T> esc_spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask);

// A per-row epilogue of the batched hash SpGEMM: it gets a batch of finished rows of C (columns sorted, values as
// summed) and the index of their first row, and returns the rows to store in their place (same number of rows
// and columns; mxm_pruned's pruning in pruned.cu).
template <class T, class U>
using RowEpilogue = std::function<Matrix<U>(Index first_row, Matrix<T>&& rows)>;

// C = A·B over plus_times by the hash SpGEMM (never ESC), in batches of rows of at most `budget` intermediate
// products (fewer when the device memory holds fewer; a row with more goes alone), each batch passed through
// `epilogue` as soon as it is finished: only the epilogue's rows are kept, so the whole product never exists.
template <class T, class U>
Matrix<U> hash_spgemm_rows(const Matrix<T>& a, const Matrix<T>& b, std::uint64_t budget,
                           const RowEpilogue<T, U>& epilogue);

// The parts' rows one below the other (each part has ncols columns); each part is freed once copied.
template <class T>
Matrix<T> stack_rows(std::vector<Matrix<T>>& parts, Index ncols, const Context& ctx);

enum class SpgemmChoice { automatic, hash, esc };

// What HYBLA_SPGEMM asks for.
inline SpgemmChoice spgemm_choice() {
    const char* e = std::getenv("HYBLA_SPGEMM");
    if (e && std::strcmp(e, "hash") == 0) return SpgemmChoice::hash;
    if (e && std::strcmp(e, "esc") == 0) return SpgemmChoice::esc;
    return SpgemmChoice::automatic;
}

// By default a product goes to ESC when it is small (fewer than esc_below intermediate products) and its rows
// are heavy on average (more than esc_row_products products a row, as in S·X by a few clusters): ESC spreads the
// products evenly where the hash SpGEMM would leave most of the GPU waiting on a few rows. Every other product
// takes the hash SpGEMM (README.md, "Measurements"); a giant cluster's row does too, its hub jobs cut into chunks
// of about equal products.
inline constexpr Offset esc_below = Offset(1) << 22;
inline constexpr Offset esc_row_products = 200;
inline bool esc_preferred(Offset products, Index rows) {
    return products < esc_below && products > esc_row_products * Offset(rows);
}

}  // namespace hybla::cuda
