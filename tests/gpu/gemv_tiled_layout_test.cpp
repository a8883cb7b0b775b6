// The tiled weight layout (gpu/gemv_tiled.h): host arithmetic, run on every machine. Expected
// values are worked out by hand from the table in gpu/gemv_tiled.h and the GGUF block layouts
// (Q2_K: 16 scale bytes, 64 qs bytes, d, dmin; Q4_K: d, dmin, 12 scale bytes, 128 qs bytes;
// Q5_K: Q4_K's 16 header bytes, 32 qh bytes, 128 qs bytes; Q6_K: 128 ql bytes, 64 qh bytes, 16
// scale bytes, d; Q3_K: 32 hmask bytes, 64 qs bytes, 12 scale bytes, d; MXFP4: blocks of one E8M0
// byte and 16 qs bytes).
#include <gtest/gtest.h>

#include <vector>

#include "gpu/gemv_tiled.h"

namespace moepack::gpu {
namespace {

bool same(TiledSource a, TiledSource b) { return a.row == b.row && a.byte == b.byte; }

TEST(GemvTiledLayout, SizesAndCoverage) {
  EXPECT_EQ(tiled_chunk_bytes(GgmlType::Q4_K), 2304);
  EXPECT_EQ(tiled_chunk_bytes(GgmlType::Q2_K), 1344);
  EXPECT_EQ(tiled_chunk_bytes(GgmlType::MXFP4), 2176);
  EXPECT_EQ(tiled_chunk_bytes(GgmlType::Q5_K), 2816);
  EXPECT_TRUE(tiled_layout_covers(GgmlType::Q5_K, 2048, 4096));
  EXPECT_FALSE(tiled_layout_covers(GgmlType::Q5_K, 2048, 4088));
  EXPECT_EQ(tiled_chunk_bytes(GgmlType::Q8_0), 0);
  EXPECT_TRUE(tiled_layout_covers(GgmlType::Q2_K, 4096, 2048));
  EXPECT_FALSE(tiled_layout_covers(GgmlType::Q2_K, 4096, 2040));  // rows not whole tiles
  EXPECT_FALSE(tiled_layout_covers(GgmlType::Q2_K, 4000, 2048));  // not whole units
  EXPECT_FALSE(tiled_layout_covers(GgmlType::Q8_0, 4096, 2048));
  EXPECT_EQ(tiled_chunk_bytes(GgmlType::Q3_K), 1760);
  EXPECT_TRUE(tiled_layout_covers(GgmlType::Q3_K, 2048, 7168));
  EXPECT_EQ(tiled_chunk_bytes(GgmlType::Q6_K), 3360);
  EXPECT_TRUE(tiled_layout_covers(GgmlType::Q6_K, 768, 2048));
  EXPECT_FALSE(tiled_layout_covers(GgmlType::MXFP4, 0, 16));
  // Chunk (tile 3, unit 5) of a Q2_K matrix of 4096-element rows (16 units): (3 x 16 + 5) x 1344.
  EXPECT_EQ(tiled_chunk_offset(GgmlType::Q2_K, 4096, 3, 5), 53 * 1344);
  // Out of range and other types.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, 1344), {-1, -1}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, -1), {-1, -1}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q8_0, 0), {-1, -1}));
}

// The launch's own depth (docs/cuda-backend.md, eighteenth and thirtieth passes, thirty-ninth
// and forty-first sessions): Q2_K two chunks in flight always; Q3_K two on rows of 16 units (4096
// elements) or more (gate + up over a hidden size of 4096 or 7168) and in launches of at most
// 8 x 3072 rows (8 downs of 2048 rows: Kimi-K3's twin at 2048 x 2048, 768-element rows; 8 of
// 2560 or 3072), one on shorter rows in larger launches (8 downs of 3584, 4096 or 7168 rows); the
// rest one.
TEST(GemvTiledLayout, DefaultDepthByTypeRowLengthAndRows) {
  constexpr int64_t big = 8 * 7168;
  EXPECT_EQ(tiled_default_depth(GgmlType::Q2_K, 2048, big), 2);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q2_K, 7168, 8), 2);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 768, big), 1);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 1536, big), 1);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 2048, 8 * 4096), 1);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 3840, big), 1);  // 15 units
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 4096, big), 2);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 7168, big), 2);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 2048, 8 * 2048), 2);  // x1.10 measured
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 768, 8 * 2048), 2);   // x1.13 measured
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 2048, 8 * 3072), 2);  // +0.05 of D2D measured
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 1536, 8 * 2560), 2);  // +0.03 to +0.05
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 2048, 8 * 3072 + 1), 1);
  EXPECT_EQ(tiled_default_depth(GgmlType::Q3_K, 1536, 8 * 3584), 1);  // -0.005, -0.003
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::MXFP4, GgmlType::Q5_K, GgmlType::Q6_K}) {
    EXPECT_EQ(tiled_default_depth(t, 1536, 8), 1) << ggml_type_name(t);
    EXPECT_EQ(tiled_default_depth(t, 7168, big), 1) << ggml_type_name(t);
  }
}

// Every chunk is a permutation of its 16 rows' unit bytes: each (row, byte) exactly once.
TEST(GemvTiledLayout, EachChunkIsAPermutationOfItsRowsBytes) {
  for (const GgmlType t :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    const int unit = tiled_unit_bytes(t), chunk = tiled_chunk_bytes(t);
    std::vector<int> seen(static_cast<size_t>(chunk), 0);
    for (int o = 0; o < chunk; ++o) {
      const TiledSource s = tiled_source(t, o);
      ASSERT_GE(s.row, 0) << ggml_type_name(t) << " o=" << o;
      ASSERT_LT(s.row, 16) << ggml_type_name(t) << " o=" << o;
      ASSERT_GE(s.byte, 0) << ggml_type_name(t) << " o=" << o;
      ASSERT_LT(s.byte, unit) << ggml_type_name(t) << " o=" << o;
      ++seen[static_cast<size_t>(s.row * unit + s.byte)];
    }
    for (int i = 0; i < chunk; ++i)
      EXPECT_EQ(seen[static_cast<size_t>(i)], 1) << ggml_type_name(t) << " " << i;
  }
}

// Hand-worked entries: lane L = 4 g + t holds rows g and g + 8.
TEST(GemvTiledLayout, HandWorkedEntries) {
  // Q2_K, lane 13 (g 3, t 1), first 16-byte word (i 0: row 3): w 0 is qs bytes 8 t.. of half 0,
  // at super-block byte 16 + 8 = 24; w 2 (o + 8) is half 1: 16 + 32 + 8 = 56; w 3: 60.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, 16 * 13), {3, 24}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, 16 * 13 + 8), {3, 56}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, 16 * 13 + 12 + 3), {3, 63}));
  // ... its second word (i 1) is row 11's.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, 512 + 16 * 13), {11, 24}));
  // Scales: row 9's byte 7 at 1024 + 16 x 9 + 7; d, dmin of row 10 (g 2, i 1) at 1280 + 16 + 4.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, 1024 + 16 * 9 + 7), {9, 7}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q2_K, 1280 + 8 * 2 + 4 + 1), {10, 81}));
  // Q4_K, lane 6 (g 1, t 2): i 1 holds groups p 2, 3 of row 1: w 2 (o + 8) is p 3, byte 16 +
  // 96 + 16 = 128; i 3 the same of row 9.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q4_K, 512 + 16 * 6 + 8), {1, 128}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q4_K, 1536 + 16 * 6 + 4), {9, 16 + 64 + 16 + 4}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q4_K, 2048 + 16 * 15 + 1), {15, 1}));  // d's high byte
  // MXFP4, lane 31 (g 7, t 3): i 2, w 1 is block 1 of row 15, qs word 3: byte 17 + 1 + 12 = 30;
  // i 1, w 3 is block 7 of row 7: 119 + 1 + 12 + 3 = 135 (the unit's last byte).
  EXPECT_TRUE(same(tiled_source(GgmlType::MXFP4, 1024 + 16 * 31 + 4), {15, 30}));
  EXPECT_TRUE(same(tiled_source(GgmlType::MXFP4, 512 + 16 * 31 + 15), {7, 135}));
  // Scales of g 5: h 1 (lanes t 2, 3), row 13 (i 1), c 2: block 5 at byte 85.
  EXPECT_TRUE(same(tiled_source(GgmlType::MXFP4, 2048 + 16 * 5 + 8 + 4 + 2), {13, 85}));
  EXPECT_TRUE(same(tiled_source(GgmlType::MXFP4, 2048), {0, 0}));
  // Q5_K, lane 6 (g 1, t 2): as Q4_K's word with qs 32 bytes later (after qh[32]): i 1, w 2 is
  // group 3 of row 1, byte 48 + 96 + 16 = 160. Row 9's qh byte 5 (block byte 21) at 2048 + 32 x 9
  // + 5; row 15's d high byte at 2560 + 16 x 15 + 1; the chunk's last byte is row 15's byte 15.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q5_K, 512 + 16 * 6 + 8), {1, 160}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q5_K, 2048 + 32 * 9 + 5), {9, 21}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q5_K, 2560 + 16 * 15 + 1), {15, 1}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q5_K, 2815), {15, 15}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q5_K, 2816), {-1, -1}));
  // Q6_K, lane 6 (g 1, t 2): i 3 is half n 1 of row 9, its w 3 field pair 1, second word: ql byte
  // 64 + 32 + 16 + 4 = 116. qh of lane 29 (g 7, t 1): i 1 (row 15), w 2 (half 1, first word), c 3:
  // 128 + 32 + 8 + 3 = 171. Row 12's scale 5 (byte 197) at 3072 + 16 x 12 + 5; the d of row 13 (g
  // 5, i 1), its high byte, at 3328 + 20 + 2 + 1; the chunk's last byte is row 15's byte 209.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q6_K, 1536 + 16 * 6 + 12), {9, 116}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q6_K, 2048 + 512 + 16 * 29 + 8 + 3), {15, 171}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q6_K, 3072 + 16 * 12 + 5), {12, 197}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q6_K, 3328 + 20 + 2 + 1), {13, 209}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q6_K, 3359), {15, 209}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q6_K, 3360), {-1, -1}));
  // Q3_K, lane 6 (g 1, t 2): i 1 is row 9, w 3 its half n 1, second word: qs byte 32 + 32 + 16 +
  // 4 = 84. Row 5's hmask byte 17 at 1024 + 32 x 5 + 17; row 11's (g 3, i 1) scale byte 7 (block
  // byte 103) at 1536 + 24 x 3 + 12 + 7; row 14's (g 6, i 1) d high byte at 1728 + 24 + 2 + 1;
  // the chunk's last byte is row 15's byte 109.
  EXPECT_TRUE(same(tiled_source(GgmlType::Q3_K, 512 + 16 * 6 + 12), {9, 84}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q3_K, 1024 + 32 * 5 + 17), {5, 17}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q3_K, 1536 + 72 + 12 + 7), {11, 103}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q3_K, 1728 + 24 + 2 + 1), {14, 109}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q3_K, 1759), {15, 109}));
  EXPECT_TRUE(same(tiled_source(GgmlType::Q3_K, 1760), {-1, -1}));
}

// tiled_dest inverts tiled_source for every byte of every row, and keeps the 4-byte runs the
// CUDA F32 kernels' tiled fetch relies on.
TEST(GemvTiledLayout, DestInvertsSource) {
  for (const GgmlType t :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    const int unit = tiled_unit_bytes(t);
    for (int row = 0; row < 16; ++row) {
      for (int b = 0; b < unit; ++b) {
        const int o = tiled_dest(t, row, b);
        ASSERT_TRUE(same(tiled_source(t, o), {row, b}))
            << ggml_type_name(t) << " row " << row << " byte " << b;
        // (Q6_K's and Q3_K's d, bytes 208-209 and 108-109, are 2-byte runs.)
        const int d_at = t == GgmlType::Q6_K ? 208 : t == GgmlType::Q3_K ? 108 : unit;
        const bool run_start =
            t == GgmlType::MXFP4 ? b % 17 != 0 && (b % 17 - 1) % 4 == 0 : b % 4 == 0 && b < d_at;
        if (b == d_at) {
          EXPECT_EQ(o % 2, 0);
          EXPECT_EQ(tiled_dest(t, row, b + 1), o + 1);
        }
        if (run_start) {
          EXPECT_EQ(o % 4, 0) << ggml_type_name(t) << " row " << row << " byte " << b;
          for (int c = 1; c < 4; ++c) EXPECT_EQ(tiled_dest(t, row, b + c), o + c);
        }
      }
    }
  }
  // Hand-worked: Q2_K row 3 byte 24 at lane 13's first word (HandWorkedEntries); MXFP4 row 13's
  // scale of block 5 at 2048 + 16 x 5 + 8 + 4 + 2.
  EXPECT_EQ(tiled_dest(GgmlType::Q2_K, 3, 24), 16 * 13);
  EXPECT_EQ(tiled_dest(GgmlType::MXFP4, 13, 85), 2048 + 16 * 5 + 8 + 4 + 2);
  EXPECT_EQ(tiled_dest(GgmlType::Q2_K, 16, 0), -1);
  EXPECT_EQ(tiled_dest(GgmlType::Q2_K, 0, 84), -1);
  EXPECT_EQ(tiled_dest(GgmlType::Q8_0, 0, 0), -1);
  EXPECT_EQ(tiled_dest(GgmlType::Q3_K, 9, 84), 512 + 16 * 6 + 12);
  EXPECT_EQ(tiled_dest(GgmlType::Q3_K, 14, 109), 1728 + 24 + 2 + 1);
  EXPECT_EQ(tiled_dest(GgmlType::Q3_K, 0, 110), -1);
  EXPECT_EQ(tiled_dest(GgmlType::Q5_K, 9, 21), 2048 + 32 * 9 + 5);
  EXPECT_EQ(tiled_dest(GgmlType::Q5_K, 1, 160), 512 + 16 * 6 + 8);
  EXPECT_EQ(tiled_dest(GgmlType::Q5_K, 0, 176), -1);
  EXPECT_EQ(tiled_dest(GgmlType::Q6_K, 9, 116), 1536 + 16 * 6 + 12);
  EXPECT_EQ(tiled_dest(GgmlType::Q6_K, 13, 209), 3328 + 20 + 2 + 1);
  EXPECT_EQ(tiled_dest(GgmlType::Q6_K, 0, 210), -1);
}

// The F32 kernels' gather of a row's unit (tiled_row_word, tiled_piece_dest): every piece's bytes
// come from where tiled_source says, and the pieces of a row cover its unit exactly once.
TEST(GemvTiledLayout, RowWordsGatherEachRowsUnitOnce) {
  for (const GgmlType t :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    const int unit = tiled_unit_bytes(t);
    for (int row = 0; row < 16; ++row) {
      std::vector<int> seen(static_cast<size_t>(unit), 0);
      for (int w = 0; w < tiled_row_words(t); ++w) {
        const TiledRowWord rw = tiled_row_word(t, row, w);
        ASSERT_TRUE(rw.bytes == 16 || rw.bytes == 4 ||
                    ((t == GgmlType::Q6_K || t == GgmlType::Q3_K) && rw.bytes == 2));
        ASSERT_EQ(rw.src % rw.bytes, 0) << ggml_type_name(t) << " row " << row << " word " << w;
        const int pb = tiled_piece_bytes(t, w);
        for (int p = 0; p < rw.bytes / pb; ++p) {
          const int dst = tiled_piece_dest(t, w, p);
          // (Q6_K's and Q3_K's staged units lie 210 and 110 bytes apart: the F32 kernels store their
          // pieces 2 bytes at a time, so every piece must start at an even byte.)
          if (t == GgmlType::Q6_K || t == GgmlType::Q3_K) {
            EXPECT_EQ(dst % 2, 0) << ggml_type_name(t) << " row " << row << " word " << w << " piece " << p;
          }
          for (int c = 0; c < pb; ++c) {
            ASSERT_TRUE(same(tiled_source(t, rw.src + p * pb + c), {row, dst + c}))
                << ggml_type_name(t) << " row " << row << " word " << w << " piece " << p << " byte " << c;
            ++seen[static_cast<size_t>(dst + c)];
          }
        }
      }
      for (int b = 0; b < unit; ++b)
        EXPECT_EQ(seen[static_cast<size_t>(b)], 1) << ggml_type_name(t) << " byte " << b;
    }
  }
  // Hand-worked: Q2_K row 11 (g 3, half 1), word 2: lane 14's word of i 1, at 512 + 16 x 14;
  // its piece 3 is qs byte 16 + 32 + 16 + 4 = 68.
  EXPECT_EQ(tiled_row_word(GgmlType::Q2_K, 11, 2).src, 512 + 16 * 14);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q2_K, 2, 3), 68);
  // Q5_K row 11 (g 3, half 1), word 2: lane 14's word of i 2 (groups 0, 1 of rows 8-15), at 1024
  // + 16 x 14; its piece 3 is group 1's byte 48 + 32 + 16 + 4 = 100. Row 9's word 9: its qh bytes
  // 16..31 at 2048 + 32 x 9 + 16, piece 3 to block byte 16 + 16 + 12 = 44.
  EXPECT_EQ(tiled_row_words(GgmlType::Q5_K), 11);
  EXPECT_EQ(tiled_row_word(GgmlType::Q5_K, 11, 2).src, 1024 + 16 * 14);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q5_K, 2, 3), 100);
  EXPECT_EQ(tiled_row_word(GgmlType::Q5_K, 9, 9).src, 2048 + 32 * 9 + 16);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q5_K, 9, 3), 44);
  EXPECT_EQ(tiled_row_word(GgmlType::Q5_K, 9, 10).src, 2560 + 16 * 9);
  // Q6_K row 13 (g 5, half 1): word 10 is lane 22's qh word of i 1 (2048 + 512 + 16 x 22), its
  // piece 3 qh byte 128 + 32 + 16 + 4 = 180; word 13 its d, 2 bytes at 3328 + 20 + 2, to byte 208.
  EXPECT_EQ(tiled_row_words(GgmlType::Q6_K), 14);
  EXPECT_EQ(tiled_row_word(GgmlType::Q6_K, 13, 10).src, 2048 + 512 + 16 * 22);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q6_K, 10, 3), 180);
  EXPECT_EQ(tiled_row_word(GgmlType::Q6_K, 13, 13).src, 3328 + 22);
  EXPECT_EQ(tiled_row_word(GgmlType::Q6_K, 13, 13).bytes, 2);
  EXPECT_EQ(tiled_piece_bytes(GgmlType::Q6_K, 13), 2);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q6_K, 13, 0), 208);
  // Q3_K row 11 (g 3, half 1): word 2 is lane 14's word of i 1 (512 + 16 x 14), its piece 3 qs
  // byte 32 + 32 + 16 + 4 = 84; word 7 its scale bytes 4-7 at 1536 + 72 + 12 + 4, to byte 100;
  // word 9 its d, 2 bytes at 1728 + 12 + 2, to byte 108.
  EXPECT_EQ(tiled_row_words(GgmlType::Q3_K), 10);
  EXPECT_EQ(tiled_row_word(GgmlType::Q3_K, 11, 2).src, 512 + 16 * 14);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q3_K, 2, 3), 84);
  EXPECT_EQ(tiled_row_word(GgmlType::Q3_K, 11, 7).src, 1536 + 72 + 12 + 4);
  EXPECT_EQ(tiled_row_word(GgmlType::Q3_K, 11, 7).bytes, 4);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q3_K, 7, 0), 100);
  EXPECT_EQ(tiled_row_word(GgmlType::Q3_K, 11, 9).src, 1728 + 12 + 2);
  EXPECT_EQ(tiled_piece_bytes(GgmlType::Q3_K, 9), 2);
  EXPECT_EQ(tiled_piece_dest(GgmlType::Q3_K, 9, 0), 108);
}

}  // namespace
}  // namespace moepack::gpu
