"""§3.6 Fig. 10: short flows — an incast of ping-pong RPC flows at RPC sizes 4-64 KB.

netperf TCP_RR (sockperf where netperf is missing), every flow into one receiver core. The
notebook 07-short-flows.ipynb is a thin caller of these functions.
"""
from __future__ import annotations


import pandas as pd

from ..analysis import metrics, verdicts
from ..analysis.findings import short_flows as rules
from ..analysis.findings.short_flows import KEY
from . import common, grid_view
from ..charts import grid
from ..measure.sweep import SweepSpec, declared
from ..derive.workloads import SOCKPERF_MAX_BYTES
from ..measure.options import LiveOptions

EXPERIMENT = "incast"


def spec(rpc_sizes_kb=None, *, flows: int | None = None, config: str | None = None, **fields) -> SweepSpec:
    """sweeps/short-flows.yaml, with what is given over it (fields: any other SweepSpec field)."""
    return declared("short-flows", config=config, grid={
        KEY: None if rpc_sizes_kb is None else [size_bytes(kb) for kb in rpc_sizes_kb],
        "flows": None if flows is None else [int(flows)]}, **fields)


def size_bytes(kb) -> int:
    """A size in KB as the tools take it: "64 KB" is sockperf's largest message, 65506 bytes."""
    return min(int(kb) * 1024, SOCKPERF_MAX_BYTES)


def recorded_size(kb) -> int:
    """The size a run of `kb` KB records (replay's selection): only whole KB up to 64, since larger
    sizes are capped at sockperf's largest message and would select the 64 KB runs."""
    if isinstance(kb, bool) or not isinstance(kb, (int, float)) or int(kb) != kb or not 0 < kb <= 64:
        raise ValueError(f"{kb!r} KB is not a size a run records (whole KB, at most 64)")
    return size_bytes(kb)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), top_up_rounds: int = 2,
            **spec_args) -> str:
    return grid_view.collect(mode, spec(**spec_args), runs_dir=runs_dir, campaign=campaign, name="short-flows",
                             live=live, top_up_rounds=top_up_rounds, judge=judge)


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    tidy = grid_view.tag(tidy, manifests, KEY)
    return tidy.assign(rpc_size_kb=(tidy[KEY] / 1024).round().astype(int)), manifests


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per RPC size: tpc, throughput (request + response bytes), transactions, CPU per side."""
    rows = []
    for kb, g in tidy.groupby("rpc_size_kb"):
        row = {"rpc_size_kb": int(kb)}
        for col, metric, side in (("tpc_gbps", "tpc_gbps", "both"), ("throughput_gbps", "throughput_gbps", "both"),
                                  ("transactions_per_s", "transactions_per_s", "both"),
                                  ("sender_cpu_pct", "cpu_util_pct", "sender"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver")):
            row[col], row[col + "_ci95"] = grid_view.mean_ci(g, metric, side)
        row["flows"] = int(g[(g.metric == "flow_count")].value.max())
        row["repetitions"] = int(((g.metric == "tpc_gbps") & (g.side == "both")).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def breakdown(tidy: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown(tidy, KEY)


def breakdown_table(bd: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown_table(bd, KEY)


def charts(summary: pd.DataFrame, bd: pd.DataFrame, label: str) -> dict:
    s = summary.assign(size=summary.rpc_size_kb.astype(str) + " KB")
    tpc = grid.tpc_bars(s, "size", "RPC size (request = response)",
                             "Fig. 10(a) analogue: throughput per core vs RPC size",
                             [*label.split("\n"), f"{int(s.flows.max())} ping-pong RPC flows into one core (incast); "
                              "request + response bytes; mean and 95 % CI"], ("transactions_per_s",))
    sizes = bd.assign(**{KEY: (bd[KEY] / 1024).round().astype(int).astype(str) + " KB"})
    bd_chart = grid.breakdown_chart(sizes, KEY, "Fig. 10(b) analogue: CPU breakdown vs RPC size", label,
                                         "RPC size")
    return {"short-flows-tpc": tpc, "short-flows-breakdown": bd_chart}


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir, manifests: list[dict] | None = None) -> verdicts.Verdicts:
    """F11 (4 KB: data copy not dominant), F12 (16 KB+: data copy dominates), F13 (NUMA), F24 (tpc
    rises with RPC size), each by its rule in analysis/findings, on clean runs."""
    embedded = (manifests[0]["testbed"]["kind"] if manifests else "embedded") == "embedded"
    metric, sizes = metrics.breakdown_metric(tidy), sorted(int(v) for v in tidy[KEY].unique())
    judged = {"F11": rules.f11(tidy, metric, sizes), "F12": rules.f12(tidy, metric, sizes), "F13": rules.f13(embedded),
              "F24": rules.f24(tidy, sizes)}
    return verdicts.collect(verdicts.load_findings(reference_dir), judged)


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    tidy, manifests = load(runs_dir, campaign)
    return verdict_table.verdicts(tidy, reference_dir, manifests)
