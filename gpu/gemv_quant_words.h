// The K-quants of the tensor-core decode GEMV's column paths (kernels_gemv_mma.cu: Q4kColPath,
// Q5kColPath, Q3kColPath, Q6kColPath) as they enter the mma's A operand, and their sub-block
// scales as the paths apply them: four quants a 32-bit word, one byte each, made from the GGUF
// bytes as they lie (ggml's block_q4_K, block_q5_K, block_q3_K, block_q6_K). Arithmetic only (no
// CUDA runtime, no PTX intrinsics), so the CPU tests check every bit of it against core's
// dequantize_row (tests/gpu/gemv_quant_words_test.cpp) where no GPU is.
//
// A word's byte i is the quant of element e + i, where the 4 source bytes (the argument words,
// little-endian) hold elements e .. e + 3 of their field:
//   Q4_K, Q5_K: qs bytes 32 p + l .. l + 3 (l < 32): low nibbles elements 64 p + l + i
//     (sub-block 2 p), high nibbles 64 p + 32 + l + i (sub-block 2 p + 1); Q5_K's fifth bits in
//     qh bytes l .. l + 3, bits 2 p (low) and 2 p + 1 (high).
//   Q3_K: qs bytes 32 n + l .. l + 3: 2-bit field j elements 128 n + 32 j + l + i; hmask bytes
//     l .. l + 3, bit 4 n + j (set: q in [0, 3], clear: q - 4).
//   Q6_K: ql bytes 64 n + 32 (j % 2) + l .. l + 3, low (j < 2) or high nibble, qh bytes 32 n + l
//     .. l + 3, 2-bit field j: elements 128 n + 32 j + l + i, q - 32 in [-32, 31].
#pragma once

#include <cstdint>

#include "gpu/gemv_hd.h"

namespace moepack::gpu::detail {

// Two A words of one source word: the low nibbles' sub-block and the high nibbles'.
struct QuantWords {
  uint32_t lo, hi;
};

// Q4_K: u8 q (lo) and, in place, 16 q (hi); so the low sub-block's scale is taken 16 times.
// (Separate lo and hi functions: the paths compute them in the order their mmas take them.)
MOEPACK_GEMV_HD constexpr uint32_t q4k_a_lo(uint32_t qs) { return qs & 0x0F0F0F0Fu; }
MOEPACK_GEMV_HD constexpr uint32_t q4k_a_hi(uint32_t qs) { return qs & 0xF0F0F0F0u; }

// Q5_K's qh word with bit 2 p of each byte moved to bit 4 (and bit 2 p + 1 to bit 5).
MOEPACK_GEMV_HD constexpr uint32_t q5k_fifth_bits(uint32_t qh, int p) {
  return p < 2 ? qh << (4 - 2 * p) : qh >> (2 * p - 4);
}
// Q5_K, group p: u8 q (lo: the nibble, its fifth bit in bit 4) and 2 q (hi: the nibble shifted
// into bits 1-4, its fifth bit in bit 5); so the low sub-block's scale is taken twice. qh: the
// qh word of the same bytes as qs.
MOEPACK_GEMV_HD constexpr QuantWords q5k_a_words(uint32_t qs, uint32_t qh, int p) {
  const uint32_t f = q5k_fifth_bits(qh, p);
  return {(qs & 0x0F0F0F0Fu) | (f & 0x10101010u), ((qs >> 3) & 0x1E1E1E1Eu) | (f & 0x20202020u)};
}

// Q4_K's and Q5_K's 6-bit sub-block scales and minimums (ggml's get_scale_min_k4) four at a
// time from the 12 scale bytes as words s0 (bytes 0-3), s1 (4-7), s2 (8-11): byte j of sc_lo
// (sc_hi) the scale of sub-block j (4 + j), likewise m_lo and m_hi the minimums.
MOEPACK_GEMV_HD constexpr uint32_t k4_scales_lo(uint32_t s0) { return s0 & 0x3F3F3F3Fu; }
MOEPACK_GEMV_HD constexpr uint32_t k4_scales_hi(uint32_t s0, uint32_t s2) {
  return (s2 & 0x0F0F0F0Fu) | ((s0 >> 2) & 0x30303030u);
}
MOEPACK_GEMV_HD constexpr uint32_t k4_mins_lo(uint32_t s1) { return s1 & 0x3F3F3F3Fu; }
MOEPACK_GEMV_HD constexpr uint32_t k4_mins_hi(uint32_t s1, uint32_t s2) {
  return ((s2 >> 4) & 0x0F0F0F0Fu) | ((s1 >> 2) & 0x30303030u);
}

// Q3_K, field j of half n: s8 q in [-4, 3] (even j) or 4 q (odd j: the field kept in place), so
// the odd fields' sums are taken a quarter. src: the qs word (j < 2) or it shifted right by 4
// (j >= 2); h: the hmask word shifted right by 4 n.
MOEPACK_GEMV_HD constexpr uint32_t q3k_a_word(uint32_t src, uint32_t h, int j) {
  const uint32_t mask = (j & 1) ? 0x0C0C0C0Cu : 0x03030303u;
  const uint32_t bit = 0x01010101u << j;
  const uint32_t high = ((j & 1) ? 0xF0u : 0xFCu) >> j;  // bit j's value times this: 0xF0 or 0xFC
  return (src & mask) + (~h & bit) * high;
}
// Q3_K's scale words (ggml's aux: byte i of word k the 6-bit scale of sub-block 4 k + i) as
// 4 (sc - 32) in s8, from the 12 scale bytes as words s[0..2].
// The raw 6-bit scales (ggml's aux words before its - 32; bits 6, 7 of each byte zero): byte i of word
// k is sub-block 4 k + i's sc (the prefill's A from the quants, kernels_gemv.cu Qa<Q3_K>, takes sc - 32).
MOEPACK_GEMV_HD constexpr void q3k_scale_words_raw(const uint32_t (&s)[3], uint32_t (&o)[4]) {
  const uint32_t hi = s[2];
  o[0] = (s[0] & 0x0F0F0F0Fu) | ((hi << 4) & 0x30303030u);
  o[1] = (s[1] & 0x0F0F0F0Fu) | ((hi << 2) & 0x30303030u);
  o[2] = ((s[0] >> 4) & 0x0F0F0F0Fu) | (hi & 0x30303030u);
  o[3] = ((s[1] >> 4) & 0x0F0F0F0Fu) | ((hi >> 2) & 0x30303030u);
}
MOEPACK_GEMV_HD constexpr void q3k_scale_words(const uint32_t (&s)[3], uint32_t (&o)[4]) {
  q3k_scale_words_raw(s, o);
  for (int i = 0; i < 4; ++i) o[i] = (o[i] ^ 0x20202020u) << 2;  // bits 6, 7 were 0: no carry
}

// Q6_K's qh word with every 2-bit field's high bit flipped (q ^ 32 is q - 32 in 6-bit two's
// complement), as the fetch keeps it.
MOEPACK_GEMV_HD constexpr uint32_t q6k_qh_flipped(uint32_t qh) { return qh ^ 0xAAAAAAAAu; }
// Q6_K, field j: s8 4 (q - 32), the nibble in bits 2-5 and the flipped qh field in bits 6-7.
// l: the ql word of field j; h: q6k_qh_flipped of the qh word.
MOEPACK_GEMV_HD constexpr uint32_t q6k_a_word(uint32_t l, uint32_t h, int j) {
  // field j in bits 6-7, the nibble in bits 2-5
  return ((h << (6 - 2 * j)) & 0xC0C0C0C0u) | ((j < 2 ? l << 2 : l >> 2) & 0x3C3C3C3Cu);
}

}  // namespace moepack::gpu::detail
