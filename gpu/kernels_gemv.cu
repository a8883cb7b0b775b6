// Dequantizing matrix-vector products for every GGUF type the models use, decode and prefill.
//
// A warp owns R rows (R = 2 at decode, 1 at prefill) and streams them (contiguous GGUF bytes)
// in tiles of 32 * L chunks of 32 elements (whole blocks; L chosen so a tile is >= ~1 KiB:
// Q4_K 2 = 8 super-blocks, Q2_K 4, Q8_0 1): every lane loads 16-byte granules of the tile
// (coalesced; the address is aligned down to 16 bytes, so rows at any byte alignment work) into
// registers, the warp parks them in its shared-memory slot and issues the next tile's loads
// before computing on this one. Lane l then dequantizes chunks l, l + 32, ... of the tile in
// registers and dots each with the activations of up to P pairs, accumulating in F32; a warp
// shuffle reduction gives each row's sum. At decode (P = 1) the block stages each tile's
// activations once in shared memory with coalesced loads (swizzled so that every lane reads its
// own chunk without bank conflicts); at prefill each lane reads its chunk of x for every pair
// through the read-only path.
//
// Dequantized values are those of dequant.cuh, bit for bit: Q4_K, Q8_0, Q2_K, Q6_K and MXFP4
// have register-level versions below (word loads from shared memory, byte -> float through
// the 2^23 magic-number trick instead of I2F, d1 * q - m1 as one FMA, which rounds once like
// the CPU's two operations because d1 * q is exact); every other type calls dequant_chunk on
// the shared-memory tile. Each chunk is summed with FMA in element order and added to the
// lane's accumulator; this differs from vec_dot's order only by rounding (gpu_ops_test:
// |gpu - cpu| <= 1e-5 * sum |w x| + 1e-6).
//
// Variants (grid (row tiles, groups, pair tiles)): P = 1 for decode (one pair per group: one
// token, or the grouped-experts launch at one token) with R = 2 rows per warp (block types), so
// each x chunk is loaded into registers once for two rows (x is 4 bytes per element against
// 0.56 for Q4_K: its L1 traffic, not the weights', would otherwise bound the kernel), weights
// loaded with evict-first hints as they are read once; P = 8, R = 1 for prefill, so each
// weight tile is read once per 8 pairs. v1 (one lane per chunk, byte loads straight from
// global memory, 0.02-0.05 of D2D bandwidth on the H200) is gone: this kernel serves prefill
// as well.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cub/block/block_scan.cuh>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/dequant.cuh"
#include "gpu/gemm_mma_layout.h"
#include "gpu/gemm_quant_a.h"
#include "gpu/gemv_mma.h"
#include "gpu/gemv_quant_words.h"
#include "gpu/gemv_tiled.h"
#include "gpu/kernels.h"
#include "gpu/prefill_columns.h"

namespace moepack::gpu {
namespace {

constexpr int kWarps = 4;  // rows per block
constexpr int kPrefillPairs = 8;
// Which groups of an expert launch gemv_kernel computes (grp_off): those of lo to hi pairs (all,
// all but those of one pair, only those, or those below the tensor-core prefill's minimum).
struct GroupSizes {
  int lo, hi;
};
constexpr GroupSizes kSinglesAll{1, INT_MAX}, kSinglesSkip{2, INT_MAX}, kSinglesOnly{1, 1};

// A tile is 32 * kLaneChunks chunks of a row, at least ~1 KiB of weights so that a warp keeps
// enough bytes in flight (Q2_K: 4 chunks per lane, Q4_K: 2, Q8_0: 1); the per-warp staging
// is in 16-byte granules: the tile, one granule of misalignment and one of slack for word loads.
template <GgmlType T>
struct Tile {
  static constexpr int kBytes32 = 32 * kChunk / BlockOf<T>::kElems * BlockOf<T>::kBytes;  // 32 chunks
  static constexpr int kLaneChunks = (1024 + kBytes32 - 1) / kBytes32;
  static constexpr int kChunks = 32 * kLaneChunks;
  static constexpr int kBytes = kBytes32 * kLaneChunks;
  static constexpr int kGranules = (kBytes + 15) / 16 + 2;
  static constexpr int kPerLane = (kGranules + 31) / 32;
  // Decode (2 rows per warp) blocks per SM asked of ptxas: 5 (96 registers, 20 warps, 40 rows
  // in flight per SM) where that compiles without spills (-Xptxas -v, sm_90), else 4 (128).
  static constexpr int kDecodeBlocks =
      T == GgmlType::Q4_K || T == GgmlType::Q8_0 || T == GgmlType::Q2_K ? 5 : 4;
  // Rows per warp at one pair per group: 2 for block types; 1 for F32/F16/BF16, whose weights
  // are 2-4 bytes per element (x reuse matters less) and whose tiles need twice the registers.
  static constexpr int kDecodeRows = BlockOf<T>::kElems == 1 ? 1 : 2;
};

// Elements of chunk c of a row of ne0 (32 except possibly the last).
__device__ __forceinline__ int chunk_len(int64_t ne0, int64_t c) {
  const int64_t left = ne0 - c * kChunk;
  return left < kChunk ? static_cast<int>(left) : kChunk;
}

// N little-endian words at byte `off` (any alignment) of a 16-byte aligned shared-memory
// buffer; reads one word past the end. (Integer offsets keep the loads in the shared space.)
template <int N>
__device__ __forceinline__ void load_words(const uint8_t* base, int off, uint32_t (&w)[N]) {
  const uint32_t* q = reinterpret_cast<const uint32_t*>(base) + (off >> 2);
  const unsigned sh = 8u * static_cast<unsigned>(off & 3);
  uint32_t lo = q[0];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const uint32_t hi = q[i + 1];
    w[i] = __funnelshift_r(lo, hi, sh);
    lo = hi;
  }
}

// Byte k of w (unsigned) as a float, exactly: 2^23 + b has b in its low mantissa bits.
// Bias (an integer, exact in the subtraction) is subtracted in the same FADD.
template <int K>
__device__ __forceinline__ float byte_as_float(uint32_t w, float bias = 0.0f) {
  return __int_as_float(static_cast<int>(__byte_perm(w, 0x4B000000u, 0x7440u | K))) - (8388608.0f + bias);
}

// Elements 4i .. 4i + 3 (the bytes of ql) and 4i + 16 .. 4i + 19 (of qu) of a 32-element block
// (Q4_0, Q4_1, Q5_0, Q5_1): (q - bias) * d, or with MIN q * d + m, dequant_chunk's two roundings
// (--fmad=false).
template <bool MIN>
__device__ __forceinline__ void block32_word(float (&v)[kChunk], int i, uint32_t ql, uint32_t qu, float d,
                                             float m, float bias) {
  const auto val = [&](float q) { return MIN ? q * d + m : q * d; };
  v[4 * i + 0] = val(byte_as_float<0>(ql, bias));
  v[4 * i + 1] = val(byte_as_float<1>(ql, bias));
  v[4 * i + 2] = val(byte_as_float<2>(ql, bias));
  v[4 * i + 3] = val(byte_as_float<3>(ql, bias));
  v[4 * i + 16] = val(byte_as_float<0>(qu, bias));
  v[4 * i + 17] = val(byte_as_float<1>(qu, bias));
  v[4 * i + 18] = val(byte_as_float<2>(qu, bias));
  v[4 * i + 19] = val(byte_as_float<3>(qu, bias));
}

// Chunk c of the tile at byte `tile` of the staging buffer `s` (the tile starts at a block
// boundary of the row) into v, exactly as dequant_chunk<T>. MXFP4_PAD: the tiled layout's
// staging of MXFP4 (TiledRow): 20-byte blocks, the scale at byte 0 and the 16 qs bytes at 4-19
// (word-aligned), tile 0; the same values. BYTEWISE: dequant_chunk itself (byte loads from the
// staging; the benchmark's comparison, set_gemv_bytewise_dequant).
template <GgmlType T, bool MXFP4_PAD = false, bool BYTEWISE = false>
__device__ __forceinline__ void tile_chunk(const uint8_t* s, int tile, int c, int n, float (&v)[kChunk]) {
  if constexpr (BYTEWISE) {
    dequant_chunk<T>(s + tile, c, n, v);
  } else if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    constexpr bool k5 = T == GgmlType::Q5_K;
    const int o = tile + (c >> 3) * (k5 ? 176 : 144);
    const uint8_t* b = s + o;
    const int j = c & 7;
    const float d = half_at(b), dmin = half_at(b + 2);
    int sc = 0, m = 0;
    scale_min_k4(j, b + 4, sc, m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    uint32_t qh[k5 ? 8 : 1] = {}, w[8];
    if constexpr (k5) load_words(s, o + 16, qh);           // Q5_K: bit j of byte l is element l's fifth bit
    load_words(s, o + (k5 ? 48 : 16) + 32 * (j >> 1), w);  // the low nibbles
    const unsigned shift = 4u * static_cast<unsigned>(j & 1);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      uint32_t q = (w[i] >> shift) & 0x0F0F0F0Fu;
      if constexpr (k5) q |= ((qh[i] >> j) & 0x01010101u) << 4;
      // d1 * q is exact (at most 11 + 6 + 5 significant bits), so one FMA rounds as
      // dequant_chunk's multiply and subtract do
      v[4 * i + 0] = __fmaf_rn(d1, byte_as_float<0>(q), -m1);
      v[4 * i + 1] = __fmaf_rn(d1, byte_as_float<1>(q), -m1);
      v[4 * i + 2] = __fmaf_rn(d1, byte_as_float<2>(q), -m1);
      v[4 * i + 3] = __fmaf_rn(d1, byte_as_float<3>(q), -m1);
    }
  } else if constexpr (T == GgmlType::Q8_0) {
    const int o = tile + c * 34;
    const float d = half_at(s + o);
    uint32_t w[8];
    load_words(s, o + 2, w);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t q = w[i] ^ 0x80808080u;  // int8 + 128
      v[4 * i + 0] = byte_as_float<0>(q, 128.0f) * d;
      v[4 * i + 1] = byte_as_float<1>(q, 128.0f) * d;
      v[4 * i + 2] = byte_as_float<2>(q, 128.0f) * d;
      v[4 * i + 3] = byte_as_float<3>(q, 128.0f) * d;
    }
  } else if constexpr (T == GgmlType::Q2_K) {
    const int o = tile + (c >> 3) * 84;
    const uint8_t* b = s + o;
    const int j = c & 7, h = j >> 2, p = j & 3;
    const float d = half_at(b + 80), dmin = half_at(b + 82);
    uint32_t w[8];
    load_words(s, o + 16 + 32 * h, w);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const uint8_t s = b[8 * h + 2 * p + part];
      const float dl = d * static_cast<float>(s & 0x0F);
      const float ml = dmin * static_cast<float>(s >> 4);
#pragma unroll
      for (int i = 4 * part; i < 4 * part + 4; ++i) {
        const uint32_t q = (w[i] >> (2 * p)) & 0x03030303u;
        v[4 * i + 0] = __fmaf_rn(dl, byte_as_float<0>(q), -ml);
        v[4 * i + 1] = __fmaf_rn(dl, byte_as_float<1>(q), -ml);
        v[4 * i + 2] = __fmaf_rn(dl, byte_as_float<2>(q), -ml);
        v[4 * i + 3] = __fmaf_rn(dl, byte_as_float<3>(q), -ml);
      }
    }
  } else if constexpr (T == GgmlType::Q6_K) {
    const int o = tile + (c >> 3) * 210;
    const uint8_t* b = s + o;
    const int j = c & 7, h = j >> 2, r = j & 3;
    const float d = half_at(b + 208);
    uint32_t lo[8], hi[8];
    load_words(s, o + 64 * h + 32 * (r & 1), lo);
    load_words(s, o + 128 + 32 * h, hi);
    const unsigned nshift = 4u * static_cast<unsigned>(r >> 1);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const float scale = d * static_cast<float>(static_cast<int8_t>(b[192 + 8 * h + 2 * r + part]));
#pragma unroll
      for (int i = 4 * part; i < 4 * part + 4; ++i) {
        const uint32_t q = ((lo[i] >> nshift) & 0x0F0F0F0Fu) | (((hi[i] >> (2 * r)) & 0x03030303u) << 4);
        v[4 * i + 0] = scale * byte_as_float<0>(q, 32.0f);
        v[4 * i + 1] = scale * byte_as_float<1>(q, 32.0f);
        v[4 * i + 2] = scale * byte_as_float<2>(q, 32.0f);
        v[4 * i + 3] = scale * byte_as_float<3>(q, 32.0f);
      }
    }
  } else if constexpr (T == GgmlType::MXFP4) {
    const int o = MXFP4_PAD ? c * 20 : tile + c * 17;
    const float d = e8m0_half(s[o]);
    uint32_t w[4];
    if constexpr (MXFP4_PAD) {
#pragma unroll
      for (int i = 0; i < 4; ++i) w[i] = reinterpret_cast<const uint32_t*>(s + o + 4)[i];
    } else {
      load_words(s, o + 1, w);
    }
    // e2m1 magnitudes times two, {0, 1, 2, 3, 4, 6, 8, 12}, picked by byte_perm; bit 3 = sign.
    const auto val = [d](uint32_t nib) {
      const uint32_t mag = __byte_perm(0x03020100u, 0x0C080604u, nib & 7u);
      const float f = (__int_as_float(static_cast<int>(mag | 0x4B000000u)) - 8388608.0f) * d;
      return (nib & 8u) ? 0.0f - f : f;  // kv[8] = 0 gives +0, as the table
    };
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint32_t byte = (w[i] >> (8 * k)) & 0xFFu;
        v[4 * i + k] = val(byte & 0x0Fu);
        v[4 * i + k + 16] = val(byte >> 4);
      }
    }
  } else if constexpr (T == GgmlType::Q3_K) {
    const int o = tile + (c >> 3) * 110;
    const uint8_t* b = s + o;
    const int j = c & 7, h = j >> 2, p = j & 3;
    const float d = half_at(b + 108);
    uint32_t hm[8], w[8];
    load_words(s, o, hm);               // hmask: bit 4h + p of byte l is element l's high bit
    load_words(s, o + 32 + 32 * h, w);  // qs: bits 2p, 2p + 1 of byte l its low bits
    const unsigned hs = static_cast<unsigned>(4 * h + p);
    const uint8_t* sc = b + 96;
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const int si = 8 * h + 2 * p + part;
      const int lo = si < 8 ? (sc[si] & 0x0F) : (sc[si - 8] >> 4);
      const int hi = (sc[8 + si % 4] >> (2 * (si / 4))) & 3;
      const float dl = d * static_cast<float>((lo | (hi << 4)) - 32);
#pragma unroll
      for (int i = 4 * part; i < 4 * part + 4; ++i) {
        // q + 4 in [0, 7]: the low bits, the hmask bit as bit 2 (clear: q = low - 4)
        const uint32_t q = ((w[i] >> (2 * p)) & 0x03030303u) | (((hm[i] >> hs) & 0x01010101u) << 2);
        v[4 * i + 0] = dl * byte_as_float<0>(q, 4.0f);
        v[4 * i + 1] = dl * byte_as_float<1>(q, 4.0f);
        v[4 * i + 2] = dl * byte_as_float<2>(q, 4.0f);
        v[4 * i + 3] = dl * byte_as_float<3>(q, 4.0f);
      }
    }
  } else if constexpr (T == GgmlType::Q4_0 || T == GgmlType::Q4_1 || T == GgmlType::Q5_0 ||
                       T == GgmlType::Q5_1) {
    // 32-element blocks: d (and the _1 types' m), the Q5 types' 32-bit qh (bit i: element i's
    // fifth bit), 16 bytes: element i in byte i's low nibble, i + 16 in its high nibble
    constexpr bool k1 = T == GgmlType::Q4_1 || T == GgmlType::Q5_1;
    constexpr bool k5 = T == GgmlType::Q5_0 || T == GgmlType::Q5_1;
    constexpr int head = (k1 ? 4 : 2) + (k5 ? 4 : 0);  // bytes before the nibbles
    const int o = tile + c * (head + 16);
    const float d = half_at(s + o);
    const float m = k1 ? half_at(s + o + 2) : 0.0f;
    constexpr float bias = k1 ? 0.0f : (k5 ? 16.0f : 8.0f);
    uint32_t qh[1] = {}, w[4];
    if constexpr (k5) load_words(s, o + (k1 ? 4 : 2), qh);
    load_words(s, o + head, w);
    // Four bits (x < 16) to bit 0 of four bytes: the shifted copies x, x << 7, x << 14, x << 21
    // do not overlap, so the product has no carries.
    const auto spread = [](uint32_t x) { return ((x * 0x00204081u) & 0x01010101u) << 4; };
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t ql = (w[i] & 0x0F0F0F0Fu) | (k5 ? spread((qh[0] >> (4 * i)) & 0x0Fu) : 0u);
      const uint32_t qu = ((w[i] >> 4) & 0x0F0F0F0Fu) | (k5 ? spread((qh[0] >> (16 + 4 * i)) & 0x0Fu) : 0u);
      block32_word<k1>(v, i, ql, qu, d, m, bias);
    }
  } else {
    dequant_chunk<T>(s + tile, c, n, v);
  }
}

// sum_i v[i] * x_i over the chunk's n elements, FMA in element order, whatever the x's source:
// x4(i) is float4 i of a whole chunk (taken when n == kChunk and vec), x1(i) element i.
template <class X4, class X1>
__device__ __forceinline__ float ordered_dot(const float (&v)[kChunk], int n, bool vec, X4 x4, X1 x1) {
  float s = 0.0f;
  if (n == kChunk && vec) {
#pragma unroll
    for (int i = 0; i < kChunk / 4; ++i) {
      const float4 xv = x4(i);
      s = __fmaf_rn(v[4 * i + 0], xv.x, s);
      s = __fmaf_rn(v[4 * i + 1], xv.y, s);
      s = __fmaf_rn(v[4 * i + 2], xv.z, s);
      s = __fmaf_rn(v[4 * i + 3], xv.w, s);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      if (i < n) s = __fmaf_rn(v[i], x1(i), s);
    }
  }
  return s;
}

// The chunk's x in global memory.
__device__ __forceinline__ float chunk_dot(const float (&v)[kChunk], const float* x, int n) {
  return ordered_dot(
      v, n, (reinterpret_cast<uintptr_t>(x) & 15) == 0,
      [x](int i) { return __ldg(reinterpret_cast<const float4*>(x) + i); },
      [x](int i) { return __ldg(x + i); });
}

// Decode: the contribution of chunk c of a staged row tile to the dot product with the chunk's
// activations xv (in registers): the chunk dequantized exactly (tile_chunk) and dotted in
// element order, as the prefill variant does, so that a pair gets the same sum from either
// variant (the pack path and the GGUF path may group experts differently). Types the tensor-
// core path covers (gemv_mma.h) take that path for every group of exactly one pair instead,
// whichever launch the group is in.
template <GgmlType T, bool MXFP4_PAD = false, bool BYTEWISE = false>
__device__ __forceinline__ float decode_chunk_dot(const uint8_t* s, int tile, int c, int n,
                                                  const float (&xv)[kChunk]) {
  float v[kChunk];
  tile_chunk<T, MXFP4_PAD, BYTEWISE>(s, tile, c, n, v);
  float dot = 0.0f;
#pragma unroll
  for (int e = 0; e < kChunk; ++e) {
    // Block types fill all 32 values; a plain type's last chunk fills n (v is not written past
    // it).
    if (BlockOf<T>::kElems > 1 || e < n) dot = __fmaf_rn(v[e], xv[e], dot);
  }
  return dot;
}

// x chunk cl (32 floats) of a tile staged in shared memory as 8 float4 per chunk, the float4
// index swizzled by the chunk (slot i ^ (cl & 7)): the block's coalesced stores and every
// quarter-warp's per-lane chunk reads (lanes cl .. cl + 7) then hit distinct banks.
__device__ __forceinline__ int x_slot(int cl, int i) { return cl * 8 + (i ^ (cl & 7)); }

// chunk_dot with the chunk's x staged in shared memory (chunk cl of xk, x_slot): the same FMAs in
// the same order, so the same sum bit for bit.
__device__ __forceinline__ float staged_chunk_dot(const float (&v)[kChunk], const float4* xk, int cl, int n) {
  return ordered_dot(
      v, n, true, [xk, cl](int i) { return xk[x_slot(cl, i)]; },
      [xk, cl](int i) {
        const float4 xv = xk[x_slot(cl, i >> 2)];
        return (i & 3) == 0 ? xv.x : (i & 3) == 1 ? xv.y : (i & 3) == 2 ? xv.z : xv.w;
      });
}

// The tiled layout (gpu/gemv_tiled.h, GemvBatch::w_tiled) in this kernel: each tile of a row
// (whole units of 256 elements: Tile<T>::kBytes is 8 Q4_K, Q5_K or Q6_K, 12 Q3_K, 16 Q2_K or 8 MXFP4 units)
// is gathered from the row's chunks into the warp's staging slot in the GGUF order, so that
// tile_chunk reads it unchanged and every sum is the GGUF layout's bit for bit. A lane loads whole
// words of the chunks (tiled_row_word: 16 bytes, 4, or Q6_K's and Q3_K's 2-byte d) and stores their
// 4-byte pieces (two 2-byte stores in Q6_K's and Q3_K's 2-aligned units of 210 and 110 bytes) where
// tiled_piece_dest says.
// MXFP4's qs runs start at odd bytes of a GGUF block (17 bytes), so its blocks are staged padded to 20 bytes
// (scale, 3 unused bytes, 16 qs bytes: tile_chunk's MXFP4_PAD), every qs piece a 4-byte store too; only the
// scales are stored a byte at a time.
template <GgmlType T>
struct TiledRow {
  static constexpr bool kPad = T == GgmlType::MXFP4;
  static constexpr int kUnit = tiled_unit_bytes(T);
  static constexpr int kStagedUnit = kPad ? 8 * 20 : kUnit;  // a unit's bytes in the staging slot
  // Byte b of a row's unit (GGUF order) in the staging slot's unit.
  __device__ __forceinline__ static int staged(int b) {
    return kPad ? b / 17 * 20 + (b % 17 ? b % 17 + 3 : 0) : b;
  }
  static constexpr int kWordsPerUnit = tiled_row_words(T);
  static constexpr int kUnits = kUnit ? Tile<T>::kBytes / kUnit : 0;
  static constexpr int kWords = kUnits * kWordsPerUnit;
  static constexpr int kPerLane = kUnit ? (kWords + 31) / 32 : 1;
  static constexpr int kStagedGranules = (kUnits * kStagedUnit + 15) / 16;
  static_assert(kUnit == 0 || Tile<T>::kBytes % (kUnit ? kUnit : 1) == 0, "a tile is whole units");
};

// Word w of a row's unit in the tiled layout (`v`, loaded as tiled_row_word says) into the unit's
// staging in the GGUF order (TiledRow): each piece where tiled_piece_dest says. The F32 kernels'
// prefill and the tensor cores' prefill (gemm_mma_kernel) stage alike.
template <GgmlType T>
__device__ __forceinline__ void stage_tiled_word(uint8_t* unit, int w, const uint4& v) {
  using TR = TiledRow<T>;
  const uint32_t piece[4] = {v.x, v.y, v.z, v.w};
  const int n = tiled_row_word(T, 0, w).bytes / tiled_piece_bytes(T, w);
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    if (p < n) {
      uint8_t* d = unit + TR::staged(tiled_piece_dest(T, w, p));
      if (tiled_piece_bytes(T, w) == 4 && TR::kStagedUnit % 4 == 0) {
        // 4-byte aligned: units of 84 / 144 / 176 bytes, MXFP4's padded blocks' qs at 4
        *reinterpret_cast<uint32_t*>(d) = piece[p];
      } else if (tiled_piece_bytes(T, w) == 4) {
        // Q6_K's and Q3_K's units of 210 and 110 bytes: 2-byte aligned
        reinterpret_cast<uint16_t*>(d)[0] = static_cast<uint16_t>(piece[p]);
        reinterpret_cast<uint16_t*>(d)[1] = static_cast<uint16_t>(piece[p] >> 16);
      } else if (tiled_piece_bytes(T, w) == 2) {
        *reinterpret_cast<uint16_t*>(d) = static_cast<uint16_t>(v.x);  // Q6_K's and Q3_K's d
      } else {
        d[0] = static_cast<uint8_t>(v.x >> (8 * p));  // one MXFP4 scale byte
      }
    }
  }
}

// R rows per warp (R > 1 only with P = 1: the x chunk is loaded once into registers and used
// for every row).
//
// P = 1 (decode): every warp of a block has the same group and pair, hence the same x row. The
// block stages the x segment of each tile in shared memory with coalesced loads (one pass per
// block instead of each lane reading its own 128-byte chunk, 32 different cache lines per warp
// load: on the H200 that per-element x traffic, not the weights, bounded v2 at 0.10-0.33 of
// D2D bandwidth, the same time per launch for every type), so the warps of a block advance tile
// by tile together (__syncthreads). The arithmetic and its order are unchanged.
//
// TILED: the matrices are in the tiled layout (TiledRow); rows are then whole tiles of 16 and
// ne0 whole units (check_tiled).
// (TILED at decode: 3 blocks an SM, 168 registers; Q4_K and Q2_K spill at 4 or 5, -Xptxas -v.)
//
// P > 1 (prefill): every warp of a block has the same group and pairs. The block stages the x
// of its P pairs 32 chunks (a "slab": one chunk a lane) at a time in shared memory, coalesced and
// swizzled as at decode, and each lane reads its chunk from there (staged_chunk_dot: the same
// FMAs in the same order, the same sums bit for bit). Each lane reading its own 128-byte chunk
// of every pair's x from global memory touched 32 cache lines a warp load and bounded the kernel
// at ~3.5 multiply-adds a clock an SM on the H200 (twenty-fifth pass). X_GLOBAL keeps that way
// (the benchmark's side by side), as do types whose weight staging leaves no room for the slab
// in 48 KiB (F32: 16 KiB of tiles).
// The staging slot of a warp's rows, in 16-byte granules (the tiled layout's padded units can
// exceed the GGUF tile).
template <GgmlType T, bool TILED>
__host__ __device__ constexpr int stage_granules() {
  using TR = TiledRow<TILED ? T : GgmlType::Q4_K>;
  return TILED && TR::kStagedGranules > Tile<T>::kGranules ? TR::kStagedGranules : Tile<T>::kGranules;
}
// Warps (rows) a block of gemv_kernel: kWarps, or at prefill with x staged kPrefillWarps where
// their weight slots and the slab fit 48 KiB (each slab the block loads then serves twice the
// rows), the host's grid and the kernel's layout alike.
constexpr int kPrefillWarps = 8;
// Whether a block of nw warps stages the x slab: prefill, not X_GLOBAL, and the warps' weight
// slots and the slab (P pairs x 256 float4) within 48 KiB of static shared memory.
template <GgmlType T, int P, int R, bool TILED, bool X_GLOBAL>
__host__ __device__ constexpr bool slab_fits(int nw) {
  return P != 1 && !X_GLOBAL && (nw * R * stage_granules<T, TILED>() + P * 256) * 16 <= 48 * 1024;
}
template <GgmlType T, int P, int R, bool TILED, bool X_GLOBAL>
__host__ __device__ constexpr int gemv_block_warps() {
  return slab_fits<T, P, R, TILED, X_GLOBAL>(kPrefillWarps) ? kPrefillWarps : kWarps;
}

template <GgmlType T, int P, int R, bool TILED = false, bool BYTEWISE = false, bool X_GLOBAL = false>
__global__ void __launch_bounds__(gemv_block_warps<T, P, R, TILED, X_GLOBAL>() * 32,
                                  P == 1 ? (TILED ? 3 : Tile<T>::kDecodeBlocks) : 1)
    gemv_kernel(GemvBatch b, GroupSizes sizes) {
  static_assert(R == 1 || P == 1, "several rows per warp only for one pair per group");
  static_assert(!TILED || tiled_unit_bytes(T) > 0,
                "the tiled layout covers Q4_K, Q5_K, Q6_K, Q3_K, Q2_K and MXFP4");
  using Tl = Tile<T>;
  using TR = TiledRow<TILED ? T : GgmlType::Q4_K>;
  constexpr bool kPadded = TILED && TR::kPad;  // MXFP4's blocks staged padded (tile_chunk)
  constexpr int kXSlots = P == 1 ? Tl::kChunks * 8 : 1;
  constexpr int kStage = stage_granules<T, TILED>();
  constexpr int NW = gemv_block_warps<T, P, R, TILED, X_GLOBAL>();
  constexpr bool kSlabX = slab_fits<T, P, R, TILED, X_GLOBAL>(NW);
  __shared__ __align__(16) uint4 stage[NW][R][kStage];
  __shared__ __align__(16) float4 xs[kXSlots];
  __shared__ __align__(16) float4 xp[kSlabX ? P : 1][kSlabX ? 256 : 1];  // a slab of every pair's x
  __shared__ const float* xrow[kSlabX ? P : 1];                          // every pair's x row
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  int64_t r0 = (static_cast<int64_t>(blockIdx.x) * NW + warp) * R;
  bool active = r0 < b.ne1;
  if constexpr (P != 1 && !kSlabX) {
    if (!active) return;  // whole warps only: this variant has no block-wide barrier
  } else if (!active) {
    r0 = b.ne1 - 1;  // a warp past the last row stages x with the block; it writes nothing
  }
  const int nr = static_cast<int>(min(static_cast<int64_t>(R), b.ne1 - r0));
  const int g = static_cast<int>(blockIdx.y);
  int j0 = 0, j1 = b.n_tok;
  if (b.grp_off) {
    j0 = b.grp_off[g];
    j1 = b.grp_off[g + 1];
    // Groups of one pair may be the tensor-core decode path's (gemv_mma.h), groups of at least
    // the minimum the tensor-core prefill's (gemm_mma_kernel).
    if (j1 - j0 < sizes.lo || j1 - j0 > sizes.hi) return;
  }
  j0 += static_cast<int>(blockIdx.z) * P;
  if (j0 >= j1) return;  // the same for the whole block
  const int nt = min(P, j1 - j0);
  const uint8_t* wg = b.w_table ? b.w_table[g] : b.w + static_cast<uint64_t>(g) * b.w_gstride;
  const uint8_t* row[R];  // TILED: the row's first chunk, and r16 its row in the chunks
  int r16[R];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int64_t r = r0 + min(rr, nr - 1);
    if constexpr (TILED) {
      row[rr] =
          wg + static_cast<uint64_t>(r / 16) * static_cast<uint64_t>(b.ne0 / 256) * tiled_chunk_bytes(T);
      r16[rr] = static_cast<int>(r % 16);
    } else {
      row[rr] = wg + static_cast<uint64_t>(r) * b.row_bytes;
      r16[rr] = 0;
    }
  }
  // Pair t's x row (pairs past nt: the last pair's).
  const auto pair_x = [&](int t) {
    const int j = j0 + min(t, nt - 1);
    const int64_t xi = b.x_row ? b.x_row[j] : j;
    return b.x + g * b.x_gstride + xi * b.x_stride;
  };
  const float* xr[P];
#pragma unroll
  for (int t = 0; t < P; ++t) xr[t] = pair_x(t);
  if constexpr (kSlabX) {
    if (threadIdx.x < P) xrow[threadIdx.x] = pair_x(static_cast<int>(threadIdx.x));
  }
  float acc[R][P];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
#pragma unroll
    for (int t = 0; t < P; ++t) acc[rr][t] = 0.0f;
  }

  const int64_t n_chunks = (b.ne0 + kChunk - 1) / kChunk;
  const int64_t n_tiles = (n_chunks + Tl::kChunks - 1) / Tl::kChunks;
  const bool x_aligned = (reinterpret_cast<uintptr_t>(xr[0]) & 15) == 0;
  // Granules of tile t of every row (its address aligned down to 16 bytes) -> pre[]; TILED: the
  // tile's words (TiledRow), word q = lane + 32 k.
  constexpr int kPre = TILED ? TR::kPerLane : Tl::kPerLane;
  uint4 pre[R][kPre] = {};
  const auto fetch = [&](int64_t t) {
    if constexpr (TILED) {
      const int64_t u0 = t * TR::kUnits;
      const int words =
          static_cast<int>(min(static_cast<int64_t>(TR::kUnits), b.ne0 / 256 - u0)) * TR::kWordsPerUnit;
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
#pragma unroll
        for (int k = 0; k < kPre; ++k) {
          const int q = lane + 32 * k;
          if (q < words) {
            const int ui = q / TR::kWordsPerUnit, w = q % TR::kWordsPerUnit;
            const TiledRowWord rw = tiled_row_word(T, r16[rr], w);
            const uint8_t* src = row[rr] + static_cast<uint64_t>(u0 + ui) * tiled_chunk_bytes(T) + rw.src;
            if (rw.bytes == 16) {
              const auto* a = reinterpret_cast<const uint4*>(src);
              pre[rr][k] = P == 1 ? __ldcs(a) : __ldg(a);
            } else if (rw.bytes == 4) {
              const auto* a = reinterpret_cast<const unsigned int*>(src);
              pre[rr][k].x = P == 1 ? __ldcs(a) : __ldg(a);
            } else {  // Q6_K's and Q3_K's d
              const auto* a = reinterpret_cast<const unsigned short*>(src);
              pre[rr][k].x = P == 1 ? __ldcs(a) : __ldg(a);
            }
          }
        }
      }
    } else {
      const uint64_t start = static_cast<uint64_t>(t) * Tl::kBytes;
      const uint64_t left = b.row_bytes - start;
      const uint64_t len =
          left < static_cast<uint64_t>(Tl::kBytes) ? left : static_cast<uint64_t>(Tl::kBytes);
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
        const uintptr_t p = reinterpret_cast<uintptr_t>(row[rr] + start);
        const uint4* a = reinterpret_cast<const uint4*>(p & ~uintptr_t{15});
        const int n_gran = static_cast<int>(((p & 15) + len + 15) / 16);
#pragma unroll
        for (int k = 0; k < Tl::kPerLane; ++k) {
          const int gi = lane + 32 * k;
          if (gi < n_gran) pre[rr][k] = P == 1 ? __ldcs(a + gi) : __ldg(a + gi);  // decode: read once, stream
        }
      }
    }
  };
  fetch(0);
  for (int64_t t = 0; t < n_tiles; ++t) {
    if constexpr (P == 1) {
      __syncthreads();                              // every warp is done with the previous tile's x
      const int64_t e0 = t * Tl::kChunks * kChunk;  // first element of the tile
      for (int k = static_cast<int>(threadIdx.x); k < kXSlots; k += NW * 32) {
        const int64_t e = e0 + 4 * k;  // float4 k of the tile, in element order
        float4 f;
        if (x_aligned && e + 4 <= b.ne0) {
          f = __ldg(reinterpret_cast<const float4*>(xr[0] + e));
        } else {
          f.x = e + 0 < b.ne0 ? __ldg(xr[0] + e + 0) : 0.0f;
          f.y = e + 1 < b.ne0 ? __ldg(xr[0] + e + 1) : 0.0f;
          f.z = e + 2 < b.ne0 ? __ldg(xr[0] + e + 2) : 0.0f;
          f.w = e + 3 < b.ne0 ? __ldg(xr[0] + e + 3) : 0.0f;
        }
        xs[x_slot(k >> 3, k & 7)] = f;
      }
    }
    __syncwarp();  // every lane is done with the previous tile
#pragma unroll
    for (int rr = 0; rr < R; ++rr) {
      if constexpr (TILED) {
        uint8_t* st = reinterpret_cast<uint8_t*>(stage[warp][rr]);
#pragma unroll
        for (int k = 0; k < kPre; ++k) {
          const int q = lane + 32 * k;
          if (q < TR::kWords) {  // (past the row's last unit: bytes nothing reads)
            const int w = q % TR::kWordsPerUnit;
            uint8_t* unit = st + q / TR::kWordsPerUnit * TR::kStagedUnit;
            stage_tiled_word<T>(unit, w, pre[rr][k]);
          }
        }
      } else {
#pragma unroll
        for (int k = 0; k < Tl::kPerLane; ++k) {
          const int gi = lane + 32 * k;
          if (gi < Tl::kGranules) stage[warp][rr][gi] = pre[rr][k];
        }
      }
    }
    if constexpr (P == 1) {
      __syncthreads();  // the tile's x is staged
    } else {
      __syncwarp();
    }
    int tile[R];
#pragma unroll
    for (int rr = 0; rr < R; ++rr) {
      tile[rr] = TILED
                     ? 0  // gathered from offset 0
                     : static_cast<int>(
                           reinterpret_cast<uintptr_t>(row[rr] + static_cast<uint64_t>(t) * Tl::kBytes) & 15);
    }
    if (t + 1 < n_tiles) fetch(t + 1);  // in flight while this tile is computed
#pragma unroll
    for (int i = 0; i < Tl::kLaneChunks; ++i) {
      const int cl = lane + 32 * i;
      const int64_t c = t * Tl::kChunks + cl;
      if constexpr (kSlabX) {
        const int64_t c0 = t * Tl::kChunks + 32 * i;  // the slab's first chunk, the same for the block
        if (c0 >= n_chunks) break;
        __syncthreads();  // every warp is done with the previous slab (and xrow is written)
        const int64_t e0 = c0 * kChunk;
        // Float4 f of pair k's slab, in element order (pairs past nt stage the last pair's x
        // again); a few in flight a thread, the pair's row from shared memory (registers: a
        // fully unrolled loop took 2 blocks an SM instead of 3).
#pragma unroll 4
        for (int q = static_cast<int>(threadIdx.x); q < P * 256; q += NW * 32) {
          const int k = q >> 8, f = q & 255;
          const float* xk = xrow[k];
          const int64_t e = e0 + 4 * f;
          float4 x4;
          if ((reinterpret_cast<uintptr_t>(xk) & 15) == 0 && e + 4 <= b.ne0) {
            x4 = __ldg(reinterpret_cast<const float4*>(xk + e));
          } else {
            x4.x = e + 0 < b.ne0 ? __ldg(xk + e + 0) : 0.0f;
            x4.y = e + 1 < b.ne0 ? __ldg(xk + e + 1) : 0.0f;
            x4.z = e + 2 < b.ne0 ? __ldg(xk + e + 2) : 0.0f;
            x4.w = e + 3 < b.ne0 ? __ldg(xk + e + 3) : 0.0f;
          }
          xp[k][x_slot(f >> 3, f & 7)] = x4;
        }
        __syncthreads();  // the slab is staged
        if (c < n_chunks) {
          const int n = chunk_len(b.ne0, c);
          float v[kChunk];
          tile_chunk<T, kPadded, BYTEWISE>(reinterpret_cast<const uint8_t*>(stage[warp][0]), tile[0], cl, n,
                                           v);
#pragma unroll
          for (int k = 0; k < P; ++k) {
            if (k < nt) acc[0][k] += staged_chunk_dot(v, xp[k], lane, n);
          }
        }
      } else if (c < n_chunks) {  // the other variants: x from registers (decode) or global memory
        const int n = chunk_len(b.ne0, c);
        float v[kChunk];
        if constexpr (P != 1) {
          tile_chunk<T, kPadded, BYTEWISE>(reinterpret_cast<const uint8_t*>(stage[warp][0]), tile[0], cl, n,
                                           v);
#pragma unroll
          for (int k = 0; k < P; ++k) {
            if (k < nt) acc[0][k] += chunk_dot(v, xr[k] + c * kChunk, n);
          }
        } else {
          float xv[kChunk];  // zeros past n (staged that way)
#pragma unroll
          for (int q = 0; q < kChunk / 4; ++q) {
            const float4 f = xs[x_slot(cl, q)];
            xv[4 * q + 0] = f.x;
            xv[4 * q + 1] = f.y;
            xv[4 * q + 2] = f.z;
            xv[4 * q + 3] = f.w;
          }
#pragma unroll
          for (int rr = 0; rr < R; ++rr) {
            acc[rr][0] += decode_chunk_dot<T, kPadded, BYTEWISE>(
                reinterpret_cast<const uint8_t*>(stage[warp][rr]), tile[rr], cl, n, xv);
          }
        }
      }
    }
  }
  if (!active) return;
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
#pragma unroll
    for (int t = 0; t < P; ++t) {
      float s = acc[rr][t];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0 && t < nt && rr < nr) {
        b.y[g * b.y_gstride + static_cast<int64_t>(j0 + t) * b.y_stride + r0 + rr] = s;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Prefill on the tensor cores (forty-third session, built without a GPU machine; first run and on
// by default since the forty-fourth, gpu/kernels.h set_gemv_prefill_mma): groups of at least
// gemv_prefill_mma_min_pairs(type, ne0, ne1) pairs (by default gemm_mma_layout.h's
// prefill_mma_default_min_pairs) of the block types (every type but F32, F16 and BF16).
//
// A block owns 64 rows (4 warps of 16: the m16 tile of mma.m16n8k16) and kMmaPairs pairs of one
// group, and walks the rows in units of 256 elements (a K-quant super-block; eight 32-element
// blocks). Per unit:
// - the block splits its pairs' x into f16 halves, per (pair, 32-element chunk) with one power
//   of two 2^s (max |x| 2^s in [2^14, 2^15)): hi = f16(x 2^s), lo = f16(x 2^s - hi), 22
//   significant bits, stored in shared memory as the mma's B fragments (an mma's columns 2i and
//   2i + 1 are pair i's hi and lo: four pairs an mma);
// - each warp stages its 16 rows' bytes of the unit (GGUF or tiled layout: the F32 kernel's
//   TiledRow gather, so both layouts give the same sums bit for bit), dequantizes each (row,
//   chunk) with tile_chunk (core's dequantize_row values, bit for bit) and splits it the same
//   way with 2^e per (row, chunk) into shared memory as the A fragments (ldmatrix);
// - per chunk and four pairs: 4 mmas (W's hi and lo, the chunk's two 16-element halves) into a
//   zeroed f32 D, then acc += (D_hi + D_lo) 2^-e 2^-s (powers of two: exact unless the result
//   leaves float's range).
// The f16 products are exact and summed in f32. Against the exact dot product a pair loses W
// and x to 22 bits each (|error| <= 2^-21 |w x| a product) and the f32 sums, inside
// gpu_ops_test's kDotRel, for elements at least ~2^-17 of their chunk's largest |value|;
// smaller ones keep an absolute 2^-39 or so of that largest value (lo is then an f16
// subnormal), as the decode path's f16 halves do per 16-element granule. So a product of an
// activation outlier (~2^17 times its chunk's others) with a zero weight costs the chunk's other
// products precision the F32 kernels keep. The scaling (D 2^-e) 2^-s can leave float's range
// only when the true sum nearly does (|w| above ~2^108, or a sum below ~2^-126 2^s).
// A pair's sums depend on its own x and the rows alone, never on the other pairs of its group or
// how groups are batched (each mma column is its own pair's).
constexpr int kMmaPairs = 32;           // pairs a block: 8 groups of four (one mma's columns)
static_assert(kPrefillExpertKSplitMaxPairs == kMmaPairs, "the expert split rule's groups: one pair tile");
constexpr int kMmaWarpsP = 4;           // warps a block, 16 rows each
constexpr int kAStride = kGemmAStride;  // halves a row of a warp's A staging (gpu/gemm_mma_layout.h)

// XC: chunks of x a block stages at a time, the unit's 8 (as the forty-third session built it) or
// half of them (forty-seventh: 16 KiB less shared memory a block, so a multiprocessor holds 4 blocks
// where it held 3; the same sums bit for bit; set_gemv_prefill_mma_half_x).
// QA: the A fragments made from the quants (forty-eighth session; gpu/gemm_quant_a.h Qa<T>,
// gpu/gemm_mma_layout.h "Q4_K's A fragments from its quants", set_gemv_prefill_quant_a): x's sums for the
// minimums staged beside x (kQaSums), no A staging.
template <GgmlType T>
constexpr bool kPrefillQuantA = prefill_quant_a_covers(T);  // gpu/gemm_quant_a.h
template <GgmlType T>
constexpr int kQaSums = qa_sums(T);
template <GgmlType T, int XC = 8, bool QA = false>
struct PrefillUnit {
  static constexpr int kGgufBytes = 256 / BlockOf<T>::kElems * BlockOf<T>::kBytes;  // a row's unit
  // TiledRow<T>::kStagedUnit (MXFP4's blocks padded to 20 bytes), without instantiating it
  static constexpr int kTiledBytes = T == GgmlType::MXFP4 ? 8 * 20 : tiled_unit_bytes(T);
  static constexpr int kMaxBytes = kGgufBytes > kTiledBytes ? kGgufBytes : kTiledBytes;
  // A staged row: the unit, one granule of misalignment and one of slack (tile_chunk reads a word
  // past what it uses).
  static constexpr int kRowGranules = (kMaxBytes + 15) / 16 + 2;
  static constexpr int kRowBytes = 16 * kRowGranules;
  static constexpr int kTiledWords = tiled_row_words(T);
  static constexpr int kPreGguf = (16 * kRowGranules + 31) / 32;
  static constexpr int kPreTiled = (16 * kTiledWords + 31) / 32;
  static constexpr int kPre = kPreGguf > kPreTiled ? kPreGguf : kPreTiled;
  static constexpr int kXBytes = XC * kGemmXsChunkWords * 4 + 8 * kMmaPairs * 4 + kMmaPairs * 8 +
                                 (QA ? kQaSums<T> * kMmaPairs * 4 : 0);  // QA: x's sums [pair][kQaSums]
  static_assert(XC == 8 || XC == 4, "x staged a whole unit or half of it at a time");
  static_assert(!QA || kPrefillQuantA<T>, "A from the quants: the K-quants and MXFP4");
  static_assert(kGemmXsChunkWords >= 2 * kMmaPairs * 16, "a chunk's B staging holds every pair's two rows");
  static_assert(kXBytes % 16 == 0, "the warps' regions start 16-byte aligned");
  static constexpr int kWarpBytes = QA ? 16 * kRowBytes : 16 * kRowBytes + 2 * 16 * kAStride * 2 + 32 * 4;
  static constexpr int kSmemBytes = kXBytes + kMmaWarpsP * kWarpBytes;
};

// gemm_mma_layout.h's gemm_split_exponent of a float.
__device__ __forceinline__ int split_exponent(float mx) { return gemm_split_exponent(__float_as_uint(mx)); }
// The 2N values of v (times 2^e) as f16 halves: word i of hi and lo holds elements 2i, 2i + 1.
// A non-finite element makes its chunk's sums NaN (hi - inf, and the cross products' 0 x inf),
// where the F32 kernels may give +-inf: a pair's sums are non-finite either way, and non-finite
// logits stop the reply with an error (core/session.cpp).
template <int N>
__device__ __forceinline__ void split_halves(const float (&v)[2 * N], float s, uint32_t (&hi)[N],
                                             uint32_t (&lo)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const float a = v[2 * i] * s, c = v[2 * i + 1] * s;
    const __half2 h = __floats2half2_rn(a, c);
    const float2 hf = __half22float2(h);
    const __half2 l = __floats2half2_rn(a - hf.x, c - hf.y);  // exact differences
    hi[i] = *reinterpret_cast<const uint32_t*>(&h);
    lo[i] = *reinterpret_cast<const uint32_t*>(&l);
  }
}
template <int N>
__device__ __forceinline__ float max_abs(const float (&v)[N]) {
  float mx = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) mx = fmaxf(mx, fabsf(v[i]));
  return mx;
}
__device__ __forceinline__ float pow2f(int e) { return __int_as_float((e + 127) << 23); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
}
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint2 bf) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(bf.x), "r"(bf.y));
}

// Qa<T> where the kernel takes A from the quants, else nothing it uses.
struct QaNone {
  struct Head {};
};
template <GgmlType T, bool QA>
struct QaSelT {
  using type = QaNone;
};
template <GgmlType T>
struct QaSelT<T, true> {
  using type = Qa<T>;
};
template <GgmlType T, bool QA>
using QaSel = typename QaSelT<T, QA>::type;

// A prefill launch split along its rows' units (forty-ninth session: dense launches; fiftieth: expert
// launches; gpu/kernels.h set_gemv_prefill_k_split, set_gemv_prefill_expert_k_split): `splits` blocks share
// each (rows, pair tile), each summing its own range of units into part[split][c][ne1], c the pair's row of
// the split groups' pairs (a dense launch: its token; an expert launch: the pairs of the split groups before
// its group, k_split_pairs_before, then its place in the group); k_split_sum_kernel then adds the splits in
// order (split 0 first), so the sums do not depend on the blocks' timing. An expert launch's group of more
// than max_pairs pairs is not split: its split 0 computes every unit into y, the other splits return.
// splits 1: no split (part unused).
struct KSplit {
  int splits = 1;
  int max_pairs = INT_MAX;
  float* part = nullptr;
  int64_t part_stride = 0;  // floats from one split's partial sums to the next's (split pairs x ne1)
};
// The pairs of the groups before `grp` that the launch splits (min_pairs .. max_pairs pairs): each lane
// some of the groups, then the warp's sum (every lane of the warp calls it).
__device__ int64_t k_split_pairs_before(const int32_t* grp_off, int grp, int min_pairs, int max_pairs) {
  int64_t n = 0;
  for (int g = static_cast<int>(threadIdx.x) % 32; g < grp; g += 32) {
    const int32_t k = grp_off[g + 1] - grp_off[g];
    if (k >= min_pairs && k <= max_pairs) n += k;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) n += __shfl_xor_sync(0xFFFFFFFFu, n, o);
  return n;
}
// grid: (x over the largest split group's pairs x ne1, n_groups), blocks of whole warps; grp_off null: one
// group of n_tok pairs.
__global__ void k_split_sum_kernel(KSplit ks, const int32_t* grp_off, int32_t n_tok, int min_pairs,
                                   int64_t ne1, float* y, int64_t y_stride, int64_t y_gstride) {
  int64_t j0 = 0, j1 = n_tok, c0 = 0;
  if (grp_off) {
    j0 = grp_off[blockIdx.y];
    j1 = grp_off[blockIdx.y + 1];
    if (j1 - j0 < min_pairs || j1 - j0 > ks.max_pairs) return;  // not this launch's, or not split
    c0 = k_split_pairs_before(grp_off, static_cast<int>(blockIdx.y), min_pairs, ks.max_pairs);
  }
  const int64_t n = (j1 - j0) * ne1;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t at = c0 * ne1 + i;
    float sum = ks.part[at];
    for (int k = 1; k < ks.splits; ++k) sum += ks.part[k * ks.part_stride + at];
    y[blockIdx.y * y_gstride + (j0 + i / ne1) * y_stride + i % ne1] = sum;
  }
}

// XC == 4, and QA (no A staging: 46 KiB at XC == 8), ask for 4 blocks a multiprocessor (at most 128
// registers a thread), which their shared memory allows; XC == 8 without QA (3 blocks by its shared
// memory) leaves the registers to the compiler. Q6_K with QA asks for 3 (168 registers: at 128 its
// 210-byte rows' loads in flight and its factors per mma spilled 264 bytes).
// KS: the K split's instantiation (the whole unit; dense launches in the GGUF layout, expert launches in
// either); without it the split folds away (splits 1), so the other launches run the code they ran before it.
// RC (tiled, with QA; set_gemv_prefill_tiled_recompute): each unit's fetch and staging compute their words'
// addresses anew (an empty asm hides the lane's word index from the compiler), where without it ptxas keeps
// every word's source and destination offsets in registers across the loop (they depend on the lane alone)
// and spills: Q6_K tiled 132 bytes at the whole unit, 424 at half; Q5_K 128 / 240, Q3_K 0 / 180 (sm_90,
// -Xptxas -v; RC: Q6_K 36 / 8, Q5_K 0 / 56, Q3_K 0 / 0, MXFP4 68 -> 0 at half; but Q4_K's whole unit 0 -> 12,
// and the K split's Q2_K 0 -> 24, Q4_K 32 -> 24 / 44 loads). The same addresses, the same sums bit for bit.
template <GgmlType T, bool TILED, int XC, bool QA = false, bool KS = false, bool RC = false>
__global__ void __launch_bounds__(kMmaWarpsP * 32, QA&& T == GgmlType::Q6_K ? 3
                                                   : XC == 4 || QA          ? 4
                                                                            : 1)
    gemm_mma_kernel(GemvBatch b, int min_pairs, KSplit ks) {
  using PU = PrefillUnit<T, XC, QA>;
  using TR = TiledRow<TILED ? T : GgmlType::Q4_K>;
  constexpr bool kPadded = TILED && TR::kPad;  // MXFP4's tiled blocks staged padded (tile_chunk)
  static_assert(!TILED || TR::kStagedUnit == PU::kTiledBytes, "a staged row holds the tiled unit");
  extern __shared__ __align__(16) uint4 gemm_smem[];
  uint32_t* xs = reinterpret_cast<uint32_t*>(gemm_smem);               // [XC][kGemmXsChunkWords]
  float* xsc = reinterpret_cast<float*>(xs + XC * kGemmXsChunkWords);  // [8][kMmaPairs]: 2^-s
  const float** xrow = reinterpret_cast<const float**>(xsc + 8 * kMmaPairs);
  float* xsum = reinterpret_cast<float*>(xrow + kMmaPairs);  // QA: [kMmaPairs][kQaSums<T>] sums of x
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  uint8_t* raw = reinterpret_cast<uint8_t*>(gemm_smem) + PU::kXBytes + warp * PU::kWarpBytes;
  __half* ahi = reinterpret_cast<__half*>(raw + 16 * PU::kRowBytes);
  __half* alo = ahi + 16 * kAStride;
  float* ea = reinterpret_cast<float*>(alo + 16 * kAStride);  // [16 rows][2 chunks]: 2^-e

  const int grp = static_cast<int>(blockIdx.y);
  int j0 = 0, j1 = b.n_tok;
  if (b.grp_off) {
    j0 = b.grp_off[grp];
    j1 = b.grp_off[grp + 1];
    // Smaller groups: the decode paths (single pairs, gemv_mma.h's rule) or the F32 kernels.
    if (j1 - j0 < min_pairs) return;
  }
  const int g_first = j0;  // the group's first pair
  // K split (KSplit): blockIdx.z = pair tile * splits + the split, which takes units [u_begin, u_end) of
  // every row and writes its partial sums to ks.part; a group of more than ks.max_pairs pairs: split 0
  // alone, every unit, into y.
  static_assert(!KS || XC == 8, "the K split: the whole unit");
  const int splits = KS ? ks.splits : 1;
  const int own = KS && j1 - j0 > ks.max_pairs ? 1 : splits;  // this group's splits
  const int split = KS ? static_cast<int>(blockIdx.z) % splits : 0;
  if (split >= own) return;
  j0 += static_cast<int>(blockIdx.z) / splits * kMmaPairs;
  if (j0 >= j1) return;  // the same for the whole block
  const int nt = min(kMmaPairs, j1 - j0);
  const int np4 = (nt + 3) & ~3;  // pairs staged: whole mmas' columns (those from nt on zero)
  if (threadIdx.x < kMmaPairs) {
    const int j = j0 + min(static_cast<int>(threadIdx.x), nt - 1);
    const int64_t xi = b.x_row ? b.x_row[j] : j;
    xrow[threadIdx.x] = b.x + grp * b.x_gstride + xi * b.x_stride;
  }
  const uint8_t* wg = b.w_table ? b.w_table[grp] : b.w + static_cast<uint64_t>(grp) * b.w_gstride;
  const int64_t rbase = (static_cast<int64_t>(blockIdx.x) * kMmaWarpsP + warp) * 16;  // the warp's rows
  // A warp past the last row stages and computes the last rows again (it writes nothing): every
  // warp takes part in the block's barriers.
  const int64_t rclamp = min(rbase, ((b.ne1 - 1) / 16) * 16);
  const auto row_of = [&](int r16) { return min(rclamp + r16, b.ne1 - 1); };
  const int64_t n_chunks = (b.ne0 + kChunk - 1) / kChunk;
  const int64_t n_units = prefill_mma_units(b.ne0);
  const int64_t split_units = (n_units + own - 1) / own;
  const int64_t u_begin = KS ? min(n_units, static_cast<int64_t>(split) * split_units) : 0;
  const int64_t u_end = KS ? min(n_units, u_begin + split_units) : n_units;

  // The warp's 16 rows' bytes of unit u: into pre[] (global loads), then into raw (staging).
  uint4 pre[PU::kPre] = {};
  const auto gguf_src = [&](int r16, int64_t u) {
    return wg + static_cast<uint64_t>(row_of(r16)) * b.row_bytes + static_cast<uint64_t>(u) * PU::kGgufBytes;
  };
  const auto fetch = [&](int64_t u) {
    if constexpr (TILED) {
      const uint8_t* chunk = wg + (static_cast<uint64_t>(rclamp / 16) * static_cast<uint64_t>(b.ne0 / 256) +
                                   static_cast<uint64_t>(u)) *
                                      tiled_chunk_bytes(T);
#pragma unroll
      for (int k = 0; k < PU::kPre; ++k) {
        int q = lane + 32 * k;
        if constexpr (RC) asm volatile("" : "+r"(q));  // (recomputed each unit: see RC above)
        if (q < 16 * PU::kTiledWords) {
          const TiledRowWord rw = tiled_row_word(T, q / PU::kTiledWords, q % PU::kTiledWords);
          const uint8_t* src = chunk + rw.src;
          if (rw.bytes == 16) {
            pre[k] = __ldg(reinterpret_cast<const uint4*>(src));
          } else if (rw.bytes == 4) {
            pre[k].x = __ldg(reinterpret_cast<const unsigned int*>(src));
          } else {  // Q6_K's and Q3_K's d
            pre[k].x = __ldg(reinterpret_cast<const unsigned short*>(src));
          }
        }
      }
    } else {
      const uint64_t left = b.row_bytes - static_cast<uint64_t>(u) * PU::kGgufBytes;
      const int len = static_cast<int>(left < static_cast<uint64_t>(PU::kGgufBytes) ? left : PU::kGgufBytes);
#pragma unroll
      for (int k = 0; k < PU::kPre; ++k) {
        const int q = lane + 32 * k;
        if (q < 16 * PU::kRowGranules) {
          const int r16 = q / PU::kRowGranules, gi = q % PU::kRowGranules;
          const uintptr_t p = reinterpret_cast<uintptr_t>(gguf_src(r16, u));
          if (gi < static_cast<int>(((p & 15) + static_cast<uintptr_t>(len) + 15) / 16)) {
            pre[k] = __ldg(reinterpret_cast<const uint4*>(p & ~uintptr_t{15}) + gi);
          }
        }
      }
    }
  };
  const auto stage = [&] {
    if constexpr (TILED) {
#pragma unroll
      for (int k = 0; k < PU::kPre; ++k) {
        int q = lane + 32 * k;
        if constexpr (RC) asm volatile("" : "+r"(q));
        if (q < 16 * PU::kTiledWords) {
          const int w = q % PU::kTiledWords;
          uint8_t* unit = raw + q / PU::kTiledWords * PU::kRowBytes;
          stage_tiled_word<T>(unit, w, pre[k]);
        }
      }
    } else {
#pragma unroll
      for (int k = 0; k < PU::kPre; ++k) {
        const int q = lane + 32 * k;
        if (q < 16 * PU::kRowGranules) reinterpret_cast<uint4*>(raw)[q] = pre[k];
      }
    }
  };

  float acc[kMmaPairs / 4][2];
#pragma unroll
  for (int q = 0; q < kMmaPairs / 4; ++q) acc[q][0] = acc[q][1] = 0.0f;
  const int g = lane / 4, t = lane % 4;
  // QA: what the unit's super-block of the lane's rows g and g + 8 shares (Qa<T>::head).
  using QAT = std::conditional_t<T == GgmlType::MXFP4 && kPadded, QaMxfp4<true>, QaSel<T, QA>>;
  typename QAT::Head qhead[2] = {};
  if (u_begin < u_end) fetch(u_begin);  // (a split past the last unit adds nothing: its sums are 0)
  for (int64_t u = u_begin; u < u_end; ++u) {
    const int nch = static_cast<int>(min(int64_t{8}, n_chunks - 8 * u));
    for (int h = 0; h < 8 / XC && XC * h < nch; ++h) {  // the unit's chunks XC at a time
      __syncthreads();  // every warp is done with the previous chunks' x (and xrow is written)
      // x: XC == 8: one pair a warp at a time, its 8 chunks of the unit in 4 lanes each (lane 4 c +
      // l holds elements 8 l .. 8 l + 7 of chunk c): a warp loads 1 KiB of the pair's row, a chunk's
      // max takes two shuffles, and each store instruction's 32 words fall at most two to a bank
      // (kGemmXsChunkWords; one item a thread with its 16 stores a row had them 16 to a bank).
      // XC == 4: two pairs a warp at a time, lanes 0-15 the first, 16-31 the second, 4 chunks each.
      constexpr int kPairsAtOnce = 8 / XC;
      for (int p0 = kPairsAtOnce * warp; p0 < np4; p0 += kPairsAtOnce * kMmaWarpsP) {
        const int p = p0 + (XC == 8 ? 0 : lane >> 4);  // (np4 is even: both pairs exist)
        const int cl = (lane >> 2) & (XC - 1), c = XC * h + cl, l = lane & 3;
        const int n = c < nch && p < nt ? chunk_len(b.ne0, 8 * u + c) : 0;
        const float* xp = xrow[p] + (8 * u + c) * kChunk + 8 * l;
        float v[8];
        if (n == kChunk && (reinterpret_cast<uintptr_t>(xp) & 15) == 0) {
          const float4 f0 = __ldg(reinterpret_cast<const float4*>(xp));
          const float4 f1 = __ldg(reinterpret_cast<const float4*>(xp) + 1);
          v[0] = f0.x, v[1] = f0.y, v[2] = f0.z, v[3] = f0.w;
          v[4] = f1.x, v[5] = f1.y, v[6] = f1.z, v[7] = f1.w;
        } else {
#pragma unroll
          for (int i = 0; i < 8; ++i) v[i] = 8 * l + i < n ? __ldg(xp + i) : 0.0f;
        }
        float mx = max_abs(v);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // QA: one power of two for both chunks of a group (their sums share an mma accumulator)
        if constexpr (QA) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
        const int e = split_exponent(mx);
        uint32_t hi[4], lo[4];  // the chunk's natural words 4 l .. 4 l + 3
        split_halves(v, pow2f(e), hi, lo);
        if (l == 0) xsc[c * kMmaPairs + p] = pow2f(-e);
        uint32_t* rc = xs + cl * kGemmXsChunkWords;
        if constexpr (QA) {
          if constexpr (kQaSums<T> != 0) {  // the minimums' sums (types without minimums take none)
            float sum = 0.0f;               // the chunk's sum of x (F32, the lane's 8 then the quad's)
#pragma unroll
            for (int i = 0; i < 8; ++i) sum += v[i];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            if constexpr (kQaSums<T> == 16) {
              if ((l & 1) == 0)
                xsum[p * 16 + 2 * c + (l >> 1)] = sum;  // lanes 0, 1: elements 0-15; 2, 3: 16-31
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            if constexpr (kQaSums<T> == 8) {
              if (l == 0) xsum[p * 8 + c] = sum;
            }
          }
          // natural words 4 l .. 4 l + 3 at gemm_qa_xs_word: four consecutive words
          *reinterpret_cast<uint4*>(rc + gemm_qa_xs_word(2 * p, 4 * l)) =
              make_uint4(hi[0], hi[1], hi[2], hi[3]);
          *reinterpret_cast<uint4*>(rc + gemm_qa_xs_word(2 * p + 1, 4 * l)) =
              make_uint4(lo[0], lo[1], lo[2], lo[3]);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            // natural word nw at (w, tt, i): gemm_b_natural_word's inverse
            const int nw = 4 * l + j, w = nw >> 3, i = (nw >> 2) & 1, tt = nw & 3;
            rc[gemm_xs_word(2 * p, w, tt) + i] = hi[j];
            rc[gemm_xs_word(2 * p + 1, w, tt) + i] = lo[j];
          }
        }
      }
      if (h == 0) {
        __syncwarp();  // every lane is done with raw (the previous unit)
        stage();
        if (u + 1 < u_end) fetch(u + 1);  // in flight while this unit is computed
      }
      __syncthreads();  // x and the warp's rows are staged
      if constexpr (QA) {
        const uint8_t* qrow[2];  // the unit's bytes of rows g and g + 8 in the warp's staging
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int r16 = g + 8 * r;
          const int tile = TILED ? 0 : static_cast<int>(reinterpret_cast<uintptr_t>(gguf_src(r16, u)) & 15);
          qrow[r] = raw + r16 * PU::kRowBytes + tile;
        }
        if (h == 0) {
#pragma unroll
          for (int r = 0; r < 2; ++r) qhead[r] = QAT::head(qrow[r]);
        }
        constexpr int kS = QAT::kScaleOnD;
#pragma unroll
        for (int ci = 0; ci < XC / 2; ++ci) {
          // Group cp: chunks 2 cp, 2 cp + 1. (No 2 cp < nch test: only MXFP4 has partial units, where a
          // chunk past the row's end stages x as zeros and its A and scale from finite staged bytes, so
          // it adds zeros.)
          const int cp = XC / 2 * h + ci;
          // A of both chunks hb and halves w: registers a0 / a2 row g, a1 / a3 row g + 8
          // (A register r + 2 k of lane t: elements 16 w + 4 t + 2 k, + 1 of the half); the rows' factors of
          // the sums (f) and the minimums' (mf).
          uint32_t a[2][2][4];
          float f[2][2][2], mf[2][2][2];
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            uint32_t ar[2][2][2];
            QAT::group(qhead[r], qrow[r], cp, t, ar, f[r], mf[r]);
#pragma unroll
            for (int hb = 0; hb < 2; ++hb) {
#pragma unroll
              for (int w = 0; w < 2; ++w) a[hb][w][r] = ar[hb][w][0], a[hb][w][r + 2] = ar[hb][w][1];
            }
          }
          const int cx = 2 * cp - XC * h;  // chunk 2 cp's place in the staged x
          const uint32_t* rx[2] = {xs + cx * kGemmXsChunkWords, xs + (cx + 1) * kGemmXsChunkWords};
#pragma unroll
          for (int q = 0; q < kMmaPairs / 4; ++q) {
            if (4 * q < nt) {
              const int p = 4 * q + t;
              const float sx = xsc[2 * cp * kMmaPairs + p];
              if constexpr (kS == 0) {  // the scales in A: one accumulator for the group
                float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int hb = 0; hb < 2; ++hb) {
#pragma unroll
                  for (int w = 0; w < 2; ++w) {
                    mma_f16(d, a[hb][w],
                            *reinterpret_cast<const uint2*>(rx[hb] + gemm_xs_word(8 * q + g, w, t)));
                  }
                }
                acc[q][0] = __fmaf_rn((d[0] + d[1]) * f[0][0][0], sx, acc[q][0]);
                acc[q][1] = __fmaf_rn((d[2] + d[3]) * f[1][0][0], sx, acc[q][1]);
              } else {  // a factor per mma (16) or per chunk (32)
#pragma unroll
                for (int hb = 0; hb < 2; ++hb) {
                  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                  for (int w = 0; w < 2; ++w) {
                    mma_f16(d, a[hb][w],
                            *reinterpret_cast<const uint2*>(rx[hb] + gemm_xs_word(8 * q + g, w, t)));
                    if (kS == 16 || w == 1) {
                      const int fw = kS == 16 ? w : 0;
                      acc[q][0] = __fmaf_rn((d[0] + d[1]) * f[0][hb][fw], sx, acc[q][0]);
                      acc[q][1] = __fmaf_rn((d[2] + d[3]) * f[1][hb][fw], sx, acc[q][1]);
                      d[0] = d[1] = d[2] = d[3] = 0.0f;
                    }
                  }
                }
              }
              if constexpr (kQaSums<T> == 8) {  // - dmin m X per chunk
                const float2 xm = *reinterpret_cast<const float2*>(xsum + p * 8 + 2 * cp);
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                  acc[q][r] = __fmaf_rn(-mf[r][0][0], xm.x, __fmaf_rn(-mf[r][1][0], xm.y, acc[q][r]));
                }
              } else if constexpr (kQaSums<T> == 16) {  // per 16 elements
                const float4 xm = *reinterpret_cast<const float4*>(xsum + p * 16 + 4 * cp);
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                  acc[q][r] = __fmaf_rn(
                      -mf[r][0][0], xm.x,
                      __fmaf_rn(-mf[r][0][1], xm.y,
                                __fmaf_rn(-mf[r][1][0], xm.z, __fmaf_rn(-mf[r][1][1], xm.w, acc[q][r]))));
                }
              }
            }
          }
        }
      } else {
        for (int cp = XC / 2 * h; cp < XC / 2 * (h + 1) && 2 * cp < nch; ++cp) {
          {  // (row, chunk) = (lane / 2, 2 cp + lane % 2) of the warp's rows: dequantized, split into A
            const int r16 = lane >> 1, c = 2 * cp + (lane & 1);
            uint32_t hi[16] = {}, lo[16] = {};
            float inv = 0.0f;
            if (c < nch) {
              float v[kChunk];
              const int tile =
                  TILED ? 0 : static_cast<int>(reinterpret_cast<uintptr_t>(gguf_src(r16, u)) & 15);
              const int n = chunk_len(b.ne0, 8 * u + c);
              tile_chunk<T, kPadded>(raw + r16 * PU::kRowBytes, tile, c, n, v);
#pragma unroll
            for (int i = 0; i < kChunk; ++i) v[i] = i < n ? v[i] : 0.0f;
            const int e = split_exponent(max_abs(v));
            split_halves(v, pow2f(e), hi, lo);
            inv = pow2f(-e);
          }
          uint4* dh = reinterpret_cast<uint4*>(ahi + r16 * kAStride + (lane & 1) * 32);
          uint4* dl = reinterpret_cast<uint4*>(alo + r16 * kAStride + (lane & 1) * 32);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            dh[i] = make_uint4(hi[4 * i], hi[4 * i + 1], hi[4 * i + 2], hi[4 * i + 3]);
            dl[i] = make_uint4(lo[4 * i], lo[4 * i + 1], lo[4 * i + 2], lo[4 * i + 3]);
          }
          ea[r16 * 2 + (lane & 1)] = inv;
        }
        __syncwarp();
#pragma unroll
        for (int cc = 0; cc < 2; ++cc) {
          const int c = 2 * cp + cc;
          if (c < nch) {
            uint32_t ah[2][4], al[2][4];
            const int lr = gemm_a_row(lane), lk = cc * 32 + gemm_a_k(lane);
#pragma unroll
            for (int w = 0; w < 2; ++w) {
              ldmatrix_x4(ah[w], ahi + lr * kAStride + lk + 16 * w);
              ldmatrix_x4(al[w], alo + lr * kAStride + lk + 16 * w);
            }
            const float er0 = ea[g * 2 + cc], er1 = ea[(g + 8) * 2 + cc];
            const uint32_t* rh = xs + (c - XC * h) * kGemmXsChunkWords;
#pragma unroll
            for (int q = 0; q < kMmaPairs / 4; ++q) {
              if (4 * q < nt) {
                const uint2 b0 = *reinterpret_cast<const uint2*>(rh + gemm_xs_word(8 * q + g, 0, t));
                const uint2 b1 = *reinterpret_cast<const uint2*>(rh + gemm_xs_word(8 * q + g, 1, t));
                float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                mma_f16(d, ah[0], b0);
                mma_f16(d, al[0], b0);
                mma_f16(d, ah[1], b1);
                mma_f16(d, al[1], b1);
                const float sx = xsc[c * kMmaPairs + 4 * q + t];
                acc[q][0] = __fmaf_rn((d[0] + d[1]) * er0, sx, acc[q][0]);
                acc[q][1] = __fmaf_rn((d[2] + d[3]) * er1, sx, acc[q][1]);
              }
            }
          }
        }
        __syncwarp();  // every lane is done with this chunk pair's A
      }
      }
    }
  }
  if (rbase >= b.ne1) return;
  // Split: partial sums [split][c][ne1] (KSplit; the whole warp is here: rbase is the warp's).
  const bool to_part = KS && own > 1;
  float* y = b.y + grp * b.y_gstride;
  int64_t y_stride = b.y_stride, row0 = j0;  // pair j0 + p's row: row0 + p
  if (to_part) {
    const int64_t c0 = b.grp_off ? k_split_pairs_before(b.grp_off, grp, min_pairs, ks.max_pairs) : 0;
    y = ks.part + split * ks.part_stride;
    y_stride = b.ne1;
    row0 = c0 + (j0 - g_first);
  }
#pragma unroll
  for (int q = 0; q < kMmaPairs / 4; ++q) {
    const int p = 4 * q + t;
    if (p < nt) {
      float* yp = y + (row0 + p) * y_stride + rbase;
      if (rbase + g < b.ne1) yp[g] = acc[q][0];
      if (rbase + g + 8 < b.ne1) yp[g + 8] = acc[q][1];
    }
  }
}

template <GgmlType T>
__global__ void dequant_rows_kernel(const uint8_t* w, uint64_t row_bytes, int64_t ne0, const int32_t* rows,
                                    float* out) {
  const uint8_t* row = w + static_cast<uint64_t>(rows[blockIdx.x]) * row_bytes;
  float* o = out + static_cast<int64_t>(blockIdx.x) * ne0;
  const int64_t n_chunks = (ne0 + kChunk - 1) / kChunk;
  for (int64_t c = threadIdx.x; c < n_chunks; c += blockDim.x) {
    const int n = chunk_len(ne0, c);
    float v[kChunk];
    dequant_chunk<T>(row, c, n, v);
    for (int i = 0; i < n; ++i) o[c * kChunk + i] = v[i];
  }
}

// The types whose register-level dequantization (tile_chunk) came in the twenty-fifth pass: the
// benchmark can still run them on dequant_chunk (set_gemv_bytewise_dequant) side by side.
template <GgmlType T>
constexpr bool kBytewiseComparable = T == GgmlType::Q3_K || T == GgmlType::Q5_K || T == GgmlType::Q4_0 ||
                                     T == GgmlType::Q4_1 || T == GgmlType::Q5_0 || T == GgmlType::Q5_1;
std::atomic<bool> g_bytewise{false};
std::atomic<bool> g_prefill_x_global{false};
std::atomic<bool> g_prefill_mma{detail::kGemvPrefillMmaDefault};
std::atomic<int> g_prefill_mma_min_pairs{0};  // 0: each launch's prefill_mma_default_min_pairs
std::atomic<int> g_prefill_mma_half_x{detail::kGemvPrefillMmaHalfXRule};
std::atomic<bool> g_prefill_quant_a{detail::kGemvPrefillQuantADefault};
std::atomic<int> g_prefill_columns{detail::kGemvPrefillColumnsDefault};
// Decode columns' slots launched (gemv_prefill_column_slots); set_gemv_prefill_host_sizes.
std::atomic<uint64_t> g_column_slots{0};
std::atomic<uint64_t> g_quant_a_launches{0};  // for gemv_prefill_quant_a_launches
std::atomic<uint64_t> g_k_split_launches{0};  // for gemv_prefill_k_split_launches
std::atomic<uint64_t> g_expert_k_split_launches{0};  // for gemv_prefill_expert_k_split_launches
std::atomic<int> g_prefill_k_split{detail::kGemvPrefillKSplitDefault};
std::atomic<int> g_prefill_expert_k_split{detail::kGemvPrefillExpertKSplitDefault};
std::atomic<bool> g_host_sizes{detail::kGemvPrefillHostSizesDefault};
std::atomic<int> g_tiled_recompute{detail::kGemvPrefillTiledRecomputeDefault};

// The blocks a multiprocessor holds of the K split's dense instantiation of T (gemm_mma_kernel, the GGUF
// layout, the whole unit; with A from the quants where qa), from the CUDA occupancy calculator with its
// shared memory allowed (under emulated limits, theirs: detail::occupancy_blocks_per_sm); asked once per
// device (the current one), type and A's source. On an H100 Q4_K's 4, Q6_K's 3 and Q8_0's 2 (W's halves
// staged: its __launch_bounds__ asks for 1 block, and its registers keep it to 2 where its 72.6 KB of shared
// memory would allow 3), against the 3 the constant its minimum counted with said (gpu/gemm_mma_layout.h
// prefill_mma_whole_unit_blocks_per_sm). Throws Error where no block fits a multiprocessor, and on a CUDA
// error.
template <GgmlType T, bool QA>
int split_blocks_per_sm_of() {
  static std::mutex mu;
  static std::map<int, int> per_device;
  int dev = 0;
  MOEPACK_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  const auto found = per_device.find(dev);
  if (found != per_device.end()) return found->second;
  using PU = PrefillUnit<T, 8, QA>;
  const auto kernel = gemm_mma_kernel<T, false, 8, QA, true>;
  detail::allow_dynamic_smem(reinterpret_cast<const void*>(kernel), PU::kSmemBytes);
  const int blocks =
      detail::occupancy_blocks_per_sm(reinterpret_cast<const void*>(kernel), kMmaWarpsP * 32, PU::kSmemBytes);
  if (blocks < 1) {
    throw Error("gemv: no block of the " + std::string(ggml_type_name(T)) + " prefill's K split (" +
                std::to_string(PU::kSmemBytes) + " bytes of shared memory) fits a multiprocessor");
  }
  per_device.emplace(dev, blocks);
  return blocks;
}
template <GgmlType T>
int split_blocks_per_sm(bool qa) {
  if constexpr (kPrefillQuantA<T>) {
    if (qa) return split_blocks_per_sm_of<T, true>();
  }
  return split_blocks_per_sm_of<T, false>();
}
// The blocks a multiprocessor holds of the tensor-core prefill's XC / QA staging of T that
// gpu/gemm_mma_layout.h's constant-counting rules count with: `constant` (what they were measured with on
// an H100, whose 228 KiB of shared memory an SM allow it), or fewer where the current device's shared memory
// an SM holds fewer blocks of the staging's kSmemBytes (detail::shared_memory_blocks_per_sm; an RTX 50xx's
// 100 KiB, or MOEPACK_GPU_LIMITS=sm_120's: 1 of Q8_0's whole unit of 72.6 KB). Registers are not counted:
// an sm_120 SM has an sm_90 SM's, so they hold there what they held where the constant was measured.
template <GgmlType T, int XC, bool QA>
int prefill_rule_blocks_per_sm(int constant) {
  const auto kernel = gemm_mma_kernel<T, false, XC, QA>;
  return std::min(constant, detail::shared_memory_blocks_per_sm(reinterpret_cast<const void*>(kernel),
                                                                PrefillUnit<T, XC, QA>::kSmemBytes));
}
// The blocks a multiprocessor holds that a dense launch's K split rule counts with (gemm_mma_layout.h
// prefill_k_splits_default): the split instantiation's occupancy on rows of kPrefillDenseWholeLongRow
// elements or more (the rule fitted with it), the constant on shorter rows (as their rule was measured;
// fewer where the device's shared memory holds fewer: prefill_rule_blocks_per_sm).
template <GgmlType T>
int dense_split_blocks_per_sm(int64_t ne0, bool qa) {
  if (prefill_mma_units(ne0) * 256 >= kPrefillDenseWholeLongRow) return split_blocks_per_sm<T>(qa);
  if constexpr (kPrefillQuantA<T>) {
    if (qa) return prefill_rule_blocks_per_sm<T, 8, true>(prefill_mma_whole_unit_blocks_per_sm(T, true));
  }
  return prefill_rule_blocks_per_sm<T, 8, false>(prefill_mma_whole_unit_blocks_per_sm(T, qa));
}

// The slot tables of a launch's decode columns (gpu/prefill_columns.h): thread g writes group g's C
// slots, their offsets (column_slot_offset) and their matrix (the group's); the last group's thread
// also the closing offset. One thread a group: n_groups * C entries of a few bytes.
__global__ void column_slots_kernel(GemvBatch b, int C, int32_t* off, const uint8_t** table) {
  const int g = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (g >= b.n_groups) return;
  const int32_t j0 = b.grp_off[g], n = b.grp_off[g + 1] - j0;
  const uint8_t* w = b.w_table ? b.w_table[g] : b.w + static_cast<uint64_t>(g) * b.w_gstride;
  for (int c = 0; c < C; ++c) {
    off[g * C + c] = column_slot_offset(j0, n, c, C);
    table[g * C + c] = w;
  }
  if (g == b.n_groups - 1) off[b.n_groups * C] = b.grp_off[b.n_groups];
}

// The compact layout's tables (gpu/prefill_columns.h, column_slot_offset_compact): the k-th group of
// 1..C pairs (in group order, a block-wide scan) gets slots k (C + 1) .. k (C + 1) + C, its pairs in
// the first ones, and its last slot spans from its last pair's end to the next such group's first
// pair (the pairs of the groups between: none, or at least C + 1 >= 3, which the decode GEMV skips);
// the closing entry is the last such group's end. One block; n_small: the host's count of such
// groups (GemvBatch::grp_off_host), which bounds every write: slots the device finds no group for
// stay empty.
constexpr int kCompactThreads = 256;
__global__ void __launch_bounds__(kCompactThreads)
    column_slots_compact_kernel(GemvBatch b, int C, int n_small, int32_t* off, const uint8_t** table) {
  using Scan = cub::BlockScan<int, kCompactThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ int32_t end;  // the last written group's end
  if (threadIdx.x == 0) end = b.grp_off[0];
  __syncthreads();
  const int stride = C + 1;
  int base = 0;  // small groups before this chunk (the same in every thread)
  for (int g0 = 0; g0 < b.n_groups; g0 += kCompactThreads) {
    const int g = g0 + static_cast<int>(threadIdx.x);
    int32_t j0 = 0, n = 0;
    if (g < b.n_groups) {
      j0 = b.grp_off[g];
      n = b.grp_off[g + 1] - j0;
    }
    const int small = g < b.n_groups && n >= 1 && n <= C ? 1 : 0;
    int pos = 0, total = 0;
    Scan(scan).ExclusiveSum(small, pos, total);
    const int k = base + pos;
    if (small && k < n_small) {
      const uint8_t* w = b.w_table ? b.w_table[g] : b.w + static_cast<uint64_t>(g) * b.w_gstride;
      for (int c = 0; c < stride; ++c) {
        off[k * stride + c] = column_slot_offset_compact(j0, n, c);
        table[k * stride + c] = w;
      }
      if (pos == total - 1 || k == n_small - 1) end = j0 + n;  // one thread a chunk
    }
    base += total;
    __syncthreads();  // the scan's storage and end, before the next chunk
  }
  // The closing entry, and any slots the device found no group for (a host copy unlike grp_off):
  // empty, on the part's first matrix.
  const int first = (base < n_small ? base : n_small) * stride;
  const uint8_t* w0 = b.w_table ? b.w_table[0] : b.w;
  for (int e = first + static_cast<int>(threadIdx.x); e <= n_small * stride; e += kCompactThreads) {
    off[e] = end;
    if (e < n_small * stride) table[e] = w0;
  }
}

// Device memory of one launch, released on the launch's stream (stream order: after the kernels
// queued before the release), exceptions included.
struct StreamScratch {
  void* p = nullptr;
  cudaStream_t s;
  StreamScratch(size_t bytes, cudaStream_t st) : s(st) {
    detail::keep_pool_memory();  // the device's pool keeps freed scratch for the next launch
    MOEPACK_CUDA_CHECK(cudaMallocAsync(&p, bytes, s));
  }
  ~StreamScratch() {
    if (p) cudaFreeAsync(p, s);  // an error here is sticky: the stream's next check reports it
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
};

struct GemvLaunch {
  const GemvBatch& b;
  cudaStream_t s;
  const int32_t* host;  // b.grp_off_host where the launch reads it (set_gemv_prefill_host_sizes), else null
  // The F32 kernel on the GGUF layout, or on the tiled one (w_tiled; check_tiled refused every
  // other type).
  // grid.x: blocks of the variant's gemv_block_warps rows (R a warp) over ne1.
  template <GgmlType T, int P, int R, bool TILED, bool BYTEWISE, bool X_GLOBAL>
  void go(dim3 grid, GroupSizes sizes) const {
    constexpr int nw = gemv_block_warps<T, P, R, TILED, X_GLOBAL>();
    grid.x = static_cast<unsigned>((b.ne1 + nw * R - 1) / (nw * R));
    gemv_kernel<T, P, R, TILED, BYTEWISE, X_GLOBAL><<<grid, nw * 32, 0, s>>>(b, sizes);
  }
  // The benchmark's switches: at prefill set_gemv_prefill_x_global wins over
  // set_gemv_bytewise_dequant (never both in one comparison).
  template <GgmlType T, int P, int R>
  void f32(dim3 grid, GroupSizes sizes) const {
    if constexpr (P != 1) {
      if (g_prefill_x_global.load(std::memory_order_relaxed)) {
        if (!b.w_tiled) {
          go<T, P, R, false, false, true>(grid, sizes);
          return;
        }
        if constexpr (tiled_unit_bytes(T) > 0) {
          go<T, P, R, true, false, true>(grid, sizes);
          return;
        }
      }
    }
    if constexpr (kBytewiseComparable<T>) {
      if (!b.w_tiled && g_bytewise.load(std::memory_order_relaxed)) {
        go<T, P, R, false, true, false>(grid, sizes);
        return;
      }
    }
    if (!b.w_tiled) {
      go<T, P, R, false, false, false>(grid, sizes);
    } else if constexpr (tiled_unit_bytes(T) > 0) {
      go<T, P, R, true, false, false>(grid, sizes);
    } else {
      throw Error("gemv: no tiled layout for " + std::string(ggml_type_name(T)));
    }
  }
  template <GgmlType T>
  void operator()() const {
    const int pairs = b.grp_off ? b.max_pairs : b.n_tok;
    // Groups of exactly one pair take the tensor-core path where it covers the type; the rule
    // depends on the group alone, so any batching of groups gives the same sums (gemv_mma.h).
    // Tiled weights: where the tensor cores' tiled launch covers them (x's fragments within a
    // block's shared memory), else every group here, on the tiled layout.
    const bool mma =
        detail::gemv_mma_supported(T, b.ne0) && (!b.w_tiled || detail::gemv_tiled_supported(T, b.ne0, b.ne1));
    if (pairs == 1) {
      if (mma) {
        detail::gemv_mma(b, s);
        return;
      }
      // gemv() checked this; the variant may have changed since (another thread's switch).
      if (b.swiglu_epilogue) throw Error("gemv: the SwiGLU epilogue needs the tensor-core decode GEMV");
      constexpr int R = Tile<T>::kDecodeRows;
      const dim3 grid(0, static_cast<unsigned>(b.n_groups), 1);  // go() sets x
      f32<T, 1, R>(grid, kSinglesAll);
    } else {
      // Groups of 1 .. C pairs (C >= 2), or every token of a dense launch of at most C, as the
      // decode GEMV's columns (set_gemv_prefill_columns); the larger ones below, from C + 1.
      const int C = mma ? columns(pairs) : 0;
      if (C > 0) {
        if (!b.grp_off) {
          dense_columns();
          return;
        }
        expert_columns(C);
        if (pairs <= C || !has_group(C + 1, INT_MAX)) return;  // max_pairs bounds every group
      }
      const int lo = C > 0 ? C + 1 : 2;  // the smallest group left (single pairs apart)
      const unsigned tiles = static_cast<unsigned>((pairs + kPrefillPairs - 1) / kPrefillPairs);
      const dim3 grid(0, static_cast<unsigned>(b.n_groups), tiles);
      if constexpr (BlockOf<T>::kElems > 1) {
        // Groups of at least m pairs on the tensor cores (the rule depends on the group's size and
        // the launch's matrices alone);
        // those of lo .. m - 1 pairs in the F32 kernels, and those of one pair (expert launches
        // without columns) where a launch of that group alone would compute them.
        const int m = std::max(detail::gemv_prefill_mma_min_pairs(T, b.ne0, b.ne1, dense()), lo);
        if (prefill_mma() && pairs >= m) {
          if (has_group(m, INT_MAX)) gemm_mma<T>(m);
          if (b.grp_off) {
            MOEPACK_CUDA_CHECK(cudaGetLastError());
            if (m > lo && has_group(lo, m - 1)) {  // pair tiles enough for m - 1 pairs
              f32<T, kPrefillPairs, 1>(dim3(0, static_cast<unsigned>(b.n_groups),
                                            static_cast<unsigned>((m - 2) / kPrefillPairs + 1)),
                                       GroupSizes{lo, m - 1});
              MOEPACK_CUDA_CHECK(cudaGetLastError());
            }
            if (C == 0 && has_group(1, 1)) {  // (with columns the single pairs were columns)
              if (mma) {
                detail::gemv_mma(b, s);
              } else {
                // one pair tile: a single pair is tile 0's
                f32<T, kPrefillPairs, 1>(dim3(0, static_cast<unsigned>(b.n_groups), 1), kSinglesOnly);
              }
            }
          }
          return;
        }
      }
      if (C > 0) {
        f32<T, kPrefillPairs, 1>(grid, GroupSizes{lo, INT_MAX});
        return;
      }
      const bool split = mma && b.grp_off != nullptr;
      if (!split || has_group(2, INT_MAX)) f32<T, kPrefillPairs, 1>(grid, split ? kSinglesSkip : kSinglesAll);
      if (split && has_group(1, 1)) {
        MOEPACK_CUDA_CHECK(cudaGetLastError());
        detail::gemv_mma(b, s);
      }
    }
  }
  // The largest group this launch takes as decode columns (set_gemv_prefill_columns), at most its
  // max_pairs; 0 for none (off, or a launch they do not cover: kernels.h). The caller checked that
  // the tensor-core decode covers the launch.
  // A dense launch of one matrix, which takes the dense rules (minimum and columns); a grouped dense
  // launch (several matrices without grp_off, e.g. attention heads; not measured) takes no columns and
  // the expert launches' minimum.
  bool dense() const { return !b.grp_off && b.n_groups == 1; }
  // Whether a group of lo..hi pairs may be in the launch: where the host copy of grp_off says
  // (GemvBatch::grp_off_host), else true.
  bool has_group(int lo, int hi) const {
    if (!b.grp_off || !host) return true;
    for (int32_t g = 0; g < b.n_groups; ++g) {
      const int32_t n = host[g + 1] - host[g];
      if (n >= lo && n <= hi) return true;
    }
    return false;
  }
  int columns(int pairs) const {
    if (!b.grp_off && !dense()) return 0;
    const int c = detail::gemv_prefill_columns(b.type, b.ne0, b.ne1, b.w_tiled, dense());
    if (c < 2 || g_prefill_x_global.load(std::memory_order_relaxed) ||
        g_bytewise.load(std::memory_order_relaxed))
      return 0;
    if (dense()) return pairs <= c && !b.x_row ? c : 0;
    if (b.x_gstride != 0 || b.y_gstride != 0 || b.swiglu_epilogue) return 0;
    return std::min(c, pairs);
  }
  // Every group of 1 .. C pairs of an expert launch as single-pair groups of the tensor-core decode
  // GEMV: n_groups * C slots (gpu/prefill_columns.h), their offsets and matrices written on the GPU
  // (grp_off may be a kernel's output), each pair keeping its index j, hence its x row and y row;
  // launches of at most 65,535 slots (the grid's y), a range of whole groups each. With the host copy
  // of grp_off, only the groups of 1 .. C pairs get slots, C + 1 each (the compact layout) where the
  // range has other groups too, and a range without such groups no launch.
  void expert_columns(int C) const {
    detail::check_mma_weights_aligned(b);  // before the slots' table hides w from gemv_mma's own check
    const int32_t* h = host;
    const int per_launch = 65535 / (h ? C + 1 : C);
    for (int g0 = 0; g0 < b.n_groups;) {
      int g1 = g0, n_small = 0;  // groups [g0, g1), n_small of them of 1 .. C pairs
      while (g1 < b.n_groups && (h ? n_small : g1 - g0) < per_launch) {
        const int32_t n = h ? h[g1 + 1] - h[g1] : 1;
        n_small += n >= 1 && n <= C;
        ++g1;
      }
      GemvBatch part = b;
      part.n_groups = g1 - g0;
      part.grp_off = b.grp_off + g0;
      if (b.w_table) {
        part.w_table = b.w_table + g0;
      } else {
        part.w = b.w + static_cast<uint64_t>(g0) * b.w_gstride;
      }
      if (n_small > 0) slot_launch(part, C, n_small);
      g0 = g1;
    }
  }
  // One launch of the columns over part's groups: n_small of them with 1 .. C pairs (all of them
  // without the host copy: every group C slots; else the compact layout, C + 1 slots a small group).
  void slot_launch(const GemvBatch& part, int C, int n_small) const {
    const bool compact = n_small < part.n_groups;
    const int stride = compact ? C + 1 : C;
    const int64_t n_slots = static_cast<int64_t>(n_small) * stride;
    const size_t off_bytes = (static_cast<size_t>(n_slots + 1) * sizeof(int32_t) + 15) / 16 * 16;
    const StreamScratch mem(off_bytes + static_cast<size_t>(n_slots) * sizeof(const uint8_t*), s);
    auto* off = static_cast<int32_t*>(mem.p);
    auto* table = reinterpret_cast<const uint8_t**>(static_cast<char*>(mem.p) + off_bytes);
    if (compact) {
      column_slots_compact_kernel<<<1, kCompactThreads, 0, s>>>(part, C, n_small, off, table);
    } else {
      column_slots_kernel<<<static_cast<unsigned>((part.n_groups + 127) / 128), 128, 0, s>>>(part, C, off,
                                                                                             table);
    }
    MOEPACK_CUDA_CHECK(cudaGetLastError());
    GemvBatch slots = part;
    slots.grp_off = off;
    slots.w_table = table;
    slots.w = nullptr;
    slots.w_gstride = 0;
    slots.n_groups = static_cast<int32_t>(n_slots);
    slots.max_pairs = 1;
    slots.tables_from_kernel = true;  // no programmatic dependent launch: the tables are this stream's
    detail::gemv_mma(slots, s);
    MOEPACK_CUDA_CHECK(cudaGetLastError());
    g_column_slots.fetch_add(static_cast<uint64_t>(n_slots), std::memory_order_relaxed);
  }
  // Every token of a dense launch as a decode launch of its own (n_tok of them).
  void dense_columns() const {
    for (int32_t t = 0; t < b.n_tok; ++t) {
      GemvBatch c = b;
      c.n_tok = 1;
      c.x = b.x + static_cast<int64_t>(t) * b.x_stride;
      c.y = b.y + static_cast<int64_t>(t) * b.y_stride;
      if (b.x_frag) c.x_frag = b.x_frag + static_cast<int64_t>(t) * b.x_frag_stride;
      detail::gemv_mma(c, s);
      MOEPACK_CUDA_CHECK(cudaGetLastError());
    }
  }
  // The tensor-core prefill where it is switched on (set_gemv_prefill_mma) and no other switch asks
  // for the F32 kernels (the benchmark's comparisons of their variants, or the tensor cores off:
  // variant -1).
  static bool prefill_mma() {
    return g_prefill_mma.load(std::memory_order_relaxed) &&
           !g_prefill_x_global.load(std::memory_order_relaxed) &&
           !g_bytewise.load(std::memory_order_relaxed) && !detail::gemv_mma_off();
  }
  template <GgmlType T>
  void gemm_mma(int min_pairs) const {
    const int pairs = b.grp_off ? b.max_pairs : b.n_tok;
    dim3 grid(static_cast<unsigned>((b.ne1 + 16 * kMmaWarpsP - 1) / (16 * kMmaWarpsP)),
              static_cast<unsigned>(b.n_groups), static_cast<unsigned>((pairs + kMmaPairs - 1) / kMmaPairs));
    // The blocks with pairs to compute (blocks of smaller groups, or past a group's last pair, return
    // at once): from the host's copy where there is one, else the whole grid.
    int64_t blocks = static_cast<int64_t>(grid.x) * grid.y * grid.z;
    if (b.grp_off && host) {
      int64_t tiles = 0;
      for (int32_t g = 0; g < b.n_groups; ++g) {
        const int32_t n = host[g + 1] - host[g];
        if (n >= min_pairs) tiles += (n + kMmaPairs - 1) / kMmaPairs;
      }
      blocks = static_cast<int64_t>(grid.x) * tiles;
    }
    const bool qa = detail::gemv_prefill_quant_a(T);
    const int sms = detail::device_multiprocessors();
    // A launch of fewer blocks than the device holds at once: split along the rows' units
    // (set_gemv_prefill_k_split for dense launches, set_gemv_prefill_expert_k_split for expert launches
    // with the host's group sizes), its partial sums in stream-ordered scratch, added in order after.
    KSplit ks;
    int64_t split_pairs = 0, split_most = 0;  // the partial sums' pairs, the most of one group
    if (dense()) {
      ks.splits = detail::gemv_prefill_k_splits(blocks, prefill_mma_units(b.ne0), sms,
                                                dense_split_blocks_per_sm<T>(b.ne0, qa),
                                                prefill_dense_k_split_eligible(b.ne0, b.ne1));
      split_pairs = split_most = b.n_tok;
    } else if (b.grp_off && host && (qa || !b.w_tiled)) {
      // (the tiled layout's split instantiation is compiled with A from the quants only)
      const detail::ExpertKSplit e = detail::gemv_prefill_expert_k_splits(b.ne0, b.ne1);
      if (e.splits > 1) {
        for (int32_t g = 0; g < b.n_groups; ++g) {
          const int32_t n = host[g + 1] - host[g];
          if (n >= min_pairs && n <= e.max_pairs) {
            split_pairs += n;
            split_most = std::max<int64_t>(split_most, n);
          }
        }
        if (split_pairs > 0) {
          ks.splits = e.splits;
          ks.max_pairs = e.max_pairs;
        }
      }
    }
    ks.splits = std::min(ks.splits, static_cast<int>(65535 / grid.z));  // (forced: the grid's z limit)
    std::optional<StreamScratch> part;
    if (ks.splits > 1) {
      ks.part_stride = split_pairs * b.ne1;
      part.emplace(static_cast<size_t>(ks.splits) * static_cast<size_t>(ks.part_stride) * sizeof(float), s);
      ks.part = static_cast<float*>(part->p);
      grid.z *= static_cast<unsigned>(ks.splits);
      g_k_split_launches.fetch_add(1, std::memory_order_relaxed);
      if (b.grp_off) g_expert_k_split_launches.fetch_add(1, std::memory_order_relaxed);
    }
    // (a split launch fills the device at most once: the whole unit)
    const bool half = ks.splits == 1 && detail::gemv_prefill_mma_half_x(T, b.w_tiled, blocks, sms, qa);
    bool launched = false;
    if constexpr (kPrefillQuantA<T>) {
      if (qa) {
        g_quant_a_launches.fetch_add(1, std::memory_order_relaxed);
        if (ks.splits > 1) {
          gemm_mma_split_launch<T, true>(min_pairs, grid, ks);
        } else if (half) {
          gemm_mma_launch<T, 4, true>(min_pairs, grid);
        } else {
          gemm_mma_launch<T, 8, true>(min_pairs, grid);
        }
        launched = true;
      }
    }
    if (!launched) {
      if (ks.splits > 1) {
        gemm_mma_split_launch<T, false>(min_pairs, grid, ks);
      } else if (half) {
        gemm_mma_launch<T, 4>(min_pairs, grid);
      } else {
        gemm_mma_launch<T, 8>(min_pairs, grid);
      }
    }
    if (ks.splits > 1) {
      MOEPACK_CUDA_CHECK(cudaGetLastError());
      // x: the largest split group's sums (a dense launch: all of them), at most 4 blocks a multiprocessor
      const int64_t cap = std::max<int64_t>(1, 4 * static_cast<int64_t>(sms) / b.n_groups);
      const dim3 sum_grid(static_cast<unsigned>(std::min(cap, (split_most * b.ne1 + 255) / 256)),
                          static_cast<unsigned>(b.grp_off ? b.n_groups : 1));
      k_split_sum_kernel<<<sum_grid, 256, 0, s>>>(ks, b.grp_off, b.n_tok, min_pairs, b.ne1, b.y, b.y_stride,
                                                  b.y_gstride);
    }
  }
  // One launch of that instantiation of gemm_mma_kernel, its shared memory allowed first.
  template <GgmlType T, bool TILED, int XC, bool QA, bool KS = false, bool RC = false>
  void mma_kernel(int min_pairs, dim3 grid, KSplit ks) const {
    using PU = PrefillUnit<T, XC, QA>;
    const auto kernel = gemm_mma_kernel<T, TILED, XC, QA, KS, RC>;
    detail::allow_dynamic_smem(reinterpret_cast<const void*>(kernel), PU::kSmemBytes);
    kernel<<<grid, kMmaWarpsP * 32, PU::kSmemBytes, s>>>(b, min_pairs, ks);
  }
  // Whether a tiled launch of T with A from the quants computes its staging addresses each unit (RC).
  template <GgmlType T>
  static bool tiled_recompute() {
    const int mode = g_tiled_recompute.load(std::memory_order_relaxed);
    return mode == detail::kGemvPrefillTiledRecomputeRule ? detail::gemv_prefill_tiled_recompute_default(T)
                                                          : mode == 1;
  }
  // The K split's launch (gemm_mma_kernel's KS instantiation: the GGUF layout, and the tiled one with A
  // from the quants).
  template <GgmlType T, bool QA>
  void gemm_mma_split_launch(int min_pairs, dim3 grid, KSplit ks) const {
    if constexpr (QA && tiled_unit_bytes(T) > 0) {
      if (b.w_tiled) {
        return tiled_recompute<T>() ? mma_kernel<T, true, 8, QA, true, true>(min_pairs, grid, ks)
                                    : mma_kernel<T, true, 8, QA, true>(min_pairs, grid, ks);
      }
    }
    if (b.w_tiled) throw Error("gemv: no K split of tiled " + std::string(ggml_type_name(T)) + " weights");
    mma_kernel<T, false, 8, QA, true>(min_pairs, grid, ks);
  }
  template <GgmlType T, int XC, bool QA = false>
  void gemm_mma_launch(int min_pairs, dim3 grid) const {
    if (!b.w_tiled) return mma_kernel<T, false, XC, QA>(min_pairs, grid, KSplit{});
    if constexpr (tiled_unit_bytes(T) > 0) {
      if constexpr (QA) {
        if (tiled_recompute<T>()) return mma_kernel<T, true, XC, QA, false, true>(min_pairs, grid, KSplit{});
      }
      mma_kernel<T, true, XC, QA>(min_pairs, grid, KSplit{});
    } else {
      throw Error("gemv: no tiled layout for " + std::string(ggml_type_name(T)));
    }
  }
};

struct DequantLaunch {
  const uint8_t* w;
  uint64_t row_bytes;
  int64_t ne0;
  const int32_t* rows;
  int32_t n;
  float* out;
  cudaStream_t s;
  template <GgmlType T>
  void operator()() const {
    dequant_rows_kernel<T><<<static_cast<unsigned>(n), 128, 0, s>>>(w, row_bytes, ne0, rows, out);
  }
};

struct NoLaunch {
  template <GgmlType T>
  void operator()() const {}
};

std::atomic<uint64_t> g_tiled_launches{0};  // gemv() calls with w_tiled, for gemv_tiled_launches

// GemvBatch::w_tiled's contract, each failing condition named.
void check_tiled(const GemvBatch& b) {
  const std::string what = "gemv: tiled weights (w_tiled) of " + std::string(ggml_type_name(b.type)) + " [" +
                           std::to_string(b.ne1) + "][" + std::to_string(b.ne0) + "]: ";
  if (!b.grp_off) throw Error(what + "need an expert launch (grp_off)");
  if (b.x_frag) throw Error(what + "take no ready fragments (x_frag)");
  if (!tiled_layout_covers(b.type, b.ne0, b.ne1)) {
    throw Error(
        what +
        "not covered by the tiled layout (Q4_K, Q5_K, Q6_K, Q3_K, Q2_K or MXFP4, rows a multiple of 256 "
        "elements, a multiple of 16 rows)");
  }
  const auto rb = ggml_row_bytes(b.type, static_cast<uint64_t>(b.ne0));
  if (!rb || *rb != b.row_bytes) {
    throw Error(what + "row_bytes " + std::to_string(b.row_bytes) + " is not the type's (" +
                (rb ? std::to_string(*rb) : std::string("none")) + ")");
  }
  if (!b.w_table && ((reinterpret_cast<uintptr_t>(b.w) | b.w_gstride) & 15) != 0) {
    throw Error(what + "w and w_gstride must be multiples of 16 bytes (16-byte loads)");
  }
  if (b.swiglu_epilogue && !detail::gemv_tiled_supported(b.type, b.ne0, b.ne1)) {
    throw Error(what + "the SwiGLU epilogue needs the tensor cores' tiled launch (gemv_tiled_supported)");
  }
}

void check_type(GgmlType t, const char* what) {
  if (!gpu_type_supported(t)) {
    throw Error(std::string(what) + ": type " + std::string(ggml_type_name(t)) + " has no CUDA kernel");
  }
}

}  // namespace

bool gpu_type_supported(GgmlType type) { return dispatch_type(type, NoLaunch{}); }

namespace detail {
void set_gemv_bytewise_dequant(bool on) { g_bytewise.store(on, std::memory_order_relaxed); }
void set_gemv_prefill_x_global(bool on) { g_prefill_x_global.store(on, std::memory_order_relaxed); }
void set_gemv_prefill_mma(bool on) { g_prefill_mma.store(on, std::memory_order_relaxed); }
void set_gemv_prefill_mma_min_pairs(int m) {
  if (m != 0 && m < 2) {
    throw Error(
        "set_gemv_prefill_mma_min_pairs: " + std::to_string(m) +
        " pairs: the minimum is at least 2 (groups of one pair are the decode paths'), or 0 for the default");
  }
  g_prefill_mma_min_pairs.store(m, std::memory_order_relaxed);
}
void set_gemv_prefill_mma_half_x(int mode) {
  if (mode < kGemvPrefillMmaHalfXRule || mode > 1) {
    throw Error("set_gemv_prefill_mma_half_x: mode " + std::to_string(mode) +
                ": -1 (each launch's rule), 0 (the whole unit) or 1 (half a unit)");
  }
  g_prefill_mma_half_x.store(mode, std::memory_order_relaxed);
}

namespace {
// The blocks a multiprocessor holds of the whole unit's and the half unit's staging (W's halves: the rule's
// launches), as the half-unit rule counts them (prefill_rule_blocks_per_sm).
struct HalfXBlocksPerSm {
  int* whole;
  int* half;
  template <GgmlType T>
  void operator()() const {
    if constexpr (BlockOf<T>::kElems > 1) {
      *whole = prefill_rule_blocks_per_sm<T, 8, false>(kPrefillMmaWholeUnitBlocksPerSm);
      *half = prefill_rule_blocks_per_sm<T, 4, false>(kPrefillMmaHalfUnitBlocksPerSm);
    }
  }
};
}  // namespace
PrefillStagingBlocks gemv_prefill_staging_blocks_per_sm(GgmlType type) {
  check_type(type, "gemv_prefill_staging_blocks_per_sm");
  PrefillStagingBlocks r;
  dispatch_type(type, HalfXBlocksPerSm{&r.whole, &r.half});  // (F32, F16, BF16 keep the constants)
  return r;
}
bool gemv_prefill_mma_half_x(GgmlType type, bool tiled, int64_t blocks, int sms, bool quant_a) {
  const int mode = g_prefill_mma_half_x.load(std::memory_order_relaxed);
  if (mode != kGemvPrefillMmaHalfXRule) return mode == 1;
  if (quant_a) return false;
  const PrefillStagingBlocks per_sm = gemv_prefill_staging_blocks_per_sm(type);
  return prefill_mma_half_x_default(type, tiled, blocks, sms, false, per_sm.whole, per_sm.half);
}

void set_gemv_prefill_quant_a(bool on) { g_prefill_quant_a.store(on, std::memory_order_relaxed); }
bool gemv_prefill_quant_a(GgmlType type) {
  return prefill_quant_a_covers(type) && g_prefill_quant_a.load(std::memory_order_relaxed);
}

void set_gemv_prefill_host_sizes(bool on) { g_host_sizes.store(on, std::memory_order_relaxed); }
void set_gemv_prefill_tiled_recompute(int mode) {
  if (mode < kGemvPrefillTiledRecomputeRule || mode > 1) {
    throw Error("set_gemv_prefill_tiled_recompute: " + std::to_string(mode) +
                ": -1 (each type's rule), 0 (off) or 1 (on)");
  }
  g_tiled_recompute.store(mode, std::memory_order_relaxed);
}

void set_gemv_prefill_k_split(int splits) {
  if (splits < 0 || splits > kGemvPrefillKSplitMax) {
    throw Error("set_gemv_prefill_k_split: " + std::to_string(splits) +
                " splits: 0 (each launch's rule), 1 (none) or 2.." + std::to_string(kGemvPrefillKSplitMax));
  }
  g_prefill_k_split.store(splits, std::memory_order_relaxed);
}
int gemv_prefill_k_splits(int64_t blocks, int64_t n_units, int sms, int blocks_per_sm, bool eligible) {
  const int k = g_prefill_k_split.load(std::memory_order_relaxed);
  return k >= 1 ? k : prefill_k_splits_default(blocks, n_units, sms, blocks_per_sm, eligible);
}
namespace {
// The blocks a multiprocessor a dense launch of `type` counts with (dense_split_blocks_per_sm; the constant
// for F32, F16 and BF16, which have no tensor-core prefill).
struct DenseBlocksPerSm {
  int64_t ne0;
  bool qa;
  int* per_sm;
  template <GgmlType T>
  void operator()() const {
    if constexpr (BlockOf<T>::kElems > 1) *per_sm = dense_split_blocks_per_sm<T>(ne0, qa);
  }
};
int dense_blocks_per_sm(GgmlType type, int64_t ne0, bool qa) {
  int per_sm = prefill_mma_whole_unit_blocks_per_sm(type, qa);
  dispatch_type(type, DenseBlocksPerSm{ne0, qa, &per_sm});  // (a type without kernels keeps the constant)
  return per_sm;
}
}  // namespace
DenseKSplit gemv_prefill_dense_k_split(GgmlType type, int64_t ne0, int64_t ne1, int64_t n_tok) {
  check_type(type, "gemv_prefill_dense_k_split");
  DenseKSplit r;
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) return r;  // no tensor cores
  r.blocks_per_sm = dense_blocks_per_sm(type, ne0, gemv_prefill_quant_a(type));
  static_assert(16 * kMmaWarpsP == 64 && kMmaPairs == 32, "prefill_dense_blocks: 64 rows by 32 tokens");
  r.splits = gemv_prefill_k_splits(prefill_dense_blocks(ne1, n_tok), prefill_mma_units(ne0),
                                   device_multiprocessors(), r.blocks_per_sm,
                                   prefill_dense_k_split_eligible(ne0, ne1));
  return r;
}

void set_gemv_prefill_expert_k_split(int splits) {
  if (splits < 0 || splits > kGemvPrefillKSplitMax) {
    throw Error("set_gemv_prefill_expert_k_split: " + std::to_string(splits) +
                " splits: 0 (each launch's rule), 1 (none) or 2.." + std::to_string(kGemvPrefillKSplitMax));
  }
  g_prefill_expert_k_split.store(splits, std::memory_order_relaxed);
}
ExpertKSplit gemv_prefill_expert_k_splits(int64_t ne0, int64_t ne1) {
  const int k = g_prefill_expert_k_split.load(std::memory_order_relaxed);
  if (k >= 1) return {k, INT_MAX};
  return {prefill_expert_k_splits_default(ne0, ne1), kPrefillExpertKSplitMaxPairs};
}

void set_gemv_prefill_columns(int c) {
  if (c < 0 || c > kGemvPrefillColumnsMax) {
    throw Error(
        "set_gemv_prefill_columns: " + std::to_string(c) +
        " pairs: the largest group taken as decode columns is 0 (each launch's default), 1 (none) or 2.." +
        std::to_string(kGemvPrefillColumnsMax));
  }
  g_prefill_columns.store(c, std::memory_order_relaxed);
}
namespace {
// What decides a dense launch's minimum and columns: whether it counts as split (forced splits, or one pair
// tile filling less than half the device with the split on: prefill_dense_one_tile_few_blocks, with the
// blocks a multiprocessor the split rule counts with, so that every such launch the rule splits) and whether
// its one pair tile holds half the device's blocks or more.
struct DenseKind {
  bool splits = false;      // the launch counts as split (few blocks and the rule on, or the switch's)
  bool whole_tile = false;  // its one pair tile holds half the device's blocks or more
};
DenseKind dense_kind(GgmlType type, int64_t ne0, int64_t ne1, bool dense, bool qa) {
  if (!dense) return {};
  const int k = g_prefill_k_split.load(std::memory_order_relaxed);
  const int per_sm = dense_blocks_per_sm(type, ne0, qa);
  const int sms = device_multiprocessors();
  const bool rule_splits = prefill_dense_one_tile_few_blocks(ne0, ne1, sms, per_sm);
  return {k >= 2 || (k == 0 && rule_splits), !rule_splits};
}
}  // namespace
int gemv_prefill_columns(GgmlType type, int64_t ne0, int64_t ne1, bool tiled, bool dense) {
  const int c = g_prefill_columns.load(std::memory_order_relaxed);
  if (c >= 1) return c;
  const bool qa = gemv_prefill_quant_a(type);
  const DenseKind d = dense_kind(type, ne0, ne1, dense, qa);
  return prefill_columns_default(type, ne0, ne1, tiled, dense, qa, d.splits, d.whole_tile);
}
int gemv_prefill_mma_min_pairs(GgmlType type, int64_t ne0, int64_t ne1, bool dense) {
  const int m = g_prefill_mma_min_pairs.load(std::memory_order_relaxed);
  if (m >= 2) return m;
  const bool qa = gemv_prefill_quant_a(type);
  const DenseKind d = dense_kind(type, ne0, ne1, dense, qa);
  return prefill_mma_default_min_pairs(type, ne0, ne1, dense, qa, d.splits, d.whole_tile);
}
}  // namespace detail

uint64_t gemv_tiled_launches() { return g_tiled_launches.load(std::memory_order_relaxed); }
uint64_t gemv_prefill_quant_a_launches() { return g_quant_a_launches.load(std::memory_order_relaxed); }
uint64_t gemv_prefill_k_split_launches() { return g_k_split_launches.load(std::memory_order_relaxed); }
uint64_t gemv_prefill_expert_k_split_launches() {
  return g_expert_k_split_launches.load(std::memory_order_relaxed);
}
uint64_t gemv_prefill_column_slots() { return g_column_slots.load(std::memory_order_relaxed); }

namespace {
// The batch of gemv_experts and gemv_experts_swiglu.
GemvBatch experts_batch(GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes, const uint8_t* const* table,
                        const int32_t* grp_off, int32_t n_groups, int32_t max_pairs, const int32_t* x_row,
                        const float* x, int64_t x_stride, float* y, int64_t y_stride) {
  GemvBatch b;
  b.type = type;
  b.ne0 = ne0;
  b.ne1 = ne1;
  b.row_bytes = row_bytes;
  b.w_table = table;
  b.grp_off = grp_off;
  b.x_row = x_row;
  b.x = x;
  b.x_stride = x_stride;
  b.y = y;
  b.y_stride = y_stride;
  b.n_groups = n_groups;
  b.max_pairs = max_pairs;
  return b;
}
}  // namespace

void gemv_experts(GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes, const uint8_t* const* table,
                  const int32_t* grp_off, int32_t n_groups, int32_t max_pairs, const int32_t* x_row,
                  const float* x, int64_t x_stride, float* y, int64_t y_stride, cudaStream_t s,
                  const uint8_t* x_frag, int64_t x_frag_stride, bool tables_from_kernel, bool w_tiled,
                  const int32_t* grp_off_host) {
  GemvBatch b =
      experts_batch(type, ne0, ne1, row_bytes, table, grp_off, n_groups, max_pairs, x_row, x, x_stride, y, y_stride);
  b.x_frag = x_frag;
  b.x_frag_stride = x_frag_stride;
  b.tables_from_kernel = tables_from_kernel;
  b.w_tiled = w_tiled;
  b.grp_off_host = grp_off_host;
  gemv(b, s);
}

void gemv_experts_swiglu(GgmlType type, int64_t ne0, int64_t ne1, uint64_t row_bytes,
                         const uint8_t* const* table, const int32_t* grp_off, int32_t n_groups,
                         int32_t max_pairs, const int32_t* x_row, const float* x, int64_t x_stride,
                         float limit, float* y, int64_t y_stride, cudaStream_t s, bool tables_from_kernel,
                         bool w_tiled) {
  GemvBatch b =
      experts_batch(type, ne0, ne1, row_bytes, table, grp_off, n_groups, max_pairs, x_row, x, x_stride, y, y_stride);
  b.tables_from_kernel = tables_from_kernel;
  b.w_tiled = w_tiled;
  b.swiglu_epilogue = true;
  b.swiglu_limit = limit;
  gemv(b, s);
}

namespace {
std::atomic<uint64_t> g_ffn_launches{0};  // gemv_experts_ffn calls, for gemv_ffn_launches
}  // namespace

uint64_t gemv_ffn_launches() { return g_ffn_launches.load(std::memory_order_relaxed); }

bool gemv_experts_ffn_fusable(GgmlType type, int64_t hidden, int64_t ff) {
  return detail::gemv_mma_ffn_fusable(type, hidden, ff);
}

void gemv_experts_ffn(const GemvBatch& a, const GemvBatch& d, int32_t* sync, cudaStream_t s) {
  const std::string what = "gemv_experts_ffn: " + std::string(ggml_type_name(a.type)) + " experts of [" +
                           std::to_string(a.ne1) + "][" + std::to_string(a.ne0) + "] (gate, up) and [" +
                           std::to_string(d.ne1) + "][" + std::to_string(d.ne0) + "] (down): ";
  const auto need = [&](bool ok, const std::string& field) {
    if (!ok) throw Error(what + field);
  };
  need(a.type == d.type, "down's type " + std::string(ggml_type_name(d.type)) + " is not gate + up's");
  need(a.ne0 == d.ne1 && a.ne1 == d.ne0, "down must be [gate_up.ne0][gate_up.ne1]");
  need(detail::gemv_mma_ffn_fusable(a.type, a.ne0, a.ne1),
       "not covered (gemv_experts_ffn_fusable: the tiled launch and the SwiGLU epilogue for both shapes)");
  need(a.swiglu_epilogue && !d.swiglu_epilogue, "gate_up needs swiglu_epilogue, down must not have it");
  need(a.tables_from_kernel == d.tables_from_kernel, "tables_from_kernel differs between the batches");
  need(a.y != nullptr && d.y != nullptr, "gate_up's y and down's y must be set");
  need(a.y_stride >= a.ne1 && d.y_stride >= d.ne1, "y_stride below a row (rows would overlap)");
  need(a.w_tiled && d.w_tiled, "both batches need the tiled layout (w_tiled)");
  need(a.w_table != nullptr, "gate_up needs w_table (gates, then ups)");
  need(a.grp_off != nullptr && d.grp_off == a.grp_off, "both batches need the same grp_off");
  need(a.n_groups == d.n_groups && a.n_groups > 0, "n_groups differ or are not positive");
  need(a.max_pairs == 1 && d.max_pairs == 1, "one pair a group (max_pairs 1) in both batches");
  need(!a.x_frag && !d.x_frag, "ready fragments (x_frag) are not taken");
  need(d.x == a.y && d.x_stride == a.y_stride && d.x_gstride == a.y_gstride && !d.x_row,
       "down's x must be gate_up's y (the same stride and group stride, no x_row)");
  need(sync != nullptr && (reinterpret_cast<uintptr_t>(sync) & 3) == 0,
       "sync must be 4-byte aligned device memory");
  check_tiled(a);
  check_tiled(d);
  if (a.n_groups > 65535) throw Error(what + std::to_string(a.n_groups) + " groups exceed the launch");
  detail::gemv_mma_ffn(a, d, sync, s);
  MOEPACK_CUDA_CHECK(cudaGetLastError());
  g_ffn_launches.fetch_add(1, std::memory_order_relaxed);
}

bool gemv_swiglu_fusable(GgmlType type, int64_t ne0) { return detail::gemv_mma_swiglu_fusable(type, ne0); }

bool gemv_swiglu_fusable(GgmlType type, int64_t ne0, int64_t ne1, bool w_tiled) {
  return detail::gemv_mma_swiglu_fusable(type, ne0) &&
         (!w_tiled || detail::gemv_tiled_supported(type, ne0, ne1));
}

void gemv(const GemvBatch& b, cudaStream_t s) {
  check_type(b.type, "gemv");
  const int pairs = b.grp_off ? b.max_pairs : b.n_tok;
  if (b.ne1 <= 0 || b.n_groups <= 0 || pairs <= 0) return;
  // The SwiGLU epilogue's contract, checked here once (GemvLaunch and gemv_mma's launch_type
  // check again only what another thread may have switched since: the variant).
  if (b.swiglu_epilogue &&
      (pairs != 1 || !b.grp_off || !b.w_table || b.x_frag || !detail::gemv_mma_swiglu_fusable(b.type, b.ne0))) {
    throw Error("gemv: the SwiGLU epilogue (swiglu_epilogue) needs an expert launch (grp_off, w_table) of one pair a "
                "group (got " + std::to_string(pairs) + "), no ready fragments (x_frag), and the tensor-core decode "
                "GEMV's default layout for " + std::string(ggml_type_name(b.type)) + " rows of " +
                std::to_string(b.ne0) + " elements (gemv_swiglu_fusable)");
  }
  if (b.w_tiled) {
    check_tiled(b);
    g_tiled_launches.fetch_add(1, std::memory_order_relaxed);
  }
  if (b.n_groups > 65535 || (pairs + kPrefillPairs - 1) / kPrefillPairs > 65535) {
    throw Error("gemv: " + std::to_string(b.n_groups) + " groups x " + std::to_string(pairs) +
                " pairs exceeds the launch grid");
  }
  dispatch_type(b.type,
                GemvLaunch{b, s, g_host_sizes.load(std::memory_order_relaxed) ? b.grp_off_host : nullptr});
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void dequant_rows(GgmlType type, const uint8_t* w, uint64_t row_bytes, int64_t ne0, const int32_t* rows,
                  int32_t n, float* out, cudaStream_t s) {
  check_type(type, "dequant_rows");
  if (n <= 0) return;
  dispatch_type(type, DequantLaunch{w, row_bytes, ne0, rows, n, out, s});
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
