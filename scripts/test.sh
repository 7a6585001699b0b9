#!/usr/bin/env bash
# Second command: build everything and run all the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# Ninja for a new build tree (an existing one keeps its generator): it compiles the command's
# sources while the library's last ones build, where make waits for the whole library.
export CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
# The bundled policies' own tests (docs/language.md, section 16).
build/recourse test rules/
# The Python package (python/, docs/python.md): built in build/, tested with pytest.
scripts/python.sh
# The npm package: the engine on WebAssembly and its tests (docs/javascript.md).
scripts/js.sh
# The playground in a real browser: headless chromium driven by puppeteer-core (playground/),
# on the module scripts/js.sh just built.
scripts/browser.sh --no-build
