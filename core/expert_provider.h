// Where a CPU forward pass gets routed experts from: the model's stacked expert tensors in RAM
// (GGUF path) or an Expert Pack through ExpertStore's host-RAM slots (pack path). Both hand out
// the same WeightViews over byte-identical data, so both give identical logits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/cpu_ops.h"
#include "core/engine_settings.h"

namespace moepack {

class ModelSource;
class TensorStore;

struct ExpertFfn {
  WeightView gate;  // [n_ff_exp][n_embd]
  WeightView up;    // [n_ff_exp][n_embd]
  WeightView down;  // [n_embd][n_ff_exp]
};

class ExpertProvider {
 public:
  virtual ~ExpertProvider() = default;
  // Most experts one acquire() may ask for (the cache's slot count; unbounded when resident).
  virtual uint32_t max_batch() const = 0;
  // Makes `experts` (distinct ids) of blk.`block` available; the views stay valid until the
  // next acquire() or end_step(). Adds the time spent waiting for delivery to *io_wait_ms.
  virtual std::vector<ExpertFfn> acquire(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms) = 0;
  // acquire() that hands each expert to `ready(i, ffn)` (experts[i]) as soon as it is usable,
  // so the caller computes it while the others' reads are in flight (ExpertStore::acquire_each);
  // the views stay valid as acquire()'s do. Adds only the time spent waiting for reads (not the
  // time inside `ready`) to *io_wait_ms. Throws what acquire() throws and what `ready` throws.
  // `all_landed`, if set, is called once, as soon as no read is waited for (ExpertStore::
  // acquire_each; next-layer prefetch starts there). The default: acquire(), `all_landed`, then
  // `ready` for each expert in order.
  using ExpertReady = std::function<void(size_t index, const ExpertFfn& ffn)>;
  virtual void acquire_each(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms,
                            const ExpertReady& ready, const std::function<void()>& all_landed) {
    const std::vector<ExpertFfn> ffns = acquire(block, experts, io_wait_ms);
    if (all_landed) all_landed();
    for (size_t i = 0; i < ffns.size(); ++i) ready(i, ffns[i]);
  }
  // Next-layer prefetch (EngineSettings::prefetch_experts, pack path): whether prefetch() may
  // read anything.
  virtual bool prefetching() const { return false; }
  // Starts reading `experts` of blk.`block` (predicted, most likely first; distinct ids) that
  // are not resident, without waiting (core/expert_store.h: at most top-k, as many as there is
  // room for). The views the last acquire() returned stay valid. Returns the reads started.
  // Throws what ExpertStore::prefetch throws.
  virtual uint32_t prefetch(uint32_t /*block*/, std::span<const uint32_t> /*experts*/) { return 0; }
  // Ends a step (one forward() call) for the cache's unique-key hit counting.
  virtual void end_step() = 0;
  // Cache and reader counters into `s` (leaves the others alone).
  virtual void fill_stats(BackendStats& s) const = 0;
  // Cached experts per MoE layer (pack order); empty when everything is resident.
  virtual ResidencyMap residency() const { return {}; }
};

// GGUF path: loads every MoE layer's `ffn_{gate,up,down}_exps` into RAM (through `tensors`).
std::unique_ptr<ExpertProvider> make_resident_experts(const ModelConfig& cfg, TensorStore& tensors, int64_t n_ff_exp);

// Pack path: an ExpertStore with `settings`' cache budget (cache_vram_mib, reserve against the
// machine's available RAM), reader settings and policy. Throws Error if the budget cannot hold
// top-k experts, FormatError if the pack's roles are not gate/up/down of the expected shapes.
std::unique_ptr<ExpertProvider> make_pack_experts(const ModelSource& model, const EngineSettings& settings,
                                                  int64_t n_ff_exp);

}  // namespace moepack
