// main() of the gpu-labelled tests: exits 77 (CTest "skipped") where no CUDA device is usable.
// MOEPACK_GPU_TEST_MAIN_WITH_CUDA_BACKEND: the same, plus the "cuda" backend registered for
// make_backend / Session (gpu/cuda_backend.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "gpu/cuda_backend.h"
#include "gpu/device_info.h"

#define MOEPACK_GPU_TEST_MAIN_IMPL(register_backends)                                     \
  int main(int argc, char** argv) {                                                       \
    const auto q = moepack::gpu::query_devices();                                         \
    if (q.devices.empty()) {                                                              \
      std::fprintf(stderr, "no CUDA device (%s): skipping GPU tests\n", q.error.c_str()); \
      return 77;                                                                          \
    }                                                                                     \
    if (register_backends) moepack::gpu::register_cuda_backend();                         \
    ::testing::InitGoogleTest(&argc, argv);                                               \
    return RUN_ALL_TESTS();                                                               \
  }
#define MOEPACK_GPU_TEST_MAIN() MOEPACK_GPU_TEST_MAIN_IMPL(false)
#define MOEPACK_GPU_TEST_MAIN_WITH_CUDA_BACKEND() MOEPACK_GPU_TEST_MAIN_IMPL(true)
