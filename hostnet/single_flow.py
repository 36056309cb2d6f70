"""§3.1 single flow: the optimisation ladder, run live or replayed, and its figures.

The notebook 01-single-flow.ipynb is a thin caller of these functions.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from . import analysis, config as stackconfig, plots, store, testbed, verdicts
from .sweep import run_configs

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
    if mode == "replay":
        return campaign or store.latest_campaign(runs_dir, EXPERIMENT)
    if mode != "run":
        raise ValueError(f"mode must be 'replay' or 'run', not {mode!r}")
    for c in configs:
        stackconfig.get_config(c)
    campaign = campaign or store.new_campaign_id(EXPERIMENT, "embedded")
    kwargs = dict(duration_s=duration, warmup_s=warmup, repetitions=repetitions, runs_dir=runs_dir,
                  campaign=campaign, experiment=EXPERIMENT, perf_freq_hz=perf_freq_hz)
    if testbed_name:
        tb = testbed.attach(testbed_name)
        try:
            run_configs(tb, list(configs), **kwargs)
        finally:  # the testbed stays up; the settings this campaign changed do not
            tb.journal.restore()
    else:
        with testbed.embedded(f"nb{os.getpid() % 10**6}") as tb:
            run_configs(tb, list(configs), **kwargs)
    return campaign


def load(runs_dir, campaign: str, include_contaminated: bool = False) -> tuple[pd.DataFrame, list[dict]]:
    """Tidy data of a campaign's successful runs, and every run's manifest.

    Runs flagged for foreign load (another workload used the machine during the window)
    are left out of the tidy data unless include_contaminated; run_quality() counts them.
    """
    tidy = store.load_tidy(runs_dir, campaign, EXPERIMENT)
    manifests = store.load_manifests(runs_dir, campaign, EXPERIMENT)
    if not include_contaminated:
        dirty = {m["run_id"] for m in manifests if m.get("contaminated")}
        tidy = tidy[~tidy.run_id.isin(dirty)]
    if tidy.empty:
        raise FileNotFoundError(f"campaign {campaign} under {runs_dir} has no usable single-flow run")
    return tidy, manifests


def testbed_label(manifests: list[dict]) -> str:
    m = manifests[0]
    kind = m["testbed"]["kind"]
    kernel = next(iter(m["versions"].values()))["kernel"]
    cpus = {r: e["cpus"] for r, e in m["testbed"]["endpoints"].items()}
    return f"{kind} testbed ({'veth + netns, ' if kind == 'embedded' else ''}kernel {kernel}, " \
           f"sender CPUs {cpus['sender']}, receiver CPUs {cpus['receiver']})"


def run_quality(manifests: list[dict]) -> dict:
    ok = [m for m in manifests if m["status"] == "ok"]
    return {"runs": len(manifests), "ok": len(ok), "failed": len(manifests) - len(ok),
            "contaminated": sum(1 for m in ok if m.get("contaminated")),
            "foreign_load_limit_pct": analysis.FOREIGN_LOAD_LIMIT_PCT}


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
        "single-flow-sender-breakdown": plots.breakdown_chart(tidy, order, "sender", "c", label),
        "single-flow-receiver-breakdown": plots.breakdown_chart(tidy, order, "receiver", "d", label),
    }


def save_figures(chart_map: dict, figures_dir) -> list[Path]:
    return [p for stem, ch in chart_map.items() for p in plots.save(ch, Path(figures_dir) / stem)]


def table(tidy: pd.DataFrame) -> pd.DataFrame:
    t = analysis.ladder_table(tidy, list(stackconfig.CONFIGS))
    tops = []
    for cfg in t.config:
        tops.append(", ".join(f"{c} {p:.0f}%" for c, p in analysis.top_categories(tidy, cfg, "receiver", 3)))
    t["receiver_top3"] = tops
    return t


def verdict_table(tidy: pd.DataFrame, reference_dir) -> pd.DataFrame:
    return verdicts.single_flow(tidy, verdicts.load_findings(reference_dir))


def write_report_meta(figures_dir, *, campaign: str, label: str, quality: dict,
                      verdict: pd.DataFrame, summary: pd.DataFrame, figure_stems) -> Path:
    """What figures/index.html shows for this notebook (report.py reads it)."""
    path = Path(figures_dir) / "01-single-flow.meta.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"notebook": "01-single-flow.ipynb", "title": "§3.1 Single flow: the optimisation ladder",
            "campaign": campaign, "testbed": label, "quality": quality,
            "figures": list(figure_stems), "verdicts": verdict.to_dict(orient="records"),
            "summary": json.loads(summary.to_json(orient="records"))}
    path.write_text(json.dumps(meta, indent=2))
    return path
