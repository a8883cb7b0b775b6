// Host-side launchers of the `kimi-linear` KDA block's own kernels (kernels_kimi_linear.cu),
// used by cuda_kimi_linear.cpp. Each has a CPU twin in core/kimi_linear_ops.h (the CPU reference
// calls the same functions) and a parity test in tests/gpu/kimi_linear_test.cpp. Formulas:
// ../shared/docs/ARCH_KIMI_LINEAR.md §4.1–4.2. Shapes: n tokens, H heads of d channels,
// d_in = H·d, w conv taps; [rows][cols] row-major. All pointers are device pointers; sizes are
// checked on the host (Error naming the launcher and the numbers) before any launch, and every
// launch is checked (cudaGetLastError). Every output is computed by one thread in the CPU twin's
// order of operations (built with --fmad=false), so results differ from the CPU only through
// expf / log1pf / division rounding (a few ulp), except kda_output_norm_gate's sum of squares
// (double, tree order; the CPU sums sequentially in double).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace moepack::gpu {

// §4.1 step 2 for n_groups convolutions at once (q, k, v): for g < n_groups, t < n, c < d_in,
//   out[g·out_gstride + t·d_in + c] = kimi::conv_silu(ext + g·ext_gstride, W + g·w_gstride, ...)
// i.e. silu(Σ_{j<w} W_g[c·w + j] · ext_g[(t + j)·d_in + c]) in j order. ext_g [(w−1)+n][d_in]
// (history rows, then the new projections), W_g [d_in][w]. Requires w in 1..16.
void kda_conv_silu(const float* ext, int64_t ext_gstride, const float* W, int64_t w_gstride, int64_t n,
                   int64_t d_in, int64_t w, int32_t n_groups, float* out, int64_t out_gstride,
                   cudaStream_t s);

// §4.1 step 3, in place: rows r < n_rows of d values: x / max(sqrt(dot_f32(x, x)), eps)
// (kimi::l2_norm_rows; dot_f32's eight-lane order).
void kda_l2_norm(float* x, int64_t n_rows, int64_t d, float eps, cudaStream_t s);

// §4.1 steps 4–6, in place (kimi::gates): decay [n][d_in] = exp(A[c/d]·softplus(decay + dt_bias[c])),
// gate [n][d_in] = σ(gate), beta [n][H] = σ(beta). A [H], dt_bias [d_in].
void kda_gates(float* decay, float* gate, float* beta, int64_t n, int64_t H, int64_t d, const float* A,
               const float* dt_bias, cudaStream_t s);

// §4.2 recurrence over n tokens in order, all heads (kimi::recurrence_head for each h): one
// block per head, one thread per value channel j (state column S[h][·][j]). S [H][d][d] is
// updated in place; q, k, v, alpha, o [n][d_in]; beta [n][H]; o is scaled by 1/sqrt(d), not
// normed. Requires d in 1..1024.
void kda_recurrence(float* S, const float* q, const float* k, const float* v, const float* alpha,
                    const float* beta, int64_t n, int64_t H, int64_t d, float* o, cudaStream_t s);

// §4.2 read-out, in place (kimi::output_norm_gate): each of n_rows rows of d values becomes
// RMSNorm(o; norm) ⊙ gate (sum of squares in double, as cpu_ops rms_norm). norm [d]; gate rows
// aligned with o's.
void kda_output_norm_gate(float* o, const float* norm, const float* gate, int64_t n_rows, int64_t d,
                          float eps, cudaStream_t s);

}  // namespace moepack::gpu
