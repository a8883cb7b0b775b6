// The CUDA backend of `deepseek4` (DeepSeek-V4-Flash layout): the GPU twin of
// core/arch_deepseek4.cpp, step by step (read that file for the mathematics and the state; the
// formulas cite ../shared/docs/ARCH_DEEPSEEK4.md). What runs where:
//   GPU  embedding, hyper-connection mixing (fn GEMV, Sinkhorn weights, collapse / expansion),
//        every RMSNorm, q-LoRA / KV / compressor / indexer / output projections (dequantizing
//        GEMV over the GGUF bytes), RoPE (tables from core's rope_table(), uploaded once),
//        the KV compressors' history and pooling, the indexer's scores, the sliding-window +
//        compressed attention with sinks, the router's logits, routed experts (cuda_moe.h,
//        SwiGLU clamp per block) and the shared expert (clamped), the output HC head, logits.
//        The compressed rows each query sees, the indexer's top-k among them included
//        (ds4_select_rows: the CPU reference's order, exactly), are chosen on the GPU too.
//   host the router's selection and weights (core's route_token, or ds4::hash_route on the
//        tid2eid table for hash-routed blocks), after copying the scores back; exact by
//        construction (gpu/cuda_host_router.h). At decode with every expert resident the GPU
//        makes the router's choice itself, the same bits (gpu/cuda_device_router.h), and a
//        decode step is one CUDA graph launch from its second step on (gpu/decode_graph.h):
//        every buffer is allocated at construction and every position-dependent launch reads
//        the step's position from device memory.
// State (device, per block) and its semantics are the CPU reference's: a raw K ring of
// n_swa + U rows, compressor rings of 2m + U slots, every compressed row; ubatches of U = 256
// positions; truncate(n) is O(1) when n >= hw - U and otherwise recomputes tokens [0, n).
// Streams: one compute stream; where the host routes, it waits for it once per block for the
// router scores' copy (an event: the shared expert queued after it runs meanwhile,
// cuda_host_router.h), and at the end of each ubatch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_ops.h"
#include "core/deepseek4_ops.h"
#include "core/error.h"
#include "core/model_source.h"
#include "core/quants.h"
#include "core/tensor_store.h"
#include "gpu/cuda_arch_backends.h"
#include "gpu/cuda_attention.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_device_router.h"
#include "gpu/cuda_host_router.h"
#include "gpu/cuda_moe.h"
#include "gpu/cuda_resources.h"
#include "gpu/decode_graph.h"
#include "gpu/device_info.h"
#include "gpu/device_weights.h"
#include "gpu/kernels.h"
#include "gpu/kernels_deepseek4.h"
#include "gpu/ubatch.h"
#include "gpu/upload_arena.h"

namespace moepack::gpu {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kUbatch = 256;  // positions per pass through the blocks (U), as the CPU reference

size_t fbytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

using H = DeviceWeights::Handle;

struct HcW {  // one hyper-connection: fn [(2+HC)*HC][HC*E] (head: [HC][HC*E]), base, scale [3] (head: [1])
  H fn = 0, base = 0, scale = 0;
  DevMatrix m;
  const float* b = nullptr;
  const float* s = nullptr;
};

struct CompW {  // a KV compressor (§4.6): ratio m, row width d, c = 2 (m = 4, overlapping) or 1
  H kv = 0, gate = 0, ape = 0, norm = 0;
  DevMatrix wkv, wgate;
  const float* dape = nullptr;   // [m][c*d] F32
  const float* dnorm = nullptr;  // [d]
  int64_t m = 0, d = 0, c = 0, ring = 0;
};

struct Layer {
  uint32_t ratio = 0;
  H attn_norm = 0, ffn_norm = 0, sinks = 0, q_a_norm = 0, kv_norm = 0;
  H wq_a = 0, wq_b = 0, wkv = 0, wo_a = 0, wo_b = 0, idx_proj = 0, idx_q_b = 0, router = 0;
  H sh_gate = 0, sh_up = 0, sh_down = 0;
  HcW hc_attn, hc_ffn;
  CompW comp, icomp;
  const float *d_attn_norm = nullptr, *d_ffn_norm = nullptr, *d_sinks = nullptr, *d_q_a_norm = nullptr,
              *d_kv_norm = nullptr;
  DevMatrix m_wq_a, m_wq_b, m_wkv, m_wo_a, m_wo_b, m_idx_proj, m_idx_q_b, m_router, m_sh_gate, m_sh_up,
      m_sh_down;
  int64_t sh_ff = 0;
  std::vector<float> bias;       // [X] host (learned-routing blocks)
  std::vector<int32_t> tid2eid;  // [n_vocab][k] host (hash-routed blocks)
  // Device state (views into state_): kraw [RW][D], ca/cg [ring][c*D], crow [n_ctx/m + 1][D],
  // ia/ig [ring][2*DI], irow [n_ctx/4 + 1][DI].
  float *kraw = nullptr, *ca = nullptr, *cg = nullptr, *crow = nullptr, *ia = nullptr, *ig = nullptr,
        *irow = nullptr;
};

class CudaDeepseek4 final : public Backend {
 public:
  CudaDeepseek4(std::shared_ptr<const ModelSource> model, const EngineSettings& s)
      : model_(std::move(model)), cfg_(model_->config()), tensors_(model_->gguf()), weights_(tensors_) {
    open_cuda_device();  // (throws where there is no device this build runs on)
    const int64_t E = cfg_.n_embd, Hh = cfg_.n_head, D = cfg_.n_embd_head_k, R = cfg_.n_rot,
                  Q = cfg_.q_lora_rank;
    const int64_t HC = cfg_.hc_count, NHC = (2 + HC) * HC, X = cfg_.n_expert, G = cfg_.out_groups;
    const int64_t O = cfg_.out_lora_rank, HI = cfg_.indexer_n_head, DI = cfg_.indexer_head_dim;
    const std::string& file = model_->metadata().path();
    if (cfg_.n_vocab == 0) throw FormatError(file, "deepseek4.vocab_size", 0, "vocabulary size unknown");
    if (R <= 0 || R > D || R > DI)
      throw FormatError(file, "deepseek4.rope.dimension_count", 0,
                        "must be in 1..min(key_length, indexer key_length)");
    if (HC < 1 || HC > 8)
      throw FormatError(file, "deepseek4.hyper_connection.count", 0, "must be in 1..8 (CUDA backend)");
    if (G == 0 || (Hh * D) % G != 0)
      throw FormatError(file, "deepseek4.attention.output_group_count", 0,
                        "must divide head_count * key_length");
    if (cfg_.n_swa == 0) throw FormatError(file, "deepseek4.attention.sliding_window", 0, "must be positive");
    if (D > 1024)
      throw FormatError(file, "deepseek4.attention.key_length", 0, "above 1024 (CUDA attention kernel)");

    h_tok_ = weights_.add_matrix("token_embd.weight", E, cfg_.n_vocab);
    h_out_norm_ = weights_.add_vector("output_norm.weight", E);
    h_out_ = weights_.add_matrix("output.weight", E, cfg_.n_vocab);
    out_hc_.fn = weights_.add_matrix("output_hc_fn.weight", HC * E, HC);
    out_hc_.base = weights_.add_vector("output_hc_base.weight", HC);
    out_hc_.scale = weights_.add_vector("output_hc_scale.weight", 1);

    // RoPE (§4.4), exactly the CPU reference's parameters.
    rope_plain_.n_dims = static_cast<int>(R);
    rope_plain_.freq_base = cfg_.rope_freq_base;
    rope_comp_ = rope_plain_;
    rope_comp_.freq_base = cfg_.compress_rope_freq_base;
    rope_comp_.freq_scale = cfg_.rope_freq_scale;
    if (cfg_.rope_yarn && cfg_.rope_freq_scale != 1.0f) {
      rope_comp_.ext_factor = 1.0f;
      rope_comp_.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / cfg_.rope_freq_scale));
      rope_comp_.beta_fast = 32.0f;
      rope_comp_.beta_slow = 1.0f;
      rope_comp_.n_ctx_orig = static_cast<int>(cfg_.rope_n_ctx_orig);
    }

    n_ctx_ = std::min<uint32_t>(s.n_ctx ? s.n_ctx : 4096, cfg_.n_ctx_train ? cfg_.n_ctx_train : 4096);
    ring_raw_ = cfg_.n_swa + kUbatch;

    layers_.resize(cfg_.n_layer_run());
    for (uint32_t il = 0; il < cfg_.n_layer_run(); ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer& L = layers_[il];
      L.ratio = cfg_.compress_ratios.at(il);
      if (L.ratio != 0 && L.ratio < 4) {
        throw FormatError(file, "deepseek4.attention.compress_ratios", 0,
                          "block " + std::to_string(il) + ": ratio " + std::to_string(L.ratio) +
                              " (expected 0 or at least 4)");
      }
      L.attn_norm = weights_.add_vector(p + "attn_norm.weight", E);
      L.ffn_norm = weights_.add_vector(p + "ffn_norm.weight", E);
      L.sinks = weights_.add_vector(p + "attn_sinks.weight", Hh);
      L.wq_a = weights_.add_matrix(p + "attn_q_a.weight", E, Q);
      L.q_a_norm = weights_.add_vector(p + "attn_q_a_norm.weight", Q);
      L.wq_b = weights_.add_matrix(p + "attn_q_b.weight", Q, Hh * D);
      L.wkv = weights_.add_matrix(p + "attn_kv.weight", E, D);
      L.kv_norm = weights_.add_vector(p + "attn_kv_a_norm.weight", D);
      L.wo_a = weights_.add_matrix(p + "attn_output_a.weight", Hh * D / G, O * G);
      L.wo_b = weights_.add_matrix(p + "attn_output_b.weight", G * O, E);
      for (auto [hc, name] : {std::pair{&L.hc_attn, "hc_attn"}, std::pair{&L.hc_ffn, "hc_ffn"}}) {
        hc->fn = weights_.add_matrix(p + name + "_fn.weight", HC * E, NHC);
        hc->base = weights_.add_vector(p + name + "_base.weight", NHC);
        hc->scale = weights_.add_vector(p + name + "_scale.weight", 3);
      }
      if (L.ratio != 0) L.comp = compressor(p + "attn_compressor_", L.ratio, D);
      if (L.ratio == 4) {
        L.icomp = compressor(p + "indexer_compressor_", 4, DI);
        L.idx_proj = weights_.add_matrix(p + "indexer.proj.weight", E, HI);
        L.idx_q_b = weights_.add_matrix(p + "indexer.attn_q_b.weight", Q, HI * DI);
      }
      L.router = weights_.add_matrix(p + "ffn_gate_inp.weight", E, X);
      if (il < cfg_.n_hash_layers) {
        L.tid2eid = ds4::read_tid2eid(tensors_.model(), cfg_, p + "ffn_gate_tid2eid.weight", file);
      } else {
        L.bias = tensors_.vector(p + "exp_probs_b.bias", X);
      }
      L.sh_ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate_shexp.weight")[1]);
      L.sh_gate = weights_.add_matrix(p + "ffn_gate_shexp.weight", E, L.sh_ff);
      L.sh_up = weights_.add_matrix(p + "ffn_up_shexp.weight", E, L.sh_ff);
      L.sh_down = weights_.add_matrix(p + "ffn_down_shexp.weight", L.sh_ff, E);
      max_sh_ff_ = std::max(max_sh_ff_, L.sh_ff);
      if (cfg_.swiglu_clamp_exp.size() <= il || cfg_.swiglu_clamp_shexp.size() <= il) {
        throw FormatError(file, "deepseek4.swiglu_clamp_exp", 0, "no value for block " + std::to_string(il));
      }
    }
    if (cfg_.n_ff_exp <= 0)
      throw FormatError(file, "deepseek4.expert_feed_forward_length", 0, "required and positive");
    const uint32_t n_run = cfg_.n_layer_run();
    experts_ = std::make_unique<CudaRoutedExperts>(
        *model_, weights_, [n_run](uint32_t il) { return il < n_run; }, static_cast<int64_t>(cfg_.n_ff_exp));

    // Selected compressed rows per query: all completed (ratio > 4, e.g. 128), the indexer's
    // top-k or fewer (ratio 4). Indexer scores: one per visible ratio-4 row.
    for (const Layer& L : layers_) {
      if (L.ratio == 4)
        sel_stride_ = std::max<int64_t>(sel_stride_, std::min<int64_t>(cfg_.indexer_top_k, n_ctx_ / 4 + 1));
      if (L.ratio > 4) sel_stride_ = std::max<int64_t>(sel_stride_, n_ctx_ / L.ratio + 1);
    }
    score_stride_ = n_ctx_ / 4 + 1;
    max_keys_ = cfg_.n_swa + sel_stride_;
    const int64_t KI = cfg_.indexer_top_k;
    const bool indexer =
        std::any_of(layers_.begin(), layers_.end(), [](const Layer& L) { return L.ratio == 4; });
    if (indexer && (KI < 1 || (KI > 4096 && n_ctx_ / 4 > KI)))
      throw FormatError(file, "deepseek4.attention.indexer.top_k", 0,
                        std::to_string(KI) + " outside 1..4096 (the CUDA backend's top-k selection)");

    // Device state and activations, counted in the upload's VRAM check.
    uint64_t state_floats = 0;
    for (const Layer& L : layers_) state_floats += state_size(L);
    const uint64_t act = activation_floats();
    const uint64_t tables = 4ull * n_ctx_ * static_cast<uint64_t>(R);
    // The device router's tables (DeviceRouter::bind, below): n_expert biases a block and the
    // tid2eid rows, 4 bytes each.
    uint64_t router_words = 0;
    for (const Layer& L : layers_) router_words += static_cast<uint64_t>(cfg_.n_expert) + L.tid2eid.size();
    weights_.upload(s.cache_vram_reserve_mib << 20, (state_floats + act + tables + router_words) * sizeof(float),
                    model_->path());
    state_.allocate(state_floats * sizeof(float),
                    "the deepseek4 attention state (" + std::to_string(n_ctx_) + " tokens)");
    MOEPACK_CUDA_CHECK(cudaMemset(state_.bytes_ptr(), 0, state_floats * sizeof(float)));
    float* at = state_.as<float>();
    for (Layer& L : layers_) bind_state(L, at);
    allocate_activations();
    build_tables();

    tok_embd_ = weights_.matrix(h_tok_);
    output_ = weights_.matrix(h_out_);
    output_norm_ = weights_.vector(h_out_norm_);
    bind_hc(out_hc_);
    require_gpu_type(tok_embd_, "token_embd.weight");
    require_gpu_type(output_, "output.weight");
    for (uint32_t il = 0; il < layers_.size(); ++il) {
      Layer& L = layers_[il];
      const std::string p = "blk." + std::to_string(il) + ".";
      L.d_attn_norm = weights_.vector(L.attn_norm);
      L.d_ffn_norm = weights_.vector(L.ffn_norm);
      L.d_sinks = weights_.vector(L.sinks);
      L.d_q_a_norm = weights_.vector(L.q_a_norm);
      L.d_kv_norm = weights_.vector(L.kv_norm);
      const std::pair<DevMatrix*, H> mats[] = {
          {&L.m_wq_a, L.wq_a},       {&L.m_wq_b, L.wq_b},   {&L.m_wkv, L.wkv},
          {&L.m_wo_a, L.wo_a},       {&L.m_wo_b, L.wo_b},   {&L.m_router, L.router},
          {&L.m_sh_gate, L.sh_gate}, {&L.m_sh_up, L.sh_up}, {&L.m_sh_down, L.sh_down}};
      for (const auto& [m, h] : mats) {
        *m = weights_.matrix(h);
        require_gpu_type(*m, p + "attention / router / shared expert");
      }
      bind_hc(L.hc_attn);
      bind_hc(L.hc_ffn);
      if (L.ratio != 0) bind_comp(L.comp);
      if (L.ratio == 4) {
        bind_comp(L.icomp);
        L.m_idx_proj = weights_.matrix(L.idx_proj);
        L.m_idx_q_b = weights_.matrix(L.idx_q_b);
        require_gpu_type(L.m_idx_proj, p + "indexer.proj.weight");
        require_gpu_type(L.m_idx_q_b, p + "indexer.attn_q_b.weight");
      }
    }
    experts_->bind(s);
    experts_->reserve(kUbatch);
    // Decode steps route on the GPU when every expert is resident (gpu/cuda_device_router.h),
    // hash-routed blocks from their tid2eid tables.
    std::vector<std::vector<float>> biases;
    std::vector<std::vector<int32_t>> hashes;
    for (const Layer& L : layers_) {
      biases.push_back(L.bias);
      hashes.push_back(L.tid2eid);
    }
    device_router_.bind(cfg_, *experts_, biases, hashes);
    tokens_.reserve(n_ctx_);
    MOEPACK_CUDA_CHECK(
        cudaDeviceSynchronize());  // the state's memset and the tables before stream_'s first kernel
  }

  std::string_view name() const override { return "cuda"; }
  const ModelConfig& config() const override { return cfg_; }
  uint32_t n_ctx() const override { return n_ctx_; }
  uint32_t n_past() const override { return n_past_; }
  void truncate(uint32_t n) override {
    if (n > n_past_)
      throw Error("truncate(" + std::to_string(n) + ") beyond the " + std::to_string(n_past_) +
                  " cached tokens");
    if (n != n_past_) rewind(n);
  }
  void set_routing_observer(RoutingObserver observer) override { observer_ = std::move(observer); }
  BackendStats stats() const override {
    BackendStats s = stats_;
    experts_->add_stats(s);
    return s;
  }

  void forward(std::span<const int32_t> tokens, std::span<float> logits,
               std::span<float> all_logits) override {
    check_forward_args(tokens, logits, all_logits, n_past_, n_ctx_, cfg_.n_vocab);
    const uint32_t start = n_past_;
    ++stats_.forward_calls;
    try {
      for_each_ubatch(
          tokens, logits, all_logits, cfg_.n_vocab, kUbatch,
          [this](std::span<const int32_t> t, std::span<float> l, std::span<float> a) { run(t, l, a); });
    } catch (...) {
      try {
        rewind(start);
      } catch (...) {
        reset();
      }
      throw;
    }
  }

 private:
  CompW compressor(const std::string& prefix, uint32_t ratio, int64_t d) {
    CompW C;
    C.m = ratio;
    C.d = d;
    C.c = ratio == 4 ? 2 : 1;
    C.ring = 2 * static_cast<int64_t>(ratio) + kUbatch;
    const int64_t E = cfg_.n_embd, cd = C.c * d;
    C.kv = weights_.add_matrix(prefix + "kv.weight", E, cd);
    C.gate = weights_.add_matrix(prefix + "gate.weight", E, cd);
    // ape [m][cd], dequantized to F32 on the host as the CPU reference does.
    const WeightView w = tensors_.matrix(prefix + "ape.weight", cd, ratio);
    std::vector<float> ape(static_cast<size_t>(cd * ratio));
    for (int64_t r = 0; r < static_cast<int64_t>(ratio); ++r)
      dequantize_row(w.type, w.row(r), ape.data() + r * cd, cd);
    C.ape = weights_.add_floats(std::move(ape));
    C.norm = weights_.add_vector(prefix + "norm.weight", d);
    return C;
  }

  void bind_hc(HcW& h) {
    h.m = weights_.matrix(h.fn);
    h.b = weights_.vector(h.base);
    h.s = weights_.vector(h.scale);
    require_gpu_type(h.m, "hyper-connection fn");
  }
  void bind_comp(CompW& C) {
    C.wkv = weights_.matrix(C.kv);
    C.wgate = weights_.matrix(C.gate);
    C.dape = weights_.vector(C.ape);
    C.dnorm = weights_.vector(C.norm);
    require_gpu_type(C.wkv, "compressor kv");
    require_gpu_type(C.wgate, "compressor gate");
  }

  uint64_t state_size(const Layer& L) const {
    const uint64_t D = cfg_.n_embd_head_k, DI = cfg_.indexer_head_dim;
    uint64_t f = static_cast<uint64_t>(ring_raw_) * D;
    if (L.ratio != 0) f += 2ull * L.comp.ring * L.comp.c * D + (n_ctx_ / L.ratio + 1ull) * D;
    if (L.ratio == 4) f += 2ull * L.icomp.ring * 2 * DI + (n_ctx_ / 4 + 1ull) * DI;
    return f;
  }
  void bind_state(Layer& L, float*& at) const {
    const int64_t D = cfg_.n_embd_head_k, DI = cfg_.indexer_head_dim;
    auto take = [&at](int64_t n) {
      float* p = at;
      at += n;
      return p;
    };
    L.kraw = take(ring_raw_ * D);
    if (L.ratio != 0) {
      L.ca = take(L.comp.ring * L.comp.c * D);
      L.cg = take(L.comp.ring * L.comp.c * D);
      L.crow = take((n_ctx_ / L.ratio + 1) * D);
    }
    if (L.ratio == 4) {
      L.ia = take(L.icomp.ring * 2 * DI);
      L.ig = take(L.icomp.ring * 2 * DI);
      L.irow = take((n_ctx_ / 4 + 1) * DI);
    }
  }

  // Activation buffers for one ubatch of U positions (floats), allocated once.
  struct Sizes {
    int64_t S, f, mix, hc, M, e, cq, q, kn, t, kappa, qi, iw, sc, att, z, rl, sh, lg, sel, cnt, row;
  };
  Sizes sizes() const {
    const int64_t U = kUbatch, E = cfg_.n_embd, HC = cfg_.hc_count, NHC = (2 + HC) * HC;
    const int64_t Hh = cfg_.n_head, D = cfg_.n_embd_head_k, HI = cfg_.indexer_n_head,
                  DI = cfg_.indexer_head_dim;
    Sizes z{};
    z.S = U * HC * E;
    z.f = U * HC * E;
    z.mix = U * NHC;
    z.hc = U * HC;
    z.M = U * HC * HC;
    z.e = U * E;
    z.cq = U * cfg_.q_lora_rank;
    z.q = U * Hh * D;
    z.kn = U * D;
    z.t = U * 2 * std::max<int64_t>(D, DI);
    z.kappa = (U / 4 + 2) * std::max<int64_t>(D, DI);
    z.qi = U * HI * DI;
    z.iw = U * HI;
    z.sc = U * score_stride_;
    z.att = U * Hh * max_keys_;
    z.z = U * static_cast<int64_t>(cfg_.out_groups) * cfg_.out_lora_rank;
    z.rl = 2 * U * static_cast<int64_t>(cfg_.n_expert);  // 2: the prefetch lookahead's scores
    z.sh = U * std::max<int64_t>(max_sh_ff_, 1);
    z.lg = U * static_cast<int64_t>(cfg_.n_vocab);
    z.sel = U * std::max<int64_t>(sel_stride_, 1);  // int32 each
    z.cnt = U;                                      // int32 each
    z.row = std::max<int64_t>(D, DI);  // a decode graph's row before it is stored at its position
    return z;
  }
  uint64_t activation_floats() const {
    const Sizes z = sizes();
    return static_cast<uint64_t>(z.S + z.f + z.mix + 2 * z.hc + z.hc + z.M + 4 * z.e + z.cq + 2 * z.q + z.kn +
                                 2 * z.t + z.kappa + z.qi + z.iw + z.sc + z.att + z.z + z.rl + 2 * z.sh +
                                 z.lg + z.sel + 2 * z.cnt + z.row);
  }
  void allocate_activations() {
    const Sizes z = sizes();
    const auto a = [](DeviceBuffer& b, int64_t n, const char* what) {
      b.allocate(fbytes(std::max<int64_t>(n, 1)), what);
    };
    a(S_, z.S, "HC streams");
    a(f_, z.f, "HC normed streams");
    a(mix_, z.mix, "HC mixing logits");
    a(pre_, z.hc, "HC weights");
    a(post_, z.hc, "HC weights");
    a(M_, z.M, "HC mixing matrices");
    a(h_, z.e, "activations");
    a(x_, z.e, "activations");
    a(y_, z.e, "activations");
    a(tmp_, z.e, "activations");
    a(cq_, z.cq, "q-LoRA");
    a(q_, z.q, "attention q");
    a(o_, z.q, "attention output");
    a(kn_, z.kn, "attention k");
    a(ta_, z.t, "compressor projections");
    a(tg_, z.t, "compressor projections");
    a(kappa_, z.kappa, "compressed rows");
    a(qi_, z.qi, "indexer q");
    a(iw_, z.iw, "indexer weights");
    a(sc_, z.sc, "indexer scores");
    a(att_, z.att, "attention scores");
    a(z_, z.z, "grouped output");
    a(rl_, z.rl, "router logits");
    a(sg_, z.sh, "shared expert");
    a(su_, z.sh, "shared expert");
    a(logits_, z.lg, "logits");
    a(sel_, z.sel, "compressed rows' selection");
    a(cnt_, z.cnt, "compressed rows' selection");
    a(no_rows_, z.cnt, "compressed rows' selection");
    MOEPACK_CUDA_CHECK(cudaMemset(no_rows_.bytes_ptr(), 0, no_rows_.size()));  // ratio-0 blocks' counts
    a(row_, z.row, "a decode step's row");
    router_.reserve(kUbatch);
  }

  // cos/sin of every position with core's rope_table (plain, compressed), and the same with the
  // sines negated (de-rotation of the attention output, §4.5).
  void build_tables() {
    const int64_t R = cfg_.n_rot;
    const auto upload = [&](const RopeParams& p, bool negate, DeviceBuffer& dst) {
      std::vector<float> t(static_cast<size_t>(n_ctx_) * static_cast<size_t>(R));
      for (uint32_t pos = 0; pos < n_ctx_; ++pos) {
        float* row = t.data() + static_cast<size_t>(pos) * static_cast<size_t>(R);
        rope_table(p, pos, row);
        if (negate) {
          for (int64_t c = 1; c < R; c += 2) row[c] = -row[c];
        }
      }
      dst.allocate(t.size() * sizeof(float), "the RoPE tables");
      MOEPACK_CUDA_CHECK(
          cudaMemcpy(dst.as<float>(), t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice));
    };
    upload(rope_plain_, false, cs_plain_);
    upload(rope_plain_, true, cs_plain_neg_);
    upload(rope_comp_, false, cs_comp_);
    upload(rope_comp_, true, cs_comp_neg_);
  }

  void reset() {
    n_past_ = 0;
    hw_ = -1;
    tokens_.clear();
  }

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

  // One ubatch (n <= U positions) through every block, as the CPU reference's run(). A decode
  // step with the router on the GPU and logits to return runs as a CUDA graph (gpu/decode_graph.h).
  void run(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size()), NV = cfg_.n_vocab;
    const auto t0 = Clock::now();
    double io_wait = 0.0;
    const int64_t pos0 = n_past_;
    cudaStream_t st = stream_.get();
    hw_ = std::max(hw_, pos0 + n - 1);
    arena_.reset();
    device_router_.begin_step();
    const bool graph =
        n == 1 && all_logits.empty() && !logits.empty() && device_router_.active(1) && graph_.usable();
    try {
      if (graph) {
        graph_.step(tokens[0], pos0, n_ctx_, logits, NV, st, device_router_, stats_,
                    [&](const int32_t* d_step, float* out, int64_t max_kv) {
                      enqueue_blocks(tokens, d_step, 1, pos0, d_step + 1, max_kv, &io_wait);
                      device_router_.copy_back(observer_, st, true);
                      enqueue_head(1, false, out);
                    });
      } else {
        const int32_t* d_tok = arena_.put(tokens.data(), tokens.size(), st);
        enqueue_blocks(tokens, d_tok, n, pos0, nullptr, 0, &io_wait);
        device_router_.copy_back(observer_, st);
        if (!logits.empty() || !all_logits.empty()) {
          enqueue_head(n, !all_logits.empty(), all_logits.empty() ? logits.data() : all_logits.data());
        }
        MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
        if (!all_logits.empty() && !logits.empty()) {
          std::copy(all_logits.begin() + (n - 1) * NV, all_logits.begin() + n * NV, logits.begin());
        }
      }
      device_router_.report(observer_, static_cast<uint32_t>(pos0));
    } catch (...) {
      experts_->end_step();
      cudaStreamSynchronize(st);  // nothing queued may outlive this call's tables
      throw;
    }
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    n_past_ += static_cast<uint32_t>(n);
    stats_.tokens_evaluated += static_cast<uint64_t>(n);
    stats_.io_wait_ms += io_wait;
    stats_.compute_ms += ms_since(t0) - io_wait;
  }

  // Queues the embedding of the n token ids at d_tok (device; tokens: the same on the host, for
  // the host's hash routing) and every block at positions pos0.. (pos_dev: pos0 read from that
  // device int, a decode step in a graph serving positions below max_kv).
  void enqueue_blocks(std::span<const int32_t> tokens, const int32_t* d_tok, int64_t n, int64_t pos0,
                      const int32_t* pos_dev, int64_t max_kv, double* io_wait) {
    const int64_t E = cfg_.n_embd, HC = cfg_.hc_count;
    cudaStream_t st = stream_.get();
    float* S = S_.as<float>();
    float* h = h_.as<float>();
    float* x = x_.as<float>();
    float* y = y_.as<float>();
    // §4.1: every stream starts as the embedding.
    dequant_rows(tok_embd_.type, tok_embd_.data, tok_embd_.row_bytes, E, d_tok, static_cast<int32_t>(n), h,
                 st);
    for (int64_t s = 0; s < HC; ++s) {
      MOEPACK_CUDA_CHECK(cudaMemcpy2DAsync(S + s * E, fbytes(HC * E), h, fbytes(E), fbytes(E),
                                           static_cast<size_t>(n), cudaMemcpyDeviceToDevice, st));
    }
    for (uint32_t il = 0; il < layers_.size(); ++il) {
      const Layer& L = layers_[il];
      hc_pre(L.hc_attn, n);
      rms_norm(h, E, L.d_attn_norm, E, cfg_.rms_eps, x, E, n, st);
      attention(il, n, pos0, pos_dev, max_kv);
      ds4_hc_expand(S, y, post_.as<float>(), M_.as<float>(), n, HC, E, st);

      hc_pre(L.hc_ffn, n);
      rms_norm(h, E, L.d_ffn_norm, E, cfg_.rms_eps, x, E, n, st);
      moe(il, tokens, d_tok, n, pos0, io_wait);
      ds4_hc_expand(S, y, post_.as<float>(), M_.as<float>(), n, HC, E, st);
    }
    experts_->end_step();
  }

  // §4.2: h = Σ pre·S, post, M of the n positions' streams.
  void hc_pre(const HcW& w, int64_t n) {
    const int64_t E = cfg_.n_embd, HC = cfg_.hc_count, NHC = (2 + HC) * HC;
    cudaStream_t st = stream_.get();
    rms_norm(S_.as<float>(), HC * E, nullptr, HC * E, cfg_.rms_eps, f_.as<float>(), HC * E, n, st);
    dev_matmul(w.m, f_.as<float>(), HC * E, n, mix_.as<float>(), NHC, st);
    ds4_hc_weights(mix_.as<float>(), n, w.b, w.s, HC, cfg_.hc_sinkhorn_iters, cfg_.hc_eps, pre_.as<float>(),
                   post_.as<float>(), M_.as<float>(), st);
    ds4_hc_collapse(S_.as<float>(), pre_.as<float>(), n, HC, E, h_.as<float>(), st);
  }

  // §4.9: head collapse (pre only), output norm, logits of the last position (or of all n with
  // all), queued with their copy to dst (host).
  void enqueue_head(int64_t n, bool all, float* dst) {
    const int64_t E = cfg_.n_embd, HC = cfg_.hc_count, NV = cfg_.n_vocab;
    cudaStream_t st = stream_.get();
    const int64_t first = all ? 0 : n - 1;
    const int64_t m = n - first;
    const float* S = S_.as<float>() + first * HC * E;
    rms_norm(S, HC * E, nullptr, HC * E, cfg_.rms_eps, f_.as<float>(), HC * E, m, st);
    dev_matmul(out_hc_.m, f_.as<float>(), HC * E, m, mix_.as<float>(), HC, st);
    ds4_head_weights(mix_.as<float>(), m, out_hc_.b, out_hc_.s, HC, cfg_.hc_eps, pre_.as<float>(), st);
    ds4_hc_collapse(S, pre_.as<float>(), m, HC, E, h_.as<float>(), st);
    rms_norm(h_.as<float>(), E, output_norm_, E, cfg_.rms_eps, x_.as<float>(), E, m, st);
    dev_matmul(output_, x_.as<float>(), E, m, logits_.as<float>(), NV, st);
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(dst, logits_.as<float>(), fbytes(m * NV), cudaMemcpyDeviceToHost, st));
  }

  // §4.6: a_p, g_p (+ape) of the n positions into the rings, then the rows they complete.
  // pos_dev (a decode graph's one position): the row it completes, if any, pooled, normed and
  // roped in row_ by the same launches, then stored (ds4_store_row_at).
  void compress(const CompW& C, const float* x, int64_t n, int64_t pos0, float* a, float* g, float* rows,
                const int32_t* pos_dev) {
    const int64_t E = cfg_.n_embd, d = C.d, cd = C.c * d, m = C.m, R = cfg_.n_rot;
    cudaStream_t st = stream_.get();
    dev_matmul(C.wkv, x, E, n, ta_.as<float>(), cd, st);
    dev_matmul(C.wgate, x, E, n, tg_.as<float>(), cd, st);
    ds4_comp_store(ta_.as<float>(), tg_.as<float>(), C.dape, n, pos0, m, C.ring, cd, a, g, st, pos_dev);
    if (pos_dev) {
      float* row = row_.as<float>();
      ds4_compress_pool(a, g, C.ring, d, C.c, m, 0, 1, kappa_.as<float>(), st, pos_dev);
      rms_norm(kappa_.as<float>(), d, C.dnorm, d, cfg_.rms_eps, row, d, 1, st);
      ds4_rope_rows(row + d - R, 1, d, 1, d, cs_comp_.as<float>(), n_ctx_, 0, m, static_cast<int>(R),
                    rope_comp_.neox, st, pos_dev);
      ds4_store_row_at(row, d, rows, 0, m, pos_dev, st);
      return;
    }
    const int64_t b_lo = (pos0 + m) / m - 1, b_hi = (pos0 + n) / m - 1;
    const int64_t nb = b_hi - b_lo + 1;
    if (nb <= 0) return;
    ds4_compress_pool(a, g, C.ring, d, C.c, m, b_lo, nb, kappa_.as<float>(), st);
    rms_norm(kappa_.as<float>(), d, C.dnorm, d, cfg_.rms_eps, rows + b_lo * d, d, nb, st);
    ds4_rope_rows(rows + b_lo * d + d - R, nb, d, 1, d, cs_comp_.as<float>(), n_ctx_, b_lo * m, m,
                  static_cast<int>(R), rope_comp_.neox, st);
  }

  // Rows t0 .. t0+cnt-1 of a [n][width] source into ring slots (pos0 + t) mod ring: calls
  // f(t_first, slot_first, count) for each contiguous run (at most two).
  template <typename F>
  static void ring_runs(int64_t pos0, int64_t n, int64_t ring, F f) {
    int64_t t = 0;
    while (t < n) {
      const int64_t slot = (pos0 + t) % ring;
      const int64_t cnt = std::min(n - t, ring - slot);
      f(t, slot, cnt);
      t += cnt;
    }
  }

  // §4.5 / §4.7: the attention sub-layer of block il: x_ [n][E] -> y_ [n][E]. pos_dev (one
  // token): pos0 read from that device int, a decode graph serving positions below max_kv.
  void attention(uint32_t il, int64_t n, int64_t pos0, const int32_t* pos_dev, int64_t max_kv) {
    Layer& L = layers_[il];
    const int64_t E = cfg_.n_embd, Hh = cfg_.n_head, D = cfg_.n_embd_head_k, R = cfg_.n_rot, N = D - R;
    const int64_t Q = cfg_.q_lora_rank, G = cfg_.out_groups, O = cfg_.out_lora_rank;
    const int64_t HI = cfg_.indexer_n_head, DI = cfg_.indexer_head_dim, KI = cfg_.indexer_top_k;
    const int64_t ratio = L.ratio;
    const RopeParams& rope_p = ratio == 0 ? rope_plain_ : rope_comp_;
    const float* cs = ratio == 0 ? cs_plain_.as<float>() : cs_comp_.as<float>();
    const float* cs_neg = ratio == 0 ? cs_plain_neg_.as<float>() : cs_comp_neg_.as<float>();
    cudaStream_t st = stream_.get();
    const float* x = x_.as<float>();
    float* cq = cq_.as<float>();
    float* q = q_.as<float>();
    float* kn = kn_.as<float>();

    dev_matmul(L.m_wq_a, x, E, n, cq, Q, st);
    rms_norm(cq, Q, L.d_q_a_norm, Q, cfg_.rms_eps, cq, Q, n, st);
    dev_matmul(L.m_wq_b, cq, Q, n, q, Hh * D, st);
    dev_matmul(L.m_wkv, x, E, n, kn, D, st);
    rms_norm(q, D, nullptr, D, cfg_.rms_eps, q, D, n * Hh, st);
    rope(q + N, n, Hh * D, Hh, D, cs, pos0, static_cast<int>(R), rope_p.neox, st, pos_dev);
    if (pos_dev) {  // the step's K row, normed and roped in row_, into its ring slot
      float* k = row_.as<float>();
      rms_norm(kn, D, L.d_kv_norm, D, cfg_.rms_eps, k, D, 1, st);
      rope(k + N, 1, D, 1, D, cs, pos0, static_cast<int>(R), rope_p.neox, st, pos_dev);
      ds4_store_row_at(k, D, L.kraw, ring_raw_, 0, pos_dev, st);
    } else {
      ring_runs(pos0, n, ring_raw_, [&](int64_t t, int64_t slot, int64_t cnt) {
        float* k = L.kraw + slot * D;
        rms_norm(kn + t * D, D, L.d_kv_norm, D, cfg_.rms_eps, k, D, cnt, st);
        rope(k + N, cnt, D, 1, D, cs, pos0 + t, static_cast<int>(R), rope_p.neox, st);
      });
    }
    if (ratio != 0) compress(L.comp, x, n, pos0, L.ca, L.cg, L.crow, pos_dev);

    // Compressed rows each query sees, chosen on the GPU: all completed (ratio 128), the
    // indexer's top K_I (ratio 4, when more are visible).
    int32_t* sel = sel_.as<int32_t>();
    int32_t* cnt = ratio == 0 ? no_rows_.as<int32_t>() : cnt_.as<int32_t>();  // ratio 0: none, set at load
    if (ratio != 0) {
      const float* scores = sc_.as<float>();
      if (ratio == 4) {
        compress(L.icomp, x, n, pos0, L.ia, L.ig, L.irow, pos_dev);
        // Scores only where a query sees more rows than the top-k (a graph: wherever it may).
        const int64_t last = pos_dev ? max_kv - 1 : pos0 + n - 1;
        if ((last + 1) / 4 > KI) indexer_scores(L, n, pos0, HI, DI, R, pos_dev, max_kv);
      }
      ds4_select_rows(scores, score_stride_, n, pos0, ratio, KI, sel, sel_stride_, cnt, st, pos_dev, max_kv);
    }

    float* o = o_.as<float>();
    ds4_attend(q, n, Hh, D, pos0, L.kraw, ring_raw_, cfg_.n_swa, L.crow, sel, sel_stride_, cnt, L.d_sinks,
               1.0f / std::sqrt(static_cast<float>(D)), att_.as<float>(), max_keys_, o, st, pos_dev);
    rope(o + N, n, Hh * D, Hh, D, cs_neg, pos0, static_cast<int>(R), rope_p.neox, st,
         pos_dev);  // rotation by -θ

    // Grouped low-rank output: z_g = A_g · (heads of group g) in one launch, y = W_b · z.
    const int64_t HDG = Hh * D / G;
    GemvBatch b;
    b.type = L.m_wo_a.type;
    b.ne0 = L.m_wo_a.ne0;
    b.ne1 = O;
    b.row_bytes = L.m_wo_a.row_bytes;
    b.w = L.m_wo_a.data;
    b.w_gstride = static_cast<uint64_t>(O) * L.m_wo_a.row_bytes;
    b.x = o;
    b.x_stride = Hh * D;
    b.x_gstride = HDG;
    b.y = z_.as<float>();
    b.y_stride = G * O;
    b.y_gstride = O;
    b.n_groups = static_cast<int32_t>(G);
    b.n_tok = static_cast<int32_t>(n);
    gemv(b, st);
    dev_matmul(L.m_wo_b, z_.as<float>(), G * O, n, y_.as<float>(), E, st);
  }

  // §4.7: indexer q (roped) and weights, then the scores of every visible ratio-4 row into sc_
  // (ds4_select_rows takes the top K_I). pos_dev, max_kv: as attention()'s.
  void indexer_scores(const Layer& L, int64_t n, int64_t pos0, int64_t HI, int64_t DI, int64_t R,
                      const int32_t* pos_dev, int64_t max_kv) {
    cudaStream_t st = stream_.get();
    const int64_t E = cfg_.n_embd, Q = cfg_.q_lora_rank;
    float* qi = qi_.as<float>();
    dev_matmul(L.m_idx_q_b, cq_.as<float>(), Q, n, qi, HI * DI, st);
    dev_matmul(L.m_idx_proj, x_.as<float>(), E, n, iw_.as<float>(), HI, st);
    rope(qi + DI - R, n, HI * DI, HI, DI, cs_comp_.as<float>(), pos0, static_cast<int>(R), rope_comp_.neox,
         st, pos_dev);
    const float wscale = 1.0f / std::sqrt(static_cast<float>(DI * HI));
    ds4_indexer_scores(qi, iw_.as<float>(), n, HI, DI, L.irow, pos0, wscale, sc_.as<float>(), score_stride_,
                       st, pos_dev, max_kv);
  }

  // §4.8: router logits on the GPU; selection and weights on the host (at decode with every
  // expert resident, on the GPU: DeviceRouter); routed experts (clamped) and the shared expert
  // (clamped) into y_.
  // d_tok: the tokens' ids in device memory (a hash-routed block routed on the GPU reads them).
  void moe(uint32_t il, std::span<const int32_t> tokens, const int32_t* d_tok, int64_t n, int64_t pos0,
           double* io_wait) {
    const Layer& L = layers_[il];
    cudaStream_t st = stream_.get();
    const int64_t E = cfg_.n_embd, K = cfg_.n_expert_used;
    const float* x = x_.as<float>();
    // Hash-routed blocks: the tid2eid row of each token.
    const auto hash_of = [&](const Layer& B) -> HostRouter::Choose {
      if (B.tid2eid.empty()) return {};
      return [&B, &tokens, K, this](int64_t t, const float* scores, int32_t* id, float* w) {
        ds4::hash_route(cfg_, scores,
                        B.tid2eid.data() + static_cast<size_t>(tokens[t]) * static_cast<size_t>(K), id, w);
      };
    };
    // With prefetch, the next block's router on this block's input predicts its experts (a
    // hash-routed next block: exactly), read once this block's experts are queued.
    RouterLookahead next;
    const uint32_t il_next = experts_->next_moe_block(il);
    if (experts_->prefetching() && il_next < cfg_.n_layer) {
      const Layer& N = layers_[il_next];
      next = {&N.m_router, N.bias.data(), hash_of(N)};
    }
    // Shared expert: y += down · swiglu_clamped(gate · x, up · x), computed into tmp_ beside the
    // host's choice (HostRouter::route) or after the routed experts.
    const auto shared = [&] {
      float* g = sg_.as<float>();
      float* u = su_.as<float>();
      dev_matmul(L.m_sh_gate, x, E, n, g, L.sh_ff, st);
      dev_matmul(L.m_sh_up, x, E, n, u, L.sh_ff, st);
      swiglu_clamped(g, u, n * L.sh_ff, cfg_.swiglu_clamp_shexp.at(il), g, st);
      dev_matmul(L.m_sh_down, g, L.sh_ff, n, tmp_.as<float>(), E, st);
    };
    float* y = y_.as<float>();
    if (device_router_.active(n)) {
      // Decode with every expert resident: the choice on the GPU (route_token's or hash_route's,
      // bit for bit), no copy to or from the host and no wait; the shared expert beside it.
      stats_.expert_selections += static_cast<uint64_t>(K);
      stats_.experts_computed += device_router_.run_block(il, L.m_router, x, rl_.as<float>(), *experts_,
                                                          shared, y, st, d_tok, cfg_.swiglu_clamp_exp.at(il));
      add_inplace(y, tmp_.as<float>(), E, st);
      return;
    }
    const bool overlap = shared_expert_overlap();
    router_.route(il, L.m_router, x, n, pos0, L.bias.data(), rl_.as<float>(), st, observer_, hash_of(L), next,
                  overlap ? HostRouter::Beside(shared) : nullptr);
    stats_.expert_selections += static_cast<uint64_t>(n * K);
    stats_.experts_computed += experts_->run(il, x, n, router_.ids(), router_.weights(),
                                             cfg_.swiglu_clamp_exp.at(il), y, arena_, st, io_wait);
    if (next.router) experts_->prefetch(il_next, router_.predicted(), io_wait);
    if (!overlap) shared();
    add_inplace(y, tmp_.as<float>(), n * E, st);
  }

  std::shared_ptr<const ModelSource> model_;
  const ModelConfig& cfg_;
  TensorStore tensors_;
  DeviceWeights weights_;
  Stream stream_;
  UploadArena arena_;
  H h_tok_ = 0, h_out_norm_ = 0, h_out_ = 0;
  DevMatrix tok_embd_, output_;
  const float* output_norm_ = nullptr;
  HcW out_hc_;
  RopeParams rope_plain_, rope_comp_;
  std::vector<Layer> layers_;
  std::unique_ptr<CudaRoutedExperts> experts_;
  int64_t max_sh_ff_ = 0;
  int64_t sel_stride_ = 0;    // compressed rows a query may see, at most (selection table width)
  int64_t score_stride_ = 0;  // ratio-4 rows visible at most: n_ctx / 4 + 1
  int64_t max_keys_ = 0;      // n_swa + sel_stride_
  uint32_t n_ctx_ = 0, n_past_ = 0;
  int64_t ring_raw_ = 0;  // slots of the raw K ring: n_swa + U
  int64_t hw_ = -1;       // highest position written into the rings since the last reset
  std::vector<int32_t> tokens_;
  DeviceBuffer state_;
  DeviceBuffer cs_plain_, cs_plain_neg_, cs_comp_, cs_comp_neg_;  // [n_ctx][R]
  DeviceBuffer S_, f_, mix_, pre_, post_, M_, h_, x_, y_, tmp_, cq_, q_, o_, kn_, ta_, tg_, kappa_, qi_, iw_,
      sc_, att_, z_, rl_, sg_, su_, logits_;
  DeviceBuffer sel_, cnt_;  // int32 [U][sel_stride_], [U]: the compressed rows each query sees
  DeviceBuffer no_rows_;    // int32 [U], all 0: the counts of a block without compressed rows
  DeviceBuffer row_;        // a decode graph's K or compressed row before it is stored
  HostRouter router_{cfg_};
  DeviceRouter device_router_;  // decode steps' choice on the GPU (every expert resident)
  RoutingObserver observer_;
  DecodeGraph graph_;  // decode steps as one CUDA graph launch (gpu/decode_graph.h)
  BackendStats stats_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend_deepseek4(std::shared_ptr<const ModelSource> model,
                                                     const EngineSettings& settings) {
  if (!model) throw Error("make_cuda_backend_deepseek4: no model");
  return std::make_unique<CudaDeepseek4>(std::move(model), settings);
}

}  // namespace moepack::gpu
