"""Bad input gives one line saying what to do, before any host is touched."""
import subprocess
import sys

import pytest

from conftest import REPO


def hostnet(*args, **kw):
    return subprocess.run([sys.executable, "-m", "hostnet.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=60, **kw)


@pytest.mark.parametrize("args,msg", [
    (["--config", "turbo"], "unknown config 'turbo'"),
    (["--duration", "0"], "duration must be > 0"),
    (["--repetitions", "0"], "repetitions >= 1"),
])
def test_bad_run_arguments(args, msg):
    out = hostnet("run", "single-flow", *args)
    assert out.returncode == 2
    assert msg in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_unknown_experiment_is_refused():
    out = hostnet("run", "warp-drive")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_not_root_is_refused_before_touching_hosts(monkeypatch):
    from hostnet import cli
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "single-flow", "--duration", "1"])
    assert exc.value.code == 2


def test_missing_tools_are_named(monkeypatch, capsys):
    from hostnet import cli
    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    monkeypatch.setattr(cli.LocalHost, "which", lambda self, tool: None if tool == "iperf3" else "/bin/x")
    with pytest.raises(SystemExit):
        cli.main(["run", "single-flow"])
    assert "missing iperf3" in capsys.readouterr().err


def test_status_without_testbed(tmp_path):
    import os
    out = hostnet("testbed", "status", env={**os.environ, "HOSTNET_STATE_DIR": str(tmp_path)})
    assert out.returncode == 0 and "no embedded testbed is up" in out.stdout
