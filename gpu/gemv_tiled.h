// The tiled weight layout of the tensor-core decode GEMV (kernels_gemv_mma.cu, gemv_tiled_kernel):
// where each byte of a GGUF matrix of Q4_K, Q5_K, Q6_K, Q3_K, Q2_K or MXFP4 goes, as arithmetic only (no CUDA
// runtime), so the CPU tests cover it (tests/gpu/gemv_tiled_layout_test.cpp).
//
// Why: the default decode GEMV (gemv_pipe_kernel) streams each warp's 16-row tile through a
// cp.async ring in shared memory and then reads every lane's words out of it, because in the
// GGUF layout a lane's bytes are scattered over 16 rows (and MXFP4's words sit at odd offsets).
// On the H200 that staging is about half of the main loop's instructions for Q2_K and MXFP4
// (docs/cuda-backend.md, tenth pass: 609 instructions a two-super-block Q2_K stage of which ~350
// are arithmetic; 917 a two-unit MXFP4 stage). In the tiled layout every lane's bytes of a unit
// are contiguous 16-byte words placed so that each load instruction of a warp reads 512
// contiguous bytes (or a broadcast of a row header), so a warp loads its registers straight from
// global memory, a unit or more ahead, with no ring, no shared memory and no funnel shifts.
//
// The layout is a permutation of the matrix's bytes (the same size, nothing converted), chunk by
// chunk: a matrix of ne1 rows (a multiple of 16) and ne0 elements a row (a multiple of 256) is
// ne1 / 16 tiles of 16 rows by ne0 / 256 units of 256 elements; chunk (tile T, unit u) is the 16
// rows' bytes of that unit (tiled_chunk_bytes: 16 x 144 = 2304 for Q4_K, 16 x 176 = 2816 for
// Q5_K, 16 x 210 = 3360 for Q6_K, 16 x 110 = 1760 for Q3_K, 16 x 84 = 1344 for Q2_K, 16 x 136 =
// 2176 for MXFP4 (8 blocks of 17 bytes)) and lies at
// (T x ne0 / 256 + u) x tiled_chunk_bytes. Within a chunk, with lane L = 4 g + t of a warp
// (rows g and g + 8 of the tile, the mma fragments' rows; kernels_gemv_mma.cu "The column
// layout"), tiled_source says which byte of which row each chunk byte o is:
//   Q2_K (84-byte super-block: 16 scale bytes, 64 qs bytes, d, dmin):
//     [0, 1024): o = 512 i + 16 L + 4 w + c: row g + 8 i, qs byte 32 (w / 2) + 8 t + 4 (w % 2) + c
//                (the lane's two 8-byte words of each 32-byte half: Q2kI8Path's qa, qb);
//     [1024, 1280): 16 r + c: row r, scale byte c (the whole row's 16, read by its 4 lanes);
//     [1280, 1344): 8 g + 4 i + c: row g + 8 i, byte 80 + c (d, dmin).
//   Q4_K (144-byte super-block: d, dmin, 12 scale bytes, 128 qs bytes):
//     [0, 2048): o = 512 i + 16 L + 4 w + c: row g + 8 (i / 2), qs group p = 2 (i % 2) + w / 2,
//                byte 16 + 32 p + 8 t + 4 (w % 2) + c (Q4kI8Path's qa, qb);
//     [2048, 2304): 16 r + c: row r, header byte c.
//   Q5_K (176-byte super-block: d, dmin, 12 scale bytes, qh[32], qs[128]; twenty-ninth pass):
//     [0, 2048): as Q4_K's, qs byte 48 + 32 p + 8 t + 4 (w % 2) + c (Q5kColPath's qa, qb);
//     [2048, 2560): 32 r + c: row r, qh byte c (block byte 16 + c): lane 4 g + t reads its 8
//                bytes 8 t.. of rows g and g + 8 (Q5kColPath's qha, qhb) in two 8-byte loads,
//                each a warp's 256 contiguous bytes;
//     [2560, 2816): 16 r + c: row r, header byte c.
//   Q6_K (210-byte super-block: ql[128], qh[64], 16 s8 scales, d; twenty-ninth pass):
//     [0, 2048): o = 512 i + 16 L + 4 w + c: row g + 8 (i / 2), ql byte 64 (i % 2) + 32 (w / 2)
//                + 8 t + 4 (w % 2) + c (Q6kColPath's la, lb: half n = i % 2, field pair w / 2);
//     [2048, 3072): 2048 + 512 i + 16 L + 4 w + c: row g + 8 i, qh byte 128 + 32 (w / 2) + 8 t
//                + 4 (w % 2) + c (Q6kColPath's ha, hb);
//     [3072, 3328): 16 r + c: row r, scale byte c (block byte 192 + c);
//     [3328, 3360): 4 g + 2 i + c: row g + 8 i, d's byte c (block byte 208 + c): a lane's one
//                4-byte load holds the d of both its rows.
//   Q3_K (110-byte super-block: hmask[32], qs[64], 12 scale bytes, d; twenty-ninth pass):
//     [0, 1024): o = 512 i + 16 L + 4 w + c: row g + 8 i, qs byte 32 + 32 (w / 2) + 8 t + 4 (w %
//                2) + c (Q3kColPath's qa, qb: half n = w / 2);
//     [1024, 1536): 1024 + 32 r + c: row r, hmask byte c (two 8-byte loads a lane: ha, hb);
//     [1536, 1728): 1536 + 24 g + 12 i + c: row g + 8 i, scale byte c (block byte 96 + c): a
//                lane's 24 bytes in three 8-byte loads;
//     [1728, 1760): 4 g + 2 i + c: row g + 8 i, d's byte c (block byte 108 + c), as Q6_K's.
//   MXFP4 (unit of 8 blocks, block k at 17 k: E8M0 scale, 16 qs bytes):
//     [0, 2048): o = 512 i + 16 L + 4 w + c: row g + 8 (i / 2), block k = 4 (i % 2) + w, byte
//                17 k + 1 + 4 t + c (the lane's qs word of each block: Mxfp4ColPath2's wa, wb);
//     [2048, 2176): 16 g + 8 h + 4 i + c: row g + 8 i, the scale of block 2 c + h (byte 17 (2 c +
//                h)): a lane with t / 2 = h reads the scales it applies (Mxfp4ColPath2's dea, deb).
#pragma once

#include <cstdint>

#include "core/ggml_type.h"
#include "gpu/gemv_launch_cap.h"  // MOEPACK_GEMV_HD

namespace moepack::gpu {

// Per type: a row's bytes of one unit of 256 elements in the GGUF layout (144 Q4_K, 176 Q5_K, 210
// Q6_K, 110 Q3_K, 84 Q2_K, 136 MXFP4: 8 blocks) and the F32 kernels' words a row and unit
// (tiled_row_words below); 0 and 0 for every other type.
struct TiledTypeInfo {
  int unit_bytes, row_words;
};
MOEPACK_GEMV_HD constexpr TiledTypeInfo tiled_type_info(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_K:
      return {144, 9};
    case GgmlType::Q5_K:
      return {176, 11};
    case GgmlType::Q6_K:
      return {210, 14};
    case GgmlType::Q3_K:
      return {110, 10};
    case GgmlType::Q2_K:
      return {84, 6};
    case GgmlType::MXFP4:
      return {136, 10};
    default:
      return {0, 0};
  }
}
MOEPACK_GEMV_HD constexpr int tiled_unit_bytes(GgmlType t) { return tiled_type_info(t).unit_bytes; }
// Bytes of a chunk (16 rows of one unit); 0 for a type without the layout.
MOEPACK_GEMV_HD constexpr int tiled_chunk_bytes(GgmlType t) { return 16 * tiled_unit_bytes(t); }

// Whether a matrix of `type` with ne1 rows of ne0 elements has the tiled layout: Q4_K, Q5_K, Q6_K,
// Q3_K, Q2_K or MXFP4, ne0 a positive multiple of 256 and ne1 a positive multiple of 16.
MOEPACK_GEMV_HD constexpr bool tiled_layout_covers(GgmlType type, int64_t ne0, int64_t ne1) {
  return tiled_unit_bytes(type) > 0 && ne0 > 0 && ne0 % 256 == 0 && ne1 > 0 && ne1 % 16 == 0;
}

struct TiledSource {
  int row;   // row of the tile, 0..15
  int byte;  // byte of that row's unit, 0..tiled_unit_bytes - 1
};

// Where chunk byte o (0 <= o < tiled_chunk_bytes(t)) of the tiled layout comes from (the table at
// the top of this file). {-1, -1} for a type without the layout or o out of range.
MOEPACK_GEMV_HD constexpr TiledSource tiled_source(GgmlType t, int o) {
  const int chunk = tiled_chunk_bytes(t);
  if (chunk == 0 || o < 0 || o >= chunk) return {-1, -1};
  if (o < 2048 && ((t != GgmlType::Q2_K && t != GgmlType::Q3_K) || o < 1024)) {  // the lanes' words
    const int i = o / 512, lane = (o % 512) / 16, w = (o % 16) / 4, c = o % 4;
    const int g = lane / 4, tq = lane % 4;
    if (t == GgmlType::Q3_K) return {g + 8 * i, 32 + 32 * (w / 2) + 8 * tq + 4 * (w % 2) + c};
    if (t == GgmlType::Q2_K) return {g + 8 * i, 16 + 32 * (w / 2) + 8 * tq + 4 * (w % 2) + c};
    if (t == GgmlType::Q6_K) return {g + 8 * (i / 2), 64 * (i % 2) + 32 * (w / 2) + 8 * tq + 4 * (w % 2) + c};
    if (t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
      const int p = 2 * (i % 2) + w / 2, qs = t == GgmlType::Q4_K ? 16 : 48;
      return {g + 8 * (i / 2), qs + 32 * p + 8 * tq + 4 * (w % 2) + c};
    }
    const int k = 4 * (i % 2) + w;  // MXFP4
    return {g + 8 * (i / 2), 17 * k + 1 + 4 * tq + c};
  }
  if (t == GgmlType::Q3_K) {
    if (o < 1536) return {(o - 1024) / 32, (o - 1024) % 32};
    if (o < 1728) {
      const int q = o - 1536;
      return {q / 24 + 8 * ((q % 24) / 12), 96 + q % 12};
    }
    const int q = o - 1728;
    return {q / 4 + 8 * ((q % 4) / 2), 108 + q % 2};
  }
  if (t == GgmlType::Q2_K) {
    if (o < 1280) return {(o - 1024) / 16, (o - 1024) % 16};
    const int q = o - 1280;
    return {q / 8 + 8 * ((q % 8) / 4), 80 + q % 4};
  }
  const int q = o - 2048;
  if (t == GgmlType::Q6_K) {
    if (q < 1024) {
      const int i = q / 512, lane = (q % 512) / 16, w = (q % 16) / 4, c = q % 4;
      return {lane / 4 + 8 * i, 128 + 32 * (w / 2) + 8 * (lane % 4) + 4 * (w % 2) + c};
    }
    if (q < 1280) return {(q - 1024) / 16, 192 + q % 16};
    const int d = q - 1280;
    return {d / 4 + 8 * ((d % 4) / 2), 208 + d % 2};
  }
  if (t == GgmlType::Q4_K) return {q / 16, q % 16};
  if (t == GgmlType::Q5_K)
    return q < 512 ? TiledSource{q / 32, 16 + q % 32} : TiledSource{(q - 512) / 16, q % 16};
  const int g = q / 16, h = (q % 16) / 8, i = (q % 8) / 4, c = q % 4;  // MXFP4
  return {g + 8 * i, 17 * (2 * c + h)};
}

// Byte c of word w of lane 4 g + tq's 16-byte word i of a chunk (the lanes' words).
MOEPACK_GEMV_HD constexpr int tiled_lane_byte(int g, int i, int tq, int w, int c) {
  return 512 * i + 16 * (4 * g + tq) + 4 * w + c;
}

// The inverse of tiled_source: the chunk byte that holds byte `byte` (0..tiled_unit_bytes - 1)
// of row `row` (0..15) of a chunk's unit; -1 for a type without the layout or either out of
// range. Bytes 4 j .. 4 j + 3 of a Q4_K, Q5_K or Q2_K unit, and of a Q6_K or Q3_K unit below its d, and
// MXFP4's qs bytes 17 k + 1 + 4 q ..
// + 3, lie at four consecutive chunk bytes starting at a multiple of 4 (the table above).
MOEPACK_GEMV_HD constexpr int tiled_dest(GgmlType t, int row, int byte) {
  const int unit = tiled_unit_bytes(t);
  if (unit == 0 || row < 0 || row >= 16 || byte < 0 || byte >= unit) return -1;
  const int g = row % 8, half = row / 8;
  if (t == GgmlType::Q3_K) {
    if (byte < 32) return 1024 + 32 * row + byte;
    if (byte < 96) {
      const int n = (byte - 32) / 32, r = (byte - 32) % 32;
      return tiled_lane_byte(g, half, r / 8, 2 * n + (r % 8) / 4, r % 4);
    }
    if (byte < 108) return 1536 + 24 * g + 12 * half + byte - 96;
    return 1728 + 4 * g + 2 * half + byte - 108;
  }
  if (t == GgmlType::Q6_K) {
    if (byte < 128) {
      const int n = byte / 64, r = byte % 32;
      return tiled_lane_byte(g, 2 * half + n, r / 8, 2 * ((byte % 64) / 32) + (r % 8) / 4, r % 4);
    }
    if (byte < 192) {
      const int n = (byte - 128) / 32, r = (byte - 128) % 32;
      return 2048 + tiled_lane_byte(g, half, r / 8, 2 * n + (r % 8) / 4, r % 4);
    }
    if (byte < 208) return 3072 + 16 * row + byte - 192;
    return 3328 + 4 * g + 2 * half + byte - 208;
  }
  if (t == GgmlType::Q2_K) {
    if (byte < 16) return 1024 + 16 * row + byte;
    if (byte >= 80) return 1280 + 8 * g + 4 * half + (byte - 80);
    const int q = byte - 16, h = q / 32, r = q % 32;
    return tiled_lane_byte(g, half, r / 8, 2 * h + (r % 8) / 4, r % 4);
  }
  if (t == GgmlType::Q4_K || t == GgmlType::Q5_K) {
    const bool q5 = t == GgmlType::Q5_K;
    if (byte < 16) return (q5 ? 2560 : 2048) + 16 * row + byte;
    if (q5 && byte < 48) return 2048 + 32 * row + byte - 16;
    const int q = byte - (q5 ? 48 : 16), p = q / 32, r = q % 32;
    return tiled_lane_byte(g, 2 * half + p / 2, r / 8, 2 * (p % 2) + (r % 8) / 4, r % 4);
  }
  const int k = byte / 17, r = byte % 17;  // MXFP4
  if (r == 0) return 2048 + 16 * g + 8 * (k % 2) + 4 * half + k / 2;
  return tiled_lane_byte(g, 2 * half + k / 4, (r - 1) / 4, k % 4, (r - 1) % 4);
}

// How the F32 kernels (kernels_gemv.cu, TILED) gather one row's unit back into the GGUF order:
// tiled_row_words(t) words a row and unit, word w of row `row` being the `bytes` (16, 4 or 2)
// chunk bytes at `src`, made of bytes / tiled_piece_bytes(t, w) pieces; piece p of word w goes to byte
// tiled_piece_dest(t, w, p) of the row's unit (contiguous). Q2_K: the row's 4 qs words, its 16
// scale bytes, d and dmin (4 bytes); Q4_K: 8 qs words and the 16 header bytes; Q5_K: 8 qs words,
// the row's 32 qh bytes in two words and the 16 header bytes; Q6_K: 8 ql words, 4 qh words, the
// 16 scale bytes and d (a 2-byte word and piece); Q3_K: 4 qs words, 2 hmask words, 3 scale words
// of 4 bytes and d; MXFP4: 8 qs words (pieces: a block's 4-byte qs
// run) and two 4-byte words of 4 scales each (1-byte pieces).
MOEPACK_GEMV_HD constexpr int tiled_row_words(GgmlType t) { return tiled_type_info(t).row_words; }
struct TiledRowWord {
  int src;    // chunk byte (a multiple of `bytes`)
  int bytes;  // 16, 4 or 2 (Q6_K's and Q3_K's d)
};
MOEPACK_GEMV_HD constexpr TiledRowWord tiled_row_word(GgmlType t, int row, int w) {
  const int g = row % 8, half = row / 8;
  if (t == GgmlType::Q2_K) {
    if (w < 4) return {tiled_lane_byte(g, half, w, 0, 0), 16};
    if (w == 4) return {1024 + 16 * row, 16};
    return {1280 + 8 * g + 4 * half, 4};
  }
  if (t == GgmlType::Q4_K) {
    if (w < 8) return {tiled_lane_byte(g, 2 * half + w / 4, w % 4, 0, 0), 16};
    return {2048 + 16 * row, 16};
  }
  if (t == GgmlType::Q5_K) {
    if (w < 8) return {tiled_lane_byte(g, 2 * half + w / 4, w % 4, 0, 0), 16};
    if (w < 10) return {2048 + 32 * row + 16 * (w - 8), 16};
    return {2560 + 16 * row, 16};
  }
  if (t == GgmlType::Q3_K) {
    if (w < 4) return {tiled_lane_byte(g, half, w, 0, 0), 16};
    if (w < 6) return {1024 + 32 * row + 16 * (w - 4), 16};
    if (w < 9) return {1536 + 24 * g + 12 * half + 4 * (w - 6), 4};
    return {1728 + 4 * g + 2 * half, 2};
  }
  if (t == GgmlType::Q6_K) {
    if (w < 8) return {tiled_lane_byte(g, 2 * half + w / 4, w % 4, 0, 0), 16};
    if (w < 12) return {2048 + tiled_lane_byte(g, half, w - 8, 0, 0), 16};
    if (w == 12) return {3072 + 16 * row, 16};
    return {3328 + 4 * g + 2 * half, 2};
  }
  if (w < 8) return {tiled_lane_byte(g, 2 * half + w / 4, w % 4, 0, 0), 16};  // MXFP4
  return {2048 + 16 * g + 8 * (w - 8) + 4 * half, 4};
}
MOEPACK_GEMV_HD constexpr int tiled_piece_bytes(GgmlType t, int w) {
  return t == GgmlType::MXFP4 && w >= 8                                        ? 1
         : (t == GgmlType::Q6_K && w == 13) || (t == GgmlType::Q3_K && w == 9) ? 2
                                                                               : 4;
}
MOEPACK_GEMV_HD constexpr int tiled_piece_dest(GgmlType t, int w, int p) {
  if (t == GgmlType::Q2_K) return w < 4 ? 16 + 32 * (p / 2) + 8 * w + 4 * (p % 2) : w == 4 ? 4 * p : 80;
  if (t == GgmlType::Q4_K) return w < 8 ? 16 + 32 * (2 * (w / 4) + p / 2) + 8 * (w % 4) + 4 * (p % 2) : 4 * p;
  if (t == GgmlType::Q3_K) {
    return w < 4   ? 32 + 32 * (p / 2) + 8 * w + 4 * (p % 2)
           : w < 6 ? 16 * (w - 4) + 4 * p
           : w < 9 ? 96 + 4 * (w - 6)
                   : 108;
  }
  if (t == GgmlType::Q6_K) {
    return w < 8     ? 64 * (w / 4) + 32 * (p / 2) + 8 * (w % 4) + 4 * (p % 2)
           : w < 12  ? 128 + 32 * (p / 2) + 8 * (w - 8) + 4 * (p % 2)
           : w == 12 ? 192 + 4 * p
                     : 208;
  }
  if (t == GgmlType::Q5_K) {
    return w < 8    ? 48 + 32 * (2 * (w / 4) + p / 2) + 8 * (w % 4) + 4 * (p % 2)
           : w < 10 ? 16 + 16 * (w - 8) + 4 * p
                    : 4 * p;
  }
  if (w < 8) return 17 * (4 * (w / 4) + p) + 1 + 4 * (w % 4);  // MXFP4: block 4 (w / 4) + p
  return 17 * (2 * p + (w - 8));                               // the scale of block 2 p + h
}

// Byte offset of chunk (tile, unit) in a tiled matrix of ne0 elements a row.
MOEPACK_GEMV_HD constexpr int64_t tiled_chunk_offset(GgmlType t, int64_t ne0, int64_t tile, int64_t unit) {
  return (tile * (ne0 / 256) + unit) * tiled_chunk_bytes(t);
}

// Q3_K's tiled launches over rows of at least this many units (256 elements each) take depth 2
// (tiled_default_depth).
inline constexpr int64_t kTiledQ3kDepthTwoMinUnits = 16;
// ... and so do Q3_K's launches of at most this many rows in all (rows x matrices), whatever
// their row length (tiled_default_depth).
inline constexpr int64_t kTiledQ3kDepthTwoMaxRows = 8 * 3072;

// Chunks in flight a warp of the tiled launch of `type` over `rows` rows in all (ne1 x the
// launch's matrices) of ne0 elements, where set_gemv_tiled_depth leaves it to the launch (0):
// - 2 for Q2_K (eighteenth pass: -0.01 to +0.09 of D2D);
// - for Q3_K 2 on rows of at least kTiledQ3kDepthTwoMinUnits units (4096 elements) or in
//   launches of at most kTiledQ3kDepthTwoMaxRows rows, 1 otherwise. Measured on the H200 side by
//   side (thirtieth pass and thirty-ninth session, docs/cuda-backend.md): rows of 16 and 28 units
//   x1.05-1.21, gate + up with the epilogue included; 8 experts of 2048 rows x1.10 (8-unit rows)
//   and x1.13 (3-unit rows); 8 experts of 4096 and 7168 rows of 8 units x0.98-0.99. Between
//   them (forty-first session, H100, two runs): 8 experts of 2560 and 3072 rows of 6, 8 and 12
//   units +0.03 to +0.07 of D2D, of 3584 rows -0.005 to +0.02, of 4096 rows -0.007 to +0.007.
//   A warp walks its row's units two at a time, so the longer the row the more of its
//   arithmetic's latency the second chunk hides; a launch of few rows has few warps an SM, whose latency the
//   second chunk hides too;
// - 1 for every other type (Q4_K and MXFP4 up to 0.08 slower at 2; Q5_K and Q6_K have no
//   depth-2 kernels).
// The sums are the same at either depth, bit for bit.
MOEPACK_GEMV_HD constexpr int tiled_default_depth(GgmlType type, int64_t ne0, int64_t rows) {
  if (type == GgmlType::Q2_K) return 2;
  if (type == GgmlType::Q3_K) {
    return ne0 / 256 >= kTiledQ3kDepthTwoMinUnits || rows <= kTiledQ3kDepthTwoMaxRows ? 2 : 1;
  }
  return 1;
}

}  // namespace moepack::gpu
