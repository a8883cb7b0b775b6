// Crash safety of `moepack build`: a forked child runs the build and _exit()s abruptly (no
// destructors, no flushing: what kill -9 leaves) at every phase boundary and at points of the
// data phase: 5 writes and 2 checkpoints in the unit build of this file, all 48 writes and 16
// checkpoints when compiled with MOEPACK_CRASH_SWEEP (packbuilder_crash_sweep_test, label slow). After each
// crash: either nothing loads and nothing verifies, or (crash after the manifest's rename) the pack is
// complete and verifies. Then the same build is run again: it resumes, completes, verifies with --full, and
// every expert block is byte-identical to the source.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/expert_pack.h"
#include "core/pack_verify.h"
#include "packbuilder/pack_builder.h"
#include "tests/packbuilder/pack_test_util.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

const char* kSplit = "fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.gguf";
constexpr int kCrashStatus = 86;

struct Point {
  std::string name;
  uint64_t index;
};

BuildOptions options(const std::string& out) {
  BuildOptions o;
  o.source = test::shared(kSplit);
  o.out_dir = out;
  o.safety_margin_bytes = 0;
  o.batch_bytes = 4096;            // one expert (73728 B) per write: 48 data points
  o.checkpoint_bytes = 3 * 73728;  // 16 checkpoints
  return o;
}

// Runs the build in a child that dies at `p`; returns the child's exit status.
int crash_at(const std::string& out, const Point& p) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    BuildOptions o = options(out);
    o.hooks.at = [&](std::string_view name, uint64_t index) {
      if (name == p.name && index == p.index) ::_exit(kCrashStatus);
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

bool loadable(const std::string& dir) {
  try {
    ExpertPack::open(dir);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string scratch_root() {
  // tmpfs keeps the ~40 builds fast (fsync is cheap) and accepts O_DIRECT; the crash model
  // (process death, page cache survives) is the same as on a disk.
  return std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
}

TEST(PackCrash, EveryPhaseBoundaryAndDataPointResumesOrLeavesNothingLoadable) {
  const GgufModel src = GgufModel::open(test::shared(kSplit));
  std::vector<Point> points = {{"plan", 0},          {"preflight", 0}, {"dense", 0},
                               {"header", 0},        {"experts", 0},   {"sources", 0},
                               {"manifest-temp", 0}, {"manifest", 0},  {"done", 0}};
#ifdef MOEPACK_CRASH_SWEEP
  for (uint64_t k = 0; k < 48; ++k) points.push_back({"data", k});
  for (uint64_t k = 0; k < 15; ++k) points.push_back({"checkpoint", k});
  ASSERT_GE(points.size(), 9u + 48u);
#else
  for (uint64_t k : {0, 12, 24, 36, 47}) points.push_back({"data", k});
  for (uint64_t k : {0, 7}) points.push_back({"checkpoint", k});
#endif

  // Reference digests from an uninterrupted build.
  setenv("TMPDIR", scratch_root().c_str(), 1);
  test::TempDir ref_dir("moepack-crash-ref");
  build_pack(options(ref_dir.file("p")));
  const auto ref = ExpertPack::open(ref_dir.file("p")).manifest().expert_sha256;

  for (const Point& p : points) {
    SCOPED_TRACE(p.name + " " + std::to_string(p.index));
    test::TempDir tmp("moepack-crash");
    const std::string out = tmp.file("p");
    ASSERT_EQ(crash_at(out, p), kCrashStatus) << "the build never reached this point";
    const bool after_rename = p.name == "manifest" || p.name == "done";
    VerifyOptions full;
    full.full = true;
    if (after_rename) {
      EXPECT_TRUE(verify_pack(out).ok);
    } else {
      EXPECT_FALSE(loadable(out));
      EXPECT_FALSE(verify_pack(out).ok);
      EXPECT_FALSE(std::filesystem::exists(out + "/manifest.json"));
    }
    // What the crashed build had made durable: checkpoints are taken by the main thread as soon
    // as their batch is done, concurrently with the writer that crashed, so how many exist at a
    // given data point depends on scheduling; the resume must reuse exactly that prefix.
    uint64_t durable = 0;
    if (std::ifstream st(out + "/build-state.json"); st) {
      durable = nlohmann::json::parse(st).at("experts_done").get<uint64_t>();
    }
    // Same command again: resumes (or sees the finished pack) and completes.
    const BuildResult r = build_pack(options(out));
    EXPECT_EQ(r.already_complete, after_rename);
    if (!after_rename) {
      EXPECT_EQ(r.resumed_experts, durable) << "the resume did not reuse the durable prefix";
    }
    const VerifyResult v = verify_pack(out, full);
    ASSERT_TRUE(v.ok) << v.message;
    EXPECT_EQ(ExpertPack::open(out).manifest().expert_sha256, ref);
    EXPECT_FALSE(std::filesystem::exists(out + "/build-state.json"));
    EXPECT_FALSE(std::filesystem::exists(out + "/manifest.json.tmp"));
  }
}

TEST(PackCrash, CrashDuringAResumedBuildStillResumes) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  test::TempDir tmp("moepack-crash");
  const std::string out = tmp.file("p");
  ASSERT_EQ(crash_at(out, {"data", 30}), kCrashStatus);
  ASSERT_EQ(crash_at(out, {"data", 3}), kCrashStatus);  // batch 3 of the resumed run
  ASSERT_EQ(crash_at(out, {"manifest-temp", 0}), kCrashStatus);
  EXPECT_FALSE(loadable(out));
  build_pack(options(out));
  VerifyOptions full;
  full.full = true;
  EXPECT_TRUE(verify_pack(out, full).ok);
  test::expect_pack_matches_source(out, GgufModel::open(test::shared(kSplit)));
}

TEST(PackCrash, CorruptedCopiedDataIsFoundAndRecopiedOnResume) {
  setenv("TMPDIR", scratch_root().c_str(), 1);
  test::TempDir tmp("moepack-crash");
  const std::string out = tmp.file("p");
  ASSERT_EQ(crash_at(out, {"data", 40}), kCrashStatus);
  // Damage expert 10 (layer 0) behind the builder's back: resume must restart from there.
  {
    FILE* f = std::fopen((out + "/experts.bin").c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, 4096 + 10 * 73728 + 5, SEEK_SET);
    std::fputc(0xA5, f);
    std::fclose(f);
  }
  const BuildResult r = build_pack(options(out));
  EXPECT_EQ(r.resumed_experts, 10u);
  VerifyOptions full;
  full.full = true;
  EXPECT_TRUE(verify_pack(out, full).ok);
  test::expect_pack_matches_source(out, GgufModel::open(test::shared(kSplit)));
}

}  // namespace
}  // namespace moepack
