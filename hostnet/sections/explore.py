"""What notebooks/00-explore.ipynb shows: stored campaigns and runs, points compared side by side,
CPU categories per point, a run's flame graph. Pure functions over run directories; the notebook
only wires them to widgets (and shows their static output when widgets are not rendered)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .. import store
from ..analysis.metrics import BREAKDOWN_ORDER, breakdown_metric, summarize
from ..charts.explore import categories_chart  # noqa: F401 (the notebook's explore.categories_chart)
from ..charts.flamegraph import flamegraph_html, icicle_chart, icicle_rects, stack_tree
from ..analysis import flags, profiles
from ..analysis.profiles import format_table, next_to_paper  # noqa: F401 (notebook 00's brought profile)
from ..charts.profiles import next_to_paper_chart  # noqa: F401 (notebook 00's brought profile)
from ..hosts import LocalHost
from ..parsers.perf_script import parse_folded
from ..probes.perf import PerfOnHost

if TYPE_CHECKING:
    from altair import Chart

_POINT_SKIP = ("id", "config")


def point_label(manifest: dict) -> str:
    """'tsogro' or 'tsogro, rx_buffer_kb=1600': the config as run plus the swept parameters."""
    extra = {k: v for k, v in (manifest.get("point") or {}).items() if k not in _POINT_SKIP}
    # runs that apply no stack config (e.g. the time-budget microbenchmarks) are named by experiment
    # the configuration's own name, as the tables and charts give it (single_flow.stand_ins says what it ran as)
    base = (manifest.get("config") or {}).get("name") or manifest.get("config_label") or manifest.get("experiment", "?")
    return ", ".join([base, *(f"{k}={v}" for k, v in sorted(extra.items()))])


def natural_key(label: str) -> list:
    """'rx_buffer_kb=200' before 'rx_buffer_kb=1600': numbers compare as numbers."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(label))]


def campaigns(runs_dir) -> pd.DataFrame:
    """One row per stored campaign: experiments, run counts, and what else it holds."""
    rows = []
    for cdir in sorted(p for p in Path(runs_dir).iterdir() if p.is_dir()):
        ms = store.load_manifests(runs_dir, cdir.name)
        rows.append({"campaign": cdir.name,
                     "experiments": ", ".join(sorted({m.get("experiment", "?") for m in ms})) or "–",
                     "runs": len(ms), "ok": sum(m["status"] == "ok" for m in ms),
                     "flagged": sum(bool(flags.flagged(m)) for m in ms),
                     "points": len({point_label(m) for m in ms}),
                     "notebook": ", ".join(sorted(p.name for p in cdir.glob("*.ipynb"))) or "–",
                     "capability check": store.Campaign.at(cdir).has_capabilities()})
    return pd.DataFrame(rows)


def runs(runs_dir, campaign: str) -> pd.DataFrame:
    """One row per run of a campaign, with its point, status and headline numbers."""
    rows = []
    for run in store.list_runs(runs_dir, campaign):
        m = store.load_manifest(run)
        row = {"run_id": m["run_id"], "point": point_label(m), "repetition": m.get("repetition"),
               "status": m["status"], "flagged": bool(flags.flagged(m)),
               "stacks": has_stacks(run)}
        if (run / "tidy.csv").exists():
            t = store.read_tidy(run)
            for metric in ("throughput_gbps", "tpc_gbps"):
                v = t[(t.metric == metric) & (t.side == "both")].value
                row[metric] = float(v.iloc[0]) if len(v) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def tidy_by_point(runs_dir, campaign: str, run_ids=None, include_flagged: bool = False) -> pd.DataFrame:
    """The campaign's tidy data with a `point` column; optionally only some runs."""
    labels, flagged = {}, set()
    for m in store.load_manifests(runs_dir, campaign):
        labels[m["run_id"]] = point_label(m)
        if flags.flagged(m):
            flagged.add(m["run_id"])
    tidy = store.load_tidy(runs_dir, campaign)
    if run_ids:
        tidy = tidy[tidy.run_id.isin(list(run_ids))]
    if not include_flagged:
        tidy = tidy[~tidy.run_id.isin(flagged)]
    return tidy.assign(point=tidy.run_id.map(labels))


def compare_points(tidy: pd.DataFrame) -> pd.DataFrame:
    """Per point: medians of throughput, throughput per core and each side's CPU, and the run count."""
    s = summarize(tidy, by=("point", "side", "metric", "category"))
    rows = []
    for point in sorted(set(tidy.point), key=natural_key):
        p = s[s.point == point]

        def med(metric, side, p=p):
            v = p[(p.metric == metric) & (p.side == side)]["median"]
            return round(float(v.iloc[0]), 2) if len(v) else float("nan")
        rows.append({"point": point, "throughput_gbps": med("throughput_gbps", "both"),
                     "tpc_gbps": med("tpc_gbps", "both"), "sender_cpu_pct": med("cpu_util_pct", "sender"),
                     "receiver_cpu_pct": med("cpu_util_pct", "receiver"),
                     "runs": int(p[(p.metric == "tpc_gbps") & (p.side == "both")]["n"].sum())})
    return pd.DataFrame(rows)


def categories(tidy: pd.DataFrame, side: str) -> pd.DataFrame:
    """Per point: median share of the side's busy CPU by category (the attributed breakdown where kept)."""
    if tidy.empty:
        return pd.DataFrame(columns=["point", "category", "pct"])
    metric = breakdown_metric(tidy)
    s = summarize(tidy[(tidy.metric == metric) & (tidy.side == side)], by=("point", "category"))
    out = s.rename(columns={"median": "pct"})[["point", "category", "pct"]]
    out["pct"] = out.pct.round(1)
    points = {p: i for i, p in enumerate(sorted(set(out.point), key=natural_key))}
    rank = {k: i for i, k in enumerate(BREAKDOWN_ORDER)}
    return out.sort_values(["point", "category"], key=lambda c: c.map(points if c.name == "point" else rank)
                           ).reset_index(drop=True)


def side_stacks(run: Path, side: str = "receiver") -> tuple[list, list[int], dict]:
    """One side's folded perf samples in a run directory, its CPUs and the run's manifest."""
    run = Path(run)
    m = store.load_manifest(run)
    machines = m["side_cpus"][side]  # {machine: [cpus]}: CPU numbers only mean something per machine
    cpus = sorted({c for cpu_set in machines.values() for c in cpu_set})
    folded = {machine: f"{machine}.perf_folded.txt" for machine in machines}
    texts = store.raw_texts(run, folded.values())  # from raw/ or the run's archive
    if not texts:
        raise FileNotFoundError(f"{run} has no folded stacks (recorded before hostnet kept them)")
    samples = [(smp, n) for machine, name in folded.items() if name in texts
               for smp, n in parse_folded(texts[name], str(run / "raw" / name)) if smp.cpu in machines[machine]]
    return samples, cpus, m


def has_stacks(run: Path) -> bool:
    return any(name.endswith(".perf_folded.txt") for name in store.raw_names(run))


def flamegraph(run: Path, side: str = "receiver") -> Chart:
    """An icicle chart of one side's folded perf stacks in a run directory (a PNG in notebooks)."""
    samples, cpus, m = side_stacks(run, side)
    return icicle_chart(icicle_rects(samples, set(cpus)), f"{point_label(m)}: {side} CPUs {cpus}",
                        "perf cpu-clock samples; width = share of the side's samples")


def flamegraph_page(run: Path, side: str = "receiver") -> str:
    """The same stacks as an interactive flame graph page (search, zoom) that opens offline."""
    samples, cpus, m = side_stacks(run, side)
    perf = (m.get("probes") or {}).get("perf") or {}
    sampled = f"perf {perf['event']} samples at {perf['freq_hz']} Hz" if perf else "perf samples"
    return flamegraph_html(stack_tree(samples, set(cpus), root=f"{side} CPUs {cpus}"),
                           f"{point_label(m)}: {side} CPUs {cpus}",
                           f"Run {m['run_id']}; {sampled}; above the CPUs the command, then its calls from the "
                           "outermost frame to the leaf.")


def first_run_with_stacks(runs_dir, campaign: str) -> Path | None:
    for run in store.list_runs(runs_dir, campaign):
        if has_stacks(run) and store.load_manifest(run)["status"] == "ok":
            return run
    return None


def sweep_record(runs_dir, campaign: str) -> dict | None:
    """The notebook sweep point a campaign was recorded for (hostnet sweep NOTEBOOK), if any."""
    return store.Campaign(runs_dir, campaign).read_json(store.NOTEBOOK_POINT_FILE)


# What a notebook without a live kernel shows of the widgets (GitHub, nbviewer, the stored outputs):
# the widget view needs a kernel, so its plain-text fallback says how to get one.
OFFLINE_TEXT = ("Interactive explorer: open this notebook in JupyterLab and run it to pick campaigns, runs, "
                "the side and a flame graph. The static view of the default selection follows.")


class Interactive:
    """A widget shown as itself where a kernel renders it, else as OFFLINE_TEXT (not its repr,
    `VBox(children=(Dropdown(…`, which is all a stored output could show)."""

    def __init__(self, widget):
        self.widget = widget

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        return {**data, "text/plain": OFFLINE_TEXT}


def analyse_profile(path, *, cpus=None, comms=None, series=None, embedded=False):
    """A profile a researcher brings (perf.data, read through this machine's perf; perf script or
    report text; folded stacks) broken down as the paper does: analysis.profiles.analyse's
    (profile, results, series, where the series came from)."""
    return profiles.analyse(path, cpus=cpus, comms=comms, series=series, embedded=embedded,
                            perf=PerfOnHost(LocalHost()))
