// main() of the gpu-labelled tests: exits 77 (CTest "skipped") where no CUDA device is usable.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "gpu/device_info.h"

#define MOEPACK_GPU_TEST_MAIN()                                                               \
  int main(int argc, char** argv) {                                                           \
    const auto q = moepack::gpu::query_devices();                                             \
    if (q.devices.empty()) {                                                                  \
      std::fprintf(stderr, "no CUDA device (%s): skipping GPU tests\n", q.error.c_str());     \
      return 77;                                                                              \
    }                                                                                         \
    ::testing::InitGoogleTest(&argc, argv);                                                   \
    return RUN_ALL_TESTS();                                                                   \
  }
