#!/usr/bin/env bash
# The playground (playground/, docs/javascript.md, "The playground") for a person: builds the
# engine on WebAssembly (scripts/wasm.sh, which installs emscripten when missing), assembles the
# static site into build/playground/ (playground/build.mjs) and serves it on 127.0.0.1 with a
# small static server (playground/serve.mjs, Node's http module), printing the address; Ctrl-C
# stops it. Nothing runs on the server but file reads: the page compiles, tests and decides in
# the browser. Usage: scripts/playground.sh [port] (default 8765; 0 picks a free one)
set -euo pipefail
cd "$(dirname "$0")/.."
port="${1:-8765}"
echo "building the WebAssembly module and the page"
scripts/wasm.sh >/dev/null
node playground/build.mjs build/playground >/dev/null
exec node playground/serve.mjs build/playground "$port"
