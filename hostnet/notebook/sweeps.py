"""Sweeps of one notebook over a parameter grid (`hostnet sweep NOTEBOOK.ipynb -f params.yaml`): the plan
(replay: recorded points selected; run: a new campaign per point), executing it point by point through
batch.execute, and the table of every point's summary."""
from __future__ import annotations

import ast
import itertools
import json
import logging
import re
import time
from pathlib import Path

import pandas as pd

from .. import inputfiles, project, store
from ..sections import replay, section
from ..testbed.session import is_file, kind_of
from .batch import NotebookExecutionError, check_declared, default_runs_dir, execute_with_status, profile

log = logging.getLogger(__name__)  # one line per point (INFO); the CLI shows them


def _slug(point: dict) -> str:
    text = "-".join(f"{k}-{'_'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in point.items())
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text)


def grid_points(grid: dict[str, list]) -> list[dict]:
    """The cartesian product of the grid, in the order written (first key varies slowest)."""
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid {key} must be a non-empty list of values")
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(grid[k] for k in keys))]


def _fit_declared(point: dict, declared: dict) -> dict:
    """A scalar swept over a parameter the notebook declares as a list (e.g. sizes_kb) becomes [scalar]."""
    return {k: [v] if declared[k]["default"].lstrip().startswith("[") and not isinstance(v, list) else v
            for k, v in point.items()}


def sweep_plan(notebook: Path, grid: dict[str, list], parameters: dict | None = None,
               profile_name: str | None = None, runs_dir: Path | None = None, mode: str = "run",
               output_dir: Path | None = None) -> list[dict]:
    """One entry per grid point: where it goes (`dir`), its campaign and the notebook parameters;
    checked, nothing run.

    mode "run": each point a new live campaign (runs_dir/<campaign>/, the executed notebook and
    its figures inside), measured with the profile (default quick). A `testbed` parameter names
    what every point runs on (a testbed.yaml path is made absolute) and the campaign's kind.
    mode "replay": each point reads the recorded campaign (the notebook's own, or the `campaign`
    parameter), its swept parameters selecting recorded points (hostnet.sections.replay): a value
    not recorded, or a parameter only a live run uses (a profile included), is refused here,
    before any kernel starts. Executed notebooks and figures go to output_dir/<point>/ (default
    ./hostnet-sweeps/<time>-<notebook>/)."""
    notebook = Path(notebook)
    runs_dir = Path(runs_dir or default_runs_dir()).resolve()
    parameters = dict(parameters or {})
    clash = sorted(set(grid) & set(parameters))
    if clash:
        raise ValueError(f"{', '.join(clash)} both swept and fixed")
    if "mode" in {*grid, *parameters}:
        raise ValueError("mode is not a parameter of a sweep: say --mode replay or --mode run")
    if mode not in ("replay", "run"):
        raise ValueError(f"mode must be 'replay' or 'run', not {mode!r}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if mode == "replay":
        return _replay_plan(notebook, grid, parameters, profile_name, runs_dir,
                            Path(output_dir or Path.cwd() / "hostnet-sweeps" / f"{stamp}-{notebook.stem}"))
    fixed = {**profile(profile_name or "quick"), **parameters}
    if is_file(str(fixed.get("testbed", ""))):
        fixed["testbed"] = str(Path(fixed["testbed"]).resolve())
    testbed_kind = kind_of(str(fixed.get("testbed", "embedded")))
    declared = check_declared(notebook, {*grid, *fixed, "mode", "campaign", "runs_dir", "figures_dir"})
    plan = []
    for point in grid_points(grid):
        point = _fit_declared(point, declared)
        campaign = f"{stamp}-{notebook.stem}-{_slug(point)}-{testbed_kind}"
        cdir = store.Campaign(runs_dir, campaign).path
        plan.append({"point": point, "campaign": campaign, "dir": cdir,
                     "parameters": {**fixed, **point, "mode": "run", "campaign": campaign,
                                    "runs_dir": str(runs_dir), "figures_dir": str(cdir / "figures")}})
    return plan


def _replay_plan(notebook: Path, grid: dict, fixed: dict, profile_name: str | None, runs_dir: Path,
                 output_dir: Path) -> list[dict]:
    if profile_name:
        raise replay.ReplayParameterError(
            f"profile {profile_name} shapes live runs (duration, warmup, repetitions): a replay reads what "
            f"was recorded, so it would change nothing; drop it, or --mode run")
    declared = check_declared(notebook, {*grid, *fixed, "mode", "runs_dir", "figures_dir"})
    entry = section(notebook.name)
    replay.refuse_run_only(entry, {*grid, *fixed})
    runs_dir = project.resolve(fixed.pop("runs_dir")) if "runs_dir" in fixed else runs_dir
    recorded: dict[str, list] = {}

    def manifests_of(name: str) -> list:
        if name not in recorded:
            if not (runs_dir / name).is_dir():
                raise FileNotFoundError(f"no campaign {name} in {runs_dir} to replay")
            recorded[name] = store.load_manifests(runs_dir, name)
        return recorded[name]

    plan = []
    for point in grid_points(grid):
        point = _fit_declared(point, declared)
        given = {**fixed, **point}
        campaigns = {c: str(given[c] if c in given else ast.literal_eval(declared[c]["default"]))
                     for c in {s.campaign for s in entry.selects} if c in declared}
        for name in filter(None, campaigns.values()):
            manifests_of(name)  # each named campaign is there
        if all(campaigns.values()):  # "" replays the newest campaign: the notebook picks and checks it
            replay.selection(entry, given, lambda c, names=campaigns: manifests_of(names[c]))
        pdir = output_dir / _slug(point)
        plan.append({"point": point, "campaign": campaigns.get("campaign", ""), "dir": pdir,
                     "parameters": {**given, "mode": "replay", "runs_dir": str(runs_dir),
                                    "figures_dir": str(pdir / "figures")}})
    return plan


def sweep_notebook(notebook: Path, grid: dict[str, list], parameters: dict | None = None,
                   profile_name: str | None = None, runs_dir: Path | None = None,
                   mode: str = "run", output_dir: Path | None = None) -> list[dict]:
    """Execute the notebook once per grid point, serially (sweep_plan says where each goes).

    The executed notebook lands in the point's directory with its figures in figures/ there, and
    notebook_sweep.json records the point. A failed point is recorded and the sweep goes on;
    NotebookExecutionError names the failures at the end.
    """
    plan = sweep_plan(notebook, grid, parameters, profile_name, runs_dir, mode, output_dir)
    failures = []
    for i, entry in enumerate(plan, 1):
        log.info("[%d/%d] %s %s -> %s", i, len(plan), Path(notebook).name, entry["point"], entry["dir"])
        entry["status"], seconds = execute_with_status(Path(notebook), entry["parameters"], entry["dir"])
        entry["executed"] = entry["dir"] / Path(notebook).name
        entry["seconds"] = round(seconds, 1)
        if entry["status"] != "ok":
            failures.append(f"{entry['point']}: {entry['status'].removeprefix('failed: ')}")
        record = {"notebook": Path(notebook).name, "mode": mode,
                  "profile": (profile_name or "quick") if mode == "run" else None, "point": entry["point"],
                  "parameters": entry["parameters"], "status": entry["status"], "seconds": entry["seconds"]}
        store.Campaign.at(entry["dir"]).write_json(store.NOTEBOOK_POINT_FILE, record)
    table = sweep_table_path(plan, mode)
    sweep_table(plan, Path(notebook)).to_csv(table, index=False)
    for entry in plan:
        entry["table"] = table
    if failures:
        raise NotebookExecutionError(f"{len(failures)} of {len(plan)} points failed: " + "; ".join(failures)
                                     + f"; the points that ran are in {table}")
    return plan


def sweep_table(plan: list[dict], notebook: Path):
    """The summary each point's notebook printed (its report metadata's summary table), one row per
    summary row, the point's swept parameters, status and directory in front; a point that failed
    is one row saying so."""
    rows = []
    for entry in plan:
        head = {**{k: json.dumps(v) if isinstance(v, list) else v for k, v in entry["point"].items()},
                "status": entry.get("status", "not run"), "dir": str(entry["dir"])}
        meta = Path(entry["parameters"]["figures_dir"]) / f"{Path(notebook).stem}.meta.json"
        summary = json.loads(meta.read_text())["summary"] if meta.is_file() else []
        rows += [{**head, **row} for row in summary] or [head]
    return pd.DataFrame(rows)


def sweep_table_path(plan: list[dict], mode: str) -> Path:
    """Where a notebook sweep's table goes: sweep.csv in a replay's output directory; beside the
    campaigns of a live sweep (<their common prefix>-sweep.csv in the runs directory)."""
    first = Path(plan[0]["dir"])
    if mode == "replay":
        return first.parent / "sweep.csv"
    shared = []  # the names' common leading words (points 200 and 2000 share no "200")
    for words in zip(*(Path(e["dir"]).name.split("-") for e in plan), strict=False):  # up to the shortest
        if len(set(words)) > 1:
            break
        shared.append(words[0])
    return first.parent / f"{'-'.join(shared) or 'notebook'}-sweep.csv"


def load_sweep_file(path) -> dict:
    """params.yaml for `hostnet sweep NOTEBOOK -f`: grid (lists to sweep), parameters (fixed), profile."""
    data = inputfiles.load(path) or {}  # InputFileError (a ValueError): one line naming the file
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping of grid, parameters and profile")
    unknown = sorted(set(data) - {"grid", "parameters", "profile"})
    if unknown:
        raise ValueError(f"{path}: unknown keys {', '.join(unknown)} (allowed: grid, parameters, profile)")
    if not data.get("grid"):
        raise ValueError(f"{path}: needs a grid, e.g. grid: {{sizes_kb: [200, 3200]}}")
    for part in ("grid", "parameters"):
        if "mode" in (data.get(part) or {}):
            raise ValueError(f"{path}: mode in {part} would be overridden by the sweep: say --mode replay or "
                             f"--mode run on the command line instead")
    return {"grid": data["grid"], "parameters": data.get("parameters") or {}, "profile": data.get("profile")}
