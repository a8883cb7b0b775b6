// IEEE-754 binary16 ("half", ggml_fp16_t) and bfloat16 (ggml_bf16_t) <-> binary32 conversions.
//
// Why this file: every quantized block format stores its scales as halves, F16/BF16 tensors
// are rows of them, and the CPU reference must convert them exactly as ggml does. ggml's
// conversions (ggml-impl.h at llama.cpp 82bb485) are the IEEE ones:
//  - half -> float and bf16 -> float are exact (every half/bf16 is a float);
//  - float -> half rounds to nearest, ties to even; overflow gives +-inf; NaN gives ggml's
//    canonical quiet NaN 0x7E00 (sign kept);
//  - float -> bf16 rounds to nearest, ties to even; NaN is truncated and forced quiet
//    (bit 6 of the bf16 set), as ggml_compute_fp32_to_bf16 does.
// Bit layouts: half = sign:1 exponent:5 (bias 15) mantissa:10; bf16 = the top 16 bits of a
// float (sign:1 exponent:8 mantissa:7).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace moepack {

// Exact conversion of a binary16 bit pattern (subnormals, inf and NaN included). Branch-free
// (selects by mask) so that loops over rows vectorize.
inline float fp16_to_fp32(uint16_t h) {
  const int32_t sign = static_cast<int32_t>(h & 0x8000u) << 16;
  const int32_t em = h & 0x7FFF;                                   // exponent and mantissa
  const int32_t is_sub = -static_cast<int32_t>(em < 0x0400);       // zero or subnormal: all ones
  const int32_t is_inf_nan = -static_cast<int32_t>(em >= 0x7C00);  // exponent 31: all ones
  // Normal: shift exponent and mantissa into place and rebias the exponent from 15 to 127
  // (+112); inf/NaN need exponent 255, i.e. another +112.
  const int32_t normal = (em << 13) + (112 << 23) + (is_inf_nan & (112 << 23));
  // Zero and subnormals: mantissa * 2^-24, exact in float.
  const float sub = static_cast<float>(em) * 0x1p-24f;
  return std::bit_cast<float>(sign | (is_sub & std::bit_cast<int32_t>(sub)) | (~is_sub & normal));
}

// Round to nearest even; |f| >= 65520 gives inf, NaN gives 0x7E00 with f's sign.
inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: inf
  if (ax < 0x38800000u) {
    // Below 2^-14, the smallest normal half: the result is a multiple of 2^-24. Scaling by
    // 2^24 is exact; nearbyint rounds ties to even in the default rounding mode. A result of
    // 1024 is the bit pattern of 2^-14, the smallest normal, so no special case is needed.
    const float scaled = std::bit_cast<float>(ax) * 0x1p24f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t mant = ax & 0x7FFFFFu;
  uint32_t h = (((ax >> 23) - 112u) << 10) | (mant >> 13);      // exponent 1..30, mantissa 10 bits
  const uint32_t rest = mant & 0x1FFFu;                         // the 13 dropped bits
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h += 1;  // a carry bumps the exponent
  return static_cast<uint16_t>(sign | h);
}

// Exact: a bf16 is the upper half of a float.
inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// Round to nearest even (overflow rounds to inf naturally); NaN truncated and made quiet.
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 64u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace moepack
