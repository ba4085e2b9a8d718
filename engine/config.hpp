// Basic types and the host/device qualifier shared by every layer.
#pragma once
#include <cstdint>
#include <cstddef>

#if defined(__CUDACC__)
#define HYBLA_HD __host__ __device__
#else
#define HYBLA_HD
#endif

namespace hybla {

// Row and column numbers in the public API.
using Index = std::uint64_t;
// Column indices as stored in CSR: 32 bits keep the index stream small; dimensions are limited to 2^32.
using ColIndex = std::uint32_t;
// Row offsets as stored in CSR: 64 bits so that nnz > 2^31 works.
using Offset = std::uint64_t;

inline constexpr Index max_dimension = Index(1) << 32;

}  // namespace hybla
