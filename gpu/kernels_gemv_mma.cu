// The tensor-core decode GEMV of gpu/gemv_mma.h (formula, precision and the rule that keeps
// the pack path bit-identical to the GGUF path are there).
//
// Layout. A first kernel turns each group's x into ready-made mma B fragments in
// stream-ordered scratch (per 4 elements e0..e3: f16x2 {hi(e0), hi(e2)}, {hi(e1), hi(e3)}, then
// the same for lo) plus F32 sums X of every 16 elements. A block of the GEMV kernel owns 16
// rows; its kMmaWarps warps split the row's super-blocks into contiguous ranges (summed in warp
// order at the end: the split depends on ne0 alone). Lane L = 4 g + t (g = L / 4, t = L % 4)
// owns rows g and g + 8 and a quarter of each super-block's quants (Q4kPath, Q2kPath say
// which). The next super-block's bytes are loaded while this one is computed.
//
// One mma (m16n8k16, A row-major 16 x 16, B col-major 16 x 8, PTX ISA "Matrix fragments for
// mma.m16n8k16"): lane L supplies A rows g, g + 8 at k = 2t, 2t+1, 2t+8, 2t+9 and receives
// D rows g, g + 8 at columns 2t, 2t+1. Column 2t of B holds x_hi and column 2t + 1 x_lo at
// lane t's own k rows and zeros elsewhere (supplied by lanes 9t and 9t + 4, the only lanes
// whose B column c satisfies c / 2 == t; every other lane passes zeros). Hence
// D[g][2t] + D[g][2t+1] = lane L's own sum_k q_k x_k for row g over its 4 k values: every
// lane gets back exactly its own partial dot products, and the per-sub-block scales are
// applied lane-locally. Four mmas cover a granule's 16 elements of one sub-block for 16 rows.
//
// Quants become f16 exactly: (w & 0x000F000F) | 0x6400_6400 is f16x2 {1024 + q0, 1024 + q2},
// minus 1024 in one HSUB2; fields higher in the byte are masked in place (16 q, 4^j q: still
// exact) and the power of two goes into the sub-block's scale.
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/dequant.cuh"
#include "gpu/gemv_mma.h"

namespace moepack::gpu::detail {
namespace {

constexpr int kMmaWarps = 4;            // 16 rows each
constexpr int64_t kMaxNe0 = int64_t{1} << 24;  // far above any model's row
constexpr int64_t kMaxStagedNe0 = 49152;       // 204 KiB of x fragments in shared memory
constexpr int kXScaleExp = 14;          // max |x| * 2^s in [2^14, 2^15)

__device__ __forceinline__ uint32_t h2_bits(__half2 h) { return *reinterpret_cast<uint32_t*>(&h); }
__device__ __forceinline__ __half2 bits_h2(uint32_t u) { return *reinterpret_cast<__half2*>(&u); }

// v holds two integers below 1024 in bits 0-9 and 16-25 (other bits zero) -> f16x2 {v0, v1}
// exactly: v | 0x6400_6400 is {1024 + v0, 1024 + v1} (f16's ulp is 1 in [1024, 2048)).
__device__ __forceinline__ uint32_t small_f16x2(uint32_t v) {
  return h2_bits(__hsub2(bits_h2(v | 0x64006400u), bits_h2(0x64006400u)));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16 bytes at p: one 16-byte load when aligned, else four 4-byte loads (rows are 4-aligned).
__device__ __forceinline__ uint4 load16(const uint8_t* p, bool aligned) {
  if (aligned) return __ldcs(reinterpret_cast<const uint4*>(p));
  const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
  return make_uint4(__ldcs(q), __ldcs(q + 1), __ldcs(q + 2), __ldcs(q + 3));
}

__device__ __forceinline__ uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Q4_K sub-block scale and min (ggml get_scale_min_k4) of sub-block j = 4 * HI + jj from the
// super-block's header words h (h.y = scales[0..3], h.z = scales[4..7], h.w = scales[8..11]).
template <bool HI>
__device__ __forceinline__ void q4k_scale_min(const uint4& h, int jj, float d, float dmin, float& d1, float& m1) {
  const unsigned sh = 8u * static_cast<unsigned>(jj);
  const uint32_t a = (h.y >> sh) & 0xFFu, b = (h.z >> sh) & 0xFFu;
  int sc, m;
  if constexpr (!HI) {
    sc = static_cast<int>(a & 63u);
    m = static_cast<int>(b & 63u);
  } else {
    const uint32_t c = (h.w >> sh) & 0xFFu;
    sc = static_cast<int>((c & 0x0Fu) | ((a >> 6) << 4));
    m = static_cast<int>((c >> 4) | ((b >> 6) << 4));
  }
  d1 = d * static_cast<float>(sc);
  m1 = dmin * static_cast<float>(m);
}

// Per x vector (one per group with a single pair): the B fragments, the F32 sums of every 16
// elements and 2^-s, laid out as frag_stride bytes per group (in shared memory when the block
// stages its own x, else in scratch written by x_fragments_kernel):
//   [0, ne0 * 4)          ne0 / 4 uint4 {hi(e0) hi(e2)}, {hi(e1) hi(e3)}, {lo(e0) lo(e2)}, {lo(e1) lo(e3)}
//   [ne0 * 4, + ne0 / 4)  ne0 / 16 floats X
//   then one float: 2^-s
constexpr int kPrepThreads = 256;

__host__ __device__ constexpr int64_t frag_stride(int64_t ne0) { return ne0 * 4 + ne0 / 4 + 16; }

// The fragments of x (ne0 floats) into `base` by the nthreads threads of a block (every thread
// of the block calls it; it synchronises the block). red: nthreads / 32 floats of shared memory.
__device__ void x_fragments(const float* x, int64_t ne0, uint8_t* base, int nthreads, float* red, float* scale_sh) {
  uint4* xf = reinterpret_cast<uint4*>(base);
  float* xsum = reinterpret_cast<float*>(base + ne0 * 4);
  const int tid = static_cast<int>(threadIdx.x);
  float mx = 0.0f;
  for (int64_t k = tid; k < ne0; k += nthreads) mx = fmaxf(mx, fabsf(__ldg(x + k)));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (tid % 32 == 0) red[tid / 32] = mx;
  __syncthreads();
  if (tid == 0) {
    float m = 0.0f;
    for (int i = 0; i < nthreads / 32; ++i) m = fmaxf(m, red[i]);
    int e = 0;
    if (m > 0.0f && isfinite(m)) {
      frexpf(m, &e);  // m in [2^(e-1), 2^e)
      e = min(max(kXScaleExp + 1 - e, -100), 100);
    }
    *scale_sh = ldexpf(1.0f, e);
    xsum[ne0 / 16] = ldexpf(1.0f, -e);
  }
  __syncthreads();
  const float sc = *scale_sh;
  for (int64_t k = tid; k < ne0 / 4; k += nthreads) {
    __half hi[4], lo[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float v = __ldg(x + 4 * k + i) * sc;  // exact: a power of two
      hi[i] = __float2half_rn(v);
      lo[i] = __float2half_rn(v - __half2float(hi[i]));
    }
    xf[k] = make_uint4(h2_bits(__halves2half2(hi[0], hi[2])), h2_bits(__halves2half2(hi[1], hi[3])),
                       h2_bits(__halves2half2(lo[0], lo[2])), h2_bits(__halves2half2(lo[1], lo[3])));
  }
  for (int64_t k = tid; k < ne0 / 16; k += nthreads) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) s += __ldg(x + 16 * k + i);
    xsum[k] = s;
  }
  __syncthreads();
}

// The x row of group grp's single pair (and the pair's index in *j); null when the group has
// another pair count (the same for the whole block).
__device__ __forceinline__ const float* single_pair_x(const GemvBatch& b, int grp, int* j) {
  *j = 0;
  if (b.grp_off) {
    *j = b.grp_off[grp];
    if (b.grp_off[grp + 1] - *j != 1) return nullptr;
  }
  const int64_t xi = b.x_row ? b.x_row[*j] : *j;
  return b.x + grp * b.x_gstride + xi * b.x_stride;
}

__global__ void __launch_bounds__(kPrepThreads) x_fragments_kernel(GemvBatch b, uint8_t* scratch) {
  __shared__ float red[kPrepThreads / 32];
  __shared__ float scale_sh;
  const int grp = static_cast<int>(blockIdx.x);
  int j = 0;
  const float* x = single_pair_x(b, grp, &j);
  if (!x) return;
  x_fragments(x, b.ne0, scratch + grp * frag_stride(b.ne0), kPrepThreads, red, &scale_sh);
}

// Row splits (one warp each, contiguous ranges of super-blocks, summed in warp order): a
// function of the row length and the variant only, so every launch of a shape adds the same
// partials.
__host__ __device__ constexpr int k_splits(int64_t n_superblocks, int splits) {
  return n_superblocks < splits ? 1 : splits;
}

// Q4_K: per super-block (144 bytes: d, dmin, 12 bytes of 6-bit scales/mins, 128 bytes qs) the
// lane holds both rows' headers and its two qs granules (t and 4 + t).
// xf and xsum may be shared or global memory (staged or scratch): generic loads only (an
// __ldg on a shared address is an illegal-address-space error that kills the context).
struct Q4kPath {
  static constexpr int kBytes = 144;
  uint4 ha, hb, ga[2], gb[2];

  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool aligned) {
    ha = load16(pa, aligned);
    hb = load16(pb, aligned);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      ga[r] = load16(pa + 16 + 16 * (4 * r + t), aligned);
      gb[r] = load16(pb + 16 + 16 * (4 * r + t), aligned);
    }
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, bool b_lane, int b_half, const uint4* xf,
                                          const float* xsum, float unscale, float& acca, float& accb) const {
    const float da = __half2float(__ushort_as_half(static_cast<unsigned short>(ha.x & 0xFFFFu)));
    const float dmina = __half2float(__ushort_as_half(static_cast<unsigned short>(ha.x >> 16)));
    const float db = __half2float(__ushort_as_half(static_cast<unsigned short>(hb.x & 0xFFFFu)));
    const float dminb = __half2float(__ushort_as_half(static_cast<unsigned short>(hb.x >> 16)));
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int s = 2 * r + (t >> 1), h = t & 1;
      const int jj = 2 * (t >> 1);  // sub-blocks 2s, 2s + 1 are 4r + jj, 4r + jj + 1
      float d1a[2], m1a[2], d1b[2], m1b[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        if (r == 0) {
          q4k_scale_min<false>(ha, jj + u, da, dmina, d1a[u], m1a[u]);
          q4k_scale_min<false>(hb, jj + u, db, dminb, d1b[u], m1b[u]);
        } else {
          q4k_scale_min<true>(ha, jj + u, da, dmina, d1a[u], m1a[u]);
          q4k_scale_min<true>(hb, jj + u, db, dminb, d1b[u], m1b[u]);
        }
      }
      // First element of this lane's 16 in sub-block 2s (low nibbles); 2s + 1 is 32 further.
      const int64_t e0 = sb * 256 + (2 * s) * 32 + h * 16;
      float dl[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dh[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t wa = word_of(ga[r], i), wb = word_of(gb[r], i);
        const uint32_t wa8 = wa >> 8, wb8 = wb >> 8;
        uint2 vl = make_uint2(0u, 0u), vh = make_uint2(0u, 0u);
        if (b_lane) {
          vl = reinterpret_cast<const uint2*>(xf + (e0 + 4 * i) / 4)[b_half];
          vh = reinterpret_cast<const uint2*>(xf + (e0 + 32 + 4 * i) / 4)[b_half];
        }
        // k rows 2t, 2t+1 <- bytes 0, 2; k rows 2t+8, 2t+9 <- bytes 1, 3 (as the B fragments).
        const uint32_t al[4] = {small_f16x2(wa & 0x000F000Fu), small_f16x2(wb & 0x000F000Fu),
                                small_f16x2(wa8 & 0x000F000Fu), small_f16x2(wb8 & 0x000F000Fu)};
        mma_16816(dl, al, vl.x, vl.y);
        // High nibbles in place: 16 q, exact in f16; the 1/16 goes into the scale (exact).
        const uint32_t ah[4] = {small_f16x2(wa & 0x00F000F0u), small_f16x2(wb & 0x00F000F0u),
                                small_f16x2(wa8 & 0x00F000F0u), small_f16x2(wb8 & 0x00F000F0u)};
        mma_16816(dh, ah, vh.x, vh.y);
      }
      const float xs_l = xsum[e0 / 16], xs_h = xsum[(e0 + 32) / 16];
      acca += d1a[0] * ((dl[0] + dl[1]) * unscale) - m1a[0] * xs_l;
      acca += (d1a[1] * 0.0625f) * ((dh[0] + dh[1]) * unscale) - m1a[1] * xs_h;
      accb += d1b[0] * ((dl[2] + dl[3]) * unscale) - m1b[0] * xs_l;
      accb += (d1b[1] * 0.0625f) * ((dh[2] + dh[3]) * unscale) - m1b[1] * xs_h;
    }
  }
};

// Q2_K: per super-block (84 bytes: 16 scale bytes (low nibble scale, high nibble min), 64 bytes
// qs, d, dmin) lane t holds qs bytes [16 t, 16 t + 16) of both rows: half n = t / 2, positions
// l = 16 (t % 2) + 0..15, i.e. all 16 elements of sub-blocks 8 n + 2 j + t % 2 for j = 0..3
// (2-bit field j of each byte). Blocks are 4-byte aligned only: 4-byte loads.
struct Q2kPath {
  static constexpr int kBytes = 84;
  uint32_t qa[4], qb[4], sa[2], sb2[2], da, db;

  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool) {
    const uint32_t* wa = reinterpret_cast<const uint32_t*>(pa);
    const uint32_t* wb = reinterpret_cast<const uint32_t*>(pb);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      qa[i] = __ldcs(wa + 4 + 4 * t + i);
      qb[i] = __ldcs(wb + 4 + 4 * t + i);
    }
    const int n = t >> 1;
    sa[0] = __ldcs(wa + 2 * n);
    sa[1] = __ldcs(wa + 2 * n + 1);
    sb2[0] = __ldcs(wb + 2 * n);
    sb2[1] = __ldcs(wb + 2 * n + 1);
    da = __ldcs(wa + 20);
    db = __ldcs(wb + 20);
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, bool b_lane, int b_half, const uint4* xf,
                                          const float* xsum, float unscale, float& acca, float& accb) const {
    const float d_a = __half2float(__ushort_as_half(static_cast<unsigned short>(da & 0xFFFFu)));
    const float dmin_a = __half2float(__ushort_as_half(static_cast<unsigned short>(da >> 16)));
    const float d_b = __half2float(__ushort_as_half(static_cast<unsigned short>(db & 0xFFFFu)));
    const float dmin_b = __half2float(__ushort_as_half(static_cast<unsigned short>(db >> 16)));
    const int n = t >> 1, odd = t & 1;
    uint32_t wa8[4], wb8[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      wa8[i] = qa[i] >> 8;
      wb8[i] = qb[i] >> 8;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // Scale byte 8n + 2j + odd: word j / 2 of this half's 8 bytes, byte 2 (j % 2) + odd.
      const unsigned sh = 8u * static_cast<unsigned>(2 * (j & 1) + odd);
      const uint32_t sca = (sa[j >> 1] >> sh) & 0xFFu, scb = (sb2[j >> 1] >> sh) & 0xFFu;
      const int64_t e0 = sb * 256 + n * 128 + j * 32 + odd * 16;
      // Field j in place: q * 4^j, exact in f16 (bytes 1, 3 shifted down by 8 first); 4^-j
      // goes into the scale (exact).
      const uint32_t m02 = 0x00030003u << (2 * j);
      float dd[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint2 v = make_uint2(0u, 0u);
        if (b_lane) v = reinterpret_cast<const uint2*>(xf + (e0 + 4 * i) / 4)[b_half];
        const uint32_t a[4] = {small_f16x2(qa[i] & m02), small_f16x2(qb[i] & m02), small_f16x2(wa8[i] & m02),
                               small_f16x2(wb8[i] & m02)};
        mma_16816(dd, a, v.x, v.y);
      }
      const float inv = 1.0f / static_cast<float>(1 << (2 * j));  // exact
      const float xs = xsum[e0 / 16];
      acca += (d_a * static_cast<float>(sca & 0x0Fu) * inv) * ((dd[0] + dd[1]) * unscale) -
              dmin_a * static_cast<float>(sca >> 4) * xs;
      accb += (d_b * static_cast<float>(scb & 0x0Fu) * inv) * ((dd[2] + dd[3]) * unscale) -
              dmin_b * static_cast<float>(scb >> 4) * xs;
    }
  }
};

template <GgmlType T>
struct MmaPath;
template <>
struct MmaPath<GgmlType::Q4_K> {
  using type = Q4kPath;
};
template <>
struct MmaPath<GgmlType::Q2_K> {
  using type = Q2kPath;
};

// A block of kMmaWarps warps: RW row tiles of 16 rows, each summed by kMmaWarps / RW warps
// (contiguous ranges of super-blocks). STAGED: the block writes its x fragments into dynamic
// shared memory first; else they come from x_fragments_kernel's scratch.
template <GgmlType T, int RW, bool STAGED, int DEPTH>
__global__ void __launch_bounds__(kMmaWarps * 32, DEPTH > 1 ? 3 : RW == 4 ? 5 : 4)
    gemv_mma_kernel(GemvBatch b, const uint8_t* scratch) {
  using Path = typename MmaPath<T>::type;
  constexpr int kSplit = kMmaWarps / RW;
  extern __shared__ uint4 dyn[];
  __shared__ float part[kMmaWarps][16];
  __shared__ float red[kMmaWarps];
  __shared__ float scale_sh;
  const int grp = static_cast<int>(blockIdx.y);
  int j = 0;
  const float* x = single_pair_x(b, grp, &j);
  if (!x) return;  // the same for the whole block
  const int64_t ne0 = b.ne0;
  const uint8_t* base;
  if constexpr (STAGED) {
    x_fragments(x, ne0, reinterpret_cast<uint8_t*>(dyn), kMmaWarps * 32, red, &scale_sh);
    base = reinterpret_cast<const uint8_t*>(dyn);
  } else {
    base = scratch + grp * frag_stride(ne0);
  }
  const uint4* xf = reinterpret_cast<const uint4*>(base);
  const float* xsum = reinterpret_cast<const float*>(base + ne0 * 4);
  const float unscale = xsum[ne0 / 16];

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  const int tile = warp / kSplit, split = warp % kSplit;
  const int64_t rbase = (static_cast<int64_t>(blockIdx.x) * RW + tile) * 16;
  const int64_t ra = rbase + g, rb = rbase + g + 8;
  const uint8_t* wg = b.w_table ? b.w_table[grp] : b.w + static_cast<uint64_t>(grp) * b.w_gstride;
  const uint8_t* rowa = wg + static_cast<uint64_t>(min(ra, b.ne1 - 1)) * b.row_bytes;
  const uint8_t* rowb = wg + static_cast<uint64_t>(min(rb, b.ne1 - 1)) * b.row_bytes;
  const bool aligned = ((reinterpret_cast<uintptr_t>(wg) | b.row_bytes) & 15) == 0;
  // B lanes: lane 9t supplies x_hi, lane 9t + 4 x_lo, at lane t's k rows.
  const int bc = lane >> 2;
  const bool b_lane = (bc >> 1) == t;
  const int b_half = bc & 1;  // 0: hi words (.x, .y), 1: lo words (.z, .w)

  const int64_t nsb = ne0 / 256;
  const int ks = k_splits(nsb, kSplit);
  const bool live = rbase < b.ne1 && split < ks;
  const int64_t sb0 = live ? nsb * split / ks : 0, sb1 = live ? nsb * (split + 1) / ks : 0;
  float acca = 0.0f, accb = 0.0f;
  // ahead[i] holds super-block sb + i: DEPTH super-blocks' bytes are in flight while one is
  // computed (registers: an expert launch has too few warps per SM to hide the latency).
  Path ahead[DEPTH];
#pragma unroll
  for (int i = 0; i < DEPTH; ++i) {
    if (sb0 + i < sb1) ahead[i].fetch(rowa + (sb0 + i) * Path::kBytes, rowb + (sb0 + i) * Path::kBytes, t, aligned);
  }
#pragma unroll 1
  for (int64_t sb = sb0; sb < sb1; ++sb) {
    const Path cur = ahead[0];
#pragma unroll
    for (int i = 0; i + 1 < DEPTH; ++i) ahead[i] = ahead[i + 1];
    if (sb + DEPTH < sb1) {
      ahead[DEPTH - 1].fetch(rowa + (sb + DEPTH) * Path::kBytes, rowb + (sb + DEPTH) * Path::kBytes, t, aligned);
    }
    cur.compute(sb, t, b_lane, b_half, xf, xsum, unscale, acca, accb);
  }
  acca += __shfl_xor_sync(0xffffffffu, acca, 1);
  acca += __shfl_xor_sync(0xffffffffu, acca, 2);
  accb += __shfl_xor_sync(0xffffffffu, accb, 1);
  accb += __shfl_xor_sync(0xffffffffu, accb, 2);
  if constexpr (kSplit == 1) {
    if (t == 0) {
      float* y = b.y + grp * b.y_gstride + static_cast<int64_t>(j) * b.y_stride;
      if (ra < b.ne1) y[ra] = acca;
      if (rb < b.ne1) y[rb] = accb;
    }
  } else {
    if (t == 0) {
      part[warp][g] = acca;
      part[warp][g + 8] = accb;
    }
    __syncthreads();
    if (tid < 16 * RW) {
      const int tl = tid / 16, r = tid % 16;
      const int64_t row = (static_cast<int64_t>(blockIdx.x) * RW + tl) * 16 + r;
      if (row < b.ne1) {
        float sum = part[tl * kSplit][r];
        for (int w = 1; w < ks; ++w) sum += part[tl * kSplit + w][r];
        b.y[grp * b.y_gstride + static_cast<int64_t>(j) * b.y_stride + row] = sum;
      }
    }
  }
}

std::atomic<int> g_variant{0};

template <GgmlType T, int RW, bool STAGED, int DEPTH>
void launch_variant(const GemvBatch& b, cudaStream_t s) {
  const size_t frag = static_cast<size_t>(frag_stride(b.ne0));
  void* scratch = nullptr;
  size_t smem = 0;
  if constexpr (STAGED) {
    smem = frag;
    if (smem > 48 * 1024) {
      // Once per kernel instance and process (the attribute belongs to the kernel).
      static const bool raised = [] {
        MOEPACK_CUDA_CHECK(cudaFuncSetAttribute(gemv_mma_kernel<T, RW, STAGED, DEPTH>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                static_cast<int>(frag_stride(kMaxStagedNe0))));
        return true;
      }();
      (void)raised;
    }
  } else {
    // Stream-ordered scratch from the device's default pool, which keeps up to 64 MiB of
    // freed memory for reuse: no device-wide sync, no driver allocation per launch.
    static const bool pool_ready = [] {
      int dev = 0;
      MOEPACK_CUDA_CHECK(cudaGetDevice(&dev));
      cudaMemPool_t pool;
      MOEPACK_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
      uint64_t keep = 64ull << 20;
      MOEPACK_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
      return true;
    }();
    (void)pool_ready;
    MOEPACK_CUDA_CHECK(cudaMallocAsync(&scratch, static_cast<size_t>(b.n_groups) * frag, s));
    x_fragments_kernel<<<static_cast<unsigned>(b.n_groups), kPrepThreads, 0, s>>>(b, static_cast<uint8_t*>(scratch));
    MOEPACK_CUDA_CHECK(cudaGetLastError());
  }
  const unsigned row_blocks = static_cast<unsigned>((b.ne1 + 16 * RW - 1) / (16 * RW));
  gemv_mma_kernel<T, RW, STAGED, DEPTH><<<dim3(row_blocks, static_cast<unsigned>(b.n_groups), 1), kMmaWarps * 32, smem, s>>>(
      b, static_cast<const uint8_t*>(scratch));
  MOEPACK_CUDA_CHECK(cudaGetLastError());
  if (scratch) MOEPACK_CUDA_CHECK(cudaFreeAsync(scratch, s));
}

template <GgmlType T>
void launch_type(const GemvBatch& b, cudaStream_t s) {
  const int v = g_variant.load(std::memory_order_relaxed);
  // The default (0), the fastest in bench_cuda_backend's side-by-side on the H200: grouped
  // launches (experts) stage x per block, 64 rows per block, no row split, one super-block
  // loaded ahead (1: three ahead in registers, measured slower: 0.26 vs 0.35 for Q4_K); a
  // single matrix (no groups: too few rows to fill the device) splits each row over the
  // block's 4 warps. Rows too long for shared memory use scratch. The choice depends on the
  // launch's shape and kind alone, never on how groups are batched (gemv_mma.h).
  if (v == 1) return launch_variant<T, 4, true, 3>(b, s);
  if (v == 2) return launch_variant<T, 1, true, 1>(b, s);
  if (v == 3) return launch_variant<T, 1, false, 1>(b, s);
  if (b.ne0 > kMaxStagedNe0) return launch_variant<T, 4, false, 1>(b, s);
  if (!b.grp_off) return launch_variant<T, 1, true, 1>(b, s);
  return launch_variant<T, 4, true, 1>(b, s);
}

}  // namespace

bool gemv_mma_supported(GgmlType type, int64_t ne0) {
  return (type == GgmlType::Q4_K || type == GgmlType::Q2_K) && ne0 > 0 && ne0 % 256 == 0 && ne0 <= kMaxNe0;
}

void set_gemv_mma_variant(int variant) {
  if (variant < 0 || variant > 3) throw Error("set_gemv_mma_variant: variant " + std::to_string(variant) + " is not 0..3");
  g_variant.store(variant, std::memory_order_relaxed);
}

void gemv_mma(const GemvBatch& b, cudaStream_t s) {
  if (!gemv_mma_supported(b.type, b.ne0)) throw Error("gemv_mma: unsupported type or row length");
  if (!b.grp_off && b.n_tok != 1) throw Error("gemv_mma: without groups it takes exactly one token");
  if (b.type == GgmlType::Q4_K) {
    launch_type<GgmlType::Q4_K>(b, s);
  } else {
    launch_type<GgmlType::Q2_K>(b, s);
  }
}

}  // namespace moepack::gpu::detail
