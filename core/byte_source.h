// Random-access byte sources for parsers: a file read with pread (never mapped) or a copy of
// bytes in memory (tests, fuzzing). Reads past the end throw FormatError naming the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace moepack {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Name used in error messages (the file path).
  virtual const std::string& name() const = 0;
  // Size in bytes.
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at `offset` into dst. Throws FormatError (field, "truncated: needs n
  // bytes ...", with truncated_hint(n)) when [offset, offset + n) is not inside the source, IoError on an OS error.
  virtual void read(uint64_t offset, void* dst, size_t n, const char* field) const = 0;
};

// Appended to a message where a declared size does not fit in a file: the usual cause is a file
// cut short. Empty for `bytes` of 1 TiB or more, a size no real model file has (a damaged field,
// not a file cut short).
std::string truncated_hint(uint64_t bytes);

// Opens `path` read-only (O_CLOEXEC). Throws IoError if it cannot be opened or is not a
// regular file.
std::shared_ptr<ByteSource> open_file_source(const std::string& path);

// A descriptor of `path` opened read-only (O_CLOEXEC) if it is a regular file. The open itself does not
// wait (O_NONBLOCK, cleared after the check): a FIFO named as a model or a trace would otherwise block for
// ever waiting for a writer. Throws IoError if it cannot be opened, Error "PATH: not a regular file (a
// FIFO | a directory | a device | a socket)" otherwise. The caller closes it. `size`, if given, receives
// the file's size in bytes.
int open_regular_file(const std::string& path, uint64_t* size = nullptr);

// Whether `path` names a regular file (following links), without opening it.
bool is_regular_file(const std::string& path);

// What a file of stat(2) mode `mode` is, for messages: "a regular file", "a FIFO", "a directory", "a device",
// "a socket" or "not a file".
const char* file_kind(unsigned mode);

// Owns a copy of `bytes`; `name` appears in error messages.
std::shared_ptr<ByteSource> make_memory_source(std::string name, std::vector<uint8_t> bytes);

}  // namespace moepack
