#!/usr/bin/env bash
# Builds the engine on WebAssembly (js/wasm/CMakeLists.txt) with Debian 12's emscripten, into
# build-wasm/, and copies the module to js/wasm/recourse.cjs for the npm package in js/.
# Installs emscripten when em++ is missing. Usage: scripts/wasm.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-wasm}"
if ! command -v em++ >/dev/null; then
  echo "installing: emscripten"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y emscripten
fi
# Debian's emscripten runs its JavaScript optimizer with Debian's node-acorn, found here.
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
# Emscripten's cache (the system libraries it builds on first use) in the build tree when the
# system's is not writable.
[ -w /usr/share/emscripten/cache ] || export EM_CACHE="$PWD/$build/em-cache"
emcmake cmake -S js/wasm -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)"
cp "$build/recourse.cjs" js/wasm/recourse.cjs
