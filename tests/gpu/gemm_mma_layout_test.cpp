// gpu/gemm_mma_layout.h against an emulation of one warp (no GPU): the prefill kernel's stores of
// W (A staging) and x (B staging), its ldmatrix.x4 addresses and B loads, and mma.m16n8k16 with
// the fragment layouts of the PTX ISA ("Warp-level matrix load instruction: ldmatrix", "Matrix
// fragments for mma.m16n8k16 with floating point type"): every lane must get back exactly its
// own pair's dot products (integer values, so the sums are exact), and the loads must be free of
// bank conflicts as the header claims.
#include "gpu/gemm_mma_layout.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

namespace moepack::gpu {
namespace {

constexpr int kPairs = 32, kK = 64;  // a block's pairs; a chunk pair (two chunks of 32)

// One warp's chunk pair: W's hi and lo halves (16 rows x 64 k), x's (32 pairs x 64 k), small
// integers.
struct Data {
  std::array<std::array<std::array<int, kK>, 16>, 2> w{};      // [half][row][k]
  std::array<std::array<std::array<int, kK>, kPairs>, 2> x{};  // [half][pair][k]
};

Data random_data(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-9, 9);
  Data v;
  for (auto& h : v.w)
    for (auto& r : h)
      for (int& e : r) e = d(rng);
  for (auto& h : v.x)
    for (auto& r : h)
      for (int& e : r) e = d(rng);
  return v;
}

TEST(GemmMmaLayout, EachLaneGetsItsOwnPairsDotProducts) {
  for (const unsigned seed : {1u, 2u, 3u}) {
    const Data v = random_data(seed);
    // The A staging as the kernel writes it: lane L dequantizes (row L / 2, chunk L % 2) and stores
    // its 32 values at k = 32 (L % 2) of that row, in element order; hi and lo apart.
    std::array<std::vector<int>, 2> a;
    for (auto& s : a) s.assign(16 * kGemmAStride, 1000000);  // padding: poison
    for (int lane = 0; lane < 32; ++lane) {
      const int r16 = lane >> 1, c = lane & 1;
      for (int h = 0; h < 2; ++h)
        for (int i = 0; i < 32; ++i) a[h][r16 * kGemmAStride + 32 * c + i] = v.w[h][r16][32 * c + i];
    }
    // The B staging: per chunk, row 2 p + h, word gemm_xs_word holding the chunk's natural word
    // gemm_b_natural_word (elements 2 n, 2 n + 1); two ints a word here.
    std::array<std::vector<int>, 2> xs;
    for (int c = 0; c < 2; ++c) {
      xs[c].assign(2 * kPairs * 16 * 2, 1000000);
      for (int p = 0; p < kPairs; ++p)
        for (int h = 0; h < 2; ++h)
          for (int w = 0; w < 2; ++w)
            for (int t = 0; t < 4; ++t)
              for (int i = 0; i < 2; ++i) {
                const int word = gemm_xs_word(2 * p + h, w, t) + i, n = gemm_b_natural_word(w, t, i);
                xs[c][2 * word] = v.x[h][p][32 * c + 2 * n];
                xs[c][2 * word + 1] = v.x[h][p][32 * c + 2 * n + 1];
              }
    }
    for (int c = 0; c < 2; ++c) {
      for (int q = 0; q < kPairs / 4; ++q) {
        std::array<std::array<long, 4>, 32> d{};  // each lane's D, accumulated over 4 mmas
        for (int w = 0; w < 2; ++w) {
          for (int h = 0; h < 2; ++h) {
            // ldmatrix.x4: register i of lane L = row L / 4, elements 2 (L % 4), + 1 of matrix i,
            // whose row L / 4 is at the address lane 8 i + L / 4 gives.
            std::array<std::array<std::array<int, 2>, 4>, 32> areg{};
            for (int lane = 0; lane < 32; ++lane)
              for (int i = 0; i < 4; ++i) {
                const int src = 8 * i + lane / 4;
                const int at =
                    gemm_a_row(src) * kGemmAStride + 32 * c + 16 * w + gemm_a_k(src) + 2 * (lane % 4);
                areg[lane][i] = {a[h][at], a[h][at + 1]};
              }
            // The B fragments: lane 4 g + t loads words gemm_xs_word(8 q + g, w, t) and + 1.
            std::array<std::array<std::array<int, 2>, 2>, 32> breg{};
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane / 4, t = lane % 4, word = gemm_xs_word(8 * q + g, w, t);
              for (int i = 0; i < 2; ++i) breg[lane][i] = {xs[c][2 * (word + i)], xs[c][2 * (word + i) + 1]};
            }
            // mma.m16n8k16 from the fragments (PTX ISA layout), D += A B.
            std::array<std::array<long, 16>, 16> A{};
            std::array<std::array<long, 8>, 16> B{};
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane / 4, t = lane % 4;
              for (int j = 0; j < 2; ++j) {
                A[g][2 * t + j] = areg[lane][0][j];
                A[g + 8][2 * t + j] = areg[lane][1][j];
                A[g][2 * t + 8 + j] = areg[lane][2][j];
                A[g + 8][2 * t + 8 + j] = areg[lane][3][j];
                B[2 * t + j][g] = breg[lane][0][j];
                B[2 * t + 8 + j][g] = breg[lane][1][j];
              }
            }
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane / 4, t = lane % 4;
              const int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
              for (int o = 0; o < 4; ++o)
                for (int k = 0; k < 16; ++k) d[lane][o] += A[rows[o]][k] * B[k][cols[o]];
            }
          }
        }
        // d0 + d1: row g, pair 4 q + t, hi and lo of both; d2 + d3 the same for row g + 8.
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4, p = 4 * q + t;
          for (int half = 0; half < 2; ++half) {
            const int r = g + 8 * half;
            long want = 0;
            for (int k = 32 * c; k < 32 * c + 32; ++k) {
              want += static_cast<long>(v.w[0][r][k] + v.w[1][r][k]) * (v.x[0][p][k] + v.x[1][p][k]);
            }
            ASSERT_EQ(want, d[lane][2 * half] + d[lane][2 * half + 1])
                << "seed " << seed << ", chunk " << c << ", pairs " << 4 * q << "-" << 4 * q + 3 << ", lane "
                << lane << ", row " << r;
          }
        }
      }
    }
  }
}

// The B loads (8 bytes a lane: a half-warp's 16 lanes a phase) and the ldmatrix phases (8 rows of
// 16 bytes) touch distinct banks.
TEST(GemmMmaLayout, LoadsAreFreeOfBankConflicts) {
  for (int q = 0; q < kPairs / 4; ++q)
    for (int w = 0; w < 2; ++w)
      for (int half = 0; half < 2; ++half) {
        std::set<int> banks;
        for (int lane = 16 * half; lane < 16 * half + 16; ++lane) {
          const int word = gemm_xs_word(8 * q + lane / 4, w, lane % 4);
          banks.insert(word % 32);
          banks.insert((word + 1) % 32);
        }
        EXPECT_EQ(banks.size(), 32u) << "B load, pairs " << 4 * q << ", half " << w << ", half-warp " << half;
      }
  for (int base_k = 0; base_k < kK; base_k += 16)
    for (int i = 0; i < 4; ++i) {
      std::set<int> groups;  // 16-byte groups of the 128-byte bank line
      for (int lane = 8 * i; lane < 8 * i + 8; ++lane) {
        groups.insert((gemm_a_row(lane) * kGemmAStride * 2 + (base_k + gemm_a_k(lane)) * 2) / 16 % 8);
      }
      EXPECT_EQ(groups.size(), 8u) << "ldmatrix matrix " << i << " at k " << base_k;
    }
}

// The block's x stores (kernels_gemv.cu): one pair a warp, lane 4 c + l storing natural word
// 4 l + j of chunk c in instruction j, at kGemmXsChunkWords c + gemm_xs_word(row, w, t) + i where
// (w, t, i) inverts gemm_b_natural_word: each word stored once, at most two of an instruction's
// 32 words to a bank, every chunk 16-byte aligned.
TEST(GemmMmaLayout, XStoresFallAtMostTwoToABank) {
  static_assert(kGemmXsChunkWords % 4 == 0 && kGemmXsChunkWords >= 2 * kPairs * 16);
  for (int p = 0; p < kPairs; ++p)
    for (int h = 0; h < 2; ++h) {
      std::set<int> stored;
      for (int j = 0; j < 4; ++j) {
        std::array<int, 32> per_bank{};
        for (int lane = 0; lane < 32; ++lane) {
          const int c = lane >> 2, l = lane & 3, nw = 4 * l + j;
          const int w = nw >> 3, i = (nw >> 2) & 1, t = nw & 3;
          ASSERT_EQ(gemm_b_natural_word(w, t, i), nw);
          const int word = c * kGemmXsChunkWords + gemm_xs_word(2 * p + h, w, t) + i;
          EXPECT_TRUE(stored.insert(word).second) << "word " << word << " stored twice";
          ++per_bank[word % 32];
        }
        for (int bank = 0; bank < 32; ++bank) {
          EXPECT_LE(per_bank[bank], 2)
              << "pair " << p << ", half " << h << ", store " << j << ", bank " << bank;
        }
      }
      EXPECT_EQ(stored.size(), 8u * 16u);
    }
}

// The half-unit staging's x stores (kernels_gemv.cu, set_gemv_prefill_mma_half_x): two pairs a warp,
// lanes 0-15 pair p and 16-31 pair p + 1, lane 16 k + 4 c + l storing natural word 4 l + j of chunk c
// (of the half's 4): each word of both pairs stored once; an instruction's 32 words fall at most four
// to a bank (the two pairs' rows are 32 words apart, their swizzles 8).
TEST(GemmMmaLayout, HalfUnitXStoresEachWordOnce) {
  for (int p = 0; p < kPairs; p += 2)
    for (int h = 0; h < 2; ++h) {
      std::set<int> stored;
      for (int j = 0; j < 4; ++j) {
        std::array<int, 32> per_bank{};
        for (int lane = 0; lane < 32; ++lane) {
          const int pp = p + (lane >> 4), c = (lane >> 2) & 3, l = lane & 3, nw = 4 * l + j;
          const int w = nw >> 3, i = (nw >> 2) & 1, t = nw & 3;
          const int word = c * kGemmXsChunkWords + gemm_xs_word(2 * pp + h, w, t) + i;
          EXPECT_TRUE(stored.insert(word).second) << "word " << word << " stored twice";
          EXPECT_LT(word, 4 * kGemmXsChunkWords);
          ++per_bank[word % 32];
        }
        for (int bank = 0; bank < 32; ++bank) {
          EXPECT_LE(per_bank[bank], 4) << "pairs " << p << "-" << p + 1 << ", half " << h << ", store " << j;
        }
      }
      EXPECT_EQ(stored.size(), 2u * 4u * 16u);
    }
}

// The half-unit rule (prefill_mma_half_x_default): on 132 multiprocessors (an H100 SXM) the whole unit
// up to 396 blocks, half from 397; Q6_K in the GGUF layout half only from 397 to 528 (4 a
// multiprocessor), tiled by the rule; launches of Q4_K's A from its quants always the whole unit.
// The benchmark's launches: 8 experts of 2048 x 4096 with 16 pairs, 256 blocks; with 64 pairs, 512; 64
// experts, 2,048.
TEST(GemmMmaLayout, HalfUnitRule) {
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 396, 132));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 397, 132));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, true, 256, 132));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::MXFP4, true, 512, 132));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q8_0, false, 2048, 132));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 2048, 132));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 396, 132));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 397, 132));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 512, 132));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 528, 132));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 529, 132));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 2048, 132, true));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, true, 512, 132, true));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q6_K, true, 2048, 132));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q2_K, false, 510, 170));  // 170 SMs at the H100's counts
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q2_K, false, 511, 170));
}

// The rule given the blocks a multiprocessor the device holds of each staging (kernels_gemv.cu
// prefill_rule_blocks_per_sm; an RTX 5090: 170 multiprocessors of 100 KiB, say the whole unit 1 and half of
// it 2): the whole unit up to 170 blocks, half from 171; Q6_K in the GGUF layout half from 171 to 340. Where
// half a unit holds no more blocks than the whole unit (both 1, or both 3), the whole unit always.
TEST(GemmMmaLayout, HalfUnitRuleCountsTheDevicesBlocks) {
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 170, 170, false, 1, 2));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 171, 170, false, 1, 2));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q8_0, false, 2048, 170, false, 1, 2));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 170, 170, false, 1, 2));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 171, 170, false, 1, 2));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 340, 170, false, 1, 2));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q6_K, false, 341, 170, false, 1, 2));
  EXPECT_TRUE(prefill_mma_half_x_default(GgmlType::Q6_K, true, 341, 170, false, 1, 2));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 2048, 170, false, 1, 1));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 2048, 132, false, 3, 3));
  EXPECT_FALSE(prefill_mma_half_x_default(GgmlType::Q4_K, false, 2048, 170, true, 1, 2));
  // The defaults are the constants: 3 and 4, as in HalfUnitRule.
  EXPECT_EQ(prefill_mma_half_x_default(GgmlType::Q4_K, false, 397, 132),
            prefill_mma_half_x_default(GgmlType::Q4_K, false, 397, 132, false, 3, 4));
}

float pow2(int e) { return std::ldexp(1.0f, e); }
uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Hand-checked: 1 x 2^14 and 3 x 2^13 = 24,576 lie in [2^14, 2^15); the clamps.
TEST(GemmMmaLayout, SplitExponent) {
  EXPECT_EQ(gemm_split_exponent(bits(1.0f)), 14);
  EXPECT_EQ(gemm_split_exponent(bits(3.0f)), 13);
  EXPECT_EQ(gemm_split_exponent(bits(0.75f)), 15);
  EXPECT_EQ(gemm_split_exponent(bits(0.0f)), 126);
  EXPECT_EQ(gemm_split_exponent(bits(1e-45f)), 126);  // subnormal
  EXPECT_EQ(gemm_split_exponent(bits(INFINITY)), -114);
  EXPECT_EQ(gemm_split_exponent(bits(-2.0f)), 13);  // the sign is ignored (a max of |v|)
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-110, 110);
  for (int i = 0; i < 10000; ++i) {
    const float m = mant(rng) * pow2(ex(rng));
    const int e = gemm_split_exponent(bits(m));
    const double scaled = static_cast<double>(m) * std::ldexp(1.0, e);
    ASSERT_GE(scaled, 16384.0) << m;
    ASSERT_LT(scaled, 32768.0) << m;
  }
}

// The default minimum group of the prefill on the tensor cores (gpu/gemm_mma_layout.h), worked by
// hand from the rule: 2048 x 2048 = 4,194,304 elements is the first large matrix.
TEST(GemmMmaLayout, DefaultMinimumGroup) {
  // The demo model's experts (256 x 256) and the fixtures' small matrices: every group of two.
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 256, 256), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 256, 256), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q2_K, 2048, 2047), 2);  // 4,192,256
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 2048, 2048), 8);
  // DeepSeek-V4-Flash's experts (4096 x 2048 and 2048 x 4096), Kimi-K3's (7168 x 1536 = 11,010,048).
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::MXFP4, 4096, 2048), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 2048, 4096), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q3_K, 7168, 1536), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q2_K, 4096, 2048), 12);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 1536, 7168), 12);
  // Dense launches (no expert groups): 40 tokens on large matrices, 48 for Q2_K and Q6_K; small
  // matrices keep 2.
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q5_K, 4096, 4096), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q5_K, 4096, 4096, true), 40);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 2048, 2048, true), 40);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 256, 32000, true), 48);  // an output head
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q2_K, 7168, 1536, true), 48);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 256, 256, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 2048, 2047, true), 2);
  // With A from the quants (forty-ninth session): 2 pairs on large experts, 4 for Q6_K; with the K split
  // dense launches from 5 tokens (12 for the types without A from the quants); small matrices keep 2.
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4096, 2048, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q2_K, 4096, 2048, false, true, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 1536, 7168, false, true), 4);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 4096, 4096, true, true, true), 4);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4096, 4096, true, true, true), 3);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::MXFP4, 7168, 2048, true, true, true), 3);
  // A dense matrix whose one pair tile holds half the device's blocks or more, or whose rows are too short to
  // split (an output head, DeepSeek's dense FFN up, which the rule splits since the fifty-fifth session all
  // the same, MLA's q_b and kv_b): with A from
  // the quants 3 on rows of 4096 elements or more, 2 on shorter ones; 12 / 2 without (8 on rows of 4096 or
  // more of 2^25 elements or more, fifty-fifth session); a split launch's values where the split is switched
  // on for it.
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 7168, 18432, true, true, false, true), 3);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 7168, 18432, true, true, false, true), 3);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q2_K, 1536, 24576, true, true, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::MXFP4, 512, 32768, true, true, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q3_K, 4095, 32768, true, true, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 7168, 18432, true, false, false, true), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 7168, 4096, true, false, false, true), 12);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 1536, 24576, true, false, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 512, 32768, true, false, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4096, 65536, true, true, false, true), 3);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 7168, 129280, true, true, false, true), 3);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 4096, 65536, true, false, false, true), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4096, 65536, true, true, true, true), 3);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4096, 65536, false, true, false, true), 2);  // experts'
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 256, 256, true, true, false, true), 2);    // small
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 4096, 4096, true, false, true), 12);
  // Dense matrices under 2048 x 2048 elements with rows of 4096 or more (fifty-fourth session; MLA's kv_a,
  // 576 rows of 7168 in DeepSeek-V3, of 4096 in DeepSeek-V4-Flash): unsplit (the split switched off) 40 / 48;
  // split (the rule's, fifty-fifth session) the split's 3, Q6_K 4, 12 without A from the quants; shorter
  // rows and expert launches keep the small matrices' 2.
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 7168, 576, true, true, false, true), 40);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 7168, 576, true, true, false, true), 48);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 7168, 576, true, false, false, true), 40);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::MXFP4, 4096, 576, true, true, false, true), 40);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4095, 576, true, true, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 7168, 576, false, true), 2);       // experts
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 7168, 576, true, true, true), 3);  // split
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 7168, 576, true, true, true), 4);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 7168, 576, true, false, true), 12);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4095, 576, true, true, true), 2);  // short rows
  // Without A from the quants, split or whole, rows of 4096 or more and 2^25 elements or more (fifty-fifth
  // session): 8; smaller ones 12; the whole tiles' short rows 2.
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 8192, 4096, true, false, true), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 7168, 129280, true, false, false, true), 8);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 8192, 4095, true, false, true), 12);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 4096, 4096, true, false, true), 12);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 2048, 32768, true, false, false, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q8_0, 8192, 4096, true, false, false, false), 40);  // off
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 8192, 4096, true, true, true), 3);  // A from quants
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 7168, 586, true, true, false, true), 3);  // large
  // Few blocks with the split switched off (set_gemv_prefill_k_split(1)): the forty-sixth session's values.
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 4096, 4096, true, true, false), 40);  // no split
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q6_K, 4096, 4096, true, true, false), 48);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 256, 256, true, true, true), 2);
  EXPECT_EQ(prefill_mma_default_min_pairs(GgmlType::Q4_K, 256, 256, false, true, true), 2);
}

// The default K split of dense prefill launches (gpu/gemm_mma_layout.h prefill_k_splits_default), worked
// by hand: an H100's 132 multiprocessors holding 4 blocks each (528 at once) unless said.
TEST(GemmMmaLayout, DefaultKSplit) {
  // Rows of 4096 elements or more: the least waves x (units a split + 1).
  // 4096 x 4096, up to 32 tokens: 64 blocks, 16 units a row: 1 split 1 wave x 17, 2: 1 x 9, 3 (6 units):
  // 1 x 7, 4: 1 x 5, 6 (3 units): 1 x 4, 8 (2): 512 blocks, 1 x 3 -> 8.
  EXPECT_EQ(prefill_k_splits_default(64, 16, 132, 4, true), 8);
  // 33 to 64 tokens, 128 blocks: 4 splits 512 blocks, 1 x 5; 6: 768, 2 x 4; 8: 1024, 2 x 3 = 6 -> 4.
  EXPECT_EQ(prefill_k_splits_default(128, 16, 132, 4, true), 4);
  // 3 a multiprocessor (396): 3 splits 384 blocks, 1 x 7; 4: 512, 2 x 5; 8: 1024, 3 x 3 = 9 -> 3.
  EXPECT_EQ(prefill_k_splits_default(128, 16, 132, 3, true), 3);
  // 256 blocks: 2 splits 512, 1 x 9; 3: 768, 2 x 7; 4: 2 x 5 = 10 -> 2. 320 blocks: 1: 1 x 17; 2: 640, 2 x 9;
  // 3: 960, 2 x 7 = 14; 4: 1280, 3 x 5 = 15; 8: 2560, 5 x 3 = 15 -> 3 (the first rule: 1).
  EXPECT_EQ(prefill_k_splits_default(256, 16, 132, 4, true), 2);
  EXPECT_EQ(prefill_k_splits_default(320, 16, 132, 4, true), 3);
  // DeepSeek-V3's 18,432 x 7168 (288 blocks, 28 units): 1: 1 x 29; 2 (14): 576, 2 x 15; 3 (10): 2 x 11;
  // 5 (6): 1440, 3 x 7 = 21; 7 (4): 2016, 4 x 5 = 20 (8 splits: the same 4 units, 7 with units); 10 (3):
  // 2880, 6 x 4; 14 (2): 4032, 8 x 3 -> 7 (the first rule: 1).
  EXPECT_EQ(prefill_k_splits_default(288, 28, 132, 4, true), 7);
  // MLA's kv_a, 576 x 7168 (9 blocks): 14 splits of 2 units (126 blocks, 1 x 3).
  EXPECT_EQ(prefill_k_splits_default(9, 28, 132, 4, true), 14);
  // Q8_0's 2 a multiprocessor (264) on 7168 x 16384 (112 blocks, 64 units): 2 (32): 224, 1 x 33; 4 (16):
  // 448, 2 x 17; 7 (10): 784, 3 x 11 = 33; 8: 896, 4 x 9; 16 (4): 1792, 7 x 5 -> the tie 2 / 7: 7.
  EXPECT_EQ(prefill_k_splits_default(112, 64, 132, 2, true), 7);
  // A large matrix already fills the device (an output head of 129,280 rows: 2,020 blocks): 1: 4 x 29 = 116;
  // 2: 8 x 15 = 120. At 3 a multiprocessor (396): 1: 6 x 29 = 174; 2: 11 x 15 = 165, under 10 % less: 1.
  EXPECT_EQ(prefill_k_splits_default(2020, 28, 132, 4, true), 1);
  EXPECT_EQ(prefill_k_splits_default(2020, 28, 132, 3, true), 1);
  // 10 % less at least: 265 blocks of 16 units (1: 17; 3: 795 blocks, 2 x 7 = 14, 82 %) split 3 ways.
  EXPECT_EQ(prefill_k_splits_default(265, 16, 132, 4, true), 3);
  // Tiny launches stop at 16 (kPrefillKSplitRuleMax); an empty one, or a device of none, takes none.
  EXPECT_EQ(prefill_k_splits_default(1, 1000, 132, 4, true), 16);
  EXPECT_EQ(prefill_k_splits_default(0, 16, 132, 4, true), 1);
  EXPECT_EQ(prefill_k_splits_default(64, 16, 0, 4, true), 1);
  // Shorter rows: the first rule, blocks_per_sm * sms / blocks, two super-blocks a split at least (7168 x
  // 1536: 6 super-blocks, 112 blocks: 3, not 4), at most 8.
  EXPECT_EQ(prefill_k_splits_default(112, 6, 132, 4, true), 3);
  EXPECT_EQ(prefill_k_splits_default(16, 3, 132, 4, true), 1);  // a 1024-row matrix of 768 elements
  EXPECT_EQ(prefill_k_splits_default(1, 15, 132, 4, true), 7);  // 3840 elements: 7 of 2 units
  // (40 units, the longer rows' rule: 14 to 16 splits take 3 units, 14 of them with units)
  EXPECT_EQ(prefill_k_splits_default(1, 40, 132, 4, true), 14);
  // Only on the matrices the split may take (prefill_dense_k_split_eligible): at least 2048 x 2048
  // elements, or smaller with rows of 4096 elements or more; not 4095 rows of 1024 nor the fixtures' sizes.
  EXPECT_EQ(prefill_k_splits_default(16, 16, 132, 4, prefill_dense_k_split_eligible(4096, 1024)), 8);
  EXPECT_EQ(prefill_k_splits_default(16, 16, 132, 4, prefill_dense_k_split_eligible(1024, 4095)), 1);
  EXPECT_EQ(prefill_k_splits_default(9, 28, 132, 4, prefill_dense_k_split_eligible(7168, 576)), 14);
  EXPECT_TRUE(prefill_dense_k_split_eligible(4096, 1024));
  EXPECT_TRUE(prefill_dense_k_split_eligible(4096, 576));   // kv_a of DeepSeek-V4-Flash
  EXPECT_FALSE(prefill_dense_k_split_eligible(4095, 576));  // rows under 4096 elements
  EXPECT_FALSE(prefill_dense_k_split_eligible(1024, 83));   // the fixtures' sizes
  EXPECT_FALSE(prefill_dense_k_split_eligible(2304, 1024));
  // A dense launch of one pair tile fills less than half the device (the dense minimum's and columns' split
  // values) on 4096 x 4096 and 2048 x 7168, not on rows under 1024 elements nor where its ceil(ne1 / 64)
  // blocks hold half of it: DeepSeek's 7168 x 18432 (288 blocks, 528 / 288 = 1; the longer rule splits it,
  // its minimum stays the whole tile's), an output head of 129,280 rows.
  EXPECT_TRUE(prefill_dense_one_tile_few_blocks(4096, 4096, 132, 4));
  EXPECT_TRUE(prefill_dense_one_tile_few_blocks(7168, 2048, 132, 4));
  EXPECT_TRUE(prefill_dense_one_tile_few_blocks(4096, 1024, 132, 3));
  EXPECT_TRUE(prefill_dense_one_tile_few_blocks(7168, 576, 132, 4));   // kv_a (fifty-fifth session)
  EXPECT_FALSE(prefill_dense_one_tile_few_blocks(768, 8192, 132, 4));  // 3 super-blocks a row: 1 split
  EXPECT_FALSE(prefill_dense_one_tile_few_blocks(7168, 18432, 132, 4));
  EXPECT_FALSE(prefill_dense_one_tile_few_blocks(7168, 129280, 132, 4));
  EXPECT_FALSE(prefill_dense_one_tile_few_blocks(2048, 2047, 132, 4));  // under 2048 x 2048 elements
  // The fifty-second session's whole tiles: between half and all of the device's blocks, rows of 2 units.
  EXPECT_FALSE(prefill_dense_one_tile_few_blocks(1536, 24576, 132, 4));  // 384 blocks
  EXPECT_FALSE(prefill_dense_one_tile_few_blocks(512, 32768, 132, 4));   // 2 units a row
  EXPECT_FALSE(prefill_dense_one_tile_few_blocks(4096, 16960, 132, 4));  // 265 blocks: 528 / 265 = 1
  EXPECT_TRUE(prefill_dense_one_tile_few_blocks(4096, 16896, 132, 4));   // 264: 2
}

// The default K split of an expert launch's groups (prefill_expert_k_splits_default), by hand: 2 on
// matrices of at least 2048 x 2048 elements with rows of 4 units or more (two a split), else none.
TEST(GemmMmaLayout, DefaultExpertKSplit) {
  EXPECT_EQ(prefill_expert_k_splits_default(4096, 2048), 2);  // 16 units a row
  EXPECT_EQ(prefill_expert_k_splits_default(2048, 4096), 2);  // 8
  EXPECT_EQ(prefill_expert_k_splits_default(1536, 7168), 2);  // 6
  EXPECT_EQ(prefill_expert_k_splits_default(1024, 4096), 2);  // 4: exactly two a split
  EXPECT_EQ(prefill_expert_k_splits_default(768, 8192), 1);   // 3 units: one split would hold one
  EXPECT_EQ(prefill_expert_k_splits_default(2048, 2047), 1);  // under 2048 x 2048 elements
  EXPECT_EQ(prefill_expert_k_splits_default(256, 256), 1);    // the demo's experts
  EXPECT_EQ(kPrefillExpertKSplitMaxPairs, 32);
}

}  // namespace
}  // namespace moepack::gpu
