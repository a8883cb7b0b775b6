// `moepack build` / `moepack verify` through the binary ($MOEPACK_CLI, set by ctest): exit
// status, --progress json lines (one object per line with the documented fields), the result
// line, "already complete" on a re-run, verify --json, and errors on stderr naming the file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/packbuilder/pack_test_util.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

struct CliRun {
  int status = -1;
  std::string out;
};

CliRun run(const std::string& args) {
  const char* cli = std::getenv("MOEPACK_CLI");
  CliRun r;
  const std::string cmd = std::string(cli) + " " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(PackCli, BuildWithJsonProgressThenVerify) {
  ASSERT_NE(std::getenv("MOEPACK_CLI"), nullptr) << "MOEPACK_CLI is not set (run through ctest)";
  test::TempDir tmp("moepack-cli");
  const std::string src = test::shared("fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00002-of-00003.gguf");
  const std::string out = tmp.file("pack");
  CliRun b = run("build " + src + " -o " + out + " --safety-margin-gib 0 --progress json 2>/dev/null");
  ASSERT_EQ(b.status, 0) << b.out;
  std::istringstream lines(b.out);
  std::string line;
  std::vector<nlohmann::json> ev;
  while (std::getline(lines, line)) ev.push_back(nlohmann::json::parse(line));  // every line is JSON
  ASSERT_GE(ev.size(), 6u);
  for (size_t k = 0; k + 1 < ev.size(); ++k) {
    for (const char* f : {"phase", "bytes_done", "bytes_total", "rate_bytes_per_s", "eta_s", "message"}) {
      EXPECT_TRUE(ev[k].contains(f)) << f << " missing in " << ev[k].dump();
    }
  }
  EXPECT_EQ(ev.back()["phase"], "result");
  EXPECT_EQ(ev.back()["already_complete"], false);
  EXPECT_EQ(ev.back()["experts_bytes"], 3543040);  // 4096 + 48 * 73728 (stride of 71168 B blocks)

  CliRun again = run("build " + src + " -o " + out + " --progress json 2>&1");
  EXPECT_EQ(again.status, 0);
  EXPECT_NE(again.out.find("\"already_complete\":true"), std::string::npos) << again.out;

  CliRun v = run("verify --full --json " + out + "/manifest.json 2>/dev/null");
  EXPECT_EQ(v.status, 0);
  const nlohmann::json vj = nlohmann::json::parse(v.out);
  EXPECT_EQ(vj["ok"], true);
  EXPECT_EQ(vj["experts_checked"], 48);

  CliRun bad = run("verify " + tmp.file("nowhere") + " 2>&1");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("nowhere"), std::string::npos) << bad.out;

  CliRun nosrc = run("build " + tmp.file("missing.gguf") + " -o " + tmp.file("p2") + " 2>&1");
  EXPECT_EQ(nosrc.status, 1);
  EXPECT_NE(nosrc.out.find("missing.gguf"), std::string::npos) << nosrc.out;
}

}  // namespace
}  // namespace moepack
