"""Pieces every paper-section module (single_flow, rx_buffer, ...) shares: loading a campaign
without flagged runs, describing its testbed and quality, saving figures, report metadata."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .. import analysis, plots, project, store
from . import section

# The paper's reference numbers and findings (what a live section judges its fresh campaign against),
# shipped in the package.
REFERENCE_DIR = project.reference_dir()


def load(runs_dir, campaign: str, experiment: str, include_contaminated: bool = False
         ) -> tuple[pd.DataFrame, list[dict]]:
    """Tidy data of a campaign's successful runs, and every run's manifest.

    Runs flagged for foreign load (another workload used the machine during the window)
    are left out of the tidy data unless include_contaminated; run_quality() counts them.
    """
    tidy = store.load_tidy(runs_dir, campaign, experiment)
    manifests = store.load_manifests(runs_dir, campaign, experiment)
    if not include_contaminated:
        dirty = {m["run_id"] for m in manifests if store.flagged(m)}
        tidy = tidy[~tidy.run_id.isin(dirty)]
    if tidy.empty:
        raise FileNotFoundError(f"campaign {campaign} under {runs_dir} has no usable {experiment} run")
    return analysis.with_side_tpc(tidy, manifests), manifests


def testbed_label(manifests: list[dict]) -> str:
    m = manifests[0]
    kind = m["testbed"]["kind"]
    kernel = next(iter(m["versions"].values()))["kernel"]
    cpus = {r: e["cpus"] for r, e in m["testbed"]["endpoints"].items()}
    # runs recorded before the receive path was a testbed property used RPS
    steering = m["testbed"].get("rx_steering", "rps" if kind == "embedded" else "nic")
    versions = breakdown_versions(manifests)
    return f"{kind} testbed ({'veth + netns, ' if kind == 'embedded' else ''}kernel {kernel}, " \
           f"sender CPUs {cpus['sender']}, receiver CPUs {cpus['receiver']}, receive path {steering}" \
           f"{'; breakdowns ' + versions if versions else ''})"


def breakdown_versions(manifests: list[dict]) -> str:
    """The attribution rule and taxonomy the campaign's breakdowns were derived under ('' when no
    run kept stacks), so no figure mixes versions silently: several are listed as "mixed", and one
    that is not the current is marked (`hostnet rederive CAMPAIGN` brings it up to date)."""
    from ..attribution import ATTRIBUTION_RULE
    from ..taxonomy import load as load_taxonomy, series_for
    seen, stale = {}, False
    for m in manifests:
        if m.get("status") != "ok" or not m.get("attribution_rule"):
            continue
        key = f"{m['attribution_rule']}, taxonomy {m.get('taxonomy', '?')}"
        seen[key] = True
        kernel = next(iter(m["versions"].values()))["kernel"]
        current = (ATTRIBUTION_RULE, load_taxonomy(series_for(kernel)).version)
        stale |= (m["attribution_rule"], m.get("taxonomy")) != current
    if not seen:
        return ""
    text = ("mixed: " if len(seen) > 1 else "") + " / ".join(seen)
    return text + (" (not the current rule or taxonomy: hostnet rederive)" if stale else "")


def run_quality(manifests: list[dict]) -> dict:
    ok = [m for m in manifests if m["status"] == "ok"]
    return {"runs": len(manifests), "ok": len(ok), "failed": len(manifests) - len(ok),
            "contaminated": sum(1 for m in ok if m.get("contaminated")),
            "short_window": sum(1 for m in ok if store.flagged(m) == "short window"),
            "unsteady": sum(1 for m in ok if m.get("unsteady")),
            "foreign_load_limit_pct": analysis.FOREIGN_LOAD_LIMIT_PCT}


def save_figures(chart_map: dict, figures_dir) -> list[Path]:
    return [p for stem, ch in chart_map.items() for p in plots.save(ch, Path(figures_dir) / stem)]


def write_report_meta(figures_dir, notebook: str, *, campaign: str, label: str, quality: dict,
                      verdict: pd.DataFrame, summary: pd.DataFrame, figure_stems) -> Path:
    """What figures/index.html shows for a notebook (report.py reads it); the title is the
    notebook's in the section registry."""
    title = section(notebook).title
    path = Path(figures_dir) / f"{Path(notebook).stem}.meta.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"notebook": notebook, "title": title, "campaign": campaign, "testbed": label, "quality": quality,
            "figures": list(figure_stems), "verdicts": verdict.to_dict(orient="records"),
            "summary": json.loads(summary.to_json(orient="records"))}
    path.write_text(json.dumps(meta, indent=2))
    return path


def html_table(df: pd.DataFrame):
    """A table shown whole (no column truncation) and byte-for-byte the same on every replay (a
    Styler's repr carries a memory address and a random id, which nbval would flag)."""
    from IPython.display import HTML
    return HTML(df.to_html(index=False))


def is_replay(mode: str, campaign: str) -> bool:
    """True for mode "replay" (which needs the campaign to read), False for "run"; anything else is an error."""
    if mode == "replay":
        if not campaign:
            raise ValueError("replay needs the campaign to read")
        return True
    if mode != "run":
        raise ValueError(f"mode must be 'replay' or 'run', not {mode!r}")
    return False


def replay_or_newest(mode: str, campaign: str, runs_dir, experiment: str) -> str:
    """The campaign to replay (the newest of the experiment when none is named), or "" for mode "run"."""
    if mode == "replay":
        return campaign or store.latest_campaign(runs_dir, experiment)
    is_replay(mode, campaign)  # refuses any other mode
    return ""
