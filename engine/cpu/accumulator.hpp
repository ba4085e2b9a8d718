// Per-row accumulators of Gustavson's SpGEMM: a dense one (an array over all columns with generation stamps,
// so it is never cleared) for rows with much work, and an open-addressing hash table for rows with little.
// Both honour a mask row: either only allowed columns accumulate, or forbidden columns are skipped.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/config.hpp"

namespace hybla::cpu {

enum class MaskMode { none, allow, forbid };

template <class T>
class DenseAccumulator {
public:
    void begin_row(Index ncols) {
        if (stamp_.size() < ncols) {
            stamp_.assign(ncols, 0);
            val_.resize(ncols);
            gen_ = 0;
        }
        if (gen_ > 0xFFFFFFF0u) {
            std::fill(stamp_.begin(), stamp_.end(), 0);
            gen_ = 0;
        }
        gen_ += 3;  // gen_: marked (allowed or forbidden), gen_+1: present
        touched_.clear();
    }
    void mark(ColIndex j) { stamp_[j] = gen_; }
    // Adds v at column j; returns whether j became newly present.
    template <MaskMode mode, class Add>
    bool add(ColIndex j, T v, Add&& add_op) {
        std::uint32_t& s = stamp_[j];
        if (s == gen_ + 1) {
            val_[j] = add_op(val_[j], v);
            return false;
        }
        if constexpr (mode == MaskMode::allow) {
            if (s != gen_) return false;
        } else if constexpr (mode == MaskMode::forbid) {
            if (s == gen_) return false;
        }
        s = gen_ + 1;
        val_[j] = v;
        touched_.push_back(j);
        return true;
    }
    // Writes the present entries sorted by column: a scan of the stamps when the row is dense enough that
    // the scan is cheaper than sorting the touched columns.
    void gather(ColIndex* cols, T* vals) {
        if (touched_.size() * 32 > stamp_.size()) {
            std::size_t q = 0;
            for (std::size_t j = 0; j < stamp_.size(); ++j)
                if (stamp_[j] == gen_ + 1) {
                    cols[q] = ColIndex(j);
                    vals[q++] = val_[j];
                }
            return;
        }
        std::sort(touched_.begin(), touched_.end());
        for (std::size_t q = 0; q < touched_.size(); ++q) {
            cols[q] = touched_[q];
            vals[q] = val_[touched_[q]];
        }
    }
    std::size_t size() const { return touched_.size(); }

private:
    std::vector<std::uint32_t> stamp_;
    std::vector<T> val_;
    std::vector<ColIndex> touched_;
    std::uint32_t gen_ = 0;
};

template <class T>
class HashAccumulator {
public:
    static constexpr ColIndex empty = ~ColIndex(0);
    // capacity: an upper bound on the number of distinct keys that will be inserted.
    void begin_row(std::size_t capacity) {
        std::size_t cap = 16;
        while (cap < 2 * capacity) cap <<= 1;
        if (keys_.size() < cap) {
            keys_.resize(cap);
            vals_.resize(cap);
            state_.resize(cap);
        }
        mask_ = cap - 1;
        std::fill_n(keys_.begin(), cap, empty);
        touched_.clear();
    }
    void mark(ColIndex j) {
        std::size_t h = slot(j);
        keys_[h] = j;
        state_[h] = 0;
    }
    template <MaskMode mode, class Add>
    bool add(ColIndex j, T v, Add&& add_op) {
        std::size_t h = slot(j);
        if (keys_[h] == empty) {
            if constexpr (mode == MaskMode::allow) return false;
            keys_[h] = j;
        } else if (state_[h] == 1) {
            vals_[h] = add_op(vals_[h], v);
            return false;
        } else if constexpr (mode == MaskMode::forbid) {
            return false;  // a marked key is forbidden
        }
        state_[h] = 1;
        vals_[h] = v;
        touched_.push_back(ColIndex(h));
        return true;
    }
    void gather(ColIndex* cols, T* vals) {
        std::sort(touched_.begin(), touched_.end(), [&](ColIndex x, ColIndex y) { return keys_[x] < keys_[y]; });
        for (std::size_t q = 0; q < touched_.size(); ++q) {
            cols[q] = keys_[touched_[q]];
            vals[q] = vals_[touched_[q]];
        }
    }
    std::size_t size() const { return touched_.size(); }

private:
    std::size_t slot(ColIndex j) const {
        std::size_t h = (std::size_t(j) * 0x9E3779B1u) & mask_;
        while (keys_[h] != empty && keys_[h] != j) h = (h + 1) & mask_;
        return h;
    }
    std::vector<ColIndex> keys_;
    std::vector<T> vals_;
    std::vector<std::uint8_t> state_;
    std::vector<ColIndex> touched_;
    std::size_t mask_ = 0;
};

}  // namespace hybla::cpu
