"""A run's files on disk: written atomically (write, fsync, rename, the directory fsync'ed too) and
read only as regular files of the run's own, never through a link, at most a cap of bytes."""
from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path


class DamagedRun(ValueError):
    """A run whose stored files are not what it wrote (names the run and the file)."""


STORED_MAX_BYTES = 1 << 30  # a run's manifest or tidy.csv read whole: hostnet's are KB to a few MB


def regular_bytes(path: Path, limit: int = STORED_MAX_BYTES) -> bytes:
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


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_dir(path: Path) -> None:
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
