// Elementwise and row-wise kernels of the common transformer block: RMSNorm, SwiGLU, the
// residual add and the weighted combine of expert outputs. CPU twins: core/cpu_ops.h.
#include <algorithm>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels.h"
#include "gpu/swiglu.cuh"

namespace moepack::gpu {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// One block per row: sum of squares in double (as ggml and cpu_ops rms_norm), then
// scale = 1 / sqrtf(mean + eps) in float (IEEE sqrt and division: nvcc's defaults). ADD: the
// row of y (plus y2's, added to it first) is added to x's first (add_rms_norm); each thread
// adds, stores and squares the same elements it later scales, so no barrier is needed between
// the add and the norm.
template <bool ADD>
__global__ void rms_norm_kernel(float* x_rw, const float* x, int64_t x_stride, const float* y,
                                const float* y2, const float* w, int64_t n, float eps, float* out,
                                int64_t out_stride) {
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * x_stride;
  float* orow = out + static_cast<int64_t>(blockIdx.x) * out_stride;
  double sum = 0.0;
  if constexpr (ADD) {
    float* xw = x_rw + static_cast<int64_t>(blockIdx.x) * x_stride;
    const float* yr = y + static_cast<int64_t>(blockIdx.x) * x_stride;
    const float* y2r = y2 ? y2 + static_cast<int64_t>(blockIdx.x) * x_stride : nullptr;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = xw[i] + (y2r ? yr[i] + y2r[i] : yr[i]);
      xw[i] = v;
      sum += static_cast<double>(v) * static_cast<double>(v);
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      sum += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
    }
  }
  __shared__ double part[kThreads / 32];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = sum;
  __syncthreads();
  __shared__ float scale;
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int i = 0; i < kThreads / 32; ++i) total += part[i];
    const float mean = static_cast<float>(total / static_cast<double>(n));
    scale = 1.0f / sqrtf(mean + eps);
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = xr[i] * scale;
    orow[i] = w ? v * w[i] : v;
  }
}

__global__ void swiglu_kernel(const float* gate, const float* up, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = swiglu_one(gate[i], up[i]);
}

__global__ void swiglu_clamped_kernel(const float* gate, const float* up, int64_t n, float limit, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = swiglu_clamped_one(gate[i], up[i], limit);
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void copy_row_kernel(float* dst_base, int64_t dst_stride, const float* src, int64_t width,
                                const int32_t* pos_dev) {
  float* dst = dst_base + static_cast<int64_t>(*pos_dev) * dst_stride;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

__global__ void combine_kernel(const float* y, const int32_t* pair_of, const float* weight, int32_t K, int64_t E,
                               float* out) {
  const int t = static_cast<int>(blockIdx.y);
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= E) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += weight[t * K + k] * y[static_cast<int64_t>(pair_of[t * K + k]) * E + e];
  }
  out[static_cast<int64_t>(t) * E + e] = acc;
}

}  // namespace

void rms_norm(const float* x, int64_t x_stride, const float* w, int64_t n, float eps, float* out, int64_t out_stride,
              int64_t n_rows, cudaStream_t s) {
  if (n_rows <= 0) return;
  rms_norm_kernel<false><<<static_cast<unsigned>(n_rows), kThreads, 0, s>>>(
      nullptr, x, x_stride, nullptr, nullptr, w, n, eps, out, out_stride);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void add_rms_norm(float* x, const float* y, const float* y2, const float* w, int64_t n, float eps, float* out,
                  int64_t n_rows, cudaStream_t s) {
  if (n_rows <= 0) return;
  rms_norm_kernel<true><<<static_cast<unsigned>(n_rows), kThreads, 0, s>>>(x, x, n, y, y2, w, n, eps, out, n);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void swiglu(const float* gate, const float* up, int64_t n, float* out, cudaStream_t s) {
  if (n <= 0) return;
  swiglu_kernel<<<blocks_for(n), kThreads, 0, s>>>(gate, up, n, out);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void swiglu_clamped(const float* gate, const float* up, int64_t n, float limit, float* out, cudaStream_t s) {
  if (!(limit > 1e-6f)) return swiglu(gate, up, n, out, s);
  if (n <= 0) return;
  swiglu_clamped_kernel<<<blocks_for(n), kThreads, 0, s>>>(gate, up, n, limit, out);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void copy_row_to_position(float* dst_base, int64_t dst_stride, const float* src, int64_t width,
                          const int32_t* pos_dev, cudaStream_t s) {
  if (width <= 0) return;
  copy_row_kernel<<<std::min<unsigned>(blocks_for(width), 64), kThreads, 0, s>>>(dst_base, dst_stride, src,
                                                                                 width, pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void add_inplace(float* x, const float* y, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void combine_experts(const float* y, const int32_t* pair_of, const float* weight, int32_t n_tok, int32_t K, int64_t E,
                     float* out, cudaStream_t s) {
  if (n_tok <= 0) return;
  if (n_tok > 65535) throw Error("combine_experts: more than 65535 tokens in one launch");
  combine_kernel<<<dim3(blocks_for(E), static_cast<unsigned>(n_tok)), kThreads, 0, s>>>(y, pair_of, weight, K, E, out);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
