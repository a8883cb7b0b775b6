// The prefill's A fragments made from the quants (forty-eighth session; gpu/kernels.h
// set_gemv_prefill_quant_a): per type, what a lane of gpu/kernels_gemv.cu's gemm_mma_kernel (QA) builds
// from a row's staged super-block. Host and device alike (MOEPACK_GEMV_HD): on the device the f16
// operations are the PTX ones (__hfma2, __hsub2, __hmul2: round to nearest); on the host they are
// computed in double and must land on an f16 value exactly (else they give NaN), which every operation
// here does by construction (its operands and results are f16 integers or doubled e2m1 values), so the
// CPU test (tests/gpu/gemv_quant_words_test.cpp) runs the kernel's own code for all six types against
// core's dequantize_row.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#include "core/ggml_type.h"
#include "gpu/gemm_mma_layout.h"
#include "gpu/gemv_hd.h"
#include "gpu/gemv_quant_words.h"

// #pragma unroll on the device only (the host compiler would warn of an unknown pragma).
#if defined(__CUDA_ARCH__)
#define MOEPACK_QA_UNROLL _Pragma("unroll")
#else
#define MOEPACK_QA_UNROLL
#endif

namespace moepack::gpu {

// The types that take it, and x's sums staged per pair and unit for their minimums: 8 (one a chunk:
// Q4_K, Q5_K), 16 (one per 16 elements: Q2_K) or none.
constexpr bool prefill_quant_a_covers(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q2_K || t == GgmlType::Q3_K ||
         t == GgmlType::Q6_K || t == GgmlType::MXFP4;
}
constexpr int qa_sums(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K ? 8 : t == GgmlType::Q2_K ? 16 : 0;
}

namespace qa_host {
// An f16's value (every f16 is a double).
inline double f16_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double mag = e == 0    ? std::ldexp(m, -24)
                     : e == 31 ? (m ? std::nan("") : HUGE_VAL)
                               : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}
// The f16 of v where v is an f16 value; NaN (0x7E00) where it is not.
inline uint16_t f16_exact(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);            // a in [2^(e2 - 1), 2^e2)
  const int e = e2 - 1 + 15;     // f16's biased exponent, were a normal
  const int ee = e < 1 ? 1 : e;  // subnormals share exponent 1's quantum
  if (e > 30) return 0x7E00;
  const double q = std::ldexp(a, 25 - ee);  // a in units of the quantum 2^(ee - 25)
  if (q != std::floor(q)) return 0x7E00;
  const int mant = static_cast<int>(q) - (e < 1 ? 0 : 1024);
  return static_cast<uint16_t>(sign | ((e < 1 ? 0 : e) << 10) | mant);
}
template <class Op>
uint32_t h2(uint32_t a, uint32_t b, uint32_t c, Op op) {
  uint32_t r = 0;
  for (int i = 0; i < 2; ++i) {
    const auto part = [&](uint32_t w) { return f16_value(static_cast<uint16_t>(w >> (16 * i))); };
    r |= static_cast<uint32_t>(f16_exact(op(part(a), part(b), part(c)))) << (16 * i);
  }
  return r;
}
}  // namespace qa_host

// The 32-bit word at p (little-endian; in shared memory on the device, any byte alignment: two aligned
// words funnel-shifted, the second read past p + 3 only where p is not 4-aligned).
MOEPACK_GEMV_HD inline uint32_t smem_word(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uint32_t* w = reinterpret_cast<const uint32_t*>(a & ~uintptr_t{3});
  if ((a & 3) == 0) return w[0];
  return __funnelshift_r(w[0], w[1], 8u * static_cast<unsigned>(a & 3));
#else
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
#endif
}
// f16 pairs (two halves of a word): a b + c, a - b, a b.
MOEPACK_GEMV_HD inline uint32_t h2_fma(uint32_t a, uint32_t b, uint32_t c) {
#if defined(__CUDA_ARCH__)
  const __half2 r = __hfma2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b),
                            *reinterpret_cast<const __half2*>(&c));
  return *reinterpret_cast<const uint32_t*>(&r);
#else
  return qa_host::h2(a, b, c, [](double x, double y, double z) { return x * y + z; });
#endif
}
MOEPACK_GEMV_HD inline uint32_t h2_sub(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  const __half2 r = __hsub2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
#else
  return qa_host::h2(a, b, 0u, [](double x, double y, double) { return x - y; });
#endif
}
MOEPACK_GEMV_HD inline uint32_t h2_mul(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  const __half2 r = __hmul2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
  return *reinterpret_cast<const uint32_t*>(&r);
#else
  return qa_host::h2(a, b, 0u, [](double x, double y, double) { return x * y; });
#endif
}
MOEPACK_GEMV_HD inline float f16_lo(uint32_t w) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xFFFFu)));
#else
  return static_cast<float>(qa_host::f16_value(static_cast<uint16_t>(w & 0xFFFFu)));
#endif
}
MOEPACK_GEMV_HD inline float f16_hi(uint32_t w) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
#else
  return static_cast<float>(qa_host::f16_value(static_cast<uint16_t>(w >> 16)));
#endif
}
MOEPACK_GEMV_HD inline float byte_f(uint32_t w, int k) { return static_cast<float>((w >> (8 * k)) & 0xFFu); }
// 2^(e - 128) (the E8M0 scale halved; subnormal for e < 2), as quants.cpp's e8m0_to_fp32_half.
MOEPACK_GEMV_HD inline float qa_e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}
constexpr uint32_t kH2Base1024 = 0x64006400u;   // f16 pair 1024, 1024
constexpr uint32_t kH2Minus1024 = 0xE400E400u;  // -1024, -1024
constexpr uint32_t kH2Minus64 = 0xD400D400u;    // -64, -64
constexpr uint32_t kH2Base1028 = 0x64046404u;   // 1028, 1028 (Q3_K: 1024 + 4, its quants' offset)
constexpr uint32_t kH2Base1056 = 0x64206420u;   // 1056, 1056 (Q3_K's scales, Q6_K's quants: 1024 + 32)

// The types' A fragments made from their quants (QA; gpu/gemm_mma_layout.h "Q4_K's A fragments from its
// quants" for the layout, which every type shares: lane t's A of a chunk's half w holds elements 16 w +
// 4 t .. + 3). Per super-block of a row (p: its bytes in GGUF order in the warp's staging, any
// alignment) Qa<T>::head reads what the unit shares; Qa<T>::group gives, for group cp (chunks 2 cp + hb,
// hb = 0, 1), the row's A words a[hb][w][k] (k = 0: elements 4 t, 4 t + 1 of the half; 1: 4 t + 2, + 3),
// the factor f of the sums (kScaleOnD 0: f[0][0] = d for the whole group, the sub-block scales folded
// into A; 16: f[hb][w] per mma, d times its 16 elements' scale; 32: f[hb][0] per chunk) and the
// minimums' factors m (kQaSums 8: m[hb][0] = dmin m per chunk; 16: m[hb][w]). Every A value is an
// integer (or MXFP4's doubled e2m1 value) exact in f16, so the products are exact (ggml's
// dequantize_row_* formulas, cited per type).
template <GgmlType T>
struct Qa;

// Q4_K's and Q5_K's A words of half w (a[0][w]: chunk 2 cp, a[1][w]: 2 cp + 1) from the group's quant words
// lo (quants in the low bits of their bytes: kQaLowFill) and hi (filled with hi_fill), each times its
// sub-block's scale pair less the fill's share (nscl = -fill sc): q sc exactly.
MOEPACK_GEMV_HD inline void qa_sub_block_pair(uint32_t lo, uint32_t hi, uint32_t hi_fill, uint32_t scl,
                                              uint32_t nscl, uint32_t sch, uint32_t nsch, int w,
                                              uint32_t (&a)[2][2][2]) {
  MOEPACK_QA_UNROLL
  for (int k = 0; k < 2; ++k) {
    a[0][w][k] = h2_fma(q4k_qa_halves(lo, kQaLowFill, k), scl, nscl);
    a[1][w][k] = h2_fma(q4k_qa_halves(hi, hi_fill, k), sch, nsch);
  }
}

// Q4_K (block_q4_K: d, dmin, scales[12], qs[128]): w = d sc q - dmin m per 32 elements; group cp's qs
// bytes 32 cp .. + 31 hold chunk 2 cp in their low nibbles, 2 cp + 1 in their high ones. A = q sc <= 945.
template <>
struct Qa<GgmlType::Q4_K> {
  static constexpr int kScaleOnD = 0;
  struct Head {
    float d, dmin;
    uint32_t sc[2], mn[2];  // get_scale_min_k4's scales and minimums, sub-blocks 0-3 and 4-7
  };
  MOEPACK_GEMV_HD static Head head(const uint8_t* p) {
    const uint32_t dd = smem_word(p), s0 = smem_word(p + 4), s1 = smem_word(p + 8), s2 = smem_word(p + 12);
    return {f16_lo(dd),
            f16_hi(dd),
            {detail::k4_scales_lo(s0), detail::k4_scales_hi(s0, s2)},
            {detail::k4_mins_lo(s1), detail::k4_mins_hi(s1, s2)}};
  }
  // The quants' bytes of group cp for half w (the low nibbles chunk 2 cp, the high ones 2 cp + 1).
  MOEPACK_GEMV_HD static void quants(const uint8_t* p, int cp, int w, int t, uint32_t& lo, uint32_t& hi) {
    const uint32_t q = smem_word(p + 16 + 32 * cp + gemm_qa_quant_byte(w, t));
    lo = q & 0x0F0F0F0Fu, hi = q & 0xF0F0F0F0u;  // hi: 16 q in place (kQaHighFill)
  }
  // Group cp's scale pairs (sc, sc) of its sub-blocks 2 cp (scl) and 2 cp + 1 (sch), f = d and m = dmin m
  // (Q4_K and Q5_K alike).
  MOEPACK_GEMV_HD static void scales(const Head& h, int cp, uint32_t& scl, uint32_t& sch, float (&f)[2][2],
                                     float (&m)[2][2]) {
    const bool upper = cp >= 2;  // sub-blocks 4-7 (a select: no local memory)
    const int k0 = (2 * cp) & 3;
    const uint32_t scw = upper ? h.sc[1] : h.sc[0], mw = upper ? h.mn[1] : h.mn[0];
    scl = h2_sub(qa_scale_pair_biased(scw, k0), kH2Base1024);
    sch = h2_sub(qa_scale_pair_biased(scw, k0 + 1), kH2Base1024);
    f[0][0] = h.d;
    m[0][0] = h.dmin * byte_f(mw, k0);
    m[1][0] = h.dmin * byte_f(mw, k0 + 1);
  }
  MOEPACK_GEMV_HD static void group(const Head& h, const uint8_t* p, int cp, int t, uint32_t (&a)[2][2][2],
                                    float (&f)[2][2], float (&m)[2][2]) {
    uint32_t scl, sch;
    scales(h, cp, scl, sch, f, m);
    const uint32_t nscl = h2_mul(scl, kH2Minus1024), nsch = h2_mul(sch, kH2Minus64);
    MOEPACK_QA_UNROLL
    for (int w = 0; w < 2; ++w) {
      uint32_t lo, hi;
      quants(p, cp, w, t, lo, hi);
      qa_sub_block_pair(lo, hi, kQaHighFill, scl, nscl, sch, nsch, w, a);
    }
  }
};

// Q5_K (block_q5_K: d, dmin, scales[12], qh[32], qs[128]): Q4_K's layout and scales with a fifth bit,
// qh byte l bit 2 cp (low nibbles) or 2 cp + 1 (high) for element l of the group's chunks
// (dequantize_row_q5_K); A = q sc <= 31 x 63 = 1953.
template <>
struct Qa<GgmlType::Q5_K> {
  static constexpr int kScaleOnD = 0;
  using Head = Qa<GgmlType::Q4_K>::Head;
  MOEPACK_GEMV_HD static Head head(const uint8_t* p) { return Qa<GgmlType::Q4_K>::head(p); }
  MOEPACK_GEMV_HD static void group(const Head& h, const uint8_t* p, int cp, int t, uint32_t (&a)[2][2][2],
                                    float (&f)[2][2], float (&m)[2][2]) {
    uint32_t scl, sch;
    Qa<GgmlType::Q4_K>::scales(h, cp, scl, sch, f, m);
    const uint32_t nscl = h2_mul(scl, kH2Minus1024), nsch = h2_mul(sch, kH2Minus1024);
    MOEPACK_QA_UNROLL
    for (int w = 0; w < 2; ++w) {
      const uint32_t q = smem_word(p + 48 + 32 * cp + gemm_qa_quant_byte(w, t));
      const uint32_t qh = smem_word(p + 16 + gemm_qa_quant_byte(w, t));
      const uint32_t lo = (q & 0x0F0F0F0Fu) | (((qh >> (2 * cp)) & 0x01010101u) << 4);
      const uint32_t hi = ((q >> 4) & 0x0F0F0F0Fu) | (((qh >> (2 * cp + 1)) & 0x01010101u) << 4);
      qa_sub_block_pair(lo, hi, kQaLowFill, scl, nscl, sch, nsch, w, a);
    }
  }
};

// Q2_K (block_q2_K: scales[16], qs[64], d, dmin): element 128 n + 32 j + l (chunk 4 n + j) is bits 2 j of
// qs byte 32 n + l, its 16-element sub-block 8 n + 2 j + (l >= 16) with scale byte sc | m << 4: w = d sc q
// - dmin m (dequantize_row_q2_K). Group cp: n = cp / 2, j = 2 (cp % 2) + hb; the scale bytes of chunk hb's
// half w are byte 2 hb + w of the word at 4 cp. A = q sc <= 45.
template <>
struct Qa<GgmlType::Q2_K> {
  static constexpr int kScaleOnD = 0;
  struct Head {
    float d, dmin;
  };
  MOEPACK_GEMV_HD static Head head(const uint8_t* p) {
    const uint32_t dd = smem_word(p + 80);
    return {f16_lo(dd), f16_hi(dd)};
  }
  MOEPACK_GEMV_HD static void group(const Head& h, const uint8_t* p, int cp, int t, uint32_t (&a)[2][2][2],
                                    float (&f)[2][2], float (&m)[2][2]) {
    const uint32_t sw = smem_word(p + 4 * cp);
    uint32_t sc[2][2], nsc[2][2];
    MOEPACK_QA_UNROLL
    for (int hb = 0; hb < 2; ++hb) {
      MOEPACK_QA_UNROLL
      for (int w = 0; w < 2; ++w) {
        sc[hb][w] = h2_sub(qa_scale_pair_biased(sw & 0x0F0F0F0Fu, 2 * hb + w), kH2Base1024);
        nsc[hb][w] = h2_mul(sc[hb][w], kH2Minus1024);
        m[hb][w] = h.dmin * byte_f(sw >> 4 & 0x0F0F0F0Fu, 2 * hb + w);
      }
    }
    f[0][0] = h.d;
    const int n = cp >> 1;
    MOEPACK_QA_UNROLL
    for (int w = 0; w < 2; ++w) {
      const uint32_t q = smem_word(p + 16 + 32 * n + gemm_qa_quant_byte(w, t));
      MOEPACK_QA_UNROLL
      for (int hb = 0; hb < 2; ++hb) {
        const uint32_t u = (q >> (2 * (2 * (cp & 1) + hb))) & 0x03030303u;
        MOEPACK_QA_UNROLL
        for (int k = 0; k < 2; ++k)
          a[hb][w][k] = h2_fma(q4k_qa_halves(u, kQaLowFill, k), sc[hb][w], nsc[hb][w]);
      }
    }
  }
};

// Q3_K (block_q3_K: hmask[32], qs[64], scales[12], d): element 128 n + 32 j + l is bits 2 j of qs byte 32 n
// + l, less 4 where bit 4 n + j of hmask byte l is clear; its 16-element sub-block 8 n + 2 j + (l >= 16),
// whose 6-bit scale (ggml's aux: gemv_quant_words.h q3k_scale_words_raw) enters as sc - 32: w = d (sc - 32)
// q (dequantize_row_q3_K). Group cp: n = cp / 2, j = 2 (cp % 2) + hb; chunk hb's half w takes byte 2 hb + w
// of aux word cp. A = q (sc - 32), |A| <= 128 (from u = q + 4 in [0, 7]: (u - 4) (sc - 32), two exact ops).
template <>
struct Qa<GgmlType::Q3_K> {
  static constexpr int kScaleOnD = 0;
  struct Head {
    float d;
    uint32_t aux[4];
  };
  MOEPACK_GEMV_HD static Head head(const uint8_t* p) {
    const uint32_t s[3] = {smem_word(p + 96), smem_word(p + 100), smem_word(p + 104)};
    Head h;
    detail::q3k_scale_words_raw(s, h.aux);
    h.d = f16_lo(smem_word(p + 108));
    return h;
  }
  MOEPACK_GEMV_HD static void group(const Head& h, const uint8_t* p, int cp, int t, uint32_t (&a)[2][2][2],
                                    float (&f)[2][2], float (&m)[2][2]) {
    (void)m;
    const uint32_t aw = cp == 0 ? h.aux[0] : cp == 1 ? h.aux[1] : cp == 2 ? h.aux[2] : h.aux[3];
    uint32_t sc[2][2];
    MOEPACK_QA_UNROLL
    for (int hb = 0; hb < 2; ++hb) {
      MOEPACK_QA_UNROLL
      for (int w = 0; w < 2; ++w) sc[hb][w] = h2_sub(qa_scale_pair_biased(aw, 2 * hb + w), kH2Base1056);
    }
    f[0][0] = h.d;
    const int n = cp >> 1;
    MOEPACK_QA_UNROLL
    for (int w = 0; w < 2; ++w) {
      const uint32_t q = smem_word(p + 32 + 32 * n + gemm_qa_quant_byte(w, t));
      const uint32_t hm = smem_word(p + gemm_qa_quant_byte(w, t));
      MOEPACK_QA_UNROLL
      for (int hb = 0; hb < 2; ++hb) {
        const int j = 2 * (cp & 1) + hb;
        const uint32_t u = ((q >> (2 * j)) & 0x03030303u) | (((hm >> (4 * n + j)) & 0x01010101u) << 2);
        MOEPACK_QA_UNROLL
        for (int k = 0; k < 2; ++k) {
          a[hb][w][k] = h2_mul(h2_sub(q4k_qa_halves(u, kQaLowFill, k), kH2Base1028), sc[hb][w]);
        }
      }
    }
  }
};

// Q6_K (block_q6_K: ql[128], qh[64], scales[16] (s8), d): element 128 n + 32 j + l is the low (j < 2) or
// high nibble of ql byte 64 n + 32 (j % 2) + l with bits 2 j of qh byte 32 n + l above it, less 32; w = d
// sc q (dequantize_row_q6_K), sc of the 16-element sub-block 8 n + 2 j + (l >= 16). (q - 32) sc reaches
// 4096, not exact in f16, so A = q - 32 and each mma's sums take d sc (kScaleOnD 16): chunk hb's half w
// byte 2 hb + w of the word at 192 + 4 cp.
template <>
struct Qa<GgmlType::Q6_K> {
  static constexpr int kScaleOnD = 16;
  struct Head {
    float d;
  };
  MOEPACK_GEMV_HD static Head head(const uint8_t* p) { return {f16_lo(smem_word(p + 208))}; }
  MOEPACK_GEMV_HD static void group(const Head& h, const uint8_t* p, int cp, int t, uint32_t (&a)[2][2][2],
                                    float (&f)[2][2], float (&m)[2][2]) {
    (void)m;
    const uint32_t sw = smem_word(p + 192 + 4 * cp);
    MOEPACK_QA_UNROLL
    for (int hb = 0; hb < 2; ++hb) {
      MOEPACK_QA_UNROLL
      for (int w = 0; w < 2; ++w) {
        f[hb][w] = h.d * static_cast<float>(static_cast<int8_t>((sw >> (8 * (2 * hb + w))) & 0xFFu));
      }
    }
    const int n = cp >> 1;
    const bool high = (cp & 1) != 0;  // j >= 2: the high nibbles
    MOEPACK_QA_UNROLL
    for (int w = 0; w < 2; ++w) {
      const uint32_t qh = smem_word(p + 128 + 32 * n + gemm_qa_quant_byte(w, t));
      MOEPACK_QA_UNROLL
      for (int hb = 0; hb < 2; ++hb) {
        const int j = 2 * (cp & 1) + hb;
        const uint32_t l = smem_word(p + 64 * n + 32 * hb + gemm_qa_quant_byte(w, t));
        const uint32_t u = ((high ? l >> 4 : l) & 0x0F0F0F0Fu) | (((qh >> (2 * j)) & 0x03030303u) << 4);
        MOEPACK_QA_UNROLL
        for (int k = 0; k < 2; ++k) a[hb][w][k] = h2_sub(q4k_qa_halves(u, kQaLowFill, k), kH2Base1056);
      }
    }
  }
};

// MXFP4 (block_mxfp4: e (E8M0), qs[16]; 17 bytes, staged padded to 20 in the tiled layout: PAD): element i
// < 16 of a block is the low nibble of qs byte i, 16 + i the high one; w = kvalues_mxfp4[code] 2^(e - 128)
// (ggml's doubled e2m1 value and halved scale). Chunk c is block c: its half w is nibble w of qs bytes
// 4 t .. + 3 for lane t. A = the doubled e2m1 value (|A| <= 12); each chunk's sums take 2^(e - 128)
// (kScaleOnD 32: f[hb][0]).
template <bool PAD>
struct QaMxfp4 {
  static constexpr int kScaleOnD = 32;
  struct Head {};
  MOEPACK_GEMV_HD static Head head(const uint8_t*) { return {}; }
  MOEPACK_GEMV_HD static void group(const Head&, const uint8_t* p, int cp, int t, uint32_t (&a)[2][2][2],
                                    float (&f)[2][2], float (&m)[2][2]) {
    (void)m;
    MOEPACK_QA_UNROLL
    for (int hb = 0; hb < 2; ++hb) {
      const uint8_t* blk = p + (2 * cp + hb) * (PAD ? 20 : 17);
      f[hb][0] = qa_e8m0_half(blk[0]);
      const uint32_t q = smem_word(blk + (PAD ? 4 : 1) + 4 * t);
      MOEPACK_QA_UNROLL
      for (int w = 0; w < 2; ++w) {
        const uint32_t codes = (w ? q >> 4 : q) & 0x0F0F0F0Fu;
        MOEPACK_QA_UNROLL
        for (int k = 0; k < 2; ++k) {
          const uint32_t v = byte_perm_hd(codes, 0u, k ? 0x4342u : 0x4140u);  // codes in bits 0-3, 16-19
          const uint32_t e2 = ((v & 0x00070007u) << 9) | ((v & 0x00080008u) << 12);  // e2m1 * 2^-14
          a[hb][w][k] = h2_mul(e2, 0x78007800u);                                     // * 2^15
        }
      }
    }
  }
};
template <>
struct Qa<GgmlType::MXFP4> : QaMxfp4<false> {};

}  // namespace moepack::gpu
