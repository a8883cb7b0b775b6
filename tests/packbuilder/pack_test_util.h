// Helpers of the packbuilder tests: an independent re-derivation of where each expert must be
// (from the GGUF reader's tensor directory and the spec's formulas, not from the builder), and
// the check that every block of a pack is byte-identical to the source slices it came from.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/sha256.h"

namespace moepack::test {

inline std::string shared(const std::string& rel) { return std::string(MOEPACK_SHARED_DIR) + "/" + rel; }

// sha256 of fixture files from ../shared/fixtures/SHA256SUMS (keyed by absolute path).
inline std::map<std::string, std::string> fixture_sums() {
  std::map<std::string, std::string> m;
  std::ifstream in(shared("fixtures/SHA256SUMS"));
  std::string hash, path;
  while (in >> hash >> path)
    m[shared("fixtures/" + (path.rfind("./", 0) == 0 ? path.substr(2) : path))] = hash;
  return m;
}

inline uint64_t up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline int role_rank(const std::string& r) {
  return r == "gate" ? 0 : r == "up" ? 1 : r == "down" ? 2 : r == "gate_up" ? 3 : 4;
}

// Checks a built pack against its source, trusting only the GGUF reader:
//  - the layers are the blocks with blk.N.ffn_*_exps tensors, roles ordered gate, up, down;
//  - role offsets / strides / bases follow the spec formulas (recomputed here);
//  - every role slice in every block equals the source bytes, every other byte is zero.
inline void expect_pack_matches_source(const std::string& pack_dir, const GgufModel& src) {
  const ExpertPack pack = ExpertPack::open(pack_dir);
  const PackLayout& L = pack.layout();
  // Expected layers from the tensor names.
  std::map<uint32_t, std::vector<const GgufTensorRef*>> blocks;
  for (const GgufTensorRef& r : src.tensors()) {
    const std::string& n = r.info->name;
    const auto pos = n.find("_exps.");
    if (n.rfind("blk.", 0) != 0 || pos == std::string::npos) continue;
    blocks[static_cast<uint32_t>(std::stoul(n.substr(4)))].push_back(&r);
  }
  ASSERT_EQ(L.layers.size(), blocks.size());
  uint64_t base = up(96 + 32 * blocks.size(), 4096);
  ASSERT_EQ(L.data_start, base);
  size_t l = 0;
  uint64_t checked = 0;
  for (auto& [block, refs] : blocks) {
    const PackLayer& ly = L.layers[l];
    ASSERT_EQ(ly.block, block);
    std::vector<std::pair<std::string, const GgufTensorRef*>> roles;
    for (const GgufTensorRef* r : refs) {
      const std::string& n = r->info->name;
      const size_t a = n.find(".ffn_") + 5;
      std::string role = n.substr(a, n.find("_exps.") - a);
      if (n.size() >= 5 && n.compare(n.size() - 5, 5, ".bias") == 0) role += ".bias";
      roles.emplace_back(role, r);
    }
    std::sort(roles.begin(), roles.end(), [](auto& x, auto& y) {
      return role_rank(x.first) != role_rank(y.first) ? role_rank(x.first) < role_rank(y.first)
                                                      : x.first < y.first;
    });
    ASSERT_EQ(ly.roles.size(), roles.size());
    const uint64_t n_exp = roles[0].second->info->ne[roles[0].second->info->n_dims - 1];
    ASSERT_EQ(ly.n_experts, n_exp);
    uint64_t at = 0;
    std::vector<uint64_t> offs, sizes;
    for (size_t k = 0; k < roles.size(); ++k) {
      const GgufTensorInfo& t = *roles[k].second->info;
      EXPECT_EQ(ly.roles[k].role, roles[k].first);
      EXPECT_EQ(ly.roles[k].tensor, t.name);
      EXPECT_EQ(ly.roles[k].type, t.type);
      const uint64_t bytes = t.nbytes / n_exp;
      const uint64_t off = up(at, 256);
      EXPECT_EQ(ly.roles[k].offset, off);
      EXPECT_EQ(ly.roles[k].bytes, bytes);
      offs.push_back(off);
      sizes.push_back(bytes);
      at = off + bytes;
    }
    const uint64_t stride = up(at, 4096);
    EXPECT_EQ(ly.block_bytes, at);
    EXPECT_EQ(ly.stride, stride);
    EXPECT_EQ(ly.base, base);
    std::vector<uint8_t> block_bytes(stride), want(stride);
    for (uint32_t e = 0; e < n_exp; ++e) {
      const uint64_t off = base + e * stride;
      ASSERT_EQ(pack.expert_offset(static_cast<uint32_t>(l), e), off);
      ASSERT_EQ(off % 4096, 0u);
      pack.read_expert(static_cast<uint32_t>(l), e, block_bytes.data());
      std::fill(want.begin(), want.end(), 0);
      for (size_t k = 0; k < roles.size(); ++k) {
        const GgufTensorRef& r = *roles[k].second;
        src.shards()[r.shard].read_tensor_data(*r.info, e * sizes[k], want.data() + offs[k], sizes[k]);
      }
      ASSERT_TRUE(block_bytes == want)
          << pack_dir << ": block (" << l << ", " << e << ") differs from the source";
      ++checked;
    }
    base += n_exp * stride;
    ++l;
  }
  EXPECT_EQ(L.data_end, base);
  EXPECT_EQ(checked, L.expert_count());
}

}  // namespace moepack::test
