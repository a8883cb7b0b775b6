#include "gpu/device_weights.h"

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels.h"

namespace moepack::gpu {

namespace {
constexpr uint64_t kAlign = 256;
uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
}  // namespace

void require_gpu_type(const DevMatrix& m, const std::string& what) {
  if (!gpu_type_supported(m.type)) {
    throw Error("the CUDA backend has no kernel for " + what + " type " +
                std::string(ggml_type_name(m.type)));
  }
}

DeviceWeights::Handle DeviceWeights::add_view(const WeightView& v) {
  Item it;
  it.view = v;
  it.bytes = v.row_bytes * static_cast<uint64_t>(v.ne1);
  items_.push_back(std::move(it));
  return items_.size() - 1;
}

DeviceWeights::Handle DeviceWeights::add_matrix(const std::string& name, int64_t ne0, int64_t ne1) {
  return add_view(tensors_.matrix(name, ne0, ne1));
}

DeviceWeights::Handle DeviceWeights::add_stacked(const std::string& name, int64_t ne0, int64_t ne1,
                                                 int64_t ne2) {
  return add_view(tensors_.stacked(name, ne0, ne1, ne2));
}

DeviceWeights::Handle DeviceWeights::add_vector(const std::string& name, int64_t n, bool required) {
  std::vector<float> v = tensors_.vector(name, n, required);
  Item it;
  it.is_vector = true;
  it.present = !v.empty();
  it.bytes = v.size() * sizeof(float);
  it.floats = std::move(v);
  items_.push_back(std::move(it));
  return items_.size() - 1;
}

DeviceWeights::Handle DeviceWeights::add_floats(std::vector<float> values) {
  Item it;
  it.is_vector = true;
  it.present = !values.empty();
  it.bytes = values.size() * sizeof(float);
  it.floats = std::move(values);
  items_.push_back(std::move(it));
  return items_.size() - 1;
}

void DeviceWeights::upload(uint64_t reserve_bytes, uint64_t extra_bytes, const std::string& model_path) {
  total_ = 0;
  for (Item& it : items_) {
    it.offset = total_;
    total_ += align_up(it.bytes);
  }
  size_t free_b = 0, total_b = 0;
  MOEPACK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const uint64_t needed = total_ + extra_bytes;
  if (needed + reserve_bytes > free_b) {
    throw Error("not enough VRAM for " + model_path + ": needed " + std::to_string(needed >> 20) +
                " MiB (weights " + std::to_string(total_ >> 20) + " MiB + KV cache and activations " +
                std::to_string(extra_bytes >> 20) + " MiB), free " + std::to_string(free_b >> 20) +
                " MiB, reserve (cache_vram_reserve_mib) " + std::to_string(reserve_bytes >> 20) +
                " MiB. Use an Expert Pack (moepack build) to keep routed experts on the SSD, lower n_ctx, or "
                "lower the "
                "reserve.");
  }
  buffer_.allocate(total_, "the model's resident weights");
  for (const Item& it : items_) {
    if (!it.present || it.bytes == 0) continue;
    const void* src =
        it.is_vector ? static_cast<const void*>(it.floats.data()) : static_cast<const void*>(it.view.data);
    MOEPACK_CUDA_CHECK(cudaMemcpy(buffer_.bytes_ptr() + it.offset, src, it.bytes, cudaMemcpyHostToDevice));
  }
}

DevMatrix DeviceWeights::matrix(Handle h) const {
  const Item& it = items_.at(h);
  if (it.is_vector) throw Error("internal: weight handle is a vector");
  return DevMatrix{it.view.type, it.view.ne0, it.view.ne1, it.view.row_bytes,
                   buffer_.bytes_ptr() + it.offset};
}

const float* DeviceWeights::vector(Handle h) const {
  const Item& it = items_.at(h);
  if (!it.is_vector) throw Error("internal: weight handle is a matrix");
  return it.present ? reinterpret_cast<const float*>(buffer_.bytes_ptr() + it.offset) : nullptr;
}

}  // namespace moepack::gpu
