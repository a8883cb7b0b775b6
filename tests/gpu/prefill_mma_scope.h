// The tensor cores' prefill (gpu/kernels.h set_gemv_prefill_mma, set_gemv_prefill_mma_min_pairs)
// and the decode columns (set_gemv_prefill_columns) set for a scope, for the gpu tests and the
// benchmark; all three back to their defaults at scope exit (a failed ASSERT included), and with them
// the prefill's other process-wide switches a scope may change (set_gemv_prefill_mma_half_x,
// set_gemv_prefill_host_sizes, set_gemv_prefill_quant_a).
#pragma once

#include "gpu/kernels.h"

namespace moepack::test {

struct PrefillMmaScope {
  // on: the switch; min_pairs: the smallest group it takes (2: every group of two or more pairs,
  // the kernel's own tests; 0: the default); columns: the largest group taken as decode columns (0:
  // each launch's default; 1, the default here: none, so that the prefill kernels' own tests see
  // every group; 2..: that many on every launch).
  PrefillMmaScope(bool on, int min_pairs, int columns = gpu::detail::kGemvPrefillColumnsOff) {
    gpu::detail::set_gemv_prefill_mma(on);
    gpu::detail::set_gemv_prefill_mma_min_pairs(min_pairs);
    gpu::detail::set_gemv_prefill_columns(columns);
  }
  ~PrefillMmaScope() {
    gpu::detail::set_gemv_prefill_mma(gpu::detail::kGemvPrefillMmaDefault);
    gpu::detail::set_gemv_prefill_mma_min_pairs(0);
    gpu::detail::set_gemv_prefill_columns(gpu::detail::kGemvPrefillColumnsDefault);
    gpu::detail::set_gemv_prefill_mma_half_x(gpu::detail::kGemvPrefillMmaHalfXRule);
    gpu::detail::set_gemv_prefill_host_sizes(gpu::detail::kGemvPrefillHostSizesDefault);
    gpu::detail::set_gemv_prefill_quant_a(gpu::detail::kGemvPrefillQuantADefault);
    gpu::detail::set_gemv_prefill_k_split(gpu::detail::kGemvPrefillKSplitDefault);
    gpu::detail::set_gemv_prefill_expert_k_split(gpu::detail::kGemvPrefillExpertKSplitDefault);
    gpu::detail::set_gemv_prefill_tiled_recompute(gpu::detail::kGemvPrefillTiledRecomputeDefault);
  }
  PrefillMmaScope(const PrefillMmaScope&) = delete;
  PrefillMmaScope& operator=(const PrefillMmaScope&) = delete;
};

}  // namespace moepack::test
