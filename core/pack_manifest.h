// manifest.json of an Expert Pack (format version 1): what the pack holds and how to check it.
//
// {
//   "format": "moepack-expert-pack", "format_version": 1,
//   "build_id": "<32 hex>",                  // = experts.bin header build_id = dense.gguf key
//   "tool": "moepack 0.1.0",
//   "model": { "architecture", "name", "expert_count", "expert_used_count",
//              "expert_shared_count", "hparams": {<arch>.* keys without prefix},
//              "tokenizer": {"model", "pre", "vocab_size", "bos_id", "eos_id",
//                            "has_chat_template"} },       // informative; dense.gguf is the truth
//   "sources": [ {"path", "bytes", "sha256"} ],           // the GGUF file(s), shard order
//   "files": { "dense":   {"file": "dense.gguf",  "bytes", "sha256", "tensors"},
//              "experts": {"file": "experts.bin", "bytes", "sha256"} },  // sha256 of whole file
//   "layout": { "alignment": 4096, "role_alignment": 256, "data_start", "data_end",
//               "max_stride", "expert_count",
//               "layers": [ { "index", "block", "n_experts", "block_bytes", "stride", "base",
//                             "roles": [ {"role", "tensor", "type", "ne": [..], "bytes",
//                                         "offset"} ],
//                             "expert_sha256": [ n_experts x "<64 hex>" ] } ] },
//                                  // SHA-256 of each block's stride bytes, padding included
//   "build": { settings and timings, informative }
// }
//
// Reading validates everything a loader relies on: types and presence of every field, hex
// digests, role bytes against ggml's size of (type, ne), and every derived layout number
// against compute_pack_layout() (so offsets, strides and bases obey the formula). Failures are
// FormatError(file, "<json path>", 0, what).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/pack_layout.h"

namespace moepack {

struct PackSourceFile {
  std::string path;
  uint64_t bytes = 0;
  std::string sha256;  // 64 hex
};

struct PackFileEntry {
  std::string file;  // name inside the pack directory (no '/')
  uint64_t bytes = 0;
  std::string sha256;  // of the whole file, 64 hex
};

struct PackManifest {
  uint32_t format_version = kPackFormatVersion;
  std::string build_id;  // 32 hex digits
  std::string tool;
  nlohmann::json model = nlohmann::json::object();
  std::vector<PackSourceFile> sources;
  PackFileEntry dense;
  uint64_t dense_tensors = 0;
  PackFileEntry experts;
  PackLayout layout;
  std::vector<std::vector<std::string>> expert_sha256;  // [layer][expert], 64 hex each
  nlohmann::json build = nlohmann::json::object();
};

nlohmann::json manifest_to_json(const PackManifest& m);
// Validates as described above; `file` names the manifest in errors.
PackManifest manifest_from_json(const nlohmann::json& j, const std::string& file);
// Reads and validates a manifest file (size capped at 256 MiB). Throws IoError, FormatError.
PackManifest read_manifest(const std::string& path);

}  // namespace moepack
