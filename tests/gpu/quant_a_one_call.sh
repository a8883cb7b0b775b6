#!/usr/bin/env bash
# One GPU-machine call (forty-eighth session): the tensor-core prefill with A made from the quants
# (set_gemv_prefill_quant_a, on by default), tested and measured. Carry set l (llama-moe Q4_K_M and
# kimi-linear Q2_K; tests/gpu/prepare_carry.sh). Within ~MOEPACK_CALL_BUDGET_S (default 540 s):
#   1. builds the four gpu test binaries, bench_cuda_backend and moepack;
#   2. gpu_ops_test's *QuantA*, *PrefillTensorCores*, *HalfX*, *Batching* and the six types' parity tests
#      first ($OUT/first.log);
#   3. ctest of the four binaries (every engine test takes the new path by default; $OUT/ctest.log), with
#      all but the last 60 s;
#   4. bench_cuda_backend --prefill-quant-a-only on the demo model with the time left
#      ($OUT/bench-quant-a.json; each part also to stderr as it completes).
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-540}"
MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
echo "== built at ${SECONDS} s"
source tests/gpu/one_call_lib.sh
run_filtered gpu_ops_test '*QuantA*:*PrefillTensorCores*:*HalfX*:*Batching*:Types/TypeParity.*/q4_K:Types/TypeParity.*/q5_K:Types/TypeParity.*/q2_K:Types/TypeParity.*/q3_K:Types/TypeParity.*/q6_K:Types/TypeParity.*/mxfp4'
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|largest" "$out/first.log" | head -30
echo "== first tests done at ${SECONDS} s (status $status)"
finish_call bench-quant-a --prefill-quant-a-only --prefill 900 --decode 32
