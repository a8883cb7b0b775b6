#include "core/cache_sim.h"

#include <algorithm>

#include "core/error.h"
#include "core/victim_tier.h"

namespace moepack {

std::vector<CacheSimResult> simulate_cache(const RoutingTrace& trace, uint32_t slots,
                                           const std::vector<std::string>& policies, uint32_t ram_slots,
                                           TierAdmission ram_admission, uint64_t ram_window) {
  size_t widest = 0;
  for (const TraceRecord& r : trace.records) widest = std::max(widest, r.experts.size());
  // The engine's own minimum: one token's top-k (a decode step's record) must fit at once.
  const size_t need = std::min<size_t>(widest, std::max<uint32_t>(trace.header.top_k, 1));
  if (slots < need) {
    throw Error("cache-sim: " + std::to_string(slots) + " slots cannot hold one token's top-" +
                std::to_string(need) + " experts");
  }
  // The acquires as the engine makes them: a record wider than the cache (a prefill's union)
  // in ascending chunks of `slots` experts (core/cpu_moe.cpp, run_routed_experts).
  std::vector<std::pair<uint16_t, std::vector<uint32_t>>> acquires;  // (layer, experts)
  std::vector<uint32_t> steps;
  uint64_t split = 0;
  for (const TraceRecord& r : trace.records) {
    std::vector<uint32_t> ids(r.experts.begin(), r.experts.end());
    std::sort(ids.begin(), ids.end());
    split += ids.size() > slots ? 1 : 0;
    size_t b = 0;
    do {
      const size_t e = std::min(ids.size(), b + slots);
      acquires.emplace_back(r.layer, std::vector<uint32_t>(ids.begin() + static_cast<long>(b),
                                                           ids.begin() + static_cast<long>(e)));
      steps.push_back(r.step);
      b = e;
    } while (b < ids.size());
  }
  std::vector<CacheSimResult> out;
  for (const std::string& name : policies) {
    std::unique_ptr<ReplacementPolicy> policy;
    if (name == "belady") {
      std::vector<ExpertKey> accesses;
      for (const auto& [layer, ids] : acquires) {
        for (uint32_t e : ids) accesses.push_back(ExpertKey{layer, e});
      }
      policy = make_belady_policy(std::move(accesses));
    } else {
      policy = make_policy(name);
    }
    ExpertCache cache(slots, std::move(policy));
    VictimTier ram(ram_slots, ram_admission, ram_window);
    uint64_t reads = 0;
    for (size_t k = 0; k < acquires.size(); ++k) {
      if (k > 0 && steps[k] != steps[k - 1]) cache.end_step();
      const std::vector<SlotAssignment> as = cache.acquire(acquires[k].first, acquires[k].second);
      const TierPlan plan = ram.plan(acquires[k].first, as);
      for (size_t i = 0; i < as.size(); ++i) reads += !as[i].hit && !plan.ram_slot[i];
    }
    CacheSimResult res;
    res.policy = name;
    res.slots = slots;
    res.counters = cache.counters();
    res.read_bytes = reads * trace.header.expert_bytes;
    res.split_records = split;
    res.ram_slots = ram_slots;
    res.ram = ram.counters();
    res.demoted_bytes = res.ram.demotions * trace.header.expert_bytes;
    res.promoted_bytes = res.ram.hits * trace.header.expert_bytes;
    out.push_back(res);
  }
  return out;
}

}  // namespace moepack
