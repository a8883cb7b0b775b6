// A tiny GGUF writer for tests: writes valid files and, on purpose, broken ones.
//
// It does not use core/ (it must not share bugs with the reader it tests): the byte layout is
// written out here from ggml/docs/gguf.md, and the few ggml type sizes it knows are typed in
// from ggml-common.h. Everything is little-endian.
//
//   header   "GGUF" | u32 version | u64 n_tensors | u64 n_kv          (24 bytes)
//   kv       u64 key_len | key | u32 value_type | value
//   value    scalar | u64 len + bytes (string) | u32 elem_type + u64 count + elems (array)
//   tensor   u64 name_len | name | u32 n_dims | n_dims x u64 ne | u32 ggml_type | u64 offset
//   padding  zeros up to `alignment`, then the data section
//
// Typical use:
//
//   GgufWriter w;                                   // version 3, alignment 32
//   w.kv("general.architecture", TV::str("llama"));
//   w.kv("llama.block_count", TV::u32(4));
//   w.tensor("blk.0.ffn_up.weight", kQ4K, {256, 8});  // offset and size computed
//   GgufLayout lay;
//   std::vector<uint8_t> bytes = w.build(&lay);     // lay says where every field landed
//
// Broken files: set `version`, `n_tensors_override`, `n_kv_override`; pass any raw value type
// id and payload (TV::raw); give a TensorSpec an explicit n_dims / offset / data size; append
// raw records (kv_raw / tensor_raw); cut the result with truncate(). Values nest freely
// (TV::array_of). write_file() / write_sparse_file() put bytes on disk; TempDir cleans up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moepack::test {

// GGUF metadata value type ids (gguf.md).
enum : uint32_t {
  kGgufU8 = 0, kGgufI8 = 1, kGgufU16 = 2, kGgufI16 = 3, kGgufU32 = 4, kGgufI32 = 5,
  kGgufF32 = 6, kGgufBool = 7, kGgufString = 8, kGgufArray = 9, kGgufU64 = 10, kGgufI64 = 11,
  kGgufF64 = 12,
};

// A few ggml tensor type ids (ggml.h).
enum : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ2_K = 10,
  kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15, kI32 = 26, kBF16 = 30,
  kMXFP4 = 39,
};

// Bytes of data for a tensor of `type` with `n_elements` elements (ne[0] a multiple of the
// block size), from a hand-typed table of the types above; nullopt for other types.
std::optional<uint64_t> test_tensor_bytes(uint32_t type, uint64_t n_elements);

// Little-endian byte buffer with the GGUF primitives.
class ByteBuf {
 public:
  ByteBuf& u8(uint8_t v);
  ByteBuf& u16(uint16_t v);
  ByteBuf& u32(uint32_t v);
  ByteBuf& u64(uint64_t v);
  ByteBuf& i8(int8_t v) { return u8(static_cast<uint8_t>(v)); }
  ByteBuf& i16(int16_t v) { return u16(static_cast<uint16_t>(v)); }
  ByteBuf& i32(int32_t v) { return u32(static_cast<uint32_t>(v)); }
  ByteBuf& i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  ByteBuf& f32(float v);
  ByteBuf& f64(double v);
  ByteBuf& raw(const void* p, size_t n);
  ByteBuf& raw(const std::vector<uint8_t>& b) { return raw(b.data(), b.size()); }
  // gguf_string: u64 length + bytes. `declared_len` overrides the length field (broken files).
  ByteBuf& str(std::string_view s, std::optional<uint64_t> declared_len = std::nullopt);
  ByteBuf& zeros(size_t n);
  ByteBuf& pad_to(uint64_t alignment);  // zeros up to a multiple of `alignment`

  uint64_t size() const { return bytes_.size(); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// One metadata value as written: its type id (any u32, valid or not) and the encoded bytes that
// follow the type field. Build with the factories below; TV::raw writes anything.
struct TestValue {
  uint32_t type = kGgufU8;
  std::vector<uint8_t> payload;
};

namespace TV {
TestValue u8(uint8_t v);
TestValue i8(int8_t v);
TestValue u16(uint16_t v);
TestValue i16(int16_t v);
TestValue u32(uint32_t v);
TestValue i32(int32_t v);
TestValue f32(float v);
TestValue boolean(bool v);
TestValue str(std::string_view s);
TestValue u64(uint64_t v);
TestValue i64(int64_t v);
TestValue f64(double v);
// Arrays of scalars / strings.
TestValue arr_u8(const std::vector<uint8_t>& v);
TestValue arr_i32(const std::vector<int32_t>& v);
TestValue arr_u32(const std::vector<uint32_t>& v);
TestValue arr_f32(const std::vector<float>& v);
TestValue arr_str(const std::vector<std::string>& v);
// Array whose elements are `elems` (all must share elem_type; their type ids are not repeated
// per element, as in GGUF). Nest arrays by passing arrays as elements.
TestValue array_of(uint32_t elem_type, const std::vector<TestValue>& elems);
// Array header with any element type and count, followed by `elements` bytes as given.
TestValue array_raw(uint32_t elem_type, uint64_t count, std::vector<uint8_t> elements = {});
// Any type id with any payload.
TestValue raw(uint32_t type, std::vector<uint8_t> payload = {});
}  // namespace TV

struct TensorSpec {
  TensorSpec() = default;
  TensorSpec(std::string name_, uint32_t type_, std::vector<uint64_t> ne_)
      : name(std::move(name_)), type(type_), ne(std::move(ne_)) {}
  TensorSpec& with_n_dims(uint32_t n) { n_dims = n; return *this; }
  TensorSpec& with_offset(uint64_t o) { offset = o; return *this; }
  TensorSpec& with_data_bytes(uint64_t b) { data_bytes = b; return *this; }
  TensorSpec& with_fill(uint8_t f) { fill = f; return *this; }

  std::string name;
  uint32_t type = kF32;
  std::vector<uint64_t> ne;            // written as given, ne[0] first
  std::optional<uint32_t> n_dims;      // written n_dims; default ne.size()
  std::optional<uint64_t> offset;      // relative to the data section; default: next aligned
  std::optional<uint64_t> data_bytes;  // bytes reserved in the data section; default from type
  uint8_t fill = 0;                    // data byte value
};

// Where build() put things (absolute byte offsets in the file).
struct GgufLayout {
  std::vector<uint64_t> kv;            // each kv's key length field
  std::vector<uint64_t> kv_type;       // each kv's value type field
  std::vector<uint64_t> kv_value;      // each kv's value (after the type)
  std::vector<uint64_t> tensor_info;   // each tensor info's name length field
  std::vector<uint64_t> tensor_n_dims;
  std::vector<uint64_t> tensor_type;
  std::vector<uint64_t> tensor_offset_field;
  std::vector<uint64_t> tensor_offset;  // relative offset written
  std::vector<uint64_t> tensor_bytes;   // data bytes reserved
  uint64_t infos_end = 0;   // first byte after the last tensor info
  uint64_t data_start = 0;  // infos_end rounded up to the alignment
  uint64_t file_size = 0;
};

class GgufWriter {
 public:
  uint32_t version = 3;
  uint64_t alignment = 32;  // padding and automatic offsets; write general.alignment yourself
  std::optional<uint64_t> n_tensors_override;
  std::optional<uint64_t> n_kv_override;
  bool write_data = true;   // false: stop after the padding (no tensor data)

  GgufWriter& kv(std::string key, TestValue value);
  // A kv record written verbatim (key, type and value), e.g. a truncated or malformed one.
  GgufWriter& kv_raw(std::vector<uint8_t> record);
  GgufWriter& tensor(TensorSpec spec);
  GgufWriter& tensor(std::string name, uint32_t type, std::vector<uint64_t> ne);
  // A tensor info record written verbatim (no data reserved for it).
  GgufWriter& tensor_raw(std::vector<uint8_t> record);

  // The file's bytes; fills `layout` if given.
  std::vector<uint8_t> build(GgufLayout* layout = nullptr) const;

 private:
  struct Kv {
    bool is_raw = false;
    std::string key;
    TestValue value;
    std::vector<uint8_t> record;
  };
  struct Tensor {
    bool is_raw = false;
    TensorSpec spec;
    std::vector<uint8_t> record;
  };
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

// Returns `bytes` cut to its first `n` bytes.
std::vector<uint8_t> truncate(std::vector<uint8_t> bytes, size_t n);

// Writes `bytes` to `path` (created or replaced). Throws std::runtime_error on failure.
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
// Writes `bytes` at offset 0 and makes the file `total_size` bytes long without writing the
// rest (a sparse hole on most file systems). `patches` are further (offset, bytes) writes.
void write_sparse_file(const std::string& path, const std::vector<uint8_t>& bytes,
                       uint64_t total_size,
                       const std::vector<std::pair<uint64_t, std::vector<uint8_t>>>& patches = {});
std::vector<uint8_t> read_file(const std::string& path);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "moepack-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace moepack::test
