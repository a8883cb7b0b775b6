// What a GGUF model is, in the terms `moepack inspect` prints: architecture, hyperparameters,
// tokenizer, tensor statistics and the Mixture-of-Experts structure (which blocks have routed
// experts, how many, top-k, shared experts, and the bytes of one routed expert per role).
//
// Routed experts are recognised by tensor name, as llama.cpp names them:
//   blk.<N>.ffn_<role>_exps.<weight|bias>  stacked: the last dimension is the expert index
//   blk.<N>.ffn_<role>.<E>.weight          legacy per-expert layout (early Mixtral GGUFs)
// Router weights (ffn_gate_inp), selection biases (exp_probs_b), hash-routing tables
// (ffn_gate_tid2eid) and shared experts (*_shexp) are not routed experts.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/gguf_model.h"

namespace moepack {

struct PackManifest;  // core/pack_manifest.h

struct ExpertRole {
  std::string role;     // "gate", "up", "down", "gate_up", "down.bias", ...
  std::string tensor;   // tensor name (stacked) or the expert-0 tensor name (legacy)
  GgmlType type = GgmlType::F32;
  std::array<uint64_t, 4> ne{1, 1, 1, 1};  // shape of the whole tensor (stacked) / one expert (legacy)
  uint64_t bytes_per_expert = 0;            // bytes of one expert's slice of this role
  bool stacked = true;
};

struct MoeLayerInfo {
  uint32_t block = 0;        // transformer block index N in blk.N
  uint32_t n_experts = 0;    // routed experts in this block
  std::vector<ExpertRole> roles;  // gate, up, down first, then any others by name
  uint64_t expert_bytes = 0;      // bytes of one expert, all roles (unaligned)
};

struct TypeStats {
  uint64_t tensors = 0;
  uint64_t bytes = 0;
};

struct ModelSummary {
  std::string architecture;       // general.architecture
  std::string name;               // general.name ("" if absent)
  std::vector<std::string> files;
  uint64_t file_bytes = 0;
  uint32_t gguf_version = 0;
  std::map<std::string, std::string> hparams_text;  // "<arch>.<key>" without the prefix, printable

  std::string tokenizer_model;    // tokenizer.ggml.model: "gpt2" (BPE), "llama" (SentencePiece)...
  std::string tokenizer_pre;      // tokenizer.ggml.pre
  uint64_t vocab_size = 0;        // entries of tokenizer.ggml.tokens
  std::optional<int64_t> bos_id, eos_id;
  bool has_chat_template = false;

  uint64_t tensor_count = 0;
  uint64_t tensor_bytes = 0;
  std::map<std::string, TypeStats> by_type;  // by ggml type name

  std::optional<uint64_t> expert_count;         // <arch>.expert_count
  std::optional<uint64_t> expert_used_count;    // top-k
  std::optional<uint64_t> expert_shared_count;
  std::vector<MoeLayerInfo> moe_layers;
  uint64_t routed_expert_bytes = 0;  // all routed experts of all layers
};

// Throws FormatError for metadata of the wrong type (e.g. a string block_count).
ModelSummary summarize(const GgufModel& model);

// An Expert Pack directory's summary, as its source GGUF's would read: dense.gguf's metadata,
// tensors and tokenizer, plus the routed experts from manifest.json's layout (one stacked tensor
// per layer and role, as llama.cpp writes them: shapes with the expert index last, bytes, types;
// a legacy per-expert source reads as stacked).
// `files` are dense.gguf and experts.bin, `file_bytes` their sizes. Throws Error for a directory
// without manifest.json ("not an Expert Pack"), and what GgufModel::open and read_manifest throw
// (IoError, FormatError naming the file).
ModelSummary summarize_pack(const std::string& path);  // the directory or its manifest.json
// The same from the pack's parts already read: its directory (expert_pack_dir's), dense.gguf
// open and its manifest.
ModelSummary summarize_pack(const std::string& pack_dir, const GgufModel& dense,
                            const PackManifest& manifest);
// pack_dir_of(path), refused with Error "<dir>: not an Expert Pack (no manifest.json)" when the
// directory has no manifest.
std::string expert_pack_dir(const std::string& path);

// JSON object as printed by `moepack inspect --json` (docs/cli.md). With `with_tensors`,
// includes every tensor (name, type, ne, nbytes, file_offset, shard).
nlohmann::json summary_to_json(const ModelSummary& s, const GgufModel& model, bool with_tensors);

// Human-readable report (stderr-bound text of `moepack inspect`).
std::string summary_to_text(const ModelSummary& s);

}  // namespace moepack
