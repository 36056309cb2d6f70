"""§3.7 Fig. 11: one long flow sharing one core per side with 0, 1, 4 or 16 short (4 KB RPC) flows.

The sweep (experiment "mixed", workloads.MixedFlows) also runs the short flows without the long
one, their own baseline on that core. The notebook 08-mixed-flows.ipynb is a thin caller.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..analysis import metrics, verdicts
from ..analysis.findings import mixed_flows as rules
from ..analysis.findings.mixed_flows import KEY
from . import common, grid_view
from ..charts.grid import mixed_flows_charts as charts  # noqa: F401 (the notebook's section.charts)
from ..measure.sweep import SweepSpec, declared
from ..measure.options import LiveOptions

EXPERIMENT = "mixed"
CLASSES = ("long", "short")


def spec(short_flows=None, *, rpc_size_kb: int | None = None, config: str | None = None, **fields) -> SweepSpec:
    """sweeps/mixed-flows.yaml: every short-flow count with the long flow, and without it (the short
    flows' own baseline), with what is given over it (fields: any other SweepSpec field)."""
    return declared("mixed-flows", config=config, grid={
        KEY: None if short_flows is None else [int(k) for k in short_flows],
        "rpc_size": None if rpc_size_kb is None else [int(rpc_size_kb) * 1024]}, **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), top_up_rounds: int = 2,
            **spec_args) -> str:
    return grid_view.collect(mode, spec(**spec_args), runs_dir=runs_dir, campaign=campaign, name="mixed-flows",
                             live=live, top_up_rounds=top_up_rounds, judge=judge)


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    tidy = grid_view.tag(tidy, manifests, KEY, default=0)
    return grid_view.tag(tidy, manifests, "long_flow", default=1), manifests


def class_tpc(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per run: each flow class's share of the run's throughput-per-core (the classes add up to it).

    The flows share one core per side, so a class's tpc is its throughput over the cores the
    bottleneck side used: tpc x class throughput / total throughput.
    """
    flows = tidy[(tidy.side == "flow") & (tidy.metric == "flow_throughput_gbps")]
    per_class = flows.groupby(["run_id", "category"]).value.sum().unstack(fill_value=0.0)
    run = tidy[(tidy.metric.isin(["tpc_gbps", "throughput_gbps"])) & (tidy.side == "both")]
    run = run.pivot_table(index="run_id", columns="metric", values="value")
    out = run.join(per_class.reindex(columns=list(CLASSES), fill_value=0.0), how="left").fillna(0.0)
    for c in CLASSES:
        out[f"{c}_tpc_gbps"] = out.tpc_gbps * out[c] / out.throughput_gbps
    keys = tidy.drop_duplicates("run_id").set_index("run_id")[[KEY, "long_flow"]]
    return out.join(keys).reset_index()


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per (long flow present, short-flow count): tpc total and per class, throughput, CPU per side."""
    per_run = class_tpc(tidy)
    rows = []
    for (long_flow, k), g in tidy.groupby(["long_flow", KEY]):
        runs = per_run[(per_run.long_flow == long_flow) & (per_run[KEY] == k)]
        row = {"long_flow": int(long_flow), KEY: int(k)}
        for col in ("tpc_gbps", "long_tpc_gbps", "short_tpc_gbps"):
            row[col], row[col + "_ci95"] = metrics.confidence(runs[col])
        for col, metric, side in (("throughput_gbps", "throughput_gbps", "both"),
                                  ("transactions_per_s", "transactions_per_s", "both"),
                                  ("sender_cpu_pct", "cpu_util_pct", "sender"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver")):
            row[col] = grid_view.mean_ci(g, metric, side)[0]
        row["repetitions"] = len(runs)
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["long_flow", KEY], ascending=[False, True]).reset_index(drop=True)


def breakdown(tidy: pd.DataFrame) -> pd.DataFrame:
    """grid_view.breakdown per (long flow present, short-flow count)."""
    parts = [grid_view.breakdown(g, KEY).assign(long_flow=int(lf)) for lf, g in tidy.groupby("long_flow")]
    return pd.concat(parts, ignore_index=True)


def breakdown_table(bd: pd.DataFrame) -> pd.DataFrame:
    """The breakdown with the long flow, one column per short-flow count."""
    return grid_view.breakdown_table(bd[bd.long_flow == 1], KEY)


def reference(reference_dir) -> pd.DataFrame:
    """The paper's Fig. 11(a) numbers (stated changes, and the tpc values the text gives)."""
    return pd.read_csv(Path(reference_dir) / "mixed_fig11.csv", comment="#").set_index("quantity")


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir) -> verdicts.Verdicts:
    """F14 (tpc falls by about the paper's size) and F26 (the breakdown's shift), on clean runs, each
    by its rule in analysis/findings."""
    paper = reference(reference_dir).stated_change_pct
    return verdicts.collect(verdicts.load_findings(reference_dir),
                            {"F14": rules.f14(class_tpc(tidy), paper), "F26": rules.f26(tidy)})


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    return verdict_table.verdicts(load(runs_dir, campaign)[0], reference_dir)
