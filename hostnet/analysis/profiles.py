"""A perf profile a researcher brings -> the paper's CPU breakdown (`hostnet breakdown FILE`).

FILE is any of perf's formats, read into a Profile by profile_files.py. Stacks give the leaf and
the call-chain-attributed breakdown (attribution.py); a report gives the leaf breakdown only (perf
prunes its call graphs). Here: the breakdown per CPU set (analyse), its table, text and JSON, and
the breakdown next to the paper's Fig. 3.
"""
from __future__ import annotations

import json
import platform
import re
from collections import Counter
from pathlib import Path

import pandas as pd

from . import metrics, attribution
from .profile_files import Perf, Profile, read_profile, unit_label
from .. import project, taxonomy as taxonomies
from ..parsers import ParseError
from ..parsers.perf_default import NO_CPU
from ..parsers.perf_report import SymbolSamples
from ..taxonomy import UNCLASSIFIED

# --- the breakdown ---------------------------------------------------------------------------------

def series_of(profile: Profile, series: str | None = None) -> tuple[str, str]:
    """(taxonomy series, where it came from): asked for, else the recorded kernel's, else the
    running kernel's (said, since the profile may come from another machine)."""
    if series:
        return series, "as asked"
    if profile.release:
        return taxonomies.series_for(profile.release), f"from the file's header (kernel {profile.release})"
    running = platform.release()  # this machine's kernel: the profile names none
    return taxonomies.series_for(running), f"from the running kernel ({running}): the file records no kernel"


def cpu_sets(profile: Profile, asked: list[list[int]] | None) -> list[list[int]]:
    """The CPU sets to break down: those asked for, else each CPU alone and then all together."""
    cpus = profile.cpus()
    if not profile.has_cpu:
        if asked:
            raise ValueError(f"{profile.source} has no CPU field ({profile.format}): CPUs cannot be selected; "
                             "give perf script text, the perf.data, or perf report --sort cpu,...")
        return [[NO_CPU]]
    if asked:
        missing = sorted({c for s in asked for c in s} - set(cpus))
        if missing:
            raise ValueError(f"{profile.source} has no samples on CPU {', '.join(map(str, missing))} "
                             f"(it has {', '.join(map(str, cpus))})")
        return asked
    return [[c] for c in cpus] + ([cpus] if len(cpus) > 1 else [])


def workload_comms(profile: Profile, comms: list[str] | None, kthreads: str | None) -> set[str] | None:
    """The commands whose samples are the workload's: those named and the kernel threads that
    serve them (hostnet's kernel-thread pattern, plus `kthreads`); every command when none is
    named. None: the profile names no commands, so none can be left out."""
    if not profile.has_comm:
        if comms:
            raise ValueError(f"{profile.source} has no Command column ({profile.format}): commands cannot be selected")
        return None
    every = profile.comms()
    if not comms:
        return every
    extra = re.compile(kthreads) if kthreads else None
    return {c for c in every if c in comms or metrics.KERNEL_THREAD_COMM.match(c) or (extra and extra.match(c))}


def breakdown(profile: Profile, cpus: list[int], tax, comms: set[str] | None, *, embedded: bool = False) -> dict:
    """One CPU set's breakdown: leaf shares (and call-chain-attributed ones where the profile has
    stacks), busy/idle/foreign samples, the unclassified share and its top symbols."""
    # a profile without commands (perf report without --sort comm) has every row "ours"
    ours = comms if comms is not None else {""}
    rows = [r if r.comm is not None else SymbolSamples(r.cpu, "", r.symbol, r.kernel, r.samples)
            for r in profile.rows]
    leaf = metrics.breakdown(rows, cpus, tax, ours)
    out = {"cpus": cpus, "leaf_pct": leaf["pct"], "busy_samples": leaf["busy_samples"],
           "idle_samples": leaf["idle_samples"], "foreign_samples": leaf["foreign_samples"],
           "attributed_pct": None, "rule": None}
    busy = leaf["busy_samples"]
    unclassified: Counter = Counter()
    for r in rows:
        if r.cpu in cpus and tax.classify(r.symbol, r.kernel) == UNCLASSIFIED and metrics.is_ours(r.comm, ours) \
                and r.comm not in metrics.PROFILER_COMMS:
            unclassified[r.symbol] += r.samples
    top = sorted(unclassified.items(), key=lambda kv: (-kv[1], kv[0]))[:10]  # ties by name: the same in every format
    out["unclassified_top"] = [(s, 100.0 * n / busy) for s, n in top] if busy else []
    if profile.stacks is not None:
        att = attribution.breakdown_from_stacks(profile.stacks.items(), cpus, tax, ours, embedded=embedded)
        out["attributed_pct"], out["rule"] = att["pct"], att["rule"]
    return out


def table(results: list[dict]) -> pd.DataFrame:
    """Long form: one row per (CPU set, category) with the leaf and attributed shares."""
    rows = []
    for r in results:
        label = cpu_label(r["cpus"])
        for cat in metrics.BREAKDOWN_ORDER:
            rows.append({"cpus": label, "category": cat, "leaf_pct": r["leaf_pct"][cat],
                         "attributed_pct": None if r["attributed_pct"] is None else r["attributed_pct"][cat]})
    return pd.DataFrame(rows)


def cpu_label(cpus: list[int]) -> str:
    return "all" if cpus == [NO_CPU] else ",".join(map(str, cpus))


def run_manifest(path) -> dict | None:
    """The manifest of the run a profile is stored in (RUN/raw/MACHINE.*); None for any other file."""
    where = Path(path).resolve().parent
    manifest = where.parent / "manifest.json"
    return json.loads(manifest.read_text()) if where.name == "raw" and manifest.is_file() else None


def run_cpu_roles(path: Path) -> dict[int, str] | None:
    """CPU -> "sender"/"receiver" for a profile stored in a run as RUN/raw/MACHINE.*, from the run's
    manifest (side_cpus: per side, per machine); None when the file is not in a run."""
    manifest = run_manifest(path)
    if manifest is None:
        return None
    machine = Path(path).name.split(".")[0]
    sides = manifest.get("side_cpus", {})
    return {c: side for side, per_machine in sides.items() for c in per_machine.get(machine, [])}


def format_table(profile: Profile, results: list[dict], series: str, series_from: str,
                 roles: dict[int, str] | None = None) -> str:
    """The text `hostnet breakdown` prints: what was read, the CPUs' roles where a run's manifest
    gives them, then a column pair per CPU set."""
    event = f", event {profile.event}" if profile.event else ""
    head = [f"{project.shown(profile.source)}: {profile.format}{event}",
            f"taxonomy {series} ({series_from})"]
    if roles is None:
        head.append("CPU roles unknown (not a run's RUN/raw/MACHINE file): which CPU sent and which received is "
                    "yours to say")
    else:
        head.append("CPU roles from the run's manifest.json: " + (", ".join(
            f"CPU {c} {side}" for c, side in sorted(roles.items())) or "none recorded"))
    head.append(f"weighted {profile.weight}")
    head += [f"note: {n}" for n in profile.notes]
    cols = []
    for r in results:
        cols.append((f"CPU {cpu_label(r['cpus'])} leaf", "leaf_pct", r))
        if r["attributed_pct"] is not None:
            cols.append((f"CPU {cpu_label(r['cpus'])} chain", "attributed_pct", r))
    width = max([13, *(len(c[0]) for c in cols)])  # a long label ("CPU 0,1,2,3 chain") keeps two spaces before it
    lines = ["category".ljust(14) + "".join(c[0].rjust(width + 2) for c in cols)]
    for cat in metrics.BREAKDOWN_ORDER:
        lines.append(cat.ljust(14) + "".join(f"{r[key][cat]:{width + 1}.2f}%" for _, key, r in cols))
    unit = unit_label(profile)
    lines.append("busy".ljust(14) + "".join(f"{_num(r['busy_samples']):>{width + 2}}" for _, _, r in cols)
                 + f"   ({unit}; idle and foreign below)")
    lines.append("idle".ljust(14) + "".join(f"{_num(r['idle_samples']):>{width + 2}}" for _, _, r in cols))
    lines.append("foreign".ljust(14) + "".join(f"{_num(r['foreign_samples']):>{width + 2}}" for _, _, r in cols))
    tail = []
    for r in results:
        if r["unclassified_top"]:
            tail.append(f"CPU {cpu_label(r['cpus'])} unclassified (leaf): "
                        + ", ".join(f"{s} {p:.2f}%" for s, p in r["unclassified_top"]))
    rule = next((r["rule"] for r in results if r["rule"]), None)
    if rule:
        tail.append(f"chain = call-chain attribution, rule {rule}")
    return "\n".join(head + lines + tail)


def _num(v) -> str:
    return f"{v:.2f}" if isinstance(v, float) else str(v)


# --- next to the paper's Fig. 3 --------------------------------------------------------------------

PAPER_FIG3 = "single_flow_breakdown_readme_sample.csv"  # in the package's reference data


def next_to_paper(results: list[dict], config: str = "all-opts", paper_csv=None) -> pd.DataFrame:
    """This profile's shares per CPU set (attributed where stacks exist, else leaf) next to the
    paper's Fig. 3(c)/(d) sender and receiver breakdown for one config (the artifact's numbers;
    its rows sum to ~95 %: it drops unmapped symbols)."""
    paper = pd.read_csv(paper_csv or project.packaged("reference") / PAPER_FIG3, comment="#")
    paper = paper[paper.config == config].pivot(index="category", columns="side", values="pct")
    out = pd.DataFrame(index=pd.Index(metrics.BREAKDOWN_ORDER, name="category"))
    for r in results:
        shares = r["attributed_pct"] or r["leaf_pct"]
        kind = "chain" if r["attributed_pct"] else "leaf"
        out[f"this profile, CPU {cpu_label(r['cpus'])} ({kind}) %"] = [shares[c] for c in out.index]
    for side in ("sender", "receiver"):
        out[f"paper {config} {side} %"] = [paper[side].get(c, float("nan")) if side in paper else float("nan")
                                           for c in out.index]
    return out.reset_index()


def analyse(path, *, cpus: list[list[int]] | None = None, comms: list[str] | None = None,
            kthreads: str | None = None, series: str | None = None, embedded: bool = False,
            perf: Perf | None = None, event: str | None = None) -> tuple[Profile, list[dict], str, str]:
    """Read a profile and break it down per CPU set: (profile, results, series, where from)."""
    profile = read_profile(path, perf, event)
    recorded = run_manifest(path)
    if recorded and not series and recorded.get("taxonomy"):
        # a stored run's profile: the kernel series the run recorded (today's table of it) and the
        # testbed it ran on, whatever kernel this machine runs
        kernel = next((v.get("kernel") for v in recorded.get("versions", {}).values() if v.get("kernel")), "?")
        series = recorded["taxonomy"].split("/")[0]  # "linux-6/7": series / version of its table
        series_from = f"from the run's manifest (kernel {kernel}, recorded with {recorded['taxonomy']})"
        embedded = embedded or recorded.get("testbed", {}).get("kind") == "embedded"
    else:
        series, series_from = series_of(profile, series)
    try:
        tax = taxonomies.load(series)
    except ValueError as exc:  # e.g. a linux-3 profile: say which file, where the series came from, and the way out
        known = ", ".join(sorted(p.stem for p in Path(taxonomies.__file__).parent.glob("linux-*.tsv")))
        raise ParseError(str(path), f"{exc} (series {series_from}); break it down with one hostnet has: "
                                    f"--series {known.replace(', ', ' or --series ')}") from exc
    ours = workload_comms(profile, comms, kthreads)
    results = [breakdown(profile, s, tax, ours, embedded=embedded) for s in cpu_sets(profile, cpus)]
    return profile, results, tax.version, series_from


def to_json(profile: Profile, results: list[dict], series: str, series_from: str) -> dict:
    return {"source": profile.source, "format": profile.format, "event": profile.event, "unit": profile.unit,
            "weight": profile.weight,
            "kernel_release": profile.release, "taxonomy": series, "taxonomy_from": series_from,
            "notes": profile.notes, "breakdowns": [{**r, "cpus": cpu_label(r["cpus"])} for r in results]}
