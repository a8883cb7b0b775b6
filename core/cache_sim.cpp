#include "core/cache_sim.h"

#include "core/error.h"

namespace moepack {

std::vector<CacheSimResult> simulate_cache(const RoutingTrace& trace, uint32_t slots,
                                           const std::vector<std::string>& policies) {
  size_t widest = 0;
  for (const TraceRecord& r : trace.records) widest = std::max(widest, r.experts.size());
  if (slots < widest) {
    throw Error("cache-sim: " + std::to_string(slots) + " slots cannot hold a layer's working set of " +
                std::to_string(widest) + " experts");
  }
  std::vector<CacheSimResult> out;
  for (const std::string& name : policies) {
    std::unique_ptr<ReplacementPolicy> policy;
    if (name == "belady") {
      std::vector<ExpertKey> accesses;
      for (const TraceRecord& r : trace.records) {
        for (uint16_t e : r.experts) accesses.push_back(ExpertKey{r.layer, e});
      }
      policy = make_belady_policy(std::move(accesses));
    } else {
      policy = make_policy(name);
    }
    ExpertCache cache(slots, std::move(policy));
    bool first = true;
    uint32_t step = 0;
    std::vector<uint32_t> ids;
    for (const TraceRecord& r : trace.records) {
      if (!first && r.step != step) cache.end_step();
      first = false;
      step = r.step;
      ids.assign(r.experts.begin(), r.experts.end());
      cache.acquire(r.layer, ids);
    }
    CacheSimResult res;
    res.policy = name;
    res.slots = slots;
    res.counters = cache.counters();
    res.read_bytes = res.counters.cache_misses * trace.header.expert_bytes;
    out.push_back(res);
  }
  return out;
}

}  // namespace moepack
