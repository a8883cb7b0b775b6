// bench-twin on the CPU (twin_bench.h).
#include "bench/twin_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <unordered_map>

#include "bench/machine_info.h"
#include "bench/twin_pack.h"
#include "core/aligned_buffer.h"
#include "core/cpu_moe.h"
#include "core/cpu_ops.h"
#include "core/error.h"
#include "core/expert_cache.h"
#include "core/expert_store.h"
#include "core/thread_pool.h"

namespace moepack::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

WeightView view_of(const PackRole& r, const uint8_t* block) {
  WeightView w;
  w.type = r.type;
  w.ne0 = static_cast<int64_t>(r.ne[0]);
  w.ne1 = static_cast<int64_t>(r.ne[1]);
  w.row_bytes = static_cast<size_t>(r.bytes / r.ne[1]);
  w.data = block + r.offset;
  return w;
}

// The expert FFN of one layer on one hidden vector (twin_bench.h).
class CpuExpertCompute {
 public:
  CpuExpertCompute(const TwinInfo& t, uint32_t threads, uint64_t seed)
      : pool_(threads ? threads : std::max(1u, std::thread::hardware_concurrency())),
        E_(static_cast<int64_t>(t.shape->n_embd)),
        ff_(static_cast<int64_t>(t.shape->n_ff)),
        scale_(1.0f / static_cast<float>(t.top_k)),
        x0_(static_cast<size_t>(E_)),
        x_(x0_.size()),
        y_(x0_.size()),
        g_(static_cast<size_t>(ff_)),
        u_(g_.size()) {
    std::mt19937_64 rng(seed ^ 0x68696464656eull);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (float& v : x0_) v = n(rng);
  }
  void begin_step() { x_ = x0_; }
  void begin_layer() { std::fill(y_.begin(), y_.end(), 0.0f); }
  void expert(const PackLayer& ly, const uint8_t* block) {
    const WeightView gate = view_of(ly.roles[0], block), up = view_of(ly.roles[1], block),
                     down = view_of(ly.roles[2], block);
    matmul(pool_, gate, x_.data(), E_, 1, g_.data(), ff_);
    matmul(pool_, up, x_.data(), E_, 1, u_.data(), ff_);
    swiglu_clamped(g_.data(), u_.data(), ff_, 0.0f);
    matmul_add_scaled(pool_, down, g_.data(), ff_, 1, &scale_, y_.data(), E_);
  }
  // Ends a layer: throws on a non-finite output; x = rms_norm(x + y).
  void end_layer(uint32_t l) {
    for (int64_t i = 0; i < E_; ++i) {
      if (!std::isfinite(y_[static_cast<size_t>(i)]))
        throw Error("bench-twin: layer " + std::to_string(l) + " produced a non-finite output (element " +
                    std::to_string(i) + "): the twin's expert blocks are not valid quantized data");
      x_[static_cast<size_t>(i)] += y_[static_cast<size_t>(i)];
    }
    rms_norm(x_.data(), nullptr, E_, 1e-6f, x_.data());
  }
  double x_checksum() const { return twin_checksum(x_.data(), E_); }

 private:
  ThreadPool pool_;
  int64_t E_, ff_;
  float scale_;
  std::vector<float> x0_, x_, y_, g_, u_;
};

// The overlapped schedule's delivery: ExpertCache + DirectReader + 4096-aligned host slots
// (the pieces ExpertStore composes), with reads completing while the CPU computes.
class OverlapDelivery {
 public:
  struct Item {
    uint32_t layer = 0;
    std::vector<uint32_t> experts;
    std::vector<uint32_t> slot;
    std::vector<ReadRequest> deferred;
  };

  OverlapDelivery(const ExpertPack& pack, const TwinBenchOptions& o, uint32_t top_k)
      : pack_(pack),
        slot_bytes_(pack.layout().max_stride),
        cache_(cache_slots_for_budget(o.budget_bytes, ~0ull, 0, slot_bytes_, top_k), make_policy(o.policy)),
        reader_(pack.experts_path(), o.reader),
        slots_(static_cast<size_t>(slot_bytes_) * cache_.slot_count(), kPackAlignment),
        ready_(cache_.slot_count(), true) {}

  uint32_t slot_count() const { return cache_.slot_count(); }
  const ExpertCache& cache() const { return cache_; }
  uint64_t read_bytes() const { return reader_.counters().pack_read_bytes.load(); }
  uint64_t issued_bytes() const { return issued_bytes_; }
  const uint8_t* slot(uint32_t s) const { return slots_.data() + s * slot_bytes_; }

  // Acquires the item's experts; submits their reads except into slots in `busy` (deferred).
  void prepare(Item& it, const std::vector<uint32_t>& busy) {
    const uint64_t stride = pack_.stride(it.layer);
    const auto as = cache_.acquire(it.layer, it.experts);
    it.slot.clear();
    for (const SlotAssignment& a : as) {
      it.slot.push_back(a.slot);
      if (a.hit) continue;
      const ReadRequest r{pack_.expert_offset(it.layer, a.expert), stride, slots_.data() + a.slot * slot_bytes_,
                          next_tag_};
      tag_slot_[next_tag_++] = a.slot;
      issued_bytes_ += stride;
      // A slot still read by the layer being computed keeps its ready flag until the read
      // into it is submitted (after that layer).
      if (std::find(busy.begin(), busy.end(), a.slot) != busy.end()) {
        it.deferred.push_back(r);
      } else {
        ready_[a.slot] = false;
        reader_.submit(r);
      }
    }
  }
  void submit_deferred(Item& it) {
    for (const ReadRequest& r : it.deferred) {
      ready_[tag_slot_.at(r.tag)] = false;
      reader_.submit(r);
    }
    it.deferred.clear();
  }
  bool ready(uint32_t s) const { return ready_[s]; }
  // Blocks until at least one more read has completed.
  void wait_one() {
    const std::vector<uint64_t> tags = reader_.wait_some();
    if (tags.empty()) throw Error("bench-twin: internal: waiting for a read that was never submitted");
    for (uint64_t t : tags) {
      ready_[tag_slot_.at(t)] = true;
      tag_slot_.erase(t);
    }
  }
  void end_step() { cache_.end_step(); }

 private:
  const ExpertPack& pack_;
  uint64_t slot_bytes_;
  ExpertCache cache_;
  DirectReader reader_;
  AlignedBuffer slots_;
  std::vector<bool> ready_;
  std::unordered_map<uint64_t, uint32_t> tag_slot_;
  uint64_t next_tag_ = 1;
  uint64_t issued_bytes_ = 0;
};

json totals_json(const TwinTotals& t) {
  const double tps = t.wall_s > 0 ? static_cast<double>(t.steps) / t.wall_s : 0;
  return {{"steps", t.steps},
          {"selections", t.selections},
          {"hits", t.hits},
          {"misses", t.misses},
          {"evictions", t.evictions},
          {"hit_rate", t.hits + t.misses ? static_cast<double>(t.hits) / static_cast<double>(t.hits + t.misses) : 0.0},
          {"ssd_bytes", t.ssd_bytes},
          {"ssd_bytes_per_token", t.steps ? static_cast<double>(t.ssd_bytes) / static_cast<double>(t.steps) : 0.0},
          {"wall_s", t.wall_s},
          {"io_wait_s", t.io_wait_s},
          {"compute_s", t.compute_s},
          {"tokens_per_s", tps}};
}

}  // namespace

double twin_checksum(const float* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>((i % 7) - 3) * static_cast<double>(x[i]);
  return s;
}

TwinInfo twin_info_of(const ExpertPack& pack) {
  const json& m = pack.manifest().model;
  const std::string file = pack.manifest_path();
  if (m.value("architecture", "") != kTwinArchitecture || !m.contains("twin") || !m["twin"].is_object())
    throw FormatError(file, "/model/twin", FormatError::InDocument{},
                      "is missing: this pack is not a twin (write one with `moepack twin`)");
  const json& t = m["twin"];
  TwinInfo info;
  try {
    info.shape = find_twin_shape(t.at("shape").get<std::string>());
    info.seed = t.at("seed").get<uint64_t>();
  } catch (const json::exception& e) {
    throw FormatError(file, "/model/twin", FormatError::InDocument{}, e.what());
  }
  if (!info.shape)
    throw FormatError(file, "/model/twin/shape", FormatError::InDocument{}, "is not a known twin shape");
  const PackLayout& L = pack.layout();
  info.layers = static_cast<uint32_t>(L.layers.size());
  info.experts = L.layers[0].n_experts;
  info.top_k = info.shape->top_k;
  const PackLayout want = twin_layout(*info.shape, info.layers, info.experts);
  for (size_t l = 0; l < L.layers.size(); ++l) {
    const PackLayer &a = L.layers[l], &b = want.layers[l];
    bool same = a.n_experts == b.n_experts && a.stride == b.stride && a.roles.size() == b.roles.size();
    for (size_t r = 0; same && r < a.roles.size(); ++r)
      same = a.roles[r].role == b.roles[r].role && a.roles[r].type == b.roles[r].type && a.roles[r].ne == b.roles[r].ne &&
             a.roles[r].offset == b.roles[r].offset;
    if (!same)
      throw FormatError(file, "/layout/layers/" + std::to_string(l), FormatError::InDocument{},
                        "does not have the " + std::string(info.shape->name) + " twin's roles and sizes");
  }
  return info;
}

TwinBenchSetup prepare_twin_bench(const TwinBenchOptions& o) {
  TwinBenchSetup s{ExpertPack::open(o.pack_dir), {}, nullptr, 0, json::object()};
  s.twin = twin_info_of(s.pack);
  if (o.budget_bytes == 0) throw Error("bench-twin: --budget-mib must be positive");
  if (!o.trace_path.empty() == (o.zipf_s >= 0)) throw Error("bench-twin: give exactly one of --trace FILE and --zipf S");
  if (!o.trace_path.empty()) {
    const RoutingTrace t = read_routing_trace(o.trace_path);
    TraceRouterInfo info;
    s.router = make_trace_router(t, s.twin.layers, s.twin.experts, s.twin.top_k, &info);
    s.steps = static_cast<uint32_t>(o.tokens ? std::min<uint64_t>(o.tokens, info.decode_steps) : info.decode_steps);
    s.routing = {{"source", "trace"},
                 {"trace", o.trace_path},
                 {"trace_model", t.header.model_name},
                 {"trace_layers", t.header.n_layers},
                 {"trace_experts", t.header.n_experts},
                 {"trace_top_k", t.header.top_k},
                 {"decode_steps", info.decode_steps},
                 {"skipped_steps", info.skipped_steps},
                 {"replicas", info.replicas},
                 {"rule", "docs/twins.md: layer l -> trace layer l mod Lt; replica j of trace expert x -> "
                          "(a_l * (j * Et + x) + b_l) mod E"}};
  } else {
    s.router = make_zipf_router(o.zipf_s, s.twin.layers, s.twin.experts, s.twin.top_k, o.seed);
    s.steps = o.tokens ? o.tokens : 64;
    s.routing = {{"source", "zipf"}, {"s", o.zipf_s}, {"seed", o.seed}};
  }
  if (o.warmup >= s.steps)
    throw Error("bench-twin: --warmup " + std::to_string(o.warmup) + " leaves none of the " + std::to_string(s.steps) +
                " steps to measure");
  return s;
}

void add_step(TwinTotals& t, const TwinTotals& s) {
  t.steps += s.steps;
  t.selections += s.selections;
  t.hits += s.hits;
  t.misses += s.misses;
  t.evictions += s.evictions;
  t.ssd_bytes += s.ssd_bytes;
  t.wall_s += s.wall_s;
  t.io_wait_s += s.io_wait_s;
  t.compute_s += s.compute_s;
}

TwinRunResult run_twin_bench_cpu(const TwinBenchOptions& o, TwinBenchSetup& s) {
  const PackLayout& L = s.pack.layout();
  CpuExpertCompute compute(s.twin, o.threads, o.seed);
  TwinRunResult res;
  res.slot_bytes = L.max_stride;
  std::vector<StepRouting> steps(s.steps);
  for (StepRouting& r : steps) {
    if (!s.router->next(r)) throw Error("bench-twin: the routing source ended early");
  }
  // Per-step counters from cumulative ones.
  CacheCounters prev_c{};
  uint64_t prev_bytes = 0;
  auto close_step = [&](uint32_t t, const CacheCounters& c, uint64_t bytes, double wall, double io, double comp) {
    TwinTotals st;
    st.steps = 1;
    for (const auto& ids : steps[t]) st.selections += ids.size();
    st.hits = c.cache_hits - prev_c.cache_hits;
    st.misses = c.cache_misses - prev_c.cache_misses;
    st.evictions = c.cache_evictions - prev_c.cache_evictions;
    st.ssd_bytes = bytes - prev_bytes;
    st.wall_s = wall;
    st.io_wait_s = io;
    st.compute_s = comp;
    prev_c = c;
    prev_bytes = bytes;
    add_step(res.all, st);
    if (t >= o.warmup) add_step(res.after_warmup, st);
  };

  if (o.serial) {
    ExpertStoreSettings ss;
    ss.cache_bytes = o.budget_bytes;
    ss.reader = o.reader;
    ss.policy = o.policy;
    ExpertStore store(s.pack, ss, s.twin.top_k);
    res.slots = store.slot_count();
    for (uint32_t t = 0; t < s.steps; ++t) {
      const auto t0 = Clock::now();
      double io = 0, comp = 0;
      compute.begin_step();
      for (uint32_t l = 0; l < s.twin.layers; ++l) {
        const auto a = Clock::now();
        const std::vector<const uint8_t*> blocks = store.acquire(l, steps[t][l]);
        io += since(a);
        const auto b = Clock::now();
        compute.begin_layer();
        for (const uint8_t* blk : blocks) compute.expert(L.layers[l], blk);
        compute.end_layer(l);
        comp += since(b);
      }
      res.checksum += compute.x_checksum();
      store.end_step();
      const ExpertStoreCounters c = store.counters();
      close_step(t, c.cache, c.pack_read_bytes, since(t0), io, comp);
    }
    return res;
  }

  OverlapDelivery d(s.pack, o, s.twin.top_k);
  res.slots = d.slot_count();
  // The sequence of (step, layer) items; item i+1 is prepared while item i computes.
  const uint64_t n_items = static_cast<uint64_t>(s.steps) * s.twin.layers;
  auto make_item = [&](uint64_t i) {
    OverlapDelivery::Item it;
    it.layer = static_cast<uint32_t>(i % s.twin.layers);
    it.experts = steps[i / s.twin.layers][it.layer];
    return it;
  };
  OverlapDelivery::Item cur = make_item(0);
  d.prepare(cur, {});
  // A step's counters are taken when its last acquire is done (end_step), before the next
  // step's first acquire, which lookahead issues while the step's last layer still computes.
  CacheCounters snap_c{};
  uint64_t snap_b = 0;
  auto end_step_now = [&] {
    d.end_step();
    snap_c = d.cache().counters();
    snap_b = d.issued_bytes();
  };
  double io = 0, comp = 0;
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < n_items; ++i) {
    const uint32_t t = static_cast<uint32_t>(i / s.twin.layers);
    const bool last_layer = (i + 1) % s.twin.layers == 0;
    const bool has_next = i + 1 < n_items;
    if (cur.layer == 0) compute.begin_step();
    OverlapDelivery::Item next;
    if (has_next && o.lookahead) {
      if (last_layer) end_step_now();
      next = make_item(i + 1);
      d.prepare(next, cur.slot);
    }
    // Compute: resident experts first, then each as its read completes.
    compute.begin_layer();
    std::vector<bool> done(cur.experts.size(), false);
    size_t left = cur.experts.size();
    while (left > 0) {
      bool progressed = false;
      for (size_t k = 0; k < cur.experts.size(); ++k) {
        if (done[k] || !d.ready(cur.slot[k])) continue;
        const auto b = Clock::now();
        compute.expert(L.layers[cur.layer], d.slot(cur.slot[k]));
        comp += since(b);
        done[k] = true;
        --left;
        progressed = true;
      }
      if (left > 0 && !progressed) {
        const auto a = Clock::now();
        d.wait_one();
        io += since(a);
      }
    }
    {
      const auto b = Clock::now();
      compute.end_layer(cur.layer);
      if (last_layer) res.checksum += compute.x_checksum();
      comp += since(b);
    }
    if (has_next && o.lookahead) {
      d.submit_deferred(next);
    } else {
      if (last_layer) end_step_now();
      if (has_next) {
        next = make_item(i + 1);
        d.prepare(next, {});
      }
    }
    if (last_layer) {
      close_step(t, snap_c, snap_b, since(t0), io, comp);
      t0 = Clock::now();
      io = comp = 0;
    }
    cur = std::move(next);
  }
  if (d.issued_bytes() != d.read_bytes())
    throw Error("bench-twin: internal: " + std::to_string(d.issued_bytes()) + " bytes requested but " +
                std::to_string(d.read_bytes()) + " delivered");
  return res;
}

json twin_report_json(const TwinBenchOptions& o, const TwinBenchSetup& s, const TwinRunResult& r) {
  const TwinShape& sh = *s.twin.shape;
  json j;
  j["kind"] = "synthetic expert-path benchmark, not a model";
  j["schema_version"] = 1;
  j["pack"] = s.pack.dir();
  j["twin"] = {{"shape", sh.name},
               {"layers", s.twin.layers},
               {"experts", s.twin.experts},
               {"full_layers", sh.moe_layers},
               {"full_experts", sh.n_expert},
               {"top_k", s.twin.top_k},
               {"n_embd", sh.n_embd},
               {"n_ff", sh.n_ff},
               {"types", {ggml_type_name(sh.gate), ggml_type_name(sh.up), ggml_type_name(sh.down)}},
               {"expert_bytes", twin_expert_bytes(sh)},
               {"stride", s.pack.layout().max_stride},
               {"seed", s.twin.seed}};
  j["routing"] = s.routing;
  j["settings"] = {{"backend", o.backend},
                   {"schedule", o.serial ? "serial" : (o.lookahead ? "overlapped+lookahead" : "overlapped")},
                   {"budget_bytes", o.budget_bytes},
                   {"ram_tier_bytes", o.ram_tier_bytes},
                   {"policy", o.policy},
                   {"tokens", s.steps},
                   {"warmup", o.warmup},
                   {"threads", o.threads},
                   {"direct_io", o.reader.direct_io},
                   {"read_splits", o.reader.read_splits},
                   {"queue_depth", o.reader.queue_depth}};
  j["slots"] = r.slots;
  j["slot_bytes"] = r.slot_bytes;
  j["checksum"] = r.checksum;
  j["all"] = totals_json(r.all);
  j["after_warmup"] = totals_json(r.after_warmup);
  if (!r.extra.empty()) j["backend"] = r.extra;
  j["machine"] = machine_info(s.pack.experts_path());
  j["build"] = build_info();
  j["pack_build_id"] = s.pack.manifest().build_id;
  return j;
}

std::string twin_report_text(const json& j) {
  char b[1024];
  std::string out = "synthetic expert-path benchmark, not a model\n";
  std::snprintf(b, sizeof b, "twin %s: %u layers x %u experts (of %u x %u), top-%u, %llu-byte experts; %s backend, %s\n",
                j["twin"]["shape"].get<std::string>().c_str(), j["twin"]["layers"].get<unsigned>(),
                j["twin"]["experts"].get<unsigned>(), j["twin"]["full_layers"].get<unsigned>(),
                j["twin"]["full_experts"].get<unsigned>(), j["twin"]["top_k"].get<unsigned>(),
                static_cast<unsigned long long>(j["twin"]["stride"].get<uint64_t>()),
                j["settings"]["backend"].get<std::string>().c_str(), j["settings"]["schedule"].get<std::string>().c_str());
  out += b;
  std::snprintf(b, sizeof b, "routing: %s; budget %.1f MiB = %u slots\n", j["routing"]["source"].get<std::string>().c_str(),
                static_cast<double>(j["settings"]["budget_bytes"].get<uint64_t>()) / 1048576.0, j["slots"].get<unsigned>());
  out += b;
  for (const char* sec : {"all", "after_warmup"}) {
    const json& t = j[sec];
    std::snprintf(b, sizeof b,
                  "%-12s %llu tokens: %.3f tokens/s, hit rate %.1f%% (%llu hits, %llu misses), %.2f MB SSD/token, "
                  "%llu evictions, io wait %.2f s, compute %.2f s\n",
                  sec, static_cast<unsigned long long>(t["steps"].get<uint64_t>()), t["tokens_per_s"].get<double>(),
                  100.0 * t["hit_rate"].get<double>(), static_cast<unsigned long long>(t["hits"].get<uint64_t>()),
                  static_cast<unsigned long long>(t["misses"].get<uint64_t>()),
                  t["ssd_bytes_per_token"].get<double>() / 1e6,
                  static_cast<unsigned long long>(t["evictions"].get<uint64_t>()), t["io_wait_s"].get<double>(),
                  t["compute_s"].get<double>());
    out += b;
  }
  return out;
}

}  // namespace moepack::bench
