"""§3.6 Fig. 10: short flows — an incast of ping-pong RPC flows at RPC sizes 4-64 KB.

netperf TCP_RR (sockperf where netperf is missing), every flow into one receiver core. The
notebook 07-short-flows.ipynb is a thin caller of these functions.
"""
from __future__ import annotations


import pandas as pd

from . import common, grid_view
from ..sweep import SweepSpec
from ..taxonomy import CATEGORIES
from ..workloads import SOCKPERF_MAX_BYTES
from ..verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, load_findings

EXPERIMENT = "incast"
KEY = "rpc_size"
RPC_SIZES_KB = [4, 16, 32, 64]
FLOWS = 16
LAYERS = [c for c in CATEGORIES if c != "etc"]  # etc is glue, and cpu-clock's IRQs-off bin


def spec(rpc_sizes_kb=RPC_SIZES_KB, *, flows: int = FLOWS, config: str = "all-opts", repetitions: int = 3,
         duration: int = 5, warmup: int = 2, perf_freq_hz: int = 99) -> SweepSpec:
    return SweepSpec(experiment=EXPERIMENT, configs=[config],
                     grid={KEY: [size_bytes(kb) for kb in rpc_sizes_kb], "flows": [int(flows)]},
                     repetitions=repetitions, duration=duration, warmup=warmup, seed=7, perf_freq_hz=perf_freq_hz)


def size_bytes(kb) -> int:
    """A size in KB as the tools take it: "64 KB" is sockperf's largest message, 65506 bytes."""
    return min(int(kb) * 1024, SOCKPERF_MAX_BYTES)


def collect(mode: str, *, runs_dir, campaign: str = "", testbed_name: str = "", top_up_rounds: int = 2,
            **spec_args) -> str:
    return grid_view.collect(mode, spec(**spec_args), runs_dir=runs_dir, campaign=campaign, name="short-flows",
                             testbed_name=testbed_name, top_up_rounds=top_up_rounds)


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    tidy = grid_view.tag(tidy, manifests, KEY)
    return tidy.assign(rpc_size_kb=(tidy[KEY] / 1024).round().astype(int)), manifests


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per RPC size: tpc, throughput (request + response bytes), transactions, CPU per side."""
    rows = []
    for kb, g in tidy.groupby("rpc_size_kb"):
        row = {"rpc_size_kb": int(kb)}
        for col, metric, side in (("tpc_gbps", "tpc_gbps", "both"), ("throughput_gbps", "throughput_gbps", "both"),
                                  ("transactions_per_s", "transactions_per_s", "both"),
                                  ("sender_cpu_pct", "cpu_util_pct", "sender"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver")):
            row[col], row[col + "_ci95"] = grid_view.mean_ci(g, metric, side)
        row["flows"] = int(g[(g.metric == "flow_count")].value.max())
        row["repetitions"] = int((g.metric == "tpc_gbps").sum())
        rows.append(row)
    return pd.DataFrame(rows)


def breakdown(tidy: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown(tidy, KEY)


def breakdown_table(bd: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown_table(bd, KEY)


def charts(summary: pd.DataFrame, bd: pd.DataFrame, label: str) -> dict:
    s = summary.assign(size=summary.rpc_size_kb.astype(str) + " KB")
    tpc = grid_view.tpc_bars(s, "size", "RPC size (request = response)",
                             "Fig. 10(a) analogue: throughput per core vs RPC size",
                             [*label.split("\n"), f"{int(s.flows.max())} ping-pong RPC flows into one core (incast); "
                              "request + response bytes; mean and 95 % CI"], ("transactions_per_s",))
    sizes = bd.assign(**{KEY: (bd[KEY] / 1024).round().astype(int).astype(str) + " KB"})
    bd_chart = grid_view.breakdown_chart(sizes, KEY, "Fig. 10(b) analogue: CPU breakdown vs RPC size", label,
                                         "RPC size")
    return {"short-flows-tpc": tpc, "short-flows-breakdown": bd_chart}


def _sides(bd: pd.DataFrame) -> list[str]:
    return [s for s in ("sender", "receiver") if s in set(bd.side)]


def _zero_if_nan(v: float) -> float:
    return 0.0 if pd.isna(v) else v


def verdict_table(bd: pd.DataFrame, reference_dir, manifests: list[dict] | None = None) -> pd.DataFrame:
    """F11 (4 KB: data copy not dominant), F12 (16 KB+: data copy dominates), F13 (NUMA)."""
    testbed_kind = manifests[0]["testbed"]["kind"] if manifests else "embedded"
    findings = load_findings(reference_dir).set_index("id")
    sizes = sorted(bd[KEY].unique())
    rows = []

    def add(fid, shows, verdict):
        rows.append({"id": fid, "paper says": findings.loc[fid, "claim"], "this run shows": shows, "verdict": verdict})

    def tops(size):
        return {side: grid_view.top_categories(bd, KEY, size, side) for side in _sides(bd)}

    def describe(size, t):
        return "; ".join(f"{side}: " + ", ".join(f"{c} {p:.0f} %" for c, p in cats) for side, cats in t.items())

    if 4096 in sizes:
        t = tops(4096)
        # a layer without samples has no row: 0 %, where the side has a breakdown at all
        pct = {side: {c: _zero_if_nan(grid_view.share(bd, KEY, 4096, side, c)[0]) for c in LAYERS}
               for side in t if t[side]}
        proto = {side: p["tcp/ip"] + p["sched"] for side, p in pct.items()}
        # the largest layer that is neither of the claimed pair (data copy included): the claim is that
        # tcp/ip + sched dominate, so a side where e.g. netdev outweighs them does not reproduce it
        rival = {side: max(((c, v) for c, v in p.items() if c not in ("tcp/ip", "sched")), key=lambda cv: cv[1])
                 for side, p in pct.items()}
        shows = f"4 KB top categories — {describe(4096, t)}; tcp/ip + sched vs the largest other layer: " + ", ".join(
            f"{side} {proto[side]:.0f} % vs {rival[side][0]} {rival[side][1]:.0f} %" for side in pct)
        if len(pct) < len(t) or not pct:
            verdict = INCONCLUSIVE
        elif all(proto[side] > rival[side][1] for side in pct):
            verdict = REPRODUCED
        else:
            verdict = NOT_REPRODUCED
        add("F11", shows, verdict)
    big = [s for s in sizes if s >= 16384]
    if big:
        t = {size: tops(size) for size in big}
        copy_top = {size: all(cats and cats[0][0] == "data_copy" for cats in t[size].values()) for size in big}
        rising = {side: [grid_view.share(bd, KEY, size, side, "data_copy")[0] for size in sizes] for side in _sides(bd)}
        shows = " | ".join(f"{round(size / 1024)} KB — {describe(size, t[size])}" for size in big)
        shows += "; data_copy share by size: " + "; ".join(
            f"{side} " + " → ".join(f"{v:.0f}" for v in vals) + " %" for side, vals in rising.items())
        if all(copy_top.values()):
            verdict = REPRODUCED
        elif not copy_top[big[-1]]:
            verdict = NOT_REPRODUCED
        else:
            verdict = INCONCLUSIVE
        add("F12", shows, verdict)
    if testbed_kind == "embedded":
        add("F13", "both namespaces share one VM with a single NUMA node and no NIC: NIC-local vs NIC-remote "
                   "cannot be set up", NOT_TESTABLE)
    else:
        add("F13", "needs a local vs remote NUMA sweep on a multi-socket host (not part of this notebook)",
            NOT_TESTABLE)
    return pd.DataFrame(rows)
