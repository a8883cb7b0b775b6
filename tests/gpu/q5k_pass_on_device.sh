#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (tests/gpu/prepare_carry.sh l: llama-moe-tiny Q4_K_M
# holds Q5_K attention outputs, kimi-linear Q2_K Q3_K rows; the demo model travels with the
# tree): one call of Q5_K's tensor-core pass (docs/cuda-backend.md, twenty-eighth pass). Builds
# for sm_90 only; runs gpu_ops_test (every kernel and type) and the engine tests of the carried
# fixtures, then `bench_cuda_backend --q5k-only` ($OUT/bench-q5k.json: Q5_K's decode launches on
# the tensor cores and in the F32 kernels side by side, the expert FFN all Q5_K and Q5_K gate /
# up with a Q6_K down, both ways; the engine on the demo model and every carried single-file
# fixture with Q3_K's, Q5_K's and Q6_K's tensor cores off and on).
# MOEPACK_SKIP_TESTS=1 leaves the tests out, MOEPACK_SKIP_BENCH=1 the benchmark.
set -u
out="${OUT:?OUT must be set}"
source tests/gpu/pass_build_and_test.sh  # build, the gpu tests; sets status
[ "${MOEPACK_SKIP_BENCH:-0}" = 1 ] && exit "$status"
graph=()  # the carried single-file GGUFs, for the engine side by side
for f in $(find .device-carry/shared/fixtures -name '*.gguf' ! -name '*-of-*' | sort); do graph+=(--graph-model "$f"); done
timeout 330 ./build-gpu/tests/gpu/bench_cuda_backend --q5k-only "${graph[@]}" > "$out/bench-q5k.json" \
  2> "$out/bench-q5k.txt" || { echo "bench rc=$?"; tail -5 "$out/bench-q5k.txt"; status=1; }
python3 tests/gpu/k_decode_summary.py "$out/bench-q5k.json" q5k || true
exit "$status"
