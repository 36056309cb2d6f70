"""The traffic patterns' figures (notebooks 03-05, 12): throughput per core, each side's CPU and the
breakdown against the flow count, marked where the data holds flagged runs."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..analysis.metrics import BREAKDOWN_ORDER
from .encodings import caveat, category_color, ci_bars, share_axis
from ..dictionary import ENDPOINT_SIDES as SIDES

FLAGGED_COLOR = "#c0392b"


def flag_mark(summary: pd.DataFrame) -> str:
    """The line every figure carries when its data includes flagged runs ("" when it does not)."""
    flagged = int(summary.flagged_runs.sum()) if "flagged_runs" in summary else 0
    if not flagged:
        return ""
    if flagged == int(summary.repetitions.sum()):
        return (f"FLAGGED RUNS ONLY: no clean run, all {flagged} runs were flagged (foreign load or a short "
                "window); NOT EVIDENCE")
    return f"includes {flagged} flagged runs (include_contaminated)"


def cores_sentence(summary: pd.DataFrame) -> str:
    """Say whether the flows had cores of their own or shared them (what n measures here)."""
    last = summary.sort_values("flows").iloc[-1]
    if last.sender_cores == 1 and last.receiver_cores == 1:
        return (f"all {last.flow_count} flows share 1 sender and 1 receiver core: n sweeps flows per core, "
                "not cores")
    return f"at n={last.flows}: {last.flow_count} flows on {last.sender_cores} sender and " \
           f"{last.receiver_cores} receiver cores"


def _label_lines(label: str) -> list[str]:
    return label.replace(" (", "\n(", 1).split("\n")


def charts(summary: pd.DataFrame, bd: pd.DataFrame, pattern: str, figure: str, label: str) -> dict:
    """Throughput per core (mean and 95 % CI), each side's CPU and the breakdown per side against n
    (summary: the section's table; bd: its breakdown, with its metric column), titled as the paper's
    `figure` analogue; data of flagged runs only are drawn dashed, in red, and said to be no evidence."""
    title = "n (all-to-all: n × n flows)" if pattern == "all-to-all" else "n (flows)"
    x = alt.X("flows:O", axis=alt.Axis(labelAngle=0), title=title)
    mark = flag_mark(summary)
    sub = [*([mark] if mark else []), *_label_lines(label), cores_sentence(summary)]
    only_flagged = mark.startswith("FLAGGED")
    line = {"color": FLAGGED_COLOR, "strokeDash": [6, 3]} if only_flagged else {}
    flagged_title = " — FLAGGED RUNS" if only_flagged else ""
    title_color = {"color": FLAGGED_COLOR} if only_flagged else {}
    err = summary.assign(lo=summary.tpc_gbps - summary.tpc_gbps_ci95.fillna(0),
                         hi=summary.tpc_gbps + summary.tpc_gbps_ci95.fillna(0))
    y = alt.Y("tpc_gbps:Q", title="throughput per core (Gbit/s)", scale=alt.Scale(zero=True))
    tpc = alt.layer(
        alt.Chart(err).mark_line(point=True, **line).encode(x=x, y=y, tooltip=["flows", "flow_count", "tpc_gbps",
                                                                       "tpc_gbps_ci95", "throughput_gbps"]),
        ci_bars(err, x, "throughput per core (Gbit/s)"),
    ).properties(width=340, height=240, title=alt.Title(
        f"{figure} analogue: throughput per core vs flows ({pattern}){flagged_title}",
        subtitle=[*sub, "mean and 95 % CI over repetitions; the busier side is the bottleneck"], **title_color))
    cpu = summary.melt(id_vars=["flows"], value_vars=["sender_cpu_pct", "receiver_cpu_pct"],
                       var_name="side", value_name="cpu_pct")
    cpu["side"] = cpu.side.str.replace("_cpu_pct", "")
    cpu_chart = alt.Chart(cpu).mark_line(point=True, **({"strokeDash": [6, 3]} if only_flagged else {})).encode(
        x=x, y=alt.Y("cpu_pct:Q", title="CPU utilisation (% of one core)"),
        color=alt.Color("side:N", sort=list(SIDES), title="side"), tooltip=["flows", "side", "cpu_pct"],
    ).properties(width=340, height=240, title=alt.Title(
        f"{figure} analogue: CPU per side vs flows ({pattern}){flagged_title}",
        subtitle=[*sub, "means; /proc/stat, % of one core summed over the side's CPUs"], **title_color))
    metric = bd.metric.iloc[0] if len(bd) else "breakdown_pct"
    order = BREAKDOWN_ORDER
    stacked = alt.Chart(bd).mark_bar().encode(
        x=x, y=share_axis("share of busy samples"), color=category_color(order),
        order=alt.Order("category_rank:Q"), tooltip=["flows", "side", "category", alt.Tooltip("pct:Q", format=".1f")],
    ).transform_calculate(category_rank=f"indexof({order!r}, datum.category)").properties(width=220, height=240)
    breakdown_chart = stacked.facet(column=alt.Column("side:N", sort=list(SIDES), title=None)).properties(
        title=alt.Title(f"{figure} analogue: CPU breakdown vs flows ({pattern}){flagged_title}",
                        subtitle=[*sub, caveat(metric)], **title_color))
    return {f"{pattern}-tpc": tpc, f"{pattern}-cpu": cpu_chart, f"{pattern}-breakdown": breakdown_chart}
