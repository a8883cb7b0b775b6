// Errors thrown by MoePack's loaders and parsers.
//
// Every rejection of an input file names the file, the field that was wrong and the absolute
// byte offset where it was read, so a user can find the problem with a hex editor and a
// developer can reproduce it. Messages read: "<file>: <field> at byte <offset>: <what>".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moepack {

// Base class of every error MoePack throws on purpose.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// The compute device can no longer be used by this process: a CUDA "sticky" error (an illegal
// memory access or a failed launch inside a kernel, an assert, an uncorrectable ECC error)
// poisons the CUDA context until the process exits (CUDA Runtime API, "Error Handling").
// Nothing in the process can recover it; the studio offers to restart the application, which
// reopens the conversation from its database.
class DeviceLostError : public Error {
 public:
  explicit DeviceLostError(const std::string& message) : Error(message) {}
};

// An input file (GGUF, manifest, pack) is malformed or violates a limit.
// `s` with every control byte (below 0x20, and 0x7f) written as \xNN: names read from a file
// (a damaged tensor name may hold a NUL) stay whole and visible in a message.
std::string printable(std::string_view s);

class FormatError : public Error {
 public:
  // offset: absolute byte offset in `file` where `field` starts (or where the check failed).
  // `field` and `what` are made printable() (the message never ends early at a NUL).
  FormatError(std::string file, std::string field, uint64_t offset, const std::string& what);
  // A field of a document parsed as a whole (a JSON manifest, a prompt set), named by its path
  // ("/layout/layers/0/stride", "requests[2].prompt"): the message gives no byte offset, which
  // would mean nothing there; offset() is 0.
  struct InDocument {};
  FormatError(std::string file, std::string field, InDocument, const std::string& what);

  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  uint64_t offset() const { return offset_; }

 private:
  std::string file_;
  std::string field_;
  uint64_t offset_;
};

// An operating-system call failed (open, read, statx...). Carries errno.
class IoError : public Error {
 public:
  IoError(const std::string& file, const std::string& operation, int errno_value);
  int errno_value() const { return errno_; }

 private:
  int errno_;
};

}  // namespace moepack
