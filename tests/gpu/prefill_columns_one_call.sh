#!/usr/bin/env bash
# One GPU-machine call (forty-sixth session): decode columns at prefill (gpu/prefill_columns.h) and
# the dense launches' tensor-core minimum, tested and measured. Carry set e (deepseek4 and kimi-linear
# Q2_K; set o, which adds deepseek2's, is a MiB over the limit beside the tree). Within a ~MOEPACK_CALL_BUDGET_S (default 520 s):
#   1. builds the four gpu test binaries and bench_cuda_backend (pass_build_and_test.sh, tests skipped);
#   2. the columns' and the minimum rule's tests first ($OUT/first.log): gpu_ops_test's
#      *PrefillColumns*, *DefaultMinimumPerLaunch*, *PrefillTensorCores* and *Batching*, and the
#      engine tests *PrefillColumns* / *PrefillTensorCores* of the three fixture binaries;
#   3. bench_cuda_backend --prefill-columns-only on the demo model ($OUT/bench-columns.json; each part
#      also to stderr as it completes), summarised (columns rule / tensor cores against off);
#   4. with the time left, the whole of gpu_ops_test and gpu_cuda_backend_test ($OUT/ctest.log).
# MOEPACK_OPS_FILTER, MOEPACK_ENGINE_FILTER, MOEPACK_BENCH_MODE and MOEPACK_BENCH_NAME replace step 2's
# gpu_ops_test and engine filters, step 3's mode and its files' name (tests/gpu/host_sizes_one_call.sh).
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-520}"
MOEPACK_SKIP_TESTS=1 MOEPACK_GPU_TESTS="gpu_ops_test gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test" \
  source tests/gpu/pass_build_and_test.sh
cmake --build build-gpu -j "$(nproc)" --target bench_cuda_backend >> "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | tail -20; exit 1; }
echo "== built at ${SECONDS} s"
status=0
source tests/gpu/one_call_lib.sh
run_filtered gpu_ops_test "${MOEPACK_OPS_FILTER:-*PrefillColumns*:*DefaultMinimumPerLaunch*:*PrefillTensorCores*:*Batching*}"
for b in gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test; do
  run_filtered "$b" "${MOEPACK_ENGINE_FILTER:-*PrefillColumns*:*PrefillTensorCores*}"
done
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" "$out/first.log" | head -30
echo "== first tests done at ${SECONDS} s (status $status)"
left=$((budget - SECONDS - 120))
[ "$left" -gt 30 ] && run_bench "$left" "${MOEPACK_BENCH_NAME:-bench-columns}" "${MOEPACK_BENCH_MODE:---prefill-columns-only}" \
  --prefill 900 --decode 32
gpu_tests="gpu_ops_test gpu_cuda_backend_test"
left=$((budget - SECONDS))
[ "$left" -gt 60 ] && run_ctest "$left"
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
