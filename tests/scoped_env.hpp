// Sets an environment variable for a scope (nullptr: unsets it) and restores what it was afterwards: the tests
// set the backends' knobs (HYBLA_SPGEMM_*, HYBLA_PRUNE_*, ...) this way.
#pragma once
#include <cstdlib>
#include <optional>
#include <string>

namespace hybla_test {

class EnvGuard {
public:
    EnvGuard(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = std::string(old);
        set(value);
    }
    EnvGuard(const char* name, const std::string& value) : EnvGuard(name, value.c_str()) {}
    ~EnvGuard() { set(old_ ? old_->c_str() : nullptr); }
    EnvGuard(const EnvGuard&) = delete;
    EnvGuard& operator=(const EnvGuard&) = delete;

private:
    void set(const char* value) {
        if (value) ::setenv(name_.c_str(), value, 1);
        else ::unsetenv(name_.c_str());
    }
    std::string name_;
    std::optional<std::string> old_;
};

}  // namespace hybla_test
