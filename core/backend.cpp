#include "core/backend.h"

#include <string>

#include "core/error.h"

namespace moepack {

void check_forward_args(std::span<const int32_t> tokens, std::span<const float> logits,
                        std::span<const float> all_logits, uint32_t n_past, uint32_t n_ctx, uint32_t n_vocab) {
  const uint64_t n = tokens.size();
  if (n == 0) throw Error("forward() needs at least one token");
  if (static_cast<uint64_t>(n_past) + n > n_ctx) {
    throw Error("the context is full: " + std::to_string(n_past) + " + " + std::to_string(n) + " tokens > n_ctx " +
                std::to_string(n_ctx));
  }
  if (logits.size() < n_vocab) throw Error("logits buffer smaller than the vocabulary");
  if (!all_logits.empty() && all_logits.size() < n * n_vocab) {
    throw Error("all_logits buffer must hold tokens * n_vocab floats");
  }
  for (uint64_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || static_cast<uint32_t>(tokens[t]) >= n_vocab) {
      throw Error("token id " + std::to_string(tokens[t]) + " at " + std::to_string(t) + " is outside the vocabulary (" +
                  std::to_string(n_vocab) + ")");
    }
  }
}

}  // namespace moepack
