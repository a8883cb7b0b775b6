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
// Router: scores on the GPU. Prefill, and every step on the pack path with fewer slots than
// experts: the n_expert scores per token are copied back (a wait for that copy, not for the
// stream or the device) and core's route_token() selects top-k on the host, the CPU reference's
// own code (groups, bias, norm, scale). Decode with every expert resident (the GGUF path, or a
// pack with a slot for every expert, read whole at load: gpu/cuda_moe.h) and routing the kernel
// covers (device_routing_supports): the GPU chooses (gpu/cuda_device_router.h), the same
// function bit for bit, with no copy to or from the host. The selected experts of a layer
// then run in one launch per projection (gate and up together, then down: a table of expert
// pointers, pairs sorted by expert), and one kernel adds the K weighted outputs per token in
// selection order.
//
// Decode with every expert resident (common backend and kimi-linear) is one CUDA graph launch a
// step from the second step on: RoPE, the KV cache's row and attention read the position from
// device memory (set_decode_graph below, gpu/decode_graph.h).
//
// The residual stream: x += block output (the MoE sum plus the shared expert's, added to it
// first), then the next RMSNorm, in one launch where both follow each other (add_rms_norm),
// the same values bit for bit as the separate launches.
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
// True when a CUDA device is present (query_devices()) and cuda_backend_supports(model); throws Error (the
// registry's BackendUsable contract, core/backend_factory.h) where the first device is one this build cannot
// run on (device_unsupported, gpu/device_info.h: compute capability below 9.0, or no code for it).
bool cuda_backend_usable(const ModelSource& model);

// Process-wide switch (for the benchmark's side by side and the tests that it changes no
// logit): the residual add fused with the RMSNorm after it (on, the default) or two launches.
void set_residual_norm_fusion(bool on);
bool residual_norm_fusion();
// Process-wide switch: a decode step whose router runs on the GPU (every expert resident; the
// common backend and kimi-linear), at any position, is one CUDA graph launch from its second
// step on (on, the default), or its launches one by one (off). The same launches either way, so the same
// values bit for bit (gpu/decode_graph.h). A backend's graph keeps what the switches above and
// gpu/gemv_mma.h's chose when it was captured, until a forward that grows one of the common backend's buffers
// drops it (kimi-linear allocates every buffer at load and keeps its graph).
// decode_graph_launches(): graph launches in this process (a test's proof that one ran).
void set_decode_graph(bool on);
uint64_t decode_graph_launches();

// Registers "cuda" with core's make_backend (core/backend_factory.h). Executables built with
// MOEPACK_CUDA call it once at startup.
void register_cuda_backend();

}  // namespace moepack::gpu
