// A kernel that writes through a bad device address, for device_lost_test.cpp: the CUDA
// context is unusable afterwards (a sticky error), so it runs in its own test process.
#include <cuda_runtime.h>

#include <cstdint>

namespace {
__global__ void write_through(int* p) { *p = 1; }
}  // namespace

void moepack_test_launch_illegal_write() {
  write_through<<<1, 1>>>(reinterpret_cast<int*>(static_cast<uintptr_t>(8)));
}
