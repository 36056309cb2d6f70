"""The NIC rehearsal (hostnet.testbed.guests): two QEMU guests with an emulated e1000e, booted from
Debian's kernel and driven over SSH through the testbed.yaml `hostnet testbed up --nic` writes, so
hostnet's server code meets a real NIC driver. Checked here:
- every NIC-facing knob set and read back, or refused with the driver's words, then put back;
- a session killed with settings changed, put back by `hostnet restore`;
- notebook 01 (one paced ladder point) and notebook 02 (F08's rx ring sweep, 256 and 4096) run
  through papermill on the guests' testbed.yaml, every flow paced (under a saturating flow a command
  takes ~2.7 s in the guests), profiled, labelled a rehearsal and judged nowhere.
Marked `nic` (make test-nic, a CI step of its own): the guests boot in ~50-80 s and run under TCG,
where every SSH command costs ~0.7 s. Nothing here is a measurement. The IOMMU pair's profile is
test_live_nic_iommu.py's."""
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, live_ready
from hostnet import cli, store
from hostnet.notebook import batch
from hostnet.knobs import KNOBS
from hostnet.testbed import guests, knob_trials, servers
from hostnet.analysis import flags

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


def run_notebook(name: str, path: Path, tmp_path: Path, runs: Path | None = None, **params) -> tuple[Path, dict]:
    """A notebook in mode "run" on the guests' testbed.yaml through papermill, as `hostnet figures
    --mode run --testbed` runs it: (its runs_dir, tmp_path/runs unless given; the report metadata it
    wrote). Every flow paced: under a saturating flow an SSH command in a guest takes ~2.7 s and the
    window's probes ~17 s."""
    runs, figs = runs or tmp_path / "runs", tmp_path / "figures"
    figs.mkdir(parents=True)
    batch.execute(REPO / "notebooks" / f"{name}.ipynb",
                  {"repetitions": 1, "warmup": 5, **params, "mode": "run", "campaign": "", "testbed": str(path),
                   "runs_dir": str(runs), "figures_dir": str(figs)}, tmp_path / "out")
    return runs, json.loads((figs / f"{name}.meta.json").read_text())


def window(m: dict) -> dict:
    """The window's edges, seconds from the run's start (printed: what the docs' timings come from)."""
    edges = ("clients_started", "opened", "start", "end", "closed")
    return {**{k: round(m["window"][k] - m["started"], 1) for k in edges}, "ended": round(m["ended"] - m["started"], 1)}


def assert_a_rehearsal(meta: dict) -> None:
    """What a notebook run on the guests shows: its label says so, and no finding is judged."""
    assert meta["testbed"].endswith(f"[REHEARSAL: {guests.LABEL}]"), meta["testbed"]
    assert meta["verdicts"] and {v["verdict"] for v in meta["verdicts"]} == {"rehearsal"}, meta["verdicts"]
    assert all(v["this run shows"].startswith(guests.LABEL) for v in meta["verdicts"])


def test_notebook_01_runs_a_paced_ladder_point_profiled_and_labelled_a_rehearsal(e1000e, tmp_path):
    _, path = e1000e
    host = servers.from_yaml(path).endpoints["receiver"].host
    before = {k: KNOBS[k].read(host, "data0") for k in ("mtu", "offload.tso", "offload.gro")}
    # 90 s at 20 Mbit/s: the window's probes take 10-23 s to open and it closes 1.5x that before the flow
    # ends (at 3x: 17 s and 5.6 s of window were left of 60 s, 16.6 s and then none of 90 s)
    runs, meta = run_notebook("01-single-flow", path, tmp_path, configs=["tsogro+jumbo"], duration=90, rate_mbps=20)
    [m] = store.load_manifests(runs)  # one run: no unprofiled twin on a rehearsal
    print(window(m))
    assert m["status"] == "ok" and m["rehearsal"] == guests.LABEL and flags.flagged(m) == "rehearsal"
    # a window there is, profiled (17 s of 90 here: it may be flagged short too, under a quarter of the flow)
    assert m["window"]["seconds"] >= 8, m["window"]
    assert m["applied"]["receiver/mtu/data0"] == "9000"  # jumbo, on the guest's e1000e
    run = store.list_runs(runs)[0]
    tidy = store.read_tidy(run)
    gbps = tidy[tidy.metric == "throughput_gbps"].value.sum()
    assert 0.015 < gbps < 0.025, gbps  # the pace asked, 20 Mbit/s
    # both profiles hold the driver's own functions, booked as netdev (the taxonomy's e1000e entry)
    for side in ("sender", "receiver"):
        driver = [(s, c) for s, c, _ in m["top_symbols"][side] if s.startswith("e1000")]
        assert driver and {c for _, c in driver} == {"netdev"}, m["top_symbols"][side]
    assert_a_rehearsal(meta)
    # F04 (sender vs receiver CPU) computed from the run by the section's rules, then shown, not judged
    assert {"F04", "F08"} <= {v["id"] for v in meta["verdicts"]}
    assert meta["figures"] and all(any((tmp_path / "figures").glob(f"{stem}.*")) for stem in meta["figures"])
    assert {k: KNOBS[k].read(host, "data0") for k in before} == before  # the point's settings put back


def test_notebook_02_sweeps_the_e1000e_rx_ring_for_f08_and_puts_it_back(e1000e, tmp_path):
    """F08's sweep on a driver with rings: 256 and 4096 rx descriptors at one Rx buffer, each set
    through the journal on the receiver's e1000e and put back; F08 computed and shown as a rehearsal."""
    _, path = e1000e
    host = servers.from_yaml(path).endpoints["receiver"].host
    before = KNOBS["ring.rx"].read(host, "data0")
    runs, meta = run_notebook("02-rx-buffer", path, tmp_path, config="tsogro", sizes_kb=[400], rx_rings=[256, 4096],
                              latency_sample_every=0, duration=90, rate_mbps=20)
    manifests = store.load_manifests(runs)
    for m in manifests:
        print(m["point"], window(m))
    assert sorted(m["point"]["rx_ring"] for m in manifests) == [256, 4096]
    assert all(m["status"] == "ok" and m["applied"]["receiver/ring.rx/data0"] == str(m["point"]["rx_ring"])
               for m in manifests), [(m["status"], m.get("error"), m.get("applied")) for m in manifests]
    assert_a_rehearsal(meta)
    f08 = next(v for v in meta["verdicts"] if v["id"] == "F08")
    assert "tpc rx ring 256 → 4096 descriptors (Rx buffer 400 KB)" in f08["this run shows"], f08
    assert KNOBS["ring.rx"].read(host, "data0") == before
