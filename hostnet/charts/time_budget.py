"""The time budget's figures (notebook 13): the budget against link rate, this host's costs against
it, and UDP packets per second and CPU time per packet against batch size."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..analysis import budget
from ..analysis.time_budget_tables import BUDGETS, COST_LABELS, cost
from .encodings import ci_bars

SIDE_NAMES = {"sender": "sender (sendmmsg)", "receiver": "receiver (recvmmsg)"}


def budget_chart(table: pd.DataFrame, mhz: float | None, clock_source: str) -> alt.Chart:
    """Time between packets per link rate, a line per frame size (table: budget_table)."""
    rate_x = alt.X("rate_gbps:Q", scale=alt.Scale(type="log", domain=[min(table.rate_gbps), max(table.rate_gbps)]),
                   title="link rate (Gbit/s)",
                   axis=alt.Axis(values=budget.RATES_GBPS))
    return alt.Chart(table).mark_line(point=True).encode(
        x=rate_x, y=alt.Y("interval_ns:Q", scale=alt.Scale(type="log"), title="time between packets (ns)"),
        color=alt.Color("frame_bytes:O", title="frame (bytes)"),
        tooltip=["rate_gbps", "frame_bytes", "wire_bytes", alt.Tooltip("interval_ns:Q", format=".1f"),
                 alt.Tooltip("mpps:Q", format=".2f"),
                 *([alt.Tooltip("cycles:Q", format=".0f")] if "cycles" in table.columns else [])],
    ).properties(width=380, height=280, title=alt.Title(
        "Talk (2015) analogue: per-packet time budget vs link rate",
        subtitle=["Ethernet overhead included (preamble+SFD 8 B, gap 12 B)",
                  f"cycles in the tooltip at {mhz:.0f} MHz ({clock_source})" if mhz
                  else f"cycles: {clock_source}"]))


def cost_chart(costs: pd.DataFrame, label: str) -> alt.LayerChart:
    """Each measured cost, median and range (costs: cost_table), against the BUDGETS' intervals."""
    c = costs.assign(label=costs.cost.map(COST_LABELS))
    lines = pd.DataFrame([{"budget": f"{f} B frame at {r} Gbit/s: {budget.interval_ns(f, r):.1f} ns",
                           "ns": budget.interval_ns(f, r)} for f, r in BUDGETS])
    y = alt.Y("label:N", sort=list(COST_LABELS.values()), title=None, axis=alt.Axis(labelLimit=320))
    # a log axis: costs span atomics (ns) to system calls (hundreds of ns)
    cx = alt.X("median_ns:Q", scale=alt.Scale(type="log"), title="cost per operation (ns; median and range)")
    return alt.layer(
        alt.Chart(c).mark_point(filled=True, size=70).encode(
            x=cx, y=y, tooltip=["label", "median_ns", "min_ns", "max_ns", "repetitions"]),
        alt.Chart(c).mark_rule().encode(x=alt.X("min_ns:Q", scale=alt.Scale(type="log")), x2="max_ns:Q", y=y),
        alt.Chart(lines).mark_rule(strokeDash=[4, 3]).encode(
            x="ns:Q", color=alt.Color("budget:N", title="time between packets", legend=alt.Legend(labelLimit=320))),
    ).properties(width=380, height=240, title=alt.Title(
        "Talk (2015) analogue: this host's costs against the budget",
        subtitle=[*label.split("\n"), "median and range over repetitions"]))


def batch_charts(costs: pd.DataFrame, batches: pd.DataFrame, label: str) -> tuple[alt.LayerChart, alt.LayerChart]:
    """UDP packets per second, and CPU time per packet with one system call's cost drawn across, per
    batch size and side (batches: batch_table), median and range over repetitions."""
    b = batches.assign(side=batches.side.map(SIDE_NAMES))
    bx = alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title="packets per system call (batch size)")
    pps_chart = alt.layer(
        alt.Chart(b).mark_line(point=True).encode(
            x=bx, y=alt.Y("pps_median:Q", title="UDP packets per second"), color=alt.Color("side:N", title=""),
            tooltip=["side", "batch", "pps_median", "pps_min", "pps_max", "speedup", "repetitions"]),
        ci_bars(b, bx, "UDP packets per second", "pps_min", "pps_max", color="side:N"),
    ).properties(width=380, height=260, title=alt.Title(
        "Talk (2015) analogue: UDP packets per second vs batch size",
        subtitle=[*label.split("\n"), "median and range over repetitions"]))
    sc = cost(costs, "syscall_perf")
    calls = pd.DataFrame([{"what": f"one system call here: {sc.median_ns:.0f} ns", "ns": sc.median_ns}]
                         if sc is not None else [], columns=["what", "ns"])
    ny_title = "CPU time per packet (ns; median and range)"
    ns_chart = alt.layer(
        alt.Chart(b).mark_line(point=True).encode(
            x=bx, y=alt.Y("cpu_ns_per_pkt:Q", title=ny_title), color=alt.Color("side:N", title=""),
            tooltip=["side", "batch", "cpu_ns_per_pkt", "cpu_ns_min", "cpu_ns_max", "ns_per_pkt"]),
        ci_bars(b, bx, ny_title, "cpu_ns_min", "cpu_ns_max", color="side:N"),
        alt.Chart(calls).mark_rule(strokeDash=[4, 3], color="gray").encode(y="ns:Q", tooltip=["what"]),
        alt.Chart(calls).mark_text(align="left", dx=4, dy=-6, color="gray").encode(
            x=alt.value(0), y="ns:Q", text="what:N"),
    ).properties(width=380, height=260, title=alt.Title(
        "Talk (2015) analogue: CPU time per packet vs batch size",
        subtitle=[*label.split("\n"), "each tool's CPU time in the window / packets (softirq work charged to it)"]))
    return pps_chart, ns_chart


def charts(table: pd.DataFrame, costs: pd.DataFrame, batches: pd.DataFrame, label: str, mhz: float | None,
           clock_source: str) -> dict:
    """Notebook 13's four figures by stem: the budget, the costs against it, and batching's two."""
    pps_chart, ns_chart = batch_charts(costs, batches, label)
    return {"time-budget-table": budget_chart(table, mhz, clock_source), "time-budget-costs": cost_chart(costs, label),
            "time-budget-batch-pps": pps_chart, "time-budget-batch-ns": ns_chart}
