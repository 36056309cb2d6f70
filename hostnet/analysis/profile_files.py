"""A perf profile a researcher brings, read into a Profile, whatever it came as (profiles.py breaks it down).

A perf.data (perf is run on it by the caller's Perf: probes.perf.PerfOnHost, through the Host
layer, with the fields hostnet's own probe asks for), `perf script` text (default fields, or
hostnet's -F comm,tid,cpu,event,ip,sym), `perf report --stdio` text (perf's default layout with or
without children and call graphs, or hostnet's own tab-separated --sort cpu,comm,sym), or folded
stacks (stackcollapse-perf.pl's, or a run's perf_folded.txt); gzip-compressed or not, told apart by
content. Every format weighs a sample by one rule (WEIGHTING); a profile with counts no recording
has, or whose kernel samples perf could not name, is refused.
"""
from __future__ import annotations

import contextlib
import gzip
import itertools
import platform
import re
import tempfile
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Protocol

from . import attribution
from ..parsers import ParseError
from ..parsers.perf_default import NO_CPU, parse_script_default
from ..parsers.perf_report_stdio import one_event, parse_report_stdio
from ..parsers.perf_report import FIXED_PERIOD_EVENTS, SymbolSamples, parse_perf_report
from ..parsers.perf_script import USER, parse_folded, parse_perf_script
from ..parsers.stackcollapse import parse_stackcollapse

PERF_DATA_MAGIC = b"PERFILE2"
_RELEASE = re.compile(r"^# os release : (?P<release>\S+)", re.M)


@dataclass
class Profile:
    """One profile, whatever it came as. stacks: Sample -> samples (None for a report);
    rows: leaf samples per (cpu, comm, symbol), in `unit`."""
    source: str
    format: str
    rows: list[SymbolSamples]
    stacks: Counter | None
    unit: str = "samples"
    event: str | None = None
    release: str | None = None  # the recorded kernel, where the file says
    notes: list[str] = field(default_factory=list)
    weight: str = "by samples"  # how a sample counts (WEIGHTING): by its period where the input carries one

    @property
    def has_cpu(self) -> bool:
        return any(r.cpu != NO_CPU for r in self.rows)

    @property
    def has_comm(self) -> bool:
        return any(r.comm is not None for r in self.rows)

    def cpus(self) -> list[int]:
        return sorted({r.cpu for r in self.rows})

    def comms(self) -> set[str]:
        return {r.comm for r in self.rows if r.comm is not None}


MAX_TEXT_BYTES = 2 << 30  # a text profile is read whole: at most this much of it (decompressed)
MAX_PERF_DATA_BYTES = 32 << 30  # a gzipped perf.data is copied out for perf: at most this much
MAX_COUNT = 2 ** 53  # above it a sum of counts (floats in pandas) no longer holds every sample


class Perf(Protocol):
    """What reading a perf.data needs of perf (probes.perf.PerfOnHost runs it through the Host
    seam): analysis itself runs no command."""

    def installed(self) -> bool: ...

    def report_files(self, data: str) -> dict[str, str]: ...

    def script(self, data: str) -> tuple[int, str, str]: ...


def read_profile(path, perf: Perf | None = None, event: str | None = None) -> Profile:
    """Any of the formats above, told apart by content, not by name. A regular file only (a FIFO
    would block, /dev/zero never end), within MAX_TEXT_BYTES decompressed, counts within MAX_COUNT.
    A perf.data is read by running perf on it: `perf` says where (hostnet.breakdown and
    `hostnet breakdown` pass this machine's)."""
    path = Path(path)
    if not path.is_file():
        raise ParseError(str(path), "not a regular file (a directory, FIFO or device): breakdown reads a profile "
                                    "saved in a file")
    with path.open("rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    with _compressed_damage(path, gzipped), opener(path, "rb") as f:
        perf_data = f.read(len(PERF_DATA_MAGIC)) == PERF_DATA_MAGIC
    if perf_data:
        if event is not None:
            raise ParseError(str(path), "--event picks one event of a perf script text: give `perf script -i "
                                        "perf.data` of this file")
        with _compressed_damage(path, gzipped):
            if perf is None:
                raise ParseError(str(path), "a perf.data file: reading it runs perf, and no perf was given "
                                            "(hostnet.breakdown and `hostnet breakdown` give this machine's)")
            profile = _from_perf_data(path, gzipped, perf)
    else:
        lines = _text_lines(path, gzipped)
        peek = list(itertools.islice(lines, 400))  # enough to tell the format (text_format)
        if text_format("".join(peek), str(path)) == "perf script":  # streamed: memory bounded at any size
            profile = _from_script(itertools.chain(peek, lines), str(path), event)
        else:
            profile = profile_from_text("".join(itertools.chain(peek, lines)), str(path), event)
    check_counts(profile)
    check_symbolised(profile)
    return profile


@contextlib.contextmanager
def _compressed_damage(path: Path, gzipped: bool):
    """A truncated or corrupt .gz is one line naming the file (gzip says EOFError, BadGzipFile or a
    zlib error, without the file's name)."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        if not gzipped:
            raise
        what = "cut short" if isinstance(exc, EOFError) else f"corrupt ({exc})"
        raise ParseError(str(path), f"the gzip file is {what}: compress the profile again from its source") from exc


MAX_LINE_BYTES = 1 << 20  # perf prints no line near this long; a longer one is not perf's text


def _text_lines(path: Path, gzipped: bool) -> Iterator[str]:
    """The file's lines, decoded one at a time: a byte that is not UTF-8 is a ParseError naming its
    line (a replacement character would move a damaged symbol into unclassified silently); at most
    MAX_TEXT_BYTES in all and MAX_LINE_BYTES a line, so no input is ever held whole."""
    opener = gzip.open if gzipped else open
    total = 0
    with _compressed_damage(path, gzipped), opener(path, "rb") as f:
        for n, raw in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            total += len(raw)
            if total > MAX_TEXT_BYTES:
                raise ParseError(str(path), f"more than {MAX_TEXT_BYTES >> 20:,} MiB of text"
                                            f"{' decompressed' * gzipped}: give perf.data (perf reads it in parts) "
                                            f"or a part of the profile")
            if len(raw) > MAX_LINE_BYTES:
                raise ParseError(str(path), f"a line of more than {MAX_LINE_BYTES >> 20} MiB: not perf's text", n)
            try:
                yield raw.decode()
            except UnicodeDecodeError as exc:
                raise ParseError(str(path), f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be read (a "
                                            f"damaged copy?)", n) from exc


UNIT_LABELS = {"samples": "samples", "period": "summed sample periods", "folded": "folded counts"}


def unit_label(profile: Profile) -> str:
    """What a profile's counts are, in words (a report read by its Overhead column counts in % of the
    event's total: of all samples for a fixed-period event, of their summed periods otherwise)."""
    return UNIT_LABELS.get(profile.unit, "% of the event's total, perf report's Overhead")


def check_counts(profile: Profile) -> None:
    """Refuse counts no recording has: a row, a stack or their total above MAX_COUNT (2**70 samples
    once garbled the table)."""
    counts = [r.samples for r in profile.rows] + list((profile.stacks or {}).values())
    if counts and (max(counts) > MAX_COUNT or sum(r.samples for r in profile.rows) > MAX_COUNT):
        raise ParseError(profile.source, f"a count of {max(counts):.3g} {unit_label(profile)} (or their total) is "
                                         f"above 2**53: no recording has that many, and sums of it lose samples")


# A kernel sample perf could not name (its symbols are not on this machine): a bare address in perf
# report, "[unknown]" in perf script, which perf_default names after its DSO as stackcollapse does.
_ADDRESS = re.compile(r"^((0x)?[0-9a-f]{8,16}|\[unknown\]|\[kernel\.kallsyms\])$")
# Above this share of kernel samples without a name the breakdown would be mostly "unclassified"
# for a reason that has nothing to do with the taxonomy: refused. Every run hostnet recorded has 0.
MAX_UNNAMED_KERNEL_SHARE = 0.01


def check_symbolised(profile: Profile) -> None:
    """Refuse a profile whose kernel samples perf could not name (a perf.data recorded on another
    kernel, read where that kernel's symbols are missing); a few unnamed samples are noted."""
    kernel = sum(r.samples for r in profile.rows if r.kernel)
    unnamed = sum(r.samples for r in profile.rows if r.kernel and _ADDRESS.match(r.symbol))
    if not kernel or not unnamed:
        return
    share = unnamed / kernel
    if share > MAX_UNNAMED_KERNEL_SHARE:
        recorded = f"kernel {profile.release}" if profile.release else "the kernel that recorded it"
        raise ParseError(profile.source, (
            f"{100 * share:.1f} % of the kernel samples have no symbol, only an address: perf found no symbols for "
            f"{recorded} here (running: {platform.release()}), and their breakdown would be a guess. "
            f"Run `hostnet breakdown` (or perf script / perf report) on the machine that recorded it, or "
            f"bring its symbols: `perf archive` there, then unpack the archive into ~/.debug here"))
    profile.notes.append(f"{100 * share:.2f} % of the kernel samples have no symbol (counted as unclassified)")


# The one weighting rule, whatever the format: a sample counts by its period (the event's count it
# stands for: 1/F of a second for cpu-clock, the faults for page-faults) where the input carries
# periods, as perf report's Overhead and stackcollapse-perf.pl weigh; by one where it carries none.
# For a fixed-period event (cpu-clock, task-clock: every profile hostnet records) the two agree.
WEIGHTING = "a sample counts by its period where the input carries periods, else as one sample"


def weighed(sp) -> tuple[Counter, str, str]:
    """(stacks, unit, how) of a parsed perf script text (ScriptProfile) by the rule: the periods
    (the samples' common factor divided out) where every sample printed one, else the sample counts."""
    samples, periods, divisor = sp.samples, sp.periods, sp.period_gcd
    if sp.without_period:
        return samples, "samples", (f"by samples: {sp.without_period:,} sample headers print no period "
                                    "(perf script -F without period, or perf 3.x)")
    if sp.one_period:
        return samples, "samples", f"by period, and every sample's is {divisor:,}: the same as by samples"
    weights = Counter({k: v // divisor for k, v in periods.items()})
    total = sum(periods.values())
    return weights, "period", (f"by period: {sum(samples.values()):,} samples whose periods add up to {total:,} "
                               f"{'(counted in units of ' + format(divisor, ',') + ') ' if divisor > 1 else ''}"
                               "(by samples the shares would differ: the event's period varies)")


def profile_from_text(text: str, source: str, event: str | None = None) -> Profile:
    kind = text_format(text, source)
    if event is not None and kind not in ("perf script", "perf report"):
        raise ParseError(source, f"--event picks one event of a perf script text or perf report; this is {kind}")
    if kind == "hostnet perf report":  # hostnet's probe records cpu-clock (FIXED_PERIOD_EVENTS)
        p = _from_rows(source, kind, parse_perf_report(text, source), "samples")
        p.weight = "by samples (hostnet's report counts them; its probe's cpu-clock samples share one period)"
        return p
    if kind == "perf report":
        rep = parse_report_stdio(one_event(text, source, event), source)
        counted, how = _report_weight(rep.rows, "Samples" in rep.columns, "Period" in rep.columns)
        value = {"period": lambda r: r.period, "samples": lambda r: r.samples, "% of samples": lambda r: r.self_pct}
        rows = _merge(SymbolSamples(r.cpu, r.comm, r.symbol, r.kernel, value[counted](r)) for r in rep.rows)
        p = _from_rows(source, kind, rows, counted)
        p.event, p.weight = rep.event, how
        p.notes.append("a perf report gives the leaf breakdown only: its call graphs are pruned (0.5 % by default), "
                       "so the call-chain attribution needs perf script text or the perf.data")
        p.notes.append(landed(rows))
        if counted == "% of samples":  # each printed overhead is off by up to 0.005 % of the event's total
            total = sum(r.samples for r in rows)
            bound = 100.0 * 0.005 * len(rep.rows) / total if total else float("nan")
            exact = ("perf report --show-total-period prints the periods exactly" if "Samples" in rep.columns
                     else "perf report -n gives exact counts (--show-total-period, exact periods)")
            p.notes.append(f"shares come from the printed 0.01 % overheads of {len(rep.rows)} rows, so a share may be "
                           f"off by up to {bound:.2g} points; {exact}")
        return p
    if kind == "hostnet perf script":
        return _from_stacks(source, kind, Counter(parse_perf_script(text.splitlines(), source)))
    if kind == "hostnet folded":
        stacks = Counter()
        for s, n in parse_folded(text, source):
            stacks[s] += n
        return _from_stacks(source, kind, stacks)
    if kind == "folded":
        fp = parse_stackcollapse(text, source)
        p = _from_stacks(source, "folded (stackcollapse-perf.pl)", fp.samples)
        p.notes += fp.notes
        p.unit = "folded"
        p.weight = ("as folded: stackcollapse-perf.pl and inferno add up each sample's period where the text "
                    "they folded printed one (perf script's default), else count samples")
        return p
    return _from_script(text.splitlines(), source, event)


def _report_weight(rows, has_samples: bool, has_period: bool) -> tuple[str, str]:
    """Which column a perf report's rows count by (WEIGHTING) and the breakdown's words for it.
    Overhead is each row's share of the event's period; the Samples column agrees with it to the
    printed 0.01 % only where every sample has the same period, and is then the exact count."""
    if has_period and all(r.period is not None for r in rows):
        return "period", "by period: the Period column (--show-total-period)"
    if has_samples:
        total = sum(r.samples for r in rows)
        if total and all(abs(100.0 * r.samples / total - r.self_pct) <= 0.0051 for r in rows):
            return "samples", ("by period, through the exact Samples column: it gives the Overhead column's "
                               "shares to their printed 0.01 % (a fixed-period event)")
        return "% of samples", ("by period: the Overhead column (the Samples column gives other shares: the "
                                "event's period varies; --show-total-period prints it exactly)")
    return "% of samples", "by period: the Overhead column (no Samples or Period column)"


def _from_script(lines: Iterable[str], source: str, event: str | None) -> Profile:
    sp = parse_script_default(lines, source, event)
    stacks, unit, how = weighed(sp)
    p = _from_stacks(source, "perf script", stacks)
    p.event, p.release, p.unit, p.weight = sp.event, sp.release, unit, how
    p.notes.append("kernel or user by each frame's DSO ([kernel.kallsyms], a vmlinux or a module is the kernel)"
                   + (f"; {sp.by_address:,} frames without one ([unknown]) by their address" if sp.by_address else ""))
    return p


def landed(rows: list[SymbolSamples]) -> str:
    """What a leaf-only breakdown cannot place: the samples whose leaf is where interrupts come back
    on (irq-restore, softirq end: attribution.LANDING), counted there (mostly etc), which call
    chains give to the layer that ran with interrupts off."""
    total = sum(r.samples for r in rows)
    there = sum(r.samples for r in rows if r.kernel and r.symbol in attribution.LANDING)
    share = 100.0 * there / total if total else 0.0
    return (f"{share:.1f} % of the samples landed where interrupts come back on (leaves such as handle_softirqs "
            f"and _raw_spin_unlock_irqrestore): a leaf breakdown counts them there; perf script text with call "
            f"chains (or the perf.data) gives them to the layer that ran")


HOSTNET_REPORT_COLUMNS = ["Overhead", "Samples", "CPU", "Command", "Symbol"]  # PERF_REPORT_ARGS' header


def text_format(text: str, source: str) -> str:
    """Which of perf's text formats this is, by its first lines."""
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    if not lines:
        raise ParseError(source, "empty")
    body = [ln for ln in lines if not ln.startswith("#")]
    header = next((ln for ln in lines if ln.startswith(("# Overhead", "# Children"))), None)
    if header is not None:  # hostnet's own layout (PERF_REPORT_ARGS), else any of perf's (-t SEP included)
        return "hostnet perf report" if [c.strip() for c in header[2:].split("\t")] == HOSTNET_REPORT_COLUMNS \
            else "perf report"
    if not body:
        raise ParseError(source, "only comment lines: not perf output")
    first = body[0]
    if re.fullmatch(r"\S.* \d+", first) and not any(ln[0] in " \t" for ln in body[:50]):
        return "hostnet folded" if re.match(r"\d+;", first) else "folded"
    frame = next((ln for ln in body[:50] if ln[0] in " \t"), "")
    with_dso = re.search(r"\s\((/|\[|//).*\)$", frame.rstrip())
    if re.match(r"^\S.*?\s+-?\d+\s+\[\d+\]\s+[\w:.-]+:\s*$", first) and not with_dso:
        return "hostnet perf script"  # -F comm,tid,cpu,event,ip,sym: no time field, no (dso)
    return "perf script"


def _from_rows(source, kind, rows, unit) -> Profile:
    return Profile(source, kind, list(rows), None, unit)


def _from_stacks(source: str, kind: str, stacks: Counter) -> Profile:
    return Profile(source, kind, leaf_rows(stacks), stacks)


def leaf_rows(stacks: Counter) -> list[SymbolSamples]:
    """Stacks -> samples per (cpu, comm, leaf symbol), as perf report would count them."""
    rows: Counter = Counter()
    for s, n in stacks.items():
        leaf = s.frames[0] if s.frames else "[no call chain]"
        kernel = bool(s.frames) and not leaf.endswith(USER)
        rows[(s.cpu, s.comm, leaf.removesuffix(USER), kernel)] += n
    return [SymbolSamples(cpu, comm, sym, kernel, n) for (cpu, comm, sym, kernel), n in rows.items()]


def _merge(rows: Iterable[SymbolSamples]) -> list[SymbolSamples]:
    """Rows that differ only in a column hostnet does not break down by (the DSO) are added up."""
    out: dict[tuple, float] = defaultdict(float)
    for r in rows:
        out[(r.cpu, r.comm, r.symbol, r.kernel)] += r.samples
    return [SymbolSamples(c, comm, s, k, n) for (c, comm, s, k), n in out.items() if n > 0]


def _from_perf_data(path: Path, gzipped: bool, perf: Perf) -> Profile:
    """perf.data -> what hostnet's perf probe keeps of a run (probes.perf.report_files: perf report
    with hostnet's --sort cpu,comm,sym, perf script -F comm,tid,cpu,event,ip,sym folded, the header)."""
    if not perf.installed():
        raise ParseError(str(path), "a perf.data file, and perf is not installed here (Debian: linux-perf)")
    if not gzipped:
        return _profile_of_perf_data(path, path, perf)
    with tempfile.TemporaryDirectory(prefix="hostnet-breakdown-") as tmp:
        local = Path(tmp) / "perf.data"  # perf reads no .gz
        with gzip.open(path, "rb") as src, local.open("wb") as dst:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                if dst.tell() + len(chunk) > MAX_PERF_DATA_BYTES:
                    raise ParseError(str(path), f"decompresses to more than {MAX_PERF_DATA_BYTES >> 30} GiB of "
                                                "perf.data")
                dst.write(chunk)
        return _profile_of_perf_data(path, local, perf)


def _profile_of_perf_data(path: Path, local: Path, perf: Perf) -> Profile:
    """path: the file as the user named it (for messages); local: a plain perf.data perf can read."""
    files = perf.report_files(str(local))
    report = files["perf_report.txt"]
    if not report.strip():
        why = " ".join(files["perf_report.stderr.txt"].split())[:300]
        raise ParseError(str(path), f"perf report printed nothing: {why}")
    rows = parse_perf_report(report, f"{path} (perf report)")
    found = re.search(r"^# Samples: \S+\s+of event '(?P<event>[^']*)'", report, re.M)
    event = found["event"] if found else None
    fixed = event is not None and event.split(":")[0] in FIXED_PERIOD_EVENTS  # cpu-clock:u is cpu-clock
    no_cpu = bool(rows) and all(r.cpu == NO_CPU for r in rows)
    if not fixed:
        # an event whose period varies (cycles, page-faults): hostnet's report and folded stacks count
        # samples, so the profile is read from perf script's default text, which prints every period
        sp = _default_script(path, local, perf)
        stacks, unit, weight = weighed(sp)
        p = Profile(str(path), "perf.data", leaf_rows(stacks), stacks if sp.chains else None, unit, weight=weight)
        if not sp.chains:
            p.notes.append("no call chains (perf record without -g): the leaf breakdown only")
    elif no_cpu:
        # perf record without -a or -C keeps no CPU: perf script refuses hostnet's -F cpu; its
        # default fields leave the CPU out, and that text is read as a brought one would be
        sp = _default_script(path, local, perf)
        p = Profile(str(path), "perf.data", rows, sp.samples if sp.chains else None)
    elif "perf_folded.txt" in files:
        stacks = Counter()
        for s, n in parse_folded(files["perf_folded.txt"], f"{path} (perf script)"):
            stacks[s] += n
        p = Profile(str(path), "perf.data", rows, stacks)
    else:
        p = Profile(str(path), "perf.data", rows, None,
                    notes=[f"no call chains: {files.get('perf_folded.error.txt', 'perf script failed')}"])
    if no_cpu:
        p.notes.insert(0, "recorded without CPUs (perf record without -a or -C): one CPU set, every sample")
    if fixed:
        p.weight = f"by period, and {event} samples at one period: the same as by samples"
    m = _RELEASE.search(files.get("perf_header.txt", ""))
    p.release, p.event = (m["release"] if m else None), event
    return p


def _default_script(path: Path, local: Path, perf: Perf):
    """perf script's default text of a perf.data, parsed (ScriptProfile); perf's own failure said."""
    status, out, err = perf.script(str(local))
    if status != 0:
        said = " ".join(err.split())[:300]
        raise ParseError(str(path), f"perf script failed ({status}): {said}")
    return parse_script_default(out.splitlines(), f"{path} (perf script)")
