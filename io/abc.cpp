#include "io/abc.hpp"

#include <cstring>
#include <memory>
#include <unordered_map>

#include <tbb/parallel_for.h>

#include "io/text.hpp"

namespace hybla::io::detail {

namespace {

// Storage for the distinct labels: a chunk's labels point into the current window, which the next one replaces.
// Blocks never move, so views into them stay valid as keys of the label map.
class LabelStore {
public:
    std::string_view add(std::string_view s) {
        if (block_.size() - used_ < s.size()) {
            block_ = std::span<char>(new char[std::max(s.size(), block_bytes)], std::max(s.size(), block_bytes));
            blocks_.emplace_back(block_.data());
            used_ = 0;
        }
        char* p = block_.data() + used_;
        if (!s.empty()) std::memcpy(p, s.data(), s.size());
        used_ += s.size();
        return std::string_view(p, s.size());
    }

private:
    static constexpr std::size_t block_bytes = std::size_t(1) << 20;
    std::vector<std::unique_ptr<char[]>> blocks_;
    std::span<char> block_;
    std::size_t used_ = 0;
};

}  // namespace

Tuples parse_abc(const std::string& path, ValueType type, bool undirected, std::vector<std::string>& labels) {
    TextInput in(path);
    const ValueParser vp(type);

    // Each chunk numbers its labels in order of first appearance within the chunk; merging the chunks' label
    // lists in file order after each window then gives the global first-appearance order with little sequential
    // work.
    struct AbcChunk : ChunkTuples {
        std::vector<std::string_view> labels;
    };
    LabelStore store;
    std::unordered_map<std::string_view, Index> global;
    std::vector<std::string_view> order;
    std::vector<ChunkTuples> out;
    while (in.next()) {
        const char* d = in.data();
        const std::vector<Chunk> chunks = split_lines(d, 0, in.size(), in.first_line());
        std::vector<AbcChunk> win(chunks.size());
        tbb::parallel_for(std::size_t(0), chunks.size(), [&](std::size_t k) {
            AbcChunk& o = win[k];
            std::unordered_map<std::string_view, Index> local;
            auto number = [&](std::string_view label) {
                auto [it, fresh] = local.try_emplace(label, Index(o.labels.size()));
                if (fresh) o.labels.push_back(label);
                return it->second;
            };
            try {
                for_each_line(d, chunks[k], [&](std::size_t line, std::string_view s) {
                    // mcl skips a line whose first character other than white space is '#'.
                    const int c = first_char(s);
                    if (c < 0 || c == '#') return true;
                    Fields f(s, false, line);
                    std::string_view tok[3];
                    std::size_t found = 0;
                    while (found < 3 && f.next(tok[found])) ++found;
                    if (found == 3) found += f.count_rest();
                    if (found < 2 || found > 3)
                        throw LineError{line, "expected 2 or 3 fields, found " + std::to_string(found)};
                    if (found == 3) vp.parse(tok[2], "weight", false, false, line, o);
                    else if (vp.floating()) o.reals.push_back(1.0);
                    else o.ints.push_back(1);
                    o.rows.push_back(number(tok[0]));
                    o.cols.push_back(number(tok[1]));
                    ++o.entries;
                    return true;
                });
            } catch (LineError& e) {
                o.error = std::move(e);
            }
        });
        throw_first_error(path, win);

        std::vector<std::vector<Index>> maps(win.size());
        for (std::size_t k = 0; k < win.size(); ++k) {
            maps[k].resize(win[k].labels.size());
            for (std::size_t x = 0; x < win[k].labels.size(); ++x) {
                auto it = global.find(win[k].labels[x]);
                if (it == global.end()) {
                    it = global.emplace(store.add(win[k].labels[x]), Index(order.size())).first;
                    order.push_back(it->first);
                }
                maps[k][x] = it->second;
            }
        }
        if (order.size() > max_dimension)
            throw IoError(path, 0, std::to_string(order.size()) + " distinct labels exceed the limit of 2^32 vertices");
        const std::size_t first = out.size();
        out.resize(first + win.size());
        tbb::parallel_for(std::size_t(0), win.size(), [&](std::size_t k) {
            ChunkTuples& o = out[first + k];
            o = std::move(static_cast<ChunkTuples&>(win[k]));
            for (Index& x : o.rows) x = maps[k][x];
            for (Index& x : o.cols) x = maps[k][x];
        });
    }
    in.close();
    if (order.empty()) throw IoError(path, 0, "no edges: the file is empty or holds only comments");
    labels.assign(order.begin(), order.end());
    global = {};

    Tuples t;
    t.symmetric = undirected;
    assemble(out, [](std::size_t, Index x) { return x; }, undirected, vp.floating(), false, t);
    t.nrows = t.ncols = labels.size();
    return t;
}

}  // namespace hybla::io::detail
