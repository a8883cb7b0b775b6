// core's router choice (moe_routing.h) and the exponential its gating uses (route_math.h),
// against hand-worked values and against std::exp in double.
#include "core/moe_routing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/model_config.h"
#include "core/route_math.h"

namespace moepack {
namespace {

// ULPs between two finite floats of one sign.
int64_t ulps(float a, float b) {
  int32_t ia = 0, ib = 0;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

TEST(RouteExpf, WithinOneUlpOfTheExactValueOverF32sRange) {
  int64_t off = 0, n = 0;
  for (double xd = -103.9; xd <= 88.7; xd += 0.000731) {
    const float x = static_cast<float>(xd);
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    const float got = route_expf(x);
    ASSERT_LE(ulps(got, want), 1) << "x = " << x;
    off += got != want;
    ++n;
  }
  // Rounding to F32 twice (from double) differs from the exact rounding only near midpoints.
  EXPECT_LT(off, n / 10000) << off << " of " << n << " one ULP off";
}

TEST(RouteExpf, HandCheckedValuesAndEdges) {
  EXPECT_EQ(route_expf(0.0f), 1.0f);
  EXPECT_EQ(route_expf(-0.0f), 1.0f);
  EXPECT_EQ(route_expf(1.0f), 2.71828182845904523536f);
  EXPECT_EQ(route_expf(-1.0f), 0.36787944117144233f);
  EXPECT_EQ(route_expf(0.69314718055994530942f), 2.0f);
  EXPECT_EQ(route_expf(89.5f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(route_expf(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(route_expf(-105.0f), 0.0f);
  EXPECT_EQ(route_expf(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(route_expf(std::numeric_limits<float>::quiet_NaN())));
  // e^-100 is an F32 subnormal: 3.72e-44, 26.6 times the smallest (1.4e-45) -> 27 of them.
  EXPECT_EQ(route_expf(-100.0f), 27 * std::numeric_limits<float>::denorm_min());
}

// DeepSeek-V4's softplus: ln(1 + e^x) in double (std::log1p, std::exp) rounded once is the
// reference; route_softplusf is within one F32 ULP of it over [-103.9, 20], the identity above
// 20, and the log1p part alone within one ULP on small and large arguments.
TEST(RouteSoftplusf, WithinOneUlpOfTheExactValue) {
  int64_t off = 0, n = 0;
  for (double xd = -104.0; xd <= 20.0; xd += 0.000517) {
    const float x = static_cast<float>(xd);
    const float want = static_cast<float>(std::log1p(std::exp(static_cast<double>(x))));
    const float got = route_softplusf(x);
    ASSERT_LE(ulps(got, want), 1) << "x = " << x;
    off += got != want;
    ++n;
  }
  EXPECT_LT(off, n / 10000) << off << " of " << n << " one ULP off";
  for (const double y : {0.0, 1e-300, 1e-20, 3e-9, 0.25, 0.4142, 0.5, 1.0, 7.5, 1e5, 4.85e8}) {
    const float want = static_cast<float>(std::log1p(y));
    EXPECT_LE(ulps(static_cast<float>(route_log1p_double(y)), want), 1) << "log1p(" << y << ")";
  }
}

TEST(RouteSoftplusf, HandCheckedValuesAndEdges) {
  EXPECT_EQ(route_softplusf(0.0f), 0.69314718055994530942f);  // ln 2
  EXPECT_EQ(route_softplusf(20.5f), 20.5f);
  EXPECT_EQ(route_softplusf(20.0f), 20.0f);  // ln(1 + e^20) rounds to 20: the cut-off is seamless
  EXPECT_EQ(route_softplusf(std::nextafter(20.0f, 0.0f)), std::nextafter(20.0f, 0.0f));
  EXPECT_EQ(route_softplusf(1000.0f), 1000.0f);
  EXPECT_EQ(route_softplusf(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(route_softplusf(-105.0f), 0.0f);
  EXPECT_EQ(route_softplusf(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(route_softplusf(std::numeric_limits<float>::quiet_NaN())));
  // ln(1 + e^-100) = e^-100 (to 1e-44 relative): the same F32 subnormal as route_expf's.
  EXPECT_EQ(route_softplusf(-100.0f), 27 * std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(sqrt_softplus_gate(0.0f), std::sqrt(0.69314718055994530942f));
}

ModelConfig routing(uint32_t X, uint32_t K, ExpertGating g) {
  ModelConfig cfg;
  cfg.n_expert = X;
  cfg.n_expert_used = K;
  cfg.gating = g;
  return cfg;
}

// Sigmoid of 0 is 0.5 for every expert, so the biases alone decide: selection 0.5 + bias =
// [0.6 0.7 0.5 0.5 | 0.8 0.5 0.5 0.55]. Group scores (two best): 1.3 and 1.35, so with one
// group of two kept the choice is experts 4 and 7; without groups 4 and 1. Weights are the
// probabilities without the bias (0.5 each), normalised to 0.5, times the scale 2.5.
TEST(RouteToken, GroupLimitedSigmoidWithBiasHandWorked) {
  ModelConfig cfg = routing(8, 2, ExpertGating::Sigmoid);
  cfg.expert_weights_norm = true;
  cfg.expert_weights_scale = 2.5f;
  const std::vector<float> logits(8, 0.0f), bias = {0.1f, 0.2f, 0.0f, 0.0f, 0.3f, 0.0f, 0.0f, 0.05f};
  std::vector<float> scratch(16), w(2);
  std::vector<int32_t> ids(2);
  cfg.n_expert_groups = 2;
  cfg.n_group_used = 1;
  route_token(cfg, logits.data(), bias.data(), ids.data(), w.data(), scratch.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 7}));
  EXPECT_EQ(w, (std::vector<float>{1.25f, 1.25f}));
  cfg.n_expert_groups = 0;
  route_token(cfg, logits.data(), bias.data(), ids.data(), w.data(), scratch.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 1}));
  EXPECT_EQ(w, (std::vector<float>{1.25f, 1.25f}));
}

// Softmax of [0, ln 2, ln 3, ln 4] is [0.1, 0.2, 0.3, 0.4]: top-2 experts 3 and 2 with 0.4 and
// 0.3, normalised 4/7 and 3/7.
TEST(RouteToken, SoftmaxHandWorked) {
  ModelConfig cfg = routing(4, 2, ExpertGating::Softmax);
  const std::vector<float> logits = {0.0f, std::log(2.0f), std::log(3.0f), std::log(4.0f)};
  std::vector<float> scratch(8), w(2);
  std::vector<int32_t> ids(2);
  route_token(cfg, logits.data(), nullptr, ids.data(), w.data(), scratch.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 2}));
  EXPECT_NEAR(w[0], 0.4f, 1e-6f);
  EXPECT_NEAR(w[1], 0.3f, 1e-6f);
  cfg.expert_weights_norm = true;
  route_token(cfg, logits.data(), nullptr, ids.data(), w.data(), scratch.data());
  EXPECT_NEAR(w[0], 4.0f / 7.0f, 1e-6f);
  EXPECT_NEAR(w[1], 3.0f / 7.0f, 1e-6f);
}

// Equal scores: the lower ids first, each weight 1/X (softmax of 40 equal logits).
TEST(RouteToken, TiesGoToTheLowerId) {
  const ModelConfig cfg = routing(40, 3, ExpertGating::Softmax);
  const std::vector<float> logits(40, 1.5f);
  std::vector<float> scratch(80), w(3);
  std::vector<int32_t> ids(3);
  route_token(cfg, logits.data(), nullptr, ids.data(), w.data(), scratch.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2}));
  for (const float v : w) EXPECT_NEAR(v, 1.0f / 40.0f, 1e-8f);
}

// Eleven picks over 8 experts, counted by hand: 5 three, 2 and 7 two, 3 and 0 one; among equals
// the first picked comes first (2 at index 1 before 7 at index 2; 3 at index 3 before 0 at
// index 8); -1 and 8 lie outside the 8 experts and are skipped.
TEST(ExpertsByPicks, MostPickedFirstTiesByFirstPick) {
  const std::vector<int32_t> ids = {5, 2, 7,   //
                                    3, 5, -1,  //
                                    7, 5, 0,  2, 8};
  EXPECT_EQ(experts_by_picks(ids, 8), (std::vector<uint32_t>{5, 2, 7, 3, 0}));
  EXPECT_EQ(experts_by_picks(std::span<const int32_t>(ids.data(), 3), 8), (std::vector<uint32_t>{5, 2, 7}));
  EXPECT_TRUE(experts_by_picks({}, 8).empty());
  EXPECT_TRUE(experts_by_picks(ids, 0).empty());
}

}  // namespace
}  // namespace moepack
