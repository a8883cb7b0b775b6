// Decode columns at prefill (forty-sixth session): small groups of an expert launch run as
// single-pair groups of the tensor-core decode GEMV (gpu/gemv_mma.h), each pair one column, instead
// of in the F32 kernels or the tensor cores' prefill.
//
// Why: the decode GEMV streams a launch's weights at 0.5-0.8 of D2D (docs/cuda-backend.md, Q4_K's
// 8 x 2048 x 4096 at ~0.71: ~12.5 us a column on the H200), while the prefill kernels of a group of
// two pairs took 89 us (F32) and 130 us (tensor cores) on that launch (thirty-third pass). A group
// of k pairs as k columns reads its matrix k times, so the columns win up to some k the benchmark
// measures (bench_cuda_backend --prefill-mma-only, "gemv_prefill_columns").
//
// How: the launch's groups are laid out as n_groups * C slots (C: the largest group taken as
// columns), slot g * C + c holding pair grp_off[g] + c of group g where that group has 1..C pairs,
// and no pair or more than one (which the decode GEMV skips: it takes groups of exactly one pair)
// otherwise. A pair keeps its index j, so its x row (x_row[j]) and its y row (y + j y_stride) stay
// where they were; only the slot's weights (the group's matrix) and offsets are new tables, written
// on the GPU by a small kernel since grp_off may itself be a kernel's output.
//
// Sums: a pair of a group of 2..C pairs gets the decode GEMV's arithmetic, bit for bit the result of
// a launch of that pair alone. Which path a pair takes depends on its group's size and the launch's
// matrices only, so batching still changes no sum (pack and GGUF paths alike).
#pragma once

#include <cstdint>

#include "core/ggml_type.h"
#include "gpu/gemm_mma_layout.h"
#include "gpu/gemv_hd.h"

namespace moepack::gpu {

// Slot (g, c)'s offset, the slots' grp_off' entry g * C + c for group g of n pairs starting at pair
// j0 (grp_off'[n_groups * C] is grp_off[n_groups]):
//   n <= C: j0 + min(c, n)  (slots 0..n-1 hold one pair each, slots n..C-1 none);
//   n >  C: j0              (slots 0..C-2 none, slot C-1 all n pairs: not a single pair, skipped).
// Slot g * C + c then spans [off'[g C + c], off'[g C + c + 1]), the next slot's entry being group
// g + 1's first (j0 + n) after slot C - 1. C >= 1, 0 <= c < C, n >= 0.
MOEPACK_GEMV_HD constexpr int32_t column_slot_offset(int32_t j0, int32_t n, int c, int C) {
  return n <= C ? j0 + (c < n ? c : n) : j0;
}
// The compact layout (forty-seventh session), where the host knows the group sizes
// (GemvBatch::grp_off_host) and some groups of a launch have no pair or more than C: only the groups
// of 1..C pairs get slots, C + 1 each, the k-th such group (in group order) slots k (C + 1) + c for
// c = 0..C at offsets
//   j0 + min(c, n)   (slots 0..n-1 one pair each, n..C-1 none; 1 <= n <= C)
// so its last slot, k (C + 1) + C, spans [j0 + n, the next such group's j0): the pairs of the groups
// between, none or at least C + 1 >= 3 (each has none or more than C), never one, which the decode
// GEMV skips. The closing entry is the last such group's end. Launch size: n_small (C + 1) slots
// against n_groups C, so it pays where fewer than n_groups C / (C + 1) groups are that small.
MOEPACK_GEMV_HD constexpr int32_t column_slot_offset_compact(int32_t j0, int32_t n, int c) {
  return j0 + (c < n ? c : n);
}

// The default rule (gpu/kernels.h set_gemv_prefill_columns(0)): the largest group (pairs an expert
// of an expert launch, tokens of a dense launch) a launch over [ne1][ne0] matrices takes as decode
// columns; 1 means none (single pairs are decode launches anyway). It depends on the matrices, the
// layout and the launch's kind alone, never on the other groups, so batching changes no sum.
// Measured on an H100 (forty-sixth session, bench_cuda_backend --prefill-mma-only
// "gemv_prefill_columns", two runs each way alternating; docs/cuda-backend.md, thirty-fourth pass),
// columns of up to 16 against the prefill kernels under the minimum rule, Q4_K, Q2_K, MXFP4, Q6_K,
// Q3_K and Q5_K:
// - 8 experts of 2048 x 4096, GGUF layout: x2.1-3.3 at 2 pairs, x1.3-2.1 at 8, x1.07-1.88 at 12,
//   x0.89-1.54 at 16 (MXFP4, Q3_K, Q5_K and Q6_K lose there): kPrefillColumnsExperts, 12;
// - the same in the tiled layout (the engine's for such experts): x3.7-8.1 at 2, x1.44-2.22 at 16:
//   kPrefillColumnsTiled, 16; beyond 16 (forty-seventh session, columns of up to 32 against none, 8
//   experts of 2048 x 4096, 4096 x 2048 and 7168 x 1536 (Kimi-K3's down) with 16 to 32 pairs) mixed:
//   Q4_K, Q2_K and Q3_K still win at 24-32 on the first two shapes (x1.02-1.39) but lose on 7168 x 1536
//   (x0.75-0.93 at 32), MXFP4 and Q5_K lose from 24 or 28 (x0.67-0.97), while Q6_K wins everywhere
//   (x1.84 at 20, x1.36-1.61 at 24, x1.12-1.46 at 32): kPrefillColumnsTiledQ6K, 32 for Q6_K;
// - 8 x 4096 x 2048 x1.1-1.8 at 8, 8 x 768 x 2048 (1.6 M elements) x2.9-5.1 at 2 and 4;
// - 64 experts of 256 x 256 (the demo's) x0.82-1.03 at 4, and the demo's 32-token prefill x0.69,
//   while 8 x 1024 x 1024 won x1.8-3.3 at 2 and 4 pairs (a second call): matrices under
//   kPrefillColumnsMinElems (1024 x 1024; between 65,536 and 1 M elements not measured) none;
// - a dense 4096 x 4096 matrix: x1.55-1.88 at 2 tokens, x0.97-1.20 at 4, x0.74-0.85 at 8 against the
//   F32 kernels (Q2_K, Q6_K): kPrefillColumnsDense, 4 (dense launches of one matrix only; kernels.h).
// Without the host's copy of the group sizes the columns' launch has n_groups x C slots whatever the
// sizes: where no group is that small it still costs its slots' kernel and an empty decode launch (1-4
// us on 8-expert launches, 24-30 us on 128 experts of 768 x 2048 with 13 pairs each, x0.94-0.95: an
// H100, forty-seventh session); with it (the engine's launches) such a launch starts none, and a launch
// where some groups are larger takes the compact layout above.
inline constexpr int64_t kPrefillColumnsMinElems = int64_t{1024} * 1024;
inline constexpr int kPrefillColumnsExperts = 12;
inline constexpr int kPrefillColumnsTiled = 16;
inline constexpr int kPrefillColumnsTiledQ6K = 32;
inline constexpr int kPrefillColumnsDense = 4;
// With the tensor cores' prefill taking A from the quants (quant_a: gpu/kernels.h
// set_gemv_prefill_quant_a, on by default for Q4_K, Q5_K, Q2_K, Q3_K, Q6_K and MXFP4; x1.14-2.41 on its
// launches) the columns lose from fewer pairs. Measured on an H100 (forty-ninth session, bench_cuda_backend
// --prefill-rules-only "gemv_prefill_columns_quant_a": columns of up to 32 against the tensor cores at every
// group of two or more, two runs each way alternating, docs/cuda-backend.md thirty-seventh pass):
// - 8 x 2048 x 4096, GGUF: at 2 pairs x1.49-2.24, at 4 Q4_K, Q2_K, Q5_K, Q6_K x1.11-1.38 but MXFP4 x0.90
//   and Q3_K x0.95, at 8 every type x0.59-0.93: kPrefillColumnsExpertsQuantA, 4 (MXFP4 and Q3_K 2);
//   8 x 768 x 2048 x1.41-2.46 at 2 and 4;
// - tiled, 8 x 2048 x 4096 / 4096 x 2048 / 7168 x 1536: at 4 x1.03-2.10 but MXFP4 x0.97 on 4096 x 2048,
//   at 8 Q4_K, Q3_K, Q5_K, MXFP4 x1.02-1.23 / x0.72-0.84 / x0.78-0.94 (lost on the more rows), Q2_K x1.34
//   / x1.00 / x1.07 and x1.05 / x0.61 / x0.76 at 16; Q6_K x1.12 / x1.16 at 32 / 24 and x1.48 / x0.96 at 16 /
//   24 on 7168 x 1536: kPrefillColumnsTiledQuantA 4, kPrefillColumnsTiledQuantAQ2K 8,
//   kPrefillColumnsTiledQuantAQ6K 16.
// Dense launches: 4, and with A from the quants where the launch counts as split (k_split: its one pair tile
// fills less than half the device, gpu/gemm_mma_layout.h prefill_dense_one_tile_few_blocks;
// fiftieth session, gpu/gemm_mma_layout.h's dense minimum of 3 / 4 tokens there, the measurements beside it)
// kPrefillColumnsDenseKSplit 2, kPrefillColumnsDenseKSplitQ6K 3: the tokens below that minimum, which the
// same measurement chose.
// Dense launches whose one pair tile holds half the device's blocks or more (whole_tile; fifty-second
// session, gpu/gemm_mma_layout.h's whole-tile minimum, the measurements beside it; the K split may split
// them since the fifty-fifth): 2 tokens on rows of at least kPrefillDenseWholeLongRow elements, none on
// shorter ones (the tensor cores from 2 there). Dense matrices under kPrefillMmaLargeElems elements with such
// rows (fifty-fourth session, gpu/gemm_mma_layout.h prefill_dense_small_long_rows): 2 tokens, split or not;
// above them the F32 kernels where the split is off, the split tensor cores from 3 tokens (Q6_K 4) where it
// is on (fifty-fifth session; at 3 tokens Q6_K's F32 kernels x1.34 over the columns on the H200).
inline constexpr int kPrefillColumnsDenseWhole = kPrefillMmaMinTokensDenseWhole - 1;
inline constexpr int kPrefillColumnsDenseKSplit = kPrefillMmaMinTokensDenseKSplit - 1;
inline constexpr int kPrefillColumnsDenseKSplitQ6K = kPrefillMmaMinTokensDenseKSplitQ6K - 1;
inline constexpr int kPrefillColumnsExpertsQuantA = 4;
inline constexpr int kPrefillColumnsExpertsQuantALight = 2;  // MXFP4, Q3_K
inline constexpr int kPrefillColumnsTiledQuantA = 4;
inline constexpr int kPrefillColumnsTiledQuantAQ2K = 8;
inline constexpr int kPrefillColumnsTiledQuantAQ6K = 16;
// Every type the tensor-core decode covers takes the same rule (the measurements above agree), but for
// Q6_K's tiled experts; with quant_a (the launch's prefill takes A from the quants) the rule above.
// For dense launches: k_split, whether the launch counts as split; whole_tile, whether the one pair tile of a
// matrix of at least kPrefillMmaLargeElems elements holds half the device's blocks or more (both as
// gpu/gemm_mma_layout.h prefill_mma_default_min_pairs takes them; smaller dense matrices keep
// kPrefillColumnsDense, but for prefill_dense_small_long_rows).
constexpr int prefill_columns_default(GgmlType type, int64_t ne0, int64_t ne1, bool tiled, bool dense,
                                      bool quant_a = false, bool k_split = false, bool whole_tile = false) {
  if (ne0 * ne1 < kPrefillColumnsMinElems) return 1;
  if (dense) {
    if (!quant_a) return kPrefillColumnsDense;
    if (prefill_dense_small_long_rows(ne0, ne1)) return kPrefillColumnsDenseWhole;
    if (k_split) return type == GgmlType::Q6_K ? kPrefillColumnsDenseKSplitQ6K : kPrefillColumnsDenseKSplit;
    if (whole_tile && ne0 * ne1 >= kPrefillMmaLargeElems)
      return ne0 >= kPrefillDenseWholeLongRow ? kPrefillColumnsDenseWhole : 1;
    return kPrefillColumnsDense;
  }
  if (quant_a) {
    if (!tiled) {
      return type == GgmlType::MXFP4 || type == GgmlType::Q3_K ? kPrefillColumnsExpertsQuantALight
                                                               : kPrefillColumnsExpertsQuantA;
    }
    return type == GgmlType::Q6_K   ? kPrefillColumnsTiledQuantAQ6K
           : type == GgmlType::Q2_K ? kPrefillColumnsTiledQuantAQ2K
                                    : kPrefillColumnsTiledQuantA;
  }
  if (!tiled) return kPrefillColumnsExperts;
  return type == GgmlType::Q6_K ? kPrefillColumnsTiledQ6K : kPrefillColumnsTiled;
}

}  // namespace moepack::gpu
