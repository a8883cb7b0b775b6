// SHA-256 (FIPS 180-4) over OpenSSL's EVP interface, for pack and source integrity checks.
// A small value type so that callers outside core/ need not link OpenSSL themselves.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace moepack {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t n);
  // Returns the digest and resets the object for a new message.
  Sha256Digest finish();

  static Sha256Digest of(const void* data, size_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// 64 lowercase hex digits.
std::string to_hex(const Sha256Digest& d);
// Parses 64 hex digits; false on anything else.
bool from_hex(std::string_view hex, Sha256Digest& out);
// Hashes `length` bytes of the file at `path` starting at `offset` (pread, 8 MiB chunks).
// Throws IoError / Error (short file).
Sha256Digest sha256_file_range(const std::string& path, uint64_t offset, uint64_t length);
Sha256Digest sha256_file(const std::string& path);

}  // namespace moepack
