#!/usr/bin/env bash
# One GPU-machine call (fifty-eighth session) that builds nothing: the binaries of
# MOEPACK_PREBUILD_BINARIES="gpu_ops_test gpu_cuda_backend_test gpu_deepseek4_test gpu_device_test"
# tests/gpu/prebuild_for_device.sh, in .device-carry/prebuilt.tar.xz, with a fixture set beside them
# (tests/gpu/prepare_carry.sh t: both MXFP4 engine fixtures; the demo model moved out of the working tree for
# the call, 64 MiB in all). Refuses binaries of other sources (tests/gpu/source_stamp.sh). The engine tests
# read the fixtures where they were compiled to (SHARED_DIR in the tarball), linked here to
# .device-carry/shared. Runs, each under a timeout, logs into $OUT:
#   1. all of gpu_ops_test under MOEPACK_GPU_LIMITS=sm_120 (ops-sm120.log);
#   2. each engine binary present under the limits (<binary>-sm120.log; gpu_cuda_backend_test only its tests
#      matching MOEPACK_FILTER_gpu_cuda_backend_test, default '*qwen3moe*': its demo-model tests need the
#      model that stayed behind);
#   3. gpu_device_test and gpu_ops_test's SmLimits tests without the limits;
#   4. a configure without CMAKE_CUDA_ARCHITECTURES (cmake/MoepackCudaArchitectures.cmake's choice here).
set -u
out="${OUT:?OUT must be set}"
source tests/gpu/one_call_lib.sh
bin=/tmp/moepack-prebuilt
unpack_prebuilt "$bin" || exit 1
shared=$(cat "$bin/SHARED_DIR")
if [ ! -e "$shared" ]; then
  mkdir -p "$(dirname "$shared")" && ln -s "$PWD/.device-carry/shared" "$shared"
fi
echo "== prebuilt $(cat "$bin/COMMIT"); fixtures at $shared: $(find "$shared/fixtures/" -mindepth 1 -maxdepth 1 -printf "%f ")"
status=0
pattern='^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]'
run() {  # run LOG SECONDS CMD...
  local log=$1 limit=$2
  shift 2
  timeout -k 10 "$limit" "$@" > "$out/$log" 2>&1 || { status=1; echo "== $log: FAILED (or timed out)"; }
  grep -E "$pattern" "$out/$log" | head -20
  echo "== $log done at ${SECONDS} s"
}
export MOEPACK_GPU_LIMITS=sm_120
run ops-sm120.log 150 "$bin/gpu_ops_test"
for t in gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test; do
  [ -x "$bin/$t" ] || continue
  filter=()
  [ "$t" != gpu_cuda_backend_test ] ||
    filter=("--gtest_filter=${MOEPACK_FILTER_gpu_cuda_backend_test:-*qwen3moe*}")
  run "$t-sm120.log" 120 "$bin/$t" "${filter[@]}"
done
unset MOEPACK_GPU_LIMITS
[ ! -x "$bin/gpu_device_test" ] || run device.log 60 "$bin/gpu_device_test"
run ops-smlimits.log 60 "$bin/gpu_ops_test" --gtest_filter='SmLimits.*'
nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader
nvidia-smi -L  # (the UUIDs gpu_device_test printed in device.log)
grep "UUID" "$out/device.log"
timeout 60 cmake -S . -B /tmp/moepack-cfg -G Ninja -DMOEPACK_GUI=OFF -DMOEPACK_CUDA=ON 2>&1 | grep "MoePack CUDA"
grep -o 'generate-code=arch=compute_[0-9]*,code=[^ ]*' /tmp/moepack-cfg/build.ninja | sort | uniq -c
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
