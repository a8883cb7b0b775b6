// The `deepseek4` per-token operations (see deepseek4_ops.h); arch_deepseek4.cpp's reference math.
#include "core/deepseek4_ops.h"

#include <algorithm>
#include <cmath>

#include "core/cpu_ops.h"
#include "core/error.h"
#include "core/gguf_model.h"
#include "core/model_config.h"
#include "core/moe_routing.h"

namespace moepack::ds4 {

namespace {
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
}  // namespace

std::vector<int32_t> read_tid2eid(const GgufModel& g, const ModelConfig& cfg, const std::string& name,
                                  const std::string& file) {
  const GgufTensorRef* r = g.find_tensor(name);
  if (!r) throw FormatError(file, name, 0, "tensor is missing (hash-routed blocks need it)");
  const auto& ne = r->info->ne;
  if (r->info->type != GgmlType::I32 || ne[0] != cfg.n_expert_used || ne[1] != cfg.n_vocab || ne[2] != 1) {
    throw FormatError(
        g.shards()[r->shard].path(), name, r->info->info_offset,
        "expected I32 [" + std::to_string(cfg.n_expert_used) + ", " + std::to_string(cfg.n_vocab) + "]");
  }
  std::vector<int32_t> out(static_cast<size_t>(ne[0] * ne[1]));
  g.shards()[r->shard].read_tensor_data(*r->info, 0, out.data(), out.size() * sizeof(int32_t));
  for (int32_t e : out) {
    if (e < 0 || e >= static_cast<int32_t>(cfg.n_expert)) {
      throw FormatError(g.shards()[r->shard].path(), name, r->info->info_offset,
                        "expert id " + std::to_string(e) + " out of range");
    }
  }
  return out;
}

void hash_route(const ModelConfig& cfg, const float* logits, const int32_t* row, int32_t* id, float* w) {
  const int64_t K = cfg.n_expert_used;
  float sum = 0.0f;
  for (int64_t j = 0; j < K; ++j) {
    id[j] = row[j];
    sum += (w[j] = sqrt_softplus_gate(logits[row[j]]));
  }
  if (cfg.expert_weights_norm) {
    for (int64_t j = 0; j < K; ++j) w[j] /= std::max(sum, 6.103515625e-5f);
  }
  if (cfg.expert_weights_scale != 1.0f) {
    for (int64_t j = 0; j < K; ++j) w[j] *= cfg.expert_weights_scale;
  }
}

void hc_weights(const float* mix, const float* base, const float* scale, int64_t HC, uint32_t iters,
                float eps, float* pre, float* post, float* Mt) {
  for (int64_t s = 0; s < HC; ++s) {
    pre[s] = sigmoid(mix[s] * scale[0] + base[s]) + eps;
    post[s] = 2.0f * sigmoid(mix[HC + s] * scale[1] + base[HC + s]);
  }
  for (int64_t src = 0; src < HC; ++src) {
    float l[8], mx = -INFINITY;
    for (int64_t dst = 0; dst < HC; ++dst) {
      const int64_t i = 2 * HC + HC * src + dst;
      l[dst] = mix[i] * scale[2] + base[i];
      mx = std::max(mx, l[dst]);
    }
    float sum = 0.0f;
    for (int64_t dst = 0; dst < HC; ++dst) sum += (l[dst] = std::exp(l[dst] - mx));
    for (int64_t dst = 0; dst < HC; ++dst) Mt[dst * HC + src] = l[dst] / sum + eps;
  }
  const auto norm_rows = [&] {
    for (int64_t dst = 0; dst < HC; ++dst) {
      float sum = 0.0f;
      for (int64_t src = 0; src < HC; ++src) sum += Mt[dst * HC + src];
      for (int64_t src = 0; src < HC; ++src) Mt[dst * HC + src] /= sum + eps;
    }
  };
  norm_rows();
  for (uint32_t it = 1; it < iters; ++it) {
    for (int64_t src = 0; src < HC; ++src) {
      float sum = 0.0f;
      for (int64_t dst = 0; dst < HC; ++dst) sum += Mt[dst * HC + src];
      for (int64_t dst = 0; dst < HC; ++dst) Mt[dst * HC + src] /= sum + eps;
    }
    norm_rows();
  }
}

void hc_collapse(const float* S, const float* pre, int64_t HC, int64_t E, float* h) {
  std::fill(h, h + E, 0.0f);
  for (int64_t s = 0; s < HC; ++s) {
    for (int64_t c = 0; c < E; ++c) h[c] += pre[s] * S[s * E + c];
  }
}

void hc_expand(float* S, const float* y, const float* post, const float* M, int64_t HC, int64_t E,
               float* nxt) {
  for (int64_t dst = 0; dst < HC; ++dst) {
    float* o = nxt + dst * E;
    const float pd = post[dst];
    for (int64_t c = 0; c < E; ++c) o[c] = pd * y[c];
    for (int64_t src = 0; src < HC; ++src) {
      const float w = M[dst * HC + src];
      for (int64_t c = 0; c < E; ++c) o[c] += w * S[src * E + c];
    }
  }
  std::copy(nxt, nxt + HC * E, S);
}

void compress_pool(const float* a, const float* g, int64_t ring, int64_t d, int64_t c, int64_t m, int64_t s,
                   float* kappa) {
  const int64_t cd = c * d;
  const int64_t first = (c == 2 && s >= m) ? s - m : s;
  for (int64_t ch = 0; ch < d; ++ch) {
    float mx = -INFINITY;
    for (int64_t j = first; j < s + m; ++j) {
      const int64_t off = (j >= s && c == 2) ? d : 0;
      mx = std::max(mx, g[(j % ring) * cd + off + ch]);
    }
    float sum = 0.0f, acc = 0.0f;
    for (int64_t j = first; j < s + m; ++j) {
      const int64_t at = (j % ring) * cd + ((j >= s && c == 2) ? d : 0) + ch;
      const float w = std::exp(g[at] - mx);
      sum += w;
      acc += w * a[at];
    }
    kappa[ch] = acc / sum;
  }
}

float indexer_score(const float* q, const float* w, const float* row, int64_t HI, int64_t DI, float wscale) {
  float acc = 0.0f;
  for (int64_t h = 0; h < HI; ++h) acc += w[h] * wscale * std::max(0.0f, dot_f32(q + h * DI, row, DI));
  return acc;
}

void attend_sink(const float* q, const float* const* keys, int64_t n, float sink, int64_t D, float kq_scale,
                 float* sc, float* out) {
  float mx = sink;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, sc[j] = dot_f32(q, keys[j], D) * kq_scale);
  float sum = std::exp(sink - mx);
  for (int64_t j = 0; j < n; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
  std::fill(out, out + D, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float pj = sc[j] / sum;
    for (int64_t c = 0; c < D; ++c) out[c] += pj * keys[j][c];
  }
}

}  // namespace moepack::ds4
