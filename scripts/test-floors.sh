#!/usr/bin/env bash
# The dependency floors are tested: a venv (.venv-floors, no root) with every direct dependency at
# the lowest version pyproject.toml allows (scripts/floors.py: pandas 2.2, numpy 1.26, altair 5.5, ...),
# hostnet installed into it from this checkout, then the unit and integration tests. .venv tests the
# newest versions within the bounds. Rebuilt when pyproject.toml changes; about 45 s to build and
# 3.5 min to test on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/common.sh
PYTHON=${PYTHON:-python3}
VENV=.venv-floors
# the stamp holds the hash of the pyproject.toml the venv was built from (taken before building)
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$VENV/.installed-stamp" 2>/dev/null || true)" != "$want" ]; then
	rm -rf "$VENV"
	"$PYTHON" -m venv "$VENV"
	"$VENV/bin/python" scripts/floors.py pyproject.toml >"$VENV/floors.txt"
	echo "floors: $(tr '\n' ' ' <"$VENV/floors.txt")"
	"$VENV/bin/python" -m pip install --quiet -c "$VENV/floors.txt" . pytest hypothesis import-linter
	echo "$want" >"$VENV/.installed-stamp"
fi
# the checkout's hostnet is tested with the floors' libraries: pytest's pythonpath puts it first, and
# PYTHONPATH does for the kernels and processes the tests start (the venv's installed copy is as old
# as the stamp)
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$VENV/bin/python" -m pytest -q -p no:cacheprovider -m 'not live' tests/unit tests/integration
