// Helpers of the kernel parity tests (a CUDA kernel against its CPU twin on random inputs,
// tests/gpu/deepseek4_test.cpp, kimi_linear_test.cpp): random inputs, device copies, and the
// relative-tolerance comparison that prints its numbers. CUDA failures throw (MOEPACK_CUDA_CHECK).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/cuda_resources.h"

namespace moepack::test {

// n values ~ N(0, sd²) from std::mt19937(seed) (the same values on every machine and run).
std::vector<float> randn(size_t n, float sd, uint32_t seed);

// A float array in VRAM and its length.
struct Dev {
  gpu::DeviceBuffer buf;
  size_t n = 0;
  float* p() const { return buf.as<float>(); }
};

Dev up(const std::vector<float>& v);  // a device copy of v
Dev zeros(size_t n);                  // n zeros on the device
gpu::DeviceBuffer up_i32(const std::vector<int32_t>& v);
// A host copy of d after cudaDeviceSynchronize() (every queued kernel has finished).
std::vector<float> down(const Dev& d);

// The kernel tests' tolerance: each output is computed in its CPU twin's order of operations, so
// only expf / division rounding differ (a few ulp); the test files' headers give the argument.
constexpr float kRel = 1e-5f;

// EXPECTs |got - want| <= rel · max(1, |want|) everywhere (NaN fails); prints and reports the
// count, the bit-equal count, the largest difference and the first value beyond tolerance.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                  float rel = kRel);

// EXPECTs some |v[i]| > 1e-3: the comparison cannot pass on an all-zero output.
void expect_nontrivial(const std::vector<float>& v, const std::string& what);

}  // namespace moepack::test
