#!/usr/bin/env bash
# Sets up, builds (warnings as errors) and runs MoePack's whole test suite; the output ends
# with CTest's summary. Used verbatim by .ci/run.
#   packaging/test.sh [CTEST_ARGS...]     e.g. packaging/test.sh -L unit
set -euo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root_dir/build"

"$root_dir/packaging/setup.sh" --deps-only
# The libFuzzer target needs clang; it is built apart and run as one of the tests.
fuzzer=""
if [ -x "$root_dir/packaging/build-fuzzer.sh" ]; then
  fuzzer="$("$root_dir/packaging/build-fuzzer.sh")"
fi
"$root_dir/packaging/setup.sh" --build-dir "$build_dir" --werror -- -DMOEPACK_FUZZER_BIN="$fuzzer"

export QT_QPA_PLATFORM=offscreen
cd "$build_dir"
exec ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
