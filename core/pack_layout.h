// Expert Pack address arithmetic: where each routed expert, and each role inside it, lives in
// experts.bin. The byte layout and the formulas are specified in core/expert_pack.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ggml_type.h"

namespace moepack {

inline constexpr uint32_t kPackFormatVersion = 1;
inline constexpr uint64_t kPackAlignment = 4096;     // offsets and strides of blocks, bytes
inline constexpr uint64_t kPackRoleAlignment = 256;  // role offsets inside a block, bytes

// One per-expert tensor of a layer (gate, up, down, ...), as one expert's slice.
struct PackRole {
  std::string role;    // "gate", "up", "down", "gate_up", "down.bias", ...
  std::string tensor;  // source tensor name (stacked), or expert 0's tensor (legacy layout)
  GgmlType type = GgmlType::F32;
  uint32_t n_dims = 0;                     // of one expert's slice
  std::array<uint64_t, 4> ne{1, 1, 1, 1};  // one expert's slice, ne[0] fastest
  uint64_t bytes = 0;                      // one expert's slice, bytes
  uint64_t offset = 0;                     // inside the block, multiple of kPackRoleAlignment
};

// The order of a layer's roles, in a model summary and in a pack (core/model_summary.cpp sorts by it, a
// manifest must follow it): gate 0, up 1, down 2, gate_up 3, any other 4 (others then by name).
int expert_role_rank(const std::string& role);

// The role and block a routed-expert tensor's name gives: "blk.N.ffn_ROLE_exps.weight" (stacked; ".bias"
// makes the role "ROLE.bias") or "blk.N.ffn_{gate,up,down}.E.weight" (one tensor an expert, the legacy
// layout). False for any other name.
bool expert_role_of_tensor(const std::string& tensor, std::string& role, uint32_t& block);

struct PackLayer {
  uint32_t block = 0;      // N of blk.N
  uint32_t n_experts = 0;  // routed experts of this layer
  std::vector<PackRole> roles;
  uint64_t block_bytes = 0;  // end of the last role inside the block
  uint64_t stride = 0;       // align_up(block_bytes, kPackAlignment)
  uint64_t base = 0;         // absolute offset of expert 0 in experts.bin
};

struct PackLayout {
  uint64_t data_start = 0;  // = pack_header_bytes(layers.size())
  uint64_t data_end = 0;    // size of experts.bin
  uint64_t max_stride = 0;  // largest stride: the cache slot size
  std::vector<PackLayer> layers;

  uint64_t expert_count() const;
  // layer_base[l] + e * stride[l]; throws Error when l or e is out of range.
  uint64_t offset(uint32_t l, uint32_t e) const;
};

// Bytes before data_start for `n_layers` layers: align_up(96 + 32 * n_layers, 4096).
uint64_t pack_header_bytes(uint64_t n_layers);

// Fills every derived field of `layout` (role offsets, block_bytes, stride, base, data_start,
// data_end, max_stride) from the layers' n_experts and the roles' bytes. Throws Error on an
// empty layout or layer, a role of 0 bytes, or arithmetic overflow.
void compute_pack_layout(PackLayout& layout);

}  // namespace moepack
