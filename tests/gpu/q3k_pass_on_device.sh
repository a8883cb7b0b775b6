#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (tests/gpu/prepare_carry.sh m: deepseek2 Q2_K and
# kimi-linear Q2_K hold Q3_K matrices of rows of 512, which decode on the tensor cores): one call
# of Q3_K's tensor-core pass (docs/cuda-backend.md, twenty-sixth pass). Builds for sm_90 only;
# runs gpu_ops_test (every kernel and type) and the engine tests of the carried fixtures, then
# `bench_cuda_backend --q3k-only --twin` ($OUT/bench-q3k.json: Q3_K's decode launches on the
# tensor cores and in the F32 kernels side by side, and bench-twin on a Kimi-K3 twin of 4 layers
# x 128 experts, every expert cached, both ways: Q2_K gate / up, Q3_K down; and Q3_K's tiled
# layout (twenty-ninth pass, switched on for it) beside the GGUF layout's: plain launches, gate +
# up with the SwiGLU epilogue, the expert FFN).
# MOEPACK_SKIP_TESTS=1 leaves the tests out, MOEPACK_SKIP_BENCH=1 the benchmark, MOEPACK_SKIP_TWIN=1
# the twin.
set -u
out="${OUT:?OUT must be set}"
source tests/gpu/pass_build_and_test.sh  # build, the gpu tests; sets status
[ "${MOEPACK_SKIP_BENCH:-0}" = 1 ] && exit "$status"
work=/tmp/moepack-twin-k3
rm -rf "$work"
twin=()
if [ "${MOEPACK_SKIP_TWIN:-0}" != 1 ]; then
  ./build-gpu/app/moepack twin --shape kimi-k3 --layers 4 --experts 128 --seed 1 -o "$work" > "$out/twin.log" 2>&1 ||
    { tail -3 "$out/twin.log"; exit 1; }
  twin=(--twin "$work")
fi
timeout 300 ./build-gpu/tests/gpu/bench_cuda_backend --q3k-only "${twin[@]}" > "$out/bench-q3k.json" \
  2> "$out/bench-q3k.txt" || { echo "bench rc=$?"; tail -5 "$out/bench-q3k.txt"; status=1; }
rm -rf "$work"
python3 tests/gpu/k_decode_summary.py "$out/bench-q3k.json" q3k || true
exit "$status"
