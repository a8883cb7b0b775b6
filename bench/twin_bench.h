// `moepack bench-twin`: a synthetic expert-path benchmark on a twin pack (bench/twin_pack.h),
// NOT a model. Each step (one decode token) runs every twin layer's top-k experts, chosen by a
// TwinRouter (bench/twin_routing.h), through the real delivery path and the real quantized
// expert FFN; docs/twins.md has the schedules and results.
//
// Per layer of a step, for each selected expert: y += (1/k) * down · (silu(gate · x) ⊙ up · x)
// (core/cpu_ops matmul on the expert's quantized blocks as they sit in the cache slot); the
// next layer's x = rms_norm(x + y). x starts as N(0, 1) (seeded). A non-finite result is an
// Error (the twin's blocks would be invalid).
//
// Schedules (CPU backend):
//   serial      the published design: ExpertStore::acquire (core/expert_store.h) reads every
//               miss of the layer (one O_DIRECT io_uring request each, all in flight together)
//               and returns when all have arrived; then the layer computes.
//   overlapped  (default) the same ExpertCache and DirectReader, driven directly:
//               1. within a layer, hits are computed first and each miss as soon as its read
//                  completes (io_uring completion order), while the others are still in flight;
//               2. with lookahead (default on), the next (layer, step)'s experts are acquired
//                  from the cache and their reads submitted before this layer computes, so the
//                  SSD works while the CPU computes. A read whose slot still holds an expert of
//                  the layer being computed is deferred until that layer is done. Lookahead
//                  knows the next layer's routing in advance (the trace/router gives it), as a
//                  perfect next-layer predictor would: an upper bound for prefetching.
//   Both issue the same cache acquire() calls in the same order, so hits, misses, evictions
//   and SSD bytes are identical; only time differs.
//
// Counting: hit rate = unique (layer, expert) keys per step found resident (ExpertCache, as
// `moepack bench`); selections = steps x layers x top_k = hits + misses (each step's keys are
// distinct); SSD bytes = bytes the DirectReader delivered. "after_warmup" covers the steps after
// the first `warmup` ones. Times in seconds: wall (whole steps), io_wait (blocked on reads),
// compute (expert FFNs).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/twin_routing.h"
#include "bench/twin_shape.h"
#include "core/direct_reader.h"
#include "core/expert_pack.h"

namespace moepack::bench {

struct TwinBenchOptions {
  std::string pack_dir;
  std::string trace_path;  // routing from this trace, or
  double zipf_s = -1;      // from Zipf(S) when >= 0
  uint64_t budget_bytes = 0;
  uint64_t ram_tier_bytes = 0;  // cuda: host-RAM tier behind the VRAM slots (core/victim_tier.h); 0: off
  std::string ram_tier_admission = "frequency";  // cuda: its admission (TierAdmission: frequency | all)
  uint32_t tokens = 0;  // 0: the trace's decode steps, 64 for Zipf
  uint32_t warmup = 0;  // steps left out of "after_warmup"
  bool serial = false;
  bool lookahead = true;  // overlapped schedule only
  uint64_t seed = 1;      // Zipf router and the hidden vector
  uint32_t threads = 0;   // CPU compute threads; 0 = hardware concurrency
  std::string policy = "hybrid";
  ReaderSettings reader{true, 1, 64};
  std::string backend = "cpu";  // cpu | cuda
  // cuda: routed experts in the decode GEMV's tiled layout (EngineSettings::tiled_experts:
  // auto | on | off; gpu/tiled_experts.h).
  std::string tiled_experts = "auto";
};

// The twin a pack holds, from its manifest's model.twin (bench/twin_pack.h).
struct TwinInfo {
  const TwinShape* shape = nullptr;
  uint32_t layers = 0, experts = 0, top_k = 0;
  uint64_t seed = 0;
};
// Throws Error naming the manifest when the pack is not a twin.
TwinInfo twin_info_of(const ExpertPack& pack);

struct TwinTotals {
  uint64_t steps = 0, selections = 0, hits = 0, misses = 0, evictions = 0, ssd_bytes = 0;
  double wall_s = 0, io_wait_s = 0, compute_s = 0;
};

struct TwinRunResult {
  TwinTotals all, after_warmup;
  uint32_t slots = 0;
  uint64_t slot_bytes = 0;
  // Sum over steps of twin_checksum(x after the last layer): the same quantity on every
  // backend (CPU vs CUDA agree to float rounding; gpu_twin_bench_test).
  double checksum = 0;
  nlohmann::json extra = nlohmann::json::object();  // backend details (device, h2d_bytes)
};

// Everything a backend needs, prepared once.
struct TwinBenchSetup {
  ExpertPack pack;
  TwinInfo twin;
  std::unique_ptr<TwinRouter> router;
  uint32_t steps = 0;
  nlohmann::json routing;  // description for the report
};
TwinBenchSetup prepare_twin_bench(const TwinBenchOptions& o);

// sum_i ((i mod 7) - 3) * x[i]: a signed, position-weighted sum of the final hidden vector
// (x is RMS-normalised, so a plain sum of |x| would hardly depend on the weights).
double twin_checksum(const float* x, int64_t n);

// Adds one step's counters and times to `t`.
void add_step(TwinTotals& t, const TwinTotals& step);

// The CPU backend (the default). Throws Error / IoError.
TwinRunResult run_twin_bench_cpu(const TwinBenchOptions& o, TwinBenchSetup& setup);

// The report: {"kind": "synthetic expert-path benchmark, not a model", "schema_version": 1,
// twin, routing, settings, slots, all: {...}, after_warmup: {...}}; each section has steps,
// selections, hits, misses, evictions, hit_rate, ssd_bytes, ssd_bytes_per_token, wall_s,
// io_wait_s, compute_s, tokens_per_s; plus machine (bench/machine_info.h, storage of
// experts.bin), build and pack_build_id.
nlohmann::json twin_report_json(const TwinBenchOptions& o, const TwinBenchSetup& setup, const TwinRunResult& r);
std::string twin_report_text(const nlohmann::json& report);

}  // namespace moepack::bench
