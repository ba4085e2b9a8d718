// What every hybla program shares: the common options (--backend, --validate, --threads, --quiet, -h), argument
// parsing with precise messages, the exit codes, how GRAPH is read, and output files that appear only when the
// run succeeded.
//
// Exit codes: 0 success; 1 --validate found a mismatch beyond the stated tolerance; 2 bad input (unknown option,
// malformed number, missing or malformed file, a graph without edges, labels that do not match the graph): one
// line on stderr and nothing else (progress lines are held back until the input is accepted).
#pragma once
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <tbb/global_control.h>

#include "engine/hybla.hpp"
#include "engine/memory.hpp"
#include "io/read_graph.hpp"

namespace hybla::app {

// Bad command line or input: exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// --validate found a difference: exit code 1.
struct ValidationError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct CommonOptions {
    std::string backend = "auto";
    bool validate = false;
    int threads = 0;
    bool quiet = false;
};

inline const char* common_usage =
    "  --backend cpu|cuda|auto   where to compute (default auto: the GPU when one is usable)\n"
    "  --validate                also compute on the CPU backend and compare; exit 1 on a mismatch\n"
    "  --threads n               CPU threads (default: all)\n"
    "  --quiet                   no progress or timing lines on stderr\n"
    "  -h, --help                this text\n";

// Walks argv. Each program asks, option by option, whether the current argument is one it knows.
class Args {
public:
    Args(int argc, char** argv) : args_(argv + 1, argv + argc) {}
    bool done() const { return k_ >= args_.size(); }
    const std::string& peek() const { return args_[k_]; }
    std::string next() { return args_[k_++]; }
    // The current argument is `name` (then it is consumed).
    bool is(const char* name) {
        if (done() || args_[k_] != name) return false;
        ++k_;
        return true;
    }
    // The value after an option just matched by is().
    std::string value(const char* name) {
        if (done()) throw UsageError(std::string(name) + " needs a value");
        return args_[k_++];
    }
    // A file name after an option just matched by is() (an empty one is refused).
    std::string file(const char* name) {
        std::string v = value(name);
        if (v.empty()) throw UsageError(std::string(name) + " needs a file name");
        return v;
    }
    double real(const char* name) {
        const std::string v = value(name);
        std::size_t used = 0;
        double x = 0;
        try {
            x = std::stod(v, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != v.size() || !std::isfinite(x)) throw UsageError(std::string(name) + " needs a number, got '" + v + "'");
        return x;
    }
    long long integer(const char* name, long long lo, long long hi) {
        const std::string v = value(name);
        std::size_t used = 0;
        long long x = 0;
        try {
            x = std::stoll(v, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != v.size() || v.empty())
            throw UsageError(std::string(name) + " needs an integer, got '" + v + "'");
        if (x < lo || x > hi)
            throw UsageError(std::string(name) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "], got " + v);
        return x;
    }
    // -h or --help: prints the program's usage and the common options' (then the program stops with exit 0).
    bool help(const char* usage) {
        if (!is("-h") && !is("--help")) return false;
        std::fputs(usage, stdout);
        std::fputs(common_usage, stdout);
        return true;
    }
    // One of the common options; returns whether it consumed one.
    bool common(CommonOptions& o) {
        if (is("--backend")) {
            o.backend = value("--backend");
            if (o.backend != "cpu" && o.backend != "cuda" && o.backend != "auto")
                throw UsageError("--backend must be cpu, cuda or auto, got '" + o.backend + "'");
        } else if (is("--validate")) {
            o.validate = true;
        } else if (is("--threads")) {
            o.threads = int(integer("--threads", 1, 1 << 16));
        } else if (is("--quiet")) {
            o.quiet = true;
        } else {
            return false;
        }
        return true;
    }
    // A positional argument (anything not starting with '-', or "-" alone).
    bool positional() const { return !done() && (args_[k_] == "-" || args_[k_].empty() || args_[k_][0] != '-'); }

private:
    std::vector<std::string> args_;
    std::size_t k_ = 0;
};

// The context --backend names (cuda without a GPU is bad input).
inline Context context_of(const CommonOptions& o) {
    try {
        return Context::parse(o.backend);
    } catch (const InvalidValue& e) {
        throw UsageError(e.what());
    }
}

// Resolves --backend and starts its GPU on another thread: CUDA's initialisation, the device's context and its
// memory pool take a few hundred milliseconds, which the program spends reading its input on the CPU instead
// of waiting (read inside a `ScopedContext cpu(Context::cpu())`, or the reader would build the graph on the
// GPU and wait anyway). context() waits for the start and gives the context, or throws what it threw (a
// UsageError for --backend cuda without a usable GPU). A name that is not cpu, cuda or auto is refused at once.
class BackendStart {
public:
    explicit BackendStart(const CommonOptions& o) {
        if (o.backend == "cpu") {
            ctx_ = Context::cpu();
            return;
        }
        if (o.backend != "cuda" && o.backend != "auto" && !o.backend.empty()) ctx_ = context_of(o);  // throws
        started_ = std::async(std::launch::async, [o] {
            const Context ctx = context_of(o);
            warm_up(ctx);
            return ctx;
        });
    }
    BackendStart(const BackendStart&) = delete;
    BackendStart& operator=(const BackendStart&) = delete;
    ~BackendStart() {
        if (started_.valid()) started_.wait();
    }
    Context context() {
        if (started_.valid()) ctx_ = started_.get();
        return ctx_;
    }

private:
    Context ctx_ = Context::cpu();
    std::future<Context> started_;
};

// Progress lines on stderr unless --quiet, held back until accept(): a run refused for bad input prints its
// one error line and nothing before it. Programs accept once their input is read and checked.
class Log {
public:
    explicit Log(const CommonOptions& o) : quiet_(o.quiet), t0_(std::chrono::steady_clock::now()) {}
    bool quiet() const { return quiet_; }
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
    void operator()(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
        if (quiet_) return;
        va_list ap;
        va_start(ap, fmt);
        if (accepted_) {
            std::vfprintf(stderr, fmt, ap);
        } else {
            va_list again;
            va_copy(again, ap);
            const int n = std::vsnprintf(nullptr, 0, fmt, again);
            va_end(again);
            if (n > 0) {
                const std::size_t at = held_.size();
                held_.resize(at + std::size_t(n) + 1);
                std::vsnprintf(held_.data() + at, std::size_t(n) + 1, fmt, ap);
                held_.pop_back();
            }
        }
        va_end(ap);
    }
    // The input is good: print what was held back, and from now on print at once.
    void accept() const {
        if (accepted_) return;
        accepted_ = true;
        std::fputs(held_.c_str(), stderr);
        held_.clear();
    }

private:
    bool quiet_;
    std::chrono::steady_clock::time_point t0_;
    mutable bool accepted_ = false;
    mutable std::string held_;
};

// The shortest text that reads back as x.
inline std::string number(double x) {
    char buf[64];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}

// How a program reads GRAPH (see read_input).
struct GraphInput {
    bool abc = false;         // mcl's label format whatever the file's name (mcl --abc)
    bool directed = false;    // an .abc file's edges one way, as stored
    bool undirected = false;  // every edge in both directions, in any format
};

// GRAPH as the programs read it. An .abc file is the graph mcl sees: every edge in both directions, a pair
// named more than once (in either direction) weighs the largest of its weights, as mcl --abc reads it; with
// `directed`, the edges one way as stored (a repeated edge keeps its first weight). Other formats as stored
// (Matrix Market symmetric files in both directions), or every edge in both directions with `undirected`
// (again the largest weight). Refused as bad input: a matrix that is not square, and a graph without edges
// (an empty file, comments only, a Matrix Market file of 0 entries), which no program has anything to do with.
inline io::Graph<double> read_input(const std::string& path, const GraphInput& in = {}) {
    const bool abc = in.abc || io::graph_format_of(path) == io::GraphFormat::abc;
    io::Graph<double> g;
    if (abc && (in.undirected || !in.directed)) g = io::read_abc<double>(path, {.undirected = true}, max_op{});
    else if (abc) g = io::read_abc<double>(path);
    else if (in.undirected) g = io::read_graph<double>(path, {.undirected = true}, max_op{});
    else g = io::read_graph<double>(path);
    if (g.matrix.nrows() != g.matrix.ncols())
        throw UsageError(path + " is a " + std::to_string(g.matrix.nrows()) + "x" + std::to_string(g.matrix.ncols()) +
                         " matrix, not a graph (a graph's matrix is square)");
    if (g.matrix.nvals() == 0) throw UsageError(path + ": no edges");
    return g;
}

// Temporary files that SIGINT, SIGTERM and SIGHUP must not leave behind. install() (at the start of run(),
// before the program starts any thread) blocks those signals in the calling thread, so that every thread
// started later inherits the block, and starts one thread that waits for them (sigwait): it removes the
// registered files under the registry's lock, then ends the process by the signal's default action. A file is
// created and registered under the same lock, so a signal at any moment finds every file that exists. A signal
// that was ignored when the program started (nohup) stays ignored.
class TempFiles {
public:
    static void install() {
        static const bool started = start();
        (void)started;
    }
    // mkstemps: creates a fresh file from templ (its last suffix_len characters follow the XXXXXX) and registers
    // it. The open descriptor, or -1 with errno set.
    static int create(std::string& templ, int suffix_len = 0) {
        install();
        std::lock_guard<std::mutex> lock(mutex());
        const int fd = ::mkstemps(templ.data(), suffix_len);
        if (fd >= 0) paths().push_back(templ);
        return fd;
    }
    // Renames a registered file to dest and forgets it (false with ec set when the rename fails).
    static bool rename(const std::string& path, const std::string& dest, std::error_code& ec) {
        std::lock_guard<std::mutex> lock(mutex());
        std::filesystem::rename(path, dest, ec);
        if (!ec) forget(path);
        return !ec;
    }
    // Removes a registered file and forgets it.
    static void remove(const std::string& path) {
        std::lock_guard<std::mutex> lock(mutex());
        ::unlink(path.c_str());
        forget(path);
    }

private:
    static std::mutex& mutex() {
        static std::mutex m;
        return m;
    }
    static std::vector<std::string>& paths() {
        static std::vector<std::string> p;
        return p;
    }
    static void forget(const std::string& path) {
        auto& p = paths();
        for (std::size_t k = 0; k < p.size(); ++k)
            if (p[k] == path) {
                p.erase(p.begin() + std::ptrdiff_t(k));
                return;
            }
    }
    static bool start() {
        sigset_t set;
        sigemptyset(&set);
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
            struct sigaction old;
            if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&set, sig);
        }
        if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return false;
        std::thread([set] {
            int sig = 0;
            while (::sigwait(&set, &sig) != 0) {
            }
            mutex().lock();  // held to the end: no file is created or renamed after this point
            for (const std::string& p : paths()) ::unlink(p.c_str());
            ::signal(sig, SIG_DFL);
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
            ::raise(sig);  // to this thread, which no longer blocks it: the default action ends the process
            std::_Exit(128 + sig);
        }).detach();
        return true;
    }
};

// The mode a newly created file gets (0666 less the umask): mkstemp's files are 0600. Called once before
// any thread starts, since reading the umask sets it for a moment.
inline mode_t new_file_mode() {
    static const mode_t mode = [] {
        const mode_t mask = ::umask(077);
        ::umask(mask);
        return mode_t(0666 & ~mask);
    }();
    return mode;
}

// An output file written to a temporary file and renamed into place by commit(): a failed or interrupted run
// leaves no output file (and does not clobber an existing one). The temporary file is ".NAME.XXXXXX" beside
// the output (so that the rename is atomic), a fresh name that touches no existing file, with the permissions
// a new file gets; SIGINT, SIGTERM and SIGHUP remove it. "-" is stdout; a path that exists and is not a
// regular file (/dev/null, a FIFO, /dev/stdout) is written directly, never replaced.
class Output {
public:
    explicit Output(std::string path) : path_(std::move(path)) {
        if (path_ == "-") return;
        std::error_code ec;
        const auto st = std::filesystem::status(path_, ec);
        const bool special = !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
        if (std::filesystem::is_directory(st)) throw UsageError("cannot write " + path_ + ": it is a directory");
        if (special) {
            file_.open(path_, std::ios::binary | std::ios::trunc);
            if (!file_) throw UsageError("cannot open for writing: " + path_);
            return;
        }
        const std::filesystem::path p(path_);
        std::string tmp = (p.parent_path() / ("." + p.filename().string() + ".XXXXXX")).string();
        const int fd = TempFiles::create(tmp);
        if (fd < 0) throw UsageError("cannot open for writing: " + path_ + ": " + std::strerror(errno));
        tmp_ = tmp;
        const bool ok = ::fchmod(fd, new_file_mode()) == 0;
        ::close(fd);
        if (ok) file_.open(tmp_, std::ios::binary | std::ios::trunc);
        if (!ok || !file_) {
            discard();
            throw UsageError("cannot open for writing: " + path_);
        }
    }
    ~Output() {
        if (!committed_) discard();
    }
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;
    std::ostream& stream() { return path_ == "-" ? static_cast<std::ostream&>(std::cout) : file_; }
    void commit() {
        if (path_ == "-") {
            std::cout.flush();
            committed_ = true;
            return;
        }
        file_.close();
        if (!file_) throw UsageError("cannot write " + path_);
        if (tmp_.empty()) {  // a special file, written in place
            committed_ = true;
            return;
        }
        std::error_code ec;
        if (!TempFiles::rename(tmp_, path_, ec)) throw UsageError("cannot write " + path_ + ": " + ec.message());
        committed_ = true;
    }

private:
    void discard() {
        if (tmp_.empty()) return;
        file_.close();
        TempFiles::remove(tmp_);
        tmp_.clear();
    }
    std::string path_, tmp_;
    std::ofstream file_;
    bool committed_ = false;
};

// The one line a failed run prints. The library's own messages often begin with the name of the algorithm,
// which is the program's name too ("mcl: edge weights must be >= 0"): that prefix is not repeated. A file's
// message begins with the file's name, which stays whatever it is.
inline std::string error_line(const char* name, const std::exception& e) {
    const std::string prefix = std::string(name) + ": ";
    const std::string what = e.what();
    if (dynamic_cast<const Error*>(&e) && !dynamic_cast<const IoError*>(&e) && what.rfind(prefix, 0) == 0)
        return what;
    return prefix + what;
}

// Runs a program body: limits the threads, maps exceptions to one stderr line and an exit code.
// body(options) returns the exit code; parse(args, options) reads the command line (and prints usage on -h,
// returning false to stop with exit 0).
inline int run(const char* name, int argc, char** argv, const std::function<bool(Args&, CommonOptions&)>& parse,
               const std::function<int(const CommonOptions&)>& body) {
    CommonOptions o;
    new_file_mode();
    TempFiles::install();
    try {
        Args args(argc, argv);
        if (!parse(args, o)) return 0;
        std::unique_ptr<tbb::global_control> limit;
        if (o.threads)
            limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, o.threads);
        return body(o);
    } catch (const ValidationError& e) {
        std::fprintf(stderr, "%s: validation failed: %s\n", name, e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "%s: out of memory\n", name);
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", error_line(name, e).c_str());
        return 2;
    }
}

}  // namespace hybla::app
