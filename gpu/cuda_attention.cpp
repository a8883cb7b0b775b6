// GQA and MLA attention on the GPU: the same steps as arch_llama.cpp / arch_deepseek2.cpp, each
// a kernel of gpu/kernels.h. See those files for the mathematics and its sources.
#include "gpu/cuda_attention.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/cpu_attention.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels.h"

namespace moepack::gpu {

void dev_matmul(const DevMatrix& w, const float* x, int64_t x_stride, int64_t n_tok, float* y, int64_t y_stride,
                cudaStream_t s) {
  GemvBatch b;
  b.type = w.type;
  b.ne0 = w.ne0;
  b.ne1 = w.ne1;
  b.row_bytes = w.row_bytes;
  b.w = w.data;
  b.x = x;
  b.x_stride = x_stride;
  b.y = y;
  b.y_stride = y_stride;
  b.n_tok = static_cast<int32_t>(n_tok);
  gemv(b, s);
}

// Matrix h of a stacked view of `groups` matrices [rows][ne0], one launch for all of them:
// y + h * y_gstride = W_h (x + h * x_gstride), for n_tok tokens.
void grouped_matmul(const DevMatrix& stacked, int64_t rows, int64_t groups, const float* x, int64_t x_stride,
                    int64_t x_gstride, int64_t n_tok, float* y, int64_t y_stride, int64_t y_gstride, cudaStream_t s) {
  GemvBatch b;
  b.type = stacked.type;
  b.ne0 = stacked.ne0;
  b.ne1 = rows;
  b.row_bytes = stacked.row_bytes;
  b.w = stacked.data;
  b.w_gstride = static_cast<uint64_t>(rows) * stacked.row_bytes;
  b.x = x;
  b.x_stride = x_stride;
  b.x_gstride = x_gstride;
  b.y = y;
  b.y_stride = y_stride;
  b.y_gstride = y_gstride;
  b.n_groups = static_cast<int32_t>(groups);
  b.n_tok = static_cast<int32_t>(n_tok);
  gemv(b, s);
}

namespace {

void copy_rows(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t width, int64_t rows,
               cudaStream_t s) {
  if (rows <= 0 || width <= 0) return;
  MOEPACK_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_stride) * sizeof(float), src,
                                       static_cast<size_t>(src_stride) * sizeof(float),
                                       static_cast<size_t>(width) * sizeof(float), static_cast<size_t>(rows),
                                       cudaMemcpyDeviceToDevice, s));
}

// cos/sin of every position, from core's rope_table (the CPU's exact values).
std::vector<float> rope_cs_table(const RopeParams& p, uint32_t n_ctx) {
  std::vector<float> t(static_cast<size_t>(n_ctx) * static_cast<size_t>(p.n_dims));
  for (uint32_t pos = 0; pos < n_ctx; ++pos) rope_table(p, pos, t.data() + static_cast<size_t>(pos) * p.n_dims);
  return t;
}

class GqaAttention final : public CudaAttention {
 public:
  GqaAttention(const ModelConfig& cfg, DeviceWeights& w, bool qk_norm)
      : cfg_(cfg), rope_(rope_params(cfg)), qk_norm_(qk_norm) {
    const int64_t e = cfg.n_embd, hk = cfg.n_embd_head_k, hv = cfg.n_embd_head_v;
    for (uint32_t il = 0; il < cfg.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      H h;
      h.wq = w.add_matrix(p + "attn_q.weight", e, cfg.n_head * hk);
      h.wk = w.add_matrix(p + "attn_k.weight", e, cfg.n_head_kv * hk);
      h.wv = w.add_matrix(p + "attn_v.weight", e, cfg.n_head_kv * hv);
      h.wo = w.add_matrix(p + "attn_output.weight", cfg.n_head * hv, e);
      if (qk_norm) {
        h.q_norm = w.add_vector(p + "attn_q_norm.weight", hk);
        h.k_norm = w.add_vector(p + "attn_k_norm.weight", hk);
      }
      handles_.push_back(h);
    }
  }
  int64_t kv_width(uint32_t) const override {
    return static_cast<int64_t>(cfg_.n_head_kv) * (cfg_.n_embd_head_k + cfg_.n_embd_head_v);
  }
  uint64_t table_bytes(uint32_t n_ctx) const override {
    return static_cast<uint64_t>(n_ctx) * static_cast<uint64_t>(rope_.n_dims) * sizeof(float);
  }
  void bind(const DeviceWeights& w, uint32_t n_ctx) override {
    for (const H& h : handles_) {
      L l;
      l.wq = w.matrix(h.wq);
      l.wk = w.matrix(h.wk);
      l.wv = w.matrix(h.wv);
      l.wo = w.matrix(h.wo);
      if (qk_norm_) {
        l.q_norm = w.vector(h.q_norm);
        l.k_norm = w.vector(h.k_norm);
      }
      layers_.push_back(l);
    }
    n_ctx_ = n_ctx;
    const std::vector<float> t = rope_cs_table(rope_, n_ctx);
    table_.allocate(t.size() * sizeof(float), "the RoPE table");
    MOEPACK_CUDA_CHECK(cudaMemcpy(table_.as<float>(), t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  bool reserve(int64_t n) override {
    const int64_t nh = cfg_.n_head, nkv = cfg_.n_head_kv, hk = cfg_.n_embd_head_k, hv = cfg_.n_embd_head_v;
    const auto f = [](int64_t count) { return static_cast<size_t>(count) * sizeof(float); };
    bool grew = q_.ensure(f(n * nh * hk), "attention q");
    grew |= k_.ensure(f(n * nkv * hk), "attention k");
    grew |= v_.ensure(f(n * nkv * hv), "attention v");
    grew |= att_.ensure(f(n * nh * hv), "attention output");
    return grew;
  }
  void forward(uint32_t il, const float* xn, int64_t n, int64_t pos0, float* kv, float* out, cudaStream_t s,
               const int32_t* pos_dev, int64_t max_kv) override {
    if (pos_dev && n != 1) throw Error("internal: attention at a device position takes one token");
    const L& l = layers_[il];
    const int64_t e = cfg_.n_embd, nh = cfg_.n_head, nkv = cfg_.n_head_kv;
    const int64_t hk = cfg_.n_embd_head_k, hv = cfg_.n_embd_head_v, w = kv_width(il);
    reserve(n);
    float* q = q_.as<float>();
    float* k = k_.as<float>();
    float* v = v_.as<float>();
    dev_matmul(l.wq, xn, e, n, q, nh * hk, s);
    dev_matmul(l.wk, xn, e, n, k, nkv * hk, s);
    dev_matmul(l.wv, xn, e, n, v, nkv * hv, s);
    if (qk_norm_) {
      rms_norm(q, hk, l.q_norm, hk, cfg_.rms_eps, q, hk, n * nh, s);
      rms_norm(k, hk, l.k_norm, hk, cfg_.rms_eps, k, hk, n * nkv, s);
    }
    rope(q, n, nh * hk, nh, hk, table_.as<float>(), pos0, rope_.n_dims, rope_.neox, s, pos_dev);
    rope(k, n, nkv * hk, nkv, hk, table_.as<float>(), pos0, rope_.n_dims, rope_.neox, s, pos_dev);
    if (pos_dev) {
      copy_row_to_position(kv, w, k, nkv * hk, pos_dev, s);
      copy_row_to_position(kv + nkv * hk, w, v, nkv * hv, pos_dev, s);
    } else {
      copy_rows(kv + pos0 * w, w, k, nkv * hk, nkv * hk, n, s);
      copy_rows(kv + pos0 * w + nkv * hk, w, v, nkv * hv, nkv * hv, n, s);
    }
    gqa_attend(q, n, pos0, kv, w, nh, nkv, hk, hv, 1.0f / std::sqrt(static_cast<float>(hk)), att_.as<float>(),
               s, pos_dev, max_kv > 0 ? std::min(max_kv, n_ctx_) : n_ctx_);
    dev_matmul(l.wo, att_.as<float>(), nh * hv, n, out, e, s);
  }

 private:
  struct H {
    DeviceWeights::Handle wq = 0, wk = 0, wv = 0, wo = 0, q_norm = 0, k_norm = 0;
  };
  struct L {
    DevMatrix wq, wk, wv, wo;
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
  };
  const ModelConfig& cfg_;
  RopeParams rope_;
  bool qk_norm_;
  std::vector<H> handles_;
  std::vector<L> layers_;
  DeviceBuffer table_, q_, k_, v_, att_;
  int64_t n_ctx_ = 0;  // positions of the KV cache (bind)
};

class MlaAttention final : public CudaAttention {
 public:
  MlaAttention(const ModelConfig& cfg, DeviceWeights& w) : cfg_(cfg), rope_(mla_rope_params(cfg)) {
    const int64_t E = cfg.n_embd, H = cfg.n_head, R = cfg.kv_lora_rank, D = cfg.n_embd_head_k_mla;
    const int64_t P = cfg.n_rot, N = D - P, V = cfg.n_embd_head_v_mla, Q = cfg.q_lora_rank;
    if (P <= 0 || N <= 0) throw Error("deepseek2: rope.dimension_count must be below key_length_mla");
    kq_scale_ = mla_kq_scale(cfg);
    for (uint32_t il = 0; il < cfg.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Hd h;
      if (Q > 0) {
        h.wq_a = w.add_matrix(p + "attn_q_a.weight", E, Q);
        h.q_a_norm = w.add_vector(p + "attn_q_a_norm.weight", Q);
        h.wq_b = w.add_matrix(p + "attn_q_b.weight", Q, H * D);
      } else {
        h.wq = w.add_matrix(p + "attn_q.weight", E, H * D);
      }
      h.wkv_a = w.add_matrix(p + "attn_kv_a_mqa.weight", E, R + P);
      h.kv_a_norm = w.add_vector(p + "attn_kv_a_norm.weight", R);
      h.wk_b = w.add_stacked(p + "attn_k_b.weight", N, R, H);
      h.wv_b = w.add_stacked(p + "attn_v_b.weight", R, V, H);
      h.wo = w.add_matrix(p + "attn_output.weight", H * V, E);
      handles_.push_back(h);
    }
  }
  int64_t kv_width(uint32_t) const override { return static_cast<int64_t>(cfg_.kv_lora_rank) + cfg_.n_rot; }
  uint64_t table_bytes(uint32_t n_ctx) const override {
    return static_cast<uint64_t>(n_ctx) * static_cast<uint64_t>(rope_.n_dims) * sizeof(float);
  }
  void bind(const DeviceWeights& w, uint32_t n_ctx) override {
    const bool lora = cfg_.q_lora_rank > 0;
    for (const Hd& h : handles_) {
      L l;
      if (lora) {
        l.wq_a = w.matrix(h.wq_a);
        l.q_a_norm = w.vector(h.q_a_norm);
        l.wq_b = w.matrix(h.wq_b);
      } else {
        l.wq = w.matrix(h.wq);
      }
      l.wkv_a = w.matrix(h.wkv_a);
      l.kv_a_norm = w.vector(h.kv_a_norm);
      l.wk_b = w.matrix(h.wk_b);
      l.wv_b = w.matrix(h.wv_b);
      l.wo = w.matrix(h.wo);
      layers_.push_back(l);
    }
    n_ctx_ = n_ctx;
    const std::vector<float> t = rope_cs_table(rope_, n_ctx);
    table_.allocate(t.size() * sizeof(float), "the RoPE table");
    MOEPACK_CUDA_CHECK(cudaMemcpy(table_.as<float>(), t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  bool reserve(int64_t n) override {
    const int64_t H = cfg_.n_head, R = cfg_.kv_lora_rank, D = cfg_.n_embd_head_k_mla, P = cfg_.n_rot;
    const int64_t V = cfg_.n_embd_head_v_mla, Q = cfg_.q_lora_rank, W = R + P;
    const auto f = [](int64_t count) { return static_cast<size_t>(count) * sizeof(float); };
    bool grew = q_.ensure(f(n * H * D), "MLA q");
    grew |= c_.ensure(f(n * W), "MLA latent");
    grew |= q_abs_.ensure(f(n * H * R), "MLA absorbed q");
    grew |= o_lat_.ensure(f(n * H * R), "MLA latent output");
    grew |= o_.ensure(f(n * H * V), "MLA output");
    if (Q > 0) grew |= qa_.ensure(f(n * Q), "MLA q_a");
    grew |= kvrow_.ensure(f(W), "MLA KV row");  // a decode graph's row (forward's pos_dev)
    return grew;
  }
  void forward(uint32_t il, const float* xn, int64_t n, int64_t pos0, float* kv, float* out, cudaStream_t s,
               const int32_t* pos_dev, int64_t max_kv) override {
    if (pos_dev && n != 1) throw Error("internal: attention at a device position takes one token");
    const L& l = layers_[il];
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, R = cfg_.kv_lora_rank, D = cfg_.n_embd_head_k_mla;
    const int64_t P = cfg_.n_rot, N = D - P, V = cfg_.n_embd_head_v_mla, Q = cfg_.q_lora_rank;
    const int64_t W = R + P;
    reserve(n);
    float* q = q_.as<float>();
    float* c = c_.as<float>();
    if (Q > 0) {
      float* qa = qa_.as<float>();
      dev_matmul(l.wq_a, xn, E, n, qa, Q, s);
      rms_norm(qa, Q, l.q_a_norm, Q, cfg_.rms_eps, qa, Q, n, s);
      dev_matmul(l.wq_b, qa, Q, n, q, H * D, s);
    } else {
      dev_matmul(l.wq, xn, E, n, q, H * D, s);
    }
    dev_matmul(l.wkv_a, xn, E, n, c, W, s);
    const float* table = table_.as<float>();
    rope(q + N, n, H * D, H, D, table, pos0, rope_.n_dims, rope_.neox, s, pos_dev);  // q_pe of every head
    // The new KV row: normed latent, then k_pe rotated; built in place in the cache, or (device
    // position) in kvrow_ and then stored at the position.
    float* rows = kv + pos0 * W;
    if (pos_dev) rows = kvrow_.as<float>();
    rms_norm(c, W, l.kv_a_norm, R, cfg_.rms_eps, rows, W, n, s);
    copy_rows(rows + R, W, c + R, W, P, n, s);
    rope(rows + R, n, W, 1, P, table, pos0, rope_.n_dims, rope_.neox, s, pos_dev);
    if (pos_dev) copy_row_to_position(kv, W, rows, W, pos_dev, s);
    // q_abs[t][h] = W_kb[h] q_nope[t][h]; all heads in one launch.
    grouped_matmul(l.wk_b, R, H, q, H * D, D, n, q_abs_.as<float>(), H * R, R, s);
    mla_attend(q_abs_.as<float>(), q, n, pos0, kv, H, R, D, P, kq_scale_, o_lat_.as<float>(), s, pos_dev,
               max_kv > 0 ? std::min(max_kv, n_ctx_) : n_ctx_);
    grouped_matmul(l.wv_b, V, H, o_lat_.as<float>(), H * R, R, n, o_.as<float>(), H * V, V, s);
    dev_matmul(l.wo, o_.as<float>(), H * V, n, out, E, s);
  }

 private:
  struct Hd {
    DeviceWeights::Handle wq = 0, wq_a = 0, wq_b = 0, wkv_a = 0, wk_b = 0, wv_b = 0, wo = 0, q_a_norm = 0,
                          kv_a_norm = 0;
  };
  struct L {
    DevMatrix wq, wq_a, wq_b, wkv_a, wk_b, wv_b, wo;
    const float* q_a_norm = nullptr;
    const float* kv_a_norm = nullptr;
  };
  const ModelConfig& cfg_;
  RopeParams rope_;
  float kq_scale_ = 1.0f;
  std::vector<Hd> handles_;
  std::vector<L> layers_;
  DeviceBuffer table_, q_, qa_, c_, q_abs_, o_lat_, o_, kvrow_;
  int64_t n_ctx_ = 0;  // positions of the KV cache (bind)
};

}  // namespace

std::unique_ptr<CudaAttention> make_cuda_attention(const ModelConfig& cfg, DeviceWeights& w) {
  if (cfg.arch == "deepseek2") return std::make_unique<MlaAttention>(cfg, w);
  if (cfg.arch == "qwen3moe") return std::make_unique<GqaAttention>(cfg, w, true);
  if (cfg.arch == "llama") return std::make_unique<GqaAttention>(cfg, w, false);
  throw Error("the CUDA backend does not run architecture " + cfg.arch);
}

}  // namespace moepack::gpu
