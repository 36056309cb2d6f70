"""`perf report --stdio` in any of perf's column layouts, for a profile a researcher brings (hostnet's own
tab-separated --sort cpu,comm,sym is perf_report.py's): children or not, call graphs or not, aligned over
a dotted line or separated by -t SEP, any --sort of cpu, comm, pid, dso, sym; -n or not. One row per
entry with its self share; damaged or unrecognised input raises ParseError naming the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import ParseError, is_count
from .perf_default import NO_CPU


@dataclass(frozen=True)
class ReportRow:
    cpu: int            # NO_CPU without a CPU column
    comm: str | None    # None without a Command column
    dso: str | None
    symbol: str
    kernel: bool
    self_pct: float     # % of all samples with this row as the leaf (Overhead, or Self with children)
    samples: int | None  # the Samples column (-n), where present
    period: int | None = None  # the Period column (--show-total-period): the event's count, where present


@dataclass
class ReportProfile:
    rows: list[ReportRow]
    columns: list[str]
    event: str | None
    event_count: int | None
    children: bool
    call_graph: bool
    notes: list[str] = field(default_factory=list)


_COLUMNS = {"Overhead", "Children", "Self", "Samples", "Period", "CPU", "Command", "Pid:Command", "Shared Object",
            "Symbol"}
# Columns that carry no samples, read and ignored: perf adds "IPC [IPC Coverage]" after a `symbol`
# sort key (it holds "-" without branch records, cycle counts with them).
_IGNORED = re.compile(r"^IPC(\s+\[IPC Coverage\])?$")
_DOTS = re.compile(r"^#( +\.+)+ *$")
_PCT = re.compile(r"^\s*\d+\.\d+%$")
_FOLDED_CHAIN = re.compile(r"^\d+\.\d+% \S")
_MARKERS = {"[k]": True, "[.]": False}  # guest ([g], [u]) and hypervisor ([H]) samples are not a host's
_EVENT = re.compile(r"^# Samples: (?P<samples>\S+)\s+of event '(?P<event>[^']*)'")
_EVENT_COUNT = re.compile(r"^# Event count \(approx\.\): (?P<count>\d+)")
_HEADER = re.compile(r"^# (Overhead|Children)\b")
_NAME = re.compile("|".join(re.escape(c) for c in sorted(_COLUMNS, key=len, reverse=True)) + "|IPC")


def report_events(text: str) -> list[tuple[str, str, int]]:
    """The events of a perf report, in order: (event, samples as printed, line of its "# Samples:")."""
    return [(m["event"], m["samples"], n) for n, line in enumerate(text.splitlines(), 1)
            if (m := _EVENT.match(line))]


def one_event(text: str, source: str, event: str | None) -> str:
    """A perf report of one event: `event`'s section of a report of several (perf record -e A -e B
    prints one section each; their shares do not add up), the report itself when it has one."""
    events = report_events(text)
    named = ", ".join(f"{e} ({k} samples)" for e, k, _ in events)
    if event is None:
        if len(events) > 1:
            raise ParseError(source, f"a report of {len(events)} events, {named}: their shares do not add up; "
                                     f"break down one with --event NAME", events[1][2])
        return text
    if event not in [e for e, _, _ in events]:
        raise ParseError(source, f"no samples of event {event!r}; the report has {named or 'no event line'}")
    lines = text.splitlines()
    starts = [n for _, _, n in events]
    i = [e for e, _, _ in events].index(event)
    end = starts[i + 1] - 1 if i + 1 < len(starts) else len(lines)
    section = lines[starts[i] - 1:end]
    closing = [ln for ln in lines if re.match(r"^# \(.*\)$", ln)][-1:]  # perf closes the whole report once
    if any(re.match(r"^# \(.*\)$", ln) for ln in section):
        closing = []
    return "\n".join(lines[:starts[0] - 1] + section + closing) + "\n"


def parse_report_stdio(text: str, source: str = "perf report") -> ReportProfile:
    """`perf report --stdio` in perf's own layout -> one row per entry with its self share.

    Either layout perf prints: columns aligned over a dotted line (the default; cut where the dots
    put them), or separated by `-t SEP` (no dotted line; a row with more fields than the header
    holds the separator inside a value, e.g. a C++ symbol with `-t ,`, and raises). Columns that
    carry no samples (IPC) are ignored; any other column hostnet does not read is refused, since
    it could change what a row counts. Call-graph lines under an entry (children or -g) are
    skipped: perf prunes them (0.5 % by default), so they cannot give every sample's stack. Rows
    missing (a cut file) show as self shares that do not add up to 100 %, and raise."""
    lines = text.splitlines()
    layout, columns, header_at = None, [], 0
    event = event_count = None
    rows: list[ReportRow] = []
    call_graph = trailer = False
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            if rows and re.match(r"^# \(.*\)$", line):
                trailer = True
            if m := _EVENT.match(line):
                if event is not None and rows:
                    raise ParseError(source, "more than one event in the report: report one (perf report --event)", n)
                event = m["event"]
            elif m := _EVENT_COUNT.match(line):
                event_count = int(m["count"])
            elif _DOTS.match(line):
                layout = _Spans(line, lines[n - 2] if n >= 2 else "")
            elif _HEADER.match(line) and not (n < len(lines) and _DOTS.match(lines[n])):
                layout = _Fields(line, source, n)
            if layout is not None and not columns:
                columns = layout.columns
                _check_columns(columns, source, n - 1 if isinstance(layout, _Spans) else n)
                header_at = n
            continue
        if not line.strip():
            continue
        if line.startswith("Error:") or "has no samples" in line:
            raise ParseError(source, "perf report: " + line.strip()[:200], n)
        if trailer:
            raise ParseError(source, "a row after the closing '# (...)' line", n)
        if layout is None:
            raise ParseError(source, "no column header ('# Overhead ...' over a dotted line): is this perf report "
                                     "--stdio output?", n)
        cells = layout.cells(line, source, n)
        if cells is None:
            # a call-graph line under the entry above: indented past the first column (graph, flat,
            # caller, callee), or "pct% frame;frame;..." at the margin (-g folded)
            if layout.first(line).strip() and not _FOLDED_CHAIN.match(line):
                raise ParseError(source, f"neither a row nor a call-graph line: {line.strip()[:80]!r}", n)
            call_graph = True
            continue
        rows.append(_report_row(cells, source, n))
    if layout is None:
        raise ParseError(source, "no column header ('# Overhead ...' over a dotted line): is this perf report "
                                 "--stdio output?")
    if not rows:
        raise ParseError(source, "no sample rows (header only: an empty or cut report?)", header_at)
    if not trailer:
        raise ParseError(source, "no closing '# (...)' line after the rows (perf report --stdio ends with one): "
                                 "cut short?")
    total = sum(r.self_pct for r in rows)
    slack = 0.005 * len(rows) + 0.01  # each printed share is rounded to 0.01 %
    if abs(total - 100.0) > slack:
        raise ParseError(source, f"the rows' self shares add up to {total:.2f} %, not 100 %: rows missing (cut short, "
                                 "or --percent-limit)?")
    return ReportProfile(rows, [c for c in columns if not _IGNORED.match(c)], event, event_count,
                         "Children" in columns, call_graph)


def _check_columns(columns: list[str], source: str, n: int) -> None:
    unknown = [c for c in columns if c not in _COLUMNS and not _IGNORED.match(c)]
    if unknown:
        raise ParseError(source, f"columns {unknown} are not read (sort by cpu, comm, pid, dso, sym)", n)
    if "Symbol" not in columns or not {"Overhead", "Self"} & set(columns):
        raise ParseError(source, "the report needs an Overhead (or Self) and a Symbol column", n)


class _Spans:
    """perf's default layout: each column where the dotted line under the header puts it."""

    def __init__(self, dots: str, header: str):
        self.spans = [(m.start(), m.end()) for m in re.finditer(r"\.+", dots)]
        self.ends = [s for s, _ in self.spans[1:]] + [None]
        self.columns = [header[s:e].strip() for (s, _), e in zip(self.spans, self.ends, strict=True)]

    def first(self, line: str) -> str:
        return line[:self.spans[0][1]]

    def cells(self, line: str, source: str, n: int) -> dict | None:
        """The row's cells by column, None for a call-graph line."""
        end = self.spans[0][1]
        if not _PCT.match(line[:end]) or line[end:end + 2].strip():
            return None
        return {c: line[s:e].strip() for c, (s, _), e in zip(self.columns, self.spans, self.ends, strict=True)}


class _Fields:
    """`perf report -t SEP`: the header and every row split on SEP (read from the header: what
    stands between its first column name and the next)."""

    def __init__(self, header: str, source: str, n: int):
        body = header[2:]
        first = _HEADER.match(header)[1]
        nxt = _NAME.search(body, len(first))
        sep = body[len(first):nxt.start()].strip(" ") if nxt else ""
        if not sep:
            raise ParseError(source, "a report header with one column, or columns separated by spaces only "
                                     "(-t ' '): the fields cannot be told apart", n)
        self.sep = sep
        self.columns = [c.strip() for c in body.split(sep)]

    def first(self, line: str) -> str:
        return line.split(self.sep, 1)[0]

    def cells(self, line: str, source: str, n: int) -> dict | None:
        fields = line.split(self.sep)
        if not _PCT.match(fields[0].strip()):
            return None
        if len(fields) != len(self.columns):
            raise ParseError(source, f"{len(fields)} fields where the header has {len(self.columns)}: a value holds "
                                     f"the separator {self.sep!r} (a symbol?); use another perf report -t", n)
        return {c: f.strip() for c, f in zip(self.columns, fields, strict=True)}


_SHARE = re.compile(r"\d+\.\d+%")  # compiled once: a row's check


def _report_row(cells: dict, source: str, n: int) -> ReportRow:
    share = cells.get("Self", cells.get("Overhead", ""))
    if not _SHARE.fullmatch(share):
        raise ParseError(source, f"bad overhead {share!r}", n)
    marker, _, name = cells["Symbol"].partition(" ")
    if marker not in _MARKERS or not name.strip():
        raise ParseError(source, f"symbol column {cells['Symbol'][:60]!r} lacks a [k]/[.] marker and a name", n)
    cpu, comm = NO_CPU, None
    if "CPU" in cells:
        if not is_count(cells["CPU"]):
            raise ParseError(source, f"bad CPU {cells['CPU']!r}", n)
        cpu = int(cells["CPU"])
    if "Command" in cells:
        comm = cells["Command"]
    elif "Pid:Command" in cells:
        pid, _, comm = cells["Pid:Command"].partition(":")
        if not is_count(pid.strip()):
            raise ParseError(source, f"bad pid:command {cells['Pid:Command']!r}", n)
    if comm == "":
        raise ParseError(source, "an empty command", n)
    samples = None
    if "Samples" in cells:
        if not is_count(cells["Samples"]):
            raise ParseError(source, f"bad sample count {cells['Samples']!r}", n)
        samples = int(cells["Samples"])
    period = None
    if "Period" in cells:
        if not is_count(cells["Period"]):
            raise ParseError(source, f"bad period {cells['Period']!r}", n)
        period = int(cells["Period"])
    return ReportRow(cpu, comm, cells.get("Shared Object"), name.strip(), _MARKERS[marker], float(share[:-1]), samples,
                     period)
