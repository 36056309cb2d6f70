"""`perf script` text in the default fields hostnet did not ask for: a profile a researcher brings.

Its default fields ("comm tid [cpu] time: period event:", frames as "address symbol+offset (dso)"),
or -F leaving out the time, the CPU or the period, pid/tid or tid (perf 3.x onwards); a frame is
kernel or user by its DSO (kernel_dso), by its address only where perf printed none. perf's other
default formats are perf_report_stdio.py's (perf report --stdio in any layout) and
stackcollapse.py's (stackcollapse-perf.pl's folded stacks); all three put a sample of an input
without CPUs on NO_CPU.

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
from dataclasses import dataclass
from typing import Iterable, Iterator

from . import ParseError
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
    seen_frames = meta.setdefault("frames", {})  # _frame's memo, looked up here first (a call a frame line)
    for n, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        # a line ending in a printing character is neither blank nor empty: the two tests below skipped
        if not line or line[-1].isspace():
            # perf's blank line is empty: blanks alone under a header are a frame line cut (its first too)
            if head is not None and line and not line.strip(" \t"):
                raise ParseError(source, "a line of blanks in a call chain: cut short?", n)
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
                if (known := seen_frames.get(line)) is not None:  # as _frame answers a line seen before
                    if known[1]:
                        meta["by_address"] += 1
                    frame = known[0]
                else:
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
