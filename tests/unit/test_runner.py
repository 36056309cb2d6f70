"""hostnet.runner: the measurement-window check, and a point whose SSH link drops during the window
(a fake fabric connection, conftest.FakeRemote): it ends as a failed run directory with the reason,
never an escaping HostError, a .partial left behind or one connect timeout per process."""
import json

import pytest

from conftest import FakeRemote
from hostnet import config as stackconfig, runner
from hostnet.hosts import SshHost
from hostnet.knobs import KNOBS, Journal
from hostnet.runner import RunFailed, WindowTooShort, check_window
from hostnet.testbed import Endpoint, Testbed
from hostnet.workloads import LongFlows

RMEM = "net.core.rmem_max"
PRIOR, SET = "212992", "4194304"


def test_a_window_of_a_quarter_or_more_is_accepted():
    check_window(0.5, 2, 1)
    check_window(2.5, 3, 8)


def test_a_window_under_a_quarter_of_the_run_is_refused_with_the_reason():
    with pytest.raises(WindowTooShort, match=r"0\.00 s is under a quarter of the 2 s run: starting 8 flows"):
        check_window(0.0001, 2, 8)
    with pytest.raises(WindowTooShort):
        check_window(0.74, 3, 1)


def ssh_testbed(tmp_path, monkeypatch, remote: FakeRemote) -> Testbed:
    """Sender and receiver on one server reached over (fake) SSH; applying a point's config is one
    journaled sysctl, so a restore has something to put back."""
    remote.files[f"/proc/sys/{RMEM.replace('.', '/')}"] = PRIOR + "\n"
    remote.install(monkeypatch)
    host = SshHost("198.18.0.9", name="lab", insecure_accept_unknown_keys=True)
    eps = {role: Endpoint(role, host, "enp1s0", ip, [cpu], "lab")
           for role, ip, cpu in (("sender", "198.18.0.1", 0), ("receiver", "198.18.0.2", 1))}

    def apply(tb, cfg, workload, rd):
        tb.journal.set(host, KNOBS["sysctl"], RMEM, SET)
        rd.manifest["applied"] = {RMEM: SET}
    monkeypatch.setattr(runner, "_apply", apply)
    return Testbed("lab", "servers", eps, {"lab": host}, Journal(tmp_path / "state" / "lab.journal"))


VERSIONS = {"lab": {"kernel": "6.12.0", "perf": "perf 6.12"}}


def test_a_link_that_drops_during_the_window_fails_the_point_with_the_reason(tmp_path, monkeypatch):
    remote = FakeRemote()
    tb = ssh_testbed(tmp_path, monkeypatch, remote)
    # /proc/stat is read as the window opens; the link drops 0.1 s into the 0.5 s window
    remote.drop_after(0.1, when=lambda argv: argv == ["cat", "/proc/stat"])
    with pytest.raises(RunFailed, match=r"lab: SSH link lost during ethtool") as err:
        runner.run_point(tb, stackconfig.get_config("tsogro"), LongFlows(1, 0), runs_dir=tmp_path / "runs",
                         campaign="c", run_id="p-r0", versions=VERSIONS, profile=False)
    assert "run directory: " in str(err.value)
    cdir = tmp_path / "runs" / "c"
    assert [p.name for p in cdir.iterdir()] == ["p-r0"]  # written and renamed: no .partial left
    m = json.loads((cdir / "p-r0" / "manifest.json").read_text())
    assert m["status"] == "failed" and m["error"].startswith("HostUnreachable: lab: SSH link lost during ethtool")
    assert m["unreachable"] == ["lab: unreachable (No route to host)"]
    out = (cdir / "p-r0" / "raw" / "server0.output.txt").read_text()
    assert out.startswith("iperf3 -s") and "not stopped, output not read: lab: unreachable" in out
    # once the link is known dead no process is tried again: one reconnect, not one per process
    assert remote.refused == 1
    # the setting stays journaled, to be put back when the server answers
    assert [e["prior"] for e in tb.journal.entries()] == [PRIOR]
