// The exceptions of the library. The library never prints and never exits; apps turn these into messages.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

namespace hybla {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Operands whose shapes do not fit together; the message names the operation and both shapes.
class DimensionMismatch : public Error {
public:
    using Error::Error;
};

// An index outside the object's dimensions.
class InvalidIndex : public Error {
public:
    using Error::Error;
};

// A value or argument that is out of its domain (bad dimension, unsorted arrays on import, ...).
class InvalidValue : public Error {
public:
    using Error::Error;
};

// The value of an entry that is not there (GraphBLAS's GrB_NO_VALUE): get(i).value() on a missing entry, or
// value() of an empty Scalar.
class NoValue : public Error {
public:
    using Error::Error;
};

class OutOfMemory : public Error {
public:
    OutOfMemory(const std::string& what, std::size_t bytes)
        : Error("out of memory: " + what + " asked for " + std::to_string(bytes) + " bytes"), bytes_(bytes) {}
    std::size_t bytes() const { return bytes_; }

private:
    std::size_t bytes_;
};

// A file that cannot be read or written, or whose contents are malformed: names file, line (0 if none) and reason.
class IoError : public Error {
public:
    IoError(const std::string& file, std::size_t line, const std::string& reason)
        : Error(message(file, line, reason)), file_(file), line_(line), reason_(reason) {}
    const std::string& file() const { return file_; }
    std::size_t line() const { return line_; }
    const std::string& reason() const { return reason_; }

private:
    static std::string message(const std::string& file, std::size_t line, const std::string& reason) {
        std::string m = file;
        if (line) m.append(":").append(std::to_string(line));
        return m.append(": ").append(reason);
    }
    std::string file_;
    std::size_t line_;
    std::string reason_;
};

}  // namespace hybla
