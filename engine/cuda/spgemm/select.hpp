// The two SpGEMMs behind cuda::spgemm<T> (engine/cuda/backend.hpp), private to this folder: expand-sort-compress
// (esc.cu) and the hash SpGEMM (spgemm.cu), the default; HYBLA_SPGEMM=esc picks ESC.
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

// Whether HYBLA_SPGEMM=esc asks for expand-sort-compress (read at every call). The hash SpGEMM is the default:
// it was as fast or faster on every product of the bench, contractions by a few heavy clusters included, since
// hub rows are cut into chunks (README.md, "Measurements").
inline bool esc_chosen() {
    const char* e = std::getenv("HYBLA_SPGEMM");
    return e && std::strcmp(e, "esc") == 0;
}

}  // namespace hybla::cuda
