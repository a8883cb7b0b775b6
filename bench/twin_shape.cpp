// Target-model expert shapes (twin_shape.h).
#include "bench/twin_shape.h"

namespace moepack::bench {

const std::vector<TwinShape>& twin_shapes() {
  static const std::vector<TwinShape> shapes = {
      {"deepseek-v4-flash", 43, 256, 6, 4096, 2048, GgmlType::MXFP4, GgmlType::MXFP4, GgmlType::MXFP4},
      {"kimi-k3", 92, 896, 16, 7168, 1536, GgmlType::Q2_K, GgmlType::Q2_K, GgmlType::Q3_K},
      {"deepseek-v3", 58, 256, 8, 7168, 2048, GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q4_K},
  };
  return shapes;
}

const TwinShape* find_twin_shape(std::string_view name) {
  for (const TwinShape& s : twin_shapes()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

uint64_t twin_expert_bytes(const TwinShape& s) {
  // The shapes above are multiples of every block size (32 and 256), so the rows exist.
  return s.n_ff * ggml_row_bytes(s.gate, s.n_embd).value() + s.n_ff * ggml_row_bytes(s.up, s.n_embd).value() +
         s.n_embd * ggml_row_bytes(s.down, s.n_ff).value();
}

uint64_t twin_total_expert_bytes(const TwinShape& s) {
  return uint64_t{s.moe_layers} * s.n_expert * twin_expert_bytes(s);
}

}  // namespace moepack::bench
