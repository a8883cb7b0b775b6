// Tests of `moepack inspect` through the real binary (path in $MOEPACK_CLI, set by
// moepack_add_gtest): JSON on stdout only, exit status, error messages naming the file, values
// against the fixtures' READMEs and ggml's dequant.json, and peak RSS on a file that declares
// huge metadata.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/gguf_writer.h"

namespace {

using nlohmann::json;
namespace TV = moepack::test::TV;

const std::string kShared = MOEPACK_SHARED_DIR;

struct RunResult {
  int exit_code = -1;       // -1 if killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
  long max_rss_kib = 0;     // ru_maxrss of the child (KiB on Linux)
};

std::string cli_path() {
  const char* p = std::getenv("MOEPACK_CLI");
  return p != nullptr ? p : "";
}

// Runs the moepack binary with `args`, capturing stdout and stderr; reports the child's rusage.
RunResult run_cli(const std::vector<std::string>& args) {
  RunResult r;
  const std::string bin = cli_path();
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return r;
  }
  std::vector<std::string> argv_s = {bin};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[k]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.max_rss_kib = ru.ru_maxrss;
  return r;
}

json load_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

class CliInspect : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(cli_path().empty()) << "MOEPACK_CLI is not set"; }
};

TEST_F(CliInspect, JsonOnDeepseek2MatchesReadmeAndDequant) {
  const std::string path = kShared + "/fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf";
  const RunResult r = run_cli({"inspect", path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // stdout is exactly one JSON object (parse fails on anything else around it).
  json j;
  ASSERT_NO_THROW(j = json::parse(r.out)) << r.out.substr(0, 200);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["architecture"], "deepseek2");
  EXPECT_EQ(j["gguf_version"], 3);
  // fixtures/README.md: 4 blocks, n_embd 256, 4 heads, 16 experts top-4, 1 shared, ...
  const json& hp = j["hparams"];
  EXPECT_EQ(hp["block_count"], 4);
  EXPECT_EQ(hp["embedding_length"], 256);
  EXPECT_EQ(hp["attention.head_count"], 4);
  EXPECT_EQ(hp["attention.head_count_kv"], 1);
  EXPECT_EQ(hp["attention.kv_lora_rank"], 256);
  EXPECT_EQ(hp["expert_feed_forward_length"], 256);
  EXPECT_EQ(hp["context_length"], 163840);
  EXPECT_EQ(hp["rope.freq_base"], 10000.0);
  EXPECT_EQ(hp["rope.scaling.type"], "yarn");
  EXPECT_EQ(j["tokenizer"]["pre"], "deepseek-coder");
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 32256);
  EXPECT_EQ(j["tokenizer"]["bos_id"], 32013);
  EXPECT_EQ(j["tokenizer"]["eos_id"], 32014);
  EXPECT_EQ(j["moe"]["expert_count"], 16);
  EXPECT_EQ(j["moe"]["expert_used_count"], 4);
  EXPECT_EQ(j["moe"]["expert_shared_count"], 1);
  // MoE blocks 1-3 (leading_dense_block_count = 1); gate/up q4_K = 256 x 144 B per expert.
  const json& layers = j["moe"]["layers"];
  ASSERT_EQ(layers.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(layers[k]["block"], k + 1);
    EXPECT_EQ(layers[k]["n_experts"], 16);
    EXPECT_EQ(layers[k]["roles"][0]["role"], "gate");
    EXPECT_EQ(layers[k]["roles"][0]["bytes_per_expert"], 36864);
  }
  // Every tensor against ggml's dequant.json.
  const json dq = load_json(kShared + "/fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.dequant.json");
  EXPECT_EQ(j["tensor_count"], dq["tensors"].size());
  ASSERT_EQ(j["tensors"].size(), dq["tensors"].size());
  std::map<std::string, json> by_name;
  for (const json& t : j["tensors"]) by_name[t["name"].get<std::string>()] = t;
  for (const json& want : dq["tensors"]) {
    const std::string name = want["name"].get<std::string>();
    ASSERT_TRUE(by_name.count(name)) << name;
    const json& got = by_name[name];
    EXPECT_EQ(got["type"], want["type"]) << name;
    EXPECT_EQ(got["nbytes"], want["nbytes"]) << name;
    EXPECT_EQ(got["file_offset"], want["file_offset"]) << name;
    EXPECT_EQ(got["shard"], 0) << name;
    // inspect prints n_dims entries; dequant.json pads ne to 4 with 1s.
    const json& ne = got["ne"];
    for (size_t d = 0; d < 4; ++d) {
      EXPECT_EQ(d < ne.size() ? ne[d].get<uint64_t>() : 1u, want["ne"][d].get<uint64_t>()) << name << " ne " << d;
    }
  }
}

TEST_F(CliInspect, JsonOnSplitSetViaMiddleShard) {
  const std::string dir = kShared + "/fixtures/deepseek2-tiny/";
  const RunResult r = run_cli({"inspect", dir + "deepseek2-tiny-Q2_K-00002-of-00003.gguf", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["files"].size(), 3u);
  EXPECT_EQ(j["tensor_count"], 69);
  EXPECT_EQ(j["architecture"], "deepseek2");
  std::map<std::string, json> by_name;
  for (const json& t : j["tensors"]) by_name[t["name"].get<std::string>()] = t;
  for (int s = 0; s < 3; ++s) {
    const json dq = load_json(dir + "deepseek2-tiny-Q2_K-0000" + std::to_string(s + 1) + "-of-00003.dequant.json");
    for (const json& want : dq["tensors"]) {
      const std::string name = want["name"].get<std::string>();
      ASSERT_TRUE(by_name.count(name)) << name;
      EXPECT_EQ(by_name[name]["shard"], s) << name;
      EXPECT_EQ(by_name[name]["file_offset"], want["file_offset"]) << name;
      EXPECT_EQ(by_name[name]["nbytes"], want["nbytes"]) << name;
    }
  }
  // q2_K gate/up (256 x 84 B), q3_K down (256 x 110 B) per expert.
  for (const json& L : j["moe"]["layers"]) {
    EXPECT_EQ(L["roles"][0]["bytes_per_expert"], 21504);
    EXPECT_EQ(L["roles"][2]["bytes_per_expert"], 28160);
    EXPECT_EQ(L["expert_bytes"], 21504 * 2 + 28160);
  }
}

// An Expert Pack (its directory or manifest.json) inspects as its source: the MoE structure, the
// tensor count and bytes of deepseek2-tiny's GGUF (checked above against dequant.json); files are
// the pack's two; expert_pack describes the pack (3 x 16 experts; strides 110,592 bytes for the
// q4_K blocks and 131,072 for the q6_K-down ones, docs/expert-pack.md: the slot is the larger).
// A pack without its manifest fails naming it.
TEST_F(CliInspect, ExpertPackInspectsAsItsSource) {
  moepack::test::TempDir dir;
  const std::string src = kShared + "/fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf";
  const std::string pack = dir.file("ds2.pack");
  const RunResult b = run_cli({"build", src, "-o", pack, "--progress", "none"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json want = json::parse(run_cli({"inspect", src, "--json"}).out);
  for (const std::string& path : {pack, pack + "/manifest.json"}) {
    const RunResult r = run_cli({"inspect", path, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["architecture"], "deepseek2");
    EXPECT_EQ(j["moe"], want["moe"]);
    EXPECT_EQ(j["tensor_count"], want["tensor_count"]);
    EXPECT_EQ(j["tensor_bytes"], want["tensor_bytes"]);
    EXPECT_EQ(j["bytes_by_type"], want["bytes_by_type"]);
    EXPECT_EQ(j["hparams"], want["hparams"]);
    EXPECT_EQ(j["files"], json::array({pack + "/dense.gguf", pack + "/experts.bin"}));
    EXPECT_EQ(j["expert_pack"]["experts"], 48);
    EXPECT_EQ(j["expert_pack"]["pack_dir"], pack);
    EXPECT_EQ(j["expert_pack"]["slot_bytes"], 131072);  // the q6_K-down blocks' stride, the largest
    const RunResult t = run_cli({"inspect", path});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_NE(t.err.find("expert pack:  " + pack + ": 48 experts"), std::string::npos) << t.err;
  }
  // A trailing slash names the same pack.
  const RunResult slash = run_cli({"inspect", pack + "/", "--json"});
  ASSERT_EQ(slash.exit_code, 0) << slash.err;
  EXPECT_EQ(json::parse(slash.out)["files"], json::array({pack + "/dense.gguf", pack + "/experts.bin"}));
  ASSERT_EQ(std::remove((pack + "/manifest.json").c_str()), 0);
  const RunResult r = run_cli({"inspect", pack, "--json"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(pack + ": not an Expert Pack (no manifest.json)"), std::string::npos) << r.err;
}

TEST_F(CliInspect, EveryModelInspects) {
  struct M {
    const char* file;
    const char* arch;
    int blocks;
    int experts;
  };
  // Architecture, block_count and expert_count as each README states them.
  const M models[] = {
      {"fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf", "deepseek2", 4, 16},
      {"fixtures/deepseek2-tiny/deepseek2-tiny-Q2_K-00001-of-00003.gguf", "deepseek2", 4, 16},
      {"fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf", "qwen3moe", 4, 8},
      {"fixtures/llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf", "llama", 4, 8},
      {"fixtures/deepseek4-tiny/deepseek4-tiny-Q4_K_M.gguf", "deepseek4", 4, 16},
      {"fixtures/deepseek4-tiny/deepseek4-tiny-Q2_K.gguf", "deepseek4", 4, 16},
      {"fixtures/deepseek4-tiny/deepseek4-tiny-MXFP4_MOE.gguf", "deepseek4", 4, 16},
      {"fixtures/kimi-linear-tiny/kimi-linear-tiny-Q4_K_M.gguf", "kimi-linear", 4, 32},
      {"fixtures/kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf", "kimi-linear", 4, 32},
      {"models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf", "deepseek2", 6, 32},
      {"models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q2_K.gguf", "deepseek2", 6, 32},
  };
  for (const M& m : models) {
    SCOPED_TRACE(m.file);
    const RunResult r = run_cli({"inspect", "--json", kShared + "/" + m.file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["architecture"], m.arch);
    EXPECT_EQ(j["hparams"]["block_count"], m.blocks);
    EXPECT_EQ(j["moe"]["expert_count"], m.experts);
    for (const json& L : j["moe"]["layers"]) EXPECT_EQ(L["n_experts"], m.experts);
  }
}

TEST_F(CliInspect, HumanTextGoesToStderr) {
  const RunResult r = run_cli({"inspect", kShared + "/fixtures/llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("llama"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("32000"), std::string::npos) << r.err;  // vocab (README: 32000 tokens)
}

TEST_F(CliInspect, BrokenFilesFailNamingTheFile) {
  moepack::test::TempDir dir;
  // The first 4000 bytes of a real fixture: the metadata is cut inside the token list.
  const std::vector<uint8_t> real = moepack::test::read_file(kShared + "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf");
  moepack::test::write_file(dir.file("cut.gguf"), moepack::test::truncate(real, 4000));
  // Bad magic.
  std::vector<uint8_t> bad = moepack::test::truncate(real, 4096);
  bad[0] = 'X';
  moepack::test::write_file(dir.file("magic.gguf"), bad);
  // A crafted file with an unknown tensor type.
  moepack::test::GgufWriter w;
  w.kv("general.architecture", TV::str("llama"));
  w.tensor(moepack::test::TensorSpec("w", 31, {32}).with_data_bytes(64));
  moepack::test::write_file(dir.file("type.gguf"), w.build());
  for (const char* name : {"cut.gguf", "magic.gguf", "type.gguf", "missing.gguf"}) {
    for (bool as_json : {false, true}) {
      std::vector<std::string> args = {"inspect", dir.file(name)};
      if (as_json) args.push_back("--json");
      const RunResult r = run_cli(args);
      EXPECT_NE(r.exit_code, 0) << name;
      EXPECT_EQ(r.signal, 0) << name;
      EXPECT_EQ(r.out, "") << name;  // nothing on stdout when it fails
      EXPECT_NE(r.err.find(dir.file(name)), std::string::npos) << name << ": " << r.err;
    }
  }
  // Specific fields: the magic at byte 0; the tensor type of "w": kv "general.architecture"
  // takes 8 + 20 + 4 + 8 + 5 = 45 bytes (24..68), the info starts at 69, its type at 69 + 9 + 4 + 8 = 90.
  EXPECT_NE(run_cli({"inspect", dir.file("magic.gguf")}).err.find("magic at byte 0"), std::string::npos);
  const RunResult t = run_cli({"inspect", dir.file("type.gguf")});
  EXPECT_NE(t.err.find("tensor \"w\" type at byte 90"), std::string::npos) << t.err;
}

// Builds a sparse file from (offset, bytes) pieces.
class SparseFile {
 public:
  void put(const moepack::test::ByteBuf& b) {
    pieces_.emplace_back(pos_, b.bytes());
    pos_ += b.size();
  }
  void skip(uint64_t n) { pos_ += n; }
  uint64_t pos() const { return pos_; }
  void write(const std::string& path, uint64_t total) const {
    moepack::test::write_sparse_file(path, {}, total, pieces_);
  }

 private:
  uint64_t pos_ = 0;
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> pieces_;
};

TEST_F(CliInspect, PeakRssStaysBoundedOnHugeDeclaredMetadata) {
  using moepack::test::ByteBuf;
  moepack::test::TempDir dir;
  constexpr uint64_t kMiB = 1ull << 20;
  SparseFile f;
  ByteBuf h;
  h.raw("GGUF", 4).u32(3).u64(1).u64(5);
  h.str("general.architecture").u32(moepack::test::kGgufString).str("llama");
  // A 15 MiB string (below the 16 MiB string cap): content left as a hole.
  h.str("general.description").u32(moepack::test::kGgufString).u64(15 * kMiB);
  f.put(h);
  f.skip(15 * kMiB);
  // tokenizer.ggml.tokens: 150 strings of 1 MiB = 150 MiB of string array.
  ByteBuf t;
  t.str("tokenizer.ggml.tokens").u32(moepack::test::kGgufArray).u32(moepack::test::kGgufString).u64(150);
  f.put(t);
  for (int k = 0; k < 150; ++k) {
    ByteBuf len;
    len.u64(kMiB);
    f.put(len);
    f.skip(kMiB);
  }
  // A 30 MiB u8 array among the hyperparameters.
  ByteBuf a;
  a.str("llama.huge").u32(moepack::test::kGgufArray).u32(moepack::test::kGgufU8).u64(30 * kMiB);
  f.put(a);
  f.skip(30 * kMiB);
  ByteBuf rest;
  rest.str("llama.block_count").u32(moepack::test::kGgufU32).u32(1);
  rest.str("w").u32(1).u64(8).u32(moepack::test::kF32).u64(0);
  f.put(rest);
  const uint64_t data_start = (f.pos() + 31) / 32 * 32;
  const uint64_t total = std::max<uint64_t>(200 * kMiB, data_start + 32);
  f.write(dir.file("huge.gguf"), total);

  for (bool as_json : {true, false}) {
    std::vector<std::string> args = {"inspect", dir.file("huge.gguf")};
    if (as_json) args.push_back("--json");
    const RunResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(r.max_rss_kib, 64 * 1024) << "peak RSS " << r.max_rss_kib << " KiB";
    RecordProperty(as_json ? "max_rss_kib_json" : "max_rss_kib_text", std::to_string(r.max_rss_kib));
    if (as_json) {
      const json j = json::parse(r.out);
      EXPECT_EQ(j["tokenizer"]["vocab_size"], 150);
      EXPECT_EQ(j["hparams"]["block_count"], 1);
      EXPECT_EQ(j["tensor_count"], 1);
      EXPECT_EQ(j["tensors"][0]["file_offset"], data_start);
      EXPECT_EQ(j["file_bytes"], total);
    }
  }
}

}  // namespace

// Metadata values the report cannot show in full are summarised, so peak memory stays bounded
// even for a 12 MiB string of zero bytes (each would be a 6-byte "\u0000" escape in JSON) and
// two ~1 MiB resident arrays under the architecture's keys (together just inside the reader's
// 24 MiB metadata budget).
TEST_F(CliInspect, HugeArchitectureValuesAreSummarised) {
  moepack::test::TempDir dir;
  moepack::test::GgufWriter w;
  w.kv("general.architecture", TV::str("llama"));
  w.kv("llama.big_string", TV::str(std::string(12u << 20, '\0')));
  for (int k = 0; k < 2; ++k) {
    w.kv("llama.big_array_" + std::to_string(k), TV::arr_u8(std::vector<uint8_t>((1u << 20) - 64, 7)));
  }
  w.kv("llama.block_count", TV::u32(2));
  moepack::test::write_file(dir.file("big.gguf"), w.build());
  for (bool as_json : {false, true}) {
    std::vector<std::string> args = {"inspect", dir.file("big.gguf")};
    if (as_json) args.push_back("--json");
    const RunResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_LT(r.max_rss_kib, 64 * 1024) << "peak RSS " << r.max_rss_kib << " KiB";
    if (as_json) {
      const json j = json::parse(r.out);
      EXPECT_EQ(j["hparams"]["big_string"]["string_bytes"].get<uint64_t>(), 12u << 20);
      EXPECT_EQ(j["hparams"]["big_array_0"]["count"].get<uint64_t>(), (1u << 20) - 64);
      EXPECT_EQ(j["hparams"]["block_count"].get<int>(), 2);
    }
  }
}

// Invalid UTF-8 in a string is replaced (U+FFFD) in the JSON, not a crash or a bare exception.
TEST_F(CliInspect, InvalidUtf8InMetadataIsReplaced) {
  moepack::test::TempDir dir;
  moepack::test::GgufWriter w;
  w.kv("general.architecture", TV::str("llama"));
  w.kv("general.name", TV::str(std::string("bad\xff\xfe name")));
  moepack::test::write_file(dir.file("utf8.gguf"), w.build());
  const RunResult r = run_cli({"inspect", dir.file("utf8.gguf"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["name"].get<std::string>(), "bad\xEF\xBF\xBD\xEF\xBF\xBD name");
}

// An absurd block number in an expert tensor's name is an error naming the tensor.
TEST_F(CliInspect, AbsurdBlockNumberNamesTheTensor) {
  moepack::test::TempDir dir;
  moepack::test::GgufWriter w;
  w.kv("general.architecture", TV::str("llama"));
  w.tensor(moepack::test::TensorSpec("blk.99999999999999999999.ffn_up_exps.weight", 0, {32, 2, 2}).with_data_bytes(512));
  moepack::test::write_file(dir.file("blk.gguf"), w.build());
  const RunResult r = run_cli({"inspect", dir.file("blk.gguf")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.signal, 0);
  EXPECT_NE(r.err.find("blk.99999999999999999999.ffn_up_exps.weight"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir.file("blk.gguf")), std::string::npos) << r.err;
}
