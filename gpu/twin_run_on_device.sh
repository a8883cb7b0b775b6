#!/usr/bin/env bash
# bench-twin on the GPU machine (docs/twins.md, "GPU machine"): writes a layer-scaled twin and
# runs `bench-twin --backend cuda` serial vs overlapped, Zipf(1.0) and the demo trace, with the
# published 21 GiB cache scaled to the twin's share of layers. Run from the repository root
# after tests/gpu/run_on_device.sh has built build-gpu on the same (warm) machine:
#   OUT=... gpu/twin_run_on_device.sh v4    # deepseek-v4-flash, 12 of 43 layers, 41.1 GB, 6000 MiB
#   OUT=... gpu/twin_run_on_device.sh k3    # kimi-k3, 3 of 92 layers, 32.1 GB, 700 MiB
# Each writes $OUT/twin-<which>-<routing>-<schedule>.json (+ .txt) and removes its twin.
set -u
out="${OUT:?OUT must be set}"
which="${1:?v4 or k3}"
tokens="${MOEPACK_TWIN_TOKENS:-64}"
bin=./build-gpu/app/moepack
work=/tmp/moepack-twin
case "$which" in
  v4) shape=deepseek-v4-flash; layers=12; budget=6000 ;;
  k3) shape=kimi-k3; layers=3; budget=700 ;;
  *) echo "v4 or k3"; exit 2 ;;
esac
rm -rf "$work" && mkdir -p "$work"
/usr/bin/time -v "$bin" twin --shape "$shape" --layers "$layers" -o "$work/twin" --safety-margin-gib 2 \
  > "$out/twin-$which-write.log" 2>&1 || { tail -20 "$out/twin-$which-write.log"; exit 1; }
grep -E "written|Elapsed|Maximum resident" "$out/twin-$which-write.log"
for routing in zipf trace; do
  if [ "$routing" = zipf ]; then src=(--zipf 1.0); else src=(--trace tests/bench/twin_demo.trace); fi
  for sched in serial overlapped; do
    extra=(); [ "$sched" = serial ] && extra=(--serial)
    sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
    name="twin-$which-$routing-$sched"
    "$bin" bench-twin "$work/twin" "${src[@]}" --budget-mib "$budget" --tokens "$tokens" --warmup 16 \
      --backend cuda "${extra[@]}" --json > "$out/$name.json" 2> "$out/$name.txt"
    echo "== $name rc=$?"; tail -2 "$out/$name.txt"
  done
done
rm -rf "$work"
