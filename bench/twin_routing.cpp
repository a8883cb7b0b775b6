// Twin routing: trace mapping and the Zipf router (twin_routing.h).
#include "bench/twin_routing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/error.h"

namespace moepack::bench {
namespace {

double uniform53(std::mt19937_64& rng) {  // in (0, 1)
  return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

class TraceRouter : public TwinRouter {
 public:
  TraceRouter(std::vector<StepRouting> steps) : steps_(std::move(steps)) {}
  bool next(StepRouting& step) override {
    if (pos_ >= steps_.size()) return false;
    step = steps_[pos_++];
    return true;
  }
  uint64_t steps_available() const override { return steps_.size(); }

 private:
  std::vector<StepRouting> steps_;
  size_t pos_ = 0;
};

class ZipfRouter : public TwinRouter {
 public:
  ZipfRouter(double s, uint32_t layers, uint32_t experts, uint32_t top_k, uint64_t seed)
      : layers_(layers), experts_(experts), top_k_(top_k), rng_(seed) {
    weight_.resize(experts);
    for (uint32_t r = 0; r < experts; ++r) weight_[r] = 1.0 / std::pow(static_cast<double>(r + 1), s);
    for (uint32_t l = 0; l < layers; ++l) {
      std::mt19937_64 g(seed + l);
      std::vector<uint32_t> ids(experts);
      std::iota(ids.begin(), ids.end(), 0u);
      for (uint32_t i = experts - 1; i > 0; --i) {
        const auto j = static_cast<uint32_t>(uniform53(g) * (i + 1));
        std::swap(ids[i], ids[std::min(j, i)]);
      }
      rank_to_id_.push_back(std::move(ids));
    }
  }
  bool next(StepRouting& step) override {
    step.assign(layers_, {});
    std::vector<std::pair<double, uint32_t>> keys(experts_);
    for (uint32_t l = 0; l < layers_; ++l) {
      for (uint32_t r = 0; r < experts_; ++r) keys[r] = {std::log(uniform53(rng_)) / weight_[r], r};
      std::partial_sort(keys.begin(), keys.begin() + top_k_, keys.end(),
                        [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
      for (uint32_t j = 0; j < top_k_; ++j) step[l].push_back(rank_to_id_[l][keys[j].second]);
    }
    return true;
  }
  uint64_t steps_available() const override { return 0; }

 private:
  uint32_t layers_, experts_, top_k_;
  std::mt19937_64 rng_;
  std::vector<double> weight_;
  std::vector<std::vector<uint32_t>> rank_to_id_;
};

}  // namespace

uint32_t trace_map_multiplier(uint32_t l, uint32_t experts) {
  uint64_t a = 2ull * l + 3;
  while (std::gcd<uint64_t, uint64_t>(a, experts) != 1) ++a;
  return static_cast<uint32_t>(a);
}

uint32_t trace_map_offset(uint32_t l, uint32_t experts) {
  return static_cast<uint32_t>((97ull * l) % experts);
}

uint32_t trace_map_replicas(const TraceMapping& m) {
  if (m.trace_top_k == 0 || m.trace_experts == 0 || m.trace_layers == 0)
    throw Error("trace mapping: the trace has no layers, experts or top-k");
  const uint32_t g = (m.top_k + m.trace_top_k - 1) / m.trace_top_k;
  if (static_cast<uint64_t>(g) * m.trace_experts > m.experts) {
    throw Error("trace mapping: the twin's top-" + std::to_string(m.top_k) + " of " + std::to_string(m.experts) +
                " experts needs " + std::to_string(g) + " replicas of each of the trace's " +
                std::to_string(m.trace_experts) + " experts (top-" + std::to_string(m.trace_top_k) + "), " +
                std::to_string(static_cast<uint64_t>(g) * m.trace_experts) + " > " + std::to_string(m.experts) +
                ": give the twin more experts (--experts)");
  }
  return g;
}

std::vector<uint32_t> map_trace_record(const TraceMapping& m, uint32_t l, std::span<const uint16_t> trace_ids) {
  const uint32_t g = trace_map_replicas(m);
  std::vector<uint16_t> xs(trace_ids.begin(), trace_ids.end());
  std::sort(xs.begin(), xs.end());
  for (uint16_t x : xs) {
    if (x >= m.trace_experts)
      throw Error("trace mapping: expert id " + std::to_string(x) + " >= the trace's " + std::to_string(m.trace_experts));
  }
  const uint64_t c = xs.size();
  const uint64_t n = std::min<uint64_t>(c * g, (c * m.top_k + m.trace_top_k - 1) / m.trace_top_k);
  const uint64_t a = trace_map_multiplier(l, m.experts), b = trace_map_offset(l, m.experts);
  std::vector<uint32_t> out;
  out.reserve(static_cast<size_t>(n));
  for (uint64_t j = 0; j < g && out.size() < n; ++j) {
    for (uint64_t i = 0; i < c && out.size() < n; ++i) {
      const uint64_t src = j * m.trace_experts + xs[i];
      out.push_back(static_cast<uint32_t>((a * src + b) % m.experts));
    }
  }
  return out;
}

std::unique_ptr<TwinRouter> make_trace_router(const RoutingTrace& trace, uint32_t layers, uint32_t experts,
                                              uint32_t top_k, TraceRouterInfo* info) {
  const TraceHeader& h = trace.header;
  const TraceMapping m{h.n_layers, h.n_experts, h.top_k, layers, experts, top_k};
  const uint32_t g = trace_map_replicas(m);
  // Group records by step; keep the decode steps.
  std::map<uint32_t, std::vector<const TraceRecord*>> by_step;
  for (const TraceRecord& r : trace.records) by_step[r.step].push_back(&r);
  std::vector<StepRouting> steps;
  uint64_t skipped = 0;
  for (const auto& [step, recs] : by_step) {
    std::vector<const TraceRecord*> per_layer(h.n_layers, nullptr);
    bool ok = true;
    for (const TraceRecord* r : recs) {
      if (r->layer >= h.n_layers || per_layer[r->layer] != nullptr || r->experts.size() != h.top_k) ok = false;
      if (ok) per_layer[r->layer] = r;
    }
    for (const TraceRecord* r : per_layer) ok = ok && r != nullptr;
    if (!ok) {
      ++skipped;
      continue;
    }
    StepRouting s(layers);
    for (uint32_t l = 0; l < layers; ++l) s[l] = map_trace_record(m, l, per_layer[l % h.n_layers]->experts);
    steps.push_back(std::move(s));
  }
  if (steps.empty())
    throw Error("trace mapping: the trace has no decode step (a record of exactly top-" + std::to_string(h.top_k) +
                " experts for each of its " + std::to_string(h.n_layers) + " layers)");
  if (info) *info = {steps.size(), skipped, g};
  return std::make_unique<TraceRouter>(std::move(steps));
}

std::unique_ptr<TwinRouter> make_zipf_router(double s, uint32_t layers, uint32_t experts, uint32_t top_k,
                                             uint64_t seed) {
  if (!(s >= 0) || !std::isfinite(s)) throw Error("zipf: the exponent S must be a finite number >= 0");
  if (top_k == 0 || top_k > experts)
    throw Error("zipf: top-k " + std::to_string(top_k) + " must be 1.." + std::to_string(experts));
  return std::make_unique<ZipfRouter>(s, layers, experts, top_k, seed);
}

}  // namespace moepack::bench
