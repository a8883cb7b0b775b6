// A kernel of exactly 1,024 bytes of static shared memory (256 floats, each used), for gpu_ops_test's
// check of detail::max_dynamic_smem: a block's opt-in maximum less those bytes.
#include <cuda_runtime.h>

namespace {
__global__ void reverse_256(float* out) {
  __shared__ float buf[256];
  buf[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = buf[255 - threadIdx.x];
}
}  // namespace

const void* moepack_test_static_smem_kernel() { return reinterpret_cast<const void*>(reverse_256); }
