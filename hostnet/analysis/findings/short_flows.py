"""§3.6's findings on RPC sizes (notebook 07): F11 (4 KB: tcp/ip + sched lead), F12 (16 KB and
above: data copy leads), F13 (NUMA, not judged here) and F24 (tpc rises with RPC size)."""
from __future__ import annotations

import pandas as pd

from .. import verdicts
from ...taxonomy import CATEGORIES

KEY = "rpc_size"  # the sweep's grid key
LAYERS = [c for c in CATEGORIES if c != "etc"]  # etc is glue, and cpu-clock's IRQs-off bin


def sides(tidy: pd.DataFrame) -> list[str]:
    present = set(tidy.side)
    return [s for s in ("sender", "receiver") if s in present]


def f11(tidy: pd.DataFrame, metric: str, sizes: list[int], size: int = 4096) -> verdicts.Judgement | None:
    """At 4 KB tcp/ip + sched (summed per run) lead every other layer, data copy included."""
    if size not in sizes:
        return None
    parts = []
    for side in sides(tidy):
        shares = verdicts.shares_by_run(tidy, metric, side, LAYERS, **{KEY: size})
        if not shares:  # the claim is about both sides: one without a profile leaves it open
            parts.append(verdicts.Judgement(verdicts.INCONCLUSIVE, f"no 4 KB {side} profile",
                                            f"a profiled 4 KB {side}", ({KEY: size},)))
            continue
        proto = [a + b for a, b in zip(shares.pop("tcp/ip", []), shares.pop("sched", []), strict=True)]
        summed = verdicts.Shares({"tcp/ip+sched": proto, **shares} if proto else {}, shares.undersampled)
        parts.append(verdicts.largest(summed, "tcp/ip+sched", what=f"4 KB {side}", points=[{KEY: size}]))
    if not parts:
        return verdicts.Judgement(verdicts.INCONCLUSIVE, "no 4 KB profile", "a profiled 4 KB point")
    return verdicts.combine(parts)


def f12(tidy: pd.DataFrame, metric: str, sizes: list[int]) -> verdicts.Judgement | None:
    """At 16 KB and above data copy leads both sides."""
    big = [size for size in sizes if size >= 16384]
    if not big:
        return None
    parts = [verdicts.largest(verdicts.shares_by_run(tidy, metric, side, LAYERS, **{KEY: size}), "data_copy",
                              what=f"{round(size / 1024)} KB {side}", points=[{KEY: size}])
             for size in big for side in sides(tidy)]
    return verdicts.combine(parts)


def f13(embedded: bool) -> verdicts.Judgement:
    """NUMA placement: never judged here (one node on the embedded testbed; notebook 09 on servers)."""
    return verdicts.not_testable("both namespaces share one VM with a single NUMA node and no NIC" if embedded
                                 else "this notebook sweeps RPC size, not NUMA placement (notebook 09 does)",
                                 "a multi-socket host with a NIC on one node")


def f24(tidy: pd.DataFrame, sizes: list[int]) -> verdicts.Judgement | None:
    """tpc rises from the smallest to the largest size, and no step between goes decidedly down."""
    if len(sizes) < 2:
        return None
    tpc = {size: verdicts.clean_values(tidy, "tpc_gbps", "both", **{KEY: size}) for size in sizes}
    whole = verdicts.direction(verdicts.difference(tpc[sizes[0]], tpc[sizes[-1]]), want="<",
                               what=f"tpc {round(sizes[0] / 1024)} KB → {round(sizes[-1] / 1024)} KB", unit="Gbit/s",
                               fmt=".2f", points=[{KEY: sizes[0]}, {KEY: sizes[-1]}])
    steps = [(a, b, verdicts.difference(tpc[a], tpc[b])) for a, b in zip(sizes, sizes[1:], strict=False)]
    shows = whole.shows + "; steps: " + ", ".join(
        f"{round(a / 1024)}→{round(b / 1024)} KB {d.diff:+.2f} [{d.lo:+.2f}, {d.hi:+.2f}]" for a, b, d in steps)
    if any(d.sign == ">" for _, _, d in steps):  # decided whatever the whole change says
        return verdicts.Judgement(verdicts.NOT_REPRODUCED, shows + "; a step goes down")
    return verdicts.Judgement(whole.verdict, shows, whole.decide, whole.points)
