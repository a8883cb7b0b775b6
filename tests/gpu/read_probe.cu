#include "tests/gpu/read_probe.h"

namespace moepack::gpu::bench {
namespace {

__global__ void __launch_bounds__(256) read_probe_kernel(const uint4* p, size_t n16, uint32_t* sink) {
  uint32_t acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    const uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride),
                d = __ldcs(p + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n16; i += stride) {
    const uint4 a = __ldcs(p + i);
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;  // almost never taken; keeps every load live
}

}  // namespace

void read_probe(const void* p, size_t bytes, uint32_t* sink, int sm_count, cudaStream_t s) {
  read_probe_kernel<<<static_cast<unsigned>(4 * sm_count), 256, 0, s>>>(static_cast<const uint4*>(p), bytes / 16,
                                                                          sink);
}

}  // namespace moepack::gpu::bench
