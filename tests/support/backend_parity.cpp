#include "tests/support/backend_parity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/model_source.h"
#include "packbuilder/pack_builder.h"
#include "tests/support/fixture_refs.h"
#include "tests/support/gguf_writer.h"

namespace moepack::test {

EngineSettings parity_settings(const char* backend) {
  EngineSettings s;
  s.backend = backend;
  s.threads = 4;
  s.n_ctx = 512;  // the references' n_ctx
  s.cache_vram_reserve_mib = 0;
  // No host-RAM tier (its default sizes one from the RAM): every miss is a pack read, as the
  // parity checks count (h2d_bytes == pack_read_bytes); the tier's own tests ask for one.
  s.cache_ram_mib = 0;
  return s;
}

std::vector<int32_t> greedy(Backend& be, std::vector<float>& logits, size_t n,
                            std::vector<std::vector<float>>* steps) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (steps) steps->push_back(logits);
    const int32_t next = argmax(logits);
    out.push_back(next);
    if (i + 1 < n) be.forward(std::span<const int32_t>(&next, 1), logits);
  }
  return out;
}

std::vector<float> prompt_then_greedy_logits(Backend& be, std::span<const int32_t> tokens, int decodes) {
  std::vector<float> all, logits(be.config().n_vocab);
  be.forward(tokens, logits);
  all.insert(all.end(), logits.begin(), logits.end());
  for (int i = 0; i < decodes; ++i) {
    const int32_t next = argmax(logits);
    be.forward(std::span<const int32_t>(&next, 1), logits);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

std::string build_test_pack(const std::string& source, const TempDir& dir) {
  BuildOptions bo;
  bo.source = source;
  bo.out_dir = dir.file("pack");
  bo.safety_margin_bytes = 0;
  bo.hash_sources = false;
  build_pack(bo);
  return bo.out_dir;
}

PackBudgets pack_budgets(const ModelSource& pack) {
  PackBudgets b;
  b.slot_bytes = pack.pack()->layout().max_stride;
  b.experts = pack.pack()->layout().expert_count();
  b.top_k = pack.config().n_expert_used;
  return b;
}

void expect_pack_matches_gguf(const std::string& model_path, const TempDir& dir,
                              std::span<const int32_t> tokens, BackendFactory make,
                              const EngineSettings& gguf_settings, const EngineSettings& pack_settings,
                              std::vector<BudgetRun>* runs) {
  const std::string pack_dir = build_test_pack(model_path, dir);
  auto gguf = make(ModelSource::open(model_path), gguf_settings);
  const size_t nv = gguf->config().n_vocab;
  const std::vector<float> want = prompt_then_greedy_logits(*gguf, tokens);
  auto src = ModelSource::open(pack_dir);
  ASSERT_TRUE(src->is_pack());
  const PackBudgets budgets = pack_budgets(*src);
  for (const uint64_t slots : budgets.slots()) {
    SCOPED_TRACE("cache slots " + std::to_string(slots));
    EngineSettings s = pack_settings;
    s.cache_bytes = slots * budgets.slot_bytes;
    auto be = make(src, s);
    EXPECT_EQ(be->stats().cache_slots, slots);
    const std::vector<float> got = prompt_then_greedy_logits(*be, tokens);
    ASSERT_EQ(got.size(), want.size());
    size_t at = 0;
    const float d = max_abs_diff(got, want, &at);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
        << "pack vs GGUF: max diff " << d << " at step " << at / nv << " id " << at % nv;
    const BackendStats st = be->stats();
    std::printf("  %llu slots: misses %llu evictions %llu read %llu B\n",
                static_cast<unsigned long long>(slots), static_cast<unsigned long long>(st.cache_misses),
                static_cast<unsigned long long>(st.cache_evictions),
                static_cast<unsigned long long>(st.pack_read_bytes));
    EXPECT_GT(st.cache_misses, 0u);
    EXPECT_GT(st.pack_read_bytes, 0u);
    EXPECT_EQ(st.expert_selections, st.experts_computed);
    if (slots == budgets.top_k) {
      EXPECT_GT(st.cache_evictions, 0u);
    }
    if (slots == budgets.experts) {
      EXPECT_EQ(st.cache_evictions, 0u);
    }
    if (runs) runs->push_back({slots, std::move(be), st});
  }
}

void expect_ram_tier_used(const std::vector<BudgetRun>& runs, uint64_t experts_bin) {
  ASSERT_FALSE(runs.empty());
  for (const BudgetRun& r : runs) {
    SCOPED_TRACE("cache slots " + std::to_string(r.slots));
    EXPECT_LE(r.stats.pack_read_bytes, experts_bin);
    EXPECT_GE(r.stats.h2d_bytes, r.stats.pack_read_bytes);
    EXPECT_LE(r.stats.ram_tier_hits, r.stats.ram_tier_demotions);  // only what went down comes up
    EXPECT_EQ(r.stats.d2h_bytes > 0, r.stats.ram_tier_demotions > 0);
    if (r.stats.cache_evictions == 0) {
      EXPECT_EQ(r.stats.ram_tier_demotions, 0u);
    }
  }
  const BudgetRun& smallest = runs.back();
  EXPECT_GT(smallest.stats.ram_tier_slots, 0u);
  EXPECT_GT(smallest.stats.ram_tier_demotions, 0u);
  EXPECT_GT(smallest.stats.ram_tier_hits, 0u);
  EXPECT_GT(smallest.stats.h2d_bytes, smallest.stats.pack_read_bytes);  // copies up from RAM
}

namespace {

// Each budget's prefetch hits <= its prefetch reads (and, `misses_too`, <= its misses: a
// prefetch hit is also a miss); prints each budget's counts; adds up the reads and hits.
void count_prefetches(const std::vector<BudgetRun>& runs, const std::string& label, bool misses_too,
                      uint64_t& reads, uint64_t& used) {
  for (const BudgetRun& r : runs) {
    EXPECT_LE(r.stats.prefetch_hits, r.stats.prefetch_reads) << "cache slots " << r.slots;
    if (misses_too) {
      EXPECT_LE(r.stats.prefetch_hits, r.stats.cache_misses) << "cache slots " << r.slots;
    }
    reads += r.stats.prefetch_reads;
    used += r.stats.prefetch_hits;
    std::printf("[ prefetch ] %s at %llu slots: %llu read ahead, %llu used, %llu misses\n", label.c_str(),
                static_cast<unsigned long long>(r.slots),
                static_cast<unsigned long long>(r.stats.prefetch_reads),
                static_cast<unsigned long long>(r.stats.prefetch_hits),
                static_cast<unsigned long long>(r.stats.cache_misses));
  }
}

}  // namespace

void expect_prefetch_delivered_and_used(const std::vector<BudgetRun>& runs) {
  uint64_t reads = 0, used = 0;
  for (const BudgetRun& r : runs)
    EXPECT_EQ(r.stats.h2d_bytes, r.stats.pack_read_bytes) << "cache slots " << r.slots;
  count_prefetches(runs, "cuda", false, reads, used);
  EXPECT_GT(reads, 0u);
  EXPECT_GT(used, 0u);
}

void expect_cpu_prefetch_used(const std::vector<BudgetRun>& runs, const std::string& label) {
  uint64_t reads = 0, used = 0;
  count_prefetches(runs, label, true, reads, used);
  EXPECT_GT(reads, 0u);
  EXPECT_GT(used, 0u);
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.back().stats.prefetch_reads, 0u) << "top-k slots leave no room to read ahead";
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

int expect_backends_agree_on_prompts(Backend& cpu, Backend& gpu, const nlohmann::json& ref,
                                     const std::string& label) {
  const size_t nv = gpu.config().n_vocab;
  std::vector<float> lc(nv), lg(nv);
  int checked = 0;
  float worst = 0.0f;
  for (const auto& p : ref["prompts"]) {
    const auto tokens = p["token_ids"].get<std::vector<int32_t>>();
    SCOPED_TRACE("prompt " + std::to_string(checked) + " (" + std::to_string(tokens.size()) + " tokens)");
    cpu.truncate(0);
    gpu.truncate(0);
    cpu.forward(tokens, lc);
    const auto t0 = Clock::now();
    gpu.forward(tokens, lg);
    const double prefill_ms = ms_since(t0);
    size_t at = 0;
    const float d = max_abs_diff(lc, lg, &at);
    worst = std::max(worst, d);
    EXPECT_LT(d, 1e-3f) << "prompt logits: max |cuda - cpu| " << d << " at id " << at << "\n  cpu top-5 "
                        << top_text(lc) << "\n  gpu top-5 " << top_text(lg);
    const auto want = p["greedy"]["ids"].get<std::vector<int32_t>>();
    std::vector<std::vector<float>> sc, sg;
    const auto ours_cpu = greedy(cpu, lc, want.size(), &sc);
    const auto t1 = Clock::now();
    const auto ours_gpu = greedy(gpu, lg, want.size(), &sg);
    const double decode_ms = ms_since(t1);
    std::printf(
        "  prompt %d: %zu tokens, max |cuda - cpu| logit %.3g; GPU prefill %.1f ms (%.0f tokens/s), %zu "
        "decodes %.1f ms (%.0f tokens/s)\n",
        checked, tokens.size(), static_cast<double>(d), prefill_ms,
        1e3 * static_cast<double>(tokens.size()) / prefill_ms, want.size() - 1, decode_ms,
        1e3 * static_cast<double>(want.size() - 1) / decode_ms);
    EXPECT_EQ(ours_gpu, ours_cpu);
    EXPECT_EQ(ours_gpu, want) << "llama.cpp f32-dequant greedy";
    for (size_t i = 0; i < ours_gpu.size(); ++i) {
      const float ds = max_abs_diff(sc[i], sg[i]);
      worst = std::max(worst, ds);
      if (ours_gpu[i] != ours_cpu[i] || ds >= 1e-3f) {
        ADD_FAILURE() << "greedy step " << i << ": gpu token " << ours_gpu[i] << " cpu token " << ours_cpu[i]
                      << ", max logit diff " << ds << "\n  cpu top-5 " << top_text(sc[i]) << "\n  gpu top-5 "
                      << top_text(sg[i]);
        break;
      }
    }
    ++checked;
  }
  std::printf("  %s: worst |cuda - cpu| logit over prompts and greedy steps %.3g\n", label.c_str(),
              static_cast<double>(worst));
  ::testing::Test::RecordProperty("worst_logit_diff", std::to_string(worst));
  const BackendStats s = gpu.stats();
  EXPECT_EQ(s.expert_selections, s.experts_computed);
  EXPECT_GT(s.expert_selections, 0u);
  return checked;
}

namespace {

// Records every routing observer call of a backend as (block, position, experts...); removes the
// observer when it goes out of scope (the vector it writes to goes with it).
class RoutingLog {
 public:
  explicit RoutingLog(Backend& be) : be_(be) {
    be_.set_routing_observer(
        [this](uint32_t b, uint32_t pos, std::span<const int32_t> e, std::span<const float>) {
          calls.push_back({static_cast<int32_t>(b), static_cast<int32_t>(pos)});
          calls.back().insert(calls.back().end(), e.begin(), e.end());
        });
  }
  ~RoutingLog() { be_.set_routing_observer(nullptr); }
  RoutingLog(const RoutingLog&) = delete;
  RoutingLog& operator=(const RoutingLog&) = delete;
  std::vector<std::vector<int32_t>> calls;

 private:
  Backend& be_;
};

}  // namespace

void expect_all_logits_and_routing_agree(Backend& cpu, Backend& gpu, std::span<const int32_t> tokens,
                                         const std::string& label) {
  cpu.truncate(0);
  gpu.truncate(0);
  RoutingLog rc(cpu), rg(gpu);
  const size_t nv = gpu.config().n_vocab;
  std::vector<float> lc(nv), lg(nv), ac(nv * tokens.size()), ag(nv * tokens.size());
  cpu.forward(tokens, lc, ac);
  gpu.forward(tokens, lg, ag);
  size_t at = 0;
  const float d = max_abs_diff(ac, ag, &at);
  EXPECT_LT(d, 1e-3f) << "all positions: max |cuda - cpu| " << d << " at position " << at / nv << " id "
                      << at % nv;
  for (size_t t = 0; t < tokens.size(); ++t) {  // the first position beyond tolerance
    const std::span<const float> a = std::span<const float>(ac).subspan(t * nv, nv);
    const std::span<const float> b = std::span<const float>(ag).subspan(t * nv, nv);
    const float dt = max_abs_diff(a, b);
    if (dt >= 1e-3f) {
      ADD_FAILURE() << "first position beyond 1e-3: " << t << " (diff " << dt << ")\n  cpu top-5 "
                    << top_text(a) << "\n  gpu top-5 " << top_text(b);
      break;
    }
  }
  std::printf("  prompt %s: all %zu positions, max |cuda - cpu| logit %.3g\n", label.c_str(), tokens.size(),
              static_cast<double>(d));
  EXPECT_EQ(0, std::memcmp(lg.data(), ag.data() + (tokens.size() - 1) * nv, nv * sizeof(float)));
  const auto& c = rc.calls;
  const auto& g = rg.calls;
  ASSERT_EQ(c.size(), g.size());
  size_t first_diff = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] != g[i]) {
      first_diff = i;
      break;
    }
  }
  EXPECT_EQ(first_diff, c.size())
      << "routing (block, position, experts, in the CPU's call order) differs first at observer call "
      << first_diff << ": cpu block " << c[std::min(first_diff, c.size() - 1)][0] << " pos "
      << c[std::min(first_diff, c.size() - 1)][1] << ", gpu block "
      << g[std::min(first_diff, g.size() - 1)][0] << " pos " << g[std::min(first_diff, g.size() - 1)][1];
  EXPECT_EQ(gpu.n_past(), tokens.size());
}

}  // namespace moepack::test
