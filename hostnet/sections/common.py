"""Pieces every paper-section module (single_flow, rx_buffer, ...) shares: loading a campaign
without flagged runs, describing its testbed and quality, saving figures, report metadata."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..analysis import metrics, verdicts
from ..charts import plots
from ..charts.plots import panel  # noqa: F401  (how notebooks lay charts out: common.panel(a, b))
from .. import project, store
from . import section
from .tables import table_view, verdict_view  # noqa: F401  (what notebooks show: common.table_view(df))
from ..testbed.base import rehearsal_label
from ..analysis import flags
from ..analysis.attribution import ATTRIBUTION_RULE
from ..taxonomy import load as load_taxonomy, series_for

# The paper's reference numbers and findings (what a live section judges its fresh campaign against),
# shipped in the package.
REFERENCE_DIR = project.reference_dir()


class NoCleanRun(FileNotFoundError):
    """Every successful run of the campaign was flagged (foreign load, a short window): the message
    says which, by which processes, at what load; `manifests` are the campaign's."""

    def __init__(self, message: str, manifests: list[dict]):
        super().__init__(message)
        self.manifests = manifests


def load(runs_dir, campaign: str, experiment: str, include_contaminated: bool = False
         ) -> tuple[pd.DataFrame, list[dict]]:
    """Tidy data of a campaign's successful runs, and every run's manifest.

    Runs flagged for foreign load (another workload used the machine during the window)
    are left out of the tidy data unless include_contaminated; run_quality() counts them. A
    rehearsal's campaign (every successful run flagged "rehearsal": emulated NICs) is kept whole:
    it has nothing else to show, its label says what it is, and judged() judges none of it. A campaign
    whose every point has enough unprofiled runs takes throughput and CPU from those (metrics.prefer_unprofiled);
    perf's cost where points have both kinds is kept for run_quality (metrics.perf_cost).
    Raises NoCleanRun (saying what happened) when every successful run was flagged.
    """
    tidy = store.load_tidy(runs_dir, campaign, experiment)
    manifests = store.load_manifests(runs_dir, campaign, experiment)
    if not include_contaminated and not rehearsal_of(manifests):
        dirty = {m["run_id"] for m in manifests if flags.flagged(m)}
        if not tidy.empty and tidy.run_id.isin(dirty).all():
            raise NoCleanRun(f"campaign {campaign} has no clean {experiment} run: {flag_report(manifests)}",
                             manifests)
        tidy = tidy[~tidy.run_id.isin(dirty)]
    if tidy.empty:
        raise FileNotFoundError(f"campaign {campaign} under {runs_dir} has no usable {experiment} run")
    if isinstance(manifests, store.Manifests):  # what run_quality reports of perf's own cost
        manifests.perf_cost = metrics.perf_cost_summary(metrics.perf_cost(tidy, manifests))
    return metrics.with_side_tpc(metrics.prefer_unprofiled(tidy, manifests), manifests), manifests


def _rehearsals(manifests: list[dict], runs=None) -> tuple[set[str], int]:
    """(the rehearsal reasons, the number of successful runs) among the manifests (of `runs` if given)."""
    ok = [m for m in manifests if m.get("status") == "ok" and (runs is None or m["run_id"] in runs)]
    return {shown(m["rehearsal"]) for m in ok if m.get("rehearsal")}, sum(1 for m in ok if not m.get("rehearsal"))


def rehearsal_of(manifests: list[dict]) -> str:
    """Why the campaign's runs are not measurements: the rehearsal testbed's reason, when every
    successful run came from one ("" otherwise)."""
    whys, measured = _rehearsals(manifests)
    return "; ".join(sorted(whys)) if whys and not measured else ""


def judged(verdict: pd.DataFrame, tidy: pd.DataFrame | None, manifests: list[dict], *,
           also: tuple = ()) -> pd.DataFrame:
    """The verdict table a notebook shows and reports: as the section judged it, or, when any run
    in `tidy` (None: any of the manifests' runs) is a rehearsal's (a rehearsal campaign, or
    include_contaminated), every verdict "rehearsal" (verdicts.as_rehearsal). also: more (tidy,
    manifests) pairs the table was judged from (a notebook's second campaign)."""
    whys: set[str] = set()
    for data, ms in ((tidy, manifests), *also):
        runs = set(data.run_id) if data is not None and "run_id" in data.columns else None
        whys |= _rehearsals(ms, runs)[0]
    return verdicts.as_rehearsal(verdict, "; ".join(sorted(whys))) if whys else verdict


def flag_detail(manifest: dict) -> str:
    """Why one run was flagged, with the load behind it ("" for a clean run): e.g. "foreign load
    142 % of a core on local (stress-ng 98 %, chrome 31 %)"."""
    why = flags.flagged(manifest)
    if why != "foreign load":
        return f"{why}: {manifest[flags.FLAGS[why]]}" if why else ""
    parts = []
    for machine, load in (manifest.get("load") or {}).items():
        if load.get("contaminated"):
            top = ", ".join(f"{comm} {pct:.0f} %" for comm, pct in load.get("top", [])[:3])
            parts.append(f"{load['foreign_cpu_pct']:.0f} % of a core on {machine}" + (f" ({top})" if top else ""))
    return "foreign load " + "; ".join(parts) if parts else "foreign load"


def flag_report(manifests: list[dict]) -> str:
    """What flagging did to a campaign, in one paragraph: how many runs, for what, by which
    processes and at what load (the busiest processes over all flagged runs, each at its peak)."""
    ok = [m for m in manifests if m.get("status") == "ok"]
    flagged = [m for m in ok if flags.flagged(m)]
    if not flagged:
        return f"no run was flagged ({len(ok)} successful runs)"
    short = sum(1 for m in flagged if flags.flagged(m) == "short window")
    foreign = [m for m in flagged if flags.flagged(m) == "foreign load"]
    text = f"{len(flagged)} of {len(ok)} successful runs flagged"
    if foreign:
        loads = [load["foreign_cpu_pct"] for m in foreign for load in (m.get("load") or {}).values()
                 if load.get("contaminated")]
        peak: dict[str, float] = {}
        for m in foreign:
            for load in (m.get("load") or {}).values():
                for comm, pct in load.get("top", []):
                    peak[comm] = max(peak.get(comm, 0.0), pct)
        busiest = ", ".join(f"{c} up to {p:.0f} %" for c, p in sorted(peak.items(), key=lambda kv: -kv[1])[:5])
        text += (f"; {len(foreign)} for foreign load: other processes used "
                 + (f"{min(loads):.0f}-{max(loads):.0f} % of a core" if loads else "more than the limit")
                 + f" during the window (limit {metrics.FOREIGN_LOAD_LIMIT_PCT:.0f} %)"
                 + (f"; busiest: {busiest}" if busiest else ""))
    if steal := [max(m["host_contention"].values()) for m in flagged if flags.flagged(m) == "host contention"]:
        text += (f"; {len(steal)} for host contention: the hypervisor stole {min(steal):.0f}-{max(steal):.0f} % "
                 f"of a side's cores (limit {metrics.STEAL_LIMIT_PCT:.0f} %)")
    if short:
        text += f"; {short} for a measurement window too short to use"
    if moved := sum(1 for m in flagged if flags.flagged(m) == "setting moved"):
        text += f"; {moved} for a host-wide setting that moved during the window"
    return text


def top_up_record(runs_dir, campaign: str) -> str:
    """What the last top-up of a live campaign did (sweep.json), or "" when none ran."""
    where = store.Campaign(runs_dir, campaign)
    rounds = where.plan().get("decisive_top_ups", []) if where.is_sweep() else []
    if not rounds:
        return ""
    last = rounds[-1]
    budget = last.get("budget", {})
    return (f"topped up: {last['runs']} more runs in {last['rounds']} rounds (budget {budget.get('runs')} runs, "
            f"{budget.get('minutes')} minutes); stopped: {last['stopped']}")


MANIFEST_TEXT_MAX = 200  # characters of a manifest's string a chart or a report shows


def shown(value, limit: int = MANIFEST_TEXT_MAX) -> str:
    """A manifest's value as text a chart or a report may show: control characters as spaces, at
    most `limit` characters (a received campaign's 5,000-character field once made a notebook's
    chart fail after 1 GB); the report escapes it for its format."""
    text = "".join(c if c.isprintable() else " " for c in str(value))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def testbed_label(manifests: list[dict]) -> str:
    m = manifests[0]
    kind = shown(m["testbed"]["kind"])
    kernel = shown(next(iter(m["versions"].values()))["kernel"])
    cpus = {r: shown(e["cpus"]) for r, e in m["testbed"]["endpoints"].items()}
    # runs recorded before the receive path was a testbed property used RPS
    steering = shown(m["testbed"].get("rx_steering", "rps" if kind == "embedded" else "nic"))
    versions = shown(breakdown_versions(manifests))
    # a rehearsal's campaign (a campaign mixing in such runs leaves them out, and its verdicts say so when
    # include_contaminated keeps them: judged())
    return f"{kind} testbed ({'veth + netns, ' if kind == 'embedded' else ''}kernel {kernel}, " \
           f"sender CPUs {cpus['sender']}, receiver CPUs {cpus['receiver']}, receive path {steering}" \
           f"{'; breakdowns ' + versions if versions else ''})" + rehearsal_label(rehearsal_of(manifests))


def breakdown_versions(manifests: list[dict]) -> str:
    """The attribution rule and taxonomy the campaign's breakdowns were derived under ('' when no
    run kept stacks), so no figure mixes versions silently: several are listed as "mixed", and one
    that is not the current is marked (`hostnet rederive CAMPAIGN` brings it up to date)."""
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
    """Counts for the quality line; runs whose manifest could not be read (store.Manifests) and
    runs whose stored table was changed (status damaged) count as failed, never as ok."""
    ok = [m for m in manifests if m["status"] == "ok"]
    unreadable = len(getattr(manifests, "unreadable", ()))
    damaged = sum(1 for m in manifests if m["status"] == store.DAMAGED) + unreadable
    return {"runs": len(manifests) + unreadable, "ok": len(ok), "failed": len(manifests) + unreadable - len(ok),
            "damaged": damaged,
            "contaminated": sum(1 for m in ok if m.get("contaminated")),
            "host_contention": sum(1 for m in ok if flags.flagged(m) == "host contention"),
            "short_window": sum(1 for m in ok if flags.flagged(m) == "short window"),
            "settings_moved": sum(1 for m in ok if flags.flagged(m) == "setting moved"),
            "unsteady": sum(1 for m in ok if m.get("unsteady")),
            # how long each point measured (its workload's duration; a campaign's own, not a profile's)
            "point_seconds": sorted({m["workload"]["duration_s"] for m in ok
                                     if isinstance(m.get("workload"), dict) and "duration_s" in m["workload"]}),
            "foreign_load_limit_pct": metrics.FOREIGN_LOAD_LIMIT_PCT, "steal_limit_pct": metrics.STEAL_LIMIT_PCT,
            # perf's cost to throughput over the points with unprofiled runs (load() measured it)
            "perf_cost": getattr(manifests, "perf_cost", {})}


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
