#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (any fixture set, e.g. tests/gpu/prepare_carry.sh a): the
# first run of the host-RAM tier behind the VRAM expert cache (docs/cuda-backend.md, "Host-RAM
# tier"; thirty-ninth session).
#   1. Builds for sm_90 and runs the four gpu test binaries (pass_build_and_test.sh: among them
#      CudaBackend.RamTierMovesExpertsDownAndBackUpIntact and
#      CudaFixture.PackWithRamTier*MatchesGgufAtEveryBudget on the carried fixtures), then
#      gpu_twin_bench_test (the twins with and without the tier).
#   2. Unless MOEPACK_SKIP_BENCH=1: a DeepSeek-V4-Flash twin of 4 of 43 layers x 256 experts at
#      the published cache's share (21 GiB of 147 GB: 2000 MiB) and Zipf(1.0) routing, through
#      `bench-twin --backend cuda` without the tier and with one of 16 GiB's share (16 GiB of
#      147 GB: 1490 MiB), alternating off, on, on, off ($OUT/twin-ram-<i>-<off|on>.json);
#      prints tokens/s, SSD bytes per token, the tier's hits and copies down of each.
# MOEPACK_SKIP_TESTS=1 leaves the tests out.
set -u
out="${OUT:?OUT must be set}"
source tests/gpu/pass_build_and_test.sh  # build, the gpu tests; sets status
cmake --build build-gpu -j "$(nproc)" --target gpu_twin_bench_test >> "$out/build.log" 2>&1 ||
  { grep -E "error" "$out/build.log" | tail -20; exit 1; }
if [ "${MOEPACK_SKIP_TESTS:-0}" != 1 ]; then
  ctest --test-dir build-gpu --output-on-failure -R "^gpu_twin_bench_test$" > "$out/ctest-twin.log" 2>&1 || status=1
  tail -4 "$out/ctest-twin.log"
fi
[ "${MOEPACK_SKIP_BENCH:-0}" = 1 ] && exit "$status"
bin=./build-gpu/app/moepack
work=/tmp/moepack-twin-ram
rm -rf "$work"
"$bin" twin --shape deepseek-v4-flash --layers 4 --experts 256 --seed 1 -o "$work" --safety-margin-gib 2 \
  > "$out/twin-write.log" 2>&1 || { tail -5 "$out/twin-write.log"; exit 1; }
i=0
for tier in off on on off; do
  i=$((i + 1))
  ram=(); [ "$tier" = on ] && ram=(--ram-budget-mib 1490)
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
  name="twin-ram-$i-$tier"
  timeout 240 "$bin" bench-twin "$work" --zipf 1.0 --budget-mib 2000 "${ram[@]}" --tokens 48 --warmup 16 \
    --backend cuda --json > "$out/$name.json" 2> "$out/$name.txt" || { echo "$name rc=$?"; status=1; }
  python3 - "$out/$name.json" "$name" <<'EOF' || true
import json, sys
j = json.load(open(sys.argv[1]))
a, b = j.get("after_warmup", {}), j.get("backend", {})
print(sys.argv[2], "tokens/s %.2f" % a.get("tokens_per_s", 0), "SSD MB/token %.1f" % (a.get("ssd_bytes_per_token", 0) / 1e6),
      "hit rate %.3f" % a.get("hit_rate", 0), "ram slots", b.get("ram_tier_slots"), "ram hits", b.get("ram_tier_hits"),
      "d2h GB %.2f" % (b.get("d2h_bytes", 0) / 1e9), "h2d GB %.2f" % (b.get("h2d_bytes", 0) / 1e9))
EOF
done
rm -rf "$work"
exit "$status"
