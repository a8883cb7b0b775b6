#include "core/expert_provider.h"

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/expert_store.h"
#include "core/model_source.h"
#include "core/tensor_store.h"
#include "core/victim_tier.h"

namespace moepack {

namespace {

// Matrix e of a stacked view whose matrices have `rows` rows each.
WeightView slice(const WeightView& w, int64_t rows, uint32_t e) {
  WeightView s = w;
  s.ne1 = rows;
  s.data = w.data + static_cast<size_t>(e) * static_cast<size_t>(rows) * w.row_bytes;
  return s;
}

class ResidentExperts final : public ExpertProvider {
 public:
  ResidentExperts(const ModelConfig& cfg, TensorStore& t, int64_t n_ff_exp)
      : n_embd_(cfg.n_embd), n_ff_(n_ff_exp), n_expert_(cfg.n_expert) {
    const int64_t n_embd = cfg.n_embd, n_exp = cfg.n_expert;
    for (uint32_t il = 0; il < cfg.n_layer; ++il) {
      if (!cfg.is_moe_layer(il)) continue;
      const std::string p = "blk." + std::to_string(il) + ".";
      Layer& L = layers_[il];
      L.gate = t.stacked(p + "ffn_gate_exps.weight", n_embd, n_ff_exp, n_exp);
      L.up = t.stacked(p + "ffn_up_exps.weight", n_embd, n_ff_exp, n_exp);
      L.down = t.stacked(p + "ffn_down_exps.weight", n_ff_exp, n_embd, n_exp);
    }
  }
  uint32_t max_batch() const override { return ~0u; }
  std::vector<ExpertFfn> acquire(uint32_t block, std::span<const uint32_t> experts, double*) override {
    const auto it = layers_.find(block);
    if (it == layers_.end()) throw Error("blk." + std::to_string(block) + " has no routed experts");
    std::vector<ExpertFfn> out;
    out.reserve(experts.size());
    for (uint32_t e : experts) {
      if (e >= n_expert_) throw Error("expert " + std::to_string(e) + " out of range");
      const Layer& L = it->second;
      out.push_back({slice(L.gate, n_ff_, e), slice(L.up, n_ff_, e), slice(L.down, n_embd_, e)});
    }
    return out;
  }
  void end_step() override {}
  void fill_stats(BackendStats&) const override {}

 private:
  struct Layer {
    WeightView gate, up, down;
  };
  int64_t n_embd_, n_ff_;
  uint32_t n_expert_;
  std::map<uint32_t, Layer> layers_;
};

class PackExperts final : public ExpertProvider {
 public:
  PackExperts(const ModelSource& model, const EngineSettings& s, int64_t n_ff_exp) : pack_(*model.pack()) {
    const ModelConfig& cfg = model.config();
    const auto& layout = pack_.layout();
    const std::string file = pack_.manifest_path();
    for (uint32_t l = 0; l < layout.layers.size(); ++l) {
      const PackLayer& pl = layout.layers[l];
      if (!cfg.is_moe_layer(pl.block) || pl.n_experts != cfg.n_expert) {
        throw FormatError(file, "layers[" + std::to_string(l) + "]", 0,
                          "blk." + std::to_string(pl.block) + " with " + std::to_string(pl.n_experts) +
                              " experts does not match the model (" + std::to_string(cfg.n_expert) +
                              " experts from blk." + std::to_string(cfg.n_layer_dense_lead) + ")");
      }
      Layer L;
      L.index = l;
      for (const PackRole& r : pl.roles) {
        const auto want = [&](int64_t ne0, int64_t ne1, Role& dst) {
          if (r.ne[0] != static_cast<uint64_t>(ne0) || r.ne[1] != static_cast<uint64_t>(ne1) || r.ne[2] != 1) {
            throw FormatError(file, "layers[" + std::to_string(l) + "].roles." + r.role, 0,
                              "shape [" + std::to_string(r.ne[0]) + ", " + std::to_string(r.ne[1]) +
                                  "], expected [" + std::to_string(ne0) + ", " + std::to_string(ne1) + "]");
          }
          const auto rb = ggml_row_bytes(r.type, static_cast<uint64_t>(ne0));
          if (!rb) throw FormatError(file, "layers[" + std::to_string(l) + "].roles." + r.role, 0, "bad row size");
          dst = {r.type, ne0, ne1, static_cast<size_t>(*rb), r.offset, true};
        };
        if (r.role == "gate") {
          want(cfg.n_embd, n_ff_exp, L.gate);
        } else if (r.role == "up") {
          want(cfg.n_embd, n_ff_exp, L.up);
        } else if (r.role == "down") {
          want(n_ff_exp, cfg.n_embd, L.down);
        } else {
          throw FormatError(file, "layers[" + std::to_string(l) + "].roles", 0,
                            "role '" + r.role + "' is not supported by the engine (gate, up, down)");
        }
      }
      if (!L.gate.present || !L.up.present || !L.down.present) {
        throw FormatError(file, "layers[" + std::to_string(l) + "].roles", 0, "needs gate, up and down");
      }
      layers_[pl.block] = L;
    }
    for (uint32_t il = 0; il < cfg.n_layer; ++il) {
      if (cfg.is_moe_layer(il) && !layers_.count(il)) {
        throw FormatError(file, "layers", 0, "blk." + std::to_string(il) + " has no experts in the pack");
      }
    }
    ExpertStoreSettings st;
    st.cache_bytes = s.cache_bytes ? s.cache_bytes : s.cache_vram_mib << 20;
    st.reserve_bytes = s.cache_vram_reserve_mib << 20;
    st.available_bytes = available_ram_bytes();
    st.reader.direct_io = s.direct_io;
    st.reader.read_splits = s.read_splits;
    st.reader.queue_depth = s.queue_depth;
    st.policy = s.cache_policy;
    st.verify_pack_sha256 = s.verify_pack_sha256;
    store_ = std::make_unique<ExpertStore>(pack_, st, cfg.n_expert_used);
    prefetching_ = s.prefetch_experts;
  }

  uint32_t max_batch() const override { return store_->slot_count(); }

  std::vector<ExpertFfn> acquire(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms) override {
    const auto it = layers_.find(block);
    if (it == layers_.end()) throw Error("blk." + std::to_string(block) + " has no routed experts in the pack");
    const Layer& L = it->second;
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<const uint8_t*> blocks = store_->acquire(L.index, experts);
    if (io_wait_ms) {
      *io_wait_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    std::vector<ExpertFfn> out;
    out.reserve(blocks.size());
    for (const uint8_t* b : blocks) out.push_back({view(L.gate, b), view(L.up, b), view(L.down, b)});
    return out;
  }
  void acquire_each(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms,
                    const ExpertReady& ready, const std::function<void()>& all_landed) override {
    const auto it = layers_.find(block);
    if (it == layers_.end())
      throw Error("blk." + std::to_string(block) + " has no routed experts in the pack");
    const Layer& L = it->second;
    const auto t0 = std::chrono::steady_clock::now();
    double inside_ms = 0;  // time in the caller's callbacks: compute, not waiting
    const auto timed = [&inside_ms](const auto& f) {
      const auto c0 = std::chrono::steady_clock::now();
      try {
        f();
      } catch (...) {
        inside_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
        throw;
      }
      inside_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
    };
    std::function<void()> landed;
    if (all_landed) landed = [&] { timed(all_landed); };
    store_->acquire_each(
        L.index, experts,
        [&](size_t i, const uint8_t* b) {
          timed([&] { ready(i, ExpertFfn{view(L.gate, b), view(L.up, b), view(L.down, b)}); });
        },
        landed);
    if (io_wait_ms) {
      *io_wait_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() -
          inside_ms;
    }
  }
  bool prefetching() const override { return prefetching_; }
  uint32_t prefetch(uint32_t block, std::span<const uint32_t> experts) override {
    if (!prefetching_) return 0;
    const auto it = layers_.find(block);
    if (it == layers_.end())
      throw Error("blk." + std::to_string(block) + " has no routed experts in the pack");
    return store_->prefetch(it->second.index, experts);
  }
  void end_step() override { store_->end_step(); }
  void fill_stats(BackendStats& s) const override {
    const ExpertStoreCounters c = store_->counters();
    s.cache_hits = c.cache.cache_hits;
    s.cache_misses = c.cache.cache_misses;
    s.cache_evictions = c.cache.cache_evictions;
    s.prefetch_reads = c.cache.prefetches;
    s.prefetch_hits = c.cache.prefetch_hits;
    s.pack_read_bytes = c.pack_read_bytes;
    s.fallback_count = c.fallback_count;
    s.io_errors = c.io_errors;
    s.cache_slots = store_->slot_count();
    s.cache_slot_bytes = store_->slot_bytes();
  }
  ResidencyMap residency() const override {
    ResidencyMap m;
    const auto& layers = pack_.layout().layers;
    m.n_layers = static_cast<uint32_t>(layers.size());
    for (const PackLayer& l : layers) m.n_experts = std::max(m.n_experts, l.n_experts);
    m.resident.assign(static_cast<size_t>(m.n_layers) * m.n_experts, 0);
    for (uint32_t l = 0; l < m.n_layers; ++l) {
      for (uint32_t e = 0; e < layers[l].n_experts; ++e) {
        if (store_->cache().slot_of(ExpertKey{l, e})) m.resident[static_cast<size_t>(l) * m.n_experts + e] = 1;
      }
    }
    return m;
  }

 private:
  struct Role {
    GgmlType type = GgmlType::F32;
    int64_t ne0 = 0, ne1 = 0;
    size_t row_bytes = 0;
    uint64_t offset = 0;
    bool present = false;
  };
  struct Layer {
    uint32_t index = 0;  // pack layer l
    Role gate, up, down;
  };
  static WeightView view(const Role& r, const uint8_t* block) {
    return WeightView{r.type, r.ne0, r.ne1, r.row_bytes, block + r.offset};
  }
  const ExpertPack& pack_;
  std::map<uint32_t, Layer> layers_;
  std::unique_ptr<ExpertStore> store_;
  bool prefetching_ = false;
};

}  // namespace

std::unique_ptr<ExpertProvider> make_resident_experts(const ModelConfig& cfg, TensorStore& tensors, int64_t n_ff_exp) {
  return std::make_unique<ResidentExperts>(cfg, tensors, n_ff_exp);
}

std::unique_ptr<ExpertProvider> make_pack_experts(const ModelSource& model, const EngineSettings& settings,
                                                  int64_t n_ff_exp) {
  if (!model.pack()) throw Error(model.path() + " is not an Expert Pack");
  return std::make_unique<PackExperts>(model, settings, n_ff_exp);
}

}  // namespace moepack
