// The programs (mcl, contract, pagerank, tc) built beside the tests: <build>/bin/NAME next to
// <build>/tests/test_x. Tests run them through the shell and look at the exit code and what they printed.
#pragma once
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace hybla_test {

// The program, or an empty path when it was not built.
inline std::filesystem::path program_path(const std::string& name) {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    const std::filesystem::path program = self.parent_path().parent_path() / "bin" / name;
    return std::filesystem::exists(program, ec) ? program : std::filesystem::path();
}

struct ProgramRun {
    int code = -1;  // the exit code; -1 when the program did not exit (a signal)
    std::string out, err;
};

// Runs "program args" (args as the shell reads them) and collects its stdout and stderr.
inline ProgramRun run_program(const std::filesystem::path& program, const std::string& args) {
    auto temp = [] {
        std::string name = (std::filesystem::temp_directory_path() / "hybla-program-XXXXXX").string();
        const int fd = ::mkstemp(name.data());
        if (fd >= 0) ::close(fd);
        return name;
    };
    const std::string out = temp(), err = temp();
    std::string cmd = "'";
    cmd.append(program.string()).append("' ").append(args);
    cmd.append(" >'").append(out).append("' 2>'").append(err).append("'");
    const int status = std::system(cmd.c_str());
    auto slurp = [](const std::string& path) {
        std::ifstream f(path, std::ios::binary);
        std::ostringstream s;
        s << f.rdbuf();
        std::filesystem::remove(path);
        return s.str();
    };
    ProgramRun r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

}  // namespace hybla_test
