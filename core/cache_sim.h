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
};

// Runs the trace through a cache of `slots` slots for each policy name in `policies`
// ("hybrid", "lru", "lfu", "belady"). Throws Error if `slots` cannot hold the largest record.
std::vector<CacheSimResult> simulate_cache(const RoutingTrace& trace, uint32_t slots,
                                           const std::vector<std::string>& policies);

}  // namespace moepack
