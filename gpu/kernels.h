// Host-side launchers of the CUDA backend's kernels, one concept per .cu file:
//   kernels_gemv.cu        dequantizing matrix-vector / matrix-matrix products, row dequant
//   kernels_elementwise.cu RMSNorm, SwiGLU, residual add, weighted expert combine
//   kernels_rope.cu        RoPE from a cos/sin table computed by core's rope_table()
//   kernels_attention.cu   GQA and MLA (absorbed) attention over the F32 KV cache
// Each has a CPU twin in core (cpu_ops.h, quants.h, cpu_attention.h) and a parity test in
// tests/gpu/gpu_ops_test.cpp. All pointers are device pointers unless said otherwise; every
// launch is checked (cudaGetLastError) and throws Error with file and line. Shapes are
// [rows][cols], row-major, cols fastest, as in cpu_ops.h. Plain C++ header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/ggml_type.h"
#include "gpu/gemm_mma_layout.h"

namespace moepack::gpu {

// True for the types the kernels dequantize (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
bool gpu_type_supported(GgmlType type);

// A batch of matrix-vector products over `n_groups` weight matrices of one shape and type
// (ne1 rows of ne0 inputs, row_bytes per row, the GGUF bytes as they are).
//
// Group g uses weight matrix `w_table[g]` (device array of pointers) if w_table is set, else
// `w + g * w_gstride` bytes. Its "pairs" are j in [grp_off[g], grp_off[g + 1]) when grp_off is
// set (device array of n_groups + 1), else j in [0, n_tok). For pair j:
//   x row = x + g * x_gstride + (x_row ? x_row[j] : j) * x_stride      (floats)
//   y row = y + g * y_gstride + j * y_stride                           (floats)
//   y row[r] = sum_k W_g[r][k] * x row[k]
// Uses: a dense matmul (one group, n_tok tokens), per-head MLA products (groups = heads),
// and all selected experts of a layer in one launch (groups = experts, pairs = (token, expert)
// selections sorted by expert, x_row = the token of each pair).
struct GemvBatch {
  GgmlType type = GgmlType::F32;
  int64_t ne0 = 0, ne1 = 0;
  uint64_t row_bytes = 0;
  const uint8_t* w = nullptr;
  uint64_t w_gstride = 0;
  const uint8_t* const* w_table = nullptr;
  const int32_t* grp_off = nullptr;
  const int32_t* x_row = nullptr;
  const float* x = nullptr;
  int64_t x_stride = 0, x_gstride = 0;
  float* y = nullptr;
  int64_t y_stride = 0, y_gstride = 0;
  int32_t n_groups = 1;
  int32_t n_tok = 0;        // pairs per group when grp_off is null
  int32_t max_pairs = 0;    // with grp_off: an upper bound of any group's pair count (grid size)
  // Optional: x's fragments for the tensor-core decode GEMV, ready (swiglu_clamped_fragments),
  // x row i's at x_frag + i * x_frag_stride bytes (gemv_x_fragments_bytes each; 16-byte
  // aligned, the stride a multiple of 16; x_gstride 0), written by an earlier kernel of the
  // stream from the same x. Taken by the tensor-core launches in the default's layout (variant
  // 0, and the variants that share its arithmetic) where the fragments fit in shared memory:
  // the launch copies them instead of preparing them, the same sums bit for bit. Ignored by
  // every other kernel and variant. gemv() throws Error for a misaligned pointer or stride or
  // x_gstride != 0 where the tensor-core path runs. Null: each launch prepares its own.
  const uint8_t* x_frag = nullptr;
  int64_t x_frag_stride = 0;
  // Optional: SwiGLU as the launch's epilogue, gate and up of every group in one launch. When
  // set, w_table holds 2 n_groups matrices, group g's gate at w_table[g] and its up at
  // w_table[n_groups + g] (both [ne1][ne0] of `type`), and pair j's y row is
  //   y row[r] = swiglu_clamped(gate_g row r · x row, up_g row r · x row, swiglu_limit)
  // (plain SwiGLU for swiglu_limit <= 1e-6): the same values bit for bit as a launch of the
  // 2 n_groups matrices followed by swiglu_clamped (each product the same tile of rows with the
  // same arithmetic; gpu/swiglu.cuh), one launch fewer. Only where gemv_swiglu_fusable(type,
  // ne0), with grp_off, w_table and one pair a group (max_pairs 1); gemv() throws Error
  // otherwise, and with x_frag.
  bool swiglu_epilogue = false;
  float swiglu_limit = 0.0f;
  // The tables (w_table, grp_off, x_row) were written by a kernel just before on the stream (the
  // router's choice on the GPU, gpu/device_routing.h), not uploaded: the tensor-core launch is
  // then no programmatic dependent launch, since such a launch reads its tables before it waits
  // for the kernel before it (kernels_gemv_mma.cu, pdl_wait_then_release).
  bool tables_from_kernel = false;
  // The matrices are in the tiled layout (gpu/gemv_tiled.h, written by repack_tiled), not the GGUF
  // layout: every group's sums are bit for bit those of the same launch on the GGUF bytes (groups
  // of one pair, and those the decode columns take, on the tensor cores' tiled launch where
  // gemv_tiled_supported(type, ne0, ne1), larger ones on the tensor cores' prefill or in the F32
  // kernels; all of them in the F32 kernels, which gather each row's units from the tiles, where it
  // does not). Only for expert launches
  // (grp_off) of matrices the layout covers (tiled_layout_covers: Q4_K, Q5_K, Q6_K, Q3_K, Q2_K, MXFP4, ne0 a
  // multiple of 256, ne1 of 16), row_bytes the type's, without x_frag; with swiglu_epilogue only where
  // gemv_tiled_supported; gemv() throws Error otherwise. Every matrix must start 16-byte aligned (w_table
  // entries, or w and w_gstride; a misaligned table entry is a sticky device error). The launch loads weights
  // before it waits for the kernel before it (programmatic dependent launch), so that kernel must not be the
  // repack_tiled that wrote them: put any other launch or an event wait between them, or repack on another
  // stream and synchronise.
  bool w_tiled = false;
  // Optional: a host copy of grp_off (n_groups + 1 entries, the same values; forty-seventh session),
  // read by gemv() before it returns. Where set, a prefill launch starts no kernel for a range of group
  // sizes no group has (the decode columns, the F32 kernels below the tensor cores' minimum, single
  // pairs), and the decode columns' slots cover only the groups of 1..C pairs (gpu/prefill_columns.h,
  // the compact layout); the tensor cores' prefill counts its busy blocks from it
  // (set_gemv_prefill_mma_half_x's rule). The sums are the same bit for bit. Values other than the
  // device array's may leave pairs uncomputed (every kernel still takes each group by its device size,
  // so none is computed twice, and no write leaves y's rows of the pairs [grp_off[0],
  // grp_off[n_groups]) the device array spans). Null: every kernel covers all n_groups, as before.
  const int32_t* grp_off_host = nullptr;
};
// F32 accumulation per lane, warp tree reduction. Throws Error for an unsupported type.
void gemv(const GemvBatch& b, cudaStream_t s);

namespace detail {
// The F32 kernels (kernels_gemv.cu) dequantize Q3_K, Q5_K, Q4_0, Q4_1, Q5_0 and Q5_1 in
// registers from word loads (default), or, when on, byte by byte with dequant_chunk as before
// the twenty-fifth pass (docs/cuda-backend.md): the same values and sums bit for bit; the
// benchmark compares the two. GGUF layout only. Process-wide.
void set_gemv_bytewise_dequant(bool on);
// The F32 kernels at prefill (groups of several pairs, or n_tok > 1) read every pair's x from
// shared memory, staged by the block a slab of 32 chunks at a time (default), or, when on, each
// lane its own chunks straight from global memory as before the twenty-fifth pass: the same sums
// bit for bit; the benchmark compares the two. Process-wide.
void set_gemv_prefill_x_global(bool on);
// Prefill (groups of at least gemv_prefill_mma_min_pairs(type, ne0, ne1) pairs, or n_tok at least that) of
// the block types (every type but F32, F16 and BF16) on the tensor cores (forty-third session,
// kernels_gemv.cu "Prefill on the tensor cores": W and x split into f16 halves, 22 significant
// bits each, f32 sums; docs/cuda-backend.md), when on; in the F32 kernels above when off, and
// whatever this says while either switch above is on (they compare the F32 kernels' variants) or
// the tensor cores are off (set_gemv_mma_variant(-1)). Smaller groups stay in the F32 kernels and
// groups of one pair are never affected; the decode columns (set_gemv_prefill_columns, below) take
// the smallest groups first, whatever this says; the rule depends on a group's own size and the launch's
// matrices, so a pair's sums do not depend on the other groups of its launch. On by default since its first
// GPU run (forty-fourth session, H100: every gpu test passed with it on, for every group of two or more
// pairs; the demo's prefill of 900 tokens x1.67). Process-wide; the benchmark and tests compare both.
constexpr bool kGemvPrefillMmaDefault = true;
void set_gemv_prefill_mma(bool on);
// The smallest group (pairs an expert, or tokens of a dense launch) the tensor cores' prefill takes:
// m >= 2 for every launch, or 0 for each launch's default, gpu/gemm_mma_layout.h
// prefill_mma_default_min_pairs (2 on matrices under 2048 x 2048 elements, 8 on larger ones, 12 for
// Q2_K and Q6_K there; measured on the H200, forty-fifth session: docs/cuda-backend.md, thirty-third
// pass; dense launches of large matrices 40 tokens, 48 for Q2_K and Q6_K, measured on an H100 in the
// forty-sixth, thirty-fourth pass; since the forty-ninth (thirty-seventh pass) for the types with A from
// the quants 2 on the larger ones, 4 for Q6_K, and dense launches that the K split splits 5 tokens, 12
// for the other types; since the fiftieth (thirty-eighth pass) those split ones 3 tokens (Q6_K 4) and dense
// launches whose one pair tile fills the device 5 (12 without A from the quants); since the fifty-second
// (fortieth pass) every dense launch the rule leaves whole 3 tokens on rows of 4096 elements or more, 2 on
// shorter ones (12 without A from the quants; 40 / 48 only for few blocks with the split switched off);
// since the fifty-fifth (forty-third pass) the matrices under 2048 x 2048 elements with rows of 4096 or more
// (MLA's kv_a) split and take the split's 3 tokens (Q6_K 4, 12 without A from the quants), and dense
// launches without A from the quants on rows of 4096 or more of 2^25 elements or more 8; decode columns,
// below,
// take smaller groups first); throws Error
// for any other m. Groups below the minimum go to the F32 kernels in a launch of
// their own (run on an H200 in the forty-fifth session: gpu_ops_test's
// GemvPrefillTensorCoresTakeGroupsFromTheMinimum, minimums 3, 8, 10 and 17, bit for bit). Process-wide.
void set_gemv_prefill_mma_min_pairs(int m);
// The tensor cores' prefill stages x half a unit (4 chunks of 32 elements) at a time (1: 16 KiB less
// shared memory a block and at most 128 registers a thread, 4 blocks a multiprocessor where 3 fit;
// forty-seventh session) or the whole unit (0, as built in the forty-third), or as each launch's type
// and layout say (kGemvPrefillMmaHalfXRule, the default: gemv_prefill_mma_half_x): the same sums bit for
// bit (each pair's x split the same way; gpu_ops_test compares them). Both skip the x of pairs a block
// does not have beyond the last mma's four. Throws Error for another mode. Process-wide; the benchmark
// compares both.
constexpr int kGemvPrefillMmaHalfXRule = -1;
void set_gemv_prefill_mma_half_x(int mode);
// Whether a launch of `type` (tiled: in the tiled layout) of `blocks` busy blocks on a device of `sms`
// multiprocessors stages half a unit under the setting; the rule (gpu/gemm_mma_layout.h
// prefill_mma_half_x_default) takes the launch's size, which changes no sum.
// quant_a: the launch takes Q4_K's A fragments from its quants (below), whose rule is the whole unit.
bool gemv_prefill_mma_half_x(GgmlType type, bool tiled, int64_t blocks, int sms, bool quant_a = false);
// The blocks a multiprocessor of the current device holds of `type`'s tensor-core prefill staging the
// whole unit and half of it (W's halves, the GGUF layout), as the half-unit rule above counts them: the
// constants it was measured with on an H100 (gpu/gemm_mma_layout.h kPrefillMmaWholeUnitBlocksPerSm 3,
// kPrefillMmaHalfUnitBlocksPerSm 4), or fewer where the device's shared memory an SM holds fewer (under
// MOEPACK_GPU_LIMITS=sm_120 the emulated card's 100 KiB). The constants for F32, F16 and BF16 (no tensor
// cores). Throws Error for a type without kernels, and on a CUDA error.
struct PrefillStagingBlocks {
  int whole = kPrefillMmaWholeUnitBlocksPerSm;
  int half = kPrefillMmaHalfUnitBlocksPerSm;
};
PrefillStagingBlocks gemv_prefill_staging_blocks_per_sm(GgmlType type);
// The tensor cores' prefill with the A fragments made from the quants (forty-eighth session; Q4_K,
// Q5_K, Q2_K, Q3_K, Q6_K, MXFP4; gpu/gemm_mma_layout.h "Q4_K's A fragments from its quants",
// kernels_gemv.cu Qa<T>): A = the integer quant (times the sub-block's scale where the product stays an
// f16 integer: the K-quants but Q6_K), exact in f16, one mma a 16 k where W's f16 halves take two, no
// staging of A; the minimums taken apart (- dmin m X per sub-block, X = the sum of x over it in F32);
// Q6_K's scales and MXFP4's block scales applied to each mma's or chunk's sums; x split as before but
// with one power of two per 64 elements. When off, W is dequantized and split into f16 halves as for
// every other type. Different rounding (not bit for bit the other's sums, but for MXFP4, whose weights are
// exact in f16 either way: the same sums but where the 64-element x scale leaves an element ~2^-30 of its
// group's largest subnormal), within gpu_ops_test's bound of the exact dot product (kDotRel) on its data.
// Like the decode path's integer sums, Q4_K's, Q5_K's and Q2_K's d S and dmin m X are rounded apart, so
// where d sc q nearly cancels dmin m next to an activation outlier the error follows
// sum (|d sc q| + |dmin m|) |x| rather than sum |w x|: a reviewer's emulation (exact mmas, normal x with
// every 97th element x4096) found 1-14 of 19,200 sums a type past 1e-6 sum |w x| (at most 3.0e-6), mostly
// from X's F32 sum (X as the exact sum of x's f16 halves: 1.2e-7); the GPU run's largest was 5.96e-7.
// A pair's sums stay its own, and the GGUF and tiled layouts,
// and the whole and half unit's staging, give the same sums bit for bit. On by default (Q4_K ran first
// in the forty-eighth session, docs/cuda-backend.md, thirty-sixth pass). Process-wide; the benchmark and
// tests compare both.
constexpr bool kGemvPrefillQuantADefault = true;
void set_gemv_prefill_quant_a(bool on);
// Whether the tensor cores' prefill launches of `type` take it now (the six types above, while on).
bool gemv_prefill_quant_a(GgmlType type);
// The minimum a launch over [ne1][ne0] matrices of `type` uses (dense: a launch of one matrix without
// grp_off; a grouped dense launch takes the expert launches' rule): the one set, else the default rule
// (with the type's set_gemv_prefill_quant_a and whether the K split is on, gpu/gemm_mma_layout.h).
int gemv_prefill_mma_min_pairs(GgmlType type, int64_t ne0, int64_t ne1, bool dense = false);
// Decode columns at prefill (gpu/prefill_columns.h, forty-sixth session): the groups of 1..c pairs of
// an expert launch (grp_off), and every token of a dense launch of one matrix of 2..c tokens, run as single
// pairs of the tensor-core decode GEMV (gpu/gemv_mma.h), each pair bit for bit the sums of a launch of that
// pair alone; larger groups and tokens as before (the tensor cores' prefill from
// max(gemv_prefill_mma_min_pairs, c + 1), the F32 kernels between). c: 0 for each launch's default
// (gpu/prefill_columns.h prefill_columns_default: 12 pairs on expert matrices of at least 1024 x 1024
// elements, 16 in the tiled layout (32 for Q6_K), 4 tokens on dense ones (2, 3 for Q6_K, where the K split
// splits them and the prefill takes A from the quants: the fiftieth session's; with A from the quants, on
// large matrices the split leaves whole, 2 on rows of 4096 elements or more and none on shorter ones: the
// fifty-second's), none on smaller matrices;
// measured on an H100, the default since; for the types whose prefill takes A from the quants 4 pairs, 2
// for MXFP4 and Q3_K, tiled 4, 8 for Q2_K, 16 for Q6_K: the forty-ninth session's), 1 for none (groups of one
// pair are decode launches anyway), 2.. kGemvPrefillColumnsMax for that c on every launch. Only where the
// tensor-core decode covers the launch (gemv_mma_supported, and gemv_tiled_supported for tiled weights), for
// expert launches with x_gstride and y_gstride 0 and no SwiGLU epilogue (n_groups * min(c, max_pairs) slots,
// or the compact layout's (min(c, max_pairs) + 1) a group of 1..c pairs with GemvBatch::grp_off_host, in
// launches of at most 65,535), dense launches of one matrix (n_groups 1) without x_row; elsewhere, and while
// set_gemv_prefill_x_global or set_gemv_bytewise_dequant is on (the F32 kernels' comparisons), the launch is
// unchanged. Throws Error for c below 0 or above kGemvPrefillColumnsMax. Process-wide; the benchmark and
// tests compare them.
constexpr int kGemvPrefillColumnsDefault = 0;
constexpr int kGemvPrefillColumnsOff = 1;
constexpr int kGemvPrefillColumnsMax = 64;
void set_gemv_prefill_columns(int c);
// Whether launches read GemvBatch::grp_off_host where it is set (on, the default) or ignore it (off: every
// kernel over all n_groups, the columns n_groups C slots, as before the forty-seventh session); the same
// sums either way. Process-wide; the benchmark compares both.
constexpr bool kGemvPrefillHostSizesDefault = true;
void set_gemv_prefill_host_sizes(bool on);
// The tensor cores' prefill of tiled weights with A from the quants computes its staging's word addresses
// anew each unit (on) or keeps them in registers across the loop (off, as before the fifty-third session,
// where ptxas spills up to 424 bytes a thread: kernels_gemv.cu gemm_mma_kernel's RC, which lists where it
// spills less and where more). The same sums bit for bit. mode: kGemvPrefillTiledRecomputeRule (-1, the
// default: on for Q6_K alone, gemv_prefill_tiled_recompute_default), 0 off, 1 on for every type; throws Error
// for anything else. Measured on an H200 (fifty-fourth session, bench_cuda_backend --tiled-recompute, on
// against off, two runs each way alternating; docs/cuda-backend.md forty-second pass): Q6_K x1.10-1.29 on all
// six launches (8 x 2048 x 4096 with 24 and 64 pairs, 8 x 4096 x 2048 with 32, 64 experts of a long prompt,
// the same staging x half a unit, the K split), Q5_K x0.92-1.03, Q4_K x0.81-0.94, Q3_K x0.79-0.95 (x1.05 at
// half a unit, which the rule does not stage with A from the quants), Q2_K x0.97-1.00, MXFP4 x0.81-0.89
// (x1.03 at half). Process-wide; the benchmark and tests compare both.
constexpr int kGemvPrefillTiledRecomputeRule = -1;
constexpr int kGemvPrefillTiledRecomputeDefault = kGemvPrefillTiledRecomputeRule;
constexpr bool gemv_prefill_tiled_recompute_default(GgmlType type) { return type == GgmlType::Q6_K; }
void set_gemv_prefill_tiled_recompute(int mode);
// K split of dense prefill launches on the tensor cores (forty-ninth session; gpu/gemm_mma_layout.h
// prefill_k_splits_default, refitted in the fifty-fifth on rows of 16 units or more, where it counts the
// device's rounds of blocks with the split kernel's occupancy and may split launches that fill the device):
// a dense launch (one matrix, no grp_off; blocks of 64 rows by 32 tokens) of a matrix the rule may split
// (prefill_dense_k_split_eligible: 2048 x 2048 elements or more, or rows of 4096 or more) splits every row's
// super-blocks over `splits` blocks, each writing
// partial sums to stream-ordered scratch (splits x n_tok x ne1 floats, cudaMallocAsync), which a second
// kernel adds in split order into y: the sums of a launch do not depend on timing, but they do on the
// split count (another association of the same F32 additions; the GEMV tolerance either way). splits: 0
// for each launch's rule (the default, kGemvPrefillKSplitDefault; measured there), 1 for none, 2..
// kGemvPrefillKSplitMax for that many on every dense tensor-core launch (splits past a row's units add
// nothing). Throws Error outside 0..kGemvPrefillKSplitMax. Process-wide; the benchmark and tests
// compare them.
constexpr int kGemvPrefillKSplitDefault = 0;
constexpr int kGemvPrefillKSplitMax = 64;
void set_gemv_prefill_k_split(int splits);
// The splits a dense launch of `blocks` blocks over rows of n_units super-blocks (256 elements) takes under
// the setting, on a device of `sms` multiprocessors holding blocks_per_sm of its blocks each; `eligible`:
// whether the rule may split its matrix (gpu/gemm_mma_layout.h prefill_dense_k_split_eligible).
int gemv_prefill_k_splits(int64_t blocks, int64_t n_units, int sms, int blocks_per_sm, bool eligible);
// What a dense tensor-core prefill launch of n_tok tokens over a [ne1][ne0] matrix of `type` takes on this
// device under the settings: its K splits (1: none) and the blocks a multiprocessor holds that the rule
// counted with (the split kernel's occupancy on rows of 16 units or more, asked of CUDA once per device,
// type and A's source). The benchmark and tests report it. Throws Error for a type without CUDA kernels, on a
// CUDA error, or where no block of the split kernel fits a multiprocessor; 1 / 0 for F32, F16 and BF16 (no
// tensor-core prefill).
struct DenseKSplit {
  int splits = 1;
  int blocks_per_sm = 0;
};
DenseKSplit gemv_prefill_dense_k_split(GgmlType type, int64_t ne0, int64_t ne1, int64_t n_tok);
// K split of expert launches on the tensor cores (fiftieth session; the dense launches' split above, on an
// expert launch: grp_off with GemvBatch::grp_off_host read, y_gstride 0, the GGUF layout or the tiled one
// with A from the quants): a split group's partial sums in stream-ordered scratch (splits x pairs x ne1
// floats, the pairs of the whole launch), added in split order into y by a second kernel. splits: 0 for
// the rule (gpu/gemm_mma_layout.h prefill_expert_k_splits_default: 2 splits for groups of at most 32 pairs
// of large matrices, the group and its matrices alone deciding), 1 for none (the default,
// kGemvPrefillExpertKSplitDefault), 2..kGemvPrefillKSplitMax for that many on every group of every expert
// tensor-core launch. Either way a pair's sums do not depend on the launch's other groups; a split group's
// do on the split count (another association of the same F32 additions; the GEMV tolerance either way).
// Throws Error outside 0..kGemvPrefillKSplitMax. Process-wide; the benchmark and tests compare them.
constexpr int kGemvPrefillExpertKSplitDefault = 1;
void set_gemv_prefill_expert_k_split(int splits);
// The splits an expert launch over [ne1][ne0] matrices takes under that setting: `splits` for every group
// of at most `max_pairs` pairs (the larger ones unsplit).
struct ExpertKSplit {
  int splits = 1;
  int max_pairs = 0;
};
ExpertKSplit gemv_prefill_expert_k_splits(int64_t ne0, int64_t ne1);
// The largest group a launch over [ne1][ne0] matrices of `type` (tiled: in the tiled layout; dense:
// without grp_off) takes as decode columns under the setting: 1 for none (before the launch's own limits
// above).
int gemv_prefill_columns(GgmlType type, int64_t ne0, int64_t ne1, bool tiled, bool dense);
}  // namespace detail

// Whether GemvBatch::w_tiled runs for expert launches of [ne1][ne0] matrices of `type`: Q4_K,
// Q5_K (its tensor cores switched on, gpu/gemv_mma.h), Q3_K and Q6_K (their tiled launches
// switched on, set_gemv_tiled_layout), Q2_K or MXFP4 with ne0 a multiple of 256 and ne1 a multiple of 16, the
// tensor-core GEMV on (not variant -1), and x's fragments fitting a block's shared memory (100
// KiB: ne0 up to 23,808 (Q4_K, Q5_K, Q3_K, Q6_K), 22,528 (Q2_K) or 20,224 (MXFP4) elements). Needs a
// current CUDA device.
bool gemv_tiled_supported(GgmlType type, int64_t ne0, int64_t ne1);
// gemv() calls with GemvBatch::w_tiled so far in this process (all threads): lets tests see that
// the engine's experts took the tiled layout.
uint64_t gemv_tiled_launches();
// Tensor-core prefill launches that took A from the quants (detail::set_gemv_prefill_quant_a) so far in
// this process (all threads): lets tests see which path a launch took.
uint64_t gemv_prefill_quant_a_launches();
// Tensor-core prefill launches split along their rows (detail::set_gemv_prefill_k_split, dense, and
// detail::set_gemv_prefill_expert_k_split, expert launches) so far in this process (all threads).
uint64_t gemv_prefill_k_split_launches();
// Of those, the expert launches (detail::set_gemv_prefill_expert_k_split) so far in this process.
uint64_t gemv_prefill_expert_k_split_launches();
// Slots of decode columns at prefill launched so far in this process (all threads; gpu/prefill_columns.h):
// lets tests and the benchmark see which layout a launch took (n_groups C slots, n_small (C + 1) in the
// compact one, none).
uint64_t gemv_prefill_column_slots();
// n_matrices matrices [ne1][ne0] of `type` (rows of row_bytes, matrices back to back at src) into
// the tiled layout at dst (the same bytes permuted, matrix m at m ne1 row_bytes), on stream s.
// src and dst must not overlap, dst 16-byte aligned. Throws Error for either, where the layout does
// not cover the shape (gpu/gemv_tiled.h, tiled_layout_covers), where row_bytes is not the type's,
// or for a negative count. See GemvBatch::w_tiled for launching on dst right after.
void repack_tiled(GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes, const uint8_t* src,
                  uint8_t* dst, int64_t n_matrices, cudaStream_t s);
// The grouped expert launch of gemv(): n_groups matrices [ne1][ne0] of `type` (row_bytes a
// row), group i the matrix at table[i] with pairs [grp_off[i], grp_off[i + 1]) (at most
// max_pairs); pair j reads x row x_row[j] (x_row null: row j) of x_stride floats and writes y
// row j of y_stride floats. Used by the engine (gpu/cuda_moe.h), bench-twin and gpu_ops_test.
// x_frag, x_frag_stride, tables_from_kernel, w_tiled, grp_off_host: GemvBatch's (optional).
void gemv_experts(GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes, const uint8_t* const* table,
                  const int32_t* grp_off, int32_t n_groups, int32_t max_pairs, const int32_t* x_row,
                  const float* x, int64_t x_stride, float* y, int64_t y_stride, cudaStream_t s,
                  const uint8_t* x_frag = nullptr, int64_t x_frag_stride = 0, bool tables_from_kernel = false,
                  bool w_tiled = false, const int32_t* grp_off_host = nullptr);
// gemv_experts' launch with the SwiGLU epilogue (GemvBatch::swiglu_epilogue; tables_from_kernel
// and w_tiled as GemvBatch's): table holds the n_groups gate matrices, then the n_groups up
// matrices; pair j writes the SwiGLU of its gate and up rows, y row j. Throws Error where
// gemv_swiglu_fusable(type, ne0, ne1, w_tiled) is false or max_pairs != 1.
void gemv_experts_swiglu(GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes,
                         const uint8_t* const* table, const int32_t* grp_off, int32_t n_groups,
                         int32_t max_pairs, const int32_t* x_row, const float* x, int64_t x_stride,
                         float limit, float* y, int64_t y_stride, cudaStream_t s,
                         bool tables_from_kernel = false, bool w_tiled = false);

// A token's expert FFN at decode in one launch: `gate_up` (an expert launch with
// swiglu_epilogue) and then `down` (its x the SwiGLU rows gate_up writes), the same values bit for
// bit as gemv(gate_up) then gemv(down) (gate_up's y rows too), without the second launch's start:
// a block goes on to a group's down rows as soon as that group's gate + up rows are written
// (per-group counters in `sync`, device memory of gemv_ffn_sync_ints(n_groups) int32, all 0 before
// the first launch; each launch leaves them 0 again, so one buffer serves launch after launch on
// one stream, CUDA graph replays too, but never two launches at once). Where
// gemv_experts_ffn_fusable(type, gate_up.ne0, gate_up.ne1): both batches of that type in the
// tiled layout (w_tiled), gate_up of [ff][hidden] matrices with w_table (2 n_groups: gates then
// ups), grp_off, one pair a group (max_pairs 1) and no x_frag; down of [hidden][ff] matrices
// (w_table or w + g w_gstride), the same n_groups and grp_off, x = gate_up.y with x_stride =
// gate_up.y_stride, x_gstride = gate_up.y_gstride and no x_row, one pair a group, no x_frag.
// Throws Error otherwise, naming the field; tables_from_kernel must be the same in both (as
// GemvBatch's). h (gate_up's y) must not overlap gate_up's x or down's y.
// One launch of it at a time on a device: its grid is as many blocks as the SMs hold at once,
// and a block waits for blocks of the same launch, so two such launches side by side (or a
// device shared under MPS with fewer SMs than it reports) could each hold SMs the other waits
// for. The engine issues it on its one stream only.
// Measured: docs/cuda-backend.md, twenty-second pass.
void gemv_experts_ffn(const GemvBatch& gate_up, const GemvBatch& down, int32_t* sync, cudaStream_t s);
// Whether gemv_experts_ffn runs for experts of `type` with gate and up rows of `hidden` elements
// and down rows of `ff` (the tiled launch covers both shapes, the SwiGLU epilogue is fusable, and
// gpu/gemv_mma.h's set_gemv_ffn_fusion has switched it on: off by default, since on the H200 it
// measured 1-5 % slower than the two launches; never for Q5_K, Q6_K or Q3_K). Needs a current CUDA device.
bool gemv_experts_ffn_fusable(GgmlType type, int64_t hidden, int64_t ff);
// The int32 counters gemv_experts_ffn's `sync` holds for n_groups experts: n_groups + 1.
constexpr int64_t gemv_ffn_sync_ints(int32_t n_groups) { return static_cast<int64_t>(n_groups) + 1; }
// gemv_experts_ffn launches so far in this process (all threads): lets tests see the engine took it.
uint64_t gemv_ffn_launches();

// True when gemv() takes GemvBatch::swiglu_epilogue for rows of `type` and ne0 elements (the
// tensor-core decode GEMV's default layout: Q4_K, Q2_K, MXFP4, Q3_K, Q6_K and, switched on,
// Q5_K, ne0 a multiple of 256; not when gpu/gemv_mma.h's benchmark switches select another
// variant or switch it off).
bool gemv_swiglu_fusable(GgmlType type, int64_t ne0);
// The same for a launch of [ne1][ne0] matrices, in the tiled layout when w_tiled (then also
// gemv_tiled_supported(type, ne0, ne1)).
bool gemv_swiglu_fusable(GgmlType type, int64_t ne0, int64_t ne1, bool w_tiled);

// Bytes of x's fragments per x row of ne0 floats that the tensor-core decode GEMV of `type`
// takes ready (GemvBatch::x_frag); 0 where it takes none (a type or row length without that
// GEMV, or the tensor cores switched off: gpu/gemv_mma.h). A multiple of 16.
int64_t gemv_x_fragments_bytes(GgmlType type, int64_t ne0);
// swiglu_clamped (the same values, bit for bit) of `rows` rows of ff floats, row r at gate, up,
// out + r ff (out may alias gate), that also writes each output row's fragments for a GEMV of
// `type` at frag + r frag_stride: one warp a 256-element super-block, so the GEMV's launches
// copy them instead of every block preparing them. A programmatic dependent launch (the
// SMs' largest shared-memory configuration preferred), as the GEMV's, and it lets a GEMV
// launched as its programmatic dependent start once every block has begun. Measured beside
// the engine's order (bench_cuda_backend "gemv_ready_fragments"; docs/cuda-backend.md,
// eleventh pass) but not used by the engine: SwiGLU + GEMV gained on some shapes and lost on
// others. Throws Error when gemv_x_fragments_bytes(type, ff) is 0, frag is not 16-byte aligned
// or frag_stride is below it or not a multiple of 16.
void swiglu_clamped_fragments(const float* gate, const float* up, int64_t rows, int64_t ff, float limit, float* out,
                              GgmlType type, uint8_t* frag, int64_t frag_stride, cudaStream_t s);

// out[i][0 .. ne0) = dequantized row rows[i] of W (rows: device array of n ids).
void dequant_rows(GgmlType type, const uint8_t* w, uint64_t row_bytes, int64_t ne0, const int32_t* rows, int32_t n,
                  float* out, cudaStream_t s);

// RMSNorm of n_rows vectors of n floats (sum of squares in double, as cpu_ops rms_norm):
// out + r * out_stride = rmsnorm(x + r * x_stride) * w (w may be null). out may alias x.
void rms_norm(const float* x, int64_t x_stride, const float* w, int64_t n, float eps, float* out, int64_t out_stride,
              int64_t n_rows, cudaStream_t s);
// x[r] += y[r] (y2 null) or x[r] += (y[r] + y2[r]), then out[r] = rmsnorm(x[r]) * w, for n_rows
// rows of n floats (x, y, y2, out rows of n floats; w may be null): the add_inplace calls then
// rms_norm in one launch, the same values bit for bit (each thread adds the elements it then
// squares). out must not alias x, y or y2; y is not written (add_inplace(y, y2) would be).
void add_rms_norm(float* x, const float* y, const float* y2, const float* w, int64_t n, float eps, float* out,
                  int64_t n_rows, cudaStream_t s);
// out[i] = silu(gate[i]) * up[i], i < n. out may alias gate.
void swiglu(const float* gate, const float* up, int64_t n, float* out, cudaStream_t s);
// out[i] = silu(min(gate[i], L)) * clamp(up[i], -L, L), i < n (DeepSeek-V4's SwiGLU clamps;
// core/cpu_moe.h swiglu_clamped); plain swiglu() when limit <= 1e-6. out may alias gate.
void swiglu_clamped(const float* gate, const float* up, int64_t n, float limit, float* out, cudaStream_t s);
// x[i] += y[i], i < n.
void add_inplace(float* x, const float* y, int64_t n, cudaStream_t s);
// out[t][e] = sum_{k < K} weight[t * K + k] * y[pair_of[t * K + k]][e] for t < n_tok, e < E
// (y rows of E floats). The sum runs in k order.
void combine_experts(const float* y, const int32_t* pair_of, const float* weight, int32_t n_tok, int32_t K, int64_t E,
                     float* out, cudaStream_t s);

// RoPE in place on n_tok tokens of n_heads heads: head h of token t starts at
// x + t * tok_stride + h * head_stride; its first n_dims values are rotated with the cos/sin
// pairs cs_table + (pos0 + t) * n_dims (rope_table()'s layout: cs[2i] = cos, cs[2i+1] = sin).
// neox: rotate halves (x[i], x[i + n_dims/2]), else adjacent pairs.
// pos_dev (optional): the position of token 0 read from device memory at run time instead of
// pos0 (a launch that serves every decode step of a CUDA graph).
void rope(float* x, int64_t n_tok, int64_t tok_stride, int64_t n_heads, int64_t head_stride,
          const float* cs_table, int64_t pos0, int n_dims, bool neox, cudaStream_t s,
          const int32_t* pos_dev = nullptr);

// Grouped-query attention (cpu_attention.h gqa_attend): q [n_tok][n_head * hk], kv rows of
// kv_width floats (n_head_kv keys of hk, then n_head_kv values of hv), causal over positions
// 0 .. pos0 + t. out [n_tok][n_head * hv]. Scores live in shared memory, in ranges of 4096
// positions beyond that (flash-decoding split, stream-ordered scratch of at most 64 MiB).
// pos_dev (optional): pos0 read from device memory at run time (as rope's), for launches that
// serve every position with pos0 + n_tok <= max_kv (the KV cache's positions): the single-range
// kernel, plus the split kernels and their combine when max_kv > 4096, each returning at once
// on the other side of 4096 visible positions; every position gets what a direct launch at that
// position gives, bit for bit. Throws Error unless n_tok is 1 and max_kv >= 1.
void gqa_attend(const float* q, int64_t n_tok, int64_t pos0, const float* kv, int64_t kv_width,
                int64_t n_head, int64_t n_head_kv, int64_t hk, int64_t hv, float kq_scale, float* out,
                cudaStream_t s, const int32_t* pos_dev = nullptr, int64_t max_kv = 0);

// MLA absorbed attention (arch_deepseek2.cpp): q_abs [n_tok][H][R], q [n_tok][H][D] whose
// q_pe is at offset D - P of each head, kv rows [R latent | P k_pe] (width R + P).
// score = (q_abs . kv[:R] + q_pe . kv[R:]) * kq_scale; o_lat [n_tok][H][R] = sum p * kv[:R].
// pos_dev, max_kv: as gqa_attend's.
void mla_attend(const float* q_abs, const float* q, int64_t n_tok, int64_t pos0, const float* kv, int64_t H,
                int64_t R, int64_t D, int64_t P, float kq_scale, float* o_lat, cudaStream_t s,
                const int32_t* pos_dev = nullptr, int64_t max_kv = 0);

// Most KV positions the attention kernels handle: no limit of their own since contexts beyond
// 4096 positions are split into ranges (kernels_attention.cu); the KV cache's VRAM is the limit.
int64_t max_attention_positions();

// dst_base + (*pos_dev) * dst_stride [0 .. width) = src [0 .. width): one row written at a
// position read from device memory (the KV cache's row of a decode step in a CUDA graph).
void copy_row_to_position(float* dst_base, int64_t dst_stride, const float* src, int64_t width,
                          const int32_t* pos_dev, cudaStream_t s);

}  // namespace moepack::gpu
