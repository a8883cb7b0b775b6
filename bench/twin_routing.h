// Routing for `moepack bench-twin` (docs/twins.md): which experts each twin layer uses at each
// decode step, from a recorded routing trace (core/routing_trace.h) mapped onto the twin's
// shape, or from a seeded Zipf router.
//
// Trace mapping rule (trace: Lt layers x Et experts, top-kt; twin: L layers x E experts, top-k):
//   layer:    twin layer l replays trace layer l mod Lt.
//   replicas: g = ceil(k / kt) (requires g * Et <= E). Replica j < g of trace expert x in twin
//             layer l is expert  pi_l(j * Et + x),  pi_l(i) = (a_l * i + b_l) mod E,  an affine
//             permutation of [0, E): b_l = (97 * l) mod E, a_l = the smallest integer >= 2l + 3
//             with gcd(a_l, E) = 1.
//   selection: a record of c distinct trace experts (ascending ids x_0 < ... < x_{c-1}) maps to
//             the first n = ceil(c * k / kt) of the sequence ordered by replica, then trace id:
//             (j=0, x_0), (j=0, x_1), ..., (j=0, x_{c-1}), (j=1, x_0), ...
//             A decode record (c = kt) gives exactly k distinct twin experts.
//   Why: replicas j < g - 1 (and all of them when kt divides k) are used exactly when their
//   trace expert is, so every reuse distance (in steps) of the trace is kept; the permutation
//   only spreads the used experts over the twin's id space (and the SSD), and gives layers that
//   replay the same trace layer different ids. Only the last replica level (j = g - 1, when kt
//   does not divide k) follows its trace expert on a subset of its steps (the lowest ids).
//   Twin experts whose replica index would be >= g are never used (E - g * Et of them per layer).
// Steps: bench-twin replays decode steps only: a trace step is used when it has a record for
// every trace layer with exactly kt experts; prefill steps (unions of many tokens) are skipped
// and counted.
//
// Zipf(S) router: in layer l, expert rank r (0-based) has weight 1 / (r + 1)^S; ranks map to
// expert ids by a per-layer shuffle (std::mt19937_64 seeded with seed + l, Fisher-Yates with
// 53-bit uniforms). Each step draws k distinct experts per layer by weighted sampling without
// replacement (Efraimidis & Spirakis 2006: the k largest log(u) / w_r), u from one
// std::mt19937_64 seeded with `seed`, in layer order.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/routing_trace.h"

namespace moepack::bench {

struct TraceMapping {
  uint32_t trace_layers = 0, trace_experts = 0, trace_top_k = 0;
  uint32_t layers = 0, experts = 0, top_k = 0;
};

// The permutation's multiplier and offset for twin layer l (see above).
uint32_t trace_map_multiplier(uint32_t l, uint32_t experts);
uint32_t trace_map_offset(uint32_t l, uint32_t experts);
// Replicas per trace expert; throws Error when g * Et > E (the twin has too few experts).
uint32_t trace_map_replicas(const TraceMapping& m);
// Twin expert ids (in selection order) for one trace record of twin layer l. `trace_ids` are
// distinct ids < Et in any order. Throws Error on an out-of-range id.
std::vector<uint32_t> map_trace_record(const TraceMapping& m, uint32_t l, std::span<const uint16_t> trace_ids);

// One decode step: the distinct experts of each twin layer, [layers][<= top_k].
using StepRouting = std::vector<std::vector<uint32_t>>;

class TwinRouter {
 public:
  virtual ~TwinRouter() = default;
  // Fills the next step; false when the source is exhausted.
  virtual bool next(StepRouting& step) = 0;
  // Steps next() will return in all (0 = unbounded).
  virtual uint64_t steps_available() const = 0;
};

struct TraceRouterInfo {
  uint64_t decode_steps = 0;   // steps used
  uint64_t skipped_steps = 0;  // prefill or incomplete steps left out
  uint32_t replicas = 0;
};

// Throws Error (mapping impossible, no decode step in the trace).
std::unique_ptr<TwinRouter> make_trace_router(const RoutingTrace& trace, uint32_t layers, uint32_t experts,
                                              uint32_t top_k, TraceRouterInfo* info);
// s > 0 (s = 0 is uniform, allowed too); throws Error for s < 0 or top_k > experts.
std::unique_ptr<TwinRouter> make_zipf_router(double s, uint32_t layers, uint32_t experts, uint32_t top_k,
                                             uint64_t seed);

}  // namespace moepack::bench
