#include "io/abc.hpp"

#include <unordered_map>

#include <tbb/parallel_for.h>

#include "io/text.hpp"

namespace hybla::io::detail {

Tuples parse_abc(const std::string& path, ValueType type, bool undirected, std::vector<std::string>& labels) {
    Array<char> buf = read_file(path);
    const char* d = buf.data();
    const std::size_t n = buf.size();
    const ValueParser vp(type);

    // Each chunk numbers its labels in order of first appearance within the chunk; merging the chunks' label
    // lists in file order then gives the global first-appearance order with little sequential work.
    struct AbcChunk : ChunkTuples {
        std::vector<std::string_view> labels;
        std::vector<Index> global;  // local label number -> vertex
    };
    const std::vector<Chunk> chunks = split_lines(d, 0, n, 1);
    std::vector<AbcChunk> out(chunks.size());
    tbb::parallel_for(std::size_t(0), chunks.size(), [&](std::size_t k) {
        AbcChunk& o = out[k];
        std::unordered_map<std::string_view, Index> local;
        auto number = [&](std::string_view label) {
            auto [it, fresh] = local.try_emplace(label, Index(o.labels.size()));
            if (fresh) o.labels.push_back(label);
            return it->second;
        };
        try {
            for_each_line(d, chunks[k], [&](std::size_t line, std::string_view s) {
                if (first_char(s) < 0) return true;
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
    throw_first_error(path, out);

    std::size_t local_total = 0;
    for (const AbcChunk& o : out) local_total += o.labels.size();
    std::unordered_map<std::string_view, Index> global;
    global.reserve(local_total);
    std::vector<std::string_view> order;
    for (AbcChunk& o : out) {
        o.global.resize(o.labels.size());
        for (std::size_t x = 0; x < o.labels.size(); ++x) {
            auto [it, fresh] = global.try_emplace(o.labels[x], Index(order.size()));
            if (fresh) order.push_back(o.labels[x]);
            o.global[x] = it->second;
        }
    }
    if (order.size() > max_dimension)
        throw IoError(path, 0, std::to_string(order.size()) + " distinct labels exceed the limit of 2^32 vertices");
    labels.assign(order.begin(), order.end());

    std::vector<ChunkTuples> tuples(out.size());
    std::vector<std::vector<Index>> maps(out.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
        tuples[k] = std::move(static_cast<ChunkTuples&>(out[k]));
        maps[k] = std::move(out[k].global);
    }
    out.clear();
    Tuples t;
    t.symmetric = undirected;
    assemble(tuples, [&](std::size_t k, Index x) { return maps[k][x]; }, undirected, vp.floating(), false, t);
    t.nrows = t.ncols = labels.size();
    return t;
}

}  // namespace hybla::io::detail
