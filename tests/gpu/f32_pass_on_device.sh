#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (tests/gpu/prepare_carry.sh k: deepseek4 Q2_K and
# kimi-linear Q4_K_M hold Q3_K, Q4_0 and Q5_0 tensors): one call of the F32 kernels' pass
# (docs/cuda-backend.md, twenty-fifth pass). Builds for sm_90 only; runs gpu_ops_test (every
# kernel and type) and the engine tests of the carried fixtures, then `bench_cuda_backend
# --f32-only` ($OUT/bench-f32.json: Q3_K, Q5_K, Q4_0, Q4_1, Q5_0, Q5_1 in registers and byte by
# byte side by side) and `moepack bench-twin --backend cuda` on a Kimi-K3 twin of 4 layers x 128
# experts, every expert cached ($OUT/twin-k3.json: Q2_K gate / up, Q3_K down), as the seventeenth
# and eighteenth passes measured it. MOEPACK_SKIP_TWIN=1 leaves the twin out, MOEPACK_SKIP_BENCH=1
# the benchmark and the twin (tests only; other carry sets: their fixtures' engine tests).
set -u
out="${OUT:?OUT must be set}"
source tests/gpu/pass_build_and_test.sh  # build, the gpu tests; sets status
fx=.device-carry/shared/fixtures
graph=()
[ "${MOEPACK_SKIP_BENCH:-0}" = 1 ] && exit "$status"
for m in "$fx/kimi-linear-tiny/kimi-linear-tiny-Q4_K_M.gguf" "$fx/deepseek4-tiny/deepseek4-tiny-Q2_K.gguf" \
  "$fx/deepseek2-tiny/deepseek2-tiny-Q4_K_M.gguf" "$fx/llama-moe-tiny/llama-moe-tiny-Q4_K_M.gguf"; do
  [ -f "$m" ] && graph+=(--graph-model "$m")
done
timeout 400 ./build-gpu/tests/gpu/bench_cuda_backend --f32-only --prefill 900 "${graph[@]}" > "$out/bench-f32.json" \
  2> "$out/bench-f32.txt" ||
  { echo "bench rc=$?"; tail -5 "$out/bench-f32.txt"; status=1; }
python3 - "$out/bench-f32.json" <<'EOF' || true
import json, statistics, sys
d = json.load(open(sys.argv[1]))
d2d = d["d2d_copy_bytes_per_s"]
print("d2d %.2f TB/s" % (d2d / 1e12))
rows = {}
for g in d["gemv_f32_types"]:
    key = (g["type"], "%dx%dx%d%s" % (g["rows"], g["cols"], g["experts_per_launch"],
                                      "" if g["pairs_per_expert"] == 1 else " pairs %d" % g["pairs_per_expert"]))
    rows.setdefault(key, {}).setdefault(g["bytewise"], []).append(g)
for (t, shape), v in rows.items():
    def fmt(gs):
        return "%.1f us %.3f" % (statistics.median(x["us_per_launch"] for x in gs),
                                 statistics.median(x["ratio_to_d2d"] for x in gs))
    line = "%-6s %-24s registers %s" % (t, shape, fmt(v[False]))
    if True in v:
        line += " | bytewise %s | x%.2f" % (fmt(v[True]), statistics.median(x["us_per_launch"] for x in v[True]) /
                                            statistics.median(x["us_per_launch"] for x in v[False]))
    print(line)
pre = {}
for g in d.get("gemv_prefill_x", []):
    key = (g["type"], "%dx%dx%d pairs %d" % (g["rows"], g["cols"], g["experts_per_launch"], g["pairs_per_expert"]))
    pre.setdefault(key, {}).setdefault(g["x_global"], []).append(g)
for (t, shape), v in pre.items():
    st = statistics.median(x["us_per_launch"] for x in v[False])
    gl = statistics.median(x["us_per_launch"] for x in v[True])
    print("prefill %-6s %-28s staged %8.1f us %6.2f TMAC/s | global %8.1f us %6.2f TMAC/s | x%.2f" % (
        t, shape, st, statistics.median(x["multiply_adds_per_s"] for x in v[False]) / 1e12,
        gl, statistics.median(x["multiply_adds_per_s"] for x in v[True]) / 1e12, gl / st))
for name, e in d.get("engine", {}).get("prefill_x_staged_of", {}).items():
    print("engine %s: prefill %.0f -> %.0f tok/s (global -> staged), decode %.0f -> %.0f" % (
        name, e["prefill_tokens_per_s_off"], e["prefill_tokens_per_s_on"], e["decode_tokens_per_s_off"],
        e["decode_tokens_per_s_on"]))
EOF
[ "${MOEPACK_SKIP_TWIN:-0}" = 1 ] && exit "$status"
work=/tmp/moepack-twin-k3
rm -rf "$work"
./build-gpu/app/moepack twin --shape kimi-k3 --layers 4 --experts 128 --seed 1 -o "$work" > "$out/twin.log" 2>&1 ||
  { tail -3 "$out/twin.log"; exit 1; }
for tiled in on off on off; do
  ./build-gpu/app/moepack bench-twin "$work" --backend cuda --zipf 1.0 --budget-mib 6400 --tokens 80 --warmup 16 \
    --tiled-experts "$tiled" --json > "$out/twin-k3-$tiled.json" 2> "$out/twin-k3.txt" || { tail -3 "$out/twin-k3.txt"; status=1; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d["checksum"], d["after_warmup"], d.get("backend"))' \
    "$out/twin-k3-$tiled.json" "tiled $tiled" 2>&1 | cut -c1-600
done
rm -rf "$work"
exit "$status"
