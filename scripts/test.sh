#!/usr/bin/env bash
# Second command: build everything and run all the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
# The bundled policies' own tests (docs/language.md, section 16).
build/recourse test rules/
