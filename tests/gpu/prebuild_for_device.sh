#!/usr/bin/env bash
# Builds gpu_ops_test and bench_cuda_backend here (a CUDA build of this checkout for sm_90,
# RelWithDebInfo, as tests/gpu/pass_build_and_test.sh builds them on the GPU machine) and packs them,
# without their debug sections, into .device-carry/prebuilt.tar.xz (~16 MiB) with the commit they were
# built from and a hash of their sources (tests/gpu/source_stamp.sh). A device call given
# MOEPACK_PREBUILT=1 (pass_build_and_test.sh) runs them instead of spending 200-270 s of its device time on
# the build; it builds as before when they are not that tree's or do not start there.
#   tests/gpu/prebuild_for_device.sh [BUILD_DIR]   (default /tmp/bcuda; configured if it is not)
# MOEPACK_PREBUILD_BINARIES (fifty-eighth session): the binaries to pack instead of the two, e.g.
# "gpu_ops_test gpu_cuda_backend_test gpu_deepseek4_test gpu_device_test" (~18 MiB: xz finds their common
# code), with SHARED_DIR, the fixtures' directory the engine tests were compiled with (MOEPACK_SHARED_DIR),
# for tests/gpu/prebuilt_engine_one_call.sh to link the carried fixtures there.
# Run from the repository root with nvcc on PATH. The working tree must be clean (the stamp names the
# commit); the device call checks the sources' hash against its own copy of the tree.
set -eu
build="${1:-/tmp/bcuda}"
[ -z "$(git status --porcelain --untracked-files=no)" ] || { echo "prebuild: commit first" >&2; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOEPACK_CUDA=ON -DMOEPACK_GUI=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=90
fi
home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
[ "$(readlink -f "$home")" = "$(readlink -f .)" ] || { echo "prebuild: $build is configured from $home" >&2; exit 1; }
grep -q '^CMAKE_BUILD_TYPE:STRING=RelWithDebInfo$' "$build/CMakeCache.txt" ||
  { echo "prebuild: $build is not a RelWithDebInfo build" >&2; exit 1; }
arch=$(grep -o 'generate-code=arch=compute_[0-9]*' "$build/build.ninja" | sort -u | tr '\n' ' ')
[ "$arch" = "generate-code=arch=compute_90 " ] || { echo "prebuild: $build is built for $arch, not sm_90 alone" >&2; exit 1; }
binaries="${MOEPACK_PREBUILD_BINARIES:-gpu_ops_test bench_cuda_backend}"
# shellcheck disable=SC2086 # the list splits into targets
cmake --build "$build" --target $binaries
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for b in $binaries; do
  strip --strip-debug -o "$stage/$b" "$build/tests/gpu/$b"
done
sed -n 's/^MOEPACK_SHARED_DIR:[A-Z]*=//p' "$build/CMakeCache.txt" > "$stage/SHARED_DIR"
source tests/gpu/source_stamp.sh
echo "$(git rev-parse --short HEAD) $(source_stamp)" > "$stage/COMMIT"
mkdir -p .device-carry
tar -C "$stage" -cf - . | xz -T0 -9 > .device-carry/prebuilt.tar.xz.tmp
mv .device-carry/prebuilt.tar.xz.tmp .device-carry/prebuilt.tar.xz
echo "prebuilt $(cat "$stage/COMMIT"): .device-carry/prebuilt.tar.xz $(($(stat -c %s .device-carry/prebuilt.tar.xz) >> 20)) MiB"
