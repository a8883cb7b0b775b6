#!/usr/bin/env bash
# One GPU-machine call (forty-fourth session, when device time was short): the prefill on the
# tensor cores' tests and, in the time left of a ~585 s budget, its benchmark on the demo model.
#   1. pass_build_and_test.sh with gpu_ops_test and gpu_cuda_backend_test only (the kernel tests
#      and the carried fixtures' engine tests, among them
#      CudaFixture.PrefillTensorCoresMatchCpuAndReferenceAndPackMatchesGguf);
#   2. when at least 60 s remain: bench_cuda_backend --prefill-mma-only on the demo model alone
#      ($OUT/bench-prefill-mma.json), summarised as prefill_mma_pass_on_device.sh does.
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-585}"
MOEPACK_GPU_TESTS="gpu_ops_test gpu_cuda_backend_test" source tests/gpu/pass_build_and_test.sh  # sets status
echo "== tests done at ${SECONDS} s (status $status)"
left=$((budget - SECONDS))
[ "$left" -lt 60 ] && { echo "== no time left for the benchmark ($left s)"; exit "$status"; }
cmake --build build-gpu -j "$(nproc)" --target bench_cuda_backend >> "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | tail -20; exit 1; }
left=$((budget - SECONDS - 10))
echo "== benchmark with ${left} s left"
timeout "$left" ./build-gpu/tests/gpu/bench_cuda_backend --prefill-mma-only --prefill 900 --decode 32 \
  > "$out/bench-prefill-mma.json" 2> "$out/bench-prefill-mma.txt" ||
  { echo "bench rc=$?"; grep -o "^== partial [a-z0-9_]*" "$out/bench-prefill-mma.txt"; tail -5 "$out/bench-prefill-mma.txt"; exit "$status"; }
sed -n '/^python3 - "\$out\/bench-prefill-mma.json"/,/^PY$/p' tests/gpu/prefill_mma_pass_on_device.sh |
  sed '1d;$d' > "$out/summary.py"
python3 "$out/summary.py" "$out/bench-prefill-mma.json"
exit "$status"
