// kill -9 at random moments of `moepack build` on a >= 1 GiB synthetic source (label slow).
// After every kill nothing loads (unless that run had already finished); the last run
// resumes and completes; verify --full passes; every expert is byte-identical to the source;
// the source's SHA-256 is unchanged. The random seed is printed for reproduction.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "core/error.h"
#include "core/expert_pack.h"
#include "core/gguf_model.h"
#include "core/pack_verify.h"
#include "core/sha256.h"
#include "tests/packbuilder/pack_test_util.h"
#include "tests/packbuilder/synthetic_moe.h"

namespace moepack {
namespace {

pid_t spawn_build(const char* cli, const std::string& src, const std::string& out) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(cli, cli, "build", src.c_str(), "-o", out.c_str(), "--safety-margin-gib", "0", "--progress",
            "none", "--batch-mib", "16", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

bool loadable(const std::string& dir) {
  try {
    ExpertPack::open(dir);
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(PackKill, KillNineAtRandomMomentsThenResume) {
  const char* cli = std::getenv("MOEPACK_CLI");
  ASSERT_NE(cli, nullptr) << "MOEPACK_CLI is not set (run through ctest)";
  test::TempDir tmp("moepack-kill");
  const std::string src = tmp.file("synthetic-moe.gguf");
  const uint64_t bytes = test::write_synthetic_moe(src, 1ull << 30, 7);
  ASSERT_GE(bytes, 1ull << 30);
  const std::string before = to_hex(sha256_file(src));
  const std::string out = tmp.file("pack");

  const unsigned seed = static_cast<unsigned>(std::chrono::system_clock::now().time_since_epoch().count());
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  // Kill moments are fractions of an uninterrupted build of the same source measured here, so
  // the test does not depend on how fast this machine is (a fixed range of milliseconds made
  // the first build finish before its kill on an idle machine, and then nothing was killed).
  double full_ms = 0;
  {
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = spawn_build(cli, src, tmp.file("reference"));
    int st = 0;
    ::waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "the reference build failed";
    full_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::filesystem::remove_all(tmp.file("reference"));
    std::printf("uninterrupted build: %.0f ms\n", full_ms);
  }
  std::uniform_real_distribution<double> fraction(0.05, 0.9);
  int killed = 0;
  for (int round = 0; round < 5; ++round) {
    double f = fraction(rng);
    // The first kill must land on a build from scratch: if it finished anyway (timing noise),
    // start over from nothing with an earlier kill moment.
    for (int attempt = 0; attempt < 4; ++attempt) {
      const int ms = static_cast<int>(f * full_ms);
      const pid_t pid = spawn_build(cli, src, out);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
      const bool was_killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
      std::printf("round %d: %s after %d ms\n", round, was_killed ? "killed" : "finished", ms);
      if (was_killed) {
        ++killed;
        EXPECT_FALSE(loadable(out)) << "a killed build left a loadable pack (round " << round << ")";
        break;
      }
      ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
      EXPECT_TRUE(loadable(out));
      if (killed > 0) break;  // a later round may well finish: the pack is then complete
      std::filesystem::remove_all(out);
      f /= 2;
    }
  }
  EXPECT_GE(killed, 1);
  // The last run, to completion; its JSON result line says how much it resumed.
  const std::string cmd = std::string(cli) + " build " + src + " -o " + out +
                          " --safety-margin-gib 0 --batch-mib 16 --progress json";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string last;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) last = line;
  ASSERT_EQ(::pclose(p), 0);
  std::printf("final run: %s", last.c_str());
  EXPECT_NE(last.find("\"phase\":\"result\""), std::string::npos);
  VerifyOptions full;
  full.full = true;
  const VerifyResult v = verify_pack(out, full);
  ASSERT_TRUE(v.ok) << v.message;
  test::expect_pack_matches_source(out, GgufModel::open(src));
  EXPECT_EQ(to_hex(sha256_file(src)), before);
  EXPECT_EQ(ExpertPack::open(out).manifest().sources.at(0).sha256, before);
}

}  // namespace
}  // namespace moepack
