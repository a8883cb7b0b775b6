// Attention over the F32 KV cache in VRAM: grouped-query attention (llama, qwen3moe) and
// DeepSeek's MLA in its absorbed form (deepseek2). Up to kSplitLen (4096) visible positions:
// one block per (head, token), the scores of all of them in shared memory. Beyond: the
// positions are split into ranges of kSplitLen (one block each) whose softmax partials are
// combined (flash-decoding), so the context is limited by the KV cache's VRAM alone. A launch
// that reads its position from device memory (pos_dev: a decode step in a CUDA graph) serves
// both sides of that line: the single-range kernel returns at once beyond it, the split
// kernels and their combine below it, so each position computes what a direct launch at that
// position computes, bit for bit. CPU twins: gqa_attend (cpu_attention.cpp) and
// MlaAttention::forward (arch_deepseek2.cpp). The dot products use the CPU's 8-lane order
// (dot_f32) and the weighted sums the CPU's position order, so with FMA contraction off
// (gpu/CMakeLists.txt) they give the CPU's values; the softmax sum differs only in its order
// (double, both sides).
#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/gemv_mma.h"
#include "gpu/kernels.h"

namespace moepack::gpu {
namespace {

constexpr int64_t kSplitLen = 4096;  // positions of one range (scores in shared memory)

// Ranges of kSplitLen that n_kv visible positions take.
__host__ __device__ inline int64_t split_count(int64_t n_kv) { return (n_kv + kSplitLen - 1) / kSplitLen; }

constexpr int kThreads = 128;

// cpu_ops dot_f32: element k into lane k % 8, lanes added pairwise at the end.
__device__ float dot8(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] += a[k + j] * b[k + j];
  }
  for (; k < n; ++k) acc[k % 8] += a[k] * b[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// Scores sc[0 .. n) -> exp(sc - max) in place; returns (max, sum) to every thread.
__device__ void block_partial_softmax(float* sc, int64_t n, float* mx_out, double* sum_out) {
  __shared__ float red_f[kThreads / 32];
  __shared__ double red_d[kThreads / 32];
  __shared__ float mx_s;
  __shared__ double sum_s;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, sc[i]);
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (threadIdx.x % 32 == 0) red_f[threadIdx.x / 32] = mx;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = red_f[0];
    for (int i = 1; i < kThreads / 32; ++i) m = fmaxf(m, red_f[i]);
    mx_s = m;
  }
  __syncthreads();
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float e = (sc[i] == -INFINITY || mx_s == -INFINITY) ? 0.0f : expf(sc[i] - mx_s);
    sc[i] = e;
    sum += e;
  }
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) red_d[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int i = 0; i < kThreads / 32; ++i) total += red_d[i];
    sum_s = total;
  }
  __syncthreads();
  *mx_out = mx_s;
  *sum_out = sum_s;
}

// Softmax in place over sc[0 .. n) by the whole block (cpu_ops softmax_inplace).
__device__ void block_softmax(float* sc, int64_t n) {
  float mx;
  double sum;
  block_partial_softmax(sc, n, &mx, &sum);
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sc[i] *= inv;
  __syncthreads();
}

__global__ void gqa_kernel(const float* q, int64_t pos0, const int32_t* pos_dev, const float* kv,
                           int64_t kv_width, int64_t n_head, int64_t n_head_kv, int64_t hk, int64_t hv,
                           float kq_scale, float* out) {
  extern __shared__ float sc[];
  const int64_t h = blockIdx.x, t = blockIdx.y;
  const int64_t hkv = h / (n_head / n_head_kv);
  const int64_t n_kv = (pos_dev ? *pos_dev : pos0) + t + 1;
  if (pos_dev && n_kv > kSplitLen) return;  // the split kernels' position (shared memory: kSplitLen)
  const float* qh = q + (t * n_head + h) * hk;
  for (int64_t s = threadIdx.x; s < n_kv; s += blockDim.x) {
    sc[s] = dot8(qh, kv + s * kv_width + hkv * hk, hk) * kq_scale;
  }
  __syncthreads();
  block_softmax(sc, n_kv);
  const float* v0 = kv + n_head_kv * hk + hkv * hv;
  float* o = out + (t * n_head + h) * hv;
  for (int64_t d = threadIdx.x; d < hv; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t s = 0; s < n_kv; ++s) acc += sc[s] * v0[s * kv_width + d];
    o[d] = acc;
  }
}

__global__ void mla_kernel(const float* q_abs, const float* q, int64_t pos0, const int32_t* pos_dev,
                           const float* kv, int64_t H, int64_t R, int64_t D, int64_t P, float kq_scale,
                           float* o_lat) {
  extern __shared__ float sc[];
  const int64_t h = blockIdx.x, t = blockIdx.y, W = R + P;
  const int64_t n_kv = (pos_dev ? *pos_dev : pos0) + t + 1;
  if (pos_dev && n_kv > kSplitLen) return;  // as gqa_kernel's
  const float* qa = q_abs + (t * H + h) * R;
  const float* qp = q + (t * H + h) * D + (D - P);
  for (int64_t s = threadIdx.x; s < n_kv; s += blockDim.x) {
    const float* row = kv + s * W;
    sc[s] = (dot8(qa, row, R) + dot8(qp, row + R, P)) * kq_scale;
  }
  __syncthreads();
  block_softmax(sc, n_kv);
  float* o = o_lat + (t * H + h) * R;
  for (int64_t d = threadIdx.x; d < R; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t s = 0; s < n_kv; ++s) acc += sc[s] * kv[s * W + d];
    o[d] = acc;
  }
}

// Long contexts (more than kSplitLen visible positions): flash-decoding style. Block
// (head, token, split) scores its split's positions into shared memory (kSplitLen floats),
// exponentiates against the split's own maximum m_s and writes l_s = sum exp (double) and
// o_s[d] = sum exp * v[d]; attend_combine then rescales by exp(m_s - M) with M the maximum over
// splits: out = sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s. The same softmax as the
// CPU's up to rounding (exp(a - m_s) exp(m_s - M) for exp(a - M), sums in another order).
// With pos_dev, n_split is the stride of the partials (the most splits a launch of the graph
// may need); each (token, head) uses the first ceil(n_kv / kSplitLen) of them (split_count).

// Partials of one (token, head, split): m at part_m, l at part_l, o (width floats) at part_o.
struct SplitOut {
  float* o;   // [n_tok][heads][n_split][width]
  float* m;   // [n_tok][heads][n_split]
  double* l;  // [n_tok][heads][n_split]
  int64_t n_split;
};

// pos_dev: the position read from device memory; the block returns when n_kv is the single
// range's (gqa_kernel's) or its range lies beyond n_kv.
__global__ void gqa_split_kernel(const float* q, int64_t pos0, const int32_t* pos_dev, const float* kv,
                                 int64_t kv_width, int64_t n_head, int64_t n_head_kv, int64_t hk, int64_t hv,
                                 float kq_scale, SplitOut so) {
  __shared__ float sc[kSplitLen];
  const int64_t h = blockIdx.x, t = blockIdx.y, sp = blockIdx.z;
  const int64_t hkv = h / (n_head / n_head_kv);
  const int64_t n_kv = (pos_dev ? *pos_dev : pos0) + t + 1, s0 = sp * kSplitLen;
  if (pos_dev && (n_kv <= kSplitLen || s0 >= n_kv)) return;
  const int64_t n = max(int64_t{0}, min(kSplitLen, n_kv - s0));
  const float* qh = q + (t * n_head + h) * hk;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    sc[i] = dot8(qh, kv + (s0 + i) * kv_width + hkv * hk, hk) * kq_scale;
  }
  __syncthreads();
  float m;
  double l;
  block_partial_softmax(sc, n, &m, &l);
  const int64_t at = (t * n_head + h) * so.n_split + sp;
  const float* v0 = kv + n_head_kv * hk + hkv * hv + s0 * kv_width;
  for (int64_t d = threadIdx.x; d < hv; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t s = 0; s < n; ++s) acc += sc[s] * v0[s * kv_width + d];
    so.o[at * hv + d] = acc;
  }
  if (threadIdx.x == 0) {
    so.m[at] = m;
    so.l[at] = l;
  }
}

// pos_dev: as gqa_split_kernel's.
__global__ void mla_split_kernel(const float* q_abs, const float* q, int64_t pos0, const int32_t* pos_dev,
                                 const float* kv, int64_t H, int64_t R, int64_t D, int64_t P, float kq_scale,
                                 SplitOut so) {
  __shared__ float sc[kSplitLen];
  const int64_t h = blockIdx.x, t = blockIdx.y, sp = blockIdx.z, W = R + P;
  const int64_t n_kv = (pos_dev ? *pos_dev : pos0) + t + 1, s0 = sp * kSplitLen;
  if (pos_dev && (n_kv <= kSplitLen || s0 >= n_kv)) return;
  const int64_t n = max(int64_t{0}, min(kSplitLen, n_kv - s0));
  const float* qa = q_abs + (t * H + h) * R;
  const float* qp = q + (t * H + h) * D + (D - P);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float* row = kv + (s0 + i) * W;
    sc[i] = (dot8(qa, row, R) + dot8(qp, row + R, P)) * kq_scale;
  }
  __syncthreads();
  float m;
  double l;
  block_partial_softmax(sc, n, &m, &l);
  const int64_t at = (t * H + h) * so.n_split + sp;
  const float* v0 = kv + s0 * W;
  for (int64_t d = threadIdx.x; d < R; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t s = 0; s < n; ++s) acc += sc[s] * v0[s * W + d];
    so.o[at * R + d] = acc;
  }
  if (threadIdx.x == 0) {
    so.m[at] = m;
    so.l[at] = l;
  }
}

// out[(t * heads + h) * width + d] from the splits of (t, h), in split order. pos_dev: the
// position read from device memory; the combine covers the n_kv's splits (split_count) and
// returns when n_kv is the single range's.
__global__ void attend_combine_kernel(SplitOut so, const int32_t* pos_dev, int64_t heads, int64_t width,
                                      float* out) {
  const int64_t h = blockIdx.x, t = blockIdx.y;
  const int64_t base = (t * heads + h) * so.n_split;
  int64_t n_split = so.n_split;
  if (pos_dev) {
    const int64_t n_kv = *pos_dev + t + 1;
    if (n_kv <= kSplitLen) return;
    n_split = split_count(n_kv);
  }
  float M = -INFINITY;
  for (int64_t s = 0; s < n_split; ++s) M = fmaxf(M, so.m[base + s]);
  double total = 0.0;
  for (int64_t s = 0; s < n_split; ++s) {
    if (so.m[base + s] != -INFINITY) total += so.l[base + s] * static_cast<double>(expf(so.m[base + s] - M));
  }
  const float inv = static_cast<float>(1.0 / total);
  for (int64_t d = threadIdx.x; d < width; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t s = 0; s < n_split; ++s) {
      if (so.m[base + s] != -INFINITY) acc += expf(so.m[base + s] - M) * so.o[(base + s) * width + d];
    }
    out[(t * heads + h) * width + d] = acc * inv;
  }
}

// Runs `split(t0, n, so)` over chunks of tokens whose partials fit kSplitScratch bytes, then
// the combine; scratch is stream-ordered (cudaMallocAsync) and freed after the call. pos_dev: the
// launches serve every position below max_kv (max_kv - n_tok for token 0), read at run time.
constexpr size_t kSplitScratch = size_t{64} << 20;

template <typename Split>
void attend_split(int64_t n_tok, int64_t max_kv, int64_t heads, int64_t width, float* out, cudaStream_t s,
                  const int32_t* pos_dev, Split split) {
  const int64_t n_split = split_count(max_kv);
  const size_t per_tok = static_cast<size_t>(heads * n_split) * (static_cast<size_t>(width) * sizeof(float) + sizeof(float) + sizeof(double));
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(n_tok, static_cast<int64_t>(kSplitScratch / per_tok)));
  const size_t rows = static_cast<size_t>(chunk * heads * n_split);
  void* mem = nullptr;
  MOEPACK_CUDA_CHECK(cudaMallocAsync(&mem, rows * (static_cast<size_t>(width) * sizeof(float) + sizeof(float) + sizeof(double)) + 256, s));
  SplitOut so;
  so.l = static_cast<double*>(mem);
  so.m = reinterpret_cast<float*>(so.l + rows);
  so.o = so.m + rows;
  so.n_split = n_split;
  for (int64_t t0 = 0; t0 < n_tok; t0 += chunk) {
    const int64_t n = std::min(chunk, n_tok - t0);
    split(t0, n, so);
    MOEPACK_CUDA_CHECK(cudaGetLastError());
    attend_combine_kernel<<<dim3(static_cast<unsigned>(heads), static_cast<unsigned>(n)), kThreads, 0, s>>>(
        so, pos_dev, heads, width, out + t0 * heads * width);
    MOEPACK_CUDA_CHECK(cudaGetLastError());
  }
  MOEPACK_CUDA_CHECK(cudaFreeAsync(mem, s));
}

// The dynamic shared memory of one launch of k over n_kv positions (a float each), opted in through
// detail::allow_dynamic_smem (once per device and kernel, counting the kernel's static bytes against a
// block's maximum, under MOEPACK_GPU_LIMITS the emulated card's). Throws Error where the device's maximum
// less k's static bytes (detail::max_dynamic_smem) is smaller.
template <typename Kernel>
size_t prepare_shared(Kernel k, int64_t n_kv) {
  const void* kernel = reinterpret_cast<const void*>(k);
  const size_t bytes = static_cast<size_t>(n_kv) * sizeof(float);
  const size_t limit = detail::max_dynamic_smem(kernel);
  if (bytes > limit) {
    // (Unreachable on devices this backend supports: one range is kSplitLen floats, 16 KiB.)
    throw Error("attention over " + std::to_string(n_kv) + " positions in one range needs " +
                std::to_string(bytes) + " bytes of shared memory; this device allows " +
                std::to_string(limit));
  }
  detail::allow_dynamic_smem(kernel, bytes);
  return bytes;
}

}  // namespace

int64_t max_attention_positions() { return std::numeric_limits<int64_t>::max(); }

void gqa_attend(const float* q, int64_t n_tok, int64_t pos0, const float* kv, int64_t kv_width,
                int64_t n_head, int64_t n_head_kv, int64_t hk, int64_t hv, float kq_scale, float* out,
                cudaStream_t s, const int32_t* pos_dev, int64_t max_kv) {
  if (n_tok <= 0) return;
  const auto split = [&](int64_t t0, int64_t n, const SplitOut& so) {
    gqa_split_kernel<<<dim3(static_cast<unsigned>(n_head), static_cast<unsigned>(n),
                            static_cast<unsigned>(so.n_split)),
                       kThreads, 0, s>>>(q + t0 * n_head * hk, pos0 + t0, pos_dev, kv, kv_width, n_head,
                                         n_head_kv, hk, hv, kq_scale, so);
  };
  if (pos_dev) {  // every position below max_kv, read on the device
    if (n_tok != 1 || max_kv < 1)
      throw Error("internal: gqa_attend at a device position takes one token and max_kv >= 1");
    const size_t shmem = prepare_shared(gqa_kernel, kSplitLen);
    gqa_kernel<<<dim3(static_cast<unsigned>(n_head), static_cast<unsigned>(n_tok)), kThreads, shmem, s>>>(
        q, 0, pos_dev, kv, kv_width, n_head, n_head_kv, hk, hv, kq_scale, out);
    MOEPACK_CUDA_CHECK(cudaGetLastError());
    if (max_kv > kSplitLen) attend_split(n_tok, max_kv, n_head, hv, out, s, pos_dev, split);
    return;
  }
  if (pos0 + n_tok > kSplitLen) return attend_split(n_tok, pos0 + n_tok, n_head, hv, out, s, nullptr, split);
  const size_t shmem = prepare_shared(gqa_kernel, pos0 + n_tok);
  gqa_kernel<<<dim3(static_cast<unsigned>(n_head), static_cast<unsigned>(n_tok)), kThreads, shmem, s>>>(
      q, pos0, nullptr, kv, kv_width, n_head, n_head_kv, hk, hv, kq_scale, out);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void mla_attend(const float* q_abs, const float* q, int64_t n_tok, int64_t pos0, const float* kv, int64_t H,
                int64_t R, int64_t D, int64_t P, float kq_scale, float* o_lat, cudaStream_t s,
                const int32_t* pos_dev, int64_t max_kv) {
  if (n_tok <= 0) return;
  const auto split = [&](int64_t t0, int64_t n, const SplitOut& so) {
    mla_split_kernel<<<dim3(static_cast<unsigned>(H), static_cast<unsigned>(n),
                            static_cast<unsigned>(so.n_split)),
                       kThreads, 0, s>>>(q_abs + t0 * H * R, q + t0 * H * D, pos0 + t0, pos_dev, kv, H, R, D,
                                         P, kq_scale, so);
  };
  if (pos_dev) {  // as gqa_attend's
    if (n_tok != 1 || max_kv < 1)
      throw Error("internal: mla_attend at a device position takes one token and max_kv >= 1");
    const size_t shmem = prepare_shared(mla_kernel, kSplitLen);
    mla_kernel<<<dim3(static_cast<unsigned>(H), static_cast<unsigned>(n_tok)), kThreads, shmem, s>>>(
        q_abs, q, 0, pos_dev, kv, H, R, D, P, kq_scale, o_lat);
    MOEPACK_CUDA_CHECK(cudaGetLastError());
    if (max_kv > kSplitLen) attend_split(n_tok, max_kv, H, R, o_lat, s, pos_dev, split);
    return;
  }
  if (pos0 + n_tok > kSplitLen) return attend_split(n_tok, pos0 + n_tok, H, R, o_lat, s, nullptr, split);
  const size_t shmem = prepare_shared(mla_kernel, pos0 + n_tok);
  mla_kernel<<<dim3(static_cast<unsigned>(H), static_cast<unsigned>(n_tok)), kThreads, shmem, s>>>(
      q_abs, q, pos0, nullptr, kv, H, R, D, P, kq_scale, o_lat);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
