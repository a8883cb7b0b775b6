// The blocks-per-SM cap of the tensor-core decode GEMV (kernels_gemv_mma.cu, launch_pipe_ug),
// and the sizes of x's fragments it is decided from: arithmetic only, no CUDA runtime, so the
// CPU tests cover it (tests/gpu/gemv_launch_cap_test.cpp).
//
// A launch's grid is capped to n blocks per SM by asking for more dynamic shared memory than it
// needs: enough that an (n + 1)-th block no longer fits on an SM. Measured on the H200 (132 SMs;
// docs/cuda-backend.md, sixth and seventh passes): 256 blocks of long rows ran up to 1.6x slower
// at 3 an SM than at 2 (some SMs ended with a third block the launch waited for); 512 blocks of
// 8-stage rows (8 x 4096 x 2048) ran 1.13x faster at 4 than at 2, but 512 of 16-stage rows
// (gate + up, 16 x 2048 x 4096) 1.3x slower; 896 blocks ran 1.15x faster at 3 than at 2.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "gpu/gemv_hd.h"

namespace moepack::gpu::detail {

// Blocks an SM a launch of `blocks` blocks on `sms` SMs may hold under `cap`: 0 = no cap (as
// many as fit); cap > 0: cap; cap -1: for grids of at most 4 blocks per SM, ceil(blocks / sms)
// (the grid in one even wave) when a warp streams at most 8 ring stages (`stages`, its share
// of a row; the two-unit rings pass units), else 2; cap -2: 2 for grids of at most 4 blocks
// per SM (the sixth pass's rule); larger grids are never capped (0).
constexpr int64_t gemv_blocks_per_sm_cap(int64_t blocks, int64_t sms, int64_t stages, int cap) {
  if (cap >= 0) return cap;
  if (blocks > 4 * sms) return 0;
  return cap == -1 && stages <= 8 ? (blocks + sms - 1) / sms : 2;
}

// The dynamic shared memory (bytes) a block asks for to hold a launch to n blocks an SM: per
// block, smem_per_sm / (n + 1) + 16 (so n + 1 of them exceed the SM's shared memory) less
// `fixed` (the system's reserved bytes per block plus the kernel's static shared memory), and
// never less than `smem` (what the block needs). `smem` itself for n <= 0, and where the padding
// would pass `limit` (a block's allowed maximum): a grid of at most one block per SM (n = 1)
// would need more than half an SM, so it runs uncapped (one block an SM anyway).
constexpr size_t gemv_capped_smem(size_t smem_per_sm, size_t fixed, size_t smem, size_t limit, int64_t n) {
  if (n <= 0) return smem;
  const size_t per_block = smem_per_sm / static_cast<size_t>(n + 1) + 16;
  if (per_block <= fixed || per_block - fixed > limit) return smem;
  return std::max(smem, per_block - fixed);
}

// Warps a block of the tiled expert launch (kernels_gemv_mma.cu, launch_tiled): 4, 8, 12 or 16,
// for a launch of n_groups matrices of ne1 rows (whole 16-row tiles, one warp each) on `sms`
// SMs; `glu`: blocks of 8 NW rows (the SwiGLU epilogue's, half gate and half up rows, or two
// warps a tile). Every block prepares x's fragments once for all its warps, so more warps a block
// prepare the same x fewer times, but fewer, larger blocks leave SMs idle or spread unevenly.
// The cost of a choice is its busiest SM's: ceil(blocks / sms) blocks of NW tiles and one
// preparation each, a preparation costing about one tile's row: ceil(blocks / sms) (NW + 1).
// The smallest cost wins, ties the larger block. Fitted on the H200 (132 SMs,
// docs/cuda-backend.md, eighteenth pass; MXFP4 at 2,048 tiles: 4, 8, 16 warps 0.57, 0.64, 0.68 of
// D2D, each preparation about 1.1 tiles' time): 1,024 tiles take 8 (16 idles half the SMs),
// 2,048 take 16, 3,584 take 16 (measured within 0.02 of 4 and 8), and the top-6 launches of
// DeepSeek-V4-Flash (6 x 4096 rows, or gate + up of 6 x 2048) 12: 132 blocks, one an SM.
// No rows, no groups or no SMs: 4.
constexpr int tiled_block_warps(int64_t ne1, int64_t n_groups, bool glu, int64_t sms) {
  if (ne1 <= 0 || n_groups <= 0 || sms <= 0) return 4;
  int best = 4;
  int64_t best_cost = -1;
  for (const int nw : {4, 8, 12, 16}) {
    const int64_t rows = (glu ? 8 : 16) * static_cast<int64_t>(nw);
    const int64_t blocks = (ne1 + rows - 1) / rows * n_groups;
    const int64_t cost = (blocks + sms - 1) / sms * (nw + 1);
    if (best_cost < 0 || cost <= best_cost) best = nw, best_cost = cost;
  }
  return best;
}

// Tiles a block of 16 warps for the tiled launch's runs (kernels_gemv_mma.cu,
// gemv_tiled_runs_kernel: each warp a contiguous run of tiles), or 0 for one tile a warp
// (tiled_block_warps), for a plain launch of n_groups matrices of ne1 rows on `sms` SMs. A block
// stays within one group (one x), so the runs take sms / n_groups blocks a group (at least 1),
// each ceil(tiles / blocks) tiles: one wave unless there are more groups than SMs (the cost
// below counts the waves). Only blocks of more than 16 tiles are runs (the
// one-tile launch covers the others) and only where they cost at least 5 % less in
// tiled_block_warps' model: a block of n tiles and one preparation costs n + 1 whatever its warps
// (a model: at 8 x 7168 rows runs of 28, of 32 on fewer SMs, and even shares of 14 chunks a warp
// measured alike, docs/cuda-backend.md, twentieth pass). On the H200's 132 SMs:
// 8 x 7168 rows (448 tiles a group) 16 blocks a group of 28 tiles, cost 29 against the one-tile
// launch's two waves of 16-warp blocks, 2 x 17 (measured: docs/cuda-backend.md, twentieth pass);
// 6 x 7168 21 tiles, 22 against 26, and 16 x 7168 56, 57 against 63 (not measured); 8 x 4096 and
// 6 x 4096 rows 0 (16 and 12 tiles a block: the one-tile launch's own blocks). No rows, groups or
// SMs: 0.
constexpr int64_t tiled_runs_tiles(int64_t ne1, int64_t n_groups, int64_t sms) {
  if (ne1 <= 0 || n_groups <= 0 || sms <= 0) return 0;
  const int64_t tiles = (ne1 + 15) / 16;
  const int64_t per_group = sms / n_groups > 1 ? sms / n_groups : 1;
  const int64_t tpb = (tiles + per_group - 1) / per_group;
  if (tpb <= 16) return 0;
  const int64_t cost = ((tiles + tpb - 1) / tpb * n_groups + sms - 1) / sms * (tpb + 1);
  const int nw = tiled_block_warps(ne1, n_groups, false, sms);
  const int64_t one_tile = ((ne1 + 16 * nw - 1) / (16 * nw) * n_groups + sms - 1) / sms * (nw + 1);
  return 20 * cost <= 19 * one_tile ? tpb : 0;
}

// The items of the one-launch expert FFN (kernels_gemv_mma.cu, gemv_tiled_ffn_kernel) for
// `groups` experts of gate and up [ff][hidden] and down [hidden][ff], blocks of `nw` warps, and
// `resident` blocks the SMs hold at once (SMs x blocks an SM): gate + up a_x items a group of
// 8 nw rows (the tiled launch's blocks with the SwiGLU epilogue); down b_x items a group of tpb
// tiles, the grid's share of the groups (resident / groups blocks a group, at least 1, each
// ceil(tiles / that) tiles: tiled_runs_tiles' rule at every size); and a grid of at most
// `resident` blocks (the kernel's waits need every item's block resident or able to become so),
// fewer where there are fewer items. All 0 for no rows, groups, warps or resident blocks.
struct FfnSchedule {
  int64_t a_x = 0, tpb = 0, b_x = 0, grid = 0;
};
constexpr FfnSchedule ffn_schedule(int64_t ff, int64_t hidden, int64_t groups, int nw, int64_t resident) {
  if (ff <= 0 || hidden <= 0 || groups <= 0 || nw <= 0 || resident <= 0) return {};
  FfnSchedule s;
  s.a_x = (ff + 8 * nw - 1) / (8 * nw);
  const int64_t tiles = (hidden + 15) / 16;
  const int64_t per_group = resident / groups > 1 ? resident / groups : 1;
  s.tpb = (tiles + per_group - 1) / per_group;
  s.b_x = (tiles + s.tpb - 1) / s.tpb;
  const int64_t items = (s.a_x + s.b_x) * groups;
  s.grid = items < resident ? items : resident;
  return s;
}

// Whether a block's dynamic shared memory holds x's fragments (`frag` bytes) staged beside the
// rings of `warps` warps, each `stages` stages of 16 rows of `row` bytes, plus the 16 bytes of
// slack after them, within `limit` (a block's allowed maximum). The two-unit rings
// (kernels_gemv_mma.cu, launch_default) take longer rows only while this holds for them.
constexpr bool gemv_rings_fit(size_t frag, int warps, int stages, size_t row, size_t limit) {
  return frag + static_cast<size_t>(warps) * static_cast<size_t>(stages) * 16 * row + 16 <= limit;
}

// Bytes of x's fragments per vector of ne0 elements (a multiple of 256) in the integer path's
// slice layouts (kernels_gemv_mma.cu, x_fragments_i8), rounded up to 16 (uint4 loads, and the
// rings after them). Each starts with ne0 * 4 bytes of the slices' words, ends with ne0 / 256
// floats 2^-s, and holds between them:
//   frag_stride_i8 (the diagonal layout, Q4_K's and Q2kColPath's columns): ne0 / 16 floats, the
//     sum of every 16 elements;
//   frag_stride_mx (MXFP4's columns before the tenth pass; Q2kColPath3's kQ2kMinColumns): ne0 / 2
//     bytes (per 32-element block four s32 offsets; per super-block the minimums' 128 B bytes);
//   frag_stride_mx2 (MXFP4's kMxMagicColumns): ne0 bytes (per block 8 s32: the mma's whole C).
MOEPACK_GEMV_HD constexpr int64_t frag_stride_i8(int64_t ne0) {
  return (ne0 * 4 + ne0 / 4 + ne0 / 64 + 15) / 16 * 16;
}
MOEPACK_GEMV_HD constexpr int64_t frag_stride_mx(int64_t ne0) {
  return (ne0 * 4 + ne0 / 2 + ne0 / 64 + 15) / 16 * 16;
}
MOEPACK_GEMV_HD constexpr int64_t frag_stride_mx2(int64_t ne0) {
  return (ne0 * 4 + ne0 + ne0 / 64 + 15) / 16 * 16;
}

}  // namespace moepack::gpu::detail
