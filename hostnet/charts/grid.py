"""Figures of the sections swept over one grid key (sections/grid_view.py: packet loss, short flows,
mixed flows): throughput per core per grid value with its 95 % CI, the CPU breakdown per grid value,
and the figures only packet loss and mixed flows draw."""
from __future__ import annotations

import altair as alt
import pandas as pd

from . import plots  # noqa: F401 (the hostnet theme and PNG renderer these charts are drawn in)
from .encodings import breakdown_caveat, ci_bars
from ..analysis.findings import mixed_flows, packet_loss
from ..analysis.metrics import BREAKDOWN_ORDER

TPC_TITLE = "throughput per core (Gbit/s)"


def tpc_ci(s: pd.DataFrame) -> pd.DataFrame:
    """A summary with `lo`/`hi`: its mean tpc_gbps minus/plus the 95 % CI (none: the mean)."""
    return s.assign(lo=s.tpc_gbps - s.tpc_gbps_ci95.fillna(0), hi=s.tpc_gbps + s.tpc_gbps_ci95.fillna(0))


def tpc_bars(s: pd.DataFrame, field: str, x_title: str, title: str, subtitle: list[str], tooltip=()) -> alt.Chart:
    """Throughput-per-core per grid value (`field` holds its label): mean bars, 95 % CI error bars."""
    x = alt.X(f"{field}:N", sort=list(s[field]), title=x_title, axis=alt.Axis(labelAngle=0))
    err = tpc_ci(s)
    return alt.layer(
        alt.Chart(err).mark_bar(color="#4c78a8").encode(
            x=x, y=alt.Y("tpc_gbps:Q", title=TPC_TITLE),
            tooltip=[field, "tpc_gbps", "tpc_gbps_ci95", *tooltip, "repetitions"]),
        ci_bars(err, x, TPC_TITLE),
    ).properties(width=300, height=240, title=alt.Title(title, subtitle=subtitle))


def breakdown_chart(bd: pd.DataFrame, key: str, title: str, label: str, value_title: str) -> alt.Chart:
    """The paper's breakdown figures: per category, one bar per grid value, a panel per side; under
    it the caveat of the breakdown's metric (grid_view.breakdown's `metric` column)."""
    data = bd[bd.category.isin(BREAKDOWN_ORDER)].drop(columns="metric").assign(**{key: lambda d: d[key].astype(str)})
    values = [str(v) for v in sorted(bd[key].unique())]
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("category:N", sort=BREAKDOWN_ORDER, title="CPU category"),
        xOffset=alt.XOffset(f"{key}:N", sort=values),
        y=alt.Y("pct:Q", title="share of busy CPU samples (%)"),
        color=alt.Color(f"{key}:N", sort=values, title=value_title),
        tooltip=[key, "side", "category", alt.Tooltip("pct:Q", format=".1f"), alt.Tooltip("pct_ci95:Q", format=".1f")],
    ).properties(width=330, height=220).facet(
        column=alt.Column("side:N", sort=["sender", "receiver"], title=None),
    ).properties(title=alt.Title(title, subtitle=[*label.split("\n"), breakdown_caveat(bd),
                                                  "means over repetitions"]))


def packet_loss_charts(summary: pd.DataFrame, bd: pd.DataFrame, label: str) -> dict:
    """Fig. 9 analogues: tpc, CPU per side, retransmissions and the CPU breakdown per loss rate."""
    s, key = summary, packet_loss.KEY
    x = alt.X("loss:N", sort=list(s.loss), title="injected receive-side loss rate", axis=alt.Axis(labelAngle=0))
    tpc = tpc_bars(s, "loss", "injected receive-side loss rate",
                   "Fig. 9 analogue: throughput per core vs packet loss rate",
                   [*label.split("\n"), "one long flow; mean and 95 % CI over repetitions"], ("throughput_gbps",))
    cpu = s.melt(id_vars=["loss"], value_vars=["sender_cpu_pct", "receiver_cpu_pct"], var_name="side",
                 value_name="pct")
    cpu["side"] = cpu.side.str.replace("_cpu_pct", "")
    cpu_chart = alt.Chart(cpu).mark_bar().encode(
        x=x, xOffset=alt.XOffset("side:N", sort=["sender", "receiver"]),
        y=alt.Y("pct:Q", title="CPU utilisation (% of one core)"),
        color=alt.Color("side:N", sort=["sender", "receiver"], title="side"),
        tooltip=["loss", "side", alt.Tooltip("pct:Q", format=".1f")],
    ).properties(width=300, height=240, title=alt.Title(
        "Fig. 9 analogue: CPU utilisation per side vs loss rate", subtitle=[*label.split("\n"), "means; /proc/stat"]))
    retrans = alt.Chart(s).mark_line(point=True).encode(
        x=x, y=alt.Y("retrans_pct:Q", title="retransmitted segments (% of sent)"),
        tooltip=["loss", alt.Tooltip("retrans_pct:Q", format=".3f"), "retransmits_count"],
    ).properties(width=300, height=240, title=alt.Title(
        "Fig. 9 analogue: retransmissions vs loss rate",
        subtitle=[*label.split("\n"), "sender Tcp.RetransSegs / Tcp.OutSegs (/proc/net/snmp)"]))
    bd_chart = breakdown_chart(bd.assign(**{key: bd[key].map(packet_loss.rate_label)}), key,
                               "Fig. 9 analogue: CPU breakdown vs loss rate", label, "loss rate")
    return {"packet-loss-tpc": tpc, "packet-loss-cpu": cpu_chart, "packet-loss-retransmissions": retrans,
            "packet-loss-breakdown": bd_chart}


def _mixed_point(long_flow: int, k: int) -> str:
    return f"long + {k} short" if long_flow else f"{k} short alone"


def mixed_flows_charts(summary: pd.DataFrame, bd: pd.DataFrame, label: str) -> dict:
    """Fig. 11 analogues: each flow class's tpc stacked per point, the breakdown with the long flow."""
    key = mixed_flows.KEY
    s = summary.assign(point=[_mixed_point(lf, k) for lf, k in zip(summary.long_flow, summary[key], strict=True)])
    bars = s.melt(id_vars=["point"], value_vars=["long_tpc_gbps", "short_tpc_gbps"], var_name="flows",
                  value_name="gbps")
    bars["flows"] = bars.flows.map({"long_tpc_gbps": "long flow", "short_tpc_gbps": "short flows"})
    tpc = alt.Chart(bars).mark_bar().encode(
        x=alt.X("point:N", sort=list(s.point), title="flows sharing the core"),
        y=alt.Y("gbps:Q", stack="zero", title=TPC_TITLE),
        color=alt.Color("flows:N", sort=["long flow", "short flows"], title="",
                        scale=alt.Scale(range=["#4c78a8", "#f58518"])),
        tooltip=["point", "flows", alt.Tooltip("gbps:Q", format=".2f")],
    ).properties(width=340, height=250, title=alt.Title(
        "Fig. 11(a) analogue: throughput per core, long flow mixed with short flows",
        subtitle=[*label.split("\n"), "one core per side; stacked: long flow + short (4 KB RPC) flows = total; means"]))
    mixed = bd[bd.long_flow == 1].drop(columns="long_flow")
    bd_chart = breakdown_chart(mixed.assign(**{key: mixed[key].astype(int)}), key,
                               "Fig. 11(b) analogue: CPU breakdown, long flow + k short flows", label, "short flows")
    return {"mixed-flows-tpc": tpc, "mixed-flows-breakdown": bd_chart}
