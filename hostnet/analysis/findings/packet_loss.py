"""§3.5's finding (notebook 06): F10, packet loss lowers tpc and loss recovery costs."""
from __future__ import annotations

import pandas as pd

from .. import verdicts

KEY = "loss_rate"  # the sweep's grid key: the share of packets the testbed drops


def rate_label(rate: float) -> str:
    return "0" if rate == 0 else f"1/{round(1 / rate)}"


def f10(tidy: pd.DataFrame) -> verdicts.Judgement:
    """Between the loss-free point and the highest loss rate: tpc falls and retransmissions rise."""
    rates = sorted(float(r) for r in tidy[KEY].unique())
    if len(rates) < 2 or rates[0] != 0:
        return verdicts.Judgement(verdicts.INCONCLUSIVE, "no loss-free point, or no loss rate",
                                  "the loss-free point and at least one loss rate")
    base, worst = rates[0], rates[-1]
    pts = [{KEY: base}, {KEY: worst}]
    tpc = verdicts.direction(verdicts.difference(verdicts.clean_values(tidy, "tpc_gbps", "both", **{KEY: base}),
                                                 verdicts.clean_values(tidy, "tpc_gbps", "both", **{KEY: worst})),
                             want=">", what=f"tpc without loss → at {rate_label(worst)}", unit="Gbit/s",
                             points=pts)
    retrans = verdicts.direction(
        verdicts.difference(verdicts.clean_values(tidy, "retransmits_count", "sender", **{KEY: base}),
                            verdicts.clean_values(tidy, "retransmits_count", "sender", **{KEY: worst})),
        want="<", what="retransmitted segments per run", fmt=".0f", points=pts)
    return verdicts.combine([tpc, retrans])
