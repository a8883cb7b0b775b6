#include "core/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"

namespace moepack {

RopeParams rope_params(const ModelConfig& cfg) {
  RopeParams p;
  p.n_dims = static_cast<int>(cfg.n_rot);
  p.neox = cfg.rope_style == RopeStyle::Neox;
  p.freq_base = cfg.rope_freq_base;
  p.freq_scale = cfg.rope_freq_scale;
  p.ext_factor = cfg.yarn_ext_factor;
  p.attn_factor = cfg.yarn_attn_factor;
  p.beta_fast = cfg.yarn_beta_fast;
  p.beta_slow = cfg.yarn_beta_slow;
  p.n_ctx_orig = static_cast<int>(cfg.rope_n_ctx_orig);
  return p;
}

void gqa_attend(ThreadPool& pool, const float* q, int64_t n_tok, int64_t pos0, const float* kv, int64_t kv_width,
                int64_t n_head, int64_t n_head_kv, int64_t head_dim_k, int64_t head_dim_v, float kq_scale, float* out) {
  const int64_t group = n_head / n_head_kv;
  const int64_t v_off = n_head_kv * head_dim_k;
  pool.parallel_for(n_tok * n_head, 1, [&](int64_t b, int64_t e) {
    std::vector<float> scores;
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / n_head, h = i % n_head, hk = h / group;
      const int64_t n_kv = pos0 + t + 1;
      const float* qh = q + (t * n_head + h) * head_dim_k;
      scores.resize(static_cast<size_t>(n_kv));
      for (int64_t s = 0; s < n_kv; ++s) scores[s] = dot_f32(qh, kv + s * kv_width + hk * head_dim_k, head_dim_k) * kq_scale;
      softmax_inplace(scores.data(), n_kv);
      float* o = out + (t * n_head + h) * head_dim_v;
      std::fill(o, o + head_dim_v, 0.0f);
      for (int64_t s = 0; s < n_kv; ++s) {
        const float p = scores[s];
        const float* v = kv + s * kv_width + v_off + hk * head_dim_v;
        for (int64_t d = 0; d < head_dim_v; ++d) o[d] += p * v[d];
      }
    }
  });
}

}  // namespace moepack
