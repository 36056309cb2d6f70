"""Shared helpers and fixtures for every test (tests import them as `from conftest import ...`).

Layout (the rule below is enforced at collection):
- unit/ mirrors hostnet/: a test of hostnet/X/Y.py is unit/X/test_Y.py, of hostnet/Y.py
  unit/test_Y.py, of a package's __init__.py unit/X/test_X.py. Where two hostnet modules share a
  name (base, counters, rx_prof, native) the file is unit/X/test_X_Y.py. Tests of what is not
  hostnet: test_bench.py (bench/), test_kernel_patch.py (kernel_patch/), test_scripts.py (shell
  scripts), test_layout.py (the code's shape), test_packaging.py (pyproject.toml, environment.yml,
  the dependency floors, LICENSE, CITATION.cff). No root, no testbed.
- live/: every test marked `live` (root, network namespaces), and only those; files are
  test_live_<what they exercise>.py with a module-level `pytestmark` that includes pytest.mark.live.
  They run only when asked for (`pytest --live` or HOSTNET_LIVE=1; `make test` does); otherwise
  each is skipped and the summary says how many.
- notebooks/: the notebooks themselves (papermill, nbval, conventions), the report in Chromium, and
  the wheel installed in a fresh venv, replaying a notebook of a copied checkout.
- fixtures/: captured tool output; fixtures/README.md says how each was captured.
Basenames are unique across tests/ (there are no __init__.py files).
"""
import os
import shutil
from pathlib import Path

import pytest

from hostnet.hosts import Host, HostError, Result

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent

# Live sections top a campaign up until its verdicts are decided (hostnet.topup); the live tests
# check their sweeps, and the loop is tested on a fake runner (unit/test_topup.py): no top-up here,
# or a test's 1-repetition sweep would spend the default budget (30 runs) on it. Kernels papermill
# starts inherit it.
os.environ.setdefault("HOSTNET_TOP_UP_RUNS", "0")


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def gather(chunks, sizes: list | None = None) -> bytes:
    """A Host.stream sink: the whole output, noting each chunk's size in `sizes`."""
    out = b""
    for chunk in chunks:
        if sizes is not None:
            sizes.append(len(chunk))
        out += chunk
    return out


class FakeHost(Host):
    """A host whose files live in a dict and whose commands are recorded, not run."""

    def __init__(self, name="fake", files=None, handlers=None):
        self.name = name
        self.files = dict(files or {})
        self.handlers = handlers or {}
        self.commands: list[list[str]] = []

    def run(self, argv, *, check=True, timeout=120, input=None):
        argv = list(argv)
        self.commands.append(argv)
        handler = self.handlers.get(argv[0])
        if handler is None:
            raise HostError(f"{self.name}: {argv[0]} is not installed")
        rc, out, err = handler(argv, self)
        res = Result(tuple(argv), rc, out, err)
        if check and rc != 0:
            raise HostError(f"{self.name}: {' '.join(argv)} exited {rc}: {err.strip()}")
        return res

    def read_text(self, path):
        if path not in self.files:
            raise HostError(f"{self.name}: cannot read {path}: No such file")
        return self.files[path]

    def write_text(self, path, text):
        if path not in self.files:
            raise HostError(f"{self.name}: cannot write {path}: No such file")
        self.files[path] = text

    def which(self, tool):
        return f"/usr/bin/{tool}" if tool in self.handlers else None

    def describe(self):
        return {"name": self.name, "kind": "FakeHost"}


@pytest.fixture
def fake_host():
    return FakeHost()


LIVE_DIR = Path(__file__).parent / "live"


def live_rule_violations(items, live_dir: Path = LIVE_DIR) -> list[str]:
    """(node id, path, marked live) of collected tests -> one line per test that breaks the rule:
    a test under live/ must be marked live, and a test marked live must be under live/."""
    out = []
    for nodeid, path, marked in items:
        inside = Path(path).resolve().is_relative_to(Path(live_dir).resolve())
        if inside and not marked:
            out.append(f"{nodeid}: under {Path(live_dir).name}/ but not marked live")
        elif marked and not inside:
            out.append(f"{nodeid}: marked live but not under {Path(live_dir).name}/")
    return out


# Live tests change the host (namespaces, sysctls, an apt install, a kernel build): only on request.
LIVE_ENV = "HOSTNET_LIVE"
LIVE_OFF = f"live tests are opt-in: pytest --live or {LIVE_ENV}=1 (root; make test sets it)"


def pytest_addoption(parser):
    parser.addoption("--live", action="store_true",
                     help=f"also run the live tests (tests/live/: root, network namespaces, host settings, "
                          f"apt installs, a kernel build); the same as {LIVE_ENV}=1")


def live_requested(config) -> bool:
    return bool(config.getoption("--live")) or os.environ.get(LIVE_ENV, "") not in ("", "0")


@pytest.hookimpl(tryfirst=True)  # before -m deselects anything
def pytest_collection_modifyitems(config, items):
    bad = live_rule_violations((i.nodeid, i.path, i.get_closest_marker("live") is not None) for i in items)
    if bad:
        raise pytest.UsageError("tests/live/ holds the live tests, and only those:\n  " + "\n  ".join(bad))
    if not live_requested(config):
        for item in items:
            if item.get_closest_marker("live"):
                item.add_marker(pytest.mark.skip(reason=LIVE_OFF))


def live_ready() -> str | None:
    """Why live tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "live tests need root (network namespaces)"
    missing = [t for t in ("ip", "iperf3", "perf", "ethtool") if not shutil.which(t)]
    if missing:
        return f"missing {', '.join(missing)} (make install)"
    return None


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    d = tmp_path / "state"
    monkeypatch.setenv("HOSTNET_STATE_DIR", str(d))
    return d


_SUMMARY: list[str] = []


@pytest.fixture
def summary_line():
    """Lines a test wants shown at the end of the run (e.g. fault-injection counts)."""
    return _SUMMARY.append


def live_skipped(reports) -> int:
    """How many of these test reports were skipped because live tests were not asked for."""
    return sum(1 for r in reports if isinstance(r.longrepr, tuple) and LIVE_OFF in str(r.longrepr[2]))


def pytest_terminal_summary(terminalreporter):
    skipped = live_skipped(terminalreporter.stats.get("skipped", []))
    if skipped:
        terminalreporter.write_line(f"hostnet: {skipped} live tests skipped ({LIVE_OFF})", yellow=True)
    if _SUMMARY:
        terminalreporter.section("hostnet measurements")
        for line in _SUMMARY:
            terminalreporter.write_line(line)


@pytest.fixture
def built_report(tmp_path):
    """The report over the committed figures and their metadata (as `make figures` leaves them)."""
    from hostnet import report
    figs = tmp_path / "figures"
    shutil.copytree(REPO / "figures", figs, ignore=shutil.ignore_patterns("index.html"))
    return report.build(figs)


# --- the patched kernel's rx_prof output ------------------------------------------------------
RX_PROF_CONSOLE = "rx_prof_console.txt"  # serial console of kernel_patch/boot-test.sh (see fixtures/README.md)


def rx_prof_phase(name):
    """One phase's /proc/net/rx_prof text as the guest printed it."""
    lines = fixture_text(RX_PROF_CONSOLE).replace("\r", "").splitlines()
    start = lines.index(f"=== RXPROF phase {name}")
    end = lines.index("=== RXPROF end", start)
    return "\n".join(lines[start + 1:end]) + "\n"


def patched_kernel_host():
    """A host whose kernel has the whole rx_prof series (its file and sysctls) and bpftrace."""
    from hostnet import kernel_source
    files = {kernel_source.RX_PROF_FILE: rx_prof_phase("start")}
    files.update({f"/proc/sys/net/core/{n}": "0\n" for n in kernel_source.RX_PROF_SYSCTLS})
    return FakeHost("patched", files=files, handlers={"bpftrace": lambda a, h: (0, "", "")})


# --- a fake real-server testbed, for the live paths of sections that need hardware -------------
class RecordingJournal:
    """Counts restores and keeps the last setting, instead of writing anything."""
    restored = 0

    def restore(self):
        self.restored += 1
        return []

    def set(self, host, knob, key, value):
        self.last = (knob.name, key, value)


def servers_testbed(receiver_host):
    """A two-server testbed ("servers" kind) with a fake sender and the given receiver host."""
    from hostnet.testbed import Endpoint, Testbed
    eps = {"sender": Endpoint("sender", FakeHost("tx"), "enp1", "198.18.0.1", [0, 1], "tx"),
           "receiver": Endpoint("receiver", receiver_host, "enp37s0f1", "198.18.0.2", [12, 13], "rx")}
    return Testbed("yaml", "servers", eps, {"tx": eps["sender"].host, "rx": receiver_host}, RecordingJournal())


def capture_sweeps(monkeypatch, tmp_path, tb):
    """The sweeps a section's run_live would start, built and validated but not run."""
    from hostnet import sweep
    from hostnet.testbed import servers
    specs = []

    def run_sweep(t, spec, *, runs_dir, campaign, progress=True):
        specs.append((t, spec))
        return {"campaign_dir": str(tmp_path)}

    monkeypatch.setattr(servers, "from_yaml", lambda path: tb)
    monkeypatch.setattr(sweep, "run_sweep", run_sweep)
    return specs
