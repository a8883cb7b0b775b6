// CudaRoutedExperts: the routed experts of a MoE model on the GPU, shared by the CUDA backends
// (cuda_backend.cpp for deepseek2 / qwen3moe / llama, and the backends of the architectures
// with their own block forward). The router has already chosen (on the host, with core's exact
// route_token or a hash table: run(); or on the GPU, the same function, with the tables in VRAM:
// run_decode_on_device); this class only executes, as core/cpu_moe.h does on the CPU:
//
//   out[t] = Σ_{k<K} w[t*K + k] · down_e( swiglu_clamped(gate_e x[t], up_e x[t], limit) ),
//            e = ids[t*K + k], summed in k order (combine_experts).
//
// The selected experts of a block run in three launches, gate and up together, SwiGLU, then
// down (gate and up apart when their types differ), over a device table of expert pointers,
// (token, expert) pairs sorted by expert; at decode (one pair an expert) SwiGLU is the gate +
// up launch's epilogue where the tensor-core GEMV covers the type (kernels.h
// GemvBatch::swiglu_epilogue: the same values bit for bit, one launch fewer). Every (token,
// expert) pair is computed by the same arithmetic however the launches group them
// (gpu/gemv_mma.h), so fusing changes no result.
//
// Where the experts live:
//   - GGUF path: every MoE block's stacked ffn_{gate,up,down}_exps tensors in VRAM, registered
//     with the backend's DeviceWeights before its upload (load fails with the numbers if they
//     do not fit: build an Expert Pack);
//   - pack path: the VRAM slot pool of gpu/vram_expert_pool.h (cache_bytes / cache_vram_mib,
//     cache_vram_reserve_mib, stage_slots), batches of at most slot_count() experts. A pool
//     with a slot for every expert of the pack is filled at bind() (every expert read once) and
//     then never evicts: the experts stay at fixed addresses, as on the GGUF path (resident()).
// In either, each expert matrix that EngineSettings::tiled_experts selects ("auto": at least
// 2048 x 2048 elements; "on": all) among those the tiled layout covers (gpu/gemv_tiled.h: Q4_K, Q2_K,
// MXFP4, and Q5_K, Q6_K, Q3_K where their tiled launch runs (tiled_expert); rows of a multiple of 256
// elements, a multiple of 16 rows) is held permuted into it: the GGUF path's
// stacked tensors at bind(), a matrix group at a time through a scratch buffer; the pack path's experts as
// each is copied into its slot (VramExpertPool::set_delivery: the block into a scratch buffer of one slot,
// then repack_tiled into the slot, on the copy stream before the slot's ready event). Every launch then runs
// with GemvBatch::w_tiled: the same sums bit for bit as on the GGUF layout, the decode GEMV faster at the
// target shapes (docs/cuda-backend.md, sixteenth pass).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/engine_settings.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_routing.h"
#include "gpu/device_weights.h"
#include "gpu/upload_arena.h"

namespace moepack {
class ModelSource;
}

namespace moepack::gpu {

class VramExpertPool;

class CudaRoutedExperts {
 public:
  // Before weights.upload(). `is_moe(il)` says which blocks have routed experts. n_ff_exp: the
  // expert width (0: read from the first MoE block's ffn_gate_exps, or the pack's layout).
  // GGUF path: registers the stacked expert tensors of every MoE block with `weights`.
  // Throws FormatError (missing / mis-shaped tensor, width unknown).
  CudaRoutedExperts(const ModelSource& model, DeviceWeights& weights, std::function<bool(uint32_t)> is_moe,
                    int64_t n_ff_exp = 0);
  ~CudaRoutedExperts();
  CudaRoutedExperts(const CudaRoutedExperts&) = delete;
  CudaRoutedExperts& operator=(const CudaRoutedExperts&) = delete;

  // After weights.upload(): device pointers (GGUF) or the VRAM slot pool (pack path: checks
  // the pack's layers against the model; throws FormatError naming manifest field, Error for a
  // budget below top-k slots or an expert type without a kernel).
  void bind(const EngineSettings& s);

  int64_t n_ff() const { return n_ff_; }

  // Sizes the activation buffers for n tokens. Call before the first kernel of a forward():
  // growing a buffer later would free memory queued kernels still use. Returns true when one was
  // allocated anew (its address changed: a CUDA graph holding it is stale).
  bool reserve(int64_t n_tokens);

  // out [n][E] (overwritten) = the formula above for blk.`block`. x [n][E] device; ids, w:
  // host arrays [n][K] (K = n_expert_used). limit: SwiGLU clamp (<= 1e-6: none). Returns the
  // expert FFNs evaluated (== n*K; Error otherwise). Adds host time spent waiting for expert
  // reads to *io_wait_ms. Throws IoError / FormatError / Error from the pool.
  uint64_t run(uint32_t block, const float* x, int64_t n, const int32_t* ids, const float* w, float limit, float* out,
               UploadArena& arena, cudaStream_t st, double* io_wait_ms);

  // True when every expert lies in VRAM at a fixed address: the GGUF path, or a pack whose pool
  // holds all of them (filled at bind()). A block can then run from the router's choice made on
  // the GPU (run_decode_on_device), with no copy to or from the host.
  bool resident() const { return !pool_ || all_in_vram_; }
  // Where blk.`block`'s experts lie (stacked, or the pack's table of slots), for
  // route_on_device's tables. Throws Error unless resident().
  ExpertBases bases(uint32_t block) const;
  // One token (decode) with resident() experts, the choice made by route_on_device with tables
  // (c: ids, weights, pair_of, table of this block's experts, written earlier on stream st): the
  // same launches and values as run() with those ids and weights on the host, bit for bit.
  // reserve(1) first. Returns the expert FFNs evaluated (K). Throws Error unless resident().
  uint64_t run_decode_on_device(uint32_t block, const float* x, const DeviceChoice& c, float limit,
                                float* out, cudaStream_t st);

  // Pack path with prefetch_experts: starts reading the experts of blk.`block` in `experts`
  // (most wanted first) that are not in VRAM, without waiting (VramExpertPool::prefetch). Call
  // after run() of the block before. Adds the waits for earlier rounds to *io_wait_ms. A no-op
  // otherwise.
  void prefetch(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms);
  bool prefetching() const;
  // The first block after `block` with routed experts; the block count when there is none.
  uint32_t next_moe_block(uint32_t block) const;

  // Ends a step (one forward()) for the cache's hit counting; call also when a forward() fails.
  void end_step();
  // Cache / reader counters into s (pack path; leaves the others alone).
  void add_stats(BackendStats& s) const;

 private:
  struct Role {
    GgmlType type = GgmlType::F32;
    int64_t ne0 = 0, ne1 = 0;
    uint64_t row_bytes = 0;
    uint64_t offset = 0;  // pack path: offset inside the expert's block
    bool tiled = false;   // held in the tiled layout (GemvBatch::w_tiled)
  };
  struct Block {
    DeviceWeights::Handle hg = 0, hu = 0, hd = 0;
    DevMatrix gate, up, down;  // GGUF path: stacked experts
    Role rg, ru, rd;
    uint32_t pack_layer = 0;
    bool moe = false;
  };
  struct Ptrs {
    const uint8_t* gate;
    const uint8_t* up;
    const uint8_t* down;
  };
  std::vector<Ptrs> experts_of(uint32_t il, const std::vector<uint32_t>& ids, size_t first, size_t m,
                               cudaStream_t st, double* io_wait);
  // Pack path, a slot for every expert: reads them all, checks that each stayed where it was
  // placed, and fills expert_table_ (all_in_vram_). Leaves the pool as it is, on the host's
  // choice, when anything fails (a read, a hash: reported again when the expert is used);
  // rethrows DeviceLostError.
  void load_every_expert();
  // Which roles take the tiled layout (EngineSettings::tiled_experts "auto" | "on" | "off", the
  // layout covers them, the matrices 16-byte aligned); the GGUF path's tensors permuted in place.
  void choose_tiled(const std::string& mode);
  void tile_gguf_experts();
  // buf.allocate(bytes, what); when VRAM is short, every role untiled instead (a line on stderr)
  // and false. Rethrows DeviceLostError.
  bool scratch_or_untiled(DeviceBuffer& buf, uint64_t bytes, const char* what);
  // The pool's delivery (VramExpertPool::set_delivery) with tiled roles.
  void deliver(uint32_t layer, uint8_t* slot, const uint8_t* pinned, uint64_t bytes, cudaStream_t copy);
  // grp_off_host: grp_off's values on the host (GemvBatch::grp_off_host), or null.
  void gemv_role(const Role& r, const uint8_t* const* table, const int32_t* grp_off, int32_t n_groups,
                 int32_t max_pairs, const int32_t* x_row, const float* x, int64_t x_stride, float* y,
                 int64_t y_stride, cudaStream_t st, const int32_t* grp_off_host = nullptr);
  // Whether a block's expert FFN at one pair an expert runs in one launch (gemv_experts_ffn):
  // gate, up and down of one type, all three tiled, and gemv_experts_ffn_fusable.
  bool one_launch_ffn(const Block& b) const;
  // That launch: `groups` experts, table [gates][ups][downs] (3 groups entries), one pair a group
  // (grp_off, x_row of x rows of n_embd floats), SwiGLU rows into h (n_ff floats a pair), down's
  // rows into y (n_embd floats a pair).
  void ffn_in_one_launch(const Block& b, const uint8_t* const* table, const int32_t* grp_off, int32_t groups,
                         const int32_t* x_row, const float* x, float limit, float* h, float* y,
                         bool tables_from_kernel, cudaStream_t st);

  const ModelSource& model_;
  const ModelConfig& cfg_;
  DeviceWeights& weights_;
  std::vector<Block> blocks_;
  int64_t n_ff_ = 0;
  std::unique_ptr<VramExpertPool> pool_;
  std::vector<uint32_t> block_of_layer_;  // pack layer -> model block
  DeviceBuffer tile_scratch_;             // pack path with tiled roles: one slot's bytes
  DeviceBuffer eg_, ey_;  // eg_: 2 rows of n_ff per pair (gate / up results, then SwiGLU)
  // run_decode_on_device's group offsets of one token's K experts (the fused launch's layout in
  // run(): 0..K, then 0..2K, then 2K zero x rows), uploaded once by bind().
  DeviceBuffer decode_ints_;
  // gemv_experts_ffn's counters (n_expert groups at most), zeroed once by bind(); every launch
  // leaves them 0. One stream at a time uses them (the engine's).
  DeviceBuffer ffn_sync_;
  // A pack whose experts all stay in VRAM (load_every_expert): per block [3][n_expert] device
  // pointers (gate, up, down of each expert in its slot); selections run() routed on the host,
  // so that add_stats counts the others (routed on the GPU, never past the pool) as hits.
  bool all_in_vram_ = false;
  DeviceBuffer expert_table_;
  uint64_t host_selections_ = 0;
};

}  // namespace moepack::gpu
