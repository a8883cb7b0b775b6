// The CUDA toolkit, driver and device work together: device discovery reports sane numbers
// and a kernel computes what the host expects. Exits 77 (skipped) where there is no GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>

#include "gpu/device_info.h"

namespace {

TEST(GpuDevice, ReportsMemoryAndComputeCapability) {
  const auto q = moepack::gpu::query_devices();
  ASSERT_FALSE(q.devices.empty()) << q.error;
  for (const auto& d : q.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.compute_major, 7);
    EXPECT_GT(d.total_bytes, 1ull << 30);
    EXPECT_LE(d.free_bytes, d.total_bytes);
    EXPECT_GT(d.free_bytes, 0u);
    EXPECT_GT(d.multiprocessors, 0);
    // As nvidia-smi -L prints it (the device call prints both to compare).
    EXPECT_TRUE(std::regex_match(
        d.uuid, std::regex("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")))
        << d.uuid;
    EXPECT_NE(d.uuid, "GPU-00000000-0000-0000-0000-000000000000");
    std::printf("GPU %d: %s (UUID: %s)\n", d.index, d.name.c_str(), d.uuid.c_str());
  }
  EXPECT_GE(q.runtime_version, 12000);
}

TEST(GpuDevice, KernelComputesAffineFill) {
  EXPECT_TRUE(moepack::gpu::self_test(0));
}

// This build runs on the device at hand (gpu/cuda_arch.h): the suite's own GPU (compute capability 9.0 or
// later, built for it); open_cuda_device makes device 0 current without throwing.
TEST(GpuDevice, BuildRunsOnThisDevice) {
  const auto q = moepack::gpu::query_devices();
  ASSERT_FALSE(q.devices.empty()) << q.error;
  std::printf("built for %s; device 0 compute capability %d.%d\n",
              moepack::gpu::built_cuda_architectures().c_str(), q.devices[0].compute_major,
              q.devices[0].compute_minor);
  EXPECT_EQ(moepack::gpu::device_unsupported(q.devices[0]), "");
  EXPECT_EQ(moepack::gpu::first_device_unsupported(q), "");
  EXPECT_NO_THROW(moepack::gpu::open_cuda_device());
}

}  // namespace

int main(int argc, char** argv) {
  const auto q = moepack::gpu::query_devices();
  if (q.devices.empty()) {
    std::fprintf(stderr, "no CUDA device (%s): skipping GPU tests\n", q.error.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
