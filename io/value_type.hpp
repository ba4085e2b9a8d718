// The value types the I/O layer reads and writes, as a run-time tag: the parsers and writers live in .cpp files
// (one copy of the heavy code), and the tag tells them which range checks and formatting the caller's T needs.
#pragma once
#include <cstdint>
#include <type_traits>

namespace hybla::io {

// The numbers are stored in binary files: never renumber.
enum class ValueType : std::uint32_t {
    boolean = 1,
    int8 = 2,
    int16 = 3,
    int32 = 4,
    int64 = 5,
    uint8 = 6,
    uint16 = 7,
    uint32 = 8,
    uint64 = 9,
    float32 = 10,
    float64 = 11,
};

template <class T>
constexpr ValueType value_type_of() {
    if constexpr (std::is_same_v<T, bool>) return ValueType::boolean;
    else if constexpr (std::is_same_v<T, std::int8_t>) return ValueType::int8;
    else if constexpr (std::is_same_v<T, std::int16_t>) return ValueType::int16;
    else if constexpr (std::is_same_v<T, std::int32_t>) return ValueType::int32;
    else if constexpr (std::is_same_v<T, std::int64_t>) return ValueType::int64;
    else if constexpr (std::is_same_v<T, std::uint8_t>) return ValueType::uint8;
    else if constexpr (std::is_same_v<T, std::uint16_t>) return ValueType::uint16;
    else if constexpr (std::is_same_v<T, std::uint32_t>) return ValueType::uint32;
    else if constexpr (std::is_same_v<T, std::uint64_t>) return ValueType::uint64;
    else if constexpr (std::is_same_v<T, float>) return ValueType::float32;
    else if constexpr (std::is_same_v<T, double>) return ValueType::float64;
    else static_assert(sizeof(T) == 0, "hybla::io reads and writes bool, the fixed-width integers, float and double");
}

// The C++ name ("int32_t", "double", ...), as used in error messages.
const char* value_type_name(ValueType t);

inline bool is_floating(ValueType t) { return t == ValueType::float32 || t == ValueType::float64; }

}  // namespace hybla::io
