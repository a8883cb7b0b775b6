#include "tests/gpu/kernel_parity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "gpu/cuda_check.h"

namespace moepack::test {

std::vector<float> randn(size_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Dev up(const std::vector<float>& v) {
  Dev d;
  d.n = v.size();
  d.buf.allocate(std::max<size_t>(v.size(), 1) * sizeof(float), "test buffer");
  if (!v.empty())
    MOEPACK_CUDA_CHECK(cudaMemcpy(d.p(), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

Dev zeros(size_t n) { return up(std::vector<float>(n, 0.0f)); }

gpu::DeviceBuffer up_i32(const std::vector<int32_t>& v) {
  gpu::DeviceBuffer b;
  b.allocate(std::max<size_t>(v.size(), 1) * sizeof(int32_t), "test buffer");
  if (!v.empty())
    MOEPACK_CUDA_CHECK(
        cudaMemcpy(b.as<int32_t>(), v.data(), v.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  return b;
}

std::vector<float> down(const Dev& d) {
  MOEPACK_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> v(d.n);
  if (d.n) MOEPACK_CUDA_CHECK(cudaMemcpy(v.data(), d.p(), d.n * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                  float rel) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float worst = 0.0f;
  int64_t first = -1, bad = 0, exact = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float d = std::fabs(got[i] - want[i]);
    const bool ok = d <= rel * std::max(1.0f, std::fabs(want[i]));  // NaN fails
    if (!ok) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
    }
    if (got[i] == want[i]) ++exact;
    if (!(d <= worst)) worst = d;
  }
  std::ostringstream m;
  m << what << ": " << want.size() << " values (" << exact << " bit-equal), max |gpu - cpu| " << worst;
  if (first >= 0) {
    m << ", " << bad << " beyond tolerance, first at index " << first << " (gpu "
      << got[static_cast<size_t>(first)] << ", cpu " << want[static_cast<size_t>(first)] << ")";
  }
  EXPECT_LT(first, 0) << m.str();
  std::printf("  %s\n", m.str().c_str());
}

void expect_nontrivial(const std::vector<float>& v, const std::string& what) {
  float mx = 0.0f;
  for (float x : v) mx = std::max(mx, std::fabs(x));
  EXPECT_GT(mx, 1e-3f) << what << " is (nearly) all zero";
}

}  // namespace moepack::test
