"""The NIC rehearsal (hostnet.testbed.guests): two QEMU guests with an emulated e1000e, booted from
Debian's kernel and driven over SSH through the testbed.yaml `hostnet testbed up --nic` writes, so
hostnet's server code meets a real NIC driver. Checked here:
- every NIC-facing knob set and read back, or refused with the driver's words, then put back;
- a session killed with settings changed, put back by `hostnet restore`;
- one ladder point, run by `hostnet run` over SSH with its flow paced (under a saturating flow a
  command takes ~2.7 s in the guests), profiled, and flagged a rehearsal.
Marked `nic` (make test-nic, a CI step of its own): the guests boot in ~50-80 s and run under TCG,
where every SSH command costs ~0.7 s. Nothing here is a measurement. The IOMMU pair's profile is
test_live_nic_iommu.py's."""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import live_ready
from hostnet import cli, store
from hostnet.knobs import KNOBS
from hostnet.testbed import guests, knob_trials, servers

pytestmark = [pytest.mark.live, pytest.mark.nic,
              pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    d = tmp_path_factory.mktemp("guests")
    old = os.environ.get("HOSTNET_STATE_DIR")
    os.environ["HOSTNET_STATE_DIR"] = str(d / "state")
    yield d
    if old is None:
        os.environ.pop("HOSTNET_STATE_DIR", None)
    else:
        os.environ["HOSTNET_STATE_DIR"] = old


@pytest.fixture(scope="module")
def e1000e(state):
    """(name, testbed.yaml) of an e1000e pair, brought up by the CLI as a researcher would."""
    name = f"ne{os.getpid() % 100000}"
    try:
        assert cli.main(["testbed", "up", "--nic", "e1000e", "--name", name]) == 0
        yield name, Path(guests.state_of(name)["yaml"])
    finally:
        assert guests.down(name) == []
    assert not guests.files_dir(name).exists() and not guests._tag(name).running()


def test_the_guests_boot_with_the_driver_and_its_msix_vectors(e1000e):
    name, path = e1000e
    st = guests.state_of(name)
    assert st["ready"] and st["boot_s"] < guests.BOOT_TIMEOUT_S
    tb = servers.from_yaml(path)
    rcv = tb.endpoints["receiver"].host
    assert "driver: e1000e" in rcv.run(["ethtool", "-i", "data0"]).stdout
    # the management NIC is the SSH session's: the guard refuses it, the data NIC is free
    assert rcv.connection_interfaces() == ["mgmt0"]


def test_every_nic_knob_set_read_back_or_refused_then_put_back(e1000e):
    _, path = e1000e
    tb = servers.from_yaml(path)
    tb.journal.lock()
    try:
        trials, vectors = knob_trials.run(tb, "receiver")
    finally:
        assert tb.journal.restore() == []
    print(knob_trials.markdown(trials, "e1000e"))
    got = {(t.knob, t.asked): t for t in trials}
    assert sorted(vectors.values()) == ["data0", "data0-rx-0", "data0-tx-0"]  # e1000e's names, MSI-X
    for knob, asked in [("ring.rx", "512"), ("ring.tx", "512"), ("coalesce.rx-usecs", "30"),
                        ("offload.tso", "off"), ("offload.gso", "off"), ("offload.gro", "off"), ("mtu", "9000")]:
        t = got[(knob, asked)]
        assert t.outcome == "set" and t.after == asked and t.restored, t
    assert got[("ring.rx", "32768")].outcome == "refused" and "at most 4096" in got[("ring.rx", "32768")].message
    assert "Invalid argument" in got[("coalesce.rx-usecs", "7")].message  # e1000e cannot program 4-9 us
    assert got[("coalesce.tx-usecs", "30")].outcome == "unsupported"
    assert got[("offload.lro", "on")].outcome == "unsupported" and "fixed" in got[("offload.lro", "on")].message
    assert got[("channels.combined", "2")].outcome == "unsupported"
    assert "Operation not supported" in got[("channels.combined", "2")].message
    rule = got[("ntuple_rule", "flow-type tcp4 dst-port 5201 action 0")]
    assert rule.outcome == "refused" and "Cannot insert RX class rule: Operation not supported" in rule.message
    irqs = [t for t in trials if t.knob == "irq_affinity"]
    assert {int(t.key) for t in irqs} == set(vectors) and all(t.outcome == "set" and t.restored for t in irqs)


KILLED = textwrap.dedent("""
    import sys, time
    from hostnet.knobs import KNOBS
    from hostnet.testbed import servers
    tb = servers.from_yaml(sys.argv[1])
    tb.journal.lock()
    host = tb.endpoints["receiver"].host
    for knob, value in (("ring.rx", "1024"), ("coalesce.rx-usecs", "50"), ("offload.gro", "off")):
        tb.journal.set(host, KNOBS[knob], "data0", value)
    print("changed", flush=True)
    time.sleep(600)
""")


def test_a_killed_session_s_settings_are_put_back_by_hostnet_restore(e1000e):
    _, path = e1000e
    host = servers.from_yaml(path).endpoints["receiver"].host
    knobs = ("ring.rx", "coalesce.rx-usecs", "offload.gro")
    before = {k: KNOBS[k].read(host, "data0") for k in knobs}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "changed"
        assert {k: KNOBS[k].read(host, "data0") for k in knobs} == {"ring.rx": "1024", "coalesce.rx-usecs": "50",
                                                                     "offload.gro": "off"}
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    out = subprocess.run([sys.executable, "-m", "hostnet.cli", "restore"], capture_output=True, text=True,
                         env={**os.environ})
    assert out.returncode == 0, out.stderr
    assert "restored" in out.stdout
    assert {k: KNOBS[k].read(host, "data0") for k in knobs} == before


def run_paced_point(path: Path, runs: Path, config: str, duration_s: int = 90, rate_mbps: int = 20
                    ) -> tuple[Path, dict]:
    """One ladder point on the guests as a researcher runs it: 90 s paced at 20 Mbit/s. The window's
    probes take 10-17 s to open and it closes 3x that before the flow ends: 17 s and 5.6 s of
    window were left of 60 s, 16.6 s of 90 s."""
    assert cli.main(["run", "single-flow", "--testbed", str(path), "--config", config, "--duration", str(duration_s),
                     "--warmup", "5", "--rate-mbps", str(rate_mbps), "--repetitions", "1", "--runs-dir", str(runs),
                     "--campaign", "c", "--quiet"]) == 0
    [run] = store.list_runs(runs, "c")
    return run, store.load_manifest(run)


def test_one_paced_ladder_point_runs_over_ssh_profiled_and_flagged_a_rehearsal(e1000e, tmp_path):
    _, path = e1000e
    host = servers.from_yaml(path).endpoints["receiver"].host
    before = {k: KNOBS[k].read(host, "data0") for k in ("mtu", "offload.tso", "offload.gro")}
    run, m = run_paced_point(path, tmp_path / "runs", "tsogro+jumbo")
    print({k: round(m["window"][k] - m["started"], 1) for k in ("clients_started", "opened", "start", "end",
                                                                "closed")}, round(m["ended"] - m["started"], 1))
    assert m["status"] == "ok" and m["rehearsal"] == guests.LABEL and store.flagged(m) == "rehearsal"
    # a window there is, profiled (17 s of 90 here: it may be flagged short too, under a quarter of the flow)
    assert m["window"]["seconds"] >= 8, m["window"]
    assert m["applied"]["receiver/mtu/data0"] == "9000"  # jumbo, on the guest's e1000e
    tidy = store.read_tidy(run)
    gbps = tidy[tidy.metric == "throughput_gbps"].value.sum()
    assert 0.015 < gbps < 0.025, gbps  # the pace asked, 20 Mbit/s
    # both profiles hold the driver's own functions, booked as netdev (the taxonomy's e1000e entry)
    for side in ("sender", "receiver"):
        driver = [(s, c) for s, c, _ in m["top_symbols"][side] if s.startswith("e1000")]
        assert driver and {c for _, c in driver} == {"netdev"}, m["top_symbols"][side]
    assert {k: KNOBS[k].read(host, "data0") for k in before} == before  # the point's settings put back
