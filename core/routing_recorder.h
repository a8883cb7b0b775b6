// Records a running model's expert routing as a routing trace (core/routing_trace.h) for
// `moepack cache-sim`: set EngineSettings::trace_path (`--set trace_path=FILE`) and every
// forward() step appends, per MoE layer, the distinct experts its tokens selected.
//
// Steps: the backend reports routing per (layer, token) in layer order (RoutingObserver); a
// step ends when the first MoE layer is reported again after a later one, or at close().
// Trace layers are the MoE layers in block order (blk.N -> N - leading_dense_block_count for
// the supported architectures, whose MoE layers are contiguous).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/backend.h"
#include "core/routing_trace.h"

namespace moepack {

class ModelSource;

class RoutingRecorder {
 public:
  // Creates `path` (IoError if it cannot). expert_bytes: the pack's slot size, or for a GGUF
  // the largest (layer) sum of one expert's gate/up/down bytes rounded up to 4096.
  RoutingRecorder(const std::string& path, const ModelSource& model);
  ~RoutingRecorder();
  RoutingRecorder(const RoutingRecorder&) = delete;
  RoutingRecorder& operator=(const RoutingRecorder&) = delete;

  void on_route(uint32_t block, std::span<const int32_t> experts);
  // Writes the pending step and closes the file.
  void close();
  uint32_t steps() const { return step_; }

  // Installs a recorder on `backend` (the observer keeps it alive) and returns it.
  static std::shared_ptr<RoutingRecorder> attach(Backend& backend, const std::string& path, const ModelSource& model);

 private:
  void flush_step();
  uint32_t first_block_;
  std::unique_ptr<RoutingTraceWriter> writer_;
  std::map<uint32_t, std::set<uint32_t>> pending_;  // trace layer -> experts of this step
  uint32_t last_block_ = 0;
  bool any_ = false;
  uint32_t step_ = 0;
};

// expert_bytes of a trace for `model` (see the constructor).
uint64_t trace_expert_bytes(const ModelSource& model);

}  // namespace moepack
