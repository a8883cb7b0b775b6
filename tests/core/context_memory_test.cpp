// Context memory per token / per sequence (core/context_memory.h) on the two new architectures'
// fixtures, against values worked by hand from their READMEs and the specs' §5 formulas.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/context_memory.h"
#include "core/gguf.h"
#include "core/model_config.h"

namespace moepack {
namespace {

const std::string kFixtures = std::string(MOEPACK_SHARED_DIR) + "/fixtures/";

ModelConfig config_of(const std::string& file) { return read_model_config(GgufFile::open(kFixtures + file)); }

// deepseek4-tiny: ratios [0, 0, 4, 128], D = 128, D_I = 64, n_swa = 64, 4 blocks.
//   per token: 1·(128 + 64)·2/4 + 1·128·2/128 = 96 + 2 = 98 B
//   fixed: window 4·64·128·2 = 65,536; CSA state (8·256 + 8·128)·2·4 = 24,576;
//          HCA state 128·128·2·4 = 131,072  → 221,184 B
TEST(ContextMemory, Deepseek4Tiny) {
  const ModelConfig c = config_of("deepseek4-tiny/deepseek4-tiny-Q2_K.gguf");
  ASSERT_EQ(c.compress_ratios, (std::vector<uint32_t>{0, 0, 4, 128}));
  EXPECT_EQ(c.n_swa, 64u);
  EXPECT_EQ(c.n_hash_layers, 2u);
  EXPECT_EQ(c.hc_count, 4u);
  EXPECT_EQ(c.hc_sinkhorn_iters, 20u);
  EXPECT_EQ(c.gating, ExpertGating::SqrtSoftplus);
  EXPECT_FLOAT_EQ(c.swiglu_clamp_exp.at(3), 1.0f);
  EXPECT_FLOAT_EQ(c.swiglu_clamp_shexp.at(3), 1.5f);
  const ContextMemory m = context_memory(c);
  EXPECT_DOUBLE_EQ(m.bytes_per_token, 98.0);
  EXPECT_EQ(m.fixed_bytes, 221184u);
  EXPECT_EQ(m.bytes_for(1000), 221184u + 98000u);
  EXPECT_EQ(context_memory_json(c, m)["bytes_at"]["4096"].get<uint64_t>(), 221184u + 98u * 4096u);
}

// kimi-linear-tiny: layers KDA, KDA, KDA, MLA; r = 512, n_p = 64; H = 4, d = 128, w = 4.
//   per token: 1·(512 + 64)·2 = 1,152 B; fixed: 3·(3·3·512 + 4·128²)·4 = 3·280,576 B (README §5)
TEST(ContextMemory, KimiLinearTiny) {
  const ModelConfig c = config_of("kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf");
  ASSERT_EQ(c.head_count_kv_per_layer, (std::vector<uint32_t>{0, 0, 0, 1}));
  EXPECT_TRUE(c.is_kda_layer(0));
  EXPECT_FALSE(c.is_kda_layer(3));
  const ContextMemory m = context_memory(c);
  EXPECT_DOUBLE_EQ(m.bytes_per_token, 1152.0);
  EXPECT_EQ(m.fixed_bytes, 3u * 280576u);
}

// deepseek2-tiny (absorbed MLA): n_layer · (kv_lora_rank + n_rot) · 2 B per token, nothing fixed.
TEST(ContextMemory, Deepseek2FromItsConfig) {
  const ModelConfig c = config_of("deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf");
  const ContextMemory m = context_memory(c);
  EXPECT_DOUBLE_EQ(m.bytes_per_token, 2.0 * c.n_layer * (c.kv_lora_rank + c.n_rot));
  EXPECT_EQ(m.fixed_bytes, 0u);
  EXPECT_GT(m.bytes_per_token, 0.0);
}

}  // namespace
}  // namespace moepack
