// Internal to gpu/kernels_gemv.cu: the tensor-core decode GEMV (kernels_gemv_mma.cu).
//
// For a group with exactly one pair (decode: one token; or one (token, expert) selection in a
// grouped-experts launch) and a type it covers, y[r] = sum_k W[r][k] x[k] is computed as
//   sum over sub-blocks b of  d1_b * S_b - m1_b * X_b,
//   S_b = sum_{k in b} q_k * x_k   on the tensor cores (mma.sync m16n8k16, f16 in, f32 out),
//   X_b = sum_{k in b} x_k         (F32, element order),
// where q_k are the integer quants (exact in f16; MXFP4's e2m1 codes as ggml's doubled values
// {0, 1, 2, 3, 4, 6, 8, 12}, with d1 the E8M0 scale halved and m1 = 0) and x_k enters as two f16
// halves x_hi = f16(x * 2^s), x_lo = f16(x * 2^s - x_hi) with one power-of-two scale 2^s per
// 16-element granule of x (max |x| * 2^s in [2^14, 2^15) over the granule; no sub-block sum
// spans two granules, so S_b is unscaled per granule), so x keeps 22 significant bits and
// cannot overflow f16. Products are exact; the only rounding beyond the CPU's is the F32
// accumulation order and the 2^-22 relative truncation of x: |gpu - exact| stays within
// gpu_ops_test's 1e-6 * sum |w x| (1.8e-7 seen on the H200). That is the f16 path (variants
// only since the eighth pass). By default every type takes the integer path: x * 2^s (one
// scale per 256 elements, max |x| 2^s in [32, 64)) cut into four signed 7-bit slices, S_b
// exact in s32 per slice (mma.sync m16n8k32, u8 quants x s8 slices, the slices in B's
// columns: one mma gives 16 rows' sums of two k-halves for all four slices), the small
// integer sub-block scales applied in s32 (Q2_K: folded into the quants, and its minimums'
// sum m1_b X_b taken on the tensor cores from the same slices, exact in s32), one F32
// conversion per slice pair and super-block; x is kept to 2^-27 of the super-block's largest
// |x| (kernels_gemv_mma.cu, "The integer path" and "The column layout"; MXFP4's values enter
// as u8 value + 12, the offset taken off in the mma's accumulator with per-block sums of the
// slices, and the E8M0 scale applied in F32 per block; Q3_K's quants q in [-4, 3] as s8 in
// Q2_K's column layout, its 6-bit scales applied in s32, since the twenty-sixth pass; Q6_K's
// 4 (q - 32) as s8 in the same layout, its s8 scales applied in s32, since the twenty-seventh;
// Q5_K's q in [0, 31] (the low nibbles' sub-blocks as q, the high ones' as 2 q) as u8 in Q4_K's
// column layout, its scales and minimums as Q4_K's, since the twenty-eighth).
//
// Which pair takes this path depends only on the group's own pair count, never on how groups
// are batched into launches, so the pack path and the GGUF path (which batch experts
// differently) still compute every (token, expert) pair with the same arithmetic, bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/kernels.h"
#include "gpu/sm_limits.h"

namespace moepack::gpu::detail {

// True when the tensor-core path covers `type` at rows of ne0 elements: Q4_K, Q2_K, MXFP4, Q3_K,
// Q5_K and Q6_K with ne0 a multiple of 256 (Q3_K since the twenty-sixth pass, Q6_K and Q3_K's
// rows of an odd number of super-blocks since the twenty-seventh, Q5_K since the twenty-eighth)
// (false for every type after set_gemv_mma_variant(-1), and for Q3_K, Q5_K or Q6_K after
// set_gemv_tensor_cores(type, false)).
// Weight matrices must be 4-byte aligned (GGUF data is 32-aligned, pack roles 256; gemv_mma throws
// Error for w or w_gstride off that), 8-aligned is the fast case; Q3_K's and Q6_K's 110- and
// 210-byte super-blocks leave rows of an odd number of them, and so their matrices, only
// 2-aligned, which is all those need. Weights are read in whole aligned 4- or 8-byte words, a
// few bytes past a matrix's end at most, never past the aligned word that holds its last byte. The
// activations' fragments take 4.27 (Q4_K, Q5_K, Q3_K, Q6_K), 4.52 (Q2_K) or 5.02 (MXFP4) bytes per element
// and group in the default's layouts (4.5 in the f16 ones; gpu/gemv_launch_cap.h), in the block's shared
// memory or, for rows too long for it, in scratch (cudaMallocAsync on the launch's stream, freed after the
// launch).
bool gemv_mma_supported(GgmlType type, int64_t ne0);
// Q3_K's, Q5_K's or Q6_K's decode on the tensor cores (on by default; for Q5_K
// kGemvQ5kTensorCoresDefault; the benchmark compares both: off, it takes the F32 kernels as
// before the twenty-sixth (Q3_K), twenty-seventh (Q6_K) and twenty-eighth (Q5_K) passes).
// Process-wide. Throws Error for any other type.
void set_gemv_tensor_cores(GgmlType type, bool on);
// Q5_K's tensor-core decode (Q5kColPath), built in the thirty-fifth session, first ran in the
// thirty-seventh (tests/gpu/tiled_pass_on_device.sh: gpu_ops_test and
// CudaBackend.Q5kTensorCoresMatchCpuAndReference passed; expert launches 0.56-0.74 of D2D against
// the F32 kernels' 0.24-0.32 on the six large shapes, x1.8-2.4; docs/cuda-backend.md, thirtieth
// pass): on by default.
constexpr bool kGemvQ5kTensorCoresDefault = true;

// A kernel's dynamic shared memory above 48 KiB, opted in once per device and kernel (raised
// when a launch needs more than before); the tensor cores' prefill (kernels_gemv.cu) takes it too.
void allow_dynamic_smem(const void* kernel, size_t bytes);

// The dynamic shared memory a block of `kernel` may opt in to on the current device: a block's maximum with
// opt-in (cudaDevAttrMaxSharedMemoryPerBlockOptin; under emulated limits the emulated card's where smaller)
// less the kernel's own static __shared__ bytes (cudaFuncGetAttributes), 0 where those pass it. Asked once
// per device and kernel. Throws Error on a CUDA error.
size_t max_dynamic_smem(const void* kernel);

// Stream-ordered scratch (cudaMallocAsync) comes from the device's default pool, set here once per
// device to keep up to 64 MiB of freed memory for reuse (no driver allocation per launch).
void keep_pool_memory();

// The current device's multiprocessors (cached per device).
int device_multiprocessors();

// The per-SM limits of another compute capability emulated on every device of this process
// (gpu/sm_limits.h), from the environment's MOEPACK_GPU_LIMITS: unset or empty: none (nullptr);
// "sm_120": kSm120Limits. Read once. Throws Error naming the variable for any other value. Under them
// the device's shared memory an SM, its reserved bytes and a block's opt-in maximum are the emulated
// ones (where smaller), occupancy_blocks_per_sm counts with them, and allow_dynamic_smem refuses a
// kernel whose shared memory would pass a block's maximum there.
const SmLimits* emulated_sm_limits();

// Blocks of `kernel` (launched with `threads` threads a block and `dynamic_smem` bytes of dynamic
// shared memory) an SM of the current device holds: cudaOccupancyMaxActiveBlocksPerMultiprocessor, and
// under emulated limits the least of that and emulated_blocks_per_sm (gpu/sm_limits.h). 0 where
// none fits. Throws Error on a CUDA error.
int occupancy_blocks_per_sm(const void* kernel, int threads, size_t dynamic_smem);

// Blocks of `kernel` with `dynamic_smem` bytes of dynamic shared memory the current device's shared
// memory an SM holds, registers and threads not counted: smem_blocks_per_sm (gpu/sm_limits.h) of the
// kernel's static plus dynamic bytes, with the device's shared memory an SM and reserved bytes a block
// (under emulated limits the emulated card's). Throws Error on a CUDA error.
int shared_memory_blocks_per_sm(const void* kernel, size_t dynamic_smem);

// Throws Error unless b's weights without a table (w, w_gstride) are aligned as gemv_mma needs: 4
// bytes, 2 for Q3_K's and Q6_K's rows of an odd number of super-blocks (a table's pointers are the
// caller's to align). gemv_mma checks it; the decode columns at prefill (kernels_gemv.cu), which pass
// the weights as a table, check it first.
void check_mma_weights_aligned(const GemvBatch& b);

// Runs every group of b whose pair count is exactly one (with grp_off), or the single pair
// (without grp_off, n_tok == 1). Groups with another pair count are left to the caller.
void gemv_mma(const GemvBatch& b, cudaStream_t s);

// Benchmarks and tests only (bench_cuda_backend's side-by-side). 0 = the default, per type
// (kernels_gemv_mma.cu says which: every type the integer rings in the column layout, Q2_K with
// its sub-block scales folded into the quants and its minimums on the tensor cores, one mma a
// super-block (Q2kColPath3), MXFP4 with its e2m1 tables in registers (Mxfp4ColPath2); Q4_K's and MXFP4's
// expert launches with an even number of at least 16 units a row two units a ring stage in 3 stages where x's
// fragments still fit beside them, their cap counting units; a grid of at most 4 blocks per SM in one even
// wave, ceil(blocks / SMs) blocks an SM, when a warp streams at most 8 ring stages (units for the two-unit
// rings), else at most 2 blocks an SM). Variants 12-16, 18 and 19 change that default, two-unit rings
// included (numbers measured before the ninth pass were against the one-unit rings). 1 = the
// register layout: one super-block loaded ahead in registers, x as f16 halves (Q4_K, Q2_K;
// MXFP4 takes 0); 2 = the ring layout (each warp's 16-row tile streamed through a 4-stage
// cp.async ring in shared memory), x as f16 halves; 3 = rings with the integer path in the
// diagonal layout (Q4_K, Q2_K: each lane's own k values' sums, two mmas per 32 quants; MXFP4
// as 2); 4 = 3 with two warps a tile; 5 = 3 with four warps a tile; 8 = the integer column
// layout (Q2_K in Q2kColPath, its scales applied in s32 and minimums in F32) without the cap on
// blocks per SM; 9 = the same with at most 2 blocks an SM; 10 = 3 with the default's cap; 11 =
// 8 with the default's cap. Expert launches (grp_off) use 64 rows per block; a single matrix 16
// rows per block, each row split over the block's 4 warps. -1 = no tensor cores
// (kernels_gemv.cu's F32 kernels for every type); 6, 7 = diagnosis of the default's expert
// launch of every type (copies only, arithmetic only: wrong sums); 12, 13 = the default with
// all three (one) of the first ring stages issued before the wait for the kernel before,
// instead of two (on the two-unit rings, which have two first stages, 12 is the default and
// 13 issues one of two); 14 = the default with the x fragments written once per group into
// scratch by a separate kernel; 15 = the default without a cap on blocks per SM; 16 = the default with
// the sixth pass's cap (at most 2 blocks an SM for grids of at most 4 blocks per SM; MXFP4's
// expert launches uncapped); 17 = the eighth session's default (Q2_K in Q2kColPath, MXFP4's
// expert launches in the f16 rings at 4 blocks an SM); 18 = the default with no ring stage
// before the wait (the x loads first); 19 = the default with MXFP4's expert launches at 4
// blocks an SM (128 registers); 20 = the ninth session's default (Q4_K's and MXFP4's expert
// launches one unit a ring stage in 4 stages); 21 = the default with the blocks-per-SM cap
// counting those launches' two-unit stages (the default counts units); 22 = the default with
// the ninth pass's arithmetic (the default until the tenth pass: Q2_K's minimums in an mma per
// field, MXFP4's e2m1 tables as literals and every block's scales on every lane; Q4_K as 0);
// 23 = 7 with 22's arithmetic (wrong sums); 24 = the default with x's fragments prepared once
// per group by a separate wide kernel (one super-block a warp) into scratch, each block
// copying its group's into shared memory instead of preparing them (where they fit; sums
// identical to 0's: the same fragments); 25 = 24 without the preparation (the blocks copy a
// buffer nothing writes, wrong sums: the cost of a GEMV whose fragments come ready).
// 26 = Q3_K's expert launches of rows of a multiple of 1024 elements four super-blocks a stage
// (8-byte copies, 3 stages; other types: the default). 27 = Q3_K's and Q6_K's launches one
// super-block a stage for every row (the default's windowed rings of odd rows, kernels_gemv_mma.cu
// windowed_ring); 28 = their launches with the other copy width than the default's (4-byte pieces
// of the rows or 8-byte pieces of their windows); both sum bit for bit as the default; other
// types: the default.
// Process-wide; a run must not mix variants (their sums differ in rounding). Throws Error
// outside -1..28. Q3_K has one arithmetic (the integer rings in Q2_K's column layout,
// Q3kColPath): every variant but -1 runs it, in the default's rings (two super-blocks a stage for
// rows of an even number of them, one in windowed rings for an odd number) except its expert
// launches under 6 and 7 (the diagnosis of those rings), 26, 27 and 28 (23 and 25 run its
// default). Q6_K likewise (Q6kColPath; two super-blocks a stage in 3 stages): every variant but -1
// runs it, except its expert launches under 6 and 7, and every launch under 24 (x's fragments
// prepared once a group), 27 and 28. Q5_K likewise (Q5kColPath in Q4_K's rings: one super-block a
// stage, two from 16 of an even count where x's fragments fit beside them): every variant but -1
// runs it, except its expert launches under 6 and 7 and 20 (one super-block a stage for every
// row), and every launch under 24.
void set_gemv_mma_variant(int variant);
// Whether set_gemv_mma_variant(-1) switched the tensor cores off: then the prefill takes the F32
// kernels too (kernels_gemv.cu, "Prefill on the tensor cores").
bool gemv_mma_off();

// Whether an expert launch of [ne1][ne0] matrices of `type` in the tiled layout (gpu/gemv_tiled.h,
// GemvBatch::w_tiled) runs: gemv_mma_supported, tiled_layout_covers, and x's fragments in the
// default's layout fit a block's shared memory (the tiled kernel stages them there).
bool gemv_tiled_supported(GgmlType type, int64_t ne0, int64_t ne1);
// Q3_K's and Q6_K's tiled launches (twenty-ninth pass: TiledFetch<Q3_K>, TiledFetch<Q6_K>, built
// in a session without a GPU machine, first run in the thirty-seventh: gpu_ops_test and the engine
// tests passed; the engine's gate + up and down launches x1.20-1.53 over the rings, Q6_K's and
// Q3_K's expert FFN x1.24-1.51; docs/cuda-backend.md, thirtieth pass): on by default. Off,
// gemv_tiled_supported(type, ...) is false and the engine holds no matrix of the type tiled
// (tiled_expert); their ring launches are not affected. Process-wide. Throws Error for any other
// type.
void set_gemv_tiled_layout(GgmlType type, bool on);
constexpr bool kGemvQ3kTiledDefault = true;
constexpr bool kGemvQ6kTiledDefault = true;
// Chunks (16 rows x 256 elements) each warp of the tiled launch keeps in flight: 0 (default: the
// launch's, gemv_tiled.h's tiled_default_depth: two for Q2_K and for Q3_K on rows of at least 16
// units or in launches of at most 8 x 3072 rows, one for the others), 1 or 2 (two chunks' arithmetic in one
// basic block; 3 and 4 measured slower and are not compiled; Q5_K and Q6_K, tiled since the twenty-ninth
// pass, take 1 for 2; Q3_K has both since the thirtieth); the sums are the same bit for bit.
// Process-wide; the benchmark and tests compare them. Throws Error otherwise.
void set_gemv_tiled_depth(int depth);
// Warps a block of the tiled launch: 0 (default: the launch's, gemv_launch_cap.h's
// tiled_block_warps), 4, 8, 12 or 16. A block prepares x's fragments once for all its warps, so
// more warps a block prepare the same x fewer times a launch; the sums are the same bit for bit.
// Process-wide; the benchmark and tests compare them. Throws Error otherwise.
void set_gemv_tiled_warps(int warps);
// Runs of tiles a warp in the tiled launch without the SwiGLU epilogue (one warp a tile): 0
// (default: the launch's, gemv_launch_cap.h's tiled_runs_tiles, e.g. 28 tiles a block of 16
// warps for 8 x 7168 rows on 132 SMs, none for most launches), -1 never, or n > 0 tiles a block
// (8 warps a block when set_gemv_tiled_warps is 4 or 8, else 16). The launch's own choice (0)
// applies only while set_gemv_tiled_warps is 0; two warps a tile (set_gemv_tiled_split(2)) takes
// no runs, even forced. Each tile is summed by one warp in unit order as in the one-tile launch:
// the sums are the same bit for bit. Process-wide; the benchmark and tests compare them. Throws
// Error below -1.
void set_gemv_tiled_runs(int tiles_per_block);
// Warps a 16-row tile in the tiled launch without the SwiGLU epilogue: 1 (default: sums bit for
// bit the default launch's on the GGUF bytes) or 2 (each half of the row's units, twice the
// blocks; sums within the same error bound, in another order). Process-wide; the benchmark
// compares both. Throws Error otherwise.
void set_gemv_tiled_split(int warps);

// The one-launch expert FFN at decode (gpu/kernels.h, gemv_experts_ffn): whether it runs for
// experts of `type` with rows of `hidden` (gate, up) and `ff` (down) elements in the tiled layout,
// set_gemv_ffn_fusion not off; and its launch (validated by gemv_experts_ffn).
bool gemv_mma_ffn_fusable(GgmlType type, int64_t hidden, int64_t ff);
void gemv_mma_ffn(const GemvBatch& gate_up, const GemvBatch& down, int32_t* sync, cudaStream_t s);
// The engine's use of it (gpu/cuda_moe.cpp, decode with tiled experts): off by default (on the
// H200 it measured 1-5 % slower than the two launches, docs/cuda-backend.md, twenty-second
// pass); the benchmark and tests switch it on. Process-wide.
void set_gemv_ffn_fusion(bool on);
// Warps a block of it: 0 (default: gate + up's own choice, gemv_launch_cap.h's
// tiled_block_warps with the epilogue; 4 takes 8), 8, 12 or 16; the sums are the same bit for
// bit. Process-wide; the benchmark and tests compare them. Throws Error otherwise.
void set_gemv_ffn_warps(int warps);

// Programmatic dependent launch of the tensor-core GEMV (on by default; the benchmark compares
// both): the launch may begin while the kernel before it on the stream still runs, loading
// its first weights, and waits for that kernel before it reads x. So the weights, w_table,
// grp_off and x_row of a launch must not be written by the kernel launched just before it
// (every caller uploads them from the host or never changes them); x may be. Process-wide.
void set_gemv_pdl(bool on);
// Whether gemv() takes GemvBatch::swiglu_epilogue for rows of `type` and ne0 elements: the
// default layout (variant 0) covers the type and row length, and set_gemv_swiglu_fusion has not
// switched it off.
bool gemv_mma_swiglu_fusable(GgmlType type, int64_t ne0);
// The engine's use of it (gpu/cuda_moe.cpp: gate + up at decode), on by default; the benchmark
// compares both. Process-wide.
void set_gemv_swiglu_fusion(bool on);
// The same for swiglu_clamped_fragments (gpu/kernels.h; on by default, and off whenever
// set_gemv_pdl is): the benchmark compares both. Process-wide.
void set_swiglu_fragments_pdl(bool on);

}  // namespace moepack::gpu::detail
