"""§3.1 single flow: the optimisation ladder, run live or replayed, and its figures.

The notebook 01-single-flow.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import analysis, config as stackconfig, plots, store, testbed, verdicts
from . import common
from ..sweep import run_configs

EXPERIMENT = "single-flow"
LADDER = list(stackconfig.LADDER)


def collect(mode: str, *, runs_dir, campaign: str = "", configs=LADDER, duration: int = 5,
            warmup: int = 2, repetitions: int = 3, perf_freq_hz: int = 999,
            testbed_name: str = "") -> str:
    """Return the campaign to analyse: replay an existing one, or run a new one live.

    mode "replay": `campaign` (or the newest single-flow campaign under runs_dir).
    mode "run": a fresh embedded testbed (or `testbed_name`, already up), every config x
    repetition in shuffled order, torn down afterwards.
    """
    replay = common.replay_or_newest(mode, campaign, runs_dir, EXPERIMENT)
    if replay:
        return replay
    for c in configs:
        stackconfig.get_config(c)
    campaign = campaign or store.new_campaign_id(EXPERIMENT, "embedded")
    kwargs = dict(duration_s=duration, warmup_s=warmup, repetitions=repetitions, runs_dir=runs_dir,
                  campaign=campaign, experiment=EXPERIMENT, perf_freq_hz=perf_freq_hz)
    with testbed.using(testbed_name) as tb:
        run_configs(tb, list(configs), **kwargs)
    return campaign


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    return common.load(runs_dir, campaign, EXPERIMENT, include_contaminated)




def relabel(tidy: pd.DataFrame, manifests: list[dict]) -> tuple[pd.DataFrame, list[str]]:
    """Show configs as the testbed ran them (on veth, 'arfs' is RFS and the label says so)."""
    labels = {m["config"]["name"]: m.get("config_label", m["config"]["name"]) for m in manifests}
    out = tidy.copy()
    out["config"] = out["config"].map(lambda c: labels.get(c, c))
    return out, [labels.get(c, c) for c in stackconfig.CONFIGS]


def charts(tidy: pd.DataFrame, reference_dir, label: str, manifests: list[dict]) -> dict:
    ref = pd.read_csv(Path(reference_dir) / "single_flow_readme_sample.csv", comment="#")
    tidy, order = relabel(tidy, manifests)
    ref, _ = relabel(ref, manifests)
    label = label.replace(" (", "\n(", 1)
    return {
        "single-flow-tpc": plots.tpc_chart(tidy, order, ref, label),
        "single-flow-cpu": plots.cpu_chart(tidy, order, label),
        "single-flow-sender-breakdown": plots.breakdown_chart(tidy, order, "sender", "c", label,
                                                              metric=analysis.breakdown_metric(tidy)),
        "single-flow-receiver-breakdown": plots.breakdown_chart(tidy, order, "receiver", "d", label,
                                                                metric=analysis.breakdown_metric(tidy)),
    }


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    t = analysis.ladder_table(tidy, list(stackconfig.CONFIGS))
    tops = []
    for cfg in t.config:
        tops.append(", ".join(f"{c} {p:.0f}%" for c, p in analysis.top_categories(tidy, cfg, "receiver", 3)))
    t["receiver_top3"] = tops
    return t


def verdict_table(tidy: pd.DataFrame, reference_dir) -> pd.DataFrame:
    return verdicts.single_flow(tidy, verdicts.load_findings(reference_dir))
