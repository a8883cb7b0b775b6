// Planning a pack: which source bytes go where. Pure computation over the GGUF directory (no
// tensor data is read), shared by `moepack build`, its resume logic and `moepack inspect`.
//
// Every tensor of the model is either a routed-expert role (core/model_summary.h recognises
// them by name) copied into experts.bin, or a dense tensor copied into dense.gguf. The plan
// refuses, naming the tensor, anything the runtime could not address by arithmetic:
//   - a MoE layer missing a role that other MoE layers have (e.g. no ffn_up_exps in blk.2),
//   - roles of one layer with different expert counts, or n_experts != <arch>.expert_count,
//   - per-expert tensors (legacy layout) of one layer with different types or shapes,
//   - gate/up shapes that differ, or a down projection that is not their transpose,
//   - a tensor whose bytes are not n_experts equal slices of ggml's size for (type, ne).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gguf_model.h"
#include "core/model_summary.h"
#include "core/pack_layout.h"

namespace moepack {

// Where one expert's slice of one role comes from.
struct SourceSlice {
  uint32_t shard = 0;        // index into GgufModel::shards()
  uint64_t file_offset = 0;  // absolute offset in that shard file
};

struct PackPlan {
  ModelSummary summary;
  PackLayout layout;  // computed (compute_pack_layout)
  // slices[l][r][e]: source of role r of expert e of layer l; bytes = layout.layers[l].roles[r].bytes
  std::vector<std::vector<std::vector<SourceSlice>>> slices;
  std::vector<GgufTensorRef> dense_tensors;  // in source order
  uint64_t dense_data_bytes = 0;             // sum of the dense tensors' bytes
  uint64_t expert_source_bytes = 0;          // routed-expert bytes read from the source
};

// Throws Error naming the model file and tensor when the model cannot be packed.
PackPlan plan_pack(const GgufModel& model);

// What a pack of `model` takes on disk, for `moepack inspect`: {data_start, max_stride,
// experts_bytes, padding_bytes, dense_bytes, total_bytes, layers: [{block, n_experts,
// block_bytes, stride}]}; {error} when the model cannot be packed. Reads metadata only.
nlohmann::json pack_plan_summary(const GgufModel& model);
// Human-readable form of pack_plan_summary(), a few lines.
std::string pack_plan_summary_text(const nlohmann::json& summary);

}  // namespace moepack
