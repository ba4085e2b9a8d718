// The two SpGEMMs behind cuda::spgemm<T> (engine/cuda/backend.hpp), private to this folder: expand-sort-compress
// (esc.cu) and the hash SpGEMM (spgemm.cu). HYBLA_SPGEMM=hash|esc picks one (read at every call); by default the
// hash SpGEMM takes every product of at least esc_below products and hands smaller ones to ESC, whose fixed cost
// per call is lower (README.md, "Measurements").
#pragma once
#include <cstdlib>
#include <cstring>

#include "engine/cuda/backend.hpp"
#include "engine/matrix.hpp"

namespace hybla::cuda {

template <class T>
Matrix<T> esc_spgemm(const Matrix<T>& a, const Matrix<T>& b, SemiringCode sr, const MaskPattern* mask);

enum class SpgemmChoice { automatic, hash, esc };

// What HYBLA_SPGEMM asks for.
inline SpgemmChoice spgemm_choice() {
    const char* e = std::getenv("HYBLA_SPGEMM");
    if (e && std::strcmp(e, "hash") == 0) return SpgemmChoice::hash;
    if (e && std::strcmp(e, "esc") == 0) return SpgemmChoice::esc;
    return SpgemmChoice::automatic;
}

// By default, products with fewer intermediate products than this go to ESC.
inline constexpr Offset esc_below = Offset(1) << 22;

}  // namespace hybla::cuda
