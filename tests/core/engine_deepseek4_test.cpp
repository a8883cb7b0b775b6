// The CPU engine on `deepseek4` (DeepSeek-V4-Flash layout) against llama.cpp's own outputs on
// ../shared/fixtures/deepseek4-tiny (README there: reference layout and tolerances). The
// `*.f32-dequant` references (llama.cpp in F32 on weights dequantized by ggml) give the tight
// checks (1e-3 abs logits, identical greedy tokens and expert sets where margins >= 1e-4); the
// native references the loose ones; the Expert Pack of each file must give the GGUF path's logits
// bit for bit at three cache budgets; truncate() must be exact at any position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/backend_factory.h"
#include "core/error.h"
#include "core/model_source.h"
#include "packbuilder/pack_plan.h"
#include "tests/support/arch_fixture.h"
#include "tests/support/fixture_refs.h"

namespace moepack {
namespace {

using test::read_json;

const test::ArchCase kCases[] = {
    {"Q4_K_M", "deepseek4-tiny-Q4_K_M"},
    {"Q2_K", "deepseek4-tiny-Q2_K"},
    {"MXFP4_MOE", "deepseek4-tiny-MXFP4_MOE"},
};

class Deepseek4Fixture : public test::ArchFixture {
 protected:
  Deepseek4Fixture() : ArchFixture(std::string(MOEPACK_SHARED_DIR) + "/fixtures/deepseek4-tiny/", false) {}
  std::unique_ptr<Backend> open() const { return open_cpu(); }
};

// Our tokenizer gives llama.cpp's token ids for every prompt (add_special, no parse_special).
TEST_P(Deepseek4Fixture, TokensMatchReference) { EXPECT_EQ(expect_tokens_match_reference(), 5); }

// Every prompt: top-32 logits at the last prompt position (1e-3 abs, same id set except
// near-ties), all positions of prompt 0 (1e-3), 24 greedy tokens identical, and each greedy
// step's top-8 logits within 1e-3.
TEST_P(Deepseek4Fixture, MatchesF32DequantReference) {
  auto be = open();
  EXPECT_EQ(expect_matches_f32_dequant(*be), 5);
}

// Expert sets per (block, token) for the prompt call and the 23 decode calls of prompt 0 vs the
// recorded routing: hash-routed blocks always (the table decides), learned blocks wherever the
// selection margin is >= 1e-4; final weights within 1e-4 where the set is compared.
TEST_P(Deepseek4Fixture, RoutingMatchesReference) {
  auto be = open();
  const RoutingCompared r = expect_routing_matches_reference(*be);
  EXPECT_GT(r.tokens, 100);
  EXPECT_GT(r.hash_tokens, 50);
}

// Native references (llama.cpp quantizes activations before each matrix product; we do not).
// README: top-1 agrees, top-32 overlap >= 29/32, logits within ~0.3; greedy teacher-forced: the
// reference token's logit within 0.3 of our top-1 at every step.
TEST_P(Deepseek4Fixture, CloseToNativeReference) {
  auto be = open();
  const NativeCloseness c = close_to_native_reference(*be, 28);
  EXPECT_EQ(c.prompts, 5);
  EXPECT_GE(c.top1, 4);  // README: llama.cpp's own F32 run agrees on 4/5 (MXFP4) to 5/5
  EXPECT_LT(c.worst_top32, 0.35f);
  EXPECT_LT(c.worst_teacher_forced_gap, 0.35f);
}

// truncate(n) then forward of the rest equals one pass over everything, at positions inside a
// ratio-4 block, on a block boundary, inside a ratio-128 block, within the rings' reach (O(1))
// and behind it (recomputation from the stored tokens); prefill in pieces equals prefill in one
// batch (the compressed rows are rebuilt as their blocks complete); a failed call changes nothing.
// The 386-token prompt wraps the rings (n_swa + 256 raw slots, 8 + 256 ratio-4 slots).
TEST_P(Deepseek4Fixture, TruncateAndChunkedPrefillAreExact) {
  const nlohmann::json ref = read_json(ref_path(".f32-dequant.json"));
  const auto toks = ref["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(toks.size(), 386u);
  auto be = open();
  const size_t nv = be->config().n_vocab;
  std::vector<float> want(nv), got(nv);
  be->forward(toks, want);
  const auto ids = ref["prompts"][3]["top_logits_last_prompt_pos"]["ids"].get<std::vector<int32_t>>();
  const auto vals = ref["prompts"][3]["top_logits_last_prompt_pos"]["values"].get<std::vector<float>>();
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_NEAR(want[static_cast<size_t>(ids[i])], vals[i], 1e-3f);
  for (const uint32_t cut : {385u, 300u, 199u, 130u, 128u, 65u, 3u, 0u}) {
    SCOPED_TRACE("truncate to " + std::to_string(cut));
    be->truncate(cut);
    be->forward(std::span<const int32_t>(toks.data() + cut, toks.size() - cut), got);
    float w = 0;
    for (size_t i = 0; i < nv; ++i) w = std::max(w, std::fabs(got[i] - want[i]));
    EXPECT_LT(w, 1e-4f);
  }
  be->truncate(0);
  for (size_t b = 0; b < toks.size(); b += 37) {
    be->forward(std::span<const int32_t>(toks.data() + b, std::min<size_t>(37, toks.size() - b)), got);
  }
  float w = 0;
  for (size_t i = 0; i < nv; ++i) w = std::max(w, std::fabs(got[i] - want[i]));
  EXPECT_LT(w, 1e-4f);
  EXPECT_THROW(be->truncate(387), Error);
  // A failing call (token outside the vocabulary) leaves the cache as it was.
  const int32_t bad[2] = {toks[385], static_cast<int32_t>(nv)};
  be->truncate(385);
  EXPECT_THROW(be->forward(bad, got), Error);
  EXPECT_EQ(be->n_past(), 385u);
  be->forward(std::span<const int32_t>(toks.data() + 385, 1), got);
  w = 0;
  for (size_t i = 0; i < nv; ++i) w = std::max(w, std::fabs(got[i] - want[i]));
  EXPECT_LT(w, 1e-4f);
}

// The pack builder keeps hash-routing tables (ffn_gate_tid2eid) and routers dense and packs the
// four blocks' gate/up/down experts; the pack gives the GGUF path's logits bit for bit at
// three cache budgets (all experts, half, one layer's top-k).
TEST_P(Deepseek4Fixture, PackMatchesGgufAtEveryBudget) {
  const auto gsrc = ModelSource::open(model_path());
  const PackPlan plan = plan_pack(gsrc->gguf());
  ASSERT_EQ(plan.layout.layers.size(), 4u);
  for (const auto& l : plan.layout.layers) {
    EXPECT_EQ(l.n_experts, 16u);
    std::set<std::string> roles;
    for (const auto& r : l.roles) roles.insert(r.role);
    EXPECT_EQ(roles, (std::set<std::string>{"gate", "up", "down"}));
  }
  std::set<std::string> dense;
  for (const auto& t : plan.dense_tensors) dense.insert(t.info->name);
  EXPECT_TRUE(dense.count("blk.0.ffn_gate_tid2eid.weight"));
  EXPECT_TRUE(dense.count("blk.1.ffn_gate_tid2eid.weight"));
  EXPECT_TRUE(dense.count("blk.2.exp_probs_b.bias"));
  EXPECT_TRUE(dense.count("blk.3.ffn_gate_inp.weight"));
  for (const auto& n : dense) EXPECT_EQ(n.find("_exps"), std::string::npos) << n;

  expect_cpu_pack_matches_gguf("moepack-dsv4");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Deepseek4Fixture, ::testing::ValuesIn(kCases), test::arch_case_name);

}  // namespace
}  // namespace moepack
