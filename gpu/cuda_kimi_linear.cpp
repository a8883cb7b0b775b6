// The CUDA backend of `kimi-linear` (Kimi-Linear / Kimi-K3-style hybrid): the GPU twin of
// core/arch_kimi_linear.cpp, step by step (read that file for the mathematics and the state; the
// formulas cite ../shared/docs/ARCH_KIMI_LINEAR.md). What runs where:
//   GPU  embedding, every RMSNorm, all projections (dequantizing GEMV over the GGUF bytes), the
//        KDA blocks (q/k/v short convolutions over their conv history, per-head L2 norm, decay /
//        output gate / beta, the delta-rule recurrence per token, output norm and gate:
//        gpu/kernels_kimi_linear.h), the MLA blocks (absorbed, no RoPE: kv_a norm into the
//        latent cache, per-head k_b / v_b products, mla_attend of gpu/kernels.h), the router's
//        logits, routed experts (cuda_moe.h), the shared expert, the dense leading blocks, the
//        output norm and the logits.
//   host the router's selection and weights (core's route_token, exact by construction) after
//        copying the logits back (gpu/cuda_host_router.h); at decode with every expert resident
//        the GPU makes the same choice bit for bit (gpu/cuda_device_router.h) and the step is one
//        CUDA graph launch from its second step on (gpu/decode_graph.h).
// State (device) and its semantics are the CPU reference's: per MLA block the latent rows of
// every position [n_ctx][r + n_p], per KDA block the conv history [3][w−1][d_in] then S
// [H][d][d]; checkpoints of all KDA states at the end of each of the last 8 forward() calls
// (VRAM, one copy each); truncate(n) restores the latest checkpoint at or before n and
// recomputes the tokens up to n; a forward() that throws restores the latest checkpoint.
// Within a forward() the tokens go through the blocks in ubatches of U = 256 positions (the
// activations' size); the KDA state carries over between them exactly as between calls.
// The routing observer sees the CPU reference's order (block-major over the whole call; calls
// of a multi-ubatch forward() are replayed in that order at its end).
// Streams: one compute stream; where the host routes, the host waits for it once per MoE block
// (the router logits' copy: an event, so the shared expert queued after it runs meanwhile,
// cuda_host_router.h); and at the end of each ubatch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/cpu_ops.h"
#include "core/error.h"
#include "core/kimi_linear_ops.h"
#include "core/model_source.h"
#include "core/tensor_store.h"
#include "gpu/cuda_arch_backends.h"
#include "gpu/cuda_attention.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_device_router.h"
#include "gpu/cuda_host_router.h"
#include "gpu/cuda_moe.h"
#include "gpu/cuda_resources.h"
#include "gpu/decode_graph.h"
#include "gpu/device_info.h"
#include "gpu/device_weights.h"
#include "gpu/kernels.h"
#include "gpu/kernels_kimi_linear.h"
#include "gpu/ubatch.h"
#include "gpu/upload_arena.h"

namespace moepack::gpu {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kUbatch = 256;       // positions per pass through the blocks
constexpr size_t kMaxCheckpoints = 8;  // as the CPU reference

size_t fbytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

using Hd = DeviceWeights::Handle;

struct Layer {
  bool kda = false, moe = false;
  Hd attn_norm = 0, ffn_norm = 0;
  // KDA
  Hd wq = 0, wk = 0, wv = 0, conv = 0, f_a = 0, f_b = 0, g_a = 0, g_b = 0, beta = 0, a = 0, dt_bias = 0,
     norm = 0, wo = 0;
  // MLA (wq, wo shared with KDA's handles)
  Hd wkv_a = 0, kv_a_norm = 0, wk_b = 0, wv_b = 0;
  // FFN
  Hd gate = 0, up = 0, down = 0, router = 0, sh_gate = 0, sh_up = 0, sh_down = 0;
  int64_t ff = 0;           // dense or shared width
  std::vector<float> bias;  // [X] host, may be empty

  const float *d_attn_norm = nullptr, *d_ffn_norm = nullptr, *d_conv = nullptr, *d_a = nullptr,
              *d_dt_bias = nullptr, *d_norm = nullptr, *d_kv_a_norm = nullptr;
  DevMatrix m_wq, m_wk, m_wv, m_f_a, m_f_b, m_g_a, m_g_b, m_beta, m_wo, m_wkv_a, m_wk_b, m_wv_b;
  DevMatrix m_gate, m_up, m_down, m_router, m_sh_gate, m_sh_up, m_sh_down;
  float* state = nullptr;  // KDA: conv history [3][w-1][d_in] then S [H][d][d]; MLA: [n_ctx][r + n_p]
};

class CudaKimiLinear final : public Backend {
 public:
  CudaKimiLinear(std::shared_ptr<const ModelSource> model, const EngineSettings& s)
      : model_(std::move(model)), cfg_(model_->config()), tensors_(model_->gguf()), weights_(tensors_) {
    open_cuda_device();  // (throws where there is no device this build runs on)
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, d = cfg_.kda_head_dim, DIN = H * d,
                  w = cfg_.ssm_conv_kernel;
    const int64_t r = cfg_.kv_lora_rank, np = cfg_.n_rot, dk = cfg_.n_embd_head_k_mla, nn = dk - np;
    const int64_t dv = cfg_.n_embd_head_v_mla, X = cfg_.n_expert;
    const std::string& file = model_->metadata().path();
    if (cfg_.n_vocab == 0) throw FormatError(file, "kimi-linear.vocab_size", 0, "vocabulary size unknown");
    if (np <= 0 || nn <= 0 || r <= 0)
      throw FormatError(file, "kimi-linear.attention.key_length_mla", 0, "bad MLA sizes");
    if (d < 1 || d > 1024)
      throw FormatError(file, "kimi-linear.kda.head_dim", 0, "must be in 1..1024 (CUDA backend)");
    if (w < 1 || w > 16)
      throw FormatError(file, "kimi-linear.ssm.conv_kernel", 0, "must be in 1..16 (CUDA backend)");
    if (cfg_.n_ff_exp <= 0)
      throw FormatError(file, "kimi-linear.expert_feed_forward_length", 0, "required and positive");

    h_tok_ = weights_.add_matrix("token_embd.weight", E, cfg_.n_vocab);
    h_out_norm_ = weights_.add_vector("output_norm.weight", E);
    h_out_ = cfg_.tied_embeddings ? h_tok_ : weights_.add_matrix("output.weight", E, cfg_.n_vocab);

    layers_.resize(cfg_.n_layer);
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer& L = layers_[il];
      L.kda = cfg_.is_kda_layer(il);
      L.moe = cfg_.is_moe_layer(il);
      L.attn_norm = weights_.add_vector(p + "attn_norm.weight", E);
      L.ffn_norm = weights_.add_vector(p + "ffn_norm.weight", E);
      if (L.kda) {
        L.wq = weights_.add_matrix(p + "attn_q.weight", E, DIN);
        L.wk = weights_.add_matrix(p + "attn_k.weight", E, DIN);
        L.wv = weights_.add_matrix(p + "attn_v.weight", E, DIN);
        // The three conv tap sets [d_in][w] one after the other (one launch convolves q, k, v).
        std::vector<float> taps;
        for (const char* c : {"ssm_conv1d_q.weight", "ssm_conv1d_k.weight", "ssm_conv1d_v.weight"}) {
          const std::vector<float> t = kimi::read_flat(tensors_.model(), p + c, w * DIN, w, file);
          taps.insert(taps.end(), t.begin(), t.end());
        }
        L.conv = weights_.add_floats(std::move(taps));
        L.f_a = weights_.add_matrix(p + "ssm_f_a.weight", E, d);
        L.f_b = weights_.add_matrix(p + "ssm_f_b.weight", d, DIN);
        L.g_a = weights_.add_matrix(p + "ssm_g_a.weight", E, d);
        L.g_b = weights_.add_matrix(p + "ssm_g_b.weight", d, DIN);
        L.beta = weights_.add_matrix(p + "ssm_beta.weight", E, H);
        L.a = weights_.add_floats(kimi::read_flat(tensors_.model(), p + "ssm_a", H, 0, file));
        L.dt_bias = weights_.add_vector(p + "ssm_dt.bias", DIN);
        L.norm = weights_.add_vector(p + "ssm_norm.weight", d);
        L.wo = weights_.add_matrix(p + "attn_output.weight", DIN, E);
        kda_floats_ += 3 * (w - 1) * DIN + H * d * d;
      } else {
        L.wq = weights_.add_matrix(p + "attn_q.weight", E, H * dk);
        L.wkv_a = weights_.add_matrix(p + "attn_kv_a_mqa.weight", E, r + np);
        L.kv_a_norm = weights_.add_vector(p + "attn_kv_a_norm.weight", r);
        L.wk_b = weights_.add_stacked(p + "attn_k_b.weight", nn, r, H);
        L.wv_b = weights_.add_stacked(p + "attn_v_b.weight", r, dv, H);
        L.wo = weights_.add_matrix(p + "attn_output.weight", H * dv, E);
        n_mla_++;
      }
      if (!L.moe) {
        L.ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate.weight")[1]);
        L.gate = weights_.add_matrix(p + "ffn_gate.weight", E, L.ff);
        L.up = weights_.add_matrix(p + "ffn_up.weight", E, L.ff);
        L.down = weights_.add_matrix(p + "ffn_down.weight", L.ff, E);
      } else {
        L.router = weights_.add_matrix(p + "ffn_gate_inp.weight", E, X);
        L.bias = tensors_.vector(p + "exp_probs_b.bias", X, false);
        if (cfg_.n_expert_shared > 0) {
          L.ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate_shexp.weight")[1]);
          L.sh_gate = weights_.add_matrix(p + "ffn_gate_shexp.weight", E, L.ff);
          L.sh_up = weights_.add_matrix(p + "ffn_up_shexp.weight", E, L.ff);
          L.sh_down = weights_.add_matrix(p + "ffn_down_shexp.weight", L.ff, E);
        }
      }
      max_ff_ = std::max(max_ff_, L.ff);
    }
    experts_ = std::make_unique<CudaRoutedExperts>(
        *model_, weights_, [this](uint32_t il) { return cfg_.is_moe_layer(il); },
        static_cast<int64_t>(cfg_.n_ff_exp));

    n_ctx_ = std::min<uint32_t>(s.n_ctx ? s.n_ctx : 4096, cfg_.n_ctx_train ? cfg_.n_ctx_train : 4096);
    if (n_mla_ > 0 && static_cast<int64_t>(n_ctx_) > max_attention_positions()) {
      throw Error("kimi-linear CUDA backend: n_ctx " + std::to_string(n_ctx_) + " exceeds the " +
                  std::to_string(max_attention_positions()) + " positions the MLA attention kernel handles");
    }
    const uint64_t mla_floats = static_cast<uint64_t>(n_mla_) * n_ctx_ * static_cast<uint64_t>(r + np);
    const uint64_t state_bytes = (kda_floats_ * (1 + kMaxCheckpoints) + mla_floats) * sizeof(float);
    weights_.upload(s.cache_vram_reserve_mib << 20, state_bytes + activation_floats() * sizeof(float),
                    model_->path());

    kda_state_.allocate(fbytes(std::max<int64_t>(static_cast<int64_t>(kda_floats_), 1)),
                        "the KDA recurrent state");
    mla_cache_.allocate(std::max<uint64_t>(mla_floats, 1) * sizeof(float),
                        "the MLA latent cache (" + std::to_string(n_ctx_) + " tokens)");
    MOEPACK_CUDA_CHECK(cudaMemset(kda_state_.bytes_ptr(), 0, fbytes(static_cast<int64_t>(kda_floats_))));
    MOEPACK_CUDA_CHECK(cudaMemset(mla_cache_.bytes_ptr(), 0, mla_floats * sizeof(float)));
    cp_slots_.resize(kMaxCheckpoints);
    for (DeviceBuffer& b : cp_slots_)
      b.allocate(fbytes(std::max<int64_t>(static_cast<int64_t>(kda_floats_), 1)), "a KDA state checkpoint");
    for (size_t i = 0; i < kMaxCheckpoints; ++i) free_slots_.push_back(i);
    allocate_activations();

    tok_embd_ = weights_.matrix(h_tok_);
    output_ = weights_.matrix(h_out_);
    output_norm_ = weights_.vector(h_out_norm_);
    require_gpu_type(tok_embd_, "token_embd.weight");
    require_gpu_type(output_, "output.weight");
    float* kda_at = kda_state_.as<float>();
    float* mla_at = mla_cache_.as<float>();
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      Layer& L = layers_[il];
      const std::string p = "blk." + std::to_string(il) + ".";
      L.d_attn_norm = weights_.vector(L.attn_norm);
      L.d_ffn_norm = weights_.vector(L.ffn_norm);
      const auto bind = [&](DevMatrix& m, Hd h, const char* name) {
        m = weights_.matrix(h);
        require_gpu_type(m, p + name);
      };
      bind(L.m_wq, L.wq, "attn_q.weight");
      bind(L.m_wo, L.wo, "attn_output.weight");
      if (L.kda) {
        bind(L.m_wk, L.wk, "attn_k.weight");
        bind(L.m_wv, L.wv, "attn_v.weight");
        bind(L.m_f_a, L.f_a, "ssm_f_a.weight");
        bind(L.m_f_b, L.f_b, "ssm_f_b.weight");
        bind(L.m_g_a, L.g_a, "ssm_g_a.weight");
        bind(L.m_g_b, L.g_b, "ssm_g_b.weight");
        bind(L.m_beta, L.beta, "ssm_beta.weight");
        L.d_conv = weights_.vector(L.conv);
        L.d_a = weights_.vector(L.a);
        L.d_dt_bias = weights_.vector(L.dt_bias);
        L.d_norm = weights_.vector(L.norm);
        L.state = kda_at;
        kda_at += 3 * (w - 1) * DIN + H * d * d;
      } else {
        bind(L.m_wkv_a, L.wkv_a, "attn_kv_a_mqa.weight");
        bind(L.m_wk_b, L.wk_b, "attn_k_b.weight");
        bind(L.m_wv_b, L.wv_b, "attn_v_b.weight");
        L.d_kv_a_norm = weights_.vector(L.kv_a_norm);
        L.state = mla_at;
        mla_at += static_cast<int64_t>(n_ctx_) * (r + np);
      }
      if (!L.moe) {
        bind(L.m_gate, L.gate, "ffn_gate.weight");
        bind(L.m_up, L.up, "ffn_up.weight");
        bind(L.m_down, L.down, "ffn_down.weight");
      } else {
        bind(L.m_router, L.router, "ffn_gate_inp.weight");
        if (L.ff > 0) {
          bind(L.m_sh_gate, L.sh_gate, "ffn_gate_shexp.weight");
          bind(L.m_sh_up, L.sh_up, "ffn_up_shexp.weight");
          bind(L.m_sh_down, L.sh_down, "ffn_down_shexp.weight");
        }
      }
    }
    experts_->bind(s);
    experts_->reserve(kUbatch);
    // Decode steps route on the GPU when every expert is resident (gpu/cuda_device_router.h).
    std::vector<std::vector<float>> biases;
    for (const Layer& L : layers_) biases.push_back(L.bias);
    device_router_.bind(cfg_, *experts_, biases);
    tokens_.reserve(n_ctx_);
    MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());  // the memsets before stream_'s first kernel
  }

  std::string_view name() const override { return "cuda"; }
  const ModelConfig& config() const override { return cfg_; }
  uint32_t n_ctx() const override { return n_ctx_; }
  uint32_t n_past() const override { return n_past_; }
  void set_routing_observer(RoutingObserver observer) override { observer_ = std::move(observer); }
  BackendStats stats() const override {
    BackendStats s = stats_;
    experts_->add_stats(s);
    return s;
  }

  // As the CPU reference: restore the latest checkpoint at or before n, recompute up to n.
  void truncate(uint32_t n) override {
    if (n > n_past_)
      throw Error("truncate(" + std::to_string(n) + ") beyond the " + std::to_string(n_past_) +
                  " cached tokens");
    if (n == n_past_) return;
    const std::vector<int32_t> kept(tokens_.begin(), tokens_.begin() + n);
    while (!checkpoints_.empty() && checkpoints_.back().pos > n) {
      free_slots_.push_back(checkpoints_.back().slot);
      checkpoints_.pop_back();
    }
    restore_latest();
    const uint32_t from = n_past_;
    if (from < n) {
      // Recompute [from, n) from the stored ids; no logits, no routing observer.
      const std::vector<int32_t> redo(kept.begin() + from, kept.end());
      RoutingObserver keep = std::move(observer_);
      observer_ = nullptr;
      try {
        run_all(redo, {}, {});
      } catch (...) {
        observer_ = std::move(keep);
        restore_latest();
        throw;
      }
      observer_ = std::move(keep);
    }
  }

  void forward(std::span<const int32_t> tokens, std::span<float> logits,
               std::span<float> all_logits) override {
    check_forward_args(tokens, logits, all_logits, n_past_, n_ctx_, cfg_.n_vocab);
    ++stats_.forward_calls;
    try {
      run_all(tokens, logits, all_logits);
    } catch (...) {
      restore_latest();  // the state this call started from
      throw;
    }
  }

 private:
  struct Checkpoint {
    uint32_t pos = 0;
    size_t slot = 0;  // index into cp_slots_
  };
  struct Routed {  // one deferred routing-observer call
    uint32_t block = 0, pos = 0;
    std::vector<int32_t> ids;
    std::vector<float> wts;
  };

  void restore_latest() {
    cudaStream_t st = stream_.get();
    const size_t bytes = fbytes(static_cast<int64_t>(kda_floats_));
    if (checkpoints_.empty()) {
      if (bytes) MOEPACK_CUDA_CHECK(cudaMemsetAsync(kda_state_.bytes_ptr(), 0, bytes, st));
      n_past_ = 0;
    } else {
      const Checkpoint& c = checkpoints_.back();
      if (bytes) {
        MOEPACK_CUDA_CHECK(cudaMemcpyAsync(kda_state_.bytes_ptr(), cp_slots_[c.slot].bytes_ptr(), bytes,
                                           cudaMemcpyDeviceToDevice, st));
      }
      n_past_ = c.pos;
    }
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
    tokens_.resize(std::min<size_t>(tokens_.size(), n_past_));
  }

  void save_checkpoint() {
    if (!checkpoints_.empty() && checkpoints_.back().pos == n_past_) {
      free_slots_.push_back(checkpoints_.back().slot);
      checkpoints_.pop_back();
    }
    if (checkpoints_.size() == kMaxCheckpoints) {
      free_slots_.push_back(checkpoints_.front().slot);
      checkpoints_.pop_front();
    }
    const size_t slot = free_slots_.back();
    free_slots_.pop_back();
    const size_t bytes = fbytes(static_cast<int64_t>(kda_floats_));
    // Queued, not waited for: every later use of the state or the slot (the next forward,
    // restore_latest) is on the same stream, and an error surfaces at the next wait.
    if (bytes) {
      MOEPACK_CUDA_CHECK(cudaMemcpyAsync(cp_slots_[slot].bytes_ptr(), kda_state_.bytes_ptr(), bytes,
                                         cudaMemcpyDeviceToDevice, stream_.get()));
    }
    checkpoints_.push_back({n_past_, slot});
  }

  // All tokens in ubatches, then a checkpoint (the CPU reference's run()).
  void run_all(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    // The CPU reference runs all n tokens through each block before the next, so its routing
    // observer sees (block, position) in block-major order over the whole call (what
    // RoutingRecorder's steps rely on). With more than one ubatch the calls are collected and
    // replayed in that order once the call has succeeded.
    deferred_.clear();
    defer_routing_ = observer_ && n > kUbatch;
    try {
      for_each_ubatch(
          tokens, logits, all_logits, cfg_.n_vocab, kUbatch,
          [this](std::span<const int32_t> t, std::span<float> l, std::span<float> a) { run(t, l, a); });
    } catch (...) {
      defer_routing_ = false;
      deferred_.clear();
      throw;
    }
    save_checkpoint();
    if (defer_routing_) {
      defer_routing_ = false;
      std::stable_sort(deferred_.begin(), deferred_.end(),
                       [](const Routed& a, const Routed& b) { return a.block < b.block; });
      const size_t K = cfg_.n_expert_used;
      for (const Routed& r : deferred_) {
        observer_(r.block, r.pos, std::span<const int32_t>(r.ids.data(), K),
                  std::span<const float>(r.wts.data(), K));
      }
      deferred_.clear();
    }
  }

  // Activation buffers for one ubatch of U positions (floats), allocated once.
  struct Sizes {
    int64_t e, ext, qkv, lo, din, beta, o, q, c, row, lat, rl, ff, lg;
  };
  Sizes sizes() const {
    const int64_t U = kUbatch, E = cfg_.n_embd, H = cfg_.n_head, d = cfg_.kda_head_dim, DIN = H * d;
    const int64_t w = cfg_.ssm_conv_kernel, r = cfg_.kv_lora_rank, np = cfg_.n_rot,
                  dk = cfg_.n_embd_head_k_mla;
    const int64_t dv = cfg_.n_embd_head_v_mla;
    Sizes z{};
    z.e = U * E;
    z.ext = 3 * (w - 1 + U) * DIN;
    z.qkv = 3 * U * DIN;
    z.lo = U * d;
    z.din = U * DIN;
    z.beta = U * H;
    z.o = U * std::max(DIN, H * dv);
    z.q = U * H * dk;
    z.c = U * (r + np);
    z.row = r + np;  // a decode graph's latent row before it is stored at its position
    z.lat = U * H * r;
    z.rl = 2 * U * static_cast<int64_t>(cfg_.n_expert);  // 2: the prefetch lookahead's scores
    z.ff = U * std::max<int64_t>(max_ff_, 1);
    z.lg = U * static_cast<int64_t>(cfg_.n_vocab);
    return z;
  }
  uint64_t activation_floats() const {
    const Sizes z = sizes();
    return static_cast<uint64_t>(4 * z.e + z.ext + z.qkv + z.lo + 2 * z.din + z.beta + z.o + z.q + z.c +
                                 z.row + 2 * z.lat + z.rl + 2 * z.ff + z.lg);
  }
  void allocate_activations() {
    const Sizes z = sizes();
    const auto a = [](DeviceBuffer& b, int64_t n, const char* what) {
      b.allocate(fbytes(std::max<int64_t>(n, 1)), what);
    };
    a(x_, z.e, "activations");
    a(xn_, z.e, "activations");
    a(y_, z.e, "activations");
    a(tmp_, z.e, "activations");
    a(ext_, z.ext, "KDA projections");
    a(qkv_, z.qkv, "KDA q, k, v");
    a(lo_, z.lo, "KDA low-rank");
    a(decay_, z.din, "KDA decay");
    a(gate_, z.din, "KDA output gate");
    a(beta_, z.beta, "KDA beta");
    a(o_, z.o, "attention output");
    a(q_, z.q, "MLA q");
    a(c_, z.c, "MLA latent");
    a(row_, z.row, "MLA latent row");
    a(qa_, z.lat, "MLA absorbed q");
    a(lat_, z.lat, "MLA latent output");
    a(rl_, z.rl, "router logits");
    a(fg_, z.ff, "FFN");
    a(fu_, z.ff, "FFN");
    a(logits_, z.lg, "logits");
    router_.reserve(kUbatch);
  }

  // One ubatch (n <= U positions) through every block, as the CPU reference's run(). A decode
  // step with the router on the GPU and logits to return runs as a CUDA graph (gpu/decode_graph.h):
  // every buffer is allocated at construction, so a batch leaves the graph in place.
  void run(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size()), NV = cfg_.n_vocab;
    const auto t0 = Clock::now();
    double io_wait = 0.0;
    const int64_t pos0 = n_past_;
    cudaStream_t st = stream_.get();
    arena_.reset();
    device_router_.begin_step();
    const RoutingObserver& sink = defer_routing_ ? defer_ : observer_;
    const bool graph =
        n == 1 && all_logits.empty() && !logits.empty() && device_router_.active(1) && graph_.usable();
    try {
      if (graph) {
        graph_.step(tokens[0], pos0, n_ctx_, logits, NV, st, device_router_, stats_,
                    [&](const int32_t* d_step, float* out, int64_t max_kv) {
                      enqueue_blocks(d_step, 1, pos0, d_step + 1, max_kv, &io_wait);
                      device_router_.copy_back(sink, st, true);
                      enqueue_head(1, false, out);
                    });
      } else {
        const int32_t* d_tok = arena_.put(tokens.data(), tokens.size(), st);
        enqueue_blocks(d_tok, n, pos0, nullptr, 0, &io_wait);
        device_router_.copy_back(sink, st);
        if (!logits.empty() || !all_logits.empty()) {
          enqueue_head(n, !all_logits.empty(), all_logits.empty() ? logits.data() : all_logits.data());
        }
        MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
        if (!all_logits.empty() && !logits.empty()) {
          std::copy(all_logits.begin() + (n - 1) * NV, all_logits.begin() + n * NV, logits.begin());
        }
      }
      device_router_.report(sink, static_cast<uint32_t>(pos0));
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

  // Queues the embedding of the n token ids at d_tok (device) and every block at positions
  // pos0.. (pos_dev: pos0 read from that device int, a decode step in a graph serving positions
  // below max_kv).
  void enqueue_blocks(const int32_t* d_tok, int64_t n, int64_t pos0, const int32_t* pos_dev, int64_t max_kv,
                      double* io_wait) {
    const int64_t E = cfg_.n_embd;
    cudaStream_t st = stream_.get();
    float* x = x_.as<float>();
    float* xn = xn_.as<float>();
    float* y = y_.as<float>();
    dequant_rows(tok_embd_.type, tok_embd_.data, tok_embd_.row_bytes, E, d_tok, static_cast<int32_t>(n), x,
                 st);
    // The residual adds fused with the RMSNorm after them (gpu/cuda_backend.h).
    const bool fuse = residual_norm_fusion();
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      const Layer& L = layers_[il];
      if (il == 0 || !fuse) rms_norm(x, E, L.d_attn_norm, E, cfg_.rms_eps, xn, E, n, st);
      if (L.kda) {
        kda(L, n);
      } else {
        mla(L, n, pos0, pos_dev, max_kv);
      }
      if (fuse) {
        add_rms_norm(x, y, nullptr, L.d_ffn_norm, E, cfg_.rms_eps, xn, n, st);
      } else {
        add_inplace(x, y, n * E, st);
        rms_norm(x, E, L.d_ffn_norm, E, cfg_.rms_eps, xn, E, n, st);
      }
      if (L.moe) {
        moe(il, n, pos0, io_wait);
      } else {
        swiglu_ffn(L.m_gate, L.m_up, L.m_down, L.ff, n, y);
      }
      if (fuse && il + 1 < cfg_.n_layer) {
        add_rms_norm(x, y, nullptr, layers_[il + 1].d_attn_norm, E, cfg_.rms_eps, xn, n, st);
      } else {
        add_inplace(x, y, n * E, st);
      }
    }
    experts_->end_step();
  }

  // Queues the output norm and the logits of the last position (or of all n with all), copied to
  // dst (host).
  void enqueue_head(int64_t n, bool all, float* dst) {
    const int64_t E = cfg_.n_embd, NV = cfg_.n_vocab;
    cudaStream_t st = stream_.get();
    const int64_t first = all ? 0 : n - 1;
    const int64_t m = n - first;
    rms_norm(x_.as<float>() + first * E, E, output_norm_, E, cfg_.rms_eps, xn_.as<float>(), E, m, st);
    dev_matmul(output_, xn_.as<float>(), E, m, logits_.as<float>(), NV, st);
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(dst, logits_.as<float>(), fbytes(m * NV), cudaMemcpyDeviceToHost, st));
  }

  // out = down · (silu(gate · xn) ⊙ up · xn) for the n positions of xn_.
  void swiglu_ffn(const DevMatrix& gate, const DevMatrix& up, const DevMatrix& down, int64_t ff, int64_t n,
                  float* out) {
    const int64_t E = cfg_.n_embd;
    cudaStream_t st = stream_.get();
    float* g = fg_.as<float>();
    float* u = fu_.as<float>();
    dev_matmul(gate, xn_.as<float>(), E, n, g, ff, st);
    dev_matmul(up, xn_.as<float>(), E, n, u, ff, st);
    swiglu(g, u, n * ff, g, st);
    dev_matmul(down, g, ff, n, out, E, st);
  }

  // §4.1–4.2: KDA block over xn_ [n][E] -> y_ [n][E], continuing its conv history and state.
  void kda(const Layer& L, int64_t n) {
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, d = cfg_.kda_head_dim, DIN = H * d,
                  w = cfg_.ssm_conv_kernel;
    const float eps = cfg_.rms_eps;
    cudaStream_t st = stream_.get();
    const float* xn = xn_.as<float>();
    float* hist = L.state;                // [3][w-1][d_in]
    float* S = hist + 3 * (w - 1) * DIN;  // [H][d][d]
    const int64_t rows = w - 1 + n;
    float* ext = ext_.as<float>();  // [3][rows][d_in]
    const DevMatrix* proj[3] = {&L.m_wq, &L.m_wk, &L.m_wv};
    for (int i = 0; i < 3; ++i) {
      float* e = ext + i * rows * DIN;
      if (w > 1) {
        MOEPACK_CUDA_CHECK(cudaMemcpyAsync(e, hist + i * (w - 1) * DIN, fbytes((w - 1) * DIN),
                                           cudaMemcpyDeviceToDevice, st));
      }
      dev_matmul(*proj[i], xn, E, n, e + (w - 1) * DIN, DIN, st);
    }
    float* qkv = qkv_.as<float>();  // [3][n][d_in]
    kda_conv_silu(ext, rows * DIN, L.d_conv, DIN * w, n, DIN, w, 3, qkv, n * DIN, st);
    for (int i = 0; i < 3 && w > 1; ++i) {  // the last w-1 pre-convolution rows become the history
      MOEPACK_CUDA_CHECK(cudaMemcpyAsync(hist + i * (w - 1) * DIN, ext + i * rows * DIN + n * DIN,
                                         fbytes((w - 1) * DIN), cudaMemcpyDeviceToDevice, st));
    }
    float* q = qkv;
    float* k = q + n * DIN;
    const float* v = k + n * DIN;
    kda_l2_norm(q, 2 * n * H, d, eps, st);  // q and k are adjacent: 2·n·H rows of d
    float* lo = lo_.as<float>();
    float* decay = decay_.as<float>();
    float* gate = gate_.as<float>();
    float* beta = beta_.as<float>();
    dev_matmul(L.m_f_a, xn, E, n, lo, d, st);
    dev_matmul(L.m_f_b, lo, d, n, decay, DIN, st);
    dev_matmul(L.m_g_a, xn, E, n, lo, d, st);
    dev_matmul(L.m_g_b, lo, d, n, gate, DIN, st);
    dev_matmul(L.m_beta, xn, E, n, beta, H, st);
    kda_gates(decay, gate, beta, n, H, d, L.d_a, L.d_dt_bias, st);
    float* o = o_.as<float>();
    kda_recurrence(S, q, k, v, decay, beta, n, H, d, o, st);
    kda_output_norm_gate(o, L.d_norm, gate, n * H, d, eps, st);
    dev_matmul(L.m_wo, o, DIN, n, y_.as<float>(), E, st);
  }

  // §4.4: absorbed MLA without RoPE over the cached latent rows, xn_ -> y_. pos_dev (one token,
  // a decode graph serving positions below max_kv): the position read from device memory; the
  // row is built in row_ and then stored at it (the same values).
  void mla(const Layer& L, int64_t n, int64_t pos0, const int32_t* pos_dev, int64_t max_kv) {
    if (pos_dev && n != 1) throw Error("internal: MLA at a device position takes one token");
    const int64_t E = cfg_.n_embd, H = cfg_.n_head, r = cfg_.kv_lora_rank, np = cfg_.n_rot;
    const int64_t dk = cfg_.n_embd_head_k_mla, dv = cfg_.n_embd_head_v_mla, W = r + np;
    cudaStream_t st = stream_.get();
    const float* xn = xn_.as<float>();
    float* q = q_.as<float>();
    float* c = c_.as<float>();
    dev_matmul(L.m_wq, xn, E, n, q, H * dk, st);
    dev_matmul(L.m_wkv_a, xn, E, n, c, W, st);
    float* rows = pos_dev ? row_.as<float>() : L.state + pos0 * W;
    rms_norm(c, W, L.d_kv_a_norm, r, cfg_.rms_eps, rows, W, n, st);  // c_kv normed
    MOEPACK_CUDA_CHECK(cudaMemcpy2DAsync(rows + r, fbytes(W), c + r, fbytes(W), fbytes(np),
                                         static_cast<size_t>(n), cudaMemcpyDeviceToDevice, st));  // k_p as is
    if (pos_dev) copy_row_to_position(L.state, W, rows, W, pos_dev, st);
    float* qa = qa_.as<float>();
    float* lat = lat_.as<float>();
    grouped_matmul(L.m_wk_b, r, H, q, H * dk, dk, n, qa, H * r, r, st);
    const float kq_scale = 1.0f / std::sqrt(static_cast<float>(dk));
    mla_attend(qa, q, n, pos0, L.state, H, r, dk, np, kq_scale, lat, st, pos_dev,
               max_kv > 0 ? std::min<int64_t>(max_kv, n_ctx_) : n_ctx_);
    float* o = o_.as<float>();
    grouped_matmul(L.m_wv_b, dv, H, lat, H * r, r, n, o, H * dv, dv, st);
    dev_matmul(L.m_wo, o, H * dv, n, y_.as<float>(), E, st);
  }

  // §4.5: router logits on the GPU, selection on the host (route_token), routed experts and the
  // shared expert into y_.
  void moe(uint32_t il, int64_t n, int64_t pos0, double* io_wait) {
    const Layer& L = layers_[il];
    cudaStream_t st = stream_.get();
    const int64_t E = cfg_.n_embd, K = cfg_.n_expert_used;
    const float* xn = xn_.as<float>();
    // With prefetch, the next MoE block's router on this block's input predicts its experts,
    // read once this block's experts are queued.
    RouterLookahead next;
    const uint32_t il_next = experts_->next_moe_block(il);
    if (experts_->prefetching() && il_next < cfg_.n_layer) {
      const Layer& N = layers_[il_next];
      next = {&N.m_router, N.bias.empty() ? nullptr : N.bias.data(), {}};
    }
    // The shared expert into tmp_ beside the host's choice (HostRouter::route), or after the
    // routed experts.
    const bool overlap = L.ff > 0 && shared_expert_overlap();
    const auto shared = [&] { swiglu_ffn(L.m_sh_gate, L.m_sh_up, L.m_sh_down, L.ff, n, tmp_.as<float>()); };
    float* y = y_.as<float>();
    if (device_router_.active(n)) {
      // Decode with every expert resident: the choice on the GPU (route_token's, bit for bit),
      // no copy to or from the host and no wait; the shared expert beside it.
      stats_.expert_selections += static_cast<uint64_t>(K);
      stats_.experts_computed +=
          device_router_.run_block(il, L.m_router, xn, rl_.as<float>(), *experts_,
                                   L.ff > 0 ? std::function<void()>(shared) : nullptr, y, st);
      if (L.ff > 0) add_inplace(y, tmp_.as<float>(), E, st);
      return;
    }
    router_.route(il, L.m_router, xn, n, pos0, L.bias.empty() ? nullptr : L.bias.data(), rl_.as<float>(), st,
                  defer_routing_ ? defer_ : observer_, {}, next,
                  overlap ? HostRouter::Beside(shared) : nullptr);
    stats_.expert_selections += static_cast<uint64_t>(n * K);
    stats_.experts_computed +=
        experts_->run(il, xn, n, router_.ids(), router_.weights(), 0.0f, y, arena_, st, io_wait);
    if (next.router) experts_->prefetch(il_next, router_.predicted(), io_wait);
    if (L.ff > 0) {
      if (!overlap) shared();
      add_inplace(y, tmp_.as<float>(), n * E, st);
    }
  }

  std::shared_ptr<const ModelSource> model_;
  const ModelConfig& cfg_;
  TensorStore tensors_;
  DeviceWeights weights_;
  Stream stream_;
  UploadArena arena_;
  Hd h_tok_ = 0, h_out_norm_ = 0, h_out_ = 0;
  DevMatrix tok_embd_, output_;
  const float* output_norm_ = nullptr;
  std::vector<Layer> layers_;
  std::unique_ptr<CudaRoutedExperts> experts_;
  int64_t max_ff_ = 0;
  uint64_t kda_floats_ = 0;  // all KDA blocks' state, floats
  uint32_t n_mla_ = 0;
  uint32_t n_ctx_ = 0, n_past_ = 0;
  std::vector<int32_t> tokens_;  // ids at positions 0 .. n_past_-1 (for recomputation)
  DeviceBuffer kda_state_, mla_cache_;
  std::vector<DeviceBuffer> cp_slots_;
  std::vector<size_t> free_slots_;
  std::deque<Checkpoint> checkpoints_;  // ascending pos; the last one is the current state
  DeviceBuffer x_, xn_, y_, tmp_, ext_, qkv_, lo_, decay_, gate_, beta_, o_, q_, c_, row_, qa_, lat_, rl_,
      fg_, fu_, logits_;
  HostRouter router_{cfg_};
  RoutingObserver observer_;
  bool defer_routing_ = false;
  std::vector<Routed> deferred_;
  // Collects routing for replay in block-major order when a call spans several ubatches
  // (run_all).
  const RoutingObserver defer_ = [this](uint32_t block, uint32_t pos, std::span<const int32_t> ids,
                                        std::span<const float> wts) {
    deferred_.push_back({block, pos, std::vector<int32_t>(ids.begin(), ids.end()),
                         std::vector<float>(wts.begin(), wts.end())});
  };
  DeviceRouter device_router_;  // decode steps' choice on the GPU (every expert resident)
  BackendStats stats_;
  DecodeGraph graph_;  // decode steps as one CUDA graph launch (gpu/decode_graph.h)
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend_kimi_linear(std::shared_ptr<const ModelSource> model,
                                                       const EngineSettings& settings) {
  if (!model) throw Error("make_cuda_backend_kimi_linear: no model");
  return std::make_unique<CudaKimiLinear>(std::move(model), settings);
}

}  // namespace moepack::gpu
