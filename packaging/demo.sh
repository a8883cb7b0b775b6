#!/usr/bin/env bash
# Sets up and builds MoePack, then starts it on the bundled demo model
# (resources/models/tiny-dsv3-wordnet, a small trained DeepSeek-V3-architecture MoE).
set -euo pipefail
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root_dir/packaging/setup.sh"
demo="$root_dir/resources/models/tiny-dsv3-wordnet/tiny-dsv3-wordnet-Q4_K_M.gguf"
if [ -x "$root_dir/build/app/moepack-studio" ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$root_dir/build/app/moepack-studio" --model "$demo"
fi
exec "$root_dir/build/app/moepack" inspect "$demo"
