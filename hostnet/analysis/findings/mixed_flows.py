"""§3.7's findings (notebook 08): F14 (tpc falls as short flows join a long flow's core) and F26
(the receiver's breakdown shifts toward tcp/ip and sched, data copy still leading)."""
from __future__ import annotations

import pandas as pd

from .. import metrics, verdicts
from ...taxonomy import CATEGORIES

KEY = "short_flows"  # the sweep's grid key: short flows beside the long one


def f14(per_run: pd.DataFrame, paper: pd.Series) -> verdicts.Judgement:
    """Total and long-flow tpc fall as short flows join the long flow's core, by about the paper's size
    (per_run: each run's tpc by flow class, the section's class_tpc)."""
    mixed = per_run[per_run.long_flow == 1]
    ks = sorted(int(k) for k in mixed[KEY].unique())
    if len(ks) < 2 or ks[0] != 0:
        return verdicts.Judgement(verdicts.INCONCLUSIVE, "no long-flow-alone point",
                                  "the long flow alone and with short flows")
    k = ks[-1]
    alone, most = mixed[mixed[KEY] == 0], mixed[mixed[KEY] == k]
    pts = [{KEY: 0, "long_flow": 1}, {KEY: k, "long_flow": 1}]
    total = verdicts.sized(verdicts.difference(alone.tpc_gbps, most.tpc_gbps), paper_pct=paper["total"],
                           what=f"total tpc alone → with {k} short flows", unit="Gbit/s", points=pts)
    long_ = verdicts.sized(verdicts.difference(alone.long_tpc_gbps, most.long_tpc_gbps), paper_pct=paper["long"],
                           what="long flow's tpc", unit="Gbit/s", points=pts)
    j = verdicts.combine([total, long_])
    base = per_run[(per_run.long_flow == 0) & (per_run[KEY] == k)]
    if len(base):
        short = verdicts.difference(base.short_tpc_gbps, most.short_tpc_gbps)
        j = verdicts.Judgement(j.verdict, j.shows + f"; {k} short flows alone → mixed: {short.text('.2f', 'Gbit/s')} "
                               f"({short.rel(short.diff):+.0f} %, paper {paper['short']:+.0f} %)", j.decide, j.points)
    return j


def f26(tidy: pd.DataFrame) -> verdicts.Judgement:
    """With the most short flows beside the long flow, data copy still leads the receiver's (the
    server's, Fig. 11b) breakdown, while tcp/ip and sched grow against the long flow alone; the
    sender's is shown beside it, not counted."""
    mixed = tidy[tidy.long_flow == 1]
    ks = sorted(int(k) for k in mixed[KEY].unique())
    if len(ks) < 2 or ks[0] != 0:
        return verdicts.Judgement(verdicts.INCONCLUSIVE, "no long-flow-alone point",
                                  "the long flow alone and with short flows")
    k, metric = ks[-1], metrics.breakdown_metric(tidy)
    cats = [c for c in CATEGORIES if not (metric == "breakdown_pct" and c == "etc")]
    pts = [{KEY: 0, "long_flow": 1}, {KEY: k, "long_flow": 1}]
    judged = {}
    for side in ("sender", "receiver"):
        with_short = verdicts.shares_by_run(mixed, metric, side, cats, **{KEY: k})
        alone = verdicts.shares_by_run(mixed, metric, side, cats, **{KEY: 0})
        if not with_short or not alone:
            continue
        parts = [verdicts.largest(with_short, "data_copy", what=f"long + {k} short, {side}", points=pts[1:])]
        for cat in ("tcp/ip", "sched"):
            parts.append(verdicts.direction(verdicts.difference(alone[cat], with_short[cat]), want="<",
                                            what=f"{side} {cat} share alone → with {k} short flows", unit="%",
                                            points=pts))
        judged[side] = verdicts.combine(parts)
    if "receiver" not in judged:
        return verdicts.Judgement(verdicts.INCONCLUSIVE, "no profiles of the receiver at these points",
                                  "profiled runs")
    j = judged["receiver"]  # Fig. 11(b) is the server's breakdown: the claim is the receiver's
    if "sender" in judged:
        j = verdicts.Judgement(j.verdict, j.shows + f"; the sender (not the paper's Fig. 11b, not counted: "
                               f"{judged['sender'].verdict}): {judged['sender'].shows}", j.decide, j.points, j.holds)
    return j
