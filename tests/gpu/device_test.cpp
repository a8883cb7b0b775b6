// The CUDA toolkit, driver and device work together: device discovery reports sane numbers
// and a kernel computes what the host expects. Exits 77 (skipped) where there is no GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

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
  }
  EXPECT_GE(q.runtime_version, 12000);
}

TEST(GpuDevice, KernelComputesAffineFill) {
  EXPECT_TRUE(moepack::gpu::self_test(0));
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
