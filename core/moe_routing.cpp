#include "core/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/cpu_ops.h"
#include "core/route_math.h"

namespace moepack {

namespace {

// Softmax of the router's logits with route_expf, the sum in double over 32 strided partial
// sums (partial j: the values i = j mod 32 in increasing i; then the partials in increasing j),
// the order of gpu/kernels_route.cu's warp, so both give the same bits.
void softmax_gate(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double part[32] = {};
  for (int64_t i = 0; i < n; ++i) {
    x[i] = x[i] == -INFINITY ? 0.0f : route_expf(x[i] - mx);
    part[i % 32] += static_cast<double>(x[i]);
  }
  double sum = 0.0;
  for (const double v : part) sum += v;
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace

float sqrt_softplus_gate(float logit) { return std::sqrt(route_softplusf(logit)); }

std::vector<uint32_t> experts_by_picks(std::span<const int32_t> ids, int64_t n_expert) {
  std::vector<uint32_t> order;
  if (n_expert <= 0) return order;
  std::vector<uint32_t> picks(static_cast<size_t>(n_expert), 0);
  for (const int32_t e : ids) {
    if (e < 0 || e >= n_expert) continue;
    if (picks[static_cast<size_t>(e)]++ == 0) order.push_back(static_cast<uint32_t>(e));
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return picks[a] > picks[b]; });
  return order;
}

void route_token(const ModelConfig& cfg, const float* logits, const float* bias, int32_t* ids, float* weights,
                 float* scratch) {
  const int64_t n = cfg.n_expert;
  const int64_t k = cfg.n_expert_used;
  float* probs = scratch;
  float* sel = scratch + n;
  std::copy(logits, logits + n, probs);
  if (cfg.gating == ExpertGating::Softmax) {
    softmax_gate(probs, n);
  } else if (cfg.gating == ExpertGating::SqrtSoftplus) {
    for (int64_t i = 0; i < n; ++i) probs[i] = sqrt_softplus_gate(probs[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) probs[i] = 1.0f / (1.0f + route_expf(-probs[i]));
  }
  for (int64_t i = 0; i < n; ++i) sel[i] = bias ? probs[i] + bias[i] : probs[i];

  if (cfg.n_expert_groups > 1) {
    const int64_t groups = cfg.n_expert_groups;
    const int64_t per = n / groups;
    std::vector<std::pair<float, int64_t>> gscore(static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) {
      float a = -INFINITY, b = -INFINITY;  // best two of the group
      for (int64_t j = 0; j < per; ++j) {
        const float v = sel[g * per + j];
        if (v > a) {
          b = a;
          a = v;
        } else if (v > b) {
          b = v;
        }
      }
      gscore[static_cast<size_t>(g)] = {per >= 2 ? a + b : a, g};
    }
    std::stable_sort(gscore.begin(), gscore.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    std::vector<bool> keep(static_cast<size_t>(groups), false);
    for (uint32_t i = 0; i < cfg.n_group_used; ++i) keep[static_cast<size_t>(gscore[i].second)] = true;
    for (int64_t g = 0; g < groups; ++g) {
      if (!keep[static_cast<size_t>(g)]) std::fill(sel + g * per, sel + (g + 1) * per, -INFINITY);
    }
  }

  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return sel[a] > sel[b] || (sel[a] == sel[b] && a < b);
  });
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) {
    ids[i] = order[static_cast<size_t>(i)];
    weights[i] = probs[ids[i]];
    sum += weights[i];
  }
  if (cfg.expert_weights_norm) {
    const float denom = std::max(sum, 6.103515625e-5f);
    for (int64_t i = 0; i < k; ++i) weights[i] /= denom;
  }
  if (cfg.expert_weights_scale != 1.0f) {
    for (int64_t i = 0; i < k; ++i) weights[i] *= cfg.expert_weights_scale;
  }
}

}  // namespace moepack
