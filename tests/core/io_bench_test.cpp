// run_io_bench reads exactly what it says it reads, on a pack built from a fixture.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/expert_pack.h"
#include "core/io_bench.h"
#include "packbuilder/pack_builder.h"

namespace fs = std::filesystem;
using namespace moepack;

TEST(IoBench, CountsAndRatiosAreConsistent) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-iobench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  BuildOptions b;
  b.source = std::string(MOEPACK_SHARED_DIR) + "/fixtures/qwen3moe-tiny/qwen3moe-tiny-MXFP4_MOE.gguf";
  b.out_dir = (dir / "pack").string();
  build_pack(b);
  const ExpertPack pack = ExpertPack::open(b.out_dir);
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
  const auto j = io_bench_to_json(pack, o, r);
  EXPECT_EQ(j["expert_direct"]["bytes"].get<uint64_t>(), 40u * 106496);
  EXPECT_TRUE(j.contains("expert_vs_raw_ratio"));
  fs::remove_all(dir);
}
