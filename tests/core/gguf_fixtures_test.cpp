// The GGUF reader and summarize() on every model under ../shared/fixtures and ../shared/models.
//
// Oracles (never the reader's own output):
//  - `*.dequant.json` written by ggml itself next to the fixtures: every tensor's type, ne,
//    nbytes and absolute file_offset, the alignment and the data section offset (one file per
//    shard for the split set);
//  - the hyperparameters each fixture's README states, copied here by hand;
//  - bytes per routed expert and role, computed by hand from ggml's block sizes
//    (e.g. q4_K: 256 elements in 144 bytes, so a 256 x 256 expert matrix is 256 x 144 = 36864 B).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gguf_model.h"
#include "core/model_summary.h"

namespace moepack {
namespace {

using nlohmann::json;

const std::string kShared = MOEPACK_SHARED_DIR;

std::string shared(const std::string& rel) { return kShared + "/" + rel; }

json load_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return json::parse(in);
}

// ggml-common.h block sizes, typed in by hand: {elements per block, bytes per block}.
std::pair<uint64_t, uint64_t> hand_block(const std::string& type) {
  static const std::map<std::string, std::pair<uint64_t, uint64_t>> t = {
      {"f32", {1, 4}},       {"f16", {1, 2}},       {"i32", {1, 4}},       {"q4_0", {32, 18}},
      {"q5_0", {32, 22}},    {"q8_0", {32, 34}},    {"q2_K", {256, 84}},   {"q3_K", {256, 110}},
      {"q4_K", {256, 144}},  {"q5_K", {256, 176}},  {"q6_K", {256, 210}},  {"mxfp4", {32, 17}},
  };
  auto it = t.find(type);
  if (it == t.end()) throw std::runtime_error("no hand block size for " + type);
  return it->second;
}

uint64_t hand_nbytes(const std::string& type, const std::array<uint64_t, 4>& ne) {
  const auto [blk, size] = hand_block(type);
  return ne[0] / blk * size * ne[1] * ne[2] * ne[3];
}

// Hand-computed bytes of one 256 x 256 expert matrix.
constexpr uint64_t kQ4K_256x256 = 256 * 144;         // 36864
constexpr uint64_t kQ6K_256x256 = 256 * 210;         // 53760
constexpr uint64_t kQ2K_256x256 = 256 * 84;          // 21504
constexpr uint64_t kQ3K_256x256 = 256 * 110;         // 28160
constexpr uint64_t kMXFP4_256x256 = 256 * (8 * 17);  // 34816

struct RoleExpect {
  const char* type;
  uint64_t bytes;
};
struct LayerExpect {
  uint32_t block;
  uint32_t n_experts;
  RoleExpect gate, up, down;
};

struct ModelCase {
  std::string label;
  std::string file;                  // relative to ../shared (any shard for a split set)
  std::vector<std::string> dequant;  // per shard, relative to ../shared; empty: none shipped
  std::string arch;
  std::vector<std::pair<std::string, json>> hparams;  // "<arch>." stripped
  std::string tok_model;
  std::string tok_pre;
  uint64_t vocab = 0;
  std::optional<int64_t> bos, eos;
  std::optional<uint64_t> experts, used, shared_experts;
  std::vector<LayerExpect> moe;       // empty: check only n_experts/roles generically
  std::vector<uint32_t> moe_blocks;   // blocks with routed experts
  uint64_t tensor_count = 0;          // 0: not stated
  std::map<std::string, uint64_t> tensors_by_type;  // stated counts
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.label; }

// ---- hand-copied hyperparameters (see each README) ----

std::vector<std::pair<std::string, json>> deepseek2_tiny_hparams() {
  // fixtures/README.md, "deepseek2-tiny".
  return {{"block_count", 4},
          {"embedding_length", 256},
          {"feed_forward_length", 512},
          {"leading_dense_block_count", 1},
          {"attention.head_count", 4},
          {"attention.head_count_kv", 1},
          {"attention.q_lora_rank", 256},
          {"attention.kv_lora_rank", 256},
          {"rope.dimension_count", 32},
          {"attention.key_length", 288},
          {"attention.value_length", 256},
          {"attention.key_length_mla", 96},
          {"attention.value_length_mla", 64},
          {"expert_count", 16},
          {"expert_used_count", 4},
          {"expert_feed_forward_length", 256},
          {"expert_shared_count", 1},
          {"expert_gating_func", 2},
          {"expert_group_count", 4},
          {"expert_group_used_count", 2},
          {"expert_weights_norm", true},
          {"expert_weights_scale", 2.5},
          {"rope.freq_base", 10000.0},
          {"rope.scaling.type", "yarn"},
          {"rope.scaling.factor", 40.0},
          {"rope.scaling.original_context_length", 4096},
          {"rope.scaling.yarn_beta_fast", 32.0},
          {"rope.scaling.yarn_beta_slow", 1.0},
          {"rope.scaling.yarn_log_multiplier", 0.1},
          {"context_length", 163840},
          {"attention.layer_norm_rms_epsilon", 1e-6}};
}

std::vector<std::pair<std::string, json>> deepseek4_tiny_hparams() {
  // fixtures/deepseek4-tiny/README.md, "Hyper-parameters".
  return {{"block_count", 4},
          {"attention.compress_ratios", json::array({0, 0, 4, 128})},
          {"hash_layer_count", 2},
          {"embedding_length", 256},
          {"attention.head_count", 8},
          {"attention.key_length", 128},
          {"rope.dimension_count", 64},
          {"attention.q_lora_rank", 256},
          {"attention.output_group_count", 2},
          {"attention.output_lora_rank", 128},
          {"attention.sliding_window", 64},
          {"attention.indexer.head_count", 32},
          {"attention.indexer.key_length", 64},
          {"attention.indexer.top_k", 16},
          {"expert_count", 16},
          {"expert_used_count", 6},
          {"expert_shared_count", 1},
          {"expert_feed_forward_length", 256},
          {"expert_gating_func", 4},
          {"expert_weights_norm", true},
          {"expert_weights_scale", 1.5},
          {"swiglu_clamp_exp", json::array({1.0, 1.0, 1.0, 1.0})},
          {"swiglu_clamp_shexp", json::array({1.5, 1.5, 1.5, 1.5})},
          {"hyper_connection.count", 4},
          {"hyper_connection.sinkhorn_iterations", 20},
          {"hyper_connection.epsilon", 1e-6},
          {"rope.freq_base", 10000.0},
          {"attention.compress_rope_freq_base", 160000.0},
          {"rope.scaling.type", "yarn"},
          {"rope.scaling.factor", 4.0},
          {"rope.scaling.original_context_length", 1024},
          {"context_length", 4096},
          {"attention.layer_norm_rms_epsilon", 1e-6},
          {"vocab_size", 6144}};
}

std::vector<std::pair<std::string, json>> kimi_linear_tiny_hparams() {
  // fixtures/kimi-linear-tiny/README.md, "Hyper-parameters".
  return {{"block_count", 4},
          {"attention.head_count_kv", json::array({0, 0, 0, 1})},
          {"embedding_length", 256},
          {"attention.head_count", 4},
          {"kda.head_dim", 128},
          {"ssm.conv_kernel", 4},
          {"attention.kv_lora_rank", 512},
          {"rope.dimension_count", 64},
          {"attention.key_length", 576},
          {"attention.value_length", 512},
          {"attention.key_length_mla", 192},
          {"attention.value_length_mla", 128},
          {"leading_dense_block_count", 1},
          {"feed_forward_length", 512},
          {"expert_count", 32},
          {"expert_used_count", 8},
          {"expert_shared_count", 1},
          {"expert_feed_forward_length", 256},
          {"expert_gating_func", 2},
          {"expert_weights_scale", 2.446},
          {"attention.layer_norm_rms_epsilon", 1e-5},
          {"context_length", 4096},
          {"vocab_size", 6144}};
}

std::vector<std::pair<std::string, json>> wordnet_hparams() {
  // models/tiny-dsv3-wordnet/README.md, "Architecture".
  return {{"vocab_size", 8192},
          {"embedding_length", 256},
          {"block_count", 6},
          {"feed_forward_length", 768},
          {"leading_dense_block_count", 1},
          {"attention.head_count", 4},
          {"attention.q_lora_rank", 128},
          {"attention.kv_lora_rank", 64},
          {"attention.key_length_mla", 64},
          {"attention.value_length_mla", 32},
          {"attention.head_count_kv", 1},
          {"rope.freq_base", 10000.0},
          {"context_length", 2048},
          {"expert_count", 32},
          {"expert_feed_forward_length", 256},
          {"expert_used_count", 4},
          {"expert_shared_count", 1},
          {"expert_group_count", 4},
          {"expert_group_used_count", 2},
          {"expert_gating_func", 2},
          {"expert_weights_norm", true},
          {"expert_weights_scale", 2.5},
          {"attention.layer_norm_rms_epsilon", 1e-6}};
}

std::vector<ModelCase> cases() {
  std::vector<ModelCase> v;
  const std::string d2 = "fixtures/deepseek2-tiny/";
  {
    ModelCase c;
    c.label = "deepseek2_Q4_K_M";
    c.file = d2 + "deepseek2-tiny-Q4_K_M.gguf";
    c.dequant = {d2 + "deepseek2-tiny-Q4_K_M.dequant.json"};
    c.arch = "deepseek2";
    c.hparams = deepseek2_tiny_hparams();
    c.tok_model = "gpt2";  // BPE
    c.tok_pre = "deepseek-coder";
    c.vocab = 32256;
    c.bos = 32013;
    c.eos = 32014;
    c.experts = 16;
    c.used = 4;
    c.shared_experts = 1;
    // README: ffn_gate/up_exps q4_K, ffn_down_exps q4_K / q6_K by layer (blk 1 / blk 2, 3).
    c.moe = {{1, 16, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}},
             {2, 16, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}, {"q6_K", kQ6K_256x256}},
             {3, 16, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}, {"q6_K", kQ6K_256x256}}};
    c.moe_blocks = {1, 2, 3};
    v.push_back(c);
    // The Q2_K split, opened through each of its shards.
    for (int k = 1; k <= 3; ++k) {
      ModelCase s = c;
      s.label = "deepseek2_Q2_K_split_via_shard" + std::to_string(k);
      s.file = d2 + "deepseek2-tiny-Q2_K-0000" + std::to_string(k) + "-of-00003.gguf";
      s.dequant = {d2 + "deepseek2-tiny-Q2_K-00001-of-00003.dequant.json",
                   d2 + "deepseek2-tiny-Q2_K-00002-of-00003.dequant.json",
                   d2 + "deepseek2-tiny-Q2_K-00003-of-00003.dequant.json"};
      // README: gate/up_exps q2_K, down_exps q3_K; 3 shards of 23 tensors.
      s.moe = {{1, 16, {"q2_K", kQ2K_256x256}, {"q2_K", kQ2K_256x256}, {"q3_K", kQ3K_256x256}},
               {2, 16, {"q2_K", kQ2K_256x256}, {"q2_K", kQ2K_256x256}, {"q3_K", kQ3K_256x256}},
               {3, 16, {"q2_K", kQ2K_256x256}, {"q2_K", kQ2K_256x256}, {"q3_K", kQ3K_256x256}}};
      s.tensor_count = 69;
      v.push_back(s);
    }
  }
  {
    ModelCase c;
    c.label = "qwen3moe_MXFP4_MOE";
    c.file = "fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf";
    c.dequant = {"fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.dequant.json"};
    c.arch = "qwen3moe";
    c.hparams = {{"block_count", 4},
                 {"embedding_length", 256},
                 {"attention.head_count", 8},
                 {"attention.head_count_kv", 2},
                 {"attention.key_length", 64},
                 {"attention.value_length", 64},
                 {"rope.freq_base", 1e6},
                 {"attention.layer_norm_rms_epsilon", 1e-6},
                 {"context_length", 40960},
                 {"expert_count", 8},
                 {"expert_used_count", 2},
                 {"expert_feed_forward_length", 256}};
    c.tok_model = "gpt2";
    c.tok_pre = "gpt-2";
    c.vocab = 50257;
    c.experts = 8;
    c.used = 2;
    // no shared expert: expert_shared_count absent
    for (uint32_t b = 0; b < 4; ++b) {
      c.moe.push_back({b, 8, {"mxfp4", kMXFP4_256x256}, {"mxfp4", kMXFP4_256x256}, {"mxfp4", kMXFP4_256x256}});
    }
    c.moe_blocks = {0, 1, 2, 3};
    v.push_back(c);
  }
  {
    ModelCase c;
    c.label = "llama_moe_Q4_K_M";
    c.file = "fixtures/llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf";
    c.dequant = {"fixtures/llama-moe-tiny/llama-moe-tiny-Q4_K_M.dequant.json"};
    c.arch = "llama";
    c.hparams = {{"block_count", 4},
                 {"embedding_length", 256},
                 {"attention.head_count", 4},
                 {"attention.head_count_kv", 2},
                 {"rope.freq_base", 1e6},
                 {"attention.layer_norm_rms_epsilon", 1e-5},
                 {"context_length", 32768},
                 {"expert_count", 8},
                 {"expert_used_count", 2},
                 {"feed_forward_length", 256}};
    c.tok_model = "llama";  // SentencePiece
    c.vocab = 32000;
    c.bos = 1;
    c.eos = 2;
    c.experts = 8;
    c.used = 2;
    // README: ffn_gate/up_exps q4_K, ffn_down_exps q4_K/q6_K (blk 0, 1 / blk 2, 3).
    c.moe = {{0, 8, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}},
             {1, 8, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}},
             {2, 8, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}, {"q6_K", kQ6K_256x256}},
             {3, 8, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256}, {"q6_K", kQ6K_256x256}}};
    c.moe_blocks = {0, 1, 2, 3};
    v.push_back(c);
  }
  const std::string d4 = "fixtures/deepseek4-tiny/";
  for (const char* q : {"Q4_K_M", "Q2_K", "MXFP4_MOE"}) {
    ModelCase c;
    c.label = std::string("deepseek4_") + q;
    c.file = d4 + "deepseek4-tiny-" + q + ".gguf";
    c.arch = "deepseek4";
    c.hparams = deepseek4_tiny_hparams();
    c.tok_model = "gpt2";
    c.tok_pre = "deepseek-llm";
    c.vocab = 6144;
    c.bos = 6129;
    c.eos = 6130;
    c.experts = 16;
    c.used = 6;
    c.shared_experts = 1;
    c.moe_blocks = {0, 1, 2, 3};
    // README "Tensor types": gate/up_exps q4_K | q2_K | mxfp4; down_exps (blk 0,1 / 2,3)
    // q4_K / q6_K | q3_K | mxfp4.
    for (uint32_t b = 0; b < 4; ++b) {
      if (std::string(q) == "Q4_K_M") {
        c.moe.push_back({b, 16, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256},
                         b < 2 ? RoleExpect{"q4_K", kQ4K_256x256} : RoleExpect{"q6_K", kQ6K_256x256}});
      } else if (std::string(q) == "Q2_K") {
        c.moe.push_back({b, 16, {"q2_K", kQ2K_256x256}, {"q2_K", kQ2K_256x256}, {"q3_K", kQ3K_256x256}});
      } else {
        c.moe.push_back({b, 16, {"mxfp4", kMXFP4_256x256}, {"mxfp4", kMXFP4_256x256}, {"mxfp4", kMXFP4_256x256}});
      }
    }
    v.push_back(c);
  }
  const std::string dk = "fixtures/kimi-linear-tiny/";
  for (const char* q : {"Q4_K_M", "Q2_K"}) {
    ModelCase c;
    c.label = std::string("kimi_linear_") + q;
    c.file = dk + "kimi-linear-tiny-" + q + ".gguf";
    c.arch = "kimi-linear";
    c.hparams = kimi_linear_tiny_hparams();
    c.tok_model = "gpt2";
    c.tok_pre = "deepseek-llm";
    c.vocab = 6144;
    c.bos = 6129;
    c.eos = 6130;
    c.experts = 32;
    c.used = 8;
    c.shared_experts = 1;
    c.moe_blocks = {1, 2, 3};
    // README: gate/up_exps q4_K | q2_K; down_exps (blk 1 / 2,3) q4_K / q6_K | q3_K.
    for (uint32_t b = 1; b < 4; ++b) {
      if (std::string(q) == "Q4_K_M") {
        c.moe.push_back({b, 32, {"q4_K", kQ4K_256x256}, {"q4_K", kQ4K_256x256},
                         b < 2 ? RoleExpect{"q4_K", kQ4K_256x256} : RoleExpect{"q6_K", kQ6K_256x256}});
      } else {
        c.moe.push_back({b, 32, {"q2_K", kQ2K_256x256}, {"q2_K", kQ2K_256x256}, {"q3_K", kQ3K_256x256}});
      }
    }
    v.push_back(c);
  }
  const std::string dw = "models/tiny-dsv3-wordnet/";
  for (const char* q : {"Q4_K_M", "Q2_K"}) {
    ModelCase c;
    c.label = std::string("dsv3_wordnet_") + q;
    c.file = dw + "tiny-dsv3-wordnet-" + q + ".gguf";
    c.arch = "deepseek2";
    c.hparams = wordnet_hparams();
    c.tok_model = "gpt2";
    c.tok_pre = "gpt-2";
    c.vocab = 8192;
    c.bos = 0;
    c.eos = 2;
    c.experts = 32;
    c.used = 4;
    c.shared_experts = 1;
    c.moe_blocks = {1, 2, 3, 4, 5};
    c.tensor_count = 105;
    // README: Q4_K_M = 41 q4_K, 24 q5_0, 5 q6_K, 35 f32; Q2_K = 34 q2_K, 11 q3_K, 24 q4_0,
    // 1 q6_K, 35 f32.
    if (std::string(q) == "Q4_K_M") {
      c.tensors_by_type = {{"q4_K", 41}, {"q5_0", 24}, {"q6_K", 5}, {"f32", 35}};
    } else {
      c.tensors_by_type = {{"q2_K", 34}, {"q3_K", 11}, {"q4_0", 24}, {"q6_K", 1}, {"f32", 35}};
    }
    v.push_back(c);
  }
  return v;
}

// Compares a json hparam with the README value: numbers within 1e-6 relative (f32 storage).
::testing::AssertionResult HparamEquals(const std::string& key, const json& got, const json& want) {
  if (want.is_number() && got.is_number()) {
    const double g = got.get<double>();
    const double w = want.get<double>();
    if (std::fabs(g - w) <= 1e-6 * std::max(1.0, std::fabs(w)) || std::fabs(g - w) <= 1e-6 * std::fabs(w)) {
      return ::testing::AssertionSuccess();
    }
  } else if (want.is_array() && got.is_array() && want.size() == got.size()) {
    for (size_t k = 0; k < want.size(); ++k) {
      auto r = HparamEquals(key + "[" + std::to_string(k) + "]", got[k], want[k]);
      if (!r) return r;
    }
    return ::testing::AssertionSuccess();
  } else if (got == want) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << key << ": got " << got.dump() << ", README says " << want.dump();
}

class Fixture : public ::testing::TestWithParam<ModelCase> {};

TEST_P(Fixture, TensorsMatchGgmlDequantReference) {
  const ModelCase& c = GetParam();
  if (c.dequant.empty()) {
    // No reference shipped: every tensor's nbytes still matches the hand block table and the
    // tensors lie inside the file, in order, without overlap.
    const GgufModel m = GgufModel::open(shared(c.file));
    for (const GgufTensorRef& r : m.tensors()) {
      const GgufTensorInfo& t = *r.info;
      EXPECT_EQ(t.nbytes, hand_nbytes(std::string(ggml_type_name(t.type)), t.ne)) << t.name;
      EXPECT_LE(t.file_offset + t.nbytes, m.shards()[r.shard].file_size()) << t.name;
      EXPECT_EQ(t.file_offset % 32, 0u) << t.name;
    }
    return;
  }
  const GgufModel m = GgufModel::open(shared(c.file));
  ASSERT_EQ(m.shards().size(), c.dequant.size());
  size_t total = 0;
  for (size_t s = 0; s < c.dequant.size(); ++s) {
    const json dq = load_json(shared(c.dequant[s]));
    const GgufFile& f = m.shards()[s];
    EXPECT_EQ(std::filesystem::path(f.path()).filename().string(), dq["file"].get<std::string>());
    EXPECT_EQ(f.alignment(), dq["alignment"].get<uint64_t>());
    EXPECT_EQ(f.data_start(), dq["data_offset"].get<uint64_t>());
    ASSERT_EQ(f.tensors().size(), dq["tensors"].size());
    total += dq["tensors"].size();
    for (const json& jt : dq["tensors"]) {
      const std::string name = jt["name"].get<std::string>();
      SCOPED_TRACE(name);
      const GgufTensorRef* r = m.find_tensor(name);
      ASSERT_NE(r, nullptr);
      EXPECT_EQ(r->shard, s);
      const GgufTensorInfo& t = *r->info;
      EXPECT_EQ(std::string(ggml_type_name(t.type)), jt["type"].get<std::string>());
      for (size_t d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], jt["ne"][d].get<uint64_t>()) << d;
      EXPECT_EQ(t.nbytes, jt["nbytes"].get<uint64_t>());
      EXPECT_EQ(t.file_offset, jt["file_offset"].get<uint64_t>());
      // ggml's nbytes agrees with the hand block table too.
      EXPECT_EQ(jt["nbytes"].get<uint64_t>(), hand_nbytes(jt["type"].get<std::string>(), t.ne));
    }
  }
  EXPECT_EQ(m.tensors().size(), total);
}

TEST_P(Fixture, HyperparametersMatchReadme) {
  const ModelCase& c = GetParam();
  const GgufModel m = GgufModel::open(shared(c.file));
  const ModelSummary s = summarize(m);
  EXPECT_EQ(s.architecture, c.arch);
  EXPECT_EQ(s.gguf_version, 3u);
  for (const auto& [key, want] : c.hparams) {
    auto it = s.hparams_text.find(key);
    if (it == s.hparams_text.end()) {
      ADD_FAILURE() << "hparam " << key << " missing";
      continue;
    }
    EXPECT_TRUE(HparamEquals(key, json::parse(it->second), want));
  }
  EXPECT_EQ(s.tokenizer_model, c.tok_model);
  if (!c.tok_pre.empty()) {
    EXPECT_EQ(s.tokenizer_pre, c.tok_pre);
  }
  EXPECT_EQ(s.vocab_size, c.vocab);
  if (c.bos) {
    EXPECT_EQ(s.bos_id, c.bos);
  }
  if (c.eos) {
    EXPECT_EQ(s.eos_id, c.eos);
  }
  EXPECT_TRUE(s.has_chat_template);  // every README names the chat template it ships
  EXPECT_EQ(s.expert_count, c.experts);
  EXPECT_EQ(s.expert_used_count, c.used);
  EXPECT_EQ(s.expert_shared_count, c.shared_experts);
  if (c.tensor_count != 0) {
    EXPECT_EQ(s.tensor_count, c.tensor_count);
  }
  for (const auto& [type, n] : c.tensors_by_type) {
    auto it = s.by_type.find(type);
    ASSERT_NE(it, s.by_type.end()) << type;
    EXPECT_EQ(it->second.tensors, n) << type;
  }
  if (!c.tensors_by_type.empty()) {
    EXPECT_EQ(s.by_type.size(), c.tensors_by_type.size());
  }
  // The split set: all three shards, whichever was named.
  EXPECT_EQ(s.files.size(), c.dequant.empty() ? 1u : c.dequant.size());
}

TEST_P(Fixture, MoeStructure) {
  const ModelCase& c = GetParam();
  const GgufModel m = GgufModel::open(shared(c.file));
  const ModelSummary s = summarize(m);
  std::vector<uint32_t> blocks;
  for (const MoeLayerInfo& L : s.moe_layers) blocks.push_back(L.block);
  EXPECT_EQ(blocks, c.moe_blocks);
  uint64_t routed = 0;
  for (const MoeLayerInfo& L : s.moe_layers) {
    SCOPED_TRACE("blk." + std::to_string(L.block));
    EXPECT_EQ(L.n_experts, *c.experts);
    ASSERT_EQ(L.roles.size(), 3u);  // gate, up, down (router, bias, shared experts excluded)
    EXPECT_EQ(L.roles[0].role, "gate");
    EXPECT_EQ(L.roles[1].role, "up");
    EXPECT_EQ(L.roles[2].role, "down");
    uint64_t sum = 0;
    for (const ExpertRole& r : L.roles) {
      EXPECT_TRUE(r.stacked);
      EXPECT_EQ(r.tensor, "blk." + std::to_string(L.block) + ".ffn_" + r.role + "_exps.weight");
      // Every expert matrix in these models is 256 x 256 (n_embd = expert FFN width = 256).
      EXPECT_EQ(r.ne[0], 256u);
      EXPECT_EQ(r.ne[1], 256u);
      EXPECT_EQ(r.ne[2], *c.experts);
      EXPECT_EQ(r.bytes_per_expert, 256 * hand_block(std::string(ggml_type_name(r.type))).second *
                                        256 / hand_block(std::string(ggml_type_name(r.type))).first);
      sum += r.bytes_per_expert;
    }
    EXPECT_EQ(L.expert_bytes, sum);
    routed += sum * L.n_experts;
  }
  EXPECT_EQ(s.routed_expert_bytes, routed);
  if (c.moe.empty()) return;
  ASSERT_EQ(s.moe_layers.size(), c.moe.size());
  uint64_t routed_hand = 0;
  for (size_t k = 0; k < c.moe.size(); ++k) {
    const LayerExpect& e = c.moe[k];
    const MoeLayerInfo& L = s.moe_layers[k];
    SCOPED_TRACE("blk." + std::to_string(e.block));
    EXPECT_EQ(L.block, e.block);
    EXPECT_EQ(L.n_experts, e.n_experts);
    const RoleExpect* want[3] = {&e.gate, &e.up, &e.down};
    for (size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(std::string(ggml_type_name(L.roles[r].type)), want[r]->type) << L.roles[r].role;
      EXPECT_EQ(L.roles[r].bytes_per_expert, want[r]->bytes) << L.roles[r].role;
    }
    EXPECT_EQ(L.expert_bytes, e.gate.bytes + e.up.bytes + e.down.bytes);
    routed_hand += (e.gate.bytes + e.up.bytes + e.down.bytes) * e.n_experts;
  }
  EXPECT_EQ(s.routed_expert_bytes, routed_hand);
}

INSTANTIATE_TEST_SUITE_P(AllModels, Fixture, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& i) { return i.param.label; });

// Every *.gguf under ../shared/fixtures and ../shared/models is covered above.
TEST(FixtureSet, EveryGgufIsCovered) {
  std::set<std::string> covered;
  for (const ModelCase& c : cases()) covered.insert(std::filesystem::path(shared(c.file)).lexically_normal().string());
  size_t seen = 0;
  for (const char* dir : {"fixtures", "models"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(shared(dir))) {
      if (e.path().extension() != ".gguf") continue;
      ++seen;
      EXPECT_TRUE(covered.count(e.path().lexically_normal().string())) << e.path() << " has no test case";
    }
  }
  // fixtures: deepseek2 Q4_K_M + 3 Q2_K shards, qwen3moe, llama-moe, 3 deepseek4, 2 kimi-linear;
  // models: 2 tiny-dsv3-wordnet.
  EXPECT_EQ(seen, 13u);
}

// The split set's own split.* keys, read through the set (llama-gguf-split wrote them).
TEST(FixtureSet, SplitValuesFromTheShards) {
  const std::string d2 = shared("fixtures/deepseek2-tiny/");
  const GgufModel m = GgufModel::open(d2 + "deepseek2-tiny-Q2_K-00002-of-00003.gguf");
  ASSERT_EQ(m.shards().size(), 3u);
  for (uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(m.shards()[k].path(), d2 + "deepseek2-tiny-Q2_K-0000" + std::to_string(k + 1) + "-of-00003.gguf");
    EXPECT_EQ(m.shards()[k].get_uint("split.no"), k);
    EXPECT_EQ(m.shards()[k].get_uint("split.count"), 3u);
    EXPECT_EQ(m.shards()[k].get_uint("split.tensors.count"), 69u);
    EXPECT_EQ(m.shards()[k].tensors().size(), 23u);  // --split-max-tensors 23
  }
  // Shard 1 holds all metadata and token_embd (README).
  EXPECT_EQ(m.find_tensor("token_embd.weight")->shard, 0u);
  EXPECT_EQ(m.primary().get_string("general.architecture"), "deepseek2");
  EXPECT_FALSE(m.shards()[1].get_string("general.architecture").has_value());
}

}  // namespace
}  // namespace moepack
