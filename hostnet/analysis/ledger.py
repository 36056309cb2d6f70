"""The testbed ledger: work that exists only because the embedded testbed emulates a NIC, found by
its call chain and billed where real hardware would put it (docs/embedded-testbed.md, "The ledger").

Each attributed sample (attribution.py) of an embedded run is either ordinary stack work or one
ledger item:

- xdp_copy: veth's copy of a non-linear skb into a page-pool page for an XDP program
  (skb_pp_cow_data). No NIC makes it; removed. (Campaigns recorded before GRO-off steps kept NAPI
  through gro_max_size 0 have it at every GRO-off step; later ones have none.)
- zerocopy_copy: the copy of a MSG_ZEROCOPY sender's pinned pages when the receiving socket is
  on the same host (skb_copy_ubufs on local delivery; the sender's completion says "copied"). A
  NIC sends the pinned pages by DMA and the remote receiver gets pages of its own; removed.
- nic_tso: software segmentation standing in for TSO (the GSO subtree under validate_xmit_skb),
  only at steps whose TSO is on: a NIC segments in hardware. Without TSO the kernel segments in
  software on a real host too, and the work stays in the stack. Removed, kept apart.
- nic_wakeup: veth waking its peer's NAPI (__napi_schedule under veth_xmit, and the IPI it sends):
  a NIC's DMA and interrupt raise. Removed, kept apart.
- peer_transmit: the peer's transmit work run on this side's CPU (net_tx_action: when the peer's
  ring frees room, the NAPI poll wakes the other side's queue and drains its qdisc here). On a
  pair of namespaces it moves, category by category, to the peer side's breakdown and CPU; behind
  a bridge it is the switch's, and removed.
- gro_lookup: at steps without GRO, the GRO engine's own work (dev_gro_receive and below, short of
  delivering the packet): veth keeps GRO on with gro_max_size 0 there, so every packet is looked up
  and none merged; a NIC with GRO off pays none of it. Removed.
- vm_timer: arming TCP's pacing timer from tcp_write_xmit (the chain ends tcp_write_xmit;
  _raw_spin_unlock_irqrestore: hrtimer_start_range_ns's frame is lost at the leaf). Under the
  hypervisor the TSC-deadline write is a VM exit and the LAPIC interrupt it often raises at once
  is billed to the unlock (4-16 us per arm, traced in docs/embedded-testbed.md); bare metal pays
  well under a microsecond. Removed. (Only paced flows pay it: bbr, and every flow of campaigns
  recorded before each endpoint defaulted to the point's congestion control.)
- emulation_trap (the NIC rehearsal's guests only, runs whose testbed is a rehearsal): a virtio-net
  doorbell, the kick that tells the device a queue has work (samples whose leaf is vp_notify, the
  function that writes the notify register: 1.3-5.3 % of a paced flow's busy samples there). Under
  TCG QEMU runs the device's emulation on the vCPU's thread, so that time is charged to the guest
  function that wrote the register; a NIC's doorbell is a posted PCIe write. Removed. e1000/e1000e
  write their tail register inline in e1000_xmit_frame, so their traps stay inside it: separating
  them would need instruction-level attribution.
- napi_scheduling (ambiguous): what is left of the testbed bucket once the instrument is out: the
  NAPI threads' own sleep, wake and context switches and the IPIs that wake them. A NIC replaces
  them with a hardirq and a softirq, whose cost is real but not this; shown as its own line.

Two accountings per side follow: raw (what /proc/stat and perf say) and NIC-equivalent (the ledger
applied; the ambiguous line kept as its own category, so a verdict can be read with it counted as
scheduling or left out).
"""
from __future__ import annotations

from collections import defaultdict

import pandas as pd

from .metrics import with_side_tpc

LEDGER_RULE = "testbed-ledger/4"
XDP_COPY, ZEROCOPY_COPY, GRO_LOOKUP, NIC_TSO, NIC_WAKEUP, PEER_TRANSMIT, VM_TIMER, NAPI_SCHEDULING = (
    "xdp_copy", "zerocopy_copy", "gro_lookup", "nic_tso", "nic_wakeup", "peer_transmit", "vm_timer",
    "napi_scheduling")
ITEMS = (XDP_COPY, ZEROCOPY_COPY, GRO_LOOKUP, NIC_TSO, NIC_WAKEUP, PEER_TRANSMIT, VM_TIMER, NAPI_SCHEDULING)
EMULATION_TRAP = "emulation_trap"
# a rehearsal's ledger (emulated NICs under TCG): its one item, apart from the embedded testbed's
REHEARSAL_ITEMS = (EMULATION_TRAP,)
# the leaves where an emulated device's register write is charged: virtio-pci's doorbell
_TRAP_LEAVES = frozenset({"vp_notify"})
AMBIGUOUS = NAPI_SCHEDULING  # also the category name of the ambiguous line in NIC-equivalent breakdowns
# where NIC-equivalent accounting puts each item
BILLING = {XDP_COPY: "removed (no NIC copies for XDP here)",
           ZEROCOPY_COPY: "removed (a NIC sends the pinned pages by DMA)",
           GRO_LOOKUP: "removed (a GRO-off NIC looks nothing up)",
           NIC_TSO: "NIC stand-in (removed)",
           NIC_WAKEUP: "NIC stand-in (removed)", PEER_TRANSMIT: "the peer side (a switch's behind a bridge)",
           VM_TIMER: "removed (bare metal arms a timer without a VM exit)",
           NAPI_SCHEDULING: "its own line (ambiguous)",
           EMULATION_TRAP: "removed (a NIC's doorbell is a posted PCIe write; under TCG the device runs here)"}
# the receive path's local delivery, where a zero-copy skb's user pages are copied (skb_orphan_frags_rx)
_LOCAL_DELIVERY = frozenset({"ip_local_deliver_finish", "ip6_input_finish", "__netif_receive_skb_core",
                             "__netif_receive_skb_one_core", "deliver_skb"})
_GSO = frozenset({"__skb_gso_segment", "skb_gso_segment", "skb_mac_gso_segment"})
# past these the GRO engine hands the packet on: delivery, the stack's own work
_GRO_DELIVERS = frozenset({"napi_gro_complete", "gro_normal_list", "gro_normal_one", "netif_receive_skb_list_internal",
                           "__netif_receive_skb", "__netif_receive_skb_list_core", "ip_list_rcv", "ip_rcv",
                           "__napi_gro_flush_chain", "gro_flush", "napi_gro_flush"})


def rehearsal_item(names: list[str]) -> str | None:
    """The ledger item of one sample of a rehearsal's run (emulated NICs), or None: only the
    emulation's own work is an item there; the embedded testbed's items do not exist on a NIC."""
    return EMULATION_TRAP if names and names[0] in _TRAP_LEAVES else None


def item(names: list[str], category: str, *, instrument: bool, gso_for_tso: bool,
         gro_off: bool = False) -> str | None:
    """The ledger item of one embedded sample, or None for stack work. names: its kernel frames
    without suffixes, leaf first; category: what attribution.attribute() made of it; instrument:
    the profiler or the loss injector (never a ledger item); gso_for_tso: the point's TSO is on and
    the testbed segments in software instead; gro_off: the step has no GRO, which the testbed
    realises as GRO merging nothing."""
    if instrument:
        return None
    if names[:2] == ["_raw_spin_unlock_irqrestore", "tcp_write_xmit"]:
        return VM_TIMER
    if "skb_pp_cow_data" in names:
        return XDP_COPY
    if "skb_copy_ubufs" in names and _LOCAL_DELIVERY.intersection(names[names.index("skb_copy_ubufs"):]):
        return ZEROCOPY_COPY
    if gro_off and "dev_gro_receive" in names and not _GRO_DELIVERS.intersection(names):
        return GRO_LOOKUP
    if gso_for_tso and _GSO.intersection(names) and "validate_xmit_skb" in names:
        return NIC_TSO
    if "__napi_schedule" in names and "veth_xmit" in names[names.index("__napi_schedule"):]:
        return NIC_WAKEUP
    if "net_tx_action" in names:
        return PEER_TRANSMIT
    if category == "testbed":
        return NAPI_SCHEDULING
    return None


def nic_equivalent(sides: dict[str, dict], peers: dict[str, str | None], items=ITEMS) -> dict[str, dict]:
    """Both accountings' CPU and the NIC-equivalent breakdown per side.

    sides: {side: {"busy_pct": /proc/stat busy (100 = one core), "busy_samples": attributed samples,
    "stack": {category: samples that are no ledger item}, "ledger": {(item, category): samples}}}.
    peers: the side that peer_transmit found on a side moves to (None: it is removed, e.g. the
    switch's behind a bridge). Samples become CPU through each side's own busy time per sample, so
    two sides sampled unevenly still add up in cores.
    items: the ledger's lines (a rehearsal's: REHEARSAL_ITEMS); every other item is removed.
    Returns {side: {"cpu_util_pct": NIC-equivalent busy, "pct": {category: % of it},
    "ledger_pct": {item: % of the raw busy samples}}}."""
    scale = {s: (d["busy_pct"] / d["busy_samples"] if d["busy_samples"] else 0.0) for s, d in sides.items()}
    work: dict[str, dict[str, float]] = {s: defaultdict(float) for s in sides}
    for s, d in sides.items():
        for cat, n in d["stack"].items():
            work[s][cat] += n * scale[s]
        for (it, cat), n in d["ledger"].items():
            if it == PEER_TRANSMIT and peers.get(s) in work:
                work[peers[s]][cat] += n * scale[s]
            elif it == NAPI_SCHEDULING:
                work[s][AMBIGUOUS] += n * scale[s]
    out = {}
    for s, d in sides.items():
        total = sum(work[s].values())
        counts: dict[str, float] = defaultdict(float)
        for (it, _cat), n in d["ledger"].items():
            counts[it] += n
        out[s] = {"cpu_util_pct": total if d["busy_samples"] else float("nan"),
                  "pct": {c: 100.0 * v / total for c, v in work[s].items()} if total else {},
                  "ledger_pct": {it: (100.0 * counts.get(it, 0) / d["busy_samples"] if d["busy_samples"]
                                      else float("nan")) for it in items}}
    return out


def peers_of(manifest: dict) -> dict[str, str | None]:
    """Where each side's peer_transmit goes: the other side on a pair of namespaces whose sides use
    disjoint CPUs; nowhere (the switch's) behind a bridge; left in place (the same CPUs) otherwise."""
    endpoints = manifest["testbed"]["endpoints"]
    if len(endpoints) > 2:
        return {"sender": None, "receiver": None}
    cpus = {s: {(m, c) for m, cs in per.items() for c in cs} for s, per in manifest["side_cpus"].items()}
    if cpus.get("sender", set()) & cpus.get("receiver", set()):
        return {"sender": "sender", "receiver": "receiver"}
    return {"sender": "receiver", "receiver": "sender"}


# --- the accountings as views of a campaign's tidy data ----------------------------------------------

RAW, NIC, NIC_AS_SCHED, NIC_WITHOUT = "raw", "nic", "nic-ambiguous-as-sched", "nic-ambiguous-removed"
ACCOUNTINGS = (RAW, NIC, NIC_AS_SCHED, NIC_WITHOUT)
LABELS = {RAW: "raw", NIC: "NIC-equivalent", NIC_AS_SCHED: "NIC-equivalent, the ambiguous line as sched",
          NIC_WITHOUT: "NIC-equivalent, the ambiguous line left out"}


def has_ledger(tidy: pd.DataFrame) -> bool:
    return "metric" in tidy.columns and bool((tidy.metric == "cpu_util_nic_pct").any())


def view(tidy: pd.DataFrame, accounting: str) -> pd.DataFrame:
    """The campaign's tidy data as an accounting sees it: the raw rows of CPU, breakdown and tpc
    replaced by the NIC-equivalent ones (variants: the ambiguous line kept as its own category,
    counted as sched, or left out of the CPU and the breakdown). Runs without a ledger (not
    profiled on both sides) have no NIC-equivalent CPU: their CPU, tpc and breakdown rows are
    dropped, not kept raw, so the two accountings never mix in one number. Everything else stays."""
    if accounting == RAW or not has_ledger(tidy):
        return tidy
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting {accounting!r}: one of {', '.join(ACCOUNTINGS)}")
    sides = tidy.side.isin(["sender", "receiver"])
    nic_cpu = tidy[(tidy.metric == "cpu_util_nic_pct") & sides].copy()
    nic_bd = tidy[(tidy.metric == "breakdown_nic_pct") & sides].copy()
    amb = nic_bd[nic_bd.category == AMBIGUOUS].set_index(["run_id", "side"]).value
    if accounting == NIC_WITHOUT:
        share = amb.reindex(pd.MultiIndex.from_frame(nic_cpu[["run_id", "side"]])).fillna(0.0).to_numpy()
        nic_cpu["value"] = nic_cpu.value.to_numpy() * (1 - share / 100.0)
    if accounting == NIC_AS_SCHED:
        nic_bd = _fold(nic_bd, AMBIGUOUS, "sched")
    elif accounting == NIC_WITHOUT:
        nic_bd = nic_bd[nic_bd.category != AMBIGUOUS]
        total = nic_bd.groupby(["run_id", "side"]).value.transform("sum")
        nic_bd = nic_bd.assign(value=(100.0 * nic_bd.value / total).where(total > 0))
    replaced = {"cpu_util_pct", "breakdown_attributed_pct", "tpc_gbps", "cpu_util_nic_pct", "breakdown_nic_pct",
                "tpc_nic_gbps"}
    rest = tidy[~tidy.metric.isin(replaced)]
    out = pd.concat([rest, nic_cpu.assign(metric="cpu_util_pct"),
                     nic_bd.assign(metric="breakdown_attributed_pct")], ignore_index=True)
    return _tpc(out)


def _fold(bd: pd.DataFrame, source: str, into: str) -> pd.DataFrame:
    """Breakdown rows with category `source` added to `into` (per run and side)."""
    moved = bd[bd.category == source].set_index(["run_id", "side"]).value
    bd = bd[bd.category != source].copy()
    hit = bd.category == into
    extra = moved.reindex(pd.MultiIndex.from_frame(bd.loc[hit, ["run_id", "side"]])).fillna(0.0).to_numpy()
    bd.loc[hit, "value"] = bd.loc[hit, "value"].to_numpy() + extra
    return bd


def _tpc(tidy: pd.DataFrame) -> pd.DataFrame:
    """tpc rows from the view's CPU, the bottleneck side chosen per point as analysis.with_side_tpc
    chooses it (a point: the runs that share a run id's point part, <point>-r<k>)."""
    manifests = [{"run_id": r, "point": {"id": r.rsplit("-r", 1)[0]}} for r in tidy.run_id.unique()]
    return with_side_tpc(tidy, manifests)


# --- the ledger applied one item at a time (F04's table) ----------------------------------------------

STEPS = ("raw", "without the GRO-off stand-in (XDP copy, GRO lookups) and the other removed items (the local "
         "zero-copy copy, VM timer exits)", "the peer's transmit billed to it",
         "NIC stand-in set apart", "the ambiguous line left out")


def billing_steps(tidy: pd.DataFrame) -> pd.DataFrame:
    """Each run's CPU per side (100 = one core) as the ledger's items are applied one after another
    (STEPS: the fourth is the NIC-equivalent accounting, the fifth leaves the ambiguous line out too),
    for pairs of namespaces (each side's peer_transmit moves to the other side). Columns: run_id,
    config, step, sender, receiver."""
    cpu = tidy[(tidy.metric == "cpu_util_pct") & tidy.side.isin(["sender", "receiver"])]
    cpu = cpu.pivot_table(index="run_id", columns="side", values="value")
    led = tidy[tidy.metric == "ledger_pct"].pivot_table(index="run_id", columns=["side", "category"], values="value")
    config = tidy.drop_duplicates("run_id").set_index("run_id").config
    rows = []
    for run in led.index.intersection(cpu.index):
        c = cpu.loc[run]
        share = {(s, it): c[s] * led.loc[run].get((s, it), 0.0) / 100 for s in ("sender", "receiver") for it in ITEMS}
        now = {"sender": c["sender"], "receiver": c["receiver"]}
        for step in STEPS:
            if step == STEPS[1]:
                now = {s: now[s] - sum(share[(s, it)] for it in (XDP_COPY, GRO_LOOKUP, ZEROCOPY_COPY, VM_TIMER))
                       for s in now}
            elif step == STEPS[2]:
                now = {"sender": now["sender"] - share[("sender", PEER_TRANSMIT)] + share[("receiver", PEER_TRANSMIT)],
                       "receiver": now["receiver"] - share[("receiver", PEER_TRANSMIT)]
                       + share[("sender", PEER_TRANSMIT)]}
            elif step == STEPS[3]:
                now = {s: now[s] - share[(s, NIC_TSO)] - share[(s, NIC_WAKEUP)] for s in now}
            elif step == STEPS[4]:
                now = {s: now[s] - share[(s, NAPI_SCHEDULING)] for s in now}
            rows.append({"run_id": run, "config": config[run], "step": step, **now})
    return pd.DataFrame(rows, columns=["run_id", "config", "step", "sender", "receiver"])
