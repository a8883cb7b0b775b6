#include "gpu/cuda_host_router.h"

#include <algorithm>
#include <atomic>
#include <span>

#include "core/moe_routing.h"
#include "gpu/cuda_attention.h"
#include "gpu/cuda_check.h"

namespace moepack::gpu {

namespace {
size_t fbytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }
std::atomic<bool> g_shared_overlap{true};
}  // namespace

void set_shared_expert_overlap(bool on) { g_shared_overlap.store(on, std::memory_order_relaxed); }
bool shared_expert_overlap() { return g_shared_overlap.load(std::memory_order_relaxed); }

void HostRouter::reserve(int64_t n_tokens) {
  // Room for the lookahead's scores too.
  const size_t bytes = fbytes(2 * n_tokens * static_cast<int64_t>(cfg_.n_expert));
  if (scores_.size() < bytes) scores_.allocate(bytes, "router scores");
}

void HostRouter::route(uint32_t block, const DevMatrix& router, const float* x, int64_t n, int64_t pos0,
                       const float* bias, float* d_scores, cudaStream_t st, const RoutingObserver& report,
                       const Choose& choose, const Lookahead& next, const Beside& beside) {
  const int64_t E = cfg_.n_embd, X = cfg_.n_expert, K = cfg_.n_expert_used;
  const int64_t rows = next.router ? 2 * n : n;
  dev_matmul(router, x, E, n, d_scores, X, st);
  if (next.router) dev_matmul(*next.router, x, E, n, d_scores + n * X, X, st);
  reserve(n);
  MOEPACK_CUDA_CHECK(
      cudaMemcpyAsync(scores_.as<float>(), d_scores, fbytes(rows * X), cudaMemcpyDeviceToHost, st));
  MOEPACK_CUDA_CHECK(cudaEventRecord(copied_.get(), st));
  if (beside) beside();
  MOEPACK_CUDA_CHECK(cudaEventSynchronize(copied_.get()));
  const float* scores = scores_.as<float>();
  ids_.resize(static_cast<size_t>(n * K));
  weights_.resize(static_cast<size_t>(n * K));
  scratch_.resize(static_cast<size_t>(2 * X));
  for (int64_t t = 0; t < n; ++t) {
    int32_t* id = ids_.data() + t * K;
    float* w = weights_.data() + t * K;
    if (choose) {
      choose(t, scores + t * X, id, w);
    } else {
      route_token(cfg_, scores + t * X, bias, id, w, scratch_.data());
    }
    if (report)
      report(block, static_cast<uint32_t>(pos0 + t), std::span<const int32_t>(id, K),
             std::span<const float>(w, K));
  }
  predicted_.clear();
  if (!next.router) return;
  pid_.resize(static_cast<size_t>(n * K));
  pw_.resize(static_cast<size_t>(K));
  for (int64_t t = 0; t < n; ++t) {
    int32_t* id = pid_.data() + t * K;
    if (next.choose) {
      next.choose(t, scores + (n + t) * X, id, pw_.data());
    } else {
      route_token(cfg_, scores + (n + t) * X, next.bias, id, pw_.data(), scratch_.data());
    }
  }
  predicted_ = experts_by_picks(pid_, X);  // most picked first, ties by first pick
}

}  // namespace moepack::gpu
