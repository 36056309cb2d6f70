"""The journal on disk: JSON lines, each fsynced before the setting changes, on the controller
(0600 in a 0700 directory) and, for real servers, on the host itself (HOST_DIR, root only).

A line cut short by a crash or a full disk belongs to a setting that was never changed (the knob
is written only after its line is on disk); the next append cuts it off instead of gluing itself
onto it. Any other unreadable line is a problem for the restore to report, never an exception.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..hosts import Host, HostError
from .journal_lock import FILE_MODE, private_dir

# Persistent (not tmpfs like /run) and root-only: a host's own copy survives the controller's reboot.
HOST_DIR = "/var/lib/hostnet/journal"
FIELDS = ("host", "knob", "key", "prior")
# A constant script; the directory, the file and the line arrive as arguments (never parsed by a shell).
# As append_line does on the controller, a torn last line (the file does not end in a newline: a
# crash or a full disk mid-append) is cut off first, so the new line is not glued onto it.
_APPEND = ('umask 077 && mkdir -p "$1" && chmod 700 "$1" '
           '&& { [ ! -s "$2" ] || [ -z "$(tail -c 1 "$2")" ] || sed -i \'$d\' "$2"; } '
           '&& printf "%s\\n" "$3" >> "$2" && chmod 600 "$2" && sync "$2" "$1"')


def parse_lines(text: str, where: str) -> tuple[list[dict], list[str]]:
    """Journal text -> (entries, problems). A torn last line (no newline, not JSON) is skipped:
    its setting was never changed. Any other bad line is reported and the rest still read."""
    entries, problems = [], []
    lines = text.split("\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines):  # no newline after it: cut short while being written
                continue
            problems.append(f"{where} line {i} is not a journal entry ({line[:80]!r}); its setting, if any, "
                            f"was not restored")
            continue
        if not isinstance(entry, dict) or any(f not in entry for f in FIELDS) or not isinstance(entry["host"], dict):
            problems.append(f"{where} line {i} lacks {', '.join(FIELDS)}: {line[:80]!r}")
            continue
        entries.append(entry)
    return entries, problems


def read_journal(path: Path) -> tuple[list[dict], list[str]]:
    """The controller's copy: (entries, problems); no file: nothing."""
    try:
        text = path.read_bytes().decode(errors="replace")
    except FileNotFoundError:
        return [], []
    return parse_lines(text, str(path))


def _cut_torn_tail(fd: int) -> None:
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    data = os.pread(fd, size, 0)
    os.ftruncate(fd, data.rfind(b"\n") + 1)


def append_line(path: Path, entry: dict) -> None:
    """Append one entry and fsync it (and the directory when the file is new) before returning."""
    private_dir(path.parent)
    new = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        _cut_torn_tail(fd)
        data = (json.dumps(entry, sort_keys=True) + "\n").encode()
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)
    if new:
        dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def host_copy(journal: Path) -> str:
    """Where a host keeps its own copy of a testbed's journal."""
    return f"{HOST_DIR}/{journal.name}"


def append_on_host(host: Host, journal: Path, entry: dict) -> None:
    host.run(["sh", "-c", _APPEND, "sh", HOST_DIR, host_copy(journal), json.dumps(entry, sort_keys=True)])


def read_on_host(host: Host, journal: Path) -> tuple[list[dict], list[str]] | None:
    """The host's own copy: (entries, problems), or None when the host has none."""
    path = host_copy(journal)
    res = host.run(["sh", "-c", 'if [ -e "$1" ]; then cat "$1"; else exit 3; fi', "sh", path], check=False)
    if res.returncode == 3:
        return None
    if res.returncode != 0:
        raise HostError(f"{host.name}: cannot read {path}: {res.stderr.strip()}")
    return parse_lines(res.stdout, f"{host.name}:{path}")


def delete_on_host(host: Host, journal: Path) -> None:
    host.run(["rm", "-f", host_copy(journal)])
