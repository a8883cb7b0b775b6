// See tiled_experts.h.
#include "gpu/tiled_experts.h"

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/gemv_tiled.h"
#include "gpu/kernels.h"

namespace moepack::gpu {

bool tiled_expert(const std::string& mode, GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes,
                  uint64_t align_of) {
  if (mode != "auto" && mode != "on" && mode != "off") {
    throw Error("tiled_experts: \"" + mode + "\" is not auto, on or off");
  }
  const bool wanted = mode == "on" || (mode == "auto" && ne0 * ne1 >= kTiledAutoMin * kTiledAutoMin);
  const auto rb = ggml_row_bytes(type, static_cast<uint64_t>(ne0 > 0 ? ne0 : 0));
  if (!wanted || !tiled_layout_covers(type, ne0, ne1) || !rb || *rb != row_bytes || align_of % 16 != 0)
    return false;
  // Where the tensor-core decode GEMV runs on the GGUF layout, the tiled one must too (x's
  // fragments within a block's shared memory), or a tiled matrix would take the F32 kernels
  // and its sums would differ from the GGUF layout's. (With the tensor cores off, both layouts
  // take the F32 kernels: the same sums.)
  // Q5_K, Q6_K and Q3_K (twenty-ninth pass) only where their tiled tensor-core launch runs (its
  // switches: gpu/gemv_mma.h, kGemvQ5kTensorCoresDefault, kGemvQ6kTiledDefault,
  // kGemvQ3kTiledDefault): on the F32 kernels alone the layout only adds the gather.
  if (type == GgmlType::Q5_K || type == GgmlType::Q6_K || type == GgmlType::Q3_K) {
    return gemv_tiled_supported(type, ne0, ne1);
  }
  return gemv_x_fragments_bytes(type, ne0) == 0 || gemv_tiled_supported(type, ne0, ne1);
}

void deliver_block(std::span<const TiledRole> roles, uint8_t* slot, const uint8_t* pinned, uint64_t bytes,
                   uint8_t* scratch, uint64_t scratch_bytes, cudaStream_t copy) {
  bool any = false;
  for (const TiledRole& r : roles) any = any || r.tiled;
  if (!any) {
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(slot, pinned, bytes, cudaMemcpyHostToDevice, copy));
    return;
  }
  if (!scratch || scratch_bytes < bytes) {
    throw Error("internal: a pack block of " + std::to_string(bytes) +
                " bytes exceeds the tiling scratch of " + std::to_string(scratch ? scratch_bytes : 0));
  }
  MOEPACK_CUDA_CHECK(cudaMemcpyAsync(scratch, pinned, bytes, cudaMemcpyHostToDevice, copy));
  for (const TiledRole& r : roles) {
    const uint64_t mat = static_cast<uint64_t>(r.ne1) * r.row_bytes;
    if (r.offset > bytes || mat > bytes - r.offset) {
      throw Error("internal: a role of " + std::to_string(mat) + " bytes at " + std::to_string(r.offset) +
                  " overruns its block of " + std::to_string(bytes));
    }
    if (r.tiled) {
      repack_tiled(r.type, r.ne0, r.ne1, r.row_bytes, scratch + r.offset, slot + r.offset, 1, copy);
    } else {
      MOEPACK_CUDA_CHECK(
          cudaMemcpyAsync(slot + r.offset, scratch + r.offset, mat, cudaMemcpyDeviceToDevice, copy));
    }
  }
}

}  // namespace moepack::gpu
