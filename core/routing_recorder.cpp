#include "core/routing_recorder.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/model_source.h"

namespace moepack {

uint64_t trace_expert_bytes(const ModelSource& model) {
  if (model.pack()) return model.pack()->layout().max_stride;
  const ModelConfig& c = model.config();
  uint64_t best = 0;
  for (uint32_t il = 0; il < c.n_layer; ++il) {
    if (!c.is_moe_layer(il)) continue;
    uint64_t sum = 0;
    for (const char* role : {"gate", "up", "down"}) {
      const GgufTensorRef* t = model.gguf().find_tensor("blk." + std::to_string(il) + ".ffn_" + role + "_exps.weight");
      if (t && c.n_expert) sum += t->info->nbytes / c.n_expert;
    }
    best = std::max(best, sum);
  }
  return (best + 4095) / 4096 * 4096;
}

RoutingRecorder::RoutingRecorder(const std::string& path, const ModelSource& model)
    : first_block_(model.config().n_layer_dense_lead) {
  const ModelConfig& c = model.config();
  TraceHeader h;
  h.n_layers = c.n_layer - c.n_layer_dense_lead;
  h.n_experts = c.n_expert;
  h.top_k = c.n_expert_used;
  h.expert_bytes = trace_expert_bytes(model);
  h.model_name = c.name.empty() ? model.path() : c.name;
  writer_ = std::make_unique<RoutingTraceWriter>(path, h);
}

RoutingRecorder::~RoutingRecorder() {
  try {
    close();
  } catch (...) {
    // Destructors must not throw; close() explicitly to see errors.
  }
}

void RoutingRecorder::flush_step() {
  if (pending_.empty()) return;
  for (const auto& [layer, experts] : pending_) {
    writer_->append(step_, layer, std::vector<uint32_t>(experts.begin(), experts.end()));
  }
  pending_.clear();
  ++step_;
}

void RoutingRecorder::on_route(uint32_t block, std::span<const int32_t> experts) {
  if (!writer_) return;
  if (block < first_block_) throw Error("routing reported for dense blk." + std::to_string(block));
  if (any_ && block == first_block_ && last_block_ != first_block_) flush_step();
  any_ = true;
  last_block_ = block;
  auto& set = pending_[block - first_block_];
  for (int32_t e : experts) set.insert(static_cast<uint32_t>(e));
}

void RoutingRecorder::close() {
  if (!writer_) return;
  flush_step();
  writer_->close();
  writer_.reset();
}

std::shared_ptr<RoutingRecorder> RoutingRecorder::attach(Backend& backend, const std::string& path,
                                                         const ModelSource& model) {
  auto rec = std::make_shared<RoutingRecorder>(path, model);
  backend.set_routing_observer([rec](uint32_t block, uint32_t, std::span<const int32_t> ex, std::span<const float>) {
    rec->on_route(block, ex);
  });
  return rec;
}

}  // namespace moepack
