#!/usr/bin/env bash
# First command: install what is missing, build, and replay the bundled trace of real-shaped
# tool failures through the bundled policies.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target recourse_cli
build/recourse check rules/examples
build/recourse replay --policy rules/examples rules/traces/sample.jsonl
