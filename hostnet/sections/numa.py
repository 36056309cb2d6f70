"""§3.6 Fig. 10(c): short flows with the application on a core of the NIC-local vs a NIC-remote NUMA node.

Needs a host with two or more NUMA nodes and a NIC that reports its node. Where the testbed lacks
them (the embedded testbed: one node, veth), run mode records the capability check and refuses;
replay shows the paper's published directions and the recorded reason. The notebook
09-numa.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..testbed import record as capability_record
from . import common
from ..charts.hardware import numa_charts
from .. import store
from ..analysis import verdicts
from ..analysis.findings import numa as rules
from ..testbed.session import is_file, kind_of, using
from ..testbed.capabilities import MissingCapability
from ..testbed.record import NUMA_PLACEMENTS, placement_plan
from ..measure.sweep import SweepSpec, declared, run_configs

PLACEMENTS = NUMA_PLACEMENTS
EXPERIMENT = "numa"


def reference(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "numa_fig10c.csv", comment="#")


def paper_testbed(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "paper_testbed.csv", comment="#")


def spec(*, config: str | None = None, rpc_size: int | None = None, flows: int | None = None,
         **fields) -> SweepSpec:
    """sweeps/numa.yaml (Fig. 10's short flows: RPC incast into the one receiver core, at each
    placement), with what is given over it (fields: any other SweepSpec field)."""
    return declared(EXPERIMENT, config=config, grid={"rpc_size": None if rpc_size is None else [int(rpc_size)],
                                                      "flows": None if flows is None else [int(flows)]}, **fields)


def run_live(testbed_file: str, record: dict, *, runs_dir, campaign: str, **spec_args) -> dict[str, list[int]]:
    """The declared sweep on a testbed.yaml whose receiver has the capability (its grid key
    `placement` moves the receiver's application per point); raises MissingCapability first, from
    the campaign's record. Returns the receiver CPUs of each placement. spec_args: spec()'s."""
    if not testbed_file:
        placement_plan(record["numa"]["embedded machine"])  # raises: the embedded testbed is one machine of veth
    sweep = spec(**spec_args)
    with using(testbed_file) as tb:
        plan = placement_plan(record["numa"][tb.endpoints["receiver"].host.name])
        run_configs(tb, sweep, runs_dir=runs_dir, campaign=campaign)
    return plan


def collect(mode: str, *, runs_dir, campaign: str = "", testbed: str = "embedded", **spec_args) -> tuple[str, str]:
    """(campaign, refusal): replay a campaign, or detect the testbed, record the check and run where it
    can (spec_args: spec()'s)."""
    if common.is_replay(mode, campaign):
        return campaign, ""
    # "embedded" (or an embedded testbed that is up): the one machine's check, which refuses
    testbed_file = testbed if is_file(testbed) else ""
    campaign = campaign or store.new_campaign_id(EXPERIMENT, kind_of(testbed))
    record = capability_record.detect(testbed_file)
    store.Campaign(runs_dir, campaign).write_capabilities(record)
    try:
        run_live(testbed_file, record, runs_dir=runs_dir, campaign=campaign, **spec_args)
    except MissingCapability as exc:
        return campaign, f"refused: {exc}"
    return campaign, ""


def load(runs_dir, campaign: str) -> tuple[pd.DataFrame, list[dict], dict]:
    """Tidy data of both placements, a column from each run's point (empty where nothing ran),
    manifests, the capability record."""
    record = store.Campaign(runs_dir, campaign).capabilities()
    if not store.load_manifests(runs_dir, campaign, EXPERIMENT):
        return pd.DataFrame(), store.Manifests(), record
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT)
    placement = {m["run_id"]: m["point"]["placement"] for m in manifests}
    return tidy.assign(placement=tidy.run_id.map(placement)), manifests, record


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
