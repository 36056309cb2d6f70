"""What the one-grid-key sections (packet loss, short flows, mixed flows) share: a sweep over one
grid key run live or replayed, tidy rows tagged with the point's value, per-value means with 95 %
CIs, per-value CPU breakdowns (their charts are charts/grid.py's; verdicts are analysis.verdicts', on
per-run values)."""
from __future__ import annotations

import pandas as pd

from ..analysis import metrics
from .. import store
from ..testbed.session import kind_of
from . import common
from ..analysis.metrics import BREAKDOWN_ORDER
# the charts the one-grid-key sections draw, named here as before
from ..measure import topup
from ..measure.sweep import SweepSpec, run_sweep
from ..measure.options import LiveOptions


# Clean runs per point a live sweep tops up to: two give a confidence interval, so a verdict can
# tell a difference from the noise.
CLEAN_RUNS = 2


def collect(mode: str, spec: SweepSpec, *, runs_dir, campaign: str, name: str, live: LiveOptions = LiveOptions(),
            top_up_rounds: int = 2, judge=None) -> str:
    """Replay: the campaign named. Run: the sweep on `live.testbed` (LiveOptions), into `campaign`
    or a new <date>-<name>-<kind> campaign, then topup.fill so no point is left without a clean run,
    then (given the section's judge) topup.decide until its verdicts are decided or the budget is
    spent; returns the campaign's name."""
    if common.is_replay(mode, campaign):
        return campaign
    campaign = campaign or store.new_campaign_id(name, kind_of(live.testbed))
    with live.testbed_for() as tb:
        run_sweep(tb, spec, runs_dir=runs_dir, campaign=campaign)
        topup.fill(tb, runs_dir=runs_dir, campaign=campaign, min_clean=CLEAN_RUNS, rounds=top_up_rounds)
        if judge is not None:
            live.top_up(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=common.REFERENCE_DIR)
    return campaign


def tag(tidy: pd.DataFrame, manifests: list[dict], key: str, default=None) -> pd.DataFrame:
    """Each tidy row gets its run's value of grid key `key` (runs without one get `default`)."""
    value = {m["run_id"]: m.get("point", {}).get(key, default) for m in manifests}
    tidy = tidy.assign(**{key: tidy.run_id.map(value)})
    return tidy[tidy[key].notna()]


def mean_ci(g: pd.DataFrame, metric: str, side: str, category: str | None = None) -> tuple[float, float]:
    rows = g[(g.metric == metric) & (g.side == side)]
    if category is not None:
        rows = rows[rows.category.fillna("") == category]
    return metrics.confidence(rows.value)


def counter(g: pd.DataFrame, side: str, name: str) -> pd.Series:
    """One counter's per-run deltas (counter_delta_count rows, e.g. 'snmp:Tcp.RetransSegs')."""
    rows = g[(g.metric == "counter_delta_count") & (g.side == side) & (g.category == name)]
    return rows.set_index("run_id").value


def breakdown(tidy: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per grid value, side and category: mean share of busy samples (%) with its 95 % CI, and the
    breakdown it is a share of (`metric`: the attributed one where runs kept their stacks), whose
    caveat the chart says."""
    metric = metrics.breakdown_metric(tidy)
    rows = []
    part = tidy[tidy.metric == metric]
    for (value, side, cat), g in part.groupby([key, "side", "category"]):
        mean, ci = metrics.confidence(g.value)
        rows.append({key: value, "side": side, "category": cat, "metric": metric, "pct": mean, "pct_ci95": ci})
    return pd.DataFrame(rows, columns=[key, "side", "category", "metric", "pct", "pct_ci95"])


def breakdown_table(bd: pd.DataFrame, key: str) -> pd.DataFrame:
    """Side x category rows, one column per grid value: the breakdown figure as numbers (%)."""
    part = bd[bd.category.isin(BREAKDOWN_ORDER)]
    t = part.pivot_table(index=["side", "category"], columns=key, values="pct")
    order = [(s, c) for s in ("sender", "receiver") for c in BREAKDOWN_ORDER if (s, c) in t.index]
    return t.reindex(order)
