"""Traffic patterns on the embedded testbed, through SshHost as on real servers."""
import os

import pytest

from conftest import live_ready
from hostnet import config as sc, runner, store, testbed
from hostnet.workloads import LongFlows

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


def _check(path, expected_flows):
    m = store.load_manifest(path)
    assert m["status"] == "ok", m.get("error")
    t = store.read_tidy(path)
    flows = t[t.metric == "flow_throughput_gbps"]
    assert len(flows) == expected_flows == len(m["flows"])
    assert (flows.value > 0.05).all(), flows  # every flow carried data
    total = t[t.metric == "throughput_gbps"].value.iloc[0]
    assert total == pytest.approx(flows.value.sum())
    assert t[t.metric == "tpc_gbps"].value.iloc[0] > 0
    return m, t


@pytest.mark.parametrize("pattern,n,flows", [("one-to-one", 2, 2), ("outcast", 2, 2)])
def test_patterns_through_netns(state_dir, tmp_path, pattern, n, flows):
    with testbed.embedded(f"q{pattern[0]}{os.getpid() % 10000}") as tb:
        path = runner.run_point(tb, sc.get_config("tsogro"), LongFlows(2, 1, pattern=pattern, n=n),
                                runs_dir=tmp_path, campaign=pattern, experiment=pattern)
    m, _ = _check(path, flows)
    assert "2 flows on 1 sender and 1 receiver" in m["cores"]  # 2 cores: the flows share them, and say so


@pytest.mark.parametrize("pattern,n,flows", [("incast", 2, 2), ("all-to-all", 2, 4)])
def test_patterns_through_ssh(state_dir, tmp_path, pattern, n, flows):
    with testbed.embedded(f"p{pattern[0]}{os.getpid() % 10000}", ssh=True) as tb:
        assert tb.sender.host.describe()["kind"] == "SshHost"
        path = runner.run_point(tb, sc.get_config("tsogro"), LongFlows(2, 1, pattern=pattern, n=n),
                                runs_dir=tmp_path, campaign=pattern, experiment=pattern)
    m, _ = _check(path, flows)
    assert m["testbed"]["endpoints"]["sender"]["host"]["kind"] == "SshHost"


def test_incast_from_two_sender_hosts_over_a_bridge(state_dir, tmp_path):
    with testbed.embedded(f"br{os.getpid() % 10000}", n_senders=2) as tb:
        assert len(tb.senders) == 2 and tb.switch is not None
        path = runner.run_point(tb, sc.get_config("all-opts"), LongFlows(2, 1, pattern="incast", n=2),
                                runs_dir=tmp_path, campaign="br", experiment="incast")
    m, _ = _check(path, 2)
    assert {f["sender"] for f in m["flows"]} == {"sender", "sender1"}
    assert m["applied"]["switch/mtu/" + tb.switch_ports[0]] == "9000"


def _cli(state_dir, *args):
    import subprocess
    import sys

    from conftest import REPO
    return subprocess.run([sys.executable, "-m", "hostnet.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env={**os.environ, "HOSTNET_STATE_DIR": str(state_dir)})


def test_testbed_check_prints_capabilities_through_ssh(state_dir):
    out = _cli(state_dir, "testbed", "check", "--ssh")
    assert out.returncode == 0, out.stderr
    for row in ("reachable", "hw_perf_counters", "ntuple_arfs", "ring_max", "ddio", "iommu", "netem", "tool:iperf3"):
        assert row in out.stdout
    assert "over SSH" in out.stdout
    assert testbed.status() == []


def test_point_needing_a_missing_capability_is_refused_up_front(state_dir, tmp_path):
    available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    if "dctcp" in available:
        pytest.skip("this kernel has dctcp")
    out = _cli(state_dir, "run", "incast", "--flows", "2", "--cc", "dctcp", "--duration", "1",
               "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and "lacks congestion control dctcp" in out.stderr
    assert not list(tmp_path.rglob("manifest.json"))  # refused before any point ran


@pytest.mark.parametrize("tool", ["sockperf", "netperf"])
def test_rpc_incast(state_dir, tmp_path, tool):
    import shutil

    from hostnet.workloads import RpcFlows
    if not shutil.which(tool):
        pytest.fail(f"{tool} is not installed: `make install` installs it")
    with testbed.embedded(f"rp{tool[0]}{os.getpid() % 10000}") as tb:
        path = runner.run_point(tb, sc.get_config("tsogro"),
                                RpcFlows(2, 1, pattern="incast", n=2, size_bytes=16384, tool=tool),
                                runs_dir=tmp_path, campaign="rpc", experiment="incast")
    m = store.load_manifest(path)
    assert m["status"] == "ok", m.get("error")
    t = store.read_tidy(path)
    tps = t[t.metric == "flow_transactions_per_s"]
    assert len(tps) == 2 and (tps.value > 100).all()
    assert len(t[t.metric == "flow_latency_p99_usec"]) == 2
    assert not m["contaminated"] or "netserver" not in str(m["load"])  # its children are ours
