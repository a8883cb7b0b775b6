// Routed-expert shapes of the models MoePack targets, for shape-faithful twins (issue 10,
// "Twins of the target models"): synthetic Expert Packs whose experts have the real models'
// per-expert byte sizes, counts, top-k and quant types, so that SSD bytes per token and cache
// behaviour can be measured at real expert sizes without the real weights.
//
// Figures (issue 10, and ../shared/docs/ARCH_DEEPSEEK4.md / ARCH_KIMI_LINEAR.md for the
// architectures):
//   deepseek-v4-flash  43 MoE layers x 256 experts, top-6, hidden 4096 x expert FFN 2048,
//                      MXFP4 gate/up/down: 13,369,344 B per expert; 11,008 experts make the
//                      published 147.18 GB pack
//   kimi-k3            92 layers x 896 experts, top-16, 7168 x 1536, Q2_K gate/up + Q3_K
//                      down: 11,956,224 B per expert; 82,432 experts make the published 985.61 GB
//   deepseek-v3        58 x 256, top-8, 7168 x 2048, Q4_K: 24,772,608 B per expert
// Per-expert bytes are ggml row bytes (core/ggml_type.h) of the three matrices, unaligned; a
// pack rounds each role up to 256 bytes and each expert stride to 4096 (core/expert_pack.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/ggml_type.h"

namespace moepack::bench {

struct TwinShape {
  std::string_view name;
  uint32_t moe_layers;   // layers with routed experts
  uint32_t n_expert;     // routed experts per layer
  uint32_t top_k;        // experts each token uses per layer
  uint64_t n_embd;       // hidden size: gate/up input, down output
  uint64_t n_ff;         // one expert's FFN width: gate/up output, down input
  GgmlType gate, up, down;
};

// All known shapes, in the order above.
const std::vector<TwinShape>& twin_shapes();
// The shape of that name, or nullptr.
const TwinShape* find_twin_shape(std::string_view name);

// One expert's bytes: gate (n_ff rows of n_embd) + up (same) + down (n_embd rows of n_ff).
uint64_t twin_expert_bytes(const TwinShape& s);
// Routed-expert bytes of the whole model (moe_layers x n_expert experts).
uint64_t twin_total_expert_bytes(const TwinShape& s);

}  // namespace moepack::bench
