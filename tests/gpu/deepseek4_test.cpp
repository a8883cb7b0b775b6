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
#include "core/gguf.h"
#include "core/model_source.h"
#include "core/session.h"
#include "gpu/cuda_arch_backends.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_routing.h"
#include "gpu/kernels_deepseek4.h"
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
using test::max_abs_diff;
using test::parity_settings;
using test::randn;
using test::read_json;
using test::top_text;
using test::up;
using test::up_i32;
using test::zeros;

// ---------------------------------------------------------------------------------------------
// Kernel parity (helpers: tests/gpu/kernel_parity.h).

struct Shape {
  const char* name;
  int64_t E, HC, H, D, R, HI, DI, n_swa, KI;
};
// deepseek4-tiny (fixture README) and a V4-Flash-like larger one.
const Shape kShapes[] = {{"tiny", 256, 4, 8, 128, 64, 32, 64, 64, 16},
                         {"large", 1024, 4, 16, 512, 64, 64, 128, 128, 64}};

class Ds4Kernels : public ::testing::TestWithParam<Shape> {};

// ds4_hc_weights on n tokens of random mixing logits (scale sd, seed) and bases (base_seed) against
// ds4::hc_weights; returns the GPU's pre and the CPU's pre, post and M.
struct HcWeights {
  Dev pre;
  std::vector<float> mix, wpre, wpost, wM;
};
HcWeights expect_hc_weights_match_cpu(int64_t n, int64_t HC, uint32_t iters, float sd, uint32_t seed,
                                      uint32_t base_seed) {
  const int64_t NHC = (2 + HC) * HC;
  const float eps = 1e-6f;
  HcWeights r;
  r.mix = randn(static_cast<size_t>(n * NHC), sd, seed);
  const auto base = randn(static_cast<size_t>(NHC), 0.5f, base_seed);
  const std::vector<float> scale = {0.7f, 1.2f, 0.9f};
  Dev dmix = up(r.mix), dbase = up(base), dscale = up(scale);
  r.pre = zeros(static_cast<size_t>(n * HC));
  Dev post = zeros(static_cast<size_t>(n * HC)), M = zeros(static_cast<size_t>(n * HC * HC));
  ds4_hc_weights(dmix.p(), n, dbase.p(), dscale.p(), HC, iters, eps, r.pre.p(), post.p(), M.p(), nullptr);
  r.wpre.resize(r.pre.n);
  r.wpost.resize(post.n);
  r.wM.resize(M.n);
  for (int64_t t = 0; t < n; ++t) {
    ds4::hc_weights(r.mix.data() + t * NHC, base.data(), scale.data(), HC, iters, eps, r.wpre.data() + t * HC,
                    r.wpost.data() + t * HC, r.wM.data() + t * HC * HC);
  }
  expect_close(down(r.pre), r.wpre, "hc_weights pre");
  expect_close(down(post), r.wpost, "hc_weights post");
  expect_close(down(M), r.wM, "hc_weights Sinkhorn M");
  return r;
}

TEST_P(Ds4Kernels, HyperConnections) {
  const Shape sh = GetParam();
  const int64_t n = 37, HC = sh.HC, NHC = (2 + HC) * HC, E = sh.E;
  const float eps = 1e-6f;
  HcWeights hw = expect_hc_weights_match_cpu(n, HC, 20, 1.0f, 1, 2);
  const std::vector<float>&mix = hw.mix, &wpre = hw.wpre, &wpost = hw.wpost, &wM = hw.wM;
  Dev& pre = hw.pre;
  const auto base = randn(static_cast<size_t>(NHC), 0.5f, 2);
  const std::vector<float> scale = {0.7f, 1.2f, 0.9f};
  Dev dbase = up(base), dscale = up(scale);

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

// The Sinkhorn weights (one warp a token, HC x HC elements over its lanes: a second register
// each past 32 elements) at every stream count the launcher takes, against the CPU twin.
TEST(Ds4HyperConnectionWeights, EveryStreamCountMatchesTheCpu) {
  for (int64_t HC = 1; HC <= 8; ++HC) {
    SCOPED_TRACE("HC " + std::to_string(HC));
    // HC 3 with one iteration: the rows' normalisation alone.
    expect_hc_weights_match_cpu(45, HC, HC == 3 ? 1 : 20, 1.5f, static_cast<uint32_t>(10 + HC),
                                static_cast<uint32_t>(30 + HC));
  }
}

// The Sinkhorn matrix bit for bit: with every column's logits either its maximum or -inf, the
// softmax's exponentials are exactly 1 and 0 on both sides, and what is left (additions and
// divisions, rounded alike by the GPU and the CPU) must give ds4::hc_weights's M exactly.
TEST(Ds4HyperConnectionWeights, SinkhornMatrixIsTheCpuLoopsBitForBit) {
  std::mt19937 rng(91);
  for (int64_t HC = 1; HC <= 8; ++HC) {
    SCOPED_TRACE("HC " + std::to_string(HC));
    const int64_t n = 45, NHC = (2 + HC) * HC;
    const uint32_t iters = 20;
    const float eps = 1e-6f;
    std::vector<float> mix = randn(static_cast<size_t>(n * NHC), 1.0f, static_cast<uint32_t>(50 + HC));
    std::vector<float> base = randn(static_cast<size_t>(NHC), 0.5f, static_cast<uint32_t>(70 + HC));
    std::fill(base.begin() + 2 * HC, base.end(), 0.0f);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t src = 0; src < HC; ++src) {
        const float top = 0.25f * static_cast<float>(rng() % 9) - 1.0f;                // the column's maximum
        const int64_t keep = static_cast<int64_t>(rng() % static_cast<uint32_t>(HC));  // at least one
        for (int64_t dst = 0; dst < HC; ++dst) {
          const bool on = dst == keep || rng() % 3 == 0;
          mix[static_cast<size_t>(t * NHC + 2 * HC + HC * src + dst)] = on ? top : -INFINITY;
        }
      }
    }
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
    const std::vector<float> got = down(M);
    ASSERT_EQ(got.size(), wM.size());
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &wM[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << "of " << got.size() << " elements of M";
  }
}

TEST(Ds4HyperConnectionWeights, MoreThanEightStreamsAreRefused) {
  Dev z = zeros(9 * 11 * 9);
  EXPECT_THROW(ds4_hc_weights(z.p(), 1, z.p(), z.p(), 9, 20, 1e-6f, z.p(), z.p(), z.p(), nullptr), Error);
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
  const int64_t n_comp = 60;
  const float kq_scale = 1.0f / std::sqrt(static_cast<float>(D));
  // Cases: a prefill from 0 (window partly empty) and a ubatch at 500 (ring wrapped); the shape's
  // top-k of compressed rows and 600 (up to n_swa + 600 keys: the output's keys staged in
  // several chunks of 256).
  for (const auto& [pos0, sel_stride] : {std::pair<int64_t, int64_t>{0, sh.KI}, {500, sh.KI}, {500, 600}}) {
    SCOPED_TRACE("pos0 " + std::to_string(pos0) + " sel_stride " + std::to_string(sel_stride));
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

// The compressed rows each query sees (ds4_select_rows) against the CPU reference's own choice
// (core/arch_deepseek4.cpp: every completed row, or std::partial_sort of the indexer's scores
// with its comparator: higher first, ties to the lower row). Scores drawn from a handful of
// values (ties everywhere, +0 and -0 among them) and from a normal distribution; top-k of 16 (the
// fixture's), 600 (padded to 1024) and 4096 (the largest); ratio 128; direct launches and the
// device-position launches of a decode graph.
TEST(Ds4SelectRows, MatchesTheCpuComparatorOrderExactly) {
  struct Case {
    int64_t ratio, top_k, pos0, n;
    bool ties;
  };
  const Case cases[] = {{4, 16, 0, 70, true},       {4, 16, 500, 40, true},    {4, 16, 500, 40, false},
                        {4, 600, 3000, 5, true},    {4, 600, 3000, 5, false},  {4, 512, 20000, 3, true},
                        {4, 4096, 20000, 2, false}, {4, 4096, 16380, 2, true}, {128, 16, 1000, 30, true},
                        {4, 16, 2, 1, true}};
  std::mt19937 rng(71);
  for (const Case& c : cases) {
    SCOPED_TRACE("ratio " + std::to_string(c.ratio) + " top_k " + std::to_string(c.top_k) + " pos0 " +
                 std::to_string(c.pos0) + " n " + std::to_string(c.n) + (c.ties ? " ties" : " normal"));
    const int64_t last = c.pos0 + c.n - 1, most = (last + 1) / c.ratio;
    const int64_t stride = most + 5;
    const int64_t sel_stride = c.ratio == 4 ? std::min(c.top_k, most) + 2 : most + 2;
    std::vector<float> scores(static_cast<size_t>(c.n * stride));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : scores) {
      v = c.ties ? static_cast<float>(static_cast<int>(rng() % 7) - 3) * 0.25f : normal(rng);
      if (c.ties && v == 0.0f && rng() % 2) v = -0.0f;
    }
    // The CPU reference's lists.
    std::vector<std::vector<int32_t>> want(static_cast<size_t>(c.n));
    for (int64_t t = 0; t < c.n; ++t) {
      const int64_t nvis = (c.pos0 + t + 1) / c.ratio;
      std::vector<int32_t>& w = want[static_cast<size_t>(t)];
      w.resize(static_cast<size_t>(nvis));
      std::iota(w.begin(), w.end(), 0);
      if (c.ratio == 4 && nvis > c.top_k) {
        const float* score = scores.data() + t * stride;
        std::partial_sort(w.begin(), w.begin() + c.top_k, w.end(), [&](int32_t p1, int32_t p2) {
          return score[p1] > score[p2] || (score[p1] == score[p2] && p1 < p2);
        });
        w.resize(static_cast<size_t>(c.top_k));
      }
    }
    Dev dsc = up(scores);
    const auto check = [&](const DeviceBuffer& sel, const DeviceBuffer& cnt, int64_t t0, int64_t rows,
                           const char* how) {
      std::vector<int32_t> got_sel(static_cast<size_t>(rows * sel_stride)),
          got_cnt(static_cast<size_t>(rows));
      MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
      MOEPACK_CUDA_CHECK(
          cudaMemcpy(got_sel.data(), sel.bytes_ptr(), got_sel.size() * 4, cudaMemcpyDeviceToHost));
      MOEPACK_CUDA_CHECK(
          cudaMemcpy(got_cnt.data(), cnt.bytes_ptr(), got_cnt.size() * 4, cudaMemcpyDeviceToHost));
      for (int64_t i = 0; i < rows; ++i) {
        const std::vector<int32_t>& w = want[static_cast<size_t>(t0 + i)];
        ASSERT_EQ(got_cnt[static_cast<size_t>(i)], static_cast<int32_t>(w.size()))
            << how << ", query " << t0 + i;
        const std::vector<int32_t> g(got_sel.begin() + i * sel_stride,
                                     got_sel.begin() + i * sel_stride + w.size());
        EXPECT_EQ(g, w) << how << ", query " << t0 + i;
      }
    };
    DeviceBuffer sel = up_i32(std::vector<int32_t>(static_cast<size_t>(c.n * sel_stride), -1));
    DeviceBuffer cnt = up_i32(std::vector<int32_t>(static_cast<size_t>(c.n), -1));
    ds4_select_rows(dsc.p(), stride, c.n, c.pos0, c.ratio, c.top_k, sel.as<int32_t>(), sel_stride,
                    cnt.as<int32_t>(), nullptr);
    check(sel, cnt, 0, c.n, "direct");
    // A decode graph's launch: one query at the position read from device memory, its scores
    // at the start of the table.
    for (const int64_t t : {int64_t{0}, c.n - 1}) {
      Dev one = up(std::vector<float>(scores.begin() + t * stride, scores.begin() + (t + 1) * stride));
      DeviceBuffer pos = up_i32({static_cast<int32_t>(c.pos0 + t)});
      DeviceBuffer sel1 = up_i32(std::vector<int32_t>(static_cast<size_t>(sel_stride), -1));
      DeviceBuffer cnt1 = up_i32({-1});
      ds4_select_rows(one.p(), stride, 1, 0, c.ratio, c.top_k, sel1.as<int32_t>(), sel_stride,
                      cnt1.as<int32_t>(), nullptr, pos.as<int32_t>(), last + 1);
      check(sel1, cnt1, t, 1, "device position");
    }
    // Refused on the host: a table too narrow for the last query's rows.
    const int64_t fit = c.ratio == 4 ? std::min(c.top_k, most) : most;
    if (fit > 0) {
      EXPECT_THROW(ds4_select_rows(dsc.p(), stride, c.n, c.pos0, c.ratio, c.top_k, sel.as<int32_t>(), fit - 1,
                                   cnt.as<int32_t>(), nullptr),
                   Error);
    }
  }
  // Refused: a top-k beyond the shared-memory sort where a query must sort; ratio 0.
  Dev dsc = zeros(8192);
  DeviceBuffer sel = up_i32(std::vector<int32_t>(8192, 0)), cnt = up_i32({0});
  EXPECT_THROW(
      ds4_select_rows(dsc.p(), 8192, 1, 20000, 4, 4097, sel.as<int32_t>(), 8192, cnt.as<int32_t>(), nullptr),
      Error);
  EXPECT_THROW(
      ds4_select_rows(dsc.p(), 8192, 1, 20, 0, 16, sel.as<int32_t>(), 8192, cnt.as<int32_t>(), nullptr),
      Error);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Ds4Kernels, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<Shape>& p) { return std::string(p.param.name); });

// ---------------------------------------------------------------------------------------------
// End to end.

const test::ArchCase kCases[] = {
    {"Q4_K_M", "deepseek4-tiny-Q4_K_M"},
    {"Q2_K", "deepseek4-tiny-Q2_K"},
    {"MXFP4_MOE", "deepseek4-tiny-MXFP4_MOE"},
};

class Ds4Fixture : public test::GpuArchFixture {
 protected:
  Ds4Fixture()
      : GpuArchFixture(std::string(MOEPACK_SHARED_DIR) + "/fixtures/deepseek4-tiny/",
                       make_cuda_backend_deepseek4) {}
};

TEST_P(Ds4Fixture, MatchesCpuBackendAndReference) { expect_matches_cpu_and_reference(); }

// All logits of the 386-token prompt (two ubatches, rings wrapped, indexer top-k active) and
// of prompt 0, and the routing the observer sees, vs the CPU backend.
TEST_P(Ds4Fixture, AllLogitsAndRoutingMatchCpu) { expect_all_logits_and_routing_match_cpu({0, 3}); }

// truncate(n) then the rest equals one pass, both where the rings still hold what is needed
// (O(1)) and where the state is recomputed; also a single decode after truncate().
TEST_P(Ds4Fixture, TruncateThenDecodeEqualsFreshRun) {
  const nlohmann::json ref = read_json(ref_path());
  const auto tokens = ref["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 386u);
  const auto src = ModelSource::open(model_path());
  auto gpu = make_cuda_backend_deepseek4(src, parity_settings("cuda"));
  auto cpu = make_backend(src, parity_settings("cpu"));
  const size_t nv = gpu->config().n_vocab;
  std::vector<float> fresh(nv), lc(nv);
  gpu->forward(tokens, fresh);
  cpu->forward(tokens, lc);
  EXPECT_LT(max_abs_diff(fresh, lc), 1e-3f);
  for (const uint32_t cut : {385u, 300u, 130u, 128u, 65u, 3u, 0u}) {
    SCOPED_TRACE("truncate to " + std::to_string(cut));
    gpu->truncate(cut);
    EXPECT_EQ(gpu->n_past(), cut);
    std::vector<float> got(nv);
    gpu->forward(std::span<const int32_t>(tokens).subspan(cut), got);
    size_t at = 0;
    const float d = max_abs_diff(got, fresh, &at);
    EXPECT_LT(d, 1e-4f) << "after truncate: max diff " << d << " at id " << at << "\n  fresh top-5 "
                        << top_text(fresh) << "\n  trunc top-5 " << top_text(got);
    std::printf("  truncate(%u) + rest vs one pass: max diff %.3g\n", cut, static_cast<double>(d));
  }
  // Decode after truncate: drop the last token and decode it again.
  gpu->truncate(385);
  std::vector<float> dec(nv);
  gpu->forward(std::span<const int32_t>(&tokens[385], 1), dec);
  EXPECT_LT(max_abs_diff(dec, fresh), 1e-4f) << "decode after truncate(385)";
  EXPECT_THROW(gpu->truncate(387), Error);
  // A failing call (a token outside the vocabulary) leaves the cache as it was.
  gpu->truncate(385);
  const int32_t bad[2] = {tokens[385], static_cast<int32_t>(nv)};
  EXPECT_THROW(gpu->forward(bad, dec), Error);
  EXPECT_EQ(gpu->n_past(), 385u);
  gpu->forward(std::span<const int32_t>(&tokens[385], 1), dec);
  EXPECT_LT(max_abs_diff(dec, fresh), 1e-4f) << "decode after a failed forward()";
}

// SwiGLU as the gate + up launch's epilogue at decode changes no logit
// (tests/gpu/engine_switch_check.h).
TEST_P(Ds4Fixture, SwigluEpilogueChangesNoLogit) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_swiglu_epilogue_changes_no_logit(model_path(), tokens, make_cuda_backend_deepseek4);
}

// Routed experts in the tiled layout (EngineSettings::tiled_experts) change no logit, on the GGUF
// path and on an Expert Pack refilled every step (tests/gpu/engine_switch_check.h).
TEST_P(Ds4Fixture, TiledExpertsChangeNoLogit) {
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  // MXFP4_MOE: gate, up and down all MXFP4 (the others' down is Q6_K / Q3_K).
  test::expect_tiled_experts_change_no_logit(model_path(), tokens, make_cuda_backend_deepseek4,
                                             "moepack-tiled", std::string(GetParam().name) == "MXFP4_MOE");
}

// The shared expert launched beside the host's choice of experts changes no logit.
TEST_P(Ds4Fixture, SharedExpertOverlapChangesNoLogit) {
  ASSERT_GT(ModelSource::open(model_path())->config().n_expert_shared, 0u);
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_shared_expert_overlap_changes_no_logit(model_path(), tokens, make_cuda_backend_deepseek4);
}

// Decode steps routed on the GPU (sqrt-softplus gating, and the hash-routed blocks from their
// tid2eid tables) change no logit and no routing report.
TEST_P(Ds4Fixture, RouterOnDeviceChangesNoLogitNorRouting) {
  const ModelConfig cfg = ModelSource::open(model_path())->config();  // a copy: the source is a temporary
  ASSERT_EQ(cfg.gating, ExpertGating::SqrtSoftplus);
  ASSERT_GT(cfg.n_hash_layers, 0u) << "the fixture has hash-routed blocks";
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  test::expect_router_on_device_changes_no_logit(model_path(), tokens, make_cuda_backend_deepseek4);
}

// Decode steps as one CUDA graph launch (gpu/decode_graph.h) change no logit and no routing
// report: the 386-token prompt, so every decode step's ratio-4 queries take the indexer's top-k
// (97 rows visible, 16 chosen) and the ratio-4 compressors complete a row every 4 steps.
TEST_P(Ds4Fixture, DecodeGraphChangesNoLogitNorRouting) {
  const auto tokens = read_json(ref_path())["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 386u);
  test::expect_decode_graph_changes_no_logit(model_path(), tokens, make_cuda_backend_deepseek4);
}

// One graph serves every position (after truncations within the rings, which keep them) and
// outlives every batch (deepseek4's buffers are sized at load). The prompt's first 120 tokens:
// the decodes cross position 127, where the ratio-128 block completes its first row; its first
// 60: they cross 67, the first position whose ratio-4 query sorts (17 rows > top-k 16).
TEST_P(Ds4Fixture, DecodeGraphServesEveryPositionAfterATruncation) {
  auto tokens = read_json(ref_path())["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  tokens.resize(120);
  test::expect_decode_graph_serves_every_position(model_path(), tokens, make_cuda_backend_deepseek4, 3);
  tokens.resize(60);  // decodes from 60 on: the first sorting queries inside the graph
  test::expect_decode_graph_serves_every_position(model_path(), tokens, make_cuda_backend_deepseek4, 3);
}

// A 257-position call: its second ubatch of one position routes on the GPU inside a prefill
// call, its reports deferred to the end of the step, in order (the hash-routed blocks too).
TEST_P(Ds4Fixture, RouterOnDeviceReportsADeferredOnePositionUbatch) {
  auto tokens = read_json(ref_path())["prompts"][3]["token_ids"].get<std::vector<int32_t>>();
  ASSERT_GE(tokens.size(), 257u);
  tokens.resize(257);
  {  // the call itself routes on the GPU (the decodes after it in the helper would too)
    auto be = make_cuda_backend_deepseek4(ModelSource::open(model_path()), parity_settings("cuda"));
    std::vector<float> logits(be->config().n_vocab);
    const uint64_t before = gpu::device_routed_blocks();
    be->forward(tokens, logits);
    EXPECT_GT(gpu::device_routed_blocks(), before) << "the one-position ubatch was routed on the host";
  }
  test::expect_router_on_device_changes_no_logit(model_path(), tokens, make_cuda_backend_deepseek4);
}

// A tid2eid table whose rows name an expert twice (a copy of the fixture, every row of blk.0's
// table with its second id set to its first: legal for the host, which computes the expert twice)
// is refused by the device router (DeviceRouter::bind), which leaves the choice to the host: no
// block routes on the GPU, the logits equal those with the router switched off bit for bit, and
// the greedy tokens are the CPU backend's on the same copy.
TEST_P(Ds4Fixture, AHashTableNamingAnExpertTwiceLeavesTheChoiceToTheHost) {
  const ModelConfig cfg = ModelSource::open(model_path())->config();  // a copy: the source is a temporary
  ASSERT_GT(cfg.n_hash_layers, 0u);
  ASSERT_GE(cfg.n_expert_used, 2u);
  test::TempDir dir("moepack-ds4-dup");
  const std::string copy = dir.file("dup.gguf");
  std::filesystem::copy_file(model_path(), copy);
  {
    const GgufFile g = GgufFile::open(copy);
    const GgufTensorInfo* t = g.find_tensor("blk.0.ffn_gate_tid2eid.weight");
    ASSERT_NE(t, nullptr);
    std::vector<int32_t> ids(static_cast<size_t>(t->nbytes / sizeof(int32_t)));
    g.read_tensor_data(*t, 0, ids.data(), t->nbytes);
    const size_t K = cfg.n_expert_used;
    for (size_t r = 0; r < ids.size(); r += K) ids[r + 1] = ids[r];
    std::FILE* f = std::fopen(copy.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fseek(f, static_cast<long>(t->file_offset), SEEK_SET), 0);
    ASSERT_EQ(std::fwrite(ids.data(), 1, t->nbytes, f), t->nbytes);
    ASSERT_EQ(std::fclose(f), 0);
  }
  struct OnAfterwards {
    ~OnAfterwards() { gpu::set_router_on_device(true); }
  } restore;
  const auto tokens = read_json(ref_path())["prompts"][0]["token_ids"].get<std::vector<int32_t>>();
  const auto src = ModelSource::open(copy);
  std::vector<float> logits[2];
  for (const bool on : {false, true}) {
    gpu::set_router_on_device(on);
    auto be = make_cuda_backend_deepseek4(src, parity_settings("cuda"));
    const uint64_t before = gpu::device_routed_blocks();
    logits[on] = test::prompt_then_greedy_logits(*be, tokens);
    EXPECT_EQ(gpu::device_routed_blocks(), before) << "a block routed on the GPU (router " << on << ")";
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0);
  auto cpu = make_backend(src, parity_settings("cpu"));
  const std::vector<float> want = test::prompt_then_greedy_logits(*cpu, tokens);
  ASSERT_EQ(want.size(), logits[1].size());
  const size_t nv = cfg.n_vocab;
  for (size_t step = 0; step * nv < want.size(); ++step) {
    const auto at = [&](const std::vector<float>& l) {
      return std::max_element(l.begin() + step * nv, l.begin() + (step + 1) * nv) - (l.begin() + step * nv);
    };
    EXPECT_EQ(at(logits[1]), at(want)) << "greedy token of step " << step;
  }
}

// Prefill on the tensor cores switched on (test::PrefillMmaOn): the CPU and llama.cpp parity of
// MatchesCpuBackendAndReference, and the pack path bit for bit against the GGUF path.
TEST_P(Ds4Fixture, PrefillTensorCoresMatchCpuAndReferenceAndPackMatchesGguf) {
  const test::PrefillMmaOn on;
  expect_matches_cpu_and_reference();
  expect_pack_matches_gguf_at_every_budget("moepack-ds4-cuda-prefill-mma");
}

// Decode columns at prefill on every launch of up to 16 pairs a group or tokens
// (test::PrefillColumnsOn): the same parity, and the pack path bit for bit against the GGUF path.
TEST_P(Ds4Fixture, PrefillColumnsMatchCpuAndReferenceAndPackMatchesGguf) {
  const test::PrefillColumnsOn on;
  expect_matches_cpu_and_reference();
  expect_pack_matches_gguf_at_every_budget("moepack-ds4-cuda-prefill-columns");
}

TEST_P(Ds4Fixture, PackMatchesGgufOnGpuAtEveryBudget) {
  expect_pack_matches_gguf_at_every_budget("moepack-ds4-cuda");
}

// Next-layer prefetch (hash-routed next blocks predicted from their table) changes no logit.
TEST_P(Ds4Fixture, PackWithPrefetchMatchesGgufOnGpuAtEveryBudget) {
  expect_pack_matches_gguf_at_every_budget("moepack-ds4-cuda-prefetch", true);
}

// The host-RAM tier behind the VRAM cache (cache_ram_mib; with prefetch) changes no logit, and
// evicted experts come back from RAM instead of the pack.
TEST_P(Ds4Fixture, PackWithRamTierMatchesGgufOnGpuAtEveryBudget) {
  expect_pack_matches_gguf_at_every_budget("moepack-ds4-cuda-ram", true, 1024);
}

// A missing or mis-shaped tensor fails the load with a FormatError naming the file and the
// tensor (copies of the fixture with one tensor renamed, or one dimension changed, in place).
TEST_P(Ds4Fixture, MissingOrMisShapedTensorIsNamed) {
  // attn_sinks: ne[0] = 8 heads, halved to 4
  expect_broken_tensors_named("moepack-ds4-bad",
                              {"blk.2.attn_compressor_ape.weight", "blk.0.ffn_gate_tid2eid.weight"},
                              "blk.1.attn_sinks.weight", 8);
}

// A VRAM reserve larger than any device: the load fails before allocating, with the numbers.
TEST_P(Ds4Fixture, OutOfVramFailsWithNumbers) { expect_out_of_vram_fails_with_numbers(); }

// Through the factory and the Session: backend "cuda" and "auto" pick this backend for a
// deepseek4 model; greedy generation on the GPU gives the CPU session's tokens and llama.cpp's,
// also for a second prompt that reuses the first one's KV prefix (Session -> truncate()).
TEST_P(Ds4Fixture, FactoryAndSessionUseTheCudaBackend) {
  const auto src = ModelSource::open(model_path());
  EXPECT_EQ(make_backend(src, parity_settings("cuda"))->name(), "cuda");
  EXPECT_EQ(make_backend(src, parity_settings("auto"))->name(), "cuda");
  const nlohmann::json ref = read_json(ref_path());
  GenerateOptions o;
  o.max_tokens = 24;
  o.sampling.temperature = 0.0f;
  o.ignore_eos = true;
  auto gs = Session::load(model_path(), parity_settings("cuda"));
  auto cs = Session::load(model_path(), parity_settings("cpu"));
  ASSERT_EQ(gs->backend().name(), "cuda");
  ASSERT_EQ(cs->backend().name(), "cpu");
  int call = 0;
  for (const int pi : {0, 1, 1}) {  // the third call reuses 13 of prompt 1's 14 tokens
    SCOPED_TRACE("call " + std::to_string(call) + ", prompt " + std::to_string(pi));
    const std::string text = test::read_text(prompt_path(pi));
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

INSTANTIATE_TEST_SUITE_P(Fixtures, Ds4Fixture, ::testing::ValuesIn(kCases), test::arch_case_name);

}  // namespace
}  // namespace moepack

MOEPACK_GPU_TEST_MAIN_WITH_CUDA_BACKEND()
