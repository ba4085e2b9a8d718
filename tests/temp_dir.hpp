// A fresh directory per test case under the system's temporary directory (named by process and a counter, so
// that test binaries run in parallel do not meet), removed with everything in it afterwards.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>

namespace hybla_test {

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        static int counter = 0;
        path = std::filesystem::temp_directory_path() /
               ("hybla_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string file(const std::string& name) const { return (path / name).string(); }
    // Writes text to the file `name` in the directory; its path.
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path / name, std::ios::binary) << text;
        return file(name);
    }
    // The names of the files in the directory.
    std::set<std::string> names() const {
        std::set<std::string> s;
        for (const auto& e : std::filesystem::directory_iterator(path)) s.insert(e.path().filename().string());
        return s;
    }
};

}  // namespace hybla_test
