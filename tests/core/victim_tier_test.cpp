// The host-RAM victim tier (core/victim_tier.h): plans worked out by hand, and its contract
// with the caller that moves the bytes: done in the documented order (per assignment, the
// demotion of its upper slot, then the fill), every upper slot and every RAM slot holds the
// bytes of the expert the bookkeeping says it holds.
#include "core/victim_tier.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/error.h"
#include "core/expert_cache.h"

using namespace moepack;

namespace {

SlotAssignment miss(uint32_t expert, uint32_t slot, std::optional<ExpertKey> evicted = std::nullopt) {
  SlotAssignment a;
  a.expert = expert;
  a.slot = slot;
  a.evicted = evicted;
  return a;
}

SlotAssignment hit(uint32_t expert, uint32_t slot) {
  SlotAssignment a;
  a.expert = expert;
  a.slot = slot;
  a.hit = true;
  return a;
}

TEST(VictimTier, DemotesPromotesAndDropsTheLeastRecentlyDemoted) {
  VictimTier t(2);
  // Upper misses with nothing evicted: looked up, nothing moves.
  std::vector<SlotAssignment> as = {miss(1, 0), miss(2, 1), hit(9, 2)};
  TierPlan p = t.plan(0, as);
  ASSERT_EQ(p.ram_slot.size(), 3u);
  EXPECT_FALSE(p.ram_slot[0] || p.ram_slot[1] || p.ram_slot[2]);
  EXPECT_TRUE(p.demotions.empty());
  EXPECT_EQ(p.promotions(), 0u);
  EXPECT_EQ(t.counters().lookups, 2u);  // hits are not looked up
  // Two evictions: into the free slots, lowest first, in the assignments' order.
  as = {miss(3, 0, ExpertKey{0, 1}), miss(4, 1, ExpertKey{0, 2})};
  p = t.plan(0, as);
  ASSERT_EQ(p.demotions.size(), 2u);
  EXPECT_EQ(p.demotions[0].key, (ExpertKey{0, 1}));
  EXPECT_EQ(p.demotions[0].upper_slot, 0u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  EXPECT_EQ(p.demotions[1].key, (ExpertKey{0, 2}));
  EXPECT_EQ(p.demotions[1].ram_slot, 1u);
  EXPECT_EQ(p.demotion_of(1), &p.demotions[1]);
  EXPECT_EQ(p.demotion_of(2), nullptr);
  // Full: a third eviction drops (0,1), demoted first.
  p = t.plan(1, std::vector<SlotAssignment>{miss(7, 2, ExpertKey{0, 9})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 1}));
  EXPECT_EQ(t.slot_of(ExpertKey{0, 9}), 0u);
  EXPECT_EQ(t.counters().drops, 1u);
  // (0,2) is missed again: promoted from r1, which leaves the tier; the eviction in the same
  // plan may not use r1 (the copy up reads it after the copy down is queued), so it drops
  // (0,9) from r0 although r1 is about to be free.
  p = t.plan(0, std::vector<SlotAssignment>{miss(2, 1, ExpertKey{1, 7})});
  ASSERT_TRUE(p.ram_slot[0]);
  EXPECT_EQ(*p.ram_slot[0], 1u);
  EXPECT_EQ(p.promotions(), 1u);
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 2}));  // exclusive: it is in the upper cache now
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 9}));
  EXPECT_EQ(t.slot_of(ExpertKey{1, 7}), 0u);
  EXPECT_EQ(t.resident(), 1u);
  // r1 is free for the next plan.
  p = t.plan(0, std::vector<SlotAssignment>{miss(5, 3, ExpertKey{0, 4})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 1u);
  const VictimTierCounters& c = t.counters();
  EXPECT_EQ(c.lookups, 7u);
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.demotions, 5u);
  EXPECT_EQ(c.drops, 2u);
  EXPECT_EQ(c.refused, 0u);
  EXPECT_DOUBLE_EQ(c.hit_rate(), 1.0 / 7.0);
}

TEST(VictimTier, RefusesWhenEverySlotIsBeingPromotedFrom) {
  VictimTier t(1);
  t.plan(0, std::vector<SlotAssignment>{miss(2, 0, ExpertKey{0, 1})});
  ASSERT_EQ(t.slot_of(ExpertKey{0, 1}), 0u);
  // (0,1) comes up from r0; the eviction has nowhere to go.
  const TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(1, 3, ExpertKey{0, 5})});
  EXPECT_EQ(p.ram_slot[0], 0u);
  EXPECT_TRUE(p.demotions.empty());
  EXPECT_EQ(t.counters().refused, 1u);
  EXPECT_EQ(t.resident(), 0u);
  // Next time r0 is free.
  const TierPlan q = t.plan(0, std::vector<SlotAssignment>{miss(6, 3, ExpertKey{0, 1})});
  ASSERT_EQ(q.demotions.size(), 1u);
  EXPECT_EQ(q.demotions[0].ram_slot, 0u);
}

TEST(VictimTier, AnEvictionItAlreadyHoldsIsRefreshedNotCopied) {
  VictimTier t(2);
  t.plan(0, std::vector<SlotAssignment>{miss(8, 0, ExpertKey{0, 1})});
  t.plan(0, std::vector<SlotAssignment>{miss(9, 1, ExpertKey{0, 2})});
  // (0,1) reached the upper cache without a lookup (e.g. an expert read elsewhere) and is
  // evicted again: same bytes, so no copy; it becomes the most recently demoted.
  TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(3, 2, ExpertKey{0, 1})});
  EXPECT_TRUE(p.demotions.empty());
  p = t.plan(0, std::vector<SlotAssignment>{miss(4, 2, ExpertKey{0, 7})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 1u);  // (0,2) dropped, not (0,1)
  EXPECT_EQ(t.slot_of(ExpertKey{0, 1}), 0u);
  EXPECT_EQ(t.counters().demotions, 3u);
}

// The same under either admission with a free slot left (the reviewer's case): a held eviction
// never goes through the admission into a second slot; promoted, it leaves the tier entirely.
TEST(VictimTier, AHeldEvictionIsRefreshedUnderEitherAdmission) {
  for (const TierAdmission adm : {TierAdmission::kAll, TierAdmission::kFrequency}) {
    SCOPED_TRACE(std::string(tier_admission_name(adm)));
    VictimTier t(3, adm, 1000);
    t.plan(0, std::vector<SlotAssignment>{miss(8, 0, ExpertKey{0, 1})});
    t.plan(0, std::vector<SlotAssignment>{miss(9, 1, ExpertKey{0, 2})});
    const TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(3, 2, ExpertKey{0, 1})});
    EXPECT_TRUE(p.demotions.empty());
    EXPECT_EQ(t.resident(), 2u);
    EXPECT_EQ(t.slot_of(ExpertKey{0, 1}), 0u);
    EXPECT_EQ(t.counters().demotions, 2u);
    const TierPlan q = t.plan(0, std::vector<SlotAssignment>{miss(1, 3)});
    EXPECT_EQ(q.ram_slot[0], 0u);
    EXPECT_FALSE(t.slot_of(ExpertKey{0, 1}));
    EXPECT_EQ(t.resident(), 1u);
  }
}

// With kFrequency a refreshed eviction takes its place in line as an eviction into a freed slot
// would (the forty-first session's reviewer's nit: it always went to the back): once the tier
// has been full, first in line when used no more often than the next drop, else the back;
// during the first fill the back. Each placement is checked by a full tier's next drop (an
// eviction used 9 times drops the first in line). 90-92 are upper-cache experts.
TEST(VictimTier, ARefreshedEvictionTakesItsPlaceInLineAsAFreedSlotWould) {
  const auto use = [](VictimTier& t, uint32_t e, int n) {
    for (int i = 0; i < n; ++i) t.plan(0, std::vector<SlotAssignment>{hit(e, 0)});
  };
  const auto evict = [](VictimTier& t, uint32_t e) {  // by an upper miss of 90
    return t.plan(0, std::vector<SlotAssignment>{miss(90, 0, ExpertKey{0, e})});
  };
  // Two slots; once full, a freed slot takes 1 (1 use + `more`) first in line ahead of 2 (3
  // uses), then 1 is refreshed after `more` uses and 4 (9 uses) drops the first in line: the
  // expert dropped (1 or 2).
  const auto dropped_after_refresh = [&](int more) -> uint32_t {
    VictimTier t(2, TierAdmission::kFrequency, 100000);
    use(t, 1, 1);
    use(t, 2, 3);
    use(t, 3, 5);
    evict(t, 2);
    evict(t, 3);                                                                  // the first fill: line 2 3
    EXPECT_TRUE(t.plan(0, std::vector<SlotAssignment>{miss(3, 1)}).ram_slot[0]);  // 3 up: line 2
    evict(t, 1);  // 1 use <= 2's 3: the freed slot, first in line: 1 2
    use(t, 1, more);
    EXPECT_TRUE(evict(t, 1).demotions.empty());  // refreshed, no copy
    use(t, 4, 9);
    EXPECT_EQ(evict(t, 4).demotions.size(), 1u);
    EXPECT_EQ(t.counters().demotions, 4u);
    EXPECT_EQ(t.resident(), 2u);
    EXPECT_TRUE(t.slot_of(ExpertKey{0, 4}));
    return t.slot_of(ExpertKey{0, 1}) ? 2u : 1u;
  };
  EXPECT_EQ(dropped_after_refresh(0), 1u);  // 1 use < 3: still first in line (it went last before)
  EXPECT_EQ(dropped_after_refresh(2), 1u);  // 3 = 3, a tie: first in line, as a freed slot's
  EXPECT_EQ(dropped_after_refresh(5), 2u);  // 6 > 3: to the back
  {
    // The only entry of a full one-slot tier, refreshed: nothing else in line, so it stays,
    // with no copy.
    VictimTier t(1, TierAdmission::kFrequency, 100000);
    use(t, 1, 1);
    evict(t, 1);  // full
    EXPECT_TRUE(evict(t, 1).demotions.empty());
    EXPECT_EQ(t.slot_of(ExpertKey{0, 1}), 0u);
    EXPECT_EQ(t.resident(), 1u);
    EXPECT_EQ(t.counters().demotions, 1u);
    EXPECT_EQ(t.counters().drops, 0u);
  }
  {
    // During the first fill: to the back, whatever its uses.
    VictimTier t(3, TierAdmission::kFrequency, 100000);
    use(t, 1, 1);
    use(t, 2, 3);
    use(t, 3, 5);
    evict(t, 1);
    evict(t, 2);                                 // line 1 2, one slot never used
    EXPECT_TRUE(evict(t, 1).demotions.empty());  // line 2 1
    evict(t, 3);                                 // line 2 1 3: full
    use(t, 4, 9);
    evict(t, 4);
    EXPECT_FALSE(t.slot_of(ExpertKey{0, 2}));  // 2 dropped
    EXPECT_TRUE(t.slot_of(ExpertKey{0, 1}));
  }
}

TEST(VictimTier, InvalidateAndAnEmptyTier) {
  VictimTier t(2);
  t.plan(0, std::vector<SlotAssignment>{miss(8, 0, ExpertKey{0, 1})});
  t.invalidate(ExpertKey{0, 1});
  t.invalidate(ExpertKey{0, 3});  // absent: no-op
  EXPECT_EQ(t.resident(), 0u);
  const TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(1, 0, ExpertKey{0, 8})});
  EXPECT_FALSE(p.ram_slot[0]);  // forgotten: read from the pack
  EXPECT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);  // the invalidated slot is free again

  VictimTier off(0);
  const TierPlan q = off.plan(0, std::vector<SlotAssignment>{miss(1, 0, ExpertKey{0, 8})});
  EXPECT_EQ(q.ram_slot.size(), 1u);
  EXPECT_FALSE(q.ram_slot[0]);
  EXPECT_TRUE(q.demotions.empty());
  EXPECT_EQ(off.counters().lookups, 0u);
}

// The tier drops the expert demoted longest ago, whatever slot it is in, and a demotion takes the
// lowest free slot. Tier of 3: A, B, C go to r0, r1, r2; A and C come up (in that order), so r0
// and r2 are free: D takes r0, the lowest. Full again (B r1, D r0, E r2); F must drop B (demoted
// first), in r1, not D in the lowest slot.
TEST(VictimTier, DropsTheLeastRecentlyDemotedAndFillsTheLowestFreeSlot) {
  VictimTier t(3);
  const auto one = [](uint32_t expert, uint32_t slot, std::optional<ExpertKey> evicted) {
    return std::vector<SlotAssignment>{miss(expert, slot, evicted)};
  };
  t.plan(0, one(10, 0, ExpertKey{0, 1}));  // A = (0,1) -> r0
  t.plan(0, one(11, 1, ExpertKey{0, 2}));  // B = (0,2) -> r1
  t.plan(0, one(12, 2, ExpertKey{0, 3}));  // C = (0,3) -> r2
  const TierPlan up = t.plan(0, std::vector<SlotAssignment>{miss(1, 4), miss(3, 5)});
  EXPECT_EQ(up.promotions(), 2u);
  EXPECT_EQ(up.ram_slot[0], 0u);
  EXPECT_EQ(up.ram_slot[1], 2u);
  TierPlan p = t.plan(0, one(13, 0, ExpertKey{0, 4}));  // D
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  p = t.plan(0, one(14, 1, ExpertKey{0, 5}));  // E -> r2, the only free one
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 2u);
  p = t.plan(0, one(15, 2, ExpertKey{0, 6}));  // F: full, drops B
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 1u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 2}));
  EXPECT_EQ(t.slot_of(ExpertKey{0, 4}), 0u);
  EXPECT_EQ(t.counters().drops, 1u);
}

// ram_tier_slots: floor(min(requested, available - 2 GiB) / slot), at most max_slots; 0 when
// nothing is left or the slot size is 0.
TEST(VictimTier, SlotsForARequest) {
  constexpr uint64_t GiB = 1ull << 30;
  EXPECT_EQ(ram_tier_slots(10 * GiB, 8 * GiB, GiB, 100), 6u);            // min(10, 8 - 2) = 6
  EXPECT_EQ(ram_tier_slots(3 * GiB, 100 * GiB, GiB, 100), 3u);           // the request
  EXPECT_EQ(ram_tier_slots(10 * GiB, 3 * GiB + GiB / 2, GiB, 100), 1u);  // 1.5 GiB left: 1 slot
  EXPECT_EQ(ram_tier_slots(10 * GiB, 2 * GiB, GiB, 100), 0u);            // nothing beside the 2 GiB
  EXPECT_EQ(ram_tier_slots(10 * GiB, GiB, GiB, 100), 0u);                // less than the 2 GiB
  EXPECT_EQ(ram_tier_slots(100 * GiB, 1000 * GiB, GiB, 4), 4u);          // the pack's experts
  EXPECT_EQ(ram_tier_slots(10 * GiB, 100 * GiB, 0, 100), 0u);
  EXPECT_EQ(ram_tier_slots(0, 100 * GiB, GiB, 100), 0u);
  // The machine's MemAvailable (/proc/meminfo, kB): some, and less than MemTotal.
  const uint64_t avail = available_ram_bytes();
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0, total = 0;
  while (f >> key >> kib >> unit) {
    if (key == "MemTotal:") total = kib * 1024;
  }
  ASSERT_GT(total, 0u);
  EXPECT_GT(avail, 0u);
  EXPECT_LE(avail, total);
  EXPECT_GT(avail, total / 1000);  // bytes, not KiB
}

// A container's memory limit (the control group's files, written by hand in a temp directory):
// v2's memory.max - memory.current, v1's limit - usage, 0 past the limit, ~0 when unlimited or
// unknown.
TEST(VictimTier, MemoryLeftInAControlGroup) {
  const std::string dir = ::testing::TempDir() + "moepack-cgroup-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const char* text) { std::ofstream(dir + "/" + name) << text; };
  EXPECT_EQ(cgroup_memory_left(dir), ~0ull);  // no files
  write("memory.max", "max\n");
  write("memory.current", "536870912\n");
  EXPECT_EQ(cgroup_memory_left(dir), ~0ull);  // no limit
  write("memory.max", "1073741824\n");
  EXPECT_EQ(cgroup_memory_left(dir), 536870912u);
  write("memory.current", "2147483648\n");
  EXPECT_EQ(cgroup_memory_left(dir), 0u);  // past the limit
  std::filesystem::remove(dir + "/memory.max");
  std::filesystem::remove(dir + "/memory.current");
  write("memory.limit_in_bytes", "8589934592\n");  // v1
  write("memory.usage_in_bytes", "1073741824\n");
  EXPECT_EQ(cgroup_memory_left(dir), 7516192768u);
  // v1's hierarchical inactive page cache is reclaimable: 8 - (1 - 0.25) GiB left.
  write("memory.stat", "cache 536870912\ninactive_file 1\ntotal_inactive_file 268435456\n");
  EXPECT_EQ(cgroup_memory_left(dir), 7784628224u);
  EXPECT_EQ(cgroup_memory_left(dir + "/missing"), ~0ull);
  std::filesystem::remove_all(dir);
}

// A container that read 12 GiB of files (a GGUF converted to a pack) under a 16 GiB limit: v2's
// memory.current counts that page cache, whose inactive part the kernel reclaims before the
// limit bites (the reviewer's case; MemAvailable counts it as available too).
TEST(VictimTier, InactivePageCacheCountsAsLeft) {
  constexpr uint64_t GiB = 1ull << 30;
  const std::string dir = ::testing::TempDir() + "moepack-cgroup-cache-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  };
  write("memory.max", std::to_string(16 * GiB) + "\n");
  write("memory.current", std::to_string(16 * GiB) + "\n");
  EXPECT_EQ(cgroup_memory_left(dir), 0u);  // no memory.stat: nothing reclaimable
  write("memory.stat", "anon " + std::to_string(4 * GiB) + "\nfile " + std::to_string(12 * GiB) +
                           "\nactive_file " + std::to_string(GiB) + "\ninactive_file " +
                           std::to_string(11 * GiB) + "\n");
  EXPECT_EQ(cgroup_memory_left(dir), 11 * GiB);                              // 16 - (16 - 11)
  write("memory.stat", "inactive_file " + std::to_string(20 * GiB) + "\n");  // more than the usage
  EXPECT_EQ(cgroup_memory_left(dir), 16 * GiB);
  std::filesystem::remove_all(dir);
}

// /proc/self/cgroup's lines walked under a root written by hand: v2's "0::/path" and each
// parent up to the root; v1's memory controller alone or co-mounted, under root/memory; other
// controllers skipped; the least of what every level leaves.
TEST(VictimTier, ControlGroupsOfAProcessAndTheirParents) {
  constexpr uint64_t MiB = 1ull << 20;
  const std::string root = ::testing::TempDir() + "moepack-cgroot-" + std::to_string(::getpid());
  std::filesystem::remove_all(root);
  const auto limit = [&](const std::string& dir, const char* max, const char* cur, uint64_t max_mib,
                         uint64_t used_mib) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/" + max) << max_mib * MiB << "\n";
    std::ofstream(dir + "/" + cur) << used_mib * MiB << "\n";
  };
  // v2: /a/b leaves 900 MiB, its parent /a 300 MiB, the root no limit.
  limit(root + "/a/b", "memory.max", "memory.current", 1000, 100);
  limit(root + "/a", "memory.max", "memory.current", 400, 100);
  EXPECT_EQ(cgroup_memory_left_of("0::/a/b\n", root), 300 * MiB);
  EXPECT_EQ(cgroup_memory_left_of("0::/a/b", root), 300 * MiB);  // no newline at the end
  EXPECT_EQ(cgroup_memory_left_of("0::/\n", root), ~0ull);       // the root: no files, no limit
  EXPECT_EQ(cgroup_memory_left_of("", root), ~0ull);
  EXPECT_EQ(cgroup_memory_left_of("garbage\n0:x\n", root), ~0ull);
  // v1: the memory controller co-mounted with cpu, under root/memory; cpuset lines skipped.
  limit(root + "/memory/docker/c1", "memory.limit_in_bytes", "memory.usage_in_bytes", 2048, 48);
  const std::string v1 = "12:cpuset:/a/b\n4:cpu,memory:/docker/c1\n1:name=systemd:/docker/c1\n";
  EXPECT_EQ(cgroup_memory_left_of(v1, root), 2000 * MiB);
  EXPECT_EQ(cgroup_memory_left_of("4:memory:/docker/c1\n", root), 2000 * MiB);
  EXPECT_EQ(cgroup_memory_left_of("4:memory,cpu:/docker/c1\n", root), 2000 * MiB);
  EXPECT_EQ(cgroup_memory_left_of("4:memoryx:/docker/c1\n", root), ~0ull);  // not the controller
  // Hybrid (both kinds of line): the least of the two.
  EXPECT_EQ(cgroup_memory_left_of("0::/a/b\n4:memory:/docker/c1\n", root), 300 * MiB);
  std::filesystem::remove_all(root);
}

// TinyLFU's admission (TierAdmission::kFrequency), worked by hand. Two RAM slots, layer 0; the
// uses counted per plan of an acquire (hits and misses), before its evictions are judged.
TEST(VictimTier, FrequencyAdmissionKeepsOnlyExpertsUsedMoreThanTheOneTheyDisplace) {
  VictimTier t(2, TierAdmission::kFrequency, 100);
  EXPECT_EQ(t.admission(), TierAdmission::kFrequency);
  const auto plan = [&](std::vector<SlotAssignment> as, bool accesses = true) {
    return t.plan(0, as, accesses);
  };
  plan({miss(1, 0), miss(2, 1), miss(3, 2)});  // uses 1 2 3: 1 each
  plan({hit(1, 0), hit(2, 1)});                // uses 1 2: 2 each
  EXPECT_EQ(t.uses(ExpertKey{0, 1}), 2u);
  EXPECT_EQ(t.uses(ExpertKey{0, 3}), 1u);
  // Free slots admit whatever is evicted: 1 -> r0, 2 -> r1.
  TierPlan p = plan({miss(4, 0, ExpertKey{0, 1}), miss(5, 1, ExpertKey{0, 2})});
  ASSERT_EQ(p.demotions.size(), 2u);
  // Full: 3 (1 use) would displace 1 (the least recently demoted, 2 uses): refused, no copy.
  p = plan({miss(6, 2, ExpertKey{0, 3})});
  EXPECT_TRUE(p.demotions.empty());
  EXPECT_EQ(t.counters().not_admitted, 1u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 3}));
  // 3 read again (2 uses), evicting 6 (1 use against 1's 2): refused too. 3 is used once more
  // (3 uses) ...
  p = plan({miss(3, 2, ExpertKey{0, 6})});
  EXPECT_FALSE(p.ram_slot[0]);  // 3 was never copied down: read from the pack
  EXPECT_TRUE(p.demotions.empty());
  plan({hit(3, 2)});
  EXPECT_EQ(t.uses(ExpertKey{0, 3}), 3u);
  // ... and now displaces 1 (2 uses) from r0.
  p = plan({miss(7, 2, ExpertKey{0, 3})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  EXPECT_EQ(t.slot_of(ExpertKey{0, 3}), 0u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 1}));
  EXPECT_EQ(t.counters().drops, 1u);
  // A prefetch's placements are not uses: 1 stays at 2, and 5 (1 use) against 2 (2 uses) is refused.
  p = plan({miss(1, 1, ExpertKey{0, 5})}, false);
  EXPECT_TRUE(p.demotions.empty());
  EXPECT_EQ(t.uses(ExpertKey{0, 1}), 2u);
  EXPECT_EQ(t.counters().not_admitted, 3u);
  EXPECT_EQ(t.counters().demotions, 3u);
  // With kAll the same plan is admitted (the plain victim cache).
  VictimTier all(1);
  EXPECT_EQ(all.admission(), TierAdmission::kAll);
  all.plan(0, std::vector<SlotAssignment>{miss(1, 0, ExpertKey{0, 9})});
  EXPECT_EQ(all.plan(0, std::vector<SlotAssignment>{miss(2, 0, ExpertKey{0, 8})}).demotions.size(), 1u);
  EXPECT_EQ(all.uses(ExpertKey{0, 1}), 0u);  // kAll counts nothing
}

// TinyLFU's aging: once `window` uses were counted, every count is halved (rounding down).
TEST(VictimTier, FrequencyCountsAreHalvedEveryWindow) {
  VictimTier t(1, TierAdmission::kFrequency, 4);
  t.plan(0, std::vector<SlotAssignment>{hit(1, 0), hit(2, 1)});
  t.plan(0, std::vector<SlotAssignment>{hit(1, 0)});
  EXPECT_EQ(t.uses(ExpertKey{0, 1}), 2u);
  t.plan(0, std::vector<SlotAssignment>{hit(3, 2)});  // the 4th use: 1 -> 1, 2 -> 0, 3 -> 0
  EXPECT_EQ(t.uses(ExpertKey{0, 1}), 1u);
  EXPECT_EQ(t.uses(ExpertKey{0, 2}), 0u);
  EXPECT_EQ(t.uses(ExpertKey{0, 3}), 0u);
  t.plan(1, std::vector<SlotAssignment>{hit(1, 0)});  // layers are counted apart
  EXPECT_EQ(t.uses(ExpertKey{1, 1}), 1u);
  EXPECT_EQ(t.uses(ExpertKey{0, 1}), 1u);
  // The default window: 10 uses a slot.
  VictimTier d(3, TierAdmission::kFrequency);
  for (int i = 0; i < 29; ++i) d.plan(0, std::vector<SlotAssignment>{hit(1, 0)});
  EXPECT_EQ(d.uses(ExpertKey{0, 1}), 29u);
  d.plan(0, std::vector<SlotAssignment>{hit(1, 0)});
  EXPECT_EQ(d.uses(ExpertKey{0, 1}), 15u);
}

TEST(VictimTier, AdmissionNamesAndAutomaticSize) {
  EXPECT_EQ(parse_tier_admission("all", "x"), TierAdmission::kAll);
  EXPECT_EQ(parse_tier_admission("frequency", "x"), TierAdmission::kFrequency);
  EXPECT_EQ(tier_admission_name(TierAdmission::kAll), "all");
  EXPECT_EQ(tier_admission_name(TierAdmission::kFrequency), "frequency");
  try {
    parse_tier_admission("lfu", "setting cache_ram_admission");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("setting cache_ram_admission: unknown RAM tier admission \"lfu\""),
              std::string::npos)
        << e.what();
  }
  constexpr uint64_t GiB = 1ull << 30;
  EXPECT_EQ(auto_ram_tier_bytes(26 * GiB), 13 * GiB);  // the product's 32 GB machine, desktop running
  EXPECT_EQ(auto_ram_tier_bytes(3), 1u);
  EXPECT_EQ(auto_ram_tier_bytes(~0ull), 0u);  // unknown: off
  // 13 GiB of 13.4 MB experts (DeepSeek-V4-Flash): min(13, 26 - 2) GiB / slot.
  EXPECT_EQ(ram_tier_slots(auto_ram_tier_bytes(26 * GiB), 26 * GiB, 13'369'344, 11008), 1044u);
  // What auto may take before slots: half, but never into the 2 GiB kept free.
  EXPECT_EQ(auto_ram_tier_usable_bytes(26 * GiB), 13 * GiB);
  EXPECT_EQ(auto_ram_tier_usable_bytes(3 * GiB), GiB);  // min(1.5, 3 - 2)
  EXPECT_EQ(auto_ram_tier_usable_bytes(4 * GiB), 2 * GiB);
  EXPECT_EQ(auto_ram_tier_usable_bytes(GiB), 0u);
  EXPECT_EQ(auto_ram_tier_usable_bytes(~0ull), 0u);
  EXPECT_EQ(ram_tier_slots(auto_ram_tier_bytes(3 * GiB), 3 * GiB, GiB / 4, 100),
            auto_ram_tier_usable_bytes(3 * GiB) / (GiB / 4));
}

// Bytes of (layer, expert) in a slot of `n` bytes: a pattern no other expert has.
void fill_expert(uint8_t* dst, size_t n, ExpertKey k) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = static_cast<uint8_t>((k.layer * 131 + k.expert * 7 + i * 13) ^ (i >> 8));
}

bool holds(const uint8_t* src, size_t n, ExpertKey k) {
  std::vector<uint8_t> want(n);
  fill_expert(want.data(), n, k);
  return std::memcmp(src, want.data(), n) == 0;
}

// The caller's side, as gpu/vram_expert_pool.cpp does it on its copy stream (here memcpy on
// host arrays): per assignment in order, the demotion of its slot, then its fill from the RAM
// slot or "the pack". Random routing with prefetches, small caches so everything is evicted
// and promoted often; after every plan each upper slot handed out and each RAM slot holds its
// expert's bytes.
TEST(VictimTier, BytesMovedInTheDocumentedOrderAreAlwaysRight) {
  for (const auto& [policy, admission] : {std::pair{"lru", TierAdmission::kAll},
                                          {"hybrid", TierAdmission::kAll},
                                          {"lfu", TierAdmission::kAll},
                                          {"lru", TierAdmission::kFrequency},
                                          {"hybrid", TierAdmission::kFrequency}}) {
    SCOPED_TRACE(std::string(policy) + " " + std::string(tier_admission_name(admission)));
    constexpr size_t kBytes = 512;
    constexpr uint32_t kLayers = 3, kExperts = 12, kTopK = 3, kUpper = 7, kRam = 5;
    ExpertCache cache(kUpper, make_policy(policy));
    VictimTier tier(kRam, admission);
    std::vector<uint8_t> upper(kUpper * kBytes), ram(kRam * kBytes);
    std::mt19937 rng(7);
    uint64_t promotions = 0, demotions = 0, lookups = 0;
    const auto run = [&](uint32_t layer, const std::vector<SlotAssignment>& as, bool uses = true) {
      const TierPlan p = tier.plan(layer, as, uses);
      for (size_t i = 0; i < as.size(); ++i) {
        const SlotAssignment& a = as[i];
        if (const TierPlan::Demotion* d = p.demotion_of(a.slot)) {
          ASSERT_TRUE(holds(&upper[a.slot * kBytes], kBytes, d->key))
              << "demoting what the slot does not hold";
          std::memcpy(&ram[d->ram_slot * kBytes], &upper[a.slot * kBytes], kBytes);
          ++demotions;
        }
        if (a.hit) continue;
        ++lookups;
        if (p.ram_slot[i]) {
          std::memcpy(&upper[a.slot * kBytes], &ram[*p.ram_slot[i] * kBytes], kBytes);
          ++promotions;
        } else {
          fill_expert(&upper[a.slot * kBytes], kBytes, ExpertKey{layer, a.expert});
        }
      }
      for (const SlotAssignment& a : as) {
        ASSERT_TRUE(holds(&upper[a.slot * kBytes], kBytes, ExpertKey{layer, a.expert}));
      }
      for (uint32_t l = 0; l < kLayers; ++l) {
        for (uint32_t e = 0; e < kExperts; ++e) {
          const ExpertKey k{l, e};
          if (const auto s = tier.slot_of(k)) {
            ASSERT_TRUE(holds(&ram[*s * kBytes], kBytes, k));
            ASSERT_FALSE(cache.slot_of(k)) << "in both tiers";
          }
        }
      }
    };
    for (int step = 0; step < 400; ++step) {
      for (uint32_t l = 0; l < kLayers; ++l) {
        std::vector<uint32_t> ids(kExperts);
        for (uint32_t e = 0; e < kExperts; ++e) ids[e] = e;
        std::shuffle(ids.begin(), ids.end(), rng);
        ids.resize(kTopK);
        run(l, cache.acquire(l, ids));
        if (step % 3 == 0) {  // a prediction for the next layer, placed ahead
          std::vector<uint32_t> pred(kExperts);
          for (uint32_t e = 0; e < kExperts; ++e) pred[e] = e;
          std::shuffle(pred.begin(), pred.end(), rng);
          pred.resize(2);
          const std::vector<uint32_t> keep;
          run((l + 1) % kLayers, cache.prefetch((l + 1) % kLayers, pred, keep), false);
        }
        if (HasFatalFailure()) return;
      }
      cache.end_step();
    }
    EXPECT_GT(promotions, admission == TierAdmission::kAll ? 100u : 50u);
    EXPECT_GT(demotions, admission == TierAdmission::kAll ? 300u : 100u);
    if (admission == TierAdmission::kFrequency) {
      EXPECT_GT(tier.counters().not_admitted, 0u);
    }
    EXPECT_EQ(promotions, tier.counters().hits);
    EXPECT_EQ(demotions, tier.counters().demotions);
    EXPECT_EQ(lookups, tier.counters().lookups);  // every upper miss, acquired or placed ahead
  }
}

}  // namespace

// the uses of an acquire are counted, and a window that ends inside it halved, before
// its evictions are judged. Window 7, one... two RAM slots. Uses: 1:2, 2:3 before the last plan;
// 1 goes to a free slot; the last plan's own use is the 7th: every count halves (1:1, 2:1)
// before 2 is judged against 1: a tie, refused. Judged first (3 > 2) it would be admitted.
TEST(VictimTier, AWindowEndingInAnAcquireHalvesBeforeItsEvictionsAreJudged) {
  VictimTier t(1, TierAdmission::kFrequency, 7);
  t.plan(0, std::vector<SlotAssignment>{miss(1, 0), miss(2, 1)});                    // 1:1 2:1 (2 counted)
  t.plan(0, std::vector<SlotAssignment>{hit(1, 0), hit(2, 1)});                      // 1:2 2:2 (4)
  t.plan(0, std::vector<SlotAssignment>{hit(2, 1)});                                 // 2:3 (5)
  TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(3, 0, ExpertKey{0, 1})});  // (6) 1 -> r0
  ASSERT_EQ(p.demotions.size(), 1u);
  p = t.plan(0, std::vector<SlotAssignment>{miss(4, 1, ExpertKey{0, 2})});  // the 7th: halve, then judge
  EXPECT_TRUE(p.demotions.empty());
  EXPECT_EQ(t.counters().not_admitted, 1u);
  EXPECT_EQ(t.slot_of(ExpertKey{0, 1}), 0u);
}

// Once the tier was full, a slot a promotion leaves free takes an eviction used no more often
// than the expert the tier would drop next as the next to drop itself (it keeps the slot until a
// more used eviction needs one, and that expert is not pushed out first); during the first fill
// every eviction enters as the most recently demoted.
TEST(VictimTier, AFreedSlotTakesALessUsedEvictionAsTheNextToDrop) {
  VictimTier t(2, TierAdmission::kFrequency, 1000);
  t.plan(0, std::vector<SlotAssignment>{miss(1, 0), miss(2, 1), miss(3, 2)});  // uses 1 each
  t.plan(0, std::vector<SlotAssignment>{hit(1, 0), hit(2, 1), hit(3, 2)});     // 2 each
  // The first fill: 1 -> r0.
  TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(4, 0, ExpertKey{0, 1})});  // 4: 1 use
  ASSERT_EQ(p.demotions.size(), 1u);
  // 1 comes up from r0 (3 uses now), evicting 2 (2 uses) -> r1, the last free slot of the
  // first fill; the tier has now been full (r0 is busy being promoted from).
  p = t.plan(0, std::vector<SlotAssignment>{miss(1, 1, ExpertKey{0, 2})});
  EXPECT_EQ(p.ram_slot[0], 0u);
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 1u);
  // r0 is free again. 4 (1 use) is evicted; the next drop would be 2 (2 uses): 4 takes r0 as
  // the next to drop, ahead of 2.
  p = t.plan(0, std::vector<SlotAssignment>{miss(5, 0, ExpertKey{0, 4})});  // 5: 1 use
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  EXPECT_EQ(t.resident(), 2u);
  // 3 (3 uses) displaces 4 (1 use), the next drop, not 2 (which a most-recent 4 would have
  // left first in line).
  t.plan(0, std::vector<SlotAssignment>{hit(3, 2)});
  p = t.plan(0, std::vector<SlotAssignment>{miss(6, 2, ExpertKey{0, 3})});  // 6: 1 use
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  EXPECT_EQ(t.slot_of(ExpertKey{0, 3}), 0u);
  EXPECT_EQ(t.slot_of(ExpertKey{0, 2}), 1u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 4}));
  EXPECT_EQ(t.counters().drops, 1u);
  // Full again: 6 (1 use) against 2 (2 uses): refused.
  p = t.plan(0, std::vector<SlotAssignment>{miss(7, 2, ExpertKey{0, 6})});
  EXPECT_TRUE(p.demotions.empty());
  EXPECT_EQ(t.counters().not_admitted, 1u);
  EXPECT_EQ(t.counters().demotions, 4u);
  // The first fill puts every eviction last in line: 8 (2 uses) -> r0, then 9 (1 use) -> r1
  // after it, so the next drop is still 8, and 10 (2 uses) ties with it: refused.
  VictimTier first(2, TierAdmission::kFrequency, 1000);
  first.plan(0, std::vector<SlotAssignment>{hit(8, 0), hit(9, 1), hit(10, 2)});
  first.plan(0, std::vector<SlotAssignment>{hit(8, 0), hit(10, 2)});
  EXPECT_EQ(first.plan(0, std::vector<SlotAssignment>{miss(1, 0, ExpertKey{0, 8})}).demotions.size(), 1u);
  EXPECT_EQ(first.plan(0, std::vector<SlotAssignment>{miss(2, 1, ExpertKey{0, 9})}).demotions.size(), 1u);
  EXPECT_TRUE(first.plan(0, std::vector<SlotAssignment>{miss(3, 2, ExpertKey{0, 10})}).demotions.empty());
  EXPECT_EQ(first.counters().not_admitted, 1u);
  EXPECT_EQ(first.slot_of(ExpertKey{0, 9}), 1u);
  // With kAll a freed slot's eviction is the most recently demoted as ever.
  VictimTier all(2);
  all.plan(0, std::vector<SlotAssignment>{miss(4, 0, ExpertKey{0, 1})});
  all.plan(0, std::vector<SlotAssignment>{miss(1, 1, ExpertKey{0, 2})});
  all.plan(0, std::vector<SlotAssignment>{miss(5, 0, ExpertKey{0, 4})});  // 4 -> r0, after 2
  p = all.plan(0, std::vector<SlotAssignment>{miss(6, 2, ExpertKey{0, 3})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 1u);  // 2 dropped
  EXPECT_EQ(all.slot_of(ExpertKey{0, 4}), 0u);
}

// The freed-slot rule's edges, on 3 RAM slots, each placement checked by the next drop of a
// full tier (an eviction used 9 times drops the first in line). Uses are counted per plan as
// ever; 90-92 are upper-cache experts whose own uses do not matter here.
TEST(VictimTier, FreedSlotEdges) {
  VictimTier t(3, TierAdmission::kFrequency, 100000);
  const auto use = [&](uint32_t e, int n) {
    for (int i = 0; i < n; ++i) t.plan(0, std::vector<SlotAssignment>{hit(e, 0)});
  };
  const auto evict = [&](uint32_t e) {  // one eviction of e, by an upper miss of 90
    return t.plan(0, std::vector<SlotAssignment>{miss(90, 0, ExpertKey{0, e})});
  };
  const auto promote = [&](uint32_t e) {  // e comes up (one more use), nothing evicted
    EXPECT_TRUE(t.plan(0, std::vector<SlotAssignment>{miss(e, 1)}).ram_slot[0]) << e;
  };
  const auto held = [&](uint32_t e) { return t.slot_of(ExpertKey{0, e}).has_value(); };
  use(10, 5);  // a
  use(11, 1);  // b
  use(12, 3);  // c
  evict(10);
  evict(11);
  evict(12);    // the first fill: line a b c
  promote(11);  // a c, one slot free
  // More uses than the first in line (f 6 > a 5): to the back, as ever.
  use(13, 6);
  evict(13);  // a c f
  use(18, 9);
  evict(18);  // drops a: c f 18
  EXPECT_FALSE(held(10));
  EXPECT_TRUE(held(13));
  promote(13);  // c 18
  // A tie with the first in line (g 3 = c 3): first in line.
  use(14, 3);
  evict(14);  // g c 18
  use(19, 9);
  evict(19);  // drops g: c 18 19
  EXPECT_FALSE(held(14));
  EXPECT_TRUE(held(12));
  promote(18);  // c 19
  // Compared with the first in line (c 3), not the last (19: 9 uses): h (5) goes to the back.
  use(15, 5);
  evict(15);  // c 19 h
  use(20, 9);
  evict(20);  // drops c: 19 h 20
  EXPECT_FALSE(held(12));
  EXPECT_TRUE(held(15));
  promote(19);  // h 20
  // Two placed first in line (16, then 17, no uses): the later one is the next drop.
  evict(16);    // 16 h 20
  promote(20);  // 16 h
  evict(17);    // 17 16 h
  use(21, 9);
  evict(21);  // drops 17: 16 h 21
  EXPECT_FALSE(held(17));
  EXPECT_TRUE(held(16));
  EXPECT_EQ(t.counters().drops, 4u);  // a g c 17
  promote(21);                        // 16 h
  // One plan: 22 (no use) takes the free slot first in line, then 23 (9 uses) drops 22 again
  // from that slot: only 23's copy down is queued, and 22 counts as neither demoted nor dropped.
  use(23, 9);
  const TierPlan p =
      t.plan(0, std::vector<SlotAssignment>{miss(91, 1, ExpertKey{0, 22}), miss(92, 2, ExpertKey{0, 23})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].key.expert, 23u);
  EXPECT_EQ(p.demotions[0].upper_slot, 2u);
  EXPECT_FALSE(p.demotion_of(1));
  EXPECT_FALSE(held(22));
  EXPECT_EQ(t.counters().drops, 4u);
  EXPECT_EQ(t.counters().demotions, 13u);  // a b c f 18 g 19 h 20 16 17 21 23
  EXPECT_EQ(t.counters().not_admitted, 0u);
}

// The same with kAll: a plan with more evictions than the tier has slots queues one copy down
// per slot, the last one's.
TEST(VictimTier, APlanNeverQueuesTwoCopiesIntoOneSlot) {
  VictimTier t(2);
  const TierPlan p =
      t.plan(0, std::vector<SlotAssignment>{miss(1, 0, ExpertKey{0, 7}), miss(2, 1, ExpertKey{0, 8}),
                                            miss(3, 2, ExpertKey{0, 9})});
  ASSERT_EQ(p.demotions.size(), 2u);
  EXPECT_EQ(p.demotions[0].key.expert, 8u);
  EXPECT_EQ(p.demotions[0].ram_slot, 1u);
  EXPECT_EQ(p.demotions[1].key.expert, 9u);
  EXPECT_EQ(p.demotions[1].ram_slot, 0u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 7}));
  EXPECT_EQ(t.counters().demotions, 2u);
  EXPECT_EQ(t.counters().drops, 0u);
}

// A full one-slot tier whose only expert is being promoted: the eviction beside it is refused;
// the next eviction finds a free slot and nothing in line to compare with, and enters.
TEST(VictimTier, AFreedSlotWithNothingInLineTakesTheEviction) {
  VictimTier t(1, TierAdmission::kFrequency, 1000);
  t.plan(0, std::vector<SlotAssignment>{hit(5, 0), hit(5, 0)});
  EXPECT_EQ(t.plan(0, std::vector<SlotAssignment>{miss(1, 0, ExpertKey{0, 5})}).demotions.size(), 1u);
  TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(5, 0, ExpertKey{0, 1})});
  EXPECT_EQ(p.ram_slot[0], 0u);
  EXPECT_TRUE(p.demotions.empty());
  EXPECT_EQ(t.counters().refused, 1u);
  p = t.plan(0, std::vector<SlotAssignment>{miss(2, 0, ExpertKey{0, 5})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(t.slot_of(ExpertKey{0, 5}), 0u);
}

// The candidate is compared with the least recently demoted entry (the one it would
// displace), not any other. RAM {1 (1 use, demoted first), 2 (3 uses)}; 3 (2 uses) displaces 1.
TEST(VictimTier, AdmissionComparesWithTheLeastRecentlyDemoted) {
  VictimTier t(2, TierAdmission::kFrequency, 1000);
  t.plan(0, std::vector<SlotAssignment>{miss(1, 0), miss(2, 1), miss(3, 2)});
  t.plan(0, std::vector<SlotAssignment>{hit(2, 1), hit(3, 2)});
  t.plan(0, std::vector<SlotAssignment>{hit(2, 1)});                    // 1:1 2:3 3:2
  t.plan(0, std::vector<SlotAssignment>{miss(4, 0, ExpertKey{0, 1})});  // 1 -> r0
  t.plan(0, std::vector<SlotAssignment>{miss(5, 1, ExpertKey{0, 2})});  // 2 -> r1
  const TierPlan p = t.plan(0, std::vector<SlotAssignment>{miss(6, 2, ExpertKey{0, 3})});
  ASSERT_EQ(p.demotions.size(), 1u);
  EXPECT_EQ(p.demotions[0].ram_slot, 0u);
  EXPECT_FALSE(t.slot_of(ExpertKey{0, 1}));
  EXPECT_EQ(t.slot_of(ExpertKey{0, 2}), 1u);
  EXPECT_EQ(t.counters().not_admitted, 0u);
}
