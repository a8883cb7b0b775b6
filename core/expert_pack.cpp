#include "core/expert_pack.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/checked.h"
#include "core/error.h"
#include "core/sha256.h"

namespace moepack {
namespace {

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + static_cast<size_t>(k)] = static_cast<uint8_t>(v >> (8 * k));
}
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int k = 0; k < 8; ++k) b[at + static_cast<size_t>(k)] = static_cast<uint8_t>(v >> (8 * k));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int k = 3; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

Sha256Digest header_digest(const uint8_t* fixed64, const uint8_t* table, size_t table_bytes) {
  Sha256 h;
  h.update(fixed64, 64);
  h.update(table, table_bytes);
  return h.finish();
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string hex16(const PackBuildId& id) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t b : id) {
    s += k[b >> 4];
    s += k[b & 15];
  }
  return s;
}

}  // namespace

std::string build_id_hex(const PackBuildId& id) { return hex16(id); }

std::vector<uint8_t> encode_pack_header(const PackLayout& layout, const PackBuildId& build_id) {
  std::vector<uint8_t> b(static_cast<size_t>(layout.data_start), 0);
  const size_t n = layout.layers.size();
  if (layout.data_start != pack_header_bytes(n)) throw Error("encode_pack_header: layout not computed");
  std::memcpy(b.data(), kPackMagic, 8);
  put_u32(b, 8, kPackFormatVersion);
  put_u32(b, 12, static_cast<uint32_t>(n));
  std::memcpy(b.data() + 16, build_id.data(), 16);
  put_u64(b, 32, layout.data_start);
  put_u64(b, 40, layout.data_end);
  put_u64(b, 48, kPackAlignment);
  put_u64(b, 56, layout.max_stride);
  for (size_t l = 0; l < n; ++l) {
    const PackLayer& L = layout.layers[l];
    const size_t at = kPackHeaderFixedBytes + l * kPackLayerRecordBytes;
    put_u32(b, at, L.block);
    put_u32(b, at + 4, L.n_experts);
    put_u64(b, at + 8, L.block_bytes);
    put_u64(b, at + 16, L.stride);
    put_u64(b, at + 24, L.base);
  }
  const Sha256Digest d = header_digest(b.data(), b.data() + kPackHeaderFixedBytes, n * kPackLayerRecordBytes);
  std::memcpy(b.data() + 64, d.data(), 32);
  return b;
}

PackHeader decode_pack_header(const ByteSource& src) {
  const std::string& f = src.name();
  uint8_t fixed[kPackHeaderFixedBytes];
  src.read(0, fixed, sizeof fixed, "experts header");
  if (std::memcmp(fixed, kPackMagic, 8) != 0)
    throw FormatError(f, "magic", 0, "not an Expert Pack data file (magic is not \"MOEXPACK\")");
  PackHeader h;
  h.format_version = get_u32(fixed + 8);
  if (h.format_version != kPackFormatVersion) {
    throw FormatError(f, "format_version", 8,
                      "version " + std::to_string(h.format_version) + " is not supported");
  }
  const uint32_t n = get_u32(fixed + 12);
  if (n == 0 || n > 65536)
    throw FormatError(f, "n_layers", 12, std::to_string(n) + " layers is outside 1..65536");
  std::memcpy(h.build_id.data(), fixed + 16, 16);
  h.data_start = get_u64(fixed + 32);
  h.data_end = get_u64(fixed + 40);
  h.alignment = get_u64(fixed + 48);
  h.max_stride = get_u64(fixed + 56);
  if (h.alignment != kPackAlignment) throw FormatError(f, "alignment", 48, "must be 4096");
  if (h.data_start != pack_header_bytes(n)) {
    throw FormatError(f, "data_start", 32,
                      std::to_string(h.data_start) + " != " + std::to_string(pack_header_bytes(n)));
  }
  std::vector<uint8_t> table(static_cast<size_t>(n) * kPackLayerRecordBytes);
  src.read(kPackHeaderFixedBytes, table.data(), table.size(), "experts layer table");
  const Sha256Digest d = header_digest(fixed, table.data(), table.size());
  if (std::memcmp(d.data(), fixed + 64, 32) != 0)
    throw FormatError(f, "header_sha256", 64, "header checksum mismatch");
  uint64_t base = h.data_start;
  uint64_t max_stride = 0;
  for (uint32_t l = 0; l < n; ++l) {
    const uint8_t* p = table.data() + static_cast<size_t>(l) * kPackLayerRecordBytes;
    const uint64_t at = kPackHeaderFixedBytes + static_cast<uint64_t>(l) * kPackLayerRecordBytes;
    PackHeaderLayer L{get_u32(p), get_u32(p + 4), get_u64(p + 8), get_u64(p + 16), get_u64(p + 24)};
    const std::string field = "layer table[" + std::to_string(l) + "]";
    if (L.n_experts == 0 || L.stride == 0 || L.stride % kPackAlignment != 0 || L.block_bytes > L.stride ||
        L.stride - L.block_bytes >= kPackAlignment) {
      throw FormatError(f, field, at,
                        "stride " + std::to_string(L.stride) + " is not align_up(block_bytes " +
                            std::to_string(L.block_bytes) + ", 4096)");
    }
    if (L.base != base)
      throw FormatError(f, field + ".base", at + 24, std::to_string(L.base) + " != " + std::to_string(base));
    const auto size = checked_mul(L.n_experts, L.stride);
    const auto next = size ? checked_add(base, *size) : std::nullopt;
    if (!next) throw FormatError(f, field, at, "layer size overflows");
    base = *next;
    if (L.stride > max_stride) max_stride = L.stride;
    h.layers.push_back(L);
  }
  if (base != h.data_end)
    throw FormatError(f, "data_end", 40, std::to_string(h.data_end) + " != " + std::to_string(base));
  if (max_stride != h.max_stride) throw FormatError(f, "max_stride", 56, "does not match the layer table");
  if (src.size() != h.data_end) {
    throw FormatError(
        f, "data_end", 40,
        "file is " + std::to_string(src.size()) + " bytes, the header says " + std::to_string(h.data_end));
  }
  return h;
}

std::string pack_dir_of(const std::string& path) {
  if (is_dir(path)) {
    std::string d = path;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    return d;
  }
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base != kPackManifestName) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw IoError(path, "stat", errno);  // "no such file ...": say so
    throw Error(path + ": not an Expert Pack directory or its manifest.json");
  }
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

bool is_pack_path(const std::string& path) {
  const size_t slash = path.rfind('/');
  return is_dir(path) || (slash == std::string::npos ? path : path.substr(slash + 1)) == kPackManifestName;
}

std::string metadata_gguf_of(const std::string& path) {
  return is_pack_path(path) ? ExpertPack::open(path).dense_path() : path;
}

ExpertPack ExpertPack::open(const std::string& path) {
  ExpertPack p;
  p.dir_ = pack_dir_of(path);
  const std::string mpath = p.dir_ + "/" + kPackManifestName;
  struct stat st {};
  if (::stat(mpath.c_str(), &st) != 0) {
    throw Error(p.dir_ + ": not a finalised Expert Pack (no " + kPackManifestName +
                "; an interrupted build resumes when its command is run again)");
  }
  p.manifest_ = read_manifest(mpath);
  p.experts_ = open_file_source(p.experts_path());
  const PackHeader h = decode_pack_header(*p.experts_);
  const PackLayout& L = p.manifest_.layout;
  if (hex16(h.build_id) != p.manifest_.build_id) {
    throw FormatError(
        p.experts_path(), "build_id", 16,
        "belongs to build " + hex16(h.build_id) + ", the manifest is of build " + p.manifest_.build_id);
  }
  if (h.layers.size() != L.layers.size()) {
    throw FormatError(p.experts_path(), "n_layers", 12,
                      "header has " + std::to_string(h.layers.size()) + " layers, the manifest " +
                          std::to_string(L.layers.size()));
  }
  for (size_t l = 0; l < L.layers.size(); ++l) {
    const PackHeaderLayer& a = h.layers[l];
    const PackLayer& b = L.layers[l];
    if (a.block != b.block || a.n_experts != b.n_experts || a.block_bytes != b.block_bytes ||
        a.stride != b.stride || a.base != b.base) {
      throw FormatError(p.experts_path(), "layer table[" + std::to_string(l) + "]",
                        kPackHeaderFixedBytes + l * kPackLayerRecordBytes,
                        "does not match the manifest's layer " + std::to_string(l));
    }
  }
  if (h.data_end != L.data_end)
    throw FormatError(p.experts_path(), "data_end", 40, "does not match the manifest");
  const std::string dpath = p.dense_path();
  if (::stat(dpath.c_str(), &st) != 0) throw IoError(dpath, "stat", errno);
  if (static_cast<uint64_t>(st.st_size) != p.manifest_.dense.bytes) {
    throw FormatError(
        dpath, "file size", 0,
        std::to_string(st.st_size) + " bytes, the manifest says " + std::to_string(p.manifest_.dense.bytes));
  }
  return p;
}

uint64_t ExpertPack::stride(uint32_t l) const {
  if (l >= layout().layers.size()) throw Error("Expert Pack: layer " + std::to_string(l) + " out of range");
  return layout().layers[l].stride;
}

void ExpertPack::read_expert(uint32_t l, uint32_t e, void* dst) const {
  experts_->read(expert_offset(l, e), dst, static_cast<size_t>(stride(l)), "expert block");
}

std::string ExpertPack::bad_block_message(uint32_t l, uint32_t e, const std::string& got) const {
  return experts_path() + ": expert " + std::to_string(e) + " of layer " + std::to_string(l) + " (blk." +
         std::to_string(layout().layers.at(l).block) + ") at byte " + std::to_string(expert_offset(l, e)) +
         " (" + std::to_string(stride(l)) + " bytes) fails its SHA-256 check: manifest " +
         manifest_.expert_sha256.at(l).at(e) + ", read " + got +
         ". The pack is damaged: `moepack verify --full " + dir_ +
         "` lists what else is, and converting the model again repairs it";
}

}  // namespace moepack
