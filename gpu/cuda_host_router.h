// HostRouter: the expert selection of a MoE block on the CUDA backends (cuda_backend.cpp for
// deepseek2 / qwen3moe / llama, cuda_deepseek4.cpp, cuda_kimi_linear.cpp). The router's scores
// are one GEMV on the GPU; the top-k choice runs on the host with core's own code
// (core/moe_routing.h route_token, or an architecture's hash table), the CPU reference's code, so
// equal scores give the CPU backend's expert ids and weights bit for bit:
//
//   scores [n][X] = W_router · x             device (dev_matmul), then copied to pinned host
//                                            memory; `beside` (if any) is launched after the
//                                            copy; the host waits for the copy only (an event,
//                                            not the stream)
//   for t = 0 .. n-1, in position order:
//     ids[t][0..K), weights[t][0..K)       = choose(t, scores[t]), by default
//                                            route_token(cfg, scores[t], bias, ...)
//     report(block, pos0 + t, ids[t], weights[t])
//
// With a Lookahead (prefetch), the next MoE block's router is applied to the same x in the same
// launch sequence, copied with the scores, and route_token on those scores gives predicted()
// (never reported, never used to compute): the experts that block will likely select, most
// wanted first.
//
// `beside` is work that does not depend on the choice (the block's shared expert): launched on
// the same stream right after the scores' copy, it runs on the GPU once the copy is done, while
// the host wakes, chooses and launches the routed experts, whose uploads and kernels queue
// behind it instead of reaching an idle GPU. The backends pass it unless
// set_shared_expert_overlap(false) (the benchmark's side by side); the kernels and their
// inputs are the same either way, so no result changes. (Decode steps that route on the GPU,
// gpu/cuda_device_router.h, do not come here: their shared expert always runs beside the
// choice, so the switch changes only host-routed steps.)
//
// X = n_expert, K = n_expert_used of the model's config. `report` has the routing observer's
// signature: pass the observer itself, or a function that collects the calls and replays them
// later (a backend whose ubatches must reach the observer in the CPU reference's block-major
// order). The caller then runs the experts on ids() / weights() (CudaRoutedExperts::run), which
// stay valid until the next route().
//
// Errors: CUDA failures throw from MOEPACK_CUDA_CHECK (DeviceLostError when sticky, Error
// otherwise), a pinned allocation that fails throws Error; route_token / choose may throw.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/backend.h"
#include "core/model_config.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_weights.h"

namespace moepack::gpu {

// Fills ids [K] and weights [K] of token t (position pos0 + t) from its scores [X] (host).
using RouterChoose = std::function<void(int64_t t, const float* scores, int32_t* ids, float* weights)>;
// Launches work on route()'s stream that does not depend on the choice (HostRouter::route).
using RouterBeside = std::function<void()>;

// Whether the CUDA backends launch a MoE block's shared expert beside the host's choice
// (HostRouter::route's `beside`; on by default) or after the routed experts, as before.
// Process-wide; the benchmark compares both with the router on the host.
void set_shared_expert_overlap(bool on);
bool shared_expert_overlap();

// The next MoE block's router, its route_token bias ([X] host or null) and, for a block that
// does not route with route_token (a hash table), its choice, for HostRouter::route.
struct RouterLookahead {
  const DevMatrix* router = nullptr;
  const float* bias = nullptr;
  RouterChoose choose;
};

class HostRouter {
 public:
  using Choose = RouterChoose;
  using Beside = RouterBeside;

  explicit HostRouter(const ModelConfig& cfg) : cfg_(cfg) {}
  using Lookahead = RouterLookahead;

  // Pinned host memory for the scores of up to n_tokens positions (allocate before the first
  // forward() to keep allocations out of it; route() grows it otherwise).
  void reserve(int64_t n_tokens);

  // The selection above for blk.`block`: x [n][n_embd] and d_scores [n][X] device (d_scores is
  // overwritten); bias [X] host or null (route_token's selection bias). Without `choose`, every
  // token goes through route_token. `report` may be empty. With `next` (router non-null),
  // d_scores holds [2n][X] and predicted() is filled; otherwise predicted() is empty.
  // `beside` (may be empty): launches on st only, ordered after the copy like everything on st.
  // It must not synchronize st (correct, but the overlap is lost) and must not write what the
  // caller's later launches read before they use its output (x, the routed experts' buffers).
  void route(uint32_t block, const DevMatrix& router, const float* x, int64_t n, int64_t pos0,
             const float* bias, float* d_scores, cudaStream_t st, const RoutingObserver& report,
             const Choose& choose = {}, const Lookahead& next = {}, const Beside& beside = {});

  const int32_t* ids() const { return ids_.data(); }        // [n][K] of the last route()
  const float* weights() const { return weights_.data(); }  // [n][K] of the last route()
  // The next block's likely experts (distinct): for one token its K picks in route_token's
  // order; for n tokens the ids picked most often, ties by first pick (token order, then k).
  const std::vector<uint32_t>& predicted() const { return predicted_; }

 private:
  const ModelConfig& cfg_;
  PinnedBuffer scores_;  // [2n][X]: this block's scores, then the lookahead's
  Event copied_;         // recorded after the scores' copy
  std::vector<int32_t> ids_;
  std::vector<float> weights_;
  std::vector<float> scratch_;  // route_token's, [2 X]
  std::vector<uint32_t> predicted_;
  std::vector<int32_t> pid_;  // the lookahead's picks [n][K]
  std::vector<float> pw_;     // one token's weights [K] (unused)
};

}  // namespace moepack::gpu
