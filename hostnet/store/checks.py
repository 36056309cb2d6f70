"""What a run's manifest records of its stored files (sha256 and rows of tidy.csv, the archive's
sha256), and why a finished run's files cannot be believed."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .archive import RAW_ARCHIVE, is_packed
from .files import DamagedRun, regular_bytes, sha256_of, write_atomic

DAMAGED = "damaged"  # a finished run whose stored tidy table is not the one it wrote
CHECKED = ("tidy.csv",)  # the files replay reads beside the manifest


def checks_of(run: Path) -> dict:
    """sha256 and row count of each CHECKED file the run has, and the sha256 of its raw archive
    (what its manifest records). They catch accidents (a torn write, a bad copy, a hand edit), not
    forgery: whoever edits a file can write its digest too (docs/measurement.md)."""
    out = {}
    for name in CHECKED:
        path = Path(run) / name
        if path.exists() or path.is_symlink():
            out[name] = digest(regular_bytes(path))
    archive = Path(run) / RAW_ARCHIVE
    if archive.is_file() and not archive.is_symlink():
        out[RAW_ARCHIVE] = {"sha256": sha256_of(archive)}
    return out


def digest(data: bytes) -> dict:
    return {"sha256": hashlib.sha256(data).hexdigest(), "rows": max(data.count(b"\n") - 1, 0)}


def damage(run: Path, manifest: dict) -> str:
    """Why a finished run's stored files cannot be believed ("" when they can): a tidy table
    missing from an ok run, or one whose sha256 is not the manifest's. Runs written before
    manifests recorded checks are checked for presence only."""
    if manifest.get("status") != "ok":
        return ""
    path = Path(run) / "tidy.csv"
    if not path.exists() and not path.is_symlink():
        return "tidy.csv is missing"
    want = (manifest.get("checks") or {}).get("tidy.csv")
    if want is None:
        return ""
    if not isinstance(want, dict) or not isinstance(want.get("sha256"), str):
        return "its manifest's checks of tidy.csv are not hostnet's (no sha256)"
    try:
        got = digest(regular_bytes(path))
    except DamagedRun as exc:
        return f"tidy.csv {str(exc).removeprefix(f'{path}: ')}"
    pending = want.get("pending") if isinstance(want.get("pending"), dict) else {}  # rewrite_run stopped midway
    if got["sha256"] not in (want["sha256"], pending.get("sha256")):
        return (f"tidy.csv was changed after the run ({got['rows']} rows, {want.get('rows')} recorded; "
                f"sha256 {got['sha256'][:12]}, {want['sha256'][:12]} recorded)")
    return ""


def seal(run: Path) -> bool:
    """Record checks in the manifest of an ok run written before manifests carried them, or its
    archive's digest where only the table's is recorded (True when it changed): from then on its
    files are checked as a new run's are."""
    m = json.loads((Path(run) / "manifest.json").read_text())
    have = m.get("checks") or {}
    if m.get("status") != "ok" or not (Path(run) / "tidy.csv").exists():
        return False
    if have and (RAW_ARCHIVE in have or not is_packed(run)):
        return False
    if not have:
        have = checks_of(run)
    elif why := damage(run, m):  # a table already checked is sealed with its archive only when it holds
        raise DamagedRun(f"{run}: {why}")
    m["checks"] = {**have, **{k: v for k, v in checks_of(run).items() if k == RAW_ARCHIVE}}
    write_atomic(Path(run) / "manifest.json", json.dumps(m, indent=2, default=str))
    return True
