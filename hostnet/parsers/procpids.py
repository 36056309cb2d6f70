"""Per-process CPU time from /proc/<pid>/stat, for the load fingerprint."""
from __future__ import annotations

from . import ParseError, is_count, require_complete

_MIN_FIELDS = 15  # state .. stime: the fields after "(comm)" up to the ones read here


def parse_pid_stat(text: str, source: str = "/proc/pid/stat", line: int | None = None) -> tuple[int, str, int, int]:
    """-> (pid, comm, ppid, utime+stime ticks). comm may contain spaces and parentheses."""
    pid_text, _, after_pid = text.partition(" (")
    comm, close, after_comm = after_pid.rpartition(") ")
    rest = after_comm.split()
    if not (is_count(pid_text) and close and len(rest) >= _MIN_FIELDS and all(is_count(rest[i]) for i in (1, 11, 12))):
        raise ParseError(source, f"not a /proc/<pid>/stat line: {text[:60]!r}", line)
    if int(pid_text) == 0:
        raise ParseError(source, f"pid 0 is not a process: {text[:60]!r}", line)
    return int(pid_text), comm, int(rest[1]), int(rest[11]) + int(rest[12])


def parse_snapshot(text: str, source: str = "pids.txt") -> dict[int, tuple[str, int, int]]:
    """A snapshot is one /proc/<pid>/stat line per process -> {pid: (comm, ppid, ticks)}. Every
    line has the kernel's number of fields: one with fewer was cut short. Empty text raises: a
    machine always runs processes (at least the one that took the snapshot)."""
    require_complete(text, source)
    out = {}
    width = None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        pid, comm, ppid, ticks = parse_pid_stat(line, source, n)
        fields = len(line.rpartition(") ")[2].split())
        if fields != (width or fields):
            raise ParseError(source, f"{fields} fields after the command where the lines above have {width}: "
                                     "cut short?", n)
        width = fields
        if pid in out:
            raise ParseError(source, f"pid {pid} appears twice", n)
        out[pid] = (comm, ppid, ticks)
    return out


def cpu_ticks_used(before: dict[int, tuple[str, int, int]], after: dict[int, tuple[str, int, int]],
                   source: str = "pids") -> dict[int, tuple[str, int]]:
    """{pid: (comm, ticks used between the snapshots)} for the processes of `after`. A pid in
    both with the same command and parent is the same process, and its CPU time cannot go down
    (swapped snapshots raise); a pid whose command or parent changed was reused by a new
    process, counted from zero like one that started in the window."""
    out, down = {}, []
    for pid, (comm, ppid, ticks) in after.items():
        old = before.get(pid)
        same = old is not None and old[:2] == (comm, ppid)
        used = ticks - old[2] if same else ticks
        if used < 0:
            down.append(f"{comm} (pid {pid}) {old[2]} -> {ticks}")
        out[pid] = (comm, used)
    if down:
        raise ParseError(source, f"CPU time went down between the snapshots (swapped?): {'; '.join(down[:3])}")
    return out
