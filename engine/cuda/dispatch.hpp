// The front end's side of the CUDA backend: checks that an operator has a CUDA kernel, casts operands to the
// output type on the GPU, turns masks into the pattern of their true entries, and calls engine/cuda/backend.hpp.
#pragma once
#include <memory>
#include <concepts>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "engine/cuda/backend.hpp"
#include "engine/dense_matrix.hpp"
#include "engine/descriptor.hpp"
#include "engine/index_set.hpp"
#include "engine/matrix.hpp"
#include "engine/vector.hpp"

namespace hybla::cuda_dispatch {

using namespace hybla::cuda;

inline std::string no_kernel(const char* op, const char* what, const char* type) {
    return std::string(op) + ": " + what + " " + type +
           " has no CUDA kernel (only hybla's built-in operators do); run it on a CPU context";
}
template <class Sr> SemiringCode semiring_code(const char* op) {
    if constexpr (semiring_code_of<Sr>::known) return semiring_code_of<Sr>::value;
    else throw InvalidValue(no_kernel(op, "the semiring", typeid(Sr).name()));
}
template <class Op> BinaryOp binary_code(const char* op) {
    if constexpr (binary_code_of<Op>::known) return binary_code_of<Op>::value;
    else throw InvalidValue(no_kernel(op, "the operator", typeid(Op).name()));
}
template <class Op> MonoidOp monoid_code(const char* op) {
    if constexpr (monoid_code_of<Op>::known) return monoid_code_of<Op>::value;
    else throw InvalidValue(no_kernel(op, "the monoid", typeid(Op).name()));
}
// An operator object as a code: a built-in operator type, or any operator that names the built-in operator
// it computes through a member `BinaryOp cuda_code() const` (an operator chosen at run time, for example).
template <class Op> BinaryOp binary_code(const Op& o, const char* op) {
    if constexpr (requires { { o.cuda_code() } -> std::convertible_to<BinaryOp>; }) return o.cuda_code();
    else return binary_code<Op>(op);
}
// The accumulator as a code (nullopt: none).
template <class Accum> std::optional<BinaryOp> accum_code(const Accum& accum, const char* op) {
    if constexpr (std::is_same_v<Accum, NoAccum>) return std::nullopt;
    else return binary_code(accum, op);
}

// An operand in the output's value type: the object itself, or a cast copy (on the heap, so that moving the
// holder keeps the pointer valid).
template <class O>
struct Typed {
    std::unique_ptr<O> copy;
    const O* p = nullptr;
    const O& get() const { return *p; }
};
template <class TC, template <class> class O, class TA>
Typed<O<TC>> as_type(const O<TA>& a) {
    Typed<O<TC>> h;
    if constexpr (std::is_same_v<TA, TC>) {
        h.p = &a;
    } else {
        h.copy = std::make_unique<O<TC>>(cuda::cast<TC>(a));
        h.p = h.copy.get();
    }
    return h;
}

// The pattern of a mask's true entries, with what it needs kept alive.
class MaskHolder {
public:
    MaskHolder() = default;
    template <class M>
    MaskHolder(const Matrix<M>& m, const Descriptor& d) {
        if (d.mask_structure) {
            set(m);
        } else {
            auto s = std::make_shared<Matrix<M>>(cuda::select(m, SelectCode{}));
            set(*s);
            keep_ = s;
        }
        pattern_.complement = d.mask_complement;
    }
    template <class M>
    MaskHolder(const Vector<M>& v, const Descriptor& d) {
        auto col = std::make_shared<Matrix<M>>(cuda::as_column(v));
        if (!d.mask_structure) *col = cuda::select(*col, SelectCode{});
        set(*col);
        keep_ = col;
        pattern_.complement = d.mask_complement;
    }
    MaskHolder(NoMask, const Descriptor&) : none_(true) {}
    const MaskPattern* get() const { return none_ ? nullptr : &pattern_; }
    // Entries of the pattern (of the mask's true entries unless the mask is structural).
    Offset nvals() const { return nvals_; }
    // Adds the row of each entry to the pattern (built once and cached on the mask matrix, or on the pattern
    // made of a valued mask for this call); none past 2^32 rows.
    void add_entry_rows() {
        if (!none_) pattern_.rows = rows_of_(pattern_of_);
    }

private:
    template <class M>
    static const std::uint32_t* entry_rows_of(const void* pattern) {
        const auto& m = *static_cast<const Matrix<M>*>(pattern);
        if (m.nrows() > 0xffffffffull) return nullptr;
        auto rows = std::static_pointer_cast<const Array<std::uint32_t>>(m.cached_entry_rows());
        if (!rows) {
            rows = std::make_shared<const Array<std::uint32_t>>(
                cuda::entry_rows(m.storage_offsets().data(), m.nrows(), m.nvals(), m.context()));
            m.cache_entry_rows(rows);
        }
        return rows->data();
    }
    template <class M>
    void set(const Matrix<M>& m) {
        pattern_.offsets = m.storage_offsets().data();
        pattern_.cols = m.storage_indices().data();
        nvals_ = m.nvals();
        none_ = false;
        pattern_of_ = &m;
        rows_of_ = &entry_rows_of<M>;
    }
    MaskPattern pattern_;
    const void* pattern_of_ = nullptr;  // the Matrix<M> the pattern is of, and its row array
    const std::uint32_t* (*rows_of_)(const void*) = nullptr;
    Offset nvals_ = 0;
    std::shared_ptr<void> keep_;
    bool none_ = true;
};

// The indices of an IndexSet as a list.
inline std::vector<Index> list_of(const IndexSet& s, Index n) {
    std::vector<Index> out(n);
    for (Index k = 0; k < n; ++k) out[k] = s[k];
    return out;
}

template <class TC, class MaskT, class Accum>
void write_back(Matrix<TC>& c, Matrix<TC>&& t, const MaskT& mask, Accum accum, const Descriptor& d, const char* op) {
    MaskHolder mh(mask, d);
    auto acc = accum_code(accum, op);
    cuda::write_back(c, std::move(t), mh.get(), acc ? &*acc : nullptr, d.replace);
}
// Every entry present, in dense storage (nvals is kept on the host: no synchronisation to know it).
template <class T> bool is_full(const Vector<T>& v) { return v.is_dense() && v.nvals() == v.size(); }

template <class TW, class MaskT, class Accum>
void write_back(Vector<TW>& w, Vector<TW>&& t, const MaskT& mask, Accum accum, const Descriptor& d, const char* op) {
    if constexpr (std::is_same_v<MaskT, NoMask> && std::is_same_v<Accum, NoAccum>) {
        w = std::move(t);
    } else {
        if constexpr (std::is_same_v<MaskT, NoMask>) {
            // No mask (replace then changes nothing) into a full w: w keeps every entry, t's combine in.
            if (is_full(w) && t.is_dense()) {
                w = cuda::accumulate_full(w, t, *accum_code(accum, op));
                return;
            }
        }
        Matrix<TW> wc = cuda::as_column(w);
        write_back(wc, cuda::as_column(t), mask, accum, d, op);
        w = cuda::from_column(wc);
    }
}

}  // namespace hybla::cuda_dispatch
