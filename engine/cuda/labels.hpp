// The GPU side of hybla::indicator (engine/labels.hpp): labels numbered compactly where they are uploaded, and
// the label indicator's rows. Defined in engine/cuda/structure/labels.cu; declared for every compiler.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/array.hpp"
#include "engine/config.hpp"
#include "engine/context.hpp"

namespace hybla {
namespace detail {
// Labels within a range of at most 4n + 1024 values are numbered through a table indexed by label - min (on
// either backend); others through a hash map or a sort, on the host.
inline bool table_range(std::uint64_t span, std::size_t n) { return span < 4 * std::uint64_t(n) + 1024; }
}  // namespace detail

namespace cuda {
struct LabelNumbering {
    bool numbered = false;            // false: the labels' range is too wide for a table (number them on the host)
    Array<Offset> st_offsets;         // n + 1: 0, 1, ..., n (Sᵀ's row offsets, one entry a row)
    Array<ColIndex> st_cols;          // n: each vertex's compact label (Sᵀ's column indices)
    Array<Offset> s_offsets;          // k + 1: S's row offsets
    Array<ColIndex> s_cols;           // n: the vertices by compact label, in vertex order within one (S's columns)
    Index k = 0;                      // how many labels
    // k words of word_bytes each in host memory, the label numbered c at c: in the page-locked buffer kept per
    // thread (valid until the thread's next numbering), or in `own` (labels beyond that buffer's size).
    const void* words = nullptr;
    std::vector<unsigned char> own;
};
// Two device arrays of n values each (S's and Sᵀ's) that the numbering fills with the value one, given as the
// `bytes` (1, 2, 4 or 8) low bytes of `bits`; bytes 0: none.
struct Ones {
    void* a = nullptr;
    void* b = nullptr;
    std::size_t bytes = 0;
    std::uint64_t bits = 0;
};
// Numbers n labels, each a word of word_bytes (4 or 8) bytes in host memory (uploaded) or, on_device, in the
// memory of ctx's GPU (read in place), on the GPU of ctx: in order of first appearance or of value, where a
// word's value is its unsigned value after XOR with flip (the sign bit for signed labels). Fills `ones` where
// the labels are numbered.
LabelNumbering number_labels(const void* labels, bool on_device, std::size_t word_bytes, Index n,
                             std::uint64_t flip, bool value_order, Ones ones, const Context& ctx);
}  // namespace cuda
}  // namespace hybla
