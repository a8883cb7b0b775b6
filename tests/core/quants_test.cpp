// core/fp16.h and core/quants.h on hand-built blocks.
//
// Oracle: values worked out by hand from the format definitions (ggml-common.h and the
// dequantize_row_* functions of ggml-quants.c at llama.cpp 82bb485, summarised in quants.h);
// the arithmetic is in the comments. Every block uses powers-of-two scales so that each
// expected value is exact in float and compared with ==. Each checked element of a block is
// also read back through vec_dot with a one-hot x, and a second block with every scale
// doubled checks that blocks are addressed at the right stride.
#include "core/quants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "core/ggml_type.h"

namespace moepack {
namespace {

// Halves used below (sign:1 exponent:5 bias 15, mantissa:10).
constexpr uint16_t kHalf0_25 = 0x3400;  // 2^-2
constexpr uint16_t kHalf0_5 = 0x3800;   // 2^-1
constexpr uint16_t kHalf1 = 0x3C00;     // 2^0
constexpr uint16_t kHalf1_5 = 0x3E00;   // 1 + 512/1024
constexpr uint16_t kHalf2 = 0x4000;     // 2^1
constexpr uint16_t kHalfM2 = 0xC000;    // -2

// Doubles a positive or negative normal half (exponent + 1).
uint16_t twice(uint16_t h) { return static_cast<uint16_t>(h + 0x0400); }

template <typename Block>
std::vector<uint8_t> bytes_of(const Block& b) {
  std::vector<uint8_t> out(sizeof(Block));
  std::memcpy(out.data(), &b, sizeof(Block));
  return out;
}

// Dequantizes `row` (n elements of `type`) and checks the hand-computed elements, directly
// and (unless the row holds an inf, which times 0 is NaN) through vec_dot with x = e_k.
void check(GgmlType type, const std::vector<uint8_t>& row, int64_t n, const std::map<int, float>& expect,
           bool through_vec_dot = true) {
  std::vector<float> y(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
  dequantize_row(type, row.data(), y.data(), n);
  std::vector<float> x(static_cast<size_t>(n), 0.0f);
  for (const auto& [k, v] : expect) {
    EXPECT_EQ(y[static_cast<size_t>(k)], v) << ggml_type_name(type) << " element " << k;
    if (!through_vec_dot) continue;
    x[static_cast<size_t>(k)] = 1.0f;
    EXPECT_EQ(vec_dot(type, row.data(), x.data(), n), v) << ggml_type_name(type) << " vec_dot e_" << k;
    x[static_cast<size_t>(k)] = 0.0f;
  }
  for (float v : y) EXPECT_FALSE(std::isnan(v)) << ggml_type_name(type) << ": element not written";
}

// A row of block `a` then block `b` (b = a with every scale doubled): element B + k of the
// row must be twice element k.
template <typename Block>
void check_second_block_doubles(GgmlType type, const Block& a, const Block& b, int64_t block,
                                const std::map<int, float>& expect) {
  std::vector<uint8_t> row = bytes_of(a);
  const std::vector<uint8_t> second = bytes_of(b);
  row.insert(row.end(), second.begin(), second.end());
  std::map<int, float> both = expect;
  for (const auto& [k, v] : expect) both[static_cast<int>(block) + k] = 2 * v;
  check(type, row, 2 * block, both);
}

// ---------------------------------------------------------------------------------------------
// fp16.h

TEST(Fp16, HalfToFloat) {
  EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);  // (1 + 0x155/1024) * 2^-2 = 1365/4096
  EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);         // (2 - 2^-10) * 2^15, the largest half
  EXPECT_EQ(fp16_to_fp32(0x0400), 0x1p-14f);         // smallest normal
  EXPECT_EQ(fp16_to_fp32(0x0001), 0x1p-24f);         // smallest subnormal: 1 * 2^-24
  EXPECT_EQ(fp16_to_fp32(0x03FF), 1023 * 0x1p-24f);  // largest subnormal
  EXPECT_EQ(fp16_to_fp32(0x8001), -0x1p-24f);
  EXPECT_EQ(std::bit_cast<uint32_t>(fp16_to_fp32(0x8000)), 0x80000000u);  // -0
  EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));  // signalling NaN stays NaN
}

// Every one of the 65536 bit patterns against the definition of binary16:
// (-1)^s * mantissa * 2^-24 (exponent 0), (-1)^s * (1024 + mantissa) * 2^(exponent - 25)
// (exponent 1..30), +-inf or NaN (exponent 31); and back again exactly.
TEST(Fp16, EveryHalfConvertsExactlyAndBack) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t exp = (h >> 10) & 31, mant = h & 1023;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    const float got = fp16_to_fp32(static_cast<uint16_t>(h));
    if (exp == 31) {
      if (mant == 0) {
        EXPECT_EQ(got, static_cast<float>(sign * INFINITY)) << std::hex << h;
      } else {
        EXPECT_TRUE(std::isnan(got)) << std::hex << h;
      }
      continue;
    }
    const double want =
        exp == 0 ? sign * std::ldexp(mant, -24) : sign * std::ldexp(1024 + mant, static_cast<int>(exp) - 25);
    ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
    ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(got), h) << std::hex << h;
  }
}

// The midpoint between every pair of adjacent finite halves (exact in float: 12 significant
// bits) rounds to the one with the even mantissa; one float ulp either side rounds to the
// nearer one.
TEST(Fp16, EveryMidpointRoundsToEven) {
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float lo = fp16_to_fp32(static_cast<uint16_t>(h | sign));
      const float hi = fp16_to_fp32(static_cast<uint16_t>((h + 1) | sign));
      const float mid = (lo + hi) / 2;  // exact
      const uint32_t even = (h % 2 == 0) ? h : h + 1;
      ASSERT_EQ(fp32_to_fp16(mid), even | sign) << std::hex << h;
      ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, lo)), h | sign) << std::hex << h;
      ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, hi)), (h + 1) | sign) << std::hex << h;
    }
  }
}

TEST(Fp16, FloatToHalfRoundsToNearestEven) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(fp32_to_fp16(65519.996f), 0x7BFF);  // below the midpoint 65520 of 65504 and 65536
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);    // tie: 65536 (even mantissa) overflows to inf
  EXPECT_EQ(fp32_to_fp16(1e30f), 0x7C00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
  // 1 + 2^-11 is halfway between 1 (mantissa 0, even) and 1 + 2^-10: rounds down.
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between mantissa 1 (odd) and 2 (even): rounds up to 0x3C02.
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);
  // Just above the halfway point rounds up.
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  // Mantissa all ones + half an ulp carries into the exponent: 2 - 2^-11 -> 2.0 (0x4000).
  EXPECT_EQ(fp32_to_fp16(2.0f - 0x1p-11f), 0x4000);
  // Subnormal results are multiples of 2^-24.
  EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);             // tie between 0 and 1 unit: 0 is even
  EXPECT_EQ(fp32_to_fp16(3 * 0x1p-25f), 0x0002);         // tie between 1 and 2 units: 2
  EXPECT_EQ(fp32_to_fp16(0x1p-14f - 0x1p-26f), 0x0400);  // 1023.75 units rounds to 1024 = 2^-14
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1e-10f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::quiet_NaN()), 0xFE00);
}

TEST(Fp16, Bf16) {
  EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);          // 0x3F800000
  EXPECT_EQ(bf16_to_fp32(0xC0A0), -5.0f);         // 0xC0A00000: -(1 + 0.25) * 2^2
  EXPECT_EQ(bf16_to_fp32(0x3EAB), 0.333984375f);  // (1 + 0x2B/128) * 2^-2 = 171/512
  EXPECT_EQ(bf16_to_fp32(0x0001), 0x1p-133f);     // mantissa bit 16 of a subnormal float
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f), 0x3F80);      // tie, 0x3F80 is even
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie between 0x3F81 and 0x3F82 (even)
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7F800001u)), 0x7FC0);  // sNaN made quiet
  EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
}

// ---------------------------------------------------------------------------------------------
// Sizes and errors

TEST(Quants, BlockSizesMatchGgmlTypeTable) {
  struct Row {
    GgmlType type;
    size_t bytes;
    int64_t block;
  };
  const Row rows[] = {
      {GgmlType::Q4_0, sizeof(BlockQ4_0), kQK},
      {GgmlType::Q4_1, sizeof(BlockQ4_1), kQK},
      {GgmlType::Q5_0, sizeof(BlockQ5_0), kQK},
      {GgmlType::Q5_1, sizeof(BlockQ5_1), kQK},
      {GgmlType::Q8_0, sizeof(BlockQ8_0), kQK},
      {GgmlType::MXFP4, sizeof(BlockMXFP4), kQK},
      {GgmlType::Q2_K, sizeof(BlockQ2_K), kQK_K},
      {GgmlType::Q3_K, sizeof(BlockQ3_K), kQK_K},
      {GgmlType::Q4_K, sizeof(BlockQ4_K), kQK_K},
      {GgmlType::Q5_K, sizeof(BlockQ5_K), kQK_K},
      {GgmlType::Q6_K, sizeof(BlockQ6_K), kQK_K},
      {GgmlType::Q8_K, sizeof(BlockQ8_K), kQK_K},
      {GgmlType::F32, 4, 1},
      {GgmlType::F16, 2, 1},
      {GgmlType::BF16, 2, 1},
  };
  for (const Row& r : rows) {
    EXPECT_TRUE(quant_supported(r.type)) << ggml_type_name(r.type);
    EXPECT_EQ(ggml_traits(r.type).type_size, r.bytes) << ggml_type_name(r.type);
    EXPECT_EQ(ggml_traits(r.type).block_size, static_cast<uint32_t>(r.block)) << ggml_type_name(r.type);
  }
}

TEST(Quants, RejectsUnsupportedTypesAndPartialBlocks) {
  std::vector<uint8_t> src(1024);
  std::vector<float> dst(512), x(512);
  for (GgmlType t : {GgmlType::Q8_1, GgmlType::IQ2_XXS, GgmlType::IQ4_NL, GgmlType::I32, GgmlType::TQ2_0,
                     GgmlType::NVFP4}) {
    EXPECT_FALSE(quant_supported(t)) << ggml_type_name(t);
    EXPECT_THROW(dequantize_row(t, src.data(), dst.data(), 256), Error) << ggml_type_name(t);
    EXPECT_THROW(vec_dot(t, src.data(), x.data(), 256), Error) << ggml_type_name(t);
  }
  EXPECT_THROW(dequantize_row(GgmlType::Q4_0, src.data(), dst.data(), 33), Error);
  EXPECT_THROW(dequantize_row(GgmlType::Q4_K, src.data(), dst.data(), 128), Error);
  EXPECT_THROW(dequantize_row(GgmlType::F32, src.data(), dst.data(), -1), Error);
  EXPECT_THROW(vec_dot(GgmlType::Q6_K, src.data(), x.data(), 32), Error);
  EXPECT_NO_THROW(dequantize_row(GgmlType::Q4_K, src.data(), dst.data(), 0));
  EXPECT_EQ(vec_dot(GgmlType::Q4_K, src.data(), x.data(), 0), 0.0f);
}

// ---------------------------------------------------------------------------------------------
// Plain types

TEST(Quants, F32F16Bf16Rows) {
  // F32 from an unaligned source (one byte in).
  const float f[3] = {1.5f, -0.25f, 3e-40f};  // 3e-40 is a float subnormal, copied unchanged
  std::vector<uint8_t> row(1 + sizeof f);
  std::memcpy(row.data() + 1, f, sizeof f);
  std::vector<uint8_t> f32(row.begin() + 1, row.end());
  check(GgmlType::F32, f32, 3, {{0, 1.5f}, {1, -0.25f}, {2, 3e-40f}});
  float y[3];
  dequantize_row(GgmlType::F32, row.data() + 1, y, 3);
  EXPECT_EQ(y[2], 3e-40f);

  // F16: 1, -2, 2^-24 (smallest subnormal), 65504 (largest finite).
  const uint16_t h[4] = {0x3C00, 0xC000, 0x0001, 0x7BFF};
  std::vector<uint8_t> f16(sizeof h);
  std::memcpy(f16.data(), h, sizeof h);
  check(GgmlType::F16, f16, 4, {{0, 1.0f}, {1, -2.0f}, {2, 0x1p-24f}, {3, 65504.0f}});

  // BF16: the upper halves of 1.0f, -5.0f, 0x3EAB0000 = 171/512 and 2^-133.
  const uint16_t b[4] = {0x3F80, 0xC0A0, 0x3EAB, 0x0001};
  std::vector<uint8_t> bf16(sizeof b);
  std::memcpy(bf16.data(), b, sizeof b);
  check(GgmlType::BF16, bf16, 4, {{0, 1.0f}, {1, -5.0f}, {2, 0.333984375f}, {3, 0x1p-133f}});
}

// dequantize_row on F16 / BF16 rows of every bit pattern (65536 elements, then 65531 from an
// odd address: chunks of 8 and a tail) agrees with the element conversions checked above.
TEST(Quants, F16Bf16RowsOfEveryPattern) {
  std::vector<uint8_t> bytes(2 * 65536 + 1);
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto v = static_cast<uint16_t>(h);
    std::memcpy(bytes.data() + 1 + 2 * h, &v, 2);
  }
  std::vector<float> y(65536);
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    for (int64_t n : {65536, 65531}) {
      std::fill(y.begin(), y.end(), 0.0f);
      dequantize_row(type, bytes.data() + 1, y.data(), n);
      for (int64_t h = 0; h < n; ++h) {
        const auto v = static_cast<uint16_t>(h);
        const float want = type == GgmlType::F16 ? fp16_to_fp32(v) : bf16_to_fp32(v);
        ASSERT_EQ(std::bit_cast<uint32_t>(y[static_cast<size_t>(h)]), std::bit_cast<uint32_t>(want))
            << ggml_type_name(type) << " " << std::hex << h;
      }
    }
  }
}

TEST(Quants, F32DotSumsEveryElement) {
  // 1 + 2 + ... + 1000 = 1000 * 1001 / 2 = 500500; every partial sum is an integer < 2^24,
  // so F32 is exact. 1000 is not a multiple of 8 or 256: the tail is included.
  std::vector<float> row(1000), ones(1000, 1.0f);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>(i + 1);
  EXPECT_EQ(vec_dot(GgmlType::F32, row.data(), ones.data(), 1000), 500500.0f);
}

// ---------------------------------------------------------------------------------------------
// 32-element blocks. Unless said otherwise qs[j] = j | (15 - j) << 4: element j (j < 16) has
// q = j and element j + 16 has q = 15 - j.

void fill_nibbles(uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
}

TEST(Quants, Q4_0) {
  BlockQ4_0 b{};
  b.d = kHalf0_5;
  fill_nibbles(b.qs);
  // y = d * (q - 8)
  const std::map<int, float> expect = {
      {0, -4.0f},   // q 0:  0.5 * -8
      {5, -1.5f},   // q 5:  0.5 * -3
      {8, 0.0f},    // q 8
      {15, 3.5f},   // q 15: 0.5 * 7
      {16, 3.5f},   // q 15 - 0 = 15
      {20, 1.5f},   // q 15 - 4 = 11: 0.5 * 3
      {31, -4.0f},  // q 0
  };
  check(GgmlType::Q4_0, bytes_of(b), kQK, expect);
  BlockQ4_0 b2 = b;
  b2.d = twice(b.d);
  check_second_block_doubles(GgmlType::Q4_0, b, b2, kQK, expect);
}

TEST(Quants, Q4_0DotOverTwoBlocks) {
  // Block 1: d 0.5 and the nibbles above: element j + element j + 16 = (j - 8) + (7 - j) = -1,
  //   so the block sums to 16 * -1 * 0.5 = -8.
  // Block 2: d 2, qs[j] = 0xF0: elements j are (0 - 8) * 2 = -16, elements j + 16 are
  //   (15 - 8) * 2 = 14; the block sums to 16 * (-16 + 14) = -32.
  // x = 1 on block 1, 2 on block 2: -8 + 2 * -32 = -72 (all partial sums exact).
  BlockQ4_0 b[2]{};
  b[0].d = kHalf0_5;
  fill_nibbles(b[0].qs);
  b[1].d = kHalf2;
  std::memset(b[1].qs, 0xF0, sizeof b[1].qs);
  std::vector<float> x(64, 1.0f);
  for (size_t i = 32; i < 64; ++i) x[i] = 2.0f;
  EXPECT_EQ(vec_dot(GgmlType::Q4_0, b, x.data(), 64), -72.0f);
}

TEST(Quants, Q4_1) {
  BlockQ4_1 b{};
  b.d = kHalf0_25;
  b.m = kHalf1_5;
  fill_nibbles(b.qs);
  // y = d * q + m = 0.25 q + 1.5
  const std::map<int, float> expect = {
      {0, 1.5f},    // q 0
      {7, 3.25f},   // q 7: 1.75 + 1.5
      {15, 5.25f},  // q 15: 3.75 + 1.5
      {16, 5.25f},  // q 15
      {31, 1.5f},   // q 0
      {27, 2.5f},   // q 15 - 11 = 4: 1 + 1.5
  };
  check(GgmlType::Q4_1, bytes_of(b), kQK, expect);
  BlockQ4_1 b2 = b;
  b2.d = twice(b.d);
  b2.m = twice(b.m);
  check_second_block_doubles(GgmlType::Q4_1, b, b2, kQK, expect);
}

// qh = 0xAAAA5555 (bytes 55 55 AA AA): bits 0, 2, .., 14 and 17, 19, .., 31 are set, so
// element j (< 16) has its 5th bit iff j is even and element j + 16 iff j is odd.
void fill_qh(uint8_t* qh) {
  qh[0] = 0x55;
  qh[1] = 0x55;
  qh[2] = 0xAA;
  qh[3] = 0xAA;
}

TEST(Quants, Q5_0) {
  BlockQ5_0 b{};
  b.d = kHalf0_5;
  fill_qh(b.qh);
  fill_nibbles(b.qs);
  // y = d * (q - 16), q = nibble | 16 * bit
  const std::map<int, float> expect = {
      {0, 0.0f},    // 0 | 16 = 16: 0
      {1, -7.5f},   // 1, no bit: 0.5 * -15
      {2, 1.0f},    // 2 | 16 = 18: 0.5 * 2
      {15, -0.5f},  // 15, no bit: 0.5 * -1
      {16, -0.5f},  // j 0: 15, bit 16 clear: 0.5 * -1
      {17, 7.0f},   // j 1: 14 | 16 (bit 17) = 30: 0.5 * 14
      {31, 0.0f},   // j 15: 0 | 16 (bit 31) = 16: 0
  };
  check(GgmlType::Q5_0, bytes_of(b), kQK, expect);
  BlockQ5_0 b2 = b;
  b2.d = twice(b.d);
  check_second_block_doubles(GgmlType::Q5_0, b, b2, kQK, expect);
}

TEST(Quants, Q5_1) {
  BlockQ5_1 b{};
  b.d = kHalf0_5;
  b.m = kHalfM2;
  fill_qh(b.qh);
  fill_nibbles(b.qs);
  // y = d * q + m = 0.5 q - 2, q as for Q5_0
  const std::map<int, float> expect = {
      {0, 6.0f},    // 16: 8 - 2
      {1, -1.5f},   // 1: 0.5 - 2
      {2, 7.0f},    // 18: 9 - 2
      {15, 5.5f},   // 15: 7.5 - 2
      {16, 5.5f},   // 15
      {17, 13.0f},  // 30: 15 - 2
      {31, 6.0f},   // 16
  };
  check(GgmlType::Q5_1, bytes_of(b), kQK, expect);
  BlockQ5_1 b2 = b;
  b2.d = twice(b.d);
  b2.m = twice(b.m);  // -2 -> -4
  check_second_block_doubles(GgmlType::Q5_1, b, b2, kQK, expect);
}

TEST(Quants, Q8_0) {
  BlockQ8_0 b{};
  b.d = kHalf0_25;
  for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(8 * j - 128);  // -128, -120, .., 120
  const std::map<int, float> expect = {
      {0, -32.0f},  // 0.25 * -128
      {1, -30.0f},  // 0.25 * -120
      {16, 0.0f},   // 0.25 * 0
      {17, 2.0f},   // 0.25 * 8
      {31, 30.0f},  // 0.25 * 120
  };
  check(GgmlType::Q8_0, bytes_of(b), kQK, expect);
  BlockQ8_0 b2 = b;
  b2.d = twice(b.d);
  check_second_block_doubles(GgmlType::Q8_0, b, b2, kQK, expect);
}

TEST(Quants, MXFP4) {
  // e = 127: scale 2^(127 - 127) = 1, halved = 0.5; kvalues (twice e2m1)
  // {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12} * 0.5 are the e2m1 values.
  BlockMXFP4 b{};
  b.e = 127;
  fill_nibbles(b.qs);
  const std::map<int, float> expect = {
      {0, 0.0f},    // code 0
      {1, 0.5f},    // code 1: 1 * 0.5
      {5, 3.0f},    // code 5: 6 * 0.5
      {7, 6.0f},    // code 7: 12 * 0.5
      {9, -0.5f},   // code 9: -1 * 0.5
      {15, -6.0f},  // code 15: -12 * 0.5
      {16, -6.0f},  // code 15 - 0 = 15
      {19, -2.0f},  // code 15 - 3 = 12: -4 * 0.5
      {23, 0.0f},   // code 15 - 7 = 8: "-0" = 0
      {31, 0.0f},   // code 0
  };
  check(GgmlType::MXFP4, bytes_of(b), kQK, expect);
  BlockMXFP4 b2 = b;
  b2.e = 128;  // scale doubles
  check_second_block_doubles(GgmlType::MXFP4, b, b2, kQK, expect);

  // Extreme exponents: GGML_E8M0_TO_FP32_HALF(e) = 2^(e - 128), a float subnormal for e < 2.
  BlockMXFP4 s{};
  s.qs[0] = 0x21;  // element 0 code 1 (kvalue 1), element 16 code 2 (kvalue 2)
  s.qs[1] = 0x73;  // element 1 code 3 (kvalue 3), element 17 code 7 (kvalue 12)
  s.e = 0;
  check(GgmlType::MXFP4, bytes_of(s), kQK,
        {{0, 0x1p-128f}, {16, 0x1p-127f}, {1, 3 * 0x1p-128f}, {17, 12 * 0x1p-128f}, {2, 0.0f}});
  s.e = 1;  // 2^-127
  check(GgmlType::MXFP4, bytes_of(s), kQK, {{0, 0x1p-127f}, {16, 0x1p-126f}, {17, 12 * 0x1p-127f}});
  s.e = 200;  // 2^72
  check(GgmlType::MXFP4, bytes_of(s), kQK, {{0, 0x1p72f}, {1, 3 * 0x1p72f}, {17, 12 * 0x1p72f}});
  s.e = 255;  // 2^127; 12 * 2^127 = 1.5 * 2^130 overflows to inf, as in ggml
  check(GgmlType::MXFP4, bytes_of(s), kQK, {{0, 0x1p127f}, {17, std::numeric_limits<float>::infinity()}},
        /*through_vec_dot=*/false);
}

// ---------------------------------------------------------------------------------------------
// K-quants (256 elements).

// qs[i] = 255 - i for Q2_K and Q3_K: element 128h + 32p + l reads byte b = 255 - (32h + l) and
// q = (b >> 2p) & 3; its sub-block is s = 8h + 2p + (l >= 16).
TEST(Quants, Q2_K) {
  BlockQ2_K b{};
  b.d = kHalf0_5;
  b.dmin = kHalf0_25;
  // scales[s] = (15 - s) | s << 4: scale 15 - s, min s; y = 0.5 (15 - s) q - 0.25 s.
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>((15 - s) | s << 4);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(255 - i);
  const std::map<int, float> expect = {
      {0, 22.5f},     // h0 p0 l0:  b 255, q 3; s 0: 7.5 * 3 - 0
      {5, 15.0f},     // h0 p0 l5:  b 250 = 11111010b, q 2; s 0: 7.5 * 2
      {19, -0.25f},   // h0 p0 l19: b 236 = 11101100b, q 0; s 1: 0 - 0.25
      {38, 12.5f},    // h0 p1 l6:  b 249 = 11111001b, q 2; s 2: 6.5 * 2 - 0.5
      {95, 8.75f},    // h0 p2 l31: b 224 = 11100000b, q 2; s 5: 5 * 2 - 1.25
      {112, 10.25f},  // h0 p3 l16: b 239 = 11101111b, q 3; s 7: 4 * 3 - 1.75
      {129, 5.0f},    // h1 p0 l1:  b 222 = 11011110b, q 2; s 8: 3.5 * 2 - 2
      {170, 0.0f},    // h1 p1 l10: b 213 = 11010101b, q 1; s 10: 2.5 * 1 - 2.5
      {200, -1.5f},   // h1 p2 l8:  b 215 = 11010111b, q 1; s 12: 1.5 * 1 - 3
      {244, -3.75f},  // h1 p3 l20: b 203 = 11001011b, q 3; s 15: 0 * 3 - 3.75
      {255, -3.75f},  // h1 p3 l31: b 192, q 3; s 15
  };
  check(GgmlType::Q2_K, bytes_of(b), kQK_K, expect);
  BlockQ2_K b2 = b;
  b2.d = twice(b.d);
  b2.dmin = twice(b.dmin);
  check_second_block_doubles(GgmlType::Q2_K, b, b2, kQK_K, expect);
}

TEST(Quants, Q3_K) {
  BlockQ3_K b{};
  b.d = kHalf0_5;
  // Stored 6-bit scales sv[s] (effective sv - 32), low nibble lo and high 2 bits hi:
  //   s   0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15
  //   sv  0 63 32 33 31  1 48 16  5 40 62 17 34  9 50 27
  //   lo  0 15  0  1 15  1  0  0  5  8 14  1  2  9  2 11
  //   hi  0  3  2  2  1  0  3  1  0  2  3  1  2  0  3  1
  //   eff -32 31 0 1 -1 -31 16 -16 -27 8 30 -15 2 -23 18 -5
  // Bytes 0..7: lo[j] | lo[j + 8] << 4; bytes 8..11: hi[i] | hi[i+4] << 2 | hi[i+8] << 4 | hi[i+12] << 6
  //   byte 8: 0 | 1<<2 | 0<<4 | 2<<6 = 132;  byte 9: 3 | 0 | 2<<4 | 0 = 35;
  //   byte 10: 2 | 3<<2 | 3<<4 | 3<<6 = 254; byte 11: 2 | 1<<2 | 1<<4 | 1<<6 = 86.
  const uint8_t scales[12] = {0x50, 0x8F, 0xE0, 0x11, 0x2F, 0x91, 0x20, 0xB0, 132, 35, 254, 86};
  std::memcpy(b.scales, scales, 12);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(255 - i);
  // hmask[l] = 0xA5 (bits 0, 2, 5, 7) for l < 16, 0x3C (bits 2..5) for l >= 16; element
  // 128h + 32p + l has hbit = bit (4h + p) of hmask[l]; v = q - (hbit ? 0 : 4).
  for (int l = 0; l < 32; ++l) b.hmask[l] = l < 16 ? 0xA5 : 0x3C;
  // y = 0.5 * eff(s) * v
  const std::map<int, float> expect = {
      {0, -48.0f},    // h0 p0 l0:  q 3, bit0 of A5 set, v 3; s0 -32: 0.5 * -32 * 3
      {19, -62.0f},   // h0 p0 l19: q 0, bit0 of 3C clear, v -4; s1 31: 0.5 * 31 * -4
      {38, 0.0f},     // h0 p1 l6:  q 2, bit1 of A5 clear, v -2; s2 0: 0 (-0)
      {60, -2.0f},    // h0 p1 l28: b 227 = 11100011b, q 0, bit1 of 3C clear, v -4; s3 1
      {95, -31.0f},   // h0 p2 l31: q 2, bit2 of 3C set, v 2; s5 -31
      {112, -24.0f},  // h0 p3 l16: q 3, bit3 of 3C set, v 3; s7 -16
      {129, 27.0f},   // h1 p0 l1:  q 2, bit4 of A5 clear, v -2; s8 -27
      {150, 4.0f},    // h1 p0 l22: b 201 = 11001001b, q 1, bit4 of 3C set, v 1; s9 8
      {170, 15.0f},   // h1 p1 l10: q 1, bit5 of A5 set, v 1; s10 30
      {200, -3.0f},   // h1 p2 l8:  b 215 = 11010111b, q 1, bit6 of A5 clear, v -3; s12 2
      {244, 2.5f},    // h1 p3 l20: q 3, bit7 of 3C clear, v -1; s15 -5
      {255, 2.5f},    // h1 p3 l31: q 3, v -1; s15 -5
  };
  check(GgmlType::Q3_K, bytes_of(b), kQK_K, expect);
  BlockQ3_K b2 = b;
  b2.d = twice(b.d);
  check_second_block_doubles(GgmlType::Q3_K, b, b2, kQK_K, expect);
}

// Q4_K / Q5_K scales: d 0.5, dmin 1, 6-bit scale sc and min m per sub-block of 32:
//   j   0  1  2  3  4  5  6  7
//   sc  1 63  0 10 33 17 48  5
//   m   2  0 63 20  7 40 16 62
// Bytes 0..3 = sc[j] | (sc[j+4] >> 4) << 6; bytes 4..7 = m[j] | (m[j+4] >> 4) << 6;
// bytes 8..11 = (sc[j+4] & 15) | (m[j+4] & 15) << 4:
//   0: 1 | 2<<6 = 129   1: 63 | 1<<6 = 127   2: 0 | 3<<6 = 192   3: 10 | 0 = 10
//   4: 2 | 0 = 2        5: 0 | 2<<6 = 128    6: 63 | 1<<6 = 127  7: 20 | 3<<6 = 212
//   8: 1 | 7<<4 = 0x71  9: 1 | 8<<4 = 0x81   10: 0 | 0 = 0       11: 5 | 14<<4 = 0xE5
constexpr uint8_t kK4Scales[12] = {129, 127, 192, 10, 2, 128, 127, 212, 0x71, 0x81, 0x00, 0xE5};

// qs[i] = 255 - 2i: qs[32c + l] low nibble is element 64c + l (sub-block 2c), high nibble
// element 64c + 32 + l (sub-block 2c + 1).
TEST(Quants, Q4_K) {
  BlockQ4_K b{};
  b.d = kHalf0_5;
  b.dmin = kHalf1;
  std::memcpy(b.scales, kK4Scales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(255 - 2 * i);
  // y = 0.5 * sc * q - m
  const std::map<int, float> expect = {
      {0, 5.5f},      // qs[0] 255 low 15; s0: 0.5 * 15 - 2
      {33, 472.5f},   // qs[1] 253 = 0xFD high 15; s1: 31.5 * 15 - 0
      {70, -63.0f},   // qs[38] 179 = 0xB3 low 3; s2: 0 - 63
      {127, 20.0f},   // qs[63] 129 = 0x81 high 8; s3: 5 * 8 - 20
      {140, 108.5f},  // qs[76] 103 = 0x67 low 7; s4: 16.5 * 7 - 7
      {180, 2.5f},    // qs[84] 87 = 0x57 high 5; s5: 8.5 * 5 - 40
      {200, 344.0f},  // qs[104] 47 = 0x2F low 15; s6: 24 * 15 - 16
      {230, -54.5f},  // qs[102] 51 = 0x33 high 3; s7: 2.5 * 3 - 62
      {255, -62.0f},  // qs[127] 1 high 0; s7: 0 - 62
  };
  check(GgmlType::Q4_K, bytes_of(b), kQK_K, expect);
  BlockQ4_K b2 = b;
  b2.d = twice(b.d);
  b2.dmin = twice(b.dmin);
  check_second_block_doubles(GgmlType::Q4_K, b, b2, kQK_K, expect);
}

TEST(Quants, Q5_K) {
  BlockQ5_K b{};
  b.d = kHalf0_5;
  b.dmin = kHalf1;
  std::memcpy(b.scales, kK4Scales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(255 - 2 * i);
  // qh[l] = 0x96 (bits 1, 2, 4, 7) for even l, 0x69 (bits 0, 3, 5, 6) for odd l; element
  // 32s + l gets +16 if bit s of qh[l] is set.
  for (int l = 0; l < 32; ++l) b.qh[l] = (l % 2 == 0) ? 0x96 : 0x69;
  const std::map<int, float> expect = {
      {0, 5.5f},      // s0 l0: bit0 of 96 clear, q 15: 0.5 * 15 - 2
      {33, 472.5f},   // s1 l1: bit1 of 69 clear, q 15: 31.5 * 15
      {70, -63.0f},   // s2 l6: bit2 of 96 set, q 19; sc 0: -63
      {97, 115.0f},   // s3 l1: qs[33] 189 = 0xBD high 11, bit3 of 69 set, q 27: 5 * 27 - 20
      {127, 100.0f},  // s3 l31: q 8, bit3 of 69 set, q 24: 5 * 24 - 20
      {140, 372.5f},  // s4 l12: q 7, bit4 of 96 set, q 23: 16.5 * 23 - 7
      {180, 2.5f},    // s5 l20: q 5, bit5 of 96 clear: 8.5 * 5 - 40
      {200, 344.0f},  // s6 l8: q 15, bit6 of 96 clear: 24 * 15 - 16
      {230, -14.5f},  // s7 l6: q 3, bit7 of 96 set, q 19: 2.5 * 19 - 62
      {255, -62.0f},  // s7 l31: q 0, bit7 of 69 clear: -62
  };
  check(GgmlType::Q5_K, bytes_of(b), kQK_K, expect);
  BlockQ5_K b2 = b;
  b2.d = twice(b.d);
  b2.dmin = twice(b.dmin);
  check_second_block_doubles(GgmlType::Q5_K, b, b2, kQK_K, expect);
}

TEST(Quants, Q6_K) {
  BlockQ6_K b{};
  b.d = kHalf0_5;
  const int8_t scales[16] = {1, -1, 2, -2, 3, -3, 4, -4, 127, -128, 5, -5, 10, -10, 0, 7};
  std::memcpy(b.scales, scales, 16);
  // ql[i] = 255 - i where bit 5 of i is clear (i < 32, 64 <= i < 96), ql[i] = i elsewhere, so
  // that ql[l] and ql[l + 32] differ in both nibbles.
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>((i & 32) ? i : 255 - i);
  // qh = 0xE4 (2-bit fields r0..r3 = 0, 1, 2, 3) for the first half, 0x1B (3, 2, 1, 0) for
  // the second. Element 128h + 32r + l: low 4 bits r0 ql[64h+l] & 15, r1 ql[64h+l+32] & 15,
  // r2 ql[64h+l] >> 4, r3 ql[64h+l+32] >> 4; high 2 bits field r of qh[32h + l];
  // sub-block 8h + 2r + l/16; y = 0.5 * sc * (q - 32).
  for (int i = 0; i < 64; ++i) b.qh[i] = i < 32 ? 0xE4 : 0x1B;
  const std::map<int, float> expect = {
      {0, -8.5f},       // h0 r0 l0:  ql[0] 255 low 15, hi 0: q 15; sc 1: 0.5 * -17
      {17, 9.0f},       // h0 r0 l17: ql[17] 238 = 0xEE low 14, hi 0: 14; sc -1: 0.5 * -1 * -18
      {40, -8.0f},      // h0 r1 l8:  ql[40] 40 = 0x28 low 8, hi 1: 24; sc 2: 1 * -8
      {70, 22.5f},      // h0 r2 l6:  ql[6] 249 = 0xF9 high 15, hi 2: 47; sc 3: 1.5 * 15
      {127, -38.0f},    // h0 r3 l31: ql[63] 63 = 0x3F high 3, hi 3: 51; sc -4: -2 * 19
      {128, 1968.5f},   // h1 r0 l0:  ql[64] 191 = 0xBF low 15, hi 3: 63; sc 127: 63.5 * 31
      {150, -1600.0f},  // h1 r0 l22: ql[86] 169 = 0xA9 low 9, hi 3: 57; sc -128: -64 * 25
      {180, -10.0f},    // h1 r1 l20: ql[116] 116 = 0x74 low 4, hi 2: 36; sc -5: -2.5 * 4
      {200, -25.0f},    // h1 r2 l8:  ql[72] 183 = 0xB7 high 11, hi 1: 27; sc 10: 5 * -5
      {230, 0.0f},      // h1 r3 l6:  ql[102] 102 = 0x66 high 6, hi 0: 6; sc 0: -0
      {255, -87.5f},    // h1 r3 l31: ql[127] 127 = 0x7F high 7, hi 0: 7; sc 7: 3.5 * -25
  };
  check(GgmlType::Q6_K, bytes_of(b), kQK_K, expect);
  BlockQ6_K b2 = b;
  b2.d = twice(b.d);
  check_second_block_doubles(GgmlType::Q6_K, b, b2, kQK_K, expect);
}

TEST(Quants, Q8_K) {
  BlockQ8_K b{};
  b.d = 0.125f;                                                            // a float, not a half
  for (int j = 0; j < kQK_K; ++j) b.qs[j] = static_cast<int8_t>(j - 128);  // -128 .. 127
  for (int i = 0; i < 16; ++i) b.bsums[i] = 12345;                         // not used by dequantization
  const std::map<int, float> expect = {
      {0, -16.0f},                                    // 0.125 * -128
      {127, -0.125f},                                 // 0.125 * -1
      {128, 0.0f},    {129, 0.125f}, {255, 15.875f},  // 0.125 * 127
  };
  check(GgmlType::Q8_K, bytes_of(b), kQK_K, expect);
  BlockQ8_K b2 = b;
  b2.d = 0.25f;
  check_second_block_doubles(GgmlType::Q8_K, b, b2, kQK_K, expect);
}

// ---------------------------------------------------------------------------------------------
// vec_dot over long rows of random blocks: equal to the double-precision dot product of the
// dequantized row (dequantize_row itself is checked above and against ggml in
// quants_fixtures_test) within the worst-case bound of F32 summation in 8 lanes,
// (n / 8 + 4) * 2^-24 * sum |y[k] x[k]|. Lengths that are not multiples of 256 exercise the
// last, partial chunk of the 32-element types.
TEST(Quants, VecDotMatchesDoubleDotOnRandomRows) {
  struct Case {
    GgmlType type;
    int64_t n;
  };
  const Case cases[] = {
      {GgmlType::F32, 1000},  {GgmlType::F16, 1000},  {GgmlType::BF16, 1000}, {GgmlType::Q4_0, 416},
      {GgmlType::Q4_1, 416},  {GgmlType::Q5_0, 416},  {GgmlType::Q5_1, 416},  {GgmlType::Q8_0, 416},
      {GgmlType::MXFP4, 416}, {GgmlType::Q2_K, 1024}, {GgmlType::Q3_K, 1024}, {GgmlType::Q4_K, 1024},
      {GgmlType::Q5_K, 1024}, {GgmlType::Q6_K, 1024}, {GgmlType::Q8_K, 1024},
  };
  uint32_t state = 12345;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };  // 24 bits
  for (const Case& c : cases) {
    const GgmlTypeTraits& t = ggml_traits(c.type);
    const uint64_t nb = static_cast<uint64_t>(c.n) / t.block_size;
    std::vector<uint8_t> row(nb * t.type_size);
    for (auto& v : row) v = static_cast<uint8_t>(next());
    // Give every scale field a finite value: halves 0x2000 .. 0x27FF are 2^-7 .. 2^-6.
    auto random_half = [&] { return static_cast<uint16_t>(0x2000 | (next() & 0x7FF)); };
    for (uint64_t b = 0; b < nb; ++b) {
      uint8_t* p = row.data() + b * t.type_size;
      auto put = [p](size_t offset, auto value) { std::memcpy(p + offset, &value, sizeof value); };
      switch (c.type) {
        case GgmlType::F32:
          put(0, static_cast<float>(next()) * 0x1p-24f - 0.5f);
          break;
        case GgmlType::F16:
          put(0, random_half());
          break;
        case GgmlType::BF16:
          put(0, fp32_to_bf16(fp16_to_fp32(random_half())));
          break;
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
          put(0, random_half());
          break;
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
          put(0, random_half());
          put(2, random_half());
          break;
        case GgmlType::Q2_K:
          put(offsetof(BlockQ2_K, d), random_half());
          put(offsetof(BlockQ2_K, dmin), random_half());
          break;
        case GgmlType::Q3_K:
          put(offsetof(BlockQ3_K, d), random_half());
          break;
        case GgmlType::Q6_K:
          put(offsetof(BlockQ6_K, d), random_half());
          break;
        case GgmlType::Q8_K:
          put(0, 0x1p-9f);
          break;
        case GgmlType::MXFP4:
          p[0] = static_cast<uint8_t>(120 + next() % 8);
          break;
        default:
          break;
      }
    }
    std::vector<float> y(static_cast<size_t>(c.n)), x(static_cast<size_t>(c.n));
    for (auto& v : x) v = static_cast<float>(next()) * 0x1p-23f - 1.0f;  // [-1, 1)
    dequantize_row(c.type, row.data(), y.data(), c.n);
    double ref = 0, abs_sum = 0;
    for (size_t k = 0; k < y.size(); ++k) {
      ASSERT_TRUE(std::isfinite(y[k])) << ggml_type_name(c.type);
      ref += static_cast<double>(y[k]) * x[k];
      abs_sum += std::fabs(static_cast<double>(y[k]) * x[k]);
    }
    const double bound = (static_cast<double>(c.n) / 8 + 4) * 0x1p-24 * abs_sum;
    EXPECT_GT(abs_sum, 0) << ggml_type_name(c.type);
    EXPECT_LE(std::fabs(vec_dot(c.type, row.data(), x.data(), c.n) - ref), bound) << ggml_type_name(c.type);
  }
}

}  // namespace
}  // namespace moepack
