// Routed and shared expert FFNs on the CPU for the architectures with their own block forward
// (arch_deepseek4.cpp, arch_kimi_linear.cpp). The router has already chosen; this file only
// executes: experts are fetched through the same ExpertProvider as cpu_backend.cpp (resident
// GGUF tensors or the Expert Pack cache), once per distinct expert for all tokens that chose it.
//
// SwiGLU with DeepSeek-V4's clamps (ARCH_DEEPSEEK4.md §4.8 step 5, llama.cpp build_moe_ffn with
// swiglu_limit): gate <- min(gate, L) (before silu), up <- clamp(up, -L, L); no clamp when
// L <= 1e-6. out = down · (silu(gate) ⊙ up).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/cpu_ops.h"
#include "core/model_config.h"

namespace moepack {

class ExpertProvider;
class ThreadPool;

// g[i] = silu(min(g[i], L)) * clamp(u[i], -L, L) for i < n (plain SwiGLU when limit <= 1e-6).
void swiglu_clamped(float* g, const float* u, int64_t n, float limit);

// out[t] += down · swiglu_clamped(gate · x[t], up · x[t]) for t < n. x, out: [n][E], E = gate.ne0.
void dense_swiglu_ffn(ThreadPool& pool, const WeightView& gate, const WeightView& up, const WeightView& down,
                      const float* x, int64_t n, float limit, float* out);

// out[t] += Σ_j w[t*k + j] · expert_{ids[t*k + j]}(x[t]) for the n tokens of blk.`block`.
// x, out: [n][E]; ids, w: [n][k]. Returns the expert FFNs evaluated (== n * k: exact routing;
// Error otherwise). Adds the time spent waiting for expert delivery to *io_wait_ms. Throws
// what ExpertProvider::acquire throws (IoError, FormatError, Error).
// `resident`, if set, is called once, as soon as the block's last batch of experts waits for no
// read (ExpertProvider::acquire_each's `all_landed`; next-layer prefetch starts its reads there):
// before any of them computes when they are all resident. Each expert computes as it arrives;
// the outputs are added in ascending expert id, so the result does not depend on arrival order.
uint64_t run_routed_experts(ThreadPool& pool, ExpertProvider& experts, uint32_t block, const float* x,
                            int64_t n, int64_t E, int64_t k, const int32_t* ids, const float* w, float limit,
                            float* out, double* io_wait_ms, const std::function<void()>& resident = {});

// Next-layer prefetch's prediction (docs/cuda-backend.md, "Next-layer prefetch"): the experts
// the next MoE block would pick (route_token with its `bias`, null if none) if its router
// (`router`, [n_expert][n_embd]) saw this block's router input x ([n][n_embd]), most picked
// first (experts_by_picks).
std::vector<uint32_t> predict_next_experts(ThreadPool& pool, const ModelConfig& cfg, const WeightView& router,
                                           const float* bias, const float* x, int64_t n);

// Next-layer prefetch for blk.`il`: when `experts` prefetches and a MoE block follows blk.il,
// a call that starts the reads of that block's experts as `predict(next block)` ranks them
// (run_routed_experts' `resident`); otherwise (or when nothing is predicted) an empty function.
std::function<void()> prefetch_next_block(ExpertProvider& experts, const ModelConfig& cfg, uint32_t il,
                                          const std::function<std::vector<uint32_t>(uint32_t)>& predict);

}  // namespace moepack
