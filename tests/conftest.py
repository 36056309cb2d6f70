"""Shared helpers and fixtures for every test (tests import them as `from conftest import ...`).

Layout (the rule below is enforced at collection):
- unit/ mirrors hostnet/: a test of hostnet/X/Y.py is unit/X/test_Y.py, of hostnet/Y.py
  unit/test_Y.py, of a package's __init__.py unit/X/test_X.py. Where two hostnet modules share a
  name (base, counters, rx_prof, native) the file is unit/X/test_X_Y.py. Tests of what is not
  hostnet: test_bench.py (bench/), test_kernel_patch.py (kernel_patch/), test_scripts.py (shell
  scripts), test_layout.py (the code's shape). No root, no testbed.
- live/: every test marked `live` (root, network namespaces), and only those; files are
  test_live_<what they exercise>.py with a module-level `pytestmark` that includes pytest.mark.live.
- notebooks/: the notebooks themselves (papermill, nbval, conventions) and the report in Chromium.
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


@pytest.hookimpl(tryfirst=True)  # before -m deselects anything
def pytest_collection_modifyitems(config, items):
    bad = live_rule_violations((i.nodeid, i.path, i.get_closest_marker("live") is not None) for i in items)
    if bad:
        raise pytest.UsageError("tests/live/ holds the live tests, and only those:\n  " + "\n  ".join(bad))


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


def pytest_terminal_summary(terminalreporter):
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


# --- headless Chromium with no network but loopback (the report, notebooks in JupyterLab, flame graphs)
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="Debian packages chromium and "
                                    "chromium-driver are not installed (make install adds them)")
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# What a fetch off this machine logs under offline_chromium: its proxy is a closed loopback port.
BLOCKED = "net::ERR_PROXY_CONNECTION_FAILED"


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def offline_chromium(tmp_path, monkeypatch):
    """A factory of headless Chromium drivers that reach nothing but this machine: every request
    goes through a proxy on a closed loopback port (loopback itself bypasses proxies) and no name
    resolves; selenium-manager is told never to fetch a driver (both paths are given)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    monkeypatch.setenv("SE_OFFLINE", "true")
    drivers = []

    def start(window: str = "1200,2400"):
        profile = tmp_path / f"chromium-profile-{len(drivers)}"
        profile.mkdir()
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for flag in BROWSER_FLAGS + [f"--window-size={window}", f"--user-data-dir={profile}",
                                     f"--proxy-server=http://127.0.0.1:{free_port()}",
                                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]:
            opts.add_argument(flag)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        drivers.append(webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts))
        return drivers[-1]
    yield start
    for d in drivers:
        d.quit()


def console_errors(driver) -> list[dict]:
    """The SEVERE browser-console entries since the last call (reading the log empties it)."""
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def fetch_is_blocked(driver, url: str = "https://cdn.jsdelivr.net/npm/vega@6") -> bool:
    """Whether a page's fetch of an outside URL fails at the blocking proxy (and not for another reason)."""
    driver.get_log("browser")
    outcome = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0]).then(() => done('fetched'), () => done('failed'))", url)
    return outcome == "failed" and any(BLOCKED in e["message"] for e in console_errors(driver))


def drawn_share(png: bytes) -> float:
    """Share of a screenshot's pixels that differ from its most common colour (the background)."""
    import io

    from PIL import Image
    image = Image.open(io.BytesIO(png)).convert("RGB")
    counts = image.getcolors(image.width * image.height)
    return 1 - max(n for n, _ in counts) / (image.width * image.height)
