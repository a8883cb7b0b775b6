#include "core/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/quants.h"
#include "core/thread_pool.h"

namespace moepack {

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[k + j] * b[k + j];
  }
  for (; k < n; ++k) acc[k % 8] += a[k] * b[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

namespace {

// Rows per chunk so that a chunk is worth a thread hand-off (~64k multiply-adds).
int64_t row_grain(const WeightView& w, int64_t n_tok) {
  const int64_t per_row = std::max<int64_t>(1, w.ne0 * n_tok);
  return std::max<int64_t>(1, 65536 / per_row);
}

template <typename Store>
void matmul_impl(ThreadPool& pool, const WeightView& w, const float* x, int64_t x_stride, int64_t n_tok,
                 Store store) {
  pool.parallel_for(w.ne1, row_grain(w, n_tok), [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(w.ne0));
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row(w.type, w.row(r), row.data(), w.ne0);
      for (int64_t t = 0; t < n_tok; ++t) store(t, r, dot_f32(row.data(), x + t * x_stride, w.ne0));
    }
  });
}

}  // namespace

void matmul(ThreadPool& pool, const WeightView& w, const float* x, int64_t x_stride, int64_t n_tok, float* y,
            int64_t y_stride) {
  matmul_impl(pool, w, x, x_stride, n_tok, [&](int64_t t, int64_t r, float v) { y[t * y_stride + r] = v; });
}

void matmul_add_scaled(ThreadPool& pool, const WeightView& w, const float* x, int64_t x_stride, int64_t n_tok,
                       const float* scale, float* y, int64_t y_stride) {
  matmul_impl(pool, w, x, x_stride, n_tok,
              [&](int64_t t, int64_t r, float v) { y[t * y_stride + r] += scale[t] * v; });
}

void rms_norm(const float* x, const float* w, int64_t n, float eps, float* out) {
  // ggml_compute_forward_rms_norm_f32 sums squares in double (ggml_float) and scales by
  // 1/sqrtf(mean + eps) in float.
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
  }
}

void softmax_inplace(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = (x[i] == -INFINITY) ? 0.0f : std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = (g / (1.0f + std::exp(-g))) * up[i];
  }
}

namespace {

float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) * std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) /
         (2.0f * std::log(base));
}

}  // namespace

void rope_table(const RopeParams& p, int64_t pos, float* cs) {
  float corr[2] = {0.0f, 0.0f};
  if (p.ext_factor != 0.0f) {
    const float start = std::floor(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base));
    const float end = std::ceil(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base));
    corr[0] = std::max(0.0f, start);
    corr[1] = std::min(static_cast<float>(p.n_dims - 1), end);
  }
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_dims));
  float theta_extrap = static_cast<float>(pos);
  for (int i0 = 0; i0 < p.n_dims; i0 += 2) {
    const float theta_interp = p.freq_scale * theta_extrap;
    float theta = theta_interp;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float y = (static_cast<float>(i0 / 2) - corr[0]) / std::max(0.001f, corr[1] - corr[0]);
      const float ramp = 1.0f - std::min(1.0f, std::max(0.0f, y));
      const float mix = ramp * p.ext_factor;
      theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    cs[i0] = std::cos(theta) * mscale;
    cs[i0 + 1] = std::sin(theta) * mscale;
    theta_extrap *= theta_scale;
  }
}

void rope_apply(const RopeParams& p, const float* cs, float* x, int64_t n_heads, int64_t head_stride) {
  const int half = p.n_dims / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_stride;
    for (int i0 = 0; i0 < p.n_dims; i0 += 2) {
      const float c = cs[i0], s = cs[i0 + 1];
      const int a = p.neox ? i0 / 2 : i0;
      const int b = p.neox ? i0 / 2 + half : i0 + 1;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
  }
}

}  // namespace moepack
