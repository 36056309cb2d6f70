"""§3.6 Fig. 10(c): short flows with the application on a core of the NIC-local vs a NIC-remote NUMA node.

Needs a host with two or more NUMA nodes and a NIC that reports its node. Where the testbed lacks
them (the embedded testbed: one node, veth), run mode records the capability check and refuses;
replay shows the paper's published directions and the recorded reason. The notebook
09-numa.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from ..testbed import record as capability_record
from . import common
from ..charts.hardware import numa_charts
from .. import store
from ..analysis import verdicts
from ..analysis.findings import numa as rules
from ..testbed.session import is_file, kind_of, using
from ..measure.sweep import SweepSpec, run_configs
from ..testbed.capabilities import MissingCapability

PLACEMENTS = ("nic-local", "nic-remote")
EXPERIMENT = "numa"


def reference(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "numa_fig10c.csv", comment="#")


def paper_testbed(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "paper_testbed.csv", comment="#")


def placement_plan(layout: dict) -> dict[str, list[int]]:
    """Receiver application CPUs per placement: one core on the NIC's node, one on another node."""
    nodes = {int(k): v for k, v in layout["nodes"].items()}
    problems = []
    if len(nodes) < 2:
        problems.append(f"one NUMA node ({len(nodes)} in /sys/devices/system/node): nothing is NIC-remote")
    if layout.get("nic_node") is None:
        what = layout.get("iface") or "the embedded testbed's veth"
        problems.append(f"{what} has no NIC reporting a NUMA node (/sys/class/net/IFACE/device/numa_node)")
    if problems:
        raise MissingCapability("; ".join(problems))
    local = nodes.get(layout["nic_node"])
    remote = [n for n in sorted(nodes) if n != layout["nic_node"] and nodes[n]]
    if not local:
        raise MissingCapability(f"NUMA node {layout['nic_node']} (the NIC's) has no CPUs")
    if not remote:
        raise MissingCapability(f"no NUMA node other than the NIC's ({layout['nic_node']}) has CPUs")
    return {"nic-local": local[:1], "nic-remote": nodes[remote[0]][:1]}


def _with_receiver_cpus(tb, cpus: list[int]):
    """The same testbed with the receiver application pinned elsewhere."""
    eps = dict(tb.endpoints)
    eps["receiver"] = dataclasses.replace(eps["receiver"], cpus=list(cpus))
    return dataclasses.replace(tb, endpoints=eps)


def run_live(testbed_file: str, record: dict, *, runs_dir, campaign: str, duration: int, warmup: int,
             repetitions: int, rpc_size: int, flows: int = 16, config: str = "all-opts") -> dict[str, list[int]]:
    """Both placements on a testbed.yaml whose receiver has the capability; raises MissingCapability first."""
    if not testbed_file:
        placement_plan(record["numa"]["embedded machine"])  # raises: the embedded testbed is one machine of veth
    with using(testbed_file) as tb:
        plan = placement_plan(record["numa"][tb.endpoints["receiver"].host.name])
        for placement, cpus in plan.items():
            # Fig. 10's short flows: RPC incast into the one receiver core, stored per placement
            spec = SweepSpec.of_configs([config], flows=flows, rpc_size=rpc_size, experiment="incast",
                                        duration=duration, warmup=warmup, repetitions=repetitions,
                                        label=f"{EXPERIMENT}-{placement}")
            run_configs(_with_receiver_cpus(tb, cpus), spec, runs_dir=runs_dir, campaign=campaign)
    return plan


def collect(mode: str, *, runs_dir, campaign: str = "", testbed: str = "embedded", duration: int = 5,
            warmup: int = 2, repetitions: int = 3, rpc_size: int = 4096) -> tuple[str, str]:
    """(campaign, refusal): replay a campaign, or detect the testbed, record the check and run where it can."""
    if common.is_replay(mode, campaign):
        return campaign, ""
    # "embedded" (or an embedded testbed that is up): the one machine's check, which refuses
    testbed_file = testbed if is_file(testbed) else ""
    campaign = campaign or store.new_campaign_id(EXPERIMENT, kind_of(testbed))
    record = capability_record.detect(testbed_file)
    store.Campaign(runs_dir, campaign).write_capabilities(record)
    try:
        run_live(testbed_file, record, runs_dir=runs_dir, campaign=campaign, duration=duration, warmup=warmup,
                 repetitions=repetitions, rpc_size=rpc_size)
    except MissingCapability as exc:
        return campaign, f"refused: {exc}"
    return campaign, ""


def load(runs_dir, campaign: str) -> tuple[pd.DataFrame, list[dict], dict]:
    """Tidy data of both placements (empty where nothing ran), manifests, the capability record."""
    record = store.Campaign(runs_dir, campaign).capabilities()
    frames, manifests = [], store.Manifests()
    for placement in PLACEMENTS:
        exp = f"{EXPERIMENT}-{placement}"
        ms = store.load_manifests(runs_dir, campaign, exp)
        if ms:
            tidy, ms = common.load(runs_dir, campaign, exp)
            frames.append(tidy.assign(placement=placement))
            manifests += ms
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), manifests, record


def nodes_table(record: dict, reference_dir) -> pd.DataFrame:
    """NUMA nodes: the paper's servers vs each host of this testbed, and the NIC's node."""
    paper = paper_testbed(reference_dir).set_index("property")
    rows = [{"testbed": "paper (4-socket Xeon Gold 6128)", "numa_nodes": int(paper.loc["numa_nodes", "value"]),
             "nic_node": "one of the sockets"}]
    for host, layout in record["numa"].items():
        rows.append({"testbed": f"this testbed: {host}", "numa_nodes": len(layout["nodes"]),
                     "nic_node": "none (no NIC)" if layout["nic_node"] is None else str(layout["nic_node"])})
    return pd.DataFrame(rows)


def measured_table(tidy: pd.DataFrame) -> pd.DataFrame:
    if tidy.empty:
        return pd.DataFrame(columns=["placement", "tpc_gbps", "runs"])
    t = tidy[(tidy.metric == "tpc_gbps") & (tidy.side == "both")]
    return t.groupby("placement").value.agg(tpc_gbps="median", runs="count").reset_index()


def charts(nodes: pd.DataFrame, measured: pd.DataFrame, label: str) -> dict:
    """Fig. 10(c): NUMA nodes, paper vs this testbed, and tpc per placement where measured."""
    return numa_charts(nodes, measured, label, PLACEMENTS)


def refusal_reason(record: dict) -> str:
    """Why this testbed cannot run Fig. 10(c), from the recorded check ('' when it can)."""
    reasons = []
    for host, layout in record["numa"].items():
        try:
            placement_plan(layout)
        except MissingCapability as exc:
            reasons.append(f"{host}: {exc}")
    return "; ".join(reasons) if len(reasons) == len(record["numa"]) else ""


@verdicts.under_accountings
def verdict_table(record: dict, tidy: pd.DataFrame, reference_dir) -> verdicts.Verdicts:
    """F13 by its rule in analysis/findings; not testable with the capability check's reason."""
    why = refusal_reason(record) or "no NIC-local/NIC-remote runs in this campaign"
    return verdicts.collect(verdicts.load_findings(reference_dir), {"F13": rules.f13(tidy, PLACEMENTS, why)})
