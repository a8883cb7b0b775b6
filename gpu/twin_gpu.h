// `moepack bench-twin --backend cuda`: the twin benchmark's GPU path (bench/twin_bench.h has
// the CPU path, the counting and the report). Delivery is the CUDA backend's: VramExpertPool
// (gpu/vram_expert_pool.h: ExpertCache + DirectReader into pinned staging + async H2D into VRAM
// slots); compute is the backend's quantized GEMV kernels (gpu/kernels.h) on the twin's blocks
// in their slots: per selected expert gate and up GEMV, SwiGLU, down GEMV; then
// combine_experts with weights 1/k, x += y, x = rms_norm(x) (as the CPU path).
//
// Schedules:
//   serial      after each layer's kernels the host waits for the compute stream, so the next
//               layer's reads start only after this layer computed (the published design).
//   overlapped  (default) no host wait between layers: while the GPU computes layer l, the host
//               reads layer l+1's misses into staging and queues their copies (the pool orders
//               copies after the kernels that read an evicted slot). As on the CPU, this
//               assumes the next layer's routing is known (trace / router): an upper bound.
// The host synchronises once per step (end of the token) to check the output and time it.
#pragma once

#include "bench/twin_bench.h"

namespace moepack::gpu {

// Throws Error (no GPU, budget below top-k slots, CUDA failures with file and line), IoError.
bench::TwinRunResult run_twin_bench_cuda(const bench::TwinBenchOptions& o, bench::TwinBenchSetup& setup);

}  // namespace moepack::gpu
