#!/usr/bin/env bash
# Builds the Python package (python/, docs/python.md) into a venv made from Debian's python3 and
# runs its tests with pytest. The extension module is built in build/ with the engine the rest
# of the build made there (python/setup.py). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's interpreter, which has python3-pybind11 and python3-pytest: the first python3 on PATH
# may be another one.
python=/usr/bin/python3
venv=build/python-venv
[ -x "$venv/bin/python" ] || "$python" -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --no-index --no-build-isolation ./python
# From another directory, so the tests import the installed package, not python/recourse.
cd python/tests
RECOURSE_ROOT="$OLDPWD" "../../$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
