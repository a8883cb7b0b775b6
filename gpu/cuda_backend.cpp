// The CUDA backend's common block (embedding, RMSNorm, residuals, dense FFN, MoE with routed
// and shared experts, head) around gpu/cuda_attention.h; see cuda_backend.h for where each
// piece of data lives and core/cpu_backend.cpp for the reference it mirrors step by step.
//
// Streams: everything runs on one compute stream; the pack path's copies run on the pool's
// copy stream and are ordered with events (vram_expert_pool.h). The host waits for the compute
// stream's work once at the end for the logits, and where the host routes (prefill, the pack
// path) once per MoE layer for the router scores' copy (an event, so the shared expert queued
// after it keeps the GPU busy meanwhile: cuda_host_router.h). A decode step with every expert
// resident routes on the GPU (cuda_device_router.h) and from its second step on is one CUDA
// graph launch (gpu/decode_graph.h).
#include "gpu/cuda_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/backend_factory.h"
#include "core/error.h"
#include "core/model_source.h"
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
#include "gpu/upload_arena.h"

namespace moepack::gpu {

namespace {

std::atomic<bool> g_residual_norm_fusion{true};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

size_t fbytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

struct Ffn {
  DevMatrix gate, up, down;  // [n_ff][E], [n_ff][E], [E][n_ff]
  int64_t n_ff = 0;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const ModelSource> model, const EngineSettings& s)
      : model_(std::move(model)), cfg_(model_->config()), tensors_(model_->gguf()), weights_(tensors_) {
    open_cuda_device();  // (throws where there is no device this build runs on)
    const int64_t E = cfg_.n_embd;
    if (cfg_.n_vocab == 0)
      throw FormatError(model_->metadata().path(), cfg_.arch + ".vocab_size", 0, "vocabulary size unknown");

    // Register every resident tensor, then upload once (clear out-of-VRAM error first).
    const WeightView tok = tensors_.matrix("token_embd.weight", E, cfg_.n_vocab);
    const auto h_tok = weights_.add_view(tok);
    const auto h_out_norm = weights_.add_vector("output_norm.weight", E);
    const auto h_out = cfg_.tied_embeddings ? h_tok : weights_.add_matrix("output.weight", E, cfg_.n_vocab);
    attention_ = make_cuda_attention(cfg_, weights_);

    experts_ = std::make_unique<CudaRoutedExperts>(*model_, weights_,
                                                   [this](uint32_t il) { return cfg_.is_moe_layer(il); });

    struct LayerHandles {
      DeviceWeights::Handle attn_norm = 0, ffn_norm = 0, router = 0, bias = 0;
      DeviceWeights::Handle g = 0, u = 0, d = 0, sg = 0, su = 0, sd = 0;
      int64_t ff = 0, sff = 0;
      bool has_bias = false;
    };
    std::vector<LayerHandles> lh(cfg_.n_layer);
    layers_.resize(cfg_.n_layer);
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      LayerHandles& h = lh[il];
      h.attn_norm = weights_.add_vector(p + "attn_norm.weight", E);
      h.ffn_norm = weights_.add_vector(p + "ffn_norm.weight", E);
      if (!cfg_.is_moe_layer(il)) {
        h.ff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate.weight")[1]);
        h.g = weights_.add_matrix(p + "ffn_gate.weight", E, h.ff);
        h.u = weights_.add_matrix(p + "ffn_up.weight", E, h.ff);
        h.d = weights_.add_matrix(p + "ffn_down.weight", h.ff, E);
        continue;
      }
      h.router = weights_.add_matrix(p + "ffn_gate_inp.weight", E, cfg_.n_expert);
      layers_[il].expert_bias = tensors_.vector(p + "exp_probs_b.bias", cfg_.n_expert, false);
      if (cfg_.n_expert_shared > 0) {
        h.sff = static_cast<int64_t>(tensors_.shape(p + "ffn_gate_shexp.weight")[1]);
        h.sg = weights_.add_matrix(p + "ffn_gate_shexp.weight", E, h.sff);
        h.su = weights_.add_matrix(p + "ffn_up_shexp.weight", E, h.sff);
        h.sd = weights_.add_matrix(p + "ffn_down_shexp.weight", h.sff, E);
      }
    }

    n_ctx_ = std::min<uint32_t>(s.n_ctx ? s.n_ctx : 4096, cfg_.n_ctx_train ? cfg_.n_ctx_train : s.n_ctx);
    if (n_ctx_ == 0) n_ctx_ = 4096;
    uint64_t kv_floats = 0;
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      kv_floats += static_cast<uint64_t>(n_ctx_) * static_cast<uint64_t>(attention_->kv_width(il));
    }
    const uint64_t reserve = s.cache_vram_reserve_mib << 20;
    weights_.upload(reserve, kv_floats * sizeof(float) + attention_->table_bytes(n_ctx_), model_->path());
    attention_->bind(weights_, n_ctx_);
    kv_.allocate(kv_floats * sizeof(float), "the KV cache (" + std::to_string(n_ctx_) + " tokens)");
    uint64_t off = 0;
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      layers_[il].kv = kv_.as<float>() + off;
      off += static_cast<uint64_t>(n_ctx_) * static_cast<uint64_t>(attention_->kv_width(il));
    }

    tok_embd_ = weights_.matrix(h_tok);
    output_norm_ = weights_.vector(h_out_norm);
    output_ = weights_.matrix(h_out);
    for (const DevMatrix* m : {&tok_embd_, &output_}) require_gpu_type(*m, "token_embd / output");
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      Layer& L = layers_[il];
      const LayerHandles& h = lh[il];
      L.attn_norm = weights_.vector(h.attn_norm);
      L.ffn_norm = weights_.vector(h.ffn_norm);
      if (!cfg_.is_moe_layer(il)) {
        L.dense = {weights_.matrix(h.g), weights_.matrix(h.u), weights_.matrix(h.d), h.ff};
        continue;
      }
      L.router = weights_.matrix(h.router);
      if (h.sff) L.shared = {weights_.matrix(h.sg), weights_.matrix(h.su), weights_.matrix(h.sd), h.sff};
    }
    for (const Layer& L : layers_) max_ff_ = std::max({max_ff_, L.dense.n_ff, L.shared.n_ff});
    experts_->bind(s);
    // Decode steps route on the GPU when every expert is resident (gpu/cuda_device_router.h).
    std::vector<std::vector<float>> biases;
    for (const Layer& L : layers_) biases.push_back(L.expert_bias);
    device_router_.bind(cfg_, *experts_, biases);
    for (const Layer& L : layers_) {
      for (const Ffn* f : {&L.dense, &L.shared}) {
        if (f->n_ff) {
          require_gpu_type(f->gate, "FFN");
          require_gpu_type(f->up, "FFN");
          require_gpu_type(f->down, "FFN");
        }
      }
      if (!L.router.empty()) require_gpu_type(L.router, "router");
    }
  }

  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  const ModelConfig& config() const override { return cfg_; }
  uint32_t n_ctx() const override { return n_ctx_; }
  uint32_t n_past() const override { return n_past_; }
  void truncate(uint32_t n) override {
    if (n > n_past_)
      throw Error("truncate(" + std::to_string(n) + ") beyond the " + std::to_string(n_past_) +
                  " cached tokens");
    n_past_ = n;
  }
  void set_routing_observer(RoutingObserver observer) override { observer_ = std::move(observer); }
  BackendStats stats() const override {
    BackendStats s = stats_;
    experts_->add_stats(s);
    return s;
  }

  void forward(std::span<const int32_t> tokens, std::span<float> logits,
               std::span<float> all_logits) override {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t E = cfg_.n_embd, NV = cfg_.n_vocab;
    check_forward_args(tokens, logits, all_logits, n_past_, n_ctx_, cfg_.n_vocab);
    const auto t0 = Clock::now();
    double io_wait = 0.0;
    const int64_t pos0 = n_past_;
    cudaStream_t st = stream_.get();
    arena_.reset();
    device_router_.begin_step();
    // Every activation buffer is sized here, before the first kernel: growing one later would
    // free memory that queued kernels of this call still use. A buffer that grows moves, and
    // the decode graph holds the old address: it is dropped (captured again two steps later).
    const auto size_buffers = [&] {
      bool grew = x_.ensure(fbytes(n * E), "activations");
      grew |= xn_.ensure(fbytes(n * E), "activations");
      grew |= tmp_.ensure(fbytes(n * E), "activations");
      grew |= tmp2_.ensure(fbytes(n * E), "activations");
      grew |= g_.ensure(fbytes(n * max_ff_), "FFN activations");
      grew |= u_.ensure(fbytes(n * max_ff_), "FFN activations");
      if (cfg_.n_expert > 0) {
        grew |= rl_.ensure(fbytes(2 * n * cfg_.n_expert), "router scores");  // 2: the lookahead's
        grew |= experts_->reserve(n);
      }
      grew |= attention_->reserve(n);
      grew |= logits_.ensure(fbytes((all_logits.empty() ? 1 : n) * NV), "logits");
      return grew;
    };
    // (Dropped on an error too: a buffer that failed to grow was freed, DeviceBuffer::allocate.)
    try {
      if (size_buffers()) graph_.drop();
    } catch (...) {
      graph_.drop();
      throw;
    }
    // A decode step with the router on the GPU runs as a CUDA graph (decode_graph).
    const bool graph = n == 1 && all_logits.empty() && device_router_.active(1) && graph_.usable();
    try {
      if (graph) {
        graph_.step(tokens[0], pos0, n_ctx_, logits, NV, st, device_router_, stats_,
                    [&](const int32_t* d_step, float* out, int64_t max_kv) {
                      enqueue_step(d_step, 1, pos0, d_step + 1, max_kv, false, out, true, &io_wait);
                    });
        device_router_.report(observer_, static_cast<uint32_t>(pos0));
      } else {
        // Inside the try, as in the other backends: a failed upload or launch still syncs the
        // stream before the arena's pinned buffer is reused.
        const int32_t* d_tokens = arena_.put(tokens.data(), tokens.size(), st);
        float* dst = all_logits.empty() ? logits.data() : all_logits.data();
        enqueue_step(d_tokens, n, pos0, nullptr, 0, !all_logits.empty(), dst, false, &io_wait);
        MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
        device_router_.report(observer_, static_cast<uint32_t>(pos0));
        if (!all_logits.empty()) {
          std::copy(all_logits.begin() + (n - 1) * NV, all_logits.begin() + n * NV, logits.begin());
        }
      }
    } catch (...) {
      experts_->end_step();
      cudaStreamSynchronize(st);  // leave nothing queued that uses this call's buffers
      throw;
    }
    n_past_ += static_cast<uint32_t>(n);
    ++stats_.forward_calls;
    stats_.tokens_evaluated += static_cast<uint64_t>(n);
    stats_.io_wait_ms += io_wait;
    stats_.compute_ms += ms_since(t0) - io_wait;
  }

 private:
  // Queues one step of n tokens at positions pos0.. (pos_dev: pos0 read from that device int, a
  // decode step in a graph serving positions below max_kv): the embedding of the token ids at
  // d_tokens (device), every block,
  // the head (logits of the last token, or of every token with all), copied to dst (host); and
  // the routing choices for the observer (always with graph_step, else when there is one).
  void enqueue_step(const int32_t* d_tokens, int64_t n, int64_t pos0, const int32_t* pos_dev, int64_t max_kv,
                    bool all, float* dst, bool graph_step, double* io_wait) {
    const int64_t E = cfg_.n_embd, NV = cfg_.n_vocab;
    cudaStream_t st = stream_.get();
    float* x = x_.as<float>();
    float* xn = xn_.as<float>();
    float* tmp = tmp_.as<float>();
    float* tmp2 = tmp2_.as<float>();
    dequant_rows(tok_embd_.type, tok_embd_.data, tok_embd_.row_bytes, E, d_tokens, static_cast<int32_t>(n), x,
                 st);
    // The residual adds fused with the RMSNorm after them (add_rms_norm), the shared expert's
    // output added there too; the same values bit for bit as the separate launches.
    const bool fuse = residual_norm_fusion();
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      const Layer& L = layers_[il];
      if (il == 0 || !fuse) rms_norm(x, E, L.attn_norm, E, cfg_.rms_eps, xn, E, n, st);
      attention_->forward(il, xn, n, pos0, L.kv, tmp, st, pos_dev, max_kv);
      if (fuse) {
        add_rms_norm(x, tmp, nullptr, L.ffn_norm, E, cfg_.rms_eps, xn, n, st);
      } else {
        add_inplace(x, tmp, n * E, st);
        rms_norm(x, E, L.ffn_norm, E, cfg_.rms_eps, xn, E, n, st);
      }
      const float* shared = nullptr;  // the shared expert's output, not yet added to tmp
      if (cfg_.is_moe_layer(il)) {
        shared = moe(il, xn, n, pos0, tmp, tmp2, io_wait, fuse);
      } else {
        ffn(L.dense, xn, n, tmp);
      }
      if (fuse && il + 1 < cfg_.n_layer) {
        add_rms_norm(x, tmp, shared, layers_[il + 1].attn_norm, E, cfg_.rms_eps, xn, n, st);
      } else {
        if (shared) add_inplace(tmp, shared, n * E, st);
        add_inplace(x, tmp, n * E, st);
      }
    }
    experts_->end_step();
    // Head: the last token always; every token when asked.
    const int64_t first = all ? 0 : n - 1;
    const int64_t rows = n - first;
    rms_norm(x + first * E, E, output_norm_, E, cfg_.rms_eps, xn, E, rows, st);
    dev_matmul(output_, xn, E, rows, logits_.as<float>(), NV, st);
    device_router_.copy_back(observer_, st, graph_step);
    MOEPACK_CUDA_CHECK(
        cudaMemcpyAsync(dst, logits_.as<float>(), fbytes(rows * NV), cudaMemcpyDeviceToHost, st));
  }

  struct Layer {
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    float* kv = nullptr;  // [n_ctx][kv_width]
    Ffn dense;
    DevMatrix router;                // [n_expert][E]
    std::vector<float> expert_bias;  // host (a copy in VRAM for DeviceRouter)
    Ffn shared;
  };

  // out[t] = down(swiglu(gate x[t], up x[t])) for all n tokens.
  void ffn(const Ffn& w, const float* x, int64_t n, float* out) {
    cudaStream_t st = stream_.get();
    dev_matmul(w.gate, x, cfg_.n_embd, n, g_.as<float>(), w.n_ff, st);
    dev_matmul(w.up, x, cfg_.n_embd, n, u_.as<float>(), w.n_ff, st);
    swiglu(g_.as<float>(), u_.as<float>(), n * w.n_ff, g_.as<float>(), st);
    dev_matmul(w.down, g_.as<float>(), w.n_ff, n, out, cfg_.n_embd, st);
  }

  // out = the routed experts' sum + the shared expert's (computed into shared_out). With
  // leave_shared, the shared expert's output is not added to out: returns shared_out for the
  // caller to add (null when the block has no shared expert or it was added here).
  const float* moe(uint32_t il, const float* xn, int64_t n, int64_t pos0, float* out, float* shared_out,
                   double* io_wait, bool leave_shared) {
    const Layer& L = layers_[il];
    cudaStream_t st = stream_.get();
    const int64_t K = cfg_.n_expert_used;
    // The shared expert beside the host's choice (HostRouter::route), or after the routed ones.
    const bool overlap = L.shared.n_ff > 0 && shared_expert_overlap();
    const auto shared = [&] { ffn(L.shared, xn, n, shared_out); };
    if (device_router_.active(n)) {
      // Decode with every expert resident: the choice on the GPU (route_token's, bit for bit),
      // no copy to or from the host and no wait; the shared expert beside it.
      stats_.expert_selections += static_cast<uint64_t>(K);
      stats_.experts_computed +=
          device_router_.run_block(il, L.router, xn, rl_.as<float>(), *experts_,
                                   L.shared.n_ff > 0 ? std::function<void()>(shared) : nullptr, out, st);
      if (L.shared.n_ff == 0) return nullptr;
      if (leave_shared) return shared_out;
      add_inplace(out, shared_out, cfg_.n_embd, st);
      return nullptr;
    }
    // Router scores on the GPU, top-k on the host with core's route_token (exact). With
    // prefetch, the next MoE block's router on the same input predicts its experts, whose
    // reads start once this block's experts are queued.
    HostRouter::Lookahead next;
    const uint32_t il_next = experts_->next_moe_block(il);
    if (experts_->prefetching() && il_next < cfg_.n_layer) {
      const Layer& N = layers_[il_next];
      next = {&N.router, N.expert_bias.empty() ? nullptr : N.expert_bias.data(), {}};
    }
    router_.route(il, L.router, xn, n, pos0, L.expert_bias.empty() ? nullptr : L.expert_bias.data(),
                  rl_.as<float>(), st, observer_, {}, next, overlap ? HostRouter::Beside(shared) : nullptr);
    stats_.expert_selections += static_cast<uint64_t>(n * K);
    stats_.experts_computed +=
        experts_->run(il, xn, n, router_.ids(), router_.weights(), 0.0f, out, arena_, st, io_wait);
    if (next.router) experts_->prefetch(il_next, router_.predicted(), io_wait);
    if (L.shared.n_ff == 0) return nullptr;
    if (!overlap) shared();
    if (leave_shared) return shared_out;
    add_inplace(out, shared_out, n * cfg_.n_embd, st);
    return nullptr;
  }

  std::shared_ptr<const ModelSource> model_;
  const ModelConfig& cfg_;
  TensorStore tensors_;
  DeviceWeights weights_;
  std::unique_ptr<CudaAttention> attention_;
  Stream stream_;
  DevMatrix tok_embd_, output_;
  const float* output_norm_ = nullptr;
  std::vector<Layer> layers_;
  std::unique_ptr<CudaRoutedExperts> experts_;
  int64_t max_ff_ = 0;  // widest dense / shared FFN
  uint32_t n_ctx_ = 0;
  uint32_t n_past_ = 0;
  DeviceBuffer kv_;
  DeviceBuffer x_, xn_, tmp_, tmp2_, g_, u_, rl_, logits_;
  HostRouter router_{cfg_};
  UploadArena arena_;
  RoutingObserver observer_;
  BackendStats stats_;
  DeviceRouter device_router_;  // decode steps' choice on the GPU (every expert resident)
  DecodeGraph graph_;           // decode steps as one CUDA graph launch (gpu/decode_graph.h)
};

}  // namespace

void set_residual_norm_fusion(bool on) { g_residual_norm_fusion.store(on, std::memory_order_relaxed); }
bool residual_norm_fusion() { return g_residual_norm_fusion.load(std::memory_order_relaxed); }

bool cuda_backend_supports(const ModelConfig& cfg) {
  return cfg.arch == "deepseek2" || cfg.arch == "qwen3moe" || cfg.arch == "llama" ||
         cfg.arch == "deepseek4" || cfg.arch == "kimi-linear";
}

bool cuda_backend_usable(const ModelSource& model) {
  if (!cuda_backend_supports(model.config())) return false;
  const DeviceQuery q = query_devices();
  if (q.devices.empty()) return false;
  if (const std::string why = first_device_unsupported(q); !why.empty()) {
    throw Error("backend \"cuda\": " + why);
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const ModelSource> model,
                                           const EngineSettings& settings) {
  if (!model) throw Error("make_cuda_backend: no model");
  // Architectures with their own block forward (gpu/cuda_arch_backends.h).
  if (model->config().arch == "deepseek4") return make_cuda_backend_deepseek4(std::move(model), settings);
  if (model->config().arch == "kimi-linear") return make_cuda_backend_kimi_linear(std::move(model), settings);
  return std::make_unique<CudaBackend>(std::move(model), settings);
}

void register_cuda_backend() { register_backend("cuda", make_cuda_backend, cuda_backend_usable); }

}  // namespace moepack::gpu
