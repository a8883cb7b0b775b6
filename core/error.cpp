#include "core/error.h"

#include <cstring>

namespace moepack {

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

FormatError::FormatError(std::string file, std::string field, uint64_t offset, const std::string& what)
    : Error(file + ": " + printable(field) + " at byte " + std::to_string(offset) + ": " + printable(what)),
      file_(std::move(file)),
      field_(printable(field)),
      offset_(offset) {}

FormatError::FormatError(std::string file, std::string field, InDocument, const std::string& what)
    : Error(file + ": " + printable(field) + ": " + printable(what)),
      file_(std::move(file)),
      field_(printable(field)),
      offset_(0) {}

IoError::IoError(const std::string& file, const std::string& operation, int errno_value)
    : Error(file + ": " + operation + " failed: " + std::strerror(errno_value)),
      errno_(errno_value) {}

}  // namespace moepack
