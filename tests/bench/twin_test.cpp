// Twins (bench/twin_pack.h, bench/twin_routing.h): the trace-mapping rule against ids worked out
// by hand, the Zipf router's invariants, and a written twin's bytes: every block equal to an
// independent regeneration, its SHA-256 as the manifest says, every quant block's scales in the
// documented range and every weight finite and bounded (bounds derived by hand from the
// formats in core/quants.h), dense.gguf metadata-only, and the refusals (space, existing pack, an interrupted
// `moepack build`).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "bench/twin_pack.h"
#include "bench/twin_routing.h"
#include "core/aligned_buffer.h"
#include "core/error.h"
#include "core/expert_pack.h"
#include "core/fp16.h"
#include "core/gguf.h"
#include "core/pack_verify.h"
#include "core/quants.h"
#include "core/sha256.h"
#include "core/gguf_model.h"
#include "packbuilder/pack_plan.h"

namespace moepack::bench {
namespace {

namespace fs = std::filesystem;

std::vector<uint32_t> map(const TraceMapping& m, uint32_t l, std::vector<uint16_t> ids) {
  return map_trace_record(m, l, ids);
}

TEST(TwinMapping, HandComputedIds) {
  // Demo trace (5 x 32, top-4) onto deepseek-v4-flash (256 experts, top-6): g = 2.
  const TraceMapping v4{5, 32, 4, 43, 256, 6};
  EXPECT_EQ(trace_map_replicas(v4), 2u);
  // l = 0: a = 3, b = 0. Sorted ids 2, 7, 12, 30 -> 3x; then replica 1 of 2 and 7: 3*34, 3*39.
  EXPECT_EQ(trace_map_multiplier(0, 256), 3u);
  EXPECT_EQ(trace_map_offset(0, 256), 0u);
  EXPECT_EQ(map(v4, 0, {7, 2, 30, 12}), (std::vector<uint32_t>{6, 21, 36, 90, 102, 117}));
  // l = 6 (trace layer 1): a = 15, b = 97 * 6 mod 256 = 70.
  // 0 -> 70; 5 -> 145; 16 -> 310 mod 256 = 54; 31 -> 535 mod 256 = 23; 32 -> 550 mod 256 = 38;
  // 37 -> 625 mod 256 = 113.
  EXPECT_EQ(trace_map_multiplier(6, 256), 15u);
  EXPECT_EQ(trace_map_offset(6, 256), 70u);
  EXPECT_EQ(map(v4, 6, {0, 31, 5, 16}), (std::vector<uint32_t>{70, 145, 54, 23, 38, 113}));
  // Kimi-K3 (896 = 2^7 * 7 experts, top-16): g = 4; l = 2: a = 9 (7 and 8 share factors), b = 194.
  const TraceMapping k3{5, 32, 4, 92, 896, 16};
  EXPECT_EQ(trace_map_multiplier(2, 896), 9u);
  EXPECT_EQ(trace_map_offset(2, 896), 194u);
  EXPECT_EQ(map(k3, 2, {1, 2, 3, 4}), (std::vector<uint32_t>{203, 212, 221, 230, 491, 500, 509, 518, 779, 788, 797,
                                                             806, 171, 180, 189, 198}));
  // A prefill record of 8 trace experts maps to ceil(8 * 6 / 4) = 12 twin experts.
  EXPECT_EQ(map(v4, 0, {0, 1, 2, 3, 4, 5, 6, 7}).size(), 12u);
  // Too few twin experts for the replicas, and an id outside the trace: errors.
  EXPECT_THROW(trace_map_replicas(TraceMapping{5, 32, 4, 2, 32, 6}), Error);
  EXPECT_THROW(map(v4, 0, {32, 1, 2, 3}), Error);
}

TEST(TwinMapping, ReuseDistancesOfWholeReplicasAreKept) {
  // v3 (top-8 of 256) from top-4 of 32: kt divides k, so every twin expert is used exactly at
  // the steps its trace expert is used.
  const TraceMapping m{1, 32, 4, 1, 256, 8};
  const std::vector<std::vector<uint16_t>> steps = {{1, 2, 3, 4}, {2, 9, 10, 11}, {1, 9, 20, 21}, {3, 4, 5, 6}};
  std::map<uint32_t, std::vector<size_t>> twin_uses, trace_uses;
  for (size_t t = 0; t < steps.size(); ++t) {
    for (uint16_t x : steps[t]) trace_uses[x].push_back(t);
    const auto ids = map(m, 0, steps[t]);
    ASSERT_EQ(ids.size(), 8u);
    EXPECT_EQ(std::set<uint32_t>(ids.begin(), ids.end()).size(), 8u);
    for (uint32_t id : ids) twin_uses[id].push_back(t);
  }
  EXPECT_EQ(twin_uses.size(), 2 * trace_uses.size());
  // Replica 0 and 1 of trace expert x: (3 x + 0) and 3 (32 + x) mod 256.
  for (const auto& [x, uses] : trace_uses) {
    EXPECT_EQ(twin_uses.at(3u * x), uses) << x;
    EXPECT_EQ(twin_uses.at((3u * (32 + x)) % 256), uses) << x;
  }
}

TEST(TwinMapping, TraceRouterKeepsDecodeSteps) {
  RoutingTrace t;
  t.header = {2, 8, 2, 4096, "hand-made"};
  t.records = {{0, 0, {0, 1, 2, 3}}, {0, 1, {1, 2, 3}},  // prefill: skipped
               {1, 0, {4, 5}},       {1, 1, {0, 7}},     // decode
               {2, 0, {1, 6}},                            // layer 1 missing: skipped
               {3, 0, {2, 3}},       {3, 1, {5, 6}}};    // decode
  TraceRouterInfo info;
  auto r = make_trace_router(t, 3, 16, 4, &info);  // g = 2, 16 <= 16
  EXPECT_EQ(info.decode_steps, 2u);
  EXPECT_EQ(info.skipped_steps, 2u);
  EXPECT_EQ(r->steps_available(), 2u);
  StepRouting s;
  ASSERT_TRUE(r->next(s));
  ASSERT_EQ(s.size(), 3u);
  // Layer 0, a = 3, b = 0: 4 -> 12, 5 -> 15, replicas 12 -> 36 mod 16 = 4, 13 -> 39 mod 16 = 7.
  EXPECT_EQ(s[0], (std::vector<uint32_t>{12, 15, 4, 7}));
  // Layer 2 replays trace layer 0 with a = 7, b = 194 mod 16 = 2: 4 -> 30 mod 16 = 14, 5 -> 37 mod 16 = 5,
  // 12 -> 86 mod 16 = 6, 13 -> 93 mod 16 = 13.
  EXPECT_EQ(s[2], (std::vector<uint32_t>{14, 5, 6, 13}));
  ASSERT_TRUE(r->next(s));
  EXPECT_FALSE(r->next(s));
}

TEST(TwinMapping, DemoTraceOntoTheFullShapes) {
  // tests/bench/twin_demo.trace (docs/expert-delivery.md): 520 steps of the demo model, 5 x 32,
  // top-4; 25 prompts' prefill steps are skipped, the other 495 replayed.
  const RoutingTrace t = read_routing_trace(std::string(MOEPACK_SOURCE_DIR) + "/tests/bench/twin_demo.trace");
  ASSERT_EQ(t.header.n_layers, 5u);
  for (const TwinShape& sh : twin_shapes()) {
    SCOPED_TRACE(std::string(sh.name));
    TraceRouterInfo info;
    auto r = make_trace_router(t, sh.moe_layers, sh.n_expert, sh.top_k, &info);
    EXPECT_EQ(info.decode_steps, 495u);
    EXPECT_EQ(info.skipped_steps, 25u);
    EXPECT_EQ(info.replicas, (sh.top_k + 3) / 4);
    std::vector<std::set<uint32_t>> used(sh.moe_layers);
    StepRouting s;
    while (r->next(s)) {
      for (uint32_t l = 0; l < sh.moe_layers; ++l) {
        ASSERT_EQ(s[l].size(), sh.top_k);
        EXPECT_EQ(std::set<uint32_t>(s[l].begin(), s[l].end()).size(), sh.top_k);
        used[l].insert(s[l].begin(), s[l].end());
      }
    }
    // At most g * 32 distinct experts per layer (the replicas of the trace's 32).
    for (uint32_t l = 0; l < sh.moe_layers; ++l) EXPECT_LE(used[l].size(), info.replicas * 32u);
  }
}

TEST(TwinZipf, DistinctTopKAndSkew) {
  auto r = make_zipf_router(1.2, 3, 64, 6, 42);
  auto r2 = make_zipf_router(1.2, 3, 64, 6, 42);
  std::map<uint32_t, uint64_t> count;
  StepRouting s, s2;
  for (int t = 0; t < 400; ++t) {
    ASSERT_TRUE(r->next(s));
    ASSERT_TRUE(r2->next(s2));
    EXPECT_EQ(s, s2);  // seeded: reproducible
    ASSERT_EQ(s.size(), 3u);
    for (const auto& ids : s) {
      ASSERT_EQ(ids.size(), 6u);
      EXPECT_EQ(std::set<uint32_t>(ids.begin(), ids.end()).size(), 6u);
      for (uint32_t id : ids) EXPECT_LT(id, 64u);
    }
    for (uint32_t id : s[0]) count[id]++;
  }
  // Skewed: the most used expert of layer 0 is used far more often than the least used one.
  uint64_t mx = 0, mn = UINT64_MAX;
  for (uint32_t e = 0; e < 64; ++e) {
    mx = std::max(mx, count[e]);
    mn = std::min(mn, count.count(e) ? count[e] : 0);
  }
  EXPECT_GT(mx, 5 * (mn + 1));
  EXPECT_THROW(make_zipf_router(-1, 3, 64, 6, 1), Error);
  EXPECT_THROW(make_zipf_router(1, 3, 4, 6, 1), Error);
}

class TwinWrite : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moepack-twin-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Largest |weight| of a block, by hand from core/quants.h and the generator's ranges
// (e <= 121; d, dmin < 2^-11): MXFP4 2^(121-128) * 12; Q2_K d*15*3 (+ dmin*15 below zero);
// Q3_K d*32*4; Q4_K d*63*15 (+ dmin*63 below zero).
double bound(GgmlType t) {
  const double d = std::ldexp(1.0, -11);
  switch (t) {
    case GgmlType::MXFP4: return std::ldexp(12.0, -7);
    case GgmlType::Q2_K: return d * 45;
    case GgmlType::Q3_K: return d * 128;
    case GgmlType::Q4_K: return d * 945;
    default: return 0;
  }
}

void check_scales(GgmlType t, const uint8_t* p, uint64_t bytes) {
  auto half_ok = [](const uint8_t* q) {
    uint16_t h;
    std::memcpy(&h, q, 2);
    const float v = fp16_to_fp32(h);
    return v >= std::ldexp(1.0f, -13) && v < std::ldexp(1.0f, -11);
  };
  for (uint64_t b = 0; b < bytes;) {
    switch (t) {
      case GgmlType::MXFP4:
        ASSERT_GE(p[b], 118);
        ASSERT_LE(p[b], 121);
        b += 17;
        break;
      case GgmlType::Q2_K:
        ASSERT_TRUE(half_ok(p + b + 80) && half_ok(p + b + 82)) << b;
        b += 84;
        break;
      case GgmlType::Q3_K:
        ASSERT_TRUE(half_ok(p + b + 108)) << b;
        b += 110;
        break;
      case GgmlType::Q4_K:
        ASSERT_TRUE(half_ok(p + b) && half_ok(p + b + 2)) << b;
        b += 144;
        break;
      default:
        FAIL();
    }
  }
}

TEST_F(TwinWrite, BlocksAreValidAndVerified) {
  for (const char* shape : {"deepseek-v4-flash", "kimi-k3", "deepseek-v3"}) {
    SCOPED_TRACE(shape);
    const TwinShape& sh = *find_twin_shape(shape);
    // One layer of top-k experts, or 2 layers of 6 for v4-flash (the smallest).
    const uint32_t layers = sh.name == "deepseek-v4-flash" ? 2 : 1;
    const fs::path out = dir_ / shape;
    TwinOptions o;
    o.shape = shape;
    o.layers = layers;
    o.experts = sh.top_k;
    o.seed = 7;
    o.out_dir = out.string();
    o.safety_margin_bytes = 0;
    const TwinResult r = write_twin_pack(o);
    EXPECT_EQ(r.expert_count, uint64_t{layers} * sh.top_k);
    const VerifyResult v = verify_pack(out.string(), {true, {}});
    ASSERT_TRUE(v.ok) << v.message;
    EXPECT_EQ(v.experts_checked, r.expert_count);

    const ExpertPack pack = ExpertPack::open(out.string());
    EXPECT_EQ(pack.manifest().model["architecture"], "moepack-twin");
    EXPECT_EQ(pack.manifest().model["twin"]["shape"], shape);
    EXPECT_EQ(pack.manifest().dense_tensors, 0u);
    const GgufFile dense = GgufFile::open(pack.dense_path());
    EXPECT_TRUE(dense.tensors().empty());
    EXPECT_EQ(dense.get_string("general.architecture").value_or(""), "moepack-twin");
    EXPECT_EQ(dense.get_string("moepack.twin.shape").value_or(""), shape);

    const PackLayer& ly = pack.layout().layers[0];
    AlignedBuffer got(ly.stride), want(ly.stride);
    std::vector<float> row;
    for (uint32_t l = 0; l < layers; ++l) {
      for (uint32_t e = 0; e < sh.top_k; e += sh.top_k - 1) {  // first and last expert
        pack.read_expert(l, e, got.data());
        fill_twin_block(pack.layout().layers[l], 7, l, e, want.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), ly.stride), 0) << l << " " << e;
        for (const PackRole& role : ly.roles) {
          check_scales(role.type, got.data() + role.offset, role.bytes);
          const uint64_t row_bytes = role.bytes / role.ne[1];
          row.resize(role.ne[0]);
          double mx = 0;
          for (uint64_t k = 0; k < role.ne[1]; k += 97) {  // every 97th row
            dequantize_row(role.type, got.data() + role.offset + k * row_bytes, row.data(), static_cast<int64_t>(role.ne[0]));
            for (float w : row) {
              ASSERT_TRUE(std::isfinite(w));
              mx = std::max(mx, std::fabs(static_cast<double>(w)));
            }
          }
          EXPECT_LE(mx, bound(role.type)) << role.role;
          EXPECT_GT(mx, bound(role.type) / 64) << role.role;  // not all zero
        }
      }
    }
    // Another seed gives other bytes.
    fill_twin_block(ly, 8, 0, 0, want.data());
    pack.read_expert(0, 0, got.data());
    EXPECT_NE(std::memcmp(got.data(), want.data(), ly.stride), 0);
  }
}

TEST_F(TwinWrite, Refusals) {
  TwinOptions o;
  o.shape = "deepseek-v4-flash";
  o.layers = 1;
  o.experts = 6;
  o.out_dir = (dir_ / "p").string();
  o.free_bytes_hook = [] { return uint64_t{50} << 20; };
  try {
    write_twin_pack(o);
    FAIL() << "no space was accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    // 6 experts of 13,369,344 B + header page + dense + manifest reserve; 50 MiB free.
    EXPECT_NE(m.find("not enough free space"), std::string::npos) << m;
    EXPECT_NE(m.find("52428800 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("1073741824 bytes"), std::string::npos) << m;  // the margin
  }
  EXPECT_FALSE(fs::exists(dir_ / "p" / "manifest.json"));
  o.free_bytes_hook = nullptr;
  o.safety_margin_bytes = 0;
  write_twin_pack(o);
  EXPECT_THROW(write_twin_pack(o), Error);  // a finished pack is there
  o.overwrite = true;
  write_twin_pack(o);
  EXPECT_TRUE(verify_pack(o.out_dir, {true, {}}).ok);
  // Interrupted (cancelled before its first expert batch): no manifest, so not a pack, and the
  // old pack (its manifest removed first, as with --overwrite) no longer opens.
  std::atomic<bool> cancel{true};
  o.cancel = &cancel;
  EXPECT_THROW(write_twin_pack(o), Error);
  EXPECT_FALSE(fs::exists(dir_ / "p" / "manifest.json"));
  EXPECT_THROW(ExpertPack::open(o.out_dir), Error);
  o.cancel = nullptr;
  write_twin_pack(o);  // the re-run completes
  EXPECT_TRUE(verify_pack(o.out_dir, {false, {}}).ok);
  o.shape = "gpt-oss";
  EXPECT_THROW(write_twin_pack(o), Error);
  o.shape = "kimi-k3";
  o.experts = 8;  // < top-16
  EXPECT_THROW(write_twin_pack(o), Error);
}


std::string slurp(const fs::path& p) {
  std::string s;
  FILE* f = std::fopen(p.c_str(), "rb");
  if (!f) return "<missing>";
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

void spit(const fs::path& p, const std::string& bytes) {
  FILE* f = std::fopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr) << p;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  ASSERT_EQ(std::fclose(f), 0);
}

// An interrupted real build (build-state.json + experts.bin, no manifest; in shard mode the
// only copy of the deleted shards' experts) is refused, naming the file, and left byte-identical;
// --overwrite discards it, build-state.json included.
TEST_F(TwinWrite, RefusesAnInterruptedBuild) {
  const fs::path out = dir_ / "build";
  fs::create_directories(out);
  const std::string state = R"({"format":"moepack-build-state","experts_done":[0,1,2]})";
  std::string experts(3 * 4096, '\0');
  for (size_t i = 0; i < experts.size(); ++i) experts[i] = static_cast<char>(i * 131 + 7);
  spit(out / "build-state.json", state);
  spit(out / "experts.bin", experts);
  TwinOptions o;
  o.shape = "deepseek-v4-flash";
  o.layers = 1;
  o.experts = 6;
  o.out_dir = out.string();
  o.safety_margin_bytes = 0;
  try {
    write_twin_pack(o);
    FAIL() << "an interrupted build was overwritten";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find((out / "build-state.json").string()), std::string::npos) << m;
    EXPECT_NE(m.find("--overwrite"), std::string::npos) << m;
  }
  EXPECT_EQ(slurp(out / "build-state.json"), state);
  EXPECT_EQ(slurp(out / "experts.bin"), experts);
  EXPECT_FALSE(fs::exists(out / "dense.gguf"));
  EXPECT_FALSE(fs::exists(out / "manifest.json"));

  // Without build-state.json: an experts.bin alone, or a dense.gguf that is not a twin's, is
  // still refused and kept.
  fs::remove(out / "build-state.json");
  try {
    write_twin_pack(o);
    FAIL() << "a foreign experts.bin was overwritten";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((out / "experts.bin").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(out / "experts.bin"), experts);
  const std::string not_twin = "GGUF not really a twin's dense.gguf";
  spit(out / "dense.gguf", not_twin);
  try {
    write_twin_pack(o);
    FAIL() << "a foreign dense.gguf was overwritten";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((out / "dense.gguf").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(out / "dense.gguf"), not_twin);
  EXPECT_EQ(slurp(out / "experts.bin"), experts);

  // With --overwrite it works, and build-state.json is gone (a later `moepack build` must not
  // resume from the twin's bytes).
  spit(out / "build-state.json", state);
  o.overwrite = true;
  write_twin_pack(o);
  EXPECT_FALSE(fs::exists(out / "build-state.json"));
  EXPECT_TRUE(verify_pack(o.out_dir, {true, {}}).ok);

  // An interrupted twin (cancelled: its dense.gguf says moepack-twin, no manifest) is rewritten
  // without --overwrite.
  std::atomic<bool> cancel{true};
  o.cancel = &cancel;
  EXPECT_THROW(write_twin_pack(o), Error);
  ASSERT_FALSE(fs::exists(out / "manifest.json"));
  ASSERT_TRUE(fs::exists(out / "dense.gguf"));
  o.cancel = nullptr;
  o.overwrite = false;
  write_twin_pack(o);
  EXPECT_TRUE(verify_pack(o.out_dir, {true, {}}).ok);
}

// Issue 11: twins of deepseek-v4-flash and kimi-k3 have the expert layout the pack builder
// gives those architectures' real GGUFs (the tiny fixtures llama.cpp runs): the same roles in
// the same order, the same tensor names per block, the same orientation of one expert's slice, the same types.
TEST(TwinLayout, MatchesThePackBuilderOnTheArchitecturesFixtures) {
  const struct {
    const char* shape;
    const char* fixture;
  } cases[] = {{"deepseek-v4-flash", "deepseek4-tiny/deepseek4-tiny-MXFP4_MOE.gguf"},
               {"kimi-k3", "kimi-linear-tiny/kimi-linear-tiny-Q2_K.gguf"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape);
    const GgufModel model = GgufModel::open(std::string(MOEPACK_SHARED_DIR) + "/fixtures/" + c.fixture);
    const PackPlan plan = plan_pack(model);
    const TwinShape& sh = *find_twin_shape(c.shape);
    const PackLayout twin = twin_layout(sh, 2, sh.top_k);
    ASSERT_FALSE(plan.layout.layers.empty());
    // The first MoE block of the fixture is the twin's first block.
    EXPECT_EQ(plan.layout.layers[0].block, twin.layers[0].block);
    for (const PackLayer& real : plan.layout.layers) {
      const PackLayer& tw = twin.layers[0];
      ASSERT_EQ(real.roles.size(), tw.roles.size());
      const std::string rb = "blk." + std::to_string(real.block) + ".", tb = "blk." + std::to_string(tw.block) + ".";
      for (size_t r = 0; r < real.roles.size(); ++r) {
        EXPECT_EQ(real.roles[r].role, tw.roles[r].role);
        EXPECT_EQ(real.roles[r].tensor.substr(rb.size()), tw.roles[r].tensor.substr(tb.size()));
        EXPECT_EQ(real.roles[r].n_dims, tw.roles[r].n_dims);
      }
      // gate/up [n_embd, n_ff], down [n_ff, n_embd] in both.
      EXPECT_EQ(real.roles[0].ne[1], real.roles[2].ne[0]);
      EXPECT_EQ(real.roles[0].ne[0], real.roles[2].ne[1]);
      EXPECT_EQ(tw.roles[0].ne[0], sh.n_embd);
      EXPECT_EQ(tw.roles[2].ne[0], sh.n_ff);
      // Same quant types: the fixtures are quantized as the real models (MXFP4; Q2_K/Q2_K/Q3_K).
      for (size_t r = 0; r < real.roles.size(); ++r) EXPECT_EQ(real.roles[r].type, tw.roles[r].type) << r;
    }
  }
}

}  // namespace
}  // namespace moepack::bench
