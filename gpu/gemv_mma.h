// Internal to gpu/kernels_gemv.cu: the tensor-core decode GEMV (kernels_gemv_mma.cu).
//
// For a group with exactly one pair (decode: one token; or one (token, expert) selection in a
// grouped-experts launch) and a type it covers, y[r] = sum_k W[r][k] x[k] is computed as
//   sum over sub-blocks b of  d1_b * S_b - m1_b * X_b,
//   S_b = sum_{k in b} q_k * x_k   on the tensor cores (mma.sync m16n8k16, f16 in, f32 out),
//   X_b = sum_{k in b} x_k         (F32, element order),
// where q_k are the integer quants (exact in f16) and x_k enters as two f16 halves
// x_hi = f16(x * 2^s), x_lo = f16(x * 2^s - x_hi) with one power-of-two scale 2^s per x vector
// (max |x| * 2^s in [2^14, 2^15)), so x keeps 22 significant bits and cannot overflow f16.
// Products are exact; the only rounding beyond the CPU's is the F32 accumulation order and the
// 2^-22 relative truncation of x: |gpu - cpu| stays within gpu_ops_test's 1e-5 * sum |w x| + 1e-6.
//
// Which pair takes this path depends only on the group's own pair count, never on how groups
// are batched into launches, so the pack path and the GGUF path (which batch experts
// differently) still compute every (token, expert) pair with the same arithmetic, bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/kernels.h"

namespace moepack::gpu::detail {

// True when the tensor-core path covers `type` at rows of ne0 elements (Q4_K and Q2_K: ne0 a
// multiple of 256; weight matrices 4-byte aligned, as GGUF data (32) and pack roles (256) are). The activations' fragments take 4.25 bytes per element and group of scratch
// (cudaMallocAsync on the launch's stream, freed after the launch).
bool gemv_mma_supported(GgmlType type, int64_t ne0);

// Runs every group of b whose pair count is exactly one (with grp_off), or the single pair
// (without grp_off, n_tok == 1). Groups with another pair count are left to the caller.
void gemv_mma(const GemvBatch& b, cudaStream_t s);

// Benchmarks only (bench_cuda_backend's side-by-side): 0 = the default (grouped launches: 64
// rows per block, x staged per block, 1 super-block loaded ahead; a single matrix: as 2);
// 1 = grouped layout with 3 super-blocks ahead; 2 = 16 rows per
// block, each row split over the block's 4 warps, x staged per block; 3 = the same with x
// fragments written once per group by a separate kernel into scratch. Process-wide; a run
// must not mix variants (their sums differ in rounding). Throws Error outside 0..3.
void set_gemv_mma_variant(int variant);

}  // namespace moepack::gpu::detail
