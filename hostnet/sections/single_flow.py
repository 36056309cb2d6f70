"""§3.1 single flow: the optimisation ladder, run live or replayed, and its figures.

The notebook 01-single-flow.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..analysis import metrics, verdicts
from ..analysis.findings import single_flow as rules
from ..measure import config as stackconfig
from ..charts import plots
from .. import store
from ..testbed.session import kind_of
from . import common
from ..testbed.capabilities import NO_RINGS
from ..measure.sweep import SweepSpec, declared, paced, run_configs
from ..measure.options import LiveOptions

EXPERIMENT = "single-flow"
LADDER = list(stackconfig.LADDER)


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
        "single-flow-tpc": plots.tpc_chart(tidy, order, ref, label, metrics.bottlenecks(tidy, manifests)),
        "single-flow-cpu": plots.cpu_chart(tidy, order, label),
        "single-flow-sender-breakdown": plots.breakdown_chart(tidy, order, "sender", "c", label,
                                                              metric=metrics.breakdown_metric(tidy)),
        "single-flow-receiver-breakdown": plots.breakdown_chart(tidy, order, "receiver", "d", label,
                                                                metric=metrics.breakdown_metric(tidy)),
    }


def table(tidy: pd.DataFrame, manifests: list[dict] | None = None) -> pd.DataFrame:
    """The ladder's table (metrics.ladder_table; each config's bottleneck side from the manifests'
    points) with the receiver's top three categories."""
    t = metrics.ladder_table(tidy, list(stackconfig.CONFIGS), metrics.bottlenecks(tidy, manifests or []))
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


@verdicts.under_accountings
def verdict_table(tidy: pd.DataFrame, reference_dir, manifests: list[dict] | None = None) -> verdicts.Verdicts:
    """F01-F06, F08 and F25 from a single-flow campaign, each by its rule in analysis/findings
    (F07 needs the Rx-buffer sweep: notebook 02)."""
    steering = steering_of(manifests)
    embedded = bool(manifests) and manifests[0]["testbed"]["kind"] == "embedded"
    tpc = rules.tpc_by_config(tidy, LADDER)
    no_rings = NO_RINGS if embedded or not manifests else "the ladder does not vary the rx ring (notebook 02's " \
                                                             "rx_rings does)"
    judged = {"F01": rules.f01(tpc), "F02": rules.f02(tpc, rules.arfs_premise(steering)), "F03": rules.f03(tpc),
              "F04": rules.f04(tidy, LADDER, embedded), "F05": rules.largest_share(tidy, "all-opts", "data_copy"),
              "F06": rules.largest_share(tidy, "no-opts", "tcp/ip"), "F08": rules.f08(no_rings),
              "F25": rules.f25(tidy, steering)}
    return verdicts.collect(verdicts.load_findings(reference_dir), judged)
