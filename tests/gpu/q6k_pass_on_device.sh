#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (tests/gpu/prepare_carry.sh k: kimi-linear Q4_K_M holds
# Q6_K matrices of rows of 256 (its expert and shared-expert downs, output), deepseek4 Q2_K Q3_K
# downs of 256 and a Q6_K output, all of an odd number of super-blocks: the phased rings end to
# end; the demo model's Q6_K downs travel with the tree): one call of Q6_K's tensor-core pass
# (docs/cuda-backend.md, twenty-seventh pass). Builds for sm_90 only; runs gpu_ops_test (every
# kernel and type) and the engine tests of the carried fixtures, then `bench_cuda_backend
# --q6k-only` ($OUT/bench-q6k.json: Q6_K's decode launches on the tensor cores and in the F32
# kernels side by side, the expert FFN all Q6_K and Q4_K gate / up with a Q6_K down, both ways;
# Q6_K's tiled layout (twenty-ninth pass, switched on for it) beside the GGUF layout's: plain
# launches, gate + up with the SwiGLU epilogue, the expert FFN, and Q4_K gate + up tiled with the
# Q6_K down both ways; the engine on the demo model and every carried single-file fixture with
# Q3_K's and Q6_K's tensor cores off and on).
# MOEPACK_SKIP_TESTS=1 leaves the tests out, MOEPACK_SKIP_BENCH=1 the benchmark
# (tests/gpu/k_pass_on_device.sh).
exec bash tests/gpu/k_pass_on_device.sh q6k
