# Shared by the one-call device scripts (source it after tests/gpu/pass_build_and_test.sh, which sets
# out, gpu_tests and status).
# run_filtered BINARY FILTER: one gpu test binary's filtered tests into $out/first.log; status 1 on failure.
run_filtered() {
  ./build-gpu/tests/gpu/"$1" --gtest_filter="$2" >> "$out/first.log" 2>&1 || { status=1; echo "== $1 FAILED"; }
}
# run_ctest LIMIT_S: ctest of $gpu_tests within LIMIT_S seconds ($out/ctest.log, ctest.xml, LastTest.log),
# summarised; status 1 on a failure or the limit.
run_ctest() {
  [ "$1" -gt 0 ] || { echo "== no time left for ctest"; status=1; return; }  # (timeout 0: no limit)
  [ "${prebuilt:-0}" = 0 ] || { echo "== prebuilt binaries: no ctest"; status=1; return; }
  timeout "$1" ctest --test-dir build-gpu --output-on-failure -R "^(${gpu_tests// /|})$" \
    --output-junit "$out/ctest.xml" > "$out/ctest.log" 2>&1 || status=1
  tail -8 "$out/ctest.log"
  grep -hE "^\[  (PASSED|FAILED|SKIPPED) " build-gpu/Testing/Temporary/LastTest.log | sort | uniq -c | head -20
  grep -E "^\[  FAILED  \]" "$out/ctest.log" | head -20
  cp build-gpu/Testing/Temporary/LastTest.log "$out/LastTest.log"
}
# run_bench LIMIT_S NAME ARGS...: bench_cuda_backend ARGS within LIMIT_S seconds into $out/NAME.json
# (stderr, with its parts as they complete, $out/NAME.txt), the parts summarised.
run_bench() {
  local limit=$1 name=$2
  shift 2
  [ "$limit" -gt 0 ] || { echo "== no time left for the benchmark"; return; }
  timeout "$limit" ./build-gpu/tests/gpu/bench_cuda_backend "$@" > "$out/$name.json" 2> "$out/$name.txt" ||
    echo "== bench rc=$?"
  python3 tests/gpu/summarize_partials.py "$out/$name.txt"
}
# finish_call NAME ARGS...: the end of a one-call script: ctest of $gpu_tests with all of
# $budget - $SECONDS but the last 60 s, then bench_cuda_backend ARGS into $out/NAME.json with what is left
# (if more than 45 s), and exit with $status.
finish_call() {
  local name=$1
  shift
  run_ctest $((budget - SECONDS - 60))
  echo "== ctest done at ${SECONDS} s (status $status)"
  local left=$((budget - SECONDS - 10))
  [ "$left" -gt 45 ] && run_bench "$left" "$name" "$@"
  echo "== done at ${SECONDS} s (status $status)"
  exit "$status"
}
