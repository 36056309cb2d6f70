import os
import shutil
from pathlib import Path

import pytest

from hostnet.hosts import Host, HostError, Result

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parent.parent


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
