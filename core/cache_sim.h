// Replays a routing trace through the expert cache with each replacement policy, so policies
// can be compared on real routing (`moepack cache-sim`).
#pragma once

#include <string>
#include <vector>

#include "core/expert_cache.h"
#include "core/routing_trace.h"

namespace moepack {

struct CacheSimResult {
  std::string policy;
  uint32_t slots = 0;
  CacheCounters counters;
  uint64_t read_bytes = 0;  // misses x expert_bytes
  uint64_t split_records = 0;  // records wider than the cache, replayed in chunks (below)
};

// Runs the trace through a cache of `slots` slots for each policy name in `policies`
// ("hybrid", "lru", "lfu", "belady"). A record with more experts than slots (a prefill's union
// of every token's top-k) is replayed as the engine acquires it with that cache: its experts in
// ascending order, `slots` at a time (core/cpu_moe.cpp), so a trace recorded with a large cache
// can be replayed at a small one. Throws Error if `slots` cannot hold one token's top-k (the
// header's top_k; the engine's own minimum).
std::vector<CacheSimResult> simulate_cache(const RoutingTrace& trace, uint32_t slots,
                                           const std::vector<std::string>& policies);

}  // namespace moepack
