// DecodeGraph: one decode step of a CUDA backend as one CUDA graph launch, shared by the common
// backend (gpu/cuda_backend.cpp) and kimi-linear's (gpu/cuda_kimi_linear.cpp).
//
// A decode step with every expert resident routes on the GPU (gpu/cuda_device_router.h), so its
// launches need nothing from the host but the token and the position. Both go to pinned memory
// (two int32: token, position), the step's first node copies them to the device, and every
// position-dependent launch reads the position there (RoPE, the KV cache's row store and
// attention take a pos_dev: gpu/kernels.h; attention's launches cover both sides of its
// 4096-position range split), so one graph serves every step at every position of the KV
// cache, truncations included. The logits go to a pinned buffer the graph copies into.
//
// A graph serves the positions below its bound (bound_for: the KV cache's positions up to 4096,
// beyond that a power-of-two multiple of 4096 that covers the step, at most n_ctx), so that a
// step at a short position does not launch the empty blocks of every range of a long KV cache;
// a step past the bound drops the graph (the next step runs directly, the one after captures
// with a bound twice as large).
//
//   step 1 after construction or drop(): the launches run directly (they size every buffer:
//          nothing may be allocated while capturing);
//   step 2: captured and instantiated, then launched;
//   later:  one cudaGraphLaunch.
//
// A capture that fails (a launch this CUDA cannot capture, an invalidated capture, a failed
// instantiation) leaves the backend on direct launches for good, with one line on stderr; a
// lost device (DeviceLostError) is rethrown. The graph keeps the addresses of every buffer its
// launches use and the process-wide switches' choices at capture time (gpu/cuda_backend.h's
// set_decode_graph): a backend calls drop() before anything it holds may move.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/backend.h"
#include "gpu/cuda_device_router.h"
#include "gpu/cuda_resources.h"

namespace moepack::gpu {

class DecodeGraph {
 public:
  // Queues one decode step's launches on the stream given to step(): the token id at d_step[0]
  // and its position at d_step[1] (device int32, written by the step before these launches),
  // every block with pos_dev = d_step + 1 serving positions below max_kv (attention's launches,
  // gpu/kernels.h gqa_attend), the head, the last token's logits copied to logits_host (pinned,
  // n_vocab floats) and DeviceRouter::copy_back(..., true).
  using Enqueue = std::function<void(const int32_t* d_step, float* logits_host, int64_t max_kv)>;

  DecodeGraph() = default;
  ~DecodeGraph() { drop(); }
  DecodeGraph(const DecodeGraph&) = delete;
  DecodeGraph& operator=(const DecodeGraph&) = delete;

  // Whether a decode step may run through step(): set_decode_graph is on and no capture has
  // failed. The caller also requires one token, its logits only, and the router on the GPU
  // (DeviceRouter::active(1)).
  bool usable() const;

  // One decode step of `token` at pos0 (< n_ctx, the KV cache's positions; see the top of this
  // file); returns with the stream synchronized and the step's logits in logits[0, n_vocab)
  // (host; the rest of the span is left alone). The routing observer is the caller's
  // (DeviceRouter::report after this returns). The step's expert selections and evaluations are
  // counted into stats (a replayed step adds what its capture counted). Throws what the launches
  // throw (DeviceLostError included); a failed capture is not an error.
  void step(int32_t token, int64_t pos0, int64_t n_ctx, std::span<float> logits, int64_t n_vocab,
            cudaStream_t st, DeviceRouter& router, BackendStats& stats, const Enqueue& enqueue);

  // The positions a graph captured for a step at pos0 serves: n_ctx when n_ctx <= 4096, else the
  // least 4096 * 2^i >= pos0 + 1, at most n_ctx.
  static int64_t bound_for(int64_t pos0, int64_t n_ctx);

  // Forgets the graph (call before a buffer it uses may move): the next step runs directly, the
  // one after captures again.
  void drop();

 private:
  void capture(cudaStream_t st, DeviceRouter& router, BackendStats& stats,
               const std::function<void()>& enqueue);

  PinnedBuffer step_host_, logits_host_;
  DeviceBuffer step_dev_;
  cudaGraphExec_t exec_ = nullptr;
  bool warm_ = false, failed_ = false, counted_ = false;
  int64_t bound_ = 0;                       // the held graph's positions (bound_for at its capture)
  std::vector<uint32_t> routed_;            // the blocks a launch routes (DeviceRouter::mark_routed)
  uint64_t selections_ = 0, computed_ = 0;  // what a launch counts
};

}  // namespace moepack::gpu
