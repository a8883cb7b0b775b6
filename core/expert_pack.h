// Expert Pack: the on-disk form of a Mixture-of-Experts model that MoePack streams from SSD.
//
// A pack is a directory (format version 1; docs/expert-pack.md has the rationale):
//
//   manifest.json   written LAST, atomically (temp file, fsync, rename, fsync of the directory);
//                   a directory without it is not a pack. Schema: core/pack_manifest.h.
//   experts.bin     every routed expert of every MoE layer, one aligned block per (layer, expert)
//   dense.gguf      a valid GGUF v3 file: all metadata of the source model (split.* keys removed,
//                   moepack.pack.build_id added) and every tensor that is not a routed expert,
//                   bytes unchanged. With it the pack is self-contained: the source can go.
//
// experts.bin byte layout (little-endian):
//
//   offset      size  field
//   0           8     magic "MOEXPACK"
//   8           4     format_version (u32) = 1
//   12          4     n_layers (u32): layers with routed experts, l = 0..n_layers-1 in block order
//   16          16    build_id: random bytes; the manifest's "build_id" is their hex
//   32          8     data_start (u64) = align_up(96 + 32 * n_layers, 4096)
//   40          8     data_end (u64) = file size
//   48          8     alignment (u64) = 4096
//   56          8     max_stride (u64): the largest stride[l] (the runtime's cache slot size)
//   64          32    header_sha256: SHA-256 of bytes [0, 64) followed by the layer table
//   96          32*n  layer table, one record per layer l:
//                       u32 block (N of blk.N), u32 n_experts, u64 block_bytes, u64 stride[l],
//                       u64 layer_base[l]
//   ...               zero up to data_start
//   data_start  ...   expert blocks; block (l, e) occupies [offset(l, e), + stride[l])
//
// Addressing (the formula; equal strides reduce it to the published
// `data_start + (l * num_experts + e) * expert_stride`):
//   layer_base[0]   = data_start
//   layer_base[l+1] = layer_base[l] + n_experts[l] * stride[l]
//   offset(l, e)    = layer_base[l] + e * stride[l]
//   stride[l]       = align_up(block_bytes[l], 4096)
// Inside a block the roles (gate, up, down, then any other per-expert tensors such as biases,
// in the manifest's order) lie at offsets aligned to 256 bytes: role r at
// role_offset[r] = align_up(role_offset[r-1] + role_bytes[r-1], 256), role_offset[0] = 0;
// block_bytes = role_offset[last] + role_bytes[last]. role_bytes is one expert's slice of the
// source tensor, copied byte for byte (same quantization). Every byte of a block that no role
// covers is zero, so the per-expert SHA-256 over all stride[l] bytes is reproducible.
// Every offset(l, e) and stride[l] is a multiple of 4096, so any expert is one O_DIRECT read.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/byte_source.h"
#include "core/pack_layout.h"
#include "core/pack_manifest.h"

namespace moepack {

inline constexpr uint64_t kPackHeaderFixedBytes = 96;  // before the layer table
inline constexpr uint64_t kPackLayerRecordBytes = 32;
inline constexpr char kPackMagic[8] = {'M', 'O', 'E', 'X', 'P', 'A', 'C', 'K'};
inline constexpr const char* kPackManifestName = "manifest.json";
inline constexpr const char* kPackExpertsName = "experts.bin";
inline constexpr const char* kPackDenseName = "dense.gguf";
// GGUF key added to dense.gguf so that it cannot be paired with another build's manifest.
inline constexpr const char* kPackDenseBuildIdKey = "moepack.pack.build_id";

using PackBuildId = std::array<uint8_t, 16>;
std::string build_id_hex(const PackBuildId& id);

// The header page(s) of experts.bin: exactly data_start bytes.
std::vector<uint8_t> encode_pack_header(const PackLayout& layout, const PackBuildId& build_id);

struct PackHeaderLayer {
  uint32_t block = 0;
  uint32_t n_experts = 0;
  uint64_t block_bytes = 0;
  uint64_t stride = 0;
  uint64_t base = 0;
};

struct PackHeader {
  uint32_t format_version = 0;
  PackBuildId build_id{};
  uint64_t data_start = 0;
  uint64_t data_end = 0;
  uint64_t alignment = 0;
  uint64_t max_stride = 0;
  std::vector<PackHeaderLayer> layers;
};

// Decodes and checks the header of experts.bin (magic, version, header checksum, alignment,
// table consistent with the addressing formula). Throws FormatError naming file, field, offset.
PackHeader decode_pack_header(const ByteSource& src);

// Resolves a pack path: the directory, or its manifest.json. Returns the directory.
std::string pack_dir_of(const std::string& path);
// Whether `path` is one pack_dir_of resolves (a directory, or a file named manifest.json), for
// commands that take a GGUF or a pack; whether the directory holds a pack is the reader's to find.
bool is_pack_path(const std::string& path);
// The GGUF holding a model's metadata and tokenizer: for a pack path (is_pack_path) the pack's
// dense.gguf as its manifest names it, else `path` itself (a GGUF, a shard, an Ollama name).
// Throws as ExpertPack::open does for a directory without a valid pack.
std::string metadata_gguf_of(const std::string& path);

// A finalised pack, opened for reading. Opening checks structure only (manifest schema and
// layout arithmetic, header vs manifest, file sizes, build ids); hashes are checked by
// verify_pack(--full). Throws Error / FormatError / IoError naming the file on any mismatch;
// a directory without manifest.json is "not a finalised Expert Pack".
class ExpertPack {
 public:
  static ExpertPack open(const std::string& path);

  const PackManifest& manifest() const { return manifest_; }
  const PackLayout& layout() const { return manifest_.layout; }
  const std::string& dir() const { return dir_; }
  std::string manifest_path() const { return dir_ + "/" + kPackManifestName; }
  std::string experts_path() const { return dir_ + "/" + manifest_.experts.file; }
  std::string dense_path() const { return dir_ + "/" + manifest_.dense.file; }

  // Absolute byte offset of block (l, e) in experts.bin; throws Error when out of range.
  uint64_t expert_offset(uint32_t l, uint32_t e) const { return layout().offset(l, e); }
  uint64_t stride(uint32_t l) const;
  // Reads block (l, e): stride(l) bytes into dst (buffered pread; the O_DIRECT/io_uring reader
  // lives with the runtime).
  void read_expert(uint32_t l, uint32_t e, void* dst) const;
  // What the engine reports for block (l, e) whose SHA-256 read back as `got` (hex) instead of
  // the manifest's: experts.bin, the expert, its layer and blk.N, byte offset and size, both
  // hashes, and what to do (`moepack verify --full`, convert again). One text for every backend.
  std::string bad_block_message(uint32_t l, uint32_t e, const std::string& got) const;

 private:
  std::string dir_;
  PackManifest manifest_;
  std::shared_ptr<ByteSource> experts_;
};

}  // namespace moepack
