"""§3.5 (Fig. 9; the artifact README's Figure 7): one long flow with receive-side random packet loss.

Loss comes from the journaled nftables knob (knobs/loss.py) at the receiver's prerouting hook,
after GRO: with GRO on one drop removes a whole aggregated skb (docs/knobs.md). The notebook
06-packet-loss.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

import pandas as pd

from ..analysis import verdicts
from ..analysis.findings import packet_loss as rules
from ..analysis.findings.packet_loss import KEY
from . import common, grid_view
from ..charts.grid import packet_loss_charts as charts  # noqa: F401 (the notebook's section.charts)
from ..measure.sweep import SweepSpec, declared
from ..measure.options import LiveOptions

EXPERIMENT = "single-flow"


def spec(loss_rates=None, *, config: str | None = None, **fields) -> SweepSpec:
    """sweeps/packet-loss.yaml, with what is given over it (fields: any other SweepSpec field)."""
    return declared("packet-loss", config=config,
                    grid={KEY: None if loss_rates is None else [float(r) for r in loss_rates]}, **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), top_up_rounds: int = 2,
            **spec_args) -> str:
    return grid_view.collect(mode, spec(**spec_args), runs_dir=runs_dir, campaign=campaign, name="packet-loss",
                             live=live, top_up_rounds=top_up_rounds, judge=judge)


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    return grid_view.tag(tidy, manifests, KEY), manifests


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per loss rate: throughput, tpc, CPU per side, retransmissions (means, 95 % CIs)."""
    rows = []
    for rate, g in tidy.groupby(KEY):
        row = {KEY: float(rate), "loss": rules.rate_label(rate)}
        for col, metric, side in (("tpc_gbps", "tpc_gbps", "both"), ("throughput_gbps", "throughput_gbps", "both"),
                                  ("sender_cpu_pct", "cpu_util_pct", "sender"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver"),
                                  ("retransmits_count", "retransmits_count", "sender")):
            row[col], row[col + "_ci95"] = grid_view.mean_ci(g, metric, side)
        # retransmitted share of the sender's segments: the loss the flow actually saw
        retrans, out = (grid_view.counter(g, "sender", f"snmp:Tcp.{n}") for n in ("RetransSegs", "OutSegs"))
        ratio = (100 * retrans / out).dropna()
        row["retrans_pct"] = float(ratio.mean()) if len(ratio) else float("nan")
        row["repetitions"] = int(((g.metric == "tpc_gbps") & (g.side == "both")).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def breakdown(tidy: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown(tidy, KEY)


def breakdown_table(bd: pd.DataFrame) -> pd.DataFrame:
    return grid_view.breakdown_table(bd, KEY)


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir) -> verdicts.Verdicts:
    """F10 by its rule in analysis/findings: loss lowers tpc, and loss recovery costs."""
    return verdicts.collect(verdicts.load_findings(reference_dir), {"F10": rules.f10(tidy)})


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    return verdict_table.verdicts(load(runs_dir, campaign)[0], reference_dir)
