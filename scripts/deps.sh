#!/usr/bin/env bash
# Installs the Debian packages recourse builds with, when they are missing.
set -euo pipefail
packages=(cmake g++ make ninja-build pkg-config tao-pegtl-dev nlohmann-json3-dev libfmt-dev catch2 libcli11-dev
  python3 libbenchmark-dev libsimdjson-dev libsqlite3-dev libhiredis-dev redis-server)
# node and npm for the editor grammar's test (editors/); any install of them will do (a nodejs
# package from elsewhere may bundle npm and conflict with Debian's npm).
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
# The Python package (python/, scripts/python.sh): pybind11, Debian's python3 headers, venv, pytest.
packages+=(python3-dev python3-venv pybind11-dev python3-pybind11 python3-pytest)
# The playground's browser test (playground/, scripts/browser.sh): Debian's chromium, headless.
packages+=(chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y "${missing[@]}"
fi
