#include "io/read_graph.hpp"

#include <algorithm>
#include <cctype>

namespace hybla::io {

GraphFormat graph_format_of(const std::string& path) {
    std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    auto strip = [&](const std::string& ext) {
        if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
            name.resize(name.size() - ext.size());
            return true;
        }
        return false;
    };
    strip(".gz");
    if (strip(".mtx") || strip(".mm")) return GraphFormat::matrix_market;
    if (strip(".abc")) return GraphFormat::abc;
    if (strip(".bin") || strip(".hyb")) return GraphFormat::binary;
    return GraphFormat::edge_list;
}

}  // namespace hybla::io
