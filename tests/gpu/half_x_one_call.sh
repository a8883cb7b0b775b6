#!/usr/bin/env bash
# One GPU-machine call (forty-seventh session): the tensor cores' prefill staging x half a unit at a
# time (set_gemv_prefill_mma_half_x) and the host copy of the group sizes, tested and measured. Carry
# set l (llama-moe Q4_K_M and kimi-linear Q2_K; tests/gpu/prepare_carry.sh). Within
# ~MOEPACK_CALL_BUDGET_S (default 520 s):
#   1. builds the four gpu test binaries, bench_cuda_backend and moepack;
#   2. gpu_ops_test's *HalfX*, *HostSizes*, *PrefillTensorCores*, *PrefillColumns* and *Batching*, and
#      gpu_cuda_backend_test's *HostSizes* (the engine), first ($OUT/first.log);
#   3. ctest of the four binaries (the engine tests run the half-unit staging by default; $OUT/ctest.log),
#      with all but the last 60 s;
#   4. bench_cuda_backend --prefill-host-sizes-only on the demo model with the time left
#      ($OUT/bench-half-x.json; each part also to stderr as it completes), the half-unit part summarised.
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-520}"
MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
echo "== built at ${SECONDS} s"
source tests/gpu/one_call_lib.sh
run_filtered gpu_ops_test '*HalfX*:*HostSizes*:*PrefillTensorCores*:*PrefillColumns*:*Batching*'
run_filtered gpu_cuda_backend_test '*HostSizes*'
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" "$out/first.log" | head -20
echo "== first tests done at ${SECONDS} s (status $status)"
# The tests first: ctest may take what is left but 60 s (the forty-seventh session's call gave it
# budget - 150 s after a 320 s build and stopped it after gpu_ops_test).
finish_call bench-half-x --prefill-host-sizes-only --prefill 900 --decode 32
