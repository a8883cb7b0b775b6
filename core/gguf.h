// GGUF reader: metadata and tensor directory of one GGUF file, without reading tensor data.
//
// Byte layout (GGUF v2/v3, little-endian; ggml/docs/gguf.md and ggml/src/gguf.cpp):
//
//   offset  size  field
//   0       4     magic "GGUF"
//   4       4     version (u32): 2 or 3 (v1 used 32-bit counts and is rejected)
//   8       8     n_tensors (u64)
//   16      8     n_kv (u64)
//   24      ...   n_kv key/value pairs:
//                   key:   gguf_string = u64 length + bytes (no NUL)
//                   type:  u32 gguf_type (UINT8=0 INT8=1 UINT16=2 INT16=3 UINT32=4 INT32=5
//                          FLOAT32=6 BOOL=7 STRING=8 ARRAY=9 UINT64=10 INT64=11 FLOAT64=12)
//                   value: scalar of that type | gguf_string |
//                          array = u32 element type + u64 count + elements (arrays may nest)
//           ...   n_tensors tensor infos:
//                   name:   gguf_string (1..63 bytes, unique)
//                   n_dims: u32 (1..4)
//                   ne:     n_dims x u64, ne[0] fastest-varying (elements per row)
//                   type:   u32 ggml_type (see ggml_type.h)
//                   offset: u64, relative to the data section, a multiple of the alignment
//           pad   to `general.alignment` (u32 metadata key, default 32, a power of two)
//   data_start    tensor data; tensor i occupies [data_start + offset_i, + nbytes_i)
//
// Trust nothing: every count, length and offset is range-checked with overflow-checked
// arithmetic before use and capped (GgufLimits) before anything is allocated. Arrays larger
// than `max_inline_array_bytes` are not loaded; only their location is kept and
// GgufFile::load_array() reads them on demand, so parsing any file costs bounded memory.
// Every rejection is a FormatError naming the file, the field and the absolute byte offset.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/byte_source.h"
#include "core/ggml_type.h"

namespace moepack {

enum class GgufValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

std::string_view gguf_value_type_name(GgufValueType t);

// Bytes of one scalar element in the file; 0 for STRING and ARRAY.
uint32_t gguf_scalar_size(GgufValueType t);

struct GgufLimits {
  uint64_t max_tensors = 1u << 18;                  // tensor infos per file
  uint64_t max_kv = 1u << 16;                       // metadata pairs per file
  uint64_t max_key_bytes = 1u << 16;                // one key
  uint64_t max_string_bytes = 16ull << 20;          // one string value
  uint64_t max_inline_array_bytes = 1ull << 20;     // larger arrays stay on disk (lazy)
  uint64_t max_metadata_bytes = 24ull << 20;        // everything materialised, in total
  uint32_t max_array_depth = 8;                     // nesting of arrays of arrays
};

struct GgufArray {
  GgufValueType elem_type = GgufValueType::UINT8;
  uint64_t count = 0;
  uint64_t file_offset = 0;    // absolute offset of the first element
  uint64_t encoded_bytes = 0;  // bytes the elements occupy in the file
  bool resident = false;       // elements below are loaded
  std::vector<uint8_t> raw;          // scalar elements, little-endian, as in the file
  std::vector<std::string> strings;  // STRING elements
  std::vector<GgufArray> arrays;     // ARRAY elements

  // Element i of a resident scalar array converted to the requested kind; throws Error if
  // the array is not resident, i is out of range or the element type does not convert.
  int64_t int_at(uint64_t i) const;
  double float_at(uint64_t i) const;
};

struct GgufValue {
  GgufValueType type = GgufValueType::UINT8;
  uint64_t u = 0;   // UINT8..UINT64 and BOOL
  int64_t i = 0;    // INT8..INT64
  double f = 0;     // FLOAT32, FLOAT64
  std::string s;    // STRING
  std::shared_ptr<GgufArray> array;  // ARRAY

  bool is_integer() const;
  bool is_float() const { return type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64; }
};

struct GgufKv {
  std::string key;
  uint64_t key_offset = 0;    // absolute offset of the key's length field
  uint64_t value_offset = 0;  // absolute offset of the value
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  uint32_t n_dims = 0;
  std::array<uint64_t, 4> ne{1, 1, 1, 1};  // elements per dimension, ne[0] fastest; unused = 1
  uint64_t offset = 0;       // relative to the data section, as written in the file
  uint64_t file_offset = 0;  // absolute: data_start + offset
  uint64_t nbytes = 0;       // bytes of tensor data
  uint64_t info_offset = 0;  // absolute offset of this tensor's info record

  uint64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Parses the file at `path`. Throws IoError (cannot open/read) or FormatError (malformed).
  static GgufFile open(const std::string& path, const GgufLimits& limits = {});
  // Parses a source (e.g. make_memory_source for tests and fuzzing).
  static GgufFile parse(std::shared_ptr<ByteSource> source, const GgufLimits& limits = {});

  const std::string& path() const { return source_->name(); }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return source_->size(); }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_start() const { return data_start_; }
  // Bytes of metadata the parser materialised (counted against max_metadata_bytes).
  uint64_t metadata_bytes() const { return metadata_bytes_; }

  const std::vector<GgufKv>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufKv* find(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: nullopt when the key is absent; FormatError (naming the key's offset)
  // when present with an incompatible type or out of range.
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;  // any numeric type
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  const GgufArray* get_array(std::string_view key) const;

  // Returns `array` with its elements loaded (reading them from the file if it was not
  // resident). `max_bytes` caps the encoded size; FormatError if exceeded.
  GgufArray load_array(const GgufArray& array, uint64_t max_bytes = 1ull << 30) const;

  // Reads `n` bytes of `tensor`'s data starting `offset` bytes into it.
  void read_tensor_data(const GgufTensorInfo& tensor, uint64_t offset, void* dst, size_t n) const;

  const std::shared_ptr<ByteSource>& source() const { return source_; }

 private:
  friend class GgufParser;
  std::shared_ptr<ByteSource> source_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_start_ = 0;
  uint64_t metadata_bytes_ = 0;
  std::vector<GgufKv> kv_;
  std::vector<GgufTensorInfo> tensors_;
};

// "general.alignment" default when the key is absent (ggml's GGUF_DEFAULT_ALIGNMENT).
inline constexpr uint64_t kGgufDefaultAlignment = 32;
// Longest tensor name ggml accepts (GGML_MAX_NAME - 1).
inline constexpr uint64_t kGgufMaxTensorName = 63;

}  // namespace moepack
