// The GEMV's blocks-per-SM cap (gpu/gemv_launch_cap.h): host arithmetic, run on every machine.
// Expected values are worked out by hand from the H200's numbers: 132 SMs, 233,472 bytes of
// shared memory an SM, 1,024 reserved per block, 256 bytes of the kernel's own (part[4][16]).
#include "gpu/gemv_launch_cap.h"

#include <gtest/gtest.h>

#include "gpu/sm_limits.h"

namespace moepack::gpu::detail {
namespace {

constexpr int64_t kSms = 132;
constexpr size_t kSmem = 233472, kFixed = 1024 + 256, kLimit = 100 * 1024;

TEST(GemvLaunchCap, BlocksPerSmFollowTheRule) {
  EXPECT_EQ(gemv_blocks_per_sm_cap(256, kSms, 8, 0), 0);    // no cap asked
  EXPECT_EQ(gemv_blocks_per_sm_cap(256, kSms, 8, 3), 3);    // a fixed cap
  EXPECT_EQ(gemv_blocks_per_sm_cap(256, kSms, 8, -1), 2);   // 8 x 2048 x 4096: ceil(256 / 132)
  EXPECT_EQ(gemv_blocks_per_sm_cap(512, kSms, 8, -1), 4);   // 8 x 4096 x 2048: one even wave of 4
  EXPECT_EQ(gemv_blocks_per_sm_cap(512, kSms, 16, -1), 2);  // gate + up: 16 stages a warp
  EXPECT_EQ(gemv_blocks_per_sm_cap(512, kSms, 8, -2), 2);   // the sixth pass's rule
  EXPECT_EQ(gemv_blocks_per_sm_cap(528, kSms, 8, -1), 4);   // exactly 4 an SM: still capped
  EXPECT_EQ(gemv_blocks_per_sm_cap(529, kSms, 8, -1), 0);   // beyond 4 an SM: never capped
  EXPECT_EQ(gemv_blocks_per_sm_cap(100, kSms, 4, -1), 1);   // fewer blocks than SMs
}

TEST(GemvLaunchCap, PaddingHoldsTheGridToItsCap) {
  // n = 2: 233472 / 3 + 16 = 77840 a block, less the 1280 fixed = 76560.
  EXPECT_EQ(gemv_capped_smem(kSmem, kFixed, 60000, kLimit, 2), 76560u);
  EXPECT_EQ(gemv_capped_smem(kSmem, kFixed, 90000, kLimit, 2), 90000u);  // already larger
  // n = 4: 233472 / 5 + 16 = 46710, less 1280 = 45430.
  EXPECT_EQ(gemv_capped_smem(kSmem, kFixed, 30000, kLimit, 4), 45430u);
  // n = 3: 233472 / 4 + 16 = 58384, less 1280 = 57104.
  EXPECT_EQ(gemv_capped_smem(kSmem, kFixed, 30000, kLimit, 3), 57104u);
  // Three blocks of 57104 + 1280 fit in the SM, a fourth does not.
  EXPECT_LE(3 * (57104 + kFixed), kSmem);
  EXPECT_GT(4 * (57104 + kFixed), kSmem);
  // n = 1 would need 233472 / 2 + 16 - 1280 = 115472 > the 102400 limit: uncapped.
  EXPECT_EQ(gemv_capped_smem(kSmem, kFixed, 30000, kLimit, 1), 30000u);
  EXPECT_EQ(gemv_capped_smem(kSmem, kFixed, 30000, kLimit, 0), 30000u);  // no cap
  // A per-block share no larger than the fixed bytes cannot be padded.
  EXPECT_EQ(gemv_capped_smem(1000, kFixed, 300, kLimit, 2), 300u);
}

// Q4_K's x fragments (frag_stride_i8: ne0 * 4 + ne0 / 4 + ne0 / 64, rounded up to 16) beside
// the two-unit rings (4 warps x 3 stages x 16 rows x 288 bytes + 16 = 55,312) and the one-unit
// rings (4 x 4 x 16 x 144 + 16 = 36,880), within the H200's 100 KiB a block.
TEST(GemvLaunchCap, RingsFitBesideTheFragments) {
  // ne0 11008: 44032 + 2752 + 172 = 46956 -> 46960; + 55312 = 102272 <= 102400.
  EXPECT_EQ(frag_stride_i8(11008), 46960);
  EXPECT_TRUE(gemv_rings_fit(46960, 4, 3, 288, kLimit));
  // ne0 11264: 45056 + 2816 + 176 = 48048; + 55312 = 103360 > 102400.
  EXPECT_EQ(frag_stride_i8(11264), 48048);
  EXPECT_FALSE(gemv_rings_fit(48048, 4, 3, 288, kLimit));
  // ... where the one-unit rings still fit: 48048 + 36880 = 84928.
  EXPECT_TRUE(gemv_rings_fit(48048, 4, 4, 144, kLimit));
  // ne0 15360: 61440 + 3840 + 240 = 65520; + 36880 = 102400, exactly the limit.
  EXPECT_EQ(frag_stride_i8(15360), 65520);
  EXPECT_TRUE(gemv_rings_fit(65520, 4, 4, 144, kLimit));
  EXPECT_FALSE(gemv_rings_fit(65520 + 16, 4, 4, 144, kLimit));
}

// MXFP4's x fragments since the tenth pass (frag_stride_mx2: ne0 * 4 + ne0 + ne0 / 64, rounded up
// to 16) beside its two-unit rings (4 x 3 x 16 x 272 + 16 = 52,240) and one-unit rings (4 x 4 x
// 16 x 136 + 16 = 34,832): the two-unit rings fit to 9,984 elements (so the longest two-unit
// rows, an even number of units, are 9,728), the one-unit rings to 13,312.
TEST(GemvLaunchCap, Mxfp4RingsFitBesideTheFragments) {
  // ne0 9984: 39936 + 9984 + 156 = 50076 -> 50080; + 52240 = 102320 <= 102400.
  EXPECT_EQ(frag_stride_mx2(9984), 50080);
  EXPECT_TRUE(gemv_rings_fit(50080, 4, 3, 272, kLimit));
  // ne0 10240: 40960 + 10240 + 160 = 51360; + 52240 = 103600 > 102400.
  EXPECT_EQ(frag_stride_mx2(10240), 51360);
  EXPECT_FALSE(gemv_rings_fit(51360, 4, 3, 272, kLimit));
  // ne0 13312: 53248 + 13312 + 208 = 66768; + 34832 = 101600 <= 102400.
  EXPECT_EQ(frag_stride_mx2(13312), 66768);
  EXPECT_TRUE(gemv_rings_fit(66768, 4, 4, 136, kLimit));
  // ne0 13568: 54272 + 13568 + 212 = 68052 -> 68064; + 34832 = 102896 > 102400.
  EXPECT_EQ(frag_stride_mx2(13568), 68064);
  EXPECT_FALSE(gemv_rings_fit(68064, 4, 4, 136, kLimit));
}

// Q5_K's x fragments (frag_stride_i8, Q4_K's column layout) beside its two-unit rings of 176-byte
// super-blocks (4 x 3 x 16 x 352 + 16 = 67,600) and one-unit rings (4 x 4 x 16 x 176 + 16 =
// 45,072): the two-unit rings fit to 7,936 elements (so the longest two-unit rows, an even number
// of units, are 7,680: kernels_gemv_mma.cu, takes_two_unit_rings), the one-unit rings to 13,312.
TEST(GemvLaunchCap, Q5kRingsFitBesideTheFragments) {
  // ne0 7936: 31744 + 1984 + 124 = 33852 -> 33856; + 67600 = 101456 <= 102400.
  EXPECT_EQ(frag_stride_i8(7936), 33856);
  EXPECT_TRUE(gemv_rings_fit(33856, 4, 3, 352, kLimit));
  // ne0 8192: 32768 + 2048 + 128 = 34944; + 67600 = 102544 > 102400.
  EXPECT_EQ(frag_stride_i8(8192), 34944);
  EXPECT_FALSE(gemv_rings_fit(34944, 4, 3, 352, kLimit));
  // ne0 13312: 53248 + 3328 + 208 = 56784; + 45072 = 101856 <= 102400.
  EXPECT_EQ(frag_stride_i8(13312), 56784);
  EXPECT_TRUE(gemv_rings_fit(56784, 4, 4, 176, kLimit));
  // ne0 13568: 54272 + 3392 + 212 = 57876 -> 57888; + 45072 = 102960 > 102400.
  EXPECT_EQ(frag_stride_i8(13568), 57888);
  EXPECT_FALSE(gemv_rings_fit(57888, 4, 4, 176, kLimit));
}

// Q2_K's x fragments since the tenth pass (frag_stride_mx: ne0 * 4 + ne0 / 2 + ne0 / 64, rounded
// up to 16; the ninth pass's frag_stride_i8 was ne0 / 4 smaller) beside its rings of two
// super-blocks a stage (4 x 4 x 16 x 168 + 16 = 43,024): they fit to 13,056 elements (the longest
// rows of an even number of super-blocks: 12,800); with frag_stride_i8 they fitted to 13,824.
TEST(GemvLaunchCap, Q2kRingsFitBesideTheFragments) {
  // ne0 13056: 52224 + 6528 + 204 = 58956 -> 58960; + 43024 = 101984 <= 102400.
  EXPECT_EQ(frag_stride_mx(13056), 58960);
  EXPECT_TRUE(gemv_rings_fit(58960, 4, 4, 168, kLimit));
  // ne0 13312: 53248 + 6656 + 208 = 60112; + 43024 = 103136 > 102400.
  EXPECT_EQ(frag_stride_mx(13312), 60112);
  EXPECT_FALSE(gemv_rings_fit(60112, 4, 4, 168, kLimit));
  // The ninth pass's fragments of 13,824 elements: 55296 + 3456 + 216 = 58968 -> 58976; + 43024 =
  // 102000.
  EXPECT_EQ(frag_stride_i8(13824), 58976);
  EXPECT_TRUE(gemv_rings_fit(58976, 4, 4, 168, kLimit));
}

// Hand-worked on 132 SMs: cost ceil(blocks / 132) (NW + 1) for NW = 4, 8, 12, 16 (blocks of
// 16 NW rows, 8 NW with the epilogue, whole blocks for each group).
TEST(GemvLaunchCap, TiledBlockWarpsTakeTheBusiestSmsCost) {
  // 8 x 2048 rows: 256, 128, 88 (11 a group), 64 blocks -> 2 * 5 = 10, 1 * 9 = 9, 13, 17.
  EXPECT_EQ(tiled_block_warps(2048, 8, false, 132), 8);
  // 8 x 4096 rows: 512, 256, 176, 128 blocks -> 20, 18, 26, 17.
  EXPECT_EQ(tiled_block_warps(4096, 8, false, 132), 16);
  // gate + up of 8 experts of 2048 rows (32, 64, 96, 128 rows a block): 512, 256, 176, 128.
  EXPECT_EQ(tiled_block_warps(2048, 8, true, 132), 16);
  // 8 x 7168 rows: 896, 448, 304, 224 blocks -> 7 * 5 = 35, 4 * 9 = 36, 3 * 13 = 39, 2 * 17 = 34.
  EXPECT_EQ(tiled_block_warps(7168, 8, false, 132), 16);
  // top-6, 6 x 4096 rows: 384, 192, 132 (22 a group), 96 blocks -> 15, 18, 13, 17; gate + up
  // of 6 x 2048 the same blocks.
  EXPECT_EQ(tiled_block_warps(4096, 6, false, 132), 12);
  EXPECT_EQ(tiled_block_warps(2048, 6, true, 132), 12);
  // A small launch: one block of every size -> 5, 9, 13, 17.
  EXPECT_EQ(tiled_block_warps(48, 2, false, 132), 4);
  // A tie goes to the larger block: 8 x 9472 rows: 1184, 592, 400, 296 blocks -> 9 * 5 = 45,
  // 5 * 9 = 45, 4 * 13 = 52, 3 * 17 = 51.
  EXPECT_EQ(tiled_block_warps(9472, 8, false, 132), 8);
  // Partial blocks count whole: 8 x 2064 rows: 264, 136, 88, 72 blocks -> 10, 18, 13, 17.
  EXPECT_EQ(tiled_block_warps(2064, 8, false, 132), 4);
  // Nothing to launch, or no SMs: 4.
  EXPECT_EQ(tiled_block_warps(0, 8, false, 132), 4);
  EXPECT_EQ(tiled_block_warps(2048, 0, false, 132), 4);
  EXPECT_EQ(tiled_block_warps(2048, 8, false, 0), 4);
}

TEST(GemvLaunchCap, TiledRunsWhereTheOneTileLaunchTakesASecondWave) {
  // 8 x 7168 rows: 448 tiles a group, 16 blocks a group of 28 tiles, 128 blocks: cost 29,
  // against 16-warp blocks of one tile a warp: 224 blocks, 2 * 17 = 34 (580 <= 646).
  EXPECT_EQ(tiled_runs_tiles(7168, 8, 132), 28);
  // 16 x 7168 rows: 8 blocks a group of 56, cost 57, against 8 warps: 896 blocks, 7 * 9 = 63.
  EXPECT_EQ(tiled_runs_tiles(7168, 16, 132), 56);
  // 6 x 7168 rows: 22 blocks a group of 21 tiles (132 blocks), cost 22, against 16 warps: 168
  // blocks, 2 * 17 = 34, or 12 warps: 228 blocks, 2 * 13 = 26.
  EXPECT_EQ(tiled_runs_tiles(7168, 6, 132), 21);
  // 8 x 4096 rows: 16 tiles a block, top-6 (6 x 4096) 12, 8 x 7168 on 528 SMs 7: the one-tile
  // launch's own blocks.
  EXPECT_EQ(tiled_runs_tiles(4096, 8, 132), 0);
  EXPECT_EQ(tiled_runs_tiles(4096, 6, 132), 0);
  EXPECT_EQ(tiled_runs_tiles(7168, 8, 528), 0);
  // Less than 5 % cheaper: 16 x 4096 rows (32 tiles a block, 33 against 34); 32 x 1536 rows
  // (Kimi-K3's gate and up in one launch: 24 tiles, 25 against 12 warps' 2 * 13 = 26); 8 x 16384
  // (64 tiles, 65 against 16 warps' 4 * 17 = 68).
  EXPECT_EQ(tiled_runs_tiles(4096, 16, 132), 0);
  EXPECT_EQ(tiled_runs_tiles(1536, 32, 132), 0);
  EXPECT_EQ(tiled_runs_tiles(16384, 8, 132), 0);
  // More groups than SMs: a block a group of all 448 tiles, 2 * 449, against 43 * 17 = 731.
  EXPECT_EQ(tiled_runs_tiles(7168, 200, 132), 0);
  // Nothing to launch, or no SMs.
  EXPECT_EQ(tiled_runs_tiles(0, 8, 132), 0);
  EXPECT_EQ(tiled_runs_tiles(7168, 0, 132), 0);
  EXPECT_EQ(tiled_runs_tiles(7168, 8, 0), 0);
}

// The one-launch expert FFN's items, worked by hand.
TEST(GemvLaunchCap, FfnScheduleItemsAndGrid) {
  // 8 experts of 2048 x 4096 at 16 warps on 132 SMs (one block an SM): gate + up 2048 / 128 = 16
  // items a group; down 256 tiles over 132 / 8 = 16 blocks a group: 16 tiles each, 16 items;
  // (16 + 16) x 8 = 256 items on 132 blocks.
  constexpr FfnSchedule a = ffn_schedule(2048, 4096, 8, 16, 132);
  EXPECT_EQ(a.a_x, 16);
  EXPECT_EQ(a.tpb, 16);
  EXPECT_EQ(a.b_x, 16);
  EXPECT_EQ(a.grid, 132);
  // 8 x 7168: 448 tiles over 16 blocks: 28 tiles, 16 items (tiled_runs_tiles' 28).
  constexpr FfnSchedule b = ffn_schedule(2048, 7168, 8, 16, 132);
  EXPECT_EQ(b.tpb, 28);
  EXPECT_EQ(b.b_x, 16);
  // DeepSeek-V4-Flash's top-6 at 12 warps: 2048 / 96 = 21.3 -> 22 items a group; 132 / 6 = 22
  // blocks a group of ceil(256 / 22) = 12 tiles, ceil(256 / 12) = 22 items.
  constexpr FfnSchedule c = ffn_schedule(2048, 4096, 6, 12, 132);
  EXPECT_EQ(c.a_x, 22);
  EXPECT_EQ(c.tpb, 12);
  EXPECT_EQ(c.b_x, 22);
  EXPECT_EQ(c.grid, 132);
  // 8 warps, two blocks an SM (264 resident): 2048 / 64 = 32 items a group; 33 blocks a group
  // of ceil(256 / 33) = 8 tiles, 32 items.
  constexpr FfnSchedule e = ffn_schedule(2048, 4096, 8, 8, 264);
  EXPECT_EQ(e.a_x, 32);
  EXPECT_EQ(e.tpb, 8);
  EXPECT_EQ(e.b_x, 32);
  EXPECT_EQ(e.grid, 264);
  // Few items: 2 experts of ff 256 and hidden 512 at 8 warps: 256 / 64 = 4 items of gate + up a
  // group, and 32 tiles over 66 blocks: 1 tile, 32 items a group; 72 items, a grid of 72.
  constexpr FfnSchedule f = ffn_schedule(256, 512, 2, 8, 132);
  EXPECT_EQ(f.a_x, 4);
  EXPECT_EQ(f.tpb, 1);
  EXPECT_EQ(f.b_x, 32);
  EXPECT_EQ(f.grid, 72);
  // More groups than resident blocks: a block a group of all tiles.
  constexpr FfnSchedule g = ffn_schedule(2048, 4096, 200, 16, 132);
  EXPECT_EQ(g.tpb, 256);
  EXPECT_EQ(g.b_x, 1);
  EXPECT_EQ(g.grid, 132);
  // Nothing to launch.
  EXPECT_EQ(ffn_schedule(0, 4096, 8, 16, 132).grid, 0);
  EXPECT_EQ(ffn_schedule(2048, 4096, 8, 16, 0).grid, 0);
  EXPECT_EQ(ffn_schedule(2048, 4096, 0, 16, 132).grid, 0);
}

// sm_120's limits (gpu/sm_limits.h): 102,400 bytes of shared memory an SM, 1,024 reserved a block,
// 101,376 a block at most, 1,536 threads and 24 blocks an SM; shared memory in 128-byte units.
TEST(SmLimits, EmulatedBlocksPerSmTakeTheLeastLimit) {
  const SmLimits& l = kSm120Limits;
  EXPECT_EQ(l.smem_per_sm, 102400);
  EXPECT_EQ(l.optin_per_block, 101376);
  // 512 threads, no shared memory, 4 by the device's registers: 1536 / 512 = 3 (an H100 holds 4).
  EXPECT_EQ(emulated_blocks_per_sm(l, 4, 512, 0), 3);
  // The device's count is the bound where it is the least: 2 blocks of 512 threads.
  EXPECT_EQ(emulated_blocks_per_sm(l, 2, 512, 0), 2);
  // 128 threads, 74,000 bytes: 74,000 + 1,024 = 75,024 -> 75,136 (587 units of 128); 102,400 / 75,136 = 1
  // (an H100's 233,472 would hold 3).
  EXPECT_EQ(emulated_blocks_per_sm(l, 3, 128, 74000), 1);
  // 256 threads, 40,000 bytes: 41,024 -> 41,088 (321 units); 102,400 / 41,088 = 2 (threads allow 6).
  EXPECT_EQ(emulated_blocks_per_sm(l, 8, 256, 40000), 2);
  // Exactly a unit: 50,176 + 1,024 = 51,200 = 400 units; two fit exactly in 102,400.
  EXPECT_EQ(emulated_blocks_per_sm(l, 8, 256, 50176), 2);
  EXPECT_EQ(emulated_blocks_per_sm(l, 8, 256, 50177), 1);
  // 128 threads, no shared memory: 1536 / 128 = 12; 32 threads: the 24 blocks an SM bound.
  EXPECT_EQ(emulated_blocks_per_sm(l, 16, 128, 0), 12);
  EXPECT_EQ(emulated_blocks_per_sm(l, 32, 32, 0), 24);
  // Warps are allocated whole: 100 threads are 4 warps, 48 / 4 = 12 (1536 / 100 would say 15); 400
  // threads 13 warps, 48 / 13 = 3; 769 threads 25 warps, 1.
  EXPECT_EQ(emulated_blocks_per_sm(l, 32, 100, 0), 12);
  EXPECT_EQ(emulated_blocks_per_sm(l, 8, 400, 0), 3);
  EXPECT_EQ(emulated_blocks_per_sm(l, 8, 769, 0), 1);
  // A block's maximum: 101,376 bytes fit (one block: 102,400 = 101,376 + 1,024); one byte more would
  // not launch.
  EXPECT_EQ(emulated_blocks_per_sm(l, 1, 128, 101376), 1);
  EXPECT_EQ(emulated_blocks_per_sm(l, 1, 128, 101377), 0);
  // Nothing fits on the device, or no threads.
  EXPECT_EQ(emulated_blocks_per_sm(l, 0, 128, 0), 0);
  EXPECT_EQ(emulated_blocks_per_sm(l, 4, 0, 0), 0);
}

// Shared memory's limit alone (smem_blocks_per_sm), on sm_120's 102,400 bytes with 1,024 reserved a block:
// 49,152 + 1,024 = 50,176 (392 units of 128): 2; 50,100 + 1,024 = 51,124 -> 51,200 (400 units): 2, the SM
// exactly full; 50,177 + 1,024 = 51,201 -> 51,328: 1. An H100's 233,472 with 74,000 bytes (75,136): 3. A
// block of no bytes on a device with none reserved (before sm_80) counts as one 128-byte unit: 800.
TEST(SmLimits, SharedMemoryBlocksPerSm) {
  EXPECT_EQ(smem_blocks_per_sm(102400, 1024, 49152), 2);
  EXPECT_EQ(smem_blocks_per_sm(102400, 1024, 50100), 2);
  EXPECT_EQ(smem_blocks_per_sm(102400, 1024, 50177), 1);
  EXPECT_EQ(smem_blocks_per_sm(102400, 1024, 0),
            100);  // the reserved 1,024 alone (blocks an SM: not counted)
  EXPECT_EQ(smem_blocks_per_sm(233472, 1024, 74000), 3);
  EXPECT_EQ(smem_blocks_per_sm(102400, 1024, -1), 0);
  EXPECT_EQ(smem_blocks_per_sm(102400, 0, 0), 800);
}

// The blocks-per-SM cap's padding on sm_120 (102,400 bytes an SM): a grid of one block an SM is
// capped there (half an SM fits a block's maximum), where on the H200 it runs uncapped (above).
TEST(SmLimits, PaddingOnSm120CapsOneBlockAnSm) {
  constexpr size_t kSmem120 = 102400, kLimit120 = 101376 - 1024;
  // n = 1: 102400 / 2 + 16 = 51216, less the 1280 fixed = 49936: two blocks of 49936 + 1280 = 51216
  // would need 102,432 bytes.
  EXPECT_EQ(gemv_capped_smem(kSmem120, kFixed, 30000, kLimit120, 1), 49936u);
  EXPECT_GT(2 * (49936 + kFixed), kSmem120);
  // n = 2: 102400 / 3 + 16 = 34149, less 1280 = 32869.
  EXPECT_EQ(gemv_capped_smem(kSmem120, kFixed, 30000, kLimit120, 2), 32869u);
  // MXFP4's 16-warp tiled kernels (part[16][16] and 16 bytes of table words: 1,040 static bytes):
  // 51216 - 1024 - 1040 = 49152, 48 KiB of dynamic shared memory exactly, over the 48 KiB less the
  // static bytes a kernel may ask for without opting in (kernels_gemv_mma.cu allow_smem).
  EXPECT_EQ(gemv_capped_smem(kSmem120, 1024 + 1040, 30000, kLimit120, 1), 49152u);
  EXPECT_LE(2 * (32869 + kFixed), kSmem120);
  EXPECT_GT(3 * (32869 + kFixed), kSmem120);
}

}  // namespace
}  // namespace moepack::gpu::detail
