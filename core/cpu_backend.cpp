// The CPU reference backend: the common half of every transformer block (embedding, RMSNorm,
// residuals, dense SwiGLU FFN, routed + shared experts, output head) around the per-architecture
// attention of cpu_attention.h. F32 activations on exactly dequantized weights, so it reproduces
// llama.cpp's `*.f32-dequant.*` fixture references.
//
// A forward() over n tokens runs layer by layer for all n at once (prefill in one batch): each
// layer's routed experts are fetched once for all tokens that selected them, so a prefill step
// costs one expert delivery per distinct expert, not one per token.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backend_factory.h"
#include "core/cpu_arch_backends.h"
#include "core/cpu_attention.h"
#include "core/cpu_moe.h"
#include "core/error.h"
#include "core/expert_provider.h"
#include "core/model_source.h"
#include "core/moe_routing.h"
#include "core/quants.h"
#include "core/tensor_store.h"
#include "core/thread_pool.h"

namespace moepack {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct FfnWeights {
  WeightView gate, up, down;  // [n_ff][E], [n_ff][E], [E][n_ff]
  int64_t n_ff = 0;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::shared_ptr<const ModelSource> model, const EngineSettings& s)
      : model_(std::move(model)),
        cfg_(model_->config()),
        pool_(s.threads ? s.threads : std::max(1u, std::thread::hardware_concurrency() - 1)),
        tensors_(model_->gguf()) {
    const int64_t E = cfg_.n_embd;
    if (cfg_.n_vocab == 0) throw FormatError(model_->metadata().path(), cfg_.arch + ".vocab_size", 0, "vocabulary size unknown");
    tok_embd_ = tensors_.matrix("token_embd.weight", E, cfg_.n_vocab);
    output_norm_ = tensors_.vector("output_norm.weight", E);
    output_ = cfg_.tied_embeddings ? tok_embd_ : tensors_.matrix("output.weight", E, cfg_.n_vocab);

    if (cfg_.arch == "deepseek2") {
      attention_ = make_attention_deepseek2(cfg_, tensors_, pool_);
    } else if (cfg_.arch == "qwen3moe") {
      attention_ = make_attention_qwen3moe(cfg_, tensors_, pool_);
    } else if (cfg_.arch == "llama") {
      attention_ = make_attention_llama(cfg_, tensors_, pool_);
    } else {
      throw Error("the CPU backend does not run architecture " + cfg_.arch);
    }

    // Expert width from the first MoE layer's router-side tensor (metadata may omit it).
    const uint32_t first_moe = cfg_.n_layer_dense_lead;
    const std::string gate_name = "blk." + std::to_string(first_moe) + ".ffn_gate_exps.weight";
    if (model_->is_pack()) {
      const auto& roles = model_->pack()->layout().layers.at(0).roles;
      for (const auto& r : roles) {
        if (r.role == "gate") n_ff_exp_ = static_cast<int64_t>(r.ne[1]);
      }
    } else {
      n_ff_exp_ = static_cast<int64_t>(tensors_.shape(gate_name)[1]);
    }
    if (n_ff_exp_ <= 0) throw FormatError(model_->path(), gate_name, 0, "cannot determine the expert width");

    layers_.resize(cfg_.n_layer);
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer& L = layers_[il];
      L.attn_norm = tensors_.vector(p + "attn_norm.weight", E);
      L.ffn_norm = tensors_.vector(p + "ffn_norm.weight", E);
      if (!cfg_.is_moe_layer(il)) {
        const int64_t ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate.weight")[1]);
        L.dense = {tensors_.matrix(p + "ffn_gate.weight", E, ff), tensors_.matrix(p + "ffn_up.weight", E, ff),
                   tensors_.matrix(p + "ffn_down.weight", ff, E), ff};
        continue;
      }
      L.router = tensors_.matrix(p + "ffn_gate_inp.weight", E, cfg_.n_expert);
      L.expert_bias = tensors_.vector(p + "exp_probs_b.bias", cfg_.n_expert, false);
      if (cfg_.n_expert_shared > 0) {
        const int64_t ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate_shexp.weight")[1]);
        L.shared = {tensors_.matrix(p + "ffn_gate_shexp.weight", E, ff), tensors_.matrix(p + "ffn_up_shexp.weight", E, ff),
                    tensors_.matrix(p + "ffn_down_shexp.weight", ff, E), ff};
      }
    }
    experts_ = model_->is_pack() ? make_pack_experts(*model_, s, n_ff_exp_)
                                 : make_resident_experts(cfg_, tensors_, n_ff_exp_);

    n_ctx_ = std::min<uint32_t>(s.n_ctx ? s.n_ctx : 4096, cfg_.n_ctx_train ? cfg_.n_ctx_train : s.n_ctx);
    if (n_ctx_ == 0) n_ctx_ = 4096;
    kv_.resize(cfg_.n_layer);
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      kv_[il].assign(static_cast<size_t>(n_ctx_) * static_cast<size_t>(attention_->kv_width(il)), 0.0f);
    }
  }

  std::string_view name() const override { return "cpu"; }
  const ModelConfig& config() const override { return cfg_; }
  uint32_t n_ctx() const override { return n_ctx_; }
  uint32_t n_past() const override { return n_past_; }
  void truncate(uint32_t n) override {
    if (n > n_past_) throw Error("truncate(" + std::to_string(n) + ") beyond the " + std::to_string(n_past_) + " cached tokens");
    n_past_ = n;
  }
  void set_routing_observer(RoutingObserver observer) override { observer_ = std::move(observer); }
  BackendStats stats() const override {
    BackendStats s = stats_;
    experts_->fill_stats(s);
    return s;
  }
  ResidencyMap residency() const override { return experts_->residency(); }

  void forward(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) override {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t E = cfg_.n_embd, NV = cfg_.n_vocab;
    check_forward_args(tokens, logits, all_logits, n_past_, n_ctx_, cfg_.n_vocab);
    const auto t0 = Clock::now();
    double io_wait = 0.0;
    const int64_t pos0 = n_past_;

    std::vector<float> x(static_cast<size_t>(n * E)), xn(x.size()), tmp(x.size());
    for (int64_t t = 0; t < n; ++t) {
      dequantize_row(tok_embd_.type, tok_embd_.row(tokens[t]), x.data() + t * E, E);
    }
    try {
      for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
        const Layer& L = layers_[il];
        for (int64_t t = 0; t < n; ++t) rms_norm(x.data() + t * E, L.attn_norm.data(), E, cfg_.rms_eps, xn.data() + t * E);
        attention_->forward(il, xn.data(), n, pos0, kv_[il].data(), tmp.data());
        for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
        for (int64_t t = 0; t < n; ++t) rms_norm(x.data() + t * E, L.ffn_norm.data(), E, cfg_.rms_eps, xn.data() + t * E);
        std::fill(tmp.begin(), tmp.end(), 0.0f);
        if (cfg_.is_moe_layer(il)) {
          moe(il, xn.data(), n, pos0, tmp.data(), &io_wait);
          if (L.shared.n_ff) ffn(L.shared, xn.data(), n, tmp.data());
        } else {
          ffn(L.dense, xn.data(), n, tmp.data());
        }
        for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
      }
      experts_->end_step();
    } catch (...) {
      experts_->end_step();
      throw;
    }

    // Head: the last token always; every token when asked.
    const int64_t first = all_logits.empty() ? n - 1 : 0;
    for (int64_t t = first; t < n; ++t) rms_norm(x.data() + t * E, output_norm_.data(), E, cfg_.rms_eps, xn.data() + t * E);
    if (all_logits.empty()) {
      matmul(pool_, output_, xn.data() + (n - 1) * E, E, 1, logits.data(), NV);
    } else {
      matmul(pool_, output_, xn.data(), E, n, all_logits.data(), NV);
      std::copy(all_logits.begin() + (n - 1) * NV, all_logits.begin() + n * NV, logits.begin());
    }
    n_past_ += static_cast<uint32_t>(n);
    ++stats_.forward_calls;
    stats_.tokens_evaluated += static_cast<uint64_t>(n);
    stats_.io_wait_ms += io_wait;
    stats_.compute_ms += ms_since(t0) - io_wait;
  }

 private:
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    FfnWeights dense;   // leading dense layers
    WeightView router;  // [n_expert][E]
    std::vector<float> expert_bias;
    FfnWeights shared;  // shared experts (n_ff = 0: none)
  };

  // out[t] += down(swiglu(gate x[t], up x[t])) for all n tokens.
  void ffn(const FfnWeights& w, const float* x, int64_t n, float* out) {
    const int64_t E = cfg_.n_embd;
    std::vector<float> g(static_cast<size_t>(n * w.n_ff)), u(g.size());
    matmul(pool_, w.gate, x, E, n, g.data(), w.n_ff);
    matmul(pool_, w.up, x, E, n, u.data(), w.n_ff);
    swiglu(g.data(), u.data(), n * w.n_ff, g.data());
    std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    matmul_add_scaled(pool_, w.down, g.data(), w.n_ff, n, ones.data(), out, E);
  }

  void moe(uint32_t il, const float* xn, int64_t n, int64_t pos0, float* out, double* io_wait) {
    const Layer& L = layers_[il];
    const int64_t E = cfg_.n_embd, NE = cfg_.n_expert, K = cfg_.n_expert_used;
    std::vector<float> rl(static_cast<size_t>(n * NE));
    matmul(pool_, L.router, xn, E, n, rl.data(), NE);
    std::vector<int32_t> ids(static_cast<size_t>(n * K));
    std::vector<float> wts(static_cast<size_t>(n * K));
    std::vector<float> scratch(static_cast<size_t>(2 * NE));
    for (int64_t t = 0; t < n; ++t) {
      route_token(cfg_, rl.data() + t * NE, L.expert_bias.empty() ? nullptr : L.expert_bias.data(),
                  ids.data() + t * K, wts.data() + t * K, scratch.data());
      if (observer_) {
        observer_(il, static_cast<uint32_t>(pos0 + t), std::span<const int32_t>(ids.data() + t * K, K),
                  std::span<const float>(wts.data() + t * K, K));
      }
    }
    stats_.expert_selections += static_cast<uint64_t>(n * K);
    // Next-layer prefetch: the next MoE block's router on this block's input predicts its
    // experts; their reads start once this block's experts are resident, and land while they
    // compute (and while the next block's attention runs). Only when reads happen changes.
    const auto prefetch = prefetch_next_block(*experts_, cfg_, il, [&](uint32_t next) {
      const Layer& N = layers_[next];
      return predict_next_experts(pool_, cfg_, N.router,
                                  N.expert_bias.empty() ? nullptr : N.expert_bias.data(), xn, n);
    });
    // Each distinct expert once for all its tokens; every (token, expert) the router picked is
    // computed (exact routing, top-k unchanged). SwiGLU without a clamp (limit 0).
    stats_.experts_computed += run_routed_experts(pool_, *experts_, il, xn, n, E, K, ids.data(), wts.data(),
                                                  0.0f, out, io_wait, prefetch);
  }

  std::shared_ptr<const ModelSource> model_;
  const ModelConfig& cfg_;
  ThreadPool pool_;
  TensorStore tensors_;
  WeightView tok_embd_, output_;
  std::vector<float> output_norm_;
  std::unique_ptr<CpuAttention> attention_;
  std::vector<Layer> layers_;
  int64_t n_ff_exp_ = 0;
  std::unique_ptr<ExpertProvider> experts_;
  uint32_t n_ctx_ = 0;
  uint32_t n_past_ = 0;
  std::vector<std::vector<float>> kv_;
  RoutingObserver observer_;
  BackendStats stats_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const ModelSource> model, const EngineSettings& settings) {
  if (!model) throw Error("make_cpu_backend: no model");
  // Architectures whose block is not the common one here have their own forward.
  if (model->config().arch == "deepseek4") return make_cpu_backend_deepseek4(std::move(model), settings);
  if (model->config().arch == "kimi-linear") return make_cpu_backend_kimi_linear(std::move(model), settings);
  return std::make_unique<CpuBackend>(std::move(model), settings);
}

}  // namespace moepack
