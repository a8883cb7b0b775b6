// Telemetry: counters and samples readable while the engine thread writes them; the stats
// file is written atomically at the flush interval with the documented fields.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/telemetry.h"

namespace fs = std::filesystem;
using namespace moepack;

TEST(Telemetry, CountersAndDerivedRates) {
  Telemetry t;
  t.counters().cache_hits += 30;
  t.counters().cache_misses += 10;
  t.counters().pack_read_bytes += 4096 * 10;
  for (int k = 0; k < 4; ++k) t.record_token({0, 4096, 2, 1.5, 3.0});
  const TelemetrySnapshot s = t.snapshot();
  EXPECT_EQ(s.tokens, 4u);
  EXPECT_DOUBLE_EQ(s.hit_rate(), 0.75);                    // 30 / (30 + 10)
  EXPECT_DOUBLE_EQ(s.read_bytes_per_token(), 10240.0);      // 40960 bytes / 4 tokens
}

TEST(Telemetry, RecentKeepsTheNewestInOrder) {
  TelemetrySettings set;
  set.history = 4;
  Telemetry t(set);
  for (uint64_t k = 0; k < 10; ++k) t.record_token({0, k * 100, static_cast<uint32_t>(k), 0, 0});
  const auto r = t.recent(100);
  ASSERT_EQ(r.size(), 4u);  // only the ring's 4 entries
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r[i].index, 6 + i);
    EXPECT_EQ(r[i].read_bytes, (6 + i) * 100);
  }
  EXPECT_EQ(t.recent(2).front().index, 8u);
}

TEST(Telemetry, ConcurrentReaderNeverSeesTornSamples) {
  TelemetrySettings set;
  set.history = 8;
  Telemetry t(set);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> checked{0};
  std::thread reader([&] {
    while (!stop.load()) {
      for (const TokenSample& s : t.recent(8)) {
        // Every field of sample i is derived from i: a torn read would break the relation.
        ASSERT_EQ(s.read_bytes, s.index * 3);
        ASSERT_EQ(s.experts_missed, static_cast<uint32_t>(s.index % 1000));
        ASSERT_DOUBLE_EQ(s.compute_ms, static_cast<double>(s.index) * 0.5);
        checked++;
      }
    }
  });
  // Keep writing until the reader has checked many samples while writes were going on (the
  // reader thread may start late on a busy machine), with a hard cap.
  uint64_t written = 0;
  for (; written < 200000 || (checked.load() < 1000 && written < 100000000); ++written) {
    const uint64_t i = written;
    t.record_token({0, i * 3, static_cast<uint32_t>(i % 1000), 0, static_cast<double>(i) * 0.5});
  }
  stop = true;
  reader.join();
  EXPECT_GE(checked.load(), 1000u);
  EXPECT_EQ(t.snapshot().tokens, written);
}

TEST(Telemetry, StatsFileWrittenAtTheIntervalAtomically) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-telemetry-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  TelemetrySettings set;
  set.stats_path = (dir / "stats.json").string();
  set.stats_flush_interval = 3;
  Telemetry t(set);
  const auto tokens_in_file = [&] {
    return nlohmann::json::parse(std::ifstream(set.stats_path))["counters"]["tokens"].get<uint64_t>();
  };
  ASSERT_TRUE(fs::exists(set.stats_path));  // written at once: a bad path fails at load
  EXPECT_EQ(tokens_in_file(), 0u);
  t.counters().cache_misses += 5;
  t.record_token({0, 100, 1, 0, 0});
  t.record_token({0, 100, 1, 0, 0});
  EXPECT_EQ(tokens_in_file(), 0u);  // not before the 3rd token
  t.record_token({0, 100, 1, 0, 0});
  EXPECT_FALSE(fs::exists(set.stats_path + ".tmp"));
  nlohmann::json j = nlohmann::json::parse(std::ifstream(set.stats_path));
  EXPECT_EQ(j["counters"]["tokens"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["counters"]["cache_misses"].get<uint64_t>(), 5u);
  for (const char* k : {"cache_hits", "cache_evictions", "prefetch_reads", "prefetch_hits", "pack_read_bytes",
                        "h2d_bytes", "ram_tier_hits", "d2h_bytes", "fallback_count", "io_errors"}) {
    EXPECT_TRUE(j["counters"].contains(k)) << k;
  }
  EXPECT_EQ(j["recent_tokens"].size(), 3u);
  t.record_token({0, 100, 1, 0, 0});
  t.end_reply();  // a reply's end writes too, between intervals
  EXPECT_EQ(tokens_in_file(), 4u);
  fs::remove_all(dir);
}

// A stats file that cannot be written is an error when the telemetry is made (at model load),
// naming the file; without an interval the file is written at each reply's end.
TEST(Telemetry, UnwritableStatsPathFailsAtOnceAndNoIntervalWritesAtReplyEnds) {
  TelemetrySettings bad;
  bad.stats_path = "/nonexistent-moepack-dir/stats.json";
  try {
    Telemetry t(bad);
    FAIL() << "an unwritable stats_path was accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-moepack-dir"), std::string::npos) << e.what();
  }
  const fs::path dir = fs::temp_directory_path() / ("moepack-telemetry-end-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  TelemetrySettings set;
  set.stats_path = (dir / "stats.json").string();
  Telemetry t(set);
  for (int i = 0; i < 5; ++i) t.record_token({0, 100, 1, 0, 0});
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(set.stats_path))["counters"]["tokens"].get<uint64_t>(), 0u);
  t.end_reply();
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(set.stats_path))["counters"]["tokens"].get<uint64_t>(), 5u);
  fs::remove_all(dir);
}

namespace moepack {
namespace {

// Residency bitmap across 64-bit word boundaries (3 layers x 70 experts = 210 bits).
TEST(Telemetry, ResidencyMapRoundTripsAndChecksItsShape) {
  Telemetry t;
  EXPECT_EQ(t.residency().n_layers, 0u);  // no cache: empty
  t.init_residency(3, 70);
  ResidencyMap m = t.residency();
  ASSERT_EQ(m.resident.size(), 210u);
  for (uint8_t r : m.resident) EXPECT_EQ(r, 0);
  ResidencyMap in{3, 70, std::vector<uint8_t>(210, 0)};
  for (size_t i : {0u, 63u, 64u, 69u, 70u, 127u, 128u, 209u}) in.resident[i] = 1;
  t.publish_residency(in);
  EXPECT_EQ(t.residency().resident, in.resident);
  ResidencyMap wrong{2, 70, std::vector<uint8_t>(140, 1)};
  EXPECT_THROW(t.publish_residency(wrong), Error);
}

}  // namespace
}  // namespace moepack
