// `kimi-linear` (Kimi-Linear / Kimi-K3-style hybrid) on the CPU: KDA linear-attention blocks
// (Kimi Delta Attention: short causal convolutions, a per-head d×d recurrent state with
// channel-wise decay and the delta rule) interleaved with absorbed-MLA blocks without RoPE, and
// sigmoid-gated MoE with shared experts. Spec: ../shared/docs/ARCH_KIMI_LINEAR.md (llama.cpp
// 82bb485); the section each formula implements is cited. Routed experts come from the same
// ExpertProvider as every other architecture (GGUF resident or Expert Pack).
//
// Shapes (row-major [rows][cols]): E embedding, H heads, d KDA head size, d_in = H·d, w conv
// kernel, r kv_lora_rank, n_p rope dims (only splits vectors), n_n = key_length_mla − n_p,
// d_v value_length_mla.
//
// State per sequence: MLA blocks: mla [n_ctx][r + n_p] (c_kv normed, then k_p) per position;
// KDA blocks: conv history [3][w−1][d_in] (pre-convolution q̃, k̃, ṽ) and S [H][d][d]
// (S[h][i][j], i key channel, j value channel), F32.
//
// Truncation (Backend::truncate): a recurrent state cannot be cut back to an arbitrary position,
// so the backend keeps checkpoints of every KDA state (at 0 implicitly, and at the end of each of
// the last kMaxCheckpoints forward() calls) plus the token ids of the sequence. truncate(n)
// restores the latest checkpoint at or before n and recomputes the tokens between it and n
// (their MLA rows are rewritten identically; routing observers are not called for them). So
// truncate(n_past) and truncate(0) are free, truncate to the end of an earlier call (what a
// chat session's prefix reuse hits) restores a checkpoint, and anything else is exact at the cost
// of recomputing up to one call's tokens. A forward() that throws restores the state it started
// from (the latest checkpoint).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_arch_backends.h"
#include "core/cpu_moe.h"
#include "core/error.h"
#include "core/expert_provider.h"
#include "core/kimi_linear_ops.h"
#include "core/model_source.h"
#include "core/moe_routing.h"
#include "core/quants.h"
#include "core/tensor_store.h"
#include "core/thread_pool.h"

namespace moepack {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxCheckpoints = 8;

// Matrix h of a stack of matrices of `rows` rows each.
WeightView rows_of(const WeightView& w, int64_t h, int64_t rows) {
  WeightView s = w;
  s.ne1 = rows;
  s.data = w.data + static_cast<size_t>(h * rows) * w.row_bytes;
  return s;
}

struct KdaLayer {
  WeightView wq, wk, wv;              // [d_in][E]
  std::vector<float> conv[3];         // q, k, v taps: [d_in][w] (tap 0 = oldest input)
  WeightView f_a, f_b, g_a, g_b;      // [d][E], [d_in][d], [d][E], [d_in][d]
  WeightView beta;                    // [H][E]
  std::vector<float> a, dt_bias, norm;  // A_h = -exp(A_log) [H], [d_in], [d]
  WeightView wo;                      // [E][d_in]
};

struct MlaLayer {
  WeightView wq, wkv_a, wk_b, wv_b, wo;  // [H(n_n+n_p)][E], [r+n_p][E], H×[r][n_n], H×[d_v][r], [E][H d_v]
  std::vector<float> kv_a_norm;           // [r]
};

struct Layer {
  bool kda = false;
  std::vector<float> attn_norm, ffn_norm;
  KdaLayer k;
  MlaLayer m;
  WeightView gate, up, down;  // dense FFN (leading blocks)
  WeightView router;          // [X][E]
  std::vector<float> bias;
  WeightView sh_gate, sh_up, sh_down;
};

struct Checkpoint {
  uint32_t pos = 0;
  std::vector<std::vector<float>> kda;  // per block: conv history then S (empty for MLA blocks)
};

class KimiLinearBackend final : public Backend {
 public:
  KimiLinearBackend(std::shared_ptr<const ModelSource> model, const EngineSettings& s)
      : model_(std::move(model)),
        cfg_(model_->config()),
        pool_(s.threads ? s.threads : std::max(1u, std::thread::hardware_concurrency() - 1)),
        tensors_(model_->gguf()) {
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, d = cfg_.kda_head_dim, DIN = H * d, w = cfg_.ssm_conv_kernel;
    const int64_t r = cfg_.kv_lora_rank, np = cfg_.n_rot, dk = cfg_.n_embd_head_k_mla, nn = dk - np;
    const int64_t dv = cfg_.n_embd_head_v_mla, X = cfg_.n_expert;
    const std::string& file = model_->metadata().path();
    if (cfg_.n_vocab == 0) throw FormatError(file, "kimi-linear.vocab_size", 0, "vocabulary size unknown");
    if (np <= 0 || nn <= 0 || r <= 0) throw FormatError(file, "kimi-linear.attention.key_length_mla", 0, "bad MLA sizes");
    tok_embd_ = tensors_.matrix("token_embd.weight", E, cfg_.n_vocab);
    output_norm_ = tensors_.vector("output_norm.weight", E);
    output_ = cfg_.tied_embeddings ? tok_embd_ : tensors_.matrix("output.weight", E, cfg_.n_vocab);
    layers_.resize(cfg_.n_layer);
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer& L = layers_[il];
      L.kda = cfg_.is_kda_layer(il);
      L.attn_norm = tensors_.vector(p + "attn_norm.weight", E);
      L.ffn_norm = tensors_.vector(p + "ffn_norm.weight", E);
      if (L.kda) {
        KdaLayer& K = L.k;
        K.wq = tensors_.matrix(p + "attn_q.weight", E, DIN);
        K.wk = tensors_.matrix(p + "attn_k.weight", E, DIN);
        K.wv = tensors_.matrix(p + "attn_v.weight", E, DIN);
        const char* conv[3] = {"ssm_conv1d_q.weight", "ssm_conv1d_k.weight", "ssm_conv1d_v.weight"};
        for (int i = 0; i < 3; ++i) K.conv[i] = flat(p + conv[i], w * DIN, w);
        K.f_a = tensors_.matrix(p + "ssm_f_a.weight", E, d);
        K.f_b = tensors_.matrix(p + "ssm_f_b.weight", d, DIN);
        K.g_a = tensors_.matrix(p + "ssm_g_a.weight", E, d);
        K.g_b = tensors_.matrix(p + "ssm_g_b.weight", d, DIN);
        K.beta = tensors_.matrix(p + "ssm_beta.weight", E, H);
        K.a = flat(p + "ssm_a", H, 0);
        K.dt_bias = tensors_.vector(p + "ssm_dt.bias", DIN);
        K.norm = tensors_.vector(p + "ssm_norm.weight", d);
        K.wo = tensors_.matrix(p + "attn_output.weight", DIN, E);
      } else {
        MlaLayer& M = L.m;
        M.wq = tensors_.matrix(p + "attn_q.weight", E, H * dk);
        M.wkv_a = tensors_.matrix(p + "attn_kv_a_mqa.weight", E, r + np);
        M.kv_a_norm = tensors_.vector(p + "attn_kv_a_norm.weight", r);
        M.wk_b = tensors_.stacked(p + "attn_k_b.weight", nn, r, H);
        M.wv_b = tensors_.stacked(p + "attn_v_b.weight", r, dv, H);
        M.wo = tensors_.matrix(p + "attn_output.weight", H * dv, E);
      }
      if (!cfg_.is_moe_layer(il)) {
        const int64_t ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate.weight")[1]);
        L.gate = tensors_.matrix(p + "ffn_gate.weight", E, ff);
        L.up = tensors_.matrix(p + "ffn_up.weight", E, ff);
        L.down = tensors_.matrix(p + "ffn_down.weight", ff, E);
        continue;
      }
      L.router = tensors_.matrix(p + "ffn_gate_inp.weight", E, X);
      L.bias = tensors_.vector(p + "exp_probs_b.bias", X, false);
      if (cfg_.n_expert_shared > 0) {
        const int64_t ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate_shexp.weight")[1]);
        L.sh_gate = tensors_.matrix(p + "ffn_gate_shexp.weight", E, ff);
        L.sh_up = tensors_.matrix(p + "ffn_up_shexp.weight", E, ff);
        L.sh_down = tensors_.matrix(p + "ffn_down_shexp.weight", ff, E);
      }
    }
    const int64_t n_ff_exp = cfg_.n_ff_exp;
    if (n_ff_exp <= 0) throw FormatError(file, "kimi-linear.expert_feed_forward_length", 0, "required and positive");
    experts_ = model_->is_pack() ? make_pack_experts(*model_, s, n_ff_exp) : make_resident_experts(cfg_, tensors_, n_ff_exp);

    n_ctx_ = std::min<uint32_t>(s.n_ctx ? s.n_ctx : 4096, cfg_.n_ctx_train ? cfg_.n_ctx_train : 4096);
    mla_.resize(cfg_.n_layer);
    kda_.resize(cfg_.n_layer);
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      if (layers_[il].kda) {
        kda_[il].assign(static_cast<size_t>(3 * (w - 1) * DIN + H * d * d), 0.0f);
      } else {
        mla_[il].assign(static_cast<size_t>(n_ctx_) * static_cast<size_t>(r + np), 0.0f);
      }
    }
    tokens_.reserve(n_ctx_);
  }

  std::string_view name() const override { return "cpu"; }
  const ModelConfig& config() const override { return cfg_; }
  uint32_t n_ctx() const override { return n_ctx_; }
  uint32_t n_past() const override { return n_past_; }
  void set_routing_observer(RoutingObserver observer) override { observer_ = std::move(observer); }
  BackendStats stats() const override {
    BackendStats s = stats_;
    experts_->fill_stats(s);
    return s;
  }
  ResidencyMap residency() const override { return experts_->residency(); }

  void truncate(uint32_t n) override {
    if (n > n_past_) throw Error("truncate(" + std::to_string(n) + ") beyond the " + std::to_string(n_past_) + " cached tokens");
    if (n == n_past_) return;
    const std::vector<int32_t> kept(tokens_.begin(), tokens_.begin() + n);
    while (!checkpoints_.empty() && checkpoints_.back().pos > n) checkpoints_.pop_back();
    restore_latest();
    const uint32_t from = n_past_;
    if (from < n) {
      // Recompute [from, n) from the stored ids; no logits, no routing observer.
      const std::vector<int32_t> redo(kept.begin() + from, kept.end());
      RoutingObserver keep = std::move(observer_);
      observer_ = nullptr;
      try {
        run(redo, {}, {});
      } catch (...) {
        observer_ = std::move(keep);
        restore_latest();
        throw;
      }
      observer_ = std::move(keep);
    }
  }

  void forward(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) override {
    check_forward_args(tokens, logits, all_logits, n_past_, n_ctx_, cfg_.n_vocab);
    try {
      run(tokens, logits, all_logits);
    } catch (...) {
      restore_latest();  // the state this call started from
      throw;
    }
  }

 private:
  // F32 values of a tensor of exactly n elements whose ne[0] is ne0 (0: any), dequantized.
  std::vector<float> flat(const std::string& name, int64_t n, int64_t ne0) {
    return kimi::read_flat(tensors_.model(), name, n, ne0, model_->metadata().path());
  }

  void restore_latest() {
    if (checkpoints_.empty()) {
      for (auto& st : kda_) std::fill(st.begin(), st.end(), 0.0f);
      n_past_ = 0;
    } else {
      const Checkpoint& c = checkpoints_.back();
      for (size_t il = 0; il < kda_.size(); ++il) kda_[il] = c.kda[il];
      n_past_ = c.pos;
    }
    tokens_.resize(std::min<size_t>(tokens_.size(), n_past_));
  }

  void save_checkpoint() {
    if (!checkpoints_.empty() && checkpoints_.back().pos == n_past_) checkpoints_.pop_back();
    checkpoints_.push_back({n_past_, kda_});
    while (checkpoints_.size() > kMaxCheckpoints) checkpoints_.pop_front();
  }

  // The forward pass (§4): appends tokens at n_past_, writes logits if `logits` is not empty.
  void run(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size()), E = cfg_.n_embd, NV = cfg_.n_vocab;
    const auto t0 = Clock::now();
    double io_wait = 0.0;
    const int64_t pos0 = n_past_;
    std::vector<float> x(static_cast<size_t>(n * E)), xn(x.size()), y(x.size());
    for (int64_t t = 0; t < n; ++t) dequantize_row(tok_embd_.type, tok_embd_.row(tokens[t]), x.data() + t * E, E);
    try {
      for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
        const Layer& L = layers_[il];
        for (int64_t t = 0; t < n; ++t) rms_norm(x.data() + t * E, L.attn_norm.data(), E, cfg_.rms_eps, xn.data() + t * E);
        if (L.kda) {
          kda(il, xn.data(), n, y.data());
        } else {
          mla(il, xn.data(), n, pos0, y.data());
        }
        for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
        for (int64_t t = 0; t < n; ++t) rms_norm(x.data() + t * E, L.ffn_norm.data(), E, cfg_.rms_eps, xn.data() + t * E);
        std::fill(y.begin(), y.end(), 0.0f);
        if (cfg_.is_moe_layer(il)) {
          moe(il, xn.data(), n, pos0, y.data(), &io_wait);
          if (!L.sh_gate.empty()) dense_swiglu_ffn(pool_, L.sh_gate, L.sh_up, L.sh_down, xn.data(), n, 0.0f, y.data());
        } else {
          dense_swiglu_ffn(pool_, L.gate, L.up, L.down, xn.data(), n, 0.0f, y.data());
        }
        for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
      }
      experts_->end_step();
    } catch (...) {
      experts_->end_step();
      throw;
    }
    if (!logits.empty()) {
      const int64_t first = all_logits.empty() ? n - 1 : 0;
      for (int64_t t = first; t < n; ++t) rms_norm(x.data() + t * E, output_norm_.data(), E, cfg_.rms_eps, xn.data() + t * E);
      if (all_logits.empty()) {
        matmul(pool_, output_, xn.data() + (n - 1) * E, E, 1, logits.data(), NV);
      } else {
        matmul(pool_, output_, xn.data(), E, n, all_logits.data(), NV);
        std::copy(all_logits.begin() + (n - 1) * NV, all_logits.begin() + n * NV, logits.begin());
      }
    }
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    n_past_ += static_cast<uint32_t>(n);
    save_checkpoint();
    ++stats_.forward_calls;
    stats_.tokens_evaluated += static_cast<uint64_t>(n);
    stats_.io_wait_ms += io_wait;
    stats_.compute_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count() - io_wait;
  }

  // §4.1–4.2: KDA block il over n tokens, continuing its conv history and recurrent state.
  void kda(uint32_t il, const float* u, int64_t n, float* out) {
    const KdaLayer& K = layers_[il].k;
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, d = cfg_.kda_head_dim, DIN = H * d, w = cfg_.ssm_conv_kernel;
    const float eps = cfg_.rms_eps;
    float* conv_hist = kda_[il].data();               // [3][w-1][d_in]
    float* S = conv_hist + 3 * (w - 1) * DIN;         // [H][d][d]

    // Projections, each preceded by the w-1 history rows: ext[3][(w-1) + n][d_in].
    const int64_t rows = w - 1 + n;
    std::vector<float> ext(static_cast<size_t>(3 * rows * DIN));
    const WeightView* proj[3] = {&K.wq, &K.wk, &K.wv};
    for (int i = 0; i < 3; ++i) {
      float* e = ext.data() + i * rows * DIN;
      std::copy(conv_hist + i * (w - 1) * DIN, conv_hist + (i + 1) * (w - 1) * DIN, e);
      matmul(pool_, *proj[i], u, E, n, e + (w - 1) * DIN, DIN);
    }
    // Causal depthwise conv + SiLU (kimi::conv_silu), then the last w-1 rows become the history.
    std::vector<float> qkv(static_cast<size_t>(3 * n * DIN));
    for (int i = 0; i < 3; ++i) {
      const float* e = ext.data() + i * rows * DIN;
      kimi::conv_silu(e, K.conv[i].data(), n, DIN, w, qkv.data() + i * n * DIN);
      std::copy(e + n * DIN, e + rows * DIN, conv_hist + i * (w - 1) * DIN);  // last w-1 rows
    }
    float* q = qkv.data();
    float* k = q + n * DIN;
    const float* v = k + n * DIN;
    // L2-normalise q and k per head: x / max(||x||, eps).
    kimi::l2_norm_rows(q, n * H, d, eps);
    kimi::l2_norm_rows(k, n * H, d, eps);
    // Decay, strength and output gate.
    std::vector<float> lo(static_cast<size_t>(n * d)), gdecay(static_cast<size_t>(n * DIN)), gate(gdecay.size());
    std::vector<float> beta(static_cast<size_t>(n * H));
    matmul(pool_, K.f_a, u, E, n, lo.data(), d);
    matmul(pool_, K.f_b, lo.data(), d, n, gdecay.data(), DIN);
    matmul(pool_, K.g_a, u, E, n, lo.data(), d);
    matmul(pool_, K.g_b, lo.data(), d, n, gate.data(), DIN);
    matmul(pool_, K.beta, u, E, n, beta.data(), H);
    kimi::gates(gdecay.data(), gate.data(), beta.data(), n, H, d, K.a.data(), K.dt_bias.data());
    // Recurrence, token by token, heads in parallel; then the per-head output norm and gate.
    std::vector<float> o(static_cast<size_t>(n * DIN));
    pool_.parallel_for(H, 1, [&](int64_t hb, int64_t he) {
      std::vector<float> delta(static_cast<size_t>(d));
      for (int64_t h = hb; h < he; ++h) {
        kimi::recurrence_head(S + h * d * d, q, k, v, gdecay.data(), beta.data(), n, H, d, h, delta.data(), o.data());
      }
    });
    kimi::output_norm_gate(o.data(), K.norm.data(), gate.data(), n * H, d, eps);
    matmul(pool_, K.wo, o.data(), DIN, n, out, E);
  }

  // §4.4: absorbed MLA without RoPE, full causal attention over the cached latent rows.
  void mla(uint32_t il, const float* u, int64_t n, int64_t pos0, float* out) {
    const MlaLayer& M = layers_[il].m;
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, r = cfg_.kv_lora_rank, np = cfg_.n_rot;
    const int64_t dk = cfg_.n_embd_head_k_mla, nn = dk - np, dv = cfg_.n_embd_head_v_mla, W = r + np;
    float* cache = mla_[il].data();
    std::vector<float> q(static_cast<size_t>(n * H * dk)), c(static_cast<size_t>(n * W));
    matmul(pool_, M.wq, u, E, n, q.data(), H * dk);
    matmul(pool_, M.wkv_a, u, E, n, c.data(), W);
    for (int64_t t = 0; t < n; ++t) {
      float* row = cache + (pos0 + t) * W;
      rms_norm(c.data() + t * W, M.kv_a_norm.data(), r, cfg_.rms_eps, row);
      std::copy(c.data() + t * W + r, c.data() + (t + 1) * W, row + r);
    }
    std::vector<float> qa(static_cast<size_t>(n * H * r));
    for (int64_t h = 0; h < H; ++h) matmul(pool_, rows_of(M.wk_b, h, r), q.data() + h * dk, H * dk, n, qa.data() + h * r, H * r);
    const float kq_scale = 1.0f / std::sqrt(static_cast<float>(dk));
    std::vector<float> lat(static_cast<size_t>(n * H * r));
    pool_.parallel_for(n * H, 1, [&](int64_t b, int64_t e) {
      std::vector<float> sc;
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / H, h = i % H, nkv = pos0 + t + 1;
        const float* qh = qa.data() + (t * H + h) * r;
        const float* qp = q.data() + (t * H + h) * dk + nn;
        sc.resize(static_cast<size_t>(nkv));
        for (int64_t j = 0; j < nkv; ++j) sc[j] = (dot_f32(qh, cache + j * W, r) + dot_f32(qp, cache + j * W + r, np)) * kq_scale;
        softmax_inplace(sc.data(), nkv);
        float* z = lat.data() + (t * H + h) * r;
        std::fill(z, z + r, 0.0f);
        for (int64_t j = 0; j < nkv; ++j) {
          const float* row = cache + j * W;
          for (int64_t a = 0; a < r; ++a) z[a] += sc[j] * row[a];
        }
      }
    });
    std::vector<float> o(static_cast<size_t>(n * H * dv));
    for (int64_t h = 0; h < H; ++h) matmul(pool_, rows_of(M.wv_b, h, dv), lat.data() + h * r, H * r, n, o.data() + h * dv, H * dv);
    matmul(pool_, M.wo, o.data(), H * dv, n, out, E);
  }

  // §4.5: sigmoid router + selection bias, weights always renormalised, then scaled.
  void moe(uint32_t il, const float* x, int64_t n, int64_t pos0, float* out, double* io_wait) {
    const Layer& L = layers_[il];
    const int64_t E = cfg_.n_embd, X = cfg_.n_expert, K = cfg_.n_expert_used;
    std::vector<float> rl(static_cast<size_t>(n * X)), scratch(static_cast<size_t>(2 * X));
    matmul(pool_, L.router, x, E, n, rl.data(), X);
    std::vector<int32_t> ids(static_cast<size_t>(n * K));
    std::vector<float> wts(static_cast<size_t>(n * K));
    for (int64_t t = 0; t < n; ++t) {
      route_token(cfg_, rl.data() + t * X, L.bias.empty() ? nullptr : L.bias.data(), ids.data() + t * K,
                  wts.data() + t * K, scratch.data());
      if (observer_) {
        observer_(il, static_cast<uint32_t>(pos0 + t), std::span<const int32_t>(ids.data() + t * K, K),
                  std::span<const float>(wts.data() + t * K, K));
      }
    }
    stats_.expert_selections += static_cast<uint64_t>(n * K);
    // Next-layer prefetch: the next MoE block's router on this input.
    const auto prefetch = prefetch_next_block(*experts_, cfg_, il, [&](uint32_t next) {
      const Layer& N = layers_[next];
      return predict_next_experts(pool_, cfg_, N.router, N.bias.empty() ? nullptr : N.bias.data(), x, n);
    });
    stats_.experts_computed += run_routed_experts(pool_, *experts_, il, x, n, E, K, ids.data(), wts.data(),
                                                  0.0f, out, io_wait, prefetch);
  }

  std::shared_ptr<const ModelSource> model_;
  const ModelConfig& cfg_;
  ThreadPool pool_;
  TensorStore tensors_;
  WeightView tok_embd_, output_;
  std::vector<float> output_norm_;
  std::vector<Layer> layers_;
  std::unique_ptr<ExpertProvider> experts_;
  uint32_t n_ctx_ = 0, n_past_ = 0;
  std::vector<std::vector<float>> mla_;  // per MLA block: [n_ctx][r + n_p]
  std::vector<std::vector<float>> kda_;  // per KDA block: conv history, then S
  std::vector<int32_t> tokens_;          // ids at positions 0 .. n_past_-1 (for recomputation)
  std::deque<Checkpoint> checkpoints_;   // ascending pos; the last one is the current state
  RoutingObserver observer_;
  BackendStats stats_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend_kimi_linear(std::shared_ptr<const ModelSource> model,
                                                      const EngineSettings& settings) {
  if (!model) throw Error("make_cpu_backend_kimi_linear: no model");
  return std::make_unique<KimiLinearBackend>(std::move(model), settings);
}

}  // namespace moepack
