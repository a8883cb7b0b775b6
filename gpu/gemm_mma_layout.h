// The index arithmetic of the prefill on the tensor cores (gpu/kernels_gemv.cu, "Prefill on the
// tensor cores"), with no CUDA runtime, so that a CPU test (tests/gpu/gemm_mma_layout_test.cpp)
// can emulate a warp's ldmatrix and mma.m16n8k16 (PTX ISA, "Warp-level matrix load instruction:
// ldmatrix" and "Matrix fragments for mma.m16n8k16 with floating point type") over them and check
// that each lane gets back its own pair's dot products.
//
// One mma: A = 16 rows x 16 k of W (f16, row-major), B = 16 k x 8 columns (column 2i: pair i's
// x hi, column 2i + 1 its x lo, four pairs), D = 16 x 8 in f32. Lane L = 4 g + t holds
//   A: a0 = (row g, k 2t, 2t + 1), a1 = (row g + 8, same k), a2 = (row g, k 2t + 8, 2t + 9),
//      a3 = (row g + 8, k 2t + 8, 2t + 9);
//   B: b0 = (k 2t, 2t + 1; column g), b1 = (k 2t + 8, 2t + 9; column g);
//   D: d0, d1 = (row g; columns 2t, 2t + 1), d2, d3 = (row g + 8; same columns),
// so d0 + d1 (d2 + d3) is row g's (g + 8's) sum for pair t of the four, hi and lo of x together.
#pragma once

#include <cstdint>

#include "core/ggml_type.h"
#include "gpu/gemv_hd.h"

namespace moepack::gpu {

// Halves a row of a warp's A staging (16 rows x 64 k: two chunks of 32): 64 + 8, so that the 8
// rows an ldmatrix phase reads (144 bytes apart) fall in distinct 16-byte bank groups.
constexpr int kGemmAStride = 72;

// ldmatrix.x4 over a 16 x 16 window (rows 0-15, k 0-15 of the window): lanes 8 i .. 8 i + 7 give
// the rows of matrix i, which lands in register i of every lane. Matrices 0-3 are (rows 0-7, k
// 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15): registers a0 .. a3 above.
MOEPACK_GEMV_HD constexpr int gemm_a_row(int lane) { return (lane & 7) + ((lane >> 3) & 1) * 8; }
MOEPACK_GEMV_HD constexpr int gemm_a_k(int lane) { return (lane >> 4) * 8; }

// The B staging of a chunk (32 elements): one row of 16 words per (pair p, half h), row 2 p + h.
// Word 8 w + 2 t + i of a row holds b_i of lane t's fragment for the chunk's 16-element half w,
// i.e. elements 16 w + 2 t + 8 i and + 1: the chunk's natural word (elements 2 n, 2 n + 1)
// n = gemm_b_natural_word(w, t, i). In rows with bit 1 set the two 8-word halves are swapped, so
// that the lanes of a half-warp (g = 0..3: rows 8 q + g) read 8-byte pairs of 16 distinct banks.
MOEPACK_GEMV_HD constexpr int gemm_b_natural_word(int w, int t, int i) { return 8 * w + t + 4 * i; }
MOEPACK_GEMV_HD constexpr int gemm_xs_word(int row, int w, int t) {
  return row * 16 + ((8 * w + 2 * t) ^ ((row & 2) << 2));
}
// Words a chunk's B staging takes: 32 pairs' two rows of 16, and 4 more, so that chunk c starts
// 4 c banks further (mod 32). The block stores x one pair at a time, chunk c in lanes 4 c .. 4 c
// + 3, lane 4 c + l the natural words 4 l .. 4 l + 3 one per instruction: words 2 j, 2 j + 1,
// 8 + 2 j, 9 + 2 j of a row (swizzled alike for the whole warp), so an instruction's 32 words
// fall at most two to a bank. (1028 words: a chunk also starts 16-byte aligned.)
constexpr int kGemmXsChunkWords = 2 * 32 * 16 + 4;

// The power of two of a chunk's split: e with max |v| 2^e in [2^14, 2^15) for a normal max
// (`bits`: the max's float bits), clamped to float's normal powers of two (a zero or subnormal max
// takes 126; infinity and NaN take -114 and stay what they are).
MOEPACK_GEMV_HD constexpr int gemm_split_exponent(uint32_t bits) {
  const int be = static_cast<int>((bits >> 23) & 255u);
  const int e = 141 - be;
  return e < -126 ? -126 : e > 126 ? 126 : e;
}

// The default rule for which prefill groups go to the tensor cores (gpu/kernels.h
// set_gemv_prefill_mma_min_pairs(0)): the smallest group (pairs an expert of an expert launch,
// tokens of a dense launch) of a launch over [ne1][ne0] matrices of `type` that they take; smaller
// groups stay in the F32 kernels. The rule depends on the matrices alone, never on the other groups
// of a launch, so a pair's sums do not depend on how pairs are batched.
// - Matrices of fewer than kPrefillMmaLargeElems elements: kPrefillMmaMinPairsSmall (2, every group
//   of two or more pairs). The demo model (256 x 256 experts, Q4_K_M) prefilled 32 tokens x0.90 and
//   x0.91, 900 tokens x0.98 and x0.99 with a minimum of 8 against 2 (H200, two runs): on small
//   matrices the F32 kernels' second launch costs more than the groups gain there.
// - Larger ones: kPrefillMmaMinPairsLarge (8), kPrefillMmaMinPairsLargeHeavy (12) for Q2_K and
//   Q6_K, the heaviest dequantizations next to their bytes. Launches of 8 experts of 2048 x 4096
//   (H200, two runs; docs/cuda-backend.md, thirty-third pass), tensor cores against the F32
//   kernels at 2 / 4 / 8 / 12 pairs an expert: Q8_0, Q4_0, Q3_K, Q4_K, Q5_K and MXFP4 x0.64-0.70 /
//   x0.82-0.89 / x1.10-1.27 / x1.63-1.81, Q2_K x0.51 / x0.64 / x0.85 / x1.31, Q6_K x0.45 / x0.57 /
//   x0.78 / x1.20 (the tensor cores' time nearly flat up to 8 pairs, one tile of pairs; the F32
//   kernels' growing with every pair). Each minimum is the smallest measured group size at which the
//   tensor cores were faster on both runs; sizes between the measured ones are not measured yet.
// The threshold is the tiled layout's `auto` one (gpu/tiled_experts.h kTiledAutoMin^2: 2048 x 2048),
// which separates the fixtures' and the demo's small matrices from the target models' experts.
// Dense launches (dense = true: no grp_off; attention projections, shared experts, output heads) of
// large matrices take kPrefillMmaMinTokensDense (40), kPrefillMmaMinTokensDenseHeavy (48) for Q2_K
// and Q6_K: one dense 4096 x 4096 matrix (H100, forty-sixth session; docs/cuda-backend.md,
// thirty-fourth pass), tensor cores against the F32 kernels at 2 / 8 / 16 / 32 / 40 / 48 / 128
// tokens: Q4_K, MXFP4, Q8_0 x0.24-0.26 / x0.37 / x0.56-0.58 / x0.81-0.82 / x1.01 / x1.20-1.22 /
// x2.6-2.7; Q2_K x0.19 / x0.30 / x0.48 / x0.70 / x0.88 / x1.05 / x2.18; Q6_K x0.18 / x0.28 / x0.46 /
// x0.69 / x0.84 / x1.01 / x2.03 (a single matrix fills few of the tensor cores' blocks: their time
// is nearly flat, 96-225 us from 2 to 48 tokens, while the F32 kernels' grows ~4.5 us a token).
// Each minimum is the smallest measured token count at which the tensor cores were not slower;
// Q3_K, Q5_K, Q4_0 and the other light types take 40 without a dense sweep of their own. Grouped
// dense launches (several matrices, no grp_off) take the expert launches' rule (kernels_gemv.cu).
inline constexpr int64_t kPrefillMmaLargeElems = int64_t{2048} * 2048;
inline constexpr int kPrefillMmaMinPairsSmall = 2;
inline constexpr int kPrefillMmaMinPairsLarge = 8;
inline constexpr int kPrefillMmaMinPairsLargeHeavy = 12;
inline constexpr int kPrefillMmaMinTokensDense = 40;
inline constexpr int kPrefillMmaMinTokensDenseHeavy = 48;
// Forty-ninth session (H100, bench_cuda_backend --prefill-rules-only, docs/cuda-backend.md thirty-seventh
// pass): with A from the quants (quant_a) the tensor cores beat the F32 kernels on 8 experts of 2048 x
// 4096 from 2 pairs (x1.42-1.77; Q6_K x1.00 at 2, x1.29 at 4): kPrefillMmaMinPairsQuantA 2,
// kPrefillMmaMinPairsQuantAQ6K 4; and with the K split (k_split: set_gemv_prefill_k_split not 1) a dense
// 4096 x 4096 matrix from 5 tokens with A from the quants (x1.11-1.65 at 5, x1.42-2.12 at 8, x2.45-4.95 at
// 32-40) and from 12 without (Q8_0 x0.66 / x0.87 / x1.22 at 5 / 8 / 12): kPrefillMmaMinTokensDenseKSplit 5,
// kPrefillMmaMinTokensDenseKSplitPlain 12.
// Fiftieth session (H100, bench_cuda_backend --expert-k-split-only, docs/cuda-backend.md thirty-eighth
// pass): a split dense launch of 2-4 tokens against the decode columns ("gemv_prefill_dense_columns", 4096 x
// 4096, 2048 x 7168, 7168 x 2048): the columns win at 2 tokens (x1.02-1.80), tie or lose at 3 (Q4_K, Q2_K
// x1.03-1.09 on the first two, x0.69-0.82 on 7168 x 2048 and MXFP4; Q6_K x1.10-1.27) and lose at 4
// (x0.51-0.84; Q6_K x0.83-0.97), where the columns were within x0.97-1.20 of the F32 kernels (thirty-fourth
// pass): with A from the quants a split dense launch takes the tensor cores from 3 tokens (Q6_K 4) and the
// columns keep 2 (Q6_K 3; gpu/prefill_columns.h). Dense matrices whose one pair tile already fills the device
// (fills_device: no split; 65,536 x 4096 and 36,864 x 7168, "gemv_prefill_dense_huge", F32 kernels against
// the tensor cores at 5-40 tokens): with A from the quants x1.32-2.66 at 5, x1.69-3.65 at 8, x3.26-7.20 at
// 24-40; Q8_0 x1.16 / x0.81 at 5, x1.54 / x1.06 at 8, x2.24 / x1.52 at 12: 5 tokens (fifty-second session: 3,
// below), and 12 without (the split launches' kPrefillMmaMinTokensDenseKSplitPlain). Fifty-second session
// (H100, bench_cuda_backend
// --dense-neither-only, docs/cuda-backend.md fortieth pass): dense launches the rule leaves whole without
// filling the device (between half and all of its blocks: 18,432 x 7168 and 24,576 x 1536; rows under 1024
// elements: 32,768 x 512) with A from the quants x1.65-5.19 at 5 tokens (Q6_K x1.19-2.50), x2.18-5.98 at 8;
// Q8_0 x0.62 / x1.06 / x2.21 at 5, x0.81 / x1.33 / x2.64 at 8, x1.18 / x1.97 / x4.05 at 12: every launch the
// default K split leaves whole (whole_tile: it fills at least half the device, or its rows are too short to
// split; fills_device among them) takes the tensor cores with A from the quants, 12 tokens without. Below 5
// tokens (--dense-whole-columns-only, the same launches as decode columns against the tensor cores): the
// tensor cores' time is flat (104 us for 18,432 x 7168 Q4_K at 2-4 tokens, 126 at 5) and they win at 3 and 4
// tokens on all three (columns x0.19-0.99, Q2_K x0.99 at 3 on 7168-element rows), at 2 on rows of 1536 and
// 512 (columns x0.38-0.86), while the columns win at 2 on rows of 7168 (x1.06-1.47; Q3_K and Q5_K measured
// the same way; Q3_K's and Q5_K's F32 kernels against the tensor cores at 5 tokens x1.61-4.96): rows of at
// least kPrefillDenseWholeLongRow (4096, between the measured 1536 and 7168) take the tensor cores from
// kPrefillMmaMinTokensDenseWhole (3), with the columns at 2; shorter rows from 2 (no columns). Without A from
// the quants (Q8_0) rows of 4096 or more from 12, shorter ones from 5 (x1.06 and x2.21 at 5 on rows of 1536
// and 512; 2-4 tokens not measured against the F32 kernels; fifty-fourth session: from 2, below). 40 / 48
// stay for launches of few blocks whose split is switched off (set_gemv_prefill_k_split(1)) and for the small
// matrices with long rows below.
// Fifty-fourth session (H200, bench_cuda_backend --model-prefill-only, the launches a large model's prefill
// issues in four configurations side by side; docs/cuda-backend.md forty-second pass):
// - Dense matrices under kPrefillMmaLargeElems elements whose rows hold at least kPrefillDenseWholeLongRow
//   elements (prefill_dense_small_long_rows; MLA's kv_a, 576 x 7168 in DeepSeek-V3, 576 x 4096 in
//   DeepSeek-V4-Flash: 9 blocks a pair tile, each looping over all of a row's units, and no K split under
//   kPrefillMmaLargeElems) took the small matrices' minimum of 2 and ran on the tensor cores in 78-219 us
//   from 2 to 16 tokens where the F32 kernels took 17-35 (x3.1-4.5 slower for Q4_K and Q6_K from 6 tokens,
//   x5.8-7.9 for Q8_0 from 2): they take the unsplit minimum (kPrefillMmaMinTokensDense 40, 48 for Q2_K and
//   Q6_K; the tensor cores' time grows with every tile of 32 tokens there) and the decode columns at 2 tokens
//   alone (gpu/prefill_columns.h: Q4_K x1.42 over the F32 kernels at 2, x1.06 at 3 but x0.89 at 4; Q6_K x0.98
//   at 2, x0.75 at 3). No fixture's or demo's matrix has such rows (their rows hold at most 2304 elements).
// - Without A from the quants (Q8_0) the whole tile on short rows wins from 2 tokens: 24,576 x 1536 x1.06 /
//   x1.14 / x1.24 at 2 / 3 / 4, 32,768 x 512 x2.07 / x2.19 / x2.34, 8192 x 768 x0.94 / x1.06 / x1.09:
//   kPrefillMmaMinTokensDenseWholePlainShortRows 2.
// Fifty-fifth session (H100, bench_cuda_backend --model-prefill-k-sweep and --model-prefill-only,
// docs/cuda-backend.md forty-third pass): the matrices with long rows under kPrefillMmaLargeElems elements
// split (prefill_dense_k_split_eligible below; 576 x 7168 best at 14-16 splits, x1.2-1.5 over 8 and x5-8 over
// none), and so take the split's minimum (3, Q6_K 4, 12 without A from the quants: at 4 tokens the tensor
// cores split 16 ways x1.35 / x1.16 / x0.95 over the F32 kernels for Q4_K / Q6_K / Q8_0, at 16 x1.75 / x1.53
// / x1.32); their columns stay at 2 tokens (gpu/prefill_columns.h). 40 / 48 where the split is switched off.
// Without A from the quants (Q8_0), with the longer rows' split, the tensor cores beat the F32 kernels at 8
// tokens on every matrix of rows of 4096 or more and at least 2^25 elements (kPrefillMmaPlainLargeElems:
// 4096 x 8192 x1.17, 18,432 x 7168 x1.17, 7168 x 16,384 x1.63, 7168 x 18,432 x1.72, 129,280 x 7168 x1.53;
// at 6 x1.00 / x1.01 / x1.34 / x1.42 / x1.27), where smaller ones were mixed (1536 x 7168 x1.14, 2048 x
// 7168 x0.95, 576 x 7168 x1.29; 4096 x 4096 x0.87 in the forty-ninth session): such launches, split or
// whole, take the tensor cores from kPrefillMmaMinTokensDensePlainLarge (8), smaller ones from 12.
inline constexpr int kPrefillMmaMinPairsQuantA = 2;
inline constexpr int kPrefillMmaMinPairsQuantAQ6K = 4;
inline constexpr int kPrefillMmaMinTokensDenseKSplit = 3;
inline constexpr int kPrefillMmaMinTokensDenseKSplitQ6K = 4;
inline constexpr int kPrefillMmaMinTokensDenseKSplitPlain = 12;
inline constexpr int kPrefillMmaMinTokensDensePlainLarge = 8;
inline constexpr int64_t kPrefillMmaPlainLargeElems = int64_t{1} << 25;
inline constexpr int kPrefillMmaMinTokensDenseWhole = 3;
inline constexpr int kPrefillMmaMinTokensDenseWholeShortRows = 2;
inline constexpr int kPrefillMmaMinTokensDenseWholePlainShortRows = 2;
inline constexpr int64_t kPrefillDenseWholeLongRow = 4096;
constexpr bool prefill_dense_small_long_rows(int64_t ne0, int64_t ne1) {
  return ne1 > 0 && ne0 * ne1 < kPrefillMmaLargeElems && ne0 >= kPrefillDenseWholeLongRow;
}
// For dense launches: k_split, whether the launch counts as split (its one pair tile fills less than half the
// device, prefill_dense_one_tile_few_blocks below, with the split on; or the split forced); whole_tile,
// whether its one pair tile holds at least half the device's blocks (!prefill_dense_one_tile_few_blocks; on
// matrices under kPrefillMmaLargeElems elements it does not count). A launch of long rows the split rule
// splits with whole_tile set (18,432 x 7168) keeps the whole tile's values.
constexpr int prefill_mma_default_min_pairs(GgmlType type, int64_t ne0, int64_t ne1, bool dense = false,
                                            bool quant_a = false, bool k_split = false,
                                            bool whole_tile = false) {
  const bool heavy = type == GgmlType::Q2_K || type == GgmlType::Q6_K;
  if (dense && prefill_dense_small_long_rows(ne0, ne1)) {
    // (split: the split's minimum below)
    if (!k_split) return heavy ? kPrefillMmaMinTokensDenseHeavy : kPrefillMmaMinTokensDense;
  } else if (ne0 * ne1 < kPrefillMmaLargeElems) {
    return kPrefillMmaMinPairsSmall;
  }
  if (dense) {
    if (k_split && quant_a) {
      return type == GgmlType::Q6_K ? kPrefillMmaMinTokensDenseKSplitQ6K : kPrefillMmaMinTokensDenseKSplit;
    }
    if (whole_tile && quant_a) {
      return ne0 >= kPrefillDenseWholeLongRow ? kPrefillMmaMinTokensDenseWhole
                                              : kPrefillMmaMinTokensDenseWholeShortRows;
    }
    if (whole_tile && ne0 < kPrefillDenseWholeLongRow) return kPrefillMmaMinTokensDenseWholePlainShortRows;
    if (k_split || whole_tile) {
      return ne0 >= kPrefillDenseWholeLongRow && ne0 * ne1 >= kPrefillMmaPlainLargeElems
                 ? kPrefillMmaMinTokensDensePlainLarge
                 : kPrefillMmaMinTokensDenseKSplitPlain;
    }
    return heavy ? kPrefillMmaMinTokensDenseHeavy : kPrefillMmaMinTokensDense;
  }
  if (quant_a) return type == GgmlType::Q6_K ? kPrefillMmaMinPairsQuantAQ6K : kPrefillMmaMinPairsQuantA;
  return heavy ? kPrefillMmaMinPairsLargeHeavy : kPrefillMmaMinPairsLarge;
}

// Whether a tensor-core prefill launch of `blocks` busy blocks (64 rows by 32 pairs of one group each;
// kernels_gemv.cu counts them from the host's group sizes where it has them, else the whole grid) on a
// device of `sms` multiprocessors stages x half a unit at a time (gpu/kernels.h
// set_gemv_prefill_mma_half_x's rule; either way the same sums bit for bit, so the launch's size may
// decide). Half a unit holds 4 blocks a multiprocessor where the whole unit holds 3, at the cost of a
// second barrier a unit and, for some types, registers spilled (at most 128 a thread). Measured on an
// H100 (forty-seventh session; docs/cuda-backend.md, thirty-fifth pass), half against whole:
// - launches of more blocks than 3 a multiprocessor hold at once win: 64 experts of 2048 x 4096 with
//   16 and 32 pairs (2,048 blocks) x1.03-1.18 GGUF (Q8_0 x1.26-1.35), x1.11-1.37 tiled; 128 of 768 x
//   2048 with 16 (1,536) x1.02-1.25; 8 of 2048 x 4096 with 64 (512 blocks: one wave where the whole
//   unit needs a second) x1.25-1.47;
// - launches that fit at once lose: 8 experts with 16 and 32 pairs (256 blocks) x0.82-0.97, a dense
//   4096 x 4096 matrix with 128 tokens (256) x0.83-0.96;
// - Q6_K in the GGUF layout (its half-unit kernel spills 144 bytes) x0.96-1.01 on the large launches:
//   the whole unit (its tiled layout x1.11 keeps the rule).
//   Forty-eighth session (H100, the same launches again): Q6_K in the GGUF layout wins only where the
//   half unit's 4 a multiprocessor take in one wave what the whole unit's 3 need two for (8 x 2048 x
//   4096 with 64 pairs, 512 blocks: x1.25), and loses or ties on the larger ones (x0.96-1.01) and the
//   smaller ones (x0.85): half a unit only between 3 and 4 blocks a multiprocessor.
// - Launches that take A from the quants (gpu/kernels.h set_gemv_prefill_quant_a; the K-quants and
//   MXFP4) keep the whole unit: without W's staging their kernels fit 4 blocks a multiprocessor (Q6_K's
//   3, for its registers) either way, and half a unit measured x0.79-0.99 on every launch and type.
inline constexpr int kPrefillMmaWholeUnitBlocksPerSm = 3;
inline constexpr int kPrefillMmaHalfUnitBlocksPerSm = 4;
// The blocks a multiprocessor was taken to hold of the whole unit's kernel (gpu/kernels_gemv.cu
// gemm_mma_kernel's __launch_bounds__): with A from the quants 4, 3 for Q6_K (its registers); with W's
// halves 3 (as its shared memory allows: Q8_0's 72.6 KB a block). The dense launches' K split counts with it
// on rows of fewer than 16 units, and the half unit's rule; both with fewer where the device's shared memory
// an SM holds fewer (kernels_gemv.cu prefill_rule_blocks_per_sm: on an RTX 50xx's 100 KiB 1 of the whole unit
// with W's halves, 2 with A from the quants but Q6_K's 1). On longer rows the split rule and the dense
// minimum's classification (prefill_dense_one_tile_few_blocks) count with the CUDA occupancy calculator's
// value instead (gpu/kernels_gemv.cu dense_split_blocks_per_sm): on an H100 4 / 3 as here, but Q8_0's
// kernel holds 2 (fifty-fifth session; its __launch_bounds__ asks for 1 block, so its registers decide).
constexpr int prefill_mma_whole_unit_blocks_per_sm(GgmlType type, bool quant_a) {
  return quant_a ? (type == GgmlType::Q6_K ? 3 : 4) : kPrefillMmaWholeUnitBlocksPerSm;
}
// whole_per_sm, half_per_sm: the blocks a multiprocessor of the device at hand holds of the two
// stagings (kernels_gemv.cu prefill_rule_blocks_per_sm: these constants, or fewer where its shared memory
// holds fewer, as an RTX 50xx's 100 KiB an SM does). The half unit only where it holds more blocks at once
// than the whole unit (every measured win above came from that; where both hold as many, the half unit's
// second barrier a unit is all it adds: the x0.82-0.97 of launches that fit at once).
constexpr bool prefill_mma_half_x_default(GgmlType type, bool tiled, int64_t blocks, int sms,
                                          bool quant_a = false,
                                          int whole_per_sm = kPrefillMmaWholeUnitBlocksPerSm,
                                          int half_per_sm = kPrefillMmaHalfUnitBlocksPerSm) {
  if (quant_a || half_per_sm <= whole_per_sm) return false;
  const bool more = blocks > static_cast<int64_t>(whole_per_sm) * sms;
  if (type == GgmlType::Q6_K && !tiled) return more && blocks <= static_cast<int64_t>(half_per_sm) * sms;
  return more;
}

// The units (8 chunks of 32 elements: a K-quant's super-block) of a row of ne0 elements, the tensor cores'
// prefill's steps along a row (the last one partial where ne0 is not a multiple of 256).
MOEPACK_GEMV_HD constexpr int64_t prefill_mma_units(int64_t ne0) { return ((ne0 + 31) / 32 + 7) / 8; }
// The blocks of a dense tensor-core prefill launch of n_tok tokens over ne1 rows before any K split: 64 rows
// (gpu/kernels_gemv.cu, 4 warps of 16) by one pair tile of 32 tokens each, as gemm_mma's grid has them.
constexpr int64_t prefill_dense_blocks(int64_t ne1, int64_t n_tok) {
  return (ne1 + 63) / 64 * ((n_tok + 31) / 32);
}

// The default K split of a dense tensor-core prefill launch (gpu/kernels.h set_gemv_prefill_k_split(0)) of
// `blocks` blocks (64 rows by 32 tokens each) over rows of n_units units, on a device of `sms`
// multiprocessors holding blocks_per_sm of the split launch's blocks each; only on matrices the split may
// take (`eligible`, prefill_dense_k_split_eligible below), 1 (none) elsewhere or where it would be below 2.
// - Rows of fewer than 16 units (kPrefillDenseWholeLongRow elements in whole units: 3840 elements at most;
//   the forty-ninth session): the launch fills the device once at blocks_per_sm * sms / blocks splits; at
//   most kPrefillKSplitRuleMaxShortRows (8) and n_units / 2 (two units a split at least: the next one's
//   loads in flight while one is computed). Measured on an H100 (bench_cuda_backend --prefill-rules-only
//   "gemv_prefill_k_split", the rule against none, Q4_K, Q2_K, MXFP4, Q6_K, Q8_0): dense 4096 x 4096 with 2
//   to 32 tokens x1.91-3.76, 64 x1.27-2.27, 128 x1.00-1.36; 2048 x 7168 x3.96-5.15; 7168 x 2048 x1.18-1.96.
// - Rows of 16 units or more (fifty-fifth session): the units a split u (at least 2; splits k = ceil(n_units
//   / u), at most kPrefillKSplitRuleMax) with the least waves(k) * (u + kPrefillKSplitBlockCostUnits),
//   waves(k) = ceil(blocks * k / (blocks_per_sm * sms)) the rounds of blocks the device runs and u + c a
//   block's time in units (c its start: x's staging, the pipeline's first load, its partial sums' store); on
//   a tie the more splits; and none unless that count is at least kPrefillKSplitMinGainPercent (10 %) below
//   no split's (the count leaves out the partial sums' traffic, and counts no split with the split kernel's
//   blocks a multiprocessor, where the unsplit kernel may hold more: both favour splitting). Fitted to an
//   H100's sweep of 1-16 splits (bench_cuda_backend --model-prefill-k-sweep, docs/cuda-backend.md
//   forty-third pass: Q4_K, Q5_K, Q6_K, Q8_0 on the attention, dense-FFN, shared-expert and output-head
//   matrices of DeepSeek-V3 / V4-Flash, 4 to 64 tokens, blocks_per_sm from the CUDA occupancy calculator; c
//   = 1 best of 0-8, the 10 % for the output head of 129,280 rows, which 2 splits cost x1.05-1.06 in Q6_K):
//   the split it takes within 5 % of the fastest on 113 of 117 launches (x1.007 on the geometric mean),
//   where the first rule's was on 44 of 128 (x1.40; it left 18,432 x 7168 whole at x1.16-1.42 and never
//   split 576 x 7168, x1.2-8.4).
inline constexpr int64_t kPrefillKSplitRuleMax = 16;
inline constexpr int64_t kPrefillKSplitRuleMaxShortRows = 8;
inline constexpr int64_t kPrefillKSplitBlockCostUnits = 1;
inline constexpr int64_t kPrefillKSplitMinGainPercent = 10;
constexpr int prefill_k_splits_default(int64_t blocks, int64_t n_units, int sms, int blocks_per_sm,
                                       bool eligible) {
  if (blocks <= 0 || !eligible || sms <= 0 || blocks_per_sm <= 0) return 1;
  const int64_t slots = static_cast<int64_t>(blocks_per_sm) * sms;
  if (n_units * 256 < kPrefillDenseWholeLongRow) {
    int64_t k = slots / blocks;
    if (k > kPrefillKSplitRuleMaxShortRows) k = kPrefillKSplitRuleMaxShortRows;
    if (k > n_units / 2) k = n_units / 2;
    return k < 2 ? 1 : static_cast<int>(k);
  }
  const int64_t whole = (blocks + slots - 1) / slots * (n_units + kPrefillKSplitBlockCostUnits);
  int64_t best_k = 1, best_cost = whole;
  for (int64_t k = 2; k <= kPrefillKSplitRuleMax; ++k) {
    const int64_t u = (n_units + k - 1) / k;
    if (u < 2) break;
    const int64_t splits = (n_units + u - 1) / u;  // the splits with units (k's others add nothing)
    const int64_t cost = (blocks * splits + slots - 1) / slots * (u + kPrefillKSplitBlockCostUnits);
    if (cost <= best_cost) {
      best_cost = cost;
      best_k = splits;
    }
  }
  if (best_cost * 100 > whole * (100 - kPrefillKSplitMinGainPercent)) return 1;
  return static_cast<int>(best_k);
}
// The dense matrices the K split may take: at least kPrefillMmaLargeElems elements, where a dense launch's
// sums already depend on its token count (the dense minimum above), so the fixtures' and the demo's smaller
// matrices keep their sums whatever the prompt's chunks; and (fifty-fifth session) the smaller ones whose
// rows hold kPrefillDenseWholeLongRow elements or more (prefill_dense_small_long_rows: MLA's kv_a; no
// fixture's or demo's matrix), where one pair tile is a few blocks each looping over a long row.
constexpr bool prefill_dense_k_split_eligible(int64_t ne0, int64_t ne1) {
  return ne0 * ne1 >= kPrefillMmaLargeElems || prefill_dense_small_long_rows(ne0, ne1);
}
// The default K split of an expert launch's groups (gpu/kernels.h set_gemv_prefill_expert_k_split(0);
// fiftieth session): kPrefillExpertKSplitRule splits for every group of at most kPrefillExpertKSplitMaxPairs
// pairs (one pair tile, whose blocks' loop over the units is the longest work a block has there) of matrices
// of at least kPrefillMmaLargeElems elements whose rows hold two units a split; 1 (none) elsewhere. It
// depends on the group and its matrices alone, never on the launch's other groups (which decide how many
// blocks are busy), so a pair's sums do not depend on how groups are batched (the pack path and the GGUF
// path batch experts differently and agree bit for bit). Measured: docs/cuda-backend.md, thirty-eighth pass.
inline constexpr int kPrefillExpertKSplitMaxPairs = 32;
inline constexpr int kPrefillExpertKSplitRule = 2;
constexpr int prefill_expert_k_splits_default(int64_t ne0, int64_t ne1) {
  if (ne0 * ne1 < kPrefillMmaLargeElems) return 1;
  return prefill_mma_units(ne0) >= 2 * kPrefillExpertKSplitRule ? kPrefillExpertKSplitRule : 1;
}
// Whether a dense launch of one pair tile (up to 32 tokens) of a [ne1][ne0] matrix the K split may take
// fills less than half the device (its prefill_dense_blocks, at most blocks_per_sm * sms / 2) over rows of 2
// units a split at least: the launches the forty-ninth session's split rule split (the rule above splits
// every one of them too, given the same blocks_per_sm: one round of blocks at 2 splits is over 10 % below
// none's), whose minimum and columns were measured so. The dense minimum takes the split's value where this
// holds and the split is on, the whole tile's (3 / 2; without A from the quants 12, 8 from 2^25 elements, 2
// on short rows) where it does not (on matrices of at least kPrefillMmaLargeElems elements). A launch of long
// rows the rule splits where this does not hold (18,432 x 7168) keeps the whole tile's minimum: measured
// there split (docs/cuda-backend.md forty-third pass, H100) the tensor cores took 79 us at 3 tokens (Q4_K)
// against the columns' 124 and the F32 kernels' 169, and at 2 the columns 83 against 79.
constexpr bool prefill_dense_one_tile_few_blocks(int64_t ne0, int64_t ne1, int sms, int blocks_per_sm) {
  if (ne1 <= 0 || !prefill_dense_k_split_eligible(ne0, ne1)) return false;
  int64_t k = static_cast<int64_t>(blocks_per_sm) * sms / prefill_dense_blocks(ne1, 1);
  if (k > prefill_mma_units(ne0) / 2) k = prefill_mma_units(ne0) / 2;
  return k >= 2;
}

// ---- Q4_K's A fragments from its quants (forty-eighth session) -------------------------------------
// W = d sc q - dmin m per 32-element sub-block (ggml's dequantize_row_q4_K), so a row's sum over a
// sub-block is d (sum q sc x) - dmin m (sum x). The prefill takes A = q sc straight from the quant
// bytes (an integer up to 15 x 63 = 945, exact in f16: no lo half of W, no staging of A, one mma a
// 16 k where W's halves took two) and adds - dmin m X per (row, sub-block) from x's sums X per (pair,
// sub-block), staged with x. Q4_K's sub-blocks are the prefill's chunks: group p's 32 qs bytes hold
// chunk 2 p in their low nibbles and chunk 2 p + 1 in their high ones. The other K-quants and MXFP4
// (kernels_gemv.cu Qa<T>) take the same k order and B staging, each with its own A values.
// The k order within a 16-element half w of a chunk: lane 4 g + t's A registers a0 / a2 (row g; a1 /
// a3 row g + 8) hold elements 16 w + 4 t + {0, 1} / + {2, 3}, the four quants of one 32-bit word of the
// group's qs (bytes 16 w + 4 t .. + 3, gemm_qa_quant_byte), so the B fragments b0 / b1 of lane t hold
// x's natural words 8 w + 2 t and 8 w + 2 t + 1 (the same loads as the W-halves path, gemm_xs_word):
// in the B staging, natural word n lies at gemm_qa_xs_word(row, n), four of a lane's consecutive.
MOEPACK_GEMV_HD constexpr int gemm_qa_xs_word(int row, int n) { return row * 16 + (n ^ ((row & 2) << 2)); }
// The byte of a group's 32 qs bytes where lane t's word of half w starts.
MOEPACK_GEMV_HD constexpr int gemm_qa_quant_byte(int w, int t) { return 16 * w + 4 * t; }
// PTX prmt / CUDA __byte_perm: byte i of the result is byte (s >> 4 i) & 7 of y:x (x bytes 0-3).
MOEPACK_GEMV_HD inline uint32_t byte_perm_hd(uint32_t x, uint32_t y, uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const uint64_t v = (static_cast<uint64_t>(y) << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i)
    r |= static_cast<uint32_t>((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFFu) << (8 * i);
  return r;
#endif
}
// Two f16 values (low half from byte 2 k, high from byte 2 k + 1 of `nibbles`) fill + the byte: the
// low nibbles (q & 0x0F0F0F0F) with kQaLowFill give 1024 + q (f16's ulp is 1 in [1024, 2048)), the high
// ones in place (q & 0xF0F0F0F0, 16 q) with kQaHighFill give 64 + q (ulp 1/16 in [64, 128)); the kernel
// then takes fma(v, sc, -fill sc) = q sc, exact (an integer below 2048, and the product unrounded).
inline constexpr uint32_t kQaLowFill = 0x64646464u;   // f16 0x6400 = 1024
inline constexpr uint32_t kQaHighFill = 0x54545454u;  // f16 0x5400 = 64
MOEPACK_GEMV_HD inline uint32_t q4k_qa_halves(uint32_t nibbles, uint32_t fill, int k) {
  return byte_perm_hd(nibbles, fill, k ? 0x4342u : 0x4140u);
}
// The f16 pair sc, sc (exact: sc < 64) as 1024 + sc from byte k of a scale word, less 1024.
MOEPACK_GEMV_HD inline uint32_t qa_scale_pair_biased(uint32_t scales, int k) {
  return byte_perm_hd(scales, kQaLowFill,
                      0x4040u | (static_cast<uint32_t>(k) << 8) | static_cast<uint32_t>(k));
}

}  // namespace moepack::gpu
