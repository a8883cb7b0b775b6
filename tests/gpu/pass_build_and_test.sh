# Sourced (not run) by the passes' device scripts (f32_pass_on_device.sh, q3k_pass_on_device.sh,
# k_pass_on_device.sh for q5k_pass_on_device.sh and q6k_pass_on_device.sh),
# from the repository root on the GPU machine with $out set: builds build-gpu for sm_90 only (the
# gpu tests, bench_cuda_backend, moepack) and, unless MOEPACK_SKIP_TESTS=1, runs the four gpu test
# binaries (ctest.log, ctest.xml and LastTest.log into $out). Sets status: 0, or 1 when a test
# failed. Exits on a configure or build error. MOEPACK_GPU_TESTS (e.g. "gpu_cuda_backend_test
# gpu_deepseek4_test") builds and runs only those of the four, and neither benchmark nor moepack;
# MOEPACK_BUILD_TARGETS (e.g. "gpu_ops_test bench_cuda_backend") builds exactly those targets instead;
# MOEPACK_BUILD_TIMEOUT_S bounds the build (ninja under timeout).
# MOEPACK_PREBUILT=1: gpu_ops_test and bench_cuda_backend from .device-carry/prebuilt.tar.xz
# (tests/gpu/prebuild_for_device.sh) instead of the build, where they start here and are this tree's (the
# sources' hash), only for a call that builds those two alone (MOEPACK_BUILD_TARGETS) and runs no tests here
# (MOEPACK_SKIP_TESTS=1); otherwise the build. Sets prebuilt=1 when it took them: build-gpu then has no CTest
# configuration, and one_call_lib.sh's run_ctest runs nothing.
source .device-deps/use-deps.sh
gpu_tests="${MOEPACK_GPU_TESTS:-gpu_ops_test gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test}"
prebuilt=0
prebuilt_fits=0
[ "${MOEPACK_SKIP_TESTS:-0}" = 1 ] && [ -n "${MOEPACK_BUILD_TARGETS:-}" ] && prebuilt_fits=1
for t in ${MOEPACK_BUILD_TARGETS:-}; do
  case "$t" in gpu_ops_test | bench_cuda_backend) ;; *) prebuilt_fits=0 ;; esac
done
if [ "${MOEPACK_PREBUILT:-0}" = 1 ] && [ "$prebuilt_fits" = 0 ]; then
  echo "== MOEPACK_PREBUILT=1 ignored: it needs MOEPACK_BUILD_TARGETS of gpu_ops_test / bench_cuda_backend and MOEPACK_SKIP_TESTS=1"
fi
if [ "${MOEPACK_PREBUILT:-0}" = 1 ] && [ "$prebuilt_fits" = 1 ] && [ -f .device-carry/prebuilt.tar.xz ]; then
  cuda_lib=$(dirname "$(readlink -f "$(command -v nvcc)")")/../lib64
  export LD_LIBRARY_PATH="$cuda_lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  mkdir -p build-gpu/tests/gpu
  tar -C build-gpu/tests/gpu -xJf .device-carry/prebuilt.tar.xz
  source tests/gpu/source_stamp.sh
  stamp=$(source_stamp)
  echo "sources here: $stamp; prebuilt: $(cat build-gpu/tests/gpu/COMMIT)" > "$out/prebuilt.log"
  if [ "$(cut -d' ' -f2 build-gpu/tests/gpu/COMMIT)" = "$stamp" ] &&
    ./build-gpu/tests/gpu/gpu_ops_test --gtest_list_tests > /dev/null 2>> "$out/prebuilt.log"; then
    echo "== prebuilt binaries of $(cat build-gpu/tests/gpu/COMMIT) (no build)"
    status=0
    prebuilt=1
    return 0 2> /dev/null || exit 0
  fi
  echo "== prebuilt binaries do not start here (prebuilt.log): building"
  rm -f build-gpu/tests/gpu/gpu_ops_test build-gpu/tests/gpu/bench_cuda_backend
fi
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEPACK_CUDA=ON -DMOEPACK_GUI=OFF \
  -DMOEPACK_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DMOEPACK_SHARED_DIR="$PWD/.device-carry/shared" \
  > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
extra=(bench_cuda_backend moepack)
[ -n "${MOEPACK_GPU_TESTS:-}" ] && extra=()
targets="${MOEPACK_BUILD_TARGETS:-$gpu_tests ${extra[*]}}"
# MOEPACK_BUILD_TIMEOUT_S: ninja itself under that timeout (a `cmake --build` killed leaves its ninja building).
if [ -n "${MOEPACK_BUILD_TIMEOUT_S:-}" ]; then
  # shellcheck disable=SC2086 # the list splits into targets
  timeout "$MOEPACK_BUILD_TIMEOUT_S" ninja -C build-gpu -j "$(nproc)" $targets > "$out/build.log" 2>&1 ||
    { grep -E "error" "$out/build.log" | head -30; echo "== build failed or passed ${MOEPACK_BUILD_TIMEOUT_S} s"; exit 1; }
else
  # shellcheck disable=SC2086 # the list splits into targets
  cmake --build build-gpu -j "$(nproc)" --target $targets > "$out/build.log" 2>&1 ||
    { grep -E "error" "$out/build.log" | head -30; exit 1; }
fi
echo "== build ok"
status=0
if [ "${MOEPACK_SKIP_TESTS:-0}" != 1 ]; then
  ctest --test-dir build-gpu --output-on-failure \
    -R "^(${gpu_tests// /|})$" \
    --output-junit "$out/ctest.xml" > "$out/ctest.log" 2>&1 || status=1
  tail -8 "$out/ctest.log"
  grep -hE "^\[  (PASSED|FAILED|SKIPPED) " build-gpu/Testing/Temporary/LastTest.log | sort | uniq -c | head -20
  grep -E "^\[  FAILED  \]" "$out/ctest.log" | head -20
  grep -E "largest \|gpu - exact\|" build-gpu/Testing/Temporary/LastTest.log | head -2
  cp build-gpu/Testing/Temporary/LastTest.log "$out/LastTest.log"
fi
