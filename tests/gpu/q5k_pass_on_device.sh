#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (tests/gpu/prepare_carry.sh n: llama-moe-tiny Q4_K_M
# holds Q5_K attention outputs, deepseek2 Q2_K Q3_K downs for the tiled Q3_K engine test; the demo
# model, whose Q6_K downs the tiled Q6_K engine test takes, travels with the tree; set l also
# works, without the Q3_K engine test): one call of Q5_K's tensor-core pass (docs/cuda-backend.md, twenty-eighth pass). Builds
# for sm_90 only; runs gpu_ops_test (every kernel and type) and the engine tests of the carried
# fixtures, then `bench_cuda_backend --q5k-only` ($OUT/bench-q5k.json: Q5_K's decode launches on
# the tensor cores and in the F32 kernels side by side, the expert FFN all Q5_K and Q5_K gate /
# up with a Q6_K down, both ways; Q5_K's tiled layout (twenty-ninth pass) beside the GGUF
# layout's: plain launches, gate + up with the SwiGLU epilogue, the expert FFN; the engine on the
# demo model and every carried single-file fixture with Q3_K's, Q5_K's and Q6_K's tensor cores off
# and on).
# MOEPACK_SKIP_TESTS=1 leaves the tests out, MOEPACK_SKIP_BENCH=1 the benchmark
# (tests/gpu/k_pass_on_device.sh).
exec bash tests/gpu/k_pass_on_device.sh q5k
