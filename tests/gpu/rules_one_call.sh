#!/usr/bin/env bash
# One GPU-machine call (forty-ninth session): the last session's unrun changes, the engine tests of one
# carry set (tests/gpu/prepare_carry.sh; all take the prefill with A from the quants by default) and the
# prefill rules measured against that prefill. Within ~MOEPACK_CALL_BUDGET_S (default 540 s):
#   1. builds the four gpu test binaries, bench_cuda_backend and moepack (nothing to do on a machine still
#      warm from such a call; MOEPACK_BUILD_MIN=1: gpu_ops_test and bench_cuda_backend only, or
#      MOEPACK_BUILD_TARGETS; MOEPACK_PREBUILT=1: those two from tests/gpu/prebuild_for_device.sh, no build);
#   2. unless MOEPACK_FIRST=0, gpu_ops_test's *KSplit*, *QuantA*, *PrefillTensorCores*, *PrefillColumns* and the six
#      prefill types' parity tests first ($OUT/first.log);
#   3. ctest of MOEPACK_CTEST_BINARIES (default the three engine binaries) within MOEPACK_CTEST_S (default
#      240 s; $OUT/ctest.log);
#   4. bench_cuda_backend MOEPACK_BENCH_ARGS (default --prefill-rules-only) with the time left
#      ($OUT/bench-rules.json; each part also to stderr as it completes), summarised.
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-540}"
# MOEPACK_BUILD_MIN=1: gpu_ops_test and the benchmark only (a short call), unless MOEPACK_BUILD_TARGETS
[ "${MOEPACK_BUILD_MIN:-0}" = 1 ] && export MOEPACK_BUILD_TARGETS="${MOEPACK_BUILD_TARGETS:-gpu_ops_test bench_cuda_backend}"
MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
echo "== built at ${SECONDS} s"
source tests/gpu/one_call_lib.sh
if [ "${MOEPACK_FIRST:-1}" != 0 ]; then
  run_filtered gpu_ops_test "${MOEPACK_FIRST_FILTER:-*KSplit*:*QuantA*:*PrefillTensorCores*:*PrefillColumns*:Types/TypeParity.*/q4_K:Types/TypeParity.*/q5_K:Types/TypeParity.*/q2_K:Types/TypeParity.*/q3_K:Types/TypeParity.*/q6_K:Types/TypeParity.*/mxfp4}"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|largest" "$out/first.log" | head -30
  echo "== first tests done at ${SECONDS} s (status $status)"
fi
gpu_tests="${MOEPACK_CTEST_BINARIES:-gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test}"
run_ctest "${MOEPACK_CTEST_S:-240}"
echo "== ctest done at ${SECONDS} s (status $status)"
# shellcheck disable=SC2086 # the arguments split
run_bench $((budget - SECONDS - 10)) bench-rules ${MOEPACK_BENCH_ARGS:---prefill-rules-only}
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
