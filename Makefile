# hostnet — the README's two commands are `make reproduce` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install venv system netperf native test test-servers test-unit test-floors reproduce reproduce-paper figures notebook-outputs lint clean bench bench-quick kernel-boot-test guest-kernel test-nic

install: system netperf $(STAMP) native guest-kernel

# The Python side alone, no root: replay, figures, notebooks, classify, compare, the report.
venv: $(STAMP)

system:
	bash scripts/install-system.sh

# netperf lives in Debian's non-free component: its own apt source file, nothing else changed.
netperf:
	bash scripts/install-netperf.sh

# The NIC rehearsal's guest kernel: Debian's package unpacked into $HOSTNET_GUEST_KERNEL (default
# /var/tmp/hostnet-guest-kernel), never installed on the host (scripts/install-guest-kernel.sh).
guest-kernel: system
	bash scripts/install-guest-kernel.sh

# hostnet's C tools (udpbatch, microbench): a clear error when there is no C compiler.
native: $(STAMP)
	$(PY) -m hostnet.native

# The exact versions of uv.lock (every library, the dev and lab extras, hostnet editable), so
# figures and the nbval-checked tables do not depend on the day's releases; pyproject.toml keeps the
# ranges a library user gets. --locked: a lock that no longer matches pyproject.toml is an error
# (`uv lock` makes a new one), never silently re-resolved. Reinstalled when either file changes.
# --compile-bytecode, and hostnet compiled too: with PYTHONDONTWRITEBYTECODE set (as on this machine
# and many CI images) Python never writes a .pyc, and every process compiled pandas, scipy and altair
# from source: half of a replayed notebook's CPU (docs/performance.md, issue 44). Stale .pyc files
# are recompiled in memory, never trusted.
UV_VERSION := 0.13.8
$(STAMP): pyproject.toml uv.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip uv==$(UV_VERSION)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(VENV)/bin/uv sync --quiet --locked --inexact --extra dev --python $(PY) \
		--compile-bytecode
	$(PY) -m compileall -q hostnet bench
	touch $(STAMP)

# The whole suite: the floors' import contracts (import-linter), unit tests, live tests on an
# embedded testbed (root; --live asks for them), nbval on the notebooks; then the unit tests again
# at the dependency floors.
test: install
	$(VENV)/bin/lint-imports
	$(PY) -m pytest --live -m 'not rehearsal and not nic' --durations=15
	$(MAKE) test-floors

# The notebooks on the two-server rehearsal (embedded namespaces behind sshds and a bastion, driven
# through a testbed.yaml): about 13 minutes, as each point pays SSH's harness time (issue 18).
test-servers: install
	$(PY) -m pytest --live -m rehearsal --durations=15

# The NIC rehearsal: two QEMU guests with an emulated e1000e, every NIC-facing knob against their
# driver, a killed session restored, a paced ladder point (tests/live/test_live_nic_rehearsal.py);
# a virtio pair behind an emulated IOMMU, its profile's DMA mapping (test_live_nic_iommu.py); 37 min on
# 2026-12-02.
# Under TCG every SSH command costs ~0.7 s, so it is a CI step of its own, not part of make test's 30 minutes.
test-nic: install
	$(PY) -m pytest --live -m nic --durations=15 -s tests/live/test_live_nic_rehearsal.py tests/live/test_live_nic_iommu.py

# The lowest versions pyproject.toml allows, in .venv-floors (scripts/test-floors.sh; no root).
test-floors:
	bash scripts/test-floors.sh

# tests/unit alone, on both cores (pytest-xdist; nbval's plugin, which only the notebooks need, not
# loaded): the inner loop of development, ~85 s on 2 cores (docs/performance.md). Bytecode is
# written even where PYTHONDONTWRITEBYTECODE is set (this machine): pytest then keeps each test
# module's rewritten code in __pycache__ instead of compiling ~100 files anew per worker (5 s).
# make test runs these too, with everything else; tests/integration/ holds the heavy-process ones.
test-unit: $(STAMP) native
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -p no:nbval -n 2 -q tests/unit

# Build the embedded testbed, run every notebook live through papermill, write figures/.
# The quick profile (3 s points, 3 repetitions, then top-ups until the verdicts decide) took 29 min
# on 2 cores on 2026-11-25 (docs/verdicts.md); reproduce-paper uses the paper's 20 s points and 5
# repetitions (hours).
reproduce: install
	$(VENV)/bin/hostnet figures --mode run --profile quick

reproduce-paper: install
	$(VENV)/bin/hostnet figures --mode run --profile paper

# Execute every notebook in replay mode and store its outputs (nbval compares the marked cells).
notebook-outputs: $(STAMP)
	$(VENV)/bin/hostnet notebooks store-outputs

# Regenerate figures/ from the recorded runs in data/runs (no root, no testbed, no system package).
figures: $(STAMP)
	$(VENV)/bin/hostnet figures --mode replay

# hostnet's own fidelity and speed (bench/): results in bench/results/, summary in docs/performance.md.
bench: install
	$(PY) -m bench

bench-quick: install
	$(PY) -m bench --quick

# kernel_patch/: build a reduced-config patched kernel and boot it under QEMU (TCG); about 5 min,
# root. (The cheaper check.sh -- applies + compiles -- runs inside `make test`.) Exit 77 = the
# script printed why it skipped (no root or no apt-get): not a failure, unless
# HOSTNET_KERNEL_REQUIRED=1 (CI), where the script fails instead of skipping.
kernel-boot-test:
	bash kernel_patch/boot-test.sh || { rc=$$?; [ $$rc -eq 77 ] && [ "$${HOSTNET_KERNEL_REQUIRED:-0}" != 1 ]; }

lint: install
	$(VENV)/bin/ruff check hostnet tests

clean:
	rm -rf $(VENV) .venv-floors .pytest_cache build
