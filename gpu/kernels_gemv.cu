// Dequantizing matrix-vector products for every GGUF type the models use, decode and prefill.
//
// One warp per output row; each lane dequantizes 32-element chunks of the row (dequant.cuh,
// bit-exact to core/quants.h) into registers and dots them with up to kTile activation rows
// (pairs) at once, so a prefill batch reads each weight chunk once per kTile tokens. Lanes
// accumulate in F32, then a warp tree reduction. The grid is (row tiles, groups, pair tiles):
// groups are the matrices of one launch (all selected experts of a layer, or MLA's heads).
// Correctness first: x is read straight from global memory (L1/L2 cached); a shared-memory /
// vectorised variant is the next step for bandwidth (issue 7 benchmark).
#include <algorithm>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/dequant.cuh"
#include "gpu/kernels.h"

namespace moepack::gpu {
namespace {

constexpr int kWarps = 4;  // rows per block
constexpr int kTile = 8;   // pairs per block

// Elements of chunk c of a row of ne0 (32 except possibly the last).
__device__ __forceinline__ int chunk_len(int64_t ne0, int64_t c) {
  const int64_t left = ne0 - c * kChunk;
  return left < kChunk ? static_cast<int>(left) : kChunk;
}

template <GgmlType T>
__global__ void gemv_kernel(GemvBatch b) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (r >= b.ne1) return;
  const int g = static_cast<int>(blockIdx.y);
  int j0 = 0, j1 = b.n_tok;
  if (b.grp_off) {
    j0 = b.grp_off[g];
    j1 = b.grp_off[g + 1];
  }
  j0 += static_cast<int>(blockIdx.z) * kTile;
  if (j0 >= j1) return;
  const int nt = min(kTile, j1 - j0);
  const uint8_t* wg = b.w_table ? b.w_table[g] : b.w + static_cast<uint64_t>(g) * b.w_gstride;
  const uint8_t* row = wg + static_cast<uint64_t>(r) * b.row_bytes;
  const float* xr[kTile];
#pragma unroll
  for (int t = 0; t < kTile; ++t) {
    const int j = j0 + min(t, nt - 1);
    const int64_t xi = b.x_row ? b.x_row[j] : j;
    xr[t] = b.x + g * b.x_gstride + xi * b.x_stride;
  }
  float acc[kTile];
#pragma unroll
  for (int t = 0; t < kTile; ++t) acc[t] = 0.0f;
  const int64_t n_chunks = (b.ne0 + kChunk - 1) / kChunk;
  for (int64_t c = lane; c < n_chunks; c += 32) {
    const int n = chunk_len(b.ne0, c);
    float v[kChunk];
    dequant_chunk<T>(row, c, n, v);
#pragma unroll
    for (int t = 0; t < kTile; ++t) {
      if (t < nt) {
        const float* xc = xr[t] + c * kChunk;
        float s = 0.0f;
        if (n == kChunk) {
#pragma unroll
          for (int i = 0; i < kChunk; ++i) s += v[i] * xc[i];
        } else {
          for (int i = 0; i < n; ++i) s += v[i] * xc[i];
        }
        acc[t] += s;
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kTile; ++t) {
    float s = acc[t];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0 && t < nt) b.y[g * b.y_gstride + static_cast<int64_t>(j0 + t) * b.y_stride + r] = s;
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

struct GemvLaunch {
  const GemvBatch& b;
  cudaStream_t s;
  template <GgmlType T>
  void operator()() const {
    const int pairs = b.grp_off ? b.max_pairs : b.n_tok;
    const dim3 grid(static_cast<unsigned>((b.ne1 + kWarps - 1) / kWarps), static_cast<unsigned>(b.n_groups),
                    static_cast<unsigned>((pairs + kTile - 1) / kTile));
    gemv_kernel<T><<<grid, kWarps * 32, 0, s>>>(b);
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

void check_type(GgmlType t, const char* what) {
  if (!gpu_type_supported(t)) {
    throw Error(std::string(what) + ": type " + std::string(ggml_type_name(t)) + " has no CUDA kernel");
  }
}

}  // namespace

bool gpu_type_supported(GgmlType type) {
  return dispatch_type(type, NoLaunch{});
}

void gemv(const GemvBatch& b, cudaStream_t s) {
  check_type(b.type, "gemv");
  const int pairs = b.grp_off ? b.max_pairs : b.n_tok;
  if (b.ne1 <= 0 || b.n_groups <= 0 || pairs <= 0) return;
  if (b.n_groups > 65535 || (pairs + kTile - 1) / kTile > 65535) {
    throw Error("gemv: " + std::to_string(b.n_groups) + " groups x " + std::to_string(pairs) +
                " pairs exceeds the launch grid");
  }
  dispatch_type(b.type, GemvLaunch{b, s});
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

void dequant_rows(GgmlType type, const uint8_t* w, uint64_t row_bytes, int64_t ne0, const int32_t* rows, int32_t n,
                  float* out, cudaStream_t s) {
  check_type(type, "dequant_rows");
  if (n <= 0) return;
  dispatch_type(type, DequantLaunch{w, row_bytes, ne0, rows, n, out, s});
  MOEPACK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moepack::gpu
