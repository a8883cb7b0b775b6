#include "core/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "core/byte_source.h"
#include "core/error.h"

namespace moepack {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (impl_->ctx == nullptr || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1) {
    throw Error("OpenSSL: cannot initialise SHA-256");
  }
}

Sha256::~Sha256() {
  if (impl_ && impl_->ctx) EVP_MD_CTX_free(impl_->ctx);
}

Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&& o) noexcept {
  if (this != &o) {
    if (impl_ && impl_->ctx) EVP_MD_CTX_free(impl_->ctx);
    impl_ = std::move(o.impl_);
  }
  return *this;
}

void Sha256::update(const void* data, size_t n) {
  if (n != 0 && EVP_DigestUpdate(impl_->ctx, data, n) != 1) throw Error("OpenSSL: SHA-256 update failed");
}

Sha256Digest Sha256::finish() {
  Sha256Digest d{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, d.data(), &len) != 1 || len != d.size() ||
      EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1) {
    throw Error("OpenSSL: SHA-256 final failed");
  }
  return d;
}

Sha256Digest Sha256::of(const void* data, size_t n) {
  Sha256 h;
  h.update(data, n);
  return h.finish();
}

std::string to_hex(const Sha256Digest& d) {
  static const char* k = "0123456789abcdef";
  std::string s(64, '0');
  for (size_t i = 0; i < 32; ++i) {
    s[2 * i] = k[d[i] >> 4];
    s[2 * i + 1] = k[d[i] & 15];
  }
  return s;
}

bool from_hex(std::string_view hex, Sha256Digest& out) {
  if (hex.size() != 64) return false;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < 32; ++i) {
    const int hi = nib(hex[2 * i]);
    const int lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}

Sha256Digest sha256_file_range(const std::string& path, uint64_t offset, uint64_t length) {
  const int fd = open_regular_file(path);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<uint8_t> buf(8u << 20);
  Sha256 h;
  uint64_t done = 0;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), length - done));
    const ssize_t r = ::pread(fd, buf.data(), want, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      throw IoError(path, "pread", e);
    }
    if (r == 0) {
      ::close(fd);
      throw Error(path + ": file ends at byte " + std::to_string(offset + done) + ", expected " +
                  std::to_string(offset + length));
    }
    h.update(buf.data(), static_cast<size_t>(r));
    done += static_cast<uint64_t>(r);
  }
  ::close(fd);
  return h.finish();
}

Sha256Digest sha256_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError(path, "stat", errno);
  return sha256_file_range(path, 0, static_cast<uint64_t>(st.st_size));
}

}  // namespace moepack
