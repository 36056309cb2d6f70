"""Two campaigns (e.g. two kernels, two hosts) side by side, point by point, by the verdict rule.

The runs are the ones the notebooks count: runs flagged for foreign load (or host contention, a
setting that moved, a short window) are left out and counted; where both campaigns have enough
runs without perf at every point, throughput and CPU come from those (metrics.prefer_unprofiled's
rule, decided for both at once: one side's numbers never carry perf's cost and the other's not). Each
difference B - A has the verdict rule's interval (verdicts.difference: Welch's t over the clean
runs at the sequential design's level, verdicts.CONFIDENCE, 98.2 %; unbounded with fewer than
verdicts.MIN_RUNS a side), and `differs` says whether it excludes zero, as a verdict would read it.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from .. import store
from . import metrics
from .verdicts import CONFIDENCE, difference
from . import flags

POINT_METRICS = (("tpc_gbps", "both"), ("throughput_gbps", "both"), ("cpu_util_pct", "sender"),
                 ("cpu_util_pct", "receiver"))
COLUMNS = ["point", "metric", "side", "category", "n_a", "mean_a", "n_b", "mean_b", "delta", "delta_lo",
           "delta_hi", "differs"]


def _clean(runs_dir, campaign: str) -> tuple[pd.DataFrame, list[dict], dict, int]:
    """The campaign's rows of usable runs, its manifests, each run's point label, and how many
    successful runs were flagged and left out."""
    tidy = store.load_tidy(runs_dir, campaign)
    manifests = [m for m in store.load_manifests(runs_dir, campaign) if m["status"] == "ok"]
    flagged = {m["run_id"] for m in manifests if flags.flagged(m)}
    points = {m["run_id"]: ", ".join(f"{k}={v}" for k, v in sorted(
        (m.get("point") or {"config": m["config"]["name"]}).items()) if k != "id") for m in manifests}
    return tidy[tidy.run_id.isin(set(points) - flagged)], manifests, points, len(flagged)


def _values(tidy: pd.DataFrame, points: dict) -> dict[tuple, list[float]]:
    """(point, metric, side, category) -> one value per run."""
    bd = metrics.breakdown_metric(tidy) if not tidy.empty else "breakdown_pct"
    wanted = set(POINT_METRICS)
    out: dict[tuple, list[float]] = {}
    for run, metric, side, category, value in zip(tidy.run_id.tolist(), tidy.metric.tolist(), tidy.side.tolist(),
                                                  tidy.category.fillna("").tolist(), tidy.value.tolist(), strict=True):
        if metric == bd or (metric, side) in wanted:
            out.setdefault((points[run], metric, side, category), []).append(value)
    return out


def compare(runs_dir, a: str, b: str) -> Comparison:
    """Per point and metric present in both: run counts, means, and B - A with the verdict rule's
    interval (Comparison.rows); each campaign's name, usable runs and flagged runs left out (.a, .b)."""
    (ta, ma, pa, fa), (tb, mb, pb, fb) = _clean(runs_dir, a), _clean(runs_dir, b)
    if ta.empty or tb.empty:
        raise FileNotFoundError(f"no usable runs in {a if ta.empty else b} under {runs_dir}")
    # throughput and CPU from runs without perf only where both campaigns have them at every point:
    # else one side's numbers would carry perf's cost and the other's not
    unprofiled = metrics.unprofiled_suffice(ta, ma) and metrics.unprofiled_suffice(tb, mb)
    ta, tb = metrics.with_runs_of_kind(ta, ma, unprofiled), metrics.with_runs_of_kind(tb, mb, unprofiled)
    va, vb = _values(ta, pa), _values(tb, pb)
    common = [k for k in va if k in vb]
    if not common:
        raise ValueError(f"{a} and {b} have no point in common (different parameters?)")
    rows = []
    for key in common:
        d = difference(va[key], vb[key])
        rows.append(dict(zip(COLUMNS[:4], key, strict=True), n_a=len(va[key]), mean_a=d.mean_a, n_b=len(vb[key]),
                         mean_b=d.mean_b, delta=d.mean_b - d.mean_a, delta_lo=d.lo, delta_hi=d.hi,
                         differs=bool(d.lo > 0 or d.hi < 0)))
    rank = {}
    for i, (metric, _) in enumerate(POINT_METRICS):
        rank.setdefault(metric, i)  # the first listed; breakdowns after them all
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["_rank"] = out.metric.map(lambda x: rank.get(x, len(POINT_METRICS)))
    out = out.sort_values(["point", "_rank", "side", "category"]).drop(columns="_rank").reset_index(drop=True)
    numbers = "runs without perf" if unprofiled else "runs with perf"
    return Comparison(out, {"campaign": a, "runs": int(ta.run_id.nunique()), "flagged": fa},
                      {"campaign": b, "runs": int(tb.run_id.nunique()), "flagged": fb}, numbers)


@dataclass(frozen=True)
class Comparison:
    """Two campaigns point by point: a row per (point, metric, side, category) with B - A and its
    interval, each campaign's usable and flagged runs, and which runs throughput and CPU came from."""
    rows: pd.DataFrame
    a: dict
    b: dict
    numbers_from: str  # "runs with perf" or "runs without perf" (both campaigns alike)

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "throughput and CPU from": self.numbers_from,
                "rows": json.loads(self.rows.to_json(orient="records"))}


def format_comparison(m: Comparison) -> str:
    """The text `hostnet compare` prints: the two campaigns' runs, then per point each metric's
    means (n runs) and B - A with its interval; '*' where the interval excludes zero."""
    def interval(lo, hi):
        return "[undecided: too few runs]" if math.isinf(lo) or math.isinf(hi) else f"[{lo:.2f}, {hi:.2f}]"
    lines = [f"{side.upper()}: {c['campaign']}: {c['runs']} usable runs, {c['flagged']} flagged runs left out"
             for side, c in (("a", m.a), ("b", m.b))]
    lines.append(f"throughput and CPU from {m.numbers_from} on both sides")
    lines.append(f"B-A: the difference of the means and its {CONFIDENCE:.1%} interval over clean runs (Welch, the "
                 f"verdict rule, docs/verdicts.md); * excludes 0")
    for point, g in m.rows.groupby("point", sort=False):
        lines.append(f"\n{point}")
        for r in g.itertuples():
            what = f"{r.metric}[{r.side}{'/' + r.category if r.category else ''}]"
            lines.append(f"  {what:<48} A {r.mean_a:8.2f} (n={r.n_a:<2}) B {r.mean_b:8.2f} (n={r.n_b:<2}) "
                         f"B-A {r.delta:8.2f} {interval(r.delta_lo, r.delta_hi)}{' *' if r.differs else ''}")
    return "\n".join(lines)
