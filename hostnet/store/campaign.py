"""A campaign directory and what it holds: <runs_dir>/<name>/ with its runs, its sweep's plan
(sweep.json: spec, fingerprint, order, top-up records), its capability record (capabilities.json)
and the lock one sweep holds while it runs. Every module that reads or writes one of them goes
through a Campaign, so the file names and the locking rule live here only."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

from .files import write_atomic
from .reading import Manifests, list_runs, load_manifests, load_tidy
from .rundir import RunDir

PLAN_FILE = "sweep.json"
CAPABILITIES_FILE = "capabilities.json"
LOCK_FILE = ".sweep.lock"
NOTEBOOK_POINT_FILE = "notebook_sweep.json"  # `hostnet sweep NOTEBOOK`: the point a campaign ran for


def new_campaign_id(experiment: str, testbed_kind: str) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{experiment}-{testbed_kind}"


class CampaignLocked(ValueError):
    """Another sweep is running on this campaign (its runs in progress must not be touched)."""


@dataclass(frozen=True)
class Campaign:
    runs_dir: Path
    name: str

    def __init__(self, runs_dir: str | os.PathLike, name: str):
        object.__setattr__(self, "runs_dir", Path(runs_dir))
        object.__setattr__(self, "name", str(name))

    @classmethod
    def at(cls, path: str | os.PathLike) -> "Campaign":
        """The campaign whose directory this is."""
        path = Path(path)
        return cls(path.parent, path.name)

    @property
    def path(self) -> Path:
        return self.runs_dir / self.name

    def file(self, name: str) -> Path:
        """A file of the campaign's own beside its runs (a notebook's record of its points, ...)."""
        return self.path / name

    def read_json(self, name: str, missing=None):
        """One of the campaign's JSON files (`missing` when it has none)."""
        path = self.file(name)
        return json.loads(path.read_text()) if path.exists() else missing

    def write_json(self, name: str, data) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        write_atomic(self.file(name), json.dumps(data, indent=2, default=plain))
        return self.file(name)

    # --- the sweep's plan ---
    @property
    def plan_path(self) -> Path:
        return self.path / PLAN_FILE

    def is_sweep(self) -> bool:
        """A sweep recorded its plan here (campaigns of notebooks that predate plans have none)."""
        return self.plan_path.exists()

    def plan(self) -> dict:
        """The recorded plan; FileNotFoundError without one, ValueError when it is not JSON."""
        return json.loads(self.plan_path.read_text())

    def write_plan(self, plan: dict) -> None:
        """Written atomically: a kill leaves the old plan or the new one, never a torn one."""
        write_atomic(self.plan_path, json.dumps(plan, indent=2, default=plain))

    def edit_plan(self, change):
        """change(plan) applied to the recorded plan and written back; returns what change returned."""
        plan = self.plan()
        out = change(plan)
        self.write_plan(plan)
        return out

    # --- the capability record ---
    @property
    def capabilities_path(self) -> Path:
        return self.path / CAPABILITIES_FILE

    def has_capabilities(self) -> bool:
        return self.capabilities_path.exists()

    def write_capabilities(self, record: dict) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        write_atomic(self.capabilities_path, json.dumps(record, indent=2, sort_keys=True))
        return self.capabilities_path

    def capabilities(self) -> dict:
        if not self.has_capabilities():
            raise FileNotFoundError(f"campaign {self.name} has no {CAPABILITIES_FILE} (record one with mode=\"run\")")
        return json.loads(self.capabilities_path.read_text())

    # --- runs ---
    def new_run(self, run_id: str, *, git_commit: str | None = None) -> RunDir:
        return RunDir(self.path, run_id, git_commit=git_commit)

    def runs(self, experiment: str | None = None) -> list[Path]:
        return list_runs(self.runs_dir, self.name, experiment)

    def manifests(self, experiment: str | None = None) -> Manifests:
        return load_manifests(self.runs_dir, self.name, experiment)

    def tidy(self, experiment: str | None = None):
        return load_tidy(self.runs_dir, self.name, experiment)

    # --- the lock ---
    @contextlib.contextmanager
    def lock(self):
        """Hold the campaign for one sweep: a second sweep on it is refused, naming the holder,
        instead of deleting the first one's run in progress. flock: the kernel drops it when the
        holder dies, so a killed sweep leaves no stale lock (the file stays; its content only names
        the last holder). A process that holds it already (a top-up across its rounds' sweeps) may
        take it again."""
        key = os.path.realpath(self.path)
        if key in _HELD:
            yield
            return
        path = self.path / LOCK_FILE
        try:  # never through a symlink: its target would be truncated and written
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise CampaignLocked(f"{path}: cannot open the campaign's lock ({exc.strerror}; a symlink is refused)") \
                from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
                raise CampaignLocked(f"campaign {self.name} is being swept by {holder}; wait for it to end "
                                     f"(or stop it), then run again to resume") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {platform.node()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
                      .encode(), 0)
            _HELD.add(key)
            try:
                yield
            finally:
                _HELD.discard(key)
        finally:
            os.close(fd)  # releases the lock


_HELD: set[str] = set()  # the campaigns (real paths) this process holds the lock of


def plain(value):
    """A numpy number a verdict's points carry (pandas hands them out) as the JSON number it is: the
    record of a top-up must not fail after its runs are done."""
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
