// dense.gguf of an Expert Pack: a GGUF v3 file with all of the source model's metadata and
// every tensor that is not a routed expert, so that a pack runs without its source.
//
// Metadata key/value pairs are copied byte for byte from the source's first shard (their
// encoded bytes are re-read from the file, so every type, nested array and lazy array is kept
// exactly), except `split.*` (a pack is never split); one STRING key is appended:
// `moepack.pack.build_id` = the pack's build id. Tensor infos keep name, shape and type; data
// offsets are re-laid out in source order at the source's `general.alignment` (default 32), and
// tensor bytes are copied unchanged. Layout of the result (see core/gguf.h for GGUF itself):
//   [header + kv + tensor infos][zero pad to alignment][tensor data, each at an aligned offset]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/gguf_model.h"

namespace moepack {

struct DenseGgufPlan {
  std::vector<uint8_t> head;           // every byte before data_start (header, kv, infos, pad)
  std::vector<GgufTensorRef> tensors;  // in file order
  std::vector<uint64_t> data_offsets;  // absolute offset of each tensor's data in dense.gguf
  uint64_t file_bytes = 0;             // total size of dense.gguf
};

// Throws Error / FormatError (from reading the source's metadata bytes).
DenseGgufPlan plan_dense_gguf(const GgufModel& model, const std::vector<GgufTensorRef>& tensors,
                              const std::string& build_id_hex);

}  // namespace moepack
