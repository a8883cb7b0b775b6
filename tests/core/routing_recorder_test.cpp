// Routing traces recorded from the running engine (core/routing_recorder.h) on the demo model:
// one step per forward(), top-k distinct experts per layer on decode steps, the prefill's union
// on the first; replayed through the cache policies, Belady's offline optimum is never beaten.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/cache_sim.h"
#include "core/model_source.h"
#include "core/routing_trace.h"
#include "core/session.h"
#include "packbuilder/pack_builder.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

const std::string kDemo = std::string(MOEPACK_SHARED_DIR) + "/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";

TEST(RoutingRecorder, RecordsEveryStepOfTheDemoModel) {
  test::TempDir dir("moepack-trace");
  EngineSettings st;
  st.backend = "cpu";
  st.threads = 2;
  st.trace_path = dir.file("demo.trace");
  uint64_t forwards = 0;
  size_t prompt_tokens = 0;
  std::map<std::pair<uint32_t, uint32_t>, std::set<int32_t>> by_pos;  // (block, pos) -> experts
  {
    auto s = Session::load(kDemo, st);
    GenerateOptions o;
    o.max_tokens = 12;
    o.ignore_eos = true;
    o.sampling.temperature = 0.0f;
    const GenerateResult r = s->chat({{"user", "What does \"salmon\" mean?"}}, o);
    forwards = s->backend().stats().forward_calls;
    prompt_tokens = r.prompt_tokens.size();
    EXPECT_EQ(forwards, 12u);  // prefill + 11 decode steps (the 12th token needs no forward)
  }  // the session (and with it the recorder) closes the trace
  const RoutingTrace t = read_routing_trace(st.trace_path);
  EXPECT_EQ(t.header.n_layers, 5u);  // blk.1 .. blk.5
  EXPECT_EQ(t.header.n_experts, 32u);
  EXPECT_EQ(t.header.top_k, 4u);
  EXPECT_EQ(t.header.expert_bytes % 4096, 0u);
  std::map<uint32_t, std::map<uint32_t, size_t>> per_step;  // step -> layer -> distinct experts
  for (const TraceRecord& rec : t.records) per_step[rec.step][rec.layer] = rec.experts.size();
  ASSERT_EQ(per_step.size(), forwards);
  for (const auto& [step, layers] : per_step) {
    ASSERT_EQ(layers.size(), 5u) << "step " << step;
    for (const auto& [layer, n] : layers) {
      if (step == 0) {
        EXPECT_GE(n, 4u);  // union over the prompt's tokens
        EXPECT_LE(n, std::min<size_t>(32, 4 * prompt_tokens));
      } else {
        EXPECT_EQ(n, 4u) << "decode step " << step << " layer " << layer;
      }
    }
  }
  // Replay: Belady (offline optimum) has the fewest misses of all policies at every budget.
  for (uint32_t slots : {32u, 64u, 96u}) {
    const auto res = simulate_cache(t, slots, {"hybrid", "lru", "lfu", "belady"});
    uint64_t belady = 0;
    for (const auto& r : res) {
      if (r.policy == "belady") belady = r.counters.cache_misses;
    }
    for (const auto& r : res) EXPECT_GE(r.counters.cache_misses, belady) << r.policy << " at " << slots << " slots";
  }
}

// The replay is what the engine does: a trace recorded while the CPU engine ran the pack with
// a cache of S slots, replayed at S with the runtime's policy (hybrid), gives the engine's own
// hits, misses and evictions, at 6 slots (every prefill union is split) and at 40 (none is).
// A trace recorded at 40 slots replays at 6 as the run at 6 went (routing does not depend on
// the cache).
TEST(CacheSim, ReplayEqualsTheEnginesOwnCounters) {
  test::TempDir dir("moepack-trace");
  BuildOptions bo;
  bo.source = kDemo;
  bo.out_dir = dir.file("pack");
  bo.safety_margin_bytes = 0;
  build_pack(bo);
  const uint64_t stride = ModelSource::open(bo.out_dir)->pack()->layout().max_stride;
  std::map<uint32_t, BackendStats> engine;
  for (const uint32_t slots : {6u, 40u}) {
    EngineSettings st;
    st.backend = "cpu";
    st.threads = 2;
    st.cache_bytes = slots * stride;
    st.cache_vram_reserve_mib = 0;
    st.trace_path = dir.file("at" + std::to_string(slots) + ".trace");
    {
      auto s = Session::load(bo.out_dir, st);
      GenerateOptions o;
      o.max_tokens = 10;
      o.ignore_eos = true;
      o.sampling.temperature = 0.0f;
      s->chat({{"user", "What does \"salmon\" mean? And what does \"trout\" mean?"}}, o);
      s->chat({{"user", "What does \"salmon\" mean? And what does \"trout\" mean?"},
               {"assistant", "fish"},
               {"user", "Tell me a quote."}},
              o);
      engine[slots] = s->backend().stats();
      ASSERT_EQ(engine[slots].cache_slots, slots);
    }
    const RoutingTrace t = read_routing_trace(st.trace_path);
    const CacheSimResult r = simulate_cache(t, slots, {"hybrid"}).front();
    EXPECT_EQ(r.counters.cache_hits, engine[slots].cache_hits) << slots << " slots";
    EXPECT_EQ(r.counters.cache_misses, engine[slots].cache_misses) << slots << " slots";
    EXPECT_EQ(r.counters.cache_evictions, engine[slots].cache_evictions) << slots << " slots";
    if (slots == 6) {
      EXPECT_GT(r.split_records, 0u);
    } else {
      EXPECT_EQ(r.split_records, 0u);  // the prompt's union fits in 40 slots
    }
  }
  EXPECT_GT(engine[6].cache_evictions, engine[40].cache_evictions);
  const CacheSimResult from40 =
      simulate_cache(read_routing_trace(dir.file("at40.trace")), 6, {"hybrid"}).front();
  EXPECT_EQ(from40.counters.cache_misses, engine[6].cache_misses);
  EXPECT_EQ(from40.counters.cache_hits, engine[6].cache_hits);
  // Fewer slots than one token's top-4 cannot run at all, in the engine or the replay.
  EXPECT_THROW(simulate_cache(read_routing_trace(dir.file("at40.trace")), 3, {"hybrid"}), Error);
}

}  // namespace
}  // namespace moepack
