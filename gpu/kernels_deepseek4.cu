// CUDA kernels of the `deepseek4` block's own operations (kernels_deepseek4.h): hyper-connection
// weights (Sinkhorn), stream collapse / expansion, the KV compressors' history and pooling, RoPE
// at strided positions, the lightning indexer's scores and the sliding-window + compressed
// attention with sinks. CPU twins: core/deepseek4_ops.h. Every output element is computed in the
// CPU twin's order of operations (built with --fmad=false): by one thread, or, where several
// lanes share a sum (the Sinkhorn warp, the attention's scores), by shuffles that keep that
// order's additions exactly. So the only differences are expf's and the division's last-bit
// rounding.
#include <algorithm>
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

// Element e of a warp's HC x HC matrix, held by lane e mod 32 in register r0 (e < 32) or r1:
// every lane of the warp calls it (each with its own e). With NN <= 32 elements r1 is unused.
template <int NN>
__device__ float warp_element(float r0, float r1, int e) {
  if constexpr (NN <= 32) {
    return __shfl_sync(0xFFFFFFFFu, r0, e);
  } else {
    const float a = __shfl_sync(0xFFFFFFFFu, r0, e & 31);
    const float b = __shfl_sync(0xFFFFFFFFu, r1, e & 31);
    return e < 32 ? a : b;
  }
}

// One warp per token: lane e (and e + 32 where HC * HC > 32) holds M[dst][src], e = dst·HC + src.
// Every element is computed with the CPU twin's operations in its order (each column's softmax
// and each row's or column's sum run over the matrix's own values in index order, read through
// shuffles), so the matrix is the single-thread loop's bit for bit, but a Sinkhorn step costs
// one sum and one division on every lane at once instead of HC·HC of each in one thread. HC is a
// template argument so that a sum's HC shuffles are unrolled and issued together.
template <int HC>
__global__ void hc_weights_kernel(const float* mix, int64_t n, const float* base, const float* scale,
                                  uint32_t iters, float eps, float* pre, float* post, float* M) {
  constexpr int NN = HC * HC, slots = NN > 32 ? 2 : 1;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int64_t t = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (t >= n) return;  // uniform per warp
  const float* m = mix + t * (2 + HC) * HC;
  if (lane < HC) {
    pre[t * HC + lane] = sigmoidf_(m[lane] * scale[0] + base[lane]) + eps;
    post[t * HC + lane] = 2.0f * sigmoidf_(m[HC + lane] * scale[1] + base[HC + lane]);
  }
  float w[2] = {0.0f, 0.0f};
#pragma unroll
  for (int slot = 0; slot < slots; ++slot) {
    const int e = lane + 32 * slot;
    if (e >= NN) continue;
    const int dst = e / HC, src = e % HC;
    float mx = -INFINITY;
#pragma unroll
    for (int d = 0; d < HC; ++d) {
      const int i = 2 * HC + HC * src + d;
      mx = fmaxf(mx, m[i] * scale[2] + base[i]);
    }
    float sum = 0.0f, mine = 0.0f;
#pragma unroll
    for (int d = 0; d < HC; ++d) {
      const int i = 2 * HC + HC * src + d;
      const float x = expf((m[i] * scale[2] + base[i]) - mx);
      sum += x;
      if (d == dst) mine = x;
    }
    w[slot] = mine / sum + eps;
  }
  // Rows once, then (columns, rows) iters - 1 times: ds4::hc_weights's order.
  for (uint32_t it = 0; it == 0 || it < iters; ++it) {
    if (it > 0) {
      float nw[2] = {0.0f, 0.0f};
#pragma unroll
      for (int slot = 0; slot < slots; ++slot) {
        const int e = lane + 32 * slot, src = e % HC;
        float sum = 0.0f;
#pragma unroll
        for (int d = 0; d < HC; ++d) sum += warp_element<NN>(w[0], w[1], d * HC + src);
        nw[slot] = w[slot] / (sum + eps);
      }
      w[0] = nw[0];
      w[1] = nw[1];
    }
    float nw[2] = {0.0f, 0.0f};
#pragma unroll
    for (int slot = 0; slot < slots; ++slot) {
      const int e = lane + 32 * slot, dst = (e / HC) % HC;  // (% HC: lanes past the matrix stay in it)
      float sum = 0.0f;
#pragma unroll
      for (int k = 0; k < HC; ++k) sum += warp_element<NN>(w[0], w[1], dst * HC + k);
      nw[slot] = w[slot] / (sum + eps);
    }
    w[0] = nw[0];
    w[1] = nw[1];
  }
  float* Mt = M + t * NN;
  if (lane < NN) Mt[lane] = w[0];
  if (lane + 32 < NN) Mt[lane + 32] = w[1];
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

// The position of token 0: *pos_dev when given (a decode graph's launch), else pos0.
__device__ int64_t first_position(int64_t pos0, const int32_t* pos_dev) {
  return pos_dev ? static_cast<int64_t>(*pos_dev) : pos0;
}

__global__ void comp_store_kernel(const float* ta, const float* tg, const float* ape, int64_t n, int64_t pos0,
                                  int64_t m, int64_t ring, int64_t cd, float* a, float* g,
                                  const int32_t* pos_dev) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * cd) return;
  const int64_t t = i / cd, k = i % cd, p = first_position(pos0, pos_dev) + t;
  const int64_t slot = (p % ring) * cd + k;
  a[slot] = ta[i];
  g[slot] = tg[i] + ape[(p % m) * cd + k];
}

__global__ void compress_pool_kernel(const float* a, const float* g, int64_t ring, int64_t d, int64_t c,
                                     int64_t m, int64_t b0, int64_t nb, float* kappa,
                                     const int32_t* pos_dev) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= nb * d) return;
  if (pos_dev) {  // the row position *pos_dev completes, if any
    const int64_t p1 = static_cast<int64_t>(*pos_dev) + 1;
    if (p1 % m != 0) return;
    b0 = p1 / m - 1;
  }
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
                                 int64_t pos_step, int n_dims, bool neox, const int32_t* pos_dev) {
  const int half = n_dims / 2;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_rows * n_heads * half) return;
  if (pos_dev) {  // the row position *pos_dev completes, if any
    const int64_t p1 = static_cast<int64_t>(*pos_dev) + 1;
    if (p1 % pos_step != 0) return;
    pos_first = p1 - pos_step;
  }
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
                                      int64_t stride, const int32_t* pos_dev) {
  extern __shared__ float term[];
  const int64_t r = blockIdx.x, t = blockIdx.y;
  const int64_t nvis = (first_position(pos0, pos_dev) + t + 1) / 4;
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

constexpr int kAttendThreads = 128;  // a block: one (head, token)
constexpr int kAttendChunk = 256;    // keys staged in shared memory at a time for the output
constexpr int kAttendMaxChannels = 1024 / kAttendThreads;  // D <= 1024 (checked on the host)

// One block per (head h, token t), in four steps, each with the CPU reference's operations in its
// order (so the bits of the one-thread-per-key form before it):
// 1. scores: eight lanes a key, lane l summing the products of channels l, l + 8, ... in order
//    (dot_f32_dev's accumulator l), then the butterfly over the eight, which is dot_f32_dev's
//    ((0+1)+(2+3))+((4+5)+(6+7)) (addition commutes exactly);
// 2. the maximum with the sink's over the block (exact in any order), the exponentials by key;
// 3. their sum by one thread in key order;
// 4. the output: each channel by one thread in key order, over chunks of keys whose
//    probabilities and row addresses are staged in shared memory first.
// Raw keys come from the ring (position j0 + j at slot (j0 + j) mod ring_raw), compressed ones
// from the rows sel lists.
__global__ void __launch_bounds__(kAttendThreads)
    attend_kernel(const float* q, int64_t H, int64_t D, int64_t pos0, const float* kraw, int64_t ring_raw,
                  int64_t n_swa, const float* comp, const int32_t* sel, int64_t sel_stride,
                  const int32_t* sel_count, const float* sinks, float kq_scale, float* scratch,
                  int64_t max_keys, float* out, const int32_t* pos_dev) {
  const int64_t h = blockIdx.x, t = blockIdx.y, p = first_position(pos0, pos_dev) + t;
  const int64_t j0 = p - n_swa + 1 > 0 ? p - n_swa + 1 : 0;
  const int64_t nraw = p - j0 + 1, raw0 = j0 % ring_raw;  // nraw <= n_swa <= ring_raw
  const int64_t nk = nraw + sel_count[t];
  const int32_t* sel_t = sel + t * sel_stride;
  const auto key = [&](int64_t j) -> const float* {
    if (j >= nraw) return comp + static_cast<int64_t>(sel_t[j - nraw]) * D;
    const int64_t r = raw0 + j;
    return kraw + (r >= ring_raw ? r - ring_raw : r) * D;
  };
  const float* qh = q + (t * H + h) * D;
  float* sc = scratch + (t * H + h) * max_keys;
  const int lane8 = static_cast<int>(threadIdx.x & 7u);
  constexpr int kGroups = kAttendThreads / 8;
  for (int64_t jb = 0; jb < nk; jb += kGroups) {  // the same trip count on every thread
    const int64_t j = jb + static_cast<int64_t>(threadIdx.x >> 3);
    float acc = 0.0f;
    if (j < nk) {
      const float* kj = key(j);
      for (int64_t c = lane8; c < D; c += 8) acc += qh[c] * kj[c];
    }
    acc += __shfl_xor_sync(0xFFFFFFFFu, acc, 1);
    acc += __shfl_xor_sync(0xFFFFFFFFu, acc, 2);
    acc += __shfl_xor_sync(0xFFFFFFFFu, acc, 4);
    if (j < nk && lane8 == 0) sc[j] = acc * kq_scale;
  }
  __syncthreads();
  __shared__ float warp_max[kAttendThreads / 32], top, total;
  const float sink = sinks[h];
  float mx = threadIdx.x == 0 ? sink : -INFINITY;
  for (int64_t j = threadIdx.x; j < nk; j += blockDim.x) mx = fmaxf(mx, sc[j]);  // this thread's own scores
  for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, off));
  if ((threadIdx.x & 31u) == 0) warp_max[threadIdx.x >> 5] = mx;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = warp_max[0];
    for (int w = 1; w < kAttendThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
    top = m;
  }
  __syncthreads();
  mx = top;
  for (int64_t j = threadIdx.x; j < nk; j += blockDim.x) sc[j] = expf(sc[j] - mx);
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = expf(sink - mx);
#pragma unroll 8
    for (int64_t j = 0; j < nk; ++j) sum += sc[j];
    total = sum;
  }
  __syncthreads();
  const float sum = total;
  __shared__ float s_p[kAttendChunk];
  __shared__ const float* s_key[kAttendChunk];
  float acc[kAttendMaxChannels];
#pragma unroll
  for (int u = 0; u < kAttendMaxChannels; ++u) acc[u] = 0.0f;
  for (int64_t c0 = 0; c0 < nk; c0 += kAttendChunk) {
    const int m = static_cast<int>(nk - c0 < kAttendChunk ? nk - c0 : kAttendChunk);
    for (int i = static_cast<int>(threadIdx.x); i < m; i += kAttendThreads) {
      s_p[i] = sc[c0 + i] / sum;
      s_key[i] = key(c0 + i);
    }
    __syncthreads();
#pragma unroll 4
    for (int i = 0; i < m; ++i) {
      const float pj = s_p[i];
      const float* kj = s_key[i];
#pragma unroll
      for (int u = 0; u < kAttendMaxChannels; ++u) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(u) * kAttendThreads;
        if (c < D) acc[u] += pj * kj[c];
      }
    }
    __syncthreads();
  }
  float* oh = out + (t * H + h) * D;
#pragma unroll
  for (int u = 0; u < kAttendMaxChannels; ++u) {
    const int64_t c = threadIdx.x + static_cast<int64_t>(u) * kAttendThreads;
    if (c < D) oh[c] = acc[u];
  }
}

__global__ void store_row_kernel(const float* src, int64_t width, float* dst, int64_t ring, int64_t m,
                                 const int32_t* pos_dev) {
  const int64_t p = *pos_dev;
  int64_t row;
  if (m > 0) {
    if ((p + 1) % m != 0) return;
    row = (p + 1) / m - 1;
  } else {
    row = p % ring;
  }
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < width;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[row * width + i] = src[i];
  }
}

// An order-preserving unsigned key of a score: a > b as floats iff key(a) > key(b), with -0 made
// +0 first (the comparator sees them equal). NaN is outside the comparator's contract.
__device__ uint32_t score_key(float f) {
  if (f == 0.0f) f = 0.0f;
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// key in the high word, the row's complement in the low: descending order = higher score first,
// then the lower row (rows < 2^31, so every real entry is above the padding 0).
__device__ unsigned long long select_entry(uint32_t key, int64_t r) {
  return (static_cast<unsigned long long>(key) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(r));
}

constexpr int kSelectThreads = 256;

// One block per query t (ds4_select_rows). keys: the top_k entries padded to P (a power of two).
__global__ void __launch_bounds__(kSelectThreads)
    select_rows_kernel(const float* scores, int64_t stride, int64_t pos0, int64_t ratio, int64_t top_k,
                       int64_t P, int32_t* sel, int64_t sel_stride, int32_t* count, const int32_t* pos_dev) {
  extern __shared__ unsigned long long entry[];
  __shared__ uint32_t hist[256];
  __shared__ uint32_t s_prefix, s_need, s_above, s_taken;
  __shared__ uint32_t warp_ties[kSelectThreads / 32];
  const int64_t t = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t nvis = (first_position(pos0, pos_dev) + t + 1) / ratio;
  int32_t* out = sel + t * sel_stride;
  if (ratio != 4 || nvis <= top_k) {  // every completed row, in order
    const int64_t c = nvis < sel_stride ? nvis : sel_stride;
    for (int64_t r = tid; r < c; r += blockDim.x) out[r] = static_cast<int32_t>(r);
    if (tid == 0) count[t] = static_cast<int32_t>(c);
    return;
  }
  const float* sc = scores + t * stride;
  // Radix select, most significant byte first: T, the top_k-th largest key, and how many rows
  // equal to T belong to the top_k (need).
  uint32_t prefix = 0, mask = 0, need = static_cast<uint32_t>(top_k);
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    for (int64_t r = tid; r < nvis; r += blockDim.x) {
      const uint32_t k = score_key(sc[r]);
      if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (tid < 32) {
      // The bin holding the need-th largest key, counted from bin 255 down: lane l sums bins
      // 255 - 8l .. 248 - 8l, a scan over the lanes finds the one lane whose bins reach it.
      uint32_t c[8], local = 0;
      for (int k = 0; k < 8; ++k) local += (c[k] = hist[255 - 8 * tid - k]);
      uint32_t incl = local;
      for (int off = 1; off < 32; off <<= 1) {
        const uint32_t v = __shfl_up_sync(0xFFFFFFFFu, incl, off);
        if (tid >= off) incl += v;
      }
      const uint32_t excl = incl - local;
      if (excl < need && need <= incl) {
        uint32_t left = need - excl;
        int k = 0;
        for (; k < 7 && c[k] < left; ++k) left -= c[k];
        s_prefix = prefix | (static_cast<uint32_t>(255 - 8 * tid - k) << shift);
        s_need = left;
      }
    }
    __syncthreads();
    prefix = s_prefix;
    need = s_need;
    mask |= 255u << shift;
  }
  const uint32_t T = prefix;
  const uint32_t above = static_cast<uint32_t>(top_k) - need;
  if (tid == 0) {
    s_above = 0;
    s_taken = 0;
  }
  __syncthreads();
  for (int64_t r = tid; r < nvis; r += blockDim.x) {
    const uint32_t k = score_key(sc[r]);
    if (k > T) entry[atomicAdd(&s_above, 1u)] = select_entry(k, r);
  }
  // The lowest `need` rows whose key is T, in row order: a block-wide count over chunks.
  const int lane = tid & 31, warp = tid >> 5;
  for (int64_t base = 0; base < nvis; base += blockDim.x) {
    const int64_t r = base + tid;
    const bool tie = r < nvis && score_key(sc[r]) == T;
    const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, tie);
    if (lane == 0) warp_ties[warp] = __popc(ballot);
    __syncthreads();
    uint32_t rank = s_taken + __popc(ballot & ((1u << lane) - 1u)), chunk = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
      if (w < warp) rank += warp_ties[w];
      chunk += warp_ties[w];
    }
    if (tie && rank < need) entry[above + rank] = select_entry(T, r);
    __syncthreads();
    if (tid == 0) s_taken += chunk;
    __syncthreads();
    if (s_taken >= need) break;  // uniform: every thread reads the same s_taken
  }
  for (int64_t i = top_k + tid; i < P; i += blockDim.x) entry[i] = 0ull;
  __syncthreads();
  // Bitonic sort, descending.
  for (int64_t k = 2; k <= P; k <<= 1) {
    for (int64_t j = k >> 1; j > 0; j >>= 1) {
      for (int64_t i = tid; i < P; i += blockDim.x) {
        const int64_t ij = i ^ j;
        if (ij > i) {
          const unsigned long long a = entry[i], b = entry[ij];
          if ((i & k) == 0 ? a < b : a > b) {
            entry[i] = b;
            entry[ij] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  for (int64_t i = tid; i < top_k; i += blockDim.x) {
    out[i] = static_cast<int32_t>(0xFFFFFFFFu - static_cast<uint32_t>(entry[i] & 0xFFFFFFFFull));
  }
  if (tid == 0) count[t] = static_cast<int32_t>(top_k);
}

}  // namespace

void ds4_hc_weights(const float* mix, int64_t n, const float* base, const float* scale, int64_t HC,
                    uint32_t iters, float eps, float* pre, float* post, float* M, cudaStream_t s) {
  require(HC >= 1 && HC <= 8, "ds4_hc_weights", "HC " + std::to_string(HC) + " outside 1..8");
  if (n <= 0) return;
  const unsigned blocks = blocks_for(n * 32);
  switch (HC) {
    case 1:
      hc_weights_kernel<1><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
    case 2:
      hc_weights_kernel<2><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
    case 3:
      hc_weights_kernel<3><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
    case 4:
      hc_weights_kernel<4><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
    case 5:
      hc_weights_kernel<5><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
    case 6:
      hc_weights_kernel<6><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
    case 7:
      hc_weights_kernel<7><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
    default:
      hc_weights_kernel<8><<<blocks, kThreads, 0, s>>>(mix, n, base, scale, iters, eps, pre, post, M);
      break;
  }
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
                    int64_t ring, int64_t cd, float* a, float* g, cudaStream_t s, const int32_t* pos_dev) {
  require(m > 0 && ring > 0 && n <= ring && pos0 >= 0 && (!pos_dev || n == 1), "ds4_comp_store",
          "n " + std::to_string(n) + " m " + std::to_string(m) + " ring " + std::to_string(ring) + " pos0 " +
              std::to_string(pos0) + (pos_dev ? " (a device position takes n = 1)" : ""));
  if (n <= 0 || cd <= 0) return;
  comp_store_kernel<<<blocks_for(n * cd), kThreads, 0, s>>>(ta, tg, ape, n, pos0, m, ring, cd, a, g, pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_compress_pool(const float* a, const float* g, int64_t ring, int64_t d, int64_t c, int64_t m,
                       int64_t b0, int64_t nb, float* kappa, cudaStream_t s, const int32_t* pos_dev) {
  require(
      (c == 1 || c == 2) && m > 0 && b0 >= 0 && c * m <= ring && (!pos_dev || nb == 1), "ds4_compress_pool",
      "c " + std::to_string(c) + " m " + std::to_string(m) + " ring " + std::to_string(ring) + " b0 " +
          std::to_string(b0) + " nb " + std::to_string(nb) + (pos_dev ? " (a device position: nb = 1)" : ""));
  if (nb <= 0 || d <= 0) return;
  compress_pool_kernel<<<blocks_for(nb * d), kThreads, 0, s>>>(a, g, ring, d, c, m, b0, nb, kappa, pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_rope_rows(float* x, int64_t n_rows, int64_t row_stride, int64_t n_heads, int64_t head_stride,
                   const float* cs_table, int64_t table_rows, int64_t pos_first, int64_t pos_step, int n_dims,
                   bool neox, cudaStream_t s, const int32_t* pos_dev) {
  if (n_rows <= 0 || n_dims <= 0 || n_heads <= 0) return;
  if (pos_dev) {
    require(n_dims % 2 == 0 && n_rows == 1 && pos_step > 0, "ds4_rope_rows",
            "a device position takes one row at a positive step (rows " + std::to_string(n_rows) + ", step " +
                std::to_string(pos_step) + ", n_dims " + std::to_string(n_dims) + ")");
  } else {
    const int64_t last = pos_first + (n_rows - 1) * pos_step;
    require(n_dims % 2 == 0 && pos_first >= 0 && pos_step >= 0 && last < table_rows, "ds4_rope_rows",
            "positions " + std::to_string(pos_first) + ".." + std::to_string(last) + " outside the table's " +
                std::to_string(table_rows) + " rows (n_dims " + std::to_string(n_dims) + ")");
  }
  rope_rows_kernel<<<blocks_for(n_rows * n_heads * (n_dims / 2)), kThreads, 0, s>>>(
      x, n_rows, row_stride, n_heads, head_stride, cs_table, pos_first, pos_step, n_dims, neox, pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_indexer_scores(const float* q, const float* w, int64_t n, int64_t HI, int64_t DI, const float* rows,
                        int64_t pos0, float wscale, float* scores, int64_t stride, cudaStream_t s,
                        const int32_t* pos_dev, int64_t max_kv) {
  if (n <= 0) return;
  require(!pos_dev || (n == 1 && max_kv >= 1), "ds4_indexer_scores",
          "a device position takes n = 1 and max_kv >= 1 (n " + std::to_string(n) + ", max_kv " +
              std::to_string(max_kv) + ")");
  const int64_t max_rows = pos_dev ? max_kv / 4 : (pos0 + n) / 4;
  require(HI > 0 && HI <= 4096 && DI > 0 && stride >= max_rows && n <= 65535 && max_rows <= 0x7FFFFFFF,
          "ds4_indexer_scores",
          "HI " + std::to_string(HI) + " DI " + std::to_string(DI) + " n " + std::to_string(n) + " rows " +
              std::to_string(max_rows) + " stride " + std::to_string(stride));
  if (max_rows <= 0) return;
  indexer_scores_kernel<<<dim3(static_cast<unsigned>(max_rows), static_cast<unsigned>(n)), 32,
                          static_cast<size_t>(HI) * sizeof(float), s>>>(q, w, HI, DI, rows, pos0, wscale,
                                                                        scores, stride, pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_attend(const float* q, int64_t n, int64_t H, int64_t D, int64_t pos0, const float* kraw,
                int64_t ring_raw, int64_t n_swa, const float* comp, const int32_t* sel, int64_t sel_stride,
                const int32_t* sel_count, const float* sinks, float kq_scale, float* scratch,
                int64_t max_keys, float* out, cudaStream_t s, const int32_t* pos_dev) {
  if (n <= 0 || H <= 0) return;
  require(D > 0 && D <= 1024 && n_swa > 0 && ring_raw >= n_swa + n - 1 && max_keys >= n_swa + sel_stride &&
              sel_stride >= 0 && n <= 65535 && pos0 >= 0 && (!pos_dev || n == 1),
          "ds4_attend",
          "D " + std::to_string(D) + " n " + std::to_string(n) + " n_swa " + std::to_string(n_swa) +
              " ring " + std::to_string(ring_raw) + " sel_stride " + std::to_string(sel_stride) +
              " max_keys " + std::to_string(max_keys));
  attend_kernel<<<dim3(static_cast<unsigned>(H), static_cast<unsigned>(n)), kAttendThreads, 0, s>>>(
      q, H, D, pos0, kraw, ring_raw, n_swa, comp, sel, sel_stride, sel_count, sinks, kq_scale, scratch,
      max_keys, out, pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_store_row_at(const float* src, int64_t width, float* dst, int64_t ring, int64_t m,
                      const int32_t* pos_dev, cudaStream_t s) {
  require(pos_dev != nullptr && m >= 0 && (m > 0 || ring > 0), "ds4_store_row_at",
          "needs a device position and m > 0 or a ring (m " + std::to_string(m) + ", ring " +
              std::to_string(ring) + ")");
  if (width <= 0) return;
  store_row_kernel<<<std::min<unsigned>(blocks_for(width), 64), kThreads, 0, s>>>(src, width, dst, ring, m,
                                                                                  pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void ds4_select_rows(const float* scores, int64_t stride, int64_t n, int64_t pos0, int64_t ratio,
                     int64_t top_k, int32_t* sel, int64_t sel_stride, int32_t* count, cudaStream_t s,
                     const int32_t* pos_dev, int64_t max_kv) {
  if (n <= 0) return;
  const int64_t last = pos_dev ? max_kv - 1 : pos0 + n - 1;
  const int64_t most = ratio >= 1 ? (last + 1) / ratio : 0;  // rows the last query sees
  const bool sorts = ratio == 4 && most > top_k;
  const int64_t fit = sorts ? top_k : most;
  require(ratio >= 1 && pos0 >= 0 && last >= 0 && n <= 0x7FFFFFFF && (!pos_dev || n == 1) &&
              (ratio != 4 || top_k >= 1) && (!sorts || top_k <= 4096) && fit <= sel_stride &&
              (!sorts || stride >= most),
          "ds4_select_rows",
          "ratio " + std::to_string(ratio) + " top_k " + std::to_string(top_k) + " n " + std::to_string(n) +
              " last position " + std::to_string(last) + ": " + std::to_string(fit) +
              " rows for a table of " + std::to_string(sel_stride) + " (score stride " +
              std::to_string(stride) + ")");
  int64_t P = 1;
  while (sorts && P < top_k) P <<= 1;
  select_rows_kernel<<<static_cast<unsigned>(n), kSelectThreads,
                       sorts ? static_cast<size_t>(P) * sizeof(unsigned long long) : 0, s>>>(
      scores, stride, pos0, ratio, top_k, P, sel, sel_stride, count, pos_dev);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
