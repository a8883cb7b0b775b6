// Hyperparameters of a MoE model, read from GGUF metadata (`<arch>.*` keys as written by
// llama.cpp's convert_hf_to_gguf.py; names below follow llama.cpp's llama_hparams). Nothing
// about a model's size is hard-coded anywhere else: every forward pass takes its shapes here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moepack {

class GgufFile;

enum class RopeStyle : uint8_t {
  Norm,  // rotate adjacent pairs (x[2i], x[2i+1]); llama.cpp LLAMA_ROPE_TYPE_NORM
  Neox,  // rotate halves (x[i], x[i + n/2]); LLAMA_ROPE_TYPE_NEOX
};

enum class ExpertGating : uint8_t {
  Softmax = 1,  // LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX
  Sigmoid = 2,  // LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
  SqrtSoftplus = 4,  // sqrt(softplus(logit)); DeepSeek-V4 (ARCH_DEEPSEEK4.md §4.8)
};

struct ModelConfig {
  std::string arch;  // general.architecture: deepseek2 | qwen3moe | llama | deepseek4 | kimi-linear
  std::string name;  // general.name (may be empty)
  uint32_t n_vocab = 0;
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;          // block_count
  uint32_t n_ctx_train = 0;      // context_length
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t n_embd_head_k = 0;    // key_length (default n_embd / n_head)
  uint32_t n_embd_head_v = 0;    // value_length
  float rms_eps = 1e-6f;         // attention.layer_norm_rms_epsilon
  uint32_t n_ff = 0;             // feed_forward_length (dense FFN width)
  // MoE.
  uint32_t n_expert = 0;         // expert_count
  uint32_t n_expert_used = 0;    // expert_used_count (top-k)
  uint32_t n_expert_shared = 0;  // expert_shared_count
  uint32_t n_ff_exp = 0;         // expert_feed_forward_length (0: n_ff)
  uint32_t n_ff_shexp = 0;       // expert_shared_feed_forward_length (0: n_ff_exp)
  uint32_t n_layer_dense_lead = 0;  // leading_dense_block_count
  ExpertGating gating = ExpertGating::Softmax;
  bool expert_weights_norm = false;
  float expert_weights_scale = 1.0f;  // 0 in the file means 1
  uint32_t n_expert_groups = 0;       // expert_group_count (0/1: no grouping)
  uint32_t n_group_used = 0;          // expert_group_used_count
  // MLA (deepseek2).
  uint32_t q_lora_rank = 0;
  uint32_t kv_lora_rank = 0;
  uint32_t n_embd_head_k_mla = 0;  // key_length_mla: qk_nope + qk_rope
  uint32_t n_embd_head_v_mla = 0;  // value_length_mla
  // RoPE.
  RopeStyle rope_style = RopeStyle::Norm;
  uint32_t n_rot = 0;              // rope.dimension_count
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;    // 1 / rope.scaling.factor for linear/yarn
  bool rope_yarn = false;
  uint32_t rope_n_ctx_orig = 0;    // rope.scaling.original_context_length
  float yarn_ext_factor = 0.0f;    // 1 for yarn (llama.cpp default when scaling type is yarn)
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float yarn_log_mul = 0.0f;       // rope.scaling.yarn_log_multiplier
  bool tied_embeddings = false;    // no output.weight: the head is token_embd
  // deepseek4 (DeepSeek-V4; ../shared/docs/ARCH_DEEPSEEK4.md §2, corrections in docs/arch-deepseek4.md).
  uint32_t n_layer_nextn = 0;               // trailing MTP blocks (nextn_predict_layers), not run
  uint32_t n_swa = 0;                       // attention.sliding_window: raw keys a query sees, itself included
  std::vector<uint32_t> compress_ratios;    // per block: 0 (window only), 4 (CSA) or 128 (HCA)
  float compress_rope_freq_base = 0.0f;     // rope base of compressed blocks (YaRN applies there only)
  uint32_t indexer_n_head = 0;              // attention.indexer.head_count
  uint32_t indexer_head_dim = 0;            // attention.indexer.key_length
  uint32_t indexer_top_k = 0;               // compressed rows a CSA query attends to
  uint32_t out_groups = 0;                  // attention.output_group_count (G)
  uint32_t out_lora_rank = 0;               // attention.output_lora_rank (O)
  uint32_t hc_count = 0;                    // hyper_connection.count (4)
  uint32_t hc_sinkhorn_iters = 0;           // hyper_connection.sinkhorn_iterations
  float hc_eps = 0.0f;                      // hyper_connection.epsilon
  uint32_t n_hash_layers = 0;               // hash_layer_count: leading blocks routed by token id
  std::vector<float> swiglu_clamp_exp;      // per block, routed experts (<= 1e-6: no clamp)
  std::vector<float> swiglu_clamp_shexp;    // per block, shared expert
  // kimi-linear (../shared/docs/ARCH_KIMI_LINEAR.md §2).
  std::vector<uint32_t> head_count_kv_per_layer;  // attention.head_count_kv: 0 => KDA block, else MLA
  uint32_t kda_head_dim = 0;                // kda.head_dim (d)
  uint32_t ssm_conv_kernel = 0;             // ssm.conv_kernel (w)

  bool is_moe_layer(uint32_t il) const { return n_expert > 0 && il >= n_layer_dense_lead && il < n_layer - n_layer_nextn; }
  // The first MoE block after blk.il, or n_layer if none (next-layer prefetch's target).
  uint32_t next_moe_layer(uint32_t il) const {
    for (uint32_t j = il + 1; j < n_layer; ++j) {
      if (is_moe_layer(j)) return j;
    }
    return n_layer;
  }
  // Blocks a forward pass runs (block_count without the trailing MTP blocks).
  uint32_t n_layer_run() const { return n_layer - n_layer_nextn; }
  // kimi-linear: block il is a KDA (linear attention) block.
  bool is_kda_layer(uint32_t il) const {
    return il < head_count_kv_per_layer.size() && head_count_kv_per_layer[il] == 0;
  }
};

// Reads the config from `gguf`'s metadata. Throws FormatError naming the file and key for a
// missing required key or an impossible value (n_head not dividing n_embd, top-k > experts, ...),
// Error for an architecture the CPU engine does not run.
ModelConfig read_model_config(const GgufFile& gguf);

// Architectures the engine runs.
bool engine_supports_arch(const std::string& arch);
// Their names for messages: "deepseek2, qwen3moe, llama, deepseek4, kimi-linear".
const char* engine_supported_archs();

}  // namespace moepack
