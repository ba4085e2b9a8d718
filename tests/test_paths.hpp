// Where the tests find data/: the source tree they were built from, unless HYBLA_SOURCE_DIR (and
// HYBLA_SHARED_DATA_DIR) in the environment say otherwise (a build copied to the GPU machine).
#pragma once
#include <cstdlib>

inline const char* hybla_test_source_dir() {
    const char* e = std::getenv("HYBLA_SOURCE_DIR");
    return e && *e ? e : HYBLA_BUILT_SOURCE_DIR;
}
inline const char* hybla_test_shared_data_dir() {
    const char* e = std::getenv("HYBLA_SHARED_DATA_DIR");
    return e && *e ? e : HYBLA_BUILT_SOURCE_DIR "/../shared/data";
}

#define HYBLA_SOURCE_DIR hybla_test_source_dir()
#define HYBLA_SHARED_DATA_DIR hybla_test_shared_data_dir()
