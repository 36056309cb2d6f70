# hostnet — the README's two commands are `make reproduce` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install system netperf test test-unit reproduce figures lint clean

install: system netperf $(STAMP)

system:
	bash scripts/install-system.sh

# netperf lives in Debian's non-free component: its own apt source file, nothing else changed.
netperf:
	bash scripts/install-netperf.sh

# Reinstalled only when the dependency list changes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The whole suite: unit tests, live tests on an embedded testbed (root), nbval on the notebooks.
test: install
	$(PY) -m pytest

test-unit: install
	$(PY) -m pytest -m 'not live'

# Build the embedded testbed, run every notebook live through papermill, write figures/.
reproduce: install
	$(VENV)/bin/hostnet figures --mode run

# Regenerate figures/ from the recorded runs in data/runs (no root, no testbed).
figures: install
	$(VENV)/bin/hostnet figures --mode replay

lint: install
	$(VENV)/bin/ruff check hostnet tests

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
