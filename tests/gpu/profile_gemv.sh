#!/usr/bin/env bash
# Runs on the GPU machine after tests/gpu/run_on_device.sh has built build-gpu: Nsight Compute
# profiles of one launch of the decode GEMV (bench_cuda_backend --gemv) and of the plain read
# kernel over the same bytes, as text (details, every warp stall reason, and per-SASS-line
# counters where this ncu prints them) in $OUT/ncu.tgz.
# MOEPACK_PROFILE_CONFIGS: ";"-separated "TYPE ROWS COLS EXPERTS VARIANT" (default below).
set -u
out="${OUT:?OUT must be set}"
source .device-deps/use-deps.sh
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "no ncu on this machine"; exit 0; }
bench=./build-gpu/tests/gpu/bench_cuda_backend
dir=/tmp/moepack-ncu
rm -rf "$dir" && mkdir -p "$dir"
configs="${MOEPACK_PROFILE_CONFIGS:-q4_K 2048 4096 8 0;q2_K 2048 4096 8 0;mxfp4 2048 4096 8 0;q4_K 2048 4096 8 6}"
stalls='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
profile() {  # name kernel-regex bench-args...
  local name=$1 kernel=$2
  shift 2
  "$ncu" --clock-control none -k "regex:$kernel" -s 8 -c 1 --set full --import-source no --metrics "$stalls" \
    -o "$dir/$name" -f "$bench" "$@" > "$dir/$name.run.txt" 2>&1 || { echo "ncu $name failed"; tail -5 "$dir/$name.run.txt"; }
  "$ncu" -i "$dir/$name.ncu-rep" --print-details all > "$dir/$name.txt" 2>&1
  "$ncu" -i "$dir/$name.ncu-rep" --page raw --csv > "$dir/$name-raw.csv" 2>&1
  "$ncu" -i "$dir/$name.ncu-rep" --page source --print-source sass --csv > "$dir/$name-sass.csv" 2>&1 || true
  grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|Eligible Warps" "$dir/$name.txt" | head -12
}
IFS=';' read -ra cfgs <<< "$configs"
for c in "${cfgs[@]}"; do
  read -r type rows cols experts variant <<< "$c"
  echo "== $c"
  profile "gemv-$type-${rows}x${cols}x$experts-v$variant" "gemv_pipe|gemv_mma" --gemv $type $rows $cols $experts $variant
done
read -r type rows cols experts variant <<< "${cfgs[0]}"
echo "== read probe over the bytes of ${cfgs[0]}"
profile "read-$type-${rows}x${cols}x$experts" "read_probe" --gemv $type $rows $cols $experts $variant
rm -f "$dir"/*.ncu-rep
tar -czf "$out/ncu.tgz" -C "$dir" .
