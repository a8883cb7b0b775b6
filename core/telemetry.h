// Telemetry of the expert path: the counters the seed system named (ARCHITECTURE.md), plus
// per-token samples, readable live by the UI while the engine runs.
//
// Hot path: the engine thread bumps relaxed atomics and writes one TokenSample per generated
// token into a ring of seqlocked entries; no mutex is ever taken. Readers (the UI thread, the
// stats writer) copy counters and recent samples at any time and get consistent entries.
// With a `stats_path`, a JSON snapshot goes there atomically (temp file, fsync, rename, fsync of
// the directory): once at construction (so a path that cannot be written fails at load, not
// silently), every `stats_flush_interval` tokens, and at the end of each reply (end_reply()).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace moepack {

struct TelemetryCounters {
  std::atomic<uint64_t> cache_hits{0};       // unique (layer, expert) keys per step found resident
  std::atomic<uint64_t> cache_misses{0};     // unique keys per step read from the pack
  std::atomic<uint64_t> cache_evictions{0};
  std::atomic<uint64_t> prefetch_reads{0};   // experts read ahead (prefetch_experts)
  std::atomic<uint64_t> prefetch_hits{0};    // of those, picked by the router (also counted as misses)
  std::atomic<uint64_t> pack_read_bytes{0};  // bytes read from experts.bin
  std::atomic<uint64_t> h2d_bytes{0};        // bytes copied host -> device (GPU builds)
  std::atomic<uint64_t> ram_tier_hits{0};  // misses served by the host-RAM tier (cache_ram_mib): no pack read
  std::atomic<uint64_t> d2h_bytes{0};      // bytes copied device -> host into that tier
  std::atomic<uint64_t> fallback_count{0};   // buffered reads (direct_io=false)
  std::atomic<uint64_t> io_errors{0};
  std::atomic<uint64_t> tokens{0};           // tokens recorded
};

// Plain copy of the counters at one moment.
struct TelemetrySnapshot {
  uint64_t cache_hits = 0, cache_misses = 0, cache_evictions = 0, prefetch_reads = 0, prefetch_hits = 0,
           pack_read_bytes = 0, h2d_bytes = 0, ram_tier_hits = 0, d2h_bytes = 0, fallback_count = 0,
           io_errors = 0, tokens = 0;
  double hit_rate() const {
    const uint64_t n = cache_hits + cache_misses;
    return n == 0 ? 0.0 : static_cast<double>(cache_hits) / static_cast<double>(n);
  }
  // SSD bytes per generated token (0 before the first token).
  double read_bytes_per_token() const {
    return tokens == 0 ? 0.0 : static_cast<double>(pack_read_bytes) / static_cast<double>(tokens);
  }
};

struct TokenSample {
  uint64_t index = 0;           // token number, 0-based (assigned by record_token)
  uint64_t read_bytes = 0;      // bytes read from the pack for this token
  uint32_t experts_missed = 0;  // unique (layer, expert) misses for this token
  double io_wait_ms = 0;        // time the compute waited for expert reads
  double compute_ms = 0;        // time computing
  uint32_t experts_hit = 0;     // expert lookups served by the cache for this token
  uint32_t evictions = 0;       // experts evicted from the cache for this token
  // The forward() whose logits gave this token: the tokens it evaluated (a reply's first token:
  // the prompt less the KV cache's reused prefix; later tokens: 1) and its wall time in ms.
  // Decode tokens/s over a reply's later tokens is their count / the sum of their forward_ms
  // (core/session.h's decode_tokens_per_s, same definition); prefill tokens/s is the first
  // token's forwarded / forward_ms.
  uint32_t forwarded = 0;
  double forward_ms = 0;
  bool reply_start = false;  // the first token of a reply (its forward is the prefill)
};

// Which routed experts sit in the expert cache right now, per MoE layer (the dashboard's heat
// map). `resident[l * n_experts + e]` is 1 when expert e of MoE layer l (pack order) is cached.
// Empty (n_layers = 0) when the backend has no expert cache (all experts resident).
struct ResidencyMap {
  uint32_t n_layers = 0;
  uint32_t n_experts = 0;
  std::vector<uint8_t> resident;
};

struct TelemetrySettings {
  std::string stats_path;             // empty: no stats file
  uint64_t stats_flush_interval = 0;  // tokens between stats writes; 0: at the end of replies only
  uint32_t history = 4096;            // token samples kept for live readers
};

class Telemetry {
 public:
  // Throws IoError (naming the file) when a stats_path is set and cannot be written.
  explicit Telemetry(TelemetrySettings settings = {});
  ~Telemetry();
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;

  TelemetryCounters& counters() { return counters_; }
  TelemetrySnapshot snapshot() const;

  // Engine thread only. Adds one token (also counters().tokens) and, at the flush interval,
  // writes the stats file (throws IoError if it cannot).
  void record_token(TokenSample sample);
  // Engine thread only, after a reply (finished or stopped): writes the stats file when
  // a stats_path is set (throws IoError if it cannot).
  void end_reply() const {
    if (!settings_.stats_path.empty()) write_stats();
  }

  // Residency of the expert cache. init_residency() fixes the shape before the telemetry is
  // shared with other threads; publish_residency() (engine thread) stores the bitmap in relaxed
  // atomic words, so readers never block the engine; a reader may see a mix of two steps, which
  // is harmless for a heat map. Throws Error if the map's shape differs from init's.
  void init_residency(uint32_t n_layers, uint32_t n_experts);
  void publish_residency(const ResidencyMap& map);
  // Any thread: the last published map (zeros before the first publish; empty without init).
  ResidencyMap residency() const;

  // Any thread: up to `n` most recent samples, oldest first.
  std::vector<TokenSample> recent(size_t n) const;

  // The stats file's content: {"counters": {...}, "hit_rate", "read_bytes_per_token",
  // "recent_tokens": [...]}.
  nlohmann::json to_json(size_t recent_tokens = 64) const;
  void write_stats() const;

 private:
  struct Entry;
  TelemetrySettings settings_;
  TelemetryCounters counters_;
  std::unique_ptr<Entry[]> ring_;
  std::atomic<uint64_t> written_{0};  // samples written so far
  uint32_t res_layers_ = 0, res_experts_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> res_words_;  // bit (l * n_experts + e)
};

}  // namespace moepack
