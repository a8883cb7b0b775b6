// The CPU backend's resident weights: tensors of a GgufModel read into RAM on first use, with
// their shapes checked against what the architecture expects. Errors name the file, the
// tensor and the offset of its info record.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/cpu_ops.h"
#include "core/gguf_model.h"

namespace moepack {

class TensorStore {
 public:
  explicit TensorStore(const GgufModel& model) : model_(model) {}

  bool has(const std::string& name) const { return model_.find_tensor(name) != nullptr; }
  // A 2-D matrix [ne1 rows][ne0 columns]. Throws FormatError if absent (unless !required, then
  // an empty view) or the shape differs.
  WeightView matrix(const std::string& name, int64_t ne0, int64_t ne1, bool required = true);
  // A 3-D stack of ne2 matrices [ne1][ne0] (e.g. routed experts `ffn_gate_exps`), as one view
  // of ne1 * ne2 rows; matrix i is rows [i * ne1, (i + 1) * ne1).
  WeightView stacked(const std::string& name, int64_t ne0, int64_t ne1, int64_t ne2);
  // A 1-D tensor of n values as F32 (any supported type is dequantized). Empty if absent and
  // !required.
  std::vector<float> vector(const std::string& name, int64_t n, bool required = true);
  // ne of a tensor ({1,1,1,1} padded); throws FormatError if absent.
  std::array<uint64_t, 4> shape(const std::string& name) const;

  uint64_t resident_bytes() const { return resident_bytes_; }
  const GgufModel& model() const { return model_; }

 private:
  const GgufTensorRef& ref(const std::string& name) const;
  const uint8_t* load(const GgufTensorRef& r);
  [[noreturn]] void bad_shape(const GgufTensorRef& r, const std::string& expected) const;

  const GgufModel& model_;
  std::deque<std::vector<uint8_t>> buffers_;
  uint64_t resident_bytes_ = 0;
};

}  // namespace moepack
