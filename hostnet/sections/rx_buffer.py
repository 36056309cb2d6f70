"""§3.1 Fig. 3(e)/(f): TCP Rx buffer size vs throughput-per-core and receive -> copy latency.

The notebook 02-rx-buffer.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

import pandas as pd

from ..analysis import metrics, verdicts
from ..analysis.findings import rx_buffer as rules
from .. import store
from ..testbed.session import kind_of
from . import common
from ..charts.rx_buffer import charts  # noqa: F401 (the notebook's rx_buffer.charts)
from ..testbed.capabilities import NO_RINGS
from ..measure.sweep import SweepSpec, declared, paced, run_sweep
from ..measure.options import LiveOptions

EXPERIMENT = "single-flow"


def spec(*, config: str | None = None, sizes_kb=None, rate_mbps: int = 0, rx_rings=(), **fields) -> SweepSpec:
    """sweeps/rx-buffer.yaml, with what is given over it (rate_mbps: each flow paced, as the NIC
    rehearsal's guests need; rx_rings: the receiver NIC's rx descriptors, F08's sweep, servers only;
    fields: any other SweepSpec field)."""
    return declared("rx-buffer", config=config,
                    grid={"rx_buffer_kb": None if sizes_kb is None else [int(k) for k in sizes_kb],
                          "rx_ring": [int(n) for n in rx_rings] or None,
                          "rate_mbps": paced(rate_mbps)}, **fields)


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
    """The campaign's runs with their point's rx_buffer_kb, and rx_ring where the ring was swept."""
    tidy, manifests = common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)
    point = {m["run_id"]: m.get("point", {}) for m in manifests}
    tidy = tidy.assign(rx_buffer_kb=tidy.run_id.map({r: p.get("rx_buffer_kb") for r, p in point.items()}))
    present = set(tidy.run_id)
    ringed = {"rx_ring" in p for r, p in point.items() if r in present}
    if ringed == {True, False}:  # e.g. resumed with rx_rings: its no-ring points would group as nothing
        raise ValueError(f"campaign {campaign} mixes points with and without rx_ring; a ring sweep is a campaign "
                         "of its own (run it with rx_rings from the start)")
    if ringed == {True}:
        tidy = tidy.assign(rx_ring=tidy.run_id.map({r: p.get("rx_ring") for r, p in point.items()}))
    return tidy[tidy.rx_buffer_kb.notna()], manifests


def rings(tidy: pd.DataFrame) -> list[int]:
    """The rx ring sizes the campaign swept (none: the NIC's own, or veth's no rings)."""
    return sorted(int(n) for n in tidy.rx_ring.dropna().unique()) if "rx_ring" in tidy.columns else []


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per Rx buffer size (and rx ring size, where swept): means with 95 % CIs over repetitions."""
    keys = ["rx_ring", "rx_buffer_kb"] if rings(tidy) else ["rx_buffer_kb"]
    rows = []
    for values, g in tidy.groupby(keys):
        row = {k: int(v) for k, v in zip(keys, values, strict=True)}
        for col, metric, side in (("tpc_gbps", "tpc_gbps", "both"), ("throughput_gbps", "throughput_gbps", "both"),
                                  ("receiver_cpu_pct", "cpu_util_pct", "receiver"),
                                  ("latency_avg_usec", "rx_to_copy_latency_avg_usec", "receiver"),
                                  ("latency_p99_usec", "rx_to_copy_latency_p99_usec", "receiver")):
            mean, ci = metrics.confidence(g[(g.metric == metric) & (g.side == side)].value)
            row[col], row[col + "_ci95"] = mean, ci
        row["repetitions"] = int(((g.metric == "tpc_gbps") & (g.side == "both")).sum())
        rows.append(row)
    return pd.DataFrame(rows)


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir, manifests: list[dict] | None = None) -> verdicts.Verdicts:
    """F07 (latency rises and tpc falls past its peak as the Rx buffer grows) and, where the rx ring
    was swept (servers), F08 (tpc falls as the ring grows), each by its rule in analysis/findings;
    F07 at the ring size with the most buffer sizes. manifests: the campaign's, to say why F08 was
    not judged on a testbed with NICs."""
    swept = rings(tidy)
    at = {"rx_ring": max(swept, key=lambda n: tidy[tidy.rx_ring == n].rx_buffer_kb.nunique())} if swept else {}
    nics = bool(manifests) and manifests[0]["testbed"]["kind"] != "embedded"
    no_sweep = (f"one rx ring size swept ({swept[0]})" if swept else "no rx ring sweep (rx_rings)" if nics
                else NO_RINGS)
    judged = {"F07": rules.f07(tidy[tidy.rx_ring == at["rx_ring"]] if at else tidy, at),
              "F08": rules.f08(tidy, swept, no_sweep)}
    return verdicts.collect(verdicts.load_findings(reference_dir), judged)


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    tidy, manifests = load(runs_dir, campaign)
    return verdict_table.verdicts(tidy, reference_dir, manifests)
