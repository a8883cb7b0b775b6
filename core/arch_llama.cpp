// Mixtral-style `llama` attention (llama.cpp llm_build_llama): grouped-query attention, RoPE in
// NORM style (adjacent pairs) on the first rope.dimension_count dims, scale 1/sqrt(head_dim).
#include <cmath>
#include <string>
#include <vector>

#include "core/cpu_attention.h"
#include "core/tensor_store.h"
#include "core/thread_pool.h"

namespace moepack {

namespace {

class GqaAttention final : public CpuAttention {
 public:
  // qk_norm: qwen3moe's per-head RMSNorm of q and k (attn_q_norm / attn_k_norm) before RoPE.
  GqaAttention(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool, bool qk_norm)
      : cfg_(cfg), pool_(pool), rope_(rope_params(cfg)), qk_norm_(qk_norm) {
    const int64_t e = cfg.n_embd, hk = cfg.n_embd_head_k, hv = cfg.n_embd_head_v;
    for (uint32_t il = 0; il < cfg.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer L;
      L.wq = t.matrix(p + "attn_q.weight", e, cfg.n_head * hk);
      L.wk = t.matrix(p + "attn_k.weight", e, cfg.n_head_kv * hk);
      L.wv = t.matrix(p + "attn_v.weight", e, cfg.n_head_kv * hv);
      L.wo = t.matrix(p + "attn_output.weight", cfg.n_head * hv, e);
      if (qk_norm) {
        L.q_norm = t.vector(p + "attn_q_norm.weight", hk);
        L.k_norm = t.vector(p + "attn_k_norm.weight", hk);
      }
      layers_.push_back(std::move(L));
    }
  }

  int64_t kv_width(uint32_t) const override {
    return static_cast<int64_t>(cfg_.n_head_kv) * (cfg_.n_embd_head_k + cfg_.n_embd_head_v);
  }

  void forward(uint32_t il, const float* xn, int64_t n_tok, int64_t pos0, float* kv, float* out) override {
    const Layer& L = layers_[il];
    const int64_t e = cfg_.n_embd, nh = cfg_.n_head, nkv = cfg_.n_head_kv;
    const int64_t hk = cfg_.n_embd_head_k, hv = cfg_.n_embd_head_v, w = kv_width(il);
    std::vector<float> q(static_cast<size_t>(n_tok * nh * hk));
    std::vector<float> k(static_cast<size_t>(n_tok * nkv * hk)), v(static_cast<size_t>(n_tok * nkv * hv));
    matmul(pool_, L.wq, xn, e, n_tok, q.data(), nh * hk);
    matmul(pool_, L.wk, xn, e, n_tok, k.data(), nkv * hk);
    matmul(pool_, L.wv, xn, e, n_tok, v.data(), nkv * hv);
    std::vector<float> cs(static_cast<size_t>(rope_.n_dims));
    for (int64_t t = 0; t < n_tok; ++t) {
      float* qt = q.data() + t * nh * hk;
      float* kt = k.data() + t * nkv * hk;
      if (qk_norm_) {
        for (int64_t h = 0; h < nh; ++h) rms_norm(qt + h * hk, L.q_norm.data(), hk, cfg_.rms_eps, qt + h * hk);
        for (int64_t h = 0; h < nkv; ++h) rms_norm(kt + h * hk, L.k_norm.data(), hk, cfg_.rms_eps, kt + h * hk);
      }
      rope_table(rope_, pos0 + t, cs.data());
      rope_apply(rope_, cs.data(), qt, nh, hk);
      rope_apply(rope_, cs.data(), kt, nkv, hk);
      float* row = kv + (pos0 + t) * w;
      std::copy(kt, kt + nkv * hk, row);
      std::copy(v.data() + t * nkv * hv, v.data() + (t + 1) * nkv * hv, row + nkv * hk);
    }
    std::vector<float> att(static_cast<size_t>(n_tok * nh * hv));
    gqa_attend(pool_, q.data(), n_tok, pos0, kv, w, nh, nkv, hk, hv, 1.0f / std::sqrt(static_cast<float>(hk)),
               att.data());
    matmul(pool_, L.wo, att.data(), nh * hv, n_tok, out, e);
  }

 private:
  struct Layer {
    WeightView wq, wk, wv, wo;
    std::vector<float> q_norm, k_norm;
  };
  const ModelConfig& cfg_;
  ThreadPool& pool_;
  RopeParams rope_;
  bool qk_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<CpuAttention> make_attention_llama(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool) {
  return std::make_unique<GqaAttention>(cfg, t, pool, false);
}

std::unique_ptr<CpuAttention> make_gqa_attention_qk_norm(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool) {
  return std::make_unique<GqaAttention>(cfg, t, pool, true);
}

}  // namespace moepack
