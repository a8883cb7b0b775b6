// Expert Pack format: address arithmetic against hand-computed numbers, header encoding and
// its rejections, manifest round trip and validation. Fixture packs are tested in
// tests/packbuilder (they need the builder).
#include "core/expert_pack.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/pack_manifest.h"
#include "core/sha256.h"

namespace moepack {
namespace {

PackRole role(const char* name, GgmlType t, uint64_t ne0, uint64_t ne1, uint64_t bytes, uint32_t block = 1) {
  PackRole r;
  r.role = name;
  r.tensor = "blk." + std::to_string(block) + ".ffn_" + name + "_exps.weight";
  r.type = t;
  r.n_dims = 2;
  r.ne = {ne0, ne1, 1, 1};
  r.bytes = bytes;
  return r;
}

// deepseek2-tiny-Q4_K_M's MoE blocks 1-3 (fixtures README): 16 experts, gate/up q4_K
// 256x256 = 256 rows * 144 B = 36864 B; down q4_K in block 1, q6_K (210 B/row: 53760 B) in 2-3.
PackLayout ds2_q4km_layout() {
  PackLayout L;
  for (uint32_t b = 1; b <= 3; ++b) {
    PackLayer ly;
    ly.block = b;
    ly.n_experts = 16;
    ly.roles = {role("gate", GgmlType::Q4_K, 256, 256, 36864, b), role("up", GgmlType::Q4_K, 256, 256, 36864, b),
                b == 1 ? role("down", GgmlType::Q4_K, 256, 256, 36864, b)
                       : role("down", GgmlType::Q6_K, 256, 256, 53760, b)};
    L.layers.push_back(ly);
  }
  compute_pack_layout(L);
  return L;
}

TEST(PackLayout, HandComputedOffsetsStridesAndBases) {
  const PackLayout L = ds2_q4km_layout();
  EXPECT_EQ(L.data_start, 4096u);  // 96 + 3 * 32 = 192 -> 4096
  // Block 1: roles at 0, 36864, 73728 (all multiples of 256); 110592 = 27 * 4096 exactly.
  EXPECT_EQ(L.layers[0].roles[1].offset, 36864u);
  EXPECT_EQ(L.layers[0].roles[2].offset, 73728u);
  EXPECT_EQ(L.layers[0].block_bytes, 110592u);
  EXPECT_EQ(L.layers[0].stride, 110592u);
  // Blocks 2-3: 73728 + 53760 = 127488 -> stride 131072 (32 pages).
  EXPECT_EQ(L.layers[1].block_bytes, 127488u);
  EXPECT_EQ(L.layers[1].stride, 131072u);
  EXPECT_EQ(L.layers[0].base, 4096u);
  EXPECT_EQ(L.layers[1].base, 4096u + 16 * 110592u);                 // 1773568
  EXPECT_EQ(L.layers[2].base, 4096u + 16 * 110592u + 16 * 131072u);  // 3870720
  EXPECT_EQ(L.data_end, 4096u + 16 * 110592u + 32 * 131072u);        // 5967872
  EXPECT_EQ(L.max_stride, 131072u);
  EXPECT_EQ(L.expert_count(), 48u);
  EXPECT_EQ(L.offset(2, 5), 3870720u + 5 * 131072u);
  for (uint32_t l = 0; l < 3; ++l) {
    for (uint32_t e = 0; e < 16; ++e) EXPECT_EQ(L.offset(l, e) % 4096, 0u);
  }
  EXPECT_THROW(L.offset(3, 0), Error);
  EXPECT_THROW(L.offset(0, 16), Error);
}

TEST(PackLayout, EqualStridesReduceToThePublishedFormula) {
  PackLayout L;
  for (uint32_t b = 0; b < 5; ++b) {
    PackLayer ly;
    ly.block = b;
    ly.n_experts = 8;
    ly.roles = {role("gate", GgmlType::Q8_0, 64, 3, 3 * 68)};
    L.layers.push_back(ly);
  }
  compute_pack_layout(L);
  ASSERT_EQ(L.layers[0].stride, 4096u);
  for (uint32_t l = 0; l < 5; ++l) {
    for (uint32_t e = 0; e < 8; ++e) EXPECT_EQ(L.offset(l, e), L.data_start + (l * 8 + e) * 4096u);
  }
}

TEST(PackLayout, RoleOffsetsAlignTo256AndHeaderGrowsWithLayers) {
  PackLayout L;
  PackLayer ly;
  ly.n_experts = 2;
  ly.roles = {role("gate", GgmlType::F32, 25, 1, 100), role("up", GgmlType::F32, 25, 1, 100),
              role("down", GgmlType::F32, 1025, 1, 4100)};
  L.layers.push_back(ly);
  compute_pack_layout(L);
  EXPECT_EQ(L.layers[0].roles[1].offset, 256u);
  EXPECT_EQ(L.layers[0].roles[2].offset, 512u);
  EXPECT_EQ(L.layers[0].block_bytes, 4612u);
  EXPECT_EQ(L.layers[0].stride, 8192u);
  EXPECT_EQ(pack_header_bytes(1), 4096u);
  EXPECT_EQ(pack_header_bytes(125), 4096u);  // 96 + 4000 = 4096
  EXPECT_EQ(pack_header_bytes(126), 8192u);
}

TEST(PackLayout, RejectsEmptyAndOverflowingLayouts) {
  PackLayout empty;
  EXPECT_THROW(compute_pack_layout(empty), Error);
  PackLayout huge;
  PackLayer ly;
  ly.n_experts = 1u << 20;
  ly.roles = {role("gate", GgmlType::F32, 1, 1, 1ull << 50)};
  huge.layers = {ly};
  EXPECT_THROW(compute_pack_layout(huge), Error);
}

TEST(PackHeader, EncodesTheDocumentedBytesAndRoundTrips) {
  const PackLayout L = ds2_q4km_layout();
  PackBuildId id{};
  for (size_t k = 0; k < 16; ++k) id[k] = static_cast<uint8_t>(k * 17);
  std::vector<uint8_t> h = encode_pack_header(L, id);
  ASSERT_EQ(h.size(), 4096u);
  EXPECT_EQ(std::memcmp(h.data(), "MOEXPACK", 8), 0);
  EXPECT_EQ(h[8], 1);                     // format_version
  EXPECT_EQ(h[12], 3);                    // n_layers
  EXPECT_EQ(h[16 + 1], 17);               // build id
  EXPECT_EQ(h[32] | (h[33] << 8), 4096);  // data_start
  EXPECT_EQ(h[96], 1);                    // layer 0 block
  EXPECT_EQ(h[96 + 32], 2);               // layer 1 block
  // The data file = header + data_end - data_start bytes of blocks.
  std::vector<uint8_t> file = h;
  file.resize(static_cast<size_t>(L.data_end), 0);
  const PackHeader d = decode_pack_header(*make_memory_source("experts.bin", file));
  EXPECT_EQ(d.build_id, id);
  ASSERT_EQ(d.layers.size(), 3u);
  EXPECT_EQ(d.layers[2].base, 3870720u);
  EXPECT_EQ(d.layers[2].stride, 131072u);
  EXPECT_EQ(d.max_stride, 131072u);
  EXPECT_EQ(build_id_hex(id), "00112233445566778899aabbccddeeff");
}

void expect_header_error(std::vector<uint8_t> file, const std::string& field, uint64_t offset) {
  try {
    decode_pack_header(*make_memory_source("experts.bin", std::move(file)));
    FAIL() << "accepted a bad header (" << field << ")";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_EQ(e.offset(), offset) << e.what();
    EXPECT_EQ(e.file(), "experts.bin");
  }
}

TEST(PackHeader, RejectsCorruptionNamingFieldAndOffset) {
  const PackLayout L = ds2_q4km_layout();
  std::vector<uint8_t> good = encode_pack_header(L, PackBuildId{});
  good.resize(static_cast<size_t>(L.data_end), 0);
  auto bad = good;
  bad[0] = 'X';
  expect_header_error(bad, "magic", 0);
  bad = good;
  bad[8] = 2;
  expect_header_error(bad, "format_version", 8);
  bad = good;
  bad[96 + 32 + 16] ^= 1;  // layer 1 stride: caught by the header checksum
  expect_header_error(bad, "header_sha256", 64);
  bad = good;
  bad.resize(bad.size() - 4096);  // truncated data
  expect_header_error(bad, "data_end", 40);
}

PackManifest sample_manifest() {
  PackManifest m;
  m.build_id = "00112233445566778899aabbccddeeff";
  m.tool = "moepack test";
  m.sources = {{"/x/model.gguf", 123, std::string(64, 'a')}};
  m.dense = {"dense.gguf", 1000, std::string(64, 'b')};
  m.dense_tensors = 7;
  m.layout = ds2_q4km_layout();
  m.experts = {"experts.bin", m.layout.data_end, std::string(64, 'c')};
  for (const PackLayer& L : m.layout.layers) m.expert_sha256.emplace_back(L.n_experts, std::string(64, 'd'));
  return m;
}

TEST(PackManifest, RoundTripsThroughJson) {
  const PackManifest m = sample_manifest();
  const nlohmann::json j = manifest_to_json(m);
  const PackManifest r = manifest_from_json(nlohmann::json::parse(j.dump()), "manifest.json");
  EXPECT_EQ(manifest_to_json(r), j);
  EXPECT_EQ(j["layout"]["layers"][1]["roles"][2]["type"], "q6_K");
  EXPECT_EQ(j["layout"]["layers"][1]["roles"][2]["ne"], nlohmann::json::parse("[256,256]"));
}

void expect_manifest_error(const nlohmann::json& j, const std::string& field) {
  try {
    manifest_from_json(j, "m.json");
    FAIL() << "accepted a bad manifest (" << field << ")";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_EQ(e.file(), "m.json");
    // "m.json: /path: what": a JSON field has a path, not a byte offset.
    EXPECT_EQ(std::string(e.what()).rfind("m.json: " + field + ": ", 0), 0u) << e.what();
  }
}

TEST(PackManifest, RejectsWhatALoaderCouldNotTrust) {
  const nlohmann::json good = manifest_to_json(sample_manifest());
  auto j = good;
  j["format_version"] = 2;
  expect_manifest_error(j, "/format_version");
  expect_manifest_error(nlohmann::json::array(), "(root)");  // not an object at all
  j = good;
  j["layout"]["layers"][1]["stride"] = 127488;  // not aligned: contradicts the formula
  expect_manifest_error(j, "/layout/layers/1/stride");
  j = good;
  j["layout"]["layers"][2]["base"] = 0;
  expect_manifest_error(j, "/layout/layers/2/base");
  j = good;
  j["layout"]["layers"][0]["roles"][1]["offset"] = 36865;
  expect_manifest_error(j, "/layout/layers/0/roles/1/offset");
  j = good;
  j["layout"]["layers"][0]["roles"][0]["bytes"] = 36000;  // not q4_K of 256x256
  expect_manifest_error(j, "/layout/layers/0/roles/0/bytes");
  j = good;
  j["layout"]["layers"][0]["expert_sha256"].erase(0);
  expect_manifest_error(j, "/layout/layers/0/expert_sha256");
  j = good;
  j["layout"]["layers"][0]["expert_sha256"][3] = "xyz";
  expect_manifest_error(j, "/layout/layers/0/expert_sha256/3");
  j = good;
  j["files"]["experts"]["file"] = "../escape.bin";
  expect_manifest_error(j, "/files/experts/file");
  j = good;
  j.erase("sources");
  expect_manifest_error(j, "/sources");
  // Roles (sixtieth session): the offsets follow from the roles' order, and no SHA-256 covers the names, so
  // a manifest with gate and up swapped (names and tensors together) passed `verify --full` and made `run`
  // answer wrongly. The order is canonical and each role must be its tensor's.
  j = good;
  std::swap(j["layout"]["layers"][1]["roles"][0], j["layout"]["layers"][1]["roles"][1]);
  expect_manifest_error(j, "/layout/layers/1/roles/1/role");
  j = good;
  j["layout"]["layers"][0]["roles"][0]["role"] = "up";  // a tensor of role gate
  expect_manifest_error(j, "/layout/layers/0/roles/0/role");
  j = good;
  j["layout"]["layers"][0]["roles"][2]["role"] = "dowl";  // one bit flipped
  expect_manifest_error(j, "/layout/layers/0/roles/2/role");
  j = good;
  j["layout"]["layers"][2]["roles"][2]["tensor"] = "blk.1.ffn_down_exps.weight";  // another block's
  expect_manifest_error(j, "/layout/layers/2/roles/2/role");
  j = good;
  j["layout"]["layers"][0]["roles"][1]["tensor"] = "blk.1.ffn_up_exps.weigh";
  expect_manifest_error(j, "/layout/layers/0/roles/1/tensor");
  j = good;  // two roles of one name
  j["layout"]["layers"][0]["roles"][1] = j["layout"]["layers"][0]["roles"][0];
  expect_manifest_error(j, "/layout/layers/0/roles/1/role");
}

TEST(ExpertPack, ADirectoryWithoutManifestIsNotAPack) {
  char tmpl[] = "/tmp/moepack-ep-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  try {
    ExpertPack::open(tmpl);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a finalised Expert Pack"), std::string::npos) << e.what();
  }
  rmdir(tmpl);
}

TEST(Sha256, KnownAnswer) {
  // FIPS 180-4 example "abc".
  EXPECT_EQ(to_hex(Sha256::of("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256Digest d;
  EXPECT_TRUE(from_hex("BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", d));
  EXPECT_FALSE(from_hex("ba78", d));
}

}  // namespace
}  // namespace moepack
