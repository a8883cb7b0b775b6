#!/usr/bin/env bash
# The twenty-ninth and thirtieth passes (Q5_K's, Q6_K's and Q3_K's tiled layouts, Q3_K's depth) in
# as few GPU-machine calls as the 600-second limit allows: `bash tests/gpu/tiled_pass_on_device.sh` from the repository root,
# with $OUT set and .device-deps, .device-carry carried (tests/gpu/prepare_carry.sh n). Builds for
# sm_90 (tests/gpu/pass_build_and_test.sh), runs the four gpu test binaries unless
# MOEPACK_SKIP_TESTS=1, then as many of the benches `--q5k-only`, `--q6k-only` and
# `--q3k-only --twin` (MOEPACK_BENCHES, default "q5k q6k q3k") as fit before the deadline,
# MOEPACK_DEADLINE_S seconds after the start (default 570): $OUT/bench-SECTION.json and .txt, and
# each bench's summary (tests/gpu/k_decode_summary.py). MOEPACK_BENCHES="" runs none. Exit status:
# 1 when a test or a bench failed (a bench cut off by the deadline, or a twin not built, counts as
# failed); benches not started for lack of time are listed at the end and leave it 0.
set -u
start=$SECONDS
deadline=${MOEPACK_DEADLINE_S:-570}
case "$deadline" in '' | *[!0-9]*) echo "MOEPACK_DEADLINE_S must be a number of seconds, not $deadline" >&2; exit 2 ;; esac
for sect in ${MOEPACK_BENCHES-q5k q6k q3k}; do
  case "$sect" in q5k | q6k | q3k) ;; *) echo "MOEPACK_BENCHES: q5k, q6k or q3k, not $sect" >&2; exit 2 ;; esac
done
not_started=
out="${OUT:?OUT must be set}"
source tests/gpu/pass_build_and_test.sh  # build, the gpu tests; sets status
echo "== build and tests took $((SECONDS - start)) s"
graph=()  # the carried single-file GGUFs, for the engine side by side
for f in $(find .device-carry/shared/fixtures -name '*.gguf' ! -name '*-of-*' | sort); do graph+=(--graph-model "$f"); done
for sect in ${MOEPACK_BENCHES-q5k q6k q3k}; do
  left=$((deadline - (SECONDS - start)))
  [ "$left" -lt 30 ] && { echo "== $sect: not started, $left s left"; not_started="$not_started $sect"; continue; }
  args=("--$sect-only")
  twin_dir=""
  if [ "$sect" = q3k ]; then  # a 4-layer Kimi-K3 twin, as q3k_pass_on_device.sh
    twin_dir=/tmp/moepack-twin-k3
    rm -rf "$twin_dir"
    if ./build-gpu/app/moepack twin --shape kimi-k3 --layers 4 --experts 128 --seed 1 -o "$twin_dir" \
      > "$out/twin.log" 2>&1; then args+=(--twin "$twin_dir"); else tail -3 "$out/twin.log"; status=1; fi
  else
    args+=(${graph[@]+"${graph[@]}"})
  fi
  left=$((deadline - (SECONDS - start)))
  [ "$left" -lt 1 ] && left=1  # (timeout 0 would mean no limit)
  t0=$SECONDS
  timeout "$left" ./build-gpu/tests/gpu/bench_cuda_backend "${args[@]}" > "$out/bench-$sect.json" \
    2> "$out/bench-$sect.txt"
  rc=$?
  echo "== $sect bench: rc=$rc, $((SECONDS - t0)) s"
  [ "$rc" = 124 ] && echo "== $sect bench cut off by the deadline"
  [ "$rc" != 0 ] && { tail -5 "$out/bench-$sect.txt"; status=1; }
  [ -n "$twin_dir" ] && rm -rf "$twin_dir"
  python3 tests/gpu/k_decode_summary.py "$out/bench-$sect.json" "$sect" || true
done
[ -n "$not_started" ] && echo "== not started for lack of time:$not_started"
exit "$status"
