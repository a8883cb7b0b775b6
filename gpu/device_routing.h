// The router's choice on the GPU (gpu/kernels_route.cu): core's route_token (core/moe_routing.h)
// for Softmax, Sigmoid and SqrtSoftplus gating, and DeepSeek-V4's hash routing
// (ds4::hash_route: the experts a table gives for the token id), computed by one warp per token
// with the same IEEE operations in the same order, so the experts and their weights are the same
// bit for bit as the host's on the same scores:
//   - probabilities: route_expf, route_softplusf (core/route_math.h, shared by both; sqrt is
//     correctly rounded on both); Softmax's sum in double
//     over 32 strided partial sums (partial j = the values i = j mod 32 in increasing i, then
//     the partials in increasing j), which route_token uses too;
//   - selection = probabilities + bias; group-limited routing (a group's score the sum of its
//     two best, the n_group_used best groups kept, ties to the lower group: stable_sort's
//     order); top-k by repeated arg-max with ties to the lower expert id (partial_sort's order
//     under route_token's comparison);
//   - hash routing: the chosen are the table's row for the token, in its order (no selection);
//   - weights = probabilities of the chosen, summed in k order, divided by max(sum, 2^-14)
//     when normalised, times expert_weights_scale.
// NaN scores (and an infinite Softmax logit, which makes every probability NaN) are outside the
// contract of equality (route_token's own order is unspecified for them), but the kernel still
// chooses k distinct experts in range, NaN selection values ordered as -inf.
//
// At decode (one token) the kernel also writes what CudaRoutedExperts' grouped launches read
// (gpu/cuda_moe.h run_decode_on_device): the expert table (gate, up and down of the chosen
// experts in increasing id, the group order of the host path) and each selection's pair, so a
// MoE block runs with no copy to or from the host. Plain C++ header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/model_config.h"

namespace moepack::gpu {

struct DeviceRouteSpec {
  int32_t n_expert = 0;
  int32_t k = 0;         // n_expert_used
  bool softmax = true;   // else Sigmoid (or SqrtSoftplus)
  bool sqrt_softplus = false;  // DeepSeek-V4's sqrt(softplus) (softmax false)
  int32_t n_groups = 1;  // n_expert_groups (<= 1: none)
  int32_t n_group_used = 0;
  bool norm = false;   // expert_weights_norm
  float scale = 1.0f;  // expert_weights_scale
};

// Largest n_expert, k and group count the kernel takes (shared memory, one warp's masks).
inline constexpr int32_t kDeviceRouteMaxExperts = 1024;
inline constexpr int32_t kDeviceRouteMaxK = 32;
inline constexpr int32_t kDeviceRouteMaxGroups = 32;

// True when the model's routing is what the kernel computes: Softmax, Sigmoid or SqrtSoftplus
// gating, n_expert <= 1024, 1 <= k <= min(32, n_expert), at most 32 groups
// (and at least one used where there are groups).
bool device_routing_supports(const ModelConfig& cfg);
// The spec of cfg's routing. Throws Error where device_routing_supports(cfg) is false.
DeviceRouteSpec device_route_spec(const ModelConfig& cfg);

// Where a block's experts lie in VRAM: expert e's gate at gate + e * gate_stride bytes, and so
// on (the GGUF path's stacked ffn_{gate,up,down}_exps); or, with `table` set (device memory
// [3][n_expert], a pack whose experts all stay in VRAM slots), e's gate at table[e], its up at
// table[n_expert + e] and its down at table[2 n_expert + e].
struct ExpertBases {
  const uint8_t* gate = nullptr;
  const uint8_t* up = nullptr;
  const uint8_t* down = nullptr;
  uint64_t gate_stride = 0, up_stride = 0, down_stride = 0;
  const uint8_t* const* table = nullptr;
};

// What the kernel writes for one token (device pointers). table and pair_of are optional
// (both null, or both set with n_tok == 1).
struct DeviceChoice {
  int32_t* ids = nullptr;           // [n_tok][k] route_token's ids, in its order
  float* weights = nullptr;         // [n_tok][k] route_token's weights
  int32_t* pair_of = nullptr;       // [k]: selection k's rank among the chosen ids (increasing)
  const uint8_t** table = nullptr;  // [3k]: gates, ups, downs of the chosen, increasing id
};

// Bytes of one token's DeviceChoice with table and pair_of, laid out by device_choice_at.
int64_t device_choice_bytes(int32_t k);
// The DeviceChoice at `base` (device memory of device_choice_bytes(k), 8-byte aligned).
DeviceChoice device_choice_at(void* base, int32_t k);

// Routes n_tok tokens: scores [n_tok][n_expert] (router outputs), bias [n_expert] or null.
// Writes out.ids / out.weights, and with out.table the decode tables from `bases`. hash (a
// hash-routed block, with tokens): hash [n_vocab][k] the experts of each token id, each row k
// distinct ids below n_expert (the caller's word: DeviceRouter::bind checks), tokens [n_tok] the
// ids (device). Throws Error for a spec outside the limits above, n_tok < 1, a table with n_tok
// != 1, or hash without tokens.
void route_on_device(const DeviceRouteSpec& spec, const float* scores, int32_t n_tok, const float* bias,
                     const DeviceChoice& out, const ExpertBases& bases, cudaStream_t s,
                     const int32_t* hash = nullptr, const int32_t* tokens = nullptr);

// Process-wide switch of the engine (gpu/cuda_backend.cpp): decode steps of a model whose
// experts are all resident route on the GPU where device_routing_supports(cfg) (on, the
// default), or on the host through gpu/cuda_host_router.h (off; for the benchmark's side by
// side and the tests that the two give the same logits).
void set_router_on_device(bool on);
bool router_on_device();
// route_on_device calls with decode tables in this process (a test's proof that a block was
// routed on the GPU).
uint64_t device_routed_blocks();

}  // namespace moepack::gpu
