#!/bin/sh
# Builds the libFuzzer target over the GGUF reader with clang (ASan + UBSan) into build-fuzz/
# and prints the path of the binary on stdout (progress goes to stderr). Pass the path to an
# ordinary build as -DMOEPACK_FUZZER_BIN=... to get the ctest `fuzz_gguf_reader`.
#
# Usage: packaging/build-fuzzer.sh [BUILD_DIR]   (default: build-fuzz in the source root)
# Env:   CC / CXX (default clang-14 / clang++-14), JOBS (default: nproc)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$src/build-fuzz"}
cc=${CC:-clang-14}
cxx=${CXX:-clang++-14}
jobs=${JOBS:-$(nproc)}
for tool in "$cc" "$cxx" cmake ninja; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build-fuzzer.sh: $tool not found" >&2; exit 1; }
done
CC="$cc" CXX="$cxx" cmake -S "$src" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMOEPACK_FUZZ=ON -DMOEPACK_GUI=OFF -DMOEPACK_CUDA=OFF -DMOEPACK_TESTS=ON >&2
ninja -C "$build" -j "$jobs" gguf_fuzz >&2
bin="$build/tests/fuzz/gguf_fuzz"
[ -x "$bin" ] || { echo "build-fuzzer.sh: $bin was not built" >&2; exit 1; }
echo "$bin"
