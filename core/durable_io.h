// File-system primitives: O_DIRECT probing, free-space queries and durable (fsync-ordered,
// atomic) writes, used by the pack builder and the telemetry stats file. Aligned buffers are
// core/aligned_buffer.h. Every failure throws IoError/Error naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/aligned_buffer.h"

namespace moepack {

// Bytes available to unprivileged users on the file system holding `dir` (statvfs f_bavail);
// nullopt when the file system reports no size at all (ramfs, some FUSE: f_blocks == 0).
std::optional<uint64_t> free_bytes(const std::string& dir);
// Bytes allocated to `path` on disk (st_blocks * 512); 0 if it does not exist.
uint64_t allocated_bytes(const std::string& path);
// Name of the file system type of `dir` ("ext4", "tmpfs", "ramfs", "0x..." otherwise).
std::string fs_type_name(const std::string& dir);

// Creates a probe file in `dir`, writes 4096 aligned bytes through O_DIRECT, removes it.
// Returns 0 on success or the errno of the failing step (EINVAL: no O_DIRECT support).
int probe_direct_io(const std::string& dir);
// The file probe_direct_io() creates (and removes) in `dir`.
inline constexpr const char* kDirectIoProbeName = ".moepack-direct-io-probe";

// Creates `dir` and its parents (mode 0755). Throws IoError.
void make_dirs(const std::string& dir);
void fsync_dir(const std::string& dir);
void fsync_fd(int fd, const std::string& path);
// Writes all n bytes at `offset`, retrying short writes and EINTR. Throws IoError.
void pwrite_all(int fd, const void* buf, size_t n, uint64_t offset, const std::string& path);
void pread_all(int fd, void* buf, size_t n, uint64_t offset, const std::string& path);
// The temporary file write_file_atomic() writes beside dir/name: name + ".tmp".
inline std::string atomic_temp_name(const std::string& name) { return name + ".tmp"; }
// Writes `content` to dir/name durably and atomically: dir/name.tmp, fsync, rename, fsync(dir).
// `before_rename` (may be empty) runs after the temp file is durable (fault injection).
void write_file_atomic(const std::string& dir, const std::string& name, const std::string& content,
                       void (*before_rename)(void*) = nullptr, void* ctx = nullptr);
// Removes dir/name if present and fsyncs the directory.
void remove_durably(const std::string& dir, const std::string& name);
bool file_exists(const std::string& path);

}  // namespace moepack
