// DeviceRouter: decode steps of a model whose routed experts are all resident in VRAM (the GGUF
// path, or a pack with a slot for every expert: CudaRoutedExperts::resident()) choose their experts on the
// GPU (gpu/device_routing.h: route_token's or ds4::hash_route's choice bit for bit) and run them from the
// tables the route kernel writes, so a MoE block needs no copy to or from the host and the host never waits
// inside a step:
//
//   scores [1][X] = W_router · x          (dev_matmul)
//   choice        = route_on_device(scores, bias)  -> ids, weights, pair_of, expert table
//   beside()      (the shared expert: independent of the choice)
//   out           = CudaRoutedExperts::run_decode_on_device(choice)
//
// Each MoE block has its own choice region for the whole step; the routing observer hears the
// step's choices after the step (copy_back before the step's last sync, report after it), in
// block order, where the host path reports each block as it routes. Prefill (n > 1), the pack
// path with fewer slots than experts and routing outside device_routing_supports stay on the
// host (gpu/cuda_host_router.h).
// gpu::set_router_on_device(false) sends decode steps to the host too.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/backend.h"
#include "core/model_config.h"
#include "gpu/cuda_attention.h"
#include "gpu/cuda_moe.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_routing.h"

namespace moepack::gpu {

class DeviceRouter {
 public:
  // Makes the router usable when experts.resident(), the model has routed experts and
  // device_routing_supports(cfg); otherwise it stays off (active() false). biases: one per
  // block ([n_expert] host floats, or empty: no selection bias), copied to VRAM here. hash (may
  // be empty): one per block, DeepSeek-V4's tid2eid table [n_vocab][n_expert_used] of a
  // hash-routed block or empty; copied to VRAM, and the router stays off when a row does not
  // hold n_expert_used distinct ids below n_expert (the host's path takes any row). Throws
  // Error from the CUDA calls (out of VRAM: the numbers).
  void bind(const ModelConfig& cfg, const CudaRoutedExperts& experts,
            const std::vector<std::vector<float>>& biases,
            const std::vector<std::vector<int32_t>>& hash = {});

  // True when a step of n_tokens routes on the GPU.
  bool active(int64_t n_tokens) const { return on_ && n_tokens == 1 && router_on_device(); }

  // Call at the start of each forward step (forgets which blocks the last step routed).
  void begin_step() { routed_.clear(); }

  // blk.il at decode (active(1)): the router GEMV of x ([E] device) into scores ([X] device
  // scratch), the choice, beside() (may be empty), the routed experts into out ([E]) with
  // SwiGLU clamped at `limit` (<= 1e-6: none). token: the step's token id (device), needed by a
  // hash-routed block. Returns the expert FFNs evaluated (K). Throws what the launches throw.
  uint64_t run_block(uint32_t il, const DevMatrix& router, const float* x, float* scores,
                     CudaRoutedExperts& experts, const std::function<void()>& beside, float* out,
                     cudaStream_t st, const int32_t* token = nullptr, float limit = 0.0f);

  // Before the step's last stream sync: queues the copy of the step's choices to pinned host
  // memory when there is an observer (or `always`: a step captured in a CUDA graph, which serves
  // steps with and without one) and the step routed on the GPU.
  void copy_back(const RoutingObserver& observer, cudaStream_t st, bool always = false);
  // After that sync: observer(block, pos, ids, weights) for every block the step routed, in block
  // order.
  void report(const RoutingObserver& observer, uint32_t pos);

  // The blocks this step routed (run_block calls), and for a step replayed from a CUDA graph
  // captured with copy_back(..., true): those blocks, their choices copied back.
  const std::vector<uint32_t>& routed() const { return routed_; }
  void mark_routed(const std::vector<uint32_t>& blocks) {
    routed_ = blocks;
    copied_ = !blocks.empty();
  }

 private:
  DeviceChoice choice_of(uint8_t* base, uint32_t il) const {
    return device_choice_at(base + static_cast<int64_t>(il) * choice_bytes_, spec_.k);
  }

  bool on_ = false;
  DeviceRouteSpec spec_;
  int64_t choice_bytes_ = 0;
  DeviceBuffer choices_, biases_, hash_;
  PinnedBuffer choices_host_;
  std::vector<const float*> bias_of_;  // per block: its bias in biases_, or null
  std::vector<const int32_t*> hash_of_;  // per block: its tid2eid table in hash_, or null
  std::vector<uint32_t> routed_;       // blocks routed this step, in order
  bool copied_ = false;                // the choices are copied back this step (copy_back, mark_routed)
};

}  // namespace moepack::gpu
