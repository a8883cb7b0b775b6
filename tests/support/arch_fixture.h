// The scaffolding of the engine tests of an architecture with its own fixture directory,
// ../shared/fixtures/<arch>-tiny/ (deepseek4-tiny, kimi-linear-tiny): one parameterized fixture
// over its files, and the checks of one backend against llama.cpp's references there. Used by
// the CPU reference tests (tests/core/engine_<arch>_test.cpp) and the CUDA ones
// (tests/gpu/<arch>_test.cpp); two backends against each other: backend_parity.h.
//
// Directory layout (README in each directory):
//   <model>.gguf                           the quantized model
//   prompts/prompt<i>.txt                  the prompts, i = 0, 1, ...
//   ref/<model>.f32-dequant.json           llama.cpp in F32 on ggml-dequantized weights: n_vocab,
//                                          prompts[] {prompt, token_ids, top_logits_last_prompt_pos
//                                          {ids, values}, greedy {ids, step_top8[] {ids, values}},
//                                          full_logits_bin on one prompt}
//   ref/<model>.f32-dequant.logits.bin     that prompt's logits at every position, f32 [n][n_vocab]
//   ref/<model>.f32-dequant.routing.json   calls[] {token_ids, first_pos, layers {"<block>":
//                                          {ids, weights, selection_margin} [token]}}
//   ref/<model>.json                       the native references (llama.cpp quantizing activations)
//
// The expect_* functions report through gtest (EXPECT_* / ADD_FAILURE, naming the prompt, step
// and token id); what they return is for the caller's own thresholds (each README's). A reference
// file that cannot be read throws std::runtime_error naming it (a test failure).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/engine_settings.h"
#include "tests/support/backend_parity.h"

namespace moepack {
class ModelSource;
}

namespace moepack::test {

struct ArchCase {
  const char* name;   // the test name's suffix (the quantization)
  const char* model;  // file stem: <dir><model>.gguf, <dir>ref/<model>.*
};

// INSTANTIATE_TEST_SUITE_P's name generator: the case's name.
std::string arch_case_name(const ::testing::TestParamInfo<ArchCase>& p);

// The CPU reference tests' settings: 2 threads, n_ctx 512 (the references' n_ctx).
EngineSettings reference_settings();

// One architecture's fixture directory `dir` (ending in '/'). skip_missing: a test whose model
// file is absent is skipped, naming the file (the GPU machine gets a subset of the fixtures);
// otherwise it fails when it opens the file.
class ArchFixture : public ::testing::TestWithParam<ArchCase> {
 protected:
  ArchFixture(std::string dir, bool skip_missing) : dir_(std::move(dir)), skip_missing_(skip_missing) {}
  void SetUp() override;

  std::string model_path() const { return dir_ + GetParam().model + ".gguf"; }
  std::string ref_path(const std::string& suffix) const { return dir_ + "ref/" + GetParam().model + suffix; }
  std::string prompt_path(int i) const { return dir_ + "prompts/prompt" + std::to_string(i) + ".txt"; }
  // The CPU backend on the model file.
  std::unique_ptr<Backend> open_cpu(const EngineSettings& s = reference_settings()) const;

  // Every prompt file equals the reference's prompt text, and our tokenizer (add_special, no
  // parse_special) gives its token_ids. Returns the prompts compared.
  int expect_tokens_match_reference() const;

  // Against the f32-dequant references, every prompt from an empty cache: the top-32 logits at
  // the last prompt position within 1e-3 (the same id set unless the 32nd and 33rd logits are
  // within 1e-3), all positions of the full_logits_bin prompt within 1e-3, the greedy
  // continuation identical, and each greedy step's top-8 logits within 1e-3. Records
  // worst_abs_diff; returns the prompts compared.
  int expect_matches_f32_dequant(Backend& be) const;

  // The routing the observer sees for the calls of the routing reference (made in its order,
  // from an empty cache) vs the recorded expert sets per (block, position): compared where the
  // selection margin is >= 1e-4, and always on hash-routed blocks (block < n_hash_layers);
  // weights within 1e-4 where the sets are compared. Also every selection computed.
  struct RoutingCompared {
    int tokens = 0;       // (block, position) pairs compared
    int hash_tokens = 0;  // of those, on hash-routed blocks
  };
  RoutingCompared expect_routing_matches_reference(Backend& be) const;

  // Against the native references (no EXPECTs but the per-prompt top-32 overlap >= min_overlap):
  // top-1 agreement, the largest top-32 logit difference, and greedy teacher-forced the largest
  // gap between our top-1 logit and the reference token's. Records worst_top32 and
  // worst_teacher_forced_gap.
  struct NativeCloseness {
    int prompts = 0, top1 = 0;
    float worst_top32 = 0, worst_teacher_forced_gap = 0;
  };
  NativeCloseness close_to_native_reference(Backend& be, int min_overlap) const;

  // expect_pack_matches_gguf (backend_parity.h) on the CPU backend: f32-dequant prompt 0, the
  // pack built under a TempDir named `tmp_prefix`, reference_settings() (no reserve for the pack);
  // then again with prefetch_experts (expect_cpu_prefetch_used).
  void expect_cpu_pack_matches_gguf(const char* tmp_prefix) const;

 private:
  std::string dir_;
  bool skip_missing_ = false;
};

// The tests of an architecture's own CUDA backend (tests/gpu/<arch>_test.cpp) on its fixture
// files, skipped when the model file was not carried: `factory` (e.g.
// make_cuda_backend_deepseek4) builds the backend under test, the CPU backend is the reference.
// Tolerances and printouts: backend_parity.h.
class GpuArchFixture : public ArchFixture {
 protected:
  using Factory = BackendFactory;
  GpuArchFixture(std::string dir, Factory factory) : ArchFixture(std::move(dir), true), make_gpu_(factory) {}

  using ArchFixture::ref_path;
  std::string ref_path() const { return ref_path(".f32-dequant.json"); }
  std::unique_ptr<Backend> make_gpu(std::shared_ptr<const ModelSource> src, const EngineSettings& s) const {
    return make_gpu_(std::move(src), s);
  }

  // Every f32-dequant prompt on the GPU backend and the CPU backend (expect_backends_agree_on_prompts).
  void expect_matches_cpu_and_reference() const;
  // All logits and the routing of the given f32-dequant prompts (expect_all_logits_and_routing_agree).
  void expect_all_logits_and_routing_match_cpu(std::initializer_list<int> prompts) const;
  // expect_pack_matches_gguf on the GPU backend (the pack with 3 stage slots), prompt 0, the
  // pack built under a TempDir named `tmp_prefix`. With `prefetch` (prefetch_experts), also:
  // every byte read is delivered, and some prefetched experts were used.
  // With `ram_tier_mib` > 0 (cache_ram_mib; 1024 is capped at the pack's experts) a host-RAM
  // tier sits behind the VRAM cache: the logits bit for bit, and the tier used
  // (expect_ram_tier_used).
  void expect_pack_matches_gguf_at_every_budget(const char* tmp_prefix, bool prefetch = false,
                                                uint64_t ram_tier_mib = 0) const;
  // Copies of the model file (under a TempDir named `tmp_prefix`) with one tensor broken in
  // place: each of `renamed` loses its tensor (".weight" -> "Xweight" in its name), then
  // `halved` gets its ne[0] (which must be `ne0`) halved. Loading each on the GPU throws a
  // FormatError naming the tensor and the file.
  void expect_broken_tensors_named(const char* tmp_prefix, std::initializer_list<const char*> renamed,
                                   const std::string& halved, uint64_t ne0) const;
  // A VRAM reserve larger than any device (1 PiB): the load fails before allocating, with an
  // Error naming "not enough VRAM", the MiB and the model file.
  void expect_out_of_vram_fails_with_numbers() const;

 private:
  Factory make_gpu_;
};

}  // namespace moepack::test
