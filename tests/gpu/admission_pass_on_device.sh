#!/usr/bin/env bash
# Runs on the GPU machine (../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried (any fixture set, e.g. tests/gpu/prepare_carry.sh n):
# the fortieth session's pass over the host-RAM tier (docs/cuda-backend.md, "Host-RAM tier"; it
# replaces the thirty-ninth session's ram_tier_pass_on_device.sh: its "all" runs are that
# script's "on" runs).
#   1. Builds for sm_90 and runs the four gpu test binaries (pass_build_and_test.sh: among them
#      CudaBackend.RamTierFrequencyAdmissionCopiesDownOnlyWhatItKeeps,
#      CudaBackend.DefaultSettingsSizeTheRamTierFromTheMachine, the fixtures'
#      PackWithRamTier*MatchesGguf*, and Q3_K's launches at their new default depth), then
#      gpu_twin_bench_test.
#   2. Unless MOEPACK_SKIP_BENCH=1: a DeepSeek-V4-Flash twin of 4 of 43 layers x 256 experts at
#      the published cache's share (21 GiB of 147 GB: 2000 MiB) and Zipf(1.0) routing, through
#      `bench-twin --backend cuda` without the tier, and with one of 16 GiB's share (1490 MiB)
#      admitting every eviction (all) or by TinyLFU's rule (frequency), in the order off, all,
#      frequency, frequency, all, off ($OUT/twin-adm-<i>-<mode>.json); prints tokens/s, SSD and
#      device-to-host bytes per token of each.
# MOEPACK_SKIP_TESTS=1 leaves the tests out; GTEST_FILTER (gtest's own variable) narrows them.
# MOEPACK_TWIN_RUNS (default "off all frequency frequency all off") and MOEPACK_TWIN_TOKENS
# (default 64, of which 16 warm-up) shorten the benchmark.
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
work=/tmp/moepack-twin-adm
rm -rf "$work"
"$bin" twin --shape deepseek-v4-flash --layers 4 --experts 256 --seed 1 -o "$work" --safety-margin-gib 2 \
  > "$out/twin-write.log" 2>&1 || { tail -5 "$out/twin-write.log"; exit 1; }
i=0
for mode in ${MOEPACK_TWIN_RUNS:-off all frequency frequency all off}; do
  i=$((i + 1))
  ram=(); [ "$mode" != off ] && ram=(--ram-budget-mib 1490 --ram-admission "$mode")
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
  name="twin-adm-$i-$mode"
  timeout 240 "$bin" bench-twin "$work" --zipf 1.0 --budget-mib 2000 "${ram[@]}" --tokens "${MOEPACK_TWIN_TOKENS:-64}" --warmup 16 \
    --backend cuda --json > "$out/$name.json" 2> "$out/$name.txt" || { echo "$name rc=$?"; status=1; }
  python3 - "$out/$name.json" "$name" <<'PY' || true
import json, sys
j = json.load(open(sys.argv[1]))
a, b = j.get("after_warmup", {}), j.get("backend", {})
steps = max(1, j.get("settings", {}).get("tokens", 64))
print(sys.argv[2], "tokens/s %.2f" % a.get("tokens_per_s", 0), "SSD MB/token %.1f" % (a.get("ssd_bytes_per_token", 0) / 1e6),
      "hit rate %.3f" % a.get("hit_rate", 0), "ram slots", b.get("ram_tier_slots"), "ram hits", b.get("ram_tier_hits"),
      "demotions", b.get("ram_tier_demotions"), "not admitted", b.get("ram_tier_not_admitted"),
      "d2h MB/token (all steps) %.1f" % (b.get("d2h_bytes", 0) / 1e6 / steps))
PY
done
rm -rf "$work"
exit "$status"
