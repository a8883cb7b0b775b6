// `deepseek2` attention: Multi-head Latent Attention in its absorbed form (DeepSeek-V2,
// arXiv:2405.04434 §2.1; llama.cpp llm_build_deepseek2 with attn_k_b / attn_v_b).
//
// Per token, with E = n_embd, H = n_head, R = kv_lora_rank, N = qk_nope, P = qk_rope (n_rot),
// D = N + P (key_length_mla), V = value_length_mla:
//   q      = W_qb · rmsnorm(W_qa · x)            [H][D]   (or W_q · x without q_lora)
//   q_nope, q_pe = q[h][0:N], q[h][N:D];  q_pe roped
//   c      = W_kv_a_mqa · x                      [R + P]
//   kv     = rmsnorm(c[0:R]) (attn_kv_a_norm),  k_pe = rope(c[R:R+P])   → cached per position
//   q_abs[h] = W_kb[h] · q_nope[h]               [R]   (attn_k_b: H matrices [R][N])
//   score(s) = (q_abs[h] · kv[s] + q_pe[h] · k_pe[s]) * kq_scale, softmax over s <= pos
//   o_lat[h] = sum_s p(s) kv[s]                  [R]
//   o[h]     = W_vb[h] · o_lat[h]                [V]   (attn_v_b: H matrices [V][R])
//   out      = W_o · concat_h o[h]               [E]
// KV cache per position: kv (R floats) then k_pe (P floats).
//
// YaRN: kq_scale = mscale^2 / sqrt(D) with mscale = 1 + yarn_log_multiplier * ln(1 / freq_scale)
// (DeepSeek-V3's softmax_scale with yarn_get_mscale(factor, mscale_all_dim); the GGUF key holds
// 0.1 * mscale_all_dim), and RoPE's own magnitude correction cancelled (llama.cpp passes
// attn_factor = 1 / (1 + 0.1 ln(1/freq_scale)) so that cos/sin keep magnitude 1).
#include <cmath>
#include <string>
#include <vector>

#include "core/cpu_attention.h"
#include "core/error.h"
#include "core/tensor_store.h"
#include "core/thread_pool.h"

namespace moepack {

namespace {

class MlaAttention final : public CpuAttention {
 public:
  MlaAttention(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool) : cfg_(cfg), pool_(pool) {
    const int64_t E = cfg.n_embd, H = cfg.n_head, R = cfg.kv_lora_rank, D = cfg.n_embd_head_k_mla;
    const int64_t P = cfg.n_rot, N = D - P, V = cfg.n_embd_head_v_mla, Q = cfg.q_lora_rank;
    if (P <= 0 || N <= 0) throw Error("deepseek2: rope.dimension_count must be below key_length_mla");
    rope_ = mla_rope_params(cfg);
    kq_scale_ = mla_kq_scale(cfg);
    for (uint32_t il = 0; il < cfg.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer L;
      if (Q > 0) {
        L.wq_a = t.matrix(p + "attn_q_a.weight", E, Q);
        L.q_a_norm = t.vector(p + "attn_q_a_norm.weight", Q);
        L.wq_b = t.matrix(p + "attn_q_b.weight", Q, H * D);
      } else {
        L.wq = t.matrix(p + "attn_q.weight", E, H * D);
      }
      L.wkv_a = t.matrix(p + "attn_kv_a_mqa.weight", E, R + P);
      L.kv_a_norm = t.vector(p + "attn_kv_a_norm.weight", R);
      L.wk_b = t.stacked(p + "attn_k_b.weight", N, R, H);
      L.wv_b = t.stacked(p + "attn_v_b.weight", R, V, H);
      L.wo = t.matrix(p + "attn_output.weight", H * V, E);
      layers_.push_back(std::move(L));
    }
  }

  int64_t kv_width(uint32_t) const override { return static_cast<int64_t>(cfg_.kv_lora_rank) + cfg_.n_rot; }

  void forward(uint32_t il, const float* xn, int64_t n_tok, int64_t pos0, float* kv, float* out) override {
    const Layer& L = layers_[il];
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, R = cfg_.kv_lora_rank, D = cfg_.n_embd_head_k_mla;
    const int64_t P = cfg_.n_rot, N = D - P, V = cfg_.n_embd_head_v_mla, Q = cfg_.q_lora_rank;
    const int64_t W = R + P;

    std::vector<float> q(static_cast<size_t>(n_tok * H * D));
    if (Q > 0) {
      std::vector<float> qa(static_cast<size_t>(n_tok * Q));
      matmul(pool_, L.wq_a, xn, E, n_tok, qa.data(), Q);
      for (int64_t t = 0; t < n_tok; ++t) rms_norm(qa.data() + t * Q, L.q_a_norm.data(), Q, cfg_.rms_eps, qa.data() + t * Q);
      matmul(pool_, L.wq_b, qa.data(), Q, n_tok, q.data(), H * D);
    } else {
      matmul(pool_, L.wq, xn, E, n_tok, q.data(), H * D);
    }
    std::vector<float> c(static_cast<size_t>(n_tok * W));
    matmul(pool_, L.wkv_a, xn, E, n_tok, c.data(), W);

    std::vector<float> cs(static_cast<size_t>(P));
    for (int64_t t = 0; t < n_tok; ++t) {
      rope_table(rope_, pos0 + t, cs.data());
      rope_apply(rope_, cs.data(), q.data() + t * H * D + N, H, D);  // q_pe of every head
      float* ct = c.data() + t * W;
      float* row = kv + (pos0 + t) * W;
      rms_norm(ct, L.kv_a_norm.data(), R, cfg_.rms_eps, row);
      std::copy(ct + R, ct + W, row + R);
      rope_apply(rope_, cs.data(), row + R, 1, P);
    }

    // q_abs[t][h] = W_kb[h] · q_nope[t][h]
    std::vector<float> q_abs(static_cast<size_t>(n_tok * H * R));
    for (int64_t h = 0; h < H; ++h) {
      WeightView kb = L.wk_b;
      kb.ne1 = R;
      kb.data = L.wk_b.data + static_cast<size_t>(h * R) * L.wk_b.row_bytes;
      matmul(pool_, kb, q.data() + h * D, H * D, n_tok, q_abs.data() + h * R, H * R);
    }

    std::vector<float> o_lat(static_cast<size_t>(n_tok * H * R));
    pool_.parallel_for(n_tok * H, 1, [&](int64_t b, int64_t e) {
      std::vector<float> scores;
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / H, h = i % H, n_kv = pos0 + t + 1;
        const float* qa = q_abs.data() + (t * H + h) * R;
        const float* qp = q.data() + (t * H + h) * D + N;
        scores.resize(static_cast<size_t>(n_kv));
        for (int64_t s = 0; s < n_kv; ++s) {
          const float* row = kv + s * W;
          scores[s] = (dot_f32(qa, row, R) + dot_f32(qp, row + R, P)) * kq_scale_;
        }
        softmax_inplace(scores.data(), n_kv);
        float* o = o_lat.data() + (t * H + h) * R;
        std::fill(o, o + R, 0.0f);
        for (int64_t s = 0; s < n_kv; ++s) {
          const float p = scores[s];
          const float* row = kv + s * W;
          for (int64_t d = 0; d < R; ++d) o[d] += p * row[d];
        }
      }
    });

    std::vector<float> o(static_cast<size_t>(n_tok * H * V));
    for (int64_t h = 0; h < H; ++h) {
      WeightView vb = L.wv_b;
      vb.ne1 = V;
      vb.data = L.wv_b.data + static_cast<size_t>(h * V) * L.wv_b.row_bytes;
      matmul(pool_, vb, o_lat.data() + h * R, H * R, n_tok, o.data() + h * V, H * V);
    }
    matmul(pool_, L.wo, o.data(), H * V, n_tok, out, E);
  }

 private:
  struct Layer {
    WeightView wq, wq_a, wq_b, wkv_a, wk_b, wv_b, wo;
    std::vector<float> q_a_norm, kv_a_norm;
  };
  const ModelConfig& cfg_;
  ThreadPool& pool_;
  RopeParams rope_;
  float kq_scale_ = 1.0f;
  std::vector<Layer> layers_;
};

}  // namespace

RopeParams mla_rope_params(const ModelConfig& cfg) {
  RopeParams rope = rope_params(cfg);
  if (cfg.rope_yarn && cfg.rope_freq_scale != 1.0f) {
    rope.attn_factor = cfg.yarn_attn_factor / (1.0f + 0.1f * std::log(1.0f / cfg.rope_freq_scale));
  }
  return rope;
}

float mla_kq_scale(const ModelConfig& cfg) {
  float mscale = cfg.yarn_attn_factor;
  if (cfg.rope_freq_scale != 1.0f) mscale *= 1.0f + cfg.yarn_log_mul * std::log(1.0f / cfg.rope_freq_scale);
  return mscale * mscale / std::sqrt(static_cast<float>(cfg.n_embd_head_k_mla));
}

std::unique_ptr<CpuAttention> make_attention_deepseek2(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool) {
  return std::make_unique<MlaAttention>(cfg, t, pool);
}

}  // namespace moepack
