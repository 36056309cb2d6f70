"""Run directories: raw tool output + manifest.json + a tidy table, written atomically.

Layout: <runs_dir>/<campaign>/<run_id>/
  manifest.json   config, testbed, kernel, tool versions, hostnet version + git commit,
                  window, status ("ok" | "failed"), error
  raw.tar.xz      every probe's and tool's output, verbatim, in one archive (deterministic: the same
                  files give the same bytes); runs from before it keep a raw/ directory instead.
                  raw_names/raw_texts/raw_text/has_raw read either form alike; pack_raw and
                  unpack_raw (`hostnet data pack|unpack`) turn one into the other, and a raw/ beside
                  the archive is a copy for a person to read (the archive is what is read)
  tidy.csv        long form: run_id, campaign, experiment, config, repetition, side,
                  metric (unit in the name), category, flow, value   (only when status is ok)
Schema history: 1 = one flow per run (no "flow" column); 2 = flows (per-flow rows, side "flow").
Older runs are upgraded on load, never rewritten.
A run is built in "<run_id>.partial" (raw/ packed at the end), its files and directories fsync'ed,
and renamed into place when complete, so a reader never sees a half-written run; a manifest that is empty or unreadable
all the same (a damaged disk) makes the run INCOMPLETE: left out here, redone by a resumed sweep.
The manifest records the sha256 and row count of tidy.csv (`checks`), so a table cut, torn or
edited after the run is not believed: read_tidy refuses it (DamagedRun), load_tidy leaves it out
with a warning naming it, and load_manifests gives that run the status DAMAGED, which the run
quality line counts as failed. Unreadable manifests in a campaign are warned about by path.
"""
from __future__ import annotations

import errno
import functools
import hashlib
import io
import json
import logging
import lzma
import os
import shutil
import stat
import tarfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
TIDY_COLUMNS = ["run_id", "campaign", "experiment", "config", "repetition", "side", "metric",
                "category", "flow", "value"]


DAMAGED = "damaged"  # a finished run whose stored tidy table is not the one it wrote
CHECKED = ("tidy.csv",)  # the files replay reads beside the manifest


class DamagedRun(ValueError):
    """A run whose stored files are not what it wrote (names the run and the file)."""


def checks_of(run: Path) -> dict:
    """sha256 and row count of each CHECKED file the run has, and the sha256 of its raw archive
    (what its manifest records). They catch accidents (a torn write, a bad copy, a hand edit), not
    forgery: whoever edits a file can write its digest too (docs/measurement.md)."""
    out = {}
    for name in CHECKED:
        path = Path(run) / name
        if path.exists() or path.is_symlink():
            out[name] = _check(_regular_bytes(path))
    archive = Path(run) / RAW_ARCHIVE
    if archive.is_file() and not archive.is_symlink():
        out[RAW_ARCHIVE] = {"sha256": _sha256_of(archive)}
    return out


STORED_MAX_BYTES = 1 << 30  # a run's manifest or tidy.csv read whole: hostnet's are KB to a few MB


def _regular_bytes(path: Path, limit: int = STORED_MAX_BYTES) -> bytes:
    """A stored file's bytes: a regular file of the run's own (never through a link, never a FIFO
    or device: /dev/zero reports size 0), at most `limit` of them; DamagedRun otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DamagedRun(f"{path}: a symlink (a run's files are its own): not read") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DamagedRun(f"{path}: not a regular file: not read")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise DamagedRun(f"{path}: larger than {limit:,} bytes: not read")
    return data


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_archive(run: Path, archive: Path) -> None:
    """DamagedRun when the run's manifest records its archive's sha256 and the archive differs."""
    if archive.is_symlink() or not archive.is_file():
        raise DamagedRun(f"{archive}: not a regular file (a run's archive is its own, never a link)")
    try:
        want = json.loads((run / "manifest.json").read_text())["checks"][RAW_ARCHIVE]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # packed before manifests recorded the archive's digest (hostnet seal adds it)
    got = _sha256_of(archive)
    if got != want:
        raise DamagedRun(f"{archive}: changed after the run (sha256 {got[:12]}, {str(want)[:12]} recorded)")


def _check(data: bytes) -> dict:
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
        got = _check(_regular_bytes(path))
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


def _fsync_dir(path: Path) -> None:
    """Make the directory's entries (a rename, a new file) durable, not only the files' data."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Write, fsync, rename: after a crash or power loss the file holds the old text or the new,
    never a zero-length or torn one."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.unlink(missing_ok=True)  # a stale one, or a link a received run put there: never written through
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # e.g. a full disk: no half-written .tmp left, and the error names the file
        tmp.unlink(missing_ok=True)
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


# --- Raw files: a run's raw/ directory, or the same files in one archive beside the manifest ---
RAW_DIR = "raw"
RAW_ARCHIVE = "raw.tar.xz"
XZ_PRESET = 6  # 9 gains nothing on runs this size and needs 7x the memory to pack


class PackError(ValueError):
    """A run's raw files that cannot be packed as they are (names the run and why); nothing was removed."""


def _check_name(name: str, where) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise PackError(f"{where}: {name!r} is not a plain file name")


def _dir_files(raw: Path) -> dict[str, bytes]:
    """Every file in a raw/ directory by name; anything but a regular file is refused."""
    out = {}
    for p in sorted(raw.iterdir()):
        if p.is_symlink() or not p.is_file():
            raise PackError(f"{p}: not a regular file (raw/ holds files only)")
        out[p.name] = p.read_bytes()
    return out


def archive_bytes(files: dict[str, bytes]) -> bytes:
    """The archive of these files, byte for byte the same for the same files: members sorted by
    name, mtime 0, mode 0644, uid/gid 0 and no user or group names, xz at a fixed preset."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            _check_name(name, "archive member")
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[name]))
    return lzma.compress(buf.getvalue(), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=XZ_PRESET)


# Caps on what one run's archive may decompress to: a shared run's raw.tar.xz is data from someone
# else, and xz turns 156 KB of zeros into a GiB. The committed campaigns' 1,947 archives (2026-11-28)
# decompress to at most 1.0 MB, at most 31x their size (docs/measurement.md).
RAW_MAX_BYTES = 2 << 30  # all members together
RAW_MAX_MEMBER = 1 << 30  # one member (read whole into memory)
RAW_MAX_RATIO = 400  # decompressed bytes per archive byte, beyond the first RAW_RATIO_SLACK
RAW_RATIO_SLACK = 16 << 20
RAW_MAX_MEMBERS = 10_000  # hostnet writes a few dozen raw files per run


class _Capped(io.RawIOBase):
    """A stream that stops with DamagedRun once more than `limit` bytes were read from it."""

    def __init__(self, stream, limit: int, archive: Path):
        self.stream, self.limit, self.archive, self.count = stream, limit, archive, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        data = self.stream.read(min(len(buf), self.limit + 1 - self.count))
        self.count += len(data)
        self.check(0)
        buf[:len(data)] = data
        return len(data)

    def check(self, more: int) -> None:
        """DamagedRun when the bytes read, and `more` still to come, pass the limit."""
        if self.count + more > self.limit:
            raise DamagedRun(f"{self.archive}: decompresses to more than {self.limit:,} bytes (the cap for an "
                             f"archive of {self.archive.stat().st_size:,} bytes): refused as a decompression bomb")


def raw_limit(archive_bytes_: int) -> int:
    """The most an archive of this size may decompress to (RAW_MAX_RATIO, RAW_MAX_BYTES)."""
    return min(RAW_MAX_BYTES, RAW_RATIO_SLACK + RAW_MAX_RATIO * archive_bytes_)


def _members(archive: Path, wanted=None) -> list[tuple[str, bytes]]:
    """An archive's members in their order as (name, bytes) (only `wanted` ones, when given), in one
    streamed pass with caps (raw_limit, RAW_MAX_MEMBER); DamagedRun when it cannot be read or
    exceeds a cap, PackError for a member that is not a plain file."""
    if archive.is_symlink() or not archive.is_file():
        raise DamagedRun(f"{archive}: not a regular file (a run's archive is its own, never a link)")
    out, names, declared = [], set(), 0
    try:
        with lzma.open(archive, format=lzma.FORMAT_XZ) as xz:
            capped = _Capped(xz, raw_limit(archive.stat().st_size), archive)
            with tarfile.open(fileobj=io.BufferedReader(capped, 1 << 16), mode="r|") as tar:
                for info in tar:
                    # a sparse member's holes never pass through the stream: its size is not counted there
                    if not info.isreg() or info.issparse():
                        raise PackError(f"{archive}: member {info.name!r} is not a regular file")
                    _check_name(info.name, archive)
                    if info.name in names or len(names) >= RAW_MAX_MEMBERS:
                        raise DamagedRun(f"{archive}: member {info.name!r} twice, or more than {RAW_MAX_MEMBERS:,} "
                                         f"members: not an archive hostnet writes")
                    names.add(info.name)
                    if info.size > RAW_MAX_MEMBER:
                        raise DamagedRun(f"{archive}: member {info.name!r} is {info.size:,} bytes, over the "
                                         f"{RAW_MAX_MEMBER:,} a raw file may have")
                    declared += info.size  # what the members say they hold, all together
                    capped.check(declared - capped.count)  # more than is left: refused before it is read
                    if wanted is None or info.name in wanted:
                        out.append((info.name, tar.extractfile(info).read()))
            # read to the stream's end: xz checks its integrity (CRC64) and its end only there
            while capped.read(1 << 20):
                pass
    except (tarfile.TarError, lzma.LZMAError, EOFError) as exc:
        raise DamagedRun(f"{archive}: cannot be read ({exc})") from exc
    return out


def _same(archive: Path, files: dict[str, bytes]) -> bool:
    """The archive holds exactly these files, each once, in name order, byte for byte."""
    return _members(archive) == sorted(files.items())


@functools.lru_cache(maxsize=4096)
def _archive_names(archive: str, _stamp: tuple) -> tuple[str, ...]:
    """Member names, cached per archive and its size, mtime and inode (listing means decompressing)."""
    return tuple(sorted(name for name, _ in _members(Path(archive))))


def _stamp(path: Path) -> tuple:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


def _text(data: bytes) -> str:
    """What Path.read_text() made of a raw file (UTF-8, universal newlines): either form reads alike."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()


def is_packed(run) -> bool:
    return (Path(run) / RAW_ARCHIVE).is_file()


def linked(run: Path) -> list[Path]:
    """The run directory, its raw/, its archive or their temporary names where they are symlinks:
    a shared campaign's link would have pack archive and delete, or unpack write, outside the run."""
    run = Path(run)
    return [p for p in (run, run / RAW_DIR, run / RAW_ARCHIVE, run / (RAW_ARCHIVE + ".tmp"),
                        run / (RAW_DIR + ".unpacking"), run / (RAW_DIR + ".removing")) if p.is_symlink()]


def _raw_dir(run: Path) -> Path | None:
    """The run's raw/ when it is a directory of its own; None when it has none; DamagedRun for a link."""
    raw = run / RAW_DIR
    if raw.is_symlink():
        raise DamagedRun(f"{raw}: a symlink (a run's raw files are its own): not read")
    return raw if raw.is_dir() else None


def raw_names(run) -> list[str]:
    """The names of a run's raw files, from its archive when it has one (the record; a raw/ beside it
    is a copy unpacked to look at), else from raw/; [] when it has neither."""
    run = Path(run)
    archive = run / RAW_ARCHIVE
    if archive.is_file():
        return list(_archive_names(str(archive), _stamp(archive)))
    raw = _raw_dir(run)
    return sorted(p.name for p in raw.iterdir() if p.is_file() and not p.is_symlink()) if raw else []


def has_raw(run, name: str) -> bool:
    return name in raw_names(run)


def raw_texts(run, names=None) -> dict[str, str]:
    """Several raw files' text by name, the archive read once: the ones among `names` the run has
    (every file, when names is None)."""
    run = Path(run)
    wanted = None if names is None else set(names)
    archive = run / RAW_ARCHIVE
    if archive.is_file():
        _check_archive(run, archive)
        found = dict(_members(archive, wanted))
    else:
        raw = _raw_dir(run)
        try:
            found = {p.name: p.read_bytes() for p in (sorted(raw.iterdir()) if raw else [])
                     if p.is_file() and not p.is_symlink() and (wanted is None or p.name in wanted)}
        except FileNotFoundError:
            if not archive.is_file():
                raise
            found = {}
        # packed meanwhile? raw/ leaves in one rename after its archive is in place: raw/ still there
        # after the reads means every read saw it whole (and no raw/ now, an archive now: read that)
        if (raw is None or not raw.is_dir()) and archive.is_file():
            _check_archive(run, archive)
            found = dict(_members(archive, wanted))
    return {name: _text(data) for name, data in sorted(found.items())}


def raw_text(run, name: str) -> str:
    """One raw file's text, from the archive or raw/; FileNotFoundError names the run and the file."""
    found = raw_texts(run, [name])
    if name not in found:
        raise FileNotFoundError(f"{run}: no raw file {name}")
    return found[name]


def pack_raw(run) -> bool:
    """Store a run's raw/ as RAW_ARCHIVE beside its manifest and remove raw/. The archive is written
    to a temporary name, fsync'ed, read back and compared with every file, and only then renamed into
    place and raw/ removed. A raw/ beside an archive (unpacked to look at) is removed when it equals
    the archive. True when raw/ went; False when there was none; PackError (raw/ kept) when raw/ is
    not the manifest's `files` or differs from an existing archive, or when the run, raw/ or the
    archive is a symlink (linked)."""
    run = Path(run)
    raw, archive = run / RAW_DIR, run / RAW_ARCHIVE
    if links := linked(run):
        raise PackError(f"{links[0]}: a symlink: not packed, nothing removed (a run's files are its own)")
    finish_removal(run)
    if not raw.is_dir():
        return False
    files = _dir_files(raw)
    if archive.is_file():
        if not _same(archive, files):
            raise PackError(f"{raw} differs from {archive.name}: both left as they are")
    else:
        listed = _listed_files(run)
        if listed is not None and listed != sorted(files):
            raise PackError(f"{raw} holds {len(files)} files, its manifest lists {len(listed)} "
                            f"({', '.join(sorted(set(listed) ^ set(files))[:3])} differ): not packed")
        tmp = run / (RAW_ARCHIVE + ".tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(archive_bytes(files))
                fh.flush()
                os.fsync(fh.fileno())
            if not _same(tmp, files):
                raise PackError(f"{run}: the archive written does not read back as raw/: not packed")
            os.replace(tmp, archive)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(run)
    # raw/ leaves in one rename, then is deleted: a reader sees all of raw/ or none of it (then the
    # archive), and a pack killed while deleting leaves raw.removing, which the next pack finishes
    os.replace(raw, run / RAW_REMOVING)
    _fsync_dir(run)
    shutil.rmtree(run / RAW_REMOVING)
    _fsync_dir(run)
    return True


RAW_REMOVING = RAW_DIR + ".removing"  # raw/ after its archive was verified, being deleted


def finish_removal(run: Path) -> bool:
    """Delete the raw.removing a killed pack left beside its verified archive (True when there was one)."""
    leftover = Path(run) / RAW_REMOVING
    if leftover.is_symlink() or not leftover.is_dir() or not (Path(run) / RAW_ARCHIVE).is_file():
        return False
    shutil.rmtree(leftover)
    _fsync_dir(Path(run))
    return True


def _listed_files(run: Path) -> list[str] | None:
    """The raw file names the run's manifest lists (None: no manifest, or one without the list)."""
    try:
        listed = json.loads((run / "manifest.json").read_text()).get("files")
    except (OSError, ValueError, AttributeError):
        return None
    return sorted(listed) if isinstance(listed, list) else None


def unpack_raw(run) -> Path:
    """Write a packed run's raw files into raw/ beside the archive (which stays: it is the record),
    for a person to read; returns raw/. A raw/ already there is left as it is."""
    run = Path(run)
    raw, archive = run / RAW_DIR, run / RAW_ARCHIVE
    if links := linked(run):
        raise PackError(f"{links[0]}: a symlink: not unpacked (a run's files are its own)")
    if raw.is_dir():
        return raw
    if not archive.is_file():
        raise FileNotFoundError(f"{run}: no {RAW_ARCHIVE} and no {RAW_DIR}/ (not a run directory?)")
    members = _members(archive)
    tmp = run / (RAW_DIR + ".unpacking")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        for name, data in members:
            (tmp / name).write_bytes(data)
        os.replace(tmp, raw)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return raw


def git_commit() -> str | None:
    """The commit hostnet runs from (None outside a git checkout)."""
    from .hosts import HostError, LocalHost  # commands run through the Host seam only
    root = Path(__file__).resolve().parent.parent
    try:
        out = LocalHost("controller").run(["git", "-C", str(root), "rev-parse", "HEAD"], check=False, timeout=5)
    except HostError:
        return None
    return out.stdout.strip() or None


def new_campaign_id(experiment: str, testbed_kind: str) -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{experiment}-{testbed_kind}"


class RunDir:
    def __init__(self, runs_dir: str | os.PathLike, campaign: str, run_id: str):
        self.final = Path(runs_dir) / campaign / run_id
        if self.final.exists():
            raise FileExistsError(f"run {self.final} already exists")
        self.path = self.final.with_name(run_id + ".partial")
        if self.path.exists():
            shutil.rmtree(self.path)
        (self.path / "raw").mkdir(parents=True)
        self.manifest: dict = {"schema": SCHEMA_VERSION, "run_id": run_id, "campaign": campaign,
                               "status": "running",
                               "hostnet": {"version": __version__, "git_commit": git_commit()},
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
        _fsync_dir(self.path / "raw")
        try:  # raw/ as one archive (fsync'ed, read back), as every stored run keeps it
            if pack_raw(self.path):  # and its digest in the manifest, before the run is published
                self.manifest["checks"] = checks_of(self.path)
                write_atomic(self.path / "manifest.json", json.dumps(self.manifest, indent=2, default=str))
        except (PackError, DamagedRun) as exc:  # never lose a run over it: published unpacked, which reads the same
            log.warning("%s; the run keeps raw/ unpacked", exc)
        _fsync_dir(self.path)
        os.replace(self.path, self.final)
        _fsync_dir(self.final.parent)
        return self.final


def upgrade_manifest(manifest: dict) -> dict:
    """Bring an older manifest to SCHEMA_VERSION (in memory)."""
    if manifest.get("schema") == 1:
        wl = manifest.get("workload", {})
        manifest = {**manifest, "schema": 2,
                    "workload": {**wl, "kind": "long_flows", "pattern": "single", "n": 1},
                    "flows": [{"index": 0, "sender": "sender", "receiver": "receiver", "port": wl.get("port")}]}
    return manifest


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
        recorded["pending"] = _check(text.encode())
        write_atomic(run / "manifest.json", json.dumps(current, indent=2, default=str))
    write_atomic(run / "tidy.csv", text)
    manifest["checks"] = checks_of(run)
    write_atomic(run / "manifest.json", json.dumps(manifest, indent=2, default=str))


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


def _read_manifest(path: Path) -> tuple[dict | None, str]:
    """The manifest, or None and why it cannot be read as one."""
    try:
        data = json.loads(_regular_bytes(path, MANIFEST_MAX_BYTES).decode("utf-8"))
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
    manifest = load_manifest(run)
    if why := damage(run, manifest):
        raise DamagedRun(f"{run}: {why}")
    return _table(run, manifest)


def _table(run: Path, manifest: dict) -> pd.DataFrame:
    """The run's tidy.csv; DamagedRun when it is not a table hostnet writes (tidy_problem)."""
    try:
        t = pd.read_csv(io.BytesIO(_regular_bytes(Path(run) / "tidy.csv")), dtype={"category": str, "flow": str},
                        keep_default_na=False, na_values={"value": [""]})
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise DamagedRun(f"{run}: tidy.csv cannot be read ({str(exc)[:200]})") from exc
    if why := tidy_problem(t, manifest):
        raise DamagedRun(f"{run}: tidy.csv {why}")
    if "flow" not in t.columns:
        t["flow"] = ""
    return t[TIDY_COLUMNS]


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
            if experiment and load_manifest(run).get("experiment") != experiment:
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
        m = load_manifest(r)
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
# A rehearsal's run (emulated NICs under TCG) is never a measurement, whatever else it met.
FLAGS = {"rehearsal": "rehearsal", "setting moved": "settings_moved", "short window": "short_window",
         "host contention": "host_contention"}


def flagged(manifest: dict) -> str:
    """Why a run is left out of analysis though it succeeded ("" when usable): foreign load during
    its window, the hypervisor's steal above its limit (host contention), a host-wide setting that
    moved under it, or a window too short to measure; first of all, a rehearsal's run (the testbed's
    "rehearsal": emulated NICs). Every section asks this one question."""
    if manifest.get("rehearsal"):
        return "rehearsal"
    if manifest.get("contaminated"):
        return "foreign load"
    return next((why for why, key in FLAGS.items() if manifest.get(key)), "")


def usable(manifest: dict) -> bool:
    return manifest["status"] == "ok" and not flagged(manifest)


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
