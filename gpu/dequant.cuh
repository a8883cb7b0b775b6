// Device-side dequantization of ggml block formats, 32 elements ("a chunk") at a time.
//
// The layouts and the arithmetic are exactly those of core/quants.h (read it first): every
// block size divides 32 or is 256, so element range [32c, 32c + 32) of a row is one 32-element
// block (Q4_0 .. Q8_0, MXFP4), one eighth of a 256-element super-block (k-quants), or 32 plain
// values (F32/F16/BF16, where the last chunk of a row may be partial). The products are exact
// in float for every format, so contraction to FMA cannot change a value: these functions give
// bit for bit what dequantize_row() gives on the CPU (tested in tests/gpu/gpu_ops_test.cpp).
//
// Data may be at any byte alignment (Q4_0 blocks are 18 bytes, MXFP4 17): multi-byte fields
// are assembled from bytes.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "core/ggml_type.h"

namespace moepack::gpu {

constexpr int kChunk = 32;  // elements per dequantized chunk

__device__ __forceinline__ uint16_t load_u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (static_cast<uint16_t>(p[1]) << 8));
}
__device__ __forceinline__ float half_at(const uint8_t* p) { return __half2float(__ushort_as_half(load_u16(p))); }
__device__ __forceinline__ float bf16_bits(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }
__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

// 2^(e - 128) (the E8M0 scale halved; subnormal for e < 2), as quants.cpp's e8m0_to_fp32_half.
__device__ __forceinline__ float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  return __uint_as_float(bits);
}

// ggml's get_scale_min_k4 (quants.h, Q4_K).
__device__ __forceinline__ void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Bytes per block and elements per block of the types below (host and device).
template <GgmlType T>
struct BlockOf;
#define MOEPACK_BLOCK(T, B, BYTES)              \
  template <>                                   \
  struct BlockOf<GgmlType::T> {                 \
    static constexpr int kElems = B;            \
    static constexpr int kBytes = BYTES;        \
  };
MOEPACK_BLOCK(F32, 1, 4)
MOEPACK_BLOCK(F16, 1, 2)
MOEPACK_BLOCK(BF16, 1, 2)
MOEPACK_BLOCK(Q4_0, 32, 18)
MOEPACK_BLOCK(Q4_1, 32, 20)
MOEPACK_BLOCK(Q5_0, 32, 22)
MOEPACK_BLOCK(Q5_1, 32, 24)
MOEPACK_BLOCK(Q8_0, 32, 34)
MOEPACK_BLOCK(MXFP4, 32, 17)
MOEPACK_BLOCK(Q2_K, 256, 84)
MOEPACK_BLOCK(Q3_K, 256, 110)
MOEPACK_BLOCK(Q4_K, 256, 144)
MOEPACK_BLOCK(Q5_K, 256, 176)
MOEPACK_BLOCK(Q6_K, 256, 210)
#undef MOEPACK_BLOCK

// Writes elements [32c, 32c + n) of `row` (n = 32 except possibly the last chunk of a plain
// type row) to v[0 .. n).
template <GgmlType T>
__device__ __forceinline__ void dequant_chunk(const uint8_t* row, int64_t c, int n, float* v) {
  if constexpr (T == GgmlType::F32) {
    const uint8_t* p = row + c * kChunk * 4;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = i < n ? __uint_as_float(load_u32(p + 4 * i)) : 0.0f;
  } else if constexpr (T == GgmlType::F16) {
    const uint8_t* p = row + c * kChunk * 2;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = i < n ? half_at(p + 2 * i) : 0.0f;
  } else if constexpr (T == GgmlType::BF16) {
    const uint8_t* p = row + c * kChunk * 2;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = i < n ? bf16_bits(load_u16(p + 2 * i)) : 0.0f;
  } else if constexpr (T == GgmlType::Q4_0) {
    const uint8_t* b = row + c * 18;
    const float d = half_at(b);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      v[j] = static_cast<float>((b[2 + j] & 0x0F) - 8) * d;
      v[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
    }
  } else if constexpr (T == GgmlType::Q4_1) {
    const uint8_t* b = row + c * 20;
    const float d = half_at(b), m = half_at(b + 2);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      v[j] = static_cast<float>(b[4 + j] & 0x0F) * d + m;
      v[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
    }
  } else if constexpr (T == GgmlType::Q5_0) {
    const uint8_t* b = row + c * 22;
    const float d = half_at(b);
    const uint32_t qh = load_u32(b + 2);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      v[j] = static_cast<float>(((b[6 + j] & 0x0F) | h0) - 16) * d;
      v[j + 16] = static_cast<float>(((b[6 + j] >> 4) | h1) - 16) * d;
    }
  } else if constexpr (T == GgmlType::Q5_1) {
    const uint8_t* b = row + c * 24;
    const float d = half_at(b), m = half_at(b + 2);
    const uint32_t qh = load_u32(b + 4);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      v[j] = static_cast<float>((b[8 + j] & 0x0F) | h0) * d + m;
      v[j + 16] = static_cast<float>((b[8 + j] >> 4) | h1) * d + m;
    }
  } else if constexpr (T == GgmlType::Q8_0) {
    const uint8_t* b = row + c * 34;
    const float d = half_at(b);
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
  } else if constexpr (T == GgmlType::MXFP4) {
    const uint8_t* b = row + c * 17;
    const float d = e8m0_half(b[0]);
    constexpr int8_t kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      v[j] = static_cast<float>(kv[b[1 + j] & 0x0F]) * d;
      v[j + 16] = static_cast<float>(kv[b[1 + j] >> 4]) * d;
    }
  } else if constexpr (T == GgmlType::Q2_K) {
    const uint8_t* b = row + (c >> 3) * 84;
    const int j = static_cast<int>(c & 7), h = j >> 2, p = j & 3;
    const uint8_t* scales = b;
    const uint8_t* qs = b + 16 + 32 * h;
    const float d = half_at(b + 80), dmin = half_at(b + 82);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const int s = 8 * h + 2 * p + part;
      const float dl = d * static_cast<float>(scales[s] & 0x0F);
      const float ml = dmin * static_cast<float>(scales[s] >> 4);
#pragma unroll
      for (int l = 16 * part; l < 16 * part + 16; ++l) v[l] = dl * static_cast<float>((qs[l] >> (2 * p)) & 3) - ml;
    }
  } else if constexpr (T == GgmlType::Q3_K) {
    const uint8_t* b = row + (c >> 3) * 110;
    const int j = static_cast<int>(c & 7), h = j >> 2, p = j & 3;
    const uint8_t* hmask = b;
    const uint8_t* qs = b + 32 + 32 * h;
    const uint8_t* sc = b + 96;
    const float d = half_at(b + 108);
    const unsigned m = 1u << (4 * h + p);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const int s = 8 * h + 2 * p + part;
      const int lo = s < 8 ? (sc[s] & 0x0F) : (sc[s - 8] >> 4);
      const int hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
      const float dl = d * static_cast<float>((lo | (hi << 4)) - 32);
#pragma unroll
      for (int l = 16 * part; l < 16 * part + 16; ++l) {
        const int q = ((qs[l] >> (2 * p)) & 3) - ((hmask[l] & m) ? 0 : 4);
        v[l] = dl * static_cast<float>(q);
      }
    }
  } else if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    constexpr bool k5 = T == GgmlType::Q5_K;
    const uint8_t* b = row + (c >> 3) * (k5 ? 176 : 144);
    const int j = static_cast<int>(c & 7);
    const float d = half_at(b), dmin = half_at(b + 2);
    int sc = 0, m = 0;
    scale_min_k4(j, b + 4, sc, m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    const uint8_t* qs = b + (k5 ? 48 : 16) + 32 * (j >> 1);
    const int shift = 4 * (j & 1);
#pragma unroll
    for (int l = 0; l < 32; ++l) {
      int q = (qs[l] >> shift) & 0x0F;
      if constexpr (k5) q += (b[16 + l] & (1u << j)) ? 16 : 0;
      v[l] = d1 * static_cast<float>(q) - m1;
    }
  } else if constexpr (T == GgmlType::Q6_K) {
    const uint8_t* b = row + (c >> 3) * 210;
    const int j = static_cast<int>(c & 7), h = j >> 2, r = j & 3;
    const uint8_t* lo = b + 64 * h + 32 * (r & 1);
    const uint8_t* qh = b + 128 + 32 * h;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
    const float d = half_at(b + 208);
    const int nshift = 4 * (r >> 1);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const float scale = d * static_cast<float>(scales[8 * h + 2 * r + part]);
#pragma unroll
      for (int l = 16 * part; l < 16 * part + 16; ++l) {
        const int q = (((lo[l] >> nshift) & 0x0F) | (((qh[l] >> (2 * r)) & 3) << 4)) - 32;
        v[l] = scale * static_cast<float>(q);
      }
    }
  }
}

// Calls f.template operator()<T>() for the runtime type `t`; returns false for an unsupported
// type. (Host side: picks the kernel instantiation.)
template <typename F>
bool dispatch_type(GgmlType t, F&& f) {
  switch (t) {
#define MOEPACK_CASE(T)       \
  case GgmlType::T:           \
    f.template operator()<GgmlType::T>(); \
    return true;
    MOEPACK_CASE(F32)
    MOEPACK_CASE(F16)
    MOEPACK_CASE(BF16)
    MOEPACK_CASE(Q4_0)
    MOEPACK_CASE(Q4_1)
    MOEPACK_CASE(Q5_0)
    MOEPACK_CASE(Q5_1)
    MOEPACK_CASE(Q8_0)
    MOEPACK_CASE(MXFP4)
    MOEPACK_CASE(Q2_K)
    MOEPACK_CASE(Q3_K)
    MOEPACK_CASE(Q4_K)
    MOEPACK_CASE(Q5_K)
    MOEPACK_CASE(Q6_K)
#undef MOEPACK_CASE
    default:
      return false;
  }
}

}  // namespace moepack::gpu
