"""§3.10's finding (notebook 11): F17, congestion control changes tpc little because the receiver
is the bottleneck."""
from __future__ import annotations

import pandas as pd

from .. import verdicts

# "changes little": each algorithm's tpc within this margin of cubic's, the whole CI of the relative
# difference inside it (the margin predates the CI rule; it was not tuned to any verdict)
SPREAD_LIMIT_PCT = 15.0


def per_run(tidy: pd.DataFrame, cc: str, n: int, metric: str, side: str) -> pd.Series:
    rows = tidy[tidy.metric == metric]  # the metric first: the other tests run on its few rows
    rows = rows[(rows.congestion_control == cc) & (rows.flows == n) & (rows.side == side)
                & (rows.category.fillna("") == "")]
    return rows.set_index("run_id").value.astype(float).sort_index()


def receiver_bound(tidy: pd.DataFrame, cc: str, n: int) -> verdicts.Judgement:
    both = pd.concat([per_run(tidy, cc, n, "cpu_util_pct", side) for side in ("sender", "receiver")],
                     axis=1, join="inner")
    d = verdicts.difference(both.iloc[:, 0], both.iloc[:, 1], paired=True)
    return verdicts.direction(d, want="<", what=f"{cc}, {n} flow(s): CPU sender → receiver", unit="%", fmt=".0f",
                              points=[{"congestion_control": cc, "flows": n}])


def f17(summary: pd.DataFrame, tidy: pd.DataFrame) -> verdicts.Judgement:
    """tpc changes little across algorithms (each within ±SPREAD_LIMIT_PCT of cubic's, by the CI of
    the difference) because the receiver is the bottleneck — a premise checked per point (paired CPU
    interval): an algorithm whose point is not decidedly receiver-bound is left out with its numbers;
    with fewer than two algorithms left the finding is not testable here."""
    m = summary[summary.status == "measured"]
    missing = sorted(summary[summary.status != "measured"].congestion_control)
    note = f"; {', '.join(missing)}: not available on this host" if missing else ""
    algos = list(dict.fromkeys(m.congestion_control))  # the table's order
    if len(algos) < 2:
        return verdicts.Judgement(verdicts.INCONCLUSIVE, "fewer than two algorithms measured" + note,
                                  "two or more algorithms")
    base = "cubic" if "cubic" in algos else algos[0]
    parts, left_out, open_premise = [], [], []
    for n in sorted(int(x) for x in m.flows.dropna().unique()):  # plain ints: points go to sweep.json
        here = [cc for cc in algos if cc in set(m[m.flows == n].congestion_control)]
        bound = {cc: receiver_bound(tidy, cc, n) for cc in here}
        left_out += [b for b in bound.values() if b.verdict == verdicts.NOT_REPRODUCED]
        open_premise += [b for b in bound.values() if b.verdict == verdicts.INCONCLUSIVE]
        ok = [cc for cc in here if bound[cc].verdict == verdicts.REPRODUCED]
        parts += [verdicts.similar(verdicts.difference(per_run(tidy, base, n, "tpc_gbps", "both"),
                                                       per_run(tidy, cc, n, "tpc_gbps", "both")),
                                   margin_pct=SPREAD_LIMIT_PCT, what=f"{n} flow(s) tpc {base} → {cc}", unit="Gbit/s",
                                   points=[{"congestion_control": base, "flows": n},
                                           {"congestion_control": cc, "flows": n}])
                  for cc in ok if cc != base and base in ok]
    excluded = ("; left out, not receiver-bound (the premise): " + "; ".join(b.shows for b in left_out)
                if left_out else "")
    if open_premise:
        j = verdicts.combine(open_premise)
        j = verdicts.Judgement(verdicts.INCONCLUSIVE, "premise undecided: " + j.shows + excluded + note,
                               "receiver-bound shown: " + j.decide, j.points)
    elif not parts:
        j = verdicts.not_testable("the premise does not hold" + excluded + note,
                                  "a receiver-bound configuration for at least two algorithms (the finding "
                                  "explains the small change by the receiver's limit)")
    else:
        j = verdicts.combine(parts)
        j = verdicts.Judgement(j.verdict, j.shows + "; the receiver is decidedly the busier side at these points"
                               + excluded + note, j.decide, j.points)
    return j
