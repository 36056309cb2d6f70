"""perf bench (hostnet.parsers.perfbench): syscall and memcpy on captured output, and errors."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.perfbench import parse_memcpy, parse_syscall_basic


def test_perf_bench_syscall():
    r = parse_syscall_basic(fixture_text("perf_bench_syscall_basic.txt"))
    assert r.calls == 1_000_000 and r.usec_per_op == pytest.approx(0.146702) and r.ops_per_s == 6816539


def test_perf_bench_memcpy_every_function_in_bytes():
    rs = parse_memcpy(fixture_text("perf_bench_memcpy_all.txt"))
    assert [r.function for r in rs] == ["default", "x86-64-unrolled", "x86-64-movsq", "x86-64-movsb"]
    assert rs[0].size == "1MB" and rs[0].bytes_per_s == pytest.approx(36.712876 * 2**30)
    assert parse_memcpy(fixture_text("perf_bench_memcpy_64KB.txt"))[0].size == "64KB"


def test_perf_bench_errors():
    with pytest.raises(ParseError, match="Unknown benchmark: 'nosuch'"):
        parse_syscall_basic(fixture_text("perf_bench_unknown.txt"))
    with pytest.raises(ParseError, match="no bandwidth"):
        parse_memcpy(fixture_text("perf_bench_syscall_basic.txt"))
    with pytest.raises(ParseError, match="usecs/op"):
        parse_syscall_basic(fixture_text("perf_bench_memcpy_all.txt"))


def test_perf_bench_cut_or_damaged():
    syscall = fixture_text("perf_bench_syscall_basic.txt")
    with pytest.raises(ParseError, match="0.146702 usecs/op and 6816 ops/sec"):
        parse_syscall_basic(syscall.replace("6816539 ops/sec", "6816 ops/sec"))
    with pytest.raises(ParseError, match="usecs/op"):
        parse_syscall_basic(syscall[:syscall.index("ops/sec") - 2])  # cut inside ops/sec's number
    memcpy = fixture_text("perf_bench_memcpy_all.txt")
    with pytest.raises(ParseError, match=r"function 'x86-64-movsb' has no bandwidth line \(cut short"):
        parse_memcpy(memcpy[:memcpy.rindex("4.153818")])
    with pytest.raises(ParseError, match=r":2: function 'default' has no bandwidth line"):
        parse_memcpy(memcpy.replace("36.712876 GB/sec", "36.712876 GB/se"))
