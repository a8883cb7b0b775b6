// The llama.cpp sampler chain over one logit vector (see core/sampler.h for the order and the
// meaning of every parameter). Semantics follow llama.cpp src/llama-sampling.cpp
// (llama_sampler_penalties, _top_k, _top_p, _min_p, _temp, _dist); the code is our own.
#include "core/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/error.h"

namespace moepack {

namespace {

constexpr uint64_t kRandomSeed = 0xFFFFFFFFull;  // LLAMA_DEFAULT_SEED

uint64_t pick_seed(uint64_t requested) {
  if (requested != kRandomSeed) return requested;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Softmax of cand[i].first into probs (max-subtracted, so it never overflows).
void softmax(const std::vector<std::pair<float, int32_t>>& cand, std::vector<double>& probs) {
  probs.resize(cand.size());
  float mx = -std::numeric_limits<float>::infinity();
  for (const auto& c : cand) mx = std::max(mx, c.first);
  double sum = 0;
  for (size_t i = 0; i < cand.size(); ++i) {
    probs[i] = std::exp(static_cast<double>(cand[i].first) - mx);
    sum += probs[i];
  }
  for (double& p : probs) p /= sum;
}

// Candidates sorted by logit descending, ties by lower id first (a total order, so results do
// not depend on the sort's stability).
void sort_desc(std::vector<std::pair<float, int32_t>>& cand) {
  std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
}

}  // namespace

Sampler::Sampler(const SamplingParams& params)
    : params_(params), seed_(pick_seed(params.seed)), rng_(static_cast<std::mt19937::result_type>(seed_)) {}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  if (logits.empty()) throw Error("sampler: empty logit vector (vocabulary of size 0)");
  const auto n_vocab = static_cast<int32_t>(logits.size());

  // Candidates: every token with a finite or -inf logit; NaN entries can never be drawn.
  cand_.clear();
  cand_.reserve(logits.size());
  for (int32_t i = 0; i < n_vocab; ++i) {
    if (!std::isnan(logits[static_cast<size_t>(i)])) cand_.emplace_back(logits[static_cast<size_t>(i)], i);
  }

  // 1. Penalties over the last repeat_last_n tokens of the history (-1: all of it, 0: none).
  const bool penalise = params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                        params_.presence_penalty != 0.0f;
  if (penalise && params_.repeat_last_n != 0 && !history.empty()) {
    size_t window = history.size();
    if (params_.repeat_last_n > 0) window = std::min(window, static_cast<size_t>(params_.repeat_last_n));
    std::unordered_map<int32_t, int32_t> count;
    for (size_t i = history.size() - window; i < history.size(); ++i) ++count[history[i]];
    for (auto& [logit, id] : cand_) {
      const auto it = count.find(id);
      if (it == count.end()) continue;
      // CTRL-style repetition penalty (divide positive logits, multiply non-positive ones), then
      // OpenAI-style frequency (per occurrence) and presence (once) penalties.
      if (logit <= 0) logit *= params_.repeat_penalty;
      else logit /= params_.repeat_penalty;
      logit -= static_cast<float>(it->second) * params_.frequency_penalty + params_.presence_penalty;
    }
  }

  bool any_finite = false;
  for (const auto& c : cand_) any_finite = any_finite || std::isfinite(c.first);
  if (!any_finite) throw Error("sampler: no finite logit (all NaN or -inf)");

  // Greedy: argmax of the penalised logits, ties to the lowest id.
  if (params_.temperature <= 0.0f) {
    const std::pair<float, int32_t>* best = nullptr;
    for (const auto& c : cand_) {
      if (!best || c.first > best->first || (c.first == best->first && c.second < best->second)) best = &c;
    }
    return best->second;
  }

  // -inf candidates have probability 0; drop them so the cuts below see only real candidates.
  std::erase_if(cand_, [](const auto& c) { return !std::isfinite(c.first); });
  sort_desc(cand_);

  // 2. top-k.
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < cand_.size()) {
    cand_.resize(static_cast<size_t>(params_.top_k));
  }

  std::vector<double> probs;
  // 3. top-p: the smallest prefix whose probability mass reaches top_p (at least one token).
  if (params_.top_p < 1.0f) {
    softmax(cand_, probs);
    double cum = 0;
    size_t keep = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      cum += probs[i];
      if (cum >= static_cast<double>(params_.top_p)) {
        keep = i + 1;
        break;
      }
    }
    cand_.resize(keep);
  }

  // 4. min-p: keep tokens with p >= min_p * p_max, i.e. logit >= max_logit + log(min_p).
  if (params_.min_p > 0.0f && cand_.size() > 1) {
    const float threshold = cand_.front().first + std::log(params_.min_p);
    size_t keep = 1;
    while (keep < cand_.size() && cand_[keep].first >= threshold) ++keep;
    cand_.resize(keep);
  }

  // 5. temperature, 6. softmax, 7. draw.
  for (auto& c : cand_) c.first /= params_.temperature;
  softmax(cand_, probs);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const double u = uni(rng_);
  double cum = 0;
  for (size_t i = 0; i < cand_.size(); ++i) {
    cum += probs[i];
    if (u < cum) return cand_[i].second;
  }
  return cand_.back().second;  // u within rounding of 1
}

}  // namespace moepack
