// CPU backends of the architectures whose block structure is not the common one of
// cpu_backend.cpp (norm → attention → residual → norm → FFN/MoE → residual). They implement
// the same Backend interface and take routed experts from the same ExpertProvider (resident
// GGUF tensors or an Expert Pack), so every path above and below them is unchanged.
// make_cpu_backend (cpu_backend.cpp) dispatches to them by ModelConfig::arch.
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/engine_settings.h"

namespace moepack {

class ModelSource;

// `deepseek4` (DeepSeek-V4-Flash layout): hyper-connections with Sinkhorn mixing, sliding-window
// attention with compressed KV (ratio 4 with the lightning indexer, ratio 128), attention sinks,
// grouped low-rank output, sqrt-softplus routing with hash-routed leading blocks, SwiGLU clamps.
// Spec: ../shared/docs/ARCH_DEEPSEEK4.md; corrections: docs/arch-deepseek4.md.
// Throws FormatError for a missing / mis-shaped tensor, Error for unsupported settings.
std::unique_ptr<Backend> make_cpu_backend_deepseek4(std::shared_ptr<const ModelSource> model,
                                                    const EngineSettings& settings);

// `kimi-linear` (Kimi-Linear / Kimi-K3-style hybrid): KDA linear attention (short convolutions,
// recurrent delta-rule state) and absorbed MLA blocks in the pattern of attention.head_count_kv,
// sigmoid-gated MoE with shared experts. Spec: ../shared/docs/ARCH_KIMI_LINEAR.md. truncate(n)
// is exact at every n through state checkpoints plus recomputation (see arch_kimi_linear.cpp).
std::unique_ptr<Backend> make_cpu_backend_kimi_linear(std::shared_ptr<const ModelSource> model,
                                                      const EngineSettings& settings);

}  // namespace moepack
