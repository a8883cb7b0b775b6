// Context memory per token / per sequence (core/context_memory.h) on the two new architectures'
// fixtures, against values worked by hand from their READMEs and the specs' §5 formulas.
#include "core/context_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/gguf.h"
#include "core/model_config.h"

namespace moepack {
namespace {

const std::string kFixtures = std::string(MOEPACK_SHARED_DIR) + "/fixtures/";

ModelConfig config_of(const std::string& file) { return read_model_config(GgufFile::open(kFixtures + file)); }

// deepseek4-tiny: ratios [0, 0, 4, 128], D = 128, D_I = 64, n_swa = 64, 4 blocks.
//   per token: 1·(128 + 64)·2/4 + 1·128·2/128 = 96 + 2 = 98 B
//   fixed: window 4·64·128·2 = 65,536; CSA state (8·256 + 8·128)·2·4 = 24,576;
//          HCA state 128·128·2·4 = 131,072  → 221,184 B
TEST(ContextMemory, Deepseek4Tiny) {
  const ModelConfig c = config_of("deepseek4-tiny/deepseek4-tiny-Q2_K.gguf");
  ASSERT_EQ(c.compress_ratios, (std::vector<uint32_t>{0, 0, 4, 128}));
  EXPECT_EQ(c.n_swa, 64u);
  EXPECT_EQ(c.n_hash_layers, 2u);
  EXPECT_EQ(c.hc_count, 4u);
  EXPECT_EQ(c.hc_sinkhorn_iters, 20u);
  EXPECT_EQ(c.gating, ExpertGating::SqrtSoftplus);
  EXPECT_FLOAT_EQ(c.swiglu_clamp_exp.at(3), 1.0f);
  EXPECT_FLOAT_EQ(c.swiglu_clamp_shexp.at(3), 1.5f);
  const ContextMemory m = context_memory(c);
  EXPECT_DOUBLE_EQ(m.bytes_per_token, 98.0);
  EXPECT_EQ(m.fixed_bytes, 221184u);
  EXPECT_EQ(m.bytes_for(1000), 221184u + 98000u);
  EXPECT_EQ(context_memory_json(c, m)["bytes_at"]["4096"].get<uint64_t>(), 221184u + 98u * 4096u);
}

// kimi-linear-tiny: layers KDA, KDA, KDA, MLA; r = 512, n_p = 64; H = 4, d = 128, w = 4.
//   per token: 1·(512 + 64)·2 = 1,152 B; fixed: 3·(3·3·512 + 4·128²)·4 = 3·280,576 B (README §5)
TEST(ContextMemory, KimiLinearTiny) {
  const ModelConfig c = config_of("kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf");
  ASSERT_EQ(c.head_count_kv_per_layer, (std::vector<uint32_t>{0, 0, 0, 1}));
  EXPECT_TRUE(c.is_kda_layer(0));
  EXPECT_FALSE(c.is_kda_layer(3));
  const ContextMemory m = context_memory(c);
  EXPECT_DOUBLE_EQ(m.bytes_per_token, 1152.0);
  EXPECT_EQ(m.fixed_bytes, 3u * 280576u);
}

// deepseek2-tiny (absorbed MLA): n_layer · (kv_lora_rank + n_rot) · 2 B per token, nothing fixed.
TEST(ContextMemory, Deepseek2FromItsConfig) {
  const ModelConfig c = config_of("deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf");
  const ContextMemory m = context_memory(c);
  EXPECT_DOUBLE_EQ(m.bytes_per_token, 2.0 * c.n_layer * (c.kv_lora_rank + c.n_rot));
  EXPECT_EQ(m.fixed_bytes, 0u);
  EXPECT_GT(m.bytes_per_token, 0.0);
}

// `moepack inspect`'s context lines: ascending, the trained context marked, no size above it.
// kimi-linear-tiny: 1,152 B a token + 841,728 B fixed (above).
TEST(ContextMemory, TextListsSizesUpToTheTrainedContextAscending) {
  ModelConfig c = config_of("kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf");
  const ContextMemory m = context_memory(c);
  c.n_ctx_train = 8192;
  std::string text = context_memory_text(c, m);
  const auto pos = [&](const std::string& s) { return text.find(s); };
  // (841,728 + 1,152 · 4,096) / 2^20 = 5.30 MiB; (841,728 + 1,152 · 8,192) / 2^20 = 9.80 MiB.
  EXPECT_NE(pos("  at 4096 tokens: 5.30 MiB\n"), std::string::npos) << text;
  EXPECT_NE(pos("  at 8192 tokens (trained context): 9.80 MiB\n"), std::string::npos) << text;
  EXPECT_LT(pos("at 4096 tokens"), pos("at 8192 tokens"));
  EXPECT_EQ(pos("at 32768"), std::string::npos) << text;
  c.n_ctx_train = 2048;  // below both standard sizes: only the trained context
  text = context_memory_text(c, m);
  EXPECT_NE(pos("  at 2048 tokens (trained context): 3.05 MiB\n"), std::string::npos) << text;
  EXPECT_EQ(pos("at 4096"), std::string::npos) << text;
}

// The demo model (deepseek2) with one hyperparameter's value patched in a copy: a rope base of
// -1 (every angle NaN: the run failed later blaming the weights) and a trained context of 0 are
// refused at load, naming the key and its value's byte.
TEST(ModelConfigBad, NonPositiveRopeBaseOrTrainedContextNamesTheKey) {
  const std::string demo =
      std::string(MOEPACK_SOURCE_DIR) + "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";
  std::ifstream in(demo, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const GgufFile clean = GgufFile::open(demo);
  struct Case {
    const char* key;
    uint32_t value;  // the 4 bytes written over the value (f32 or u32)
  };
  const float minus_one = -1.0f;
  uint32_t minus_one_bits = 0;
  std::memcpy(&minus_one_bits, &minus_one, 4);
  for (const Case& c :
       {Case{"deepseek2.rope.freq_base", minus_one_bits}, Case{"deepseek2.context_length", 0}}) {
    const GgufKv* kv = clean.find(c.key);
    ASSERT_NE(kv, nullptr) << c.key;
    std::string patched = bytes;
    std::memcpy(patched.data() + kv->value_offset, &c.value, 4);
    const std::string path =
        (std::filesystem::temp_directory_path() / ("moepack-config-" + std::to_string(::getpid()) + ".gguf"))
            .string();
    std::ofstream(path, std::ios::binary) << patched;
    try {
      read_model_config(GgufFile::open(path));
      ADD_FAILURE() << c.key << " accepted";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.field(), c.key);
      EXPECT_EQ(e.offset(), kv->value_offset);
      EXPECT_NE(std::string(e.what()).find("must be positive"), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace moepack
