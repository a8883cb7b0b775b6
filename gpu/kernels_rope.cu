// RoPE on the GPU from a cos/sin table the host computes with core's rope_table() (cpu_ops.h:
// NORM and NEOX styles, YaRN per arXiv:2309.00071 as ggml implements it). The backend builds
// the table once for every position of its context, so GPU and CPU rotate with the very same
// cos/sin values; the rotation itself is rope_apply's two products and a sum.
#include <algorithm>

#include "gpu/cuda_check.h"
#include "gpu/kernels.h"

namespace moepack::gpu {
namespace {

__global__ void rope_kernel(float* x, int64_t tok_stride, int64_t n_heads, int64_t head_stride,
                            const float* cs_table, int64_t pos0, const int32_t* pos_dev, int n_dims,
                            bool neox) {
  const int64_t t = blockIdx.y;
  const int half = n_dims / 2;
  const float* cs = cs_table + ((pos_dev ? *pos_dev : pos0) + t) * n_dims;
  const int64_t total = n_heads * half;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t h = k / half;
    const int i = static_cast<int>(k % half);  // pair index: i0 = 2i
    float* v = x + t * tok_stride + h * head_stride;
    const float c = cs[2 * i], s = cs[2 * i + 1];
    const int a = neox ? i : 2 * i;
    const int b = neox ? i + half : 2 * i + 1;
    const float x0 = v[a], x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x0 * s + x1 * c;
  }
}

}  // namespace

void rope(float* x, int64_t n_tok, int64_t tok_stride, int64_t n_heads, int64_t head_stride,
          const float* cs_table, int64_t pos0, int n_dims, bool neox, cudaStream_t s,
          const int32_t* pos_dev) {
  if (n_tok <= 0 || n_dims <= 0) return;
  const int64_t total = n_heads * (n_dims / 2);
  const unsigned bx = static_cast<unsigned>(std::min<int64_t>((total + 127) / 128, 1024));
  rope_kernel<<<dim3(bx, static_cast<unsigned>(n_tok)), 128, 0, s>>>(x, tok_stride, n_heads, head_stride,
                                                                     cs_table, pos0, pos_dev, n_dims, neox);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
