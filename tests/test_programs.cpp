// The programs as a user meets them: how they read an .abc graph, contract's labels file, the one line a bad
// input prints (and nothing before it), graphs without edges, and output files (temporary names that touch no
// file of the user's, removed when the program is stopped by a signal). The programs run on the tests' backend.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/common.hpp"
#include "io/io.hpp"
#include "programs.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace hybla;
using hybla_test::ProgramRun;

namespace {

using hybla_test::TempDir;

std::string read_text(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// The backend of this test run (HYBLA_BACKEND), for the programs' --backend.
const char* backend() { return default_context().is_cuda() ? "cuda" : "cpu"; }

// The program, or empty (with a warning) when it was not built beside the tests.
fs::path program(const std::string& name) {
    const fs::path p = hybla_test::program_path(name);
    if (p.empty()) WARN("bin/" + name + " is not built beside this test: skipped");
    return p;
}

// Runs a program on the test's backend, with progress lines (no --quiet) unless args ask otherwise.
ProgramRun run(const fs::path& p, const std::string& args) {
    return hybla_test::run_program(p, args + " --backend " + backend());
}

const std::vector<std::string> all_programs = {"mcl", "contract", "pagerank", "tc"};

// A command line that writes `out` from graph (and labels, for contract).
std::string writing(const std::string& name, const std::string& graph, const std::string& labels,
                    const std::string& out) {
    if (name == "contract") return graph + " " + labels + " -o " + out;
    if (name == "tc") return graph + " --per-vertex " + out;
    return graph + " -o " + out;
}

// pagerank's output: 'vertex rank' lines.
std::map<std::string, double> ranks_of(const std::string& text) {
    std::map<std::string, double> out;
    std::istringstream s(text);
    std::string v;
    double x;
    while (s >> v >> x) out[v] = x;
    return out;
}

// The line a program wrote on stderr for a bad input: one line, its name once in front, exit code 2.
void check_one_error_line(const std::string& name, const ProgramRun& r) {
    CHECK(r.code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK((!r.err.empty() && r.err.back() == '\n'));
    CHECK(r.err.rfind(name + ": ", 0) == 0);
    CHECK(r.err.rfind(name + ": " + name + ": ", 0) == std::string::npos);
    CHECK(r.err.find("out of memory: out of memory") == std::string::npos);
}

}  // namespace

TEST_CASE("programs read an .abc graph as mcl does: undirected, repeated pairs at their largest weight",
          "[programs]") {
    TempDir tmp;
    // As mcl sees it: a-b 3, b-c 1, c-a 1, c-d 5 (each in both directions).
    const std::string g = tmp.write("g.abc", "a b 1\nb c 1\nc a 1\nc d 2\nd c 5\nb a 3\n");
    const std::string clusters = tmp.write("clusters.txt", "a\tb\tc\nd\n");
    const std::string out = tmp.file("out.txt");

    if (const fs::path contract = program("contract"); !contract.empty()) {
        ProgramRun r = run(contract, g + " " + clusters + " --abc --quiet -o " + out);
        REQUIRE(r.code == 0);
        CHECK(read_text(out) == "0\t0\t10\n0\t1\t5\n1\t0\t5\n");
        // The same as the contraction of the symmetric graph written out with both directions.
        const std::string both = tmp.write("both.abc", "a b 3\nb a 3\nb c 1\nc b 1\nc a 1\na c 1\nc d 5\nd c 5\n");
        r = run(contract, both + " " + clusters + " --abc --quiet --directed -o " + out);
        REQUIRE(r.code == 0);
        CHECK(read_text(out) == "0\t0\t10\n0\t1\t5\n1\t0\t5\n");
        // --directed: the arcs as stored.
        r = run(contract, g + " " + clusters + " --abc --quiet --directed -o " + out);
        REQUIRE(r.code == 0);
        CHECK(read_text(out) == "0\t0\t6\n0\t1\t2\n1\t0\t5\n");
    }

    if (const fs::path pagerank = program("pagerank"); !pagerank.empty()) {
        const ProgramRun plain = run(pagerank, g + " --quiet --tol 1e-14");
        const ProgramRun undirected = run(pagerank, g + " --quiet --tol 1e-14 --undirected");
        const ProgramRun directed = run(pagerank, g + " --quiet --tol 1e-14 --directed");
        REQUIRE(plain.code == 0);
        REQUIRE(undirected.code == 0);
        REQUIRE(directed.code == 0);
        const std::map<std::string, double> ranks = ranks_of(plain.out);
        REQUIRE(ranks.size() == 4);
        for (const auto& [v, x] : ranks_of(undirected.out)) CHECK(std::abs(ranks.at(v) - x) < 1e-12);
        // Undirected, a and b are alike (both joined to each other and to c only); as stored, they are not.
        CHECK(std::abs(ranks.at("a") - ranks.at("b")) < 1e-12);
        const std::map<std::string, double> arcs = ranks_of(directed.out);
        CHECK(std::abs(arcs.at("a") - arcs.at("b")) > 1e-3);
        const ProgramRun both = run(pagerank, g + " --directed --undirected");
        check_one_error_line("pagerank", both);
    }

    if (const fs::path tc = program("tc"); !tc.empty()) {
        const ProgramRun r = run(tc, g + " --quiet");
        REQUIRE(r.code == 0);
        CHECK(r.out == "1\n");
    }
}

TEST_CASE("contract's labels file: the first line decides the format, errors name the line", "[programs]") {
    const fs::path contract = program("contract");
    if (contract.empty()) return;
    TempDir tmp;
    const std::string g = tmp.write("g.abc", "a b\nb c\nc d\n");
    const std::string out = tmp.file("out.txt");
    auto refused = [&](const std::string& labels) {
        const ProgramRun r = run(contract, g + " " + tmp.write("labels.txt", labels) + " --abc -o " + out);
        check_one_error_line("contract", r);
        CHECK_FALSE(fs::exists(out));
        return r.err;
    };
    const std::string where = "contract: " + tmp.file("labels.txt") + " (one label per line) ";
    CHECK(refused("0\n0\nx\n1\n") == where + "line 3: 'x' is not an integer label\n");
    CHECK(refused("\n  7\n\n7 8\n1\n2\n") == where + "line 4: expected one integer label, found 2 fields\n");
    CHECK(refused("0\n0\n1\n99999999999999999999\n") ==
          where + "line 4: '99999999999999999999' does not fit int64_t\n");
    CHECK(refused("0\n1\n1\n") == "contract: " + tmp.file("labels.txt") +
                                      " (one label per line) has 3 labels but the graph has 4 vertices\n");
    // A first line of names: a cluster file, whose own errors are reported as before.
    CHECK(refused("a b\nc x\n") ==
          "contract: " + tmp.file("labels.txt") + " (clusters) line 2: 'x' is not a vertex of the graph\n");

    REQUIRE(run(contract, g + " " + tmp.write("labels.txt", "\n5\n5\n7\n7\n") + " --abc --quiet -o " + out).code == 0);
    CHECK(read_text(out) == "5\t5\t2\n5\t7\t1\n7\t5\t1\n7\t7\t2\n");
    REQUIRE(run(contract, g + " " + tmp.write("labels.txt", "a b\nc d\n") + " --abc --quiet -o " + out).code == 0);
    CHECK(read_text(out) == "0\t0\t2\n0\t1\t1\n1\t0\t1\n1\t1\t2\n");
}

TEST_CASE("an error line names the program once", "[programs]") {
    // Through app::run itself, stderr caught in a file.
    TempDir tmp;
    auto line_of = [&](const char* name, const std::function<void()>& fail) {
        const std::string path = tmp.file("stderr.txt");
        std::fflush(stderr);
        const int saved = ::dup(2);
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        REQUIRE(fd >= 0);
        ::dup2(fd, 2);
        ::close(fd);
        char arg0[] = "program";
        char* argv[] = {arg0, nullptr};
        const int code = app::run(
            name, 1, argv, [](app::Args&, app::CommonOptions&) { return true; },
            [&](const app::CommonOptions&) {
                fail();
                return 0;
            });
        std::fflush(stderr);
        ::dup2(saved, 2);
        ::close(saved);
        CHECK(code == 2);
        return read_text(path);
    };
    CHECK(line_of("tc", [] { throw OutOfMemory("an array of 10 elements", 80); }) ==
          "tc: out of memory: an array of 10 elements asked for 80 bytes\n");
    CHECK(line_of("mcl", [] { throw InvalidValue("mcl: edge weights must be >= 0"); }) ==
          "mcl: edge weights must be >= 0\n");
    CHECK(line_of("contract", [] { throw InvalidValue("mcl: edge weights must be >= 0"); }) ==
          "contract: mcl: edge weights must be >= 0\n");
    // A file's message starts with its name, which may be the program's.
    CHECK(line_of("tc", [] { throw IoError("tc", 3, "bad"); }) == "tc: tc:3: bad\n");
    CHECK(line_of("tc", [] { throw app::UsageError("tc: no edges"); }) == "tc: tc: no edges\n");

    // And from the programs: mcl's negative weight was once reported by the algorithm ("mcl: mcl: ...").
    if (const fs::path mcl = program("mcl"); !mcl.empty()) {
        const std::string g = tmp.write("neg.abc", "a b 1\nb c -2\n");
        const ProgramRun r = run(mcl, g + " -o " + tmp.file("out.txt"));
        check_one_error_line("mcl", r);
        CHECK(r.err == "mcl: " + g + ": the edge b c has the negative weight -2 (mcl needs weights >= 0)\n");
    }
}

TEST_CASE("bad input: one line on stderr, exit code 2, no output file, for every program", "[programs]") {
    TempDir tmp;
    const std::string good = tmp.write("good.txt", "1 2\n2 3\n3 1\n");
    const std::string labels = tmp.write("labels.txt", "0\n0\n1\n");
    const std::string out = tmp.file("out.txt");
    io::write_binary(tmp.file("empty.bin"), Matrix<double>(3, 3));
    io::Graph<double> no_edges;
    no_edges.matrix = Matrix<double>(4, 4);
    no_edges.names.labels = {"a", "b", "c", "d"};
    io::write_binary(tmp.file("empty_labels.bin"), no_edges);

    struct Case {
        std::string what, graph, labels, extra;
    };
    for (const std::string& name : all_programs) {
        const fs::path p = program(name);
        if (p.empty()) continue;
        std::vector<Case> cases = {
            {"missing file", tmp.file("missing.txt"), labels, ""},
            {"malformed Matrix Market",
             tmp.write("bad.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 x 1\n"), labels, ""},
            {"not square",
             tmp.write("rect.mtx", "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 2 1\n2 3 1\n"), labels, ""},
            {"no edges (Matrix Market)",
             tmp.write("empty.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 0\n"), labels, ""},
            {"no edges (binary)", tmp.file("empty.bin"), labels, ""},
            {"no edges (binary with labels)", tmp.file("empty_labels.bin"), labels, ""},
            {"unknown option", good, labels, " --bogus"},
        };
        if (name == "mcl") cases.push_back({"negative weight", tmp.write("neg.txt", "1 2 1\n2 3 -1\n"), labels, ""});
        if (name == "contract") cases.push_back({"bad labels", good, tmp.write("bad_labels.txt", "0\nx\n1\n"), ""});
        if (name == "pagerank")
            cases.push_back({"bad seeds", good, labels, " --seeds " + tmp.write("seeds.txt", "7\n")});
        for (const Case& c : cases) {
            INFO(name << ": " << c.what);
            // Without --quiet: no progress line may come before the error line.
            const ProgramRun r = run(p, writing(name, c.graph, c.labels, out) + c.extra);
            INFO(r.err);
            check_one_error_line(name, r);
            if (c.what.rfind("no edges", 0) == 0) CHECK(r.err == name + ": " + c.graph + ": no edges\n");
            CHECK_FALSE(fs::exists(out));
        }
        // The good input is accepted (the cases above fail for their own reason).
        INFO(name);
        CHECK(run(p, writing(name, good, labels, out) + " --quiet").code == 0);
        CHECK(fs::exists(out));
        fs::remove(out);
    }
}

TEST_CASE("output files: a fresh temporary name, the usual permissions, nothing of the user's touched",
          "[programs]") {
    TempDir tmp;
    const std::string good = tmp.write("good.txt", "1 2\n2 3\n3 1\n3 4\n");
    const std::string labels = tmp.write("labels.txt", "0\n0\n0\n1\n");
    const std::string mine = tmp.write("out.txt.tmp-hybla", "the user's own file\n");
    // A umask under which mkstemp's 0600 differs from a new file's mode, so the check below can fail.
    const mode_t mask = 022;
    const mode_t saved_mask = ::umask(mask);
    struct RestoreMask {
        mode_t m;
        ~RestoreMask() { ::umask(m); }
    } restore_mask{saved_mask};
    for (const std::string& name : all_programs) {
        const fs::path p = program(name);
        if (p.empty()) continue;
        INFO(name);
        const std::string out = tmp.file("out.txt");
        const std::set<std::string> before = tmp.names();
        REQUIRE(run(p, writing(name, good, labels, out) + " --quiet").code == 0);
        CHECK(read_text(mine) == "the user's own file\n");
        std::set<std::string> after = tmp.names();
        CHECK(after.erase("out.txt") == 1);
        CHECK(after == before);
        struct stat st;
        REQUIRE(::stat(out.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == (0666 & ~mask));
        fs::remove(out);
        // A failed run leaves nothing either.
        CHECK(run(p, writing(name, tmp.file("missing.txt"), labels, out)).code == 2);
        CHECK(tmp.names() == before);
    }
}

TEST_CASE("a program stopped by SIGTERM or SIGINT leaves no temporary file", "[programs]") {
    // The program creates its temporary output file, then blocks opening its input, a FIFO that nobody writes:
    // the signal is sure to find the temporary file there, whatever the machine's speed.
    for (const std::string& name : all_programs) {
        const fs::path p = program(name);
        if (p.empty()) continue;
        for (const int sig : {SIGTERM, SIGINT}) {
            INFO(name << " " << (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
            TempDir tmp;
            const std::string fifo = tmp.file("graph.txt");
            if (::mkfifo(fifo.c_str(), 0600) != 0) {
                WARN("cannot make a FIFO in " + tmp.path.string() + ": skipped");
                return;
            }
            const std::string labels = tmp.write("labels.txt", "0\n");
            const std::string out = tmp.file("out.txt");
            std::vector<std::string> args = {p.string()};
            std::istringstream words(writing(name, fifo, labels, out) + " --quiet --backend " + backend());
            for (std::string w; words >> w;) args.push_back(w);
            std::vector<char*> argv;
            for (std::string& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            const std::set<std::string> before = tmp.names();

            const pid_t pid = ::fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                sigset_t none;  // as from an interactive shell: default actions, nothing blocked
                sigemptyset(&none);
                ::sigprocmask(SIG_SETMASK, &none, nullptr);
                for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_DFL);
                ::execv(argv[0], argv.data());
                ::_exit(127);
            }
            // Wait (at most a minute) for the temporary file to appear.
            bool appeared = false, exited = false;
            int status = 0;
            for (int k = 0; k < 6000 && !appeared && !exited; ++k) {
                appeared = tmp.names().size() > before.size();
                exited = !appeared && ::waitpid(pid, &status, WNOHANG) == pid;
                if (!appeared && !exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            if (!exited) {
                ::kill(pid, appeared ? sig : SIGKILL);
                REQUIRE(::waitpid(pid, &status, 0) == pid);
            }
            REQUIRE(appeared);
            CHECK(WIFSIGNALED(status));
            CHECK(WTERMSIG(status) == sig);
            CHECK(tmp.names() == before);
        }
    }
}
