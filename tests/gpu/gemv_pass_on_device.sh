#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps carried: one call of a GEMV pass. Builds gpu_ops_test and bench_cuda_backend
# (sm_90 only: the H200), runs every tensor-core GEMV parity test (every variant against the
# exact dot product), then the GEMV sections of the benchmark ($OUT/bench.json, a summary on
# stdout), and keeps the SASS of the GEMV kernels ($OUT/gemv-sass.txt.gz) for counting
# instructions offline. MOEPACK_BENCH_VARIANTS narrows "gemv_mma_variants" (default 20,0,22);
# MOEPACK_BENCH_ARGS replaces the benchmark's --gemv-only (e.g. --tiled-only: the tiled layout's
# side by side and the read ceilings alone); MOEPACK_OPS_FILTER the parity tests' gtest filter.
set -u
out="${OUT:?OUT must be set}"
source .device-deps/use-deps.sh
mkdir -p .device-carry/shared
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEPACK_CUDA=ON -DMOEPACK_GUI=OFF \
  -DMOEPACK_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DMOEPACK_SHARED_DIR="$PWD/.device-carry/shared" \
  > "$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" --target gpu_ops_test bench_cuda_backend > "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | head -30; exit 1; }
echo "== build ok"
status=0
timeout 300 ./build-gpu/tests/gpu/gpu_ops_test --gtest_filter="${MOEPACK_OPS_FILTER:-*Gemv*:*Swiglu*}" > "$out/ops.log" 2>&1 ||
  status=1
grep -E "^\[  (PASSED|FAILED) |tests ran" "$out/ops.log"; grep -E "^\[  FAILED  \]" "$out/ops.log" | head -20
grep -B2 -A8 "Failure" "$out/ops.log" | head -60
sass=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
if [ -n "$sass" ]; then
  "$sass" -sass build-gpu/gpu/CMakeFiles/moepack_gpu.dir/kernels_gemv_mma.cu.o | gzip > "$out/gemv-sass.txt.gz"
fi
MOEPACK_BENCH_VARIANTS="${MOEPACK_BENCH_VARIANTS:-20,0,22}" timeout 400 ./build-gpu/tests/gpu/bench_cuda_backend \
  ${MOEPACK_BENCH_ARGS:---gemv-only} > "$out/bench.json" 2> "$out/bench.txt" || { echo "bench rc=$?"; tail -5 "$out/bench.txt"; status=1; }
python3 - "$out/bench.json" <<'EOF' || true
import json, sys
d = json.load(open(sys.argv[1]))
print("d2d %.2f TB/s" % (d["d2d_copy_bytes_per_s"] / 1e12))
for sec in ("gemv_mma_variants", "gemv_diagnosis"):
    rows = {}
    for g in d.get(sec, []):
        key = (g["type"], g.get("mma_variant"))
        rows.setdefault(key, []).append("%dx%dx%d %.2f" % (g["rows"], g["cols"], g["experts_per_launch"], g["ratio_to_d2d"]))
    for (t, v), r in sorted(rows.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print(sec, t, "v%s" % v, " ".join(r))
tiled = {}
for g in d.get("gemv_tiled", []):
    if g.get("pairs_per_expert", 1) > 1 or "tiled_depth" not in g:
        print("prefill", g["type"], "%dx%dx%d pairs %d %s %.1f us" % (g["rows"], g["cols"], g["experts_per_launch"],
              g.get("pairs_per_expert", 0), "tiled" if g["tiled"] else "gguf", g["us_per_launch"]))
        continue
    name = ("d%dw%d%s%s" % (g["tiled_depth"], g["tiled_warps"], "s" if g.get("tiled_split", 1) == 2 else "",
                            "" if g.get("tiled_runs", 0) == 0 else "r%d" % g["tiled_runs"])
            if g["tiled"] else "ring")
    tiled.setdefault((g["type"] + ("+swiglu" if g.get("swiglu_epilogue") else ""), g["rows"], g["cols"], g["experts_per_launch"]), []).append(
        "%s %.2f" % (name, g["ratio_to_d2d"]))
for (t, r, c, e), v in tiled.items():
    print("tiled", t, "%dx%dx%d" % (r, c, e), " ".join(v))
for g in d.get("read_ceiling", []):
    print("read_ceiling %d bytes %.2f" % (g["bytes"], g["read_ratio_to_d2d"]))
for g in d.get("gemv", []):
    if g["experts_per_launch"] == 8 and g["type"] in ("q4_K", "q2_K", "mxfp4"):
        print("gemv", g["type"], "%dx%dx8 %.2f" % (g["rows"], g["cols"], g["ratio_to_d2d"]))
for g in d.get("gemv_ready_fragments", []):
    print("ready", g["type"], "%dx%dx8 %.2f gemv %.2f us, swiglu %.2f / %.2f us, swiglu+gemv %.2f / %.2f (%.2f without pdl) us" % (
        g["rows"], g["cols"], g["ratio_to_d2d"], g["us_per_launch"], g["swiglu_us"], g["swiglu_fragments_us"],
        g["pair_us"], g["pair_ready_us"], g["pair_ready_without_pdl_us"]))
    if "ffn_us" in g:
        print("swiglu-epilogue", g["type"], "%dx%dx8 gate+up %.2f -> %.2f us (%.2f -> %.2f of d2d), ffn %.2f -> %.2f us (x%.3f)" % (
            g["rows"], g["cols"], g["gate_up_us"], g["gate_up_swiglu_epilogue_us"],
            g["gate_up_bytes"] / g["gate_up_us"] / 1e6 / (d["d2d_copy_bytes_per_s"] / 1e12),
            g["gate_up_bytes"] / g["gate_up_swiglu_epilogue_us"] / 1e6 / (d["d2d_copy_bytes_per_s"] / 1e12),
            g["ffn_us"], g["ffn_swiglu_epilogue_us"], g["ffn_us"] / g["ffn_swiglu_epilogue_us"]))
EOF
exit "$status"
