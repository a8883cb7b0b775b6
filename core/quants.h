// Quantized block formats on the CPU: dequantization and dot products, exact to ggml.
//
// Why this file: the CPU backend is the reference every other backend is tested against, so
// turning GGUF tensor bytes into floats must reproduce ggml's own `to_float` bit for bit. The
// layouts below are those of ggml/src/ggml-common.h and the arithmetic that of the
// dequantize_row_* functions of ggml/src/ggml-quants.c, llama.cpp commit 82bb485 (the
// fixtures' commit). Tests: tests/core/quants_test.cpp (hand-built blocks, values worked out
// by hand) and tests/core/quants_fixtures_test.cpp (every tensor of the fixtures against
// ggml's *.dequant.json).
//
// A tensor row of `n` elements of a type with block size B is n / B consecutive blocks; rows
// never share a block. "half" is an IEEE binary16 bit pattern (core/fp16.h); all multi-byte
// fields are little-endian. y[k] is element k of the block's output (k = 0 .. B-1).
//
//  type   B    bytes  layout                                 y[k]
//  F32    1    4      float                                  x
//  F16    1    2      half                                   fp16(x)
//  BF16   1    2      upper 16 bits of a float               bf16(x)
//  Q4_0   32   18     half d; u8 qs[16]                      d * (q - 8)
//  Q4_1   32   20     half d, m; u8 qs[16]                   d * q + m
//  Q5_0   32   22     half d; u8 qh[4]; u8 qs[16]            d * (q - 16)
//  Q5_1   32   24     half d, m; u8 qh[4]; u8 qs[16]         d * q + m
//  Q8_0   32   34     half d; i8 qs[32]                      d * qs[k]
//  MXFP4  32   17     u8 e (E8M0); u8 qs[16]                 2^(e-128) * kvalues[q]
//   For the 32-element formats, qs[j] holds element j in its low nibble and element j + 16 in
//   its high nibble (j < 16). Q5_*: the 5th bit of element k is bit k of qh (as a u32).
//   MXFP4: kvalues = {0,1,2,3,4,6,8,12, 0,-1,-2,-3,-4,-6,-8,-12} are twice the e2m1 values,
//   so ggml halves the E8M0 scale (GGML_E8M0_TO_FP32_HALF: 2^(e-127) / 2, e = 0 and 1 give
//   the float subnormals 2^-128 and 2^-127).
//
//  K-quants, QK_K = 256 elements per super-block:
//  Q2_K   256  84     u8 scales[16]; u8 qs[64]; half d, dmin
//         16 sub-blocks of 16; sub-block s: scale = d * (scales[s] & 15),
//         min = dmin * (scales[s] >> 4); y = scale * q - min, q = 2 bits.
//         Element order: two halves of 128; in half h, bit-plane p (shift 2p) of qs[32h + l]
//         gives elements 128h + 32p + l (l < 32); sub-block s = 8h + 2p + (l >= 16).
//  Q3_K   256  110    u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d
//         16 sub-blocks of 16 with 6-bit signed scales (stored + 32) packed in 12 bytes:
//         low 4 bits of scale s are scales[s] & 15 (s < 8) or scales[s - 8] >> 4 (s >= 8);
//         high 2 bits are (scales[8 + s % 4] >> (2 * (s / 4))) & 3.
//         y = d * (scale - 32) * (q - (hbit ? 0 : 4)), q = 2 bits laid out as Q2_K;
//         hbit of element 128h + 32p + l is bit (4h + p) of hmask[l].
//  Q4_K   256  144    half d, dmin; u8 scales[12]; u8 qs[128]
//         8 sub-blocks of 32, 6-bit scale sc and min m each (get_scale_min_k4):
//         j < 4: sc = scales[j] & 63, m = scales[j + 4] & 63;
//         j >= 4: sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4,
//                 m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4.
//         y = d * sc * q - dmin * m. qs[32c + l]: low nibble element 64c + l (sub-block 2c),
//         high nibble element 64c + 32 + l (sub-block 2c + 1).
//  Q5_K   256  176    half d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
//         As Q4_K plus a 5th bit: element 32s + l (sub-block s) has bit s of qh[l] (+16).
//  Q6_K   256  210    u8 ql[128]; u8 qh[64]; i8 scales[16]; half d
//         16 sub-blocks of 16, y = d * scales[s] * (q - 32), q = 6 bits. Halves of 128:
//         for l < 32 in half h (ql += 64h, qh += 32h), element 128h + 32r + l takes its low
//         4 bits from: r = 0 ql[l] & 15, r = 1 ql[l + 32] & 15, r = 2 ql[l] >> 4,
//         r = 3 ql[l + 32] >> 4; its high 2 bits from (qh[l] >> 2r) & 3; its sub-block is
//         8h + 2r + l / 16.
//  Q8_K   256  292    float d; i8 qs[256]; i16 bsums[16]     d * qs[k] (bsums: sums of 16,
//         used only by ggml's integer dot products; ignored here)
//
// Arithmetic: in float, in the order ggml writes it (e.g. Q4_K computes d1 = d * sc and
// m1 = dmin * m, then d1 * q - m1). For every format here the products are exact in float, so
// the only rounding is the final add/subtract and contraction to FMA cannot change a result;
// quants.cpp is still compiled with -ffp-contract=off.
#pragma once

#include <cstdint>

#include "core/ggml_type.h"

namespace moepack {

inline constexpr int64_t kQK = 32;     // elements per block of Q4_0 .. Q8_0 and MXFP4
inline constexpr int64_t kQK_K = 256;  // elements per k-quant super-block

// Block structs, exactly ggml's (half fields hold binary16 bits). Data in a file may be
// unaligned; quants.cpp copies blocks with memcpy rather than dereferencing casted pointers.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// Bytes per block as listed in ggml_type.h's table (ggml-common.h's static_asserts). The
// table there is not constexpr, so these are checked here at compile time and against
// ggml_traits() at run time in quants_test.cpp.
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// True for the 15 types above (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q8_K,
// MXFP4); dequantize_row and vec_dot throw Error for any other.
bool quant_supported(GgmlType type);

// Both functions are pure (no state, no allocation): safe from any number of threads.
// A tensor of ne = {ne0, ne1, ne2, ne3} is ne1 * ne2 * ne3 rows of ne0 elements, row r at
// byte offset r * ggml_row_bytes(type, ne0) of the tensor data (expert e of a 3-D expert
// tensor is rows e * ne1 .. e * ne1 + ne1 - 1).

// Dequantizes one row: `src` holds n / B blocks of `type` (ggml_row_bytes(type, n) bytes,
// any alignment), `dst` receives n floats. Throws Error if the type is unsupported or n is
// negative or not a multiple of the block size B. Bit-exact to ggml's to_float.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// Dot product of one quantized row (as for dequantize_row) with n floats `x`: the row is
// dequantized exactly (as above) and multiplied in F32, summed in F32 over 8 interleaved
// partial sums (element k goes to lane k % 8; lanes are added pairwise at the end), so
// |vec_dot - exact| <= (n / 8 + 4) * 2^-24 * sum |y[k] * x[k]|. This is not ggml's vec_dot,
// which first quantizes x (Q8_K / Q8_0) and sums in integers. Throws as dequantize_row.
float vec_dot(GgmlType type, const void* row, const float* x, int64_t n);

}  // namespace moepack
