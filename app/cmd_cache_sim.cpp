// `moepack cache-sim TRACE (--slots N | --budget-mib M) [--policies hybrid,lru,lfu,belady] [--json]`
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli_checks.h"
#include "app/commands.h"
#include "core/cache_sim.h"
#include "core/error.h"

namespace moepack::cli {

std::function<int()> add_cache_sim(CLI::App& app) {
  struct Options {
    std::string trace;
    uint32_t slots = 0;
    double budget_mib = 0;
    std::string policies = "hybrid,lru,lfu,belady";
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("cache-sim", "Replay a routing trace through each expert-cache policy");
  sub->add_option("trace", opt->trace, "Routing trace file (see core/routing_trace.h)")->required();
  auto* slots = sub->add_option("--slots", opt->slots, "Cache slots (experts)")->check(positive_number());
  auto* budget = sub->add_option("--budget-mib", opt->budget_mib,
                                 "Cache budget in MiB (slots = floor(budget / expert_bytes))")
                     ->check(positive_number());
  slots->excludes(budget);
  sub->add_option("--policies", opt->policies, "Comma-separated: hybrid, lru, lfu, belady");
  sub->add_flag("--json", opt->json, "Print one JSON object on stdout");
  return [opt, slots, budget]() {
    std::vector<std::string> names;
    std::stringstream ss(opt->policies);
    for (std::string p; std::getline(ss, p, ',');) {
      if (p != "hybrid" && p != "lru" && p != "lfu" && p != "belady")  // core/cache_sim.h's names
        throw UsageError("--policies: unknown policy \"" + p + "\" (hybrid, lru, lfu, belady)");
      names.push_back(p);
    }
    if (names.empty()) throw UsageError("--policies: give at least one of hybrid, lru, lfu, belady");
    if (budget->count() == 0 && slots->count() == 0)
      throw UsageError("cache-sim: give --slots or --budget-mib");
    const RoutingTrace t = read_routing_trace(opt->trace);
    // As the engine does, never more slots than the model has experts (a larger budget would
    // hold every expert and leave the rest unused).
    const uint64_t experts = static_cast<uint64_t>(t.header.n_layers) * t.header.n_experts;
    double want = static_cast<double>(opt->slots);
    if (budget->count() != 0) {
      want = std::floor(std::floor(opt->budget_mib * 1048576.0) / static_cast<double>(t.header.expert_bytes));
    }
    const auto n = static_cast<uint32_t>(std::min(want, static_cast<double>(std::max<uint64_t>(experts, 1))));
    if (want > static_cast<double>(n)) {
      std::fprintf(stderr, "%s: %.0f slots asked for; the model has %llu experts, so %u slots\n",
                   opt->trace.c_str(), want, static_cast<unsigned long long>(experts), n);
    }
    const auto results = simulate_cache(t, n, names);
    nlohmann::json j;
    j["trace"] = opt->trace;
    j["model"] = t.header.model_name;
    j["n_layers"] = t.header.n_layers;
    j["n_experts"] = t.header.n_experts;
    j["top_k"] = t.header.top_k;
    j["expert_bytes"] = t.header.expert_bytes;
    j["records"] = t.records.size();
    j["slots"] = n;
    j["budget_bytes"] = static_cast<uint64_t>(n) * t.header.expert_bytes;
    j["policies"] = nlohmann::json::array();
    j["split_records"] = results.empty() ? 0 : results.front().split_records;
    std::fprintf(stderr, "%s: %zu records, %u slots of %llu bytes\n", opt->trace.c_str(), t.records.size(), n,
                 static_cast<unsigned long long>(t.header.expert_bytes));
    if (!results.empty() && results.front().split_records > 0) {
      std::fprintf(stderr,
                   "  %llu records (prefill steps) wider than %u slots: replayed %u experts at a time, as "
                   "the engine reads them\n",
                   static_cast<unsigned long long>(results.front().split_records), n, n);
    }
    for (const CacheSimResult& r : results) {
      j["policies"].push_back({{"policy", r.policy},
                               {"cache_hits", r.counters.cache_hits},
                               {"cache_misses", r.counters.cache_misses},
                               {"cache_evictions", r.counters.cache_evictions},
                               {"hit_rate", r.counters.hit_rate()},
                               {"read_bytes", r.read_bytes}});
      std::fprintf(stderr, "  %-7s hit rate %6.2f%%  hits %llu  misses %llu  evictions %llu\n", r.policy.c_str(),
                   100.0 * r.counters.hit_rate(), static_cast<unsigned long long>(r.counters.cache_hits),
                   static_cast<unsigned long long>(r.counters.cache_misses),
                   static_cast<unsigned long long>(r.counters.cache_evictions));
    }
    // A model name or path that is not UTF-8 (a damaged trace, a Latin-1 file name) is written
    // with U+FFFD, not refused.
    if (opt->json) std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  };
}

}  // namespace moepack::cli
