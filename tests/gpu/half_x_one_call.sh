#!/usr/bin/env bash
# One GPU-machine call (forty-seventh session): the tensor cores' prefill staging x half a unit at a
# time (set_gemv_prefill_mma_half_x) and the host copy of the group sizes, tested and measured. Carry
# set l (llama-moe Q4_K_M and kimi-linear Q2_K; tests/gpu/prepare_carry.sh). Within
# ~MOEPACK_CALL_BUDGET_S (default 520 s):
#   1. builds the four gpu test binaries, bench_cuda_backend and moepack;
#   2. gpu_ops_test's *HalfX*, *HostSizes*, *PrefillTensorCores*, *PrefillColumns* and *Batching* first
#      ($OUT/first.log);
#   3. ctest of the four binaries (the engine tests run the half-unit staging by default; $OUT/ctest.log),
#      with all but the last 60 s;
#   4. bench_cuda_backend --prefill-host-sizes-only on the demo model with the time left
#      ($OUT/bench-half-x.json; each part also to stderr as it completes), the half-unit part summarised.
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-520}"
MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
echo "== built at ${SECONDS} s"
./build-gpu/tests/gpu/gpu_ops_test --gtest_filter='*HalfX*:*HostSizes*:*PrefillTensorCores*:*PrefillColumns*:*Batching*' \
  > "$out/first.log" 2>&1 || { status=1; echo "== gpu_ops_test (filtered) FAILED"; }
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" "$out/first.log" | head -20
echo "== first tests done at ${SECONDS} s (status $status)"
# The tests first: ctest may take what is left but 60 s (the forty-seventh session's call gave it
# budget - 150 s after a 320 s build and stopped it after gpu_ops_test).
timeout $((budget - SECONDS - 60)) ctest --test-dir build-gpu --output-on-failure -R "^(${gpu_tests// /|})$" \
  --output-junit "$out/ctest.xml" > "$out/ctest.log" 2>&1 || status=1
tail -6 "$out/ctest.log"
grep -hE "^\[  (PASSED|FAILED) " build-gpu/Testing/Temporary/LastTest.log | sort | uniq -c | head -20
grep -E "^\[  FAILED  \]" "$out/ctest.log" | head -20
cp build-gpu/Testing/Temporary/LastTest.log "$out/LastTest.log"
echo "== ctest done at ${SECONDS} s (status $status)"
left=$((budget - SECONDS - 10))
if [ "$left" -gt 45 ]; then
  timeout "$left" ./build-gpu/tests/gpu/bench_cuda_backend --prefill-host-sizes-only --prefill 900 --decode 32 \
    > "$out/bench-half-x.json" 2> "$out/bench-half-x.txt" || echo "== bench rc=$?"
  python3 - "$out/bench-half-x.txt" <<'PY'
import collections, json, sys
for line in open(sys.argv[1]):
    if not line.startswith("== partial "):
        continue
    key, _, body = line[len("== partial "):].partition(": ")
    part = json.loads(body)
    if isinstance(part, dict):
        for m, v in part.items():
            print(key, m, {k: round(x, 3) for k, x in v.items() if k != "rounds"})
        continue
    sw = "half_x" if "half_x" in part[0] else "host_sizes"
    acc = collections.defaultdict(lambda: {True: [], False: []})
    for r in part:
        k = (r["type"], r["experts_per_launch"], r["rows"], r["cols"], r.get("tiled", False),
             str(r.get("pairs_per_expert", r.get("group_pairs")))[:24])
        acc[k][r[sw]].append(r["us_per_launch"])
    for k, v in acc.items():
        off, on = sum(v[False]) / len(v[False]), sum(v[True]) / len(v[True])
        print(key, *k, f"off {off:7.1f} on {on:7.1f} x{off / on:.2f}")
PY
fi
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
