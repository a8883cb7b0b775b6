// SwiGLU of one element, as core/cpu_moe.h computes it: silu(g) u, and DeepSeek-V4's clamped
// form silu(min(g, L)) clamp(u, -L, L). The one expression of every CUDA kernel that computes
// it (kernels_elementwise.cu's swiglu / swiglu_clamped, kernels_gemv_mma.cu's
// swiglu_clamped_fragments and the GEMV's SwiGLU epilogue), so their values are the same bit for
// bit (all built with --fmad=false, gpu/CMakeLists.txt).
#pragma once

__device__ __forceinline__ float swiglu_one(float g, float u) { return (g / (1.0f + expf(-g))) * u; }

__device__ __forceinline__ float swiglu_clamped_one(float g, float u, float limit) {
  return swiglu_one(fminf(g, limit), fminf(fmaxf(u, -limit), limit));
}
