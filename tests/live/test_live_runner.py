"""run_point on a real embedded testbed (root, network namespaces, iperf3, perf): a whole config
applied and restored, RPS, a failed point, `hostnet run` from the command line.

Each test builds its own uniquely named testbed and tears it down, even on failure.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, live_ready
from hostnet.measure import config as sc, runner, window
from hostnet import store, testbed
from hostnet.hosts import LocalHost, netns_exists
from hostnet.knobs import KNOBS
from hostnet.parsers.perf_report import parse_perf_report
from hostnet.derive.workloads import LongFlow
from hostnet.analysis import flags

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


def _name(tag):
    return f"{tag}{os.getpid() % 10000}"


# Kernel functions only the data receiver runs (the sender's ACK path does not queue data).
DATA_RECEIVE = {"tcp_data_queue", "tcp_queue_rcv", "tcp_event_data_recv", "tcp_try_coalesce",
                "skb_try_coalesce", "tcp_add_backlog", "tcp_rcv_established", "ip_rcv_core"}


def test_point_runs_whole_config_and_restores_global_knob(state_dir, tmp_path):
    local = LocalHost()
    rfs = KNOBS["sysctl"]
    prior = rfs.read(local, "net.core.rps_sock_flow_entries")
    allowed = KNOBS["congestion_allowed"].read(local, "net.ipv4.tcp_allowed_congestion_control")
    with testbed.embedded(_name("pt")) as tb:
        path = runner.run_point(tb, runner.RunRequest(sc.get_config("all-opts"), LongFlow(5, 1), tmp_path, "live"))
        # all-opts turned RFS on: a global sysctl, journaled in the root namespace
        assert rfs.read(local, "net.core.rps_sock_flow_entries") == str(sc.RFS_ENTRIES)
        assert KNOBS["mtu"].read(tb.receiver.host, tb.receiver.iface) == "9000"
        # the next point is applied whole: no-opts puts every knob back, RFS to its prior
        sc.apply(tb, sc.get_config("no-opts"))
        assert rfs.read(local, "net.core.rps_sock_flow_entries") == prior
        assert KNOBS["offload.tso"].read(tb.sender.host, tb.sender.iface) == "off"
        sc.apply(tb, sc.get_config("all-opts"))
    assert rfs.read(local, "net.core.rps_sock_flow_entries") == prior  # restored at teardown
    assert KNOBS["congestion_allowed"].read(local, "net.ipv4.tcp_allowed_congestion_control") == allowed
    m = store.load_manifest(path)
    assert m["status"] == "ok", m.get("error")
    # The window lies inside the measured run and is long enough to keep (window.check_window).
    # Its exact length is timing, not asserted: it opens when the warm-up ends, once the probes
    # have started (perf was armed before the clients), and as the suite's first test (a cold
    # perf) they once started ~1 s late (a 0.51 s window of a 2 s run), on a fresh machine ~2 s
    # late (0.70 s of 3 s): 5 s leave room for that above the runner's quarter.
    w = m["window"]
    assert 5 / 4 <= w["seconds"] <= 5 - window.EDGE_S + 0.05 and not m.get("short_window")
    assert w["clients_started"] + 1 <= w["start"] < w["end"] <= w["clients_started"] + 6 - window.EDGE_S + 0.05
    assert m["hostnet"]["version"] and m["versions"]["local"]["kernel"]
    t = store.read_tidy(path)
    gbps = t[t.metric == "throughput_gbps"].value.iloc[0]
    assert gbps > 0.5
    util = t[t.metric == "cpu_util_pct"].set_index("side").value
    assert 0 < util["sender"] <= 101 and 0 < util["receiver"] <= 101
    bd = t[(t.metric == "breakdown_pct")]
    for side in ("sender", "receiver"):
        part = bd[bd.side == side]
        assert part.value.sum() == pytest.approx(100.0)
        assert part.set_index("category").value["unclassified"] < 10.0
    assert "iperf3_client_0.json" in m["files"] and "local.perf_report.txt" in m["files"]
    # the hypervisor's steal: its own column per side, never in busy (one cannot steal from this VM on
    # purpose; the flag's threshold is unit-tested on a captured /proc/stat with steal)
    steal = t[t.metric == "cpu_steal_pct"].set_index("side").value
    assert set(steal.index) == {"sender", "receiver"} and (steal >= 0).all()
    assert (util + steal <= 101).all() and m["cpu_rule"] == "steal-apart/1"
    assert set(m["steal_pct"]) == {"sender", "receiver"}
    assert bool(m.get("host_contention")) == (flags.flagged(m) == "host contention") or m.get("contaminated")
    # the point's congestion control is each endpoint's default, allowed on the machine first
    applied = m["applied"]
    assert applied["sender/congestion_control/net.ipv4.tcp_congestion_control"] == "cubic"
    assert "cubic" in applied["machine:local/congestion_allowed/net.ipv4.tcp_allowed_congestion_control"].split()


def test_rps_puts_receive_processing_on_the_receiver_cpu(state_dir, tmp_path):
    # no-opts: many small skbs, so the receive path is well sampled
    with testbed.embedded(_name("rps"), steering="rps") as tb:
        path = runner.run_point(tb, runner.RunRequest(sc.get_config("no-opts"), LongFlow(2, 1), tmp_path, "rps"))
    rows = parse_perf_report(store.raw_text(path, "local.perf_report.txt"))
    per_cpu = {0: 0, 1: 0}
    for r in rows:
        if r.symbol in DATA_RECEIVE:
            per_cpu[r.cpu] += r.samples
    assert per_cpu[1] > 20 and per_cpu[1] > 5 * per_cpu[0], per_cpu


def test_failed_point_leaves_failed_run_directory(state_dir, tmp_path):
    with testbed.embedded(_name("fl")) as tb:
        # The receiver's address is taken away: the client cannot connect.
        tb.receiver.host.run(["ip", "addr", "flush", "dev", tb.receiver.iface])
        with pytest.raises(runner.RunFailed, match="run directory"):
            runner.run_point(tb, runner.RunRequest(sc.get_config("tsogro"), LongFlow(1, 0), tmp_path, "f"))
    [run] = store.list_runs(tmp_path, "f")
    m = store.load_manifest(run)
    assert m["status"] == "failed" and m["error"]
    assert not (run / "tidy.csv").exists()
    assert not any(netns_exists(n) for n in testbed.EmbeddedLayout(_name("fl")).netns.values())


def test_cli_run_prints_summary_and_cleans_up(state_dir, tmp_path):
    out = subprocess.run([sys.executable, "-m", "hostnet.cli", "run", "single-flow", "--config", "all-opts",
                          "--duration", "2", "--warmup", "1", "--runs-dir", str(tmp_path), "--quiet"],
                         capture_output=True, text=True, timeout=120, cwd=REPO,
                         env={**os.environ, "HOSTNET_STATE_DIR": str(state_dir)})
    assert out.returncode == 0, out.stderr
    for needle in ("throughput", "CPU sender", "throughput/core", "top receiver", "run directory:"):
        assert needle in out.stdout
    run_dir = out.stdout.split("run directory:")[1].split()[0]
    assert json.loads((Path(run_dir) / "manifest.json").read_text())["status"] == "ok"
    assert not [n for n in LocalHost().run(["ip", "netns", "list"]).stdout.split() if n.startswith("hostnet-r")]
    assert list(state_dir.glob("*.json")) == []


def test_two_testbeds_at_once_share_host_wide_settings_and_a_moved_one_flags_the_run(state_dir, tmp_path):
    """Two embedded testbeds on one machine (#33): the second journals the machine's real value,
    cannot set another while the first holds it, and the first's teardown leaves it in place for
    the second's point; a setting moved behind hostnet's back during a window flags that run."""
    import threading
    from hostnet.knobs.machine import SettingHeld
    local, rfs, key = LocalHost(), KNOBS["sysctl"], "net.core.rps_sock_flow_entries"
    prior = rfs.read(local, key)
    with testbed.embedded(_name("ga")) as b:
        with testbed.embedded(_name("gb")) as a:
            sc.apply(a, sc.get_config("all-opts"))
            sc.apply(b, sc.get_config("all-opts"))
            assert [e["prior"] for e in b.journal.entries() if e["key"] == key] == [prior]
            with pytest.raises(SettingHeld, match=r"held at '32768' by the testbed of .*gb"):
                sc.apply(b, sc.get_config("no-opts"))
            sc.apply(b, sc.get_config("all-opts"))
        assert rfs.read(local, key) == str(sc.RFS_ENTRIES)  # a is gone, b holds it
        clean = runner.run_point(b, runner.RunRequest(sc.get_config("all-opts"), LongFlow(3, 1), tmp_path, "live"))
        assert flags.flagged(store.load_manifest(clean)) in ("", "host contention")  # the VM's neighbours may steal
        # Behind hostnet's back (not through a journal), in the middle of the next window:
        timer = threading.Timer(2.0, lambda: rfs.write(local, key, "4096"))
        timer.start()
        try:
            moved = runner.run_point(b, runner.RunRequest(sc.get_config("all-opts"), LongFlow(3, 1), tmp_path, "live"))
        finally:
            timer.cancel()
        m = store.load_manifest(moved)
        assert flags.flagged(m) == "setting moved" and "read '4096' after the window" in m["settings_moved"]
    assert rfs.read(local, key) == prior  # the last holder put the machine's value back
