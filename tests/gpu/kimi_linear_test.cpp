// The `kimi-linear` CUDA backend (gpu/cuda_kimi_linear.cpp) and its kernels (gpu/kernels_kimi_linear.h).
//
// 1. Every new kernel against its CPU twin (core/kimi_linear_ops.h, which the CPU reference
//    itself calls) on random inputs at the kimi-linear-tiny fixture's shapes (H 4, d 128, w 4)
//    and at a Kimi-Linear-48B-like larger one (H 32, d 128), over two calls so the conv history
//    and the recurrent state carry. Tolerance |gpu - cpu| <= 1e-5 · max(1, |cpu|): every output
//    is computed by one GPU thread in the CPU twin's order of operations (--fmad=false; dot
//    products in dot_f32's eight lanes; the recurrence's sums over i ascending per column j),
//    so the only differences are expf / log1pf (CUDA <= 2 ulp, glibc < 1 ulp) and the output
//    norm's double sum of squares in tree order (a 1-ulp change of the float mean at most):
//    a few ulp (~1e-7 relative); 1e-5 leaves two orders of margin and still catches any
//    indexing or formula error (which moves values by O(0.1..1)).
// 2. End to end on each kimi-linear-tiny file carried to the machine (skipped, naming the file,
//    when absent): prompt logits of the 5 reference prompts within 1e-3 of the CPU backend (both
//    F32 on the same exactly dequantized weights, differing only in the GEMVs' summation order;
//    the CPU backend agrees with llama.cpp's f32-dequant references to 5e-6), 24-token greedy
//    continuations identical to the CPU backend's and to llama.cpp's f32-dequant references,
//    all-position logits and routing of prompts 0 and 3 (386 tokens: two ubatches), chunked
//    calls and truncate() (to a checkpoint, between checkpoints, to 0) then the rest equal to
//    one pass, a decode after truncate() equal to a fresh run.
// 3. The Expert Pack of the fixture on the GPU at three VRAM budgets: logits bit-identical to the
//    GGUF path on the GPU; evictions at the smallest budget.
// Failures print the largest difference and the first mismatching index, per check.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/backend_factory.h"
#include "core/error.h"
#include "core/kimi_linear_ops.h"
#include "core/model_source.h"
#include "gpu/cuda_arch_backends.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/kernels_kimi_linear.h"
#include "packbuilder/pack_builder.h"
#include "tests/gpu/engine_switch_check.h"
#include "tests/gpu/gpu_test_main.h"
#include "tests/gpu/kernel_parity.h"
#include "tests/support/arch_fixture.h"
#include "tests/support/backend_parity.h"
#include "tests/support/fixture_refs.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

using namespace moepack::gpu;
using test::Dev;
using test::down;
using test::expect_close;
using test::expect_nontrivial;
using test::max_abs_diff;
using test::parity_settings;
using test::randn;
using test::read_json;
using test::top_text;
using test::up;
using test::zeros;

// ---------------------------------------------------------------------------------------------
// Kernel parity (helpers: tests/gpu/kernel_parity.h).

struct Shape {
  const char* name;
  int64_t H, d, w;
};
// kimi-linear-tiny (fixture README) and a Kimi-Linear-48B-like one (H 32, d 128, w 4).
const Shape kShapes[] = {{"tiny", 4, 128, 4}, {"large", 32, 128, 4}};
const int64_t kCalls[] = {37, 5};  // tokens of two consecutive calls (state carries)

class KimiKernels : public ::testing::TestWithParam<Shape> {};

// Short conv + SiLU of q, k, v in one launch, the history carried over two calls as the backend
// does (last w-1 rows of ext).
TEST_P(KimiKernels, ConvSilu) {
  const Shape sh = GetParam();
  const int64_t DIN = sh.H * sh.d, w = sh.w;
  const auto W = randn(static_cast<size_t>(3 * DIN * w), 0.3f, 1);
  Dev dW = up(W);
  std::vector<float> hist(static_cast<size_t>(3 * (w - 1) * DIN), 0.0f);
  for (int call = 0; call < 2; ++call) {
    const int64_t n = kCalls[call], rows = w - 1 + n;
    SCOPED_TRACE("call " + std::to_string(call) + " (" + std::to_string(n) + " tokens)");
    std::vector<float> ext(static_cast<size_t>(3 * rows * DIN));
    const auto fresh = randn(static_cast<size_t>(3 * n * DIN), 1.0f, 10 + static_cast<uint32_t>(call));
    for (int i = 0; i < 3; ++i) {
      std::copy(hist.begin() + i * (w - 1) * DIN, hist.begin() + (i + 1) * (w - 1) * DIN,
                ext.begin() + i * rows * DIN);
      std::copy(fresh.begin() + i * n * DIN, fresh.begin() + (i + 1) * n * DIN,
                ext.begin() + i * rows * DIN + (w - 1) * DIN);
    }
    Dev dext = up(ext), out = zeros(static_cast<size_t>(3 * n * DIN));
    kda_conv_silu(dext.p(), rows * DIN, dW.p(), DIN * w, n, DIN, w, 3, out.p(), n * DIN, nullptr);
    std::vector<float> want(out.n);
    for (int i = 0; i < 3; ++i) {
      kimi::conv_silu(ext.data() + i * rows * DIN, W.data() + i * DIN * w, n, DIN, w,
                      want.data() + i * n * DIN);
      std::copy(ext.begin() + i * rows * DIN + n * DIN, ext.begin() + (i + 1) * rows * DIN,
                hist.begin() + i * (w - 1) * DIN);
    }
    const auto got = down(out);
    expect_close(got, want, "kda_conv_silu");
    expect_nontrivial(want, "conv_silu output");
  }
  // Sizes are checked before the launch.
  Dev dext = zeros(16), out = zeros(16);
  EXPECT_THROW(kda_conv_silu(dext.p(), 1, dW.p(), DIN * w, 4, DIN, w, 3, out.p(), 4 * DIN, nullptr), Error);
  EXPECT_THROW(kda_conv_silu(dext.p(), 1, dW.p(), DIN * w, 4, DIN, 17, 3, out.p(), 4 * DIN, nullptr), Error);
}

TEST_P(KimiKernels, L2NormAndGates) {
  const Shape sh = GetParam();
  const int64_t H = sh.H, d = sh.d, DIN = H * d, n = kCalls[0];
  const float eps = 1e-5f;
  auto x = randn(static_cast<size_t>(2 * n * DIN), 1.0f, 2);
  for (int64_t i = 0; i < d; ++i) x[static_cast<size_t>(i)] = 0.0f;       // row 0: norm 0 < eps
  for (int64_t i = 0; i < d; ++i) x[static_cast<size_t>(d + i)] = 1e-8f;  // row 1: norm below eps
  Dev dx = up(x);
  kda_l2_norm(dx.p(), 2 * n * H, d, eps, nullptr);
  std::vector<float> want = x;
  kimi::l2_norm_rows(want.data(), 2 * n * H, d, eps);
  expect_close(down(dx), want, "kda_l2_norm");
  expect_nontrivial(want, "l2_norm output");

  // Decay inputs spread over softplus's branches (|x| up to ~25, some above the cut-off 20).
  auto decay = randn(static_cast<size_t>(n * DIN), 8.0f, 3);
  auto gate = randn(static_cast<size_t>(n * DIN), 2.0f, 4);
  auto beta = randn(static_cast<size_t>(n * H), 2.0f, 5);
  std::vector<float> A(static_cast<size_t>(H)), dt = randn(static_cast<size_t>(DIN), 2.0f, 6);
  for (int64_t h = 0; h < H; ++h)
    A[static_cast<size_t>(h)] = -std::exp(std::log(16.0f) * static_cast<float>(h) / static_cast<float>(H));
  Dev ddecay = up(decay), dgate = up(gate), dbeta = up(beta), dA = up(A), ddt = up(dt);
  kda_gates(ddecay.p(), dgate.p(), dbeta.p(), n, H, d, dA.p(), ddt.p(), nullptr);
  kimi::gates(decay.data(), gate.data(), beta.data(), n, H, d, A.data(), dt.data());
  expect_close(down(ddecay), decay, "kda_gates decay");
  expect_close(down(dgate), gate, "kda_gates gate");
  expect_close(down(dbeta), beta, "kda_gates beta");
  expect_nontrivial(decay, "decay");
}

// The delta-rule recurrence over two calls (state carried), then the output norm and gate.
TEST_P(KimiKernels, RecurrenceAndOutputNorm) {
  const Shape sh = GetParam();
  const int64_t H = sh.H, d = sh.d, DIN = H * d;
  const float eps = 1e-5f;
  std::vector<float> S(static_cast<size_t>(H * d * d), 0.0f);
  Dev dS = up(S);
  const auto norm = randn(static_cast<size_t>(d), 0.05f, 7);
  std::vector<float> normw(norm.size());
  for (size_t i = 0; i < norm.size(); ++i) normw[i] = 1.0f + norm[i];
  Dev dnorm = up(normw);
  for (int call = 0; call < 2; ++call) {
    const int64_t n = kCalls[call];
    SCOPED_TRACE("call " + std::to_string(call) + " (" + std::to_string(n) + " tokens)");
    const uint32_t seed = 100 + 10 * static_cast<uint32_t>(call);
    // Realistic inputs: q, k L2-normed per head, α in (0, 1], β in (0, 1).
    auto q = randn(static_cast<size_t>(n * DIN), 1.0f, seed);
    auto k = randn(static_cast<size_t>(n * DIN), 1.0f, seed + 1);
    const auto v = randn(static_cast<size_t>(n * DIN), 1.0f, seed + 2);
    kimi::l2_norm_rows(q.data(), n * H, d, eps);
    kimi::l2_norm_rows(k.data(), n * H, d, eps);
    auto alpha = randn(static_cast<size_t>(n * DIN), 1.0f, seed + 3);
    for (float& a : alpha) a = std::exp(-0.2f * std::fabs(a));
    auto beta = randn(static_cast<size_t>(n * H), 1.0f, seed + 4);
    for (float& b : beta) b = 1.0f / (1.0f + std::exp(-b));
    auto gate = randn(static_cast<size_t>(n * DIN), 1.0f, seed + 5);
    for (float& g : gate) g = 1.0f / (1.0f + std::exp(-g));
    Dev dq = up(q), dk = up(k), dv = up(v), dal = up(alpha), dbe = up(beta), dg = up(gate);
    Dev o = zeros(static_cast<size_t>(n * DIN));
    kda_recurrence(dS.p(), dq.p(), dk.p(), dv.p(), dal.p(), dbe.p(), n, H, d, o.p(), nullptr);
    std::vector<float> want(o.n), delta(static_cast<size_t>(d));
    for (int64_t h = 0; h < H; ++h) {
      kimi::recurrence_head(S.data() + h * d * d, q.data(), k.data(), v.data(), alpha.data(), beta.data(), n,
                            H, d, h, delta.data(), want.data());
    }
    const auto got = down(o);
    expect_close(got, want, "kda_recurrence output");
    expect_close(down(dS), S, "kda_recurrence state");
    expect_nontrivial(want, "recurrence output");
    expect_nontrivial(S, "recurrence state");
    // Output norm + gate on the CPU's own recurrence output (checks this kernel alone).
    Dev dwant = up(want);
    kda_output_norm_gate(dwant.p(), dnorm.p(), dg.p(), n * H, d, eps, nullptr);
    kimi::output_norm_gate(want.data(), normw.data(), gate.data(), n * H, d, eps);
    expect_close(down(dwant), want, "kda_output_norm_gate");
  }
  Dev dummy = zeros(4);
  EXPECT_THROW(kda_recurrence(dS.p(), dummy.p(), dummy.p(), dummy.p(), dummy.p(), dummy.p(), 1, H, 1025,
                              dummy.p(), nullptr),
               Error);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KimiKernels, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<Shape>& p) { return std::string(p.param.name); });

// ---------------------------------------------------------------------------------------------
// End to end.

const test::ArchCase kCases[] = {
    {"Q4_K_M", "kimi-linear-tiny-Q4_K_M"},
    {"Q2_K", "kimi-linear-tiny-Q2_K"},
};

class KimiFixture : public test::GpuArchFixture {
 protected:
  KimiFixture()
      : GpuArchFixture(std::string(MOEPACK_SHARED_DIR) + "/fixtures/kimi-linear-tiny/",
                       make_cuda_backend_kimi_linear) {}
};

TEST_P(KimiFixture, MatchesCpuBackendAndReference) { expect_matches_cpu_and_reference(); }

// All logits of prompt 0 and of the 386-token prompt (two ubatches), and the routing the
// observer sees, vs the CPU backend.
TEST_P(KimiFixture, AllLogitsAndRoutingMatchCpu) { expect_all_logits_and_routing_match_cpu({0, 3}); }

// Chunked calls equal one pass; truncate(n) to a checkpoint, between checkpoints, to 0, then the
// rest equals one pass; a single decode after truncate() equals the fresh run's last logits.
TEST_P(KimiFixture, ChunksAndTruncateEqualFreshRun) {
  const nlohmann::json ref = read_json(ref_path());
  const auto tokens = ref["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 386u);
  const std::span<const int32_t> all(tokens);
  const auto src = ModelSource::open(model_path());
  auto gpu = make_cuda_backend_kimi_linear(src, parity_settings("cuda"));
  auto cpu = make_backend(src, parity_settings("cpu"));
  const size_t nv = gpu->config().n_vocab;
  std::vector<float> fresh(nv), lc(nv), got(nv);
  gpu->forward(tokens, fresh);
  cpu->forward(tokens, lc);
  EXPECT_LT(max_abs_diff(fresh, lc), 1e-3f) << "fresh GPU vs CPU";
  const auto check = [&](const std::string& what) {
    size_t at = 0;
    const float d = max_abs_diff(got, fresh, &at);
    EXPECT_LT(d, 1e-4f) << what << ": max diff " << d << " at id " << at << "\n  fresh top-5 "
                        << top_text(fresh) << "\n  got   top-5 " << top_text(got);
    std::printf("  %s vs one pass: max diff %.3g\n", what.c_str(), static_cast<double>(d));
  };
  // Chunks 100 + 150 + 136: checkpoints at 100, 250, 386.
  gpu->truncate(0);
  EXPECT_EQ(gpu->n_past(), 0u);
  gpu->forward(all.subspan(0, 100), got);
  gpu->forward(all.subspan(100, 150), got);
  gpu->forward(all.subspan(250), got);
  check("chunks 100 + 150 + 136");
  for (const uint32_t cut : {250u, 175u, 100u, 385u, 300u, 14u, 0u}) {
    gpu->truncate(cut);
    EXPECT_EQ(gpu->n_past(), cut);
    gpu->forward(all.subspan(cut), got);
    check("truncate(" + std::to_string(cut) + ") + rest");
  }
  gpu->truncate(385);
  gpu->forward(all.subspan(385, 1), got);
  check("decode after truncate(385)");
  EXPECT_THROW(gpu->truncate(387), Error);
}

// SwiGLU as the gate + up launch's epilogue at decode changes no logit
// (tests/gpu/engine_switch_check.h).
TEST_P(KimiFixture, SwigluEpilogueChangesNoLogit) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_swiglu_epilogue_changes_no_logit(model_path(), tokens, make_cuda_backend_kimi_linear);
}

// Routed experts in the tiled layout (EngineSettings::tiled_experts) change no logit, on the GGUF
// path and on an Expert Pack refilled every step (tests/gpu/engine_switch_check.h).
TEST_P(KimiFixture, TiledExpertsChangeNoLogit) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_tiled_experts_change_no_logit(model_path(), tokens, make_cuda_backend_kimi_linear,
                                             "moepack-tiled");
}

// The shared expert launched beside the host's choice of experts changes no logit.
TEST_P(KimiFixture, SharedExpertOverlapChangesNoLogit) {
  ASSERT_GT(ModelSource::open(model_path())->config().n_expert_shared, 0u);
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_shared_expert_overlap_changes_no_logit(model_path(), tokens, make_cuda_backend_kimi_linear);
}

// The residual add fused with the RMSNorm after it changes no logit.
TEST_P(KimiFixture, ResidualNormFusionChangesNoLogit) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_residual_norm_fusion_changes_no_logit(model_path(), tokens, make_cuda_backend_kimi_linear);
}

// Decode steps routed on the GPU (gpu/cuda_device_router.h) change no logit and no routing
// report.
TEST_P(KimiFixture, RouterOnDeviceChangesNoLogitNorRouting) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_router_on_device_changes_no_logit(model_path(), tokens, make_cuda_backend_kimi_linear);
}

// A call of 257 positions runs as ubatches of 256 and 1: the 1-position ubatch routes on the
// GPU while the call's reports are deferred into block-major order; logits and every report
// (in order) as with the router on the host.
TEST_P(KimiFixture, RouterOnDeviceReportsADeferredOnePositionUbatch) {
  auto tokens = read_json(ref_path())["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(tokens.size(), 257u);
  tokens.resize(257);
  test::expect_router_on_device_changes_no_logit(model_path(), tokens, make_cuda_backend_kimi_linear);
}

// Decode steps as one CUDA graph launch (gpu/decode_graph.h) change no logit and no routing
// report.
TEST_P(KimiFixture, DecodeGraphChangesNoLogitNorRouting) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_decode_graph_changes_no_logit(model_path(), tokens, make_cuda_backend_kimi_linear);
}

// One graph serves every position, truncations that restore a checkpoint and recompute
// included; kimi-linear's graph outlives every batch (its buffers are sized at load).
TEST_P(KimiFixture, DecodeGraphServesEveryPositionAfterATruncation) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_decode_graph_serves_every_position(model_path(), tokens, make_cuda_backend_kimi_linear, 3);
}

// Prefill on the tensor cores switched on (test::PrefillMmaOn): the CPU and llama.cpp parity of
// MatchesCpuBackendAndReference, and the pack path bit for bit against the GGUF path.
TEST_P(KimiFixture, PrefillTensorCoresMatchCpuAndReferenceAndPackMatchesGguf) {
  const test::PrefillMmaOn on;
  expect_matches_cpu_and_reference();
  expect_pack_matches_gguf_at_every_budget("moepack-kimi-cuda-prefill-mma");
}

// Decode columns at prefill on every launch of up to 16 pairs a group or tokens
// (test::PrefillColumnsOn): the same parity, and the pack path bit for bit against the GGUF path.
TEST_P(KimiFixture, PrefillColumnsMatchCpuAndReferenceAndPackMatchesGguf) {
  const test::PrefillColumnsOn on;
  expect_matches_cpu_and_reference();
  expect_pack_matches_gguf_at_every_budget("moepack-kimi-cuda-prefill-columns");
}

TEST_P(KimiFixture, PackMatchesGgufOnGpuAtEveryBudget) {
  expect_pack_matches_gguf_at_every_budget("moepack-kimi-cuda");
}

// Next-layer prefetch changes no logit.
TEST_P(KimiFixture, PackWithPrefetchMatchesGgufOnGpuAtEveryBudget) {
  expect_pack_matches_gguf_at_every_budget("moepack-kimi-cuda-prefetch", true);
}

// The host-RAM tier behind the VRAM cache (cache_ram_mib; with prefetch) changes no logit, and
// evicted experts come back from RAM instead of the pack.
TEST_P(KimiFixture, PackWithRamTierMatchesGgufOnGpuAtEveryBudget) {
  expect_pack_matches_gguf_at_every_budget("moepack-kimi-cuda-ram", true, 1024);
}

// A missing or mis-shaped tensor fails the load with a FormatError naming the file and the
// tensor (copies of the fixture with one tensor renamed, or one dimension changed, in place).
TEST_P(KimiFixture, MissingOrMisShapedTensorIsNamed) {
  // ssm_norm: ne[0] = d 128, halved to 64
  expect_broken_tensors_named("moepack-kimi-bad",
                              {"blk.1.ssm_conv1d_k.weight", "blk.3.attn_kv_a_norm.weight"},
                              "blk.2.ssm_norm.weight", 128);
}

// A VRAM reserve larger than any device: the load fails before allocating, with the numbers.
TEST_P(KimiFixture, OutOfVramFailsWithNumbers) { expect_out_of_vram_fails_with_numbers(); }

INSTANTIATE_TEST_SUITE_P(Fixtures, KimiFixture, ::testing::ValuesIn(kCases), test::arch_case_name);

}  // namespace
}  // namespace moepack

MOEPACK_GPU_TEST_MAIN()
