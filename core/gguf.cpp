#include "core/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/checked.h"
#include "core/error.h"

namespace moepack {

std::string_view gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8: return "uint8";
    case GgufValueType::INT8: return "int8";
    case GgufValueType::UINT16: return "uint16";
    case GgufValueType::INT16: return "int16";
    case GgufValueType::UINT32: return "uint32";
    case GgufValueType::INT32: return "int32";
    case GgufValueType::FLOAT32: return "float32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "uint64";
    case GgufValueType::INT64: return "int64";
    case GgufValueType::FLOAT64: return "float64";
  }
  return "?";
}

uint32_t gguf_scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64: return 8;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY: return 0;
  }
  return 0;
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16:
    case GgufValueType::INT16: case GgufValueType::UINT32: case GgufValueType::INT32:
    case GgufValueType::UINT64: case GgufValueType::INT64: return true;
    default: return false;
  }
}

namespace {

constexpr uint32_t kMaxValueType = 12;

bool is_signed(GgufValueType t) {
  return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
         t == GgufValueType::INT64;
}

// Decodes one little-endian scalar of type t from p into v.
void decode_scalar(GgufValueType t, const uint8_t* p, GgufValue& v) {
  v.type = t;
  switch (t) {
    case GgufValueType::UINT8: v.u = p[0]; break;
    case GgufValueType::BOOL: v.u = p[0]; break;
    case GgufValueType::INT8: v.i = static_cast<int8_t>(p[0]); break;
    case GgufValueType::UINT16: { uint16_t x; std::memcpy(&x, p, 2); v.u = x; break; }
    case GgufValueType::INT16: { int16_t x; std::memcpy(&x, p, 2); v.i = x; break; }
    case GgufValueType::UINT32: { uint32_t x; std::memcpy(&x, p, 4); v.u = x; break; }
    case GgufValueType::INT32: { int32_t x; std::memcpy(&x, p, 4); v.i = x; break; }
    case GgufValueType::FLOAT32: { float x; std::memcpy(&x, p, 4); v.f = x; break; }
    case GgufValueType::UINT64: { uint64_t x; std::memcpy(&x, p, 8); v.u = x; break; }
    case GgufValueType::INT64: { int64_t x; std::memcpy(&x, p, 8); v.i = x; break; }
    case GgufValueType::FLOAT64: { double x; std::memcpy(&x, p, 8); v.f = x; break; }
    default: break;
  }
}


// Sequential reader over a ByteSource with a small buffer; tracks the absolute position.
class Cursor {
 public:
  explicit Cursor(const ByteSource& src, uint64_t pos = 0) : src_(src), pos_(pos) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return src_.size() - pos_; }
  const std::string& file() const { return src_.name(); }

  void read(void* dst, size_t n, const char* field) {
    if (!range_inside(pos_, n, src_.size())) src_.read(pos_, dst, n, field);  // throws
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
      if (pos_ >= buf_start_ && pos_ < buf_start_ + buf_len_) {
        const size_t off = static_cast<size_t>(pos_ - buf_start_);
        const size_t take = std::min(n, buf_len_ - off);
        std::memcpy(out, buf_.data() + off, take);
        out += take;
        n -= take;
        pos_ += take;
      } else if (n >= buf_.size()) {  // large read: straight through
        src_.read(pos_, out, n, field);
        pos_ += n;
        return;
      } else {
        buf_start_ = pos_;
        buf_len_ = static_cast<size_t>(std::min<uint64_t>(buf_.size(), src_.size() - pos_));
        src_.read(buf_start_, buf_.data(), buf_len_, field);
      }
    }
  }

  template <typename T>
  T read_le(const char* field) {
    T v;
    read(&v, sizeof v, field);
    return v;
  }

  void skip(uint64_t n, const char* field) {
    // Never read into a scratch byte here: with more than 1 byte left, a "probe" read of
    // min(n, 1 MiB) bytes would succeed and overrun it.
    if (n > remaining()) {
      throw FormatError(src_.name(), field, pos_,
                        "truncated: needs " + std::to_string(n) + " bytes but the file has " +
                            std::to_string(remaining()) + " left" + truncated_hint(n));
    }
    pos_ += n;
  }

 private:
  const ByteSource& src_;
  uint64_t pos_;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(1u << 16);
  uint64_t buf_start_ = 0;
  size_t buf_len_ = 0;
};

}  // namespace

// Does the parsing; a friend of GgufFile.
class GgufParser {
 public:
  GgufParser(GgufFile& out, const GgufLimits& limits)
      : out_(out), limits_(limits), cur_(*out.source_) {}

  void run() {
    parse_header();
    parse_kv();
    parse_alignment();
    parse_tensor_infos();
    place_tensors();
  }

  // Reads the elements of `a` (already sized and located) from the file into memory.
  static void load_elements(const ByteSource& src, GgufArray& a, uint32_t depth,
                            const GgufLimits& limits);

 private:
  [[noreturn]] void fail(const std::string& field, uint64_t offset, const std::string& what) const {
    throw FormatError(cur_.file(), field, offset, what);
  }

  void charge(uint64_t bytes, const std::string& field, uint64_t offset) {
    auto total = checked_add(out_.metadata_bytes_, bytes);
    if (!total || *total > limits_.max_metadata_bytes) {
      fail(field, offset, "metadata exceeds the limit of " +
                              std::to_string(limits_.max_metadata_bytes) + " bytes in memory");
    }
    out_.metadata_bytes_ = *total;
  }

  void parse_header() {
    const uint64_t size = out_.source_->size();
    if (size < 24) {
      // A short file that does not even start as GGUF is not a cut GGUF (a text file, say).
      char head[4] = {};
      const size_t n = static_cast<size_t>(std::min<uint64_t>(size, 4));
      if (n > 0) cur_.read(head, n, "magic");
      if (std::memcmp(head, "GGUF", n) != 0) fail("magic", 0, "not a GGUF file (magic is not \"GGUF\")");
      fail("header", 0,
           "file is " + std::to_string(size) + " bytes, a GGUF header needs 24" + truncated_hint(0));
    }
    char magic[4];
    cur_.read(magic, 4, "magic");
    if (std::memcmp(magic, "GGUF", 4) != 0) fail("magic", 0, "not a GGUF file (magic is not \"GGUF\")");
    const uint32_t version = cur_.read_le<uint32_t>("version");
    if (version == 1) fail("version", 4, "GGUF v1 is not supported (only v2 and v3)");
    if (version == 0x02000000u || version == 0x03000000u) {
      fail("version", 4, "big-endian GGUF is not supported");
    }
    if (version != 2 && version != 3) {
      fail("version", 4, "unsupported GGUF version " + std::to_string(version) + " (only v2 and v3)");
    }
    out_.version_ = version;
    n_tensors_ = cur_.read_le<uint64_t>("n_tensors");
    n_kv_ = cur_.read_le<uint64_t>("n_kv");
    // Smallest possible records: tensor info = 8 (len) + 1 (name) + 4 (n_dims) + 8 (ne) +
    // 4 (type) + 8 (offset); kv = 8 (len) + 1 (key) + 4 (type) + 1 (u8 value).
    const uint64_t left = cur_.remaining();
    if (n_tensors_ > limits_.max_tensors || n_tensors_ > left / 33) {
      fail("n_tensors", 8,
           "declares " + std::to_string(n_tensors_) + " tensors; the limit is " +
               std::to_string(std::min<uint64_t>(limits_.max_tensors, left / 33)) + " for this file" +
               (n_tensors_ <= limits_.max_tensors ? truncated_hint(0) : std::string()));
    }
    if (n_kv_ > limits_.max_kv || n_kv_ > left / 14) {
      fail("n_kv", 16,
           "declares " + std::to_string(n_kv_) + " metadata pairs; the limit is " +
               std::to_string(std::min<uint64_t>(limits_.max_kv, left / 14)) + " for this file" +
               (n_kv_ <= limits_.max_kv ? truncated_hint(0) : std::string()));
    }
  }

  std::string read_string(const std::string& field, uint64_t max_bytes) {
    const uint64_t at = cur_.pos();
    const uint64_t len = cur_.read_le<uint64_t>(field.c_str());
    if (len > max_bytes) {
      fail(field, at, "string length " + std::to_string(len) + " exceeds the limit of " +
                          std::to_string(max_bytes) + " bytes");
    }
    if (len > cur_.remaining()) {
      fail(field, at,
           "string length " + std::to_string(len) + " runs past the end of the file (" +
               std::to_string(cur_.remaining()) + " bytes left)" + truncated_hint(len));
    }
    charge(len + 32, field, at);
    std::string s(static_cast<size_t>(len), '\0');
    cur_.read(s.data(), s.size(), field.c_str());
    return s;
  }

  GgufValueType read_type(const std::string& field) {
    const uint64_t at = cur_.pos();
    const uint32_t t = cur_.read_le<uint32_t>(field.c_str());
    if (t > kMaxValueType) fail(field, at, "invalid value type " + std::to_string(t));
    return static_cast<GgufValueType>(t);
  }

  // Reads an array header and measures its elements (recursing into nested arrays) without
  // keeping them; leaves the cursor after the array.
  GgufArray measure_array(const std::string& field, uint32_t depth) {
    if (depth > limits_.max_array_depth) {
      fail(field, cur_.pos(), "arrays nested deeper than " + std::to_string(limits_.max_array_depth));
    }
    GgufArray a;
    a.elem_type = read_type(field + " (array element type)");
    const uint64_t count_at = cur_.pos();
    a.count = cur_.read_le<uint64_t>((field + " (array count)").c_str());
    a.file_offset = cur_.pos();
    const uint32_t es = gguf_scalar_size(a.elem_type);
    const uint64_t min_elem = es != 0 ? es : (a.elem_type == GgufValueType::STRING ? 8 : 12);
    if (a.count > cur_.remaining() / min_elem) {
      fail(field, count_at,
           "array of " + std::to_string(a.count) + " " + std::string(gguf_value_type_name(a.elem_type)) +
               " elements runs past the end of the file" +
               truncated_hint(a.count < (uint64_t{1} << 40) / min_elem ? a.count * min_elem : ~uint64_t{0}));
    }
    if (es != 0) {
      a.encoded_bytes = a.count * es;  // cannot overflow: count <= remaining / es
      cur_.skip(a.encoded_bytes, field.c_str());
    } else if (a.elem_type == GgufValueType::STRING) {
      for (uint64_t k = 0; k < a.count; ++k) {
        const uint64_t at = cur_.pos();
        const uint64_t len = cur_.read_le<uint64_t>(field.c_str());
        if (len > limits_.max_string_bytes) {
          fail(field + "[" + std::to_string(k) + "]", at,
               "string length " + std::to_string(len) + " exceeds the limit of " +
                   std::to_string(limits_.max_string_bytes) + " bytes");
        }
        if (len > cur_.remaining()) {
          fail(field + "[" + std::to_string(k) + "]", at,
               "string length " + std::to_string(len) + " runs past the end of the file (" +
                   std::to_string(cur_.remaining()) + " bytes left)" + truncated_hint(len));
        }
        cur_.skip(len, field.c_str());
      }
      a.encoded_bytes = cur_.pos() - a.file_offset;
    } else {
      for (uint64_t k = 0; k < a.count; ++k) {
        measure_array(field + "[" + std::to_string(k) + "]", depth + 1);
      }
      a.encoded_bytes = cur_.pos() - a.file_offset;
    }
    return a;
  }

  GgufValue read_value(GgufValueType t, const std::string& field) {
    GgufValue v;
    v.type = t;
    if (t == GgufValueType::STRING) {
      v.s = read_string(field, limits_.max_string_bytes);
    } else if (t == GgufValueType::ARRAY) {
      const uint64_t at = cur_.pos();
      auto a = std::make_shared<GgufArray>(measure_array(field, 1));
      if (a->encoded_bytes <= limits_.max_inline_array_bytes) {
        // Memory cost: the bytes plus per-string / per-array bookkeeping.
        charge(a->encoded_bytes * 5 + 64, field, at);
        load_elements(*out_.source_, *a, 1, limits_);
      }
      v.array = std::move(a);
    } else {
      uint8_t buf[8];
      cur_.read(buf, gguf_scalar_size(t), field.c_str());
      decode_scalar(t, buf, v);
    }
    return v;
  }

  void parse_kv() {
    std::unordered_set<std::string> seen;
    out_.kv_.reserve(static_cast<size_t>(n_kv_));
    for (uint64_t k = 0; k < n_kv_; ++k) {
      GgufKv kv;
      kv.key_offset = cur_.pos();
      const std::string idx = "metadata[" + std::to_string(k) + "]";
      kv.key = read_string(idx + " key", limits_.max_key_bytes);
      if (kv.key.empty()) fail(idx + " key", kv.key_offset, "empty key");
      if (!seen.insert(kv.key).second) fail("key \"" + kv.key + "\"", kv.key_offset, "duplicate key");
      const std::string field = "key \"" + kv.key + "\"";
      const GgufValueType t = read_type(field + " (value type)");
      kv.value_offset = cur_.pos();
      kv.value = read_value(t, field);
      charge(sizeof(GgufKv), field, kv.key_offset);
      out_.kv_.push_back(std::move(kv));
    }
  }

  void parse_alignment() {
    const GgufKv* kv = out_.find("general.alignment");
    if (kv == nullptr) return;
    if (!kv->value.is_integer() || is_signed(kv->value.type)) {
      fail("key \"general.alignment\"", kv->value_offset,
           "must be an unsigned integer, found " + std::string(gguf_value_type_name(kv->value.type)));
    }
    const uint64_t a = kv->value.u;
    if (!is_power_of_two(a) || a > (1u << 30)) {
      fail("key \"general.alignment\"", kv->value_offset,
           "alignment " + std::to_string(a) + " is not a nonzero power of two up to 2^30");
    }
    out_.alignment_ = a;
  }

  void parse_tensor_infos() {
    std::unordered_set<std::string> names;
    out_.tensors_.reserve(static_cast<size_t>(n_tensors_));
    for (uint64_t k = 0; k < n_tensors_; ++k) {
      GgufTensorInfo ti;
      ti.info_offset = cur_.pos();
      const std::string idx = "tensor[" + std::to_string(k) + "]";
      ti.name = read_string(idx + " name", kGgufMaxTensorName);
      if (ti.name.empty()) fail(idx + " name", ti.info_offset, "empty tensor name");
      if (!names.insert(ti.name).second) {
        fail("tensor \"" + ti.name + "\" name", ti.info_offset, "duplicate tensor name");
      }
      const std::string field = "tensor \"" + ti.name + "\"";
      const uint64_t dims_at = cur_.pos();
      ti.n_dims = cur_.read_le<uint32_t>((field + " n_dims").c_str());
      if (ti.n_dims < 1 || ti.n_dims > 4) {
        fail(field + " n_dims", dims_at, "n_dims is " + std::to_string(ti.n_dims) + ", must be 1..4");
      }
      uint64_t n_el = 1;
      for (uint32_t d = 0; d < ti.n_dims; ++d) {
        const uint64_t at = cur_.pos();
        const uint64_t ne = cur_.read_le<uint64_t>((field + " ne").c_str());
        if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          fail(field + " ne[" + std::to_string(d) + "]", at, "dimension " + std::to_string(ne) + " is negative as int64");
        }
        auto p = checked_mul(n_el, ne);
        if (!p || *p > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          fail(field + " ne[" + std::to_string(d) + "]", at, "element count overflows int64");
        }
        n_el = *p;
        ti.ne[d] = ne;
      }
      const uint64_t type_at = cur_.pos();
      const uint32_t type_id = cur_.read_le<uint32_t>((field + " type").c_str());
      const auto traits = ggml_type_traits(type_id);
      if (!traits) fail(field + " type", type_at, "unknown ggml type id " + std::to_string(type_id));
      ti.type = static_cast<GgmlType>(type_id);
      if (ti.ne[0] % traits->block_size != 0) {
        fail(field + " ne[0]", dims_at + 4,
             "row of " + std::to_string(ti.ne[0]) + " elements is not a multiple of the " +
                 std::string(traits->name) + " block size " + std::to_string(traits->block_size));
      }
      // nbytes = ne0/blk * type_size * ne1 * ne2 * ne3 (n_el fits in int64, type_size <= 292).
      auto nb = checked_mul(n_el / traits->block_size, traits->type_size);
      if (!nb) fail(field + " ne", dims_at + 4, "byte size overflows");
      ti.nbytes = *nb;
      const uint64_t off_at = cur_.pos();
      ti.offset = cur_.read_le<uint64_t>((field + " offset").c_str());
      offset_fields_.push_back(off_at);
      charge(sizeof(GgufTensorInfo) + ti.name.size(), field, ti.info_offset);
      out_.tensors_.push_back(std::move(ti));
    }
  }

  void place_tensors() {
    auto ds = checked_align_up(cur_.pos(), out_.alignment_);
    if (!ds) fail("data section", cur_.pos(), "start overflows");
    out_.data_start_ = *ds;
    const uint64_t size = out_.source_->size();
    if (!out_.tensors_.empty() && out_.data_start_ > size) {
      fail("data section", cur_.pos(),
           "starts at " + std::to_string(out_.data_start_) + ", past the end of the file (" +
               std::to_string(size) + " bytes)" + truncated_hint(0));
    }
    for (size_t k = 0; k < out_.tensors_.size(); ++k) {
      GgufTensorInfo& ti = out_.tensors_[k];
      const std::string field = "tensor \"" + ti.name + "\" offset";
      if (ti.offset % out_.alignment_ != 0) {
        fail(field, offset_fields_[k], "offset " + std::to_string(ti.offset) +
                                           " is not a multiple of the alignment " +
                                           std::to_string(out_.alignment_));
      }
      auto abs = checked_add(out_.data_start_, ti.offset);
      if (!abs || !range_inside(*abs, ti.nbytes, size)) {
        fail(field, offset_fields_[k],
             "data [" + std::to_string(ti.offset) + ", +" + std::to_string(ti.nbytes) +
                 ") relative to the data section at " + std::to_string(out_.data_start_) +
                 " lies outside the file (" + std::to_string(size) + " bytes)" +
                 (abs && checked_add(*abs, ti.nbytes) && *abs + ti.nbytes < (uint64_t{1} << 50)
                      ? truncated_hint(0)
                      : std::string()));
      }
      ti.file_offset = *abs;
    }
    std::vector<size_t> order(out_.tensors_.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return out_.tensors_[a].offset < out_.tensors_[b].offset;
    });
    for (size_t k = 1; k < order.size(); ++k) {
      const GgufTensorInfo& prev = out_.tensors_[order[k - 1]];
      const GgufTensorInfo& next = out_.tensors_[order[k]];
      if (prev.offset + prev.nbytes > next.offset) {  // both inside the file: no overflow
        fail("tensor \"" + next.name + "\" offset", offset_fields_[order[k]],
             "data overlaps tensor \"" + prev.name + "\" (which ends at relative offset " +
                 std::to_string(prev.offset + prev.nbytes) + ")");
      }
    }
  }

  GgufFile& out_;
  const GgufLimits& limits_;
  Cursor cur_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  std::vector<uint64_t> offset_fields_;
};

namespace {

// Reads the elements of `a` (element type and count already set) starting at c.pos().
void load_with(Cursor& c, const ByteSource& src, GgufArray& a, uint32_t depth,
               const GgufLimits& limits) {
  a.file_offset = c.pos();
  const std::string field = "array at byte " + std::to_string(a.file_offset);
  const uint32_t es = gguf_scalar_size(a.elem_type);
  const uint64_t min_elem = es != 0 ? es : (a.elem_type == GgufValueType::STRING ? 8 : 12);
  if (a.count > c.remaining() / min_elem) {
    throw FormatError(
        src.name(), field, a.file_offset,
        "array of " + std::to_string(a.count) + " elements runs past the end of the file" +
            truncated_hint(a.count < (uint64_t{1} << 40) / min_elem ? a.count * min_elem : ~uint64_t{0}));
  }
  a.raw.clear();
  a.strings.clear();
  a.arrays.clear();
  if (es != 0) {
    a.raw.resize(static_cast<size_t>(a.count * es));
    c.read(a.raw.data(), a.raw.size(), field.c_str());
  } else if (a.elem_type == GgufValueType::STRING) {
    a.strings.reserve(static_cast<size_t>(a.count));
    for (uint64_t k = 0; k < a.count; ++k) {
      const uint64_t at = c.pos();
      const uint64_t len = c.read_le<uint64_t>(field.c_str());
      if (len > limits.max_string_bytes || len > c.remaining()) {
        throw FormatError(src.name(), field + "[" + std::to_string(k) + "]", at,
                          "string length " + std::to_string(len) + " is too large" +
                              (len > c.remaining() ? truncated_hint(len) : std::string()));
      }
      std::string s(static_cast<size_t>(len), '\0');
      c.read(s.data(), s.size(), field.c_str());
      a.strings.push_back(std::move(s));
    }
  } else {
    a.arrays.reserve(static_cast<size_t>(a.count));
    for (uint64_t k = 0; k < a.count; ++k) {
      const uint64_t at = c.pos();
      const uint32_t t = c.read_le<uint32_t>(field.c_str());
      if (t > kMaxValueType || depth + 1 > limits.max_array_depth) {
        throw FormatError(src.name(), field + "[" + std::to_string(k) + "]", at, "invalid nested array");
      }
      GgufArray sub;
      sub.elem_type = static_cast<GgufValueType>(t);
      sub.count = c.read_le<uint64_t>(field.c_str());
      load_with(c, src, sub, depth + 1, limits);
      a.arrays.push_back(std::move(sub));
    }
  }
  a.encoded_bytes = c.pos() - a.file_offset;
  a.resident = true;
}

}  // namespace

void GgufParser::load_elements(const ByteSource& src, GgufArray& a, uint32_t depth,
                               const GgufLimits& limits) {
  Cursor c(src, a.file_offset);
  load_with(c, src, a, depth, limits);
}

int64_t GgufArray::int_at(uint64_t k) const {
  if (!resident || k >= count) throw Error("array element " + std::to_string(k) + " is not available");
  GgufValue v;
  const uint32_t es = gguf_scalar_size(elem_type);
  if (es == 0 || elem_type == GgufValueType::FLOAT32 || elem_type == GgufValueType::FLOAT64) {
    throw Error("array of " + std::string(gguf_value_type_name(elem_type)) + " is not an integer array");
  }
  decode_scalar(elem_type, raw.data() + k * es, v);
  if (is_signed(elem_type)) return v.i;
  if (v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) throw Error("array element out of int64 range");
  return static_cast<int64_t>(v.u);
}

double GgufArray::float_at(uint64_t k) const {
  if (!resident || k >= count) throw Error("array element " + std::to_string(k) + " is not available");
  const uint32_t es = gguf_scalar_size(elem_type);
  if (es == 0) throw Error("array of " + std::string(gguf_value_type_name(elem_type)) + " is not numeric");
  GgufValue v;
  decode_scalar(elem_type, raw.data() + k * es, v);
  if (v.is_float()) return v.f;
  return is_signed(elem_type) ? static_cast<double>(v.i) : static_cast<double>(v.u);
}

GgufFile GgufFile::open(const std::string& path, const GgufLimits& limits) {
  return parse(open_file_source(path), limits);
}

GgufFile GgufFile::parse(std::shared_ptr<ByteSource> source, const GgufLimits& limits) {
  GgufFile f;
  f.source_ = std::move(source);
  GgufParser p(f, limits);
  p.run();
  return f;
}

const GgufKv* GgufFile::find(std::string_view key) const {
  for (const GgufKv& kv : kv_) {
    if (kv.key == key) return &kv;
  }
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {
[[noreturn]] void wrong_type(const GgufFile& f, const GgufKv& kv, const char* wanted) {
  throw FormatError(f.path(), "key \"" + kv.key + "\"", kv.value_offset,
                    std::string("expected ") + wanted + ", found " +
                        std::string(gguf_value_type_name(kv.value.type)));
}
}  // namespace

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufKv* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (!kv->value.is_integer()) wrong_type(*this, *kv, "an unsigned integer");
  if (is_signed(kv->value.type)) {
    if (kv->value.i < 0) {
      throw FormatError(path(), "key \"" + kv->key + "\"", kv->value_offset,
                        "value " + std::to_string(kv->value.i) + " is negative");
    }
    return static_cast<uint64_t>(kv->value.i);
  }
  return kv->value.u;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufKv* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (!kv->value.is_integer()) wrong_type(*this, *kv, "an integer");
  if (is_signed(kv->value.type)) return kv->value.i;
  if (kv->value.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw FormatError(path(), "key \"" + kv->key + "\"", kv->value_offset, "value out of int64 range");
  }
  return static_cast<int64_t>(kv->value.u);
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufKv* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (kv->value.is_float()) return kv->value.f;
  if (kv->value.is_integer()) {
    return is_signed(kv->value.type) ? static_cast<double>(kv->value.i)
                                     : static_cast<double>(kv->value.u);
  }
  wrong_type(*this, *kv, "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufKv* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (kv->value.type != GgufValueType::BOOL) wrong_type(*this, *kv, "a bool");
  return kv->value.u != 0;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufKv* kv = find(key);
  if (kv == nullptr) return std::nullopt;
  if (kv->value.type != GgufValueType::STRING) wrong_type(*this, *kv, "a string");
  return kv->value.s;
}

const GgufArray* GgufFile::get_array(std::string_view key) const {
  const GgufKv* kv = find(key);
  if (kv == nullptr) return nullptr;
  if (kv->value.type != GgufValueType::ARRAY) wrong_type(*this, *kv, "an array");
  return kv->value.array.get();
}

GgufArray GgufFile::load_array(const GgufArray& array, uint64_t max_bytes) const {
  if (array.resident) return array;
  if (array.encoded_bytes > max_bytes) {
    throw FormatError(path(), "array", array.file_offset,
                      "array of " + std::to_string(array.encoded_bytes) +
                          " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  GgufArray a = array;
  GgufLimits limits;
  GgufParser::load_elements(*source_, a, 1, limits);
  return a;
}

void GgufFile::read_tensor_data(const GgufTensorInfo& tensor, uint64_t offset, void* dst,
                                size_t n) const {
  if (!range_inside(offset, n, tensor.nbytes)) {
    throw Error(path() + ": read of tensor \"" + tensor.name + "\" [" + std::to_string(offset) +
                ", +" + std::to_string(n) + ") is outside its " + std::to_string(tensor.nbytes) + " bytes");
  }
  source_->read(tensor.file_offset + offset, dst, n, "tensor data");
}

}  // namespace moepack
