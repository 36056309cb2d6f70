"""§3.1 Fig. 3(e)/(f): TCP Rx buffer size vs throughput-per-core and receive -> copy latency.

The notebook 02-rx-buffer.ipynb is a thin caller of these functions.
"""
from __future__ import annotations


import altair as alt
import pandas as pd

from .. import analysis, store, testbed
from . import common
from ..sweep import SweepSpec, run_sweep
from ..verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, load_findings

EXPERIMENT = "single-flow"
SIZES_KB = [100, 200, 400, 800, 1600, 3200, 6400, 12800]


def collect(mode: str, *, runs_dir, campaign: str = "", config: str = "tsogro", sizes_kb=SIZES_KB,
            repetitions: int = 3, duration: int = 5, warmup: int = 2, latency_sample_every: int = 1) -> str:
    if common.is_replay(mode, campaign):
        return campaign
    spec = SweepSpec(experiment=EXPERIMENT, configs=[config], grid={"rx_buffer_kb": list(sizes_kb)},
                     repetitions=repetitions, duration=duration, warmup=warmup,
                     latency_sample_every=latency_sample_every)
    campaign = campaign or store.new_campaign_id("rx-buffer", "embedded")
    with testbed.embedded(testbed.unique_name("nb")) as tb:
        run_sweep(tb, spec, runs_dir=runs_dir, campaign=campaign)
    return campaign


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    kb = {m["run_id"]: m.get("point", {}).get("rx_buffer_kb") for m in manifests}
    tidy = tidy.assign(rx_buffer_kb=tidy.run_id.map(kb))
    return tidy[tidy.rx_buffer_kb.notna()], manifests


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per Rx buffer size: means with 95 % CIs over repetitions."""
    rows = []
    for kb, g in tidy.groupby("rx_buffer_kb"):
        row = {"rx_buffer_kb": int(kb)}
        for col, metric, side in (("tpc_gbps", "tpc_gbps", "both"), ("throughput_gbps", "throughput_gbps", "both"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver"),
                                  ("latency_avg_usec", "rx_to_copy_latency_avg_usec", "receiver"),
                                  ("latency_p99_usec", "rx_to_copy_latency_p99_usec", "receiver")):
            mean, ci = analysis.confidence(g[(g.metric == metric) & (g.side == side)].value)
            row[col], row[col + "_ci95"] = mean, ci
        row["repetitions"] = int((g.metric == "tpc_gbps").sum())
        rows.append(row)
    return pd.DataFrame(rows)


def charts(summary: pd.DataFrame, label: str) -> dict:
    x = alt.X("rx_buffer_kb:Q", scale=alt.Scale(type="log", base=2), title="TCP Rx buffer (tcp_rmem max, KB)")
    err = summary.assign(lo=summary.tpc_gbps - summary.tpc_gbps_ci95.fillna(0),
                         hi=summary.tpc_gbps + summary.tpc_gbps_ci95.fillna(0))
    tpc = alt.layer(
        alt.Chart(err).mark_line(point=True).encode(x=x, y=alt.Y("tpc_gbps:Q", title="throughput per core (Gbit/s)"),
                                                    tooltip=["rx_buffer_kb", "tpc_gbps", "tpc_gbps_ci95"]),
        alt.Chart(err).mark_errorbar().encode(x=x, y=alt.Y("lo:Q", title="throughput per core (Gbit/s)"), y2="hi:Q"),
    ).properties(width=380, height=260, title=alt.Title(
        "Fig. 3(e) analogue: throughput per core vs TCP Rx buffer",
        subtitle=[*label.split("\n"), "mean and 95 % CI over repetitions"]))
    lat = summary.melt(id_vars=["rx_buffer_kb"], value_vars=["latency_avg_usec", "latency_p99_usec"],
                       var_name="statistic", value_name="usec")
    lat["statistic"] = lat.statistic.map({"latency_avg_usec": "average", "latency_p99_usec": "99th percentile"})
    latency = alt.Chart(lat.dropna()).mark_line(point=True).encode(
        x=x, y=alt.Y("usec:Q", scale=alt.Scale(type="log"), title="receive → copy latency (µs)"),
        color=alt.Color("statistic:N", title=""), tooltip=["rx_buffer_kb", "statistic", "usec"],
    ).properties(width=380, height=260, title=alt.Title(
        "Fig. 3(f) analogue: receive → start of copy latency",
        subtitle=[*label.split("\n"), "bpftrace: net:netif_receive_skb → skb:skb_copy_datagram_iovec"]))
    return {"rx-buffer-tpc": tpc, "rx-buffer-latency": latency}


def verdict_table(summary: pd.DataFrame, reference_dir) -> pd.DataFrame:
    """F07 (latency and tpc vs Rx buffer); F08 (NIC rings) needs a NIC."""
    findings = load_findings(reference_dir).set_index("id")
    s = summary.sort_values("rx_buffer_kb").dropna(subset=["latency_avg_usec"])
    rows = []
    if len(s) >= 3:
        small, large = s.iloc[0], s.iloc[-1]
        peak = s.loc[s.tpc_gbps.idxmax()]
        lat_up = large.latency_avg_usec > 2 * small.latency_avg_usec
        past_peak = s[s.rx_buffer_kb > peak.rx_buffer_kb]
        # a drop counts only when it exceeds both points' confidence intervals (veth is noisy)
        low = past_peak.loc[past_peak.tpc_gbps.idxmin()] if len(past_peak) else None
        tpc_down = low is not None and (low.tpc_gbps + _ci(low.tpc_gbps_ci95)
                                        < peak.tpc_gbps - _ci(peak.tpc_gbps_ci95))
        shows = (f"avg latency {small.latency_avg_usec:.0f} µs at {small.rx_buffer_kb:.0f} KB → "
                 f"{large.latency_avg_usec:.0f} µs at {large.rx_buffer_kb:.0f} KB (p99 {small.latency_p99_usec:.0f}"
                 f" → {large.latency_p99_usec:.0f} µs); tpc peaks at {peak.tpc_gbps:.1f} Gbit/s "
                 f"({peak.rx_buffer_kb:.0f} KB)" + (f", lowest past it {past_peak.tpc_gbps.min():.1f}"
                                                     if len(past_peak) else "")
                 + "; cache misses: no PMU here")
        shows += ("" if tpc_down or low is None else
                  "; the tpc drop past the peak is within the 95 % CIs, so only the latency half is shown")
        verdict = REPRODUCED if lat_up and tpc_down else (NOT_REPRODUCED if not lat_up else INCONCLUSIVE)
        rows.append({"id": "F07", "paper says": findings.loc["F07", "claim"], "this run shows": shows,
                     "verdict": verdict})
    rows.append({"id": "F08", "paper says": findings.loc["F08", "claim"],
                 "this run shows": "veth has no NIC rings (ethtool -G unsupported)", "verdict": NOT_TESTABLE})
    return pd.DataFrame(rows)


def _ci(value: float) -> float:
    """A missing CI (one repetition) is as wide as the data allows: infinite."""
    return float("inf") if pd.isna(value) else float(value)
