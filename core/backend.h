// The narrow interface every compute backend implements: the CPU reference (core/cpu_backend.h)
// and CUDA (gpu/). A backend owns the model's weights on its device, the KV cache and the
// expert path (cache + reader for packs); the session (core/session.h) owns tokenizer,
// sampler and generation loop and talks to the backend only through this class.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "core/model_config.h"
#include "core/telemetry.h"

namespace moepack {

// Cumulative counters since the backend was created (plain values; copy freely).
struct BackendStats {
  uint64_t forward_calls = 0;
  uint64_t tokens_evaluated = 0;      // positions run through the model (prefill + decode)
  uint64_t expert_selections = 0;     // (token, layer, expert) picks made by the routers
  uint64_t experts_computed = 0;      // routed expert FFNs evaluated; == expert_selections (exact routing)
  double compute_ms = 0;              // wall time in forward() not waiting for experts
  double io_wait_ms = 0;              // wall time forward() waited for expert delivery
  // Expert cache and reader (0 where experts are resident, i.e. the GGUF path). Hits and misses
  // count unique (layer, expert) keys per step; a step is one forward() call.
  uint64_t cache_hits = 0, cache_misses = 0, cache_evictions = 0;
  // Prefetch (EngineSettings::prefetch_experts): experts placed ahead (read from the pack, or
  // copied up from the host-RAM tier when it held them), and those a later step of the router
  // then used (each counted as a cache miss that needed no read when it was used).
  uint64_t prefetch_reads = 0, prefetch_hits = 0;
  uint64_t pack_read_bytes = 0, h2d_bytes = 0, fallback_count = 0, io_errors = 0;
  // Host-RAM tier behind the VRAM cache (EngineSettings::cache_ram_mib, core/victim_tier.h):
  // misses found there (copied up, no pack read), evicted experts copied down into it, and
  // those copies' bytes (device to host).
  uint64_t ram_tier_hits = 0, ram_tier_demotions = 0, d2h_bytes = 0;
  uint32_t ram_tier_slots = 0;        // its slots (0: off)
  uint32_t cache_slots = 0;           // expert slots (0 without a cache)
  uint64_t cache_slot_bytes = 0;      // bytes per slot
};

// Called once per (MoE layer, token) with the experts the router selected (in descending
// selection score) and their final weights (after norm and scale). `block` is N of blk.N,
// `pos` the token's position in the sequence.
using RoutingObserver = std::function<void(uint32_t block, uint32_t pos, std::span<const int32_t> experts,
                                           std::span<const float> weights)>;

// The argument checks every Backend::forward() starts with (its contract above): at least one
// token, room in the KV cache (n_past + tokens <= n_ctx), logits buffers large enough, every
// id inside the vocabulary. Throws Error naming the offending value.
void check_forward_args(std::span<const int32_t> tokens, std::span<const float> logits,
                        std::span<const float> all_logits, uint32_t n_past, uint32_t n_ctx, uint32_t n_vocab);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "cpu", "cuda"
  virtual const ModelConfig& config() const = 0;
  virtual uint32_t n_ctx() const = 0;   // KV cache capacity, tokens
  virtual uint32_t n_past() const = 0;  // tokens currently in the KV cache

  // Runs `tokens` at positions n_past() .. n_past() + size - 1 and appends them to the KV
  // cache. Writes the logits after the last token to `logits` (n_vocab floats). If
  // `all_logits` is not empty it must hold size * n_vocab floats: row i = logits after token i.
  // Throws Error if the tokens do not fit in n_ctx() or an id is outside the vocabulary;
  // IoError / FormatError from expert delivery. After a throw the KV cache is truncated back
  // to its length before the call.
  virtual void forward(std::span<const int32_t> tokens, std::span<float> logits,
                       std::span<float> all_logits = {}) = 0;
  // Forgets KV entries from position n onward (n <= n_past()).
  virtual void truncate(uint32_t n) = 0;
  virtual void set_routing_observer(RoutingObserver observer) = 0;
  virtual BackendStats stats() const = 0;
  // Which experts the expert cache holds now (the studio's heat map); empty where experts are
  // not cached (all resident). Cost: one lookup per (MoE layer, expert).
  virtual ResidencyMap residency() const { return {}; }
};

}  // namespace moepack
