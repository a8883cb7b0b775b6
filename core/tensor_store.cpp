#include "core/tensor_store.h"

#include "core/error.h"
#include "core/quants.h"

namespace moepack {

namespace {
std::string shape_text(const std::array<uint64_t, 4>& ne, uint32_t n_dims) {
  std::string s = "[";
  for (uint32_t i = 0; i < std::max<uint32_t>(n_dims, 1); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}
}  // namespace

const GgufTensorRef& TensorStore::ref(const std::string& name) const {
  const GgufTensorRef* r = model_.find_tensor(name);
  if (!r) {
    throw FormatError(model_.primary().path(), name, 0, "tensor is missing (the architecture needs it)");
  }
  return *r;
}

std::array<uint64_t, 4> TensorStore::shape(const std::string& name) const { return ref(name).info->ne; }

void TensorStore::bad_shape(const GgufTensorRef& r, const std::string& expected) const {
  throw FormatError(model_.shards()[r.shard].path(), r.info->name, r.info->info_offset,
                    "shape " + shape_text(r.info->ne, r.info->n_dims) + " (" +
                        std::string(ggml_type_name(r.info->type)) + "), expected " + expected);
}

const uint8_t* TensorStore::load(const GgufTensorRef& r) {
  if (!quant_supported(r.info->type)) {
    throw FormatError(model_.shards()[r.shard].path(), r.info->name, r.info->info_offset,
                      "tensor type " + std::string(ggml_type_name(r.info->type)) + " is not supported by the engine");
  }
  buffers_.emplace_back(static_cast<size_t>(r.info->nbytes));
  model_.shards()[r.shard].read_tensor_data(*r.info, 0, buffers_.back().data(), buffers_.back().size());
  resident_bytes_ += r.info->nbytes;
  return buffers_.back().data();
}

WeightView TensorStore::matrix(const std::string& name, int64_t ne0, int64_t ne1, bool required) {
  if (!required && !has(name)) return {};
  const GgufTensorRef& r = ref(name);
  const auto& ne = r.info->ne;
  if (ne[0] != static_cast<uint64_t>(ne0) || ne[1] != static_cast<uint64_t>(ne1) || ne[2] != 1 || ne[3] != 1) {
    bad_shape(r, "[" + std::to_string(ne0) + ", " + std::to_string(ne1) + "]");
  }
  WeightView w;
  w.type = r.info->type;
  w.ne0 = ne0;
  w.ne1 = ne1;
  const auto rb = ggml_row_bytes(w.type, static_cast<uint64_t>(ne0));
  if (!rb) bad_shape(r, "rows that are whole blocks of " + std::string(ggml_type_name(w.type)));
  w.row_bytes = static_cast<size_t>(*rb);
  w.data = load(r);
  return w;
}

WeightView TensorStore::stacked(const std::string& name, int64_t ne0, int64_t ne1, int64_t ne2) {
  const GgufTensorRef& r = ref(name);
  const auto& ne = r.info->ne;
  if (ne[0] != static_cast<uint64_t>(ne0) || ne[1] != static_cast<uint64_t>(ne1) ||
      ne[2] != static_cast<uint64_t>(ne2) || ne[3] != 1) {
    bad_shape(r, "[" + std::to_string(ne0) + ", " + std::to_string(ne1) + ", " + std::to_string(ne2) + "]");
  }
  WeightView w;
  w.type = r.info->type;
  w.ne0 = ne0;
  w.ne1 = ne1 * ne2;
  const auto rb = ggml_row_bytes(w.type, static_cast<uint64_t>(ne0));
  if (!rb) bad_shape(r, "rows that are whole blocks of " + std::string(ggml_type_name(w.type)));
  w.row_bytes = static_cast<size_t>(*rb);
  w.data = load(r);
  return w;
}

std::vector<float> TensorStore::vector(const std::string& name, int64_t n, bool required) {
  if (!required && !has(name)) return {};
  const GgufTensorRef& r = ref(name);
  if (r.info->n_elements() != static_cast<uint64_t>(n) || r.info->ne[0] != static_cast<uint64_t>(n)) {
    bad_shape(r, "[" + std::to_string(n) + "]");
  }
  std::vector<float> out(static_cast<size_t>(n));
  std::vector<uint8_t> raw(static_cast<size_t>(r.info->nbytes));
  model_.shards()[r.shard].read_tensor_data(*r.info, 0, raw.data(), raw.size());
  dequantize_row(r.info->type, raw.data(), out.data(), n);
  return out;
}

}  // namespace moepack
