// Replays a routing trace through the expert cache with each replacement policy, so policies
// can be compared on real routing (`moepack cache-sim`).
#pragma once

#include <string>
#include <vector>

#include "core/expert_cache.h"
#include "core/routing_trace.h"
#include "core/victim_tier.h"

namespace moepack {

struct CacheSimResult {
  std::string policy;
  uint32_t slots = 0;
  CacheCounters counters;
  uint64_t read_bytes = 0;     // pack reads x expert_bytes (every miss, less the RAM tier's hits)
  uint64_t split_records = 0;  // records wider than the cache, replayed in chunks (below)
  uint32_t ram_slots = 0;      // the host-RAM victim tier behind the cache (0: none)
  VictimTierCounters ram;      // its counters (core/victim_tier.h)
  uint64_t demoted_bytes = 0;  // ram.demotions x expert_bytes (copied down, e.g. device to host)
  uint64_t promoted_bytes = 0;  // ram.hits x expert_bytes (copied up instead of read)
};

// Runs the trace through a cache of `slots` slots for each policy name in `policies`
// ("hybrid", "lru", "lfu", "belady"). A record with more experts than slots (a prefill's union
// of every token's top-k) is replayed as the engine acquires it with that cache: its experts in
// ascending order, `slots` at a time (core/cpu_moe.cpp), so a trace recorded with a large cache
// can be replayed at a small one. Throws Error if `slots` cannot hold one token's top-k (the
// header's top_k; the engine's own minimum). With `ram_slots` > 0 a VictimTier of that many
// slots sits behind the cache (every policy's): the cache's evictions are demoted into it and
// its misses looked up there first; `read_bytes` then counts only the misses it did not hold.
// `ram_admission` / `ram_window`: the tier's admission and its window (VictimTier's constructor).
std::vector<CacheSimResult> simulate_cache(const RoutingTrace& trace, uint32_t slots,
                                           const std::vector<std::string>& policies, uint32_t ram_slots = 0,
                                           TierAdmission ram_admission = TierAdmission::kAll,
                                           uint64_t ram_window = 0);

}  // namespace moepack
