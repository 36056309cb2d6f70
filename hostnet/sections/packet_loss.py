"""§3.5 (Fig. 9; the artifact README's Figure 7): one long flow with receive-side random packet loss.

Loss comes from the journaled nftables knob (knobs/loss.py) at the receiver's prerouting hook,
after GRO: with GRO on one drop removes a whole aggregated skb (docs/knobs.md). The notebook
06-packet-loss.ipynb is a thin caller of these functions.
"""
from __future__ import annotations


import altair as alt
import pandas as pd

from . import common, grid_view
from ..sweep import SweepSpec
from ..verdicts import INCONCLUSIVE, load_findings

EXPERIMENT = "single-flow"
KEY = "loss_rate"
LOSS_RATES = [0, 0.0001, 0.001, 0.01]


def spec(loss_rates=LOSS_RATES, *, config: str = "all-opts", repetitions: int = 3, duration: int = 5,
         warmup: int = 2, perf_freq_hz: int = 249) -> SweepSpec:
    return SweepSpec(experiment=EXPERIMENT, configs=[config], grid={KEY: [float(r) for r in loss_rates]},
                     repetitions=repetitions, duration=duration, warmup=warmup, seed=6, perf_freq_hz=perf_freq_hz)


def collect(mode: str, *, runs_dir, campaign: str = "", testbed_name: str = "", top_up_rounds: int = 2,
            **spec_args) -> str:
    return grid_view.collect(mode, spec(**spec_args), runs_dir=runs_dir, campaign=campaign, name="packet-loss",
                             testbed_name=testbed_name, top_up_rounds=top_up_rounds)


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    return grid_view.tag(tidy, manifests, KEY), manifests


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per loss rate: throughput, tpc, CPU per side, retransmissions (means, 95 % CIs)."""
    rows = []
    for rate, g in tidy.groupby(KEY):
        row = {KEY: float(rate), "loss": _rate_label(rate)}
        for col, metric, side in (("tpc_gbps", "tpc_gbps", "both"), ("throughput_gbps", "throughput_gbps", "both"),
                                  ("sender_cpu_pct", "cpu_util_pct", "sender"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver"),
                                  ("retransmits_count", "retransmits_count", "sender")):
            row[col], row[col + "_ci95"] = grid_view.mean_ci(g, metric, side)
        # retransmitted share of the sender's segments: the loss the flow actually saw
        retrans, out = (grid_view.counter(g, "sender", f"snmp:Tcp.{n}") for n in ("RetransSegs", "OutSegs"))
        ratio = (100 * retrans / out).dropna()
        row["retrans_pct"] = float(ratio.mean()) if len(ratio) else float("nan")
        row["repetitions"] = int((g.metric == "tpc_gbps").sum())
        rows.append(row)
    return pd.DataFrame(rows)


def _rate_label(rate: float) -> str:
    return "0" if rate == 0 else f"1/{round(1 / rate)}"


def breakdown(tidy: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown(tidy, KEY)


def breakdown_table(bd: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown_table(bd, KEY)


def charts(summary: pd.DataFrame, bd: pd.DataFrame, label: str) -> dict:
    s = summary
    order = list(s.loss)
    x = alt.X("loss:N", sort=order, title="injected receive-side loss rate", axis=alt.Axis(labelAngle=0))
    tpc = grid_view.tpc_bars(s, "loss", "injected receive-side loss rate",
                             "Fig. 9 analogue: throughput per core vs packet loss rate",
                             [*label.split("\n"), "one long flow; mean and 95 % CI over repetitions"],
                             ("throughput_gbps",))
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
    bd_chart = grid_view.breakdown_chart(bd.assign(**{KEY: bd[KEY].map(_rate_label)}), KEY,
                                         "Fig. 9 analogue: CPU breakdown vs loss rate", label, "loss rate")
    return {"packet-loss-tpc": tpc, "packet-loss-cpu": cpu_chart, "packet-loss-retransmissions": retrans,
            "packet-loss-breakdown": bd_chart}


def verdict_table(summary: pd.DataFrame, bd: pd.DataFrame, reference_dir) -> pd.DataFrame:
    """F10: loss lowers tpc, and loss recovery (retransmissions, ACK processing) costs CPU."""
    claim = load_findings(reference_dir).set_index("id").loc["F10", "claim"]
    s = summary.sort_values(KEY)
    if len(s) < 2 or s[KEY].iloc[0] != 0:
        return pd.DataFrame([{"id": "F10", "paper says": claim, "verdict": INCONCLUSIVE,
                              "this run shows": "needs the loss-free point and at least one loss rate"}])
    base, worst = s.iloc[0], s.iloc[-1]
    lower = grid_view.clearly_below(worst.tpc_gbps, worst.tpc_gbps_ci95, base.tpc_gbps, base.tpc_gbps_ci95)
    higher = grid_view.clearly_below(base.tpc_gbps, base.tpc_gbps_ci95, worst.tpc_gbps, worst.tpc_gbps_ci95)
    # a missing retransmission count is no evidence either way (inconclusive), not a contradiction
    counted = not (pd.isna(worst.retransmits_count) or pd.isna(base.retransmits_count))
    more_retrans = counted and worst.retransmits_count > base.retransmits_count
    tcp0, tcp1 = (grid_view.share(bd, KEY, r, "sender", "tcp/ip")[0] for r in (base[KEY], worst[KEY]))
    shows = (f"tpc {base.tpc_gbps:.1f} Gbit/s without loss → {worst.tpc_gbps:.1f} at {_rate_label(worst[KEY])} "
             f"({grid_view.change_pct(base.tpc_gbps, worst.tpc_gbps):+.0f} %); retransmitted "
             f"{base.retrans_pct:.3f} % → {worst.retrans_pct:.3f} % of segments; sender tcp/ip share "
             f"{tcp0:.0f} % → {tcp1:.0f} %")
    return grid_view.judged("F10", claim, shows, reproduced=lower and more_retrans,
                            contradicted=higher or (counted and not more_retrans),
                            noise_note="the tpc change is within the 95 % CIs")
