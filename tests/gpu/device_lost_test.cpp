// A CUDA sticky error becomes moepack::DeviceLostError (the studio's restart offer depends on
// it); an ordinary CUDA error stays a plain moepack::Error. Its own process: after the illegal
// access the CUDA context cannot be used again.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "gpu/cuda_check.h"
#include "gpu/cuda_resources.h"
#include "gpu_test_main.h"

void moepack_test_launch_illegal_write();

namespace {

using moepack::DeviceLostError;
using moepack::Error;

TEST(DeviceLost, StickyErrorsAreTheOnesTheRuntimeDocumentsAsFatal) {
  using moepack::gpu::is_sticky_cuda_error;
  EXPECT_TRUE(is_sticky_cuda_error(cudaErrorIllegalAddress));
  EXPECT_TRUE(is_sticky_cuda_error(cudaErrorLaunchFailure));
  EXPECT_TRUE(is_sticky_cuda_error(cudaErrorAssert));
  EXPECT_FALSE(is_sticky_cuda_error(cudaErrorMemoryAllocation));
  EXPECT_FALSE(is_sticky_cuda_error(cudaErrorInvalidValue));
  EXPECT_FALSE(is_sticky_cuda_error(cudaSuccess));
}

TEST(DeviceLost, AnIllegalAddressInAKernelThrowsDeviceLostError) {
  // An ordinary failure first: asking for far more memory than exists is a plain Error, and
  // the device still works afterwards.
  void* p = nullptr;
  try {
    MOEPACK_CUDA_CHECK(cudaMalloc(&p, size_t{1} << 50));
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const DeviceLostError& e) {
    FAIL() << "out of memory is not sticky: " << e.what();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
  cudaGetLastError();
  MOEPACK_CUDA_CHECK(cudaMalloc(&p, 256));
  MOEPACK_CUDA_CHECK(cudaFree(p));

  moepack_test_launch_illegal_write();
  try {
    MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
    FAIL() << "the illegal write was not reported";
  } catch (const DeviceLostError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cudaDeviceSynchronize"), std::string::npos) << m;
    EXPECT_NE(m.find("device_lost_test.cpp"), std::string::npos) << m;
    EXPECT_NE(m.find("restarted"), std::string::npos) << m;
  }
  // Sticky: every later call fails the same way, including the VRAM allocations the backend
  // makes through DeviceBuffer (which must not call a lost context "out of VRAM").
  EXPECT_THROW(MOEPACK_CUDA_CHECK(cudaMalloc(&p, 256)), DeviceLostError);
  EXPECT_THROW(moepack::gpu::DeviceBuffer(4096, "after the fault"), DeviceLostError);
}

}  // namespace

MOEPACK_GPU_TEST_MAIN()
