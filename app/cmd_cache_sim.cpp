// `moepack cache-sim (TRACE | --zipf S --shape NAME [--layers N] [--steps N] [--seed S])
//                   (--slots N | --budget-mib M) [--ram-slots N | --ram-budget-mib M]
//                   [--ram-admission all|frequency] [--ram-window N]
//                   [--policies hybrid,lru,lfu,belady] [--json]`
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli_checks.h"
#include "app/commands.h"
#include "bench/twin_routing.h"
#include "bench/twin_shape.h"
#include "core/cache_sim.h"
#include "core/error.h"

namespace moepack::cli {

namespace {

// Records a --zipf run may hold in memory (about 100 bytes each).
constexpr uint64_t kMaxZipfRecords = 20'000'000;

// A trace of `steps` decode steps of the Zipf(s) router (bench/twin_routing.h) over `layers`
// MoE layers of `shape`: what bench-twin --zipf replays, for the cache alone.
RoutingTrace zipf_trace(const bench::TwinShape& shape, double s, uint32_t layers, uint32_t steps,
                        uint64_t seed) {
  RoutingTrace t;
  t.header.n_layers = layers;
  t.header.n_experts = shape.n_expert;
  t.header.top_k = shape.top_k;
  t.header.expert_bytes = bench::twin_expert_bytes(shape);
  t.header.model_name = std::string(shape.name) + " zipf(" + std::to_string(s) + ")";
  if (shape.n_expert > 65536)
    throw Error("cache-sim: " + std::string(shape.name) + " has too many experts for a trace");
  const auto router = bench::make_zipf_router(s, layers, shape.n_expert, shape.top_k, seed);
  bench::StepRouting step;
  for (uint32_t st = 0; st < steps; ++st) {
    router->next(step);
    for (uint32_t l = 0; l < layers; ++l) {
      TraceRecord r;
      r.step = st;
      r.layer = static_cast<uint16_t>(l);
      for (const uint32_t e : step[l]) r.experts.push_back(static_cast<uint16_t>(e));
      t.records.push_back(std::move(r));
    }
  }
  return t;
}

}  // namespace

std::function<int()> add_cache_sim(CLI::App& app) {
  struct Options {
    std::string trace;
    double zipf_s = 1.0;
    std::string shape;
    uint32_t layers = 0, steps = 1000;
    uint64_t seed = 1;
    uint32_t slots = 0, ram_slots = 0;
    double budget_mib = 0, ram_budget_mib = 0;
    std::string policies = "hybrid,lru,lfu,belady";
    std::string ram_admission = "frequency";
    uint64_t ram_window = 0;
    bool json = false;
  };
  auto opt = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("cache-sim", "Replay a routing trace through each expert-cache policy");
  auto* trace = sub->add_option("trace", opt->trace, "Routing trace file (see core/routing_trace.h)");
  auto* zipf =
      sub->add_option("--zipf", opt->zipf_s,
                      "Instead of a trace: a Zipf(S) router (as bench-twin --zipf), S >= 0")
          ->check(number_check(
              "0..100", [](double v) { return v >= 0.0 && v <= 100.0; }, "must be between 0 and 100"));
  trace->excludes(zipf);
  auto* shape = sub->add_option("--shape", opt->shape,
                                "With --zipf: the model shape (deepseek-v4-flash, kimi-k3, deepseek-v3)");
  // A trace's layer ids are 16-bit (core/routing_trace.h); the records are held in memory, so
  // layers x steps is bounded too (kMaxZipfRecords).
  auto* layers =
      sub->add_option("--layers", opt->layers, "With --zipf: MoE layers (default: the shape's)")
          ->check(number_check(
              "1..65535", [](double v) { return v >= 1.0 && v <= 65535.0; }, "must be between 1 and 65535"));
  auto* steps = sub->add_option("--steps", opt->steps, "With --zipf: decode steps (default 1000)")
                    ->check(number_check(
                        "1..10000000", [](double v) { return v >= 1.0 && v <= 1e7; },
                        "must be between 1 and 10000000"));
  auto* seed = sub->add_option("--seed", opt->seed, "With --zipf: the router's seed (default 1)")
                   ->check(non_negative_number());
  for (CLI::Option* o : {shape, layers, steps, seed}) o->needs(zipf);
  zipf->needs(shape);
  auto* slots = sub->add_option("--slots", opt->slots, "Cache slots (experts)")->check(positive_number());
  auto* budget = sub->add_option("--budget-mib", opt->budget_mib,
                                 "Cache budget in MiB (slots = floor(budget / expert_bytes))")
                     ->check(positive_number());
  slots->excludes(budget);
  auto* ram_slots = sub->add_option("--ram-slots", opt->ram_slots,
                                    "Host-RAM victim tier behind the cache, in slots (core/victim_tier.h)");
  auto* ram_budget = sub->add_option("--ram-budget-mib", opt->ram_budget_mib,
                                     "Host-RAM victim tier in MiB (slots = floor(budget / expert_bytes))")
                         ->check(positive_number());
  ram_slots->excludes(ram_budget);
  auto* ram_admission =
      sub->add_option(
             "--ram-admission", opt->ram_admission,
             "Which evictions enter the RAM tier: frequency (TinyLFU's rule, the engine's default) or all")
          ->check(CLI::IsMember({"all", "frequency"}));
  auto* ram_window =
      sub->add_option("--ram-window", opt->ram_window,
                      "Accesses between halvings of the frequency counts (default: 10 x the tier's slots)")
          ->check(number_check(
              "1..1e12", [](double v) { return v >= 1.0 && v <= 1e12; }, "must be between 1 and 1e12"));
  sub->add_option("--policies", opt->policies, "Comma-separated: hybrid, lru, lfu, belady");
  sub->add_flag("--json", opt->json, "Print one JSON object on stdout");
  return [opt, slots, budget, ram_slots, ram_budget, ram_admission, ram_window, trace, zipf]() {
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
    if (trace->count() == 0 && zipf->count() == 0)
      throw UsageError("cache-sim: give a trace file or --zipf S --shape NAME");
    if (ram_slots->count() == 0 && ram_budget->count() == 0) {
      for (const auto* o : {ram_admission, ram_window}) {
        if (o->count() != 0)
          throw UsageError(o->get_name() +
                           ": no RAM tier to admit into (give --ram-slots or --ram-budget-mib)");
      }
    }
    RoutingTrace t;
    std::string source = opt->trace;
    if (zipf->count() != 0) {
      const bench::TwinShape* sh = bench::find_twin_shape(opt->shape);
      if (!sh)
        throw UsageError("--shape: unknown shape \"" + opt->shape +
                         "\" (deepseek-v4-flash, kimi-k3, deepseek-v3)");
      const uint32_t n_layers = opt->layers ? opt->layers : sh->moe_layers;
      if (static_cast<uint64_t>(n_layers) * opt->steps > kMaxZipfRecords) {
        throw UsageError("--layers x --steps: " + std::to_string(n_layers) + " x " +
                         std::to_string(opt->steps) + " records; at most " + std::to_string(kMaxZipfRecords) +
                         " are simulated in one run");
      }
      t = zipf_trace(*sh, opt->zipf_s, n_layers, opt->steps, opt->seed);
      source = t.header.model_name;
    } else {
      t = read_routing_trace(opt->trace);
    }
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
                   source.c_str(), want, static_cast<unsigned long long>(experts), n);
    }
    // The RAM tier never needs more slots than the model has experts (core/victim_tier.h,
    // ram_tier_slots: what the engine caps it at).
    double ram_want = static_cast<double>(opt->ram_slots);
    if (ram_budget->count() != 0) {
      ram_want = std::floor(std::floor(opt->ram_budget_mib * 1048576.0) /
                            static_cast<double>(t.header.expert_bytes));
    }
    const auto ram_n = static_cast<uint32_t>(std::min(ram_want, static_cast<double>(experts)));
    const TierAdmission admission = parse_tier_admission(opt->ram_admission, "--ram-admission");
    const auto results = simulate_cache(t, n, names, ram_n, admission, opt->ram_window);
    nlohmann::json j;
    j["trace"] = source;
    j["model"] = t.header.model_name;
    j["n_layers"] = t.header.n_layers;
    j["n_experts"] = t.header.n_experts;
    j["top_k"] = t.header.top_k;
    j["expert_bytes"] = t.header.expert_bytes;
    j["records"] = t.records.size();
    j["slots"] = n;
    j["budget_bytes"] = static_cast<uint64_t>(n) * t.header.expert_bytes;
    j["ram_slots"] = ram_n;
    j["ram_budget_bytes"] = static_cast<uint64_t>(ram_n) * t.header.expert_bytes;
    j["ram_admission"] = tier_admission_name(admission);
    j["policies"] = nlohmann::json::array();
    j["split_records"] = results.empty() ? 0 : results.front().split_records;
    std::fprintf(stderr, "%s: %zu records, %u slots of %llu bytes", source.c_str(), t.records.size(), n,
                 static_cast<unsigned long long>(t.header.expert_bytes));
    if (ram_n > 0) std::fprintf(stderr, ", RAM tier %u slots", ram_n);
    std::fprintf(stderr, "\n");
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
                               {"read_bytes", r.read_bytes},
                               {"ram_hits", r.ram.hits},
                               {"ram_demotions", r.ram.demotions},
                               {"ram_not_admitted", r.ram.not_admitted},
                               {"ram_hit_rate", r.ram.hit_rate()},
                               {"demoted_bytes", r.demoted_bytes},
                               {"promoted_bytes", r.promoted_bytes}});
      std::fprintf(stderr, "  %-7s hit rate %6.2f%%  hits %llu  misses %llu  evictions %llu",
                   r.policy.c_str(), 100.0 * r.counters.hit_rate(),
                   static_cast<unsigned long long>(r.counters.cache_hits),
                   static_cast<unsigned long long>(r.counters.cache_misses),
                   static_cast<unsigned long long>(r.counters.cache_evictions));
      if (r.ram_slots > 0) {
        std::fprintf(stderr, "  RAM tier: %llu of the misses (%.2f%%), pack reads %llu, copied down %llu",
                     static_cast<unsigned long long>(r.ram.hits), 100.0 * r.ram.hit_rate(),
                     static_cast<unsigned long long>(r.ram.lookups - r.ram.hits),
                     static_cast<unsigned long long>(r.ram.demotions));
      }
      std::fprintf(stderr, "\n");
    }
    // A model name or path that is not UTF-8 (a damaged trace, a Latin-1 file name) is written
    // with U+FFFD, not refused.
    if (opt->json)
      std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  };
}

}  // namespace moepack::cli
