#!/usr/bin/env bash
# One GPU-machine call (forty-seventh session): the whole gpu suite on a second carry set after the
# host copy of the group sizes (tests/gpu/prepare_carry.sh n: llama-moe Q4_K_M and deepseek2 Q2_K),
# and an Nsight Compute profile of the tensor cores' prefill (gemm_mma_kernel) on 8 experts of
# 2048 x 4096 with 16 and 32 pairs each (why it takes 100-200 us where the decode GEMV reads the same
# weights in ~12 us). Within ~MOEPACK_CALL_BUDGET_S (default 520 s):
#   1. builds the four gpu test binaries, bench_cuda_backend and moepack;
#   2. the profiles first (summary here, details in $OUT/ncu.tgz);
#   3. ctest of the four binaries with the time left ($OUT/ctest.log, LastTest.log).
set -u
out="${OUT:?OUT must be set}"
budget="${MOEPACK_CALL_BUDGET_S:-520}"
MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
echo "== built at ${SECONDS} s"
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
dir=/tmp/moepack-ncu
rm -rf "$dir" && mkdir -p "$dir"
if [ -n "$ncu" ]; then
  for pairs in 16 32; do
    name="gemm-q4_K-2048x4096x8-p$pairs"
    timeout 90 "$ncu" --clock-control none -k "regex:gemm_mma" -s 4 -c 1 --set full --import-source no \
      --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' -o "$dir/$name" -f \
      ./build-gpu/tests/gpu/bench_cuda_backend --pairs "$pairs" --gemv q4_K 2048 4096 8 0 > "$dir/$name.run.txt" 2>&1 ||
      { echo "ncu $name failed"; tail -5 "$dir/$name.run.txt"; }
    "$ncu" -i "$dir/$name.ncu-rep" --print-details all > "$dir/$name.txt" 2>&1
    echo "== $name"
    grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issue Slots Busy|Eligible Warps|Block Limit|Shared Memory Configuration Size|Dynamic Shared" "$dir/$name.txt" | head -20
    grep -E "stalled_.*ratio" "$dir/$name.txt" | sort -k3 -n -r | head -8
  done
  rm -f "$dir"/*.ncu-rep
  tar -czf "$out/ncu.tgz" -C "$dir" .
else
  echo "no ncu on this machine"
fi
echo "== profiles done at ${SECONDS} s"
source tests/gpu/one_call_lib.sh
run_ctest $((budget - SECONDS))
echo "== done at ${SECONDS} s (status $status)"
exit "$status"
