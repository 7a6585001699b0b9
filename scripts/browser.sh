#!/usr/bin/env bash
# The playground's browser test (playground/test/): Debian's chromium, headless, driven by
# puppeteer-core from playground/'s committed lockfile (npm ci). Installs chromium when it is
# missing (scripts/deps.sh lists it too), brings the engine's WebAssembly build up to date
# (scripts/wasm.sh; --no-build skips it when the module is there, as scripts/test.sh does right
# after scripts/js.sh built it) and saves a screenshot of the page at
# build/artifacts/playground.png. CHROMIUM=/path/to/chrome picks another browser.
# Usage: scripts/browser.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null; then
  echo "installing: chromium"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y chromium
fi
[ "${1:-}" = --no-build ] && [ -f js/wasm/recourse.cjs ] || scripts/wasm.sh >/dev/null
cd playground
[ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ] ||
  npm ci --no-audit --no-fund
# The whole run is bounded: a browser that hangs fails the test instead of the CI job.
node --test --test-timeout=180000 test/
