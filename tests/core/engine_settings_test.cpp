// Engine settings (core/engine_settings.h): text and JSON forms, ranges, and errors that name
// the key (and the file).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/engine_settings.h"
#include "core/error.h"

namespace {

namespace fs = std::filesystem;
using namespace moepack;

// The message of the Error `f` throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(EngineSettings, AppliesEveryKindOfValue) {
  EngineSettings s;
  apply_setting(s, "cache_vram_mib", "2048");
  apply_setting(s, "read_splits", " 4 ");
  apply_setting(s, "direct_io", "false");
  apply_setting(s, "verify_pack_sha256", "1");
  apply_setting(s, "backend", "cpu");
  apply_setting(s, "cache_policy", "lru");
  apply_setting(s, "stats_path", "/tmp/x stats.json");
  apply_setting(s, "n_ctx", "512");
  EXPECT_EQ(s.cache_vram_mib, 2048u);
  EXPECT_EQ(s.read_splits, 4u);
  EXPECT_FALSE(s.direct_io);
  EXPECT_TRUE(s.verify_pack_sha256);
  EXPECT_EQ(s.backend, "cpu");
  EXPECT_EQ(s.cache_policy, "lru");
  EXPECT_EQ(s.stats_path, "/tmp/x stats.json");
  EXPECT_EQ(s.n_ctx, 512u);
}

TEST(EngineSettings, ErrorsNameTheKey) {
  EngineSettings s;
  EXPECT_NE(error_of([&] { apply_setting(s, "cache_vram_mb", "1"); }).find("cache_vram_mb"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(s, "read_splits", "0"); }).find("read_splits"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(s, "stage_slots", "-3"); }).find("stage_slots"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(s, "threads", "4x"); }).find("threads"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(s, "direct_io", "maybe"); }).find("direct_io"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(s, "backend", "tpu"); }).find("backend"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_setting(s, "n_ctx", "99999999999"); }).find("n_ctx"), std::string::npos);
  // A failed setting leaves the value as it was.
  EXPECT_EQ(s.read_splits, 1u);
}

// The bounds, hand-written here (docs/cli.md lists them; the studio's Settings take them too).
TEST(EngineSettings, NumericBounds) {
  EngineSettings s;
  const auto accepts = [&](const char* key, const std::string& v) {
    try {
      apply_setting(s, key, v);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  EXPECT_TRUE(accepts("threads", "4096"));
  EXPECT_FALSE(accepts("threads", "4097"));
  EXPECT_FALSE(accepts("n_ctx", "63"));
  EXPECT_TRUE(accepts("n_ctx", "64"));
  EXPECT_TRUE(accepts("n_ctx", "16777216"));
  EXPECT_FALSE(accepts("n_ctx", "16777217"));
  EXPECT_TRUE(accepts("cache_vram_mib", "0"));  // with cache_bytes, the CLI's exact budget
  EXPECT_TRUE(accepts("cache_vram_mib", "16777216"));
  EXPECT_FALSE(accepts("cache_vram_mib", "16777217"));
  EXPECT_FALSE(accepts("stage_slots", "0"));
  EXPECT_TRUE(accepts("stage_slots", "4096"));
  EXPECT_FALSE(accepts("stage_slots", "4097"));
  EXPECT_FALSE(accepts("read_splits", "65"));
  const auto r = engine_setting_range("n_ctx");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->lo, 64u);
  EXPECT_EQ(r->hi, 16777216u);
  EXPECT_EQ(engine_setting_range("threads")->hi, 4096u);
  EXPECT_FALSE(engine_setting_range("backend"));    // not numeric
  EXPECT_FALSE(engine_setting_range("direct_io"));  // not numeric
  EXPECT_FALSE(engine_setting_range("no_such_key"));
}

TEST(EngineSettings, JsonValuesOfAnyScalarType) {
  EngineSettings s;
  apply_settings_json(s, nlohmann::json::parse(R"({"cache_vram_mib": 300, "direct_io": false,
      "read_splits": "2", "stats_flush_interval": 16.0, "pack_path": "/p"})"),
                      "cfg.json");
  EXPECT_EQ(s.cache_vram_mib, 300u);
  EXPECT_FALSE(s.direct_io);
  EXPECT_EQ(s.read_splits, 2u);
  EXPECT_EQ(s.stats_flush_interval, 16u);
  EXPECT_EQ(s.pack_path, "/p");
  const std::string e1 = error_of([&] { apply_settings_json(s, nlohmann::json::parse(R"({"read_splits": [1]})"), "cfg.json"); });
  EXPECT_NE(e1.find("cfg.json"), std::string::npos);
  EXPECT_NE(e1.find("read_splits"), std::string::npos);
  const std::string e2 = error_of([&] { apply_settings_json(s, nlohmann::json::parse(R"({"stage_slots": -1})"), "cfg.json"); });
  EXPECT_NE(e2.find("stage_slots"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_settings_json(s, nlohmann::json::parse(R"({"read_splits": 1.5})"), "c"); }), "");
  EXPECT_NE(error_of([&] { apply_settings_json(s, nlohmann::json::array(), "c"); }), "");
}

TEST(EngineSettings, FileErrorsNameTheFileAndKey) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-settings-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path good = dir / "good.json", bad_key = dir / "bad_key.json", bad_json = dir / "bad.json";
  std::ofstream(good) << R"({"cache_vram_mib": 4096, "backend": "auto"})";
  std::ofstream(bad_key) << R"({"cache_vram_mib": 4096, "nonsense": 1})";
  std::ofstream(bad_json) << R"({"cache_vram_mib": )";
  EngineSettings s;
  apply_settings_file(s, good.string());
  EXPECT_EQ(s.cache_vram_mib, 4096u);
  const std::string e = error_of([&] { apply_settings_file(s, bad_key.string()); });
  EXPECT_NE(e.find("bad_key.json"), std::string::npos);
  EXPECT_NE(e.find("nonsense"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_settings_file(s, bad_json.string()); }).find("bad.json"), std::string::npos);
  EXPECT_NE(error_of([&] { apply_settings_file(s, (dir / "missing.json").string()); }).find("missing.json"),
            std::string::npos);
  fs::remove_all(dir);
}

// tiled_experts: one of auto (the default), on, off; anything else is refused with the key named.
TEST(EngineSettings, TiledExpertsTakesAutoOnOff) {
  EngineSettings s;
  EXPECT_EQ(s.tiled_experts, "auto");
  apply_setting(s, "tiled_experts", "off");
  EXPECT_EQ(s.tiled_experts, "off");
  apply_setting(s, "tiled_experts", " on ");
  EXPECT_EQ(s.tiled_experts, "on");
  try {
    apply_setting(s, "tiled_experts", "true");
    FAIL() << "accepted \"true\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiled_experts"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto | on | off"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.tiled_experts, "on");  // unchanged by the refused value
}

// cache_ram_mib: "auto" (the default: sized from the RAM, core/victim_tier.h) or MiB in
// [0, 2^24]; "auto" round-trips as text, numbers as numbers. cache_ram_admission: frequency
// (the default) or all.
TEST(EngineSettings, CacheRamTakesAutoOrMib) {
  EngineSettings s;
  EXPECT_EQ(s.cache_ram_mib, EngineSettings::kCacheRamAuto);
  EXPECT_EQ(settings_to_json(s).at("cache_ram_mib"), "auto");
  EXPECT_EQ(s.cache_ram_admission, "frequency");
  apply_setting(s, "cache_ram_mib", "8192");
  EXPECT_EQ(s.cache_ram_mib, 8192u);
  EXPECT_EQ(settings_to_json(s).at("cache_ram_mib"), 8192);
  apply_setting(s, "cache_ram_mib", " auto ");
  EXPECT_EQ(s.cache_ram_mib, EngineSettings::kCacheRamAuto);
  apply_settings_json(s, nlohmann::json::parse(R"({"cache_ram_mib": 0, "cache_ram_admission": "all"})"),
                      "c.json");
  EXPECT_EQ(s.cache_ram_mib, 0u);
  EXPECT_EQ(s.cache_ram_admission, "all");
  apply_settings_json(s, nlohmann::json::parse(R"({"cache_ram_mib": "auto"})"), "c.json");
  EXPECT_EQ(s.cache_ram_mib, EngineSettings::kCacheRamAuto);
  const std::string big = error_of([&] { apply_setting(s, "cache_ram_mib", "16777217"); });
  EXPECT_NE(big.find("cache_ram_mib"), std::string::npos) << big;
  EXPECT_NE(big.find("[0, 16777216]"), std::string::npos) << big;
  for (const char* bad : {"Auto", "8192.0", "-1", ""}) {
    const std::string e = error_of([&] { apply_setting(s, "cache_ram_mib", bad); });
    EXPECT_NE(e.find("cache_ram_mib"), std::string::npos) << e;
    EXPECT_NE(e.find("expected auto or a whole number of MiB"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] { apply_setting(s, "cache_ram_admission", "lru"); }).find("frequency | all"),
            std::string::npos);
  EXPECT_EQ(s.cache_ram_mib, EngineSettings::kCacheRamAuto);  // unchanged by the refused values
  EXPECT_EQ(s.cache_ram_admission, "all");
  const auto r = engine_setting_range("cache_ram_mib");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hi, 1ull << 24);
}

TEST(EngineSettings, JsonRoundTripAndKeyList) {
  EngineSettings s;
  s.cache_vram_mib = 777;
  s.direct_io = false;
  s.stats_path = "a.json";
  const nlohmann::json j = settings_to_json(s);
  EXPECT_EQ(j.at("cache_vram_mib"), 777);
  EXPECT_EQ(j.at("direct_io"), false);
  EngineSettings t;
  apply_settings_json(t, j, "roundtrip");
  EXPECT_EQ(settings_to_json(t), j);
  // setting_keys: in declaration order, the same set as the JSON's.
  const auto& keys = setting_keys();
  ASSERT_EQ(keys.size(), j.size());
  EXPECT_EQ(keys.front(), "backend");
  for (const char* k : {"pack_path", "manifest_path", "cache_vram_mib", "cache_vram_reserve_mib", "stage_slots",
                               "read_splits", "direct_io", "stats_flush_interval", "stats_path", "verify_pack_sha256"}) {
    EXPECT_TRUE(j.contains(k)) << k;  // ARCHITECTURE.md's vocabulary
  }
}

}  // namespace
