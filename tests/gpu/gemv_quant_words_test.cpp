// The tensor-core GEMV's K-quant words (gpu/gemv_quant_words.h): host arithmetic, run on every
// machine. The oracle is core's dequantize_row (checked against llama.cpp's dequantized values
// by the core tests): super-blocks whose d, dmin and sub-block scales make every weight its quant
// (d = 1, every scale 1, minimums 0: w = q, or q - 32 for Q6_K), or, for the scales, whose quants
// are all one value, so that dequantize_row gives the scale (or minimum) of every sub-block.
// The element each A byte stands for is the block layout's (gemv_quant_words.h's table, from
// ggml's block_q4_K, block_q5_K, block_q3_K and block_q6_K). What this cannot see: which words
// the kernels load into these functions (the paths' fetch offsets) and in which order they pass
// the results to the mma; gpu_ops_test's one-hot tests check those on the GPU.
#include "gpu/gemv_quant_words.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/fp16.h"
#include "core/ggml_type.h"
#include "core/quants.h"
#include "gpu/gemm_mma_layout.h"
#include "gpu/gemm_quant_a.h"

namespace moepack::gpu::detail {
namespace {

constexpr uint16_t kOne = 0x3C00;   // f16 1.0
constexpr uint16_t kZero = 0x0000;  // f16 0.0

uint32_t word_at(const std::vector<uint8_t>& b, int o) {
  uint32_t w = 0;
  std::memcpy(&w, b.data() + o, 4);  // little-endian, as the GPU's loads
  return w;
}
int u8_byte(uint32_t w, int i) { return static_cast<int>((w >> (8 * i)) & 0xFFu); }
int s8_byte(uint32_t w, int i) { return static_cast<int8_t>(static_cast<uint8_t>((w >> (8 * i)) & 0xFFu)); }
void put_f16(std::vector<uint8_t>& b, int o, uint16_t v) { std::memcpy(b.data() + o, &v, 2); }

std::vector<float> dequantized(GgmlType type, const std::vector<uint8_t>& block) {
  std::vector<float> w(256);
  dequantize_row(type, block.data(), w.data(), 256);
  return w;
}

// Random super-blocks, then the two extremes (every quant bit clear, every one set).
std::vector<std::vector<uint8_t>> blocks(GgmlType type, std::mt19937& rng) {
  const size_t bytes = ggml_traits(type).type_size;
  std::vector<std::vector<uint8_t>> out;
  for (int k = 0; k < 200; ++k) {
    std::vector<uint8_t> b(bytes);
    for (uint8_t& v : b) v = static_cast<uint8_t>(rng() & 0xFF);
    out.push_back(std::move(b));
  }
  out.emplace_back(bytes, 0x00);
  out.emplace_back(bytes, 0xFF);
  return out;
}

// Q4_K and Q5_K: d 1, dmin 0, every sub-block scale 1 and minimum 0 (get_scale_min_k4:
// scales[0..3] the low scales, [4..7] the low minimums, [8..11] the high ones' low nibbles).
void k4_unit_scales(std::vector<uint8_t>& b) {
  put_f16(b, 0, kOne);
  put_f16(b, 2, kZero);
  for (int j = 0; j < 4; ++j) b[4 + j] = 1, b[8 + j] = 0, b[12 + j] = 0x01;
}

TEST(GemvQuantWords, Q4kAndQ5kQuantsAreTheWeightsOfTheirElements) {
  std::mt19937 rng(3);
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K}) {
    SCOPED_TRACE(ggml_type_name(type));
    const bool q5 = type == GgmlType::Q5_K;
    const int qs = q5 ? 48 : 16;  // qs after d, dmin, scales (and Q5_K's qh[32])
    int checked = 0;
    for (auto b : blocks(type, rng)) {
      k4_unit_scales(b);
      const auto w = dequantized(type, b);
      for (int p = 0; p < 4; ++p) {
        for (int l = 0; l < 32; l += 4) {  // every word of group p: lanes t = l / 8, halves (l / 4) % 2
          const uint32_t q = word_at(b, qs + 32 * p + l);
          const QuantWords a =
              q5 ? q5k_a_words(q, word_at(b, 16 + l), p) : QuantWords{q4k_a_lo(q), q4k_a_hi(q)};
          for (int i = 0; i < 4; ++i) {
            const float lo = w[static_cast<size_t>(64 * p + l + i)],
                        hi = w[static_cast<size_t>(64 * p + 32 + l + i)];
            ASSERT_EQ(u8_byte(a.lo, i), lo)
                << "group " << p << ", byte " << l + i << ": the low nibble's quant";
            // The high nibbles' sub-block: 16 q in place (Q4_K), 2 q (Q5_K).
            ASSERT_EQ(u8_byte(a.hi, i), static_cast<float>(q5 ? 2 : 16) * hi)
                << "group " << p << ", byte " << l + i << ": the high one's";
            checked += 2;
          }
        }
      }
    }
    EXPECT_EQ(checked, 202 * 256);
  }
}

TEST(GemvQuantWords, Q4kAndQ5kScalesAndMinimumsAreTheSubBlocks) {
  std::mt19937 rng(5);
  for (const GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K}) {
    SCOPED_TRACE(ggml_type_name(type));
    for (auto b : blocks(type, rng)) {
      // Every quant 1 (Q5_K's fifth bits clear): d 1, dmin 0 gives w = sc; d 0, dmin 1 gives -m.
      const int qs = type == GgmlType::Q5_K ? 48 : 16;
      std::memset(b.data() + qs, 0x11, 128);
      if (type == GgmlType::Q5_K) std::memset(b.data() + 16, 0x00, 32);
      put_f16(b, 0, kOne);
      put_f16(b, 2, kZero);
      const auto sc = dequantized(type, b);
      put_f16(b, 0, kZero);
      put_f16(b, 2, kOne);
      const auto m = dequantized(type, b);
      const uint32_t s0 = word_at(b, 4), s1 = word_at(b, 8), s2 = word_at(b, 12);
      for (int j = 0; j < 8; ++j) {
        const uint32_t scw = j < 4 ? k4_scales_lo(s0) : k4_scales_hi(s0, s2);
        const uint32_t mw = j < 4 ? k4_mins_lo(s1) : k4_mins_hi(s1, s2);
        ASSERT_EQ(u8_byte(scw, j % 4), sc[static_cast<size_t>(32 * j)]) << "scale of sub-block " << j;
        ASSERT_EQ(-u8_byte(mw, j % 4), m[static_cast<size_t>(32 * j)]) << "minimum of sub-block " << j;
      }
    }
  }
}

// Q3_K (hmask[32], qs[64], scales[12], d): every 6-bit scale 33 (sc - 32 = 1: low nibbles 1 in
// scales[0..7], high bits 2 in every field of scales[8..11]) and d 1 give w = q.
TEST(GemvQuantWords, Q3kQuantsAreTheWeightsOfTheirElements) {
  std::mt19937 rng(7);
  int checked = 0;
  for (auto b : blocks(GgmlType::Q3_K, rng)) {
    std::memset(b.data() + 96, 0x11, 8);
    std::memset(b.data() + 104, 0xAA, 4);
    put_f16(b, 108, kOne);
    const auto w = dequantized(GgmlType::Q3_K, b);
    for (int n = 0; n < 2; ++n) {
      for (int l = 0; l < 32; l += 4) {
        const uint32_t q = word_at(b, 32 + 32 * n + l), h = word_at(b, l) >> (4 * n);
        for (int j = 0; j < 4; ++j) {
          const uint32_t a = q3k_a_word(j < 2 ? q : q >> 4, h, j);
          for (int i = 0; i < 4; ++i) {
            // even fields q, odd fields 4 q (kept in place)
            ASSERT_EQ(s8_byte(a, i),
                      static_cast<float>((j & 1) ? 4 : 1) * w[static_cast<size_t>(128 * n + 32 * j + l + i)])
                << "half " << n << ", field " << j << ", byte " << l + i;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 202 * 256);
}

// Q3_K's scales: every quant 1 (fields 1, hmask bits set) and d 1 give w = sc - 32 for each
// 16-element sub-block; the words hold 4 (sc - 32).
TEST(GemvQuantWords, Q3kScaleWordsAreTheSubBlocks) {
  std::mt19937 rng(11);
  for (auto b : blocks(GgmlType::Q3_K, rng)) {
    std::memset(b.data(), 0xFF, 32);
    std::memset(b.data() + 32, 0x55, 64);
    put_f16(b, 108, kOne);
    const auto w = dequantized(GgmlType::Q3_K, b);
    const uint32_t s[3] = {word_at(b, 96), word_at(b, 100), word_at(b, 104)};
    uint32_t o[4] = {};
    q3k_scale_words(s, o);
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(s8_byte(o[k], i), 4 * w[static_cast<size_t>(16 * (4 * k + i))])
            << "sub-block " << 4 * k + i;
      }
    }
  }
}

// Q6_K (ql[128], qh[64], scales[16] s8, d): every scale 1 and d 1 give w = q - 32.
TEST(GemvQuantWords, Q6kQuantsAreTheWeightsOfTheirElements) {
  std::mt19937 rng(13);
  int checked = 0;
  for (auto b : blocks(GgmlType::Q6_K, rng)) {
    std::memset(b.data() + 192, 0x01, 16);
    put_f16(b, 208, kOne);
    const auto w = dequantized(GgmlType::Q6_K, b);
    for (int n = 0; n < 2; ++n) {
      for (int l = 0; l < 32; l += 4) {
        const uint32_t h = q6k_qh_flipped(word_at(b, 128 + 32 * n + l));
        for (int j = 0; j < 4; ++j) {
          const uint32_t a = q6k_a_word(word_at(b, 64 * n + 32 * (j % 2) + l), h, j);
          for (int i = 0; i < 4; ++i) {
            ASSERT_EQ(s8_byte(a, i), 4 * w[static_cast<size_t>(128 * n + 32 * j + l + i)])
                << "half " << n << ", field " << j << ", byte " << l + i;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 202 * 256);
}

// The kernel's own Qa<T> (gpu/gemm_quant_a.h: what gemm_mma_kernel's lanes build with A from the quants)
// for all six types, run on the host (its f16 operations in double, each required to land on an f16
// value exactly): one warp's super-block of 16 rows against a quad of 4 pairs, every lane's Qa<T>::group
// words placed by the PTX ISA's m16n8k16 fragment layout (as above), x staged as the kernel stages it
// (gemm_qa_xs_word; hi = x, lo zero), each mma emulated in double and the sums finished as the kernel
// does per the type's kScaleOnD (one factor a group, a chunk or a 16 k) and minimums (qa_sums: x's sums
// per 32 or 16 elements): the dot products of core's dequantize_row within 1e-6 of sum |w x|. Random
// units (normal d, dmin; MXFP4 scales 2^-128 .. 2^21, 0 and 1 among them), the all-zero and all-set
// units, rows of 16 units each read at an unaligned address (smem_word's byte loads); MXFP4 also in
// the tiled layout's staging (blocks padded to 20 bytes). Planted mistakes each failed it hundreds of
// times: a wrong prmt selector in q4k_qa_halves, a wrong swizzle in gemm_qa_xs_word, Q2_K's minimums
// indexed by (w, hb), Q6_K's high nibbles shifted by 3.
template <class QA>
void expect_quant_a_dot_products(GgmlType type, bool padded, unsigned seed) {
  SCOPED_TRACE(std::string(ggml_type_name(type)) + (padded ? " padded" : ""));
  std::mt19937 rng(seed);
  const bool mx = type == GgmlType::MXFP4;
  const size_t unit = mx ? 8 * 17 : ggml_traits(type).type_size;  // 256 elements
  const auto normal_f16 = [&] {
    const auto e = static_cast<uint32_t>(8 + rng() % 14), m = static_cast<uint32_t>(rng() & 0x3FFu),
               sign = static_cast<uint32_t>(rng() & 1u);
    return static_cast<uint16_t>((sign << 15) | (e << 10) | m);
  };
  std::uniform_int_distribution<int> xd(-1000, 1000);
  int checked = 0;
  for (int set = 0; set < 8; ++set) {
    std::vector<std::vector<uint8_t>> rows(16, std::vector<uint8_t>(unit));
    for (int r = 0; r < 16; ++r) {
      auto& b = rows[r];
      const int kind = set == 0 ? r % 3 : 2;  // 0: all clear, 1: all set, 2: random
      for (uint8_t& v : b) v = kind == 0 ? 0x00 : kind == 1 ? 0xFF : static_cast<uint8_t>(rng() & 0xFF);
      switch (type) {
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
          put_f16(b, 0, normal_f16());
          put_f16(b, 2, normal_f16());
          break;
        case GgmlType::Q2_K:
          put_f16(b, 80, normal_f16());
          put_f16(b, 82, normal_f16());
          break;
        case GgmlType::Q3_K:
          put_f16(b, 108, normal_f16());
          break;
        case GgmlType::Q6_K:
          put_f16(b, 208, normal_f16());
          break;
        default:  // MXFP4: E8M0 scales
          for (int c = 0; c < 8; ++c)
            b[17 * c] = static_cast<uint8_t>(r == 1 && c < 3 ? c : 100 + rng() % 50);
          break;
      }
    }
    // The rows as the kernel's staging holds them: at an odd address, MXFP4's blocks padded if asked.
    std::vector<std::vector<uint8_t>> staged(16);
    for (int r = 0; r < 16; ++r) {
      std::vector<uint8_t> st(3 + (padded ? 160 : unit) + 16, 0xA5);
      for (size_t i = 0; i < unit; ++i) {
        const size_t dst = padded ? i / 17 * 20 + (i % 17 ? i % 17 + 3 : 0) : i;
        st[3 + dst] = rows[r][i];
      }
      staged[r] = std::move(st);
    }
    std::array<std::array<double, 256>, 4> x{};
    for (auto& xp : x)
      for (double& v : xp) v = xd(rng) / 8.0;
    std::array<std::vector<std::array<double, 2>>, 8> stage;  // x hi per chunk, as the kernel stores it
    for (int c = 0; c < 8; ++c) {
      stage[c].assign(2 * 32 * 16, {0.0, 0.0});
      for (int p = 0; p < 4; ++p)
        for (int l = 0; l < 4; ++l)
          for (int j = 0; j < 4; ++j) {
            const int n = 4 * l + j;
            stage[c][gemm_qa_xs_word(2 * p, 4 * l) + j] = {x[p][32 * c + 2 * n], x[p][32 * c + 2 * n + 1]};
          }
    }
    std::array<std::array<double, 4>, 16> y{};
    typename QA::Head head[16];
    for (int r = 0; r < 16; ++r) head[r] = QA::head(staged[r].data() + 3);
    for (int cp = 0; cp < 4; ++cp) {
      double A[2][2][16][16] = {}, f[16][2][2] = {}, m[16][2][2] = {};
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int r = 0; r < 2; ++r) {
          const int row = g + 8 * r;
          uint32_t ar[2][2][2];
          float fr[2][2] = {}, mr[2][2] = {};
          QA::group(head[row], staged[row].data() + 3, cp, t, ar, fr, mr);
          for (int hb = 0; hb < 2; ++hb)
            for (int w = 0; w < 2; ++w) {
              f[row][hb][w] = fr[hb][w], m[row][hb][w] = mr[hb][w];
              for (int k = 0; k < 2; ++k)
                for (int j = 0; j < 2; ++j) {
                  const double v = qa_host::f16_value(static_cast<uint16_t>(ar[hb][w][k] >> (16 * j)));
                  ASSERT_FALSE(std::isnan(v))
                      << "an f16 operation was not exact: group " << cp << ", row " << row;
                  A[hb][w][row][2 * t + 8 * k + j] = v;  // register r + 2 k: row g + 8 r, k 2 t + 8 k + j
                }
            }
        }
      }
      for (int row = 0; row < 16; ++row) {
        for (int p = 0; p < 4; ++p) {
          double D[2][2] = {};  // per chunk hb and half w: row's sum for pair p (B column 2 p: x hi)
          for (int hb = 0; hb < 2; ++hb)
            for (int w = 0; w < 2; ++w) {
              const auto& st = stage[2 * cp + hb];
              for (int t = 0; t < 4; ++t) {
                const int o = gemm_xs_word(2 * p, w, t);  // the B lane of column 2 p (g = 2 p)
                for (int j = 0; j < 2; ++j) {
                  D[hb][w] +=
                      A[hb][w][row][2 * t + j] * st[o][j] + A[hb][w][row][2 * t + 8 + j] * st[o + 1][j];
                }
              }
            }
          double sum = 0;
          for (int hb = 0; hb < 2; ++hb)
            for (int w = 0; w < 2; ++w) {
              const double fac = QA::kScaleOnD == 0    ? f[row][0][0]
                                 : QA::kScaleOnD == 16 ? f[row][hb][w]
                                                       : f[row][hb][0];
              sum += fac * D[hb][w];
              double xs16 = 0;
              for (int e = 0; e < 16; ++e) xs16 += x[p][64 * cp + 32 * hb + 16 * w + e];
              if (qa_sums(type) == 16) sum -= m[row][hb][w] * xs16;
              if (qa_sums(type) == 8) sum -= m[row][hb][0] * xs16;  // both halves: the chunk's sum
            }
          y[row][p] += sum;
        }
      }
    }
    for (int r = 0; r < 16; ++r) {
      std::vector<float> w(256);
      dequantize_row(type, rows[r].data(), w.data(), 256);
      for (int p = 0; p < 4; ++p) {
        double exact = 0, mag = 0;
        for (int e = 0; e < 256; ++e) exact += w[e] * x[p][e], mag += std::fabs(w[e] * x[p][e]);
        EXPECT_LE(std::fabs(y[r][p] - exact), 1e-6 * mag + 1e-30)
            << "set " << set << ", row " << r << ", pair " << p << ": " << y[r][p] << " against " << exact;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8 * 16 * 4);
}

TEST(GemvQuantWords, PrefillQuantAOfEveryTypeGivesTheDotProduct) {
  expect_quant_a_dot_products<Qa<GgmlType::Q4_K>>(GgmlType::Q4_K, false, 1);
  expect_quant_a_dot_products<Qa<GgmlType::Q5_K>>(GgmlType::Q5_K, false, 2);
  expect_quant_a_dot_products<Qa<GgmlType::Q2_K>>(GgmlType::Q2_K, false, 3);
  expect_quant_a_dot_products<Qa<GgmlType::Q3_K>>(GgmlType::Q3_K, false, 4);
  expect_quant_a_dot_products<Qa<GgmlType::Q6_K>>(GgmlType::Q6_K, false, 5);
  expect_quant_a_dot_products<QaMxfp4<false>>(GgmlType::MXFP4, false, 6);
  expect_quant_a_dot_products<QaMxfp4<true>>(GgmlType::MXFP4, true, 7);
}

}  // namespace
}  // namespace moepack::gpu::detail
