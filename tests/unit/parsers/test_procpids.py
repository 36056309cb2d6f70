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
