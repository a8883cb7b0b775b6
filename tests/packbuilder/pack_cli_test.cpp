// `moepack build` / `moepack verify` through the binary ($MOEPACK_CLI, set by ctest): exit
// status, --progress json lines (one object per line with the documented fields), the result
// line, "already complete" on a re-run, verify --json, errors on stderr naming the file, and
// the refusal to write over the source (an output path that is the source or a symbolic link).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/sha256.h"
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

// Size and SHA-256 of a file ("missing" when it does not exist).
std::string fingerprint(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  if (ec) return "missing";
  return std::to_string(n) + " " + to_hex(sha256_file(path));
}

// An output file of the pack that is the source itself (the tester's data loss: the source was
// truncated to dense.gguf's 272,352 bytes), a hard link to it, or a symbolic link (to the
// source or to anything else) is refused before anything is written: exit 1, a message naming
// the path and why, and the source's (or the link target's) bytes unchanged.
TEST(PackCli, BuildRefusesOutputPathsThatAreTheSourceOrSymlinks) {
  ASSERT_NE(std::getenv("MOEPACK_CLI"), nullptr) << "MOEPACK_CLI is not set (run through ctest)";
  namespace fs = std::filesystem;
  const std::string demo =
      std::string(MOEPACK_SOURCE_DIR) + "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";
  const std::string want = fingerprint(demo);
  ASSERT_NE(want, "missing");
  struct Case {
    const char* name;
    const char* source;             // in the case's folder; a copy of the demo model
    const char* link;               // "" or a name in out/ made a link to `link_to`
    const char* link_to;            // in the case's folder
    bool hard = false;              // a hard link instead of a symbolic one
    const char* args = "";          // more build options
    std::vector<std::string> says;  // in the error message
  };
  const std::vector<Case> cases = {
      {"source-is-dense", "out/dense.gguf", "", "", false, "", {"out/dense.gguf is the source model itself"}},
      {"source-is-experts",
       "out/experts.bin",
       "",
       "",
       false,
       " --overwrite",
       {"out/experts.bin is the source model itself"}},
      {"symlink-to-source",
       "model.gguf",
       "dense.gguf",
       "model.gguf",
       false,
       "",
       {"out/dense.gguf is a symbolic link", "model.gguf", "write through it"}},
      {"hardlink-to-source",
       "model.gguf",
       "experts.bin",
       "model.gguf",
       true,
       "",
       {"out/experts.bin is the source model itself", "another name of"}},
      {"source-is-manifest",
       "out/manifest.json",
       "",
       "",
       false,
       "",
       {"out/manifest.json is the source model itself"}},
      {"symlink-elsewhere",
       "model.gguf",
       "build-state.json.tmp",
       "victim.txt",
       false,
       "",
       {"out/build-state.json.tmp is a symbolic link"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    test::TempDir tmp("moepack-cli-refuse");
    const std::string out = tmp.file("out"), src = tmp.file(c.source);
    fs::create_directories(out);
    fs::copy_file(demo, src);
    const std::string victim = tmp.file("victim.txt");
    std::ofstream(victim) << "not a model\n";
    const std::string victim_was = fingerprint(victim);
    if (*c.link) {
      if (c.hard) {
        fs::create_hard_link(tmp.file(c.link_to), out + "/" + c.link);
      } else {
        fs::create_symlink(tmp.file(c.link_to), out + "/" + c.link);
      }
    }
    const CliRun r =
        run("build " + src + " -o " + out + " --safety-margin-gib 0 --no-direct-io" + c.args + " 2>&1");
    EXPECT_EQ(r.status, 1) << r.out;
    for (const std::string& s : c.says)
      EXPECT_NE(r.out.find(s), std::string::npos) << "no \"" << s << "\" in: " << r.out;
    EXPECT_NE(r.out.find("Nothing was written"), std::string::npos) << r.out;
    EXPECT_EQ(fingerprint(src), want);
    EXPECT_EQ(fingerprint(victim), victim_was);
    if (src != out + "/manifest.json") {
      EXPECT_FALSE(fs::exists(out + "/manifest.json"));
    }
    EXPECT_FALSE(fs::exists(out + "/build-state.json"));
  }
}

}  // namespace
}  // namespace moepack
