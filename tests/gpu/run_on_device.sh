#!/usr/bin/env bash
# Runs on the GPU machine (see ../shared/device/README.md), from the repository root, with
# .device-deps and .device-carry carried: builds MoePack without Qt and with CUDA (sm_90 and
# sm_120), runs the tests whose fixtures were carried (gpu label included) and the I/O
# benchmarks on a large synthetic pack. Everything lands under $OUT. Warnings are not errors
# here: the machine's g++ 13 reports a known -Warray-bounds false positive inside
# std::vector; CI (Debian g++ 12) keeps -Werror.
set -u
out="${OUT:?OUT must be set}"
source .device-deps/use-deps.sh
tests="${MOEPACK_DEVICE_TESTS:-gpu_|core_gguf_test|core_gguf_model_test|core_quants_test|core_direct_reader|core_expert|core_io_bench|core_telemetry}"
synth_gib="${MOEPACK_SYNTH_GIB:-4}"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEPACK_CUDA=ON -DMOEPACK_GUI=OFF \
  -DMOEPACK_WERROR=OFF "-DCMAKE_CUDA_ARCHITECTURES=90;120" -DMOEPACK_SHARED_DIR="$PWD/.device-carry/shared" \
  > "$out/cmake.log" 2>&1 || { tail -40 "$out/cmake.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" -- -k 0 > "$out/build.log" 2>&1 || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }
echo "== build ok"
ctest --test-dir build-gpu --output-on-failure -R "$tests" > "$out/ctest.log" 2>&1
tail -25 "$out/ctest.log"
./build-gpu/app/moepack devices --self-test --json > "$out/devices.json" 2> "$out/devices.txt"; cat "$out/devices.txt"
work=/tmp/moepack-device-bench
rm -rf "$work" && mkdir -p "$work"
./build-gpu/tests/packbuilder/make_synthetic_moe "$work/synth.gguf" "$synth_gib" > "$out/synth.json"
/usr/bin/time -v ./build-gpu/app/moepack build "$work/synth.gguf" -o "$work/pack" > "$out/build-pack.log" 2>&1
tail -3 "$out/build-pack.log"
for splits in 1 4; do
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
  ./build-gpu/app/moepack bench-io "$work/pack" --json --reads 400 --batch 6 --read-splits "$splits" \
    --raw-max-mib 4096 > "$out/bench-io-splits$splits.json" 2> "$out/bench-io-splits$splits.txt"
  cat "$out/bench-io-splits$splits.txt"
done
if [ -x build-gpu/tests/packbuilder/packbuilder_bench ]; then
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null
  TMPDIR="$work" ./build-gpu/tests/packbuilder/packbuilder_bench --gib 2 > "$out/pack-bench.json" 2>&1
  grep -E "ratio|MBps|error" "$out/pack-bench.json"
fi
rm -rf "$work"
