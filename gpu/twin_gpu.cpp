// bench-twin on the GPU (twin_gpu.h).
#include "gpu/twin_gpu.h"

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/kernels.h"
#include "gpu/tiled_experts.h"
#include "gpu/upload_arena.h"
#include "gpu/vram_expert_pool.h"

namespace moepack::gpu {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One grouped launch over n_groups expert matrices of role r (gpu/kernels.h gemv_experts, as
// gpu/cuda_moe.cpp launches them): group i is the matrix at table[i] with the single pair i,
// which reads x row x_row[i] (x_row null: row i) and writes y row i.
void grouped_gemv(const PackRole& r, bool tiled, const uint8_t* const* table, const int32_t* grp_off,
                  int32_t n_groups, const int32_t* x_row, const float* x, float* y, cudaStream_t s) {
  const auto ne0 = static_cast<int64_t>(r.ne[0]), ne1 = static_cast<int64_t>(r.ne[1]);
  gemv_experts(r.type, ne0, ne1, r.bytes / r.ne[1], table, grp_off, n_groups, 1, x_row, x, ne0, y, ne1, s,
               nullptr, 0, false, tiled);
}

class TimingEvent {
 public:
  TimingEvent() { MOEPACK_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~TimingEvent() { cudaEventDestroy(e_); }
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace

bench::TwinRunResult run_twin_bench_cuda(const bench::TwinBenchOptions& o, bench::TwinBenchSetup& s) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    throw Error("bench-twin --backend cuda: no CUDA GPU was found");
  }
  const PackLayout& L = s.pack.layout();
  const int64_t E = static_cast<int64_t>(s.twin.shape->n_embd), FF = static_cast<int64_t>(s.twin.shape->n_ff);
  const uint32_t K = s.twin.top_k;
  for (const PackRole& r : L.layers[0].roles) {
    if (!gpu_type_supported(r.type))
      throw Error("bench-twin --backend cuda: no GPU kernel for " + std::string(ggml_type_name(r.type)));
  }
  VramPoolSettings ps;
  ps.cache_bytes = o.budget_bytes;
  ps.ram_tier_bytes = o.ram_tier_bytes;
  ps.ram_tier_admission = parse_tier_admission(o.ram_tier_admission, "bench-twin --ram-admission");
  ps.reader = o.reader;
  ps.policy = o.policy;
  ps.stage_slots = std::max<uint32_t>(8, K);
  // Roles in the tiled layout (gpu/tiled_experts.h), as the engine chooses them; a twin's layers
  // share one layout.
  std::vector<TiledRole> roles;
  for (const PackRole& r : L.layers[0].roles) {
    const auto ne0 = static_cast<int64_t>(r.ne[0]), ne1 = static_cast<int64_t>(r.ne[1]);
    const uint64_t rb = r.bytes / r.ne[1];
    roles.push_back(
        {r.offset, r.type, ne0, ne1, rb, tiled_expert(o.tiled_experts, r.type, ne0, ne1, rb, r.offset)});
  }
  bool any_tiled = false;
  for (const TiledRole& r : roles) any_tiled = any_tiled || r.tiled;
  DeviceBuffer scratch;
  if (any_tiled) scratch.allocate(L.max_stride, "the scratch block of the tiled experts' delivery");
  VramExpertPool pool(s.pack, ps, K);
  if (any_tiled) {
    pool.set_delivery([&](uint32_t, uint8_t* slot, const uint8_t* pinned, uint64_t bytes, cudaStream_t c) {
      deliver_block(roles, slot, pinned, bytes, scratch.as<uint8_t>(), scratch.size(), c);
    });
  }
  Stream stream;
  cudaStream_t st = stream.get();

  const auto fb = [](int64_t n) { return static_cast<size_t>(n) * sizeof(float); };
  DeviceBuffer d_x(fb(E), "twin hidden"), d_g(fb(2 * K * FF), "twin gate and up"),
      d_y(fb(K * E), "twin expert outputs"), d_out(fb(E), "twin layer output"), d_pair(K * sizeof(int32_t), "pairs"),
      d_w(fb(K), "weights");
  std::vector<float> x0(static_cast<size_t>(E));
  {
    std::mt19937_64 rng(o.seed ^ 0x68696464656eull);  // the CPU path's hidden vector
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (float& v : x0) v = n(rng);
  }
  std::vector<int32_t> pairs(K);
  std::vector<float> w(K, 1.0f / static_cast<float>(K));
  for (uint32_t k = 0; k < K; ++k) pairs[k] = static_cast<int32_t>(k);
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_pair.as<int32_t>(), pairs.data(), K * sizeof(int32_t), cudaMemcpyHostToDevice));
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_w.as<float>(), w.data(), fb(K), cudaMemcpyHostToDevice));
  std::vector<float> hx(static_cast<size_t>(E));
  // Group offsets 0..2K (one pair a group) and x rows (all 0: one token) for every launch.
  std::vector<int32_t> seq(2 * K + 1), zeros(2 * K, 0);
  for (uint32_t i = 0; i <= 2 * K; ++i) seq[i] = static_cast<int32_t>(i);
  DeviceBuffer d_seq(seq.size() * sizeof(int32_t), "group offsets"), d_zeros(zeros.size() * sizeof(int32_t), "x rows");
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_seq.as<int32_t>(), seq.data(), d_seq.size(), cudaMemcpyHostToDevice));
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_zeros.as<int32_t>(), zeros.data(), d_zeros.size(), cudaMemcpyHostToDevice));
  UploadArena arena;

  bench::TwinRunResult res;
  res.slots = pool.slot_count();
  res.slot_bytes = pool.slot_bytes();
  std::vector<bench::StepRouting> steps(s.steps);
  for (bench::StepRouting& r : steps) {
    if (!s.router->next(r)) throw Error("bench-twin: the routing source ended early");
  }
  std::vector<TimingEvent> ev_a(s.twin.layers), ev_b(s.twin.layers);
  VramPoolCounters prev{};
  for (uint32_t t = 0; t < s.steps; ++t) {
    const auto t0 = Clock::now();
    double io_ms = 0;
    arena.reset();  // the previous step ended with a stream sync
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(d_x.as<float>(), x0.data(), fb(E), cudaMemcpyHostToDevice, st));
    for (uint32_t l = 0; l < s.twin.layers; ++l) {
      const PackLayer& ly = L.layers[l];
      const std::vector<const uint8_t*> blocks = pool.acquire(l, steps[t][l], st, &io_ms);
      MOEPACK_CUDA_CHECK(cudaEventRecord(ev_a[l].get(), st));
      // As the engine launches a layer's experts (gpu/cuda_moe.cpp): gate and up of all m in
      // one launch when they share a type and shape, SwiGLU, then down of all m.
      const size_t m = blocks.size();
      const int32_t gm = static_cast<int32_t>(m);
      std::vector<const uint8_t*> table(3 * m);
      for (size_t k = 0; k < m; ++k) {
        for (size_t r = 0; r < 3; ++r) table[r * m + k] = blocks[k] + ly.roles[r].offset;
      }
      const uint8_t* const* d_table = arena.put(table.data(), table.size(), st);
      float* g = d_g.as<float>();
      float* u = g + m * FF;
      const PackRole &rg = ly.roles[0], &ru = ly.roles[1];
      if (rg.type == ru.type && rg.ne[0] == ru.ne[0] && rg.ne[1] == ru.ne[1] && rg.bytes == ru.bytes &&
          roles[0].tiled == roles[1].tiled) {
        grouped_gemv(rg, roles[0].tiled, d_table, d_seq.as<int32_t>(), 2 * gm, d_zeros.as<int32_t>(),
                     d_x.as<float>(), g, st);
      } else {
        grouped_gemv(rg, roles[0].tiled, d_table, d_seq.as<int32_t>(), gm, d_zeros.as<int32_t>(),
                     d_x.as<float>(), g, st);
        grouped_gemv(ru, roles[1].tiled, d_table + m, d_seq.as<int32_t>(), gm, d_zeros.as<int32_t>(),
                     d_x.as<float>(), u, st);
      }
      swiglu(g, u, static_cast<int64_t>(m) * FF, g, st);
      grouped_gemv(ly.roles[2], roles[2].tiled, d_table + 2 * m, d_seq.as<int32_t>(), gm, nullptr, g,
                   d_y.as<float>(), st);
      combine_experts(d_y.as<float>(), d_pair.as<int32_t>(), d_w.as<float>(), 1, static_cast<int32_t>(blocks.size()), E,
                      d_out.as<float>(), st);
      add_inplace(d_x.as<float>(), d_out.as<float>(), E, st);
      rms_norm(d_x.as<float>(), E, nullptr, E, 1e-6f, d_x.as<float>(), E, 1, st);
      MOEPACK_CUDA_CHECK(cudaEventRecord(ev_b[l].get(), st));
      pool.release(st);
      if (o.serial) MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
    }
    pool.end_step();
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(hx.data(), d_x.as<float>(), fb(E), cudaMemcpyDeviceToHost, st));
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
    double compute_s = 0;
    for (uint32_t l = 0; l < s.twin.layers; ++l) {
      float ms = 0;
      MOEPACK_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_a[l].get(), ev_b[l].get()));
      compute_s += ms / 1000.0;
    }
    for (float v : hx) {
      if (!std::isfinite(v)) throw Error("bench-twin --backend cuda: step " + std::to_string(t) + " produced a non-finite output");
    }
    res.checksum += bench::twin_checksum(hx.data(), E);
    const VramPoolCounters c = pool.counters();
    bench::TwinTotals one;
    one.steps = 1;
    for (const auto& ids : steps[t]) one.selections += ids.size();
    one.hits = c.cache.cache_hits - prev.cache.cache_hits;
    one.misses = c.cache.cache_misses - prev.cache.cache_misses;
    one.evictions = c.cache.cache_evictions - prev.cache.cache_evictions;
    one.ssd_bytes = c.pack_read_bytes - prev.pack_read_bytes;
    one.wall_s = since(t0);
    one.io_wait_s = io_ms / 1000.0;
    one.compute_s = compute_s;
    prev = c;
    bench::add_step(res.all, one);
    if (t >= o.warmup) bench::add_step(res.after_warmup, one);
  }
  const VramPoolCounters c = pool.counters();
  cudaDeviceProp prop{};
  int dev = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  nlohmann::json tiled = nlohmann::json::array();
  for (const TiledRole& r : roles) tiled.push_back(r.tiled);
  res.extra = {{"device", prop.name},
               {"h2d_bytes", c.h2d_bytes},
               {"ram_tier_slots", c.ram_slots},
               {"ram_tier_hits", c.ram.hits},
               {"ram_tier_demotions", c.ram.demotions},
               {"ram_tier_admission", o.ram_tier_admission},
               {"ram_tier_not_admitted", c.ram.not_admitted},
               {"d2h_bytes", c.d2h_bytes},
               {"stage_slots", ps.stage_slots},
               {"tiled_experts", o.tiled_experts},
               {"tiled_roles", tiled}};
  return res;
}

}  // namespace moepack::gpu
