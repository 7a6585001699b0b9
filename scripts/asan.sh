#!/usr/bin/env bash
# Builds the Catch2 unit suite (recourse_tests) and the command its tests run (recourse) with
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (g++, -O1, every UB report
# fatal) in build-asan/, then runs the suite under ctest (label `unit`). Any report fails the
# run, one from a `recourse` child process too (a test may not look at its exit status): the
# reports are written to build-asan/sanitizer/ and the run fails when a file is there.
#
#   scripts/asan.sh [CTEST_ARGS...]     e.g. scripts/asan.sh -R differential
#
# ccache is used when it is on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${RECOURSE_ASAN_BUILD:-build-asan}"

scripts/deps.sh
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# GCC 12 at -O1 with the sanitizers warns maybe-uninitialized inside libstdc++'s <regex>.
warnings="-Wno-maybe-uninitialized"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Debug keeps assertions; -O1 -g1 (line tables) builds fast and still gives file:line reports.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="$sanitize $warnings" -DCMAKE_EXE_LINKER_FLAGS="$sanitize" \
  -DRECOURSE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target recourse_tests recourse_cli

reports="$(cd "$build" && pwd)/sanitizer"
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="detect_leaks=1:exitcode=86:log_path=$reports/asan ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87:log_path=$reports/ubsan ${UBSAN_OPTIONS:-}"
status=0
ctest --test-dir "$build" -L unit -j"$(nproc)" --output-on-failure "$@" || status=$?
if [ -n "$(ls -A "$reports")" ]; then
  for f in "$reports"/*; do
    echo "== $f" >&2
    cat "$f" >&2
  done
  echo "scripts/asan.sh: sanitizer reports above ($reports)" >&2
  exit 1
fi
exit "$status"
