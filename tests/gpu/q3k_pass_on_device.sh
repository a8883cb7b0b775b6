#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (tests/gpu/prepare_carry.sh m: deepseek2 Q2_K and
# kimi-linear Q2_K hold Q3_K matrices of rows of 512, which decode on the tensor cores): one call
# of Q3_K's tensor-core pass (docs/cuda-backend.md, twenty-sixth pass). Builds for sm_90 only;
# runs gpu_ops_test (every kernel and type) and the engine tests of the carried fixtures, then
# `bench_cuda_backend --q3k-only --twin` ($OUT/bench-q3k.json: Q3_K's decode launches on the
# tensor cores and in the F32 kernels side by side, and bench-twin on a Kimi-K3 twin of 4 layers
# x 128 experts, every expert cached, both ways: Q2_K gate / up, Q3_K down).
# MOEPACK_SKIP_TESTS=1 leaves the tests out, MOEPACK_SKIP_BENCH=1 the benchmark, MOEPACK_SKIP_TWIN=1
# the twin.
set -u
out="${OUT:?OUT must be set}"
source tests/gpu/pass_build_and_test.sh  # build, the gpu tests; sets status
[ "${MOEPACK_SKIP_BENCH:-0}" = 1 ] && exit "$status"
work=/tmp/moepack-twin-k3
rm -rf "$work"
twin=()
if [ "${MOEPACK_SKIP_TWIN:-0}" != 1 ]; then
  ./build-gpu/app/moepack twin --shape kimi-k3 --layers 4 --experts 128 --seed 1 -o "$work" > "$out/twin.log" 2>&1 ||
    { tail -3 "$out/twin.log"; exit 1; }
  twin=(--twin "$work")
fi
timeout 300 ./build-gpu/tests/gpu/bench_cuda_backend --q3k-only "${twin[@]}" > "$out/bench-q3k.json" \
  2> "$out/bench-q3k.txt" || { echo "bench rc=$?"; tail -5 "$out/bench-q3k.txt"; status=1; }
rm -rf "$work"
python3 - "$out/bench-q3k.json" <<'PY' || true
import json, statistics, sys
d = json.load(open(sys.argv[1]))
d2d = d["d2d_copy_bytes_per_s"]
print("d2d %.2f TB/s" % (d2d / 1e12))
q = d["gemv_q3k"]
rows = {}
for g in q["launches"]:
    key = (g["type"], "%dx%dx%d" % (g["experts_per_launch"], g["rows"], g["cols"]))
    rows.setdefault(key, {}).setdefault(g["f32_kernels"], []).append(g)
med = lambda gs, k: statistics.median(x[k] for x in gs)
for (t, shape), v in rows.items():
    line = "%-5s %-14s default %7.1f us %.3f of D2D" % (t, shape, med(v[False], "us_per_launch"), med(v[False], "ratio_to_d2d"))
    if True in v:
        line += " | f32 kernels %7.1f us %.3f | x%.2f" % (med(v[True], "us_per_launch"), med(v[True], "ratio_to_d2d"),
                                                        med(v[True], "us_per_launch") / med(v[False], "us_per_launch"))
    print(line)
var = {}
for g in q.get("variants", []):
    var.setdefault("%dx%dx%d" % (g["experts_per_launch"], g["rows"], g["cols"]), []).append(
        "v%d %.1f us %.3f" % (g["mma_variant"], g["us_per_launch"], g["ratio_to_d2d"]))
for shape, v in var.items():
    print("q3_K %-14s %s" % (shape, " | ".join(v)))
ffn = {}
for g in q.get("expert_ffn", []):
    ffn.setdefault("%d x %d on %d" % (g["experts"], g["inter"], g["hidden"]), {}).setdefault(g["f32_kernels"], []).append(g)
for shape, v in ffn.items():
    a, b = med(v[False], "ffn_us"), med(v[True], "ffn_us")
    print("q3_K FFN %-16s tensor cores %7.1f us %.3f (gate+up %.1f, down %.1f) | f32 kernels %7.1f us %.3f | x%.2f" % (
        shape, a, med(v[False], "ratio_to_d2d"), med(v[False], "gate_up_us"), med(v[False], "down_us"),
        b, med(v[True], "ratio_to_d2d"), b / a))
for c in q["read_ceiling"]:
    print("read ceiling %-18s %s" % (c["shape"], {k: round(v, 3) for k, v in c.items() if "ratio" in k}))
t = d.get("twin_q3k")
if t:
    for r in t["rounds"]:
        print("twin f32_kernels=%-5s compute %.3f ms/step wall %.3f ms/step hits %d misses %d checksum %.6g" % (
            r["f32_kernels"], r["compute_ms_per_step"], r["wall_ms_per_step"], r["hits"], r["misses"], r["checksum"]))
    print("twin median compute ms/step: tensor cores %.3f, f32 kernels %.3f" % (
        t["compute_ms_per_step_tensor_cores"], t["compute_ms_per_step_f32_kernels"]))
PY
exit "$status"
