// CUDA kernels of the `deepseek4` block's own operations (kernels_deepseek4.h): hyper-connection
// weights (Sinkhorn), stream collapse / expansion, the KV compressors' history and pooling, RoPE
// at strided positions, the lightning indexer's scores and the sliding-window + compressed
// attention with sinks. CPU twins: core/deepseek4_ops.h. Every output element is computed by one
// thread in the CPU twin's order of operations (built with --fmad=false), so the only
// differences are expf's and the division's last-bit rounding.
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels_deepseek4.h"

namespace moepack::gpu {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

void require(bool ok, const char* launcher, const std::string& what) {
  if (!ok) throw Error(std::string(launcher) + ": " + what);
}

__device__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

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

__global__ void hc_weights_kernel(const float* mix, int64_t n, const float* base, const float* scale, int HC,
                                  uint32_t iters, float eps, float* pre, float* post, float* M) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const float* m = mix + t * (2 + HC) * HC;
  float* Mt = M + t * HC * HC;
  for (int s = 0; s < HC; ++s) {
    pre[t * HC + s] = sigmoidf_(m[s] * scale[0] + base[s]) + eps;
    post[t * HC + s] = 2.0f * sigmoidf_(m[HC + s] * scale[1] + base[HC + s]);
  }
  float W[64];
  for (int src = 0; src < HC; ++src) {
    float l[8], mx = -INFINITY;
    for (int dst = 0; dst < HC; ++dst) {
      const int i = 2 * HC + HC * src + dst;
      l[dst] = m[i] * scale[2] + base[i];
      mx = fmaxf(mx, l[dst]);
    }
    float sum = 0.0f;
    for (int dst = 0; dst < HC; ++dst) sum += (l[dst] = expf(l[dst] - mx));
    for (int dst = 0; dst < HC; ++dst) W[dst * HC + src] = l[dst] / sum + eps;
  }
  // Rows once, then (columns, rows) iters - 1 times: ds4::hc_weights's order.
  for (uint32_t it = 0; it == 0 || it < iters; ++it) {
    if (it > 0) {
      for (int src = 0; src < HC; ++src) {
        float sum = 0.0f;
        for (int dst = 0; dst < HC; ++dst) sum += W[dst * HC + src];
        for (int dst = 0; dst < HC; ++dst) W[dst * HC + src] /= sum + eps;
      }
    }
    for (int dst = 0; dst < HC; ++dst) {
      float sum = 0.0f;
      for (int src = 0; src < HC; ++src) sum += W[dst * HC + src];
      for (int src = 0; src < HC; ++src) W[dst * HC + src] /= sum + eps;
    }
  }
  for (int i = 0; i < HC * HC; ++i) Mt[i] = W[i];
}

__global__ void head_weights_kernel(const float* mix, int64_t total, const float* base, const float* scale,
                                    int HC, float eps, float* pre) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) pre[i] = sigmoidf_(mix[i] * scale[0] + base[i % HC]) + eps;
}

__global__ void hc_collapse_kernel(const float* S, const float* pre, int64_t n, int HC, int64_t E, float* h) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * E) return;
  const int64_t t = i / E, c = i % E;
  float acc = 0.0f;
  for (int s = 0; s < HC; ++s) acc += pre[t * HC + s] * S[(t * HC + s) * E + c];
  h[i] = acc;
}

__global__ void hc_expand_kernel(float* S, const float* y, const float* post, const float* M, int64_t n,
                                 int HC, int64_t E) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * E) return;
  const int64_t t = i / E, c = i % E;
  float src_v[8], out[8];
  for (int s = 0; s < HC; ++s) src_v[s] = S[(t * HC + s) * E + c];
  const float* Mt = M + t * HC * HC;
  for (int dst = 0; dst < HC; ++dst) {
    float o = post[t * HC + dst] * y[t * E + c];
    for (int src = 0; src < HC; ++src) o += Mt[dst * HC + src] * src_v[src];
    out[dst] = o;
  }
  for (int dst = 0; dst < HC; ++dst) S[(t * HC + dst) * E + c] = out[dst];
}

__global__ void comp_store_kernel(const float* ta, const float* tg, const float* ape, int64_t n, int64_t pos0,
                                  int64_t m, int64_t ring, int64_t cd, float* a, float* g) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * cd) return;
  const int64_t t = i / cd, k = i % cd, p = pos0 + t;
  const int64_t slot = (p % ring) * cd + k;
  a[slot] = ta[i];
  g[slot] = tg[i] + ape[(p % m) * cd + k];
}

__global__ void compress_pool_kernel(const float* a, const float* g, int64_t ring, int64_t d, int64_t c,
                                     int64_t m, int64_t b0, int64_t nb, float* kappa) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= nb * d) return;
  const int64_t r = i / d, ch = i % d, s = (b0 + r) * m, cd = c * d;
  const int64_t first = (c == 2 && s >= m) ? s - m : s;
  float mx = -INFINITY;
  for (int64_t j = first; j < s + m; ++j) {
    mx = fmaxf(mx, g[(j % ring) * cd + ((j >= s && c == 2) ? d : 0) + ch]);
  }
  float sum = 0.0f, acc = 0.0f;
  for (int64_t j = first; j < s + m; ++j) {
    const int64_t at = (j % ring) * cd + ((j >= s && c == 2) ? d : 0) + ch;
    const float w = expf(g[at] - mx);
    sum += w;
    acc += w * a[at];
  }
  kappa[i] = acc / sum;
}

__global__ void rope_rows_kernel(float* x, int64_t n_rows, int64_t row_stride, int64_t n_heads,
                                 int64_t head_stride, const float* cs_table, int64_t pos_first,
                                 int64_t pos_step, int n_dims, bool neox) {
  const int half = n_dims / 2;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * n_heads * half) return;
  const int64_t r = i / (n_heads * half), h = (i / half) % n_heads;
  const int k = static_cast<int>(i % half);
  const float* cs = cs_table + (pos_first + r * pos_step) * n_dims;
  float* v = x + r * row_stride + h * head_stride;
  const float c = cs[2 * k], s = cs[2 * k + 1];
  const int ia = neox ? k : 2 * k;
  const int ib = neox ? k + half : 2 * k + 1;
  const float x0 = v[ia], x1 = v[ib];
  v[ia] = x0 * c - x1 * s;
  v[ib] = x0 * s + x1 * c;
}

// One block of 32 threads per (row r, token t): per-head terms into shared memory, then one
// thread sums them in head order (as ds4::indexer_score).
__global__ void indexer_scores_kernel(const float* q, const float* w, int64_t HI, int64_t DI,
                                      const float* rows, int64_t pos0, float wscale, float* scores,
                                      int64_t stride) {
  extern __shared__ float term[];
  const int64_t r = blockIdx.x, t = blockIdx.y;
  const int64_t nvis = (pos0 + t + 1) / 4;
  if (r >= nvis) return;  // uniform per block
  const float* row = rows + r * DI;
  for (int64_t h = threadIdx.x; h < HI; h += blockDim.x) {
    term[h] = w[t * HI + h] * wscale * fmaxf(0.0f, dot_f32_dev(q + (t * HI + h) * DI, row, DI));
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float acc = 0.0f;
    for (int64_t h = 0; h < HI; ++h) acc += term[h];
    scores[t * stride + r] = acc;
  }
}

__device__ const float* attend_key(int64_t j, int64_t nraw, int64_t j0, const float* kraw, int64_t ring_raw,
                                   const float* comp, const int32_t* sel_t, int64_t D) {
  return j < nraw ? kraw + ((j0 + j) % ring_raw) * D : comp + static_cast<int64_t>(sel_t[j - nraw]) * D;
}

// One block per (head h, token t): scores by key (strided over threads), the softmax with the
// sink by one thread in key order, then each output channel by one thread in key order.
__global__ void attend_kernel(const float* q, int64_t H, int64_t D, int64_t pos0, const float* kraw,
                              int64_t ring_raw, int64_t n_swa, const float* comp, const int32_t* sel,
                              int64_t sel_stride, const int32_t* sel_count, const float* sinks,
                              float kq_scale, float* scratch, int64_t max_keys, float* out) {
  const int64_t h = blockIdx.x, t = blockIdx.y, p = pos0 + t;
  const int64_t j0 = p - n_swa + 1 > 0 ? p - n_swa + 1 : 0;
  const int64_t nraw = p - j0 + 1;
  const int64_t nk = nraw + sel_count[t];
  const int32_t* sel_t = sel + t * sel_stride;
  const float* qh = q + (t * H + h) * D;
  float* sc = scratch + (t * H + h) * max_keys;
  for (int64_t j = threadIdx.x; j < nk; j += blockDim.x) {
    sc[j] = dot_f32_dev(qh, attend_key(j, nraw, j0, kraw, ring_raw, comp, sel_t, D), D) * kq_scale;
  }
  __syncthreads();
  __shared__ float total;
  if (threadIdx.x == 0) {
    const float sink = sinks[h];
    float mx = sink;
    for (int64_t j = 0; j < nk; ++j) mx = fmaxf(mx, sc[j]);
    float sum = expf(sink - mx);
    for (int64_t j = 0; j < nk; ++j) sum += (sc[j] = expf(sc[j] - mx));
    total = sum;
  }
  __syncthreads();
  const float sum = total;
  float* oh = out + (t * H + h) * D;
  for (int64_t c = threadIdx.x; c < D; c += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < nk; ++j) {
      const float pj = sc[j] / sum;
      acc += pj * attend_key(j, nraw, j0, kraw, ring_raw, comp, sel_t, D)[c];
    }
    oh[c] = acc;
  }
}

}  // namespace

void ds4_hc_weights(const float* mix, int64_t n, const float* base, const float* scale, int64_t HC,
                    uint32_t iters, float eps, float* pre, float* post, float* M, cudaStream_t s) {
  require(HC >= 1 && HC <= 8, "ds4_hc_weights", "HC " + std::to_string(HC) + " outside 1..8");
  if (n <= 0) return;
  hc_weights_kernel<<<blocks_for(n), kThreads, 0, s>>>(mix, n, base, scale, static_cast<int>(HC), iters, eps,
                                                       pre, post, M);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_head_weights(const float* mix, int64_t n, const float* base, const float* scale, int64_t HC,
                      float eps, float* pre, cudaStream_t s) {
  require(HC >= 1 && HC <= 8, "ds4_head_weights", "HC " + std::to_string(HC) + " outside 1..8");
  if (n <= 0) return;
  head_weights_kernel<<<blocks_for(n * HC), kThreads, 0, s>>>(mix, n * HC, base, scale, static_cast<int>(HC),
                                                              eps, pre);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_hc_collapse(const float* S, const float* pre, int64_t n, int64_t HC, int64_t E, float* h,
                     cudaStream_t s) {
  require(HC >= 1 && HC <= 8, "ds4_hc_collapse", "HC " + std::to_string(HC) + " outside 1..8");
  if (n <= 0 || E <= 0) return;
  hc_collapse_kernel<<<blocks_for(n * E), kThreads, 0, s>>>(S, pre, n, static_cast<int>(HC), E, h);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_hc_expand(float* S, const float* y, const float* post, const float* M, int64_t n, int64_t HC,
                   int64_t E, cudaStream_t s) {
  require(HC >= 1 && HC <= 8, "ds4_hc_expand", "HC " + std::to_string(HC) + " outside 1..8");
  if (n <= 0 || E <= 0) return;
  hc_expand_kernel<<<blocks_for(n * E), kThreads, 0, s>>>(S, y, post, M, n, static_cast<int>(HC), E);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_comp_store(const float* ta, const float* tg, const float* ape, int64_t n, int64_t pos0, int64_t m,
                    int64_t ring, int64_t cd, float* a, float* g, cudaStream_t s) {
  require(m > 0 && ring > 0 && n <= ring && pos0 >= 0, "ds4_comp_store",
          "n " + std::to_string(n) + " m " + std::to_string(m) + " ring " + std::to_string(ring) + " pos0 " +
              std::to_string(pos0));
  if (n <= 0 || cd <= 0) return;
  comp_store_kernel<<<blocks_for(n * cd), kThreads, 0, s>>>(ta, tg, ape, n, pos0, m, ring, cd, a, g);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_compress_pool(const float* a, const float* g, int64_t ring, int64_t d, int64_t c, int64_t m,
                       int64_t b0, int64_t nb, float* kappa, cudaStream_t s) {
  require((c == 1 || c == 2) && m > 0 && b0 >= 0 && c * m <= ring, "ds4_compress_pool",
          "c " + std::to_string(c) + " m " + std::to_string(m) + " ring " + std::to_string(ring) + " b0 " +
              std::to_string(b0));
  if (nb <= 0 || d <= 0) return;
  compress_pool_kernel<<<blocks_for(nb * d), kThreads, 0, s>>>(a, g, ring, d, c, m, b0, nb, kappa);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_rope_rows(float* x, int64_t n_rows, int64_t row_stride, int64_t n_heads, int64_t head_stride,
                   const float* cs_table, int64_t table_rows, int64_t pos_first, int64_t pos_step, int n_dims,
                   bool neox, cudaStream_t s) {
  if (n_rows <= 0 || n_dims <= 0 || n_heads <= 0) return;
  const int64_t last = pos_first + (n_rows - 1) * pos_step;
  require(n_dims % 2 == 0 && pos_first >= 0 && pos_step >= 0 && last < table_rows, "ds4_rope_rows",
          "positions " + std::to_string(pos_first) + ".." + std::to_string(last) + " outside the table's " +
              std::to_string(table_rows) + " rows (n_dims " + std::to_string(n_dims) + ")");
  rope_rows_kernel<<<blocks_for(n_rows * n_heads * (n_dims / 2)), kThreads, 0, s>>>(
      x, n_rows, row_stride, n_heads, head_stride, cs_table, pos_first, pos_step, n_dims, neox);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_indexer_scores(const float* q, const float* w, int64_t n, int64_t HI, int64_t DI, const float* rows,
                        int64_t pos0, float wscale, float* scores, int64_t stride, cudaStream_t s) {
  if (n <= 0) return;
  const int64_t max_rows = (pos0 + n) / 4;
  require(HI > 0 && HI <= 4096 && DI > 0 && stride >= max_rows && n <= 65535, "ds4_indexer_scores",
          "HI " + std::to_string(HI) + " DI " + std::to_string(DI) + " n " + std::to_string(n) + " rows " +
              std::to_string(max_rows) + " stride " + std::to_string(stride));
  if (max_rows <= 0) return;
  indexer_scores_kernel<<<dim3(static_cast<unsigned>(max_rows), static_cast<unsigned>(n)), 32,
                          static_cast<size_t>(HI) * sizeof(float), s>>>(q, w, HI, DI, rows, pos0, wscale,
                                                                        scores, stride);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_attend(const float* q, int64_t n, int64_t H, int64_t D, int64_t pos0, const float* kraw,
                int64_t ring_raw, int64_t n_swa, const float* comp, const int32_t* sel, int64_t sel_stride,
                const int32_t* sel_count, const float* sinks, float kq_scale, float* scratch,
                int64_t max_keys, float* out, cudaStream_t s) {
  if (n <= 0 || H <= 0) return;
  require(D > 0 && D <= 1024 && n_swa > 0 && ring_raw >= n_swa + n - 1 && max_keys >= n_swa + sel_stride &&
              sel_stride >= 0 && n <= 65535 && pos0 >= 0,
          "ds4_attend",
          "D " + std::to_string(D) + " n " + std::to_string(n) + " n_swa " + std::to_string(n_swa) +
              " ring " + std::to_string(ring_raw) + " sel_stride " + std::to_string(sel_stride) +
              " max_keys " + std::to_string(max_keys));
  attend_kernel<<<dim3(static_cast<unsigned>(H), static_cast<unsigned>(n)), 128, 0, s>>>(
      q, H, D, pos0, kraw, ring_raw, n_swa, comp, sel, sel_stride, sel_count, sinks, kq_scale, scratch,
      max_keys, out);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
