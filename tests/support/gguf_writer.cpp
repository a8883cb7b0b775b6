#include "tests/support/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace moepack::test {

std::optional<uint64_t> test_tensor_bytes(uint32_t type, uint64_t n_elements) {
  // {block size, bytes per block}, typed in from ggml-common.h.
  uint64_t blk = 0;
  uint64_t size = 0;
  switch (type) {
    case kF32: blk = 1; size = 4; break;
    case kF16: case kBF16: blk = 1; size = 2; break;
    case kI32: blk = 1; size = 4; break;
    case kQ4_0: blk = 32; size = 18; break;
    case kQ4_1: blk = 32; size = 20; break;
    case kQ5_0: blk = 32; size = 22; break;
    case kQ5_1: blk = 32; size = 24; break;
    case kQ8_0: blk = 32; size = 34; break;
    case kQ2_K: blk = 256; size = 84; break;
    case kQ3_K: blk = 256; size = 110; break;
    case kQ4_K: blk = 256; size = 144; break;
    case kQ5_K: blk = 256; size = 176; break;
    case kQ6_K: blk = 256; size = 210; break;
    case kQ8_K: blk = 256; size = 292; break;
    case kMXFP4: blk = 32; size = 17; break;
    default: return std::nullopt;
  }
  return n_elements / blk * size;
}

ByteBuf& ByteBuf::u8(uint8_t v) {
  bytes_.push_back(v);
  return *this;
}
ByteBuf& ByteBuf::u16(uint16_t v) {
  for (int k = 0; k < 2; ++k) bytes_.push_back(static_cast<uint8_t>(v >> (8 * k)));
  return *this;
}
ByteBuf& ByteBuf::u32(uint32_t v) {
  for (int k = 0; k < 4; ++k) bytes_.push_back(static_cast<uint8_t>(v >> (8 * k)));
  return *this;
}
ByteBuf& ByteBuf::u64(uint64_t v) {
  for (int k = 0; k < 8; ++k) bytes_.push_back(static_cast<uint8_t>(v >> (8 * k)));
  return *this;
}
ByteBuf& ByteBuf::f32(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  return u32(x);
}
ByteBuf& ByteBuf::f64(double v) {
  uint64_t x;
  std::memcpy(&x, &v, 8);
  return u64(x);
}
ByteBuf& ByteBuf::raw(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  bytes_.insert(bytes_.end(), b, b + n);
  return *this;
}
ByteBuf& ByteBuf::str(std::string_view s, std::optional<uint64_t> declared_len) {
  u64(declared_len.value_or(s.size()));
  return raw(s.data(), s.size());
}
ByteBuf& ByteBuf::zeros(size_t n) {
  bytes_.insert(bytes_.end(), n, 0);
  return *this;
}
ByteBuf& ByteBuf::pad_to(uint64_t alignment) {
  if (alignment == 0) return *this;
  while (bytes_.size() % alignment != 0) bytes_.push_back(0);
  return *this;
}

namespace TV {
namespace {
TestValue make(uint32_t type, const ByteBuf& b) { return TestValue{type, b.bytes()}; }
}  // namespace

TestValue u8(uint8_t v) { return make(kGgufU8, ByteBuf().u8(v)); }
TestValue i8(int8_t v) { return make(kGgufI8, ByteBuf().i8(v)); }
TestValue u16(uint16_t v) { return make(kGgufU16, ByteBuf().u16(v)); }
TestValue i16(int16_t v) { return make(kGgufI16, ByteBuf().i16(v)); }
TestValue u32(uint32_t v) { return make(kGgufU32, ByteBuf().u32(v)); }
TestValue i32(int32_t v) { return make(kGgufI32, ByteBuf().i32(v)); }
TestValue f32(float v) { return make(kGgufF32, ByteBuf().f32(v)); }
TestValue boolean(bool v) { return make(kGgufBool, ByteBuf().u8(v ? 1 : 0)); }
TestValue str(std::string_view s) { return make(kGgufString, ByteBuf().str(s)); }
TestValue u64(uint64_t v) { return make(kGgufU64, ByteBuf().u64(v)); }
TestValue i64(int64_t v) { return make(kGgufI64, ByteBuf().i64(v)); }
TestValue f64(double v) { return make(kGgufF64, ByteBuf().f64(v)); }

TestValue arr_u8(const std::vector<uint8_t>& v) {
  ByteBuf b;
  b.u32(kGgufU8).u64(v.size()).raw(v);
  return make(kGgufArray, b);
}
TestValue arr_i32(const std::vector<int32_t>& v) {
  ByteBuf b;
  b.u32(kGgufI32).u64(v.size());
  for (int32_t x : v) b.i32(x);
  return make(kGgufArray, b);
}
TestValue arr_u32(const std::vector<uint32_t>& v) {
  ByteBuf b;
  b.u32(kGgufU32).u64(v.size());
  for (uint32_t x : v) b.u32(x);
  return make(kGgufArray, b);
}
TestValue arr_f32(const std::vector<float>& v) {
  ByteBuf b;
  b.u32(kGgufF32).u64(v.size());
  for (float x : v) b.f32(x);
  return make(kGgufArray, b);
}
TestValue arr_str(const std::vector<std::string>& v) {
  ByteBuf b;
  b.u32(kGgufString).u64(v.size());
  for (const std::string& s : v) b.str(s);
  return make(kGgufArray, b);
}
TestValue array_of(uint32_t elem_type, const std::vector<TestValue>& elems) {
  ByteBuf b;
  b.u32(elem_type).u64(elems.size());
  for (const TestValue& e : elems) b.raw(e.payload);
  return make(kGgufArray, b);
}
TestValue array_raw(uint32_t elem_type, uint64_t count, std::vector<uint8_t> elements) {
  ByteBuf b;
  b.u32(elem_type).u64(count).raw(elements);
  return make(kGgufArray, b);
}
TestValue raw(uint32_t type, std::vector<uint8_t> payload) { return TestValue{type, std::move(payload)}; }
}  // namespace TV

GgufWriter& GgufWriter::kv(std::string key, TestValue value) {
  Kv k;
  k.key = std::move(key);
  k.value = std::move(value);
  kvs_.push_back(std::move(k));
  return *this;
}

GgufWriter& GgufWriter::kv_raw(std::vector<uint8_t> record) {
  Kv k;
  k.is_raw = true;
  k.record = std::move(record);
  kvs_.push_back(std::move(k));
  return *this;
}

GgufWriter& GgufWriter::tensor(TensorSpec spec) {
  Tensor t;
  t.spec = std::move(spec);
  tensors_.push_back(std::move(t));
  return *this;
}

GgufWriter& GgufWriter::tensor(std::string name, uint32_t type, std::vector<uint64_t> ne) {
  TensorSpec s;
  s.name = std::move(name);
  s.type = type;
  s.ne = std::move(ne);
  return tensor(std::move(s));
}

GgufWriter& GgufWriter::tensor_raw(std::vector<uint8_t> record) {
  Tensor t;
  t.is_raw = true;
  t.record = std::move(record);
  tensors_.push_back(std::move(t));
  return *this;
}

std::vector<uint8_t> GgufWriter::build(GgufLayout* layout) const {
  GgufLayout lay;
  ByteBuf b;
  b.raw("GGUF", 4).u32(version);
  b.u64(n_tensors_override.value_or(tensors_.size()));
  b.u64(n_kv_override.value_or(kvs_.size()));
  for (const Kv& k : kvs_) {
    lay.kv.push_back(b.size());
    if (k.is_raw) {
      lay.kv_type.push_back(0);
      lay.kv_value.push_back(0);
      b.raw(k.record);
      continue;
    }
    b.str(k.key);
    lay.kv_type.push_back(b.size());
    b.u32(k.value.type);
    lay.kv_value.push_back(b.size());
    b.raw(k.value.payload);
  }
  // Data placement: automatic offsets follow each other, aligned.
  uint64_t next = 0;
  std::vector<uint64_t> data_bytes;
  for (const Tensor& t : tensors_) {
    lay.tensor_info.push_back(b.size());
    if (t.is_raw) {
      lay.tensor_n_dims.push_back(0);
      lay.tensor_type.push_back(0);
      lay.tensor_offset_field.push_back(0);
      lay.tensor_offset.push_back(0);
      lay.tensor_bytes.push_back(0);
      b.raw(t.record);
      continue;
    }
    const TensorSpec& s = t.spec;
    b.str(s.name);
    lay.tensor_n_dims.push_back(b.size());
    b.u32(s.n_dims.value_or(static_cast<uint32_t>(s.ne.size())));
    uint64_t n = 1;
    for (uint64_t d : s.ne) {
      b.u64(d);
      n *= d;
    }
    lay.tensor_type.push_back(b.size());
    b.u32(s.type);
    uint64_t bytes = s.data_bytes.value_or(test_tensor_bytes(s.type, n).value_or(0));
    uint64_t off = s.offset.value_or(next);
    lay.tensor_offset_field.push_back(b.size());
    b.u64(off);
    lay.tensor_offset.push_back(off);
    lay.tensor_bytes.push_back(bytes);
    if (alignment != 0 && off + bytes >= next) {
      next = (off + bytes + alignment - 1) / alignment * alignment;
    }
  }
  lay.infos_end = b.size();
  b.pad_to(alignment);
  lay.data_start = b.size();
  if (write_data) {
    uint64_t end = 0;
    for (size_t k = 0; k < tensors_.size(); ++k) {
      if (tensors_[k].is_raw) continue;
      end = std::max(end, lay.tensor_offset[k] + lay.tensor_bytes[k]);
    }
    std::vector<uint8_t>& out = b.bytes();
    out.resize(static_cast<size_t>(lay.data_start + end), 0);
    for (size_t k = 0; k < tensors_.size(); ++k) {
      if (tensors_[k].is_raw || tensors_[k].spec.fill == 0) continue;
      std::memset(out.data() + lay.data_start + lay.tensor_offset[k], tensors_[k].spec.fill,
                  static_cast<size_t>(lay.tensor_bytes[k]));
    }
  }
  lay.file_size = b.size();
  if (layout != nullptr) *layout = lay;
  return b.bytes();
}

std::vector<uint8_t> truncate(std::vector<uint8_t> bytes, size_t n) {
  if (n < bytes.size()) bytes.resize(n);
  return bytes;
}

namespace {
void write_all(int fd, const uint8_t* p, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t r = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(path + ": pwrite failed: " + std::strerror(errno));
    }
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
}
}  // namespace

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_sparse_file(path, bytes, bytes.size());
}

void write_sparse_file(const std::string& path, const std::vector<uint8_t>& bytes,
                       uint64_t total_size,
                       const std::vector<std::pair<uint64_t, std::vector<uint8_t>>>& patches) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": open failed: " + std::strerror(errno));
  try {
    write_all(fd, bytes.data(), bytes.size(), 0, path);
    for (const auto& [off, b] : patches) write_all(fd, b.data(), b.size(), off, path);
    if (::ftruncate(fd, static_cast<off_t>(total_size)) != 0) {
      throw std::runtime_error(path + ": ftruncate failed: " + std::strerror(errno));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::vector<uint8_t> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": open failed: " + std::strerror(errno));
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      throw std::runtime_error(path + ": read failed: " + std::strerror(errno));
    }
    if (r == 0) break;
    out.insert(out.end(), buf, buf + r);
  }
  ::close(fd);
  return out;
}

TempDir::TempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error(tmpl + ": mkdtemp failed: " + std::strerror(errno));
  }
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace moepack::test
