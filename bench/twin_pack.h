// `moepack twin`: writes a shape-faithful twin, a synthetic Expert Pack whose routed experts
// have a target model's per-expert bytes, roles, quant types, counts and top-k
// (bench/twin_shape.h) and random but valid contents. Issue 10, "Twins of the target models";
// docs/twins.md.
//
// The pack is format version 1 exactly (core/expert_pack.h): experts.bin with its header and
// 4096-aligned blocks, roles gate @0 | up @align256 | down @align256, per-expert SHA-256 over
// all stride bytes, manifest.json written last. What marks it as a twin:
//   - dense.gguf is a GGUF v3 file with metadata only and 0 tensors (no dense weights):
//     general.architecture = "moepack-twin" (so the model loader refuses it, naming the
//     architecture), general.name says what it is, moepack.twin.* record the shape and seed,
//     moepack.pack.build_id ties it to the manifest as in every pack;
//   - the manifest's "model" is {"architecture": "moepack-twin", ..., "twin": {shape, seed,
//     layers, experts, full_layers, full_experts, n_embd, n_ff, types, top_k}} and its one
//     "sources" entry is "twin:<shape>" with the SHA-256 of the twin's canonical description.
// `moepack verify [--full]`, `bench-io` and `bench-twin` accept it like any pack.
//
// Contents (deterministic in (seed, layer, expert), so a re-run writes identical bytes):
// xoshiro256** random bytes, then every quant block's scale fields are overwritten so the
// real kernels produce finite, moderate numbers on a N(0,1) hidden vector:
//   MXFP4 (17 B / 32): E8M0 exponent e in [118, 121] (ggml's scale 2^(e-128), quants.h),
//          nibbles random
//   Q2_K (84 B / 256): d, dmin = positive normal fp16 in [2^-13, 2^-11), scales/qs random
//   Q3_K (110 B / 256): d = fp16 in [2^-13, 2^-11), hmask/qs/scales random
//   Q4_K (144 B / 256): d, dmin = fp16 in [2^-13, 2^-11), scales/qs random
// Other types are refused (no twin shape uses them).
//
// Crash safety: until manifest.json exists the directory is not a pack (ExpertPack::open
// refuses it). A re-run after a crash rewrites everything (no resume: the bytes are a pure
// function of the seed). Without `overwrite` the directory is refused (Error naming the file)
// when it holds manifest.json (a finished pack), build-state.json (an interrupted
// `moepack build`, which in shard mode may hold the only copy of deleted shards), or
// experts.bin / dense.gguf that are not an interrupted twin's (a twin's dense.gguf says
// general.architecture = moepack-twin). With `overwrite`, manifest.json and build-state.json
// are removed (durably) before anything is written.
// Pre-flight as `moepack build`: O_DIRECT probe, then statvfs free space >= bytes to write +
// safety margin, else an Error with both numbers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "bench/twin_shape.h"
#include "core/pack_layout.h"

namespace moepack::bench {

inline constexpr const char* kTwinArchitecture = "moepack-twin";
// The resume state `moepack build` keeps in an unfinished pack directory (packbuilder/pack_builder.h).
inline constexpr const char* kTwinBuildStateName = "build-state.json";

// One expert's block of `shape`: roles gate/up/down with the tensor names a GGUF of the real
// architecture has (blk.N.ffn_{gate,up,down}_exps.weight) and ne as the pack builder records
// one expert's slice (gate/up [n_embd, n_ff], down [n_ff, n_embd]).
// Layer l of the twin is blk.(first_moe_block + l): deepseek-v4-flash 0, kimi-k3 1,
// deepseek-v3 3 (their leading dense layers).
uint32_t twin_first_moe_block(const TwinShape& shape);
// A computed layout (core/pack_layout.h) of `layers` x `experts` of `shape`.
// Throws Error when layers or experts is 0, exceeds the shape's, or experts < top_k.
PackLayout twin_layout(const TwinShape& shape, uint32_t layers, uint32_t experts);

// Fills one block (stride bytes at `dst`) of layer l, expert e: roles as described above,
// every other byte zero. `layer` gives the roles and stride.
void fill_twin_block(const PackLayer& layer, uint64_t seed, uint32_t l, uint32_t e, uint8_t* dst);

struct TwinProgress {  // the fields of `moepack build --progress json`
  std::string phase;   // preflight, dense, experts, finalize, done
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  double rate_bytes_per_s = 0;
  double eta_s = 0;
  std::string message;
};

struct TwinOptions {
  std::string shape;           // a name of twin_shapes()
  uint32_t layers = 0;         // 0 = the shape's
  uint32_t experts = 0;        // 0 = the shape's
  uint64_t seed = 1;
  std::string out_dir;
  bool overwrite = false;      // replace a finished or unfinished pack in out_dir
  bool direct_io = true;       // write experts.bin with O_DIRECT (the probe must pass)
  uint64_t safety_margin_bytes = 1ull << 30;
  uint64_t batch_bytes = 64ull << 20;  // bytes generated and written per batch (>= one stride)
  uint32_t threads = 0;                // generator threads; 0 = hardware concurrency
  std::string tool_version = "moepack";
  std::function<void(const TwinProgress&)> on_progress;
  const std::atomic<bool>* cancel = nullptr;  // set to stop (Error "cancelled"; no manifest)
  std::function<uint64_t()> free_bytes_hook;  // test hook: overrides statvfs
};

struct TwinResult {
  std::string pack_dir;
  uint64_t experts_bytes = 0;  // experts.bin
  uint64_t dense_bytes = 0;    // dense.gguf
  uint64_t expert_count = 0;
  double seconds = 0;
};

// Throws Error / IoError naming the file (unknown shape, sizes, no O_DIRECT, no space, an
// existing pack without overwrite, write failures).
TwinResult write_twin_pack(const TwinOptions& options);

}  // namespace moepack::bench
