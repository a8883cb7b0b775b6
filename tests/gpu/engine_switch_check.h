// Engine-level checks of the process-wide switches that reorder or fuse the CUDA engine's
// launches without changing what is computed, shared by the CUDA backends' tests: the prompt and
// 8 greedy decodes give the same logits bit for bit with the switch off and on, each on a fresh
// backend made by `factory` on the model file `model`. The switches:
//   - gpu::detail::set_gemv_swiglu_fusion: SwiGLU as the gate + up launch's epilogue at decode
//     (gpu/cuda_moe.cpp, kernels.h GemvBatch::swiglu_epilogue) or its own launch;
//   - gpu::set_shared_expert_overlap: a MoE block's shared expert launched beside the host's
//     choice of experts (gpu/cuda_host_router.h) or after the routed experts;
//   - gpu::set_residual_norm_fusion: the residual add and the RMSNorm after it in one launch
//     (gpu/cuda_backend.h) or two;
//   - gpu::set_router_on_device: decode steps route on the GPU (gpu/device_routing.h) or on the
//     host; here the routing observer's reports (block, position, experts, weights bit for bit)
//     must be the same too;
//   - gpu::set_decode_graph: a decode step as one CUDA graph launch (gpu/cuda_backend.h) or its
//     launches one by one; reports compared too.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/model_source.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_host_router.h"
#include "gpu/device_routing.h"
#include "gpu/gemv_mma.h"
#include "tests/support/backend_parity.h"

namespace moepack::test {

// set: the switch's setter (on is the default, restored afterwards); what: its name for messages.
inline void expect_switch_changes_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                           BackendFactory factory, void (*set)(bool), const char* what) {
  struct OnAfterwards {  // also when an assertion returns early or a call throws
    void (*set)(bool);
    ~OnAfterwards() { set(true); }
  } restore{set};
  const auto src = ModelSource::open(model);
  std::vector<float> logits[2];
  for (const bool on : {false, true}) {
    set(on);
    auto be = factory(src, parity_settings("cuda"));
    logits[on] = prompt_then_greedy_logits(*be, tokens);
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
      << model << ": logits differ with " << what << " on";
}

inline void expect_swiglu_epilogue_changes_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                                    BackendFactory factory) {
  expect_switch_changes_no_logit(model, tokens, factory, gpu::detail::set_gemv_swiglu_fusion,
                                 "the SwiGLU epilogue");
}

inline void expect_residual_norm_fusion_changes_no_logit(const std::string& model,
                                                         std::span<const int32_t> tokens,
                                                         BackendFactory factory) {
  expect_switch_changes_no_logit(model, tokens, factory, gpu::set_residual_norm_fusion,
                                 "the residual add fused with the RMSNorm");
}

// (Callers skip models without shared experts: there the switch changes nothing.) The router
// stays on the host for it, decode steps included: the overlap is with the host's choice.
inline void expect_shared_expert_overlap_changes_no_logit(const std::string& model,
                                                          std::span<const int32_t> tokens,
                                                          BackendFactory factory) {
  struct OnAfterwards {
    ~OnAfterwards() { gpu::set_router_on_device(true); }
  } restore;
  gpu::set_router_on_device(false);
  expect_switch_changes_no_logit(model, tokens, factory, gpu::set_shared_expert_overlap,
                                 "the shared expert beside the routing");
}

// Both the logits and every routing report of the prompt and 8 greedy decodes, with the switch
// off and on (set: its setter; on, the default, is restored); `proof` counts in this process
// what the switch turns on, so the on-run must raise it and the off-run must not.
inline void expect_switch_changes_no_logit_nor_routing(const std::string& model,
                                                       std::span<const int32_t> tokens,
                                                       BackendFactory factory, void (*set)(bool),
                                                       uint64_t (*proof)(), const char* what) {
  struct OnAfterwards {
    void (*set)(bool);
    ~OnAfterwards() { set(true); }
  } restore{set};
  using Report = std::tuple<uint32_t, uint32_t, std::vector<int32_t>, std::vector<uint32_t>>;
  const auto src = ModelSource::open(model);
  std::vector<float> logits[2];
  std::vector<Report> reports[2];
  for (const bool on : {false, true}) {
    set(on);
    auto be = factory(src, parity_settings("cuda"));
    be->set_routing_observer([&reports, on](uint32_t block, uint32_t pos, std::span<const int32_t> experts,
                                            std::span<const float> weights) {
      std::vector<uint32_t> bits(weights.size());
      std::memcpy(bits.data(), weights.data(), weights.size() * sizeof(float));
      reports[on].emplace_back(block, pos, std::vector<int32_t>(experts.begin(), experts.end()), bits);
    });
    const uint64_t before = proof();
    logits[on] = prompt_then_greedy_logits(*be, tokens);
    const uint64_t seen = proof() - before;
    if (on) {
      EXPECT_GT(seen, 0u) << model << ": " << what << " never happened";
    } else {
      EXPECT_EQ(seen, 0u) << model << ": " << what << " happened with the switch off";
    }
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
      << model << ": logits differ with " << what << " on";
  ASSERT_FALSE(reports[0].empty());
  // The host router reports each block as it routes, the GPU's after each step in block order:
  // the same reports in the same order.
  EXPECT_EQ(reports[0], reports[1]) << model << ": routing reports differ with " << what << " on";
}

// Decode steps routed on the GPU (route_on_device calls with tables prove it).
inline void expect_router_on_device_changes_no_logit(const std::string& model,
                                                     std::span<const int32_t> tokens,
                                                     BackendFactory factory) {
  expect_switch_changes_no_logit_nor_routing(model, tokens, factory, gpu::set_router_on_device,
                                             gpu::device_routed_blocks, "the router on the GPU");
}

// Decode steps as CUDA graph launches (gpu::decode_graph_launches proves it; common backend).
inline void expect_decode_graph_changes_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                                 BackendFactory factory) {
  expect_switch_changes_no_logit_nor_routing(model, tokens, factory, gpu::set_decode_graph,
                                             gpu::decode_graph_launches, "decode steps as CUDA graphs");
}

}  // namespace moepack::test
