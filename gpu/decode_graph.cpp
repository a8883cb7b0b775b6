#include "gpu/decode_graph.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_check.h"

namespace moepack::gpu {

namespace {
std::atomic<bool> g_decode_graph{true};
std::atomic<uint64_t> g_decode_graph_launches{0};
}  // namespace

void set_decode_graph(bool on) { g_decode_graph.store(on, std::memory_order_relaxed); }
uint64_t decode_graph_launches() { return g_decode_graph_launches.load(std::memory_order_relaxed); }

bool DecodeGraph::usable() const { return g_decode_graph.load(std::memory_order_relaxed) && !failed_; }

int64_t DecodeGraph::bound_for(int64_t pos0, int64_t n_ctx) {
  constexpr int64_t kRange = 4096;  // attention's range of positions (kernels_attention.cu)
  if (n_ctx <= kRange) return n_ctx;
  int64_t b = kRange;
  while (b < pos0 + 1) b *= 2;
  return std::min(b, n_ctx);
}

void DecodeGraph::step(int32_t token, int64_t pos0, int64_t n_ctx, std::span<float> logits, int64_t n_vocab,
                       cudaStream_t st, DeviceRouter& router, BackendStats& stats, const Enqueue& enqueue) {
  if (n_vocab <= 0 || logits.size() < static_cast<size_t>(n_vocab) || pos0 < 0 || pos0 >= n_ctx) {
    throw Error("internal: DecodeGraph::step with " + std::to_string(logits.size()) + " logits for " +
                std::to_string(n_vocab) + ", position " + std::to_string(pos0) + " of " +
                std::to_string(n_ctx));
  }
  const size_t nv = static_cast<size_t>(n_vocab);
  if (exec_ && pos0 + 1 > bound_) drop();  // past the positions its attention launches cover
  const int64_t bound = exec_ ? bound_ : bound_for(pos0, n_ctx);
  if (!step_host_.size()) step_host_.allocate(2 * sizeof(int32_t), "decode step");
  if (!step_dev_.size()) step_dev_.allocate(2 * sizeof(int32_t), "decode step");
  if (logits_host_.size() < nv * sizeof(float)) {
    drop();  // the graph copies into the old buffer
    logits_host_.allocate(nv * sizeof(float), "decode logits");
  }
  int32_t* in = step_host_.as<int32_t>();
  in[0] = token;
  in[1] = static_cast<int32_t>(pos0);
  float* out = logits_host_.as<float>();
  const auto launches = [&] {
    MOEPACK_CUDA_CHECK(
        cudaMemcpyAsync(step_dev_.as<void>(), in, 2 * sizeof(int32_t), cudaMemcpyHostToDevice, st));
    enqueue(step_dev_.as<int32_t>(), out, bound);
  };
  if (!exec_ && warm_) {
    capture(st, router, stats, launches);
    bound_ = bound;
  }
  if (exec_) {
    MOEPACK_CUDA_CHECK(cudaGraphLaunch(exec_, st));
    // (The capturing step's launches counted that step's selections already.)
    if (counted_) {
      stats.expert_selections += selections_;
      stats.experts_computed += computed_;
    }
    counted_ = true;
    router.mark_routed(routed_);
    g_decode_graph_launches.fetch_add(1, std::memory_order_relaxed);
  } else {
    launches();  // the warm-up step, or every step after a failed capture
    warm_ = true;
  }
  MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
  std::copy(out, out + nv, logits.begin());
}

void DecodeGraph::capture(cudaStream_t st, DeviceRouter& router, BackendStats& stats,
                          const std::function<void()>& enqueue) {
  const uint64_t sel0 = stats.expert_selections, comp0 = stats.experts_computed;
  const auto give_up = [&](const std::string& why) {
    failed_ = true;
    router.begin_step();
    stats.expert_selections = sel0;  // nothing ran: the direct launches count
    stats.experts_computed = comp0;
    std::fprintf(stderr, "moepack: a decode step could not become a CUDA graph (%s); launching directly\n",
                 why.c_str());
  };
  const auto end_capture = [&]() -> cudaGraph_t {
    cudaGraph_t g = nullptr;
    const cudaError_t e = cudaStreamEndCapture(st, &g);
    if (e != cudaSuccess) {
      if (g) cudaGraphDestroy(g);
      if (is_sticky_cuda_error(e)) MOEPACK_CUDA_CHECK(e);
      cudaGetLastError();
      give_up(std::string("end of capture: ") + cudaGetErrorString(e));
      return nullptr;
    }
    return g;
  };
  MOEPACK_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (const DeviceLostError&) {
    if (cudaGraph_t g = end_capture()) cudaGraphDestroy(g);
    throw;
  } catch (const std::exception& e) {
    if (cudaGraph_t g = end_capture()) cudaGraphDestroy(g);
    cudaGetLastError();
    if (!failed_) give_up(e.what());
    return;
  }
  cudaGraph_t g = end_capture();
  if (!g) return;
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
  cudaGraphDestroy(g);
  if (e != cudaSuccess) {
    if (is_sticky_cuda_error(e)) MOEPACK_CUDA_CHECK(e);
    cudaGetLastError();
    give_up(std::string("instantiation: ") + cudaGetErrorString(e));
    return;
  }
  exec_ = exec;
  routed_ = router.routed();
  selections_ = stats.expert_selections - sel0;
  computed_ = stats.experts_computed - comp0;
}

void DecodeGraph::drop() {
  if (exec_) cudaGraphExecDestroy(exec_);
  exec_ = nullptr;
  warm_ = false;
  counted_ = false;
}

}  // namespace moepack::gpu
