"""A run's raw files: its raw/ directory, or the same files in one deterministic archive beside the
manifest (raw.tar.xz), read either way alike, under caps on what an archive may decompress to."""
from __future__ import annotations

import functools
import io
import json
import lzma
import os
import shutil
import tarfile
from pathlib import Path

from .files import DamagedRun, fsync_dir, sha256_of

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


def _check_archive(run: Path, archive: Path) -> None:
    """DamagedRun when the run's manifest records its archive's sha256 and the archive differs."""
    if archive.is_symlink() or not archive.is_file():
        raise DamagedRun(f"{archive}: not a regular file (a run's archive is its own, never a link)")
    try:
        want = json.loads((run / "manifest.json").read_text())["checks"][RAW_ARCHIVE]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # packed before manifests recorded the archive's digest (hostnet seal adds it)
    got = sha256_of(archive)
    if got != want:
        raise DamagedRun(f"{archive}: changed after the run (sha256 {got[:12]}, {str(want)[:12]} recorded)")


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
        fsync_dir(run)
    # raw/ leaves in one rename, then is deleted: a reader sees all of raw/ or none of it (then the
    # archive), and a pack killed while deleting leaves raw.removing, which the next pack finishes
    os.replace(raw, run / RAW_REMOVING)
    fsync_dir(run)
    shutil.rmtree(run / RAW_REMOVING)
    fsync_dir(run)
    return True


RAW_REMOVING = RAW_DIR + ".removing"  # raw/ after its archive was verified, being deleted


def finish_removal(run: Path) -> bool:
    """Delete the raw.removing a killed pack left beside its verified archive (True when there was one)."""
    leftover = Path(run) / RAW_REMOVING
    if leftover.is_symlink() or not leftover.is_dir() or not (Path(run) / RAW_ARCHIVE).is_file():
        return False
    shutil.rmtree(leftover)
    fsync_dir(Path(run))
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
