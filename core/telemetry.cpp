#include "core/telemetry.h"

#include <nlohmann/json.hpp>

#include "core/durable_io.h"
#include "core/error.h"

namespace moepack {

// One ring entry, guarded by a sequence number: odd while being written. Fields are relaxed
// atomics so concurrent reads are well-defined; the seqlock makes them consistent.
struct Telemetry::Entry {
  std::atomic<uint64_t> seq{0};
  std::atomic<uint64_t> index{0};
  std::atomic<uint64_t> read_bytes{0};
  std::atomic<uint32_t> experts_missed{0};
  std::atomic<double> io_wait_ms{0};
  std::atomic<double> compute_ms{0};
  std::atomic<uint32_t> experts_hit{0};
  std::atomic<uint32_t> evictions{0};
  std::atomic<uint32_t> forwarded{0};
  std::atomic<double> forward_ms{0};
  std::atomic<bool> reply_start{false};
};

Telemetry::Telemetry(TelemetrySettings settings) : settings_(std::move(settings)) {
  if (settings_.history == 0) settings_.history = 1;
  ring_ = std::make_unique<Entry[]>(settings_.history);
  if (!settings_.stats_path.empty()) write_stats();
}

Telemetry::~Telemetry() = default;

void Telemetry::init_residency(uint32_t n_layers, uint32_t n_experts) {
  res_layers_ = n_layers;
  res_experts_ = n_experts;
  const size_t words = (static_cast<size_t>(n_layers) * n_experts + 63) / 64;
  res_words_ = std::make_unique<std::atomic<uint64_t>[]>(words);
  for (size_t i = 0; i < words; ++i) res_words_[i].store(0, std::memory_order_relaxed);
}

void Telemetry::publish_residency(const ResidencyMap& map) {
  if (map.n_layers != res_layers_ || map.n_experts != res_experts_ ||
      map.resident.size() != static_cast<size_t>(map.n_layers) * map.n_experts) {
    throw Error("telemetry: residency map shape " + std::to_string(map.n_layers) + "x" + std::to_string(map.n_experts) +
                " differs from " + std::to_string(res_layers_) + "x" + std::to_string(res_experts_));
  }
  const size_t n = map.resident.size();
  for (size_t w = 0; w * 64 < n; ++w) {
    uint64_t bits = 0;
    for (size_t b = 0; b < 64 && w * 64 + b < n; ++b) {
      if (map.resident[w * 64 + b]) bits |= uint64_t{1} << b;
    }
    res_words_[w].store(bits, std::memory_order_relaxed);
  }
}

ResidencyMap Telemetry::residency() const {
  ResidencyMap m;
  m.n_layers = res_layers_;
  m.n_experts = res_experts_;
  const size_t n = static_cast<size_t>(res_layers_) * res_experts_;
  m.resident.resize(n);
  for (size_t w = 0; w * 64 < n; ++w) {
    const uint64_t bits = res_words_[w].load(std::memory_order_relaxed);
    for (size_t b = 0; b < 64 && w * 64 + b < n; ++b) m.resident[w * 64 + b] = (bits >> b) & 1u;
  }
  return m;
}

TelemetrySnapshot Telemetry::snapshot() const {
  TelemetrySnapshot s;
  const auto r = std::memory_order_relaxed;
  s.cache_hits = counters_.cache_hits.load(r);
  s.cache_misses = counters_.cache_misses.load(r);
  s.cache_evictions = counters_.cache_evictions.load(r);
  s.prefetch_reads = counters_.prefetch_reads.load(r);
  s.prefetch_hits = counters_.prefetch_hits.load(r);
  s.pack_read_bytes = counters_.pack_read_bytes.load(r);
  s.h2d_bytes = counters_.h2d_bytes.load(r);
  s.ram_tier_hits = counters_.ram_tier_hits.load(r);
  s.d2h_bytes = counters_.d2h_bytes.load(r);
  s.fallback_count = counters_.fallback_count.load(r);
  s.io_errors = counters_.io_errors.load(r);
  s.tokens = counters_.tokens.load(r);
  return s;
}

void Telemetry::record_token(TokenSample sample) {
  const uint64_t n = written_.load(std::memory_order_relaxed);
  sample.index = n;
  Entry& e = ring_[n % settings_.history];
  const auto r = std::memory_order_relaxed;
  e.seq.store(2 * n + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  e.index.store(sample.index, r);
  e.read_bytes.store(sample.read_bytes, r);
  e.experts_missed.store(sample.experts_missed, r);
  e.io_wait_ms.store(sample.io_wait_ms, r);
  e.compute_ms.store(sample.compute_ms, r);
  e.experts_hit.store(sample.experts_hit, r);
  e.evictions.store(sample.evictions, r);
  e.forwarded.store(sample.forwarded, r);
  e.forward_ms.store(sample.forward_ms, r);
  e.reply_start.store(sample.reply_start, r);
  e.seq.store(2 * n + 2, std::memory_order_release);
  written_.store(n + 1, std::memory_order_release);
  counters_.tokens.fetch_add(1, r);
  if (settings_.stats_flush_interval != 0 && !settings_.stats_path.empty() &&
      (n + 1) % settings_.stats_flush_interval == 0) {
    write_stats();
  }
}

std::vector<TokenSample> Telemetry::recent(size_t n) const {
  const uint64_t total = written_.load(std::memory_order_acquire);
  const uint64_t want = std::min<uint64_t>({n, total, settings_.history});
  std::vector<TokenSample> out;
  out.reserve(want);
  for (uint64_t i = total - want; i < total; ++i) {
    const Entry& e = ring_[i % settings_.history];
    const uint64_t s1 = e.seq.load(std::memory_order_acquire);
    TokenSample t;
    t.index = e.index.load(std::memory_order_relaxed);
    t.read_bytes = e.read_bytes.load(std::memory_order_relaxed);
    t.experts_missed = e.experts_missed.load(std::memory_order_relaxed);
    t.io_wait_ms = e.io_wait_ms.load(std::memory_order_relaxed);
    t.compute_ms = e.compute_ms.load(std::memory_order_relaxed);
    t.experts_hit = e.experts_hit.load(std::memory_order_relaxed);
    t.evictions = e.evictions.load(std::memory_order_relaxed);
    t.forwarded = e.forwarded.load(std::memory_order_relaxed);
    t.forward_ms = e.forward_ms.load(std::memory_order_relaxed);
    t.reply_start = e.reply_start.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t s2 = e.seq.load(std::memory_order_relaxed);
    if (s1 != s2 || s1 != 2 * i + 2) continue;  // being overwritten: skip, never return torn data
    out.push_back(t);
  }
  return out;
}

nlohmann::json Telemetry::to_json(size_t recent_tokens) const {
  const TelemetrySnapshot s = snapshot();
  nlohmann::json tokens = nlohmann::json::array();
  for (const TokenSample& t : recent(recent_tokens)) {
    tokens.push_back({{"index", t.index},
                      {"read_bytes", t.read_bytes},
                      {"experts_missed", t.experts_missed},
                      {"io_wait_ms", t.io_wait_ms},
                      {"compute_ms", t.compute_ms},
                      {"experts_hit", t.experts_hit},
                      {"evictions", t.evictions},
                      {"forwarded", t.forwarded},
                      {"forward_ms", t.forward_ms},
                      {"reply_start", t.reply_start}});
  }
  return {{"counters",
           {{"cache_hits", s.cache_hits},
            {"cache_misses", s.cache_misses},
            {"cache_evictions", s.cache_evictions},
            {"prefetch_reads", s.prefetch_reads},
            {"prefetch_hits", s.prefetch_hits},
            {"pack_read_bytes", s.pack_read_bytes},
            {"h2d_bytes", s.h2d_bytes},
            {"ram_tier_hits", s.ram_tier_hits},
            {"d2h_bytes", s.d2h_bytes},
            {"fallback_count", s.fallback_count},
            {"io_errors", s.io_errors},
            {"tokens", s.tokens}}},
          {"hit_rate", s.hit_rate()},
          {"read_bytes_per_token", s.read_bytes_per_token()},
          {"recent_tokens", tokens}};
}

void Telemetry::write_stats() const {
  const std::string& p = settings_.stats_path;
  const auto slash = p.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : p.substr(0, slash));
  const std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  write_file_atomic(dir, name, to_json().dump(2) + "\n");
}

}  // namespace moepack
