#!/usr/bin/env bash
# One GPU-machine call (forty-seventh session): the host's copy of the group sizes
# (GemvBatch::grp_off_host: launches skip empty size ranges, the decode columns' compact layout),
# tested and measured. Carry any set (tests/gpu/prepare_carry.sh; g, qwen3moe MXFP4, ran in that
# session). Within ~MOEPACK_CALL_BUDGET_S (default 520 s):
#   1. builds the four gpu test binaries and bench_cuda_backend (pass_build_and_test.sh, tests skipped);
#   2. the host sizes' and the columns' tests first ($OUT/first.log): gpu_ops_test's *HostSizes*,
#      *PrefillColumns* and *Batching*, and the engine tests *PrefillColumns* / *PrefillTensorCores* of
#      the three fixture binaries (the engine passes its host copy);
#   3. bench_cuda_backend --prefill-host-sizes-only on the demo model ($OUT/bench-host.json; each part
#      also to stderr as it completes), summarised (host copy read against ignored);
#   4. with the time left, the whole of gpu_ops_test and gpu_cuda_backend_test ($OUT/full.log).
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-520}"
MOEPACK_SKIP_TESTS=1 MOEPACK_GPU_TESTS="gpu_ops_test gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test" \
  source tests/gpu/pass_build_and_test.sh
cmake --build build-gpu -j "$(nproc)" --target bench_cuda_backend >> "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | tail -20; exit 1; }
echo "== built at ${SECONDS} s"
status=0
run_filtered() {  # BINARY FILTER
  ./build-gpu/tests/gpu/"$1" --gtest_filter="$2" >> "$out/first.log" 2>&1 || { status=1; echo "== $1 FAILED"; }
}
run_filtered gpu_ops_test '*HostSizes*:*PrefillColumns*:*Batching*'
for b in gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test; do
  run_filtered "$b" '*PrefillColumns*:*PrefillTensorCores*'
done
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" "$out/first.log" | head -30
echo "== first tests done at ${SECONDS} s (status $status)"
left=$((budget - SECONDS - 120))
if [ "$left" -gt 30 ]; then
  timeout "$left" ./build-gpu/tests/gpu/bench_cuda_backend --prefill-host-sizes-only --prefill 900 --decode 32 \
    > "$out/bench-host.json" 2> "$out/bench-host.txt" || echo "== bench rc=$?"
  python3 - "$out/bench-host.txt" <<'PY'
import collections, json, sys
for line in open(sys.argv[1]):
    if not line.startswith("== partial "):
        continue
    key, _, body = line[len("== partial "):].partition(": ")
    part = json.loads(body)
    if isinstance(part, dict):  # engine: model -> rounds
        print(key, json.dumps(part)[:600])
        continue
    sw = "host_sizes"
    acc = collections.defaultdict(lambda: {True: [], False: []})
    slots = {}
    for r in part:
        k = (r["type"], r["experts_per_launch"], r["rows"], r["cols"], r.get("tiled", False),
             str(r.get("group_pairs"))[:40], )
        acc[k][r[sw]].append(r["us_per_launch"])
        slots[k, r[sw]] = r["column_slots_total"]
    for k, v in acc.items():
        off, on = sum(v[False]) / len(v[False]), sum(v[True]) / len(v[True])
        print(key, *k, f"off {off:7.1f} on {on:7.1f} x{off / on:.2f} slots {slots[k, False]} -> {slots[k, True]}")
PY
fi
left=$((budget - SECONDS))
if [ "$left" -gt 60 ]; then
  for b in gpu_ops_test gpu_cuda_backend_test; do
    timeout $((left / 2)) ./build-gpu/tests/gpu/"$b" >> "$out/full.log" 2>&1 || { status=1; echo "== $b FAILED or timed out"; }
    left=$((budget - SECONDS))
  done
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" "$out/full.log" | head -30
fi
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
