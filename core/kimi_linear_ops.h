// The `kimi-linear` KDA block's own operations (Kimi Delta Attention) as pure functions: the CPU
// reference (arch_kimi_linear.cpp) calls them, and the CUDA kernels of gpu/kernels_kimi_linear.h
// are tested against them. Formulas: ../shared/docs/ARCH_KIMI_LINEAR.md §4.1–4.2 (llama.cpp
// 82bb485: ssm_conv, l2_norm, gated_delta_net). Shapes: n tokens, H heads of d channels,
// d_in = H·d, w conv taps; arrays F32, row-major [rows][cols], caller-allocated. Apart from
// read_flat, nothing here throws or allocates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moepack {
class GgufModel;
}

namespace moepack::kimi {

// The F32 values of a small tensor (conv taps ssm_conv1d_*, ssm_a) of exactly n elements whose
// ne[0] is ne0 (0: any), dequantized. Throws FormatError naming `file` and the tensor when it is
// missing, or its shard, the tensor and its info offset when the element count or ne0 differ.
std::vector<float> read_flat(const GgufModel& g, const std::string& name, int64_t n, int64_t ne0,
                             const std::string& file);

// §4.1 step 2, causal depthwise convolution + SiLU of one of q / k / v:
//   out[t][c] = silu( Σ_{j<w} W[c·w + j] · ext[(t + j)·d_in + c] ),  t < n, c < d_in,
// summed in j order (tap 0 = oldest input). ext [(w−1) + n][d_in]: the w−1 pre-convolution
// rows before the first token (zeros at the start of a sequence), then the n new projections.
// W [d_in][w]. silu(a) = a / (1 + e^−a).
void conv_silu(const float* ext, const float* W, int64_t n, int64_t d_in, int64_t w, float* out);

// §4.1 step 3, in place: each of n_rows rows of d values becomes x / max(‖x‖₂, eps), ‖x‖₂ =
// sqrt(dot_f32(x, x)) (cpu_ops.h's eight-lane order).
void l2_norm_rows(float* x, int64_t n_rows, int64_t d, float eps);

// §4.1 steps 4–6, in place over n tokens (A [H] = ssm_a, already negative; dt_bias [d_in]):
//   decay[t][c] = exp(A[c / d] · softplus(decay[t][c] + dt_bias[c]))   (α ∈ (0, 1]), [n][d_in]
//   gate[t][c]  = σ(gate[t][c])                                          [n][d_in]
//   beta[t][h]  = σ(beta[t][h])                                          [n][H]
// softplus as cpu_ops.h (x above 20), σ(x) = 1 / (1 + e^−x).
void gates(float* decay, float* gate, float* beta, int64_t n, int64_t H, int64_t d, const float* A,
           const float* dt_bias);

// §4.2, head h over n tokens in order, state Sh [d][d] (Sh[i·d + j], i key channel, j value
// channel; updated in place). q, k, v, alpha [n][d_in] (head h at column h·d), beta [n][H]:
//   S[i][j] ← α[i]·S[i][j];  δ[j] = β·(v[j] − Σ_i S[i][j]·k[i]);  S[i][j] ← S[i][j] + k[i]·δ[j];
//   o[t][h·d + j] = (Σ_i S[i][j]·q[i]) · (1/sqrt(d)).
// Every sum runs over i in ascending order, per j. delta: scratch of d floats.
void recurrence_head(float* Sh, const float* q, const float* k, const float* v, const float* alpha,
                     const float* beta, int64_t n, int64_t H, int64_t d, int64_t h, float* delta, float* o);

// §4.2 read-out, in place on n_rows rows of d values (one per token and head):
// o = RMSNorm(o; norm) ⊙ gate (cpu_ops.h rms_norm; norm [d] shared by the heads; gate rows
// aligned with o's).
void output_norm_gate(float* o, const float* norm, const float* gate, int64_t n_rows, int64_t d, float eps);

}  // namespace moepack::kimi
