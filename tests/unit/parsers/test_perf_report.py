"""perf report (hostnet.parsers.perf_report) on captured output, empty and garbage input."""
import pytest

from conftest import fixture_text
from hostnet.parsers import ParseError
from hostnet.parsers.perf_report import parse_perf_report


def test_perf_report_captured():
    rows = parse_perf_report(fixture_text("perf_report_all-opts.txt"))
    assert {r.cpu for r in rows} == {0, 1}
    syms = {(r.cpu, r.symbol) for r in rows}
    assert (0, "_copy_from_iter") in syms  # sender copies from user
    assert any(s == "_copy_to_iter" for _, s in syms)  # receiver copies to user
    assert all(r.samples > 0 for r in rows)
    assert any(not r.kernel for r in rows) and any(r.kernel for r in rows)
    assert any(r.comm == "iperf3" for r in rows)


def test_perf_report_empty_and_garbage():
    assert parse_perf_report(fixture_text("perf_report_empty.txt")) == []
    with pytest.raises(ParseError, match="r.txt:2"):
        parse_perf_report("# Overhead\n 1.0%\t3\t000\n", "r.txt")
    with pytest.raises(ParseError, match="header"):
        parse_perf_report("hello world\n")


def test_perf_header_gives_the_span_perf_sampled():
    from hostnet.parsers.perf_report import parse_perf_header
    h = parse_perf_header(fixture_text("perf_header_1s.txt"))
    assert h["duration_s"] == pytest.approx(1.000145, abs=1e-6)  # `perf record -- sleep 1`
    with pytest.raises(ParseError, match="first/last sample"):
        parse_perf_header("# captured on : today\n")
