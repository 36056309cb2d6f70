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
    with pytest.raises(ParseError, match=r"r.txt:3: perf report: Error: The empty.data data has no samples!"):
        parse_perf_report(fixture_text("perf_report_empty.txt"), "r.txt")
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


REPORT = "perf_report_all-opts.txt"


def _rows_cut(text: str, keep: int) -> str:
    """The report with only its first `keep` rows (and nothing after: no closing tip)."""
    lines = text.splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith("#"))
    return "".join(lines[:first + keep])


@pytest.mark.parametrize("text, match", [
    ("", ": no sample rows"),
    (_rows_cut(fixture_text(REPORT), 0), ": no sample rows .header only"),
    (_rows_cut(fixture_text(REPORT), 40), ": no closing '# \\(...\\)' line after the rows: cut short"),
    (fixture_text(REPORT).replace(" 873        \t", " 837        \t"), ":10: 837 samples of 3115 is 26.870 %, "
                                                                      "not the 27.71 % printed"),
    (fixture_text(REPORT).replace("[k] _copy_from_iter", "[j] _copy_from_iter"), ":10: .* lacks a \\[k\\]/\\[.\\]"),
    (fixture_text(REPORT).replace("# Samples: 3K of event 'cpu-clock'",
                                  "# Samples: 3K of event 'cpu-clock'\n# Samples: 1K of event 'cycles'"),
     ":7: more than one event"),
])
def test_perf_report_empty_header_only_cut_or_damaged_raises(text, match):
    """An empty table where samples were expected, or a report missing rows, is an error."""
    with pytest.raises(ParseError, match="r.txt" + match):
        parse_perf_report(text, "r.txt")


def test_perf_header_damaged_or_cut():
    from hostnet.parsers.perf_report import parse_perf_header
    text = fixture_text("perf_header_1s.txt")
    with pytest.raises(ParseError, match=r"1000.145 ms apart, not the 1000.1 ms"):
        parse_perf_header(text.replace("1000.145 ms", "1000.1 ms"))
    with pytest.raises(ParseError, match="no closing '# ========' line"):
        parse_perf_header(text[:text.index("# sample duration")])
    with pytest.raises(ParseError, match=r":23: not a time"):
        parse_perf_header(text.replace("466.169200", "nan"))
