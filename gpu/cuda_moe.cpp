// See cuda_moe.h. Mirrors core/cpu_moe.cpp's run_routed_experts step by step: group the
// (token, selection) pairs by expert, fetch each distinct expert once, evaluate gate / up /
// SwiGLU / down for all its tokens, then add the K weighted outputs per token in k order.
#include "gpu/cuda_moe.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/expert_pack.h"
#include "core/model_source.h"
#include "core/tensor_store.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels.h"
#include "gpu/tiled_experts.h"
#include "gpu/vram_expert_pool.h"

namespace moepack::gpu {

namespace {
size_t fbytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }
}  // namespace

CudaRoutedExperts::CudaRoutedExperts(const ModelSource& model, DeviceWeights& weights,
                                     std::function<bool(uint32_t)> is_moe, int64_t n_ff_exp)
    : model_(model), cfg_(model.config()), weights_(weights), n_ff_(n_ff_exp) {
  blocks_.resize(cfg_.n_layer);
  uint32_t first_moe = cfg_.n_layer;
  for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
    blocks_[il].moe = cfg_.n_expert > 0 && is_moe(il);
    if (blocks_[il].moe) first_moe = std::min(first_moe, il);
  }
  if (first_moe == cfg_.n_layer) return;
  const std::string gate_name = "blk." + std::to_string(first_moe) + ".ffn_gate_exps.weight";
  if (n_ff_ <= 0) {
    if (model_.is_pack()) {
      for (const auto& r : model_.pack()->layout().layers.at(0).roles) {
        if (r.role == "gate") n_ff_ = static_cast<int64_t>(r.ne[1]);
      }
    } else {
      n_ff_ = static_cast<int64_t>(weights_.tensors().shape(gate_name)[1]);
    }
  }
  if (n_ff_ <= 0) throw FormatError(model_.path(), gate_name, 0, "cannot determine the expert width");
  if (model_.is_pack()) return;
  const int64_t E = cfg_.n_embd, NE = cfg_.n_expert;
  for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
    if (!blocks_[il].moe) continue;
    const std::string p = "blk." + std::to_string(il) + ".";
    Block& b = blocks_[il];
    b.hg = weights_.add_stacked(p + "ffn_gate_exps.weight", E, n_ff_, NE);
    b.hu = weights_.add_stacked(p + "ffn_up_exps.weight", E, n_ff_, NE);
    b.hd = weights_.add_stacked(p + "ffn_down_exps.weight", n_ff_, E, NE);
  }
}

CudaRoutedExperts::~CudaRoutedExperts() = default;

void CudaRoutedExperts::bind(const EngineSettings& s) {
  const int64_t E = cfg_.n_embd;
  if (!model_.is_pack()) {
    for (Block& b : blocks_) {
      if (!b.moe) continue;
      b.gate = weights_.matrix(b.hg);
      b.up = weights_.matrix(b.hu);
      b.down = weights_.matrix(b.hd);
      b.rg = {b.gate.type, E, n_ff_, b.gate.row_bytes, 0};
      b.ru = {b.up.type, E, n_ff_, b.up.row_bytes, 0};
      b.rd = {b.down.type, n_ff_, E, b.down.row_bytes, 0};
    }
    choose_tiled(s.tiled_experts);
    tile_gguf_experts();
  } else {
    const ExpertPack& pack = *model_.pack();
    const auto& layout = pack.layout();
    const std::string file = pack.manifest_path();
    for (uint32_t l = 0; l < layout.layers.size(); ++l) {
      const PackLayer& pl = layout.layers[l];
      const std::string field = "layers[" + std::to_string(l) + "]";
      if (pl.block >= cfg_.n_layer || !blocks_[pl.block].moe || pl.n_experts != cfg_.n_expert) {
        throw FormatError(file, field, 0,
                          "blk." + std::to_string(pl.block) + " with " + std::to_string(pl.n_experts) +
                              " experts does not match the model");
      }
      Block& b = blocks_[pl.block];
      b.pack_layer = l;
      block_of_layer_.resize(layout.layers.size(), 0);
      block_of_layer_[l] = pl.block;
      int found = 0;
      for (const PackRole& r : pl.roles) {
        const auto want = [&](int64_t ne0, int64_t ne1, Role& dst) {
          if (r.ne[0] != static_cast<uint64_t>(ne0) || r.ne[1] != static_cast<uint64_t>(ne1) || r.ne[2] != 1) {
            throw FormatError(file, field + ".roles." + r.role, 0, "unexpected shape");
          }
          const auto rb = ggml_row_bytes(r.type, static_cast<uint64_t>(ne0));
          if (!rb) throw FormatError(file, field + ".roles." + r.role, 0, "bad row size");
          dst = {r.type, ne0, ne1, *rb, r.offset};
          ++found;
        };
        if (r.role == "gate") {
          want(E, n_ff_, b.rg);
        } else if (r.role == "up") {
          want(E, n_ff_, b.ru);
        } else if (r.role == "down") {
          want(n_ff_, E, b.rd);
        } else {
          throw FormatError(file, field + ".roles", 0, "role '" + r.role + "' is not supported by the engine (gate, up, down)");
        }
      }
      if (found != 3) throw FormatError(file, field + ".roles", 0, "needs gate, up and down");
    }
    for (uint32_t il = 0; il < cfg_.n_layer; ++il) {
      if (blocks_[il].moe && blocks_[il].rg.ne0 == 0) {
        throw FormatError(file, "layers", 0, "blk." + std::to_string(il) + " has no experts in the pack");
      }
    }
    choose_tiled(s.tiled_experts);
    bool any_tiled = false;
    for (const Block& b : blocks_) any_tiled = any_tiled || b.rg.tiled || b.ru.tiled || b.rd.tiled;
    if (any_tiled) {
      // Allocated before the pool sizes itself from the free VRAM.
      uint64_t most = 0;
      for (uint32_t l = 0; l < layout.layers.size(); ++l) most = std::max(most, pack.stride(l));
      any_tiled = scratch_or_untiled(tile_scratch_, most, "the scratch block of the tiled experts' delivery");
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
    ps.prefetch_slots = s.prefetch_experts ? cfg_.n_expert_used : 0;
    ps.ram_tier_bytes =
        s.cache_ram_mib == EngineSettings::kCacheRamAuto ? kRamTierAuto : s.cache_ram_mib << 20;
    ps.ram_tier_admission = parse_tier_admission(s.cache_ram_admission, "setting cache_ram_admission");
    pool_ = std::make_unique<VramExpertPool>(pack, ps, cfg_.n_expert_used);
    if (any_tiled) {
      pool_->set_delivery([this](uint32_t layer, uint8_t* slot, const uint8_t* pinned, uint64_t bytes,
                                 cudaStream_t c) { deliver(layer, slot, pinned, bytes, c); });
    }
  }
  for (const Block& b : blocks_) {
    if (!b.moe) continue;
    for (const Role* r : {&b.rg, &b.ru, &b.rd}) {
      if (!gpu_type_supported(r->type)) {
        throw Error("the CUDA backend has no kernel for routed expert type " +
                    std::string(ggml_type_name(r->type)));
      }
    }
  }
  if (pool_) load_every_expert();
  if (cfg_.n_expert > 0) {
    ffn_sync_.allocate(
        static_cast<size_t>(gemv_ffn_sync_ints(static_cast<int32_t>(cfg_.n_expert))) * sizeof(int32_t),
        "expert FFN counters");
    MOEPACK_CUDA_CHECK(cudaMemset(ffn_sync_.as<void>(), 0, ffn_sync_.size()));
    MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());  // the zeros before any stream's first launch
  }
  if (resident() && cfg_.n_expert_used > 0) {
    const int32_t K = static_cast<int32_t>(cfg_.n_expert_used);
    std::vector<int32_t> ints;
    for (int32_t i = 0; i <= K; ++i) ints.push_back(i);
    for (int32_t i = 0; i <= 2 * K; ++i) ints.push_back(i);
    ints.resize(ints.size() + 2 * static_cast<size_t>(K), 0);
    decode_ints_.allocate(ints.size() * sizeof(int32_t), "decode expert offsets");
    MOEPACK_CUDA_CHECK(cudaMemcpy(decode_ints_.as<void>(), ints.data(), ints.size() * sizeof(int32_t),
                                  cudaMemcpyHostToDevice));
  }
}

void CudaRoutedExperts::choose_tiled(const std::string& mode) {
  for (Block& b : blocks_) {
    if (!b.moe) continue;
    const std::pair<Role*, const uint8_t*> roles[] = {
        {&b.rg, b.gate.data}, {&b.ru, b.up.data}, {&b.rd, b.down.data}};
    for (const auto& [r, data] : roles) {
      // (GGUF path: the stacked tensor's base; its matrices follow at multiples of 16 rows.)
      r->tiled = tiled_expert(mode, r->type, r->ne0, r->ne1, r->row_bytes,
                              r->offset + static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data)));
    }
  }
}

bool CudaRoutedExperts::scratch_or_untiled(DeviceBuffer& buf, uint64_t bytes, const char* what) {
  try {
    buf.allocate(bytes, what);
    return true;
  } catch (const DeviceLostError&) {
    throw;
  } catch (const Error& e) {
    std::fprintf(stderr, "moepack: routed experts stay in the GGUF layout (%s)\n", e.what());
    choose_tiled("off");
    return false;
  }
}

void CudaRoutedExperts::tile_gguf_experts() {
  // Each stacked tensor a group of matrices at a time: copied to a scratch buffer of at most
  // 64 MiB (one matrix at least), permuted back into place.
  constexpr uint64_t kScratch = 64ull << 20;
  const uint64_t n = cfg_.n_expert;
  uint64_t need = 0;
  for (const Block& b : blocks_) {
    for (const Role* r : {&b.rg, &b.ru, &b.rd}) {
      const uint64_t mat = static_cast<uint64_t>(r->ne1) * r->row_bytes;
      if (b.moe && r->tiled) need = std::max(need, std::clamp(kScratch / mat, uint64_t{1}, n) * mat);
    }
  }
  if (need == 0) return;
  DeviceBuffer scratch;
  if (!scratch_or_untiled(scratch, need, "the scratch of the experts' tiled layout")) return;
  Stream st;
  for (Block& b : blocks_) {
    if (!b.moe) continue;
    const std::pair<const Role*, const uint8_t*> roles[] = {
        {&b.rg, b.gate.data}, {&b.ru, b.up.data}, {&b.rd, b.down.data}};
    for (const auto& [r, data] : roles) {
      if (!r->tiled) continue;
      const uint64_t mat = static_cast<uint64_t>(r->ne1) * r->row_bytes;
      const uint64_t per = need / mat;
      for (uint64_t m0 = 0; m0 < n; m0 += per) {
        const uint64_t k = std::min(per, n - m0);
        uint8_t* at = const_cast<uint8_t*>(data) + m0 * mat;  // this class's own tensor
        MOEPACK_CUDA_CHECK(
            cudaMemcpyAsync(scratch.as<uint8_t>(), at, k * mat, cudaMemcpyDeviceToDevice, st.get()));
        repack_tiled(r->type, r->ne0, r->ne1, r->row_bytes, scratch.as<uint8_t>(), at,
                     static_cast<int64_t>(k), st.get());
      }
    }
  }
  MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st.get()));
}

void CudaRoutedExperts::deliver(uint32_t layer, uint8_t* slot, const uint8_t* pinned, uint64_t bytes,
                                cudaStream_t copy) {
  const Block& b = blocks_.at(block_of_layer_.at(layer));
  std::array<TiledRole, 3> roles;
  const Role* of[3] = {&b.rg, &b.ru, &b.rd};
  for (size_t i = 0; i < 3; ++i)
    roles[i] = {of[i]->offset, of[i]->type, of[i]->ne0, of[i]->ne1, of[i]->row_bytes, of[i]->tiled};
  deliver_block(roles, slot, pinned, bytes, tile_scratch_.as<uint8_t>(), tile_scratch_.size(), copy);
}

ExpertBases CudaRoutedExperts::bases(uint32_t il) const {
  if (!resident() || il >= blocks_.size() || !blocks_[il].moe) {
    throw Error("internal: blk." + std::to_string(il) + " has no resident routed experts");
  }
  if (pool_) {
    ExpertBases t;
    t.table = expert_table_.as<const uint8_t*>() + static_cast<size_t>(il) * 3 * cfg_.n_expert;
    return t;
  }
  const Block& b = blocks_[il];
  const uint64_t ff = static_cast<uint64_t>(n_ff_), E = static_cast<uint64_t>(cfg_.n_embd);
  // As experts_of(): expert e's matrices at e times a matrix's bytes.
  return {b.gate.data, b.up.data, b.down.data, ff * b.rg.row_bytes, ff * b.ru.row_bytes, E * b.rd.row_bytes};
}

uint64_t CudaRoutedExperts::run_decode_on_device(uint32_t il, const float* x, const DeviceChoice& c,
                                                 float limit, float* out, cudaStream_t st) {
  if (!resident() || il >= blocks_.size() || !blocks_[il].moe || decode_ints_.size() == 0) {
    throw Error("internal: blk." + std::to_string(il) + " cannot run from a choice made on the GPU");
  }
  const Block& b = blocks_[il];
  const int64_t E = cfg_.n_embd, FF = n_ff_;
  const int32_t K = static_cast<int32_t>(cfg_.n_expert_used);
  if (eg_.size() < fbytes(2 * K * FF) || ey_.size() < fbytes(K * E)) {
    throw Error("internal: CudaRoutedExperts::reserve(1) was not called");
  }
  // run() with one token: K groups of one pair each (pair = the expert's rank), gate and up in one
  // launch of 2K groups when they share a type and shape. The first launch reads the tables the
  // route kernel wrote, so it is no programmatic dependent launch (tables_from_kernel).
  const uint8_t* const* table = c.table;
  const int32_t* grp_off = decode_ints_.as<int32_t>();  // 0..K
  const int32_t* off2 = grp_off + K + 1;                // 0..2K
  const int32_t* x_rows = off2 + 2 * K + 1;             // 2K zeros
  float* eg = eg_.as<float>();
  float* eu = eg + K * FF;
  const bool fused = b.rg.type == b.ru.type && b.rg.row_bytes == b.ru.row_bytes && b.rg.ne0 == b.ru.ne0 &&
                     b.rg.ne1 == b.ru.ne1 && b.rg.tiled == b.ru.tiled;
  if (fused && one_launch_ffn(b)) {
    ffn_in_one_launch(b, table, grp_off, K, x_rows, x, limit, eg, ey_.as<float>(), true, st);
    combine_experts(ey_.as<float>(), c.pair_of, c.weights, 1, K, E, out, st);
    return static_cast<uint64_t>(K);
  }
  if (fused && gemv_swiglu_fusable(b.rg.type, b.rg.ne0, b.rg.ne1, b.rg.tiled)) {
    gemv_experts_swiglu(b.rg.type, b.rg.ne0, b.rg.ne1, b.rg.row_bytes, table, grp_off, K, 1, x_rows, x, E,
                        limit, eg, FF, st, true, b.rg.tiled);
  } else {
    if (fused) {
      gemv_experts(b.rg.type, b.rg.ne0, b.rg.ne1, b.rg.row_bytes, table, off2, 2 * K, 1, x_rows, x, E, eg, FF,
                   st, nullptr, 0, true, b.rg.tiled);
    } else {
      gemv_experts(b.rg.type, b.rg.ne0, b.rg.ne1, b.rg.row_bytes, table, grp_off, K, 1, x_rows, x, E, eg, FF,
                   st, nullptr, 0, true, b.rg.tiled);
      gemv_experts(b.ru.type, b.ru.ne0, b.ru.ne1, b.ru.row_bytes, table + K, grp_off, K, 1, x_rows, x, E, eu,
                   FF, st, nullptr, 0, true, b.ru.tiled);
    }
    swiglu_clamped(eg, eu, K * FF, limit, eg, st);
  }
  gemv_role(b.rd, table + 2 * K, grp_off, K, 1, nullptr, eg, FF, ey_.as<float>(), E, st);
  combine_experts(ey_.as<float>(), c.pair_of, c.weights, 1, K, E, out, st);
  return static_cast<uint64_t>(K);
}

void CudaRoutedExperts::load_every_expert() {
  const int64_t X = cfg_.n_expert;
  uint64_t total = 0;
  for (const Block& b : blocks_) total += b.moe ? static_cast<uint64_t>(X) : 0;
  if (total == 0 || pool_->slot_count() < total) return;
  std::vector<uint32_t> ids(static_cast<size_t>(X));
  std::iota(ids.begin(), ids.end(), 0u);
  std::vector<const uint8_t*> table(blocks_.size() * 3 * static_cast<size_t>(X), nullptr);
  Stream load;
  try {
    double io_wait = 0.0;
    for (const Block& b : blocks_) {
      if (!b.moe) continue;
      pool_->acquire(b.pack_layer, ids, load.get(), &io_wait);
      pool_->release(load.get());
    }
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(load.get()));  // every slot's copy is done
    pool_->end_step();
  } catch (const DeviceLostError&) {
    throw;
  } catch (const Error& e) {
    cudaStreamSynchronize(load.get());
    pool_->end_step();
    // As before: the host chooses, and a bad expert is reported when it is used.
    std::fprintf(stderr,
                 "moepack: the experts were not all read at load (%s); reading them as they are used\n",
                 e.what());
    return;
  }
  // Every expert where the pool says it is, and nothing evicted on the way (a slot for each).
  for (size_t il = 0; il < blocks_.size(); ++il) {
    const Block& b = blocks_[il];
    if (!b.moe) continue;
    for (int64_t e = 0; e < X; ++e) {
      const uint8_t* p = pool_->resident_block(b.pack_layer, static_cast<uint32_t>(e));
      if (!p) return;
      const size_t at = il * 3 * static_cast<size_t>(X) + static_cast<size_t>(e);
      table[at] = p + b.rg.offset;
      table[at + X] = p + b.ru.offset;
      table[at + 2 * X] = p + b.rd.offset;
    }
  }
  expert_table_.allocate(table.size() * sizeof(const uint8_t*), "the table of experts in VRAM");
  MOEPACK_CUDA_CHECK(cudaMemcpy(expert_table_.as<void>(), table.data(), table.size() * sizeof(const uint8_t*),
                                cudaMemcpyHostToDevice));
  all_in_vram_ = true;
}

bool CudaRoutedExperts::reserve(int64_t n_tokens) {
  if (n_ff_ <= 0) return false;
  const int64_t pairs = n_tokens * cfg_.n_expert_used;
  const bool grew = eg_.ensure(fbytes(2 * pairs * n_ff_), "expert activations");
  return ey_.ensure(fbytes(pairs * cfg_.n_embd), "expert outputs") || grew;
}

void CudaRoutedExperts::prefetch(uint32_t block, std::span<const uint32_t> experts, double* io_wait_ms) {
  if (!prefetching() || block >= blocks_.size() || !blocks_[block].moe) return;
  pool_->prefetch(blocks_[block].pack_layer, experts, {}, io_wait_ms);
}

bool CudaRoutedExperts::prefetching() const { return pool_ && pool_->prefetch_slots() > 0; }

uint32_t CudaRoutedExperts::next_moe_block(uint32_t block) const {
  for (size_t j = static_cast<size_t>(block) + 1; j < blocks_.size(); ++j) {
    if (blocks_[j].moe) return static_cast<uint32_t>(j);
  }
  return static_cast<uint32_t>(blocks_.size());
}

void CudaRoutedExperts::end_step() {
  if (pool_) pool_->end_step();
}

void CudaRoutedExperts::add_stats(BackendStats& s) const {
  if (!pool_) return;
  const VramPoolCounters c = pool_->counters();
  s.cache_hits = c.cache.cache_hits;
  // Selections routed on the GPU never reach the pool; with every expert in VRAM each is a hit.
  if (all_in_vram_ && s.expert_selections > host_selections_)
    s.cache_hits += s.expert_selections - host_selections_;
  s.cache_misses = c.cache.cache_misses;
  s.cache_evictions = c.cache.cache_evictions;
  s.prefetch_reads = c.cache.prefetches;
  s.prefetch_hits = c.cache.prefetch_hits;
  s.pack_read_bytes = c.pack_read_bytes;
  s.h2d_bytes = c.h2d_bytes;
  s.ram_tier_hits = c.ram.hits;
  s.ram_tier_demotions = c.ram.demotions;
  s.ram_tier_slots = c.ram_slots;
  s.d2h_bytes = c.d2h_bytes;
  s.fallback_count = c.fallback_count;
  s.io_errors = c.io_errors;
  s.cache_slots = pool_->slot_count();
  s.cache_slot_bytes = pool_->slot_bytes();
}

std::vector<CudaRoutedExperts::Ptrs> CudaRoutedExperts::experts_of(uint32_t il, const std::vector<uint32_t>& ids,
                                                                   size_t first, size_t m, cudaStream_t st,
                                                                   double* io_wait) {
  const Block& b = blocks_[il];
  std::vector<Ptrs> out;
  out.reserve(m);
  if (pool_) {
    const auto blocks = pool_->acquire(b.pack_layer, std::span<const uint32_t>(ids.data() + first, m), st, io_wait);
    for (const uint8_t* p : blocks) out.push_back({p + b.rg.offset, p + b.ru.offset, p + b.rd.offset});
    return out;
  }
  const uint64_t ff = static_cast<uint64_t>(n_ff_), E = static_cast<uint64_t>(cfg_.n_embd);
  for (size_t i = first; i < first + m; ++i) {
    const uint64_t e = ids[i];
    out.push_back({b.gate.data + e * ff * b.rg.row_bytes, b.up.data + e * ff * b.ru.row_bytes,
                   b.down.data + e * E * b.rd.row_bytes});
  }
  return out;
}

bool CudaRoutedExperts::one_launch_ffn(const Block& b) const {
  return b.rg.type == b.ru.type && b.rg.type == b.rd.type && b.rg.tiled && b.ru.tiled && b.rd.tiled &&
         b.rg.ne0 == b.ru.ne0 && b.rg.ne1 == b.ru.ne1 && b.rd.ne0 == b.rg.ne1 && b.rd.ne1 == b.rg.ne0 &&
         ffn_sync_.size() > 0 && gemv_experts_ffn_fusable(b.rg.type, b.rg.ne0, b.rg.ne1);
}

void CudaRoutedExperts::ffn_in_one_launch(const Block& b, const uint8_t* const* table, const int32_t* grp_off,
                                          int32_t groups, const int32_t* x_row, const float* x, float limit,
                                          float* h, float* y, bool tables_from_kernel, cudaStream_t st) {
  const int64_t E = cfg_.n_embd, FF = n_ff_;
  GemvBatch a;
  a.type = b.rg.type;
  a.ne0 = b.rg.ne0;
  a.ne1 = b.rg.ne1;
  a.row_bytes = b.rg.row_bytes;
  a.w_table = table;
  a.grp_off = grp_off;
  a.x_row = x_row;
  a.x = x;
  a.x_stride = E;
  a.y = h;
  a.y_stride = FF;
  a.n_groups = groups;
  a.max_pairs = 1;
  a.swiglu_epilogue = true;
  a.swiglu_limit = limit;
  a.tables_from_kernel = tables_from_kernel;
  a.w_tiled = true;
  GemvBatch d;
  d.type = b.rd.type;
  d.ne0 = b.rd.ne0;
  d.ne1 = b.rd.ne1;
  d.row_bytes = b.rd.row_bytes;
  d.w_table = table + 2 * static_cast<ptrdiff_t>(groups);
  d.grp_off = grp_off;
  d.x = h;
  d.x_stride = FF;
  d.y = y;
  d.y_stride = E;
  d.n_groups = groups;
  d.max_pairs = 1;
  d.tables_from_kernel = tables_from_kernel;
  d.w_tiled = true;
  gemv_experts_ffn(a, d, ffn_sync_.as<int32_t>(), st);
}

void CudaRoutedExperts::gemv_role(const Role& r, const uint8_t* const* table, const int32_t* grp_off,
                                  int32_t n_groups, int32_t max_pairs, const int32_t* x_row, const float* x,
                                  int64_t x_stride, float* y, int64_t y_stride, cudaStream_t st,
                                  const int32_t* grp_off_host) {
  gemv_experts(r.type, r.ne0, r.ne1, r.row_bytes, table, grp_off, n_groups, max_pairs, x_row, x, x_stride, y,
               y_stride, st, nullptr, 0, false, r.tiled, grp_off_host);
}

uint64_t CudaRoutedExperts::run(uint32_t il, const float* x, int64_t n, const int32_t* ids, const float* w,
                                float limit, float* out, UploadArena& arena, cudaStream_t st, double* io_wait) {
  if (il >= blocks_.size() || !blocks_[il].moe) {
    throw Error("internal: blk." + std::to_string(il) + " has no routed experts");
  }
  const Block& b = blocks_[il];
  const int64_t E = cfg_.n_embd, K = cfg_.n_expert_used, FF = n_ff_;
  if (eg_.size() < fbytes(2 * n * K * FF) || ey_.size() < fbytes(n * K * E)) {
    throw Error("internal: CudaRoutedExperts::reserve(" + std::to_string(n) + ") was not called");
  }
  host_selections_ += static_cast<uint64_t>(n * K);
  std::map<uint32_t, std::vector<int64_t>> by_expert;  // expert -> selections t * K + k
  for (int64_t sel = 0; sel < n * K; ++sel) {
    if (ids[sel] < 0 || static_cast<uint32_t>(ids[sel]) >= cfg_.n_expert) {
      throw Error("blk." + std::to_string(il) + ": routed expert id " + std::to_string(ids[sel]) + " out of range");
    }
    by_expert[static_cast<uint32_t>(ids[sel])].push_back(sel);
  }
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
  // Gate and up in one launch when they share a type and shape (always, in the models seen).
  const bool fused = b.rg.type == b.ru.type && b.rg.row_bytes == b.ru.row_bytes && b.rg.ne0 == b.ru.ne0 &&
                     b.rg.ne1 == b.ru.ne1 && b.rg.tiled == b.ru.tiled;
  // Every table of the block goes to the device in one copy per batch (UploadArena::stage,
  // flushed before a batch's first launch): the pair lists and weights of the combine now, each
  // batch's expert table and offsets below.
  const int32_t* d_tok_of = fused ? nullptr : arena.stage(tok_of.data(), tok_of.size(), st);
  const int32_t* d_pair_of = arena.stage(pair_of.data(), pair_of.size(), st);
  const float* d_wts = arena.stage(w, static_cast<size_t>(n * K), st);

  const size_t batch =
      pool_ ? std::max<size_t>(1, std::min<size_t>(pool_->slot_count(), unique.size())) : unique.size();
  uint64_t computed = 0;
  for (size_t first = 0; first < unique.size(); first += batch) {
    const size_t m = std::min(batch, unique.size() - first);
    const std::vector<Ptrs> ptrs = experts_of(il, unique, first, m, st, io_wait);
    std::vector<const uint8_t*> table(3 * m);
    // grp_off (m + 1); fused: then the gate+up launch's group offsets (2m + 1) and x rows.
    std::vector<int32_t> ints(m + 1);
    int32_t* grp_off = ints.data();
    int32_t max_pairs = 0;
    for (size_t i = 0; i < m; ++i) {
      table[i] = ptrs[i].gate;
      table[m + i] = ptrs[i].up;
      table[2 * m + i] = ptrs[i].down;
      grp_off[i] = first_pair[first + i];
      max_pairs = std::max(max_pairs, first_pair[first + i + 1] - first_pair[first + i]);
    }
    grp_off[m] = first_pair[first + m];
    const int32_t gm = static_cast<int32_t>(m);
    const int64_t p0 = grp_off[0], p1 = grp_off[m], np = p1 - p0;
    if (fused) {
      // One launch of 2m groups: gate of the batch's experts, then up of the same experts; pairs
      // numbered from p0 (gate: j - p0, up: np + j - p0), so x rows and outputs follow suit.
      ints.resize(m + 1 + 2 * m + 1 + static_cast<size_t>(2 * np));
      grp_off = ints.data();
      int32_t* off2 = grp_off + m + 1;
      int32_t* tok2 = off2 + 2 * m + 1;
      for (size_t i = 0; i <= m; ++i) off2[i] = grp_off[i] - static_cast<int32_t>(p0);
      for (size_t i = 1; i <= m; ++i) off2[m + i] = static_cast<int32_t>(np) + off2[i];
      for (int64_t q = 0; q < np; ++q) tok2[q] = tok2[np + q] = tok_of[static_cast<size_t>(p0 + q)];
    }
    const uint8_t* const* d_table = arena.stage(table.data(), table.size(), st);
    const int32_t* d_off = arena.stage(ints.data(), ints.size(), st);
    arena.flush(st);
    // Gate results in eg_ rows [p0, p1), up results in rows [p1, p1 + np) (below 2 n K rows).
    float* eg = eg_.as<float>();
    float* eu = eg + np * FF;  // row p of up at eu + p * FF
    // At decode (one pair an expert) SwiGLU is the gate + up launch's epilogue (the same values
    // bit for bit, one launch fewer: GemvBatch::swiglu_epilogue), else its own launch.
    if (fused && max_pairs == 1 && one_launch_ffn(b)) {
      // Gate + up and down in one launch, pairs numbered from p0 as in the launch below.
      const int32_t* d_off2 = d_off + m + 1;
      ffn_in_one_launch(b, d_table, d_off2, gm, d_off2 + 2 * m + 1, x, limit, eg + p0 * FF,
                        ey_.as<float>() + p0 * E, false, st);
      if (pool_) pool_->release(st);
      computed += static_cast<uint64_t>(np);
      continue;
    }
    if (fused && max_pairs == 1 && gemv_swiglu_fusable(b.rg.type, b.rg.ne0, b.rg.ne1, b.rg.tiled)) {
      const int32_t* d_off2 = d_off + m + 1;  // the first m + 1 offsets (pairs from 0), x rows
      gemv_experts_swiglu(b.rg.type, b.rg.ne0, b.rg.ne1, b.rg.row_bytes, d_table, d_off2, gm, max_pairs,
                          d_off2 + 2 * m + 1, x, E, limit, eg + p0 * FF, FF, st, false, b.rg.tiled);
    } else {
      if (fused) {
        const int32_t* d_off2 = d_off + m + 1;
        gemv_role(b.rg, d_table, d_off2, 2 * gm, max_pairs, d_off2 + 2 * m + 1, x, E, eg + p0 * FF, FF, st,
                  grp_off + m + 1);
      } else {
        gemv_role(b.rg, d_table, d_off, gm, max_pairs, d_tok_of, x, E, eg, FF, st, grp_off);
        gemv_role(b.ru, d_table + m, d_off, gm, max_pairs, d_tok_of, x, E, eu, FF, st, grp_off);
      }
      swiglu_clamped(eg + p0 * FF, eu + p0 * FF, np * FF, limit, eg + p0 * FF, st);
    }
    gemv_role(b.rd, d_table + 2 * m, d_off, gm, max_pairs, nullptr, eg, FF, ey_.as<float>(), E, st, grp_off);
    if (pool_) pool_->release(st);
    computed += static_cast<uint64_t>(np);
  }
  arena.flush(st);  // (flushed with the first batch already; nothing is left)
  combine_experts(ey_.as<float>(), d_pair_of, d_wts, static_cast<int32_t>(n), static_cast<int32_t>(K), E, out, st);
  // Exact routing: every (token, expert) the router picked was computed, top-k unchanged.
  if (computed != static_cast<uint64_t>(n * K)) {
    throw Error("internal: blk." + std::to_string(il) + " computed " + std::to_string(computed) + " expert FFNs for " +
                std::to_string(n * K) + " selections");
  }
  return computed;
}

}  // namespace moepack::gpu
