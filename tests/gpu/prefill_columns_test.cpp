// gpu/prefill_columns.h's slot offsets (no GPU): the slots of a launch must give every pair of a
// group of 1..C pairs a slot of its own holding exactly that pair, and every other slot no pair or
// more than one (the decode GEMV takes groups of exactly one pair), the way the decode GEMV reads
// them: slot s spans [off[s], off[s + 1]).
#include "gpu/prefill_columns.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace moepack::gpu {
namespace {

// The slots' offsets of groups of `sizes` pairs (grp_off their running sums), C slots a group.
std::vector<int32_t> slot_offsets(const std::vector<int32_t>& sizes, int C) {
  std::vector<int32_t> off;
  int32_t j0 = 0;
  for (const int32_t n : sizes) {
    for (int c = 0; c < C; ++c) off.push_back(column_slot_offset(j0, n, c, C));
    j0 += n;
  }
  off.push_back(j0);
  return off;
}

TEST(PrefillColumns, SlotOffsetsByHand) {
  // Groups of 2, 0, 1, 5 and 3 pairs (pairs 0-1, none, 2, 3-7, 8-10), C = 3.
  const std::vector<int32_t> want = {
      0, 1, 2,   // group 0 (2 pairs): slots [0,1) [1,2) [2,2)
      2, 2, 2,   // group 1 (none): [2,2) x 3
      2, 3, 3,   // group 2 (1 pair): [2,3) [3,3) [3,3)
      3, 3, 3,   // group 3 (5 pairs > C): [3,3) [3,3) [3,8): five pairs, skipped
      8, 9, 10,  // group 4 (3 pairs): [8,9) [9,10) [10,11)
      11};
  EXPECT_EQ(slot_offsets({2, 0, 1, 5, 3}, 3), want);
}

TEST(PrefillColumns, EverySmallGroupsPairInASlotOfItsOwn) {
  const std::vector<int32_t> sizes = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 0, 0, 3, 1, 12, 2};
  for (const int C : {1, 2, 4, 6, 8, 12}) {
    const std::vector<int32_t> off = slot_offsets(sizes, C);
    ASSERT_EQ(off.size(), sizes.size() * C + 1);
    int32_t j0 = 0;
    for (size_t g = 0; g < sizes.size(); ++g) {
      const int32_t n = sizes[g];
      for (int c = 0; c < C; ++c) {
        const size_t s = g * C + c;
        ASSERT_LE(off[s], off[s + 1]) << "C " << C << " group " << g << " slot " << c;
        const int32_t span = off[s + 1] - off[s];
        if (n <= C && c < n) {
          EXPECT_EQ(span, 1) << "C " << C << " group " << g << " slot " << c;
          EXPECT_EQ(off[s], j0 + c) << "C " << C << " group " << g << " slot " << c;
        } else {
          EXPECT_NE(span, 1) << "C " << C << " group " << g << " (" << n << " pairs) slot " << c;
        }
      }
      j0 += n;
    }
  }
}

// The compact layout's offsets (column_slot_offset_compact, C + 1 slots for each group of 1..C pairs
// only, the closing entry the last such group's end), laid out the way column_slots_compact_kernel
// does; the number of such groups in *n_small.
std::vector<int32_t> compact_offsets(const std::vector<int32_t>& sizes, int C, int* n_small) {
  std::vector<int32_t> off;
  int32_t j0 = 0, end = 0;
  *n_small = 0;
  for (const int32_t n : sizes) {
    if (n >= 1 && n <= C) {
      for (int c = 0; c <= C; ++c) off.push_back(column_slot_offset_compact(j0, n, c));
      end = j0 + n;
      ++*n_small;
    }
    j0 += n;
  }
  off.push_back(end);
  return off;
}

TEST(PrefillColumns, CompactOffsetsByHand) {
  // Groups of 2, 0, 1, 5 and 3 pairs (pairs 0-1, none, 2, 3-7, 8-10), C = 3: groups 0, 2, 4 get slots.
  const std::vector<int32_t> want = {
      0, 1, 2,  2,   // group 0 (2 pairs): [0,1) [1,2) [2,2), then [2,2) (group 1 has none)
      2, 3, 3,  3,   // group 2 (1 pair): [2,3) [3,3) [3,3), then [3,8): group 3's five pairs, skipped
      8, 9, 10, 11,  // group 4 (3 pairs): [8,9) [9,10) [10,11) [11,11)
      11};
  int n_small = 0;
  EXPECT_EQ(compact_offsets({2, 0, 1, 5, 3}, 3, &n_small), want);
  EXPECT_EQ(n_small, 3);
}

// Every pair of a group of 1..C pairs in a slot of its own, and every other slot (the padding ones over
// skipped groups included) no pair or more than one, for C from 2 (the smallest the launch takes) up.
TEST(PrefillColumns, CompactLayoutGivesEverySmallPairASlotOfItsOwn) {
  const std::vector<int32_t> sizes = {0, 1, 2, 3,  4, 5,  6, 7, 8,  9,  16, 0,
                                      0, 3, 1, 12, 2, 13, 0, 1, 40, 40, 2};
  for (const int C : {2, 3, 4, 6, 8, 12, 16}) {
    int n_small = 0;
    const std::vector<int32_t> off = compact_offsets(sizes, C, &n_small);
    ASSERT_EQ(off.size(), static_cast<size_t>(n_small) * (C + 1) + 1);
    std::vector<int> seen(static_cast<size_t>(std::accumulate(sizes.begin(), sizes.end(), 0)), 0);
    for (size_t s = 0; s + 1 < off.size(); ++s) {
      ASSERT_LE(off[s], off[s + 1]) << "C " << C << " slot " << s;
      if (off[s + 1] - off[s] == 1) ++seen[static_cast<size_t>(off[s])];
    }
    int32_t j0 = 0;
    for (size_t g = 0; g < sizes.size(); ++g) {
      for (int32_t j = j0; j < j0 + sizes[g]; ++j) {
        EXPECT_EQ(seen[static_cast<size_t>(j)], sizes[g] <= C ? 1 : 0)
            << "C " << C << " group " << g << " (" << sizes[g] << " pairs), pair " << j;
      }
      j0 += sizes[g];
    }
  }
}

// The default rule: none under 1024 x 1024 elements (the demo's 256 x 256 experts), 12 pairs on
// larger expert matrices in the GGUF layout, 16 in the tiled one (32 for Q6_K), 4 tokens on dense ones.
TEST(PrefillColumns, DefaultRule) {
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 256, 256, false, false), 1);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 1024, 1023, false, false), 1);  // 1,047,552 elements
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 1023, 1025, true, true), 1);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 1024, 1024, false, false), 12);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 2048, 768, false, false), 12);  // Qwen3-30B-A3B's experts
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4096, 2048, false, false), 12);  // DeepSeek-V4-Flash's
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4096, 2048, true, false), 16);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 7168, 1536, true, false), 16);  // Kimi-K3's
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 7168, 1536, true, false), 32);  // Q6_K tiled
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 7168, 1536, false, false), 12);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 4096, 4096, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 256, 256, true, false), 1);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4096, 4096, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 256, 32000, false, true), 4);  // a fixture's output head
}

// With the prefill taking A from the quants (quant_a, forty-ninth session): 4 pairs in the GGUF layout (2
// for MXFP4 and Q3_K), 4 tiled (8 for Q2_K, 16 for Q6_K); dense launches and small matrices as before.
TEST(PrefillColumns, DefaultRuleWithAFromTheQuants) {
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4096, 2048, false, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q2_K, 4096, 2048, false, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q5_K, 2048, 768, false, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 4096, 2048, false, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::MXFP4, 4096, 2048, false, false, true), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q3_K, 7168, 1536, false, false, true), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4096, 2048, true, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::MXFP4, 4096, 2048, true, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q3_K, 7168, 1536, true, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q2_K, 7168, 1536, true, false, true), 8);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 7168, 1536, true, false, true), 16);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4096, 4096, false, true, true), 4);  // dense
  // Dense launches the K split splits (fiftieth session): 2 tokens, Q6_K 3; without A from the quants 4.
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4096, 4096, false, true, true, true), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::MXFP4, 2048, 7168, false, true, true, true), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 4096, 4096, false, true, true, true), 3);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q8_0, 4096, 4096, false, true, false, true), 4);
  // Dense launches the K split leaves whole (fifty-second session): 2 tokens on rows of 4096 elements or
  // more, none on shorter rows; a split launch's values where the split is switched on for it.
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 7168, 18432, false, true, true, false, true), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 4096, 65536, false, true, true, false, true), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q2_K, 1536, 24576, false, true, true, false, true), 1);
  EXPECT_EQ(prefill_columns_default(GgmlType::MXFP4, 512, 32768, false, true, true, false, true), 1);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q8_0, 7168, 18432, false, true, false, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 7168, 18432, false, true, true, true, true), 3);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 2048, 1024, false, true, true, false, false), 4);  // medium
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 2048, 1024, false, true, true, false, true), 4);  // (as such)
  // Dense matrices under 2048 x 2048 elements with rows of 4096 or more (fifty-fourth session, MLA's kv_a): 2
  // tokens, split or not; without A from the quants, on shorter rows and on expert launches as before.
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 7168, 576, false, true, true, false, true), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 4096, 576, false, true, true, false, true), 2);
  // (split by the rule since the fifty-fifth session: still 2, Q6_K's too, not the split's 3)
  EXPECT_EQ(prefill_columns_default(GgmlType::Q6_K, 7168, 576, false, true, true, true, false), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 7168, 576, false, true, true, true, false), 2);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q8_0, 7168, 576, false, true, false, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 4095, 576, false, true, true, false, true), 4);
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 7168, 576, false, false, true), 4);      // experts
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 256, 256, false, true, true, true), 1);  // small
  EXPECT_EQ(prefill_columns_default(GgmlType::Q4_K, 256, 256, false, false, true), 1);   // the demo's
}

}  // namespace
}  // namespace moepack::gpu
