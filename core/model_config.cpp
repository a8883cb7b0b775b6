#include "core/model_config.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gguf.h"

namespace moepack {

namespace {

struct Reader {
  const GgufFile& g;
  std::string arch;

  uint64_t key_offset(const std::string& key) const {
    const GgufKv* kv = g.find(key);
    return kv ? kv->value_offset : 0;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw FormatError(g.path(), key, key_offset(key), what);
  }
  uint32_t u32(const std::string& suffix, std::optional<uint32_t> def = std::nullopt) const {
    const std::string key = arch + "." + suffix;
    const auto v = g.get_uint(key);
    if (!v) {
      if (def) return *def;
      fail(key, "required key is missing");
    }
    if (*v > 0xFFFFFFFFull) fail(key, "value " + std::to_string(*v) + " is too large");
    return static_cast<uint32_t>(*v);
  }
  float f32(const std::string& suffix, float def) const {
    const auto v = g.get_float(arch + "." + suffix);
    if (!v) return def;
    if (!std::isfinite(*v)) fail(arch + "." + suffix, "value is not finite");
    return static_cast<float>(*v);
  }
  bool flag(const std::string& suffix, bool def) const {
    const auto v = g.get_bool(arch + "." + suffix);
    return v ? *v : def;
  }
};

// Per-block array `key` (integers or floats), or a scalar repeated for every block.
std::vector<double> per_block(const Reader& r, const std::string& suffix, uint32_t n_layer, bool required) {
  const std::string key = r.arch + "." + suffix;
  std::vector<double> out;
  if (const GgufArray* a = r.g.get_array(key)) {
    const GgufArray arr = a->resident ? *a : r.g.load_array(*a, 1u << 20);
    if (arr.count < n_layer) r.fail(key, "has " + std::to_string(arr.count) + " entries for " + std::to_string(n_layer) + " blocks");
    for (uint32_t i = 0; i < n_layer; ++i) out.push_back(arr.float_at(i));
  } else if (const auto v = r.g.get_float(key)) {
    out.assign(n_layer, *v);
  } else if (required) {
    r.fail(key, "required key is missing");
  }
  return out;
}

void read_deepseek4(const Reader& r, ModelConfig& c) {
  const std::string a = c.arch + ".";
  c.q_lora_rank = r.u32("attention.q_lora_rank");
  c.n_layer_nextn = r.u32("nextn_predict_layers", 0);
  if (c.n_layer_nextn >= c.n_layer) r.fail(a + "nextn_predict_layers", "leaves no block to run");
  c.n_swa = r.u32("attention.sliding_window");
  if (c.n_swa == 0) r.fail(a + "attention.sliding_window", "must be positive");
  for (double v : per_block(r, "attention.compress_ratios", c.n_layer, true)) {
    if (v != 0 && v != 4 && v != 128) r.fail(a + "attention.compress_ratios", "ratios must be 0, 4 or 128");
    c.compress_ratios.push_back(static_cast<uint32_t>(v));
  }
  c.compress_rope_freq_base = r.f32("attention.compress_rope_freq_base", 0.0f);
  if (!(c.compress_rope_freq_base > 0)) r.fail(a + "attention.compress_rope_freq_base", "required and positive");
  c.indexer_n_head = r.u32("attention.indexer.head_count");
  c.indexer_head_dim = r.u32("attention.indexer.key_length");
  c.indexer_top_k = r.u32("attention.indexer.top_k");
  c.out_groups = r.u32("attention.output_group_count");
  c.out_lora_rank = r.u32("attention.output_lora_rank");
  if (c.out_groups == 0 || c.n_head % c.out_groups != 0) r.fail(a + "attention.output_group_count", "must divide head_count");
  c.hc_count = r.u32("hyper_connection.count");
  if (c.hc_count != 4) r.fail(a + "hyper_connection.count", "must be 4 (as llama.cpp's graph asserts)");
  c.hc_sinkhorn_iters = r.u32("hyper_connection.sinkhorn_iterations");
  if (c.hc_sinkhorn_iters == 0) r.fail(a + "hyper_connection.sinkhorn_iterations", "must be positive");
  c.hc_eps = r.f32("hyper_connection.epsilon", -1.0f);
  if (c.hc_eps < 0) r.fail(a + "hyper_connection.epsilon", "required and >= 0");
  c.n_hash_layers = r.u32("hash_layer_count");
  if (c.n_hash_layers > c.n_layer) r.fail(a + "hash_layer_count", "exceeds block_count");
  for (double v : per_block(r, "swiglu_clamp_exp", c.n_layer, true)) c.swiglu_clamp_exp.push_back(static_cast<float>(v));
  for (double v : per_block(r, "swiglu_clamp_shexp", c.n_layer, false)) c.swiglu_clamp_shexp.push_back(static_cast<float>(v));
  if (c.swiglu_clamp_shexp.empty()) c.swiglu_clamp_shexp = c.swiglu_clamp_exp;
  if (c.n_embd_head_k != c.n_embd_head_v) r.fail(a + "attention.value_length", "must equal key_length (K = V)");
}

void read_kimi_linear(const Reader& r, ModelConfig& c) {
  const std::string a = c.arch + ".";
  for (double v : per_block(r, "attention.head_count_kv", c.n_layer, false)) {
    c.head_count_kv_per_layer.push_back(static_cast<uint32_t>(v));
  }
  if (c.head_count_kv_per_layer.empty()) c.head_count_kv_per_layer.assign(c.n_layer, 1);
  c.kda_head_dim = r.u32("kda.head_dim");
  c.ssm_conv_kernel = r.u32("ssm.conv_kernel");
  if (c.kda_head_dim == 0) r.fail(a + "kda.head_dim", "must be positive");
  if (c.ssm_conv_kernel == 0 || c.ssm_conv_kernel > 64) r.fail(a + "ssm.conv_kernel", "must be in 1..64");
}

}  // namespace

bool engine_supports_arch(const std::string& arch) {
  return arch == "deepseek2" || arch == "qwen3moe" || arch == "llama" || arch == "deepseek4" || arch == "kimi-linear";
}

const char* engine_supported_archs() { return "deepseek2, qwen3moe, llama, deepseek4, kimi-linear"; }

ModelConfig read_model_config(const GgufFile& g) {
  ModelConfig c;
  const auto arch = g.get_string("general.architecture");
  if (!arch) throw FormatError(g.path(), "general.architecture", 0, "required key is missing");
  c.arch = *arch;
  if (c.arch == "moepack-twin") {  // bench/twin_pack.h
    throw Error(g.path() + ": a shape-faithful twin (architecture 'moepack-twin'), not a model: it holds synthetic "
                "experts and no dense weights; benchmark it with `moepack bench-twin` (docs/twins.md)");
  }
  if (!engine_supports_arch(c.arch)) {
    throw Error(g.path() + ": architecture '" + c.arch +
                "' is not supported by the engine (supported: " + engine_supported_archs() + ")");
  }
  c.name = g.get_string("general.name").value_or("");
  Reader r{g, c.arch};

  c.n_embd = r.u32("embedding_length");
  c.n_layer = r.u32("block_count");
  c.n_ctx_train = r.u32("context_length", 4096);
  if (c.n_ctx_train == 0)
    r.fail(c.arch + ".context_length", "must be positive (the trained context, tokens)");
  c.n_head = r.u32("attention.head_count");
  // kimi-linear writes head_count_kv per layer (0 = KDA); its MLA layers share one latent row.
  c.n_head_kv = c.arch == "kimi-linear" ? 1 : r.u32("attention.head_count_kv", c.n_head);
  if (c.n_embd == 0) r.fail(c.arch + ".embedding_length", "must be positive");
  if (c.n_layer == 0 || c.n_layer > 4096) r.fail(c.arch + ".block_count", "must be in 1..4096");
  if (c.n_head == 0 || c.n_head > 4096) r.fail(c.arch + ".attention.head_count", "must be in 1..4096");
  if (c.n_head_kv == 0 || c.n_head % c.n_head_kv != 0) {
    r.fail(c.arch + ".attention.head_count_kv", "must divide attention.head_count (" + std::to_string(c.n_head) + ")");
  }
  const uint32_t default_head = c.n_embd / c.n_head;
  c.n_embd_head_k = r.u32("attention.key_length", default_head);
  c.n_embd_head_v = r.u32("attention.value_length", default_head);
  c.rms_eps = r.f32("attention.layer_norm_rms_epsilon", 1e-6f);
  if (!(c.rms_eps > 0)) r.fail(c.arch + ".attention.layer_norm_rms_epsilon", "must be positive");
  c.n_ff = r.u32("feed_forward_length", 0);

  c.n_expert = r.u32("expert_count", 0);
  c.n_expert_used = r.u32("expert_used_count", 0);
  c.n_expert_shared = r.u32("expert_shared_count", 0);
  c.n_ff_exp = r.u32("expert_feed_forward_length", 0);
  c.n_ff_shexp = r.u32("expert_shared_feed_forward_length", 0);
  c.n_layer_dense_lead = r.u32("leading_dense_block_count", 0);
  if (c.n_expert == 0) r.fail(c.arch + ".expert_count", "missing or 0: MoePack runs Mixture-of-Experts models");
  if (c.n_expert_used == 0 || c.n_expert_used > c.n_expert) {
    r.fail(c.arch + ".expert_used_count", "top-k " + std::to_string(c.n_expert_used) + " must be in 1.." +
                                               std::to_string(c.n_expert));
  }
  if (c.n_layer_dense_lead >= c.n_layer) r.fail(c.arch + ".leading_dense_block_count", "leaves no MoE layer");
  const uint32_t gating = r.u32("expert_gating_func", 0);
  // llama.cpp: deepseek2 files written before the key existed used softmax; qwen3moe and
  // llama always use softmax.
  if (gating == 0 || gating == 1) {
    c.gating = ExpertGating::Softmax;
  } else if (gating == 2) {
    c.gating = ExpertGating::Sigmoid;
  } else if (gating == 4 && c.arch == "deepseek4") {
    c.gating = ExpertGating::SqrtSoftplus;
  } else {
    r.fail(c.arch + ".expert_gating_func", "unknown gating function " + std::to_string(gating));
  }
  c.expert_weights_scale = r.f32("expert_weights_scale", 0.0f);
  if (c.expert_weights_scale == 0.0f) c.expert_weights_scale = 1.0f;
  c.n_expert_groups = r.u32("expert_group_count", 0);
  c.n_group_used = r.u32("expert_group_used_count", 0);
  if (c.n_expert_groups > 1) {
    if (c.n_expert % c.n_expert_groups != 0) r.fail(c.arch + ".expert_group_count", "must divide expert_count");
    if (c.n_group_used == 0 || c.n_group_used > c.n_expert_groups) {
      r.fail(c.arch + ".expert_group_used_count", "must be in 1..expert_group_count");
    }
    if (c.n_group_used * (c.n_expert / c.n_expert_groups) < c.n_expert_used) {
      r.fail(c.arch + ".expert_group_used_count", "selected groups hold fewer experts than top-k");
    }
  }
  // qwen3moe and Mixtral-style llama renormalise the top-k weights in llama.cpp regardless of
  // metadata (llm_build_qwen3moe / llm_build_llama pass norm_w = true); deepseek2 reads the key.
  // deepseek4 reads it too; kimi-linear always renormalises (ARCH_KIMI_LINEAR.md §2).
  c.expert_weights_norm =
      (c.arch == "deepseek2" || c.arch == "deepseek4") ? r.flag("expert_weights_norm", false) : true;
  if (c.arch == "deepseek4" && c.gating != ExpertGating::SqrtSoftplus) {
    r.fail(c.arch + ".expert_gating_func", "deepseek4 needs gating function 4 (sqrt-softplus)");
  }
  if (c.arch == "deepseek4") read_deepseek4(r, c);
  if (c.arch == "kimi-linear") read_kimi_linear(r, c);

  if (c.arch == "deepseek2" || c.arch == "kimi-linear") {
    c.q_lora_rank = r.u32("attention.q_lora_rank", 0);
    c.kv_lora_rank = r.u32("attention.kv_lora_rank");
    c.n_embd_head_k_mla = r.u32("attention.key_length_mla", 0);
    c.n_embd_head_v_mla = r.u32("attention.value_length_mla", 0);
    if (c.n_embd_head_k_mla == 0 || c.n_embd_head_v_mla == 0) {
      r.fail(c.arch + ".attention.key_length_mla",
             "missing: only the absorbed MLA layout (attn_k_b / attn_v_b) is supported; reconvert with a current "
             "llama.cpp");
    }
  }

  c.rope_style = (c.arch == "qwen3moe") ? RopeStyle::Neox : RopeStyle::Norm;
  const uint32_t head_k = (c.arch == "deepseek2" || c.arch == "kimi-linear") ? c.n_embd_head_k_mla : c.n_embd_head_k;
  c.n_rot = r.u32("rope.dimension_count", head_k);
  if (c.n_rot % 2 != 0 || c.n_rot > head_k) r.fail(c.arch + ".rope.dimension_count", "must be even and <= head size");
  c.rope_freq_base = r.f32("rope.freq_base", 10000.0f);
  // theta_i = pos * base^(-2i/n_rot) (RoFormer): a base <= 0 gives NaN or infinite angles.
  if (!(c.rope_freq_base > 0.0f))
    r.fail(c.arch + ".rope.freq_base", "must be positive, found " + std::to_string(c.rope_freq_base));
  const auto scaling = g.get_string(c.arch + ".rope.scaling.type");
  float factor = r.f32("rope.scaling.factor", 0.0f);
  if (scaling && *scaling != "none" && factor > 0.0f) c.rope_freq_scale = 1.0f / factor;
  c.rope_yarn = scaling && *scaling == "yarn";
  c.rope_n_ctx_orig = r.u32("rope.scaling.original_context_length", c.n_ctx_train);
  c.yarn_ext_factor = c.rope_yarn ? 1.0f : 0.0f;
  c.yarn_beta_fast = r.f32("rope.scaling.yarn_beta_fast", 32.0f);
  c.yarn_beta_slow = r.f32("rope.scaling.yarn_beta_slow", 1.0f);
  c.yarn_log_mul = r.f32("rope.scaling.yarn_log_multiplier", 0.0f);
  c.yarn_attn_factor = r.f32("rope.scaling.attn_factor", 1.0f);

  // Vocabulary size: the key if present, else the tokenizer's token list.
  if (const auto v = g.get_uint(c.arch + ".vocab_size")) {
    c.n_vocab = static_cast<uint32_t>(*v);
  } else if (const GgufArray* toks = g.get_array("tokenizer.ggml.tokens")) {
    c.n_vocab = static_cast<uint32_t>(toks->count);
  }
  c.tied_embeddings = g.find_tensor("output.weight") == nullptr;
  return c;
}

}  // namespace moepack
