"""§3.1 single flow: the optimisation ladder, run live or replayed, and its figures.

The notebook 01-single-flow.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..analysis import metrics, verdicts
from ..measure import config as stackconfig
from ..charts import plots
from .. import store
from ..testbed.session import kind_of
from . import common
from ..testbed.capabilities import NO_RINGS
from ..measure.sweep import SweepSpec, declared, paced, run_configs
from ..taxonomy import CATEGORIES
from ..measure.options import LiveOptions

EXPERIMENT = "single-flow"
LADDER = list(stackconfig.LADDER)
# the paper's own ladder (Fig. 3b: no-opts, +TSO/GRO, +jumbo, +aRFS): F04 is stated on these steps
PAPER_LADDER = ("no-opts", "tsogro", "tsogro+jumbo", "all-opts")


def spec(*, configs=None, rate_mbps: int = 0, **fields) -> SweepSpec:
    """sweeps/single-flow.yaml (the ladder), with what is given over it (rate_mbps: each flow paced,
    as the NIC rehearsal's guests need; fields: any other SweepSpec field)."""
    return declared(EXPERIMENT, configs=None if configs is None else list(configs),
                    grid={"rate_mbps": paced(rate_mbps)}, **fields)


def collect(mode: str, *, runs_dir, campaign: str = "", live: LiveOptions = LiveOptions(), **spec_args) -> str:
    """Return the campaign to analyse: replay an existing one, or run a new one live.

    mode "replay": `campaign` (or the newest single-flow campaign under runs_dir).
    mode "run": spec(**spec_args) on `live.testbed` ("embedded": a fresh one; the name of an embedded
    testbed that is up; or a testbed.yaml path: servers over SSH), every config x repetition in
    shuffled order, then topped up (topup.decide) until the verdicts are decided or topup's budget
    is spent; torn down afterwards.
    """
    replay = common.replay_or_newest(mode, campaign, runs_dir, EXPERIMENT)
    if replay:
        return replay
    sweep = spec(**spec_args)  # every config checked before a testbed is built
    campaign = campaign or store.new_campaign_id(EXPERIMENT, kind_of(live.testbed))
    with live.testbed_for() as tb:
        run_configs(tb, sweep, runs_dir=runs_dir, campaign=campaign)
        live.top_up(tb, judge, runs_dir=runs_dir, campaign=campaign, reference_dir=common.REFERENCE_DIR)
    return campaign


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    return common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)



def judge(runs_dir, campaign: str, reference_dir) -> verdicts.Verdicts:
    """The campaign's verdict table (what topup.decide asks of a section)."""
    tidy, manifests = load(runs_dir, campaign)
    return verdict_table.verdicts(tidy, reference_dir, manifests)


def stand_ins(manifests: list[dict]) -> str:
    """The one line that says what a configuration ran as on this testbed, where that differs from
    its name (on veth: GSO stands in for TSO, RFS for aRFS): tables, charts and the explorer all
    name configurations as the paper does, and this line says the rest once."""
    seen = {m["config"]["name"]: m.get("config_label", m["config"]["name"]) for m in manifests}
    shown = [f"{name} ran as {label}" for name, label in seen.items() if label != name]
    return "on this testbed: " + ", ".join(shown) if shown else ""


def charts(tidy: pd.DataFrame, reference_dir, label: str, manifests: list[dict]) -> dict:
    ref = pd.read_csv(Path(reference_dir) / "single_flow_readme_sample.csv", comment="#")
    order = list(stackconfig.CONFIGS)
    label = label.replace(" (", "\n(", 1) + (f"\n{stand_ins(manifests)}" if stand_ins(manifests) else "")
    return {
        "single-flow-tpc": plots.tpc_chart(tidy, order, ref, label),
        "single-flow-cpu": plots.cpu_chart(tidy, order, label),
        "single-flow-sender-breakdown": plots.breakdown_chart(tidy, order, "sender", "c", label,
                                                              metric=metrics.breakdown_metric(tidy)),
        "single-flow-receiver-breakdown": plots.breakdown_chart(tidy, order, "receiver", "d", label,
                                                                metric=metrics.breakdown_metric(tidy)),
    }


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    t = metrics.ladder_table(tidy, list(stackconfig.CONFIGS))
    tops = []
    for cfg in t.config:
        tops.append(", ".join(f"{c} {p:.0f}%" for c, p in metrics.top_categories(tidy, cfg, "receiver", 3)))
    t["receiver_top3"] = tops
    return t


def steering_of(manifests: list[dict] | None) -> str:
    """The receive path the campaign ran: a real NIC's, or the embedded testbed's mode."""
    if not manifests:
        return ""
    tb = manifests[0]["testbed"]
    return tb.get("rx_steering", "rps" if tb["kind"] == "embedded" else "nic")


def _per_run(tidy: pd.DataFrame, metric: str, side: str, config: str) -> pd.Series:
    rows = tidy[(tidy.metric == metric) & (tidy.side == side) & (tidy.config == config)
                & (tidy.category.fillna("") == "")]
    return rows.set_index("run_id").value.astype(float).sort_index()


ARFS_NEEDS = ("a NIC with ntuple filters (aRFS), or a third CPU for receive processing apart from the sender's and "
              "the application's")


# F04's mechanism as the paper names it (§3.1): the receiver's data copy, across NUMA nodes where the
# IRQs sit on another node (the non-aRFS steps), and its MTU-sized skb allocation per frame. On veth
# neither exists, so the sender/receiver gap measured here answers another question.
F04_PREMISE = ("the paper's receiver gap comes from a cross-NUMA data copy (IRQs on another node without aRFS) "
               "and the receiver allocating an skb per frame; on veth the receiver allocates no skb (it takes "
               "over the sender's) and receive processing runs on the application's CPU in one NUMA node")
F04_NEEDS = "a NIC whose driver allocates receive skbs, and a second NUMA node for the non-aRFS steps' IRQs"


def _arfs_premise(steering: str) -> str:
    """Why the aRFS step cannot be tested on this receive path ("" when it can)."""
    if steering == "napi-thread":
        return ("with threaded NAPI the receive processing already runs on the application's CPU, so RFS "
                "(the software stand-in for aRFS) has nothing to move")
    if steering == "none":
        return "with the kernel default veth delivers on the sender's CPU, where RFS cannot steer"
    return ""


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir, manifests: list[dict] | None = None) -> verdicts.Verdicts:
    """F01-F06, F08 and F25 from a single-flow campaign, judged by verdicts' one rule (F07 needs
    the Rx-buffer sweep: notebook 02)."""
    findings = verdicts.load_findings(reference_dir)
    steering = steering_of(manifests)
    no_arfs = _arfs_premise(steering)
    embedded = bool(manifests) and manifests[0]["testbed"]["kind"] == "embedded"
    present = set(tidy.config)
    judged: dict[str, verdicts.Judgement] = {}
    tpc = {c: verdicts.clean_values(tidy, "tpc_gbps", "both", config=c) for c in LADDER if c in present}
    if "all-opts" in tpc:
        judged["F01"] = verdicts.not_testable(
            f"all-opts tpc {pd.Series(tpc['all-opts']).mean():.1f} Gbit/s on veth (paper ~42 on 100G NICs)",
            "100G NICs: absolute values depend on the host")
    ladder = [c for c in ("no-opts", "tsogro", "tsogro+jumbo", "all-opts") if c in tpc]
    if no_arfs and "all-opts" in ladder:
        ladder.remove("all-opts")
    if len(ladder) >= 3:
        j = verdicts.ordered([(c, tpc[c], {"config": c}) for c in ladder], unit="Gbit/s")
        if no_arfs:
            j = verdicts.Judgement(j.verdict, f"{j.shows}; the aRFS step (→ all-opts) is not judged: {no_arfs} "
                                   f"(it needs {ARFS_NEEDS})", j.decide, j.points)
        judged["F02"] = j
    if {"tsogro", "tsogro+jumbo"} <= set(tpc):
        judged["F03"] = verdicts.direction(verdicts.difference(tpc["tsogro"], tpc["tsogro+jumbo"]), want="<",
                                           what="tpc tsogro → tsogro+jumbo", unit="Gbit/s",
                                           points=[{"config": "tsogro"}, {"config": "tsogro+jumbo"}], fmt=".2f")
    steps = [c for c in LADDER if c in present and len(_per_run(tidy, "cpu_util_pct", "receiver", c))]
    if steps:
        def busier(c):
            both = pd.concat([_per_run(tidy, "cpu_util_pct", "sender", c),
                              _per_run(tidy, "cpu_util_pct", "receiver", c)], axis=1, join="inner")
            d = verdicts.difference(both.iloc[:, 0], both.iloc[:, 1], paired=True)
            return verdicts.direction(d, want="<", what=f"{c} CPU sender → receiver", unit="%", fmt=".0f",
                                      points=[{"config": c}])
        counted = [c for c in steps if c in PAPER_LADDER]
        j = verdicts.combine([busier(c) for c in counted]) if counted else verdicts.Judgement(
            verdicts.INCONCLUSIVE, "none of the paper's ladder steps was measured", "the ladder's steps")
        shown = [busier(c).shows for c in steps if c not in PAPER_LADDER]
        if shown:  # measured, but not a step of the paper's ladder (Fig. 3b): shown, not counted
            j = verdicts.Judgement(j.verdict, j.shows + "; not a ladder step, not counted: " + "; ".join(shown),
                                   j.decide, j.points, j.holds)
        judged["F04"] = verdicts.not_testable(f"{F04_PREMISE}; measured: {j.shows}", F04_NEEDS) if embedded else j
    metric = metrics.breakdown_metric(tidy)
    cats = [c for c in CATEGORIES if not (metric == "breakdown_pct" and c == "etc")]
    for fid, cfg, want in (("F05", "all-opts", "data_copy"), ("F06", "no-opts", "tcp/ip")):
        parts = []
        for side in ("sender", "receiver"):
            shares = verdicts.shares_by_run(tidy, metric, side, cats, config=cfg)
            if shares:
                parts.append(verdicts.largest(shares, want, what=f"{cfg} {side}", points=[{"config": cfg}]))
        if len(parts) == 2:
            j = verdicts.combine(parts)
            note = (" (samples where IRQs come back on attributed through the call chain)"
                    if metric == "breakdown_attributed_pct" else " (leaf-only samples, etc excluded)")
            judged[fid] = verdicts.Judgement(j.verdict, j.shows + note, j.decide, j.points)
    judged["F08"] = verdicts.not_testable(NO_RINGS if embedded or not manifests
                                          else "the ladder does not vary the rx ring (notebook 02's rx_rings does)",
                                          "a NIC with adjustable rings")
    if no_arfs:
        judged["F25"] = verdicts.not_testable(f"receive path {steering}: {no_arfs}", ARFS_NEEDS)
    elif {"tsogro+jumbo", "all-opts"} <= present:
        per_gbit = {c: (_per_run(tidy, "cpu_util_pct", "receiver", c)
                        / _per_run(tidy, "throughput_gbps", "both", c)).dropna() for c in ("tsogro+jumbo", "all-opts")}
        judged["F25"] = verdicts.direction(
            verdicts.difference(per_gbit["tsogro+jumbo"], per_gbit["all-opts"]), want=">",
            what="receiver CPU % per Gbit/s, tsogro+jumbo → all-opts (aRFS)", fmt=".2f",
            points=[{"config": "tsogro+jumbo"}, {"config": "all-opts"}])
    return verdicts.collect(findings, judged)
