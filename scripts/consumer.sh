#!/usr/bin/env bash
# Installs recourse from a built tree (default build/, as scripts/test.sh leaves it) into a
# temporary prefix, then builds examples/host.cpp against the installed package twice, with
# find_package(recourse) (examples/consumer/) and with pkg-config, and runs both and the
# installed command on rules/examples. Nothing is left behind.
#
#   scripts/consumer.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/recourse" check rules/examples

echo "consumer: find_package(recourse)"
cmake -S examples/consumer -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/host" rules/examples

echo "consumer: pkg-config recourse"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH="$(dirname "$(find "$prefix" -name recourse.pc)")"
# shellcheck disable=SC2046 # the flags are a list of words
c++ -std=c++17 examples/host.cpp -o "$work/host" $(pkg-config --cflags --libs recourse)
# (a shared librecourse, from BUILD_SHARED_LIBS=ON, is found in the prefix)
LD_LIBRARY_PATH="$(pkg-config --variable=libdir recourse)" "$work/host" rules/examples
