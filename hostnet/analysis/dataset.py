"""The recorded runs as one pandas frame: `hostnet.load()`.

Every row of every successful run's tidy.csv, with what a researcher would otherwise join by hand
from the manifests: the point's swept parameters as columns (rx_buffer_kb, flows, loss_rate, ...),
the metric's unit (hostnet.dictionary), and each run's quality (why it is flagged, whether it is
usable, steady and profiled). Damaged runs are left out with a warning, as everywhere (hostnet.store);
flagged runs are kept and marked, for the user to filter: `df[df.usable]`.
"""
from __future__ import annotations

import ast
import json
import warnings
from pathlib import Path

import pandas as pd

from .. import dictionary, project, store
from .metrics import unprofiled
from . import flags

# quality and provenance columns, after the tidy ones and the point's parameters
QUALITY = ("point", "testbed", "kernel", "unit", "flagged", "usable", "unsteady", "profiled")


def load(campaign: str | list[str] | None = None, section: str | None = None, runs_dir=None) -> pd.DataFrame:
    """One tidy frame of the recorded runs.

    campaign: a campaign's name (or a list of them); None: every campaign in runs_dir.
    section: a notebook ("02-rx-buffer" or "02-rx-buffer.ipynb"): the campaign it replays.
    runs_dir: default data/runs in the project root (hostnet.project: $HOSTNET_ROOT, or the
    checkout the working directory is in).
    """
    runs_dir = Path(runs_dir) if runs_dir is not None else project.root() / "data" / "runs"
    if section is not None:
        if campaign is not None:
            raise ValueError("give campaign or section, not both")
        campaign = notebook_campaign(section)
    names = [campaign] if isinstance(campaign, str) else (None if campaign is None else list(campaign))
    frames = []
    for name in [None] if names is None else names:  # an empty list: no campaign, an empty frame
        if name is not None and not (runs_dir / name).is_dir():
            raise FileNotFoundError(f"no campaign {runs_dir / name}")
        for run in store.list_runs(runs_dir, name):
            manifest = store.load_manifest(run)
            if manifest["status"] != "ok":
                continue
            if why := store.damage(run, manifest):
                warnings.warn(f"{run}: {why}; the run is left out", stacklevel=2)
                continue
            frames.append(_with_run(store.read_tidy(run), manifest))
    if not frames:
        return pd.DataFrame(columns=[*store.TIDY_COLUMNS, *QUALITY])
    out = pd.concat(frames, ignore_index=True)
    params = [c for c in out.columns if c not in store.TIDY_COLUMNS and c not in QUALITY]
    return out[[*store.TIDY_COLUMNS, *sorted(params), *QUALITY]]


def _with_run(tidy: pd.DataFrame, manifest: dict) -> pd.DataFrame:
    taken = {*store.TIDY_COLUMNS, *QUALITY}
    point = {(f"point_{k}" if k in taken else k): v for k, v in (manifest.get("point") or {}).items()
             if k not in ("id", "config")}  # a parameter named like a column keeps its value apart
    kernel = next((v.get("kernel") for v in manifest.get("versions", {}).values() if v.get("kernel")), None)
    flagged = flags.flagged(manifest)
    return tidy.assign(
        **{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in point.items()},
        point=(manifest.get("point") or {}).get("id"), testbed=manifest.get("testbed", {}).get("kind"),
        kernel=kernel, unit=tidy.metric.map(dictionary.unit), flagged=flagged, usable=not flagged,
        unsteady=bool(manifest.get("unsteady")), profiled=not unprofiled(manifest))


def notebook_campaign(section: str) -> str:
    """The campaign a notebook replays: its `campaign` parameter's default (notebooks/ in the project)."""
    name = section if section.endswith(".ipynb") else f"{section}.ipynb"
    path = project.root() / "notebooks" / name
    if not path.is_file():
        raise FileNotFoundError(f"no notebook {path}")
    cells = [c for c in json.loads(path.read_text())["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    for stmt in ast.parse("".join(cells[0]["source"]) if cells else "").body:
        target = getattr(stmt, "target", None) or (stmt.targets[0] if getattr(stmt, "targets", None) else None)
        if isinstance(target, ast.Name) and target.id == "campaign":
            value = ast.literal_eval(stmt.value)
            if isinstance(value, str) and value:
                return value
    raise ValueError(f"{name} names no recorded campaign in its parameters (a campaign parameter with a default)")
