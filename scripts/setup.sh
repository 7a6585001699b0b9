#!/usr/bin/env bash
# First command: install what is missing, build the `recourse` command alone (Release), check the
# bundled policies and replay the bundled trace of real-shaped tool failures through them.
# scripts/test.sh then builds everything else in the same build/ (also Release).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# Ninja for a new build tree (an existing one keeps its generator): it compiles the command's
# sources while the library's last ones build, where make waits for the whole library.
export CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target recourse_cli
build/recourse check rules/examples
build/recourse replay --policy rules/examples rules/traces/sample.jsonl
