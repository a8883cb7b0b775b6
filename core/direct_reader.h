// DirectReader: the path every expert cache miss takes. Reads byte ranges of one file
// (normally an Expert Pack's experts.bin) with io_uring, O_DIRECT by default.
//
// Alignment contract (ARCHITECTURE.md, "Contracts that fail closed"): with direct_io, every
// request's file offset, length and destination address must be multiples of
// `alignment()` = max(4096, the file system's STATX_DIOALIGN offset and memory alignment).
// It is checked when the file is opened (the file system must support O_DIRECT) and on every
// request; a violation throws moepack::Error naming the file and the rule. No silent
// fallback: buffered reads happen only with `direct_io = false`, and each is counted in
// `fallback_count`.
//
// Each request is split into `read_splits` parts submitted in parallel (part boundaries stay
// aligned); at most `queue_depth` parts are in flight. Short reads are resubmitted for the rest;
// EINTR/EAGAIN are retried; a read that returns 0 before the end (a truncated file) throws
// FormatError; any other error is counted in `io_errors` and thrown as IoError. Nothing is
// swallowed. Counters are atomics: any thread may read them while reads run.
//
// Not thread-safe: one thread submits and waits (the engine's I/O thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

struct io_uring_cqe;  // liburing.h

namespace moepack {

struct ReaderSettings {
  bool direct_io = true;      // O_DIRECT; false = buffered reads (counted as fallbacks)
  uint32_t read_splits = 1;   // parts per request, read in parallel
  uint32_t queue_depth = 16;  // io_uring submission queue entries (parts in flight)
};

struct ReaderCounters {
  std::atomic<uint64_t> requests{0};         // requests completed
  std::atomic<uint64_t> pack_read_bytes{0};  // bytes delivered
  std::atomic<uint64_t> parts_submitted{0};  // io_uring reads submitted, resubmissions included
  std::atomic<uint64_t> short_reads{0};      // completions with fewer bytes than asked (resubmitted)
  std::atomic<uint64_t> retries{0};          // EINTR / EAGAIN resubmissions
  std::atomic<uint64_t> fallback_count{0};   // reads done without O_DIRECT (direct_io = false)
  std::atomic<uint64_t> io_errors{0};        // failed reads (thrown as IoError)
};

struct ReadRequest {
  uint64_t offset = 0;   // file offset, bytes
  uint64_t length = 0;   // bytes
  void* dst = nullptr;   // destination, `length` bytes
  uint64_t tag = 0;      // returned by wait_some() when the whole request has arrived
};

class DirectReader {
 public:
  // Opens `path` read-only. Throws IoError (cannot open), Error (the file system refuses
  // O_DIRECT, or io_uring cannot be set up) naming the file and the rule.
  DirectReader(const std::string& path, const ReaderSettings& settings);
  ~DirectReader();
  DirectReader(const DirectReader&) = delete;
  DirectReader& operator=(const DirectReader&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }
  // Required alignment of offsets, lengths and addresses, bytes (1 when direct_io is off).
  uint64_t alignment() const { return alignment_; }
  bool direct_io() const { return settings_.direct_io; }

  // Registers `buffers` as io_uring fixed buffers; later reads into them use READ_FIXED.
  // Call at most once, with no reads in flight. Throws Error on failure.
  void register_buffers(std::span<const std::pair<void*, size_t>> buffers);

  // Queues a request (checks alignment and bounds first; throws Error on a violation).
  void submit(const ReadRequest& request);
  // Waits until at least one queued request has fully arrived and returns the tags of all
  // that have. Returns empty only when nothing is queued. Throws on an I/O error.
  std::vector<uint64_t> wait_some();
  // Handles the completions that have already arrived, without waiting, and submits queued
  // parts there is room for now; returns the tags of the requests that are complete (possibly
  // none). Throws on an I/O error as wait_some() does.
  std::vector<uint64_t> poll();
  // Submits all and waits for all.
  void read_all(std::span<const ReadRequest> requests);
  // Parts submitted or queued and not yet complete.
  size_t pending() const { return in_flight_ + queued_.size(); }
  // After a failure (anything read_all, submit, wait_some or poll threw): drops every queued part and
  // request and waits for the parts in flight to land, their results ignored, so the caller may
  // reuse their buffers and tags. pending() is 0 afterwards unless the ring itself failed; then
  // every later submit() throws Error (reads may still land: the buffers must outlive the reader).
  void drain() noexcept;

  const ReaderCounters& counters() const { return counters_; }

  // Test hook: called with (offset, length, result) for every completion before it is
  // handled; returns the result to use (e.g. -EIO, or a smaller byte count for a short read).
  using FaultInjector = std::function<int(uint64_t offset, uint64_t length, int result)>;
  void set_fault_injector(FaultInjector injector) { fault_ = std::move(injector); }

 private:
  struct Part {
    uint64_t tag;
    uint64_t offset;
    uint64_t length;
    uint8_t* dst;
  };
  // Moves queued parts into free SQEs and submits.
  void pump();
  // Handles `cqe` and every completion already queued after it.
  void reap(io_uring_cqe* cqe);
  void complete(Part part, int result);
  // Counts one I/O error and drops every queued part and request (the reader has failed;
  // parts still in flight are ignored when they complete: wait_some() and poll() return
  // nothing for them, and the destructor drains them; reuse a tag of theirs only once pending() is 0).
  void abandon_all();
  [[noreturn]] void fail_request(const Part& p, int err);

  std::string path_;
  ReaderSettings settings_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint64_t alignment_ = 4096;
  struct Ring;
  std::unique_ptr<Ring> ring_;
  std::vector<std::pair<uint8_t*, size_t>> fixed_;  // registered buffers
  std::deque<Part> queued_;
  std::unordered_map<uint64_t, std::unique_ptr<Part>> slots_;  // user_data -> part in flight
  std::unordered_map<uint64_t, uint32_t> parts_left_;  // tag -> parts not yet complete
  std::vector<uint64_t> done_;
  size_t in_flight_ = 0;
  bool broken_ = false;  // drain() could not account for reads in flight (see drain())
  uint64_t next_id_ = 1;
  ReaderCounters counters_;
  FaultInjector fault_;
};

}  // namespace moepack
