#include "core/kimi_linear_ops.h"

#include <algorithm>
#include <cmath>

#include "core/cpu_ops.h"
#include "core/error.h"
#include "core/gguf_model.h"
#include "core/quants.h"

namespace moepack::kimi {

std::vector<float> read_flat(const GgufModel& g, const std::string& name, int64_t n, int64_t ne0,
                             const std::string& file) {
  const GgufTensorRef* r = g.find_tensor(name);
  if (!r) throw FormatError(file, name, 0, "tensor is missing (the architecture needs it)");
  if (r->info->n_elements() != static_cast<uint64_t>(n) ||
      (ne0 && r->info->ne[0] != static_cast<uint64_t>(ne0))) {
    throw FormatError(
        g.shards()[r->shard].path(), name, r->info->info_offset,
        "expected " + std::to_string(n) + " elements" + (ne0 ? " with ne0 = " + std::to_string(ne0) : ""));
  }
  std::vector<uint8_t> raw(static_cast<size_t>(r->info->nbytes));
  g.shards()[r->shard].read_tensor_data(*r->info, 0, raw.data(), raw.size());
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(r->info->type, raw.data(), out.data(), n);
  return out;
}

namespace {
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
}  // namespace

void conv_silu(const float* ext, const float* W, int64_t n, int64_t d_in, int64_t w, float* out) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t c = 0; c < d_in; ++c) {
      float acc = 0.0f;
      for (int64_t j = 0; j < w; ++j) acc += W[c * w + j] * ext[(t + j) * d_in + c];
      out[t * d_in + c] = acc / (1.0f + std::exp(-acc));
    }
  }
}

void l2_norm_rows(float* x, int64_t n_rows, int64_t d, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* p = x + r * d;
    const float nrm = std::sqrt(dot_f32(p, p, d));
    const float inv = 1.0f / std::max(nrm, eps);
    for (int64_t i = 0; i < d; ++i) p[i] *= inv;
  }
}

void gates(float* decay, float* gate, float* beta, int64_t n, int64_t H, int64_t d, const float* A,
           const float* dt_bias) {
  const int64_t d_in = H * d;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t c = 0; c < d_in; ++c) {
      const int64_t i = t * d_in + c;
      decay[i] = std::exp(A[c / d] * softplus(decay[i] + dt_bias[c]));
      gate[i] = sigmoid(gate[i]);
    }
    for (int64_t h = 0; h < H; ++h) beta[t * H + h] = sigmoid(beta[t * H + h]);
  }
}

void recurrence_head(float* Sh, const float* q, const float* k, const float* v, const float* alpha,
                     const float* beta, int64_t n, int64_t H, int64_t d, int64_t h, float* delta, float* o) {
  const int64_t d_in = H * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t t = 0; t < n; ++t) {
    const float* al = alpha + t * d_in + h * d;
    const float* kt = k + t * d_in + h * d;
    const float* qt = q + t * d_in + h * d;
    const float* vt = v + t * d_in + h * d;
    const float b = beta[t * H + h];
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < d; ++j) Sh[i * d + j] *= al[i];
    }
    for (int64_t j = 0; j < d; ++j) delta[j] = vt[j];
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < d; ++j) delta[j] -= Sh[i * d + j] * kt[i];
    }
    for (int64_t j = 0; j < d; ++j) delta[j] *= b;
    float* ot = o + t * d_in + h * d;
    std::fill(ot, ot + d, 0.0f);
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < d; ++j) {
        Sh[i * d + j] += kt[i] * delta[j];
        ot[j] += Sh[i * d + j] * qt[i];
      }
    }
    for (int64_t j = 0; j < d; ++j) ot[j] *= scale;
  }
}

void output_norm_gate(float* o, const float* norm, const float* gate, int64_t n_rows, int64_t d, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* p = o + r * d;
    rms_norm(p, norm, d, eps, p);
    const float* g = gate + r * d;
    for (int64_t j = 0; j < d; ++j) p[j] *= g[j];
  }
}

}  // namespace moepack::kimi
