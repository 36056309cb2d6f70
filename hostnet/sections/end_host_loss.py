"""Marian et al., DSN 2010: end-host UDP loss by location vs offered rate, CPU placement and
socket buffer (Fig. 5), plus TCP congestion-control variants with 1 and 4 flows (Fig. 6).

Notebook 14-end-host-loss.ipynb calls only these. The UDP sweep is this module's own; the TCP
part replays the congestion-control campaign of notebook 11 (hostnet.congestion).
"""
from __future__ import annotations

import os

import pandas as pd

from . import common
from .. import store
from ..testbed.session import is_fresh, kind_of
from ..measure.sweep import SweepSpec, declared, run_sweep
from ..derive.udp_loss import LOCATIONS
from ..analysis import verdicts
from ..analysis.findings import end_host_loss as rules
from ..analysis.findings.end_host_loss import tcp_verdict  # noqa: F401 (notebook 14 calls ehl.tcp_verdict)
from ..charts.end_host_loss import charts, tcp_chart  # noqa: F401 (notebook 14 calls ehl.charts, ehl.tcp_chart)
from ..analysis.verdicts import load_findings
from ..measure.options import LiveOptions

EXPERIMENT = "udp-loss"
PLACEMENTS = ["same", "different"]


def spec(*, rates_gbps=None, buffers_kb=None, placements=None, config: str | None = None, **fields) -> SweepSpec:
    """sweeps/end-host-loss.yaml: offered rate x socket buffer (the study's 1 MB and 4 MB) x
    application placement, perf sampling lightly (loss is read from counters, the profile is only a
    cross-check), with what is given over it (fields: any other SweepSpec field)."""
    return declared("end-host-loss", config=config,
                    grid={"udp_rate_gbps": rates_gbps, "socket_buffer_kb": buffers_kb, "app_cpu": placements},
                    **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), **spec_args) -> str:
    """Run (mode "run") or name (mode "replay") the UDP campaign. CPU placement comes from the
    testbed's endpoint CPU sets (workloads.UdpRate.placement): a fresh embedded testbed's are
    embedded_cpus(), a testbed that is up (or a testbed.yaml) brings its own. spec_args: spec()'s."""
    if common.is_replay(mode, campaign):
        return campaign
    sweep = spec(**spec_args)
    campaign = campaign or store.new_campaign_id("end-host-loss", kind_of(live.testbed))
    shape = {}
    if is_fresh(live.testbed):
        snd, rcv = embedded_cpus(os.cpu_count() or 1)
        shape = {"sender_cpus": snd, "receiver_cpus": rcv}
    with live.testbed_for("el", **shape) as tb:
        run_sweep(tb, sweep, runs_dir=runs_dir, campaign=campaign)
        live.top_up(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=common.REFERENCE_DIR)
    return campaign


def embedded_cpus(n_cpus: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(sender, receiver) CPUs: with 3 or more cores the receiver gets two, so "different CPU" is
    one of its own; with 2 it gets one and "different" lends the sender's (a recorded confound)."""
    return ((0,), (1, 2)) if n_cpus >= 3 else ((0,), (1,))


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    point = {m["run_id"]: m.get("point", {}) for m in manifests}
    tidy = tidy.assign(target_gbps=tidy.run_id.map(lambda r: float(point[r]["udp_rate_gbps"])),
                       buffer_kb=tidy.run_id.map(lambda r: int(point[r]["socket_buffer_kb"])),
                       placement=tidy.run_id.map(lambda r: point[r]["app_cpu"]))
    return tidy, manifests


def placement_notes(manifests: list[dict]) -> dict[str, dict]:
    """{placement: {rx_cpu, app_cpu, sender_cpu, confounded, note}} as the runs recorded it."""
    out = {}
    for m in manifests:
        p = m.get("placement")
        if p and m["status"] == "ok":
            out.setdefault(p["placement"], p)
    return out


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per (placement, buffer, target rate): medians over repetitions, the range of
    loss_pct over them (loss_min_pct, loss_max_pct) and lost datagrams per location."""
    rows = []
    for (placement, kb, target), g in tidy.groupby(["placement", "buffer_kb", "target_gbps"]):
        # the group's rows split once by (metric, side, category): a filter of the group per cell was
        # nearly all of the table's time (2 s for 16 rows)
        at, values = g.groupby(["metric", "side", "category"], sort=False).indices, g.value

        def med(metric, side, category="", at=at, values=values):
            return values.iloc[at.get((metric, side, category), [])].median()
        row = {"placement": placement, "buffer_kb": int(kb), "target_gbps": float(target),
               "offered_gbps": med("offered_gbps", "both"), "delivered_gbps": med("delivered_gbps", "both"),
               "loss_pct": med("loss_pct", "both")}
        loss = g[(g.metric == "loss_pct") & (g.side == "both")].value
        row["loss_min_pct"], row["loss_max_pct"] = loss.min(), loss.max()
        for loc in LOCATIONS:
            row[f"{loc}_pct"] = med("lost_pct", "receiver", loc)
        for loc in LOCATIONS:  # counts, so shares across points weigh each point by its datagrams
            row[f"{loc}_lost_count"] = med("lost_datagrams_count", "receiver", loc)
        row["iperf_loss_pct"] = med("iperf_loss_pct", "both")  # iperf's own count, warm-up included
        row["sent_gbps"] = med("sent_gbps", "both")
        row["unaccounted_pct"] = 100.0 * med("unaccounted_datagrams_count", "both") / med(
            "sent_datagrams_count", "sender")
        row["time_squeeze_count"] = med("time_squeeze_count", "receiver")
        row["rx_cpu_busy_pct"] = g[(g.metric == "cpu_busy_pct") & (g.category == "rx_cpu")].value.median()
        row["rx_cpu_softirq_pct"] = g[(g.metric == "cpu_softirq_pct") & (g.category == "rx_cpu")].value.median()
        row["repetitions"] = int(((g.metric == "loss_pct") & (g.side == "both")).sum())
        rows.append(row)
    out = pd.DataFrame(rows)
    return out.sort_values(["placement", "buffer_kb", "target_gbps"], key=_placement_first).reset_index(drop=True)


def _placement_first(col: pd.Series) -> pd.Series:
    return col.map({p: i for i, p in enumerate(PLACEMENTS)}) if col.name == "placement" else col


def highest_rate(summary: pd.DataFrame) -> pd.DataFrame:
    """The loss-location breakdown at the highest offered rate, per placement and buffer."""
    top = summary[summary.target_gbps == summary.target_gbps.max()]
    cols = ["placement", "buffer_kb", "target_gbps", "offered_gbps", "delivered_gbps", "loss_pct",
            *[f"{loc}_pct" for loc in LOCATIONS], "repetitions"]
    return top[cols].reset_index(drop=True)


def tcp_table(cc_summary: pd.DataFrame) -> pd.DataFrame:
    """The TCP part (study Fig. 6): throughput and retransmits per variant, 1 and 4 flows."""
    cols = ["congestion_control", "flows", "status", "throughput_gbps", "retransmits_count", "tpc_gbps", "repetitions"]
    return cc_summary[[c for c in cols if c in cc_summary.columns]]


@verdicts.under_accountings
def verdict_table(summary: pd.DataFrame, tidy: pd.DataFrame, notes: dict, reference_dir) -> verdicts.Verdicts:
    """F21 (loss is at the receiving end host), F22 (placement), F23 (a larger buffer does not help),
    each by its rule in analysis/findings. Its `wanted` names the sweep points an undecided F22/F23
    needs more clean runs of."""
    judged = {"F21": rules.f21(summary, LOCATIONS), "F22": rules.f22(summary, tidy, notes),
              "F23": rules.f23(summary, tidy)}
    return verdicts.collect(load_findings(reference_dir), judged)


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The UDP campaign's verdict table (what topup.decide asks of a section)."""
    tidy, manifests = load(runs_dir, campaign)
    return verdict_table.verdicts(table(tidy), tidy, placement_notes(manifests), reference_dir)


