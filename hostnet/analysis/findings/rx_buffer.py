"""§3.1's Rx buffer findings (notebook 02): F07 (latency rises and tpc falls past its peak as the
Rx buffer grows; cache miss rates, half of each claim, need a PMU) and F08 (tpc falls as the rx
ring grows, where it was swept)."""
from __future__ import annotations

import pandas as pd

from .. import verdicts


def _mean(values) -> float:
    return sum(values) / max(1, len(values))


def f07(tidy: pd.DataFrame, at: dict) -> verdicts.Judgement | None:
    """F07 over the buffer sizes of one ring size (`at`: {"rx_ring": n}, or {} where none was swept)."""
    lat = tidy[(tidy.metric == "rx_to_copy_latency_avg_usec") & (tidy.side == "receiver")]
    sizes = sorted(int(k) for k in lat.rx_buffer_kb.unique())
    if len(sizes) < 3:
        return None
    small, large = sizes[0], sizes[-1]

    def runs(metric, side, kb):
        return verdicts.clean_values(tidy, metric, side, rx_buffer_kb=kb)
    latency = verdicts.direction(
        verdicts.difference(runs("rx_to_copy_latency_avg_usec", "receiver", small),
                            runs("rx_to_copy_latency_avg_usec", "receiver", large)),
        want="<", what=f"avg receive → copy latency {small} KB → {large} KB", unit="µs", fmt=".0f",
        points=[{**at, "rx_buffer_kb": small}, {**at, "rx_buffer_kb": large}])
    tpc = {k: runs("tpc_gbps", "both", k) for k in sizes}
    peak = max(sizes, key=lambda k: _mean(tpc[k]))
    past = [k for k in sizes if k > peak]
    parts = [latency]
    if past:
        low = min(past, key=lambda k: _mean(tpc[k]))
        parts.append(verdicts.direction(verdicts.difference(tpc[peak], tpc[low]), want=">",
                                        what=f"tpc at its peak ({peak} KB) → lowest past it ({low} KB)",
                                        unit="Gbit/s", fmt=".2f",
                                        points=[{**at, "rx_buffer_kb": peak}, {**at, "rx_buffer_kb": low}]))
    else:
        parts.append(verdicts.Judgement(verdicts.NOT_REPRODUCED, f"tpc peaks at the largest buffer ({peak} KB)"))
    j = verdicts.combine(parts)
    where = f" (rx ring {at['rx_ring']})" if at else ""
    return verdicts.Judgement(j.verdict, j.shows + where + "; cache misses: no PMU here", j.decide, j.points)


def f08(tidy: pd.DataFrame, swept: list[int], no_sweep: str) -> verdicts.Judgement:
    """F08: tpc falls from the smallest rx ring to the largest, at the largest Rx buffer both have;
    not testable, saying why (`no_sweep`), with fewer than two ring sizes."""
    if len(swept) < 2:
        return verdicts.not_testable(no_sweep, "a NIC with adjustable rings")
    small, large = swept[0], swept[-1]
    kbs = sorted(set(tidy[tidy.rx_ring == small].rx_buffer_kb) & set(tidy[tidy.rx_ring == large].rx_buffer_kb))
    if not kbs:
        return verdicts.Judgement(verdicts.INCONCLUSIVE, f"rx rings {small} and {large} share no Rx buffer size",
                                  "both ring sizes at one Rx buffer size")
    kb = int(kbs[-1])
    d = verdicts.difference(*(verdicts.clean_values(tidy, "tpc_gbps", "both", rx_buffer_kb=kb, rx_ring=n)
                              for n in (small, large)))
    return verdicts.direction(d, want=">", what=f"tpc rx ring {small} → {large} descriptors (Rx buffer {kb} KB)",
                              unit="Gbit/s", fmt=".2f",
                              points=[{"rx_ring": small, "rx_buffer_kb": kb}, {"rx_ring": large, "rx_buffer_kb": kb}])
