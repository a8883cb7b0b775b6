// The CPU backend's operators, in F32 on weights dequantized exactly (core/quants.h). Each is
// the reference its CUDA twin (gpu/) is tested against. Shapes are given as [rows][cols],
// row-major, cols fastest; "token" rows are one activation vector each.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/ggml_type.h"

namespace moepack {

class ThreadPool;

// A 2-D weight matrix as stored in GGUF: ne1 rows (outputs) of ne0 elements (inputs), each row
// ggml_row_bytes(type, ne0) bytes (`row_bytes`), consecutive. Not owning.
struct WeightView {
  GgmlType type = GgmlType::F32;
  int64_t ne0 = 0;  // inputs (columns)
  int64_t ne1 = 0;  // outputs (rows)
  size_t row_bytes = 0;
  const uint8_t* data = nullptr;

  bool empty() const { return data == nullptr; }
  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

// y[t][r] = sum_k W[r][k] * x[t][k] for t < n_tok, r < W.ne1. x: [n_tok][W.ne0] (row stride
// x_stride floats), y: [n_tok][W.ne1] (row stride y_stride floats). Each weight row is
// dequantized once and dotted with every token (8-lane F32 sums). Parallel over rows.
void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t x_stride, int64_t n_tok, float* y,
            int64_t y_stride);

// Same, accumulating: y[t][r] += scale[t] * (W x[t])[r]. Used to add expert outputs.
void matmul_add_scaled(ThreadPool& pool, const WeightView& w, const float* x, int64_t x_stride, int64_t n_tok,
                       const float* scale, float* y, int64_t y_stride);

// Dot product of n floats in 8 interleaved F32 lanes (as quants.h vec_dot).
float dot_f32(const float* a, const float* b, int64_t n);

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i] (RMSNorm; ggml_rms_norm then ggml_mul).
// `w` may be null (no scale). out may alias x.
void rms_norm(const float* x, const float* w, int64_t n, float eps, float* out);

// Softmax in place over n values (max subtracted first).
void softmax_inplace(float* x, int64_t n);

// softplus(x) = ln(1 + e^x), x itself above 20 (ggml_softplus's cut-off).
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// SwiGLU: out[i] = silu(gate[i]) * up[i], silu(v) = v / (1 + exp(-v)).
void swiglu(const float* gate, const float* up, int64_t n, float* out);

// RoPE parameters (llama.cpp's ggml_rope_ext arguments; YaRN per the YaRN paper,
// arXiv:2309.00071, as implemented in ggml's rope_yarn / ggml_rope_yarn_corr_dims).
struct RopeParams {
  int n_dims = 0;            // rotated dimensions per head (even)
  bool neox = false;         // rotate halves (x[i], x[i + n_dims/2]) instead of adjacent pairs
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  float ext_factor = 0.0f;   // YaRN ramp mix (1 with YaRN, 0 without)
  float attn_factor = 1.0f;  // multiplies cos and sin
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;
};

// cos/sin table for one position: cs[2*i] = cos, cs[2*i+1] = sin for i < n_dims / 2.
void rope_table(const RopeParams& p, int64_t pos, float* cs);
// Rotates the first n_dims values of each of n_heads vectors x + h * head_stride in place.
void rope_apply(const RopeParams& p, const float* cs, float* x, int64_t n_heads, int64_t head_stride);

}  // namespace moepack
