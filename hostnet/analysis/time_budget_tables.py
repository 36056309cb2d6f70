"""The time budget's tables (notebook 13, F18-F20): the budget at every frame and rate, this host's
measured costs against it, memcpy's bound, UDP batching per batch size, and the talk's printed
numbers, from the campaign's tidy rows. The arithmetic is budget.py's; the rules findings/time_budget.py's."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import budget

# The budgets the costs are set against: the talk's two examples and the tightest common case.
BUDGETS = [(64, 10), (1518, 100), (1518, 400)]
COST_LABELS = {
    "syscall_perf": "system call (perf bench syscall basic, getppid)",
    "syscall": "system call (microbench, getppid)",
    "atomic": "atomic add (LOCK xadd)",
    "cmpxchg": "compare-and-exchange (LOCK cmpxchg)",
    "spinlock": "spinlock lock+unlock (uncontended)",
    "malloc": "malloc+free 256 B, same object",
    "malloc256": "malloc+free 256 B, 256 at a time",
    "skballoc": "skb-like alloc+free (256 B zeroed + 2 KB)",
}
FLATTEN_SHARE = 0.9  # the curve has flattened where the median reaches 90 % of the best batch size
NO_CLOCK = "unsupported (no 'cpu MHz' in /proc/cpuinfo, e.g. on arm64)"


@dataclass(frozen=True)
class InSitu:
    """F20 in situ: memory management's CPU time per packet in a single-flow campaign's runs (one row
    per run), and why there are none when `rows` is empty ("" when there are)."""
    rows: pd.DataFrame
    why: str = ""


def clock_mhz(micro: pd.DataFrame) -> tuple[float | None, str]:
    """The clock the cycle counts use, and where it came from (recorded with the run); None and
    why when the campaign recorded none: cycles are then left out, never guessed."""
    rows = micro[micro.metric == "cpu_clock_mhz"]
    if rows.empty:
        return None, NO_CLOCK
    return float(rows.value.median()), str(rows.category.iloc[0])


def budget_table(mhz: float | None, frames=budget.FRAME_BYTES, rates=budget.RATES_GBPS) -> pd.DataFrame:
    """The budget for every frame and rate; a cycles column only when the clock is known."""
    return budget.table(frames, rates, mhz)


def budget_pivot(table: pd.DataFrame, value: str = "interval_ns") -> pd.DataFrame:
    """Frames as rows, link rates as columns: the slide's table for every rate at once."""
    if value not in table.columns:  # cycles without a recorded clock
        return pd.DataFrame({value: [NO_CLOCK]})
    p = table.pivot(index="frame_bytes", columns="rate_gbps", values=value)
    p.columns = [f"{c} Gbit/s" for c in p.columns]
    p.index = [f"{f} B ({budget.wire_bytes(f)} on wire)" for f in p.index]
    return p


def _spread(values: pd.Series) -> dict:
    return {"median": float(values.median()), "min": float(values.min()), "max": float(values.max()),
            "n": int(values.count())}


def cost_table(micro: pd.DataFrame) -> pd.DataFrame:
    """Median and range of each measured cost over repetitions, and its share of each budget."""
    rows = []
    costs = micro[micro.metric == "cost_ns"]
    for name in [n for n in COST_LABELS if n in set(costs.category)]:
        s = _spread(costs[costs.category == name].value)
        row = {"cost": name, "what": COST_LABELS[name], "median_ns": s["median"], "min_ns": s["min"],
               "max_ns": s["max"], "repetitions": s["n"]}
        for frame, rate in BUDGETS:
            row[f"pct_of_{frame}B_at_{rate}G"] = 100 * s["median"] / budget.interval_ns(frame, rate)
        rows.append(row)
    return pd.DataFrame(rows)


def cost(costs: pd.DataFrame, name: str) -> pd.Series | None:
    """cost_table's row of the cost `name` (median_ns, min_ns, max_ns...), None when it was not timed."""
    row = costs[costs.cost == name]
    return row.iloc[0] if len(row) else None


def syscall_cost(costs: pd.DataFrame) -> pd.Series | None:
    """The system call's row: perf bench's where it ran, else the microbenchmark's."""
    sc = cost(costs, "syscall_perf")
    return sc if sc is not None else cost(costs, "syscall")


def copy_table(micro: pd.DataFrame) -> pd.DataFrame:
    """memcpy bandwidth per buffer size: the Gbit/s a flow copied once could at most reach."""
    rows = []
    mc = micro[micro.metric == "memcpy_gbps"]
    for size, g in mc.groupby("category", sort=False):
        s = _spread(g.value)
        rows.append({"buffer": size, "copy_bound_gbps": s["median"], "min_gbps": s["min"], "max_gbps": s["max"],
                     "gbyte_per_s": s["median"] / 8, "repetitions": s["n"]})
    return pd.DataFrame(rows)


def batch_table(batch: pd.DataFrame) -> pd.DataFrame:
    """Per side and batch size: median and range of pps, ns per packet, and the speed-up over batch 1."""
    rows = []
    for (side, b), g in batch[batch.side.isin(["sender", "receiver"])].groupby(["side", "batch"]):
        pps = _spread(g[g.metric == "udp_pps"].value)
        cpu = _spread(g[g.metric == "udp_cpu_per_pkt_ns"].value)
        rows.append({"side": side, "batch": int(b), "pps_median": pps["median"], "pps_min": pps["min"],
                     "pps_max": pps["max"],
                     "ns_per_pkt": float(g[g.metric == "udp_wall_per_pkt_ns"].value.median()),
                     "cpu_ns_per_pkt": cpu["median"], "cpu_ns_min": cpu["min"], "cpu_ns_max": cpu["max"],
                     "calls_per_pkt": float(g[g.metric == "udp_calls_per_pkt"].value.median()),
                     "repetitions": pps["n"]})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    base = out[out.batch == 1].set_index("side").pps_median
    out["speedup"] = out.pps_median / out.side.map(base)
    return out.sort_values(["side", "batch"]).reset_index(drop=True)


def flattens_at(summary: pd.DataFrame, side: str = "sender") -> int | None:
    """Smallest batch size whose median pps reaches FLATTEN_SHARE of the best batch size's."""
    s = summary[summary.side == side].sort_values("batch")
    if s.empty:
        return None
    return int(s[s.pps_median >= FLATTEN_SHARE * s.pps_median.max()].batch.iloc[0])


def speedup(summary: pd.DataFrame, batch: int = 32, side: str = "sender") -> float:
    """batch_table's speed-up of `side` at `batch` over batch 1; NaN where it has no such row."""
    row = summary[(summary.side == side) & (summary.batch == batch)]
    return float(row.speedup.iloc[0]) if len(row) else float("nan")


def talk_numbers(reference_dir) -> pd.DataFrame:
    """The talk's numbers (quantity, value), values kept as printed (text): F18's tolerance follows
    each one's last printed digit."""
    return pd.read_csv(Path(reference_dir) / "time_budget_talk.csv", dtype={"value": str})


def talk(ref: pd.DataFrame, quantity: str) -> float:
    """One of talk_numbers' quantities as a number."""
    return float(ref.set_index("quantity").loc[quantity, "value"])


def amortisation_table(batches: pd.DataFrame, costs: pd.DataFrame, reference_dir) -> pd.DataFrame:
    """Per batch size: CPU time saved per packet against batch 1, next to what amortising one
    system call per packet would save, at this host's syscall cost and at the talk's."""
    sc = syscall_cost(costs)
    talk_ns = talk(talk_numbers(reference_dir), "syscall_noaudit_ns")
    rows = []
    for side in ("sender", "receiver"):
        s = batches[batches.side == side].set_index("batch")
        if 1 not in s.index:
            continue
        for b, r in s.iterrows():
            rows.append({"side": side, "batch": int(b), "cpu_ns_per_pkt": r.cpu_ns_per_pkt,
                         "saved_cpu_ns_per_pkt": s.loc[1, "cpu_ns_per_pkt"] - r.cpu_ns_per_pkt,
                         "syscall_share_here_ns": (sc.median_ns if sc is not None else np.nan) * (1 - 1 / b),
                         "syscall_share_talk_ns": talk_ns * (1 - 1 / b)})
    return pd.DataFrame(rows)


def summary_numbers(costs: pd.DataFrame, copies: pd.DataFrame, batches: pd.DataFrame) -> pd.DataFrame:
    """The few numbers the README and the report quote, in one deterministic table."""
    rows = []
    for name in ("syscall_perf", "atomic", "spinlock", "malloc", "skballoc"):
        r = cost(costs, name)
        if r is not None:
            rows.append({"quantity": COST_LABELS[name], "value": round(r.median_ns, 1), "unit": "ns"})
    for _, r in copies.iterrows():
        rows.append({"quantity": f"memcpy {r.buffer} (copy-bound flow limit)", "value": round(r.copy_bound_gbps, 1),
                     "unit": "Gbit/s"})
    if len(batches):
        rows.append({"quantity": "sender speed-up at batch 32 (pps / pps at batch 1)",
                     "value": round(speedup(batches, 32), 2), "unit": "x"})
        rows.append({"quantity": "sender curve flattens at batch", "value": flattens_at(batches), "unit": "packets"})
        snd = batches[batches.side == "sender"].set_index("batch").cpu_ns_per_pkt
        for b in (1, 32):
            if b in snd.index:
                rows.append({"quantity": f"sender CPU per packet at batch {b}", "value": round(snd.loc[b], 1),
                             "unit": "ns"})
    out = pd.DataFrame(rows)
    out["value"] = out.value.astype(float).replace({np.nan: None})
    return out
