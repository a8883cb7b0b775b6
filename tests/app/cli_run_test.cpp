// `moepack run` and `moepack chat` through the real binary ($MOEPACK_CLI), against llama.cpp's
// references: greedy continuations and last-prompt-position logits of the fixtures
// (f32-dequant references, ../shared/fixtures/README.md), the demo model's answers as its
// README shows them (Q4_K_M column), stop strings, piped chat sessions, error exits, and
// Ctrl-C (SIGINT) ending a generation cleanly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kShared = MOEPACK_SHARED_DIR;
const fs::path kFixtures = kShared / "fixtures";
const fs::path kDemo = fs::path(MOEPACK_SOURCE_DIR) / "resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";

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

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("moepack-cli-run-" + std::to_string(::getpid()) + "-" + name);
}

struct CliRun {
  int status = -1;
  std::string out, err;
};

// Runs $MOEPACK_CLI with `args`; `input` (if any) is piped to its stdin.
CliRun run(const std::vector<std::string>& args, const std::string* input = nullptr) {
  const char* cli = std::getenv("MOEPACK_CLI");
  if (!cli) {
    ADD_FAILURE() << "MOEPACK_CLI not set";
    return {};
  }
  const fs::path out = temp_path("out"), err = temp_path("err"), in = temp_path("in");
  std::string cmd = quote(cli);
  for (const std::string& a : args) cmd += " " + quote(a);
  if (input) {
    std::ofstream(in, std::ios::binary) << *input;
    cmd += " < " + quote(in.string());
  } else {
    cmd += " < /dev/null";
  }
  cmd += " > " + quote(out.string()) + " 2> " + quote(err.string());
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  fs::remove(in);
  return r;
}

std::vector<float> read_f32(const fs::path& p) {
  const std::string bytes = slurp(p);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);  // little-endian hosts (x86-64, aarch64)
  return v;
}

struct FixtureCase {
  const char* dir;
  const char* model;  // file stem
};

// Greedy 24 tokens of prompt 0 equal llama.cpp's on the f32-dequantized weights; the prompt
// logits written by --logits-out are within the README's 1e-2 of the reference's full vector.
TEST(CliRun, GreedyContinuationAndLogitsMatchTheFixtures) {
  for (const FixtureCase c : {FixtureCase{"llama-moe-tiny", "llama-moe-tiny-Q4_K_M"},
                              FixtureCase{"deepseek2-tiny", "deepseek2-tiny-Q4_K_M"},
                              FixtureCase{"qwen3moe-tiny", "qwen3moe-tiny-MXFP4_MOE"}}) {
    SCOPED_TRACE(c.model);
    const fs::path dir = kFixtures / c.dir;
    const json ref = json::parse(slurp(dir / (std::string(c.model) + ".f32-dequant.ref.json")));
    const json& r0 = ref["results"][0];
    const fs::path logits_out = temp_path("logits.bin");
    const CliRun res = run({"run", (dir / (std::string(c.model) + ".gguf")).string(), "--prompt",
                            r0["prompt"].get<std::string>(), "--temperature", "0", "-n", "24", "--ignore-eos", "--json",
                            "--logits-out", logits_out.string(), "--backend", "cpu"});
    ASSERT_EQ(res.status, 0) << res.err;
    const json j = json::parse(res.out);
    EXPECT_EQ(j["prompt_tokens"], r0["tokens"]);
    EXPECT_EQ(j["tokens"], r0["greedy_tokens"]);
    EXPECT_EQ(j["stop_reason"], "length");
    EXPECT_EQ(j["backend"], "cpu");
    EXPECT_EQ(j["stats"]["forward_calls"], 24);  // one prefill, 23 decode steps
    EXPECT_EQ(j["stats"]["tokens_evaluated"], r0["tokens"].size() + 23);
    EXPECT_EQ(j["stats"]["expert_selections"], j["stats"]["experts_computed"]);
    EXPECT_GT(j["timings"]["decode_tokens_per_s"].get<double>(), 0.0);

    const std::vector<float> got = read_f32(logits_out);
    const std::vector<float> want = read_f32(dir / r0["full_logits_file"].get<std::string>());
    ASSERT_EQ(got.size(), ref["n_vocab"].get<size_t>());
    ASSERT_EQ(got.size(), want.size());
    float max_diff = 0;
    for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    EXPECT_LT(max_diff, 1e-2f);
    fs::remove(logits_out);
  }
}

// The demo model answers as its README shows (llama-simple, greedy, Q4_K_M, no system message).
TEST(CliRun, DemoModelAnswersAsItsReadme) {
  const std::pair<const char*, const char*> qa[] = {
      {"What does \"salmon\" mean?",
       "salmon (noun): any of various large food and game fishes of northern waters; usually migrate from salt to "
       "fresh water to spawn."},
      {"What is the opposite of \"hot\"?", "The opposite of \"hot\" is \"cold\"."},
      {"Hello! Who are you?",
       "Hello! I am a tiny language model. I was trained on the WordNet dictionary and a collection of fortune "
       "quotes, so I can explain words and share quotations."},
  };
  for (const auto& [q, a] : qa) {
    const CliRun res = run({"run", kDemo.string(), "--chat", "--prompt", q, "--temperature", "0", "-n", "100"});
    ASSERT_EQ(res.status, 0) << res.err;
    EXPECT_EQ(res.out, std::string(a) + "\n") << q;
    EXPECT_NE(res.err.find("stop: eos"), std::string::npos) << res.err;
  }
}

TEST(CliRun, JsonTextEqualsStreamedTextAndStopStringsCut) {
  const std::vector<std::string> base = {"run", kDemo.string(), "--chat", "--prompt", "What does \"salmon\" mean?",
                                         "--temperature", "0", "-n", "100"};
  const CliRun streamed = run(base);
  std::vector<std::string> args = base;
  args.push_back("--json");
  const CliRun js = run(args);
  ASSERT_EQ(streamed.status, 0) << streamed.err;
  ASSERT_EQ(js.status, 0) << js.err;
  const json j = json::parse(js.out);
  EXPECT_EQ(streamed.out, j["text"].get<std::string>() + "\n");
  EXPECT_EQ(j["stop_reason"], "eos");
  EXPECT_EQ(j["tokens"].back(), 2);  // <|im_end|>, included in the ids, not in the text
  EXPECT_EQ(streamed.err.find("trained context"), std::string::npos) << streamed.err;

  // n_ctx above the model's trained context (2048, the demo README): said, and what ran is in the JSON.
  std::vector<std::string> big = args;
  big.insert(big.end(), {"--set", "n_ctx=100000"});
  const CliRun capped = run(big);
  ASSERT_EQ(capped.status, 0) << capped.err;
  EXPECT_NE(capped.err.find("n_ctx 100000 is above the model's trained context; running with 2048"),
            std::string::npos)
      << capped.err;
  EXPECT_EQ(json::parse(capped.out)["n_ctx"], 2048);

  args.insert(args.end(), {"--stop", "game fish"});
  const json s = json::parse(run(args).out);
  EXPECT_EQ(s["text"], "salmon (noun): any of various large food and ");
  EXPECT_EQ(s["stop_reason"], "stop");
}

TEST(CliChat, PipedConversationWithCommands) {
  const std::string input =
      "What does \"salmon\" mean?\n"
      "/stats\n"
      "/reset\n"
      "What is the opposite of \"hot\"?\n"
      "/exit\n"
      "never read\n";
  const CliRun res = run({"chat", kDemo.string(), "--temperature", "0", "-n", "100"}, &input);
  ASSERT_EQ(res.status, 0) << res.err;
  const std::string a1 =
      "salmon (noun): any of various large food and game fishes of northern waters; usually migrate from salt to "
      "fresh water to spawn.\n";
  const std::string a2 = "The opposite of \"hot\" is \"cold\".\n";
  ASSERT_EQ(res.out.rfind(a1, 0), 0u) << res.out;
  ASSERT_GE(res.out.size(), a1.size() + a2.size());
  EXPECT_EQ(res.out.substr(res.out.size() - a2.size()), a2);
  // Between them: the /stats JSON object.
  const json stats = json::parse(res.out.substr(a1.size(), res.out.size() - a1.size() - a2.size()));
  EXPECT_EQ(stats["backend"], "cpu");
  EXPECT_GT(stats["stats"]["forward_calls"].get<int>(), 0);
  EXPECT_EQ(stats["telemetry"]["counters"]["tokens"], stats["n_past"].get<int>() - 17 + 1);
  EXPECT_NE(res.err.find("reset"), std::string::npos);
}

TEST(CliChat, SecondTurnKeepsTheConversation) {
  // Without /reset the second question is asked after the first answer; it must still run
  // (KV reuse of the first turn) and end at end-of-turn.
  const std::string input = "What does \"salmon\" mean?\nWhat is the opposite of \"hot\"?\n";
  const CliRun res = run({"chat", kDemo.string(), "--temperature", "0", "-n", "60"}, &input);
  ASSERT_EQ(res.status, 0) << res.err;
  EXPECT_EQ(std::count(res.out.begin(), res.out.end(), '\n'), 2) << res.out;
}

// `moepack bench-io`'s options out of range are refused by name before any pack is opened.
TEST(CliBenchIo, OptionsOutOfRangeAreRefusedByName) {
  const std::string pack = temp_path("no-such-pack").string();
  struct Case {
    std::vector<std::string> args;
    const char* named;
  };
  for (const Case& c :
       {Case{{"--reads", "0"}, "--reads"}, Case{{"--reads", "-1"}, "--reads"},
        Case{{"--raw-max-mib", "0"}, "--raw-max-mib"}, Case{{"--raw-max-mib", "-1"}, "--raw-max-mib"},
        Case{{"--rounds", "2"}, "--vram"}, Case{{"--vram", "--rounds", "1001"}, "--rounds"},
        Case{{"--batch", "0"}, "--batch"}, Case{{"--batch", "4097"}, "--batch"},
        Case{{"--queue-depth", "0"}, "--queue-depth"}, Case{{"--queue-depth", "4097"}, "--queue-depth"},
        Case{{"--read-splits", "0"}, "--read-splits"}, Case{{"--read-splits", "65"}, "--read-splits"}}) {
    std::vector<std::string> args = {"bench-io", pack};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const CliRun r = run(args);
    EXPECT_EQ(r.status, 2) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.named), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;
  }
  // In range: the missing pack is named.
  const CliRun r = run({"bench-io", pack, "--reads", "4", "--raw-max-mib", "2048"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no-such-pack"), std::string::npos) << r.err;
}

// `moepack bench-twin --threads` past the engine's 4096 is refused by name (a reviewer's 100,000 made 32,448
// threads, the machine's whole process table, before the sixtieth session).
TEST(CliBenchTwin, ThreadsOutOfRangeAreRefusedByName) {
  const std::string twin = temp_path("no-such-twin").string();
  for (const char* threads : {"4097", "100000", "-1"}) {
    const CliRun r = run({"bench-twin", twin, "--zipf", "1", "--budget-mib", "100", "--threads", threads});
    EXPECT_EQ(r.status, 2) << threads << ": " << r.err;
    EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
  }
  const CliRun r = run({"bench-twin", twin, "--zipf", "1", "--budget-mib", "100", "--threads", "4096"});  // in range
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no-such-twin"), std::string::npos) << r.err;
}

// Bad arguments exit 2 (docs/cli.md) before the model is opened, naming the option, what it
// needs and what was given; CLI11's own codes (104-110) and its "0.000000 to 1797693..." range
// text do not reach the user.
TEST(CliRun, BadArgumentsExitTwoNamingTheOptionAndTheValue) {
  const std::string missing = temp_path("never-opened.gguf").string();
  const std::string bad_config = temp_path("bad-config.json").string();
  std::ofstream(bad_config) << "{\"n_ctx\": [";
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c :
       {Case{{"run", missing, "-p", "x", "--top-p", "5"}, "--top-p: must be between 0 and 1 (got 5)"},
        Case{{"run", missing, "-p", "x", "--min-p", "2"}, "--min-p: must be between 0 and 1 (got 2)"},
        Case{{"run", missing, "-p", "x", "--temperature", "nan"}, "--temperature: must be a finite"},
        Case{{"run", missing, "-p", "x", "--repeat-penalty", "0"}, "--repeat-penalty: must be greater"},
        Case{{"run", missing, "-p", "x", "-n", "-5"}, "--max-tokens"},
        Case{{"chat", missing, "--top-p", "-0.5"}, "--top-p: must be between 0 and 1"},
        Case{{"bench", missing, "-n", "-1"}, "--max-tokens: must be greater than 0 (got -1)"},
        Case{{"build", missing, "-o", missing + ".pack", "--batch-mib", "0"},
             "--batch-mib: must be greater than 0 (got 0)"},
        Case{{"run", missing, "-p", "x", "--backend", "foo"}, "--backend"},
        Case{{"run", missing}, "--prompt"},
        Case{{"run", missing, "-p", "x", "--no-such-option"}, "--no-such-option"},
        // Refused after parsing, still before anything is opened.
        Case{{"run", missing, "-p", "x", "--set", "foo=1"}, "unknown setting \"foo\""},
        Case{{"run", missing, "-p", "x", "--set", "n_ctx=abc"}, "n_ctx: invalid value \"abc\""},
        Case{{"run", missing, "-p", "x", "--set", "threads=100000"}, "must be in [0, 4096]"},
        Case{{"run", missing, "-p", "x", "--config", bad_config}, "settings JSON at byte"},
        Case{{"cache-sim", missing + ".trace", "--slots", "8", "--policies", "lru,foo"},
             "unknown policy \"foo\""},
        Case{{"cache-sim", missing + ".trace"}, "give --slots or --budget-mib"},
        Case{{"cache-sim", missing + ".trace", "--slots", "0"}, "--slots: must be greater than 0"},
        Case{{"cache-sim", missing + ".trace", "--budget-mib", "-1"}, "--budget-mib: must be greater than 0"},
        Case{{"cache-sim", missing + ".trace", "--budget-mib", "nan"}, "must be a finite number"},
        Case{{"cache-sim", missing + ".trace", "--slots", "8", "--policies", ""},
             "--policies: give at least one"},
        Case{{"cache-sim", missing + ".trace", "--slots", "8", "--ram-budget-mib", "-1"},
             "--ram-budget-mib: must be greater than 0"},
        Case{{"cache-sim", missing + ".trace", "--slots", "8", "--ram-slots", "2", "--ram-budget-mib", "1"},
             "excludes"},
        Case{{"cache-sim", "--slots", "8"}, "give a trace file or --zipf S --shape NAME"},
        Case{{"cache-sim", "--zipf", "1", "--slots", "8"}, "--zipf requires --shape"},
        Case{{"cache-sim", "--zipf", "1", "--shape", "gpt-5", "--slots", "8"},
             "--shape: unknown shape \"gpt-5\""},
        Case{{"cache-sim", missing + ".trace", "--zipf", "1", "--shape", "kimi-k3", "--slots", "8"},
             "excludes"},
        Case{{"cache-sim", missing + ".trace", "--slots", "8", "--steps", "9"}, "--steps requires --zipf"},
        Case{{"cache-sim", "--zipf", "nan", "--shape", "kimi-k3", "--slots", "8"},
             "--zipf: must be a finite number"},
        Case{{"cache-sim", "--zipf", "1e308", "--shape", "kimi-k3", "--slots", "8"},
             "must be between 0 and 100"},
        Case{{"cache-sim", "--zipf", "1", "--shape", "kimi-k3", "--slots", "8", "--layers", "70000"},
             "--layers: must be between 1 and 65535 (got 70000)"},
        Case{{"cache-sim", "--zipf", "1", "--shape", "kimi-k3", "--slots", "8", "--steps", "0"},
             "--steps: must be between 1 and 10000000"},
        Case{{"cache-sim", "--zipf", "1", "--shape", "kimi-k3", "--slots", "8", "--layers", "65535",
              "--steps", "1000000"},
             "--layers x --steps: 65535 x 1000000 records; at most 20000000"},
        Case{{"cache-sim", "--zipf", "1", "--shape", "kimi-k3", "--slots", "8", "--seed", "-5"},
             "--seed: must be 0 or more"},
        Case{{"bench", missing, "--out", missing + ".out", "--formats", "pdf"}, "unknown format \"pdf\""},
        Case{{"bench", missing, "--out", missing + ".out", "--baseline", "ftp://x"},
             "--baseline: baseline URL ftp://x"},
        Case{{"run", missing, "-p", "x", "--system", "s"}, "--system needs --chat"},
        Case{{"run", missing, "-p", "x", "--stop", ""}, "--stop: an empty stop string"},
        Case{{"run", missing, "-p", "x", "--seed", "99999999999"}, "--seed"},
        Case{{"run", missing, "-p", "x", "--logits-out", fs::temp_directory_path().string()}, "a directory"},
        Case{{"run", missing, "-p", "x", "--logits-out", "/nonexistent-moepack-dir/l.bin"},
             "there is no directory /nonexistent-moepack-dir"},
        Case{{"nosuchcmd", missing}, "unknown command 'nosuchcmd'"}}) {
    const CliRun r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.args.back() << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("never-opened"), std::string::npos) << r.err;  // refused before opening
    EXPECT_EQ(r.err.find("1797693"), std::string::npos) << r.err;
  }
  // In range, the same options pass parsing and the missing model is what fails (exit 1).
  const CliRun r = run({"run", missing, "-p", "x", "--top-p", "1", "--min-p", "0", "-n", "-1"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("never-opened.gguf"), std::string::npos) << r.err;
}

// A routing trace that cannot be written fails the run, naming the path: before the sixtieth session a
// trace_path naming a directory ran to the end, exited 0 and left the records in PATH.tmp (the rename's
// error was dropped in a destructor).
TEST(CliRun, ATracePathThatIsADirectoryFailsTheRun) {
  const fs::path dir = temp_path("trace-dir");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const CliRun r = run({"run", kDemo.string(), "-p", "hello", "-n", "3", "--set", "trace_path=" + dir.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(dir.string() + ": exists and is not a regular file (a directory)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir.string() + ".tmp"));
  fs::remove_all(dir);
}

// cache-sim on a trace the CLI recorded: a budget far above the model holds every expert once
// (the demo model: 5 MoE layers x 32 experts = 160 slots, README), and a budget of 6 slots
// replays the prompt's union in chunks.
TEST(CliCacheSim, ReplaysARecordedTraceAtAnyBudget) {
  const fs::path trace = temp_path("cli.trace");
  fs::remove(trace);
  CliRun r = run({"run", kDemo.string(), "--chat", "--prompt", "What does \"salmon\" mean?", "--temperature",
                  "0", "-n", "8", "--set", "trace_path=" + trace.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run({"cache-sim", trace.string(), "--budget-mib", "1e30", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["slots"], 160);
  EXPECT_EQ(j["split_records"], 0);
  EXPECT_NE(r.err.find("the model has 160 experts, so 160 slots"), std::string::npos) << r.err;
  r = run({"cache-sim", trace.string(), "--slots", "6", "--policies", "lru", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["slots"], 6);
  EXPECT_GT(j["split_records"].get<int>(), 0);  // the prompt's union is wider than 6
  r = run({"cache-sim", trace.string(), "--slots", "3"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("3 slots cannot hold one token's top-4 experts"), std::string::npos) << r.err;
  // A host-RAM tier asked for more than the model has is capped at its 160 experts, and then
  // holds every expert the 6 slots do not: each expert is read from the pack once, as the cache
  // of all 160 slots reads it: the same bytes.
  r = run({"cache-sim", trace.string(), "--budget-mib", "1e30", "--policies", "lru", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json all = nlohmann::json::parse(r.out);
  r = run({"cache-sim", trace.string(), "--slots", "6", "--ram-slots", "100000", "--policies", "lru,hybrid",
           "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ram_slots"], 160);
  EXPECT_EQ(j["ram_budget_bytes"], 160 * 131072);
  for (const auto& p : j["policies"]) {
    EXPECT_EQ(p["read_bytes"], all["policies"][0]["read_bytes"]) << p["policy"];
    EXPECT_EQ(p["ram_demotions"], p["cache_evictions"]) << p["policy"];  // the tier never has to drop one
    EXPECT_GT(p["ram_hits"].get<int>(), 0);
    EXPECT_EQ(p["promoted_bytes"], p["ram_hits"].get<uint64_t>() * 131072);
  }
  EXPECT_NE(r.err.find("RAM tier 160 slots"), std::string::npos) << r.err;
}

// cache-sim --zipf: the Zipf router of bench-twin over a shape's experts, no trace file. 20 steps
// of 2 deepseek-v4-flash layers (256 experts, top-6): 40 records, 240 accesses; 512 slots hold
// every expert, so nothing is evicted, and the RAM tier of 8 slots is never used.
TEST(CliCacheSim, ZipfRouterOverAShape) {
  CliRun r = run({"cache-sim", "--zipf", "1.0", "--shape", "deepseek-v4-flash", "--layers", "2", "--steps",
                  "20", "--slots", "512", "--ram-slots", "8", "--policies", "lru", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["records"], 40);
  EXPECT_EQ(j["n_layers"], 2);
  EXPECT_EQ(j["n_experts"], 256);
  EXPECT_EQ(j["top_k"], 6);
  EXPECT_EQ(j["ram_slots"], 8);
  const auto& p = j["policies"][0];
  EXPECT_EQ(p["ram_demotions"], 0);
  EXPECT_EQ(p["ram_hits"], 0);
  EXPECT_EQ(p["cache_hits"].get<int>() + p["cache_misses"].get<int>(), 240);
  EXPECT_EQ(p["cache_evictions"], 0);
  EXPECT_EQ(p["read_bytes"].get<uint64_t>(),
            p["cache_misses"].get<uint64_t>() * j["expert_bytes"].get<uint64_t>());
  // Zipf(1) over 256 experts: a few experts take most picks, so 20 steps reuse many of them.
  EXPECT_GT(p["cache_hits"].get<int>(), 0);
  EXPECT_NE(j["trace"].get<std::string>().find("deepseek-v4-flash zipf"), std::string::npos);
}

// A pack whose dense.gguf has one byte flipped in its tensor data (its size and header intact)
// loads without verify_pack_sha256 and is refused with it, naming the file: the dense weights
// are hashed at load as each expert is on its first read.
TEST(CliRun, VerifyPackSha256ChecksTheDenseWeightsAtLoad) {
  const fs::path pack = temp_path("dense-pack");
  fs::remove_all(pack);
  CliRun r = run({"build", kDemo.string(), "-o", pack.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path dense = pack / "dense.gguf";
  {
    std::fstream f(dense, std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(fs::file_size(dense) - 1000);
    char b = 0;
    f.seekg(at);
    f.read(&b, 1);
    b = static_cast<char>(b ^ 0x10);
    f.seekp(at);
    f.write(&b, 1);
  }
  r = run({"run", pack.string(), "-p", "x", "-n", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = run({"run", pack.string(), "-p", "x", "-n", "1", "--set", "verify_pack_sha256=true"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dense.string() + " fails its SHA-256 check"), std::string::npos) << r.err;
  fs::remove_all(pack);
}

TEST(CliRun, ErrorsExitNonZeroWithAMessage) {
  const fs::path missing = temp_path("no-such-model.gguf");
  CliRun r = run({"run", missing.string(), "--prompt", "x"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no-such-model.gguf"), std::string::npos) << r.err;

  r = run({"run", kDemo.string(), "--prompt", "x", "--set", "cache_vram_mb=1"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("cache_vram_mb"), std::string::npos) << r.err;

  r = run({"run", kDemo.string(), "--prompt", "x", "--set", "read_splits=0"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("read_splits"), std::string::npos) << r.err;

  const fs::path cfg = temp_path("settings.json");
  std::ofstream(cfg) << R"({"stage_slots": "many"})";
  r = run({"run", kDemo.string(), "--prompt", "x", "--config", cfg.string()});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(cfg.filename().string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stage_slots"), std::string::npos) << r.err;
  fs::remove(cfg);

  // Builds without the CUDA backend say so (a CUDA build may succeed here).
  r = run({"run", kDemo.string(), "--prompt", "x", "-n", "1", "--backend", "cuda"});
  if (r.status != 0) {
    EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
  }

  // A stats file that cannot be written fails at load, naming it (it was ignored without a
  // flush interval); one that can is written at the reply's end with the reply's tokens.
  r = run({"run", kDemo.string(), "--prompt", "x", "-n", "2", "--set", "stats_path=/nonexistent-moepack-dir/s.json"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent-moepack-dir"), std::string::npos) << r.err;
  const fs::path stats = temp_path("stats.json");
  r = run({"run", kDemo.string(), "--prompt", "x", "-n", "3", "--ignore-eos", "--set", "stats_path=" + stats.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(slurp(stats))["counters"]["tokens"], 3);
  fs::remove(stats);

  r = run({"chat", missing.string()});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no-such-model.gguf"), std::string::npos) << r.err;

  // A stats path or a --config that is a directory: refused naming it, no stray temporary file
  // beside the directory (a QA trial found "/tmp.tmp" left by stats_path=/tmp).
  const fs::path dir = temp_path("a-directory");
  fs::create_directories(dir);
  r = run({"run", kDemo.string(), "--prompt", "x", "-n", "1", "--set", "stats_path=" + dir.string()});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(dir.string() + ": is a directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.string() + ".tmp"));
  r = run({"run", kDemo.string(), "--prompt", "x", "--config", dir.string()});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find(dir.string() + ": is a directory"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// llama.cpp's habit of options before the model: --stop and --set take one value an occurrence,
// so the model stays the positional argument.
TEST(CliRun, OptionsBeforeTheModelLeaveItTheModel) {
  CliRun r = run({"run", "--stop", "zzz-never", "--set", "n_ctx=512", kDemo.string(), "-p", "The", "-n", "2",
                  "--ignore-eos", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["tokens"].size(), 2u) << r.out;
  // Repeated occurrences all count: the second stop string ends the run at once.
  r = run({"run", "--stop", "zzz-never", "--stop", "e", kDemo.string(), "-p", "The", "-n", "40",
           "--temperature", "0", "--ignore-eos", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["stop_reason"], "stop") << r.out;
  // The help names one value an occurrence (CLI11 writes `TEXT ...` for options that take many).
  for (const char* cmd : {"run", "chat"}) {
    r = run({cmd, "--help"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("--stop TEXT "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("--set TEXT "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("TEXT ..."), std::string::npos) << r.out;
  }
}

}  // namespace

// --ram-admission (default frequency) and --ram-window reach the simulation.
TEST(CliCacheSim, RamAdmissionAndWindow) {
  const std::vector<std::string> base = {
      "cache-sim", "--zipf", "1.0",     "--shape", "deepseek-v4-flash", "--layers", "2",
      "--steps",   "200",    "--slots", "24",      "--ram-slots",       "24",       "--policies",
      "lru",       "--json"};
  const auto sim = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    CliRun r = run(a);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const nlohmann::json def = sim({}), all = sim({"--ram-admission", "all"}), w1 = sim({"--ram-window", "1"});
  EXPECT_EQ(def["ram_admission"], "frequency");
  EXPECT_EQ(all["ram_admission"], "all");
  EXPECT_GT(def["policies"][0]["ram_not_admitted"].get<int>(), 0);
  EXPECT_EQ(all["policies"][0]["ram_not_admitted"], 0);
  EXPECT_EQ(all["policies"][0]["ram_demotions"], all["policies"][0]["cache_evictions"]);
  // A window of 1 halves every count to 0 at once: the full tier admits nothing.
  EXPECT_LT(w1["policies"][0]["ram_demotions"].get<int>(), def["policies"][0]["ram_demotions"].get<int>());
  // Without a tier the two options have nothing to act on: an error naming the option.
  for (const std::string opt : {"--ram-admission", "--ram-window"}) {
    std::vector<std::string> a = {"cache-sim",
                                  "--zipf",
                                  "1.0",
                                  "--shape",
                                  "deepseek-v4-flash",
                                  "--layers",
                                  "2",
                                  "--steps",
                                  "20",
                                  "--slots",
                                  "24",
                                  opt,
                                  opt == "--ram-window" ? "5" : "all"};
    const CliRun r = run(a);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find(opt + ": no RAM tier"), std::string::npos) << r.err;
  }
}

namespace {

// $MOEPACK_CLI running in the background: stdin and stdout are pipes, stderr a file. Every wait
// has a generous limit (a loaded 2-core machine); past it the child is killed.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) : err_path_(temp_path("child-err")) {
    const char* cli = std::getenv("MOEPACK_CLI");
    if (!cli) {
      ADD_FAILURE() << "MOEPACK_CLI not set";
      return;
    }
    int to_child[2], from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2: " << std::strerror(errno);
      return;
    }
    std::vector<std::string> argv_s = {cli};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int err_fd = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(to_child[0], STDIN_FILENO);
      ::dup2(from_child[1], STDOUT_FILENO);
      ::dup2(err_fd, STDERR_FILENO);
      ::execv(cli, argv.data());
      _exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (in_ >= 0) ::close(in_);
    if (out_ >= 0) ::close(out_);
    fs::remove(err_path_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  void write(const std::string& text) {
    ASSERT_EQ(::write(in_, text.data(), text.size()), ssize_t(text.size()));
  }
  void interrupt() { ::kill(pid_, SIGINT); }
  // Reads stdout until `done()` holds (true), or the limit or the end of stdout comes first.
  template <class Pred>
  bool read_until(Pred done, std::chrono::seconds limit = std::chrono::seconds(300)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end || !read_some(200)) return done();
    }
    return true;
  }
  bool has_output() {
    return read_until([&] { return !out.empty(); });
  }
  // The exit status once stdout is closed and the process ended; -1 when a signal ended it or
  // past the limit (then it is killed).
  int wait(std::chrono::seconds limit = std::chrono::seconds(300)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (read_some(200) && std::chrono::steady_clock::now() < end) {
    }
    int st = 0;
    while (::waitpid(pid_, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        pid_ = -1;
        ADD_FAILURE() << "the child did not end in time; stderr: " << slurp(err_path_);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    pid_ = -1;
    err = slurp(err_path_);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::string out, err;

 private:
  // Waits up to `ms` for stdout; false at its end.
  bool read_some(int ms) {
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return true;  // nothing yet
    char buf[4096];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return false;
    out.append(buf, static_cast<size_t>(n));
    return true;
  }
  fs::path err_path_;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
};

// The routing trace is whole (no record cut): cache-sim replays it.
void expect_trace_replays(const fs::path& trace) {
  const CliRun sim = run({"cache-sim", trace.string(), "--slots", "64", "--json"});
  ASSERT_EQ(sim.status, 0) << sim.err;
  EXPECT_TRUE(json::accept(sim.out)) << sim.out;
}

// Ctrl-C during `moepack run` (docs/cli.md): the generation stops at the next token and the run
// ends as usual with stop reason "cancelled": the summary on stderr, the routing trace complete
// (cache-sim replays it), the stats file written at the end of the reply, exit status 130.
TEST(CliRun, CtrlCCancelsTheGenerationAndEndsCleanly) {
  const fs::path trace = temp_path("sigint.trace"), stats = temp_path("sigint-stats.json");
  fs::remove(trace);
  fs::remove(stats);
  Child c({"run", kDemo.string(), "--prompt", "The meaning of", "-n", "-1", "--ignore-eos", "--temperature",
           "0", "--set", "trace_path=" + trace.string(), "--set", "stats_path=" + stats.string()});
  ASSERT_TRUE(c.has_output()) << "no completion text came";
  c.interrupt();
  EXPECT_EQ(c.wait(), 130) << c.err;
  EXPECT_NE(c.err.find("stop: cancelled"), std::string::npos) << c.err;
  expect_trace_replays(trace);
  const json s = json::parse(slurp(stats));
  EXPECT_GT(s["counters"]["tokens"].get<uint64_t>(), 0u);  // the end-of-reply write (flush interval 0)
  fs::remove(trace);
  fs::remove(stats);
}

// The same with --json: the object is printed, stop_reason "cancelled". The generation has
// started once the stats file (rewritten every token here) counts a token.
TEST(CliRun, CtrlCWithJsonPrintsTheCancelledResult) {
  const fs::path trace = temp_path("sigint-json.trace"), stats = temp_path("sigint-json-stats.json");
  fs::remove(trace);
  fs::remove(stats);
  Child c({"run", kDemo.string(), "--prompt", "The meaning of", "-n", "-1", "--ignore-eos", "--json", "--set",
           "trace_path=" + trace.string(), "--set", "stats_path=" + stats.string(), "--set",
           "stats_flush_interval=1"});
  const auto token_counted = [&] {
    try {
      return json::parse(slurp(stats))["counters"]["tokens"].get<uint64_t>() > 0;
    } catch (const std::exception&) {
      return false;  // not written yet
    }
  };
  ASSERT_TRUE(c.read_until(token_counted)) << "no token was generated";
  c.interrupt();
  ASSERT_EQ(c.wait(), 130) << c.err;
  const json j = json::parse(c.out);
  EXPECT_EQ(j["stop_reason"], "cancelled");
  EXPECT_GT(j["n_tokens"].get<int>(), 0);
  EXPECT_EQ(j["tokens"].size(), j["n_tokens"].get<size_t>());
  expect_trace_replays(trace);
  fs::remove(trace);
  fs::remove(stats);
}

// `moepack chat`: the first Ctrl-C stops the answer (unless it ended first: no timing is
// assumed), the second leaves through the normal end: exit status 130, the trace complete.
TEST(CliChat, SecondCtrlCLeavesWithTheTraceComplete) {
  const fs::path trace = temp_path("chat-sigint.trace");
  fs::remove(trace);
  Child c(
      {"chat", kDemo.string(), "-n", "-1", "--temperature", "0", "--set", "trace_path=" + trace.string()});
  c.write("Tell me about salmon.\n");  // stdin stays open: the chat waits for more
  ASSERT_TRUE(c.has_output()) << "no answer came";
  c.interrupt();
  // The stopped answer ends with a newline; then the chat waits for the next line.
  ASSERT_TRUE(c.read_until([&] { return c.out.back() == '\n'; })) << c.out;
  c.interrupt();
  EXPECT_EQ(c.wait(), 130) << c.err;
  expect_trace_replays(trace);
  fs::remove(trace);
}

}  // namespace
