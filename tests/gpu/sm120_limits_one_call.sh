#!/usr/bin/env bash
# One GPU-machine call (fifty-sixth session): the suite under sm_120's per-SM limits (MOEPACK_GPU_LIMITS=sm_120,
# gpu/sm_limits.h) on the sm_90 card at hand, and without them. Within ~MOEPACK_CALL_BUDGET_S (default 560 s):
#   1. gpu_ops_test prebuilt (MOEPACK_PREBUILT=1, tests/gpu/prebuild_for_device.sh) or built in build-gpu as
#      pass_build_and_test.sh builds it, under a timeout of the budget less 130 s (MOEPACK_OPS=0: the engine
#      binaries instead);
#   2. in the background, the engine test binaries (MOEPACK_ENGINE_TESTS, set and empty: none; default
#      gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test) in build-gpu (no prebuilt binaries: the
#      libraries built in step 1) or build-eng (prebuilt), fixtures from .device-carry/shared
#      (tests/gpu/prepare_carry.sh; a fixture test whose files did not travel skips) and the demo model (in
#      the tree), within the budget less 40 s;
#   3. all of gpu_ops_test under the limits ($OUT/ops-sm120.log), then without them ($OUT/ops.log) unless
#      MOEPACK_OPS_PLAIN=0 (MOEPACK_OPS=0: neither), each within the time left less 60 s;
#   4. each engine binary under the limits, with the time left ($OUT/<binary>-sm120.log); MOEPACK_FILTER_<binary>
#      set: only its tests that match that gtest filter (e.g. MOEPACK_FILTER_gpu_cuda_backend_test='*qwen3moe*'
#      where the demo model was moved aside to make room for a fixture, fifty-eighth session).
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-560}"
engine="${MOEPACK_ENGINE_TESTS-gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test}"
# Without prebuilt binaries, one build directory (build-gpu): gpu_ops_test first (its libraries are the
# engine binaries' too), then the engine binaries beside its runs; with MOEPACK_OPS=0 the engine binaries
# alone. With prebuilt binaries, the engine binaries in build-eng beside the runs. Every build under a
# timeout that leaves the runs their time (ninja itself under it: a `cmake --build` killed leaves its ninja
# building, fifty-seventh session).
engine_dir=build-eng
export MOEPACK_BUILD_TARGETS="gpu_ops_test"
background=1
if [ "${MOEPACK_PREBUILT:-0}" != 1 ]; then
  engine_dir=build-gpu
  if [ "${MOEPACK_OPS:-1}" = 0 ]; then
    [ -n "$engine" ] || { echo "== nothing to run (MOEPACK_OPS=0, MOEPACK_ENGINE_TESTS empty)"; exit 1; }
    export MOEPACK_BUILD_TARGETS="$engine"
    background=0
  fi
  # (the runs after it: gpu_ops_test twice ~110 s, the engine binaries ~15 s)
  export MOEPACK_BUILD_TIMEOUT_S=$((budget - 130))
fi
MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
echo "== $MOEPACK_BUILD_TARGETS ready at ${SECONDS} s (prebuilt $prebuilt)"
# (the engine binaries under the limits take ~15 s: their build may run until 40 s before the budget's end)
build_limit=$((budget - SECONDS - 40))
[ "$build_limit" -gt 0 ] || build_limit=1
if [ -n "$engine" ] && [ "$background" = 1 ]; then
  # shellcheck disable=SC2086 # the list splits into targets
  (
    if [ "$engine_dir" = build-eng ]; then
      cmake -S . -B build-eng -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEPACK_CUDA=ON -DMOEPACK_GUI=OFF \
        -DMOEPACK_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DMOEPACK_SHARED_DIR="$PWD/.device-carry/shared" ||
        exit 1
    fi
    timeout "$build_limit" ninja -C "$engine_dir" -j "$(nproc)" $engine
  ) > "$out/build-eng.log" 2>&1 &
  build_pid=$!
fi
status=0
# run_limited NAME LOG CMD...: CMD within the time left less 60 s into $OUT/LOG; status 1 on a failure, a
# timeout or no time left.
run_limited() {
  local name=$1 log=$2 left=$((budget - SECONDS - 60))
  shift 2
  [ "$left" -gt 0 ] || { echo "== no time left for $name"; status=1; return; }
  timeout -k 10 "$left" "$@" > "$out/$log" 2>&1 || { status=1; echo "== $name FAILED (or timed out)"; }
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]| under sm_120" "$out/$log" | head -30
  echo "== $name done at ${SECONDS} s"
}
if [ "${MOEPACK_OPS:-1}" != 0 ]; then
  MOEPACK_GPU_LIMITS=sm_120 run_limited "gpu_ops_test under sm_120's limits" ops-sm120.log \
    ./build-gpu/tests/gpu/gpu_ops_test
  [ "${MOEPACK_OPS_PLAIN:-1}" = 0 ] || run_limited "gpu_ops_test" ops.log ./build-gpu/tests/gpu/gpu_ops_test
fi
if [ -z "$engine" ]; then
  echo "== no engine tests (MOEPACK_ENGINE_TESTS empty)"
elif [ "$background" = 0 ] || wait "$build_pid"; then
  echo "== engine tests built at ${SECONDS} s"
  for t in $engine; do
    left=$((budget - SECONDS - 10))
    [ "$left" -gt 20 ] || { echo "== no time left for $t"; status=1; break; }
    filter_var="MOEPACK_FILTER_$t"
    filter=()
    [ -z "${!filter_var-}" ] || filter=("--gtest_filter=${!filter_var}")
    MOEPACK_GPU_LIMITS=sm_120 timeout -k 10 "$left" ./"$engine_dir"/tests/gpu/"$t" "${filter[@]}" > "$out/$t-sm120.log" 2>&1 ||
      { status=1; echo "== $t under sm_120's limits FAILED (or timed out)"; }
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$out/$t-sm120.log" | head -20
    echo "== $t done at ${SECONDS} s"
  done
else
  status=1
  echo "== engine build failed or timed out at ${SECONDS} s (build-eng.log)"
  grep -E "error" "$out/build-eng.log" | head -20
fi
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
