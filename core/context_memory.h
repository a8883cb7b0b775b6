// Memory a sequence's attention state takes, from a model's hyperparameters alone: the part that
// grows with every token (KV cache rows) and the part fixed per sequence (sliding windows,
// compressor states, recurrent states). `moepack inspect` prints it so users can see the context
// they can afford next to the expert cache.
//
// Bytes are for llama.cpp's default cache types: K/V rows F16 (2 B per value), compressor and
// recurrent states F32 (4 B). Formulas and sources:
//   llama, qwen3moe (GQA):  per token  Σ_layers n_head_kv · (key_length + value_length) · 2 B
//   deepseek2 (absorbed MLA, arXiv:2405.04434 §2.1): per token  n_layer · (kv_lora_rank + n_rot) · 2 B
//   deepseek4 (ARCH_DEEPSEEK4.md §5): per token  n_CSA·(D + D_I)·2/4 + n_HCA·D·2/128 B;
//       fixed: raw window n_layer·n_swa·D·2 B; compressor states n_CSA·(8·2D + 8·2D_I)·2·4 B
//       + n_HCA·128·D·2·4 B (D = key_length, D_I = indexer key_length, n_CSA / n_HCA = blocks of
//       compress ratio 4 / 128)
//   kimi-linear (ARCH_KIMI_LINEAR.md §4.3, §5): per token  n_MLA·(kv_lora_rank + n_rot)·2 B;
//       fixed per KDA block (3·(w−1)·H·d + H·d²)·4 B (conv history + recurrent state)
// The CPU reference engine keeps F32 rows (twice the per-token figure) and, for deepseek4,
// every position's compressor inputs so that truncate() is exact (see core/arch_deepseek4.cpp).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/model_config.h"

namespace moepack {

struct ContextMemory {
  double bytes_per_token = 0;  // growth per token of context (may be fractional: compressed rows)
  uint64_t fixed_bytes = 0;    // per sequence, independent of its length
  std::string formula;         // one line: which layers contribute what
  // Bytes for a context of n tokens.
  uint64_t bytes_for(uint64_t n_tokens) const {
    return fixed_bytes + static_cast<uint64_t>(bytes_per_token * static_cast<double>(n_tokens) + 0.5);
  }
};

// Throws Error for an architecture it does not know (every engine_supports_arch() one is known).
ContextMemory context_memory(const ModelConfig& cfg);

// {bytes_per_token, fixed_bytes, formula, bytes_at: {"4096": .., "32768": .., "131072": .., n_ctx_train: ..}}
nlohmann::json context_memory_json(const ModelConfig& cfg, const ContextMemory& m);
// A few lines for `moepack inspect`.
std::string context_memory_text(const ModelConfig& cfg, const ContextMemory& m);

}  // namespace moepack
