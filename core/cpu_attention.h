// The attention half of a transformer block on the CPU, one implementation per architecture
// (arch_deepseek2.cpp: MLA; arch_qwen3moe.cpp and arch_llama.cpp: GQA). The rest of the block
// (norms, residuals, dense FFN, MoE) is common and lives in cpu_backend.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include "core/cpu_ops.h"
#include "core/model_config.h"

namespace moepack {

class TensorStore;
class ThreadPool;

class CpuAttention {
 public:
  virtual ~CpuAttention() = default;
  // Floats one token occupies in layer il's KV cache.
  virtual int64_t kv_width(uint32_t il) const = 0;
  // xn: [n_tok][n_embd] normed block input for positions pos0 .. pos0 + n_tok - 1.
  // kv: layer il's cache [n_ctx][kv_width]; entries for these positions are written here,
  // entries 0 .. pos0 - 1 are read. out: [n_tok][n_embd] attention output (before the residual).
  virtual void forward(uint32_t il, const float* xn, int64_t n_tok, int64_t pos0, float* kv, float* out) = 0;
};

std::unique_ptr<CpuAttention> make_attention_deepseek2(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool);
std::unique_ptr<CpuAttention> make_attention_qwen3moe(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool);
std::unique_ptr<CpuAttention> make_attention_llama(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool);

// Grouped-query attention over a [n_ctx][k | v] cache (shared by qwen3moe and llama):
// q: [n_tok][n_head * head_dim] (already normed/roped), kv rows hold n_head_kv keys then
// n_head_kv values for each position; out: [n_tok][n_head * head_dim_v]. Causal.
void gqa_attend(ThreadPool& pool, const float* q, int64_t n_tok, int64_t pos0, const float* kv, int64_t kv_width,
                int64_t n_head, int64_t n_head_kv, int64_t head_dim_k, int64_t head_dim_v, float kq_scale, float* out);

// RopeParams of a model (llama.cpp's ggml_rope_ext arguments derived from hparams).
RopeParams rope_params(const ModelConfig& cfg);

// deepseek2 MLA (arch_deepseek2.cpp, shared with the CUDA backend): RoPE parameters with YaRN's
// magnitude correction cancelled, and the softmax scale mscale^2 / sqrt(key_length_mla).
RopeParams mla_rope_params(const ModelConfig& cfg);
float mla_kq_scale(const ModelConfig& cfg);

}  // namespace moepack
