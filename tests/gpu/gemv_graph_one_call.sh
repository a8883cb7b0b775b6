#!/usr/bin/env bash
# One GPU-machine call (sixtieth session) that builds nothing: bench_cuda_backend --gemv-graph-only from
# the prebuilt binaries of MOEPACK_PREBUILD_BINARIES=bench_cuda_backend tests/gpu/prebuild_for_device.sh
# (.device-carry/prebuilt.tar.xz; refused if not this tree's, tests/gpu/source_stamp.sh). No fixtures
# (tests/gpu/prepare_carry.sh none). Writes into $OUT: gemv-graph.json (the bench's JSON), gemv-graph.log
# (its partials on stderr), smi.txt (nvidia-smi -L and the clocks); with MOEPACK_ALSO_MODEL_PREFILL=1 then
# bench_cuda_backend --model-prefill-only too (model-prefill.json, model-prefill.log: every launch's
# configurations, for fitting the prefill rules' leftovers).
set -u
out="${OUT:?OUT must be set}"
source tests/gpu/one_call_lib.sh
bin=/tmp/moepack-prebuilt
unpack_prebuilt "$bin" || exit 1
{ nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv; } > "$out/smi.txt" 2>&1
echo "== prebuilt $(cat "$bin/COMMIT")"
timeout -k 10 "${MOEPACK_GRAPH_LIMIT:-240}" "$bin/bench_cuda_backend" --gemv-graph-only \
  > "$out/gemv-graph.json" 2> "$out/gemv-graph.log"
rc=$?
echo "== bench rc $rc at ${SECONDS} s"
grep -v '^== partial' "$out/gemv-graph.log" | tail -5
if [ "${MOEPACK_ALSO_MODEL_PREFILL:-0}" = 1 ]; then
  timeout -k 10 "${MOEPACK_PREFILL_LIMIT:-300}" "$bin/bench_cuda_backend" --model-prefill-only \
    > "$out/model-prefill.json" 2> "$out/model-prefill.log"
  echo "== model prefill rc $? at ${SECONDS} s"
fi
exit $rc
