// Engine-level checks of the process-wide switches that reorder or fuse the CUDA engine's
// launches without changing what is computed, shared by the CUDA backends' tests: the prompt and
// 8 greedy decodes give the same logits bit for bit with the switch off and on, each on a fresh
// backend made by `factory` on the model file `model`. The switches:
//   - gpu::detail::set_gemv_swiglu_fusion: SwiGLU as the gate + up launch's epilogue at decode
//     (gpu/cuda_moe.cpp, kernels.h GemvBatch::swiglu_epilogue) or its own launch;
//   - gpu::set_shared_expert_overlap: a MoE block's shared expert launched beside the host's
//     choice of experts (gpu/cuda_host_router.h) or after the routed experts;
//   - gpu::set_residual_norm_fusion: the residual add and the RMSNorm after it in one launch
//     (gpu/cuda_backend.h) or two;
//   - gpu::set_router_on_device: decode steps route on the GPU (gpu/device_routing.h) or on the
//     host; here the routing observer's reports (block, position, experts, weights bit for bit)
//     must be the same too;
//   - gpu::set_decode_graph: a decode step as one CUDA graph launch (gpu/cuda_backend.h) or its
//     launches one by one; reports compared too.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/model_source.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_host_router.h"
#include "gpu/device_routing.h"
#include "gpu/gemv_mma.h"
#include "gpu/kernels.h"
#include "tests/gpu/prefill_mma_scope.h"
#include "tests/support/backend_parity.h"
#include "tests/support/gguf_writer.h"

namespace moepack::test {

// Prefill on the tensor cores for every group of two or more pairs for a scope (the fixtures'
// short prompts make small groups), the defaults back at scope exit.
struct PrefillMmaOn : PrefillMmaScope {
  PrefillMmaOn() : PrefillMmaScope(true, 2) {}
};
// Decode columns at prefill (gpu/kernels.h set_gemv_prefill_columns) for every group of up to 16
// pairs and every dense launch of up to 16 tokens, whatever the matrices' size (the default rule
// leaves the fixtures' small matrices out), for a scope; larger groups on the tensor cores.
struct PrefillColumnsOn : PrefillMmaScope {
  PrefillColumnsOn() : PrefillMmaScope(true, 2, 16) {}
};

// set: the switch's setter (on is the default, restored afterwards); what: its name for messages.
inline void expect_switch_changes_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                           BackendFactory factory, void (*set)(bool), const char* what) {
  struct OnAfterwards {  // also when an assertion returns early or a call throws
    void (*set)(bool);
    ~OnAfterwards() { set(true); }
  } restore{set};
  const auto src = ModelSource::open(model);
  std::vector<float> logits[2];
  for (const bool on : {false, true}) {
    set(on);
    auto be = factory(src, parity_settings("cuda"));
    logits[on] = prompt_then_greedy_logits(*be, tokens);
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
      << model << ": logits differ with " << what << " on";
}

inline void expect_swiglu_epilogue_changes_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                                    BackendFactory factory) {
  expect_switch_changes_no_logit(model, tokens, factory, gpu::detail::set_gemv_swiglu_fusion,
                                 "the SwiGLU epilogue");
}

inline void expect_residual_norm_fusion_changes_no_logit(const std::string& model,
                                                         std::span<const int32_t> tokens,
                                                         BackendFactory factory) {
  expect_switch_changes_no_logit(model, tokens, factory, gpu::set_residual_norm_fusion,
                                 "the residual add fused with the RMSNorm");
}

// (Callers skip models without shared experts: there the switch changes nothing.) The router
// stays on the host for it, decode steps included: the overlap is with the host's choice.
inline void expect_shared_expert_overlap_changes_no_logit(const std::string& model,
                                                          std::span<const int32_t> tokens,
                                                          BackendFactory factory) {
  struct OnAfterwards {
    ~OnAfterwards() { gpu::set_router_on_device(true); }
  } restore;
  gpu::set_router_on_device(false);
  expect_switch_changes_no_logit(model, tokens, factory, gpu::set_shared_expert_overlap,
                                 "the shared expert beside the routing");
}

// The host's copy of the group sizes (GemvBatch::grp_off_host) read and ignored changes no logit of the
// prompt and 8 greedy decodes, with columns of 1..2 pairs forced on every launch, the F32 kernels for 3..5
// and the tensor cores from 6: a prompt's groups of 3 pairs or more beside smaller ones make the compact
// layout and the skipped ranges run (proof: the launched slots differ, gemv_prefill_column_slots; the
// fixtures' 9-11-token prompts give deepseek2's top-4 of 16 and the others' top-2 of 8 ~2.75 pairs an
// expert). The defaults are back afterwards.
inline void expect_host_sizes_change_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                              BackendFactory factory) {
  const PrefillMmaScope small_columns(true, 6, 2);
  const auto src = ModelSource::open(model);
  std::vector<float> logits[2];
  uint64_t slots[2] = {0, 0};
  for (const bool on : {false, true}) {
    gpu::detail::set_gemv_prefill_host_sizes(on);
    auto be = factory(src, parity_settings("cuda"));
    const uint64_t before = gpu::gemv_prefill_column_slots();
    logits[on] = prompt_then_greedy_logits(*be, tokens);
    slots[on] = gpu::gemv_prefill_column_slots() - before;
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
      << model << ": logits differ with the host's group sizes read";
  EXPECT_GT(slots[0], 0u) << model << ": no decode columns ran";
  EXPECT_NE(slots[0], slots[1]) << model << ": the host's sizes changed no columns' launch (" << slots[0]
                                << " slots either way)";
}

// Both the logits and every routing report of the prompt and 8 greedy decodes, with the switch
// off and on (set: its setter; on, the default, is restored); `proof` counts in this process
// what the switch turns on, so the on-run must raise it and the off-run must not.
inline void expect_switch_changes_no_logit_nor_routing(const std::string& model,
                                                       std::span<const int32_t> tokens,
                                                       BackendFactory factory, void (*set)(bool),
                                                       uint64_t (*proof)(), const char* what) {
  struct OnAfterwards {
    void (*set)(bool);
    ~OnAfterwards() { set(true); }
  } restore{set};
  using Report = std::tuple<uint32_t, uint32_t, std::vector<int32_t>, std::vector<uint32_t>>;
  const auto src = ModelSource::open(model);
  std::vector<float> logits[2];
  std::vector<Report> reports[2];
  for (const bool on : {false, true}) {
    set(on);
    auto be = factory(src, parity_settings("cuda"));
    be->set_routing_observer([&reports, on](uint32_t block, uint32_t pos, std::span<const int32_t> experts,
                                            std::span<const float> weights) {
      std::vector<uint32_t> bits(weights.size());
      std::memcpy(bits.data(), weights.data(), weights.size() * sizeof(float));
      reports[on].emplace_back(block, pos, std::vector<int32_t>(experts.begin(), experts.end()), bits);
    });
    const uint64_t before = proof();
    logits[on] = prompt_then_greedy_logits(*be, tokens);
    const uint64_t seen = proof() - before;
    if (on) {
      EXPECT_GT(seen, 0u) << model << ": " << what << " never happened";
    } else {
      EXPECT_EQ(seen, 0u) << model << ": " << what << " happened with the switch off";
    }
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
      << model << ": logits differ with " << what << " on";
  ASSERT_FALSE(reports[0].empty());
  // The host router reports each block as it routes, the GPU's after each step in block order:
  // the same reports in the same order.
  EXPECT_EQ(reports[0], reports[1]) << model << ": routing reports differ with " << what << " on";
}

// Decode steps routed on the GPU (route_on_device calls with tables prove it).
inline void expect_router_on_device_changes_no_logit(const std::string& model,
                                                     std::span<const int32_t> tokens,
                                                     BackendFactory factory) {
  expect_switch_changes_no_logit_nor_routing(model, tokens, factory, gpu::set_router_on_device,
                                             gpu::device_routed_blocks, "the router on the GPU");
}

// Decode steps as CUDA graph launches (gpu::decode_graph_launches proves it).
inline void expect_decode_graph_changes_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                                 BackendFactory factory) {
  expect_switch_changes_no_logit_nor_routing(model, tokens, factory, gpu::set_decode_graph,
                                             gpu::decode_graph_launches, "decode steps as CUDA graphs");
}

// One decode graph serves every position (gpu/decode_graph.h). With the graph off and on, on a
// fresh backend each: the prompt, 12 greedy decodes, a truncation of 6 positions, the same 6
// tokens again, a 2-token forward, 3 greedy decodes, a forward of prompt.size() + 4 tokens (more
// than any call before), 3 greedy decodes, a truncation of 12 positions (a kimi-linear backend
// restores a checkpoint and recomputes) and 3 greedy decodes. The logits of the repeated
// positions equal the first pass's bit for bit (the same inputs), and every logit equals the
// direct launches' bit for bit. With the graph on, every decode but the first is a graph launch
// (17 of the first 18); after the 2-token batch, which grows no buffer, all 3; after the longer
// batch `after_growing_batch` of the 3 (the common backend's buffers grow and its graph is
// dropped: direct, capture, replay = 2; kimi-linear's are sized at load: 3); after the second
// truncation all 3.
inline void expect_decode_graph_serves_every_position(const std::string& model,
                                                      std::span<const int32_t> prompt, BackendFactory factory,
                                                      uint64_t after_growing_batch) {
  struct OnAfterwards {
    ~OnAfterwards() { gpu::set_decode_graph(true); }
  } restore;
  const auto src = ModelSource::open(model);
  std::vector<float> all[2];
  for (const bool on : {false, true}) {
    gpu::set_decode_graph(on);
    auto be = factory(src, parity_settings("cuda"));
    const size_t nv = be->config().n_vocab;
    std::vector<float> l(nv);
    be->forward(prompt, l);
    const auto greedy = [&](int count) {
      for (int i = 0; i < count; ++i) {
        const int32_t t = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
        be->forward(std::span<const int32_t>(&t, 1), l);
        all[on].insert(all[on].end(), l.begin(), l.end());
      }
    };
    std::vector<int32_t> toks;
    std::vector<std::vector<float>> first;
    const uint64_t before = gpu::decode_graph_launches();
    for (int i = 0; i < 12; ++i) {
      const int32_t t = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      toks.push_back(t);
      be->forward(std::span<const int32_t>(&toks.back(), 1), l);
      first.push_back(l);
      all[on].insert(all[on].end(), l.begin(), l.end());
    }
    be->truncate(be->n_past() - 6);
    for (int i = 6; i < 12; ++i) {
      be->forward(std::span<const int32_t>(&toks[static_cast<size_t>(i)], 1), l);
      EXPECT_EQ(std::memcmp(l.data(), first[static_cast<size_t>(i)].data(), nv * sizeof(float)), 0)
          << model << ": position " << prompt.size() + static_cast<size_t>(i) << " again"
          << (on ? " (graph)" : "");
      all[on].insert(all[on].end(), l.begin(), l.end());
    }
    EXPECT_EQ(gpu::decode_graph_launches() - before, on ? 17u : 0u)
        << model << ": graph launches: 18 decodes, the first direct";
    const std::vector<int32_t> two = {toks[10], toks[11]};
    be->forward(two, l);
    all[on].insert(all[on].end(), l.begin(), l.end());
    const uint64_t before2 = gpu::decode_graph_launches();
    greedy(3);
    EXPECT_EQ(gpu::decode_graph_launches() - before2, on ? 3u : 0u) << model << ": after a batch of 2";
    std::vector<int32_t> longer(prompt.begin(), prompt.end());
    longer.insert(longer.end(), toks.begin(), toks.begin() + 4);
    be->forward(longer, l);
    all[on].insert(all[on].end(), l.begin(), l.end());
    const uint64_t before4 = gpu::decode_graph_launches();
    greedy(3);
    EXPECT_EQ(gpu::decode_graph_launches() - before4, on ? after_growing_batch : 0u)
        << model << ": after a batch longer than any before";
    be->truncate(be->n_past() - 12);
    const uint64_t before3 = gpu::decode_graph_launches();
    greedy(3);
    EXPECT_EQ(gpu::decode_graph_launches() - before3, on ? 3u : 0u) << model << ": after a truncation of 12";
  }
  ASSERT_EQ(all[0].size(), all[1].size());
  EXPECT_EQ(std::memcmp(all[0].data(), all[1].data(), all[0].size() * sizeof(float)), 0)
      << model << ": logits differ with decode steps as CUDA graphs";
}

// Decode graphs on both sides of attention's 4096-position range split (gpu/kernels.h
// gqa_attend): n_ctx 4200, a prompt of 4090 token ids, then 12 greedy decodes at positions
// 4090 .. 4101, with the graph off and on, on a fresh backend each: every logit bit for bit the
// same, and with the graph on 10 graph launches: 4090 direct, a graph of bound 4096 captured at
// 4091 and replayed to 4095, 4096 direct (past the bound: dropped), a graph of bound 4200 (the
// split launches in it) captured at 4097 and replayed to 4101 (DecodeGraph::bound_for).
inline void expect_decode_graph_crosses_the_range_split(const std::string& model, BackendFactory factory) {
  struct OnAfterwards {
    ~OnAfterwards() { gpu::set_decode_graph(true); }
  } restore;
  const auto src = ModelSource::open(model);
  ASSERT_GE(src->config().n_ctx_train, 4200u) << model << ": the model's context is too short for this test";
  EngineSettings s = parity_settings("cuda");
  s.n_ctx = 4200;
  std::vector<int32_t> prompt(4090);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 7919 + 13) % src->config().n_vocab);
  std::vector<float> logits[2];
  for (const bool on : {false, true}) {
    gpu::set_decode_graph(on);
    auto be = factory(src, s);
    ASSERT_EQ(be->n_ctx(), 4200u);
    const uint64_t before = gpu::decode_graph_launches();
    logits[on] = prompt_then_greedy_logits(*be, prompt, 12);
    EXPECT_EQ(gpu::decode_graph_launches() - before, on ? 10u : 0u)
        << model << ": graph launches of 12 decodes";
    EXPECT_EQ(be->n_past(), 4102u);
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  ASSERT_FALSE(logits[0].empty());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0)
      << model << ": logits differ with decode steps as CUDA graphs across 4096 positions";
}

// EngineSettings::tiled_experts (a setting, per backend): the GGUF path with the routed experts
// in the tiled layout ("on") and in the GGUF layout ("off"), and an Expert Pack of the model with them tiled
// as each is copied into its slot, at a budget of one layer's top-k (experts evicted every step), give the
// same logits bit for bit. gpu::gemv_tiled_launches proves the tiled runs used the layout and the other did
// not.
// one_launch_expected: the model's gate, up and down share Q4_K, Q2_K or MXFP4 (the types of the
// one-launch expert FFN); then
// the same two tiled runs again with the one-launch expert FFN switched on (gemv_experts_ffn,
// off by default: gpu/gemv_mma.h's set_gemv_ffn_fusion), which every decode step must take, and
// their logits too are the untiled run's.
inline void expect_tiled_experts_change_no_logit(const std::string& model, std::span<const int32_t> tokens,
                                                 BackendFactory factory, const std::string& tmp_prefix,
                                                 bool one_launch_expected = false) {
  const auto src = ModelSource::open(model);
  std::vector<float> logits[5];
  bool fusion = false;  // the one-launch expert FFN switched on for the run
  const auto run = [&](std::shared_ptr<const ModelSource> from, EngineSettings s, int i) {
    const uint64_t before = gpu::gemv_tiled_launches(), ffn_before = gpu::gemv_ffn_launches();
    {
      auto be = factory(std::move(from), s);
      logits[i] = prompt_then_greedy_logits(*be, tokens);
    }
    const uint64_t seen = gpu::gemv_tiled_launches() - before;
    // The expert FFN in one launch (gemv_experts_ffn) where gate, up and down share a tiled type.
    const uint64_t one_launch = gpu::gemv_ffn_launches() - ffn_before;
    std::printf("[ tiled ] %s run %d: %llu tiled launches, %llu expert FFNs in one launch\n", model.c_str(),
                i, static_cast<unsigned long long>(seen), static_cast<unsigned long long>(one_launch));
    if (s.tiled_experts != "on") {
      EXPECT_EQ(one_launch, 0u) << model << ": one-launch FFN with tiled_experts off";
    } else if (fusion) {
      EXPECT_GT(one_launch, 0u) << model << " (run " << i << "): no expert FFN in one launch";
    } else {
      EXPECT_EQ(one_launch, 0u) << model << " (run " << i << "): one-launch FFN while switched off";
    }
    if (s.tiled_experts == "on") {
      EXPECT_GT(seen, 0u) << model << " (run " << i << "): no launch took the tiled layout";
    } else {
      EXPECT_EQ(seen, 0u) << model << ": a launch took the tiled layout with tiled_experts off";
    }
  };
  EngineSettings off = parity_settings("cuda");
  off.tiled_experts = "off";
  EngineSettings on = parity_settings("cuda");
  on.tiled_experts = "on";  // the fixtures' experts are below "auto"'s 2048 x 2048
  run(src, off, 0);
  run(src, on, 1);
  TempDir dir(tmp_prefix);
  const auto pack = ModelSource::open(build_test_pack(model, dir));
  const PackBudgets budgets = pack_budgets(*pack);
  EngineSettings tight = on;
  tight.cache_bytes = budgets.top_k * budgets.slot_bytes;
  tight.stage_slots = 3;
  run(pack, tight, 2);
  int runs = 3;
  if (one_launch_expected) {
    struct Afterwards {
      ~Afterwards() { gpu::detail::set_gemv_ffn_fusion(false); }
    } restore;
    gpu::detail::set_gemv_ffn_fusion(true);
    fusion = true;
    run(src, on, 3);
    run(pack, tight, 4);
    fusion = false;
    runs = 5;
  }
  ASSERT_FALSE(logits[0].empty());
  for (int i = 1; i < runs; ++i) {
    ASSERT_EQ(logits[0].size(), logits[i].size());
    EXPECT_EQ(std::memcmp(logits[0].data(), logits[i].data(), logits[0].size() * sizeof(float)), 0)
        << model << ": logits differ with the experts tiled ("
        << (i % 2 == 1 ? "GGUF" : "Expert Pack, top-k slots") << (i >= 3 ? ", one-launch FFN" : "") << ")";
  }
}

}  // namespace moepack::test
