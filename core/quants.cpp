// Dequantization of ggml's block formats and F32 dot products over them; see quants.h for
// the layouts and the source of every formula (ggml-quants.c at llama.cpp 82bb485).
#include "core/quants.h"

#include <array>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"

namespace moepack {
namespace {

// Copies block i of a row (data may be unaligned).
template <typename Block>
inline Block load_block(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

// Each dequantizer writes nb blocks of output to y.

void dequant_f32(const uint8_t* src, float* y, int64_t n) {
  std::memcpy(y, src, static_cast<size_t>(n) * sizeof(float));
}

// Plain types in fixed chunks of 8 (so the loops vectorize), then the tail.
template <float (*Convert)(uint16_t)>
void dequant_16bit(const uint8_t* src, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint16_t h[8];
    std::memcpy(h, src + 2 * i, sizeof h);
    for (int j = 0; j < 8; ++j) y[i + j] = Convert(h[j]);
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    y[i] = Convert(h);
  }
}

void dequant_f16(const uint8_t* src, float* y, int64_t n) { dequant_16bit<fp16_to_fp32>(src, y, n); }
void dequant_bf16(const uint8_t* src, float* y, int64_t n) { dequant_16bit<bf16_to_fp32>(src, y, n); }

void dequant_q4_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int x0 = (b.qs[j] & 0x0F) - 8;
      const int x1 = (b.qs[j] >> 4) - 8;
      y[j] = static_cast<float>(x0) * d;
      y[j + kQK / 2] = static_cast<float>(x1) * d;
    }
  }
}

void dequant_q4_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
      const int x0 = b.qs[j] & 0x0F;
      const int x1 = b.qs[j] >> 4;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + kQK / 2] = static_cast<float>(x1) * d + m;
    }
  }
}

void dequant_q5_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;         // 5th bit of element j
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;  // ... of element j + 16
      y[j] = static_cast<float>(((b.qs[j] & 0x0F) | h0) - 16) * d;
      y[j + kQK / 2] = static_cast<float>(((b.qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

void dequant_q5_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      y[j] = static_cast<float>((b.qs[j] & 0x0F) | h0) * d + m;
      y[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) | h1) * d + m;
    }
  }
}

void dequant_q8_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// e2m1 values times two (ggml's kvalues_mxfp4).
constexpr std::array<int8_t, 16> kMxfp4Values = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): the E8M0 scale 2^(e - 127) halved, as a float bit pattern (subnormal for e < 2).
inline float e8m0_to_fp32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void dequant_mxfp4(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK) {
    const auto b = load_block<BlockMXFP4>(src, i);
    const float d = e8m0_to_fp32_half(b.e);
    float lut[16];  // kvalues[c] * d, the same product ggml computes per element
    for (int c = 0; c < 16; ++c) lut[c] = static_cast<float>(kMxfp4Values[static_cast<size_t>(c)]) * d;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = lut[b.qs[j] & 0x0F];
      y[j + kQK / 2] = lut[b.qs[j] >> 4];
    }
  }
}

void dequant_q2_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    int s = 0;  // sub-block
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part, ++s) {  // elements l < 16, then 16 <= l < 32
          const float dl = d * static_cast<float>(b.scales[s] & 0x0F);
          const float ml = dmin * static_cast<float>(b.scales[s] >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

// The 16 6-bit Q3_K scales, unpacked (still offset by 32).
inline std::array<int, 16> q3_K_scales(const uint8_t* sc) {
  std::array<int, 16> out{};
  for (int s = 0; s < 16; ++s) {
    const int lo = s < 8 ? (sc[s] & 0x0F) : (sc[s - 8] >> 4);
    const int hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    out[static_cast<size_t>(s)] = lo | (hi << 4);
  }
  return out;
}

void dequant_q3_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const std::array<int, 16> scales = q3_K_scales(b.scales);
    const uint8_t* q = b.qs;
    int s = 0;
    unsigned m = 1;  // hmask bit, one per (half, bit-plane)
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int part = 0; part < 2; ++part, ++s) {
          const float dl = d * static_cast<float>(scales[static_cast<size_t>(s)] - 32);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int v = ((q[l] >> shift) & 3) - ((b.hmask[l] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

// ggml's get_scale_min_k4: 6-bit scale and min of sub-block j (0..7) of Q4_K / Q5_K.
inline void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void dequant_q4_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    for (int s = 0; s < 8; s += 2, q += 32) {
      int sc = 0, m = 0;
      scale_min_k4(s, b.scales, sc, m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      scale_min_k4(s + 1, b.scales, sc, m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequant_q5_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    for (int s = 0; s < 8; s += 2, q += 32) {
      int sc = 0, m = 0;
      scale_min_k4(s, b.scales, sc, m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      scale_min_k4(s + 1, b.scales, sc, m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      const unsigned u1 = 1u << s, u2 = 2u << s;
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((q[l] & 0x0F) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((q[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
      }
    }
  }
}

void dequant_q6_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    // ggml computes d * sc * q as (d * sc) * q; d * sc is formed once per sub-block here.
    float ds[16];
    for (int s = 0; s < 16; ++s) ds[s] = d * static_cast<float>(b.scales[s]);
    for (int half = 0; half < 2; ++half, y += 128) {
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t* qh = b.qh + 32 * half;
      for (int r = 0; r < 4; ++r) {
        // Element 32r + l: low 4 bits from ql[l] (r even) or ql[l + 32] (r odd), low nibble
        // for r < 2 and high nibble for r >= 2; high 2 bits from (qh[l] >> 2r) & 3.
        const uint8_t* lo = ql + 32 * (r & 1);
        const int nshift = 4 * (r >> 1);
        for (int part = 0; part < 2; ++part) {  // sub-block 8 half + 2r + part, 16 elements
          const float scale = ds[8 * half + 2 * r + part];
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int q = (((lo[l] >> nshift) & 0x0F) | (((qh[l] >> (2 * r)) & 3) << 4)) - 32;
            y[32 * r + l] = scale * static_cast<float>(q);
          }
        }
      }
    }
  }
}

void dequant_q8_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK_K) {
    const auto b = load_block<BlockQ8_K>(src, i);
    for (int j = 0; j < kQK_K; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

// fn(src, dst, count): count is elements for the plain types and blocks for the others.
using DequantFn = void (*)(const uint8_t*, float*, int64_t);

struct Kernel {
  DequantFn fn = nullptr;
  int64_t block = 1;  // elements per block
  int64_t block_bytes = 0;
};

Kernel kernel_for(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
      return {dequant_f32, 1, 4};
    case GgmlType::F16:
      return {dequant_f16, 1, 2};
    case GgmlType::BF16:
      return {dequant_bf16, 1, 2};
    case GgmlType::Q4_0:
      return {dequant_q4_0, kQK, sizeof(BlockQ4_0)};
    case GgmlType::Q4_1:
      return {dequant_q4_1, kQK, sizeof(BlockQ4_1)};
    case GgmlType::Q5_0:
      return {dequant_q5_0, kQK, sizeof(BlockQ5_0)};
    case GgmlType::Q5_1:
      return {dequant_q5_1, kQK, sizeof(BlockQ5_1)};
    case GgmlType::Q8_0:
      return {dequant_q8_0, kQK, sizeof(BlockQ8_0)};
    case GgmlType::MXFP4:
      return {dequant_mxfp4, kQK, sizeof(BlockMXFP4)};
    case GgmlType::Q2_K:
      return {dequant_q2_K, kQK_K, sizeof(BlockQ2_K)};
    case GgmlType::Q3_K:
      return {dequant_q3_K, kQK_K, sizeof(BlockQ3_K)};
    case GgmlType::Q4_K:
      return {dequant_q4_K, kQK_K, sizeof(BlockQ4_K)};
    case GgmlType::Q5_K:
      return {dequant_q5_K, kQK_K, sizeof(BlockQ5_K)};
    case GgmlType::Q6_K:
      return {dequant_q6_K, kQK_K, sizeof(BlockQ6_K)};
    case GgmlType::Q8_K:
      return {dequant_q8_K, kQK_K, sizeof(BlockQ8_K)};
    default:
      return {};
  }
}

// The kernel for `type`, after checking `n`; throws Error naming the function and the type.
Kernel checked_kernel(const char* what, GgmlType type, int64_t n) {
  const Kernel k = kernel_for(type);
  if (k.fn == nullptr) {
    throw Error(std::string(what) + ": type " + std::string(ggml_type_name(type)) + " is not supported");
  }
  if (n < 0 || n % k.block != 0) {
    throw Error(std::string(what) + ": " + std::to_string(n) + " elements is not a whole number of " +
                std::string(ggml_type_name(type)) + " blocks of " + std::to_string(k.block));
  }
  return k;
}

// Sum of a[k] * b[k] over n elements in 8 lanes (element k in lane k % 8), lanes added
// pairwise at the end.
struct Accumulator {
  std::array<float, 8> lane{};

  void add(const float* a, const float* b, int64_t n) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      for (int j = 0; j < 8; ++j) lane[static_cast<size_t>(j)] += a[k + j] * b[k + j];
    }
    for (int j = 0; k < n; ++k, ++j) lane[static_cast<size_t>(j)] += a[k] * b[k];
  }

  float total() const {
    return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  }
};

}  // namespace

bool quant_supported(GgmlType type) { return kernel_for(type).fn != nullptr; }

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const Kernel k = checked_kernel("dequantize_row", type, n);
  k.fn(static_cast<const uint8_t*>(src), dst, n / k.block);
}

float vec_dot(GgmlType type, const void* row, const float* x, int64_t n) {
  const Kernel k = checked_kernel("vec_dot", type, n);
  Accumulator acc;
  // Every block size divides 256 and n is a whole number of blocks, so chunks of up to 256
  // elements are whole numbers of blocks.
  const auto* src = static_cast<const uint8_t*>(row);
  alignas(32) float tmp[kQK_K];
  for (int64_t i = 0; i < n; i += kQK_K) {
    const int64_t len = n - i < kQK_K ? n - i : kQK_K;
    k.fn(src + i / k.block * k.block_bytes, tmp, len / k.block);
    acc.add(tmp, x + i, len);
  }
  return acc.total();
}

}  // namespace moepack
