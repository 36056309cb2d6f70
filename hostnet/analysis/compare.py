"""Two campaigns (e.g. two kernels, two hosts) side by side, point by point."""
from __future__ import annotations

import pandas as pd

from .. import store
from .metrics import confidence

POINT_METRICS = (("tpc_gbps", "both"), ("throughput_gbps", "both"), ("cpu_util_pct", "sender"),
                 ("cpu_util_pct", "receiver"))


def _point_table(runs_dir, campaign: str) -> pd.DataFrame:
    """One row per (point, metric, side, category): mean and 95 % CI over repetitions."""
    tidy = store.load_tidy(runs_dir, campaign)
    points = {m["run_id"]: {k: v for k, v in m.get("point", {"config": m["config"]["name"]}).items() if k != "id"}
              for m in store.load_manifests(runs_dir, campaign) if m["status"] == "ok"}
    tidy = tidy[tidy.run_id.isin(points)]
    tidy = tidy.assign(point=tidy.run_id.map(lambda r: ", ".join(f"{k}={v}" for k, v in sorted(points[r].items()))))
    keep = tidy[tidy.metric.isin([m for m, _ in POINT_METRICS]) | (tidy.metric == "breakdown_pct")]
    rows = []
    for (point, metric, side, cat), g in keep.groupby(["point", "metric", "side", "category"]):
        mean, ci = confidence(g.value)
        rows.append({"point": point, "metric": metric, "side": side, "category": cat, "mean": mean, "ci95": ci,
                     "n": len(g)})
    return pd.DataFrame(rows)


def compare(runs_dir, a: str, b: str) -> pd.DataFrame:
    """Per point and metric: A and B means with CIs, and B - A (points present in both)."""
    ta, tb = _point_table(runs_dir, a), _point_table(runs_dir, b)
    if ta.empty or tb.empty:
        raise FileNotFoundError(f"no successful runs in {a if ta.empty else b} under {runs_dir}")
    keys = ["point", "metric", "side", "category"]
    m = ta.merge(tb, on=keys, suffixes=("_a", "_b"))
    if m.empty:
        raise ValueError(f"{a} and {b} have no point in common (different parameters?)")
    m["delta"] = m["mean_b"] - m["mean_a"]
    m["delta_ci95"] = (m["ci95_a"] ** 2 + m["ci95_b"] ** 2) ** 0.5  # independent samples
    rank = {metric: i for i, (metric, _) in enumerate(POINT_METRICS)}
    m["_rank"] = m.metric.map(lambda x: rank.get(x, len(rank)))
    return m.sort_values(["point", "_rank", "side", "category"]).drop(columns="_rank").reset_index(drop=True)


def format_comparison(m: pd.DataFrame) -> str:
    def fmt(mean, ci):
        return f"{mean:8.2f}" + ("" if pd.isna(ci) else f" ±{ci:.2f}")
    lines = []
    for point, g in m.groupby("point", sort=False):
        lines.append(f"\n{point}")
        for r in g.itertuples():
            what = f"{r.metric}[{r.side}{'/' + r.category if r.category else ''}]"
            lines.append(f"  {what:<40} A {fmt(r.mean_a, r.ci95_a):<18} B {fmt(r.mean_b, r.ci95_b):<18} "
                         f"B-A {fmt(r.delta, r.delta_ci95)}")
    return "\n".join(lines).lstrip("\n")
