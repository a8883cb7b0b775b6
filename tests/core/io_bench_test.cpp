// run_io_bench reads exactly what it says it reads, on a pack built from a fixture.
#include "core/io_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/expert_pack.h"
#include "packbuilder/pack_builder.h"

namespace fs = std::filesystem;
using namespace moepack;

// The Expert Pack of the qwen3moe fixture, built into dir/pack (dir emptied first).
ExpertPack fixture_pack(const fs::path& dir) {
  fs::remove_all(dir);
  BuildOptions b;
  b.source = std::string(MOEPACK_SHARED_DIR) + "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf";
  b.out_dir = (dir / "pack").string();
  build_pack(b);
  return ExpertPack::open(b.out_dir);
}

TEST(IoBench, CountsAndRatiosAreConsistent) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-iobench-" + std::to_string(::getpid()));
  const ExpertPack pack = fixture_pack(dir);
  IoBenchOptions o;
  o.expert_reads = 40;
  o.batch = 6;  // 6 + 6 + ... + 4: the last batch is partial
  o.raw_chunk_bytes = 1 << 20;
  const IoBenchResult r = run_io_bench(pack, o);
  // qwen3moe-tiny: 4 MoE layers x 8 experts; gate/up/down mxfp4 256x256 = 34,816 B each, at
  // 256-aligned role offsets 0, 34816, 69632 -> 104,448 B per block -> stride 106,496 (26 pages).
  EXPECT_EQ(pack.layout().max_stride, 106496u);
  EXPECT_EQ(r.expert_direct.reads, 40u);
  EXPECT_EQ(r.expert_direct.bytes, 40u * 106496);
  EXPECT_EQ(r.expert_buffered.bytes, 40u * 106496);
  EXPECT_EQ(r.raw_direct.bytes, pack.layout().data_end - pack.layout().data_start);
  EXPECT_EQ(r.raw_direct.bytes, 32u * 106496);
  EXPECT_GT(r.expert_vs_raw_ratio, 0.0);
  EXPECT_GT(r.direct_vs_buffered_ratio, 0.0);
  EXPECT_FALSE(r.disjoint);  // the raw reads cover the whole file
  const auto j = io_bench_to_json(pack, o, r);
  EXPECT_EQ(j["expert_direct"]["bytes"].get<uint64_t>(), 40u * 106496);
  EXPECT_EQ(j["phases_read_different_bytes"], false);
  EXPECT_TRUE(j.contains("expert_vs_raw_ratio"));
  fs::remove_all(dir);
}

// The VRAM phase (gpu/vram_delivery_bench.h in CUDA builds) is called once, between the direct
// and the buffered phases, with the pack and the options; its result is reported beside the
// others and divided by the raw bandwidth of the same run.
TEST(IoBench, VramPhaseIsReportedAgainstTheSameRunsRawBandwidth) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-iobench-vram-" + std::to_string(::getpid()));
  const ExpertPack pack = fixture_pack(dir);
  IoBenchOptions o;
  o.expert_reads = 12;
  o.batch = 4;
  int calls = 0;
  const IoBenchResult r = run_io_bench(pack, o, [&](const ExpertPack& p, const IoBenchOptions& po,
                                                    const IoBenchPlan& plan) {
    ++calls;
    EXPECT_EQ(p.dir(), pack.dir());
    EXPECT_EQ(po.expert_reads, 12u);
    EXPECT_EQ(plan.vram.size(), 12u);
    EXPECT_EQ(plan.vram_ahead.size(), 12u);
    VramDeliveryResult v;
    v.raw_pinned.bytes = 3u << 20;
    v.raw_pinned.seconds = 0.25;
    v.delivery.reads = po.expert_reads;
    v.delivery.bytes = po.expert_reads * p.layout().max_stride;
    v.delivery.seconds = 0.5;
    v.ahead = v.delivery;
    v.ahead.seconds = 0.4;
    return v;
  });
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(r.vram_delivery.has_value());
  ASSERT_TRUE(r.raw_direct_pinned.has_value());
  EXPECT_EQ(r.vram_delivery->bytes, 12u * 106496);
  EXPECT_DOUBLE_EQ(r.vram_vs_raw_pinned_ratio, (12.0 * 106496 / 0.5) / (3.0 * 1048576 / 0.25));
  const double want = (12.0 * 106496 / 0.5) / r.raw_direct.bytes_per_second();
  EXPECT_NEAR(r.vram_vs_raw_ratio, want, 1e-12 * want);
  const auto j = io_bench_to_json(pack, o, r);
  EXPECT_EQ(j["settings"]["seed"].get<uint64_t>(), 1u);  // the default order
  EXPECT_EQ(j["vram_delivery"]["bytes"].get<uint64_t>(), 12u * 106496);
  EXPECT_EQ(j["vram_delivery"]["reads"].get<uint64_t>(), 12u);
  EXPECT_DOUBLE_EQ(j["vram_vs_raw_ratio"].get<double>(), r.vram_vs_raw_ratio);
  EXPECT_EQ(j["raw_direct_pinned"]["bytes"].get<uint64_t>(), 3u << 20);
  EXPECT_DOUBLE_EQ(j["vram_vs_raw_pinned_ratio"].get<double>(), r.vram_vs_raw_pinned_ratio);
  // The read-ahead phase: the same bytes in 0.4 s.
  ASSERT_TRUE(r.vram_ahead.has_value());
  EXPECT_DOUBLE_EQ(r.vram_ahead_vs_raw_pinned_ratio, (12.0 * 106496 / 0.4) / (3.0 * 1048576 / 0.25));
  const double want_ahead = (12.0 * 106496 / 0.4) / r.raw_direct.bytes_per_second();
  EXPECT_NEAR(r.vram_ahead_vs_raw_ratio, want_ahead, 1e-12 * want_ahead);
  EXPECT_EQ(j["vram_ahead"]["reads"].get<uint64_t>(), 12u);
  EXPECT_DOUBLE_EQ(j["vram_ahead"]["seconds"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(j["vram_ahead_vs_raw_ratio"].get<double>(), r.vram_ahead_vs_raw_ratio);
  EXPECT_DOUBLE_EQ(j["vram_ahead_vs_raw_pinned_ratio"].get<double>(), r.vram_ahead_vs_raw_pinned_ratio);
  // Without a VRAM phase the JSON has no such keys.
  const auto plain = io_bench_to_json(pack, o, run_io_bench(pack, o));
  EXPECT_FALSE(plain.contains("vram_delivery"));
  EXPECT_FALSE(plain.contains("vram_vs_raw_ratio"));
  EXPECT_FALSE(plain.contains("raw_direct_pinned"));
  EXPECT_FALSE(plain.contains("vram_ahead"));
  fs::remove_all(dir);
}

TEST(IoBench, BlocksAreEveryExpertOnceInASeededOrder) {
  PackLayout L;
  L.layers.resize(3);
  L.layers[0].n_experts = 4;
  L.layers[1].n_experts = 2;
  L.layers[2].n_experts = 5;
  const auto a = io_bench_blocks(L, 7), b = io_bench_blocks(L, 7), c = io_bench_blocks(L, 8);
  ASSERT_EQ(a.size(), 11u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<uint32_t, uint32_t>> all;
  for (uint32_t l = 0; l < 3; ++l) {
    for (uint32_t e = 0; e < L.layers[l].n_experts; ++e) all.emplace_back(l, e);
  }
  EXPECT_EQ(sorted, all);
}

// qwen3moe-tiny's pack: 32 blocks of 106,496 B from data_start. Raw reads of 4 blocks' bytes
// leave 28 blocks (with the VRAM phases, two raw regions: 24) for the random phases.
TEST(IoBench, PhasesReadDifferentBytesWhenThePackIsLargeEnough) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-iobench-plan-" + std::to_string(::getpid()));
  const ExpertPack pack = fixture_pack(dir);
  const PackLayout& L = pack.layout();
  const uint64_t stride = 106496;
  ASSERT_EQ(L.data_end - L.data_start, 32 * stride);
  IoBenchOptions o;
  o.raw_max_bytes = 4 * stride + 100;  // rounded down to 4096: 4 blocks exactly (106,496 = 26 pages)
  o.expert_reads = 5;
  for (const bool vram : {false, true}) {
    SCOPED_TRACE(vram ? "with a VRAM phase" : "without");
    const IoBenchPlan p = io_bench_plan(L, o, vram);
    EXPECT_TRUE(p.disjoint);
    EXPECT_EQ(p.raw_begin, L.data_start);
    EXPECT_EQ(p.raw_bytes, 4 * stride);
    EXPECT_EQ(p.raw_pinned_begin, vram ? L.data_start + 4 * stride : L.data_start);
    const uint64_t raw_end = L.data_start + (vram ? 8 : 4) * stride;
    std::vector<std::pair<uint32_t, uint32_t>> all;
    for (const auto* list : {&p.direct, &p.vram, &p.vram_ahead, &p.buffered}) {
      for (const auto& [l, e] : *list) {
        EXPECT_GE(L.offset(l, e), raw_end) << "block " << l << "," << e << " lies in a raw region";
        all.emplace_back(l, e);
      }
    }
    EXPECT_EQ(p.direct.size(), 5u);
    EXPECT_EQ(p.buffered.size(), 5u);
    EXPECT_EQ(p.vram.size(), vram ? 5u : 0u);
    EXPECT_EQ(p.vram_ahead.size(), vram ? 5u : 0u);
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a block is read by two phases";
  }
  // 4 x 7 = 28 blocks do not fit in the 24 left with the VRAM phases: shared, flagged.
  o.expert_reads = 7;
  const IoBenchPlan shared = io_bench_plan(L, o, true);
  EXPECT_FALSE(shared.disjoint);
  EXPECT_EQ(shared.vram.size(), 7u);
  EXPECT_EQ(shared.vram_ahead.size(), 7u);
  EXPECT_TRUE(io_bench_plan(L, o, false).disjoint);  // 2 x 7 fit in 28
  o.expert_reads = 6;
  EXPECT_TRUE(io_bench_plan(L, o, true).disjoint);  // 4 x 6 fit in 24
  // Raw regions that do not fit twice: the pinned one re-reads the first.
  o.expert_reads = 1;
  o.raw_max_bytes = 17 * stride;
  const IoBenchPlan big = io_bench_plan(L, o, true);
  EXPECT_FALSE(big.disjoint);
  EXPECT_EQ(big.raw_pinned_begin, L.data_start);
  // And run_io_bench reads what the plan says.
  o.expert_reads = 5;
  o.raw_max_bytes = 8 * stride;
  const IoBenchResult r = run_io_bench(pack, o);
  EXPECT_TRUE(r.disjoint);
  EXPECT_EQ(r.raw_direct.bytes, 8 * stride);
  EXPECT_EQ(r.expert_direct.bytes, 5 * stride);
  EXPECT_EQ(r.expert_buffered.bytes, 5 * stride);
  EXPECT_EQ(io_bench_to_json(pack, o, r)["phases_read_different_bytes"], true);
  fs::remove_all(dir);
}

// io_bench_acquires: full batches of one layer in plan order, each layer's partial batch at
// the end in layer order, never one expert twice in an acquire.
TEST(IoBench, AcquiresAreFullBatchesOfOneLayer) {
  using Acquires = std::vector<std::pair<uint32_t, std::vector<uint32_t>>>;
  const std::vector<std::pair<uint32_t, uint32_t>> blocks = {{0, 1}, {1, 5}, {0, 2}, {0, 3}, {1, 6}, {2, 0},
                                                             {0, 4}, {1, 7}, {1, 5}, {0, 9}, {2, 1}};
  EXPECT_EQ(io_bench_acquires(blocks, 3),
            (Acquires{{0, {1, 2, 3}}, {1, {5, 6, 7}}, {0, {4, 9}}, {1, {5}}, {2, {0, 1}}}));
  // A repeated expert (a plan that is not disjoint) starts a new acquire.
  EXPECT_EQ(io_bench_acquires({{3, 1}, {3, 2}, {3, 1}, {3, 4}}, 3), (Acquires{{3, {1, 2}}, {3, {1, 4}}}));
  EXPECT_EQ(io_bench_acquires(blocks, 1).size(), blocks.size());
  EXPECT_TRUE(io_bench_acquires({}, 6).empty());
}

TEST(IoBench, MedianOfTheRoundsRatios) {
  EXPECT_EQ(io_bench_median({}), 0.0);
  EXPECT_EQ(io_bench_median({0.7}), 0.7);
  EXPECT_EQ(io_bench_median({0.9, 0.7, 1.3}), 0.9);
  EXPECT_EQ(io_bench_median({4.0, 1.0, 3.0, 2.0}), 2.5);  // the middle two's mean
}

// Alternating rounds (bench-io --vram --rounds R): round k's raw region follows the pinned one's
// and the rounds before it; its consecutive blocks follow the raw regions in file order, a run a
// round; its random blocks lie after those, and no other phase or round reads them. A pack too
// small for that is refused, naming what to lower.
TEST(IoBench, RoundsReadBytesOfTheirOwnAndAreReportedWithTheirMedian) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-iobench-rounds-" + std::to_string(::getpid()));
  const ExpertPack pack = fixture_pack(dir);
  const PackLayout& L = pack.layout();
  const uint64_t stride = 106496;
  ASSERT_EQ(L.data_end - L.data_start, 32 * stride);
  IoBenchOptions o;
  o.raw_max_bytes = 2 * stride;
  o.expert_reads = 3;
  o.rounds = 2;
  // 4 raw regions of 2 blocks (raw, pinned, 2 rounds) leave 24 blocks: 2 runs of 3 consecutive
  // ones, then (4 phases + 2 rounds) x 3 random ones.
  const IoBenchPlan p = io_bench_plan(L, o, true);
  EXPECT_TRUE(p.disjoint);
  EXPECT_EQ(p.raw_pinned_begin, L.data_start + 2 * stride);
  ASSERT_EQ(p.rounds.size(), 2u);
  EXPECT_EQ(p.rounds[0].raw_begin, L.data_start + 4 * stride);
  EXPECT_EQ(p.rounds[1].raw_begin, L.data_start + 6 * stride);
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(p.rounds[k].sequential.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      const auto [l, e] = p.rounds[k].sequential[i];
      EXPECT_EQ(L.offset(l, e), L.data_start + (8 + 3 * k + i) * stride) << "round " << k << ", block " << i;
    }
  }
  std::vector<std::pair<uint32_t, uint32_t>> all;
  for (const auto* list :
       {&p.direct, &p.vram, &p.vram_ahead, &p.buffered, &p.rounds[0].vram, &p.rounds[1].vram}) {
    EXPECT_EQ(list->size(), 3u);
    for (const auto& [l, e] : *list) {
      EXPECT_GE(L.offset(l, e), L.data_start + 14 * stride)
          << "block " << l << "," << e << " lies in a raw region or run";
      all.emplace_back(l, e);
    }
  }
  for (const auto& round : p.rounds) all.insert(all.end(), round.sequential.begin(), round.sequential.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all.size(), 24u);
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a block is read twice";
  // Without a VRAM phase there are no rounds.
  EXPECT_TRUE(io_bench_plan(L, o, false).rounds.empty());
  // Refusals name the largest value that fits (the fixture's 3.25 MiB of expert data).
  const auto refused = [&](IoBenchOptions bad, const std::string& says) {
    try {
      io_bench_plan(L, bad, true);
      ADD_FAILURE() << "no error; expected: " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--rounds"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  IoBenchOptions bad = o;
  bad.expert_reads = 4;  // 8 sets of 4 in the 24 blocks left: 3 fit
  refused(bad, "24 expert blocks lie after the raw regions, not 8 sets of 4: use --reads 3 or less");
  bad.expert_reads = uint64_t{1} << 61;  // 8 x 2^61 wraps to 0 in 64 bits: refused all the same
  refused(bad, "not 8 sets of 2305843009213693952");
  bad = o;
  bad.rounds = 30;  // 32 regions of 106,496 B fit in 32 blocks, but then no block is left
  bad.raw_max_bytes = stride;
  refused(bad,
          "0 expert blocks lie after the raw regions, not 64 sets of 3: use a smaller --raw-max-mib or fewer "
          "rounds");
  bad = o;
  bad.raw_max_bytes = 8 * stride;  // 7 regions of 0.81 MiB in 3.25 MiB: under 1 MiB each
  bad.rounds = 5;
  refused(bad,
          "the expert data (3.25 MiB) cannot hold 7 raw regions of 0.81 MiB: the pack is too small for this "
          "many rounds");
  bad.rounds = 1001;
  refused(bad, "--rounds 1001 is more than 1000");
  bad.rounds = uint32_t{0xFFFFFFFF};
  refused(bad, "is more than 1000");
  bad = o;
  bad.expert_reads = 0;
  refused(bad, "--reads must be at least 1");

  // run_io_bench hands the plan's rounds to the VRAM phase and reports each round's ratios.
  o.rounds = 3;
  o.raw_max_bytes = stride;
  o.expert_reads = 2;
  const IoBenchResult r =
      run_io_bench(pack, o, [&](const ExpertPack&, const IoBenchOptions&, const IoBenchPlan& plan) {
        EXPECT_EQ(plan.rounds.size(), 3u);
        VramDeliveryResult v;
        v.raw_pinned = {1000, 1, 1.0};
        v.delivery = {900, 1, 1.0};
        v.ahead = v.delivery;
        // Random ratios 0.9, 0.8 and 1.1; consecutive 1.0, 0.95, 0.5 (bytes/s over raw bytes/s).
        v.rounds.push_back({{1000, 1, 1.0}, {900, 1, 1.0, 2}, {1000, 1, 1.0, 1}});
        v.rounds.push_back({{2000, 1, 1.0}, {800, 1, 0.5}, {1900, 1, 1.0}});
        v.rounds.push_back({{1000, 1, 2.0}, {1100, 1, 2.0}, {500, 1, 2.0}});
        return v;
      });
  ASSERT_EQ(r.rounds.size(), 3u);
  EXPECT_DOUBLE_EQ(r.rounds[0].vram_vs_raw_ratio, 0.9);
  EXPECT_DOUBLE_EQ(r.rounds[1].vram_vs_raw_ratio, 0.8);
  EXPECT_DOUBLE_EQ(r.rounds[2].vram_vs_raw_ratio, 1.1);
  EXPECT_DOUBLE_EQ(r.rounds[1].sequential_vs_raw_ratio, 0.95);
  EXPECT_DOUBLE_EQ(r.rounds_vram_vs_raw.median, 0.9);
  EXPECT_DOUBLE_EQ(r.rounds_vram_vs_raw.min, 0.8);
  EXPECT_DOUBLE_EQ(r.rounds_vram_vs_raw.max, 1.1);
  EXPECT_DOUBLE_EQ(r.rounds_sequential_vs_raw.median, 0.95);
  EXPECT_DOUBLE_EQ(r.rounds_sequential_vs_raw.min, 0.5);
  EXPECT_DOUBLE_EQ(r.rounds_sequential_vs_raw.max, 1.0);
  const auto j = io_bench_to_json(pack, o, r);
  EXPECT_EQ(j["settings"]["rounds"].get<uint32_t>(), 3u);
  EXPECT_EQ(j["settings"]["raw_max_bytes"].get<uint64_t>(), stride);
  ASSERT_EQ(j["rounds"].size(), 3u);
  EXPECT_EQ(j["rounds"][1]["raw_direct"]["bytes"].get<uint64_t>(), 2000u);
  EXPECT_DOUBLE_EQ(j["rounds"][1]["vram_delivery"]["seconds"].get<double>(), 0.5);
  EXPECT_EQ(j["rounds"][1]["vram_sequential"]["bytes"].get<uint64_t>(), 1900u);
  EXPECT_EQ(j["rounds"][0]["vram_delivery"]["acquires"].get<uint64_t>(), 2u);  // counted: reported
  EXPECT_EQ(j["rounds"][0]["vram_sequential"]["acquires"].get<uint64_t>(), 1u);
  EXPECT_FALSE(j["rounds"][0]["raw_direct"].contains("acquires"));
  EXPECT_DOUBLE_EQ(j["rounds"][2]["vram_vs_raw_ratio"].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(j["rounds"][2]["sequential_vs_raw_ratio"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["rounds_vram_vs_raw_ratio"]["median"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(j["rounds_vram_vs_raw_ratio"]["min"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(j["rounds_vram_vs_raw_ratio"]["max"].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(j["rounds_sequential_vs_raw_ratio"]["median"].get<double>(), 0.95);
  // No rounds asked: no such keys.
  o.rounds = 0;
  EXPECT_FALSE(io_bench_to_json(pack, o, run_io_bench(pack, o)).contains("rounds"));
  fs::remove_all(dir);
}
