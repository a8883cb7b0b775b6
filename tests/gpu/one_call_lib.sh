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
# unpack_prebuilt DIR: the device dependencies on the paths (.device-deps/use-deps.sh, CUDA's libraries), then
# .device-carry/prebuilt.tar.xz (tests/gpu/prebuild_for_device.sh) unpacked into DIR; returns 1, saying so,
# where those binaries are not this tree's (tests/gpu/source_stamp.sh). The prebuilt-only scripts
# (prebuilt_engine_one_call.sh, gemv_graph_one_call.sh) start with it.
unpack_prebuilt() {
  local bin=$1
  source .device-deps/use-deps.sh > /dev/null
  local cuda_lib
  cuda_lib=$(dirname "$(readlink -f "$(command -v nvcc)")")/../lib64
  export LD_LIBRARY_PATH="$cuda_lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  rm -rf "$bin" && mkdir -p "$bin" && tar -C "$bin" -xJf .device-carry/prebuilt.tar.xz || return 1
  source tests/gpu/source_stamp.sh
  if [ "$(cut -d' ' -f2 "$bin/COMMIT")" != "$(source_stamp)" ]; then
    echo "== prebuilt binaries of $(cat "$bin/COMMIT"), sources here $(source_stamp): not this tree's"
    return 1
  fi
}
