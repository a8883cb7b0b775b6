// The engine-level check of SwiGLU as the gate + up launch's epilogue (gpu/cuda_moe.cpp,
// kernels.h GemvBatch::swiglu_epilogue), shared by the CUDA backends' tests: the prompt and 8
// greedy decodes give the same logits bit for bit with the epilogue off (SwiGLU's own launch)
// and on, each on a fresh backend made by `factory` on the model file `model`.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/model_source.h"
#include "gpu/gemv_mma.h"
#include "tests/support/backend_parity.h"

namespace moepack::test {

inline void expect_swiglu_epilogue_changes_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                                    BackendFactory factory) {
  struct FusionAfterwards {  // also when an assertion throws
    ~FusionAfterwards() { gpu::detail::set_gemv_swiglu_fusion(true); }
  } restore;
  const auto src = ModelSource::open(model);
  std::vector<float> logits[2];
  for (const bool on : {false, true}) {
    gpu::detail::set_gemv_swiglu_fusion(on);
    auto be = factory(src, parity_settings("cuda"));
    logits[on] = prompt_then_greedy_logits(*be, tokens);
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
      << model << ": logits differ with the SwiGLU epilogue";
}

}  // namespace moepack::test
