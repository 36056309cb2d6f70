"""The embedded testbed's receive paths on a real testbed: each builds, napi-thread's NAPI threads
exist and are pinned where the manifest says, receive processing lands on the receiver's CPU, and
a restore leaves no XDP program, no threaded flag, no qdisc, no gro_max_size and no changed offload
behind.

Each test builds its own uniquely named testbed and tears it down, even on failure.
"""
import os

import pytest

from conftest import live_ready
from hostnet.measure import config as sc, runner
from hostnet import store, testbed
from hostnet.knobs import KNOBS
from hostnet.knobs.napi import napi_threads
from hostnet.derive.workloads import LongFlow

pytestmark = [pytest.mark.live, pytest.mark.skipif(live_ready() is not None, reason=str(live_ready()))]

DEVICE_KNOBS = ("offload.tso", "offload.gso", "offload.gro", "gro_max_size", "xdp", "qdisc", "napi_threaded",
                "napi_affinity", "mtu")


def _name(tag):
    return f"{tag}{os.getpid() % 10000}"


def _device_state(tb):
    return {(e.role, k): KNOBS[k].read(e.host, e.iface) for e in tb.endpoints.values() for k in DEVICE_KNOBS}


@pytest.mark.parametrize("config", ["no-opts", "all-opts"])
def test_napi_thread_runs_receive_processing_in_pinned_threads(state_dir, tmp_path, config):
    """NAPI through GRO at both steps; no-opts merges nothing (gro_max_size 0: one IP packet per
    frame) and, with no XDP program, veth makes no copy (no skb_pp_cow_data sample)."""
    with testbed.embedded(_name("np"), steering="napi-thread") as tb:
        # 5 s: all-opts merges so much that a 3 s window once held 26 receive-path samples (CI,
        # 2026-11-28), under the 30 this test asks for to judge where the data is received
        path = runner.run_point(tb, runner.RunRequest(sc.get_config(config), LongFlow(5, 1), tmp_path, "np"))
        m = store.load_manifest(path)
        assert m["status"] == "ok", m.get("error")
        assert m["testbed"]["rx_steering"] == "napi-thread"
        for ep in tb.endpoints.values():  # the threads exist and run on the side's CPUs, as applied
            assert napi_threads(ep.host, ep.iface), ep.iface
            assert KNOBS["napi_affinity"].read(ep.host, ep.iface) == ",".join(map(str, ep.cpus))
            assert m["applied"][f"{ep.role}/napi_affinity/{ep.iface}"] == ",".join(map(str, ep.cpus))
        assert KNOBS["xdp"].read(tb.receiver.host, tb.receiver.iface) == "off"
        assert KNOBS["offload.gro"].read(tb.receiver.host, tb.receiver.iface) == "on"
        expect_max = "0" if config == "no-opts" else "65536"
        assert KNOBS["gro_max_size"].read(tb.receiver.host, tb.receiver.iface) == expect_max
        assert KNOBS["offload.tso"].read(tb.sender.host, tb.sender.iface) == "off"  # GSO stands in
    t = store.read_tidy(path)
    merge = t[(t.metric == "gro_merge_ratio") & (t.side == "receiver")].value.item()
    if config == "no-opts":
        # frames per IP packet: nothing merged. The link and IP counters are read by separate
        # commands at each window edge, a few ms apart with packets flowing, so the ratio strays a
        # few per cent either way (0.981 and 1.024 in two CI runs); merging puts it far above
        # (all-opts: > 1.5; 5.8 in the committed campaigns)
        assert 0.9 <= merge <= 1.1, merge
    else:
        assert merge > 1.5, merge
    folded = store.raw_text(path, "local.perf_folded.txt")
    assert "skb_pp_cow_data" not in folded  # (veth_xdp_rcv_skb is veth's NAPI path with or without XDP)
    led = t[(t.metric == "ledger_pct") & (t.side == "receiver")].set_index("category").value
    sent = t[(t.metric == "ledger_pct") & (t.side == "sender")].set_index("category").value
    # TSO's stand-in (GSO under validate_xmit_skb) runs for every data skb on the sender at all-opts,
    # never at no-opts. On the receiver it shows only when the sender's qdisc is drained from the
    # receiver's CPU: 0 in 9 of the 40 committed all-opts single-flow runs (median 0.09 %), so it is
    # not asked for there (CI 2026-11-28 met one of those)
    assert led["xdp_copy"] == 0 and (sent["nic_tso"] > 0) == (config == "all-opts"), (sent, led)
    if config == "no-opts":
        assert led["nic_tso"] == 0, led
    t = store.read_tidy(path)
    assert set(t[t.metric == "perf_sampling_coverage_ratio"].side) == {"sender", "receiver"}
    # TCP's data-receive functions by call chain (attribution.RECEIVE_PATH; ACKs never reach them,
    # while the sender's NAPI thread runs GRO, ip_rcv and tcp_v4_rcv for the ACKs, as it should):
    # data is received on the receiver's CPU
    rp = t[t.metric == "perf_receive_path_samples_count"].set_index("side").value
    assert rp["receiver"] > 30 and rp["receiver"] >= 0.9 * (rp["sender"] + rp["receiver"]), rp
    assert set(t[t.metric == "tpc_gbps"].side) == {"both", "sender", "receiver"}
    assert set(t[t.metric == "tpc_nic_gbps"].side) == {"both", "sender", "receiver"}


def test_restore_leaves_every_device_as_it_was(state_dir):
    """A testbed that stays up (persistent): after a napi-thread campaign its journal is restored,
    and every device setting reads back as before: no threads, no qdisc, gro_max_size and TSO back."""
    name = _name("nr")
    testbed.up(name, persistent=True, steering="napi-thread")
    try:
        with testbed.using(name) as tb:
            before = _device_state(tb)
            assert before[("receiver", "xdp")] == "off" and before[("sender", "napi_threaded")] == "0"
            assert before[("receiver", "gro_max_size")] == "65536"
            for cfg in ("no-opts", "tsogro", "all-opts", "jumbo"):  # merging off, on, off again
                sc.apply(tb, sc.get_config(cfg))
            assert _device_state(tb) != before
        assert _device_state(testbed.attach(name)) == before
        assert all(not napi_threads(e.host, e.iface) for e in testbed.attach(name).endpoints.values())
    finally:
        assert testbed.down(name) == []


@pytest.mark.parametrize("steering", ["rps", "none"])
def test_other_paths_build_and_run(state_dir, tmp_path, steering):
    with testbed.embedded(_name(steering[:2]), steering=steering) as tb:
        path = runner.run_point(tb, runner.RunRequest(sc.get_config("tsogro"), LongFlow(2, 1), tmp_path, "o"))
        assert all(not napi_threads(e.host, e.iface) for e in tb.endpoints.values())
    m = store.load_manifest(path)
    assert m["status"] == "ok" and m["testbed"]["rx_steering"] == steering
    assert m["config_label"] == "tsogro"
