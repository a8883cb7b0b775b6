// Target-model expert shapes (bench/twin_shape.h) against the figures issue 10 quotes from the
// published evaluation, and against hand arithmetic from ggml block sizes (MXFP4: 17 bytes per
// 32 weights; Q2_K 84, Q3_K 110, Q4_K 144 bytes per 256 weights).
#include "bench/twin_shape.h"

#include <gtest/gtest.h>

namespace moepack::bench {
namespace {

TEST(TwinShape, DeepSeekV4Flash) {
  const TwinShape* s = find_twin_shape("deepseek-v4-flash");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(twin_expert_bytes(*s), 3ull * 4096 * 2048 / 32 * 17);  // 13,369,344 ~ "13.37 MB"
  EXPECT_EQ(uint64_t{s->moe_layers} * s->n_expert, 11008u);
  EXPECT_NEAR(static_cast<double>(twin_total_expert_bytes(*s)) / 1e9, 147.18, 0.02);  // published pack size
  EXPECT_EQ(s->top_k, 6u);
}

TEST(TwinShape, KimiK3) {
  const TwinShape* s = find_twin_shape("kimi-k3");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(twin_expert_bytes(*s), 2ull * 7168 * 1536 / 256 * 84 + 7168ull * 1536 / 256 * 110);  // 11,956,224
  EXPECT_EQ(uint64_t{s->moe_layers} * s->n_expert, 82432u);
  EXPECT_NEAR(static_cast<double>(twin_total_expert_bytes(*s)) / 1e9, 985.61, 0.05);
  EXPECT_EQ(s->top_k, 16u);
}

TEST(TwinShape, DeepSeekV3) {
  const TwinShape* s = find_twin_shape("deepseek-v3");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(twin_expert_bytes(*s), 3ull * 7168 * 2048 / 256 * 144);  // 24,772,608 ~ "24.8 MB"
  EXPECT_EQ(find_twin_shape("gpt-5"), nullptr);
}

}  // namespace
}  // namespace moepack::bench
