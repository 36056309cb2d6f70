"""/proc/<pid>/stat (hostnet.parsers.procpids): a comm with spaces and parentheses, a captured snapshot."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.procpids import parse_pid_stat, parse_snapshot


def test_pid_stat_with_spaces_in_comm():
    pid, comm, ppid, ticks = parse_pid_stat("42 (a (b) c) S 7 1 1 0 -1 0 0 0 0 0 11 13 0 0 20 0 1 0")
    assert (pid, comm, ppid, ticks) == (42, "a (b) c", 7, 24)
    snap = parse_snapshot(fixture_text("pids_before.txt"))
    assert 1 in snap and len(snap) > 20
    with pytest.raises(ParseError):
        parse_pid_stat("garbage")


def test_a_snapshot_line_cut_short_or_repeated_raises():
    text = fixture_text("pids_before.txt")
    lines = text.splitlines(keepends=True)
    cut = lines[0] + lines[1][:120] + "\n" + "".join(lines[2:])
    with pytest.raises(ParseError, match=r"pids.txt:2: .*cut short"):
        parse_snapshot(cut, "pids.txt")
    with pytest.raises(ParseError, match=r"pids.txt:3: pid \d+ appears twice"):
        parse_snapshot(lines[0] + lines[1] + lines[0], "pids.txt")
    with pytest.raises(ParseError, match=r"pids.txt:\d+: the last line has no newline"):
        parse_snapshot(text.rstrip("\n"), "pids.txt")


def test_an_empty_snapshot_raises():
    """A machine always runs processes (at least the shell that took the snapshot)."""
    with pytest.raises(ParseError, match=r"pids.txt: empty"):
        parse_snapshot("", "pids.txt")
