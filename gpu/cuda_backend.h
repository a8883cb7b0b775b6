// The CUDA backend: implements core's Backend (core/backend.h) for deepseek2, qwen3moe and
// llama (deepseek4 and kimi-linear dispatch to gpu/cuda_arch_backends.h), exact against the CPU
// reference (core/cpu_backend.cpp) up to F32 summation order.
//
// Where things live:
//   - dense weights: VRAM, in their GGUF quantized form (gpu/device_weights.h);
//   - routed experts: GGUF path: all stacked expert tensors in VRAM (load fails with the
//     numbers if they do not fit: build an Expert Pack); pack path: the VRAM slot pool of
//     gpu/vram_expert_pool.h, sized by cache_vram_mib / cache_bytes and cache_vram_reserve_mib,
//     fed through `stage_slots` pinned staging buffers;
//   - KV cache: F32 in VRAM, [n_layer][n_ctx][kv_width];
//   - activations: F32 in VRAM, grown on demand (the reserve must cover them).
//
// Router: scores on the GPU; the n_expert scores per token are copied back (a wait on the
// compute stream, not the device) and core's route_token() selects top-k on the host, so the
// selection is the CPU reference's own code (groups, bias, norm, scale) and exact by
// construction. The selected experts of a layer then run in one launch per projection
// (gate, up, down: a table of slot pointers, pairs sorted by expert), and one kernel adds the
// K weighted outputs per token in selection order.
#pragma once

#include <memory>

#include "core/backend.h"
#include "core/engine_settings.h"

namespace moepack {
class ModelSource;
}

namespace moepack::gpu {

// Throws Error (no device, unsupported architecture or tensor type, out of VRAM with
// needed / free / reserve MiB, cache budget below top-k), IoError / FormatError from the model.
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const ModelSource> model, const EngineSettings& settings);

// True when the backend implements the model's architecture (deepseek2, qwen3moe, llama;
// deepseek4 and kimi-linear through gpu/cuda_arch_backends.h).
bool cuda_backend_supports(const ModelConfig& cfg);
// True when a CUDA device is present (query_devices()) and cuda_backend_supports(model).
bool cuda_backend_usable(const ModelSource& model);

// Registers "cuda" with core's make_backend (core/backend_factory.h). Executables built with
// MOEPACK_CUDA call it once at startup.
void register_cuda_backend();

}  // namespace moepack::gpu
