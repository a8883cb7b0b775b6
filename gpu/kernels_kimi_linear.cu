// CUDA kernels of the `kimi-linear` KDA block (kernels_kimi_linear.h): short causal convolution
// + SiLU, per-head L2 norm, decay / gate / beta, the delta-rule recurrence and the output norm
// and gate. CPU twins: core/kimi_linear_ops.h. Built with --fmad=false; each output element is
// computed in the twin's order of operations.
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels_kimi_linear.h"

namespace moepack::gpu {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void require(bool ok, const char* launcher, const std::string& what) {
  if (!ok) throw Error(std::string(launcher) + ": " + what);
}

__device__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }
// cpu_ops.h softplus: x above 20, else log1p(exp(x)).
__device__ float softplusf_(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// core's dot_f32: eight partial sums (k mod 8), then ((0+1)+(2+3))+((4+5)+(6+7)).
__device__ float dot_f32_dev(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] += a[k + j] * b[k + j];
  }
  for (; k < n; ++k) acc[k % 8] += a[k] * b[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

__global__ void conv_silu_kernel(const float* ext, int64_t ext_gstride, const float* W, int64_t w_gstride,
                                 int64_t n, int64_t d_in, int64_t w, int32_t n_groups, float* out,
                                 int64_t out_gstride) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<int64_t>(n_groups) * n * d_in) return;
  const int64_t g = i / (n * d_in), r = i % (n * d_in), t = r / d_in, c = r % d_in;
  const float* e = ext + g * ext_gstride;
  const float* wc = W + g * w_gstride + c * w;
  float acc = 0.0f;
  for (int64_t j = 0; j < w; ++j) acc += wc[j] * e[(t + j) * d_in + c];
  out[g * out_gstride + t * d_in + c] = acc / (1.0f + expf(-acc));
}

__global__ void l2_norm_kernel(float* x, int64_t n_rows, int64_t d, float eps) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= n_rows) return;
  float* p = x + r * d;
  const float nrm = sqrtf(dot_f32_dev(p, p, d));
  const float inv = 1.0f / fmaxf(nrm, eps);
  for (int64_t i = 0; i < d; ++i) p[i] *= inv;
}

__global__ void gates_kernel(float* decay, float* gate, float* beta, int64_t n, int64_t H, int64_t d,
                             const float* A, const float* dt_bias) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t d_in = H * d;
  if (i < n * d_in) {
    const int64_t c = i % d_in;
    decay[i] = expf(A[c / d] * softplusf_(decay[i] + dt_bias[c]));
    gate[i] = sigmoidf_(gate[i]);
  }
  if (i < n * H) beta[i] = sigmoidf_(beta[i]);
}

// Block h, thread j: column j of S_h. Per token: k, q, α of the head in shared memory.
__global__ void recurrence_kernel(float* S, const float* q, const float* k, const float* v,
                                  const float* alpha, const float* beta, int64_t n, int64_t H, int64_t d,
                                  float scale, float* o) {
  extern __shared__ float sh[];  // ks [d], qs [d], as [d]
  float* ks = sh;
  float* qs = sh + d;
  float* as = sh + 2 * d;
  const int64_t h = blockIdx.x, j = threadIdx.x, d_in = H * d;
  float* Sh = S + h * d * d;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t base = t * d_in + h * d;
    __syncthreads();  // the previous token's reads of ks / qs / as are done
    ks[j] = k[base + j];
    qs[j] = q[base + j];
    as[j] = alpha[base + j];
    __syncthreads();
    // Decay along the key axis, then δ[j] = β (v[j] − Σ_i S[i][j] k[i]) in i order.
    float dl = v[base + j];
    for (int64_t i = 0; i < d; ++i) {
      const float s = Sh[i * d + j] * as[i];
      Sh[i * d + j] = s;
      dl -= s * ks[i];
    }
    dl *= beta[t * H + h];
    float acc = 0.0f;
    for (int64_t i = 0; i < d; ++i) {
      const float s = Sh[i * d + j] + ks[i] * dl;
      Sh[i * d + j] = s;
      acc += s * qs[i];
    }
    o[base + j] = acc * scale;
  }
}

constexpr int kNormThreads = 128;

__global__ void output_norm_gate_kernel(float* o, const float* norm, const float* gate, int64_t d,
                                        float eps) {
  float* p = o + static_cast<int64_t>(blockIdx.x) * d;
  const float* g = gate + static_cast<int64_t>(blockIdx.x) * d;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
    sum += static_cast<double>(p[i]) * static_cast<double>(p[i]);
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  __shared__ double part[kNormThreads / 32];
  __shared__ float scale;
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int i = 0; i < kNormThreads / 32; ++i) total += part[i];
    const float mean = static_cast<float>(total / static_cast<double>(d));
    scale = 1.0f / sqrtf(mean + eps);
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) p[i] = ((p[i] * scale) * norm[i]) * g[i];
}

}  // namespace

void kda_conv_silu(const float* ext, int64_t ext_gstride, const float* W, int64_t w_gstride, int64_t n,
                   int64_t d_in, int64_t w, int32_t n_groups, float* out, int64_t out_gstride,
                   cudaStream_t s) {
  require(w >= 1 && w <= 16, "kda_conv_silu", "conv kernel " + std::to_string(w) + " outside 1..16");
  require(
      n_groups >= 1 && ext_gstride >= (w - 1 + n) * d_in && out_gstride >= n * d_in && w_gstride >= d_in * w,
      "kda_conv_silu",
      "strides too small for n " + std::to_string(n) + ", d_in " + std::to_string(d_in) + ", w " +
          std::to_string(w));
  if (n <= 0 || d_in <= 0) return;
  conv_silu_kernel<<<blocks_for(n_groups * n * d_in), kThreads, 0, s>>>(ext, ext_gstride, W, w_gstride, n,
                                                                        d_in, w, n_groups, out, out_gstride);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void kda_l2_norm(float* x, int64_t n_rows, int64_t d, float eps, cudaStream_t s) {
  require(d >= 1, "kda_l2_norm", "row width " + std::to_string(d));
  if (n_rows <= 0) return;
  l2_norm_kernel<<<blocks_for(n_rows), kThreads, 0, s>>>(x, n_rows, d, eps);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void kda_gates(float* decay, float* gate, float* beta, int64_t n, int64_t H, int64_t d, const float* A,
               const float* dt_bias, cudaStream_t s) {
  require(H >= 1 && d >= 1, "kda_gates", "H " + std::to_string(H) + ", d " + std::to_string(d));
  if (n <= 0) return;
  gates_kernel<<<blocks_for(n * H * d), kThreads, 0, s>>>(decay, gate, beta, n, H, d, A, dt_bias);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void kda_recurrence(float* S, const float* q, const float* k, const float* v, const float* alpha,
                    const float* beta, int64_t n, int64_t H, int64_t d, float* o, cudaStream_t s) {
  require(d >= 1 && d <= 1024, "kda_recurrence", "head size " + std::to_string(d) + " outside 1..1024");
  require(H >= 1 && H <= 65535, "kda_recurrence", "heads " + std::to_string(H) + " outside 1..65535");
  if (n <= 0) return;
  const float scale = 1.0f / sqrtf(static_cast<float>(d));  // the CPU's 1.0f / std::sqrt(float(d))
  recurrence_kernel<<<static_cast<unsigned>(H), static_cast<unsigned>(d),
                      static_cast<size_t>(3 * d) * sizeof(float), s>>>(S, q, k, v, alpha, beta, n, H, d,
                                                                       scale, o);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void kda_output_norm_gate(float* o, const float* norm, const float* gate, int64_t n_rows, int64_t d,
                          float eps, cudaStream_t s) {
  require(d >= 1, "kda_output_norm_gate", "row width " + std::to_string(d));
  require(n_rows <= 0x7fffffff, "kda_output_norm_gate", std::to_string(n_rows) + " rows");
  if (n_rows <= 0) return;
  output_norm_gate_kernel<<<static_cast<unsigned>(n_rows), kNormThreads, 0, s>>>(o, norm, gate, d, eps);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
