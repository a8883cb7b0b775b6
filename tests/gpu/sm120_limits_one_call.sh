#!/usr/bin/env bash
# One GPU-machine call (fifty-sixth session): the suite under sm_120's per-SM limits (MOEPACK_GPU_LIMITS=sm_120,
# gpu/sm_limits.h) on the sm_90 card at hand, and without them. Within ~MOEPACK_CALL_BUDGET_S (default 560 s):
#   1. gpu_ops_test and bench_cuda_backend prebuilt (MOEPACK_PREBUILT=1, tests/gpu/prebuild_for_device.sh) or
#      built as pass_build_and_test.sh builds them;
#   2. in the background, the engine test binaries (MOEPACK_ENGINE_TESTS, default gpu_cuda_backend_test
#      gpu_deepseek4_test gpu_kimi_linear_test) in build-eng (kept on a warm machine: a second call only
#      runs them), fixtures from .device-carry/shared (tests/gpu/prepare_carry.sh) and the demo model (in the tree);
#   3. all of gpu_ops_test under the limits ($OUT/ops-sm120.log), then without them ($OUT/ops.log) unless
#      MOEPACK_OPS_PLAIN=0 (MOEPACK_OPS=0: neither);
#   4. each engine binary under the limits, with the time left ($OUT/<binary>-sm120.log).
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-560}"
export MOEPACK_BUILD_TARGETS="gpu_ops_test bench_cuda_backend"
MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
echo "== gpu_ops_test ready at ${SECONDS} s (prebuilt $prebuilt)"
engine="${MOEPACK_ENGINE_TESTS:-gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test}"
(
  cmake -S . -B build-eng -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEPACK_CUDA=ON -DMOEPACK_GUI=OFF \
    -DMOEPACK_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DMOEPACK_SHARED_DIR="$PWD/.device-carry/shared" &&
    # shellcheck disable=SC2086 # the list splits into targets
    cmake --build build-eng -j "$(nproc)" --target $engine
) > "$out/build-eng.log" 2>&1 &
build_pid=$!
status=0
if [ "${MOEPACK_OPS:-1}" != 0 ]; then
  MOEPACK_GPU_LIMITS=sm_120 timeout $((budget - SECONDS - 60)) ./build-gpu/tests/gpu/gpu_ops_test \
    > "$out/ops-sm120.log" 2>&1 || { status=1; echo "== gpu_ops_test under sm_120's limits FAILED"; }
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]| under sm_120" "$out/ops-sm120.log" | head -30
  echo "== sm_120 limits: gpu_ops_test done at ${SECONDS} s"
  if [ "${MOEPACK_OPS_PLAIN:-1}" != 0 ]; then
    timeout $((budget - SECONDS - 60)) ./build-gpu/tests/gpu/gpu_ops_test > "$out/ops.log" 2>&1 ||
      { status=1; echo "== gpu_ops_test FAILED"; }
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$out/ops.log" | head -30
    echo "== device limits: gpu_ops_test done at ${SECONDS} s"
  fi
fi
wait "$build_pid" || { status=1; echo "== engine build failed"; grep -E "error" "$out/build-eng.log" | head -20; }
echo "== engine tests built at ${SECONDS} s"
for t in $engine; do
  left=$((budget - SECONDS - 10))
  [ "$left" -gt 20 ] || { echo "== no time left for $t"; status=1; break; }
  MOEPACK_GPU_LIMITS=sm_120 timeout "$left" ./build-eng/tests/gpu/"$t" > "$out/$t-sm120.log" 2>&1 ||
    { status=1; echo "== $t under sm_120's limits FAILED (or timed out)"; }
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$out/$t-sm120.log" | head -20
  echo "== $t done at ${SECONDS} s"
done
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
