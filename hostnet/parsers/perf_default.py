"""perf output in the formats hostnet did not ask for: a profile a researcher brings.

- `perf script` with its default fields ("comm tid [cpu] time: period event:", frames as
  "address symbol+offset (dso)"), or with -F leaving out the time, the CPU or the period, pid/tid
  or tid (perf 3.x onwards); a frame is kernel or user by its DSO (kernel_dso), by its address
  only where perf printed none;
- `perf report --stdio` with any of perf's column layouts (children or not, call graphs or not,
  any --sort of cpu, comm, pid, dso, sym; -n or not): the self overhead per row;
- folded stacks from Brendan Gregg's stackcollapse-perf.pl ("comm;root;...;leaf count", with
  --kernel's "_[k]" and --pid's "-PID" if used).

Samples come out as hostnet's own (perf_script.Sample: frames leaf first, user-space frames
with "_[u]"), so the taxonomy and the attribution rule read them as they read a run's. A frame
perf could not name is called after its DSO as stackcollapse-perf.pl does ("[libc.so.6]", else
"[unknown]"). Like every parser here: damaged or unrecognised input raises ParseError naming the
line; nothing is guessed.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from . import ParseError, is_count, require_complete
from .perf_script import KERNEL_BASE, USER, Sample

NO_CPU = -1  # the input has no CPU field: every sample is on this pseudo-CPU

# comm may contain spaces; pid/tid or tid; CPU only when recorded; the time unless -F left it out
# (perf 3.x with `record -p`, -F comm,tid,cpu,event,...); the period is printed since perf 4.x
_HEAD = re.compile(r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?\s+(?:\[(?P<cpu>\d+)\]\s+)?"
                   r"(?:(?P<time>\d+\.\d+):\s+)?(?:(?P<period>\d+)\s+)?(?P<event>[^\s:]\S*?):"
                   r"(?:\s+(?P<ip>[0-9a-f]+\s+\S.*\))?|\s+.*)?\s*$")
_FRAME = re.compile(r"^\s+(?P<addr>[0-9a-f]+)\s+(?P<rest>\S.*)$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")
_RELEASE = re.compile(r"^# os release : (?P<release>\S+)")


@dataclass
class ScriptProfile:
    samples: Counter  # Sample -> count
    periods: Counter  # Sample -> summed period (what stackcollapse-perf.pl counts)
    event: str
    has_cpu: bool
    release: str | None  # from `perf script --header`'s "# os release", where present
    by_address: int = 0  # frames without a DSO ("[unknown]"), called kernel or user by their address
    without_period: int = 0  # samples whose header printed no period (-F without period, perf 3.x)
    period_gcd: int = 1  # the greatest common divisor of the samples' periods
    one_period: bool = True  # every sample printed the same period (a fixed-period event)
    chains: bool = True  # the samples have call chains (perf record -g)


def parse_script_default(lines: Iterable[str], source: str = "perf script", event: str | None = None) -> ScriptProfile:
    """Default `perf script` text -> samples counted (and their periods summed) per stack; with
    `event`, that event's samples only (a text of several events is refused without it)."""
    samples: Counter = Counter()
    periods: Counter = Counter()
    meta: dict = {}
    gcd, first, one = 0, None, True
    for sample, period in script_samples(lines, source, meta, event):
        samples[sample] += 1
        periods[sample] += period
        gcd = math.gcd(gcd, period)
        first = period if first is None else first
        one = one and period == first
    if not samples:
        if event is not None and meta.get("events"):
            raise ParseError(source, f"no samples of event {event!r}; the text has {_events(meta['events'])}")
        raise ParseError(source, "no samples (not perf script output, or perf.data was empty)")
    return ScriptProfile(samples, periods, meta["event"], meta["has_cpu"], meta.get("release"),
                         meta.get("by_address", 0), meta.get("without_period", 0), gcd or 1, one,
                         bool(meta.get("chains")))


def _events(events: Counter) -> str:
    return ", ".join(f"{e} ({n:,} samples)" for e, n in events.most_common())


def script_samples(lines: Iterable[str], source: str = "perf script", meta: dict | None = None,
                   event: str | None = None) -> Iterator[tuple[Sample, int]]:
    """(sample, period) in file order; `meta` gets the event, whether samples have a CPU, the
    kernel release where `perf script --header` printed it, and the samples per event. One event
    only: `event`'s, else the text must hold one (mixing events' samples would be a meaningless
    sum; the whole text is read to name them all). A frame outside a sample or a line that is
    neither a sample header nor a frame raises, naming the line."""
    meta = {} if meta is None else meta
    events = meta.setdefault("events", Counter())
    head, frames = None, []
    seen = skipping = mixed = in_chain = False  # in_chain: the line before was a call-chain line
    no_dso = None  # (line, n) of a frame printed without a DSO, until the next line says why
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if in_chain and line and not line.strip(" \t"):  # perf's blank line is empty: blanks alone are
            raise ParseError(source, "a line of blanks in a call chain: cut short?", n)  # a frame line cut
        if not line.strip():
            if no_dso is not None:
                raise _no_dso(source, no_dso)
            if head is not None and not skipping and not mixed:
                yield _finish(head, frames, source, meta, ended=True)
            head, frames, in_chain = None, [], False
            continue
        if line.startswith("#") and not seen:  # perf script --header
            if m := _RELEASE.match(line):
                meta["release"] = m["release"]
            continue
        if line[0] == " " and not _FRAME.match(line) and _HEAD.match(line.lstrip(" ")):
            line = line.lstrip(" ")  # a text without call chains: perf right-aligns the command
        if line[0] in " \t":
            if head is None:
                raise ParseError(source, f"stack line outside a sample: {line.strip()[:80]!r}", n)
            if line[0] == " " and _SRCLINE.match(line) and not _FRAME.match(line):
                # -F ...,srcline: "  file.c:12" (or "  [dso][addr]") under each frame, skipped as the
                # collapsers skip it; " (inlined)" at its end marks the frame above it inlined
                if line.endswith(INLINED) and no_dso is not None and not skipping:
                    frames.append(_inlined(no_dso[0], source, no_dso[1]))
                    meta["inlined"] = True
                elif no_dso is not None:
                    raise _no_dso(source, no_dso)
                no_dso = None
                continue
            if no_dso is not None:
                raise _no_dso(source, no_dso)
            in_chain = meta["chains"] = head["chained"] = True  # a srcline line is none: a text without
            if not skipping:                                      # call chains may print them too
                frame = _frame(line, source, n, meta)
                if frame == _NO_DSO:
                    no_dso = (line, n)  # inlined, if a srcline line ending in " (inlined)" follows
                else:
                    frames.append(frame)
            continue
        if no_dso is not None:
            raise _no_dso(source, no_dso)
        if in_chain:  # perf ends every call chain with a blank line
            raise ParseError(source, f"a sample header right under a call chain, with no blank line between: "
                                     f"interleaved or cut text? {line[:80]!r}", n)
        m = _HEAD.match(line)
        if not m:
            raise ParseError(source, f"not a perf script sample header (comm tid [cpu] time: period event:): "
                                     f"{line[:80]!r}", n)
        if head is not None and not skipping and not mixed:
            yield _finish(head, frames, source, meta)
        head, frames, seen = {**m.groupdict(), "line": n, "chained": False}, [], True
        events[head["event"]] += 1
        skipping = event is not None and head["event"] != event
        if skipping:
            continue
        mixed = mixed or meta.setdefault("event", head["event"]) != head["event"]
        if head["period"] is None:
            meta["without_period"] = meta.get("without_period", 0) + 1
        if meta.setdefault("has_cpu", head["cpu"] is not None) != (head["cpu"] is not None):
            raise ParseError(source, "some samples have a CPU field and some do not", n)
    if no_dso is not None:
        raise _no_dso(source, no_dso)
    if in_chain:
        raise ParseError(source, "the text ends inside a call chain (perf ends each with a blank line): cut short?", n)
    if mixed:
        raise ParseError(source, f"samples of {len(events)} events, {_events(events)}: their counts do not add up; "
                                 f"break down one with --event NAME")
    if head is not None and not skipping:
        yield _finish(head, frames, source, meta)


def _finish(head: dict, frames: list[str], source: str, meta: dict, ended: bool = False) -> tuple[Sample, int]:
    """The sample a header and its call chain make. Without a chain, the address perf printed on the
    header line ("event:  ffffffff8121 sym+0xb ([kernel.kallsyms])", perf record without -g) is its
    only frame; with one, whatever follows the event on the header (a data address with -d, a
    tracepoint's fields) is not a frame. A header with neither that a blank line ends (`ended`) is a
    sample whose call chain perf recorded empty: a frameless sample, as hostnet's own perf script
    reading keeps it (system-wide under load: one of ~2,500 samples, from a process of another's).
    One with neither that the next header or the text's end follows is refused: the text was cut
    after the header, or printed without ip (-F)."""
    if not head["chained"] and not head["ip"] and ended:
        return _sample(head, [], meta.get("inlined", False))
    if not head["chained"]:
        if not head["ip"]:
            raise ParseError(source, "a sample with neither a call chain nor an address on its header line: cut short, "
                                     "or perf script -F without ip?", head["line"])
        frame = _frame("\t" + head["ip"], source, head["line"], meta)
        if frame == _NO_DSO:
            raise _no_dso(source, (head["ip"], head["line"]))
        frames = [frame]
    return _sample(head, frames, meta.get("inlined", False))


def _no_dso(source: str, at: tuple[str, int]) -> ParseError:
    return ParseError(source, f"a frame without its '(dso)': perf script -F without dso? {at[0].strip()[:80]!r}", at[1])


def _sample(head: dict, frames: list[str], inlined: bool = False) -> tuple[Sample, int]:
    """inlined: the text has inlined frames (only then are a sample's frames looked through)."""
    cpu = int(head["cpu"]) if head["cpu"] is not None else NO_CPU
    if inlined and any(f.startswith(_PENDING) for f in frames):
        frames = _place_inlined(frames)
    return Sample(cpu, head["comm"], tuple(frames)), int(head["period"] or 1)


# An inlined frame ("<address> inner (inlined)", perf script --inline) has no DSO of its own: it is
# kernel or user as the frame it was inlined into, the next one perf prints (at the same address);
# until that is read it is kept as _PENDING + "k"/"u" (its address's side, used only when no frame
# follows) + its name.
INLINED = " (inlined)"
_NO_DSO = "\x01no dso"  # _frame's answer for a frame printed without a DSO
_PENDING = "\x00"
_SRCLINE = re.compile(r"^  \S")  # perf prints a srcline as "\n  file:line" under its frame


def _inlined(line: str, source: str, n: int) -> str:
    m = _FRAME.match(line)
    if not m:
        raise ParseError(source, f"not a stack frame (address symbol (dso)): {line.strip()[:80]!r}", n)
    rest = m["rest"].removesuffix(INLINED).rstrip()
    sym = _OFFSET.sub("", rest) or "[unknown]"
    return _PENDING + ("k" if int(m["addr"], 16) >= KERNEL_BASE else "u") + sym


def _place_inlined(frames: list[str]) -> list[str]:
    out, side = [], None
    for f in reversed(frames):  # outermost first: each inlined frame follows its container
        if f.startswith(_PENDING):
            kernel = side if side is not None else f[1] == "k"
            out.append(f[2:] if kernel else f[2:] + USER)
        else:
            side = not f.endswith(USER)
            out.append(f)
    return out[::-1]


_FRAMES_KEPT = 1 << 16  # distinct frame lines remembered (a profile repeats a few thousand of them)


def _frame(line: str, source: str, n: int, meta: dict | None = None) -> str:
    """"\t<address> <symbol>+<offset> (<dso>)" -> hostnet's frame name: kernel or user by the DSO
    perf printed (kernel_dso), by the address only where it printed none ("[unknown]"), counted in
    meta["by_address"]. A line seen before is looked up, not parsed again (meta["frames"])."""
    seen = meta.setdefault("frames", {}) if meta is not None else {}
    if (known := seen.get(line)) is not None:
        if known[1]:
            meta["by_address"] += 1
        return known[0]
    name, by_address = _parse_frame(line, source, n)
    if by_address and meta is not None:
        meta["by_address"] = meta.get("by_address", 0) + 1
    if name.startswith(_PENDING) and meta is not None:
        meta["inlined"] = True
    if len(seen) >= _FRAMES_KEPT:
        seen.clear()
    seen[line] = (name, by_address)
    return name


def _parse_frame(line: str, source: str, n: int) -> tuple[str, bool]:
    m = _FRAME.match(line)
    if not m:
        raise ParseError(source, f"not a stack frame (address symbol (dso)): {line.strip()[:80]!r}", n)
    sym, dso = split_dso(m["rest"])
    if dso == "inlined":
        return _inlined(line, source, n), False
    if dso is None:
        return _NO_DSO, False  # refused by the caller unless a srcline line marks it inlined
    sym = _OFFSET.sub("", sym) if "+0x" in sym else sym
    if sym in ("[unknown]", "") and dso != "[unknown]":
        sym = f"[{dso.rsplit('/', 1)[-1]}]"  # named after its DSO, as stackcollapse-perf.pl does
    elif not sym:
        sym = "[unknown]"
    kernel = kernel_dso(dso)
    by_address = kernel is None
    if by_address:
        kernel = int(m["addr"], 16) >= KERNEL_BASE
    return (sym if kernel else sym + USER), by_address


# DSOs in brackets that are user space: the vDSO and friends, anonymous and JIT memory
_USER_BRACKETED = {"[vdso]", "[vsyscall]", "[vectors]", "[sigpage]", "[heap]", "[stack]", "[uprobes]", "[jit]"}
_MODULE_FILE = re.compile(r"\.ko(\.(xz|zst|gz))?$")


def kernel_dso(dso: str) -> bool | None:
    """Whether a frame's DSO is the kernel (None: perf printed none, "[unknown]"). The kernel is
    [kernel.kallsyms], [kernel.vmlinux], [guest.kernel.kallsyms], [bpf_prog], a module ([nf_tables],
    or its .ko file) or a vmlinux file: older perf resolving symbols through a vmlinux prints its
    kernel frames at small addresses (`8d60a0 tcp_v4_do_rcv (/lib/modules/4.3.0/build/vmlinux)`),
    which the address alone called user space."""
    if dso == "[unknown]":
        return None
    if dso.startswith("[") and dso.endswith("]"):
        return dso not in _USER_BRACKETED and not dso.startswith("[anon")
    name = dso.rsplit("/", 1)[-1]
    return name.startswith("vmlinux") or bool(_MODULE_FILE.search(name))


def split_dso(rest: str) -> tuple[str, str | None]:
    """"sym+0x1 (/usr/lib/x (deleted))" -> ("sym+0x1", "/usr/lib/x (deleted)"): the DSO is the
    balanced parenthesised group at the end (a DSO name may itself hold parentheses)."""
    rest = rest.rstrip()
    if not rest.endswith(")"):
        return rest, None
    i = rest.rfind("(")
    if rest.find(")", i) == len(rest) - 1:  # nearly every frame: a DSO without parentheses of its own
        if i == 0:
            return "", rest[1:-1]
        return (rest[:i].rstrip(), rest[i + 1:-1]) if rest[i - 1] == " " else (rest, None)
    depth = 0
    for i in range(len(rest) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(rest[i], 0)
        if depth == 0:
            if i == 0:  # no symbol at all: "7f1e... (/lib/libc-2.15.so)"
                return "", rest[1:-1]
            if rest[i - 1] != " ":
                return rest, None
            return rest[:i].rstrip(), rest[i + 1:-1]
    return rest, None


# --- perf report --stdio ---------------------------------------------------------------------------

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


def _report_row(cells: dict, source: str, n: int) -> ReportRow:
    share = cells.get("Self", cells.get("Overhead", ""))
    if not re.fullmatch(r"\d+\.\d+%", share):
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


# --- stackcollapse-perf.pl -----------------------------------------------------------------------

@dataclass
class FoldedProfile:
    samples: Counter  # Sample -> weight
    kernel_marked: bool  # frames carry "_[k]" (stackcollapse-perf.pl --kernel): user frames are known
    divisor: int  # the counts' common factor taken out (the sample period, for a fixed-period event)
    pid_suffix: bool
    notes: list[str] = field(default_factory=list)


_PID_SUFFIX = re.compile(r"-(\?|\d+)(/\d+)?$")
_ANNOTATION = re.compile(r"_\[[kjiu]\]$")


def parse_stackcollapse(text: str, source: str = "folded stacks", kernel_marked: bool | None = None,
                        pid_suffix: bool | None = None) -> FoldedProfile:
    """stackcollapse-perf.pl output -> samples on NO_CPU (folded stacks keep no CPU).

    Its counts are summed sample periods: their greatest common divisor is divided out, which
    leaves shares exactly as they were. Without --kernel's "_[k]", kernel and user frames cannot
    be told apart: every frame is then taken as kernel, and user-space code comes out
    unclassified (said in the notes). A --pid/--tid "-PID" suffix on every command is removed.
    Whether frames are marked and commands suffixed is read from the whole file unless given
    (a part of a file may lack the kernel frames that show it)."""
    require_complete(text, source)  # a count cut short would still parse
    stacks: list[tuple[list[str], int]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, sep, count = line.rpartition(" ")
        if not sep or not is_count(count) or int(count) == 0 or not stack:
            raise ParseError(source, f"not a folded stack line ('comm;frame;... count'): {line[:80]!r}", n)
        stacks.append((stack.split(";"), int(count)))
    if not stacks:
        raise ParseError(source, "empty")
    divisor = math.gcd(*(c for _, c in stacks))
    marked = any(f.endswith("_[k]") for parts, _ in stacks for f in parts[1:]) if kernel_marked is None \
        else kernel_marked
    if pid_suffix is None:
        pid_suffix = all(_PID_SUFFIX.search(parts[0]) for parts, _ in stacks)
    out: Counter = Counter()
    for parts, count in stacks:
        comm = _PID_SUFFIX.sub("", parts[0]) if pid_suffix else parts[0]
        frames = tuple(_folded_frame(f, marked) for f in reversed(parts[1:]))
        out[Sample(NO_CPU, comm, frames)] += count // divisor
    notes = []
    if divisor > 1:
        notes.append(f"counts divided by their common factor {divisor} (stackcollapse-perf.pl sums sample periods)")
    if not marked:
        notes.append("no '_[k]' frames (stackcollapse-perf.pl without --kernel): kernel and user frames cannot be told "
                     "apart, all are read as kernel and user-space code comes out unclassified; fold with --kernel")
    return FoldedProfile(out, marked, divisor, pid_suffix, notes)


def _folded_frame(frame: str, marked: bool) -> str:
    if frame.endswith("_[k]"):
        return frame[:-4]
    bare = _ANNOTATION.sub("", frame)
    return bare + USER if marked else bare
