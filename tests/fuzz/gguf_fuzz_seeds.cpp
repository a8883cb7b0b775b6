// Writes the seed corpus of gguf_fuzz into a directory: small valid GGUF files of every shape
// the reader handles (v2/v3, every value type, nested and lazy arrays, alignment, MoE-style
// tensors, split keys), a few broken ones, and, if a shared fixtures directory is given,
// truncated copies of real fixture headers.
//
// Usage: gguf_fuzz_seeds OUT_DIR [SHARED_DIR]
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tests/support/gguf_writer.h"

namespace {

using namespace moepack::test;

std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds() {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  {
    GgufWriter w;
    out.emplace_back("empty_v3", w.build());
  }
  {
    GgufWriter w;
    w.version = 2;
    w.kv("u8", TV::u8(1)).kv("i8", TV::i8(-1)).kv("u16", TV::u16(2)).kv("i16", TV::i16(-2));
    w.kv("u32", TV::u32(3)).kv("i32", TV::i32(-3)).kv("f32", TV::f32(0.5f)).kv("b", TV::boolean(true));
    w.kv("s", TV::str("text")).kv("u64", TV::u64(4)).kv("i64", TV::i64(-4)).kv("f64", TV::f64(0.25));
    w.tensor("a", kF32, {4, 2}).tensor("b", kF16, {8});
    out.emplace_back("all_types_v2", w.build());
  }
  {
    GgufWriter w;
    w.kv("nested", TV::array_of(kGgufArray, {TV::arr_u32({1, 2}), TV::arr_u32({})}));
    w.kv("deep", TV::array_of(kGgufArray, {TV::array_of(kGgufArray, {TV::arr_str({"x", "yz"})})}));
    w.kv("strs", TV::arr_str({"a", "b", ""}));
    w.kv("f32s", TV::arr_f32({1, 2, 3}));
    w.kv("i32s", TV::arr_i32({-1, 0, 1}));
    out.emplace_back("arrays", w.build());
  }
  {
    GgufWriter w;
    w.alignment = 64;
    w.kv("general.alignment", TV::u32(64));
    w.tensor("x", kQ8_0, {64, 2}).tensor("y", kQ4_0, {32}).tensor("z", kMXFP4, {64});
    out.emplace_back("aligned64", w.build());
  }
  {
    // A tiny MoE model as inspect sees one, with a token list above the fuzzer's inline limit.
    GgufWriter w;
    w.kv("general.architecture", TV::str("deepseek2"));
    w.kv("general.name", TV::str("seed"));
    w.kv("deepseek2.block_count", TV::u32(2));
    w.kv("deepseek2.expert_count", TV::u32(2));
    w.kv("deepseek2.expert_used_count", TV::u32(1));
    w.kv("deepseek2.expert_shared_count", TV::u32(1));
    w.kv("deepseek2.rope.freq_base", TV::f32(10000.0f));
    std::vector<std::string> toks;
    for (int k = 0; k < 600; ++k) toks.push_back("t" + std::to_string(k));
    w.kv("tokenizer.ggml.model", TV::str("gpt2"));
    w.kv("tokenizer.ggml.tokens", TV::arr_str(toks));
    w.kv("tokenizer.ggml.bos_token_id", TV::u32(0));
    w.tensor("token_embd.weight", kQ4_K, {256, 2});
    w.tensor("blk.1.ffn_gate_inp.weight", kF32, {256, 2});
    w.tensor("blk.1.ffn_gate_exps.weight", kQ4_K, {256, 1, 2});
    w.tensor("blk.1.ffn_up_exps.weight", kQ2_K, {256, 1, 2});
    w.tensor("blk.1.ffn_down_exps.weight", kQ6_K, {256, 1, 2});
    w.tensor("blk.0.ffn_up.0.weight", kQ8_0, {32, 1});
    out.emplace_back("moe_model", w.build());
  }
  {
    GgufWriter w;
    w.kv("split.no", TV::u16(0)).kv("split.count", TV::u16(1)).kv("split.tensors.count", TV::i32(1));
    w.tensor("t", kF32, {1});
    out.emplace_back("split_keys", w.build());
  }
  // Broken files, one per family of checks.
  {
    GgufWriter w;
    w.kv("a", TV::raw(13, {0, 0, 0, 0}));
    out.emplace_back("bad_value_type", w.build());
  }
  {
    GgufWriter w;
    w.tensor(TensorSpec("w", kQ4_K, {128}).with_data_bytes(256));
    out.emplace_back("bad_block_multiple", w.build());
  }
  {
    GgufWriter w;
    w.tensor(TensorSpec("a", kF32, {16}).with_offset(0)).tensor(TensorSpec("b", kF32, {8}).with_offset(32));
    out.emplace_back("overlap", w.build());
  }
  {
    GgufWriter w;
    w.kv("general.alignment", TV::u32(48));
    out.emplace_back("bad_alignment", w.build());
  }
  {
    GgufWriter w;
    w.kv("a", TV::array_raw(kGgufString, 1u << 30));
    out.emplace_back("huge_count", w.build());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR [SHARED_DIR]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  try {
    for (const auto& [name, bytes] : seeds()) write_file(dir + "/" + name + ".gguf", bytes);
    if (argc >= 3) {
      const std::string shared = argv[2];
      const char* fixtures[] = {"fixtures/llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf",
                                "fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00002-of-00003.gguf",
                                "fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf"};
      int k = 0;
      for (const char* f : fixtures) {
        // The header and first key/value pairs of a real file (the rest is cut off). A missing
        // fixture only costs a seed.
        try {
          write_file(dir + "/fixture" + std::to_string(k++) + ".gguf", truncate(read_file(shared + "/" + f), 4096));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "gguf_fuzz_seeds: skipping %s (%s)\n", f, e.what());
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
