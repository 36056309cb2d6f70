"""The values a rule reads: the paper's findings, a point's clean per-run values, and per-run
breakdown shares (with the sample floor)."""
from __future__ import annotations


from pathlib import Path

import pandas as pd


def load_findings(reference_dir) -> pd.DataFrame:
    return pd.read_csv(Path(reference_dir) / "findings.csv")


def clean_values(tidy: pd.DataFrame, metric: str, side: str, category: str = "", **point) -> list[float]:
    """Per-run values of one metric (one row per run) where the tidy columns match `point`."""
    rows = tidy[tidy.metric == metric]  # the metric first: the other tests run on its few rows
    rows = rows[(rows.side == side) & (rows.category.fillna("") == category)]
    for key, value in point.items():
        rows = rows[rows[key] == value]
    return rows.sort_values("run_id").value.astype(float).tolist()


# A run's share of a layer is a count of its side's busy perf samples: below this many, its
# sampling error alone (a binomial half-width of up to ±3.1 points at 1,000 samples) is as large as
# the differences the share findings turn on, so the run takes no part in a verdict on shares.
MIN_BUSY_SAMPLES = 1000


class Shares(dict):
    """shares_by_run's result: category -> per-run shares, and the runs left out for too few busy
    samples (`undersampled`: their sample counts). True while any run was found, kept or not, so a
    caller judges it and the verdict says why it has nothing to go on."""

    def __init__(self, items=(), undersampled: dict[str, float] | None = None):
        super().__init__(items)
        self.undersampled = dict(undersampled or {})

    def __bool__(self) -> bool:
        return bool(len(self)) or bool(self.undersampled)

    def __missing__(self, category: str) -> list[float]:
        return []  # every run left out: no shares of any category

    def note(self) -> str:
        """What was left out, for a verdict's text ("" when nothing was)."""
        if not self.undersampled:
            return ""
        counts = sorted(self.undersampled.values())
        return (f" ({len(counts)} run{'s' if len(counts) > 1 else ''} under the {MIN_BUSY_SAMPLES:,}-sample floor "
                f"left out: {counts[0]:.0f}-{counts[-1]:.0f} busy samples)")


def shares_by_run(tidy: pd.DataFrame, metric: str, side: str, categories, **point) -> Shares:
    """Per category, the side's share in every run of the point (0 where a run had no such sample):
    the same runs in the same order for every category, as largest() pairs them. Runs whose side
    has fewer than MIN_BUSY_SAMPLES busy perf samples are left out (`Shares.undersampled`)."""
    # one pass over the whole frame, the rest over the point's rows (this runs for every point, side
    # and accounting of a verdict table)
    sel = tidy.loc[tidy.metric.isin((metric, "perf_busy_samples_count")) & (tidy.side == side),
                   ["run_id", "metric", "category", "value", *point]]  # the columns read below, no others
    for key, value in point.items():
        sel = sel[sel[key] == value]
    rows, counts = sel[sel.metric == metric], sel[sel.metric == "perf_busy_samples_count"]
    if rows.empty:
        return Shares()
    per_run = counts.groupby("run_id").value.sum()
    few = {r: float(n) for r, n in per_run.items() if n < MIN_BUSY_SAMPLES}
    rows = rows[~rows.run_id.isin(few)]
    if rows.empty:
        return Shares(undersampled=few)
    wide = rows.groupby(["run_id", "category"]).value.sum().unstack("category").sort_index()
    return Shares({c: (wide[c].fillna(0.0).tolist() if c in wide else [0.0] * len(wide)) for c in categories}, few)
