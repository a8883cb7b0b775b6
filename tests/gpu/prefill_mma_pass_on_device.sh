#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (any fixture set, e.g. tests/gpu/prepare_carry.sh n): the
# forty-third session's pass over the prefill on the tensor cores (kernels_gemv.cu, "Prefill on
# the tensor cores"; docs/cuda-backend.md).
#   1. Builds for sm_90 (pass_build_and_test.sh with the binaries of MOEPACK_GPU_TESTS, default the
#      four gpu test binaries, and bench_cuda_backend) and runs those tests: among them
#      TypeParity.GemvPrefillTensorCoresWithinTheBoundAndPerPair for every type,
#      GemvPrefillTensorCoresTiledEqualsGguf, and the carried fixtures'
#      {Cuda,Ds4,Kimi}Fixture.PrefillTensorCoresMatchCpuAndReferenceAndPackMatchesGguf (the switch
#      on). The whole build and suite take ~6-8 minutes: give the benchmark a second call on the
#      warm machine (MOEPACK_SKIP_BENCH=1 in the first, MOEPACK_SKIP_TESTS=1 in the second).
#   2. Unless MOEPACK_SKIP_BENCH=1: `bench_cuda_backend --prefill-mma-only --prefill 900` on the
#      demo model and every fixture GGUF carried ($OUT/bench-prefill-mma.json): prefill launches
#      both ways, the engine's prefill and decode both ways; prints the launches' ratio.
set -u
out="${OUT:?OUT must be set}"
tests="${MOEPACK_GPU_TESTS:-gpu_ops_test gpu_cuda_backend_test gpu_deepseek4_test gpu_kimi_linear_test}"
MOEPACK_GPU_TESTS="$tests" source tests/gpu/pass_build_and_test.sh  # sets status
cmake --build build-gpu -j "$(nproc)" --target bench_cuda_backend >> "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | tail -20; exit 1; }
[ "${MOEPACK_SKIP_BENCH:-0}" = 1 ] && exit "$status"
models=()
while IFS= read -r f; do models+=(--graph-model "$f"); done < <(find .device-carry/shared/fixtures -name '*.gguf' \
  ! -name '*-0000[23]-of-*' | sort)
timeout 300 ./build-gpu/tests/gpu/bench_cuda_backend --prefill-mma-only --prefill 900 --decode 32 "${models[@]}" \
  > "$out/bench-prefill-mma.json" 2> "$out/bench-prefill-mma.txt" ||
  { echo "bench rc=$?"; tail -5 "$out/bench-prefill-mma.txt"; exit 1; }
python3 - "$out/bench-prefill-mma.json" <<'PY'
import json, sys, collections
j = json.load(open(sys.argv[1]))
print(j["device"], "d2d GB/s %.0f" % (j["d2d_copy_bytes_per_s"] / 1e9))
by = collections.defaultdict(list)
for g in j["gemv_prefill_mma"]:
    by[(g["type"], g["experts_per_launch"], g["rows"], g["cols"], g["pairs_per_expert"], g["prefill_mma"])].append(g["us_per_launch"])
for k in sorted({k[:5] for k in by}):
    f, m = by[k + (False,)], by[k + (True,)]
    mf, mm = sum(f) / len(f), sum(m) / len(m)
    print("%-6s %d x %4d x %4d, %3d pairs: F32 %8.1f us  tensor cores %8.1f us  x%.2f" % (k + (mf, mm, mf / mm)))
rule = collections.defaultdict(list)
for g in j.get("gemv_prefill_mma_rule", []):
    rule[(g["type"], g["experts_per_launch"], g["rows"], g["cols"], " ".join(map(str, g["group_pairs"])), g["prefill_mma_rule"])].append(g["us_per_launch"])
for k in sorted({k[:5] for k in rule}):
    f, m = rule[k + (False,)], rule[k + (True,)]
    mf, mm = sum(f) / len(f), sum(m) / len(m)
    print("%-6s %2d x %4d x %4d, groups [%s]: minimum 2 %8.1f us  default rule %8.1f us  x%.2f" % (k + (mf, mm, mf / mm)))
for key, per_model in j.get("engine", {}).items():
    for m, r in per_model.items():
        print("%-34s %-36s prefill %s -> %s tokens/s, decode x%.3f" % (key, m,
              *["%.0f" % r.get(k, 0) for k in ("prefill_tokens_per_s_off", "prefill_tokens_per_s_on")],
              r.get("decode_speedup", 0)))
PY
exit "$status"
