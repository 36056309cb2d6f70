"""Writing a run directory: built under "<run_id>.partial", its files fsync'ed, and renamed into
place when complete; a finished run's table and manifest replaced (re-derived) in atomic steps."""
from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

import pandas as pd

from .. import __version__
from .archive import PackError, pack_raw
from .checks import checks_of, digest
from .files import DamagedRun, fsync_dir, write_atomic

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
TIDY_COLUMNS = ["run_id", "campaign", "experiment", "config", "repetition", "side", "metric",
                "category", "flow", "value"]


class Rows:
    """Tidy rows of one run: each row carries the run's identity from its manifest. notes: what the
    derivation learned about the run beside its rows (attribution rule, load, ...), for whoever
    writes the manifest to record; the derivation itself only reads the manifest."""

    def __init__(self, manifest: dict, config: str | None = None):
        m = manifest
        self._run = {"run_id": m["run_id"], "campaign": m["campaign"], "experiment": m["experiment"],
                     "config": m["config"]["name"] if config is None else config, "repetition": m["repetition"]}
        self.rows: list[dict] = []
        self.notes: dict = {}

    def add(self, side: str, metric: str, value, category: str = "", flow: str = "") -> None:
        self.rows.append({**self._run, "side": side, "metric": metric, "category": category, "flow": flow,
                          "value": value})

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=TIDY_COLUMNS)


class RunDir:
    """One run being written into a campaign directory (Campaign.new_run); git_commit is the
    commit the code runs from, which the caller finds (the store runs no command)."""

    def __init__(self, campaign_dir: str | os.PathLike, run_id: str, *, git_commit: str | None = None):
        campaign = Path(campaign_dir).name
        self.final = Path(campaign_dir) / run_id
        if self.final.exists():
            raise FileExistsError(f"run {self.final} already exists")
        self.path = self.final.with_name(run_id + ".partial")
        if self.path.exists():
            shutil.rmtree(self.path)
        (self.path / "raw").mkdir(parents=True)
        self.manifest: dict = {"schema": SCHEMA_VERSION, "run_id": run_id, "campaign": campaign,
                               "status": "running",
                               "hostnet": {"version": __version__, "git_commit": git_commit},
                               "started": time.time()}

    def write_raw(self, name: str, text: str) -> None:
        write_atomic(self.path / "raw" / name, text)

    def read_raw(self, name: str) -> str:
        return (self.path / "raw" / name).read_text()

    def finish(self, status: str, tidy: pd.DataFrame | None = None, error: str | None = None) -> Path:
        self.manifest.update(status=status, ended=time.time(), error=error)
        self.manifest["files"] = sorted(p.name for p in (self.path / "raw").iterdir())
        if tidy is not None and status == "ok":
            write_atomic(self.path / "tidy.csv", tidy[TIDY_COLUMNS].to_csv(index=False))
        self.manifest["checks"] = checks_of(self.path)
        write_atomic(self.path / "manifest.json", json.dumps(self.manifest, indent=2, default=str))
        # every file and both directories on disk before the rename publishes the run, and the
        # rename itself after: a crash never leaves a run whose manifest is empty or missing
        fsync_dir(self.path / "raw")
        try:  # raw/ as one archive (fsync'ed, read back), as every stored run keeps it
            if pack_raw(self.path):  # and its digest in the manifest, before the run is published
                self.manifest["checks"] = checks_of(self.path)
                write_atomic(self.path / "manifest.json", json.dumps(self.manifest, indent=2, default=str))
        except (PackError, DamagedRun) as exc:  # never lose a run over it: published unpacked, which reads the same
            log.warning("%s; the run keeps raw/ unpacked", exc)
        fsync_dir(self.path)
        os.replace(self.path, self.final)
        fsync_dir(self.final.parent)
        return self.final

def rewrite_run(run: Path, manifest: dict, tidy: pd.DataFrame) -> None:
    """Replace a finished run's tidy table and manifest (re-derived from its own raw files) in three
    atomic writes, so a kill between any two leaves a run that reads whole: the old manifest first
    learns the new table's digest ("pending", which damage() accepts too), then the table is
    replaced, then the manifest. A run left between the last two keeps its old manifest, whose
    rules say it is still to re-derive: the next `hostnet rederive` finishes it."""
    run = Path(run)
    text = tidy[TIDY_COLUMNS].to_csv(index=False)
    current = json.loads((run / "manifest.json").read_text())
    recorded = (current.get("checks") or {}).get("tidy.csv")
    if isinstance(recorded, dict):
        recorded["pending"] = digest(text.encode())
        write_atomic(run / "manifest.json", json.dumps(current, indent=2, default=str))
    write_atomic(run / "tidy.csv", text)
    manifest["checks"] = checks_of(run)
    write_atomic(run / "manifest.json", json.dumps(manifest, indent=2, default=str))
