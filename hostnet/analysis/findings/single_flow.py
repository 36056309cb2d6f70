"""§3.1's findings on the optimisation ladder (notebook 01): F01-F06, F08 and F25."""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .. import metrics, verdicts
from ...taxonomy import CATEGORIES

# the paper's own ladder (Fig. 3b: no-opts, +TSO/GRO, +jumbo, +aRFS): F04 is stated on these steps
PAPER_LADDER = ("no-opts", "tsogro", "tsogro+jumbo", "all-opts")
ARFS_NEEDS = ("a NIC with ntuple filters (aRFS), or a third CPU for receive processing apart from the sender's and "
              "the application's")
# F04's mechanism as the paper names it (§3.1): the receiver's data copy, across NUMA nodes where the
# IRQs sit on another node (the non-aRFS steps), and its MTU-sized skb allocation per frame. On veth
# neither exists, so the sender/receiver gap measured here answers another question.
F04_PREMISE = ("the paper's receiver gap comes from a cross-NUMA data copy (IRQs on another node without aRFS) "
               "and the receiver allocating an skb per frame; on veth the receiver allocates no skb (it takes "
               "over the sender's) and receive processing runs on the application's CPU in one NUMA node")
F04_NEEDS = "a NIC whose driver allocates receive skbs, and a second NUMA node for the non-aRFS steps' IRQs"


def per_run(tidy: pd.DataFrame, metric: str, side: str, config: str) -> pd.Series:
    rows = tidy[tidy.metric == metric]  # the metric first: the other tests run on its few rows
    rows = rows[(rows.side == side) & (rows.config == config) & (rows.category.fillna("") == "")]
    return rows.set_index("run_id").value.astype(float).sort_index()


def tpc_by_config(tidy: pd.DataFrame, ladder: Sequence[str]) -> dict[str, list[float]]:
    present, tpc = set(tidy.config), tidy[tidy.metric == "tpc_gbps"]  # the rows clean_values reads, filtered once
    return {c: verdicts.clean_values(tpc, "tpc_gbps", "both", config=c) for c in ladder if c in present}


class _CpuRuns:
    """per_run(tidy, "cpu_util_pct", side, config) for any side and config, the rows split once: F04
    asks for up to a dozen under each accounting, and each filter of the frame cost as much as the rule."""

    def __init__(self, tidy: pd.DataFrame):
        rows = tidy[tidy.metric == "cpu_util_pct"]
        self._rows = rows[rows.category.fillna("") == ""]
        self._at = self._rows.groupby(["side", "config"], sort=False).indices  # key -> positions, in order
        self._made: dict[tuple, pd.Series] = {}

    def __call__(self, side: str, config: str) -> pd.Series:
        if (side, config) not in self._made:
            rows = self._rows.iloc[self._at.get((side, config), [])]
            self._made[side, config] = rows.set_index("run_id").value.astype(float).sort_index()
        return self._made[side, config]


def arfs_premise(steering: str) -> str:
    """Why the aRFS step cannot be tested on this receive path ("" when it can)."""
    if steering == "napi-thread":
        return ("with threaded NAPI the receive processing already runs on the application's CPU, so RFS "
                "(the software stand-in for aRFS) has nothing to move")
    if steering == "none":
        return "with the kernel default veth delivers on the sender's CPU, where RFS cannot steer"
    return ""


def f01(tpc: dict) -> verdicts.Judgement | None:
    """Absolute tpc is the hardware's: shown, not testable on veth."""
    if "all-opts" not in tpc:
        return None
    return verdicts.not_testable(
        f"all-opts tpc {pd.Series(tpc['all-opts']).mean():.1f} Gbit/s on veth (paper ~42 on 100G NICs)",
        "100G NICs: absolute values depend on the host")


def f02(tpc: dict, no_arfs: str) -> verdicts.Judgement | None:
    """Each optimisation raises tpc, in the ladder's order (the aRFS step left out where it cannot act)."""
    ladder = [c for c in PAPER_LADDER if c in tpc and not (no_arfs and c == "all-opts")]
    if len(ladder) < 3:
        return None
    j = verdicts.ordered([(c, tpc[c], {"config": c}) for c in ladder], unit="Gbit/s")
    if no_arfs:
        j = verdicts.Judgement(j.verdict, f"{j.shows}; the aRFS step (→ all-opts) is not judged: {no_arfs} "
                               f"(it needs {ARFS_NEEDS})", j.decide, j.points)
    return j


def f03(tpc: dict) -> verdicts.Judgement | None:
    """Jumbo frames raise tpc over TSO/GRO alone."""
    if not {"tsogro", "tsogro+jumbo"} <= set(tpc):
        return None
    return verdicts.direction(verdicts.difference(tpc["tsogro"], tpc["tsogro+jumbo"]), want="<",
                              what="tpc tsogro → tsogro+jumbo", unit="Gbit/s",
                              points=[{"config": "tsogro"}, {"config": "tsogro+jumbo"}], fmt=".2f")


def _busier(cpu: _CpuRuns, config: str) -> verdicts.Judgement:
    both = pd.concat([cpu("sender", config), cpu("receiver", config)], axis=1, join="inner")
    d = verdicts.difference(both.iloc[:, 0], both.iloc[:, 1], paired=True)
    return verdicts.direction(d, want="<", what=f"{config} CPU sender → receiver", unit="%", fmt=".0f",
                              points=[{"config": config}])


def f04(tidy: pd.DataFrame, ladder: Sequence[str], embedded: bool) -> verdicts.Judgement | None:
    """The receiver is the busier side at every step of the paper's ladder (others shown, not counted);
    on veth its mechanism is absent, so not testable, with what was measured."""
    present, cpu = set(tidy.config), _CpuRuns(tidy)
    steps = [c for c in ladder if c in present and len(cpu("receiver", c))]
    if not steps:
        return None
    counted = [c for c in steps if c in PAPER_LADDER]
    j = verdicts.combine([_busier(cpu, c) for c in counted]) if counted else verdicts.Judgement(
        verdicts.INCONCLUSIVE, "none of the paper's ladder steps was measured", "the ladder's steps")
    shown = [_busier(cpu, c).shows for c in steps if c not in PAPER_LADDER]
    if shown:  # measured, but not a step of the paper's ladder (Fig. 3b): shown, not counted
        j = verdicts.Judgement(j.verdict, j.shows + "; not a ladder step, not counted: " + "; ".join(shown),
                               j.decide, j.points, j.holds)
    return verdicts.not_testable(f"{F04_PREMISE}; measured: {j.shows}", F04_NEEDS) if embedded else j


def largest_share(tidy: pd.DataFrame, config: str, want: str) -> verdicts.Judgement | None:
    """F05 (data copy leads at all-opts) and F06 (tcp/ip leads at no-opts), on both sides."""
    metric = metrics.breakdown_metric(tidy)
    cats = [c for c in CATEGORIES if not (metric == "breakdown_pct" and c == "etc")]
    parts = []
    for side in ("sender", "receiver"):
        shares = verdicts.shares_by_run(tidy, metric, side, cats, config=config)
        if shares:
            parts.append(verdicts.largest(shares, want, what=f"{config} {side}", points=[{"config": config}]))
    if len(parts) != 2:
        return None
    j = verdicts.combine(parts)
    note = (" (samples where IRQs come back on attributed through the call chain)"
            if metric == "breakdown_attributed_pct" else " (leaf-only samples, etc excluded)")
    return verdicts.Judgement(j.verdict, j.shows + note, j.decide, j.points)


def f08(no_rings: str) -> verdicts.Judgement:
    """The rx ring's effect needs a ring sweep (notebook 02's); here, why there is none."""
    return verdicts.not_testable(no_rings, "a NIC with adjustable rings")


def f25(tidy: pd.DataFrame, steering: str) -> verdicts.Judgement | None:
    """aRFS lowers the receiver's CPU per Gbit/s (tsogro+jumbo → all-opts), where RFS can act."""
    if no_arfs := arfs_premise(steering):
        return verdicts.not_testable(f"receive path {steering}: {no_arfs}", ARFS_NEEDS)
    if not {"tsogro+jumbo", "all-opts"} <= set(tidy.config):
        return None
    per_gbit = {c: (per_run(tidy, "cpu_util_pct", "receiver", c) / per_run(tidy, "throughput_gbps", "both", c)).dropna()
                for c in ("tsogro+jumbo", "all-opts")}
    return verdicts.direction(verdicts.difference(per_gbit["tsogro+jumbo"], per_gbit["all-opts"]), want=">",
                              what="receiver CPU % per Gbit/s, tsogro+jumbo → all-opts (aRFS)", fmt=".2f",
                              points=[{"config": "tsogro+jumbo"}, {"config": "all-opts"}])
