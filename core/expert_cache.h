// The expert cache's bookkeeping: which (layer, expert) sits in which slot, what to evict.
//
// Slots hold whole experts (all roles of one (layer, expert) block); a slot is the pack's
// largest expert stride. Sizing (ARCHITECTURE.md, "Cache sizing"):
//   slot_count = floor(min(requested, free - reserve) / slot_bytes)
// and initialisation fails if slot_count cannot hold one layer's top-k working set.
//
// acquire(layer, experts) maps one layer's selected experts to slots: hits keep their slot,
// misses get a free slot or evict a victim chosen by the ReplacementPolicy among slots NOT
// holding this call's experts (they are protected: the layer needs all of them at once).
// Nothing is ever written back (the pack is read-only).
//
// prefetch(layer, experts) places experts read ahead of their use (a predicted next layer)
// the same way, protecting the predicted set, but counts no hit or miss and does not advance
// the access clock: the slot enters with uses = 0 (so lfu / hybrid evict an unused prefetch
// first) and last_access = the clock. A later acquire() of a prefetched expert needs no read
// (SlotAssignment::prefetched, hit); it counts as a prefetch hit and, as the step's first
// acquire of the key, as a miss of the cache (the policy did not keep it), so the hit rate is
// defined the same way with and without prefetching.
//
// Counting (the published evaluation's "unique-key" hit rate): within one step (one decode
// token, or one prefill batch), each (layer, expert) key is counted once: the first time it is
// acquired in the step, as a hit if resident, else a miss. end_step() starts the next step.
//
// Policies (pluggable; tie-breaks are part of the contract and tested):
//   lru     least recently used (last step/access); ties -> lowest slot
//   lfu     fewest uses since the expert entered the cache; ties -> lowest slot
//   hybrid  fewest uses, then least recently used, then lowest slot   (the default)
//   belady  evicts the expert whose next use is farthest in the future (needs the whole
//           access sequence; offline optimum, for evaluation only)
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace moepack {

struct ExpertKey {
  uint32_t layer = 0;   // index of the MoE layer in pack order (0-based)
  uint32_t expert = 0;  // expert id within the layer
  bool operator==(const ExpertKey&) const = default;
  uint64_t packed() const { return (static_cast<uint64_t>(layer) << 32) | expert; }
};

// Per-slot state a policy may look at.
struct SlotState {
  bool occupied = false;
  ExpertKey key;
  uint64_t uses = 0;         // accesses since the expert entered this slot (0 while only prefetched)
  uint64_t last_access = 0;  // access clock of the most recent use
  bool prefetched = false;   // placed by prefetch() and not acquired since
};

class ReplacementPolicy {
 public:
  virtual ~ReplacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // Called before each access with the access's position in the whole sequence (0-based).
  virtual void on_access(uint64_t /*position*/) {}
  // Returns the victim among occupied, unprotected slots (at least one exists).
  virtual uint32_t choose_victim(std::span<const SlotState> slots, std::span<const bool> is_protected) = 0;
};

std::unique_ptr<ReplacementPolicy> make_lru_policy();
std::unique_ptr<ReplacementPolicy> make_lfu_policy();
std::unique_ptr<ReplacementPolicy> make_hybrid_policy();
// `accesses`: every key the cache will be asked for, in order (as acquire() sees them).
std::unique_ptr<ReplacementPolicy> make_belady_policy(std::vector<ExpertKey> accesses);
// "lru", "lfu", "hybrid"; throws Error for others (belady needs the future: make it directly).
std::unique_ptr<ReplacementPolicy> make_policy(std::string_view name);

struct CacheCounters {
  uint64_t cache_hits = 0;       // unique keys per step found resident
  uint64_t cache_misses = 0;     // unique keys per step that had to be read
  uint64_t cache_evictions = 0;  // experts displaced (by acquire() or prefetch())
  uint64_t prefetches = 0;       // experts placed by prefetch() (each needed a read)
  uint64_t prefetch_hits = 0;    // of those, acquired before being evicted (a miss if the step's first)
  double hit_rate() const {
    const uint64_t n = cache_hits + cache_misses;
    return n == 0 ? 0.0 : static_cast<double>(cache_hits) / static_cast<double>(n);
  }
};

struct SlotAssignment {
  uint32_t expert = 0;
  uint32_t slot = 0;
  bool hit = false;                    // already resident: no read needed
  bool prefetched = false;             // acquire(): resident because prefetch() placed it
  std::optional<ExpertKey> evicted;    // what the slot held before (misses and prefetches only)
};

// Number of slots for a byte budget: min(requested, free - reserve) / slot_bytes, and at most
// `max_slots` (the pack's experts: a slot more than there are experts would never be used, and
// a budget far above the pack would allocate and zero memory for nothing). Throws Error with
// the numbers when the budget gives fewer than `min_slots` (one layer's top-k working set).
// All sizes in bytes.
uint32_t cache_slots_for_budget(uint64_t requested_bytes, uint64_t free_bytes, uint64_t reserve_bytes,
                                uint64_t slot_bytes, uint32_t min_slots,
                                uint64_t max_slots = std::numeric_limits<uint32_t>::max());

class ExpertCache {
 public:
  ExpertCache(uint32_t slot_count, std::unique_ptr<ReplacementPolicy> policy);

  // Maps `experts` (distinct ids of one layer) to slots; the slots in `keep` (e.g. prefetch
  // reads still in flight) are not evicted either. Throws Error if experts and keep together
  // need more than the slots, or an id repeats.
  std::vector<SlotAssignment> acquire(uint32_t layer, std::span<const uint32_t> experts,
                                      std::span<const uint32_t> keep = {});
  // Places the experts of `experts` (distinct ids of one layer) that are not resident, in the
  // order given, while a slot outside `keep` and the resident ones of `experts` is free or
  // evictable; returns an assignment (hit = false) for each one placed. Counts prefetches and
  // evictions only. Throws Error as acquire() does.
  std::vector<SlotAssignment> prefetch(uint32_t layer, std::span<const uint32_t> experts,
                                       std::span<const uint32_t> keep = {});
  // How many of `experts` (a prediction of one layer, most likely first) a prefetch() that may
  // start at most `max_reads` reads is given: the list up to, not including, its
  // (max_reads + 1)-th expert that is not resident, at most slot_count() entries. Resident ones
  // need no read, so they do not use up the room, and inside the prefix they are protected
  // from that call's evictions.
  size_t prefetch_prefix(uint32_t layer, std::span<const uint32_t> experts, size_t max_reads) const;
  void end_step();
  // Forgets `key` (e.g. its data failed verification): its slot becomes free. No-op if absent.
  void invalidate(ExpertKey key);

  std::optional<uint32_t> slot_of(ExpertKey key) const;
  uint32_t slot_count() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t resident() const { return static_cast<uint32_t>(where_.size()); }
  const CacheCounters& counters() const { return counters_; }
  std::string_view policy_name() const { return policy_->name(); }

 private:
  void check_request(const char* what, uint32_t layer, std::span<const uint32_t> experts, size_t kept) const;
  void protect_resident(uint32_t layer, std::span<const uint32_t> experts, std::span<const uint32_t> keep,
                        std::vector<SlotAssignment>& out);
  uint32_t place(ExpertKey key, uint64_t uses, bool prefetched, std::optional<ExpertKey>* evicted);

  std::vector<SlotState> slots_;
  std::unique_ptr<bool[]> protected_;  // slot_count flags: holds an expert of the current acquire() / prefetch()
  std::unordered_map<uint64_t, uint32_t> where_;  // key -> slot
  std::unordered_set<uint64_t> seen_this_step_;
  std::unique_ptr<ReplacementPolicy> policy_;
  CacheCounters counters_;
  uint64_t clock_ = 0;  // accesses so far
  uint32_t next_free_ = 0;          // slots [next_free_, slot_count) were never used
  std::vector<uint32_t> free_list_;  // slots emptied by invalidate()
};

}  // namespace moepack
