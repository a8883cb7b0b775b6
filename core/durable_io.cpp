#include "core/durable_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace moepack {


std::optional<uint64_t> free_bytes(const std::string& dir) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) throw IoError(dir, "statvfs", errno);
  if (v.f_blocks == 0) return std::nullopt;
  return static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
}

uint64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

std::string fs_type_name(const std::string& dir) {
  struct statfs s {};
  if (::statfs(dir.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x858458f6:
      return "ramfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683e:
      return "btrfs";
    case 0x2fc12fc1:
      return "zfs";
    case 0x65735546:
      return "fuse";
    case 0x6969:
      return "nfs";
    case 0x794c7630:
      return "overlayfs";
    default: {
      char b[32];
      std::snprintf(b, sizeof b, "0x%lx", static_cast<unsigned long>(s.f_type));
      return b;
    }
  }
}

int probe_direct_io(const std::string& dir) {
  const std::string p = dir + "/" + kDirectIoProbeName;
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    ::unlink(p.c_str());
    return e;
  }
  int err = 0;
  AlignedBuffer b(4096);
  std::memset(b.data(), 0, 4096);
  const ssize_t w = ::pwrite(fd, b.data(), 4096, 0);
  if (w != 4096) err = w < 0 ? errno : EIO;
  ::close(fd);
  ::unlink(p.c_str());
  return err;
}

void make_dirs(const std::string& dir) {
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    cur = dir.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) throw IoError(cur, "mkdir", errno);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(dir + ": not a directory");
}

void fsync_fd(int fd, const std::string& path) {
  if (::fsync(fd) != 0) throw IoError(path, "fsync", errno);
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw IoError(dir, "open", errno);
  const int r = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (r != 0 && e != EINVAL) throw IoError(dir, "fsync", e);
}

void pwrite_all(int fd, const void* buf, size_t n, uint64_t offset, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::pwrite(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw IoError(path, "pwrite at byte " + std::to_string(offset + done), errno);
    }
    if (w == 0) throw IoError(path, "pwrite at byte " + std::to_string(offset + done), EIO);
    done += static_cast<size_t>(w);
  }
}

void pread_all(int fd, void* buf, size_t n, uint64_t offset, const std::string& path) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw IoError(path, "pread at byte " + std::to_string(offset + done), errno);
    }
    if (r == 0)
      throw Error(path + ": ends at byte " + std::to_string(offset + done) + ", expected more data");
    done += static_cast<size_t>(r);
  }
}

void write_file_atomic(const std::string& dir, const std::string& name, const std::string& content,
                       void (*before_rename)(void*), void* ctx) {
  const std::string tmp = dir + "/" + atomic_temp_name(name);
  const std::string dst = dir + "/" + name;
  struct stat st {};
  if (::stat(dst.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw Error(dst + ": is a directory; give a file name");  // before any temporary file is made
  }
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(dst, "create its temporary file " + tmp, errno);
  try {
    pwrite_all(fd, content.data(), content.size(), 0, tmp);
    fsync_fd(fd, tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (before_rename) before_rename(ctx);
  if (::rename(tmp.c_str(), dst.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());  // no stray temporary file left beside it
    throw IoError(dst, "rename", err);
  }
  fsync_dir(dir);
}

void remove_durably(const std::string& dir, const std::string& name) {
  const std::string p = dir + "/" + name;
  if (::unlink(p.c_str()) != 0) {
    if (errno == ENOENT) return;
    throw IoError(p, "unlink", errno);
  }
  fsync_dir(dir);
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace moepack
