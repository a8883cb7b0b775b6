// Router of a MoE layer for one token: exact top-k selection as llama.cpp's build_moe_ffn.
//
//   probs      = softmax(logits) (Softmax gating), sigmoid(logits) (Sigmoid gating) or
//              sqrt(softplus(logits)) (SqrtSoftplus, DeepSeek-V4: ARCH_DEEPSEEK4.md §4.8);
//              Softmax and Sigmoid with route_expf, SqrtSoftplus with route_softplusf
//              (core/route_math.h), Softmax's sum in a fixed order, so gpu/device_routing.h
//              computes the same bits on the GPU
//   selection  = probs + bias (bias: `exp_probs_b`, DeepSeek-V3's e_score_correction_bias)
//   groups     (n_expert_groups > 1): experts split into consecutive groups; a group's score is
//              the sum of its two best selection values; all but the n_group_used best groups
//              are masked out (DeepSeek-V3 "group-limited routing", arXiv:2412.19437 §2.1.2)
//   ids        = the top-k selection values, descending (ties: lower id first)
//   weights    = probs[ids] (without the bias); with norm: / max(sum, 6.103515625e-5);
//              then * expert_weights_scale
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/model_config.h"

namespace moepack {

// logits: n_expert router outputs; bias: n_expert values or null. ids/weights: top-k outputs.
// scratch: at least 2 * n_expert floats.
void route_token(const ModelConfig& cfg, const float* logits, const float* bias, int32_t* ids, float* weights,
                 float* scratch);

// DeepSeek-V4's gate of one router logit: sqrt(route_softplusf(logit)) (the probability
// route_token takes for SqrtSoftplus, and ds4::hash_route for hash-routed blocks).
float sqrt_softplus_gate(float logit);

// The experts of `ids` (a batch's top-k picks, [n][k], any n and k) ordered by how many picks
// each got, most first; ties keep the order of first pick. Ids outside [0, n_expert) are
// skipped. Next-layer prefetch reads them in this order (the most shared first), as many as
// there is room for (docs/cuda-backend.md, "Next-layer prefetch").
std::vector<uint32_t> experts_by_picks(std::span<const int32_t> ids, int64_t n_expert);

}  // namespace moepack
