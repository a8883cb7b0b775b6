// `deepseek4` (DeepSeek-V4-Flash layout) on the CPU: its own block forward behind the Backend
// interface, because the residual stream is HC = 4 hyper-connection streams mixed by a
// Sinkhorn-normalised matrix instead of one residual (ARCH_DEEPSEEK4.md §4.2–4.3). Routed experts
// come from the same ExpertProvider as every other architecture (GGUF resident or Expert Pack).
// Every formula below cites the section of ../shared/docs/ARCH_DEEPSEEK4.md it implements;
// docs/arch-deepseek4.md records where llama.cpp's references and that text disagree.
//
// Shapes (ggml order in the spec; here row-major [rows][cols]): E embedding, H heads of D,
// R rotated (the last R of a head), N = D - R, Q q-LoRA rank, G output groups of O,
// HC = 4 streams, X experts (top k), H_I indexer heads of D_I, K_I indexer top-k.
//
// A forward() runs in ubatches of at most kUbatch (U) positions. Per-sequence state:
//   kraw  ring [n_swa + U][D]     roped K=V rows (position j in slot j mod (n_swa + U))
//   ca/cg ring [2m + U][c*D]      compressor projections a_p and gate scores g_p (+ape)
//   crow  [n_ctx/m][D]            compressed rows, row b valid once position (b+1)m - 1 was run
//   ia/ig ring, irow              the same for the lightning indexer's compressor (D_I, m = 4)
//   tokens_                       the ids of the sequence (for recomputation)
// Only the compressed rows grow with the context (as in llama.cpp; core/context_memory.h).
// Truncation: compressed row b depends only on positions < (b+1)·m, so rows completed before n
// stay valid. The rings still hold everything positions >= n need iff n >= hw - U (hw = highest
// position ever written): then truncate(n) is O(1); otherwise the state is rebuilt by running
// tokens_[0, n) again (exact, at the cost of a prefill; routing observers are not called).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_arch_backends.h"
#include "core/cpu_moe.h"
#include "core/deepseek4_ops.h"
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
constexpr int64_t kUbatch = 256;  // positions per pass through the blocks (U)

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// A matrix dequantized to F32, [ne1][ne0] (small tensors read element-wise: ape tables).
std::vector<float> dense_f32(TensorStore& t, const std::string& name, int64_t ne0, int64_t ne1) {
  const WeightView w = t.matrix(name, ne0, ne1);
  std::vector<float> out(static_cast<size_t>(ne0 * ne1));
  for (int64_t r = 0; r < ne1; ++r) dequantize_row(w.type, w.row(r), out.data() + r * ne0, ne0);
  return out;
}

// Rows of matrix `w` [g*rows, (g+1)*rows).
WeightView rows_of(const WeightView& w, int64_t g, int64_t rows) {
  WeightView s = w;
  s.ne1 = rows;
  s.data = w.data + static_cast<size_t>(g * rows) * w.row_bytes;
  return s;
}

struct Hc {  // one hyper-connection (§4.2): fn [(2+HC)*HC][HC*E], base [(2+HC)*HC], scale [3]
  WeightView fn;
  std::vector<float> base, scale;
};

struct Compressor {  // §4.6: ratio m, row width d, c = 2 (m = 4, overlapping) or 1
  WeightView kv, gate;            // [c*d][E]
  std::vector<float> ape, norm;   // ape [m][c*d], norm [d]
  int64_t m = 0, d = 0, c = 0;
  int64_t ring = 0;               // slots of the a/g rings: 2m + U
};

struct Layer {
  uint32_t ratio = 0;
  std::vector<float> attn_norm, ffn_norm, sinks, q_a_norm, kv_norm;
  WeightView wq_a, wq_b, wkv, wo_a, wo_b;  // wo_a: [G*O][H*D/G]
  Hc hc_attn, hc_ffn;
  Compressor comp, icomp;
  WeightView idx_proj, idx_q_b;  // [H_I][E], [H_I*D_I][Q]
  WeightView router;             // [X][E]
  std::vector<float> bias;       // [X] (learned-routing blocks)
  std::vector<int32_t> tid2eid;  // [n_vocab][k] (hash-routed blocks)
  WeightView sh_gate, sh_up, sh_down;
};

struct LayerState {
  std::vector<float> kraw, ca, cg, crow, ia, ig, irow;
};

class Deepseek4Backend final : public Backend {
 public:
  Deepseek4Backend(std::shared_ptr<const ModelSource> model, const EngineSettings& s)
      : model_(std::move(model)),
        cfg_(model_->config()),
        pool_(s.threads ? s.threads : std::max(1u, std::thread::hardware_concurrency() - 1)),
        tensors_(model_->gguf()) {
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, D = cfg_.n_embd_head_k, R = cfg_.n_rot, Q = cfg_.q_lora_rank;
    const int64_t HC = cfg_.hc_count, NHC = (2 + HC) * HC, X = cfg_.n_expert, G = cfg_.out_groups;
    const int64_t O = cfg_.out_lora_rank, HI = cfg_.indexer_n_head, DI = cfg_.indexer_head_dim;
    const std::string& file = model_->metadata().path();
    if (cfg_.n_vocab == 0) throw FormatError(file, "deepseek4.vocab_size", 0, "vocabulary size unknown");
    if (R <= 0 || R > D || R > DI) throw FormatError(file, "deepseek4.rope.dimension_count", 0, "must be in 1..min(key_length, indexer key_length)");
    tok_embd_ = tensors_.matrix("token_embd.weight", E, cfg_.n_vocab);
    output_norm_ = tensors_.vector("output_norm.weight", E);
    output_ = tensors_.matrix("output.weight", E, cfg_.n_vocab);
    out_hc_.fn = tensors_.matrix("output_hc_fn.weight", HC * E, HC);
    out_hc_.base = tensors_.vector("output_hc_base.weight", HC);
    out_hc_.scale = tensors_.vector("output_hc_scale.weight", 1);

    // RoPE (§4.4): window-only blocks plain with rope.freq_base; compressed blocks with the
    // compress base and YaRN without magnitude change (attn_factor cancels YaRN's mscale).
    rope_plain_.n_dims = static_cast<int>(R);
    rope_plain_.freq_base = cfg_.rope_freq_base;
    rope_comp_ = rope_plain_;
    rope_comp_.freq_base = cfg_.compress_rope_freq_base;
    rope_comp_.freq_scale = cfg_.rope_freq_scale;
    if (cfg_.rope_yarn && cfg_.rope_freq_scale != 1.0f) {
      rope_comp_.ext_factor = 1.0f;
      rope_comp_.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / cfg_.rope_freq_scale));
      rope_comp_.beta_fast = 32.0f;  // fixed in llama.cpp for this arch (§2)
      rope_comp_.beta_slow = 1.0f;
      rope_comp_.n_ctx_orig = static_cast<int>(cfg_.rope_n_ctx_orig);
    }

    layers_.resize(cfg_.n_layer_run());
    for (uint32_t il = 0; il < cfg_.n_layer_run(); ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer& L = layers_[il];
      L.ratio = cfg_.compress_ratios.at(il);
      L.attn_norm = tensors_.vector(p + "attn_norm.weight", E);
      L.ffn_norm = tensors_.vector(p + "ffn_norm.weight", E);
      L.sinks = tensors_.vector(p + "attn_sinks.weight", H);
      L.wq_a = tensors_.matrix(p + "attn_q_a.weight", E, Q);
      L.q_a_norm = tensors_.vector(p + "attn_q_a_norm.weight", Q);
      L.wq_b = tensors_.matrix(p + "attn_q_b.weight", Q, H * D);
      L.wkv = tensors_.matrix(p + "attn_kv.weight", E, D);
      L.kv_norm = tensors_.vector(p + "attn_kv_a_norm.weight", D);
      L.wo_a = tensors_.matrix(p + "attn_output_a.weight", H * D / G, O * G);
      L.wo_b = tensors_.matrix(p + "attn_output_b.weight", G * O, E);
      for (auto [hc, name] : {std::pair{&L.hc_attn, "hc_attn"}, std::pair{&L.hc_ffn, "hc_ffn"}}) {
        hc->fn = tensors_.matrix(p + name + "_fn.weight", HC * E, NHC);
        hc->base = tensors_.vector(p + name + "_base.weight", NHC);
        hc->scale = tensors_.vector(p + name + "_scale.weight", 3);
      }
      if (L.ratio != 0) L.comp = compressor(p + "attn_compressor_", L.ratio, D);
      if (L.ratio == 4) {
        L.icomp = compressor(p + "indexer_compressor_", 4, DI);
        L.idx_proj = tensors_.matrix(p + "indexer.proj.weight", E, HI);
        L.idx_q_b = tensors_.matrix(p + "indexer.attn_q_b.weight", Q, HI * DI);
      }
      L.router = tensors_.matrix(p + "ffn_gate_inp.weight", E, X);
      if (il < cfg_.n_hash_layers) {
        L.tid2eid = read_tid2eid(p + "ffn_gate_tid2eid.weight");
      } else {
        L.bias = tensors_.vector(p + "exp_probs_b.bias", X);
      }
      const int64_t ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate_shexp.weight")[1]);
      L.sh_gate = tensors_.matrix(p + "ffn_gate_shexp.weight", E, ff);
      L.sh_up = tensors_.matrix(p + "ffn_up_shexp.weight", E, ff);
      L.sh_down = tensors_.matrix(p + "ffn_down_shexp.weight", ff, E);
    }
    const int64_t n_ff_exp = cfg_.n_ff_exp;
    if (n_ff_exp <= 0) throw FormatError(file, "deepseek4.expert_feed_forward_length", 0, "required and positive");
    experts_ = model_->is_pack() ? make_pack_experts(*model_, s, n_ff_exp) : make_resident_experts(cfg_, tensors_, n_ff_exp);

    n_ctx_ = std::min<uint32_t>(s.n_ctx ? s.n_ctx : 4096, cfg_.n_ctx_train ? cfg_.n_ctx_train : 4096);
    ring_raw_ = cfg_.n_swa + kUbatch;
    tokens_.reserve(n_ctx_);
    state_.resize(layers_.size());
    for (size_t il = 0; il < layers_.size(); ++il) {
      const Layer& L = layers_[il];
      LayerState& S = state_[il];
      S.kraw.assign(static_cast<size_t>(ring_raw_ * D), 0.0f);
      if (L.ratio != 0) {
        const size_t cd = static_cast<size_t>(L.comp.c * D);
        S.ca.assign(static_cast<size_t>(L.comp.ring) * cd, 0.0f);
        S.cg.assign(S.ca.size(), 0.0f);
        S.crow.assign(static_cast<size_t>(n_ctx_ / L.ratio + 1) * static_cast<size_t>(D), 0.0f);
      }
      if (L.ratio == 4) {
        S.ia.assign(static_cast<size_t>(L.icomp.ring * 2 * DI), 0.0f);
        S.ig.assign(S.ia.size(), 0.0f);
        S.irow.assign(static_cast<size_t>(n_ctx_ / 4 + 1) * static_cast<size_t>(DI), 0.0f);
      }
    }
  }

  std::string_view name() const override { return "cpu"; }
  const ModelConfig& config() const override { return cfg_; }
  uint32_t n_ctx() const override { return n_ctx_; }
  uint32_t n_past() const override { return n_past_; }
  // Exact at every n (see the file comment): O(1) within U positions of the highest position
  // written, else a recomputation of the first n tokens.
  void truncate(uint32_t n) override {
    if (n > n_past_) throw Error("truncate(" + std::to_string(n) + ") beyond the " + std::to_string(n_past_) + " cached tokens");
    if (n != n_past_) rewind(n);
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
    const int64_t NV = cfg_.n_vocab;
    check_forward_args(tokens, logits, all_logits, n_past_, n_ctx_, cfg_.n_vocab);
    const uint32_t start = n_past_;
    ++stats_.forward_calls;
    try {
      for (int64_t c0 = 0; c0 < n; c0 += kUbatch) {
        const int64_t m = std::min<int64_t>(kUbatch, n - c0);
        run(tokens.subspan(static_cast<size_t>(c0), static_cast<size_t>(m)), c0 + m == n ? logits : std::span<float>{},
            all_logits.empty() ? std::span<float>{}
                               : all_logits.subspan(static_cast<size_t>(c0 * NV), static_cast<size_t>(m * NV)));
      }
    } catch (...) {
      try {
        rewind(start);  // the cache as it was before the call
      } catch (...) {
        reset();
      }
      throw;
    }
  }

 private:
  void reset() {
    n_past_ = 0;
    hw_ = -1;
    tokens_.clear();
  }

  // Back to n < n_past_ positions: O(1) when the rings still hold what positions >= n need,
  // else recompute tokens_[0, n) from an empty state.
  void rewind(uint32_t n) {
    if (static_cast<int64_t>(n) >= hw_ - kUbatch) {
      n_past_ = n;
      tokens_.resize(n);
      return;
    }
    const std::vector<int32_t> kept(tokens_.begin(), tokens_.begin() + n);
    reset();
    RoutingObserver keep = std::move(observer_);
    observer_ = nullptr;
    try {
      for (size_t c0 = 0; c0 < kept.size(); c0 += kUbatch) {
        run(std::span<const int32_t>(kept).subspan(c0, std::min<size_t>(kUbatch, kept.size() - c0)), {}, {});
      }
    } catch (...) {
      observer_ = std::move(keep);
      reset();
      throw;
    }
    observer_ = std::move(keep);
  }

  // One ubatch (n <= U positions) through every block; logits of the last position into `logits`
  // unless it is empty, of every position into `all_logits` unless it is empty.
  void run(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t E = cfg_.n_embd, HC = cfg_.hc_count;
    const auto t0 = Clock::now();
    double io_wait = 0.0;
    const int64_t pos0 = n_past_;
    hw_ = std::max(hw_, pos0 + n - 1);  // ring slots are overwritten from here on

    // §4.1: HC streams, every one initialised with the embedding.
    std::vector<float> S(static_cast<size_t>(n * HC * E));
    for (int64_t t = 0; t < n; ++t) {
      float* st = S.data() + t * HC * E;
      dequantize_row(tok_embd_.type, tok_embd_.row(tokens[t]), st, E);
      for (int64_t s = 1; s < HC; ++s) std::copy(st, st + E, st + s * E);
    }
    std::vector<float> h(static_cast<size_t>(n * E)), x(h.size()), y(h.size());
    std::vector<float> post(static_cast<size_t>(n * HC)), M(static_cast<size_t>(n * HC * HC));
    try {
      for (uint32_t il = 0; il < layers_.size(); ++il) {
        const Layer& L = layers_[il];
        hc_pre(L.hc_attn, S.data(), n, h.data(), post.data(), M.data());
        for (int64_t t = 0; t < n; ++t) rms_norm(h.data() + t * E, L.attn_norm.data(), E, cfg_.rms_eps, x.data() + t * E);
        attention(il, x.data(), n, pos0, y.data());
        hc_post(S.data(), y.data(), n, post.data(), M.data());

        hc_pre(L.hc_ffn, S.data(), n, h.data(), post.data(), M.data());
        for (int64_t t = 0; t < n; ++t) rms_norm(h.data() + t * E, L.ffn_norm.data(), E, cfg_.rms_eps, x.data() + t * E);
        std::fill(y.begin(), y.end(), 0.0f);
        moe(il, tokens, x.data(), n, pos0, y.data(), &io_wait);
        dense_swiglu_ffn(pool_, L.sh_gate, L.sh_up, L.sh_down, x.data(), n, cfg_.swiglu_clamp_shexp.at(il), y.data());
        hc_post(S.data(), y.data(), n, post.data(), M.data());
      }
      experts_->end_step();
    } catch (...) {
      experts_->end_step();
      throw;
    }

    // §4.9: head collapse of the streams (pre only), output norm, logits.
    if (!logits.empty() || !all_logits.empty()) head(S.data(), n, logits, all_logits);
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    n_past_ += static_cast<uint32_t>(n);
    stats_.tokens_evaluated += static_cast<uint64_t>(n);
    stats_.io_wait_ms += io_wait;
    stats_.compute_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count() - io_wait;
  }

  void head(const float* S, int64_t n, std::span<float> logits, std::span<float> all_logits) {
    const int64_t E = cfg_.n_embd, NV = cfg_.n_vocab, HC = cfg_.hc_count;
    std::vector<float> h(static_cast<size_t>(n * E)), x(h.size());
    const int64_t first = all_logits.empty() ? n - 1 : 0;
    const int64_t m = n - first;
    std::vector<float> f(static_cast<size_t>(m * HC * E)), mix(static_cast<size_t>(m * HC));
    for (int64_t t = 0; t < m; ++t) rms_norm(S + (first + t) * HC * E, nullptr, HC * E, cfg_.rms_eps, f.data() + t * HC * E);
    matmul(pool_, out_hc_.fn, f.data(), HC * E, m, mix.data(), HC);
    for (int64_t t = 0; t < m; ++t) {
      const float* st = S + (first + t) * HC * E;
      float* ht = h.data() + t * E;
      std::fill(ht, ht + E, 0.0f);
      for (int64_t s = 0; s < HC; ++s) {
        const float pre = sigmoid(mix[t * HC + s] * out_hc_.scale[0] + out_hc_.base[s]) + cfg_.hc_eps;
        for (int64_t c = 0; c < E; ++c) ht[c] += pre * st[s * E + c];
      }
      rms_norm(ht, output_norm_.data(), E, cfg_.rms_eps, x.data() + t * E);
    }
    if (all_logits.empty()) {
      matmul(pool_, output_, x.data(), E, 1, logits.data(), NV);
    } else {
      matmul(pool_, output_, x.data(), E, n, all_logits.data(), NV);
      if (!logits.empty()) std::copy(all_logits.begin() + (n - 1) * NV, all_logits.begin() + n * NV, logits.begin());
    }
  }

  Compressor compressor(const std::string& prefix, uint32_t ratio, int64_t d) {
    Compressor C;
    C.m = ratio;
    C.d = d;
    C.c = ratio == 4 ? 2 : 1;
    C.ring = 2 * static_cast<int64_t>(ratio) + kUbatch;
    const int64_t E = cfg_.n_embd, cd = C.c * d;
    C.kv = tensors_.matrix(prefix + "kv.weight", E, cd);
    C.gate = tensors_.matrix(prefix + "gate.weight", E, cd);
    C.ape = dense_f32(tensors_, prefix + "ape.weight", cd, ratio);
    C.norm = tensors_.vector(prefix + "norm.weight", d);
    return C;
  }

  std::vector<int32_t> read_tid2eid(const std::string& name) {
    return ds4::read_tid2eid(tensors_.model(), cfg_, name, model_->metadata().path());
  }

  // §4.2: h = Σ_s pre[s]·S[s]; post [n][HC]; M [n][dst][src] (Sinkhorn-normalised).
  void hc_pre(const Hc& w, const float* S, int64_t n, float* h, float* post, float* M) {
    const int64_t E = cfg_.n_embd, HC = cfg_.hc_count, NHC = (2 + HC) * HC;
    const float eps = cfg_.hc_eps;
    std::vector<float> f(static_cast<size_t>(n * HC * E)), mix(static_cast<size_t>(n * NHC));
    for (int64_t t = 0; t < n; ++t) rms_norm(S + t * HC * E, nullptr, HC * E, cfg_.rms_eps, f.data() + t * HC * E);
    matmul(pool_, w.fn, f.data(), HC * E, n, mix.data(), NHC);
    for (int64_t t = 0; t < n; ++t) {
      float pre[8];
      ds4::hc_weights(mix.data() + t * NHC, w.base.data(), w.scale.data(), HC, cfg_.hc_sinkhorn_iters, eps, pre,
                      post + t * HC, M + t * HC * HC);
      ds4::hc_collapse(S + t * HC * E, pre, HC, E, h + t * E);
    }
  }

  // §4.3: S'[dst] = post[dst]·y + Σ_src M[dst][src]·S[src], with M from the sub-layer's input.
  void hc_post(float* S, const float* y, int64_t n, const float* post, const float* M) {
    const int64_t E = cfg_.n_embd, HC = cfg_.hc_count;
    std::vector<float> nxt(static_cast<size_t>(HC * E));
    for (int64_t t = 0; t < n; ++t) ds4::hc_expand(S + t * HC * E, y + t * E, post + t * HC, M + t * HC * HC, HC, E, nxt.data());
  }

  // §4.6: a_p, g_p (+ape) of the n positions into the history, then every row these positions
  // complete: softmax over the block's entries per channel, RMSNorm, RoPE at the block start.
  void compress(const Compressor& C, const float* x, int64_t n, int64_t pos0, float* a, float* g, float* rows) {
    const int64_t E = cfg_.n_embd, d = C.d, cd = C.c * d, m = C.m, R = cfg_.n_rot, ring = C.ring;
    std::vector<float> ta(static_cast<size_t>(n * cd)), tg(ta.size());
    matmul(pool_, C.kv, x, E, n, ta.data(), cd);
    matmul(pool_, C.gate, x, E, n, tg.data(), cd);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t p = pos0 + t;
      const float* ape = C.ape.data() + (p % m) * cd;
      float* ap = a + (p % ring) * cd;
      float* gp = g + (p % ring) * cd;
      for (int64_t i = 0; i < cd; ++i) {
        ap[i] = ta[t * cd + i];
        gp[i] = tg[t * cd + i] + ape[i];
      }
    }
    std::vector<float> cs(static_cast<size_t>(R)), kappa(static_cast<size_t>(d));
    for (int64_t p = pos0; p < pos0 + n; ++p) {
      if ((p + 1) % m != 0) continue;
      const int64_t b = (p + 1) / m - 1, s = b * m;
      ds4::compress_pool(a, g, ring, d, C.c, m, s, kappa.data());
      float* row = rows + b * d;
      rms_norm(kappa.data(), C.norm.data(), d, cfg_.rms_eps, row);
      rope_table(rope_comp_, s, cs.data());
      rope_apply(rope_comp_, cs.data(), row + d - R, 1, d);
    }
  }

  // §4.5 / §4.7: the attention sub-layer of block il for n positions from pos0.
  void attention(uint32_t il, const float* x, int64_t n, int64_t pos0, float* out) {
    const Layer& L = layers_[il];
    LayerState& st = state_[il];
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, D = cfg_.n_embd_head_k, R = cfg_.n_rot, N = D - R;
    const int64_t Q = cfg_.q_lora_rank, G = cfg_.out_groups, O = cfg_.out_lora_rank;
    const int64_t HI = cfg_.indexer_n_head, DI = cfg_.indexer_head_dim, KI = cfg_.indexer_top_k;
    const int64_t ratio = L.ratio, nswa = cfg_.n_swa;
    const RopeParams& rope = ratio == 0 ? rope_plain_ : rope_comp_;

    std::vector<float> cq(static_cast<size_t>(n * Q)), q(static_cast<size_t>(n * H * D));
    matmul(pool_, L.wq_a, x, E, n, cq.data(), Q);
    for (int64_t t = 0; t < n; ++t) rms_norm(cq.data() + t * Q, L.q_a_norm.data(), Q, cfg_.rms_eps, cq.data() + t * Q);
    matmul(pool_, L.wq_b, cq.data(), Q, n, q.data(), H * D);
    float* kraw = st.kraw.data();
    const int64_t RW = ring_raw_;
    std::vector<float> kn(static_cast<size_t>(n * D));
    matmul(pool_, L.wkv, x, E, n, kn.data(), D);
    std::vector<float> cs(static_cast<size_t>(R));
    for (int64_t t = 0; t < n; ++t) {
      float* qt = q.data() + t * H * D;
      for (int64_t hh = 0; hh < H; ++hh) rms_norm(qt + hh * D, nullptr, D, cfg_.rms_eps, qt + hh * D);
      rope_table(rope, pos0 + t, cs.data());
      rope_apply(rope, cs.data(), qt + N, H, D);
      float* k = kraw + ((pos0 + t) % RW) * D;
      rms_norm(kn.data() + t * D, L.kv_norm.data(), D, cfg_.rms_eps, k);
      rope_apply(rope, cs.data(), k + N, 1, D);
    }
    if (ratio != 0) compress(L.comp, x, n, pos0, st.ca.data(), st.cg.data(), st.crow.data());

    // Compressed rows each query sees: all completed ones (ratio 128), the indexer's top K_I (ratio 4).
    std::vector<std::vector<int32_t>> sel(static_cast<size_t>(n));
    if (ratio != 0) {
      for (int64_t t = 0; t < n; ++t) {
        sel[t].resize(static_cast<size_t>((pos0 + t + 1) / ratio));
        std::iota(sel[t].begin(), sel[t].end(), 0);
      }
    }
    if (ratio == 4) {
      compress(L.icomp, x, n, pos0, st.ia.data(), st.ig.data(), st.irow.data());
      std::vector<float> qi(static_cast<size_t>(n * HI * DI)), w(static_cast<size_t>(n * HI));
      matmul(pool_, L.idx_q_b, cq.data(), Q, n, qi.data(), HI * DI);
      matmul(pool_, L.idx_proj, x, E, n, w.data(), HI);
      const float wscale = 1.0f / std::sqrt(static_cast<float>(DI * HI));
      pool_.parallel_for(n, 1, [&](int64_t b, int64_t e) {
        std::vector<float> csi(static_cast<size_t>(R)), score;
        for (int64_t t = b; t < e; ++t) {
          const int64_t nvis = static_cast<int64_t>(sel[t].size());
          if (nvis <= KI) continue;
          float* qt = qi.data() + t * HI * DI;
          rope_table(rope_comp_, pos0 + t, csi.data());
          rope_apply(rope_comp_, csi.data(), qt + DI - R, HI, DI);
          score.assign(static_cast<size_t>(nvis), 0.0f);
          for (int64_t r = 0; r < nvis; ++r) {
            const float* row = st.irow.data() + r * DI;
            score[r] = ds4::indexer_score(qt, w.data() + t * HI, row, HI, DI, wscale);
          }
          std::partial_sort(sel[t].begin(), sel[t].begin() + KI, sel[t].end(),
                            [&](int32_t p1, int32_t p2) { return score[p1] > score[p2] || (score[p1] == score[p2] && p1 < p2); });
          sel[t].resize(static_cast<size_t>(KI));
        }
      });
    }

    // Scores over raw window + chosen compressed rows + one sink; values = keys; de-rope.
    std::vector<float> o(static_cast<size_t>(n * H * D));
    const float kq_scale = 1.0f / std::sqrt(static_cast<float>(D));
    pool_.parallel_for(n * H, 1, [&](int64_t b, int64_t e) {
      std::vector<const float*> keys;
      std::vector<float> sc, csd(static_cast<size_t>(R));
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = i / H, hh = i % H, p = pos0 + t;
        keys.clear();
        for (int64_t j = std::max<int64_t>(0, p - nswa + 1); j <= p; ++j) keys.push_back(kraw + (j % RW) * D);
        for (int32_t r : sel[t]) keys.push_back(st.crow.data() + r * D);
        const float* qh = q.data() + (t * H + hh) * D;
        sc.resize(keys.size());
        float* oh = o.data() + (t * H + hh) * D;
        ds4::attend_sink(qh, keys.data(), static_cast<int64_t>(keys.size()), L.sinks[hh], D, kq_scale, sc.data(), oh);
        rope_table(rope, p, csd.data());
        for (int64_t c = 1; c < R; c += 2) csd[c] = -csd[c];  // rotation by -θ
        rope_apply(rope, csd.data(), oh + N, 1, D);
      }
    });

    // Grouped low-rank output: z_g = A_g · (heads of group g), y = W_b · [z_0 .. z_{G-1}].
    const int64_t HDG = H * D / G;
    std::vector<float> z(static_cast<size_t>(n * G * O));
    for (int64_t g = 0; g < G; ++g) matmul(pool_, rows_of(L.wo_a, g, O), o.data() + g * HDG, H * D, n, z.data() + g * O, G * O);
    matmul(pool_, L.wo_b, z.data(), G * O, n, out, E);
  }

  // §4.8 steps 1–5: router, selection (hash table or biased top-k), weights, routed experts.
  void moe(uint32_t il, std::span<const int32_t> tokens, const float* x, int64_t n, int64_t pos0, float* out,
           double* io_wait) {
    const Layer& L = layers_[il];
    const int64_t E = cfg_.n_embd, X = cfg_.n_expert, K = cfg_.n_expert_used;
    std::vector<float> rl(static_cast<size_t>(n * X)), scratch(static_cast<size_t>(2 * X));
    matmul(pool_, L.router, x, E, n, rl.data(), X);
    std::vector<int32_t> ids(static_cast<size_t>(n * K));
    std::vector<float> wts(static_cast<size_t>(n * K));
    for (int64_t t = 0; t < n; ++t) {
      int32_t* id = ids.data() + t * K;
      float* w = wts.data() + t * K;
      if (!L.tid2eid.empty()) {
        ds4::hash_route(cfg_, rl.data() + t * X, L.tid2eid.data() + static_cast<size_t>(tokens[t]) * static_cast<size_t>(K), id, w);
      } else {
        route_token(cfg_, rl.data() + t * X, L.bias.data(), id, w, scratch.data());
      }
      if (observer_) {
        observer_(il, static_cast<uint32_t>(pos0 + t), std::span<const int32_t>(id, K), std::span<const float>(w, K));
      }
    }
    stats_.expert_selections += static_cast<uint64_t>(n * K);
    // Next-layer prefetch: the next MoE block's router on this input; a hash-routed next block's
    // picks are its token table's rows (exact, no scores needed).
    const auto prefetch = prefetch_next_block(*experts_, cfg_, il, [&](uint32_t next) {
      const Layer& N = layers_[next];
      if (N.tid2eid.empty()) return predict_next_experts(pool_, cfg_, N.router, N.bias.data(), x, n);
      std::vector<int32_t> picks(static_cast<size_t>(n * K));
      for (int64_t t = 0; t < n; ++t) {
        const int32_t* row = N.tid2eid.data() + static_cast<size_t>(tokens[t]) * static_cast<size_t>(K);
        std::copy(row, row + K, picks.begin() + t * K);
      }
      return experts_by_picks(picks, X);
    });
    stats_.experts_computed += run_routed_experts(pool_, *experts_, il, x, n, E, K, ids.data(), wts.data(),
                                                  cfg_.swiglu_clamp_exp.at(il), out, io_wait, prefetch);
  }

  std::shared_ptr<const ModelSource> model_;
  const ModelConfig& cfg_;
  ThreadPool pool_;
  TensorStore tensors_;
  WeightView tok_embd_, output_;
  std::vector<float> output_norm_;
  Hc out_hc_;
  RopeParams rope_plain_, rope_comp_;
  std::vector<Layer> layers_;
  std::vector<LayerState> state_;
  std::unique_ptr<ExpertProvider> experts_;
  uint32_t n_ctx_ = 0, n_past_ = 0;
  int64_t ring_raw_ = 0;         // slots of the raw K ring: n_swa + U
  int64_t hw_ = -1;              // highest position written into the rings since the last reset
  std::vector<int32_t> tokens_;  // ids at positions 0 .. n_past_ - 1
  RoutingObserver observer_;
  BackendStats stats_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend_deepseek4(std::shared_ptr<const ModelSource> model,
                                                    const EngineSettings& settings) {
  if (!model) throw Error("make_cpu_backend_deepseek4: no model");
  return std::make_unique<Deepseek4Backend>(std::move(model), settings);
}

}  // namespace moepack
