"""The 2010 end-host loss study's figures (notebook 14): where UDP datagrams were lost and what was
delivered against the offered rate (Fig. 5), and TCP variants with 1 and 4 flows (Fig. 6)."""
from __future__ import annotations

import altair as alt
import pandas as pd

from ..derive.udp_loss import LOCATIONS

# a colour per place a datagram is lost, in the locations' order
LOCATION_COLORS = dict(zip(LOCATIONS, ("#9d755d", "#54a24b", "#f58518", "#4c78a8", "#b279a2"), strict=True))


def charts(summary: pd.DataFrame, label: str, notes: dict) -> dict:
    """Datagrams lost per location, stacked per target rate, a panel per placement and buffer, and
    delivered against offered rate (summary: the section's table; notes: placement_notes, which say
    where the 'different' CPU is the sender's)."""
    loss = summary.melt(id_vars=["placement", "buffer_kb", "target_gbps", "offered_gbps"],
                        value_vars=[f"{loc}_pct" for loc in LOCATION_COLORS], var_name="location", value_name="pct")
    loss["location"] = loss.location.str.removesuffix("_pct")
    loss["buffer"] = loss.buffer_kb.map(lambda kb: f"{kb // 1024} MB socket buffer")
    loss["app CPU"] = loss.placement.map(lambda p: f"app on {p} CPU" + (" (confounded)" if notes.get(p, {}).get(
        "confounded") else ""))
    confound = [f"2 cores: the 'different' CPU {n['app_cpu']} is also the sender's (confounded)"
                for n in notes.values() if n.get("confounded")]
    stacked = alt.Chart(loss).mark_bar().encode(
        x=alt.X("target_gbps:O", title="target rate (iperf2 -b, Gbit/s)"),
        y=alt.Y("pct:Q", stack="zero", title="datagrams lost (% of offered)"),
        color=alt.Color("location:N", title="lost at", sort=list(LOCATION_COLORS),
                        scale=alt.Scale(domain=list(LOCATION_COLORS), range=list(LOCATION_COLORS.values()))),
        column=alt.Column("app CPU:N", title=None, sort="descending"), row=alt.Row("buffer:N", title=None),
        tooltip=["placement", "buffer_kb", "target_gbps", "offered_gbps", "location",
                 alt.Tooltip("pct:Q", format=".2f")],
    ).properties(width=220, height=150, title=alt.Title(
        "Marian et al. DSN 2010, Fig. 5 analogue: where UDP datagrams were lost vs offered rate",
        subtitle=[*label.split("\n"), "medians over repetitions; counters over the measurement window",
                  *confound[:1]]))
    rate = summary.assign(series=summary.placement + " CPU, " + (summary.buffer_kb // 1024).astype(str) + " MB")
    delivered = alt.Chart(rate).mark_line(point=True).encode(
        x=alt.X("offered_gbps:Q", title="offered to the receiver (delivered + lost, Gbit/s of UDP payload)"),
        y=alt.Y("delivered_gbps:Q", title="delivered to the application (Gbit/s)"),
        color=alt.Color("series:N", title=""), tooltip=["series", "target_gbps", "offered_gbps", "delivered_gbps",
                                                        "loss_pct"],
    ).properties(width=340, height=240, title=alt.Title(
        "Marian et al. DSN 2010 analogue: delivered vs offered UDP rate", subtitle=label.split("\n")))
    return {"end-host-loss-locations": stacked, "end-host-loss-delivered": delivered}


def tcp_chart(cc_summary: pd.DataFrame, label: str) -> alt.HConcatChart:
    """Throughput and retransmitted segments per TCP variant, 1 and 4 flows side by side (cc_summary:
    the congestion-control campaign's table; its measured rows only)."""
    m = cc_summary[cc_summary.status == "measured"].assign(
        flows=lambda d: d.flows.astype(int).astype(str) + " flow(s)")
    base = alt.Chart(m).encode(x=alt.X("congestion_control:N", title="TCP variant"), xOffset="flows:N",
                               color=alt.Color("flows:N", title=""))
    thr = base.mark_bar().encode(y=alt.Y("throughput_gbps:Q", title="throughput (Gbit/s, median)"),
                                 tooltip=["congestion_control", "flows", "throughput_gbps", "retransmits_count"])
    retr = base.mark_bar().encode(y=alt.Y("retransmits_count:Q", title="retransmitted segments (median)"),
                                  tooltip=["congestion_control", "flows", "retransmits_count"])
    return alt.hconcat(thr.properties(width=230, height=220), retr.properties(width=230, height=220)).properties(
        title=alt.Title("Marian et al. DSN 2010, Fig. 6 analogue: TCP variants, 1 and 4 parallel flows",
                        subtitle=[*label.split("\n"), "no path: sender and receiver joined by veth (RTT ~0)"]))
