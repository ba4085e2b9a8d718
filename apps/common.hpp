// What every hybla program shares: the common options (--backend, --validate, --threads, --quiet, -h), argument
// parsing with precise messages, the exit codes, and output files that appear only when the run succeeded.
//
// Exit codes: 0 success; 1 --validate found a mismatch beyond the stated tolerance; 2 bad input (unknown option,
// malformed number, missing or malformed file, labels that do not match the graph): one line on stderr.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <tbb/global_control.h>

#include "engine/hybla.hpp"
#include "engine/memory.hpp"

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

// Progress lines on stderr unless --quiet.
class Log {
public:
    explicit Log(const CommonOptions& o) : quiet_(o.quiet), t0_(std::chrono::steady_clock::now()) {}
    bool quiet() const { return quiet_; }
    double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
    void operator()(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
        if (quiet_) return;
        va_list ap;
        va_start(ap, fmt);
        std::vfprintf(stderr, fmt, ap);
        va_end(ap);
    }

private:
    bool quiet_;
    std::chrono::steady_clock::time_point t0_;
};

// An output file written to a temporary name and renamed into place by commit(): a failed run leaves no
// output file (and does not clobber an existing one). "-" is stdout; a path that exists and is not a regular
// file (/dev/null, a FIFO, /dev/stdout) is written directly, never replaced.
class Output {
public:
    explicit Output(std::string path) : path_(std::move(path)) {
        if (path_ == "-") return;
        std::error_code ec;
        const auto st = std::filesystem::status(path_, ec);
        const bool special = !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
        if (std::filesystem::is_directory(st)) throw UsageError("cannot write " + path_ + ": it is a directory");
        if (!special) tmp_ = path_ + ".tmp-hybla";
        file_.open(special ? path_ : tmp_, std::ios::binary | std::ios::trunc);
        if (!file_) throw UsageError("cannot open for writing: " + path_);
    }
    ~Output() {
        if (!committed_ && !tmp_.empty()) {
            file_.close();
            std::error_code ec;
            std::filesystem::remove(tmp_, ec);
        }
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
        std::filesystem::rename(tmp_, path_, ec);
        if (ec) throw UsageError("cannot write " + path_ + ": " + ec.message());
        committed_ = true;
    }

private:
    std::string path_, tmp_;
    std::ofstream file_;
    bool committed_ = false;
};

// Runs a program body: limits the threads, maps exceptions to one stderr line and an exit code.
// body(options) returns the exit code; parse(args, options) reads the command line (and prints usage on -h,
// returning false to stop with exit 0).
inline int run(const char* name, int argc, char** argv, const std::function<bool(Args&, CommonOptions&)>& parse,
               const std::function<int(const CommonOptions&)>& body) {
    CommonOptions o;
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
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 2;
    } catch (const OutOfMemory& e) {
        std::fprintf(stderr, "%s: out of memory: %s\n", name, e.what());
        return 2;
    } catch (const Error& e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", name, e.what());
        return 2;
    }
}

}  // namespace hybla::app
