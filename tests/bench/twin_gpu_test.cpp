// bench-twin's CUDA path (gpu/twin_gpu.h) against its CPU path (bench/twin_bench.h) on the same
// tiny twins: identical hits, misses, evictions and SSD bytes (same cache, same acquire order),
// and the same final hidden vectors (checksum within float rounding: the GPU's quantized GEMV
// kernels vs core's CPU ones on the twin's MXFP4 / Q2_K+Q3_K / Q4_K blocks), for --serial and the
// overlapped default. Exits 77 (skipped) where no CUDA device is usable.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "bench/twin_bench.h"
#include "bench/twin_pack.h"
#include "gpu/twin_gpu.h"
#include "tests/gpu/gpu_test_main.h"

namespace moepack::bench {
namespace {

namespace fs = std::filesystem;

TEST(GpuTwinBench, CountsAndOutputsMatchTheCpu) {
  const fs::path dir = fs::temp_directory_path() / ("moepack-gpu-twin-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* shape : {"deepseek-v4-flash", "kimi-k3", "deepseek-v3"}) {
    SCOPED_TRACE(shape);
    const TwinShape& sh = *find_twin_shape(shape);
    TwinOptions w;
    w.shape = shape;
    w.layers = 2;
    w.experts = sh.top_k + 2;
    w.out_dir = (dir / shape).string();
    w.safety_margin_bytes = 0;
    write_twin_pack(w);
    for (bool serial : {true, false}) {
      TwinBenchOptions o;
      o.pack_dir = w.out_dir;
      o.zipf_s = 1.0;
      o.tokens = 6;
      o.serial = serial;
      o.budget_bytes = (sh.top_k + 3) * twin_expert_bytes(sh);  // evictions happen
      TwinBenchSetup a = prepare_twin_bench(o);
      const TwinRunResult cpu = run_twin_bench_cpu(o, a);
      o.backend = "cuda";
      TwinBenchSetup b = prepare_twin_bench(o);
      const TwinRunResult gpu = gpu::run_twin_bench_cuda(o, b);
      EXPECT_EQ(gpu.slots, cpu.slots);
      EXPECT_EQ(gpu.all.selections, cpu.all.selections);
      EXPECT_EQ(gpu.all.hits, cpu.all.hits);
      EXPECT_EQ(gpu.all.misses, cpu.all.misses);
      EXPECT_EQ(gpu.all.evictions, cpu.all.evictions);
      EXPECT_EQ(gpu.all.ssd_bytes, cpu.all.ssd_bytes);
      EXPECT_GT(cpu.all.evictions, 0u);
      // 6 steps of an RMS-normalised n_embd vector, weights |(i mod 7) - 3| <= 3.
      EXPECT_NEAR(gpu.checksum, cpu.checksum, 1e-4 * 6 * static_cast<double>(sh.n_embd)) << serial;
      EXPECT_NE(cpu.checksum, 0.0);
      // A host-RAM tier asked for more than the twin holds is capped at its experts, and then
      // holds every expert the VRAM slots do not: the same hits, misses and output; each expert
      // read from the SSD at most once, the rest copied back up.
      o.ram_tier_bytes = 2 * uint64_t{w.layers} * w.experts * twin_expert_bytes(sh);
      TwinBenchSetup c = prepare_twin_bench(o);
      const TwinRunResult ram = gpu::run_twin_bench_cuda(o, c);
      EXPECT_EQ(ram.all.hits, cpu.all.hits);
      EXPECT_EQ(ram.all.misses, cpu.all.misses);
      EXPECT_LE(ram.all.ssd_bytes, uint64_t{w.layers} * w.experts * twin_expert_bytes(sh));
      EXPECT_LT(ram.all.ssd_bytes, cpu.all.ssd_bytes);
      EXPECT_GT(ram.extra.at("ram_tier_hits").get<uint64_t>(), 0u);
      EXPECT_EQ(ram.extra.at("ram_tier_slots").get<uint32_t>(), w.layers * w.experts);
      EXPECT_NEAR(ram.checksum, gpu.checksum, 1e-6 * 6 * static_cast<double>(sh.n_embd)) << serial;
    }
    fs::remove_all(dir / shape);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moepack::bench

MOEPACK_GPU_TEST_MAIN()
