// The CUDA backend's common block (embedding, RMSNorm, residuals, dense FFN, MoE with routed
// and shared experts, head) around gpu/cuda_attention.h; see cuda_backend.h for where each
// piece of data lives and core/cpu_backend.cpp for the reference it mirrors step by step.
//
// Streams: everything runs on one compute stream; the pack path's copies run on the pool's
// copy stream and are ordered with events (vram_expert_pool.h). The host waits only for the
// compute stream: once per MoE layer for the router scores, once at the end for the logits.
#include "gpu/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/backend_factory.h"
#include "core/error.h"
#include "core/model_source.h"
#include "core/moe_routing.h"
#include "core/tensor_store.h"
#include "gpu/cuda_attention.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_info.h"
#include "gpu/device_weights.h"
#include "gpu/kernels.h"
#include "gpu/vram_expert_pool.h"

namespace moepack::gpu {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

size_t fbytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

// Small host -> device tables (token ids, expert pointer tables, pair lists) for one forward():
// bump-allocated in a pinned host buffer, copied on the compute stream to the same offset of a
// device buffer. reset() at the start of each forward() (the previous one ended with a stream
// sync). Growing moves on to a larger pair of buffers; the old ones stay alive until the next
// reset(), because tables handed out earlier in this forward() are still read by queued kernels.
class UploadArena {
 public:
  void reset() {
    used_ = 0;
    retired_host_.clear();
    retired_dev_.clear();
  }
  template <typename T>
  const T* put(const T* data, size_t count, cudaStream_t s) {
    const size_t bytes = count * sizeof(T);
    const size_t at = (used_ + 255) / 256 * 256;
    if (at + bytes > host_.size()) {
      const size_t cap = std::max<size_t>(2 * host_.size(), std::max<size_t>(bytes + 256, 1 << 20));
      if (host_.size()) {
        retired_host_.push_back(std::move(host_));
        retired_dev_.push_back(std::move(dev_));
      }
      host_ = PinnedBuffer(cap, "the upload arena");
      dev_ = DeviceBuffer(cap, "the upload arena");
      used_ = 0;
      return put(data, count, s);
    }
    std::memcpy(host_.bytes_ptr() + at, data, bytes);
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(dev_.bytes_ptr() + at, host_.bytes_ptr() + at, bytes, cudaMemcpyHostToDevice, s));
    used_ = at + bytes;
    return reinterpret_cast<const T*>(dev_.bytes_ptr() + at);
  }

 private:
  PinnedBuffer host_;
  DeviceBuffer dev_;
  std::vector<PinnedBuffer> retired_host_;
  std::vector<DeviceBuffer> retired_dev_;
  size_t used_ = 0;
};

struct Ffn {
  DevMatrix gate, up, down;  // [n_ff][E], [n_ff][E], [E][n_ff]
  int64_t n_ff = 0;
};

// One routed expert's three matrices in VRAM.
struct ExpertPtrs {
  const uint8_t* gate;
  const uint8_t* up;
  const uint8_t* down;
};

// Shape and type of one role of the routed experts of a layer (same for every expert).
struct RoleShape {
  GgmlType type = GgmlType::F32;
  int64_t ne0 = 0, ne1 = 0;
  uint64_t row_bytes = 0;
  uint64_t offset = 0;  // pack path: offset inside the expert's block
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const ModelSource> model, const EngineSettings& s)
      : model_(std::move(model)), cfg_(model_->config()), tensors_(model_->gguf()), weights_(tensors_) {
    const auto q = query_devices();
    if (q.devices.empty()) throw Error("backend \"cuda\": no usable CUDA device (" + q.error + ")");
    MOEPACK_CUDA_CHECK(cudaSetDevice(0));
    const int64_t E = cfg_.n_embd;
    if (cfg_.n_vocab == 0) throw FormatError(model_->metadata().path(), cfg_.arch + ".vocab_size", 0, "vocabulary size unknown");

    // Register every resident tensor, then upload once (clear out-of-VRAM error first).
    const WeightView tok = tensors_.matrix("token_embd.weight", E, cfg_.n_vocab);
    const auto h_tok = weights_.add_view(tok);
    const auto h_out_norm = weights_.add_vector("output_norm.weight", E);
    const auto h_out = cfg_.tied_embeddings ? h_tok : weights_.add_matrix("output.weight", E, cfg_.n_vocab);
    attention_ = make_cuda_attention(cfg_, weights_);

    const uint32_t first_moe = cfg_.n_layer_dense_lead;
    const std::string gate_name = "blk." + std::to_string(first_moe) + ".ffn_gate_exps.weight";
    if (model_->is_pack()) {
      for (const auto& r : model_->pack()->layout().layers.at(0).roles) {
        if (r.role == "gate") n_ff_exp_ = static_cast<int64_t>(r.ne[1]);
      }
    } else if (cfg_.n_expert > 0) {
      n_ff_exp_ = static_cast<int64_t>(tensors_.shape(gate_name)[1]);
    }
    if (cfg_.n_expert > 0 && n_ff_exp_ <= 0) {
      throw FormatError(model_->path(), gate_name, 0, "cannot determine the expert width");
    }

    struct LayerHandles {
      DeviceWeights::Handle attn_norm = 0, ffn_norm = 0, router = 0, bias = 0;
      DeviceWeights::Handle g = 0, u = 0, d = 0, sg = 0, su = 0, sd = 0, eg = 0, eu = 0, ed = 0;
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
      if (!model_->is_pack()) {
        const int64_t ne = cfg_.n_expert;
        h.eg = weights_.add_stacked(p + "ffn_gate_exps.weight", E, n_ff_exp_, ne);
        h.eu = weights_.add_stacked(p + "ffn_up_exps.weight", E, n_ff_exp_, ne);
        h.ed = weights_.add_stacked(p + "ffn_down_exps.weight", n_ff_exp_, E, ne);
      }
    }

    n_ctx_ = std::min<uint32_t>(s.n_ctx ? s.n_ctx : 4096, cfg_.n_ctx_train ? cfg_.n_ctx_train : s.n_ctx);
    if (n_ctx_ == 0) n_ctx_ = 4096;
    const int64_t max_pos = max_attention_positions();
    if (n_ctx_ > max_pos) {
      throw Error("n_ctx " + std::to_string(n_ctx_) + " exceeds the " + std::to_string(max_pos) +
                  " positions the CUDA attention kernels hold in shared memory on this device; lower n_ctx");
    }
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
    for (const DevMatrix* m : {&tok_embd_, &output_}) check_type(*m, "token_embd / output");
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
      if (!model_->is_pack()) {
        L.exps_gate = weights_.matrix(h.eg);
        L.exps_up = weights_.matrix(h.eu);
        L.exps_down = weights_.matrix(h.ed);
        L.gate = {L.exps_gate.type, E, n_ff_exp_, L.exps_gate.row_bytes, 0};
        L.up = {L.exps_up.type, E, n_ff_exp_, L.exps_up.row_bytes, 0};
        L.down = {L.exps_down.type, n_ff_exp_, E, L.exps_down.row_bytes, 0};
      }
    }
    for (const Layer& L : layers_) max_ff_ = std::max({max_ff_, L.dense.n_ff, L.shared.n_ff});
    if (model_->is_pack()) init_pack(s);
    for (const Layer& L : layers_) {
      for (const Ffn* f : {&L.dense, &L.shared}) {
        if (f->n_ff) {
          check_type(f->gate, "FFN");
          check_type(f->up, "FFN");
          check_type(f->down, "FFN");
        }
      }
      if (!L.router.empty()) {
        check_type(L.router, "router");
        for (const RoleShape* r : {&L.gate, &L.up, &L.down}) {
          if (!gpu_type_supported(r->type)) {
            throw Error("the CUDA backend has no kernel for routed expert type " + std::string(ggml_type_name(r->type)));
          }
        }
      }
    }
  }

  std::string_view name() const override { return "cuda"; }
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
    if (pool_) {
      const VramPoolCounters c = pool_->counters();
      s.cache_hits = c.cache.cache_hits;
      s.cache_misses = c.cache.cache_misses;
      s.cache_evictions = c.cache.cache_evictions;
      s.pack_read_bytes = c.pack_read_bytes;
      s.h2d_bytes = c.h2d_bytes;
      s.fallback_count = c.fallback_count;
      s.io_errors = c.io_errors;
      s.cache_slots = pool_->slot_count();
      s.cache_slot_bytes = pool_->slot_bytes();
    }
    return s;
  }

  void forward(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits) override {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t E = cfg_.n_embd, NV = cfg_.n_vocab;
    check_forward_args(tokens, logits, all_logits, n_past_, n_ctx_, cfg_.n_vocab);
    const auto t0 = Clock::now();
    double io_wait = 0.0;
    const int64_t pos0 = n_past_;
    cudaStream_t st = stream_.get();
    arena_.reset();
    x_.ensure(fbytes(n * E), "activations");
    xn_.ensure(fbytes(n * E), "activations");
    tmp_.ensure(fbytes(n * E), "activations");
    tmp2_.ensure(fbytes(n * E), "activations");
    // Every activation buffer is sized here, before the first kernel: growing one later would
    // free memory that queued kernels of this call still use.
    g_.ensure(fbytes(n * max_ff_), "FFN activations");
    u_.ensure(fbytes(n * max_ff_), "FFN activations");
    if (cfg_.n_expert > 0) {
      const int64_t pairs = n * cfg_.n_expert_used;
      rl_.ensure(fbytes(n * cfg_.n_expert), "router scores");
      eg_.ensure(fbytes(pairs * n_ff_exp_), "expert activations");
      eu_.ensure(fbytes(pairs * n_ff_exp_), "expert activations");
      ey_.ensure(fbytes(pairs * E), "expert outputs");
    }
    float* x = x_.as<float>();
    float* xn = xn_.as<float>();
    float* tmp = tmp_.as<float>();
    float* tmp2 = tmp2_.as<float>();

    const int32_t* d_tokens = arena_.put(tokens.data(), tokens.size(), st);
    dequant_rows(tok_embd_.type, tok_embd_.data, tok_embd_.row_bytes, E, d_tokens, static_cast<int32_t>(n), x, st);
    try {
      for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
        const Layer& L = layers_[il];
        rms_norm(x, E, L.attn_norm, E, cfg_.rms_eps, xn, E, n, st);
        attention_->forward(il, xn, n, pos0, L.kv, tmp, st);
        add_inplace(x, tmp, n * E, st);
        rms_norm(x, E, L.ffn_norm, E, cfg_.rms_eps, xn, E, n, st);
        if (cfg_.is_moe_layer(il)) {
          moe(il, xn, n, pos0, tmp, &io_wait);
          if (L.shared.n_ff) {
            ffn(L.shared, xn, n, tmp2);
            add_inplace(tmp, tmp2, n * E, st);
          }
        } else {
          ffn(L.dense, xn, n, tmp);
        }
        add_inplace(x, tmp, n * E, st);
      }
      if (pool_) pool_->end_step();
      // Head: the last token always; every token when asked.
      const int64_t first = all_logits.empty() ? n - 1 : 0;
      const int64_t rows = n - first;
      rms_norm(x + first * E, E, output_norm_, E, cfg_.rms_eps, xn, E, rows, st);
      logits_.ensure(fbytes(rows * NV), "logits");
      dev_matmul(output_, xn, E, rows, logits_.as<float>(), NV, st);
      float* dst = all_logits.empty() ? logits.data() : all_logits.data();
      MOEPACK_CUDA_CHECK(cudaMemcpyAsync(dst, logits_.as<float>(), fbytes(rows * NV), cudaMemcpyDeviceToHost, st));
      MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
      if (!all_logits.empty()) {
        std::copy(all_logits.begin() + (n - 1) * NV, all_logits.begin() + n * NV, logits.begin());
      }
    } catch (...) {
      if (pool_) pool_->end_step();
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
  struct Layer {
    const float* attn_norm = nullptr;
    const float* ffn_norm = nullptr;
    float* kv = nullptr;  // [n_ctx][kv_width]
    Ffn dense;
    DevMatrix router;  // [n_expert][E]
    std::vector<float> expert_bias;  // host: routing runs on the host
    Ffn shared;
    DevMatrix exps_gate, exps_up, exps_down;  // GGUF path: stacked experts
    RoleShape gate, up, down;                 // one expert's matrices
    uint32_t pack_layer = 0;                  // pack path: index in the pack's layers
  };

  static void check_type(const DevMatrix& m, const char* what) {
    if (!gpu_type_supported(m.type)) {
      throw Error(std::string("the CUDA backend has no kernel for ") + what + " type " +
                  std::string(ggml_type_name(m.type)));
    }
  }

  void init_pack(const EngineSettings& s) {
    const ExpertPack& pack = *model_->pack();
    const auto& layout = pack.layout();
    const std::string file = pack.manifest_path();
    for (uint32_t l = 0; l < layout.layers.size(); ++l) {
      const PackLayer& pl = layout.layers[l];
      if (pl.block >= cfg_.n_layer || !cfg_.is_moe_layer(pl.block) || pl.n_experts != cfg_.n_expert) {
        throw FormatError(file, "layers[" + std::to_string(l) + "]", 0,
                          "blk." + std::to_string(pl.block) + " with " + std::to_string(pl.n_experts) +
                              " experts does not match the model");
      }
      Layer& L = layers_[pl.block];
      L.pack_layer = l;
      int found = 0;
      for (const PackRole& r : pl.roles) {
        const auto want = [&](int64_t ne0, int64_t ne1, RoleShape& dst) {
          if (r.ne[0] != static_cast<uint64_t>(ne0) || r.ne[1] != static_cast<uint64_t>(ne1) || r.ne[2] != 1) {
            throw FormatError(file, "layers[" + std::to_string(l) + "].roles." + r.role, 0, "unexpected shape");
          }
          const auto rb = ggml_row_bytes(r.type, static_cast<uint64_t>(ne0));
          if (!rb) throw FormatError(file, "layers[" + std::to_string(l) + "].roles." + r.role, 0, "bad row size");
          dst = {r.type, ne0, ne1, *rb, r.offset};
          ++found;
        };
        if (r.role == "gate") {
          want(cfg_.n_embd, n_ff_exp_, L.gate);
        } else if (r.role == "up") {
          want(cfg_.n_embd, n_ff_exp_, L.up);
        } else if (r.role == "down") {
          want(n_ff_exp_, cfg_.n_embd, L.down);
        } else {
          throw FormatError(file, "layers[" + std::to_string(l) + "].roles", 0,
                            "role '" + r.role + "' is not supported by the engine (gate, up, down)");
        }
      }
      if (found != 3) throw FormatError(file, "layers[" + std::to_string(l) + "].roles", 0, "needs gate, up and down");
    }
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      if (cfg_.is_moe_layer(il) && layers_[il].gate.ne0 == 0) {
        throw FormatError(file, "layers", 0, "blk." + std::to_string(il) + " has no experts in the pack");
      }
    }
    VramPoolSettings ps;
    ps.cache_bytes = s.cache_bytes ? s.cache_bytes : s.cache_vram_mib << 20;
    ps.reserve_bytes = s.cache_vram_reserve_mib << 20;
    ps.stage_slots = s.stage_slots;
    ps.reader.direct_io = s.direct_io;
    ps.reader.read_splits = s.read_splits;
    ps.reader.queue_depth = s.queue_depth;
    ps.policy = s.cache_policy;
    ps.verify_pack_sha256 = s.verify_pack_sha256;
    pool_ = std::make_unique<VramExpertPool>(pack, ps, cfg_.n_expert_used);
  }

  // out[t] = down(swiglu(gate x[t], up x[t])) for all n tokens.
  void ffn(const Ffn& w, const float* x, int64_t n, float* out) {
    cudaStream_t st = stream_.get();
    dev_matmul(w.gate, x, cfg_.n_embd, n, g_.as<float>(), w.n_ff, st);
    dev_matmul(w.up, x, cfg_.n_embd, n, u_.as<float>(), w.n_ff, st);
    swiglu(g_.as<float>(), u_.as<float>(), n * w.n_ff, g_.as<float>(), st);
    dev_matmul(w.down, g_.as<float>(), w.n_ff, n, out, cfg_.n_embd, st);
  }

  std::vector<ExpertPtrs> experts_of(uint32_t il, std::span<const uint32_t> ids, double* io_wait) {
    const Layer& L = layers_[il];
    std::vector<ExpertPtrs> out;
    out.reserve(ids.size());
    if (pool_) {
      const auto blocks = pool_->acquire(L.pack_layer, ids, stream_.get(), io_wait);
      for (const uint8_t* b : blocks) out.push_back({b + L.gate.offset, b + L.up.offset, b + L.down.offset});
      return out;
    }
    for (const uint32_t e : ids) {
      out.push_back({L.exps_gate.data + static_cast<uint64_t>(e) * static_cast<uint64_t>(n_ff_exp_) * L.gate.row_bytes,
                     L.exps_up.data + static_cast<uint64_t>(e) * static_cast<uint64_t>(n_ff_exp_) * L.up.row_bytes,
                     L.exps_down.data + static_cast<uint64_t>(e) * static_cast<uint64_t>(cfg_.n_embd) * L.down.row_bytes});
    }
    return out;
  }

  // All selected experts of a batch for one role, one launch: group i = expert i of the batch.
  void expert_gemv(const RoleShape& r, const uint8_t* const* table, const int32_t* grp_off, int32_t n_groups,
                   int32_t max_pairs, const int32_t* x_row, const float* x, int64_t x_stride, float* y,
                   int64_t y_stride) {
    GemvBatch b;
    b.type = r.type;
    b.ne0 = r.ne0;
    b.ne1 = r.ne1;
    b.row_bytes = r.row_bytes;
    b.w_table = table;
    b.grp_off = grp_off;
    b.x_row = x_row;
    b.x = x;
    b.x_stride = x_stride;
    b.y = y;
    b.y_stride = y_stride;
    b.n_groups = n_groups;
    b.max_pairs = max_pairs;
    gemv(b, stream_.get());
  }

  void moe(uint32_t il, const float* xn, int64_t n, int64_t pos0, float* out, double* io_wait) {
    const Layer& L = layers_[il];
    cudaStream_t st = stream_.get();
    const int64_t E = cfg_.n_embd, NE = cfg_.n_expert, K = cfg_.n_expert_used, FF = n_ff_exp_;
    // Router scores on the GPU, top-k on the host with core's route_token (exact).
    dev_matmul(L.router, xn, E, n, rl_.as<float>(), NE, st);
    if (h_rl_.size() < fbytes(n * NE)) h_rl_.allocate(fbytes(n * NE), "router scores");
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(h_rl_.as<float>(), rl_.as<float>(), fbytes(n * NE), cudaMemcpyDeviceToHost, st));
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
    const float* rl = h_rl_.as<float>();
    std::vector<int32_t> ids(static_cast<size_t>(n * K));
    std::vector<float> wts(static_cast<size_t>(n * K));
    std::vector<float> scratch(static_cast<size_t>(2 * NE));
    std::map<uint32_t, std::vector<int64_t>> by_expert;  // expert -> selections t * K + k
    for (int64_t t = 0; t < n; ++t) {
      route_token(cfg_, rl + t * NE, L.expert_bias.empty() ? nullptr : L.expert_bias.data(), ids.data() + t * K,
                  wts.data() + t * K, scratch.data());
      for (int64_t k = 0; k < K; ++k) by_expert[static_cast<uint32_t>(ids[t * K + k])].push_back(t * K + k);
      if (observer_) {
        observer_(il, static_cast<uint32_t>(pos0 + t), std::span<const int32_t>(ids.data() + t * K, K),
                  std::span<const float>(wts.data() + t * K, K));
      }
    }
    stats_.expert_selections += static_cast<uint64_t>(n * K);

    // Pairs sorted by expert: pair j = (token tok_of[j], selection sel).
    std::vector<uint32_t> unique;
    std::vector<int32_t> tok_of, pair_of(static_cast<size_t>(n * K)), first_pair;
    for (const auto& [e, sels] : by_expert) {
      unique.push_back(e);
      first_pair.push_back(static_cast<int32_t>(tok_of.size()));
      for (const int64_t sel : sels) {
        pair_of[static_cast<size_t>(sel)] = static_cast<int32_t>(tok_of.size());
        tok_of.push_back(static_cast<int32_t>(sel / K));
      }
    }
    first_pair.push_back(static_cast<int32_t>(tok_of.size()));
    const int32_t* d_tok_of = arena_.put(tok_of.data(), tok_of.size(), st);

    const size_t batch = pool_ ? std::max<size_t>(1, std::min<size_t>(pool_->slot_count(), unique.size())) : unique.size();
    uint64_t computed = 0;
    for (size_t b = 0; b < unique.size(); b += batch) {
      const size_t m = std::min(batch, unique.size() - b);
      const std::vector<ExpertPtrs> ptrs = experts_of(il, std::span<const uint32_t>(unique.data() + b, m), io_wait);
      std::vector<const uint8_t*> table(3 * m);
      std::vector<int32_t> grp_off(m + 1);
      int32_t max_pairs = 0;
      for (size_t i = 0; i < m; ++i) {
        table[i] = ptrs[i].gate;
        table[m + i] = ptrs[i].up;
        table[2 * m + i] = ptrs[i].down;
        grp_off[i] = first_pair[b + i];
        max_pairs = std::max(max_pairs, first_pair[b + i + 1] - first_pair[b + i]);
      }
      grp_off[m] = first_pair[b + m];
      const uint8_t* const* d_table = arena_.put(table.data(), table.size(), st);
      const int32_t* d_off = arena_.put(grp_off.data(), grp_off.size(), st);
      const int32_t gm = static_cast<int32_t>(m);
      expert_gemv(L.gate, d_table, d_off, gm, max_pairs, d_tok_of, xn, E, eg_.as<float>(), FF);
      expert_gemv(L.up, d_table + m, d_off, gm, max_pairs, d_tok_of, xn, E, eu_.as<float>(), FF);
      const int64_t p0 = grp_off[0], p1 = grp_off[m];
      swiglu(eg_.as<float>() + p0 * FF, eu_.as<float>() + p0 * FF, (p1 - p0) * FF, eg_.as<float>() + p0 * FF, st);
      expert_gemv(L.down, d_table + 2 * m, d_off, gm, max_pairs, nullptr, eg_.as<float>(), FF, ey_.as<float>(), E);
      if (pool_) pool_->release(st);
      computed += static_cast<uint64_t>(p1 - p0);
    }
    const int32_t* d_pair_of = arena_.put(pair_of.data(), pair_of.size(), st);
    const float* d_wts = arena_.put(wts.data(), wts.size(), st);
    combine_experts(ey_.as<float>(), d_pair_of, d_wts, static_cast<int32_t>(n), static_cast<int32_t>(K), E, out, st);
    stats_.experts_computed += computed;
    // Exact routing: every (token, expert) the router picked was computed, top-k unchanged.
    if (computed != static_cast<uint64_t>(n * K)) {
      throw Error("internal: blk." + std::to_string(il) + " computed " + std::to_string(computed) + " expert FFNs for " +
                  std::to_string(n * K) + " selections");
    }
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
  int64_t n_ff_exp_ = 0;
  int64_t max_ff_ = 0;  // widest dense / shared FFN
  std::unique_ptr<VramExpertPool> pool_;
  uint32_t n_ctx_ = 0;
  uint32_t n_past_ = 0;
  DeviceBuffer kv_;
  DeviceBuffer x_, xn_, tmp_, tmp2_, g_, u_, rl_, eg_, eu_, ey_, logits_;
  PinnedBuffer h_rl_;
  UploadArena arena_;
  RoutingObserver observer_;
  BackendStats stats_;
};

}  // namespace

bool cuda_backend_supports(const ModelConfig& cfg) {
  return cfg.arch == "deepseek2" || cfg.arch == "qwen3moe" || cfg.arch == "llama";
}

bool cuda_backend_usable(const ModelSource& model) {
  return cuda_backend_supports(model.config()) && !query_devices().devices.empty();
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const ModelSource> model, const EngineSettings& settings) {
  if (!model) throw Error("make_cuda_backend: no model");
  return std::make_unique<CudaBackend>(std::move(model), settings);
}

void register_cuda_backend() { register_backend("cuda", make_cuda_backend, cuda_backend_usable); }

}  // namespace moepack::gpu
