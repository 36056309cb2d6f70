"""From parsed records to metrics: utilisation, throughput-per-core, CPU breakdown.

Pure functions: no host, no raw text. Units are in the metric names.
"""
from __future__ import annotations

import json
import re
import statistics
from collections import Counter, defaultdict
from typing import Iterable

import pandas as pd

from ..parsers.perf_report import SymbolSamples
from ..parsers.procpids import cpu_ticks_used
from ..parsers.procstat import cpu_utilization
from ..taxonomy import CATEGORIES, IDLE, TESTBED, UNCLASSIFIED, USER, Taxonomy

BREAKDOWN_ORDER = list(CATEGORIES) + [TESTBED, USER, UNCLASSIFIED]
# Kernel threads do the stack's deferred work (softirq, NAPI threads, workqueues); the
# idle task (swapper) runs softirqs that arrive while a CPU idles. Both count as ours.
KERNEL_THREAD_COMM = re.compile(r"^(swapper|ksoftirqd|kworker|napi/|migration|rcu|cpuhp|idle_inject)")
PROFILER_COMMS = frozenset({"perf", "bpftrace"})  # the instrument's own processes: testbed, not foreign
FOREIGN_LOAD_LIMIT_PCT = 10.0
# Hypervisor steal above this share of a side's cores over the window flags the run (host
# contention): the 95th percentile of every recorded side (909 runs, docs/measurement.md), and
# where throughput within a point has already fallen ~7 % below steal-free runs.
STEAL_LIMIT_PCT = 5.0
# perf samples per busy CPU-second below this share of the sampling rate: the side's breakdown
# is flagged (a halted vCPU takes no cpu-clock samples; the VM also loses some while busy)
COVERAGE_MIN = 0.8
# A flow whose per-second throughput varies more than this (coefficient of variation) was not
# in steady state; veth runs on an idle VM stay within a few percent once past warm-up.
STEADY_CV_LIMIT_PCT = 15.0
# Which of a flow's reported seconds the steadiness counts (steadiness_cv): whole ones (iperf3
# 3.12 reports a ~60 us stub at the end of its warm-up, a rate of a few segments that flagged 292
# of 744 runs alone), most of each inside the measurement window.
STEADY_MIN_INTERVAL_S = 0.5
STEADY_MIN_IN_WINDOW = 0.75
# The rule the stored flags were derived under; an earlier one is re-derived (tidy.rederive).
STEADY_RULE = "whole-seconds-in-window/1"
# two-sided 95 % Student t quantiles by degrees of freedom (1..30); 1.96 beyond
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


def steadiness_cv(intervals, window: tuple[float, float] | None = None) -> float | None:
    """Coefficient of variation (%) of a flow's per-second rates over the seconds it counts: each
    (start, end, rate) interval at least STEADY_MIN_INTERVAL_S long and, given the measurement
    window on the same clock, with STEADY_MIN_IN_WINDOW of it inside. None under two seconds."""
    rates = [rate for start, end, rate in intervals if end - start >= STEADY_MIN_INTERVAL_S and (
        window is None or min(end, window[1]) - max(start, window[0]) >= STEADY_MIN_IN_WINDOW * (end - start))]
    if len(rates) < 2:
        return None
    mean = statistics.fmean(rates)
    return 100 * statistics.stdev(rates) / mean if mean else 0.0


def confidence(values) -> tuple[float, float]:
    """(mean, half-width of the 95 % confidence interval; nan for a single value)."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    mean = sum(xs) / n
    if n == 1:
        return mean, float("nan")
    sd = (sum((x - mean) ** 2 for x in xs) / (n - 1)) ** 0.5
    t = _T95[n - 2] if n - 1 <= len(_T95) else 1.96
    return mean, t * sd / n ** 0.5


def side_utilization(before: dict, after: dict, cpus: Iterable[int], interval_s: float | None = None,
                     clk_tck: int | None = None) -> dict[str, float]:
    return cpu_utilization(before, after, list(cpus), interval_s, clk_tck)


def throughput_per_core(throughput_gbps: float, busy_pct: dict[str, float]) -> tuple[str, float]:
    """(bottleneck side, Gbit/s per fully used core) — the paper's metric.

    The bottleneck is the side that used more CPU; tpc = throughput / (its cores in use).
    """
    side = max(busy_pct, key=busy_pct.get)
    used = busy_pct[side] / 100.0
    return side, (throughput_gbps / used if used > 0 else float("nan"))


def profiler_metric(metric: str) -> bool:
    """Metrics only the profiler gives (the breakdowns, perf's sample counts, cache events)."""
    return metric.startswith(("breakdown", "perf_")) or metric == "cache_events_count"


# A campaign's throughput and CPU come from its runs without perf once every point has this many
# of them (the fewest a verdict's interval is drawn from, verdicts.MIN_RUNS); with fewer at any
# point, its profiled runs give them and the unprofiled ones only measure perf's cost (perf_cost).
# All points or none: a verdict comparing a point measured without perf with one measured under it
# would read perf's cost (5-18 % here, docs/performance.md) as the stack's.
UNPROFILED_MIN_RUNS = 3


def unprofiled(manifest: dict) -> bool:
    """A run made without perf (SweepSpec.unprofiled_repetitions)."""
    return manifest.get("probes", {}).get("perf") == "off"


def _unprofiled(manifests: list[dict]) -> set[str]:
    return {m["run_id"] for m in manifests if unprofiled(m)}


def _point_of(manifests: list[dict]) -> dict[str, str | None]:
    return {m["run_id"]: m.get("point", {}).get("id") for m in manifests}


def prefer_unprofiled(tidy: pd.DataFrame, manifests: list[dict]) -> pd.DataFrame:
    """Where every sweep point with profiled runs has UNPROFILED_MIN_RUNS runs without the profiler
    (SweepSpec.unprofiled_repetitions; a top-up adds them in the campaign's proportion), throughput,
    CPU and every other measured number come from those, and only the profiler's own metrics
    (breakdowns) from the profiled runs: profiling may cost a few % of throughput, and the two kinds
    of run are then not mixed in one number. Otherwise the profiled runs give every number and the
    unprofiled ones are left out of them (they give perf_cost); a point with no profiled run (a
    campaign run without perf, e.g. the time budget's benches) keeps its runs."""
    return with_runs_of_kind(tidy, manifests, unprofiled_suffice(tidy, manifests))


def unprofiled_suffice(tidy: pd.DataFrame, manifests: list[dict]) -> bool:
    """Whether every sweep point with profiled runs has UNPROFILED_MIN_RUNS runs without the profiler
    (prefer_unprofiled's condition)."""
    off = _unprofiled(manifests)
    if tidy.empty or not off:
        return False
    present, point = set(tidy.run_id), _point_of(manifests)
    count = Counter(point[r] for r in off & present if point.get(r) is not None)
    profiled_points = {point[r] for r in present if r in point and r not in off}
    return bool(profiled_points) and all(count[p] >= UNPROFILED_MIN_RUNS for p in profiled_points)


def with_runs_of_kind(tidy: pd.DataFrame, manifests: list[dict], unprofiled_numbers: bool) -> pd.DataFrame:
    """prefer_unprofiled with its condition decided by the caller (compare: both campaigns alike):
    measured numbers from the unprofiled runs and breakdowns from the profiled ones, or every
    number from the profiled runs (the unprofiled left out where a point has profiled runs)."""
    off = _unprofiled(manifests)
    if tidy.empty or not off:
        return tidy
    present, point = set(tidy.run_id), _point_of(manifests)
    profiled_points = {point[r] for r in present if r in point and r not in off}
    if unprofiled_numbers:
        shadowed = {r for r in present if r in point and r not in off}
        keep = ~tidy.run_id.isin(shadowed) | tidy.metric.map(profiler_metric)
    else:
        keep = ~tidy.run_id.isin({r for r in off if point.get(r) in profiled_points})
    return tidy[keep]


def perf_cost(tidy: pd.DataFrame, manifests: list[dict]) -> pd.DataFrame:
    """Per point with runs both with and without perf: their mean throughputs and perf's cost,
    100 x (1 - profiled / unprofiled) % (positive: perf slowed the flows); empty without such points.
    tidy: every usable run's rows (before prefer_unprofiled)."""
    cols = ["point", "profiled_gbps", "unprofiled_gbps", "profiled_runs", "unprofiled_runs", "cost_pct"]
    unprofiled = _unprofiled(manifests)
    if tidy.empty or not unprofiled:
        return pd.DataFrame(columns=cols)
    point = _point_of(manifests)
    tp = tidy[(tidy.metric == "throughput_gbps") & (tidy.side == "both")]
    tp = tp.assign(point=tp.run_id.map(point), profiled=~tp.run_id.isin(unprofiled)).dropna(subset=["point"])
    rows = []
    for pid, g in tp.groupby("point", sort=True):
        prof, unprof = g[g.profiled].value, g[~g.profiled].value
        if len(prof) and len(unprof):
            rows.append({"point": pid, "profiled_gbps": prof.mean(), "unprofiled_gbps": unprof.mean(),
                         "profiled_runs": len(prof), "unprofiled_runs": len(unprof),
                         "cost_pct": 100.0 * (1.0 - prof.mean() / unprof.mean()) if unprof.mean() > 0
                         else float("nan")})
    return pd.DataFrame(rows, columns=cols)


def perf_cost_summary(costs: pd.DataFrame) -> dict:
    """The campaign's quality line: over its points, perf's mean cost with its 95 % interval (the
    points as samples: one unprofiled run per point carries the run-to-run spread, which the
    interval shows), the median and the range (%)."""
    if costs.empty:
        return {}
    c = costs.cost_pct.dropna()
    if not len(c):
        return {}
    mean, half = confidence(c)
    return {"points": int(len(c)), "mean_pct": round(float(mean), 1),
            "ci_pct": round(float(half), 1) if half == half else None, "median_pct": round(float(c.median()), 1),
            "min_pct": round(float(c.min()), 1), "max_pct": round(float(c.max()), 1)}


def _per_core(tidy: pd.DataFrame, manifests: list[dict]) -> pd.DataFrame | None:
    """Per run: each side's tpc and CPU per core, and its point (the manifests' point, as JSON);
    None when the tidy rows lack throughput or either side's CPU."""
    point_of = {m["run_id"]: json.dumps(m.get("point") or {"config": m.get("config", {}).get("name")},
                                        sort_keys=True) for m in manifests}
    runs = tidy[tidy.metric.isin(["throughput_gbps", "cpu_util_pct", "cores_count"])
                & tidy.side.isin(["both", "sender", "receiver"])]
    wide = runs.assign(key=runs.metric + "|" + runs.side).pivot_table(
        index="run_id", columns="key", values="value", aggfunc="first")
    if not {"throughput_gbps|both", "cpu_util_pct|sender", "cpu_util_pct|receiver"} <= set(wide.columns):
        return None
    for side in ("sender", "receiver"):
        busy = wide[f"cpu_util_pct|{side}"] / 100.0
        wide[f"tpc|{side}"] = (wide["throughput_gbps|both"] / busy).where(busy > 0)
        cores = wide[f"cores_count|{side}"] if f"cores_count|{side}" in wide else 1
        wide[f"per_core|{side}"] = wide[f"cpu_util_pct|{side}"] / cores
    wide["point"] = [point_of.get(r, "{}") for r in wide.index]
    return wide


def _bottleneck(g: pd.DataFrame) -> str:
    return "sender" if g["per_core|sender"].median() >= g["per_core|receiver"].median() else "receiver"


def bottlenecks(tidy: pd.DataFrame, manifests: list[dict]) -> dict[str, str]:
    """The bottleneck side chosen once per point, as with_side_tpc chooses it: {point (JSON): side}
    ({} without CPU rows). ladder_table and the tpc chart say which side it was."""
    wide = _per_core(tidy, manifests)
    return {} if wide is None else {point: _bottleneck(g) for point, g in wide.groupby("point")}


def with_side_tpc(tidy: pd.DataFrame, manifests: list[dict]) -> pd.DataFrame:
    """Throughput per core from each side, and one bottleneck side per point.

    Adds per run a tpc_gbps row for the sender and for the receiver (throughput / that side's
    cores in use), and replaces each run's tpc_gbps "both" row (the side busier in that run)
    with the tpc of the side chosen once per point: the side with the higher median utilisation
    per core, over the point's runs (bottlenecks() names it). So a point's repetitions never mix
    sides, and a paper's receiver-based number can be compared with the receiver's tpc."""
    wide = _per_core(tidy, manifests)
    if wide is None:
        return tidy
    base = tidy[(tidy.metric == "throughput_gbps") & (tidy.side == "both")].drop_duplicates("run_id")
    base = base.set_index("run_id").to_dict("index")  # one dict per run: a lookup per run was most of this
    rows = []
    for _, g in wide.groupby("point"):
        side = _bottleneck(g)
        for run_id, tpc_sender, tpc_receiver in zip(g.index, g["tpc|sender"], g["tpc|receiver"], strict=True):
            row = {**base[run_id], "run_id": run_id, "metric": "tpc_gbps", "category": None}
            tpc = {"sender": tpc_sender, "receiver": tpc_receiver}
            rows += [{**row, "side": s, "value": tpc[s2]}
                     for s, s2 in (("sender", "sender"), ("receiver", "receiver"), ("both", side))]
    rest = tidy[~((tidy.metric == "tpc_gbps") & tidy.run_id.isin(wide.index))]
    return pd.concat([rest, pd.DataFrame(rows, columns=tidy.columns)], ignore_index=True)


def is_ours(comm: str, workload_comms: Iterable[str]) -> bool:
    return comm in set(workload_comms) or bool(KERNEL_THREAD_COMM.match(comm))


def breakdown(rows: Iterable[SymbolSamples], cpus: Iterable[int], taxonomy: Taxonomy,
              workload_comms: Iterable[str]) -> dict:
    """Category shares of one side's non-idle samples from the experiment's own processes.

    Returns {"pct": {category: %}, "idle_samples", "busy_samples", "foreign_samples",
    "top_symbols": [(symbol, category, %), ...]}. Foreign processes' samples (other users
    of the machine) are counted apart, never attributed to a category.
    """
    cpus = set(cpus)
    by_cat: dict[str, int] = defaultdict(int)
    by_sym: dict[tuple[str, str], int] = defaultdict(int)
    idle = foreign = 0
    for r in rows:
        if r.cpu not in cpus:
            continue
        cat = taxonomy.classify(r.symbol, r.kernel)
        if cat == IDLE:
            idle += r.samples
            continue
        if r.comm in PROFILER_COMMS:
            cat = TESTBED
        elif not is_ours(r.comm, workload_comms):
            foreign += r.samples
            continue
        by_cat[cat] += r.samples
        by_sym[(r.symbol, cat)] += r.samples
    busy = sum(by_cat.values())
    pct = {c: (100.0 * by_cat.get(c, 0) / busy if busy else float("nan")) for c in BREAKDOWN_ORDER}
    top = sorted(by_sym.items(), key=lambda kv: -kv[1])[:15]
    return {"pct": pct, "idle_samples": idle, "busy_samples": busy, "foreign_samples": foreign,
            "top_symbols": [(s, c, 100.0 * n / busy) for (s, c), n in top]}


def foreign_load(before: dict, after: dict, our_pids: Iterable[int], clk_tck: int,
                 window_s: float, source: str = "pids") -> dict:
    """CPU used during the window by processes that are not part of the experiment.

    before/after: {pid: (comm, ppid, ticks)}. Kernel threads (children of kthreadd), the
    processes hostnet started and their descendants (e.g. netserver's per-test children) are
    ours. Returns % of one core and the top offenders. Snapshots whose CPU times go down
    (swapped) raise ParseError (parsers.procpids.cpu_ticks_used).
    """
    ours = set(our_pids) | {2}
    parents = {pid: entry[1] for snap in (before, after) for pid, entry in snap.items()}
    changed = True
    while changed:  # close over descendants
        grown = {pid for pid, ppid in parents.items() if ppid in ours} - ours
        ours |= grown
        changed = bool(grown)
    used: dict[str, float] = defaultdict(float)
    for pid, (comm, delta) in cpu_ticks_used(before, after, source).items():
        if pid not in ours and delta > 0:
            used[comm] += delta
    pct = {c: 100.0 * t / clk_tck / window_s for c, t in used.items()}
    total = sum(pct.values())
    top = sorted(pct.items(), key=lambda kv: -kv[1])[:5]
    return {"foreign_cpu_pct": total, "top": top, "contaminated": total > FOREIGN_LOAD_LIMIT_PCT}


def summarize(tidy: pd.DataFrame, by=("config", "side", "metric", "category")) -> pd.DataFrame:
    """Median and range over repetitions: one row per (config, side, metric, category)."""
    keys = [k for k in by if k in tidy.columns]
    t = tidy.copy()
    t["category"] = t["category"].fillna("")
    g = t.groupby(keys, sort=False)["value"]
    out = g.agg(median="median", min="min", max="max", n="count", mean="mean").reset_index()
    out["ci95"] = g.agg(lambda v: confidence(v)[1]).values
    return out


def ladder_table(tidy: pd.DataFrame, order: Iterable[str], bottleneck: dict[str, str] | None = None
                 ) -> pd.DataFrame:
    """The single-flow table: throughput, per-side CPU, tpc, medians with ranges; and each config's
    bottleneck side where `bottleneck` (bottlenecks()) chose one side for all its points."""
    s = summarize(tidy)
    rows = []
    for cfg in order:
        part = s[s["config"] == cfg]
        if part.empty:
            continue

        row = {"config": cfg}
        for label, metric, side in (("throughput_gbps", "throughput_gbps", "both"),
                                    ("sender_cpu_pct", "cpu_util_pct", "sender"),
                                    ("receiver_cpu_pct", "cpu_util_pct", "receiver"),
                                    ("tpc_gbps", "tpc_gbps", "both"),
                                    ("sender_tpc_gbps", "tpc_gbps", "sender"),
                                    ("receiver_tpc_gbps", "tpc_gbps", "receiver")):
            m = _pick(part, metric, side)
            row[label] = None if m is None else m["median"]
            row[label + "_range"] = None if m is None else f"{m['min']:.1f}–{m['max']:.1f}"
        n = _pick(part, "throughput_gbps", "both")
        row["repetitions"] = 0 if n is None else int(n["n"])
        sides = {v for k, v in (bottleneck or {}).items() if json.loads(k).get("config") == cfg}
        row["bottleneck"] = sides.pop() if len(sides) == 1 else None
        rows.append(row)
    return pd.DataFrame(rows)


def _pick(summary: pd.DataFrame, metric: str, side: str):
    m = summary[(summary["metric"] == metric) & (summary["side"] == side)]
    return m.iloc[0] if len(m) else None


def breakdown_metric(tidy: pd.DataFrame) -> str:
    """The call-chain-attributed breakdown where runs kept their stacks, else the leaf one."""
    return "breakdown_attributed_pct" if (tidy["metric"] == "breakdown_attributed_pct").any() else "breakdown_pct"


def top_categories(tidy: pd.DataFrame, config: str, side: str, n: int = 3,
                   metric: str | None = None) -> list[tuple[str, float]]:
    s = summarize(tidy)
    metric = metric or breakdown_metric(tidy)
    part = s[(s["config"] == config) & (s["side"] == side) & (s["metric"] == metric)]
    part = part.sort_values("median", ascending=False).head(n)
    return [(r.category, float(r.median)) for r in part.itertuples()]
