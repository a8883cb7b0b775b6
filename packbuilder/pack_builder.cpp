#include "packbuilder/pack_builder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "core/build_stamp.h"
#include "core/durable_io.h"
#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/model_config.h"
#include "core/pack_manifest.h"
#include "core/pack_verify.h"
#include "core/sha256.h"
#include "packbuilder/dense_gguf.h"
#include "packbuilder/pack_plan.h"

namespace moepack {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kStateName = "build-state.json";

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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
  std::vector<std::string> source_sha256;  // per shard, "" until known (shard mode)
  json plan;                               // the persisted build plan (shard mode), else null
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
  if (!s.source_sha256.empty()) j["source_sha256"] = s.source_sha256;
  if (!s.plan.is_null()) j["plan"] = s.plan;
  return j.dump();
}

// The raw state file, or nullopt when it is missing or not JSON.
std::optional<json> read_state_json(const std::string& dir) {
  const std::string p = dir + "/" + kStateName;
  if (!file_exists(p)) return std::nullopt;
  try {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    ::fstat(fd, &st);
    std::string text(static_cast<size_t>(st.st_size), '\0');
    try {
      pread_all(fd, text.data(), text.size(), 0, p);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    json j = json::parse(text);
    if (!j.is_object() || j.value("format", "") != "moepack-build-state") return std::nullopt;
    return j;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Lower-case hex digits only, as the manifest requires (pack_manifest.h): a state file with an
// upper-case id would otherwise copy every expert and fail only at its manifest.
bool is_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A missing, unreadable or foreign state file means "start from scratch". A state file of
// this very plan whose build_id is not 32 lower-case hex digits is damaged: FormatError naming the file
// and the field (its dense.gguf and experts.bin carry the old id, so it must not be ignored).
std::optional<BuildState> load_state(const std::string& dir, const std::string& plan_id) {
  const std::optional<json> raw = read_state_json(dir);
  if (!raw) return std::nullopt;
  try {
    const json& j = *raw;
    if (j.at("version") == 1 && j.at("plan_id") == plan_id) {
      const json& id = j.at("build_id");
      if (!id.is_string() || id.get<std::string>().size() != 32 || !is_hex(id.get<std::string>())) {
        throw FormatError(dir + "/" + kStateName, "build_id", FormatError::InDocument{},
                          "expected 32 lower-case hex digits, found " +
                              id.dump(-1, ' ', false, json::error_handler_t::replace));
      }
    }
  } catch (const json::exception&) {
    return std::nullopt;
  }
  try {
    const json& j = *raw;
    if (j.at("version") != 1 || j.at("plan_id") != plan_id) return std::nullopt;
    BuildState s;
    s.plan_id = plan_id;
    s.build_id = j.at("build_id").get<std::string>();
    s.dense_sha256 = j.at("dense_sha256").get<std::string>();
    s.experts_done = j.at("experts_done").get<uint64_t>();
    s.expert_sha256 = j.at("expert_sha256").get<std::vector<std::string>>();
    if (j.contains("source_sha256")) s.source_sha256 = j.at("source_sha256").get<std::vector<std::string>>();
    if (j.contains("plan")) s.plan = j.at("plan");
    if (s.build_id.size() != 32 || s.expert_sha256.size() != s.experts_done) return std::nullopt;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Identity of a plan: the source files (path, size, mtime), the layout and the dense tensor
// count. A build resumes only into the plan it started.
std::string compute_plan_id(const std::vector<SourceId>& sources, const PackLayout& layout, uint64_t dense_count) {
  json id;
  id["format_version"] = kPackFormatVersion;
  for (const SourceId& s : sources) id["sources"].push_back({s.path, s.bytes, s.mtime_ns});
  PackManifest probe;
  probe.layout = layout;
  id["layout"] = manifest_to_json(probe)["layout"];
  id["dense"] = dense_count;
  const std::string text = id.dump(-1, ' ', false, json::error_handler_t::replace);
  return to_hex(Sha256::of(text.data(), text.size()));
}

// Global (address-order) expert index -> end offset of that expert's block in experts.bin.
uint64_t expert_end_offset(const PackLayout& L, uint64_t g) {
  for (uint32_t l = 0; l < L.layers.size(); ++l) {
    if (g < L.layers[l].n_experts) return L.offset(l, static_cast<uint32_t>(g)) + L.layers[l].stride;
    g -= L.layers[l].n_experts;
  }
  return L.data_end;
}

// need_upto[k]: experts [0, need_upto[k]) (address order) include every slice read from shard k.
std::vector<uint64_t> shard_need_upto(const PackPlan& plan, size_t n_shards) {
  std::vector<uint64_t> need(n_shards, 0);
  uint64_t g0 = 0;
  for (size_t l = 0; l < plan.slices.size(); ++l) {
    const uint32_t n = plan.layout.layers[l].n_experts;
    for (const auto& role : plan.slices[l]) {
      for (uint32_t e = 0; e < n; ++e) need[role[e].shard] = std::max(need[role[e].shard], g0 + e + 1);
    }
    g0 += n;
  }
  return need;
}

// Two spellings of one path (relative/absolute, "." and ".."); the files may not exist.
bool same_path(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ea, eb;
  const fs::path x = fs::absolute(a, ea).lexically_normal(), y = fs::absolute(b, eb).lexically_normal();
  return !ea && !eb && x == y;
}

uint64_t device_of(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  while (!p.empty()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) return static_cast<uint64_t>(st.st_dev);
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return UINT64_MAX;
}

// Every name the build creates, truncates, renames over or removes in OUTDIR: the pack's files,
// write_file_atomic()'s temps (NAME.tmp), the state file, and the probes of the pre-flight
// (probe_direct_io() in core/durable_io.cpp, query_dio_alignment() below).
constexpr const char* kDioAlignProbeName = ".moepack-dioalign-probe";
std::vector<std::string> output_names() {
  return {kPackDenseName,     kPackExpertsName,
          kPackManifestName,  atomic_temp_name(kPackManifestName),
          kStateName,         atomic_temp_name(kStateName),
          kDirectIoProbeName, kDioAlignProbeName};
}

// Why the build must not write `path` ("" when it may): a symbolic link (opening it for writing
// writes into the file it points to, wherever that is), or the same file (st_dev + st_ino, so
// hard links too) as a source shard still present. A path that does not exist is fine; one
// lstat cannot read is left to the write that follows (it fails naming the file).
std::string output_refusal(const std::string& path, const std::vector<SourceId>& sources,
                           const std::vector<bool>& present) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const std::filesystem::path to = std::filesystem::read_symlink(path, ec);
    return path + " is a symbolic link" + (ec ? std::string() : " (to " + to.string() + ")") +
           ": the build would write through it into the file it points to";
  }
  for (size_t k = 0; k < sources.size(); ++k) {
    struct stat ss {};
    if (!present[k] || ::stat(sources[k].path.c_str(), &ss) != 0) continue;
    if (ss.st_dev == st.st_dev && ss.st_ino == st.st_ino) {
      return path + " is the source model itself" +
             (sources.size() > 1 ? " (its shard " + sources[k].path + ")" : std::string()) +
             (same_path(path, sources[k].path) ? std::string()
                                               : " (another name of " + sources[k].path + ")") +
             ": the build would overwrite it";
    }
  }
  return "";
}

// Why the shard-by-shard mode must not delete source shard `path` ("" when it may; the rules
// of pack_builder.h). `target_dev`: st_dev of the output directory; `dev_hook` (tests)
// replaces the shard's st_dev.
std::string shard_delete_refusal(const std::string& path, bool from_ollama, uint64_t target_dev,
                                 const std::function<uint64_t(const std::string&)>& dev_hook) {
  if (from_ollama || is_ollama_blob(path)) {
    return "it is a blob of the Ollama store (content-addressed, may be shared by several models; "
           "remove the model with `ollama rm` instead)";
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::string("lstat failed: ") + std::strerror(errno);
  if (S_ISLNK(st.st_mode)) {
    return "it is a symbolic link (deleting the link frees nothing; the data stays where it points)";
  }
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (st.st_nlink > 1) {
    return "it has " + std::to_string(st.st_nlink) +
           " hard links (deleting this name frees nothing, and the data may be another model's)";
  }
  const uint64_t dev = dev_hook ? dev_hook(path) : static_cast<uint64_t>(st.st_dev);
  if (dev != target_dev) {
    return "it is on another file system than the output directory (deleting it frees no space there)";
  }
  return "";
}

// The space formulas of pack_builder.h. `freeable[k]`: shard k is present and the shard mode
// may delete it (shard_delete_refusal() empty); false for deleted shards and for shards that
// stay (those take the same space before and after, so they count 0).
BuildSpace space_needs(const PackLayout& L, uint64_t dense_bytes, const std::vector<SourceId>& sources,
                       const std::vector<bool>& freeable, const std::vector<uint64_t>& need_upto,
                       const std::string& shard_mode_refused, uint64_t already_allocated) {
  BuildSpace b;
  const uint64_t n_exp = L.expert_count();
  const uint64_t meta = 2 * (100 * n_exp + 8192 * L.layers.size() + (64u << 10)) +  // manifest + state
                        (need_upto.size() > 1 ? 2 * 64 * n_exp + (64u << 10) : 0);  // persisted plan
  const uint64_t pack = dense_bytes + L.data_end;
  const uint64_t A = already_allocated;
  b.pack_bytes = pack + meta;
  b.normal_needed = pack + meta > A ? pack + meta - A : 0;
  std::vector<uint64_t> S(sources.size(), 0);
  for (size_t k = 0; k < sources.size(); ++k) {
    if (freeable[k]) S[k] = sources[k].bytes;
    b.source_bytes_on_target_fs += S[k];
  }
  std::vector<uint64_t> ready(sources.size());
  for (size_t k = 0; k < sources.size(); ++k)
    ready[k] = dense_bytes + (need_upto[k] == 0 ? L.data_start : expert_end_offset(L, need_upto[k] - 1));
  const uint64_t now = A + b.source_bytes_on_target_fs;
  uint64_t peak = std::max(now, pack);
  for (size_t k = 0; k < sources.size(); ++k) {
    if (!freeable[k]) continue;
    uint64_t u = std::max(A, ready[k]);
    for (size_t j = 0; j < sources.size(); ++j)
      if (freeable[j] && ready[j] >= ready[k]) u += S[j];
    peak = std::max(peak, u);
  }
  b.shard_mode_peak = peak;
  b.shard_mode_needed = peak + meta > now ? peak + meta - now : 0;
  b.shard_mode_refused = shard_mode_refused;
  b.shard_mode_helps = shard_mode_refused.empty() && b.shard_mode_needed < b.normal_needed;
  return b;
}

// `hex`: 32 hex digits (checked by load_state).
PackBuildId parse_build_id(const std::string& hex) {
  auto nibble = [](char c) -> uint8_t {
    return static_cast<uint8_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  };
  PackBuildId id{};
  for (size_t k = 0; k < 16; ++k) id[k] = static_cast<uint8_t>(nibble(hex[2 * k]) << 4 | nibble(hex[2 * k + 1]));
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
  bool ready_point = false;  // ends where a source shard becomes deletable (shard mode)
};

// The persisted plan's slice table: per layer, per role, either {"shard", "offset", "step"}
// (expert e at offset + e * step, the stacked-tensor case) or {"list": [[shard, offset], ...]}.
json slices_to_json(const PackPlan& plan) {
  json layers = json::array();
  for (size_t l = 0; l < plan.slices.size(); ++l) {
    json roles = json::array();
    for (size_t r = 0; r < plan.slices[l].size(); ++r) {
      const auto& v = plan.slices[l][r];
      const uint64_t step = plan.layout.layers[l].roles[r].bytes;
      bool arith = true;
      for (size_t e = 0; e < v.size() && arith; ++e)
        arith = v[e].shard == v[0].shard && v[e].file_offset == v[0].file_offset + e * step;
      if (arith) {
        roles.push_back({{"shard", v[0].shard}, {"offset", v[0].file_offset}, {"step", step}});
      } else {
        json list = json::array();
        for (const SourceSlice& x : v) list.push_back({x.shard, x.file_offset});
        roles.push_back({{"list", list}});
      }
    }
    layers.push_back(roles);
  }
  return layers;
}

class Builder {
 public:
  explicit Builder(const BuildOptions& o) : o_(o), rep_(o.on_progress) {}
  ~Builder() {
    for (int fd : source_fds_)
      if (fd >= 0) ::close(fd);
    if (dir_lock_fd_ >= 0) ::close(dir_lock_fd_);  // releases the folder's lock
  }
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
  // One build at a time writes a folder: an exclusive flock() on the folder itself, released
  // when the build ends or its process dies. Another build of it (the CLI, the studio, a second
  // terminal) is refused before it writes a byte.
  // The lock is this machine's: on a network file system two hosts are not kept apart. A folder
  // that cannot be locked (no read permission, a file system without locks) is built unlocked,
  // with a message.
  void lock_dir() {
    dir_lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_lock_fd_ >= 0 && ::flock(dir_lock_fd_, LOCK_EX | LOCK_NB) == 0) return;
    const int err = errno;
    if (dir_lock_fd_ >= 0 && err == EWOULDBLOCK) throw PackDirBusy(dir_);
    rep_.message(dir_ + ": cannot lock the directory (" + std::strerror(err) +
                 "); building without keeping other builds out of it");
  }
  void save_state() {
    std::lock_guard<std::mutex> g(src_m_);
    state_.source_sha256 = source_sha256_;
    write_file_atomic(dir_, kStateName, state_to_text(state_));
  }
  void plan_from_model();
  bool plan_from_state(const json& raw);
  json persisted_plan() const;
  void preflight();
  void refuse_unsafe_outputs();
  // delete_source_after_verify: a full verify of the finished pack, then every present source
  // file unlinked. The verify stops on o_.cancel (BuildCancelled: nothing deleted).
  void verify_then_delete_source(uint64_t pack_bytes);
  void write_dense();
  bool dense_intact();
  void write_experts();
  uint64_t verify_prefix(int fd, Sha256& whole);
  void fill(const Batch& b, uint8_t* buf);
  void start_source_hashing();
  void finish_source_hashing();
  std::string wait_source_hash(size_t k);
  void delete_ready_shards(int rfd);
  void verify_on_disk(int rfd, uint64_t upto);
  std::string deleted_list() const;
  void check_deletable();

  const BuildOptions& o_;
  Reporter rep_;
  std::string dir_;
  int dir_lock_fd_ = -1;  // the output folder, flock()ed while this build writes it
  bool shard_mode_ = false;
  // The opened source. Absent when resumed from the persisted plan (from_plan_), and released
  // in shard mode as soon as dense.gguf is written: its GgufFiles hold an fd on every shard,
  // which would keep a deleted shard's blocks allocated until the build ends.
  std::optional<GgufModel> model_;
  bool from_plan_ = false;  // resumed from the plan persisted in build-state.json
  PackPlan plan_;           // layout + slices (summary, dense_tensors only while model_ is open)
  std::optional<DenseGgufPlan> dense_plan_;
  uint64_t dense_bytes_ = 0;  // size of dense.gguf
  uint64_t dense_count_ = 0;  // dense tensors
  json model_json_;           // the manifest's "model"
  std::vector<SourceId> sources_;
  std::vector<bool> present_;        // shard file exists (not deleted)
  std::vector<std::string> undeletable_;  // per shard: shard_delete_refusal(), "" = may be deleted
  std::string shard_mode_refused_;        // the refusal message naming every undeletable shard
  std::vector<uint64_t> need_upto_;  // see shard_need_upto()
  std::string plan_id_;
  BuildState state_;
  PackBuildId build_id_{};
  BuildResult res_;
  std::vector<int> source_fds_;  // -1 for deleted shards
  std::string experts_sha256_;
  uint64_t verified_upto_ = 0;  // experts [0, this) re-read from disk and checked (shard mode)
  bool dense_verified_ = false;
  // source hashing threads
  std::vector<std::thread> src_threads_;
  std::mutex src_m_;
  std::condition_variable src_cv_;
  std::vector<std::string> source_sha256_;  // guarded by src_m_
  std::exception_ptr src_error_;            // guarded by src_m_
  std::atomic<size_t> src_next_{0};
  std::atomic<bool> src_stop_{false};
};

void Builder::plan_from_model() {
  model_ = GgufModel::open(o_.source);
  // A pack of a model the engine cannot run would cost the whole copy and then be refused by
  // every run: refused here, before the first byte is written.
  const GgufFile& first = model_->shards().front();
  const std::optional<std::string> arch = first.get_string("general.architecture");
  if (arch && !engine_supports_arch(*arch)) {
    const GgufKv* kv = first.find("general.architecture");
    throw FormatError(first.path(), "general.architecture", kv ? kv->value_offset : 0,
                      "architecture '" + *arch +
                          "' is not supported by the engine (supported: " + engine_supported_archs() +
                          "), so a pack of it could not be run; nothing was written");
  }
  plan_ = plan_pack(*model_);
  for (const GgufFile& f : model_->shards()) {
    // Absolute paths (a relative one prefixed with the working directory, an absolute one kept
    // as given): the persisted plan and the manifest stay valid from another directory.
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(f.path(), ec);
    sources_.push_back(stat_source(ec ? f.path() : abs.string()));
    present_.push_back(true);
    const std::string& path = sources_.back().path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(path, "open", errno);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    source_fds_.push_back(fd);
  }
  dense_count_ = plan_.dense_tensors.size();
  plan_id_ = compute_plan_id(sources_, plan_.layout, dense_count_);
  const json sj = summary_to_json(plan_.summary, *model_, false);
  model_json_ = {{"architecture", sj["architecture"]},
                 {"name", sj["name"]},
                 {"expert_count", sj["moe"]["expert_count"]},
                 {"expert_used_count", sj["moe"]["expert_used_count"]},
                 {"expert_shared_count", sj["moe"]["expert_shared_count"]},
                 {"hparams", sj["hparams"]},
                 {"tokenizer", sj["tokenizer"]}};
}

// Everything the build needs once source shards are gone (see pack_builder.h).
json Builder::persisted_plan() const {
  PackManifest m;
  m.build_id = state_.build_id;
  m.tool = o_.tool_version;
  m.model = model_json_;
  const std::string zeros(64, '0');
  for (const SourceId& s : sources_) m.sources.push_back({s.path, s.bytes, zeros});
  m.dense = {kPackDenseName, dense_bytes_, zeros};
  m.dense_tensors = dense_count_;
  m.experts = {kPackExpertsName, plan_.layout.data_end, zeros};
  m.layout = plan_.layout;
  for (const PackLayer& L : plan_.layout.layers) m.expert_sha256.emplace_back(L.n_experts, zeros);
  json sources = json::array();
  for (const SourceId& s : sources_) sources.push_back({{"path", s.path}, {"bytes", s.bytes}, {"mtime_ns", s.mtime_ns}});
  return {{"sources", sources},
          {"manifest", manifest_to_json(m)},
          {"slices", slices_to_json(plan_)},
          {"dense_bytes", dense_bytes_},
          {"dense_tensors", dense_count_}};
}

// Resumes from the plan in build-state.json when some of its source shards are gone. Returns
// false when every shard is present (the normal path re-plans from the files). Throws Error
// when the plan is damaged or belongs to another source.
bool Builder::plan_from_state(const json& raw) {
  const std::string sp = dir_ + "/" + kStateName;
  const json& pj = raw.at("plan");
  std::vector<SourceId> sources;
  for (const json& s : pj.at("sources"))
    sources.push_back({s.at("path").get<std::string>(), s.at("bytes").get<uint64_t>(), s.at("mtime_ns").get<int64_t>()});
  bool any_missing = false;
  for (const SourceId& s : sources) any_missing = any_missing || !file_exists(s.path);
  if (!any_missing) return false;
  // The source named on the command line must be one of the plan's shards (it may be gone).
  bool same = false;
  for (const SourceId& s : sources) same = same || same_path(s.path, o_.source);
  if (!same) {
    throw Error(sp + ": holds the interrupted shard-by-shard build of " + sources.front().path +
                " (some of its shards are already deleted), not of " + o_.source +
                "; run the build with that source, or choose another output directory");
  }
  const PackManifest m = manifest_from_json(pj.at("manifest"), sp + " (plan/manifest)");
  plan_ = {};
  plan_.layout = m.layout;
  const json& sl = pj.at("slices");
  if (sl.size() != m.layout.layers.size())
    throw FormatError(sp, "plan/slices", FormatError::InDocument{}, "one entry per layer expected");
  plan_.slices.resize(sl.size());
  for (size_t l = 0; l < sl.size(); ++l) {
    const PackLayer& L = m.layout.layers[l];
    if (sl[l].size() != L.roles.size())
      throw FormatError(sp, "plan/slices/" + std::to_string(l), FormatError::InDocument{},
                        "one entry per role expected");
    for (size_t r = 0; r < L.roles.size(); ++r) {
      const json& x = sl[l][r];
      std::vector<SourceSlice> v(L.n_experts);
      for (uint32_t e = 0; e < L.n_experts; ++e) {
        if (x.contains("list")) {
          v[e] = {x.at("list").at(e).at(0).get<uint32_t>(), x.at("list").at(e).at(1).get<uint64_t>()};
        } else {
          v[e] = {x.at("shard").get<uint32_t>(), x.at("offset").get<uint64_t>() + e * x.at("step").get<uint64_t>()};
        }
        if (v[e].shard >= sources.size() || v[e].file_offset + L.roles[r].bytes > sources[v[e].shard].bytes) {
          throw FormatError(sp, "plan/slices/" + std::to_string(l) + "/" + std::to_string(r),
                            FormatError::InDocument{},
                            "slice of expert " + std::to_string(e) + " lies outside its shard");
        }
      }
      plan_.slices[l].push_back(std::move(v));
    }
  }
  sources_ = sources;
  dense_bytes_ = pj.at("dense_bytes").get<uint64_t>();
  dense_count_ = pj.at("dense_tensors").get<uint64_t>();
  model_json_ = m.model;
  plan_id_ = compute_plan_id(sources_, plan_.layout, dense_count_);
  if (raw.at("plan_id").get<std::string>() != plan_id_) {
    throw FormatError(sp, "plan_id", FormatError::InDocument{},
                      "does not match the persisted plan (the state file is damaged)");
  }
  for (const SourceId& s : sources_) {
    const bool here = file_exists(s.path);
    present_.push_back(here);
    int fd = -1;
    if (here) {
      const SourceId now = stat_source(s.path);
      if (now.bytes != s.bytes || now.mtime_ns != s.mtime_ns) {
        throw Error(s.path + ": changed since the shard-by-shard build started (size or modification time); "
                    "the build cannot continue (its other shards are already deleted)");
      }
      fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw IoError(s.path, "open", errno);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    source_fds_.push_back(fd);
  }
  return true;
}

// Fills undeletable_ for every present shard; in shard mode, refuses (before anything is
// written or deleted) when one of them must not be deleted.
void Builder::check_deletable() {
  const bool from_ollama = model_ && model_->origin().rfind("ollama ", 0) == 0;
  const uint64_t target_dev = device_of(dir_);
  undeletable_.assign(sources_.size(), "");
  for (size_t k = 0; k < sources_.size(); ++k) {
    if (!present_[k]) continue;
    undeletable_[k] = shard_delete_refusal(sources_[k].path, from_ollama, target_dev, o_.hooks.source_dev);
    if (!undeletable_[k].empty()) {
      shard_mode_refused_ += (shard_mode_refused_.empty() ? "" : "; ") + sources_[k].path + ": " + undeletable_[k];
    }
  }
  // Deleting the whole source after the verify: never a blob of Ollama's store (shared by the
  // store's models; `ollama rm` removes it). The other rules above only make a deletion free
  // nothing, so they stay the shard mode's.
  if (o_.delete_source_after_verify && !shard_mode_) {
    for (size_t k = 0; k < sources_.size(); ++k) {
      if (present_[k] && (from_ollama || is_ollama_blob(sources_[k].path))) {
        throw Error(
            "--delete-source-after-verify refuses to delete " + sources_[k].path +
            ": it is a blob of the Ollama store (content-addressed, may be shared by several models; "
            "remove the model with `ollama rm` instead). Nothing was written or deleted; build without "
            "deleting the source");
      }
    }
  }
  if (shard_mode_ && !shard_mode_refused_.empty()) {
    throw Error("--delete-source-shards refuses to delete a source shard: " + shard_mode_refused_ +
                ". Nothing was written or deleted; build without --delete-source-shards, or give a split set of "
                "regular files (one link each) on the output directory's file system (" + dir_ + ")");
  }
}

std::string Builder::deleted_list() const {
  std::string out;
  for (size_t k = 0; k < sources_.size(); ++k) {
    if (present_[k]) continue;
    out += (out.empty() ? "" : ", ") + sources_[k].path;
  }
  return out;
}

void Builder::verify_then_delete_source(uint64_t pack_bytes) {
  rep_.phase("verify", pack_bytes, "full verification before deleting the source");
  VerifyOptions vo;
  vo.full = true;
  vo.cancel = o_.cancel;
  vo.progress = [&](uint64_t d, uint64_t) { rep_.update(d); };
  const VerifyResult v = verify_pack(dir_, vo);
  if (v.cancelled) throw BuildCancelled();
  if (!v.ok) throw Error("the new pack failed verification, the source was NOT deleted: " + v.message);
  for (size_t k = 0; k < sources_.size(); ++k) {
    if (!present_[k]) continue;
    if (::unlink(sources_[k].path.c_str()) != 0) throw IoError(sources_[k].path, "unlink", errno);
  }
  res_.source_deleted = true;
}

// Before the first write into OUTDIR (resume, --overwrite and the shard mode included): the
// source is only ever read, so no file the build writes may be a source shard or lead to one.
void Builder::refuse_unsafe_outputs() {
  std::string why;
  for (const std::string& name : output_names()) {
    const std::string r = output_refusal(dir_ + "/" + name, sources_, present_);
    if (!r.empty()) why += (why.empty() ? "" : "; ") + r;
  }
  if (!why.empty()) throw PackOutputUnsafe(dir_, why);
}

void Builder::preflight() {
  const uint64_t have =
      allocated_bytes(dir_ + "/" + kPackExpertsName) + allocated_bytes(dir_ + "/" + kPackDenseName);
  std::vector<bool> freeable(sources_.size());
  for (size_t k = 0; k < sources_.size(); ++k) freeable[k] = present_[k] && undeletable_[k].empty();
  const BuildSpace sp =
      space_needs(plan_.layout, dense_bytes_, sources_, freeable, need_upto_, shard_mode_refused_, have);
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
    const DioAlignment a = o_.hooks.dio_align ? o_.hooks.dio_align() : query_dio_alignment(dir_);
    if (a.reported && a.offset_align == 0) {
      throw Error(dir_ + ": statx(STATX_DIOALIGN) reports that the file system (" + fs_type_name(dir_) +
                  ") does not support O_DIRECT on regular files (offset alignment 0); choose another OUTDIR");
    }
    if (a.reported && (a.offset_align > kPackAlignment || a.mem_align > kPackAlignment)) {
      throw Error(dir_ + ": the file system (" + fs_type_name(dir_) + ") requires O_DIRECT file offsets aligned to " +
                  std::to_string(a.offset_align) + " bytes and buffers aligned to " + std::to_string(a.mem_align) +
                  " bytes (statx STATX_DIOALIGN), but Expert Pack blocks are aligned to " +
                  std::to_string(kPackAlignment) + " bytes; choose an OUTDIR on a file system with " +
                  std::to_string(kPackAlignment) + "-byte (or smaller) direct I/O alignment");
    }
  }
  const std::optional<uint64_t> avail = o_.hooks.free_bytes ? o_.hooks.free_bytes() : free_bytes(dir_);
  if (!avail) {
    rep_.message(dir_ + ": the file system reports no size; free space cannot be checked");
  } else if (shard_mode_) {
    if (*avail < sp.shard_mode_needed + o_.safety_margin_bytes) {
      throw Error(dir_ + ": not enough free space even for the shard-by-shard mode: it needs " +
                  bytes_gib(sp.shard_mode_needed) + " more (peak of pack + source shards still present: " +
                  bytes_gib(sp.shard_mode_peak) + ", of which the shards on this file system already take " +
                  bytes_gib(sp.source_bytes_on_target_fs) + ") plus the safety margin of " +
                  bytes_gib(o_.safety_margin_bytes) + ", but only " + bytes_gib(*avail) + " are free on this file system");
    }
  } else if (*avail < sp.normal_needed + o_.safety_margin_bytes) {
    std::string alt;
    if (sp.shard_mode_helps) {
      alt = "; the shard-by-shard mode (--delete-source-shards, deletes each source shard once its bytes are in "
            "the pack and verified) would need " +
            bytes_gib(sp.shard_mode_needed) + " plus the margin";
    }
    throw Error(dir_ + ": not enough free space: the pack needs " + bytes_gib(sp.normal_needed) + " more (of " +
                bytes_gib(sp.pack_bytes) + ") plus the safety margin of " + bytes_gib(o_.safety_margin_bytes) + ", but only " +
                bytes_gib(*avail) + " are free on this file system" + alt);
  }
  rep_.update(0, true);
}

bool Builder::dense_intact() {
  const std::string p = dir_ + "/" + kPackDenseName;
  if (state_.dense_sha256.empty() || !file_exists(p)) return false;
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != dense_bytes_) return false;
  {
    // Drop the page cache so that the check reads what is on the disk.
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  }
  return to_hex(sha256_file(p)) == state_.dense_sha256;
}

void Builder::write_dense() {
  const std::string p = dir_ + "/" + kPackDenseName;
  rep_.phase("dense", dense_bytes_, p);
  if (dense_intact()) {
    dense_verified_ = true;
    rep_.update(dense_bytes_, true);
    return;
  }
  if (from_plan_ || !model_ || !dense_plan_) {
    throw Error(p + ": missing or damaged, and the source shards it comes from were deleted by this build (" +
                deleted_list() + "); the pack cannot be completed: restore the shards or start over");
  }
  const DenseGgufPlan& dp = *dense_plan_;
  state_.dense_sha256.clear();
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
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
                sources_[s.shard].path);
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
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // check what is on the disk
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

// Source files are hashed by up to two threads, one shard at a time each, in shard order;
// shards whose digest is already known (recorded before their deletion) are skipped.
void Builder::start_source_hashing() {
  if (!o_.hash_sources) return;
  const size_t n_threads = std::min<size_t>(2, sources_.size());
  for (size_t t = 0; t < n_threads; ++t) {
    src_threads_.emplace_back([this] {
      try {
        std::vector<uint8_t> buf(8u << 20);
        for (size_t k = src_next_++; k < sources_.size(); k = src_next_++) {
          {
            std::lock_guard<std::mutex> g(src_m_);
            if (!source_sha256_[k].empty()) continue;
          }
          if (source_fds_[k] < 0) {
            throw Error(sources_[k].path + ": deleted by this build before its SHA-256 was recorded");
          }
          Sha256 h;
          const int fd = source_fds_[k];
          for (uint64_t off = 0; off < sources_[k].bytes;) {
            if (src_stop_.load()) return;
            const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), sources_[k].bytes - off));
            pread_all(fd, buf.data(), n, off, sources_[k].path);
            h.update(buf.data(), n);
            off += n;
          }
          {
            std::lock_guard<std::mutex> g(src_m_);
            source_sha256_[k] = to_hex(h.finish());
          }
          src_cv_.notify_all();
        }
      } catch (...) {
        {
          std::lock_guard<std::mutex> g(src_m_);
          if (!src_error_) src_error_ = std::current_exception();
        }
        src_cv_.notify_all();
      }
    });
  }
}

void Builder::finish_source_hashing() {
  for (std::thread& t : src_threads_)
    if (t.joinable()) t.join();
  std::lock_guard<std::mutex> g(src_m_);
  if (src_error_) std::rethrow_exception(src_error_);
}

// Blocks until shard k's SHA-256 is known ("" when sources are not hashed).
std::string Builder::wait_source_hash(size_t k) {
  if (!o_.hash_sources) return "";
  std::unique_lock<std::mutex> g(src_m_);
  while (source_sha256_[k].empty()) {
    if (src_error_) std::rethrow_exception(src_error_);
    src_cv_.wait_for(g, std::chrono::milliseconds(200));
    g.unlock();
    check_cancel();
    g.lock();
  }
  return source_sha256_[k];
}

// Re-reads experts [verified_upto_, upto) from the disk (page cache dropped first) and checks
// each against the digest computed from the bytes read from the source.
void Builder::verify_on_disk(int rfd, uint64_t upto) {
  const std::string p = dir_ + "/" + kPackExpertsName;
  const PackLayout& L = plan_.layout;
  if (upto <= verified_upto_) return;
  ::posix_fadvise(rfd, 0, 0, POSIX_FADV_DONTNEED);
  std::vector<uint8_t> block(static_cast<size_t>(L.max_stride));
  uint64_t g = 0;
  for (uint32_t l = 0; l < L.layers.size() && g < upto; ++l) {
    const PackLayer& ly = L.layers[l];
    if (g + ly.n_experts <= verified_upto_) {
      g += ly.n_experts;
      continue;
    }
    for (uint32_t e = 0; e < ly.n_experts && g < upto; ++e, ++g) {
      if (g < verified_upto_) continue;
      pread_all(rfd, block.data(), static_cast<size_t>(ly.stride), L.offset(l, e), p);
      if (to_hex(Sha256::of(block.data(), static_cast<size_t>(ly.stride))) != state_.expert_sha256[g]) {
        throw Error(p + ": expert " + std::to_string(e) + " of layer " + std::to_string(l) + " (offset " +
                    std::to_string(L.offset(l, e)) +
                    ") read back from the disk differs from the bytes written; no source shard was deleted");
      }
    }
  }
  verified_upto_ = upto;
}

// Shard mode: deletes every present shard whose experts are all durable (experts_done), after
// the checks of pack_builder.h. Runs on the calling thread between batches.
void Builder::delete_ready_shards(int rfd) {
  if (!shard_mode_) return;
  std::vector<size_t> order;
  for (size_t k = 0; k < sources_.size(); ++k)
    if (present_[k] && need_upto_[k] <= state_.experts_done) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return need_upto_[a] < need_upto_[b]; });
  for (size_t k : order) {
    const SourceId& s = sources_[k];
    if (!dense_verified_) {
      if (!dense_intact()) {
        throw Error(dir_ + "/" + kPackDenseName + ": read back from the disk differs from the bytes written; " +
                    "no source shard was deleted");
      }
      dense_verified_ = true;
    }
    verify_on_disk(rfd, need_upto_[k]);
    const std::string sha = wait_source_hash(k);
    const SourceId now = stat_source(s.path);
    if (now.bytes != s.bytes || now.mtime_ns != s.mtime_ns) {
      throw Error(s.path + ": the source file changed during the build (size or modification time); it was NOT deleted");
    }
    save_state();  // records the shard's SHA-256 before the shard goes
    hook("shard-verified", k);
    if (::unlink(s.path.c_str()) != 0) throw IoError(s.path, "unlink", errno);
    present_[k] = false;
    ::close(source_fds_[k]);  // frees the space
    source_fds_[k] = -1;
    fsync_dir(std::filesystem::path(s.path).parent_path().empty()
                  ? std::string(".")
                  : std::filesystem::path(s.path).parent_path().string());
    res_.shards_deleted.push_back(s.path);
    rep_.message("deleted source shard " + s.path + " (its bytes are in the pack and verified)" +
                 (sha.empty() ? "" : ", SHA-256 " + sha));
    hook("shard-deleted", k);
  }
}

void Builder::write_experts() {
  const PackLayout& L = plan_.layout;
  const std::string p = dir_ + "/" + kPackExpertsName;
  const uint64_t n_exp = L.expert_count();
  int flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
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
  // Every expert still to copy must come from a shard that is still there.
  if (from_plan_ || shard_mode_) {
    uint64_t g = 0;
    for (uint32_t l = 0; l < L.layers.size(); ++l) {
      for (uint32_t e = 0; e < L.layers[l].n_experts; ++e, ++g) {
        if (g < start) continue;
        for (const auto& role : plan_.slices[l]) {
          if (!present_[role[e].shard]) {
            throw Error(p + ": expert " + std::to_string(e) + " of layer " + std::to_string(l) +
                        (start == 0 && state_.experts_done == 0
                             ? std::string(" must be copied again (the file's header does not match the plan)")
                             : " does not match its recorded SHA-256 or was never copied") +
                        ", and its source shard " + sources_[role[e].shard].path +
                        " was deleted by this build; the pack cannot be completed: restore the shard or start over");
          }
        }
      }
    }
  }
  state_.expert_sha256.resize(n_exp);
  state_.experts_done = start;
  verified_upto_ = start;  // verify_prefix re-read them from the disk
  if (start == 0) {
    // Fresh experts.bin: reserve the space (early ENOSPC, contiguous extents; not in shard mode,
    // where the space comes free shard by shard), write the header.
    if (::ftruncate(fd, 0) != 0) throw IoError(p, "ftruncate", errno);
    if (!shard_mode_ && ::fallocate(fd, 0, 0, static_cast<off_t>(L.data_end)) != 0 && errno != EOPNOTSUPP &&
        errno != ENOSYS) {
      throw IoError(p, "fallocate of " + bytes_gib(L.data_end), errno);
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
  if (shard_mode_) {
    if (::fdatasync(fd) != 0) throw IoError(p, "fdatasync", errno);
    delete_ready_shards(rfd);  // shards without experts, or left over by an interrupted run
  }

  // Batches from `start` on, in address order, cut where a shard becomes deletable.
  std::set<uint64_t> cuts;
  if (shard_mode_) {
    for (size_t k = 0; k < sources_.size(); ++k)
      if (present_[k] && need_upto_[k] > start) cuts.insert(need_upto_[k]);
  }
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
        const auto cut = cuts.upper_bound(g);
        if (cut != cuts.end() && *cut < g + (e1 - e0)) e1 = e0 + static_cast<uint32_t>(*cut - g);
        Batch b;
        b.seq = batches.size();
        b.layer = l;
        b.e0 = e0;
        b.e1 = e1;
        b.global0 = g;
        b.offset = L.offset(l, e0);
        b.bytes = static_cast<size_t>((e1 - e0) * ly.stride);
        b.ready_point = cuts.count(g + (e1 - e0)) > 0;
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

  // Pipeline: the calling thread hands batches to `read_threads` readers (several large reads
  // in flight); each filled batch goes to the writer (O_DIRECT), to one of `hash_threads`
  // per-expert hashers, and to the whole-file hasher, which takes batches in address order.
  // A buffer is reused once all three stages are done with it.
  const size_t buf_bytes = static_cast<size_t>(std::max<uint64_t>(o_.batch_bytes, L.max_stride));
  const uint32_t n_read = std::max<uint32_t>(1, o_.read_threads);
  const uint32_t n_hash = std::max<uint32_t>(1, o_.hash_threads);
  const uint32_t nbuf = std::max<uint32_t>(std::max<uint32_t>(2, o_.buffers), n_read + 1);
  std::vector<AlignedBuffer> bufs;
  for (uint32_t k = 0; k < nbuf; ++k) bufs.emplace_back(buf_bytes);

  Queue<uint32_t> free_q;
  for (uint32_t k = 0; k < nbuf; ++k) free_q.push(k);
  Queue<size_t> fill_q, write_q, hash_q, whole_q;
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
  std::vector<std::thread> readers;
  for (uint32_t t = 0; t < n_read; ++t) {
    readers.emplace_back([&] {
      while (auto i = fill_q.pop()) {
        bool ok = !abort;
        try {
          if (ok) fill(batches[*i], bufs[batches[*i].buffer].data());
        } catch (...) {
          ok = false;
          fail(std::current_exception());
        }
        if (ok) {
          write_q.push(*i);
          hash_q.push(*i);
        } else {
          finish_stage(*i, false);
          finish_stage(*i, false);
        }
        whole_q.push(*i);  // in any case: the whole-file hasher waits for every index in order
      }
    });
  }
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
  std::vector<std::thread> hashers;
  for (uint32_t t = 0; t < n_hash; ++t) {
    hashers.emplace_back([&] {
      while (auto i = hash_q.pop()) {
        const Batch& b = batches[*i];
        bool ok = !abort;
        try {
          if (ok) {
            const uint64_t stride = L.layers[b.layer].stride;
            for (uint32_t e = b.e0; e < b.e1; ++e) {
              const uint8_t* blk = bufs[b.buffer].data() + (e - b.e0) * stride;
              state_.expert_sha256[b.global0 + (e - b.e0)] = to_hex(Sha256::of(blk, static_cast<size_t>(stride)));
            }
          }
        } catch (...) {
          ok = false;
          fail(std::current_exception());
        }
        finish_stage(*i, ok);
      }
    });
  }
  std::thread whole_hasher([&] {
    std::set<size_t> ready;
    size_t next = 0;
    bool broken = false;  // a batch was skipped: the rest cannot extend the hash
    while (auto i = whole_q.pop()) {
      ready.insert(*i);
      while (!ready.empty() && *ready.begin() == next) {
        ready.erase(ready.begin());
        const Batch& b = batches[next];
        bool ok = !abort && !broken;
        try {
          if (ok) whole.update(bufs[b.buffer].data(), b.bytes);
        } catch (...) {
          ok = false;
          fail(std::current_exception());
        }
        if (!ok) broken = true;
        finish_stage(next, ok);
        ++next;
      }
    }
    for (size_t i : ready) finish_stage(i, false);
  });

  const auto t0 = Clock::now();
  size_t completed = 0;  // batches [0, completed) are written and hashed
  uint64_t done_bytes = base_done;
  uint64_t checkpoints = 0;
  // Checkpoints are due after the batch that crosses each `checkpoint_bytes` of submitted
  // data (and, in shard mode, after each batch that completes a shard), and record exactly the
  // batches up to it (so their number and content do not depend on thread timing); each is
  // taken as soon as that batch is done.
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
      delete_ready_shards(rfd);
    }
  };
  auto wait_done = [&](size_t upto) {  // shard mode: a deletion point holds the pipeline
    for (;;) {
      advance();
      if (completed >= upto || abort) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  std::exception_ptr main_error;
  try {
    for (size_t i = 0; i < batches.size(); ++i) {
      check_cancel();
      const std::optional<uint32_t> buf = free_q.pop();  // never closed while this loop runs
      if (abort || !buf) break;
      batches[i].buffer = *buf;
      fill_q.push(i);
      submitted_since += batches[i].bytes;
      if (submitted_since >= o_.checkpoint_bytes || batches[i].ready_point) {
        due.push_back(i);
        submitted_since = 0;
      }
      if (batches[i].ready_point) {
        // Delete the shard now, before reading on: its space is what the next shards need.
        wait_done(i + 1);
        if (abort) break;
      }
      advance();
      rep_.update(done_bytes);
      if (!abort) take_due();
    }
  } catch (...) {
    main_error = std::current_exception();
    abort = true;
  }
  fill_q.close();
  for (std::thread& t : readers) t.join();
  write_q.close();
  hash_q.close();
  whole_q.close();
  writer.join();
  for (std::thread& t : hashers) t.join();
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
  delete_ready_shards(rfd);
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
  shard_mode_ = o_.delete_source_shards;

  rep_.phase("plan", 0, o_.source);
  // An interrupted shard-by-shard build whose shards are partly gone continues from its plan.
  const std::optional<json> raw_state = read_state_json(dir_);
  bool persisted = false;
  if (raw_state && raw_state->contains("plan") && (*raw_state)["plan"].is_object()) {
    try {
      persisted = plan_from_state(*raw_state);
    } catch (const json::exception& e) {
      throw FormatError(dir_ + "/" + kStateName, "plan", FormatError::InDocument{}, e.what());
    }
  }
  if (persisted) {
    from_plan_ = true;
    shard_mode_ = true;  // the rest of this build can only go on deleting
    res_.from_persisted_plan = true;
    rep_.message("continuing the shard-by-shard build from its persisted plan; already deleted: " + deleted_list());
  } else {
    try {
      plan_from_model();
    } catch (const Error& e) {
      // A finished pack whose source was deleted by this build (shard mode or after verify).
      if (file_exists(dir_ + "/" + kPackManifestName) && !file_exists(dir_ + "/" + kStateName)) {
        std::optional<PackManifest> old;
        try {
          old = read_manifest(dir_ + "/" + kPackManifestName);
        } catch (const Error&) {
        }
        bool mine = false;
        if (old) {
          for (const PackSourceFile& s : old->sources) mine = mine || same_path(s.path, o_.source);
        }
        if (mine) {
          res_.already_complete = true;
          res_.experts_bytes = old->experts.bytes;
          res_.dense_bytes = old->dense.bytes;
          res_.source_deleted = true;
          res_.seconds = seconds_since(t0);
          rep_.phase("done", 0, dir_ + " already holds the finished pack of this source (the source is deleted)");
          return res_;
        }
      }
      if (file_exists(dir_ + "/" + kStateName) || file_exists(dir_ + "/" + kPackExpertsName)) {
        throw Error(std::string(e.what()) + "; " + dir_ +
                    " holds an interrupted build but no persisted build plan (build-state.json has no \"plan\": "
                    "only --delete-source-shards writes one, before it deletes any shard), so the build cannot "
                    "go on without that file: restore it from the original download");
      }
      throw;
    }
  }
  need_upto_ = shard_need_upto(plan_, sources_.size());
  check_deletable();
  hook("plan");

  // OUTDIR and the parents make_dirs creates for it, deepest first: a refusal before the first
  // write (the pre-flight's, a busy or occupied folder) removes them again.
  struct MadeDirs {
    std::vector<std::string> dirs;
    bool keep = false;
    ~MadeDirs() {
      if (keep) return;
      for (const std::string& d : dirs) {
        if (::rmdir(d.c_str()) != 0) break;  // not empty (or not ours): leave it and its parents
      }
    }
  } made;
  {
    std::error_code ec;
    for (std::filesystem::path p = std::filesystem::path(dir_).lexically_normal();
         !p.empty() && p.has_relative_path() && !std::filesystem::exists(p, ec) && !ec; p = p.parent_path()) {
      std::string s = p.string();
      while (s.size() > 1 && s.back() == '/') s.pop_back();
      made.dirs.push_back(s);
      p = s;
    }
  }
  make_dirs(dir_);
  try {
    lock_dir();
  } catch (...) {
    made.keep = true;  // another build holds OUTDIR (it may have made it): never ours to remove
    throw;
  }
  const std::string mpath = dir_ + "/" + kPackManifestName;
  bool replaces_pack = false;
  if (o_.keep_other_builds && !file_exists(mpath) && raw_state && raw_state->is_object() &&
      raw_state->value("plan_id", json()) != json(plan_id_)) {
    throw PackDirBuildingOther(dir_);
  }
  // Before the first write (a state file removed, a pack replaced, ...), and before OUTDIR's
  // manifest is read: a source named manifest.json in OUTDIR is named as the source, not taken
  // for a finished pack.
  refuse_unsafe_outputs();
  if (file_exists(mpath)) {
    std::optional<PackManifest> old;
    try {
      old = read_manifest(mpath);
    } catch (const Error&) {
    }
    const bool same_plan = old && old->build.contains("plan_id") && old->build["plan_id"].is_string() &&
                           old->build["plan_id"].get<std::string>() == plan_id_;
    // This source's pack whose data files are gone or cut: built again, not called complete.
    const auto whole = [&](const PackFileEntry& f) {
      struct stat st{};
      return ::stat((dir_ + "/" + f.file).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
             static_cast<uint64_t>(st.st_size) == f.bytes;
    };
    if (same_plan && whole(old->experts) && whole(old->dense)) {
      res_.already_complete = true;
      made.keep = true;
      remove_durably(dir_, kStateName);
      res_.experts_bytes = old->experts.bytes;
      res_.dense_bytes = old->dense.bytes;
      // A run whose deletion of the source was cancelled (or interrupted) deletes it now.
      if (o_.delete_source_after_verify) verify_then_delete_source(old->experts.bytes + old->dense.bytes);
      res_.seconds = seconds_since(t0);
      rep_.phase("done", 0, dir_ + " already holds the finished pack of this source");
      return res_;
    }
    if (same_plan) {
      rep_.phase("plan", 0, dir_ + " holds this source's pack with " + old->experts.file + " or " + old->dense.file +
                                 " missing or of another size: building it again");
    } else if (!o_.overwrite) {
      throw PackDirOccupied(dir_, old && !old->sources.empty() ? old->sources.front().path : std::string());
    }
    replaces_pack = true;  // its manifest goes once the pre-flight passes, before the first write
  }
  if (auto s = load_state(dir_, plan_id_)) {
    state_ = *s;
    build_id_ = parse_build_id(state_.build_id);
  } else {
    if (persisted)
      throw FormatError(dir_ + "/" + kStateName, "(root)", FormatError::InDocument{},
                        "unreadable build state");
    remove_durably(dir_, kStateName);
    build_id_ = random_build_id();
    state_ = {};
    state_.plan_id = plan_id_;
    state_.build_id = build_id_hex(build_id_);
  }
  // Digests of shards recorded before their deletion (shard mode) stay known.
  source_sha256_ = state_.source_sha256;
  source_sha256_.resize(sources_.size());
  if (!from_plan_) {
    dense_plan_ = plan_dense_gguf(*model_, plan_.dense_tensors, state_.build_id);
    dense_bytes_ = dense_plan_->file_bytes;
  }

  rep_.phase("preflight", 0, dir_);
  preflight();
  made.keep = true;                                            // from here on the build writes into OUTDIR
  if (replaces_pack) remove_durably(dir_, kPackManifestName);  // from here on the old pack no longer loads
  hook("preflight");

  if (shard_mode_) {
    // The plan is durable before anything can be deleted (shard 1 carries the metadata).
    state_.plan = persisted_plan();
    save_state();
    hook("plan-saved");
  } else {
    state_.plan = nullptr;
  }
  start_source_hashing();
  struct SrcStopper {
    Builder* b;
    ~SrcStopper() {
      b->src_stop_ = true;
      for (std::thread& t : b->src_threads_)
        if (t.joinable()) t.join();
    }
  } src_stopper{this};
  write_dense();
  if (shard_mode_) {
    // Nothing reads the source through the GgufModel any more (experts come through
    // source_fds_, which delete_ready_shards closes): close its fds now, so that unlinking a
    // shard frees its blocks at once. dense_tensors points into the model: dropped with it.
    dense_plan_.reset();
    plan_.dense_tensors.clear();
    model_.reset();
  }
  hook("dense");
  write_experts();
  hook("experts");

  rep_.phase("finalize", 0, "hashing sources, writing the manifest");
  finish_source_hashing();
  hook("sources");
  for (size_t k = 0; k < sources_.size(); ++k) {
    if (!present_[k]) continue;  // checked right before its deletion
    const SourceId& s = sources_[k];
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
  m.model = model_json_;
  for (size_t k = 0; k < sources_.size(); ++k) {
    m.sources.push_back({sources_[k].path, sources_[k].bytes,
                         source_sha256_[k].empty() ? std::string(64, '0') : source_sha256_[k]});
  }
  m.dense = {kPackDenseName, dense_bytes_, state_.dense_sha256};
  m.dense_tensors = dense_count_;
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
             {"delete_source_shards", shard_mode_},
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
  res_.dense_bytes = dense_bytes_;

  if (o_.delete_source_after_verify) verify_then_delete_source(plan_.layout.data_end + dense_bytes_);
  if (shard_mode_) res_.source_deleted = std::none_of(present_.begin(), present_.end(), [](bool b) { return b; });
  res_.seconds = seconds_since(t0);
  rep_.phase("done", 0, dir_);
  hook("done");
  return res_;
}

}  // namespace

bool is_ollama_blob(const std::string& path) {
  const std::filesystem::path p(path);
  return p.parent_path().filename() == "blobs" && p.filename().string().rfind("sha256-", 0) == 0;
}

DioAlignment query_dio_alignment(const std::string& dir) {
  DioAlignment a;
  const std::string probe = dir + "/" + kDioAlignProbeName;
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw IoError(probe, "create (STATX_DIOALIGN probe)", errno);
  struct statx sx {};
  const int rc = ::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx);
  const int err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (rc != 0) {
    if (err == ENOSYS || err == EINVAL) return a;  // kernel without statx or without the flag
    throw IoError(probe, "statx", err);
  }
  if ((sx.stx_mask & STATX_DIOALIGN) == 0) return a;  // kernel < 6.1 or file system does not say
  a.reported = true;
  a.mem_align = sx.stx_dio_mem_align;
  a.offset_align = sx.stx_dio_offset_align;
  return a;
}

BuildSpace estimate_build_space(const GgufModel& model, const std::string& out_dir) {
  const PackPlan plan = plan_pack(model);
  const DenseGgufPlan dense = plan_dense_gguf(model, plan.dense_tensors, std::string(32, '0'));
  std::vector<SourceId> sources;
  for (const GgufFile& f : model.shards()) sources.push_back(stat_source(f.path()));
  const bool from_ollama = model.origin().rfind("ollama ", 0) == 0;
  const uint64_t target_dev = device_of(out_dir);
  std::vector<bool> freeable(sources.size());
  std::string refused;
  for (size_t k = 0; k < sources.size(); ++k) {
    const std::string why = shard_delete_refusal(sources[k].path, from_ollama, target_dev, {});
    freeable[k] = why.empty();
    if (!why.empty()) refused += (refused.empty() ? "" : "; ") + sources[k].path + ": " + why;
  }
  const uint64_t have =
      allocated_bytes(out_dir + "/" + kPackExpertsName) + allocated_bytes(out_dir + "/" + kPackDenseName);
  return space_needs(plan.layout, dense.file_bytes, sources, freeable, shard_need_upto(plan, sources.size()),
                     refused, have);
}

BuildResult build_pack(const BuildOptions& options) {
  Builder b(options);
  return b.run();
}

bool same_source_file(const std::string& a, const std::string& b) {
  std::error_code eq;  // the same file through a symbolic link is the same source
  return same_path(a, b) || std::filesystem::equivalent(a, b, eq);
}

std::optional<FinishedPack> find_finished_pack(const std::string& packs_folder, const std::string& source) {
  namespace fs = std::filesystem;
  try {
    std::vector<SourceId> want;
    try {
      const GgufModel model = GgufModel::open(source);
      for (const GgufFile& f : model.shards()) {
        std::error_code ec;
        const fs::path abs = fs::absolute(f.path(), ec);
        want.push_back(stat_source(ec ? f.path() : abs.string()));
      }
    } catch (const Error&) {
      return std::nullopt;
    }
    std::error_code ec;
    std::vector<fs::path> dirs;
    fs::directory_iterator it(packs_folder, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code dec;
      if (it->is_directory(dec)) dirs.push_back(it->path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) {
      const std::string dir = d.string();
      if (!file_exists(dir + "/" + kPackManifestName) || file_exists(dir + "/" + kStateName)) continue;
      PackManifest m;
      try {
        m = read_manifest(dir + "/" + kPackManifestName);
      } catch (const Error&) {
        continue;
      }
      if (m.sources.size() != want.size() || m.sources.empty()) continue;
      const bool same = std::all_of(want.begin(), want.end(), [&](const SourceId& w) {
        return std::any_of(m.sources.begin(), m.sources.end(), [&](const PackSourceFile& s) {
          return s.bytes == w.bytes && same_source_file(s.path, w.path);
        });
      });
      if (same) return FinishedPack{dir, m.sources.front().path};
    }
  } catch (const std::exception&) {  // a file system error while looking: no match
  }
  return std::nullopt;
}

}  // namespace moepack
