// Engine settings: one vocabulary for the CLI (`--set key=value`, `--config FILE.json`), the
// studio's settings page and the benchmark runner. Names follow the seed system's
// `expert_pack` loader (ARCHITECTURE.md) where it has one.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace moepack {

struct EngineSettings {
  // Compute.
  std::string backend = "auto";  // cpu | cuda | auto (cuda when a usable GPU is present)
  uint32_t threads = 0;          // CPU threads; 0: hardware_concurrency() - 1 (at least 1)
  uint32_t n_ctx = 4096;         // KV cache length in tokens; capped at the model's context_length
  // Expert cache. On the CPU backend the slots are host RAM and the `cache_vram_*` names keep
  // their meaning as "the cache's byte budget"; on CUDA they are VRAM.
  uint64_t cache_vram_mib = 1024;        // MiB for expert slots
  uint64_t cache_vram_reserve_mib = 512; // MiB kept free
  uint64_t cache_bytes = 0;              // exact budget in bytes; overrides cache_vram_mib when > 0
  std::string cache_policy = "hybrid";   // hybrid | lru | lfu
  // CUDA backend, Expert Pack path: MiB of pinned host RAM for a tier behind the VRAM cache
  // (core/victim_tier.h): experts the VRAM cache evicts are copied down into it, and a miss
  // found there is copied up instead of read from the SSD. 0: off. kCacheRamAuto (the text
  // "auto", the default): half of the RAM available when the model loads
  // (auto_ram_tier_bytes), falling back to less, and then to none, if the OS refuses to pin it.
  // Either way sized as min(this, available RAM - 2 GiB), at most one slot per expert of the
  // pack. The CPU backend's slots are host RAM already: it has no such tier (raise
  // cache_vram_mib there).
  static constexpr uint64_t kCacheRamAuto = ~uint64_t{0};
  uint64_t cache_ram_mib = kCacheRamAuto;
  // Which evictions enter that tier (core/victim_tier.h, TierAdmission): "frequency" (TinyLFU's
  // rule: only experts used more often than the one they would displace, a freed slot's less
  // used eviction first in line; 35-75 % fewer copies down and 4-15 % fewer SSD reads with tiers
  // of 8 GiB or more on the target shapes' Zipf routing; up to 6 % more reads with Kimi-K3 tiers
  // under 5 GiB and up to 3 % more at two of eight sizes of the demo model's recorded routing:
  // docs/expert-delivery.md, "Admission" and "A freed slot's eviction goes first in line") or
  // "all". The studio's Settings page offers both.
  std::string cache_ram_admission = "frequency";
  // Reader (core/direct_reader.h).
  uint32_t stage_slots = 8;
  uint32_t read_splits = 1;
  uint32_t queue_depth = 32;
  bool direct_io = true;
  bool verify_pack_sha256 = false;  // check each expert on its first read and dense.gguf whole at load
  // Read the next MoE layer's likely experts (its router applied to this layer's input) while
  // this layer computes (Expert Pack path; CUDA and CPU backends). Exact either way: only when
  // reads happen changes, never which experts run.
  bool prefetch_experts = false;
  // CUDA backend: which routed expert matrices are held in VRAM in the tiled layout of the
  // tensor-core decode GEMV (gpu/gemv_tiled.h: Q4_K, Q2_K, MXFP4, Q5_K, Q6_K and Q3_K; the last three while
  // their switches in gpu/gemv_mma.h are on, as by default; the GGUF path's tensors permuted at load, the
  // pack path's experts as each is copied into its slot). The same results bit for bit whichever is chosen.
  // "auto": matrices of at least 2048 x 2048 elements (the target models' experts, where the decode GEMV
  // gains; docs/cuda-backend.md, seventeenth pass); "on": every matrix the layout covers; "off": none.
  std::string tiled_experts = "auto";
  // Telemetry (core/telemetry.h).
  std::string stats_path;            // empty: no stats file
  uint64_t stats_flush_interval = 0; // tokens between stats writes; 0: at the end of each reply only
  std::string trace_path;            // non-empty: record a routing trace here (core/routing_recorder.h)
  // Pack path only: keep `pack_path` / `manifest_path` for users of the seed system; they
  // select the model when the command's MODEL argument is absent.
  std::string pack_path;
  std::string manifest_path;
};

// Sets one key from its text form ("cache_vram_mib", "2048"). Throws Error naming the key for
// an unknown key or a value that does not parse / is out of range (e.g. read_splits 0).
void apply_setting(EngineSettings& s, const std::string& key, const std::string& value);
// Applies every member of a JSON object (values may be strings, numbers or booleans); `origin`
// (a file name) appears in errors.
void apply_settings_json(EngineSettings& s, const nlohmann::json& j, const std::string& origin);
// Reads a JSON settings file (as apply_settings_json). Throws IoError / FormatError.
void apply_settings_file(EngineSettings& s, const std::string& path);
nlohmann::json settings_to_json(const EngineSettings& s);
// The keys apply_setting accepts, in declaration order.
const std::vector<std::string>& setting_keys();

// Inclusive bounds of a numeric key, as apply_setting enforces them (threads [0, 4096], n_ctx
// [64, 2^24], cache_vram_mib and cache_vram_reserve_mib [0, 2^24], cache_ram_mib [0, 2^24]
// (or the text "auto", which is not a number), stage_slots [1, 4096],
// read_splits [1, 64], ...); nullopt for a key that is not numeric or not known. The studio's
// Settings page checks its engine values against these, so both front ends accept the same.
struct SettingRange {
  uint64_t lo = 0;
  uint64_t hi = 0;
};
std::optional<SettingRange> engine_setting_range(const std::string& key);

}  // namespace moepack
