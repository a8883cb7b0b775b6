// The tensor-core decode GEMV of gpu/gemv_mma.h (formula, precision and the rule that keeps
// the pack path bit-identical to the GGUF path are there).
//
// Two layouts; launch_type says which launch takes which (by default: the rings).
//
// Ring layout (gemv_pipe_kernel). A block of kMmaWarps warps owns RW tiles of 16 rows; the
// kMmaWarps / RW warps of a tile split its row into contiguous ranges of units (256 elements:
// a Q4_K or Q2_K super-block, eight MXFP4 blocks), summed in warp order at the end (the split
// depends on ne0 and the layout alone). Each warp streams its 16 rows through a private ring
// of STAGES shared-memory stages with cp.async (Ampere+ LDGSTS; no registers held, no block
// barrier): STAGES - 1 stages are in flight while one is computed, and the first ones are
// issued before the block writes its x fragments, so the weights' latency overlaps that work.
// Register layout (gemv_mma_kernel, variant 1 only): one super-block loaded ahead in
// registers from global memory.
//
// Arithmetic: the integer path (the default for every type; "The integer path" and "The column
// layout" further down) or the f16 path (below; variants only: the register layout, variant 2,
// and MXFP4's expert launches before the eighth pass, variant 17).
//
// x fragments of the f16 path. Per 16-element granule of x, one power-of-two scale 2^s
// (max |x| * 2^s in [2^14, 2^15)), the mma B fragments of x * 2^s as two f16 halves (per 4
// elements e0..e3: f16x2 {hi(e0), hi(e2)}, {hi(e1), hi(e3)}, then the same for lo), and the F32
// sum of the granule with 2^-s. A lane's per-sub-block partial sums never mix granules, so the scale is undone per
// granule: no reduction over the vector, and each granule keeps 22 bits of its own elements.
//
// One mma (m16n8k16, A row-major 16 x 16, B col-major 16 x 8, PTX ISA "Matrix fragments for
// mma.m16n8k16"): lane L = 4 g + t supplies A rows g, g + 8 at k = 2t, 2t+1, 2t+8, 2t+9 and
// receives D rows g, g + 8 at columns 2t, 2t+1. Column 2t of B holds x_hi and column 2t + 1
// x_lo at lane t's own k rows and zeros elsewhere (supplied by lanes 9t and 9t + 4, the only
// lanes whose B column c satisfies c / 2 == t; every other lane passes zeros). Hence
// D[g][2t] + D[g][2t+1] = lane L's own sum_k q_k x_k for row g over its 4 k values: every lane
// gets back exactly its own partial dot products, and the per-sub-block scales are applied
// lane-locally. Four mmas cover a granule of one sub-block for 16 rows.
//
// Quants become f16 exactly: (w & 0x000F000F) | 0x6400_6400 is f16x2 {1024 + q0, 1024 + q2},
// minus 1024 in one HSUB2; fields higher in the byte are masked in place (16 q, 4^j q: still
// exact) and the power of two goes into the sub-block's scale. MXFP4's e2m1 codes s|e e|m are
// placed as f16 bits s << 15 | eem << 9, which is the e2m1 value times 2^-14 (subnormal for
// e = 0, as e2m1's own), times 2^15 in one HMUL2: ggml's doubled values {0, 1, 2, 3, 4, 6, 8, 12}
// exactly.
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/dequant.cuh"
#include "gpu/gemv_launch_cap.h"
#include "gpu/gemv_mma.h"
#include "gpu/gemv_quant_words.h"
#include "gpu/gemv_tiled.h"
#include "gpu/swiglu.cuh"

namespace moepack::gpu::detail {
namespace {

constexpr int kMmaWarps = 4;                   // 16 rows each
constexpr int64_t kMaxNe0 = int64_t{1} << 24;  // far above any model's row
// Shared memory a block may take (x fragments + its warps' rings) and still leave room for a
// second block on an SM (227 KiB on sm_90, 99 KiB on sm_120: the staged limit is lowered to
// what the device grants, see launch_pipe_ug).
constexpr int64_t kMaxBlockSmem = 100 * 1024;

__device__ __forceinline__ uint32_t h2_bits(__half2 h) { return *reinterpret_cast<uint32_t*>(&h); }
__device__ __forceinline__ __half2 bits_h2(uint32_t u) { return *reinterpret_cast<__half2*>(&u); }

// PTX prmt.b32 (default mode): bytes of {b, a} picked by the nibbles of sel.
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// v holds two integers below 1024 in bits 0-9 and 16-25 (other bits zero) -> f16x2 {v0, v1}
// exactly: v | 0x6400_6400 is {1024 + v0, 1024 + v1} (f16's ulp is 1 in [1024, 2048)).
__device__ __forceinline__ uint32_t small_f16x2(uint32_t v) {
  return h2_bits(__hsub2(bits_h2(v | 0x64006400u), bits_h2(0x64006400u)));
}

// The MXFP4 codes in bits 0-3 and 16-19 of v -> f16x2 of ggml's kvalues_mxfp4 (doubled e2m1).
__device__ __forceinline__ uint32_t e2m1_f16x2(uint32_t v) {
  const uint32_t bits = ((v & 0x00070007u) << 9) | ((v & 0x00080008u) << 12);  // e2m1 * 2^-14
  return h2_bits(__hmul2(bits_h2(bits), bits_h2(0x78007800u)));                // * 2^15
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Programmatic dependent launch (PTX ISA "griddepcontrol", sm_90+): a GEMV launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it on
// the stream is still running. Before this call it reads only what no kernel writes (the
// weights, w_table, grp_off, x_row: host uploads, or tables a kernel wrote, for which the
// launch is not a dependent one: GemvBatch::tables_from_kernel); the wait returns once the
// previous kernel has finished and its writes are visible (at once when launched without the
// attribute). Then this grid lets the next PDL launch start its own weight loads.
__device__ __forceinline__ void pdl_wait_then_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// An after() that does nothing (x_fragments, x_fragments_i8).
struct NoAfter {
  __device__ void operator()() const {}
};

// cp.async of G bytes (8 or 4: .ca; Q4_K measured slower in 16-byte .cg copies, 0.52 against
// 0.56 of D2D, docs/cuda-backend.md) and the group bookkeeping (PTX ISA "cp.async").
template <int G>
__device__ __forceinline__ void cp_async(void* smem, const void* gmem) {
  static_assert(G == 8 || G == 4, "ring copies are 8- or 4-byte pieces");
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gmem), "n"(G) : "memory");
}
// 16 bytes, L2 only (.cg): the x fragments a block copies from scratch (XF 2).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// 16 bytes at p. GLOBAL: one 16-byte streaming load when aligned, else four 4-byte loads (rows
// are 4-aligned). Shared memory (the pipelined kernel's rings, 16-aligned): a plain load.
template <bool GLOBAL>
__device__ __forceinline__ uint4 load16(const uint8_t* p, bool aligned) {
  if constexpr (!GLOBAL) {
    return *reinterpret_cast<const uint4*>(p);
  } else {
    if (aligned) return __ldcs(reinterpret_cast<const uint4*>(p));
    const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
    return make_uint4(__ldcs(q), __ldcs(q + 1), __ldcs(q + 2), __ldcs(q + 3));
  }
}
template <bool GLOBAL>
__device__ __forceinline__ uint32_t load4(const uint8_t* p) {
  if constexpr (GLOBAL) return __ldcs(reinterpret_cast<const uint32_t*>(p));
  return *reinterpret_cast<const uint32_t*>(p);
}

__device__ __forceinline__ uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ float half_lo(uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xFFFFu)));
}
__device__ __forceinline__ float half_hi(uint32_t w) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

// Q4_K sub-block scale and min (ggml get_scale_min_k4) of sub-block j = 4 * HI + jj from the
// super-block's header words h (h.y = scales[0..3], h.z = scales[4..7], h.w = scales[8..11]).
template <bool HI>
__device__ __forceinline__ void q4k_scale_min(const uint4& h, int jj, float d, float dmin, float& d1,
                                              float& m1) {
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

// Per x vector (one per group with a single pair), frag_stride bytes (in shared memory when
// the block stages its own x, else in scratch written by x_fragments_kernel):
//   [0, ne0 * 4)          ne0 / 4 uint4 {hi(e0) hi(e2)}, {hi(e1) hi(e3)}, {lo(e0) lo(e2)}, {lo(e1) lo(e3)}
//   [ne0 * 4, + ne0 / 2)  ne0 / 16 float2 {sum of the granule's x, 2^-s}
constexpr int kPrepThreads = 256;

__host__ __device__ constexpr int64_t frag_stride(int64_t ne0) { return ne0 * 4 + ne0 / 2; }

// max |v| and the sum of v in element order (a granule's or a lane's share of x).
template <int N>
__device__ __forceinline__ void max_abs_and_sum(const float (&v)[N], float& mx, float& sum) {
  mx = 0.0f;
  sum = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    mx = fmaxf(mx, fabsf(v[i]));
    sum += v[i];
  }
}

// The fragments of x (ne0 floats) into `base`, granule k by thread k mod nthreads of the block;
// a thread loads the x of up to kBatch of its granules before it converts any (their latencies
// overlap), and calls after() once, right after its first loads are issued (the GEMV issues
// weight copies there: the x loads then do not queue behind them). No barrier: the caller
// synchronises before reading the fragments.
template <class After>
__device__ void x_fragments(const float* x, int64_t ne0, uint8_t* base, int nthreads, After after) {
  constexpr int kBatch = 2;
  uint4* xf = reinterpret_cast<uint4*>(base);
  float2* xs = reinterpret_cast<float2*>(base + ne0 * 4);
  const bool vec = (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  for (int64_t k0 = threadIdx.x, first = 1;; k0 += kBatch * nthreads, first = 0) {
    if (k0 >= ne0 / 16) {
      if (first) after();
      break;
    }
    float vb[kBatch][16];
#pragma unroll
    for (int bi = 0; bi < kBatch; ++bi) {
      const int64_t k = k0 + bi * nthreads;
      if (k >= ne0 / 16) {
#pragma unroll
        for (int i = 0; i < 16; ++i) vb[bi][i] = 0.0f;
      } else if (vec) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float4 q = __ldg(reinterpret_cast<const float4*>(x + 16 * k) + i);
          vb[bi][4 * i] = q.x;
          vb[bi][4 * i + 1] = q.y;
          vb[bi][4 * i + 2] = q.z;
          vb[bi][4 * i + 3] = q.w;
        }
      } else {
#pragma unroll
        for (int i = 0; i < 16; ++i) vb[bi][i] = __ldg(x + 16 * k + i);
      }
    }
    if (first) after();
#pragma unroll
    for (int bi = 0; bi < kBatch; ++bi) {
      const int64_t k = k0 + bi * nthreads;
      if (k >= ne0 / 16) break;
      const float(&v)[16] = vb[bi];
      float mx, sum;
      max_abs_and_sum(v, mx, sum);
      // 2^s with max |x| * 2^s in [2^14, 2^15): mx in [2^(E-127), 2^(E-126)) for its biased
      // exponent E, so s = 141 - E, clamped to +-126 so that 2^s and 2^-s are normal floats. Every
      // finite x is in range (E = 254 gives s = -113); zero and subnormal granules get 2^126 (their
      // products stay far below f16's range); inf and NaN stay what they are (inf - inf in x_lo
      // makes an inf granule's sums NaN where the CPU's are +-inf).
      const int s = min(max(141 - static_cast<int>((__float_as_uint(mx) >> 23) & 0xFFu), -126), 126);
      const float sc = __uint_as_float(static_cast<uint32_t>(127 + s) << 23);
      xs[k] = make_float2(sum, __uint_as_float(static_cast<uint32_t>(127 - s) << 23));
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        // e0..e3 = v[4q..4q+3] * 2^s (exact); pairs {e0, e2}, {e1, e3} as the B fragments.
        const float e0 = v[4 * q] * sc, e1 = v[4 * q + 1] * sc, e2 = v[4 * q + 2] * sc, e3 = v[4 * q + 3] * sc;
        const __half2 h02 = __floats2half2_rn(e0, e2), h13 = __floats2half2_rn(e1, e3);
        const float2 f02 = __half22float2(h02), f13 = __half22float2(h13);
        const __half2 l02 = __floats2half2_rn(e0 - f02.x, e2 - f02.y),
                      l13 = __floats2half2_rn(e1 - f13.x, e3 - f13.y);
        xf[4 * k + q] = make_uint4(h2_bits(h02), h2_bits(h13), h2_bits(l02), h2_bits(l13));
      }
    }
  }
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

// The GEMV kernels' block start: the x row of the block's group (blockIdx.y) and its pair j, or
// null (the whole block returns) after waiting for the kernel before it, so that the grid
// never ends before that kernel even when no group of the launch has a single pair.
__device__ __forceinline__ const float* block_pair_x(const GemvBatch& b, int* j) {
  const float* x = single_pair_x(b, static_cast<int>(blockIdx.y), j);
  if (!x) pdl_wait_then_release();
  return x;
}

// The arithmetic a launch takes (gemv_mma.h): f16 halves of x (MXFP4, the register layout),
// the integer path with the diagonal B fragments (variant 3), the integer path with x's slices
// in B's columns (the default for Q4_K / Q2_K, and single MXFP4 matrices; "The column layout"
// below).
// kI8Col2: Q2_K's column layout with its scales and minimums on the tensor cores
// (Q2kColPath2). kI8Col3 (tenth pass): Q2_K's minimums in one mma a super-block against
// per-sub-block sums of x (Q2kColPath3), MXFP4 with its e2m1 tables in registers and two
// blocks' scales split over the quad (Mxfp4ColPath2). The default's column arithmetic per type:
// col_arith (Q4_K in Q4kColPath; Q2_K and MXFP4 the tenth pass's since it); ninth_arith the
// ninth pass's default (variant 22).
enum Arith : int { kF16 = 0, kI8Diag = 1, kI8Col = 2, kI8Col2 = 3, kI8Col3 = 4 };
template <GgmlType T>
constexpr int col_arith() {
  return T == GgmlType::Q4_K || T == GgmlType::Q5_K || T == GgmlType::Q3_K || T == GgmlType::Q6_K ? kI8Col
                                                                                                  : kI8Col3;
}
template <GgmlType T>
constexpr int ninth_arith() {
  return T == GgmlType::Q2_K ? kI8Col2 : kI8Col;
}

template <GgmlType T, int P>
__global__ void __launch_bounds__(kPrepThreads) x_fragments_kernel(GemvBatch b, uint8_t* scratch);

// Row splits (one warp each, contiguous ranges of units, summed in warp order): a function of
// the row length and the layout only, so every launch of a shape adds the same partials.
__host__ __device__ constexpr int k_splits(int64_t n_units, int splits) {
  return n_units < splits ? 1 : splits;
}

// What a lane needs of the B side: its fragments (xf: shared or global memory, generic loads
// only: an __ldg on a shared address is an illegal-address-space error that kills the
// context) and per-granule {sum, 2^-s}.
struct XView {
  const uint4* xf;
  const float2* xs;
  bool b_lane;  // lane 9t (x_hi) or 9t + 4 (x_lo)
  int b_half;   // 0: hi words (.x, .y), 1: lo words (.z, .w)
  __device__ __forceinline__ uint2 frag(int64_t e) const {
    return b_lane ? reinterpret_cast<const uint2*>(xf + e / 4)[b_half] : make_uint2(0u, 0u);
  }
};

// Q4_K: per super-block (144 bytes: d, dmin, 12 bytes of 6-bit scales/mins, 128 bytes qs) the
// lane holds both rows' headers and its two qs granules (t and 4 + t).
struct Q4kPath {
  static constexpr int kBytes = 144;
  uint4 ha, hb, ga[2], gb[2];

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool aligned) {
    ha = load16<GLOBAL>(pa, aligned);
    hb = load16<GLOBAL>(pb, aligned);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      ga[r] = load16<GLOBAL>(pa + 16 + 16 * (4 * r + t), aligned);
      gb[r] = load16<GLOBAL>(pb + 16 + 16 * (4 * r + t), aligned);
    }
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const XView& xv, float& acca,
                                          float& accb) const {
    const float da = half_lo(ha.x), dmina = half_hi(ha.x), db = half_lo(hb.x), dminb = half_hi(hb.x);
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
        const uint2 vl = xv.frag(e0 + 4 * i), vh = xv.frag(e0 + 32 + 4 * i);
        // k rows 2t, 2t+1 <- bytes 0, 2; k rows 2t+8, 2t+9 <- bytes 1, 3 (as the B fragments).
        const uint32_t al[4] = {small_f16x2(wa & 0x000F000Fu), small_f16x2(wb & 0x000F000Fu),
                                small_f16x2(wa8 & 0x000F000Fu), small_f16x2(wb8 & 0x000F000Fu)};
        mma_16816(dl, al, vl.x, vl.y);
        // High nibbles in place: 16 q, exact in f16; the 1/16 goes into the scale (exact).
        const uint32_t ah[4] = {small_f16x2(wa & 0x00F000F0u), small_f16x2(wb & 0x00F000F0u),
                                small_f16x2(wa8 & 0x00F000F0u), small_f16x2(wb8 & 0x00F000F0u)};
        mma_16816(dh, ah, vh.x, vh.y);
      }
      const float2 xl = xv.xs[e0 / 16], xh = xv.xs[(e0 + 32) / 16];
      acca += d1a[0] * ((dl[0] + dl[1]) * xl.y) - m1a[0] * xl.x;
      acca += (d1a[1] * 0.0625f) * ((dh[0] + dh[1]) * xh.y) - m1a[1] * xh.x;
      accb += d1b[0] * ((dl[2] + dl[3]) * xl.y) - m1b[0] * xl.x;
      accb += (d1b[1] * 0.0625f) * ((dh[2] + dh[3]) * xh.y) - m1b[1] * xh.x;
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

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      qa[i] = load4<GLOBAL>(pa + 16 + 16 * t + 4 * i);
      qb[i] = load4<GLOBAL>(pb + 16 + 16 * t + 4 * i);
    }
    const int n = t >> 1;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      sa[i] = load4<GLOBAL>(pa + 8 * n + 4 * i);
      sb2[i] = load4<GLOBAL>(pb + 8 * n + 4 * i);
    }
    da = load4<GLOBAL>(pa + 80);
    db = load4<GLOBAL>(pb + 80);
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const XView& xv, float& acca,
                                          float& accb) const {
    const float d_a = half_lo(da), dmin_a = half_hi(da), d_b = half_lo(db), dmin_b = half_hi(db);
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
        const uint2 v = xv.frag(e0 + 4 * i);
        const uint32_t a[4] = {small_f16x2(qa[i] & m02), small_f16x2(qb[i] & m02), small_f16x2(wa8[i] & m02),
                               small_f16x2(wb8[i] & m02)};
        mma_16816(dd, a, v.x, v.y);
      }
      const float inv = 1.0f / static_cast<float>(1 << (2 * j));  // exact
      const float2 xs = xv.xs[e0 / 16];
      acca += (d_a * static_cast<float>(sca & 0x0Fu) * inv) * ((dd[0] + dd[1]) * xs.y) -
              dmin_a * static_cast<float>(sca >> 4) * xs.x;
      accb += (d_b * static_cast<float>(scb & 0x0Fu) * inv) * ((dd[2] + dd[3]) * xs.y) -
              dmin_b * static_cast<float>(scb >> 4) * xs.x;
    }
  }
};

// MXFP4: a unit is 8 blocks of 17 bytes (E8M0 scale e, 16 bytes qs: element i the low nibble
// of qs[i], element 16 + i its high nibble); lane t takes qs word t of every block (elements
// 4t..4t+3 and 16+4t..16+4t+3). Its words are at odd byte offsets: assembled from aligned
// words (funnel shift) in shared memory. Only the pipelined kernel serves MXFP4.
struct Mxfp4Path {
  static constexpr int kBytes = 136;
  uint32_t wa[8], wb[8];
  float dea[8], deb[8];

  // Row r's qs word t of block k: bytes 17 k + 1 + 4 t .. + 3 from a 4-aligned row start p (the
  // rings' rows start 8-aligned: 136-byte rows in 16-aligned stages), i.e. aligned words
  // t + o_k and t + o_k + 1 (o_k = (17 k + 1) / 4) funnel-shifted by 8 ((17 k + 1) mod 4) bits,
  // a constant: 32-bit shared loads (an address rounded down by pointer arithmetic on an
  // integer made these generic 64-bit loads: ~8 instructions a word on the H200).
  template <int K>
  __device__ __forceinline__ static uint32_t qs_word(const uint32_t* p) {
    constexpr int kOff = (17 * K + 1) / 4, kShift = 8 * ((17 * K + 1) % 4);
    if constexpr (kShift == 0) {
      return p[kOff];
    } else {
      return __funnelshift_r(p[kOff], p[kOff + 1], kShift);
    }
  }
  template <int K>
  __device__ __forceinline__ void fetch_block(const uint32_t* qa, const uint32_t* qb, const uint8_t* pa,
                                              const uint8_t* pb) {
    wa[K] = qs_word<K>(qa);
    wb[K] = qs_word<K>(qb);
    dea[K] = e8m0_half(pa[17 * K]);
    deb[K] = e8m0_half(pb[17 * K]);
    if constexpr (K < 7) fetch_block<K + 1>(qa, qb, pa, pb);
  }

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool) {
    static_assert(!GLOBAL, "MXFP4 is served from shared memory only");
    fetch_block<0>(reinterpret_cast<const uint32_t*>(pa) + t, reinterpret_cast<const uint32_t*>(pb) + t, pa,
                   pb);
  }

  __device__ __forceinline__ void compute(int64_t u, int t, const XView& xv, float& acca, float& accb) const {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int64_t e0 = u * 256 + k * 32 + 4 * t;  // low nibbles; high nibbles at e0 + 16
      const uint32_t a8 = wa[k] >> 8, b8 = wb[k] >> 8;
      float dl[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dh[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const uint2 vl = xv.frag(e0), vh = xv.frag(e0 + 16);
      const uint32_t al[4] = {e2m1_f16x2(wa[k]), e2m1_f16x2(wb[k]), e2m1_f16x2(a8), e2m1_f16x2(b8)};
      mma_16816(dl, al, vl.x, vl.y);
      const uint32_t ah[4] = {e2m1_f16x2(wa[k] >> 4), e2m1_f16x2(wb[k] >> 4), e2m1_f16x2(a8 >> 4),
                              e2m1_f16x2(b8 >> 4)};
      mma_16816(dh, ah, vh.x, vh.y);
      const float2 xl = xv.xs[(u * 256 + k * 32) / 16], xh = xv.xs[(u * 256 + k * 32 + 16) / 16];
      acca += dea[k] * ((dl[0] + dl[1]) * xl.y + (dh[0] + dh[1]) * xh.y);
      accb += deb[k] * ((dl[2] + dl[3]) * xl.y + (dh[2] + dh[3]) * xh.y);
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
template <>
struct MmaPath<GgmlType::MXFP4> {
  using type = Mxfp4Path;
};

// ---- The integer path (Q4_K, Q2_K): mma.sync m16n8k32, u8 quants x s8 slices of x ----------
//
// x is cut per super-block (256 elements, one power-of-two scale 2^s with max |x| 2^s in
// [32, 64)) into four signed 7-bit slices: y = x 2^s = X0 + X1 2^-7 + X2 2^-14 + X3 2^-21 +
// r, |Xk| <= 64, |r| <= 2^-22 (each slice the rounded residual of the one before, every step
// exact in F32). A k32 mma multiplies 16 rows of quants (u8: nibbles, or 2-bit fields, in place
// in their byte) by two slices at once, exactly in s32. The diagonal trick of the f16 path
// holds for m16n8k32 as well: lane 4g + t supplies A rows g, g + 8 at k = 4t..4t+3 and
// 4t+16..4t+19 and receives D rows g, g + 8 at columns 2t, 2t+1, which are the lane's own sums
// with the slices in B columns 2t and 2t + 1 (supplied by lanes 9t and 9t + 4). Lane t's eight
// k of a 32-element group are its elements 8t..8t+7 (the A words are bytes 8t..8t+7 of the
// group's 32 quant bytes; the B fragments are laid out to match). The sub-block scales are
// small integers, applied in s32 (IMAD) per slice; one F32 conversion per slice, row and
// super-block: sum = d 2^-s (T0 + T1 2^-7 + T2 2^-14 + T3 2^-21) / F - dmin sum_j m_j X_j.
// Error: |r| 2^-s <= 2^-27 max |x| of the super-block per element, far inside gpu_ops_test's
// 1e-5 sum |w x| + 1e-6 (the f16 path keeps 22 bits per element, this one 27 bits of the
// block maximum).
//
// Fragments per x vector (frag_stride_i8 bytes):
//   [0, ne0 * 4)   per 32-element group G, lane t, half h: uint4 {slice h of elements 8t..8t+3,
//                  of 8t+4..8t+7, slice h + 2 of the same} (h = 0 for B column 2t, 1 for 2t+1)
//   then ne0 / 16 floats: the sum of every 16 elements; then ne0 / 256 floats: 2^-s.
// (frag_stride_i8 and the other layouts' sizes: gpu/gemv_launch_cap.h)

// Where x_fragments_i8 puts the slices' words (the sums after them are the same for all but
// MXFP4's and kQ2kMinColumns'): the diagonal layout above, or the column layout of Q4_K, Q2_K
// or MXFP4 ("The column layout" below).
// kQ2kMinColumns: kQ2kColumns' pairs, then per super-block the B words of its minimums' mma
// (Q2kColPath3) where kQ2kColumns has the 16-element sums (ne0 / 2 bytes instead of ne0 / 4:
// frag_stride_mx, kMxColumns' size).
// kMxMagicColumns: kMxColumns with kRoundMagicBits added to the odd slices' offsets
// (Mxfp4ColPath2's conversion without I2F), each pair of offsets stored twice, {o0, o1, o0, o1}
// and {o2, o3, o2, o3}: an mma's C for rows g and g + 8 in one 16-byte load (frag_stride_mx2).
enum SliceLayout : int {
  kDiagWords = 0,
  kQ4kColumns = 1,
  kQ2kColumns = 2,
  kMxColumns = 3,
  kQ2kMinColumns = 4,
  kMxMagicColumns = 5
};

// The fragments of MXFP4's column layout: ne0 * 4 bytes of pairs, per 32-element block four
// s32 values -12 times the sums of its slices' values (ne0 / 2 bytes), ne0 / 256 floats 2^-s
// (frag_stride_mx); kMxMagicColumns' per block 8 s32 offsets (ne0 bytes: frag_stride_mx2).

// Rounding to an integer without FRND / F2I (quarter-rate on the SMs, and 16 of them per
// element made the preparation below a third of the GEMV's time on the H200): for |y| <= 2^22,
// y + 1.5 2^23 rounds y to the nearest integer n (ties to even, as rintf: F32's ulp there is
// 1), the sum's bits are 0x4B400000 + n, so its low byte is n's two's complement low byte, and
// the sum minus 1.5 2^23 is n exactly. (No fast-math here: the compiler keeps both additions.)
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
constexpr uint32_t kRoundMagicBits = 0x4B400000u;

// The low bytes of four such sums as one s8x4 word (byte i from r_i).
__device__ __forceinline__ uint32_t low_bytes(uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  return __byte_perm(__byte_perm(r0, r1, 0x0040), __byte_perm(r2, r3, 0x0040), 0x5410);
}

// The elements of a super-block a lane slices (x_fragments_i8): lane_first(L) + {0..3}, then
// lane_first(L) + lane_second() + {0..3}.
template <int LAYOUT>
__host__ __device__ constexpr int lane_second() {
  return LAYOUT == kMxColumns || LAYOUT == kMxMagicColumns ? 16 : 4;
}
template <int LAYOUT>
__host__ __device__ constexpr int lane_first(int lane) {
  return LAYOUT == kMxColumns || LAYOUT == kMxMagicColumns ? 32 * (lane / 4) + 4 * (lane % 4) : 8 * lane;
}

// Super-block k of x (its 256 elements: this lane's 8 in v, at the lane's elements of the
// layout: see x_fragments_i8) into the fragments at `base` of an ne0-element vector. Every lane
// of the warp must call it (shuffles).
template <int LAYOUT>
__device__ __forceinline__ void slice_super_block(const float (&v)[8], int64_t k, int64_t ne0, uint8_t* base,
                                                  int lane) {
  constexpr bool kX16 = LAYOUT != kMxColumns && LAYOUT != kMxMagicColumns && LAYOUT != kQ2kMinColumns;
  uint4* xf = reinterpret_cast<uint4*>(base);
  float* x16 = reinterpret_cast<float*>(base + ne0 * 4);
  float* unscale = kX16 ? x16 + ne0 / 16
                        : reinterpret_cast<float*>(base + ne0 * 4 + (LAYOUT == kMxMagicColumns ? ne0 : ne0 / 2));
  float mx, sum;
  max_abs_and_sum(v, mx, sum);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  const float pair = __shfl_xor_sync(0xffffffffu, sum, 1);
  if (kX16 && (lane & 1) == 0) x16[k * 16 + lane / 2] = sum + pair;
  // max |x| 2^s in [32, 64): mx in [2^(E-127), 2^(E-126)) for its biased exponent E, s = 132
  // - E, clamped to +-126 (2^s and 2^-s normal; every finite x in range: E = 254 gives s =
  // -122); a block whose max is inf gets 2^-s = NaN, so its sums are NaN (the CPU's are +-inf
  // or NaN). A NaN element is lost to fmaxf and is sliced as 0; it makes the super-block's
  // 2^-s NaN instead (and reaches Q4_K's and Q2kColPath's min terms through the 16-element
  // sums too; MXFP4, Q2kColPath2 and Q2kColPath3 have no F32 min term).
  const bool nan = __any_sync(0xffffffffu, sum != sum);
  const uint32_t e = nan ? 0xFFu : (__float_as_uint(mx) >> 23) & 0xFFu;
  const int s = min(max(132 - static_cast<int>(e), -126), 126);
  const float sc = __uint_as_float(static_cast<uint32_t>(127 + s) << 23);
  if (lane == 0)
    unscale[k] =
        e == 0xFFu ? __uint_as_float(0x7FC00000u) : __uint_as_float(static_cast<uint32_t>(127 - s) << 23);
  // r[q][i]: slice q of element i as 1.5 2^23 + slice (kRoundMagic); |y| <= 64 throughout.
  uint32_t r[4][8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    // exact: a power of two. A NaN element is sliced as 0 (the GPU's y + kRoundMagic would
    // be the canonical NaN 0x7FFFFFFF, whose low byte is -1); see the comment above.
    float y = e == 0xFFu || v[i] != v[i] ? 0.0f : v[i] * sc;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float rq = y + kRoundMagic;      // rounded to an integer, ties to even
      r[q][i] = __float_as_uint(rq);
      y = (y - (rq - kRoundMagic)) * 128.0f;  // exact: |y| < 64 and a rounded residual
    }
  }
  uint32_t w[4][2];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    w[q][0] = low_bytes(r[q][0], r[q][1], r[q][2], r[q][3]);
    w[q][1] = low_bytes(r[q][4], r[q][5], r[q][6], r[q][7]);
  }
  // Slice q's sum over the elements of this lane and the other lane of its pair (16
  // elements: a Q2_K sub-block, half an MXFP4 block); every lane of the warp must call it.
  const auto pair_slice_sum = [&](int q) {
    int sum = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) sum += static_cast<int>(r[q][i] - kRoundMagicBits);
    return sum + __shfl_xor_sync(0xffffffffu, sum, 1);
  };
  if constexpr (LAYOUT == kDiagWords) {
    const int64_t slot = ((k * 8 + lane / 4) * 4 + lane % 4) * 2;
    xf[slot] = make_uint4(w[0][0], w[0][1], w[2][0], w[2][1]);
    xf[slot + 1] = make_uint4(w[1][0], w[1][1], w[3][0], w[3][1]);
  } else if constexpr (LAYOUT == kQ4kColumns) {
    // Elements 8L + 4m + i: group p = L / 8, half h = L % 8 / 4, t = L % 4; word 16 h + 4 s +
    // t of unit 2p + m.
    uint32_t* xw =
        reinterpret_cast<uint32_t*>(base) + k * 256 + (lane / 8) * 64 + (lane % 8 / 4) * 16 + lane % 4;
#pragma unroll
    for (int m = 0; m < 2; ++m) {
#pragma unroll
      for (int q = 0; q < 4; ++q) xw[m * 32 + 4 * q] = w[q][m];
    }
  } else if constexpr (LAYOUT == kQ2kColumns || LAYOUT == kQ2kMinColumns) {
    // Elements 8L..8L+7: unit c = L / 4, t = L % 4; pair 4 s + t of the unit.
    uint2* xp = reinterpret_cast<uint2*>(base) + k * 128 + (lane / 4) * 16 + lane % 4;
#pragma unroll
    for (int q = 0; q < 4; ++q) xp[4 * q] = make_uint2(w[q][0], w[q][1]);
    if constexpr (LAYOUT == kQ2kMinColumns) {
      // The minimums' B (Q2kColPath3): sub-block j = L / 2 (lanes 2j, 2j + 1) of slice q sums
      // to S in [-1024, 1024], stored as S = 128 hi + lo (hi in [-8, 8], lo in [-64, 63]) in
      // column c = 2 q (hi) or 2 q + 1 (lo) at k = j: byte 4 (4 c + j / 4) + j % 4 = 16 c + j
      // of the super-block's 128 (word 4 c + j / 4 is lane 4 c + j / 4's B word). Lane 2j
      // stores slices 0, 1, lane 2j + 1 slices 2, 3.
      int8_t* xm = reinterpret_cast<int8_t*>(base + ne0 * 4) + k * 128 + lane / 2;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int sum_q = pair_slice_sum(q);
        const int hi = (sum_q + 64) >> 7;  // arithmetic shift: floor
        if ((lane & 1) == (q >> 1)) {
          xm[16 * (2 * q)] = static_cast<int8_t>(hi);
          xm[16 * (2 * q + 1)] = static_cast<int8_t>(sum_q - 128 * hi);
        }
      }
    }
  } else {
    // Block c = L / 4, t = L % 4: pair 4 s + t = slice s of elements {4t, 4t+16, 4t+1, 4t+17},
    // {4t+2, 4t+18, 4t+3, 4t+19} (v[0..3] are 4t.., v[4..7] 16+4t..), and -12 times the
    // block's sums.
    uint2* xp = reinterpret_cast<uint2*>(base) + k * 128 + (lane / 4) * 16 + lane % 4;
    int32_t* xs = reinterpret_cast<int32_t*>(base + ne0 * 4) + (k * 8 + lane / 4) * 4;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      xp[4 * q] = make_uint2(low_bytes(r[q][0], r[q][4], r[q][1], r[q][5]),
                             low_bytes(r[q][2], r[q][6], r[q][3], r[q][7]));
      int sum_q = pair_slice_sum(q);
      sum_q += __shfl_xor_sync(0xffffffffu, sum_q, 2);
      if (lane % 4 == 0) {  // the offset of the values (Mxfp4ColPath, Mxfp4ColPath2)
        if constexpr (LAYOUT == kMxMagicColumns) {
          const int o = -12 * sum_q + ((q & 1) ? static_cast<int>(kRoundMagicBits) : 0);
          int32_t* xs2 = reinterpret_cast<int32_t*>(base + ne0 * 4) + (k * 8 + lane / 4) * 8;
          xs2[(q >> 1) * 4 + (q & 1)] = o;
          xs2[(q >> 1) * 4 + (q & 1) + 2] = o;
        } else {
          xs[q] = -12 * sum_q;
        }
      }
    }
  }
}

// The fragments of x (ne0 floats, a multiple of 256) into `base`: super-block k by warp k mod
// nwarps of the block, lane L taking elements 8L..8L+7 (group L / 4, lane-in-quad L % 4; for
// kMxColumns elements 32 (L / 4) + 4 (L % 4) + {0..3, 16..19}). A warp loads the x of up to
// kBatch of its super-blocks before it slices any, so their latencies overlap, and calls
// after() once, right after its first loads are issued (as x_fragments).
// warp_base: this block's first warp among the nwarps that share the vector (0 when one block
// prepares it all; x_fragments_wide_kernel spreads a vector over several blocks).
// No barrier: the caller synchronises before reading them.
// COHERENT: x is read through L2 (ld.global.cg) instead of the read-only path (ld.global.nc),
// for an x written earlier in the same kernel by other blocks (gemv_tiled_ffn_kernel's SwiGLU
// rows): the read-only path is only defined for data no thread of the kernel writes.
template <int LAYOUT, class After, bool COHERENT = false>
__device__ void x_fragments_i8(const float* x, int64_t ne0, uint8_t* base, int nwarps, After after,
                               int warp_base = 0) {
  constexpr int kBatch = 4;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const bool vec = (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  const int64_t nsb = ne0 / 256;
  const int second = lane_second<LAYOUT>();  // where elements 4..7 of the lane start
  const int64_t lane_off = lane_first<LAYOUT>(lane);
  for (int64_t k0 = warp_base + threadIdx.x / 32, first = 1;; k0 += kBatch * nwarps, first = 0) {
    if (k0 >= nsb) {
      if (first) after();
      break;
    }
    float vb[kBatch][8];
#pragma unroll
    for (int bi = 0; bi < kBatch; ++bi) {
      const int64_t k = k0 + bi * nwarps;
      const float* p = x + k * 256 + lane_off;
      if (k >= nsb) {
#pragma unroll
        for (int i = 0; i < 8; ++i) vb[bi][i] = 0.0f;
      } else if (vec) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        const float4* s4 = reinterpret_cast<const float4*>(p + second);
        const float4 q0 = COHERENT ? __ldcg(p4) : __ldg(p4), q1 = COHERENT ? __ldcg(s4) : __ldg(s4);
        vb[bi][0] = q0.x, vb[bi][1] = q0.y, vb[bi][2] = q0.z, vb[bi][3] = q0.w;
        vb[bi][4] = q1.x, vb[bi][5] = q1.y, vb[bi][6] = q1.z, vb[bi][7] = q1.w;
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float* q = p + (i < 4 ? i : second + i - 4);
          vb[bi][i] = COHERENT ? __ldcg(q) : __ldg(q);
        }
      }
    }
    if (first) after();
#pragma unroll
    for (int bi = 0; bi < kBatch; ++bi) {
      const int64_t k = k0 + bi * nwarps;
      if (k >= nsb) break;  // the same for the whole warp
      slice_super_block<LAYOUT>(vb[bi], k, ne0, base, lane);
    }
  }
}

struct I8View {
  const uint4* xf;
  const float* x16;
  const float* unscale;
  bool b_lane;  // lane 9t (slices 0, 2) or 9t + 4 (slices 1, 3)
  int b_half;
  // The B words of 32-element group G for this lane's quad position t (a B lane's own t).
  __device__ __forceinline__ uint4 frag(int64_t G, int t) const {
    return b_lane ? xf[(G * 4 + t) * 2 + b_half] : make_uint4(0u, 0u, 0u, 0u);
  }
};

__device__ __forceinline__ void mma_i8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

// d += A B (the mma's own accumulator).
__device__ __forceinline__ void mma_i8_acc(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = A B with A signed (s8 x s8: Q3kColPath's quants).
__device__ __forceinline__ void mma_s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%10,%10,%10};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
}

// T[slice][row] += sc_row * D: one group's two mmas (slices 0, 1 and 2, 3) of 16 rows.
__device__ __forceinline__ void group_i8(int (&T)[4][2], const uint32_t (&a)[4], const uint4& bf, int sca,
                                         int scb) {
  int d01[4], d23[4];
  mma_i8(d01, a, bf.x, bf.y);
  mma_i8(d23, a, bf.z, bf.w);
  T[0][0] += sca * d01[0], T[1][0] += sca * d01[1], T[0][1] += scb * d01[2], T[1][1] += scb * d01[3];
  T[2][0] += sca * d23[0], T[3][0] += sca * d23[1], T[2][1] += scb * d23[2], T[3][1] += scb * d23[3];
}

// The slices' sum of one row: T0 + T1 2^-7 + T2 2^-14 + T3 2^-21 (F32).
__device__ __forceinline__ float slices_sum(const int (&T)[4][2], int r) {
  return static_cast<float>(T[0][r]) + static_cast<float>(T[1][r]) * 0x1p-7f +
         static_cast<float>(T[2][r]) * 0x1p-14f + static_cast<float>(T[3][r]) * 0x1p-21f;
}

// Q4_K (144 bytes: d, dmin, 12 scale bytes, qs in four 32-byte groups holding sub-blocks 2p
// (low nibbles) and 2p + 1 (high nibbles, kept in place: 16 q, so the low sub-blocks' scales
// are multiplied by 16 and F = 16)). The lane reads its 8 bytes of each group of both rows.
struct Q4kI8Path {
  static constexpr int kBytes = 144;
  uint4 ha, hb;
  uint2 qa[4], qb[4];

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool) {
    static_assert(!GLOBAL, "served from shared memory only");
    ha = *reinterpret_cast<const uint4*>(pa);
    hb = *reinterpret_cast<const uint4*>(pb);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      qa[p] = *reinterpret_cast<const uint2*>(pa + 16 + 32 * p + 8 * t);
      qb[p] = *reinterpret_cast<const uint2*>(pb + 16 + 32 * p + 8 * t);
    }
  }

  // ggml get_scale_min_k4, four bytes at a time: the scales of sub-blocks 0-3 (lo) and 4-7 (hi)
  // of both rows.
  __device__ __forceinline__ void scale_words(uint32_t (&sc_lo)[2], uint32_t (&sc_hi)[2]) const {
    sc_lo[0] = k4_scales_lo(ha.y), sc_lo[1] = k4_scales_lo(hb.y);
    sc_hi[0] = k4_scales_hi(ha.y, ha.w);
    sc_hi[1] = k4_scales_hi(hb.y, hb.w);
  }

  // The end of a super-block: acc += d (S_r us) - dmin m_r for rows a and b, S_r = sum(r) the
  // row's slice sum; the minimums: this lane adds sub-blocks t and t + 4 of each row (the quad
  // covers all 8).
  template <class Sum>
  __device__ __forceinline__ void finish_sb(int64_t sb, int t, const float* x16, float us, Sum sum,
                                            float& acca, float& accb) const {
    const uint32_t m_lo[2] = {k4_mins_lo(ha.z), k4_mins_lo(hb.z)};
    const uint32_t m_hi[2] = {k4_mins_hi(ha.z, ha.w), k4_mins_hi(hb.z, hb.w)};
    const unsigned sh = 8u * static_cast<unsigned>(t);
    const float xa = x16[sb * 16 + 2 * t] + x16[sb * 16 + 2 * t + 1];
    const float xb = x16[sb * 16 + 8 + 2 * t] + x16[sb * 16 + 8 + 2 * t + 1];
    const float ma =
        static_cast<float>((m_lo[0] >> sh) & 0xFFu) * xa + static_cast<float>((m_hi[0] >> sh) & 0xFFu) * xb;
    const float mb =
        static_cast<float>((m_lo[1] >> sh) & 0xFFu) * xa + static_cast<float>((m_hi[1] >> sh) & 0xFFu) * xb;
    acca += half_lo(ha.x) * (sum(0) * us) - half_hi(ha.x) * ma;
    accb += half_lo(hb.x) * (sum(1) * us) - half_hi(hb.x) * mb;
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const I8View& xv, float& acca,
                                          float& accb) const {
    uint32_t sc_lo[2], sc_hi[2];
    scale_words(sc_lo, sc_hi);
    int T[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int j0 = 2 * p, j1 = 2 * p + 1;
      const auto sc = [&](int r, int j) {
        return static_cast<int>(((j < 4 ? sc_lo[r] : sc_hi[r]) >> (8 * (j & 3))) & 0xFFu);
      };
      const uint32_t alo[4] = {q4k_a_lo(qa[p].x), q4k_a_lo(qb[p].x), q4k_a_lo(qa[p].y), q4k_a_lo(qb[p].y)};
      group_i8(T, alo, xv.frag(sb * 8 + j0, t), 16 * sc(0, j0), 16 * sc(1, j0));
      const uint32_t ahi[4] = {q4k_a_hi(qa[p].x), q4k_a_hi(qb[p].x), q4k_a_hi(qa[p].y), q4k_a_hi(qb[p].y)};
      group_i8(T, ahi, xv.frag(sb * 8 + j1, t), sc(0, j1), sc(1, j1));
    }
    finish_sb(sb, t, xv.x16, xv.unscale[sb] * 0.0625f, [&](int r) { return slices_sum(T, r); }, acca, accb);
  }
};

// Q2_K (84 bytes: 16 scale bytes (low nibble sc, high nibble m), qs in two 32-byte halves n
// whose byte l holds 2-bit field j of element 128 n + 32 j + l, then d, dmin). Group (n, j):
// the lane's elements 8t..8t+7 lie in sub-block 8n + 2j + t / 2; fields are kept in place (4^j
// q), so scales are multiplied by 4^(3 - j) and F = 64. Minimums: the even lane of each pair.
struct Q2kI8Path {
  static constexpr int kBytes = 84;
  uint32_t sa[4], sb4[4], da, db;
  uint2 qa[2], qb[2];

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool) {
    static_assert(!GLOBAL, "served from shared memory only");
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      sa[i] = reinterpret_cast<const uint32_t*>(pa)[i];
      sb4[i] = reinterpret_cast<const uint32_t*>(pb)[i];
    }
#pragma unroll
    for (int n = 0; n < 2; ++n) {  // blocks are 4-aligned only (84 bytes): word loads
      const uint32_t* wa = reinterpret_cast<const uint32_t*>(pa + 16 + 32 * n + 8 * t);
      const uint32_t* wb = reinterpret_cast<const uint32_t*>(pb + 16 + 32 * n + 8 * t);
      qa[n] = make_uint2(wa[0], wa[1]);
      qb[n] = make_uint2(wb[0], wb[1]);
    }
    da = reinterpret_cast<const uint32_t*>(pa)[20];
    db = reinterpret_cast<const uint32_t*>(pb)[20];
  }

  // The column layouts' fields with the sub-block scales in A (Q2kColPath2, Q2kColPath3): for
  // half n, field j, scale(n, j, sca, scb) gives the lane's scales of rows a, b; A = the field's
  // bytes (k 4t.. and 16 + 4t..), even fields masked to their low 2 bits after a nibble shift for
  // j = 2, odd ones in place (4 q) after the same shift for j = 3, times those scales (q sc <= 45,
  // 4 q sc <= 180: u8); field(a, n, j) runs the field's mmas.
  template <class Scale, class Field>
  __device__ __forceinline__ void scaled_fields(Scale scale, Field field) const {
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const uint32_t q[4] = {qa[n].x, qb[n].x, qa[n].y, qb[n].y};
      const uint32_t q4[4] = {q[0] >> 4, q[1] >> 4, q[2] >> 4, q[3] >> 4};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t sca, scb;
        scale(n, j, sca, scb);
        const uint32_t mask = (j & 1) ? 0x0C0C0C0Cu : 0x03030303u;
        const uint32_t(&src)[4] = j < 2 ? q : q4;
        const uint32_t a[4] = {(src[0] & mask) * sca, (src[1] & mask) * scb, (src[2] & mask) * sca,
                               (src[3] & mask) * scb};
        field(a, n, j);
      }
    }
  }

  // The super-block's eight fields (half n, field j): mma(a, 4n + j, sca, scb) runs the
  // field's mmas on its A words (rows a, b) with the sub-block scales of this lane's columns
  // (integers, fields in place: times 4^(3 - j)); then acc += d (S_r us) - dmin m_r, S_r =
  // sum(r) the row's slice sum, us = unscale() (read after the loop, as before this was shared).
  // Minimums: the even lane of each pair adds its sub-block's.
  template <class Mma, class Unscale, class Sum>
  __device__ __forceinline__ void fields(int64_t sb, int t, const float* x16, Mma mma, Unscale unscale,
                                         Sum sum, float& acca, float& accb) const {
    float ma = 0.0f, mb = 0.0f;
    const int half = t >> 1;
    const float own = (t & 1) ? 0.0f : 1.0f;  // the even lane of a pair adds the minimum
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t m = 0x03030303u << (2 * j);
        const uint32_t a[4] = {qa[n].x & m, qb[n].x & m, qa[n].y & m, qb[n].y & m};
        // Scale byte 8n + 2j + half: word 2n + j / 2, byte 2 (j % 2) + half.
        const unsigned sh = 8u * static_cast<unsigned>(2 * (j & 1) + half);
        const uint32_t ba = (sa[2 * n + (j >> 1)] >> sh) & 0xFFu, bb = (sb4[2 * n + (j >> 1)] >> sh) & 0xFFu;
        mma(a, 4 * n + j, static_cast<int>(ba & 0x0Fu) << (2 * (3 - j)),
            static_cast<int>(bb & 0x0Fu) << (2 * (3 - j)));
        const float xs = own * x16[sb * 16 + 8 * n + 2 * j + half];
        ma += static_cast<float>(ba >> 4) * xs;
        mb += static_cast<float>(bb >> 4) * xs;
      }
    }
    const float us = unscale();
    acca += half_lo(da) * (sum(0) * us) - half_hi(da) * ma;
    accb += half_lo(db) * (sum(1) * us) - half_hi(db) * mb;
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const I8View& xv, float& acca,
                                          float& accb) const {
    int T[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
    fields(
        sb, t, xv.x16,
        [&](const uint32_t(&a)[4], int f, int sca, int scb) {
          group_i8(T, a, xv.frag(sb * 8 + f, t), sca, scb);
        },
        [&] { return xv.unscale[sb] * 0.015625f; }, [&](int r) { return slices_sum(T, r); }, acca, accb);
  }
};

// ---- The column layout of the integer path (the default for Q4_K, Q2_K) --------------------
//
// The same slices, sub-block sums and error bound as above; only the mma's operands differ. In
// the diagonal layout each lane gets back its own k values' sums, so a k32 mma yields 4 useful
// sums of 8 elements and a group of 32 quants takes two mmas (slices 0, 1 and 2, 3). Here B's
// 8 columns are x's four slices over one half of the mma's k and the same slices over the other
// half (zeros elsewhere in the column), so D[r][c] is sub-block sum c / 4 of row r for slice
// c % 4: one mma gives every slice of two k-halves' sums for 16 rows, and each lane (columns
// 2t, 2t + 1) receives slices 2 (t & 1) and 2 (t & 1) + 1 of k-half t / 2. The k-halves are
// chosen so that each lies in one sub-block:
//   Q4_K, group p (64 elements, 32 bytes), mma m = 0, 1: lane t's A words are its qs word m
//   (bytes 8t + 4m .. +3) as low nibbles (k 4t.., elements 64p + 8t + 4m + i, sub-block 2p) and
//   as high nibbles in place (k 16 + 4t.., elements 64p + 32 + 8t + 4m + i, sub-block 2p + 1):
//   two mmas a group (four in the diagonal layout). Lane t applies sub-block 2p + t / 2's scale.
//   B word of lane 4g + t: g < 4 ? (slice g of the low elements, 0) : (0, slice g - 4 of the
//   high ones), stored per mma as 32 words in lane order (word 16h + 4s + t).
//   Q2_K, half n, field j (32 elements 128n + 32j + l, l = byte): lane t's A words are bytes
//   8t..8t+3 (k 4t..) and 8t+4..8t+7 (k 16 + 4t..), as in the diagonal layout, so k-half 0 (l <
//   16, sub-block 8n + 2j) is lanes t < 2 and k-half 1 lanes t >= 2: column c < 4 is non-zero
//   only for t < 2, c >= 4 only for t >= 2. One mma a field (two in the diagonal layout). The
//   B pair of lane 4g + t is slice g % 4 of elements 8t..8t+7 when (g < 4) == (t < 2), else
//   zero; stored per mma as 16 pairs (4s + t).
// A lane's T sums stay below 2^31: a column now sums 16 elements (8 in the diagonal layout),
// so Q4_K's bound per accumulator doubles to 128 x 15 x 1008 x 64 < 1.3e8 (Q2_K 2.4e7), still
// far below. The quad's lanes are summed at the end as before.
struct I8ColView {
  const uint32_t* xw;
  const float* x16;
  const float* unscale;
  int lane;
  bool low;       // Q4_K: B column g < 4 (b0 carries the word) or g >= 4 (b1)
  bool active;    // Q2_K: (g < 4) == (t < 2)
  int pair;       // Q2_K: 4 (g % 4) + t
  float slice2;   // 2^-14 for lanes holding slices 2, 3 (t odd), else 1
  __device__ __forceinline__ uint32_t word(int64_t unit) const { return xw[unit * 32 + lane]; }
  __device__ __forceinline__ uint2 pair_of(int64_t unit) const {
    return active ? reinterpret_cast<const uint2*>(xw)[unit * 16 + pair] : make_uint2(0u, 0u);
  }
};

// T[slice pair][row] += sc_row * D.
__device__ __forceinline__ void col_i8(int (&T)[2][2], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                       int sca, int scb) {
  int d[4];
  mma_i8(d, a, b0, b1);
  T[0][0] += sca * d[0], T[1][0] += sca * d[1], T[0][1] += scb * d[2], T[1][1] += scb * d[3];
}

__device__ __forceinline__ float col_sum(const int (&T)[2][2], int r) {
  return static_cast<float>(T[0][r]) + static_cast<float>(T[1][r]) * 0x1p-7f;
}

// A super-block of Q4_K or Q5_K in the column layout (Q4kColPath, Q5kColPath): words(p, m, a)
// writes group p's A words of qs word m (rows a, b: the low nibbles' sub-block 2p as q, the high
// ones' as 2^LOG2F q), so the low sub-block's scale is taken 2^LOG2F times and the sum divided
// by 2^LOG2F at the end; the minimums are Q4_K's (Q4kI8Path::finish_sb).
template <unsigned LOG2F, class Words>
__device__ __forceinline__ void k4_col_compute(const Q4kI8Path& path, int64_t sb, int t, const I8ColView& xv,
                                               Words words, float& acca, float& accb) {
  uint32_t sc_lo[2], sc_hi[2];
  path.scale_words(sc_lo, sc_hi);
  const int hs = t >> 1;               // this lane's sub-block: 2p + hs
  const unsigned f = hs ? 0u : LOG2F;  // low nibbles: scale x 2^LOG2F
  int T[2][2] = {{0, 0}, {0, 0}};
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const unsigned sh = 8u * static_cast<unsigned>((2 * p & 3) + hs);
    const int sca = static_cast<int>((((p < 2 ? sc_lo[0] : sc_hi[0]) >> sh) & 0xFFu) << f);
    const int scb = static_cast<int>((((p < 2 ? sc_lo[1] : sc_hi[1]) >> sh) & 0xFFu) << f);
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      uint32_t a[4];
      words(p, m, a);
      const uint32_t w = xv.word(sb * 8 + 2 * p + m);
      col_i8(T, a, xv.low ? w : 0u, xv.low ? 0u : w, sca, scb);
    }
  }
  constexpr float kUnF = 1.0f / static_cast<float>(1u << LOG2F);
  path.finish_sb(
      sb, t, xv.x16, xv.unscale[sb] * kUnF * xv.slice2, [&](int r) { return col_sum(T, r); }, acca, accb);
}

struct Q4kColPath : Q4kI8Path {
  __device__ __forceinline__ void compute(int64_t sb, int t, const I8ColView& xv, float& acca,
                                          float& accb) const {
    k4_col_compute<4>(
        *this, sb, t, xv,
        [&](int p, int m, uint32_t(&a)[4]) {
          const uint32_t wa = m ? qa[p].y : qa[p].x, wb = m ? qb[p].y : qb[p].x;
          a[0] = q4k_a_lo(wa), a[1] = q4k_a_lo(wb), a[2] = q4k_a_hi(wa), a[3] = q4k_a_hi(wb);
        },
        acca, accb);
  }
};

// Q5_K in the column layout (its only tensor-core arithmetic, twenty-eighth pass; a switch,
// kGemvQ5kTensorCoresDefault, on since it first ran in the thirty-seventh session). A super-block (ggml
// block_q5_K, 176 bytes: d, dmin, Q4_K's 12 bytes of 6-bit scales and minimums, qh[32],
// qs[128]) holds element 64 p + l (l < 32) as the low nibble of qs byte 32 p + l plus 16 times
// bit 2 p of qh byte l, and element 64 p + 32 + l as the high nibble of the same byte plus 16
// times bit 2 p + 1: w = d sc q - dmin m with q in [0, 31] (ggml's dequantize_row_q5_K).
// Element l's fifth bits lie in qh byte l for every group p, so the lane that reads qs bytes
// 32 p + 8t..8t+7 (Q4kColPath's layout, kQ4kColumns) needs qh bytes 8t..8t+7 only, the same
// for all four groups: loaded once a super-block. A (gemv_quant_words.h, q5k_a_words): the low
// nibble with its qh bit moved to bit 4 (q, k 4t..) and the high nibble shifted into bits 1-4
// with its qh bit in bit 5 (2 q, k 16 + 4t..), from one shift of the qh word a group (bit 2 p
// to bit 4); so the low sub-blocks' scales are doubled (F = 2). Bounds: a column's sum an mma
// is at most 16 x 62 x 64 < 2^16 (the high half's 2 q; the low half's q gives half that before
// its doubled scale), times sc <= 63, eight mmas: |T| <= 3.2e7 < 2^25 (Q4kColPath 1.3e8), so
// its I2F rounds past 2^24 as Q4_K's does.
// The minimums and the end of a super-block are Q4_K's (Q4kI8Path::finish_sb).
struct Q5kColPath : Q4kI8Path {
  static constexpr int kBytes = 176;
  uint2 qha, qhb;  // qh bytes 8t..8t+7 of rows a, b

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool) {
    static_assert(!GLOBAL, "served from shared memory only");
    ha = *reinterpret_cast<const uint4*>(pa);
    hb = *reinterpret_cast<const uint4*>(pb);
    qha = *reinterpret_cast<const uint2*>(pa + 16 + 8 * t);
    qhb = *reinterpret_cast<const uint2*>(pb + 16 + 8 * t);
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      qa[p] = *reinterpret_cast<const uint2*>(pa + 48 + 32 * p + 8 * t);
      qb[p] = *reinterpret_cast<const uint2*>(pb + 48 + 32 * p + 8 * t);
    }
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const I8ColView& xv, float& acca,
                                          float& accb) const {
    k4_col_compute<1>(
        *this, sb, t, xv,
        [&](int p, int m, uint32_t(&a)[4]) {
          const QuantWords wa = q5k_a_words(m ? qa[p].y : qa[p].x, m ? qha.y : qha.x, p);
          const QuantWords wb = q5k_a_words(m ? qb[p].y : qb[p].x, m ? qhb.y : qhb.x, p);
          a[0] = wa.lo, a[1] = wb.lo, a[2] = wa.hi, a[3] = wb.hi;
        },
        acca, accb);
  }
};

struct Q2kColPath : Q2kI8Path {
  __device__ __forceinline__ void compute(int64_t sb, int t, const I8ColView& xv, float& acca,
                                          float& accb) const {
    int T[2][2] = {{0, 0}, {0, 0}};
    fields(
        sb, t, xv.x16,
        [&](const uint32_t(&a)[4], int f, int sca, int scb) {
          const uint2 bw = xv.pair_of(sb * 8 + f);
          col_i8(T, a, bw.x, bw.y, sca, scb);
        },
        [&] { return xv.unscale[sb] * 0.015625f * xv.slice2; }, [&](int r) { return col_sum(T, r); }, acca,
        accb);
  }
};

// Q2_K in the column layout with the scales in A (the default from the eighth to the tenth pass,
// variant 22 since; variant 17
// keeps Q2kColPath). The same B
// fragments, slices and error bound as Q2kColPath; what changes is where the sub-block scales
// and minimums are applied:
//   - the scale goes into the quants: A = q sc (even fields j masked to their low 2 bits, after
//     a nibble shift for j = 2; odd fields masked in place, 0x0C, after the same shift for j =
//     3: 4 q sc <= 180, u8 still), so every field's mma accumulates in the mma's own C (even
//     and odd fields in two accumulators, 4 apart), with no s32 multiply-add per sum;
//   - the minimums run on the tensor cores against the same B: A = 16 m (the scale byte's high
//     nibble in place) at every k of the lane's sub-block, so D = sum_k 16 m X_k per slice,
//     exact in s32 like the quants' sums (Q2kColPath adds them in F32 from the x16 sums).
// The lane's scale byte (8n + 2j + t / 2) is replicated into all four bytes by one prmt; its
// low nibble is the scale, the word masked by 0xF0 the minimum's A word.
// Bounds per accumulator: 4 fields x 16 k x 45 x 64 < 2^18 (even), 4 x 16 x 180 x 64 < 2^20
// (odd), 8 x 16 x 240 x 64 < 2^21 (minimums), so each slice's 4 S_even + S_odd (< 2^21) and
// minimum sum convert to F32 exactly; the slice pair is then added in F32.
struct Q2kColPath2 : Q2kI8Path {
  __device__ __forceinline__ void compute(int64_t sb, int t, const I8ColView& xv, float& acca,
                                          float& accb) const {
    const uint32_t half = static_cast<uint32_t>(t) >> 1;
    const uint32_t sel[2] = {half * 0x1111u, (2u + half) * 0x1111u};  // byte 2 (j % 2) + half, replicated
    int te[4] = {0, 0, 0, 0}, to[4] = {0, 0, 0, 0}, tm[4] = {0, 0, 0, 0};
    uint32_t ra = 0, rb = 0;  // the lane's scale bytes of rows a, b, replicated
    scaled_fields(
        [&](int n, int j, uint32_t& sca, uint32_t& scb) {
          ra = prmt(sa[2 * n + (j >> 1)], 0u, sel[j & 1]);
          rb = prmt(sb4[2 * n + (j >> 1)], 0u, sel[j & 1]);
          sca = ra & 0x0Fu, scb = rb & 0x0Fu;
        },
        [&](const uint32_t(&a)[4], int n, int j) {
          const uint32_t ma = ra & 0xF0F0F0F0u, mb = rb & 0xF0F0F0F0u;
          const uint32_t am[4] = {ma, mb, ma, mb};
          const uint2 bw = xv.pair_of(sb * 8 + 4 * n + j);
          if (j & 1) {
            mma_i8_acc(to, a, bw.x, bw.y);
          } else {
            mma_i8_acc(te, a, bw.x, bw.y);
          }
          mma_i8_acc(tm, am, bw.x, bw.y);
        });
    // Rows g (D 0, 1: slices 2 (t & 1), + 1) and g + 8 (D 2, 3); 4 S = 4 te + to.
    const float us = xv.unscale[sb] * xv.slice2;
    const float sa4 = static_cast<float>(4 * te[0] + to[0]) + static_cast<float>(4 * te[1] + to[1]) * 0x1p-7f;
    const float sb4f =
        static_cast<float>(4 * te[2] + to[2]) + static_cast<float>(4 * te[3] + to[3]) * 0x1p-7f;
    const float m16a = static_cast<float>(tm[0]) + static_cast<float>(tm[1]) * 0x1p-7f;
    const float m16b = static_cast<float>(tm[2]) + static_cast<float>(tm[3]) * 0x1p-7f;
    acca += (half_lo(da) * 0.25f * sa4 - half_hi(da) * 0.0625f * m16a) * us;
    accb += (half_lo(db) * 0.25f * sb4f - half_hi(db) * 0.0625f * m16b) * us;
  }
};

// Q2_K in the column layout, tenth pass (the default since): Q2kColPath2's quants, with two
// changes.
//   - The minimums take one mma a super-block instead of one per field: A = 16 m at k = the
//     sub-block (0-15: the high nibbles of the lane's scale word t, rows g and g + 8, in place;
//     k 16-31 zero), B = the sub-blocks' sums of x's slices (x_fragments_i8, kQ2kMinColumns:
//     column 2 q + p holds slice q's sums as 128 hi + lo, p = 0 hi, 1 lo). Lane t receives
//     columns 2t, 2t + 1: slice t's sum_j 16 m_j S_j = 128 D0 + D1 for its two rows. Bounds:
//     |D0| <= 16 x 240 x 8, |D1| <= 16 x 240 x 64, so |128 D0 + D1| < 2^22.
//   - The scales: each scale word masked to its low nibbles once (0x0F0F0F0F), then one prmt
//     a field and row moves the lane's byte into place (zeros above: an s32 multiplier).
// Conversions: the integer sums (|4 S_even + S_odd| < 2^21, the minimums < 2^22) start from
// kRoundMagicBits in the mma's own accumulator (C), so their bits are 1.5 2^23 + n as an F32 and
// one FADD gives n exactly (kRoundMagic): no I2F.
struct Q2kCol3View : I8ColView {
  const uint32_t* xm;  // the minimums' B words: 32 a super-block, word `lane`
  float qf;            // 0.25 x slice2 (the quants' F = 4 and the lane's slice pair)
  float mf;            // 0.0625 x 2^-7t (16 m, and the lane's slice t)
  __device__ __forceinline__ uint32_t min_word(int64_t sb) const { return xm[sb * 32 + lane]; }
};

struct Q2kColPath3 : Q2kI8Path {
  uint32_t ma, mb;  // scale word t of rows a, b: the minimums of sub-blocks 4t..4t+3 (high nibbles)

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool aligned) {
    Q2kI8Path::fetch<GLOBAL>(pa, pb, t, aligned);
    ma = reinterpret_cast<const uint32_t*>(pa)[t] & 0xF0F0F0F0u;
    mb = reinterpret_cast<const uint32_t*>(pb)[t] & 0xF0F0F0F0u;
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const Q2kCol3View& xv, float& acca,
                                          float& accb) const {
    const uint32_t half = static_cast<uint32_t>(t) >> 1;
    // prmt selectors: byte 2 (j % 2) + half of the word in byte 0, zero bytes above
    const uint32_t sel[2] = {0x4440u | half, 0x4440u | (2u + half)};
    uint32_t sca4[4], scb4[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) sca4[i] = sa[i] & 0x0F0F0F0Fu, scb4[i] = sb4[i] & 0x0F0F0F0Fu;
    const int magic = static_cast<int>(kRoundMagicBits);
    int te[4] = {0, 0, 0, 0}, to[4] = {magic, magic, magic, magic}, tm[4] = {0, magic, 0, magic};
    scaled_fields(
        [&](int n, int j, uint32_t& sca, uint32_t& scb) {
          sca = prmt(sca4[2 * n + (j >> 1)], 0u, sel[j & 1]);
          scb = prmt(scb4[2 * n + (j >> 1)], 0u, sel[j & 1]);
        },
        [&](const uint32_t(&a)[4], int n, int j) {
          const uint2 bw = xv.pair_of(sb * 8 + 4 * n + j);
          if (j & 1) {
            mma_i8_acc(to, a, bw.x, bw.y);
          } else {
            mma_i8_acc(te, a, bw.x, bw.y);
          }
        });
    const uint32_t am[4] = {ma, mb, 0u, 0u};
    mma_i8_acc(tm, am, xv.min_word(sb), 0u);
    // Rows g (D 0, 1) and g + 8 (D 2, 3).
    const auto value = [](int bits) { return __uint_as_float(static_cast<uint32_t>(bits)) - kRoundMagic; };
    // (explicit fmaf: this file is built with --fmad=false)
    const float s_a = fmaf(value(4 * te[1] + to[1]), 0x1p-7f, value(4 * te[0] + to[0]));
    const float s_b = fmaf(value(4 * te[3] + to[3]), 0x1p-7f, value(4 * te[2] + to[2]));
    const float m_a = value(128 * tm[0] + tm[1]), m_b = value(128 * tm[2] + tm[3]);
    const float us = xv.unscale[sb];
    acca = fmaf(fmaf(half_lo(da), xv.qf * s_a, -half_hi(da) * (xv.mf * m_a)), us, acca);
    accb = fmaf(fmaf(half_lo(db), xv.qf * s_b, -half_hi(db) * (xv.mf * m_b)), us, accb);
  }
};

// A super-block that is only 2-aligned (Q3_K, Q6_K) in a windowed ring row of one unit
// (gemv_pipe_kernel, windowed_ring): w the aligned word at or just before it, the super-block
// starting sh / 8 bytes (0 or 2) into it; operator()(o) gives its 4 bytes at byte o (a multiple
// of 4), funnel-shifted from the two aligned words that hold them (the second is read also where
// it is dropped, for sh = 0 and for d's word: at most one word past the unit's window, which
// ring_row_bytes keeps in the row, so no read meets a copy in flight).
struct PhasedWord {
  const uint32_t* w;  // the window
  unsigned sh;        // 0 or 16
  __device__ __forceinline__ uint32_t operator()(int o) const {
    return __funnelshift_r(w[o / 4], w[o / 4 + 1], sh);
  }
};

// Q3_K in the column layout (the default for Q3_K since the twenty-sixth pass; no other
// arithmetic). A super-block (ggml block_q3_K, 110 bytes: hmask[32], qs[64], 12 bytes of 6-bit
// scales, d) holds element 128 n + 32 j + l (l < 32) as 2-bit field j of qs byte 32 n + l plus
// 4 times bit 4 n + j of hmask byte l, less 4: q in [-4, 3], w = d (sc - 32) q with sc the 6-bit
// scale of sub-block 8 n + 2 j + l / 16 (ggml's aux words). qs is laid out as Q2_K's, so the
// lane takes the same qs bytes (8t..8t+7 of each half: sub-blocks 8 n + 2 j + t / 2), the same B
// pairs (kQ2kColumns) and the hmask bytes 8t..8t+7 beside them. A holds q as s8 (mma s8 x s8):
// even fields q (the low 2 bits after a nibble shift for j = 2, with 0xFC above them where the
// hmask bit is clear: q - 4), odd fields 4 q in place (0x0C after the same shift, 0xF0 above:
// 4 q - 16); the high bits come in one IMAD, the clear bit j of each byte times 0xFC >> j or
// 0xF0 >> j (0xFC or 0xF0, within the byte). The scales as 4 (sc - 32) in s8 ((aux ^ 0x20) << 2:
// the 6-bit two's complement of sc - 32 moved to the byte's top), one prmt with sign replication
// a field and row giving the s32 multiplier, applied per slice pair in s32 as Q2kColPath's: even
// fields into te, odd ones into to, so 4 te + to = 16 sum_f (sc_f - 32) S_f per slice. Bounds:
// |S| <= 16 x 4 x 64 = 2^12 for an even field (2^14 odd), |4 (sc - 32)| <= 128, four fields of
// each: |4 te + to| <= 2^24, exact in s32 and in its F32 conversion (I2F; kRoundMagic's trick
// holds only to 2^22). Then, as every column path, one F32 conversion per slice pair, row and
// super-block: acc += d 2^-s (T0 + T1 2^-7) slice2 / 16.
// Super-blocks are 2-aligned only: a ring stage holds two (220 bytes a row, 4-byte copies) where
// a row has an even number of super-blocks, the second at 2 mod 4, whose words are funnel-shifted
// from the aligned words around them (fetch_at<true>); rows of an odd number take one a stage,
// each copied in the aligned window around it (fetch_phased: gemv_pipe_kernel's windowed rings).
struct Q3kColPath {
  static constexpr int kBytes = 110;
  uint32_t ha[2], hb[2];        // hmask bytes 8t..8t+3 and 8t+4..8t+7 of rows a, b
  uint32_t qa[2][2], qb[2][2];  // qs bytes 32 n + 8t.. and 32 n + 8t + 4.. of half n
  uint32_t sa[3], sb3[3];       // the 12 scale bytes
  uint32_t da, db;              // d in the low half

  // The 4 bytes at byte o (a multiple of 4) of the super-block at p; ODD: p is 2 mod 4.
  template <bool ODD>
  __device__ __forceinline__ static uint32_t word(const uint8_t* p, int o) {
    if constexpr (ODD) {
      const uint32_t* w = reinterpret_cast<const uint32_t*>(p + o - 2);
      return __funnelshift_r(w[0], w[1], 16);
    } else {
      return *reinterpret_cast<const uint32_t*>(p + o);
    }
  }
  // The 2 bytes at byte o (a multiple of 4) in the low half (the high half unspecified): the high
  // half of the aligned word at o - 2 (ODD), or the low half of the word at o. (d: o = 108 for
  // Q3_K, 208 for Q6_K.)
  template <bool ODD>
  __device__ __forceinline__ static uint32_t low_half(const uint8_t* p, int o) {
    return ODD ? *reinterpret_cast<const uint32_t*>(p + o - 2) >> 16
               : *reinterpret_cast<const uint32_t*>(p + o);
  }

  // word(o): the 4 bytes at byte o (a multiple of 4) of the super-block; d16: d in the low half.
  template <class Word>
  __device__ __forceinline__ static void fetch_row(Word word, uint32_t d16, int t, uint32_t (&h)[2],
                                                   uint32_t (&q)[2][2], uint32_t (&s)[3], uint32_t& d) {
    h[0] = word(8 * t);
    h[1] = word(8 * t + 4);
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      q[n][0] = word(32 + 32 * n + 8 * t);
      q[n][1] = word(36 + 32 * n + 8 * t);
    }
#pragma unroll
    for (int i = 0; i < 3; ++i) s[i] = word(96 + 4 * i);
    d = d16;
  }

  // From a ring stage (shared memory) only: pa, pb the super-block of rows a, b, 4-aligned
  // (ODD false) or 2 mod 4 (ODD true).
  template <bool ODD>
  __device__ __forceinline__ void fetch_at(const uint8_t* pa, const uint8_t* pb, int t) {
    fetch_row([pa](int o) { return word<ODD>(pa, o); }, low_half<ODD>(pa, 108), t, ha, qa, sa, da);
    fetch_row([pb](int o) { return word<ODD>(pb, o); }, low_half<ODD>(pb, 108), t, hb, qb, sb3, db);
  }
  // From a windowed ring of one unit (gemv_pipe_kernel): wa, wb the aligned windows of rows a, b.
  __device__ __forceinline__ void fetch_phased(const PhasedWord& wa, const PhasedWord& wb, int t) {
    fetch_row(wa, wa(108), t, ha, qa, sa, da);
    fetch_row(wb, wb(108), t, hb, qb, sb3, db);
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const I8ColView& xv, float& acca,
                                          float& accb) const {
    const uint32_t half = static_cast<uint32_t>(t) >> 1;
    // prmt selectors: byte 2 (j % 2) + half of the word in byte 0, its sign in the bytes above
    const uint32_t sel[2] = {0x8880u + half * 0x1111u, 0x8880u + (2u + half) * 0x1111u};
    uint32_t sca4[4], scb4[4];
    q3k_scale_words(sa, sca4);
    q3k_scale_words(sb3, scb4);
    int te[4] = {0, 0, 0, 0}, to[4] = {0, 0, 0, 0};
#pragma unroll
    for (int n = 0; n < 2; ++n) {
      const uint32_t q[4] = {qa[n][0], qb[n][0], qa[n][1], qb[n][1]};
      const uint32_t q4[4] = {q[0] >> 4, q[1] >> 4, q[2] >> 4, q[3] >> 4};
      const unsigned hs = 4u * static_cast<unsigned>(n);  // hmask bits 4 n + j
      const uint32_t h[4] = {ha[0] >> hs, hb[0] >> hs, ha[1] >> hs, hb[1] >> hs};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t(&src)[4] = j < 2 ? q : q4;
        uint32_t a[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = q3k_a_word(src[i], h[i], j);
        const int sca = static_cast<int>(prmt(sca4[2 * n + (j >> 1)], 0u, sel[j & 1]));
        const int scb = static_cast<int>(prmt(scb4[2 * n + (j >> 1)], 0u, sel[j & 1]));
        const uint2 bw = xv.pair_of(sb * 8 + 4 * n + j);
        int d[4];
        mma_s8(d, a, bw.x, bw.y);
        int(&T)[4] = (j & 1) ? to : te;
        T[0] += sca * d[0], T[1] += sca * d[1], T[2] += scb * d[2], T[3] += scb * d[3];
      }
    }
    // Rows g (slices 2 (t & 1), + 1: T 0, 1) and g + 8 (T 2, 3). (explicit fmaf: --fmad=false)
    const float us = xv.unscale[sb] * xv.slice2 * 0.0625f;
    const float s_a =
        fmaf(static_cast<float>(4 * te[1] + to[1]), 0x1p-7f, static_cast<float>(4 * te[0] + to[0]));
    const float s_b =
        fmaf(static_cast<float>(4 * te[3] + to[3]), 0x1p-7f, static_cast<float>(4 * te[2] + to[2]));
    acca = fmaf(half_lo(da), s_a * us, acca);
    accb = fmaf(half_lo(db), s_b * us, accb);
  }
};

// Q6_K in the column layout (the default for Q6_K since the twenty-seventh pass; no other
// arithmetic). A super-block (ggml block_q6_K, 210 bytes: ql[128], qh[64], 16 s8 scales, d)
// holds element 128 n + 32 j + l (l < 32) as the low (j < 2) or high (j >= 2) nibble of ql
// byte 64 n + 32 (j % 2) + l plus 16 times 2-bit field j of qh byte 32 n + l, less 32: q in
// [-32, 31], w = d sc q with sc the s8 scale of sub-block 8 n + 2 j + l / 16 (ggml's
// dequantize_row_q6_K). Fields (n, j) are Q2_K's 32-element groups, so the path takes Q2_K's
// column layout: the lane's bytes 8t..8t+7 of each field (sub-blocks 8 n + 2 j + t / 2), the
// same B pairs (kQ2kColumns). A holds 4 (q - 32) as s8: the nibble in bits 2-5 and the qh field
// in bits 6-7 with its high bit flipped (q ^ 32 is q - 32 in 6-bit two's complement; moved to
// the byte's top it is 4 (q - 32)), so the mma is s8 x s8 with no offset term. The lane's eight
// scale bytes (8 n + 2 j + t / 2) are gathered into one word per half n at the fetch, and one
// prmt with sign replication a field and row gives the s32 multiplier, applied per slice pair in
// s32: T = 4 sum_f sc_f S_f per slice. Bounds: |S| <= 16 x 128 x 64 = 2^17 for a field's column,
// |sc| <= 128, eight fields: |T| <= 2^27, exact in s32; its F32 conversion (I2F) rounds only past
// 2^24 (every weight of a k-half at |q - 32| = 32 against slices at 64), by at most 2^-24 of
// the sum, as the F32 additions after it do. Then, as every column path, one F32 conversion per
// slice pair, row and super-block: acc += d 2^-s (T0 + T1 2^-7) slice2 / 4.
// Super-blocks are 2-aligned only: a ring stage holds two (420 bytes a row, 4-byte copies) where a
// row has an even number of super-blocks, the second at 2 mod 4, read as Q3kColPath's
// (Q3kColPath::word<true>); rows of an odd number take one a stage in windowed rings, as Q3_K's.
struct Q6kColPath {
  static constexpr int kBytes = 210;
  uint32_t la[2][2][2], lb[2][2][2];  // ql bytes 64 n + 32 p + 8t.. and + 4.. of rows a, b
  uint32_t ha[2][2], hb[2][2];        // qh bytes 32 n + 8t.. and + 4.., every field's high bit flipped
  uint32_t sa[2], sb2[2];             // scale bytes 8 n + t / 2 + {0, 2, 4, 6} (byte j: field j)
  uint32_t da, db;                    // d in the low half

  // word(o): the 4 bytes at byte o (a multiple of 4) of the super-block; d16: d in the low half.
  template <class Word>
  __device__ __forceinline__ static void fetch_row(Word word, uint32_t d16, int t, uint32_t (&l)[2][2][2],
                                                   uint32_t (&h)[2][2], uint32_t (&s)[2], uint32_t& d) {
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        l[n][p][0] = word(64 * n + 32 * p + 8 * t);
        l[n][p][1] = word(64 * n + 32 * p + 8 * t + 4);
      }
      h[n][0] = q6k_qh_flipped(word(128 + 32 * n + 8 * t));
      h[n][1] = q6k_qh_flipped(word(132 + 32 * n + 8 * t));
    }
    // bytes t / 2 + {0, 2, 4, 6} of scale words 2n, 2n + 1
    const uint32_t sel = 0x6420u + (static_cast<uint32_t>(t) >> 1) * 0x1111u;
    s[0] = prmt(word(192), word(196), sel);
    s[1] = prmt(word(200), word(204), sel);
    d = d16;
  }

  // From a ring stage (shared memory) only: pa, pb the super-block of rows a, b, 4-aligned
  // (ODD false) or 2 mod 4 (ODD true).
  template <bool ODD>
  __device__ __forceinline__ void fetch_at(const uint8_t* pa, const uint8_t* pb, int t) {
    fetch_row([pa](int o) { return Q3kColPath::word<ODD>(pa, o); }, Q3kColPath::low_half<ODD>(pa, 208), t, la,
              ha, sa, da);
    fetch_row([pb](int o) { return Q3kColPath::word<ODD>(pb, o); }, Q3kColPath::low_half<ODD>(pb, 208), t, lb,
              hb, sb2, db);
  }
  // From a windowed ring of one unit (gemv_pipe_kernel): wa, wb the aligned windows of rows a, b.
  __device__ __forceinline__ void fetch_phased(const PhasedWord& wa, const PhasedWord& wb, int t) {
    fetch_row(wa, wa(208), t, la, ha, sa, da);
    fetch_row(wb, wb(208), t, lb, hb, sb2, db);
  }

  __device__ __forceinline__ void compute(int64_t sb, int t, const I8ColView& xv, float& acca,
                                          float& accb) const {
    int T[4] = {0, 0, 0, 0};
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int p = j & 1;
        const uint32_t l[4] = {la[n][p][0], lb[n][p][0], la[n][p][1], lb[n][p][1]};
        const uint32_t h[4] = {ha[n][0], hb[n][0], ha[n][1], hb[n][1]};
        uint32_t a[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) a[i] = q6k_a_word(l[i], h[i], j);
        // byte j of the lane's scale word, its sign in the bytes above
        const uint32_t sel = 0x8880u + static_cast<uint32_t>(j) * 0x1111u;
        const int sca = static_cast<int>(prmt(sa[n], 0u, sel));
        const int scb = static_cast<int>(prmt(sb2[n], 0u, sel));
        const uint2 bw = xv.pair_of(sb * 8 + 4 * n + j);
        int d[4];
        mma_s8(d, a, bw.x, bw.y);
        T[0] += sca * d[0], T[1] += sca * d[1], T[2] += scb * d[2], T[3] += scb * d[3];
      }
    }
    // Rows g (slices 2 (t & 1), + 1: T 0, 1) and g + 8 (T 2, 3). (explicit fmaf: --fmad=false)
    const float us = xv.unscale[sb] * xv.slice2 * 0.25f;
    const float s_a = fmaf(static_cast<float>(T[1]), 0x1p-7f, static_cast<float>(T[0]));
    const float s_b = fmaf(static_cast<float>(T[3]), 0x1p-7f, static_cast<float>(T[2]));
    acca = fmaf(half_lo(da), s_a * us, acca);
    accb = fmaf(half_lo(db), s_b * us, accb);
  }
};

// MXFP4 in the column layout. A 32-element block has one scale, so an mma covers one block:
// lane t's A words are its qs word (bytes 4t..4t+3: low nibbles elements 4t.., high 16 + 4t..)
// as u8 values v + 12 of ggml's doubled e2m1 values v in [-12, 12] (two prmt table lookups, one
// for codes 0-7 and one for 8-15, each giving 0 where the other applies: prmt's sign-replicate
// mode on bytes below 128), bytes 0-1 of the word in A's k 4t.. and bytes 2-3 in 16 + 4t.., in
// prmt's order (low, high nibble of each byte). B's columns 0-3 hold the four slices of x in
// that order, columns 4-7 are zero (lanes t >= 2 get nothing back). The offset comes off in
// the mma's own C: sum (v + 12) X - 12 sum X, with -12 sum X per block and slice stored beside
// the pairs. Then the slice pair as one integer (128 D0 + D1), one F32 conversion per block and
// row, times the block's scale.
struct MxColView {
  const uint2* xp;      // 16 pairs a block: lane 4g + t < 16 reads pair `lane`
  const int2* xs;       // per block: -12 times the slice sums {0, 1}, {2, 3}
  const float* unscale;
  int lane;
  bool offs;            // lanes t < 2 (columns 0-3); t >= 2 get zero D and zero offsets
  float slice2;         // 2^-7 (the slice pair's integer combination), times 2^-14 for t odd
  __device__ __forceinline__ uint2 pair_of(int64_t blk) const {
    return lane < 16 ? xp[blk * 16 + lane] : make_uint2(0u, 0u);
  }
  __device__ __forceinline__ int2 offsets(int64_t blk) const {
    return offs ? xs[blk * 2 + (lane & 1)] : make_int2(0, 0);
  }
};

// The four e2m1 codes in bits 0-15 of c -> four u8 of ggml's doubled value + 12 (in [0, 24]).
// Codes 0-7: {0, 1, 2, 3, 4, 6, 8, 12} + 12; codes 8-15: {0, -1, -2, -3, -4, -6, -8, -12} + 12.
// (SASS prmt takes its first table word from a register only, and ptxas moves that literal
// into a register before every prmt here: 2 of the ~5 instructions a call. Holding both in
// registers made through an asm mov did not change that on sm_90.)
__device__ __forceinline__ uint32_t e2m1_u8(uint32_t c) {
  return prmt(0x0F0E0D0Cu, 0x18141210u, c) | prmt(0x090A0B0Cu, 0x00040608u, c ^ 0x8888u);
}

struct Mxfp4ColPath : Mxfp4Path {
  __device__ __forceinline__ void compute(int64_t u, int, const MxColView& xv, float& acca,
                                          float& accb) const {
    // 2^-s (a power of two, like the E8M0 scale) applied to each block's sum before the scale:
    // the same sums as applying it once at the end, but no inf for scales near E8M0's top (a
    // block sum of up to 2^15.6 times 2^(e - 128) can overflow F32 from e = 241 on). Not to the
    // scale first: 2^(e - 128) 2^-s can itself be inf for a large scale and a tiny x, and a
    // lane whose sum is 0 (t >= 2 always) would then add 0 x inf = NaN to a finite row.
    const float us = xv.unscale[u] * xv.slice2;
    float sa = 0.0f, sb = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int64_t blk = u * 8 + k;
      const uint32_t a[4] = {e2m1_u8(wa[k]), e2m1_u8(wb[k]), e2m1_u8(wa[k] >> 16), e2m1_u8(wb[k] >> 16)};
      const uint2 bw = xv.pair_of(blk);
      // The offset comes off in the mma's C: D = sum (v + 12) X - 12 sum X = sum v X.
      const int2 o = xv.offsets(blk);
      int d[4] = {o.x, o.y, o.x, o.y};
      mma_i8_acc(d, a, bw.x, bw.y);
      // Exact in s32 and F32: |sum v X| <= 12 x 64 x 32 per slice, so 128 D0 + D1 < 2^22.
      sa += dea[k] * (static_cast<float>(d[0] * 128 + d[1]) * us);
      sb += deb[k] * (static_cast<float>(d[2] * 128 + d[3]) * us);
    }
    acca += sa;
    accb += sb;
  }
};

// MXFP4 in the column layout, tenth pass (the default since; Mxfp4ColPath is variant 22's):
// Mxfp4ColPath's blocks, with three changes.
//   - The e2m1 tables are in registers (MxCol2View::tab, read from shared memory once a
//     launch; as literals ptxas moved them into a register before every prmt, 2 of the ~6
//     instructions a lookup), and one XOR a code word serves both its halves.
//   - B's columns 4-7 repeat columns 0-3, so lanes t >= 2 receive the same sums as lanes t < 2,
//     and the quad splits each pair of blocks: lanes t < 2 scale and add the even block's sums,
//     lanes t >= 2 the odd block's (each lane converts and applies 4 of a row's 8 scales).
//   - No I2F: the odd slices' offsets carry kRoundMagicBits (kMxMagicColumns), so 128 D0 + D1
//     (|n| < 2^22, Mxfp4ColPath) is 1.5 2^23 + n as F32 bits and one FADD gives n exactly; and
//     the offsets are stored as the mma's whole C (both rows), one 16-byte load, no moves.
struct MxCol2View {
  const uint2* xp;  // 16 pairs a block: lane L reads pair L % 16 (columns 4-7 repeat 0-3)
  const int4* xs;   // per block: -12 times the slice sums {0, 1, 0, 1}, {2, 3, 2, 3}; + kRoundMagicBits in 1, 3
  const float* unscale;
  int lane;
  float slice2;     // as MxColView's
  uint32_t tab[4];  // e2m1_u8's table words
  __device__ __forceinline__ uint2 pair_of(int64_t blk) const { return xp[blk * 16 + (lane & 15)]; }
  __device__ __forceinline__ int4 offsets(int64_t blk) const { return xs[blk * 2 + (lane & 1)]; }
  // e2m1_u8 of the codes in bits 0-15 of c, cx = c ^ 0x8888 (bits 0-15).
  __device__ __forceinline__ uint32_t lut(uint32_t c, uint32_t cx) const {
    return prmt(tab[0], tab[1], c) | prmt(tab[2], tab[3], cx);
  }
};

struct Mxfp4ColPath2 {
  static constexpr int kBytes = 136;
  uint32_t wa[8], wb[8];
  float dea[4], deb[4];  // the scales of blocks 2i + (t >= 2)

  template <int K>
  __device__ __forceinline__ void fetch_block(const uint32_t* qa, const uint32_t* qb, const uint8_t* ea,
                                              const uint8_t* eb) {
    wa[K] = Mxfp4Path::qs_word<K>(qa);
    wb[K] = Mxfp4Path::qs_word<K>(qb);
    if constexpr (K % 2 == 0) {
      dea[K / 2] = e8m0_half(ea[17 * K]);
      deb[K / 2] = e8m0_half(eb[17 * K]);
    }
    if constexpr (K < 7) fetch_block<K + 1>(qa, qb, ea, eb);
  }

  template <bool GLOBAL>
  __device__ __forceinline__ void fetch(const uint8_t* pa, const uint8_t* pb, int t, bool) {
    static_assert(!GLOBAL, "MXFP4 is served from shared memory only");
    const int odd = 17 * (t >> 1);  // lanes t >= 2 take the odd blocks' scales
    fetch_block<0>(reinterpret_cast<const uint32_t*>(pa) + t, reinterpret_cast<const uint32_t*>(pb) + t,
                   pa + odd, pb + odd);
  }

  __device__ __forceinline__ void compute(int64_t u, int t, const MxCol2View& xv, float& acca,
                                          float& accb) const {
    const float us = xv.unscale[u] * xv.slice2;  // as Mxfp4ColPath: 2^-s before the scale
    const bool odd = t >= 2;
    float sa = 0.0f, sb = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k += 2) {
      int d[2][4];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t blk = u * 8 + k + h;
        const uint32_t xa = wa[k + h] ^ 0x88888888u, xb = wb[k + h] ^ 0x88888888u;
        const uint32_t a[4] = {xv.lut(wa[k + h], xa), xv.lut(wb[k + h], xb), xv.lut(wa[k + h] >> 16, xa >> 16),
                               xv.lut(wb[k + h] >> 16, xb >> 16)};
        const uint2 bw = xv.pair_of(blk);
        const int4 o = xv.offsets(blk);  // D = sum (v + 12) X - 12 sum X (+ the magic in D1, D3)
        d[h][0] = o.x, d[h][1] = o.y, d[h][2] = o.z, d[h][3] = o.w;
        mma_i8_acc(d[h], a, bw.x, bw.y);
      }
      const int na = odd ? 128 * d[1][0] + d[1][1] : 128 * d[0][0] + d[0][1];
      const int nb = odd ? 128 * d[1][2] + d[1][3] : 128 * d[0][2] + d[0][3];
      sa = fmaf(dea[k / 2], (__uint_as_float(static_cast<uint32_t>(na)) - kRoundMagic) * us, sa);
      sb = fmaf(deb[k / 2], (__uint_as_float(static_cast<uint32_t>(nb)) - kRoundMagic) * us, sb);
    }
    acca += sa;
    accb += sb;
  }
};

// What the pipelined kernel runs: the path's fetch/compute, the x fragments it reads.
template <GgmlType T, int P>
struct Sel {
  using Path = typename MmaPath<T>::type;
  using View = XView;
  __host__ __device__ static constexpr int64_t stride(int64_t ne0) { return frag_stride(ne0); }
  template <class After>
  __device__ static void prepare(const float* x, int64_t ne0, uint8_t* base, int nthreads, After after) {
    x_fragments(x, ne0, base, nthreads, after);
  }
  __device__ static View view(const uint8_t* base, int64_t ne0, int lane) {
    const int t = lane & 3, bc = lane >> 2;
    return View{reinterpret_cast<const uint4*>(base), reinterpret_cast<const float2*>(base + ne0 * 4),
                (bc >> 1) == t, bc & 1};
  }
};
// The integer path's x fragments in slice layout LAYOUT: their bytes per x vector and the
// block's preparation (x_fragments_i8).
template <int LAYOUT>
struct I8Prep {
  __host__ __device__ static constexpr int layout() { return LAYOUT; }
  __host__ __device__ static constexpr int64_t stride(int64_t ne0) {
    return LAYOUT == kMxMagicColumns                              ? frag_stride_mx2(ne0)
           : LAYOUT == kMxColumns || LAYOUT == kQ2kMinColumns ? frag_stride_mx(ne0)
                                                                    : frag_stride_i8(ne0);
  }
  template <class After>
  __device__ static void prepare(const float* x, int64_t ne0, uint8_t* base, int nthreads, After after) {
    x_fragments_i8<LAYOUT>(x, ne0, base, nthreads / 32, after);
  }
  // prepare() for an x that other blocks of the same kernel wrote (x_fragments_i8's COHERENT).
  __device__ static void prepare_coherent(const float* x, int64_t ne0, uint8_t* base, int nthreads) {
    x_fragments_i8<LAYOUT, NoAfter, true>(x, ne0, base, nthreads / 32, NoAfter{});
  }
  // The share of warps [warp_base, warp_base + this block's warps) of nwarps over the vector.
  __device__ static void prepare_part(const float* x, int64_t ne0, uint8_t* base, int warp_base, int nwarps) {
    x_fragments_i8<LAYOUT>(x, ne0, base, nwarps, [] {}, warp_base);
  }
};

template <GgmlType T>
struct I8Sel : I8Prep<kDiagWords> {
  using View = I8View;
  __device__ static View view(const uint8_t* base, int64_t ne0, int lane) {
    const int t = lane & 3, bc = lane >> 2;
    const float* x16 = reinterpret_cast<const float*>(base + ne0 * 4);
    return View{reinterpret_cast<const uint4*>(base), x16, x16 + ne0 / 16, (bc >> 1) == t, bc & 1};
  }
};
template <>
struct Sel<GgmlType::Q4_K, kI8Diag> : I8Sel<GgmlType::Q4_K> {
  using Path = Q4kI8Path;
};
template <>
struct Sel<GgmlType::Q2_K, kI8Diag> : I8Sel<GgmlType::Q2_K> {
  using Path = Q2kI8Path;
};

template <GgmlType T>
struct ColSel : I8Prep<T == GgmlType::Q4_K || T == GgmlType::Q5_K ? kQ4kColumns : kQ2kColumns> {
  using View = I8ColView;
  __device__ static View view(const uint8_t* base, int64_t ne0, int lane) {
    const int t = lane & 3, g = lane >> 2;
    const float* x16 = reinterpret_cast<const float*>(base + ne0 * 4);
    return View{reinterpret_cast<const uint32_t*>(base), x16, x16 + ne0 / 16, lane, g < 4, (g < 4) == (t < 2),
                4 * (g & 3) + t, (t & 1) ? 0x1p-14f : 1.0f};
  }
};
template <>
struct Sel<GgmlType::Q4_K, kI8Col> : ColSel<GgmlType::Q4_K> {
  using Path = Q4kColPath;
};
template <>
struct Sel<GgmlType::Q2_K, kI8Col> : ColSel<GgmlType::Q2_K> {
  using Path = Q2kColPath;
};
template <>
struct Sel<GgmlType::Q5_K, kI8Col> : ColSel<GgmlType::Q5_K> {
  using Path = Q5kColPath;
};

template <>
struct Sel<GgmlType::MXFP4, kI8Col> : I8Prep<kMxColumns> {
  using Path = Mxfp4ColPath;
  using View = MxColView;
  __device__ static View view(const uint8_t* base, int64_t ne0, int lane) {
    const int t = lane & 3;
    return View{reinterpret_cast<const uint2*>(base), reinterpret_cast<const int2*>(base + ne0 * 4),
                reinterpret_cast<const float*>(base + ne0 * 4 + ne0 / 2), lane, t < 2,
                (t & 1) ? 0x1p-21f : 0x1p-7f};
  }
};

template <>
struct Sel<GgmlType::Q3_K, kI8Col> : ColSel<GgmlType::Q3_K> {
  using Path = Q3kColPath;
};

template <>
struct Sel<GgmlType::Q6_K, kI8Col> : ColSel<GgmlType::Q6_K> {
  using Path = Q6kColPath;
};

template <>
struct Sel<GgmlType::Q2_K, kI8Col2> : ColSel<GgmlType::Q2_K> {
  using Path = Q2kColPath2;
};

template <>
struct Sel<GgmlType::Q2_K, kI8Col3> : I8Prep<kQ2kMinColumns> {
  using Path = Q2kColPath3;
  using View = Q2kCol3View;
  __device__ static View view(const uint8_t* base, int64_t ne0, int lane) {
    const int t = lane & 3, g = lane >> 2;
    const float slice2 = (t & 1) ? 0x1p-14f : 1.0f;
    View v;
    static_cast<I8ColView&>(v) = I8ColView{reinterpret_cast<const uint32_t*>(base), nullptr,
                                           reinterpret_cast<const float*>(base + ne0 * 4 + ne0 / 2), lane, g < 4,
                                           (g < 4) == (t < 2), 4 * (g & 3) + t, slice2};
    v.xm = reinterpret_cast<const uint32_t*>(base + ne0 * 4);
    v.qf = 0.25f * slice2;
    v.mf = t == 0 ? 0.0625f : t == 1 ? 0.0625f * 0x1p-7f : t == 2 ? 0.0625f * 0x1p-14f : 0.0625f * 0x1p-21f;
    return v;
  }
};

template <>
struct Sel<GgmlType::MXFP4, kI8Col3> : I8Prep<kMxMagicColumns> {
  using Path = Mxfp4ColPath2;
  using View = MxCol2View;
  // Every thread of the block calls this (a barrier inside): the table words go through shared
  // memory so that they are loaded into registers once, not re-materialised at every use.
  __device__ static View view(const uint8_t* base, int64_t ne0, int lane) {
    __shared__ uint32_t tab[4];
    const unsigned i = threadIdx.x;
    if (i < 4) tab[i] = i == 0 ? 0x0F0E0D0Cu : i == 1 ? 0x18141210u : i == 2 ? 0x090A0B0Cu : 0x00040608u;
    __syncthreads();
    const int t = lane & 3;
    return View{reinterpret_cast<const uint2*>(base),
                reinterpret_cast<const int4*>(base + ne0 * 4),
                reinterpret_cast<const float*>(base + ne0 * 4 + ne0),
                lane,
                (t & 1) ? 0x1p-21f : 0x1p-7f,
                {tab[0], tab[1], tab[2], tab[3]}};
  }
};

template <GgmlType T, int P>
__global__ void __launch_bounds__(kPrepThreads) x_fragments_kernel(GemvBatch b, uint8_t* scratch) {
  using S = Sel<T, P>;
  const int grp = static_cast<int>(blockIdx.x);
  int j = 0;
  const float* x = single_pair_x(b, grp, &j);
  if (!x) return;
  S::prepare(x, b.ne0, scratch + grp * S::stride(b.ne0), kPrepThreads, [] {});
}

// The x fragments of every single-pair group into scratch (group grp at grp S::stride(ne0)),
// one super-block a warp: grid (ceil(super-blocks / kMmaWarps), groups) of kMmaWarps warps, so a
// vector is prepared by as many warps as it has super-blocks, once for all the blocks of the
// GEMV that copy it (XF 2 of gemv_pipe_kernel) instead of once by each of them. A programmatic
// dependent launch like the GEMV: x is written by the kernel before.
template <GgmlType T, int P>
__global__ void __launch_bounds__(kMmaWarps * 32) x_fragments_wide_kernel(GemvBatch b, uint8_t* scratch) {
  using S = Sel<T, P>;
  const int grp = static_cast<int>(blockIdx.y);
  int j = 0;
  const float* x = single_pair_x(b, grp, &j);
  pdl_wait_then_release();
  if (!x) return;  // the same for the whole block
  S::prepare_part(x, b.ne0, scratch + grp * S::stride(b.ne0), static_cast<int>(blockIdx.x) * kMmaWarps,
                  static_cast<int>(gridDim.x) * kMmaWarps);
}

// swiglu_clamped_fragments: row blockIdx.y, super-block blockIdx.x kMmaWarps + warp; each lane
// computes its 8 elements of the layout (lane_first, lane_second) with gpu/swiglu.cuh (CLAMP:
// swiglu_clamped_one, else swiglu_one, as kernels_elementwise.cu), stores them and slices
// the super-block (slice_super_block) into the row's fragments.
template <int LAYOUT, bool CLAMP>
__global__ void __launch_bounds__(kMmaWarps * 32)
    swiglu_fragments_kernel(const float* gate, const float* up, int64_t ff, float limit, float* out, uint8_t* frag,
                            int64_t frag_stride) {
  // gate and up come from the kernel before (the wait returns at once when this kernel was not
  // launched as its programmatic dependent); a GEMV launched as this kernel's programmatic
  // dependent may start loading its weights once every block is past this point.
  pdl_wait_then_release();
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kMmaWarps + threadIdx.x / 32;
  const int64_t row = blockIdx.y;
  if (k >= ff / 256) return;  // the whole warp
  const int64_t o = row * ff + k * 256 + lane_first<LAYOUT>(lane);
  float v[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t idx = o + (i < 4 ? i : lane_second<LAYOUT>() + i - 4);
    v[i] = CLAMP ? swiglu_clamped_one(gate[idx], up[idx], limit) : swiglu_one(gate[idx], up[idx]);
    out[idx] = v[i];
  }
  slice_super_block<LAYOUT>(v, k, ff, frag + row * frag_stride, lane);
}

// A warp's share of a launch in all three kernels: tile `tile` (16 rows from rbase) of the
// block's RW, and of its row the contiguous range [u0, u1) of n units (split over NW / RW warps,
// summed in warp order: a function of the row length and the layout only); wg the group's
// weights. Not live: past the last row, or a split beyond ks (its range is empty).
struct WarpShare {
  int64_t rbase;
  const uint8_t* wg;
  int ks;
  int64_t u0, u1;
};
// NW: the block's warps (kMmaWarps but in the tiled launch). GLU (GemvBatch::swiglu_epilogue;
// RW = NW, one warp a tile): the block's 8 NW rows of group grp's gate (warps [0, NW / 2):
// w_table[grp]) and of its up (warps [NW / 2, NW): w_table[n_groups + grp]), so a warp streams
// the same tile of rows, with the same arithmetic, as in a launch of 2 n_groups.
// bx: the block's place in the group (blockIdx.x, or a persistent kernel's item: -1 = blockIdx.x).
template <int RW, bool GLU = false, int NW = kMmaWarps>
__device__ __forceinline__ WarpShare warp_share(const GemvBatch& b, int grp, int warp, int64_t n,
                                                int64_t bx = -1) {
  if (bx < 0) bx = blockIdx.x;
  constexpr int kSplit = GLU ? 1 : NW / RW, kHalf = NW / 2;
  static_assert(!GLU || RW == NW, "the SwiGLU epilogue takes one warp a tile");
  const int tile = GLU ? warp % kHalf : warp / kSplit, split = GLU ? 0 : warp % kSplit;
  WarpShare w;
  if constexpr (GLU) {
    w.rbase = (bx * kHalf + tile) * 16;
    w.wg = b.w_table[grp + (warp / kHalf) * b.n_groups];
  } else {
    w.rbase = (bx * RW + tile) * 16;
    w.wg = b.w_table ? b.w_table[grp] : b.w + static_cast<uint64_t>(grp) * b.w_gstride;
  }
  w.ks = k_splits(n, kSplit);
  const bool live = w.rbase < b.ne1 && split < w.ks;
  w.u0 = live ? n * split / w.ks : 0;
  w.u1 = live ? n * (split + 1) / w.ks : 0;
  return w;
}

// A row pair's sums over a quad's lanes (t = 0 .. 3, in this order of adds): lane t = 0 then
// holds rows g (acca) and g + 8 (accb) of the warp's tile.
__device__ __forceinline__ void quad_sums(float& acca, float& accb) {
  acca += __shfl_xor_sync(0xffffffffu, acca, 1);
  acca += __shfl_xor_sync(0xffffffffu, acca, 2);
  accb += __shfl_xor_sync(0xffffffffu, accb, 1);
  accb += __shfl_xor_sync(0xffffffffu, accb, 2);
}

// The end of all three kernels: lane sums (t = 0 holds rows g, g + 8 after the quad
// reduction), written directly (one warp a tile) or through `part` summed in warp order; GLU:
// through `part`, each row's SwiGLU of its gate (warps [0, NW / 2)) and up (warps [NW / 2, NW))
// sums (warp_share).
template <int RW, bool GLU = false, int NW = kMmaWarps>
__device__ __forceinline__ void finish(const GemvBatch& b, int grp, int j, int ks, float acca, float accb,
                                       float (*part)[16], int64_t bx = -1) {
  if (bx < 0) bx = blockIdx.x;
  constexpr int kSplit = GLU ? 1 : NW / RW, kHalf = NW / 2;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  quad_sums(acca, accb);
  float* y = b.y + grp * b.y_gstride + static_cast<int64_t>(j) * b.y_stride;
  if constexpr (GLU) {
    if (t == 0) {
      part[warp][g] = acca;
      part[warp][g + 8] = accb;
    }
    __syncthreads();
    if (tid < 16 * kHalf) {
      const int tile = tid / 16, r = tid % 16;
      const int64_t row = (bx * kHalf + tile) * 16 + r;
      const float gate = part[tile][r], up = part[kHalf + tile][r], limit = b.swiglu_limit;
      // swiglu_clamped's choice (kernels_elementwise.cu): clamped above 1e-6, else plain.
      if (row < b.ne1) y[row] = limit > 1e-6f ? swiglu_clamped_one(gate, up, limit) : swiglu_one(gate, up);
    }
  } else if constexpr (kSplit == 1) {
    const int64_t rbase = (bx * RW + warp) * 16;
    if (t == 0) {
      if (rbase + g < b.ne1) y[rbase + g] = acca;
      if (rbase + g + 8 < b.ne1) y[rbase + g + 8] = accb;
    }
  } else {
    if (t == 0) {
      part[warp][g] = acca;
      part[warp][g + 8] = accb;
    }
    __syncthreads();
    if (tid < 16 * RW) {
      const int tl = tid / 16, r = tid % 16;
      const int64_t row = (bx * RW + tl) * 16 + r;
      if (row < b.ne1) {
        float sum = part[tl * kSplit][r];
        for (int w = 1; w < ks; ++w) sum += part[tl * kSplit + w][r];
        y[row] = sum;
      }
    }
  }
}

// The pipelined kernel (the default; layout at the top of this file). U units a stage, so a
// stage row (U * kBytes) is whole G-byte copies: Q4_K 1 x 144 (G 8), Q2_K 2 x 84 (G 8) or
// 1 x 84 (G 4) for an odd number of super-blocks, MXFP4 1 x 136 (G 8); Q4_K's and MXFP4's
// expert launches of rows of 16 units or more 2 x 144 / 2 x 136 (takes_two_unit_rings); Q3_K
// 2 x 110 and Q6_K 2 x 210 (G 4; Q3_K's variant 26: 4 x 110, G 8), the second unit at 2 mod 4
// (Q3kColPath, Q6kColPath). A group whose weights are not G-aligned (never seen: GGUF data,
// upload arena and pack slots are 32-aligned) copies in 4-byte pieces instead. Q3_K's and Q6_K's
// rows of an odd number of super-blocks (and variants 27, 28) take windowed rings instead
// (windowed_ring): each ring row the G-aligned window around its units, whatever their address
// mod G. Dynamic shared memory: [x fragments unless XF is kXfScratch, S::stride(ne0) bytes]
// [kMmaWarps rings of STAGES x 16 x ring_row_bytes][16 bytes of slack; MXFP4's word loads stay
// within a row (word 33 of 34 at most)].
// XF: where x's fragments come from. kXfPrepare: the block prepares them in shared memory;
// kXfScratch: every warp reads them from scratch (written by x_fragments_kernel) in its loop;
// kXfCopy: the block copies them from scratch (x_fragments_wide_kernel) into shared memory.
// DIAG (benchmark diagnosis only, wrong sums): 1 = copies without the arithmetic, 2 = the
// arithmetic on whatever the rings hold, without copies.
// Order of the start: the block's pair first (a block of a group with another pair count, most
// of a prefill's launch, returns before it copies anything); EARLY stages are issued before the
// wait for the kernel before (PDL), the other STAGES - 1 - EARLY right after the x loads of the
// fragments when the block prepares them (so the x loads queue behind EARLY stages' copies only,
// not behind all of them), right after the fragments' copy when it copies them, right after
// the wait when the fragments stay in scratch.
// MINB: the blocks per SM the registers must allow (__launch_bounds__).
enum XFragments : int { kXfScratch = 0, kXfPrepare = 1, kXfCopy = 2 };
// Windowed rings (Q3_K's and Q6_K's 2-aligned units): one unit a stage (rows of an odd number of
// super-blocks, whose rows and units alternate between 4-aligned and 2 mod 4; variant 27 for every
// row), or two whose 220 / 420 bytes are not whole G-byte copies (G 8). Each ring row is then the
// G-aligned window around the stage's units, copied in G-byte pieces from their address rounded
// down to G: every piece holds a byte of the units, so no copy leaves the weights' allocation
// (whole aligned G-byte words). Otherwise rows of U units are whole G-byte copies.
__host__ __device__ constexpr bool windowed_ring(int bytes, int units, int g) {
  return bytes % 4 != 0 && (units == 1 || (units * bytes) % g != 0);
}
// A ring row's bytes: U units of `bytes`, or a windowed ring's window: the units at up to G - 2
// bytes into it (G - 4 for two units, which stay 4-aligned) and, for one unit, the word past the
// window that PhasedWord reads and drops, so that it never reads a word the next row's copies
// write: Q3_K 116 (G 4) or 120 (G 8) for one unit, 224 for two; Q6_K 216 / 224, 424.
__host__ __device__ constexpr int ring_row_bytes(int bytes, int units, int g) {
  return !windowed_ring(bytes, units, g) ? units * bytes
         : units == 1                    ? (bytes + g - 2 + 4 + g - 1) / g * g
                                         : (units * bytes + g - 4 + g - 1) / g * g;
}
// GLU: SwiGLU as the epilogue (GemvBatch::swiglu_epilogue; warp_share, finish), RW 4 only.
template <GgmlType T, int RW, int STAGES, int U, int G, int XF, int DIAG, int P, int EARLY, int MINB,
          bool GLU = false>
__global__ void __launch_bounds__(kMmaWarps * 32, MINB) gemv_pipe_kernel(GemvBatch b, const uint8_t* scratch) {
  using S = Sel<T, P>;
  using Path = typename S::Path;
  constexpr int kUB = U * Path::kBytes;  // a row's bytes a stage in the weights
  // Windowed rings (windowed_ring): each ring row the G-aligned window of kRowB bytes around the
  // stage's units (ring_row_bytes), one unit read through PhasedWord, two through fetch_at.
  constexpr bool kWindowed = windowed_ring(Path::kBytes, U, G);
  constexpr int kRowB = ring_row_bytes(Path::kBytes, U, G);  // a ring row's bytes
  static_assert(kWindowed || (kUB % G == 0 && kUB % 4 == 0), "a stage row is whole copies");
  static_assert(!kWindowed || U <= 2, "windowed rings hold one or two units");
  extern __shared__ __align__(16) uint8_t dyn[];
  __shared__ float part[kMmaWarps][16];
  const int grp = static_cast<int>(blockIdx.y);
  int j = 0;
  const float* x = block_pair_x(b, &j);
  if (!x) return;  // the same for the whole block
  const int64_t ne0 = b.ne0;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  const WarpShare ws = warp_share<RW, GLU>(b, grp, warp, ne0 / 256 / U);  // in stages
  const int64_t rbase = ws.rbase, st0 = ws.u0, st1 = ws.u1;
  const uint8_t* wg = ws.wg;
  const int ks = ws.ks;

  const int64_t frag_bytes = XF != kXfScratch ? S::stride(ne0) : 0;
  uint8_t* ring = dyn + frag_bytes + static_cast<int64_t>(warp) * STAGES * 16 * kRowB;
  // A stage is 16 rows x kUB bytes (windowed rings: 16 windows of kRowB bytes, copied row by row),
  // copied as chunks c = lane + 32 i of C bytes: row c / (kUB / C) (clamped to the last row: a
  // partial tile reads it again), same offsets every stage. The lane's offsets from the tile's
  // stage 0 are computed once (G-byte copies; 32 bits: 16 rows of at most kMaxNe0 elements).
  static_assert(EARLY >= 0 && EARLY <= STAGES - 1, "at most every first stage before the wait");
  const uint8_t* tile_w = wg + static_cast<uint64_t>(min(rbase, b.ne1 - 1)) * b.row_bytes;
  const int64_t last = b.ne1 - 1 - min(rbase, b.ne1 - 1);
  // uniform per block (per warp in the SwiGLU epilogue, whose gate and up pointers differ)
  const bool wide = ((reinterpret_cast<uintptr_t>(wg) | b.row_bytes) & (G - 1)) == 0;
  constexpr int kPerRowG = kUB / G, kCopiesG = (16 * kPerRowG + 31) / 32;
  // Units of a size that is not a multiple of 4 (Q3_K's 110 bytes: 55 4-byte pieces a 2-unit
  // row, 28 copies a lane; Q6_K's 210: 105 pieces, 53 a lane): the lanes take each row's pieces
  // in turn, its offset computed per row (a table would hold 28 or 53 registers); windowed rings
  // copy row by row too. Every other type keeps the table (PTX unchanged).
  constexpr bool kRowWise = Path::kBytes % 4 != 0;
  uint32_t src_off[kRowWise ? 1 : kCopiesG];
  if constexpr (!kRowWise) {
#pragma unroll
    for (int i = 0; i < kCopiesG; ++i) {
      const int c = lane + 32 * i;  // past the stage (16 kPerRowG not a multiple of 32): unused
      src_off[i] =
          static_cast<uint32_t>(min(static_cast<int64_t>(min(c / kPerRowG, 15)), last) * b.row_bytes) +
          static_cast<uint32_t>((c % kPerRowG) * G);
    }
  }
  const int last_row = static_cast<int>(last);
  const uint32_t row_bytes32 = static_cast<uint32_t>(b.row_bytes);  // 16 rows' offsets fit 32 bits
  // Windowed rings: the low bits of rows a's and b's addresses (the rows the copies read for them)
  const uint32_t phase_a = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(tile_w)) +
                           static_cast<uint32_t>(min(g, last_row)) * row_bytes32;
  const uint32_t phase_b = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(tile_w)) +
                           static_cast<uint32_t>(min(g + 8, last_row)) * row_bytes32;
  const auto issue = [&](int64_t st) {
    const uint8_t* src = tile_w + st * kUB;
    if constexpr (kWindowed) {
      // each row's units in the pieces of G bytes from their address rounded down to G that hold
      // a byte of them (so every piece lies in the weights' allocation)
      constexpr int kMaxPieces = (G - 2 + kUB + G - 1) / G;
      uint8_t* dst = ring + (st % STAGES) * 16 * kRowB;
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        const uintptr_t a =
            reinterpret_cast<uintptr_t>(src) + static_cast<uint32_t>(min(r, last_row)) * row_bytes32;
        const uint32_t off = static_cast<uint32_t>(a) & (G - 1);
        const uint32_t pieces = (off + kUB + G - 1) / G;
        const uint8_t* sr = reinterpret_cast<const uint8_t*>(a - off);
#pragma unroll
        for (int i = 0; i < (kMaxPieces + 31) / 32; ++i) {
          const uint32_t w = static_cast<uint32_t>(lane + 32 * i);
          if (w < pieces) cp_async<G>(dst + r * kRowB + G * w, sr + G * w);
        }
      }
    } else if (wide) {
      uint8_t* dst = ring + (st % STAGES) * 16 * kUB + lane * G;
      if constexpr (kRowWise) {
#pragma unroll
        for (int r = 0; r < 16; ++r) {
          const uint8_t* sr = src + static_cast<uint32_t>(min(r, last_row)) * row_bytes32 + lane * G;
#pragma unroll
          for (int i = 0; i < (kPerRowG + 31) / 32; ++i) {
            if (kPerRowG % 32 == 0 || lane + 32 * i < kPerRowG)
              cp_async<G>(dst + r * kUB + 32 * i * G, sr + 32 * i * G);
          }
        }
      } else {
#pragma unroll
        for (int i = 0; i < kCopiesG; ++i) {
          if ((16 * kPerRowG) % 32 == 0 || lane + 32 * i < 16 * kPerRowG)
            cp_async<G>(dst + 32 * i * G, src + src_off[i]);
        }
      }
    } else {
      constexpr int kPerRow = kUB / 4;
      uint8_t* dst = ring + (st % STAGES) * 16 * kUB;
      for (int c = lane; c < 16 * kPerRow; c += 32) {
        const int r = c / kPerRow, o = (c % kPerRow) * 4;
        cp_async<4>(dst + c * 4, src + static_cast<uint64_t>(min(static_cast<int64_t>(r), last)) * b.row_bytes + o);
      }
    }
  };
  const auto issue_stages = [&](int from, int to) {
#pragma unroll
    for (int i = from; i < to; ++i) {
      if (DIAG != 2 && st0 + i < st1) issue(st0 + i);
      cp_async_commit();  // empty groups keep the count uniform
    }
  };
  issue_stages(0, EARLY);

  pdl_wait_then_release();  // x (and its fragments in scratch) are written by earlier kernels
  const uint8_t* base;
  if constexpr (XF == kXfPrepare) {
    S::prepare(x, ne0, dyn, kMmaWarps * 32, [&] { issue_stages(EARLY, STAGES - 1); });
    __syncthreads();
    base = dyn;
  } else if constexpr (XF == kXfCopy) {
    // The fragments, ready (b.x_frag: x row xi's) or from the group's scratch, in 16-byte pieces
    // (frag_bytes a multiple of 16) as one cp.async group between the first stages and the
    // others; waited for here, so the ring's group count is as in the other modes from the
    // first stage on.
    const int64_t xi = b.x_row ? b.x_row[j] : j;
    const uint8_t* src = b.x_frag ? b.x_frag + xi * b.x_frag_stride : scratch + grp * frag_bytes;
    for (int64_t o = static_cast<int64_t>(tid) * 16; o < frag_bytes; o += kMmaWarps * 32 * 16)
      cp_async16(dyn + o, src + o);
    cp_async_commit();
    issue_stages(EARLY, STAGES - 1);
    cp_async_wait<STAGES - 1 - EARLY>();  // the fragments (and the first EARLY stages)
    __syncthreads();
    base = dyn;
  } else {
    issue_stages(EARLY, STAGES - 1);
    base = scratch + grp * S::stride(ne0);
  }
  const typename S::View xv = S::view(base, ne0, lane);

  float acca = 0.0f, accb = 0.0f;
#pragma unroll 1
  for (int64_t st = st0; st < st1; ++st) {
    cp_async_wait<STAGES - 2>();  // stage st has landed (this lane's copies)
    __syncwarp();                 // ... and every lane's; slot (st - 1) % STAGES is free
    const uint8_t* cur = ring + (st % STAGES) * 16 * kRowB;
    Path p[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint8_t* pa = cur + g * kRowB + u * Path::kBytes;
      const uint8_t* pb = cur + (g + 8) * kRowB + u * Path::kBytes;
      if constexpr (Path::kBytes % 4 != 0) {  // Q3_K, Q6_K: 2-aligned units
        // windowed rings: the rows' offsets in their windows (their addresses mod G this stage)
        const uint32_t adv = static_cast<uint32_t>(st) * static_cast<uint32_t>(kUB);
        const uint32_t oa = kWindowed ? (phase_a + adv) & (G - 1) : 0u;
        const uint32_t ob = kWindowed ? (phase_b + adv) & (G - 1) : 0u;
        if constexpr (kWindowed && U == 1) {  // at 0 or 2 mod 4: the aligned words and a funnel shift
          p[u].fetch_phased(PhasedWord{reinterpret_cast<const uint32_t*>(pa + (oa & ~3u)), (oa & 2u) << 3},
                            PhasedWord{reinterpret_cast<const uint32_t*>(pb + (ob & ~3u)), (ob & 2u) << 3},
                            t);
        } else if ((u * Path::kBytes) % 4 != 0) {  // units from a 4-aligned offset: the second at 2 mod 4
          p[u].template fetch_at<true>(pa + oa, pb + ob, t);
        } else {
          p[u].template fetch_at<false>(pa + oa, pb + ob, t);
        }
      } else {
        p[u].template fetch<false>(pa, pb, t, true);
      }
    }
    if (DIAG != 2 && st + STAGES - 1 < st1) issue(st + STAGES - 1);
    cp_async_commit();
    if constexpr (DIAG == 1) {
      acca += __uint_as_float(reinterpret_cast<const uint32_t*>(&p[0])[0] & 0x3F800000u);
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u) p[u].compute(st * U + u, t, xv, acca, accb);
    }
  }
  cp_async_wait<0>();
  finish<RW, GLU>(b, grp, j, ks, acca, accb, part);
}

// The register layout (variant 1; the default for single Q4_K / Q2_K matrices before the
// column layout): RW row tiles of 16 rows per block, one super-block loaded ahead in registers from
// global memory, x as f16 halves staged per block (or in scratch).
template <GgmlType T, int RW, bool STAGED>
__global__ void __launch_bounds__(kMmaWarps * 32, RW == 4 ? 5 : 4)
    gemv_mma_kernel(GemvBatch b, const uint8_t* scratch) {
  using Path = typename MmaPath<T>::type;
  extern __shared__ __align__(16) uint8_t dyn[];
  __shared__ float part[kMmaWarps][16];
  const int grp = static_cast<int>(blockIdx.y);
  int j = 0;
  const float* x = block_pair_x(b, &j);
  if (!x) return;  // the same for the whole block
  const int64_t ne0 = b.ne0;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane >> 2, t = lane & 3;
  const WarpShare ws = warp_share<RW>(b, grp, warp, ne0 / 256);  // in super-blocks
  const uint8_t* rowa = ws.wg + static_cast<uint64_t>(min(ws.rbase + g, b.ne1 - 1)) * b.row_bytes;
  const uint8_t* rowb = ws.wg + static_cast<uint64_t>(min(ws.rbase + g + 8, b.ne1 - 1)) * b.row_bytes;
  const bool aligned = ((reinterpret_cast<uintptr_t>(ws.wg) | b.row_bytes) & 15) == 0;
  const int ks = ws.ks;
  const int64_t sb0 = ws.u0, sb1 = ws.u1;
  Path ahead;
  if (sb0 < sb1) ahead.template fetch<true>(rowa + sb0 * Path::kBytes, rowb + sb0 * Path::kBytes, t, aligned);
  pdl_wait_then_release();  // x (and its fragments in scratch) are written by earlier kernels
  const uint8_t* base;
  if constexpr (STAGED) {
    x_fragments(x, ne0, dyn, kMmaWarps * 32, [] {});
    __syncthreads();
    base = dyn;
  } else {
    base = scratch + grp * frag_stride(ne0);
  }
  const int bc = lane >> 2;
  const XView xv{reinterpret_cast<const uint4*>(base), reinterpret_cast<const float2*>(base + ne0 * 4),
                 (bc >> 1) == t, bc & 1};
  float acca = 0.0f, accb = 0.0f;
#pragma unroll 1
  for (int64_t sb = sb0; sb < sb1; ++sb) {
    const Path cur = ahead;
    if (sb + 1 < sb1)
      ahead.template fetch<true>(rowa + (sb + 1) * Path::kBytes, rowb + (sb + 1) * Path::kBytes, t, aligned);
    cur.compute(sb, t, xv, acca, accb);
  }
  finish<RW>(b, grp, j, ks, acca, accb, part);
}

// ---- The tiled layout (gpu/gemv_tiled.h): every lane's words loaded straight from global memory --
//
// gemv_tiled_kernel runs the default's arithmetic (Sel<T, col_arith<T>()>: the same Path's
// compute on the same x fragments, units in the same order, the same finish) on weights in the
// tiled layout, so its sums equal the default's on the GGUF layout bit for bit; only where the
// lane's words come from differs. TiledFetch<T>::load reads a lane's share of one chunk (16 rows
// x one unit) in 16-byte loads (a warp's load instruction: 512 contiguous bytes, or a row
// header broadcast to its quad) into Raw registers; decode() moves them into the Path's members
// (register moves only). A warp keeps DEPTH chunks in flight: at depth 1 the loads of unit u + 1
// are issued right after unit u's registers are taken, before its arithmetic; at depth 2 those
// of units u + 2 and u + 3 after units u's and u + 1's registers are taken.

// ld.global.nc without L1 allocation: every weight byte is read once.
__device__ __forceinline__ uint4 ld_weights16(const uint8_t* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 ld_weights8(const uint8_t* p) {
  uint2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ uint32_t ld_weights4(const uint8_t* p) {
  uint32_t v;
  asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

template <GgmlType T>
struct TiledFetch;

// Q2_K (chunk 1344 bytes): qs words [2][32 lanes][16], scales [16 rows][16], d/dmin [8 g][2][4].
template <>
struct TiledFetch<GgmlType::Q2_K> {
  static constexpr GgmlType kType = GgmlType::Q2_K;
  using Path = Q2kColPath3;
  struct Raw {
    uint4 qa, qb, sa, sb;
    uint2 d;
  };
  __device__ __forceinline__ static void load(Raw& r, const uint8_t* c, int lane) {
    const int g = lane >> 2;
    r.qa = ld_weights16(c + 16 * lane);
    r.qb = ld_weights16(c + 512 + 16 * lane);
    r.sa = ld_weights16(c + 1024 + 16 * g);
    r.sb = ld_weights16(c + 1024 + 16 * (g + 8));
    r.d = ld_weights8(c + 1280 + 8 * g);
  }
  __device__ __forceinline__ static void decode(Path& p, const Raw& r, int t) {
    p.qa[0] = make_uint2(r.qa.x, r.qa.y), p.qa[1] = make_uint2(r.qa.z, r.qa.w);
    p.qb[0] = make_uint2(r.qb.x, r.qb.y), p.qb[1] = make_uint2(r.qb.z, r.qb.w);
    p.sa[0] = r.sa.x, p.sa[1] = r.sa.y, p.sa[2] = r.sa.z, p.sa[3] = r.sa.w;
    p.sb4[0] = r.sb.x, p.sb4[1] = r.sb.y, p.sb4[2] = r.sb.z, p.sb4[3] = r.sb.w;
    p.da = r.d.x, p.db = r.d.y;
    p.ma = word_of(r.sa, t) & 0xF0F0F0F0u;  // Q2kColPath3::fetch's
    p.mb = word_of(r.sb, t) & 0xF0F0F0F0u;
  }
};

// Q4_K's and Q5_K's qs words of a chunk, [4][32 lanes][16] at its start (rows g: groups 0-1,
// 2-3; rows g + 8: the same), into the lane's registers and then into the path's qa, qb.
__device__ __forceinline__ void load_k4_qs(uint4 (&q)[4], const uint8_t* c, int lane) {
#pragma unroll
  for (int i = 0; i < 4; ++i) q[i] = ld_weights16(c + 512 * i + 16 * lane);
}
__device__ __forceinline__ void decode_k4_qs(Q4kI8Path& p, const uint4 (&q)[4]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    p.qa[2 * h] = make_uint2(q[h].x, q[h].y), p.qa[2 * h + 1] = make_uint2(q[h].z, q[h].w);
    p.qb[2 * h] = make_uint2(q[2 + h].x, q[2 + h].y), p.qb[2 * h + 1] = make_uint2(q[2 + h].z, q[2 + h].w);
  }
}

// Q4_K (chunk 2304 bytes): qs words (load_k4_qs), headers [16 rows][16].
template <>
struct TiledFetch<GgmlType::Q4_K> {
  static constexpr GgmlType kType = GgmlType::Q4_K;
  using Path = Q4kColPath;
  struct Raw {
    uint4 q[4], ha, hb;
  };
  __device__ __forceinline__ static void load(Raw& r, const uint8_t* c, int lane) {
    const int g = lane >> 2;
    load_k4_qs(r.q, c, lane);
    r.ha = ld_weights16(c + 2048 + 16 * g);
    r.hb = ld_weights16(c + 2048 + 16 * (g + 8));
  }
  __device__ __forceinline__ static void decode(Path& p, const Raw& r, int) {
    p.ha = r.ha, p.hb = r.hb;
    decode_k4_qs(p, r.q);
  }
};

// Q5_K (chunk 2816 bytes; twenty-ninth pass): Q4_K's qs words (load_k4_qs), then qh [16
// rows][32] (the lane's 8 bytes 8t.. of rows g and g + 8: two 8-byte loads, each a warp's 256
// contiguous bytes), headers [16 rows][16].
template <>
struct TiledFetch<GgmlType::Q5_K> {
  static constexpr GgmlType kType = GgmlType::Q5_K;
  using Path = Q5kColPath;
  struct Raw {
    uint4 q[4], ha, hb;
    uint2 qha, qhb;
  };
  __device__ __forceinline__ static void load(Raw& r, const uint8_t* c, int lane) {
    const int g = lane >> 2, t = lane & 3;
    load_k4_qs(r.q, c, lane);
    r.qha = ld_weights8(c + 2048 + 32 * g + 8 * t);
    r.qhb = ld_weights8(c + 2048 + 32 * (g + 8) + 8 * t);
    r.ha = ld_weights16(c + 2560 + 16 * g);
    r.hb = ld_weights16(c + 2560 + 16 * (g + 8));
  }
  __device__ __forceinline__ static void decode(Path& p, const Raw& r, int) {
    p.ha = r.ha, p.hb = r.hb;
    p.qha = r.qha, p.qhb = r.qhb;
    decode_k4_qs(p, r.q);
  }
};

// Q6_K (chunk 3360 bytes; twenty-ninth pass): ql words [4][32 lanes][16] (row g: halves n 0, 1;
// row g + 8: the same), qh words [2 rows][32 lanes][16], scales [16 rows][16], d [8 g][2 rows][2].
// Every load 16-, 4-byte aligned (the GGUF rows of 210 bytes are only 2-aligned: the rings copy
// them in 4-byte pieces, twenty-seventh pass). decode() does what Q6kColPath::fetch_row does to
// the words (qh's high bits flipped, the lane's scale bytes picked), in registers.
template <>
struct TiledFetch<GgmlType::Q6_K> {
  static constexpr GgmlType kType = GgmlType::Q6_K;
  using Path = Q6kColPath;
  struct Raw {
    uint4 l[4], h[2], sa, sb;
    uint32_t d;
  };
  __device__ __forceinline__ static void load(Raw& r, const uint8_t* c, int lane) {
    const int g = lane >> 2;
#pragma unroll
    for (int i = 0; i < 4; ++i) r.l[i] = ld_weights16(c + 512 * i + 16 * lane);
#pragma unroll
    for (int i = 0; i < 2; ++i) r.h[i] = ld_weights16(c + 2048 + 512 * i + 16 * lane);
    r.sa = ld_weights16(c + 3072 + 16 * g);
    r.sb = ld_weights16(c + 3072 + 16 * (g + 8));
    r.d = ld_weights4(c + 3328 + 4 * g);
  }
  __device__ __forceinline__ static void decode(Path& p, const Raw& r, int t) {
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          p.la[n][q][k] = word_of(r.l[n], 2 * q + k);
          p.lb[n][q][k] = word_of(r.l[2 + n], 2 * q + k);
        }
      }
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        p.ha[n][k] = q6k_qh_flipped(word_of(r.h[0], 2 * n + k));
        p.hb[n][k] = q6k_qh_flipped(word_of(r.h[1], 2 * n + k));
      }
    }
    // bytes t / 2 + {0, 2, 4, 6} of scale words 2n, 2n + 1 (Q6kColPath::fetch_row's)
    const uint32_t sel = 0x6420u + (static_cast<uint32_t>(t) >> 1) * 0x1111u;
    p.sa[0] = prmt(r.sa.x, r.sa.y, sel), p.sa[1] = prmt(r.sa.z, r.sa.w, sel);
    p.sb2[0] = prmt(r.sb.x, r.sb.y, sel), p.sb2[1] = prmt(r.sb.z, r.sb.w, sel);
    p.da = r.d;        // row a's d in the low half
    p.db = r.d >> 16;  // row b's
  }
};

// Q3_K (chunk 1760 bytes; twenty-ninth pass): qs words [2 rows][32 lanes][16] (halves n 0, 1),
// hmask [16 rows][32], scales [8 g][2 rows][12], d [8 g][2 rows][2]. Every load 16-, 8- or 4-byte
// aligned (the GGUF rows of 110-byte super-blocks are only 2-aligned: the rings copy them in
// 4-byte pieces, twenty-sixth pass).
template <>
struct TiledFetch<GgmlType::Q3_K> {
  static constexpr GgmlType kType = GgmlType::Q3_K;
  using Path = Q3kColPath;
  struct Raw {
    uint4 qa, qb;
    uint2 ha, hb, s[3];
    uint32_t d;
  };
  __device__ __forceinline__ static void load(Raw& r, const uint8_t* c, int lane) {
    const int g = lane >> 2, t = lane & 3;
    r.qa = ld_weights16(c + 16 * lane);
    r.qb = ld_weights16(c + 512 + 16 * lane);
    r.ha = ld_weights8(c + 1024 + 32 * g + 8 * t);
    r.hb = ld_weights8(c + 1024 + 32 * (g + 8) + 8 * t);
#pragma unroll
    for (int k = 0; k < 3; ++k) r.s[k] = ld_weights8(c + 1536 + 24 * g + 8 * k);
    r.d = ld_weights4(c + 1728 + 4 * g);
  }
  __device__ __forceinline__ static void decode(Path& p, const Raw& r, int) {
    p.ha[0] = r.ha.x, p.ha[1] = r.ha.y;
    p.hb[0] = r.hb.x, p.hb[1] = r.hb.y;
#pragma unroll
    for (int n = 0; n < 2; ++n) {
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        p.qa[n][k] = word_of(r.qa, 2 * n + k);
        p.qb[n][k] = word_of(r.qb, 2 * n + k);
      }
    }
    // row g's 12 scale bytes, then row g + 8's
    p.sa[0] = r.s[0].x, p.sa[1] = r.s[0].y, p.sa[2] = r.s[1].x;
    p.sb3[0] = r.s[1].y, p.sb3[1] = r.s[2].x, p.sb3[2] = r.s[2].y;
    p.da = r.d;        // row a's d in the low half
    p.db = r.d >> 16;  // row b's
  }
};

// MXFP4 (chunk 2176 bytes): qs words [4][32 lanes][16] (row g: blocks 0-3, 4-7; row g + 8: the
// same), scales [8 g][2 h][2 rows][4].
template <>
struct TiledFetch<GgmlType::MXFP4> {
  static constexpr GgmlType kType = GgmlType::MXFP4;
  using Path = Mxfp4ColPath2;
  struct Raw {
    uint4 q[4];
    uint2 e;
  };
  __device__ __forceinline__ static void load(Raw& r, const uint8_t* c, int lane) {
    const int g = lane >> 2, h = (lane & 3) >> 1;
#pragma unroll
    for (int i = 0; i < 4; ++i) r.q[i] = ld_weights16(c + 512 * i + 16 * lane);
    r.e = ld_weights8(c + 2048 + 16 * g + 8 * h);
  }
  __device__ __forceinline__ static void decode(Path& p, const Raw& r, int) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      p.wa[i] = word_of(r.q[0], i), p.wa[4 + i] = word_of(r.q[1], i);
      p.wb[i] = word_of(r.q[2], i), p.wb[4 + i] = word_of(r.q[3], i);
      p.dea[i] = e8m0_half(static_cast<uint8_t>(r.e.x >> (8 * i)));
      p.deb[i] = e8m0_half(static_cast<uint8_t>(r.e.y >> (8 * i)));
    }
  }
};

// A warp's units [u, ue) of the tile whose unit 0 is the chunk at tk, into acca / accb in unit
// order (the default's arithmetic, Path::compute); r holds the next DEPTH chunks on entry, and the
// chunks after them below `left` (counted from tk: the rest of the warp's contiguous chunks) are
// loaded ahead. At depth 1 the loads of unit u + 1 are issued right after unit u's registers are
// taken; at depth 2 both chunks of a pair are computed in one basic block, with the next pair's
// loads clamped to chunk left - 1 instead of a branch (past the end, that chunk again: an L2 hit,
// never used), and an odd count's last chunk (in r[0]) alone, loading nothing ahead: a run of
// several tiles at depth 2 needs an even count of units a tile.
template <class F, class Path, int DEPTH, class View>
__device__ __forceinline__ void tiled_units(typename F::Raw (&r)[DEPTH], const uint8_t* tk, int64_t u,
                                            int64_t ue, int64_t left, int t, int lane, const View& xv,
                                            float& acca, float& accb) {
  constexpr int kChunk = tiled_chunk_bytes(F::kType);
  if constexpr (DEPTH == 1) {
#pragma unroll 1
    for (; u < ue; ++u) {
      Path p;
      F::decode(p, r[0], t);
      if (u + 1 < left) F::load(r[0], tk + (u + 1) * kChunk, lane);
      p.compute(u, t, xv, acca, accb);
    }
  } else {
#pragma unroll 1
    for (; u + 1 < ue; u += 2) {
      Path p0, p1;
      F::decode(p0, r[0], t);
      F::decode(p1, r[1], t);
      F::load(r[0], tk + (u + 2 < left ? u + 2 : left - 1) * kChunk, lane);
      F::load(r[1], tk + (u + 3 < left ? u + 3 : left - 1) * kChunk, lane);
      p0.compute(u, t, xv, acca, accb);
      p1.compute(u + 1, t, xv, acca, accb);
    }
    if (u < ue) {  // an odd count: the last chunk, in r[0]
      Path p;
      F::decode(p, r[0], t);
      p.compute(u, t, xv, acca, accb);
    }
  }
}

// The tiled expert launch (P: the default's arithmetic, col_arith<T>()): grid (ceil(ne1 / (16 NW))
// (ceil(ne1 / (8 NW)) with GLU or RW = NW / 2), groups) of NW warps, one warp a tile of 16 rows, its
// whole row (warp_share<RW, GLU, NW>); x's fragments prepared by the block in shared memory, as
// the default's staged launch (more warps a block: fewer preparations of the same x a launch).
// The group's matrix (w_table[grp]) is in the tiled layout. MINB: blocks per SM the registers
// must allow.
// RW NW / 2 (no GLU): two warps a tile, each half of its row's units, summed in warp order
// (finish): twice the blocks, but sums in another order than the default's (not bit for bit).
// DEPTH 2: two chunks in flight, and the arithmetic of both in one basic block (no branch
// between), so that the compiler may interleave the second chunk's integer work with the
// first's; the accumulators' adds stay in the chunks' order, so the sums are still the
// default's bit for bit.
template <GgmlType T, int P, int DEPTH, int MINB, bool GLU = false, int RW = kMmaWarps, int NW = kMmaWarps>
__global__ void __launch_bounds__(NW * 32, MINB) gemv_tiled_kernel(GemvBatch b, const uint8_t*) {
  using S = Sel<T, P>;
  using F = TiledFetch<T>;
  using Path = typename S::Path;
  static_assert(std::is_same_v<Path, typename F::Path>, "the default's arithmetic");
  static_assert(DEPTH == 1 || DEPTH == 2, "one or two chunks in flight");
  constexpr int kChunk = tiled_chunk_bytes(T);
  extern __shared__ __align__(16) uint8_t dyn[];
  __shared__ float part[NW][16];
  const int grp = static_cast<int>(blockIdx.y);
  int j = 0;
  const float* x = block_pair_x(b, &j);
  if (!x) return;  // the same for the whole block
  const int64_t ne0 = b.ne0;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, t = lane & 3;
  static_assert(RW == NW || !GLU, "the SwiGLU epilogue takes one warp a tile");
  const WarpShare ws = warp_share<RW, GLU, NW>(b, grp, warp, ne0 / 256);
  const int64_t u0 = ws.u0, u1 = ws.u1;
  // chunk (tile, u) of the tile's row of chunks (ne1 is whole tiles: a live warp's tile is full)
  const uint8_t* tw = ws.wg + (ws.rbase / 16) * (ne0 / 256) * kChunk;
  typename F::Raw r[DEPTH];
#pragma unroll
  for (int i = 0; i < DEPTH; ++i) {
    if (u0 + i < u1) F::load(r[i], tw + (u0 + i) * kChunk, lane);
  }
  pdl_wait_then_release();  // x is written by the kernel before
  S::prepare(x, ne0, dyn, NW * 32, [] {});
  __syncthreads();
  const typename S::View xv = S::view(dyn, ne0, lane);
  float acca = 0.0f, accb = 0.0f;
  tiled_units<F, Path, DEPTH>(r, tw, u0, u1, u1, t, lane, xv, acca, accb);
  finish<RW, GLU, NW>(b, grp, j, ws.ks, acca, accb, part);
}

// A warp's contiguous run of tiles (gemv_tiled_runs_kernel, gemv_tiled_ffn_kernel's down items):
// block item bx of tpb tiles of group grp's matrix of b, split over NW warps (warp w: tiles
// [n w / NW, n (w + 1) / NW) of the item's n); tw is the run's first chunk, n_chunks its chunks.
struct TiledRun {
  int64_t t0, nt, units, n_chunks;
  const uint8_t* tw;
};
template <int NW, int kChunk>
__device__ __forceinline__ TiledRun tiled_run(const GemvBatch& b, int grp, int64_t bx, int64_t tpb,
                                              int warp) {
  TiledRun r;
  r.units = b.ne0 / 256;
  const int64_t tiles = b.ne1 / 16;  // whole tiles (tiled_layout_covers)
  const int64_t tb0 = bx * tpb;
  const int64_t nb = tb0 < tiles ? (tiles - tb0 < tpb ? tiles - tb0 : tpb) : 0;  // the item's tiles
  r.t0 = tb0 + nb * warp / NW;
  r.nt = tb0 + nb * (warp + 1) / NW - r.t0;
  const uint8_t* wg = b.w_table ? b.w_table[grp] : b.w + static_cast<uint64_t>(grp) * b.w_gstride;
  r.tw = wg + r.t0 * r.units * kChunk;
  r.n_chunks = r.nt * r.units;
  return r;
}
// Every tile of the run summed from 0 in unit order (tiled_units; r holds its first DEPTH chunks)
// and written to y's rows as the one-tile kernel writes them.
template <class F, class Path, int DEPTH, class View>
__device__ __forceinline__ void tiled_run_sums(typename F::Raw (&r)[DEPTH], const TiledRun& run, int t,
                                               int lane, const View& xv, float* y) {
  constexpr int kChunk = tiled_chunk_bytes(F::kType);
#pragma unroll 1
  for (int64_t k = 0; k < run.nt; ++k) {
    const uint8_t* tk = run.tw + k * run.units * kChunk;
    const int64_t left = run.n_chunks - k * run.units;  // chunks from tk to the run's end
    float acca = 0.0f, accb = 0.0f;
    tiled_units<F, Path, DEPTH>(r, tk, 0, run.units, left, t, lane, xv, acca, accb);
    quad_sums(acca, accb);
    if (t == 0) {
      const int64_t row = (run.t0 + k) * 16 + (lane >> 2);
      y[row] = acca;
      y[row + 8] = accb;
    }
  }
}

// The tiled launch with several tiles a warp (plain launches only: no SwiGLU epilogue, one warp
// a tile): block x of group grp takes the tiles [x tpb, min((x + 1) tpb, ne1 / 16)) of the
// group's matrix, and its NW warps split them into contiguous runs (warp w: tiles
// [n w / NW, n (w + 1) / NW) of the block's n). A run is contiguous in the tiled layout (a tile's
// row of chunks, then the next tile's), so a warp streams it as one row of chunks and keeps DEPTH
// chunks in flight across its tiles' ends; each tile is summed from 0 in unit order and written
// as the one-tile kernel writes it, so every sum is still the default's bit for bit. x's
// fragments are prepared once a block for all its tiles. What it is for: a grid of fewer blocks
// than the one-tile launch's, in one even wave (gemv_launch_cap.h, tiled_runs_tiles), where the
// one-tile launch would leave a second wave part full (7168 x 2048 x 8: 224 blocks of 16 warps
// on 132 SMs). DEPTH 2 takes units in pairs: rows of an even number of units only (the launch
// takes DEPTH 1 otherwise).
template <GgmlType T, int P, int DEPTH, int MINB, int NW>
__global__ void __launch_bounds__(NW * 32, MINB)
    gemv_tiled_runs_kernel(GemvBatch b, const uint8_t*, int tpb) {
  using S = Sel<T, P>;
  using F = TiledFetch<T>;
  using Path = typename S::Path;
  static_assert(std::is_same_v<Path, typename F::Path>, "the default's arithmetic");
  static_assert(DEPTH == 1 || DEPTH == 2, "one or two chunks in flight");
  constexpr int kChunk = tiled_chunk_bytes(T);
  extern __shared__ __align__(16) uint8_t dyn[];
  const int grp = static_cast<int>(blockIdx.y);
  int j = 0;
  const float* x = block_pair_x(b, &j);
  if (!x) return;  // the same for the whole block
  const int64_t ne0 = b.ne0;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, t = lane & 3;
  const TiledRun run = tiled_run<NW, kChunk>(b, grp, blockIdx.x, tpb, warp);
  typename F::Raw r[DEPTH];
#pragma unroll
  for (int i = 0; i < DEPTH; ++i) {
    if (i < run.n_chunks) F::load(r[i], run.tw + i * kChunk, lane);
  }
  pdl_wait_then_release();  // x is written by the kernel before
  S::prepare(x, ne0, dyn, NW * 32, [] {});
  __syncthreads();
  const typename S::View xv = S::view(dyn, ne0, lane);
  tiled_run_sums<F, Path, DEPTH>(r, run, t, lane, xv,
                                 b.y + grp * b.y_gstride + static_cast<int64_t>(j) * b.y_stride);
}

// A counter read with acquire semantics at GPU scope (PTX ISA "ld.acquire"): the writes released
// before the increments it sees are visible to the reading thread.
__device__ __forceinline__ int ld_acquire_gpu(const int32_t* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// *p += 1 after the writes this thread has seen (its block's, through the barrier before) are
// released at GPU scope (PTX ISA "fence.acq_rel", "red"): no result, so no round trip.
__device__ __forceinline__ void red_release_gpu(int32_t* p) {
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  asm volatile("red.relaxed.gpu.global.add.s32 [%0], 1;\n" ::"l"(p) : "memory");
}

// *p += 1 with acquire and release semantics at GPU scope (PTX ISA "atom"); the old value.
__device__ __forceinline__ int atomic_add_acq_rel_gpu(int32_t* p) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(p) : "memory");
  return old;
}

// A token's expert FFN at decode in one launch (gemv_experts_ffn; both batches in the tiled
// layout): gate + up with the SwiGLU epilogue (batch a, as gemv_tiled_kernel with GLU and NW
// warps: a_x blocks a group of 8 NW rows) and then down (batch d, as gemv_tiled_runs_kernel: b_x
// blocks a group of tpb tiles, each warp a contiguous run), as one list of items, a's (group by
// group) before d's, that the grid's blocks take in turn (block i: items i, i + gridDim.x, ...).
// A down item of group g reads the SwiGLU rows its group's a items wrote (d.x is a.y): the block
// issues its first weight loads, then waits until sync[g] counts all a_x of them (each a item
// adds 1 after its rows are written, with release semantics; the wait reads with acquire), and
// prepares x's fragments from those rows through L2 (prepare_coherent). Every tile is summed by
// one warp in unit order with the same arithmetic as in the two launches: the same values bit for
// bit (gate + up's rows too).
// Deadlock-free because a block waits only in a down item, after all of its own gate + up
// items, and the grid is no larger than the blocks the SMs hold at once (the host's
// occupancy bound): every gate + up item's block is resident or will become so when another
// kernel's block ends. The counters go back to 0 for the next launch on the stream (a CUDA
// graph's replays too): sync[K] counts the blocks past their last wait (or, without any, at their
// end), and the block that completes that count stores 0 into sync[0 .. K] at its end; no
// block reads them after its last wait, and every gate + up item adds its 1 before its block's
// count. The count's round trip overlaps the block's last down item.
template <GgmlType T, int P, int DA, int DB, int MINB, int NW>
__global__ void __launch_bounds__(NW * 32, MINB)
    gemv_tiled_ffn_kernel(GemvBatch a, GemvBatch d, int a_x, int b_x, int tpb, int32_t* sync) {
  using S = Sel<T, P>;
  using F = TiledFetch<T>;
  using Path = typename S::Path;
  static_assert(std::is_same_v<Path, typename F::Path>, "the default's arithmetic");
  static_assert((DA == 1 || DA == 2) && (DB == 1 || DB == 2), "one or two chunks in flight");
  constexpr int kChunk = tiled_chunk_bytes(T);
  extern __shared__ __align__(16) uint8_t dyn[];
  __shared__ float part[NW][16];
  const int K = a.n_groups;
  const int n_a = a_x * K, n_items = n_a + b_x * K, step = static_cast<int>(gridDim.x);
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, t = lane & 3;
  int item = static_cast<int>(blockIdx.x);
  bool waited = false;  // for the kernel before (x, and the counters' zeros): after the first loads
  // Gate + up (the items before n_a), then down: two loops, so that their registers never overlap.
#pragma unroll 1
  for (; item < n_a; item += step) {
    const int grp = item / a_x, bx = item % a_x;
    int j = 0;
    const float* x = single_pair_x(a, grp, &j);
    // A group of another pair count: nothing to write, nothing to count (its down items skip it
    // too, by the same grp_off).
    if (!x) continue;  // the same for the whole block
    {
      const int64_t ne0 = a.ne0;
      const WarpShare ws = warp_share<NW, true, NW>(a, grp, warp, ne0 / 256, bx);
      const uint8_t* tw = ws.wg + (ws.rbase / 16) * (ne0 / 256) * kChunk;
      typename F::Raw r[DA];
#pragma unroll
      for (int i = 0; i < DA; ++i) {
        if (ws.u0 + i < ws.u1) F::load(r[i], tw + (ws.u0 + i) * kChunk, lane);
      }
      if (!waited) pdl_wait_then_release(), waited = true;
      __syncthreads();  // the block's item before has read dyn and part
      S::prepare(x, ne0, dyn, NW * 32, NoAfter{});
      __syncthreads();
      const typename S::View xv = S::view(dyn, ne0, lane);
      float acca = 0.0f, accb = 0.0f;
      tiled_units<F, Path, DA>(r, tw, ws.u0, ws.u1, ws.u1, t, lane, xv, acca, accb);
      finish<NW, true, NW>(a, grp, j, ws.ks, acca, accb, part, bx);
    }
    __syncthreads();  // every row of the item is written
    if (tid == 0) red_release_gpu(sync + grp);
    // (A block's counts come after its own increments in program order, and they are acq_rel:
    // the block that completes the count has seen every increment before it stores the zeros.)
  }
  int ended = -1;  // thread 0: sync[K] before this block's count, once counted
#pragma unroll 1
  for (; item < n_items; item += step) {
    const int i2 = item - n_a, grp = i2 / b_x, bx = i2 % b_x;
    int j = 0;
    const float* x = single_pair_x(d, grp, &j);
    if (!x) continue;  // the same for the whole block
    const TiledRun run = tiled_run<NW, kChunk>(d, grp, bx, tpb, warp);
    typename F::Raw r[DB];
#pragma unroll
    for (int i = 0; i < DB; ++i) {
      if (i < run.n_chunks) F::load(r[i], run.tw + i * kChunk, lane);
    }
    if (!waited) pdl_wait_then_release(), waited = true;
    if (tid == 0) {
      while (ld_acquire_gpu(sync + grp) < a_x) __nanosleep(32);
      if (item + step >= n_items) ended = atomic_add_acq_rel_gpu(sync + K);  // past the block's last wait
    }
    __syncthreads();  // the group's SwiGLU rows are written; the item before has read dyn
    S::prepare_coherent(x, d.ne0, dyn, NW * 32);
    __syncthreads();
    const typename S::View xv = S::view(dyn, d.ne0, lane);
    tiled_run_sums<F, Path, DB>(r, run, t, lane, xv,
                                d.y + grp * d.y_gstride + static_cast<int64_t>(j) * d.y_stride);
  }
  if (!waited) pdl_wait_then_release();
  if (tid == 0) {
    if (ended < 0) ended = atomic_add_acq_rel_gpu(sync + K);  // no wait in its last item, or none at all
    if (ended == step - 1) {  // every block is past its last wait: the next launch's zeros
      for (int g = 0; g <= K; ++g)
        asm volatile("st.relaxed.gpu.global.s32 [%0], 0;\n" ::"l"(sync + g) : "memory");
    }
  }
}

// Matrix m of n_matrices (src: rows of row_bytes, matrices back to back) into the tiled layout
// at dst + m * ne1 * row_bytes: thread per output byte (tiled_source).
template <GgmlType T>
__global__ void repack_tiled_kernel(const uint8_t* src, uint8_t* dst, int64_t ne0, int64_t ne1,
                                    uint64_t row_bytes, int64_t total) {
  constexpr int kChunk = tiled_chunk_bytes(T), kUnit = tiled_unit_bytes(T);
  const int64_t units = ne0 / 256, mat = ne1 * static_cast<int64_t>(row_bytes);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t m = i / mat, in_m = i % mat;
    const int64_t chunk = in_m / kChunk;
    const int o = static_cast<int>(in_m % kChunk);
    const int64_t tile = chunk / units, u = chunk % units;
    const TiledSource sr = tiled_source(T, o);
    dst[i] = src[m * mat + (tile * 16 + sr.row) * static_cast<int64_t>(row_bytes) + u * kUnit + sr.byte];
  }
}

// -1: tensor cores off (every type takes kernels_gemv.cu's F32 kernels); 0: the default.
std::atomic<int> g_variant{0};

}  // namespace
// Stream-ordered scratch from the device's default pool, which keeps up to 64 MiB of freed
// memory for reuse: no device-wide sync, no driver allocation per launch.
void keep_pool_memory() {
  static std::mutex mu;
  static std::set<int> ready;  // devices whose default pool keeps 64 MiB
  int dev = 0;
  MOEPACK_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (ready.insert(dev).second) {
    cudaMemPool_t pool;
    MOEPACK_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
    uint64_t keep = 64ull << 20;
    MOEPACK_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
}
namespace {
template <GgmlType T, int P>
uint8_t* fragments_in_scratch(const GemvBatch& b, cudaStream_t s) {
  keep_pool_memory();
  void* scratch = nullptr;
  MOEPACK_CUDA_CHECK(
      cudaMallocAsync(&scratch, static_cast<size_t>(b.n_groups) * Sel<T, P>::stride(b.ne0), s));
  x_fragments_kernel<T, P>
      <<<static_cast<unsigned>(b.n_groups), kPrepThreads, 0, s>>>(b, static_cast<uint8_t*>(scratch));
  MOEPACK_CUDA_CHECK(cudaGetLastError());
  return static_cast<uint8_t*>(scratch);
}

std::atomic<bool> g_pdl{true};
std::atomic<bool> g_swiglu_pdl{true};
std::atomic<bool> g_swiglu_fusion{true};

int current_device() {
  int dev = 0;
  MOEPACK_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

// Per (device, kernel): whether the kernel's code has griddepcontrol (built from sm_90+ PTX
// for an sm_90+ device; code JIT-compiled from older PTX lacks the wait, so it must not be
// launched as a dependent), and the dynamic shared memory a launch may ask for so far (CUDA's
// maxDynamicSharedSizeBytes: 48 KiB less the kernel's static shared memory until opted in higher).
struct KernelState {
  bool pdl = false;
  size_t smem = 0;
  size_t static_smem = 0;   // the kernel's own __shared__ bytes
  bool max_shared = false;  // prefer_max_shared done
};
KernelState& kernel_state(const void* kernel) {
  static std::mutex mu;
  static std::map<std::pair<int, const void*>, KernelState> states;
  const int dev = current_device();
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(dev, kernel);
  auto it = states.find(key);
  if (it == states.end()) {
    cudaFuncAttributes fa{};
    MOEPACK_CUDA_CHECK(cudaFuncGetAttributes(&fa, kernel));
    KernelState st;
    st.pdl = fa.ptxVersion >= 90 && fa.binaryVersion >= 90;
    st.static_smem = fa.sharedSizeBytes;
    st.smem = static_cast<size_t>(fa.maxDynamicSharedSizeBytes);
    it = states.emplace(key, st).first;
  }
  return it->second;
}

// kernel<<<grid, threads, smem, s>>>(args...), as a programmatic dependent launch when `pdl` and
// the kernel's code has griddepcontrol (kernel_state).
template <class... Params, class... Args>
void launch_maybe_dependent(void (*kernel)(Params...), dim3 grid, int threads, size_t smem, cudaStream_t s,
                            bool pdl, Args... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  if (pdl && kernel_state(reinterpret_cast<const void*>(kernel)).pdl) {
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, args...);
  if (e != cudaSuccess) {
    // The launch's shape in the message (a launch refused for its configuration says which), and its
    // error taken off cudaGetLastError's state so that the next launch does not report it again.
    (void)cudaGetLastError();
    cudaFuncAttributes fa{};
    const bool attrs = cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(kernel)) == cudaSuccess;
    const std::string what = "cudaLaunchKernelEx (grid " + std::to_string(grid.x) + " x " +
                             std::to_string(grid.y) + ", " + std::to_string(threads) + " threads, " +
                             std::to_string(smem) + " bytes of dynamic shared memory" +
                             (attrs ? ", the kernel's " + std::to_string(fa.sharedSizeBytes) +
                                          " static and " + std::to_string(fa.maxDynamicSharedSizeBytes) +
                                          " dynamic allowed, " + std::to_string(fa.numRegs) + " registers"
                                    : std::string()) +
                             (cfg.numAttrs > 0 ? ", a programmatic dependent" : "") + ")";
    throw_cuda_error(e, what.c_str(), __FILE__, __LINE__);
  }
}

// A GEMV kernel (or x_fragments_wide_kernel) on b and scratch, as a programmatic dependent
// launch unless set_gemv_pdl(false), b.tables_from_kernel or the kernel's code predates sm_90.
template <class T>
struct NotDeduced {
  using type = T;
};
template <class Scratch>
void launch_kernel(void (*kernel)(GemvBatch, Scratch), dim3 grid, size_t smem, cudaStream_t s,
                   const GemvBatch& b, typename NotDeduced<Scratch>::type scratch,
                   int threads = kMmaWarps * 32) {
  launch_maybe_dependent(kernel, grid, threads, smem, s,
                         g_pdl.load(std::memory_order_relaxed) && !b.tables_from_kernel, b, scratch);
}

// The x fragments of every group of b in stream-ordered scratch (the pool as
// fragments_in_scratch), by x_fragments_wide_kernel as a programmatic dependent launch; the
// caller frees them after its launch (cudaFreeAsync on s).
template <GgmlType T, int P>
uint8_t* wide_fragments(const GemvBatch& b, cudaStream_t s) {
  keep_pool_memory();
  void* scratch = nullptr;
  MOEPACK_CUDA_CHECK(cudaMallocAsync(&scratch, static_cast<size_t>(b.n_groups) * Sel<T, P>::stride(b.ne0), s));
  const dim3 grid(static_cast<unsigned>((b.ne0 / 256 + kMmaWarps - 1) / kMmaWarps), static_cast<unsigned>(b.n_groups),
                  1);
  launch_kernel(x_fragments_wide_kernel<T, P>, grid, 0, s, b, static_cast<uint8_t*>(scratch));
  return static_cast<uint8_t*>(scratch);
}

// kXfStale's buffer (benchmark diagnosis only): device memory of at least `bytes` that nothing
// writes, grown as needed and kept for the process (cudaMalloc: the benchmark's untimed first
// launch takes the allocation).
uint8_t* stale_scratch(int64_t bytes) {
  static std::mutex mu;
  static std::map<int, std::pair<uint8_t*, int64_t>> bufs;
  int dev = 0;
  MOEPACK_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto& buf = bufs[dev];
  if (buf.second < bytes) {
    if (buf.first) MOEPACK_CUDA_CHECK(cudaFree(buf.first));
    void* p = nullptr;
    MOEPACK_CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(bytes)));
    buf = {static_cast<uint8_t*>(p), bytes};
  }
  return buf.first;
}

// The opt-in of dynamic shared memory, per device and kernel (an attribute of the kernel), raised
// when a launch needs more than the kernel allows so far: above 48 KiB less the kernel's static
// shared memory, not above 48 KiB. (Fifty-sixth session: under sm_120's limits gpu_ops_test's tiled
// test was refused "invalid argument" at launch while the opt-in started at 48 KiB of dynamic bytes; by
// the arithmetic, MXFP4's 16-warp tiled kernels, 1,040 static bytes, padded for one block an SM to
// 102,400 / 2 + 16 - 1,024 - 1,040 = 49,152 dynamic bytes: 48 KiB exactly, over the kernel's 48,112.)
// Under emulated limits (emulated_sm_limits) a kernel whose static and dynamic shared memory pass the
// emulated card's block maximum throws Error: there the launch would fail.
void allow_smem(const void* kernel, size_t bytes) {
  KernelState& st = kernel_state(kernel);
  if (const SmLimits* lim = emulated_sm_limits()) {
    const size_t total = bytes + st.static_smem;
    if (total > static_cast<size_t>(lim->optin_per_block)) {
      throw Error("CUDA backend: a kernel's " + std::to_string(total) + " bytes of shared memory a block (" +
                  std::to_string(bytes) + " dynamic) pass " + lim->name + "'s " +
                  std::to_string(lim->optin_per_block) + " (MOEPACK_GPU_LIMITS)");
    }
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (st.smem >= bytes) return;
  MOEPACK_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  st.smem = bytes;
}

// The SMs' largest shared-memory configuration preferred for `kernel`, once per device and
// kernel: for a small kernel a GEMV may start beside (an SM changes configuration only when idle).
void prefer_max_shared(const void* kernel) {
  KernelState& st = kernel_state(kernel);
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (st.max_shared) return;
  MOEPACK_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  st.max_shared = true;
}

// The current device's shared memory per SM, the part of it the system keeps per block, a
// block's limit with opt-in (227 KiB on sm_90, 99 KiB on sm_120), and its SM count; under emulated
// limits (emulated_sm_limits) the emulated card's shared memory and opt-in where smaller, its reserved
// bytes where larger (the SM count stays the device's).
struct SmShape {
  size_t smem = 0, reserved = 0, optin = 0;
  int sms = 0;
};
SmShape device_sm_shape() {
  static std::mutex mu;
  static std::map<int, SmShape> shapes;
  const int dev = current_device();
  std::lock_guard<std::mutex> lock(mu);
  auto it = shapes.find(dev);
  if (it == shapes.end()) {
    int smem = 0, reserved = 0, optin = 0, sms = 0;
    MOEPACK_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    MOEPACK_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
    MOEPACK_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    MOEPACK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (const SmLimits* lim = emulated_sm_limits()) {
      smem = std::min(smem, static_cast<int>(lim->smem_per_sm));
      reserved = std::max(reserved, static_cast<int>(lim->reserved_per_block));
      optin = std::min(optin, static_cast<int>(lim->optin_per_block));
    }
    it = shapes
             .emplace(dev, SmShape{static_cast<size_t>(smem), static_cast<size_t>(reserved),
                                   static_cast<size_t>(optin), sms})
             .first;
  }
  return it->second;
}

// The dynamic shared memory a launch of `kernel` (`blocks` blocks, `smem` bytes needed) asks for
// under `cap` (gpu/gemv_launch_cap.h): enough that an (n + 1)-th block does not fit on an SM,
// counting the system's and the kernel's own shared memory per block; `smem` itself when no
// cap applies, or when the padding would pass `limit` (a positive cap is then not honoured).
// `stages`: ring stages a warp streams (its share of a row; units for launch_pipe_ug's
// CAP_UNITS), for cap -1.
size_t smem_for_cap(const SmShape& sh, const void* kernel, size_t smem, size_t limit, int64_t blocks,
                    int64_t stages, int cap) {
  const int64_t n = gemv_blocks_per_sm_cap(blocks, sh.sms, stages, cap);
  if (n <= 0) return smem;
  return gemv_capped_smem(sh.smem, sh.reserved + kernel_state(kernel).static_smem, smem, limit, n);
}

// Blocks per SM a launch may hold at most (cap): 0 = as many as fit; > 0 that many where the
// padding fits a block's limit; for grids of at most 4 blocks per SM, -1 = ceil(blocks / SMs)
// (the grid in one even wave) when a warp streams at most 8 stages, else 2; -2 = 2 (the sixth
// pass's rule); larger grids as many as fit. The cap pads the launch's dynamic shared memory
// (smem_for_cap); where registers already allow no more, the padding only takes L1 from the
// blocks. gpu/gemv_launch_cap.h has the arithmetic and what it was measured on.
// EARLY, MINB: gemv_pipe_kernel's; SCRATCH: the x fragments from x_fragments_kernel in scratch
// even where they fit the block's shared memory (benchmark variant only).
// CAP_UNITS: the cap counts a warp's share of the row in units instead of ring stages (two-unit
// stages then get the decisions measured for one-unit stages).
// XFM: the x fragments of a launch whose fragments fit beside the rings: kXfPrepare (each
// block prepares its own), kXfCopy (x_fragments_wide_kernel once per group, each block copies
// them: wide_fragments), or kXfStale (benchmark diagnosis only, wrong sums: each block copies
// whatever a scratch buffer holds, no preparation anywhere: what a GEMV whose fragments come
// ready from the kernel before would cost).
constexpr int kXfStale = 3;
template <GgmlType T, int RW, int STAGES, int U, int G, int P, int DIAG = 0, int EARLY = 2, int MINB = 1,
          bool SCRATCH = false, bool CAP_UNITS = false, int XFM = kXfPrepare>
void launch_pipe_ug(const GemvBatch& b, cudaStream_t s, int cap = 0) {
  using S = Sel<T, P>;
  const size_t ring =
      static_cast<size_t>(kMmaWarps) * STAGES * 16 * ring_row_bytes(S::Path::kBytes, U, G) + 16;
  const size_t frag = static_cast<size_t>(S::stride(b.ne0));
  const SmShape sh = device_sm_shape();
  const size_t limit = std::min<size_t>(kMaxBlockSmem, sh.optin - 1024);
  const bool staged = !SCRATCH && frag + ring <= limit;
  size_t smem = staged ? frag + ring : ring;
  const dim3 grid(static_cast<unsigned>((b.ne1 + 16 * RW - 1) / (16 * RW)), static_cast<unsigned>(b.n_groups),
                  1);
  const int64_t blocks = static_cast<int64_t>(grid.x) * grid.y;
  constexpr int kPer = CAP_UNITS ? 1 : U;
  const int64_t stages = (b.ne0 / 256 / kPer + kMmaWarps / RW - 1) / (kMmaWarps / RW);  // a warp's share
  if constexpr (DIAG == 0 && XFM == kXfPrepare && P == col_arith<T>()) {
    if (staged && b.x_frag) {  // fragments ready in the default's layout (swiglu_clamped_fragments)
      const auto k = gemv_pipe_kernel<T, RW, STAGES, U, G, kXfCopy, DIAG, P, EARLY, MINB>;
      smem = smem_for_cap(sh, reinterpret_cast<const void*>(k), smem, limit, blocks, stages, cap);
      allow_smem(reinterpret_cast<const void*>(k), smem);
      launch_kernel(k, grid, smem, s, b, nullptr);
      return;
    }
  }
  if constexpr (DIAG == 0 && XFM == kXfPrepare && P == col_arith<T>() && RW == 4 && EARLY == 2 && MINB == 1 &&
                !SCRATCH) {
    if (b.swiglu_epilogue) {
      // SwiGLU as the epilogue (the default only, launch_type checks): 32 rows of a group's
      // gate and up a block (warp_share): as many blocks as a launch of both matrices' 2
      // n_groups groups where ne1 % 64 is 0 or above 32 (every target shape), one fewer a group
      // otherwise; the cap counts this grid's blocks.
      const dim3 glu_grid(static_cast<unsigned>((b.ne1 + 31) / 32), static_cast<unsigned>(b.n_groups), 1);
      const int64_t glu_blocks = static_cast<int64_t>(glu_grid.x) * glu_grid.y;
      if (staged) {
        const auto k = gemv_pipe_kernel<T, RW, STAGES, U, G, kXfPrepare, DIAG, P, EARLY, MINB, true>;
        smem = smem_for_cap(sh, reinterpret_cast<const void*>(k), smem, limit, glu_blocks, stages, cap);
        allow_smem(reinterpret_cast<const void*>(k), smem);
        launch_kernel(k, glu_grid, smem, s, b, nullptr);
      } else {
        uint8_t* scratch = fragments_in_scratch<T, P>(b, s);
        const auto k = gemv_pipe_kernel<T, RW, STAGES, U, G, kXfScratch, DIAG, P, EARLY, MINB, true>;
        smem = smem_for_cap(sh, reinterpret_cast<const void*>(k), smem, limit, glu_blocks, stages, cap);
        allow_smem(reinterpret_cast<const void*>(k), smem);
        launch_kernel(k, glu_grid, smem, s, b, scratch);
        MOEPACK_CUDA_CHECK(cudaFreeAsync(scratch, s));
      }
      return;
    }
  } else {
    if (b.swiglu_epilogue) throw Error("internal: the SwiGLU epilogue reached a launch of another layout");
  }
  if constexpr (XFM != kXfPrepare) {
    if (staged) {
      uint8_t* scratch = XFM == kXfCopy ? wide_fragments<T, P>(b, s) : stale_scratch(b.n_groups * frag);
      const auto k = gemv_pipe_kernel<T, RW, STAGES, U, G, kXfCopy, DIAG, P, EARLY, MINB>;
      smem = smem_for_cap(sh, reinterpret_cast<const void*>(k), smem, limit, blocks, stages, cap);
      allow_smem(reinterpret_cast<const void*>(k), smem);
      GemvBatch own = b;  // these variants copy their own scratch, never ready fragments
      own.x_frag = nullptr;
      launch_kernel(k, grid, smem, s, own, scratch);
      if (XFM == kXfCopy) MOEPACK_CUDA_CHECK(cudaFreeAsync(scratch, s));
      return;
    }
  }
  if (staged) {
    const auto k = gemv_pipe_kernel<T, RW, STAGES, U, G, kXfPrepare, DIAG, P, EARLY, MINB>;
    smem = smem_for_cap(sh, reinterpret_cast<const void*>(k), smem, limit, blocks, stages, cap);
    allow_smem(reinterpret_cast<const void*>(k), smem);
    launch_kernel(k, grid, smem, s, b, nullptr);
  } else {
    uint8_t* scratch = fragments_in_scratch<T, P>(b, s);
    const auto k = gemv_pipe_kernel<T, RW, STAGES, U, G, kXfScratch, DIAG, P, EARLY, MINB>;
    smem = smem_for_cap(sh, reinterpret_cast<const void*>(k), smem, limit, blocks, stages, cap);
    allow_smem(reinterpret_cast<const void*>(k), smem);
    launch_kernel(k, grid, smem, s, b, scratch);
    MOEPACK_CUDA_CHECK(cudaFreeAsync(scratch, s));
  }
}

// Q3_K's and Q6_K's rings (2-aligned super-blocks of 110 and 210 bytes): rows of an even number
// of super-blocks two a stage (Q3_K 4 stages, Q6_K 3: four would pass kMaxBlockSmem), rows of an
// odd number one a stage in 4 stages (windowed_ring), and so Q6_K's rows whose x fragments do not
// fit a block's shared memory beside its two-unit rings (from 5,120 elements on the H200) but do
// beside the one-unit rings (to 10,752): 8 x 2048 x 7168 0.63 of D2D against 0.55 with the
// fragments in scratch, 16 x 1536 x 7168 0.62 against 0.57; where both fit, two a stage measured
// the same or better (0.61-0.65 against 0.57-0.61; docs/cuda-backend.md, twenty-seventh pass).
// Variant 27 takes one a stage for every row, variant 28 the other copy width than the default's
// (kTwoAlignedCopy: 4-byte pieces of the rows, or 8-byte pieces of their windows; 8 measured
// slower or the same on every shape). DIAG, EARLY, MINB, SCRATCH, XFM: launch_pipe_ug's.
constexpr int kTwoAlignedCopy = 4;
template <GgmlType T>
bool two_aligned_one_unit(int64_t ne0) {
  if ((ne0 / 256) % 2 != 0) return true;
  if constexpr (T != GgmlType::Q6_K) {
    return false;
  } else {
    using S = Sel<T, col_arith<T>()>;
    const size_t frag = static_cast<size_t>(S::stride(ne0));
    const size_t limit = std::min<size_t>(kMaxBlockSmem, device_sm_shape().optin - 1024);
    return !gemv_rings_fit(frag, kMmaWarps, 3, ring_row_bytes(S::Path::kBytes, 2, kTwoAlignedCopy), limit) &&
           gemv_rings_fit(frag, kMmaWarps, 4, ring_row_bytes(S::Path::kBytes, 1, kTwoAlignedCopy), limit);
  }
}
template <GgmlType T, int RW, int P, int DIAG, int EARLY, int MINB, bool SCRATCH, int XFM>
void launch_two_aligned(const GemvBatch& b, cudaStream_t s, int cap) {
  constexpr int kTwoStages = T == GgmlType::Q6_K ? 3 : 4;
  const int v = g_variant.load(std::memory_order_relaxed);
  const bool one = two_aligned_one_unit<T>(b.ne0) || v == 27;
  const bool eight = (kTwoAlignedCopy == 8) != (v == 28);
  if (one && eight)
    return launch_pipe_ug<T, RW, 4, 1, 8, P, DIAG, EARLY, MINB, SCRATCH, false, XFM>(b, s, cap);
  if (one) return launch_pipe_ug<T, RW, 4, 1, 4, P, DIAG, EARLY, MINB, SCRATCH, false, XFM>(b, s, cap);
  if (eight)
    return launch_pipe_ug<T, RW, kTwoStages, 2, 8, P, DIAG, EARLY, MINB, SCRATCH, false, XFM>(b, s, cap);
  return launch_pipe_ug<T, RW, kTwoStages, 2, 4, P, DIAG, EARLY, MINB, SCRATCH, false, XFM>(b, s, cap);
}

// EARLY: stages issued before the wait for the kernel before (gemv_pipe_kernel); 2 measured
// best on the H200 (docs/cuda-backend.md, seventh pass). MINB, SCRATCH: launch_pipe_ug's.
template <GgmlType T, int RW, int P, int EARLY = 2, int MINB = 1, bool SCRATCH = false, int XFM = kXfPrepare>
void launch_pipe(const GemvBatch& b, cudaStream_t s, int cap = 0) {
  // Q4_K in 8-byte copies: 0.56 / 0.49-0.50 / 0.60 of D2D against 0.52 / 0.48 / 0.55 in 16-byte
  // copies, 0.43 / 0.46 / 0.37 in 4-byte ones (docs/cuda-backend.md, fifth pass).
  if constexpr (T == GgmlType::Q3_K || T == GgmlType::Q6_K) {
    return launch_two_aligned<T, RW, P, 0, EARLY, MINB, SCRATCH, XFM>(b, s, cap);
  } else if constexpr (T != GgmlType::Q2_K) {  // Q4_K, Q5_K, MXFP4: one 144-, 176- or 136-byte unit a stage
    return launch_pipe_ug<T, RW, 4, 1, 8, P, 0, EARLY, MINB, SCRATCH, false, XFM>(b, s, cap);
  } else {
    if ((b.ne0 / 256) % 2 == 0) {
      return launch_pipe_ug<T, RW, 4, 2, 8, P, 0, EARLY, MINB, SCRATCH, false, XFM>(b, s, cap);
    }
    return launch_pipe_ug<T, RW, 4, 1, 4, P, 0, EARLY, MINB, SCRATCH, false, XFM>(b, s, cap);
  }
}

// Whether the default streams an expert launch of Q4_K / MXFP4 rows of ne0 elements two units a
// ring stage (3 stages; launch_default, launch_diag): an even number of at least 16 units, and
// x's fragments still fit a block's shared memory beside the two-unit rings (4 warps x 3
// stages x 16 rows x 2 units), so they stay staged (in scratch every warp reads them from L2:
// variant 14, measured slower); else one unit a stage (4 stages) keeps them staged for longer
// rows (Q4_K on the H200's 100 KiB a block: two-unit
// rings fit to 11,008 elements, one-unit rings to 15,360; since two units need an even count,
// the longest two-unit rows are 10,752 elements, 42 units. MXFP4, whose fragments hold each
// block's offsets twice since the tenth pass (frag_stride_mx2): two-unit rings to 9,984, so
// the longest two-unit rows are 9,728, 38 units; one-unit rings to 13,312. Q5_K, 176-byte units:
// two-unit rings fit to 7,936 elements, so the longest two-unit rows are 7,680, 30 units;
// one-unit rings to 13,312). The decision is the
// default's, also for variant 22 (the ninth pass's arithmetic, whose smaller MXFP4 fragments
// fitted two-unit rings to 11,008).
template <GgmlType T>
bool takes_two_unit_rings(int64_t ne0) {
  using S = Sel<T, col_arith<T>()>;  // the default's arithmetic (launch_default)
  const int64_t units = ne0 / 256;
  return (T == GgmlType::Q4_K || T == GgmlType::Q5_K || T == GgmlType::MXFP4) && units >= 16 &&
         units % 2 == 0 &&
         gemv_rings_fit(static_cast<size_t>(S::stride(ne0)), kMmaWarps, 3, 2 * S::Path::kBytes,
                        std::min<size_t>(kMaxBlockSmem, device_sm_shape().optin - 1024));
}

// The default's expert launch (launch_type) with DIAG 1 (copies only) or 2 (arithmetic only):
// the same stages, copy sizes, layout and cap; only for bench_cuda_backend's diagnosis.
template <GgmlType T, int DIAG, int ARITH = col_arith<T>()>
void launch_diag(const GemvBatch& b, cudaStream_t s) {
  constexpr int kCol = ARITH;
  if constexpr (T != GgmlType::Q2_K) {
    if (takes_two_unit_rings<T>(b.ne0)) {
      return launch_pipe_ug<T, 4, 3, 2, 8, kCol, DIAG, 2, 1, false, true>(b, s, -1);
    }
    return launch_pipe_ug<T, 4, 4, 1, 8, kCol, DIAG>(b, s, -1);
  } else {
    if ((b.ne0 / 256) % 2 == 0) return launch_pipe_ug<T, 4, 4, 2, 8, kCol, DIAG>(b, s, -1);
    return launch_pipe_ug<T, 4, 4, 1, 4, kCol, DIAG>(b, s, -1);
  }
}

template <GgmlType T, int RW>
void launch_old(const GemvBatch& b, cudaStream_t s) {
  const size_t frag = static_cast<size_t>(frag_stride(b.ne0));
  const dim3 grid(static_cast<unsigned>((b.ne1 + 16 * RW - 1) / (16 * RW)), static_cast<unsigned>(b.n_groups),
                  1);
  if (frag <= std::min<size_t>(kMaxBlockSmem, device_sm_shape().optin - 1024)) {
    const auto k = gemv_mma_kernel<T, RW, true>;
    allow_smem(reinterpret_cast<const void*>(k), frag);
    launch_kernel(k, grid, frag, s, b, nullptr);
  } else {
    uint8_t* scratch = fragments_in_scratch<T, kF16>(b, s);
    launch_kernel(gemv_mma_kernel<T, RW, false>, grid, 0, s, b, scratch);
    MOEPACK_CUDA_CHECK(cudaFreeAsync(scratch, s));
  }
}

// The default's choice of path per launch kind (launch_type), with the given EARLY and
// SCRATCH (launch_pipe_ug), cap, and MX_MINB for MXFP4's expert launches: the integer column
// layout for every type (Q2_K in Q2kColPath3, MXFP4 in Mxfp4ColPath2 since the tenth pass),
// MXFP4's expert launches at MX_MINB blocks an SM (Mxfp4ColPath2 on sm_90 at MINB 1, fragments
// in shared memory: 122 registers in the one-unit rings, 158 in the two-unit rings, no spills;
// Mxfp4ColPath took 157 and 255).
// OLD (variant 17): the eighth session's default, Q2_K in Q2kColPath and MXFP4's expert
// launches in the f16 rings at 4 blocks an SM (128 registers; since MXFP4's aligned word loads,
// 12 bytes spilled on sm_90).
// Q4_K's and MXFP4's expert launches with rows of at least 16 units (an even number; where
// takes_two_unit_rings says so) stream two units (288 / 272 bytes) a stage in 3 stages (8 ×
// 2048 × 4096 and × 7168: Q4_K 0.72 / 0.76 of D2D against 0.69 / 0.74, MXFP4 0.45 / 0.47
// against 0.42 / 0.44; rows of 8 units measured slower so: Q4_K 0.58 / 0.67 against 0.72 /
// 0.75; docs/cuda-backend.md, ninth pass), unless ONE_UNIT (variant 20: one unit a stage in 4
// stages, the ninth session's default). Their blocks-per-SM cap counts units (CAP_UNITS),
// unless STAGE_CAP (variant 21): Q4_K's gate + up (16 × 2048 × 4096) ran 0.73 so against 0.58
// when its 8 two-unit stages took the one-wave cap (4 blocks an SM instead of 2).
// ARITH: the column arithmetic (-1: col_arith; variant 22 passes ninth_arith).
template <GgmlType T, int EARLY, bool SCRATCH, int MX_MINB = 1, bool OLD = false, bool ONE_UNIT = false,
          bool STAGE_CAP = false, int ARITH = -1, int XFM = kXfPrepare>
void launch_default(const GemvBatch& b, cudaStream_t s, int cap) {
  constexpr int kCol = OLD ? kI8Col : ARITH >= 0 ? ARITH : col_arith<T>();
  if (!b.grp_off) return launch_pipe<T, 1, kCol, EARLY, 1, SCRATCH, XFM>(b, s, cap);
  constexpr int kMinB = T == GgmlType::MXFP4 ? MX_MINB : 1;
  if constexpr (T == GgmlType::MXFP4 && OLD) return launch_pipe<T, 4, kF16, EARLY, 4, SCRATCH>(b, s, cap);
  if constexpr ((T == GgmlType::Q4_K || T == GgmlType::Q5_K || T == GgmlType::MXFP4) && !OLD && !ONE_UNIT) {
    if (takes_two_unit_rings<T>(b.ne0)) {
      // (EARLY 3, variant 12: both first stages of the 3 before the wait)
      return launch_pipe_ug<T, 4, 3, 2, 8, kCol, 0, (EARLY < 2 ? EARLY : 2), kMinB, SCRATCH, !STAGE_CAP, XFM>(
          b, s, cap);
    }
  }
  if constexpr (T == GgmlType::MXFP4) {
    return launch_pipe<T, 4, kCol, EARLY, MX_MINB, SCRATCH, XFM>(b, s, cap);
  }
  return launch_pipe<T, 4, kCol, EARLY, 1, SCRATCH, XFM>(b, s, cap);
}

template <GgmlType T>
void launch_type(const GemvBatch& b, cudaStream_t s) {
  const int v = g_variant.load(std::memory_order_relaxed);
  // The epilogue is launch_default's (launch_pipe_ug); checked on the variant dispatched on here.
  if (b.swiglu_epilogue && v != 0) {
    throw Error("gemv_mma: the SwiGLU epilogue (swiglu_epilogue) takes the default layout only (variant 0, got " +
                std::to_string(v) + ")");
  }
  // Grouped launches (experts: many rows) give each tile of 16 rows 4 / RW warps; a single
  // matrix (too few rows to fill the device) splits each row over the block's 4 warps (RW 1).
  // The choice depends on the launch's kind alone, never on how groups are batched
  // (gemv_mma.h). Variants 1-11 exist for bench_cuda_backend's side-by-side only.
  const bool grouped = b.grp_off != nullptr;
  constexpr bool kQ = T != GgmlType::MXFP4;  // the diagonal integer path covers Q4_K and Q2_K
  constexpr int kInt = kQ ? kI8Diag : kF16;
  switch (v) {
    case 1:
      if constexpr (kQ) return grouped ? launch_old<T, 4>(b, s) : launch_old<T, 1>(b, s);
      break;
    case 2:
      return grouped ? launch_pipe<T, 4, kF16>(b, s) : launch_pipe<T, 1, kF16>(b, s);
    case 3:
      return grouped ? launch_pipe<T, 4, kInt>(b, s) : launch_pipe<T, 1, kInt>(b, s);
    case 4:
      return grouped ? launch_pipe<T, 2, kInt>(b, s) : launch_pipe<T, 1, kInt>(b, s);
    case 5:
      return launch_pipe<T, 1, kInt>(b, s);
    case 6:  // diagnosis of the default's expert launch: copies only (wrong sums)
      return launch_diag<T, 1>(b, s);
    case 7:  // ... the arithmetic only, on whatever the rings hold (wrong sums)
      return launch_diag<T, 2>(b, s);
    case 8:  // the default's column layout without the cap on blocks per SM
      return grouped ? launch_pipe<T, 4, kI8Col>(b, s) : launch_pipe<T, 1, kI8Col>(b, s);
    case 9:  // the column layout, at most 2 blocks an SM
      return grouped ? launch_pipe<T, 4, kI8Col>(b, s, 2) : launch_pipe<T, 1, kI8Col>(b, s, 2);
    case 10:  // 3 (the diagonal layout) with the default's cap
      return grouped ? launch_pipe<T, 4, kInt>(b, s, -1) : launch_pipe<T, 1, kInt>(b, s, -1);
    case 11:  // the column layout with the default's cap (MXFP4 too)
      return grouped ? launch_pipe<T, 4, kI8Col>(b, s, -1) : launch_pipe<T, 1, kI8Col>(b, s, -1);
    case 12:  // the default with every first stage issued before the wait (the order until now)
      return launch_default<T, 3, false>(b, s, -1);
    case 13:  // ... with one of the three
      return launch_default<T, 1, false>(b, s, -1);
    case 14:  // ... with the x fragments in scratch, written once per group by x_fragments_kernel
      return launch_default<T, 2, true>(b, s, -1);
    case 15:  // ... with no cap on blocks per SM
      return launch_default<T, 2, false>(b, s, 0);
    case 16:  // ... with the sixth pass's cap (MXFP4's expert launches uncapped)
      return launch_default<T, 2, false>(b, s, b.grp_off && T == GgmlType::MXFP4 ? 0 : -2);
    case 17:  // the eighth session's default (Q2kColPath; MXFP4's expert launches in the f16 rings)
      return launch_default<T, 2, false, 1, true>(b, s, -1);
    case 18:  // the default with no stage before the wait (the x loads first)
      return launch_default<T, 0, false>(b, s, -1);
    case 19:  // the default with MXFP4's expert launches at 4 blocks an SM (128 registers)
      return launch_default<T, 2, false, 4>(b, s, -1);
    case 20:  // the ninth session's default: Q4_K's and MXFP4's expert launches one unit a stage
      return launch_default<T, 2, false, 1, false, true>(b, s, -1);
    case 21:  // the default with the cap counting Q4_K's and MXFP4's two-unit stages
      return launch_default<T, 2, false, 1, false, false, true>(b, s, -1);
    case 22:  // the default with the ninth pass's arithmetic (Q2kColPath2, Mxfp4ColPath; Q4_K as 0)
      return launch_default<T, 2, false, 1, false, false, false, ninth_arith<T>()>(b, s, -1);
    case 23:  // 7 (the arithmetic only, wrong sums) with the ninth pass's arithmetic
      return launch_diag<T, 2, ninth_arith<T>()>(b, s);
    case 24:  // the default with x's fragments prepared once per group (x_fragments_wide_kernel)
      return launch_default<T, 2, false, 1, false, false, false, -1, kXfCopy>(b, s, -1);
    case 25:  // 24 without any preparation: the blocks copy a stale buffer (wrong sums)
      return launch_default<T, 2, false, 1, false, false, false, -1, kXfStale>(b, s, -1);
    default:
      break;
  }
  // The default, per type, from bench_cuda_backend's side-by-side on the H200
  // (docs/cuda-backend.md, sixth to tenth passes): every type takes the integer rings in the
  // column layout (Q2_K with its scales and minimums on the tensor cores: 0.45 / 0.42 / 0.50 /
  // 0.45 of D2D against 0.44 / 0.41 / 0.48 / 0.43; MXFP4's expert launches 0.41-0.45 against
  // 0.39-0.44 in the f16 rings, both with the aligned word loads; Q4_K's and MXFP4's rows of 16
  // units or more two units a stage, ninth pass; the tenth pass's arithmetic for Q2_K and
  // MXFP4: 0.47 / 0.43 / 0.52 / 0.46 and 0.51 / 0.49 / 0.53 / 0.51 against variant 22's
  // 0.45 / 0.42 / 0.50 / 0.44 and 0.45 / 0.42 / 0.47 / 0.44); grids of at most 4 blocks per SM in one even
  // wave when a warp streams at most 8 ring stages (units for the two-unit rings), else at most
  // 2 blocks an SM (launch_pipe_ug).
  return launch_default<T, 2, false>(b, s, -1);
}

// Q3_K and Q6_K take the default's layout and arithmetic (Q3kColPath, Q6kColPath) under every
// variant but -1 (the F32 kernels, gemv_mma_supported), 6, 7, 27, 28, Q3_K's 26 and Q6_K's 24:
// the other variants compare Q4_K's, Q2_K's and MXFP4's layouts (so the other diagnosis variants,
// 23 and 25, time their real kernels). Expert launches under 6 and 7: the default's diagnosis
// (copies only, arithmetic only: wrong sums); 27 and 28: launch_two_aligned; Q3_K's expert
// launches under 26, rows of a multiple of 1024 elements: four super-blocks (440 bytes, 8-byte
// copies) a stage in 3 stages (the same sums as the default's); Q6_K under 24: every launch copies
// x's fragments prepared once per group (the same sums).
template <GgmlType T>
void launch_two_aligned_type(const GemvBatch& b, cudaStream_t s) {
  const int v = g_variant.load(std::memory_order_relaxed);
  if (b.swiglu_epilogue && v != 0) {
    throw Error("gemv_mma: the SwiGLU epilogue (swiglu_epilogue) takes the default layout only (variant 0)");
  }
  if (b.grp_off && v == 6) return launch_two_aligned<T, 4, kI8Col, 1, 2, 1, false, kXfPrepare>(b, s, -1);
  if (b.grp_off && v == 7) return launch_two_aligned<T, 4, kI8Col, 2, 2, 1, false, kXfPrepare>(b, s, -1);
  if constexpr (T == GgmlType::Q3_K) {
    if (b.grp_off && v == 26 && b.ne0 % 1024 == 0) return launch_pipe_ug<T, 4, 3, 4, 8, kI8Col>(b, s, -1);
  } else {
    if (v == 24) return launch_default<T, 2, false, 1, false, false, false, -1, kXfCopy>(b, s, -1);
  }
  launch_default<T, 2, false>(b, s, -1);
}

// Q5_K takes the default's layout and arithmetic (Q5kColPath in Q4_K's rings: one 176-byte unit
// a stage, or two from 16 units where takes_two_unit_rings says so) under every variant but -1
// (the F32 kernels), 6 and 7 (its expert launches' diagnosis: copies only, arithmetic only, wrong
// sums), 20 (its expert launches one unit a stage for every row) and 24 (x's fragments prepared
// once a group): the other variants compare Q4_K's, Q2_K's and MXFP4's layouts.
template <GgmlType T>
void launch_q5k_type(const GemvBatch& b, cudaStream_t s) {
  const int v = g_variant.load(std::memory_order_relaxed);
  if (b.swiglu_epilogue && v != 0) {
    throw Error("gemv_mma: the SwiGLU epilogue (swiglu_epilogue) takes the default layout only (variant 0)");
  }
  if (b.grp_off && v == 6) return launch_diag<T, 1>(b, s);
  if (b.grp_off && v == 7) return launch_diag<T, 2>(b, s);
  if (v == 20) return launch_default<T, 2, false, 1, false, true>(b, s, -1);
  if (v == 24) return launch_default<T, 2, false, 1, false, false, false, -1, kXfCopy>(b, s, -1);
  launch_default<T, 2, false>(b, s, -1);
}

// The tiled expert launch's chunks in flight a warp (set_gemv_tiled_depth; bench_cuda_backend
// compares them): 0 = the launch's (gemv_tiled.h, tiled_default_depth).
std::atomic<int> g_tiled_depth{0};
// Warps a tile in the tiled launch without the SwiGLU epilogue: 1 (the default's order) or 2
// (set_gemv_tiled_split; the benchmark compares both).
std::atomic<int> g_tiled_split{1};

// Room for gemv_tiled_kernel's static shared memory (part[NW][16] and MXFP4's table words: 1,040
// bytes at 16 warps) below a block's opt-in maximum, beside x's fragments.
constexpr size_t kTiledStaticSmem = 2048;
static_assert(16 * 16 * sizeof(float) + 16 <= kTiledStaticSmem, "part[16][16] and the table words");

// Warps a block of the tiled launch (set_gemv_tiled_warps; the benchmark compares 4, 8, 12,
// 16): 0 = the launch's (tiled_block_warps).
std::atomic<int> g_tiled_warps{0};
// The engine's one-launch expert FFN at decode (set_gemv_ffn_fusion): off, measured 1-5 % slower
// than the two launches it replaces on the H200 (docs/cuda-backend.md, twenty-second pass).
std::atomic<bool> g_ffn_fusion{false};

// A tiled launch's dynamic shared memory (x's fragments, `frag` bytes) at most: a block's allowed
// maximum less the room for the kernel's static shared memory.
size_t tiled_smem_limit() { return std::min<size_t>(kMaxBlockSmem, device_sm_shape().optin - kTiledStaticSmem); }

// The dynamic shared memory of tiled kernel k on `grid`: x's fragments, padded for the grid in one
// even wave (smem_for_cap, cap -1, no stage count), opted in (allow_smem).
size_t tiled_smem(const void* k, size_t frag, dim3 grid) {
  const size_t smem =
      smem_for_cap(device_sm_shape(), k, frag, tiled_smem_limit(), static_cast<int64_t>(grid.x) * grid.y, 0, -1);
  allow_smem(k, smem);
  return smem;
}

// MINB of gemv_tiled_kernel: registers for 12 warps an SM at least (4 warps a block: 3 blocks,
// at most 168 registers a thread; 8 warps: 2 blocks, 128; 12 warps: 1 block, 168; 16 warps: 1
// block, 128). ptxas -v on sm_90, no spills: depth 1 94-127 registers (Q5_K, Q6_K, Q3_K
// included); depth 2 149-168 at 4 and 12 warps (Q3_K 160-168), 121-128 (the cap) at 8 and 16.
template <GgmlType T, int DEPTH, int NW>
void launch_tiled_nw(const GemvBatch& b, cudaStream_t s) {
  using S = Sel<T, col_arith<T>()>;
  constexpr int kMinB = NW == 4 ? 3 : NW == 8 ? 2 : 1;
  const size_t frag = static_cast<size_t>(S::stride(b.ne0));
  const bool glu = b.swiglu_epilogue;
  const bool split = !glu && g_tiled_split.load(std::memory_order_relaxed) == 2;
  const int rows = glu || split ? 8 * NW : 16 * NW;  // a block's rows
  const dim3 grid(static_cast<unsigned>((b.ne1 + rows - 1) / rows), static_cast<unsigned>(b.n_groups), 1);
  constexpr int kP = col_arith<T>();
  const auto k = glu     ? gemv_tiled_kernel<T, kP, DEPTH, kMinB, true, NW, NW>
                 : split ? gemv_tiled_kernel<T, kP, DEPTH, kMinB, false, NW / 2, NW>
                         : gemv_tiled_kernel<T, kP, DEPTH, kMinB, false, NW, NW>;
  // The grid in one even wave, as the default's launches: at most ceil(blocks / SMs) blocks an SM
  // for grids of at most 4 blocks an SM (gemv_blocks_per_sm_cap, cap -1, no stage count).
  // Measured side by side (4 warps a block): never more than 0.01 slower, up to 0.06 faster
  // (Q4_K 4096 x 2048, gate + up) and 0.10-0.12 on MXFP4's 2048-row launches two chunks ahead.
  const size_t smem = tiled_smem(reinterpret_cast<const void*>(k), frag, grid);
  launch_kernel(k, grid, smem, s, b, nullptr, NW * 32);
}

// Tiles a block of the tiled launch's runs (gemv_tiled_runs_kernel) for plain launches
// (set_gemv_tiled_runs): -1 never, 0 the launch's own choice (tiled_runs_tiles), n > 0 n tiles a
// block.
std::atomic<int> g_tiled_runs{0};

// gemv_tiled_runs_kernel on b, `tpb` tiles a block (registers for 2 blocks an SM at 8 warps, one
// at 16: gemv_tiled_kernel's).
template <GgmlType T, int DEPTH, int NW>
void launch_tiled_runs(const GemvBatch& b, int64_t tpb, cudaStream_t s) {
  // Depth 2 takes a run's units in pairs: an odd count's last chunk of a tile would leave the next
  // tile's first chunks unloaded (tiled_units).
  if (DEPTH == 2 && (b.ne0 / 256) % 2 != 0)
    throw Error("launch_tiled_runs: depth 2 on rows of an odd count of units");
  using S = Sel<T, col_arith<T>()>;
  constexpr int kMinB = NW == 8 ? 2 : 1;
  constexpr int kP = col_arith<T>();
  const size_t frag = static_cast<size_t>(S::stride(b.ne0));
  const int64_t tiles = b.ne1 / 16;
  const dim3 grid(static_cast<unsigned>((tiles + tpb - 1) / tpb), static_cast<unsigned>(b.n_groups), 1);
  const auto k = gemv_tiled_runs_kernel<T, kP, DEPTH, kMinB, NW>;
  const size_t smem = tiled_smem(reinterpret_cast<const void*>(k), frag, grid);
  launch_maybe_dependent(k, grid, NW * 32, smem, s,
                         g_pdl.load(std::memory_order_relaxed) && !b.tables_from_kernel, b,
                         static_cast<const uint8_t*>(nullptr), static_cast<int>(tpb));
}

template <GgmlType T, int DEPTH>
void launch_tiled_depth(const GemvBatch& b, cudaStream_t s) {
  int warps = g_tiled_warps.load(std::memory_order_relaxed);
  // Runs of tiles a warp: plain launches only, by the launch's own choice where the block size is
  // too (tiled_runs_tiles), or forced (set_gemv_tiled_runs: 8 warps a block for 4 and 8, else 16).
  const int runs = g_tiled_runs.load(std::memory_order_relaxed);
  if (!b.swiglu_epilogue && g_tiled_split.load(std::memory_order_relaxed) == 1 && runs >= 0 &&
      (runs > 0 || warps == 0)) {
    const int64_t tpb = runs > 0 ? runs : tiled_runs_tiles(b.ne1, b.n_groups, device_sm_shape().sms);
    if (tpb > 0) {
      const bool eight = warps == 4 || warps == 8;
      // Depth 2 takes units in pairs (an odd count: depth 1); only depth 2's caller instantiates
      // its runs kernels (not Q5_K's nor Q6_K's: kTiledDepthTwo).
      if constexpr (DEPTH == 2) {
        if ((b.ne0 / 256) % 2 == 0) {
          return eight ? launch_tiled_runs<T, 2, 8>(b, tpb, s) : launch_tiled_runs<T, 2, 16>(b, tpb, s);
        }
      }
      return eight ? launch_tiled_runs<T, 1, 8>(b, tpb, s) : launch_tiled_runs<T, 1, 16>(b, tpb, s);
    }
  }
  if (warps == 0) {  // blocks of 8 NW rows with the epilogue or two warps a tile
    const bool half_rows = b.swiglu_epilogue || g_tiled_split.load(std::memory_order_relaxed) == 2;
    warps = tiled_block_warps(b.ne1, b.n_groups, half_rows, device_sm_shape().sms);
  }
  switch (warps) {
    case 8:
      return launch_tiled_nw<T, DEPTH, 8>(b, s);
    case 12:
      return launch_tiled_nw<T, DEPTH, 12>(b, s);
    case 16:
      return launch_tiled_nw<T, DEPTH, 16>(b, s);
    default:
      return launch_tiled_nw<T, DEPTH, 4>(b, s);
  }
}

// The launch's chunks in flight a warp: gemv_tiled.h's tiled_default_depth (two for Q2_K, and for
// Q3_K on rows of at least 16 units or in launches of at most 8 x 3072 rows; one otherwise). Q5_K and Q6_K
// (twenty-ninth pass) have depth 1 only: Q4_K's depth 2 already sits at the 128-register cap at 8 and 16
// warps, and a Q5_K chunk holds 4 more registers a lane (qh; its depth-2 runs kernel spilled 80 bytes there,
// ptxas -v, sm_90), a Q6_K chunk 9 more: set_gemv_tiled_depth(2) runs them at depth 1 (the same
// sums). Q3_K's chunks are smaller (depth 1: 99-124 registers; depth 2, thirtieth pass: 121-168,
// no spills).
template <GgmlType T>
constexpr bool kTiledDepthTwo =
    T == GgmlType::Q4_K || T == GgmlType::Q2_K || T == GgmlType::MXFP4 || T == GgmlType::Q3_K;
static_assert(kTiledDepthTwo<GgmlType::Q2_K> && kTiledDepthTwo<GgmlType::Q3_K>,
              "the types tiled_default_depth gives depth 2 have depth-2 kernels");

template <GgmlType T>
void launch_tiled(const GemvBatch& b, cudaStream_t s) {
  // (Depths 3 and 4 measured slower on every shape and type, 0.34-0.62 of D2D: not compiled.)
  int depth = g_tiled_depth.load(std::memory_order_relaxed);
  // Rows in all: a launch with the SwiGLU epilogue multiplies 2 n_groups matrices (gate and up).
  if (depth == 0) depth = tiled_default_depth(T, b.ne0, b.ne1 * b.n_groups * (b.swiglu_epilogue ? 2 : 1));
  if constexpr (kTiledDepthTwo<T>) {
    if (depth == 2) return launch_tiled_depth<T, 2>(b, s);
  }
  return launch_tiled_depth<T, 1>(b, s);
}

// Warps a block of the one-launch expert FFN (set_gemv_ffn_warps): 0 = the launch's own choice
// (gate + up's, tiled_block_warps with the epilogue's 8 NW rows a block; 4 takes 8).
std::atomic<int> g_ffn_warps{0};

// gemv_tiled_ffn_kernel on a (gate + up with the epilogue) and d (down): NW warps a block
// (registers for 2 blocks an SM at 8 warps, one at 12 and 16, as the tiled launch's), x's
// fragments of either batch in the dynamic shared memory, and the items and grid of
// ffn_schedule (gemv_launch_cap.h) for the blocks the SMs hold at once
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor).
template <GgmlType T, int DA, int DB, int NW>
void launch_tiled_ffn_nw(const GemvBatch& a, const GemvBatch& d, int32_t* sync, cudaStream_t s) {
  using S = Sel<T, col_arith<T>()>;
  constexpr int kMinB = NW == 8 ? 2 : 1;
  constexpr int kP = col_arith<T>();
  const auto k = gemv_tiled_ffn_kernel<T, kP, DA, DB, kMinB, NW>;
  const size_t smem = static_cast<size_t>(std::max(S::stride(a.ne0), S::stride(d.ne0)));
  allow_smem(reinterpret_cast<const void*>(k), smem);
  // Blocks an SM, per device and shared-memory size (asked once: the eager path launches it per block).
  static std::mutex mu;
  static std::map<std::pair<int, size_t>, int> occupancy;
  int per_sm = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto [it, fresh] = occupancy.try_emplace({current_device(), smem}, 0);
    if (fresh) it->second = occupancy_blocks_per_sm(reinterpret_cast<const void*>(k), NW * 32, smem);
    per_sm = it->second;
  }
  if (per_sm < 1) {
    throw Error("gemv_experts_ffn: no block of " + std::to_string(NW) + " warps with " +
                std::to_string(smem) + " bytes of shared memory fits an SM");
  }
  const FfnSchedule f =
      ffn_schedule(a.ne1, d.ne1, a.n_groups, NW, static_cast<int64_t>(device_sm_shape().sms) * per_sm);
  if ((f.a_x + f.b_x) * a.n_groups + f.grid > INT32_MAX) {
    throw Error("gemv_experts_ffn: " + std::to_string((f.a_x + f.b_x) * a.n_groups) +
                " items exceed the kernel's count");
  }
  launch_maybe_dependent(k, dim3(static_cast<unsigned>(f.grid), 1, 1), NW * 32, smem, s,
                         g_pdl.load(std::memory_order_relaxed) && !a.tables_from_kernel, a, d,
                         static_cast<int>(f.a_x), static_cast<int>(f.b_x), static_cast<int>(f.tpb), sync);
}

template <GgmlType T, int DA, int DB>
void launch_tiled_ffn_depth(const GemvBatch& a, const GemvBatch& d, int32_t* sync, cudaStream_t s) {
  int warps = g_ffn_warps.load(std::memory_order_relaxed);
  if (warps == 0) warps = tiled_block_warps(a.ne1, a.n_groups, true, device_sm_shape().sms);
  switch (warps) {
    case 12:
      return launch_tiled_ffn_nw<T, DA, DB, 12>(a, d, sync, s);
    case 16:
      return launch_tiled_ffn_nw<T, DA, DB, 16>(a, d, sync, s);
    default:
      return launch_tiled_ffn_nw<T, DA, DB, 8>(a, d, sync, s);
  }
}

template <GgmlType T>
void launch_tiled_ffn(const GemvBatch& a, const GemvBatch& d, int32_t* sync, cudaStream_t s) {
  // The tiled launch's depths (tiled_default_depth, the same for gate + up and down for the
  // types this launch takes; set_gemv_tiled_depth): down's runs take two chunks a step only on
  // rows of an even count of units (gemv_tiled_runs_kernel).
  int depth = g_tiled_depth.load(std::memory_order_relaxed);
  if (depth == 0) depth = tiled_default_depth(T, a.ne0, a.ne1 * a.n_groups * (a.swiglu_epilogue ? 2 : 1));
  if (depth == 2) {
    if ((d.ne0 / 256) % 2 == 0) return launch_tiled_ffn_depth<T, 2, 2>(a, d, sync, s);
    return launch_tiled_ffn_depth<T, 2, 1>(a, d, sync, s);
  }
  return launch_tiled_ffn_depth<T, 1, 1>(a, d, sync, s);
}

template <GgmlType T>
void launch_repack(const uint8_t* src, uint8_t* dst, int64_t ne0, int64_t ne1, uint64_t row_bytes,
                   int64_t total, cudaStream_t s) {
  const int64_t blocks = std::min<int64_t>((total + 255) / 256, 65535);
  repack_tiled_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, s>>>(src, dst, ne0, ne1, row_bytes, total);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

int device_multiprocessors() { return device_sm_shape().sms; }

const SmLimits* emulated_sm_limits() {
  static const SmLimits* const limits = []() -> const SmLimits* {
    const char* v = std::getenv("MOEPACK_GPU_LIMITS");
    if (v == nullptr || *v == '\0') return nullptr;
    if (std::string(v) == kSm120Limits.name) return &kSm120Limits;
    throw Error(std::string("MOEPACK_GPU_LIMITS: unknown limits '") + v + "' (known: " + kSm120Limits.name +
                ", or unset for the device's own)");
  }();
  return limits;
}

int occupancy_blocks_per_sm(const void* kernel, int threads, size_t dynamic_smem) {
  int blocks = 0;
  MOEPACK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic_smem));
  if (const SmLimits* lim = emulated_sm_limits()) {
    blocks = static_cast<int>(emulated_blocks_per_sm(
        *lim, blocks, threads, static_cast<int64_t>(dynamic_smem + kernel_state(kernel).static_smem)));
  }
  return blocks;
}

int shared_memory_blocks_per_sm(const void* kernel, size_t dynamic_smem) {
  const SmShape sh = device_sm_shape();
  const size_t bytes = dynamic_smem + kernel_state(kernel).static_smem;
  return static_cast<int>(smem_blocks_per_sm(static_cast<int64_t>(sh.smem), static_cast<int64_t>(sh.reserved),
                                             static_cast<int64_t>(bytes)));
}

void allow_dynamic_smem(const void* kernel, size_t bytes) { allow_smem(kernel, bytes); }

size_t max_dynamic_smem(const void* kernel) {
  const size_t optin = device_sm_shape().optin, own = kernel_state(kernel).static_smem;
  return optin > own ? optin - own : 0;
}

// Q3_K's and Q6_K's tiled launches (set_gemv_tiled_layout).
std::atomic<bool> g_q3k_tiled{kGemvQ3kTiledDefault}, g_q6k_tiled{kGemvQ6kTiledDefault};

bool gemv_tiled_supported(GgmlType type, int64_t ne0, int64_t ne1) {
  if (!gemv_mma_supported(type, ne0) || !tiled_layout_covers(type, ne0, ne1)) return false;
  if (type == GgmlType::Q3_K && !g_q3k_tiled.load(std::memory_order_relaxed)) return false;
  if (type == GgmlType::Q6_K && !g_q6k_tiled.load(std::memory_order_relaxed)) return false;
  // x's fragments in the default's layout (the tiled kernel's Sel), staged in shared memory
  // beside the kernel's static shared memory (kTiledStaticSmem).
  return static_cast<size_t>(gemv_x_fragments_bytes(type, ne0)) <= tiled_smem_limit();
}

void set_gemv_tiled_layout(GgmlType type, bool on) {
  switch (type) {
    case GgmlType::Q3_K:
      return g_q3k_tiled.store(on, std::memory_order_relaxed);
    case GgmlType::Q6_K:
      return g_q6k_tiled.store(on, std::memory_order_relaxed);
    default:
      throw Error("set_gemv_tiled_layout: only Q3_K's and Q6_K's tiled launches can be switched (got " +
                  std::string(ggml_type_name(type)) + ")");
  }
}

void set_gemv_tiled_split(int warps) {
  if (warps != 1 && warps != 2) throw Error("set_gemv_tiled_split: " + std::to_string(warps) + " is not 1 or 2");
  g_tiled_split.store(warps, std::memory_order_relaxed);
}

void set_gemv_tiled_warps(int warps) {
  if (warps != 0 && warps != 4 && warps != 8 && warps != 12 && warps != 16)
    throw Error("set_gemv_tiled_warps: " + std::to_string(warps) + " is not 0, 4, 8, 12 or 16");
  g_tiled_warps.store(warps, std::memory_order_relaxed);
}

void set_gemv_tiled_runs(int tiles_per_block) {
  if (tiles_per_block < -1)
    throw Error("set_gemv_tiled_runs: " + std::to_string(tiles_per_block) + " is not -1, 0 or a tile count");
  g_tiled_runs.store(tiles_per_block, std::memory_order_relaxed);
}

void set_gemv_tiled_depth(int depth) {
  if (depth < 0 || depth > 2)
    throw Error("set_gemv_tiled_depth: " + std::to_string(depth) + " is not 0, 1 or 2");
  g_tiled_depth.store(depth, std::memory_order_relaxed);
}

// Q3_K, Q5_K and Q6_K on the tensor cores (set_gemv_tensor_cores; the benchmark compares both ways).
std::atomic<bool> g_q3k_tensor_cores{true}, g_q5k_tensor_cores{kGemvQ5kTensorCoresDefault},
    g_q6k_tensor_cores{true};

void set_gemv_tensor_cores(GgmlType type, bool on) {
  switch (type) {
    case GgmlType::Q3_K:
      return g_q3k_tensor_cores.store(on, std::memory_order_relaxed);
    case GgmlType::Q5_K:
      return g_q5k_tensor_cores.store(on, std::memory_order_relaxed);
    case GgmlType::Q6_K:
      return g_q6k_tensor_cores.store(on, std::memory_order_relaxed);
    default:
      throw Error("set_gemv_tensor_cores: only Q3_K's, Q5_K's and Q6_K's tensor cores can be switched (got " +
                  std::string(ggml_type_name(type)) + ")");
  }
}

bool gemv_mma_supported(GgmlType type, int64_t ne0) {
  if (g_variant.load(std::memory_order_relaxed) < 0) return false;
  if (type == GgmlType::Q3_K && !g_q3k_tensor_cores.load(std::memory_order_relaxed)) return false;
  if (type == GgmlType::Q5_K && !g_q5k_tensor_cores.load(std::memory_order_relaxed)) return false;
  if (type == GgmlType::Q6_K && !g_q6k_tensor_cores.load(std::memory_order_relaxed)) return false;
  return (type == GgmlType::Q4_K || type == GgmlType::Q2_K || type == GgmlType::MXFP4 ||
          type == GgmlType::Q3_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K) &&
         ne0 > 0 && ne0 % 256 == 0 && ne0 <= kMaxNe0;
}

void set_gemv_ffn_warps(int warps) {
  if (warps != 0 && warps != 8 && warps != 12 && warps != 16) {
    throw Error("set_gemv_ffn_warps: 0, 8, 12 or 16 warps a block (got " + std::to_string(warps) + ")");
  }
  g_ffn_warps.store(warps, std::memory_order_relaxed);
}

void set_gemv_ffn_fusion(bool on) { g_ffn_fusion.store(on, std::memory_order_relaxed); }

// (Q5_K's, Q6_K's and Q3_K's tiled layouts have no one-launch FFN: that launch, off by default, measured
// 1-5 % slower than the two for the other types, twenty-second pass; not compiled for them.)
bool gemv_mma_ffn_fusable(GgmlType type, int64_t hidden, int64_t ff) {
  return g_ffn_fusion.load(std::memory_order_relaxed) &&
         (type == GgmlType::Q4_K || type == GgmlType::Q2_K || type == GgmlType::MXFP4) &&
         gemv_mma_swiglu_fusable(type, hidden) && gemv_mma_supported(type, ff) &&
         gemv_tiled_supported(type, hidden, ff) && gemv_tiled_supported(type, ff, hidden);
}

void gemv_mma_ffn(const GemvBatch& a, const GemvBatch& d, int32_t* sync, cudaStream_t s) {
  switch (a.type) {
    case GgmlType::Q4_K:
      return launch_tiled_ffn<GgmlType::Q4_K>(a, d, sync, s);
    case GgmlType::Q2_K:
      return launch_tiled_ffn<GgmlType::Q2_K>(a, d, sync, s);
    case GgmlType::MXFP4:
      return launch_tiled_ffn<GgmlType::MXFP4>(a, d, sync, s);
    default:
      throw Error("gemv_mma_ffn: " + std::string(ggml_type_name(a.type)) +
                  " has no one-launch expert FFN (Q4_K, Q2_K and MXFP4 in the tiled layout)");
  }
}

void set_gemv_mma_variant(int variant) {
  if (variant < -1 || variant > 28) {
    throw Error("set_gemv_mma_variant: variant " + std::to_string(variant) + " is not -1..28");
  }
  g_variant.store(variant, std::memory_order_relaxed);
}

bool gemv_mma_off() { return g_variant.load(std::memory_order_relaxed) == -1; }

void set_gemv_pdl(bool on) { g_pdl.store(on, std::memory_order_relaxed); }

void set_swiglu_fragments_pdl(bool on) { g_swiglu_pdl.store(on, std::memory_order_relaxed); }

void set_gemv_swiglu_fusion(bool on) { g_swiglu_fusion.store(on, std::memory_order_relaxed); }

bool gemv_mma_swiglu_fusable(GgmlType type, int64_t ne0) {
  return g_swiglu_fusion.load(std::memory_order_relaxed) && g_variant.load(std::memory_order_relaxed) == 0 &&
         gemv_mma_supported(type, ne0);
}

void check_mma_weights_aligned(const GemvBatch& b) {
  // Weights 4-byte aligned; Q3_K's and Q6_K's rows of an odd number of super-blocks (windowed
  // rings whatever the variant) 2-aligned, as their groups then lie (w_gstride 2 mod 4 for an odd
  // row count). A table's device pointers are the caller's to align: expert slots and GGUF tensors are.
  const bool windowed = (b.type == GgmlType::Q3_K || b.type == GgmlType::Q6_K) && (b.ne0 / 256) % 2 != 0;
  const uint64_t align = windowed ? 2 : 4;
  if (!b.w_table && ((reinterpret_cast<uintptr_t>(b.w) | b.w_gstride) & (align - 1)) != 0) {
    throw Error("gemv_mma: " + std::string(ggml_type_name(b.type)) + " weights of rows of " +
                std::to_string(b.ne0) + " elements must be " + std::to_string(align) +
                "-byte aligned, and so must their group stride (w at " +
                std::to_string(reinterpret_cast<uintptr_t>(b.w)) + ", w_gstride " +
                std::to_string(b.w_gstride) + ")");
  }
}

void gemv_mma(const GemvBatch& b, cudaStream_t s) {
  if (!gemv_mma_supported(b.type, b.ne0)) {
    throw Error("gemv_mma: " + std::string(ggml_type_name(b.type)) + " rows of " + std::to_string(b.ne0) +
                " elements are not covered (Q4_K, Q2_K, MXFP4, Q3_K, Q5_K and Q6_K with a multiple of 256)");
  }
  if (!b.grp_off && b.n_tok != 1) throw Error("gemv_mma: without groups it takes exactly one token");
  check_mma_weights_aligned(b);
  if (b.x_frag) {
    const int64_t need = gemv_x_fragments_bytes(b.type, b.ne0);
    if ((reinterpret_cast<uintptr_t>(b.x_frag) & 15) != 0 || b.x_frag_stride % 16 != 0 || b.x_frag_stride < need ||
        b.x_gstride != 0) {
      throw Error("gemv_mma: x_frag must be 16-byte aligned with a stride that is a multiple of 16 and at least " +
                  std::to_string(need) + " bytes (got stride " + std::to_string(b.x_frag_stride) +
                  "), and x rows shared by all groups (x_gstride 0, got " + std::to_string(b.x_gstride) + ")");
    }
  }
  if (b.w_tiled) {
    if (!b.grp_off || b.x_frag || !gemv_tiled_supported(b.type, b.ne0, b.ne1)) {
      throw Error("gemv_mma: tiled weights (w_tiled) need an expert launch (grp_off) of " +
                  std::string(ggml_type_name(b.type)) + " rows of " + std::to_string(b.ne0) + " elements, " +
                  std::to_string(b.ne1) + " rows, that gemv_tiled_supported covers, without ready fragments");
    }
    switch (b.type) {
      case GgmlType::Q4_K:
        return launch_tiled<GgmlType::Q4_K>(b, s);
      case GgmlType::Q5_K:
        return launch_tiled<GgmlType::Q5_K>(b, s);
      case GgmlType::Q6_K:
        return launch_tiled<GgmlType::Q6_K>(b, s);
      case GgmlType::Q3_K:
        return launch_tiled<GgmlType::Q3_K>(b, s);
      case GgmlType::Q2_K:
        return launch_tiled<GgmlType::Q2_K>(b, s);
      default:
        return launch_tiled<GgmlType::MXFP4>(b, s);
    }
  }
  switch (b.type) {
    case GgmlType::Q4_K:
      return launch_type<GgmlType::Q4_K>(b, s);
    case GgmlType::Q2_K:
      return launch_type<GgmlType::Q2_K>(b, s);
    case GgmlType::Q3_K:
      return launch_two_aligned_type<GgmlType::Q3_K>(b, s);
    case GgmlType::Q5_K:
      return launch_q5k_type<GgmlType::Q5_K>(b, s);
    case GgmlType::Q6_K:
      return launch_two_aligned_type<GgmlType::Q6_K>(b, s);
    default:
      return launch_type<GgmlType::MXFP4>(b, s);
  }
}

}  // namespace moepack::gpu::detail

namespace moepack::gpu {
namespace {
// The default's fragments of type T (launch_default: Sel<T, col_arith<T>()>), as
// swiglu_clamped_fragments writes them and gemv_pipe_kernel copies them.
template <GgmlType T>
using DefaultSel = detail::Sel<T, detail::col_arith<T>()>;

template <GgmlType T>
void launch_swiglu_fragments(const float* gate, const float* up, int64_t rows, int64_t ff, float limit, float* out,
                             uint8_t* frag, int64_t frag_stride, cudaStream_t s) {
  constexpr int kLayout = DefaultSel<T>::layout();
  const dim3 grid(static_cast<unsigned>((ff / 256 + detail::kMmaWarps - 1) / detail::kMmaWarps),
                  static_cast<unsigned>(rows), 1);
  const auto k = limit > 1e-6f ? detail::swiglu_fragments_kernel<kLayout, true>
                               : detail::swiglu_fragments_kernel<kLayout, false>;
  // The SMs' largest shared-memory configuration, the one the GEMV after it runs in, and a
  // programmatic dependent launch as the GEMV's, unless switched off.
  detail::prefer_max_shared(reinterpret_cast<const void*>(k));
  detail::launch_maybe_dependent(
      k, grid, detail::kMmaWarps * 32, 0, s,
      detail::g_swiglu_pdl.load(std::memory_order_relaxed) && detail::g_pdl.load(std::memory_order_relaxed),
      gate, up, ff, limit, out, frag, frag_stride);
}
}  // namespace

int64_t gemv_x_fragments_bytes(GgmlType type, int64_t ne0) {
  if (!detail::gemv_mma_supported(type, ne0)) return 0;
  switch (type) {
    case GgmlType::Q4_K:
      return DefaultSel<GgmlType::Q4_K>::stride(ne0);
    case GgmlType::Q2_K:
      return DefaultSel<GgmlType::Q2_K>::stride(ne0);
    case GgmlType::Q3_K:
      return DefaultSel<GgmlType::Q3_K>::stride(ne0);
    case GgmlType::Q5_K:
      return DefaultSel<GgmlType::Q5_K>::stride(ne0);
    case GgmlType::Q6_K:
      return DefaultSel<GgmlType::Q6_K>::stride(ne0);
    default:
      return DefaultSel<GgmlType::MXFP4>::stride(ne0);
  }
}

void swiglu_clamped_fragments(const float* gate, const float* up, int64_t rows, int64_t ff, float limit, float* out,
                              GgmlType type, uint8_t* frag, int64_t frag_stride, cudaStream_t s) {
  const int64_t need = gemv_x_fragments_bytes(type, ff);
  if (need <= 0) {
    throw Error("swiglu_clamped_fragments: the " + std::string(ggml_type_name(type)) + " GEMV of rows of " +
                std::to_string(ff) + " elements takes no ready x fragments");
  }
  if (frag_stride < need || frag_stride % 16 != 0 || (reinterpret_cast<uintptr_t>(frag) & 15) != 0) {
    throw Error("swiglu_clamped_fragments: frag must be 16-byte aligned and frag_stride (" +
                std::to_string(frag_stride) + ") a multiple of 16 of at least the " + std::to_string(need) +
                " bytes of a row's fragments");
  }
  if (rows <= 0) return;
  if (rows > 65535) throw Error("swiglu_clamped_fragments: " + std::to_string(rows) + " rows exceed the launch grid");
  switch (type) {
    case GgmlType::Q4_K:
      return launch_swiglu_fragments<GgmlType::Q4_K>(gate, up, rows, ff, limit, out, frag, frag_stride, s);
    case GgmlType::Q2_K:
      return launch_swiglu_fragments<GgmlType::Q2_K>(gate, up, rows, ff, limit, out, frag, frag_stride, s);
    case GgmlType::Q3_K:
      return launch_swiglu_fragments<GgmlType::Q3_K>(gate, up, rows, ff, limit, out, frag, frag_stride, s);
    case GgmlType::Q5_K:
      return launch_swiglu_fragments<GgmlType::Q5_K>(gate, up, rows, ff, limit, out, frag, frag_stride, s);
    case GgmlType::Q6_K:
      return launch_swiglu_fragments<GgmlType::Q6_K>(gate, up, rows, ff, limit, out, frag, frag_stride, s);
    default:
      return launch_swiglu_fragments<GgmlType::MXFP4>(gate, up, rows, ff, limit, out, frag, frag_stride, s);
  }
}

}  // namespace moepack::gpu

namespace moepack::gpu {

bool gemv_tiled_supported(GgmlType type, int64_t ne0, int64_t ne1) {
  return detail::gemv_tiled_supported(type, ne0, ne1);
}

void repack_tiled(GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes, const uint8_t* src,
                  uint8_t* dst, int64_t n_matrices, cudaStream_t s) {
  const auto want = ggml_row_bytes(type, static_cast<uint64_t>(std::max<int64_t>(ne0, 0)));
  if (n_matrices < 0) throw Error("repack_tiled: " + std::to_string(n_matrices) + " matrices");
  if (!tiled_layout_covers(type, ne0, ne1) || !want || *want != row_bytes) {
    throw Error("repack_tiled: " + std::string(ggml_type_name(type)) + " [" + std::to_string(ne1) + "][" +
                std::to_string(ne0) + "] with rows of " + std::to_string(row_bytes) +
                " bytes has no tiled layout (Q4_K, Q5_K, Q6_K, Q3_K, Q2_K or MXFP4; rows a multiple of 16, "
                "of a multiple of 256 elements)");
  }
  const int64_t total = n_matrices * ne1 * static_cast<int64_t>(row_bytes);
  if (total == 0) return;
  const uintptr_t s0 = reinterpret_cast<uintptr_t>(src), d0 = reinterpret_cast<uintptr_t>(dst);
  if (s0 < d0 + static_cast<uint64_t>(total) && d0 < s0 + static_cast<uint64_t>(total)) {
    throw Error("repack_tiled: src and dst overlap (" + std::to_string(total) + " bytes each)");
  }
  if ((d0 & 15) != 0) throw Error("repack_tiled: dst must be 16-byte aligned (the tiled launch's loads)");
  switch (type) {
    case GgmlType::Q4_K:
      return detail::launch_repack<GgmlType::Q4_K>(src, dst, ne0, ne1, row_bytes, total, s);
    case GgmlType::Q5_K:
      return detail::launch_repack<GgmlType::Q5_K>(src, dst, ne0, ne1, row_bytes, total, s);
    case GgmlType::Q6_K:
      return detail::launch_repack<GgmlType::Q6_K>(src, dst, ne0, ne1, row_bytes, total, s);
    case GgmlType::Q3_K:
      return detail::launch_repack<GgmlType::Q3_K>(src, dst, ne0, ne1, row_bytes, total, s);
    case GgmlType::Q2_K:
      return detail::launch_repack<GgmlType::Q2_K>(src, dst, ne0, ne1, row_bytes, total, s);
    default:
      return detail::launch_repack<GgmlType::MXFP4>(src, dst, ne0, ne1, row_bytes, total, s);
  }
}

}  // namespace moepack::gpu
