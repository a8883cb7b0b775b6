#include "core/cpu_moe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/expert_provider.h"
#include "core/moe_routing.h"
#include "core/thread_pool.h"

namespace moepack {

void swiglu_clamped(float* g, const float* u, int64_t n, float limit) {
  const bool clamp = limit > 1e-6f;
  for (int64_t i = 0; i < n; ++i) {
    float gt = g[i], up = u[i];
    if (clamp) {
      gt = std::min(gt, limit);
      up = std::clamp(up, -limit, limit);
    }
    g[i] = (gt / (1.0f + std::exp(-gt))) * up;
  }
}

void dense_swiglu_ffn(ThreadPool& pool, const WeightView& gate, const WeightView& up, const WeightView& down,
                      const float* x, int64_t n, float limit, float* out) {
  const int64_t E = gate.ne0, ff = gate.ne1;
  std::vector<float> g(static_cast<size_t>(n * ff)), u(g.size());
  matmul(pool, gate, x, E, n, g.data(), ff);
  matmul(pool, up, x, E, n, u.data(), ff);
  swiglu_clamped(g.data(), u.data(), n * ff, limit);
  const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
  matmul_add_scaled(pool, down, g.data(), ff, n, ones.data(), out, down.ne1);
}

uint64_t run_routed_experts(ThreadPool& pool, ExpertProvider& experts, uint32_t block, const float* x,
                            int64_t n, int64_t E, int64_t k, const int32_t* ids, const float* w, float limit,
                            float* out, double* io_wait_ms, const std::function<void()>& resident) {
  std::map<uint32_t, std::vector<std::pair<int64_t, float>>> by_expert;  // expert -> (token, weight)
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < k; ++j) by_expert[static_cast<uint32_t>(ids[t * k + j])].push_back({t, w[t * k + j]});
  }
  std::vector<uint32_t> unique;
  for (const auto& [e, _] : by_expert) unique.push_back(e);
  const size_t batch = std::max<size_t>(1, std::min<size_t>(experts.max_batch(), unique.size()));
  uint64_t computed = 0;
  std::vector<float> xin, g, u, scale;
  for (size_t b = 0; b < unique.size(); b += batch) {
    const size_t m = std::min(batch, unique.size() - b);
    // Experts are computed as they arrive (ExpertProvider::acquire_each) into outputs of their
    // own, and added to `out` in ascending id order, as soon as all lower ids are in: the same
    // operations in the same order whatever order the reads land in, so the same bits.
    std::vector<std::vector<float>> y(m);
    std::vector<bool> done(m, false);
    size_t added = 0;
    // Next-layer prefetch starts as soon as this block's last batch waits for no read.
    const std::function<void()> landed = b + m == unique.size() ? resident : std::function<void()>();
    experts.acquire_each(
        block, std::span<const uint32_t>(unique.data() + b, m), io_wait_ms,
        [&](size_t i, const ExpertFfn& f) {
          const auto& users = by_expert[unique[b + i]];
          const int64_t nu = static_cast<int64_t>(users.size());
          xin.resize(static_cast<size_t>(nu * E));
          scale.resize(static_cast<size_t>(nu));
          for (int64_t j = 0; j < nu; ++j) {
            std::copy(x + users[j].first * E, x + (users[j].first + 1) * E, xin.begin() + j * E);
            scale[j] = users[j].second;
          }
          const int64_t ff = f.gate.ne1;
          g.resize(static_cast<size_t>(nu * ff));
          u.resize(g.size());
          matmul(pool, f.gate, xin.data(), E, nu, g.data(), ff);
          matmul(pool, f.up, xin.data(), E, nu, u.data(), ff);
          swiglu_clamped(g.data(), u.data(), nu * ff, limit);
          y[i].assign(static_cast<size_t>(nu * E), 0.0f);
          matmul_add_scaled(pool, f.down, g.data(), ff, nu, scale.data(), y[i].data(), E);
          done[i] = true;
          for (; added < m && done[added]; ++added) {
            const auto& us = by_expert[unique[b + added]];
            for (size_t j = 0; j < us.size(); ++j) {
              float* dst = out + us[j].first * E;
              const float* src = y[added].data() + j * E;
              for (int64_t c = 0; c < E; ++c) dst[c] += src[c];
            }
            computed += us.size();
            std::vector<float>().swap(y[added]);
          }
        },
        landed);
    if (added != m) {
      throw Error("internal: blk." + std::to_string(block) + ": " + std::to_string(m - added) +
                  " experts were never handed out");
    }
  }
  if (computed != static_cast<uint64_t>(n * k)) {
    throw Error("internal: blk." + std::to_string(block) + " computed " + std::to_string(computed) +
                " expert FFNs for " + std::to_string(n * k) + " selections");
  }
  return computed;
}

std::vector<uint32_t> predict_next_experts(ThreadPool& pool, const ModelConfig& cfg, const WeightView& router,
                                           const float* bias, const float* x, int64_t n) {
  const int64_t E = cfg.n_embd, X = cfg.n_expert, K = cfg.n_expert_used;
  std::vector<float> scores(static_cast<size_t>(n * X)), scratch(static_cast<size_t>(2 * X));
  matmul(pool, router, x, E, n, scores.data(), X);
  std::vector<int32_t> ids(static_cast<size_t>(n * K));
  std::vector<float> w(static_cast<size_t>(K));
  for (int64_t t = 0; t < n; ++t) {
    route_token(cfg, scores.data() + t * X, bias, ids.data() + t * K, w.data(), scratch.data());
  }
  return experts_by_picks(ids, X);
}

std::function<void()> prefetch_next_block(ExpertProvider& experts, const ModelConfig& cfg, uint32_t il,
                                          const std::function<std::vector<uint32_t>(uint32_t)>& predict) {
  const uint32_t next = cfg.next_moe_layer(il);
  if (!experts.prefetching() || next >= cfg.n_layer) return {};
  std::vector<uint32_t> predicted = predict(next);
  if (predicted.empty()) return {};
  return [&experts, next, predicted = std::move(predicted)] { experts.prefetch(next, predicted); };
}

}  // namespace moepack
