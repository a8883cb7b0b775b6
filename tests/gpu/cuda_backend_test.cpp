// The CUDA backend end to end against the CPU reference backend (and through it llama.cpp's
// f32-dequant references) on every fixture model carried to the machine, on the Expert Pack
// path at three VRAM budgets, and on the demo model through the whole engine.
//
// Tolerances: prompt logits within 1e-3 absolute of the CPU backend (both F32 on the same
// exactly dequantized weights; they differ only in summation order, ~1e-6 relative); greedy
// continuations (24 tokens) identical to the CPU backend's and to llama.cpp's. The pack path
// on the GPU gives the GGUF path's logits on the GPU bit for bit (the same kernels on the same
// bytes; batching experts differently never changes a pair's sum).
//
// Fixtures that were not carried (tests/gpu/run_on_device.sh carries a subset per call) are
// skipped, and say so.
#include "gpu/cuda_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/backend_factory.h"
#include "core/deepseek4_ops.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/io_bench.h"
#include "core/model_source.h"
#include "core/moe_routing.h"
#include "core/session.h"
#include "core/victim_tier.h"
#include "gpu/cuda_host_router.h"
#include "gpu/cuda_resources.h"
#include "gpu/decode_graph.h"
#include "gpu/device_routing.h"
#include "gpu/gemv_mma.h"
#include "gpu/kernels.h"
#include "gpu/tiled_experts.h"
#include "gpu/upload_arena.h"
#include "gpu/vram_delivery_bench.h"
#include "gpu/vram_expert_pool.h"
#include "packbuilder/pack_builder.h"
#include "tests/gpu/engine_switch_check.h"
#include "tests/gpu/gpu_test_main.h"
#include "tests/support/backend_parity.h"
#include "tests/support/fixture_refs.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

using test::parity_settings;
using test::read_json;

const std::string kFixtures = std::string(MOEPACK_SHARED_DIR) + "/fixtures/";
const std::string kDemo =
    std::string(MOEPACK_SOURCE_DIR) + "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";

struct Case {
  const char* name;
  const char* model;  // path under fixtures/
  const char* ref;    // reference prefix under fixtures/
};

const Case kCases[] = {
    {"deepseek2_Q4_K_M", "deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf", "deepseek2-tiny/deepseek2-tiny-Q4_K_M"},
    {"deepseek2_Q2_K_split", "deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.gguf",
     "deepseek2-tiny/deepseek2-tiny-Q2_K"},
    {"qwen3moe_MXFP4", "qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf", "qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE"},
    {"llama_moe_Q4_K_M", "llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf", "llama-moe-tiny/llama-moe-tiny-Q4_K_M"},
};

// The token ids of a fixture's first reference prompt.
std::vector<int32_t> first_prompt(const Case& c) {
  return read_json(kFixtures + c.ref + ".f32-dequant.ref.json")["results"][0]["tokens"].get<std::vector<int32_t>>();
}

// Whether fixture c's model file travelled to this machine (tests/gpu/prepare_carry.sh: one subset
// of the fixtures a GPU-machine call); its tests skip where it did not.
bool carried(const Case& c) { return std::filesystem::exists(kFixtures + c.model); }

class CudaFixture : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!carried(GetParam())) GTEST_SKIP() << kFixtures + GetParam().model << " not carried to this machine";
  }
};

// Every reference prompt of fixture c: prompt logits within 1e-3 of the CPU backend's, greedy
// tokens equal to the CPU backend's and to llama.cpp's f32-dequant references; with
// `decode_logits`, every greedy step's logits within 1e-3 of the CPU backend's too.
void expect_matches_cpu_and_reference(const Case& c, bool decode_logits = false) {
  const nlohmann::json ref = read_json(kFixtures + c.ref + ".f32-dequant.ref.json");
  const auto src = ModelSource::open(kFixtures + c.model);
  auto cpu = make_backend(src, parity_settings("cpu"));
  auto gpu = make_backend(src, parity_settings("cuda"));
  ASSERT_EQ(gpu->name(), "cuda");
  const size_t nv = gpu->config().n_vocab;
  std::vector<float> lc(nv), lg(nv);
  int checked = 0;
  float worst = 0;
  for (const auto& r : ref["results"]) {
    const auto tokens = r["tokens"].get<std::vector<int32_t>>();
    if (tokens.empty()) continue;
    SCOPED_TRACE("prompt " + std::to_string(r["index"].get<int>()));
    cpu->truncate(0);
    gpu->truncate(0);
    cpu->forward(tokens, lc);
    gpu->forward(tokens, lg);
    float d = 0;
    for (size_t i = 0; i < nv; ++i) d = std::max(d, std::fabs(lc[i] - lg[i]));
    worst = std::max(worst, d);
    EXPECT_LT(d, 1e-3f) << "prompt logits, largest |cuda - cpu|";
    const auto want = r["greedy_tokens"].get<std::vector<int32_t>>();
    std::vector<std::vector<float>> steps_cpu, steps_gpu;
    const auto ours_cpu = test::greedy(*cpu, lc, want.size(), &steps_cpu);
    const auto ours_gpu = test::greedy(*gpu, lg, want.size(), &steps_gpu);
    EXPECT_EQ(ours_gpu, ours_cpu);
    if (decode_logits) {
      ASSERT_EQ(steps_gpu.size(), steps_cpu.size());
      for (size_t k = 0; k < steps_gpu.size(); ++k) {
        float dk = 0;
        for (size_t i = 0; i < nv; ++i) dk = std::max(dk, std::fabs(steps_cpu[k][i] - steps_gpu[k][i]));
        worst = std::max(worst, dk);
        EXPECT_LT(dk, 1e-3f) << "greedy step " << k << "'s logits, largest |cuda - cpu|";
      }
    }
    EXPECT_EQ(ours_gpu, want) << "llama.cpp f32-dequant greedy";
    ++checked;
  }
  ::testing::Test::RecordProperty("worst_prompt_logit_diff", std::to_string(worst));
  EXPECT_GE(checked, 10);
  const BackendStats s = gpu->stats();
  EXPECT_EQ(s.expert_selections, s.experts_computed);
  EXPECT_GT(s.expert_selections, 0u);
}

TEST_P(CudaFixture, MatchesCpuBackendAndReference) { expect_matches_cpu_and_reference(GetParam()); }

// Q5_K's decode on the tensor cores (Q5kColPath; a switch, gpu/gemv_mma.h
// kGemvQ5kTensorCoresDefault, on by default since the thirty-seventh session), switched on here
// whatever the default: llama-moe-tiny's Q4_K_M holds its
// attention output matrices (256 x 256) in Q5_K, so every decode step runs them on the tensor
// cores (a prompt's prefill takes the F32 kernels): every greedy step's logits within 1e-3 of the
// CPU backend's, the greedy tokens as above.
TEST(CudaBackend, Q5kTensorCoresMatchCpuAndReference) {
  const Case c = kCases[3];
  ASSERT_EQ(std::string(c.name), "llama_moe_Q4_K_M");
  if (!carried(c)) GTEST_SKIP() << kFixtures + c.model << " not carried to this machine";
  struct DefaultAfterwards {
    ~DefaultAfterwards() {
      gpu::detail::set_gemv_tensor_cores(GgmlType::Q5_K, gpu::detail::kGemvQ5kTensorCoresDefault);
    }
  } restore;
  gpu::detail::set_gemv_tensor_cores(GgmlType::Q5_K, true);
  ASSERT_TRUE(gpu::detail::gemv_mma_supported(GgmlType::Q5_K, 256));
  expect_matches_cpu_and_reference(c, true);
}

// All logits of a prefill (all_logits) and the routing the observer sees, vs the CPU backend.
TEST_P(CudaFixture, AllLogitsAndRoutingMatchCpu) {
  const Case c = GetParam();
  const nlohmann::json ref = read_json(kFixtures + c.ref + ".f32-dequant.ref.json");
  const auto tokens = ref["results"][0]["tokens"].get<std::vector<int32_t>>();
  const auto src = ModelSource::open(kFixtures + c.model);
  auto cpu = make_backend(src, parity_settings("cpu"));
  auto gpu = make_backend(src, parity_settings("cuda"));
  test::expect_all_logits_and_routing_agree(*cpu, *gpu, tokens, "0");
}

// The pack path at three budgets against the GGUF path (test::expect_pack_matches_gguf); every
// byte read is copied to VRAM. With prefetch, also test::expect_prefetch_delivered_and_used.
void expect_pack_matches_gguf_on_gpu(const Case& c, bool prefetch) {
  const nlohmann::json ref = read_json(kFixtures + c.ref + ".f32-dequant.ref.json");
  const auto tokens = ref["results"][0]["tokens"].get<std::vector<int32_t>>();
  test::TempDir dir(prefetch ? "moepack-cuda-prefetch" : "moepack-cuda");
  EngineSettings pack = parity_settings("cuda");
  pack.stage_slots = 3;
  pack.prefetch_experts = prefetch;
  std::vector<test::BudgetRun> runs;
  test::expect_pack_matches_gguf(kFixtures + c.model, dir, tokens, make_backend, parity_settings("cuda"),
                                 pack, &runs);
  ASSERT_EQ(runs.size(), 3u);
  for (const test::BudgetRun& r : runs) {
    EXPECT_EQ(r.stats.h2d_bytes, r.stats.pack_read_bytes) << "cache slots " << r.slots;
  }
  if (prefetch) test::expect_prefetch_delivered_and_used(runs);
}

TEST_P(CudaFixture, PackMatchesGgufOnGpuAtEveryBudget) { expect_pack_matches_gguf_on_gpu(GetParam(), false); }

// Prefill on the tensor cores (gpu/kernels.h set_gemv_prefill_mma: on by default since these
// tests passed on an H100; docs/cuda-backend.md, thirty-first and thirty-second passes), here
// for every group of two or more pairs: every reference prompt's logits within 1e-3 of the CPU backend's and
// the greedy tokens equal to the CPU's and llama.cpp's (expect_matches_cpu_and_reference; a prompt's prefill
// groups take the new kernel), and the pack path at three budgets bit for bit against the GGUF path (the two
// batch experts differently).
TEST_P(CudaFixture, PrefillTensorCoresMatchCpuAndReferenceAndPackMatchesGguf) {
  const test::PrefillMmaOn on;
  expect_matches_cpu_and_reference(GetParam());
  expect_pack_matches_gguf_on_gpu(GetParam(), false);
}

// Decode columns at prefill (gpu/kernels.h set_gemv_prefill_columns) on every launch of up to 16
// pairs a group or tokens (test::PrefillColumnsOn; the default rule takes large matrices only): every
// reference prompt's logits within 1e-3 of the CPU backend's and the greedy tokens the CPU's and
// llama.cpp's, and the pack path bit for bit against the GGUF path (which batch experts differently).
TEST_P(CudaFixture, PrefillColumnsMatchCpuAndReferenceAndPackMatchesGguf) {
  const test::PrefillColumnsOn on;
  expect_matches_cpu_and_reference(GetParam());
  expect_pack_matches_gguf_on_gpu(GetParam(), false);
}

// Next-layer prefetch changes when experts are read, never what is computed: the pack path
// with prefetch_experts gives the GGUF path's logits bit for bit at every budget, every byte
// read is delivered, and some prefetched experts were used.
TEST_P(CudaFixture, PackWithPrefetchMatchesGgufAtEveryBudget) { expect_pack_matches_gguf_on_gpu(GetParam(), true); }

// The host-RAM tier behind the VRAM cache (cache_ram_mib, core/victim_tier.h) changes where
// evicted experts come back from, never what is computed: the GGUF path's logits bit for bit at
// every budget, with and without prefetch. The tier asked for (1 GiB) is capped at the pack's
// experts (core/victim_tier.h, ram_tier_slots) and then holds every expert the VRAM slots do not,
// even while a plan's promotions keep their slots, so no expert is read from the pack twice
// (pack reads <= experts.bin), and at the smallest budget experts go down and come back up.
void expect_pack_with_ram_tier_matches_gguf(const Case& c, bool prefetch) {
  const nlohmann::json ref = read_json(kFixtures + c.ref + ".f32-dequant.ref.json");
  const auto tokens = ref["results"][0]["tokens"].get<std::vector<int32_t>>();
  test::TempDir dir(prefetch ? "moepack-cuda-ram-prefetch" : "moepack-cuda-ram");
  EngineSettings pack = parity_settings("cuda");
  pack.stage_slots = 3;
  pack.prefetch_experts = prefetch;
  pack.cache_ram_mib = 1024;
  std::vector<test::BudgetRun> runs;
  test::expect_pack_matches_gguf(kFixtures + c.model, dir, tokens, make_backend, parity_settings("cuda"),
                                 pack, &runs);
  ASSERT_EQ(runs.size(), 3u);
  test::expect_ram_tier_used(runs, std::filesystem::file_size(dir.file("pack") + "/experts.bin"));
}

TEST_P(CudaFixture, PackWithRamTierMatchesGgufAtEveryBudget) {
  expect_pack_with_ram_tier_matches_gguf(GetParam(), false);
}
TEST_P(CudaFixture, PackWithRamTierAndPrefetchMatchesGgufAtEveryBudget) {
  expect_pack_with_ram_tier_matches_gguf(GetParam(), true);
}

// SwiGLU as the gate + up launch's epilogue at decode changes no logit
// (tests/gpu/engine_switch_check.h).
TEST_P(CudaFixture, SwigluEpilogueChangesNoLogit) {
  test::expect_swiglu_epilogue_changes_no_logit(kFixtures + GetParam().model, first_prompt(GetParam()), make_backend);
}

// The shared expert launched beside the host's choice of experts changes no logit (deepseek2;
// qwen3moe and llama-moe have no shared expert).
TEST_P(CudaFixture, SharedExpertOverlapChangesNoLogit) {
  const Case c = GetParam();
  if (ModelSource::open(kFixtures + c.model)->config().n_expert_shared == 0) {
    GTEST_SKIP() << c.name << " has no shared expert";
  }
  const auto tokens = first_prompt(c);
  test::expect_shared_expert_overlap_changes_no_logit(kFixtures + c.model, tokens, make_backend);
}

// The residual add fused with the RMSNorm after it changes no logit.
TEST_P(CudaFixture, ResidualNormFusionChangesNoLogit) {
  test::expect_residual_norm_fusion_changes_no_logit(kFixtures + GetParam().model, first_prompt(GetParam()), make_backend);
}

// The host's copy of the group sizes (the compact columns, the skipped ranges) changes no logit.
TEST_P(CudaFixture, HostSizesChangeNoLogit) {
  test::expect_host_sizes_change_no_logit(kFixtures + GetParam().model, first_prompt(GetParam()),
                                          make_backend);
}

// Decode steps as CUDA graph launches change no logit and no routing report.
TEST_P(CudaFixture, DecodeGraphChangesNoLogitNorRouting) {
  test::expect_decode_graph_changes_no_logit(kFixtures + GetParam().model, first_prompt(GetParam()), make_backend);
}

// Decode steps routed on the GPU (gpu/device_routing.h) change no logit and no routing report.
TEST_P(CudaFixture, RouterOnDeviceChangesNoLogitNorRouting) {
  test::expect_router_on_device_changes_no_logit(kFixtures + GetParam().model, first_prompt(GetParam()), make_backend);
}

// Routed experts in the tiled layout of the decode GEMV (EngineSettings::tiled_experts) change no
// logit, on the GGUF path and on an Expert Pack whose slots are refilled every step.
TEST_P(CudaFixture, TiledExpertsChangeNoLogit) {
  test::expect_tiled_experts_change_no_logit(kFixtures + GetParam().model, first_prompt(GetParam()),
                                             make_backend, "moepack-cuda-tiled");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CudaFixture, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

TEST(CudaBackend, AutoPicksCudaAndBadTokensThrow) {
  const std::string path = kDemo;  // part of the repository, so it always travels
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  auto be = make_backend(ModelSource::open(path), parity_settings("auto"));
  EXPECT_EQ(be->name(), "cuda");
  std::vector<float> logits(be->config().n_vocab);
  const int32_t bad = static_cast<int32_t>(be->config().n_vocab);
  EXPECT_THROW(be->forward(std::span<const int32_t>(&bad, 1), logits), Error);
  EXPECT_EQ(be->n_past(), 0u);
  const int32_t ok = 1;
  be->forward(std::span<const int32_t>(&ok, 1), logits);
  EXPECT_EQ(be->n_past(), 1u);
  EXPECT_THROW(be->truncate(2), Error);
}

TEST(CudaBackend, BudgetBelowTopKFailsWithNumbers) {
  ASSERT_TRUE(std::filesystem::exists(kDemo)) << kDemo << " is part of the repository";
  test::TempDir dir("moepack-cuda-small");
  auto src = ModelSource::open(test::build_test_pack(kDemo, dir));
  EngineSettings s = parity_settings("cuda");
  s.cache_bytes = src->pack()->layout().max_stride;  // one slot < top-k
  try {
    make_backend(src, s);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slot"), std::string::npos) << e.what();
  }
}

// The demo model through the whole engine on the GPU answers as core/engine_demo_test.cpp
// expects of the CPU (README, Q4_K_M), from the GGUF and from its pack with 40 of 160 experts.
void expect_salmon(Session& s) {
  GenerateOptions o;
  o.max_tokens = 100;
  o.sampling.temperature = 0.0f;
  const GenerateResult r =
      s.chat({{"user", "What does \"salmon\" mean?"}}, o, [](std::string_view, int32_t) { return true; });
  EXPECT_EQ(r.text,
            "salmon (noun): any of various large food and game fishes of northern waters; usually migrate "
            "from salt to "
            "fresh water to spawn.");
  EXPECT_EQ(r.stop_reason, StopReason::Eos);
  EXPECT_EQ(r.stats.expert_selections, r.stats.experts_computed);
}

TEST(CudaBackend, DemoModelAnswersFromGgufAndPack) {
  ASSERT_TRUE(std::filesystem::exists(kDemo)) << kDemo << " is part of the repository";
  EngineSettings st = parity_settings("cuda");
  auto s = Session::load(kDemo, st);
  EXPECT_EQ(s->backend().name(), "cuda");
  expect_salmon(*s);

  test::TempDir dir("moepack-cuda-demo");
  BuildOptions bo;
  bo.source = kDemo;
  bo.out_dir = dir.file("pack");
  bo.safety_margin_bytes = 0;
  build_pack(bo);
  auto src = ModelSource::open(bo.out_dir);
  st.cache_bytes = 40 * src->pack()->layout().max_stride;
  auto sp = Session::load(bo.out_dir, st);
  expect_salmon(*sp);
  const BackendStats b = sp->backend().stats();
  EXPECT_EQ(b.cache_slots, 40u);
  EXPECT_GT(b.cache_evictions, 0u);
  EXPECT_GT(b.cache_hits, 0u);
  EXPECT_GT(b.h2d_bytes, 0u);
}

// A pack with a slot for every expert is read whole at load and then decodes as the GGUF does:
// the router on the GPU over a table of the slots, steps as CUDA graph launches, nothing read
// while generating, every lookup a hit. The logits of the prompt and 8 greedy decodes equal
// the GGUF's bit for bit. One slot fewer: nothing is read at load, the host chooses.
TEST(CudaBackend, APackThatFitsInVramDecodesLikeTheGguf) {
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  const auto gguf_src = ModelSource::open(kDemo);
  auto gguf = make_backend(gguf_src, parity_settings("cuda"));
  const std::vector<float> want = test::prompt_then_greedy_logits(*gguf, tokens);
  test::TempDir dir("moepack-cuda-resident-pack");
  const auto src = ModelSource::open(test::build_test_pack(kDemo, dir));
  const test::PackBudgets budgets = test::pack_budgets(*src);
  ASSERT_GT(budgets.experts, budgets.top_k);
  for (const uint64_t slots : {budgets.experts, budgets.experts - 1}) {
    SCOPED_TRACE("slots " + std::to_string(slots));
    const bool all = slots == budgets.experts;
    EngineSettings s = parity_settings("cuda");
    s.cache_bytes = slots * budgets.slot_bytes;
    auto be = make_backend(src, s);
    const BackendStats loaded = be->stats();
    EXPECT_EQ(loaded.cache_misses, all ? budgets.experts : 0u) << "experts read at load";
    const uint64_t graphs0 = gpu::decode_graph_launches(), routed0 = gpu::device_routed_blocks();
    const std::vector<float> got = test::prompt_then_greedy_logits(*be, tokens);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << "pack vs GGUF";
    const BackendStats st = be->stats();
    if (all) {
      EXPECT_EQ(st.cache_misses, loaded.cache_misses) << "nothing read while generating";
      EXPECT_EQ(st.pack_read_bytes, loaded.pack_read_bytes);
      EXPECT_EQ(st.cache_evictions, 0u);
      // The 8 decodes' selections (routed on the GPU, never past the pool) count as hits.
      const uint64_t decode_selections = 8 * budgets.top_k * (budgets.experts / be->config().n_expert);
      EXPECT_EQ(
          st.expert_selections - tokens.size() * budgets.top_k * (budgets.experts / be->config().n_expert),
          decode_selections);
      EXPECT_GE(st.cache_hits - loaded.cache_hits, decode_selections);
      EXPECT_EQ(gpu::decode_graph_launches() - graphs0, 7u) << "8 decodes, the first direct";
      EXPECT_GT(gpu::device_routed_blocks(), routed0);
    } else {
      EXPECT_GT(st.cache_misses, 0u);
      EXPECT_EQ(gpu::decode_graph_launches(), graphs0) << "the host chooses: no graph";
      EXPECT_EQ(gpu::device_routed_blocks(), routed0);
    }
  }
}

// Expert e of pack layer 1 as experts.bin holds it.
// The demo model's experts (gate and up Q4_K, rows of 256) take the epilogue at decode.
TEST(CudaBackend, SwigluEpilogueChangesNoLogitOfTheDemoModel) {
  ASSERT_TRUE(gpu::gemv_swiglu_fusable(GgmlType::Q4_K, 256));
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  test::expect_swiglu_epilogue_changes_no_logit(kDemo, tokens, make_backend);
}

// The demo model under tiled_experts "on": Q4_K gate and up tiled, and the Q6_K downs too.
TEST(CudaBackend, TiledExpertsChangeNoLogitOfTheDemoModel) {
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  test::expect_tiled_experts_change_no_logit(kDemo, tokens, make_backend, "moepack-demo-tiled");
}

// Q3_K's or Q6_K's tiled launch switched on (twenty-ninth pass; switches, gpu/gemv_mma.h's
// kGemvQ3kTiledDefault, kGemvQ6kTiledDefault, on by default since the thirty-seventh session): the model's
// expert matrices of that type tiled too, the same logits bit for bit as untiled, on the GGUF path and on a
// pack at top-k slots (test::expect_tiled_experts_change_no_logit). With tiled_experts "on", the same tokens
// take more tiled launches with the switch on than off, so the type's tiled launch is what ran.
void expect_tiled_layout_changes_no_logit(const std::string& model, const std::vector<int32_t>& tokens,
                                          GgmlType type, const std::string& tmp_prefix) {
  struct DefaultAfterwards {
    ~DefaultAfterwards() {
      gpu::detail::set_gemv_tiled_layout(GgmlType::Q3_K, gpu::detail::kGemvQ3kTiledDefault);
      gpu::detail::set_gemv_tiled_layout(GgmlType::Q6_K, gpu::detail::kGemvQ6kTiledDefault);
    }
  } restore;
  const auto src = ModelSource::open(model);
  EngineSettings on = parity_settings("cuda");
  on.tiled_experts = "on";
  uint64_t tiled[2] = {0, 0};
  for (const bool switched : {false, true}) {
    gpu::detail::set_gemv_tiled_layout(type, switched);
    const uint64_t before = gpu::gemv_tiled_launches();
    {
      auto be = make_backend(src, on);
      (void)test::prompt_then_greedy_logits(*be, tokens);
    }
    tiled[switched ? 1 : 0] = gpu::gemv_tiled_launches() - before;
  }
  std::printf("[ tiled ] %s: %llu tiled launches with %s's off, %llu on\n", model.c_str(),
              static_cast<unsigned long long>(tiled[0]), std::string(ggml_type_name(type)).c_str(),
              static_cast<unsigned long long>(tiled[1]));
  EXPECT_GT(tiled[1], tiled[0]) << "no " << ggml_type_name(type) << " matrix took the tiled launch";
  test::expect_tiled_experts_change_no_logit(model, tokens, make_backend, tmp_prefix);
}

// The demo model's Q6_K downs (blocks 2 and 5, 32 x 256 x 256).
TEST(CudaBackend, TiledQ6kExpertsChangeNoLogitOfTheDemoModel) {
  expect_tiled_layout_changes_no_logit(kDemo, {0, 17, 345, 1024, 77, 5, 4000, 12}, GgmlType::Q6_K,
                                       "moepack-demo-tiled-q6k");
}

// deepseek2 Q2_K's Q3_K downs (blocks 1-3, 16 x 256 x 256), read from its three shards.
TEST(CudaBackend, TiledQ3kExpertsChangeNoLogitOfDeepseek2Q2k) {
  const Case c = kCases[1];
  ASSERT_EQ(std::string(c.name), "deepseek2_Q2_K_split");
  if (!carried(c)) GTEST_SKIP() << kFixtures + c.model << " not carried to this machine";
  expect_tiled_layout_changes_no_logit(kFixtures + c.model, first_prompt(c), GgmlType::Q3_K,
                                       "moepack-ds2-tiled-q3k");
}

// UploadArena: tables staged together reach the device in one flush, a put() flushes what
// was staged before it, and growing past the buffers flushes what the old ones held (their
// addresses stay valid until reset()).
TEST(CudaBackend, UploadArenaStagesTablesIntoOneCopy) {
  gpu::Stream stream;
  const cudaStream_t st = stream.get();
  gpu::UploadArena arena;
  const auto back = [&](const auto* d, size_t n) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(d)>>;
    std::vector<T> h(n);
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(st));
    MOEPACK_CUDA_CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  };
  for (int round = 0; round < 2; ++round) {  // the second round after reset(), buffers reused
    arena.reset();
    std::vector<int32_t> a(37), c(1000);
    std::vector<float> b(5);
    std::iota(a.begin(), a.end(), 100 * round);
    std::iota(b.begin(), b.end(), 0.5f);
    std::iota(c.begin(), c.end(), -7);
    const int32_t* da = arena.stage(a.data(), a.size(), st);
    if (round == 1) {  // da lies where round 0's big table was: staging copied nothing yet
      EXPECT_EQ(back(da, a.size()), std::vector<int32_t>(a.size(), 3));
    }
    const float* db = arena.stage(b.data(), b.size(), st);
    a.assign(a.size(), -1);  // staged: the caller's copy may change at once
    arena.flush(st);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(da) % 256, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(db) % 256, 0u);
    const int32_t* dc0 = arena.stage(c.data(), 3, st);
    const int32_t* dc = arena.put(c.data(), c.size(), st);  // flushes dc0 with it
    // Growing (a table larger than the 1 MiB buffer) flushes what was staged in the old one.
    const int32_t* dd = arena.stage(c.data() + 10, 4, st);
    std::vector<int32_t> big(400000, 3);
    const int32_t* dbig = arena.put(big.data(), big.size(), st);
    std::vector<int32_t> want_a(37);
    std::iota(want_a.begin(), want_a.end(), 100 * round);
    EXPECT_EQ(back(da, a.size()), want_a);
    EXPECT_EQ(back(db, b.size()), b);
    EXPECT_EQ(back(dc0, 3), std::vector<int32_t>(c.begin(), c.begin() + 3));
    EXPECT_EQ(back(dc, c.size()), c);
    EXPECT_EQ(back(dd, 4), std::vector<int32_t>(c.begin() + 10, c.begin() + 14));
    EXPECT_EQ(back(dbig, big.size()), big);
  }
}

// HostRouter::route waits for the scores' copy only: the work launched `beside` (here a host
// function on the stream that holds it for 200 ms) is still queued when route() returns; the
// choice is route_token's on the scores the GPU computed; `beside` ran once.
TEST(CudaBackend, HostRouterWaitsForTheScoresNotForBeside) {
  ModelConfig cfg;
  cfg.n_embd = 64;
  cfg.n_expert = 16;
  cfg.n_expert_used = 4;  // softmax gating, no groups, no norm
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(cfg.n_expert * cfg.n_embd)), x(cfg.n_embd);
  for (float& v : w) v = u(rng);
  for (float& v : x) v = u(rng);
  gpu::DeviceBuffer d_w(w.size() * sizeof(float), "router"), d_x(x.size() * sizeof(float), "x"),
      d_scores(2 * cfg.n_expert * sizeof(float), "scores");
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_w.bytes_ptr(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_x.bytes_ptr(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  const gpu::DevMatrix router{GgmlType::F32, cfg.n_embd, cfg.n_expert, cfg.n_embd * sizeof(float),
                              d_w.bytes_ptr()};
  gpu::Stream stream;
  gpu::HostRouter r(cfg);
  r.reserve(1);
  std::atomic<bool> released{false};
  int calls = 0;
  const auto hold = [](void* p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    static_cast<std::atomic<bool>*>(p)->store(true);
  };
  r.route(0, router, d_x.as<float>(), 1, 0, nullptr, d_scores.as<float>(), stream.get(), {}, {}, {}, [&] {
    ++calls;
    MOEPACK_CUDA_CHECK(cudaLaunchHostFunc(stream.get(), hold, &released));
  });
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(released.load()) << "route() waited for the work launched beside the choice";
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaErrorNotReady);
  MOEPACK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_TRUE(released.load());
  std::vector<float> scores(cfg.n_expert), scratch(2 * cfg.n_expert), want_w(cfg.n_expert_used);
  std::vector<int32_t> want_ids(cfg.n_expert_used);
  MOEPACK_CUDA_CHECK(
      cudaMemcpy(scores.data(), d_scores.bytes_ptr(), scores.size() * sizeof(float), cudaMemcpyDeviceToHost));
  route_token(cfg, scores.data(), nullptr, want_ids.data(), want_w.data(), scratch.data());
  for (uint32_t k = 0; k < cfg.n_expert_used; ++k) {
    EXPECT_EQ(r.ids()[k], want_ids[k]) << "k " << k;
    EXPECT_EQ(std::memcmp(&r.weights()[k], &want_w[k], sizeof(float)), 0) << "k " << k;
  }
}

// route_on_device against core's route_token on the same scores: the same experts in the same
// order and the same weights bit for bit, for the routing of every target family (Mixtral's
// softmax top-2, Qwen3's 128 experts, DeepSeek-V3's grouped sigmoid with biases and a scale,
// Kimi's 384 experts, the demo model's), at the kernel's limits, and on ties and -inf scores;
// and the decode tables (the chosen experts' gate, up and down in increasing id, each
// selection's rank).
// What route_on_device wrote (after a sync): n_k ids and weights of a call over n tokens, and
// the bytes of one token's DeviceChoice with its decode tables.
struct RoutedBack {
  std::vector<int32_t> ids;
  std::vector<float> w;
  std::vector<uint8_t> choice;
};
RoutedBack routed_back(const gpu::DeviceBuffer& d_ids, const gpu::DeviceBuffer& d_w,
                       const gpu::DeviceBuffer& d_one, size_t n_k) {
  RoutedBack b{std::vector<int32_t>(n_k), std::vector<float>(n_k), std::vector<uint8_t>(d_one.size())};
  MOEPACK_CUDA_CHECK(cudaMemcpy(b.ids.data(), d_ids.bytes_ptr(), n_k * 4, cudaMemcpyDeviceToHost));
  MOEPACK_CUDA_CHECK(cudaMemcpy(b.w.data(), d_w.bytes_ptr(), n_k * 4, cudaMemcpyDeviceToHost));
  MOEPACK_CUDA_CHECK(cudaMemcpy(b.choice.data(), d_one.bytes_ptr(), b.choice.size(), cudaMemcpyDeviceToHost));
  return b;
}

TEST(CudaBackend, RouteOnDeviceEqualsRouteToken) {
  struct Routing {
    const char* name;
    uint32_t X, K;
    ExpertGating gating;
    uint32_t groups, used;
    bool bias, norm;
    float scale;
  };
  const Routing cases[] = {
      {"mixtral", 8, 2, ExpertGating::Softmax, 0, 0, false, true, 1.0f},
      {"qwen3moe", 128, 8, ExpertGating::Softmax, 0, 0, false, true, 1.0f},
      {"softmax-unnormalised", 60, 4, ExpertGating::Softmax, 0, 0, false, false, 1.0f},
      {"deepseek-v3", 256, 8, ExpertGating::Sigmoid, 8, 4, true, true, 2.5f},
      {"kimi", 384, 8, ExpertGating::Sigmoid, 1, 1, true, true, 2.827f},
      {"demo", 32, 4, ExpertGating::Sigmoid, 0, 0, true, true, 1.0f},
      {"groups-of-one", 8, 3, ExpertGating::Sigmoid, 8, 5, true, false, 1.0f},
      {"uneven-groups", 10, 3, ExpertGating::Sigmoid, 4, 2, true, true, 1.0f},  // experts 8, 9 in none
      {"limits", 1024, 32, ExpertGating::Softmax, 32, 3, false, true, 1.0f},
      {"single", 1, 1, ExpertGating::Softmax, 0, 0, false, true, 1.0f},
      {"deepseek-v4", 256, 6, ExpertGating::SqrtSoftplus, 0, 0, true, true, 1.5f},
      {"sqrt-softplus-unnormalised", 64, 8, ExpertGating::SqrtSoftplus, 0, 0, false, false, 1.0f},
  };
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  gpu::Stream stream;
  // Made-up bases of the decode tables (the kernel only adds e times a stride to them).
  const gpu::ExpertBases bases{reinterpret_cast<const uint8_t*>(0x100000), reinterpret_cast<const uint8_t*>(0x900000),
                               reinterpret_cast<const uint8_t*>(0x1100000), 4096, 4160, 8192};
  for (const Routing& rc : cases) {
    SCOPED_TRACE(rc.name);
    ModelConfig cfg;
    cfg.arch = rc.name;
    cfg.n_expert = rc.X;
    cfg.n_expert_used = rc.K;
    cfg.gating = rc.gating;
    cfg.n_expert_groups = rc.groups;
    cfg.n_group_used = rc.used;
    cfg.expert_weights_norm = rc.norm;
    cfg.expert_weights_scale = rc.scale;
    ASSERT_TRUE(gpu::device_routing_supports(cfg));
    const gpu::DeviceRouteSpec spec = gpu::device_route_spec(cfg);
    const int32_t X = static_cast<int32_t>(rc.X), K = static_cast<int32_t>(rc.K);
    // Tokens: random scores, then all equal (ties everywhere), a few levels (many ties), and
    // (softmax) half the scores -inf.
    std::vector<std::vector<float>> toks;
    for (int t = 0; t < 6; ++t) {
      std::vector<float> v(X);
      for (float& f : v) f = nd(rng);
      toks.push_back(v);
    }
    toks.emplace_back(X, 0.25f);
    {
      std::vector<float> v(X);
      for (int i = 0; i < X; ++i) v[i] = static_cast<float>((i * 7) % 3) - 1.0f;
      toks.push_back(v);
    }
    if (rc.gating == ExpertGating::Softmax) {
      std::vector<float> v(X);
      for (int i = 0; i < X; ++i) v[i] = i % 2 ? -INFINITY : nd(rng);
      if (X == 1) v[0] = 0.5f;
      toks.push_back(v);
    }
    if (rc.gating == ExpertGating::SqrtSoftplus) {  // softplus's ranges: e^x below F32, the cut-off at 20
      std::vector<float> v(X);
      for (int i = 0; i < X; ++i) v[i] = -110.0f + 140.0f * static_cast<float>(i) / static_cast<float>(X);
      toks.push_back(v);
    }
    std::vector<float> bias(X);
    for (float& f : bias) f = 0.1f * nd(rng);
    const int32_t n = static_cast<int32_t>(toks.size());
    std::vector<float> scores;
    for (const auto& v : toks) scores.insert(scores.end(), v.begin(), v.end());
    gpu::DeviceBuffer d_scores(scores.size() * sizeof(float), "scores"),
        d_bias(bias.size() * sizeof(float), "bias"), d_ids(static_cast<size_t>(n) * K * 4, "ids"),
        d_w(static_cast<size_t>(n) * K * 4, "weights"),
        d_one(static_cast<size_t>(gpu::device_choice_bytes(K)), "choice");
    MOEPACK_CUDA_CHECK(
        cudaMemcpy(d_scores.bytes_ptr(), scores.data(), d_scores.size(), cudaMemcpyHostToDevice));
    MOEPACK_CUDA_CHECK(cudaMemcpy(d_bias.bytes_ptr(), bias.data(), d_bias.size(), cudaMemcpyHostToDevice));
    const float* bias_dev = rc.bias ? d_bias.as<float>() : nullptr;
    gpu::DeviceChoice all;
    all.ids = d_ids.as<int32_t>();
    all.weights = d_w.as<float>();
    gpu::route_on_device(spec, d_scores.as<float>(), n, bias_dev, all, {}, stream.get());
    // One token with the decode tables, at the made-up bases.
    const gpu::DeviceChoice one = gpu::device_choice_at(d_one.bytes_ptr(), K);
    const uint64_t routed = gpu::device_routed_blocks();
    gpu::route_on_device(spec, d_scores.as<float>(), 1, bias_dev, one, bases, stream.get());
    EXPECT_EQ(gpu::device_routed_blocks(), routed + 1);
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    RoutedBack back = routed_back(d_ids, d_w, d_one, static_cast<size_t>(n) * K);
    const std::vector<int32_t>& ids = back.ids;
    const std::vector<float>& w = back.w;
    std::vector<uint8_t>& choice = back.choice;
    std::vector<float> scratch(2 * static_cast<size_t>(X)), want_w(K);
    std::vector<int32_t> want_ids(K);
    for (int32_t t = 0; t < n; ++t) {
      SCOPED_TRACE("token " + std::to_string(t));
      route_token(cfg, scores.data() + static_cast<size_t>(t) * X, rc.bias ? bias.data() : nullptr,
                  want_ids.data(), want_w.data(), scratch.data());
      for (int32_t k = 0; k < K; ++k) {
        EXPECT_EQ(ids[t * K + k], want_ids[k]) << "k " << k;
        EXPECT_EQ(std::memcmp(&w[t * K + k], &want_w[k], sizeof(float)), 0)
            << "k " << k << ": " << w[t * K + k] << " against " << want_w[k];
      }
      if (t != 0) continue;
      const gpu::DeviceChoice c = gpu::device_choice_at(choice.data(), K);
      std::vector<int32_t> sorted(want_ids);
      std::sort(sorted.begin(), sorted.end());
      for (int32_t k = 0; k < K; ++k) {
        EXPECT_EQ(c.ids[k], want_ids[k]);
        EXPECT_EQ(std::memcmp(&c.weights[k], &want_w[k], sizeof(float)), 0);
        const int32_t rank =
            static_cast<int32_t>(std::find(sorted.begin(), sorted.end(), want_ids[k]) - sorted.begin());
        EXPECT_EQ(c.pair_of[k], rank) << "k " << k;
        const uint64_t e = static_cast<uint64_t>(sorted[k]);
        EXPECT_EQ(c.table[k], bases.gate + e * 4096) << "gate of group " << k;
        EXPECT_EQ(c.table[K + k], bases.up + e * 4160) << "up of group " << k;
        EXPECT_EQ(c.table[2 * K + k], bases.down + e * 8192) << "down of group " << k;
      }
    }
  }
  // NaN scores, an infinite Softmax logit (every probability NaN) and a row of -inf: no
  // equality promised (route_token's order is unspecified there), but k distinct experts in
  // range, their table entries and ranks consistent.
  for (const ExpertGating g : {ExpertGating::Softmax, ExpertGating::Sigmoid}) {
    for (const uint32_t X : {8u, 40u, 256u}) {
      SCOPED_TRACE(std::string(g == ExpertGating::Softmax ? "softmax" : "sigmoid") + " over " +
                   std::to_string(X));
      ModelConfig cfg;
      cfg.arch = "nan";
      cfg.n_expert = X;
      cfg.n_expert_used = 4;
      cfg.gating = g;
      cfg.expert_weights_norm = true;
      const int32_t K = 4, XI = static_cast<int32_t>(X);
      std::vector<float> scores;
      for (int row = 0; row < 3; ++row) {
        for (int32_t i = 0; i < XI; ++i) {
          float v = nd(rng);
          if (row == 0 && i % 3 == 1) v = NAN;
          if (row == 1 && i == XI / 2) v = INFINITY;
          if (row == 2) v = -INFINITY;
          scores.push_back(v);
        }
      }
      gpu::DeviceBuffer d_scores(scores.size() * sizeof(float), "scores"),
          d_choice(static_cast<size_t>(gpu::device_choice_bytes(K)), "choice");
      MOEPACK_CUDA_CHECK(
          cudaMemcpy(d_scores.bytes_ptr(), scores.data(), d_scores.size(), cudaMemcpyHostToDevice));
      for (int row = 0; row < 3; ++row) {
        SCOPED_TRACE("row " + std::to_string(row));
        const gpu::DeviceChoice one = gpu::device_choice_at(d_choice.bytes_ptr(), K);
        gpu::route_on_device(gpu::device_route_spec(cfg), d_scores.as<float>() + row * XI, 1, nullptr, one,
                             bases, stream.get());
        std::vector<uint8_t> choice(d_choice.size());
        MOEPACK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        MOEPACK_CUDA_CHECK(
            cudaMemcpy(choice.data(), d_choice.bytes_ptr(), choice.size(), cudaMemcpyDeviceToHost));
        const gpu::DeviceChoice c = gpu::device_choice_at(choice.data(), K);
        std::vector<int32_t> ids(c.ids, c.ids + K), sorted(ids);
        std::sort(sorted.begin(), sorted.end());
        EXPECT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) << "distinct ids";
        for (int32_t k = 0; k < K; ++k) {
          EXPECT_GE(ids[k], 0);
          EXPECT_LT(ids[k], XI);
          EXPECT_EQ(sorted[c.pair_of[k]], ids[k]) << "rank of selection " << k;
          EXPECT_EQ(c.table[k], bases.gate + static_cast<uint64_t>(sorted[k]) * 4096);
        }
      }
    }
  }

  // DeepSeek-V4's hash-routed blocks: the experts are the tid2eid row of the token id (device), in
  // its order; the weights ds4::hash_route's bit for bit; one token's decode tables too.
  {
    ModelConfig cfg;
    cfg.arch = "deepseek4";
    cfg.n_expert = 64;
    cfg.n_expert_used = 6;
    cfg.gating = ExpertGating::SqrtSoftplus;
    cfg.expert_weights_norm = true;
    cfg.expert_weights_scale = 1.5f;
    const int32_t X = 64, K = 6, n_vocab = 50, n = 5;
    std::vector<int32_t> table;
    for (int32_t v = 0; v < n_vocab; ++v) {
      std::vector<int32_t> perm(X);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      table.insert(table.end(), perm.begin(), perm.begin() + K);
    }
    const std::vector<int32_t> tokens = {7, 0, 49, 7, 23};
    std::vector<float> scores(static_cast<size_t>(n) * X);
    for (float& f : scores) f = nd(rng);
    gpu::DeviceBuffer d_scores(scores.size() * 4, "scores"), d_table(table.size() * 4, "tid2eid"),
        d_tok(tokens.size() * 4, "tokens"), d_ids(static_cast<size_t>(n) * K * 4, "ids"),
        d_w(static_cast<size_t>(n) * K * 4, "weights"),
        d_one(static_cast<size_t>(gpu::device_choice_bytes(K)), "one");
    MOEPACK_CUDA_CHECK(
        cudaMemcpy(d_scores.bytes_ptr(), scores.data(), d_scores.size(), cudaMemcpyHostToDevice));
    MOEPACK_CUDA_CHECK(cudaMemcpy(d_table.bytes_ptr(), table.data(), d_table.size(), cudaMemcpyHostToDevice));
    MOEPACK_CUDA_CHECK(cudaMemcpy(d_tok.bytes_ptr(), tokens.data(), d_tok.size(), cudaMemcpyHostToDevice));
    const gpu::DeviceRouteSpec spec = gpu::device_route_spec(cfg);
    gpu::DeviceChoice all;
    all.ids = d_ids.as<int32_t>();
    all.weights = d_w.as<float>();
    gpu::route_on_device(spec, d_scores.as<float>(), n, nullptr, all, {}, stream.get(), d_table.as<int32_t>(),
                         d_tok.as<int32_t>());
    const gpu::DeviceChoice one = gpu::device_choice_at(d_one.bytes_ptr(), K);
    gpu::route_on_device(spec, d_scores.as<float>(), 1, nullptr, one, bases, stream.get(),
                         d_table.as<int32_t>(), d_tok.as<int32_t>());
    MOEPACK_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    RoutedBack back = routed_back(d_ids, d_w, d_one, static_cast<size_t>(n) * K);
    const std::vector<int32_t>& ids = back.ids;
    const std::vector<float>& w = back.w;
    std::vector<uint8_t>& choice = back.choice;
    for (int32_t t = 0; t < n; ++t) {
      SCOPED_TRACE("hash-routed token " + std::to_string(t));
      std::vector<int32_t> want_ids(K);
      std::vector<float> want_w(K);
      ds4::hash_route(cfg, scores.data() + static_cast<size_t>(t) * X,
                      table.data() + static_cast<size_t>(tokens[static_cast<size_t>(t)]) * K, want_ids.data(),
                      want_w.data());
      EXPECT_EQ(std::memcmp(&ids[static_cast<size_t>(t) * K], want_ids.data(), K * 4), 0);
      EXPECT_EQ(std::memcmp(&w[static_cast<size_t>(t) * K], want_w.data(), K * 4), 0);
      if (t != 0) continue;
      const gpu::DeviceChoice c = gpu::device_choice_at(choice.data(), K);
      std::vector<int32_t> sorted(want_ids);
      std::sort(sorted.begin(), sorted.end());
      for (int32_t k = 0; k < K; ++k) {
        EXPECT_EQ(c.ids[k], want_ids[k]);
        EXPECT_EQ(std::memcmp(&c.weights[k], &want_w[k], sizeof(float)), 0);
        EXPECT_EQ(sorted[c.pair_of[k]], want_ids[k]) << "rank of selection " << k;
        EXPECT_EQ(c.table[k], bases.gate + static_cast<uint64_t>(sorted[k]) * 4096);
      }
    }
    EXPECT_THROW(gpu::route_on_device(spec, d_scores.as<float>(), 1, nullptr, one, bases, stream.get(),
                                      d_table.as<int32_t>(), nullptr),
                 Error);
  }

  // Outside the kernel's limits: a clear Error, nothing launched.
  ModelConfig big;
  big.arch = "too-many";
  big.n_expert = 2048;
  big.n_expert_used = 8;
  EXPECT_FALSE(gpu::device_routing_supports(big));
  EXPECT_THROW(gpu::device_route_spec(big), Error);
  big.n_expert = 64;
  big.gating = ExpertGating::SqrtSoftplus;  // DeepSeek-V4's gating: inside
  EXPECT_TRUE(gpu::device_routing_supports(big));
  big.n_expert_groups = 64;  // more groups than a warp's lanes: outside
  big.n_group_used = 4;
  EXPECT_FALSE(gpu::device_routing_supports(big));
  EXPECT_THROW(gpu::device_route_spec(big), Error);
}

// Decode steps routed on the GPU give the host routing's logits and routing reports bit for bit.
TEST(CudaBackend, RouterOnDeviceChangesNoLogitOfTheDemoModel) {
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  test::expect_router_on_device_changes_no_logit(kDemo, tokens, make_backend);
}

TEST(CudaBackend, DecodeGraphChangesNoLogitOfTheDemoModel) {
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  test::expect_decode_graph_changes_no_logit(kDemo, tokens, make_backend);
}

// The positions a decode graph serves (gpu/decode_graph.h): the KV cache's up to 4096, beyond
// that the least of 4096 * 2^i that covers the step, at most n_ctx.
TEST(CudaBackend, DecodeGraphBoundsDoubleFrom4096) {
  using gpu::DecodeGraph;
  EXPECT_EQ(DecodeGraph::bound_for(0, 2048), 2048);
  EXPECT_EQ(DecodeGraph::bound_for(4095, 4096), 4096);
  EXPECT_EQ(DecodeGraph::bound_for(0, 131072), 4096);
  EXPECT_EQ(DecodeGraph::bound_for(4095, 131072), 4096);
  EXPECT_EQ(DecodeGraph::bound_for(4096, 131072), 8192);
  EXPECT_EQ(DecodeGraph::bound_for(8191, 131072), 8192);
  EXPECT_EQ(DecodeGraph::bound_for(8192, 131072), 16384);
  EXPECT_EQ(DecodeGraph::bound_for(100000, 131072), 131072);
  EXPECT_EQ(DecodeGraph::bound_for(4096, 4200), 4200);
  EXPECT_EQ(DecodeGraph::bound_for(5000, 6000), 6000);
}

// Decode graphs serve positions on both sides of attention's 4096-position range split:
// GQA (llama-moe, 32,768 positions trained) and MLA (deepseek2, 163,840).
TEST(CudaBackend, DecodeGraphCrossesTheAttentionRangeSplit) {
  int ran = 0;
  for (const char* m :
       {"llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf", "deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf"}) {
    if (!std::filesystem::exists(kFixtures + m)) {
      std::printf("  %s not carried to this machine\n", m);
      continue;
    }
    SCOPED_TRACE(m);
    test::expect_decode_graph_crosses_the_range_split(kFixtures + m, make_backend);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "neither fixture carried to this machine";
}

// One decode graph serves every position, truncations included (tests/gpu/engine_switch_check.h);
// a batch that grows the common backend's buffers drops its graph (direct, capture, replay: 2
// graph launches of the 3 decodes after it), a batch that grows none keeps it.
TEST(CudaBackend, DecodeGraphServesEveryPositionAfterATruncation) {
  const std::vector<int32_t> prompt = {0, 17, 345, 1024, 77, 5, 4000, 12};
  test::expect_decode_graph_serves_every_position(kDemo, prompt, make_backend, 2);
}

// The residual add fused with the RMSNorm after it (the shared expert's output with it) changes
// no logit of the demo model (a dense first block, then MoE blocks with a shared expert).
TEST(CudaBackend, ResidualNormFusionChangesNoLogitOfTheDemoModel) {
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  test::expect_residual_norm_fusion_changes_no_logit(kDemo, tokens, make_backend);
}

TEST(CudaBackend, HostSizesChangeNoLogitOfTheDemoModel) {
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12, 9, 230, 7, 1500, 3, 64, 88, 2};
  test::expect_host_sizes_change_no_logit(kDemo, tokens, make_backend);
}

TEST(CudaBackend, SharedExpertOverlapChangesNoLogitOfTheDemoModel) {
  ASSERT_GT(ModelSource::open(kDemo)->config().n_expert_shared, 0u);
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  test::expect_shared_expert_overlap_changes_no_logit(kDemo, tokens, make_backend);
}

std::vector<char> expert_file_bytes(const ExpertPack& pack, uint32_t e) {
  std::vector<char> v(pack.stride(1));
  std::ifstream f(pack.experts_path(), std::ios::binary);
  f.seekg(static_cast<std::streamoff>(pack.expert_offset(1, e)));
  f.read(v.data(), static_cast<std::streamsize>(v.size()));
  return v;
}

// `bytes` bytes of VRAM at p once the work queued on st is done.
std::vector<char> vram_bytes(const uint8_t* p, uint64_t bytes, cudaStream_t st) {
  std::vector<char> v(bytes);
  EXPECT_EQ(cudaStreamSynchronize(st), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(v.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

// The pool's prefetch on the demo pack, SHA-256 checks on: prefetched experts arrive byte for
// byte as the file holds them and count as misses plus prefetch hits when used; a corrupted
// block that was prefetched is not delivered, and the acquire() that needs it reports it.
TEST(CudaBackend, PrefetchedExpertsArriveIntactAndABadOneIsReportedOnUse) {
  test::TempDir dir("moepack-cuda-prefetch-pool");
  const std::string pack_dir = test::build_test_pack(kDemo, dir);
  const ExpertPack probe = ExpertPack::open(pack_dir);
  ASSERT_GE(probe.layout().layers.size(), 2u);
  ASSERT_GE(probe.layout().layers[1].n_experts, 10u);
  const uint64_t bad_at = probe.expert_offset(1, 5) + 100;
  {
    std::fstream f(probe.experts_path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(bad_at));
    const char b = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(bad_at));
    f.put(static_cast<char>(b ^ 0x5a));
  }
  const ExpertPack pack = ExpertPack::open(pack_dir);
  const uint64_t stride = pack.stride(1);
  const auto file_bytes = [&](uint32_t e) { return expert_file_bytes(pack, e); };
  const auto vram = [&](const uint8_t* p, cudaStream_t st) { return vram_bytes(p, stride, st); };
  gpu::VramPoolSettings ps;
  ps.cache_bytes = 6 * pack.layout().max_stride;
  ps.reserve_bytes = 0;
  ps.verify_pack_sha256 = true;
  ps.prefetch_slots = 4;
  gpu::VramExpertPool pool(pack, ps, 2);
  gpu::Stream st;
  const std::vector<uint32_t> predicted = {3, 5, 7};
  EXPECT_EQ(pool.prefetch(1, predicted), 3u);
  double io_wait = 0;
  const std::vector<uint32_t> first = {3, 9};
  const auto a = pool.acquire(1, first, st.get(), &io_wait);
  EXPECT_EQ(vram(a[0], st.get()), file_bytes(3));
  EXPECT_EQ(vram(a[1], st.get()), file_bytes(9));
  pool.release(st.get());
  const std::vector<uint32_t> second = {7};
  const auto b = pool.acquire(1, second, st.get(), &io_wait);
  EXPECT_EQ(vram(b[0], st.get()), file_bytes(7));
  pool.release(st.get());
  pool.finish_prefetch(&io_wait);  // 5 may still be in flight: no acquire waited for it
  gpu::VramPoolCounters c = pool.counters();
  EXPECT_EQ(c.cache.prefetches, 3u);
  EXPECT_EQ(c.cache.prefetch_hits, 2u);
  EXPECT_EQ(c.cache.cache_misses, 3u);  // 3 and 7 (prefetched), 9
  EXPECT_EQ(c.cache.cache_hits, 0u);
  EXPECT_EQ(c.pack_read_bytes, 4 * stride);  // 3, 5, 7 ahead; 9
  EXPECT_EQ(c.h2d_bytes, 3 * stride);        // 5 failed its check: not delivered
  // Expert 5 was forgotten: using it reads it again, and the check names it.
  const std::vector<uint32_t> third = {5};
  try {
    pool.acquire(1, third, st.get(), &io_wait);
    ADD_FAILURE() << "expected the SHA-256 error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("expert 5 of layer 1"), std::string::npos) << m;
    EXPECT_NE(m.find("SHA-256"), std::string::npos) << m;
  }
  // Prefetched and needed by the very next acquire: reported there.
  const std::vector<uint32_t> five = {5};
  EXPECT_EQ(pool.prefetch(1, five), 1u);
  const uint64_t read_before = pool.counters().pack_read_bytes;
  EXPECT_THROW(pool.acquire(1, third, st.get(), &io_wait), Error);
  EXPECT_EQ(pool.counters().pack_read_bytes, read_before + stride);  // from the prefetch read, not read again
  // 3 slots, top-k 2: a round leaves room for the next acquire's top-k, so 1 of 3 is read
  // ahead. An acquire of 3 experts does not fit beside that read in flight (3 + 1 > 3): the read
  // is finished first, and its expert is evicted for the misses; all arrive intact.
  ps.cache_bytes = 3 * pack.layout().max_stride;
  ps.verify_pack_sha256 = false;
  gpu::VramExpertPool small(pack, ps, 2);
  const std::vector<uint32_t> ahead = {3, 7, 9}, now = {7, 11, 12};
  EXPECT_EQ(small.prefetch(1, ahead), 1u);
  const auto d = small.acquire(1, now, st.get(), &io_wait);
  EXPECT_EQ(vram(d[0], st.get()), file_bytes(7));
  EXPECT_EQ(vram(d[1], st.get()), file_bytes(11));
  EXPECT_EQ(vram(d[2], st.get()), file_bytes(12));
  small.release(st.get());
  EXPECT_EQ(small.counters().cache.prefetch_hits, 0u);
  EXPECT_EQ(small.counters().cache.cache_evictions, 1u);
  EXPECT_EQ(small.counters().pack_read_bytes, 4 * stride);
  // Prefetch off: nothing is read ahead.
  ps.prefetch_slots = 0;
  gpu::VramExpertPool off(pack, ps, 2);
  EXPECT_EQ(off.prefetch(1, predicted), 0u);
  EXPECT_EQ(off.counters().pack_read_bytes, 0u);
}

// Prefetch reads an acquire does not use stay in flight past it, and own their slots until
// they land; `protect` keeps the next layer's experts from being evicted (and limits what is
// placed). Every expert arrives as the file holds it.
TEST(CudaBackend, PrefetchReadsStayInFlightPastAnAcquireThatDoesNotUseThem) {
  test::TempDir dir("moepack-cuda-prefetch-flight");
  const ExpertPack pack = ExpertPack::open(test::build_test_pack(kDemo, dir));
  ASSERT_GE(pack.layout().layers.size(), 2u);
  ASSERT_GE(pack.layout().layers[1].n_experts, 8u);
  const uint64_t stride = pack.stride(1);
  const auto file_bytes = [&](uint32_t e) { return expert_file_bytes(pack, e); };
  gpu::Stream st;
  const auto vram = [&](const uint8_t* p) { return vram_bytes(p, stride, st.get()); };
  gpu::VramPoolSettings ps;
  ps.cache_bytes = 6 * pack.layout().max_stride;
  ps.reserve_bytes = 0;
  ps.prefetch_slots = 6;
  gpu::VramExpertPool pool(pack, ps, 2);
  double io_wait = 0;
  const std::vector<uint32_t> now = {1, 2};
  pool.acquire(1, now, st.get(), &io_wait);
  pool.release(st.get());
  // 6 slots, 1 and 2 protected: 4 of the 5 predicted are placed.
  const std::vector<uint32_t> predicted = {3, 4, 5, 6, 7};
  const std::vector<ExpertKey> protect = {{1, 1}, {1, 2}};
  EXPECT_EQ(pool.prefetch(1, predicted, protect, &io_wait), 4u);
  // A second round while those 4 are in flight (nothing has waited for them): their slots are
  // theirs, 1 and 2 are protected, so 7 finds no room.
  const std::vector<uint32_t> seven = {7};
  EXPECT_EQ(pool.prefetch(1, seven, protect, &io_wait), 0u);
  const auto a = pool.acquire(1, now, st.get(), &io_wait);  // both resident: no read waited for
  EXPECT_EQ(vram(a[0]), file_bytes(1));
  EXPECT_EQ(vram(a[1]), file_bytes(2));
  pool.release(st.get());
  const std::vector<uint32_t> four = {4};
  const auto b = pool.acquire(1, four, st.get(), &io_wait);
  EXPECT_EQ(vram(b[0]), file_bytes(4));
  pool.release(st.get());
  // Once 3, 5, 6 have landed, 7 may evict none of 1, 2, 4 (protected) but one of 3, 5, 6 (used
  // 0 times; the lowest slot: 3).
  pool.finish_prefetch(&io_wait);
  const std::vector<ExpertKey> keep3 = {{1, 1}, {1, 2}, {1, 4}};
  EXPECT_EQ(pool.prefetch(1, seven, keep3, &io_wait), 1u);
  const auto c = pool.acquire(1, seven, st.get(), &io_wait);
  EXPECT_EQ(vram(c[0]), file_bytes(7));
  pool.release(st.get());
  const gpu::VramPoolCounters n = pool.counters();
  EXPECT_EQ(n.cache.prefetches, 5u);
  EXPECT_EQ(n.cache.prefetch_hits, 2u);  // 4 and 7
  EXPECT_EQ(n.cache.cache_evictions, 1u);
  EXPECT_EQ(n.pack_read_bytes, 7 * stride);  // 1, 2, then 3-7 ahead
  EXPECT_EQ(n.h2d_bytes, 7 * stride);
  // Room is kept for the protected experts that are not resident yet: 6 slots, {1, 2} resident,
  // {3, 4} to be read by the next acquire, so only 2 of {5, 6, 7} are read ahead; that acquire
  // then fits beside them (4 + 2 <= 6) and the prefetches survive it to be used.
  gpu::VramExpertPool room(pack, ps, 2);
  room.acquire(1, now, st.get(), &io_wait);
  room.release(st.get());
  const std::vector<uint32_t> ahead = {5, 6, 7};
  const std::vector<ExpertKey> next4 = {{1, 1}, {1, 2}, {1, 3}, {1, 4}};
  EXPECT_EQ(room.prefetch(1, ahead, next4, &io_wait), 2u);
  const std::vector<uint32_t> four_now = {1, 2, 3, 4};
  room.acquire(1, four_now, st.get(), &io_wait);
  room.release(st.get());
  const std::vector<uint32_t> both = {5, 6};
  const auto r = room.acquire(1, both, st.get(), &io_wait);
  EXPECT_EQ(vram(r[0]), file_bytes(5));
  EXPECT_EQ(vram(r[1]), file_bytes(6));
  room.release(st.get());
  EXPECT_EQ(room.counters().cache.prefetch_hits, 2u);
  EXPECT_EQ(room.counters().cache.cache_evictions, 0u);
  // No room outside the protected experts: nothing placed.
  ps.cache_bytes = 2 * pack.layout().max_stride;
  gpu::VramExpertPool two(pack, ps, 2);
  two.acquire(1, now, st.get(), &io_wait);
  two.release(st.get());
  EXPECT_EQ(two.prefetch(1, predicted, protect, &io_wait), 0u);
  EXPECT_EQ(two.counters().pack_read_bytes, 2 * stride);
}

// The pool's host-RAM tier on the demo pack, LRU, 3 VRAM slots (top-k 2) and 2 RAM slots (core/
// victim_tier.h), layer 1. Worked by hand (t = access order; s = VRAM slot, r = RAM slot):
//   {1,2}: read into s0 s1.  {3}: read into s2.
//   {4}: evicts 1 (t1) -> r0; 4 read.
//   {1}: 1 comes up from r0 (RAM hit 1); evicts 2 (t2) -> r1 (r0 is being read up).
//   {2,5}: 2 comes up from r1 (hit 2); evicts 3 and 4 (t3, t4): 3 -> r0 (free again), then 4
//          takes r0 too (r1 is being read up). A plan queues at most one copy into a RAM slot,
//          so 3's copy down is not made (nor counted as a demotion or drop): 4 -> r0; 5 read.
//   {3}: read again (dropped); evicts 1 (t5) -> r1.
//   {1}: comes up from r1 (hit 3); evicts 2 (t6) -> r0, dropping 4.
//   prefetch {2}: comes up from r0 at once (hit 4, no read); evicts 5 (t7) -> r1.
// Reads 1 2 3 4 5 3 = 6, RAM hits 4, demotions 1 2 4 1 2 5 = 6, drops 1 (4 at t6); every block
// handed out holds the file's bytes. (Before the forty-first session's one-copy-per-slot rule:
// 7 demotions, 2 drops; the H100 run of the forty-second session counted 6 and 1.)
TEST(CudaBackend, RamTierMovesExpertsDownAndBackUpIntact) {
  test::TempDir dir("moepack-cuda-ram-pool");
  const ExpertPack pack = ExpertPack::open(test::build_test_pack(kDemo, dir));
  ASSERT_GE(pack.layout().layers.size(), 2u);
  const uint64_t stride = pack.stride(1);
  const auto file_bytes = [&](uint32_t e) { return expert_file_bytes(pack, e); };
  gpu::Stream st;
  const auto vram = [&](const uint8_t* p) { return vram_bytes(p, stride, st.get()); };
  gpu::VramPoolSettings ps;
  ps.cache_bytes = 3 * pack.layout().max_stride;
  ps.reserve_bytes = 0;
  ps.policy = "lru";
  ps.prefetch_slots = 2;
  ps.ram_tier_bytes = 2 * pack.layout().max_stride;
  ps.ram_tier_admission = TierAdmission::kAll;  // every eviction goes down (frequency: below)
  gpu::VramExpertPool pool(pack, ps, 2);
  ASSERT_EQ(pool.slot_count(), 3u);
  ASSERT_EQ(pool.ram_tier_slots(), 2u);
  double io_wait = 0;
  const auto use = [&](std::vector<uint32_t> ids) {
    const auto blocks = pool.acquire(1, ids, st.get(), &io_wait);
    for (size_t i = 0; i < ids.size(); ++i)
      EXPECT_EQ(vram(blocks[i]), file_bytes(ids[i])) << "expert " << ids[i];
    pool.release(st.get());
    pool.end_step();
  };
  use({1, 2});
  use({3});
  use({4});
  use({1});
  use({2, 5});
  use({3});
  use({1});
  EXPECT_EQ(pool.counters().ram.hits, 3u);
  const std::vector<uint32_t> two = {2};
  EXPECT_EQ(pool.prefetch(1, two, {}, &io_wait), 1u);
  use({2});
  const gpu::VramPoolCounters c = pool.counters();
  EXPECT_EQ(c.pack_read_bytes, 6 * stride);
  EXPECT_EQ(c.ram.hits, 4u);
  EXPECT_EQ(c.ram.lookups, 10u);  // every VRAM miss: 1 2 3 4 1 2 5 3 1 2
  EXPECT_EQ(c.ram.demotions, 6u);
  EXPECT_EQ(c.ram.drops, 1u);
  EXPECT_EQ(c.d2h_bytes, 6 * stride);
  EXPECT_EQ(c.h2d_bytes, 10 * stride);  // 6 reads + 4 copies up
  EXPECT_EQ(c.cache.prefetch_hits, 1u);
  // Off: no tier, no copies down.
  ps.ram_tier_bytes = 0;
  gpu::VramExpertPool off(pack, ps, 2);
  EXPECT_EQ(off.ram_tier_slots(), 0u);
}

// TinyLFU's admission (the default, core/victim_tier.h) in the pool, on the classic sequence
// 1 2 3 4 1 2 5 1 2 3 4 5 worked by hand in tests/core/expert_cache_test.cpp (CacheSim,
// RamTierBehindTheCache): 3 VRAM slots (LRU), 2 RAM slots; 5's eviction (1 use) would displace
// 4 (1 use) and is not copied down, so 5 is read twice. Reads 6, RAM hits 4, copies down 6.
// Every block handed out holds the file's bytes.
TEST(CudaBackend, RamTierFrequencyAdmissionCopiesDownOnlyWhatItKeeps) {
  test::TempDir dir("moepack-cuda-ram-freq");
  const ExpertPack pack = ExpertPack::open(test::build_test_pack(kDemo, dir));
  const uint64_t stride = pack.stride(1);
  gpu::Stream st;
  gpu::VramPoolSettings ps;
  ps.cache_bytes = 3 * pack.layout().max_stride;
  ps.reserve_bytes = 0;
  ps.policy = "lru";
  ps.ram_tier_bytes = 2 * pack.layout().max_stride;
  gpu::VramExpertPool pool(pack, ps, 1);
  ASSERT_EQ(pool.ram_tier_slots(), 2u);
  double io_wait = 0;
  for (const uint32_t e : {1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5}) {
    const std::vector<uint32_t> ids = {e};
    const auto blocks = pool.acquire(1, ids, st.get(), &io_wait);
    EXPECT_EQ(vram_bytes(blocks[0], stride, st.get()), expert_file_bytes(pack, e)) << "expert " << e;
    pool.release(st.get());
    pool.end_step();
  }
  const gpu::VramPoolCounters c = pool.counters();
  EXPECT_EQ(c.pack_read_bytes, 6 * stride);
  EXPECT_EQ(c.ram.lookups, 10u);
  EXPECT_EQ(c.ram.hits, 4u);
  EXPECT_EQ(c.ram.demotions, 6u);
  EXPECT_EQ(c.ram.not_admitted, 1u);
  EXPECT_EQ(c.d2h_bytes, 6 * stride);
  EXPECT_EQ(c.h2d_bytes, 10 * stride);
}

// cache_ram_mib's default ("auto": half of the RAM available, core/victim_tier.h) on the pack
// path: this machine's RAM holds the demo pack many times over, so the tier is capped at the
// pack's experts; at the smallest budget evicted experts come back from RAM, and the logits are
// the GGUF path's bit for bit.
TEST(CudaBackend, DefaultSettingsSizeTheRamTierFromTheMachine) {
  ASSERT_EQ(EngineSettings{}.cache_ram_mib, EngineSettings::kCacheRamAuto);
  ASSERT_EQ(EngineSettings{}.cache_ram_admission, "frequency");
  const uint64_t available = available_ram_bytes();
  test::TempDir dir("moepack-cuda-ram-auto");
  EngineSettings pack = parity_settings("cuda");
  pack.cache_ram_mib = EngineSettings{}.cache_ram_mib;
  pack.cache_ram_admission = EngineSettings{}.cache_ram_admission;
  const std::vector<int32_t> tokens = {0, 17, 345, 1024, 77, 5, 4000, 12};
  std::vector<test::BudgetRun> runs;
  test::expect_pack_matches_gguf(kDemo, dir, tokens, make_backend, parity_settings("cuda"), pack, &runs);
  ASSERT_FALSE(runs.empty());
  const ExpertPack opened = ExpertPack::open(dir.file("pack"));
  const uint64_t experts = opened.layout().expert_count();
  const uint32_t want =
      ram_tier_slots(auto_ram_tier_bytes(available), available, opened.layout().max_stride, experts);
  ASSERT_GT(want, 0u) << "this machine has too little RAM for the check";
  for (const test::BudgetRun& r : runs) EXPECT_EQ(r.stats.ram_tier_slots, want) << "cache slots " << r.slots;
  EXPECT_GT(runs.back().stats.ram_tier_hits, 0u);
}

// bench-io --vram's phase on the demo model's pack: every asked block is delivered once (the
// layers take turns, so no acquire hits), as whole strides; a device that does not exist is
// an Error.
TEST(CudaBackend, VramDeliveryPhaseDeliversEveryAskedBlock) {
  test::TempDir dir("moepack-cuda-vram-bench");
  const ExpertPack pack = ExpertPack::open(test::build_test_pack(kDemo, dir));
  const PackLayout& L = pack.layout();
  ASSERT_GE(L.layers.size(), 2u);
  IoBenchOptions o;
  o.expert_reads = 37;  // 9 acquires of 4, then 1
  o.batch = 4;
  o.raw_max_bytes = 8u << 20;
  const IoBenchPlan plan = io_bench_plan(L, o, true);
  const VramDeliveryResult v = gpu::vram_delivery_phase(pack, o, plan, 0);
  EXPECT_EQ(v.raw_pinned.bytes, plan.raw_bytes);
  const IoBenchPhase& p = v.delivery;
  EXPECT_EQ(p.reads, 37u);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t l = 0; l < L.layers.size(); ++l) {
    lo = std::min(lo, pack.stride(l));
    hi = std::max(hi, pack.stride(l));
  }
  EXPECT_GE(p.bytes, 37 * lo);
  EXPECT_LE(p.bytes, 37 * hi);
  EXPECT_GT(p.seconds, 0.0);
  // Read two acquires ahead: every block of vram_ahead read once and copied once (reads counts
  // prefetch reads and acquire misses alike).
  const IoBenchPhase& a = v.ahead;
  EXPECT_EQ(a.reads, 37u);
  uint64_t want = 0;
  for (const auto& [l, e] : plan.vram_ahead) want += pack.stride(l);
  EXPECT_EQ(a.bytes, want);
  EXPECT_GT(a.seconds, 0.0);
  const IoBenchResult r = run_io_bench(pack, o, [](const ExpertPack& pk, const IoBenchOptions& po,
                                                   const IoBenchPlan& pl) { return gpu::vram_delivery_phase(pk, po, pl, 0); });
  ASSERT_TRUE(r.vram_delivery.has_value());
  EXPECT_EQ(r.vram_delivery->reads, 37u);
  EXPECT_GT(r.vram_vs_raw_ratio, 0.0);
  ASSERT_TRUE(r.vram_ahead.has_value());
  EXPECT_EQ(r.vram_ahead->reads, 37u);
  EXPECT_GT(r.vram_ahead_vs_raw_pinned_ratio, 0.0);
  EXPECT_THROW(gpu::vram_delivery_phase(pack, o, plan, 99), Error);
  // Alternating rounds (--rounds): each round's raw region read whole into ordinary buffers,
  // each round's blocks delivered once (a fresh pool: every acquire a miss).
  IoBenchOptions o2 = o;
  o2.expert_reads = 8;
  o2.rounds = 2;
  o2.raw_max_bytes = 512u << 10;
  const IoBenchPlan plan2 = io_bench_plan(L, o2, true);
  ASSERT_EQ(plan2.rounds.size(), 2u);
  const VramDeliveryResult v2 = gpu::vram_delivery_phase(pack, o2, plan2, 0);
  ASSERT_EQ(v2.rounds.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE("round " + std::to_string(k));
    EXPECT_EQ(v2.rounds[k].raw_direct.bytes, plan2.raw_bytes);
    EXPECT_GT(v2.rounds[k].raw_direct.seconds, 0.0);
    for (const auto& [got, blocks] : {std::pair{&v2.rounds[k].delivery, &plan2.rounds[k].vram},
                                      {&v2.rounds[k].sequential, &plan2.rounds[k].sequential}}) {
      EXPECT_EQ(got->reads, 8u);
      EXPECT_EQ(got->acquires, io_bench_acquires(*blocks, 4).size());
      uint64_t wk = 0;
      for (const auto& [l, e] : *blocks) wk += pack.stride(l);
      EXPECT_EQ(got->bytes, wk);
      EXPECT_GT(got->seconds, 0.0);
    }
  }
}

}  // namespace
}  // namespace moepack

MOEPACK_GPU_TEST_MAIN_WITH_CUDA_BACKEND()
