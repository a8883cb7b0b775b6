// VictimTier: the bounded host-RAM tier behind the VRAM expert cache (ARCHITECTURE.md, "keep a
// bounded host-RAM tier"). It is a victim cache (N. P. Jouppi, "Improving direct-mapped cache
// performance by the addition of a small fully-associative cache and prefetch buffers", ISCA
// 1990), exclusive of the tier above it:
//   - an expert the upper cache evicts is copied down into this tier (a demotion; the bytes the
//     upper slot holds, in whatever layout it holds them);
//   - an upper-cache miss found here is copied up from this tier instead of being read from the
//     SSD, and leaves this tier (a promotion);
// so the two tiers hold different experts and their capacities add. Within this tier the least
// recently demoted expert is dropped first (LRU; a drop writes nothing back: the pack is
// read-only), except that kFrequency places some evictions first in line (below).
//
// This class is the bookkeeping only; the caller moves the bytes. For one upper-tier acquire()
// or prefetch(), plan() says what to move, and the caller must do it in this order, per
// assignment, in the assignments' order (on one ordered queue, e.g. one CUDA stream):
//   1. every demotion of that upper slot: copy upper slot -> RAM slot;
//   2. then fill the upper slot: from `ram_slot[i]` when set, else from the pack.
// A RAM slot a promotion reads is never the destination of a demotion of the same plan, so the
// order above never overwrites bytes before they are copied up. A RAM slot freed by a
// promotion may be the destination of a demotion in a later plan: the caller's queue orders
// that copy after the promotion's.
//
// Admission (TierAdmission). With kAll every eviction is copied down. With kFrequency an
// eviction enters a full tier only when the expert was used more often than the expert the tier
// would drop next (the first in line: the least recently demoted): TinyLFU's admission rule
// (G. Einziger, R. Friedman, B. Manes, "TinyLFU: A Highly Efficient Cache Admission Policy",
// ACM Transactions on Storage 13(4), 2017), with exact counts per expert instead of a sketch (a
// pack has at most a few hundred thousand experts) and the same aging: once `window` accesses
// were counted, every count is halved. A free slot takes every eviction; but once the tier has
// been full, a slot a promotion (or invalidate()) left free takes an eviction used no more often
// than the next drop as the next drop itself (placed first in line, not last: the adaptive
// insertion of M. K. Qureshi et al., "Adaptive Insertion Policies for High Performance
// Caching", ISCA 2007): it keeps an idle slot busy until a more used eviction needs it, and
// never pushes a more used expert out first (forty-first session; docs/expert-delivery.md: 2-8 %
// fewer SSD reads on the target shapes). Accesses are what plan() is told were acquired (hits
// and misses; not prefetches). Refused evictions cost no copy down: the filter trades a few
// promotions for far fewer device-to-host copies (measured in docs/expert-delivery.md).
//
// Sizes are in slots (the upper cache's slot bytes each); a tier of 0 slots is off: plan()
// then moves nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/expert_cache.h"

namespace moepack {

// Bytes of RAM this process may still take: the smaller of what the OS reports available
// (/proc/meminfo MemAvailable) and what its control groups leave (cgroup_memory_left_of
// /proc/self/cgroup under /sys/fs/cgroup: a container's limit, which MemAvailable does not see;
// pinned memory counts against it, and the OOM killer, not an error, meets a tier past it). ~0
// if neither is known.
uint64_t available_ram_bytes();
// Bytes the control group in directory `dir` may still use: its limit minus its usage less the
// inactive page cache the kernel reclaims before the limit bites (as `docker stats` counts it):
// cgroup v2's memory.max - (memory.current - memory.stat's inactive_file), else v1's
// memory.limit_in_bytes - (memory.usage_in_bytes - memory.stat's total_inactive_file); 0 when
// usage is past the limit; ~0 when the limit is "max" or the files are absent or unreadable (a
// missing memory.stat counts nothing as reclaimable).
uint64_t cgroup_memory_left(const std::string& dir);
// The least cgroup_memory_left of the cgroups a process's /proc/self/cgroup text names and of
// each of their parents, under `cgroup_root` (/sys/fs/cgroup): v2's "0::/path" at the root,
// v1's "N:CONTROLLERS:/path" with `memory` among the controllers under cgroup_root/memory
// (other controllers' lines are skipped). ~0 when none limits.
uint64_t cgroup_memory_left_of(std::string_view proc_self_cgroup, const std::string& cgroup_root);

// RAM the tier leaves to the OS and the application (bytes).
constexpr uint64_t kRamTierKeepFree = 2ull << 30;

// Slots of a RAM tier asked for `requested_bytes` (EngineSettings::cache_ram_mib), as the VRAM
// cache is sized (ARCHITECTURE.md, "Cache sizing"):
//   floor(min(requested, available - kRamTierKeepFree) / slot_bytes), at most `max_slots`
// (callers pass the pack's experts: a tier of that many holds every expert the upper cache
// does not, even while a plan's promotions keep their slots busy; one of experts - upper slots
// would have to drop some then). 0 (off) when nothing is left; never throws. Sizes in bytes.
uint32_t ram_tier_slots(uint64_t requested_bytes, uint64_t available_bytes, uint64_t slot_bytes,
                        uint64_t max_slots);

// The tier's request when EngineSettings::cache_ram_mib is "auto": half of `available_bytes`
// (MemAvailable when the model loads), leaving the other half to the OS, the application and
// whatever else the user runs; ram_tier_slots() then still keeps kRamTierKeepFree. 0 when the
// available RAM is unknown (~0). On the product's machine (32 GB, ~26 GB available with the
// desktop and the studio running) that is ~13 GB: DeepSeek-V4-Flash's 16 GiB row in
// docs/expert-delivery.md reads 22-26 % fewer bytes from the SSD; 8 GiB 12-14 %.
uint64_t auto_ram_tier_bytes(uint64_t available_bytes);
// What such an automatic tier may take of `available_bytes` before ram_tier_slots rounds it to
// slots and caps it at the pack's experts: min(auto_ram_tier_bytes(a), a - kRamTierKeepFree),
// 0 when nothing is left or the RAM is unknown (the studio's Settings page shows it).
uint64_t auto_ram_tier_usable_bytes(uint64_t available_bytes);

// Which evictions enter the tier (see above).
enum class TierAdmission : uint8_t {
  kAll,        // every eviction (a plain victim cache)
  kFrequency,  // TinyLFU's rule: more uses than the expert it would drop
};
// "all" / "frequency"; throws Error naming `what` for anything else.
TierAdmission parse_tier_admission(std::string_view name, std::string_view what);
std::string_view tier_admission_name(TierAdmission a);

// Accesses per slot of the tier before the counts of TinyLFU's admission are halved (the
// paper's sample size is 10 x the cache's size). Measured in docs/expert-delivery.md.
constexpr uint64_t kTierWindowPerSlot = 10;

struct VictimTierCounters {
  uint64_t lookups = 0;    // upper-cache misses looked up here
  uint64_t hits = 0;       // of those, found here (promotions: no SSD read)
  uint64_t demotions = 0;  // experts copied down from the upper cache
  uint64_t drops = 0;      // experts displaced from this tier by a demotion
  uint64_t refused = 0;    // evictions not kept: every slot was being read by a promotion
  uint64_t not_admitted = 0;  // evictions not kept by kFrequency (fewer uses than the one it would drop)
  double hit_rate() const {
    return lookups == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(lookups);
  }
};

struct TierPlan {
  // Per assignment of the upper cache (same index): the RAM slot to fill its upper slot from,
  // for a miss this tier holds; empty for hits and for misses to read from the pack.
  std::vector<std::optional<uint32_t>> ram_slot;
  struct Demotion {
    ExpertKey key;            // the expert the upper cache evicted
    uint32_t upper_slot = 0;  // its upper slot (the assignment's slot)
    uint32_t ram_slot = 0;    // where to copy it
  };
  // At most one per assignment with an eviction, in the assignments' order, and at most one per
  // RAM slot (a demotion a later one of the same plan would overwrite is left out).
  std::vector<Demotion> demotions;
  // The demotion of upper slot `slot`, if this plan has one.
  const Demotion* demotion_of(uint32_t slot) const;
  uint32_t promotions() const;
};

class VictimTier {
 public:
  // `window`: accesses counted between two halvings of kFrequency's counts (0: slot_count x
  // kTierWindowPerSlot); unused with kAll.
  explicit VictimTier(uint32_t slot_count, TierAdmission admission = TierAdmission::kAll,
                      uint64_t window = 0);

  // The moves for one upper-tier acquire()/prefetch() of `layer` that returned `assignments`
  // (ExpertCache::acquire / prefetch). Updates this tier as if they were done: promoted experts
  // leave it, demoted ones enter it (dropping the first in line when full; never a slot this
  // plan promotes from), as the admission allows. An evicted expert this tier already
  // holds (it reached the upper cache without a lookup here) is only refreshed: the bytes are
  // the same, no copy; it is placed in line as an eviction into a freed slot would be. `accesses`: the
  // assignments are uses (an acquire: each counts one use for kFrequency, counted before the evictions are
  // judged), not predictions (a prefetch: false).
  TierPlan plan(uint32_t layer, std::span<const SlotAssignment> assignments, bool accesses = true);
  // Forgets `key` (e.g. its promotion failed). No-op if absent.
  void invalidate(ExpertKey key);

  std::optional<uint32_t> slot_of(ExpertKey key) const;
  uint32_t slot_count() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t resident() const { return static_cast<uint32_t>(where_.size()); }
  const VictimTierCounters& counters() const { return counters_; }
  TierAdmission admission() const { return admission_; }
  // kFrequency's count of `key`'s uses (halved every window); 0 with kAll.
  uint32_t uses(ExpertKey key) const;

 private:
  struct Entry {
    bool occupied = false;
    ExpertKey key;
    uint64_t demoted_at = 0;  // clock of its demotion (LRU order)
  };
  // The lowest free slot, else the first occupied one in line (dropping its expert);
  // nullopt when there is neither (every slot is being promoted from: neither free nor occupied).
  // *next_to_drop: occupy it first in line (kFrequency's rule for a freed slot, above).
  std::optional<uint32_t> slot_for_demotion(ExpertKey candidate, bool* next_to_drop);
  // TinyLFU's test (kFrequency): `candidate` was used no more often than the next drop (the
  // first in line). False with kAll or an empty line.
  bool loses_to_next_drop(ExpertKey candidate) const;
  // kFrequency's placement of an eviction into a slot it did not win by the test (a freed slot,
  // or its own on a refresh): first in line when it loses the test once the tier has been full.
  bool goes_first_in_line(ExpertKey candidate) const;
  void count_use(ExpertKey key);
  void remove(uint32_t slot);
  void occupy(uint32_t slot, ExpertKey key, bool next_to_drop = false);

  std::vector<Entry> slots_;
  std::unordered_map<uint64_t, uint32_t> where_;  // key -> slot
  std::set<uint32_t> free_;                       // free slots
  std::set<std::pair<uint64_t, uint32_t>> lru_;   // (demoted_at, slot) of the occupied slots: the line
  // Demotion clocks (LRU order): clock_ counts up for the most recently demoted, low_clock_ down
  // for an entry placed as the next to drop.
  uint64_t clock_ = uint64_t{1} << 62;
  uint64_t low_clock_ = uint64_t{1} << 62;
  VictimTierCounters counters_;
  TierAdmission admission_ = TierAdmission::kAll;
  uint64_t window_ = 0;
  bool filled_ = false;                          // every slot was taken once (kFrequency's rule applies)
  uint64_t counted_ = 0;                         // uses counted since the last halving
  std::unordered_map<uint64_t, uint32_t> uses_;  // key -> uses (kFrequency)
};

}  // namespace moepack
