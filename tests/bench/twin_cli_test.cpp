// `moepack twin` and `moepack bench-twin` end to end through the real binary ($MOEPACK_CLI):
// a tiny twin of each shape writes (progress JSON), passes `verify --full`, has the per-expert
// block sizes, role offsets and types worked out by hand from the issue's figures, and is
// refused as a model with a message naming it; bench-twin's counts obey their definitions
// (hits + misses = selections; a budget holding every expert: no miss after warm-up, 0 SSD
// bytes; a budget of top-k slots: every selection misses); --serial, the overlapped default
// and --no-lookahead give identical counts on a mapped trace; a hand-made trace maps with the
// decode-step count worked out by hand.
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

#include "core/routing_trace.h"

namespace moepack {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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

fs::path g_dir;

CliRun run(const std::vector<std::string>& args) {
  const char* cli = std::getenv("MOEPACK_CLI");
  if (!cli) {
    ADD_FAILURE() << "MOEPACK_CLI not set";
    return {};
  }
  std::string cmd = quote(cli);
  for (const std::string& a : args) cmd += " " + quote(a);
  cmd += " > " + quote((g_dir / "stdout").string()) + " 2> " + quote((g_dir / "stderr").string());
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(g_dir / "stdout"), slurp(g_dir / "stderr")};
}

class TwinCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_dir = fs::temp_directory_path() / ("moepack-twin-cli-" + std::to_string(::getpid()));
    fs::remove_all(g_dir);
    fs::create_directories(g_dir);
  }
  static void TearDownTestSuite() { fs::remove_all(g_dir); }
  // The v4-flash twin the bench tests share: 2 layers x 8 experts (top-6).
  static fs::path v4() {
    const fs::path p = g_dir / "v4";
    if (!fs::exists(p / "manifest.json")) {
      const CliRun r = run({"twin", "--shape", "deepseek-v4-flash", "--layers", "2", "--experts", "8", "--seed", "3",
                            "-o", p.string(), "--safety-margin-gib", "0"});
      EXPECT_EQ(r.status, 0) << r.err;
    }
    return p;
  }
  static json bench(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"bench-twin", v4().string(), "--json", "--threads", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = run(args);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("synthetic expert-path benchmark, not a model"), std::string::npos) << r.err;
    try {
      return json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << "\n" << r.out << r.err;
      return json::object();
    }
  }
};

struct Want {
  const char* shape;
  uint32_t layers, experts, first_block;
  const char *gate, *up, *down;
  uint64_t gate_bytes, down_bytes, block_bytes;  // = stride (every block is a multiple of 4096)
};

TEST_F(TwinCli, EachShapeWritesVerifiesAndHasTheHandComputedLayout) {
  // Bytes from ggml's block sizes (core/quants.h):
  //   v4-flash MXFP4: gate/up 2048 rows x 4096/32*17 = 2176 B = 4,456,448; down 4096 x 2048/32*17
  //     = 1088 B = 4,456,448; block 13,369,344 = 3264 x 4096.
  //   kimi-k3: gate/up Q2_K 1536 x 7168/256*84 = 2352 B = 3,612,672; down Q3_K 7168 x 1536/256*110
  //     = 660 B = 4,730,880; block 11,956,224 = 2919 x 4096.
  //   deepseek-v3 Q4_K: gate/up 2048 x 7168/256*144 = 4032 B = 8,257,536; down 7168 x 2048/256*144
  //     = 1152 B = 8,257,536; block 24,772,608 = 6048 x 4096.
  // Roles: gate @0, up @gate_bytes, down @2*gate_bytes (all multiples of 256).
  const Want wants[] = {
      {"deepseek-v4-flash", 1, 6, 0, "mxfp4", "mxfp4", "mxfp4", 4456448, 4456448, 13369344},
      {"kimi-k3", 1, 16, 1, "q2_K", "q2_K", "q3_K", 3612672, 4730880, 11956224},
      {"deepseek-v3", 1, 8, 3, "q4_K", "q4_K", "q4_K", 8257536, 8257536, 24772608},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.shape);
    const fs::path p = g_dir / w.shape;
    CliRun r = run({"twin", "--shape", w.shape, "--layers", std::to_string(w.layers), "--experts",
                    std::to_string(w.experts), "-o", p.string(), "--progress", "json", "--safety-margin-gib", "0"});
    ASSERT_EQ(r.status, 0) << r.err;
    std::vector<std::string> phases;
    json last;
    std::stringstream ss(r.out);
    for (std::string line; std::getline(ss, line);) {
      last = json::parse(line);
      const std::string phase = last["phase"].get<std::string>();
      if (phases.empty() || phases.back() != phase) phases.push_back(phase);
    }
    EXPECT_EQ(phases, (std::vector<std::string>{"preflight", "dense", "experts", "finalize", "done", "result"}));
    EXPECT_EQ(last["experts"], w.layers * w.experts);
    EXPECT_EQ(last["experts_bytes"], 4096 + uint64_t{w.layers} * w.experts * w.block_bytes);

    r = run({"verify", "--full", "--json", p.string()});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_TRUE(json::parse(r.out)["ok"].get<bool>());

    const json m = json::parse(slurp(p / "manifest.json"));
    EXPECT_EQ(m["layout"]["max_stride"], w.block_bytes);
    EXPECT_EQ(m["layout"]["data_start"], 4096);
    EXPECT_EQ(m["model"]["expert_used_count"], std::string(w.shape) == "kimi-k3" ? 16 : (std::string(w.shape) == "deepseek-v3" ? 8 : 6));
    const json& L = m["layout"]["layers"][0];
    EXPECT_EQ(L["block"], w.first_block);
    EXPECT_EQ(L["n_experts"], w.experts);
    EXPECT_EQ(L["block_bytes"], w.block_bytes);
    EXPECT_EQ(L["stride"], w.block_bytes);
    EXPECT_EQ(L["base"], 4096);
    const std::string blk = "blk." + std::to_string(w.first_block) + ".";
    const json& R = L["roles"];
    ASSERT_EQ(R.size(), 3u);
    EXPECT_EQ(R[0]["role"], "gate");
    EXPECT_EQ(R[0]["tensor"], blk + "ffn_gate_exps.weight");
    EXPECT_EQ(R[0]["type"], w.gate);
    EXPECT_EQ(R[0]["offset"], 0);
    EXPECT_EQ(R[0]["bytes"], w.gate_bytes);
    EXPECT_EQ(R[1]["role"], "up");
    EXPECT_EQ(R[1]["type"], w.up);
    EXPECT_EQ(R[1]["offset"], w.gate_bytes);
    EXPECT_EQ(R[2]["role"], "down");
    EXPECT_EQ(R[2]["tensor"], blk + "ffn_down_exps.weight");
    EXPECT_EQ(R[2]["type"], w.down);
    EXPECT_EQ(R[2]["offset"], 2 * w.gate_bytes);
    EXPECT_EQ(R[2]["bytes"], w.down_bytes);
    EXPECT_EQ(fs::file_size(p / "experts.bin"), 4096 + uint64_t{w.layers} * w.experts * w.block_bytes);

    // Not a model: loading it names the twin architecture.
    r = run({"run", p.string(), "-p", "hello", "-n", "1"});
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("a shape-faithful twin (architecture 'moepack-twin'), not a model"), std::string::npos) << r.err;
    // inspect (GGUF files only) describes its dense.gguf: the twin, no tensors.
    r = run({"inspect", (p / "dense.gguf").string(), "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json ins = json::parse(r.out);
    EXPECT_EQ(ins["architecture"], "moepack-twin");
    EXPECT_EQ(ins["tensors"].size(), 0u);
    // bench-io reads it like any pack.
    r = run({"bench-io", p.string(), "--reads", "4", "--batch", "2", "--raw-max-mib", "16", "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(json::parse(r.out).contains("vram_delivery"));
    // --vram: delivered into VRAM slots on a CUDA machine; elsewhere a clear refusal (a build
    // without CUDA, or no device).
    r = run({"bench-io", p.string(), "--reads", "4", "--batch", "2", "--raw-max-mib", "16", "--vram", "--json"});
    if (r.status == 0) {
      const json v = json::parse(r.out);
      EXPECT_EQ(v.at("vram_delivery").at("reads"), 4);
      EXPECT_GT(v.at("vram_vs_raw_ratio").get<double>(), 0.0);
    } else {
      EXPECT_NE(r.err.find("--vram"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
    }
  }
}

TEST_F(TwinCli, BudgetHoldingEveryExpertMissesOnlyOnce) {
  // 16 experts of 13,369,344 B = 204 MiB: 256 MiB holds them all (19 slots).
  const json j = bench({"--zipf", "0.8", "--budget-mib", "256", "--tokens", "10", "--warmup", "5"});
  EXPECT_EQ(j["kind"], "synthetic expert-path benchmark, not a model");
  const json& a = j["all"];
  EXPECT_EQ(a["steps"], 10);
  EXPECT_EQ(a["selections"], 10 * 2 * 6);
  EXPECT_EQ(a["hits"].get<uint64_t>() + a["misses"].get<uint64_t>(), a["selections"].get<uint64_t>());
  EXPECT_GE(a["misses"].get<uint64_t>(), 6u * 2);  // the first step misses everything
  EXPECT_LE(a["misses"].get<uint64_t>(), 16u);     // each expert at most once
  EXPECT_EQ(a["evictions"], 0);
  EXPECT_EQ(a["ssd_bytes"], a["misses"].get<uint64_t>() * 13369344);
  const json& w = j["after_warmup"];
  EXPECT_EQ(w["steps"], 5);
  EXPECT_EQ(w["misses"], 0) << "Zipf(0.8) over 8 experts, top-6: all 16 keys were seen in 5 steps";
  EXPECT_EQ(w["hit_rate"], 1.0);
  EXPECT_EQ(w["ssd_bytes"], 0);
  EXPECT_EQ(w["ssd_bytes_per_token"], 0.0);
  EXPECT_GT(w["tokens_per_s"].get<double>(), 0);
  EXPECT_TRUE(std::isfinite(j["checksum"].get<double>()));
  EXPECT_NE(j["checksum"].get<double>(), 0.0);
}

TEST_F(TwinCli, BudgetOfTopKMissesEveryStep) {
  // 6 slots (80,216,064 B = 76.5 MiB): layer 1 evicts all of layer 0 and back: no hit ever.
  for (const char* sched : {"--serial", "--no-lookahead", "--threads"}) {
    SCOPED_TRACE(sched);
    std::vector<std::string> args = {"--zipf", "1.0", "--budget-mib", "76.5", "--tokens", "4"};
    if (std::string(sched) != "--threads") args.push_back(sched);
    const json j = bench(args);
    EXPECT_EQ(j["slots"], 6);
    const json& a = j["all"];
    EXPECT_EQ(a["selections"], 4 * 2 * 6);
    EXPECT_EQ(a["hits"], 0);
    EXPECT_EQ(a["misses"], 4 * 2 * 6);
    EXPECT_EQ(a["evictions"], 4 * 2 * 6 - 6);
    EXPECT_EQ(a["ssd_bytes"], uint64_t{4 * 2 * 6} * 13369344);
    EXPECT_EQ(a["ssd_bytes_per_token"], 2 * 6 * 13369344.0);
  }
}

TEST_F(TwinCli, TraceMappedAndSchedulesAgree) {
  // A hand-made trace: 3 layers x 4 experts, top-3 (g = 2 replicas onto 8 experts, top-6).
  // Steps 0 (a 4-expert prefill record) and 5 (layer 2 missing) are not decode steps: 6 of 8 used.
  const fs::path tp = g_dir / "hand.trace";
  {
    RoutingTraceWriter w(tp.string(), {3, 4, 3, 4096, "hand-made"});
    w.append(0, 0, {0, 1, 2, 3});
    w.append(0, 1, {0, 1, 2});
    w.append(0, 2, {1, 2, 3});
    const std::vector<std::vector<uint32_t>> sets = {{0, 1, 2}, {1, 2, 3}, {0, 2, 3}, {0, 1, 3}};
    for (uint32_t s = 1; s <= 7; ++s) {
      for (uint32_t l = 0; l < 3; ++l) {
        if (s == 5 && l == 2) continue;
        w.append(s, l, sets[(s + l) % 4]);
      }
    }
    w.close();
  }
  json counts[3];
  double sums[3] = {0, 0, 0};
  const char* scheds[3] = {"--serial", "--no-lookahead", "--threads"};
  for (int k = 0; k < 3; ++k) {
    std::vector<std::string> args = {"--trace", tp.string(), "--budget-mib", "110", "--policy", "lru"};
    if (k < 2) args.push_back(scheds[k]);
    const json j = bench(args);
    EXPECT_EQ(j["routing"]["decode_steps"], 6);
    EXPECT_EQ(j["routing"]["skipped_steps"], 2);
    EXPECT_EQ(j["routing"]["replicas"], 2);
    EXPECT_EQ(j["slots"], 8);  // floor(110 MiB / 13,369,344 B)
    const json& a = j["all"];
    EXPECT_EQ(a["steps"], 6);
    EXPECT_EQ(a["selections"], 6 * 2 * 6);
    EXPECT_EQ(a["hits"].get<uint64_t>() + a["misses"].get<uint64_t>(), 72u);
    EXPECT_GT(a["evictions"].get<uint64_t>(), 0u);  // 16 keys, 8 slots
    counts[k] = {a["hits"], a["misses"], a["evictions"], a["ssd_bytes"]};
    sums[k] = j["checksum"].get<double>();
  }
  EXPECT_EQ(counts[0], counts[1]);
  EXPECT_EQ(counts[0], counts[2]);
  // The same FFNs in another order (experts added as their reads arrive): float rounding only.
  // Scale: 6 steps x 4096 elements of an RMS-normalised x, weights |(i mod 7) - 3| <= 3.
  EXPECT_NE(sums[0], 0.0);
  EXPECT_NEAR(sums[1], sums[0], 1e-4 * 6 * 4096);
  EXPECT_NEAR(sums[2], sums[0], 1e-4 * 6 * 4096);
}

TEST_F(TwinCli, BadInputs) {
  CliRun r = run({"bench-twin", v4().string(), "--budget-mib", "256"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--trace FILE or --zipf S"), std::string::npos) << r.err;
  r = run({"bench-twin", v4().string(), "--zipf", "1", "--budget-mib", "50"});  // < 6 slots
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("6"), std::string::npos) << r.err;
  // The host-RAM tier sits behind VRAM: refused on the CPU path, before anything is read.
  r = run({"bench-twin", v4().string(), "--zipf", "1", "--budget-mib", "256", "--ram-budget-mib", "64"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--ram-budget-mib: the host-RAM tier sits behind the VRAM cache (--backend cuda)"),
            std::string::npos)
      << r.err;
  r = run({"twin", "--shape", "kimi-k3", "--experts", "8", "--layers", "1", "-o", (g_dir / "bad").string()});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--experts 8 is outside 16..896"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(g_dir / "bad" / "manifest.json"));
  // An interrupted `moepack build` in -o DIR: refused naming build-state.json, nothing touched.
  const fs::path build = g_dir / "interrupted-build";
  fs::create_directories(build);
  const std::string state = R"({"format":"moepack-build-state"})", experts(8192, 'x');
  {
    std::ofstream(build / "build-state.json", std::ios::binary) << state;
    std::ofstream(build / "experts.bin", std::ios::binary) << experts;
  }
  r = run({"twin", "--shape", "deepseek-v4-flash", "--experts", "6", "--layers", "1", "-o", build.string()});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find((build / "build-state.json").string()), std::string::npos) << r.err;
  EXPECT_EQ(slurp(build / "build-state.json"), state);
  EXPECT_EQ(slurp(build / "experts.bin"), experts);
  EXPECT_FALSE(fs::exists(build / "dense.gguf"));
}

}  // namespace
}  // namespace moepack
