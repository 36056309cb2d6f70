"""The testbed ledger (hostnet.analysis.ledger): its rules on captured call chains of committed embedded runs
(tests/fixtures/perf_folded_ledger_lines.txt), and the NIC-equivalent accounting on small tables."""
import math

import pandas as pd
import pytest

from conftest import fixture_text
from hostnet.analysis import ledger
from hostnet import taxonomy
from hostnet.analysis.attribution import attribute, breakdown_from_stacks, is_instrument
from hostnet.parsers.perf_script import USER, parse_folded
from hostnet.taxonomy import strip_suffix

TAX = taxonomy.load("linux-6")
LINES = list(parse_folded(fixture_text("perf_folded_ledger_lines.txt")))


def item_of(sample, gso_for_tso=False):
    cat = attribute(sample.frames, TAX, embedded=True, comm=sample.comm)
    names = [strip_suffix(f) for f in sample.frames if not f.endswith(USER)]
    instrument = cat == "testbed" and is_instrument(sample.frames, TAX, comm=sample.comm)
    return ledger.item(names, cat, instrument=instrument, gso_for_tso=gso_for_tso), cat


def samples(pred):
    found = [s for s, _n in LINES if pred(s)]
    assert found, "the fixture has no such line"
    return found


def test_the_xdp_copy_is_an_item_of_its_own_whatever_layer_its_leaf_is_in():
    for s in samples(lambda s: "skb_pp_cow_data" in s.frames):
        assert item_of(s)[0] == ledger.XDP_COPY


def test_net_tx_action_on_the_receivers_cpu_is_the_peers_transmit_work_with_its_own_layers():
    found = samples(lambda s: s.cpu == 1 and "net_tx_action" in s.frames and "__skb_gso_segment" not in s.frames
                    and "__napi_schedule" not in s.frames)
    for s in found:
        it, cat = item_of(s)
        assert it == ledger.PEER_TRANSMIT and cat != "testbed"  # it keeps its layer, to move it whole


def test_gso_under_validate_xmit_skb_is_nic_stand_in_only_when_it_stands_in_for_tso():
    gso = samples(lambda s: "__skb_gso_segment" in s.frames)
    assert {s.cpu for s in gso} == {0, 1}  # on the sender's own CPU and under net_tx_action on the receiver's
    for s in gso:
        assert item_of(s, gso_for_tso=True)[0] == ledger.NIC_TSO
    # no-opts: the kernel segments in software on a real host too; on the receiver's CPU it is the peer's
    assert {item_of(s, gso_for_tso=False)[0] for s in gso} == {None, ledger.PEER_TRANSMIT}


def test_veth_waking_its_peer_is_nic_stand_in_from_any_context():
    found = samples(lambda s: s.frames[0] == "__napi_schedule")
    assert {s.comm for s in found} >= {"iperf3"} and any(s.comm.startswith("napi/") for s in found)
    for s in found:
        assert item_of(s)[0] == ledger.NIC_WAKEUP


def test_application_wake_ups_stay_in_the_stack_as_sched():
    for s in samples(lambda s: "sock_def_readable" in s.frames and s.comm.startswith("napi/")):
        it, cat = item_of(s)
        assert it is None and cat == "sched"


def test_the_napi_threads_own_switch_is_the_ambiguous_line_and_the_profiler_is_no_item():
    switch = samples(lambda s: s.frames[0].startswith("finish_task_switch") and "veth_xmit" not in s.frames)
    assert all(item_of(s) == (ledger.NAPI_SCHEDULING, "testbed") for s in switch)
    for s in samples(lambda s: s.comm == "perf"):
        assert item_of(s) == (None, "testbed")


def test_copies_by_the_application_are_no_item():
    for s in samples(lambda s: s.comm == "iperf3" and "_copy_to_iter" in s.frames):
        assert item_of(s) == (None, "data_copy")


def test_off_the_embedded_testbed_nothing_is_a_ledger_item():
    stacks = [(s, n) for s, n in LINES if s.cpu == 1]
    att = breakdown_from_stacks(stacks, {1}, TAX, ["iperf3"], embedded=False)
    assert att["ledger"] == {} and sum(att["stack"].values()) == att["busy_samples"]
    emb = breakdown_from_stacks(stacks, {1}, TAX, ["iperf3"], embedded=True)
    assert sum(emb["stack"].values()) + sum(emb["ledger"].values()) == emb["busy_samples"]
    # (the TSQ handler arming the pacing timer on the receiver's CPU: vm_timer)
    assert {it for it, _ in emb["ledger"]} == {ledger.XDP_COPY, ledger.PEER_TRANSMIT, ledger.NIC_WAKEUP,
                                              ledger.VM_TIMER, ledger.NAPI_SCHEDULING}


def _side(busy_pct, stack, items):
    return {"busy_pct": busy_pct, "busy_samples": sum(stack.values()) + sum(items.values()),
            "stack": stack, "ledger": items}


def test_nic_equivalent_moves_the_peers_work_and_removes_the_stand_ins():
    sides = {"sender": _side(80.0, {"data_copy": 40, "tcp/ip": 30}, {("nic_tso", "skb"): 10}),
             "receiver": _side(100.0, {"data_copy": 50, "tcp/ip": 10},
                               {("peer_transmit", "netdev"): 20, ("xdp_copy", "data_copy"): 10,
                                ("napi_scheduling", "testbed"): 10})}
    nic = ledger.nic_equivalent(sides, {"sender": "receiver", "receiver": "sender"})
    # the sender: 70 of its 80 samples stay (1 % each) plus the receiver's 20 (1 % each) of netdev
    assert nic["sender"]["cpu_util_pct"] == pytest.approx(70 + 20)
    assert nic["sender"]["pct"]["netdev"] == pytest.approx(100 * 20 / 90)
    # the receiver keeps its stack and the ambiguous line, loses the copy and the peer's work
    assert nic["receiver"]["cpu_util_pct"] == pytest.approx(50 + 10 + 10)
    assert nic["receiver"]["pct"][ledger.AMBIGUOUS] == pytest.approx(100 * 10 / 70)
    assert nic["receiver"]["ledger_pct"]["xdp_copy"] == pytest.approx(10.0)
    assert nic["sender"]["ledger_pct"]["nic_tso"] == pytest.approx(100 * 10 / 80)


def test_behind_a_bridge_the_peers_transmit_is_the_switchs_and_leaves_both_sides():
    sides = {"sender": _side(50.0, {"tcp/ip": 50}, {}),
             "receiver": _side(50.0, {"tcp/ip": 40}, {("peer_transmit", "netdev"): 10})}
    nic = ledger.nic_equivalent(sides, {"sender": None, "receiver": None})
    assert nic["sender"]["cpu_util_pct"] == pytest.approx(50) and nic["receiver"]["cpu_util_pct"] == pytest.approx(40)


def test_a_side_without_samples_is_nan_not_zero():
    nic = ledger.nic_equivalent({"sender": _side(30.0, {}, {})}, {"sender": None})
    assert math.isnan(nic["sender"]["cpu_util_pct"]) and math.isnan(nic["sender"]["ledger_pct"]["xdp_copy"])


def test_peers_by_topology():
    pair = {"testbed": {"endpoints": {"sender": {}, "receiver": {}}},
            "side_cpus": {"sender": {"local": [0]}, "receiver": {"local": [1]}}}
    assert ledger.peers_of(pair) == {"sender": "receiver", "receiver": "sender"}
    shared = {**pair, "side_cpus": {"sender": {"local": [0, 1]}, "receiver": {"local": [1]}}}
    assert ledger.peers_of(shared) == {"sender": "sender", "receiver": "receiver"}
    bridged = {**pair, "testbed": {"endpoints": {"sender1": {}, "sender2": {}, "receiver": {}}}}
    assert ledger.peers_of(bridged) == {"sender": None, "receiver": None}


# --- the accountings as views, and verdicts judged under both -------------------------------------

def _tidy(runs):
    """Synthetic tidy rows: runs = {run_id: (raw cpu {side: %}, nic cpu {side: %}, nic breakdown
    {side: {category: %}}, throughput)}."""
    rows = []
    for run, (raw, nic, bd, gbps) in runs.items():
        base = {"run_id": run, "campaign": "c", "experiment": "single-flow", "config": "no-opts", "repetition": 0,
                "flow": None}
        rows.append({**base, "side": "both", "metric": "throughput_gbps", "category": None, "value": gbps})
        for side in ("sender", "receiver"):
            rows.append({**base, "side": side, "metric": "cpu_util_pct", "category": None, "value": raw[side]})
            rows.append({**base, "side": side, "metric": "cpu_util_nic_pct", "category": None, "value": nic[side]})
            rows.append({**base, "side": side, "metric": "breakdown_attributed_pct", "category": "data_copy",
                         "value": 50.0})
            for cat, v in bd[side].items():
                rows.append({**base, "side": side, "metric": "breakdown_nic_pct", "category": cat, "value": v})
    return pd.DataFrame(rows)


BD = {"sender": {"data_copy": 40.0, "sched": 10.0, "tcp/ip": 30.0, ledger.AMBIGUOUS: 20.0},
      "receiver": {"data_copy": 50.0, "sched": 5.0, "tcp/ip": 45.0, ledger.AMBIGUOUS: 0.0}}


def test_the_nic_view_replaces_cpu_breakdown_and_tpc_and_keeps_the_rest():
    t = _tidy({"p1-r0": ({"sender": 60, "receiver": 90}, {"sender": 80, "receiver": 50}, BD, 10.0)})
    raw = ledger.view(t, ledger.RAW)
    assert raw is t
    nic = ledger.view(t, ledger.NIC)
    cpu = nic[nic.metric == "cpu_util_pct"].set_index("side").value
    assert cpu.to_dict() == {"sender": 80, "receiver": 50}
    tpc = nic[nic.metric == "tpc_gbps"].set_index("side").value
    assert tpc["both"] == pytest.approx(10.0 / 0.8) and tpc["receiver"] == pytest.approx(10.0 / 0.5)
    bd = nic[(nic.metric == "breakdown_attributed_pct") & (nic.side == "sender")].set_index("category").value
    assert bd[ledger.AMBIGUOUS] == 20.0 and bd["sched"] == 10.0
    assert not nic.metric.isin(["cpu_util_nic_pct", "breakdown_nic_pct"]).any()
    assert (nic.metric == "throughput_gbps").sum() == 1


def test_the_ambiguous_line_as_sched_or_left_out():
    t = _tidy({"p1-r0": ({"sender": 60, "receiver": 90}, {"sender": 80, "receiver": 50}, BD, 10.0)})
    as_sched = ledger.view(t, ledger.NIC_AS_SCHED)
    bd = as_sched[(as_sched.metric == "breakdown_attributed_pct") & (as_sched.side == "sender")]
    assert bd.set_index("category").value["sched"] == 30.0 and ledger.AMBIGUOUS not in set(bd.category)
    without = ledger.view(t, ledger.NIC_WITHOUT)
    cpu = without[without.metric == "cpu_util_pct"].set_index("side").value
    assert cpu["sender"] == pytest.approx(80 * 0.8) and cpu["receiver"] == pytest.approx(50)
    bd = without[(without.metric == "breakdown_attributed_pct") & (without.side == "sender")].set_index("category")
    assert bd.value["data_copy"] == pytest.approx(50.0) and bd.value.sum() == pytest.approx(100.0)


def test_runs_without_a_ledger_have_no_nic_equivalent_cpu_rather_than_a_raw_one():
    t = _tidy({"p1-r0": ({"sender": 60, "receiver": 90}, {"sender": 80, "receiver": 50}, BD, 10.0),
               "p1-r1": ({"sender": 61, "receiver": 91}, {"sender": 81, "receiver": 51}, BD, 10.0)})
    t = t[~((t.run_id == "p1-r1") & t.metric.isin(["cpu_util_nic_pct", "breakdown_nic_pct"]))]
    nic = ledger.view(t, ledger.NIC)
    assert set(nic[nic.metric == "cpu_util_pct"].run_id) == {"p1-r0"}
    assert set(nic[nic.metric == "throughput_gbps"].run_id) == {"p1-r0", "p1-r1"}


def test_billing_steps_end_where_the_nic_equivalent_accounting_does():
    """On a committed no-opts run (re-derived under the ledger), applying the items one by one gives
    the stored NIC-equivalent CPU at the fourth step; the first (the XDP copy, the GRO lookups) is
    mostly the receiver's."""
    from conftest import REPO
    from hostnet import store
    t = store.read_tidy(REPO / "data/runs/20261124-022841-single-flow-embedded/039e829122eb-r0")
    steps = ledger.billing_steps(t).set_index("step")
    nic = t[t.metric == "cpu_util_nic_pct"].set_index("side").value
    assert list(steps.index) == list(ledger.STEPS)
    assert steps.loc[ledger.STEPS[3], "sender"] == pytest.approx(nic["sender"])
    assert steps.loc[ledger.STEPS[3], "receiver"] == pytest.approx(nic["receiver"])
    first = steps.loc["raw", ["sender", "receiver"]] - steps.loc[ledger.STEPS[1], ["sender", "receiver"]]
    assert first["receiver"] > 10 * first["sender"] >= 0  # the copy is the receiver's; the sender's ACK GRO


def test_at_a_step_without_gro_the_engines_own_lookup_is_an_item_and_delivery_is_not():
    lookup = ["skb_gro_receive", "tcp_gro_receive", "inet_gro_receive", "dev_gro_receive", "napi_gro_receive",
              "veth_xdp_rcv_skb", "veth_poll"]
    deliver = ["tcp_v4_rcv", "ip_protocol_deliver_rcu", "ip_rcv", "__netif_receive_skb", "gro_normal_list",
               "napi_gro_complete", "dev_gro_receive", "napi_gro_receive", "veth_poll"]
    assert ledger.item(lookup, "netdev", instrument=False, gso_for_tso=False, gro_off=True) == ledger.GRO_LOOKUP
    assert ledger.item(lookup, "netdev", instrument=False, gso_for_tso=False, gro_off=False) is None  # GRO's work
    assert ledger.item(deliver, "tcp/ip", instrument=False, gso_for_tso=False, gro_off=True) is None


ZC_LINES = list(parse_folded(fixture_text("perf_folded_zerocopy_lines.txt")))


def test_the_local_copy_of_a_zero_copy_senders_pages_is_the_testbeds():
    """skb_copy_ubufs under local delivery: the copy a MSG_ZEROCOPY sender's pinned pages get because
    the receiver is on the same host (a NIC would DMA them): a ledger item, its memcpy data copy."""
    local = [s for s, _ in ZC_LINES if "skb_copy_ubufs" in s.frames]
    assert local
    got = [item_of(s) for s in local]
    assert {it for it, _ in got} == {ledger.ZEROCOPY_COPY}
    assert ("zerocopy_copy", "data_copy") in got  # its memcpy (its page allocation and skb work too)
    # the same copy anywhere but local delivery (a sender-side path) stays the stack's
    names = ["__pi_memcpy", "skb_copy_ubufs", "pskb_expand_head", "tcp_fragment", "tcp_write_xmit"]
    assert ledger.item(names, "data_copy", instrument=False, gso_for_tso=False) is None


def test_zero_copy_and_sendfile_work_has_its_layers():
    """Pinning and mapping pages is mm, attaching user pages to an skb is skb, sendfile's splice
    plumbing is etc (its page-cache lookup mm): nothing of it is left unclassified."""
    cats = {}
    for s, _n in ZC_LINES:
        cats.setdefault(strip_suffix(s.frames[0]), attribute(s.frames, TAX, embedded=True, comm=s.comm))
    for leaf, want in (("gup_fast_fallback", "mm"), ("unmap_page_range", "mm"), ("zerocopy_fill_skb_from_iter", "skb"),
                       ("filemap_get_entry", "mm"), ("splice_to_socket", "etc")):
        assert cats.get(leaf) == want, (leaf, cats.get(leaf))


def test_arming_the_pacing_timer_from_tcp_write_xmit_is_the_vms_timer_exit():
    """The landing that decided F05 (docs/embedded-testbed.md): from the sender's write and from the
    TSQ handler alike, an item of its own; an unlock under anything else stays in the stack."""
    found = samples(lambda s: tuple(s.frames[:2]) == ("_raw_spin_unlock_irqrestore", "tcp_write_xmit"))
    assert {s.comm for s in found} >= {"iperf3"} and len(found) >= 2
    for s in found:
        it, cat = item_of(s)
        assert it == ledger.VM_TIMER and cat == "tcp/ip"
    assert ledger.item(["_raw_spin_unlock_irqrestore", "sock_def_readable", "tcp_data_queue"], "tcp/ip",
                       instrument=False, gso_for_tso=False) is None
    nic = ledger.nic_equivalent({"sender": {"busy_pct": 100.0, "busy_samples": 100, "stack": {"tcp/ip": 88},
                                            "ledger": {(ledger.VM_TIMER, "tcp/ip"): 12}}}, {"sender": None})
    assert nic["sender"]["cpu_util_pct"] == pytest.approx(88.0)
    assert nic["sender"]["ledger_pct"][ledger.VM_TIMER] == pytest.approx(12.0)


# --- a rehearsal's ledger: the emulated NIC's doorbell (tests/fixtures/nic-rehearsal) ---------------
VIRTIO = list(parse_folded(fixture_text("nic-rehearsal/virtio_perf_folded_receiver_lines.txt")))


def test_a_rehearsals_virtio_doorbell_is_its_one_ledger_line_and_nothing_of_the_embedded_testbeds():
    """The receiver of a virtio-net guest pair (captured): the samples charged to vp_notify, where TCG
    runs the device's emulation after the doorbell write, are the emulation_trap line; none of the
    embedded testbed's items exists there, and a run that is no rehearsal has no ledger at all."""
    cpus = {s.cpu for s, _ in VIRTIO}
    att = breakdown_from_stacks(VIRTIO, cpus, TAX, ["iperf3"], rehearsal=True)
    doorbell = sum(n for s, n in VIRTIO if s.frames[0] == "vp_notify" and s.comm.startswith("iperf3"))
    assert doorbell and {it for it, _ in att["ledger"]} == {ledger.EMULATION_TRAP}
    assert sum(n for (it, _), n in att["ledger"].items()) >= doorbell  # the workload's, and the kernel's own
    assert sum(att["stack"].values()) + sum(att["ledger"].values()) == att["busy_samples"]
    assert breakdown_from_stacks(VIRTIO, cpus, TAX, ["iperf3"])["ledger"] == {}
    assert ledger.rehearsal_item(["e1000_xmit_frame", "dev_hard_start_xmit"]) is None  # inline: not separable


def test_a_rehearsals_nic_equivalent_removes_the_traps_and_lists_only_its_own_line():
    sides = {"receiver": _side(60.0, {"tcp/ip": 50}, {(ledger.EMULATION_TRAP, "netdev"): 10})}
    nic = ledger.nic_equivalent(sides, {"receiver": None}, ledger.REHEARSAL_ITEMS)
    assert nic["receiver"]["cpu_util_pct"] == pytest.approx(50)
    assert nic["receiver"]["ledger_pct"] == {ledger.EMULATION_TRAP: pytest.approx(100 * 10 / 60)}
