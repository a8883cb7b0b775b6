// Engine-level checks of the process-wide switches that reorder or fuse the CUDA engine's
// launches without changing what is computed, shared by the CUDA backends' tests: the prompt and
// 8 greedy decodes give the same logits bit for bit with the switch off and on, each on a fresh
// backend made by `factory` on the model file `model`. The switches:
//   - gpu::detail::set_gemv_swiglu_fusion: SwiGLU as the gate + up launch's epilogue at decode
//     (gpu/cuda_moe.cpp, kernels.h GemvBatch::swiglu_epilogue) or its own launch;
//   - gpu::set_shared_expert_overlap: a MoE block's shared expert launched beside the host's
//     choice of experts (gpu/cuda_host_router.h) or after the routed experts.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/model_source.h"
#include "gpu/cuda_host_router.h"
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

// (Callers skip models without shared experts: there the switch changes nothing.)
inline void expect_shared_expert_overlap_changes_no_logit(const std::string& model,
                                                          std::span<const int32_t> tokens,
                                                          BackendFactory factory) {
  expect_switch_changes_no_logit(model, tokens, factory, gpu::set_shared_expert_overlap,
                                 "the shared expert beside the routing");
}

}  // namespace moepack::test
