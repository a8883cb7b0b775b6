// Expert cache bookkeeping on hand-made traces; every expected count is worked out by hand in
// the comments.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/cache_sim.h"
#include "core/error.h"
#include "core/expert_cache.h"
#include "core/routing_trace.h"

using namespace moepack;

namespace {

std::vector<SlotAssignment> acq(ExpertCache& c, uint32_t layer, std::vector<uint32_t> ids) {
  return c.acquire(layer, ids);
}

TEST(CacheSizing, FormulaAndTopKFloor) {
  // min(1000, 900 - 100) = 800 bytes / 300-byte slots = 2 slots.
  EXPECT_EQ(cache_slots_for_budget(1000, 900, 100, 300, 2), 2u);
  // min(10 GiB, 5 GiB - 1 GiB) / 64 MiB = 64 slots.
  EXPECT_EQ(cache_slots_for_budget(10ull << 30, 5ull << 30, 1ull << 30, 64ull << 20, 6), 64u);
  // Capped at max_slots (the pack's experts): 64 would fit, 48 exist.
  EXPECT_EQ(cache_slots_for_budget(10ull << 30, 5ull << 30, 1ull << 30, 64ull << 20, 6, 48), 48u);
  // Reserve larger than free: 0 usable.
  try {
    cache_slots_for_budget(1000, 100, 200, 10, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 1 slots"), std::string::npos) << e.what();
  }
  // 800 / 300 = 2 < top-k 4: fails, naming both numbers.
  try {
    cache_slots_for_budget(1000, 900, 100, 300, 4);
    FAIL();
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("2 slots"), std::string::npos) << m;
    EXPECT_NE(m.find("needs 4 slots"), std::string::npos) << m;
  }
}

TEST(ExpertCache, BudgetRespectedToTheSlot) {
  ExpertCache c(3, make_hybrid_policy());
  acq(c, 0, {1, 2, 3});
  EXPECT_EQ(c.resident(), 3u);
  acq(c, 0, {4});
  EXPECT_EQ(c.resident(), 3u);  // never more experts than slots
  EXPECT_THROW(acq(c, 1, {1, 2, 3, 4}), Error);  // working set larger than the cache
  EXPECT_THROW(acq(c, 1, {5, 5}), Error);        // duplicate id
}

TEST(ExpertCache, ProtectedExpertsAreNeverEvicted) {
  // 2 slots. Step 1: layer 0 {1,2}. Step 2: layer 0 {2,3}: 2 hits, 3 misses -> the victim
  // must be expert 1 (expert 2 is protected even though, by recency, it is older than... none).
  ExpertCache c(2, make_lru_policy());
  acq(c, 0, {1, 2});
  c.end_step();
  auto a = acq(c, 0, {3, 2});  // the miss (3) comes first in the list; 2 must still be safe
  ASSERT_EQ(a.size(), 2u);
  EXPECT_FALSE(a[0].hit);
  ASSERT_TRUE(a[0].evicted.has_value());
  EXPECT_EQ(a[0].evicted->expert, 1u);
  EXPECT_TRUE(a[1].hit);
  EXPECT_NE(a[0].slot, a[1].slot);
}

TEST(ExpertCache, HandTraceCountsLru) {
  // 3 slots, LRU. Accesses (clock in brackets):
  // step0: L0 {1,2}[0,1]  -> 2 misses (free slots)
  // step1: L0 {1,3}[2,3]  -> 1 hit (1), 1 miss (3, free slot)
  // step2: L0 {4,1}[4,5]  -> 4 misses: victim = LRU of unprotected {2@1, 3@3} -> 2; 1 hit
  // step3: L0 {2}[6]      -> miss: LRU among {1@5, 3@3, 4@4} -> 3
  // totals: hits 2, misses 5, evictions 2
  ExpertCache c(3, make_lru_policy());
  acq(c, 0, {1, 2});
  c.end_step();
  acq(c, 0, {1, 3});
  c.end_step();
  auto a = acq(c, 0, {4, 1});
  ASSERT_TRUE(a[0].evicted.has_value());
  EXPECT_EQ(a[0].evicted->expert, 2u);
  c.end_step();
  auto b = acq(c, 0, {2});
  ASSERT_TRUE(b[0].evicted.has_value());
  EXPECT_EQ(b[0].evicted->expert, 3u);
  EXPECT_EQ(c.counters().cache_hits, 2u);
  EXPECT_EQ(c.counters().cache_misses, 5u);
  EXPECT_EQ(c.counters().cache_evictions, 2u);
}

TEST(ExpertCache, HybridIsFrequencyFirstThenRecency) {
  // 3 slots. step0 {1,2,3}; step1 {1}; step2 {2}: uses 1->2, 2->2, 3->1.
  // step3 {4}: fewest uses = expert 3 (1 use) although it is not the least recent -> evict 3.
  // step4 {5}: uses 1->2 (last 3), 2->2 (last 4), 4->1 (last 5) -> evict 4 (fewest uses).
  // step5 {6}: uses 1->2 @3, 2->2 @4, 5->1 @6 -> evict 5.
  // LFU tie-break check: step6 {7}: uses 1->2 @3, 2->2 @4, 6->1 -> evict 6; then
  // step7 {8}: 1->2 @3, 2->2 @4, 7->1 -> evict 7. Frequencies 1 and 2 tie at 2 uses: between
  // them hybrid evicts the less recent (1 @3) once others are gone: step8 {9, 10} protects
  // nothing old: 8 (1 use) goes first, then between 1 (@3) and 2 (@4) -> 1.
  ExpertCache c(3, make_hybrid_policy());
  acq(c, 0, {1, 2, 3});
  c.end_step();
  acq(c, 0, {1});
  c.end_step();
  acq(c, 0, {2});
  c.end_step();
  EXPECT_EQ(acq(c, 0, {4})[0].evicted->expert, 3u);
  c.end_step();
  EXPECT_EQ(acq(c, 0, {5})[0].evicted->expert, 4u);
  c.end_step();
  EXPECT_EQ(acq(c, 0, {6})[0].evicted->expert, 5u);
  c.end_step();
  EXPECT_EQ(acq(c, 0, {7})[0].evicted->expert, 6u);
  c.end_step();
  EXPECT_EQ(acq(c, 0, {8})[0].evicted->expert, 7u);
  c.end_step();
  auto a = acq(c, 0, {9, 10});
  EXPECT_EQ(a[0].evicted->expert, 8u);
  EXPECT_EQ(a[1].evicted->expert, 1u);
}

TEST(ExpertCache, LfuTiesGoToTheLowestSlot) {
  // 3 slots filled in order: 1->slot0, 2->slot1, 3->slot2, all 1 use: LFU evicts slot 0 (expert 1)
  // even though hybrid would too (it is also least recent); make slot 0 the MOST recent:
  // step1 {1}: uses 1->2. step2 {2} uses 2->2; now 3 has 1 use: evict 3 (slot 2) for {4}.
  // step4 {5}: uses 1->2, 2->2, 4->1 -> evict 4 (slot 2). Then tie test: step5 {1},{2} again
  // no. Direct tie: fresh cache, {7,8,9} then {1}: all 1 use -> lowest slot (7).
  ExpertCache c(3, make_lfu_policy());
  acq(c, 0, {7, 8, 9});
  c.end_step();
  acq(c, 0, {9});  // 9 most recent and 2 uses; 7, 8 tie at 1 use
  c.end_step();
  EXPECT_EQ(acq(c, 0, {1})[0].evicted->expert, 7u);  // lowest slot among the tie
}

TEST(ExpertCache, UniqueKeysPerStepAreCountedOnce) {
  // Prefill-like step: layer 0 acquired twice in one step with overlapping sets.
  // {1,2} -> 2 misses; {2,3} same step -> 2 is not counted again; 3 -> miss. Totals 0 hits, 3 misses.
  // Next step {2}: hit -> 1 hit.
  ExpertCache c(4, make_hybrid_policy());
  acq(c, 0, {1, 2});
  acq(c, 0, {2, 3});
  EXPECT_EQ(c.counters().cache_misses, 3u);
  EXPECT_EQ(c.counters().cache_hits, 0u);
  c.end_step();
  acq(c, 0, {2});
  EXPECT_EQ(c.counters().cache_hits, 1u);
  // Same expert id in another layer is another key.
  acq(c, 1, {2});
  EXPECT_EQ(c.counters().cache_misses, 4u);
  EXPECT_DOUBLE_EQ(c.counters().hit_rate(), 1.0 / 5.0);
}

std::vector<SlotAssignment> pre(ExpertCache& c, uint32_t layer, std::vector<uint32_t> ids) {
  return c.prefetch(layer, ids);
}

TEST(ExpertCachePrefetch, PlacesOnlyWhatIsNotResidentAndCountsNoHitOrMiss) {
  // 4 slots, hybrid. step0: L0 {1, 2} -> 2 misses (slots 0, 1).
  // prefetch L1 {5, 6}: both absent -> slots 2, 3; prefetch L0 {1, 7}: 1 is resident (not
  // placed), 7 needs a victim among unprotected {2 (uses 1), 5 (0), 6 (0)}: fewest uses, then
  // least recent, then lowest slot: 5 and 6 both have 0 uses and last_access 2 (the clock does
  // not move for a prefetch) -> lowest slot, 5 (slot 2).
  ExpertCache c(4, make_hybrid_policy());
  acq(c, 0, {1, 2});
  const auto a = pre(c, 1, {5, 6});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].expert, 5u);
  EXPECT_EQ(a[0].slot, 2u);
  EXPECT_EQ(a[1].slot, 3u);
  EXPECT_FALSE(a[0].hit);
  EXPECT_FALSE(a[0].evicted.has_value());
  const auto b = pre(c, 0, {1, 7});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].expert, 7u);
  ASSERT_TRUE(b[0].evicted.has_value());
  EXPECT_EQ(*b[0].evicted, (ExpertKey{1, 5}));
  EXPECT_EQ(b[0].slot, 2u);
  EXPECT_EQ(c.counters().cache_hits, 0u);
  EXPECT_EQ(c.counters().cache_misses, 2u);
  EXPECT_EQ(c.counters().prefetches, 3u);
  EXPECT_EQ(c.counters().cache_evictions, 1u);
  EXPECT_EQ(c.resident(), 4u);
  EXPECT_THROW(pre(c, 0, {3, 3}), Error);
  EXPECT_THROW(pre(c, 0, {1, 2, 3, 4, 5}), Error);
}

// The prefix a prefetch of at most max_reads reads is given, by hand: 6 slots, L1 {2, 4}
// resident. {2, 3, 4, 5, 6} with 2 reads: 2 (resident), 3 (read 1), 4 (resident), 5 (read 2),
// 6 would be a third -> 4 entries; 0 reads -> 1 (the resident 2 first); more reads than the
// list needs -> all of it; the same ids in another layer are not resident -> 2. A resident
// entry after the last read is kept: {3, 5, 2} -> 3. Never more than the slots: 8 absent ids,
// 10 reads -> 6.
TEST(ExpertCachePrefetch, PrefixCountsOnlyTheExpertsThatNeedARead) {
  ExpertCache c(6, make_hybrid_policy());
  acq(c, 1, {2, 4});
  const std::vector<uint32_t> list = {2, 3, 4, 5, 6};
  EXPECT_EQ(c.prefetch_prefix(1, list, 2), 4u);
  EXPECT_EQ(c.prefetch_prefix(1, list, 0), 1u);
  EXPECT_EQ(c.prefetch_prefix(1, std::vector<uint32_t>{3, 5, 2}, 2), 3u);
  EXPECT_EQ(c.prefetch_prefix(1, list, 9), 5u);
  EXPECT_EQ(c.prefetch_prefix(0, list, 2), 2u);
  const std::vector<uint32_t> eight = {10, 11, 12, 13, 14, 15, 16, 17};
  EXPECT_EQ(c.prefetch_prefix(1, eight, 10), 6u);
}

TEST(ExpertCachePrefetch, AUsedPrefetchIsAMissAndAPrefetchHitOnce) {
  // 3 slots. step0: L0 {1} miss. prefetch L1 {2, 3}. step0 (same step): L1 {2, 4}:
  // 2 prefetched -> no read, counted miss + prefetch hit; 4 absent -> miss, victim among
  // unprotected {1 (uses 1, @0), 3 (uses 0, @1)} -> 3 (fewest uses). Totals: misses 3,
  // hits 0, prefetch hits 1. step1: L1 {2} -> an ordinary hit now (the flag is cleared).
  ExpertCache c(3, make_hybrid_policy());
  acq(c, 0, {1});
  pre(c, 1, {2, 3});
  const auto a = acq(c, 1, {2, 4});
  EXPECT_TRUE(a[0].hit);
  EXPECT_TRUE(a[0].prefetched);
  EXPECT_FALSE(a[1].hit);
  EXPECT_FALSE(a[1].prefetched);
  ASSERT_TRUE(a[1].evicted.has_value());
  EXPECT_EQ(*a[1].evicted, (ExpertKey{1, 3}));
  EXPECT_EQ(c.counters().cache_misses, 3u);
  EXPECT_EQ(c.counters().cache_hits, 0u);
  EXPECT_EQ(c.counters().prefetch_hits, 1u);
  c.end_step();
  const auto b = acq(c, 1, {2});
  EXPECT_TRUE(b[0].hit);
  EXPECT_FALSE(b[0].prefetched);
  EXPECT_EQ(c.counters().cache_hits, 1u);
  EXPECT_EQ(c.counters().prefetch_hits, 1u);
  EXPECT_DOUBLE_EQ(c.counters().hit_rate(), 1.0 / 4.0);
}

TEST(ExpertCachePrefetch, LruTreatsAPrefetchAsRecentAndInvalidateFreesIt) {
  // 2 slots, LRU. step0: L0 {1} @0, {2} @1. prefetch L1 {9}: victim = LRU {1@0, 2@1} -> 1;
  // 9 gets last_access 2 (the clock). Then L0 {3} @2: victim LRU among {2@1, 9@2} -> 2.
  // invalidate(L1 9): its slot is free; L0 {4} takes it with no eviction.
  ExpertCache c(2, make_lru_policy());
  acq(c, 0, {1});
  acq(c, 0, {2});
  EXPECT_EQ(pre(c, 1, {9})[0].evicted->expert, 1u);
  EXPECT_EQ(acq(c, 0, {3})[0].evicted->expert, 2u);
  c.invalidate(ExpertKey{1, 9});
  const auto d = acq(c, 0, {4});
  EXPECT_FALSE(d[0].evicted.has_value());
  EXPECT_EQ(c.counters().cache_evictions, 2u);
  EXPECT_EQ(c.counters().prefetch_hits, 0u);
}

TEST(ExpertCachePrefetch, KeptSlotsAreNotEvicted) {
  // 2 slots, hybrid. L0 {1} -> slot 0 (uses 1); prefetch L1 {2} -> slot 1 (uses 0).
  // L0 {3} with slot 1 kept: hybrid alone would evict 2 (0 uses); kept, the victim is 1.
  // {3, 4} beside one kept slot needs 3 slots of 2: an Error naming the numbers.
  ExpertCache c(2, make_hybrid_policy());
  acq(c, 0, {1});
  ASSERT_EQ(pre(c, 1, {2})[0].slot, 1u);
  const std::vector<uint32_t> three = {3}, keep = {1};
  const auto a = c.acquire(0, three, keep);
  ASSERT_TRUE(a[0].evicted.has_value());
  EXPECT_EQ(*a[0].evicted, (ExpertKey{0, 1}));
  EXPECT_EQ(c.slot_of(ExpertKey{1, 2}), std::optional<uint32_t>(1u));
  const std::vector<uint32_t> two = {3, 4};
  try {
    c.acquire(0, two, keep);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beside 1 kept slots but the cache has 2 slots"), std::string::npos)
        << e.what();
  }
}

// The textbook sequence 1 2 3 4 1 2 5 1 2 3 4 5, one expert per step of one layer (8 experts,
// top-1, 4096-byte experts), as a routing trace at `path`.
void write_classic_trace(const std::string& path) {
  RoutingTraceWriter w(path, TraceHeader{1, 8, 1, 4096, "classic"});
  const uint32_t seq[] = {1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5};
  uint32_t step = 0;
  for (uint32_t e : seq) w.append(step++, 0, {e});
  w.close();
}

TEST(CacheSim, BeladyIsOptimalOnAClassicTrace) {
  // One layer, 3 slots, one expert per step, the textbook sequence
  // 1 2 3 4 1 2 5 1 2 3 4 5: Belady (OPT) has 7 misses; LRU has 10 misses; LFU (ties -> lowest
  // slot) and hybrid are computed below by hand:
  // LFU: 1,2,3 miss; 4 evicts slot0(1) [all 1 use]; 1 evicts slot0(4) [tie at 1 -> slot0];
  //      2 hit (uses 2); 5: uses 1@s0=1, 2@s1=2, 3@s2=1 -> evict slot0 (1); 1: evict slot0(5)
  //      [5 and 3 have 1 use, slot0 lowest]; 2 hit (3 uses); 3 hit; 4: s0(1)=1, s2(3)=2 -> evict
  //      s0 (1); 5: evict s0 (4). Misses: 1,2,3,4,1,5,1,4,5 = 9.
  // Hybrid (uses, then LRU): 1,2,3 miss; 4 evicts 1 (LRU among 1-use); 1 evicts 2; 2 evicts 3;
  //      5 evicts 4; 1 hit; 2 hit; 3 evicts 5 (1 use); 4 evicts 3; 5 evicts 4. Misses 10.
  const auto dir = std::filesystem::temp_directory_path() / ("moepack-trace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "classic.trace").string();
  write_classic_trace(path);
  const RoutingTrace t = read_routing_trace(path);
  ASSERT_EQ(t.records.size(), 12u);
  EXPECT_EQ(t.header.model_name, "classic");
  const auto res = simulate_cache(t, 3, {"belady", "lru", "lfu", "hybrid"});
  EXPECT_EQ(res[0].counters.cache_misses, 7u);
  EXPECT_EQ(res[1].counters.cache_misses, 10u);
  EXPECT_EQ(res[2].counters.cache_misses, 9u);
  EXPECT_EQ(res[3].counters.cache_misses, 10u);
  EXPECT_EQ(res[0].read_bytes, 7u * 4096);
  for (const auto& r : res) EXPECT_EQ(r.counters.cache_hits + r.counters.cache_misses, 12u);
  EXPECT_THROW(simulate_cache(t, 0, {"lru"}), Error);
  std::filesystem::remove_all(dir);
}

TEST(CacheSim, RamTierBehindTheCache) {
  // The classic sequence again, LRU with 3 slots (10 misses, as above) and a victim tier of 2
  // RAM slots (core/victim_tier.h: the upper cache's evictions go down, its misses found there
  // come up and leave the tier; LRU by demotion; a slot being promoted from is not reused by
  // the same acquire). Upper slots s0..s2, RAM slots r0, r1:
  //   1 2 3: misses into s0 s1 s2, nothing evicted.
  //   4: evicts 1 (s0) -> r0.                                  RAM {1@r0}
  //   1: in RAM (hit 1, r0 busy); evicts 2 (s1) -> r1.          RAM {2@r1}
  //   2: in RAM (hit 2); evicts 3 (s2) -> r0 (free again).      RAM {3@r0, 2 gone}
  //   5: not in RAM; evicts 4 (s0) -> r1.                      RAM {3@r0, 4@r1}
  //   1 2: upper hits.
  //   3: in RAM (hit 3, r0 busy); evicts 5 (s0) -> r1, dropping 4.  RAM {5@r1}
  //   4: not in RAM (dropped); evicts 1 (s1) -> r0.             RAM {1@r0, 5@r1}
  //   5: in RAM (hit 4, r1 busy); evicts 2 (s2) -> r0, dropping 1.  RAM {2@r0}
  // Lookups 10, hits 4, demotions 7 (1 2 3 4 5 1 2), drops 2: 6 pack reads instead of 10.
  const auto dir =
      std::filesystem::temp_directory_path() / ("moepack-trace-ram-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "classic.trace").string();
  write_classic_trace(path);
  const RoutingTrace t = read_routing_trace(path);
  const auto res = simulate_cache(t, 3, {"lru"}, 2);
  ASSERT_EQ(res.size(), 1u);
  const CacheSimResult& r = res[0];
  EXPECT_EQ(r.counters.cache_misses, 10u);  // the upper cache is not changed by the tier
  EXPECT_EQ(r.ram_slots, 2u);
  EXPECT_EQ(r.ram.lookups, 10u);
  EXPECT_EQ(r.ram.hits, 4u);
  EXPECT_EQ(r.ram.demotions, 7u);
  EXPECT_EQ(r.ram.drops, 2u);
  EXPECT_EQ(r.ram.refused, 0u);
  EXPECT_EQ(r.read_bytes, 6u * 4096);
  EXPECT_EQ(r.promoted_bytes, 4u * 4096);
  EXPECT_EQ(r.demoted_bytes, 7u * 4096);
  // TinyLFU's admission (window 2 x 10 uses: no halving in 12), worked the same way; uses
  // counted per access, before its evictions are judged; once every RAM slot was taken, a slot a
  // promotion frees takes an eviction used no more often than the next drop as the next drop:
  //   1 2 3, 4 (1 -> r0), 1 (hit 1; 2 -> r1: the tier has now been full), 2 (hit 2; 3 -> r0:
  //   nothing else in the tier to compare with).                        RAM {3@r0}
  //   5: not in RAM; evicts 4 (1 use) against 3 (1 use), the next drop: 4 -> r1, next to drop.
  //   1 2: upper hits.
  //   3: in RAM (hit 3, r0 busy); evicts 5 (1 use): the tier is full and would drop 4 (1 use):
  //      a tie, refused: no copy down.                                  RAM {4@r1}
  //   4: in RAM (hit 4, r1 busy); evicts 1 -> r0.                       RAM {1@r0}
  //   5: not in RAM (refused above): a read; evicts 2 (3 uses) against 1 (3 uses): -> r1 (free
  //      again), next to drop.
  // Lookups 10, hits 4, demotions 6 (1 2 3 4 1 2), 1 not admitted: the same 6 reads.
  const auto freq = simulate_cache(t, 3, {"lru"}, 2, TierAdmission::kFrequency);
  EXPECT_EQ(freq[0].ram.lookups, 10u);
  EXPECT_EQ(freq[0].ram.hits, 4u);
  EXPECT_EQ(freq[0].ram.demotions, 6u);
  EXPECT_EQ(freq[0].ram.not_admitted, 1u);
  EXPECT_EQ(freq[0].ram.drops, 0u);
  EXPECT_EQ(freq[0].read_bytes, 6u * 4096);
  EXPECT_EQ(freq[0].demoted_bytes, 6u * 4096);
  // Without a tier every miss is a read.
  const auto plain = simulate_cache(t, 3, {"lru"});
  EXPECT_EQ(plain[0].read_bytes, 10u * 4096);
  EXPECT_EQ(plain[0].ram.lookups, 0u);
  std::filesystem::remove_all(dir);
}

TEST(RoutingTrace, RejectsCorruptFilesWithOffsets) {
  const auto dir = std::filesystem::temp_directory_path() / ("moepack-trace2-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.trace").string();
  {
    RoutingTraceWriter w(path, TraceHeader{2, 4, 2, 8192, "m"});
    w.append(0, 1, {0, 3});
    EXPECT_THROW(w.append(1, 2, {0}), Error);   // layer out of range
    EXPECT_THROW(w.append(1, 0, {4}), Error);   // expert out of range
    EXPECT_THROW(w.append(1, 0, {1, 1}), Error);  // an expert twice
    w.append(1, 0, {2});
    EXPECT_THROW(w.append(0, 0, {1}), Error);   // step decreases
    // Until closed the records are in PATH.tmp, and PATH is not there: a run killed now (a second
    // Ctrl-C) leaves no cut trace at PATH.
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_TRUE(std::filesystem::exists(path + ".tmp"));
    w.close();
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  }
  {  // a new trace over an old one: the old stays whole until the new one is closed (here by its
     // destructor), then the new one replaces it
    RoutingTraceWriter w(path, TraceHeader{2, 4, 2, 8192, "m"});
    w.append(0, 0, {1});
    EXPECT_EQ(read_routing_trace(path).records.size(), 2u);
  }
  EXPECT_EQ(read_routing_trace(path).records.size(), 1u);
  {
    RoutingTraceWriter w(path, TraceHeader{2, 4, 2, 8192, "m"});
    w.append(0, 1, {0, 3});
    w.append(1, 0, {2});
  }
  // Header: 36 + 1 (name) = 37 bytes; record 1 at 37 (12 bytes), record 2 at 49 (10 bytes).
  EXPECT_EQ(std::filesystem::file_size(path), 59u);
  std::filesystem::resize_file(path, 58);  // cut inside record 2's expert id (bytes 57-58)
  try {
    read_routing_trace(path);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "record experts");
    EXPECT_EQ(e.offset(), 57u);
  }
  // Whole again (the cut byte, the id's high byte, was 0), then bytes patched at a time: record 1's second expert (byte 47) made its
  // first (0): the same expert twice; expert_bytes (bytes 24-31) made 2^63, which no slot has and
  // which would overflow slots × bytes.
  std::filesystem::resize_file(path, 59);
  const auto patched = [&](uint64_t at, const std::vector<uint8_t>& bytes) {
    const std::string copy = (dir / "patched.trace").string();
    std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return copy;
  };
  struct Case {
    uint64_t at;
    std::vector<uint8_t> bytes;
    const char* field;
    uint64_t offset;
    const char* says;
  };
  for (const Case& c : {Case{47, {0, 0}, "record expert", 47, "appears twice"},
                        Case{24, {0, 0, 0, 0, 0, 0, 0, 0x80}, "expert_bytes", 24, "1 GiB"}}) {
    try {
      read_routing_trace(patched(c.at, c.bytes));
      ADD_FAILURE() << c.field << " accepted";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.field(), c.field);
      EXPECT_EQ(e.offset(), c.offset);
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace

// simulate_cache counts the trace's uses (acquires, hits included) for kFrequency and
// passes its window. One upper slot, one RAM slot, layer 0: A A A A B B B B C B.
// Default window (10): B (4 uses) evicted by C ties A (4): refused (C too, by the last B); B is read again.
// Window 5: the 5th use (B's first) halves A to 2; B reaches 3 > 2 and displaces A; B comes up.
TEST(CacheSim, FrequencyAdmissionCountsTheTraceAndTakesItsWindow) {
  RoutingTrace t;
  t.header = TraceHeader{1, 8, 1, 4096, "review"};
  const uint16_t seq[] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 1};
  for (uint32_t i = 0; i < std::size(seq); ++i) t.records.push_back(TraceRecord{i, 0, {seq[i]}});
  const auto def = simulate_cache(t, 1, {"lru"}, 1, TierAdmission::kFrequency);
  EXPECT_EQ(def[0].ram.demotions, 1u);     // A into the free slot
  EXPECT_EQ(def[0].ram.not_admitted, 2u);  // B against A, then C against A
  EXPECT_EQ(def[0].ram.hits, 0u);
  const auto w5 = simulate_cache(t, 1, {"lru"}, 1, TierAdmission::kFrequency, 5);
  EXPECT_EQ(w5[0].ram.demotions, 2u);
  EXPECT_EQ(w5[0].ram.drops, 1u);
  EXPECT_EQ(w5[0].ram.not_admitted, 0u);
  EXPECT_EQ(w5[0].ram.hits, 1u);
  EXPECT_EQ(w5[0].read_bytes, 3u * 4096);  // A, B, C; B's second miss comes up from RAM
}
