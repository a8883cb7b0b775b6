// Shard-by-shard mode of `moepack build` (--delete-source-shards), on COPIES of the 3-shard
// deepseek2-tiny Q2_K split set in a temp dir: the shards disappear one by one while the build
// runs, the finished pack verifies --full, every expert block is byte-identical to the
// original GGUF slices and to a normal build of the original, and the manifest's source
// digests equal fixtures/SHA256SUMS. A forked child dies (_exit) at every phase boundary and
// inside the delete phase; the same command then completes from the persisted plan (the
// deleted shards are never needed again) or nothing loadable is there. A missing plan with a
// missing shard is a precise error. Space: the pre-flight numbers of both modes against a
// re-derivation from the file sizes and the independently checked layout; the
// STATX_DIOALIGN refusal through the test-only injection.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/pack_verify.h"
#include "packbuilder/pack_builder.h"
#include "tests/packbuilder/pack_test_util.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

namespace fs = std::filesystem;
constexpr int kCrashStatus = 86;
const char* kShardNames[3] = {"deepseek2-tiny-Q2_K-00001-of-00003.gguf", "deepseek2-tiny-Q2_K-00002-of-00003.gguf",
                              "deepseek2-tiny-Q2_K-00003-of-00003.gguf"};
std::string original(int k) { return test::shared(std::string("fixtures/deepseek2-tiny/") + kShardNames[k]); }

// Copies the three shards into dir/src and returns shard 1's path.
std::string copy_shards(const test::TempDir& tmp) {
  fs::create_directories(tmp.file("src"));
  for (int k = 0; k < 3; ++k) {
    const std::string to = tmp.file(std::string("src/") + kShardNames[k]);
    fs::copy_file(original(k), to, fs::copy_options::overwrite_existing);
    fs::permissions(to, fs::perms::owner_read | fs::perms::owner_write);
  }
  return tmp.file(std::string("src/") + kShardNames[0]);
}

std::vector<bool> shards_present(const test::TempDir& tmp) {
  std::vector<bool> v;
  for (int k = 0; k < 3; ++k) v.push_back(fs::exists(tmp.file(std::string("src/") + kShardNames[k])));
  return v;
}

BuildOptions options(const std::string& src, const std::string& out) {
  BuildOptions o;
  o.source = src;
  o.out_dir = out;
  o.safety_margin_bytes = 0;
  o.delete_source_shards = true;
  o.batch_bytes = 4096;            // one expert (73728 B) per batch: 48 data points
  o.checkpoint_bytes = 8 * 73728;  // 6 checkpoints plus the shards' ready points
  o.tool_version = "moepack test";
  return o;
}

bool loadable(const std::string& dir) {
  try {
    ExpertPack::open(dir);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Entries of /proc/self/fd that still link to `path` (the kernel shows an unlinked file as
// "PATH (deleted)"): an fd left open keeps a deleted shard's blocks allocated.
std::vector<std::string> open_fds_on(const std::string& path) {
  std::vector<std::string> out;
  const std::string abs = fs::weakly_canonical(path).string();
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string t = fs::read_symlink(e.path(), ec).string();
    if (!ec && (t == abs || t == abs + " (deleted)")) out.push_back(e.path().filename().string() + " -> " + t);
  }
  return out;
}

std::string scratch_root() { return fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp"; }

// The pack of a normal build of the original (read-only) shards.
struct Reference {
  test::TempDir dir{"moepack-shard-ref"};
  std::string pack;
  Reference() {
    BuildOptions o;
    o.source = original(0);
    o.out_dir = pack = dir.file("p");
    o.safety_margin_bytes = 0;
    build_pack(o);
  }
};

void expect_same_blocks(const std::string& a_dir, const std::string& b_dir) {
  const ExpertPack a = ExpertPack::open(a_dir), b = ExpertPack::open(b_dir);
  ASSERT_EQ(a.layout().data_end, b.layout().data_end);
  for (uint32_t l = 0; l < a.layout().layers.size(); ++l) {
    const uint64_t stride = a.layout().layers[l].stride;
    std::vector<uint8_t> x(stride), y(stride);
    for (uint32_t e = 0; e < a.layout().layers[l].n_experts; ++e) {
      a.read_expert(l, e, x.data());
      b.read_expert(l, e, y.data());
      ASSERT_TRUE(x == y) << "expert block (" << l << ", " << e << ") differs";
    }
  }
}

void expect_finished(const std::string& out, const Reference& ref) {
  VerifyOptions full;
  full.full = true;
  const VerifyResult v = verify_pack(out, full);
  ASSERT_TRUE(v.ok) << v.message;
  expect_same_blocks(out, ref.pack);
  // The original shards (not the deleted copies) are the oracle for every block.
  test::expect_pack_matches_source(out, GgufModel::open(original(0)));
  const PackManifest m = ExpertPack::open(out).manifest();
  const auto sums = test::fixture_sums();
  ASSERT_EQ(m.sources.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(m.sources[k].sha256, sums.at(original(k))) << kShardNames[k];
  EXPECT_EQ(m.build.value("delete_source_shards", false), true);
  EXPECT_FALSE(fs::exists(out + "/build-state.json"));
}

TEST(PackShard, ShardsDisappearOneByOneAndThePackEqualsANormalBuild) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  const Reference ref;
  test::TempDir tmp("moepack-shard");
  const std::string src = copy_shards(tmp);
  const std::string out = tmp.file("p");
  BuildOptions o = options(src, out);
  std::vector<std::vector<bool>> after_each;  // shards present after each deletion
  std::vector<uint64_t> data_before;          // data batches written before each deletion
  uint64_t data_written = 0;
  std::vector<std::string> still_open;  // fds on a shard after its deletion
  o.hooks.at = [&](std::string_view p, uint64_t k) {
    if (p == "data") ++data_written;
    if (p == "shard-deleted") {
      after_each.push_back(shards_present(tmp));
      data_before.push_back(data_written);
      // Its space must be free now, not when the build ends: no fd of this process on it.
      for (const std::string& f : open_fds_on(tmp.file(std::string("src/") + kShardNames[k])))
        still_open.push_back("after deleting shard " + std::to_string(k) + ": fd " + f);
    }
  };
  const BuildResult r = build_pack(o);
  EXPECT_TRUE(r.source_deleted);
  ASSERT_EQ(r.shards_deleted.size(), 3u);
  ASSERT_EQ(after_each.size(), 3u);
  for (const std::string& f : still_open) ADD_FAILURE() << f;
  EXPECT_TRUE(still_open.empty());
  // One at a time: 2, then 1, then 0 shards left.
  for (size_t k = 0; k < 3; ++k) {
    int left = 0;
    for (bool b : after_each[k]) left += b ? 1 : 0;
    EXPECT_EQ(left, static_cast<int>(2 - k)) << "after deletion " << k;
  }
  // Not all at the end: shard 1 (metadata, embeddings, no routed experts) goes right after
  // dense.gguf, the next one while experts are still being copied.
  EXPECT_EQ(data_before[0], 0u);
  EXPECT_GT(data_before[1], 0u);
  EXPECT_LT(data_before[1], 48u);
  EXPECT_EQ(data_written, 48u);
  expect_finished(out, ref);
}

// Runs the build in a child that dies at (point, index); returns the child's exit status.
int crash_at(const std::string& src, const std::string& out, const std::string& point, uint64_t index) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    BuildOptions o = options(src, out);
    o.hooks.at = [&](std::string_view name, uint64_t i) {
      if (name == point && i == index) ::_exit(kCrashStatus);
    };
    try {
      build_pack(o);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(PackShard, CrashAtEveryPhaseAndInsideTheDeletePhaseThenResume) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  const Reference ref;
  // Which shard indexes get deleted (a shard without experts is deleted too).
  std::vector<std::pair<std::string, uint64_t>> points = {
      {"plan", 0},   {"preflight", 0}, {"plan-saved", 0}, {"dense", 0},    {"header", 0},
      {"data", 0},   {"data", 20},     {"data", 47},      {"checkpoint", 0}, {"checkpoint", 3},
      {"experts", 0}, {"sources", 0},  {"manifest-temp", 0}, {"manifest", 0}, {"done", 0}};
  for (uint64_t k = 0; k < 3; ++k) {
    points.push_back({"shard-verified", k});
    points.push_back({"shard-deleted", k});
  }
  for (const auto& [point, index] : points) {
    SCOPED_TRACE(point + " " + std::to_string(index));
    test::TempDir tmp("moepack-shard");
    const std::string src = copy_shards(tmp);
    const std::string out = tmp.file("p");
    ASSERT_EQ(crash_at(src, out, point, index), kCrashStatus) << "the build never reached this point";
    const bool after_rename = point == "manifest" || point == "done";
    if (after_rename) {
      EXPECT_TRUE(verify_pack(out).ok);
    } else {
      EXPECT_FALSE(loadable(out));
      EXPECT_FALSE(verify_pack(out).ok);
    }
    const std::vector<bool> before = shards_present(tmp);
    // The same command again (shard 1's path, even when that shard is gone).
    const BuildResult r = build_pack(options(src, out));
    EXPECT_EQ(r.already_complete, after_rename);
    const bool some_gone = std::find(before.begin(), before.end(), false) != before.end();
    if (!after_rename) {
      EXPECT_EQ(r.from_persisted_plan, some_gone);
    }
    expect_finished(out, ref);
    EXPECT_EQ(shards_present(tmp), std::vector<bool>(3, false));
  }
}

TEST(PackShard, MissingPlanAndMissingShardIsAPreciseError) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  test::TempDir tmp("moepack-shard");
  const std::string src = copy_shards(tmp);
  const std::string out = tmp.file("p");
  // A normal build (no plan persisted) is interrupted, then shard 2 goes missing.
  const pid_t pid = ::fork();
  if (pid == 0) {
    BuildOptions o = options(src, out);
    o.delete_source_shards = false;
    o.hooks.at = [](std::string_view name, uint64_t i) {
      if (name == "data" && i == 10) ::_exit(kCrashStatus);
    };
    try {
      build_pack(o);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == kCrashStatus);
  const std::string gone = tmp.file(std::string("src/") + kShardNames[1]);
  fs::remove(gone);
  try {
    build_pack(options(src, out));
    FAIL() << "the build went on without shard 2";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(kShardNames[1]), std::string::npos) << msg;
    EXPECT_NE(msg.find("no persisted build plan"), std::string::npos) << msg;
    EXPECT_NE(msg.find(out), std::string::npos) << msg;
  }
  EXPECT_FALSE(loadable(out));
  EXPECT_TRUE(fs::exists(src)) << "nothing else may be deleted";
}

// After the shard holding expert (0, 0)'s gate slice (the first MoE layer's stacked
// ffn_gate_exps) is gone, damage that expert in experts.bin: the resumed build must stop,
// naming the expert and the deleted shard, and leave nothing loadable.
TEST(PackShard, DamagedCopyOfADeletedShardStopsTheResume) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  test::TempDir tmp("moepack-shard");
  const std::string src = copy_shards(tmp);
  const std::string out = tmp.file("p");
  uint32_t first_block = UINT32_MAX, shard = 0;
  const GgufModel model = GgufModel::open(original(0));
  for (const GgufTensorRef& t : model.tensors()) {
    const std::string& n = t.info->name;
    if (n.find(".ffn_gate_exps.") == std::string::npos) continue;
    const uint32_t block = static_cast<uint32_t>(std::stoul(n.substr(4)));
    if (block < first_block) {
      first_block = block;
      shard = t.shard;
    }
  }
  ASSERT_NE(first_block, UINT32_MAX);
  const std::string gone = tmp.file(std::string("src/") + kShardNames[shard]);
  ASSERT_EQ(crash_at(src, out, "shard-deleted", shard), kCrashStatus);
  ASSERT_FALSE(fs::exists(gone));
  {
    FILE* f = std::fopen((out + "/experts.bin").c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 4096 + 100, SEEK_SET);  // data_start = 4096, expert (0, 0)
    std::fputc(0x5A ^ std::fgetc(f), f);
    std::fclose(f);
  }
  try {
    build_pack(options(src, out));
    FAIL() << "the build went on with a damaged expert whose shard is gone";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("expert 0 of layer 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find(gone), std::string::npos) << msg;
    EXPECT_NE(msg.find("deleted by this build"), std::string::npos) << msg;
  }
  EXPECT_FALSE(loadable(out));
}

// The pre-flight numbers, re-derived here from the file sizes, the tensor directory and the
// layout of the normal build (itself checked block by block against the GGUF).
TEST(PackShard, PreflightSpaceOfBothModes) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  const Reference ref;
  test::TempDir tmp("moepack-shard");
  const std::string src = copy_shards(tmp);
  const GgufModel model = GgufModel::open(src);
  const ExpertPack pack = ExpertPack::open(ref.pack);
  const PackLayout& L = pack.layout();
  const uint64_t dense = fs::file_size(ref.pack + "/dense.gguf");
  // Per shard: the end offset in experts.bin of the last layer with an expert tensor in it.
  std::vector<uint64_t> ready(3, dense + L.data_start), size(3);
  for (int k = 0; k < 3; ++k) size[k] = fs::file_size(tmp.file(std::string("src/") + kShardNames[k]));
  for (const GgufTensorRef& t : model.tensors()) {
    const std::string& n = t.info->name;
    if (n.find("_exps.") == std::string::npos) continue;
    const uint32_t block = static_cast<uint32_t>(std::stoul(n.substr(4)));
    for (const PackLayer& ly : L.layers)
      if (ly.block == block) ready[t.shard] = std::max(ready[t.shard], dense + ly.base + ly.n_experts * ly.stride);
  }
  uint64_t peak = std::max<uint64_t>(size[0] + size[1] + size[2], dense + L.data_end);
  for (int k = 0; k < 3; ++k) {
    uint64_t u = ready[k];
    for (int j = 0; j < 3; ++j)
      if (ready[j] >= ready[k]) u += size[j];
    peak = std::max(peak, u);
  }
  const BuildSpace sp = estimate_build_space(model, tmp.file("p"));
  EXPECT_EQ(sp.source_bytes_on_target_fs, size[0] + size[1] + size[2]);
  EXPECT_EQ(sp.shard_mode_peak, peak);
  // M, the manifest + state estimate of pack_builder.h: 2 (100 E + 8192 L + 65536) + 128 E + 65536
  // for a split set. This fixture: E = 48 experts in L = 3 MoE layers (16 each; the 48 data
  // batches of ShardsDisappearOneByOne...), so by hand M = 2 (4800 + 24576 + 65536) + 6144 +
  // 65536 = 261 504 bytes.
  ASSERT_EQ(L.expert_count(), 48u);
  ASSERT_EQ(L.layers.size(), 3u);
  const uint64_t meta = 261504;
  EXPECT_EQ(sp.pack_bytes, dense + L.data_end + meta);
  EXPECT_EQ(sp.normal_needed, dense + L.data_end + meta);
  EXPECT_EQ(sp.shard_mode_needed, peak + meta - (size[0] + size[1] + size[2]));
  std::printf("space: normal build needs %llu bytes, shard-by-shard mode %llu (peak %llu, shards %llu)\n",
              static_cast<unsigned long long>(sp.normal_needed), static_cast<unsigned long long>(sp.shard_mode_needed),
              static_cast<unsigned long long>(sp.shard_mode_peak),
              static_cast<unsigned long long>(sp.source_bytes_on_target_fs));
  ASSERT_TRUE(sp.shard_mode_helps);
  ASSERT_LT(sp.shard_mode_needed, sp.normal_needed);

  // Free space between the two: the normal build is refused and names the shard mode's need;
  // the shard mode passes. Below the shard mode's need: refused with both numbers.
  const uint64_t between = (sp.shard_mode_needed + sp.normal_needed) / 2;
  BuildOptions normal = options(src, tmp.file("p"));
  normal.delete_source_shards = false;
  normal.hooks.free_bytes = [&] { return between; };
  try {
    build_pack(normal);
    FAIL() << "a normal build fit into " << between;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(sp.normal_needed) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(between) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--delete-source-shards"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(sp.shard_mode_needed) + " bytes"), std::string::npos) << msg;
  }
  EXPECT_FALSE(loadable(tmp.file("p")));
  BuildOptions small = options(src, tmp.file("p"));
  small.hooks.free_bytes = [&] { return sp.shard_mode_needed - 1; };
  try {
    build_pack(small);
    FAIL() << "the shard mode fit into " << sp.shard_mode_needed - 1;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(sp.shard_mode_needed) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(sp.shard_mode_needed - 1) + " bytes"), std::string::npos) << msg;
  }
  EXPECT_EQ(shards_present(tmp), std::vector<bool>(3, true)) << "a refused build deleted a shard";
  BuildOptions fits = options(src, tmp.file("p"));
  fits.hooks.free_bytes = [&] { return between; };
  build_pack(fits);
  EXPECT_EQ(shards_present(tmp), std::vector<bool>(3, false));
  EXPECT_TRUE(verify_pack(tmp.file("p")).ok);
}

// A shard the shard mode must not delete: the build is refused before anything is written or
// deleted, naming the shard and the reason; estimate_build_space() agrees (the shard does not
// count as freed, the mode is not offered).
void expect_refused(const BuildOptions& o, const std::string& shard, const std::string& reason,
                    const std::vector<std::string>& must_exist) {
  try {
    build_pack(o);
    FAIL() << "shard mode accepted " << shard << " (" << reason << ")";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(shard + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
    EXPECT_NE(msg.find("--delete-source-shards"), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(o.out_dir)) << "a refused build wrote " << o.out_dir;
  for (const std::string& f : must_exist) EXPECT_TRUE(fs::exists(fs::symlink_status(f))) << f << " was deleted";
}

uint64_t size_of(const std::string& p) { return fs::file_size(p); }

TEST(PackShard, SymlinkHardLinkOtherFileSystemAndOllamaShardsAreRefused) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  {
    SCOPED_TRACE("symbolic link");
    test::TempDir tmp("moepack-shard");
    const std::string src = copy_shards(tmp);
    const std::string s2 = tmp.file(std::string("src/") + kShardNames[1]), data = tmp.file("elsewhere.gguf");
    fs::rename(s2, data);
    fs::create_symlink(data, s2);
    expect_refused(options(src, tmp.file("p")), s2, "symbolic link", {src, s2, data, tmp.file(std::string("src/") + kShardNames[2])});
    const BuildSpace sp = estimate_build_space(GgufModel::open(src), tmp.file("p"));
    EXPECT_FALSE(sp.shard_mode_helps);
    EXPECT_NE(sp.shard_mode_refused.find(s2), std::string::npos) << sp.shard_mode_refused;
    EXPECT_EQ(sp.source_bytes_on_target_fs, size_of(src) + size_of(tmp.file(std::string("src/") + kShardNames[2])));
  }
  {
    SCOPED_TRACE("hard link");
    test::TempDir tmp("moepack-shard");
    const std::string src = copy_shards(tmp);
    const std::string s3 = tmp.file(std::string("src/") + kShardNames[2]), other = tmp.file("other-model.gguf");
    fs::create_hard_link(s3, other);
    expect_refused(options(src, tmp.file("p")), s3, "2 hard links", {src, s3, other});
    const BuildSpace sp = estimate_build_space(GgufModel::open(src), tmp.file("p"));
    EXPECT_FALSE(sp.shard_mode_helps);
    EXPECT_NE(sp.shard_mode_refused.find(s3), std::string::npos) << sp.shard_mode_refused;
    EXPECT_EQ(sp.source_bytes_on_target_fs,
              size_of(src) + size_of(tmp.file(std::string("src/") + kShardNames[1])));
    // The normal build of the same source still works and deletes nothing.
    BuildOptions normal = options(src, tmp.file("p"));
    normal.delete_source_shards = false;
    build_pack(normal);
    EXPECT_EQ(shards_present(tmp), std::vector<bool>(3, true));
    EXPECT_EQ(fs::hard_link_count(other), 2u);
  }
  {
    SCOPED_TRACE("other file system (st_dev injected)");
    test::TempDir tmp("moepack-shard");
    const std::string src = copy_shards(tmp);
    const std::string s3 = tmp.file(std::string("src/") + kShardNames[2]);
    BuildOptions o = options(src, tmp.file("p"));
    o.hooks.source_dev = [&](const std::string& path) {
      struct stat st {};
      EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
      return static_cast<uint64_t>(st.st_dev) + (fs::path(path).filename() == kShardNames[2] ? 1 : 0);
    };
    expect_refused(o, s3, "another file system", {src, s3});
  }
  {
    SCOPED_TRACE("Ollama store");
    test::TempDir tmp("moepack-shard");
    const std::string model = test::shared("fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf");
    const std::string sha = test::fixture_sums().at(model);
    const std::string root = tmp.file("models"), blob = root + "/blobs/sha256-" + sha;
    fs::create_directories(root + "/blobs");
    fs::create_directories(root + "/manifests/registry.ollama.ai/library/tiny");
    fs::copy_file(model, blob);  // a plain file with one link: only the store rule applies
    const std::string manifest =
        R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
        R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" +
        std::string(64, 'c') + R"(","size":10},"layers":[{"mediaType":"application/vnd.ollama.image.model",)" +
        R"("digest":"sha256:)" + sha + R"(","size":)" + std::to_string(size_of(blob)) + "}]}";
    const std::string mp = root + "/manifests/registry.ollama.ai/library/tiny/latest";
    test::write_file(mp, std::vector<uint8_t>(manifest.begin(), manifest.end()));
    const char* old = std::getenv("OLLAMA_MODELS");
    const std::string old_env = old ? old : "";
    ::setenv("OLLAMA_MODELS", root.c_str(), 1);
    expect_refused(options("tiny", tmp.file("p")), blob, "Ollama store", {blob});
    expect_refused(options(mp, tmp.file("p")), blob, "Ollama store", {blob});
    expect_refused(options(blob, tmp.file("p")), blob, "Ollama store", {blob});  // the blob's own path
    EXPECT_FALSE(estimate_build_space(GgufModel::open("tiny"), tmp.file("p")).shard_mode_refused.empty());
    // Nor is the whole source deleted after the verify (the studio's wizard offers that too).
    for (const std::string& src : {std::string("tiny"), mp, blob}) {
      BuildOptions o = options(src, tmp.file("p"));
      o.delete_source_shards = false;
      o.delete_source_after_verify = true;
      try {
        build_pack(o);
        ADD_FAILURE() << "deleting " << src << " after the verify was accepted";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(blob + ": it is a blob of the Ollama store"), std::string::npos)
            << e.what();
      }
      EXPECT_TRUE(fs::exists(blob));
      EXPECT_FALSE(fs::exists(o.out_dir));
    }
    if (old) {
      ::setenv("OLLAMA_MODELS", old_env.c_str(), 1);
    } else {
      ::unsetenv("OLLAMA_MODELS");
    }
  }
}

// A state file of this plan whose build_id is not 32 lower-case hex digits ("0g..." once parsed as 0 by
// std::stoul, silently giving the pack a new id while dense.gguf keeps the old one) is a
// FormatError naming build-state.json and the field.
TEST(PackShard, NonHexBuildIdInTheStateFileIsAFormatError) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  test::TempDir tmp("moepack-shard");
  const std::string src = copy_shards(tmp);
  const std::string out = tmp.file("p");
  ASSERT_EQ(crash_at(src, out, "data", 10), kCrashStatus);
  const std::string state = out + "/build-state.json";
  std::string text;
  {
    std::ifstream in(state);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = text.find("\"build_id\":\"");
  ASSERT_NE(at, std::string::npos) << text.substr(0, 200);
  // "0g": not a hex digit; "AB": upper case, which the manifest refuses, so a build that took
  // it would copy every expert and fail only at its end.
  for (const std::string bad : {"0g", "AB"}) {
    text.replace(at + 12, 2, bad);
    test::write_file(state, std::vector<uint8_t>(text.begin(), text.end()));
    try {
      build_pack(options(src, out));
      FAIL() << "the build_id " << text.substr(at + 12, 32) << " was accepted";
    } catch (const FormatError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.file(), state);
      EXPECT_EQ(e.field(), "build_id");
      EXPECT_NE(msg.find("32 lower-case hex digits"), std::string::npos) << msg;
      EXPECT_NE(msg.find(bad), std::string::npos) << msg;
    }
    EXPECT_FALSE(loadable(out));
  }
}

// Started with a relative source path, interrupted after shard 1 is gone, resumed from another
// working directory with the absolute path: the persisted plan holds absolute paths.
TEST(PackShard, ResumeFromAnotherWorkingDirectory) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  const Reference ref;
  test::TempDir tmp("moepack-shard");
  const std::string src = copy_shards(tmp);
  const std::string out = tmp.file("p");
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  const int st = crash_at(std::string("src/") + kShardNames[0], out, "shard-deleted", 0);
  fs::current_path("/");
  ASSERT_EQ(st, kCrashStatus);
  ASSERT_FALSE(fs::exists(src));
  BuildResult r;
  try {
    r = build_pack(options(src, out));
  } catch (const Error& e) {
    fs::current_path(cwd);
    FAIL() << e.what();
  }
  fs::current_path(cwd);
  EXPECT_TRUE(r.from_persisted_plan);
  expect_finished(out, ref);
  const PackManifest m = ExpertPack::open(out).manifest();
  // The relative path was made absolute with the working directory then (getcwd: canonical).
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(m.sources[k].path, (fs::canonical(tmp.path()) / "src" / kShardNames[k]).string());
}

TEST(PackShard, DirectIoAlignmentAboveTheBlockAlignmentIsRefused) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  test::TempDir tmp("moepack-shard");
  // The real query on this machine: where reported, a power of two no larger than a page.
  const DioAlignment here = query_dio_alignment(tmp.path());
  if (here.reported) {
    EXPECT_GT(here.offset_align, 0u);
    EXPECT_EQ(here.offset_align & (here.offset_align - 1), 0u);
  }
  BuildOptions o = options(test::shared("fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf"), tmp.file("p"));
  o.delete_source_shards = false;
  o.hooks.dio_align = [] { return DioAlignment{true, 512, 8192}; };
  try {
    build_pack(o);
    FAIL() << "an 8192-byte direct I/O alignment was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("8192"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4096"), std::string::npos) << msg;
    EXPECT_NE(msg.find("STATX_DIOALIGN"), std::string::npos) << msg;
  }
  o.hooks.dio_align = [] { return DioAlignment{true, 0, 0}; };
  EXPECT_THROW(build_pack(o), Error);
  EXPECT_FALSE(loadable(o.out_dir));
  o.hooks.dio_align = [] { return DioAlignment{true, 512, 4096}; };
  EXPECT_NO_THROW(build_pack(o));
  EXPECT_TRUE(verify_pack(o.out_dir).ok);
}

}  // namespace
}  // namespace moepack
