// Tests of GgufModel (core/gguf_model.h): multi-shard sets written with the test writer into a
// temporary directory, and the Ollama store resolver (core/ollama_store.h) on a fake store.
// Every error must name the offending file.
//
// Shard layout used below (hand-computed offsets): kv 0 "split.no" (u16) at 24, value at 44;
// kv 1 "split.count" (u16) at 46, value at 69; kv 2 "split.tensors.count" (i32) at 71, value at
// 102; the first tensor info at 106 (shard 1 adds "general.architecture" after these).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/gguf_model.h"
#include "core/model_summary.h"
#include "core/ollama_store.h"
#include "core/pack_manifest.h"
#include "core/sha256.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

namespace fs = std::filesystem;
using test::GgufWriter;
using test::TempDir;
namespace TV = test::TV;

struct ShardSpec {
  int no = 0;        // split.no (0-based)
  int count = 3;     // split.count
  int total = 6;     // split.tensors.count
  std::vector<std::string> tensors;
  bool with_total = true;
};

std::vector<uint8_t> shard_bytes(const ShardSpec& s) {
  GgufWriter w;
  w.kv("split.no", TV::u16(static_cast<uint16_t>(s.no)));
  w.kv("split.count", TV::u16(static_cast<uint16_t>(s.count)));
  if (s.with_total) w.kv("split.tensors.count", TV::i32(s.total));
  if (s.no == 0) w.kv("general.architecture", TV::str("llama"));
  for (const std::string& t : s.tensors) w.tensor(t, test::kF32, {8});
  return w.build();
}

std::string shard_name(int k) { return "m-0000" + std::to_string(k) + "-of-00003.gguf"; }

// Writes a valid 3-shard set m-0000K-of-00003.gguf (2 tensors each) into dir.
void write_set(const TempDir& dir) {
  for (int k = 0; k < 3; ++k) {
    ShardSpec s;
    s.no = k;
    s.tensors = {"t" + std::to_string(2 * k), "t" + std::to_string(2 * k + 1)};
    test::write_file(dir.file(shard_name(k + 1)), shard_bytes(s));
  }
}

template <typename F>
::testing::AssertionResult ThrowsFormatError(F&& f, const std::string& file, const std::string& field,
                                             uint64_t offset, const std::string& what = "") {
  try {
    f();
  } catch (const FormatError& e) {
    if (e.file() != file || e.field() != field || e.offset() != offset ||
        std::string(e.what()).find(what) == std::string::npos) {
      return ::testing::AssertionFailure() << "wrong FormatError: file=" << e.file() << " field=" << e.field()
                                           << " offset=" << e.offset() << ": " << e.what();
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "other exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// Any moepack::Error whose message contains every one of `parts`.
template <typename F>
::testing::AssertionResult ThrowsErrorMentioning(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    for (const std::string& p : parts) {
      if (std::string(e.what()).find(p) == std::string::npos) {
        return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << e.what();
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "not a moepack::Error: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// ---------------------------------------------------------------------------------------------
// Split sets

TEST(SplitPath, ParseAndBuild) {
  std::string prefix;
  int no = 0;
  int count = 0;
  ASSERT_TRUE(parse_split_path("/a/b/model-00002-of-00010.gguf", prefix, no, count));
  EXPECT_EQ(prefix, "/a/b/model");
  EXPECT_EQ(no, 2);
  EXPECT_EQ(count, 10);
  EXPECT_FALSE(parse_split_path("/a/model-2-of-10.gguf", prefix, no, count));
  EXPECT_FALSE(parse_split_path("/a/model.gguf", prefix, no, count));
  EXPECT_EQ(split_path("/x/m", 3, 12), "/x/m-00003-of-00012.gguf");
}

TEST(SplitSet, OpensFromAnyShard) {
  TempDir dir;
  write_set(dir);
  for (int k = 1; k <= 3; ++k) {
    const GgufModel m = GgufModel::open(dir.file(shard_name(k)));
    ASSERT_EQ(m.shards().size(), 3u);
    for (int s = 0; s < 3; ++s) EXPECT_EQ(m.shards()[s].path(), dir.file(shard_name(s + 1)));
    ASSERT_EQ(m.tensors().size(), 6u);
    EXPECT_EQ(m.find_tensor("t0")->shard, 0u);
    EXPECT_EQ(m.find_tensor("t3")->shard, 1u);
    EXPECT_EQ(m.find_tensor("t5")->shard, 2u);
    EXPECT_EQ(m.find_tensor("t6"), nullptr);
    EXPECT_EQ(m.primary().get_string("general.architecture"), "llama");
    // Each shard file: 106 + "general.architecture" kv (8 + 20 + 4 + 8 + 5 = 45, shard 1 only)
    // + 2 tensor infos of 34 bytes, padded to 32, + 64 bytes of data.
    const uint64_t s1 = (106 + 45 + 68 + 31) / 32 * 32 + 64;
    const uint64_t s23 = (106 + 68 + 31) / 32 * 32 + 64;
    EXPECT_EQ(m.total_file_bytes(), s1 + 2 * s23);
  }
}

TEST(SplitSet, MissingShardIsNamed) {
  TempDir dir;
  write_set(dir);
  ASSERT_EQ(::unlink(dir.file(shard_name(2)).c_str()), 0);
  for (int k : {1, 3}) {
    EXPECT_TRUE(ThrowsErrorMentioning([&] { GgufModel::open(dir.file(shard_name(k))); },
                                      {dir.file(shard_name(2)), "missing"}))
        << k;
  }
}

TEST(SplitSet, DuplicatedShardIsNamed) {
  // The file named shard 2 is a copy of shard 1 (split.no 0 twice).
  TempDir dir;
  write_set(dir);
  fs::copy_file(dir.file(shard_name(1)), dir.file(shard_name(2)), fs::copy_options::overwrite_existing);
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file(shard_name(1))); }, dir.file(shard_name(2)),
                                "key \"split.no\"", 44, "duplicated shard"));
}

TEST(SplitSet, ShardNumberDisagreesWithFileName) {
  // Shards 2 and 3 swapped their contents: split.no 1 lives in ...-00003-of-00003.gguf.
  TempDir dir;
  write_set(dir);
  fs::rename(dir.file(shard_name(2)), dir.file("tmp"));
  fs::rename(dir.file(shard_name(3)), dir.file(shard_name(2)));
  fs::rename(dir.file("tmp"), dir.file(shard_name(3)));
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file(shard_name(1))); }, dir.file(shard_name(3)),
                                "key \"split.no\"", 44, "file name says shard 3"));
}

TEST(SplitSet, DisagreeingSplitCount) {
  TempDir dir;
  write_set(dir);
  ShardSpec s;
  s.no = 1;
  s.count = 4;
  s.tensors = {"t2", "t3"};
  test::write_file(dir.file(shard_name(2)), shard_bytes(s));
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file(shard_name(3))); }, dir.file(shard_name(2)),
                                "key \"split.count\"", 69, "4 shards"));
}

TEST(SplitSet, SplitNoOutOfRange) {
  TempDir dir;
  write_set(dir);
  ShardSpec s;
  s.no = 7;
  s.tensors = {"t4", "t5"};
  test::write_file(dir.file(shard_name(3)), shard_bytes(s));
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file(shard_name(1))); }, dir.file(shard_name(3)),
                                "key \"split.no\"", 44, "out of range"));
}

TEST(SplitSet, DisagreeingTensorsCount) {
  TempDir dir;
  write_set(dir);
  ShardSpec s;
  s.no = 2;
  s.total = 7;
  s.tensors = {"t4", "t5"};
  test::write_file(dir.file(shard_name(3)), shard_bytes(s));
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file(shard_name(1))); }, dir.file(shard_name(3)),
                                "key \"split.tensors.count\"", 102, "says 7 tensors"));
}

TEST(SplitSet, TensorsCountDisagreesWithShards) {
  // All shards say 7 tensors but hold 6: reported on shard 1.
  TempDir dir;
  for (int k = 0; k < 3; ++k) {
    ShardSpec s;
    s.no = k;
    s.total = 7;
    s.tensors = {"t" + std::to_string(2 * k), "t" + std::to_string(2 * k + 1)};
    test::write_file(dir.file(shard_name(k + 1)), shard_bytes(s));
  }
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file(shard_name(2))); }, dir.file(shard_name(1)),
                                "key \"split.tensors.count\"", 102, "shards hold 6"));
}

TEST(SplitSet, MissingSplitKey) {
  TempDir dir;
  write_set(dir);
  ShardSpec s;
  s.no = 1;
  s.with_total = false;
  s.tensors = {"t2", "t3"};
  test::write_file(dir.file(shard_name(2)), shard_bytes(s));
  try {
    GgufModel::open(dir.file(shard_name(1)));
    FAIL() << "shard without split.tensors.count accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), dir.file(shard_name(2)));
    EXPECT_EQ(e.field(), "key \"split.tensors.count\"");
  }
}

TEST(SplitSet, DuplicateTensorAcrossShards) {
  // Shard 3 repeats "t2" of shard 2; its first tensor info is at 106.
  TempDir dir;
  write_set(dir);
  ShardSpec s;
  s.no = 2;
  s.tensors = {"t2", "t5"};
  test::write_file(dir.file(shard_name(3)), shard_bytes(s));
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file(shard_name(1))); }, dir.file(shard_name(3)),
                                "tensor \"t2\" name", 106, dir.file(shard_name(2))));
}

TEST(SplitSet, BrokenShardIsNamed) {
  TempDir dir;
  write_set(dir);
  std::vector<uint8_t> b = test::read_file(dir.file(shard_name(3)));
  b.resize(b.size() - 1);  // last tensor's data cut by one byte
  test::write_file(dir.file(shard_name(3)), b);
  try {
    GgufModel::open(dir.file(shard_name(1)));
    FAIL() << "truncated shard accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), dir.file(shard_name(3)));
    EXPECT_EQ(e.field(), "tensor \"t5\" offset");
  }
}

TEST(SplitSet, LoneShardUnderAnotherName) {
  TempDir dir;
  ShardSpec s;
  s.no = 1;
  s.tensors = {"t2", "t3"};
  test::write_file(dir.file("lone.gguf"), shard_bytes(s));
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open(dir.file("lone.gguf")); }, dir.file("lone.gguf"),
                                "key \"split.count\"", 69, "shard 2 of 3"));
}

TEST(SplitSet, ShardNumberOutOfRangeInName) {
  TempDir dir;
  ShardSpec s;
  s.tensors = {"t0"};
  test::write_file(dir.file("m-00004-of-00003.gguf"), shard_bytes(s));
  EXPECT_TRUE(ThrowsErrorMentioning([&] { GgufModel::open(dir.file("m-00004-of-00003.gguf")); },
                                    {dir.file("m-00004-of-00003.gguf"), "out of range"}));
}

TEST(SplitSet, SingleFileAndMissingFile) {
  TempDir dir;
  GgufWriter w;
  w.kv("general.architecture", TV::str("qwen3moe"));
  w.tensor("a", test::kF32, {4});
  test::write_file(dir.file("one.gguf"), w.build());
  const GgufModel m = GgufModel::open(dir.file("one.gguf"));
  EXPECT_EQ(m.shards().size(), 1u);
  EXPECT_EQ(m.origin(), dir.file("one.gguf"));
  EXPECT_TRUE(ThrowsErrorMentioning([&] { GgufModel::open(dir.file("nope.gguf")); }, {dir.file("nope.gguf")}));
  EXPECT_THROW(GgufModel::open_files({}), Error);
}

TEST(SplitSet, GgufUnderADirectoryNamedManifests) {
  // Not an Ollama manifest: the file starts with the GGUF magic.
  TempDir dir;
  fs::create_directories(dir.path() + "/manifests/x");
  GgufWriter w;
  w.kv("general.architecture", TV::str("llama"));
  test::write_file(dir.path() + "/manifests/x/model", w.build());
  const GgufModel m = GgufModel::open(dir.path() + "/manifests/x/model");
  EXPECT_EQ(m.primary().get_string("general.architecture"), "llama");
}

TEST(ModelSourceStem, FileNamesAndSplitSets) {
  TempDir dir;
  EXPECT_EQ(model_source_stem("/m/tiny-dsv3-wordnet-Q4_K_M.gguf"), "tiny-dsv3-wordnet-Q4_K_M");
  EXPECT_EQ(model_source_stem("/m/Kimi-K3-Q2_K-00002-of-00013.gguf"), "Kimi-K3-Q2_K");
  EXPECT_EQ(model_source_stem("Upper.GGUF"), "Upper");
  EXPECT_EQ(model_source_stem("/m/no-suffix"), "no-suffix");
  EXPECT_EQ(model_source_stem("/m/.gguf"), ".gguf");  // nothing before the suffix: kept whole
  EXPECT_EQ(model_source_stem("/m/"), "model");
  EXPECT_EQ(model_source_stem(""), "model");
}

TEST(GgufSource, TheMagicDecidesNotTheName) {
  TempDir dir;
  GgufWriter w;
  w.kv("general.architecture", TV::str("llama"));
  test::write_file(dir.file("sha256-0123"), w.build());  // an Ollama blob's name: no suffix
  EXPECT_TRUE(is_gguf_source(dir.file("sha256-0123")));
  test::write_file(dir.file("fake.gguf"), std::vector<uint8_t>{'P', 'K', 3, 4, 0, 0, 0, 0});
  EXPECT_FALSE(is_gguf_source(dir.file("fake.gguf")));
  test::write_file(dir.file("short.gguf"), std::vector<uint8_t>{'G', 'G'});
  EXPECT_FALSE(is_gguf_source(dir.file("short.gguf")));
  EXPECT_FALSE(is_gguf_source(dir.path()));                // a directory (an Expert Pack's)
  EXPECT_FALSE(is_gguf_source(dir.file("missing.gguf")));  // not a file, not a name
}

// ---------------------------------------------------------------------------------------------
// Ollama store

// sha256 of fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf (fixtures/README.md).
const std::string kQwenSha = "99683a6d73f41cbce6e1c7cad755017f774b5492c9e4ad61ba3d635873089c73";
const std::string kQwenPath = std::string(MOEPACK_SHARED_DIR) + "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf";
constexpr const char* kModelMedia = "application/vnd.ollama.image.model";

class OllamaStore : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/models";
    fs::create_directories(root_ + "/blobs");
    // The model blob: a symlink to the fixture (Ollama's blobs are plain files; stat follows).
    fs::create_symlink(kQwenPath, blob(kQwenSha));
    blob_size_ = fs::file_size(kQwenPath);
    manifest("registry.ollama.ai/library/tiny/q4", layers_with(kModelMedia, "sha256:" + kQwenSha, blob_size_));
    manifest("registry.ollama.ai/library/tiny/latest", layers_with(kModelMedia, "sha256:" + kQwenSha, blob_size_));
    manifest("registry.ollama.ai/myns/tiny/latest", layers_with(kModelMedia, "sha256:" + kQwenSha, blob_size_));
    const char* old = std::getenv("OLLAMA_MODELS");
    had_env_ = old != nullptr;
    if (had_env_) old_env_ = old;
    ::setenv("OLLAMA_MODELS", root_.c_str(), 1);
  }
  void TearDown() override {
    if (had_env_) {
      ::setenv("OLLAMA_MODELS", old_env_.c_str(), 1);
    } else {
      ::unsetenv("OLLAMA_MODELS");
    }
  }

  std::string blob(const std::string& hex) const { return root_ + "/blobs/sha256-" + hex; }

  static nlohmann::json layers_with(const std::string& media, const std::string& digest, uint64_t size) {
    return nlohmann::json{
        {"schemaVersion", 2},
        {"mediaType", "application/vnd.docker.distribution.manifest.v2+json"},
        {"config", {{"mediaType", "application/vnd.docker.container.image.v1+json"},
                    {"digest", "sha256:" + std::string(64, 'c')},
                    {"size", 10}}},
        {"layers", nlohmann::json::array({
                       {{"mediaType", media}, {"digest", digest}, {"size", size}},
                       {{"mediaType", "application/vnd.ollama.image.template"},
                        {"digest", "sha256:" + std::string(64, 'd')},
                        {"size", 5}},
                   })}};
  }

  // Writes manifests/<rel> with `content` and returns its path.
  std::string manifest(const std::string& rel, const nlohmann::json& content) {
    return manifest_text(rel, content.dump());
  }
  std::string manifest_text(const std::string& rel, const std::string& text) {
    const std::string p = root_ + "/manifests/" + rel;
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }

  TempDir dir_{"moepack-ollama"};
  std::string root_;
  uint64_t blob_size_ = 0;
  bool had_env_ = false;
  std::string old_env_;
};

TEST_F(OllamaStore, ValidDigest) {
  EXPECT_TRUE(ollama_valid_digest("sha256:" + kQwenSha));
  EXPECT_FALSE(ollama_valid_digest("sha256:" + kQwenSha.substr(1)));          // 63 digits
  EXPECT_FALSE(ollama_valid_digest("sha256:" + kQwenSha + "0"));              // 65 digits
  std::string upper = kQwenSha;
  upper[0] = 'F';
  EXPECT_FALSE(ollama_valid_digest("sha256:" + upper));                        // uppercase
  EXPECT_FALSE(ollama_valid_digest("sha512:" + kQwenSha));
  EXPECT_FALSE(ollama_valid_digest("sha256-" + kQwenSha));
  EXPECT_FALSE(ollama_valid_digest("sha256:../../../../etc/passwd"));
  EXPECT_FALSE(ollama_valid_digest("sha256:" + kQwenSha.substr(0, 60) + "/../"));
  EXPECT_FALSE(ollama_valid_digest(""));
}

TEST_F(OllamaStore, NameShapes) {
  EXPECT_TRUE(ollama_looks_like_name("tiny"));
  EXPECT_TRUE(ollama_looks_like_name("tiny:q4"));
  EXPECT_TRUE(ollama_looks_like_name("myns/tiny"));
  EXPECT_TRUE(ollama_looks_like_name("registry.ollama.ai/library/tiny:latest"));
  EXPECT_FALSE(ollama_looks_like_name("../tiny"));
  EXPECT_FALSE(ollama_looks_like_name("library/../tiny"));
  EXPECT_FALSE(ollama_looks_like_name("tiny:.."));
  EXPECT_FALSE(ollama_looks_like_name("a/b/c/d"));
  EXPECT_FALSE(ollama_looks_like_name("/abs/path"));
  EXPECT_FALSE(ollama_looks_like_name("model.gguf"));
  EXPECT_FALSE(ollama_looks_like_name("Model.GGUF"));
  EXPECT_FALSE(ollama_looks_like_name(""));
}

TEST_F(OllamaStore, ResolvesNameTag) {
  const OllamaModel m = ollama_resolve("tiny:q4", root_);
  EXPECT_EQ(m.name, "registry.ollama.ai/library/tiny:q4");
  EXPECT_EQ(m.manifest_path, root_ + "/manifests/registry.ollama.ai/library/tiny/q4");
  EXPECT_EQ(m.blob_path, blob(kQwenSha));
  EXPECT_EQ(m.digest, "sha256:" + kQwenSha);
  EXPECT_EQ(m.size, blob_size_);
  // Tag defaults to latest; the models directory comes from OLLAMA_MODELS.
  EXPECT_EQ(ollama_resolve("tiny").manifest_path, root_ + "/manifests/registry.ollama.ai/library/tiny/latest");
  EXPECT_EQ(ollama_models_dir(), root_);
}

TEST_F(OllamaStore, ResolvesNamespaceAndManifestPath) {
  const OllamaModel m = ollama_resolve("myns/tiny", root_);
  EXPECT_EQ(m.manifest_path, root_ + "/manifests/registry.ollama.ai/myns/tiny/latest");
  EXPECT_EQ(m.blob_path, blob(kQwenSha));
  const std::string mp = root_ + "/manifests/registry.ollama.ai/library/tiny/q4";
  const OllamaModel m2 = ollama_resolve(mp);
  EXPECT_EQ(m2.manifest_path, mp);
  EXPECT_EQ(m2.blob_path, blob(kQwenSha));
}

TEST_F(OllamaStore, GgufModelOpensStoreNames) {
  for (const std::string& name : {std::string("tiny:q4"), std::string("library/tiny:latest"),
                                  std::string("myns/tiny"),
                                  root_ + "/manifests/registry.ollama.ai/library/tiny/q4"}) {
    const GgufModel m = GgufModel::open(name);
    ASSERT_EQ(m.shards().size(), 1u) << name;
    EXPECT_EQ(m.primary().path(), blob(kQwenSha)) << name;
    EXPECT_EQ(m.origin().rfind("ollama ", 0), 0u) << m.origin();
    // The fixture's README: qwen3moe, 4 blocks, 8 experts.
    const ModelSummary s = summarize(m);
    EXPECT_EQ(s.architecture, "qwen3moe");
    EXPECT_EQ(s.expert_count, 8u);
  }
}

TEST_F(OllamaStore, StemsAndSourcesOfStoreModels) {
  const std::string q4 = root_ + "/manifests/registry.ollama.ai/library/tiny/q4";
  EXPECT_TRUE(is_gguf_source(q4));
  EXPECT_TRUE(is_gguf_source("tiny:q4"));
  EXPECT_EQ(model_source_stem(q4), "tiny-q4");
  // A namespace other than "library" leads, so myns/tiny and library/tiny get two packs.
  EXPECT_EQ(model_source_stem(root_ + "/manifests/registry.ollama.ai/myns/tiny/latest"), "myns-tiny-latest");
  EXPECT_EQ(model_source_stem("myns/tiny"), "myns-tiny-latest");
  EXPECT_EQ(model_source_stem("qwen3:0.6b"), "qwen3-0.6b");
  EXPECT_EQ(model_source_stem("registry.ollama.ai/library/tiny"), "tiny-latest");
  EXPECT_EQ(model_source_stem("hf.co/bartowski/Qwen3-30B:Q4_K_M"), "bartowski-Qwen3-30B-Q4_K_M");
  // The blob itself is a GGUF file: its own name.
  EXPECT_TRUE(is_gguf_source(blob(kQwenSha)));
  EXPECT_EQ(model_source_stem(blob(kQwenSha)), "sha256-" + kQwenSha);
}

TEST_F(OllamaStore, ManifestPathsAreSplitFromTheEnd) {
  const OllamaName n = ollama_parse_name(root_ + "/manifests/registry.ollama.ai/myns/tiny/latest");
  EXPECT_EQ(n.host, "registry.ollama.ai");
  EXPECT_EQ(n.ns, "myns");
  EXPECT_EQ(n.model, "tiny");
  EXPECT_EQ(n.tag, "latest");
  // A manifest with too few components below manifests/: an error naming it, and a stem of
  // its folder and name.
  const std::string shallow = root_ + "/manifests/tiny/q9";
  std::filesystem::create_directories(root_ + "/manifests/tiny");
  { std::ofstream(shallow) << "{}"; }
  EXPECT_TRUE(
      ThrowsErrorMentioning([&] { ollama_parse_name(shallow); }, {shallow, "not an Ollama manifest path"}));
  EXPECT_EQ(model_source_stem(shallow), "tiny-q9");
}

TEST(OllamaName, PartsOfNamesAndManifestPaths) {
  const OllamaName a = ollama_parse_name("qwen3:0.6b");
  EXPECT_EQ(a.host, "registry.ollama.ai");
  EXPECT_EQ(a.ns, "library");
  EXPECT_EQ(a.model, "qwen3");
  EXPECT_EQ(a.tag, "0.6b");
  const OllamaName b = ollama_parse_name("localhost:11434/me/m");
  EXPECT_EQ(b.host, "localhost:11434");
  EXPECT_EQ(b.ns, "me");
  EXPECT_EQ(b.model, "m");
  EXPECT_EQ(b.tag, "latest");
  EXPECT_TRUE(ThrowsErrorMentioning([] { ollama_parse_name("/abs/x.gguf"); },
                                    {"/abs/x.gguf", "not a valid Ollama model name"}));
  EXPECT_TRUE(ThrowsErrorMentioning([] { ollama_parse_name("a/b/c/d"); }, {"a/b/c/d"}));
}

TEST_F(OllamaStore, UnknownModel) {
  EXPECT_TRUE(ThrowsErrorMentioning([&] { ollama_resolve("nosuch:tag", root_); }, {"nosuch:tag", "no such Ollama model"}));
  EXPECT_TRUE(ThrowsErrorMentioning([&] { GgufModel::open("nosuch"); }, {"nosuch"}));
}

TEST_F(OllamaStore, NamesWithDotDotAreRefused) {
  // A manifest outside the store that a ".." name would reach.
  fs::create_directories(dir_.path() + "/evil");
  std::ofstream(dir_.path() + "/evil/latest") << layers_with(kModelMedia, "sha256:" + kQwenSha, blob_size_).dump();
  for (const char* n : {"../evil", "library/../../evil", "tiny:..", "registry.ollama.ai/../x/y"}) {
    EXPECT_TRUE(ThrowsErrorMentioning([&] { ollama_resolve(n, root_); }, {n})) << n;
  }
}

TEST_F(OllamaStore, BadDigests) {
  std::string upper = kQwenSha;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const std::vector<std::string> bad = {
      "sha256:" + upper,                       // uppercase
      "sha256:" + kQwenSha.substr(0, 32),       // short
      "sha256:../../../../../../etc/passwd",   // escape
      "sha256:../" + kQwenSha.substr(3),       // escape with the right length
      "sha512:" + kQwenSha,
      kQwenSha,
  };
  for (const std::string& d : bad) {
    const std::string mp = manifest("registry.ollama.ai/library/bad/latest", layers_with(kModelMedia, d, blob_size_));
    EXPECT_TRUE(ThrowsFormatError([&] { ollama_resolve("bad", root_); }, mp, "layers[0].digest", 0)) << d;
  }
  // A digest that is not a string.
  nlohmann::json j = layers_with(kModelMedia, "x", blob_size_);
  j["layers"][0]["digest"] = 5;
  const std::string mp = manifest("registry.ollama.ai/library/bad/latest", j);
  EXPECT_TRUE(ThrowsFormatError([&] { ollama_resolve("bad", root_); }, mp, "layers[0].digest", 0));
}

TEST_F(OllamaStore, MissingBlob) {
  const std::string hex(64, 'e');
  const std::string mp = manifest("registry.ollama.ai/library/gone/latest", layers_with(kModelMedia, "sha256:" + hex, 10));
  EXPECT_TRUE(ThrowsErrorMentioning([&] { ollama_resolve("gone", root_); }, {mp, blob(hex), "missing"}));
  EXPECT_TRUE(ThrowsErrorMentioning([&] { GgufModel::open("gone"); }, {mp}));
}

TEST_F(OllamaStore, SizeMismatch) {
  const std::string mp =
      manifest("registry.ollama.ai/library/sz/latest", layers_with(kModelMedia, "sha256:" + kQwenSha, blob_size_ + 1));
  EXPECT_TRUE(ThrowsFormatError([&] { ollama_resolve("sz", root_); }, mp, "layers.size", 0, blob(kQwenSha)));
  // A negative or non-integer size.
  nlohmann::json j = layers_with(kModelMedia, "sha256:" + kQwenSha, 0);
  j["layers"][0]["size"] = -1;
  const std::string mp2 = manifest("registry.ollama.ai/library/sz/latest", j);
  EXPECT_TRUE(ThrowsFormatError([&] { ollama_resolve("sz", root_); }, mp2, "layers[0].size", 0));
}

TEST_F(OllamaStore, NoModelLayer) {
  const std::string mp = manifest("registry.ollama.ai/library/nomodel/latest",
                                  layers_with("application/vnd.ollama.image.license", "sha256:" + kQwenSha, blob_size_));
  EXPECT_TRUE(ThrowsFormatError([&] { ollama_resolve("nomodel", root_); }, mp, "layers", 0, kModelMedia));
  const std::string mp2 = manifest("registry.ollama.ai/library/nolayers/latest", nlohmann::json{{"schemaVersion", 2}});
  EXPECT_TRUE(ThrowsFormatError([&] { ollama_resolve("nolayers", root_); }, mp2, "layers", 0));
  // Two model layers are ambiguous.
  nlohmann::json j = layers_with(kModelMedia, "sha256:" + kQwenSha, blob_size_);
  j["layers"][1]["mediaType"] = kModelMedia;
  const std::string mp3 = manifest("registry.ollama.ai/library/two/latest", j);
  EXPECT_TRUE(ThrowsFormatError([&] { ollama_resolve("two", root_); }, mp3, "layers[1]", 0, "more than one"));
}

TEST_F(OllamaStore, InvalidManifestJson) {
  const std::string mp = manifest_text("registry.ollama.ai/library/junk/latest", "{\"layers\": [");
  try {
    ollama_resolve("junk", root_);
    FAIL() << "invalid JSON accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), mp);
    EXPECT_EQ(e.field(), "manifest");
  }
}

TEST_F(OllamaStore, BlobThatIsNotGguf) {
  const std::string hex(64, 'a');
  test::write_file(blob(hex), std::vector<uint8_t>(100, 'x'));
  manifest("registry.ollama.ai/library/notgguf/latest", layers_with(kModelMedia, "sha256:" + hex, 100));
  EXPECT_TRUE(ThrowsFormatError([&] { GgufModel::open("notgguf"); }, blob(hex), "magic", 0));
}

// A FIFO named as a model, a manifest or a file to hash is refused at once with "a FIFO": before the
// sixtieth session `moepack inspect f.gguf` on one blocked for ever in open(2), waiting for a writer. A
// watchdog opens the FIFO for writing after 5 s, which would release a reader that blocked; the test then
// fails on the time taken instead of hanging.
TEST(ModelPath, AFifoIsRefusedAtOnce) {
  TempDir dir;
  const std::string fifo = dir.path() + "/model.gguf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 50 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // releases a blocked reader
      if (fd >= 0) ::close(fd);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto refused = [&](const char* what, const auto& call) {
    try {
      call();
      ADD_FAILURE() << what << " opened a FIFO";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fifo), std::string::npos) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("a FIFO"), std::string::npos) << what << ": " << e.what();
    }
  };
  EXPECT_FALSE(is_gguf_source(fifo));
  refused("GgufModel::open", [&] { (void)GgufModel::open(fifo); });
  refused("open_file_source", [&] { (void)open_file_source(fifo); });
  refused("read_manifest", [&] { (void)read_manifest(fifo); });
  refused("sha256_file_range", [&] { (void)sha256_file_range(fifo, 0, 1); });
  refused("open_file_source of a directory", [&] {
    try {
      (void)open_file_source(dir.path());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("a directory"), std::string::npos) << e.what();
      throw Error(fifo + ": a FIFO (the directory's case passed)");
    }
  });
  done = true;
  watchdog.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4)) << "a call blocked on the FIFO";
}

}  // namespace
}  // namespace moepack
