"""§3.1 Fig. 3(e)/(f): TCP Rx buffer size vs throughput-per-core and receive -> copy latency.

The notebook 02-rx-buffer.ipynb is a thin caller of these functions.
"""
from __future__ import annotations


import altair as alt
import pandas as pd

from ..analysis import metrics, verdicts
from .. import store
from ..testbed.session import kind_of
from . import common
from ..measure.sweep import SweepSpec, declared, run_sweep
from ..measure.options import LiveOptions

EXPERIMENT = "single-flow"


def spec(*, config: str | None = None, sizes_kb=None, rate_mbps: int = 0, **fields) -> SweepSpec:
    """sweeps/rx-buffer.yaml, with what is given over it (rate_mbps: each flow paced, as the NIC
    rehearsal's guests need; fields: any other SweepSpec field)."""
    return declared("rx-buffer", config=config,
                    grid={"rx_buffer_kb": None if sizes_kb is None else [int(k) for k in sizes_kb],
                          "rate_mbps": [int(rate_mbps)] if rate_mbps else None}, **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), **spec_args) -> str:
    """Replay the campaign named, or sweep the Rx buffer sizes (spec_args: spec()'s) on `live.testbed`."""
    if common.is_replay(mode, campaign):
        return campaign
    sweep = spec(**spec_args)
    campaign = campaign or store.new_campaign_id("rx-buffer", kind_of(live.testbed))
    with live.testbed_for() as tb:
        run_sweep(tb, sweep, runs_dir=runs_dir, campaign=campaign)
        live.top_up(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=common.REFERENCE_DIR)
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
            mean, ci = metrics.confidence(g[(g.metric == metric) & (g.side == side)].value)
            row[col], row[col + "_ci95"] = mean, ci
        row["repetitions"] = int(((g.metric == "tpc_gbps") & (g.side == "both")).sum())
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
    if lat.dropna().empty:  # no run measured it (e.g. no bpftrace samples in the window): say so, draw no axes
        latency = alt.Chart(pd.DataFrame({"text": ["no receive → copy latency was measured in these runs"]})
                            ).mark_text(size=14).encode(text="text:N")
    else:
        latency = alt.Chart(lat.dropna()).mark_line(point=True).encode(
            x=x, y=alt.Y("usec:Q", scale=alt.Scale(type="log"), title="receive → copy latency (µs)"),
            color=alt.Color("statistic:N", title=""), tooltip=["rx_buffer_kb", "statistic", "usec"])
    latency = latency.properties(width=380, height=260, title=alt.Title(
        "Fig. 3(f) analogue: receive → start of copy latency",
        subtitle=[*label.split("\n"), "bpftrace: net:netif_receive_skb → skb:skb_copy_datagram_iovec"]))
    return {"rx-buffer-tpc": tpc, "rx-buffer-latency": latency}


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir) -> pd.DataFrame:
    """F07 (latency rises and tpc falls past its peak as the Rx buffer grows), judged on clean runs
    by verdicts' one rule; F08 (NIC rings) needs a NIC."""
    judged = {}
    lat = tidy[(tidy.metric == "rx_to_copy_latency_avg_usec") & (tidy.side == "receiver")]
    sizes = sorted(int(k) for k in lat.rx_buffer_kb.unique())
    if len(sizes) >= 3:
        small, large = sizes[0], sizes[-1]
        def lat_runs(kb):
            return verdicts.clean_values(tidy, "rx_to_copy_latency_avg_usec", "receiver", rx_buffer_kb=kb)
        latency = verdicts.direction(
            verdicts.difference(lat_runs(small), lat_runs(large)),
            want="<", what=f"avg receive → copy latency {small} KB → {large} KB", unit="µs", fmt=".0f",
            points=[{"rx_buffer_kb": small}, {"rx_buffer_kb": large}])
        tpc = {k: verdicts.clean_values(tidy, "tpc_gbps", "both", rx_buffer_kb=k) for k in sizes}
        peak = max(sizes, key=lambda k: sum(tpc[k]) / max(1, len(tpc[k])))
        past = [k for k in sizes if k > peak]
        parts = [latency]
        if past:
            low = min(past, key=lambda k: sum(tpc[k]) / max(1, len(tpc[k])))
            parts.append(verdicts.direction(verdicts.difference(tpc[peak], tpc[low]), want=">",
                                            what=f"tpc at its peak ({peak} KB) → lowest past it ({low} KB)",
                                            unit="Gbit/s", fmt=".2f",
                                            points=[{"rx_buffer_kb": peak}, {"rx_buffer_kb": low}]))
        else:
            parts.append(verdicts.Judgement(verdicts.NOT_REPRODUCED, f"tpc peaks at the largest buffer ({peak} KB)"))
        j = verdicts.combine(parts)
        judged["F07"] = verdicts.Judgement(j.verdict, j.shows + "; cache misses: no PMU here", j.decide, j.points)
    judged["F08"] = verdicts.not_testable("veth has no NIC rings (ethtool -G unsupported)",
                                          "a NIC with adjustable rings")
    return verdicts.table(verdicts.load_findings(reference_dir), judged)


def judge(runs_dir, campaign: str, reference_dir) -> pd.DataFrame:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    return verdict_table(load(runs_dir, campaign)[0], reference_dir)
