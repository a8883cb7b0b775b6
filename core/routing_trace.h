// Routing traces: which experts each MoE layer selected at each step, for replaying through
// cache policies (`moepack cache-sim`) without running the model.
//
// Byte layout, version 1, little-endian:
//   offset  size  field
//   0       8     magic "MPTRACE1"
//   8       4     version (u32) = 1
//   12      4     n_layers (u32): MoE layers, numbered 0.. in pack order
//   16      4     n_experts (u32): routed experts per layer
//   20      4     top_k (u32): experts the router selects per token
//   24      8     expert_bytes (u64): bytes of one cache slot (the pack's largest stride), 1..2^30
//   32      4     name_len (u32) <= 4096
//   36      name_len  model name, UTF-8
//   ...     records until the end of the file, each:
//             u32 step, u16 layer, u16 count, count x u16 expert id   (8 + 2 * count bytes)
// One record is one acquire of one layer: the distinct experts selected for all tokens of the
// step (top_k of them for a decode step; their union for a prefill batch). Steps never
// decrease. A file cut inside a record (a crash while tracing) is rejected with the offset.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace moepack {

struct TraceHeader {
  uint32_t n_layers = 0;
  uint32_t n_experts = 0;
  uint32_t top_k = 0;
  uint64_t expert_bytes = 0;
  std::string model_name;
};

struct TraceRecord {
  uint32_t step = 0;
  uint16_t layer = 0;
  std::vector<uint16_t> experts;
};

struct RoutingTrace {
  TraceHeader header;
  std::vector<TraceRecord> records;
};

// Reads and validates a whole trace. Throws IoError / FormatError (file, field, offset).
RoutingTrace read_routing_trace(const std::string& path);

// Appends records to a new trace file (buffered). The records go to PATH.tmp (atomic_temp_name); close(),
// or the destructor, flushes, fsyncs and renames it to PATH, so PATH holds either what it held before or
// a whole trace, never one cut by a process killed mid-run (a second Ctrl-C; the temporary file is left).
class RoutingTraceWriter {
 public:
  // Throws IoError if the file cannot be created, Error on an invalid header.
  RoutingTraceWriter(const std::string& path, const TraceHeader& header);
  ~RoutingTraceWriter();
  RoutingTraceWriter(const RoutingTraceWriter&) = delete;
  RoutingTraceWriter& operator=(const RoutingTraceWriter&) = delete;
  // Throws Error on an out-of-range layer/expert or a decreasing step.
  void append(uint32_t step, uint32_t layer, const std::vector<uint32_t>& experts);
  // Publishes the trace at its path. Throws IoError (flush, fsync, close or rename failed: the records
  // stay in the temporary file).
  void close();

 private:
  std::string path_, temp_;
  TraceHeader header_;
  std::FILE* f_ = nullptr;
  uint32_t last_step_ = 0;
};

}  // namespace moepack
