#include "core/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/checked.h"
#include "core/error.h"

namespace moepack {

std::string truncated_hint(uint64_t bytes) {
  return bytes < (uint64_t{1} << 40) ? std::string(" (the file looks truncated: an interrupted download or copy?)")
                                     : std::string();
}

namespace {

[[noreturn]] void throw_truncated(const std::string& name, const char* field, uint64_t offset,
                                  size_t n, uint64_t size) {
  throw FormatError(name, field, offset,
                    "truncated: needs " + std::to_string(n) + " bytes but the file has " +
                        std::to_string(offset <= size ? size - offset : 0) + " left" + truncated_hint(n));
}

class FileSource final : public ByteSource {
 public:
  FileSource(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  const std::string& name() const override { return path_; }
  uint64_t size() const override { return size_; }

  void read(uint64_t offset, void* dst, size_t n, const char* field) const override {
    if (!range_inside(offset, n, size_)) throw_truncated(path_, field, offset, n, size_);
    auto* out = static_cast<uint8_t*>(dst);
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        throw IoError(path_, "pread", errno);
      }
      if (r == 0) throw_truncated(path_, field, offset + done, n - done, offset + done);
      done += static_cast<size_t>(r);
    }
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string name, std::vector<uint8_t> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, void* dst, size_t n, const char* field) const override {
    if (!range_inside(offset, n, bytes_.size())) throw_truncated(name_, field, offset, n, bytes_.size());
    if (n != 0) std::memcpy(dst, bytes_.data() + offset, n);
  }

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
};

}  // namespace

int open_regular_file(const std::string& path, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError(path, "open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw IoError(path, "fstat", e);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file (" + file_kind(st.st_mode) + ")");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int e = errno;
    ::close(fd);
    throw IoError(path, "fcntl", e);
  }
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

const char* file_kind(unsigned mode) {
  return S_ISREG(mode)                    ? "a regular file"
         : S_ISFIFO(mode)                 ? "a FIFO"
         : S_ISDIR(mode)                  ? "a directory"
         : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
         : S_ISSOCK(mode)                 ? "a socket"
                                          : "not a file";
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::shared_ptr<ByteSource> open_file_source(const std::string& path) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  return std::make_shared<FileSource>(path, fd, size);
}

std::shared_ptr<ByteSource> make_memory_source(std::string name, std::vector<uint8_t> bytes) {
  return std::make_shared<MemorySource>(std::move(name), std::move(bytes));
}

}  // namespace moepack
