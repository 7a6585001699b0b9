#!/usr/bin/env bash
# The npm package's tests (js/, docs/javascript.md): builds the engine on WebAssembly
# (scripts/wasm.sh, which installs emscripten when missing), installs the dev dependencies from
# the committed lockfile (npm ci), checks the TypeScript declarations and runs js/test/ with
# node:test. The tests compare with the native command, build/recourse: build it first
# (scripts/test.sh does). Usage: scripts/js.sh [wasm-build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/wasm.sh "$@"
cd js
[ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] ||
  npm ci --no-audit --no-fund
npx --no-install tsc -p test/tsconfig.json
node --test test/*.test.js
