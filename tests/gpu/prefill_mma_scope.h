// The tensor cores' prefill (gpu/kernels.h set_gemv_prefill_mma, set_gemv_prefill_mma_min_pairs)
// set for a scope, for the gpu tests and the benchmark; both back to their defaults at scope exit
// (a failed ASSERT included).
#pragma once

#include "gpu/kernels.h"

namespace moepack::test {

struct PrefillMmaScope {
  // on: the switch; min_pairs: the smallest group it takes (2: every group of two or more pairs,
  // the kernel's own tests; 0: the default).
  PrefillMmaScope(bool on, int min_pairs) {
    gpu::detail::set_gemv_prefill_mma(on);
    gpu::detail::set_gemv_prefill_mma_min_pairs(min_pairs);
  }
  ~PrefillMmaScope() {
    gpu::detail::set_gemv_prefill_mma(gpu::detail::kGemvPrefillMmaDefault);
    gpu::detail::set_gemv_prefill_mma_min_pairs(0);
  }
  PrefillMmaScope(const PrefillMmaScope&) = delete;
  PrefillMmaScope& operator=(const PrefillMmaScope&) = delete;
};

}  // namespace moepack::test
