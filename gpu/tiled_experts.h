// Routed experts in the tiled layout of the tensor-core decode GEMV (gpu/gemv_tiled.h), shared by
// the engine (gpu/cuda_moe.h) and bench-twin on the GPU (gpu/twin_gpu.h): which expert matrices
// take it (EngineSettings::tiled_experts), and how an Expert Pack block read into pinned memory
// reaches its VRAM slot with them permuted (VramExpertPool::set_delivery).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <string>

#include "core/ggml_type.h"

namespace moepack::gpu {

// Matrices of at least kTiledAutoMin^2 elements (2048 x 2048) take the layout under "auto": the
// decode GEMV gains from it where a launch spans enough blocks to fill the GPU (the target
// models' experts: DeepSeek-V4-Flash's 4096 x 2048, Kimi-K3's 7168 x 1536); small experts are
// launch-bound, their prefill a little slower on it and their delivery dominated by the extra
// launches (docs/cuda-backend.md, seventeenth pass).
inline constexpr int64_t kTiledAutoMin = 2048;

// Whether a [ne1][ne0] expert matrix of `type` (rows of row_bytes, at a byte offset `align_of`
// of 16-byte aligned memory: a pack role's offset, or a tensor's address) is held tiled under
// `mode` ("auto" | "on" | "off"): selected by the mode, covered by the layout
// (tiled_layout_covers), row_bytes the type's, 16-byte aligned, and, where the tensor-core
// decode GEMV covers the type, its tiled launch too (gemv_tiled_supported: x's fragments within
// a block's shared memory), so that every sum stays the GGUF layout's; Q5_K, Q6_K and Q3_K only
// where that tiled launch runs (switched on: gpu/gemv_mma.h). Needs a current CUDA device. Throws Error for
// another mode.
bool tiled_expert(const std::string& mode, GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes,
                  uint64_t align_of);

// One matrix of a pack block: at `offset`, [ne1][ne0] of `type`, tiled or as it is.
struct TiledRole {
  uint64_t offset = 0;
  GgmlType type = GgmlType::F32;
  int64_t ne0 = 0, ne1 = 0;
  uint64_t row_bytes = 0;
  bool tiled = false;
};

// A pack block of `bytes` at `pinned` (page-locked host memory) into its slot, on stream `copy`
// (enqueued only): one copy when no role is tiled; otherwise the block into `scratch` (device, at
// least `bytes`; stream order on `copy` keeps it until the last role is done), then each role
// into the slot, permuted by repack_tiled or copied as it is. Bytes outside the roles are not
// copied then (nothing reads them). Throws Error for a scratch too small or a role that overruns
// the block.
void deliver_block(std::span<const TiledRole> roles, uint8_t* slot, const uint8_t* pinned, uint64_t bytes,
                   uint8_t* scratch, uint64_t scratch_bytes, cudaStream_t copy);

}  // namespace moepack::gpu
