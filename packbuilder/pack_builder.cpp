#include "packbuilder/pack_builder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/pack_manifest.h"
#include "core/pack_verify.h"
#include "core/sha256.h"
#include "packbuilder/dense_gguf.h"
#include "core/durable_io.h"
#include "packbuilder/pack_plan.h"

namespace moepack {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kStateName = "build-state.json";

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

std::string gib(uint64_t b) {
  char s[64];
  std::snprintf(s, sizeof s, "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(b),
                static_cast<double>(b) / (1ull << 30));
  return s;
}

struct SourceId {
  std::string path;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

SourceId stat_source(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError(path, "stat", errno);
  return {path, static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

// A closable FIFO between pipeline threads.
template <class T>
class Queue {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> g(m_);
      q_.push_back(std::move(v));
    }
    cv_.notify_one();
  }
  // Blocks; nullopt once closed and empty.
  std::optional<T> pop() {
    std::unique_lock<std::mutex> g(m_);
    cv_.wait(g, [&] { return !q_.empty() || closed_; });
    if (q_.empty()) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }
  void close() {
    {
      std::lock_guard<std::mutex> g(m_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<T> q_;
  bool closed_ = false;
};

// Progress reporting, rate limited to ~5 events per second per phase (first and last always).
class Reporter {
 public:
  explicit Reporter(const std::function<void(const BuildProgress&)>& cb) : cb_(cb) {}
  void phase(const std::string& name, uint64_t total, const std::string& msg = "") {
    p_ = {};
    p_.phase = name;
    p_.bytes_total = total;
    p_.message = msg;
    start_ = Clock::now();
    last_ = Clock::time_point{};
    emit(true);
  }
  void update(uint64_t done, bool force = false) {
    p_.bytes_done = done;
    emit(force);
  }
  void message(const std::string& msg) {
    p_.message = msg;
    emit(true);
  }

 private:
  void emit(bool force) {
    if (!cb_) return;
    const auto now = Clock::now();
    if (!force && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double dt = std::chrono::duration<double>(now - start_).count();
    p_.rate_bytes_per_s = dt > 0 ? static_cast<double>(p_.bytes_done) / dt : 0;
    p_.eta_s = p_.rate_bytes_per_s > 0 && p_.bytes_total > p_.bytes_done
                   ? static_cast<double>(p_.bytes_total - p_.bytes_done) / p_.rate_bytes_per_s
                   : 0;
    cb_(p_);
  }
  const std::function<void(const BuildProgress&)>& cb_;
  BuildProgress p_;
  Clock::time_point start_{};
  Clock::time_point last_{};
};

struct BuildState {
  std::string plan_id;
  std::string build_id;
  std::string dense_sha256;   // "" until dense.gguf is durable
  uint64_t experts_done = 0;  // in address order
  std::vector<std::string> expert_sha256;
};

std::string state_to_text(const BuildState& s) {
  json j = {{"format", "moepack-build-state"},
            {"version", 1},
            {"plan_id", s.plan_id},
            {"build_id", s.build_id},
            {"dense_sha256", s.dense_sha256},
            {"experts_done", s.experts_done},
            {"expert_sha256",
             std::vector<std::string>(s.expert_sha256.begin(),
                                      s.expert_sha256.begin() + static_cast<long>(s.experts_done))}};
  return j.dump();
}

// A missing, unreadable or foreign state file means "start from scratch", never an error.
std::optional<BuildState> load_state(const std::string& dir, const std::string& plan_id) {
  const std::string p = dir + "/" + kStateName;
  if (!file_exists(p)) return std::nullopt;
  try {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    ::fstat(fd, &st);
    std::string text(static_cast<size_t>(st.st_size), '\0');
    pread_all(fd, text.data(), text.size(), 0, p);
    ::close(fd);
    const json j = json::parse(text);
    if (j.at("format") != "moepack-build-state" || j.at("version") != 1 || j.at("plan_id") != plan_id)
      return std::nullopt;
    BuildState s;
    s.plan_id = plan_id;
    s.build_id = j.at("build_id").get<std::string>();
    s.dense_sha256 = j.at("dense_sha256").get<std::string>();
    s.experts_done = j.at("experts_done").get<uint64_t>();
    s.expert_sha256 = j.at("expert_sha256").get<std::vector<std::string>>();
    if (s.build_id.size() != 32 || s.expert_sha256.size() != s.experts_done) return std::nullopt;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

PackBuildId parse_build_id(const std::string& hex) {
  PackBuildId id{};
  for (size_t k = 0; k < 16; ++k) id[k] = static_cast<uint8_t>(std::stoul(hex.substr(2 * k, 2), nullptr, 16));
  return id;
}

PackBuildId random_build_id() {
  std::random_device rd;
  PackBuildId id{};
  for (size_t k = 0; k < 16; k += 4) {
    const uint32_t v = rd();
    for (size_t b = 0; b < 4; ++b) id[k + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return id;
}

// A batch: consecutive experts [e0, e1) of one layer, contiguous in experts.bin.
struct Batch {
  uint64_t seq = 0;
  uint32_t layer = 0;
  uint32_t e0 = 0, e1 = 0;
  uint64_t global0 = 0;  // address-order index of expert e0
  uint64_t offset = 0;
  size_t bytes = 0;
  uint32_t buffer = 0;
};

class Builder {
 public:
  explicit Builder(const BuildOptions& o) : o_(o), rep_(o.on_progress) {}
  BuildResult run();

 private:
  void hook(std::string_view point, uint64_t index = 0) {
    if (o_.hooks.at) o_.hooks.at(point, index);
  }
  int inject(std::string_view op, uint64_t offset) {
    return o_.hooks.io_error ? o_.hooks.io_error(op, offset) : 0;
  }
  void check_cancel() {
    if (o_.cancel && o_.cancel->load()) throw BuildCancelled();
  }
  void save_state() { write_file_atomic(dir_, kStateName, state_to_text(state_)); }
  void preflight(uint64_t dense_bytes);
  void write_dense(const DenseGgufPlan& dp);
  bool dense_intact(const DenseGgufPlan& dp);
  void write_experts();
  uint64_t verify_prefix(int fd, Sha256& whole);
  void fill(const Batch& b, uint8_t* buf);
  void start_source_hashing();
  void finish_source_hashing();

  const BuildOptions& o_;
  Reporter rep_;
  std::string dir_;
  std::optional<GgufModel> model_;
  PackPlan plan_;
  std::vector<SourceId> sources_;
  std::string plan_id_;
  BuildState state_;
  PackBuildId build_id_{};
  BuildResult res_;
  std::vector<int> source_fds_;
  std::string experts_sha256_;
  // source hashing thread
  std::thread src_thread_;
  std::vector<std::string> source_sha256_;
  std::exception_ptr src_error_;
  std::atomic<bool> src_stop_{false};
};

void Builder::preflight(uint64_t dense_bytes) {
  const uint64_t experts = plan_.layout.data_end;
  const uint64_t n_exp = plan_.layout.expert_count();
  const uint64_t meta =
      2 * (100 * n_exp + 8192 * plan_.layout.layers.size() + (64u << 10));  // manifest + state
  const uint64_t total = dense_bytes + experts + meta;
  const uint64_t have =
      allocated_bytes(dir_ + "/" + kPackExpertsName) + allocated_bytes(dir_ + "/" + kPackDenseName);
  const uint64_t needed = total > have ? total - have : 0;
  // O_DIRECT first: a pack on a file system without it is useless whatever the space.
  if (o_.direct_io) {
    int e = inject("odirect", 0);
    if (e == 0) e = probe_direct_io(dir_);
    if (e != 0) {
      throw Error(dir_ + ": the file system (" + fs_type_name(dir_) +
                  ") does not support O_DIRECT writes of 4096-byte aligned blocks (" + std::strerror(e) +
                  "); MoePack reads experts with O_DIRECT, so the pack must live on a file system " +
                  "that supports it (ext4, xfs, btrfs; not ramfs). Choose another OUTDIR.");
    }
  }
  const std::optional<uint64_t> avail = o_.hooks.free_bytes ? o_.hooks.free_bytes() : free_bytes(dir_);
  if (!avail) {
    rep_.message(dir_ + ": the file system reports no size; free space cannot be checked");
  } else if (*avail < needed + o_.safety_margin_bytes) {
    throw Error(dir_ + ": not enough free space: the pack needs " + gib(needed) + " more (of " + gib(total) +
                ") plus the safety margin of " + gib(o_.safety_margin_bytes) + ", but only " + gib(*avail) +
                " are free on this file system");
  }
  rep_.update(0, true);
}

bool Builder::dense_intact(const DenseGgufPlan& dp) {
  const std::string p = dir_ + "/" + kPackDenseName;
  if (state_.dense_sha256.empty() || !file_exists(p)) return false;
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != dp.file_bytes) return false;
  return to_hex(sha256_file(p)) == state_.dense_sha256;
}

void Builder::write_dense(const DenseGgufPlan& dp) {
  const std::string p = dir_ + "/" + kPackDenseName;
  rep_.phase("dense", dp.file_bytes, p);
  if (dense_intact(dp)) {
    rep_.update(dp.file_bytes, true);
    return;
  }
  state_.dense_sha256.clear();
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(p, "open", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  Sha256 h;
  std::vector<uint8_t> buf(8u << 20);
  uint64_t at = 0;
  auto write = [&](const uint8_t* data, size_t n) {
    if (const int e = inject("dense-write", at)) throw IoError(p, "write at byte " + std::to_string(at), e);
    pwrite_all(fd, data, n, at, p);
    h.update(data, n);
    at += n;
    res_.bytes_written += n;
    rep_.update(at);
  };
  write(dp.head.data(), dp.head.size());
  for (size_t k = 0; k < dp.tensors.size(); ++k) {
    check_cancel();
    const GgufTensorRef& r = dp.tensors[k];
    if (dp.data_offsets[k] > at) {  // alignment padding
      std::vector<uint8_t> zero(static_cast<size_t>(dp.data_offsets[k] - at), 0);
      write(zero.data(), zero.size());
    }
    const GgufFile& shard = model_->shards()[r.shard];
    for (uint64_t off = 0; off < r.info->nbytes;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), r.info->nbytes - off));
      shard.read_tensor_data(*r.info, off, buf.data(), n);
      write(buf.data(), n);
      off += n;
    }
  }
  if (dp.file_bytes > at) {
    std::vector<uint8_t> zero(static_cast<size_t>(dp.file_bytes - at), 0);
    write(zero.data(), zero.size());
  }
  fsync_fd(fd, p);
  state_.dense_sha256 = to_hex(h.finish());
  save_state();
  rep_.update(at, true);
}

void Builder::fill(const Batch& b, uint8_t* buf) {
  const PackLayer& L = plan_.layout.layers[b.layer];
  // Role-major: the slices of one role for experts e0..e1 are adjacent in the source (stacked
  // tensors), so each role is one sequential run of reads, straight into the blocks.
  for (size_t r = 0; r < L.roles.size(); ++r) {
    const PackRole& role = L.roles[r];
    for (uint32_t e = b.e0; e < b.e1; ++e) {
      const SourceSlice& s = plan_.slices[b.layer][r][e];
      uint8_t* block = buf + static_cast<size_t>(e - b.e0) * L.stride;
      pread_all(source_fds_[s.shard], block + role.offset, static_cast<size_t>(role.bytes), s.file_offset,
                model_->shards()[s.shard].path());
    }
  }
  // Zero every byte no role covers (gaps before 256-aligned roles, the tail up to the stride).
  for (uint32_t e = b.e0; e < b.e1; ++e) {
    uint8_t* block = buf + static_cast<size_t>(e - b.e0) * L.stride;
    uint64_t at = 0;
    for (const PackRole& role : L.roles) {
      if (role.offset > at) std::memset(block + at, 0, static_cast<size_t>(role.offset - at));
      at = role.offset + role.bytes;
    }
    if (L.stride > at) std::memset(block + at, 0, static_cast<size_t>(L.stride - at));
  }
}

// Re-reads the experts recorded as done and returns how many, from the first, still match
// their digests; feeds the header and those blocks into `whole`.
uint64_t Builder::verify_prefix(int fd, Sha256& whole) {
  const std::string p = dir_ + "/" + kPackExpertsName;
  const PackLayout& L = plan_.layout;
  std::vector<uint8_t> header(static_cast<size_t>(L.data_start));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < L.data_start) return UINT64_MAX;
  pread_all(fd, header.data(), header.size(), 0, p);
  if (header != encode_pack_header(L, build_id_)) return UINT64_MAX;  // rewrite everything
  whole.update(header.data(), header.size());
  rep_.phase("experts", L.data_end,
             "checking " + std::to_string(state_.experts_done) + " experts already copied");
  std::vector<uint8_t> block(static_cast<size_t>(L.max_stride));
  uint64_t g = 0;
  for (uint32_t l = 0; l < L.layers.size() && g < state_.experts_done; ++l) {
    const PackLayer& ly = L.layers[l];
    for (uint32_t e = 0; e < ly.n_experts && g < state_.experts_done; ++e, ++g) {
      const uint64_t off = L.offset(l, e);
      if (off + ly.stride > static_cast<uint64_t>(st.st_size)) return g;
      pread_all(fd, block.data(), static_cast<size_t>(ly.stride), off, p);
      const Sha256Digest d = Sha256::of(block.data(), static_cast<size_t>(ly.stride));
      if (to_hex(d) != state_.expert_sha256[g]) return g;
      whole.update(block.data(), static_cast<size_t>(ly.stride));
      rep_.update(off + ly.stride - L.data_start);
    }
  }
  return g;
}

void Builder::start_source_hashing() {
  source_sha256_.assign(sources_.size(), "");
  if (!o_.hash_sources) return;
  src_thread_ = std::thread([this] {
    try {
      std::vector<uint8_t> buf(8u << 20);
      for (size_t k = 0; k < sources_.size(); ++k) {
        Sha256 h;
        const int fd = source_fds_[k];
        for (uint64_t off = 0; off < sources_[k].bytes;) {
          if (src_stop_.load()) return;
          const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), sources_[k].bytes - off));
          pread_all(fd, buf.data(), n, off, sources_[k].path);
          h.update(buf.data(), n);
          off += n;
        }
        source_sha256_[k] = to_hex(h.finish());
      }
    } catch (...) {
      src_error_ = std::current_exception();
    }
  });
}

void Builder::finish_source_hashing() {
  if (src_thread_.joinable()) src_thread_.join();
  if (src_error_) std::rethrow_exception(src_error_);
}

void Builder::write_experts() {
  const PackLayout& L = plan_.layout;
  const std::string p = dir_ + "/" + kPackExpertsName;
  const uint64_t n_exp = L.expert_count();
  int flags = O_RDWR | O_CREAT | O_CLOEXEC;
  if (o_.direct_io) flags |= O_DIRECT;
  const int fd = ::open(p.c_str(), flags, 0644);
  if (fd < 0) throw IoError(p, "open (O_DIRECT)", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const int rfd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);  // buffered reads for the resume check
  if (rfd < 0) throw IoError(p, "open", errno);
  Closer rcloser{rfd};

  Sha256 whole;
  uint64_t start = 0;  // first expert (address order) to copy
  if (state_.experts_done > 0) {
    const uint64_t ok = verify_prefix(rfd, whole);
    if (ok == UINT64_MAX) {
      whole = Sha256();
      state_.experts_done = 0;
    } else {
      start = ok;
      res_.resumed = ok > 0;
      res_.resumed_experts = ok;
    }
  }
  state_.expert_sha256.resize(n_exp);
  state_.experts_done = start;
  if (start == 0) {
    // Fresh experts.bin: reserve the space (early ENOSPC, contiguous extents), write the header.
    if (::ftruncate(fd, 0) != 0) throw IoError(p, "ftruncate", errno);
    if (::fallocate(fd, 0, 0, static_cast<off_t>(L.data_end)) != 0 && errno != EOPNOTSUPP &&
        errno != ENOSYS) {
      throw IoError(p, "fallocate of " + gib(L.data_end), errno);
    }
    const std::vector<uint8_t> header = encode_pack_header(L, build_id_);
    AlignedBuffer hb(header.size());
    std::memcpy(hb.data(), header.data(), header.size());
    if (const int e = inject("pwrite", 0)) throw IoError(p, "pwrite at byte 0", e);
    pwrite_all(fd, hb.data(), header.size(), 0, p);
    res_.bytes_written += header.size();
    whole = Sha256();
    whole.update(header.data(), header.size());
    save_state();
  }
  hook("header");

  // Batches from `start` on, in address order.
  std::vector<Batch> batches;
  {
    uint64_t g = 0;
    for (uint32_t l = 0; l < L.layers.size(); ++l) {
      const PackLayer& ly = L.layers[l];
      const uint32_t per = static_cast<uint32_t>(std::max<uint64_t>(1, o_.batch_bytes / ly.stride));
      for (uint32_t e0 = 0; e0 < ly.n_experts;) {
        uint32_t e1 = std::min(ly.n_experts, e0 + per);
        if (g + (e1 - e0) <= start) {
          g += e1 - e0;
          e0 = e1;
          continue;
        }
        if (g < start) {  // batch straddles the resume point: start mid-batch
          e0 += static_cast<uint32_t>(start - g);
          g = start;
        }
        Batch b;
        b.seq = batches.size();
        b.layer = l;
        b.e0 = e0;
        b.e1 = e1;
        b.global0 = g;
        b.offset = L.offset(l, e0);
        b.bytes = static_cast<size_t>((e1 - e0) * ly.stride);
        batches.push_back(b);
        g += e1 - e0;
        e0 = e1;
      }
    }
  }
  uint64_t base_done = 0;
  {
    uint64_t g = 0;
    for (uint32_t l = 0; l < L.layers.size(); ++l) {
      for (uint32_t e = 0; e < L.layers[l].n_experts; ++e, ++g) {
        if (g < start) base_done += L.layers[l].stride;
      }
    }
  }
  rep_.phase(
      "experts", L.data_end - L.data_start,
      start ? "resuming after " + std::to_string(start) + " of " + std::to_string(n_exp) + " experts" : "");
  rep_.update(base_done, true);

  const size_t buf_bytes = static_cast<size_t>(std::max<uint64_t>(o_.batch_bytes, L.max_stride));
  const uint32_t nbuf = std::max<uint32_t>(2, o_.buffers);
  std::vector<AlignedBuffer> bufs;
  for (uint32_t k = 0; k < nbuf; ++k) bufs.emplace_back(buf_bytes);

  Queue<uint32_t> free_q;
  for (uint32_t k = 0; k < nbuf; ++k) free_q.push(k);
  Queue<size_t> write_q, hash_q, whole_q;
  std::mutex done_m;
  std::vector<int> pending(batches.size(), 3);
  std::vector<bool> done(batches.size(), false);
  std::vector<int> good(batches.size(), 0);  // stages that really processed the batch
  std::exception_ptr error;
  std::atomic<bool> abort{false};
  auto fail = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> g(done_m);
    if (!error) error = e;
    abort = true;
  };
  auto finish_stage = [&](size_t i, bool ok) {
    bool last = false;
    {
      std::lock_guard<std::mutex> g(done_m);
      if (ok) good[i]++;
      last = --pending[i] == 0;
      if (last) done[i] = true;
    }
    if (last) free_q.push(batches[i].buffer);
  };
  std::thread writer([&] {
    while (auto i = write_q.pop()) {
      const Batch& b = batches[*i];
      bool ok = false;
      try {
        if (!abort) {
          if (const int e = inject("pwrite", b.offset))
            throw IoError(p, "pwrite at byte " + std::to_string(b.offset), e);
          pwrite_all(fd, bufs[b.buffer].data(), b.bytes, b.offset, p);
          ok = true;
          hook("data", b.seq);
        }
      } catch (...) {
        fail(std::current_exception());
      }
      finish_stage(*i, ok);
    }
  });
  std::thread hasher([&] {
    while (auto i = hash_q.pop()) {
      const Batch& b = batches[*i];
      bool ok = !abort;
      try {
        if (ok) {
          const uint64_t stride = L.layers[b.layer].stride;
          for (uint32_t e = b.e0; e < b.e1; ++e) {
            const uint8_t* blk = bufs[b.buffer].data() + (e - b.e0) * stride;
            state_.expert_sha256[b.global0 + (e - b.e0)] =
                to_hex(Sha256::of(blk, static_cast<size_t>(stride)));
          }
        }
      } catch (...) {
        ok = false;
        fail(std::current_exception());
      }
      finish_stage(*i, ok);
    }
  });
  std::thread whole_hasher([&] {
    while (auto i = whole_q.pop()) {
      const Batch& b = batches[*i];
      bool ok = !abort;
      try {
        if (ok) whole.update(bufs[b.buffer].data(), b.bytes);
      } catch (...) {
        ok = false;
        fail(std::current_exception());
      }
      finish_stage(*i, ok);
    }
  });

  const auto t0 = Clock::now();
  size_t completed = 0;  // batches [0, completed) are written and hashed
  uint64_t done_bytes = base_done;
  uint64_t checkpoints = 0;
  // Checkpoints are due after the batch that crosses each `checkpoint_bytes` of submitted
  // data, and record exactly the batches up to it (so their number and content do not depend
  // on thread timing); each is taken as soon as that batch is done.
  std::deque<size_t> due;
  uint64_t submitted_since = 0;
  auto advance = [&] {
    std::lock_guard<std::mutex> g(done_m);
    while (completed < batches.size() && done[completed] && good[completed] == 3) {
      done_bytes += batches[completed].bytes;
      ++completed;
    }
  };
  auto checkpoint = [&](size_t upto) {  // batches [0, upto) are durable after this
    if (::fdatasync(fd) != 0) throw IoError(p, "fdatasync", errno);
    state_.experts_done =
        upto == 0 ? start : batches[upto - 1].global0 + (batches[upto - 1].e1 - batches[upto - 1].e0);
    save_state();
    hook("checkpoint", checkpoints++);
  };
  auto take_due = [&] {
    while (!due.empty() && completed > due.front()) {
      checkpoint(due.front() + 1);
      due.pop_front();
    }
  };
  std::exception_ptr main_error;
  try {
    for (size_t i = 0; i < batches.size(); ++i) {
      check_cancel();
      const std::optional<uint32_t> buf = free_q.pop();  // never closed while this loop runs
      if (abort || !buf) break;
      batches[i].buffer = *buf;
      fill(batches[i], bufs[*buf].data());
      write_q.push(i);
      hash_q.push(i);
      whole_q.push(i);
      submitted_since += batches[i].bytes;
      if (submitted_since >= o_.checkpoint_bytes) {
        due.push_back(i);
        submitted_since = 0;
      }
      advance();
      rep_.update(done_bytes);
      if (!abort) take_due();
    }
  } catch (...) {
    main_error = std::current_exception();
    abort = true;
  }
  write_q.close();
  hash_q.close();
  whole_q.close();
  writer.join();
  hasher.join();
  whole_hasher.join();
  if (error) std::rethrow_exception(error);
  if (main_error) {
    // Cancelled or a read failed: keep what is durable so that the next run resumes.
    try {
      advance();
      if (completed > 0) checkpoint(completed);
    } catch (...) {
    }
    std::rethrow_exception(main_error);
  }
  advance();
  take_due();
  checkpoint(completed);
  res_.bytes_written += done_bytes - base_done;
  res_.experts_seconds = seconds_since(t0);
  experts_sha256_ = to_hex(whole.finish());
  rep_.update(done_bytes, true);
}

BuildResult Builder::run() {
  const auto t0 = Clock::now();
  dir_ = o_.out_dir;
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  res_.pack_dir = dir_;

  rep_.phase("plan", 0, o_.source);
  model_ = GgufModel::open(o_.source);
  plan_ = plan_pack(*model_);
  for (const GgufFile& f : model_->shards()) {
    sources_.push_back(stat_source(f.path()));
    const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(f.path(), "open", errno);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    source_fds_.push_back(fd);
  }
  struct FdsCloser {
    std::vector<int>& fds;
    ~FdsCloser() {
      for (int fd : fds) ::close(fd);
    }
  } fds_closer{source_fds_};
  {
    json id;
    id["format_version"] = kPackFormatVersion;
    for (const SourceId& s : sources_) id["sources"].push_back({s.path, s.bytes, s.mtime_ns});
    PackManifest probe;
    probe.layout = plan_.layout;
    id["layout"] = manifest_to_json(probe)["layout"];
    id["dense"] = plan_.dense_tensors.size();
    const std::string text = id.dump(-1, ' ', false, json::error_handler_t::replace);
    plan_id_ = to_hex(Sha256::of(text.data(), text.size()));
  }
  hook("plan");

  make_dirs(dir_);
  const std::string mpath = dir_ + "/" + kPackManifestName;
  if (file_exists(mpath)) {
    std::optional<PackManifest> old;
    try {
      old = read_manifest(mpath);
    } catch (const Error&) {
    }
    if (old && old->build.value("plan_id", "") == plan_id_) {
      res_.already_complete = true;
      remove_durably(dir_, kStateName);
      res_.experts_bytes = old->experts.bytes;
      res_.dense_bytes = old->dense.bytes;
      res_.seconds = seconds_since(t0);
      rep_.phase("done", 0, dir_ + " already holds the finished pack of this source");
      return res_;
    }
    if (!o_.overwrite) {
      throw Error(dir_ + " already holds a finished Expert Pack" +
                  (old && !old->sources.empty() ? " of " + old->sources.front().path : std::string()) +
                  "; choose another output directory or pass --overwrite");
    }
    remove_durably(dir_, kPackManifestName);  // from here on the old pack no longer loads
  }
  if (auto s = load_state(dir_, plan_id_)) {
    state_ = *s;
    build_id_ = parse_build_id(state_.build_id);
  } else {
    remove_durably(dir_, kStateName);
    build_id_ = random_build_id();
    state_ = {};
    state_.plan_id = plan_id_;
    state_.build_id = build_id_hex(build_id_);
  }
  const DenseGgufPlan dense = plan_dense_gguf(*model_, plan_.dense_tensors, state_.build_id);

  rep_.phase("preflight", 0, dir_);
  preflight(dense.file_bytes);
  hook("preflight");

  start_source_hashing();
  struct SrcStopper {
    Builder* b;
    ~SrcStopper() {
      b->src_stop_ = true;
      if (b->src_thread_.joinable()) b->src_thread_.join();
    }
  } src_stopper{this};
  write_dense(dense);
  hook("dense");
  write_experts();
  hook("experts");

  rep_.phase("finalize", 0, "hashing sources, writing the manifest");
  finish_source_hashing();
  hook("sources");
  for (const SourceId& s : sources_) {
    const SourceId now = stat_source(s.path);
    if (now.bytes != s.bytes || now.mtime_ns != s.mtime_ns) {
      throw Error(
          s.path +
          ": the source file changed during the build (size or modification time); run the build again");
    }
  }

  PackManifest m;
  m.build_id = state_.build_id;
  m.tool = o_.tool_version;
  {
    const json sj = summary_to_json(plan_.summary, *model_, false);
    m.model = {{"architecture", sj["architecture"]},
               {"name", sj["name"]},
               {"expert_count", sj["moe"]["expert_count"]},
               {"expert_used_count", sj["moe"]["expert_used_count"]},
               {"expert_shared_count", sj["moe"]["expert_shared_count"]},
               {"hparams", sj["hparams"]},
               {"tokenizer", sj["tokenizer"]}};
  }
  for (size_t k = 0; k < sources_.size(); ++k) {
    m.sources.push_back({sources_[k].path, sources_[k].bytes,
                         source_sha256_[k].empty() ? std::string(64, '0') : source_sha256_[k]});
  }
  m.dense = {kPackDenseName, dense.file_bytes, state_.dense_sha256};
  m.dense_tensors = plan_.dense_tensors.size();
  m.experts = {kPackExpertsName, plan_.layout.data_end, experts_sha256_};
  m.layout = plan_.layout;
  {
    size_t g = 0;
    for (const PackLayer& L : plan_.layout.layers) {
      std::vector<std::string> h(state_.expert_sha256.begin() + static_cast<long>(g),
                                 state_.expert_sha256.begin() + static_cast<long>(g + L.n_experts));
      g += L.n_experts;
      m.expert_sha256.push_back(std::move(h));
    }
  }
  m.build = {{"plan_id", plan_id_},
             {"finished_utc", utc_now()},
             {"direct_io", o_.direct_io},
             {"safety_margin_bytes", o_.safety_margin_bytes},
             {"batch_bytes", o_.batch_bytes},
             {"sources_hashed", o_.hash_sources},
             {"resumed_experts", res_.resumed_experts},
             {"seconds_last_run", seconds_since(t0)}};
  const std::string text = manifest_to_json(m).dump(1, ' ', false, json::error_handler_t::replace) + "\n";
  manifest_from_json(json::parse(text), mpath);  // never write a manifest the reader rejects
  write_file_atomic(
      dir_, kPackManifestName, text, [](void* self) { static_cast<Builder*>(self)->hook("manifest-temp"); },
      this);
  hook("manifest");
  remove_durably(dir_, kStateName);
  res_.experts_bytes = plan_.layout.data_end;
  res_.dense_bytes = dense.file_bytes;

  if (o_.delete_source_after_verify) {
    rep_.phase("verify", plan_.layout.data_end + dense.file_bytes,
               "full verification before deleting the source");
    VerifyOptions vo;
    vo.full = true;
    vo.progress = [&](uint64_t d, uint64_t) { rep_.update(d); };
    const VerifyResult v = verify_pack(dir_, vo);
    if (!v.ok) throw Error("the new pack failed verification, the source was NOT deleted: " + v.message);
    for (const SourceId& s : sources_) {
      if (::unlink(s.path.c_str()) != 0) throw IoError(s.path, "unlink", errno);
    }
    res_.source_deleted = true;
  }
  res_.seconds = seconds_since(t0);
  rep_.phase("done", 0, dir_);
  hook("done");
  return res_;
}

}  // namespace

BuildResult build_pack(const BuildOptions& options) {
  Builder b(options);
  return b.run();
}

}  // namespace moepack
