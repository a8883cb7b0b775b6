#include "core/direct_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/aligned_buffer.h"
#include "core/checked.h"
#include "core/error.h"

namespace moepack {

struct DirectReader::Ring {
  io_uring ring{};
};

namespace {
constexpr uint64_t kMaxPartBytes = 1ull << 30;  // one io_uring read stays well below INT_MAX
}

DirectReader::DirectReader(const std::string& path, const ReaderSettings& settings)
    : path_(path), settings_(settings), ring_(std::make_unique<Ring>()) {
  if (settings_.read_splits < 1 || settings_.read_splits > 64) {
    throw Error(path_ + ": read_splits must be 1..64, got " + std::to_string(settings_.read_splits));
  }
  if (settings_.queue_depth < 1 || settings_.queue_depth > 4096) {
    throw Error(path_ + ": queue_depth must be 1..4096, got " + std::to_string(settings_.queue_depth));
  }
  const int flags = O_RDONLY | O_CLOEXEC | (settings_.direct_io ? O_DIRECT : 0);
  fd_ = ::open(path_.c_str(), flags);
  if (fd_ < 0) {
    if (errno == EINVAL && settings_.direct_io) {
      throw Error(path_ + ": the file system refuses O_DIRECT (open returned EINVAL); expert reads "
                          "must be direct I/O unless the setting direct_io=false allows buffered reads");
    }
    throw IoError(path_, "open", errno);
  }
  struct statx stx {};
  unsigned mask = STATX_SIZE;
#ifdef STATX_DIOALIGN
  mask |= STATX_DIOALIGN;
#endif
  if (::statx(fd_, "", AT_EMPTY_PATH, mask, &stx) != 0) {
    const int e = errno;
    ::close(fd_);
    throw IoError(path_, "statx", e);
  }
  file_size_ = stx.stx_size;
  if (!settings_.direct_io) {
    alignment_ = 1;
  } else {
    alignment_ = 4096;
#ifdef STATX_DIOALIGN
    if ((stx.stx_mask & STATX_DIOALIGN) != 0) {
      if (stx.stx_dio_offset_align == 0) {
        ::close(fd_);
        throw Error(path_ + ": the file system does not support O_DIRECT on this file (statx "
                            "STATX_DIOALIGN reports no alignment); set direct_io=false to read it buffered");
      }
      alignment_ = std::max<uint64_t>({alignment_, stx.stx_dio_offset_align, stx.stx_dio_mem_align});
    }
#endif
    // Probe: one aligned direct read proves the file system really serves O_DIRECT.
    if (file_size_ >= alignment_) {
      AlignedBuffer probe(alignment_, alignment_);
      const ssize_t r = ::pread(fd_, probe.data(), alignment_, 0);
      if (r < 0) {
        const int e = errno;
        ::close(fd_);
        if (e == EINVAL) {
          throw Error(path_ + ": the file system refuses O_DIRECT reads (EINVAL on an aligned probe read); "
                              "set direct_io=false to read it buffered");
        }
        throw IoError(path_, "O_DIRECT probe read", e);
      }
    }
  }
  const int rc = io_uring_queue_init(settings_.queue_depth, &ring_->ring, 0);
  if (rc < 0) {
    ::close(fd_);
    throw Error(path_ + ": io_uring_queue_init(" + std::to_string(settings_.queue_depth) +
                ") failed: " + std::strerror(-rc));
  }
}

DirectReader::~DirectReader() {
  // Reads still in flight write into caller buffers: wait for them before tearing down.
  drain();
  io_uring_queue_exit(&ring_->ring);
  if (fd_ >= 0) ::close(fd_);
}

void DirectReader::drain() noexcept {
  queued_.clear();
  parts_left_.clear();
  done_.clear();
  // Entries a failed io_uring_submit left in the submission queue are counted in flight: submit
  // them now, or no completion would ever come for them. A ring that will not take them is
  // given up on (broken_: every later request throws), never waited on forever.
  if (in_flight_ > 0 && io_uring_sq_ready(&ring_->ring) > 0) {
    int rc = 0;
    for (int tries = 0; tries < 1000; ++tries) {
      rc = io_uring_submit(&ring_->ring);
      if (rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) break;
    }
    if (rc < 0 || io_uring_sq_ready(&ring_->ring) > 0) {
      broken_ = true;
      return;
    }
  }
  while (in_flight_ > 0) {
    io_uring_cqe* cqe = nullptr;
    const int rc = io_uring_wait_cqe(&ring_->ring, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) {
      broken_ = true;
      return;
    }
    slots_.erase(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe))));
    io_uring_cqe_seen(&ring_->ring, cqe);
    --in_flight_;
  }
}

void DirectReader::register_buffers(std::span<const std::pair<void*, size_t>> buffers) {
  if (!fixed_.empty()) throw Error(path_ + ": buffers are already registered");
  if (pending() != 0) throw Error(path_ + ": cannot register buffers while reads are in flight");
  std::vector<iovec> iov;
  for (const auto& [p, n] : buffers) {
    iov.push_back({p, n});
    fixed_.emplace_back(static_cast<uint8_t*>(p), n);
  }
  const int rc = io_uring_register_buffers(&ring_->ring, iov.data(), static_cast<unsigned>(iov.size()));
  if (rc < 0) {
    fixed_.clear();
    throw Error(path_ + ": io_uring_register_buffers failed: " + std::strerror(-rc));
  }
}

void DirectReader::submit(const ReadRequest& r) {
  if (broken_)
    throw Error(path_ + ": the io_uring ring failed while reads were in flight; load the model again");
  if (r.length == 0 || r.dst == nullptr) throw Error(path_ + ": empty read request");
  if (!range_inside(r.offset, r.length, file_size_)) {
    throw FormatError(path_, "expert block", r.offset,
                      "read of " + std::to_string(r.length) + " bytes runs past the end of the file (" +
                          std::to_string(file_size_) + " bytes): the pack is truncated");
  }
  if (settings_.direct_io) {
    const auto addr = reinterpret_cast<uintptr_t>(r.dst);
    const char* what = r.offset % alignment_ != 0   ? "file offset"
                       : r.length % alignment_ != 0 ? "read length"
                       : addr % alignment_ != 0     ? "buffer address"
                                                    : nullptr;
    if (what != nullptr) {
      throw Error(path_ + ": O_DIRECT rule violated: the " + what + " of a read at offset " +
                  std::to_string(r.offset) + " (length " + std::to_string(r.length) +
                  ") is not a multiple of " + std::to_string(alignment_) + " bytes");
    }
  }
  if (parts_left_.count(r.tag) != 0) throw Error(path_ + ": read tag " + std::to_string(r.tag) + " is already in flight");
  uint64_t splits = std::max<uint64_t>(settings_.read_splits, (r.length + kMaxPartBytes - 1) / kMaxPartBytes);
  uint64_t part = (r.length + splits - 1) / splits;
  part = (part + alignment_ - 1) / alignment_ * alignment_;
  uint32_t n = 0;
  for (uint64_t done = 0; done < r.length; done += part) {
    const uint64_t len = std::min(part, r.length - done);
    queued_.push_back(Part{r.tag, r.offset + done, len, static_cast<uint8_t*>(r.dst) + done});
    ++n;
  }
  parts_left_[r.tag] = n;
  pump();
}

void DirectReader::pump() {
  bool any = false;
  while (!queued_.empty() && in_flight_ < settings_.queue_depth) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
    if (sqe == nullptr) break;
    Part p = queued_.front();
    queued_.pop_front();
    int fixed_index = -1;
    for (size_t k = 0; k < fixed_.size(); ++k) {
      if (p.dst >= fixed_[k].first && p.dst + p.length <= fixed_[k].first + fixed_[k].second) {
        fixed_index = static_cast<int>(k);
        break;
      }
    }
    if (fixed_index >= 0) {
      io_uring_prep_read_fixed(sqe, fd_, p.dst, static_cast<unsigned>(p.length), p.offset, fixed_index);
    } else {
      io_uring_prep_read(sqe, fd_, p.dst, static_cast<unsigned>(p.length), p.offset);
    }
    const uint64_t id = next_id_++;
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<uintptr_t>(id)));
    slots_.emplace(id, std::make_unique<Part>(p));
    ++in_flight_;
    counters_.parts_submitted.fetch_add(1, std::memory_order_relaxed);
    any = true;
  }
  if (any) {
    int rc;
    do {
      rc = io_uring_submit(&ring_->ring);
    } while (rc == -EINTR || rc == -EAGAIN);
    if (rc < 0) throw Error(path_ + ": io_uring_submit failed: " + std::strerror(-rc));
  }
}

void DirectReader::abandon_all() {
  counters_.io_errors.fetch_add(1, std::memory_order_relaxed);
  queued_.clear();
  parts_left_.clear();
  done_.clear();
}

void DirectReader::fail_request(const Part& p, int err) {
  abandon_all();
  throw IoError(path_, "read of " + std::to_string(p.length) + " bytes at offset " + std::to_string(p.offset), err);
}

void DirectReader::complete(Part p, int result) {
  if (fault_) result = fault_(p.offset, p.length, result);
  // A part of a request dropped by abandon_all(): it has landed, nothing more to do with it (no
  // retry, no second error). Callers must let such parts land (pending() == 0) before they
  // submit a new request with the same tag: this check cannot tell the two apart.
  if (!parts_left_.count(p.tag)) return;
  if (result == -EINTR || result == -EAGAIN) {
    counters_.retries.fetch_add(1, std::memory_order_relaxed);
    queued_.push_front(p);
    return;
  }
  if (result < 0) fail_request(p, -result);
  if (result == 0) {
    abandon_all();
    throw FormatError(path_, "expert block", p.offset,
                      "the file ended while reading " + std::to_string(p.length) + " bytes: it is truncated");
  }
  const auto got = static_cast<uint64_t>(result);
  counters_.pack_read_bytes.fetch_add(std::min(got, p.length), std::memory_order_relaxed);
  if (got < p.length) {
    counters_.short_reads.fetch_add(1, std::memory_order_relaxed);
    p.offset += got;
    p.dst += got;
    p.length -= got;
    queued_.push_front(p);
    return;
  }
  auto it = parts_left_.find(p.tag);
  if (--it->second == 0) {
    parts_left_.erase(it);
    done_.push_back(p.tag);
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    if (!settings_.direct_io) counters_.fallback_count.fetch_add(1, std::memory_order_relaxed);
  }
}

void DirectReader::reap(io_uring_cqe* cqe) {
  while (cqe != nullptr) {
    const auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe)));
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_->ring, cqe);
    --in_flight_;
    auto node = slots_.extract(id);
    if (!node.empty()) complete(*node.mapped(), res);
    cqe = nullptr;
    if (io_uring_peek_cqe(&ring_->ring, &cqe) != 0) cqe = nullptr;
  }
}

std::vector<uint64_t> DirectReader::wait_some() {
  while (done_.empty()) {
    if (in_flight_ == 0) {
      if (queued_.empty()) return {};
      pump();
      continue;
    }
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_wait_cqe(&ring_->ring, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) throw Error(path_ + ": io_uring_wait_cqe failed: " + std::strerror(-rc));
    reap(cqe);
    pump();
  }
  return std::exchange(done_, {});
}

std::vector<uint64_t> DirectReader::poll() {
  if (in_flight_ > 0) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_peek_cqe(&ring_->ring, &cqe) != 0) cqe = nullptr;
    reap(cqe);
  }
  pump();
  return std::exchange(done_, {});
}

void DirectReader::read_all(std::span<const ReadRequest> requests) {
  for (const ReadRequest& r : requests) submit(r);
  while (pending() != 0 || !done_.empty()) {
    if (wait_some().empty() && pending() == 0) break;
  }
}

}  // namespace moepack
