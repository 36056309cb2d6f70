"""§3.6's NUMA finding (notebook 09): F13, NIC-remote tpc only marginally off NIC-local's for short
flows."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import verdicts

MARGINAL_PCT = 10.0  # "only marginal": NIC-remote tpc within this share of NIC-local's


def f13(tidy: pd.DataFrame, placements: Sequence[str], why_not: str) -> verdicts.Judgement:
    """The whole CI of the relative difference (NIC-local → NIC-remote) within ±MARGINAL_PCT
    (verdicts.similar); not testable, saying why_not, where the campaign lacks either placement."""
    if tidy.empty or not set(placements) <= set(tidy.placement):
        return verdicts.not_testable(why_not, "a multi-socket host with the NIC on one node")
    local, remote = (verdicts.clean_values(tidy, "tpc_gbps", "both", placement=p) for p in placements)
    j = verdicts.similar(verdicts.difference(local, remote), margin_pct=MARGINAL_PCT,
                         what="4 KB RPCs: tpc NIC-local → NIC-remote", unit="Gbit/s", fmt=".2f",
                         points=[{"placement": p} for p in placements])
    return verdicts.Judgement(j.verdict, j.shows + "; cache misses need a PMU", j.decide, j.points)
