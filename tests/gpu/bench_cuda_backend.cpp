// GPU benchmarks, one JSON object on stdout (tests/gpu/run_on_device.sh stores it in $OUT):
//   "gemv":   quantized expert GEMV at decode shapes (8 experts of [rows][cols] per launch, one
//             token each), achieved bytes/s and its ratio to the device-to-device copy
//             bandwidth measured in the same run (issue 7 target >= 0.7 for Q4_K, Q2_K, MXFP4);
//             plus one dense 4096x4096 matrix per launch for Q4_K and Q8_0 (experts_per_launch 1);
//   "gemv_mma_variants": the decode layouts of gpu/gemv_mma.h side by side (-1: F32 kernels; 22
//             the ninth pass's arithmetic) on the four 8-expert shapes, one 4096x4096 matrix and
//             gate + up (16 matrices);
//   "gemv_diagnosis": the default's expert launches (variant 0) beside their copies alone (6)
//             and arithmetic alone (7), with x's fragments prepared once per group (24) and
//             with no preparation at all (25, wrong sums);
//   "gemv_without_pdl": the tensor-core launches of "gemv" without programmatic dependent launch;
//   "gemv_scaling": 8 experts of 16 .. 8192 rows (fixed cost per launch vs bytes);
//   "gemv_gate_up": gate and up of 8 experts in one launch (16 matrices);
//   "gemv_ready_fragments": the four 8-expert shapes with x's fragments ready from the SwiGLU
//             kernel (measured, not what the engine runs: docs/cuda-backend.md, eleventh pass),
//             and SwiGLU + GEMV both ways; the gate + up launch and the whole expert FFN (gate
//             + up, SwiGLU, down) with and without SwiGLU as the gate + up launch's epilogue
//             (what the engine runs at decode);
//   "gemv_graph" (--gemv-graph-only): the issue's decode launches, a plain read of their bytes and a
//             layer's expert FFN, each on the legacy default stream, on a stream of its own and as a
//             captured CUDA graph (the engine's decode), side by side;
//   "read_ceiling": a plain streaming read kernel and a D2D copy of the same byte counts as the
//             launches above (what any kernel reading those bytes in one launch can reach);
//   "gemv_tiled": the default expert launches beside the same launches on weights in the tiled
//             layout (gpu/gemv_tiled.h): the launch's own choice ("tiled_depth", "tiled_warps"
//             0, "tiled_runs" 0), the same without runs of tiles a warp ("tiled_runs" -1),
//             4-16 warps a block ("tiled_warps"; 1-2 chunks in flight and 1-2 warps a tile stay
//             settable), the four 8-expert shapes, 6 x 4096 x 2048 and gate + up (16 matrices);
//   "expert_ffn": a layer's expert FFN at decode as the engine issues it (gate + up with the
//             SwiGLU epilogue, then down, its programmatic dependent), GGUF and tiled layouts,
//             at 8 x 2048 on 4096 and 7168 and 6 x 2048 on 4096 (with --tiled-only too); on
//             the tiled layout also in one launch (gpu::gemv_experts_ffn: "one_launch_us", and
//             "one_launch_by_warps" at 8, 12, 16 warps a block);
//   "gemv_f32_types": the F32 kernels' types without a tensor-core path (Q3_K with its tensor
//             cores off, Q5_K, Q4_0, Q4_1, Q5_0, Q5_1) dequantized in registers and byte by byte side by side
//             ("bytewise"), Q6_K (its tensor cores off) and Q8_0 beside them: decode launches of 8 experts,
//             Kimi-K3's 16-expert Q3_K-shaped down launch, a prefill launch of 16 pairs an expert;
//   "gemv_prefill_x": the F32 kernels at prefill with the pairs' x staged in shared memory and
//             read from global memory side by side ("x_global"), 8, 16, 64 pairs an expert and
//             a dense matrix of 128 tokens ("multiply_adds_per_s");
//             --f32-only: these two sections and, for the model and every --graph-model, the
//             engine's prefill and decode with x staged and not ("prefill_x_staged_of");
//   "gemv_prefill_mma" (--prefill-mma-only): prefill launches in the F32 kernels and on the
//             tensor cores ("prefill_mma", forty-third session; every group of two or more pairs)
//             side by side, 8 block types, expert launches of 2 to 64 pairs an expert and a dense
//             matrix of 128 and 512 tokens; "engine"/"prefill_mma_of" (and "_short_of", 32
//             tokens): the engine's prefill and decode both ways for the model and every
//             --graph-model; "prefill_mma_min8_of" (and "_short_of"): groups of 2 to 7 pairs
//             in the F32 kernels (on, set_gemv_prefill_mma_min_pairs(8)) or on the tensor cores
//             (off, a minimum of 2); "gemv_prefill_mma_rule": expert launches of 2048 x 4096 and
//             4096 x 2048 with groups of mixed and of uniform sizes under the default rule
//             (gpu/gemm_mma_layout.h prefill_mma_default_min_pairs, on) and a minimum of 2 (off);
//             "gemv_prefill_columns" (first): decode columns at prefill (set_gemv_prefill_columns,
//             up to 16 pairs, on) against none (off), launches of 2 to 16 pairs an expert, mixed groups
//             and dense few-token launches (bench_prefill_columns); "engine"/"prefill_columns_of" (and
//             "_short_of", 32 tokens) the engine's prefill and decode both ways;
//   "gemv_prefill_half_x" (--prefill-host-sizes-only, first): the tensor cores' prefill staging x half a
//             unit and the whole unit at a time side by side (bench_prefill_half_x); "engine"/
//             "prefill_half_x_of" (last): the engine both ways;
//   "gemv_prefill_quant_a" (--prefill-quant-a-only, first): the prefill with A made from the quants
//             (set_gemv_prefill_quant_a, on) against W's f16 halves (off), and "gemv_prefill_quant_a_half_x"
//             with it on, half a unit against the whole (bench_prefill_quant_a);
//             "engine"/"prefill_quant_a_of" (and "_short_of", 32 tokens): the engine both ways;
//   "gemv_prefill_k_split", "gemv_prefill_k_split_f32", "gemv_prefill_columns_quant_a",
//             "gemv_prefill_mma_quant_a" (--prefill-rules-only): the K split of dense launches against
//             none and against the F32 kernels (bench_prefill_k_split); the columns and the F32 kernels
//             each against the tensor cores' prefill with A from the quants (bench_prefill_columns_quant_a,
//             bench_prefill_mma_quant_a); --rules-skip-k-split leaves the K split parts out;
//   "gemv_prefill_expert_k_split" (and "_rule", "_4"), "gemv_prefill_dense_huge",
//             "gemv_prefill_dense_columns" (--expert-k-split-only): the K split of expert launches against
//             none, dense launches that fill the device in the F32 kernels and on the tensor cores, and dense
//             launches of 2-4 tokens as columns and on the tensor cores (bench_prefill_expert_k_split,
//             bench_prefill_dense_huge, bench_prefill_dense_columns);
//   "gemv_prefill_dense_neither_<type>" (--dense-neither-only): dense launches whose one pair tile holds
//             between half and all of the device's blocks, in the F32 kernels and on the tensor cores
//             (bench_prefill_dense_neither);
//   "gemv_prefill_dense_whole_columns_<type>" (--dense-whole-columns-only): those launches at 2-5 tokens as
//             decode columns and on the tensor cores, and Q3_K's and Q5_K's "..._dense_neither_<type>";
//   "gemv_prefill_host_sizes" (--prefill-host-sizes-only): the host's copy of the group sizes read
//             and ignored (set_gemv_prefill_host_sizes) side by side on expert launches whose groups are
//             all above the columns' C, mixed, or all columns (bench_prefill_host_sizes);
//             "engine"/"prefill_host_sizes_of" (and "_short_of", 32 tokens): the engine both ways;
//   "gemv_prefill_columns_tiled" (--prefill-columns-only, first): columns of up to 32 pairs against none on
//             tiled expert launches of 16 to 32 pairs an expert (bench_prefill_columns_tiled);
//   "gemv_prefill_columns_rule": the columns' default rule (gpu/prefill_columns.h,
//             on) against none (off) around its edges (bench_prefill_columns_rule); "gemv_prefill_mma_dense":
//             a dense 4096 x 4096 matrix of 16 to 48 tokens in the F32 kernels and on the tensor cores;
//             "engine"/"prefill_columns_rule_of" (and "_short_of", 32 tokens): the engine both ways;
//   "q3k_depth" (--q3k-depth-only): Q3_K's tiled expert launches at depth 1 and 2, alternating
//             (bench_q3k_depth), 8 experts of 2048 to 4096 rows (steps of 512) of 1536, 2048 and
//             3072 elements: launches of 8 x 2048 to 8 x 4096 rows with rows under 16 units,
//             between the ends of gemv_tiled.h's kTiledQ3kDepthTwoMaxRows rule;
//   "gemv_q3k" (--q3k-only): Q3_K's decode launches on the tensor cores (Q3kColPath, the
//             default) and in the F32 kernels ("f32_kernels": set_gemv_tensor_cores(Q3_K, false),
//             before the twenty-sixth pass) side by side, Q2_K's default beside them, with each
//             shape's read ceiling: Kimi-K3's 16-expert down (7168 x 1536) and gate (1536 x
//             7168) launches, the four 8-expert shapes, one 4096 x 4096 matrix; with --twin DIR
//             (a `moepack twin` pack) also `bench-twin --backend cuda --zipf 1.0` on it, every
//             expert cached, both ways ("twin_q3k": after_warmup compute ms a step); "variants":
//             the expert launches' copies alone (6), arithmetic alone (7), four super-blocks
//             a stage (26), and every launch one super-block a stage (27) and with the other
//             copy width (28), beside the default (0, before and after); "expert_ffn": a layer's
//             expert FFN with every matrix Q3_K in the engine's order, both ways; "tiled" /
//             "tiled_glu" / "tiled_ffn" as --q5k-only's;
//   "gemv_q6k" (--q6k-only): the same for Q6_K (Q6kColPath, twenty-seventh pass), Q4_K's default
//             beside it, the diagnosis variants 6 and 7, and "expert_ffn" also with Q4_K gate + up
//             and a Q6_K down (the Q4_K_M mixture's layers), both ways; and "engine"/
//             "k_tensor_cores_of": decode and prefill of the model and every --graph-model with
//             Q3_K's, Q5_K's and Q6_K's tensor cores off and on, alternating, three each;
//   "gemv_q5k" (--q5k-only): the same for Q5_K (Q5kColPath, twenty-eighth pass): variants 6, 7
//             and 20 (one super-block a stage), "expert_ffn" also with Q5_K gate + up and a Q6_K
//             down (Q5_K_M's), "tiled" / "tiled_glu" / "tiled_ffn": its tiled layout (twenty-
//             ninth pass) beside the GGUF's, alternating (--q6k-only and --q3k-only too;
//             --q6k-only also "tiled_ffn_q4k_gate_up": Q4_K gate + up tiled, the Q6_K down
//             both ways), and
//             "engine"/"k_tensor_cores_of" as --q6k-only;
//   MOEPACK_BENCH_VARIANTS=0,3,... limits "gemv_mma_variants" to the listed variants;
//   "engine": prefill and decode tokens/s of the CUDA backend on a model (default: the demo
//             model) from its GGUF (all experts resident) and from its Expert Pack with all
//             experts cached and with 25% of them, with hit rate, bytes read and I/O wait;
//             the GGUF's decode with the SwiGLU epilogue off and on, and with the shared
//             expert after the routed experts and beside the host's choice, alternating, three
//             each;
//             at 25% also with next-layer prefetch off and on, alternating, three runs each;
//             the GGUF and the pack at 25% with every routed expert in the tiled layout and
//             none (tiled_experts "on" and "off": "gguf_tiled_experts",
//             "pack_25pct_tiled_experts", decode and prefill, alternating, three each);
//   "engine"/"decode_graph_of", "router_on_device_of", "tiled_experts_of": for every
//             --graph-model GGUF (e.g. a kimi-linear or deepseek4 fixture: their own backends),
//             decode with the decode graph off and on, with the router on the host and on the
//             GPU, and with tiled_experts "off" and "on", alternating, three each
//             (--graph-only: the decode graph's and the router's alone, no other section; it
//             needs at least one --graph-model).
// Usage: bench_cuda_backend [MODEL.gguf] [--prefill N] [--decode N] [--engine-only | --gemv-only |
//                           --tiled-only | --gemv-graph-only | --graph-only | --ffn-only | --f32-only | --q3k-only [--twin DIR] |
//                           --q6k-only]
//                           [--graph-model GGUF]...
//        bench_cuda_backend --gemv TYPE ROWS COLS EXPERTS VARIANT [--pairs N]   (one launch shape
//        and its read ceiling only, e.g. under a profiler: --gemv q4_K 2048 4096 8 0; --pairs N:
//        N pairs an expert, the F32 kernels' prefill launch)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/twin_bench.h"
#include "core/backend_factory.h"
#include "core/error.h"
#include "core/io_bench.h"
#include "core/model_source.h"
#include "gpu/cuda_backend.h"
#include "gpu/cuda_host_router.h"
#include "gpu/cuda_resources.h"
#include "gpu/device_info.h"
#include "gpu/device_routing.h"
#include "gpu/gemm_mma_layout.h"
#include "gpu/gemv_mma.h"
#include "gpu/kernels.h"
#include "gpu/tiled_experts.h"
#include "gpu/twin_gpu.h"
#include "packbuilder/pack_builder.h"
#include "tests/gpu/prefill_mma_scope.h"
#include "tests/gpu/read_probe.h"

namespace {

using namespace moepack;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double d2d_bandwidth() {
  const size_t bytes = 1ull << 30;
  gpu::DeviceBuffer a(bytes, "bench"), b(bytes, "bench");
  MOEPACK_CUDA_CHECK(cudaMemcpy(b.as<void>(), a.as<void>(), bytes, cudaMemcpyDeviceToDevice));  // warm-up
  float ms = 0;
  cudaEvent_t t0, t1;
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t0));
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t1));
  MOEPACK_CUDA_CHECK(cudaEventRecord(t0));
  for (int i = 0; i < 10; ++i)
    MOEPACK_CUDA_CHECK(cudaMemcpy(b.as<void>(), a.as<void>(), bytes, cudaMemcpyDeviceToDevice));
  MOEPACK_CUDA_CHECK(cudaEventRecord(t1));
  MOEPACK_CUDA_CHECK(cudaEventSynchronize(t1));
  MOEPACK_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return 2.0 * 10.0 * static_cast<double>(bytes) / (ms / 1e3);  // read + write
}

// Random bytes for every GEMV launch of the run (each byte below 64: small f16 scales, no
// inf/NaN), filled once: a 64 MiB random block uploaded over and over.
struct WeightPool {
  gpu::DeviceBuffer buf;
  explicit WeightPool(size_t bytes) : buf(bytes, "bench weights") {
    std::vector<uint8_t> host(64ull << 20);
    std::mt19937 rng(1);
    for (auto& b : host) b = static_cast<uint8_t>(rng() & 0x3F);
    for (size_t off = 0; off < bytes; off += host.size()) {
      MOEPACK_CUDA_CHECK(cudaMemcpy(buf.bytes_ptr() + off, host.data(), std::min(host.size(), bytes - off),
                                    cudaMemcpyHostToDevice));
    }
  }
};

// `iters` (default 64) rounds of body(i) on the default stream after one untimed round body(0): the GPU's
// time a round (events) and the host's time to issue one (when that nears the GPU's, the launches wait for
// the host rather than the GPU).
struct Timing {
  double gpu_us = 0, host_us = 0;
};
template <class Body>
Timing time_launches(Body&& body, int iters = 64) {
  body(0);
  cudaEvent_t t0, t1;
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t0));
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t1));
  MOEPACK_CUDA_CHECK(cudaEventRecord(t0));
  const auto host0 = Clock::now();
  for (int i = 0; i < iters; ++i) body(i);
  const double host_us = std::chrono::duration<double, std::micro>(Clock::now() - host0).count();
  MOEPACK_CUDA_CHECK(cudaEventRecord(t1));
  MOEPACK_CUDA_CHECK(cudaEventSynchronize(t1));
  float ms = 0;
  MOEPACK_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return {static_cast<double>(ms) * 1e3 / iters, host_us / iters};
}

// grp_off of `experts` groups with one pair each (pair e in group e).
// n floats from N(0, 1) (std::mt19937 seeded with `seed`) in device memory.
gpu::DeviceBuffer normal_floats(size_t n, unsigned seed) {
  std::vector<float> h(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : h) v = nd(rng);
  gpu::DeviceBuffer d(n * sizeof(float), "x");
  MOEPACK_CUDA_CHECK(cudaMemcpy(d.as<void>(), h.data(), d.size(), cudaMemcpyHostToDevice));
  return d;
}

// Group offsets 0, pairs, 2 pairs, ..., experts pairs on the device (grp_off of `experts` groups).
gpu::DeviceBuffer pairs_each(int experts, int pairs) {
  std::vector<int32_t> off(static_cast<size_t>(experts) + 1);
  for (int e = 0; e <= experts; ++e) off[static_cast<size_t>(e)] = e * pairs;
  gpu::DeviceBuffer d_off(off.size() * sizeof(int32_t), "grp_off");
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_off.as<void>(), off.data(), d_off.size(), cudaMemcpyHostToDevice));
  return d_off;
}

// The launch of `experts` matrices of [rows][cols] back to back (b.w set by the caller), pair j
// reading x row j and writing y row j; experts == 1: one matrix without groups.
gpu::GemvBatch expert_batch(GgmlType type, int64_t rows, int64_t cols, const float* x, float* y,
                            const gpu::DeviceBuffer& d_off, int experts) {
  const uint64_t rb = *ggml_row_bytes(type, static_cast<uint64_t>(cols));
  gpu::GemvBatch b;
  b.type = type;
  b.ne0 = cols;
  b.ne1 = rows;
  b.row_bytes = rb;
  b.w_gstride = rb * static_cast<uint64_t>(rows);
  b.x = x;
  b.x_stride = cols;  // pair j reads x row j
  b.y = y;
  b.y_stride = rows;  // pair j writes y row j
  b.n_groups = experts;
  if (experts > 1) {
    b.grp_off = d_off.as<int32_t>();
    b.max_pairs = 1;
  } else {
    b.n_tok = 1;  // bench_gemv: its pairs (tokens)
  }
  return b;
}

// One launch timed over sizes.size() matrices of [rows][cols] back to back, the weights rotated
// over up to 32 copies (so that the 50 MB L2 does not serve them): with several matrices one group a matrix
// of sizes[g] pairs (pair j reading x row j), with one a dense launch of sizes[0] tokens. Its bytes: the
// matrices'. The launch carries the host's copy of the group sizes (GemvBatch::grp_off_host), as the
// engine's do; set_gemv_prefill_host_sizes decides whether it is read.
struct LaunchTime {
  Timing t;
  uint64_t bytes = 0;
};
LaunchTime time_gemv(const WeightPool& pool, GgmlType type, int64_t rows, int64_t cols,
                     const std::vector<int32_t>& sizes, bool tiled) {
  const int experts = static_cast<int>(sizes.size());
  const uint64_t rb = *ggml_row_bytes(type, static_cast<uint64_t>(cols));
  const uint64_t mat = rb * static_cast<uint64_t>(rows);
  const int copies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / (mat * experts)));
  if (copies < 4) throw Error("bench_gemv: weight pool too small");
  std::vector<int32_t> off = {0};
  for (const int32_t n : sizes) off.push_back(off.back() + n);
  const int32_t pairs = off.back();
  const gpu::DeviceBuffer x = normal_floats(static_cast<size_t>(cols * pairs), 2);
  gpu::DeviceBuffer y(static_cast<size_t>(rows * pairs) * sizeof(float), "y");
  gpu::DeviceBuffer d_off(off.size() * sizeof(int32_t), "grp_off");
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_off.as<void>(), off.data(), d_off.size(), cudaMemcpyHostToDevice));
  gpu::GemvBatch b = expert_batch(type, rows, cols, x.as<float>(), y.as<float>(), d_off, experts);
  if (experts > 1) {
    b.max_pairs = *std::max_element(sizes.begin(), sizes.end());
    b.grp_off_host = off.data();
  } else {
    b.n_tok = sizes[0];
  }
  b.w_tiled = tiled;  // the pool's random bytes stand for either layout
  const Timing t = time_launches([&](int i) {
    b.w = pool.buf.bytes_ptr() + (i % copies) * mat * experts;
    gpu::gemv(b, nullptr);
  });
  return {t, mat * experts};
}

// One token through `experts` matrices of [rows][cols] per launch. With experts > 1 the launch
// is what the engine issues for a layer's selected experts: one group a matrix with one pair
// each (grp_off), every group its own x row. Up to 32 copies of the matrices rotate so that the
// weights are not served from the 50 MB L2.
// pairs > 1 (experts > 1): a prefill launch, group g the pairs [g pairs, (g + 1) pairs), pair j
// reading x row j: the F32 prefill kernel (gpu/kernels_gemv.cu), which gathers each row's units
// from the tiles when tiled.
nlohmann::json bench_gemv(const WeightPool& pool, GgmlType type, int64_t rows, int64_t cols, double d2d,
                          int experts = 8, bool tiled = false, int pairs = 1) {
  const auto [t, bytes] =
      time_gemv(pool, type, rows, cols, std::vector<int32_t>(static_cast<size_t>(experts), pairs), tiled);
  const double bps = static_cast<double>(bytes) / (t.gpu_us / 1e6);
  return {{"type", std::string(ggml_type_name(type))},
          {"rows", rows},
          {"cols", cols},
          {"tiled", tiled},
          {"experts_per_launch", experts},
          {"pairs_per_expert", pairs},
          {"bytes_per_launch", bytes},
          {"us_per_launch", t.gpu_us},
          {"host_us_per_launch", t.host_us},
          {"bytes_per_s", bps},
          {"ratio_to_d2d", bps / d2d},
          {"multiply_adds_per_s", static_cast<double>(rows * cols) * experts * pairs / (t.gpu_us / 1e6)}};
}

// The down projection's decode launch with x's fragments ready (gpu/kernels.h
// swiglu_clamped_fragments; measured, not what the engine runs): 8 experts of [rows][cols], x row j = SwiGLU of random gate / up
// rows, written with its fragments by swiglu_clamped_fragments. "us_per_launch" / "ratio_to_d2d":
// the GEMV alone copying the fragments (as "gemv", the same rotation of weight copies);
// "swiglu_us" / "swiglu_fragments_us": the SwiGLU kernel alone without / with the fragments;
// "pair_us" / "pair_ready_us": SwiGLU then GEMV (as the engine runs them for prefill; at
// decode SwiGLU is the gate + up launch's epilogue, timed below), without / with
// (pair_ready_without_pdl_us: with, the SwiGLU kernel not a programmatic dependent of the GEMV
// before it; it still lets the GEMV after it start early).
nlohmann::json bench_gemv_ready(const WeightPool& pool, GgmlType type, int64_t rows, int64_t cols, double d2d) {
  const int experts = 8;
  const uint64_t rb = *ggml_row_bytes(type, static_cast<uint64_t>(cols));
  const uint64_t mat = rb * static_cast<uint64_t>(rows);
  const int copies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / (mat * experts)));
  if (copies < 4) throw Error("bench_gemv_ready: weight pool too small");
  const int64_t fb = gpu::gemv_x_fragments_bytes(type, cols);
  if (fb <= 0) throw Error("bench_gemv_ready: no ready fragments for this type and row length");
  const size_t n = static_cast<size_t>(cols * experts);
  gpu::DeviceBuffer g(n * sizeof(float), "gate"), u(n * sizeof(float), "up"), x(n * sizeof(float), "x"),
      y(static_cast<size_t>(rows * experts) * sizeof(float), "y"), frag(static_cast<size_t>(fb * experts), "frag");
  std::vector<float> h(n);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  for (auto& v : h) v = nd(rng);
  MOEPACK_CUDA_CHECK(cudaMemcpy(g.as<void>(), h.data(), g.size(), cudaMemcpyHostToDevice));
  for (auto& v : h) v = nd(rng);
  MOEPACK_CUDA_CHECK(cudaMemcpy(u.as<void>(), h.data(), u.size(), cudaMemcpyHostToDevice));
  const gpu::DeviceBuffer d_off = pairs_each(experts, 1);
  gpu::GemvBatch b = expert_batch(type, rows, cols, x.as<float>(), y.as<float>(), d_off, experts);
  const float limit = 10.0f;
  const auto swiglu_plain = [&] {
    gpu::swiglu_clamped(g.as<float>(), u.as<float>(), static_cast<int64_t>(n), limit, x.as<float>(), nullptr);
  };
  const auto swiglu_frag = [&] {
    gpu::swiglu_clamped_fragments(g.as<float>(), u.as<float>(), experts, cols, limit, x.as<float>(), type,
                                  frag.bytes_ptr(), fb, nullptr);
  };
  const auto timed = [&](auto&& body) { return time_launches(body).gpu_us; };
  const auto gemv_at = [&](int i, bool ready) {
    b.w = pool.buf.bytes_ptr() + (i % copies) * mat * experts;
    b.x_frag = ready ? frag.bytes_ptr() : nullptr;
    b.x_frag_stride = ready ? fb : 0;
    gpu::gemv(b, nullptr);
  };
  swiglu_frag();
  const double gemv_us = timed([&](int i) { gemv_at(i, true); });
  const double sw_us = timed([&](int) { swiglu_plain(); });
  const double swf_us = timed([&](int) { swiglu_frag(); });
  const double pair_us = timed([&](int i) {
    swiglu_plain();
    gemv_at(i, false);
  });
  const double pair_ready_us = timed([&](int i) {
    swiglu_frag();
    gemv_at(i, true);
  });
  double pair_ready_nopdl_us = 0;
  {
    struct PdlAfterwards {  // also when a launch throws
      ~PdlAfterwards() { gpu::detail::set_swiglu_fragments_pdl(true); }
    } restore;
    gpu::detail::set_swiglu_fragments_pdl(false);
    pair_ready_nopdl_us = timed([&](int i) {
      swiglu_frag();
      gemv_at(i, true);
    });
  }
  b.x_frag = nullptr;  // left set by the ready launches above
  b.x_frag_stride = 0;
  const double bps = static_cast<double>(mat * experts) / (gemv_us / 1e6);
  nlohmann::json r = {{"type", std::string(ggml_type_name(type))},
                      {"rows", rows},
                      {"cols", cols},
                      {"experts_per_launch", experts},
                      {"bytes_per_launch", mat * experts},
                      {"us_per_launch", gemv_us},
                      {"bytes_per_s", bps},
                      {"ratio_to_d2d", bps / d2d},
                      {"swiglu_us", sw_us},
                      {"swiglu_fragments_us", swf_us},
                      {"pair_us", pair_us},
                      {"pair_ready_us", pair_ready_us},
                      {"pair_ready_without_pdl_us", pair_ready_nopdl_us}};
  // The whole expert FFN at decode as gpu/cuda_moe.cpp issues it: one launch of gate and up (8
  // experts' [cols][rows] matrices, every pair reading the one token's x row), then SwiGLU and
  // the down GEMV ("ffn_us"), or the gate + up launch with SwiGLU as its epilogue and the down
  // GEMV ("ffn_swiglu_epilogue_us", what the engine runs); the gate + up launch alone both ways
  // ("gate_up_us", "gate_up_swiglu_epilogue_us", its bytes "gate_up_bytes"). Layers of down +
  // gate + up weights rotate through the pool as the launches above.
  const uint64_t rb_gu = *ggml_row_bytes(type, static_cast<uint64_t>(rows));
  const uint64_t mat_gu = rb_gu * static_cast<uint64_t>(cols);
  const uint64_t layer = mat * experts + 2 * mat_gu * experts;
  const int lcopies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / layer));
  if (lcopies < 4) throw Error("bench_gemv_ready: weight pool too small for the FFN");
  gpu::DeviceBuffer tok(static_cast<size_t>(rows) * sizeof(float), "token");
  {
    std::vector<float> th(static_cast<size_t>(rows));
    for (auto& v : th) v = nd(rng);
    MOEPACK_CUDA_CHECK(cudaMemcpy(tok.as<void>(), th.data(), tok.size(), cudaMemcpyHostToDevice));
  }
  const gpu::DeviceBuffer d_off16 = pairs_each(2 * experts, 1);  // the first 9 serve the epilogue's 8 groups
  gpu::DeviceBuffer d_rows(static_cast<size_t>(2 * experts) * sizeof(int32_t), "x rows");
  MOEPACK_CUDA_CHECK(cudaMemset(d_rows.as<void>(), 0, d_rows.size()));  // every pair reads row 0
  gpu::DeviceBuffer gu_out(static_cast<size_t>(2 * experts * cols) * sizeof(float), "gate, up");
  float* gate_rows = gu_out.as<float>();
  float* up_rows = gate_rows + experts * cols;
  gpu::DeviceBuffer d_tables(static_cast<size_t>(lcopies) * 2 * experts * sizeof(uint8_t*), "gate, up tables");
  {
    std::vector<const uint8_t*> tab;
    for (int c = 0; c < lcopies; ++c) {
      for (int e = 0; e < 2 * experts; ++e)
        tab.push_back(pool.buf.bytes_ptr() + c * layer + mat * experts + static_cast<uint64_t>(e) * mat_gu);
    }
    MOEPACK_CUDA_CHECK(cudaMemcpy(d_tables.as<void>(), tab.data(), d_tables.size(), cudaMemcpyHostToDevice));
  }
  const auto gate_up = [&](int i, bool epilogue) {
    const uint8_t* const* table = d_tables.as<const uint8_t*>() + (i % lcopies) * 2 * experts;
    if (epilogue) {
      gpu::gemv_experts_swiglu(type, rows, cols, rb_gu, table, d_off16.as<int32_t>(), experts, 1,
                               d_rows.as<int32_t>(), tok.as<float>(), rows, limit, gate_rows, cols, nullptr);
    } else {
      gpu::gemv_experts(type, rows, cols, rb_gu, table, d_off16.as<int32_t>(), 2 * experts, 1,
                        d_rows.as<int32_t>(), tok.as<float>(), rows, gate_rows, cols, nullptr);
    }
  };
  const auto ffn = [&](int i, bool epilogue) {
    gate_up(i, epilogue);
    if (!epilogue) gpu::swiglu_clamped(gate_rows, up_rows, experts * cols, limit, gate_rows, nullptr);
    b.w = pool.buf.bytes_ptr() + (i % lcopies) * layer;
    b.x = gate_rows;
    gpu::gemv(b, nullptr);
    b.x = x.as<float>();
  };
  r["gate_up_bytes"] = 2 * mat_gu * experts;
  r["gate_up_us"] = timed([&](int i) { gate_up(i, false); });
  r["gate_up_swiglu_epilogue_us"] = timed([&](int i) { gate_up(i, true); });
  r["ffn_us"] = timed([&](int i) { ffn(i, false); });
  r["ffn_swiglu_epilogue_us"] = timed([&](int i) { ffn(i, true); });
  r["ffn_bytes"] = layer;
  return r;
}

// The current device's multiprocessors (the plain read's grid: tests/gpu/read_probe.h).
int multiprocessors() {
  int sm = 0, dev = 0;
  MOEPACK_CUDA_CHECK(cudaGetDevice(&dev));
  MOEPACK_CUDA_CHECK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, dev));
  return sm;
}

// The ceilings beside a GEMV launch of `bytes`: a plain streaming read of the same bytes
// (tests/gpu/read_probe.h) and a cudaMemcpy device-to-device of them (read + write counted),
// back to back over the same rotating copies as bench_gemv.
nlohmann::json bench_read_ceiling(const WeightPool& pool, uint64_t bytes, double d2d) {
  const int copies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / 2 / bytes));
  if (copies < 4) throw Error("bench_read_ceiling: weight pool too small");
  const int sm = multiprocessors();
  gpu::DeviceBuffer sink(sizeof(uint32_t), "sink");
  const uint64_t n = bytes / 64 * 64;
  cudaEvent_t t0, t1;
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t0));
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t1));
  const int iters = 64;
  float ms_read = 0, ms_copy = 0;
  uint8_t* base = pool.buf.bytes_ptr();
  uint8_t* dst = base + pool.buf.size() / 2;
  gpu::bench::read_probe(base, n, sink.as<uint32_t>(), sm, nullptr);
  MOEPACK_CUDA_CHECK(cudaEventRecord(t0));
  for (int i = 0; i < iters; ++i) gpu::bench::read_probe(base + (i % copies) * n, n, sink.as<uint32_t>(), sm, nullptr);
  MOEPACK_CUDA_CHECK(cudaEventRecord(t1));
  MOEPACK_CUDA_CHECK(cudaEventSynchronize(t1));
  MOEPACK_CUDA_CHECK(cudaGetLastError());
  MOEPACK_CUDA_CHECK(cudaEventElapsedTime(&ms_read, t0, t1));
  MOEPACK_CUDA_CHECK(cudaEventRecord(t0));
  for (int i = 0; i < iters; ++i) {
    MOEPACK_CUDA_CHECK(cudaMemcpyAsync(dst + (i % copies) * n, base + (i % copies) * n, n, cudaMemcpyDeviceToDevice));
  }
  MOEPACK_CUDA_CHECK(cudaEventRecord(t1));
  MOEPACK_CUDA_CHECK(cudaEventSynchronize(t1));
  MOEPACK_CUDA_CHECK(cudaEventElapsedTime(&ms_copy, t0, t1));
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  const double read_bps = static_cast<double>(n) * iters / (ms_read / 1e3);
  const double copy_bps = 2.0 * static_cast<double>(n) * iters / (ms_copy / 1e3);
  return {{"bytes", n},
          {"read_us", ms_read * 1e3 / iters},
          {"read_ratio_to_d2d", read_bps / d2d},
          {"copy_us", ms_copy * 1e3 / iters},
          {"copy_ratio_to_d2d", copy_bps / d2d}};
}

nlohmann::json bench_engine(const std::shared_ptr<const ModelSource>& src, const EngineSettings& s,
                            int prefill, int decode) {
  auto be = make_backend(src, s);
  const int32_t nv = static_cast<int32_t>(be->config().n_vocab);
  std::vector<int32_t> prompt(static_cast<size_t>(prefill));
  for (int i = 0; i < prefill; ++i) prompt[static_cast<size_t>(i)] = (i * 7919 + 13) % nv;
  std::vector<float> logits(static_cast<size_t>(nv));
  be->forward(std::span<const int32_t>(prompt.data(), 8), logits);  // warm-up
  be->truncate(0);
  const BackendStats s0 = be->stats();
  auto t0 = Clock::now();
  be->forward(prompt, logits);
  const double t_prefill = seconds_since(t0);
  t0 = Clock::now();
  for (int i = 0; i < decode; ++i) {
    const int32_t next =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    be->forward(std::span<const int32_t>(&next, 1), logits);
  }
  const double t_decode = seconds_since(t0);
  const BackendStats st = be->stats();
  const uint64_t hits = st.cache_hits - s0.cache_hits, misses = st.cache_misses - s0.cache_misses;
  return {{"prefill_tokens", prefill},
          {"prefill_tokens_per_s", prefill / t_prefill},
          {"decode_tokens", decode},
          {"decode_tokens_per_s", decode / t_decode},
          {"cache_slots", st.cache_slots},
          {"cache_hit_rate",
           hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 1.0},
          {"cache_evictions", st.cache_evictions},
          {"pack_read_bytes", st.pack_read_bytes},
          {"h2d_bytes", st.h2d_bytes},
          {"io_wait_ms", st.io_wait_ms - s0.io_wait_ms},
          {"compute_ms", st.compute_ms - s0.compute_ms},
          {"prefetch_reads", st.prefetch_reads - s0.prefetch_reads},
          {"prefetch_hits", st.prefetch_hits - s0.prefetch_hits}};
}

// Gate and up of `experts` experts in one launch with SwiGLU as its epilogue
// (GemvBatch::swiglu_epilogue: the engine's gate + up launch at decode), on the GGUF or the tiled
// layout: the 2 x experts matrices of a launch from a table (gate e at entry e, up at experts + e),
// rotating over copies as bench_gemv does.
nlohmann::json bench_gemv_glu(const WeightPool& pool, GgmlType type, int64_t rows, int64_t cols, double d2d,
                              bool tiled, int experts = 8) {
  const uint64_t rb = *ggml_row_bytes(type, static_cast<uint64_t>(cols));
  const uint64_t mat = rb * static_cast<uint64_t>(rows);
  const int copies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / (mat * 2 * experts)));
  if (copies < 4) throw Error("bench_gemv_glu: weight pool too small");
  std::vector<const uint8_t*> tab(static_cast<size_t>(copies * 2 * experts));
  for (int c = 0; c < copies; ++c) {
    for (int m = 0; m < 2 * experts; ++m)
      tab[static_cast<size_t>(c * 2 * experts + m)] = pool.buf.bytes_ptr() + (c * 2 * experts + m) * mat;
  }
  gpu::DeviceBuffer d_tab(tab.size() * sizeof(const uint8_t*), "tables"),
      y(static_cast<size_t>(rows * experts) * sizeof(float), "y");
  MOEPACK_CUDA_CHECK(cudaMemcpy(d_tab.as<void>(), tab.data(), d_tab.size(), cudaMemcpyHostToDevice));
  const gpu::DeviceBuffer x = normal_floats(static_cast<size_t>(cols * experts), 4);
  const gpu::DeviceBuffer d_off = pairs_each(experts, 1);
  gpu::GemvBatch b = expert_batch(type, rows, cols, x.as<float>(), y.as<float>(), d_off, experts);
  b.swiglu_epilogue = true;
  b.w_tiled = tiled;
  const Timing t = time_launches([&](int i) {
    b.w_table = d_tab.as<const uint8_t* const>() + (i % copies) * 2 * experts;
    gpu::gemv(b, nullptr);
  });
  const double bps = static_cast<double>(2 * mat * experts) / (t.gpu_us / 1e6);
  return {{"type", std::string(ggml_type_name(type))},
          {"rows", rows},
          {"cols", cols},
          {"tiled", tiled},
          {"swiglu_epilogue", true},
          {"experts_per_launch", 2 * experts},
          {"bytes_per_launch", 2 * mat * experts},
          {"us_per_launch", t.gpu_us},
          {"bytes_per_s", bps},
          {"ratio_to_d2d", bps / d2d}};
}

// The engine's expert FFN of one layer at decode, back to back for consecutive layers as
// gpu/cuda_moe.cpp issues it: gate and up of `experts` experts ([inter][hidden] each) in one
// launch with SwiGLU as its epilogue, then the down launch ([hidden][inter] each, pair j reading
// the epilogue's row j), its programmatic dependent; on the tiled layout or the GGUF's, each
// launch's own choices. Where the epilogue does not apply (gemv_swiglu_fusable false: the F32
// kernels), as the engine does then: gate + up into 2 x experts rows, swiglu_clamped, down. Layers of gate +
// up + down weights rotate over copies as bench_gemv's. "ffn_us" a layer, "gate_up_us" / "down_us" each
// launch alone (the same rotation), and "ratio_to_d2d": the layer's weight bytes ("bytes_per_layer") per
// ffn_us over D2D.
// The weights and buffers of bench_expert_ffn's layers (and bench_expert_ffn_three_ways'): `copies` layers
// of gate + up + down in the pool, gate_up(i, s) and down(i, s) issuing layer i % copies' launches on s.
struct FfnLayers {
  GgmlType type, dtype;
  bool tiled, dtiled, epilogue;
  int64_t hidden, inter;
  int experts, copies;
  uint64_t mat_gu, mat_d, layer;
  const WeightPool& pool;
  gpu::DeviceBuffer d_tab, act, y, x, d_off, gu_rows, d_off2, gu_x_rows;
  std::vector<int32_t> off;  // the host's copy of d_off (GemvBatch::grp_off_host)
  gpu::GemvBatch gu, dn;

  FfnLayers(const WeightPool& p, GgmlType t, int64_t hid, int64_t in, int e, bool tl,
            std::optional<GgmlType> down_type = {}, std::optional<bool> down_tiled = {})
      : type(t), dtype(down_type.value_or(t)), tiled(tl), dtiled(down_tiled.value_or(tl)),
        epilogue(gpu::gemv_swiglu_fusable(t, hid, in, tl)), hidden(hid), inter(in), experts(e), pool(p) {
    mat_gu = *ggml_row_bytes(type, static_cast<uint64_t>(hidden)) * static_cast<uint64_t>(inter);
    mat_d = *ggml_row_bytes(dtype, static_cast<uint64_t>(inter)) * static_cast<uint64_t>(hidden);
    layer = 2 * mat_gu * experts + mat_d * experts;
    copies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / layer));
    if (copies < 4) throw Error("bench_expert_ffn: weight pool too small");
    std::vector<const uint8_t*> tab(static_cast<size_t>(copies * 2 * experts));
    for (int c = 0; c < copies; ++c) {
      for (int m = 0; m < 2 * experts; ++m)
        tab[static_cast<size_t>(c * 2 * experts + m)] = pool.buf.bytes_ptr() + c * layer + m * mat_gu;
    }
    d_tab = gpu::DeviceBuffer(tab.size() * sizeof(const uint8_t*), "tables");
    act = gpu::DeviceBuffer(static_cast<size_t>(inter * experts) * sizeof(float), "SwiGLU rows");
    y = gpu::DeviceBuffer(static_cast<size_t>(hidden * experts) * sizeof(float), "y");
    MOEPACK_CUDA_CHECK(cudaMemcpy(d_tab.as<void>(), tab.data(), d_tab.size(), cudaMemcpyHostToDevice));
    x = normal_floats(static_cast<size_t>(hidden * experts), 5);
    d_off = pairs_each(experts, 1);
    for (int g = 0; g <= experts; ++g) off.push_back(g);
    if (epilogue) {
      gu = expert_batch(type, inter, hidden, x.as<float>(), act.as<float>(), d_off, experts);
    } else {
      gu_rows = gpu::DeviceBuffer(static_cast<size_t>(2 * inter * experts) * sizeof(float), "gate, up");
      d_off2 = pairs_each(2 * experts, 1);
      gu = expert_batch(type, inter, hidden, x.as<float>(), gu_rows.as<float>(), d_off2, 2 * experts);
      // pair j of the 2 x experts groups reads x row j mod experts (gate and up of expert j)
      std::vector<int32_t> rows(static_cast<size_t>(2 * experts));
      for (int j = 0; j < 2 * experts; ++j) rows[static_cast<size_t>(j)] = j % experts;
      gu_x_rows = gpu::DeviceBuffer(rows.size() * sizeof(int32_t), "x rows");
      MOEPACK_CUDA_CHECK(
          cudaMemcpy(gu_x_rows.as<void>(), rows.data(), gu_x_rows.size(), cudaMemcpyHostToDevice));
      gu.x_row = gu_x_rows.as<int32_t>();
    }
    gu.swiglu_epilogue = epilogue;
    gu.w_tiled = tiled;
    dn = expert_batch(dtype, hidden, inter, act.as<float>(), y.as<float>(), d_off, experts);
    dn.w_tiled = dtiled;
  }
  // The host's copy of the group sizes on both launches, as the engine's decode launches carry it.
  void with_host_sizes() {
    dn.grp_off_host = off.data();
    if (epilogue) gu.grp_off_host = off.data();
  }
  void gate_up(int i, cudaStream_t s) {
    gu.w_table = d_tab.as<const uint8_t* const>() + (i % copies) * 2 * experts;
    gpu::gemv(gu, s);
    if (!epilogue) {
      gpu::swiglu_clamped(gu_rows.as<float>(), gu_rows.as<float>() + inter * experts, inter * experts, 0.0f,
                          act.as<float>(), s);
    }
  }
  void down(int i, cudaStream_t s) {
    dn.w = pool.buf.bytes_ptr() + (i % copies) * layer + 2 * mat_gu * experts;
    gpu::gemv(dn, s);
  }
};

nlohmann::json bench_expert_ffn(const WeightPool& pool, GgmlType type, int64_t hidden, int64_t inter,
                                int experts, double d2d, bool tiled, std::optional<GgmlType> down_type = {},
                                std::optional<bool> down_tiled = {}) {
  FfnLayers L(pool, type, hidden, inter, experts, tiled, down_type, down_tiled);
  const GgmlType dtype = L.dtype;
  const bool dtiled = L.dtiled, epilogue = L.epilogue;
  const uint64_t layer = L.layer, mat_gu = L.mat_gu;
  const int copies = L.copies;
  gpu::GemvBatch& gu = L.gu;
  gpu::GemvBatch& dn = L.dn;
  const gpu::DeviceBuffer& d_tab = L.d_tab;
  const auto gate_up = [&](int i) { L.gate_up(i, nullptr); };
  const auto down = [&](int i) { L.down(i, nullptr); };
  const double gu_us = time_launches(gate_up).gpu_us, dn_us = time_launches(down).gpu_us;
  const double ffn_us = time_launches([&](int i) {
                          gate_up(i);
                          down(i);
                        }).gpu_us;
  const double bps = static_cast<double>(layer) / (ffn_us / 1e6);
  nlohmann::json out = {{"type", std::string(ggml_type_name(type))},
                        {"down_type", std::string(ggml_type_name(dtype))},
                        {"hidden", hidden},
                        {"inter", inter},
                        {"experts", experts},
                        {"tiled", tiled},
                        {"down_tiled", dtiled},
                        {"swiglu_epilogue", epilogue},
                        {"bytes_per_layer", layer},
                        {"gate_up_us", gu_us},
                        {"down_us", dn_us},
                        {"ffn_us", ffn_us},
                        {"bytes_per_s", bps},
                        {"ratio_to_d2d", bps / d2d}};
  // The same layers in one launch each (gpu::gemv_experts_ffn, tiled only), timed right after
  // the two launches: at the launch's own block size ("one_launch") and at 8, 12 and 16 warps.
  struct Afterwards {
    ~Afterwards() {
      gpu::detail::set_gemv_ffn_fusion(false);
      gpu::detail::set_gemv_ffn_warps(0);
      gpu::detail::set_gemv_tiled_depth(0);
    }
  } restore;
  gpu::detail::set_gemv_ffn_fusion(true);  // off by default in the engine
  if (tiled && dtiled && dtype == type && gpu::gemv_experts_ffn_fusable(type, hidden, inter)) {
    gpu::DeviceBuffer sync(static_cast<size_t>(gpu::gemv_ffn_sync_ints(experts)) * sizeof(int32_t),
                           "counters");
    MOEPACK_CUDA_CHECK(cudaMemset(sync.as<void>(), 0, sync.size()));
    struct Config {
      int warps, depth;
    };
    std::vector<Config> configs = {{0, 0}, {8, 0}, {12, 0}, {16, 0}};
    if (type == GgmlType::Q2_K) configs.push_back({0, 1});  // beside its depth 2
    for (const auto [warps, depth] : configs) {
      gpu::detail::set_gemv_ffn_warps(warps);
      gpu::detail::set_gemv_tiled_depth(depth);
      const double us = time_launches([&](int i) {
                          gu.w_table = d_tab.as<const uint8_t* const>() + (i % copies) * 2 * experts;
                          dn.w = pool.buf.bytes_ptr() + (i % copies) * layer + 2 * mat_gu * experts;
                          gpu::gemv_experts_ffn(gu, dn, sync.as<int32_t>(), nullptr);
                        }).gpu_us;
      const double r = static_cast<double>(layer) / (us / 1e6) / d2d;
      if (warps == 0 && depth == 0) {
        out["one_launch_us"] = us;
        out["one_launch_ratio_to_d2d"] = r;
      } else {
        out["one_launch_by_warps"].push_back(
            {{"warps", warps}, {"depth", depth}, {"us", us}, {"ratio_to_d2d", r}});
      }
    }
  }
  return out;
}

// The default expert launches (GGUF layout) beside the tiled layout's (gpu/gemv_tiled.h): the
// launch's own choice ("tiled_depth" and "tiled_warps" 0), then 4, 8, 12 and 16 warps a block at
// the type's depth; "tiled" false is the default (ring) launch. (Depth and "tiled_split" stay
// settable for the next comparison; docs/cuda-backend.md's eighteenth pass has them measured.) Shape by
// shape: the four 8-expert shapes, DeepSeek-V4-Flash's down at top-6 (6 x 4096 x 2048) and gate + up (16
// matrices), then gate + up with the SwiGLU epilogue (8 experts, and 6 at 2048 x 4096).
nlohmann::json bench_gemv_tiled(const WeightPool& pool, double d2d) {
  nlohmann::json out = nlohmann::json::array();
  struct Afterwards {
    ~Afterwards() {
      gpu::detail::set_gemv_tiled_depth(0);
      gpu::detail::set_gemv_tiled_split(1);
      gpu::detail::set_gemv_tiled_warps(0);
      gpu::detail::set_gemv_tiled_runs(0);
    }
  } restore;
  struct Config {
    bool tiled;
    int depth, split, warps, runs;
  };
  const auto set = [](const Config& c) {
    gpu::detail::set_gemv_tiled_depth(c.depth);
    gpu::detail::set_gemv_tiled_split(c.split);
    gpu::detail::set_gemv_tiled_warps(c.warps);
    gpu::detail::set_gemv_tiled_runs(c.runs);
  };
  const auto tag = [](nlohmann::json g, const Config& c) {
    g["tiled_depth"] = c.depth;
    g["tiled_split"] = c.split;
    g["tiled_warps"] = c.warps;
    g["tiled_runs"] = c.runs;
    return g;
  };
  // The same configurations for the plain launches and gate + up with the epilogue: the default
  // (ring) launch, the tiled launch's own choice, the same without runs of tiles a warp, then
  // one tile a warp at 4, 8, 12 and 16 warps a block.
  const Config configs[] = {{false, 0, 1, 0, 0}, {true, 0, 1, 0, 0},  {true, 0, 1, 0, -1},
                            {true, 0, 1, 4, -1}, {true, 0, 1, 8, -1}, {true, 0, 1, 12, -1},
                            {true, 0, 1, 16, -1}};
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    for (const auto& [rows, cols, experts] : {std::tuple{2048, 4096, 8},
                                              {4096, 2048, 8},
                                              {2048, 7168, 8},
                                              {7168, 2048, 8},
                                              {4096, 2048, 6},
                                              {2048, 4096, 16},
                                              {2048, 7168, 16}}) {
      for (const Config& c : configs) {
        set(c);
        out.push_back(tag(bench_gemv(pool, t, rows, cols, d2d, experts, c.tiled), c));
      }
      // Runs of a given length where the launch's own choice takes runs (8 x 7168 rows: 28
      // tiles a block of 16 warps, 12 warps with 2 tiles and 4 with 1): 16 (the one-tile launch's
      // two waves), 32 (every warp 2 tiles, 112 blocks), and 8 warps a block of 14 tiles.
      if (rows == 7168 && experts == 8) {
        for (const Config& c :
             {Config{true, 0, 1, 16, 16}, Config{true, 0, 1, 16, 32}, Config{true, 0, 1, 8, 14}}) {
          set(c);
          out.push_back(tag(bench_gemv(pool, t, rows, cols, d2d, experts, c.tiled), c));
        }
      }
    }
    // The prefill kernel on both layouts (16 and 64 pairs an expert).
    set({true, 0, 1, 0, 0});
    for (const auto& [rows, cols] : {std::pair{2048, 4096}, {4096, 2048}}) {
      for (const int pairs : {16, 64}) {
        for (const bool tiled : {false, true})
          out.push_back(bench_gemv(pool, t, rows, cols, d2d, 8, tiled, pairs));
      }
    }
    // The engine's gate + up launch (the SwiGLU epilogue) on both layouts.
    for (const auto& [cols, experts] : {std::pair{4096, 8}, {7168, 8}, {4096, 6}}) {
      for (const Config& c : configs) {
        if (c.tiled && c.warps == 0 && c.runs < 0) continue;  // runs take no epilogue: as {0, 0}
        set(c);
        out.push_back(tag(bench_gemv_glu(pool, t, 2048, cols, d2d, c.tiled, experts), c));
      }
    }
  }
  return out;
}

// ---- "gemv_graph" (--gemv-graph-only, sixtieth session): the decode launches as the engine's decode
// graph issues them ---------------------------------------------------------------------------------
//
// Every other section times launches issued one by one on the legacy default stream. The engine's
// decode runs as one CUDA graph on a stream of its own (gpu/decode_graph.cpp, captured with the launches'
// programmatic dependencies), where the GPU's front end sees the whole step at once. This times the same
// `iters` launches three ways, in alternating order over two rounds (legacy, own, graph, graph, own,
// legacy), each a mean over the round: "legacy" as time_launches; "stream" on a non-blocking stream of its
// own; "graph" captured once from that stream into a graph of the iters launches, launched `reps` times.
// The reported value of each way is the smaller of its two rounds (the launches' own cost; the rounds
// differ by the clocks' drift). body(i, s) issues round i's launches on s.
void partial(const char* key, const nlohmann::json& part);  // below

struct ThreeWays {
  double legacy_us = 0, stream_us = 0, graph_us = 0;
  std::string graph_error;  // non-empty: the capture failed (graph_us 0)
};

// The GPU's time of what issue() queues on s (events around it), in µs.
template <class Issue>
double gpu_us_of(cudaStream_t s, Issue&& issue) {
  cudaEvent_t t0, t1;
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t0));
  MOEPACK_CUDA_CHECK(cudaEventCreate(&t1));
  MOEPACK_CUDA_CHECK(cudaEventRecord(t0, s));
  issue();
  MOEPACK_CUDA_CHECK(cudaEventRecord(t1, s));
  MOEPACK_CUDA_CHECK(cudaEventSynchronize(t1));
  float ms = 0;
  MOEPACK_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return static_cast<double>(ms) * 1e3;
}

template <class Body>
double time_on(Body& body, cudaStream_t s, int iters) {
  body(0, s);  // untimed: the kernels' one-time state (attributes, scratch pools)
  return gpu_us_of(s, [&] {
           for (int i = 0; i < iters; ++i) body(i, s);
         }) /
         iters;
}

// The iters launches of body captured from s as one graph, launched reps times after one untimed launch:
// µs a launch; throws Error naming the capture's failure.
template <class Body>
double time_graph(Body& body, cudaStream_t s, int iters, int reps) {
  body(0, s);
  MOEPACK_CUDA_CHECK(cudaStreamSynchronize(s));
  MOEPACK_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  std::string failed;
  try {
    for (int i = 0; i < iters; ++i) body(i, s);
  } catch (const std::exception& e) {
    failed = e.what();
  }
  cudaGraph_t g = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s, &g);
  if (!failed.empty() || end != cudaSuccess || g == nullptr) {
    if (g) cudaGraphDestroy(g);
    (void)cudaGetLastError();
    throw Error("capture: " + (failed.empty() ? std::string(cudaGetErrorString(end)) : failed));
  }
  cudaGraphExec_t ge = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&ge, g, 0);
  cudaGraphDestroy(g);
  if (inst != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(std::string("cudaGraphInstantiate: ") + cudaGetErrorString(inst));
  }
  MOEPACK_CUDA_CHECK(cudaGraphLaunch(ge, s));
  const double us = gpu_us_of(s, [&] {
    for (int r = 0; r < reps; ++r) MOEPACK_CUDA_CHECK(cudaGraphLaunch(ge, s));
  });
  cudaGraphExecDestroy(ge);
  return us / (static_cast<double>(iters) * reps);
}

template <class Body>
ThreeWays time_three_ways(Body&& body, int iters = 64, int reps = 8) {
  cudaStream_t own = nullptr;
  MOEPACK_CUDA_CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
  ThreeWays t;
  t.legacy_us = t.stream_us = t.graph_us = 1e30;
  const auto graph_once = [&] {
    if (!t.graph_error.empty()) return;
    try {
      t.graph_us = std::min(t.graph_us, time_graph(body, own, iters, reps));
    } catch (const std::exception& e) {
      t.graph_error = e.what();
    }
  };
  for (int round = 0; round < 2; ++round) {
    if (round == 0) {
      t.legacy_us = std::min(t.legacy_us, time_on(body, nullptr, iters));
      t.stream_us = std::min(t.stream_us, time_on(body, own, iters));
      graph_once();
    } else {
      graph_once();
      t.stream_us = std::min(t.stream_us, time_on(body, own, iters));
      t.legacy_us = std::min(t.legacy_us, time_on(body, nullptr, iters));
    }
  }
  if (!t.graph_error.empty()) t.graph_us = 0;
  MOEPACK_CUDA_CHECK(cudaStreamSynchronize(own));
  MOEPACK_CUDA_CHECK(cudaStreamDestroy(own));
  return t;
}

// The three ways' µs and shares of D2D of `bytes` a launch into j.
void put_three_ways(nlohmann::json& j, const ThreeWays& t, uint64_t bytes, double d2d) {
  const auto ratio = [&](double us) { return us > 0 ? static_cast<double>(bytes) / (us / 1e6) / d2d : 0.0; };
  j["legacy_us"] = t.legacy_us;
  j["stream_us"] = t.stream_us;
  j["graph_us"] = t.graph_us;
  j["legacy_ratio_to_d2d"] = ratio(t.legacy_us);
  j["stream_ratio_to_d2d"] = ratio(t.stream_us);
  j["graph_ratio_to_d2d"] = ratio(t.graph_us);
  if (!t.graph_error.empty()) j["graph_error"] = t.graph_error;
}

// One decode launch of `experts` matrices of [rows][cols] (one pair each, GGUF or tiled layout, the
// launch's own choices) timed three ways, the weights rotating over copies as bench_gemv's.
nlohmann::json bench_gemv_three_ways(const WeightPool& pool, GgmlType type, int64_t rows, int64_t cols,
                                     int experts, bool tiled, double d2d) {
  const uint64_t rb = *ggml_row_bytes(type, static_cast<uint64_t>(cols));
  const uint64_t mat = rb * static_cast<uint64_t>(rows);
  const int copies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / (mat * experts)));
  if (copies < 4) throw Error("bench_gemv_three_ways: weight pool too small");
  const gpu::DeviceBuffer x = normal_floats(static_cast<size_t>(cols * experts), 2);
  gpu::DeviceBuffer y(static_cast<size_t>(rows * experts) * sizeof(float), "y");
  const gpu::DeviceBuffer d_off = pairs_each(experts, 1);
  std::vector<int32_t> off(static_cast<size_t>(experts) + 1);
  for (int e = 0; e <= experts; ++e) off[static_cast<size_t>(e)] = e;
  gpu::GemvBatch b = expert_batch(type, rows, cols, x.as<float>(), y.as<float>(), d_off, experts);
  b.grp_off_host = off.data();
  b.w_tiled = tiled;
  const ThreeWays t = time_three_ways([&](int i, cudaStream_t s) {
    b.w = pool.buf.bytes_ptr() + (i % copies) * mat * experts;
    gpu::gemv(b, s);
  });
  nlohmann::json j = {{"type", std::string(ggml_type_name(type))},
                      {"rows", rows},
                      {"cols", cols},
                      {"experts_per_launch", experts},
                      {"tiled", tiled},
                      {"bytes_per_launch", mat * experts}};
  put_three_ways(j, t, mat * experts, d2d);
  // The graph again with every launch an ordinary one (gpu::detail::set_gemv_pdl(false)): what the
  // launches' programmatic dependencies give inside a graph.
  struct Restore {
    ~Restore() { gpu::detail::set_gemv_pdl(true); }
  } restore;
  gpu::detail::set_gemv_pdl(false);
  const ThreeWays np = time_three_ways([&](int i, cudaStream_t s) {
    b.w = pool.buf.bytes_ptr() + (i % copies) * mat * experts;
    gpu::gemv(b, s);
  });
  j["graph_no_pdl_us"] = np.graph_us;
  j["stream_no_pdl_us"] = np.stream_us;
  return j;
}

// A plain streaming read of `bytes` (tests/gpu/read_probe.h) timed three ways: the same launch overheads
// without a GEMV's work.
nlohmann::json bench_read_three_ways(const WeightPool& pool, uint64_t bytes, double d2d) {
  const int copies = static_cast<int>(std::min<uint64_t>(32, pool.buf.size() / bytes));
  if (copies < 4) throw Error("bench_read_three_ways: weight pool too small");
  const int sm = multiprocessors();
  gpu::DeviceBuffer sink(sizeof(uint32_t), "sink");
  const uint64_t n = bytes / 64 * 64;
  const ThreeWays t = time_three_ways([&](int i, cudaStream_t s) {
    gpu::bench::read_probe(pool.buf.bytes_ptr() + (i % copies) * n, n, sink.as<uint32_t>(), sm, s);
    MOEPACK_CUDA_CHECK(cudaGetLastError());
  });
  nlohmann::json j = {{"bytes", n}};
  put_three_ways(j, t, n, d2d);
  return j;
}

// The engine's expert FFN of one layer at decode (as bench_expert_ffn: gate + up with the SwiGLU
// epilogue, then down as its programmatic dependent; layers rotating) timed three ways.
nlohmann::json bench_expert_ffn_three_ways(const WeightPool& pool, GgmlType type, int64_t hidden, int64_t inter,
                                           int experts, bool tiled, double d2d) {
  if (!gpu::gemv_swiglu_fusable(type, hidden, inter, tiled))
    throw Error("bench_expert_ffn_three_ways: no SwiGLU epilogue for this launch");
  FfnLayers L(pool, type, hidden, inter, experts, tiled);
  L.with_host_sizes();
  const uint64_t layer = L.layer;
  const ThreeWays t = time_three_ways([&](int i, cudaStream_t s) {
    L.gate_up(i, s);
    L.down(i, s);
  });
  nlohmann::json j = {{"type", std::string(ggml_type_name(type))},
                      {"hidden", hidden},
                      {"inter", inter},
                      {"experts", experts},
                      {"tiled", tiled},
                      {"bytes_per_layer", layer}};
  put_three_ways(j, t, layer, d2d);
  return j;
}

// The section: the issue's decode shapes (8 experts of 2048 x 4096, 4096 x 2048, 2048 x 7168, 7168 x
// 2048; DeepSeek-V4-Flash's top-6 down, 6 x 4096 x 2048) in Q4_K, Q2_K and MXFP4 on both layouts, the
// plain read of each launch's bytes, and the expert FFN of a layer (8 x 2048 on 4096 and 7168, 6 on 4096).
nlohmann::json bench_gemv_graph(const WeightPool& pool, double d2d) {
  nlohmann::json out;
  std::vector<uint64_t> sizes;
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    for (const auto& [rows, cols, experts] :
         {std::tuple{2048, 4096, 8}, {4096, 2048, 8}, {2048, 7168, 8}, {7168, 2048, 8}, {4096, 2048, 6}}) {
      for (const bool tiled : {false, true}) {
        nlohmann::json j = bench_gemv_three_ways(pool, t, rows, cols, experts, tiled, d2d);
        sizes.push_back(j["bytes_per_launch"].get<uint64_t>());
        partial("gemv_graph_launch", j);
        out["launches"].push_back(std::move(j));
      }
    }
    for (const auto& [hidden, experts] : {std::pair{4096, 8}, {7168, 8}, {4096, 6}}) {
      for (const bool tiled : {false, true}) {
        nlohmann::json j;
        try {
          j = bench_expert_ffn_three_ways(pool, t, hidden, 2048, experts, tiled, d2d);
        } catch (const Error& e) {
          j = {{"type", std::string(ggml_type_name(t))}, {"hidden", hidden}, {"experts", experts},
               {"tiled", tiled}, {"error", e.what()}};
        }
        partial("gemv_graph_ffn", j);
        out["expert_ffn"].push_back(std::move(j));
      }
    }
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (const uint64_t bytes : sizes) {
    nlohmann::json j = bench_read_three_ways(pool, bytes, d2d);
    partial("gemv_graph_read", j);
    out["read"].push_back(std::move(j));
  }
  return out;
}

// bench_expert_ffn on both layouts at the issue's shapes (experts of 2048 rows on 4096 and 7168,
// top-8; DeepSeek-V4-Flash's top-6 on 4096), Q4_K, Q2_K and MXFP4.
nlohmann::json bench_expert_ffns(const WeightPool& pool, double d2d) {
  nlohmann::json out = nlohmann::json::array();
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    for (const auto& [hidden, experts] : {std::pair{4096, 8}, {7168, 8}, {4096, 6}}) {
      for (const bool tiled : {false, true})
        out.push_back(bench_expert_ffn(pool, t, hidden, 2048, experts, d2d, tiled));
    }
  }
  return out;
}

// An engine setting or switch that changes no result (set(s, on) puts it off or on), side by
// side: runs alternate off / on, three of each; decode and prefill tokens/s by the medians. `key`
// marks each round's JSON (true: on).
nlohmann::json bench_setting(const std::shared_ptr<const ModelSource>& src, EngineSettings s, int prefill,
                             int decode, const std::function<void(EngineSettings&, bool)>& set,
                             const char* key) {
  std::vector<double> off_d, on_d, off_p, on_p;
  nlohmann::json rounds = nlohmann::json::array();
  for (int r = 0; r < 3; ++r) {
    for (const bool on : {false, true}) {
      set(s, on);
      nlohmann::json run = bench_engine(src, s, prefill, decode);
      (on ? on_d : off_d).push_back(run["decode_tokens_per_s"].get<double>());
      (on ? on_p : off_p).push_back(run["prefill_tokens_per_s"].get<double>());
      run[key] = on;
      rounds.push_back(std::move(run));
    }
  }
  return {{"rounds", rounds},
          {"decode_tokens_per_s_off", io_bench_median(off_d)},
          {"decode_tokens_per_s_on", io_bench_median(on_d)},
          {"decode_speedup", io_bench_median(on_d) / io_bench_median(off_d)},
          {"prefill_tokens_per_s_off", io_bench_median(off_p)},
          {"prefill_tokens_per_s_on", io_bench_median(on_p)}};
}

// A process-wide engine switch (set: its setter; on, the default of every such switch, is
// restored afterwards) as bench_setting.
nlohmann::json bench_switch(const std::shared_ptr<const ModelSource>& src, const EngineSettings& s,
                            int prefill, int decode, void (*set)(bool), const char* key) {
  struct OnAfterwards {
    void (*set)(bool);
    ~OnAfterwards() { set(true); }
  } restore{set};
  return bench_setting(
      src, s, prefill, decode, [set](EngineSettings&, bool on) { set(on); }, key);
}

// bench_switch (CUDA, n_ctx 1024, no VRAM reserve) on every model of `models` (their file names
// the keys).
nlohmann::json bench_switch_of(const std::vector<std::string>& models, int prefill, int decode,
                               void (*set)(bool), const char* key) {
  EngineSettings s;
  s.backend = "cuda";
  s.n_ctx = 1024;
  s.cache_vram_reserve_mib = 0;
  s.cache_ram_mib = 0;  // budgets measure the VRAM cache alone (no host-RAM tier)
  nlohmann::json out;
  for (const std::string& m : models)
    out[std::filesystem::path(m).filename().string()] =
        bench_switch(ModelSource::open(m), s, prefill, decode, set, key);
  return out;
}

// A part of a --*-only mode's JSON, also written to stderr as it completes ("== partial KEY: JSON"),
// so a call's time limit that stops the run before the final JSON still leaves the parts measured so
// far (tests/gpu/summarize_partials.py reads them).
void partial(const char* key, const nlohmann::json& part) {
  std::fprintf(stderr, "== partial %s: %s\n", key, part.dump().c_str());
}
// out[key] = part, written as a partial too.
void put_partial(nlohmann::json& out, const char* key, nlohmann::json part) {
  partial(key, part);
  out[key] = std::move(part);
}

// Round `round` of four side-by-side rounds is the switched one: off, on, on, off.
constexpr bool alternating_on(int round) { return (round & 1) != (round >> 1); }

// Four side-by-side rounds of launch() with a process-wide switch (`set`) off, on, on, off, each
// row marked with `key`: whether the switch was on.
template <class Launch>
void four_rounds(nlohmann::json& rows, void (*set)(bool), const char* key, const Launch& launch) {
  for (int round = 0; round < 4; ++round) {
    const bool on = alternating_on(round);
    set(on);
    nlohmann::json g = launch();
    g[key] = on;
    rows.push_back(std::move(g));
  }
}

// Group sizes (pairs an expert) of a 16-expert launch as a short prompt's routing gives them
// (mostly 1-7 pairs) and a longer one's (2-20).
const std::vector<int32_t> kShortPromptGroups = {1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6, 7, 1, 2, 3};
const std::vector<int32_t> kLongerPromptGroups = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 20, 3, 6};

// Q3_K's, Q5_K's and Q6_K's decode back to their defaults (Q3_K and Q6_K on the tensor cores,
// Q5_K kGemvQ5kTensorCoresDefault) at scope exit, exceptions included.
struct TensorCoresDefaultAfterwards {
  ~TensorCoresDefaultAfterwards() {
    gpu::detail::set_gemv_tensor_cores(GgmlType::Q3_K, true);
    gpu::detail::set_gemv_tensor_cores(GgmlType::Q5_K, gpu::detail::kGemvQ5kTensorCoresDefault);
    gpu::detail::set_gemv_tensor_cores(GgmlType::Q6_K, true);
  }
};

// Launches of every (rows, cols, experts, pairs) shape of every type with a process-wide switch
// (`set`) off and on, alternating off, on, on, off ("key" in each row: two runs each way); the
// types of `once` only off, once. The switch is off again afterwards (exceptions included).
using LaunchShape = std::tuple<int, int, int, int>;
nlohmann::json bench_switched(const WeightPool& pool, double d2d, std::initializer_list<GgmlType> types,
                              std::initializer_list<GgmlType> once, const std::vector<LaunchShape>& shapes,
                              void (*set)(bool), const char* key) {
  struct Off {
    void (*set)(bool);
    ~Off() { set(false); }
  } restore{set};
  nlohmann::json rows = nlohmann::json::array();
  const auto run = [&](GgmlType t, bool switched) {
    for (const auto& [r, c, e, pairs] : shapes) {
      for (int round = 0; round < (switched ? 4 : 1); ++round) {
        const bool on = switched && alternating_on(round);
        set(on);
        auto g = bench_gemv(pool, t, r, c, d2d, e, false, pairs);
        g[key] = on;
        rows.push_back(std::move(g));
      }
    }
  };
  for (const GgmlType t : types) run(t, true);
  for (const GgmlType t : once) run(t, false);
  return rows;
}

// The F32 kernels' types without a tensor-core path: Q3_K and Q5_K (their tensor cores switched
// off here, set_gemv_tensor_cores), Q4_0, Q4_1, Q5_0 and Q5_1 dequantized in registers (the
// default) and byte by byte (set_gemv_bytewise_dequant, before the twenty-fifth pass) side by
// side ("bytewise"); Q6_K (its tensor cores off too) and Q8_0 (in registers since the second
// pass) once, for comparison.
// Decode launches of 8 experts of 2048 x 4096 and 4096 x 2048, Kimi-K3's down launch (16 experts
// of 7168 x 1536), and a prefill launch (8 experts of 2048 x 4096, 16 pairs each; in the F32
// kernels, the tensor cores' prefill off).
nlohmann::json bench_f32_types(const WeightPool& pool, double d2d) {
  const TensorCoresDefaultAfterwards restore;
  const test::PrefillMmaScope f32_prefill(false, 0);
  gpu::detail::set_gemv_tensor_cores(GgmlType::Q3_K, false);
  gpu::detail::set_gemv_tensor_cores(GgmlType::Q5_K, false);
  gpu::detail::set_gemv_tensor_cores(GgmlType::Q6_K, false);
  return bench_switched(
      pool, d2d,
      {GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1},
      {GgmlType::Q6_K, GgmlType::Q8_0},
      {{2048, 4096, 8, 1}, {4096, 2048, 8, 1}, {7168, 1536, 16, 1}, {2048, 4096, 8, 16}},
      gpu::detail::set_gemv_bytewise_dequant, "bytewise");
}

// The F32 kernels at prefill with every pair's x staged in shared memory a slab at a time (the
// default) and read by each lane from global memory (set_gemv_prefill_x_global, before the
// twenty-fifth pass) side by side ("x_global"): expert launches of 8 experts of 2048 x 4096 with
// 8, 16 and 64 pairs each, and one dense 4096 x 4096 matrix with 128 tokens.
nlohmann::json bench_prefill_x(const WeightPool& pool, double d2d) {
  const test::PrefillMmaScope f32_prefill(false, 0);
  return bench_switched(pool, d2d,
                        {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K,
                         GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::F16},
                        {},
                        {{2048, 4096, 8, 8}, {2048, 4096, 8, 16}, {2048, 4096, 8, 64}, {4096, 4096, 1, 128}},
                        gpu::detail::set_gemv_prefill_x_global, "x_global");
}

// Prefill launches in the F32 kernels and on the tensor cores (set_gemv_prefill_mma, forty-third
// session; every group of two or more pairs: a minimum of 2) side by side ("prefill_mma"; the
// switch and the minimum back to their defaults afterwards): expert launches of 8 experts of 2048 x
// 4096 with 2, 4, 6, 7, 8, 9, 10, 12, 16 and 64 pairs each, of 8 x 4096 x 2048 with 32 pairs, of
// 8 x 768 x 2048 and 8 x 2048 x 768 (Qwen3-30B-A3B's experts, under the rule's 2048 x 2048) with 2,
// 4 and 8, and one dense 4096 x 4096 matrix with 2, 4, 8, 12, 128 and 512 tokens
// ("multiply_adds_per_s").
nlohmann::json bench_prefill_mma(const WeightPool& pool, double d2d) {
  // The kernel itself on every group of two or more pairs.
  const test::PrefillMmaScope every_group(gpu::detail::kGemvPrefillMmaDefault, 2);
  return bench_switched(pool, d2d,
                        {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q3_K, GgmlType::Q5_K,
                         GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0},
                        {},
                        {{2048, 4096, 8, 2},  {2048, 4096, 8, 4},   {2048, 4096, 8, 6},  {2048, 4096, 8, 7},
                         {2048, 4096, 8, 8},  {2048, 4096, 8, 9},   {2048, 4096, 8, 10}, {2048, 4096, 8, 12},
                         {2048, 4096, 8, 16}, {2048, 4096, 8, 64},  {4096, 2048, 8, 32}, {768, 2048, 8, 2},
                         {768, 2048, 8, 4},   {768, 2048, 8, 8},    {2048, 768, 8, 2},   {2048, 768, 8, 4},
                         {2048, 768, 8, 8},   {4096, 4096, 1, 2},   {4096, 4096, 1, 4},  {4096, 4096, 1, 8},
                         {4096, 4096, 1, 12}, {4096, 4096, 1, 128}, {4096, 4096, 1, 512}},
                        gpu::detail::set_gemv_prefill_mma, "prefill_mma");
}

// The default minimum group (on: each launch's gpu/gemm_mma_layout.h prefill_mma_default_min_pairs)
// against every group of two or more pairs on the tensor cores (off: a minimum of 2).
void set_prefill_mma_default_rule(bool on) {
  gpu::detail::set_gemv_prefill_mma(true);
  gpu::detail::set_gemv_prefill_mma_min_pairs(on ? 0 : 2);
}

// A prefill launch of one group an expert, group g `sizes[g]` pairs (time_gemv).
nlohmann::json bench_gemv_groups(const WeightPool& pool, GgmlType type, int64_t rows, int64_t cols,
                                 double d2d, const std::vector<int32_t>& sizes, bool tiled = false) {
  const int experts = static_cast<int>(sizes.size());
  const int32_t pairs = std::accumulate(sizes.begin(), sizes.end(), int32_t{0});
  const auto [t, bytes] = time_gemv(pool, type, rows, cols, sizes, tiled);
  return {{"type", std::string(ggml_type_name(type))},
          {"rows", rows},
          {"cols", cols},
          {"tiled", tiled},
          {"experts_per_launch", experts},
          {"group_pairs", sizes},
          {"pairs_per_launch", pairs},
          {"bytes_per_launch", bytes},
          {"us_per_launch", t.gpu_us},
          {"host_us_per_launch", t.host_us},
          {"ratio_to_d2d", static_cast<double>(bytes) / (t.gpu_us / 1e6) / d2d}};
}

// The default rule's launches against a minimum of 2 side by side, alternating ("prefill_mma_rule":
// on, the rule; off, a minimum of 2; both back to their defaults afterwards), on launches with groups
// of mixed sizes as a prompt's routing gives them, where the rule splits a launch into the tensor
// cores' launch, an F32 launch for the groups of 2 to m - 1 pairs and the single pairs' launch:
// 16 experts of 2048 x 4096 and of 4096 x 2048 with a short prompt's groups (mostly 1-7 pairs) and
// a longer one's (2-20 pairs), and 8 of 2048 x 4096 with uniform groups of 6, 7, 10 and 11 pairs.
nlohmann::json bench_prefill_mma_rule(const WeightPool& pool, double d2d) {
  const test::PrefillMmaScope defaults_afterwards(gpu::detail::kGemvPrefillMmaDefault, 0);
  const std::vector<std::pair<int64_t, int64_t>> mixed_shapes = {{2048, 4096}, {4096, 2048}};
  nlohmann::json rows = nlohmann::json::array();
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K}) {
    std::vector<std::tuple<int64_t, int64_t, std::vector<int32_t>>> launches;
    for (const auto& [r, c] : mixed_shapes) {
      launches.emplace_back(r, c, kShortPromptGroups);
      launches.emplace_back(r, c, kLongerPromptGroups);
    }
    for (const int32_t n : {6, 7, 10, 11}) launches.emplace_back(2048, 4096, std::vector<int32_t>(8, n));
    for (const auto& [r, c, sizes] : launches) {
      four_rounds(rows, set_prefill_mma_default_rule, "prefill_mma_rule",
                  [&] { return bench_gemv_groups(pool, t, r, c, d2d, sizes); });
    }
  }
  return rows;
}

// Decode columns at prefill (gpu/kernels.h set_gemv_prefill_columns) side by side, alternating off,
// on, on, off ("prefill_columns": on as `set` makes it, off none; every setting back to its default
// afterwards): for each type, expert launches of `shapes` ({rows, cols, experts, pairs an expert,
// tiled}), then launches of 16 experts of 2048 x 4096 with a short and a longer prompt's mixed group
// sizes ("group_pairs"; GGUF layout) unless !mixed. min_pairs: the prefill's minimum group for the
// tensor cores meanwhile (0: the default rule; 2: every group of two or more pairs).
struct ColumnsShape {
  int64_t rows, cols;
  int experts;
  std::vector<int> pairs;
  bool tiled;
};
nlohmann::json bench_columns_switched(const WeightPool& pool, double d2d, void (*set)(bool),
                                      std::initializer_list<GgmlType> types,
                                      const std::vector<ColumnsShape>& shapes, bool mixed = true,
                                      int min_pairs = 0) {
  const test::PrefillMmaScope defaults_afterwards(gpu::detail::kGemvPrefillMmaDefault, min_pairs,
                                                  gpu::detail::kGemvPrefillColumnsDefault);
  nlohmann::json rows = nlohmann::json::array();
  for (const GgmlType t : types) {
    for (const ColumnsShape& sh : shapes) {
      for (const int pairs : sh.pairs) {
        four_rounds(rows, set, "prefill_columns",
                    [&] { return bench_gemv(pool, t, sh.rows, sh.cols, d2d, sh.experts, sh.tiled, pairs); });
      }
    }
    if (!mixed) continue;
    for (const auto* sizes : {&kShortPromptGroups, &kLongerPromptGroups}) {
      four_rounds(rows, set, "prefill_columns",
                  [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, *sizes); });
    }
  }
  return rows;
}

// Columns of up to 16 pairs on every launch (on) against none (off), each under the minimum rule
// (forty-sixth session's first measurement, H100: gpu/prefill_columns.h): expert launches of 8 experts
// of 2048 x 4096 with 2 to 16 pairs each (GGUF layout, and the tiled one the engine holds such
// experts in), of 8 x 4096 x 2048 with 2, 4 and 8, of 8 x 768 x 2048 with 2 and 4, of 64 x 256 x 256
// (the demo's experts) with 2 and 4, and one dense 4096 x 4096 matrix with 2, 4 and 8 tokens.
void set_prefill_columns16(bool on) {
  gpu::detail::set_gemv_prefill_columns(on ? 16 : gpu::detail::kGemvPrefillColumnsOff);
}
nlohmann::json bench_prefill_columns(const WeightPool& pool, double d2d) {
  return bench_columns_switched(
      pool, d2d, set_prefill_columns16,
      {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q5_K},
      {{2048, 4096, 8, {2, 3, 4, 6, 8, 10, 12, 16}, false},
       {2048, 4096, 8, {2, 4, 8, 12, 16}, true},
       {4096, 2048, 8, {2, 4, 8}, false},
       {768, 2048, 8, {2, 4}, false},
       {256, 256, 64, {2, 4}, false},
       {4096, 4096, 1, {2, 4, 8}, false}});
}

// The default rule (on: gpu/prefill_columns.h prefill_columns_default per launch) against none (off):
// around each of its edges (12 and 13 pairs in the GGUF layout, 16 and 17 tiled, 4 and 5 dense tokens,
// 1024 x 1024 elements), and on launches of 64 and 128 experts, where a launch whose groups are all
// larger than C still pays the slots' kernel and a decode launch of n_groups x C empty slots.
void set_prefill_columns_rule(bool on) {
  gpu::detail::set_gemv_prefill_columns(on ? 0 : gpu::detail::kGemvPrefillColumnsOff);
}
nlohmann::json bench_prefill_columns_rule(const WeightPool& pool, double d2d) {
  return bench_columns_switched(pool, d2d, set_prefill_columns_rule,
                                {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K},
                                {{2048, 4096, 8, {2, 8, 12, 13}, false},
                                 {2048, 4096, 8, {2, 8, 16, 17}, true},
                                 {2048, 4096, 64, {2, 13}, false},
                                 {2048, 4096, 64, {17}, true},
                                 {768, 2048, 128, {2, 13}, false},
                                 {4096, 2048, 8, {4, 12}, false},
                                 {1024, 1024, 8, {2, 4}, false},
                                 {1024, 512, 8, {2, 4}, false},
                                 {4096, 4096, 1, {2, 4, 5}, false}});
}

// Columns of up to 32 pairs (on) against none (off) on tiled expert launches (the engine's layout
// for large experts) of 16 to 32 pairs an expert, beyond the default rule's 16: 8 experts of 2048 x
// 4096, 4096 x 2048 and 7168 x 1536 (Kimi-K3's down).
void set_prefill_columns32(bool on) {
  gpu::detail::set_gemv_prefill_columns(on ? 32 : gpu::detail::kGemvPrefillColumnsOff);
}
nlohmann::json bench_prefill_columns_tiled(const WeightPool& pool, double d2d) {
  return bench_columns_switched(
      pool, d2d, set_prefill_columns32,
      {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q5_K},
      {{2048, 4096, 8, {16, 20, 24, 28, 32}, true},
       {4096, 2048, 8, {16, 24, 32}, true},
       {7168, 1536, 8, {16, 24, 32}, true}},
      false);
}

// The tensor cores' prefill staging x half a unit at a time (on: set_gemv_prefill_mma_half_x, the
// default; 4 blocks a multiprocessor) and the whole unit (off; 3) side by side ("half_x"), every group
// of two or more pairs on the tensor cores (columns off): 8 experts of 2048 x 4096 with 16 and 32 pairs
// (a grid of 256 blocks: fewer than either staging fits at once on an H100's 132 multiprocessors) and 64
// (512: one wave of the half unit's 4 a multiprocessor, two of the whole unit's 3), 64 experts with 16
// and 32 (2,048: a prompt's launch, more blocks than fit), tiled with 32, 128 of 768 x 2048 with 16, and a
// dense 4096 x 4096 matrix with 128 tokens.
void set_prefill_half_x(bool on) { gpu::detail::set_gemv_prefill_mma_half_x(on); }
nlohmann::json bench_prefill_half_x(const WeightPool& pool, double d2d) {
  const test::PrefillMmaScope every_group(true, 2);
  const std::vector<std::tuple<int64_t, int64_t, int, int, bool>> shapes = {
      {2048, 4096, 8, 16, false},  {2048, 4096, 8, 32, false},  {2048, 4096, 8, 64, false},
      {2048, 4096, 64, 16, false}, {2048, 4096, 64, 32, false}, {2048, 4096, 64, 32, true},
      {768, 2048, 128, 16, false}, {4096, 4096, 1, 128, false}};
  nlohmann::json rows = nlohmann::json::array();
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q3_K,
                           GgmlType::Q5_K, GgmlType::Q8_0}) {
    for (const auto& [r, c, e, pairs, tiled] : shapes) {
      if (tiled && !gpu::gemv_tiled_supported(t, c, r)) continue;
      four_rounds(rows, set_prefill_half_x, "half_x",
                  [&] { return bench_gemv(pool, t, r, c, d2d, e, tiled, pairs); });
    }
  }
  return rows;
}

// The prefill with A made from the quants (on: set_gemv_prefill_quant_a, the default; Q4_K, Q6_K, Q2_K,
// Q3_K, Q5_K, MXFP4) against W dequantized into f16 halves (off), every group of two or more pairs on the
// tensor cores (columns off),
// each under the half-unit rule ("quant_a"): 8 experts of 2048 x 4096 with 8, 16, 32 and 64 pairs, 64
// experts with 16 and 32 (GGUF and tiled), 128 of 768 x 2048 with 16 and a dense 4096 x 4096 matrix with
// 128 tokens; then, with it on, half a unit (on) against the whole unit (off) on the same launches
// ("half_x").
void set_prefill_quant_a(bool on) { gpu::detail::set_gemv_prefill_quant_a(on); }
const std::vector<std::tuple<int64_t, int64_t, int, int, bool>> kQuantAShapes = {
    {2048, 4096, 8, 8, false},  {2048, 4096, 8, 16, false},  {2048, 4096, 8, 32, false},
    {2048, 4096, 8, 64, false}, {2048, 4096, 64, 16, false}, {2048, 4096, 64, 32, false},
    {2048, 4096, 64, 32, true}, {2048, 4096, 8, 32, true},   {768, 2048, 128, 16, false},
    {4096, 4096, 1, 128, false}};
nlohmann::json bench_prefill_quant_a(const WeightPool& pool, double d2d, void (*set)(bool), const char* key) {
  const test::PrefillMmaScope every_group(true, 2);
  nlohmann::json rows = nlohmann::json::array();
  for (const GgmlType t :
       {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::MXFP4}) {
    for (const auto& [r, c, e, pairs, tiled] : kQuantAShapes) {
      if (tiled && !gpu::gemv_tiled_supported(t, c, r)) continue;
      four_rounds(rows, set, key, [&] { return bench_gemv(pool, t, r, c, d2d, e, tiled, pairs); });
    }
  }
  return rows;
}

// The host's copy of the group sizes read (on: set_gemv_prefill_host_sizes, the default) and ignored
// (off) side by side ("host_sizes"), under the default rules (columns and minimum), on launches where
// it changes what runs: 128 experts of 768 x 2048 and 64 of 2048 x 4096 with every group larger than
// the columns' C (13 pairs; 17 tiled), the same with a long prompt's mixed groups (0-40 pairs, a third
// of them up to 12; tiled as the engine holds such experts, and the engine's fused gate + up launch
// of those groups twice), and 8 of 2048 x 4096 with 2 pairs each (every group a column: the same
// layout, the host's loop alone) ("group_pairs" each launch's sizes).
void set_prefill_host_sizes(bool on) { gpu::detail::set_gemv_prefill_host_sizes(on); }
nlohmann::json bench_prefill_host_sizes(const WeightPool& pool, double d2d) {
  const test::PrefillMmaScope defaults_afterwards(gpu::detail::kGemvPrefillMmaDefault, 0,
                                                  gpu::detail::kGemvPrefillColumnsDefault);
  const auto long_prompt = [](int experts) {
    std::vector<int32_t> v;
    for (int e = 0; e < experts; ++e) v.push_back((e * 37 + 11) % 41);
    return v;
  };
  std::vector<int32_t> fused = long_prompt(64);
  fused.insert(fused.end(), fused.begin(), fused.end());
  const std::vector<std::tuple<int64_t, int64_t, std::vector<int32_t>, bool>> launches = {
      {768, 2048, std::vector<int32_t>(128, 13), false},
      {2048, 4096, std::vector<int32_t>(64, 13), false},
      {2048, 4096, std::vector<int32_t>(64, 17), true},
      {768, 2048, long_prompt(128), false},
      {2048, 4096, long_prompt(64), false},
      {2048, 4096, long_prompt(64), true},
      {2048, 4096, fused, true},
      {2048, 4096, std::vector<int32_t>(8, 2), false},
  };
  nlohmann::json rows = nlohmann::json::array();
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K}) {
    for (const auto& [r, c, sizes, tiled] : launches) {
      four_rounds(rows, set_prefill_host_sizes, "host_sizes", [&] {
        const uint64_t before = gpu::gemv_prefill_column_slots();
        nlohmann::json g = bench_gemv_groups(pool, t, r, c, d2d, sizes, tiled);
        g["column_slots_total"] = gpu::gemv_prefill_column_slots() - before;
        return g;
      });
    }
  }
  return rows;
}

// Dense launches of one 4096 x 4096 matrix with 16 to 48 tokens in the F32 kernels (off) and on the
// tensor cores (on; every group of two or more, columns off), between the thirty-third pass's 12 and
// 128 tokens (gpu/gemm_mma_layout.h's dense minimum, 40 and 48 for Q2_K and Q6_K, comes from these).
nlohmann::json bench_prefill_mma_dense(const WeightPool& pool, double d2d) {
  const test::PrefillMmaScope every_group(gpu::detail::kGemvPrefillMmaDefault, 2);
  return bench_switched(pool, d2d,
                        {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q8_0}, {},
                        {{4096, 4096, 1, 16},
                         {4096, 4096, 1, 24},
                         {4096, 4096, 1, 32},
                         {4096, 4096, 1, 40},
                         {4096, 4096, 1, 48}},
                        gpu::detail::set_gemv_prefill_mma, "prefill_mma");
}

// The prefill rules against the prefill with A from the quants (forty-ninth session; it made the tensor
// cores' prefill x1.14-2.41 faster, so the rules measured before it may move):
// - "gemv_prefill_columns_quant_a": decode columns of up to 32 pairs (on) against none (off), with every
//   group of two or more pairs on the tensor cores meanwhile (minimum 2), so each launch compares the
//   columns with the tensor cores directly: 8 experts of 2048 x 4096 (GGUF and tiled), of 4096 x 2048 and
//   of 7168 x 1536 (tiled: the engine's layout for such experts), 2 to 32 pairs an expert, and 8 of 768 x
//   2048 with 2 and 4 (gpu/prefill_columns.h's rule: 12 GGUF, 16 tiled, 32 Q6_K tiled, 4 dense tokens);
// - "gemv_prefill_mma_quant_a": the F32 kernels (off) against the tensor cores (on) with a minimum of 2
//   and no columns, expert launches of 8 x 2048 x 4096 with 2 to 12 pairs (the minimum rule's 8 and 12,
//   gpu/gemm_mma_layout.h; what the columns do not take: types without the tensor-core decode, SwiGLU
//   epilogue launches) and dense 4096 x 4096 with 5 to 40 tokens (the dense minimum's 40 and 48).
nlohmann::json bench_prefill_columns_quant_a(const WeightPool& pool, double d2d) {
  return bench_columns_switched(
      pool, d2d, set_prefill_columns32,
      {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q5_K},
      {{2048, 4096, 8, {2, 4, 8, 12, 16}, false},
       {2048, 4096, 8, {2, 4, 8, 12, 16, 24, 32}, true},
       {4096, 2048, 8, {2, 4, 8, 12, 16, 24}, true},
       {7168, 1536, 8, {4, 8, 16, 24}, true},
       {768, 2048, 8, {2, 4}, false}},
      false, 2);
}
// Launches of `experts` matrices of rows x cols with each of `pairs` pairs an expert (one matrix: a dense
// launch of that many tokens), appended to `to`.
std::vector<LaunchShape> launch_shapes(int rows, int cols, int experts, std::initializer_list<int> pairs,
                                       std::vector<LaunchShape> to = {}) {
  for (const int p : pairs) to.emplace_back(rows, cols, experts, p);
  return to;
}
// The dense minimum's range (gpu/gemm_mma_layout.h): one 4096 x 4096 matrix with 5 to 40 tokens.
const std::vector<LaunchShape> kDenseMinimumShapes = launch_shapes(4096, 4096, 1, {5, 8, 12, 16, 24, 32, 40});
nlohmann::json bench_prefill_mma_quant_a(const WeightPool& pool, double d2d) {
  const test::PrefillMmaScope every_group(gpu::detail::kGemvPrefillMmaDefault, 2);
  return bench_switched(
      pool, d2d,
      {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q5_K}, {},
      launch_shapes(2048, 4096, 8, {2, 4, 6, 8, 12}, kDenseMinimumShapes), gpu::detail::set_gemv_prefill_mma,
      "prefill_mma");
}

// The K split of dense tensor-core prefill launches (forty-ninth session; gpu/kernels.h
// set_gemv_prefill_k_split), every group of two or more tokens on the tensor cores, no columns:
// "gemv_prefill_k_split": the launch's rule (on) against none (off) on dense 4096 x 4096 with 2 to 128
// tokens and 2048 x 7168 and 7168 x 2048 with 8 and 32; "gemv_prefill_k_split_f32": the F32 kernels (off)
// against the tensor cores with the rule (on) on dense 4096 x 4096 with 5 to 40 tokens (the dense
// minimum's range, gpu/gemm_mma_layout.h).
void set_prefill_k_split_rule(bool on) { gpu::detail::set_gemv_prefill_k_split(on ? 0 : 1); }
void set_prefill_mma_k_split(bool on) {
  gpu::detail::set_gemv_prefill_mma(on);
  gpu::detail::set_gemv_prefill_k_split(on ? 0 : 1);
}
nlohmann::json bench_prefill_k_split(const WeightPool& pool, double d2d, bool against_f32) {
  const test::PrefillMmaScope every_group(true, 2);
  const std::initializer_list<GgmlType> types = {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4,
                                                 GgmlType::Q6_K, GgmlType::Q8_0};
  if (against_f32)
    return bench_switched(pool, d2d, types, {}, kDenseMinimumShapes, set_prefill_mma_k_split, "prefill_mma");
  return bench_switched(pool, d2d, types, {},
                        launch_shapes(7168, 2048, 1, {8, 32},
                                      launch_shapes(2048, 7168, 1, {8, 32},
                                                    launch_shapes(4096, 4096, 1, {2, 8, 16, 32, 64, 128}))),
                        set_prefill_k_split_rule, "k_split");
}

// The K split of expert launches (fiftieth session; gpu/kernels.h set_gemv_prefill_expert_k_split) under
// the default rules otherwise (minimum, columns), each launch side by side with none (off):
// - "gemv_prefill_expert_k_split": 2 splits on every group (on), then 4 ("_4"), then the launch's rule
//   ("_rule"; gpu/gemm_mma_layout.h prefill_expert_k_splits_default), on 8 experts of 2048 x 4096 (GGUF and
//   tiled) and of 4096 x 2048 (tiled) with 8 to 32 pairs each, 16 and 64 experts of 2048 x 4096 (tiled)
//   with 16 and 32 (launches that fill the device: what a split costs there), a long prompt's mixed groups
//   over 64 experts (0-40 pairs, tiled) and a longer prompt's over 16 (GGUF);
// - "gemv_prefill_dense_huge": dense launches of matrices of more rows than the device holds blocks of at
//   once (no K split: 65,536 x 4096, an output head's size, and 36,864 x 7168) with 5 to 40 tokens in the
//   F32 kernels (off) and on the tensor cores (on, every group of two or more): the dense minimum where
//   the launch does not split (gpu/gemm_mma_layout.h: 40 / 48, measured only on 4096 x 4096 without A
//   from the quants);
// - "gemv_prefill_dense_columns": dense 4096 x 4096, 2048 x 7168 and 7168 x 2048 with 2, 3 and 4 tokens as
//   decode columns (on, gpu/prefill_columns.h's 4 dense tokens) or on the tensor cores with the K split's
//   rule (off, every group of two or more).
void set_prefill_expert_k_split2(bool on) { gpu::detail::set_gemv_prefill_expert_k_split(on ? 2 : 1); }
void set_prefill_expert_k_split4(bool on) { gpu::detail::set_gemv_prefill_expert_k_split(on ? 4 : 1); }
void set_prefill_expert_k_split_rule(bool on) { gpu::detail::set_gemv_prefill_expert_k_split(on ? 0 : 1); }
std::vector<int32_t> long_prompt_groups(int experts) {  // 0-40 pairs, a third of them up to 12
  std::vector<int32_t> v;
  for (int e = 0; e < experts; ++e) v.push_back((e * 37 + 11) % 41);
  return v;
}
nlohmann::json bench_prefill_expert_k_split(const WeightPool& pool, double d2d, void (*set)(bool)) {
  const test::PrefillMmaScope defaults_afterwards(gpu::detail::kGemvPrefillMmaDefault, 0,
                                                  gpu::detail::kGemvPrefillColumnsDefault);
  const std::vector<std::tuple<int64_t, int64_t, int, std::vector<int>, bool>> shapes = {
      {2048, 4096, 8, {8, 12, 16, 24, 32}, false}, {2048, 4096, 8, {8, 16, 32}, true},
      {4096, 2048, 8, {8, 16, 32}, true},          {2048, 4096, 16, {16, 32}, true},
      {2048, 4096, 64, {16, 32}, true}};
  nlohmann::json rows = nlohmann::json::array();
  for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q8_0}) {
    for (const auto& [r, c, e, pairs, tiled] : shapes) {
      if (tiled && !gpu::gemv_tiled_supported(t, c, r)) continue;
      for (const int p : pairs) {
        four_rounds(rows, set, "expert_k_split", [&] { return bench_gemv(pool, t, r, c, d2d, e, tiled, p); });
      }
    }
    if (gpu::gemv_tiled_supported(t, 4096, 2048)) {
      four_rounds(rows, set, "expert_k_split",
                  [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, long_prompt_groups(64), true); });
    }
    four_rounds(rows, set, "expert_k_split",
                [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, kLongerPromptGroups); });
  }
  return rows;
}
// Dense launches of `shapes` of each type in the F32 kernels (off) and on the tensor cores (on, every group of
// two or more: the minimum's own rule out of the way).
nlohmann::json bench_dense_f32_against_tensor_cores(const WeightPool& pool, double d2d,
                                                    std::initializer_list<GgmlType> types,
                                                    const std::vector<LaunchShape>& shapes) {
  const test::PrefillMmaScope every_group(gpu::detail::kGemvPrefillMmaDefault, 2);
  return bench_switched(pool, d2d, types, {}, shapes, gpu::detail::set_gemv_prefill_mma, "prefill_mma");
}
// "gemv_prefill_dense_huge": matrices whose one pair tile fills the device (65,536 x 4096, 36,864 x 7168;
// the K split's rule, which splits the second 7 ways since the fifty-fifth session, on the tensor cores).
nlohmann::json bench_prefill_dense_huge(const WeightPool& pool, double d2d) {
  return bench_dense_f32_against_tensor_cores(
      pool, d2d, {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q8_0},
      launch_shapes(36864, 7168, 1, {5, 8, 12, 16, 24, 32, 40},
                    launch_shapes(65536, 4096, 1, {5, 8, 12, 16, 24, 32, 40})));
}
// "gemv_prefill_dense_neither" (--dense-neither-only, fifty-first session): dense launches whose one pair
// tile neither fills less than half the device (gpu/gemm_mma_layout.h prefill_dense_one_tile_few_blocks) nor
// all of it on an H100: DeepSeek's dense FFN up (18,432 rows of 7168, which the K split splits since the
// fifty-fifth session), MLA's q_b (24,576 of 1536) and kv_b (32,768 of 512: rows of two units, never split),
// with 5, 8, 12, 24 and 40 tokens in the F32 kernels (off) and on the tensor cores (on, every group of two or
// more, the K split's rule): where the dense minimum kept 40 / 48 until the fifty-second session.
// One type a part ("gemv_prefill_dense_neither_<type>"), each written as it completes.
nlohmann::json bench_prefill_dense_neither(const WeightPool& pool, double d2d, GgmlType type) {
  return bench_dense_f32_against_tensor_cores(
      pool, d2d, {type},
      launch_shapes(32768, 512, 1, {5, 8, 12, 24, 40},
                    launch_shapes(24576, 1536, 1, {5, 8, 12, 24, 40},
                                  launch_shapes(18432, 7168, 1, {5, 8, 12, 24, 40}))));
}
// "gemv_prefill_dense_whole_columns" (--dense-whole-columns-only, fifty-second session): the same three
// launches (the K split leaves them whole) with 2 to 5 tokens as decode columns (on) or on the tensor cores
// (off, every group of two or more): below the first whole-tile minimum of 5, which side wins. Q3_K's and Q5_K's
// F32 kernels against the tensor cores there as "gemv_prefill_dense_neither_<type>" (not measured before).
nlohmann::json bench_prefill_dense_whole_columns(const WeightPool& pool, double d2d, GgmlType type) {
  return bench_columns_switched(pool, d2d, set_prefill_columns32, {type},
                                {{18432, 7168, 1, {2, 3, 4, 5}, false},
                                 {24576, 1536, 1, {2, 3, 4, 5}, false},
                                 {32768, 512, 1, {2, 3, 4, 5}, false}},
                                false, 2);
}
nlohmann::json bench_prefill_dense_columns(const WeightPool& pool, double d2d) {
  return bench_columns_switched(pool, d2d, set_prefill_columns32,
                                {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q8_0},
                                {{4096, 4096, 1, {2, 3, 4}, false},
                                 {2048, 7168, 1, {2, 3, 4}, false},
                                 {7168, 2048, 1, {2, 3, 4}, false}},
                                false, 2);
}

// Q3_K's, Q5_K's or Q6_K's decode in the F32 kernels (on) or on the tensor cores (off, the default).
void set_q3k_f32_kernels(bool on) { gpu::detail::set_gemv_tensor_cores(GgmlType::Q3_K, !on); }
void set_q5k_f32_kernels(bool on) { gpu::detail::set_gemv_tensor_cores(GgmlType::Q5_K, !on); }
void set_q6k_f32_kernels(bool on) { gpu::detail::set_gemv_tensor_cores(GgmlType::Q6_K, !on); }

// Q3_K's tiled launches (tiled layout switched on, tensor cores) at depth 1 and 2, alternating 1, 2,
// 2, 1, each row with its "tiled_depth": the plain expert launches of `shapes` and, with glu,
// gate + up with the SwiGLU epilogue of 8 experts of 2048 on 4096 and on 7168 and 16 of 1536 on
// 7168. The launch's own depth (0) is set back afterwards.
nlohmann::json bench_q3k_depth(const WeightPool& pool, double d2d, const std::vector<LaunchShape>& shapes,
                               bool glu) {
  struct DepthDefault {
    ~DepthDefault() { gpu::detail::set_gemv_tiled_depth(0); }
  } depth_back;
  nlohmann::json out = nlohmann::json::array();
  const auto at_each_depth = [&](const auto& launch) {  // depths 1, 2, 2, 1
    for (int round = 0; round < 4; ++round) {
      const int depth = alternating_on(round) ? 2 : 1;
      gpu::detail::set_gemv_tiled_depth(depth);
      nlohmann::json g = launch();
      g["tiled_depth"] = depth;
      out.push_back(std::move(g));
    }
  };
  for (const auto& [r, c, e, pairs] : shapes)
    at_each_depth([&] { return bench_gemv(pool, GgmlType::Q3_K, r, c, d2d, e, true, pairs); });
  if (!glu) return out;
  for (const auto& [hidden, inter, experts] :
       {std::tuple{4096, 2048, 8}, {7168, 2048, 8}, {7168, 1536, 16}}) {
    at_each_depth([&] { return bench_gemv_glu(pool, GgmlType::Q3_K, inter, hidden, d2d, true, experts); });
  }
  return out;
}

// Q3_K's, Q5_K's or Q6_K's (`type`) decode launches both ways ("f32_kernels", bench_switched: off, on,
// on, off; `f32_kernels` the switch), `beside`'s default once, and each shape's read ceiling (of
// `type`'s bytes). The last shape, Qwen3-30B-A3B's down launch (8 x 2048 x 768: 3 super-blocks a
// row), takes the windowed rings.
nlohmann::json bench_k_decode(const WeightPool& pool, double d2d, GgmlType type, GgmlType beside,
                              void (*f32_kernels)(bool)) {
  const std::initializer_list<LaunchShape> shapes = {
      {7168, 1536, 16, 1}, {1536, 7168, 16, 1}, {2048, 4096, 8, 1}, {4096, 2048, 8, 1},
      {2048, 7168, 8, 1},  {7168, 2048, 8, 1},  {4096, 4096, 1, 1}, {2048, 768, 8, 1}};
  nlohmann::json out;
  out["launches"] = bench_switched(pool, d2d, {type}, {beside}, shapes, f32_kernels, "f32_kernels");
  // The expert launches' diagnosis (6: copies only, 7: arithmetic only; wrong sums), one
  // super-block a stage (27; Q5_K: 20), the other copy width (28; not Q5_K) and, for Q3_K, four
  // super-blocks a stage (26, rows of a multiple of 1024), between two runs of the default;
  // single matrices: 27, 28 (Q3_K, Q6_K).
  struct DefaultAfterwards {
    ~DefaultAfterwards() { gpu::detail::set_gemv_mma_variant(0); }
  } restore;
  const bool q5k = type == GgmlType::Q5_K;
  f32_kernels(false);  // the variants are the tensor cores'
  for (const auto& [r, c, e, pairs] : shapes) {
    for (const int v : {0, 6, 7, 20, 26, 27, 28, 0}) {
      if (v == 26 && (type != GgmlType::Q3_K || c % 1024 != 0)) continue;
      if (q5k ? v > 20 : v == 20) continue;
      if (e == 1 && v != 0 && v != 27 && v != 28) continue;
      gpu::detail::set_gemv_mma_variant(v);
      auto g = bench_gemv(pool, type, r, c, d2d, e, false, pairs);
      g["mma_variant"] = v;
      out["variants"].push_back(std::move(g));
    }
  }
  gpu::detail::set_gemv_mma_variant(0);
  for (const auto& [r, c, e, pairs] : shapes) {
    const uint64_t bytes = *ggml_row_bytes(type, static_cast<uint64_t>(c)) * static_cast<uint64_t>(r * e);
    auto ceil = bench_read_ceiling(pool, bytes, d2d);
    ceil["shape"] = std::to_string(e) + " x " + std::to_string(r) + " x " + std::to_string(c);
    out["read_ceiling"].push_back(std::move(ceil));
  }
  // The expert FFN with every matrix of `type` (as in Q3_K_M- or Q6_K-style GGUFs) in the
  // engine's order (bench_expert_ffn, GGUF layout): on the tensor cores with the SwiGLU
  // epilogue, and in the F32 kernels with SwiGLU's own launch, alternating off, on, on, off
  // ("f32_kernels"): 8 experts of 2048 on 4096 and on 7168, Kimi-K3's 16 of 1536 on 7168. For
  // Q6_K also Q4_K gate + up with a Q6_K down (the layers of Q4_K_M GGUFs whose down is Q6_K),
  // the down launch switched; for Q5_K also Q5_K gate + up with a Q6_K down (Q5_K_M's such
  // layers), gate + up switched.
  const TensorCoresDefaultAfterwards on_afterwards;
  for (const bool mixture : {false, true}) {
    if (mixture && type != GgmlType::Q6_K && type != GgmlType::Q5_K) continue;
    const GgmlType gate_up = mixture && type == GgmlType::Q6_K ? GgmlType::Q4_K : type;
    const GgmlType down = mixture ? GgmlType::Q6_K : type;
    for (const auto& [hidden, inter, experts] :
         {std::tuple{4096, 2048, 8}, {7168, 2048, 8}, {7168, 1536, 16}}) {
      for (int round = 0; round < 4; ++round) {
        const bool f32 = alternating_on(round);
        f32_kernels(f32);
        auto g = bench_expert_ffn(pool, gate_up, hidden, inter, experts, d2d, false, down);
        g["f32_kernels"] = f32;
        out["expert_ffn"].push_back(std::move(g));
      }
    }
  }
  // Q5_K's, Q6_K's and Q3_K's tiled layouts (twenty-ninth pass) beside the GGUF layout, on the
  // tensor cores (Q6_K's and Q3_K's tiled launches switched on), alternating GGUF, tiled, tiled, GGUF
  // ("tiled"): the expert launches (plain, then gate + up with the SwiGLU epilogue, the engine's decode
  // launch) and the expert FFN all of `type`; for Q6_K also the Q4_K_M layers' FFN, Q4_K gate + up tiled (as
  // the engine holds them) with the Q6_K down switched ("tiled_ffn_q4k_gate_up").
  if (q5k || type == GgmlType::Q6_K || type == GgmlType::Q3_K) {
    struct TiledLayoutDefaults {
      ~TiledLayoutDefaults() {
        gpu::detail::set_gemv_tiled_layout(GgmlType::Q3_K, gpu::detail::kGemvQ3kTiledDefault);
        gpu::detail::set_gemv_tiled_layout(GgmlType::Q6_K, gpu::detail::kGemvQ6kTiledDefault);
      }
    } tiled_back;
    if (type != GgmlType::Q5_K) gpu::detail::set_gemv_tiled_layout(type, true);
    f32_kernels(false);
    for (const auto& [r, c, e, pairs] : shapes) {
      if (e == 1) continue;  // the tiled layout is for expert launches
      for (int round = 0; round < 4; ++round)
        out["tiled"].push_back(bench_gemv(pool, type, r, c, d2d, e, alternating_on(round), pairs));
    }
    for (const auto& [hidden, inter, experts] :
         {std::tuple{4096, 2048, 8}, {7168, 2048, 8}, {7168, 1536, 16}}) {
      for (int round = 0; round < 4; ++round)
        out["tiled_glu"].push_back(
            bench_gemv_glu(pool, type, inter, hidden, d2d, alternating_on(round), experts));
      for (int round = 0; round < 4; ++round)
        out["tiled_ffn"].push_back(
            bench_expert_ffn(pool, type, hidden, inter, experts, d2d, alternating_on(round)));
      if (type != GgmlType::Q6_K) continue;
      for (int round = 0; round < 4; ++round)
        out["tiled_ffn_q4k_gate_up"].push_back(bench_expert_ffn(
            pool, GgmlType::Q4_K, hidden, inter, experts, d2d, true, GgmlType::Q6_K, alternating_on(round)));
    }
    // Q3_K's tiled launches at depth 1 and 2 (thirtieth pass; its default: 2 on rows of at least 16
    // units or in launches of at most 8 x 3072 rows, gemv_tiled.h's tiled_default_depth), alternating 1, 2,
    // 2, 1
    // ("tiled_depth", each row's "tiled_depth"): the plain expert launches, two square ones (8 x
    // 2048 x 2048: 8 units a row, 8 x 4096 x 4096: 16; rows and row length grow together there,
    // which tells a rule keyed on the row length from one keyed on the rows) and gate + up with
    // the epilogue.
    if (type == GgmlType::Q3_K) {
      std::vector<LaunchShape> depth_shapes;
      for (const LaunchShape& l : shapes) {
        if (std::get<2>(l) > 1) depth_shapes.push_back(l);
      }
      depth_shapes.push_back({2048, 2048, 8, 1});
      depth_shapes.push_back({4096, 4096, 8, 1});
      out["tiled_depth"] = bench_q3k_depth(pool, d2d, depth_shapes, true);
    }
  }
  return out;
}

// `moepack bench-twin DIR --backend cuda --zipf 1.0 --budget-mib 6400 --tokens 80 --warmup 16`
// (every expert of a 4-layer Kimi-K3 twin cached, as docs/cuda-backend.md's seventeenth pass on)
// with Q3_K's decode in the F32 kernels and on the tensor cores, alternating off, on, on, off
// ("rounds"); then, on the tensor cores, with Q3_K's tiled launch off and on (the twin's Q3_K downs,
// 7168 x 1536, tiled under tiled_experts "auto" while it is on; Q2_K's gate and up tiled both ways;
// "tiled_rounds"), alternating likewise.
nlohmann::json bench_twin_q3k(const std::string& dir) {
  const TensorCoresDefaultAfterwards restore;
  struct TiledDefaultAfterwards {
    ~TiledDefaultAfterwards() {
      gpu::detail::set_gemv_tiled_layout(GgmlType::Q3_K, gpu::detail::kGemvQ3kTiledDefault);
    }
  } tiled_back;
  bench::TwinBenchOptions o;
  o.pack_dir = dir;
  o.zipf_s = 1.0;
  o.budget_bytes = uint64_t{6400} << 20;
  o.tokens = 80;
  o.warmup = 16;
  o.backend = "cuda";
  // Four twin runs with `set(on)` alternating off, on, on, off: each round's row (`key`: on, with
  // "wall_ms_per_step" where `with_wall`) and each side's compute ms per step, off in ms[0].
  struct Sides {
    nlohmann::json rounds = nlohmann::json::array();
    std::vector<double> ms[2];
  };
  const auto side_by_side = [&o](const char* key, const auto& set, bool with_wall) {
    Sides sides;
    for (int round = 0; round < 4; ++round) {
      const bool on = alternating_on(round);
      set(on);
      bench::TwinBenchSetup setup = bench::prepare_twin_bench(o);
      const bench::TwinRunResult r = gpu::run_twin_bench_cuda(o, setup);
      const double per_step =
          r.after_warmup.compute_s * 1e3 / static_cast<double>(std::max<uint64_t>(1, r.after_warmup.steps));
      sides.ms[on ? 1 : 0].push_back(per_step);
      nlohmann::json row = {{key, on},
                            {"compute_ms_per_step", per_step},
                            {"hits", r.after_warmup.hits},
                            {"misses", r.after_warmup.misses},
                            {"checksum", r.checksum}};
      if (with_wall)
        row["wall_ms_per_step"] =
            r.after_warmup.wall_s * 1e3 / static_cast<double>(std::max<uint64_t>(1, r.after_warmup.steps));
      sides.rounds.push_back(std::move(row));
    }
    return sides;
  };
  const Sides f32 = side_by_side(
      "f32_kernels", [](bool on) { set_q3k_f32_kernels(on); }, true);
  set_q3k_f32_kernels(false);
  const Sides tiled = side_by_side(
      "q3k_tiled", [](bool on) { gpu::detail::set_gemv_tiled_layout(GgmlType::Q3_K, on); }, false);
  return {{"rounds", f32.rounds},
          {"compute_ms_per_step_tensor_cores", io_bench_median(f32.ms[0])},
          {"compute_ms_per_step_f32_kernels", io_bench_median(f32.ms[1])},
          {"tiled_rounds", tiled.rounds},
          {"compute_ms_per_step_q3k_tiled_off", io_bench_median(tiled.ms[0])},
          {"compute_ms_per_step_q3k_tiled_on", io_bench_median(tiled.ms[1])}};
}

// tiled_experts "off" / "on" and prefetch_experts for bench_setting.
void set_tiled_experts(EngineSettings& s, bool on) { s.tiled_experts = on ? "on" : "off"; }
void set_prefetch_experts(EngineSettings& s, bool on) { s.prefetch_experts = on; }

// "model_prefill_*" (--model-prefill-only, fifty-third session): the prefill rules on the launches a
// large-expert model's prefill issues, each launch in four configurations side by side (order rule,
// f32, tensor_cores, columns, then back: two runs each, the mean reported):
//   rule          the defaults (gpu/gemm_mma_layout.h, gpu/prefill_columns.h: what the engine runs);
//   f32           every group in the F32 kernels (tensor cores' prefill off, no columns);
//   tensor_cores  every group of two or more pairs on the tensor cores (no columns);
//   columns       groups of up to 16 pairs as decode columns, larger ones on the tensor cores;
//   columns_8     the same up to 8 pairs (fifty-fourth session);
//   k_split_8     dense launches of rows of 4096 elements or more only: every token on the tensor cores, the
//                 launch split 8 ways along its rows (set_gemv_prefill_k_split(8); fifty-fourth session).
// "rule_over_best": the rule's time over the fastest configuration run (1.00: the rule chose the best).
// Experts: DeepSeek-V4-Flash, Kimi-K3 and DeepSeek-V3 (bench/twin_shape.cpp: 4096 / 2048 MXFP4, 256 experts
// top-6; 7168 / 1536 Q2_K with Q3_K downs, 896 top-16; 7168 / 2048 Q4_K, 256 top-8), a prompt of T tokens
// routed by a Zipf(1.0) router over a random ranking of the experts (the twins' router, docs/twins.md; k
// distinct experts a token), the experts held tiled (the engine's auto rule); the gate + up launch (2m
// groups, gpu/cuda_moe.cpp) and the down launch, in batches of as many experts as the weight pool holds (a
// slot pool's batches). Dense: the attention and dense-FFN matrices of those models and DeepSeek-V3's output
// head, 2 to 64 tokens, Q4_K, Q6_K and Q8_0.
struct PrefillConfig {
  const char* name;
  bool mma;
  int min_pairs, columns;
  int k_split = gpu::detail::kGemvPrefillKSplitDefault;
  bool dense_long_rows_only = false;
};
constexpr PrefillConfig kPrefillConfigs[] = {
    {"rule", gpu::detail::kGemvPrefillMmaDefault, 0, gpu::detail::kGemvPrefillColumnsDefault},
    {"f32", false, 0, gpu::detail::kGemvPrefillColumnsOff},
    {"tensor_cores", true, 2, gpu::detail::kGemvPrefillColumnsOff},
    {"columns", true, 2, 16},
    {"columns_8", true, 2, 8},
    {"k_split_8", true, 2, gpu::detail::kGemvPrefillColumnsOff, 8, true}};

// Group sizes of `tokens` tokens routed to `top_k` distinct experts of `experts` by Zipf(s) weights over a
// random ranking (std::mt19937 seeded with `seed`): one entry an expert that got a pair, in expert order.
std::vector<int32_t> zipf_prompt_groups(int experts, int top_k, int tokens, double s, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int> rank(static_cast<size_t>(experts));
  std::iota(rank.begin(), rank.end(), 0);
  std::shuffle(rank.begin(), rank.end(), rng);
  std::vector<double> w(static_cast<size_t>(experts));
  for (int e = 0; e < experts; ++e)
    w[static_cast<size_t>(e)] = 1.0 / std::pow(rank[static_cast<size_t>(e)] + 1.0, s);
  std::discrete_distribution<int> pick(w.begin(), w.end());
  std::vector<int32_t> count(static_cast<size_t>(experts), 0);
  for (int t = 0; t < tokens; ++t) {
    std::vector<int> chosen;
    while (static_cast<int>(chosen.size()) < top_k) {
      const int e = pick(rng);
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
    }
    for (const int e : chosen) ++count[static_cast<size_t>(e)];
  }
  std::vector<int32_t> sizes;
  for (const int32_t c : count) {
    if (c > 0) sizes.push_back(c);
  }
  return sizes;
}

// The GPU time of body() a round: time_launches with as many rounds as take ~40 ms (4 to 64), counted
// from one round's time.
template <class Body>
double time_rounds_us(Body&& body) {
  const double first = time_launches(body, 1).gpu_us;
  return time_launches(body, static_cast<int>(std::clamp(40e3 / std::max(first, 1.0), 4.0, 64.0))).gpu_us;
}

// One prefill launch (or a slot pool's batches of it) of matrices [rows][cols] of `type`, one group a matrix
// with sizes[g] pairs (one group and sizes[0] tokens: dense), its x and y from `x` and `y` (pair j reading x
// row j), the weights from `pool` (rotated over copies where the pool holds two or more of the launch).
struct PrefillLaunch {
  GgmlType type;
  int64_t rows, cols;
  std::vector<int32_t> sizes;
  bool tiled = false, dense = false;
};
double time_prefill_launch(const WeightPool& pool, const PrefillLaunch& l, const gpu::DeviceBuffer& x,
                           gpu::DeviceBuffer& y) {
  const uint64_t rb = *ggml_row_bytes(l.type, static_cast<uint64_t>(l.cols));
  const uint64_t mat = rb * static_cast<uint64_t>(l.rows);
  const size_t per_batch = std::max<size_t>(1, std::min<size_t>(l.sizes.size(), pool.buf.size() / mat));
  struct Batch {
    gpu::GemvBatch b;
    std::vector<int32_t> off;
    gpu::DeviceBuffer d_off;
    int copies = 1;
  };
  std::vector<Batch> batches;
  for (size_t first = 0; first < l.sizes.size(); first += per_batch) {
    const size_t m = std::min(per_batch, l.sizes.size() - first);
    Batch bt{{}, {0}, gpu::DeviceBuffer((m + 1) * sizeof(int32_t), "grp_off")};
    for (size_t i = 0; i < m; ++i) bt.off.push_back(bt.off.back() + l.sizes[first + i]);
    MOEPACK_CUDA_CHECK(
        cudaMemcpy(bt.d_off.as<void>(), bt.off.data(), bt.d_off.size(), cudaMemcpyHostToDevice));
    if (static_cast<size_t>(bt.off.back()) * static_cast<size_t>(l.cols) * sizeof(float) > x.size() ||
        static_cast<size_t>(bt.off.back()) * static_cast<size_t>(l.rows) * sizeof(float) > y.size()) {
      throw Error("model prefill bench: x or y too small");
    }
    gpu::GemvBatch& b = bt.b;
    b = expert_batch(l.type, l.rows, l.cols, x.as<float>(), y.as<float>(), bt.d_off, l.dense ? 1 : 2);
    b.w_tiled = l.tiled;
    if (l.dense) {
      b.n_tok = l.sizes[0];
    } else {  // (expert_batch's groups, also for a batch of one expert)
      b.n_groups = static_cast<int32_t>(m);
      b.max_pairs = *std::max_element(l.sizes.begin() + static_cast<std::ptrdiff_t>(first),
                                      l.sizes.begin() + static_cast<std::ptrdiff_t>(first + m));
    }
    bt.copies = static_cast<int>(std::max<uint64_t>(1, std::min<uint64_t>(32, pool.buf.size() / (mat * m))));
    batches.push_back(std::move(bt));
  }
  for (Batch& bt : batches) {
    if (!l.dense) bt.b.grp_off_host = bt.off.data();  // (the vector's storage no longer moves)
  }
  return time_rounds_us([&](int i) {
    for (Batch& bt : batches) {
      const uint64_t span = mat * static_cast<uint64_t>(bt.b.n_groups);
      bt.b.w = pool.buf.bytes_ptr() + static_cast<uint64_t>(i % bt.copies) * span;
      gpu::gemv(bt.b, nullptr);
    }
  });
}

// The launch in the configurations that apply to it (two runs each, alternating); its row.
nlohmann::json prefill_configs_row(const WeightPool& pool, const PrefillLaunch& l, const gpu::DeviceBuffer& x,
                                   gpu::DeviceBuffer& y) {
  std::vector<int> run;
  for (int c = 0; c < static_cast<int>(std::size(kPrefillConfigs)); ++c) {
    if (!kPrefillConfigs[c].dense_long_rows_only || (l.dense && l.cols >= gpu::kPrefillDenseWholeLongRow)) {
      run.push_back(c);
    }
  }
  const int n_run = static_cast<int>(run.size());
  std::vector<double> us(std::size(kPrefillConfigs), 0.0);
  for (int round = 0; round < 2 * n_run; ++round) {
    const int c = run[static_cast<size_t>(round < n_run ? round : 2 * n_run - 1 - round)];
    const PrefillConfig& cfg = kPrefillConfigs[c];
    const test::PrefillMmaScope scope(cfg.mma, cfg.min_pairs, cfg.columns);
    gpu::detail::set_gemv_prefill_k_split(cfg.k_split);
    us[static_cast<size_t>(c)] += time_prefill_launch(pool, l, x, y) / 2;
  }
  int best = 0;
  for (const int c : run) {
    if (us[static_cast<size_t>(c)] < us[static_cast<size_t>(best)]) best = c;
  }
  const int32_t pairs = std::accumulate(l.sizes.begin(), l.sizes.end(), int32_t{0});
  nlohmann::json row = {{"type", std::string(ggml_type_name(l.type))},
                        {"rows", l.rows},
                        {"cols", l.cols},
                        {"tiled", l.tiled},
                        {"pairs", pairs},
                        {"best", kPrefillConfigs[best].name},
                        {"rule_over_best", us[0] / us[best]}};
  if (l.dense) {
    row["tokens"] = l.sizes[0];
  } else {
    row["experts_per_launch"] = l.sizes.size();
    row["largest_group"] = *std::max_element(l.sizes.begin(), l.sizes.end());
    row["groups_up_to_4"] = std::count_if(l.sizes.begin(), l.sizes.end(), [](int32_t n) { return n <= 4; });
  }
  for (const int c : run) row["us"][kPrefillConfigs[c].name] = us[static_cast<size_t>(c)];
  return row;
}

// The expert launches of one model shape's prefill of each of `prompt_tokens` (see above).
nlohmann::json bench_model_prefill_experts(const WeightPool& pool, const std::string& shape_name,
                                           const std::vector<int>& prompt_tokens) {
  const bench::TwinShape* s = bench::find_twin_shape(shape_name);
  if (s == nullptr) throw Error("model prefill bench: no twin shape " + shape_name);
  const int max_t = *std::max_element(prompt_tokens.begin(), prompt_tokens.end());
  const size_t max_pairs = static_cast<size_t>(2 * max_t * static_cast<int>(s->top_k));
  const auto E = static_cast<int64_t>(s->n_embd), FF = static_cast<int64_t>(s->n_ff);
  const gpu::DeviceBuffer x = normal_floats(max_pairs * static_cast<size_t>(std::max(E, FF)), 3);
  gpu::DeviceBuffer y(max_pairs * static_cast<size_t>(std::max(E, FF)) * sizeof(float), "y");
  nlohmann::json rows = nlohmann::json::array();
  for (const int t : prompt_tokens) {
    const std::vector<int32_t> groups =
        zipf_prompt_groups(static_cast<int>(s->n_expert), static_cast<int>(s->top_k), t, 1.0, 7 + t);
    std::vector<int32_t> gate_up = groups;
    gate_up.insert(gate_up.end(), groups.begin(), groups.end());
    // (the engine's "auto" choice; the pool's matrices start 16-byte aligned)
    const bool tiled_up = gpu::tiled_expert("auto", s->gate, E, FF, *ggml_row_bytes(s->gate, s->n_embd), 0);
    const bool tiled_down = gpu::tiled_expert("auto", s->down, FF, E, *ggml_row_bytes(s->down, s->n_ff), 0);
    for (const auto& [role, l] :
         {std::pair<const char*, PrefillLaunch>{"gate_up", {s->gate, FF, E, gate_up, tiled_up}},
          std::pair<const char*, PrefillLaunch>{"down", {s->down, E, FF, groups, tiled_down}}}) {
      nlohmann::json row = prefill_configs_row(pool, l, x, y);
      row["model"] = shape_name;
      row["role"] = role;
      row["prompt_tokens"] = t;
      std::fprintf(stderr, "model_prefill %s %s T=%d: rule %.1f us, best %s x%.2f\n", shape_name.c_str(),
                   role, t, row["us"]["rule"].get<double>(), row["best"].get<std::string>().c_str(),
                   row["rule_over_best"].get<double>());
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// The dense launches (see above) of `type` with 2, 3, 4, 6, 8, 16, 32 and 64 tokens.
// The dense matrices [rows][cols] of the models above ("model_prefill_dense_*", "model_prefill_k_sweep_*").
struct ModelDense {
  const char* name;
  int64_t rows, cols;
};
constexpr ModelDense kModelDenseShapes[] = {{"mla_q_a", 1536, 7168},
                                            {"mla_kv_a", 576, 7168},
                                            {"mla_q_b", 24576, 1536},
                                            {"mla_kv_b", 32768, 512},
                                            {"v3_attn_out", 7168, 16384},
                                            {"v3_dense_up", 18432, 7168},
                                            {"v3_dense_down", 7168, 18432},
                                            {"shared_expert_up", 2048, 7168},
                                            {"shared_expert_down", 7168, 2048},
                                            {"v4_attn_out", 4096, 8192},
                                            {"short_rows_8192x768", 8192, 768},
                                            {"v3_output_head", 129280, 7168}};
nlohmann::json bench_model_prefill_dense(const WeightPool& pool, GgmlType type) {
  constexpr int kMaxTokens = 64;
  const gpu::DeviceBuffer x = normal_floats(size_t{kMaxTokens} * 18432, 4);
  gpu::DeviceBuffer y(size_t{kMaxTokens} * 129280 * sizeof(float), "y");
  nlohmann::json rows = nlohmann::json::array();
  for (const ModelDense& d : kModelDenseShapes) {
    if (!ggml_row_bytes(type, static_cast<uint64_t>(d.cols))) continue;
    for (const int t : {2, 3, 4, 6, 8, 16, 32, kMaxTokens}) {
      nlohmann::json row = prefill_configs_row(pool, {type, d.rows, d.cols, {t}, false, true}, x, y);
      row["matrix"] = d.name;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// "model_prefill_k_sweep_<type>" (--model-prefill-k-sweep, fifty-fifth session): the dense launches of rows
// of kPrefillDenseWholeLongRow elements or more above (4, 8, 16 and 64 tokens), every token on the tensor
// cores (no columns), at each K split count of kKSweep (1: none; set_gemv_prefill_k_split), as the rule runs
// it (us "rule": its own minimum, columns and split; "rule_on_tensor_cores": whether that is the tensor
// cores, not the F32 kernels or the columns) and the rule's split on the tensor cores ("rule_split"),
// forward then back, the mean of the two reported; "blocks": the launch's blocks before the split (64 rows by
// 32 tokens each); "rule_k" and "blocks_per_sm": the splits the rule takes on the tensor cores and the blocks
// a multiprocessor it counted with (gemv_prefill_dense_k_split); "rule_over_best" and
// "rule_split_over_best": over the fastest swept split.
nlohmann::json bench_model_prefill_k_sweep(const WeightPool& pool, GgmlType type) {
  constexpr int kKSweep[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16};
  constexpr int kS = static_cast<int>(std::size(kKSweep));
  constexpr int kN = kS + 2;  // then the rule, and the rule's split on the tensor cores
  constexpr int kMaxTokens = 64;
  const gpu::DeviceBuffer x = normal_floats(size_t{kMaxTokens} * 18432, 5);
  gpu::DeviceBuffer y(size_t{kMaxTokens} * 129280 * sizeof(float), "y");
  nlohmann::json rows = nlohmann::json::array();
  const test::PrefillMmaScope defaults_afterwards(gpu::detail::kGemvPrefillMmaDefault, 0,
                                                  gpu::detail::kGemvPrefillColumnsDefault);
  for (const ModelDense& d : kModelDenseShapes) {
    if (d.cols < gpu::kPrefillDenseWholeLongRow || !ggml_row_bytes(type, static_cast<uint64_t>(d.cols))) {
      continue;  // (rows of 4096 elements or more alone)
    }
    for (const int t : {4, 8, 16, kMaxTokens}) {
      const PrefillLaunch l{type, d.rows, d.cols, {t}, false, true};
      std::vector<double> us(kN, 0.0);
      for (int round = 0; round < 2 * kN; ++round) {
        const int c = round < kN ? round : 2 * kN - 1 - round;
        if (c == kS) {
          const test::PrefillMmaScope scope(gpu::detail::kGemvPrefillMmaDefault, 0,
                                            gpu::detail::kGemvPrefillColumnsDefault);
          gpu::detail::set_gemv_prefill_k_split(gpu::detail::kGemvPrefillKSplitDefault);
          us[static_cast<size_t>(c)] += time_prefill_launch(pool, l, x, y) / 2;
        } else {
          const test::PrefillMmaScope scope(true, 2, gpu::detail::kGemvPrefillColumnsOff);
          gpu::detail::set_gemv_prefill_k_split(c < kS ? kKSweep[c] : gpu::detail::kGemvPrefillKSplitDefault);
          us[static_cast<size_t>(c)] += time_prefill_launch(pool, l, x, y) / 2;
        }
      }
      gpu::detail::set_gemv_prefill_k_split(gpu::detail::kGemvPrefillKSplitDefault);
      const gpu::detail::DenseKSplit rule = gpu::detail::gemv_prefill_dense_k_split(type, d.cols, d.rows, t);
      const int min_tokens = gpu::detail::gemv_prefill_mma_min_pairs(type, d.cols, d.rows, true);
      const int columns = gpu::detail::gemv_prefill_columns(type, d.cols, d.rows, false, true);
      int best = 0;
      for (int c = 0; c < kS; ++c) {
        if (us[static_cast<size_t>(c)] < us[static_cast<size_t>(best)]) best = c;
      }
      nlohmann::json row = {{"type", std::string(ggml_type_name(type))},
                            {"matrix", d.name},
                            {"rows", d.rows},
                            {"cols", d.cols},
                            {"tokens", t},
                            {"blocks", gpu::prefill_dense_blocks(d.rows, t)},
                            {"best_k", kKSweep[best]},
                            {"rule_k", rule.splits},
                            {"blocks_per_sm", rule.blocks_per_sm},
                            {"rule_on_tensor_cores", t >= min_tokens && t > columns},
                            {"rule_over_best", us[kS] / us[static_cast<size_t>(best)]},
                            {"rule_split_over_best", us[kS + 1] / us[static_cast<size_t>(best)]}};
      for (int c = 0; c < kS; ++c) row["us"][std::to_string(kKSweep[c])] = us[static_cast<size_t>(c)];
      row["us"]["rule"] = us[kS];
      row["us"]["rule_split"] = us[kS + 1];
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// How often the rule was within 5 % of the best, and its five worst launches.
nlohmann::json rule_summary(const nlohmann::json& rows) {
  int within = 0;
  std::vector<const nlohmann::json*> all;
  for (const auto& r : rows) {
    all.push_back(&r);
    if (r["rule_over_best"].get<double>() <= 1.05) ++within;
  }
  std::sort(all.begin(), all.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return (*a)["rule_over_best"].get<double>() > (*b)["rule_over_best"].get<double>();
  });
  nlohmann::json worst = nlohmann::json::array();
  for (size_t i = 0; i < std::min<size_t>(5, all.size()); ++i) worst.push_back(*all[i]);
  return {{"launches", rows.size()}, {"rule_within_5_percent", within}, {"worst", worst}};
}

// "gemv_prefill_tiled_recompute" (--tiled-recompute, fifty-third session): the tensor cores' prefill of tiled
// experts with its staging addresses computed anew each unit (on) or kept in registers (off, the spilling
// build), alternating off, on, on, off, each row with the decode columns' slots and K-split launches it took
// (none of the first: every group on the tensor cores): 8 experts of 2048 x 4096 with 24 and 64 pairs each
// (24: above every type's tiled columns, Q6_K's 16), 8 of 4096 x 2048 with 32, 64 of 2048 x 4096 with a
// long prompt's groups whose small groups take the columns, the same with x staged half a unit
// (set_gemv_prefill_mma_half_x(1): the XC = 4 kernels; the rule stages the whole unit where A comes from the
// quants), and the K split's instantiation (2 splits on every group) on 8 x 2048 x 4096 with 24 pairs.
void set_prefill_tiled_recompute(bool on) { gpu::detail::set_gemv_prefill_tiled_recompute(on); }
nlohmann::json bench_prefill_tiled_recompute(const WeightPool& pool, double d2d) {
  const test::PrefillMmaScope defaults_afterwards(gpu::detail::kGemvPrefillMmaDefault, 0,
                                                  gpu::detail::kGemvPrefillColumnsDefault);
  nlohmann::json rows = nlohmann::json::array();
  const auto counted = [](const char* what, const auto& launch) {
    const uint64_t slots = gpu::gemv_prefill_column_slots(),
                   splits = gpu::gemv_prefill_expert_k_split_launches();
    nlohmann::json g = launch();
    g["launch"] = what;
    g["column_slots"] = gpu::gemv_prefill_column_slots() - slots;
    g["expert_k_split_launches"] = gpu::gemv_prefill_expert_k_split_launches() - splits;
    return g;
  };
  for (const GgmlType t :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q3_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
    const auto four = [&](const char* what, const auto& launch) {
      four_rounds(rows, set_prefill_tiled_recompute, "tiled_recompute",
                  [&] { return counted(what, launch); });
    };
    four("8 x 2048 x 4096, 24 pairs each",
         [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, std::vector<int32_t>(8, 24), true); });
    four("8 x 2048 x 4096, 64 pairs each",
         [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, std::vector<int32_t>(8, 64), true); });
    four("8 x 4096 x 2048, 32 pairs each",
         [&] { return bench_gemv_groups(pool, t, 4096, 2048, d2d, std::vector<int32_t>(8, 32), true); });
    four("64 x 2048 x 4096, a long prompt's groups",
         [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, long_prompt_groups(64), true); });
    gpu::detail::set_gemv_prefill_mma_half_x(1);
    four("64 x 2048 x 4096, a long prompt's groups, x half a unit",
         [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, long_prompt_groups(64), true); });
    gpu::detail::set_gemv_prefill_mma_half_x(gpu::detail::kGemvPrefillMmaHalfXRule);
    gpu::detail::set_gemv_prefill_expert_k_split(2);
    four("8 x 2048 x 4096, 24 pairs each, 2 K splits",
         [&] { return bench_gemv_groups(pool, t, 2048, 4096, d2d, std::vector<int32_t>(8, 24), true); });
    gpu::detail::set_gemv_prefill_expert_k_split(gpu::detail::kGemvPrefillExpertKSplitDefault);
  }
  return rows;
}
}  // namespace

int main(int argc, char** argv) {
  std::string model =
      std::string(MOEPACK_SOURCE_DIR) + "/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf";
  int prefill = 128, decode = 64;
  bool engine_only = false;       // --engine-only: the "engine" section alone
  bool gemv_only = false;         // --gemv-only: every section but "engine"
  bool tiled_only = false;        // --tiled-only: "gemv_tiled" and "read_ceiling" alone
  bool gemv_graph_only = false;   // --gemv-graph-only: "gemv_graph" alone
  bool ffn_only = false;          // --ffn-only: "expert_ffn" and the read ceilings of its layers alone
  bool graph_only = false;        // --graph-only: the --graph-model sections of "engine" alone
  bool f32_only = false;          // --f32-only: "gemv_f32_types", "gemv_prefill_x" and "prefill_x_staged_of"
  bool prefill_columns_only = false;  // --prefill-columns-only: the columns' default rule, dense minimum
  bool host_sizes_only =
      false;  // --prefill-host-sizes-only: "gemv_prefill_host_sizes", "prefill_host_sizes_of"
  bool quant_a_only = false;      // --prefill-quant-a-only: "gemv_prefill_quant_a", "prefill_quant_a_of"
  bool prefill_mma_only = false;  // --prefill-mma-only: "gemv_prefill_mma" and "prefill_mma_of"
  bool rules_skip_k_split = false;  // --rules-skip-k-split: --prefill-rules-only without the K split parts
  bool dense_neither_only = false;  // --dense-neither-only: "gemv_prefill_dense_neither_<type>"
  bool dense_whole_columns_only = false;  // --dense-whole-columns-only
  bool expert_k_split_only = false;  // --expert-k-split-only: the expert K split, dense huge and few-token
  bool prefill_rules_only = false;  // --prefill-rules-only: "gemv_prefill_columns_quant_a", "..._mma_quant_a"
  bool model_prefill_only = false;  // --model-prefill-only: "model_prefill_*"
  bool model_prefill_dense_only = false;  // --model-prefill-dense-only: "model_prefill_dense_*" alone
  bool model_prefill_k_sweep = false;     // --model-prefill-k-sweep: "model_prefill_k_sweep_*" (first)
  bool tiled_recompute = false;     // --tiled-recompute: "gemv_prefill_tiled_recompute" (first; alone
                                    // unless with --model-prefill-only)
  bool q3k_only = false;          // --q3k-only: "gemv_q3k" (and "twin_q3k" with --twin DIR)
  bool q3k_depth_only = false;    // --q3k-depth-only: "q3k_depth"
  bool q6k_only = false;          // --q6k-only: "gemv_q6k"
  bool q5k_only = false;          // --q5k-only: "gemv_q5k"
  std::string twin_dir;           // --twin DIR
  std::vector<std::string> graph_models;  // --graph-model: the decode graph side by side
  struct OneGemv {
    std::string type;
    int rows = 0, cols = 0, experts = 0, variant = 0, pairs = 1;  // --pairs N: a prefill launch
  } one;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gemv" && i + 5 < argc) {
      one = {argv[i + 1],
             std::stoi(argv[i + 2]),
             std::stoi(argv[i + 3]),
             std::stoi(argv[i + 4]),
             std::stoi(argv[i + 5]),
             one.pairs};  // a --pairs before --gemv stays
      i += 5;
    } else if (a == "--pairs" && i + 1 < argc) {
      one.pairs = std::stoi(argv[++i]);
    } else if (a == "--prefill" && i + 1 < argc) {
      prefill = std::stoi(argv[++i]);
    } else if (a == "--decode" && i + 1 < argc) {
      decode = std::stoi(argv[++i]);
    } else if (a == "--graph-model" && i + 1 < argc) {
      graph_models.emplace_back(argv[++i]);
    } else if (a == "--engine-only") {
      engine_only = true;
    } else if (a == "--gemv-only") {
      gemv_only = true;
    } else if (a == "--gemv-graph-only") {
      gemv_graph_only = true;
    } else if (a == "--tiled-only") {
      tiled_only = true;
    } else if (a == "--ffn-only") {
      ffn_only = true;
    } else if (a == "--f32-only") {
      f32_only = true;
    } else if (a == "--prefill-columns-only") {
      prefill_columns_only = true;
    } else if (a == "--prefill-host-sizes-only") {
      host_sizes_only = true;
    } else if (a == "--prefill-quant-a-only") {
      quant_a_only = true;
    } else if (a == "--prefill-mma-only") {
      prefill_mma_only = true;
    } else if (a == "--tiled-recompute") {
      tiled_recompute = true;
    } else if (a == "--model-prefill-only") {
      model_prefill_only = true;
    } else if (a == "--model-prefill-k-sweep") {
      model_prefill_k_sweep = true;
    } else if (a == "--model-prefill-dense-only") {
      model_prefill_only = model_prefill_dense_only = true;
    } else if (a == "--prefill-rules-only") {
      prefill_rules_only = true;
    } else if (a == "--dense-neither-only") {
      dense_neither_only = true;
    } else if (a == "--dense-whole-columns-only") {
      dense_whole_columns_only = true;
    } else if (a == "--expert-k-split-only") {
      expert_k_split_only = true;
    } else if (a == "--rules-skip-k-split") {
      rules_skip_k_split = true;
    } else if (a == "--q3k-only") {
      q3k_only = true;
    } else if (a == "--q3k-depth-only") {
      q3k_depth_only = true;
    } else if (a == "--q6k-only") {
      q6k_only = true;
    } else if (a == "--q5k-only") {
      q5k_only = true;
    } else if (a == "--twin" && i + 1 < argc) {
      twin_dir = argv[++i];
    } else if (a == "--graph-only") {
      graph_only = engine_only = true;
    } else {
      model = a;
    }
  }
  if (graph_only && graph_models.empty()) {
    std::fprintf(stderr, "bench_cuda_backend: --graph-only needs at least one --graph-model\n");
    return 2;
  }
  if (engine_only && gemv_only) {
    std::fprintf(stderr, "bench_cuda_backend: --engine-only and --gemv-only exclude each other\n");
    return 2;
  }
  const auto q = gpu::query_devices();
  if (q.devices.empty()) {
    std::fprintf(stderr, "no CUDA device (%s)\n", q.error.c_str());
    return 77;
  }
  try {
    gpu::register_cuda_backend();
    nlohmann::json out;
    out["device"] = q.devices[0].name;
    const double d2d = d2d_bandwidth();
    out["d2d_copy_bytes_per_s"] = d2d;
    const WeightPool pool(size_t{4} << 30);  // 2048 x 7168 Q8_0 x 8 experts x 32 copies
    if (one.rows > 0) {  // --gemv: one launch shape and its read ceiling only (for a profiler)
      const auto t = ggml_type_from_name(one.type);
      if (!t) throw Error("--gemv: unknown type '" + one.type + "'");
      gpu::detail::set_gemv_mma_variant(one.variant);
      auto g = bench_gemv(pool, *t, one.rows, one.cols, d2d, one.experts, false, one.pairs);
      g["mma_variant"] = one.variant;
      out["gemv"].push_back(g);
      out["read_ceiling"].push_back(bench_read_ceiling(pool, g["bytes_per_launch"].get<uint64_t>(), d2d));
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (q3k_depth_only) {  // the rows between the depth rule's two measured ends (8 x 2048, 8 x 4096)
      std::vector<LaunchShape> shapes;
      for (const int cols : {1536, 2048, 3072}) {
        for (const int rows : {2048, 2560, 3072, 3584, 4096}) shapes.push_back({rows, cols, 8, 1});
      }
      out["q3k_depth"] = bench_q3k_depth(pool, d2d, shapes, false);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (q3k_only) {
      out["gemv_q3k"] = bench_k_decode(pool, d2d, GgmlType::Q3_K, GgmlType::Q2_K, set_q3k_f32_kernels);
      if (!twin_dir.empty()) out["twin_q3k"] = bench_twin_q3k(twin_dir);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (q6k_only || q5k_only) {
      if (q6k_only) {
        out["gemv_q6k"] = bench_k_decode(pool, d2d, GgmlType::Q6_K, GgmlType::Q4_K, set_q6k_f32_kernels);
      } else {
        out["gemv_q5k"] = bench_k_decode(pool, d2d, GgmlType::Q5_K, GgmlType::Q4_K, set_q5k_f32_kernels);
      }
      // The engine (GGUF, every expert resident) on the model and every --graph-model with Q3_K's,
      // Q5_K's and Q6_K's decode on the tensor cores (on) and in the F32 kernels (off),
      // alternating: the demo model's and the fixtures' Q6_K and Q3_K matrices have rows of one
      // super-block; llama-moe-tiny's Q4_K_M holds Q5_K attention outputs.
      const auto both = [](bool on) {
        gpu::detail::set_gemv_tensor_cores(GgmlType::Q3_K, on);
        gpu::detail::set_gemv_tensor_cores(GgmlType::Q5_K, on);
        gpu::detail::set_gemv_tensor_cores(GgmlType::Q6_K, on);
      };
      std::vector<std::string> models = {model};
      models.insert(models.end(), graph_models.begin(), graph_models.end());
      out["engine"]["k_tensor_cores_of"] = bench_switch_of(models, prefill, decode, both, "k_tensor_cores");
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (dense_whole_columns_only) {
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q8_0,
                               GgmlType::Q3_K, GgmlType::Q5_K}) {
        const std::string key = "gemv_prefill_dense_whole_columns_" + std::string(ggml_type_name(t));
        put_partial(out, key.c_str(), bench_prefill_dense_whole_columns(pool, d2d, t));
      }
      for (const GgmlType t : {GgmlType::Q3_K, GgmlType::Q5_K}) {
        const std::string key = "gemv_prefill_dense_neither_" + std::string(ggml_type_name(t));
        put_partial(out, key.c_str(), bench_prefill_dense_neither(pool, d2d, t));
      }
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (dense_neither_only) {
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q6_K, GgmlType::Q8_0}) {
        const std::string key = "gemv_prefill_dense_neither_" + std::string(ggml_type_name(t));
        put_partial(out, key.c_str(), bench_prefill_dense_neither(pool, d2d, t));
      }
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (expert_k_split_only) {
      put_partial(out, "gemv_prefill_expert_k_split",
                  bench_prefill_expert_k_split(pool, d2d, set_prefill_expert_k_split2));
      put_partial(out, "gemv_prefill_dense_huge", bench_prefill_dense_huge(pool, d2d));
      put_partial(out, "gemv_prefill_dense_columns", bench_prefill_dense_columns(pool, d2d));
      put_partial(out, "gemv_prefill_expert_k_split_rule",
                  bench_prefill_expert_k_split(pool, d2d, set_prefill_expert_k_split_rule));
      put_partial(out, "gemv_prefill_expert_k_split_4",
                  bench_prefill_expert_k_split(pool, d2d, set_prefill_expert_k_split4));
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (tiled_recompute) {
      put_partial(out, "gemv_prefill_tiled_recompute", bench_prefill_tiled_recompute(pool, d2d));
      if (!model_prefill_only) {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
      }
    }
    if (model_prefill_k_sweep) {
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q5_K}) {
        put_partial(out, ("model_prefill_k_sweep_" + std::string(ggml_type_name(t))).c_str(),
                    bench_model_prefill_k_sweep(pool, t));
      }
      if (!model_prefill_only) {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
      }
    }
    if (model_prefill_only) {
      const std::vector<int> prompts = {4, 16, 64, 512};
      const std::vector<const char*> models =
          model_prefill_dense_only ? std::vector<const char*>{}
                                   : std::vector<const char*>{"deepseek-v4-flash", "kimi-k3", "deepseek-v3"};
      for (const char* m : models) {
        const nlohmann::json rows = bench_model_prefill_experts(pool, m, prompts);
        put_partial(out, (std::string("model_prefill_experts_") + m).c_str(), rows);
        put_partial(out, (std::string("model_prefill_experts_summary_") + m).c_str(), rule_summary(rows));
      }
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0}) {
        const nlohmann::json rows = bench_model_prefill_dense(pool, t);
        const std::string name(ggml_type_name(t));
        put_partial(out, ("model_prefill_dense_" + name).c_str(), rows);
        put_partial(out, ("model_prefill_dense_summary_" + name).c_str(), rule_summary(rows));
      }
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (prefill_rules_only) {
      if (!rules_skip_k_split) {
        put_partial(out, "gemv_prefill_k_split", bench_prefill_k_split(pool, d2d, false));
        put_partial(out, "gemv_prefill_k_split_f32", bench_prefill_k_split(pool, d2d, true));
      }
      put_partial(out, "gemv_prefill_columns_quant_a", bench_prefill_columns_quant_a(pool, d2d));
      put_partial(out, "gemv_prefill_mma_quant_a", bench_prefill_mma_quant_a(pool, d2d));
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (quant_a_only) {
      out["gemv_prefill_quant_a"] = bench_prefill_quant_a(pool, d2d, set_prefill_quant_a, "quant_a");
      partial("gemv_prefill_quant_a", out["gemv_prefill_quant_a"]);
      {
        const test::PrefillMmaScope quant_a_on(true, 2);  // (restores the half-unit rule at exit)
        gpu::detail::set_gemv_prefill_quant_a(true);
        out["gemv_prefill_quant_a_half_x"] = bench_prefill_quant_a(pool, d2d, set_prefill_half_x, "half_x");
      }
      partial("gemv_prefill_quant_a_half_x", out["gemv_prefill_quant_a_half_x"]);
      std::vector<std::string> models = {model};
      models.insert(models.end(), graph_models.begin(), graph_models.end());
      out["engine"]["prefill_quant_a_of"] =
          bench_switch_of(models, prefill, decode, set_prefill_quant_a, "quant_a");
      partial("prefill_quant_a_of", out["engine"]["prefill_quant_a_of"]);
      out["engine"]["prefill_quant_a_short_of"] =
          bench_switch_of(models, 32, decode, set_prefill_quant_a, "quant_a");
      partial("prefill_quant_a_short_of", out["engine"]["prefill_quant_a_short_of"]);
      set_prefill_quant_a(gpu::detail::kGemvPrefillQuantADefault);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (host_sizes_only) {
      out["gemv_prefill_half_x"] = bench_prefill_half_x(pool, d2d);
      partial("gemv_prefill_half_x", out["gemv_prefill_half_x"]);
      out["gemv_prefill_host_sizes"] = bench_prefill_host_sizes(pool, d2d);
      partial("gemv_prefill_host_sizes", out["gemv_prefill_host_sizes"]);
      std::vector<std::string> models = {model};
      models.insert(models.end(), graph_models.begin(), graph_models.end());
      out["engine"]["prefill_host_sizes_of"] =
          bench_switch_of(models, prefill, decode, set_prefill_host_sizes, "host_sizes");
      partial("prefill_host_sizes_of", out["engine"]["prefill_host_sizes_of"]);
      out["engine"]["prefill_host_sizes_short_of"] =
          bench_switch_of(models, 32, decode, set_prefill_host_sizes, "host_sizes");
      partial("prefill_host_sizes_short_of", out["engine"]["prefill_host_sizes_short_of"]);
      out["engine"]["prefill_half_x_of"] =
          bench_switch_of(models, prefill, decode, set_prefill_half_x, "half_x");
      partial("prefill_half_x_of", out["engine"]["prefill_half_x_of"]);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (prefill_columns_only) {
      out["gemv_prefill_columns_tiled"] = bench_prefill_columns_tiled(pool, d2d);
      partial("gemv_prefill_columns_tiled", out["gemv_prefill_columns_tiled"]);
      out["gemv_prefill_columns_rule"] = bench_prefill_columns_rule(pool, d2d);
      partial("gemv_prefill_columns_rule", out["gemv_prefill_columns_rule"]);
      out["gemv_prefill_mma_dense"] = bench_prefill_mma_dense(pool, d2d);
      partial("gemv_prefill_mma_dense", out["gemv_prefill_mma_dense"]);
      std::vector<std::string> models = {model};
      models.insert(models.end(), graph_models.begin(), graph_models.end());
      const auto on_is_rule = [](bool on) { set_prefill_columns_rule(on); };
      out["engine"]["prefill_columns_rule_of"] =
          bench_switch_of(models, prefill, decode, on_is_rule, "columns_rule");
      partial("prefill_columns_rule_of", out["engine"]["prefill_columns_rule_of"]);
      out["engine"]["prefill_columns_rule_short_of"] =
          bench_switch_of(models, 32, decode, on_is_rule, "columns_rule");
      partial("prefill_columns_rule_short_of", out["engine"]["prefill_columns_rule_short_of"]);
      gpu::detail::set_gemv_prefill_columns(gpu::detail::kGemvPrefillColumnsDefault);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (prefill_mma_only) {
      out["gemv_prefill_columns"] = bench_prefill_columns(pool, d2d);
      partial("gemv_prefill_columns", out["gemv_prefill_columns"]);
      // The engine's prefill with decode columns (on, up to 16 pairs) and without (off).
      const auto on_is_columns = [](bool on) { set_prefill_columns16(on); };
      {
        std::vector<std::string> models = {model};
        models.insert(models.end(), graph_models.begin(), graph_models.end());
        out["engine"]["prefill_columns_of"] =
            bench_switch_of(models, prefill, decode, on_is_columns, "columns");
        partial("prefill_columns_of", out["engine"]["prefill_columns_of"]);
        out["engine"]["prefill_columns_short_of"] =
            bench_switch_of(models, 32, decode, on_is_columns, "columns");
        partial("prefill_columns_short_of", out["engine"]["prefill_columns_short_of"]);
        gpu::detail::set_gemv_prefill_columns(gpu::detail::kGemvPrefillColumnsDefault);
      }
      out["gemv_prefill_mma"] = bench_prefill_mma(pool, d2d);
      partial("gemv_prefill_mma", out["gemv_prefill_mma"]);
      out["gemv_prefill_mma_rule"] = bench_prefill_mma_rule(pool, d2d);
      partial("gemv_prefill_mma_rule", out["gemv_prefill_mma_rule"]);
      // The engine's prefill on the tensor cores (on) and in the F32 kernels (off), alternating; the
      // decode columns off for these comparisons (they would take the small groups either way).
      gpu::detail::set_gemv_prefill_columns(gpu::detail::kGemvPrefillColumnsOff);
      const auto on_is_mma = [](bool on) { gpu::detail::set_gemv_prefill_mma(on); };
      std::vector<std::string> models = {model};
      models.insert(models.end(), graph_models.begin(), graph_models.end());
      out["engine"]["prefill_mma_of"] = bench_switch_of(models, prefill, decode, on_is_mma, "prefill_mma");
      partial("prefill_mma_of", out["engine"]["prefill_mma_of"]);
      // A short prompt (32 tokens: small groups); and groups of 2 to 7 pairs in the F32 kernels
      // (minimum 8, on) against every group of two or more on the tensor cores (minimum 2, off).
      out["engine"]["prefill_mma_short_of"] = bench_switch_of(models, 32, decode, on_is_mma, "prefill_mma");
      partial("prefill_mma_short_of", out["engine"]["prefill_mma_short_of"]);
      const auto on_is_min8 = [](bool on) {
        gpu::detail::set_gemv_prefill_mma(true);
        gpu::detail::set_gemv_prefill_mma_min_pairs(on ? 8 : 2);
      };
      out["engine"]["prefill_mma_min8_of"] = bench_switch_of(models, prefill, decode, on_is_min8, "min8");
      partial("prefill_mma_min8_of", out["engine"]["prefill_mma_min8_of"]);
      out["engine"]["prefill_mma_min8_short_of"] = bench_switch_of(models, 32, decode, on_is_min8, "min8");
      partial("prefill_mma_min8_short_of", out["engine"]["prefill_mma_min8_short_of"]);
      gpu::detail::set_gemv_prefill_mma_min_pairs(0);
      gpu::detail::set_gemv_prefill_mma(gpu::detail::kGemvPrefillMmaDefault);
      gpu::detail::set_gemv_prefill_columns(gpu::detail::kGemvPrefillColumnsDefault);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (f32_only) {
      out["gemv_f32_types"] = bench_f32_types(pool, d2d);
      out["gemv_prefill_x"] = bench_prefill_x(pool, d2d);
      // The engine's prefill with x staged (on) and read from global memory (off), alternating.
      const auto on_is_staged = [](bool on) { gpu::detail::set_gemv_prefill_x_global(!on); };
      std::vector<std::string> models = {model};
      models.insert(models.end(), graph_models.begin(), graph_models.end());
      const test::PrefillMmaScope f32_prefill(false, 0);  // both sides in the F32 kernels
      out["engine"]["prefill_x_staged_of"] =
          bench_switch_of(models, prefill, decode, on_is_staged, "prefill_x_staged");
      gpu::detail::set_gemv_prefill_x_global(false);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (gemv_graph_only) {
      out["gemv_graph"] = bench_gemv_graph(pool, d2d);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (ffn_only) {
      out["expert_ffn"] = bench_expert_ffns(pool, d2d);
      std::vector<uint64_t> sizes;
      for (const auto& f : out["expert_ffn"]) sizes.push_back(f["bytes_per_layer"].get<uint64_t>());
      std::sort(sizes.begin(), sizes.end());
      sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
      for (const uint64_t bytes : sizes) out["read_ceiling"].push_back(bench_read_ceiling(pool, bytes, d2d));
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (tiled_only) {
      out["gemv_tiled"] = bench_gemv_tiled(pool, d2d);
      out["expert_ffn"] = bench_expert_ffns(pool, d2d);
      for (const uint64_t bytes : {22020096ull, 35651584ull, 37748736ull, 66060288ull, 75497472ull}) {
        out["read_ceiling"].push_back(bench_read_ceiling(pool, bytes, d2d));
      }
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    if (!engine_only) {
      out["gemv_f32_types"] = bench_f32_types(pool, d2d);
      out["gemv_tiled"] = bench_gemv_tiled(pool, d2d);
      out["expert_ffn"] = bench_expert_ffns(pool, d2d);
      // Expert shapes of the targets: DeepSeek-V4-Flash gate/up (2048 x 4096) and down
      // (4096 x 2048), DeepSeek-V3 / Kimi gate/up (2048 x 7168) and down (7168 x 2048).
      const std::tuple<int, int, int> shapes[] = {
          {2048, 4096, 8}, {4096, 2048, 8}, {2048, 7168, 8}, {7168, 2048, 8}};
      for (const GgmlType t :
           {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q6_K}) {
        for (const auto& [rows, cols, experts] : shapes)
          out["gemv"].push_back(bench_gemv(pool, t, rows, cols, d2d, experts));
      }
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q8_0}) {
        out["gemv"].push_back(bench_gemv(pool, t, 4096, 4096, d2d, 1));
      }
      // Gate and up of 8 experts in one launch, 16 matrices: what CudaRoutedExperts issues when
      // both projections have one type (there gate and up of an expert read the same x row, here
      // every matrix its own).
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
        for (const int cols : {4096, 7168}) out["gemv_gate_up"].push_back(bench_gemv(pool, t, 2048, cols, d2d, 16));
      }
      // The same expert launches with x's fragments ready from the SwiGLU kernel (what the
      // engine's down projection at decode would take), beside SwiGLU + GEMV both ways.
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
        for (const auto& [rows, cols, experts] : shapes) {
          out["gemv_ready_fragments"].push_back(bench_gemv_ready(pool, t, rows, cols, d2d));
        }
      }
      // What a launch of each size can reach at best: a plain streaming read and a D2D copy of the
      // same bytes (the Q2_K, MXFP4 and Q4_K expert launches above, then 2x and 4x Q4_K's).
      for (const uint64_t bytes : {22020096ull, 35651584ull, 37748736ull, 66060288ull, 75497472ull, 150994944ull}) {
        out["read_ceiling"].push_back(bench_read_ceiling(pool, bytes, d2d));
      }
      // Diagnosis of the default expert launches (gemv_mma.h variants 6, 7: copies only,
      // arithmetic only; their sums are wrong), beside the full kernel (variant 0), x's fragments
      // prepared once per group (24) and not at all (25: wrong sums).
      for (const int v : {0, 24, 25, 6, 7}) {
        gpu::detail::set_gemv_mma_variant(v);
        for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
          for (const auto& [rows, cols] : {std::pair{16, 4096}, {2048, 4096}, {2048, 7168}}) {
            auto g = bench_gemv(pool, t, rows, cols, d2d);
            g["mma_variant"] = v;
            out["gemv_diagnosis"].push_back(g);
          }
        }
      }
      gpu::detail::set_gemv_mma_variant(0);
      // The fixed cost of a launch: 8 experts of 16 rows (one tile each), then growing row counts
      // (time = fixed + bytes / marginal bandwidth).
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q8_0}) {
        for (const int rows : {16, 256, 1024, 4096, 8192})
          out["gemv_scaling"].push_back(bench_gemv(pool, t, rows, 4096, d2d));
      }
      // The same tensor-core launches without programmatic dependent launch (each launch waits
      // for the one before it to finish before it starts: the launch's fixed cost is not hidden).
      gpu::detail::set_gemv_pdl(false);
      for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
        for (const auto& [rows, cols, experts] : shapes) {
          out["gemv_without_pdl"].push_back(bench_gemv(pool, t, rows, cols, d2d, experts));
        }
      }
      gpu::detail::set_gemv_pdl(true);
      // The decode paths side by side (gpu/gemv_mma.h; 0 is the default, -1 the F32 kernels).
      std::vector<int> variants = {-1, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 0};
      if (const char* e = std::getenv("MOEPACK_BENCH_VARIANTS")) {  // e.g. "0,8,11"
        variants.clear();
        for (std::string v; const char c : std::string(e) + ",") {
          if (c == ',') {
            if (!v.empty()) variants.push_back(std::stoi(v));
            v.clear();
          } else {
            v += c;
          }
        }
      }
      for (const int v : variants) {
        gpu::detail::set_gemv_mma_variant(v);
        for (const GgmlType t : {GgmlType::Q4_K, GgmlType::Q2_K, GgmlType::MXFP4}) {
          for (const auto& [rows, cols, experts] :
               {std::tuple{2048, 4096, 8}, {4096, 2048, 8}, {2048, 7168, 8}, {7168, 2048, 8}, {4096, 4096, 1},
                {2048, 4096, 16}, {2048, 7168, 16}}) {
            auto g = bench_gemv(pool, t, rows, cols, d2d, experts);
            g["mma_variant"] = v;
            out["gemv_mma_variants"].push_back(g);
          }
        }
      }
    }
    gpu::detail::set_gemv_mma_variant(0);  // the engine runs below take the defaults
    if (gemv_only) {
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    EngineSettings s;
    s.backend = "cuda";
    s.n_ctx = 1024;
    s.cache_vram_reserve_mib = 0;
    s.cache_ram_mib = 0;  // budgets measure the VRAM cache alone (no host-RAM tier)
    // Every --graph-model: tiled experts off / on (with_tiled), the decode graph and the router
    // on the GPU, side by side.
    const auto graph_model_sections = [&](bool with_tiled) {
      for (const std::string& m : graph_models) {
        const auto src = ModelSource::open(m);
        const std::string name = std::filesystem::path(m).filename().string();
        if (with_tiled) {
          out["engine"]["tiled_experts_of"][name] =
              bench_setting(src, s, prefill, decode, set_tiled_experts, "tiled_experts");
        }
        out["engine"]["decode_graph_of"][name] =
            bench_switch(src, s, prefill, decode, gpu::set_decode_graph, "decode_graph");
        out["engine"]["router_on_device_of"][name] =
            bench_switch(src, s, prefill, decode, gpu::set_router_on_device, "router_on_device");
      }
    };
    if (graph_only) {
      graph_model_sections(false);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    const auto gguf = ModelSource::open(model);
    out["model"] = model;
    out["engine"]["gguf"] = bench_engine(gguf, s, prefill, decode);
    // Side by side on the GGUF (every expert resident), runs alternating off / on: SwiGLU as the
    // gate + up launch's epilogue at decode (gpu/cuda_moe.cpp), the shared expert launched
    // beside the host's choice of experts (gpu/cuda_host_router.h), the choice itself made on
    // the GPU (gpu/device_routing.h), the residual add fused with the RMSNorm, the decode graph.
    // Each switch is measured on the direct launches (no decode graph), the graph's own side by
    // side last (its bench_switch turns it back on).
    gpu::set_decode_graph(false);
    out["engine"]["gguf_swiglu_epilogue"] =
        bench_switch(gguf, s, prefill, decode, gpu::detail::set_gemv_swiglu_fusion, "swiglu_epilogue");
    // (The overlap is that of the host's choice, so the router stays on the host for it.)
    gpu::set_router_on_device(false);
    out["engine"]["gguf_shared_expert_overlap"] =
        bench_switch(gguf, s, prefill, decode, gpu::set_shared_expert_overlap, "shared_expert_overlap");
    gpu::set_router_on_device(true);
    // Decode steps routed on the GPU (gpu/device_routing.h) or on the host (HostRouter).
    out["engine"]["gguf_router_on_device"] =
        bench_switch(gguf, s, prefill, decode, gpu::set_router_on_device, "router_on_device");
    // The residual add and the RMSNorm after it in one launch or two (gpu/cuda_backend.h).
    out["engine"]["gguf_residual_norm_fusion"] =
        bench_switch(gguf, s, prefill, decode, gpu::set_residual_norm_fusion, "residual_norm_fusion");
    // A decode step as one CUDA graph launch or its launches one by one (gpu/cuda_backend.h).
    out["engine"]["gguf_decode_graph"] =
        bench_switch(gguf, s, prefill, decode, gpu::set_decode_graph, "decode_graph");
    // Routed experts in the decode GEMV's tiled layout or the GGUF layout (tiled_experts).
    out["engine"]["gguf_tiled_experts"] =
        bench_setting(gguf, s, prefill, decode, set_tiled_experts, "tiled_experts");
    graph_model_sections(true);
    const std::string dir = (std::filesystem::temp_directory_path() / "moepack-bench-pack").string();
    std::filesystem::remove_all(dir);
    BuildOptions bo;
    bo.source = model;
    bo.out_dir = dir;
    bo.safety_margin_bytes = 0;
    bo.hash_sources = false;
    build_pack(bo);
    const auto pack = ModelSource::open(dir);
    const uint64_t experts = pack->pack()->layout().expert_count();
    const uint64_t slot = pack->pack()->layout().max_stride;
    s.cache_bytes = experts * slot;
    out["engine"]["pack_all_cached"] = bench_engine(pack, s, prefill, decode);
    s.cache_bytes = std::max<uint64_t>(experts / 4, pack->config().n_expert_used) * slot;
    out["engine"]["pack_25pct"] = bench_engine(pack, s, prefill, decode);
    out["engine"]["pack_25pct_tiled_experts"] =
        bench_setting(pack, s, prefill, decode, set_tiled_experts, "tiled_experts");
    // Next-layer prefetch side by side at 25%: runs alternate off / on, three of each, medians.
    out["engine"]["pack_25pct_prefetch"] =
        bench_setting(pack, s, prefill, decode, set_prefetch_experts, "prefetch_experts");
    std::filesystem::remove_all(dir);
    std::printf("%s\n", out.dump(2).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cuda_backend: %s\n", e.what());
    return 1;
  }
  return 0;
}
