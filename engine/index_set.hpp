// IndexSet: the row or column indices of extract and assign: all of them, a range with a stride, or a list.
//   extract(C, no_mask, no_accum, A, IndexRange{0, 10}, all);
//   assign(C, no_mask, no_accum, A, std::vector<Index>{4, 2, 7}, all);
#pragma once
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "engine/config.hpp"
#include "engine/error.hpp"

namespace hybla {

struct AllIndices {};
inline constexpr AllIndices all{};

// [begin, end) taking every stride-th index.
struct IndexRange {
    Index begin = 0, end = 0, stride = 1;
};

class IndexSet {
public:
    IndexSet(AllIndices) : kind_(Kind::all) {}
    IndexSet(IndexRange r) : kind_(Kind::range), range_(r) {
        if (r.stride == 0) throw InvalidValue("IndexRange: stride must be positive");
    }
    IndexSet(std::span<const Index> list) : kind_(Kind::list), list_(list) {}
    IndexSet(const std::vector<Index>& list) : IndexSet(std::span<const Index>(list)) {}

    // Number of indices when the dimension is dim; checks every index is below dim.
    Index resolve(Index dim, const char* what) const {
        switch (kind_) {
            case Kind::all: return dim;
            case Kind::range: {
                // Only the indices the range stands for must lie inside the dimension.
                const Index n = range_.end > range_.begin ? (range_.end - range_.begin + range_.stride - 1) / range_.stride : 0;
                if (n > 0 && range_.begin + (n - 1) * range_.stride >= dim)
                    throw InvalidIndex(std::string(what) + ": range index " +
                                       std::to_string(range_.begin + (n - 1) * range_.stride) +
                                       " is beyond the dimension " + std::to_string(dim));
                return n;
            }
            case Kind::list:
                for (std::size_t k = 0; k < list_.size(); ++k)
                    if (list_[k] >= dim)
                        throw InvalidIndex(std::string(what) + ": index " + std::to_string(list_[k]) +
                                           " (position " + std::to_string(k) + ") is outside the dimension " +
                                           std::to_string(dim));
                return list_.size();
        }
        return 0;
    }
    // The k-th index.
    Index operator[](Index k) const {
        switch (kind_) {
            case Kind::all: return k;
            case Kind::range: return range_.begin + k * range_.stride;
            case Kind::list: return list_[k];
        }
        return 0;
    }

private:
    enum class Kind { all, range, list } kind_;
    IndexRange range_{};
    std::span<const Index> list_;
};

}  // namespace hybla
