// packbuilder: build -> verify -> load round trip on every fixture (single files and the
// 3-shard split set), byte identity of every expert block with the GGUF slices, the bad
// inputs of issue 3 (each with a precise error and nothing loadable written), resume after a
// cancel, corruption found by verify --full, and the source never modified.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/model_summary.h"
#include "core/pack_verify.h"
#include "core/sha256.h"
#include "packbuilder/pack_builder.h"
#include "packbuilder/pack_plan.h"
#include "tests/packbuilder/pack_test_util.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

using test::shared;
using test::TempDir;

const std::vector<std::string> kFixtures = {
    "fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf",
    "fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00002-of-00003.gguf",  // any shard opens the set
    "fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf",
    "fixtures/llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf",
    "fixtures/deepseek4-tiny/deepseek4-tiny-Q4_K_M.gguf",
    "fixtures/deepseek4-tiny/deepseek4-tiny-Q2_K.gguf",
    "fixtures/deepseek4-tiny/deepseek4-tiny-MXFP4_MOE.gguf",
    "fixtures/kimi-linear-tiny/kimi-linear-tiny-Q4_K_M.gguf",
    "fixtures/kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf",
    "models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q2_K.gguf",
    "models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf",
};

const char* kSplit = "fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.gguf";

BuildOptions opts(const std::string& src, const std::string& out) {
  BuildOptions o;
  o.source = src;
  o.out_dir = out;
  o.safety_margin_bytes = 0;
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

void expect_error(const BuildOptions& o, const std::vector<std::string>& needles) {
  try {
    build_pack(o);
    FAIL() << "build of " << o.source << " succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "missing \"" << n << "\" in: " << msg;
  }
  EXPECT_FALSE(loadable(o.out_dir));
  EXPECT_FALSE(std::filesystem::exists(o.out_dir + "/manifest.json"));
}

TEST(PackBuild, EveryFixtureRoundTripsByteIdentical) {
  const auto sums = test::fixture_sums();
  for (const std::string& rel : kFixtures) {
    SCOPED_TRACE(rel);
    const GgufModel src = GgufModel::open(shared(rel));
    std::vector<std::string> before;
    for (const GgufFile& f : src.shards()) before.push_back(to_hex(sha256_file(f.path())));
    TempDir tmp("moepack-pack");
    const std::string out = tmp.file("pack");
    const BuildResult built = build_pack(opts(shared(rel), out));
    EXPECT_FALSE(built.already_complete);
    EXPECT_FALSE(std::filesystem::exists(out + "/build-state.json"));

    // `moepack inspect`'s prediction equals what was written.
    const nlohmann::json planned = pack_plan_summary(src);
    EXPECT_EQ(planned["experts_bytes"].get<uint64_t>(), std::filesystem::file_size(out + "/experts.bin"));
    EXPECT_EQ(planned["dense_bytes"].get<uint64_t>(), std::filesystem::file_size(out + "/dense.gguf"));

    // verify --full passes; the data file's hash is the one sha256sum would print.
    VerifyOptions vo;
    vo.full = true;
    const VerifyResult v = verify_pack(out, vo);
    EXPECT_TRUE(v.ok) << v.message;
    EXPECT_EQ(v.experts_checked, ExpertPack::open(out).layout().expert_count());

    // Byte identity + offsets/alignment, re-derived independently.
    test::expect_pack_matches_source(out, src);

    // The manifest's source hashes equal the fixture's published SHA256SUMS, and the source
    // files are unchanged by the build.
    const ExpertPack pack = ExpertPack::open(out + "/manifest.json");
    ASSERT_EQ(pack.manifest().sources.size(), src.shards().size());
    for (size_t k = 0; k < src.shards().size(); ++k) {
      const std::string& path = src.shards()[k].path();
      EXPECT_EQ(pack.manifest().sources[k].path, path);
      EXPECT_EQ(to_hex(sha256_file(path)), before[k]);
      if (sums.count(path))
        EXPECT_EQ(pack.manifest().sources[k].sha256, sums.at(path));
      else
        EXPECT_EQ(pack.manifest().sources[k].sha256, before[k]);
    }

    // Load: dense.gguf is a GGUF with the source's metadata and every non-expert tensor,
    // byte-identical; no routed expert in it.
    const GgufModel dense = GgufModel::open(pack.dense_path());
    EXPECT_TRUE(summarize(dense).moe_layers.empty());
    EXPECT_EQ(dense.primary().get_string("moepack.pack.build_id").value_or(""), pack.manifest().build_id);
    size_t n_dense = 0;
    std::vector<uint8_t> a, b;
    for (const GgufTensorRef& r : src.tensors()) {
      if (r.info->name.find("_exps.") != std::string::npos) {
        EXPECT_EQ(dense.find_tensor(r.info->name), nullptr) << r.info->name;
        continue;
      }
      const GgufTensorRef* d = dense.find_tensor(r.info->name);
      ASSERT_NE(d, nullptr) << r.info->name << " missing from dense.gguf";
      EXPECT_EQ(d->info->type, r.info->type);
      EXPECT_EQ(d->info->ne, r.info->ne);
      a.resize(r.info->nbytes);
      b.resize(r.info->nbytes);
      src.shards()[r.shard].read_tensor_data(*r.info, 0, a.data(), a.size());
      dense.primary().read_tensor_data(*d->info, 0, b.data(), b.size());
      EXPECT_TRUE(a == b) << r.info->name;
      ++n_dense;
    }
    EXPECT_EQ(dense.tensors().size(), n_dense);
    size_t n_kv = 0;
    for (const GgufKv& kv : src.primary().metadata()) {
      if (kv.key.rfind("split.", 0) == 0) continue;
      const GgufKv* d = dense.primary().find(kv.key);
      ASSERT_NE(d, nullptr) << kv.key;
      EXPECT_EQ(d->value.type, kv.value.type) << kv.key;
      EXPECT_EQ(d->value.s, kv.value.s) << kv.key;
      EXPECT_EQ(d->value.u, kv.value.u) << kv.key;
      if (kv.value.array) {
        EXPECT_EQ(d->value.array->encoded_bytes, kv.value.array->encoded_bytes) << kv.key;
      }
      ++n_kv;
    }
    EXPECT_EQ(dense.primary().metadata().size(), n_kv + 1);  // + moepack.pack.build_id
  }
}

TEST(PackBuild, HashRoutingTableIsDenseNotAnExpert) {
  TempDir tmp("moepack-pack");
  const std::string out = tmp.file("p");
  build_pack(opts(shared("fixtures/deepseek4-tiny/deepseek4-tiny-Q2_K.gguf"), out));
  const ExpertPack pack = ExpertPack::open(out);
  for (const PackLayer& L : pack.layout().layers) {
    for (const PackRole& r : L.roles) EXPECT_EQ(r.tensor.find("tid2eid"), std::string::npos);
  }
  const GgufModel dense = GgufModel::open(pack.dense_path());
  EXPECT_NE(dense.find_tensor("blk.0.ffn_gate_tid2eid.weight"), nullptr);
}

TEST(PackBuild, ProgressEventsCoverEveryPhaseAndEndAtTheTotal) {
  TempDir tmp("moepack-pack");
  BuildOptions o = opts(shared(kSplit), tmp.file("p"));
  std::vector<BuildProgress> ev;
  o.on_progress = [&](const BuildProgress& p) { ev.push_back(p); };
  build_pack(o);
  std::vector<std::string> phases;
  for (const BuildProgress& p : ev) {
    if (phases.empty() || phases.back() != p.phase) phases.push_back(p.phase);
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"plan", "preflight", "dense", "experts", "finalize", "done"}));
  uint64_t last = 0;
  for (const BuildProgress& p : ev) {
    if (p.phase != "experts") continue;
    EXPECT_GE(p.bytes_done, last);
    EXPECT_LE(p.bytes_done, p.bytes_total);
    last = p.bytes_done;
  }
  const ExpertPack pack = ExpertPack::open(tmp.file("p"));
  EXPECT_EQ(last, pack.layout().data_end - pack.layout().data_start);
}

// A full verify stops at the next batch once its cancel flag is set: not ok, `cancelled`,
// fewer bytes hashed than the pack holds; without the flag the same pack verifies.
TEST(PackBuild, AFullVerifyCanBeCancelled) {
  TempDir tmp("moepack-pack");
  const std::string out = tmp.file("p");
  build_pack(opts(shared(kSplit), out));
  std::atomic<bool> cancel{false};
  VerifyOptions vo;
  vo.full = true;
  vo.cancel = &cancel;
  uint64_t total = 0;
  vo.progress = [&](uint64_t, uint64_t t) {
    total = t;
    cancel = true;  // after the first batch
  };
  const VerifyResult v = verify_pack(out, vo);
  EXPECT_FALSE(v.ok);
  EXPECT_TRUE(v.cancelled);
  EXPECT_NE(v.message.find("verification cancelled"), std::string::npos) << v.message;
  EXPECT_GT(v.bytes_hashed, 0u);
  EXPECT_LT(v.bytes_hashed, total);
  cancel = false;
  vo.progress = {};
  const VerifyResult again = verify_pack(out, vo);
  EXPECT_TRUE(again.ok) << again.message;
  EXPECT_FALSE(again.cancelled);
}

TEST(PackBuild, RerunIsCompleteOtherSourceRefusedUnlessOverwrite) {
  TempDir tmp("moepack-pack");
  const std::string out = tmp.file("p");
  build_pack(opts(shared(kSplit), out));
  // Same model named by another shard: same plan, already complete.
  const BuildResult again =
      build_pack(opts(shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00003-of-00003.gguf"), out));
  EXPECT_TRUE(again.already_complete);
  BuildOptions other = opts(shared("fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf"), out);
  try {
    build_pack(other);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already holds a finished Expert Pack"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(verify_pack(out).ok);  // untouched
  other.overwrite = true;
  // --overwrite refused by the pre-flight (no space): the old pack still loads.
  BuildOptions no_room = other;
  no_room.hooks.free_bytes = [] { return uint64_t{0}; };
  EXPECT_THROW(build_pack(no_room), Error);
  EXPECT_TRUE(verify_pack(out).ok);
  EXPECT_EQ(ExpertPack::open(out).manifest().model["architecture"], "deepseek2");
  build_pack(other);
  VerifyOptions vo;
  vo.full = true;
  EXPECT_TRUE(verify_pack(out, vo).ok);
  EXPECT_EQ(ExpertPack::open(out).manifest().model["architecture"], "qwen3moe");
}

// The finished pack of this source with a data file gone or cut short is not "already
// complete": the build writes it again, and the result verifies in full.
TEST(PackBuild, RerunRebuildsAPackWhoseDataFilesAreGoneOrCut) {
  TempDir tmp("moepack-pack");
  const std::string src = shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf");
  const std::string out = tmp.file("p");
  build_pack(opts(src, out));
  VerifyOptions full;
  full.full = true;
  std::filesystem::remove(out + "/experts.bin");
  const BuildResult rebuilt = build_pack(opts(src, out));
  EXPECT_FALSE(rebuilt.already_complete);
  EXPECT_TRUE(verify_pack(out, full).ok);
  std::filesystem::resize_file(out + "/dense.gguf", std::filesystem::file_size(out + "/dense.gguf") - 1);
  EXPECT_FALSE(build_pack(opts(src, out)).already_complete);
  EXPECT_TRUE(verify_pack(out, full).ok);
  EXPECT_TRUE(build_pack(opts(src, out)).already_complete);  // whole again: nothing to do
}

// One build writes a folder at a time: while one holds it (here at its first checkpoint), a
// second build of the same source into it is refused, and the first
// ends with a pack that verifies in full. A lock held by another open file of the folder
// (another process's build) refuses a build too.
TEST(PackBuild, ASecondBuildOfTheSameFolderIsRefusedWhileTheFirstRuns) {
  TempDir tmp("moepack-pack");
  const std::string src = shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf");
  const std::string out = tmp.file("p");
  BuildOptions first = opts(src, out);
  bool tried = false;
  first.hooks.at = [&](std::string_view point, uint64_t) {
    if (point != "preflight" || tried) return;
    tried = true;
    try {
      build_pack(opts(src, out));
      ADD_FAILURE() << "a second build ran in " << out;
    } catch (const PackDirBusy& e) {
      EXPECT_NE(std::string(e.what()).find("another build is writing"), std::string::npos) << e.what();
    }
  };
  build_pack(first);
  EXPECT_TRUE(tried);
  VerifyOptions full;
  full.full = true;
  EXPECT_TRUE(verify_pack(out, full).ok);

  const std::string other = tmp.file("q");
  std::filesystem::create_directories(other);
  const int fd = ::open(other.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  EXPECT_THROW(build_pack(opts(src, other)), PackDirBusy);
  EXPECT_TRUE(std::filesystem::is_empty(other));
  ::close(fd);
  EXPECT_FALSE(build_pack(opts(src, other)).already_complete);
  EXPECT_TRUE(verify_pack(other, full).ok);
}

// A pack is found by its source, whatever its folder's name: any shard of the split set finds
// the pack built from it; another model, a folder still building, a missing folder or a source
// that is no model find nothing.
TEST(PackBuild, FinishedPackIsFoundByItsSource) {
  TempDir tmp("moepack-pack");
  const std::string packs = tmp.file("packs");
  const std::string legacy = packs + "/deepseek2-tiny-Q2_K-00001-of-00003";  // an earlier build's name
  const auto dir_of = [&](const std::string& source) {
    const auto f = find_finished_pack(packs, source);
    return f ? f->dir : std::string("(none)");
  };
  EXPECT_EQ(dir_of(shared(kSplit)), "(none)");  // no folder yet
  // Built from a spelling with "..": found by any spelling, confirmed by the build's own.
  const std::string odd =
      shared("fixtures/deepseek2-tiny/../deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.gguf");
  build_pack(opts(odd, legacy));
  std::filesystem::create_directories(packs + "/a-empty");  // sorts first, holds nothing
  EXPECT_EQ(dir_of(shared(kSplit)), legacy);
  EXPECT_EQ(dir_of(shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00002-of-00003.gguf")), legacy);
  EXPECT_EQ(dir_of(shared("fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf")), "(none)");
  EXPECT_EQ(dir_of(tmp.file("missing.gguf")), "(none)");
  EXPECT_EQ(dir_of(shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.gguf")), legacy);
  const std::string cwd = std::filesystem::current_path().string();
  std::filesystem::current_path(shared("fixtures/deepseek2-tiny"));
  const auto relative = find_finished_pack(packs, "deepseek2-tiny-Q2_K-00003-of-00003.gguf");
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(relative);
  EXPECT_EQ(relative->dir, legacy);
  EXPECT_EQ(relative->source, std::filesystem::absolute(odd).string());  // the build's spelling
  // Through a symbolic link to the fixtures' folder: the same files.
  std::filesystem::create_directory_symlink(shared("fixtures/deepseek2-tiny"), tmp.file("linked"));
  EXPECT_EQ(dir_of(tmp.file("linked/deepseek2-tiny-Q2_K-00002-of-00003.gguf")), legacy);
  // build_pack of that spelling into the folder found confirms it.
  EXPECT_TRUE(build_pack(opts(relative->source, relative->dir)).already_complete);
  // A build in progress in the folder: not finished.
  { std::ofstream(legacy + "/build-state.json") << "{}"; }
  EXPECT_EQ(dir_of(shared(kSplit)), "(none)");
  std::filesystem::remove(legacy + "/build-state.json");
  // A damaged manifest is no match, and no error.
  const std::string good = [&] {
    std::ifstream in(legacy + "/manifest.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  { std::ofstream(legacy + "/manifest.json", std::ios::trunc) << "{ not json"; }
  EXPECT_EQ(dir_of(shared(kSplit)), "(none)");
  { std::ofstream(legacy + "/manifest.json", std::ios::trunc) << good; }
  // A source changed since (same path and size, a new modification time) is still found (by
  // path and size), and its build refuses the folder without writing a byte.
  const std::string copy = tmp.file("qwen.gguf");
  std::filesystem::copy_file(shared("fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf"), copy);
  build_pack(opts(copy, packs + "/qwen"));
  std::filesystem::last_write_time(copy, std::filesystem::last_write_time(copy) + std::chrono::seconds(5));
  const auto changed = find_finished_pack(packs, copy);
  ASSERT_TRUE(changed);
  EXPECT_EQ(changed->dir, packs + "/qwen");
  const auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string manifest_before = slurp(changed->dir + "/manifest.json");
  const auto experts_time = std::filesystem::last_write_time(changed->dir + "/experts.bin");
  try {
    build_pack(opts(changed->source, changed->dir));
    ADD_FAILURE() << "a changed source's folder was taken";
  } catch (const PackDirOccupied& e) {
    EXPECT_EQ(e.dir(), changed->dir);
    EXPECT_EQ(e.other_source(), std::filesystem::absolute(copy).string());
  }
  EXPECT_EQ(slurp(changed->dir + "/manifest.json"), manifest_before);
  EXPECT_EQ(std::filesystem::last_write_time(changed->dir + "/experts.bin"), experts_time);
  EXPECT_FALSE(std::filesystem::exists(changed->dir + "/build-state.json"));
}

TEST(PackBuild, CancelThenResumeCopiesOnlyWhatIsMissing) {
  TempDir tmp("moepack-pack");
  const std::string out = tmp.file("p");
  std::atomic<bool> cancel{false};
  BuildOptions o = opts(shared(kSplit), out);
  o.batch_bytes = 4096;  // one expert per write
  o.checkpoint_bytes = 4 * 73728;
  o.cancel = &cancel;
  o.hooks.at = [&](std::string_view point, uint64_t i) {
    if (point == "data" && i == 20) cancel = true;
  };
  EXPECT_THROW(build_pack(o), BuildCancelled);
  EXPECT_FALSE(loadable(out));
  EXPECT_TRUE(std::filesystem::exists(out + "/build-state.json"));
  o.cancel = nullptr;
  o.hooks = {};
  const BuildResult r = build_pack(o);
  EXPECT_TRUE(r.resumed);
  EXPECT_GE(r.resumed_experts, 16u);
  EXPECT_LE(r.resumed_experts, 21u + o.buffers);  // batches already in flight when cancelled
  VerifyOptions vo;
  vo.full = true;
  EXPECT_TRUE(verify_pack(out, vo).ok);
  test::expect_pack_matches_source(out, GgufModel::open(shared(kSplit)));
}

// Resuming an interrupted build, or replacing a finished pack (overwrite), checks OUTDIR's
// files again before writing: experts.bin made a symbolic link to the source after the cancel,
// or a hard link to a shard of the split set, is refused with nothing written and the source's
// bytes unchanged.
TEST(PackBuild, ResumeAndOverwriteRefuseOutputsThatLeadToTheSource) {
  namespace fs = std::filesystem;
  TempDir tmp("moepack-pack");
  fs::create_directories(tmp.file("src"));
  std::vector<std::string> shards;
  for (int k = 1; k <= 3; ++k) {
    shards.push_back(tmp.file("src/deepseek2-tiny-Q2_K-0000" + std::to_string(k) + "-of-00003.gguf"));
    fs::copy_file(
        shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-0000" + std::to_string(k) + "-of-00003.gguf"),
        shards.back());
  }
  const auto digests = [&] {
    std::vector<std::string> d;
    for (const std::string& f : shards)
      d.push_back(std::to_string(fs::file_size(f)) + to_hex(sha256_file(f)));
    return d;
  };
  const std::vector<std::string> before = digests();
  const auto refused = [](const BuildOptions& o, const std::string& needle) {
    try {
      build_pack(o);
      ADD_FAILURE() << "the build into " << o.out_dir << " was not refused";
    } catch (const BuildCancelled&) {
      ADD_FAILURE() << "cancelled instead of refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };

  // Resume: cancelled after the dense phase, then experts.bin replaced by a link to shard 2.
  const std::string out = tmp.file("p");
  std::atomic<bool> cancel{false};
  BuildOptions o = opts(shards[0], out);
  o.cancel = &cancel;
  o.hooks.at = [&](std::string_view point, uint64_t) {
    if (point == "dense") cancel = true;
  };
  EXPECT_THROW(build_pack(o), BuildCancelled);
  ASSERT_TRUE(fs::exists(out + "/build-state.json"));
  const std::string state_was =
      fs::exists(out + "/build-state.json") ? to_hex(sha256_file(out + "/build-state.json")) : "";
  o.cancel = nullptr;
  o.hooks = {};
  fs::remove(out + "/experts.bin");
  fs::create_symlink(shards[1], out + "/experts.bin");
  refused(o, out + "/experts.bin is a symbolic link");
  EXPECT_EQ(to_hex(sha256_file(out + "/build-state.json")), state_was);  // not removed, not rewritten
  fs::remove(out + "/experts.bin");
  fs::create_hard_link(shards[1], out + "/experts.bin");
  refused(o, out + "/experts.bin is the source model itself (its shard " + shards[1] + ")");
  EXPECT_EQ(digests(), before);
  fs::remove(out + "/experts.bin");
  ASSERT_NO_THROW(build_pack(o));  // the interrupted build still finishes
  EXPECT_TRUE(loadable(out));

  // Overwrite of a finished pack of another source: its manifest stays (the old pack loads).
  const std::string other = shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf");
  BuildOptions w = opts(other, out);
  w.overwrite = true;
  fs::rename(out + "/dense.gguf", tmp.file("dense.gguf"));
  fs::create_symlink(shards[0], out + "/dense.gguf");
  refused(w, out + "/dense.gguf is a symbolic link");
  EXPECT_TRUE(fs::exists(out + "/manifest.json"));
  fs::remove(out + "/dense.gguf");
  fs::rename(tmp.file("dense.gguf"), out + "/dense.gguf");
  EXPECT_TRUE(loadable(out));
  EXPECT_EQ(digests(), before);
}

TEST(PackVerify, FullNamesTheFirstCorruptExpert) {
  TempDir tmp("moepack-pack");
  const std::string out = tmp.file("p");
  build_pack(opts(shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf"), out));
  const ExpertPack pack = ExpertPack::open(out);
  const uint64_t at = pack.expert_offset(1, 5) + 100;
  {
    std::fstream f(pack.experts_path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.put('\x5a');
  }
  EXPECT_TRUE(verify_pack(out).ok);  // structure is intact
  VerifyOptions vo;
  vo.full = true;
  const VerifyResult v = verify_pack(out, vo);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.bad_layer, 1);
  EXPECT_EQ(v.bad_expert, 5);
  EXPECT_NE(v.message.find("expert 5 of layer 1 (blk.2)"), std::string::npos) << v.message;
  // What was checked up to it: layer 0's experts and 5 of layer 1 passed; the header, those and
  // the corrupt block were hashed.
  const PackLayout& L = pack.layout();
  EXPECT_EQ(v.experts_checked, L.layers[0].n_experts + 5u);
  EXPECT_EQ(v.bytes_hashed,
            L.data_start + L.layers[0].n_experts * L.layers[0].stride + 6 * L.layers[1].stride);
  // The CLI says the same and exits 1.
  const char* cli = std::getenv("MOEPACK_CLI");
  if (cli != nullptr) {
    const std::string cmd = std::string(cli) + " verify --full " + out + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    std::string text;
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
    const int st = ::pclose(p);
    EXPECT_EQ(WEXITSTATUS(st), 1);
    EXPECT_NE(text.find("expert 5 of layer 1 (blk.2)"), std::string::npos) << text;
  }
  // A truncated data file fails even the structural check.
  ASSERT_EQ(::truncate(pack.experts_path().c_str(), static_cast<off_t>(at)), 0);
  const VerifyResult s = verify_pack(out);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.message.find("experts.bin"), std::string::npos) << s.message;
}

TEST(PackBuild, DeleteSourceAfterVerifyRemovesOnlyTheCopiedSource) {
  TempDir tmp("moepack-pack");
  std::vector<std::string> copies;
  for (int k = 1; k <= 3; ++k) {
    char name[64];
    std::snprintf(name, sizeof name, "deepseek2-tiny-Q2_K-%05d-of-00003.gguf", k);
    std::filesystem::copy_file(shared(std::string("fixtures/deepseek2-tiny/") + name), tmp.file(name));
    copies.push_back(tmp.file(name));
  }
  BuildOptions o = opts(copies[0], tmp.file("p"));
  o.delete_source_after_verify = true;
  const BuildResult r = build_pack(o);
  EXPECT_TRUE(r.source_deleted);
  for (const std::string& c : copies) EXPECT_FALSE(std::filesystem::exists(c)) << c;
  VerifyOptions vo;
  vo.full = true;
  EXPECT_TRUE(verify_pack(tmp.file("p"), vo).ok);
}

// ---- bad inputs -------------------------------------------------------------------------

using test::GgufWriter;
using TV = test::TestValue;
namespace tv = test::TV;

// A small valid qwen3moe-like MoE: 2 blocks, 4 experts, n_embd 64, expert width 32, F32.
struct TinyMoe {
  bool omit_up_in_block1 = false;
  uint64_t up_width_block1 = 32;
  uint64_t up_experts_block1 = 4;
  bool duplicate_tensor = false;
  bool legacy = false;            // per-expert tensors blk.N.ffn_<role>.<E>.weight
  uint64_t legacy_bad_width = 0;  // expert 2 of block 0's gate gets this width
  std::string arch = "qwen3moe";  // general.architecture (the keys stay qwen3moe's)

  std::vector<uint8_t> bytes() const {
    GgufWriter w;
    w.kv("general.architecture", tv::str(arch));
    w.kv("general.name", tv::str("not UTF-8: \xff\xfe"));  // must not break the JSON manifest
    w.kv("qwen3moe.block_count", tv::u32(2));
    w.kv("qwen3moe.embedding_length", tv::u32(64));
    w.kv("qwen3moe.expert_feed_forward_length", tv::u32(32));
    w.kv("qwen3moe.expert_count", tv::u32(4));
    w.kv("qwen3moe.expert_used_count", tv::u32(2));
    w.tensor(test::TensorSpec("token_embd.weight", test::kF32, {64, 10}).with_fill(7));
    for (int b = 0; b < 2; ++b) {
      const std::string p = "blk." + std::to_string(b) + ".";
      w.tensor(test::TensorSpec(p + "ffn_gate_inp.weight", test::kF32, {64, 4}).with_fill(1));
      if (legacy) {
        for (int e = 0; e < 4; ++e) {
          const uint64_t gw = (b == 0 && e == 2 && legacy_bad_width) ? legacy_bad_width : 32;
          const std::string s = "." + std::to_string(e) + ".weight";
          w.tensor(
              test::TensorSpec(p + "ffn_gate" + s, test::kF32, {64, gw}).with_fill(static_cast<uint8_t>(e)));
          w.tensor(test::TensorSpec(p + "ffn_up" + s, test::kF32, {64, 32})
                       .with_fill(static_cast<uint8_t>(e + 16)));
          w.tensor(test::TensorSpec(p + "ffn_down" + s, test::kF32, {32, 64})
                       .with_fill(static_cast<uint8_t>(e + 32)));
        }
        continue;
      }
      w.tensor(test::TensorSpec(p + "ffn_gate_exps.weight", test::kF32, {64, 32, 4}).with_fill(2));
      if (!(b == 1 && omit_up_in_block1)) {
        w.tensor(test::TensorSpec(p + "ffn_up_exps.weight", test::kF32,
                                  {64, b == 1 ? up_width_block1 : 32, b == 1 ? up_experts_block1 : 4})
                     .with_fill(3));
      }
      w.tensor(test::TensorSpec(p + "ffn_down_exps.weight", test::kF32, {32, 64, 4}).with_fill(4));
    }
    if (duplicate_tensor) w.tensor(test::TensorSpec("blk.0.ffn_gate_inp.weight", test::kF32, {64, 4}));
    return w.build();
  }
};

TEST(PackBuildBadInput, ValidSyntheticAndLegacyLayoutsBuild) {
  for (bool legacy : {false, true}) {
    TempDir tmp("moepack-pack");
    TinyMoe m;
    m.legacy = legacy;
    test::write_file(tmp.file("m.gguf"), m.bytes());
    build_pack(opts(tmp.file("m.gguf"), tmp.file("p")));
    VerifyOptions vo;
    vo.full = true;
    EXPECT_TRUE(verify_pack(tmp.file("p"), vo).ok);
    const ExpertPack pack = ExpertPack::open(tmp.file("p"));
    ASSERT_EQ(pack.layout().layers.size(), 2u);
    // gate 64x32 f32 = 8192 B, up 8192, down 8192: block 24576 = 6 pages.
    EXPECT_EQ(pack.layout().layers[0].stride, 24576u);
    if (legacy) {
      // Expert e's gate bytes are the fill value e (its own tensor).
      std::vector<uint8_t> blk(24576);
      pack.read_expert(0, 3, blk.data());
      EXPECT_EQ(blk[0], 3);
      EXPECT_EQ(blk[8192], 19);
      EXPECT_EQ(blk[16384], 35);
    }
  }
}

// A MoE of an architecture the engine does not run (gpt-oss's expert tensors have the same
// names) is refused before anything is written: its pack could never be run.
TEST(PackBuildBadInput, ArchitectureTheEngineDoesNotRun) {
  TempDir tmp("moepack-pack");
  TinyMoe m;
  m.arch = "gpt-oss";
  test::write_file(tmp.file("m.gguf"), m.bytes());
  // The value's byte: magic 4 + version 4 + tensor count 8 + kv count 8, the key's length 8 and
  // its 20 bytes, the value's type 4 (GGUF v3, docs/ggml/gguf.md).
  expect_error(opts(tmp.file("m.gguf"), tmp.file("p")),
               {"m.gguf", "general.architecture at byte 56",
                "architecture 'gpt-oss' is not supported by the engine", "nothing was written"});
  EXPECT_FALSE(std::filesystem::exists(tmp.file("p") + "/" + kPackExpertsName));
}

TEST(PackBuildBadInput, MissingRole) {
  TempDir tmp("moepack-pack");
  TinyMoe m;
  m.omit_up_in_block1 = true;
  test::write_file(tmp.file("m.gguf"), m.bytes());
  expect_error(opts(tmp.file("m.gguf"), tmp.file("p")),
               {"m.gguf", "blk.1 is missing its routed-expert role \"up\""});
}

TEST(PackBuildBadInput, ExpertsOfOneLayerWithDifferentShapes) {
  TempDir tmp("moepack-pack");
  TinyMoe m;
  m.up_width_block1 = 16;
  test::write_file(tmp.file("m.gguf"), m.bytes());
  expect_error(opts(tmp.file("m.gguf"), tmp.file("p")), {"blk.1.ffn_up_exps.weight", "ne[1] is 16"});
  TinyMoe c;
  c.up_experts_block1 = 3;
  test::write_file(tmp.file("c.gguf"), c.bytes());
  expect_error(opts(tmp.file("c.gguf"), tmp.file("p")), {"blk.1.ffn_", "has 3 experts", "have 4"});
  TinyMoe l;
  l.legacy = true;
  l.legacy_bad_width = 16;
  test::write_file(tmp.file("l.gguf"), l.bytes());
  expect_error(opts(tmp.file("l.gguf"), tmp.file("p")),
               {"blk.0.ffn_gate.2.weight", "expert 2 of blk.0", "must have the same shape"});
}

TEST(PackBuildBadInput, DuplicateTensors) {
  TempDir tmp("moepack-pack");
  TinyMoe m;
  m.duplicate_tensor = true;
  test::write_file(tmp.file("m.gguf"), m.bytes());
  expect_error(opts(tmp.file("m.gguf"), tmp.file("p")),
               {"m.gguf", "blk.0.ffn_gate_inp.weight", "duplicate tensor name"});
}

TEST(PackBuildBadInput, MissingShard) {
  TempDir tmp("moepack-pack");
  for (int k : {1, 3}) {
    const std::string name = "deepseek2-tiny-Q2_K-0000" + std::to_string(k) + "-of-00003.gguf";
    std::filesystem::create_symlink(shared("fixtures/deepseek2-tiny/" + name), tmp.file(name));
  }
  expect_error(opts(tmp.file("deepseek2-tiny-Q2_K-00001-of-00003.gguf"), tmp.file("p")),
               {"deepseek2-tiny-Q2_K-00002-of-00003.gguf", "shard 2 of 3 is missing"});
}

TEST(PackBuildBadInput, ShardOfAnotherModel) {
  TempDir tmp("moepack-pack");
  for (int k : {1, 2}) {
    const std::string name = "deepseek2-tiny-Q2_K-0000" + std::to_string(k) + "-of-00003.gguf";
    std::filesystem::create_symlink(shared("fixtures/deepseek2-tiny/" + name), tmp.file(name));
  }
  const std::string third = tmp.file("deepseek2-tiny-Q2_K-00003-of-00003.gguf");
  const GgufFile real3 =
      GgufFile::open(shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00003-of-00003.gguf"));
  // (a) shard 3 of a wider model (n_embd 512) split the same way: same names, counts, keys.
  {
    GgufWriter w;
    w.kv("split.no", tv::u16(2));
    w.kv("split.count", tv::u16(3));
    w.kv("split.tensors.count", tv::i32(69));
    for (const GgufTensorInfo& t : real3.tensors()) {
      std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
      for (uint64_t& d : ne)
        if (d == 256) d = 512;
      w.tensor(test::TensorSpec(t.name, test::kF32, ne));
    }
    test::write_file(third, w.build());
    expect_error(opts(tmp.file("deepseek2-tiny-Q2_K-00001-of-00003.gguf"), tmp.file("p")),
                 {third, "deepseek2.embedding_length is 256", "another model"});
  }
  // (b) shard 3 of a deeper model: blocks the model does not have.
  {
    GgufWriter w;
    w.kv("split.no", tv::u16(2));
    w.kv("split.count", tv::u16(3));
    w.kv("split.tensors.count", tv::i32(69));
    for (int k = 0; k < 23; ++k) w.tensor("blk.7.t" + std::to_string(k) + ".weight", test::kF32, {32});
    test::write_file(third, w.build());
    expect_error(opts(tmp.file("deepseek2-tiny-Q2_K-00001-of-00003.gguf"), tmp.file("p")),
                 {third, "blk.7.t0.weight", "block_count is 4", "another model"});
  }
  // (c) a shard with another tensor count.
  {
    GgufWriter w;
    w.kv("split.no", tv::u16(2));
    w.kv("split.count", tv::u16(3));
    w.kv("split.tensors.count", tv::i32(40));
    w.tensor("x.weight", test::kF32, {32});
    test::write_file(third, w.build());
    expect_error(opts(tmp.file("deepseek2-tiny-Q2_K-00001-of-00003.gguf"), tmp.file("p")),
                 {"split.tensors.count"});
  }
}

// Mounts a file system of `type` on `dir` for the test's lifetime, if this process may.
class Mount {
 public:
  Mount(const std::string& dir, const char* type, const char* data) : dir_(dir) {
    std::filesystem::create_directories(dir);
    ok_ = ::mount("moepack-test", dir.c_str(), type, 0, data) == 0;
  }
  ~Mount() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool ok() const { return ok_; }

 private:
  std::string dir_;
  bool ok_ = false;
};

TEST(PackBuildBadInput, NoSpaceOnTarget) {
  TempDir tmp("moepack-pack");
  const std::string src = shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf");  // pack: 15.5 MB
  {
    Mount small(tmp.file("small"), "tmpfs", "size=8m");
    BuildOptions o = opts(src, tmp.file("small/new/parents/p"));
    if (!small.ok()) o.hooks.free_bytes = [] { return uint64_t{8} << 20; };
    // Pre-flight refuses with both numbers (needed, free) and writes nothing.
    expect_error(o, {"not enough free space", "15759040", "are free"});
    EXPECT_FALSE(std::filesystem::exists(tmp.file("small/new")));  // not even the directories it made
    EXPECT_TRUE(std::filesystem::exists(tmp.file("small")));       // but no folder it did not make
    if (small.ok()) {
      // Space that vanishes after the pre-flight: the real ENOSPC from the file system.
      o.hooks.free_bytes = [] { return uint64_t{1} << 40; };
      expect_error(o, {"No space left on device"});
    }
  }
  // ENOSPC injected in the middle of the data phase; then space "comes back" and the same
  // build resumes and completes.
  BuildOptions o = opts(src, tmp.file("p"));
  o.batch_bytes = 4096;
  o.checkpoint_bytes = 1 << 20;
  o.hooks.io_error = [](std::string_view op, uint64_t offset) {
    return op == "pwrite" && offset > (3u << 20) ? ENOSPC : 0;
  };
  expect_error(o, {"experts.bin", "No space left on device"});
  o.hooks = {};
  const BuildResult r = build_pack(o);
  EXPECT_TRUE(r.resumed);
  VerifyOptions vo;
  vo.full = true;
  EXPECT_TRUE(verify_pack(o.out_dir, vo).ok);
}

TEST(PackBuildBadInput, TargetWithoutDirectIo) {
  TempDir tmp("moepack-pack");
  Mount ram(tmp.file("ram"), "ramfs", "");
  BuildOptions o = opts(shared(kSplit), tmp.file("ram/p"));
  std::vector<std::string> needles = {"does not support O_DIRECT", "Choose another OUTDIR"};
  if (ram.ok()) {
    needles.push_back("(ramfs)");
  } else {
    o.hooks.io_error = [](std::string_view op, uint64_t) { return op == "odirect" ? EINVAL : 0; };
  }
  expect_error(o, needles);
  EXPECT_FALSE(std::filesystem::exists(o.out_dir + "/experts.bin"));
}

}  // namespace
}  // namespace moepack
