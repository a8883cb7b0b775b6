// Twin pack writer (twin_pack.h).
#include "bench/twin_pack.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/aligned_buffer.h"
#include "core/build_stamp.h"
#include "core/durable_io.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/fp16.h"
#include "core/gguf.h"
#include "core/pack_manifest.h"
#include "core/quants.h"
#include "core/sha256.h"
#include "core/thread_pool.h"

namespace moepack::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// xoshiro256** (Blackman & Vigna, https://prng.di.unimi.it/), seeded through splitmix64.
struct Xoshiro {
  uint64_t s[4];
  explicit Xoshiro(uint64_t seed) {
    for (uint64_t& v : s) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      v = z ^ (z >> 31);
    }
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t r = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
  }
};

void fill_random(Xoshiro& rng, uint8_t* p, uint64_t n) {
  uint64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const uint64_t v = rng.next();
    std::memcpy(p + k, &v, 8);
  }
  if (k < n) {
    const uint64_t v = rng.next();
    std::memcpy(p + k, &v, static_cast<size_t>(n - k));
  }
}

// A positive fp16 in [2^-13, 2^-11): exponent field 2 or 3 below -11 (bias 15), random mantissa.
uint16_t small_half(uint64_t r) {
  const uint16_t exp = static_cast<uint16_t>(15 - 13 + (r & 1));  // 2^-13 or 2^-12
  return static_cast<uint16_t>((exp << 10) | ((r >> 1) & 0x3ff));
}

void put_half(uint8_t* p, uint16_t h) { std::memcpy(p, &h, 2); }

// Makes every quant block of one role's bytes valid (see twin_pack.h).
void fix_scales(GgmlType type, uint8_t* p, uint64_t bytes, Xoshiro& rng) {
  switch (type) {
    case GgmlType::MXFP4:
      for (uint64_t b = 0; b < bytes; b += sizeof(BlockMXFP4)) p[b] = static_cast<uint8_t>(118 + (p[b] & 3));
      return;
    case GgmlType::Q2_K:
      for (uint64_t b = 0; b < bytes; b += sizeof(BlockQ2_K)) {
        const uint64_t r = rng.next();
        put_half(p + b + offsetof(BlockQ2_K, d), small_half(r));
        put_half(p + b + offsetof(BlockQ2_K, dmin), small_half(r >> 16));
      }
      return;
    case GgmlType::Q3_K:
      for (uint64_t b = 0; b < bytes; b += sizeof(BlockQ3_K)) put_half(p + b + offsetof(BlockQ3_K, d), small_half(rng.next()));
      return;
    case GgmlType::Q4_K:
      for (uint64_t b = 0; b < bytes; b += sizeof(BlockQ4_K)) {
        const uint64_t r = rng.next();
        put_half(p + b + offsetof(BlockQ4_K, d), small_half(r));
        put_half(p + b + offsetof(BlockQ4_K, dmin), small_half(r >> 16));
      }
      return;
    default:
      throw Error("twin: no generator for quant type " + std::string(ggml_type_name(type)));
  }
}

// GGUF v3 (core/gguf.h) with metadata only: magic, version, n_tensors = 0, n_kv, then the
// key/value records; padded with zeros to the default alignment of 32.
class GgufMetaWriter {
 public:
  void str(const std::string& key, const std::string& v) {
    key_(key);
    u32_(8);  // GGUF_TYPE_STRING
    u64_(v.size());
    bytes_.insert(bytes_.end(), v.begin(), v.end());
    ++n_;
  }
  void u32(const std::string& key, uint32_t v) {
    key_(key);
    u32_(4);  // GGUF_TYPE_UINT32
    u32_(v);
    ++n_;
  }
  void u64(const std::string& key, uint64_t v) {
    key_(key);
    u32_(10);  // GGUF_TYPE_UINT64
    u64_(v);
    ++n_;
  }
  std::string finish() const {
    std::string out = "GGUF";
    auto le = [&](uint64_t v, int n) {
      for (int k = 0; k < n; ++k) out += static_cast<char>((v >> (8 * k)) & 0xff);
    };
    le(3, 4);
    le(0, 8);
    le(n_, 8);
    out.append(bytes_.begin(), bytes_.end());
    while (out.size() % 32 != 0) out += '\0';
    return out;
  }

 private:
  void key_(const std::string& k) {
    u64_(k.size());
    bytes_.insert(bytes_.end(), k.begin(), k.end());
  }
  void u32_(uint32_t v) {
    for (int k = 0; k < 4; ++k) bytes_.push_back(static_cast<uint8_t>(v >> (8 * k)));
  }
  void u64_(uint64_t v) {
    for (int k = 0; k < 8; ++k) bytes_.push_back(static_cast<uint8_t>(v >> (8 * k)));
  }
  std::vector<uint8_t> bytes_;
  uint64_t n_ = 0;
};

class Reporter {
 public:
  explicit Reporter(const std::function<void(const TwinProgress&)>& cb) : cb_(cb) {}
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
  const std::function<void(const TwinProgress&)>& cb_;
  TwinProgress p_;
  Clock::time_point start_{}, last_{};
};

}  // namespace

uint32_t twin_first_moe_block(const TwinShape& shape) {
  if (shape.name == "deepseek-v3") return 3;  // first_k_dense_replace = 3
  if (shape.name == "kimi-k3") return 1;      // one leading dense layer, as Kimi-Linear
  return 0;                                   // deepseek-v4-flash: every layer routes
}

PackLayout twin_layout(const TwinShape& s, uint32_t layers, uint32_t experts) {
  if (layers == 0 || layers > s.moe_layers) {
    throw Error("twin " + std::string(s.name) + ": --layers " + std::to_string(layers) + " is outside 1.." +
                std::to_string(s.moe_layers));
  }
  if (experts < s.top_k || experts > s.n_expert) {
    throw Error("twin " + std::string(s.name) + ": --experts " + std::to_string(experts) + " is outside " +
                std::to_string(s.top_k) + ".." + std::to_string(s.n_expert) + " (top-k .. the model's count)");
  }
  PackLayout L;
  const uint32_t first = twin_first_moe_block(s);
  for (uint32_t l = 0; l < layers; ++l) {
    PackLayer ly;
    ly.block = first + l;
    ly.n_experts = experts;
    const std::string blk = "blk." + std::to_string(ly.block) + ".";
    auto role = [&](const char* name, const char* tensor, GgmlType t, uint64_t ne0, uint64_t ne1) {
      PackRole r;
      r.role = name;
      r.tensor = blk + tensor;
      r.type = t;
      r.n_dims = 2;
      r.ne = {ne0, ne1, 1, 1};
      r.bytes = ggml_row_bytes(t, ne0).value() * ne1;
      ly.roles.push_back(r);
    };
    role("gate", "ffn_gate_exps.weight", s.gate, s.n_embd, s.n_ff);
    role("up", "ffn_up_exps.weight", s.up, s.n_embd, s.n_ff);
    role("down", "ffn_down_exps.weight", s.down, s.n_ff, s.n_embd);
    L.layers.push_back(std::move(ly));
  }
  compute_pack_layout(L);
  return L;
}

void fill_twin_block(const PackLayer& layer, uint64_t seed, uint32_t l, uint32_t e, uint8_t* dst) {
  Xoshiro rng(seed ^ (static_cast<uint64_t>(l) << 40) ^ (static_cast<uint64_t>(e) << 8) ^ 0x7477696eull);
  uint64_t at = 0;
  for (const PackRole& r : layer.roles) {
    if (r.offset > at) std::memset(dst + at, 0, static_cast<size_t>(r.offset - at));
    fill_random(rng, dst + r.offset, r.bytes);
    fix_scales(r.type, dst + r.offset, r.bytes, rng);
    at = r.offset + r.bytes;
  }
  if (layer.stride > at) std::memset(dst + at, 0, static_cast<size_t>(layer.stride - at));
}

TwinResult write_twin_pack(const TwinOptions& o) {
  const auto t0 = Clock::now();
  const TwinShape* shape = find_twin_shape(o.shape);
  if (!shape) {
    std::string names;
    for (const TwinShape& s : twin_shapes()) names += (names.empty() ? "" : ", ") + std::string(s.name);
    throw Error("twin: unknown shape \"" + o.shape + "\" (known: " + names + ")");
  }
  const uint32_t layers = o.layers ? o.layers : shape->moe_layers;
  const uint32_t experts = o.experts ? o.experts : shape->n_expert;
  PackLayout L = twin_layout(*shape, layers, experts);
  std::string dir = o.out_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) throw Error("twin: no output directory");
  Reporter rep(o.on_progress);
  TwinResult res;
  res.pack_dir = dir;
  res.expert_count = L.expert_count();

  make_dirs(dir);
  const std::string mpath = dir + "/" + kPackManifestName;
  if (!o.overwrite) {
    if (file_exists(mpath))
      throw Error(dir + " already holds a finished Expert Pack; choose another output directory or pass --overwrite");
    // No manifest: an interrupted `moepack build` (possibly the only copy of deleted shards) must
    // not be truncated. Only the leftovers of an interrupted twin run (dense.gguf whose
    // architecture is moepack-twin, no build-state.json) are rewritten without --overwrite.
    const std::string state = dir + "/" + kTwinBuildStateName;
    if (file_exists(state))
      throw Error(state + " exists: " + dir +
                  " holds an interrupted `moepack build` (resume it with the same build command); choose another "
                  "output directory or pass --overwrite to discard it");
    const std::string dpath = dir + "/" + kPackDenseName;
    const std::string epath = dir + "/" + kPackExpertsName;
    const bool has_dense = file_exists(dpath);
    if (has_dense || file_exists(epath)) {
      bool twin_leftover = false;
      if (has_dense) {
        try {
          twin_leftover = GgufFile::open(dpath).get_string("general.architecture") == std::string(kTwinArchitecture);
        } catch (const std::exception&) {
          twin_leftover = false;
        }
      }
      if (!twin_leftover) {
        const std::string& named = has_dense ? dpath : epath;
        throw Error(named + " exists and is not part of a twin: " + dir +
                    " holds an unfinished Expert Pack without a manifest; choose another output directory or pass "
                    "--overwrite to discard it");
      }
    }
  } else {
    // From here on the old pack no longer opens, and a build can no longer resume from it.
    if (file_exists(mpath)) remove_durably(dir, kPackManifestName);
    if (file_exists(dir + "/" + kTwinBuildStateName)) remove_durably(dir, kTwinBuildStateName);
  }

  // The twin's canonical description: the identity recorded as its "source".
  json twin = {{"shape", shape->name},
               {"seed", o.seed},
               {"layers", layers},
               {"experts", experts},
               {"full_layers", shape->moe_layers},
               {"full_experts", shape->n_expert},
               {"top_k", shape->top_k},
               {"n_embd", shape->n_embd},
               {"n_ff", shape->n_ff},
               {"types",
                {{"gate", ggml_type_name(shape->gate)},
                 {"up", ggml_type_name(shape->up)},
                 {"down", ggml_type_name(shape->down)}}},
               {"expert_bytes", twin_expert_bytes(*shape)},
               {"first_moe_block", twin_first_moe_block(*shape)}};
  const std::string twin_text = twin.dump();

  const PackBuildId build_id = random_build_id();
  const std::string build_hex = build_id_hex(build_id);
  GgufMetaWriter g;
  g.str("general.architecture", kTwinArchitecture);
  g.str("general.name", "synthetic twin of " + std::string(shape->name) +
                            " (routed experts only, no dense weights: not a model; use moepack bench-twin)");
  g.str("moepack.twin.shape", std::string(shape->name));
  g.u64("moepack.twin.seed", o.seed);
  g.u32("moepack-twin.block_count", twin_first_moe_block(*shape) + layers);
  g.u32("moepack-twin.expert_count", experts);
  g.u32("moepack-twin.expert_used_count", shape->top_k);
  g.u32("moepack-twin.embedding_length", static_cast<uint32_t>(shape->n_embd));
  g.u32("moepack-twin.expert_feed_forward_length", static_cast<uint32_t>(shape->n_ff));
  g.str(kPackDenseBuildIdKey, build_hex);
  const std::string dense = g.finish();

  // Pre-flight: O_DIRECT first (a pack without it is useless), then free space.
  rep.phase("preflight", 0, dir);
  if (o.direct_io) {
    if (const int e = probe_direct_io(dir)) {
      throw Error(dir + ": the file system (" + fs_type_name(dir) +
                  ") does not support O_DIRECT writes of 4096-byte aligned blocks (" + std::strerror(e) +
                  "); packs are read with O_DIRECT, so choose an OUTDIR on ext4, xfs or btrfs");
    }
  }
  const uint64_t total = L.data_end + dense.size() + 2 * (100 * res.expert_count + (64u << 10));
  const uint64_t have =
      allocated_bytes(dir + "/" + kPackExpertsName) + allocated_bytes(dir + "/" + kPackDenseName);
  const uint64_t needed = total > have ? total - have : 0;
  const std::optional<uint64_t> avail = o.free_bytes_hook ? o.free_bytes_hook() : free_bytes(dir);
  if (avail && *avail < needed + o.safety_margin_bytes) {
    throw Error(dir + ": not enough free space: the twin needs " + bytes_gib(needed) + " more (of " + bytes_gib(total) +
                ") plus the safety margin of " + bytes_gib(o.safety_margin_bytes) + ", but only " + bytes_gib(*avail) +
                " are free on this file system; use --layers / --experts to shrink it");
  }

  rep.phase("dense", dense.size(), dir + "/" + kPackDenseName);
  write_file_atomic(dir, kPackDenseName, dense);
  const std::string dense_sha = to_hex(Sha256::of(dense.data(), dense.size()));
  rep.update(dense.size(), true);

  // experts.bin: header, then batches of consecutive experts of one layer. Generation and the
  // per-expert SHA-256 run in parallel over the batch's experts; the O_DIRECT write and the
  // whole-file SHA-256 of a batch overlap the generation of the next (two buffers).
  const std::string epath = dir + "/" + kPackExpertsName;
  int flags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC;
  if (o.direct_io) flags |= O_DIRECT;
  const int fd = ::open(epath.c_str(), flags, 0644);
  if (fd < 0) throw IoError(epath, "open", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fallocate(fd, 0, 0, static_cast<off_t>(L.data_end)) != 0 && errno != EOPNOTSUPP && errno != ENOSYS)
    throw IoError(epath, "fallocate of " + bytes_gib(L.data_end), errno);
  Sha256 whole;
  {
    const std::vector<uint8_t> header = encode_pack_header(L, build_id);
    AlignedBuffer hb(header.size());
    std::memcpy(hb.data(), header.data(), header.size());
    pwrite_all(fd, hb.data(), header.size(), 0, epath);
    whole.update(header.data(), header.size());
  }
  rep.phase("experts", L.data_end - L.data_start, epath);
  const size_t buf_bytes = static_cast<size_t>(std::max<uint64_t>(o.batch_bytes, L.max_stride));
  AlignedBuffer bufs[2] = {AlignedBuffer(buf_bytes), AlignedBuffer(buf_bytes)};
  std::future<void> jobs[2];
  ThreadPool pool(o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::vector<std::string>> hashes(L.layers.size());
  uint64_t done = 0;
  int cur = 0;
  for (uint32_t l = 0; l < L.layers.size(); ++l) {
    const PackLayer& ly = L.layers[l];
    hashes[l].resize(ly.n_experts);
    const uint32_t per = static_cast<uint32_t>(std::max<uint64_t>(1, buf_bytes / ly.stride));
    for (uint32_t e0 = 0; e0 < ly.n_experts; e0 += per) {
      if (o.cancel && o.cancel->load()) {
        for (auto& j : jobs)
          if (j.valid()) j.wait();
        throw Error(dir + ": twin cancelled (no manifest written: the directory is not a pack; run again)");
      }
      const uint32_t e1 = std::min(ly.n_experts, e0 + per);
      if (jobs[cur].valid()) jobs[cur].get();  // the buffer's previous write is done
      uint8_t* buf = bufs[cur].data();
      pool.parallel_for(e1 - e0, 1, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) {
          uint8_t* blk = buf + static_cast<size_t>(i) * ly.stride;
          const uint32_t e = e0 + static_cast<uint32_t>(i);
          fill_twin_block(ly, o.seed, l, e, blk);
          hashes[l][e] = to_hex(Sha256::of(blk, static_cast<size_t>(ly.stride)));
        }
      });
      const uint64_t off = L.offset(l, e0);
      const size_t n = static_cast<size_t>((e1 - e0) * ly.stride);
      // Batches are written in order: wait for the other buffer's write (and hash) first.
      if (jobs[cur ^ 1].valid()) jobs[cur ^ 1].get();
      jobs[cur] = std::async(std::launch::async, [&, buf, off, n] {
        auto w = std::async(std::launch::async, [&] { pwrite_all(fd, buf, n, off, epath); });
        whole.update(buf, n);
        w.get();
      });
      done += n;
      rep.update(done);
      cur ^= 1;
    }
  }
  for (auto& j : jobs)
    if (j.valid()) j.get();
  if (::fdatasync(fd) != 0) throw IoError(epath, "fdatasync", errno);
  rep.update(done, true);

  rep.phase("finalize", 0, "writing the manifest");
  PackManifest m;
  m.build_id = build_hex;
  m.tool = o.tool_version;
  m.model = {{"architecture", kTwinArchitecture},
             {"name", "synthetic twin of " + std::string(shape->name)},
             {"expert_count", experts},
             {"expert_used_count", shape->top_k},
             {"expert_shared_count", 0},
             {"twin", twin}};
  m.sources.push_back({"twin:" + std::string(shape->name), twin_text.size(),
                       to_hex(Sha256::of(twin_text.data(), twin_text.size()))});
  m.dense = {kPackDenseName, dense.size(), dense_sha};
  m.dense_tensors = 0;
  m.experts = {kPackExpertsName, L.data_end, to_hex(whole.finish())};
  m.layout = L;
  m.expert_sha256 = std::move(hashes);
  m.build = {{"twin", true},
             {"finished_utc", utc_now()},
             {"direct_io", o.direct_io},
             {"seed", o.seed},
             {"seconds_last_run", std::chrono::duration<double>(Clock::now() - t0).count()}};
  const std::string text = manifest_to_json(m).dump(1) + "\n";
  manifest_from_json(json::parse(text), mpath);  // never write a manifest the reader rejects
  write_file_atomic(dir, kPackManifestName, text);
  res.experts_bytes = L.data_end;
  res.dense_bytes = dense.size();
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  rep.phase("done", 0, dir);
  return res;
}

}  // namespace moepack::bench
