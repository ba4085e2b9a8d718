// HYBLA_TRACE=1 prints the path each operation takes (kernel, method, sizes) on stderr, like SuiteSparse's
// burble. This is the library's only output, and only on request.
#pragma once
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace hybla {

inline bool trace_enabled() {
    static const bool on = [] {
        const char* e = std::getenv("HYBLA_TRACE");
        return e && *e && *e != '0';
    }();
    return on;
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline void trace(const char* fmt, ...) {
    if (!trace_enabled()) return;
    std::va_list args;
    va_start(args, fmt);
    std::fputs("[hybla] ", stderr);
    std::vfprintf(stderr, fmt, args);
    std::fputc('\n', stderr);
    va_end(args);
}

}  // namespace hybla
