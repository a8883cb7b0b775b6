#!/usr/bin/env bash
# Sets up a Debian 12 machine for MoePack and builds it.
#   packaging/setup.sh [--build-dir DIR] [--werror] [--no-gui] [--no-cuda] [--deps-only] [-- CMAKE_ARGS...]
# Installs the Debian packages MoePack needs (idempotent: apt-get only runs when something is
# missing; works as root or through sudo), then configures and builds with CMake + Ninja.
set -euo pipefail

root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root_dir/build"
werror=OFF
gui=ON
cuda=""
deps_only=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --werror) werror=ON; shift ;;
    --no-gui) gui=OFF; shift ;;
    --no-cuda) cuda=OFF; shift ;;
    --deps-only) deps_only=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git
  liburing-dev libssl-dev nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev
  python3 python3-jinja2 python3-regex python3-jsonschema
  openssl
)
if [ "$gui" = ON ]; then
  packages+=(
    qt6-base-dev qt6-declarative-dev qt6-tools-dev qt6-tools-dev-tools qt6-charts-dev qt6-l10n-tools
    libqt6sql6-sqlite qml6-module-qtcharts qml6-module-qtquick qml6-module-qtquick-controls
    qml6-module-qtquick-layouts qml6-module-qtquick-window qml6-module-qtquick-templates
    qml6-module-qtquick-dialogs qml6-module-qtqml-workerscript qml6-module-qtcore
    qml6-module-qtqml-models qml6-module-qtquick-shapes qml6-module-qt-labs-folderlistmodel
    qml6-module-qt-labs-platform
    xvfb xauth imagemagick
    poppler-utils chromium
    fonts-dejavu-core fonts-wqy-microhei
  )
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${#missing[@]} Debian packages: ${missing[*]}" >&2
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
  echo "setup.sh: all Debian packages present" >&2
fi
[ "$deps_only" = 1 ] && exit 0

# The CUDA toolkit is not a Debian 12 package here; use it where it is installed.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
cuda_arg=()
if [ -n "$cuda" ]; then cuda_arg=(-DMOEPACK_CUDA="$cuda"); fi

cmake -S "$root_dir" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMOEPACK_GUI="$gui" -DMOEPACK_WERROR="$werror" "${cuda_arg[@]}" "${extra[@]}" >&2
cmake --build "$build_dir" -j "$(nproc)" >&2
echo "setup.sh: built into $build_dir" >&2
