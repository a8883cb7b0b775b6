// The CUDA backend's resident weights: dense tensors (and, on the GGUF path, the stacked
// routed experts) copied to VRAM in their GGUF quantized form, in one allocation.
//
// Two phases so that an out-of-VRAM condition is found before anything is allocated: add_*()
// collects tensors (read into host RAM through TensorStore, shapes checked there), upload()
// sums the bytes, compares them with the device's free VRAM minus the reserve and either
// throws Error with the numbers (needed, free, reserve, MiB) or copies everything over.
// Norm weights and biases are dequantized to F32 on the host (TensorStore::vector).
// The host copies stay in TensorStore for the backend's lifetime (RAM = dense weights).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu_ops.h"
#include "core/tensor_store.h"
#include "gpu/cuda_resources.h"

namespace moepack::gpu {

// A matrix in VRAM: ne1 rows of ne0 elements, row_bytes per row (GGUF layout; the routed experts'
// stacked tensors may be permuted in place into the decode GEMV's tiled layout after the upload:
// CudaRoutedExperts, gpu/tiled_experts.h).
struct DevMatrix {
  GgmlType type = GgmlType::F32;
  int64_t ne0 = 0, ne1 = 0;
  uint64_t row_bytes = 0;
  const uint8_t* data = nullptr;
  bool empty() const { return data == nullptr; }
};

// Throws Error("the CUDA backend has no kernel for <what> type <type>") unless the kernels
// dequantize m's type (kernels.h gpu_type_supported). Called on every matrix a backend binds.
void require_gpu_type(const DevMatrix& m, const std::string& what);

class DeviceWeights {
 public:
  using Handle = size_t;
  explicit DeviceWeights(TensorStore& tensors) : tensors_(tensors) {}
  // The store the weights are read from (shapes of tensors not registered here).
  TensorStore& tensors() const { return tensors_; }

  // As TensorStore::matrix / stacked (stacked: ne2 matrices of ne1 rows as one view).
  Handle add_matrix(const std::string& name, int64_t ne0, int64_t ne1);
  Handle add_stacked(const std::string& name, int64_t ne0, int64_t ne1, int64_t ne2);
  // Reuses a view the caller already has (e.g. tied embeddings).
  Handle add_view(const WeightView& v);
  // F32 vector; `required` false: an absent tensor gives a null pointer.
  Handle add_vector(const std::string& name, int64_t n, bool required = true);
  Handle add_floats(std::vector<float> values);

  // Allocates and copies. `extra_bytes`: VRAM the caller will allocate next (KV cache,
  // activations) and that must fit as well. Throws Error naming needed / free / reserve MiB.
  void upload(uint64_t reserve_bytes, uint64_t extra_bytes, const std::string& model_path);

  DevMatrix matrix(Handle h) const;
  const float* vector(Handle h) const;  // null for an absent optional vector
  uint64_t bytes() const { return total_; }

 private:
  struct Item {
    WeightView view;            // matrices: host bytes
    std::vector<float> floats;  // vectors
    bool is_vector = false;
    bool present = true;
    uint64_t bytes = 0;
    uint64_t offset = 0;
  };
  TensorStore& tensors_;
  std::vector<Item> items_;
  uint64_t total_ = 0;
  DeviceBuffer buffer_;
};

}  // namespace moepack::gpu
