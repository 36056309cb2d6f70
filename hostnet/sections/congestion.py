"""§3.10: congestion control (cubic, reno, bbr, dctcp where available) vs throughput-per-core.

Notebook 11-congestion-control.ipynb calls only these; notebook 14 replays the same campaign
for the TCP part of the end-host loss study (throughput and retransmits, 1 and 4 flows).
An algorithm the host lacks is refused up front by the capability check and kept as a row
"not available on this host" (recorded in the campaign's refused.json), never dropped silently.
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from ..analysis import metrics, verdicts
from ..analysis.findings import congestion as rules
from ..analysis.findings.end_host_loss import tcp_verdict
from ..measure import config as stackconfig
from .. import store
from ..testbed.session import kind_of
from . import common
from ..charts.congestion import charts  # noqa: F401 (the notebook's congestion.charts)
from ..testbed.capabilities import point_requirements
from ..measure.sweep import SweepSpec, declared, run_sweep
from ..measure.options import LiveOptions

EXPERIMENT = "one-to-one"
REFUSED_FILE = "refused.json"


def spec(algorithms=None, *, config: str | None = None, flows=None, **fields) -> SweepSpec:
    """sweeps/congestion-control.yaml: congestion controls x flow counts, with what is given over it
    (fields: any other SweepSpec field)."""
    grid = {"congestion_control": algorithms, "flows": None if flows is None else [int(n) for n in flows]}
    return declared("congestion-control", config=config, grid=grid, **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), **spec_args) -> str:
    """Replay the campaign named, or sweep the algorithms the testbed has (the others refused, named in
    the campaign's REFUSED_FILE) on `live.testbed`; spec_args: spec()'s."""
    if common.is_replay(mode, campaign):
        return campaign
    sweep = spec(**spec_args)
    algorithms = sweep.grid["congestion_control"]
    campaign = campaign or store.new_campaign_id("congestion-control", kind_of(live.testbed))
    with live.testbed_for("cc") as tb:
        refused = {}
        for cc in algorithms:  # the capability check every sweep runs, asked per algorithm
            problems = [p for c in sweep.configs
                        for p in point_requirements(tb, stackconfig.get_config(c, congestion_control=cc))]
            if problems:
                refused[cc] = "; ".join(dict.fromkeys(problems))
        ok = [cc for cc in algorithms if cc not in refused]
        store.Campaign(runs_dir, campaign).write_json(REFUSED_FILE, refused)
        if ok:
            run_sweep(tb, replace(sweep, grid={**sweep.grid, "congestion_control": ok}), runs_dir=runs_dir,
                      campaign=campaign)
            live.top_up(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=common.REFERENCE_DIR)
    return campaign


def refused(runs_dir, campaign: str) -> dict[str, str]:
    return store.Campaign(runs_dir, campaign).read_json(REFUSED_FILE, {})


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    point = {m["run_id"]: m.get("point", {}) for m in manifests}
    tidy = tidy.assign(congestion_control=tidy.run_id.map(lambda r: point[r].get("congestion_control")),
                       flows=tidy.run_id.map(lambda r: int(point[r].get("flows", 1))))
    return tidy[tidy.congestion_control.notna()], manifests


_COLUMNS = (("throughput_gbps", "throughput_gbps", "both"), ("retransmits_count", "retransmits_count", "sender"),
            ("tpc_gbps", "tpc_gbps", "both"), ("sender_cpu_pct", "cpu_util_pct", "sender"),
            ("receiver_cpu_pct", "cpu_util_pct", "receiver"))


def table(tidy: pd.DataFrame, refused_algorithms: dict[str, str] | None = None, algorithms=None) -> pd.DataFrame:
    """Per algorithm and flow count, in the order of `algorithms` (None: the declaration's,
    sweeps/congestion-control.yaml): medians over repetitions (tpc also mean ± 95 % CI). Charts and
    verdicts keep this order."""
    algorithms = algorithms or spec().grid["congestion_control"]
    rows = []
    present = set(tidy.congestion_control)
    for cc in [a for a in algorithms if a in present or a in (refused_algorithms or {})]:
        if cc in (refused_algorithms or {}):
            rows.append({"congestion_control": cc, "flows": None, "status": "not available on this host"})
            continue
        for n, g in tidy[tidy.congestion_control == cc].groupby("flows"):
            row = {"congestion_control": cc, "flows": int(n), "status": "measured"}
            for col, metric, side in _COLUMNS:
                row[col] = g[(g.metric == metric) & (g.side == side)].value.median()
            mean, ci = metrics.confidence(g[(g.metric == "tpc_gbps") & (g.side == "both")].value)
            row["tpc_mean_gbps"], row["tpc_ci95_gbps"] = mean, ci
            row["repetitions"] = int(((g.metric == "tpc_gbps") & (g.side == "both")).sum())
            rows.append(row)
    return pd.DataFrame(rows)


def breakdown(tidy: pd.DataFrame, flows: int = 1) -> pd.DataFrame:
    """CPU breakdown (median % per category) per algorithm and side, for one flow count, and the
    breakdown it is a share of (`metric`: the attributed one where runs kept their stacks)."""
    metric = metrics.breakdown_metric(tidy)
    t = tidy[(tidy.metric == metric) & (tidy.flows == flows) & tidy.side.isin(["sender", "receiver"])]
    out = t.groupby(["congestion_control", "side", "category"]).value.median().rename("pct").reset_index()
    return out.assign(metric=metric)


@verdicts.under_accountings
def verdict_table(summary: pd.DataFrame, tidy: pd.DataFrame, manifests: list[dict], reference_dir) -> verdicts.Verdicts:
    """F17 by its rule in analysis/findings: tpc changes little across algorithms because the
    receiver is the bottleneck, a premise checked per point."""
    return verdicts.collect(verdicts.load_findings(reference_dir), {"F17": rules.f17(summary, tidy)})


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section): F17, and F28 (notebook 14
    judges the 2010 study's TCP variants on this same campaign), so a top-up serves both."""
    tidy, manifests = load(runs_dir, campaign)
    refused_algorithms = refused(runs_dir, campaign)
    f17 = verdict_table.verdicts(table(tidy, refused_algorithms), tidy, manifests, reference_dir)
    return f17.joined(tcp_verdict.verdicts(tidy, refused_algorithms, reference_dir))
