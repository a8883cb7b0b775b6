// `moepack bench` end to end through the real binary ($MOEPACK_CLI) on the demo model: the GGUF,
// and an Expert Pack of it with a 40-of-160-expert cache (evictions happen), -n 8, three prompts
// (tests/bench/prompts-3.json), with a loopback baseline (tests/bench/openai_stub_server.py).
// Checks the report's invariants against their definitions (docs/benchmarks.md), the CSV row
// count, the HTML sections, and that a dead baseline is an error in the report, not a failure.
// Every report.json is validated against resources/benchmarks/report.schema.json by
// tests/bench/validate_report.py (python3 + python3-jsonschema, installed by packaging/setup.sh;
// missing is a failure), and altered copies prove the validation rejects what it should.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/model_source.h"
#include "packbuilder/pack_builder.h"
#include "tests/bench/stub_server.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kDemo = fs::path(MOEPACK_SOURCE_DIR) / "resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";
const fs::path kPrompts = fs::path(MOEPACK_SOURCE_DIR) / "tests/bench/prompts-3.json";
const fs::path kSchema = fs::path(MOEPACK_SOURCE_DIR) / "resources/benchmarks/report.schema.json";
const fs::path kValidator = fs::path(MOEPACK_SOURCE_DIR) / "tests/bench/validate_report.py";
constexpr int kN = 8;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliRun {
  int status = -1;
  std::string out, err;
};

// Runs PROGRAM ARGS... through the shell, stdout and stderr to DIR/NAME.out and DIR/NAME.err.
CliRun run_program(const std::string& program, const std::vector<std::string>& args, const fs::path& dir,
                   const std::string& name) {
  std::string cmd = quote(program);
  for (const std::string& a : args) cmd += " " + quote(a);
  const fs::path out = dir / (name + ".out"), err = dir / (name + ".err");
  cmd += " > " + quote(out.string()) + " 2> " + quote(err.string());
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
}

CliRun run(const std::vector<std::string>& args, const fs::path& dir) {
  const char* cli = std::getenv("MOEPACK_CLI");
  if (!cli) {
    ADD_FAILURE() << "MOEPACK_CLI not set";
    return {};
  }
  return run_program(cli, args, dir, "moepack");
}

// validate_report.py SCHEMA REPORT: 0 valid, 1 invalid (errors on stdout, one per line with
// its JSON path), 2 python3-jsonschema missing.
CliRun validate(const fs::path& report, const fs::path& dir) {
  return run_program("python3", {kValidator.string(), kSchema.string(), report.string()}, dir, "validate");
}

void expect_valid(const fs::path& report, const fs::path& dir) {
  const CliRun v = validate(report, dir);
  ASSERT_NE(v.status, 2) << "python3-jsonschema is missing (packaging/setup.sh installs it): " << v.err;
  EXPECT_EQ(v.status, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("valid against"), std::string::npos) << v.out;
}

// A copy of `rep` altered by the caller must be rejected with an error line
// "FILE: PATH: MESSAGE..." (PATH a JSON path; MESSAGE's start when given).
void expect_invalid(const json& rep, const fs::path& dir, const std::string& name, const std::string& path,
                    const std::string& message = "") {
  const fs::path file = dir / (name + ".json");
  std::ofstream(file) << rep.dump();
  const CliRun v = validate(file, dir);
  ASSERT_NE(v.status, 2) << "python3-jsonschema is missing (packaging/setup.sh installs it): " << v.err;
  EXPECT_EQ(v.status, 1) << name << ": " << v.out << v.err;
  EXPECT_NE(v.out.find(file.string() + ": " + path + ": " + message), std::string::npos) << name << ": " << v.out;
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = 0; (p = s.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

// The invariants every MoePack result satisfies, checked from the raw fields.
void check_ours(const json& r, bool pack) {
  ASSERT_TRUE(r["ok"].get<bool>()) << r.dump();
  EXPECT_EQ(r["completion_tokens"], kN);  // EOS ignored: exactly n
  EXPECT_EQ(r["stop_reason"], "length");
  EXPECT_GT(r["prompt_tokens"].get<uint64_t>(), 5u);
  const double decode_s = r["decode_ms"].get<double>() / 1000;
  ASSERT_GT(decode_s, 0);
  EXPECT_NEAR(r["decode_tps"].get<double>(), (kN - 1) / decode_s, 1e-9 * (kN - 1) / decode_s);
  EXPECT_NEAR(r["prefill_tps"].get<double>(), r["prompt_tokens"].get<double>() / (r["prefill_ms"].get<double>() / 1000),
              1e-6);
  EXPECT_GE(r["ttft_ms"].get<double>(), r["prefill_ms"].get<double>());
  EXPECT_DOUBLE_EQ(r["read_bytes_per_token"].get<double>(), r["pack_read_bytes"].get<double>() / kN);
  if (pack) {
    const double hits = r["cache_hits"].get<double>(), misses = r["cache_misses"].get<double>();
    ASSERT_GT(hits + misses, 0);
    EXPECT_DOUBLE_EQ(r["hit_rate"].get<double>(), hits / (hits + misses));
    EXPECT_GT(r["pack_read_bytes"].get<uint64_t>(), 0u);
  } else {
    EXPECT_TRUE(r["hit_rate"].is_null());  // GGUF: experts resident, no cache
    EXPECT_EQ(r["pack_read_bytes"], 0);
  }
}

void check_common(const json& rep, const fs::path& model, bool pack) {
  EXPECT_EQ(rep["schema"], "moepack-bench-report");
  EXPECT_EQ(rep["schema_version"], 1);
  for (const char* k : {"created_utc", "moepack", "machine", "model", "engine", "run", "prompt_set", "systems",
                        "requests", "aggregates", "published_results", "notes"}) {
    EXPECT_TRUE(rep.contains(k)) << k;
  }
  EXPECT_EQ(rep["run"]["max_tokens"], kN);
  EXPECT_EQ(rep["run"]["ignore_eos"], true);
  EXPECT_EQ(rep["run"]["temperature"], 0);
  EXPECT_EQ(rep["model"]["format"], pack ? "expert-pack" : "gguf");
  EXPECT_EQ(rep["model"]["identity"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(rep["model"]["architecture"], "deepseek2");
  (void)model;
  EXPECT_TRUE(rep["machine"]["logical_cores"].is_number());
  EXPECT_TRUE(rep["engine"]["settings"].contains("cache_vram_mib"));
  ASSERT_EQ(rep["requests"].size(), 3u);
  for (const json& r : rep["requests"]) check_ours(r["results"]["moepack"], pack);
  ASSERT_EQ(rep["aggregates"].size(), 3u);  // alpaca, mmlu, all
  EXPECT_EQ(rep["aggregates"][0]["group"], "alpaca");
  EXPECT_EQ(rep["aggregates"][1]["group"], "mmlu");
  const json& all = rep["aggregates"][2]["results"]["moepack"];
  EXPECT_EQ(all["completion_tokens"], 3 * kN);
  double decode_ms = 0;
  for (const json& r : rep["requests"]) decode_ms += r["results"]["moepack"]["decode_ms"].get<double>();
  EXPECT_NEAR(all["decode_tps"].get<double>(), 3.0 * (kN - 1) / (decode_ms / 1000), 1e-6);
  EXPECT_DOUBLE_EQ(rep["aggregates"][0]["published"]["made-up_config"]["decode_tok_s"].get<double>(), 2.0);
}

TEST(CliBench, GgufWithLoopbackBaseline) {
  test::TempDir dir("moepack-bench-cli");
  test::StubServer stub({"--prefill-delay", "0.1", "--token-delay", "0.02"});
  ASSERT_NE(stub.port(), 0);
  const fs::path out = fs::path(dir.path()) / "report";
  const CliRun r = run({"bench", kDemo.string(), "--prompts", kPrompts.string(), "-n", std::to_string(kN), "--out",
                        out.string(), "--baseline", stub.url(), "--backend", "cpu", "--set", "threads=2"},
                       dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("[3/3] alpaca-c moepack"), std::string::npos) << r.err;  // progress on stderr
  EXPECT_NE(r.out.find("report.json"), std::string::npos);
  const json rep = json::parse(slurp(out / "report.json"));
  check_common(rep, kDemo, false);
  expect_valid(out / "report.json", dir.path());
  {  // The validation can fail: a string version, no requests, a string rate (ours and a baseline's).
    json bad = rep;
    bad["schema_version"] = "1";
    expect_invalid(bad, dir.path(), "version-string", "$.schema_version", "'1' is not of type 'integer'");
    bad = rep;
    bad.erase("requests");
    expect_invalid(bad, dir.path(), "no-requests", "$", "'requests' is a required property");
    bad = rep;
    bad["requests"][1]["results"]["moepack"]["decode_tps"] = "12.5";
    expect_invalid(bad, dir.path(), "decode-tps-string", "$.requests[1].results.moepack.decode_tps");
    bad = rep;
    bad["requests"][2]["results"]["baseline1"]["decode_tps"] = "12.5";
    expect_invalid(bad, dir.path(), "baseline-decode-tps-string", "$.requests[2].results.baseline1.decode_tps");
  }

  ASSERT_EQ(rep["systems"].size(), 2u);
  EXPECT_EQ(rep["systems"][1]["model"], "stub-model");  // from GET /v1/models
  for (const json& q : rep["requests"]) {
    const json& b = q["results"]["baseline1"];
    ASSERT_TRUE(b["ok"].get<bool>()) << b.dump();
    EXPECT_EQ(b["completion_tokens"], kN);
    // Ratios are ours / baseline, field by field.
    const json& ours = q["results"]["moepack"];
    EXPECT_DOUBLE_EQ(q["ratios"]["baseline1"]["decode_tps"].get<double>(),
                     ours["decode_tps"].get<double>() / b["decode_tps"].get<double>());
    EXPECT_DOUBLE_EQ(q["ratios"]["baseline1"]["prefill_tps"].get<double>(),
                     ours["prefill_tps"].get<double>() / b["prefill_tps"].get<double>());
    EXPECT_DOUBLE_EQ(q["ratios"]["baseline1"]["ttft_ms"].get<double>(),
                     ours["ttft_ms"].get<double>() / b["ttft_ms"].get<double>());
    // The stub: 0.02 s between tokens, so at most 50 tokens/s.
    EXPECT_LE(b["decode_tps"].get<double>(), (kN - 1) / ((kN - 1) * 0.02 - 0.005));
  }
  const json& agg = rep["aggregates"][2];
  EXPECT_DOUBLE_EQ(agg["ratios"]["baseline1"]["decode_tps"].get<double>(),
                   agg["results"]["moepack"]["decode_tps"].get<double>() /
                       agg["results"]["baseline1"]["decode_tps"].get<double>());

  const std::string csv = slurp(out / "report.csv");
  EXPECT_EQ(count(csv, "\r\n"), 1u + 3 * 2 + 3 * 2);  // header, 3 requests x 2 systems, 3 groups x 2
  EXPECT_EQ(count(csv, "\r\nrequest,"), 6u);
  EXPECT_EQ(count(csv, "\r\naggregate,"), 6u);
  const std::string html = slurp(out / "report.html");
  for (const char* s : {"<table>", "id=\"aggregates\"", "id=\"requests\"", "id=\"chart-decode-tps\"",
                        "id=\"chart-hit-rate\"", "alpaca-c", "published: made-up_config"}) {
    EXPECT_NE(html.find(s), std::string::npos) << s;
  }
}

TEST(CliBench, PackWithSmallCacheJsonOnlyAndDeadBaseline) {
  test::TempDir dir("moepack-bench-cli");
  BuildOptions bo;
  bo.source = kDemo.string();
  bo.out_dir = dir.file("pack");
  bo.safety_margin_bytes = 0;
  build_pack(bo);
  const uint64_t cache = 40 * ModelSource::open(bo.out_dir)->pack()->layout().max_stride;  // 40 of 160 experts
  int dead_port = 0;
  {
    test::StubServer s({});
    dead_port = s.port();
  }
  const fs::path out = fs::path(dir.path()) / "report";
  const CliRun r = run({"bench", bo.out_dir, "--prompts", kPrompts.string(), "-n", std::to_string(kN), "--out",
                        out.string(), "--formats", "json", "--baseline", "http://127.0.0.1:" + std::to_string(dead_port),
                        "--baseline-model", "m", "--backend", "cpu", "--set", "threads=2", "--set",
                        "cache_bytes=" + std::to_string(cache), "--set", "cache_vram_reserve_mib=0"},
                       dir.path());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(out / "report.csv"));
  EXPECT_FALSE(fs::exists(out / "report.html"));
  const json rep = json::parse(slurp(out / "report.json"));
  check_common(rep, bo.out_dir, true);
  expect_valid(out / "report.json", dir.path());
  EXPECT_EQ(rep["engine"]["cache_slots"], 40);
  uint64_t evictions = 0;
  for (const json& q : rep["requests"]) evictions += q["results"]["moepack"]["cache_evictions"].get<uint64_t>();
  EXPECT_GT(evictions, 0u);
  for (const json& q : rep["requests"]) {
    const json& b = q["results"]["baseline1"];
    EXPECT_FALSE(b["ok"].get<bool>());
    EXPECT_NE(b["error"].get<std::string>().find("request failed"), std::string::npos) << b.dump();
    EXPECT_TRUE(q["ratios"]["baseline1"]["decode_tps"].is_null());
  }
  EXPECT_EQ(rep["aggregates"][2]["results"]["baseline1"]["failed"], 3);
  EXPECT_NE(r.err.find("baseline1 FAILED"), std::string::npos) << r.err;
}

TEST(CliBench, BadArgumentsFail) {
  test::TempDir dir("moepack-bench-cli");
  EXPECT_NE(run({"bench", kDemo.string(), "--out", dir.file("o"), "--formats", "pdf"}, dir.path()).status, 0);
  const CliRun r = run({"bench", kDemo.string(), "--out", dir.file("o"), "--prompts", dir.file("missing.json")},
                       dir.path());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
  // An --out that cannot be written fails before any request runs (no progress line printed).
  test::write_file(dir.file("afile"), std::vector<uint8_t>{'x'});
  const CliRun unwritable = run({"bench", kDemo.string(), "--out", dir.file("afile") + "/o"}, dir.path());
  EXPECT_NE(unwritable.status, 0);
  EXPECT_NE(unwritable.err.find(dir.file("afile") + "/o"), std::string::npos) << unwritable.err;
  EXPECT_EQ(unwritable.err.find("[1/"), std::string::npos) << unwritable.err;
}

}  // namespace
}  // namespace moepack
