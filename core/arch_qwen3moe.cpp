// `qwen3moe` attention (llama.cpp llm_build_qwen3moe): grouped-query attention whose q and k
// get a per-head RMSNorm (attn_q_norm / attn_k_norm, head_dim weights) before RoPE in NEOX
// style (rotate halves) over the whole head; scale 1/sqrt(head_dim). The GQA code is shared
// with arch_llama.cpp; only these two differences make qwen3moe.
#include "core/cpu_attention.h"

namespace moepack {

std::unique_ptr<CpuAttention> make_gqa_attention_qk_norm(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool);

std::unique_ptr<CpuAttention> make_attention_qwen3moe(const ModelConfig& cfg, TensorStore& t, ThreadPool& pool) {
  return make_gqa_attention_qk_norm(cfg, t, pool);
}

}  // namespace moepack
