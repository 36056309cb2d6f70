"""Knobs on a real embedded testbed: apply, verify, restore; order independence; fault injection."""
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, live_ready
from hostnet.measure import config as sc
from hostnet import testbed
from hostnet.hosts import LocalHost, ProcessTag, netns_exists
from hostnet.knobs import KNOBS, KnobError

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]

# (where, knob, key template, value): every knob veth and a netns support. {s}/{r}: the veth names.
SUPPORTED = [
    ("sender", "offload.tso", "{s}", "off"), ("sender", "offload.gso", "{s}", "off"),
    ("receiver", "offload.gro", "{r}", "on"), ("sender", "offload.sg", "{s}", "off"),
    ("sender", "offload.tx", "{s}", "off"), ("receiver", "offload.rx", "{r}", "off"),
    ("receiver", "mtu", "{r}", "9000"), ("receiver", "channels.rx", "{r}", "2"),
    ("sender", "channels.tx", "{s}", "2"), ("receiver", "rps_cpus", "{r}/rx-0", "2"),
    ("receiver", "rps_flow_cnt", "{r}/rx-0", "4096"), ("sender", "xps_cpus", "{s}/tx-0", "1"),
    ("receiver", "sysctl", "net.ipv4.tcp_rmem", "4096 131072 1048576"),
    ("sender", "sysctl", "net.ipv4.tcp_wmem", "4096 16384 1048576"),
    ("receiver", "loss", "{r}", "0.01"),
    ("machine", "sysctl", "net.core.rps_sock_flow_entries", "32768"),
    ("machine", "sysctl", "net.core.netdev_budget", "600"),
    ("machine", "sysctl", "net.core.netdev_budget_usecs", "12000"),
    ("machine", "sysctl", "net.core.rmem_max", "8388608"),
    ("machine", "sysctl", "net.ipv4.tcp_allowed_congestion_control", "reno bbr cubic"),
    ("receiver", "congestion_control", "net.ipv4.tcp_congestion_control", "cubic"),
    ("sender", "link.gso_limits", "{s}", "185000/185000"), ("receiver", "link.gro_limits", "{r}", "185000/185000"),
]
# What veth (or this VM) cannot do, and must say so rather than pretend.
UNSUPPORTED = [("receiver", "offload.lro", "{r}"), ("receiver", "ring.rx", "{r}"),
               ("receiver", "offload.ntuple", "{r}"), ("machine", "ddio_ways", "llc_ways"),
               ("machine", "iommu", "state")]


def _where(tb, where):
    return tb.machines["local"] if where == "machine" else tb.endpoints[where].host


def _key(tb, template):
    return template.format(s=tb.sender.iface, r=tb.receiver.iface)


def _snapshot(tb, items):
    return {(w, k, t): KNOBS[k].read(_where(tb, w), _key(tb, t)) for w, k, t, *_ in items}


def test_apply_verify_restore_every_supported_knob(state_dir, summary_line):
    with testbed.embedded(f"kn{os.getpid() % 10000}") as tb:
        before = _snapshot(tb, SUPPORTED)
        global_before = {t: KNOBS[k].read(LocalHost(), t) for w, k, t, _ in SUPPORTED if w == "machine"}
        for where, knob, template, value in SUPPORTED:
            tb.journal.set(_where(tb, where), KNOBS[knob], _key(tb, template), value)
        after = _snapshot(tb, SUPPORTED)
        for where, knob, template, value in SUPPORTED:
            assert KNOBS[knob].normalize(after[(where, knob, template)]) == KNOBS[knob].normalize(value), knob
        assert tb.journal.restore() == []
        assert _snapshot(tb, SUPPORTED) == before
        unsupported = []
        for where, knob, template in UNSUPPORTED:
            ok, why = KNOBS[knob].available(_where(tb, where), _key(tb, template))
            assert not ok and why, knob
            unsupported.append(knob)
    assert {t: KNOBS[k].read(LocalHost(), t) for w, k, t, _ in SUPPORTED if w == "machine"} == global_before
    summary_line(f"knobs: {len(SUPPORTED)} applied, verified and restored on veth; "
                 f"unsupported here (said so): {', '.join(unsupported)}")


def test_loss_injection_drops_packets_and_is_removed(state_dir):
    with testbed.embedded(f"ls{os.getpid() % 10000}") as tb:
        host, iface = tb.receiver.host, tb.receiver.iface
        tb.journal.set(host, KNOBS["loss"], iface, "0.05")
        srv = host.start(["iperf3", "-s", "-1", "-B", tb.receiver.ip])
        time.sleep(0.3)
        tb.sender.host.run(["iperf3", "-c", tb.receiver.ip, "-t", "1", "-C", "cubic"], timeout=30)
        srv.wait(10)
        counters = KNOBS["loss"].counters(host)
        assert counters["seen_packets"] > 100
        assert 0.01 < counters["dropped_packets"] / counters["seen_packets"] < 0.2, counters
    assert "hostnet" not in LocalHost().run(["nft", "list", "tables"]).stdout


def test_ladder_forwards_and_backwards_sees_the_same_state(state_dir):
    order = list(sc.CONFIGS)
    with testbed.embedded(f"ld{os.getpid() % 10000}") as tb:
        def state(cfg):
            sc.apply(tb, cfg)
            return {(s.place.label, s.knob.name, s.key): s.knob.read(tb.host_at(s.place), s.key)
                    for s in sc.settings(tb, cfg)}
        forwards = {name: state(sc.get_config(name)) for name in order}
        backwards = {name: state(sc.get_config(name)) for name in reversed(order)}
    assert forwards == backwards


def test_management_interface_of_root_namespace_is_refused(state_dir):
    from hostnet.knobs.guard import management_interfaces
    local = LocalHost()
    mgmt = management_interfaces(local)
    if not mgmt:
        pytest.skip("this host has no default route")
    iface = sorted(mgmt)[0]
    with testbed.embedded(f"mg{os.getpid() % 10000}") as tb:
        with pytest.raises(KnobError, match="refusing"):
            tb.journal.set(local, KNOBS["mtu"], iface, "1400")
        assert tb.journal.entries() == []


def test_fault_injection_sigkill_then_restore(state_dir, tmp_path, summary_line):
    """SIGKILL the controller at a random moment of a run, 20 times; `hostnet restore` cleans up."""
    local = LocalHost()
    rfs = "net.core.rps_sock_flow_entries"
    prior = KNOBS["sysctl"].read(local, rfs)
    seed = int(os.environ.get("HOSTNET_FAULT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    env = {**os.environ, "HOSTNET_STATE_DIR": str(state_dir)}
    clean = left_behind = 0
    for i in range(20):
        child = subprocess.Popen(
            [sys.executable, "-m", "hostnet.cli", "run", "single-flow", "--config", "all-opts", "--duration", "2",
             "--warmup", "1", "--runs-dir", str(tmp_path / "runs"), "--quiet"],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 4.5))
        child.send_signal(signal.SIGKILL)
        child.wait()
        name = f"r{child.pid % 10**7}"
        pids = ProcessTag(f"{state_dir}/{name}").running()  # what the dead controller left running
        out = subprocess.run([sys.executable, "-m", "hostnet.cli", "restore"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"iteration {i} (seed {seed}): {out.stderr}"
        assert not any(netns_exists(ns) for ns in testbed.EmbeddedLayout(name).netns.values()), i
        assert not any(_is(pid, ("iperf3", "perf")) for pid in pids), i
        assert ProcessTag(f"{state_dir}/{name}").running() == [], i
        left_behind += bool(pids)
        assert KNOBS["sysctl"].read(local, rfs) == prior, i
        # a controller killed before it wrote anything leaves no state directory at all
        assert not [p for p in state_dir.glob("*") if p.suffix in (".json", ".journal", ".ledger")], i
        assert not list((state_dir / "scratch").glob("hostnet-*")), i  # its tool output and perf.data too
        assert "hostnet" not in local.run(["nft", "list", "tables"]).stdout
        clean += 1
    summary_line(f"fault injection: {clean}/20 SIGKILLed runs fully restored by `hostnet restore` "
                 f"({left_behind} had left tool processes running; seed {seed})")


def _is(pid, names):
    """A live (not zombie) process with one of these names."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return False
    comm, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
    return comm in names and state != "Z"
