#!/usr/bin/env bash
# The body of the K-quants' tensor-core passes (q5k_pass_on_device.sh, q6k_pass_on_device.sh; their
# headers say what to carry): `bash tests/gpu/k_pass_on_device.sh q5k|q6k` on the GPU machine, from
# the repository root, with $OUT set. Builds for sm_90 only and runs the four gpu test binaries
# (tests/gpu/pass_build_and_test.sh), then `bench_cuda_backend --q5k-only` or `--q6k-only` with
# every carried single-file GGUF as a --graph-model ($OUT/bench-SECTION.json) and prints its
# summary (tests/gpu/k_decode_summary.py).
# MOEPACK_SKIP_TESTS=1 leaves the tests out, MOEPACK_SKIP_BENCH=1 the benchmark.
set -u
sect="${1:?usage: k_pass_on_device.sh q5k|q6k}"
case "$sect" in q5k | q6k) ;; *) echo "k_pass_on_device.sh: q5k or q6k, not $sect" >&2; exit 2 ;; esac
out="${OUT:?OUT must be set}"
source tests/gpu/pass_build_and_test.sh  # build, the gpu tests; sets status
[ "${MOEPACK_SKIP_BENCH:-0}" = 1 ] && exit "$status"
graph=()  # the carried single-file GGUFs, for the engine side by side
for f in $(find .device-carry/shared/fixtures -name '*.gguf' ! -name '*-of-*' | sort); do graph+=(--graph-model "$f"); done
timeout 330 ./build-gpu/tests/gpu/bench_cuda_backend "--$sect-only" ${graph[@]+"${graph[@]}"} \
  > "$out/bench-$sect.json" 2> "$out/bench-$sect.txt" || { echo "bench rc=$?"; tail -5 "$out/bench-$sect.txt"; status=1; }
python3 tests/gpu/k_decode_summary.py "$out/bench-$sect.json" "$sect" || true
exit "$status"
