#include "core/error.h"

#include <cstring>

namespace moepack {

FormatError::FormatError(std::string file, std::string field, uint64_t offset,
                         const std::string& what)
    : Error(file + ": " + field + " at byte " + std::to_string(offset) + ": " + what),
      file_(std::move(file)),
      field_(std::move(field)),
      offset_(offset) {}

IoError::IoError(const std::string& file, const std::string& operation, int errno_value)
    : Error(file + ": " + operation + " failed: " + std::strerror(errno_value)),
      errno_(errno_value) {}

}  // namespace moepack
