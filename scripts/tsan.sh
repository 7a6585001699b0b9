#!/usr/bin/env bash
# Builds the reload stress test (tests/reload_stress.cpp: concurrent decide() with hot reloads,
# log changes and counter reads) with ThreadSanitizer in build-tsan/ and runs it; any data race
# fails the run. Installs libtsan2 (GCC's TSan runtime) with apt-get when missing.
#
#   scripts/tsan.sh [THREADS] [RELOADS]
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${1:-4}"
reloads="${2:-300}"
build="${RECOURSE_TSAN_BUILD:-build-tsan}"

scripts/deps.sh
if ! dpkg -s libtsan2 >/dev/null 2>&1; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y libtsan2
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build "$build" --target reload_stress -j"$(nproc)"
TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" "$build/reload_stress" "$threads" "$reloads"
