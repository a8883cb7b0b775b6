#include "packbuilder/dense_gguf.h"

#include <cstring>

#include "core/checked.h"
#include "core/error.h"
#include "core/expert_pack.h"

namespace moepack {
namespace {

void put(std::vector<uint8_t>& b, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  b.insert(b.end(), c, c + n);
}
void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  uint8_t x[4];
  for (int k = 0; k < 4; ++k) x[k] = static_cast<uint8_t>(v >> (8 * k));
  put(b, x, 4);
}
void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  uint8_t x[8];
  for (int k = 0; k < 8; ++k) x[k] = static_cast<uint8_t>(v >> (8 * k));
  put(b, x, 8);
}
void put_str(std::vector<uint8_t>& b, const std::string& s) {
  put_u64(b, s.size());
  put(b, s.data(), s.size());
}

// End offset (exclusive) of a kv pair's encoded value in its file.
uint64_t value_end(const GgufKv& kv) {
  const GgufValue& v = kv.value;
  switch (v.type) {
    case GgufValueType::STRING:
      return kv.value_offset + 8 + v.s.size();
    case GgufValueType::ARRAY:
      return v.array->file_offset + v.array->encoded_bytes;
    default:
      return kv.value_offset + gguf_scalar_size(v.type);
  }
}

}  // namespace

DenseGgufPlan plan_dense_gguf(const GgufModel& model, const std::vector<GgufTensorRef>& tensors,
                              const std::string& build_id_hex) {
  const GgufFile& f = model.primary();
  DenseGgufPlan p;
  p.tensors = tensors;
  std::vector<uint8_t>& b = p.head;
  put(b, "GGUF", 4);
  put_u32(b, 3);
  put_u64(b, tensors.size());
  const size_t n_kv_at = b.size();
  put_u64(b, 0);  // n_kv, patched below
  uint64_t n_kv = 0;
  for (const GgufKv& kv : f.metadata()) {
    if (kv.key.rfind("split.", 0) == 0 || kv.key == kPackDenseBuildIdKey) continue;
    const uint64_t end = value_end(kv);
    if (end < kv.key_offset || end - kv.key_offset > (64ull << 20)) {
      throw FormatError(f.path(), "key \"" + kv.key + "\"", kv.key_offset, "encoded size out of range");
    }
    const size_t n = static_cast<size_t>(end - kv.key_offset);
    const size_t at = b.size();
    b.resize(at + n);
    f.source()->read(kv.key_offset, b.data() + at, n, "metadata key/value");
    n_kv++;
  }
  put_str(b, kPackDenseBuildIdKey);
  put_u32(b, static_cast<uint32_t>(GgufValueType::STRING));
  put_str(b, build_id_hex);
  n_kv++;
  for (int k = 0; k < 8; ++k) b[n_kv_at + static_cast<size_t>(k)] = static_cast<uint8_t>(n_kv >> (8 * k));

  const uint64_t align = f.alignment();
  uint64_t rel = 0;
  std::vector<uint64_t> rel_offsets;
  for (const GgufTensorRef& r : tensors) {
    const GgufTensorInfo& t = *r.info;
    put_str(b, t.name);
    put_u32(b, t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; ++d) put_u64(b, t.ne[d]);
    put_u32(b, static_cast<uint32_t>(t.type));
    put_u64(b, rel);
    rel_offsets.push_back(rel);
    const auto next = checked_add(rel, t.nbytes);
    const auto aligned = next ? checked_align_up(*next, align) : std::nullopt;
    if (!aligned) throw Error(f.path() + ": dense tensor data overflows 64 bits");
    rel = *aligned;
  }
  const auto data_start = checked_align_up(b.size(), align);
  b.resize(static_cast<size_t>(*data_start), 0);
  for (uint64_t o : rel_offsets) p.data_offsets.push_back(*data_start + o);
  p.file_bytes = *data_start + rel;  // ggml pads after every tensor, the last included
  return p;
}

}  // namespace moepack
