// The attention half of a transformer block on the GPU, one implementation per architecture
// family, mirroring core/cpu_attention.h: GQA (llama; qwen3moe with per-head q/k RMSNorm) and
// MLA in its absorbed form (deepseek2). Weights are registered with DeviceWeights before its
// upload(); bind() resolves them afterwards. All pointers are device pointers.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "core/model_config.h"
#include "gpu/device_weights.h"

namespace moepack::gpu {

class CudaAttention {
 public:
  virtual ~CudaAttention() = default;
  // Floats one token occupies in layer il's KV cache.
  virtual int64_t kv_width(uint32_t il) const = 0;
  // Resolves the weight handles after DeviceWeights::upload() and builds the RoPE table for
  // positions 0 .. n_ctx - 1.
  virtual void bind(const DeviceWeights& w, uint32_t n_ctx) = 0;
  // VRAM the RoPE table will need for n_ctx positions, bytes (counted before the upload).
  virtual uint64_t table_bytes(uint32_t n_ctx) const = 0;
  // xn: [n_tok][n_embd] normed input of positions pos0 .. pos0 + n_tok - 1; kv: layer il's
  // cache [n_ctx][kv_width] (these positions are written, earlier ones read); out: [n_tok][n_embd].
  // pos_dev (a decode step in a CUDA graph, n_tok 1): pos0 is read from this device int at run
  // time instead, any position below max_kv (<= the KV cache's positions; 0: all of them); the
  // launches then depend on no position, the same values bit for bit (gpu/kernels.h gqa_attend).
  virtual void forward(uint32_t il, const float* xn, int64_t n_tok, int64_t pos0, float* kv, float* out,
                       cudaStream_t s, const int32_t* pos_dev = nullptr, int64_t max_kv = 0) = 0;
  // Sizes every buffer forward() uses for n_tok tokens (forward() calls it too). Returns true
  // when one was allocated anew (its address changed: a CUDA graph holding it is stale). Throws
  // Error when VRAM runs out. Call it before queuing work: a buffer that grows frees memory that
  // queued kernels may still use.
  virtual bool reserve(int64_t n_tok) = 0;
};

std::unique_ptr<CudaAttention> make_cuda_attention(const ModelConfig& cfg, DeviceWeights& w);

// Product of a resident matrix with n_tok activation rows: y[t][r] = sum_k W[r][k] x[t][k].
void dev_matmul(const DevMatrix& w, const float* x, int64_t x_stride, int64_t n_tok, float* y, int64_t y_stride,
                cudaStream_t s);

// Matrix h of a stacked view of `groups` matrices [rows][ne0], one launch for all of them:
// y + h * y_gstride = W_h (x + h * x_gstride), for n_tok tokens (MLA's per-head wk_b / wv_b).
void grouped_matmul(const DevMatrix& stacked, int64_t rows, int64_t groups, const float* x, int64_t x_stride,
                    int64_t x_gstride, int64_t n_tok, float* y, int64_t y_stride, int64_t y_gstride, cudaStream_t s);

}  // namespace moepack::gpu
