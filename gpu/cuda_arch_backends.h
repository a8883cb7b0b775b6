// CUDA backends of the architectures whose block structure is not the common one of
// cuda_backend.cpp (their CPU references: core/cpu_arch_backends.h). They share the routed
// expert path (gpu/cuda_moe.h), the upload arena (gpu/upload_arena.h), the device weights
// (gpu/device_weights.h) and the common kernels (gpu/kernels.h) with cuda_backend.cpp.
// make_cuda_backend (cuda_backend.h) dispatches to them by ModelConfig::arch.
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/engine_settings.h"

namespace moepack {
class ModelSource;
}

namespace moepack::gpu {

// `deepseek4`: the GPU twin of core's make_cpu_backend_deepseek4 (arch_deepseek4.cpp).
std::unique_ptr<Backend> make_cuda_backend_deepseek4(std::shared_ptr<const ModelSource> model,
                                                     const EngineSettings& settings);

// `kimi-linear`: the GPU twin of core's make_cpu_backend_kimi_linear (arch_kimi_linear.cpp).
std::unique_ptr<Backend> make_cuda_backend_kimi_linear(std::shared_ptr<const ModelSource> model,
                                                       const EngineSettings& settings);

}  // namespace moepack::gpu
