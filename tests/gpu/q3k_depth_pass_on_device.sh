#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps carried (no fixtures needed): the forty-first session's measurement of Q3_K's
# tiled depth between the two measured ends of gemv_tiled.h's kTiledQ3kDepthTwoMaxRows rule.
# Builds bench_cuda_backend alone for sm_90 and runs `bench_cuda_backend --q3k-depth-only`
# ($OUT/bench-q3k-depth.json), then prints each shape's mean ratio to D2D at depth 1 and 2.
set -u
out="${OUT:?OUT must be set}"
# pass_build_and_test.sh's configure and build, of the benchmark alone, no tests.
MOEPACK_GPU_TESTS=bench_cuda_backend MOEPACK_SKIP_TESTS=1 source tests/gpu/pass_build_and_test.sh
timeout 240 ./build-gpu/tests/gpu/bench_cuda_backend --q3k-depth-only > "$out/bench-q3k-depth.json" \
  2> "$out/bench-q3k-depth.txt" || { echo "bench rc=$?"; tail -5 "$out/bench-q3k-depth.txt"; exit 1; }
python3 - "$out/bench-q3k-depth.json" <<'PY'
import json, sys, collections
j = json.load(open(sys.argv[1]))
print(j["device"], "d2d GB/s %.0f" % (j["d2d_copy_bytes_per_s"] / 1e9))
by = collections.defaultdict(list)
for g in j["q3k_depth"]:
    by[(g["cols"], g["rows"], g["tiled_depth"])].append(g["ratio_to_d2d"])
for (c, r) in sorted({(c, r) for c, r, _ in by}):
    d1, d2 = by[(c, r, 1)], by[(c, r, 2)]
    m1, m2 = sum(d1) / len(d1), sum(d2) / len(d2)
    print("8 x %4d x %4d (%2d units, %5d rows): depth 1 %.3f  depth 2 %.3f  2-1 %+.3f" % (r, c, c // 256, 8 * r, m1, m2, m2 - m1))
PY
