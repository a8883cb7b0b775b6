// Two backends against each other on the same tokens: the CUDA backend against the CPU
// reference (tests/gpu/*_test.cpp), and an Expert Pack against its GGUF on the same backend at
// several cache budgets (tests/core and tests/gpu). Greedy runs use the fixtures' argmax
// (fixture_refs.h). The expect_* functions report through gtest, naming the prompt, the step,
// the position and the token id of the largest difference with both sides' top-5 logits.
// Tolerances (1e-3 absolute on logits) are those of tests/gpu/cuda_backend_test.cpp's header:
// both backends compute in F32 on the same exactly dequantized weights and differ only in
// summation order.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/engine_settings.h"

namespace moepack {
class ModelSource;
}

namespace moepack::test {

class TempDir;

// The GPU tests' settings for backend "cpu" | "cuda" | "auto": 4 threads, n_ctx 512 (the
// references'), no VRAM reserve.
EngineSettings parity_settings(const char* backend);

// Greedy continuation of n tokens from `logits` (the last forward()'s, updated in place): token i
// is the argmax of the logits at step i; a decode follows every token but the last. steps, if
// given, gets each step's logits (before its argmax).
std::vector<int32_t> greedy(Backend& be, std::vector<float>& logits, size_t n,
                            std::vector<std::vector<float>>* steps = nullptr);

// forward(tokens), then `decodes` greedy single-token decodes: the logits of every call,
// concatenated, [1 + decodes][n_vocab].
std::vector<float> prompt_then_greedy_logits(Backend& be, std::span<const int32_t> tokens, int decodes = 8);

// The Expert Pack of `source` built into dir/pack (no free-space margin, sources not hashed);
// returns the pack directory. Throws what build_pack() throws.
std::string build_test_pack(const std::string& source, const TempDir& dir);

// Cache budgets of a pack for the pack-vs-GGUF tests, in slots of slot_bytes (the pack's
// largest expert stride): every expert fits, half fit, one layer's top-k (constant eviction).
struct PackBudgets {
  uint64_t slot_bytes = 0;
  uint64_t experts = 0;  // routed experts over all MoE blocks
  uint64_t top_k = 0;    // n_expert_used
  std::vector<uint64_t> slots() const { return {experts, experts / 2, top_k}; }
};
PackBudgets pack_budgets(const ModelSource& pack);

// A backend factory: make_cpu_backend, make_backend, make_cuda_backend_deepseek4, ...
using BackendFactory = std::unique_ptr<Backend> (*)(std::shared_ptr<const ModelSource>,
                                                    const EngineSettings&);

// One cache budget of expect_pack_matches_gguf: its slots, the pack backend and its stats after
// the run (for the caller's own checks).
struct BudgetRun {
  uint64_t slots = 0;
  std::unique_ptr<Backend> backend;
  BackendStats stats;
};

// The Expert Pack of `model_path` (built into dir/pack) against the GGUF, both on backends from
// `make`: the GGUF with gguf_settings, the pack with pack_settings at every budget of
// pack_budgets() (cache_bytes = slots × slot_bytes). Prompt `tokens` then 8 greedy decodes give
// the GGUF path's logits bit for bit; at every budget cache_slots == slots, misses and pack
// reads > 0, every selection computed, evictions at top-k slots and none when every expert fits.
// Prints each budget's misses, evictions and bytes read. `runs`, if given, gets the budgets run.
void expect_pack_matches_gguf(const std::string& model_path, const TempDir& dir,
                              std::span<const int32_t> tokens, BackendFactory make,
                              const EngineSettings& gguf_settings, const EngineSettings& pack_settings,
                              std::vector<BudgetRun>* runs = nullptr);
// The budgets of an expect_pack_matches_gguf run with prefetch_experts: at each, every byte
// read was delivered (h2d == pack reads) and prefetch hits <= prefetch reads; over all of them
// some experts were read ahead and some of those were used.
void expect_prefetch_delivered_and_used(const std::vector<BudgetRun>& runs);
// The budgets of an expect_pack_matches_gguf run on the CUDA backend with a host-RAM tier
// (cache_ram_mib) big enough for every expert (its cap): no expert is read from the pack twice
// (pack reads <= experts.bin, `experts_bin` bytes), only what went down comes up, copies down
// only with demotions and none without evictions; at the smallest budget experts went down and
// came back up (h2d > pack reads).
void expect_ram_tier_used(const std::vector<BudgetRun>& runs, uint64_t experts_bin);
// The same for the CPU backend (no copies to a device): at each budget prefetch hits <= prefetch
// reads and <= misses (a prefetch hit is also a miss); over all of them some experts were read
// ahead and some of those used; at the last budget (top-k slots) none (no room beside the next
// block's top-k). Prints each budget's counts, `label` naming the case.
void expect_cpu_prefetch_used(const std::vector<BudgetRun>& runs, const std::string& label);

// For every prompt of an f32-dequant reference (prompts[] {token_ids, greedy {ids}}), from an
// empty cache on both: prompt logits of `gpu` within 1e-3 of `cpu`, greedy continuations equal
// to each other and to the reference's, every greedy step's logits within 1e-3; every selection
// of `gpu` computed. Prints each prompt's difference and `gpu`'s prefill and decode tokens/s.
// Records worst_logit_diff. `label` names the case in the printout. Returns the prompts compared.
int expect_backends_agree_on_prompts(Backend& cpu, Backend& gpu, const nlohmann::json& ref,
                                     const std::string& label);

// One prefill of `tokens` from an empty cache on both, asking for every position's logits:
// those within 1e-3 (and the first position beyond, if any), the last position's equal bit for
// bit to forward()'s `logits`, and the routing observer's calls (block, position, experts)
// identical and in the same order. `label` names the prompt in the printout. Leaves no routing
// observer set.
void expect_all_logits_and_routing_agree(Backend& cpu, Backend& gpu, std::span<const int32_t> tokens,
                                         const std::string& label);

}  // namespace moepack::test
