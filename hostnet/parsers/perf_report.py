"""`perf report --stdio --no-children --sort cpu,comm,sym -n -g none -t TAB` output."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError, is_count

PERF_REPORT_ARGS = ["report", "--stdio", "--no-children", "--sort", "cpu,comm,sym", "-n",
                    "-g", "none", "--percent-limit", "0", "-t", "\t"]


@dataclass(frozen=True)
class SymbolSamples:
    cpu: int
    comm: str
    symbol: str
    kernel: bool
    samples: int


# cpu-clock and task-clock sample at a fixed period even with -F, so a row's overhead is its share
# of the samples; other events' periods vary, and their overhead is not checked against the counts.
FIXED_PERIOD_EVENTS = ("cpu-clock", "task-clock")
_EVENT = re.compile(r"^# Samples: \S+ of event '(?P<event>[^']*)'")
_TRAILER = re.compile(r"^# \(.*\)$")  # perf report's closing "# (Tip: ...)", after the last row
_MARKERS = {"[k": True, "[.": False}    # kernel, user; guest ([g], [u]) and hypervisor ([H]) are not ours


def parse_perf_report(text: str, source: str = "perf_report.txt") -> list[SymbolSamples]:
    """One record per (cpu, comm, symbol). A report with no samples, perf's own error, or one cut
    short (perf report ends with a "# (...)" line after the last row) raises."""
    rows: list[SymbolSamples] = []
    overheads: list[tuple[float, int, int]] = []  # (printed %, samples, line) for the check below
    header_seen, event, trailer = False, None, None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            header_seen = header_seen or "Overhead" in line
            if m := _EVENT.match(line):
                if event is not None:
                    raise ParseError(source, "more than one event in the report (record one event)", n)
                event = m["event"]
            if rows and _TRAILER.match(line):
                trailer = n
            continue
        if line.startswith("Error:") or "has no samples" in line:
            raise ParseError(source, "perf report: " + " ".join(text[text.index(line):].split())[:200], n)
        if not header_seen:
            raise ParseError(source, "no perf report header; is this perf report --stdio output?", n)
        if trailer is not None:
            raise ParseError(source, "a row after the closing '# (...)' line", n)
        row, pct = _row(line, source, n)
        rows.append(row)
        overheads.append((pct, row.samples, n))
    if not rows:
        raise ParseError(source, "no sample rows (header only: an empty or cut report?)")
    if trailer is None:
        raise ParseError(source, "no closing '# (...)' line after the rows: cut short?")
    if event in FIXED_PERIOD_EVENTS:
        _check_overheads(overheads, source)
    return rows


_NO_CPU = ("-001", "-1")
_OVERHEAD = re.compile(r"\d+\.\d+%")  # compiled once: a row's check


def _row(line: str, source: str, n: int) -> tuple[SymbolSamples, float]:
    parts = [p.strip() for p in line.split("\t")]
    if len(parts) < 5:
        raise ParseError(source, f"expected 5 tab-separated fields, got {len(parts)}", n)
    pct, samples, cpu, comm, sym = parts[:5]
    marker, _, name = sym.partition("] ")
    if marker not in _MARKERS or not name.strip():
        raise ParseError(source, f"symbol column {sym!r} lacks a [k]/[.] marker and a name", n)
    if cpu in _NO_CPU:  # perf's mark for a recording without CPUs (perf record without -a or -C)
        cpu = "-1"
    elif not is_count(cpu):
        raise ParseError(source, f"bad CPU {cpu!r} in {line.strip()[:100]!r}", n)
    if not (_OVERHEAD.fullmatch(pct) and is_count(samples) and comm):
        raise ParseError(source, f"bad overhead, sample count, CPU or command in {line.strip()[:100]!r}", n)
    if int(samples) <= 0:
        raise ParseError(source, f"a row with {samples} samples", n)
    return SymbolSamples(int(cpu), comm, name.strip(), _MARKERS[marker], int(samples)), float(pct[:-1])


def _check_overheads(overheads: list[tuple[float, int, int]], source: str) -> None:
    """Each row's printed overhead (2 decimals) is its share of all samples: a row lost or a
    count damaged shows here."""
    total = sum(samples for _, samples, _ in overheads)
    for pct, samples, n in overheads:
        if abs(pct - 100.0 * samples / total) > 0.0051:
            raise ParseError(source, f"{samples} samples of {total} is {100.0 * samples / total:.3f} %, "
                                     f"not the {pct:.2f} % printed: rows missing or damaged?", n)


PERF_HEADER_ARGS = ["report", "--header-only"]


def parse_perf_header(text: str, source: str = "perf_header.txt") -> dict[str, float]:
    """`perf report --header-only` -> {"first_sample_s", "last_sample_s", "duration_s"}: the span
    perf sampled, which sampling coverage divides by (perf runs a little longer than the window).
    The header is framed by "# ========" lines; the span agrees with perf's "sample duration"."""
    out, printed_ms = {}, None
    for n, line in enumerate(text.splitlines(), 1):
        key, _, value = line.lstrip("# ").partition(":")
        key = key.strip()
        if key in ("time of first sample", "time of last sample", "sample duration"):
            number = value.strip().removesuffix(" ms").strip()
            if not re.fullmatch(r"\d+(\.\d+)?", number):
                raise ParseError(source, f"not a time: {line.strip()!r}", n)
            if key == "sample duration":
                printed_ms = float(number)
            else:
                out["first_sample_s" if "first" in key else "last_sample_s"] = float(number)
    if set(out) != {"first_sample_s", "last_sample_s"}:
        raise ParseError(source, "no 'time of first/last sample' lines (was perf.data empty?)")
    if text.startswith("# ========") and text.count("# ========") < 2:
        raise ParseError(source, "no closing '# ========' line: cut short?")
    if out["last_sample_s"] < out["first_sample_s"]:
        raise ParseError(source, "the last sample is older than the first")
    out["duration_s"] = out["last_sample_s"] - out["first_sample_s"]
    if printed_ms is not None and abs(out["duration_s"] * 1e3 - printed_ms) > 0.002:
        raise ParseError(source, f"first and last sample are {out['duration_s'] * 1e3:.3f} ms apart, "
                                 f"not the {printed_ms} ms perf printed")
    return out
