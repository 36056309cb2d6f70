"""§3.1 Fig. 3(e)/(f) analogues (sections/rx_buffer.py): throughput per core and receive -> copy
latency against the TCP Rx buffer size, a line per rx ring size where the ring was swept (F08)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from . import plots  # noqa: F401 (the hostnet theme and PNG renderer these charts are drawn in)
from .encodings import ci_bars
from .grid import TPC_TITLE, tpc_ci

RING_TITLE = "rx ring (descriptors)"


def charts(summary: pd.DataFrame, label: str) -> dict:
    """Fig. 3(e)/(f) analogues of rx_buffer.table's summary; a ring sweep (F08) draws a line per rx ring size."""
    x = alt.X("rx_buffer_kb:Q", scale=alt.Scale(type="log", base=2), title="TCP Rx buffer (tcp_rmem max, KB)")
    by_ring = "rx_ring" in summary.columns
    ring = {"color": alt.Color("rx_ring:O", title=RING_TITLE)} if by_ring else {}
    err = tpc_ci(summary)
    tpc = alt.layer(
        alt.Chart(err).mark_line(point=True).encode(
            x=x, y=alt.Y("tpc_gbps:Q", title=TPC_TITLE),
            tooltip=[*(["rx_ring"] if by_ring else []), "rx_buffer_kb", "tpc_gbps", "tpc_gbps_ci95"], **ring),
        ci_bars(err, x, TPC_TITLE, **ring),
    ).properties(width=380, height=260, title=alt.Title(
        "Fig. 3(e) analogue: throughput per core vs TCP Rx buffer" + (" and rx ring" if by_ring else ""),
        subtitle=[*label.split("\n"), "mean and 95 % CI over repetitions"]))
    ids = ["rx_ring", "rx_buffer_kb"] if by_ring else ["rx_buffer_kb"]
    lat = summary.melt(id_vars=ids, value_vars=["latency_avg_usec", "latency_p99_usec"],
                       var_name="statistic", value_name="usec")
    lat["statistic"] = lat.statistic.map({"latency_avg_usec": "average", "latency_p99_usec": "99th percentile"})
    if lat.dropna().empty:  # no run measured it (e.g. no bpftrace samples in the window): say so, draw no axes
        latency = alt.Chart(pd.DataFrame({"text": ["no receive → copy latency was measured in these runs"]})
                            ).mark_text(size=14).encode(text="text:N")
    else:
        dash = {"strokeDash": alt.StrokeDash("rx_ring:O", title=RING_TITLE)} if by_ring else {}
        latency = alt.Chart(lat.dropna()).mark_line(point=True).encode(
            x=x, y=alt.Y("usec:Q", scale=alt.Scale(type="log"), title="receive → copy latency (µs)"),
            color=alt.Color("statistic:N", title=""), tooltip=[*ids, "statistic", "usec"], **dash)
    latency = latency.properties(width=380, height=260, title=alt.Title(
        "Fig. 3(f) analogue: receive → start of copy latency",
        subtitle=[*label.split("\n"), "bpftrace: net:netif_receive_skb → skb:skb_copy_datagram_iovec"]))
    return {"rx-buffer-tpc": tpc, "rx-buffer-latency": latency}
