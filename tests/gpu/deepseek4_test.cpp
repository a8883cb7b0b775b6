// The `deepseek4` CUDA backend (gpu/cuda_deepseek4.cpp) and its kernels (gpu/kernels_deepseek4.h).
//
// 1. Every new kernel against its CPU twin (core/deepseek4_ops.h, core's rope_table/rope_apply)
//    on random inputs at the deepseek4-tiny fixture's shapes and at a larger V4-Flash-like shape.
//    Tolerance |gpu - cpu| <= 1e-5 · max(1, |cpu|): every output is computed by one GPU thread in
//    the CPU twin's order of operations (--fmad=false, dot products with dot_f32's eight lanes),
//    so the only differences are expf (CUDA: <= 2 ulp; glibc: < 1 ulp) and the rounding of a
//    division, i.e. a few ulp (~1e-7 relative) amplified by at most the softmax / Sinkhorn's
//    short chains of operations; 1e-5 leaves two orders of margin and still catches any indexing
//    or formula error (which moves values by O(1)).
// 2. End to end on each deepseek4-tiny file carried to the machine: prompt logits within 1e-3
//    of the CPU backend (both F32 on the same exactly dequantized weights, differing only in
//    summation order inside the GEMVs), 24-token greedy continuations identical to the CPU
//    backend's and to llama.cpp's f32-dequant references, all-position logits and routing of
//    prompt 0, truncate() (O(1) and recomputing) followed by the rest equal to one pass.
// 3. The Expert Pack of the fixture on the GPU at three VRAM budgets: logits bit-identical to the
//    GGUF path on the GPU; evictions at the smallest budget.
// Failures print the largest difference and the first mismatching index, per check.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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
#include "core/cpu_ops.h"
#include "core/deepseek4_ops.h"
#include "core/error.h"
#include "core/model_source.h"
#include "core/session.h"
#include "gpu/cuda_arch_backends.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/kernels_deepseek4.h"
#include "packbuilder/pack_builder.h"
#include "tests/gpu/gpu_test_main.h"
#include "tests/support/fixture_refs.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

using namespace moepack::gpu;
using test::argmax;
using test::read_json;

// ---------------------------------------------------------------------------------------------
// Kernel parity helpers.

std::vector<float> randn(size_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Dev {
  DeviceBuffer buf;
  size_t n = 0;
  float* p() const { return buf.as<float>(); }
};

Dev up(const std::vector<float>& v) {
  Dev d;
  d.n = v.size();
  d.buf.allocate(std::max<size_t>(v.size(), 1) * sizeof(float), "test buffer");
  if (!v.empty())
    MOEPACK_CUDA_CHECK(cudaMemcpy(d.p(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}
Dev zeros(size_t n) { return up(std::vector<float>(n, 0.0f)); }

DeviceBuffer up_i32(const std::vector<int32_t>& v) {
  DeviceBuffer b;
  b.allocate(std::max<size_t>(v.size(), 1) * sizeof(int32_t), "test buffer");
  if (!v.empty())
    MOEPACK_CUDA_CHECK(
        cudaMemcpy(b.as<int32_t>(), v.data(), v.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  return b;
}

std::vector<float> down(const Dev& d) {
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> v(d.n);
  if (d.n) MOEPACK_CUDA_CHECK(cudaMemcpy(v.data(), d.p(), d.n * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

constexpr float kRel = 1e-5f;

// EXPECTs |got - want| <= kRel · max(1, |want|) everywhere; reports max diff and first mismatch.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                  float rel = kRel) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float worst = 0.0f;
  int64_t first = -1, bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float d = std::fabs(got[i] - want[i]);
    const bool ok = d <= rel * std::max(1.0f, std::fabs(want[i]));  // NaN fails
    if (!ok) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
    }
    if (!(d <= worst)) worst = d;
  }
  std::ostringstream m;
  m << what << ": " << want.size() << " values, max |gpu - cpu| " << worst;
  if (first >= 0) {
    m << ", " << bad << " beyond tolerance, first at index " << first << " (gpu "
      << got[static_cast<size_t>(first)] << ", cpu " << want[static_cast<size_t>(first)] << ")";
  }
  EXPECT_LT(first, 0) << m.str();
  std::printf("  %s\n", m.str().c_str());
}

struct Shape {
  const char* name;
  int64_t E, HC, H, D, R, HI, DI, n_swa, KI;
};
// deepseek4-tiny (fixture README) and a V4-Flash-like larger one.
const Shape kShapes[] = {{"tiny", 256, 4, 8, 128, 64, 32, 64, 64, 16},
                         {"large", 1024, 4, 16, 512, 64, 64, 128, 128, 64}};

class Ds4Kernels : public ::testing::TestWithParam<Shape> {};

TEST_P(Ds4Kernels, HyperConnections) {
  const Shape sh = GetParam();
  const int64_t n = 37, HC = sh.HC, NHC = (2 + HC) * HC, E = sh.E;
  const uint32_t iters = 20;
  const float eps = 1e-6f;
  const auto mix = randn(static_cast<size_t>(n * NHC), 1.0f, 1);
  const auto base = randn(static_cast<size_t>(NHC), 0.5f, 2);
  const std::vector<float> scale = {0.7f, 1.2f, 0.9f};
  Dev dmix = up(mix), dbase = up(base), dscale = up(scale);
  Dev pre = zeros(static_cast<size_t>(n * HC)), post = zeros(static_cast<size_t>(n * HC)),
      M = zeros(static_cast<size_t>(n * HC * HC));
  ds4_hc_weights(dmix.p(), n, dbase.p(), dscale.p(), HC, iters, eps, pre.p(), post.p(), M.p(), nullptr);
  std::vector<float> wpre(pre.n), wpost(post.n), wM(M.n);
  for (int64_t t = 0; t < n; ++t) {
    ds4::hc_weights(mix.data() + t * NHC, base.data(), scale.data(), HC, iters, eps, wpre.data() + t * HC,
                    wpost.data() + t * HC, wM.data() + t * HC * HC);
  }
  expect_close(down(pre), wpre, "hc_weights pre");
  expect_close(down(post), wpost, "hc_weights post");
  expect_close(down(M), wM, "hc_weights Sinkhorn M");

  // Head weights: the same formula as hc_weights' pre on the first HC logits.
  std::vector<float> hmix(static_cast<size_t>(n * HC));
  for (int64_t t = 0; t < n; ++t)
    std::copy(mix.begin() + t * NHC, mix.begin() + t * NHC + HC, hmix.begin() + t * HC);
  Dev dhmix = up(hmix), hpre = zeros(static_cast<size_t>(n * HC));
  ds4_head_weights(dhmix.p(), n, dbase.p(), dscale.p(), HC, eps, hpre.p(), nullptr);
  expect_close(down(hpre), wpre, "head weights");

  const auto S = randn(static_cast<size_t>(n * HC * E), 1.0f, 3);
  const auto y = randn(static_cast<size_t>(n * E), 1.0f, 4);
  Dev dS = up(S), dy = up(y), h = zeros(static_cast<size_t>(n * E));
  ds4_hc_collapse(dS.p(), pre.p(), n, HC, E, h.p(), nullptr);
  std::vector<float> wh(h.n);
  for (int64_t t = 0; t < n; ++t)
    ds4::hc_collapse(S.data() + t * HC * E, wpre.data() + t * HC, HC, E, wh.data() + t * E);
  expect_close(down(h), wh, "hc_collapse");

  // Expansion with the CPU's own M and post (so this checks hc_expand alone).
  Dev dM = up(wM), dpost = up(wpost);
  ds4_hc_expand(dS.p(), dy.p(), dpost.p(), dM.p(), n, HC, E, nullptr);
  std::vector<float> wS = S, scratch(static_cast<size_t>(HC * E));
  for (int64_t t = 0; t < n; ++t) {
    ds4::hc_expand(wS.data() + t * HC * E, y.data() + t * E, wpost.data() + t * HC, wM.data() + t * HC * HC,
                   HC, E, scratch.data());
  }
  expect_close(down(dS), wS, "hc_expand");
}

// Compressor history + pooling + RoPE of the rows, both ratios, with the rings wrapping.
TEST_P(Ds4Kernels, CompressorAndRope) {
  const Shape sh = GetParam();
  for (const int64_t m : {int64_t{4}, int64_t{128}}) {
    SCOPED_TRACE("ratio " + std::to_string(m));
    const int64_t c = m == 4 ? 2 : 1, d = sh.D, cd = c * d, U = 256, ring = 2 * m + U, R = sh.R;
    const auto ape = randn(static_cast<size_t>(m * cd), 0.5f, 10);
    Dev dape = up(ape), a = zeros(static_cast<size_t>(ring * cd)), g = zeros(static_cast<size_t>(ring * cd));
    std::vector<float> wa(a.n, 0.0f), wg(g.n, 0.0f);
    // Three ubatches of 200 positions: the last one wraps the ring.
    int64_t pos0 = 0;
    for (int step = 0; step < 3; ++step) {
      const int64_t n = 200;
      const auto ta = randn(static_cast<size_t>(n * cd), 1.0f, 20 + static_cast<uint32_t>(step));
      const auto tg = randn(static_cast<size_t>(n * cd), 1.0f, 30 + static_cast<uint32_t>(step));
      Dev dta = up(ta), dtg = up(tg);
      ds4_comp_store(dta.p(), dtg.p(), dape.p(), n, pos0, m, ring, cd, a.p(), g.p(), nullptr);
      for (int64_t t = 0; t < n; ++t) {  // arch_deepseek4.cpp compress(): the history
        const int64_t p = pos0 + t;
        for (int64_t i = 0; i < cd; ++i) {
          wa[static_cast<size_t>((p % ring) * cd + i)] = ta[static_cast<size_t>(t * cd + i)];
          wg[static_cast<size_t>((p % ring) * cd + i)] =
              tg[static_cast<size_t>(t * cd + i)] + ape[static_cast<size_t>((p % m) * cd + i)];
        }
      }
      expect_close(down(a), wa, "comp_store a, ubatch " + std::to_string(step), 0.0f);
      expect_close(down(g), wg, "comp_store g, ubatch " + std::to_string(step), 0.0f);
      const int64_t b_lo = (pos0 + m) / m - 1, b_hi = (pos0 + n) / m - 1, nb = b_hi - b_lo + 1;
      if (nb > 0) {
        Dev kappa = zeros(static_cast<size_t>(nb * d));
        ds4_compress_pool(a.p(), g.p(), ring, d, c, m, b_lo, nb, kappa.p(), nullptr);
        std::vector<float> wk(kappa.n);
        for (int64_t b = b_lo; b <= b_hi; ++b)
          ds4::compress_pool(wa.data(), wg.data(), ring, d, c, m, b * m, wk.data() + (b - b_lo) * d);
        expect_close(down(kappa), wk,
                     "compress_pool rows " + std::to_string(b_lo) + ".." + std::to_string(b_hi));
      }
      pos0 += n;
    }
    // RoPE of compressed rows at positions b·m (YaRN table as the backend builds it).
    RopeParams rp;
    rp.n_dims = static_cast<int>(R);
    rp.freq_base = 160000.0f;
    rp.freq_scale = 0.25f;
    rp.ext_factor = 1.0f;
    rp.attn_factor = 1.0f / (1.0f + 0.1f * std::log(4.0f));
    rp.beta_fast = 32.0f;
    rp.beta_slow = 1.0f;
    rp.n_ctx_orig = 1024;
    const int64_t n_ctx = 4096, rows = n_ctx / m, b0 = 1;
    std::vector<float> table(static_cast<size_t>(n_ctx * R));
    for (int64_t p = 0; p < n_ctx; ++p) rope_table(rp, p, table.data() + p * R);
    Dev dtab = up(table);
    const auto x = randn(static_cast<size_t>(rows * d), 1.0f, 40);
    Dev dx = up(x);
    const int64_t nr = rows - b0;
    ds4_rope_rows(dx.p() + b0 * d + d - R, nr, d, 1, d, dtab.p(), n_ctx, b0 * m, m, static_cast<int>(R),
                  false, nullptr);
    std::vector<float> wx = x;
    for (int64_t b = b0; b < rows; ++b)
      rope_apply(rp, table.data() + b * m * R, wx.data() + b * d + d - R, 1, d);
    expect_close(down(dx), wx, "rope_rows");
    EXPECT_THROW(
        ds4_rope_rows(dx.p(), 2, d, 1, d, dtab.p(), n_ctx, n_ctx - 1, m, static_cast<int>(R), false, nullptr),
        Error)
        << "a position beyond the table must be refused on the host";
  }
}

TEST_P(Ds4Kernels, IndexerScores) {
  const Shape sh = GetParam();
  const int64_t n = 40, pos0 = 300, HI = sh.HI, DI = sh.DI;
  const int64_t rows = (pos0 + n) / 4, stride = rows + 3;
  const auto q = randn(static_cast<size_t>(n * HI * DI), 1.0f, 50);
  const auto w = randn(static_cast<size_t>(n * HI), 1.0f, 51);
  const auto r = randn(static_cast<size_t>(rows * DI), 1.0f, 52);
  Dev dq = up(q), dw = up(w), dr = up(r), sc = up(std::vector<float>(static_cast<size_t>(n * stride), -7.0f));
  const float wscale = 1.0f / std::sqrt(static_cast<float>(DI * HI));
  ds4_indexer_scores(dq.p(), dw.p(), n, HI, DI, dr.p(), pos0, wscale, sc.p(), stride, nullptr);
  std::vector<float> want(sc.n, -7.0f);  // entries past a query's visible rows stay untouched
  for (int64_t t = 0; t < n; ++t) {
    const int64_t nvis = (pos0 + t + 1) / 4;
    for (int64_t j = 0; j < nvis; ++j) {
      want[static_cast<size_t>(t * stride + j)] =
          ds4::indexer_score(q.data() + t * HI * DI, w.data() + t * HI, r.data() + j * DI, HI, DI, wscale);
    }
  }
  expect_close(down(sc), want, "indexer scores");
  EXPECT_THROW(ds4_indexer_scores(dq.p(), dw.p(), n, HI, DI, dr.p(), pos0, wscale, sc.p(), rows - 1, nullptr),
               Error);
}

TEST_P(Ds4Kernels, SlidingWindowAttentionWithSinks) {
  const Shape sh = GetParam();
  const int64_t H = sh.H, D = sh.D, n_swa = sh.n_swa, U = 256, RW = n_swa + U;
  const int64_t n_comp = 60, sel_stride = sh.KI;
  const float kq_scale = 1.0f / std::sqrt(static_cast<float>(D));
  // Two cases: a prefill from 0 (window partly empty) and a ubatch at 500 (ring wrapped).
  for (const int64_t pos0 : {int64_t{0}, int64_t{500}}) {
    SCOPED_TRACE("pos0 " + std::to_string(pos0));
    const int64_t n = 70;
    const auto q = randn(static_cast<size_t>(n * H * D), 1.0f, 60);
    const auto kraw = randn(static_cast<size_t>(RW * D), 1.0f, 61);
    const auto comp = randn(static_cast<size_t>(n_comp * D), 1.0f, 62);
    const auto sinks = randn(static_cast<size_t>(H), 0.5f, 63);
    std::mt19937 rng(64);
    std::vector<int32_t> sel(static_cast<size_t>(n * sel_stride)), cnt(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
      cnt[static_cast<size_t>(t)] = static_cast<int32_t>(rng() % static_cast<uint32_t>(sel_stride + 1));
      for (int64_t i = 0; i < sel_stride; ++i)
        sel[static_cast<size_t>(t * sel_stride + i)] = static_cast<int32_t>(rng() % n_comp);
    }
    Dev dq = up(q), dk = up(kraw), dc = up(comp), ds = up(sinks);
    DeviceBuffer dsel = up_i32(sel), dcnt = up_i32(cnt);
    const int64_t max_keys = n_swa + sel_stride;
    Dev scratch = zeros(static_cast<size_t>(n * H * max_keys)), out = zeros(static_cast<size_t>(n * H * D));
    ds4_attend(dq.p(), n, H, D, pos0, dk.p(), RW, n_swa, dc.p(), dsel.as<int32_t>(), sel_stride,
               dcnt.as<int32_t>(), ds.p(), kq_scale, scratch.p(), max_keys, out.p(), nullptr);
    std::vector<float> want(out.n), sc;
    std::vector<const float*> keys;
    for (int64_t t = 0; t < n; ++t) {
      const int64_t p = pos0 + t;
      keys.clear();
      for (int64_t j = std::max<int64_t>(0, p - n_swa + 1); j <= p; ++j)
        keys.push_back(kraw.data() + (j % RW) * D);
      for (int32_t i = 0; i < cnt[static_cast<size_t>(t)]; ++i)
        keys.push_back(comp.data() + sel[static_cast<size_t>(t * sel_stride + i)] * D);
      sc.resize(keys.size());
      for (int64_t h = 0; h < H; ++h) {
        ds4::attend_sink(q.data() + (t * H + h) * D, keys.data(), static_cast<int64_t>(keys.size()),
                         sinks[static_cast<size_t>(h)], D, kq_scale, sc.data(),
                         want.data() + (t * H + h) * D);
      }
    }
    expect_close(down(out), want, "attention with sinks");
    EXPECT_THROW(
        ds4_attend(dq.p(), n, H, D, pos0, dk.p(), RW, n_swa, dc.p(), dsel.as<int32_t>(), sel_stride,
                   dcnt.as<int32_t>(), ds.p(), kq_scale, scratch.p(), max_keys - 1, out.p(), nullptr),
        Error);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Ds4Kernels, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<Shape>& p) { return std::string(p.param.name); });

// ---------------------------------------------------------------------------------------------
// End to end.

const std::string kDir = std::string(MOEPACK_SHARED_DIR) + "/fixtures/deepseek4-tiny/";

struct Case {
  const char* name;
  const char* model;  // file name under kDir and reference prefix under kDir/ref
};
const Case kCases[] = {
    {"Q4_K_M", "deepseek4-tiny-Q4_K_M"},
    {"Q2_K", "deepseek4-tiny-Q2_K"},
    {"MXFP4_MOE", "deepseek4-tiny-MXFP4_MOE"},
};

EngineSettings test_settings(const char* backend) {
  EngineSettings s;
  s.backend = backend;
  s.threads = 4;
  s.n_ctx = 512;  // the references' n_ctx
  s.cache_vram_reserve_mib = 0;
  return s;
}

std::string top5(const std::vector<float>& l) {
  std::vector<int32_t> o(l.size());
  std::iota(o.begin(), o.end(), 0);
  std::partial_sort(o.begin(), o.begin() + 5, o.end(),
                    [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  std::ostringstream s;
  for (int i = 0; i < 5; ++i)
    s << o[static_cast<size_t>(i)] << ":" << l[static_cast<size_t>(o[static_cast<size_t>(i)])] << " ";
  return s.str();
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b, size_t* at = nullptr) {
  float d = 0.0f;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const float x = std::fabs(a[i] - b[i]);
    if (!(x <= d)) {
      d = x;
      if (at) *at = i;
    }
  }
  return d;
}

// Greedy continuation of n tokens from `logits` (which it updates), one decode per token.
std::vector<int32_t> greedy(Backend& be, std::vector<float>& logits, size_t n,
                            std::vector<std::vector<float>>* steps) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < n; ++i) {
    if (steps) steps->push_back(logits);
    const int32_t next = argmax(logits);
    out.push_back(next);
    if (i + 1 < n) be.forward(std::span<const int32_t>(&next, 1), logits);
  }
  return out;
}

class Ds4Fixture : public ::testing::TestWithParam<Case> {
 protected:
  std::string model_path() const { return kDir + GetParam().model + ".gguf"; }
  std::string ref_path() const { return kDir + "ref/" + GetParam().model + ".f32-dequant.json"; }
  void SetUp() override {
    if (!std::filesystem::exists(model_path()))
      GTEST_SKIP() << model_path() << " not carried to this machine";
  }
};

TEST_P(Ds4Fixture, MatchesCpuBackendAndReference) {
  const nlohmann::json ref = read_json(ref_path());
  const auto src = ModelSource::open(model_path());
  auto cpu = make_backend(src, test_settings("cpu"));
  auto gpu = make_cuda_backend_deepseek4(src, test_settings("cuda"));
  ASSERT_EQ(gpu->name(), "cuda");
  const size_t nv = gpu->config().n_vocab;
  std::vector<float> lc(nv), lg(nv);
  int checked = 0;
  float worst = 0.0f;
  for (const auto& p : ref["prompts"]) {
    const auto tokens = p["token_ids"].get<std::vector<int32_t>>();
    SCOPED_TRACE("prompt " + std::to_string(checked) + " (" + std::to_string(tokens.size()) + " tokens)");
    cpu->truncate(0);
    gpu->truncate(0);
    cpu->forward(tokens, lc);
    const auto t0 = std::chrono::steady_clock::now();
    gpu->forward(tokens, lg);
    const double prefill_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    size_t at = 0;
    const float d = max_diff(lc, lg, &at);
    worst = std::max(worst, d);
    EXPECT_LT(d, 1e-3f) << "prompt logits: max |cuda - cpu| " << d << " at id " << at << "\n  cpu top-5 "
                        << top5(lc) << "\n  gpu top-5 " << top5(lg);
    const auto want = p["greedy"]["ids"].get<std::vector<int32_t>>();
    std::vector<std::vector<float>> sc, sg;
    const auto ours_cpu = greedy(*cpu, lc, want.size(), &sc);
    const auto t1 = std::chrono::steady_clock::now();
    const auto ours_gpu = greedy(*gpu, lg, want.size(), &sg);
    const double decode_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    std::printf(
        "  prompt %d: %zu tokens, max |cuda - cpu| logit %.3g; GPU prefill %.1f ms (%.0f tokens/s), %zu "
        "decodes %.1f ms (%.0f tokens/s)\n",
        checked, tokens.size(), static_cast<double>(d), prefill_ms,
        1e3 * static_cast<double>(tokens.size()) / prefill_ms, want.size() - 1, decode_ms,
        1e3 * static_cast<double>(want.size() - 1) / decode_ms);
    EXPECT_EQ(ours_gpu, ours_cpu);
    EXPECT_EQ(ours_gpu, want) << "llama.cpp f32-dequant greedy";
    for (size_t i = 0; i < ours_gpu.size(); ++i) {
      const float ds = max_diff(sc[i], sg[i]);
      worst = std::max(worst, ds);
      if (ours_gpu[i] != ours_cpu[i] || ds >= 1e-3f) {
        ADD_FAILURE() << "greedy step " << i << ": gpu token " << ours_gpu[i] << " cpu token " << ours_cpu[i]
                      << ", max logit diff " << ds << "\n  cpu top-5 " << top5(sc[i]) << "\n  gpu top-5 "
                      << top5(sg[i]);
        break;
      }
    }
    ++checked;
  }
  std::printf("  %s: worst |cuda - cpu| logit over prompts and greedy steps %.3g\n", GetParam().name,
              static_cast<double>(worst));
  RecordProperty("worst_logit_diff", std::to_string(worst));
  EXPECT_EQ(checked, 5);
  const BackendStats s = gpu->stats();
  EXPECT_EQ(s.expert_selections, s.experts_computed);
  EXPECT_GT(s.expert_selections, 0u);
}

// All logits of the 386-token prompt (two ubatches, rings wrapped, indexer top-k active) and
// of prompt 0, and the routing the observer sees, vs the CPU backend.
TEST_P(Ds4Fixture, AllLogitsAndRoutingMatchCpu) {
  const nlohmann::json ref = read_json(ref_path());
  const auto src = ModelSource::open(model_path());
  auto cpu = make_backend(src, test_settings("cpu"));
  auto gpu = make_cuda_backend_deepseek4(src, test_settings("cuda"));
  for (const int pi : {0, 3}) {
    const auto tokens = ref["prompts"][static_cast<size_t>(pi)]["token_ids"].get<std::vector<int32_t>>();
    SCOPED_TRACE("prompt " + std::to_string(pi));
    cpu->truncate(0);
    gpu->truncate(0);
    std::vector<std::vector<int32_t>> rc, rg;
    cpu->set_routing_observer([&](uint32_t, uint32_t, std::span<const int32_t> e, std::span<const float>) {
      rc.emplace_back(e.begin(), e.end());
    });
    gpu->set_routing_observer([&](uint32_t, uint32_t, std::span<const int32_t> e, std::span<const float>) {
      rg.emplace_back(e.begin(), e.end());
    });
    const size_t nv = gpu->config().n_vocab;
    std::vector<float> lc(nv), lg(nv), ac(nv * tokens.size()), ag(nv * tokens.size());
    cpu->forward(tokens, lc, ac);
    gpu->forward(tokens, lg, ag);
    size_t at = 0;
    const float d = max_diff(ac, ag, &at);
    EXPECT_LT(d, 1e-3f) << "all positions: max |cuda - cpu| " << d << " at position " << at / nv << " id "
                        << at % nv;
    // Per position: the first one beyond tolerance (which block of the sequence breaks).
    for (size_t t = 0; t < tokens.size(); ++t) {
      const std::vector<float> a(ac.begin() + static_cast<std::ptrdiff_t>(t * nv),
                                 ac.begin() + static_cast<std::ptrdiff_t>((t + 1) * nv));
      const std::vector<float> b(ag.begin() + static_cast<std::ptrdiff_t>(t * nv),
                                 ag.begin() + static_cast<std::ptrdiff_t>((t + 1) * nv));
      const float dt = max_diff(a, b);
      if (dt >= 1e-3f) {
        ADD_FAILURE() << "first position beyond 1e-3: " << t << " (diff " << dt << ")\n  cpu top-5 "
                      << top5(a) << "\n  gpu top-5 " << top5(b);
        break;
      }
    }
    std::printf("  prompt %d: all %zu positions, max |cuda - cpu| logit %.3g\n", pi, tokens.size(),
                static_cast<double>(d));
    EXPECT_EQ(0, std::memcmp(lg.data(), ag.data() + (tokens.size() - 1) * nv, nv * sizeof(float)));
    ASSERT_EQ(rc.size(), rg.size());
    size_t first_diff = rc.size();
    for (size_t i = 0; i < rc.size(); ++i) {
      if (rc[i] != rg[i]) {
        first_diff = i;
        break;
      }
    }
    EXPECT_EQ(first_diff, rc.size()) << "routing differs first at observer call " << first_diff;
    EXPECT_EQ(gpu->n_past(), tokens.size());
  }
}

// truncate(n) then the rest equals one pass, both where the rings still hold what is needed
// (O(1)) and where the state is recomputed; also a single decode after truncate().
TEST_P(Ds4Fixture, TruncateThenDecodeEqualsFreshRun) {
  const nlohmann::json ref = read_json(ref_path());
  const auto tokens = ref["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 386u);
  const auto src = ModelSource::open(model_path());
  auto gpu = make_cuda_backend_deepseek4(src, test_settings("cuda"));
  auto cpu = make_backend(src, test_settings("cpu"));
  const size_t nv = gpu->config().n_vocab;
  std::vector<float> fresh(nv), lc(nv);
  gpu->forward(tokens, fresh);
  cpu->forward(tokens, lc);
  EXPECT_LT(max_diff(fresh, lc), 1e-3f);
  for (const uint32_t cut : {385u, 300u, 130u, 128u, 65u, 3u, 0u}) {
    SCOPED_TRACE("truncate to " + std::to_string(cut));
    gpu->truncate(cut);
    EXPECT_EQ(gpu->n_past(), cut);
    std::vector<float> got(nv);
    gpu->forward(std::span<const int32_t>(tokens).subspan(cut), got);
    size_t at = 0;
    const float d = max_diff(got, fresh, &at);
    EXPECT_LT(d, 1e-4f) << "after truncate: max diff " << d << " at id " << at << "\n  fresh top-5 "
                        << top5(fresh) << "\n  trunc top-5 " << top5(got);
    std::printf("  truncate(%u) + rest vs one pass: max diff %.3g\n", cut, static_cast<double>(d));
  }
  // Decode after truncate: drop the last token and decode it again.
  gpu->truncate(385);
  std::vector<float> dec(nv);
  gpu->forward(std::span<const int32_t>(&tokens[385], 1), dec);
  EXPECT_LT(max_diff(dec, fresh), 1e-4f) << "decode after truncate(385)";
  EXPECT_THROW(gpu->truncate(387), Error);
  // A failing call (a token outside the vocabulary) leaves the cache as it was.
  gpu->truncate(385);
  const int32_t bad[2] = {tokens[385], static_cast<int32_t>(nv)};
  EXPECT_THROW(gpu->forward(bad, dec), Error);
  EXPECT_EQ(gpu->n_past(), 385u);
  gpu->forward(std::span<const int32_t>(&tokens[385], 1), dec);
  EXPECT_LT(max_diff(dec, fresh), 1e-4f) << "decode after a failed forward()";
}

TEST_P(Ds4Fixture, PackMatchesGgufOnGpuAtEveryBudget) {
  test::TempDir dir("moepack-ds4-cuda");
  BuildOptions bo;
  bo.source = model_path();
  bo.out_dir = dir.file("pack");
  bo.safety_margin_bytes = 0;
  bo.hash_sources = false;
  build_pack(bo);
  const nlohmann::json ref = read_json(ref_path());
  const auto tokens = ref["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  auto gguf = make_cuda_backend_deepseek4(ModelSource::open(model_path()), test_settings("cuda"));
  const size_t nv = gguf->config().n_vocab;
  auto run = [&](Backend& be) {
    std::vector<float> all, logits(nv);
    be.forward(tokens, logits);
    all.insert(all.end(), logits.begin(), logits.end());
    for (int i = 0; i < 8; ++i) {
      const int32_t next = argmax(logits);
      be.forward(std::span<const int32_t>(&next, 1), logits);
      all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
  };
  const std::vector<float> want = run(*gguf);
  auto src = ModelSource::open(bo.out_dir);
  ASSERT_TRUE(src->is_pack());
  const uint64_t slot = src->pack()->layout().max_stride;
  uint64_t experts = 0;
  for (const auto& l : src->pack()->layout().layers) experts += l.n_experts;
  const uint32_t k = src->config().n_expert_used;
  for (const uint64_t slots : {experts, experts / 2, static_cast<uint64_t>(k)}) {
    SCOPED_TRACE("cache slots " + std::to_string(slots));
    EngineSettings s = test_settings("cuda");
    s.cache_bytes = slots * slot;
    s.stage_slots = 3;
    auto be = make_cuda_backend_deepseek4(src, s);
    EXPECT_EQ(be->stats().cache_slots, slots);
    const std::vector<float> got = run(*be);
    ASSERT_EQ(got.size(), want.size());
    size_t at = 0;
    const float d = max_diff(got, want, &at);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
        << "pack vs GGUF on the GPU: max diff " << d << " at step " << at / nv << " id " << at % nv;
    const BackendStats st = be->stats();
    std::printf("  %llu slots: misses %llu evictions %llu read %llu B\n",
                static_cast<unsigned long long>(slots), static_cast<unsigned long long>(st.cache_misses),
                static_cast<unsigned long long>(st.cache_evictions),
                static_cast<unsigned long long>(st.pack_read_bytes));
    EXPECT_GT(st.cache_misses, 0u);
    EXPECT_GT(st.pack_read_bytes, 0u);
    EXPECT_EQ(st.expert_selections, st.experts_computed);
    if (slots == k) {
      EXPECT_GT(st.cache_evictions, 0u);
    }
    if (slots == experts) {
      EXPECT_EQ(st.cache_evictions, 0u);
    }
  }
}

// A missing or mis-shaped tensor fails the load with a FormatError naming the file and the
// tensor (copies of the fixture with one tensor renamed, or one dimension changed, in place).
TEST_P(Ds4Fixture, MissingOrMisShapedTensorIsNamed) {
  const std::vector<uint8_t> bytes = test::read_file(model_path());
  const auto find = [&](const std::string& name) {
    const auto it = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
    return it == bytes.end() ? size_t{0} : static_cast<size_t>(it - bytes.begin());
  };
  test::TempDir dir("moepack-ds4-bad");
  struct Bad {
    std::string tensor, expect;
    bool rename;
  };
  for (const Bad& b : {Bad{"blk.2.attn_compressor_ape.weight", "blk.2.attn_compressor_ape.weight", true},
                       Bad{"blk.0.ffn_gate_tid2eid.weight", "blk.0.ffn_gate_tid2eid.weight", true},
                       Bad{"blk.1.attn_sinks.weight", "blk.1.attn_sinks.weight", false}}) {
    SCOPED_TRACE(b.tensor);
    const size_t at = find(b.tensor);
    ASSERT_GT(at, 0u) << b.tensor << " not found in " << model_path();
    std::vector<uint8_t> bad = bytes;
    if (b.rename) {
      bad[at + b.tensor.size() - 7] = 'X';  // ".weight" -> "Xweight": the tensor is gone
    } else {
      uint64_t ne0 = 0;  // after the name: u32 n_dims, then u64 ne[0]: halve it (8 heads -> 4)
      std::memcpy(&ne0, bad.data() + at + b.tensor.size() + 4, 8);
      ASSERT_EQ(ne0, 8u);
      ne0 = 4;
      std::memcpy(bad.data() + at + b.tensor.size() + 4, &ne0, 8);
    }
    const std::string path = dir.file("bad.gguf");
    test::write_file(path, bad);
    try {
      make_cuda_backend_deepseek4(ModelSource::open(path), test_settings("cuda"));
      ADD_FAILURE() << "expected a FormatError";
    } catch (const FormatError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(b.expect), std::string::npos) << msg;
      EXPECT_NE(msg.find("bad.gguf"), std::string::npos) << msg;
    }
  }
}

// A VRAM reserve larger than any device: the load fails before allocating, with the numbers.
TEST_P(Ds4Fixture, OutOfVramFailsWithNumbers) {
  EngineSettings s = test_settings("cuda");
  s.cache_vram_reserve_mib = uint64_t{1} << 30;  // 1 PiB
  try {
    make_cuda_backend_deepseek4(ModelSource::open(model_path()), s);
    ADD_FAILURE() << "expected an out-of-VRAM Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("not enough VRAM"), std::string::npos) << msg;
    EXPECT_NE(msg.find("MiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(GetParam().model) + ".gguf"), std::string::npos) << msg;
  }
}

// Through the factory and the Session: backend "cuda" and "auto" pick this backend for a
// deepseek4 model; greedy generation on the GPU gives the CPU session's tokens and llama.cpp's,
// also for a second prompt that reuses the first one's KV prefix (Session -> truncate()).
TEST_P(Ds4Fixture, FactoryAndSessionUseTheCudaBackend) {
  const auto src = ModelSource::open(model_path());
  EXPECT_EQ(make_backend(src, test_settings("cuda"))->name(), "cuda");
  EXPECT_EQ(make_backend(src, test_settings("auto"))->name(), "cuda");
  const nlohmann::json ref = read_json(ref_path());
  GenerateOptions o;
  o.max_tokens = 24;
  o.sampling.temperature = 0.0f;
  o.ignore_eos = true;
  auto gs = Session::load(model_path(), test_settings("cuda"));
  auto cs = Session::load(model_path(), test_settings("cpu"));
  ASSERT_EQ(gs->backend().name(), "cuda");
  ASSERT_EQ(cs->backend().name(), "cpu");
  int call = 0;
  for (const int pi : {0, 1, 1}) {  // the third call reuses 13 of prompt 1's 14 tokens
    SCOPED_TRACE("call " + std::to_string(call) + ", prompt " + std::to_string(pi));
    const std::string text = test::read_text(kDir + "prompts/prompt" + std::to_string(pi) + ".txt");
    const GenerateResult g = gs->generate_text(text, o);
    const GenerateResult c = cs->generate_text(text, o);
    EXPECT_EQ(g.prompt_tokens,
              ref["prompts"][static_cast<size_t>(pi)]["token_ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(g.tokens, c.tokens);
    EXPECT_EQ(g.tokens, ref["prompts"][static_cast<size_t>(pi)]["greedy"]["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(g.reused_tokens, c.reused_tokens);
    if (call > 0) {
      EXPECT_EQ(g.reused_tokens, call == 1 ? 1u : g.prompt_tokens.size() - 1)
          << "KV prefix kept by the Session";
    }
    std::printf("  session call %d (prompt %d): reused %u, prefill %.0f tokens/s, decode %.0f tokens/s\n",
                call, pi, g.reused_tokens, g.prefill_tokens_per_s, g.decode_tokens_per_s);
    ++call;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Ds4Fixture, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace moepack

// As MOEPACK_GPU_TEST_MAIN, plus the "cuda" backend registered for make_backend / Session.
int main(int argc, char** argv) {
  const auto q = moepack::gpu::query_devices();
  if (q.devices.empty()) {
    std::fprintf(stderr, "no CUDA device (%s): skipping GPU tests\n", q.error.c_str());
    return 77;
  }
  moepack::gpu::register_cuda_backend();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
