#include "io/edge_list.hpp"

#include <algorithm>
#include <atomic>
#include <span>

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include "io/text.hpp"

namespace hybla::io::detail {

namespace {

bool is_comment_or_blank(std::string_view s) {
    const int c = first_char(s);
    return c < 0 || c == '#' || c == '%';
}

// A header field: an ASCII letter or '_', then letters, digits, '_', '-' or '.' ("node_1", "FromNodeId").
bool is_word(std::string_view tok) {
    auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    if (tok.empty() || !letter(tok[0])) return false;
    for (char c : tok)
        if (!letter(c) && !(c >= '0' && c <= '9') && c != '-' && c != '.') return false;
    return true;
}

// The number of fields of the line when every one is a word, else 0.
std::size_t word_fields(std::string_view s, std::size_t line) {
    try {
        Fields f(s, true, line);
        std::string_view tok;
        std::size_t n = 0;
        while (f.next(tok)) {
            if (!is_word(tok)) return 0;
            ++n;
        }
        return n;
    } catch (const LineError&) {  // an empty field: not a header; the edge parser reports it
        return 0;
    }
}

std::size_t count_fields(std::string_view s, std::size_t line) {
    Fields f(s, true, line);
    return f.count_rest();
}

// Parses one edge line with nfields fields into o; comment and blank lines are skipped.
void parse_edge(std::size_t line, std::string_view s, std::size_t nfields, const ValueParser& vp, ChunkTuples& o) {
    if (is_comment_or_blank(s)) return;
    // Fields are checked left to right; a missing or extra field is reported where it is noticed.
    Fields f(s, true, line);
    auto wrong_count = [&](std::size_t found) {
        return LineError{line, "expected " + std::to_string(nfields) + " fields, found " +
                                   std::to_string(found + f.count_rest())};
    };
    std::string_view tok;
    std::int64_t v[2] = {0, 0};
    for (std::size_t x = 0; x < 2; ++x) {
        bool ok = false, range = false;
        if (!f.next_int(tok, v[x], ok, &range)) throw wrong_count(x);
        if (!ok) {
            if (range) throw LineError{line, "vertex id " + quoted(tok) + " does not fit int64_t"};
            throw LineError{line, "vertex id " + quoted(tok) + " is not an integer"};
        }
        if (v[x] < 0) throw LineError{line, "negative vertex id " + quoted(tok)};
    }
    if (nfields == 3 && !vp.parse_next(f, "weight", false, false, o)) throw wrong_count(2);
    if (f.next(tok)) throw wrong_count(nfields + 1);
    o.rows.push_back(Index(v[0]));
    o.cols.push_back(Index(v[1]));
    ++o.entries;
}

}  // namespace

Tuples parse_edge_list(const std::string& path, ValueType type, bool undirected, std::vector<std::int64_t>& ids) {
    TextInput in(path);
    const ValueParser vp(type);
    std::vector<ChunkTuples> out;

    // The start is read line by line: comments, then perhaps a header line, then the first edge line, which fixes
    // the number of fields. A line of words is a header only if the first data line after it has as many fields
    // (2 or 3); otherwise it is the first edge line, and fails as one.
    enum class Stage { first_line, after_candidate, body } stage = Stage::first_line;
    std::string candidate;  // copied: the data line after it may lie in a later window
    std::size_t candidate_line = 0, nfields = 0;
    auto start_body = [&](std::string_view s, std::size_t line) {
        nfields = count_fields(s, line);
        if (nfields > 3) throw LineError{line, "expected 2 or 3 fields, found " + std::to_string(nfields)};
        if (nfields < 2) nfields = 2;  // reported by the parser below as "expected 2 fields, found 1"
    };
    while (in.next()) {
        const char* d = in.data();
        std::size_t body = 0, body_line = in.first_line();
        if (stage != Stage::body) {
            body = in.size();
            try {
                for_each_line(d, Chunk{0, in.size(), in.first_line()}, [&](std::size_t line, std::string_view s) {
                    if (is_comment_or_blank(s)) return true;
                    if (stage == Stage::first_line) {
                        const std::size_t words = word_fields(s, line);
                        if (words == 2 || words == 3) {
                            candidate.assign(s);
                            candidate_line = line;
                            nfields = words;
                            stage = Stage::after_candidate;
                            return true;
                        }
                        start_body(s, line);
                    } else if (count_fields(s, line) == nfields) {
                        candidate.clear();  // a header: skipped
                    } else {
                        out.emplace_back();
                        parse_edge(candidate_line, candidate, nfields, vp, out.back());
                        start_body(s, line);
                    }
                    stage = Stage::body;
                    body = std::size_t(s.data() - d);
                    body_line = line;
                    return false;
                });
            } catch (LineError& e) {
                throw IoError(path, e.line, e.reason);
            }
        }
        const std::vector<Chunk> chunks = split_lines(d, body, in.size(), body_line);
        const std::size_t first = out.size();
        out.resize(first + chunks.size());
        tbb::parallel_for(std::size_t(0), chunks.size(), [&](std::size_t k) {
            ChunkTuples& o = out[first + k];
            const std::size_t guess = (chunks[k].end - chunks[k].begin) / 8;
            o.rows.reserve(guess);
            o.cols.reserve(guess);
            if (nfields == 3) (vp.floating() ? o.reals.reserve(guess) : o.ints.reserve(guess));
            try {
                for_each_line(d, chunks[k], [&](std::size_t line, std::string_view s) {
                    parse_edge(line, s, nfields, vp, o);
                    return true;
                });
            } catch (LineError& e) {
                o.error = std::move(e);
            }
            release_unused(o);
        });
        throw_first_error(path, std::span(out).subspan(first));
    }
    in.close();
    if (stage == Stage::first_line) throw IoError(path, 0, "no edges: the file is empty or holds only comments");
    if (stage == Stage::after_candidate) throw IoError(path, 0, "no edges: the file holds only a header line");
    const bool weighted = nfields == 3;

    // Compact numbering in increasing id order. Ids that are dense enough get a direct lookup table;
    // otherwise the distinct ids are sorted and looked up by binary search.
    std::vector<Index> chunk_max(out.size(), 0);
    std::size_t nedges = 0;
    for (const ChunkTuples& o : out) nedges += o.rows.size();
    tbb::parallel_for(std::size_t(0), out.size(), [&](std::size_t k) {
        Index m = 0;
        for (Index x : out[k].rows) m = std::max(m, x);
        for (Index x : out[k].cols) m = std::max(m, x);
        chunk_max[k] = m;
    });
    const Index max_id = chunk_max.empty() ? 0 : *std::max_element(chunk_max.begin(), chunk_max.end());
    auto too_many = [&](std::size_t count) {
        if (count > max_dimension)
            throw IoError(path, 0, std::to_string(count) + " distinct vertex ids exceed the limit of 2^32 vertices");
    };
    Tuples t;
    t.pattern = !weighted;
    t.symmetric = undirected;
    ids.clear();
    if (max_id < 4 * Index(nedges) + (Index(1) << 20)) {
        Array<std::uint32_t> table(max_id + 1, 0u);
        tbb::parallel_for(std::size_t(0), out.size(), [&](std::size_t k) {
            for (Index x : out[k].rows) std::atomic_ref<std::uint32_t>(table[x]).store(1, std::memory_order_relaxed);
            for (Index x : out[k].cols) std::atomic_ref<std::uint32_t>(table[x]).store(1, std::memory_order_relaxed);
        });
        std::uint64_t next = 0;
        for (Index x = 0; x <= max_id; ++x)
            if (table[x]) {
                too_many(next + 1);
                ids.push_back(std::int64_t(x));
                table[x] = std::uint32_t(next++);
            }
        assemble(out, [&](std::size_t, Index x) { return Index(table[x]); }, undirected, vp.floating(), t.pattern, t);
    } else {
        std::vector<Index> all;
        all.reserve(2 * nedges);
        for (const ChunkTuples& o : out) {
            all.insert(all.end(), o.rows.begin(), o.rows.end());
            all.insert(all.end(), o.cols.begin(), o.cols.end());
        }
        tbb::parallel_sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        too_many(all.size());
        ids.assign(all.begin(), all.end());
        assemble(out, [&](std::size_t, Index x) { return Index(std::lower_bound(all.begin(), all.end(), x) - all.begin()); },
                 undirected, vp.floating(), t.pattern, t);
    }
    t.nrows = t.ncols = ids.size();
    return t;
}

}  // namespace hybla::io::detail
