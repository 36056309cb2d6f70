"""The per-packet time budget at 10-400 Gbit/s, this host's measured costs against it, and
UDP batching (sendmmsg/recvmmsg) between the embedded testbed's namespaces.

Companion study: J. D. Brouer's 2015 talk on the 100 Gbit/s time budget (findings F18-F20).
The notebook 13-time-budget.ipynb is a thin caller of these functions. Its campaign is
hostnet/sweeps/time-budget.yaml run through the sweep like every other (the microbenchmarks and
the batching points are workload kinds: measure/benches.py); the arithmetic is analysis/budget.py's,
the tables analysis/time_budget_tables.py's, the rules analysis/findings/time_budget.py's and the
figures charts/time_budget.py's.
"""
from __future__ import annotations

import re

import pandas as pd

from . import common
from .. import store
from ..measure import topup
from ..measure.benches import BATCH_EXPERIMENT, MICRO_EXPERIMENT
from ..measure.options import LiveOptions
from ..measure.sweep import SweepSpec, declared, run_sweep
from ..testbed.session import kind_of
from ..analysis import verdicts
from ..analysis.findings import time_budget as rules
from ..analysis.metrics import breakdown_metric
from ..analysis.time_budget_tables import InSitu, batch_table, clock_mhz, cost_table, talk_numbers
# what notebook 13 calls as time_budget.X
from ..analysis.time_budget_tables import (  # noqa: F401
    amortisation_table, budget_pivot, budget_table, copy_table, summary_numbers)
from ..charts.time_budget import charts  # noqa: F401


def spec(*, batch_sizes=None, payload_bytes: int | None = None, micro_scale: float = 1.0, **fields) -> SweepSpec:
    """The campaign's sweep: sweeps/time-budget.yaml with the notebook's parameters over it (fields:
    any other SweepSpec field, e.g. repetitions, duration). Every batching point names its payload
    (replay picks points by it); the microbenchmarks' scale enters the grid only when it is not 1."""
    return declared("time-budget", grid={
        "batch": None if batch_sizes is None else [int(b) for b in batch_sizes],
        "payload_bytes": None if payload_bytes is None else [int(payload_bytes)],
        "micro_scale": None if micro_scale == 1.0 else [float(micro_scale)]}, **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), top_up_rounds: int = 3,
            **spec_args) -> str:
    """Replay the campaign named, or measure on `live.testbed` (LiveOptions): spec(**spec_args)
    swept into `campaign` (or a new one), every point then topped up to a run free of foreign load
    (at most top_up_rounds more rounds), then until F19 is decided or the top-up budget is spent."""
    if common.is_replay(mode, campaign):
        return campaign
    sweep = spec(**spec_args)  # refused before a testbed is built
    campaign = campaign or store.new_campaign_id("time-budget", kind_of(live.testbed))
    with live.testbed_for("tb") as tb:
        run_sweep(tb, sweep, runs_dir=runs_dir, campaign=campaign)
        topup.fill(tb, runs_dir=runs_dir, campaign=campaign, min_clean=1, rounds=top_up_rounds)
        live.top_up(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=common.REFERENCE_DIR)
    return campaign


def load(runs_dir, campaign: str, include_contaminated: bool = False):
    """(microbenchmark tidy, batching tidy with a batch column, every manifest, experiments shown
    with flagged runs). An experiment whose every run was flagged for foreign load (a quick live run
    on a busy machine) is shown with its flagged runs rather than not at all, and named in the
    last item so the notebook can say so."""
    frames, manifests, flagged = {}, store.Manifests(), []
    for exp in (MICRO_EXPERIMENT, BATCH_EXPERIMENT):
        try:
            frames[exp], ms = common.load(runs_dir, campaign, exp, include_contaminated)
        except FileNotFoundError:
            frames[exp], ms = common.load(runs_dir, campaign, exp, include_contaminated=True)
            flagged.append(exp)
        manifests += ms
    batch = frames[BATCH_EXPERIMENT]
    size = {m["run_id"]: m.get("point", {}).get("batch") for m in manifests}
    batch = batch.assign(batch=batch.run_id.map(size))
    return frames[MICRO_EXPERIMENT], batch[batch.batch.notna()].astype({"batch": int}), manifests, flagged


@verdicts.as_table
def verdict_table(costs: pd.DataFrame, batches: pd.DataFrame, mhz: float | None, reference_dir,
                  flagged=(), batch: pd.DataFrame | None = None, in_situ: InSitu | None = None,
                  micro: pd.DataFrame | None = None) -> verdicts.Verdicts:
    """F18-F20, each by its rule in analysis/findings. `flagged`: the experiments load() could only
    show with runs flagged for foreign load (its last item); F19 is then inconclusive and says so.
    `batch`: the batching runs' tidy rows, whose per-run CPU cost per packet F19 compares (verdicts'
    one rule); `micro`: the microbenchmarks' tidy rows, whose per-run skb-like alloc+free F20 judges;
    `in_situ`: mm_per_packet() of a single-flow campaign, shown beside F20 as context. Its `wanted`
    names F19's batch sizes where a top-up would decide it (collect); F20 in situ is another campaign's."""
    ref = talk_numbers(reference_dir)
    judged = {"F18": rules.f18(ref, mhz),
              "F19": rules.f19(ref, costs, batches, batch, micro_flagged=MICRO_EXPERIMENT in flagged,
                               batch_flagged=BATCH_EXPERIMENT in flagged),
              "F20": rules.f20(ref, costs, in_situ, micro)}
    return verdicts.collect(verdicts.load_findings(reference_dir), judged)


def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table as the notebook computes it, less F20's in-situ context (what collect's
    top-up asks; its `wanted` names batch sizes, e.g. {"F19": [{"batch": 1}, {"batch": 32}]})."""
    micro, batch, _, flagged = load(runs_dir, campaign)
    return verdict_table.verdicts(cost_table(micro), batch_table(batch), clock_mhz(micro)[0], reference_dir,
                                  flagged=flagged, batch=batch, micro=micro)


def in_situ_campaign(mode: str, runs_dir, named: str) -> str:
    """The single-flow campaign F20 in situ reads: in replay the named one (empty: the newest); in
    run mode the newest in runs_dir, so a batch (`hostnet figures --mode run`) judges F20 on the
    campaign its own notebook 01 just recorded, not on a recorded one. A single-flow campaign is
    one named <stamp>-single-flow-<kind> (notebook 01's): packet-loss and Rx-buffer campaigns run
    single-flow points too, at other settings. "" when there is none (mm_per_packet says so)."""
    if mode == "replay" and named:
        return named
    try:
        campaigns = {r.parent.name for r in store.list_runs(runs_dir, experiment="single-flow")}
    except FileNotFoundError:
        campaigns = set()
    ours = sorted(c for c in campaigns if re.search(r"-single-flow-[a-z]+$", c))
    return ours[-1] if ours else named


def mm_per_packet(runs_dir, campaign: str, config: str = "no-opts") -> InSitu:
    """F20 in situ: per clean run of `config` in a single-flow campaign, memory management's CPU
    time per packet, both sides summed (veth hands the sender's skb to the receiver, so one side
    allocates what the other frees): busy seconds x mm share of the busy samples / the receiver's
    TCP segments (snmp Tcp.InSegs). At no-opts (no TSO/GSO/GRO) a segment is one skb. Returned as
    InSitu: the rows, and why there are none (no such campaign, or no such run in it)."""
    columns = ["run_id", "campaign", "config", "packets", "sender_mm_ns", "receiver_mm_ns", "mm_ns_per_pkt", "metric"]
    try:
        if not campaign:  # in_situ_campaign found none to name
            raise FileNotFoundError(f"no single-flow campaign under {runs_dir}")
        tidy, manifests = common.load(runs_dir, campaign, "single-flow")
    except FileNotFoundError as exc:  # e.g. a live run into a fresh runs_dir: F20 says what it lacked
        return InSitu(pd.DataFrame(columns=columns), str(exc))
    window = {m["run_id"]: m.get("window", {}).get("seconds") for m in manifests}
    metric = breakdown_metric(tidy)
    t = tidy[tidy.config == config]
    rows = []
    for run, g in t.groupby("run_id"):
        def one(m, side, category="", g=g):
            v = g[(g.metric == m) & (g.side == side) & (g.category.fillna("") == category)].value
            return float(v.iloc[0]) if len(v) else float("nan")
        packets = one("counter_delta_count", "receiver", "snmp:Tcp.InSegs")
        seconds = window.get(run)
        if not seconds or not packets or packets != packets:
            continue
        ns = {side: one("cpu_util_pct", side) / 100 * seconds * one(metric, side, "mm") / 100 * 1e9 / packets
              for side in ("sender", "receiver")}
        rows.append({"run_id": run, "campaign": campaign, "config": config, "packets": packets,
                     "sender_mm_ns": ns["sender"], "receiver_mm_ns": ns["receiver"],
                     "mm_ns_per_pkt": ns["sender"] + ns["receiver"], "metric": metric})
    why = "" if rows else f"campaign {campaign} has no clean {config} run with a profile and TCP counters"
    return InSitu(pd.DataFrame(rows, columns=columns), why)
