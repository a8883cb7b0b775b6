// `moepack tokenize` and `moepack template` through the real binary ($MOEPACK_CLI): ids against
// llama.cpp's references, special-token parsing only on request, the demo model's ChatML prompt
// (hand-checked), and errors that name the messages file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kShared = MOEPACK_SHARED_DIR;
const fs::path kDeepseek2 = kShared / "fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf";
const fs::path kDemo = kShared / "models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun run(const std::vector<std::string>& args) {
  const char* cli = std::getenv("MOEPACK_CLI");
  if (!cli) {
    ADD_FAILURE() << "MOEPACK_CLI not set";
    return {};
  }
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = std::to_string(::getpid());
  const fs::path out = dir / ("moepack-cli-tok-" + tag + ".out"), err = dir / ("moepack-cli-tok-" + tag + ".err");
  std::string cmd = quote(cli);
  for (const std::string& a : args) cmd += " " + quote(a);
  cmd += " > " + quote(out.string()) + " 2> " + quote(err.string());
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

TEST(CliTokenize, JsonIdsEqualLlamaCpp) {
  const json ref = json::parse(slurp(kShared / "fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.ref.json"));
  for (int idx : {0, 7, 9, 10}) {
    const json& r = ref["results"][static_cast<size_t>(idx)];
    const CliRun res = run({"tokenize", kDeepseek2.string(), "--text", r["prompt"].get<std::string>(), "--parse-special", "--json"});
    ASSERT_EQ(res.status, 0) << res.err;
    EXPECT_EQ(json::parse(res.out), r["tokens"]) << "prompt " << idx;
  }
}

// An Expert Pack tokenizes and formats as its source: its dense.gguf carries the vocabulary and
// the template (the oracle is llama.cpp's ids for the source GGUF).
TEST(CliTokenize, PackTokenizesAsItsSource) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-tok-pack-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const CliRun built = run({"build", kDeepseek2.string(), "-o", (dir / "pack").string()});
  ASSERT_EQ(built.status, 0) << built.err;
  const json ref = json::parse(slurp(kShared / "fixtures/deepseek2-tiny/deepseek2-tiny-Q4_K_M.ref.json"));
  const json& r = ref["results"][7];
  for (const fs::path& p : {dir / "pack", dir / "pack" / "manifest.json"}) {
    const CliRun res =
        run({"tokenize", p.string(), "--text", r["prompt"].get<std::string>(), "--parse-special", "--json"});
    ASSERT_EQ(res.status, 0) << res.err;
    EXPECT_EQ(json::parse(res.out), r["tokens"]) << p;
  }
  const CliRun not_pack = run({"tokenize", dir.string(), "--text", "x"});  // a folder without a pack
  EXPECT_NE(not_pack.status, 0);
  EXPECT_NE(not_pack.err.find("manifest.json"), std::string::npos) << not_pack.err;
  fs::remove_all(dir);
}

TEST(CliTokenize, SpecialTextIsPlainUnlessAsked) {
  const std::string text = "Hi<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  const CliRun plain = run({"tokenize", kDeepseek2.string(), "--text", text, "--json"});
  const CliRun special = run({"tokenize", kDeepseek2.string(), "--text", text, "--parse-special", "--json"});
  ASSERT_EQ(plain.status, 0);
  ASSERT_EQ(special.status, 0);
  const auto p = json::parse(plain.out).get<std::vector<int>>();
  const auto s = json::parse(special.out).get<std::vector<int>>();
  EXPECT_EQ(std::count(p.begin(), p.end(), 32014), 0);
  EXPECT_EQ(s.back(), 32014);
  // Human output: ids on stdout, the per-token table on stderr.
  const CliRun human = run({"tokenize", kDeepseek2.string(), "--text", "Hello"});
  EXPECT_EQ(human.out, "32013 17535\n");
  EXPECT_NE(human.err.find("'Hello'"), std::string::npos);
}

// A BOS id outside the vocabulary (the demo's tokenizer.ggml.bos_token_id, a UINT32, patched to
// 999999) is replaced by llama.cpp's default as before, and the user is told so: the key, the
// bad id, the vocabulary's size and the id used.
TEST(CliTokenize, AnOutOfRangeBosIdIsAWarning) {
  std::string bytes = slurp(kDemo);
  const std::string key = "tokenizer.ggml.bos_token_id";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  uint32_t type = 0;
  std::memcpy(&type, bytes.data() + at + key.size(), 4);
  ASSERT_EQ(type, 4u);  // GGUF_TYPE_UINT32
  const uint32_t bad = 999999;
  std::memcpy(bytes.data() + at + key.size() + 4, &bad, 4);
  const fs::path model = write_temp("moepack-bad-bos.gguf", bytes);
  const CliRun r = run({"tokenize", model.string(), "--text", "hi"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(
      r.err.find("warning: " + model.string() + ": tokenizer.ggml.bos_token_id 999999 is not a token of the"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("using the default 11 ')'"), std::string::npos) << r.err;
  fs::remove(model);
}

TEST(CliTemplate, DemoModelChatML) {
  const fs::path msgs = write_temp("moepack-msgs.json", R"([{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Define \"happy\"."}, {"role": "assistant", "content": "Feeling joy."},
      {"role": "user", "content": "Opposite?"}])");
  const std::string turns =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nDefine \"happy\".<|im_end|>\n"
      "<|im_start|>assistant\nFeeling joy.<|im_end|>\n<|im_start|>user\nOpposite?<|im_end|>\n";
  const CliRun with = run({"template", kDemo.string(), "--messages", msgs.string()});
  ASSERT_EQ(with.status, 0) << with.err;
  EXPECT_EQ(with.out, turns + "<|im_start|>assistant\n");
  const CliRun without = run({"template", kDemo.string(), "--messages", msgs.string(), "--no-generation-prompt"});
  EXPECT_EQ(without.out, turns);
  const CliRun js = run({"template", kDemo.string(), "--messages", msgs.string(), "--json"});
  ASSERT_EQ(js.status, 0) << js.err;
  const json j = json::parse(js.out);
  EXPECT_EQ(j["prompt"], turns + "<|im_start|>assistant\n");
  EXPECT_FALSE(j["fallback"].get<bool>());
  const auto ids = j["tokens"].get<std::vector<int>>();
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids[0], 0);  // BOS <|endoftext|>, once
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 0), 1);
  EXPECT_EQ(ids[1], 1);  // <|im_start|> as a special token
  fs::remove(msgs);
}

// The demo model with its template key renamed (one byte: "tokenizer.chat_templatX"), so it has
// no template: ChatML with a warning, or with --no-fallback an error that says why and does not
// claim to fall back.
TEST(CliTemplate, NoFallbackRefusesAModelWithoutATemplate) {
  std::string bytes = slurp(kDemo);
  const std::string key = "tokenizer.chat_template";
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos);
  bytes[at + key.size() - 1] = 'X';
  const fs::path model = write_temp("moepack-no-template.gguf", bytes);
  const fs::path msgs = write_temp("moepack-msgs-1.json", R"([{"role": "user", "content": "Hi"}])");
  const CliRun fallback = run({"template", model.string(), "--messages", msgs.string()});
  ASSERT_EQ(fallback.status, 0) << fallback.err;
  EXPECT_EQ(fallback.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(fallback.err.find("no tokenizer.chat_template; using the ChatML fallback"), std::string::npos)
      << fallback.err;
  const CliRun refused = run({"template", model.string(), "--messages", msgs.string(), "--no-fallback"});
  EXPECT_EQ(refused.status, 1);
  EXPECT_TRUE(refused.out.empty());
  EXPECT_NE(refused.err.find("no tokenizer.chat_template (--no-fallback"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("using the ChatML fallback"), std::string::npos) << refused.err;
  fs::remove(model);
  fs::remove(msgs);
}

TEST(CliTemplate, BadMessagesFileIsAnErrorNamingIt) {
  const fs::path msgs = write_temp("moepack-bad-msgs.json", R"({"role": "user"})");
  const CliRun r = run({"template", kDemo.string(), "--messages", msgs.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(msgs.string()), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  fs::remove(msgs);
}

}  // namespace
