// for_each_ubatch: a forward() of n tokens as consecutive ubatches of at most `ubatch` positions
// (the activations' size), for the CUDA backends that run every block over one ubatch before the
// next (cuda_deepseek4.cpp, cuda_kimi_linear.cpp).
//
//   run(tokens [m], logits, all_logits) for each ubatch in order, where
//     logits      the caller's [n_vocab] for the last ubatch only, empty for the others;
//     all_logits  the ubatch's rows [m][n_vocab] of the caller's [n][n_vocab], empty if that is.
//
// Throws what `run` throws (the ubatches before it have run).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace moepack::gpu {

template <typename Run>
void for_each_ubatch(std::span<const int32_t> tokens, std::span<float> logits, std::span<float> all_logits,
                     int64_t n_vocab, int64_t ubatch, Run&& run) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t c0 = 0; c0 < n; c0 += ubatch) {
    const int64_t m = std::min<int64_t>(ubatch, n - c0);
    run(tokens.subspan(static_cast<size_t>(c0), static_cast<size_t>(m)),
        c0 + m == n ? logits : std::span<float>{},
        all_logits.empty()
            ? std::span<float>{}
            : all_logits.subspan(static_cast<size_t>(c0 * n_vocab), static_cast<size_t>(m * n_vocab)));
  }
}

}  // namespace moepack::gpu
