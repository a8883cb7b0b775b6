// Token sampling from one logit vector: the llama.cpp sampler chain, in its order.
//
// Order (llama.cpp `common_sampler` defaults): penalties (repeat, frequency, presence over the
// last `repeat_last_n` tokens, applied to the raw logits as in llama_sampler_penalties) ->
// top-k -> top-p -> min-p -> temperature -> softmax -> draw with a seeded std::mt19937.
// temperature <= 0 is greedy: argmax of the penalised logits, ties to the lowest id (the
// fixtures' rule), no random draw. Disabled values: top_k <= 0, top_p >= 1, min_p <= 0,
// repeat_penalty == 1, frequency/presence_penalty == 0.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace moepack {

struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;   // >1 discourages repeats (CTRL-style: logit/p if >0, logit*p if <0)
  int32_t repeat_last_n = 64;    // window for all three penalties; -1: the whole history
  float frequency_penalty = 0.0f;  // subtracts count * f
  float presence_penalty = 0.0f;   // subtracts p once if present
  uint64_t seed = 0xFFFFFFFF;      // 0xFFFFFFFF (LLAMA_DEFAULT_SEED): a random seed
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // Picks the next token from `logits` (n_vocab floats; not modified). `history` is every
  // token so far (prompt and generated) for the penalties. Throws Error on an empty vocab or
  // a non-finite logit vector (all NaN).
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);
  const SamplingParams& params() const { return params_; }
  uint64_t seed_used() const { return seed_; }

 private:
  SamplingParams params_;
  uint64_t seed_;
  std::mt19937 rng_;
  std::vector<std::pair<float, int32_t>> cand_;  // scratch
};

}  // namespace moepack
