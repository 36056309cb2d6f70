"""Traffic patterns on the embedded testbed, through network namespaces and through SshHost as on
real servers, and the traffic-pattern section (hostnet.sections.patterns) in a quick profile, as
notebook 04 runs it."""
import os

import pytest

from conftest import REPO, live_ready
from hostnet.analysis.verdicts import SAME_EXPERIMENT
from hostnet.measure.options import LiveOptions
from hostnet.measure import config as sc, runner
from hostnet import store, testbed
from hostnet.sections import patterns
from hostnet.derive.workloads import LongFlows

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
        path = runner.run_point(tb, runner.RunRequest(sc.get_config("tsogro"), LongFlows(2, 1, pattern=pattern, n=n),
                                                     tmp_path, pattern, experiment=pattern))
    m, _ = _check(path, flows)
    assert "2 flows on 1 sender and 1 receiver" in m["cores"]  # 2 cores: the flows share them, and say so


@pytest.mark.parametrize("pattern,n,flows", [("incast", 2, 2), ("all-to-all", 2, 4)])
def test_patterns_through_ssh(state_dir, tmp_path, pattern, n, flows):
    with testbed.embedded(f"p{pattern[0]}{os.getpid() % 10000}", ssh=True) as tb:
        assert tb.sender.host.describe()["kind"] == "SshHost"
        # 4 s flows: a session's first point over SSH closes its window measure.window.EDGE_REMOTE_FIRST_S
        # early, and closing 4 endpoints through their sshds took over 2 s on a slow day
        path = runner.run_point(tb, runner.RunRequest(sc.get_config("tsogro"), LongFlows(4, 1, pattern=pattern, n=n),
                                                     tmp_path, pattern, experiment=pattern))
    m, _ = _check(path, flows)
    assert m["testbed"]["endpoints"]["sender"]["host"]["kind"] == "SshHost"


def test_incast_from_two_sender_hosts_over_a_bridge(state_dir, tmp_path):
    with testbed.embedded(f"br{os.getpid() % 10000}", n_senders=2) as tb:
        assert len(tb.senders) == 2 and tb.switch is not None
        path = runner.run_point(tb, runner.RunRequest(sc.get_config("all-opts"), LongFlows(2, 1, pattern="incast", n=2),
                                                     tmp_path, "br", experiment="incast"))
    m, _ = _check(path, 2)
    assert {f["sender"] for f in m["flows"]} == {"sender", "sender1"}
    assert m["applied"]["switch/mtu/" + tb.switch_ports[0]] == "9000"


@pytest.mark.parametrize("tool", ["sockperf", "netperf"])
def test_rpc_incast(state_dir, tmp_path, tool):
    import shutil

    from hostnet.derive.workloads import RpcFlows
    if not shutil.which(tool):
        pytest.fail(f"{tool} is not installed: `make install` installs it")
    with testbed.embedded(f"rp{tool[0]}{os.getpid() % 10000}") as tb:
        path = runner.run_point(tb, runner.RunRequest(
            sc.get_config("tsogro"), RpcFlows(2, 1, pattern="incast", n=2, size_bytes=16384, tool=tool),
            tmp_path, "rpc", experiment="incast"))
    m = store.load_manifest(path)
    assert m["status"] == "ok", m.get("error")
    t = store.read_tidy(path)
    tps = t[t.metric == "flow_transactions_per_s"]
    assert len(tps) == 2 and (tps.value > 100).all()
    assert len(t[t.metric == "flow_latency_p99_usec"]) == 2
    assert not m["contaminated"] or "netserver" not in str(m["load"])  # its children are ours


def test_incast_collect_sweeps_n_on_separate_sender_hosts(state_dir, tmp_path):
    # 4 s points: in the full suite on 2026-11-28 this test's probes took 0.6 s to start (0.1 s alone),
    # and the window's close edge (then 3x that) left a 2 s point no window at all (three CI runs in a row)
    campaign = patterns.collect("run", "incast", runs_dir=tmp_path, flows=[1, 2], repetitions=1, duration=4,
                                warmup=1, separate_hosts=True, progress=False, unprofiled_repetitions=0,
                                live=LiveOptions(top_up_runs=0))  # the sweep is checked here, not the top-up
    tidy, manifests = patterns.load(tmp_path, campaign, "incast", include_contaminated=True)
    assert [m["status"] for m in manifests] == ["ok", "ok"], [m.get("error") for m in manifests]
    two = next(m for m in manifests if m["point"]["flows"] == 2)
    assert {f["sender"] for f in two["flows"]} == {"sender", "sender1"}  # one namespace per sender
    assert {f["receiver"] for f in two["flows"]} == {"receiver"}
    t = patterns.table(tidy)
    assert list(t.flows) == [1, 2] and list(t.flow_count) == [1, 2] and (t.tpc_gbps > 0).all()
    assert set(patterns.breakdown(tidy).side) == {"sender", "receiver"}
    v = patterns.verdict_table(tidy, "incast", REPO / "data" / "reference")
    # §3.1 states F04 and F05 for one flow; where each side had one core, incast's F09 is one-to-one's
    # experiment, shown as "(same experiment)" and counted there (tests/unit/sections/test_patterns.py)
    assert [i.removesuffix(SAME_EXPERIMENT) for i in v.id] == ["F09", "F04 (extension)", "F05 (extension)"]
    assert testbed.status() == []  # torn down
