// Sampler (core/sampler.h): every stage of the llama.cpp chain against values worked out by
// hand, and the distribution of seeded draws against hand-computed probabilities (chi-square).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/sampler.h"

namespace {

using namespace moepack;

SamplingParams plain(float temperature) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.0f;
  p.seed = 1234;
  return p;
}

int32_t greedy(const std::vector<float>& logits, const std::vector<int32_t>& history, SamplingParams p) {
  p.temperature = 0;
  Sampler s(p);
  return s.sample(logits, history);
}

// Draw n tokens; counts per id.
std::vector<int> draw(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<int> count(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++count[static_cast<size_t>(s.sample(logits, {}))];
  return count;
}

// Pearson's chi-square statistic of `count` against `expected_p` (ids with p = 0 must be 0).
double chi_square(const std::vector<int>& count, const std::vector<double>& expected_p, int n) {
  double chi = 0;
  for (size_t i = 0; i < count.size(); ++i) {
    if (expected_p[i] == 0) {
      EXPECT_EQ(count[i], 0) << "id " << i << " has probability 0";
      continue;
    }
    const double e = expected_p[i] * n;
    chi += (count[i] - e) * (count[i] - e) / e;
  }
  return chi;
}

TEST(Sampler, GreedyIsArgmaxWithTiesToTheLowestId) {
  EXPECT_EQ(greedy({1, 5, 5, 2}, {}, plain(0)), 1);
  EXPECT_EQ(greedy({7, 7, 7}, {}, plain(0)), 0);
  EXPECT_EQ(greedy({-3, -1, -2}, {}, plain(0)), 1);
  // A negative temperature is greedy too; NaN entries are never picked.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(greedy({nan, 0.5f, 0.25f}, {}, plain(-1)), 1);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplingParams p = plain(0);
  p.repeat_penalty = 2.0f;
  // 2.0 / 2 = 1.0 < 1.1: the repeated token loses.
  EXPECT_EQ(greedy({2.0f, 1.1f}, {0}, p), 1);
  p.repeat_penalty = 1.5f;  // 2.0 / 1.5 = 1.33 > 1.1
  EXPECT_EQ(greedy({2.0f, 1.1f}, {0}, p), 0);
  p.repeat_penalty = 2.0f;  // -1.0 * 2 = -2.0 < -1.9
  EXPECT_EQ(greedy({-1.0f, -1.9f}, {0}, p), 1);
  p.repeat_penalty = 1.8f;  // -1.0 * 1.8 = -1.8 > -1.9
  EXPECT_EQ(greedy({-1.0f, -1.9f}, {0}, p), 0);
}

TEST(Sampler, FrequencyPenaltyPerOccurrencePresencePenaltyOnce) {
  SamplingParams p = plain(0);
  p.frequency_penalty = 0.3f;  // 3 - 3 * 0.3 = 2.1 > 2
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0, 0, 0}, p), 0);
  p.frequency_penalty = 0.4f;  // 3 - 3 * 0.4 = 1.8 < 2
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0, 0, 0}, p), 1);
  p.frequency_penalty = 0;
  p.presence_penalty = 0.9f;  // 3 - 0.9 = 2.1 (once, whatever the count)
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0, 0, 0}, p), 0);
  p.presence_penalty = 1.1f;  // 3 - 1.1 = 1.9
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0, 0, 0}, p), 1);
  // All three: repeat 2 then -(2 * 0.25 + 0.25): 4 / 2 - 0.75 = 1.25 > 1.2, but 3 / 2 - 0.75 = 0.75 < 1.2.
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.25f;
  p.presence_penalty = 0.25f;
  EXPECT_EQ(greedy({4.0f, 1.2f}, {0, 0}, p), 0);
  EXPECT_EQ(greedy({3.0f, 1.2f}, {0, 0}, p), 1);
}

TEST(Sampler, PenaltyWindowIsTheLastNTokens) {
  SamplingParams p = plain(0);
  p.presence_penalty = 5.0f;
  p.repeat_last_n = 2;
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0, 1, 1}, p), 0);  // 0 is outside the last 2; 1 is penalised
  p.repeat_last_n = 3;
  EXPECT_EQ(greedy({3.0f, 2.0f, -1.0f}, {0, 1, 1}, p), 2);  // 3 - 5 = -2, 2 - 5 = -3 < -1
}

TEST(Sampler, PenaltyWholeHistoryAndDisabled) {
  SamplingParams p = plain(0);
  p.presence_penalty = 5.0f;
  p.repeat_last_n = -1;  // whole history
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0, 1, 1, 1, 1, 1, 1}, p), 0);   // both penalised: -2 vs -3
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0, 9, 9, 9, 9, 9, 9}, p), 1);   // 0 penalised: -2 vs 2
  p.repeat_last_n = 0;  // disabled
  EXPECT_EQ(greedy({3.0f, 2.0f}, {0}, p), 0);
}

TEST(Sampler, TopKTwoOfThreeAtTemperatureOne) {
  // logits {1, 2, 3}, top_k 2: ids 2 and 1 remain with p = e^3 / (e^3 + e^2) = 1 / (1 + e^-1)
  // = 0.7310586 and 1 - that = 0.2689414; id 0 never.
  SamplingParams p = plain(1.0f);
  p.top_k = 2;
  Sampler s(p);
  const int n = 20000;
  const std::vector<int> c = draw(s, {1, 2, 3}, n);
  const double p2 = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_LT(chi_square(c, {0.0, 1.0 - p2, p2}, n), 10.83);  // 1 dof, p = 0.001
}

TEST(Sampler, DrawsFollowTheSoftmax) {
  // logits ln 1, ln 2, ln 3: p = 1/6, 2/6, 3/6.
  Sampler s(plain(1.0f));
  const int n = 30000;
  const std::vector<int> c = draw(s, {0.0f, std::log(2.0f), std::log(3.0f)}, n);
  EXPECT_LT(chi_square(c, {1 / 6.0, 2 / 6.0, 3 / 6.0}, n), 13.82);  // 2 dof, p = 0.001
}

TEST(Sampler, TemperatureScalesLogits) {
  // logits {0, ln 2} at T = 0.5 -> {0, 2 ln 2} = ln {1, 4}: p = 1/5, 4/5.
  Sampler s(plain(0.5f));
  const int n = 20000;
  const std::vector<int> c = draw(s, {0.0f, std::log(2.0f)}, n);
  EXPECT_LT(chi_square(c, {0.2, 0.8}, n), 10.83);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
  // p = 0.5, 0.3, 0.2. top_p 0.7: 0.5 < 0.7, 0.5 + 0.3 = 0.8 >= 0.7 -> keep ids 0, 1, then
  // renormalised to 5/8, 3/8.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingParams p = plain(1.0f);
  p.top_p = 0.7f;
  Sampler s(p);
  const int n = 20000;
  const std::vector<int> c = draw(s, logits, n);
  EXPECT_LT(chi_square(c, {5 / 8.0, 3 / 8.0, 0.0}, n), 10.83);
  // top_p 0.45: the first token alone reaches it.
  p.top_p = 0.45f;
  Sampler s2(p);
  const std::vector<int> c2 = draw(s2, logits, 2000);
  EXPECT_EQ(c2[0], 2000);
}

TEST(Sampler, MinPCutsBelowAFractionOfTheBestProbability) {
  // logits {0, -1, -3}: p relative to the best = 1, e^-1 = 0.368, e^-3 = 0.050.
  const std::vector<float> logits = {0.0f, -1.0f, -3.0f};
  SamplingParams p = plain(1.0f);
  p.min_p = 0.2f;  // keeps 0 and 1: p = 1 / (1 + e^-1) = 0.7310586, 0.2689414
  Sampler s(p);
  const int n = 20000;
  const std::vector<int> c = draw(s, logits, n);
  const double p0 = 1.0 / (1.0 + std::exp(-1.0));
  EXPECT_LT(chi_square(c, {p0, 1.0 - p0, 0.0}, n), 10.83);
  p.min_p = 0.5f;  // 0.368 < 0.5: only id 0
  Sampler s2(p);
  EXPECT_EQ(draw(s2, logits, 1000)[0], 1000);
  p.min_p = 0.04f;  // 0.050 >= 0.04: all three can be drawn
  Sampler s3(p);
  EXPECT_GT(draw(s3, logits, 20000)[2], 0);
}

TEST(Sampler, SameSeedSameDrawsOtherSeedOtherDraws) {
  const std::vector<float> logits(100, 0.0f);  // uniform over 100 ids
  auto seq = [&](uint64_t seed) {
    SamplingParams p = plain(1.0f);
    p.seed = seed;
    Sampler s(p);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) out.push_back(s.sample(logits, {}));
    return out;
  };
  EXPECT_EQ(seq(42), seq(42));
  EXPECT_NE(seq(42), seq(43));
  // The random seed (0xFFFFFFFF) is replaced by a concrete one, reported by seed_used().
  SamplingParams p = plain(1.0f);
  p.seed = 0xFFFFFFFF;
  Sampler r(p);
  EXPECT_EQ(Sampler(plain(1.0f)).seed_used(), 1234u);
  (void)r.seed_used();
}

TEST(Sampler, RejectsEmptyAndNonFiniteLogits) {
  Sampler s(plain(1.0f));
  EXPECT_THROW(s.sample({}, {}), Error);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THROW(s.sample(std::vector<float>{nan, nan}, {}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{-inf, -inf}, {}), Error);
  Sampler g(plain(0));
  EXPECT_THROW(g.sample(std::vector<float>{nan}, {}), Error);
  // One finite logit among -inf: always that one.
  EXPECT_EQ(s.sample(std::vector<float>{-inf, 0.0f, -inf}, {}), 1);
}

}  // namespace
