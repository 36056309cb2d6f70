"""§3.2-3.4's findings and the appendix (notebooks 03-05, 12): F09 (tpc falls as flows share
cores), and §3.1's F04 and F05 judged at every n of a pattern as extensions."""
from __future__ import annotations

import pandas as pd

from .. import metrics, verdicts
from ...taxonomy import CATEGORIES
from ...dictionary import ENDPOINT_SIDES as SIDES


class PerRun:
    """A point's per-run values of the few metrics F04 and F09 read, split once: a verdict table asks
    for them some 20 times under each of its accountings, and filtering the whole frame each time
    was most of its cost."""
    METRICS = ("cores_count", "flow_count", "tpc_gbps", "cpu_util_pct")

    def __init__(self, tidy: pd.DataFrame):
        self._rows = tidy.loc[tidy.metric.isin(self.METRICS) & (tidy.category.fillna("") == ""),
                              ["flows", "metric", "side", "run_id", "value"]]
        self._at = self._rows.groupby(["flows", "metric", "side"], sort=False).indices  # key -> positions
        self._made: dict[tuple, pd.Series] = {}

    def __call__(self, n: int, metric: str, side: str) -> pd.Series:
        key = (n, metric, side)
        if key not in self._made:
            rows = self._rows.iloc[self._at.get(key, [])]
            self._made[key] = rows.set_index("run_id").value.astype(float).sort_index()
        return self._made[key]

    def cores(self, n: int, side: str) -> int:
        return int(max(1, self(n, "cores_count", side).max()))


def f09(tidy: pd.DataFrame, pattern: str, per_run: PerRun) -> verdicts.Judgement | None:
    """tpc falls from the smallest n to the largest (one-to-one: only where each flow has its core
    pair); None with one n."""
    if tidy.flows.nunique() < 2:
        return None
    _per_run, _cores = per_run, per_run.cores
    ns = sorted(tidy.flows.unique())
    first, last = ns[0], ns[-1]
    flows = int(_per_run(last, "flow_count", "both").max())
    if pattern == "one-to-one" and min(_cores(last, side) for side in SIDES) < flows:
        return verdicts.not_testable(
            f"at n={last} the {flows} flows share {_cores(last, 'sender')} sender and "
            f"{_cores(last, 'receiver')} receiver core(s)",
            "a core pair per flow (one-to-one's premise): as many cores per side as flows")
    d = verdicts.difference(_per_run(first, "tpc_gbps", "both"), _per_run(last, "tpc_gbps", "both"))
    j = verdicts.direction(d, want=">", what=f"tpc n={first} → n={last} ({flows} flows, "
                           f"{flows / _cores(last, 'receiver'):g} per receiver core)", unit="Gbit/s",
                           points=[{"flows": int(first)}, {"flows": int(last)}])
    every = ", ".join(f"n={n} {_per_run(n, 'tpc_gbps', 'both').mean():.1f}" for n in ns)
    return verdicts.Judgement(j.verdict, f"{j.shows}; means {every}", j.decide, j.points)


def f04(tidy: pd.DataFrame, per_run: PerRun) -> verdicts.Judgement:
    """The receiver's CPU per core is the higher, at every n of the pattern."""
    parts = []
    for n in sorted(tidy.flows.unique()):
        per_core = pd.concat([per_run(n, "cpu_util_pct", side) / per_run.cores(n, side) for side in SIDES],
                             axis=1, join="inner")
        d = verdicts.difference(per_core.iloc[:, 0], per_core.iloc[:, 1], paired=True)
        parts.append(verdicts.direction(d, want="<", what=f"n={n} CPU per core sender → receiver", unit="%",
                                        fmt=".0f", points=[{"flows": int(n)}]))
    j = verdicts.combine(parts)
    return verdicts.Judgement(j.verdict, "checked at every n of this pattern: " + j.shows, j.decide, j.points, j.holds)


def f05(tidy: pd.DataFrame, config: str) -> verdicts.Judgement:
    """Data copy leads both sides' breakdown at every n (all-opts campaigns)."""
    if config != "all-opts":
        return verdicts.not_testable(f"the campaign ran {config}",
                                     "an all-opts campaign (the finding is about all-opts)")
    metric = metrics.breakdown_metric(tidy)
    cats = [c for c in CATEGORIES if not (metric == "breakdown_pct" and c == "etc")]
    parts = [verdicts.largest(verdicts.shares_by_run(tidy, metric, side, cats, flows=n), "data_copy",
                              what=f"n={n} {side}", points=[{"flows": int(n)}])
             for n in sorted(tidy.flows.unique()) for side in SIDES]
    j = verdicts.combine(parts)
    note = " (leaf-only samples, etc excluded)" if metric == "breakdown_pct" else ""
    return verdicts.Judgement(j.verdict, j.shows + note, j.decide, j.points)


def one_core_pair(tidy: pd.DataFrame, per_run: PerRun | None = None) -> bool:
    """Every n of the campaign ran on one sender and one receiver core."""
    per_run = per_run or PerRun(tidy)
    return all(per_run.cores(n, side) == 1 for n in tidy.flows.unique() for side in SIDES)


def no_clean_run(tidy: pd.DataFrame) -> verdicts.Judgement:
    """What every finding says of a campaign whose runs were all flagged."""
    runs = tidy.drop_duplicates("run_id")
    return verdicts.not_testable(
        f"no clean run: all {len(runs)} runs were flagged (e.g. {runs.flagged.iloc[0]})",
        "clean runs: the same sweep on an idle machine (a live run tops up points without a clean run, "
        "within its budget)")
