// The two SpGEMMs behind cuda::spgemm<T> (engine/cuda/backend.hpp), private to this folder: expand-sort-compress
// (esc.cu) and the hash SpGEMM (spgemm.cu). HYBLA_SPGEMM=hash|esc picks one (read at every call); the default
// is ESC, which the measurements of README.md still find faster on most products.
#pragma once
#include <cstdlib>
#include <cstring>

#include "engine/cuda/backend.hpp"
#include "engine/matrix.hpp"

namespace hybla::cuda {

template <class T>
Matrix<T> esc_spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask);
template <class T>
Matrix<T> hash_spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask);

// Whether HYBLA_SPGEMM asks for the hash SpGEMM.
inline bool hash_spgemm_selected() {
    const char* e = std::getenv("HYBLA_SPGEMM");
    return e && std::strcmp(e, "hash") == 0;
}

}  // namespace hybla::cuda
