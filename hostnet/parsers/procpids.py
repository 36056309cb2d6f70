"""Per-process CPU time from /proc/<pid>/stat, for the load fingerprint."""
from __future__ import annotations

from . import ParseError


def parse_pid_stat(text: str, source: str = "/proc/pid/stat") -> tuple[int, str, int, int]:
    """-> (pid, comm, ppid, utime+stime ticks). comm may contain spaces and parentheses."""
    try:
        pid = int(text[: text.index(" ")])
        comm = text[text.index("(") + 1: text.rindex(")")]
        rest = text[text.rindex(")") + 2:].split()
        return pid, comm, int(rest[1]), int(rest[11]) + int(rest[12])
    except (ValueError, IndexError) as exc:
        raise ParseError(source, f"not a /proc/<pid>/stat line: {text[:60]!r}") from exc


def parse_snapshot(text: str, source: str = "pids.txt") -> dict[int, tuple[str, int, int]]:
    """A snapshot is one /proc/<pid>/stat line per process -> {pid: (comm, ppid, ticks)}."""
    out = {}
    for line in text.splitlines():
        if line.strip():
            pid, comm, ppid, ticks = parse_pid_stat(line, source)
            out[pid] = (comm, ppid, ticks)
    return out
