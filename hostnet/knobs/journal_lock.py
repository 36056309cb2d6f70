"""One controller per journal: an exclusive flock on <journal>.lock, naming its holder.

Two controllers on one testbed would journal each other's values as priors and wipe each other's
settings; the second is refused, with the holder's PID, command and start named. The kernel drops
the lock when the holder dies (SIGKILL included), which is how `hostnet restore` tells a dead
session's journal from a live one. The lock is per process: every Journal and restore of this
process on the same path shares it.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from ..hosts import HostError, process_start_ticks
from ..hosts.base import private_dir as _private_dir
from .base import KnobError

FILE_MODE = 0o600
DIR_MODE = 0o700


class JournalBusy(KnobError):
    """Another live process holds the journal."""


# path of the journal -> (lock fd, generation): locks this process holds
_HELD: dict[str, tuple[int, int]] = {}
_generation = 0


def lock_path(journal: Path) -> Path:
    return journal.with_name(journal.name + ".lock")


def private_dir(path: Path) -> None:
    """hosts.private_dir, refusing with a KnobError (a journal cannot be kept there)."""
    try:
        _private_dir(path)
    except HostError as exc:
        raise KnobError(str(exc)) from None


def _key(journal: Path) -> str:
    return str(journal.absolute())


def _me() -> dict:
    pid = os.getpid()
    return {"pid": pid, "start_ticks": process_start_ticks(pid), "host": socket.gethostname(),
            "command": " ".join(sys.argv)[:300], "since": time.strftime("%Y-%m-%d %H:%M:%S")}


def describe_holder(info: dict) -> str:
    return (f"PID {info.get('pid')} on {info.get('host')} ({info.get('command') or 'unknown command'}, "
            f"since {info.get('since')})")


def acquire(journal: Path) -> int:
    """Hold the journal's lock (returns its generation: a new one each time the lock is taken).
    Raises JournalBusy naming the holder when another live process has it."""
    global _generation
    held = _HELD.get(_key(journal))
    if held:
        return held[1]
    private_dir(journal.parent)
    path = lock_path(journal)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 4096, 0).decode(errors="replace")
            os.close(fd)
            try:
                who = describe_holder(json.loads(text))
            except ValueError:
                who = "a process that has not named itself yet"
            raise JournalBusy(f"{journal} is in use by {who}: one controller per testbed; wait for it, "
                              f"or stop it and run `hostnet restore`") from None
        try:  # a holder that finished may have removed the file between our open and flock
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    os.fchmod(fd, FILE_MODE)
    data = json.dumps(_me()).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    _generation += 1
    _HELD[_key(journal)] = (fd, _generation)
    return _generation


def generation(journal: Path) -> int | None:
    """The generation of this process's hold on the lock, None when it does not hold it."""
    held = _HELD.get(_key(journal))
    return held[1] if held else None


def release(journal: Path, remove: bool = False) -> None:
    """Let the lock go; remove: delete the lock file too (the journal is gone), while still held."""
    held = _HELD.pop(_key(journal), None)
    if held is None:
        return
    if remove:
        lock_path(journal).unlink(missing_ok=True)
    os.close(held[0])


def held_elsewhere(journal: Path) -> dict | None:
    """The holder when another live process holds the journal, else None."""
    if _key(journal) in _HELD:
        return None
    path = lock_path(journal)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return json.loads(os.pread(fd, 4096, 0).decode(errors="replace"))
            except ValueError:
                return {"pid": None}
        return None
    finally:
        os.close(fd)


def in_use(journal: Path) -> bool:
    """Held by a live process: this one or another."""
    return _key(journal) in _HELD or held_elsewhere(journal) is not None
