"""§3.10 analogues (sections/congestion.py): throughput per core and the CPU breakdown per congestion
control, an algorithm the host lacks named under the figure."""
from __future__ import annotations

import altair as alt
import pandas as pd

from . import plots  # noqa: F401 (the hostnet theme and PNG renderer these charts are drawn in)
from .encodings import CATEGORY_COLORS, breakdown_caveat, category_color, share_axis


def charts(summary: pd.DataFrame, bd: pd.DataFrame, label: str) -> dict:
    """congestion.table's summary as tpc bars per algorithm and flow count, and congestion.breakdown's
    shares stacked per algorithm and side, both in the table's order of algorithms."""
    m = summary[summary.status == "measured"].assign(flows=lambda d: d.flows.astype(int).astype(str) + " flow(s)")
    order = list(dict.fromkeys(m.congestion_control))  # the table's order
    missing = sorted(set(summary.congestion_control) - set(order))
    x = alt.X("congestion_control:N", sort=order, title="congestion control")
    tpc = alt.Chart(m).mark_bar().encode(
        x=x, xOffset="flows:N", y=alt.Y("tpc_gbps:Q", title="throughput per core (Gbit/s, median)"),
        color=alt.Color("flows:N", title=""), tooltip=["congestion_control", "flows", "tpc_gbps", "throughput_gbps",
                                                       "retransmits_count", "repetitions"],
    ).properties(width=340, height=240, title=alt.Title(
        "§3.10 analogue: throughput per core by congestion control",
        subtitle=[*label.split("\n"), "median over repetitions; " + ", ".join(missing) + " not available on this host"
                  if missing else "median over repetitions"]))
    stack = alt.Chart(bd.drop(columns="metric")).mark_bar().encode(
        x=x, y=share_axis("share of the side's CPU samples"), color=category_color(CATEGORY_COLORS),
        column=alt.Column("side:N", title=None, sort=["sender", "receiver"]),
        tooltip=["congestion_control", "side", "category", alt.Tooltip("pct:Q", format=".1f")],
    ).properties(width=200, height=240, title=alt.Title(
        "§3.10 analogue: CPU breakdown per congestion control, one flow",
        subtitle=["median shares; " + breakdown_caveat(bd)]))
    return {"congestion-control-tpc": tpc, "congestion-control-breakdown": stack}
