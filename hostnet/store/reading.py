"""Reading stored runs: manifests (older schemas upgraded in memory, shapes hostnet never wrote left
out by name), tidy tables checked against their manifest, and a campaign's or every campaign's runs."""
from __future__ import annotations

import functools
import io
import json
import marshal
import os
import stat
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .checks import DAMAGED, damage
from .files import DamagedRun, regular_bytes
from .rundir import SCHEMA_VERSION, TIDY_COLUMNS

def upgrade_manifest(manifest: dict) -> dict:
    """Bring an older manifest to SCHEMA_VERSION (in memory)."""
    if manifest.get("schema") == 1:
        wl = manifest.get("workload", {})
        manifest = {**manifest, "schema": 2,
                    "workload": {**wl, "kind": "long_flows", "pattern": "single", "n": 1},
                    "flows": [{"index": 0, "sender": "sender", "receiver": "receiver", "port": wl.get("port")}]}
    return manifest

INCOMPLETE = "incomplete"


def run_status(run: Path) -> str | None:
    """A run directory's status; None without a manifest, INCOMPLETE when the manifest is empty or
    unreadable (a crash before it reached the disk, a damaged file, or one of a shape hostnet never
    wrote: manifest_problem): that run is redone, not read."""
    path = Path(run) / "manifest.json"
    if not path.exists():
        return None
    data, why = _read_manifest(path)
    if why.startswith("has schema"):  # a newer hostnet's run: not redone, not read, said
        raise ValueError(f"{run}: manifest.json {why}")
    return INCOMPLETE if why else upgrade_manifest(data)["status"]


MANIFEST_MAX_BYTES = 16 << 20  # hostnet's largest manifests are ~100 KB
# The type of each key a reader relies on, where the manifest has it: a manifest of another shape
# (a received campaign's, or a hand edit) is left out by name instead of failing a whole command.
MANIFEST_TYPES = {"schema": int, "run_id": str, "campaign": str, "status": str, "experiment": str,
                  "point": dict, "config": dict, "repetition": int, "workload": dict, "testbed": dict,
                  "flows": list, "side_cpus": dict, "versions": dict, "probes": dict, "window": dict,
                  "checks": dict, "files": list, "contaminated": bool, "started": (int, float),
                  "ended": (int, float)}


# Manifests parsed once per version of the file: one campaign's load reads each run's manifest seven
# times (list_runs, unreadable_runs, load_tidy, load_manifests), and a notebook or the test suite
# loads a campaign again and again. The key is the file's identity, so a rewrite is a new key
# (write_atomic gives a new inode; an edit in place moves mtime and ctime). A file changed less than
# RACY_NS ago is read, not cached: an edit within the filesystem's timestamp granularity could keep
# every stamp (git's "racily clean" files). What is cached is shared: load_manifest hands out copies.
RACY_NS = 2_000_000_000


def _read_manifest(path: Path) -> tuple[dict | None, str]:
    """The manifest, or None and why it cannot be read as one (shared with the cache: not to be
    changed, nor handed out)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return _parse_manifest(path)  # says why
    if not stat.S_ISREG(st.st_mode) or time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_NS:
        return _parse_manifest(path)
    return _cached_manifest(str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=4096)  # ~35 KB a manifest in memory; data/runs holds ~2,000 (explore lists them all)
def _cached_manifest(path: str, *_identity: int) -> tuple[dict | None, str]:
    return _parse_manifest(Path(path))


def _parse_manifest(path: Path) -> tuple[dict | None, str]:
    try:
        data = json.loads(regular_bytes(path, MANIFEST_MAX_BYTES).decode("utf-8"))
    except DamagedRun as exc:
        return None, f"cannot be read ({str(exc).removeprefix(f'{path}: ')})"
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        # ValueError: JSON's own errors, and integers of more than 4,300 digits; RecursionError:
        # nesting a thousand deep
        return None, f"is empty or unreadable ({type(exc).__name__}: {str(exc)[:120]})"
    if isinstance(data, dict) and _of_type(data.get("schema"), int) and data["schema"] > SCHEMA_VERSION:
        return None, f"has schema {data['schema']} (this hostnet reads up to {SCHEMA_VERSION}: a newer one wrote it)"
    if not isinstance(data, dict) or not data.get("status"):
        return None, "is empty or has no status"
    for key, kind in MANIFEST_TYPES.items():
        if key in data and not _of_type(data[key], kind):
            return None, f"has a {type(data[key]).__name__} as its {key!r}, not a {_names(kind)}"
    return data, ""


def _of_type(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))  # True is no int here


def _names(kind) -> str:
    return " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))


def manifest_problem(run: Path) -> str:
    """Why the run's manifest.json cannot be read as a manifest ("" when it can)."""
    return _read_manifest(Path(run) / "manifest.json")[1]


def load_manifest(run: Path) -> dict:
    """The run's manifest (upgraded to SCHEMA_VERSION), the caller's own to change."""
    # marshal round-trips JSON's types exactly (key order, floats' bits) in half the time of parsing
    return marshal.loads(marshal.dumps(_manifest(run)))


def _manifest(run: Path) -> dict:
    """load_manifest's value shared with the cache: for this module's readers, which change nothing."""
    data, why = _read_manifest(Path(run) / "manifest.json")
    if why:
        raise ValueError(f"{run}: manifest.json {why}")
    manifest = upgrade_manifest(data)
    if manifest.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"{run}: manifest schema {manifest.get('schema')} (this hostnet reads up to {SCHEMA_VERSION})")
    return manifest


def read_tidy(run: Path) -> pd.DataFrame:
    """A run's tidy table; schema-1 tables get an empty flow column. DamagedRun when the table is
    not the one the run wrote (its manifest's checks)."""
    manifest = _manifest(run)
    if why := damage(run, manifest):
        raise DamagedRun(f"{run}: {why}")
    return _table(run, manifest)


def _table(run: Path, manifest: dict) -> pd.DataFrame:
    """The run's tidy.csv; DamagedRun when it is not a table hostnet writes (tidy_problem)."""
    # what tidy_problem reads of the manifest, as it reads it
    identity = tuple(None if (want := manifest.get(col)) is None else str(want) for col in IDENTITY)
    try:
        data = regular_bytes(Path(run) / "tidy.csv")
    except ValueError as exc:  # DamagedRun is one: a link, a FIFO, too large
        raise DamagedRun(f"{run}: tidy.csv cannot be read ({str(exc)[:200]})") from exc
    t, why = _parsed_table(data, identity)
    if why:
        raise DamagedRun(f"{run}: tidy.csv {why}")
    return t.copy()


# Tables parsed and checked once per content: parsing and checking take ~7 ms a run, and a campaign
# is loaded again and again (load_tidy, then load_manifests for runs without recorded checks; a
# notebook's cells, the test suite). Keyed by the file's bytes themselves (and what the check reads
# of the manifest), so no rewrite can be missed; what is cached is copied out (_table).
@functools.lru_cache(maxsize=512)  # ~130 KB a run (the bytes and the frame)
def _parsed_table(data: bytes, identity: tuple[str | None, ...]) -> tuple[pd.DataFrame | None, str]:
    try:
        t = pd.read_csv(io.BytesIO(data), dtype={"category": str, "flow": str},
                        keep_default_na=False, na_values={"value": [""]})
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        return None, f"cannot be read ({str(exc)[:200]})"
    if why := tidy_problem(t, dict(zip(IDENTITY, identity, strict=True))):
        return None, why
    if "flow" not in t.columns:
        t["flow"] = ""
    return t[TIDY_COLUMNS], ""


# The identity columns a run's every row shares with its manifest
IDENTITY = ("run_id", "campaign", "experiment", "repetition")


def tidy_problem(t: pd.DataFrame, manifest: dict) -> str:
    """Why a run's table is not one hostnet writes ("" when it is): other columns, values that are
    not finite numbers (an unmeasured number is empty, never inf), identity columns that are not
    the manifest's, or one (side, metric, category, flow) twice (it would narrow every interval)."""
    if list(t.columns) not in (TIDY_COLUMNS, [c for c in TIDY_COLUMNS if c != "flow"]):
        return f"has the columns {', '.join(map(str, t.columns))[:200]}, not {', '.join(TIDY_COLUMNS)}"
    if len(t) and (not pd.api.types.is_numeric_dtype(t.value) or pd.api.types.is_bool_dtype(t.value)):
        return "has values that are not numbers"
    if np.isinf(t.value.to_numpy(dtype=float)).any():
        return "has infinite values"
    for col in IDENTITY:
        want = manifest.get(col)
        if want is not None and len(t) and not (t[col].astype(str) == str(want)).all():
            return f"has rows whose {col} is not the manifest's {str(want)[:80]!r}"
    keys = [c for c in ("side", "metric", "category", "flow") if c in t.columns]
    if t.duplicated(keys).any():
        return f"has {int(t.duplicated(keys).sum())} rows repeating a (side, metric, category, flow)"
    return ""


def list_runs(runs_dir, campaign: str | None = None, experiment: str | None = None) -> list[Path]:
    base = Path(runs_dir)
    campaigns = [base / campaign] if campaign else sorted(p for p in base.iterdir() if p.is_dir())
    runs = []
    for c in campaigns:
        if not c.is_dir():
            raise FileNotFoundError(f"no campaign {c}")
        for run in sorted(c.iterdir()):
            if run.suffix == ".partial" or not run.is_dir():
                continue
            status = run_status(run)
            if _unreadable(run, status):
                warnings.warn(f"{run}: manifest.json {manifest_problem(run)}; the run is left out "
                              f"(a resumed sweep redoes it)", stacklevel=2)
            if status in (None, INCOMPLETE):
                continue
            if experiment and _manifest(run).get("experiment") != experiment:
                continue
            runs.append(run)
    return runs


def latest_campaign(runs_dir, experiment: str) -> str:
    found = sorted({r.parent.name for r in list_runs(runs_dir, experiment=experiment)})
    if not found:
        raise FileNotFoundError(f"no {experiment} runs under {runs_dir}")
    return found[-1]


def load_tidy(runs_dir, campaign: str | None = None, experiment: str | None = None) -> pd.DataFrame:
    """Concatenate the tidy tables of every successful run (failed runs have none)."""
    frames = []
    for r in list_runs(runs_dir, campaign, experiment):
        m = _manifest(r)
        if m["status"] != "ok":
            continue
        try:
            if why := damage(r, m):
                raise DamagedRun(f"{r}: {why}")
            frames.append(_table(r, m))
        except DamagedRun as exc:
            warnings.warn(f"{exc}; the run is left out", stacklevel=2)
    if not frames:
        return pd.DataFrame(columns=TIDY_COLUMNS)
    return pd.concat(frames, ignore_index=True)


# Why a flagged run is left out, and the manifest key that says more (foreign load: its "load" notes).


class Manifests(list):
    """A campaign's manifests, and the runs whose manifest could not be read (`unreadable`, their
    paths): those have no manifest to list, but the run quality line counts them as failed."""

    unreadable: list[str]
    perf_cost: dict  # sections.common.load's summary of perf's cost (metrics.perf_cost_summary)

    def __init__(self, items=(), unreadable=()):
        super().__init__(items)
        self.unreadable = list(unreadable)
        self.perf_cost = {}

    def __iadd__(self, other):
        """Another experiment's or campaign's manifests added: its unreadable runs too, once each."""
        super().__iadd__(other)
        self.unreadable += [u for u in getattr(other, "unreadable", ()) if u not in self.unreadable]
        return self


def unreadable_runs(runs_dir, campaign: str | None = None) -> list[str]:
    """Runs of the campaign (all campaigns: None) whose manifest is empty or unreadable; kept
    attempts (`.failed-<t>`, `.incomplete-<t>`) and runs in progress are not among them."""
    base = Path(runs_dir)
    campaigns = [base / campaign] if campaign else sorted(p for p in base.iterdir() if p.is_dir())
    return [str(r) for c in campaigns if c.is_dir() for r in sorted(c.iterdir())
            if r.is_dir() and _unreadable(r, run_status(r))]


def _unreadable(run: Path, status: str | None) -> bool:
    """A run whose manifest is empty or unreadable, not a kept attempt (`.failed-<t>`, ...)."""
    return status == INCOMPLETE and "." not in run.name


def load_manifests(runs_dir, campaign: str | None = None, experiment: str | None = None) -> Manifests:
    """Every listed run's manifest; a run whose stored files fail their checks has status DAMAGED
    (and the reason as its error), so it is never counted ok nor used. Runs whose manifest cannot
    be read are in the result's `unreadable` (their experiment is unknown: any campaign asked for)."""
    out = Manifests(unreadable=unreadable_runs(runs_dir, campaign) if campaign else ())
    for r in list_runs(runs_dir, campaign, experiment):
        m = load_manifest(r)
        why = damage(r, m)
        if not why and m.get("status") == "ok" and not m.get("checks"):
            # no recorded digest (an old run, or checks removed): the table itself is looked at, as
            # load_tidy does, so the quality line never counts ok a run the analysis leaves out
            try:
                _table(r, m)
            except DamagedRun as exc:
                why = str(exc).removeprefix(f"{r}: ")
        if why:
            m = {**m, "status": DAMAGED, "error": f"{r}: {why}"}
        out.append(m)
    return out
